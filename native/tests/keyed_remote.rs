//! Keyed state of a checkpoint on a remote file system (`commit::remote`): read through ranged
//! reads only, it gives the same report as the local reading of the same files, an SST file costs
//! one read of its last `sst::TAIL` bytes, a canonical or heap stream is read once front to back,
//! and the report crosses the wire unchanged.

mod common;

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::StreamHandle;
use checkpoint_surgeon::codec::keyed::sst;
use checkpoint_surgeon::commit::keyed::{read_keyed, read_keyed_from, KeyedProgress};
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::commit::remote::{RemoteCheckpoint, RemoteFiles};
use checkpoint_surgeon::report::keyed::KeyedReport;
use checkpoint_surgeon::wire;
use checkpoint_surgeon::Error;
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A "remote" file system over local directories: every read is recorded (path, offset, length).
struct Recorded {
    /// remote prefix (ending in '/') -> local directory
    roots: Vec<(String, PathBuf)>,
    reads: Mutex<Vec<(String, u64, usize)>>,
    open: Mutex<BTreeMap<String, i64>>,
}

impl Recorded {
    fn new(roots: Vec<(String, PathBuf)>) -> Self {
        Recorded {
            roots,
            reads: Mutex::new(Vec::new()),
            open: Mutex::new(BTreeMap::new()),
        }
    }

    fn local(&self, path: &str) -> PathBuf {
        for (prefix, dir) in &self.roots {
            if let Some(rest) = path.strip_prefix(prefix.as_str()) {
                return dir.join(rest);
            }
        }
        panic!("a read outside the checkpoint: {path}")
    }

    /// Bytes read per path.
    fn bytes_by_path(&self) -> BTreeMap<String, (usize, u64)> {
        let mut m: BTreeMap<String, (usize, u64)> = BTreeMap::new();
        for (p, _, n) in self.reads.lock().unwrap().iter() {
            let e = m.entry(p.clone()).or_default();
            e.0 += 1;
            e.1 += *n as u64;
        }
        m
    }
}

impl RemoteFiles for Recorded {
    fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> checkpoint_surgeon::Result<()> {
        *self.open.lock().unwrap().entry(path.into()).or_default() += 1;
        self.reads
            .lock()
            .unwrap()
            .push((path.to_string(), offset, buf.len()));
        let f = std::fs::File::open(self.local(path)).map_err(|e| Error::io(path, e))?;
        f.read_exact_at(buf, offset).map_err(|e| Error::io(path, e))
    }

    fn done(&self, path: &str) {
        // a stream is closed only after it was opened (read), or was never read at all
        let mut open = self.open.lock().unwrap();
        if let Some(n) = open.get_mut(path) {
            *n = 0;
        }
    }
}

/// Every keyed checkpoint of the fixtures, as (local checkpoint, remote directory, the remote
/// file system over it): `mem://bucket/jobs/<job>/<chk>` for the checkpoint directory, and for an
/// incremental checkpoint its shared files by absolute path below the job directory.
fn keyed_checkpoints() -> Vec<(Checkpoint, String, Recorded)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut out = Vec::new();
    for v in ["1.15.4", "1.20.3", "2.3.0"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(v))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("keyed-all-") || n.starts_with("keyed-stale-")
            })
            .collect();
        dirs.sort();
        for d in dirs {
            if d.join("_metadata").is_file() {
                let remote = format!(
                    "mem://bucket/jobs/{v}/{}",
                    d.file_name().unwrap().to_string_lossy()
                );
                let cp = Checkpoint::open(&d).unwrap();
                let fs = Recorded::new(vec![(format!("{remote}/"), d.clone())]);
                out.push((cp, remote, fs));
                continue;
            }
            // keyed-all-incremental: chk-N dirs and shared/, referenced below an absolute job dir
            let mut chks: Vec<String> = std::fs::read_dir(&d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| d.join(n).join("_metadata").is_file())
                .collect();
            chks.sort();
            for chk in chks {
                let mut cp = Checkpoint::open(&d.join(&chk)).unwrap();
                let mut job = None;
                cp.metadata.visit_stream_handles(&mut |h| {
                    if let StreamHandle::File { path, .. } = h {
                        let p = path.to_string();
                        if let Some(i) = p.find("/shared/") {
                            job = Some(p[..i + 1].to_string());
                        }
                    }
                });
                let job = job.expect("shared files by absolute path");
                cp.add_mirror(&job, d.clone());
                let fs = Recorded::new(vec![(job.clone(), d.clone())]);
                out.push((cp, format!("{job}{chk}"), fs));
            }
        }
    }
    assert!(out.len() >= 3 * 11, "{} keyed checkpoints", out.len());
    out
}

fn remote_report(cp: &Checkpoint, dir: &str, fs: &Recorded) -> (KeyedReport, Vec<KeyedProgress>) {
    let rc = RemoteCheckpoint::new(
        &format!("{dir}/_metadata"),
        dir,
        Bytes::copy_from_slice(&cp.bytes),
        fs,
    )
    .unwrap();
    let seen = Mutex::new(Vec::new());
    let report = read_keyed_from(&rc, 3, &|p| seen.lock().unwrap().push(p));
    (report, seen.into_inner().unwrap())
}

#[test]
fn ranged_remote_reads_give_the_local_report_and_read_sst_files_by_their_tails() {
    let (mut sst_files, mut second_reads, mut sst_bytes, mut sst_read) = (0, 0, 0u64, 0u64);
    for (cp, dir, fs) in keyed_checkpoints() {
        let what = cp.metadata_path.display().to_string();
        let local = read_keyed(&cp, 2);
        let (remote, progress) = remote_report(&cp, &dir, &fs);
        assert_eq!(remote, local, "{what}");
        assert!(
            local
                .operators
                .iter()
                .flat_map(|o| &o.handles)
                .all(|h| h.error.is_none()),
            "{what}"
        );
        // every handle reported once, the last report names them all
        let handles: usize = local.operators.iter().map(|o| o.handles.len()).sum();
        assert!(progress.len() <= handles && !progress.is_empty(), "{what}");
        let last = progress.iter().max_by_key(|p| p.handles_done).unwrap();
        assert_eq!(
            (last.handles_done, last.bytes_done),
            (last.handles, last.bytes),
            "{what}"
        );
        assert!(
            fs.open.lock().unwrap().values().all(|&n| n == 0),
            "{what}: every stream closed"
        );

        let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
        cp.metadata.visit_stream_handles(&mut |h| match h {
            StreamHandle::File { path, size } => {
                sizes.insert(path.to_string(), *size as u64);
            }
            StreamHandle::RelativeFile { path, size } => {
                sizes.insert(format!("{dir}/{path}"), *size as u64);
            }
            _ => {}
        });
        for (path, (reads, bytes)) in fs.bytes_by_path() {
            let size = sizes[&path];
            if is_sst(&fs.local(&path)) {
                sst_files += 1;
                sst_bytes += size;
                sst_read += bytes;
                assert!(
                    bytes <= sst::TAIL.min(size) * 2,
                    "{path}: {bytes} of {size} bytes read"
                );
                if reads > 1 {
                    second_reads += 1;
                }
            } else {
                // a stream is read at most once: front to back, or its meta info and key groups
                assert!(
                    bytes <= size + 64,
                    "{what}: {path} {bytes} of {size} bytes read"
                );
            }
        }
    }
    println!(
        "{sst_files} SST files of {sst_bytes} bytes: {sst_read} bytes read, {second_reads} needed a second read"
    );
    assert!(sst_files > 50, "{sst_files}");
    assert_eq!(second_reads, 0, "Flink's properties blocks fit the tail");
}

/// An SST file by its magic number (native savepoints name their files by UUID).
fn is_sst(p: &Path) -> bool {
    let b = std::fs::read(p).unwrap();
    b.len() >= 8 && b[b.len() - 8..] == 0x88e2_41b7_85f4_cff7u64.to_le_bytes()
}

#[test]
fn a_remote_file_that_fails_is_a_note_or_an_error_of_its_handle_and_the_rest_is_read() {
    struct Failing(Recorded);
    impl RemoteFiles for Failing {
        fn read_at(
            &self,
            path: &str,
            offset: u64,
            buf: &mut [u8],
        ) -> checkpoint_surgeon::Result<()> {
            if is_sst(&self.0.local(path)) {
                return Err(Error::io(path, std::io::Error::other("403 Forbidden")));
            }
            self.0.read_at(path, offset, buf)
        }
        fn done(&self, path: &str) {
            self.0.done(path)
        }
    }
    let (cp, dir, fs) = keyed_checkpoints()
        .into_iter()
        .find(|(cp, _, _)| {
            cp.metadata_path
                .to_string_lossy()
                .contains("2.3.0/keyed-all-native")
        })
        .unwrap();
    let failing = Failing(fs);
    let rc = RemoteCheckpoint::new(
        "_metadata",
        &dir,
        Bytes::copy_from_slice(&cp.bytes),
        &failing,
    )
    .unwrap();
    let r = read_keyed_from(&rc, 2, &|_| {});
    let op = r.operators.iter().find(|o| !o.states.is_empty()).unwrap();
    // the meta info was read, the SST files are notes with their path, the counts a lower bound
    assert!(op.states.iter().any(|s| s.name == "value-state"));
    assert!(op.states.iter().all(|s| !s.total.complete));
    let notes: Vec<&String> = op
        .handles
        .iter()
        .flat_map(|h| &h.notes)
        .map(|n| &n.message)
        .collect();
    assert!(
        notes
            .iter()
            .any(|m| m.contains("403 Forbidden") && m.contains(&dir)),
        "{notes:?}"
    );
}

#[test]
fn the_keyed_report_crosses_the_wire_unchanged() {
    let mut n = 0;
    for (cp, _, _) in keyed_checkpoints() {
        let r = read_keyed(&cp, 2);
        let name = cp.metadata_path.display().to_string();
        let bytes = wire::encode_keyed_report(&name, &r);
        assert_eq!(
            wire::decode_keyed_report(Bytes::from(bytes.clone())).unwrap(),
            (name, r)
        );
        assert_eq!(wire::echo(Bytes::from(bytes.clone())).unwrap(), bytes);
        // any truncation is a WIRE error, never a panic
        for cut in (0..bytes.len()).step_by(97) {
            let e = wire::decode_keyed_report(Bytes::copy_from_slice(&bytes[..cut])).unwrap_err();
            assert_eq!(e.code(), checkpoint_surgeon::Code::Wire);
        }
        n += 1;
    }
    let sample = wire::samples::keyed_report();
    let bytes = wire::encode_keyed_report("s", &sample);
    assert_eq!(
        wire::decode_keyed_report(Bytes::from(bytes)).unwrap().1,
        sample
    );
    assert!(n > 0);
}

#[test]
fn absolute_handles_outside_the_job_directory_are_not_read() {
    // the fixture's checkpoint directory under another job: its shared files lie outside it
    let (cp, _, _) = keyed_checkpoints()
        .into_iter()
        .find(|(cp, _, _)| {
            cp.metadata_path
                .to_string_lossy()
                .contains("1.20.3/keyed-all-incremental/")
        })
        .unwrap();
    let dir = "mem://bucket/jobs/other/chk-9";
    let fs = Recorded::new(vec![(format!("{dir}/"), cp.dir.clone())]);
    let rc =
        RemoteCheckpoint::new("_metadata", dir, Bytes::copy_from_slice(&cp.bytes), &fs).unwrap();
    let r = read_keyed_from(&rc, 1, &|_| {});
    let notes: Vec<String> = r
        .operators
        .iter()
        .flat_map(|o| &o.handles)
        .flat_map(|h| {
            h.notes
                .iter()
                .map(|n| n.message.clone())
                .chain(h.error.clone())
        })
        .collect();
    assert!(
        notes
            .iter()
            .any(|m| m.contains("does not lie below the checkpoint's job directory")),
        "{notes:?}"
    );
    let reads = fs.reads.lock().unwrap();
    assert!(
        !reads.is_empty() && reads.iter().all(|(p, _, _)| p.starts_with(dir)),
        "{reads:?}"
    );
}
