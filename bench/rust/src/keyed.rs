//! Benchmark helper of the keyed surgery (issue 28), without the JVM:
//!
//!     bench_keyed grow FIXTURE OUT_DIR MIB      a canonical savepoint of about MIB MiB
//!     bench_keyed remove CHECKPOINT OUT_DIR STATE [THREADS]
//!
//! `grow` takes a canonical savepoint Flink wrote (e.g.
//! tests/fixtures/2.3.0/keyed-all-savepoint-rocksdb[-compressed], one key-groups handle, or
//! keyed-all-savepoint-heap, two) and writes a copy whose keyed streams repeat every run of pairs
//! of every key group until they have about MIB MiB together: the
//! same meta info, states, key groups and compression as Flink wrote them, each run longer (its
//! pairs repeated, the 0x80 flag on its last pair only). It is input for the figures of the
//! rewrite, not for a restore (the repeated keys are duplicates).
//! `remove` runs remove-keyed-state as `--apply --output` does natively: plan, stage (the rewrite,
//! `THREADS` at a time, each stream read back), place the unchanged files (hard links) and switch
//! `_metadata`; it prints the time and the bytes read and written.

use checkpoint_surgeon::codec::handles::{KeyedHandle, Offsets, StreamHandle};
use checkpoint_surgeon::codec::keyed::canonical::{walk, Event};
use checkpoint_surgeon::codec::keyed::handle::key_groups_format;
use checkpoint_surgeon::codec::metadata::{SubtaskEntry, Subtasks};
use checkpoint_surgeon::codec::snappy::FrameEncoder;
use checkpoint_surgeon::commit::{self, Checkpoint};
use checkpoint_surgeon::surgery::{self, Request, Selector};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("grow") if args.len() == 4 => grow(
            Path::new(&args[1]),
            Path::new(&args[2]),
            args[3].parse().expect("MIB"),
        ),
        Some("remove") if args.len() == 4 || args.len() == 5 => remove(
            Path::new(&args[1]),
            Path::new(&args[2]),
            &args[3],
            args.get(4).map(|t| t.parse().expect("THREADS")),
        ),
        _ => {
            eprintln!(
                "usage: bench_keyed grow FIXTURE OUT_DIR MIB | remove CHECKPOINT OUT_DIR STATE [THREADS]"
            );
            std::process::exit(1);
        }
    }
}

fn fail(e: checkpoint_surgeon::Error) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2);
}

fn grow(fixture: &Path, out: &Path, mib: u64) {
    let mut cp = Checkpoint::open(fixture).unwrap_or_else(|e| fail(e));
    std::fs::create_dir_all(out).unwrap();
    for e in std::fs::read_dir(fixture).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() != "_metadata" {
            std::fs::copy(&p, out.join(p.file_name().unwrap())).unwrap();
        }
    }
    let handles = cp
        .metadata
        .operators
        .iter()
        .flat_map(|o| o.subtask_states())
        .filter(|(_, st)| matches!(st.managed_keyed, Some(KeyedHandle::KeyGroups { .. })))
        .count() as u64;
    let (mut done, target) = (0, (mib << 20) / handles.max(1));
    for op in &mut cp.metadata.operators {
        let prefix = if op.max_parallelism > 128 { 2 } else { 1 };
        let Subtasks::List(list) = &mut op.subtasks else {
            continue;
        };
        for entry in list {
            let SubtaskEntry::State(_, st) = entry else {
                continue;
            };
            let Some(KeyedHandle::KeyGroups { code, handle }) = &mut st.managed_keyed else {
                continue;
            };
            let Some(StreamHandle::RelativeFile { path, .. }) = &handle.delegate else {
                panic!("a relative stream file")
            };
            let path = path.to_string();
            let stream = std::fs::read(fixture.join(&path)).unwrap();
            let (meta, _) = key_groups_format(*code, handle, &stream).unwrap();
            // the runs of each key group: (kvStateId, pairs)
            let mut groups: Vec<(usize, Runs)> = Vec::new();
            let first = handle.start_key_group;
            walk(&stream, &meta, first, &handle.offsets, prefix, &mut |ev| {
                match ev {
                    Event::KeyGroup(kg, _) => groups.push(((kg - first) as usize, Vec::new())),
                    Event::Run(s) => groups.last_mut().unwrap().1.push((s as u16, Vec::new())),
                    Event::Bytes(_, b) => groups
                        .last_mut()
                        .unwrap()
                        .1
                        .last_mut()
                        .unwrap()
                        .1
                        .extend_from_slice(b),
                    Event::End => {}
                }
                Ok(())
            })
            .unwrap();
            let data: u64 = groups
                .iter()
                .flat_map(|g| &g.1)
                .map(|r| r.1.len() as u64)
                .sum();
            let repeat = (target / data.max(1)).max(1) as usize;
            let mut offsets = vec![0i64; handle.offsets.len()];
            let file = std::fs::File::create(out.join(&path)).unwrap();
            let mut w = std::io::BufWriter::with_capacity(1 << 20, Counting(file, 0));
            w.write_all(&stream[..meta.len]).unwrap();
            let mut enc = FrameEncoder::default();
            for (index, runs) in &groups {
                w.flush().unwrap();
                offsets[*index] = w.get_ref().1 as i64;
                if meta.compressed {
                    enc.start(&mut w).unwrap();
                }
                let mut put = |w: &mut std::io::BufWriter<Counting>, b: &[u8]| {
                    if meta.compressed {
                        enc.write(b, w).unwrap()
                    } else {
                        w.write_all(b).unwrap()
                    }
                };
                for (id, pairs) in runs {
                    put(&mut w, &id.to_be_bytes());
                    let last = last_key(pairs);
                    let mut copy = pairs.clone();
                    for r in 1..repeat {
                        vary(pairs, &mut copy, r as u32);
                        copy[last] &= 0x7F;
                        put(&mut w, &copy);
                    }
                    put(&mut w, pairs);
                }
                put(&mut w, &0xFFFFu16.to_be_bytes());
                if meta.compressed {
                    enc.finish(&mut w).unwrap();
                }
            }
            w.flush().unwrap();
            let len = w.get_ref().1 as i64;
            if let Some(StreamHandle::RelativeFile { size, .. }) = &mut handle.delegate {
                *size = len;
            }
            handle.offsets = Offsets::from_slice(&offsets);
            println!("grew {path} to {len} bytes (runs x{repeat})");
            done += 1;
        }
    }
    assert!(done > 0, "a canonical savepoint with key-groups handles");
    std::fs::write(out.join("_metadata"), cp.metadata.to_vec()).unwrap();
}

/// `pairs` with the last four bytes of each key and value (where it has them) mixed with the
/// repetition's number, so that repeated keys differ and values do not compress away.
fn vary(pairs: &[u8], out: &mut [u8], r: u32) {
    let mut p = 0;
    let mut x = r.wrapping_mul(0x9E37_79B9) | 1;
    while p < pairs.len() {
        for _ in 0..2 {
            let n = i32::from_be_bytes(pairs[p..p + 4].try_into().unwrap()) as usize;
            p += 4 + n;
            if n >= 6 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                out[p - 4..p]
                    .iter_mut()
                    .zip(&pairs[p - 4..p])
                    .zip(x.to_be_bytes())
                    .for_each(|((o, i), m)| *o = i ^ m);
            }
        }
    }
}

/// The runs of a key group: (kvStateId, pairs).
type Runs = Vec<(u16, Vec<u8>)>;

/// Where the first byte of the last pair's key lies in a run's pairs.
fn last_key(pairs: &[u8]) -> usize {
    let mut p = 0;
    let mut last = 0;
    while p < pairs.len() {
        let kl = i32::from_be_bytes(pairs[p..p + 4].try_into().unwrap()) as usize;
        last = p + 4;
        p += 4 + kl;
        let vl = i32::from_be_bytes(pairs[p..p + 4].try_into().unwrap()) as usize;
        p += 4 + vl;
    }
    last
}

struct Counting(std::fs::File, u64);

impl Write for Counting {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(b)?;
        self.1 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn remove(input: &Path, out: &Path, state: &str, threads: Option<usize>) {
    let t0 = Instant::now();
    let cp = Checkpoint::open(input).unwrap_or_else(|e| fail(e));
    let mut req = Request::remove_keyed_state(Selector::All, state);
    if let Some(t) = threads {
        req = req.with_threads(t);
    }
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap_or_else(|e| fail(e));
    let t1 = Instant::now();
    std::fs::create_dir_all(out).unwrap();
    let staged = commit::stage(&cp, &plan, out, None).unwrap_or_else(|e| fail(e));
    for f in &staged.unchanged_relative {
        std::fs::hard_link(cp.dir.join(f), out.join(f)).unwrap();
    }
    std::fs::rename(&staged.metadata_tmp, out.join("_metadata")).unwrap();
    let t2 = Instant::now();
    let read: u64 = staged.keyed.iter().map(|k| k.bytes_read).sum();
    let written: u64 = staged.keyed.iter().map(|k| k.bytes_written).sum();
    let secs = (t2 - t0).as_secs_f64();
    println!(
        "remove-keyed-state plan_ms={:.1} stage_ms={:.1} threads={} handles={} read={} written={} \
         entries_removed={} read_mib_s={:.0}",
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        plan.threads,
        plan.keyed.len(),
        read,
        written,
        staged.keyed.iter().map(|k| k.entries_removed).sum::<u64>(),
        read as f64 / secs / (1 << 20) as f64
    );
}
