//! Memory-mapped input that another process may truncate while it is read: a running job deletes
//! or rewrites old checkpoints. Touching a page beyond the new end of a mapped file raises
//! SIGBUS, which would abort the JVM. A SIGBUS handler, installed once and chained to the one it
//! replaces (the JVM's), checks whether the fault lies in a mapping registered here; if so it maps
//! zero pages over the rest of that mapping, so the read goes on, and records the fault. The
//! native call that ran on the faulting thread then fails with a clear error ([`check`]) instead
//! of using the zeros. Faults anywhere else go to the previous handler unchanged.
//!
//! Everything the handler touches is a fixed array of atomics or a const-initialized thread-local
//! cell: no allocation and no lock in signal context.

use crate::error::{Error, Result};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

const SLOTS: usize = 4096;

static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// The handler replaced by ours, stored once before ours is installed.
static mut PREVIOUS: Option<libc::sigaction> = None;
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Which file each slot maps (read outside signal context only).
static PATHS: Mutex<Vec<Option<PathBuf>>> = Mutex::new(Vec::new());

thread_local! {
    /// The slot of the last guarded fault on this thread, plus one (0: none).
    static FAULT: Cell<usize> = const { Cell::new(0) };
}

/// A registered mapping; unregisters itself when dropped.
pub struct Guard {
    slot: usize,
}

impl Drop for Guard {
    fn drop(&mut self) {
        LENS[self.slot].store(0, Ordering::SeqCst);
        STARTS[self.slot].store(0, Ordering::SeqCst);
    }
}

/// Registers `[start, start + len)` as a guarded mapping of `path`. Returns None when every slot
/// is taken (the mapping is then unguarded, as before this module existed) or the handler could
/// not be installed.
pub fn register(start: usize, len: usize, path: &Path) -> Option<Guard> {
    install();
    if !INSTALLED.load(Ordering::SeqCst) || start == 0 || len == 0 {
        return None;
    }
    for slot in 0..SLOTS {
        if STARTS[slot]
            .compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            LENS[slot].store(len, Ordering::SeqCst);
            let mut paths = PATHS.lock().unwrap_or_else(|p| p.into_inner());
            if paths.len() < SLOTS {
                paths.resize(SLOTS, None);
            }
            paths[slot] = Some(path.to_path_buf());
            return Some(Guard { slot });
        }
    }
    None
}

/// Forgets any fault recorded on this thread (call before a native operation).
pub fn reset() {
    FAULT.with(|f| f.set(0));
}

/// A guarded fault recorded on a helper thread, carried to the thread whose call it helps.
#[must_use = "a fault not adopted by the calling thread goes unreported"]
pub struct Fault(usize);

/// The fault recorded on this thread (a helper's), taken for [`adopt`].
pub fn take() -> Fault {
    Fault(FAULT.with(|f| f.replace(0)))
}

/// Records a helper's fault on this thread, so that [`check`] here reports it (a fault already
/// recorded here is kept).
pub fn adopt(fault: Fault) {
    FAULT.with(|f| {
        if f.get() == 0 {
            f.set(fault.0)
        }
    });
}

/// An error if a guarded mapping faulted on this thread since [`reset`]: its file shrank while it
/// was read, and what was read from it may be zeros.
pub fn check() -> Result<()> {
    let slot = FAULT.with(|f| f.replace(0));
    if slot == 0 {
        return Ok(());
    }
    let paths = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    let name = paths
        .get(slot - 1)
        .and_then(|p| p.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "a mapped file".into());
    Err(Error::InvalidArgument(format!(
        "{name}: the file shrank while it was read (is a job deleting or rewriting it?); nothing read from it is used"
    )))
}

fn install() {
    INSTALL.call_once(|| {
        page_size(); // computed here, outside signal context
                     // SAFETY: sigaction with a zeroed struct filled field by field is the documented way to
                     // install a handler; PREVIOUS is written once, here, before the handler can run.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = handler as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &new, &mut old) == 0 {
                PREVIOUS = Some(old);
                INSTALLED.store(true, Ordering::SeqCst);
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in 0..SLOTS {
        let start = STARTS[slot].load(Ordering::SeqCst);
        let len = LENS[slot].load(Ordering::SeqCst);
        if start != 0 && addr >= start && addr < start + len {
            let page = addr & !(page_size() - 1);
            // SAFETY: the range lies inside a mapping this process created and still owns (the
            // guard unregisters it before unmapping); MAP_FIXED replaces its pages by zero pages.
            let ok = unsafe {
                libc::mmap(
                    page as *mut libc::c_void,
                    start + len - page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            } != libc::MAP_FAILED;
            if ok {
                FAULT.with(|f| f.set(slot + 1));
                return;
            }
        }
    }
    chain(sig, info, ctx);
}

fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: PREVIOUS was written before our handler was installed and never again.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS)).as_ref() };
    let Some(prev) = prev else { return };
    let h = prev.sa_sigaction;
    if h == libc::SIG_IGN {
        return;
    }
    if h == libc::SIG_DFL {
        // SAFETY: restoring the default action and re-raising terminates as SIGBUS would have.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
            libc::raise(sig);
        }
        return;
    }
    // SAFETY: the previous handler was installed for this signal with these flags.
    unsafe {
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(h);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        }
    }
}

fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    PAGE.store(p, Ordering::Relaxed);
    p
}
