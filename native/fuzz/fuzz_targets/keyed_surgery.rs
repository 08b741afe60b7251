//! The keyed surgery (`surgery::keyed`, `codec::keyed::rewrite`, the MANIFEST writer) on edited
//! real keyed state: a seed checkpoint's inline keyed stream (canonical savepoint, heap
//! checkpoint) or a part of an inline RocksDB handle (meta info, MANIFEST, SST file) with byte
//! edits and a cut, then remove-keyed-state or rename-keyed-state of one of its states; and the
//! key-groups rewriter on the edited stream directly. An accepted plan must hold what it promises:
//! the new stream or MANIFEST reads back without the state (or with it renamed). Nothing may
//! panic.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use checkpoint_surgeon::codec::handles::{KeyedHandle, StreamHandle};
use checkpoint_surgeon::codec::keyed::handle::{key_groups_format, read_key_groups_stream};
use checkpoint_surgeon::codec::keyed::rewrite::{edit_header, new_ids, rewrite, StreamEdit};
use checkpoint_surgeon::codec::keyed::{manifest, meta};
use checkpoint_surgeon::codec::metadata::{self, CheckpointMetadata, SubtaskEntry, Subtasks};
use checkpoint_surgeon::codec::StreamSource;
use checkpoint_surgeon::surgery::{plan, Request, Selector};
use libfuzzer_sys::fuzz_target;

#[path = "keyed_seeds.rs"]
mod keyed_seeds;
use keyed_seeds::SEEDS;

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u8,
    handle: u8,
    part: u8,
    state: u8,
    rename: bool,
    edits: Vec<(u32, u8)>,
    cut: Option<u32>,
}

/// A checkpoint whose state is all inline.
struct Inline(CheckpointMetadata);

impl StreamSource for Inline {
    fn metadata(&self) -> &CheckpointMetadata {
        &self.0
    }
    fn name(&self) -> String {
        "fuzz".into()
    }
    fn metadata_len(&self) -> u64 {
        0
    }
    fn stream_bytes(&self, h: &StreamHandle) -> checkpoint_surgeon::Result<Bytes> {
        match h {
            StreamHandle::ByteStream { data, .. } => Ok(data.clone()),
            _ => Err(checkpoint_surgeon::Error::InvalidArgument(
                "not inline".into(),
            )),
        }
    }
}

fn edit(data: &[u8], input: &Input) -> Bytes {
    keyed_seeds::edit(data, &input.edits, input.cut)
}

/// The keyed handles of the model, mutable, in file order.
fn keyed_mut(md: &mut CheckpointMetadata) -> Vec<&mut KeyedHandle> {
    let mut v = Vec::new();
    for op in &mut md.operators {
        if let Subtasks::List(l) = &mut op.subtasks {
            for e in l {
                if let SubtaskEntry::State(_, st) = e {
                    if let Some(h) = &mut st.managed_keyed {
                        v.push(h);
                    }
                }
            }
        }
    }
    v
}

fuzz_target!(|input: Input| {
    let mut md = metadata::parse(Bytes::from_static(SEEDS[input.seed as usize % SEEDS.len()]))
        .expect("seeds are real Flink files");
    let mut hs = keyed_mut(&mut md);
    if hs.is_empty() {
        return;
    }
    let n = hs.len();
    let h = &mut *hs[input.handle as usize % n];
    // the state named, from the unedited meta info; then the edit
    let state = match h {
        KeyedHandle::KeyGroups { code, handle } => {
            let Some(StreamHandle::ByteStream { data, .. }) = handle.delegate.clone() else {
                return;
            };
            let Ok((m, format)) = key_groups_format(*code, handle, &data) else {
                return;
            };
            if m.states.is_empty() {
                return;
            }
            let s = input.state as usize % m.states.len();
            let edited = edit(&data, &input);
            // the rewriter on the edited stream, with an edit planned on the original
            let names: Vec<_> = m
                .states
                .iter()
                .enumerate()
                .map(|(i, x)| (i != s).then(|| x.name.clone()))
                .collect();
            if let Ok(header) = edit_header(&data[..m.len], &m, &names) {
                let e = StreamEdit {
                    format,
                    meta: m.clone(),
                    source_header: data.slice(..m.len),
                    header: Bytes::from(header),
                    ids: new_ids(&names),
                    first_key_group: handle.start_key_group,
                    offsets: handle.offsets.clone(),
                    prefix: 1,
                };
                let mut out = Vec::new();
                if let Ok(done) = rewrite(&edited, &e, &mut out, "fuzz") {
                    assert_eq!(done.len, out.len() as u64);
                }
            }
            if let Some(StreamHandle::ByteStream { data, .. }) = &mut handle.delegate {
                *data = edited;
            }
            m.states[s].name.to_string()
        }
        KeyedHandle::Incremental {
            meta: m,
            shared,
            private,
            ..
        } => {
            let Some(StreamHandle::ByteStream { data, .. }) = m else {
                return;
            };
            let Ok(parsed) = meta::parse(data) else {
                return;
            };
            if parsed.states.is_empty() {
                return;
            }
            let name = parsed.states[input.state as usize % parsed.states.len()]
                .name
                .to_string();
            let mut parts: Vec<&mut Bytes> = vec![data];
            for (_, h) in shared.iter_mut().chain(private.iter_mut()) {
                if let Some(StreamHandle::ByteStream { data, .. }) = h {
                    parts.push(data);
                }
            }
            let k = input.part as usize % parts.len();
            *parts[k] = edit(parts[k], &input);
            name
        }
        _ => return,
    };
    let req = if input.rename {
        Request::rename_keyed_state(Selector::All, &state, "renamed-by-the-fuzzer")
    } else {
        Request::remove_keyed_state(Selector::All, &state)
    };
    let cp = Inline(md);
    let mut n = 0;
    let Ok(p) = plan(&cp, &req, &mut || {
        n += 1;
        format!("f{n}")
    }) else {
        return;
    };
    // what an accepted plan promises, handle by handle
    let new_name = "renamed-by-the-fuzzer";
    for c in &p.keyed {
        let op = p
            .metadata
            .operators
            .iter()
            .find(|o| o.hex_id() == c.operator)
            .expect("the plan's operator");
        let prefix = if op.max_parallelism > 128 { 2 } else { 1 };
        let h = op
            .subtask_states()
            .find(|(i, _)| *i == c.subtask)
            .and_then(|(_, st)| st.managed_keyed.as_ref());
        let Some(h) = h else {
            assert!(c.handle_dropped);
            continue;
        };
        match h {
            KeyedHandle::KeyGroups { code, handle } => {
                let Some(StreamHandle::ByteStream { data, .. }) = &handle.delegate else {
                    continue;
                };
                let r = read_key_groups_stream(*code, handle, data, "fuzz", prefix)
                    .expect("an accepted inline rewrite reads back");
                let names: Vec<String> = r
                    .meta
                    .unwrap()
                    .states
                    .iter()
                    .map(|s| s.name.to_string())
                    .collect();
                assert!(!names.contains(&state));
                assert_eq!(names.iter().any(|n| n == new_name), input.rename);
            }
            KeyedHandle::Incremental { private, .. } => {
                for (k, h) in private {
                    if let (true, Some(StreamHandle::ByteStream { data, .. })) =
                        (k.to_string().starts_with("MANIFEST-"), h)
                    {
                        let m = manifest::parse(data).expect("an accepted MANIFEST reads back");
                        assert!(m.by_name(&state).is_none());
                        assert_eq!(m.by_name(new_name).is_some(), input.rename);
                    }
                }
            }
            _ => unreachable!("only key-groups and RocksDB handles are changed"),
        }
    }
});
