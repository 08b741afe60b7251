//! Every `_metadata` that real Flink wrote under tests/fixtures (see tests/fixtures/README.md
//! for the generator) must parse, write back to the identical bytes, and have operator-state
//! stream headers that agree with their handles.

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::{Mode, StreamHandle};
use checkpoint_surgeon::codec::opstate::{self, EntryKind};
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
