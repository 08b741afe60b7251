//! Reads every keyed handle of a checkpoint, in parallel across handles, into the keyed-state
//! report. A local checkpoint's files ([`Checkpoint::stream_bytes`]: memory-mapped, opened
//! `O_NONBLOCK`, regular files only, relative handles next to `_metadata`, absolute ones below the
//! job directory) or a remote one's ([`super::remote::RemoteCheckpoint`]: ranged reads through
//! Flink's FileSystem), each handle in bounded memory; a handle that cannot be read is reported
//! with its error and the others still are. The SST files of RocksDB handles are read first, by
//! the same workers across all handles ([`ReadAhead`]): one handle may list thousands of them.

use crate::codec::handles::{KeyedHandle, StreamHandle};
use crate::codec::keyed::handle::sst_streams;
use crate::codec::keyed::sst::SstFile;
use crate::codec::keyed::{read_handle, RangeSource};
use crate::codec::metadata::CheckpointMetadata;
use crate::codec::StreamSource;
use crate::commit::mapguard;
use crate::commit::read::Checkpoint;
use crate::error::Result;
use crate::report::keyed::{self, HandleReadings, KeyedReport};
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
