//! Payloads built from known values, for the tests of the wire across the language boundary.
//! Java decodes the report, plan and state file list built here and compares every field with
//! the value it expects (`WireSamplesTest`); Rust compares the requests and sources Java built
//! with the ones here ([`check`]). Every field holds a value no other field of its type holds
//! (strings name their field), so a decoder or encoder that puts two fields of one type in each
//! other's place fails. Test support: nothing else calls it.

use super::{PlanSummary, Source, StagedSummary, REQUEST, SOURCE};
use crate::codec::io::JStr;
use crate::codec::kafka::KafkaOffset;
use crate::codec::keyed::handle::{RocksdbCounts, SnapshotFormat};
use crate::codec::keyed::{Note, StateCount};
use crate::error::{Error, Result};
use crate::report::files::{FileKind, StateFile};
use crate::report::inspect::{
    HandleReport, KafkaEnumReport, OperatorReport, Report, StateReport, SubtaskReport,
};
use crate::report::keyed::{
    HandleReport as KeyedHandleReport, KeyedReport, KeyedStateReport, OperatorKeyed,
    SerializerReport, SnapshotReport,
};
use crate::surgery::kafka::{KafkaOperation, NewOffset};
use crate::surgery::keyed::KeyedOperation;
use crate::surgery::{ChangeAction, Depth, NewIdentity, Operation, Request, Selector};
use bytes::Bytes;

fn s(v: &str) -> String {
    v.to_string()
}

fn kafka_offset(prefix: &str, base: i64) -> KafkaOffset {
    KafkaOffset {
        topic: format!("{prefix}.topic"),
        partition: base as i32,
        offset: base * 10 + 1,
        stopping: base * 10 + 2,
    }
}

/// A handle whose numbers start at `base` and whose strings start with `prefix`.
fn handle(prefix: &str, base: i64) -> HandleReport {
    HandleReport {
        kind: format!("{prefix}.kind"),
        delegate_kind: format!("{prefix}.delegateKind"),
        location: format!("{prefix}.location"),
        delegate_size: base + 1,
        inline: true,
        proxy_version: base as i32 + 2,
        compressed: false,
        stream_error: format!("{prefix}.streamError"),
        header_bytes: base + 3,
        states: vec![StateReport {
            name: format!("{prefix}.state.name"),
            // one of Flink's modes: Java decodes it as InspectReport.Mode, which a swapped-in string fails
            mode: "BROADCAST".to_string(),
            elements: base + 4,
            bytes: base + 5,
            serializer: format!("{prefix}.state.serializer"),
            element_type: format!("{prefix}.state.elementType"),
            distinct: base + 6,
            digest: base + 7,
            kafka: vec![(
                kafka_offset(&format!("{prefix}.state.kafka"), base + 8),
                9_000 + base as u64,
            )],
        }],
    }
}

/// The inspection report Java decodes in `WireSamplesTest.reportFields`.
pub fn report() -> Report {
    Report {
        source: s("source"),
        version: 7,
        checkpoint_id: 1001,
        metadata_bytes: 1002,
        properties_bytes: 1003,
        master_states: vec![(s("master.name"), 11, 1004)],
        operators: vec![OperatorReport {
            id: s("operator.id"),
            name: s("operator.name"),
            uid: s("operator.uid"),
            parallelism: 12,
            max_parallelism: 13,
            coordinator_bytes: 1005,
            coordinator_head: vec![1, 2, 3],
            fully_finished: true,
            finished_subtasks: 14,
            kafka_enumerator: Some(KafkaEnumReport {
                version: 15,
                error: s("enumerator.error"),
                initial_discovery_finished: false,
                splits: vec![
                    (kafka_offset("assigned", 16), 0),
                    (kafka_offset("pending", 17), 1),
                ],
            }),
            subtasks: vec![SubtaskReport {
                index: 18,
                managed_operator: Some(handle("managed", 100)),
                raw_operator: Some(handle("raw", 200)),
                managed_keyed: Some((s("managedKeyed.kind"), 301)),
                raw_keyed: Some((s("rawKeyed.kind"), 302)),
                input_channels: 19,
                output_channels: 20,
                channel_bytes: 303,
            }],
        }],
    }
}

/// The plan (with what the stage step wrote) Java decodes in `WireSamplesTest.planFields`.
pub fn plan() -> PlanSummary {
    PlanSummary {
        source: s("source"),
        metadata_only: true,
        metadata_bytes_before: 1001,
        metadata_bytes_after: 1002,
        changes: vec![super::ChangeSummary {
            operator: s("change.operator"),
            subtask: 3,
            state: s("change.state"),
            // one of the actions: Java decodes it as SurgeryPlan.Change.Action, which a swapped-in string fails
            action: ChangeAction::KafkaSetOffset,
            elements_before: 1003,
            elements_after: 1004,
            bytes_removed: 1005,
            detail: s("change.detail"),
        }],
        new_streams: vec![(s("stream.fileName"), s("stream.replaces"), 1006)],
        operators: 4,
        relocated: vec![(s("relocated.old"), s("relocated.new"))],
        keyed_bytes_read: 1008,
        keyed_bytes_written: 1009,
        threads: 5,
        staged: Some(StagedSummary {
            metadata_tmp: s("staged.metadataTmp"),
            metadata_bytes: 1007,
            written: vec![s("staged.written")],
            unchanged_relative: vec![s("staged.unchanged")],
        }),
    }
}

/// The state file list Java decodes in `WireSamplesTest.stateFileFields`.
pub fn state_files() -> Vec<StateFile> {
    vec![
        StateFile {
            operator_state: true,
            kind: FileKind::Relative { size: 1003 },
            path: s("relative.path"),
        },
        StateFile {
            operator_state: false,
            kind: FileKind::File { size: 1004 },
            path: s("file.path"),
        },
        StateFile {
            operator_state: true,
            kind: FileKind::Segment {
                start: 1001,
                size: 1002,
            },
            path: s("segment.path"),
        },
    ]
}

/// A state count whose numbers start at `base`.
fn count(base: u64, complete: bool) -> StateCount {
    StateCount {
        entries: base + 1,
        raw_bytes: base + 2,
        stored_bytes: base + 3,
        complete,
    }
}

/// A serializer snapshot whose strings start with `prefix`, with one nested snapshot.
fn snapshot(prefix: &str, version: i32, nested: bool) -> SnapshotReport {
    SnapshotReport {
        snapshot_class: format!("{prefix}.snapshotClass"),
        version,
        serializer_class: Some(format!("{prefix}.serializerClass")),
        classes: vec![format!("{prefix}.class")],
        nested: if nested {
            vec![snapshot(&format!("{prefix}.nested"), version + 1, false)]
        } else {
            Vec::new()
        },
        layout_known: nested,
    }
}

/// The keyed report Java decodes in `WireSamplesTest.keyedReportFields`.
pub fn keyed_report() -> KeyedReport {
    KeyedReport {
        operators: vec![OperatorKeyed {
            operator_id: s("keyed.operatorId"),
            name: Some(s("keyed.name")),
            uid: Some(s("keyed.uid")),
            parallelism: 21,
            max_parallelism: 22,
            states: vec![KeyedStateReport {
                name: s("state.name"),
                backend_type: "PRIORITY_QUEUE",
                state_type: Some(s("state.type")),
                serializers: vec![SerializerReport {
                    key: s("USER_KEY_SERIALIZER"),
                    snapshot: snapshot("serializer", 23, true),
                }],
                ttl: true,
                total: count(2000, false),
                per_subtask: vec![(24, count(2100, true))],
                formats: vec![SnapshotFormat::HeapCheckpoint, SnapshotFormat::Changelog],
                rocksdb: Some(RocksdbCounts {
                    files: 2201,
                    deleted_keys: 2202,
                    merge_operands: 2203,
                    range_deletions: 2204,
                    data_size: 2205,
                }),
            }],
            handles: vec![KeyedHandleReport {
                subtask: 25,
                raw: true,
                kind: s("handle.kind"),
                format: Some(SnapshotFormat::RocksdbFiles),
                key_groups: (26, 27),
                total_bytes: 2301,
                header_bytes: 2302,
                overhead_bytes: 2303,
                unattributed_bytes: 2304,
                stored_apportioned: true,
                notes: vec![Note {
                    file: s("note.file"),
                    offset: 2305,
                    message: s("note.message"),
                }],
                error: Some(s("handle.error")),
            }],
        }],
    }
}

/// The requests Java builds in `WireSamplesTest.requestFields`, by name.
pub fn request(name: &str) -> Option<Request> {
    let uid = || Selector::Uid(s("kafka.uid"));
    let kafka = |op| Request {
        operations: vec![Operation::Kafka {
            operators: uid(),
            op,
        }],
        depth: Depth::Purge,
        reference_unchanged: None,
        threads: None,
    };
    Some(match name {
        "request" => Request {
            operations: vec![
                Operation::RemoveState {
                    operators: Selector::Uid(s("remove.uid")),
                    state: JStr::new("remove.state"),
                },
                Operation::RemoveOperator {
                    operators: Selector::Id(
                        *b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10",
                    ),
                },
                Operation::DedupeUnion {
                    operators: Selector::Name(s("dedupe.name")),
                    state: JStr::new("dedupe.state"),
                },
                Operation::RenameOperator {
                    operator: Selector::Uid(s("rename.uid")),
                    to: NewIdentity::Uid(s("rename.toUid")),
                    name: Some(s("rename.toName")),
                },
                Operation::RenameOperator {
                    operator: Selector::All,
                    to: NewIdentity::Id([0xfe; 16]),
                    name: None,
                },
                Operation::Relocate {
                    from: s("relocate.from"),
                    to: s("relocate.to"),
                    outside: false,
                },
                Operation::Relocate {
                    from: s("relocateOutside.from"),
                    to: s("relocateOutside.to"),
                    outside: true,
                },
                Operation::RenameOperator {
                    operator: Selector::Name(s("renameName.name")),
                    to: NewIdentity::Keep,
                    name: Some(s("renameName.toName")),
                },
            ],
            depth: Depth::MetadataOnly,
            reference_unchanged: Some(s("request.referencedSource")),
            threads: None,
        },
        "migrate-legacy" => kafka(KafkaOperation::MigrateLegacy {
            enum_state_version: 3,
            parallelism: Some(7),
            offset_not_set: Some(-2),
        }),
        "drop-topic" => kafka(KafkaOperation::DropTopic {
            topic: s("drop.topic"),
            partition: Some(5),
        }),
        "keyed" => Request {
            operations: vec![
                Operation::Keyed {
                    operators: Selector::Uid(s("keyed.uid")),
                    op: KeyedOperation::RemoveState {
                        state: JStr::new("keyed.remove"),
                    },
                },
                Operation::Keyed {
                    operators: Selector::All,
                    op: KeyedOperation::RenameState {
                        from: JStr::new("keyed.from"),
                        to: JStr::new("keyed.to"),
                    },
                },
            ],
            depth: Depth::Purge,
            reference_unchanged: Some(s("keyed.referencedSource")),
            threads: Some(3),
        },
        "set-offsets" => kafka(KafkaOperation::SetOffsets {
            topic: s("set.topic"),
            partition: Some(6),
            to: NewOffset::Shift(-8),
        }),
        _ => return None,
    })
}

/// The sources Java builds in `WireSamplesTest.sourceFields`, by name.
pub fn source(name: &str) -> Option<Source> {
    Some(match name {
        "path" => Source::Path(s("/source.path")),
        "bytes" => Source::Bytes {
            metadata: Bytes::from_static(&[9, 8, 7]),
            name: s("source.name"),
            dir: Some(s("source.dir")),
            mirrors: vec![(s("mirror.prefix"), s("mirror.local"))],
        },
        _ => return None,
    })
}

/// The encoded sample `name` (`report`, `plan`, `state-files`, `keyed-report`) for Java to decode.
pub fn encode(name: &str) -> Result<Vec<u8>> {
    Ok(match name {
        "report" => report().encode(),
        "plan" => plan().encode(),
        "state-files" => super::encode_state_files(&state_files()),
        "keyed-report" => super::encode_keyed_report("keyed.source", &keyed_report()),
        _ => return Err(Error::InvalidArgument(format!("no wire sample '{name}'"))),
    })
}

/// Decodes `payload` (a request or a source Java built) and compares it with sample `name`:
/// empty when they are equal, otherwise the lines of their debug forms that differ.
pub fn check(name: &str, payload: Bytes) -> Result<String> {
    let magic = payload
        .get(..4)
        .map(|m| u32::from_be_bytes([m[0], m[1], m[2], m[3]]))
        .unwrap_or(0);
    let (expected, found) = match magic {
        REQUEST => (
            request(name).map(|r| format!("{r:#?}")),
            format!("{:#?}", Request::decode(payload)?),
        ),
        SOURCE => (
            source(name).map(|r| format!("{r:#?}")),
            format!("{:#?}", Source::decode(payload)?),
        ),
        _ => {
            return Err(Error::InvalidArgument(
                "a sample to check is a request or a source".into(),
            ))
        }
    };
    let expected =
        expected.ok_or_else(|| Error::InvalidArgument(format!("no wire sample '{name}'")))?;
    Ok(diff(&expected, &found))
}

/// The differing lines of two debug forms, numbered, or empty when they are the same.
fn diff(expected: &str, found: &str) -> String {
    let (e, f): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), found.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(f.len()) {
        let (a, b) = (
            e.get(i).copied().unwrap_or(""),
            f.get(i).copied().unwrap_or(""),
        );
        if a != b {
            out.push_str(&format!(
                "line {}: expected `{}`, found `{}`\n",
                i + 1,
                a.trim(),
                b.trim()
            ));
        }
    }
    out
}
