//! Cutting operator-state streams: removed states (their header entry and elements) and dropped
//! union elements are cut out, a state whose data is written anew replaces its old range, every
//! remaining offset is shifted, and the header's state counts are patched. The result is a list of
//! slices of the old stream (and the new bytes), not a copy.

use super::delegate_location;
use crate::codec::handles::{Offsets, OperatorHandle, StateMetaInfo};
use crate::codec::metainfo::EntryKind;
use crate::codec::opstate;
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
pub struct HandleEdit {
    /// State positions (in the handle's map) to remove.
    pub remove: HashSet<usize>,
    /// State position -> which of its elements to keep.
    pub keep: HashMap<usize, Vec<bool>>,
    /// State position -> its data written anew (elements that share compressed frames).
    pub replace: HashMap<usize, Replacement>,
}

/// New bytes for a state's data: `range` of the old stream is replaced by `bytes`, in which the
/// state's elements start at `offsets`.
pub struct Replacement {
    pub range: (u64, u64),
    pub bytes: Bytes,
    pub offsets: Vec<u64>,
}

pub struct StreamEdit {
    pub states: Vec<StateMetaInfo>,
    pub pieces: Vec<Bytes>,
    pub len: u64,
    pub removed_per_state: HashMap<usize, i64>,
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
pub fn rewrite_stream(
    cp: &dyn StreamSource,
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
    let mut inserts: HashMap<u64, Bytes> = HashMap::new();
    let mut removed_per_state: HashMap<usize, i64> = HashMap::new();
    let (mut list_removed, mut broadcast_removed) = (0i16, 0i16);
    for (pos, s) in h.states.iter().enumerate() {
        if edit.remove.contains(&pos) {
            let mut removed = 0i64;
            if purge {
                if let Some(e) = header.entry(&s.name) {
                    cuts.push((e.start as u64, e.end as u64));
                    removed += (e.end - e.start) as i64;
                    if e.kind == EntryKind::List {
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
        } else if let Some(r) = edit.replace.get(&pos) {
            inserts.insert(r.range.0, r.bytes.clone());
            cuts.push(r.range);
            removed_per_state.insert(pos, (r.range.1 - r.range.0) as i64 - r.bytes.len() as i64);
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
    // Merge touching or duplicate ranges (equal offsets share one range); a replaced range stays
    // on its own, with its new bytes.
    let mut merged: Vec<(u64, u64, Option<Bytes>)> = Vec::with_capacity(cuts.len());
    for (a, b) in cuts {
        let insert = inserts.remove(&a);
        match merged.last_mut() {
            Some(last) if a < last.1 && (insert.is_some() || last.2.is_some()) => {
                return Err(Error::InvalidArgument(format!(
                    "{location}: overlapping edits at byte {a}"
                )))
            }
            Some(last) if a <= last.1 && insert.is_none() && last.2.is_none() => {
                last.1 = last.1.max(b)
            }
            _ => merged.push((a, b, insert)),
        }
    }
    // removed_before[i] = bytes cut (less bytes inserted) before merged[i].0
    let mut removed_before = Vec::with_capacity(merged.len() + 1);
    let mut acc = 0i64;
    for (a, b, insert) in &merged {
        removed_before.push(acc);
        acc += (b - a) as i64 - insert.as_ref().map_or(0, |i| i.len() as i64);
    }
    let shift = |o: u64| -> u64 {
        // number of cuts starting at or before o
        let i = merged.partition_point(|&(a, _, _)| a <= o);
        if i == 0 {
            o
        } else {
            let (a, b, ref insert) = merged[i - 1];
            let before = removed_before[i - 1];
            let inserted = insert.as_ref().map_or(0, |i| i.len() as i64);
            (if o < b {
                a as i64 - before
            } else {
                o as i64 - before - (b - a) as i64 + inserted
            }) as u64
        }
    };
    let mut states = Vec::with_capacity(h.states.len());
    for (pos, s) in h.states.iter().enumerate() {
        if edit.remove.contains(&pos) {
            continue;
        }
        let new: Vec<i64> = match (edit.replace.get(&pos), edit.keep.get(&pos)) {
            (Some(r), _) => {
                let at = shift(r.range.0);
                r.offsets.iter().map(|o| (at + o) as i64).collect()
            }
            (None, Some(keep)) => s
                .offsets
                .iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|(o, _)| shift(o as u64) as i64)
                .collect(),
            (None, None) => s.offsets.iter().map(|o| shift(o as u64) as i64).collect(),
        };
        states.push(StateMetaInfo {
            name: s.name.clone(),
            mode: s.mode,
            offsets: Offsets::from_slice(&new),
        });
    }
    // The pieces: everything outside the cuts, with the header counts patched.
    let mut pieces = Vec::new();
    let mut at = 0u64;
    let counts = [
        (header.list_count_at as u64, list_removed),
        (header.broadcast_count_at as u64, broadcast_removed),
    ];
    for (a, b, insert) in merged {
        opstate::push_patched(&mut pieces, &stream, at, a, &counts);
        pieces.extend(insert);
        at = b;
    }
    opstate::push_patched(&mut pieces, &stream, at, stream.len() as u64, &counts);
    let len = (stream.len() as i64 - acc) as u64;
    Ok(StreamEdit {
        states,
        pieces,
        len,
        removed_per_state,
    })
}
