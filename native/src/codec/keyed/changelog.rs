//! The state change log of a changelog handle (the non-materialized part of a
//! `ChangelogStateBackendHandle`), counted per state without replaying it.
//!
//! Read in Flink's sources (flink-dstl-dfs 1.19.3 and 1.20.3, flink-statebackend-changelog 1.16.3,
//! 1.19.3 and 1.20.3, flink-runtime 1.20.3; the layout is the same in all):
//! - `ChangelogStateHandleStreamImpl`: (stream handle, offset) pairs, each one change set;
//!   `StateChangelogHandleStreamHandleReader` reads them in order.
//! - A log file (`OutputStreamWithPos.wrapInternal`): one byte, 1 when
//!   `dstl.dfs.compression.enabled` (then the rest is one snappy framed stream,
//!   `SnappyStreamCompressionDecorator`), else 0. The offsets count bytes after that flag, in the
//!   uncompressed stream (`ChangelogStreamWrapper.wrapAndSeek`). One file may hold the change sets
//!   of several backends; a handle reads only its own.
//! - A change set (`StateChangeFormat.write`): i32 number of key groups, then per key group i32
//!   number of changes, i32 key group (-1, `StateChange.META_KEY_GROUP`, for meta data, first),
//!   and each change as i32 length and its bytes. `getStateSize()` is the sum of the changes'
//!   lengths. `InMemoryChangelogStateHandle` keeps its changes inline in `_metadata`.
//! - A change (`AbstractStateChangeLogger`): the `StateChangeOperation` code byte. METADATA (8):
//!   i32 meta info snapshot version (6; 7 since 1.20, same layout), the state's
//!   `StateMetaInfoSnapshot` (as in the keyed meta info, [`meta::parse_state_entry`]), the TTL
//!   config and default value of a key-value state (`KvStateChangeLoggerImpl`), i16 the state's
//!   short id, byte its `BackendStateType` code. Every other operation: i16 short id, then key,
//!   namespace and value, which are not decoded here.
//! - Restore (`ChangelogBackendRestoreOperation`, `ChangelogBackendLogApplier`): one map of short
//!   ids per `ChangelogStateBackendHandle`, across its parts in order; data changes of key groups
//!   outside the handle's range are skipped (a rescaled handle keeps the whole log).
//!
//! Memory: one snappy chunk or one read of the source, and one METADATA record, at a time; a data
//! change is skipped, never held.

use super::meta::{self, KeyedStateMeta};
use super::{RangeSource, Window, MAX_WINDOW};
use crate::codec::snappy::{self, STREAM_IDENTIFIER};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::HashMap;

/// The key group of meta data changes (`StateChange.META_KEY_GROUP`).
pub const META_KEY_GROUP: i32 = -1;
/// The meta info snapshot versions of METADATA records (`CURRENT_STATE_META_INFO_SNAPSHOT_VERSION`).
const META_VERSIONS: std::ops::RangeInclusive<i32> = 6..=7;

/// `StateChangeOperation`, by its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateChangeOperation {
    Clear,
    Set,
    SetInternal,
    Add,
    MergeNs,
    AddElement,
    AddOrUpdateElement,
    RemoveElement,
    Metadata,
}

impl StateChangeOperation {
    /// The data operations, in code order (0 to 7).
    pub const DATA: [StateChangeOperation; 8] = [
        StateChangeOperation::Clear,
        StateChangeOperation::Set,
        StateChangeOperation::SetInternal,
        StateChangeOperation::Add,
        StateChangeOperation::MergeNs,
        StateChangeOperation::AddElement,
        StateChangeOperation::AddOrUpdateElement,
        StateChangeOperation::RemoveElement,
    ];

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            8 => Some(StateChangeOperation::Metadata),
            c => Self::DATA.get(c as usize).copied(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StateChangeOperation::Clear => "CLEAR",
            StateChangeOperation::Set => "SET",
            StateChangeOperation::SetInternal => "SET_INTERNAL",
            StateChangeOperation::Add => "ADD",
            StateChangeOperation::MergeNs => "MERGE_NS",
            StateChangeOperation::AddElement => "ADD_ELEMENT",
            StateChangeOperation::AddOrUpdateElement => "ADD_OR_UPDATE_ELEMENT",
            StateChangeOperation::RemoveElement => "REMOVE_ELEMENT",
            StateChangeOperation::Metadata => "METADATA",
        }
    }
}

/// The changes of one state (or of a group of changes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// Data changes by operation code (CLEAR 0 to REMOVE_ELEMENT 7).
    pub by_operation: [u64; 8],
    /// Data changes and their bytes (each change's length, its operation byte included).
    pub changes: u64,
    pub bytes: u64,
    /// METADATA records of the state and their bytes.
    pub metadata: u64,
    pub metadata_bytes: u64,
}

impl ChangeCounts {
    fn data(&mut self, op: u8, len: u64) {
        self.by_operation[op as usize] += 1;
        self.changes += 1;
        self.bytes += len;
    }

    /// `SET 12, ADD_ELEMENT 3`: the operations that occur, by Flink's names.
    pub fn operations(&self) -> String {
        let parts: Vec<String> = StateChangeOperation::DATA
            .iter()
            .zip(self.by_operation)
            .filter(|(_, n)| *n > 0)
            .map(|(op, n)| format!("{} {n}", op.name()))
            .collect();
        parts.join(", ")
    }
}

/// A state the log's METADATA records define.
#[derive(Clone, Debug)]
pub struct ChangelogState {
    pub meta: KeyedStateMeta,
    /// The short ids METADATA records gave it (one per writer; a new one after a restore).
    pub ids: Vec<i16>,
    pub counts: ChangeCounts,
}

/// What the change log of one changelog handle holds.
#[derive(Clone, Debug, Default)]
pub struct ChangelogReading {
    /// In the order their first METADATA record comes.
    pub states: Vec<ChangelogState>,
    /// Data changes of short ids no METADATA record of this handle's log defines.
    pub unknown_ids: Vec<(i16, ChangeCounts)>,
    /// Data changes of key groups outside the handle's range (skipped by Flink's restore).
    pub outside: ChangeCounts,
    pub change_sets: u64,
    /// Counts, key groups and lengths (`StateChangeFormat`'s framing).
    pub framing_bytes: u64,
    /// Everything read: framing and changes, uncompressed.
    pub bytes_read: u64,
    /// Whether some log file is snappy-compressed.
    pub compressed: bool,
}

impl ChangelogReading {
    /// The sum of the changes' lengths: Flink's `getStateSize()` of the log.
    pub fn change_bytes(&self) -> u64 {
        self.bytes_read - self.framing_bytes
    }
}

/// Counts the changes of one handle's log, part by part, with Flink's map of short ids.
pub struct Counter {
    key_groups: std::ops::Range<i64>,
    ids: HashMap<i16, usize>,
    pub reading: ChangelogReading,
}

impl Counter {
    /// For a handle of `num` key groups from `first`.
    pub fn new(first: i32, num: i32) -> Self {
        Counter {
            key_groups: first as i64..first as i64 + num.max(0) as i64,
            ids: HashMap::new(),
            reading: ChangelogReading::default(),
        }
    }

    /// Reads the change set at `offset` of a log file.
    pub fn log_file(&mut self, src: &dyn RangeSource, offset: i64) -> Result<()> {
        let mut s = LogStream::open(src)?;
        if offset < 0 {
            return Err(Error::format(
                0,
                "a change set offset of 0 or more",
                Some(offset.to_string()),
            ));
        }
        s.skip(offset as u64, "the bytes before the change set")?;
        self.reading.compressed |= s.compressed;
        let start = s.pos;
        let n = s.i32("the number of key groups of a change set")?;
        s.check_count(n, 8, "key groups of a change set")?;
        for _ in 0..n {
            let count = s.i32("the number of changes of a key group")?;
            s.check_count(count, 4, "changes of a key group")?;
            let key_group = s.i32("the key group of the changes")?;
            for _ in 0..count {
                let at = s.file_offset();
                let len = s.i32("the length of a state change")?;
                self.change(&mut s, key_group, len, at)?;
            }
        }
        self.reading.change_sets += 1;
        self.reading.framing_bytes += s.pos - start - s.change_bytes;
        self.reading.bytes_read += s.pos - start;
        Ok(())
    }

    /// Reads the inline changes of an `InMemoryChangelogStateHandle`: `n` times i32 key group,
    /// i32 length and the change.
    pub fn inline(&mut self, changes: &Bytes, n: usize) -> Result<()> {
        let mut s = LogStream::raw(changes);
        for _ in 0..n {
            let key_group = s.i32("the key group of a state change")?;
            let at = s.file_offset();
            let len = s.i32("the length of a state change")?;
            self.change(&mut s, key_group, len, at)?;
        }
        self.reading.change_sets += 1;
        self.reading.framing_bytes += s.pos - s.change_bytes;
        self.reading.bytes_read += s.pos;
        Ok(())
    }

    fn change(&mut self, s: &mut LogStream<'_>, key_group: i32, len: i32, at: u64) -> Result<()> {
        if len < 1 {
            return Err(Error::format(
                at,
                "a state change of at least its operation byte",
                Some(format!("length {len}")),
            ));
        }
        let len = len as u64;
        s.check_len(len, at)?;
        s.change_bytes += len;
        let op_at = s.file_offset();
        let op = s.take(1, "a state change's operation")?[0];
        match StateChangeOperation::from_code(op) {
            Some(StateChangeOperation::Metadata) => self.metadata(s, len, at),
            Some(_) => {
                if len < 3 {
                    return Err(Error::format(
                        at,
                        "a data change of at least its operation byte and state id",
                        Some(format!("length {len}")),
                    ));
                }
                let b = s.take(2, "a state change's state id")?;
                let id = i16::from_be_bytes([b[0], b[1]]);
                s.skip(len - 3, "a state change")?;
                let r = &mut self.reading;
                if !self.key_groups.contains(&(key_group as i64)) {
                    r.outside.data(op, len);
                } else if let Some(&i) = self.ids.get(&id) {
                    r.states[i].counts.data(op, len);
                } else {
                    match r.unknown_ids.iter_mut().find(|(i, _)| *i == id) {
                        Some((_, c)) => c.data(op, len),
                        None => {
                            let mut c = ChangeCounts::default();
                            c.data(op, len);
                            r.unknown_ids.push((id, c));
                        }
                    }
                }
                Ok(())
            }
            None => Err(Error::Unsupported {
                file: String::new(),
                offset: op_at,
                what: format!(
                    "state change operation code {op} (Flink's are 0 CLEAR to 8 METADATA){}",
                    s.where_in_log()
                ),
            }),
        }
    }

    fn metadata(&mut self, s: &mut LogStream<'_>, len: u64, at: u64) -> Result<()> {
        let body = len - 1;
        if body > MAX_WINDOW as u64 {
            return Err(Error::Unsupported {
                file: String::new(),
                offset: at,
                what: format!(
                    "a METADATA state change of {len} bytes (at most {} MiB)",
                    MAX_WINDOW >> 20
                ),
            });
        }
        let record = Bytes::copy_from_slice(s.take(body as usize, "a METADATA state change")?);
        let b = &record[..];
        if b.len() < 4 + 3 {
            return Err(Error::format(
                at,
                "a METADATA state change with a meta info version, a snapshot and a state id",
                Some(format!("{len} bytes")),
            ));
        }
        let version = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if !META_VERSIONS.contains(&version) {
            return Err(Error::Unsupported {
                file: String::new(),
                offset: at + 5,
                what: format!(
                    "state meta info snapshot version {version} in a METADATA state change (6 or 7 \
                     are Flink's)"
                ),
            });
        }
        let n = b.len();
        let id = i16::from_be_bytes([b[n - 3], b[n - 2]]);
        let backend_type = b[n - 1];
        if !matches!(backend_type, 0 | 3) {
            return Err(Error::format(
                at + len + 3,
                "the backend state type code of a METADATA state change (0 KEY_VALUE or 3 \
                 PRIORITY_QUEUE)",
                Some(backend_type.to_string()),
            ));
        }
        let entry = meta::parse_state_entry(&record.slice(..n - 3), 4).map_err(|e| match e {
            Error::Format {
                offset,
                expected,
                found,
                ..
            } => Error::format(
                at + 5 + offset,
                format!("{expected} (in a METADATA state change)"),
                found,
            ),
            other => other,
        })?;
        let r = &mut self.reading;
        let i = match r.states.iter().position(|x| x.meta.name == entry.name) {
            Some(i) => i,
            None => {
                r.states.push(ChangelogState {
                    meta: entry,
                    ids: Vec::new(),
                    counts: ChangeCounts::default(),
                });
                r.states.len() - 1
            }
        };
        let st = &mut r.states[i];
        if !st.ids.contains(&id) {
            st.ids.push(id);
        }
        st.counts.metadata += 1;
        st.counts.metadata_bytes += len;
        self.ids.insert(id, i);
        Ok(())
    }
}

/// The uncompressed bytes of a log file after its compression flag, or of inline changes, read
/// in order.
struct LogStream<'a> {
    w: Window<'a>,
    compressed: bool,
    /// Raw: the next byte's offset in the file; compressed: the next chunk's.
    at: u64,
    /// Compressed: decoded bytes, `buf[head..]` not consumed yet, from the chunk at `chunk_at`.
    buf: Vec<u8>,
    head: usize,
    chunk_at: u64,
    /// Bytes consumed of the uncompressed stream.
    pos: u64,
    /// Bytes of changes (their lengths) consumed.
    change_bytes: u64,
}

impl<'a> LogStream<'a> {
    fn raw(src: &'a dyn RangeSource) -> Self {
        LogStream {
            w: Window::new(src),
            compressed: false,
            at: 0,
            buf: Vec::new(),
            head: 0,
            chunk_at: 0,
            pos: 0,
            change_bytes: 0,
        }
    }

    /// A log file: its compression flag, then the stream.
    fn open(src: &'a dyn RangeSource) -> Result<Self> {
        let mut s = LogStream::raw(src);
        let flag = s.w.exact(0, 1, "the change log's compression flag")?[0];
        match flag {
            0 => s.at = 1,
            1 => {
                if s.w.exact(1, 10, "the snappy stream identifier")? != STREAM_IDENTIFIER {
                    return Err(Error::format(
                        1,
                        "the snappy stream identifier of a compressed change log",
                        None,
                    ));
                }
                s.compressed = true;
                s.at = 11;
                s.chunk_at = 11;
            }
            f => {
                return Err(Error::Unsupported {
                    file: String::new(),
                    offset: 0,
                    what: format!("change log compression flag {f} (0 or 1 are Flink's)"),
                })
            }
        }
        Ok(s)
    }

    /// The file offset of the next byte (compressed: of the chunk that holds it).
    fn file_offset(&self) -> u64 {
        if self.compressed {
            self.chunk_at
        } else {
            self.at
        }
    }

    /// Where in the uncompressed log a compressed stream is, for messages.
    fn where_in_log(&self) -> String {
        if self.compressed {
            format!(
                " (byte {} of the uncompressed log, in the snappy chunk at the byte given)",
                self.pos
            )
        } else {
            String::new()
        }
    }

    /// Checks a change's length against what the file holds (uncompressed files only: a
    /// compressed one is checked chunk by chunk as it is read).
    fn check_len(&self, len: u64, at: u64) -> Result<()> {
        let left = self.w.len() - self.at;
        if !self.compressed && len > left {
            return Err(Error::format(
                at,
                format!("a state change of {len} bytes within the file"),
                Some(format!("{left} bytes left")),
            ));
        }
        Ok(())
    }

    /// Checks a count of items of at least `min` bytes each against what the file holds.
    fn check_count(&self, n: i32, min: u64, what: &str) -> Result<()> {
        let left = self.w.len() - self.at;
        if n < 0 || (!self.compressed && n as u64 * min > left) {
            return Err(Error::format(
                self.file_offset().saturating_sub(4),
                format!("a number of {what} that fits in the {left} bytes left"),
                Some(n.to_string()),
            ));
        }
        Ok(())
    }

    /// Decodes chunks until `n` bytes are at hand (compressed streams).
    fn fill(&mut self, n: usize, what: &str) -> Result<()> {
        if self.head > 0 && self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
        while self.buf.len() - self.head < n {
            let len = self.w.len();
            if self.at >= len {
                return Err(Error::format(
                    self.at,
                    format!("{what} ({n} bytes){}", self.where_in_log()),
                    Some(format!("the end of the {len}-byte file")),
                ));
            }
            let h = self.w.exact(self.at, 4, "a snappy chunk header")?;
            let (kind, clen) = snappy::chunk_header(&[h[0], h[1], h[2], h[3]]);
            if snappy::is_reserved(kind) {
                return Err(Error::format(
                    self.at,
                    "a snappy chunk of the change log",
                    Some(format!("chunk type {kind:#04x}")),
                ));
            }
            if snappy::is_data(kind) {
                if self.head > 0 {
                    self.buf.drain(..self.head);
                    self.head = 0;
                }
                let at = self.at;
                let body = self.w.exact(at + 4, clen, "a snappy chunk")?;
                snappy::decode_data_chunk(kind, body, at, &mut self.buf)?;
                self.chunk_at = at;
            }
            self.at += 4 + clen as u64;
        }
        Ok(())
    }

    /// The next `n` bytes (`n` at most [`MAX_WINDOW`]).
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        self.pos += n as u64;
        if self.compressed {
            self.fill(n, what)?;
            let h = self.head;
            self.head += n;
            Ok(&self.buf[h..h + n])
        } else {
            let at = self.at;
            self.at += n as u64;
            self.w.exact(at, n, what)
        }
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Skips `n` bytes without holding them.
    fn skip(&mut self, n: u64, what: &str) -> Result<()> {
        if !self.compressed {
            let left = self.w.len() - self.at;
            if n > left {
                return Err(Error::format(
                    self.at,
                    format!("{what} ({n} bytes)"),
                    Some(format!("the end of the file after {left} bytes")),
                ));
            }
            self.at += n;
            self.pos += n;
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            let step = left.min(1 << 16) as usize;
            let avail = self.buf.len() - self.head;
            if avail == 0 {
                self.fill(1, what)?;
                continue;
            }
            let k = step.min(avail);
            self.head += k;
            self.pos += k as u64;
            left -= k as u64;
        }
        Ok(())
    }
}
