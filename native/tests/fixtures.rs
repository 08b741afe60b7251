//! Every `_metadata` that real Flink wrote under tests/fixtures (see tests/fixtures/README.md
//! for the generator) must parse, write back to the identical bytes, and have operator-state
//! stream headers that agree with their handles.

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::{Mode, StreamHandle};
use checkpoint_surgeon::codec::metainfo::EntryKind;
use checkpoint_surgeon::codec::opstate;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::{codec::metadata, report::inspect};
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut out = Vec::new();
    for version in std::fs::read_dir(&root).expect("tests/fixtures exists") {
        let version = version.unwrap().path();
        if !version.is_dir() {
            continue;
        }
        for fixture in std::fs::read_dir(&version).unwrap() {
            let md = fixture.unwrap().path().join("_metadata");
            if md.is_file() {
                out.push(md);
            }
        }
    }
    out.sort();
    assert!(
        out.len()
            >= std::env::var("MIN_FIXTURES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(20),
        "expected the generated fixtures of every Flink version, found {}",
        out.len()
    );
    out
}

#[test]
fn every_fixture_round_trips_byte_identically() {
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let md = metadata::parse(Bytes::from(bytes.clone()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            md.to_vec() == bytes,
            "{}: re-written bytes differ",
            path.display()
        );
    }
}

#[test]
fn every_readable_operator_state_stream_header_matches_its_handle() {
    let mut streams = 0;
    for path in fixtures() {
        let cp = Checkpoint::open(&path).unwrap();
        for op in &cp.metadata.operators {
            for (index, st) in op.subtask_states() {
                for h in [st.managed_operator(), st.raw_operator()]
                    .into_iter()
                    .flatten()
                {
                    let Some(delegate) = &h.delegate else {
                        continue;
                    };
                    if matches!(
                        delegate,
                        StreamHandle::File { .. } | StreamHandle::Segment { .. }
                    ) {
                        // absolute paths point into the generator's temp dir
                        continue;
                    }
                    let stream = cp.stream_bytes(delegate).unwrap_or_else(|e| {
                        panic!("{} {} #{index}: {e}", path.display(), op.hex_id())
                    });
                    let header = opstate::parse_header(&stream, h).unwrap_or_else(|e| {
                        panic!("{} {} #{index}: {e}", path.display(), op.hex_id())
                    });
                    streams += 1;
                    assert_eq!(
                        header.entries.len(),
                        h.states.len(),
                        "{}: header and handle name different states",
                        path.display()
                    );
                    for s in &h.states {
                        let e = header.entry(&s.name).unwrap_or_else(|| {
                            panic!("{}: no header entry for {}", path.display(), s.name)
                        });
                        assert_eq!(e.mode.to_string(), s.mode.name());
                        assert_eq!(e.kind == EntryKind::Broadcast, s.mode == Mode::Broadcast);
                        assert!(!e.serializers.is_empty());
                    }
                    let ranges = opstate::element_ranges(h, stream.len() as u64).unwrap();
                    let data: u64 = ranges.iter().flatten().map(|(a, b)| b - a).sum();
                    if !header.compressed {
                        assert_eq!(
                            data + header.data_start as u64,
                            stream.len() as u64,
                            "{}: header plus elements must cover the stream",
                            path.display()
                        );
                    }
                }
            }
        }
    }
    assert!(
        streams > 20,
        "only {streams} operator state streams were checked"
    );
}

#[test]
fn inspect_reads_every_fixture() {
    for path in fixtures() {
        let cp = Checkpoint::open(&path).unwrap();
        let report = inspect::inspect(&cp);
        assert_eq!(report.operators.len(), cp.metadata.operators.len());
        assert!(!report.encode().is_empty());
    }
}

/// Compressed operator state is reported by value too, from what the frames hold: in both
/// layouts (1.18's shared offsets need the serializer's element layout), every compressed state
/// gets its distinct count, the stale union of `stale-union-compressed` (4 values in each of 3
/// subtasks' 12 elements, 3 copies each) the same digest everywhere and its Kafka partitions, and the states of
/// `operator-state-compressed` the counts of their uncompressed twin `operator-state-files`.
#[test]
fn inspect_reports_the_values_of_compressed_states() {
    let states = |dir: &Path| {
        let report = inspect::inspect(&Checkpoint::open(dir).unwrap());
        let mut v = Vec::new();
        for op in report.operators {
            for s in op.subtasks {
                if let Some(h) = s.managed_operator {
                    assert!(h.stream_error.is_empty(), "{}", h.stream_error);
                    for st in h.states {
                        v.push((h.compressed, st));
                    }
                }
            }
        }
        v
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut compressed = 0;
    for version in std::fs::read_dir(&root).unwrap() {
        let dir = version.unwrap().path();
        let (c, files) = (
            dir.join("operator-state-compressed"),
            dir.join("operator-state-files"),
        );
        if !c.join("_metadata").is_file() {
            continue;
        }
        let mut of = |d: &Path| {
            let mut v: Vec<(String, i64, i64)> = states(d)
                .into_iter()
                .map(|(z, st)| {
                    compressed += z as usize;
                    (st.name, st.elements, st.distinct)
                })
                .collect();
            v.sort();
            v
        };
        let (vc, vf) = (of(&c), of(&files));
        assert!(vc.iter().all(|s| s.2 >= 0), "{}: {vc:?}", c.display());
        assert_eq!(vc, vf, "{}", dir.display());
    }
    assert!(compressed >= 12, "{compressed} compressed states");
    let dir = root.join("1.18.1/stale-union-compressed");
    let union: Vec<_> = states(&dir)
        .into_iter()
        .filter(|(_, st)| st.name == "topic-partition-offset-states")
        .collect();
    assert_eq!(union.len(), 3);
    for (compressed, st) in &union {
        assert!(compressed);
        assert_eq!((st.elements, st.distinct), (12, 4));
        assert_eq!(st.digest, union[0].1.digest);
        let partitions: Vec<(i32, u64)> = st.kafka.iter().map(|(k, n)| (k.partition, *n)).collect();
        assert_eq!(partitions, vec![(0, 3), (1, 3), (2, 3), (3, 3)]);
    }
}

#[test]
fn truncated_fixtures_fail_cleanly() {
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let step = (bytes.len() / 97).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let r = metadata::parse(Bytes::copy_from_slice(&bytes[..cut]));
            let e = r
                .err()
                .unwrap_or_else(|| panic!("{} cut at {cut} parsed without error", path.display()));
            assert!(e.to_string().contains("at byte"), "{e}");
        }
    }
}
