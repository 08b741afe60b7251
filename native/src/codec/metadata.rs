//! The `_metadata` file (`Checkpoints` + `MetadataV2..V7Serializer`): a typed model that borrows
//! slices of the input, and a writer that re-emits it. An unmodified model writes back the
//! identical bytes. Operator, subtask and map order is the file's own and is kept.

use crate::codec::handles::{ChannelHandle, KeyedHandle, OperatorHandle, StreamHandle};
use crate::codec::io::{JStr, Reader, Writer};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::io::Write;

pub const MAGIC: i32 = 0x4960_672D;
const MASTER_STATE_MAGIC: i32 = 0xC96B_1696_u32 as i32;

/// The one walk over every stream handle of a model, for `&` and `&mut` alike: operator state
/// delegates, coordinator state, keyed state (key groups, incremental meta, shared and private
/// files, changelog handles, recursively) and channel state.
macro_rules! visit_stream_handles {
    ($md:expr, $f:expr, $handles:ident, $($m:ident)?) => {{
        fn stream(h: &$($m)? Option<StreamHandle>, f: &mut dyn FnMut(&$($m)? StreamHandle)) {
            if let Some(h) = h {
                f(h);
                if let StreamHandle::KeyGroups(k) = h {
                    stream(&$($m)? k.delegate, f);
                }
            }
        }
        fn keyed(h: &$($m)? Option<KeyedHandle>, f: &mut dyn FnMut(&$($m)? StreamHandle)) {
            match h {
                None | Some(KeyedHandle::ChangelogInMemory { .. }) => {}
                Some(KeyedHandle::KeyGroups { handle, .. }) => stream(&$($m)? handle.delegate, f),
                Some(KeyedHandle::Incremental { meta, shared, private, .. }) => {
                    stream(meta, f);
                    for (_, h) in shared {
                        stream(h, f);
                    }
                    for (_, h) in private {
                        stream(h, f);
                    }
                }
                Some(KeyedHandle::Changelog { materialized, non_materialized, .. }) => {
                    for h in materialized {
                        keyed(h, f);
                    }
                    for h in non_materialized {
                        keyed(h, f);
                    }
                }
                Some(KeyedHandle::ChangelogFile { handles, .. }) => {
                    for (_, h) in handles {
                        stream(h, f);
                    }
                }
            }
        }
        let md = $md;
        let f = $f;
        for h in md.$handles() {
            stream(&$($m)? h.handle.delegate, f);
        }
        for op in &$($m)? md.operators {
            stream(&$($m)? op.coordinator, f);
            if let Subtasks::List(list) = &$($m)? op.subtasks {
                for entry in list {
                    if let SubtaskEntry::State(_, st) = entry {
                        keyed(&$($m)? st.managed_keyed, f);
                        keyed(&$($m)? st.raw_keyed, f);
                        for c in &$($m)? st.input_channels {
                            stream(&$($m)? c.delegate, f);
                        }
                        for c in &$($m)? st.output_channels {
                            stream(&$($m)? c.delegate, f);
                        }
                    }
                }
            }
        }
    }};
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointMetadata {
    pub version: i32,
    pub checkpoint_id: i64,
    pub master_states: Vec<MasterState>,
    pub operators: Vec<OperatorState>,
    /// V4+: the Java-serialized `CheckpointProperties`, kept as opaque bytes to EOF.
    pub properties: Bytes,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MasterState {
    pub version: i32,
    pub name: JStr,
    pub payload: Bytes,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OperatorState {
    /// V5+: operator name and uid (empty = none).
    pub name: Option<JStr>,
    pub uid: Option<JStr>,
    /// The 16 raw id bytes, which are also the bytes of the hex string Flink shows.
    pub id: [u8; 16],
    pub parallelism: i32,
    pub max_parallelism: i32,
    /// V3+: the operator coordinator state (a `ByteStreamStateHandle` or null).
    pub coordinator: Option<StreamHandle>,
    /// V2: the legacy chain length (written as 1).
    pub legacy_chain_length: Option<i32>,
    pub subtasks: Subtasks,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Subtasks {
    /// Written as count -1: every subtask finished.
    FullyFinished,
    List(Vec<SubtaskEntry>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum SubtaskEntry {
    /// A negative index: subtask `index` finished, no state.
    Finished(i32),
    State(i32, Box<SubtaskState>),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct SubtaskState {
    /// V2: the ignored duration field.
    pub legacy_duration: Option<i64>,
    /// The i32 presence flag as written (Flink writes 1) and the handle.
    pub managed_operator: Option<(i32, Option<OperatorHandle>)>,
    pub raw_operator: Option<(i32, Option<OperatorHandle>)>,
    pub managed_keyed: Option<KeyedHandle>,
    pub raw_keyed: Option<KeyedHandle>,
    pub input_channels: Vec<ChannelHandle>,
    pub output_channels: Vec<ChannelHandle>,
    /// V7: the regional-checkpoint marker byte and id.
    pub v7_reference: Option<(u8, Option<i64>)>,
}

impl SubtaskState {
    pub fn managed_operator(&self) -> Option<&OperatorHandle> {
        self.managed_operator.as_ref().and_then(|(_, h)| h.as_ref())
    }

    pub fn raw_operator(&self) -> Option<&OperatorHandle> {
        self.raw_operator.as_ref().and_then(|(_, h)| h.as_ref())
    }
}

impl OperatorState {
    pub fn hex_id(&self) -> String {
        self.id.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn subtask_states(&self) -> impl Iterator<Item = (i32, &SubtaskState)> {
        let list: &[SubtaskEntry] = match &self.subtasks {
            Subtasks::FullyFinished => &[],
            Subtasks::List(l) => l,
        };
        list.iter().filter_map(|e| match e {
            SubtaskEntry::State(i, s) => Some((*i, &**s)),
            SubtaskEntry::Finished(_) => None,
        })
    }
}

/// Parses a whole `_metadata` file.
pub fn parse(buf: Bytes) -> Result<CheckpointMetadata> {
    let mut r = Reader::new(buf);
    let magic = r.i32("the _metadata magic number 0x4960672D")?;
    if magic != MAGIC {
        return Err(Error::format(
            0,
            "the _metadata magic number 0x4960672D",
            Some(format!("0x{:08X}", magic as u32)),
        ));
    }
    let version = r.i32("the metadata version")?;
    if !(2..=7).contains(&version) {
        return Err(Error::format(
            4,
            "a metadata version from 2 to 7",
            Some(version.to_string()),
        ));
    }
    let at = r.pos();
    let checkpoint_id = r.i64("the checkpoint id")?;
    if checkpoint_id < 0 {
        return Err(Error::format(
            at as u64,
            "a non-negative checkpoint id",
            Some(checkpoint_id.to_string()),
        ));
    }
    let n = r.count("the number of master states", 8)?;
    let mut master_states = Vec::with_capacity(n);
    for _ in 0..n {
        master_states.push(read_master_state(&mut r)?);
    }
    // The smallest operator record: id, parallelism, max parallelism and the subtask count, plus
    // the legacy chain length (V2) or a null coordinator state (V3+), plus two empty strings (V5+).
    let min_operator = match version {
        2 => 32,
        3 | 4 => 29,
        _ => 33,
    };
    let n = r.count("the number of operator states", min_operator)?;
    r.charge::<OperatorState>(n, "operator states")?;
    let mut operators = Vec::with_capacity(n);
    let mut ids = std::collections::HashSet::with_capacity(n);
    for _ in 0..n {
        let at = r.pos();
        let op = read_operator(&mut r, version)?;
        let id_at = at + if version >= 5 { op_name_bytes(&op) } else { 0 };
        if !ids.insert(op.id) {
            return Err(Error::format(
                id_at as u64,
                "a distinct operator id (each operator appears once)",
                Some(format!("{} again", op.hex_id())),
            ));
        }
        if op.parallelism < 1 || op.max_parallelism < op.parallelism {
            return Err(Error::format(
                (id_at + 16) as u64,
                format!(
                    "a parallelism of at least 1 and a max parallelism at least as large (operator {})",
                    op.hex_id()
                ),
                Some(format!(
                    "parallelism {}, max parallelism {}",
                    op.parallelism, op.max_parallelism
                )),
            ));
        }
        operators.push(op);
    }
    let properties = if version >= 4 {
        let at = r.pos();
        let p = r.rest();
        if !p.starts_with(&[0xAC, 0xED, 0x00, 0x05]) {
            return Err(Error::format(
                at as u64,
                "the Java serialization header AC ED 00 05 of the CheckpointProperties",
                Some(format!("{:02X?}", &p[..p.len().min(4)])),
            ));
        }
        crate::codec::javaser::check_single_object(p.clone()).map_err(|e| shift_error(e, at))?;
        p
    } else {
        if r.remaining() > 0 {
            return Err(r.error(
                format!("end of file after the last operator state (metadata version {version})"),
                Some(format!("{} more bytes", r.remaining())),
            ));
        }
        Bytes::new()
    };
    Ok(CheckpointMetadata {
        version,
        checkpoint_id,
        master_states,
        operators,
        properties,
    })
}

/// The bytes of a V5+ operator's name and uid strings, which precede its id.
fn op_name_bytes(op: &OperatorState) -> usize {
    4 + op.name.as_ref().map_or(0, |n| n.as_bytes().len())
        + op.uid.as_ref().map_or(0, |u| u.as_bytes().len())
}

fn read_master_state(r: &mut Reader) -> Result<MasterState> {
    let at = r.pos();
    let magic = r.i32("the master state magic number")?;
    if magic != MASTER_STATE_MAGIC {
        return Err(Error::format(
            at as u64,
            "the master state magic number 0xC96B1696",
            Some(format!("0x{:08X}", magic as u32)),
        ));
    }
    let len_at = r.pos();
    let len = r.count("the master state length", 1)?;
    if len == 0 {
        return Err(Error::format(
            len_at as u64,
            "a positive master state length",
            Some("0".into()),
        ));
    }
    let end = r.pos() + len;
    let body = r.bytes(len, "the master state")?;
    let mut b = Reader::new(body);
    let version = b
        .i32("the master state version")
        .map_err(|e| shift_error(e, end - len))?;
    let name = b
        .utf("the master state name")
        .map_err(|e| shift_error(e, end - len))?;
    let n = b
        .count("the master state payload length", 1)
        .map_err(|e| shift_error(e, end - len))?;
    let payload = b
        .bytes(n, "the master state payload")
        .map_err(|e| shift_error(e, end - len))?;
    if b.remaining() != 0 {
        return Err(Error::format(
            (end - b.remaining()) as u64,
            "the end of the master state",
            Some(format!("{} trailing bytes", b.remaining())),
        ));
    }
    Ok(MasterState {
        version,
        name,
        payload,
    })
}

/// Makes an offset inside a sub-reader absolute.
fn shift_error(e: Error, base: usize) -> Error {
    match e {
        Error::Format {
            file,
            offset,
            expected,
            found,
        } => Error::Format {
            file,
            offset: offset + base as u64,
            expected,
            found,
        },
        other => other,
    }
}

fn read_operator(r: &mut Reader, version: i32) -> Result<OperatorState> {
    let (name, uid) = if version >= 5 {
        (
            Some(r.utf("the operator name")?),
            Some(r.utf("the operator uid")?),
        )
    } else {
        (None, None)
    };
    let id_bytes = r.bytes(16, "the operator id")?;
    let mut id = [0u8; 16];
    id.copy_from_slice(&id_bytes);
    let parallelism = r.i32("the operator parallelism")?;
    let max_parallelism = r.i32("the operator max parallelism")?;
    let (coordinator, legacy_chain_length) = if version == 2 {
        (None, Some(r.i32("the legacy chain length")?))
    } else {
        let at = r.pos();
        let c = StreamHandle::read(r, 0)?;
        if !matches!(c, None | Some(StreamHandle::ByteStream { .. })) {
            return Err(Error::format(
                at as u64,
                "a coordinator state that is null or a ByteStreamStateHandle (code 0 or 1)",
                c.map(|c| c.code().to_string()),
            ));
        }
        (c, None)
    };
    let at = r.pos();
    let n = r.i32("the number of subtask states")?;
    let subtasks = if n < -1 && version >= 3 {
        return Err(Error::format(
            at as u64,
            "a number of subtask states, or -1 for a fully finished operator",
            Some(n.to_string()),
        ));
    } else if n < 0 && version >= 3 {
        if coordinator.is_some() {
            return Err(Error::format(
                at as u64,
                "no coordinator state for a fully finished operator",
                None,
            ));
        }
        Subtasks::FullyFinished
    } else if n < 0 {
        return Err(Error::format(
            at as u64,
            "a non-negative number of subtask states",
            Some(n.to_string()),
        ));
    } else {
        let n = n as usize;
        if n.saturating_mul(4) > r.remaining() {
            return Err(Error::format(
                at as u64,
                format!(
                    "a number of subtask states that fits in the {} bytes left",
                    r.remaining()
                ),
                Some(n.to_string()),
            ));
        }
        r.charge::<SubtaskEntry>(n, "subtask states")?;
        let mut list = Vec::with_capacity(n);
        for _ in 0..n {
            let index = r.i32("a subtask index")?;
            if index < 0 && version >= 3 {
                list.push(SubtaskEntry::Finished(-index - 1));
            } else {
                r.charge::<SubtaskState>(1, "subtask states")?;
                list.push(SubtaskEntry::State(
                    index,
                    Box::new(read_subtask(r, version)?),
                ));
            }
        }
        Subtasks::List(list)
    };
    Ok(OperatorState {
        name,
        uid,
        id,
        parallelism,
        max_parallelism,
        coordinator,
        legacy_chain_length,
        subtasks,
    })
}

fn read_operator_slot(r: &mut Reader, what: &str) -> Result<Option<(i32, Option<OperatorHandle>)>> {
    let flag = r.i32(what)?;
    Ok(if flag != 0 {
        Some((flag, OperatorHandle::read(r)?))
    } else {
        None
    })
}

fn read_subtask(r: &mut Reader, version: i32) -> Result<SubtaskState> {
    let mut s = SubtaskState::default();
    if version == 2 {
        s.legacy_duration = Some(r.i64("the legacy duration")?);
        let at = r.pos();
        let legacy = r.i32("the number of legacy states")?;
        if legacy != 0 {
            return Err(Error::format(
                at as u64,
                "0 legacy states",
                Some(legacy.to_string()),
            ));
        }
    }
    s.managed_operator = read_operator_slot(r, "the managed operator state flag")?;
    s.raw_operator = read_operator_slot(r, "the raw operator state flag")?;
    s.managed_keyed = KeyedHandle::read(r, 0)?;
    s.raw_keyed = KeyedHandle::read(r, 0)?;
    if version >= 3 {
        for input in [true, false] {
            let n = r.count("the number of channel state handles", 1)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(if version >= 6 {
                    ChannelHandle::read_v2(r, input)?
                } else {
                    ChannelHandle::read_v1(r, input)?
                });
            }
            if input {
                s.input_channels = v;
            } else {
                s.output_channels = v;
            }
        }
    }
    if version >= 7 {
        let marker = r.u8("the checkpoint reference marker")?;
        let id = if marker == 1 {
            Some(r.i64("the reference checkpoint id")?)
        } else {
            None
        };
        s.v7_reference = Some((marker, id));
    }
    Ok(s)
}

impl CheckpointMetadata {
    /// Writes the file: magic, version, body, and (V4+) the properties trailer.
    pub fn write<W: Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.i32(MAGIC)?;
        w.i32(self.version)?;
        w.i64(self.checkpoint_id)?;
        w.len_i32(self.master_states.len())?;
        for m in &self.master_states {
            w.i32(MASTER_STATE_MAGIC)?;
            w.len_i32(4 + 2 + m.name.0.len() + 4 + m.payload.len())?;
            w.i32(m.version)?;
            w.utf(&m.name)?;
            w.len_i32(m.payload.len())?;
            w.raw(&m.payload)?;
        }
        w.len_i32(self.operators.len())?;
        for op in &self.operators {
            write_operator(op, w)?;
        }
        w.raw(&self.properties)
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut w = Writer::new(Vec::new());
        // Writing to a Vec fails only on a string over 65535 bytes, which a parsed model
        // cannot contain.
        self.write(&mut w)
            .expect("writing a parsed model to memory cannot fail");
        w.into_inner()
    }
}

fn write_operator<W: Write>(op: &OperatorState, w: &mut Writer<W>) -> std::io::Result<()> {
    if let (Some(n), Some(u)) = (&op.name, &op.uid) {
        w.utf(n)?;
        w.utf(u)?;
    }
    w.raw(&op.id)?;
    w.i32(op.parallelism)?;
    w.i32(op.max_parallelism)?;
    match op.legacy_chain_length {
        Some(l) => w.i32(l)?,
        None => StreamHandle::write(&op.coordinator, w)?,
    }
    match &op.subtasks {
        Subtasks::FullyFinished => w.i32(-1),
        Subtasks::List(list) => {
            w.len_i32(list.len())?;
            for e in list {
                match e {
                    SubtaskEntry::Finished(i) => w.i32(-i - 1)?,
                    SubtaskEntry::State(i, s) => {
                        w.i32(*i)?;
                        write_subtask(s, w)?;
                    }
                }
            }
            Ok(())
        }
    }
}

fn write_subtask<W: Write>(s: &SubtaskState, w: &mut Writer<W>) -> std::io::Result<()> {
    if let Some(d) = s.legacy_duration {
        w.i64(d)?;
        w.i32(0)?;
    }
    for slot in [&s.managed_operator, &s.raw_operator] {
        match slot {
            Some((flag, h)) => {
                w.i32(*flag)?;
                OperatorHandle::write(h, w)?;
            }
            None => w.i32(0)?,
        }
    }
    KeyedHandle::write(&s.managed_keyed, w)?;
    KeyedHandle::write(&s.raw_keyed, w)?;
    if s.legacy_duration.is_none() {
        for list in [&s.input_channels, &s.output_channels] {
            w.len_i32(list.len())?;
            for c in list {
                c.write(w)?;
            }
        }
    }
    if let Some((marker, id)) = s.v7_reference {
        w.u8(marker)?;
        if let Some(id) = id {
            w.i64(id)?;
        }
    }
    Ok(())
}

/// One operator state handle of the model and where it sits.
pub struct HandleAt<'a> {
    /// Index of the operator in [`CheckpointMetadata::operators`].
    pub operator: usize,
    pub subtask: i32,
    /// Managed (`true`) or raw operator state.
    pub managed: bool,
    pub handle: &'a OperatorHandle,
}

/// [`HandleAt`] with a mutable handle.
pub struct HandleAtMut<'a> {
    pub operator: usize,
    pub subtask: i32,
    pub managed: bool,
    pub handle: &'a mut OperatorHandle,
}

impl OperatorState {
    /// Every operator state handle of this operator: (subtask, managed?, handle).
    pub fn operator_handles(&self) -> impl Iterator<Item = (i32, bool, &OperatorHandle)> {
        self.subtask_states().flat_map(|(i, st)| {
            [(true, st.managed_operator()), (false, st.raw_operator())]
                .into_iter()
                .filter_map(move |(m, h)| h.map(|h| (i, m, h)))
        })
    }
}

impl CheckpointMetadata {
    /// Every operator state handle of the checkpoint, in file order.
    pub fn operator_handles(&self) -> impl Iterator<Item = HandleAt<'_>> {
        self.operators.iter().enumerate().flat_map(|(o, op)| {
            op.operator_handles()
                .map(move |(subtask, managed, handle)| HandleAt {
                    operator: o,
                    subtask,
                    managed,
                    handle,
                })
        })
    }

    /// [`Self::operator_handles`], mutable.
    pub fn operator_handles_mut(&mut self) -> impl Iterator<Item = HandleAtMut<'_>> {
        self.operators
            .iter_mut()
            .enumerate()
            .flat_map(|(o, op)| {
                let list: &mut [SubtaskEntry] = match &mut op.subtasks {
                    Subtasks::FullyFinished => &mut [],
                    Subtasks::List(l) => l,
                };
                list.iter_mut().filter_map(move |e| match e {
                    SubtaskEntry::State(i, s) => Some((o, *i, &mut **s)),
                    SubtaskEntry::Finished(_) => None,
                })
            })
            .flat_map(|(o, i, st)| {
                [
                    (true, &mut st.managed_operator),
                    (false, &mut st.raw_operator),
                ]
                .into_iter()
                .filter_map(move |(managed, slot)| match slot {
                    Some((_, Some(h))) => Some(HandleAtMut {
                        operator: o,
                        subtask: i,
                        managed,
                        handle: h,
                    }),
                    _ => None,
                })
            })
    }

    /// Calls `f` for every stream handle the checkpoint references, nested ones included.
    pub fn visit_stream_handles(&self, f: &mut dyn FnMut(&StreamHandle)) {
        visit_stream_handles!(self, f, operator_handles,);
    }

    /// [`Self::visit_stream_handles`], mutable (relocation rewrites the paths in place).
    pub fn visit_stream_handles_mut(&mut self, f: &mut dyn FnMut(&mut StreamHandle)) {
        visit_stream_handles!(self, f, operator_handles_mut, mut);
    }
}
