//! remove-state, remove-operator and dedupe-union: select what goes, then rewrite the model and
//! (when purging or de-duplicating) the streams of every handle that changes.

use super::cut::{rewrite_stream, HandleEdit, Replacement};
use super::{delegate_location, replace_stream, Change, ChangeAction, Depth, NewStream, Selector};
use crate::codec::handles::Mode;
use crate::codec::io::JStr;
use crate::codec::metadata::CheckpointMetadata;
use crate::codec::opstate;
use crate::codec::snappy;
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};

/// What the removals of a request selected, before anything changes.
#[derive(Default)]
pub struct Removals {
    /// Per (operator index, subtask index, managed?): the edit of that handle.
    edits: HashMap<(usize, i32, bool), HandleEdit>,
    removed_ops: HashSet<usize>,
}

impl Removals {
    /// remove-operator: marks the selected operators.
    pub fn select_operators(
        &mut self,
        md: &CheckpointMetadata,
        operators: &Selector,
        changes: &mut Vec<Change>,
    ) -> Result<bool> {
        if *operators == Selector::All {
            return Err(Error::InvalidArgument(
                "remove-operator needs an operator id, uid or name".into(),
            ));
        }
        let mut hit = false;
        for (i, op) in md.operators.iter().enumerate() {
            if operators.matches(op) && self.removed_ops.insert(i) {
                hit = true;
                changes.push(Change::operator(
                    op,
                    ChangeAction::RemoveOperator,
                    String::new(),
                ));
            }
        }
        Ok(hit)
    }

    /// remove-state (`dedupe` false) or dedupe-union: marks the state in every handle of the
    /// selected operators; for dedupe, which elements stay (the first copy of each value).
    pub fn select_states(
        &mut self,
        cp: &dyn StreamSource,
        md: &CheckpointMetadata,
        operators: &Selector,
        state: &JStr,
        dedupe: bool,
    ) -> Result<bool> {
        let mut hit = false;
        let mut seen: HashMap<usize, HashSet<Bytes>> = HashMap::new();
        for at in md.operator_handles() {
            let op = &md.operators[at.operator];
            if !operators.matches(op) || self.removed_ops.contains(&at.operator) {
                continue;
            }
            let h = at.handle;
            let Some(pos) = h.states.iter().position(|s| s.name == *state) else {
                continue;
            };
            hit = true;
            let edit = self
                .edits
                .entry((at.operator, at.subtask, at.managed))
                .or_default();
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
            let delegate = h
                .delegate
                .as_ref()
                .ok_or_else(|| Error::InvalidArgument(format!("state '{state}' has no stream")))?;
            let location = delegate_location(delegate);
            let stream = cp.stream_bytes(delegate)?;
            let header = opstate::parse_header(&stream, h).map_err(|e| e.in_file(&location))?;
            let seen = seen.entry(at.operator).or_default();
            let st = &h.states[pos];
            if header.compressed && opstate::shares_offsets(&st.offsets) {
                // Flink 1.18: the elements share frames and one offset. Decode them, keep the
                // first copy of each, and write the kept ones anew, one frame run per element.
                let fe = opstate::framed_elements(&stream, &header, st)
                    .map_err(|e| e.in_file(&location))?;
                let (mut bytes, mut offsets, mut keep) = (Vec::new(), Vec::new(), Vec::new());
                for &(a, b) in &fe.elements {
                    let element = &fe.bytes[a..b];
                    let k = seen.insert(Bytes::copy_from_slice(element));
                    if k {
                        offsets.push(bytes.len() as u64);
                        snappy::push_frames(&mut bytes, element);
                    }
                    keep.push(k);
                }
                edit.keep.insert(pos, keep);
                edit.replace.insert(
                    pos,
                    Replacement {
                        range: (fe.from, fe.to),
                        bytes: Bytes::from(bytes),
                        offsets,
                    },
                );
                continue;
            }
            let ranges = &opstate::stream_element_ranges(&header, h, stream.len() as u64)?[pos];
            let mut keep = Vec::with_capacity(ranges.len());
            for &(a, b) in ranges {
                // A compressed element is compared by what its frames hold.
                let element = opstate::element_bytes(&stream, header.compressed, (a, b))
                    .map_err(|e| e.in_file(&location))?;
                keep.push(seen.insert(element));
            }
            edit.keep.insert(pos, keep);
        }
        Ok(hit)
    }

    /// Applies the selected removals to `md`, cutting streams where needed; returns the new
    /// streams and adds a change per state and handle.
    pub fn apply(
        self,
        cp: &dyn StreamSource,
        md: &mut CheckpointMetadata,
        depth: Depth,
        name_stream: &mut dyn FnMut() -> String,
        changes: &mut Vec<Change>,
    ) -> Result<Vec<NewStream>> {
        let purge = depth == Depth::Purge;
        let mut new_streams = Vec::new();
        let hex_ids: Vec<String> = md.operators.iter().map(|o| o.hex_id()).collect();
        let mut handles: Vec<_> = md
            .operator_handles_mut()
            .filter(|at| {
                self.edits
                    .contains_key(&(at.operator, at.subtask, at.managed))
            })
            .collect();
        handles.sort_by_key(|at| (at.operator, at.subtask, at.managed));
        for at in handles {
            let edit = &self.edits[&(at.operator, at.subtask, at.managed)];
            let h = at.handle;
            let old = h.clone();
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
                changes.push(Change {
                    operator: hex_ids[at.operator].clone(),
                    subtask: at.subtask,
                    state: s.name.to_string(),
                    action: match (removing, purge) {
                        (true, true) => ChangeAction::PurgeState,
                        (true, false) => ChangeAction::DropMapEntry,
                        (false, _) => ChangeAction::DedupeUnion,
                    },
                    elements_before: s.offsets.len() as i64,
                    elements_after: match keep {
                        Some(k) if !removing => k.iter().filter(|x| **x).count() as i64,
                        _ => 0,
                    },
                    bytes_removed: stream_edit
                        .as_ref()
                        .map_or(0, |e| e.removed_per_state.get(&pos).copied().unwrap_or(0)),
                    detail: String::new(),
                });
            }
            let Some(e) = stream_edit else {
                h.states = old
                    .states
                    .iter()
                    .enumerate()
                    .filter(|(p, _)| !edit.remove.contains(p))
                    .map(|(_, s)| s.clone())
                    .collect();
                continue;
            };
            h.states = e.states;
            let delegate = old.delegate.as_ref().ok_or_else(|| {
                Error::InvalidArgument("an operator state handle without a stream".into())
            })?;
            let (handle, stream) = replace_stream(delegate, e.pieces, e.len, name_stream)?;
            // A file-merging handle becomes a plain one: its stream is no segment now.
            if stream.file_name.is_some() {
                h.file_merging = None;
            }
            h.delegate = Some(handle);
            new_streams.push(stream);
        }
        let mut i = 0;
        md.operators.retain(|_| {
            i += 1;
            !self.removed_ops.contains(&(i - 1))
        });
        Ok(new_streams)
    }
}
