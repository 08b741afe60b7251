//! The keyed stage step spread over a Flink cluster (`--on-flink`): the stage hands each keyed
//! stream rewrite of the plan out as a self-contained work item ([`Work`]), a Flink task rewrites
//! it with [`rewrite_work`] (the same [`super::rewrite_keyed`] the local stage runs per handle,
//! read back there too), and the stage goes on with the new offsets and sizes each returns
//! ([`WorkDone`]), exactly as after its own workers. Items and results are native to native:
//! Java only carries them (framed by [`frame`]), so they are not payloads of `crate::wire`.

use super::read::Checkpoint;
use super::{rewrite_keyed, StagedKeyed, Written};
use crate::codec::handles::{checked_relative, Offsets, StreamHandle};
use crate::codec::io::{Reader, Writer};
use crate::codec::keyed::handle::SnapshotFormat;
use crate::codec::keyed::meta;
use crate::codec::keyed::rewrite::StreamEdit;
use crate::error::{Error, Result};
use crate::surgery::keyed::StreamRewrite;
use crate::surgery::NewStream;
use crate::wire::{Dec, Enc};
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const WORK: u32 = u32::from_be_bytes(*b"CSKW");
const DONE: u32 = u32::from_be_bytes(*b"CSKD");

/// Something that rewrites work items elsewhere (a Flink job): every item's [`WorkDone`], in
/// any order, or the error that stopped it.
pub trait KeyedRewriter {
    fn rewrite(&self, items: Vec<Vec<u8>>) -> Result<Vec<Bytes>>;
}

/// One keyed stream to rewrite: where the checkpoint is (its `_metadata`, for the path rules of
/// its state files), the directory the new file goes into, and the planned stream.
pub struct Work {
    pub metadata: PathBuf,
    pub stream_dir: PathBuf,
    pub stream: NewStream,
}

impl Work {
    pub fn encode(&self) -> Vec<u8> {
        let s = &self.stream;
        let rw = s.keyed.as_ref().expect("a keyed stream");
        let mut e = Enc::new(WORK);
        e.str(&self.metadata.display().to_string());
        e.str(&self.stream_dir.display().to_string());
        e.str(s.file_name.as_deref().unwrap_or(""));
        e.str(&s.replaces);
        e.u8(rw.code);
        let mut handle = Writer::new(Vec::new());
        StreamHandle::write(&Some(rw.source.clone()), &mut handle).expect("writes to memory");
        e.bytes(&handle.into_inner());
        let ed = &rw.edit;
        let format = SnapshotFormat::ALL.iter().position(|f| *f == ed.format);
        e.u8(format.expect("a known format") as u8);
        e.bytes(&ed.source_header);
        e.bytes(&ed.header);
        e.len(ed.ids.len());
        for id in &ed.ids {
            e.i32(id.map_or(-1, i32::from));
        }
        e.i32(ed.first_key_group);
        e.len(ed.offsets.len());
        for o in ed.offsets.iter() {
            e.i64(o);
        }
        e.u8(ed.prefix as u8);
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<Work> {
        let mut d = Dec::new(buf, WORK, "keyed work item")?;
        let metadata = PathBuf::from(d.str()?);
        let stream_dir = PathBuf::from(d.str()?);
        let file_name = d.str()?;
        checked_relative(&file_name)?;
        let replaces = d.str()?;
        let code = d.u8()?;
        let source = StreamHandle::read(&mut Reader::new(d.bytes()?), 0)?.ok_or_else(|| {
            Error::InvalidArgument("a keyed work item without its old stream".into())
        })?;
        let format = *SnapshotFormat::ALL
            .get(d.u8()? as usize)
            .ok_or_else(|| Error::InvalidArgument("a keyed work item of no known format".into()))?;
        let source_header = d.bytes()?;
        let header = d.bytes()?;
        let n = d.len(4)?;
        let ids = (0..n)
            .map(|_| d.i32().map(|i| u16::try_from(i).ok()))
            .collect::<Result<Vec<_>>>()?;
        let first_key_group = d.i32()?;
        let n = d.len(8)?;
        let offsets = (0..n).map(|_| d.i64()).collect::<Result<Vec<_>>>()?;
        let prefix = d.u8()? as usize;
        d.end()?;
        // the meta info as the plan parsed it: the same bytes, read the same way
        let meta = meta::parse(&source_header)?;
        let edit = StreamEdit {
            format,
            meta,
            source_header,
            header,
            ids,
            first_key_group,
            offsets: Offsets::from_slice(&offsets),
            prefix,
        };
        Ok(Work {
            metadata,
            stream_dir,
            stream: NewStream {
                file_name: Some(file_name),
                replaces,
                pieces: Vec::new(),
                len: 0,
                keyed: Some(StreamRewrite { code, source, edit }),
            },
        })
    }
}

/// What a task did with one work item: the new file's figures and key-group offsets.
pub struct WorkDone {
    pub keyed: StagedKeyed,
    pub offsets: Offsets,
}

impl WorkDone {
    pub fn encode(&self) -> Vec<u8> {
        let k = &self.keyed;
        let mut e = Enc::new(DONE);
        e.str(&k.file);
        e.str(&k.replaces);
        for v in [
            k.bytes_read,
            k.bytes_written,
            k.entries_removed,
            k.raw_bytes_removed,
        ] {
            e.i64(v as i64);
        }
        e.len(self.offsets.len());
        for o in self.offsets.iter() {
            e.i64(o);
        }
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<WorkDone> {
        let mut d = Dec::new(buf, DONE, "keyed work result")?;
        let file = d.str()?;
        let replaces = d.str()?;
        let mut v = [0u64; 4];
        for x in &mut v {
            *x = d.i64()? as u64;
        }
        let n = d.len(8)?;
        let offsets = (0..n).map(|_| d.i64()).collect::<Result<Vec<_>>>()?;
        d.end()?;
        Ok(WorkDone {
            keyed: StagedKeyed {
                file,
                replaces,
                bytes_read: v[0],
                bytes_written: v[1],
                entries_removed: v[2],
                raw_bytes_removed: v[3],
            },
            offsets: Offsets::from_slice(&offsets),
        })
    }
}

/// A task's part: rewrites one work item into its new file (created exclusively; removed again
/// when the rewrite or its read-back fails) and returns its [`WorkDone`].
pub fn rewrite_work(item: Bytes) -> Result<Vec<u8>> {
    let w = Work::decode(item)?;
    let cp = Checkpoint::open(&w.metadata)?;
    let made = Mutex::new(Vec::new());
    super::mapguard::reset();
    let mut r = rewrite_keyed(&cp, &w.stream, super::KeyedOut::Dir(&w.stream_dir), &made);
    if let Err(e) = super::mapguard::check() {
        r = Err(e);
    }
    match r {
        Ok((_, keyed, offsets)) => Ok(WorkDone { keyed, offsets }.encode()),
        Err(e) => {
            for p in made.into_inner().unwrap_or_else(|p| p.into_inner()) {
                let _ = std::fs::remove_file(p);
            }
            Err(e)
        }
    }
}

/// The stage's keyed step by `rewriter`: every keyed stream of `jobs` handed out as a work item,
/// each result matched to its stream by file name and checked against the file on disk (its
/// size; the task read it back in full). On failure, the new files named by the items are
/// removed: fresh random names of this run in the directory it holds the lock of, which a task
/// killed mid-write may have left without reporting them.
pub(super) fn stage_keyed_by(
    cp: &Checkpoint,
    jobs: &[&NewStream],
    stream_dir: &Path,
    rewriter: &dyn KeyedRewriter,
    created: &mut Vec<PathBuf>,
) -> Result<Vec<Written>> {
    if cp.metadata_path.as_os_str().is_empty() || !cp.metadata_path.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{}: a keyed rewrite on a Flink cluster needs the checkpoint as a _metadata file on a \
             path every TaskManager reads",
            cp.metadata_path.display()
        )));
    }
    let stream_dir =
        std::fs::canonicalize(stream_dir).map_err(|e| Error::io(stream_dir.display(), e))?;
    let items: Vec<Vec<u8>> = jobs
        .iter()
        .map(|s| {
            Work {
                metadata: cp.metadata_path.clone(),
                stream_dir: stream_dir.clone(),
                stream: (*s).clone(),
            }
            .encode()
        })
        .collect();
    let targets: Vec<PathBuf> = jobs
        .iter()
        .map(|s| stream_dir.join(s.file_name.as_deref().unwrap_or("")))
        .collect();
    let done = rewriter.rewrite(items).and_then(|results| {
        let mut by_job: Vec<Option<WorkDone>> = jobs.iter().map(|_| None).collect();
        for r in results {
            let d = WorkDone::decode(r)?;
            let i = jobs
                .iter()
                .position(|s| s.file_name.as_deref() == Some(d.keyed.file.as_str()))
                .filter(|&i| by_job[i].is_none())
                .ok_or_else(|| {
                    Error::Validation(format!(
                        "the Flink job returned the stream {} that no work item named, or twice",
                        d.keyed.file
                    ))
                })?;
            by_job[i] = Some(d);
        }
        by_job
            .into_iter()
            .zip(&targets)
            .map(|(d, path)| {
                let d = d.ok_or_else(|| {
                    Error::Validation(format!(
                        "the Flink job returned no result for the new stream {}",
                        path.display()
                    ))
                })?;
                let len = std::fs::symlink_metadata(path)
                    .map_err(|e| Error::io(path.display(), e))?
                    .len();
                if len != d.keyed.bytes_written {
                    return Err(Error::Validation(format!(
                        "{}: the new stream has {len} bytes, the task wrote {}",
                        path.display(),
                        d.keyed.bytes_written
                    )));
                }
                Ok((path.clone(), d.keyed, d.offsets))
            })
            .collect::<Result<Vec<Written>>>()
    });
    if done.is_err() {
        for p in &targets {
            let _ = std::fs::remove_file(p);
        }
    } else {
        created.extend(targets);
    }
    done
}

/// Items framed into one array (an i32 count, then each as an i32 length and its bytes), as
/// they cross to Java and back.
pub fn frame(items: &[impl AsRef<[u8]>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + items.iter().map(|i| 4 + i.as_ref().len()).sum::<usize>());
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for i in items {
        out.extend_from_slice(&(i.as_ref().len() as i32).to_be_bytes());
        out.extend_from_slice(i.as_ref());
    }
    out
}

/// The items of a [`frame`].
pub fn unframe(buf: Bytes) -> Result<Vec<Bytes>> {
    let mut r = Reader::new(buf);
    let n = r.count("the number of framed items", 4)?;
    (0..n)
        .map(|_| {
            let len = r.count("a framed item's length", 1)?;
            r.bytes(len, "a framed item")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let items = vec![b"a".to_vec(), Vec::new(), b"xyz".to_vec()];
        let back = unframe(Bytes::from(frame(&items))).unwrap();
        assert_eq!(back.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), items);
        assert!(unframe(Bytes::from_static(&[0, 0, 0, 2, 0, 0, 0, 9])).is_err());
    }

    #[test]
    fn work_done_round_trips() {
        let d = WorkDone {
            keyed: StagedKeyed {
                file: "f".into(),
                replaces: "r".into(),
                bytes_read: 10,
                bytes_written: 7,
                entries_removed: 3,
                raw_bytes_removed: 2,
            },
            offsets: Offsets::from_slice(&[5, 0, 9]),
        };
        let back = WorkDone::decode(Bytes::from(d.encode())).unwrap();
        assert_eq!(back.keyed, d.keyed);
        assert_eq!(back.offsets.iter().collect::<Vec<_>>(), vec![5, 0, 9]);
    }
}
