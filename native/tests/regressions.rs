//! Inputs that the fuzzers once crashed on (native/fuzz); each must now give a clean result:
//! a parse error, or a model that writes back to the identical bytes, describes, inspects and
//! plans (a state removal and the Kafka operations) without panicking, within seconds.

use bytes::Bytes;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::surgery::kafka::KafkaOperation;
use checkpoint_surgeon::surgery::{self, Request, Selector};
use checkpoint_surgeon::{codec::metadata, report::describe, report::inspect};

#[test]
fn every_fuzzer_finding_is_handled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        n += 1;
        let Ok(md) = metadata::parse(Bytes::from(data.clone())) else {
            continue;
        };
        assert_eq!(md.to_vec(), data, "{}", path.display());
        let _ = describe::describe(&md);
        let cp = Checkpoint::from_bytes("regression", None, Bytes::from(data)).unwrap();
        let _ = inspect::inspect(&cp).encode();
        let mut requests = vec![Request::remove_state(
            Selector::All,
            "topic-partition-offset-states",
        )];
        for op in [
            KafkaOperation::MigrateLegacy {
                enum_state_version: 2,
                parallelism: None,
                offset_not_set: None,
            },
            KafkaOperation::MigrateLegacy {
                enum_state_version: 2,
                parallelism: Some(3),
                offset_not_set: None,
            },
            KafkaOperation::DropTopic {
                topic: "topic-a".into(),
                partition: None,
            },
        ] {
            requests.push(Request::kafka(Selector::All, op));
        }
        for req in requests {
            let started = std::time::Instant::now();
            if let Ok(plan) = surgery::plan(&cp, &req, &mut || "f".into()) {
                assert_eq!(
                    metadata::parse(Bytes::from(plan.metadata.to_vec())).unwrap(),
                    plan.metadata
                );
            }
            assert!(
                started.elapsed().as_secs() < 5,
                "{}: {req:?} took {:?}",
                path.display(),
                started.elapsed()
            );
        }
    }
    assert!(n > 0);
}
