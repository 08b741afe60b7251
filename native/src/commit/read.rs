//! A checkpoint on local disk: the memory-mapped `_metadata` and the state streams its handles
//! point at. Relative handles resolve next to `_metadata` and may not escape that directory.

use crate::codec::handles::{checked_relative, StreamHandle};
use crate::codec::keyed::RangeSource;
use crate::codec::keyed::MAX_WINDOW;
use crate::codec::metadata::{self, CheckpointMetadata};
use crate::commit::remote::{RemoteFiles, RemoteStream};
use crate::error::{Error, Result};
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const METADATA_FILE_NAME: &str = "_metadata";

/// Maps a regular file read-only into memory (an empty file gives empty bytes).
pub fn map_file(path: &Path) -> Result<Bytes> {
    map_range(path, 0, None)
}

/// A mapped file and the guard that turns a SIGBUS on it into an error (see [`crate::commit::mapguard`]).
/// The guard is dropped first: it unregisters the range before the mapping goes away.
struct GuardedMap {
    _guard: Option<crate::commit::mapguard::Guard>,
    map: memmap2::Mmap,
}

impl AsRef<[u8]> for GuardedMap {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// Opens a regular file for reading: `O_NONBLOCK` (opening a FIFO must not wait for a writer),
/// then `fstat` refuses anything that is not a regular file (FIFO, device, socket, directory)
/// before a byte is read. Returns the file and its size.
fn open_regular(path: &Path) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    const O_NONBLOCK: i32 = 0o4000;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path.display(), e))?;
    let meta = file.metadata().map_err(|e| Error::io(path.display(), e))?;
    if !meta.is_file() {
        let t = meta.file_type();
        let kind = if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(Error::InvalidArgument(format!(
            "{}: expected a regular file, found {kind}; refusing to read it",
            path.display()
        )));
    }
    Ok((file, meta.len()))
}

/// The range `start`, `len` (to the end when None) of a file of `size` bytes, checked.
fn checked_range(path: &Path, size: u64, start: u64, len: Option<u64>) -> Result<u64> {
    let want = len.unwrap_or(size.saturating_sub(start));
    if start.saturating_add(want) > size {
        return Err(Error::InvalidArgument(format!(
            "{}: segment {start}+{want} lies outside the {size}-byte file",
            path.display()
        )));
    }
    Ok(want)
}

/// `len` bytes at `start` of a regular file (to its end when `len` is None), memory-mapped. A file
/// that another process truncates while it is read gives an error from the native call (the
/// mapping is guarded against SIGBUS), never a JVM abort.
pub fn map_range(path: &Path, start: u64, len: Option<u64>) -> Result<Bytes> {
    let (file, size) = open_regular(path)?;
    let want = checked_range(path, size, start, len)?;
    if size == 0 || want == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: a read-only private mapping; a concurrent truncation faults on access, which the
    // guard registered below turns into an error of this native call instead of a crash.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path.display(), e))?;
    // Read ahead: the file is parsed front to back. Only a hint, so a failure does not matter.
    let _ = map.advise(memmap2::Advice::Sequential);
    let guard = crate::commit::mapguard::register(map.as_ptr() as usize, map.len(), path);
    let bytes = Bytes::from_owner(GuardedMap { _guard: guard, map });
    Ok(bytes.slice(start as usize..(start + want) as usize))
}

/// A range of a regular file read with `pread` into the caller's buffers: what a keyed rewrite
/// streams from, so that memory stays bounded whatever the file's size (a mapping's pages would
/// all count in the process's memory once read). A file that shrinks while it is read gives an
/// error naming it.
pub struct FileRange {
    file: std::fs::File,
    path: PathBuf,
    start: u64,
    len: u64,
}

impl FileRange {
    pub fn open(path: &Path, start: u64, len: Option<u64>) -> Result<FileRange> {
        let (file, size) = open_regular(path)?;
        let len = checked_range(path, size, start, len)?;
        Ok(FileRange {
            file,
            path: path.to_path_buf(),
            start,
            len,
        })
    }
}

impl RangeSource for FileRange {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(Error::format(
                offset,
                format!("{} bytes within the {}-byte file", buf.len(), self.len),
                Some("its end".into()),
            ));
        }
        self.file
            .read_exact_at(buf, self.start + offset)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => Error::InvalidArgument(format!(
                    "{}: the file shrank while it was read (at byte {offset}); it is being \
                     changed by another process",
                    self.path.display()
                )),
                _ => Error::io(self.path.display(), e),
            })
    }
}

/// A checkpoint on the file system: its mapped `_metadata` and, on demand, its state files.
pub struct Checkpoint {
    /// The `_metadata` file.
    pub metadata_path: PathBuf,
    /// The exclusive checkpoint directory: where relative handles live.
    pub dir: PathBuf,
    pub bytes: Bytes,
    pub metadata: CheckpointMetadata,
    /// Absolute state paths are read only below these directories: by default the directory
    /// above the checkpoint (the job's checkpoint directory, which holds `shared/` and
    /// `taskowned/`), so that a crafted `_metadata` cannot make the tool read arbitrary files.
    pub allowed_roots: Vec<PathBuf>,
    /// Remote directories mirrored on local disk, longest prefix first: an absolute handle whose
    /// path starts with a prefix (a Flink path ending in `/`, e.g. `s3://bucket/chk/job/`) is read
    /// from the local directory joined with the rest of the path (see [`Checkpoint::with_mirrors`]).
    pub mirrors: Vec<(String, PathBuf)>,
    /// A checkpoint on a Flink path whose mirror holds its operator state only: every other
    /// stream is read from the remote file in ranges ([`Remote`]), never staged whole.
    pub remote: Option<Remote>,
}

/// The remote reads of a mirrored checkpoint: `dir` is the remote checkpoint directory (relative
/// handles), an absolute handle below a mirror's prefix is read at its own path.
#[derive(Clone)]
pub struct Remote {
    pub files: Arc<dyn RemoteFiles + Send + Sync>,
    pub dir: String,
}

/// A byte range of a remote file, read through [`RemoteFiles`].
type RemoteRange = RemoteStream<Arc<dyn RemoteFiles + Send + Sync>>;

fn default_roots(dir: &Path) -> Vec<PathBuf> {
    if dir.as_os_str().is_empty() {
        return Vec::new();
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    vec![dir.parent().map(Path::to_path_buf).unwrap_or(dir)]
}

impl Checkpoint {
    /// Opens a `_metadata` file, or the checkpoint/savepoint directory that holds one.
    pub fn open(path: &Path) -> Result<Checkpoint> {
        let metadata_path = if path.is_dir() {
            path.join(METADATA_FILE_NAME)
        } else {
            path.to_path_buf()
        };
        let dir = metadata_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if metadata_path.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{} is a directory, not a checkpoint's _metadata file",
                metadata_path.display()
            )));
        }
        let bytes = map_file(&metadata_path)?;
        let name = metadata_path.display().to_string();
        let cp = Checkpoint::from_bytes(&name, Some(&dir), bytes)?;
        Ok(Checkpoint {
            metadata_path,
            ..cp
        })
    }

    /// Wraps bytes that are already in memory (an HA file's metadata, a test input).
    pub fn from_bytes(name: &str, dir: Option<&Path>, bytes: Bytes) -> Result<Checkpoint> {
        let metadata = metadata::parse(bytes.clone()).map_err(|e| e.in_file(name))?;
        let dir = dir.map(Path::to_path_buf).unwrap_or_default();
        Ok(Checkpoint {
            metadata_path: PathBuf::from(name),
            allowed_roots: default_roots(&dir),
            dir,
            bytes,
            metadata,
            mirrors: Vec::new(),
            remote: None,
        })
    }

    /// Adds mirrors given as lines `remote-prefix<TAB>local-dir` (the Java side stages remote
    /// checkpoints, e.g. on S3, in a local directory and names the remote directory it copied).
    pub fn with_mirrors(mut self, spec: &str) -> Result<Checkpoint> {
        for line in spec.lines().filter(|l| !l.trim().is_empty()) {
            let Some((prefix, local)) = line.split_once('\t') else {
                return Err(Error::InvalidArgument(format!(
                    "mirror line '{line}' is not 'remote-prefix<TAB>local-dir'"
                )));
            };
            self.add_mirror(prefix, PathBuf::from(local));
        }
        Ok(self)
    }

    pub fn add_mirror(&mut self, prefix: &str, local: PathBuf) {
        let mut prefix = prefix.to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        self.mirrors.push((prefix, local));
        self.mirrors.sort_by_key(|m| std::cmp::Reverse(m.0.len()));
    }

    /// The local copy of a mirrored absolute path; an error when the rest of the path could
    /// leave the mirror directory, by its name or through a symbolic link.
    fn mirrored(&self, path: &str) -> Result<Option<PathBuf>> {
        for (prefix, local) in &self.mirrors {
            if let Some(rest) = path.strip_prefix(prefix.as_str()) {
                if rest.is_empty()
                    || rest.contains('\\')
                    || rest
                        .split('/')
                        .any(|c| c.is_empty() || c == "." || c == "..")
                {
                    return Err(Error::InvalidArgument(format!(
                        "state file {path}: '{rest}' is not a plain path below {prefix}; refusing to read it"
                    )));
                }
                let p = local.join(rest);
                let root = std::fs::canonicalize(local).unwrap_or_else(|_| local.clone());
                refuse_link_outside(&p, std::slice::from_ref(&root))?;
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    /// The local file a stream handle's bytes live in, if they live in a file.
    pub fn local_file(&self, h: &StreamHandle) -> Result<Option<PathBuf>> {
        Ok(match h {
            StreamHandle::RelativeFile { path, .. } => {
                let name = checked_relative(&path.to_string())?.to_string();
                if self.dir.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument(format!(
                        "relative state file '{name}': no checkpoint directory is known"
                    )));
                }
                let p = self.dir.join(name);
                let dir = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
                refuse_link_outside(&p, std::slice::from_ref(&dir))?;
                Some(p)
            }
            StreamHandle::File { path, .. } | StreamHandle::Segment { path, .. } => {
                if let Some(p) = self.mirrored(&path.to_string())? {
                    return Ok(Some(p));
                }
                let p = local_path(&path.to_string())?;
                let inside = p.components().all(|c| c != std::path::Component::ParentDir)
                    && self.allowed_roots.iter().any(|r| p.starts_with(r));
                if !inside {
                    return Err(Error::InvalidArgument(format!(
                        "state file {} lies outside the checkpoint's job directory{}; refusing to read it",
                        p.display(),
                        self.allowed_roots
                            .first()
                            .map(|r| format!(" {}", r.display()))
                            .unwrap_or_default()
                    )));
                }
                refuse_link_outside(&p, &self.allowed_roots)?;
                Some(p)
            }
            _ => None,
        })
    }

    /// The bytes of a state stream: inline data, a mapped file, or a file segment (a remote
    /// stream read whole, of at most [`MAX_WINDOW`] bytes).
    pub fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes> {
        match self.place(h)? {
            Place::File(path, start, len) => map_range(&path, start, len),
            Place::Inline(data) => Ok(data),
            Place::Remote(r) => {
                if r.len > MAX_WINDOW as u64 {
                    return Err(Error::InvalidArgument(format!(
                        "{}: a state stream of {} bytes read whole (at most {} MiB)",
                        r.path,
                        r.len,
                        MAX_WINDOW >> 20
                    )));
                }
                let mut v = vec![0u8; r.len as usize];
                r.read_at(0, &mut v)?;
                Ok(Bytes::from(v))
            }
        }
    }

    /// The bytes of a state stream as a [`RangeSource`]: inline data as it is, a file or a file
    /// segment read with `pread` (the same path rules as [`Checkpoint::stream_bytes`]), a remote
    /// one in ranges.
    pub fn stream_range(&self, h: &StreamHandle) -> Result<Box<dyn RangeSource>> {
        Ok(match self.place(h)? {
            Place::File(path, start, len) => Box::new(FileRange::open(&path, start, len)?),
            Place::Inline(data) => Box::new(data),
            Place::Remote(r) => Box::new(r),
        })
    }

    /// A stream of a remote checkpoint that its mirror does not hold, to be read remotely.
    fn remote_place(&self, h: &StreamHandle) -> Result<Option<RemoteRange>> {
        let Some(remote) = &self.remote else {
            return Ok(None);
        };
        let size = |n: i64| {
            u64::try_from(n)
                .map_err(|_| Error::InvalidArgument(format!("a state handle of size {n}")))
        };
        let (path, start, len) = match h {
            StreamHandle::RelativeFile { path, size: n } => {
                let name = checked_relative(&path.to_string())?.to_string();
                (
                    format!("{}/{name}", remote.dir.trim_end_matches('/')),
                    0,
                    size(*n)?,
                )
            }
            StreamHandle::File { path, size: n } => (path.to_string(), 0, size(*n)?),
            StreamHandle::Segment {
                path,
                start,
                size: n,
                ..
            } => (path.to_string(), size(*start)?, size(*n)?),
            _ => return Ok(None),
        };
        if !matches!(h, StreamHandle::RelativeFile { .. }) && self.mirrored(&path)?.is_none() {
            return Ok(None);
        }
        match self.local_file(h)? {
            Some(local) if !local.exists() => Ok(Some(RemoteRange {
                files: remote.files.clone(),
                path,
                start,
                len,
            })),
            _ => Ok(None),
        }
    }

    /// Where a stream's bytes are.
    fn place(&self, h: &StreamHandle) -> Result<Place> {
        if let Some(r) = self.remote_place(h)? {
            return Ok(Place::Remote(r));
        }
        Ok(match h {
            StreamHandle::ByteStream { data, .. } => Place::Inline(data.clone()),
            StreamHandle::EmptySegment => Place::Inline(Bytes::new()),
            StreamHandle::Segment { start, size, .. } => {
                let path = self.local_file(h)?.unwrap_or_default();
                if *start < 0 || *size < 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{}: segment {start}+{size} has a negative offset or size",
                        path.display()
                    )));
                }
                Place::File(path, *start as u64, Some(*size as u64))
            }
            StreamHandle::KeyGroups(_) => {
                return Err(Error::InvalidArgument(
                    "a key-groups handle is not a state stream".into(),
                ))
            }
            _ => Place::File(self.local_file(h)?.unwrap_or_default(), 0, None),
        })
    }
}

/// Where a stream's bytes are: a local file's range (start, length or to its end), inline, or a
/// remote file's range.
enum Place {
    File(PathBuf, u64, Option<u64>),
    Inline(Bytes),
    Remote(RemoteRange),
}

/// Path rules hold for real paths, not only lexically: a state file that is (or lies in) a
/// symbolic link resolving outside `roots` is refused. A missing file is left to the read.
fn refuse_link_outside(p: &Path, roots: &[PathBuf]) -> Result<()> {
    let Ok(real) = std::fs::canonicalize(p) else {
        return Ok(());
    };
    if roots.is_empty() || roots.iter().any(|r| real.starts_with(r)) {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "state file {} resolves through a symbolic link to {}, outside the checkpoint's job directory{}; refusing to use it",
        p.display(),
        real.display(),
        roots
            .first()
            .map(|r| format!(" {}", r.display()))
            .unwrap_or_default()
    )))
}

/// A Flink path string (`file:/x`, `file:///x`, `/x`) as a local path; other schemes need
/// Flink's file systems on the Java side.
pub fn local_path(p: &str) -> Result<PathBuf> {
    let rest = if let Some(r) = p.strip_prefix("file://") {
        r
    } else if let Some(r) = p.strip_prefix("file:") {
        r
    } else if p.starts_with('/') {
        p
    } else {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: 0,
            what: format!("file system of '{p}' (only local paths are read natively)"),
        });
    };
    Ok(PathBuf::from(rest))
}

impl crate::codec::StreamSource for Checkpoint {
    fn metadata(&self) -> &CheckpointMetadata {
        &self.metadata
    }
    fn name(&self) -> String {
        self.metadata_path.display().to_string()
    }
    fn metadata_len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes> {
        Checkpoint::stream_bytes(self, h)
    }
    /// A remote stream in ranges; a local one mapped, as [`Checkpoint::stream_bytes`].
    fn open_stream(&self, h: &StreamHandle) -> Result<Box<dyn RangeSource + '_>> {
        Ok(match self.remote_place(h)? {
            Some(r) => Box::new(r),
            None => Box::new(self.stream_bytes(h)?),
        })
    }
}
