//! Big-endian `DataInput`/`DataOutput` primitives as Flink's Java code uses them, and Java's
//! modified UTF-8 strings. The reader hands out zero-copy `Bytes` slices of its input and checks
//! every length against the bytes that remain before it trusts it.

use crate::error::{Error, Result};
use bytes::Bytes;
use std::fmt;
use std::io::Write;

/// A Java `writeUTF` string, kept as its modified UTF-8 bytes so it is re-emitted unchanged.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct JStr(pub Bytes);

impl JStr {
    pub fn new(s: &str) -> Self {
        JStr(Bytes::from(encode_modified_utf8(s)))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Decodes modified UTF-8 (CESU-8 surrogate pairs, `C0 80` for U+0000) the way
    /// `DataInputStream.readUTF` does; malformed sequences become U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        decode_modified_utf8(&self.0)
    }
}

impl fmt::Display for JStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl fmt::Debug for JStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

fn decode_modified_utf8(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        if !s.contains('\u{0}') {
            return s.to_string();
        }
    }
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as u32;
        if c < 0x80 {
            units.push(c as u16);
            i += 1;
        } else if c & 0xE0 == 0xC0 && i + 1 < b.len() {
            units.push((((c & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F)) as u16);
            i += 2;
        } else if c & 0xF0 == 0xE0 && i + 2 < b.len() {
            units.push(
                (((c & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F))
                    as u16,
            );
            i += 3;
        } else {
            units.push(0xFFFD);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}

pub fn encode_modified_utf8(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007F => out.push(unit as u8),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    out
}

/// A cursor over an input buffer. Positions are absolute offsets into the buffer.
pub struct Reader {
    buf: Bytes,
    pos: usize,
    /// Bytes the model built from this input may still take (see [`MEMORY_FACTOR`]).
    budget: usize,
}

/// The model of an input may take at most `MEMORY_FACTOR` times the input's size plus
/// [`MEMORY_HEADROOM`]. Real files need less (a model of many small subtasks, the densest case,
/// takes about 2.5 times their bytes); an input that claims more items than that is no file Flink
/// wrote, and is refused before the memory is spent.
pub const MEMORY_FACTOR: usize = 4;
pub const MEMORY_HEADROOM: usize = 64 << 20;

impl Reader {
    pub fn new(buf: Bytes) -> Self {
        let budget = buf
            .len()
            .saturating_mul(MEMORY_FACTOR)
            .saturating_add(MEMORY_HEADROOM);
        Reader {
            buf,
            pos: 0,
            budget,
        }
    }

    /// Charges `items` model objects of `T` against the memory budget, so that no input makes
    /// the parser build a model beyond [`MEMORY_FACTOR`] times its size plus [`MEMORY_HEADROOM`]:
    /// a clear error instead.
    pub fn charge<T>(&mut self, items: usize, what: &str) -> Result<()> {
        let cost = items.saturating_mul(std::mem::size_of::<T>().max(1));
        if cost > self.budget {
            return Err(Error::format(
                self.pos as u64,
                format!(
                    "{what} whose model fits in {MEMORY_FACTOR} times the input's size plus {} MiB of memory",
                    MEMORY_HEADROOM >> 20
                ),
                Some(format!(
                    "{items} of them, {} MiB more; this is not a file Flink wrote",
                    cost >> 20
                )),
            ));
        }
        self.budget -= cost;
        Ok(())
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.buf.len() {
            return Err(Error::format(
                self.pos as u64,
                format!("a position within the {} bytes of input", self.buf.len()),
                Some(pos.to_string()),
            ));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn error(&self, expected: impl Into<String>, found: Option<String>) -> Error {
        Error::format(self.pos as u64, expected, found)
    }

    fn need(&self, n: usize, what: &str) -> Result<()> {
        if n > self.remaining() {
            Err(Error::format(
                self.pos as u64,
                format!("{what} ({n} bytes)"),
                Some(format!("end of input after {} bytes", self.remaining())),
            ))
        } else {
            Ok(())
        }
    }

    pub fn u8(&mut self, what: &str) -> Result<u8> {
        self.need(1, what)?;
        let v = self.buf[self.pos];
        self.pos += 1;
        Ok(v)
    }

    pub fn i16(&mut self, what: &str) -> Result<i16> {
        self.need(2, what)?;
        let v = i16::from_be_bytes([self.buf[self.pos], self.buf[self.pos + 1]]);
        self.pos += 2;
        Ok(v)
    }

    pub fn i32(&mut self, what: &str) -> Result<i32> {
        self.need(4, what)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(&self.buf[self.pos..self.pos + 4]);
        self.pos += 4;
        Ok(i32::from_be_bytes(a))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64> {
        self.need(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Ok(i64::from_be_bytes(a))
    }

    /// A non-negative `i32` count, checked against the bytes left assuming each item takes at
    /// least `min_item_bytes`, so that a corrupted count can never size an allocation.
    pub fn count(&mut self, what: &str, min_item_bytes: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.i32(what)?;
        if n < 0 {
            return Err(Error::format(
                at as u64,
                format!("{what} (a non-negative count)"),
                Some(n.to_string()),
            ));
        }
        let n = n as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() && min_item_bytes > 0 {
            return Err(Error::format(
                at as u64,
                format!("{what} that fits in the {} bytes left", self.remaining()),
                Some(n.to_string()),
            ));
        }
        Ok(n)
    }

    pub fn bytes(&mut self, n: usize, what: &str) -> Result<Bytes> {
        self.need(n, what)?;
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    pub fn utf(&mut self, what: &str) -> Result<JStr> {
        self.need(2, what)?;
        let n = u16::from_be_bytes([self.buf[self.pos], self.buf[self.pos + 1]]) as usize;
        self.pos += 2;
        Ok(JStr(self.bytes(n, what)?))
    }

    pub fn rest(&mut self) -> Bytes {
        let b = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        b
    }

    pub fn slice(&self, from: usize, to: usize) -> Bytes {
        self.buf.slice(from..to)
    }
}

/// Appends `s` as Java's `writeUTF` does (u16 length, modified UTF-8), through [`Writer::utf`].
/// Callers pass constants or names that were read with a u16 length, so the length always fits;
/// a longer string panics (reported as `PANIC` across JNI) instead of writing a wrong length.
pub fn push_utf(out: &mut Vec<u8>, s: &str) {
    Writer::new(out)
        .utf(&JStr::new(s))
        .expect("a string of at most 65535 bytes");
}

/// A big-endian writer over any `Write`, counting what it wrote.
pub struct Writer<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer { out, written: 0 }
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn raw(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    pub fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.raw(&[v])
    }

    pub fn i16(&mut self, v: i16) -> std::io::Result<()> {
        self.raw(&v.to_be_bytes())
    }

    pub fn i32(&mut self, v: i32) -> std::io::Result<()> {
        self.raw(&v.to_be_bytes())
    }

    pub fn i64(&mut self, v: i64) -> std::io::Result<()> {
        self.raw(&v.to_be_bytes())
    }

    pub fn utf(&mut self, s: &JStr) -> std::io::Result<()> {
        let n = u16::try_from(s.0.len()).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "string longer than 65535 bytes",
            )
        })?;
        self.raw(&n.to_be_bytes())?;
        self.raw(&s.0)
    }

    pub fn len_i32(&mut self, n: usize) -> std::io::Result<()> {
        let v = i32::try_from(n).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "count over i32::MAX")
        })?;
        self.i32(v)
    }
}

/// The big-endian encoder of the reports handed to Java (strings: i32 length + UTF-8).
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn bool(&mut self, v: bool) {
        self.0.push(v as u8);
    }
    pub fn str(&mut self, s: &str) {
        self.i32(s.len() as i32);
        self.0.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8_round_trips_nul_and_astral() {
        let s = "a\u{0}é€😀";
        let enc = encode_modified_utf8(s);
        assert_eq!(&enc[1..3], &[0xC0, 0x80]);
        assert_eq!(enc.len(), 1 + 2 + 2 + 3 + 6);
        assert_eq!(JStr(Bytes::from(enc)).to_string_lossy(), s);
    }

    #[test]
    fn count_rejects_lengths_beyond_input() {
        let mut r = Reader::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]));
        let e = r.count("number of things", 8).unwrap_err();
        assert!(e.to_string().contains("at byte 0"), "{e}");
    }

    #[test]
    fn truncated_read_names_offset() {
        let mut r = Reader::new(Bytes::from_static(&[0, 0, 0]));
        let e = r.i32("the magic number").unwrap_err();
        assert_eq!(
            e.to_string(),
            "at byte 0: expected the magic number (4 bytes), found end of input after 3 bytes"
        );
    }
}
