//! The wire (`native/src/wire.rs`): every payload decodes to what was encoded, built from real
//! fixtures; other versions and malformed payloads are refused with code WIRE; README's table of
//! error codes is the enum's.

use bytes::Bytes;
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::commit::{self, Checkpoint};
use checkpoint_surgeon::report::{files, inspect};
use checkpoint_surgeon::surgery::kafka::{KafkaOperation, NewOffset};
use checkpoint_surgeon::surgery::keyed::KeyedOperation;
use checkpoint_surgeon::surgery::{self, Depth, NewIdentity, Operation, Request, Selector};
use checkpoint_surgeon::wire::{self, PlanSummary, Source};
use checkpoint_surgeon::Code;

mod common;
use common::{fixture_dirs, temp_dir};

/// Names Flink allows that text framing would break: tab, newline, NUL, non-ASCII, astral.
const ODD_NAMES: [&str; 5] = ["offsets\tv2", "line\nbreak", "nul\u{0}", "Zustand-ä✓", "😀"];

#[test]
fn requests_round_trip_with_any_name() {
    let mut ops = Vec::new();
    for n in ODD_NAMES {
        ops.push(Operation::RemoveState {
            operators: Selector::Uid(n.into()),
            state: JStr::new(n),
        });
        ops.push(Operation::DedupeUnion {
            operators: Selector::Name(n.into()),
            state: JStr::new(n),
        });
    }
    // A lone surrogate (Java allows one in a String) survives as its modified UTF-8 bytes.
    ops.push(Operation::RemoveState {
        operators: Selector::All,
        state: JStr(Bytes::from_static(&[0xED, 0xA0, 0x80])),
    });
    ops.push(Operation::RemoveOperator {
        operators: Selector::Id([7; 16]),
    });
    ops.push(Operation::RenameOperator {
        operator: Selector::Uid("a".into()),
        to: NewIdentity::Uid("b\tc".into()),
        name: Some("n\nm".into()),
    });
    ops.push(Operation::RenameOperator {
        operator: Selector::All,
        to: NewIdentity::Id([9; 16]),
        name: None,
    });
    for op in [
        KafkaOperation::MigrateLegacy {
            enum_state_version: 3,
            parallelism: Some(7),
            offset_not_set: Some(-2),
        },
        KafkaOperation::MigrateLegacy {
            enum_state_version: 1,
            parallelism: None,
            offset_not_set: None,
        },
        KafkaOperation::DropTopic {
            topic: "tópico\t😀".into(),
            partition: None,
        },
        KafkaOperation::SetOffsets {
            topic: "t".into(),
            partition: Some(3),
            to: NewOffset::Shift(-5),
        },
        KafkaOperation::SetOffsets {
            topic: "t".into(),
            partition: None,
            to: NewOffset::At(i64::MAX),
        },
    ] {
        ops.push(Operation::Kafka {
            operators: Selector::Uid("src".into()),
            op,
        });
    }
    ops.push(Operation::Relocate {
        from: "s3://old\tbucket/chk".into(),
        to: "file:/new/😀".into(),
        outside: true,
    });
    for op in [
        KeyedOperation::RemoveState {
            state: JStr::new("a\u{0}😀"),
        },
        KeyedOperation::RenameState {
            from: JStr::new("_timer_state/event_t"),
            to: JStr::new("_timer_state/event_\t"),
        },
    ] {
        ops.push(Operation::Keyed {
            operators: Selector::Name("keyed\n".into()),
            op,
        });
    }
    for (depth, reference_unchanged) in [
        (Depth::Purge, None),
        (Depth::MetadataOnly, Some("s3://old/chk-1\n".to_string())),
    ] {
        let req = Request {
            operations: ops.clone(),
            depth,
            reference_unchanged,
            // not on the wire yet: the stage takes one thread per core
            threads: None,
        };
        let bytes = req.encode();
        assert_eq!(Request::decode(Bytes::from(bytes.clone())).unwrap(), req);
        assert_eq!(wire::echo(Bytes::from(bytes.clone())).unwrap(), bytes);
    }
}

#[test]
fn sources_round_trip() {
    for s in [
        Source::Path("/tmp/chk-1\tx".into()),
        Source::Bytes {
            metadata: Bytes::from_static(b"\x00\x01"),
            name: "completedCheckpoint0a".into(),
            dir: None,
            mirrors: vec![],
        },
        Source::Bytes {
            metadata: Bytes::new(),
            name: "s3://b/chk-1/_metadata".into(),
            dir: Some("/tmp/mirror".into()),
            mirrors: vec![("s3://b/chk-1/".into(), "/tmp/mirror\nx".into())],
        },
    ] {
        assert_eq!(Source::decode(Bytes::from(s.encode())).unwrap(), s);
    }
}

#[test]
fn reports_plans_and_file_lists_of_every_fixture_round_trip() {
    for name in [
        "stale-union",
        "operator-state-files",
        "keyed-rocksdb-incremental",
    ] {
        for dir in fixture_dirs(name) {
            let cp = Checkpoint::open(&dir).unwrap();
            let report = inspect::inspect(&cp);
            assert_eq!(
                inspect::Report::decode(Bytes::from(report.encode())).unwrap(),
                report
            );
            let list = files::state_files(&cp.metadata);
            let bytes = wire::encode_state_files(&list);
            assert_eq!(wire::decode_state_files(Bytes::from(bytes)).unwrap(), list);
            // a removal, or else (no such state) a relocation of the checkpoint's own paths
            let removal = Request::remove_state(Selector::All, "topic-partition-offset-states");
            let relocation = Request::relocate(&dir.display().to_string(), "/elsewhere");
            let Ok(plan) = surgery::plan(&cp, &removal, &mut commit::random_file_name)
                .or_else(|_| surgery::plan(&cp, &relocation, &mut commit::random_file_name))
            else {
                continue;
            };
            let out = temp_dir("wire");
            let staged = commit::stage(&cp, &plan, &out, None).unwrap();
            for st in [None, Some(&staged)] {
                let p = PlanSummary::of(&cp, &plan, st);
                assert_eq!(PlanSummary::decode(Bytes::from(p.encode())).unwrap(), p);
                assert_eq!(p.operators as usize, plan.metadata.operators.len());
            }
            let _ = std::fs::remove_dir_all(&out);
        }
    }
}

#[test]
fn other_versions_and_malformed_payloads_are_refused_with_code_wire() {
    let good = Request::remove_state(Selector::All, "x").encode();
    let mut newer = good.clone();
    newer[5] = (wire::VERSION + 1) as u8; // the version's low byte
    let mut bad_tag = good.clone();
    let last_op = 4 + 2 + 1 + 1 + 5 + 4; // magic, version, depth, reference (absent), threads, count
    bad_tag[last_op] = 99;
    for (bytes, says) in [
        (
            newer,
            &format!(
                "wire version {}, found {}",
                wire::VERSION,
                wire::VERSION + 1
            )[..],
        ),
        (bad_tag, "operation tag"),
        (good[..good.len() - 1].to_vec(), "fits the payload"),
        ([good.clone(), vec![0]].concat(), "the end"),
        (b"nope".to_vec(), "magic"),
    ] {
        let e = Request::decode(Bytes::from(bytes)).unwrap_err();
        assert_eq!(e.code(), Code::Wire, "{e}");
        assert!(e.to_string().contains(says), "{e} should say {says}");
    }
}

#[test]
fn readme_table_of_error_codes_is_the_enum() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let rows: Vec<(String, String)> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (code, rest) = l.split_once("` | ")?;
            Some((code.to_string(), rest.trim_end_matches(" |").to_string()))
        })
        .filter(|(c, _)| c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'))
        .collect();
    let expected: Vec<(String, String)> = Code::ALL
        .iter()
        .map(|c| (c.name().to_string(), c.meaning().to_string()))
        .collect();
    assert_eq!(
        rows,
        expected,
        "README's table of error codes must list Code::ALL in order, each with its meaning:\n{}",
        Code::ALL
            .iter()
            .map(|c| format!("| `{}` | {} |", c.name(), c.meaning()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The samples the Java tests decode and build (`WireSamplesTest`) round-trip here, and `check`
/// names the fields of a payload that differ from its sample.
#[test]
fn samples_round_trip_and_check_names_what_differs() {
    use checkpoint_surgeon::wire::samples;
    let report = samples::report();
    assert_eq!(
        inspect::Report::decode(Bytes::from(report.encode())).unwrap(),
        report
    );
    let plan = samples::plan();
    assert_eq!(
        PlanSummary::decode(Bytes::from(plan.encode())).unwrap(),
        plan
    );
    let list = samples::state_files();
    let bytes = wire::encode_state_files(&list);
    assert_eq!(wire::decode_state_files(Bytes::from(bytes)).unwrap(), list);
    for name in ["request", "migrate-legacy", "drop-topic", "set-offsets"] {
        let r = samples::request(name).unwrap();
        assert_eq!(samples::check(name, Bytes::from(r.encode())).unwrap(), "");
    }
    for name in ["path", "bytes"] {
        let s = samples::source(name).unwrap();
        assert_eq!(samples::check(name, Bytes::from(s.encode())).unwrap(), "");
    }
    // a relocation's two prefixes swapped: both lines named
    let mut r = samples::request("request").unwrap();
    let Operation::Relocate { from, to, .. } = &mut r.operations[5] else {
        panic!("the sample's sixth operation is a relocation");
    };
    std::mem::swap(from, to);
    let diff = samples::check("request", Bytes::from(r.encode())).unwrap();
    assert!(
        diff.contains("relocate.from") && diff.contains("relocate.to"),
        "{diff}"
    );
    assert!(samples::encode("no-such-sample").is_err());
}
