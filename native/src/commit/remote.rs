//! A checkpoint on a file system the native code cannot open (S3, HDFS, GCS: Flink's FileSystem,
//! on the Java side), read in byte ranges through [`RemoteFiles`]: the keyed readers ask for an
//! SST file's last few KiB and for a canonical or heap stream front to back, chunk by chunk, so
//! nothing is staged and no data block of RocksDB is fetched.
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

/// Ranged reads of remote files, by path.
pub trait RemoteFiles: Sync {
    /// Fills `buf` with the bytes of `path` at `offset`; an error if they are not all there.
    fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The reader is done with `path` for now (an open stream to it may be closed).
    fn done(&self, path: &str);
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
