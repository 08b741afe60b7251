//! The keyed readers (`codec::keyed`) on edited real keyed state and on any bytes: a keyed stream
//! of a seed checkpoint (canonical savepoint, heap checkpoint, both inline) with byte edits, a
//! cut and other key-group offsets; a RocksDB handle's inline meta stream, SST file or MANIFEST
//! with the same edits; and the raw input as each of them. Every reading that succeeds must add up
//! (header, states, overhead and unattributed bytes make the stream); nothing may panic.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use checkpoint_surgeon::codec::handles::{KeyGroups, KeyedHandle, Offsets, StreamHandle};
use checkpoint_surgeon::codec::keyed::handle::read_key_groups_stream;
use checkpoint_surgeon::codec::keyed::{manifest, meta, sst};
use checkpoint_surgeon::codec::metadata;
use libfuzzer_sys::fuzz_target;

#[path = "keyed_seeds.rs"]
mod keyed_seeds;
use keyed_seeds::SEEDS;

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u8,
    handle: u8,
    part: u8,
    edits: Vec<(u32, u8)>,
    cut: Option<u32>,
    offsets: Option<Vec<i64>>,
    prefix: bool,
    raw: Vec<u8>,
}

fn edit(data: &[u8], input: &Input) -> Bytes {
    keyed_seeds::edit(data, &input.edits, input.cut)
}

fn check_stream(code: u8, kg: &KeyGroups, stream: &Bytes, prefix: usize) {
    if let Ok(r) = read_key_groups_stream(code, kg, stream, "fuzz", prefix) {
        let stored: u64 = r.states.iter().map(|s| s.stored_bytes).sum();
        assert_eq!(
            r.header_bytes + stored + r.overhead_bytes + r.unattributed_bytes,
            r.total_bytes
        );
        assert_eq!(r.total_bytes, stream.len() as u64);
        assert_eq!(r.states.len(), r.meta.as_ref().map_or(0, |m| m.states.len()));
    }
}

fn check_blob(key: &str, blob: &Bytes) {
    if key.ends_with(".sst") {
        if let Ok(f) = sst::read(blob) {
            assert_eq!(f.size, blob.len() as u64);
        }
    } else if key.starts_with("MANIFEST") {
        let _ = manifest::parse(blob);
    } else if let Ok(m) = meta::parse(blob) {
        assert_eq!(m.len, blob.len());
        assert!(m.states.iter().all(|s| s.start < s.end && s.end <= blob.len()));
    }
}

fuzz_target!(|input: Input| {
    let md = metadata::parse(Bytes::from_static(SEEDS[input.seed as usize % SEEDS.len()]))
        .expect("seeds are real Flink files");
    let handles: Vec<&KeyedHandle> = md
        .operators
        .iter()
        .flat_map(|o| o.subtask_states())
        .filter_map(|(_, st)| st.managed_keyed.as_ref())
        .collect();
    let prefix = if input.prefix { 2 } else { 1 };
    if !handles.is_empty() {
        match handles[input.handle as usize % handles.len()] {
            KeyedHandle::KeyGroups { code, handle } => {
                if let Some(StreamHandle::ByteStream { data, .. }) = &handle.delegate {
                    let stream = edit(data, &input);
                    let mut kg = handle.clone();
                    if let Some(o) = &input.offsets {
                        kg.offsets = Offsets::from_slice(o);
                    }
                    check_stream(*code, &kg, &stream, prefix);
                }
            }
            KeyedHandle::Incremental {
                meta, shared, private, ..
            } => {
                let mut blobs: Vec<(String, &Bytes)> = Vec::new();
                if let Some(StreamHandle::ByteStream { data, .. }) = meta {
                    blobs.push(("meta".into(), data));
                }
                for (k, h) in shared.iter().chain(private) {
                    if let Some(StreamHandle::ByteStream { data, .. }) = h {
                        blobs.push((k.to_string(), data));
                    }
                }
                if !blobs.is_empty() {
                    let (key, data) = &blobs[input.part as usize % blobs.len()];
                    check_blob(key, &edit(data, &input));
                }
            }
            _ => {}
        }
    }
    // the raw input as each kind of file
    let raw = Bytes::from(input.raw.clone());
    for key in ["meta", "000001.sst", "MANIFEST-000001"] {
        check_blob(key, &raw);
    }
    if let Some(o) = &input.offsets {
        let kg = KeyGroups {
            start_key_group: input.handle as i32,
            offsets: Offsets::from_slice(o),
            delegate: None,
            id: None,
        };
        check_stream(if input.prefix { 7 } else { 12 }, &kg, &raw, prefix);
    }
});
