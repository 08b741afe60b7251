//! One keyed handle of `_metadata`, whatever its kind, read into per-state counts: the stream of a
//! key-groups handle (canonical or heap format), the files of a RocksDB incremental or native
//! handle (meta stream, SST properties, MANIFEST), or the parts of a changelog handle.
//!
//! Which format a `KeyGroupsStateHandle` holds is not recorded in `_metadata`: heap checkpoints
//! write every key group with its id first (`HeapSnapshotStrategy`), RocksDB's full checkpoints up
//! to Flink 1.15 (`RocksFullSnapshotStrategy`; 1.16+ write RocksDB's files instead,
//! `RocksNativeFullSnapshotStrategy`) the canonical format with empty key groups at offset 0. The reader decides from the offsets and
//! the first bytes at them (see [`looks_like_heap`]). `KeyGroupsSavepointStateHandle` is always
//! canonical (`FullSnapshotAsyncWriter` is the only writer of savepoint handles of that class).
//!
//! Changelog handles (`ChangelogStateBackendHandle`): the materialized part is read like any
//! handle; the state change log ([`changelog`]) is counted per state, the states named by the
//! log's own METADATA records. Only a log this tool cannot read (an unknown operation code or
//! meta info version) is one sum, with the reason.

use super::canonical::{self, StreamCounts, STREAM_IDENTIFIER};
use super::changelog::{self, ChangelogReading};
use super::manifest::{self, Manifest};
use super::meta::{self, KeyedBackendMeta};
use super::sst::{self, SstProperties};
use super::{heap, Note, RangeSource, StateCount};
use crate::codec::handles::{KeyGroups, KeyedHandle, StreamHandle};
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;

/// A meta info larger than this is no stream Flink wrote (32767 states of a few hundred bytes
/// each stay far below it); refused before it is read into memory.
pub const MAX_META_INFO: u64 = 256 << 20;

/// Which format a handle's bytes are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotFormat {
    /// The canonical key/value format: canonical savepoints of every backend, RocksDB's full
    /// checkpoints up to Flink 1.15.
    Canonical,
    /// The heap backend's full checkpoints (and the heap backend's native savepoints).
    HeapCheckpoint,
    /// RocksDB's own files (incremental checkpoints, native savepoints): the counts are RocksDB's
    /// table properties, whose entries include tombstones and versions not compacted yet.
    RocksdbFiles,
    /// The state change log of a changelog handle: change records (SET, ADD, CLEAR, ...) since
    /// the last materialization, per state, not live entries.
    Changelog,
}

impl SnapshotFormat {
    pub const ALL: [SnapshotFormat; 4] = [
        SnapshotFormat::Canonical,
        SnapshotFormat::HeapCheckpoint,
        SnapshotFormat::RocksdbFiles,
        SnapshotFormat::Changelog,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SnapshotFormat::Canonical => "canonical",
            SnapshotFormat::HeapCheckpoint => "heap checkpoint",
            SnapshotFormat::RocksdbFiles => "RocksDB files",
            SnapshotFormat::Changelog => "changelog",
        }
    }
}

/// One SST file of a RocksDB handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstReading {
    /// Its key in the handle's shared (or private) state: the local file name.
    pub key: String,
    pub file_number: Option<u64>,
    pub size: u64,
    pub properties: Option<SstProperties>,
    /// The column family, from the properties (else from the MANIFEST).
    pub column_family: Option<String>,
    /// Which state of the meta info the column family is (by index).
    pub state: Option<usize>,
    /// Whether the MANIFEST lists it as live (None without a MANIFEST).
    pub live: Option<bool>,
}

/// What RocksDB's files of a handle say beyond the per-state counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RocksdbReading {
    pub files: Vec<SstReading>,
    pub manifest: Option<Manifest>,
    /// Per state of the meta info: its SST files, deletions (tombstones) and merge operands.
    pub per_state: Vec<RocksdbCounts>,
    /// Column families with SST data that no state of the meta info names (RocksDB's `default`).
    pub other_column_families: Vec<(String, StateCount)>,
    /// Bytes of the files that are not SST files (MANIFEST, CURRENT, OPTIONS).
    pub private_bytes: u64,
}

/// RocksDB's own figures of one state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RocksdbCounts {
    pub files: u64,
    pub deleted_keys: u64,
    pub merge_operands: u64,
    pub range_deletions: u64,
    pub data_size: u64,
}

/// What one keyed handle (or one part of a changelog handle) holds, per state of its meta info.
#[derive(Clone, Debug)]
pub struct HandleReading {
    /// Flink's class name of the handle.
    pub kind: &'static str,
    pub format: SnapshotFormat,
    /// The first key group and the number of key groups.
    pub key_groups: (i32, i32),
    /// The meta info (None for a change log).
    pub meta: Option<KeyedBackendMeta>,
    /// Per state of the meta info, in its order (a change log: of `changelog.states`).
    pub states: Vec<StateCount>,
    /// All bytes of the handle: its stream, or its files.
    pub total_bytes: u64,
    pub header_bytes: u64,
    /// Bytes that belong to no state (end marks, key-group ids).
    pub overhead_bytes: u64,
    /// Bytes the reader could not attribute to a state; `notes` say why.
    pub unattributed_bytes: u64,
    pub stored_apportioned: bool,
    pub key_groups_with_data: u32,
    pub notes: Vec<Note>,
    pub rocksdb: Option<RocksdbReading>,
    /// The change log's states and changes, per operation.
    pub changelog: Option<ChangelogReading>,
}

impl HandleReading {
    fn new(kind: &'static str, format: SnapshotFormat, key_groups: (i32, i32)) -> Self {
        HandleReading {
            kind,
            format,
            key_groups,
            meta: None,
            states: Vec::new(),
            total_bytes: 0,
            header_bytes: 0,
            overhead_bytes: 0,
            unattributed_bytes: 0,
            stored_apportioned: false,
            key_groups_with_data: 0,
            notes: Vec::new(),
            rocksdb: None,
            changelog: None,
        }
    }
}

/// A stream handle as messages name it: its path, or the inline handle's name.
pub fn stream_name(h: &StreamHandle) -> String {
    match h {
        StreamHandle::ByteStream { name, .. } => format!("inline state '{name}'"),
        StreamHandle::File { path, .. } | StreamHandle::RelativeFile { path, .. } => {
            path.to_string()
        }
        StreamHandle::Segment {
            path, start, size, ..
        } => format!("{path} [{start}+{size}]"),
        StreamHandle::KeyGroups(_) => "a nested key-groups handle".into(),
        StreamHandle::EmptySegment => "an empty segment".into(),
    }
}

/// The SST files of a keyed handle (of its materialized parts, for a changelog handle), in the
/// order [`read_handle`] reads them: what a caller may read ahead, in parallel, through
/// [`StreamSource::sst`].
pub fn sst_streams(h: &KeyedHandle) -> Vec<&StreamHandle> {
    match h {
        KeyedHandle::Incremental {
            shared, private, ..
        } => shared
            .iter()
            .chain(private.iter())
            .filter(|(k, _)| sst::file_number(&file_name(&k.to_string())).is_some())
            .filter_map(|(_, h)| h.as_ref())
            .collect(),
        KeyedHandle::Changelog { materialized, .. } => materialized
            .iter()
            .flatten()
            .flat_map(sst_streams)
            .collect(),
        _ => Vec::new(),
    }
}

/// The last part of a handle's key in a RocksDB handle list: the file's name.
fn file_name(k: &str) -> String {
    k.rsplit('/').next().unwrap_or(k).to_string()
}

/// Reads one keyed handle; a changelog handle gives one reading per part. `max_parallelism` is
/// the operator's (it fixes the key-group prefix of canonical keys). Each part that cannot be
/// read is an error naming its file and byte offset; the other parts are still read.
pub fn read_handle(
    h: &KeyedHandle,
    src: &(dyn StreamSource + Sync),
    max_parallelism: i32,
) -> Vec<Result<HandleReading>> {
    let prefix = if max_parallelism > 128 { 2 } else { 1 };
    match h {
        KeyedHandle::KeyGroups { code, handle } => {
            vec![read_key_groups(*code, handle, src, prefix)]
        }
        KeyedHandle::Incremental { .. } => vec![read_incremental(h, src)],
        KeyedHandle::Changelog {
            materialized,
            non_materialized,
            start_key_group,
            num_key_groups,
            ..
        } => {
            let mut out: Vec<Result<HandleReading>> = materialized
                .iter()
                .flatten()
                .flat_map(|m| read_handle(m, src, max_parallelism))
                .collect();
            let parts: Vec<&KeyedHandle> = non_materialized.iter().flatten().collect();
            out.push(read_change_log(
                h.kind(),
                &parts,
                src,
                (*start_key_group, *num_key_groups),
            ));
            out
        }
        KeyedHandle::ChangelogInMemory {
            start_key_group,
            num_key_groups,
            ..
        }
        | KeyedHandle::ChangelogFile {
            start_key_group,
            num_key_groups,
            ..
        } => vec![read_change_log(
            h.kind(),
            &[h],
            src,
            (*start_key_group, *num_key_groups),
        )],
    }
}

/// Reads the change log parts of one changelog handle, in order, with one map of state ids (as
/// Flink's restore does). A log this tool cannot read (an unknown operation or version) is one
/// sum with the reason; a log that breaks Flink's format is an error.
fn read_change_log(
    kind: &'static str,
    parts: &[&KeyedHandle],
    src: &(dyn StreamSource + Sync),
    range: (i32, i32),
) -> Result<HandleReading> {
    let mut r = HandleReading::new(kind, SnapshotFormat::Changelog, range);
    let mut counter = changelog::Counter::new(range.0, range.1);
    let mut read = || -> Result<()> {
        for part in parts {
            match part {
                KeyedHandle::ChangelogInMemory {
                    changes,
                    num_changes,
                    id,
                    ..
                } => counter
                    .inline(changes, *num_changes)
                    .map_err(|e| e.in_file(&format!("the inline changes of handle '{id}'")))?,
                KeyedHandle::ChangelogFile { handles, .. } => {
                    for (offset, sh) in handles {
                        let Some(sh) = sh else { continue };
                        let name = stream_name(sh);
                        let stream = src.open_stream(sh).map_err(|e| e.in_file(&name))?;
                        counter
                            .log_file(&*stream, *offset)
                            .map_err(|e| e.in_file(&name))?;
                    }
                }
                other => {
                    return Err(Error::Unsupported {
                        file: String::new(),
                        offset: 0,
                        what: format!("a {} as a part of a change log", other.kind()),
                    })
                }
            }
        }
        Ok(())
    };
    match read() {
        Ok(()) => {}
        Err(e @ Error::Unsupported { .. }) => {
            // what cannot be read is one sum, with the reason
            r.total_bytes = parts.iter().map(|p| p.state_size().max(0) as u64).sum();
            r.unattributed_bytes = r.total_bytes;
            let mut n = error_note("", &e);
            if let Error::Unsupported { file, .. } = &e {
                n.file = file.clone();
            }
            n.message = format!("the state change log is counted as one sum: {e}");
            r.notes.push(n);
            return Ok(r);
        }
        Err(e) => return Err(e),
    }
    let c = counter.reading;
    r.total_bytes = c.bytes_read;
    r.overhead_bytes = c.framing_bytes;
    r.header_bytes = c.states.iter().map(|s| s.counts.metadata_bytes).sum();
    r.states = c
        .states
        .iter()
        .map(|s| StateCount {
            entries: s.counts.changes,
            raw_bytes: s.counts.bytes,
            stored_bytes: s.counts.bytes,
            complete: true,
        })
        .collect();
    // the changes per operation, by Flink's names: what the log did to each state
    let ops: Vec<String> = c
        .states
        .iter()
        .filter(|s| s.counts.changes > 0)
        .map(|s| format!("{} {}", s.meta.name, s.counts.operations()))
        .collect();
    r.notes.push(Note {
        file: String::new(),
        offset: 0,
        message: format!(
            "state change log ({} change set{}{}), change records, not live entries: {}",
            c.change_sets,
            if c.change_sets == 1 { "" } else { "s" },
            if c.compressed {
                ", snappy-compressed"
            } else {
                ""
            },
            if ops.is_empty() {
                "none".to_string()
            } else {
                ops.join("; ")
            }
        ),
    });
    for (id, n) in &c.unknown_ids {
        r.unattributed_bytes += n.bytes;
        r.notes.push(Note {
            file: String::new(),
            offset: 0,
            message: format!(
                "state id {id} (no meta data in this log): {} changes ({}), {} bytes",
                n.changes,
                n.operations(),
                n.bytes
            ),
        });
    }
    if c.outside.changes > 0 {
        r.unattributed_bytes += c.outside.bytes;
        r.notes.push(Note {
            file: String::new(),
            offset: 0,
            message: format!(
                "{} changes ({} bytes) of key groups outside this handle's range {}..{}, which \
                 Flink skips on restore (the log of a rescaled job)",
                c.outside.changes,
                c.outside.bytes,
                range.0,
                range.0 + range.1 - 1
            ),
        });
    }
    r.changelog = Some(c);
    Ok(r)
}

fn read_key_groups(
    code: u8,
    kg: &KeyGroups,
    src: &(dyn StreamSource + Sync),
    prefix: usize,
) -> Result<HandleReading> {
    let kind = key_groups_kind(code);
    let range = (kg.start_key_group, kg.offsets.len() as i32);
    let Some(delegate) = &kg.delegate else {
        let mut r = HandleReading::new(kind, SnapshotFormat::Canonical, range);
        r.notes.push(Note {
            file: String::new(),
            offset: 0,
            message: "the handle has no stream".into(),
        });
        return Ok(r);
    };
    let name = stream_name(delegate);
    let stream = src.open_stream(delegate).map_err(|e| e.in_file(&name))?;
    read_key_groups_stream(code, kg, &*stream, &name, prefix).map_err(|e| e.in_file(&name))
}

/// The stream of a key-groups handle, already at hand.
pub fn read_key_groups_stream(
    code: u8,
    kg: &KeyGroups,
    stream: &dyn RangeSource,
    name: &str,
    prefix: usize,
) -> Result<HandleReading> {
    let kind = key_groups_kind(code);
    let range = (kg.start_key_group, kg.offsets.len() as i32);
    let len = stream.len();
    let (meta, format) = key_groups_format(code, kg, stream)?;
    let mut r = HandleReading::new(kind, format, range);
    let counts: StreamCounts = match format {
        SnapshotFormat::HeapCheckpoint => heap::count(
            stream,
            &meta,
            kg.start_key_group,
            &kg.offsets,
            name,
            &mut r.notes,
        )?,
        _ => canonical::count(stream, &meta, kg.start_key_group, &kg.offsets, prefix)?,
    };
    r.total_bytes = len;
    r.header_bytes = meta.len as u64;
    r.states = counts.states;
    r.overhead_bytes = counts.overhead_bytes;
    r.unattributed_bytes = counts.unattributed_bytes;
    r.stored_apportioned = counts.stored_apportioned;
    r.key_groups_with_data = counts.key_groups_with_data;
    r.meta = Some(meta);
    Ok(r)
}

/// The meta info of a key-groups handle's stream (the bytes before the first key group) and the
/// format its key groups are in.
pub fn key_groups_format(
    code: u8,
    kg: &KeyGroups,
    stream: &dyn RangeSource,
) -> Result<(KeyedBackendMeta, SnapshotFormat)> {
    let len = stream.len();
    let header_len = kg
        .offsets
        .iter()
        .filter(|&o| o != 0)
        .min()
        .map_or(len, |o| (o.max(0) as u64).min(len));
    let meta = read_meta(stream, header_len)?;
    let format = if code == 7 {
        SnapshotFormat::Canonical
    } else if looks_like_heap(stream, kg, &meta)? {
        SnapshotFormat::HeapCheckpoint
    } else {
        SnapshotFormat::Canonical
    };
    Ok((meta, format))
}

/// Flink's class of a key-groups handle of this code (`KeyedHandle::kind`).
fn key_groups_kind(code: u8) -> &'static str {
    if code == 7 {
        "KeyGroupsSavepointStateHandle"
    } else {
        "KeyGroupsStateHandle"
    }
}

/// Reads the meta info that is the first `len` bytes of `stream`.
pub fn read_meta(stream: &dyn RangeSource, len: u64) -> Result<KeyedBackendMeta> {
    if len > MAX_META_INFO {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: 0,
            what: format!(
                "keyed meta info of {len} bytes (the first key group's offset; at most {} MiB)",
                MAX_META_INFO >> 20
            ),
        });
    }
    let header = match stream.as_slice() {
        Some(s) => Bytes::copy_from_slice(&s[..len as usize]),
        None => {
            let mut v = vec![0u8; len as usize];
            stream.read_at(0, &mut v)?;
            Bytes::from(v)
        }
    };
    meta::parse(&header)
}

/// Whether a key-groups stream is in the heap checkpoint format: every key group has an offset,
/// and at the first ones stands the key group's id (then, compressed, a stream identifier). The
/// canonical format starts a key group with a kvStateId and a key length, or (compressed) with
/// the identifier itself. Only a stream whose one key group is key group 0 leaves both readings
/// open; then the canonical format must parse exactly.
fn looks_like_heap(
    stream: &dyn RangeSource,
    kg: &KeyGroups,
    meta: &KeyedBackendMeta,
) -> Result<bool> {
    let offsets: Vec<i64> = kg.offsets.iter().take(2).collect();
    if offsets.is_empty() || kg.offsets.iter().any(|o| o <= 0) {
        return Ok(false);
    }
    let id_at = |i: usize| -> Result<bool> {
        let o = offsets[i] as u64;
        let mut b = [0u8; 14];
        if o + 14 > stream.len() {
            return Ok(false);
        }
        stream.read_at(o, &mut b)?;
        let id = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Ok(id == kg.start_key_group + i as i32
            && (!meta.compressed || b[4..14] == STREAM_IDENTIFIER))
    };
    if !id_at(0)? || (offsets.len() > 1 && !id_at(1)?) {
        return Ok(false);
    }
    if meta.compressed || offsets.len() > 1 || kg.start_key_group != 0 {
        return Ok(true);
    }
    // one key group, key group 0, uncompressed: "00 00 00 00" is also kvStateId 0 and a short key
    Ok(
        canonical::count(stream, meta, kg.start_key_group, &kg.offsets, 1).is_err()
            && canonical::count(stream, meta, kg.start_key_group, &kg.offsets, 2).is_err(),
    )
}

fn read_incremental(h: &KeyedHandle, src: &(dyn StreamSource + Sync)) -> Result<HandleReading> {
    let KeyedHandle::Incremental {
        start_key_group,
        num_key_groups,
        meta,
        shared,
        private,
        ..
    } = h
    else {
        unreachable!("an incremental handle");
    };
    let mut r = HandleReading::new(
        h.kind(),
        SnapshotFormat::RocksdbFiles,
        (*start_key_group, *num_key_groups),
    );
    let meta_handle = meta.as_ref().ok_or_else(|| {
        Error::format(
            0,
            "the meta data stream of an incremental handle",
            Some("none".into()),
        )
    })?;
    let meta_name = stream_name(meta_handle);
    let meta_stream = src
        .open_stream(meta_handle)
        .map_err(|e| e.in_file(&meta_name))?;
    let meta_len = meta_stream.len();
    let m = read_meta(&*meta_stream, meta_len).map_err(|e| e.in_file(&meta_name))?;
    drop(meta_stream);
    let names: Vec<String> = m.states.iter().map(|s| s.name.to_string_lossy()).collect();
    let mut rocks = RocksdbReading {
        per_state: vec![RocksdbCounts::default(); names.len()],
        ..RocksdbReading::default()
    };
    r.states = vec![StateCount::none(); names.len()];
    r.header_bytes = meta_len;
    // the MANIFEST that CURRENT names (the only one in Flink's handles)
    let current = private
        .iter()
        .chain(shared.iter())
        .find(|(k, _)| file_name(&k.to_string()) == "CURRENT")
        .and_then(|(_, h)| h.as_ref())
        .and_then(|h| src.stream_bytes(h).ok())
        .map(|b| String::from_utf8_lossy(&b).trim().to_string());
    for (k, h) in private.iter().chain(shared.iter()) {
        let key = k.to_string();
        let Some(h) = h else { continue };
        let size = h.state_size().max(0) as u64;
        r.total_bytes += size;
        let base = file_name(&key);
        if sst::file_number(&base).is_some() {
            continue;
        }
        rocks.private_bytes += size;
        let is_manifest =
            base.starts_with("MANIFEST-") && current.as_deref().is_none_or(|c| c == base);
        if is_manifest && rocks.manifest.is_none() {
            let name = stream_name(h);
            match src
                .open_stream(h)
                .and_then(|b| manifest::parse(&*b))
                .map_err(|e| e.in_file(&name))
            {
                Ok(man) => rocks.manifest = Some(man),
                Err(e) => r.notes.push(error_note(&name, &e)),
            }
        }
    }
    r.total_bytes += meta_len;
    let mut other: Vec<(String, StateCount)> = Vec::new();
    for (k, h) in shared.iter().chain(private.iter()) {
        let key = k.to_string();
        let Some(h) = h else { continue };
        let Some(number) = sst::file_number(&file_name(&key)) else {
            continue;
        };
        let size = h.state_size().max(0) as u64;
        let name = stream_name(h);
        let mut f = SstReading {
            key: key.clone(),
            file_number: Some(number),
            size,
            properties: None,
            column_family: None,
            state: None,
            live: rocks
                .manifest
                .as_ref()
                .map(|m| m.live_file(number).is_some()),
        };
        match src.sst(h).map_err(|e| e.in_file(&name)) {
            Ok(file) => {
                let p = file.properties;
                // the MANIFEST says which family a file is in now; the property is the name the
                // family had when the file was written (a renamed family keeps its files)
                f.column_family = rocks
                    .manifest
                    .as_ref()
                    .and_then(|m| m.live_file(number))
                    .map(|cf| cf.name.clone())
                    .or_else(|| p.column_family_name.clone());
                let count = StateCount {
                    entries: p.num_entries,
                    raw_bytes: p.raw_key_size + p.raw_value_size,
                    stored_bytes: size,
                    complete: true,
                };
                f.state = f
                    .column_family
                    .as_ref()
                    .and_then(|cf| names.iter().position(|n| n == cf));
                match f.state {
                    Some(i) => {
                        r.states[i].add(&count);
                        let c = &mut rocks.per_state[i];
                        c.files += 1;
                        c.deleted_keys += p.deleted_keys;
                        c.merge_operands += p.merge_operands;
                        c.range_deletions += p.range_deletions;
                        c.data_size += p.data_size;
                    }
                    None => {
                        let cf = f
                            .column_family
                            .clone()
                            .unwrap_or_else(|| "(unknown)".into());
                        match other.iter_mut().find(|(n, _)| *n == cf) {
                            Some((_, c)) => c.add(&count),
                            None => other.push((cf, count)),
                        }
                    }
                }
                f.properties = Some(p);
            }
            Err(e) => {
                r.notes.push(error_note(&name, &e));
                r.unattributed_bytes += size;
                for s in &mut r.states {
                    s.complete = false;
                }
            }
        }
        rocks.files.push(f);
    }
    for (cf, _) in &other {
        if cf != "default" {
            r.notes.push(Note {
                file: String::new(),
                offset: 0,
                message: format!(
                    "SST files of column family '{cf}', which no state of the meta info names"
                ),
            });
        }
    }
    r.unattributed_bytes += other.iter().map(|(_, c)| c.stored_bytes).sum::<u64>();
    r.overhead_bytes = rocks.private_bytes;
    rocks.other_column_families = other;
    r.meta = Some(m);
    r.rocksdb = Some(rocks);
    Ok(r)
}

fn error_note(name: &str, e: &Error) -> Note {
    let offset = match e {
        Error::Format { offset, .. } | Error::Unsupported { offset, .. } => *offset,
        _ => 0,
    };
    Note {
        file: name.to_string(),
        offset,
        message: e.to_string(),
    }
}
