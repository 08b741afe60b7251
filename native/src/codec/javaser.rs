//! A structural check of Java serialization streams (java.io.ObjectOutputStream grammar), used
//! for the V4+ `CheckpointProperties` trailer of `_metadata`: the trailer is kept as opaque
//! bytes, but it must be exactly one complete serialized object, or Flink could not read it.

use crate::codec::io::Reader;
use crate::error::{Error, Result};
use bytes::Bytes;

const MAX_DEPTH: u32 = 64;

/// The classes the tool deserializes, shared with the Java side's filter (`SerialFilter`): one
/// class a line, with the deepest graph depth it was recorded at.
const ALLOWLIST: &str = include_str!(
    "../../../java/src/main/resources/io/checkpointsurgeon/flink/serialization-allowlist.txt"
);

/// Whether a class named in a serialized `CheckpointProperties` may be there.
fn allowed_class(name: &str) -> bool {
    ALLOWLIST
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .any(|l| l.split_whitespace().next() == Some(name))
}

#[derive(Clone)]
struct ClassDesc {
    /// (typecode, is_object) of each field, in stream order
    fields: Vec<u8>,
    flags: u8,
    super_desc: Option<usize>,
}

#[derive(Clone)]
enum Handle {
    Class(ClassDesc),
    Other,
}

struct Parser {
    r: Reader,
    handles: Vec<Handle>,
}

/// Checks that `buf` is one complete Java serialization stream holding one object.
pub fn check_single_object(buf: Bytes) -> Result<()> {
    let mut p = Parser {
        r: Reader::new(buf),
        handles: Vec::new(),
    };
    let at = p.r.pos();
    let magic = p.r.i16("the Java serialization magic AC ED")? as u16;
    let version = p.r.i16("the Java serialization version")?;
    if magic != 0xACED || version != 5 {
        return Err(Error::format(
            at as u64,
            "a Java serialization stream (AC ED 00 05)",
            None,
        ));
    }
    p.content(0)?;
    if p.r.remaining() != 0 {
        return Err(p.r.error(
            "the end of the serialized CheckpointProperties",
            Some(format!("{} more bytes", p.r.remaining())),
        ));
    }
    Ok(())
}

impl Parser {
    fn depth(&self, d: u32) -> Result<()> {
        if d > MAX_DEPTH {
            Err(self.r.error(
                format!("Java objects nested at most {MAX_DEPTH} deep"),
                None,
            ))
        } else {
            Ok(())
        }
    }

    fn new_handle(&mut self, h: Handle) -> usize {
        self.handles.push(h);
        self.handles.len() - 1
    }

    fn reference(&mut self) -> Result<usize> {
        let at = self.r.pos();
        let h = self.r.i32("a Java serialization handle")?;
        let i = (h as i64 - 0x7E_0000) as usize;
        if h < 0x7E_0000 || i >= self.handles.len() {
            return Err(Error::format(
                at as u64,
                "a known Java serialization handle",
                Some(format!("0x{h:X}")),
            ));
        }
        Ok(i)
    }

    /// A class descriptor (or null / reference); returns its handle index.
    fn class_desc(&mut self, d: u32) -> Result<Option<usize>> {
        self.depth(d)?;
        let at = self.r.pos();
        match self.r.u8("a Java class descriptor")? {
            0x70 => Ok(None),
            0x71 => {
                let i = self.reference()?;
                match self.handles[i] {
                    Handle::Class(_) => Ok(Some(i)),
                    Handle::Other => Err(Error::format(
                        at as u64,
                        "a reference to a class descriptor",
                        None,
                    )),
                }
            }
            0x72 => {
                let name_at = self.r.pos();
                let name = self.r.utf("a class name")?;
                if !allowed_class(&name.to_string()) {
                    return Err(Error::format(
                        name_at as u64,
                        "a class that a CheckpointProperties holds (serialization-allowlist.txt)",
                        Some(format!(
                            "class {name}; it is not deserialized, nor passed to Flink's loader"
                        )),
                    ));
                }
                self.r.i64("a serialVersionUID")?;
                let idx = self.new_handle(Handle::Other);
                let flags = self.r.u8("class descriptor flags")?;
                let n = self.r.i16("the number of serializable fields")?;
                if n < 0 {
                    return Err(self
                        .r
                        .error("a non-negative field count", Some(n.to_string())));
                }
                let mut fields = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let fat = self.r.pos();
                    let t = self.r.u8("a field type code")?;
                    self.r.utf("a field name")?;
                    match t {
                        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => {}
                        b'L' | b'[' => self.content(d + 1)?,
                        other => {
                            return Err(Error::format(
                                fat as u64,
                                "a field type code",
                                Some(format!("0x{other:02X}")),
                            ))
                        }
                    }
                    fields.push(t);
                }
                self.annotation(d + 1)?;
                let super_desc = self.class_desc(d + 1)?;
                self.handles[idx] = Handle::Class(ClassDesc {
                    fields,
                    flags,
                    super_desc,
                });
                Ok(Some(idx))
            }
            // no dynamic proxy class is part of a CheckpointProperties
            0x7D => Err(Error::format(
                at as u64,
                "a class that a CheckpointProperties holds",
                Some("a dynamic proxy class".into()),
            )),
            other => Err(Error::format(
                at as u64,
                "a Java class descriptor",
                Some(format!("0x{other:02X}")),
            )),
        }
    }

    /// Contents up to TC_ENDBLOCKDATA.
    fn annotation(&mut self, d: u32) -> Result<()> {
        loop {
            let at = self.r.pos();
            match self.r.u8("a class or object annotation")? {
                0x78 => return Ok(()),
                0x77 => {
                    let n = self.r.u8("a block data length")? as usize;
                    self.r.bytes(n, "block data")?;
                }
                0x7A => {
                    let n = self.r.count("a block data length", 1)?;
                    self.r.bytes(n, "block data")?;
                }
                _ => {
                    self.r.seek(at)?;
                    self.content(d + 1)?;
                }
            }
        }
    }

    fn value(&mut self, t: u8, d: u32) -> Result<()> {
        let n = match t {
            b'B' | b'Z' => 1,
            b'C' | b'S' => 2,
            b'I' | b'F' => 4,
            b'J' | b'D' => 8,
            _ => return self.content(d + 1),
        };
        self.r.bytes(n, "a primitive field value").map(|_| ())
    }

    fn class_data(&mut self, desc: usize, d: u32) -> Result<()> {
        // superclass data first
        let mut chain = Vec::new();
        let mut cur = Some(desc);
        while let Some(i) = cur {
            if chain.len() > MAX_DEPTH as usize {
                return Err(self.r.error("a class hierarchy of sane depth", None));
            }
            let Handle::Class(c) = &self.handles[i] else {
                break;
            };
            chain.push(c.clone());
            cur = c.super_desc;
        }
        for c in chain.iter().rev() {
            if c.flags & 0x04 != 0 {
                // externalizable: protocol 2 writes block data ended by TC_ENDBLOCKDATA
                self.annotation(d + 1)?;
                continue;
            }
            for &t in &c.fields {
                self.value(t, d)?;
            }
            if c.flags & 0x01 != 0 {
                self.annotation(d + 1)?;
            }
        }
        Ok(())
    }

    fn content(&mut self, d: u32) -> Result<()> {
        self.depth(d)?;
        let at = self.r.pos();
        match self.r.u8("a Java serialized object")? {
            0x70 => Ok(()),
            0x71 => self.reference().map(|_| ()),
            0x74 => {
                self.r.utf("a string")?;
                self.new_handle(Handle::Other);
                Ok(())
            }
            0x7C => {
                let n = self.r.i64("a long string length")?;
                if n < 0 || n as u64 > self.r.remaining() as u64 {
                    return Err(self.r.error("a long string that fits", Some(n.to_string())));
                }
                self.r.bytes(n as usize, "a long string")?;
                self.new_handle(Handle::Other);
                Ok(())
            }
            0x72 | 0x7D => {
                self.r.seek(at)?;
                self.class_desc(d + 1).map(|_| ())
            }
            0x76 => {
                self.class_desc(d + 1)?;
                self.new_handle(Handle::Other);
                Ok(())
            }
            0x7E => {
                self.class_desc(d + 1)?;
                self.new_handle(Handle::Other);
                self.content(d + 1)
            }
            0x73 => {
                let desc = self.class_desc(d + 1)?;
                self.new_handle(Handle::Other);
                match desc {
                    Some(desc) => self.class_data(desc, d + 1),
                    None => Err(Error::format(
                        at as u64,
                        "an object with a class descriptor",
                        None,
                    )),
                }
            }
            0x75 => {
                let desc = self.class_desc(d + 1)?;
                self.new_handle(Handle::Other);
                let n = self.r.count("an array length", 1)?;
                // the element type is the second char of the array class name; we do not keep
                // names, so arrays inside CheckpointProperties (none exist) are refused
                let _ = desc;
                if n > 0 {
                    return Err(Error::Unsupported {
                        file: String::new(),
                        offset: at as u64,
                        what: "a non-empty array in the serialized CheckpointProperties".into(),
                    });
                }
                Ok(())
            }
            other => Err(Error::format(
                at as u64,
                "a Java serialized object",
                Some(format!("type code 0x{other:02X}")),
            )),
        }
    }
}
