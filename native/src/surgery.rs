//! State surgery on a parsed checkpoint: remove a named operator state (from the handle maps
//! only, or purged from the streams too), remove an operator, de-duplicate a union state.
//! Keyed, channel, coordinator and master state are never touched: their bytes pass through.
//!
//! `plan` computes the new model and the new state streams without writing anything; the
//! streams are lists of slices of the old ones, so nothing large is copied until `apply`.

use crate::checkpoint::{checked_relative, Checkpoint};
pub use crate::commit::random_file_name;
use crate::error::{Error, Result};
use crate::handles::{Mode, Offsets, OperatorHandle, StreamHandle};
use crate::io::JStr;
use crate::metadata::{CheckpointMetadata, OperatorState, SubtaskEntry, Subtasks};
use crate::opstate;
use crate::uid::operator_id_for_uid;
use bytes::Bytes;
use std::collections::{HashMap, HashSet};

/// Which operators an operation applies to.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    /// Every operator that has the named state.
    All,
    /// The 32-hex-digit OperatorID.
    Id([u8; 16]),
    /// A user-specified uid (hashed as Flink does).
    Uid(String),
    /// The operator name (metadata V5+ stores it).
    Name(String),
}

impl Selector {
    pub fn parse(kind: &str, value: &str) -> Result<Selector> {
        Ok(match kind {
            "all" => Selector::All,
            "uid" => Selector::Uid(value.to_string()),
            "name" => Selector::Name(value.to_string()),
            "id" => {
                let v = value.trim();
                if v.len() != 32 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(Error::InvalidArgument(format!(
                        "operator id '{value}' is not 32 hex digits"
                    )));
                }
                let mut id = [0u8; 16];
                for (i, b) in id.iter_mut().enumerate() {
                    *b = u8::from_str_radix(&v[2 * i..2 * i + 2], 16)
                        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
                }
                Selector::Id(id)
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown operator selector '{other}' (all, id, uid, name)"
                )))
            }
        })
    }

    fn matches(&self, op: &OperatorState) -> bool {
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
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    RemoveState { operators: Selector, state: String },
    RemoveOperator { operators: Selector },
    DedupeUnion { operators: Selector, state: String },
}

/// How deep a state removal goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Drop the name from the handle maps only; the stream header still names the state.
    MetadataOnly,
    /// Also cut the state's header entry and elements out of every stream.
    Purge,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub operations: Vec<Operation>,
    pub depth: Depth,
}

impl Request {
    /// Parses the request text the Java side sends: a first line `depth purge|metadata-only`,
    /// then one operation per line, fields separated by tabs:
    /// `remove-state <selector-kind> <selector> <state>`, `remove-operator <kind> <selector>`,
    /// `dedupe-union <kind> <selector> <state>`.
    pub fn parse(text: &str) -> Result<Request> {
        let mut depth = Depth::Purge;
        let mut operations = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            let field = |i: usize| {
                f.get(i).copied().ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "surgery request line '{line}' has too few fields"
                    ))
                })
            };
            match f[0] {
                "depth" => {
                    depth = match field(1)? {
                        "purge" => Depth::Purge,
                        "metadata-only" => Depth::MetadataOnly,
                        d => return Err(Error::InvalidArgument(format!("unknown depth '{d}'"))),
                    }
                }
                "remove-state" => operations.push(Operation::RemoveState {
                    operators: Selector::parse(field(1)?, field(2)?)?,
                    state: field(3)?.to_string(),
                }),
                "remove-operator" => operations.push(Operation::RemoveOperator {
                    operators: Selector::parse(field(1)?, field(2)?)?,
                }),
                "dedupe-union" => operations.push(Operation::DedupeUnion {
                    operators: Selector::parse(field(1)?, field(2)?)?,
                    state: field(3)?.to_string(),
                }),
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown surgery operation '{other}'"
                    )))
                }
            }
        }
        if operations.is_empty() {
            return Err(Error::InvalidArgument(
                "no surgery operation was requested".into(),
            ));
        }
        Ok(Request { operations, depth })
    }
}

/// One line of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub operator: String,
    /// -1 for a whole-operator change.
    pub subtask: i32,
    pub state: String,
    pub action: &'static str,
    pub elements_before: i64,
    pub elements_after: i64,
    /// Bytes the change removes from the state streams (0 for map-only changes).
    pub bytes_removed: i64,
}

/// A new state stream: its bytes are the concatenation of `pieces`.
#[derive(Clone, Debug)]
pub struct NewStream {
    /// File name in the output directory (None: inline, the bytes go into `_metadata`).
    pub file_name: Option<String>,
    /// What it replaces (the old handle's location).
    pub replaces: String,
    pub pieces: Vec<Bytes>,
    pub len: u64,
}

pub struct Plan {
    pub changes: Vec<Change>,
    pub metadata: CheckpointMetadata,
    pub new_streams: Vec<NewStream>,
    pub depth: Depth,
}

/// Computes the surgery. Fails if an operation selects nothing, so that a typo never passes
/// as a successful no-op.
pub fn plan(
    cp: &Checkpoint,
    req: &Request,
    name_stream: &mut dyn FnMut() -> String,
) -> Result<Plan> {
    let mut md = cp.metadata.clone();
    let mut changes = Vec::new();
    // Per (operator index, subtask index, managed/raw): names to remove from that handle,
    // and per state the element indices to keep.
    let mut edits: HashMap<(usize, i32, bool), HandleEdit> = HashMap::new();
    let mut removed_ops: HashSet<usize> = HashSet::new();

    for op_req in &req.operations {
        let mut hit = false;
        match op_req {
            Operation::RemoveOperator { operators } => {
                if *operators == Selector::All {
                    return Err(Error::InvalidArgument(
                        "remove-operator needs an operator id, uid or name".into(),
                    ));
                }
                for (i, op) in md.operators.iter().enumerate() {
                    if operators.matches(op) && removed_ops.insert(i) {
                        hit = true;
                        changes.push(Change {
                            operator: op.hex_id(),
                            subtask: -1,
                            state: String::new(),
                            action: "remove-operator",
                            elements_before: 0,
                            elements_after: 0,
                            bytes_removed: 0,
                        });
                    }
                }
            }
            Operation::RemoveState { operators, state }
            | Operation::DedupeUnion { operators, state } => {
                let dedupe = matches!(op_req, Operation::DedupeUnion { .. });
                let name = JStr::new(state);
                for (i, op) in md.operators.iter().enumerate() {
                    if !operators.matches(op) || removed_ops.contains(&i) {
                        continue;
                    }
                    let mut op_hit = false;
                    let mut seen: HashSet<Bytes> = HashSet::new();
                    for (index, st) in op.subtask_states() {
                        for (managed, h) in
                            [(true, st.managed_operator()), (false, st.raw_operator())]
                        {
                            let Some(h) = h else { continue };
                            let Some(pos) = h.states.iter().position(|s| s.name == name) else {
                                continue;
                            };
                            op_hit = true;
                            let edit = edits.entry((i, index, managed)).or_default();
                            if !dedupe {
                                edit.remove.insert(pos);
                                continue;
                            }
                            if h.states[pos].mode != Mode::Union {
                                return Err(Error::InvalidArgument(format!(
                                    "state '{state}' of operator {} is {}, not UNION; only union state can be de-duplicated",
                                    op.hex_id(),
                                    h.states[pos].mode.name()
                                )));
                            }
                            let delegate = h.delegate.as_ref().ok_or_else(|| {
                                Error::InvalidArgument(format!("state '{state}' has no stream"))
                            })?;
                            let stream = cp.stream_bytes(delegate)?;
                            let header = opstate::parse_header(&stream, h)?;
                            opstate::check_frames_cuttable(&stream, &header, h)?;
                            let ranges = &opstate::element_ranges(h, stream.len() as u64)?[pos];
                            let keep: Vec<bool> = ranges
                                .iter()
                                .map(|&(a, b)| seen.insert(stream.slice(a as usize..b as usize)))
                                .collect();
                            edit.keep.insert(pos, keep);
                        }
                    }
                    hit |= op_hit;
                }
            }
        }
        if !hit {
            return Err(Error::NothingSelected(format!(
                "{} selects nothing in this checkpoint",
                describe_op(op_req)
            )));
        }
    }

    // Apply the edits to the model, rewriting streams when purging.
    let mut new_streams = Vec::new();
    let mut keys: Vec<_> = edits.keys().copied().collect();
    keys.sort();
    for key @ (op_index, subtask, managed) in keys {
        let edit = &edits[&key];
        let op = &mut md.operators[op_index];
        let hex = op.hex_id();
        let Subtasks::List(list) = &mut op.subtasks else {
            continue;
        };
        let Some(st) = list.iter_mut().find_map(|e| match e {
            SubtaskEntry::State(i, s) if *i == subtask => Some(s),
            _ => None,
        }) else {
            continue;
        };
        let slot = if managed {
            &mut st.managed_operator
        } else {
            &mut st.raw_operator
        };
        let Some((_, Some(h))) = slot else { continue };
        let old = h.clone();
        let purge = req.depth == Depth::Purge;
        let stream_edit = if purge || !edit.keep.is_empty() {
            Some(rewrite_stream(cp, &old, edit, purge)?)
        } else {
            None
        };
        for (pos, s) in old.states.iter().enumerate() {
            let removing = edit.remove.contains(&pos);
            let keep = edit.keep.get(&pos);
            if !removing && keep.is_none() {
                continue;
            }
            let after = if removing {
                0
            } else {
                keep.map_or(0, |k| k.iter().filter(|x| **x).count()) as i64
            };
            changes.push(Change {
                operator: hex.clone(),
                subtask,
                state: s.name.to_string(),
                action: if removing {
                    if purge {
                        "purge-state"
                    } else {
                        "drop-map-entry"
                    }
                } else {
                    "dedupe-union"
                },
                elements_before: s.offsets.len() as i64,
                elements_after: after,
                bytes_removed: stream_edit
                    .as_ref()
                    .map_or(0, |e| e.removed_per_state.get(&pos).copied().unwrap_or(0)),
            });
        }
        match stream_edit {
            None => {
                h.states = old
                    .states
                    .iter()
                    .enumerate()
                    .filter(|(p, _)| !edit.remove.contains(p))
                    .map(|(_, s)| s.clone())
                    .collect();
            }
            Some(e) => {
                h.states = e.states;
                let delegate = old
                    .delegate
                    .as_ref()
                    .expect("rewrite_stream checked the delegate");
                let replaces = delegate_location(delegate);
                match delegate {
                    StreamHandle::ByteStream { name, .. } => {
                        let mut data = Vec::with_capacity(e.len as usize);
                        for p in &e.pieces {
                            data.extend_from_slice(p);
                        }
                        h.delegate = Some(StreamHandle::ByteStream {
                            name: name.clone(),
                            data: Bytes::from(data),
                        });
                    }
                    _ => {
                        let file = name_stream();
                        checked_relative(&file)?;
                        h.delegate = Some(match delegate {
                            StreamHandle::RelativeFile { .. } => StreamHandle::RelativeFile {
                                path: JStr::new(&file),
                                size: e.len as i64,
                            },
                            _ => StreamHandle::File {
                                size: e.len as i64,
                                // Placeholder: `apply` writes the absolute path of the output file.
                                path: JStr::new(&format!("{ABSOLUTE_PLACEHOLDER}{file}")),
                            },
                        });
                        // A file-merging handle becomes a plain one: its stream is no segment now.
                        h.file_merging = None;
                        new_streams.push(NewStream {
                            file_name: Some(file),
                            replaces,
                            pieces: e.pieces,
                            len: e.len,
                        });
                        continue;
                    }
                }
                new_streams.push(NewStream {
                    file_name: None,
                    replaces,
                    pieces: Vec::new(),
                    len: e.len,
                });
            }
        }
    }
    let mut i = 0;
    md.operators.retain(|_| {
        i += 1;
        !removed_ops.contains(&(i - 1))
    });
    Ok(Plan {
        changes,
        metadata: md,
        new_streams,
        depth: req.depth,
    })
}

/// Marks a `FileStateHandle` path that `apply` must replace with the output file's path.
pub const ABSOLUTE_PLACEHOLDER: &str = "\u{0}checkpoint-surgeon-output:";

fn describe_op(op: &Operation) -> String {
    let sel = |s: &Selector| match s {
        Selector::All => "any operator".to_string(),
        Selector::Id(id) => format!(
            "operator id {}",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
        Selector::Uid(u) => format!("operator uid '{u}'"),
        Selector::Name(n) => format!("operator name '{n}'"),
    };
    match op {
        Operation::RemoveState { operators, state } => {
            format!("state '{state}' of {}", sel(operators))
        }
        Operation::RemoveOperator { operators } => sel(operators),
        Operation::DedupeUnion { operators, state } => {
            format!("union state '{state}' of {}", sel(operators))
        }
    }
}

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

#[derive(Default)]
struct HandleEdit {
    /// State positions (in the handle's map) to remove.
    remove: HashSet<usize>,
    /// State position -> which of its elements to keep.
    keep: HashMap<usize, Vec<bool>>,
}

struct StreamEdit {
    states: Vec<crate::handles::StateMetaInfo>,
    pieces: Vec<Bytes>,
    len: u64,
    removed_per_state: HashMap<usize, i64>,
}

/// Adds a cut, extending the previous one when they touch (a removed state's elements are
/// usually one contiguous run, so millions of elements collapse into one cut).
fn push_cut(cuts: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    match cuts.last_mut() {
        Some(last) if last.1 == a => last.1 = b,
        _ => cuts.push((a, b)),
    }
}

/// Cuts removed states (header entry and elements) and dropped elements out of a stream and
/// shifts every remaining offset. With `purge` false only dropped elements are cut.
fn rewrite_stream(
    cp: &Checkpoint,
    h: &OperatorHandle,
    edit: &HandleEdit,
    purge: bool,
) -> Result<StreamEdit> {
    let delegate = h.delegate.as_ref().ok_or_else(|| {
        Error::InvalidArgument("an operator state handle without a stream".into())
    })?;
    let location = delegate_location(delegate);
    let stream = cp.stream_bytes(delegate)?;
    let header = opstate::parse_header(&stream, h).map_err(|e| e.in_file(&location))?;
    opstate::check_frames_cuttable(&stream, &header, h).map_err(|e| e.in_file(&location))?;
    // Per-element ranges only where elements are cut one by one; a removed state in the usual
    // block layout is one cut, however many elements it has.
    let blocks = header.blocks.clone();
    let all_ranges = match blocks {
        Some(_) => None,
        None => Some(
            opstate::element_ranges(h, stream.len() as u64).map_err(|e| e.in_file(&location))?,
        ),
    };
    let ranges_of = |pos: usize| -> Vec<(u64, u64)> {
        match (&all_ranges, &blocks) {
            (Some(all), _) => all[pos].clone(),
            (None, Some(b)) => b[pos].map_or_else(Vec::new, |(_, end)| {
                opstate::ranges_in_block(&h.states[pos].offsets, end)
            }),
            (None, None) => Vec::new(),
        }
    };
    // Byte ranges to cut, and the two i16 counts to patch.
    let mut cuts: Vec<(u64, u64)> = Vec::new();
    let mut removed_per_state: HashMap<usize, i64> = HashMap::new();
    let (mut list_removed, mut broadcast_removed) = (0i16, 0i16);
    for (pos, s) in h.states.iter().enumerate() {
        if edit.remove.contains(&pos) {
            let mut removed = 0i64;
            if purge {
                if let Some(e) = header.entry(&s.name) {
                    cuts.push((e.start as u64, e.end as u64));
                    removed += (e.end - e.start) as i64;
                    if e.kind == opstate::EntryKind::List {
                        list_removed += 1;
                    } else {
                        broadcast_removed += 1;
                    }
                }
                match (&blocks, all_ranges.is_none()) {
                    (Some(b), true) => {
                        if let Some((a, end)) = b[pos] {
                            push_cut(&mut cuts, a, end);
                            removed += (end - a) as i64;
                        }
                    }
                    _ => {
                        for (a, b) in ranges_of(pos) {
                            push_cut(&mut cuts, a, b);
                            removed += (b - a) as i64;
                        }
                    }
                }
            }
            removed_per_state.insert(pos, removed);
        } else if let Some(keep) = edit.keep.get(&pos) {
            let mut removed = 0i64;
            for ((a, b), &k) in ranges_of(pos).into_iter().zip(keep) {
                if !k {
                    push_cut(&mut cuts, a, b);
                    removed += (b - a) as i64;
                }
            }
            removed_per_state.insert(pos, removed);
        }
    }
    cuts.sort_unstable();
    // Merge touching or duplicate ranges (equal offsets share one range).
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(cuts.len());
    for (a, b) in cuts {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    // removed_before[i] = bytes cut before merged[i].0
    let mut removed_before = Vec::with_capacity(merged.len() + 1);
    let mut acc = 0u64;
    for &(a, b) in &merged {
        removed_before.push(acc);
        acc += b - a;
    }
    let shift = |o: u64| -> u64 {
        // number of cuts starting at or before o
        let i = merged.partition_point(|&(a, _)| a <= o);
        if i == 0 {
            o
        } else {
            let (a, b) = merged[i - 1];
            let before = removed_before[i - 1];
            if o < b {
                a - before
            } else {
                o - before - (b - a)
            }
        }
    };
    let mut states = Vec::with_capacity(h.states.len());
    for (pos, s) in h.states.iter().enumerate() {
        if edit.remove.contains(&pos) {
            continue;
        }
        let new: Vec<i64> = match edit.keep.get(&pos) {
            Some(keep) => s
                .offsets
                .iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|(o, _)| shift(o as u64) as i64)
                .collect(),
            None => s.offsets.iter().map(|o| shift(o as u64) as i64).collect(),
        };
        states.push(crate::handles::StateMetaInfo {
            name: s.name.clone(),
            mode: s.mode,
            offsets: Offsets::from_slice(&new),
        });
    }
    // The pieces: everything outside the cuts, with the header counts patched.
    let mut pieces = Vec::new();
    let mut at = 0u64;
    let patch = |pieces: &mut Vec<Bytes>, from: u64, to: u64| {
        // emit stream[from..to], replacing the i16 counts when they lie inside
        let mut f = from;
        for (count_at, removed) in [
            (header.list_count_at as u64, list_removed),
            (header.broadcast_count_at as u64, broadcast_removed),
        ] {
            if removed != 0 && count_at >= f && count_at + 2 <= to {
                if count_at > f {
                    pieces.push(stream.slice(f as usize..count_at as usize));
                }
                let old =
                    i16::from_be_bytes([stream[count_at as usize], stream[count_at as usize + 1]]);
                pieces.push(Bytes::copy_from_slice(&(old - removed).to_be_bytes()));
                f = count_at + 2;
            }
        }
        if to > f {
            pieces.push(stream.slice(f as usize..to as usize));
        }
    };
    for &(a, b) in &merged {
        patch(&mut pieces, at, a);
        at = b;
    }
    patch(&mut pieces, at, stream.len() as u64);
    let len = stream.len() as u64 - acc;
    Ok(StreamEdit {
        states,
        pieces,
        len,
        removed_per_state,
    })
}

/// The size `_metadata` will have after the surgery, without writing it anywhere.
pub fn new_metadata_size(plan: &Plan) -> u64 {
    let mut w = crate::io::Writer::new(std::io::sink());
    // A sink never fails; a too-long string cannot come out of a parsed model.
    let _ = plan.metadata.write(&mut w);
    w.written()
}

/// The binary layout read by `io.checkpointsurgeon.SurgeryPlan.decode`: the plan, then what
/// [`crate::commit::stage`] wrote, if it ran.
pub fn encode_plan(
    cp: &Checkpoint,
    plan: &Plan,
    staged: Option<&crate::commit::Staged>,
) -> Vec<u8> {
    let mut e = crate::io::Enc(Vec::with_capacity(1024));
    e.i32(0x4353_5031);
    e.str(&cp.metadata_path.display().to_string());
    e.str(match plan.depth {
        Depth::Purge => "purge",
        Depth::MetadataOnly => "metadata-only",
    });
    e.i64(cp.bytes.len() as i64);
    e.i64(new_metadata_size(plan) as i64);
    e.i32(plan.changes.len() as i32);
    for c in &plan.changes {
        e.str(&c.operator);
        e.i32(c.subtask);
        e.str(&c.state);
        e.str(c.action);
        e.i64(c.elements_before);
        e.i64(c.elements_after);
        e.i64(c.bytes_removed);
    }
    e.i32(plan.new_streams.len() as i32);
    for s in &plan.new_streams {
        e.str(s.file_name.as_deref().unwrap_or(""));
        e.str(&s.replaces);
        e.i64(s.len as i64);
    }
    e.i32(plan.metadata.operators.len() as i32);
    match staged {
        None => e.bool(false),
        Some(st) => {
            e.bool(true);
            e.str(&st.metadata_tmp.display().to_string());
            e.i64(st.metadata_bytes as i64);
            for list in [&st.written, &st.unchanged_relative] {
                e.i32(list.len() as i32);
                for p in list {
                    e.str(&p.to_string());
                }
            }
        }
    }
    e.0
}
