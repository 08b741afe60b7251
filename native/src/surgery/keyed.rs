//! remove-keyed-state and rename-keyed-state: a keyed state leaves (or is renamed in) every keyed
//! handle of the selected operators whose meta info names it, in every snapshot kind:
//! - key-groups handles (canonical savepoints, heap checkpoints, RocksDB's full checkpoints up to
//!   Flink 1.15): a new stream ([`rewrite`]). Inline streams are rewritten here (they are small);
//!   file streams are rewritten by `commit::stage`, in parallel across handles, each streamed in
//!   bounded memory, and their new offsets and size set in `_metadata` there.
//! - RocksDB handles (incremental checkpoints, native savepoints, full checkpoints from 1.16): a new
//!   meta info stream without the state; the MANIFEST (a private file) with the record RocksDB
//!   itself logs when it drops the state's column family appended, under a new file name (the old
//!   checkpoint's files are never changed; CURRENT still names it by the same key); and the column
//!   family's SST files out of the handle, each checked against its own properties. No SST data is
//!   read or written. A rename writes the MANIFEST anew with the column family added under its new
//!   name ([`manifest::renamed`]), the files stay.
//! - changelog handles: refused, with the way out (their log names states by ids of its own).
//!
//! When the last state of a handle goes, the handle goes: Flink snapshots a keyed backend without
//! states as no handle at all.
//!
//! Timers (priority-queue states, `_timer_state/event_<name>` and `_timer_state/processing_<name>`)
//! are only touched when named. Removing them is allowed (a timer explosion can keep a job down
//! too), and the plan says what it means; renaming them only within their prefix, because an
//! operator finds its timers by that prefix and its timer service's name, so any other name would
//! never be read again.

use super::{delegate_location, replace_stream, Change, ChangeAction, NewStream, Selector};
use crate::codec::handles::{KeyGroups, KeyedHandle, StreamHandle};
use crate::codec::io::JStr;
use crate::codec::keyed::handle::{key_groups_format, stream_name, SnapshotFormat};
use crate::codec::keyed::manifest::{self, Manifest};
use crate::codec::keyed::meta::{self, BackendStateType, KeyedBackendMeta};
use crate::codec::keyed::rewrite::{self, edit_header, new_ids, Rewritten, StreamEdit};
use crate::codec::keyed::{handle::read_key_groups_stream, sst, RangeSource};
use crate::codec::metadata::{CheckpointMetadata, SubtaskEntry, Subtasks};
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// A keyed-state surgery.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyedOperation {
    /// Removes a keyed state: its META_INFO entry and its data.
    RemoveState { state: JStr },
    /// Renames a keyed state, so that a job registering the new name reads its old values.
    RenameState { from: JStr, to: JStr },
}

impl KeyedOperation {
    pub fn describe(&self, operators: &Selector) -> String {
        match self {
            KeyedOperation::RemoveState { state } => {
                format!("keyed state '{state}' of {}", operators.describe())
            }
            KeyedOperation::RenameState { from, .. } => {
                format!("keyed state '{from}' of {}", operators.describe())
            }
        }
    }

    fn state(&self) -> &JStr {
        match self {
            KeyedOperation::RemoveState { state } => state,
            KeyedOperation::RenameState { from, .. } => from,
        }
    }
}

const TIMER_PREFIXES: [&str; 2] = ["_timer_state/event_", "_timer_state/processing_"];
const TIMER_STATE: &str = "_timer_state/";

/// A key-groups stream that `commit::stage` rewrites.
#[derive(Clone, Debug)]
pub struct StreamRewrite {
    /// Flink's handle code (3, 7 or 12) of the key-groups handle.
    pub code: u8,
    /// The old stream.
    pub source: StreamHandle,
    pub edit: StreamEdit,
}

/// One keyed handle the plan changes.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedHandleChange {
    /// The operator's id (hex) and the subtask.
    pub operator: String,
    pub subtask: i32,
    pub format: SnapshotFormat,
    pub removed: Vec<String>,
    /// (old name, new name)
    pub renamed: Vec<(String, String)>,
    /// The bytes read of the handle: by the plan (meta info, MANIFEST, SST footers and
    /// properties) and, for a key-groups stream rewritten when staged, its whole stream.
    pub bytes_read: u64,
    /// The bytes written for the handle: exact when `exact`, else an estimate (a removal from a
    /// key-groups file is counted when staged).
    pub bytes_written: u64,
    pub exact: bool,
    /// RocksDB: the SST files that left the handle (their keys), with their bytes and entries.
    pub files_dropped: Vec<String>,
    pub bytes_dropped: u64,
    /// The handle's last state went: the handle is gone.
    pub handle_dropped: bool,
}

/// What the keyed operations of a request plan.
#[derive(Default)]
pub struct KeyedPlan {
    pub streams: Vec<NewStream>,
    pub handles: Vec<KeyedHandleChange>,
}

/// Applies the keyed operations to `md`. Fails if an operation selects no state, or if a handle
/// of a selected operator cannot be changed safely (nothing is then written).
pub fn plan(
    cp: &dyn StreamSource,
    md: &mut CheckpointMetadata,
    ops: &[(&Selector, &KeyedOperation)],
    name_stream: &mut dyn FnMut() -> String,
    changes: &mut Vec<Change>,
) -> Result<KeyedPlan> {
    for (_, op) in ops {
        if let KeyedOperation::RenameState { from, to } = op {
            if to.is_empty() || to.as_bytes().len() > u16::MAX as usize || to == from {
                return Err(Error::InvalidArgument(format!(
                    "'{to}' is no new name for keyed state '{from}' (a different, non-empty name \
                     of at most 65535 bytes)"
                )));
            }
        }
    }
    let mut out = KeyedPlan::default();
    let mut hits = vec![false; ops.len()];
    // per operation: the keyed states of the operators it selects, for its NOTHING_SELECTED
    let mut seen: Vec<BTreeSet<String>> = vec![BTreeSet::new(); ops.len()];
    let mut selected_any = vec![false; ops.len()];
    for op in &mut md.operators {
        let mine: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0.matches(op)).collect();
        if mine.is_empty() {
            continue;
        }
        for &i in &mine {
            selected_any[i] = true;
        }
        let prefix = if op.max_parallelism > 128 { 2 } else { 1 };
        let hex = op.hex_id();
        let Subtasks::List(list) = &mut op.subtasks else {
            continue;
        };
        for entry in list {
            let SubtaskEntry::State(subtask, st) = entry else {
                continue;
            };
            let Some(h) = &st.managed_keyed else { continue };
            let at = HandleAt {
                operator: &hex,
                subtask: *subtask,
                prefix,
            };
            let Some((meta, edit)) = edit_of(cp, h, &at, ops, &mine, &mut hits, &mut seen)? else {
                continue;
            };
            let mut change = KeyedHandleChange {
                operator: hex.clone(),
                subtask: *subtask,
                format: SnapshotFormat::Canonical,
                removed: Vec::new(),
                renamed: Vec::new(),
                bytes_read: 0,
                bytes_written: 0,
                exact: true,
                files_dropped: Vec::new(),
                bytes_dropped: 0,
                handle_dropped: edit.iter().all(Option::is_none),
            };
            for (s, name) in meta.states.iter().zip(&edit) {
                match name {
                    None => change.removed.push(s.name.to_string()),
                    Some(n) if *n != s.name => {
                        change.renamed.push((s.name.to_string(), n.to_string()))
                    }
                    Some(_) => {}
                }
            }
            let h = st.managed_keyed.as_mut().expect("a keyed handle");
            let mut e = HandleEdit {
                cp,
                meta: &meta,
                edit: &edit,
                at: &at,
                name_stream: &mut *name_stream,
                streams: &mut out.streams,
                change: &mut change,
                changes: &mut *changes,
            };
            match h {
                KeyedHandle::KeyGroups { code, handle } => {
                    e.change.format = key_groups(&mut e, *code, handle)?
                }
                KeyedHandle::Incremental { .. } => {
                    e.change.format = SnapshotFormat::RocksdbFiles;
                    rocksdb(&mut e, h)?
                }
                _ => unreachable!("edit_of refuses changelog handles"),
            }
            if change.handle_dropped {
                st.managed_keyed = None;
            }
            out.handles.push(change);
        }
    }
    for (i, (sel, op)) in ops.iter().enumerate() {
        if hits[i] {
            continue;
        }
        let what = op.describe(sel);
        return Err(Error::NothingSelected(if !selected_any[i] {
            format!("{what} selects nothing: no operator matches")
        } else if seen[i].is_empty() {
            format!("{what} selects nothing: the selected operators have no keyed state")
        } else {
            format!(
                "{what} selects nothing: the selected operators' keyed states are {}",
                seen[i]
                    .iter()
                    .map(|s| format!("'{s}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }));
    }
    Ok(out)
}

/// Where a handle sits, for messages and plan lines.
struct HandleAt<'a> {
    operator: &'a str,
    subtask: i32,
    prefix: usize,
}

impl HandleAt<'_> {
    fn describe(&self) -> String {
        format!("subtask {} of operator {}", self.subtask, self.operator)
    }
}

/// The meta info of a keyed handle and what the operations make of each of its states (by
/// kvStateId: the new name, None when removed); None when no operation names one of its states.
fn edit_of(
    cp: &dyn StreamSource,
    h: &KeyedHandle,
    at: &HandleAt,
    ops: &[(&Selector, &KeyedOperation)],
    mine: &[usize],
    hits: &mut [bool],
    seen: &mut [BTreeSet<String>],
) -> Result<Option<(KeyedBackendMeta, Vec<Option<JStr>>)>> {
    let meta = match h {
        KeyedHandle::KeyGroups { code, handle } => {
            let Some(d) = &handle.delegate else {
                return Ok(None);
            };
            let name = stream_name(d);
            // in ranges: only the meta info is read here (a remote stream is never fetched whole)
            let stream = cp.open_stream(d).map_err(|e| e.in_file(&name))?;
            key_groups_format(*code, handle, stream.as_ref())
                .map_err(|e| e.in_file(&name))?
                .0
        }
        KeyedHandle::Incremental { meta, .. } => {
            let d = meta.as_ref().ok_or_else(|| {
                Error::format(
                    0,
                    format!(
                        "the meta data stream of the RocksDB handle of {}",
                        at.describe()
                    ),
                    Some("none".into()),
                )
            })?;
            let name = stream_name(d);
            let bytes = cp.stream_bytes(d).map_err(|e| e.in_file(&name))?;
            meta::parse(&bytes).map_err(|e| e.in_file(&name))?
        }
        other => {
            return Err(Error::InvalidArgument(format!(
                "{} holds a changelog state handle ({}): its state change log names states by ids \
                 the log defines itself, so a state cannot be taken out of it safely. Take a \
                 canonical or native savepoint of the job (flink savepoint --type canonical or \
                 --type native), then run this on the savepoint",
                at.describe(),
                other.kind()
            )))
        }
    };
    let mut names: Vec<Option<JStr>> = meta.states.iter().map(|s| Some(s.name.clone())).collect();
    let mut touched = vec![false; names.len()];
    for &i in mine {
        seen[i].extend(meta.states.iter().map(|s| s.name.to_string()));
        let op = ops[i].1;
        let Some(s) = meta.states.iter().position(|s| s.name == *op.state()) else {
            continue;
        };
        if touched[s] {
            return Err(Error::InvalidArgument(format!(
                "keyed state '{}' is named by two operations of the request; do one at a time",
                op.state()
            )));
        }
        touched[s] = true;
        hits[i] = true;
        let state = &meta.states[s];
        match op {
            KeyedOperation::RemoveState { .. } => names[s] = None,
            KeyedOperation::RenameState { from, to } => {
                if meta.states.iter().any(|x| x.name == *to) {
                    return Err(Error::InvalidArgument(format!(
                        "keyed state '{to}' already exists in {}; remove it first (in its own \
                         run) if '{from}' is to take its place",
                        at.describe()
                    )));
                }
                let new = to.to_string();
                let timer_prefix = TIMER_PREFIXES
                    .iter()
                    .find(|p| from.to_string().starts_with(*p));
                let ok = match (state.backend_type, timer_prefix) {
                    (BackendStateType::PriorityQueue, Some(p)) => {
                        new.starts_with(p) && new.len() > p.len()
                    }
                    (BackendStateType::PriorityQueue, None) => true,
                    _ => !new.starts_with(TIMER_STATE),
                };
                if !ok {
                    return Err(Error::InvalidArgument(format!(
                        "keyed state '{from}' cannot be renamed to '{to}': operators find their \
                         timers by the prefixes {} and their timer service's name, so a timer \
                         queue keeps its prefix, and no other state may take one",
                        TIMER_PREFIXES.join(" and ")
                    )));
                }
                names[s] = Some(to.clone());
            }
        }
    }
    Ok(touched.iter().any(|&t| t).then_some((meta, names)))
}

/// The change rows of one handle's edit.
fn change_rows(
    at: &HandleAt,
    meta: &KeyedBackendMeta,
    edit: &[Option<JStr>],
    counts: Option<&[(u64, u64)]>,
    detail: &str,
    changes: &mut Vec<Change>,
) {
    for (i, (s, name)) in meta.states.iter().zip(edit).enumerate() {
        let (action, extra) = match name {
            None => (ChangeAction::RemoveKeyedState, String::new()),
            Some(n) if *n != s.name => (ChangeAction::RenameKeyedState, format!("to '{n}'; ")),
            Some(_) => continue,
        };
        let timers = if s.backend_type == BackendStateType::PriorityQueue {
            "timers: the operator's timers of this queue are gone, so whatever waits for them \
             (a window, a process function's state) is never fired; "
        } else {
            ""
        };
        let (before, bytes) = counts.map_or((-1, -1), |c| (c[i].0 as i64, c[i].1 as i64));
        changes.push(Change {
            operator: at.operator.to_string(),
            subtask: at.subtask,
            state: s.name.to_string(),
            action,
            elements_before: before,
            elements_after: if name.is_none() { 0 } else { before },
            bytes_removed: if name.is_none() { bytes } else { 0 },
            detail: format!(
                "{extra}{}{detail}",
                if name.is_none() { timers } else { "" }
            ),
        });
    }
}

/// One keyed handle's edit: the handle's meta info, each state's new name (None: removed), and
/// where the new streams, the handle's figures and the plan's rows go.
struct HandleEdit<'a> {
    cp: &'a dyn StreamSource,
    meta: &'a KeyedBackendMeta,
    edit: &'a [Option<JStr>],
    at: &'a HandleAt<'a>,
    name_stream: &'a mut dyn FnMut() -> String,
    streams: &'a mut Vec<NewStream>,
    change: &'a mut KeyedHandleChange,
    changes: &'a mut Vec<Change>,
}

/// A key-groups handle: its new stream (rewritten here when inline, else when staged).
fn key_groups(e: &mut HandleEdit, code: u8, handle: &mut KeyGroups) -> Result<SnapshotFormat> {
    let (cp, meta, edit, at) = (e.cp, e.meta, e.edit, e.at);
    let delegate = handle
        .delegate
        .clone()
        .expect("a stream: edit_of checked it");
    let name = stream_name(&delegate);
    let stream = cp.open_stream(&delegate).map_err(|e| e.in_file(&name))?;
    let (_, format) =
        key_groups_format(code, handle, stream.as_ref()).map_err(|e| e.in_file(&name))?;
    // a copy: the mapping would show a change of the file
    let mut source_header = vec![0u8; meta.len];
    stream
        .read_at(0, &mut source_header)
        .map_err(|e| e.in_file(&name))?;
    let header = new_header(&source_header, meta, edit).map_err(|e| e.in_file(&name))?;
    let stream_edit = StreamEdit {
        format,
        meta: meta.clone(),
        source_header: Bytes::from(source_header),
        header,
        ids: new_ids(edit),
        first_key_group: handle.start_key_group,
        offsets: handle.offsets.clone(),
        prefix: at.prefix,
    };
    e.change.bytes_read = stream.len();
    if e.change.handle_dropped {
        e.change.bytes_read = meta.len as u64;
        change_rows(
            at,
            meta,
            edit,
            None,
            "the handle's last state: the handle goes",
            e.changes,
        );
        return Ok(format);
    }
    if let StreamHandle::ByteStream { name: inline, .. } = &delegate {
        // inline: small (below the state backend's memory threshold), rewritten right away
        let mut data = Vec::new();
        let done = rewrite::rewrite(stream.as_ref(), &stream_edit, &mut data, &name)?;
        let new_kg = KeyGroups {
            offsets: done.offsets.clone(),
            delegate: None,
            ..handle.clone()
        };
        check_rewritten(code, &new_kg, &data, &name, &stream_edit, &done)?;
        e.change.bytes_written = data.len() as u64;
        let counts = done.source.as_ref().map(|c| {
            c.iter()
                .map(|s| (s.entries, s.stored_bytes))
                .collect::<Vec<_>>()
        });
        change_rows(
            at,
            meta,
            edit,
            counts.as_deref(),
            &format!("{}, inline in _metadata", format.name()),
            e.changes,
        );
        handle.offsets = done.offsets;
        handle.delegate = Some(StreamHandle::ByteStream {
            name: inline.clone(),
            data: Bytes::from(data),
        });
        return Ok(format);
    }
    let estimate = stream_edit.shifted_len(stream.len());
    e.change.exact = stream_edit.header_only();
    e.change.bytes_written = estimate;
    if stream_edit.header_only() {
        handle.offsets = stream_edit.shifted_offsets();
    }
    let (new_handle, mut new_stream) =
        replace_stream(&delegate, Vec::new(), estimate, &mut *e.name_stream)?;
    change_rows(
        at,
        meta,
        edit,
        None,
        &format!(
            "{}: {} rewritten into {} when staged",
            format.name(),
            delegate_location(&delegate),
            new_stream.file_name.as_deref().unwrap_or("")
        ),
        e.changes,
    );
    new_stream.keyed = Some(StreamRewrite {
        code,
        source: delegate,
        edit: stream_edit,
    });
    handle.delegate = Some(new_handle);
    e.streams.push(new_stream);
    Ok(format)
}

/// The new meta info, checked: it parses, and names exactly the kept states, in order.
fn new_header(header: &[u8], meta: &KeyedBackendMeta, edit: &[Option<JStr>]) -> Result<Bytes> {
    let new = Bytes::from(edit_header(header, meta, edit)?);
    let parsed = meta::parse(&new)?;
    let names: Vec<&JStr> = parsed.states.iter().map(|s| &s.name).collect();
    let expected: Vec<&JStr> = edit.iter().flatten().collect();
    if names != expected || parsed.compressed != meta.compressed {
        return Err(Error::Validation(format!(
            "the new keyed meta info names {names:?}, not {expected:?}"
        )));
    }
    Ok(new)
}

/// Checks a rewritten key-groups stream with the keyed reader, an independent walk of every key
/// group from its new offset: the stream must name exactly the kept states under their new
/// names, and hold for each the entries and bytes the old stream held for it.
pub fn check_rewritten(
    code: u8,
    new_kg: &KeyGroups,
    stream: &dyn RangeSource,
    name: &str,
    edit: &StreamEdit,
    done: &Rewritten,
) -> Result<()> {
    let bad = |what: String| Error::Validation(format!("{name}: the rewritten stream {what}"));
    if stream.len() != done.len || new_kg.offsets.len() != edit.offsets.len() {
        return Err(bad(format!(
            "has {} bytes and {} key groups, not {} and {}",
            stream.len(),
            new_kg.offsets.len(),
            done.len,
            edit.offsets.len()
        )));
    }
    let r = read_key_groups_stream(code, new_kg, stream, name, edit.prefix)
        .map_err(|e| bad(format!("does not read back: {e}")))?;
    let meta = r
        .meta
        .as_ref()
        .expect("a key-groups reading has its meta info");
    // a rename copies the key groups as they are: what the reader could not count in them (a
    // layout it does not know) it cannot count in the copy either
    let notes_ok = r.notes.is_empty() || done.source.is_none();
    if meta.len != edit.header.len() || r.format != edit.format || !notes_ok {
        return Err(bad(format!(
            "reads back as {} with a {}-byte meta info{}",
            r.format.name(),
            meta.len,
            if r.notes.is_empty() {
                String::new()
            } else {
                format!(" and {:?}", r.notes)
            }
        )));
    }
    let Some(source) = &done.source else {
        return Ok(());
    };
    for (old, new) in edit.ids.iter().enumerate() {
        let Some(new) = new else { continue };
        let (was, is) = (&source[old], &r.states[*new as usize]);
        if (was.entries, was.raw_bytes) != (is.entries, is.raw_bytes) {
            return Err(bad(format!(
                "holds {} entries ({} bytes) of state '{}', the old one {} ({} bytes)",
                is.entries,
                is.raw_bytes,
                meta.states[*new as usize].name,
                was.entries,
                was.raw_bytes
            )));
        }
    }
    Ok(())
}

/// Counts the bytes read through it (the SST footers and properties a plan reads).
struct Counting<'a> {
    src: &'a dyn RangeSource,
    read: AtomicU64,
}

impl RangeSource for Counting<'_> {
    fn len(&self) -> u64 {
        self.src.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.src.read_at(offset, buf)
    }
}

/// The last part of a handle key: the file name in RocksDB's instance directory.
fn file_name(key: &JStr) -> String {
    let k = key.to_string();
    k.rsplit('/').next().unwrap_or(&k).to_string()
}

/// A RocksDB handle: new meta info stream, new MANIFEST, the dropped column families' files out.
fn rocksdb(e: &mut HandleEdit, h: &mut KeyedHandle) -> Result<()> {
    let (cp, meta, edit, at) = (e.cp, e.meta, e.edit, e.at);
    let KeyedHandle::Incremental {
        meta: meta_handle,
        shared,
        private,
        ..
    } = h
    else {
        unreachable!("a RocksDB handle");
    };
    let meta_stream = meta_handle.clone().expect("edit_of read it");
    let meta_name = stream_name(&meta_stream);
    let meta_bytes = cp
        .stream_bytes(&meta_stream)
        .map_err(|e| e.in_file(&meta_name))?;
    // the MANIFEST that CURRENT names, a private file
    let find = |list: &[(JStr, Option<StreamHandle>)], name: &str| {
        list.iter()
            .position(|(k, h)| file_name(k) == name && h.is_some())
    };
    let current = find(private, "CURRENT").ok_or_else(|| {
        Error::format(
            0,
            format!(
                "a CURRENT file among the private files of the RocksDB handle of {}",
                at.describe()
            ),
            Some("none".into()),
        )
    })?;
    let current_handle = private[current].1.clone().expect("found with a handle");
    let current_bytes = cp.stream_bytes(&current_handle)?;
    let manifest_name = String::from_utf8_lossy(&current_bytes).trim().to_string();
    let mi = find(private, &manifest_name)
        .filter(|_| manifest_name.starts_with("MANIFEST-"))
        .ok_or_else(|| {
            Error::format(
                0,
                format!(
                    "the MANIFEST that CURRENT names among the private files of the RocksDB handle \
                     of {}",
                    at.describe()
                ),
                Some(format!("'{manifest_name}'")),
            )
        })?;
    let manifest_handle = private[mi].1.clone().expect("found with a handle");
    let mname = stream_name(&manifest_handle);
    let manifest_bytes = cp
        .stream_bytes(&manifest_handle)
        .map_err(|e| e.in_file(&mname))?;
    let m = manifest::parse(&manifest_bytes).map_err(|e| e.in_file(&mname))?;
    e.change.bytes_read =
        meta_bytes.len() as u64 + current_bytes.len() as u64 + manifest_bytes.len() as u64;

    // the column family of each state the request names
    let family = |state: &JStr| {
        m.by_name(&state.to_string()).ok_or_else(|| {
            Error::format(
                0,
                format!("a live column family '{state}' (a state of the meta info)"),
                Some("none in the MANIFEST".into()),
            )
            .in_file(&mname)
        })
    };
    let mut drops: Vec<(u32, String)> = Vec::new();
    let mut renames: Vec<(u32, Vec<u8>)> = Vec::new();
    for (s, name) in meta.states.iter().zip(edit) {
        match name {
            None => drops.push((family(&s.name)?.id, s.name.to_string())),
            Some(n) if *n != s.name => {
                let cf = family(&s.name)?;
                let new = n.to_string();
                if m.column_families.values().any(|c| c.name == new) {
                    return Err(Error::InvalidArgument(format!(
                        "{mname}: the MANIFEST of {} added a column family '{new}' before (it was \
                         dropped since); RocksDB would take the renamed family for that one. \
                         Restore the job once and take a new checkpoint or native savepoint \
                         (RocksDB writes a new MANIFEST when it opens), then rename",
                        at.describe()
                    )));
                }
                renames.push((cf.id, new.into_bytes()));
            }
            Some(_) => {}
        }
    }

    // the SST files of the dropped families, checked against their own properties
    let dropped_ids: Vec<u32> = drops.iter().map(|d| d.0).collect();
    let mut removed_entries = vec![(0u64, 0u64); meta.states.len()];
    for list in [&mut *shared, &mut *private] {
        let mut keep = Vec::with_capacity(list.len());
        for (k, fh) in list.drain(..) {
            let number = sst::file_number(&file_name(&k));
            let cf = number.and_then(|n| m.live_file(n));
            let (Some(handle), Some(cf)) = (&fh, cf) else {
                keep.push((k, fh));
                continue;
            };
            if !dropped_ids.contains(&cf.id) {
                keep.push((k, fh));
                continue;
            }
            let fh = handle;
            let name = stream_name(fh);
            let stream = cp.open_stream(fh).map_err(|e| e.in_file(&name))?;
            let counting = Counting {
                src: stream.as_ref(),
                read: AtomicU64::new(0),
            };
            let props = sst::read(&counting)
                .map_err(|e| e.in_file(&name))?
                .properties;
            e.change.bytes_read += counting.read.load(Ordering::Relaxed);
            let id_ok = props
                .column_family_id
                .is_none_or(|id| id == cf.id as u64 || id == sst::UNKNOWN_COLUMN_FAMILY);
            let name_ok = props
                .column_family_name
                .as_ref()
                .is_none_or(|n| n.is_empty() || *n == cf.name);
            if !id_ok || !name_ok {
                return Err(Error::format(
                    0,
                    format!(
                        "an SST file of column family {} '{}', as the MANIFEST {mname} says",
                        cf.id, cf.name
                    ),
                    Some(format!(
                        "column family {:?} '{}' in its properties",
                        props.column_family_id,
                        props.column_family_name.as_deref().unwrap_or("")
                    )),
                )
                .in_file(&name));
            }
            let size = fh.state_size().max(0) as u64;
            if let Some(i) = meta
                .states
                .iter()
                .position(|s| s.name.to_string() == cf.name)
            {
                removed_entries[i].0 += props.num_entries;
                removed_entries[i].1 += size;
            }
            e.change.files_dropped.push(k.to_string());
            e.change.bytes_dropped += size;
        }
        *list = keep;
    }
    change_rows(
        at,
        meta,
        edit,
        Some(&removed_entries),
        "RocksDB files: entries and bytes are RocksDB's figures of the SST files that leave the \
         handle (entries include tombstones and versions not compacted yet)",
        e.changes,
    );
    if e.change.handle_dropped {
        return Ok(());
    }

    // the new MANIFEST: RocksDB's drop records appended, or the log written anew for a rename
    let mut edits = Vec::with_capacity(drops.len());
    for (id, _) in &drops {
        edits.push(manifest::drop_edit(&m, *id)?);
    }
    let pieces: Vec<Bytes> = if renames.is_empty() {
        vec![
            manifest_bytes.slice(..m.end as usize),
            Bytes::from(manifest::frame(m.end, &edits)),
        ]
    } else {
        let base = manifest::renamed(&manifest_bytes, &renames).map_err(|e| e.in_file(&mname))?;
        let tail = manifest::frame(base.len() as u64, &edits);
        vec![Bytes::from(base), Bytes::from(tail)]
    };
    let new_manifest = Bytes::from(pieces.concat());
    check_manifest(&m, &manifest::parse(&new_manifest)?, &drops, &renames)
        .map_err(|e| e.in_file(&mname))?;
    let header = new_header(&meta_bytes, meta, edit).map_err(|e| e.in_file(&meta_name))?;
    e.change.bytes_written = new_manifest.len() as u64 + header.len() as u64;

    let (new_meta, s) = replace_stream(
        &meta_stream,
        vec![header.clone()],
        header.len() as u64,
        &mut *e.name_stream,
    )?;
    e.streams.push(s);
    *meta_handle = Some(new_meta);
    let (new_man, s) = replace_stream(
        &manifest_handle,
        vec![new_manifest.clone()],
        new_manifest.len() as u64,
        &mut *e.name_stream,
    )?;
    e.streams.push(s);
    let mi = find(private, &manifest_name).expect("the MANIFEST stays a private file");
    private[mi].1 = Some(new_man);
    Ok(())
}

/// The new MANIFEST must leave every column family as it was but the dropped ones (gone, with
/// their files) and the renamed ones (same id and files, new name).
fn check_manifest(
    old: &Manifest,
    new: &Manifest,
    drops: &[(u32, String)],
    renames: &[(u32, Vec<u8>)],
) -> Result<()> {
    for (id, cf) in &old.column_families {
        let after = new.column_families.get(id);
        let expected_name = renames
            .iter()
            .find(|r| r.0 == *id)
            .map_or(cf.name.clone(), |r| {
                String::from_utf8_lossy(&r.1).into_owned()
            });
        let ok = match after {
            None => false,
            Some(a) if drops.iter().any(|d| d.0 == *id) => a.dropped && a.files.is_empty(),
            Some(a) => a.dropped == cf.dropped && a.files == cf.files && a.name == expected_name,
        };
        if !ok {
            return Err(Error::Validation(format!(
                "the new MANIFEST does not leave column family {id} '{}' as planned",
                cf.name
            )));
        }
    }
    if new.next_file_number != old.next_file_number || new.last_sequence != old.last_sequence {
        return Err(Error::Validation(
            "the new MANIFEST changes the next file number or the last sequence".into(),
        ));
    }
    Ok(())
}
