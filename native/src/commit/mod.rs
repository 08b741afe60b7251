//! The native step of the one commit sequence (`io.checkpointsurgeon.Commit` drives it): write the
//! surgery's new state files and the new `_metadata` under fresh names, each created exclusively
//! (`create_new`, never opened onto an existing path), then read the new `_metadata` back and
//! check it and every rewritten stream. Nothing here makes anything visible: placing unchanged
//! files, the backup and the atomic switch are the Java side's steps, after Flink's loader has
//! judged the staged file. On failure every file this step created is removed again.
//!
//! Keyed streams a keyed surgery rewrites ([`crate::surgery::NewStream::keyed`]) are written
//! here, `plan.threads` at a time, each streamed from the old file to the new one with `pread`
//! and a buffered writer (bounded memory whatever its size), then read back from the new file
//! by the keyed reader; their new offsets and sizes go into the staged `_metadata`. A remote
//! checkpoint repaired onto a Flink path writes them straight into the target instead, through
//! [`remote::RemoteSink`] (nothing staged locally; the objects are named by no `_metadata` until
//! the switch, and the Java side, which saw each created, removes them on failure). With a
//! [`work::KeyedRewriter`] ([`stage_with`], `--on-flink`) the same per-stream rewrite runs in a
//! Flink job's tasks instead, and the stage goes on with what they return.

pub mod keyed;
pub mod mapguard;
pub mod read;
pub mod remote;
pub mod work;

pub use read::Checkpoint;

use crate::codec::handles::checked_relative;
use crate::codec::handles::{KeyGroups, KeyedHandle, Offsets, StreamHandle};
use crate::codec::io::JStr;
use crate::codec::keyed::rewrite;
use crate::codec::keyed::RangeSource;
use crate::codec::metadata::{CheckpointMetadata, SubtaskEntry, Subtasks};
use crate::codec::opstate;
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use crate::surgery::keyed::check_rewritten;
use crate::surgery::{delegate_location, Depth, NewStream, Plan, ABSOLUTE_PLACEHOLDER};
use bytes::Bytes;
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
    /// The keyed streams rewritten here, with what was read and written for each.
    pub keyed: Vec<StagedKeyed>,
}

/// One keyed stream written by [`stage`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StagedKeyed {
    pub file: String,
    /// What it replaces (the old stream's location).
    pub replaces: String,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Entries and bytes (as stored, uncompressed) of the removed states in the old stream; 0 for
    /// a rename, whose key groups are copied without being walked.
    pub entries_removed: u64,
    pub raw_bytes_removed: u64,
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
    stage_with(cp, plan, stream_dir, out_uri, None)
}

/// [`stage`], with the keyed streams rewritten by `rewriter` (a Flink job, see [`work`]) instead
/// of this process's `plan.threads` workers when it is given.
pub fn stage_with(
    cp: &Checkpoint,
    plan: &Plan,
    stream_dir: &Path,
    out_uri: Option<&str>,
    rewriter: Option<&dyn work::KeyedRewriter>,
) -> Result<Staged> {
    let dir_s = stream_dir.display().to_string();
    let meta = std::fs::metadata(stream_dir).map_err(|e| Error::io(&dir_s, e))?;
    if !meta.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{dir_s} is not a directory; the new state files cannot be written there"
        )));
    }
    let mut created: Vec<PathBuf> = Vec::new();
    let result = stage_into(cp, plan, stream_dir, out_uri, rewriter, &mut created);
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
    rewriter: Option<&dyn work::KeyedRewriter>,
    created: &mut Vec<PathBuf>,
) -> Result<Staged> {
    let mut staged = Staged::default();
    let new_files: HashSet<String> = plan
        .new_streams
        .iter()
        .filter_map(|s| s.file_name.clone())
        .collect();
    let metadata = with_new_file_paths(plan.metadata.clone(), stream_dir, out_uri);

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
    let write_tmp = |metadata: &CheckpointMetadata, created: &mut Vec<PathBuf>| {
        fresh_path(stream_dir, &format!("{METADATA_FILE_NAME}.tmp-"), |p| {
            write_new_file(p, created, |w| {
                let mut out = crate::codec::io::Writer::new(w);
                metadata.write(&mut out)
            })
        })
    };
    let mut tmp = write_tmp(&metadata, created)?;
    for s in &plan.new_streams {
        let Some(name) = &s.file_name else { continue };
        if s.keyed.is_some() {
            continue;
        }
        let path = stream_dir.join(checked_relative(name)?);
        write_new_file(&path, created, |w| {
            for p in &s.pieces {
                w.write_all(p)?;
            }
            Ok(())
        })?;
        staged.written.push(path.display().to_string());
    }
    // Rewritten keyed streams have their key-group offsets only once written: the first
    // `_metadata.tmp-*` names their files (for `clean-leftovers`), a second one has the offsets.
    let keyed_written = stage_keyed(cp, plan, stream_dir, out_uri, rewriter, created)?;
    let mut metadata = metadata;
    if !keyed_written.is_empty() {
        let mut planned = plan.metadata.clone();
        for (path, k, offsets) in keyed_written {
            set_key_groups(&mut planned, &k.file, offsets, k.bytes_written)?;
            staged.written.push(path.display().to_string());
            staged.keyed.push(k);
        }
        metadata = with_new_file_paths(planned, stream_dir, out_uri);
        let first = std::mem::replace(&mut tmp, write_tmp(&metadata, created)?);
        std::fs::remove_file(&first).map_err(|e| Error::io(first.display().to_string(), e))?;
        created.retain(|p| *p != first);
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
        remote: cp.remote.clone(),
        ..written
    };
    if let Some(u) = out_uri {
        check.add_mirror(u, stream_dir.to_path_buf());
    }
    verify_streams(&check, plan)?;
    if !plan.keyed.is_empty() {
        let staging = Staging {
            cp,
            dir: stream_dir,
            new_files: &new_files,
        };
        keyed::verify_staged(cp, &check.metadata, &staging, plan)?;
    }
    // an input truncated while it was mapped and read: the staged files hold zeros (mapguard)
    crate::commit::mapguard::check()?;
    staged.metadata_bytes = check.bytes.len() as u64;
    staged.metadata_tmp = tmp;
    Ok(staged)
}

/// Writes the keyed streams of the plan, `plan.threads` at a time: each streamed from its old
/// stream into a new file, then read back. Returns each file's path, figures and new offsets.
/// A keyed stream written: its path, figures and new key-group offsets.
type Written = (PathBuf, StagedKeyed, Offsets);

/// Where [`rewrite_keyed`] writes a keyed stream.
#[derive(Clone, Copy)]
enum KeyedOut<'a> {
    /// A new file in the stream directory.
    Dir(&'a Path),
    /// A new object `<uri>/<file>` on a Flink path, written through `files` as it is rewritten
    /// (nothing staged locally); its removal on failure is the caller's, which saw it created.
    Remote {
        uri: &'a str,
        files: &'a (dyn remote::RemoteFiles + Send + Sync),
    },
}

fn stage_keyed(
    cp: &Checkpoint,
    plan: &Plan,
    stream_dir: &Path,
    out_uri: Option<&str>,
    rewriter: Option<&dyn work::KeyedRewriter>,
    created: &mut Vec<PathBuf>,
) -> Result<Vec<Written>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let jobs: Vec<&NewStream> = plan
        .new_streams
        .iter()
        .filter(|s| s.keyed.is_some() && s.file_name.is_some())
        .collect();
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(r) = rewriter {
        return work::stage_keyed_by(cp, &jobs, stream_dir, r, created);
    }
    // a remote checkpoint repaired onto a Flink path: the keyed streams go straight there
    let out = match (out_uri, &cp.remote) {
        (Some(uri), Some(r)) => KeyedOut::Remote {
            uri,
            files: &*r.files,
        },
        _ => KeyedOut::Dir(stream_dir),
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let made: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let results: Mutex<Vec<(usize, Result<Written>)>> = Mutex::new(Vec::new());
    let workers = plan.threads.max(1).min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let Some(s) = jobs.get(i) else { break };
                let r = rewrite_keyed(cp, s, out, &made);
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((i, r));
            });
        }
    });
    created.extend(made.into_inner().unwrap_or_else(|p| p.into_inner()));
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|r| r.0);
    results.into_iter().map(|(_, r)| r).collect()
}

/// One keyed stream: rewritten from the old stream into a new file (`O_EXCL`, synced) or a new
/// remote object (created without overwriting, completed only when whole, then read back in
/// full and compared by length and hash), then read back from there by the keyed reader.
fn rewrite_keyed(
    cp: &Checkpoint,
    s: &NewStream,
    out: KeyedOut<'_>,
    made: &std::sync::Mutex<Vec<PathBuf>>,
) -> Result<Written> {
    let rw = s.keyed.as_ref().expect("a keyed stream");
    let name = checked_relative(s.file_name.as_deref().expect("a file"))?;
    let src_name = keyed_stream_name(&rw.source);
    let src = cp
        .stream_range(&rw.source)
        .map_err(|e| e.in_file(&src_name))?;
    let mut confirm = None;
    let (path, done, written): (PathBuf, _, Box<dyn RangeSource>) = match out {
        KeyedOut::Dir(stream_dir) => {
            let path = stream_dir.join(name);
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| create_error(&path, e))?;
            made.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(path.clone());
            let shown = path.display().to_string();
            let done = {
                let mut w = BufWriter::with_capacity(1 << 20, &file);
                let done = rewrite::rewrite(src.as_ref(), &rw.edit, &mut w, &shown)
                    .map_err(|e| e.in_file(&src_name))?;
                w.flush().map_err(|e| Error::io(&shown, e))?;
                done
            };
            file.sync_all().map_err(|e| Error::io(&shown, e))?;
            drop(file);
            let written = read::FileRange::open(&path, 0, None)?;
            (path, done, Box::new(written))
        }
        KeyedOut::Remote { uri, files } => {
            let path = format!("{}/{name}", uri.trim_end_matches('/'));
            let mut sink = remote::RemoteSink::create(files, &path)?;
            let done = rewrite::rewrite(src.as_ref(), &rw.edit, &mut sink, &path)
                .map_err(|e| e.in_file(&src_name))?;
            let (len, hash) = sink.finish()?;
            // the keyed reader's read-back below hashes what it reads: compared after it
            let seen = std::sync::Arc::new(std::sync::Mutex::new(remote::Seen::default()));
            let written = remote::HashedRead {
                stream: remote::RemoteStream {
                    files,
                    path: path.clone(),
                    start: 0,
                    len,
                },
                seen: seen.clone(),
            };
            confirm = Some((files, path.clone(), len, hash, seen));
            (PathBuf::from(path), done, Box::new(written))
        }
    };
    let shown = path.display().to_string();
    let new_kg = KeyGroups {
        start_key_group: rw.edit.first_key_group,
        offsets: done.offsets.clone(),
        delegate: None,
        id: None,
    };
    check_rewritten(rw.code, &new_kg, written.as_ref(), &shown, &rw.edit, &done)?;
    drop(written);
    if let Some((files, path, len, hash, seen)) = confirm {
        remote::confirm_written(files, &path, len, hash, &seen)?;
    }
    let (mut entries, mut raw) = (0, 0);
    if let Some(source) = &done.source {
        for (old, id) in rw.edit.ids.iter().enumerate() {
            if id.is_none() {
                entries += source[old].entries;
                raw += source[old].raw_bytes;
            }
        }
    }
    Ok((
        path,
        StagedKeyed {
            file: name.to_string(),
            replaces: s.replaces.clone(),
            bytes_read: src.len(),
            bytes_written: done.len,
            entries_removed: entries,
            raw_bytes_removed: raw,
        },
        done.offsets,
    ))
}

/// Sets the offsets and the size of the key-groups handle whose stream is the new file `file`.
fn set_key_groups(
    md: &mut CheckpointMetadata,
    file: &str,
    offsets: Offsets,
    len: u64,
) -> Result<()> {
    let placeholder = format!("{ABSOLUTE_PLACEHOLDER}{file}");
    for op in &mut md.operators {
        let Subtasks::List(list) = &mut op.subtasks else {
            continue;
        };
        for e in list {
            let SubtaskEntry::State(_, st) = e else {
                continue;
            };
            let Some(KeyedHandle::KeyGroups { handle, .. }) = &mut st.managed_keyed else {
                continue;
            };
            let hit = match &mut handle.delegate {
                Some(StreamHandle::RelativeFile { path, size }) if path.to_string() == file => {
                    Some(size)
                }
                Some(StreamHandle::File { path, size }) if path.to_string() == placeholder => {
                    Some(size)
                }
                _ => None,
            };
            if let Some(size) = hit {
                *size = len as i64;
                handle.offsets = offsets;
                return Ok(());
            }
        }
    }
    Err(Error::Validation(format!(
        "no key-groups handle of the plan names the new stream {file}"
    )))
}

/// A stream handle as messages name it.
fn keyed_stream_name(h: &StreamHandle) -> String {
    crate::codec::keyed::handle::stream_name(h)
}

/// The staged checkpoint as a [`StreamSource`]: the files this run wrote from the stream
/// directory, every other one from the checkpoint that was read (unchanged files are placed next
/// to the new `_metadata` only after the stage).
pub struct Staging<'a> {
    pub cp: &'a Checkpoint,
    pub dir: &'a Path,
    pub new_files: &'a HashSet<String>,
}

impl StreamSource for Staging<'_> {
    fn metadata(&self) -> &CheckpointMetadata {
        &self.cp.metadata
    }
    fn name(&self) -> String {
        self.dir.display().to_string()
    }
    fn metadata_len(&self) -> u64 {
        0
    }
    fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes> {
        match self.new_file(h) {
            Some(n) => read::map_file(&self.dir.join(checked_relative(&n)?)),
            None => self.cp.stream_bytes(h),
        }
    }
    /// The checkpoint's own streams as it opens them: an SST file of a remote one in ranges.
    fn open_stream(&self, h: &StreamHandle) -> Result<Box<dyn RangeSource + '_>> {
        match self.new_file(h) {
            Some(_) => Ok(Box::new(self.stream_bytes(h)?)),
            None => self.cp.open_stream(h),
        }
    }
}

impl Staging<'_> {
    /// The name of the new file this run wrote that `h` names, if it names one.
    fn new_file(&self, h: &StreamHandle) -> Option<String> {
        let new = match h {
            StreamHandle::RelativeFile { path, .. } => Some(path.to_string()),
            StreamHandle::File { path, .. } => {
                path.to_string().rsplit('/').next().map(str::to_string)
            }
            _ => None,
        };
        new.filter(|n| self.new_files.contains(n))
    }
}

/// The planned model with the placeholder paths of new absolute handles replaced by the paths
/// the new files will have.
fn with_new_file_paths(
    mut metadata: CheckpointMetadata,
    stream_dir: &Path,
    out_uri: Option<&str>,
) -> CheckpointMetadata {
    let abs_prefix = JStr::new(ABSOLUTE_PLACEHOLDER);
    metadata.visit_stream_handles_mut(&mut |h| {
        if let StreamHandle::File { path, .. } = h {
            if path.as_bytes().starts_with(abs_prefix.as_bytes()) {
                let name = path.to_string()[ABSOLUTE_PLACEHOLDER.len()..].to_string();
                *path = JStr::new(&match out_uri {
                    Some(u) => format!("{}/{name}", u.trim_end_matches('/')),
                    None => format!("file:{}", stream_dir.join(name).display()),
                });
            }
        }
    });
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
