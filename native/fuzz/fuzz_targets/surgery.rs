//! Surgery on any accepted `_metadata` (inline streams only): planning a removal, a metadata-only
//! removal or a de-duplication of each state never panics, and every planned model writes out
//! and parses back to itself.
#![no_main]
use bytes::Bytes;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::codec::metadata;
use checkpoint_surgeon::surgery::{self, Depth, Request, Selector};
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
                    if !n.contains(['\t', '\n', '\r'])
                        && !n.trim().is_empty()
                        && !names.contains(&n)
                    {
                        names.push(n);
                    }
                }
            }
        }
    }
    for name in names.iter().take(3) {
        for req in [
            Request::remove_state(Selector::All, name),
            Request::remove_state(Selector::All, name).with_depth(Depth::MetadataOnly),
            Request::dedupe_union(Selector::All, name),
        ] {
            if let Ok(plan) = surgery::plan(&cp, &req, &mut || "new-file".to_string()) {
                let bytes = plan.metadata.to_vec();
                let again =
                    metadata::parse(Bytes::from(bytes)).expect("a planned model must parse back");
                assert_eq!(again, plan.metadata);
            }
        }
    }
});
