//! Reads every keyed handle of a checkpoint, in parallel across handles, into the keyed-state
//! report; and reads back the keyed handles a keyed surgery staged ([`verify_staged`]). A local
//! checkpoint's files ([`Checkpoint::stream_bytes`]: memory-mapped, opened `O_NONBLOCK`, regular
//! files only, relative handles next to `_metadata`, absolute ones below the job directory) or a
//! remote one's ([`super::remote::RemoteCheckpoint`]: ranged reads through Flink's FileSystem),
//! each handle in bounded memory; a handle that cannot be read is reported with its error and the
//! others still are. The SST files of RocksDB handles are read first, by the same workers across
//! all handles ([`ReadAhead`]): one handle may list thousands of them.

use crate::codec::handles::{KeyedHandle, StreamHandle};
use crate::codec::keyed::handle::{sst_streams, HandleReading, SnapshotFormat};
use crate::codec::keyed::sst::SstFile;
use crate::codec::keyed::{read_handle, RangeSource};
use crate::codec::metadata::CheckpointMetadata;
use crate::codec::StreamSource;
use crate::commit::mapguard;
use crate::commit::read::Checkpoint;
use crate::commit::Staging;
use crate::error::{Error, Result};
use crate::report::keyed::{self, HandleReadings, KeyedReport};
use crate::surgery::Plan;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The default number of handles read at once: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How far a keyed read is: parts read of all (each SST file read ahead, then each handle), and
/// their bytes (as `_metadata` states the sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedProgress {
    pub parts_done: usize,
    pub parts: usize,
    pub bytes_done: u64,
    pub bytes: u64,
}

/// Reads the keyed handles of `cp` with `threads` workers (at least one).
pub fn read_keyed(cp: &Checkpoint, threads: usize) -> KeyedReport {
    read_keyed_from(cp, threads, &|_| {})
}

/// A source whose SST files' footers and properties were read ahead; a file read ahead is handed
/// out once (each handle lists its files once), any other is read when asked for.
struct ReadAhead<'a> {
    src: &'a (dyn StreamSource + Sync),
    /// by the address of the file's handle in the metadata both sides walk
    ssts: Mutex<HashMap<usize, Result<SstFile>>>,
}

impl StreamSource for ReadAhead<'_> {
    fn metadata(&self) -> &CheckpointMetadata {
        self.src.metadata()
    }
    fn name(&self) -> String {
        self.src.name()
    }
    fn metadata_len(&self) -> u64 {
        self.src.metadata_len()
    }
    fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes> {
        self.src.stream_bytes(h)
    }
    fn open_stream(&self, h: &StreamHandle) -> Result<Box<dyn RangeSource + '_>> {
        self.src.open_stream(h)
    }
    fn sst(&self, h: &StreamHandle) -> Result<SstFile> {
        let ahead = self
            .ssts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(h as *const StreamHandle as usize));
        ahead.unwrap_or_else(|| self.src.sst(h))
    }
}

/// Runs `work(i)` for every `i < n` on `workers` threads (at least one), each taking the next.
fn on_workers(n: usize, workers: usize, work: &(dyn Fn(usize) + Sync)) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers.max(1).min(n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                work(i);
            });
        }
    });
}

/// Reads the keyed handles of any checkpoint source with `threads` workers (at least one), which
/// also bound the SST files read at once; `progress` hears of every part read, from the worker
/// that read it.
pub fn read_keyed_from(
    src: &(dyn StreamSource + Sync),
    threads: usize,
    progress: &(dyn Fn(KeyedProgress) + Sync),
) -> KeyedReport {
    let md = src.metadata();
    let mut jobs: Vec<(usize, i32, bool, &KeyedHandle, i32)> = Vec::new();
    for (index, op) in md.operators.iter().enumerate() {
        for (subtask, st) in op.subtask_states() {
            for (raw, h) in [(false, &st.managed_keyed), (true, &st.raw_keyed)] {
                if let Some(h) = h {
                    jobs.push((index, subtask, raw, h, op.max_parallelism));
                }
            }
        }
    }
    let size = |s: i64| s.max(0) as u64;
    // the SST files of managed handles, and what each handle weighs beyond them
    let mut ssts: Vec<&StreamHandle> = Vec::new();
    let mut rest: Vec<u64> = Vec::with_capacity(jobs.len());
    for j in &jobs {
        let files = if j.2 { Vec::new() } else { sst_streams(j.3) };
        let ahead: u64 = files.iter().map(|f| size(f.state_size())).sum();
        rest.push(size(j.3.state_size()).saturating_sub(ahead));
        ssts.extend(files);
    }
    let parts = ssts.len() + jobs.len();
    let bytes: u64 =
        ssts.iter().map(|f| size(f.state_size())).sum::<u64>() + rest.iter().sum::<u64>();
    let (parts_done, bytes_done) = (AtomicUsize::new(0), AtomicU64::new(0));
    let step = |b: u64| {
        progress(KeyedProgress {
            parts_done: parts_done.fetch_add(1, Ordering::Relaxed) + 1,
            parts,
            bytes_done: bytes_done.fetch_add(b, Ordering::Relaxed) + b,
            bytes,
        })
    };
    let ahead = ReadAhead {
        src,
        ssts: Mutex::new(HashMap::with_capacity(ssts.len())),
    };
    on_workers(ssts.len(), threads, &|i| {
        let f = ssts[i];
        // a file truncated while mapped faults on this worker: its reading is void
        mapguard::reset();
        let mut r = src.sst(f);
        if let Err(e) = mapguard::check() {
            r = Err(e);
        }
        let key = f as *const StreamHandle as usize;
        ahead
            .ssts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, r);
        step(size(f.state_size()));
    });
    let done: Mutex<Vec<HandleReadings>> = Mutex::new(Vec::with_capacity(jobs.len()));
    on_workers(jobs.len(), threads, &|i| {
        let (operator, subtask, raw, h, max_parallelism) = jobs[i];
        let readings = if raw {
            Vec::new()
        } else {
            mapguard::reset();
            let mut r = read_handle(h, &ahead, max_parallelism);
            if let Err(e) = mapguard::check() {
                r = vec![Err(e)];
            }
            r
        };
        let hr = HandleReadings {
            operator,
            subtask,
            raw,
            kind: h.kind(),
            size: h.state_size(),
            readings,
        };
        done.lock().unwrap_or_else(|p| p.into_inner()).push(hr);
        step(rest[i]);
    });
    keyed::build(md, done.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Reads back every keyed handle a keyed surgery changed, the new files from the stream directory
/// and the unchanged ones from the checkpoint: a handle whose last state went is gone; a RocksDB
/// handle's meta info names exactly the kept states under their new names, its MANIFEST reads,
/// every SST file left is live in the column family of a kept state (or `default`), and each kept
/// state has the same SST files, entries and bytes as before. (Key-groups streams are read back
/// as they are written, in `commit::stage`.)
pub fn verify_staged(
    cp: &Checkpoint,
    staged: &CheckpointMetadata,
    src: &Staging,
    plan: &Plan,
) -> Result<()> {
    let handle = |md: &CheckpointMetadata, operator: &str, subtask: i32| {
        md.operators
            .iter()
            .find(|o| o.hex_id() == operator)
            .map(|o| {
                let h = o
                    .subtask_states()
                    .find(|(i, _)| *i == subtask)
                    .and_then(|(_, st)| st.managed_keyed.clone());
                (h, o.max_parallelism)
            })
    };
    for change in &plan.keyed {
        let what = format!("subtask {} of operator {}", change.subtask, change.operator);
        let bad = |m: String| Error::Validation(format!("the staged keyed state of {what} {m}"));
        let (after, max_parallelism) = handle(staged, &change.operator, change.subtask)
            .ok_or_else(|| bad("is missing".into()))?;
        if change.handle_dropped {
            if after.is_some() {
                return Err(bad(
                    "still has a keyed handle, though its last state went".into()
                ));
            }
            continue;
        }
        if change.format != SnapshotFormat::RocksdbFiles {
            continue;
        }
        let after = after.ok_or_else(|| bad("has no keyed handle".into()))?;
        let (before, _) = handle(&cp.metadata, &change.operator, change.subtask)
            .ok_or_else(|| bad("is not in the checkpoint read".into()))?;
        let before = before.ok_or_else(|| bad("had no keyed handle".into()))?;
        let read = |h: &KeyedHandle, s: &(dyn StreamSource + Sync)| -> Result<HandleReading> {
            read_handle(h, s, max_parallelism)
                .into_iter()
                .next()
                .unwrap_or_else(|| Err(bad("reads as nothing".into())))
        };
        let old = read(&before, cp)?;
        let new = read(&after, src).map_err(|e| bad(format!("does not read back: {e}")))?;
        let rocks = new.rocksdb.as_ref().expect("a RocksDB reading");
        if !new.notes.is_empty() || rocks.manifest.is_none() {
            return Err(bad(format!("reads back with {:?}", new.notes)));
        }
        let old_meta = old
            .meta
            .as_ref()
            .expect("a RocksDB reading has its meta info");
        let new_meta = new
            .meta
            .as_ref()
            .expect("a RocksDB reading has its meta info");
        let new_names: Vec<String> = new_meta.states.iter().map(|s| s.name.to_string()).collect();
        let mut expected = Vec::new();
        for (i, s) in old_meta.states.iter().enumerate() {
            let name = s.name.to_string();
            if change.removed.contains(&name) {
                continue;
            }
            let to = change
                .renamed
                .iter()
                .find(|r| r.0 == name)
                .map_or(name.clone(), |r| r.1.clone());
            expected.push(to.clone());
            let j = new_names.iter().position(|n| *n == to);
            if j.is_none_or(|j| new.states[j] != old.states[i]) {
                return Err(bad(format!(
                    "holds {:?} of state '{to}' (was '{name}'), before {:?}",
                    j.map(|j| &new.states[j]),
                    old.states[i]
                )));
            }
        }
        if new_names != expected {
            return Err(bad(format!(
                "names the states {new_names:?}, not {expected:?}"
            )));
        }
        for f in &rocks.files {
            let cf = f.column_family.as_deref().unwrap_or("");
            if f.live != Some(true) || (f.state.is_none() && cf != "default") {
                return Err(bad(format!(
                    "keeps the SST file {} of column family '{cf}', which is not live in a kept \
                     state's column family",
                    f.key
                )));
            }
        }
    }
    Ok(())
}
