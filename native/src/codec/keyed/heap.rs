//! The heap backend's full checkpoint format (`KeyGroupsStateHandle` of a hashmap checkpoint, and
//! of a native savepoint from the heap backend), counted per state.
//!
//! Read in Flink's sources (`HeapSnapshotStrategy`, `HeapSnapshotResources`,
//! `HeapRestoreOperation`, `StateTableByKeyGroupReaders`, `CopyOnWriteStateMapSnapshot`,
//! `KeyGroupPartitioner`, `HeapPriorityQueueStateSnapshot`; 1.13.6, 1.15.4, 1.20.3, 2.3.0 agree):
//! - after the meta info, EVERY key group of the range, each with its offset: i32 key-group id
//!   (uncompressed), then one part per state in the iteration order of the backend's state map
//!   (the same in every key group of a stream), each written through its own compression stream
//!   (so, compressed, each part opens with a snappy stream identifier): i16 kvStateId, i32 count,
//!   then the count's mappings: key-value states `namespace, key, state` with the state's own
//!   serializers (`writeState`), priority queues (timers) their elements.
//! - the restore reads as many parts as the meta info has states.
//!
//! Entries come from the counts. Compressed, each part's stored bytes are its frames and its raw
//! bytes the lengths its chunks hold, so no value is decompressed but the first chunk's id and
//! count. Uncompressed, parts have no length: the next part is found by walking the mappings with
//! the layouts of the state's serializers ([`crate::codec::elements`]); where a layout is not
//! known the rest of the key group (up to the next key group's offset) is reported as one sum with
//! the reason, except for the last part of a key group, which ends where the key group does.

use super::canonical::{key_group_blocks, StreamCounts, STREAM_IDENTIFIER};
use super::meta::{BackendStateType, KeyedBackendMeta, KeyedSerializer};
use super::{Note, RangeSource, Window, MAX_WINDOW};
use crate::codec::elements::{Layout, SnapshotInfo};
use crate::codec::handles::Offsets;
use crate::codec::snappy;
use crate::error::{Error, Result};

/// The layout of one mapping of each state, by kvStateId: `namespace, key, value` for key-value
/// states, the element for priority queues; None where a serializer's layout is not known, with
/// the reason.
pub fn mapping_layouts(meta: &KeyedBackendMeta) -> Vec<std::result::Result<Layout, String>> {
    let key = meta.key_serializer.layout();
    meta.states
        .iter()
        .map(|s| {
            let layout = |k: &str| {
                s.serializer(k)
                    .and_then(|x| x.layout().cloned())
                    .ok_or_else(|| {
                        format!(
                            "the element format of {} of state '{}' ({}) is not known to the tool",
                            k,
                            s.name,
                            s.serializer(k).map_or("missing".into(), unknown_class)
                        )
                    })
            };
            if s.backend_type == BackendStateType::PriorityQueue {
                return layout("VALUE_SERIALIZER");
            }
            let key = key.cloned().ok_or_else(|| {
                format!(
                    "the element format of the key serializer ({}) is not known to the tool",
                    unknown_class(&meta.key_serializer)
                )
            })?;
            Ok(Layout::Tuple(vec![
                layout("NAMESPACE_SERIALIZER")?,
                key,
                layout("VALUE_SERIALIZER")?,
            ]))
        })
        .collect()
}

/// The serializer's snapshot class, and the nested one whose layout is not known if it is not
/// this one (a timer's Kryo key, a list's POJO element).
fn unknown_class(s: &KeyedSerializer) -> String {
    fn innermost(i: &SnapshotInfo) -> Option<&SnapshotInfo> {
        i.nested
            .iter()
            .find(|n| n.layout.is_none())
            .map(|n| innermost(n).unwrap_or(n))
    }
    match s.info.as_ref().and_then(innermost) {
        Some(n) => format!("{}, whose nested {} is not known", s.class(), n.class),
        None => s.class(),
    }
}

/// Counts a heap checkpoint stream's data per state; what cannot be attributed is added to
/// `notes` (with `file`).
pub fn count(
    src: &dyn RangeSource,
    meta: &KeyedBackendMeta,
    first_key_group: i32,
    offsets: &Offsets,
    file: &str,
    notes: &mut Vec<Note>,
) -> Result<StreamCounts> {
    let n = meta.states.len();
    let mut out = StreamCounts::new(n);
    let mut seen = vec![false; n];
    let mut w = Window::new(src);
    walk(&mut w, meta, first_key_group, offsets, &mut |_, ev| {
        match ev {
            Event::KeyGroup(..) => {
                out.overhead_bytes += 4;
                out.key_groups_with_data += 1;
                seen.fill(false);
            }
            Event::Part(p) => {
                seen[p.state] = true;
                let c = &mut out.states[p.state];
                c.entries += p.entries;
                c.raw_bytes += p.raw;
                c.stored_bytes += p.end - p.at;
            }
            Event::Unframed(u) => {
                // the rest of this key group: its later parts cannot be found
                let message = format!(
                    "{}; the rest of each key group after it is counted as one sum",
                    u.reason
                );
                if !notes.iter().any(|x| x.message == message) {
                    notes.push(Note {
                        file: file.to_string(),
                        offset: u.body,
                        message,
                    });
                }
                out.states[u.state].entries += u.entries;
                out.states[u.state].complete = false;
                for (i, st) in out.states.iter_mut().enumerate() {
                    if !seen[i] {
                        st.complete = false;
                    }
                }
                out.unattributed_bytes += u.end - u.at;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// A state's part of a heap key group, as [`walk`] finds it.
pub struct Part {
    /// Its kvStateId.
    pub state: usize,
    /// Where it starts (its kvStateId, or its stream identifier when compressed) and ends.
    pub at: u64,
    pub end: u64,
    /// Its mappings, and its bytes uncompressed.
    pub entries: u64,
    pub raw: u64,
}

/// An uncompressed part whose end cannot be found: its serializers' layout is not known (or
/// its mappings do not have it), and it is not the key group's last part.
pub struct Unframed {
    pub state: usize,
    pub at: u64,
    /// Where its mappings start.
    pub body: u64,
    /// The end of the key group: the rest of it from `at` holds this and the later parts.
    pub end: u64,
    pub entries: u64,
    pub reason: String,
}

/// What [`walk`] finds, in stream order.
pub enum Event {
    /// A key group begins (its id at this offset).
    KeyGroup(i32, u64),
    Part(Part),
    /// The rest of the key group cannot be split into parts (the walk goes on with the next one).
    Unframed(Unframed),
}

/// Walks every key group of a heap checkpoint stream, part by part, checking the key-group ids,
/// the kvStateIds (each state once per key group) and that the parts fill each key group. A
/// compressed part is delimited by its frames; an uncompressed one by its serializers' layouts
/// (the last of a key group ends with it). `visit` gets the window, to read the bytes it wants.
pub fn walk(
    w: &mut Window,
    meta: &KeyedBackendMeta,
    first_key_group: i32,
    offsets: &Offsets,
    visit: &mut dyn FnMut(&mut Window, Event) -> Result<()>,
) -> Result<()> {
    let n = meta.states.len();
    let layouts = mapping_layouts(meta);
    let blocks = key_group_blocks(first_key_group, offsets, meta.len as u64, w.len(), true)?;
    for (kg, start, end) in blocks {
        let written = w.i32(start, "a key-group id")?;
        if written != kg {
            return Err(Error::format(
                start,
                format!("key group {kg}'s id at its offset (the heap checkpoint format)"),
                Some(written.to_string()),
            ));
        }
        visit(w, Event::KeyGroup(kg, start))?;
        let mut seen = vec![false; n];
        let mut at = start + 4;
        for part in 0..n {
            if at >= end {
                return Err(Error::format(
                    at,
                    format!("the part of the {part}th state of key group {kg} (one per state of the meta info)"),
                    Some(format!("the end of the key group at byte {end}")),
                ));
            }
            if meta.compressed {
                let (id, entries, raw, part_end) = compressed_part(w, at, end, kg)?;
                let state = check_id(id, n, &mut seen, at, kg)?;
                visit(
                    w,
                    Event::Part(Part {
                        state,
                        at,
                        end: part_end,
                        entries,
                        raw,
                    }),
                )?;
                at = part_end;
                continue;
            }
            let id = w.i16(at, "a kvStateId")?;
            let count = w.i32(at + 2, "the number of mappings")?;
            let state = check_id(id as u16, n, &mut seen, at, kg)?;
            if count < 0 {
                return Err(Error::format(
                    at + 2,
                    format!(
                        "a number of mappings of state '{}' in key group {kg}",
                        meta.states[state].name
                    ),
                    Some(count.to_string()),
                ));
            }
            let body = at + 6;
            let walked = match &layouts[state] {
                Ok(layout) => skip(w, layout, body, end, count as u64),
                Err(reason) => Err(reason.clone()),
            };
            let part_end = match walked {
                Ok(e) => e,
                Err(_) if part + 1 == n => end,
                Err(reason) => {
                    visit(
                        w,
                        Event::Unframed(Unframed {
                            state,
                            at,
                            body,
                            end,
                            entries: count as u64,
                            reason,
                        }),
                    )?;
                    at = end;
                    break;
                }
            };
            visit(
                w,
                Event::Part(Part {
                    state,
                    at,
                    end: part_end,
                    entries: count as u64,
                    raw: part_end - at,
                }),
            )?;
            at = part_end;
        }
        if at != end {
            return Err(Error::format(
                at,
                format!(
                    "key group {kg}'s parts to end where the next key group starts (byte {end})"
                ),
                Some(format!("{} bytes more", end - at)),
            ));
        }
    }
    Ok(())
}

fn check_id(id: u16, n: usize, seen: &mut [bool], at: u64, kg: i32) -> Result<usize> {
    let s = id as usize;
    if s >= n || seen[s] {
        return Err(Error::format(
            at,
            format!("the kvStateId of a state not yet written in key group {kg} (below {n})"),
            Some(id.to_string()),
        ));
    }
    seen[s] = true;
    Ok(s)
}

/// Walks `count` mappings of `layout` from `at`; where they end, or why they could not be walked.
fn skip(
    w: &mut Window,
    layout: &Layout,
    mut at: u64,
    end: u64,
    count: u64,
) -> std::result::Result<u64, String> {
    let min = layout.min_len().max(1) as u64;
    if count.saturating_mul(min) > end.saturating_sub(at) {
        return Err(format!(
            "{count} mappings cannot fit in the {} bytes of their key group",
            end.saturating_sub(at)
        ));
    }
    let mut want = 4096usize;
    let mut left = count;
    while left > 0 {
        let avail = (end - at) as usize;
        let data = w.get(at, want.min(avail)).map_err(|e| e.to_string())?;
        let data = &data[..data.len().min(avail)];
        // walk as many mappings as lie whole in this window
        let mut p = 0usize;
        while left > 0 {
            match layout.end(data, p) {
                Some(e) => {
                    p = e;
                    left -= 1;
                }
                None => break,
            }
        }
        if left > 0 && p == 0 {
            if data.len() >= avail || want >= MAX_WINDOW {
                return Err(format!(
                    "a mapping at byte {at} does not have the layout of its serializers (a subclass, \
                     or a serializer version the tool does not know)"
                ));
            }
            want = (want * 4).min(MAX_WINDOW);
        }
        at += p as u64;
    }
    Ok(at)
}

/// One compressed part from `at` (its stream identifier) to the next identifier or `end`: the
/// kvStateId and count from its first bytes, the raw bytes its chunks hold, and its end.
fn compressed_part(w: &mut Window, at: u64, end: u64, kg: i32) -> Result<(u16, u64, u64, u64)> {
    if w.exact(at, 10, "a snappy stream identifier")? != STREAM_IDENTIFIER {
        return Err(Error::format(
            at,
            format!("the snappy stream identifier that opens a state's part of key group {kg}"),
            None,
        ));
    }
    let mut p = at + 10;
    let mut head: Vec<u8> = Vec::new();
    let mut raw = 0u64;
    while p < end {
        let h = w.exact(p, 4, "a snappy chunk header")?;
        let (kind, len) = snappy::chunk_header(&[h[0], h[1], h[2], h[3]]);
        if kind == 0xFF {
            break;
        }
        if p + 4 + len as u64 > end {
            return Err(Error::format(
                p,
                format!("a snappy chunk of {len} bytes within key group {kg} (up to byte {end})"),
                None,
            ));
        }
        if snappy::is_reserved(kind) {
            return Err(Error::format(
                p,
                "a snappy chunk type (0x00, 0x01, 0xFF or a skippable 0x80-0xFE)",
                Some(format!("{kind:#04x}")),
            ));
        }
        if snappy::is_data(kind) {
            let body = w.exact(p + 4, len, "a snappy chunk")?;
            if head.len() < 6 {
                let before = head.len();
                snappy::decode_data_chunk(kind, body, p, &mut head)?;
                raw += (head.len() - before) as u64;
            } else {
                raw += snappy::data_chunk_len(kind, body)
                    .ok_or_else(|| Error::format(p, "a snappy block's uncompressed length", None))?
                    as u64;
            }
        }
        p += 4 + len as u64;
    }
    if head.len() < 6 {
        return Err(Error::format(
            at,
            format!("a state's kvStateId and count in its part of key group {kg}"),
            Some(format!("{} bytes", head.len())),
        ));
    }
    let id = u16::from_be_bytes([head[0], head[1]]);
    let count = i32::from_be_bytes([head[2], head[3], head[4], head[5]]);
    if count < 0 {
        return Err(Error::format(
            at,
            format!("a number of mappings in key group {kg}"),
            Some(count.to_string()),
        ));
    }
    Ok((id, count as u64, raw, p))
}
