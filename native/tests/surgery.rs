//! Surgery on checkpoints that real Flink wrote: what is removed is gone (from the handle maps
//! and, when purging, from the stream headers and data), and everything else is unchanged down
//! to the byte. Flink's own loader and a real restore judge the results in the Java tests.

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::OperatorHandle;
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::codec::kafka;
use checkpoint_surgeon::codec::opstate;
use checkpoint_surgeon::codec::uid::operator_id_for_uid;
use checkpoint_surgeon::commit;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::report::describe;
use checkpoint_surgeon::surgery::{
    self, ChangeAction, Depth, NewIdentity, Operation, Request, Selector,
};
use std::collections::HashMap;
use std::path::Path;

mod common;
use common::{copy_fixture, fixture_dirs, temp_dir};

const STALE: &str = "topic-partition-offset-states";

/// Every element of every state, keyed by (operator, subtask, state), as raw bytes.
fn elements(cp: &Checkpoint) -> HashMap<(String, i32, String), Vec<Bytes>> {
    let mut out = HashMap::new();
    for op in &cp.metadata.operators {
        for (i, st) in op.subtask_states() {
            for h in [st.managed_operator(), st.raw_operator()]
                .into_iter()
                .flatten()
            {
                let stream = cp.stream_bytes(h.delegate.as_ref().unwrap()).unwrap();
                let header = opstate::parse_header(&stream, h).unwrap();
                let ranges =
                    opstate::stream_element_ranges(&header, h, stream.len() as u64).unwrap();
                for (s, r) in h.states.iter().zip(ranges) {
                    let els = r
                        .iter()
                        .map(|&(a, b)| stream.slice(a as usize..b as usize))
                        .collect();
                    out.insert((op.hex_id(), i, s.name.to_string()), els);
                }
            }
        }
    }
    out
}

/// Every element's value, keyed like [`elements`]: compressed elements decoded from their frames.
fn values(cp: &Checkpoint) -> HashMap<(String, i32, String), Vec<Bytes>> {
    let mut out = HashMap::new();
    for op in &cp.metadata.operators {
        for (i, st) in op.subtask_states() {
            if let Some(h) = st.managed_operator() {
                let stream = cp.stream_bytes(h.delegate.as_ref().unwrap()).unwrap();
                let header = opstate::parse_header(&stream, h).unwrap();
                let ranges =
                    opstate::stream_element_ranges(&header, h, stream.len() as u64).unwrap();
                for (s, r) in h.states.iter().zip(ranges) {
                    let els = if header.compressed && opstate::shares_offsets(&s.offsets) {
                        let fe = opstate::framed_elements(&stream, &header, s).unwrap();
                        fe.elements
                            .iter()
                            .map(|&(a, b)| Bytes::copy_from_slice(&fe.bytes[a..b]))
                            .collect()
                    } else {
                        r.iter()
                            .map(|&r| {
                                opstate::element_bytes(&stream, header.compressed, r).unwrap()
                            })
                            .collect()
                    };
                    out.insert((op.hex_id(), i, s.name.to_string()), els);
                }
            }
        }
    }
    out
}

/// The values of `state` in every subtask, sorted.
fn state_values(cp: &Checkpoint, state: &str) -> Vec<Bytes> {
    let mut all: Vec<Bytes> = values(cp)
        .into_iter()
        .filter(|(k, _)| k.2 == state)
        .flat_map(|(_, v)| v)
        .collect();
    all.sort();
    all
}

fn handles(cp: &Checkpoint) -> Vec<(&OperatorHandle, Bytes)> {
    let mut v = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            for h in [st.managed_operator(), st.raw_operator()]
                .into_iter()
                .flatten()
            {
                v.push((h, cp.stream_bytes(h.delegate.as_ref().unwrap()).unwrap()));
            }
        }
    }
    v
}

/// Lines of the canonical description that do not mention operator state handles.
fn untouched_lines(cp: &Checkpoint) -> Vec<String> {
    describe::describe(&cp.metadata)
        .lines()
        .filter(|l| !l.contains("Operator"))
        .map(String::from)
        .collect()
}

fn run(dir: &Path, req: Request, out: &Path) -> (Checkpoint, Checkpoint, surgery::Plan) {
    let before = Checkpoint::open(dir).unwrap();
    let plan = surgery::plan(&before, &req, &mut commit::random_file_name).unwrap();
    std::fs::create_dir_all(out).unwrap();
    let staged = commit::stage(&before, &plan, out, None).unwrap();
    // What the Java commit does next: place the unchanged files, then publish `_metadata`.
    for name in &staged.unchanged_relative {
        std::fs::hard_link(before.dir.join(name), out.join(name)).unwrap();
    }
    std::fs::rename(&staged.metadata_tmp, out.join("_metadata")).unwrap();
    let after = Checkpoint::open(out).unwrap();
    (before, after, plan)
}

#[test]
fn uid_hash_finds_the_source_consumer_operator() {
    for dir in fixture_dirs("stale-union") {
        let cp = Checkpoint::open(&dir).unwrap();
        let id = operator_id_for_uid("source_consumer");
        let op = cp.metadata.operators.iter().find(|o| o.id == id);
        let op =
            op.unwrap_or_else(|| panic!("{}: no operator for uid source_consumer", dir.display()));
        assert!(op.subtask_states().any(|(_, s)| s
            .managed_operator()
            .is_some_and(|h| h.states.iter().any(|x| x.name.to_string() == STALE))));
    }
}

#[test]
fn purge_removes_the_stale_union_state_and_keeps_everything_else() {
    for dir in fixture_dirs("stale-union") {
        let out = temp_dir("purge");
        let (before, after, plan) = run(
            &dir,
            Request::remove_state(Selector::Uid("source_consumer".into()), STALE),
            &out.join("new"),
        );
        assert!(after.bytes.len() < before.bytes.len());
        assert!(plan
            .changes
            .iter()
            .all(|c| c.action == ChangeAction::PurgeState && c.elements_after == 0));
        let removed: i64 = plan.changes.iter().map(|c| c.elements_before).sum();
        assert!(removed > 0);
        // gone from every handle map and every stream header
        let stale = JStr::new(STALE);
        for (h, stream) in handles(&after) {
            assert!(h.states.iter().all(|s| s.name != stale));
            let header = opstate::parse_header(&stream, h).unwrap();
            assert!(
                header.entry(&stale).is_none(),
                "{}: header still names the state",
                dir.display()
            );
            assert_eq!(header.entries.len(), h.states.len());
        }
        // every other element is byte-identical, keyed/channel/coordinator lines unchanged
        let (eb, ea) = (elements(&before), elements(&after));
        for (k, v) in &eb {
            if k.2 == STALE {
                assert!(!ea.contains_key(k));
            } else {
                assert_eq!(ea.get(k), Some(v), "{}: {k:?} changed", dir.display());
            }
        }
        assert_eq!(untouched_lines(&before), untouched_lines(&after));
        assert_eq!(before.metadata.master_states, after.metadata.master_states);
        assert_eq!(before.metadata.properties, after.metadata.properties);
    }
}

#[test]
fn metadata_only_removal_keeps_the_header_entry() {
    for dir in fixture_dirs("stale-union") {
        let out = temp_dir("mdonly");
        let (before, after, _) = run(
            &dir,
            Request::remove_state(Selector::All, STALE).with_depth(Depth::MetadataOnly),
            &out.join("new"),
        );
        let stale = JStr::new(STALE);
        let mut headers_with_entry = 0;
        for (h, stream) in handles(&after) {
            assert!(h.states.iter().all(|s| s.name != stale));
            // the stream is the old one: the header still registers the state
            if let Ok(header) = opstate::parse_header(&stream, h) {
                if header.entry(&stale).is_some() {
                    headers_with_entry += 1;
                }
            }
        }
        assert!(headers_with_entry > 0);
        assert_eq!(untouched_lines(&before), untouched_lines(&after));
    }
}

/// Snappy-compressed operator state, as Flink 1.18 (a stream identifier before each state's
/// data) and 1.19+ (one identifier) write it: purging the union state leaves every other
/// element's frames byte-identical, and each stream parses again with one identifier per
/// remaining state (1.18) or one in all.
#[test]
fn compressed_streams_purge_and_dedupe_cut_whole_frames() {
    const UNION: &str = "union-list";
    let id = &opstate::SNAPPY_STREAM_IDENTIFIER[..];
    let identifiers = |s: &Bytes| s.windows(id.len()).filter(|w| *w == id).count();
    for dir in fixture_dirs("operator-state-compressed") {
        let layout_1_18 = dir.to_string_lossy().contains("/1.18.");
        let out = temp_dir("compressed");
        let (before, after, plan) = run(
            &dir,
            Request::remove_state(Selector::Uid("operator-states".into()), UNION),
            &out.join("purged"),
        );
        assert_eq!(
            plan.changes.iter().map(|c| c.elements_before).sum::<i64>(),
            100
        );
        let (eb, ea) = (elements(&before), elements(&after));
        for (k, v) in &eb {
            if k.2 == UNION {
                assert!(!ea.contains_key(k));
            } else {
                assert_eq!(ea.get(k), Some(v), "{}: {k:?} changed", dir.display());
            }
        }
        let mut compressed = 0;
        for (h, stream) in handles(&after) {
            let header = opstate::parse_header(&stream, h).unwrap();
            if !header.compressed || h.states.len() < 2 {
                continue;
            }
            compressed += 1;
            let expected = if layout_1_18 { h.states.len() } else { 1 };
            assert_eq!(identifiers(&stream), expected, "{}", dir.display());
        }
        assert_eq!(compressed, 2, "{}", dir.display());
        let dedupe = Request::dedupe_union(Selector::Uid("operator-states".into()), UNION);
        let (_, deduped, _) = run(&dir, dedupe, &out.join("deduped"));
        // the union entries name their subtask: nothing is dropped, and nothing else changes
        // (1.18's union elements are written anew, one frame run each: compare their values)
        assert_eq!(values(&deduped), values(&before), "{}", dir.display());
        let (ed, split) = (elements(&deduped), |k: &(String, i32, String)| k.2 != UNION);
        for (k, v) in eb.iter().filter(|(k, _)| !layout_1_18 || split(k)) {
            assert_eq!(ed.get(k), Some(v), "{}: {k:?} changed", dir.display());
        }
    }
}

/// The stale union in Flink 1.18's compressed layout (one snappy stream per state, one offset for
/// all elements of a state): dedupe decodes the elements with the layout of their serializer
/// (the legacy Kafka consumer's `Tuple2<KafkaTopicPartition, Long>`, Kryo and long), keeps the first copy of each value and writes the kept ones as a
/// frame run each, with an offset each. The other state's frames stay byte for byte, and a second
/// dedupe finds nothing more to drop.
/// The Kafka surgery's route through a compressed stream (taken apart state by state, put
/// together again): Flink 1.19+'s layout gives back the same decoded elements, each in its own run
/// of frames behind one stream identifier; Flink 1.18's layout (an identifier per state) is
/// refused, naming it.
#[test]
fn compressed_streams_split_and_join_to_the_same_elements() {
    let id = &opstate::SNAPPY_STREAM_IDENTIFIER[..];
    let (mut joined_streams, mut refused) = (0, 0);
    for dir in fixture_dirs("operator-state-compressed") {
        let cp = Checkpoint::open(&dir).unwrap();
        let decoded = values(&cp);
        for (h, stream) in handles(&cp) {
            let parts = opstate::split_stream(&stream, h);
            if stream.windows(id.len()).filter(|w| *w == id).count() > 1 {
                assert!(dir.to_string_lossy().contains("/1.18."));
                let e = parts.unwrap_err().to_string();
                assert!(e.contains("Flink 1.18's compressed"), "{e}");
                refused += 1;
                continue;
            }
            let parts = parts.unwrap();
            assert!(parts.compressed);
            let (pieces, len, map) = opstate::join_stream(&parts);
            let joined = Bytes::from(pieces.concat());
            assert_eq!(joined.len() as u64, len);
            assert_eq!(joined.windows(id.len()).filter(|w| *w == id).count(), 1);
            let h2 = OperatorHandle {
                states: map,
                file_merging: None,
                delegate: None,
            };
            let header = opstate::parse_header(&joined, &h2).unwrap();
            assert!(header.compressed && !header.stream_per_state);
            let again = opstate::split_stream(&joined, &h2).unwrap();
            assert_eq!(again.states.len(), parts.states.len());
            for (a, b) in parts.states.iter().zip(&again.states) {
                assert_eq!(
                    (&a.name, &a.entry, &a.elements),
                    (&b.name, &b.entry, &b.elements)
                );
                // what the test's own decoder reads from the fixture, element for element
                let from_fixture: Vec<&Vec<Bytes>> = decoded
                    .iter()
                    .filter(|(k, _)| k.2 == a.name.to_string())
                    .map(|(_, v)| v)
                    .collect();
                assert!(from_fixture.iter().any(|v| **v == a.elements));
            }
            joined_streams += 1;
        }
    }
    assert!(
        joined_streams >= 8,
        "{joined_streams} compressed streams joined"
    );
    assert!(refused >= 2, "{refused} streams of the 1.18 layout refused");
}

#[test]
fn dedupe_of_a_1_18_compressed_union_keeps_one_copy_of_each_value() {
    let id = &opstate::SNAPPY_STREAM_IDENTIFIER[..];
    for dir in fixture_dirs("stale-union-compressed") {
        let out = temp_dir("dedupe118");
        let dedupe = || Request::dedupe_union(Selector::Uid("source_consumer".into()), STALE);
        let (before, after, plan) = run(&dir, dedupe(), &out.join("once"));
        let union = |cp: &Checkpoint| state_values(cp, STALE);
        let (b, a) = (union(&before), union(&after));
        let mut distinct = b.clone();
        distinct.dedup();
        assert_eq!((b.len(), distinct.len()), (36, 4), "{}", dir.display());
        assert_eq!(a, distinct);
        assert_eq!(
            plan.changes.iter().map(|c| c.elements_after).sum::<i64>(),
            4
        );
        // the legacy Kafka consumer's elements: KafkaTopicPartition (Kryo) and the offset
        let mut partitions: Vec<(String, i32)> = a
            .iter()
            .map(|e| {
                let o = kafka::decode_legacy(e).expect("a legacy Kafka offset");
                (o.topic, o.partition)
            })
            .collect();
        partitions.sort();
        let expected: Vec<(String, i32)> = (0..4).map(|p| ("topic-a".to_string(), p)).collect();
        assert_eq!(partitions, expected);
        // every subtask's union elements shared one offset before; the kept ones have their own
        let mut shared = 0;
        for (h, stream) in handles(&before) {
            let header = opstate::parse_header(&stream, h).unwrap();
            assert!(header.compressed);
            shared += h
                .states
                .iter()
                .filter(|s| opstate::shares_offsets(&s.offsets))
                .count();
        }
        assert!(
            shared >= 3,
            "{}: {shared} states share offsets",
            dir.display()
        );
        for (h, stream) in handles(&after) {
            let header = opstate::parse_header(&stream, h).unwrap();
            let ids = stream.windows(id.len()).filter(|w| *w == id).count();
            assert_eq!(ids, h.states.len(), "one identifier per state");
            for s in &h.states {
                assert!(!opstate::shares_offsets(&s.offsets));
                if s.name.to_string() == STALE && !s.offsets.is_empty() {
                    let fe = opstate::framed_elements(&stream, &header, s).unwrap();
                    assert_eq!(fe.elements.len(), s.offsets.len());
                }
            }
        }
        let (eb, ea) = (elements(&before), elements(&after));
        for (k, v) in eb.iter().filter(|(k, _)| k.2 != STALE) {
            assert_eq!(ea.get(k), Some(v), "{k:?}");
        }
        // the result de-duplicated again: the same values, the same streams
        let (_, twice, _) = run(&out.join("once"), dedupe(), &out.join("twice"));
        assert_eq!(values(&twice), values(&after));
        assert_eq!(elements(&twice), elements(&after));
        // purging the other state of the stream in the same request: its segment is cut next to
        // the union's new frames
        let both = Request::new(vec![
            Operation::RemoveState {
                operators: Selector::Uid("source_consumer".into()),
                state: JStr::new("position"),
            },
            Operation::DedupeUnion {
                operators: Selector::Uid("source_consumer".into()),
                state: JStr::new(STALE),
            },
        ]);
        let (_, combined, _) = run(&dir, both, &out.join("both"));
        assert_eq!(union(&combined), distinct);
        assert!(values(&combined).keys().all(|k| k.2 != "position"));
        for (h, stream) in handles(&combined) {
            opstate::parse_header(&stream, h).unwrap();
            let ids = stream.windows(id.len()).filter(|w| *w == id).count();
            assert_eq!(ids, h.states.len());
        }
    }
}

#[test]
fn dedupe_keeps_exactly_one_copy_of_each_distinct_union_element() {
    for dir in fixture_dirs("stale-union") {
        let out = temp_dir("dedupe");
        let (before, after, _) = run(
            &dir,
            Request::dedupe_union(Selector::Uid("source_consumer".into()), STALE),
            &out.join("new"),
        );
        let (b, a) = (state_values(&before, STALE), state_values(&after, STALE));
        let mut distinct = b.clone();
        distinct.dedup();
        assert!(
            b.len() > distinct.len(),
            "the fixture must contain duplicates"
        );
        assert_eq!(a, distinct, "{}", dir.display());
        // the split state of the same operator is untouched
        let (eb, ea) = (elements(&before), elements(&after));
        for (k, v) in eb.iter().filter(|(k, _)| k.2 != STALE) {
            assert_eq!(ea.get(k), Some(v));
        }
    }
}

#[test]
fn purge_of_file_backed_streams_writes_new_files_and_links_the_rest() {
    for dir in fixture_dirs("operator-state-files") {
        let out = temp_dir("files").join("new");
        let (before, after, plan) = run(
            &dir,
            Request::remove_state(Selector::All, "union-list"),
            &out,
        );
        assert!(!plan.new_streams.is_empty());
        for s in &plan.new_streams {
            let name = s.file_name.as_ref().unwrap();
            assert_eq!(std::fs::metadata(out.join(name)).unwrap().len(), s.len);
        }
        let (eb, ea) = (elements(&before), elements(&after));
        for (k, v) in &eb {
            if k.2 != "union-list" {
                assert_eq!(ea.get(k), Some(v), "{k:?}");
            }
        }
        // files of untouched handles are present next to the new _metadata
        after.metadata.visit_stream_handles(&mut |h| {
            if let Some(p) = after.local_file(h).unwrap() {
                if p.starts_with(&out) {
                    assert!(p.is_file(), "{} missing", p.display());
                }
            }
        });
    }
}

#[test]
fn remove_operator_drops_only_that_operator() {
    for dir in fixture_dirs("stale-union") {
        let out = temp_dir("rmop").join("new");
        let id: String = operator_id_for_uid("source_consumer")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let (before, after, _) = run(
            &dir,
            Request::remove_operator(Selector::id_hex(&id).unwrap()),
            &out,
        );
        assert_eq!(
            after.metadata.operators.len(),
            before.metadata.operators.len() - 1
        );
        let kept: Vec<_> = before
            .metadata
            .operators
            .iter()
            .filter(|o| o.hex_id() != id)
            .collect();
        assert_eq!(kept, after.metadata.operators.iter().collect::<Vec<_>>());
    }
}

#[test]
fn a_selector_that_matches_nothing_is_an_error() {
    let dir = &fixture_dirs("stale-union")[0];
    let cp = Checkpoint::open(dir).unwrap();
    for req in [
        Request::remove_state(
            Selector::Uid("no-such-uid".into()),
            "topic-partition-offset-states",
        ),
        Request::remove_state(Selector::All, "no-such-state"),
        Request::dedupe_union(Selector::All, "position"),
    ] {
        let r = surgery::plan(&cp, &req, &mut commit::random_file_name);
        assert!(r.is_err(), "{req:?} should fail");
    }
}

fn listing(d: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn staging_writes_only_fresh_names_and_cleans_up_on_failure() {
    let dir = copy_fixture(&fixture_dirs("operator-state-files")[0]);
    let before = listing(&dir);
    let cp = Checkpoint::open(&dir).unwrap();
    let req = Request::remove_state(Selector::All, "union-list");
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let names: Vec<String> = plan
        .new_streams
        .iter()
        .filter_map(|s| s.file_name.clone())
        .collect();
    assert!(!names.is_empty(), "the fixture's streams are files");
    let staged = commit::stage(&cp, &plan, &dir, None).unwrap();
    // Everything that existed is unchanged; only the staged names are new.
    let after = listing(&dir);
    for f in &before {
        assert!(after.contains(f), "{} changed", f.0);
    }
    let tmp = staged.metadata_tmp.file_name().unwrap().to_string_lossy();
    assert!(tmp.starts_with("_metadata.tmp-"), "{tmp}");
    assert_eq!(after.len(), before.len() + 1 + staged.written.len());
    // The tool's own names (clean-leftovers knows them by this): UUID-shaped, version 8 with the
    // tag 8c5 where Flink's version 4 UUIDs have a 4, RFC 4122 variant.
    for n in names
        .iter()
        .map(String::as_str)
        .chain([&tmp["_metadata.tmp-".len()..]])
    {
        let g: Vec<&str> = n.split('-').collect();
        let lens: Vec<usize> = g.iter().map(|x| x.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{n}");
        assert!(
            n.bytes()
                .all(|c| c == b'-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{n}"
        );
        assert!(
            g[2].starts_with("8c5") && "89ab".contains(&g[3][..1]),
            "{n}"
        );
    }

    // A plan that picks names that exist now (the files just staged) is refused: nothing is
    // opened onto them, and the failed stage removes what it created itself.
    let mut again = std::iter::once(commit::random_file_name()).chain(names.clone());
    let plan2 = surgery::plan(&cp, &req, &mut || again.next().unwrap()).unwrap();
    let e = commit::stage(&cp, &plan2, &dir, None).unwrap_err();
    assert!(e.to_string().contains("exists"), "{e}");
    assert_eq!(listing(&dir), after, "a failed stage leaves nothing behind");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rename_operator_moves_all_state_including_the_coordinator_state() {
    // flip27-source: a FLIP-27 source, whose enumerator state is the coordinator state.
    for dir in fixture_dirs("flip27-source") {
        let before = Checkpoint::open(&dir).unwrap();
        let source = before
            .metadata
            .operators
            .iter()
            .find(|o| o.coordinator.is_some())
            .expect("the fixture has coordinator state")
            .clone();
        let out = temp_dir("rename");
        let req = Request::rename_operator(
            Selector::Id(source.id),
            NewIdentity::Uid("renamed source\twith a tab".into()),
            None,
        );
        let (_, after, plan) = run(&dir, req, &out);
        let new_id = operator_id_for_uid("renamed source\twith a tab");
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].action, ChangeAction::RenameOperator);
        let moved = after
            .metadata
            .operators
            .iter()
            .find(|o| o.id == new_id)
            .expect("the operator has its new id");
        assert!(after.metadata.operators.iter().all(|o| o.id != source.id));
        // Everything but the identity is what it was, coordinator state included.
        assert_eq!(moved.coordinator, source.coordinator);
        assert_eq!(moved.subtasks, source.subtasks);
        assert_eq!(moved.parallelism, source.parallelism);
        assert_eq!(
            after.metadata.operators.len(),
            before.metadata.operators.len()
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}

#[test]
fn rename_operator_refuses_an_id_that_exists() {
    let dir = &fixture_dirs("stale-union")[0];
    let cp = Checkpoint::open(dir).unwrap();
    let ops = &cp.metadata.operators;
    let req = Request::rename_operator(Selector::Id(ops[0].id), NewIdentity::Id(ops[1].id), None);
    let Err(e) = surgery::plan(&cp, &req, &mut commit::random_file_name) else {
        panic!("a rename onto an existing id must fail");
    };
    assert_eq!(e.code(), checkpoint_surgeon::Code::InvalidArgument, "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    // The same operator as target is no conflict.
    let same = Request::rename_operator(Selector::Id(ops[0].id), NewIdentity::Id(ops[0].id), None);
    surgery::plan(&cp, &same, &mut commit::random_file_name).unwrap();
}

#[test]
fn renames_in_one_request_may_swap_ids_but_never_leave_two_operators_with_one() {
    let dir = &fixture_dirs("stale-union")[0];
    let cp = Checkpoint::open(dir).unwrap();
    let ops = &cp.metadata.operators;
    let (a, b) = (ops[0].id, ops[1].id);
    let rename = |from: [u8; 16], to: [u8; 16]| Operation::RenameOperator {
        operator: Selector::Id(from),
        to: NewIdentity::Id(to),
        name: None,
    };
    // a swap: each selector names the operator as it was read
    let swap = Request::new(vec![rename(a, b), rename(b, a)]);
    let plan = surgery::plan(&cp, &swap, &mut commit::random_file_name).unwrap();
    assert_eq!(plan.changes.len(), 2);
    assert_eq!(plan.metadata.operators[0].id, b);
    assert_eq!(plan.metadata.operators[0].subtasks, ops[0].subtasks);
    assert_eq!(plan.metadata.operators[1].id, a);
    assert_eq!(plan.metadata.operators[1].subtasks, ops[1].subtasks);

    // two operators onto one new id
    let c = operator_id_for_uid("c");
    let both = Request::new(vec![rename(a, c), rename(b, c)]);
    let e = surgery::plan(&cp, &both, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("renamed to it too"), "{e}");
    // one operator renamed twice
    let twice = Request::new(vec![rename(a, c), rename(a, b)]);
    let e = surgery::plan(&cp, &twice, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("renamed twice"), "{e}");
    // onto an id that another operator keeps
    let onto = Request::new(vec![rename(a, b)]);
    let e = surgery::plan(&cp, &onto, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
}

/// The absolute paths of a model: file and segment paths, and file-merging directories.
fn absolute_paths(md: &checkpoint_surgeon::codec::metadata::CheckpointMetadata) -> Vec<String> {
    use checkpoint_surgeon::codec::handles::StreamHandle;
    let mut paths = Vec::new();
    md.visit_stream_handles(&mut |h| {
        if let StreamHandle::File { path, .. } | StreamHandle::Segment { path, .. } = h {
            paths.push(path.to_string());
        }
    });
    for at in md.operator_handles() {
        if let Some(d) = &at.handle.file_merging {
            paths.push(d.task_owned_dir.to_string());
            paths.push(d.shared_dir.to_string());
        }
    }
    paths
}

#[test]
fn relocate_moves_every_absolute_path_and_nothing_else() {
    // incremental RocksDB (shared and private files), file merging (segments, their dirs) and a
    // native savepoint: every absolute path they hold starts with the generator's directory
    let mut relocated = 0;
    for name in [
        "keyed-rocksdb-incremental",
        "file-merging",
        "savepoint-native",
    ] {
        for dir in fixture_dirs(name) {
            let cp = Checkpoint::open(&dir).unwrap();
            let paths = absolute_paths(&cp.metadata);
            if paths.is_empty() {
                continue; // a savepoint whose handles are all relative
            }
            // the prefix up to the job id's parent: "<...>/checkpoints" of the generator run
            let first = &paths[0];
            let from = first[..first
                .find("/checkpoints/")
                .map(|i| i + 12)
                .unwrap_or(first.rfind('/').unwrap())]
                .to_string();
            let req = Request::relocate(&from, "s3://new-bucket/moved");
            let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
            let moved: Vec<&String> = paths.iter().filter(|p| p.starts_with(&from)).collect();
            assert_eq!(plan.relocated.len(), moved.len(), "{}", dir.display());
            let after = absolute_paths(&plan.metadata);
            for (old, new) in paths.iter().zip(&after) {
                if old.starts_with(&from) {
                    assert_eq!(new, &format!("s3://new-bucket/moved{}", &old[from.len()..]));
                } else {
                    assert_eq!(new, old);
                }
            }
            assert!(plan.new_streams.is_empty(), "no stream is rewritten");
            assert_eq!(plan.changes.len(), 1);
            assert_eq!(plan.changes[0].action, ChangeAction::Relocate);
            // relocating back gives the very bytes Flink wrote
            let back = Checkpoint::from_bytes(
                "relocated",
                Some(&dir),
                Bytes::from(plan.metadata.to_vec()),
            )
            .unwrap();
            let plan2 = surgery::plan(
                &back,
                &Request::relocate("s3://new-bucket/moved", &from),
                &mut commit::random_file_name,
            )
            .unwrap();
            assert_eq!(
                plan2.metadata.to_vec(),
                cp.bytes.to_vec(),
                "{}",
                dir.display()
            );
            relocated += 1;
        }
    }
    // incremental RocksDB and file merging in each of the three versions that has it
    assert!(relocated >= 5, "{relocated} fixtures relocated");
}

#[test]
fn relocate_says_where_the_paths_are_when_none_is_under_the_prefix_and_what_needs_nothing() {
    let dir = &fixture_dirs("keyed-rocksdb-incremental")[0];
    let cp = Checkpoint::open(dir).unwrap();
    let e = surgery::plan(
        &cp,
        &Request::relocate("/nowhere", "/x"),
        &mut commit::random_file_name,
    )
    .unwrap_err();
    assert_eq!(e.code(), checkpoint_surgeon::Code::NothingSelected, "{e}");
    assert!(e.to_string().contains("elsewhere, e.g."), "{e}");
    // a checkpoint with relative handles only needs nothing, and the plan says so
    let dir = &fixture_dirs("operator-state-files")[0];
    let cp = Checkpoint::open(dir).unwrap();
    let req = Request::relocate("/nowhere", "/x");
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    assert!(plan.relocated.is_empty());
    assert!(plan.metadata == cp.metadata);
    let detail = &plan.changes[0].detail;
    assert!(
        detail.contains("relative file handles move with the"),
        "{detail}"
    );
}

#[test]
fn reference_unchanged_points_at_the_source_and_places_nothing() {
    use checkpoint_surgeon::codec::handles::StreamHandle;
    // keyed-hashmap: operator state and keyed state in files; the keyed files stay unchanged
    for dir in fixture_dirs("keyed-hashmap") {
        let base = format!("file:{}", dir.display());
        let req =
            Request::remove_state(Selector::All, "union-list").with_reference_unchanged(&base);
        let out = temp_dir("reference");
        let (before, after, plan) = run(&dir, req, &out);
        let written: Vec<&str> = plan
            .new_streams
            .iter()
            .filter_map(|s| s.file_name.as_deref())
            .collect();
        let (mut relative, mut referenced) = (0, 0);
        after.metadata.visit_stream_handles(&mut |h| match h {
            StreamHandle::RelativeFile { path, .. } => {
                relative += 1;
                assert!(
                    written.contains(&path.to_string().as_str()),
                    "{path} is not a new file"
                );
            }
            StreamHandle::File { path, .. } if path.to_string().starts_with(&base) => {
                referenced += 1
            }
            _ => {}
        });
        let mut unchanged_before = 0;
        before.metadata.visit_stream_handles(&mut |h| {
            if matches!(h, StreamHandle::RelativeFile { .. }) {
                unchanged_before += 1;
            }
        });
        assert!(referenced > 0, "{}", dir.display());
        assert_eq!(relative + referenced, unchanged_before, "{}", dir.display());
        assert!(plan
            .changes
            .iter()
            .any(|c| c.action == ChangeAction::ReferenceUnchanged
                && c.detail.contains("depends on that directory")));
        // the output holds only the new files and _metadata
        let files = std::fs::read_dir(&out).unwrap().count();
        assert_eq!(files, written.len() + 1, "{}", out.display());
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// The FLIP-27 source fixture of the Flink version whose directory name contains `version`,
/// and the id of its source (the operator with coordinator state).
fn flip27_source(version: &str) -> (Checkpoint, [u8; 16]) {
    let dir = fixture_dirs("flip27-source")
        .into_iter()
        .find(|d| d.to_string_lossy().contains(version))
        .unwrap_or_else(|| panic!("a flip27-source fixture of Flink {version}"));
    let cp = Checkpoint::open(&dir).unwrap();
    let id = cp
        .metadata
        .operators
        .iter()
        .find(|o| o.coordinator.is_some())
        .unwrap()
        .id;
    (cp, id)
}

#[test]
fn rename_operator_stores_the_new_uid_and_name_in_v5_metadata() {
    // Flink 2.x writes metadata V6, which stores each operator's uid and name
    let (cp, source) = flip27_source("/2.");
    assert!(cp.metadata.version >= 5);
    let to = NewIdentity::Uid("numbers v2".into());
    let req = Request::rename_operator(Selector::Id(source), to, Some("Source: numbers (renamed)"));
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let new_id = operator_id_for_uid("numbers v2");
    let moved = plan
        .metadata
        .operators
        .iter()
        .find(|o| o.id == new_id)
        .unwrap();
    assert_eq!(moved.uid.as_ref().unwrap().to_string(), "numbers v2");
    assert_eq!(
        moved.name.as_ref().unwrap().to_string(),
        "Source: numbers (renamed)"
    );
    // written and parsed back as Flink reads it
    let bytes = Bytes::from(plan.metadata.to_vec());
    assert_eq!(
        checkpoint_surgeon::codec::metadata::parse(bytes).unwrap(),
        plan.metadata
    );
    // V3/V4 metadata stores no names: asking for one is refused
    let (cp, source) = flip27_source("/1.15");
    let req = Request::rename_operator(
        Selector::Id(source),
        NewIdentity::Uid("x".into()),
        Some("n"),
    );
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("stores no operator names"), "{e}");
    // so is a new name alone
    let req = Request::rename_operator(Selector::Id(source), NewIdentity::Keep, Some("n"));
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert!(
        e.to_string().contains("a new name alone changes nothing"),
        "{e}"
    );
}

#[test]
fn rename_operator_with_a_name_alone_keeps_the_id_and_uid_and_the_plan_shows_each_change() {
    let (cp, source) = flip27_source("/2.");
    let op = cp
        .metadata
        .operators
        .iter()
        .find(|o| o.id == source)
        .unwrap();
    let (uid, name) = (op.uid.clone().unwrap(), op.name.clone().unwrap());
    let req = Request::rename_operator(
        Selector::Id(source),
        NewIdentity::Keep,
        Some("numbers (v2)"),
    );
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let after = plan
        .metadata
        .operators
        .iter()
        .find(|o| o.id == source)
        .unwrap();
    assert_eq!(after.uid.as_ref(), Some(&uid));
    assert_eq!(after.name.as_ref().unwrap().to_string(), "numbers (v2)");
    assert_eq!(plan.changes.len(), 1);
    assert_eq!(
        plan.changes[0].detail,
        format!("name '{name}' -> 'numbers (v2)'")
    );
    // every change of a full rename: id, stored uid and name
    let to = NewIdentity::Uid("numbers v2".into());
    let req = Request::rename_operator(Selector::Id(source), to, Some("n2"));
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let new_id = operator_id_for_uid("numbers v2");
    assert_eq!(
        plan.changes[0].detail,
        format!(
            "id {} -> {}, uid '{uid}' -> 'numbers v2', name '{name}' -> 'n2'",
            surgery::hex(&source),
            surgery::hex(&new_id)
        )
    );
    // longer than Flink's writeUTF takes: refused, not written short
    let long = "y".repeat(70_000);
    let req = Request::rename_operator(Selector::Id(source), NewIdentity::Keep, Some(&long));
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("the new name is 70000 bytes"), "{e}");
    let req = Request::rename_operator(Selector::Id(source), NewIdentity::Uid(long.clone()), None);
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("the new uid is 70000 bytes"), "{e}");
    // without a name, and nothing else, there is nothing to do
    let req = Request::rename_operator(Selector::Id(source), NewIdentity::Keep, None);
    let e = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_err();
    assert!(e.to_string().contains("needs a new uid"), "{e}");
}
