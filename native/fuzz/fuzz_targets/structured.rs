//! Structure-aware: typed edits (operators, subtasks, handles, offsets, names, channel and keyed
//! handles) applied to the parsed model of a seed checkpoint that real Flink wrote; the edited
//! model must write out and parse back to exactly itself, and inspection and planning must not
//! panic on it.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::codec::handles::{Offsets, StreamHandle};
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::codec::metadata::{self, SubtaskEntry, Subtasks};
use checkpoint_surgeon::surgery::{self, Request, Selector};
use checkpoint_surgeon::{report::describe, report::inspect};
use libfuzzer_sys::fuzz_target;

const SEEDS: &[&[u8]] = &[
    include_bytes!("../../../tests/fixtures/1.15.4/operator-state-inline/_metadata"),
    include_bytes!("../../../tests/fixtures/1.15.4/stale-union/_metadata"),
    include_bytes!("../../../tests/fixtures/1.15.4/unaligned/_metadata"),
    include_bytes!("../../../tests/fixtures/1.15.4/keyed-rocksdb-incremental/_metadata"),
    include_bytes!("../../../tests/fixtures/1.20.3/file-merging/_metadata"),
    include_bytes!("../../../tests/fixtures/1.20.3/finished-source/_metadata"),
    include_bytes!("../../../tests/fixtures/2.3.0/unaligned/_metadata"),
    include_bytes!("../../../tests/fixtures/2.3.0/savepoint-native/_metadata"),
];

#[derive(Arbitrary, Debug)]
enum Edit {
    DropOperator(u8),
    DuplicateOperator(u8),
    SetParallelism(u8, i32),
    FinishSubtask(u8, u8),
    FullyFinish(u8),
    SetOffsets(u8, u8, u8, Vec<i64>),
    RenameState(u8, u8, u8, String),
    DropState(u8, u8, u8),
    InlineData(u8, u8, Vec<u8>),
    DropKeyed(u8, u8),
    DropChannels(u8, u8),
    SetCheckpointId(i64),
}

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u8,
    edits: Vec<Edit>,
}

fn pick<T>(v: &mut [T], i: u8) -> Option<&mut T> {
    if v.is_empty() {
        None
    } else {
        let n = v.len();
        v.get_mut(i as usize % n)
    }
}

fuzz_target!(|input: Input| {
    let seed = SEEDS[input.seed as usize % SEEDS.len()];
    let mut md = metadata::parse(Bytes::from_static(seed)).expect("seeds are real Flink files");
    for e in input.edits.into_iter().take(16) {
        match e {
            Edit::DropOperator(i) => {
                if !md.operators.is_empty() {
                    let n = md.operators.len();
                    md.operators.remove(i as usize % n);
                }
            }
            Edit::DuplicateOperator(i) => {
                // a copy under a fresh id: two operators with one id are refused by the parser
                if let Some(mut op) = pick(&mut md.operators, i).cloned() {
                    let n = md.operators.len() as u64;
                    op.id[..8].copy_from_slice(&(0xC5C5_0000_0000_0000u64 | n).to_be_bytes());
                    if md.operators.iter().all(|o| o.id != op.id) {
                        md.operators.push(op);
                    }
                }
            }
            Edit::SetParallelism(i, p) => {
                // within what the parser accepts: 1 <= parallelism <= max parallelism
                if let Some(op) = pick(&mut md.operators, i) {
                    op.parallelism = p.clamp(1, op.max_parallelism.max(1));
                }
            }
            Edit::FinishSubtask(i, j) => {
                if let Some(op) = pick(&mut md.operators, i) {
                    if let Subtasks::List(l) = &mut op.subtasks {
                        if let Some(e) = pick(l, j) {
                            let idx = match e {
                                SubtaskEntry::Finished(x) | SubtaskEntry::State(x, _) => *x,
                            };
                            *e = SubtaskEntry::Finished(idx.max(0));
                        }
                    }
                }
            }
            Edit::FullyFinish(i) => {
                if md.version >= 3 {
                    if let Some(op) = pick(&mut md.operators, i) {
                        op.subtasks = Subtasks::FullyFinished;
                        op.coordinator = None;
                    }
                }
            }
            Edit::SetOffsets(i, j, k, offs) => with_state(&mut md, i, j, k, |h, pos| {
                h.states[pos].offsets = Offsets::from_slice(&offs)
            }),
            Edit::RenameState(i, j, k, name) => {
                if name.encode_utf16().count() < 20_000 {
                    with_state(&mut md, i, j, k, |h, pos| {
                        h.states[pos].name = JStr::new(&name)
                    })
                }
            }
            Edit::DropState(i, j, k) => with_state(&mut md, i, j, k, |h, pos| {
                h.states.remove(pos);
            }),
            Edit::InlineData(i, j, data) => with_subtask(&mut md, i, j, |st| {
                if let Some((_, Some(h))) = &mut st.managed_operator {
                    if let Some(StreamHandle::ByteStream { data: d, .. }) = &mut h.delegate {
                        *d = Bytes::from(data);
                    }
                }
            }),
            Edit::DropKeyed(i, j) => with_subtask(&mut md, i, j, |st| st.managed_keyed = None),
            Edit::DropChannels(i, j) => with_subtask(&mut md, i, j, |st| {
                st.input_channels.clear();
                st.output_channels.clear();
            }),
            Edit::SetCheckpointId(id) => md.checkpoint_id = id.max(0),
        }
    }
    let bytes = md.to_vec();
    let again =
        metadata::parse(Bytes::from(bytes.clone())).expect("an edited model must parse back");
    assert_eq!(again, md);
    let _ = describe::describe(&again);
    let cp = Checkpoint::from_bytes("fuzz", None, Bytes::from(bytes)).expect("parsed above");
    let _ = inspect::inspect(&cp).encode();
    let req = Request::remove_state(Selector::All, "topic-partition-offset-states");
    if let Ok(plan) = surgery::plan(&cp, &req, &mut || "new-file".to_string()) {
        let again =
            metadata::parse(Bytes::from(plan.metadata.to_vec())).expect("planned model parses");
        assert_eq!(again, plan.metadata);
    }
});

fn with_subtask(
    md: &mut checkpoint_surgeon::codec::metadata::CheckpointMetadata,
    i: u8,
    j: u8,
    f: impl FnOnce(&mut checkpoint_surgeon::codec::metadata::SubtaskState),
) {
    if let Some(op) = pick(&mut md.operators, i) {
        if let Subtasks::List(l) = &mut op.subtasks {
            if let Some(SubtaskEntry::State(_, st)) = pick(l, j) {
                f(st);
            }
        }
    }
}

fn with_state(
    md: &mut checkpoint_surgeon::codec::metadata::CheckpointMetadata,
    i: u8,
    j: u8,
    k: u8,
    f: impl FnOnce(&mut checkpoint_surgeon::codec::handles::OperatorHandle, usize),
) {
    with_subtask(md, i, j, |st| {
        if let Some((_, Some(h))) = &mut st.managed_operator {
            if !h.states.is_empty() {
                let pos = k as usize % h.states.len();
                f(h, pos);
            }
        }
    });
}
