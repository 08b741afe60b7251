//! The Kafka surgery's format pieces against checkpoints real Flink wrote, and its refusals.
//! Real Kafka migrations (a FlinkKafkaConsumer savepoint, a KafkaSource restore) are judged by
//! the connector's own serializers and a real broker in the Java tests (tests/kafka).

use checkpoint_surgeon::codec::elements::kafka_legacy_type;
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::codec::kafka::{EARLIEST_OFFSET, LEGACY_STATE, SOURCE_READER_STATE};
use checkpoint_surgeon::codec::opstate;
use checkpoint_surgeon::commit;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::error::Code;
use checkpoint_surgeon::surgery::kafka::{KafkaOperation, NewOffset};
use checkpoint_surgeon::surgery::{self, Request, Selector};

mod common;
use common::fixture_dirs;

fn migrate() -> KafkaOperation {
    KafkaOperation::MigrateLegacy {
        enum_state_version: 2,
        parallelism: None,
        offset_not_set: None,
    }
}

/// Every managed operator-state stream of a checkpoint with its parsed header.
fn streams(cp: &Checkpoint) -> Vec<(bytes::Bytes, opstate::StreamHeader)> {
    let mut out = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            let Some(h) = st.managed_operator() else {
                continue;
            };
            let stream = cp.stream_bytes(h.delegate.as_ref().unwrap()).unwrap();
            let header = opstate::parse_header(&stream, h).unwrap();
            out.push((stream, header));
        }
    }
    out
}

#[test]
fn the_source_reader_state_entry_is_byte_identical_to_flinks() {
    let entry = opstate::byte_array_list_entry(SOURCE_READER_STATE);
    let mut seen = 0;
    for dir in fixture_dirs("flip27-source") {
        let cp = Checkpoint::open(&dir).unwrap();
        for (stream, header) in streams(&cp) {
            if let Some(e) = header.entry(&JStr::new(SOURCE_READER_STATE)) {
                assert_eq!(&stream[e.start..e.end], &entry[..], "{}", dir.display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 3, "SourceReaderState entries compared: {seen}");
}

#[test]
fn every_uncompressed_stream_taken_apart_and_joined_keeps_every_element() {
    let mut streams = 0;
    for name in [
        "flip27-source",
        "operator-state-inline",
        "operator-state-files",
        "stale-union",
        "odd-state-names",
    ] {
        for dir in fixture_dirs(name) {
            let cp = Checkpoint::open(&dir).unwrap();
            for op in &cp.metadata.operators {
                for (_, st) in op.subtask_states() {
                    let Some(h) = st.managed_operator() else {
                        continue;
                    };
                    let stream = cp.stream_bytes(h.delegate.as_ref().unwrap()).unwrap();
                    let parts = opstate::split_stream(&stream, h).unwrap();
                    let (pieces, len, map) = opstate::join_stream(&parts);
                    let joined = bytes::Bytes::from(pieces.concat());
                    assert_eq!(joined.len() as u64, len);
                    let mut rebuilt = h.clone();
                    rebuilt.states = map;
                    let again = opstate::split_stream(&joined, &rebuilt).unwrap();
                    assert_eq!(again.proxy_version, parts.proxy_version);
                    for (a, b) in parts.states.iter().zip(&again.states) {
                        assert_eq!(a.name, b.name);
                        assert_eq!(a.entry, b.entry);
                        assert_eq!(a.elements, b.elements, "{} {}", dir.display(), a.name);
                    }
                    streams += 1;
                }
            }
        }
    }
    assert!(streams > 20, "streams checked: {streams}");
}

fn refusal(name: &str, req: Request) -> (Code, String) {
    let dir = &fixture_dirs(name)[0];
    let cp = Checkpoint::open(dir).unwrap();
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    (e.code(), e.to_string())
}

#[test]
fn a_state_that_is_not_kafka_is_refused() {
    // the stale-union fixtures hold Tuple2<String, Long> under the legacy name: not Kafka's bytes
    let (code, msg) = refusal(
        "stale-union",
        Request::kafka(Selector::Uid("source_consumer".into()), migrate()),
    );
    assert_eq!(code, Code::Format, "{msg}");
    assert!(
        msg.contains("FlinkKafkaConsumer offset entry") && msg.contains("at byte"),
        "{msg}"
    );
    // a NumberSequenceSource's splits are not Kafka splits
    let (code, msg) = refusal(
        "flip27-source",
        Request::kafka(
            Selector::All,
            KafkaOperation::DropTopic {
                topic: "numbers".into(),
                partition: None,
            },
        ),
    );
    assert_eq!(code, Code::NothingSelected, "{msg}");
    // nothing to migrate
    let (code, msg) = refusal("flip27-source", Request::kafka(Selector::All, migrate()));
    assert_eq!(code, Code::NothingSelected, "{msg}");
    assert!(msg.contains("topic-partition-offset-states"), "{msg}");
}

#[test]
fn a_starting_offset_that_is_no_offset_or_marker_is_refused() {
    let (code, msg) = refusal(
        "flip27-source",
        Request::kafka(
            Selector::All,
            KafkaOperation::SetOffsets {
                topic: "t".into(),
                partition: None,
                to: NewOffset::At(-7),
            },
        ),
    );
    assert_eq!(code, Code::InvalidArgument, "{msg}");
    assert!(msg.contains("-7 is no starting offset"), "{msg}");
}

#[test]
fn a_kafka_surgery_goes_alone() {
    let dir = &fixture_dirs("stale-union")[0];
    let cp = Checkpoint::open(dir).unwrap();
    let mut req = Request::kafka(
        Selector::All,
        KafkaOperation::SetOffsets {
            topic: "t".into(),
            partition: Some(0),
            to: NewOffset::At(EARLIEST_OFFSET),
        },
    );
    req.operations
        .extend(Request::remove_state(Selector::All, "topic-partition-offset-states").operations);
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
}

/// The element type of `topic-partition-offset-states` in every stream of a fixture.
fn legacy_types(dir: &std::path::Path) -> Vec<checkpoint_surgeon::codec::elements::ElementType> {
    let cp = Checkpoint::open(dir).unwrap();
    let mut types = Vec::new();
    for (stream, header) in streams(&cp) {
        if let Some(e) = header.entry(&JStr::new(LEGACY_STATE)) {
            let (t, _) =
                checkpoint_surgeon::codec::elements::ElementType::read_entry(&stream, e).unwrap();
            types.push(t);
        }
    }
    assert!(!types.is_empty(), "{}", dir.display());
    types
}

#[test]
fn the_element_type_comes_from_the_serializer_snapshot() {
    // the legacy consumer's own serializer (the connector's KafkaTopicPartition, Kryo, and Long)
    for t in legacy_types(&fixture_dirs("stale-union-compressed")[0]) {
        assert!(t.is_kafka_legacy(), "{t}");
        assert_eq!(t.to_string(), kafka_legacy_type());
    }
    // a look-alike: a class of the generator's own with the same fields, on every Flink version
    for dir in fixture_dirs("stale-union-legacy-class") {
        for t in legacy_types(&dir) {
            assert!(!t.is_kafka_legacy(), "{}", dir.display());
            assert_eq!(
                t.to_string(),
                "Tuple2<io.checkpointsurgeon.legacy.LegacyTopicPartition (Kryo), Long>",
                "{}",
                dir.display()
            );
        }
    }
    // the generator's stand-in of the incident: Tuple2<String, Long>
    for dir in fixture_dirs("stale-union") {
        for t in legacy_types(&dir) {
            assert_eq!(t.to_string(), "Tuple2<String, Long>", "{}", dir.display());
        }
    }
}

#[test]
fn a_look_alike_is_refused_by_every_kafka_operation_and_shows_no_offsets() {
    for dir in fixture_dirs("stale-union-legacy-class") {
        let cp = Checkpoint::open(&dir).unwrap();
        let plan = |req: Request| surgery::plan(&cp, &req, &mut commit::random_file_name);
        let e = plan(Request::kafka(Selector::All, migrate())).unwrap_err();
        assert_eq!(e.code(), Code::Format, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("FlinkKafkaConsumer offset entry")
                && msg.contains("elements Tuple2<io.checkpointsurgeon.legacy.LegacyTopicPartition (Kryo), Long>: not Kafka's")
                && msg.contains(&kafka_legacy_type()),
            "{msg}"
        );
        for op in [
            KafkaOperation::DropTopic {
                topic: "topic-a".into(),
                partition: None,
            },
            KafkaOperation::SetOffsets {
                topic: "topic-a".into(),
                partition: Some(0),
                to: NewOffset::At(5),
            },
        ] {
            let e = plan(Request::kafka(Selector::All, op)).unwrap_err();
            assert_eq!(e.code(), Code::NothingSelected, "{e}");
            assert!(
                e.to_string().contains("but it is not Kafka's: its elements are Tuple2<io.checkpointsurgeon.legacy.LegacyTopicPartition (Kryo), Long>"),
                "{e}"
            );
        }
        // inspect does not present the look-alike's values as Kafka offsets
        let report = checkpoint_surgeon::report::inspect::inspect(&cp);
        let states: Vec<_> = report
            .operators
            .iter()
            .flat_map(|o| &o.subtasks)
            .filter_map(|s| s.managed_operator.as_ref())
            .flat_map(|h| &h.states)
            .filter(|s| s.name == LEGACY_STATE)
            .collect();
        assert!(!states.is_empty());
        for s in states {
            assert!(s.kafka.is_empty(), "{}: {:?}", dir.display(), s.kafka);
            assert!(s.element_type.contains("LegacyTopicPartition (Kryo)"));
        }
    }
    // the real element type's values are decoded
    let cp = Checkpoint::open(&fixture_dirs("stale-union-compressed")[0]).unwrap();
    let report = checkpoint_surgeon::report::inspect::inspect(&cp);
    let kafka: usize = report
        .operators
        .iter()
        .flat_map(|o| &o.subtasks)
        .filter_map(|s| s.managed_operator.as_ref())
        .flat_map(|h| &h.states)
        .filter(|s| s.name == LEGACY_STATE)
        .map(|s| s.kafka.len())
        .sum();
    assert!(kafka > 0);
}
