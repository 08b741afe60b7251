//! The native step of the one commit sequence (`io.checkpointsurgeon.Commit` drives it): write the
//! surgery's new state files and the new `_metadata` under fresh names, each created exclusively
//! (`create_new`, never opened onto an existing path), then read the new `_metadata` back and
//! check it and every rewritten stream. Nothing here makes anything visible: placing unchanged
//! files, the backup and the atomic switch are the Java side's steps, after Flink's loader has
//! judged the staged file. On failure every file this step created is removed again.

pub mod keyed;
pub mod mapguard;
pub mod read;
pub mod remote;

pub use read::Checkpoint;

use crate::codec::handles::checked_relative;
use crate::codec::handles::StreamHandle;
use crate::codec::io::JStr;
use crate::codec::metadata::CheckpointMetadata;
use crate::codec::opstate;
use crate::error::{Error, Result};
use crate::surgery::{delegate_location, Depth, Plan, ABSOLUTE_PLACEHOLDER};
use read::METADATA_FILE_NAME;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What [`stage`] wrote: nothing of it is referenced by a live `_metadata` yet.
#[derive(Clone, Debug, Default)]
pub struct Staged {
    /// The new `_metadata`, under a fresh name `_metadata.tmp-<uuid>` in the stream directory.
    pub metadata_tmp: PathBuf,
    pub metadata_bytes: u64,
    /// The new state files, all created by this run.
    pub written: Vec<String>,
    /// Relative state files the new `_metadata` references that this run did not write: the
    /// commit must place them next to the new `_metadata` (link or copy) unless it is in place.
    pub unchanged_relative: Vec<String>,
}

/// Writes the plan's new state files and the new `_metadata` into `stream_dir` under fresh
/// names. Absolute handles of new files name `file:<stream_dir>/<file>`, or `<out_uri>/<file>`
/// when the caller will upload them to `out_uri` (a Flink path). The written `_metadata` is parsed
/// back and must equal the planned model; every rewritten stream must parse and name exactly its
/// handle's states.
pub fn stage(
    cp: &Checkpoint,
    plan: &Plan,
    stream_dir: &Path,
    out_uri: Option<&str>,
) -> Result<Staged> {
    let dir_s = stream_dir.display().to_string();
    let meta = std::fs::metadata(stream_dir).map_err(|e| Error::io(&dir_s, e))?;
    if !meta.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{dir_s} is not a directory; the new state files cannot be written there"
        )));
    }
    let mut created: Vec<PathBuf> = Vec::new();
    let result = stage_into(cp, plan, stream_dir, out_uri, &mut created);
    if result.is_err() {
        for p in created.iter().rev() {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

fn stage_into(
    cp: &Checkpoint,
    plan: &Plan,
    stream_dir: &Path,
    out_uri: Option<&str>,
    created: &mut Vec<PathBuf>,
) -> Result<Staged> {
    let mut staged = Staged::default();
    let new_files: HashSet<String> = plan
        .new_streams
        .iter()
        .filter_map(|s| s.file_name.clone())
        .collect();
    let metadata = with_new_file_paths(plan, stream_dir, out_uri);

    let mut relative = Vec::new();
    metadata.visit_stream_handles(&mut |h| {
        if let StreamHandle::RelativeFile { path, .. } = h {
            relative.push(path.to_string());
        }
    });
    relative.sort();
    relative.dedup();
    relative.retain(|n| !new_files.contains(n));
    staged.unchanged_relative = relative;

    // The staged `_metadata` first, then the files it names: a run killed in between leaves
    // files that a `_metadata.tmp-*` beside them references, which is how `clean-leftovers`
    // knows them as a killed run's (`internal/Leftovers.java`).
    let tmp = fresh_path(stream_dir, &format!("{METADATA_FILE_NAME}.tmp-"), |p| {
        write_new_file(p, created, |w| {
            let mut out = crate::codec::io::Writer::new(w);
            metadata.write(&mut out)
        })
    })?;
    for s in &plan.new_streams {
        let Some(name) = &s.file_name else { continue };
        let path = stream_dir.join(checked_relative(name)?);
        write_new_file(&path, created, |w| {
            for p in &s.pieces {
                w.write_all(p)?;
            }
            Ok(())
        })?;
        staged.written.push(path.display().to_string());
    }
    let written = Checkpoint::open(&tmp)?;
    if written.metadata != metadata {
        return Err(Error::InvalidArgument(format!(
            "{}: the written _metadata does not parse back to the planned model",
            tmp.display()
        )));
    }
    let mut check = Checkpoint {
        dir: stream_dir.to_path_buf(),
        mirrors: cp.mirrors.clone(),
        ..written
    };
    if let Some(u) = out_uri {
        check.add_mirror(u, stream_dir.to_path_buf());
    }
    verify_streams(&check, plan)?;
    // an input truncated while it was mapped and read: the staged files hold zeros (mapguard)
    crate::commit::mapguard::check()?;
    staged.metadata_bytes = check.bytes.len() as u64;
    staged.metadata_tmp = tmp;
    Ok(staged)
}

/// The planned model with the placeholder paths of new absolute handles replaced by the paths
/// the new files will have.
fn with_new_file_paths(
    plan: &Plan,
    stream_dir: &Path,
    out_uri: Option<&str>,
) -> CheckpointMetadata {
    let mut metadata = plan.metadata.clone();
    let abs_prefix = JStr::new(ABSOLUTE_PLACEHOLDER);
    for at in metadata.operator_handles_mut() {
        if let Some(StreamHandle::File { path, .. }) = &mut at.handle.delegate {
            if path.as_bytes().starts_with(abs_prefix.as_bytes()) {
                let name = path.to_string()[ABSOLUTE_PLACEHOLDER.len()..].to_string();
                *path = JStr::new(&match out_uri {
                    Some(u) => format!("{}/{name}", u.trim_end_matches('/')),
                    None => format!("file:{}", stream_dir.join(name).display()),
                });
            }
        }
    }
    metadata
}

/// Every rewritten stream must parse, and its header must name exactly the handle's states.
fn verify_streams(cp: &Checkpoint, plan: &Plan) -> Result<()> {
    let new_files: HashSet<&str> = plan
        .new_streams
        .iter()
        .filter_map(|s| s.file_name.as_deref())
        .collect();
    let inline_rewritten = plan.new_streams.iter().any(|s| s.file_name.is_none());
    for at in cp.metadata.operator_handles() {
        let h = at.handle;
        let Some(d) = &h.delegate else { continue };
        let rewritten = match d {
            StreamHandle::ByteStream { .. } => inline_rewritten,
            StreamHandle::RelativeFile { path, .. } => {
                new_files.contains(path.to_string().as_str())
            }
            // an absolute handle of a new file: its path ends with the file name
            StreamHandle::File { path, .. } => path
                .to_string()
                .rsplit('/')
                .next()
                .is_some_and(|n| new_files.contains(n)),
            _ => false,
        };
        if !rewritten {
            continue;
        }
        let stream = cp.stream_bytes(d)?;
        let header =
            opstate::parse_header(&stream, h).map_err(|e| e.in_file(&delegate_location(d)))?;
        // Every state of the handle has its entry; after a purge, and only then, the
        // header names no other state (metadata-only removals keep their entries).
        let exact = plan.depth == Depth::Purge;
        if (exact && header.entries.len() != h.states.len())
            || h.states.iter().any(|s| header.entry(&s.name).is_none())
        {
            return Err(Error::InvalidArgument(format!(
                "{}: the rewritten stream header does not match its handle",
                delegate_location(d)
            )));
        }
    }
    Ok(())
}

/// Creates `dir/<prefix><uuid>` with `create`, trying new names while one exists.
fn fresh_path(
    dir: &Path,
    prefix: &str,
    mut create: impl FnMut(&Path) -> Result<()>,
) -> Result<PathBuf> {
    for _ in 0..16 {
        let p = dir.join(format!("{prefix}{}", random_file_name()));
        match create(&p) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
            }
            Err(e) => return Err(e),
            Ok(()) => return Ok(p),
        }
    }
    Err(Error::InvalidArgument(format!(
        "{}: 16 fresh names in a row already existed; refusing to go on",
        dir.display()
    )))
}

/// Creates a file that must not exist (`O_CREAT|O_EXCL`: never onto an existing path or a
/// symlink), writes it, syncs it, and records it in `created`. A failed write removes it.
fn write_new_file(
    path: &Path,
    created: &mut Vec<PathBuf>,
    body: impl FnOnce(&mut BufWriter<&File>) -> std::io::Result<()>,
) -> Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| create_error(path, e))?;
    created.push(path.to_path_buf());
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        body(&mut w)?;
        w.flush()?;
        drop(w);
        file.sync_all()
    })();
    result.map_err(|e| Error::io(path.display(), e))
}

/// An error for a file that could not be created, naming the cause a user can act on.
fn create_error(path: &Path, e: std::io::Error) -> Error {
    let dir = path.parent().unwrap_or(Path::new("."));
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::io(
            format!(
                "directory {} not writable (creating {})",
                dir.display(),
                path.display()
            ),
            e,
        ),
        _ if e.raw_os_error() == Some(30) => Error::io(
            format!("directory {} is on a read-only file system", dir.display()),
            e,
        ),
        _ => Error::io(path.display(), e),
    }
}

/// A fresh random name for a state file, shaped like the UUIDs Flink uses but of version 8
/// (RFC 9562, custom) with the tag `8c5` where Flink's (`UUID.randomUUID`, version 4) have `4`:
/// `xxxxxxxx-xxxx-8c5x-yxxx-xxxxxxxxxxxx`, 114 random bits. No Flink file is named so, which
/// lets `doctor` and `clean-leftovers` tell this tool's staged files from Flink's
/// (`internal/Leftovers.java` holds the pattern).
pub fn random_file_name() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let ok = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if ok.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b = (t ^ (std::process::id() as u128) << 64).to_le_bytes();
    }
    b[6] = 0x8c;
    b[7] = (b[7] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// An exclusive lock on a directory: `flock` on the directory itself, so no lock file is left
/// behind and the kernel releases it when the run ends, however it ends (no stale locks). A
/// second run, in this process or another, fails at once with a message naming the holder.
pub fn lock_dir(dir: &Path) -> Result<File> {
    let d = File::open(dir).map_err(|e| Error::io(dir.display(), e))?;
    match d.try_lock() {
        Ok(()) => Ok(d),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(format!(
            "{} is locked by another repair ({}); the lock is released when that run ends",
            dir.display(),
            lock_holder(&d).unwrap_or_else(|| "holder not found: it may have just finished".into())
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {} (flock)", dir.display()), e))
        }
    }
}

/// The process holding a `flock` on `f`, from `/proc/locks` and its command line.
fn lock_holder(f: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata().ok()?;
    let dev = m.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let id = format!("{major:02x}:{minor:02x}:{}", m.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid: u32 = locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 5 && f[1] == "FLOCK" && f[5] == id).then(|| f[4].parse().ok())?
    })?;
    if pid == std::process::id() {
        return Some(format!("pid {pid}: another repair in this process"));
    }
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmd: Vec<String> = cmd
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some(if cmd.is_empty() {
        format!("pid {pid}")
    } else {
        format!("pid {pid}: {}", cmd.join(" "))
    })
}
