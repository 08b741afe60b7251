//! State handles as `_metadata` stores them (`MetadataV2V3SerializerBase` and the channel-state
//! serializers): stream, keyed, operator and channel handles, each parsed into a model that keeps
//! enough to re-emit the identical bytes. Offsets arrays stay raw until someone asks for them.

use crate::codec::io::{JStr, Reader, Writer};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::io::Write;

/// Nested handles (key-groups inside key-groups, changelog inside changelog) are bounded so that
/// no input can drive the recursion deep.
const MAX_NESTING: u32 = 16;

/// A big-endian array of `i64` offsets, decoded on demand.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Offsets(pub Bytes);

impl Offsets {
    pub fn from_slice(v: &[i64]) -> Self {
        let mut b = Vec::with_capacity(v.len() * 8);
        for o in v {
            b.extend_from_slice(&o.to_be_bytes());
        }
        Offsets(Bytes::from(b))
    }

    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> i64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.0[i * 8..i * 8 + 8]);
        i64::from_be_bytes(a)
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.0.chunks_exact(8).map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            i64::from_be_bytes(a)
        })
    }

    fn read(r: &mut Reader, n: usize, what: &str) -> Result<Offsets> {
        let len = n
            .checked_mul(8)
            .ok_or_else(|| r.error(format!("{what} of a sane length"), Some(n.to_string())))?;
        Ok(Offsets(r.bytes(len, what)?))
    }
}

/// `StreamStateHandle`: where a stream of state bytes lives.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamHandle {
    /// code 1: `ByteStreamStateHandle`, the bytes inline in `_metadata`.
    ByteStream { name: JStr, data: Bytes },
    /// code 2: `FileStateHandle`, an absolute path.
    File { size: i64, path: JStr },
    /// code 3: `KeyGroupsStateHandle` used as a stream handle.
    KeyGroups(Box<KeyGroups>),
    /// code 6: `RelativeFileStateHandle`, a file next to `_metadata`.
    RelativeFile { path: JStr, size: i64 },
    /// code 15: `SegmentFileStateHandle`, a segment of a file-merging physical file.
    Segment {
        start: i64,
        size: i64,
        scope: i32,
        path: JStr,
        logical_id: JStr,
    },
    /// code 16: `EmptySegmentFileStateHandle`.
    EmptySegment,
}

/// The shape shared by the key-group handles: a key-group range with one offset per group.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyGroups {
    pub start_key_group: i32,
    pub offsets: Offsets,
    pub delegate: Option<StreamHandle>,
    /// `stateHandleId` (code 12 only).
    pub id: Option<JStr>,
}

impl StreamHandle {
    pub fn code(&self) -> u8 {
        match self {
            StreamHandle::ByteStream { .. } => 1,
            StreamHandle::File { .. } => 2,
            StreamHandle::KeyGroups(_) => 3,
            StreamHandle::RelativeFile { .. } => 6,
            StreamHandle::Segment { .. } => 15,
            StreamHandle::EmptySegment => 16,
        }
    }

    /// Flink's class name, for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            StreamHandle::ByteStream { .. } => "ByteStreamStateHandle",
            StreamHandle::File { .. } => "FileStateHandle",
            StreamHandle::KeyGroups(_) => "KeyGroupsStateHandle",
            StreamHandle::RelativeFile { .. } => "RelativeFileStateHandle",
            StreamHandle::Segment { .. } => "SegmentFileStateHandle",
            StreamHandle::EmptySegment => "EmptySegmentFileStateHandle",
        }
    }

    /// The state size Flink reports for this handle.
    pub fn state_size(&self) -> i64 {
        match self {
            StreamHandle::ByteStream { data, .. } => data.len() as i64,
            StreamHandle::File { size, .. }
            | StreamHandle::RelativeFile { size, .. }
            | StreamHandle::Segment { size, .. } => *size,
            StreamHandle::KeyGroups(k) => k.delegate.as_ref().map_or(0, |d| d.state_size()),
            StreamHandle::EmptySegment => 0,
        }
    }

    pub fn read(r: &mut Reader, depth: u32) -> Result<Option<StreamHandle>> {
        let at = r.pos();
        let code = r.u8("a stream state handle type code")?;
        Ok(Some(match code {
            0 => return Ok(None),
            1 => {
                let name = r.utf("the ByteStreamStateHandle name")?;
                let n = r.count("the ByteStreamStateHandle data length", 1)?;
                StreamHandle::ByteStream {
                    name,
                    data: r.bytes(n, "the ByteStreamStateHandle data")?,
                }
            }
            2 => StreamHandle::File {
                size: r.i64("the FileStateHandle size")?,
                path: r.utf("the FileStateHandle path")?,
            },
            3 => StreamHandle::KeyGroups(Box::new(KeyGroups::read(r, false, depth)?)),
            6 => StreamHandle::RelativeFile {
                path: r.utf("the RelativeFileStateHandle path")?,
                size: r.i64("the RelativeFileStateHandle size")?,
            },
            15 => StreamHandle::Segment {
                start: r.i64("the SegmentFileStateHandle start position")?,
                size: r.i64("the SegmentFileStateHandle size")?,
                scope: r.i32("the SegmentFileStateHandle scope")?,
                path: r.utf("the SegmentFileStateHandle physical file path")?,
                logical_id: r.utf("the SegmentFileStateHandle logical file id")?,
            },
            16 => StreamHandle::EmptySegment,
            other => {
                return Err(Error::format(
                    at as u64,
                    "a stream state handle type code (0, 1, 2, 3, 6, 15 or 16)",
                    Some(other.to_string()),
                ))
            }
        }))
    }

    pub fn write<W: Write>(h: &Option<StreamHandle>, w: &mut Writer<W>) -> std::io::Result<()> {
        let Some(h) = h else { return w.u8(0) };
        w.u8(h.code())?;
        match h {
            StreamHandle::ByteStream { name, data } => {
                w.utf(name)?;
                w.len_i32(data.len())?;
                w.raw(data)
            }
            StreamHandle::File { size, path } => {
                w.i64(*size)?;
                w.utf(path)
            }
            StreamHandle::KeyGroups(k) => k.write(w),
            StreamHandle::RelativeFile { path, size } => {
                w.utf(path)?;
                w.i64(*size)
            }
            StreamHandle::Segment {
                start,
                size,
                scope,
                path,
                logical_id,
            } => {
                w.i64(*start)?;
                w.i64(*size)?;
                w.i32(*scope)?;
                w.utf(path)?;
                w.utf(logical_id)
            }
            StreamHandle::EmptySegment => Ok(()),
        }
    }
}

impl KeyGroups {
    fn read(r: &mut Reader, with_id: bool, depth: u32) -> Result<KeyGroups> {
        if depth > MAX_NESTING {
            return Err(r.error(
                format!("state handles nested at most {MAX_NESTING} deep"),
                None,
            ));
        }
        let start_key_group = r.i32("the start key group")?;
        let n = r.count("the number of key groups", 8)?;
        let offsets = Offsets::read(r, n, "the key-group offsets")?;
        let delegate = StreamHandle::read(r, depth + 1)?;
        let id = if with_id {
            Some(r.utf("the state handle id")?)
        } else {
            None
        };
        Ok(KeyGroups {
            start_key_group,
            offsets,
            delegate,
            id,
        })
    }

    fn write<W: Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.i32(self.start_key_group)?;
        w.len_i32(self.offsets.len())?;
        w.raw(&self.offsets.0)?;
        StreamHandle::write(&self.delegate, w)?;
        if let Some(id) = &self.id {
            w.utf(id)?;
        }
        Ok(())
    }
}

/// `(key, StreamStateHandle)` pairs of an incremental handle's shared or private state.
pub type HandleList = Vec<(JStr, Option<StreamHandle>)>;

/// `KeyedStateHandle`.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyedHandle {
    /// codes 3, 7, 12: `KeyGroupsStateHandle`, `KeyGroupsSavepointStateHandle`, V2 with id.
    KeyGroups { code: u8, handle: KeyGroups },
    /// codes 5, 11: `IncrementalRemoteKeyedStateHandle` (11 adds checkpointed size and id).
    Incremental {
        code: u8,
        checkpoint_id: i64,
        backend_id: JStr,
        start_key_group: i32,
        num_key_groups: i32,
        checkpointed_size: Option<i64>,
        meta: Option<StreamHandle>,
        shared: HandleList,
        private: HandleList,
        id: Option<JStr>,
    },
    /// codes 8, 14: `ChangelogStateBackendHandle` (Flink 1.15+ layout).
    Changelog {
        code: u8,
        start_key_group: i32,
        num_key_groups: i32,
        checkpointed_size: i64,
        materialized: Vec<Option<KeyedHandle>>,
        non_materialized: Vec<Option<KeyedHandle>>,
        materialization_id: i64,
        checkpoint_id: Option<i64>,
        id: JStr,
    },
    /// code 9: `InMemoryChangelogStateHandle`; the changes are kept raw.
    ChangelogInMemory {
        start_key_group: i32,
        num_key_groups: i32,
        from: i64,
        to: i64,
        num_changes: usize,
        changes: Bytes,
        id: JStr,
    },
    /// codes 10, 13: `ChangelogStateHandleStreamImpl`.
    ChangelogFile {
        code: u8,
        start_key_group: i32,
        num_key_groups: i32,
        handles: Vec<(i64, Option<StreamHandle>)>,
        size: i64,
        checkpointed_size: i64,
        id: JStr,
        storage: Option<JStr>,
    },
}

impl KeyedHandle {
    pub fn code(&self) -> u8 {
        match self {
            KeyedHandle::KeyGroups { code, .. }
            | KeyedHandle::Incremental { code, .. }
            | KeyedHandle::Changelog { code, .. }
            | KeyedHandle::ChangelogFile { code, .. } => *code,
            KeyedHandle::ChangelogInMemory { .. } => 9,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            KeyedHandle::KeyGroups { code: 7, .. } => "KeyGroupsSavepointStateHandle",
            KeyedHandle::KeyGroups { .. } => "KeyGroupsStateHandle",
            KeyedHandle::Incremental { .. } => "IncrementalRemoteKeyedStateHandle",
            KeyedHandle::Changelog { .. } => "ChangelogStateBackendHandle",
            KeyedHandle::ChangelogInMemory { .. } => "InMemoryChangelogStateHandle",
            KeyedHandle::ChangelogFile { .. } => "ChangelogStateHandleStreamImpl",
        }
    }

    /// The bytes this handle refers to, as Flink's `getStateSize()` sums them.
    pub fn state_size(&self) -> i64 {
        let sh = |h: &Option<StreamHandle>| h.as_ref().map_or(0, |h| h.state_size());
        match self {
            KeyedHandle::KeyGroups { handle, .. } => sh(&handle.delegate),
            KeyedHandle::Incremental {
                meta,
                shared,
                private,
                ..
            } => {
                sh(meta)
                    + shared.iter().map(|(_, h)| sh(h)).sum::<i64>()
                    + private.iter().map(|(_, h)| sh(h)).sum::<i64>()
            }
            KeyedHandle::Changelog {
                materialized,
                non_materialized,
                ..
            } => materialized
                .iter()
                .chain(non_materialized)
                .map(|h| h.as_ref().map_or(0, |h| h.state_size()))
                .sum(),
            // the changes' lengths, without their key groups and length fields
            KeyedHandle::ChangelogInMemory {
                changes,
                num_changes,
                ..
            } => changes.len() as i64 - 8 * *num_changes as i64,
            KeyedHandle::ChangelogFile { size, .. } => *size,
        }
    }

    pub fn read(r: &mut Reader, depth: u32) -> Result<Option<KeyedHandle>> {
        if depth > MAX_NESTING {
            return Err(r.error(
                format!("state handles nested at most {MAX_NESTING} deep"),
                None,
            ));
        }
        let at = r.pos();
        let code = r.u8("a keyed state handle type code")?;
        Ok(Some(match code {
            0 => return Ok(None),
            3 | 7 | 12 => KeyedHandle::KeyGroups {
                code,
                handle: KeyGroups::read(r, code == 12, depth)?,
            },
            5 | 11 => {
                let v2 = code == 11;
                let checkpoint_id = r.i64("the checkpoint id")?;
                let backend_id = r.utf("the backend id")?;
                let start_key_group = r.i32("the start key group")?;
                let num_key_groups = r.i32("the number of key groups")?;
                let checkpointed_size = if v2 {
                    Some(r.i64("the checkpointed size")?)
                } else {
                    None
                };
                let meta = StreamHandle::read(r, depth + 1)?;
                let shared = read_handle_list(r, depth)?;
                let private = read_handle_list(r, depth)?;
                let id = if v2 {
                    Some(r.utf("the state handle id")?)
                } else {
                    None
                };
                KeyedHandle::Incremental {
                    code,
                    checkpoint_id,
                    backend_id,
                    start_key_group,
                    num_key_groups,
                    checkpointed_size,
                    meta,
                    shared,
                    private,
                    id,
                }
            }
            8 | 14 => {
                let start_key_group = r.i32("the start key group")?;
                let num_key_groups = r.i32("the number of key groups")?;
                let checkpointed_size = r.i64("the checkpointed size")?;
                let m = r.count("the number of materialized handles", 1)?;
                r.charge::<KeyedHandle>(m, "materialized handles")?;
                let mut materialized = Vec::with_capacity(m);
                for _ in 0..m {
                    materialized.push(KeyedHandle::read(r, depth + 1)?);
                }
                let d = r.count("the number of non-materialized handles", 1)?;
                r.charge::<KeyedHandle>(d, "non-materialized handles")?;
                let mut non_materialized = Vec::with_capacity(d);
                for _ in 0..d {
                    non_materialized.push(KeyedHandle::read(r, depth + 1)?);
                }
                let materialization_id = r.i64("the materialization id")?;
                let checkpoint_id = if code == 14 {
                    Some(r.i64("the checkpoint id")?)
                } else {
                    None
                };
                KeyedHandle::Changelog {
                    code,
                    start_key_group,
                    num_key_groups,
                    checkpointed_size,
                    materialized,
                    non_materialized,
                    materialization_id,
                    checkpoint_id,
                    id: r.utf("the state handle id")?,
                }
            }
            9 => {
                let start_key_group = r.i32("the start key group")?;
                let num_key_groups = r.i32("the number of key groups")?;
                let from = r.i64("the first sequence number")?;
                let to = r.i64("the last sequence number")?;
                let n = r.count("the number of state changes", 8)?;
                let changes_at = r.pos();
                for _ in 0..n {
                    r.i32("the key group of a state change")?;
                    let len = r.count("the length of a state change", 1)?;
                    r.bytes(len, "a state change")?;
                }
                let changes = r.slice(changes_at, r.pos());
                KeyedHandle::ChangelogInMemory {
                    start_key_group,
                    num_key_groups,
                    from,
                    to,
                    num_changes: n,
                    changes,
                    id: r.utf("the state handle id")?,
                }
            }
            10 | 13 => {
                let start_key_group = r.i32("the start key group")?;
                let num_key_groups = r.i32("the number of key groups")?;
                let n = r.count("the number of changelog stream handles", 9)?;
                r.charge::<(i64, Option<StreamHandle>)>(n, "changelog stream handles")?;
                let mut handles = Vec::with_capacity(n);
                for _ in 0..n {
                    let offset = r.i64("the offset in a changelog stream")?;
                    handles.push((offset, StreamHandle::read(r, depth + 1)?));
                }
                KeyedHandle::ChangelogFile {
                    code,
                    start_key_group,
                    num_key_groups,
                    handles,
                    size: r.i64("the state size")?,
                    checkpointed_size: r.i64("the checkpointed size")?,
                    id: r.utf("the state handle id")?,
                    storage: if code == 13 {
                        Some(r.utf("the storage identifier")?)
                    } else {
                        None
                    },
                }
            }
            other => {
                return Err(Error::format(
                    at as u64,
                    "a keyed state handle type code (0, 3, 5, 7, 8, 9, 10, 11, 12, 13 or 14)",
                    Some(other.to_string()),
                ))
            }
        }))
    }

    pub fn write<W: Write>(h: &Option<KeyedHandle>, w: &mut Writer<W>) -> std::io::Result<()> {
        let Some(h) = h else { return w.u8(0) };
        w.u8(h.code())?;
        match h {
            KeyedHandle::KeyGroups { handle, .. } => handle.write(w),
            KeyedHandle::Incremental {
                checkpoint_id,
                backend_id,
                start_key_group,
                num_key_groups,
                checkpointed_size,
                meta,
                shared,
                private,
                id,
                ..
            } => {
                w.i64(*checkpoint_id)?;
                w.utf(backend_id)?;
                w.i32(*start_key_group)?;
                w.i32(*num_key_groups)?;
                if let Some(s) = checkpointed_size {
                    w.i64(*s)?;
                }
                StreamHandle::write(meta, w)?;
                write_handle_list(shared, w)?;
                write_handle_list(private, w)?;
                if let Some(id) = id {
                    w.utf(id)?;
                }
                Ok(())
            }
            KeyedHandle::Changelog {
                start_key_group,
                num_key_groups,
                checkpointed_size,
                materialized,
                non_materialized,
                materialization_id,
                checkpoint_id,
                id,
                ..
            } => {
                w.i32(*start_key_group)?;
                w.i32(*num_key_groups)?;
                w.i64(*checkpointed_size)?;
                w.len_i32(materialized.len())?;
                for h in materialized {
                    KeyedHandle::write(h, w)?;
                }
                w.len_i32(non_materialized.len())?;
                for h in non_materialized {
                    KeyedHandle::write(h, w)?;
                }
                w.i64(*materialization_id)?;
                if let Some(c) = checkpoint_id {
                    w.i64(*c)?;
                }
                w.utf(id)
            }
            KeyedHandle::ChangelogInMemory {
                start_key_group,
                num_key_groups,
                from,
                to,
                num_changes,
                changes,
                id,
            } => {
                w.i32(*start_key_group)?;
                w.i32(*num_key_groups)?;
                w.i64(*from)?;
                w.i64(*to)?;
                w.len_i32(*num_changes)?;
                w.raw(changes)?;
                w.utf(id)
            }
            KeyedHandle::ChangelogFile {
                start_key_group,
                num_key_groups,
                handles,
                size,
                checkpointed_size,
                id,
                storage,
                ..
            } => {
                w.i32(*start_key_group)?;
                w.i32(*num_key_groups)?;
                w.len_i32(handles.len())?;
                for (offset, h) in handles {
                    w.i64(*offset)?;
                    StreamHandle::write(h, w)?;
                }
                w.i64(*size)?;
                w.i64(*checkpointed_size)?;
                w.utf(id)?;
                if let Some(s) = storage {
                    w.utf(s)?;
                }
                Ok(())
            }
        }
    }
}

fn read_handle_list(r: &mut Reader, depth: u32) -> Result<HandleList> {
    let n = r.count("the number of incremental state handles", 3)?;
    r.charge::<(JStr, Option<StreamHandle>)>(n, "incremental state handles")?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let key = r.utf("the key of an incremental state handle")?;
        v.push((key, StreamHandle::read(r, depth + 1)?));
    }
    Ok(v)
}

fn write_handle_list<W: Write>(l: &HandleList, w: &mut Writer<W>) -> std::io::Result<()> {
    w.len_i32(l.len())?;
    for (k, h) in l {
        w.utf(k)?;
        StreamHandle::write(h, w)?;
    }
    Ok(())
}

/// `OperatorStateHandle.Mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    SplitDistribute,
    Union,
    Broadcast,
}

impl Mode {
    pub fn from_ordinal(o: u8) -> Option<Mode> {
        match o {
            0 => Some(Mode::SplitDistribute),
            1 => Some(Mode::Union),
            2 => Some(Mode::Broadcast),
            _ => None,
        }
    }

    pub fn ordinal(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::SplitDistribute => "SPLIT_DISTRIBUTE",
            Mode::Union => "UNION",
            Mode::Broadcast => "BROADCAST",
        }
    }
}

/// One entry of an operator state handle's name-to-`StateMetaInfo` map.
#[derive(Clone, Debug, PartialEq)]
pub struct StateMetaInfo {
    pub name: JStr,
    pub mode: Mode,
    pub offsets: Offsets,
}

/// `OperatorStateHandle`: code 4 (`OperatorStreamStateHandle`) or 17 (file merging).
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorHandle {
    pub states: Vec<StateMetaInfo>,
    pub file_merging: Option<FileMergingDirs>,
    pub delegate: Option<StreamHandle>,
}

/// What a code-17 `FileMergingOperatorStreamStateHandle` adds.
#[derive(Clone, Debug, PartialEq)]
pub struct FileMergingDirs {
    pub task_owned_dir: JStr,
    pub shared_dir: JStr,
    pub is_empty: u8,
}

impl OperatorHandle {
    pub fn kind(&self) -> &'static str {
        match &self.file_merging {
            None => "OperatorStreamStateHandle",
            Some(d) if d.is_empty != 0 => "EmptyFileMergingOperatorStreamStateHandle",
            Some(_) => "FileMergingOperatorStreamStateHandle",
        }
    }

    pub fn read(r: &mut Reader) -> Result<Option<OperatorHandle>> {
        let at = r.pos();
        let code = r.u8("an operator state handle type code")?;
        if code == 0 {
            return Ok(None);
        }
        if code != 4 && code != 17 {
            return Err(Error::format(
                at as u64,
                "an operator state handle type code (0, 4 or 17)",
                Some(code.to_string()),
            ));
        }
        let n = r.count("the number of operator states in the handle", 7)?;
        r.charge::<StateMetaInfo>(n, "operator states in a handle")?;
        let mut states = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.utf("an operator state name")?;
            let mode_at = r.pos();
            let ordinal = r.u8("the distribution mode")?;
            let mode = Mode::from_ordinal(ordinal).ok_or_else(|| {
                Error::format(
                    mode_at as u64,
                    "a distribution mode ordinal (0 SPLIT_DISTRIBUTE, 1 UNION, 2 BROADCAST)",
                    Some(ordinal.to_string()),
                )
            })?;
            let k = r.count("the number of offsets", 8)?;
            let offsets = Offsets::read(r, k, "the partition offsets")?;
            states.push(StateMetaInfo {
                name,
                mode,
                offsets,
            });
        }
        let file_merging = if code == 17 {
            Some(FileMergingDirs {
                task_owned_dir: r.utf("the task-owned directory")?,
                shared_dir: r.utf("the shared directory")?,
                is_empty: r.u8("the is-empty flag")?,
            })
        } else {
            None
        };
        let delegate_at = r.pos();
        let delegate = StreamHandle::read(r, 0)?;
        if code == 17
            && !matches!(
                delegate,
                Some(StreamHandle::Segment { .. } | StreamHandle::EmptySegment)
            )
        {
            return Err(Error::format(
                delegate_at as u64,
                "a SegmentFileStateHandle (code 15 or 16) as delegate of a file-merging handle",
                delegate.map(|d| d.code().to_string()),
            ));
        }
        Ok(Some(OperatorHandle {
            states,
            file_merging,
            delegate,
        }))
    }

    pub fn write<W: Write>(h: &Option<OperatorHandle>, w: &mut Writer<W>) -> std::io::Result<()> {
        let Some(h) = h else { return w.u8(0) };
        w.u8(if h.file_merging.is_some() { 17 } else { 4 })?;
        w.len_i32(h.states.len())?;
        for s in &h.states {
            w.utf(&s.name)?;
            w.u8(s.mode.ordinal())?;
            w.len_i32(s.offsets.len())?;
            w.raw(&s.offsets.0)?;
        }
        if let Some(d) = &h.file_merging {
            w.utf(&d.task_owned_dir)?;
            w.utf(&d.shared_dir)?;
            w.u8(d.is_empty)?;
        }
        StreamHandle::write(&h.delegate, w)
    }
}

/// Unaligned-checkpoint channel state handles.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelHandle {
    /// The V2 type byte (1 input, 2 output, 3 merged input, 4 merged output); None in V1 files.
    pub v2_type: Option<u8>,
    pub input: bool,
    pub subtask: i32,
    /// gate/channel or partition/subpartition; None for the merged types.
    pub info: Option<(i32, i32)>,
    pub offsets: Offsets,
    pub size: i64,
    pub delegate: Option<StreamHandle>,
    /// Merged types: the serialized channel offsets, kept raw.
    pub merged_offsets: Option<Bytes>,
}

impl ChannelHandle {
    pub fn read_v1(r: &mut Reader, input: bool) -> Result<ChannelHandle> {
        let subtask = r.i32("the channel state subtask index")?;
        let a = r.i32("the gate or partition index")?;
        let b = r.i32("the channel or subpartition index")?;
        let n = r.count("the number of channel state offsets", 8)?;
        let offsets = Offsets::read(r, n, "the channel state offsets")?;
        Ok(ChannelHandle {
            v2_type: None,
            input,
            subtask,
            info: Some((a, b)),
            offsets,
            size: r.i64("the channel state size")?,
            delegate: StreamHandle::read(r, 0)?,
            merged_offsets: None,
        })
    }

    pub fn read_v2(r: &mut Reader, input: bool) -> Result<ChannelHandle> {
        let at = r.pos();
        let t = r.u8("a channel state handle type")?;
        let expected_types = if input { [1, 3] } else { [2, 4] };
        if !expected_types.contains(&t) {
            return Err(Error::format(
                at as u64,
                format!(
                    "an {} channel state handle type ({} or {})",
                    if input { "input" } else { "output" },
                    expected_types[0],
                    expected_types[1]
                ),
                Some(t.to_string()),
            ));
        }
        if t <= 2 {
            let mut h = ChannelHandle::read_v1(r, input)?;
            h.v2_type = Some(t);
            return Ok(h);
        }
        let subtask = r.i32("the channel state subtask index")?;
        let size = r.i64("the channel state size")?;
        let delegate = StreamHandle::read(r, 0)?;
        let n = r.count("the length of the serialized channel offsets", 1)?;
        Ok(ChannelHandle {
            v2_type: Some(t),
            input,
            subtask,
            info: None,
            offsets: Offsets::default(),
            size,
            delegate,
            merged_offsets: Some(r.bytes(n, "the serialized channel offsets")?),
        })
    }

    pub fn write<W: Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        if let Some(t) = self.v2_type {
            w.u8(t)?;
        }
        w.i32(self.subtask)?;
        match (&self.info, &self.merged_offsets) {
            (_, Some(raw)) => {
                w.i64(self.size)?;
                StreamHandle::write(&self.delegate, w)?;
                w.len_i32(raw.len())?;
                w.raw(raw)
            }
            (info, None) => {
                let (a, b) = info.unwrap_or((0, 0));
                w.i32(a)?;
                w.i32(b)?;
                w.len_i32(self.offsets.len())?;
                w.raw(&self.offsets.0)?;
                w.i64(self.size)?;
                StreamHandle::write(&self.delegate, w)
            }
        }
    }
}

/// A relative state file name must be a plain file name: no separator, no `..`.
pub fn checked_relative(name: &str) -> Result<&str> {
    if name.is_empty() || name.contains('/') || name.contains('\\') || name == "." || name == ".." {
        return Err(Error::InvalidArgument(format!(
            "relative state file name '{name}' is not a plain file name; refusing to leave the checkpoint directory"
        )));
    }
    Ok(name)
}
