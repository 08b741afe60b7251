//! Surgery on any accepted `_metadata` (inline streams only): planning a removal, a metadata-only
//! removal or a de-duplication of each state (whatever its name: tabs, newlines and all), and the
//! removal or renaming of each operator, never panics, and every planned model writes out and
//! parses back to itself.
#![no_main]
use bytes::Bytes;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::codec::metadata;
use checkpoint_surgeon::surgery::kafka::{KafkaOperation, NewOffset};
use checkpoint_surgeon::surgery::{self, Depth, NewIdentity, Request, Selector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cp) = Checkpoint::from_bytes("fuzz", None, Bytes::copy_from_slice(data)) else {
        return;
    };
    let mut names = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            for h in [st.managed_operator(), st.raw_operator()]
                .into_iter()
                .flatten()
            {
                for s in &h.states {
                    let n = s.name.to_string();
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
            }
        }
    }
    let mut requests = Vec::new();
    for name in names.iter().take(3) {
        requests.push(Request::remove_state(Selector::All, name));
        requests.push(Request::remove_state(Selector::All, name).with_depth(Depth::MetadataOnly));
        requests.push(Request::dedupe_union(Selector::All, name));
    }
    for op in cp.metadata.operators.iter().take(2) {
        requests.push(Request::remove_operator(Selector::Id(op.id)));
        requests.push(Request::rename_operator(
            Selector::Id(op.id),
            NewIdentity::Uid("renamed\tuid ü".into()),
            None,
        ));
        requests.push(Request::rename_operator(
            Selector::Id(op.id),
            NewIdentity::Keep,
            Some("renamed\u{1b}[2J"),
        ));
    }
    for op in [
        KafkaOperation::MigrateLegacy {
            enum_state_version: 2,
            parallelism: Some(3),
            offset_not_set: None,
        },
        KafkaOperation::DropTopic {
            topic: "topic-a".into(),
            partition: None,
        },
        KafkaOperation::SetOffsets {
            topic: "topic-a".into(),
            partition: Some(0),
            to: NewOffset::Shift(1),
        },
    ] {
        requests.push(Request::kafka(Selector::All, op));
    }
    {
        for req in requests {
            if let Ok(plan) = surgery::plan(&cp, &req, &mut || "new-file".to_string()) {
                let bytes = plan.metadata.to_vec();
                let again =
                    metadata::parse(Bytes::from(bytes)).expect("a planned model must parse back");
                assert_eq!(again, plan.metadata);
            }
        }
    }
});
