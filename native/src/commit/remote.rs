//! A checkpoint on a file system the native code cannot open (S3, HDFS, GCS: Flink's FileSystem,
//! on the Java side), read in byte ranges through [`RemoteFiles`]: the keyed readers ask for an
//! SST file's last few KiB and for a canonical or heap stream front to back, chunk by chunk, so
//! nothing is staged and no data block of RocksDB is fetched. A keyed stream rewritten onto a
//! Flink path goes out the same way, through [`RemoteSink`], and is read back in full.
//!
//! The same path rules hold as for local checkpoints: a relative handle is a plain file name in
//! the checkpoint directory, and an absolute one must lie below the job directory (the parent of
//! the checkpoint directory, which holds `shared/` and `taskowned/`), so that a crafted
//! `_metadata` cannot make the tool read any object it likes.

use crate::codec::handles::{checked_relative, StreamHandle};
use crate::codec::keyed::{RangeSource, MAX_WINDOW};
use crate::codec::metadata::{self, CheckpointMetadata};
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;
use std::ops::Deref;

/// Ranged reads of remote files, by path; and, where the caller allows it, new files written
/// front to back ([`RemoteSink`]).
pub trait RemoteFiles: Sync {
    /// Fills `buf` with the bytes of `path` at `offset`; an error if they are not all there.
    fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The reader is done with `path` for now (an open stream to it may be closed).
    fn done(&self, path: &str);
    /// The length of `path`.
    fn length(&self, path: &str) -> Result<u64> {
        Err(no_writes(path))
    }
    /// Creates `path`, which must not exist (never overwritten), for [`Self::write`]; its id.
    fn create(&self, path: &str) -> Result<i64> {
        Err(no_writes(path))
    }
    /// Appends `buf` to the file being written as `id`.
    fn write(&self, id: i64, _buf: &[u8]) -> Result<()> {
        Err(no_writes(&id.to_string()))
    }
    /// Completes the file `id` (on an object store, the upload): only once all of it was written.
    fn close(&self, id: i64) -> Result<()> {
        Err(no_writes(&id.to_string()))
    }
    /// Gives the file `id` up unfinished: an object store never completes it; elsewhere it is
    /// closed as it is (the caller's undo removes what was created).
    fn abandon(&self, _id: i64) {}
}

fn no_writes(path: &str) -> Error {
    Error::InvalidArgument(format!("{path}: this run writes no remote files"))
}

/// A new remote file written front to back: full buffers of [`RemoteSink::BUFFER`] bytes go to
/// [`RemoteFiles::write`], and the file is completed by [`RemoteSink::finish`] only; dropped
/// before, it is abandoned, never completed half-written. The length and a hash of every byte
/// written are kept for the read-back ([`verify_written`]).
pub struct RemoteSink<'a> {
    files: &'a dyn RemoteFiles,
    id: Option<i64>,
    buf: Vec<u8>,
    len: u64,
    hash: std::hash::DefaultHasher,
}

impl<'a> RemoteSink<'a> {
    /// What goes to the Java side at once (one Java array per file, reused).
    pub const BUFFER: usize = 4 << 20;

    pub fn create(files: &'a dyn RemoteFiles, path: &str) -> Result<Self> {
        Ok(RemoteSink {
            id: Some(files.create(path)?),
            files,
            buf: Vec::with_capacity(Self::BUFFER),
            len: 0,
            hash: std::hash::DefaultHasher::new(),
        })
    }

    fn push(&mut self) -> std::io::Result<()> {
        if let (Some(id), false) = (self.id, self.buf.is_empty()) {
            self.files
                .write(id, &self.buf)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Writes what is buffered and completes the file; its length and hash.
    pub fn finish(mut self) -> Result<(u64, u64)> {
        use std::hash::Hasher;
        self.push().map_err(|e| Error::io("a new remote file", e))?;
        let id = self.id.take().expect("a file being written");
        self.files.close(id)?;
        Ok((self.len, self.hash.finish()))
    }
}

impl std::io::Write for RemoteSink<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        use std::hash::Hasher;
        let n = data.len().min(Self::BUFFER - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        self.hash.write(&data[..n]);
        self.len += n as u64;
        if self.buf.len() == Self::BUFFER {
            self.push()?;
        }
        Ok(n)
    }
    /// Nothing: only full buffers go out before [`RemoteSink::finish`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RemoteSink<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.files.abandon(id);
        }
    }
}

/// What a [`HashedRead`] saw: the bytes read in order from the start, hashed.
#[derive(Default)]
pub struct Seen {
    next: u64,
    gap: bool,
    hash: std::hash::DefaultHasher,
}

/// A completed remote file as the keyed reader reads it back, hashing the bytes it reads in
/// order from the start (a re-read of bytes already seen is skipped, a jump ahead ends it): when
/// the reader went through the whole file, [`confirm_written`] needs no second pass.
pub struct HashedRead<'a> {
    pub stream: RemoteStream<&'a (dyn RemoteFiles + Send + Sync)>,
    pub seen: std::sync::Arc<std::sync::Mutex<Seen>>,
}

impl RangeSource for HashedRead<'_> {
    fn len(&self) -> u64 {
        self.stream.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        use std::hash::Hasher;
        self.stream.read_at(offset, buf)?;
        let mut s = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let end = offset + buf.len() as u64;
        if offset > s.next {
            s.gap = true;
        } else if !s.gap && end > s.next {
            let from = (s.next - offset) as usize;
            s.hash.write(&buf[from..]);
            s.next = end;
        }
        Ok(())
    }
}

/// Checks a completed remote file against what was written (`len` bytes of hash `hash`): its
/// stored length, and its bytes as `seen` hashed them when they were all read in order, else
/// through [`verify_written`]'s own pass.
pub fn confirm_written(
    files: &dyn RemoteFiles,
    path: &str,
    len: u64,
    hash: u64,
    seen: &std::sync::Mutex<Seen>,
) -> Result<()> {
    use std::hash::Hasher;
    let s = seen.lock().unwrap_or_else(|p| p.into_inner());
    if s.gap || s.next != len {
        return verify_written(files, path, len, hash);
    }
    check_length(files, path, len)?;
    if s.hash.finish() != hash {
        return Err(Error::Validation(format!(
            "{path}: the new file reads back with other bytes than were written"
        )));
    }
    Ok(())
}

fn check_length(files: &dyn RemoteFiles, path: &str, len: u64) -> Result<()> {
    let stored = files.length(path)?;
    if stored != len {
        return Err(Error::Validation(format!(
            "{path}: the new file has {stored} bytes where {len} were written"
        )));
    }
    Ok(())
}

/// Reads a completed remote file back, in [`RemoteSink::BUFFER`] ranges front to back (one
/// request), and checks that it holds exactly the `len` bytes of hash `hash` that were written.
pub fn verify_written(files: &dyn RemoteFiles, path: &str, len: u64, hash: u64) -> Result<()> {
    use std::hash::Hasher;
    check_length(files, path, len)?;
    let mut h = std::hash::DefaultHasher::new();
    let mut buf = vec![0u8; RemoteSink::BUFFER.min(len as usize)];
    let mut at = 0u64;
    let read = (|| {
        while at < len {
            let n = (len - at).min(buf.len() as u64) as usize;
            files.read_at(path, at, &mut buf[..n])?;
            h.write(&buf[..n]);
            at += n as u64;
        }
        Ok(())
    })();
    files.done(path);
    read?;
    if h.finish() != hash {
        return Err(Error::Validation(format!(
            "{path}: the new file reads back with other bytes than were written"
        )));
    }
    Ok(())
}

/// `_metadata` bytes of a remote checkpoint, with the directory they came from.
pub struct RemoteCheckpoint<'a> {
    pub metadata: CheckpointMetadata,
    name: String,
    metadata_len: u64,
    /// The checkpoint directory, without a trailing `/`.
    dir: String,
    /// The job directory with a trailing `/`: absolute handles must lie below it.
    job_dir: String,
    files: &'a dyn RemoteFiles,
}

impl<'a> RemoteCheckpoint<'a> {
    /// `name` is the `_metadata` path (for messages), `dir` the checkpoint directory.
    pub fn new(name: &str, dir: &str, metadata: Bytes, files: &'a dyn RemoteFiles) -> Result<Self> {
        let dir = dir.trim_end_matches('/').to_string();
        let job_dir = match dir.rfind('/') {
            Some(i) if !dir[..i].ends_with('/') && !dir[..i].ends_with(':') => {
                format!("{}/", &dir[..i])
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "{dir}: a checkpoint directory inside a job directory is expected"
                )))
            }
        };
        let metadata_len = metadata.len() as u64;
        Ok(RemoteCheckpoint {
            metadata: metadata::parse(metadata).map_err(|e| e.in_file(name))?,
            name: name.to_string(),
            metadata_len,
            dir,
            job_dir,
            files,
        })
    }

    /// The remote path, first byte and length of a stream handle's bytes; None when they are
    /// inline.
    fn locate(&self, h: &StreamHandle) -> Result<Option<(String, u64, u64)>> {
        let size = |n: i64| -> Result<u64> {
            u64::try_from(n)
                .map_err(|_| Error::InvalidArgument(format!("a state handle of size {n}")))
        };
        Ok(Some(match h {
            StreamHandle::RelativeFile { path, size: n } => {
                let name = checked_relative(&path.to_string())?.to_string();
                (format!("{}/{name}", self.dir), 0, size(*n)?)
            }
            StreamHandle::File { path, size: n } => (self.below_job_dir(path)?, 0, size(*n)?),
            StreamHandle::Segment {
                path,
                start,
                size: n,
                ..
            } => (self.below_job_dir(path)?, size(*start)?, size(*n)?),
            StreamHandle::KeyGroups(_) => {
                return Err(Error::InvalidArgument(
                    "a key-groups handle is not a state stream".into(),
                ))
            }
            StreamHandle::ByteStream { .. } | StreamHandle::EmptySegment => return Ok(None),
        }))
    }

    fn below_job_dir(&self, path: &crate::codec::io::JStr) -> Result<String> {
        let p = path.to_string();
        let plain = p.strip_prefix(self.job_dir.as_str()).is_some_and(|rest| {
            !rest.contains('\\')
                && rest
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..")
        });
        if !plain {
            return Err(Error::InvalidArgument(format!(
                "state file {p} does not lie below the checkpoint's job directory {}; refusing to read it",
                self.job_dir
            )));
        }
        Ok(p)
    }
}

/// A byte range of a remote file, read through `files` (borrowed, or shared with an `Arc`).
pub struct RemoteStream<F: Deref + Send + Sync>
where
    F::Target: RemoteFiles,
{
    pub files: F,
    pub path: String,
    pub start: u64,
    pub len: u64,
}

impl<F: Deref + Send + Sync> RangeSource for RemoteStream<F>
where
    F::Target: RemoteFiles,
{
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if offset.saturating_add(buf.len() as u64) > self.len {
            return Err(Error::format(
                offset,
                format!("{} bytes within the {}-byte file", buf.len(), self.len),
                Some("its end".into()),
            ));
        }
        self.files.read_at(&self.path, self.start + offset, buf)
    }
}

impl<F: Deref + Send + Sync> Drop for RemoteStream<F>
where
    F::Target: RemoteFiles,
{
    fn drop(&mut self) {
        self.files.done(&self.path);
    }
}

impl StreamSource for RemoteCheckpoint<'_> {
    fn metadata(&self) -> &CheckpointMetadata {
        &self.metadata
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn metadata_len(&self) -> u64 {
        self.metadata_len
    }
    /// The whole stream, for the small files that are read whole (RocksDB's `CURRENT`).
    fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes> {
        let s = self.open_stream(h)?;
        if s.len() > MAX_WINDOW as u64 {
            return Err(Error::InvalidArgument(format!(
                "a state stream of {} bytes read whole (at most {} MiB)",
                s.len(),
                MAX_WINDOW >> 20
            )));
        }
        let mut v = vec![0u8; s.len() as usize];
        s.read_at(0, &mut v)?;
        Ok(Bytes::from(v))
    }
    fn open_stream(&self, h: &StreamHandle) -> Result<Box<dyn RangeSource + '_>> {
        Ok(match (self.locate(h)?, h) {
            (Some((path, start, len)), _) => Box::new(RemoteStream {
                files: self.files,
                path,
                start,
                len,
            }),
            (None, StreamHandle::ByteStream { data, .. }) => Box::new(data.clone()),
            (None, _) => Box::new(Bytes::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::io::JStr;

    struct NoFiles;
    impl RemoteFiles for NoFiles {
        fn read_at(&self, path: &str, _: u64, _: &mut [u8]) -> Result<()> {
            Err(Error::InvalidArgument(format!("read of {path}")))
        }
        fn done(&self, _: &str) {}
    }

    fn checkpoint(dir: &str) -> Result<RemoteCheckpoint<'static>> {
        let md = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/1.20.3/keyed-all-hashmap/_metadata"
        ))
        .expect("fixture");
        RemoteCheckpoint::new("_metadata", dir, Bytes::from(md), &NoFiles)
    }

    /// A file in memory: its path, bytes and state (open, closed or abandoned).
    type MemoryFile = (String, Vec<u8>, &'static str);

    /// Files in memory: what was written, completed or abandoned.
    #[derive(Default)]
    struct Memory {
        files: std::sync::Mutex<std::collections::HashMap<i64, MemoryFile>>,
    }
    impl RemoteFiles for Memory {
        fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
            let files = self.files.lock().unwrap();
            let (_, data, _) = files
                .values()
                .find(|f| f.0 == path && f.2 == "closed")
                .unwrap();
            buf.copy_from_slice(&data[offset as usize..offset as usize + buf.len()]);
            Ok(())
        }
        fn done(&self, _: &str) {}
        fn length(&self, path: &str) -> Result<u64> {
            let files = self.files.lock().unwrap();
            Ok(files.values().find(|f| f.0 == path).unwrap().1.len() as u64)
        }
        fn create(&self, path: &str) -> Result<i64> {
            let mut files = self.files.lock().unwrap();
            let id = files.len() as i64;
            files.insert(id, (path.into(), Vec::new(), "open"));
            Ok(id)
        }
        fn write(&self, id: i64, buf: &[u8]) -> Result<()> {
            assert!(buf.len() <= RemoteSink::BUFFER);
            self.files
                .lock()
                .unwrap()
                .get_mut(&id)
                .unwrap()
                .1
                .extend_from_slice(buf);
            Ok(())
        }
        fn close(&self, id: i64) -> Result<()> {
            self.files.lock().unwrap().get_mut(&id).unwrap().2 = "closed";
            Ok(())
        }
        fn abandon(&self, id: i64) {
            self.files.lock().unwrap().get_mut(&id).unwrap().2 = "abandoned";
        }
    }

    #[test]
    fn a_sink_completes_only_when_finished_and_reads_back_by_hash() {
        use std::io::Write;
        let m = Memory::default();
        let data: Vec<u8> = (0..RemoteSink::BUFFER * 2 + 12345)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut sink = RemoteSink::create(&m, "s3://b/x").unwrap();
        // pieces of any size, across the buffer's edges
        for piece in data.chunks(777_777) {
            sink.write_all(piece).unwrap();
        }
        let (len, hash) = sink.finish().unwrap();
        assert_eq!(len, data.len() as u64);
        verify_written(&m, "s3://b/x", len, hash).unwrap();
        assert_eq!(m.files.lock().unwrap()[&0].1, data);
        // a byte changed on the way: the read-back sees it
        m.files.lock().unwrap().get_mut(&0).unwrap().1[RemoteSink::BUFFER + 5] ^= 1;
        let e = verify_written(&m, "s3://b/x", len, hash).unwrap_err();
        assert!(e.to_string().contains("other bytes"), "{e}");
        // a sink dropped before it was finished is abandoned, never completed
        let mut half = RemoteSink::create(&m, "s3://b/y").unwrap();
        half.write_all(&data[..RemoteSink::BUFFER + 1]).unwrap();
        drop(half);
        assert_eq!(m.files.lock().unwrap()[&1].2, "abandoned");
        assert!(verify_written(&m, "s3://b/x", len + 1, hash).is_err());
    }

    #[test]
    fn a_read_in_order_confirms_without_a_second_pass() {
        use std::io::Write;
        let m = Memory::default();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let mut sink = RemoteSink::create(&m, "s3://b/z").unwrap();
        sink.write_all(&data).unwrap();
        let (len, hash) = sink.finish().unwrap();
        let read = |ranges: &[(u64, usize)]| {
            let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
            let r = HashedRead {
                stream: RemoteStream {
                    files: &m as &(dyn RemoteFiles + Send + Sync),
                    path: "s3://b/z".into(),
                    start: 0,
                    len,
                },
                seen: seen.clone(),
            };
            for &(at, n) in ranges {
                r.read_at(at, &mut vec![0; n]).unwrap();
            }
            drop(r);
            seen
        };
        // in order, with a re-read of bytes already seen: all of it hashed once, and it matches
        let seen = read(&[(0, 40_000), (30_000, 50_000), (80_000, 20_000)]);
        confirm_written(&m, "s3://b/z", len, hash, &seen).unwrap();
        // a byte changed after that read: the hash of what was read still matches, a fresh
        // read does not
        m.files.lock().unwrap().get_mut(&0).unwrap().1[7] ^= 1;
        let seen = read(&[(0, 40_000), (40_000, 60_000)]);
        assert!(confirm_written(&m, "s3://b/z", len, hash, &seen).is_err());
        // a jump ahead: not all seen in order, so confirm_written reads it all itself
        let seen = read(&[(0, 10), (20, 10)]);
        assert!(seen.lock().unwrap().gap);
        assert!(confirm_written(&m, "s3://b/z", len, hash, &seen).is_err());
        m.files.lock().unwrap().get_mut(&0).unwrap().1[7] ^= 1;
        confirm_written(&m, "s3://b/z", len, hash, &seen).unwrap();
    }

    #[test]
    fn paths_resolve_below_the_job_directory_only() {
        let cp = checkpoint("s3://b/jobs/job1/chk-2/").unwrap();
        let rel = StreamHandle::RelativeFile {
            path: JStr::new("abc"),
            size: 10,
        };
        assert_eq!(
            cp.locate(&rel).unwrap(),
            Some(("s3://b/jobs/job1/chk-2/abc".into(), 0, 10))
        );
        let file = |p: &str| StreamHandle::File {
            path: JStr::new(p),
            size: 5,
        };
        assert_eq!(
            cp.locate(&file("s3://b/jobs/job1/shared/x")).unwrap(),
            Some(("s3://b/jobs/job1/shared/x".into(), 0, 5))
        );
        for bad in [
            "s3://b/jobs/job2/shared/x",
            "s3://b/jobs/job1/shared/../../x",
            "s3://b/jobs/job1//x",
            "s3://b/jobs/job1/",
        ] {
            assert!(cp.locate(&file(bad)).is_err(), "{bad}");
        }
        let escape = StreamHandle::RelativeFile {
            path: JStr::new("../x"),
            size: 1,
        };
        assert!(cp.locate(&escape).is_err());
        assert!(checkpoint("s3://chk-2").is_err());
    }
}
