//! Reads every keyed handle of a checkpoint, in parallel across handles, into the keyed-state
//! report. A local checkpoint's files ([`Checkpoint::stream_bytes`]: memory-mapped, opened
//! `O_NONBLOCK`, regular files only, relative handles next to `_metadata`, absolute ones below the
//! job directory) or a remote one's ([`super::remote::RemoteCheckpoint`]: ranged reads through
//! Flink's FileSystem), each handle in bounded memory; a handle that cannot be read is reported
//! with its error and the others still are.

use crate::codec::handles::KeyedHandle;
use crate::codec::keyed::read_handle;
use crate::codec::StreamSource;
use crate::commit::mapguard;
use crate::commit::read::Checkpoint;
use crate::report::keyed::{self, HandleReadings, KeyedReport};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The default number of handles read at once: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How far a keyed read is: handles read of all, and the bytes of the handles read (as
/// `_metadata` states their sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedProgress {
    pub handles_done: usize,
    pub handles: usize,
    pub bytes_done: u64,
    pub bytes: u64,
}

/// Reads the keyed handles of `cp` with `threads` workers (at least one).
pub fn read_keyed(cp: &Checkpoint, threads: usize) -> KeyedReport {
    read_keyed_from(cp, threads, &|_| {})
}

/// Reads the keyed handles of any checkpoint source with `threads` workers (at least one);
/// `progress` hears of every handle read, from the worker that read it.
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
    let bytes: u64 = jobs.iter().map(|j| j.3.state_size().max(0) as u64).sum();
    let next = AtomicUsize::new(0);
    let (handles_done, bytes_done) = (AtomicUsize::new(0), AtomicU64::new(0));
    let done: Mutex<Vec<HandleReadings>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let workers = threads.max(1).min(jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(operator, subtask, raw, h, max_parallelism)) = jobs.get(i) else {
                    break;
                };
                let readings = if raw {
                    Vec::new()
                } else {
                    // a file truncated while mapped faults on this worker: its reading is void
                    mapguard::reset();
                    let mut r = read_handle(h, src, max_parallelism);
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
                progress(KeyedProgress {
                    handles_done: handles_done.fetch_add(1, Ordering::Relaxed) + 1,
                    handles: jobs.len(),
                    bytes_done: bytes_done
                        .fetch_add(h.state_size().max(0) as u64, Ordering::Relaxed)
                        + h.state_size().max(0) as u64,
                    bytes,
                });
            });
        }
    });
    keyed::build(md, done.into_inner().unwrap_or_else(|p| p.into_inner()))
}
