//! remove-keyed-state and rename-keyed-state (`surgery::keyed`, `commit::stage`) on the keyed
//! fixtures Flink 1.15.4, 1.20.3 and 2.3.0 wrote: every kind of keyed handle, compression on and
//! off. Each result is staged as the commit sequence stages it, placed as its Java side places it,
//! and read back: by the keyed reader, and by walks of this file's own that compare the raw bytes
//! of every other state, key group by key group, with the input's.

mod common;

use bytes::Bytes;
use checkpoint_surgeon::codec::elements::Layout;
use checkpoint_surgeon::codec::handles::{KeyedHandle, StreamHandle};
use checkpoint_surgeon::codec::keyed::handle::{key_groups_format, SnapshotFormat};
use checkpoint_surgeon::codec::keyed::meta::{BackendStateType, KeyedBackendMeta};
use checkpoint_surgeon::codec::keyed::{heap, manifest, meta, read_handle, sst};
use checkpoint_surgeon::codec::metadata::{SubtaskEntry, Subtasks};
use checkpoint_surgeon::codec::snappy;
use checkpoint_surgeon::commit::{self, Checkpoint, Staged};
use checkpoint_surgeon::surgery::{plan, ChangeAction, Plan, Request, Selector};
use checkpoint_surgeon::{Code, Error};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const VERSIONS: [&str; 3] = ["1.15.4", "1.20.3", "2.3.0"];

fn fixture(version: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(version)
        .join(name)
}

/// A surgery staged into a fresh directory, then placed as the Java commit places it (unchanged
/// relative files copied next to the staged `_metadata`, which becomes `_metadata`), and opened.
struct Applied {
    out: PathBuf,
    plan: Plan,
    staged: Staged,
    cp: Checkpoint,
}

impl Drop for Applied {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

fn apply(cp: &Checkpoint, req: &Request) -> Result<Applied, Error> {
    let plan = plan(cp, req, &mut commit::random_file_name)?;
    let out = common::temp_dir("keyed-surgery");
    let staged = match commit::stage(cp, &plan, &out, None) {
        Ok(s) => s,
        Err(e) => {
            // nothing of a failed stage is left behind
            assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "{e}");
            let _ = std::fs::remove_dir_all(&out);
            return Err(e);
        }
    };
    for f in &staged.unchanged_relative {
        std::fs::copy(cp.dir.join(f), out.join(f)).unwrap();
    }
    std::fs::rename(&staged.metadata_tmp, out.join("_metadata")).unwrap();
    let mut new = Checkpoint::open(&out).unwrap();
    new.mirrors = cp.mirrors.clone();
    Ok(Applied {
        out,
        plan,
        staged,
        cp: new,
    })
}

/// The managed keyed handles: (operator id, subtask, max parallelism, handle).
fn handles(cp: &Checkpoint) -> Vec<(String, i32, i32, KeyedHandle)> {
    let mut v = Vec::new();
    for op in &cp.metadata.operators {
        for (i, st) in op.subtask_states() {
            if let Some(h) = &st.managed_keyed {
                v.push((op.hex_id(), i, op.max_parallelism, h.clone()));
            }
        }
    }
    v
}

fn handle_of(cp: &Checkpoint, op: &str, subtask: i32) -> Option<KeyedHandle> {
    handles(cp)
        .into_iter()
        .find(|h| h.0 == op && h.1 == subtask)
        .map(|h| h.3)
}

fn names(meta: &KeyedBackendMeta) -> Vec<String> {
    meta.states.iter().map(|s| s.name.to_string()).collect()
}

/// What a key-groups handle holds, per (key group, state name): the raw bytes of the state's run
/// (canonical: its pairs with their lengths, decompressed) or part (heap: its count and mappings,
/// decompressed), by a walk of this file's own from each key-group offset.
struct KeyGroupsData {
    meta: KeyedBackendMeta,
    format: SnapshotFormat,
    data: BTreeMap<(i32, String), Vec<u8>>,
}

fn key_groups_data(cp: &Checkpoint, h: &KeyedHandle, max_parallelism: i32) -> KeyGroupsData {
    let KeyedHandle::KeyGroups { code, handle } = h else {
        panic!("a key-groups handle")
    };
    let stream = cp.stream_bytes(handle.delegate.as_ref().unwrap()).unwrap();
    let (meta, format) = key_groups_format(*code, handle, &stream).unwrap();
    let offsets: Vec<i64> = handle.offsets.iter().collect();
    let prefix = if max_parallelism > 128 { 2 } else { 1 };
    let data = match format {
        SnapshotFormat::HeapCheckpoint => {
            heap_parts(&stream, handle.start_key_group, &offsets, &meta)
        }
        _ => canonical_runs(&stream, handle.start_key_group, &offsets, &meta, prefix),
    };
    KeyGroupsData { meta, format, data }
}

/// The key groups' byte ranges: from each non-zero offset to the next one or the stream's end.
fn ranges(stream: &[u8], first: i32, offsets: &[i64], header: usize) -> Vec<(i32, usize, usize)> {
    let starts: Vec<(i32, usize)> = offsets
        .iter()
        .enumerate()
        .filter(|(_, &o)| o != 0)
        .map(|(i, &o)| (first + i as i32, o as usize))
        .collect();
    if let Some(s) = starts.first() {
        assert_eq!(
            s.1, header,
            "the first key group starts where the meta info ends"
        );
    } else {
        assert_eq!(
            stream.len(),
            header,
            "no key group: the stream is its meta info"
        );
    }
    (0..starts.len())
        .map(|i| {
            let end = starts.get(i + 1).map_or(stream.len(), |s| s.1);
            assert!(end > starts[i].1, "key groups ascend");
            (starts[i].0, starts[i].1, end)
        })
        .collect()
}

/// A compressed key group or part from `at`: its stream identifier, then chunks as xerial's
/// `SnappyFramedOutputStream` writes them (every one but the last a full 64 KiB block), decoded.
fn frames(stream: &[u8], at: usize, end: usize) -> (Vec<u8>, usize) {
    assert_eq!(
        stream[at..at + 10],
        snappy::STREAM_IDENTIFIER,
        "at byte {at}"
    );
    let d = snappy::decode_until_identifier(&stream[..end], at + 10).unwrap();
    let sizes: Vec<usize> = d
        .frames
        .iter()
        .enumerate()
        .map(|(i, f)| d.frames.get(i + 1).map_or(d.bytes.len(), |n| n.1) - f.1)
        .collect();
    if let Some((_, full)) = sizes.split_last() {
        assert!(full.iter().all(|&n| n == 65536), "blocks {sizes:?}");
    }
    (d.bytes, d.end as usize)
}

fn canonical_runs(
    stream: &[u8],
    first: i32,
    offsets: &[i64],
    meta: &KeyedBackendMeta,
    prefix: usize,
) -> BTreeMap<(i32, String), Vec<u8>> {
    let mut out = BTreeMap::new();
    for (kg, start, end) in ranges(stream, first, offsets, meta.len) {
        let data = if meta.compressed {
            let (bytes, stop) = frames(stream, start, end);
            assert_eq!(
                stop, end,
                "key group {kg}: one framed stream up to the next"
            );
            bytes
        } else {
            stream[start..end].to_vec()
        };
        let mut p = 0;
        let mut state = u16::from_be_bytes([data[0], data[1]]) as usize;
        p += 2;
        let mut run_start = p;
        loop {
            let kl = i32::from_be_bytes(data[p..p + 4].try_into().unwrap()) as usize;
            let head = [data[p + 4] & 0x7F, data.get(p + 5).copied().unwrap_or(0)];
            let written = if prefix == 1 {
                head[0] as i32
            } else {
                (head[0] as i32) << 8 | head[1] as i32
            };
            assert_eq!(written, kg, "a key of key group {kg}");
            let flag = data[p + 4] & 0x80 != 0;
            p += 4 + kl;
            let vl = i32::from_be_bytes(data[p..p + 4].try_into().unwrap()) as usize;
            p += 4 + vl;
            if flag {
                let name = meta.states[state].name.to_string();
                let old = out.insert((kg, name), data[run_start..p].to_vec());
                assert!(old.is_none(), "one run per state and key group");
                let next = u16::from_be_bytes([data[p], data[p + 1]]);
                p += 2;
                if next == 0xFFFF {
                    break;
                }
                state = next as usize;
                run_start = p;
            }
        }
        assert_eq!(p, data.len(), "key group {kg}'s pairs fill it");
    }
    out
}

fn heap_parts(
    stream: &[u8],
    first: i32,
    offsets: &[i64],
    meta: &KeyedBackendMeta,
) -> BTreeMap<(i32, String), Vec<u8>> {
    let layouts = heap::mapping_layouts(meta);
    let n = meta.states.len();
    let mut out = BTreeMap::new();
    let all = ranges(stream, first, offsets, meta.len);
    assert_eq!(
        all.len(),
        offsets.len(),
        "the heap format writes every key group"
    );
    for (kg, start, end) in all {
        assert_eq!(
            i32::from_be_bytes(stream[start..start + 4].try_into().unwrap()),
            kg
        );
        let mut p = start + 4;
        for part in 0..n {
            let (bytes, next) = if meta.compressed {
                frames(stream, p, end)
            } else {
                let id = u16::from_be_bytes([stream[p], stream[p + 1]]) as usize;
                let count = i32::from_be_bytes(stream[p + 2..p + 6].try_into().unwrap());
                let mut q = p + 6;
                if part + 1 < n {
                    let layout: &Layout = layouts[id].as_ref().unwrap();
                    for _ in 0..count {
                        q = layout.end(&stream[..end], q).unwrap();
                    }
                } else {
                    q = end;
                }
                (stream[p..q].to_vec(), q)
            };
            let id = u16::from_be_bytes([bytes[0], bytes[1]]) as usize;
            let name = meta.states[id].name.to_string();
            assert!(out.insert((kg, name), bytes[2..].to_vec()).is_none());
            p = next;
        }
        assert_eq!(p, end, "key group {kg}'s parts fill it");
    }
    out
}

/// The key-groups fixtures of a version: every format, compression on and off.
fn key_groups_fixtures(version: &str) -> Vec<PathBuf> {
    [
        "keyed-all-hashmap",
        "keyed-all-hashmap-compressed",
        "keyed-all-savepoint-heap",
        "keyed-all-savepoint-heap-compressed",
        "keyed-all-savepoint-rocksdb",
        "keyed-all-savepoint-rocksdb-compressed",
        "keyed-all-rocksdb-full",
        "keyed-stale-hashmap",
    ]
    .iter()
    .map(|n| fixture(version, n))
    .filter(|d| d.join("_metadata").is_file())
    .collect()
}

/// The name a state has after the renames.
fn new_name(renamed: &[(&str, &str)], n: &str) -> String {
    renamed
        .iter()
        .find(|r| r.0 == n)
        .map_or(n.to_string(), |r| r.1.to_string())
}

/// Checks a key-groups result against its input: the states named as planned, every other
/// state's bytes in every key group as they were, compression as it was, each offset at its key
/// group (the walks above check that), and the staged figures.
fn check_key_groups(
    before: &Checkpoint,
    after: &Applied,
    removed: &[&str],
    renamed: &[(&str, &str)],
) -> usize {
    let mut checked = 0;
    for (op, subtask, maxp, h) in handles(before) {
        let old = key_groups_data(before, &h, maxp);
        let touched = names(&old.meta)
            .iter()
            .any(|n| removed.contains(&n.as_str()) || renamed.iter().any(|r| r.0 == n));
        let Some(new_h) = handle_of(&after.cp, &op, subtask) else {
            assert!(
                names(&old.meta)
                    .iter()
                    .all(|n| removed.contains(&n.as_str())),
                "{op} #{subtask}: the handle went, so all its states did"
            );
            checked += 1;
            continue;
        };
        if !touched {
            assert_eq!(
                new_h, h,
                "{op} #{subtask}: a handle without the state is unchanged"
            );
            continue;
        }
        let new = key_groups_data(&after.cp, &new_h, maxp);
        assert_eq!(new.format, old.format);
        assert_eq!(new.meta.compressed, old.meta.compressed, "compression kept");
        let rename = |n: &str| new_name(renamed, n);
        let expected_names: Vec<String> = names(&old.meta)
            .iter()
            .filter(|n| !removed.contains(&n.as_str()))
            .map(|n| rename(n))
            .collect();
        assert_eq!(names(&new.meta), expected_names, "{op} #{subtask}");
        let expected: BTreeMap<(i32, String), Vec<u8>> = old
            .data
            .iter()
            .filter(|((_, n), _)| !removed.contains(&n.as_str()))
            .map(|((kg, n), b)| ((*kg, rename(n)), b.clone()))
            .collect();
        assert_eq!(
            new.data.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{op} #{subtask}: the same (key group, state) pairs"
        );
        assert!(
            new.data == expected,
            "{op} #{subtask}: every byte of every other state kept"
        );
        // the serializer snapshots of the kept states are the ones they had
        for s in &new.meta.states {
            let o = old
                .meta
                .states
                .iter()
                .find(|x| rename(&x.name.to_string()) == s.name.to_string())
                .unwrap();
            assert_eq!(s.backend_type, o.backend_type);
            assert_eq!(
                s.end - s.start - s.name.as_bytes().len(),
                o.end - o.start - o.name.as_bytes().len()
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn removing_any_state_from_key_groups_keeps_every_other_state_byte_for_byte() {
    let mut runs = 0;
    for version in VERSIONS {
        for dir in key_groups_fixtures(version) {
            let cp = Checkpoint::open(&dir).unwrap();
            let (_, _, maxp, h) = handles(&cp).remove(0);
            let all = names(&key_groups_data(&cp, &h, maxp).meta);
            for state in &all {
                let req = Request::remove_keyed_state(Selector::All, state);
                let a =
                    apply(&cp, &req).unwrap_or_else(|e| panic!("{}: {state}: {e}", dir.display()));
                let checked = check_key_groups(&cp, &a, &[state], &[]);
                assert!(checked > 0, "{}: {state}", dir.display());
                for k in &a.staged.keyed {
                    let len = std::fs::metadata(a.out.join(&k.file)).unwrap().len();
                    assert_eq!(k.bytes_written, len);
                    assert!(k.bytes_read > k.bytes_written, "{k:?}");
                }
                assert_eq!(a.staged.keyed.len(), a.plan.keyed.len());
                assert!(a
                    .plan
                    .keyed
                    .iter()
                    .all(|k| !k.exact && k.removed == vec![state.clone()]));
                runs += 1;
            }
        }
    }
    println!("{runs} removals checked byte for byte");
    assert!(runs >= 3 * 7 * 9, "{runs}");
}

#[test]
fn the_staged_figures_count_the_removed_entries() {
    for version in VERSIONS {
        let cp = Checkpoint::open(&fixture(version, "keyed-all-savepoint-rocksdb")).unwrap();
        let report = commit::keyed::read_keyed(&cp, 1);
        let s = report
            .operators
            .iter()
            .flat_map(|o| &o.states)
            .find(|s| s.name == "map-state")
            .unwrap();
        let a = apply(
            &cp,
            &Request::remove_keyed_state(Selector::All, "map-state"),
        )
        .unwrap();
        let removed: u64 = a.staged.keyed.iter().map(|k| k.entries_removed).sum();
        assert_eq!(removed, s.total.entries, "{version}");
        let raw: u64 = a.staged.keyed.iter().map(|k| k.raw_bytes_removed).sum();
        assert_eq!(raw, s.total.raw_bytes, "{version}");
        // the rows of the plan: one per handle, counted when staged
        let rows: Vec<_> = a
            .plan
            .changes
            .iter()
            .filter(|c| c.state == "map-state")
            .collect();
        assert_eq!(rows.len(), a.plan.keyed.len());
        assert!(rows
            .iter()
            .all(|c| c.action == ChangeAction::RemoveKeyedState && c.elements_before == -1));
        // what crosses to Java once staged: each row with its handle's counted figures
        let summary = checkpoint_surgeon::wire::PlanSummary::of(&cp, &a.plan, Some(&a.staged));
        let rows: Vec<_> = summary
            .changes
            .iter()
            .filter(|c| c.state == "map-state")
            .collect();
        let entries: i64 = rows.iter().map(|c| c.elements_before).sum();
        let bytes: i64 = rows.iter().map(|c| c.bytes_removed).sum();
        assert_eq!((entries as u64, bytes as u64), (removed, raw), "{version}");
    }
}

#[test]
fn renaming_a_state_of_key_groups_moves_only_the_meta_info() {
    for version in VERSIONS {
        for dir in key_groups_fixtures(version) {
            let cp = Checkpoint::open(&dir).unwrap();
            let req = Request::rename_keyed_state(Selector::All, "pojo-state", "pojo-state-v1");
            let a = apply(&cp, &req).unwrap();
            assert!(check_key_groups(&cp, &a, &[], &[("pojo-state", "pojo-state-v1")]) > 0);
            for k in &a.plan.keyed {
                assert!(k.exact, "a rename's figures are exact in the plan");
                assert_eq!(
                    k.renamed,
                    vec![("pojo-state".into(), "pojo-state-v1".into())]
                );
            }
            for (k, p) in a.staged.keyed.iter().zip(&a.plan.keyed) {
                assert_eq!(k.bytes_written, p.bytes_written);
                assert_eq!(
                    k.bytes_written,
                    k.bytes_read + 3,
                    "the name grew by 3 bytes"
                );
            }
        }
    }
}

#[test]
fn key_group_streams_come_out_the_same_whatever_the_number_of_threads() {
    let cp = Checkpoint::open(&fixture("1.20.3", "keyed-all-hashmap-compressed")).unwrap();
    let contents = |threads: usize| {
        let req = Request::remove_keyed_state(Selector::All, "list-state").with_threads(threads);
        let a = apply(&cp, &req).unwrap();
        assert_eq!(a.plan.threads, threads);
        let mut v: Vec<(String, Vec<u8>)> = a
            .staged
            .keyed
            .iter()
            .map(|k| {
                (
                    k.replaces.clone(),
                    std::fs::read(a.out.join(&k.file)).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let one = contents(1);
    assert_eq!(one.len(), 2);
    assert_eq!(one, contents(3));
}

#[test]
fn the_input_is_never_changed_even_when_staged_next_to_it() {
    let dir = common::copy_fixture(&fixture("2.3.0", "keyed-all-savepoint-heap-compressed"));
    let hash = |d: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.display().to_string(), std::fs::read(&p).unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let before = hash(&dir);
    let cp = Checkpoint::open(&dir).unwrap();
    let plan = plan(
        &cp,
        &Request::remove_keyed_state(Selector::All, "value-state"),
        &mut commit::random_file_name,
    )
    .unwrap();
    let staged = commit::stage(&cp, &plan, &dir, None).unwrap();
    let after = hash(&dir);
    // every file that was there is there with the same bytes; the staged ones are new
    for (p, b) in &before {
        assert_eq!(
            after.iter().find(|x| x.0 == *p).map(|x| &x.1),
            Some(b),
            "{p}"
        );
    }
    assert_eq!(after.len(), before.len() + staged.written.len() + 1);
    let _ = std::fs::remove_dir_all(dir);
}

/// The SST files (keys) of a RocksDB handle, its MANIFEST and meta info.
struct Rocks {
    meta: KeyedBackendMeta,
    manifest: manifest::Manifest,
    manifest_bytes: Bytes,
    current: StreamHandle,
    ssts: BTreeMap<String, u64>,
}

fn rocks(cp: &Checkpoint, h: &KeyedHandle) -> Rocks {
    let KeyedHandle::Incremental {
        meta: m,
        shared,
        private,
        ..
    } = h
    else {
        panic!("a RocksDB handle")
    };
    let meta = meta::parse(&cp.stream_bytes(m.as_ref().unwrap()).unwrap()).unwrap();
    let base = |k: &str| k.rsplit('/').next().unwrap().to_string();
    let current = private
        .iter()
        .find(|(k, _)| base(&k.to_string()) == "CURRENT")
        .and_then(|(_, h)| h.clone())
        .unwrap();
    let name = String::from_utf8(cp.stream_bytes(&current).unwrap().to_vec()).unwrap();
    let mh = private
        .iter()
        .find(|(k, _)| base(&k.to_string()) == name.trim())
        .and_then(|(_, h)| h.as_ref())
        .unwrap();
    let manifest_bytes = cp.stream_bytes(mh).unwrap();
    let manifest = manifest::parse(&manifest_bytes).unwrap();
    let ssts = shared
        .iter()
        .chain(private)
        .filter_map(|(k, _)| sst::file_number(&k.to_string()).map(|n| (k.to_string(), n)))
        .collect();
    Rocks {
        meta,
        manifest,
        manifest_bytes,
        current,
        ssts,
    }
}

/// The RocksDB fixtures of a version, each checkpoint opened (retained ones with their shared
/// directory mirrored).
fn rocksdb_fixtures(version: &str) -> Vec<Checkpoint> {
    let mut v = Vec::new();
    for n in ["keyed-all-native", "keyed-stale-native", "savepoint-native"] {
        let d = fixture(version, n);
        if d.join("_metadata").is_file() {
            v.push(Checkpoint::open(&d).unwrap());
        }
    }
    let inc = fixture(version, "keyed-all-incremental");
    let mut chks: Vec<PathBuf> = std::fs::read_dir(&inc)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("_metadata").is_file())
        .collect();
    chks.sort();
    v.extend(chks.iter().map(|c| common::open_retained(c)));
    v
}

/// Checks a RocksDB result against its input: the meta info, the MANIFEST (the input's bytes up
/// to its end and RocksDB's drop record after them, or written anew for a rename), the SST files
/// (exactly those of live families of kept states), every other file as it was.
fn check_rocksdb(
    before: &Checkpoint,
    after: &Applied,
    removed: &[&str],
    renamed: &[(&str, &str)],
) -> usize {
    let mut checked = 0;
    for (op, subtask, maxp, h) in handles(before) {
        let old = rocks(before, &h);
        let names_before = names(&old.meta);
        let touched = names_before
            .iter()
            .any(|n| removed.contains(&n.as_str()) || renamed.iter().any(|r| r.0 == n));
        let new_h = handle_of(&after.cp, &op, subtask);
        if !touched {
            assert_eq!(new_h.as_ref(), Some(&h), "{op} #{subtask}: unchanged");
            continue;
        }
        let Some(new_h) = new_h else {
            assert!(names_before.iter().all(|n| removed.contains(&n.as_str())));
            checked += 1;
            continue;
        };
        let new = rocks(&after.cp, &new_h);
        let rename = |n: &str| new_name(renamed, n);
        let kept: Vec<String> = names_before
            .iter()
            .filter(|n| !removed.contains(&n.as_str()))
            .map(|n| rename(n))
            .collect();
        assert_eq!(names(&new.meta), kept, "{op} #{subtask}");
        assert_eq!(new.current, old.current, "CURRENT is the same file");
        // the families: dropped ones gone with their files, renamed ones with the same id
        for (id, cf) in &old.manifest.column_families {
            let after_cf = &new.manifest.column_families[id];
            if removed.contains(&cf.name.as_str()) && !cf.dropped {
                assert!(after_cf.dropped && after_cf.files.is_empty(), "{}", cf.name);
                assert!(new.manifest.by_name(&cf.name).is_none());
            } else {
                assert_eq!(after_cf.files, cf.files, "{}", cf.name);
                assert_eq!(after_cf.dropped, cf.dropped);
                if !cf.dropped {
                    assert_eq!(after_cf.name, rename(&cf.name));
                }
            }
        }
        if renamed.is_empty() {
            // append only: the input's records as they were, RocksDB's drop records after them
            let end = old.manifest.end as usize;
            assert_eq!(new.manifest_bytes[..end], old.manifest_bytes[..end]);
            assert_eq!(
                new.manifest.edits,
                old.manifest.edits
                    + removed
                        .iter()
                        .filter(|r| names_before.contains(&r.to_string()))
                        .count()
            );
        }
        // the SST files left: exactly those live in a family the new meta info names (or default)
        let live_kept: BTreeSet<String> = old
            .ssts
            .iter()
            .filter(|(_, n)| {
                old.manifest
                    .live_file(**n)
                    .is_none_or(|cf| !removed.contains(&cf.name.as_str()))
            })
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(new.ssts.keys().cloned().collect::<BTreeSet<_>>(), live_kept);
        for n in new.ssts.values() {
            let cf = new.manifest.live_file(*n).unwrap();
            assert!(
                cf.name == "default" || kept.contains(&cf.name),
                "{}",
                cf.name
            );
        }
        // the reader agrees: the kept states have the figures they had
        let r_old = read_handle(&h, before, maxp).remove(0).unwrap();
        let r_new = read_handle(&new_h, &after.cp, maxp).remove(0).unwrap();
        assert!(r_new.notes.is_empty(), "{:?}", r_new.notes);
        for (i, n) in names_before.iter().enumerate() {
            if let Some(j) = kept.iter().position(|k| *k == rename(n)) {
                assert_eq!(r_new.states[j], r_old.states[i], "{n}");
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn removing_a_state_from_rocksdb_handles_drops_its_column_family_and_files_only() {
    let mut runs = 0;
    for version in VERSIONS {
        for cp in rocksdb_fixtures(version) {
            let (_, _, _, h) = handles(&cp).remove(0);
            let all = names(&rocks(&cp, &h).meta);
            for state in &all {
                let req = Request::remove_keyed_state(Selector::All, state);
                let a = apply(&cp, &req)
                    .unwrap_or_else(|e| panic!("{}: {state}: {e}", cp.metadata_path.display()));
                assert!(check_rocksdb(&cp, &a, &[state], &[]) > 0);
                for k in &a.plan.keyed {
                    assert!(k.exact);
                    // a few KiB: meta info, MANIFEST, the dropped files' footers, never SST data
                    assert!(k.bytes_written < 64 << 10, "{k:?}");
                    assert!(k.bytes_read < k.bytes_dropped.max(1) + (64 << 10), "{k:?}");
                }
                assert!(
                    a.staged.keyed.is_empty(),
                    "no key-groups stream was written"
                );
                runs += 1;
            }
        }
    }
    println!("{runs} removals from RocksDB handles");
    assert!(runs >= 3 * 4 * 5, "{runs}");
}

#[test]
fn renaming_a_state_of_rocksdb_handles_renames_its_column_family() {
    for version in VERSIONS {
        for cp in rocksdb_fixtures(version) {
            let (_, _, _, h) = handles(&cp).remove(0);
            let state = names(&rocks(&cp, &h).meta)[0].clone();
            let to = if state.starts_with("_timer_state/event_") {
                "_timer_state/event_renamed".to_string()
            } else if state.starts_with("_timer_state/processing_") {
                "_timer_state/processing_renamed".to_string()
            } else {
                format!("{state}_v1")
            };
            let a = apply(
                &cp,
                &Request::rename_keyed_state(Selector::All, &state, &to),
            )
            .unwrap();
            assert!(check_rocksdb(&cp, &a, &[], &[(&state, &to)]) > 0);
            // and a removal together with a rename
            let req = Request::new(vec![
                Request::rename_keyed_state(Selector::All, "map-state", "map-state-v2")
                    .operations
                    .remove(0),
                Request::remove_keyed_state(Selector::All, "list-state")
                    .operations
                    .remove(0),
            ]);
            if names(&rocks(&cp, &h).meta).contains(&"list-state".to_string()) {
                let a = apply(&cp, &req).unwrap();
                assert!(
                    check_rocksdb(&cp, &a, &["list-state"], &[("map-state", "map-state-v2")]) > 0
                );
            }
        }
    }
}

#[test]
fn inline_handles_are_rewritten_in_the_plan_for_every_version() {
    let mut seen = 0;
    for dir in common::fixture_dirs("savepoint-canonical") {
        let cp = Checkpoint::open(&dir).unwrap();
        let a = apply(&cp, &Request::remove_keyed_state(Selector::All, "seen")).unwrap();
        assert!(
            check_key_groups(&cp, &a, &["seen"], &[]) > 0,
            "{}",
            dir.display()
        );
        assert!(a.staged.keyed.is_empty() && a.plan.keyed.iter().all(|k| k.exact));
        // inline: the figures are counted in the plan
        assert!(
            a.plan.changes.iter().all(|c| c.elements_before > 0),
            "{:?}",
            a.plan.changes
        );
        seen += 1;
    }
    for dir in common::fixture_dirs("savepoint-native") {
        let cp = Checkpoint::open(&dir).unwrap();
        let (_, _, _, h) = handles(&cp).remove(0);
        let state = names(&rocks(&cp, &h).meta)[0].clone();
        let a = apply(&cp, &Request::remove_keyed_state(Selector::All, &state)).unwrap();
        assert!(
            check_rocksdb(&cp, &a, &[state.as_str()], &[]) > 0,
            "{}",
            dir.display()
        );
        seen += 1;
    }
    assert!(seen >= 12 + 9, "{seen}");
}

#[test]
fn removing_every_state_removes_the_handle_as_flink_snapshots_an_empty_backend() {
    for version in VERSIONS {
        for dir in [
            fixture(version, "keyed-all-savepoint-rocksdb-compressed"),
            fixture(version, "keyed-all-hashmap"),
            fixture(version, "keyed-all-native"),
        ] {
            let cp = Checkpoint::open(&dir).unwrap();
            let mut all = BTreeSet::new();
            for (_, _, m, h) in handles(&cp) {
                let meta = match &h {
                    KeyedHandle::KeyGroups { .. } => key_groups_data(&cp, &h, m).meta,
                    _ => rocks(&cp, &h).meta,
                };
                all.extend(names(&meta));
            }
            let ops = all
                .iter()
                .map(|s| {
                    Request::remove_keyed_state(Selector::All, s)
                        .operations
                        .remove(0)
                })
                .collect();
            let a = apply(&cp, &Request::new(ops)).unwrap();
            assert!(handles(&a.cp).is_empty(), "{}", dir.display());
            assert!(a.plan.keyed.iter().all(|k| k.handle_dropped));
            assert!(
                a.staged.written.is_empty(),
                "nothing but _metadata is written"
            );
            // all but one state, then the last one alone: the same
            let mut ops: Vec<_> = all
                .iter()
                .map(|s| {
                    Request::remove_keyed_state(Selector::All, s)
                        .operations
                        .remove(0)
                })
                .collect();
            ops.pop();
            let most = apply(&cp, &Request::new(ops)).unwrap();
            assert!(!handles(&most.cp).is_empty());
            let last = all.iter().last().unwrap();
            let a = apply(&most.cp, &Request::remove_keyed_state(Selector::All, last)).unwrap();
            assert!(handles(&a.cp).is_empty(), "{}: {last}", dir.display());
        }
    }
}

fn failure(r: Result<Applied, Error>) -> (Code, String) {
    let e = r.err().expect("an error");
    (e.code(), e.to_string())
}

#[test]
fn a_state_or_operator_that_does_not_exist_selects_nothing() {
    let cp = Checkpoint::open(&fixture("2.3.0", "keyed-all-native")).unwrap();
    let (c, m) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, "no-such-state"),
    ));
    assert_eq!(c, Code::NothingSelected);
    assert!(
        m.contains("'value-state'") && m.contains("'map-state'"),
        "{m}"
    );
    let (c, m) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::Uid("no-such-uid".into()), "value-state"),
    ));
    assert_eq!(c, Code::NothingSelected);
    assert!(m.contains("no operator matches"), "{m}");
    // an operator without keyed state
    let cp = Checkpoint::open(&fixture("2.3.0", "operator-state-files")).unwrap();
    let (c, m) = failure(apply(&cp, &Request::remove_keyed_state(Selector::All, "x")));
    assert_eq!(c, Code::NothingSelected);
    assert!(m.contains("no keyed state"), "{m}");
}

#[test]
fn a_rename_onto_an_existing_name_or_out_of_a_timer_prefix_is_refused() {
    let cp = Checkpoint::open(&fixture("1.20.3", "keyed-all-savepoint-heap")).unwrap();
    for (from, to, expected) in [
        ("value-state", "map-state", "already exists"),
        ("value-state", "value-state", "no new name"),
        ("value-state", "", "no new name"),
        (
            "_timer_state/event_user-timers",
            "user-timers",
            "keeps its prefix",
        ),
        (
            "_timer_state/event_user-timers",
            "_timer_state/processing_user-timers",
            "already exists",
        ),
        (
            "_timer_state/event_user-timers",
            "_timer_state/processing_x",
            "keeps its prefix",
        ),
        ("value-state", "_timer_state/event_x", "keeps its prefix"),
    ] {
        let (c, m) = failure(apply(
            &cp,
            &Request::rename_keyed_state(Selector::All, from, to),
        ));
        assert_eq!(c, Code::InvalidArgument, "{from} -> {to}: {m}");
        assert!(m.contains(expected), "{from} -> {to}: {m}");
    }
    // within its prefix a timer queue may be renamed, and timers may be removed when named
    let a = apply(
        &cp,
        &Request::rename_keyed_state(
            Selector::All,
            "_timer_state/event_user-timers",
            "_timer_state/event_my-timers",
        ),
    )
    .unwrap();
    assert!(
        check_key_groups(
            &cp,
            &a,
            &[],
            &[(
                "_timer_state/event_user-timers",
                "_timer_state/event_my-timers"
            )]
        ) > 0
    );
    let a = apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, "_timer_state/processing_user-timers"),
    )
    .unwrap();
    assert!(a.plan.changes.iter().all(|c| c.detail.contains("timers")));
    assert!(check_key_groups(&cp, &a, &["_timer_state/processing_user-timers"], &[]) > 0);
    // a state named twice in one request
    let twice = Request::new(vec![
        Request::remove_keyed_state(Selector::All, "value-state")
            .operations
            .remove(0),
        Request::rename_keyed_state(Selector::All, "value-state", "v")
            .operations
            .remove(0),
    ]);
    let (c, m) = failure(apply(&cp, &twice));
    assert_eq!(
        (c, m.contains("named by two operations")),
        (Code::InvalidArgument, true),
        "{m}"
    );
}

#[test]
fn changelog_handles_are_refused_with_the_way_out() {
    let mut cp = Checkpoint::open(&fixture("1.20.3", "keyed-all-native")).unwrap();
    // the same state as the materialized part of a changelog handle (a model edit)
    for op in &mut cp.metadata.operators {
        let Subtasks::List(l) = &mut op.subtasks else {
            continue;
        };
        for e in l {
            let SubtaskEntry::State(_, st) = e else {
                continue;
            };
            if let Some(h) = st.managed_keyed.take() {
                st.managed_keyed = Some(KeyedHandle::Changelog {
                    code: 14,
                    start_key_group: 0,
                    num_key_groups: 128,
                    checkpointed_size: 0,
                    materialized: vec![Some(h)],
                    non_materialized: vec![],
                    materialization_id: 1,
                    checkpoint_id: Some(4),
                    id: checkpoint_surgeon::codec::io::JStr::new("x"),
                });
            }
        }
    }
    let (c, m) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, "value-state"),
    ));
    assert_eq!(c, Code::InvalidArgument);
    assert!(
        m.contains("changelog") && m.contains("savepoint --type canonical"),
        "{m}"
    );
}

#[test]
fn a_truncated_key_group_fails_the_stage_and_nothing_is_written() {
    for name in [
        "keyed-all-savepoint-rocksdb",
        "keyed-all-savepoint-rocksdb-compressed",
        "keyed-all-hashmap-compressed",
    ] {
        let dir = common::copy_fixture(&fixture("1.20.3", name));
        let cp = Checkpoint::open(&dir).unwrap();
        let (_, _, _, h) = handles(&cp).remove(0);
        let KeyedHandle::KeyGroups { handle, .. } = &h else {
            panic!()
        };
        let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate else {
            panic!()
        };
        let file = dir.join(path.to_string());
        let bytes = std::fs::read(&file).unwrap();
        let last = handle.offsets.iter().filter(|&o| o > 0).max().unwrap() as usize;
        // cut in the middle of the last key group
        std::fs::write(&file, &bytes[..last + (bytes.len() - last) / 2]).unwrap();
        let (c, m) = failure(apply(
            &cp,
            &Request::remove_keyed_state(Selector::All, "value-state"),
        ));
        assert_eq!(c, Code::Format, "{name}: {m}");
        assert!(
            m.contains(&path.to_string()) && m.contains("at byte"),
            "{name}: {m}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_manifest_record_that_straddles_a_block_is_refused_before_anything_is_written() {
    let dir = common::copy_fixture(&fixture("1.20.3", "keyed-all-native"));
    let cp = Checkpoint::open(&dir).unwrap();
    let (_, _, _, h) = handles(&cp).remove(0);
    let r = rocks(&cp, &h);
    // the MANIFEST's own records, framed without regard to blocks (as no RocksDB writes them),
    // after a skippable filler that makes the second one start 20 bytes before the block's end
    let mut records = Vec::new();
    manifest::records(&r.manifest_bytes, &mut |_, rec| {
        records.push(rec.to_vec());
        Ok(())
    })
    .unwrap();
    let big = (1..records.len())
        .max_by_key(|&i| records[i].len())
        .unwrap();
    assert!(records[big].len() > 13);
    let l = 32768 - 20 - 14 - records[0].len();
    let mut filler = vec![0x88, 0x40]; // tag 8200: a field RocksDB may skip
    let m = l - 2 - 3;
    filler.extend_from_slice(&[(m as u8) | 0x80, ((m >> 7) as u8) | 0x80, (m >> 14) as u8]);
    filler.resize(l, 0);
    let mut log = Vec::new();
    for rec in [&records[0], &filler, &records[big]] {
        let crc = snappy::masked_crc32c_of(&[&[1u8], rec]);
        log.extend_from_slice(&crc.to_le_bytes());
        log.extend_from_slice(&(rec.len() as u16).to_le_bytes());
        log.push(1);
        log.extend_from_slice(rec);
    }
    assert!(
        manifest::parse(&log[..32768 - 20].to_vec()).is_ok(),
        "the records before are sound"
    );
    let KeyedHandle::Incremental { private, .. } = &h else {
        panic!()
    };
    let name = std::fs::read_to_string(dir.join(match &r.current {
        StreamHandle::RelativeFile { path, .. } => path.to_string(),
        _ => panic!(),
    }))
    .unwrap();
    let (_, mh) = private
        .iter()
        .find(|(k, _)| k.to_string() == name.trim())
        .unwrap();
    let Some(StreamHandle::RelativeFile { path, .. }) = mh else {
        panic!()
    };
    std::fs::write(dir.join(path.to_string()), &log).unwrap();
    let before = std::fs::read_dir(&dir).unwrap().count();
    let (c, m) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, "value-state"),
    ));
    assert_eq!(c, Code::Format, "{m}");
    assert!(
        m.contains(&path.to_string()) && m.contains("within its 32 KiB block"),
        "{m}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_state_whose_column_family_the_manifest_does_not_have_is_refused() {
    let dir = common::copy_fixture(&fixture("2.3.0", "keyed-all-native"));
    let mut cp = Checkpoint::open(&dir).unwrap();
    // the family dropped in the MANIFEST (RocksDB's own record appended) but the state still in
    // the meta info: the checkpoint disagrees with itself, and the surgery refuses it
    let (_, _, _, h) = handles(&cp).remove(0);
    let r = rocks(&cp, &h);
    let id = r.manifest.by_name("value-state").unwrap().id;
    let mut dropped = r.manifest_bytes[..r.manifest.end as usize].to_vec();
    dropped.extend_from_slice(&manifest::frame(
        r.manifest.end,
        &[manifest::drop_edit(&r.manifest, id).unwrap()],
    ));
    for op in &mut cp.metadata.operators {
        let Subtasks::List(l) = &mut op.subtasks else {
            continue;
        };
        for e in l {
            let SubtaskEntry::State(_, st) = e else {
                continue;
            };
            if let Some(KeyedHandle::Incremental { private, .. }) = &mut st.managed_keyed {
                for (k, h) in private.iter_mut() {
                    if k.to_string().starts_with("MANIFEST-") {
                        *h = Some(StreamHandle::ByteStream {
                            name: k.clone(),
                            data: Bytes::from(dropped.clone()),
                        });
                    }
                }
            }
        }
    }
    let (c, m) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, "value-state"),
    ));
    assert_eq!(c, Code::Format, "{m}");
    assert!(m.contains("a live column family 'value-state'"), "{m}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_unframed_heap_part_of_unknown_layout_is_refused_with_the_way_out() {
    let dir = common::copy_fixture(&fixture("1.20.3", "keyed-all-hashmap"));
    let cp = Checkpoint::open(&dir).unwrap();
    // every serializer snapshot class renamed to one of the same length the tool does not know
    for (_, _, _, h) in handles(&cp) {
        let KeyedHandle::KeyGroups { handle, .. } = &h else {
            panic!()
        };
        let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate else {
            panic!()
        };
        let file = dir.join(path.to_string());
        let mut b = std::fs::read(&file).unwrap();
        let header = handle.offsets.iter().min().unwrap() as usize;
        let mut i = 0;
        while let Some(p) = b[i..header].windows(8).position(|w| w == b"Snapshot") {
            b[i + p + 7] = b'z';
            i += p + 8;
        }
        std::fs::write(&file, &b).unwrap();
    }
    let cp = Checkpoint::open(&dir).unwrap();
    let (_, _, m, h) = handles(&cp).remove(0);
    let KeyedHandle::KeyGroups { handle, code } = &h else {
        panic!()
    };
    let stream = cp.stream_bytes(handle.delegate.as_ref().unwrap()).unwrap();
    let (meta, _) = key_groups_format(*code, handle, &stream).unwrap();
    let _ = m;
    // a state in the middle of each key group (not its last part)
    let state = meta.states[0].name.to_string();
    let (c, msg) = failure(apply(
        &cp,
        &Request::remove_keyed_state(Selector::All, &state),
    ));
    assert_eq!(c, Code::Unsupported, "{msg}");
    assert!(
        msg.contains("canonical savepoint") && msg.contains("at byte"),
        "{msg}"
    );
    // a rename needs no walk of the parts
    assert!(apply(
        &cp,
        &Request::rename_keyed_state(Selector::All, &state, "renamed")
    )
    .is_ok());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn timers_are_kept_unless_named() {
    for version in VERSIONS {
        let cp = Checkpoint::open(&fixture(version, "keyed-all-hashmap-compressed")).unwrap();
        let a = apply(
            &cp,
            &Request::remove_keyed_state(Selector::All, "ttl-state"),
        )
        .unwrap();
        check_key_groups(&cp, &a, &["ttl-state"], &[]);
        for (_, _, m, h) in handles(&a.cp) {
            let meta = key_groups_data(&a.cp, &h, m).meta;
            let queues = meta
                .states
                .iter()
                .filter(|s| s.backend_type == BackendStateType::PriorityQueue)
                .count();
            assert_eq!(queues, 2, "event and processing timers are still there");
        }
    }
}

/// A surgery for the judge: its name, the request, and the states it renames (old, new).
type JudgeCase = (String, Request, Vec<(String, String)>);

/// The files of a RocksDB handle under the names Flink gives them when it restores the handle
/// into an instance directory (its keys' last parts), and its column families (the states of its
/// meta info, in order).
fn materialize(cp: &Checkpoint, h: &KeyedHandle, dir: &Path) -> Vec<String> {
    let KeyedHandle::Incremental {
        meta: m,
        shared,
        private,
        ..
    } = h
    else {
        panic!("a RocksDB handle")
    };
    std::fs::create_dir_all(dir).unwrap();
    for (k, fh) in shared.iter().chain(private) {
        let k = k.to_string();
        let name = k.rsplit('/').next().unwrap();
        std::fs::write(
            dir.join(name),
            cp.stream_bytes(fh.as_ref().unwrap()).unwrap(),
        )
        .unwrap();
    }
    names(&meta::parse(&cp.stream_bytes(m.as_ref().unwrap()).unwrap()).unwrap())
}

/// Writes, for `tests/judges/run.sh`, one directory per surgery of every RocksDB fixture:
/// `before/` and `after/` (the instance directories Flink would restore from the input's and
/// the result's handle), `before.cfs` and `after.cfs` (their column families, one per line) and
/// `kept` (old and new name of each kept state, tab-separated). The judge opens both with
/// FRocksDB's JNI jar and compares every key and value of each kept column family.
#[test]
#[ignore = "run by tests/judges/run.sh, which hands the directories to RocksDB"]
fn rocksdb_instances_for_the_judge() {
    let root = PathBuf::from(
        std::env::var("CHECKPOINT_SURGEON_JUDGE_DIR").expect("CHECKPOINT_SURGEON_JUDGE_DIR"),
    );
    let mut cases = 0;
    for version in VERSIONS {
        for cp in rocksdb_fixtures(version) {
            let (op, subtask, _, h) = handles(&cp).remove(0);
            let states = names(&rocks(&cp, &h).meta);
            let has = |s: &str| states.iter().any(|x| x == s);
            let mut requests: Vec<JudgeCase> = Vec::new();
            let remove = |s: &str, requests: &mut Vec<_>| {
                if has(s) {
                    requests.push((
                        format!("remove-{s}"),
                        Request::remove_keyed_state(Selector::All, s),
                        vec![],
                    ));
                }
            };
            remove(&states[0], &mut requests);
            remove("list-state", &mut requests);
            remove("dropped-in-v2", &mut requests);
            remove("_timer_state/event_user-timers", &mut requests);
            if has("map-state") && has("value-state") {
                let rename =
                    Request::rename_keyed_state(Selector::All, "map-state", "map-state-v1");
                requests.push((
                    "rename-map-state".into(),
                    rename.clone(),
                    vec![("map-state".into(), "map-state-v1".into())],
                ));
                let mut both = rename;
                both.operations
                    .extend(Request::remove_keyed_state(Selector::All, "value-state").operations);
                requests.push((
                    "rename-map-state-remove-value-state".into(),
                    both,
                    vec![("map-state".into(), "map-state-v1".into())],
                ));
            }
            let source = cp
                .metadata_path
                .parent()
                .unwrap()
                .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures"))
                .unwrap_or(cp.metadata_path.parent().unwrap())
                .display()
                .to_string()
                .replace('/', "_");
            for (what, req, renamed) in requests {
                let a = apply(&cp, &req).unwrap();
                let case = root.join(format!("{source}_{}_{what}", &op[..8]).replace('/', "_"));
                let before = materialize(&cp, &h, &case.join("before"));
                let new_h = handle_of(&a.cp, &op, subtask).unwrap();
                let after = materialize(&a.cp, &new_h, &case.join("after"));
                std::fs::write(case.join("before.cfs"), before.join("\n")).unwrap();
                std::fs::write(case.join("after.cfs"), after.join("\n")).unwrap();
                let mut kept = String::new();
                for s in &before {
                    let to = renamed
                        .iter()
                        .find(|r| r.0 == *s)
                        .map_or(s.clone(), |r| r.1.clone());
                    if after.contains(&to) {
                        kept.push_str(&format!("{s}\t{to}\n"));
                    }
                }
                assert!(!kept.is_empty());
                std::fs::write(case.join("kept"), kept).unwrap();
                std::fs::write(case.join("version"), version).unwrap();
                cases += 1;
            }
        }
    }
    println!("{cases} cases in {}", root.display());
    assert!(cases >= 3 * 5 * 3, "{cases}");
}

#[test]
fn a_stream_changed_between_plan_and_stage_is_refused() {
    let dir = common::copy_fixture(&fixture("1.20.3", "keyed-all-savepoint-rocksdb"));
    let cp = Checkpoint::open(&dir).unwrap();
    let req = Request::remove_keyed_state(Selector::All, "value-state");
    let p = plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let (_, _, _, h) = handles(&cp).remove(0);
    let KeyedHandle::KeyGroups { handle, .. } = &h else {
        panic!()
    };
    let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate else {
        panic!()
    };
    // a serializer class name in the meta info changed, the length kept
    let file = dir.join(path.to_string());
    let mut b = std::fs::read(&file).unwrap();
    let at = b.windows(8).position(|w| w == b"Snapshot").unwrap();
    b[at] = b'Z';
    std::fs::write(&file, &b).unwrap();
    let out = common::temp_dir("changed");
    let e = commit::stage(&cp, &p, &out, None).unwrap_err();
    assert_eq!(e.code(), Code::Validation, "{e}");
    assert!(e.to_string().contains("changed since"), "{e}");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing is left"
    );
    let _ = std::fs::remove_dir_all(out);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn reference_unchanged_points_the_kept_files_at_the_source() {
    let dir = fixture("1.20.3", "keyed-all-native");
    let cp = Checkpoint::open(&dir).unwrap();
    let src = format!("file:{}", dir.display());
    let req =
        Request::remove_keyed_state(Selector::All, "list-state").with_reference_unchanged(&src);
    let p = plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let new_files: BTreeSet<String> = p
        .new_streams
        .iter()
        .filter_map(|s| s.file_name.clone())
        .collect();
    assert_eq!(new_files.len(), 2, "the meta info stream and the MANIFEST");
    let mut referenced = 0;
    p.metadata.visit_stream_handles(&mut |h| match h {
        StreamHandle::RelativeFile { path, .. } => {
            assert!(new_files.contains(&path.to_string()), "{path} is new")
        }
        StreamHandle::File { path, .. } => {
            assert!(path.to_string().starts_with(&src), "{path}");
            referenced += 1;
        }
        _ => {}
    });
    assert!(
        referenced > 10,
        "the SST files and the other private files stay where they are"
    );
}

/// Writes, for `tests/judges/run.sh`, the compressed key groups of every rewritten compressed
/// stream of the fixtures (a removal re-encodes every key group): `kg-N.sz`, the key group's bytes
/// from its offset to the next (a heap key group without its id), and `kg-N.raw`, what this tool
/// reads from them. The judge reads each `.sz` with xerial's `SnappyFramedInputStream`, as Flink
/// restores it.
#[test]
#[ignore = "run by tests/judges/run.sh, which hands the frames to xerial's snappy-java"]
fn snappy_frames_for_the_judge() {
    let root = PathBuf::from(
        std::env::var("CHECKPOINT_SURGEON_JUDGE_DIR").expect("CHECKPOINT_SURGEON_JUDGE_DIR"),
    );
    let mut groups = 0;
    for version in VERSIONS {
        for name in [
            "keyed-all-savepoint-rocksdb-compressed",
            "keyed-all-savepoint-heap-compressed",
            "keyed-all-hashmap-compressed",
        ] {
            let cp = Checkpoint::open(&fixture(version, name)).unwrap();
            let a = apply(
                &cp,
                &Request::remove_keyed_state(Selector::All, "value-state"),
            )
            .unwrap();
            let before = groups;
            for (op, subtask, _, h) in handles(&a.cp) {
                let KeyedHandle::KeyGroups { code, handle } = &h else {
                    panic!()
                };
                let stream =
                    a.cp.stream_bytes(handle.delegate.as_ref().unwrap())
                        .unwrap();
                let (meta, format) = key_groups_format(*code, handle, &stream).unwrap();
                let offsets: Vec<i64> = handle.offsets.iter().collect();
                let case = root.join(format!("{version}_{name}_{}_{subtask}", &op[..8]));
                std::fs::create_dir_all(&case).unwrap();
                std::fs::write(case.join("version"), version).unwrap();
                for (kg, start, end) in ranges(&stream, handle.start_key_group, &offsets, meta.len)
                {
                    let (from, raw) = if format == SnapshotFormat::HeapCheckpoint {
                        let mut raw = Vec::new();
                        let mut p = start + 4;
                        while p < end {
                            let (bytes, next) = frames(&stream, p, end);
                            raw.extend_from_slice(&bytes);
                            p = next;
                        }
                        (start + 4, raw)
                    } else {
                        (start, frames(&stream, start, end).0)
                    };
                    std::fs::write(case.join(format!("kg-{kg}.sz")), &stream[from..end]).unwrap();
                    std::fs::write(case.join(format!("kg-{kg}.raw")), raw).unwrap();
                    groups += 1;
                }
            }
            assert!(groups > before, "{version} {name}: no compressed key group");
        }
    }
    println!("{groups} compressed key groups in {}", root.display());
}

/// The keyed step of the stage handed to a rewriter elsewhere (`--on-flink`): here the work items
/// go through `commit::work::rewrite_work` in this process, as a Flink task runs them, in reverse
/// order; `drop_last` loses one result, `fail` fails the job.
struct Elsewhere {
    drop_last: bool,
    fail: bool,
}

impl commit::work::KeyedRewriter for Elsewhere {
    fn rewrite(&self, items: Vec<Vec<u8>>) -> Result<Vec<Bytes>, Error> {
        let mut done = Vec::new();
        for item in items.into_iter().rev() {
            done.push(Bytes::from(commit::work::rewrite_work(Bytes::from(item))?));
        }
        if self.fail {
            return Err(Error::InvalidArgument("the job failed".into()));
        }
        if self.drop_last {
            done.pop();
        }
        Ok(done)
    }
}

#[test]
fn key_group_streams_rewritten_elsewhere_are_the_local_stages_and_a_failure_leaves_nothing() {
    let mut checked = 0;
    for version in VERSIONS {
        for (dir, req) in key_groups_fixtures(version).into_iter().flat_map(|d| {
            [
                Request::remove_keyed_state(Selector::All, "list-state"),
                Request::rename_keyed_state(Selector::All, "list-state", "list-state-v1"),
            ]
            .map(|r| (d.clone(), r))
        }) {
            let cp = Checkpoint::open(&dir).unwrap();
            let Ok(local) = apply(&cp, &req) else {
                continue;
            };
            let by_replaced = |staged: &Staged, out: &Path| {
                let mut v: Vec<(String, Vec<u8>, u64, u64)> = staged
                    .keyed
                    .iter()
                    .map(|k| {
                        let bytes = std::fs::read(out.join(&k.file)).unwrap();
                        (k.replaces.clone(), bytes, k.bytes_read, k.entries_removed)
                    })
                    .collect();
                v.sort();
                v
            };
            let expected = by_replaced(&local.staged, &local.out);
            if expected.is_empty() {
                continue;
            }
            let planned = plan(&cp, &req, &mut commit::random_file_name).unwrap();
            let out = common::temp_dir("keyed-elsewhere");
            let rewriter = Elsewhere {
                drop_last: false,
                fail: false,
            };
            let staged = commit::stage_with(&cp, &planned, &out, None, Some(&rewriter)).unwrap();
            assert_eq!(by_replaced(&staged, &out), expected, "{}", dir.display());
            checked += 1;
            // the staged _metadata has the offsets and sizes the tasks returned: it parses back
            // (stage checks it equals the planned model with them) and reads as the local one
            let new = Checkpoint::open(&staged.metadata_tmp).unwrap();
            assert_eq!(
                new.metadata.operators.len(),
                local.cp.metadata.operators.len()
            );
            let _ = std::fs::remove_dir_all(&out);

            for (drop_last, fail) in [(true, false), (false, true)] {
                let planned = plan(&cp, &req, &mut commit::random_file_name).unwrap();
                let out = common::temp_dir("keyed-elsewhere-failed");
                let rewriter = Elsewhere { drop_last, fail };
                let e = commit::stage_with(&cp, &planned, &out, None, Some(&rewriter)).unwrap_err();
                let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
                assert!(left.is_empty(), "{e}: {left:?} left in {}", out.display());
                let _ = std::fs::remove_dir_all(&out);
            }
        }
    }
    // key-groups fixtures of three versions, canonical and heap, compressed or not; remove, rename
    assert!(checked >= 24, "{checked} cases checked");
}
