//! Keyed state per state (`codec::keyed`, `commit::keyed`) on every fixture Flink wrote, on the
//! corpus of Flink's own migration-test files, and on hostile inputs.
//!
//! The generator writes, on each keyed fixture's MANIFEST line, the meta info as Flink's own
//! `KeyedBackendSerializationProxy` read it (states, types, serializer snapshot classes) and the
//! states the job's code registers: the reader must agree with Flink, and every count must add up
//! to what the stream and an independent walk of its key groups hold.

mod common;

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::{KeyedHandle, StreamHandle};
use checkpoint_surgeon::codec::keyed::handle::{HandleReading, SnapshotFormat};
use checkpoint_surgeon::codec::keyed::{manifest, meta, read_handle, sst, RangeSource};
use checkpoint_surgeon::codec::snappy;
use checkpoint_surgeon::commit::keyed::read_keyed;
use checkpoint_surgeon::commit::read::Checkpoint;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// Every fixture of every version with its MANIFEST line (name, description and facts).
fn manifest_lines() -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    for v in std::fs::read_dir(fixtures_root()).unwrap() {
        let v = v.unwrap().path();
        let Ok(text) = std::fs::read_to_string(v.join("MANIFEST")) else {
            continue;
        };
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some((name, rest)) = l.split_once(' ') {
                out.push((v.join(name), name.to_string(), rest.to_string()));
            }
        }
    }
    out.sort();
    out
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A state as Flink read it: backend type, KEYED_STATE_TYPE and serializer snapshot classes.
#[derive(Debug, PartialEq)]
struct FlinkState {
    backend: String,
    state_type: Option<String>,
    serializers: BTreeMap<String, String>,
}

/// Per operator (hex id): the key serializer's snapshot class and the states.
type FlinkMeta = BTreeMap<String, (String, BTreeMap<String, FlinkState>)>;

/// The meta info as Flink read it, from the line's "keyed meta info (Flink): " part.
fn flink_meta(line: &str) -> Option<FlinkMeta> {
    let part = line
        .split(" | ")
        .find_map(|p| p.strip_prefix("keyed meta info (Flink): "))?;
    let mut ops = BTreeMap::new();
    for op in part.split(" / ") {
        let (hex, rest) = op.split_once(": ").unwrap();
        let (key, states) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut map = BTreeMap::new();
        for s in states.split(" ; ").filter(|s| !s.is_empty()) {
            let mut fields = s.strip_prefix("state=").unwrap().split(',');
            let name = unescape(fields.next().unwrap());
            let backend = fields.next().unwrap().to_string();
            let t = fields.next().unwrap();
            let serializers = fields
                .map(|f| {
                    let (k, v) = f.split_once('=').unwrap();
                    (k.to_string(), unescape(v))
                })
                .collect();
            map.insert(
                name,
                FlinkState {
                    backend,
                    state_type: (t != "-").then(|| unescape(t)),
                    serializers,
                },
            );
        }
        ops.insert(
            hex.to_string(),
            (unescape(key.strip_prefix("key=").unwrap()), map),
        );
    }
    Some(ops)
}

/// The states the job's code registers, from the line's "registered by the job: " part.
fn registered(line: &str) -> Option<BTreeSet<String>> {
    let part = line
        .split(" | ")
        .find_map(|p| p.strip_prefix("registered by the job: "))?;
    Some(part.split(',').map(unescape).collect())
}

/// The format the description names, if it names one.
fn expected_format(desc: &str) -> Option<SnapshotFormat> {
    if desc.contains("canonical") {
        Some(SnapshotFormat::Canonical)
    } else if desc.contains("RocksDB files") || desc.contains("RocksDB's files") {
        Some(SnapshotFormat::RocksdbFiles)
    } else if desc.contains("heap checkpoint format")
        || (desc.starts_with("retained checkpoint, hashmap backend"))
    {
        Some(SnapshotFormat::HeapCheckpoint)
    } else {
        None
    }
}

/// Counts the pairs of a canonical stream per kvStateId with a walk of its own: each key group's
/// bytes (decompressed whole where compressed), pair after pair.
fn independent_canonical_walk(
    stream: &[u8],
    offsets: &[i64],
    compressed: bool,
    states: usize,
) -> Vec<u64> {
    let mut counts = vec![0u64; states];
    let starts: Vec<usize> = offsets
        .iter()
        .filter(|&&o| o != 0)
        .map(|&o| o as usize)
        .collect();
    for (i, &s) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(stream.len());
        let data = if compressed {
            assert_eq!(&stream[s..s + 10], b"\xff\x06\x00\x00sNaPpY");
            snappy::decode_until_identifier(&stream[..end], s + 10)
                .unwrap()
                .bytes
        } else {
            stream[s..end].to_vec()
        };
        let mut p = 0;
        let mut state = u16::from_be_bytes([data[0], data[1]]) as usize;
        p += 2;
        loop {
            let kl = i32::from_be_bytes(data[p..p + 4].try_into().unwrap()) as usize;
            let flag = data[p + 4] & 0x80 != 0;
            p += 4 + kl;
            let vl = i32::from_be_bytes(data[p..p + 4].try_into().unwrap()) as usize;
            p += 4 + vl;
            counts[state] += 1;
            if flag {
                let next = u16::from_be_bytes([data[p], data[p + 1]]);
                p += 2;
                if next == 0xFFFF {
                    break;
                }
                state = next as usize;
            }
        }
        assert_eq!(p, data.len(), "a key group's pairs fill it");
    }
    counts
}

/// The readings of one checkpoint's managed keyed handles, with the handles.
fn readings(cp: &Checkpoint) -> Vec<(String, i32, KeyedHandle, HandleReading)> {
    let mut out = Vec::new();
    for op in &cp.metadata.operators {
        for (subtask, st) in op.subtask_states() {
            let Some(h) = &st.managed_keyed else { continue };
            for r in read_handle(h, cp, op.max_parallelism) {
                let r = r.unwrap_or_else(|e| panic!("{} #{subtask}: {e}", op.hex_id()));
                out.push((op.hex_id(), subtask, h.clone(), r));
            }
        }
    }
    out
}

/// The checks every complete reading must pass: the bytes add up, and RocksDB's files map to the
/// meta info's states.
fn check_reading(what: &str, r: &HandleReading) {
    let stored: u64 = r.states.iter().map(|s| s.stored_bytes).sum();
    assert_eq!(
        r.header_bytes + stored + r.overhead_bytes + r.unattributed_bytes,
        r.total_bytes,
        "{what}: header, states, overhead and unattributed bytes make the handle's bytes"
    );
    let Some(rocks) = &r.rocksdb else { return };
    let meta = r.meta.as_ref().unwrap();
    let names: Vec<String> = meta.states.iter().map(|s| s.name.to_string()).collect();
    for f in &rocks.files {
        let cf = f.column_family.as_deref().unwrap();
        assert!(
            cf == "default" || names.iter().any(|n| n == cf),
            "{what}: column family {cf} of {} is a state of the meta info {names:?}",
            f.key
        );
        let props = f.properties.as_ref().unwrap();
        if let Some(m) = &rocks.manifest {
            assert_eq!(f.live, Some(true), "{what}: {} is live", f.key);
            let family = m.live_file(f.file_number.unwrap()).unwrap();
            assert_eq!(family.name, cf, "{what}: the MANIFEST agrees on {}", f.key);
            assert_eq!(props.column_family_id, Some(family.id as u64), "{what}");
        }
    }
    let mut per_state = vec![0u64; names.len()];
    for f in &rocks.files {
        if let Some(i) = f.state {
            per_state[i] += f.properties.as_ref().unwrap().num_entries;
        }
    }
    let entries: Vec<u64> = r.states.iter().map(|s| s.entries).collect();
    assert_eq!(
        per_state, entries,
        "{what}: per-state entries are the sums of their files'"
    );
}

#[test]
fn every_keyed_fixture_agrees_with_flink_and_adds_up() {
    let (mut fixtures, mut handles, mut with_flink) = (0, 0, 0);
    for (dir, name, line) in manifest_lines() {
        if !dir.join("_metadata").is_file() || line.contains("not committed") {
            continue;
        }
        let cp = Checkpoint::open(&dir).unwrap();
        let all = readings(&cp);
        if all.is_empty() {
            continue;
        }
        fixtures += 1;
        let what = |op: &str, st: i32| format!("{} {op} #{st}", dir.display());
        let desc = line.split(" | ").next().unwrap();
        let flink = flink_meta(&line);
        for (op, st, h, r) in &all {
            handles += 1;
            let w = what(op, *st);
            check_reading(&w, r);
            if let Some(f) = expected_format(desc) {
                assert_eq!(r.format, f, "{w}: {desc}");
            }
            let meta = r.meta.as_ref().unwrap();
            if desc.contains("compression on") || desc.contains("compression off") {
                assert_eq!(meta.compressed, desc.contains("compression on"), "{w}");
            }
            assert!(r.notes.is_empty(), "{w}: {:?}", r.notes);
            for (i, s) in r.states.iter().enumerate() {
                assert!(s.complete, "{w}: state {i} counted completely");
                assert!(
                    s.entries > 0 || name.starts_with("file-merging"),
                    "{w}: state {} has entries",
                    meta.states[i].name
                );
            }
            // an independent walk of the key groups finds the same pairs
            if r.format == SnapshotFormat::Canonical {
                let KeyedHandle::KeyGroups { handle, .. } = h else {
                    panic!("{w}: a key-groups handle")
                };
                let stream = cp.stream_bytes(handle.delegate.as_ref().unwrap()).unwrap();
                let offsets: Vec<i64> = handle.offsets.iter().collect();
                let walk =
                    independent_canonical_walk(&stream, &offsets, meta.compressed, r.states.len());
                let entries: Vec<u64> = r.states.iter().map(|s| s.entries).collect();
                assert_eq!(walk, entries, "{w}: the key groups' pairs per state");
            }
            if r.format == SnapshotFormat::HeapCheckpoint {
                assert_eq!(
                    r.key_groups_with_data as i32, r.key_groups.1,
                    "{w}: a heap checkpoint writes every key group"
                );
            }
            // the meta info as Flink read it
            let Some(flink) = &flink else { continue };
            let (key, states) = &flink[op];
            assert_eq!(&meta.key_serializer.class(), key, "{w}: key serializer");
            let names: BTreeSet<String> = meta.states.iter().map(|s| s.name.to_string()).collect();
            assert_eq!(
                names,
                states.keys().cloned().collect::<BTreeSet<_>>(),
                "{w}: the states Flink reads"
            );
            for s in &meta.states {
                let f = &states[&s.name.to_string()];
                let mine = FlinkState {
                    backend: s.backend_type.name().to_string(),
                    state_type: s.state_type(),
                    serializers: s
                        .serializers
                        .iter()
                        .map(|x| (x.snapshot.key.to_string(), x.class()))
                        .collect(),
                };
                assert_eq!(&mine, f, "{w}: state {}", s.name);
                assert_eq!(
                    s.has_ttl(),
                    f.serializers.get("VALUE_SERIALIZER").map(String::as_str)
                        == Some("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot"),
                    "{w}: TTL of {}",
                    s.name
                );
                // the generator's serializers are all ones whose element format the tool knows
                for x in &s.serializers {
                    assert!(x.layout().is_some(), "{w}: {} of {}", x.class(), s.name);
                }
            }
            // the job registers all of them, except what an older version registered
            let job = registered(&line).unwrap();
            assert!(job.is_subset(&names), "{w}: {job:?} in {names:?}");
            let stale: Vec<&String> = names.difference(&job).collect();
            if name.starts_with("keyed-stale") {
                assert_eq!(
                    stale,
                    vec!["dropped-in-v2"],
                    "{w}: the state v2 dropped is carried"
                );
            } else {
                assert!(stale.is_empty(), "{w}: {stale:?}");
            }
            with_flink += 1;
        }
    }
    println!(
        "{fixtures} fixtures, {handles} keyed handles, {with_flink} compared with Flink's reading"
    );
    // 1.15.4, 1.20.3 and 2.3.0 each have at least 9 fixtures whose MANIFEST holds Flink's reading
    assert!(with_flink >= 3 * 9, "{with_flink}");
}

#[test]
fn the_report_sums_handles_per_state_and_subtask() {
    for dir in common::fixture_dirs("keyed-all-hashmap") {
        let cp = Checkpoint::open(&dir).unwrap();
        let report = read_keyed(&cp, 3);
        let one = read_keyed(&cp, 1);
        let op = report
            .operators
            .iter()
            .find(|o| o.states.iter().any(|s| s.name == "value-state"))
            .unwrap();
        let single = one
            .operators
            .iter()
            .find(|o| o.operator_id == op.operator_id)
            .unwrap();
        assert!(op.handles.iter().all(|h| h.error.is_none()));
        for s in &op.states {
            let sum: u64 = s.per_subtask.iter().map(|(_, c)| c.entries).sum();
            assert_eq!(sum, s.total.entries, "{}", s.name);
            assert_eq!(s.per_subtask.len(), op.parallelism as usize, "{}", s.name);
            // one worker or three: the same report
            let t = single.states.iter().find(|x| x.name == s.name).unwrap();
            assert_eq!(t.total, s.total);
            assert_eq!(
                s.ttl,
                s.name == "ttl-state",
                "{}: the TTL wrapper shows on the TTL state only",
                s.name
            );
            let value = s.serializers.iter().find(|x| x.key == "VALUE_SERIALIZER");
            if s.name == "ttl-state" {
                assert_eq!(
                    value.unwrap().snapshot.short(),
                    "TtlSerializer<LongSerializer, StringSerializer>"
                );
            }
            if s.name == "pojo-state" {
                let v = &value.unwrap().snapshot;
                assert!(v.classes[0].ends_with("KeyedStateJob$Reading"), "{v:?}");
                assert_eq!(v.nested.len(), 3, "the POJO's three fields");
            }
        }
    }
}

/// The prefix a fixture's absolute paths start with, and where that directory is now.
fn incremental_fixture(dir: &Path, line: &str) -> Vec<Checkpoint> {
    let job = line
        .split("written in ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let mut out = Vec::new();
    let mut chks: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("_metadata").is_file())
        .collect();
    chks.sort();
    for chk in chks {
        let mut cp = Checkpoint::open(&chk).unwrap();
        let mut prefix = None;
        cp.metadata.visit_stream_handles(&mut |h| {
            if let StreamHandle::File { path, .. } = h {
                let p = path.to_string();
                if let Some(i) = p.find(&format!("/{job}/")) {
                    prefix = Some(p[..i + job.len() + 2].to_string());
                }
            }
        });
        cp.add_mirror(
            &prefix.expect("shared (or change log) files by absolute path"),
            dir.to_path_buf(),
        );
        out.push(cp);
    }
    out
}

#[test]
fn incremental_checkpoints_share_sst_files_and_read_them_alike() {
    let mut seen = 0;
    for (dir, name, line) in manifest_lines() {
        if name != "keyed-all-incremental" {
            continue;
        }
        let cps = incremental_fixture(&dir, &line);
        assert!(
            cps.len() >= 2,
            "{}: several retained checkpoints",
            dir.display()
        );
        let flink = flink_meta(&line).unwrap();
        let mut by_file: BTreeMap<String, (String, u64)> = BTreeMap::new();
        let mut shared_by: BTreeMap<String, usize> = BTreeMap::new();
        for cp in &cps {
            for (op, st, h, r) in readings(cp) {
                let w = format!("{} {op} #{st}", cp.metadata_path.display());
                check_reading(&w, &r);
                assert_eq!(r.format, SnapshotFormat::RocksdbFiles);
                assert!(r.notes.is_empty(), "{w}: {:?}", r.notes);
                let names: BTreeSet<String> = r
                    .meta
                    .as_ref()
                    .unwrap()
                    .states
                    .iter()
                    .map(|s| s.name.to_string())
                    .collect();
                assert_eq!(names, flink[&op].1.keys().cloned().collect());
                let KeyedHandle::Incremental { shared, .. } = &h else {
                    panic!("{w}")
                };
                for (k, sh) in shared {
                    if let Some(StreamHandle::File { path, .. }) = sh {
                        *shared_by.entry(path.to_string()).or_default() += 1;
                        let f = r
                            .rocksdb
                            .as_ref()
                            .unwrap()
                            .files
                            .iter()
                            .find(|f| f.key == k.to_string())
                            .unwrap();
                        let props = f.properties.as_ref().unwrap();
                        let v = (f.column_family.clone().unwrap(), props.num_entries);
                        // a shared file read from two checkpoints gives the same figures
                        assert_eq!(by_file.entry(path.to_string()).or_insert(v.clone()), &v);
                    }
                }
            }
        }
        assert!(
            shared_by.values().any(|&n| n > 1),
            "{}: later checkpoints reference earlier ones' SST files",
            dir.display()
        );
        seen += 1;
    }
    assert!(
        seen >= 3,
        "keyed-all-incremental of 1.15.4, 1.20.3 and 2.3.0"
    );
}

/// The corpus: `$CHECKPOINT_SURGEON_CORPUS`, else `../shared/corpus` next to the project root (or
/// next to the directory holding a worktree of it).
fn corpus_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("CHECKPOINT_SURGEON_CORPUS")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            root.join("../shared/corpus"),
            root.join("../../shared/corpus"),
        ])
        .find(|p| p.is_dir())
}

fn corpus_metadata() -> Vec<PathBuf> {
    let Some(root) = corpus_root() else {
        return Vec::new();
    };
    let mut stack = vec![root];
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "_metadata") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_corpus_checkpoint_with_keyed_state_is_read_without_crash_or_hang() {
    let files = corpus_metadata();
    if files.is_empty() {
        eprintln!("../shared/corpus is absent: skipped");
        return;
    }
    let start = Instant::now();
    let (mut read, mut failed, mut per_state, mut walked, mut changelogs, mut unopened) =
        (0, 0, 0, 0, 0, 0);
    for f in &files {
        let cp = match Checkpoint::open(f) {
            Ok(cp) => cp,
            Err(e) => {
                // not a checkpoint this tool reads (1.2's format, a file the corpus left out):
                // said with the file and offset, never a panic
                let m = e.to_string();
                assert!(
                    m.contains("at byte") || m.contains(".."),
                    "{}: {m}",
                    f.display()
                );
                unopened += 1;
                continue;
            }
        };
        for op in &cp.metadata.operators {
            for (subtask, st) in op.subtask_states() {
                let Some(h) = &st.managed_keyed else { continue };
                let w = format!("{} {} #{subtask}", f.display(), op.hex_id());
                let readings = read_handle(h, &cp, op.max_parallelism);
                if let KeyedHandle::Changelog {
                    non_materialized, ..
                } = h
                {
                    // the materialized part per state, the state change log per state too
                    changelogs += 1;
                    let last = readings.last().unwrap().as_ref().unwrap();
                    check_change_log(&w, non_materialized, last);
                    for m in &readings[..readings.len() - 1] {
                        let m = m.as_ref().unwrap();
                        assert!(
                            m.meta.is_some() && m.format != SnapshotFormat::Changelog,
                            "{w}"
                        );
                    }
                }
                for r in readings {
                    match r {
                        Ok(r) => {
                            read += 1;
                            check_reading(&w, &r);
                            let Some(m) = &r.meta else { continue };
                            assert_eq!(m.states.len(), r.states.len(), "{w}");
                            per_state += m.states.len();
                            // what is not counted is said, with the file and offset
                            if r.states.iter().any(|s| !s.complete) {
                                assert!(!r.notes.is_empty(), "{w}");
                            }
                            // a complete canonical stream: an independent walk of its key groups
                            // finds the same pairs per state of the meta info
                            let KeyedHandle::KeyGroups { handle, .. } = h else {
                                continue;
                            };
                            if r.format != SnapshotFormat::Canonical
                                || !r.states.iter().all(|s| s.complete)
                            {
                                continue;
                            }
                            let stream =
                                cp.stream_bytes(handle.delegate.as_ref().unwrap()).unwrap();
                            let offsets: Vec<i64> = handle.offsets.iter().collect();
                            let walk = independent_canonical_walk(
                                &stream,
                                &offsets,
                                m.compressed,
                                r.states.len(),
                            );
                            let entries: Vec<u64> = r.states.iter().map(|s| s.entries).collect();
                            assert_eq!(walk, entries, "{w}: the key groups' pairs per state");
                            walked += 1;
                        }
                        Err(e) => {
                            failed += 1;
                            let m = e.to_string();
                            // the file and the byte offset, or the path rule that refused it
                            assert!(m.contains("at byte") || m.contains("refusing"), "{w}: {m}");
                        }
                    }
                }
            }
        }
    }
    println!(
        "{} _metadata ({unopened} not opened): {read} keyed handles read ({per_state} state \
         entries, {walked} canonical streams walked independently, {changelogs} changelog \
         handles), {failed} refused with a reason, in {:?}",
        files.len(),
        start.elapsed()
    );
    assert!(
        read >= 1000,
        "most of the corpus' keyed handles are read: {read}"
    );
    assert!(walked >= 100, "{walked}");
    assert!(
        changelogs >= 1,
        "the corpus holds changelog handles (code 14)"
    );
    assert!(start.elapsed() < Duration::from_secs(120));
}

/// The checks of a change log's reading: Flink's own size of the log (the sum of its changes'
/// lengths) is the METADATA records, the states' changes and what is unattributed; the states are
/// the METADATA records' and each has its changes.
fn check_change_log(w: &str, parts: &[Option<KeyedHandle>], r: &HandleReading) {
    assert_eq!(r.format, SnapshotFormat::Changelog, "{w}");
    assert!(r.meta.is_none(), "{w}");
    let c = r
        .changelog
        .as_ref()
        .unwrap_or_else(|| panic!("{w}: the log is read per state: {:?}", r.notes));
    let flink_size: u64 = parts
        .iter()
        .flatten()
        .map(|n| n.state_size().max(0) as u64)
        .sum();
    let stored: u64 = r.states.iter().map(|s| s.stored_bytes).sum();
    assert_eq!(c.change_bytes(), flink_size, "{w}: Flink's size of the log");
    assert_eq!(
        r.header_bytes + stored + r.unattributed_bytes,
        flink_size,
        "{w}: METADATA, states and unattributed bytes make Flink's size"
    );
    assert_eq!(r.total_bytes, flink_size + r.overhead_bytes, "{w}");
    assert_eq!(r.states.len(), c.states.len(), "{w}");
    for (s, n) in c.states.iter().zip(&r.states) {
        assert!(s.counts.metadata >= 1 && !s.ids.is_empty(), "{w}");
        assert_eq!(n.entries, s.counts.changes, "{w}");
        assert_eq!(
            s.counts.by_operation.iter().sum::<u64>(),
            s.counts.changes,
            "{w}"
        );
    }
    assert!(
        r.notes
            .iter()
            .any(|n| n.message.contains("change records, not live entries")),
        "{w}: {:?}",
        r.notes
    );
}

/// The change log readings of a checkpoint's changelog handles, each checked, with its handle's
/// change log parts and a name for messages.
fn change_logs(
    cp: &Checkpoint,
    what: &str,
) -> Vec<(String, Vec<Option<KeyedHandle>>, HandleReading)> {
    let mut out = Vec::new();
    for (op, subtask, h, r) in readings(cp) {
        match h {
            KeyedHandle::Changelog {
                non_materialized, ..
            } if r.format == SnapshotFormat::Changelog => {
                let w = format!("{what} {op} #{subtask}");
                check_reading(&w, &r);
                check_change_log(&w, &non_materialized, &r);
                out.push((w, non_materialized, r));
            }
            _ => {}
        }
    }
    out
}

/// The corpus' changelog checkpoints (Flink 1.16, 1.17 and 1.19, heap and RocksDB): every change
/// log is read per state, its states named by its METADATA records, each with changes.
#[test]
fn corpus_change_logs_are_counted_per_state() {
    let Some(root) = corpus_root() else {
        eprintln!("../shared/corpus is absent: skipped");
        return;
    };
    let dir = root.join("apache__flink/flink-tests/src/test/resources");
    let mut logs = 0;
    for name in [
        "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint",
        "stateful-scala-udf-migration-itcase-flink1.16-rocksdb-checkpoint",
        "stateful-scala-udf-migration-itcase-flink1.19-hashmap-checkpoint",
        "stateful-scala-with-broadcast-udf-migration-itcase-flink1.16-hashmap-checkpoint",
        "stateful-scala-with-broadcast-udf-migration-itcase-flink1.19-hashmap-checkpoint",
    ] {
        let cp = Checkpoint::open(&dir.join(name)).unwrap();
        for (w, _, r) in change_logs(&cp, name) {
            let c = r.changelog.as_ref().unwrap();
            assert!(c.unknown_ids.is_empty(), "{w}");
            for (s, n) in c.states.iter().zip(&r.states) {
                println!(
                    "{w}: {} {:?} ids {:?}: {} changes ({}), {} bytes",
                    s.meta.name,
                    s.meta.state_type(),
                    s.ids,
                    n.entries,
                    s.counts.operations(),
                    n.stored_bytes
                );
            }
            assert!(r.states.iter().any(|s| s.entries > 0), "{w}");
            logs += 1;
        }
    }
    assert!(logs >= 10, "{logs} change logs");
}

/// The changelog fixtures (a file system log, uncompressed and snappy-compressed): the retained
/// checkpoint, with the job directory Flink wrote the log below (by absolute path) read from `root`.
fn changelog_fixture(root: &Path, line: &str) -> Checkpoint {
    incremental_fixture(root, line)
        .pop()
        .expect("a retained checkpoint")
}

/// Flink 1.20's file system change log (`dstl.dfs`, compressed or not) of KeyedStateJob: every
/// state the job registers that changed is named and counted, and the bytes add up to Flink's own
/// size of the log.
#[test]
fn a_file_system_change_log_is_counted_per_state() {
    let mut seen = 0;
    for (dir, name, line) in manifest_lines() {
        if !name.starts_with("keyed-changelog") {
            continue;
        }
        let cp = changelog_fixture(&dir, &line);
        let job = registered(&line).unwrap();
        let mut names = BTreeSet::new();
        let mut files = 0;
        for (w, non_materialized, r) in change_logs(&cp, &name) {
            let c = r.changelog.as_ref().unwrap();
            assert_eq!(c.compressed, name.ends_with("-compressed"), "{w}");
            assert!(c.unknown_ids.is_empty() && c.outside.changes == 0, "{w}");
            files += non_materialized
                .iter()
                .flatten()
                .filter(|p| matches!(p, KeyedHandle::ChangelogFile { .. }))
                .count();
            for (s, n) in c.states.iter().zip(&r.states) {
                let state = s.meta.name.to_string();
                assert!(job.contains(&state), "{w}: {state} is one of {job:?}");
                if n.entries > 0 {
                    names.insert(state);
                }
            }
        }
        assert!(files >= 2, "{name}: {files} log file handles");
        // value, list, map, reducing, aggregating, POJO and TTL states, and the timers
        assert!(names.len() >= 6, "{name}: states with changes {names:?}");
        seen += 1;
    }
    assert_eq!(seen, 2, "the keyed-changelog fixtures of 1.20.3");
}

/// A copy of the uncompressed changelog fixture, and its first log file handle's file and offset.
fn changelog_copy() -> (PathBuf, String, PathBuf, u64) {
    let (dir, _, line) = manifest_lines()
        .into_iter()
        .find(|(_, n, _)| n == "keyed-changelog")
        .unwrap();
    let copy = common::temp_dir("changelog");
    copy_tree(&dir, &copy);
    let cp = changelog_fixture(&copy, &line);
    let mut first = None;
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(KeyedHandle::Changelog {
                non_materialized, ..
            }) = &st.managed_keyed
            {
                for p in non_materialized.iter().flatten() {
                    if let KeyedHandle::ChangelogFile { handles, .. } = p {
                        if let (offset, Some(StreamHandle::File { path, .. })) = &handles[0] {
                            first.get_or_insert((path.to_string(), *offset as u64));
                        }
                    }
                }
            }
        }
    }
    let (path, offset) = first.unwrap();
    let file = copy
        .join("changelog")
        .join(path.split("/changelog/").nth(1).unwrap());
    (copy, line, file, offset)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let t = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

/// The errors of reading the change logs of a (broken) copy of the changelog fixture.
fn change_log_errors(copy: &Path, line: &str) -> Vec<String> {
    let cp = changelog_fixture(copy, line);
    let mut out = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            let Some(h) = &st.managed_keyed else { continue };
            for r in read_handle(h, &cp, op.max_parallelism) {
                if let Err(e) = r {
                    out.push(e.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn a_truncated_change_set_or_a_huge_change_length_is_an_error_with_the_file_and_offset() {
    // the first change's length: after the compression flag, at the change set's offset, the
    // number of key groups, the first key group's change count and key group
    let (copy, line, file, offset) = changelog_copy();
    let len_at = 1 + offset + 12;
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let bytes = std::fs::read(&file).unwrap();
    let mut huge = bytes.clone();
    huge[len_at as usize..len_at as usize + 4].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
    std::fs::write(&file, &huge).unwrap();
    let start = Instant::now();
    let errors = change_log_errors(&copy, &line);
    assert!(
        errors.iter().any(|e| e.contains(&name)
            && e.contains(&format!("at byte {len_at}"))
            && e.contains("2147483632 bytes")),
        "{errors:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    // an operation code Flink does not have: that log is one sum, with the file and offset
    let mut unknown = bytes.clone();
    unknown[len_at as usize + 4] = 42;
    std::fs::write(&file, &unknown).unwrap();
    let cp = changelog_fixture(&copy, &line);
    let notes: Vec<String> = readings(&cp)
        .into_iter()
        .filter(|(.., r)| r.changelog.is_none())
        .flat_map(|(.., r)| r.notes)
        .filter(|n| n.file.contains(&name) && n.offset == len_at + 4)
        .map(|n| n.message)
        .collect();
    assert!(
        notes
            .iter()
            .any(|m| m.contains("counted as one sum")
                && m.contains("state change operation code 42")),
        "{notes:?}"
    );
    // cut in the first change, in the change set's counts, and after the first change set
    for cut in [
        len_at + 6,
        1 + offset + 6,
        (bytes.len() as u64 + len_at) / 2,
    ] {
        std::fs::write(&file, &bytes[..cut as usize]).unwrap();
        let errors = change_log_errors(&copy, &line);
        assert!(
            errors
                .iter()
                .any(|e| e.contains(&name) && e.contains("at byte")),
            "cut at {cut}: {errors:?}"
        );
    }
    std::fs::remove_dir_all(&copy).unwrap();
}

#[test]
fn a_truncated_compressed_change_log_is_an_error_with_the_file_and_offset() {
    let (dir, _, line) = manifest_lines()
        .into_iter()
        .find(|(_, n, _)| n == "keyed-changelog-compressed")
        .unwrap();
    let copy = common::temp_dir("changelog-compressed");
    copy_tree(&dir, &copy);
    let logs = copy.join("changelog");
    let mut files = Vec::new();
    let mut stack = vec![logs];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    for f in &files {
        let b = std::fs::read(f).unwrap();
        std::fs::write(f, &b[..b.len() / 2]).unwrap();
    }
    let errors = change_log_errors(&copy, &line);
    assert!(!errors.is_empty());
    for e in &errors {
        assert!(
            e.contains("at byte")
                && files
                    .iter()
                    .any(|f| e.contains(&*f.file_name().unwrap().to_string_lossy())),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&copy).unwrap();
}

// ------------------------------------------------------------------------------------------------
// Hostile inputs: each a clear error with the file and byte offset, fast, before memory is spent.

fn fixture(version: &str, name: &str) -> PathBuf {
    fixtures_root().join(version).join(name)
}

/// A temporary copy of a fixture, a checkpoint of it, and its first managed keyed handle's stream
/// (a relative file) as bytes with the file's name.
fn first_keyed_stream(version: &str, name: &str) -> (PathBuf, String, Vec<u8>) {
    let copy = common::copy_fixture(&fixture(version, name));
    let cp = Checkpoint::open(&copy).unwrap();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(KeyedHandle::KeyGroups { handle, .. }) = &st.managed_keyed {
                if let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate {
                    let p = path.to_string();
                    let bytes = std::fs::read(copy.join(&p)).unwrap();
                    return (copy, p, bytes);
                }
            }
        }
    }
    panic!("no keyed stream in {name}")
}

/// The handle of the report that has a note on `file`.
fn noting<'a>(
    report: &'a checkpoint_surgeon::report::keyed::KeyedReport,
    file: &str,
) -> &'a checkpoint_surgeon::report::keyed::HandleReport {
    report
        .operators
        .iter()
        .flat_map(|o| &o.handles)
        .find(|h| h.notes.iter().any(|n| n.file == file))
        .unwrap()
}

fn keyed_errors(dir: &Path) -> Vec<String> {
    let cp = Checkpoint::open(dir).unwrap();
    read_keyed(&cp, 2)
        .operators
        .iter()
        .flat_map(|o| o.handles.iter().filter_map(|h| h.error.clone()))
        .collect()
}

#[test]
fn a_meta_info_claiming_more_states_or_options_than_its_bytes_hold_is_refused() {
    let (dir, file, stream) = first_keyed_stream("1.20.3", "keyed-all-hashmap");
    let header_end = {
        let cp = Checkpoint::open(&dir).unwrap();
        let mut end = 0;
        for op in &cp.metadata.operators {
            for (_, st) in op.subtask_states() {
                if let Some(KeyedHandle::KeyGroups { handle, .. }) = &st.managed_keyed {
                    end = handle.offsets.iter().filter(|&o| o > 0).min().unwrap() as usize;
                }
            }
        }
        end
    };
    let m = meta::parse(&Bytes::copy_from_slice(&stream[..header_end])).unwrap();
    let count_at = m.key_serializer.snapshot.body.1;
    let first = m.states.iter().find(|s| !s.options.is_empty()).unwrap();
    let options_at = first.start + 2 + first.name.as_bytes().len() + 4;
    for (at, bytes, expected) in [
        (
            count_at,
            &0x7FFFu16.to_be_bytes()[..],
            "a number of keyed states that fits",
        ),
        (
            options_at,
            &0x7FFF_FFFFu32.to_be_bytes()[..],
            "the number of state options",
        ),
        (
            options_at + 4 + 2 + 16 + 2 + first.options[0].1.as_bytes().len(),
            &0x8000_0000u32.to_be_bytes()[..],
            "the number of serializer snapshots",
        ),
    ] {
        let mut s = stream.clone();
        s[at..at + bytes.len()].copy_from_slice(bytes);
        std::fs::write(dir.join(&file), &s).unwrap();
        let start = Instant::now();
        let errors = keyed_errors(&dir);
        let e = errors.iter().find(|e| e.contains(&file)).unwrap();
        assert!(
            e.contains(&format!("at byte {at}")) && e.contains(expected),
            "{e}"
        );
        println!("{expected}: refused in {:?}", start.elapsed());
        assert!(start.elapsed() < Duration::from_secs(2));
    }
    // 32767 states claimed by a stream that is only a header
    let mut tiny = stream[..count_at + 2].to_vec();
    tiny[count_at..count_at + 2].copy_from_slice(&0x7FFFu16.to_be_bytes());
    let e = meta::parse(&Bytes::from(tiny)).unwrap_err().to_string();
    assert!(
        e.contains(&format!("at byte {count_at}")) && e.contains("found 32767"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_key_group_offset_past_the_file_is_refused_with_the_file_and_offset() {
    for name in [
        "keyed-all-hashmap",
        "keyed-all-savepoint-rocksdb-compressed",
    ] {
        let dir = common::copy_fixture(&fixture("1.20.3", name));
        let mut cp = Checkpoint::open(&dir).unwrap();
        let mut target = None;
        for op in &mut cp.metadata.operators {
            let checkpoint_surgeon::codec::metadata::Subtasks::List(l) = &mut op.subtasks else {
                continue;
            };
            for e in l {
                let checkpoint_surgeon::codec::metadata::SubtaskEntry::State(_, st) = e else {
                    continue;
                };
                if let Some(KeyedHandle::KeyGroups { handle, .. }) = &mut st.managed_keyed {
                    let mut offsets: Vec<i64> = handle.offsets.iter().collect();
                    let last = offsets.iter().rposition(|&o| o > 0).unwrap();
                    offsets[last] = 1 << 40;
                    handle.offsets =
                        checkpoint_surgeon::codec::handles::Offsets::from_slice(&offsets);
                    if let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate {
                        target = Some(path.to_string());
                    }
                    break;
                }
            }
        }
        let start = Instant::now();
        let report = checkpoint_surgeon::commit::keyed::read_keyed(&cp, 2);
        let errors: Vec<&String> = report
            .operators
            .iter()
            .flat_map(|o| o.handles.iter().filter_map(|h| h.error.as_ref()))
            .collect();
        let file = target.unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains(&file)
                && errors[0].contains(&format!("at byte {}", 1u64 << 40))
                && errors[0].contains("within the"),
            "{}",
            errors[0]
        );
        // the other handles are still read
        let handles = report.operators.iter().flat_map(|o| &o.handles).count();
        let read = report
            .operators
            .iter()
            .flat_map(|o| &o.handles)
            .filter(|h| h.error.is_none() && h.format.is_some())
            .count();
        assert_eq!(read, handles - 1);
        assert!(start.elapsed() < Duration::from_secs(2));
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// An SST file of a native savepoint fixture: its name and bytes.
fn an_sst(version: &str) -> (PathBuf, String, Vec<u8>) {
    let dir = common::copy_fixture(&fixture(version, "keyed-all-native"));
    let cp = Checkpoint::open(&dir).unwrap();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(KeyedHandle::Incremental {
                shared, private, ..
            }) = &st.managed_keyed
            {
                for (k, h) in shared.iter().chain(private) {
                    if let (true, Some(StreamHandle::RelativeFile { path, .. })) =
                        (k.to_string().ends_with(".sst"), h)
                    {
                        let p = path.to_string();
                        let b = std::fs::read(dir.join(&p)).unwrap();
                        return (dir, p, b);
                    }
                }
            }
        }
    }
    panic!("no SST file in keyed-all-native {version}")
}

#[test]
fn a_truncated_sst_footer_is_a_note_with_the_file_and_the_rest_is_counted() {
    for version in ["1.20.3", "2.3.0"] {
        let (dir, file, bytes) = an_sst(version);
        assert!(sst::read(&bytes).is_ok());
        for cut in [10, 30, bytes.len() - 40] {
            let short = bytes[..bytes.len() - cut].to_vec();
            let e = sst::read(&short).unwrap_err().to_string();
            assert!(e.contains("at byte"), "{version} cut {cut}: {e}");
        }
        std::fs::write(dir.join(&file), &bytes[..bytes.len() - 10]).unwrap();
        let start = Instant::now();
        let cp = Checkpoint::open(&dir).unwrap();
        let report = read_keyed(&cp, 2);
        let h = report
            .operators
            .iter()
            .flat_map(|o| &o.handles)
            .find(|h| h.format == Some(SnapshotFormat::RocksdbFiles))
            .unwrap();
        let note = h.notes.iter().find(|n| n.file == file).unwrap();
        assert!(note.message.contains("at byte"), "{}", note.message);
        assert_eq!(h.unattributed_bytes, bytes.len() as u64);
        let counted: u64 = report
            .operators
            .iter()
            .flat_map(|o| &o.states)
            .map(|s| s.total.entries)
            .sum();
        assert!(counted > 0, "the other SST files are still counted");
        assert!(start.elapsed() < Duration::from_secs(2));
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A real SST file whose metaindex points the properties at `props` (offset, size): its data and
/// index blocks kept, the metaindex rewritten with its other entries, its trailer and the footer
/// (format_version below 6, as the fixtures' FRocksDB writes) naming it.
fn with_properties_at(real: &[u8], props: (u64, u64)) -> Vec<u8> {
    let footer = sst::footer(&real.to_vec()).unwrap();
    assert!(footer.format_version < 6, "{footer:?}");
    let m = footer.metaindex;
    let old = &real[m.offset as usize..(m.offset + m.size) as usize];
    let mut block = Vec::new();
    let mut found = false;
    for (k, mut v) in sst::entries(old, m.offset).unwrap() {
        if k == b"rocksdb.properties" {
            v.clear();
            sst::put_varint(&mut v, props.0);
            sst::put_varint(&mut v, props.1);
            found = true;
        }
        sst::put_varint(&mut block, 0);
        sst::put_varint(&mut block, k.len() as u64);
        sst::put_varint(&mut block, v.len() as u64);
        block.extend_from_slice(&k);
        block.extend_from_slice(&v);
    }
    assert!(found);
    block.extend_from_slice(&0u32.to_le_bytes()); // every entry restarts at 0: one restart
    block.extend_from_slice(&1u32.to_le_bytes());
    let mut file = real[..m.offset as usize].to_vec();
    file.extend_from_slice(&block);
    file.push(0);
    // the file's own checksum type; only CRC32c is checked by the reader (XXH3 is not)
    let crc = match footer.checksum_type {
        1 => snappy::masked_crc32c_of(&[&block, &[0]]),
        _ => 0,
    };
    file.extend_from_slice(&crc.to_le_bytes());
    let mut f = vec![footer.checksum_type];
    let index = footer.index.unwrap();
    for v in [m.offset, block.len() as u64, index.offset, index.size] {
        sst::put_varint(&mut f, v);
    }
    f.resize(41, 0);
    f.extend_from_slice(&real[real.len() - 12..]); // format_version and magic number
    file.extend_from_slice(&f);
    file
}

#[test]
fn an_sst_whose_properties_block_is_huge_is_refused_before_it_is_read() {
    /// A source read only through `read_at`, as a Flink path is, counting the bytes asked for.
    struct Counted(Vec<u8>, std::sync::atomic::AtomicU64);
    impl RangeSource for Counted {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> checkpoint_surgeon::Result<()> {
            self.1
                .fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
            self.0.read_at(offset, buf)
        }
    }
    for version in ["1.20.3", "2.3.0"] {
        let (dir, file, real) = an_sst(version);
        let props = {
            let f = sst::read(&real).unwrap();
            assert!(f.properties.num_entries > 0);
            f.footer.metaindex.offset // the properties block lies before the metaindex
        };
        // the edit alone changes nothing: the real properties are still read
        let same = with_properties_at(&real, {
            let m = sst::footer(&real).unwrap().metaindex;
            let b = &real[m.offset as usize..(m.offset + m.size) as usize];
            let v = sst::entries(b, m.offset)
                .unwrap()
                .into_iter()
                .find(|(k, _)| k == b"rocksdb.properties")
                .unwrap()
                .1;
            let mut s = &v[..];
            (sst::varint(&mut s).unwrap(), sst::varint(&mut s).unwrap())
        });
        assert_eq!(
            sst::read(&same).unwrap().properties,
            sst::read(&real).unwrap().properties
        );
        let len = real.len() as u64;
        for (at, size) in [(props, 3 << 30), (props, 5 << 20), (len - 10, 1000)] {
            let edited = with_properties_at(&real, (at, size));
            let expected = match size {
                1000 => format!("within the {}-byte file", edited.len()),
                _ => format!("properties block of {size} bytes (at most 4 MiB"),
            };
            let src = Counted(edited, Default::default());
            let start = Instant::now();
            let e = sst::read(&src).unwrap_err().to_string();
            let read = src.1.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                e.contains(&format!("at byte {at}")) && e.contains(&expected),
                "{version} {size}: {e}"
            );
            // one ranged read of the tail at most, nothing of the size claimed
            assert!(read <= sst::TAIL, "{version} {size}: {read} bytes read");
            assert!(start.elapsed() < Duration::from_secs(1));
        }
        // in a checkpoint: a note with the file and offset, the other files still counted
        std::fs::write(dir.join(&file), with_properties_at(&real, (props, 3 << 30))).unwrap();
        let report = read_keyed(&Checkpoint::open(&dir).unwrap(), 2);
        let h = noting(&report, &file);
        let note = h.notes.iter().find(|n| n.file == file).unwrap();
        assert!(
            note.offset == props && note.message.contains("at most 4 MiB"),
            "{note:?}"
        );
        assert!(report
            .operators
            .iter()
            .flat_map(|o| &o.states)
            .any(|s| s.total.entries > 0));
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_manifest_of_any_truncation_gives_an_error_or_a_prefix_never_a_panic() {
    let dir = fixture("1.20.3", "keyed-all-native");
    let cp = Checkpoint::open(&dir).unwrap();
    let mut bytes = None;
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(KeyedHandle::Incremental { private, .. }) = &st.managed_keyed {
                for (k, h) in private {
                    if k.to_string().starts_with("MANIFEST-") {
                        bytes = Some(cp.stream_bytes(h.as_ref().unwrap()).unwrap());
                    }
                }
            }
        }
    }
    let bytes = bytes.unwrap();
    let full = manifest::parse(&bytes).unwrap();
    assert!(
        full.column_families.len() > 10,
        "{:?}",
        full.column_families.keys()
    );
    for cut in 0..bytes.len() {
        let _ = manifest::parse(&bytes[..cut].to_vec());
    }
}

#[test]
fn a_heap_stream_claiming_more_mappings_than_its_key_group_holds_is_one_sum_not_a_loop() {
    let (dir, file, stream) = first_keyed_stream("1.20.3", "keyed-all-hashmap");
    let cp = Checkpoint::open(&dir).unwrap();
    let first = cp
        .metadata
        .operators
        .iter()
        .flat_map(|o| o.subtask_states())
        .find_map(|(_, st)| match &st.managed_keyed {
            Some(KeyedHandle::KeyGroups { handle, .. }) => handle.offsets.iter().next(),
            _ => None,
        })
        .unwrap() as usize;
    // the first part's count, after the key-group id and its kvStateId
    let mut s = stream.clone();
    s[first + 6..first + 10].copy_from_slice(&0x7FFF_FFFFu32.to_be_bytes());
    std::fs::write(dir.join(&file), &s).unwrap();
    let start = Instant::now();
    let report = read_keyed(&Checkpoint::open(&dir).unwrap(), 2);
    let h = noting(&report, &file);
    assert!(h.unattributed_bytes > 0);
    assert!(h.notes[0].message.contains("cannot fit"), "{:?}", h.notes);
    assert!(start.elapsed() < Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_source_that_is_not_in_memory_reads_the_same() {
    /// A source that hands out bytes only through `read_at`, as a Flink path would.
    struct Ranged(Bytes);
    impl RangeSource for Ranged {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> checkpoint_surgeon::Result<()> {
            self.0.read_at(offset, buf)
        }
    }
    for name in [
        "keyed-all-hashmap",
        "keyed-all-savepoint-rocksdb-compressed",
        "keyed-all-hashmap-compressed",
    ] {
        let cp = Checkpoint::open(&fixture("1.20.3", name)).unwrap();
        for op in &cp.metadata.operators {
            for (_, st) in op.subtask_states() {
                let Some(h @ KeyedHandle::KeyGroups { code, handle }) = &st.managed_keyed else {
                    continue;
                };
                let r = read_handle(h, &cp, op.max_parallelism).remove(0).unwrap();
                let stream = cp.stream_bytes(handle.delegate.as_ref().unwrap()).unwrap();
                let prefix = if op.max_parallelism > 128 { 2 } else { 1 };
                let again = checkpoint_surgeon::codec::keyed::handle::read_key_groups_stream(
                    *code,
                    handle,
                    &Ranged(stream),
                    "x",
                    prefix,
                )
                .unwrap();
                assert_eq!(again.states, r.states, "{name}");
            }
        }
    }
}

/// Where the first key-groups handle's data starts in its stream: the end of its meta info.
fn data_start(dir: &Path) -> usize {
    let cp = Checkpoint::open(dir).unwrap();
    let start = cp
        .metadata
        .operators
        .iter()
        .flat_map(|o| o.subtask_states())
        .find_map(|(_, st)| match &st.managed_keyed {
            Some(KeyedHandle::KeyGroups { handle, .. }) => handle.offsets.iter().min(),
            _ => None,
        })
        .unwrap() as usize;
    start
}

#[test]
fn snapshots_of_classes_the_tool_does_not_know_are_ended_by_what_follows_them() {
    let (dir, _, stream) = first_keyed_stream("1.20.3", "keyed-all-hashmap");
    let header = &stream[..data_start(&dir)];
    let known = meta::parse(&Bytes::copy_from_slice(header)).unwrap();
    // every snapshot class renamed to one of the same length the tool does not know
    let mut renamed = header.to_vec();
    let (from, to) = (&b"Snapshot"[..], &b"Snapshoz"[..]);
    let mut i = 0;
    while let Some(p) = renamed[i..].windows(from.len()).position(|w| w == from) {
        renamed[i + p..i + p + from.len()].copy_from_slice(to);
        i += p + from.len();
    }
    let unknown = meta::parse(&Bytes::from(renamed)).unwrap();
    assert_eq!(known.states.len(), unknown.states.len());
    for (a, b) in known.states.iter().zip(&unknown.states) {
        assert_eq!((&a.name, a.start, a.end), (&b.name, b.start, b.end));
        for (x, y) in a.serializers.iter().zip(&b.serializers) {
            assert_eq!(x.snapshot.body, y.snapshot.body, "{}", a.name);
            assert!(x.info.is_some() && y.info.is_none(), "{}", a.name);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_serializer_key_flink_does_not_write_is_refused_at_its_offset() {
    let (dir, _, stream) = first_keyed_stream("1.20.3", "keyed-all-hashmap");
    let header = &stream[..data_start(&dir)];
    let first = meta::parse(&Bytes::copy_from_slice(header)).unwrap().states[0].start;
    let key = &b"\x00\x10VALUE_SERIALIZER"[..];
    let at = first
        + header[first..]
            .windows(key.len())
            .position(|w| w == key)
            .unwrap();
    let mut renamed = header.to_vec();
    renamed[at + key.len() - 1] = b'Z';
    let e = meta::parse(&Bytes::from(renamed)).unwrap_err().to_string();
    assert!(
        e.contains(&format!("at byte {at}")) && e.contains("found VALUE_SERIALIZEZ"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
