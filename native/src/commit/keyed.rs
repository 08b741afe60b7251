//! Reads every keyed handle of a checkpoint on local disk, in parallel across handles, into the
//! keyed-state report. Files are the checkpoint's ([`Checkpoint::stream_bytes`]: memory-mapped,
//! opened `O_NONBLOCK`, regular files only, relative handles next to `_metadata`, absolute ones
//! below the job directory), each handle in bounded memory; a handle that cannot be read is
//! reported with its error and the others still are.

use crate::codec::handles::KeyedHandle;
use crate::codec::keyed::read_handle;
use crate::commit::mapguard;
use crate::commit::read::Checkpoint;
use crate::report::keyed::{self, HandleReadings, KeyedReport};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The default number of handles read at once: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Reads the keyed handles of `cp` with `threads` workers (at least one).
pub fn read_keyed(cp: &Checkpoint, threads: usize) -> KeyedReport {
    let mut jobs: Vec<(usize, i32, bool, &KeyedHandle, i32)> = Vec::new();
    for (index, op) in cp.metadata.operators.iter().enumerate() {
        for (subtask, st) in op.subtask_states() {
            for (raw, h) in [(false, &st.managed_keyed), (true, &st.raw_keyed)] {
                if let Some(h) = h {
                    jobs.push((index, subtask, raw, h, op.max_parallelism));
                }
            }
        }
    }
    let next = AtomicUsize::new(0);
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
                    let mut r = read_handle(h, cp, max_parallelism);
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
            });
        }
    });
    keyed::build(
        &cp.metadata,
        done.into_inner().unwrap_or_else(|p| p.into_inner()),
    )
}
