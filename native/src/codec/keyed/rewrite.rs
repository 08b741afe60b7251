//! Rewrites the stream of a key-groups handle (canonical or heap checkpoint format) without some
//! of its states, or with states renamed, from the old stream to the new one key group by key
//! group, in bounded memory (one read of the source, one snappy block):
//! - [`edit_header`]: the meta info without the removed states' META_INFO entries and with the
//!   renamed ones' new names, every other byte as it was;
//! - canonical key groups (`FullSnapshotAsyncWriter`): every run of a kept state as it was, under
//!   its new kvStateId (a kvStateId is the state's index in the meta info, so the states after a
//!   removed one move down by one); the runs of removed states are left out. The 0x80 flags stay
//!   as written: a flagged pair was followed by a kvStateId or the end mark, and still is. A key
//!   group left without runs is not written (offset 0), as Flink's writer never writes one.
//!   Compressed key groups are decompressed chunk by chunk and compressed again as Flink writes
//!   them ([`FrameEncoder`]);
//! - heap key groups (`HeapSnapshotStrategy`): every key group, its id, then the parts of the
//!   kept states: a removed state's part is left out; a part whose state moved gets its new
//!   kvStateId (uncompressed: its first two bytes; compressed: its first chunk is decoded,
//!   patched and encoded again, the other chunks stay as they were). Uncompressed parts carry no
//!   length: each part but the last of a key group is walked with its serializers' layouts.
//!
//! A rename alone changes only the meta info: the key groups are copied as they are, their
//! offsets shifted by the header's change in length.

use super::canonical::{self, Event, END_OF_KEY_GROUP_MARK, STREAM_IDENTIFIER};
use super::handle::SnapshotFormat;
use super::heap;
use super::meta::KeyedBackendMeta;
use super::{RangeSource, StateCount, Window};
use crate::codec::handles::Offsets;
use crate::codec::io::{JStr, Writer};
use crate::codec::snappy::{self, FrameEncoder};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::io::Write;

/// How much of the source one copy step moves.
const COPY: usize = 1 << 20;

/// The meta info `header` (parsed as `meta`) with each state's entry under its name in `names`
/// (by kvStateId; None leaves the entry out).
pub fn edit_header(
    header: &[u8],
    meta: &KeyedBackendMeta,
    names: &[Option<JStr>],
) -> Result<Vec<u8>> {
    let n = meta.states.len();
    debug_assert_eq!(names.len(), n);
    // the state count follows the key serializer's snapshot; the entries follow it and end the
    // header (what `meta::parse` checked)
    let count_at = meta.key_serializer.snapshot.body.1;
    let first = meta.states.first().map_or(count_at + 2, |s| s.start);
    let last = meta.states.last().map_or(count_at + 2, |s| s.end);
    if header.get(count_at..count_at + 2) != Some(&(n as i16).to_be_bytes()[..])
        || first != count_at + 2
        || last != header.len()
    {
        return Err(Error::format(
            count_at as u64,
            format!("the number of keyed states ({n}) right after the key serializer"),
            None,
        ));
    }
    let kept = names.iter().flatten().count();
    let mut out = Vec::with_capacity(header.len());
    out.extend_from_slice(&header[..count_at]);
    out.extend_from_slice(&(kept as i16).to_be_bytes());
    for (s, name) in meta.states.iter().zip(names) {
        let Some(name) = name else { continue };
        let entry = &header[s.start..s.end];
        if *name == s.name {
            out.extend_from_slice(entry);
            continue;
        }
        Writer::new(&mut out).utf(name).map_err(|_| {
            Error::InvalidArgument(format!(
                "the new name of state '{}' is longer than 65535 bytes",
                s.name
            ))
        })?;
        out.extend_from_slice(&entry[2 + s.name.as_bytes().len()..]);
    }
    Ok(out)
}

/// The new kvStateId of each state (its index among the kept ones), by old kvStateId.
pub fn new_ids(names: &[Option<JStr>]) -> Vec<Option<u16>> {
    let mut next = 0u16;
    names
        .iter()
        .map(|n| {
            n.as_ref().map(|_| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// What to do to the stream of one key-groups handle.
#[derive(Clone, Debug)]
pub struct StreamEdit {
    pub format: SnapshotFormat,
    /// The stream's meta info as it is, and its bytes (the rewrite checks that the stream still
    /// starts with them: it was planned on them).
    pub meta: KeyedBackendMeta,
    pub source_header: Bytes,
    /// The new meta info ([`edit_header`]).
    pub header: Bytes,
    /// New kvStateId by old one; None: the state is removed ([`new_ids`]).
    pub ids: Vec<Option<u16>>,
    pub first_key_group: i32,
    /// The handle's key-group offsets as they are.
    pub offsets: Offsets,
    /// The key-group prefix of the job's keys (1 or 2 bytes).
    pub prefix: usize,
}

impl StreamEdit {
    /// Whether only the meta info changes (every state stays under its kvStateId).
    pub fn header_only(&self) -> bool {
        self.ids
            .iter()
            .enumerate()
            .all(|(i, id)| *id == Some(i as u16))
    }

    /// The offsets of the key groups after a header-only rewrite.
    pub fn shifted_offsets(&self) -> Offsets {
        let shift = self.header.len() as i64 - self.meta.len as i64;
        let v: Vec<i64> = self
            .offsets
            .iter()
            .map(|o| if o == 0 { 0 } else { o + shift })
            .collect();
        Offsets::from_slice(&v)
    }

    /// The new stream's length after a header-only rewrite of a `len`-byte stream.
    pub fn shifted_len(&self, len: u64) -> u64 {
        len - self.meta.len as u64 + self.header.len() as u64
    }
}

/// What a rewrite wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewritten {
    /// The new key-group offsets.
    pub offsets: Offsets,
    /// The new stream's length.
    pub len: u64,
    /// What the old stream held per state (by old kvStateId), as the rewrite walked it; None
    /// when the key groups were copied without being walked (a rename).
    pub source: Option<Vec<StateCount>>,
}

/// Writes the rewritten stream of `src` to `out` (named `out_name` in messages).
pub fn rewrite(
    src: &dyn RangeSource,
    edit: &StreamEdit,
    out: &mut dyn Write,
    out_name: &str,
) -> Result<Rewritten> {
    let mut o = Out {
        w: out,
        pos: 0,
        name: out_name,
    };
    let mut w = Window::new(src);
    let head = w.exact(0, edit.meta.len, "the keyed meta info")?;
    if head != &edit.source_header[..] || edit.source_header.len() != edit.meta.len {
        return Err(Error::Validation(format!(
            "the keyed meta info at the start of the stream is not the one the plan read (the \
             stream changed since); {out_name} is not made"
        )));
    }
    if edit.header_only() {
        o.put(&edit.header)?;
        copy(&mut w, edit.meta.len as u64, src.len(), &mut o)?;
        return Ok(Rewritten {
            offsets: edit.shifted_offsets(),
            len: o.pos,
            source: None,
        });
    }
    o.put(&edit.header)?;
    let (offsets, counts) = match edit.format {
        SnapshotFormat::HeapCheckpoint => heap_key_groups(&mut w, edit, &mut o)?,
        _ => canonical_key_groups(src, edit, &mut o)?,
    };
    Ok(Rewritten {
        offsets: Offsets::from_slice(&offsets),
        len: o.pos,
        source: Some(counts),
    })
}

/// The output: counts what was written and names itself in I/O errors.
struct Out<'a> {
    w: &'a mut dyn Write,
    pos: u64,
    name: &'a str,
}

impl Out<'_> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.w.write_all(b).map_err(|e| Error::io(self.name, e))?;
        self.pos += b.len() as u64;
        Ok(())
    }
}

impl Write for Out<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.w.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Copies `from..to` of the source.
fn copy(w: &mut Window, from: u64, to: u64, out: &mut Out) -> Result<()> {
    let mut at = from;
    while at < to {
        let chunk = w.get(at, COPY)?;
        let take = chunk.len().min((to - at) as usize).min(COPY);
        if take == 0 {
            return Err(Error::format(at, "more bytes", Some("the end".into())));
        }
        out.put(&chunk[..take])?;
        at += take as u64;
    }
    Ok(())
}

fn canonical_key_groups(
    src: &dyn RangeSource,
    e: &StreamEdit,
    out: &mut Out,
) -> Result<(Vec<i64>, Vec<StateCount>)> {
    let mut offsets = vec![0i64; e.offsets.len()];
    let mut enc = FrameEncoder::default();
    let compressed = e.meta.compressed;
    let (mut index, mut started) = (0usize, false);
    let put = |enc: &mut FrameEncoder, out: &mut Out, b: &[u8]| -> Result<()> {
        if compressed {
            enc.write(b, out).map_err(|x| Error::io(out.name, x))
        } else {
            out.put(b)
        }
    };
    let counts = canonical::walk(
        src,
        &e.meta,
        e.first_key_group,
        &e.offsets,
        e.prefix,
        &mut |ev| match ev {
            Event::KeyGroup(kg, _) => {
                index = (kg - e.first_key_group) as usize;
                started = false;
                Ok(())
            }
            Event::Run(s) => {
                let Some(id) = e.ids[s] else { return Ok(()) };
                if !started {
                    started = true;
                    offsets[index] = out.pos as i64;
                    if compressed {
                        enc.start(out).map_err(|x| Error::io(out.name, x))?;
                    }
                }
                put(&mut enc, out, &id.to_be_bytes())
            }
            Event::Bytes(s, b) if e.ids[s].is_some() => put(&mut enc, out, b),
            Event::Bytes(..) => Ok(()),
            Event::End if started => {
                put(&mut enc, out, &END_OF_KEY_GROUP_MARK.to_be_bytes())?;
                if compressed {
                    enc.finish(out).map_err(|x| Error::io(out.name, x))?;
                }
                Ok(())
            }
            Event::End => Ok(()),
        },
    )?;
    Ok((offsets, counts.states))
}

fn heap_key_groups(
    w: &mut Window,
    e: &StreamEdit,
    out: &mut Out,
) -> Result<(Vec<i64>, Vec<StateCount>)> {
    let meta = &e.meta;
    let mut enc = FrameEncoder::default();
    let mut offsets = vec![0i64; e.offsets.len()];
    let mut counts = vec![StateCount::none(); meta.states.len()];
    heap::walk(
        w,
        meta,
        e.first_key_group,
        &e.offsets,
        &mut |w, ev| match ev {
            heap::Event::KeyGroup(kg, _) => {
                offsets[(kg - e.first_key_group) as usize] = out.pos as i64;
                out.put(&kg.to_be_bytes())
            }
            heap::Event::Part(p) => {
                let c = &mut counts[p.state];
                c.entries += p.entries;
                c.raw_bytes += p.raw;
                c.stored_bytes += p.end - p.at;
                match e.ids[p.state] {
                    None => Ok(()),
                    Some(new) if new as usize == p.state => copy(w, p.at, p.end, out),
                    Some(new) if meta.compressed => {
                        renumber_compressed_part(w, p.at, p.end, new, &mut enc, out)
                    }
                    Some(new) => {
                        out.put(&new.to_be_bytes())?;
                        copy(w, p.at + 2, p.end, out)
                    }
                }
            }
            heap::Event::Unframed(u) => Err(unframed(u.body, &u.reason)),
        },
    )?;
    Ok((offsets, counts))
}

/// Why an uncompressed heap checkpoint cannot be rewritten, and the way out.
fn unframed(at: u64, reason: &str) -> Error {
    Error::Unsupported {
        file: String::new(),
        offset: at,
        what: format!(
            "heap checkpoint without compression whose state parts cannot be delimited: {reason}. \
             Its parts carry no length, so the parts after this one cannot be found. Take a \
             canonical savepoint of the job (every entry has its length there) and remove the \
             state from the savepoint, or take the checkpoint with snapshot compression on"
        ),
    }
}

/// Copies a compressed heap part (`at..end`, from its stream identifier) with the kvStateId in
/// its first data chunk replaced by `new`.
fn renumber_compressed_part(
    w: &mut Window,
    at: u64,
    end: u64,
    new: u16,
    enc: &mut FrameEncoder,
    out: &mut Out,
) -> Result<()> {
    out.put(&STREAM_IDENTIFIER)?;
    let mut p = at + STREAM_IDENTIFIER.len() as u64;
    let mut patched = false;
    let mut decoded = Vec::new();
    while p < end {
        let h = w.exact(p, 4, "a snappy chunk header")?;
        let (kind, len) = snappy::chunk_header(&[h[0], h[1], h[2], h[3]]);
        let next = p + 4 + len as u64;
        if !patched && snappy::is_data(kind) {
            let body = w.exact(p + 4, len, "a snappy chunk")?;
            decoded.clear();
            snappy::decode_data_chunk(kind, body, p, &mut decoded)?;
            if decoded.len() < 2 {
                return Err(Error::Unsupported {
                    file: String::new(),
                    offset: p,
                    what: format!(
                        "a state's part whose first snappy chunk holds {} bytes, less than its \
                         kvStateId",
                        decoded.len()
                    ),
                });
            }
            decoded[..2].copy_from_slice(&new.to_be_bytes());
            enc.chunk(&decoded, out)
                .map_err(|e| Error::io(out.name, e))?;
            patched = true;
        } else {
            copy(w, p, next, out)?;
        }
        p = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_close_the_gaps_of_removed_states() {
        let a = Some(JStr::new("a"));
        assert_eq!(
            new_ids(&[a.clone(), None, a.clone(), None, a.clone()]),
            vec![Some(0), None, Some(1), None, Some(2)]
        );
        assert_eq!(new_ids(&[None]), vec![None]);
    }
}
