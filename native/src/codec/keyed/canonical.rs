//! The canonical key/value format of keyed state: canonical savepoints of every backend
//! (`KeyGroupsSavepointStateHandle`) and RocksDB's full checkpoints up to Flink 1.15
//! (`KeyGroupsStateHandle`; `RocksFullSnapshotStrategy`, replaced in 1.16 by RocksDB's own files).
//! Counted per state from the key-group offsets in `_metadata`, without decoding keys or values.
//!
//! Read in Flink's sources (`FullSnapshotAsyncWriter`, `FullSnapshotUtil`,
//! `SnappyStreamCompressionDecorator`, `KeyGroupRangeOffsets`, `CompositeKeySerializationUtils`;
//! 1.13.6, 1.15.4, 1.20.3, 2.3.0 agree):
//! - after the meta info, each key group with data, ascending: its offset is recorded, a
//!   compression stream is opened on the checkpoint stream (snappy framing when the meta info
//!   says compressed: one stream, so one stream identifier, per key group), then i16 kvStateId
//!   and the pairs `i32 len, key, i32 len, value` (`BytePrimitiveArraySerializer`) in (state,
//!   key) order. The last pair before a new state or key group, and the very last, has bit 0x80
//!   set in its key's first byte; after it comes the next i16 kvStateId, or 0xFFFF
//!   (`END_OF_KEY_GROUP_MARK`) which ends the key group.
//! - key groups without data keep offset 0 (`KeyGroupRangeOffsets` starts zeroed).
//! - every key starts with its key group, 1 byte when the job's max parallelism is at most 128,
//!   else 2 (`computeRequiredBytesInKeyGroupPrefix`), which is checked here.
//!
//! Per state the entries are the pairs and the raw bytes are its pairs with their lengths plus
//! the kvStateIds that open its runs; the end marks are the handle's overhead. A compressed key
//! group is one snappy stream for all its states: its stored bytes are split over them in
//! proportion to their raw bytes.

use super::meta::KeyedBackendMeta;
use super::{apportion, RangeSource, StateCount, Window};
use crate::codec::handles::Offsets;
use crate::codec::snappy;
use crate::error::{Error, Result};

/// The snappy framing stream identifier chunk.
pub use crate::codec::snappy::STREAM_IDENTIFIER;
pub const END_OF_KEY_GROUP_MARK: u16 = 0xFFFF;
/// How many bytes of an uncompressed key group are handed to the parser at a time.
const FEED: usize = 1 << 20;

/// What the data of one canonical stream holds per state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// Indexed by kvStateId (the meta info's order).
    pub states: Vec<StateCount>,
    pub key_groups_with_data: u32,
    /// Bytes of the stream that belong to no state: end marks, key-group ids.
    pub overhead_bytes: u64,
    /// Bytes the reader could not attribute to a state (see the notes of the handle's reading).
    pub unattributed_bytes: u64,
    /// Stored bytes of compressed key groups were split over their states by raw bytes.
    pub stored_apportioned: bool,
}

impl StreamCounts {
    /// No data yet for `states` states.
    pub fn new(states: usize) -> Self {
        StreamCounts {
            states: vec![StateCount::none(); states],
            ..StreamCounts::default()
        }
    }
}

/// The key groups that have data, in stream order, each with where its bytes end: the next one's
/// offset or the stream's end. Offsets must lie after the header, within the stream, ascending.
pub fn key_group_blocks(
    first_key_group: i32,
    offsets: &Offsets,
    header_len: u64,
    stream_len: u64,
    every_key_group: bool,
) -> Result<Vec<(i32, u64, u64)>> {
    let mut blocks: Vec<(i32, u64, u64)> = Vec::new();
    for (i, o) in offsets.iter().enumerate() {
        let kg = first_key_group.saturating_add(i as i32);
        if o == 0 && !every_key_group {
            continue;
        }
        let prev_end = blocks.last().map_or(header_len, |b| b.1 + 1);
        if o < 0 || (o as u64) < prev_end || o as u64 > stream_len {
            return Err(Error::format(
                o.max(0) as u64,
                format!(
                    "the offset of key group {kg} after the meta info and the previous key group, \
                     within the {stream_len}-byte stream (the key-group offsets in _metadata)"
                ),
                Some(o.to_string()),
            ));
        }
        if let Some(last) = blocks.last_mut() {
            last.2 = o as u64;
        }
        blocks.push((kg, o as u64, stream_len));
    }
    Ok(blocks)
}

/// Counts a canonical stream's data per state. `prefix_bytes` is the key-group prefix length of
/// the job (1 when its max parallelism is at most 128, else 2).
pub fn count(
    src: &dyn RangeSource,
    meta: &KeyedBackendMeta,
    first_key_group: i32,
    offsets: &Offsets,
    prefix_bytes: usize,
) -> Result<StreamCounts> {
    walk(
        src,
        meta,
        first_key_group,
        offsets,
        prefix_bytes,
        &mut |_| Ok(()),
    )
}

/// What [`walk`] finds, in stream order.
pub enum Event<'a> {
    /// A key group with data begins (at this offset of the stream).
    KeyGroup(i32, u64),
    /// A kvStateId that opens a run of this state (its two bytes belong to no run).
    Run(usize),
    /// Bytes of the current run: pairs with their lengths, as stored (decompressed).
    Bytes(usize, &'a [u8]),
    /// The end mark of the key group.
    End,
}

/// Walks the key groups with data of a canonical stream, handing `visit` every run and its bytes
/// (decompressed when the stream is compressed) in stream order, and counts them per state.
/// Memory: one snappy chunk or one read of the source at a time.
pub fn walk(
    src: &dyn RangeSource,
    meta: &KeyedBackendMeta,
    first_key_group: i32,
    offsets: &Offsets,
    prefix_bytes: usize,
    visit: &mut dyn FnMut(Event<'_>) -> Result<()>,
) -> Result<StreamCounts> {
    let n = meta.states.len();
    let mut out = StreamCounts::new(n);
    out.stored_apportioned = meta.compressed;
    let blocks = key_group_blocks(first_key_group, offsets, meta.len as u64, src.len(), false)?;
    if blocks.is_empty() && src.len() != meta.len as u64 {
        return Err(Error::format(
            meta.len as u64,
            "the end of the stream: no key group has data (all offsets are 0)",
            Some(format!("{} more bytes", src.len() - meta.len as u64)),
        ));
    }
    let mut w = Window::new(src);
    let mut decoded = Vec::new();
    for (kg, start, end) in blocks {
        visit(Event::KeyGroup(kg, start))?;
        let mut p = RunParser::new(n, kg, prefix_bytes);
        if meta.compressed {
            let mut at = start;
            let mut first = true;
            while at < end {
                let h = w.exact(at, 4, "a snappy chunk header")?;
                let (kind, len) = snappy::chunk_header(&[h[0], h[1], h[2], h[3]]);
                if at + 4 + len as u64 > end {
                    return Err(Error::format(
                        at,
                        format!("a snappy chunk of {len} bytes within key group {kg} (up to byte {end})"),
                        None,
                    ));
                }
                if first && w.exact(at, 10, "")? != STREAM_IDENTIFIER {
                    return Err(Error::format(
                        at,
                        format!("the snappy stream identifier that opens key group {kg}"),
                        None,
                    ));
                }
                first = false;
                if snappy::is_reserved(kind) || (kind == 0xFF && at != start) {
                    return Err(Error::format(
                        at,
                        format!("a snappy data chunk of key group {kg}"),
                        Some(format!("chunk type {kind:#04x}")),
                    ));
                }
                if snappy::is_data(kind) {
                    let body = w.exact(at + 4, len, "a snappy chunk")?;
                    decoded.clear();
                    snappy::decode_data_chunk(kind, body, at, &mut decoded)?;
                    let used = p.feed_with(&decoded, &|_| at, visit)?;
                    if used < decoded.len() {
                        return Err(Error::format(
                            at,
                            format!("the end of key group {kg} at its end mark"),
                            Some(format!("{} more decompressed bytes", decoded.len() - used)),
                        ));
                    }
                }
                at += 4 + len as u64;
            }
            p.finish(end)?;
            let raw: Vec<u64> = p.raw.iter().map(|r| r.1).collect();
            for (i, s) in apportion(end - start, &raw).into_iter().enumerate() {
                out.states[i].stored_bytes += s;
            }
        } else {
            let mut at = start;
            while at < end && !p.done() {
                let chunk = w.get(at, FEED)?;
                let take = chunk.len().min((end - at) as usize).min(FEED);
                let used = p.feed_with(&chunk[..take], &|i| at + i as u64, visit)?;
                at += used as u64;
            }
            p.finish(at)?;
            if at != end {
                return Err(Error::format(
                    at,
                    format!(
                        "key group {kg}'s data to end where the next key group starts (byte {end})"
                    ),
                    Some("its end mark earlier".into()),
                ));
            }
            for (i, r) in p.raw.iter().enumerate() {
                out.states[i].stored_bytes += r.1;
            }
            out.overhead_bytes += 2;
        }
        for (i, (entries, raw)) in p.raw.iter().enumerate() {
            out.states[i].entries += entries;
            out.states[i].raw_bytes += raw;
        }
        out.key_groups_with_data += 1;
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Phase {
    StateId,
    KeyLen,
    Key,
    ValueLen,
    Value,
    Next,
    Done,
}

/// The pairs of one key group, parsed from bytes handed in pieces (raw, or decompressed chunk by
/// chunk): nothing but a few counters is kept.
struct RunParser {
    states: usize,
    key_group: i32,
    prefix: usize,
    phase: Phase,
    int: [u8; 4],
    have: usize,
    left: u64,
    key_head: [u8; 2],
    key_len: u64,
    value_len: u64,
    state: usize,
    /// Per state: entries and raw bytes in this key group.
    raw: Vec<(u64, u64)>,
}

impl RunParser {
    fn new(states: usize, key_group: i32, prefix: usize) -> Self {
        RunParser {
            states,
            key_group,
            prefix,
            phase: Phase::StateId,
            int: [0; 4],
            have: 0,
            left: 0,
            key_head: [0; 2],
            key_len: 0,
            value_len: 0,
            state: 0,
            raw: vec![(0, 0); states],
        }
    }

    fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Feeds bytes; returns how many were used (all, unless the end mark came first). `at` gives
    /// the file offset of a byte of `data`, for messages.
    #[cfg(test)]
    fn feed(&mut self, data: &[u8], at: &dyn Fn(usize) -> u64) -> Result<usize> {
        self.feed_with(data, at, &mut |_| Ok(()))
    }

    /// [`Self::feed`], handing `visit` each run's kvStateId, its bytes (as long slices of `data`
    /// as the runs allow) and the end mark, in order.
    fn feed_with(
        &mut self,
        data: &[u8],
        at: &dyn Fn(usize) -> u64,
        visit: &mut dyn FnMut(Event<'_>) -> Result<()>,
    ) -> Result<usize> {
        let mut i = 0;
        // where the bytes of the current run begin in `data`, while inside a run
        let mut run_from =
            (!matches!(self.phase, Phase::StateId | Phase::Next | Phase::Done)).then_some(0usize);
        while i < data.len() {
            if self.phase == Phase::KeyLen && self.have == 0 {
                i = self.whole_pairs(data, i, at)?;
                if i == data.len() {
                    break;
                }
            }
            match self.phase {
                Phase::Done => return Ok(i),
                Phase::Key | Phase::Value => {
                    let n = (self.left.min((data.len() - i) as u64)) as usize;
                    if self.phase == Phase::Key {
                        let seen = (self.key_len - self.left) as usize;
                        for k in seen..(seen + n).min(2) {
                            self.key_head[k] = data[i + k - seen];
                        }
                    }
                    self.left -= n as u64;
                    i += n;
                    if self.left == 0 {
                        self.field_done(at(i), visit)?;
                    }
                }
                phase => {
                    let id = matches!(phase, Phase::StateId | Phase::Next);
                    if id {
                        if let Some(from) = run_from.take() {
                            if i > from {
                                visit(Event::Bytes(self.state, &data[from..i]))?;
                            }
                        }
                    }
                    let need = if id { 2 } else { 4 };
                    let n = (need - self.have).min(data.len() - i);
                    self.int[self.have..self.have + n].copy_from_slice(&data[i..i + n]);
                    self.have += n;
                    i += n;
                    if self.have == need {
                        self.have = 0;
                        self.field_done(at(i - need.min(i)), visit)?;
                        if id && self.phase != Phase::Done {
                            run_from = Some(i);
                        }
                    }
                }
            }
        }
        if let Some(from) = run_from {
            if i > from {
                visit(Event::Bytes(self.state, &data[from..i]))?;
            }
        }
        Ok(i)
    }

    /// Parses the pairs that lie whole in `data` from `i` (at a key length) in one loop, up to
    /// the first flagged pair or the first pair that the end of `data` cuts; what is left goes
    /// through the field-by-field state machine. Returns where it stopped.
    fn whole_pairs(
        &mut self,
        data: &[u8],
        mut i: usize,
        at: &dyn Fn(usize) -> u64,
    ) -> Result<usize> {
        let be = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let (mut entries, mut raw) = (0u64, 0u64);
        while i + 4 <= data.len() {
            let kl = be(&data[i..]);
            if kl < self.prefix as i32 || i + 8 + kl as usize > data.len() {
                break; // a bad length is reported by the state machine, with its offset
            }
            let k = i + 4;
            let v = k + kl as usize;
            let vl = be(&data[v..]);
            if vl < 0 || v + 4 + vl as usize > data.len() {
                break;
            }
            let head = data[k] & 0x7F;
            let written = if self.prefix == 1 {
                head as i32
            } else {
                (head as i32) << 8 | data[k + 1] as i32
            };
            if written != self.key_group {
                return Err(Error::format(
                    at(v),
                    format!(
                        "a key of key group {} (its {}-byte prefix)",
                        self.key_group, self.prefix
                    ),
                    Some(format!("key group {written}")),
                ));
            }
            entries += 1;
            raw += 8 + kl as u64 + vl as u64;
            i = v + 4 + vl as usize;
            if data[k] & 0x80 != 0 {
                self.phase = Phase::Next;
                break;
            }
        }
        let r = &mut self.raw[self.state];
        r.0 += entries;
        r.1 += raw;
        Ok(i)
    }

    fn field_done(
        &mut self,
        at: u64,
        visit: &mut dyn FnMut(Event<'_>) -> Result<()>,
    ) -> Result<()> {
        let kg = self.key_group;
        match self.phase {
            Phase::StateId | Phase::Next => {
                let id = u16::from_be_bytes([self.int[0], self.int[1]]);
                if self.phase == Phase::Next && id == END_OF_KEY_GROUP_MARK {
                    self.phase = Phase::Done;
                    return visit(Event::End);
                }
                if id as usize >= self.states {
                    return Err(Error::format(
                        at,
                        format!(
                            "a kvStateId below {} (the states of the meta info) in key group {kg}",
                            self.states
                        ),
                        Some(id.to_string()),
                    ));
                }
                self.state = id as usize;
                self.raw[self.state].1 += 2;
                self.phase = Phase::KeyLen;
                visit(Event::Run(self.state))?;
            }
            Phase::KeyLen | Phase::ValueLen => {
                let v = i32::from_be_bytes(self.int);
                let key = self.phase == Phase::KeyLen;
                if v < 0 || (key && (v as usize) < self.prefix) {
                    return Err(Error::format(
                        at,
                        format!(
                            "the length of a {} in key group {kg}{}",
                            if key { "key" } else { "value" },
                            if key {
                                " (at least its key-group prefix)"
                            } else {
                                ""
                            }
                        ),
                        Some(v.to_string()),
                    ));
                }
                self.left = v as u64;
                if key {
                    self.key_len = v as u64;
                    self.phase = Phase::Key;
                } else {
                    self.value_len = v as u64;
                    self.phase = Phase::Value;
                }
                if self.left == 0 {
                    self.field_done(at, visit)?;
                }
            }
            Phase::Key => {
                let head = self.key_head[0] & 0x7F;
                let written = if self.prefix == 1 {
                    head as i32
                } else {
                    (head as i32) << 8 | self.key_head[1] as i32
                };
                if written != kg {
                    return Err(Error::format(
                        at,
                        format!("a key of key group {kg} (its {}-byte prefix)", self.prefix),
                        Some(format!("key group {written}")),
                    ));
                }
                self.phase = Phase::ValueLen;
            }
            Phase::Value => {
                let r = &mut self.raw[self.state];
                r.0 += 1;
                r.1 += 8 + self.key_len + self.value_len;
                self.phase = if self.key_head[0] & 0x80 != 0 {
                    Phase::Next
                } else {
                    Phase::KeyLen
                };
            }
            Phase::Done => {}
        }
        Ok(())
    }

    /// The key group must have ended with its end mark.
    fn finish(&self, at: u64) -> Result<()> {
        if self.phase != Phase::Done {
            return Err(Error::format(
                at,
                format!(
                    "the end mark of key group {} before its data ends",
                    self.key_group
                ),
                Some("the next key group or the end of the stream".into()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(out: &mut Vec<u8>, kg: u8, last: bool, value: &[u8]) {
        out.extend_from_slice(&3i32.to_be_bytes());
        out.extend_from_slice(&[kg | if last { 0x80 } else { 0 }, 1, 2]);
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(value);
    }

    #[test]
    fn runs_of_states_split_across_any_pieces() {
        // key group 5: state 0 with two pairs, state 1 with one, then the end mark
        let mut d = vec![0, 0];
        pair(&mut d, 5, false, b"ab");
        pair(&mut d, 5, true, b"");
        d.extend_from_slice(&[0, 1]);
        pair(&mut d, 5, true, b"xyz");
        d.extend_from_slice(&[0xFF, 0xFF]);
        for piece in [1, 2, 3, 7, d.len()] {
            let mut p = RunParser::new(2, 5, 1);
            let mut used = 0;
            for c in d.chunks(piece) {
                used += p.feed(c, &|i| i as u64).unwrap();
            }
            assert_eq!(used, d.len());
            p.finish(0).unwrap();
            assert_eq!(p.raw, vec![(2, 2 + 8 + 3 + 2 + 8 + 3), (1, 2 + 8 + 3 + 3)]);
        }
        // a key of another key group, an unknown state id, a missing end mark
        let mut p = RunParser::new(2, 6, 1);
        let e = p.feed(&d, &|i| i as u64).unwrap_err().to_string();
        assert!(
            e.contains("a key of key group 6") && e.contains("found key group 5"),
            "{e}"
        );
        let mut p = RunParser::new(1, 5, 1);
        assert!(p
            .feed(&d, &|i| i as u64)
            .unwrap_err()
            .to_string()
            .contains("kvStateId below 1"));
        let mut p = RunParser::new(2, 5, 1);
        p.feed(&d[..d.len() - 2], &|i| i as u64).unwrap();
        assert!(p.finish(9).is_err());
    }
}
