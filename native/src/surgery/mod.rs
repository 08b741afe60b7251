//! State surgery on a parsed checkpoint: the typed request, operator selection, and the plan:
//! the new model and the new state streams, computed without writing anything. The streams are
//! lists of slices of the old ones, so nothing large is copied until `commit::stage` writes them.
//!
//! One module per operation family: [`remove`] (remove-state, remove-operator, dedupe-union),
//! [`rename`] (rename-operator), [`relocate`] (absolute paths), [`kafka`] (the Kafka source's
//! states), [`keyed`] (remove-keyed-state, rename-keyed-state); [`cut`] cuts bytes out of
//! operator-state streams. Channel, coordinator and master state are never rewritten, nor keyed
//! state but by [`keyed`]: their bytes pass through.
//! Nothing here touches a file or the JVM: streams are read through [`StreamSource`]; the big
//! keyed streams are rewritten when `commit::stage` writes them ([`NewStream::keyed`]).

pub mod cut;
pub mod kafka;
pub mod keyed;
pub mod relocate;
pub mod remove;
pub mod rename;

use crate::codec::handles::{checked_relative, StreamHandle};
use crate::codec::io::JStr;
use crate::codec::metadata::{CheckpointMetadata, OperatorState};
use crate::codec::uid::operator_id_for_uid;
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;

/// Which operators an operation applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Every operator that has the named state.
    All,
    /// The OperatorID (16 bytes; Flink prints them as 32 hex digits).
    Id([u8; 16]),
    /// A user-specified uid (hashed as Flink does).
    Uid(String),
    /// The operator name (metadata V5+ stores it).
    Name(String),
}

impl Selector {
    /// An operator id given as 32 hex digits, as `inspect` prints it.
    pub fn id_hex(hex: &str) -> Result<Selector> {
        Ok(Selector::Id(parse_operator_id(hex)?))
    }

    pub fn matches(&self, op: &OperatorState) -> bool {
        match self {
            Selector::All => true,
            Selector::Id(id) => &op.id == id,
            Selector::Uid(uid) => {
                op.id == operator_id_for_uid(uid)
                    || op.uid.as_ref().is_some_and(|u| u.to_string() == *uid)
            }
            Selector::Name(n) => op.name.as_ref().is_some_and(|x| x.to_string() == *n),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Selector::All => "any operator".to_string(),
            Selector::Id(id) => format!("operator id {}", hex(id)),
            Selector::Uid(u) => format!("operator uid '{u}'"),
            Selector::Name(n) => format!("operator name '{n}'"),
        }
    }
}

/// 32 hex digits to the 16 bytes of an OperatorID.
pub fn parse_operator_id(hex: &str) -> Result<[u8; 16]> {
    let v = hex.trim();
    if v.len() != 32 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::InvalidArgument(format!(
            "operator id '{hex}' is not 32 hex digits"
        )));
    }
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&v[2 * i..2 * i + 2], 16)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    }
    Ok(id)
}

pub fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The new identity of a renamed operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewIdentity {
    /// A uid: the operator id becomes Flink's hash of it, and V5+ metadata stores the uid.
    Uid(String),
    /// An operator id as such (for a job that never set uids).
    Id([u8; 16]),
    /// The same id and uid: only the name changes (V5+ metadata stores names).
    Keep,
}

/// One operation of a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    /// Removes a named operator state (list, union or broadcast).
    RemoveState { operators: Selector, state: JStr },
    /// Removes an operator with all its state.
    RemoveOperator { operators: Selector },
    /// Keeps one copy of each distinct element of a union state.
    DedupeUnion { operators: Selector, state: JStr },
    /// Gives an operator a new id (and uid, and name in V5+); all its state moves with it.
    RenameOperator {
        operator: Selector,
        to: NewIdentity,
        name: Option<String>,
    },
    /// Moves every absolute path under one prefix under another. `outside`: the caller moved a
    /// path of the checkpoint kept outside `_metadata` (an HA file's checkpoint pointer), so no
    /// path inside needs to match.
    Relocate {
        from: String,
        to: String,
        outside: bool,
    },
    /// A Kafka source surgery (migrate-legacy, drop-topic, set-offsets); alone in its request.
    Kafka {
        operators: Selector,
        op: kafka::KafkaOperation,
    },
    /// A keyed-state surgery (remove-keyed-state, rename-keyed-state); only with other keyed
    /// operations in its request.
    Keyed {
        operators: Selector,
        op: keyed::KeyedOperation,
    },
}

impl Operation {
    fn describe(&self) -> String {
        match self {
            Operation::RemoveState { operators, state } => {
                format!("state '{state}' of {}", operators.describe())
            }
            Operation::RemoveOperator { operators } => operators.describe(),
            Operation::DedupeUnion { operators, state } => {
                format!("union state '{state}' of {}", operators.describe())
            }
            Operation::RenameOperator { operator, .. } => operator.describe(),
            Operation::Relocate { from, .. } => format!("relocate from '{from}'"),
            Operation::Kafka { operators, op } => op.describe(operators),
            Operation::Keyed { operators, op } => op.describe(operators),
        }
    }
}

/// How deep a state removal goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Drop the name from the handle maps only; the stream header still names the state.
    MetadataOnly,
    /// Also cut the state's header entry and elements out of every stream.
    Purge,
}

/// What to do to a checkpoint. The Java side sends it through `wire`.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub operations: Vec<Operation>,
    pub depth: Depth,
    /// `--reference-unchanged`: the source checkpoint's directory (a URI or absolute path);
    /// unchanged relative files are then referenced there instead of placed into the output.
    pub reference_unchanged: Option<String>,
    /// How many keyed streams `commit::stage` rewrites at once (`--threads`); None: one per core.
    pub threads: Option<usize>,
}

impl Request {
    /// A purging request of the given operations.
    pub fn new(operations: Vec<Operation>) -> Request {
        Request {
            operations,
            depth: Depth::Purge,
            reference_unchanged: None,
            threads: None,
        }
    }

    /// Remove `state` from the selected operators (purge).
    pub fn remove_state(operators: Selector, state: &str) -> Request {
        Request::new(vec![Operation::RemoveState {
            operators,
            state: JStr::new(state),
        }])
    }

    /// Keep one copy of each distinct element of the union `state`.
    pub fn dedupe_union(operators: Selector, state: &str) -> Request {
        Request::new(vec![Operation::DedupeUnion {
            operators,
            state: JStr::new(state),
        }])
    }

    /// Remove the selected operator with all its state.
    pub fn remove_operator(operators: Selector) -> Request {
        Request::new(vec![Operation::RemoveOperator { operators }])
    }

    /// Give the selected operator a new identity.
    pub fn rename_operator(operator: Selector, to: NewIdentity, name: Option<&str>) -> Request {
        Request::new(vec![Operation::RenameOperator {
            operator,
            to,
            name: name.map(String::from),
        }])
    }

    /// Move every absolute path under `from` under `to`.
    pub fn relocate(from: &str, to: &str) -> Request {
        Request::new(vec![Operation::Relocate {
            from: from.to_string(),
            to: to.to_string(),
            outside: false,
        }])
    }

    /// A Kafka source surgery on the selected operators.
    pub fn kafka(operators: Selector, op: kafka::KafkaOperation) -> Request {
        Request::new(vec![Operation::Kafka { operators, op }])
    }

    /// Remove the keyed state `state` from the selected operators: its meta info entry and its data,
    /// in every kind of keyed handle but changelog ones (refused).
    pub fn remove_keyed_state(operators: Selector, state: &str) -> Request {
        Request::new(vec![Operation::Keyed {
            operators,
            op: keyed::KeyedOperation::RemoveState {
                state: JStr::new(state),
            },
        }])
    }

    /// Rename the keyed state `from` of the selected operators to `to`.
    pub fn rename_keyed_state(operators: Selector, from: &str, to: &str) -> Request {
        Request::new(vec![Operation::Keyed {
            operators,
            op: keyed::KeyedOperation::RenameState {
                from: JStr::new(from),
                to: JStr::new(to),
            },
        }])
    }

    /// How many keyed streams the stage rewrites at once (at least one).
    pub fn with_threads(mut self, threads: usize) -> Request {
        self.threads = Some(threads.max(1));
        self
    }

    /// Reference the unchanged relative files in `source_dir` instead of placing them.
    pub fn with_reference_unchanged(mut self, source_dir: &str) -> Request {
        self.reference_unchanged = Some(source_dir.to_string());
        self
    }

    pub fn with_depth(mut self, depth: Depth) -> Request {
        self.depth = depth;
        self
    }
}

/// What a change of the plan does; [`ChangeAction::as_str`] is its spelling in plans and on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeAction {
    /// An operator state's header entry and elements cut out of its stream, and its name dropped.
    PurgeState,
    /// An operator state's name dropped from the handle map only (`--metadata-only`).
    DropMapEntry,
    /// A union state's repeated elements cut out of its stream.
    DedupeUnion,
    RemoveOperator,
    /// A new operator id (from a uid or given) or a new name.
    RenameOperator,
    RemoveKeyedState,
    RenameKeyedState,
    /// A Kafka source reader's splits written from FlinkKafkaConsumer's offsets.
    KafkaSplit,
    /// A Kafka source's enumerator (coordinator) state written anew.
    KafkaEnumerator,
    KafkaDropSplit,
    KafkaSetOffset,
    /// Absolute paths under one prefix moved under another.
    Relocate,
    /// Unchanged state files referenced in the source directory instead of placed in the output.
    ReferenceUnchanged,
}

impl ChangeAction {
    pub const ALL: [ChangeAction; 13] = [
        ChangeAction::PurgeState,
        ChangeAction::DropMapEntry,
        ChangeAction::DedupeUnion,
        ChangeAction::RemoveOperator,
        ChangeAction::RenameOperator,
        ChangeAction::RemoveKeyedState,
        ChangeAction::RenameKeyedState,
        ChangeAction::KafkaSplit,
        ChangeAction::KafkaEnumerator,
        ChangeAction::KafkaDropSplit,
        ChangeAction::KafkaSetOffset,
        ChangeAction::Relocate,
        ChangeAction::ReferenceUnchanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChangeAction::PurgeState => "purge-state",
            ChangeAction::DropMapEntry => "drop-map-entry",
            ChangeAction::DedupeUnion => "dedupe-union",
            ChangeAction::RemoveOperator => "remove-operator",
            ChangeAction::RenameOperator => "rename-operator",
            ChangeAction::RemoveKeyedState => "remove-keyed-state",
            ChangeAction::RenameKeyedState => "rename-keyed-state",
            ChangeAction::KafkaSplit => "kafka-split",
            ChangeAction::KafkaEnumerator => "kafka-enumerator",
            ChangeAction::KafkaDropSplit => "kafka-drop-split",
            ChangeAction::KafkaSetOffset => "kafka-set-offset",
            ChangeAction::Relocate => "relocate",
            ChangeAction::ReferenceUnchanged => "reference-unchanged",
        }
    }

    /// The action [`Self::as_str`] spells `name`.
    pub fn from_name(name: &str) -> Option<ChangeAction> {
        ChangeAction::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// One line of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub operator: String,
    /// -1 for a whole-operator change.
    pub subtask: i32,
    pub state: String,
    pub action: ChangeAction,
    pub elements_before: i64,
    pub elements_after: i64,
    /// Bytes the change removes from the state streams (0 for map-only changes).
    pub bytes_removed: i64,
    /// More about the change (a rename's old and new id); empty for most.
    pub detail: String,
}

impl Change {
    /// A change of a whole operator (remove, rename).
    fn operator(op: &OperatorState, action: ChangeAction, detail: String) -> Change {
        Change {
            operator: op.hex_id(),
            subtask: -1,
            state: String::new(),
            action,
            elements_before: 0,
            elements_after: 0,
            bytes_removed: 0,
            detail,
        }
    }
}

/// A new state stream: its bytes are the concatenation of `pieces`, or (`keyed`) a keyed stream
/// that `commit::stage` rewrites from the old one.
#[derive(Clone, Debug)]
pub struct NewStream {
    /// File name in the output directory (None: inline, the bytes go into `_metadata`).
    pub file_name: Option<String>,
    /// What it replaces (the old handle's location).
    pub replaces: String,
    pub pieces: Vec<Bytes>,
    /// Its length; for a keyed rewrite an estimate until it is staged.
    pub len: u64,
    pub keyed: Option<keyed::StreamRewrite>,
}

#[derive(Debug)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub metadata: CheckpointMetadata,
    pub new_streams: Vec<NewStream>,
    pub depth: Depth,
    /// Every absolute path relocation rewrote: (old, new).
    pub relocated: Vec<(String, String)>,
    /// The size of the new `_metadata`.
    pub metadata_bytes: u64,
    /// The keyed handles a keyed surgery changes, with the bytes read and written for each.
    pub keyed: Vec<keyed::KeyedHandleChange>,
    /// How many keyed streams the stage rewrites at once.
    pub threads: usize,
}

impl Plan {
    /// Bytes the plan and its stage read of the checkpoint's keyed state.
    pub fn keyed_bytes_read(&self) -> u64 {
        self.keyed.iter().map(|k| k.bytes_read).sum()
    }

    /// Bytes written for keyed state: exact once staged (see `commit::Staged::keyed`), else an
    /// estimate where a removal from a key-groups file is still to be written.
    pub fn keyed_bytes_written(&self) -> u64 {
        self.keyed.iter().map(|k| k.bytes_written).sum()
    }
}

/// Computes the surgery. Fails if an operation selects nothing, so that a typo never passes
/// as a successful no-op. `name_stream` names new state files.
pub fn plan(
    cp: &dyn StreamSource,
    req: &Request,
    name_stream: &mut dyn FnMut() -> String,
) -> Result<Plan> {
    let mut removals = remove::Removals::default();
    let mut md = cp.metadata().clone();
    let mut changes = Vec::new();
    let mut renamed = Vec::new();
    let mut relocated = Vec::new();
    let mut nothing = String::new();
    let mut kafka_streams = Vec::new();
    let kafka_ops = req
        .operations
        .iter()
        .filter(|o| matches!(o, Operation::Kafka { .. }))
        .count();
    if kafka_ops > 0 && req.operations.len() > 1 {
        return Err(Error::InvalidArgument(
            "a Kafka surgery goes alone in its request".into(),
        ));
    }
    let keyed_ops: Vec<(&Selector, &keyed::KeyedOperation)> = req
        .operations
        .iter()
        .filter_map(|o| match o {
            Operation::Keyed { operators, op } => Some((operators, op)),
            _ => None,
        })
        .collect();
    if !keyed_ops.is_empty() && keyed_ops.len() < req.operations.len() {
        return Err(Error::InvalidArgument(
            "a keyed-state surgery goes in a request of keyed-state surgeries only".into(),
        ));
    }
    let threads = req
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if !keyed_ops.is_empty() {
        if req.depth == Depth::MetadataOnly {
            return Err(Error::InvalidArgument(
                "a keyed state cannot be removed from _metadata only: the keyed meta info in \
                 the state files names it"
                    .into(),
            ));
        }
        let planned = keyed::plan(cp, &mut md, &keyed_ops, name_stream, &mut changes)?;
        let mut plan = finish(req, md, planned.streams, changes, relocated, threads)?;
        plan.keyed = planned.handles;
        return Ok(plan);
    }
    for op in &req.operations {
        let hit = match op {
            Operation::RemoveOperator { operators } => {
                removals.select_operators(&md, operators, &mut changes)?
            }
            Operation::RemoveState { operators, state } => {
                removals.select_states(cp, &md, operators, state, false)?
            }
            Operation::DedupeUnion { operators, state } => {
                removals.select_states(cp, &md, operators, state, true)?
            }
            Operation::RenameOperator { operator, to, name } => {
                let original = cp.metadata();
                let name = name.as_deref();
                rename::rename(
                    original,
                    &mut md,
                    &mut renamed,
                    operator,
                    to,
                    name,
                    &mut changes,
                )?
            }
            Operation::Relocate { from, to, outside } => {
                let (moved, changes) = (&mut relocated, &mut changes);
                relocate::relocate(&mut md, from, to, moved, changes, &mut nothing)? || *outside
            }
            Operation::Kafka { operators, op } => kafka::apply(
                cp,
                &mut md,
                operators,
                op,
                name_stream,
                &mut changes,
                &mut kafka_streams,
                &mut nothing,
            )?,
            Operation::Keyed { .. } => unreachable!("keyed requests are planned above"),
        };
        if !hit {
            return Err(Error::NothingSelected(if nothing.is_empty() {
                format!("{} selects nothing in this checkpoint", op.describe())
            } else {
                nothing
            }));
        }
    }
    rename::check_unique(&md, &renamed)?;
    let mut new_streams = removals.apply(cp, &mut md, req.depth, name_stream, &mut changes)?;
    new_streams.append(&mut kafka_streams);
    finish(req, md, new_streams, changes, relocated, threads)
}

/// The plan of the new model: with `--reference-unchanged`, the unchanged files referenced where
/// they are; and its `_metadata`'s size.
fn finish(
    req: &Request,
    mut md: CheckpointMetadata,
    new_streams: Vec<NewStream>,
    mut changes: Vec<Change>,
    relocated: Vec<(String, String)>,
    threads: usize,
) -> Result<Plan> {
    if let Some(base) = &req.reference_unchanged {
        let new_files: std::collections::HashSet<&str> = new_streams
            .iter()
            .filter_map(|s| s.file_name.as_deref())
            .collect();
        relocate::reference_unchanged(&mut md, base, &new_files, &mut changes);
    }
    let metadata_bytes = metadata_size(&md)?;
    Ok(Plan {
        changes,
        metadata: md,
        new_streams,
        depth: req.depth,
        relocated,
        metadata_bytes,
        keyed: Vec::new(),
        threads,
    })
}

/// The new `_metadata`'s size; a string the request brought in (a uid, a name, a relocated path)
/// longer than Flink's writeUTF takes is refused here, not written short.
fn metadata_size(md: &CheckpointMetadata) -> Result<u64> {
    let mut sized = crate::codec::io::Writer::new(std::io::sink());
    md.write(&mut sized)
        .map_err(|e| Error::InvalidArgument(format!("the new _metadata cannot be written: {e}")))?;
    Ok(sized.written())
}

/// Marks a `FileStateHandle` path that `commit::stage` replaces with the new file's path.
pub const ABSOLUTE_PLACEHOLDER: &str = "\u{0}checkpoint-surgeon-output:";

/// Where a stream handle's bytes are, for plans and messages.
pub fn delegate_location(h: &StreamHandle) -> String {
    match h {
        StreamHandle::ByteStream { name, .. } => format!("inline:{name}"),
        StreamHandle::File { path, .. } | StreamHandle::RelativeFile { path, .. } => {
            path.to_string()
        }
        StreamHandle::Segment {
            path, start, size, ..
        } => format!("{path}@{start}+{size}"),
        other => other.kind().to_string(),
    }
}

/// The handle and the new stream that replace the stream of `old` with `pieces`: inline again
/// if it was inline, else a new file named by `name_stream` (relative if it was relative).
pub fn replace_stream(
    old: &StreamHandle,
    pieces: Vec<Bytes>,
    len: u64,
    name_stream: &mut dyn FnMut() -> String,
) -> Result<(StreamHandle, NewStream)> {
    let replaces = delegate_location(old);
    if let StreamHandle::ByteStream { name, .. } = old {
        let handle = StreamHandle::ByteStream {
            name: name.clone(),
            data: Bytes::from(pieces.concat()),
        };
        let stream = NewStream {
            file_name: None,
            replaces,
            pieces: Vec::new(),
            len,
            keyed: None,
        };
        return Ok((handle, stream));
    }
    let file = name_stream();
    checked_relative(&file)?;
    let handle = match old {
        StreamHandle::RelativeFile { .. } => StreamHandle::RelativeFile {
            path: JStr::new(&file),
            size: len as i64,
        },
        _ => StreamHandle::File {
            size: len as i64,
            // Placeholder: `commit::stage` writes the absolute path of the new file.
            path: JStr::new(&format!("{ABSOLUTE_PLACEHOLDER}{file}")),
        },
    };
    let stream = NewStream {
        file_name: Some(file),
        replaces,
        pieces,
        len,
        keyed: None,
    };
    Ok((handle, stream))
}
