//! Snappy's framing format, as xerial's `SnappyFramedOutputStream` writes Flink's compressed
//! operator state (`SnappyStreamCompressionDecorator`, Flink 1.18+): each chunk is a type byte and
//! a 24-bit little-endian length; data chunks hold the masked CRC-32C of their uncompressed bytes,
//! then either a raw snappy block (type 0) or the bytes as they are (type 1), at most 64 KiB.
//!
//! Decoding is needed where a state's elements have no boundaries in the file (Flink 1.18 records
//! one offset for all elements of a state), and to count the states of a compressed canonical key
//! group (keyed state: the same decorator, one stream per key group). Operator state is written
//! back in uncompressed chunks, which every reader of the format accepts (xerial itself writes
//! them when a block does not compress well); rewritten keyed state is compressed again as Flink
//! writes it ([`FrameEncoder`]).

use crate::error::{Error, Result};

/// The largest uncompressed chunk the format allows.
const MAX_CHUNK: usize = 65536;
/// The most bytes one run of frames may decode to: snappy expands up to about 20 times, so a
/// hostile stream must not make the tool allocate without bound.
const MAX_DECODED: usize = 1 << 31;
const IDENTIFIER: u8 = 0xFF;
/// The stream identifier chunk that opens every framed stream.
pub const STREAM_IDENTIFIER: [u8; 10] =
    [0xFF, 0x06, 0x00, 0x00, b's', b'N', b'a', b'P', b'p', b'Y'];
/// `SnappyStreamCompressionDecorator`'s minimum compression ratio (xerial's default too): a block
/// whose compressed form is larger than this share of it is written uncompressed.
const MIN_COMPRESSION_RATIO: f64 = 0.85;
const COMPRESSED: u8 = 0x00;
const UNCOMPRESSED: u8 = 0x01;

/// The bytes a run of frames holds, and where each data frame starts in the file and in them.
#[derive(Debug, Default)]
pub struct Decoded {
    pub bytes: Vec<u8>,
    /// Per data frame: (its offset in the file, the offset of its first byte in `bytes`).
    pub frames: Vec<(u64, usize)>,
    /// The offset in the file where decoding stopped: a stream identifier or the end.
    pub end: u64,
}

/// Decodes the frames of `file[from..]` up to the next stream identifier (the next state's data in
/// Flink 1.18's layout) or the end, checking each chunk's checksum.
pub fn decode_until_identifier(file: &[u8], from: usize) -> Result<Decoded> {
    let mut d = Decoded::default();
    let mut p = from;
    while p < file.len() {
        let Some(h) = file.get(p..p + 4) else {
            return Err(Error::format(
                p as u64,
                "a snappy chunk header (4 bytes)",
                Some(format!("{} bytes before the end", file.len() - p)),
            ));
        };
        let len = u32::from_le_bytes([h[1], h[2], h[3], 0]) as usize;
        let body = file.get(p + 4..p + 4 + len).ok_or_else(|| {
            Error::format(
                p as u64,
                format!("a snappy chunk of {len} bytes within the stream"),
                Some(format!("{} bytes left", file.len() - p - 4)),
            )
        })?;
        match h[0] {
            IDENTIFIER => break,
            COMPRESSED | UNCOMPRESSED => {
                if d.bytes.len() > MAX_DECODED - MAX_CHUNK {
                    return Err(Error::Unsupported {
                        file: String::new(),
                        offset: p as u64,
                        what: format!(
                            "compressed state data of more than {} GiB",
                            MAX_DECODED >> 30
                        ),
                    });
                }
                d.frames.push((p as u64, d.bytes.len()));
                decode_data_chunk(h[0], body, p as u64, &mut d.bytes)?;
            }
            0x02..=0x7F => {
                return Err(Error::format(
                    p as u64,
                    "a snappy chunk type (0x00, 0x01, 0xFF or a skippable 0x80-0xFE)",
                    Some(format!("reserved unskippable type {:#04x}", h[0])),
                ))
            }
            _ => {} // padding and skippable chunks
        }
        p += 4 + len;
    }
    d.end = p as u64;
    Ok(d)
}

/// A chunk's type byte and body length, from its 4-byte header.
pub fn chunk_header(h: &[u8; 4]) -> (u8, usize) {
    (h[0], u32::from_le_bytes([h[1], h[2], h[3], 0]) as usize)
}

/// Whether a chunk of this type holds data (compressed or not).
pub fn is_data(kind: u8) -> bool {
    kind == COMPRESSED || kind == UNCOMPRESSED
}

/// Whether a chunk of this type is one a reader must understand (neither data, nor the stream
/// identifier, nor padding or skippable, which are 0x80 to 0xFE).
pub fn is_reserved(kind: u8) -> bool {
    (0x02..=0x7F).contains(&kind)
}

/// Decodes the body of one data chunk (its checksum, then a raw snappy block or the bytes as
/// they are) onto `out` and checks the checksum; `at` is the chunk's offset in the file.
pub fn decode_data_chunk(kind: u8, body: &[u8], at: u64, out: &mut Vec<u8>) -> Result<()> {
    if body.len() < 4 {
        return Err(Error::format(
            at,
            "a snappy data chunk with its 4-byte checksum",
            Some(format!("{} bytes", body.len())),
        ));
    }
    let start = out.len();
    if kind == COMPRESSED {
        decompress(&body[4..], at + 8, out)?;
    } else if body.len() - 4 > MAX_CHUNK {
        return Err(Error::format(
            at,
            format!("an uncompressed snappy chunk of at most {MAX_CHUNK} bytes"),
            Some(format!("{} bytes", body.len() - 4)),
        ));
    } else {
        out.extend_from_slice(&body[4..]);
    }
    let stored = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
    let actual = masked_crc32c(&out[start..]);
    if stored != actual {
        out.truncate(start);
        return Err(Error::format(
            at + 4,
            format!("the chunk's checksum {actual:#010x} (masked CRC-32C of its data)"),
            Some(format!("{stored:#010x}")),
        ));
    }
    Ok(())
}

/// How many bytes a data chunk holds uncompressed, from its body's first bytes alone (a raw
/// snappy block starts with its length): no decompression. None if the length is malformed.
pub fn data_chunk_len(kind: u8, body: &[u8]) -> Option<usize> {
    if body.len() < 4 {
        return None;
    }
    if kind == UNCOMPRESSED {
        return Some(body.len() - 4);
    }
    let mut n = 0usize;
    for (i, &b) in body[4..].iter().take(5).enumerate() {
        n |= ((b & 0x7F) as usize) << (7 * i);
        if b & 0x80 == 0 {
            return (n <= MAX_CHUNK).then_some(n);
        }
    }
    None
}

/// Decompresses one raw snappy block (at `at` in the file) onto `out`: with the `snap` crate's
/// decoder (which checks every tag against the block and its stated length), after the stated
/// length is checked against the format's 64 KiB, so that no input makes it allocate more.
fn decompress(src: &[u8], at: u64, out: &mut Vec<u8>) -> Result<()> {
    let n = snap::raw::decompress_len(src)
        .map_err(|e| Error::format(at, "the block's uncompressed length", Some(e.to_string())))?;
    if n > MAX_CHUNK {
        return Err(Error::format(
            at,
            format!("a snappy block of at most {MAX_CHUNK} uncompressed bytes"),
            Some(n.to_string()),
        ));
    }
    let start = out.len();
    out.resize(start + n, 0);
    match snap::raw::Decoder::new().decompress(src, &mut out[start..]) {
        Ok(m) if m == n => Ok(()),
        r => {
            out.truncate(start);
            Err(Error::format(
                at,
                format!("a snappy block of {n} uncompressed bytes"),
                Some(match r {
                    Ok(m) => format!("{m} bytes"),
                    Err(e) => e.to_string(),
                }),
            ))
        }
    }
}

/// Appends `data` as uncompressed data chunks (none for no bytes).
pub fn push_frames(out: &mut Vec<u8>, data: &[u8]) {
    for chunk in data.chunks(MAX_CHUNK) {
        out.push(UNCOMPRESSED);
        out.extend_from_slice(&(chunk.len() as u32 + 4).to_le_bytes()[..3]);
        out.extend_from_slice(&masked_crc32c(chunk).to_le_bytes());
        out.extend_from_slice(chunk);
    }
}

/// Writes framed snappy streams as Flink's `SnappyStreamCompressionDecorator` does: xerial's
/// `SnappyFramedOutputStream` with 64 KiB blocks and a minimum compression ratio of 0.85. The
/// stream identifier first, then a chunk per full 64 KiB block (flushed when more bytes follow,
/// as xerial's buffer is) and one for the rest when the stream ends; a block is written
/// compressed if that takes at most 85 % of its bytes, else as it is. Memory: one block and its
/// compressed form.
pub struct FrameEncoder {
    block: Vec<u8>,
    compressed: Vec<u8>,
    encoder: snap::raw::Encoder,
}

impl Default for FrameEncoder {
    fn default() -> Self {
        FrameEncoder {
            block: Vec::with_capacity(MAX_CHUNK),
            compressed: vec![0; snap::raw::max_compress_len(MAX_CHUNK)],
            encoder: snap::raw::Encoder::new(),
        }
    }
}

impl FrameEncoder {
    /// Opens a stream: its identifier.
    pub fn start(&mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.block.clear();
        out.write_all(&STREAM_IDENTIFIER)
    }

    pub fn write(&mut self, mut data: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        while !data.is_empty() {
            if self.block.len() == MAX_CHUNK {
                self.flush_block(out)?;
            }
            let n = data.len().min(MAX_CHUNK - self.block.len());
            self.block.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        Ok(())
    }

    /// Ends the stream: the last block, if any.
    pub fn finish(&mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.flush_block(out)?;
        }
        Ok(())
    }

    fn flush_block(&mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let block = std::mem::take(&mut self.block);
        let r = self.chunk(&block, out);
        self.block = block;
        self.block.clear();
        r
    }

    /// Writes `data` (at most 64 KiB) as one data chunk, compressed or not by xerial's rule.
    pub fn chunk(&mut self, data: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        debug_assert!(data.len() <= MAX_CHUNK);
        let crc = masked_crc32c(data);
        let n = self
            .encoder
            .compress(data, &mut self.compressed)
            .map_err(|e| std::io::Error::other(format!("snappy compression: {e}")))?;
        let (kind, body) =
            if data.is_empty() || (n as f64 / data.len() as f64) <= MIN_COMPRESSION_RATIO {
                (COMPRESSED, &self.compressed[..n])
            } else {
                (UNCOMPRESSED, data)
            };
        let mut header = [kind, 0, 0, 0, 0, 0, 0, 0];
        header[1..4].copy_from_slice(&(body.len() as u32 + 4).to_le_bytes()[..3]);
        header[4..8].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&header)?;
        out.write_all(body)
    }
}

/// CRC-32C tables for slicing by 8 (eight bytes per step: the checksum of every byte a keyed
/// rewrite decodes and encodes is computed, so the byte-wise table would dominate it).
const fn crc32c_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut k = 1;
        while k < 8 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            k += 1;
        }
        i += 1;
    }
    t
}

static CRC32C: [[u32; 256]; 8] = crc32c_tables();

/// Extends an (inverted) CRC-32C state by `data`: with the CPU's CRC-32C instruction where it
/// has one (SSE 4.2), else by tables.
fn crc32c_update(c: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { crc32c_sse42(c, data) };
    }
    crc32c_by_tables(c, data)
}

/// [`crc32c_update`] with SSE 4.2's `crc32` instruction, eight bytes at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(c: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut chunks = data.chunks_exact(8);
    let mut c64 = c as u64;
    for b in &mut chunks {
        c64 = _mm_crc32_u64(c64, u64::from_le_bytes(b.try_into().expect("8 bytes")));
    }
    let mut c = c64 as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

/// [`crc32c_update`] by tables.
fn crc32c_by_tables(mut c: u32, data: &[u8]) -> u32 {
    let t = &CRC32C;
    let mut chunks = data.chunks_exact(8);
    for b in &mut chunks {
        let lo = c ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        c = t[7][(lo & 0xFF) as usize]
            ^ t[6][((lo >> 8) & 0xFF) as usize]
            ^ t[5][((lo >> 16) & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xFF) as usize]
            ^ t[2][((hi >> 8) & 0xFF) as usize]
            ^ t[1][((hi >> 16) & 0xFF) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    c
}

/// The framing format's checksum: CRC-32C, rotated right by 15 and offset.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    masked_crc32c_of(&[data])
}

/// The masked CRC-32C of parts read one after another (RocksDB masks its block checksums the
/// same way: `crc32c::Mask`).
pub fn masked_crc32c_of(parts: &[&[u8]]) -> u32 {
    let c = parts.iter().fold(!0u32, |c, p| crc32c_update(c, p));
    (!c).rotate_right(15).wrapping_add(0xA282_EAD8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_of_the_standard_check_string() {
        // CRC-32C("123456789") = 0xE3069283 (RFC 3720 test vector), masked as the format does
        let c = 0xE306_9283u32;
        assert_eq!(
            masked_crc32c(b"123456789"),
            c.rotate_right(15).wrapping_add(0xA282_EAD8)
        );
    }

    #[test]
    fn crc32c_by_eight_bytes_equals_the_byte_wise_crc() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 256) as u8).collect();
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 1000] {
            let mut c = !0u32;
            for &b in &data[..n] {
                c = CRC32C[0][((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
            }
            assert_eq!(crc32c_by_tables(!0, &data[..n]), c, "{n} bytes");
            assert_eq!(crc32c_update(!0, &data[..n]), c, "{n} bytes");
            // split anywhere, the same checksum
            let (a, b) = data[..n].split_at(n / 3);
            assert_eq!(masked_crc32c_of(&[a, b]), masked_crc32c(&data[..n]));
        }
    }

    #[test]
    fn encoded_frames_are_xerial_blocks_and_decode_to_the_same_bytes() {
        // compressible text and incompressible bytes, more than two blocks
        let mut data: Vec<u8> = Vec::new();
        for i in 0..20_000u32 {
            data.extend_from_slice(format!("key-{} value-{} ", i % 97, i % 13).as_bytes());
        }
        let mut x = 0x9E37_79B9u32;
        for _ in 0..70_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            data.push(x as u8);
        }
        let mut out = Vec::new();
        let mut e = FrameEncoder::default();
        e.start(&mut out).unwrap();
        // written in odd pieces: the chunks are still whole 64 KiB blocks
        for piece in data.chunks(1000) {
            e.write(piece, &mut out).unwrap();
        }
        e.finish(&mut out).unwrap();
        assert_eq!(out[..10], STREAM_IDENTIFIER);
        let d = decode_until_identifier(&out, 10).unwrap();
        assert_eq!(d.bytes, data);
        let sizes: Vec<usize> = d.frames.windows(2).map(|w| w[1].1 - w[0].1).collect();
        assert!(sizes.iter().all(|&n| n == MAX_CHUNK), "{sizes:?}");
        assert_eq!(d.frames.len(), data.len().div_ceil(MAX_CHUNK));
        // the text compresses, the random tail does not (written as it is)
        let kinds: Vec<u8> = d.frames.iter().map(|f| out[f.0 as usize]).collect();
        assert_eq!(kinds[0], COMPRESSED);
        assert_eq!(*kinds.last().unwrap(), UNCOMPRESSED);
    }

    #[test]
    fn written_frames_decode_to_the_same_bytes() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut out = Vec::new();
        push_frames(&mut out, &data[..10]);
        push_frames(&mut out, &data[10..]);
        let d = decode_until_identifier(&out, 0).unwrap();
        assert_eq!(d.bytes, data);
        assert_eq!(d.frames.len(), 5); // 10 bytes, then 3 full chunks and a rest
        assert_eq!(d.frames[1], (18, 10));
        assert_eq!(d.end, out.len() as u64);
        // a flipped bit fails the checksum, with the chunk's offset
        let mut bad = out.clone();
        bad[30] ^= 1;
        let e = decode_until_identifier(&bad, 0).unwrap_err().to_string();
        assert!(e.contains("at byte 22") && e.contains("checksum"), "{e}");
    }

    #[test]
    fn raw_blocks_with_literals_and_overlapping_copies() {
        // "abcabcabcabcX": literal "abc", copy len 9 offset 3 (1-byte offset form), literal "X"
        let block = [13u8, 2 << 2, b'a', b'b', b'c', 1 | (5 << 2), 3, 0, b'X'];
        let mut out = Vec::new();
        decompress(&block, 0, &mut out).unwrap();
        assert_eq!(out, b"abcabcabcabcX");
        // a copy reaching before the block's start
        let block = [4u8, 1, 1];
        assert!(decompress(&block, 100, &mut Vec::new()).is_err());
        // a length that the tags do not fill
        let block = [5u8, 0, b'a'];
        assert!(decompress(&block, 0, &mut Vec::new()).is_err());
    }
}
