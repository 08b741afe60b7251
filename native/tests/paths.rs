//! The tool never reads or writes outside the places a checkpoint legitimately references:
//! relative state file names must be plain names, absolute ones must lie below the job's
//! checkpoint directory.

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::StreamHandle;
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::codec::metadata::{self, SubtaskEntry, Subtasks};
use checkpoint_surgeon::commit::read::Checkpoint;
use std::path::Path;

/// The operator-state-files fixture with every relative delegate renamed to `name`.
fn with_delegates(make: impl Fn(&str) -> StreamHandle) -> Vec<u8> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files");
    let mut md =
        metadata::parse(Bytes::from(std::fs::read(dir.join("_metadata")).unwrap())).unwrap();
    let mut n = 0;
    for op in &mut md.operators {
        let Subtasks::List(l) = &mut op.subtasks else {
            continue;
        };
        for e in l {
            let SubtaskEntry::State(_, st) = e else {
                continue;
            };
            if let Some((_, Some(h))) = &mut st.managed_operator {
                if let Some(StreamHandle::RelativeFile { path, .. }) = &h.delegate {
                    h.delegate = Some(make(&path.to_string()));
                    n += 1;
                }
            }
        }
    }
    assert!(n > 0);
    md.to_vec()
}

fn stream_errors(bytes: Vec<u8>, dir: &Path) -> Vec<String> {
    let cp = Checkpoint::from_bytes("crafted", Some(dir), Bytes::from(bytes)).unwrap();
    managed_stream_errors(&cp)
}

/// The error of every managed operator state stream that cannot be read.
fn managed_stream_errors(cp: &Checkpoint) -> Vec<String> {
    let mut errors = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(h) = st.managed_operator() {
                if let Err(e) = cp.stream_bytes(h.delegate.as_ref().unwrap()) {
                    errors.push(e.to_string());
                }
            }
        }
    }
    errors
}

#[test]
fn relative_names_with_separators_or_dot_dot_are_refused() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files");
    for bad in ["../../../../etc/passwd", "sub/dir", "..", "a\\b"] {
        let bytes = with_delegates(|_| StreamHandle::RelativeFile {
            path: JStr::new(bad),
            size: 10,
        });
        let errors = stream_errors(bytes, &dir);
        assert!(!errors.is_empty());
        assert!(
            errors.iter().all(|e| e.contains("not a plain file name")),
            "{errors:?}"
        );
    }
}

#[test]
fn absolute_paths_outside_the_job_directory_are_refused() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files");
    for bad in [
        "file:/etc/passwd",
        "/etc/passwd",
        "file:///proc/self/environ",
    ] {
        let bytes = with_delegates(|_| StreamHandle::File {
            size: 10,
            path: JStr::new(bad),
        });
        let errors = stream_errors(bytes, &dir);
        assert!(!errors.is_empty());
        assert!(
            errors
                .iter()
                .all(|e| e.contains("outside the checkpoint's job directory")),
            "{errors:?}"
        );
    }
    // inside the job directory (here: the fixtures dir of that version) is fine
    let canonical = std::fs::canonicalize(&dir).unwrap();
    let bytes = with_delegates(|name| StreamHandle::File {
        size: 10,
        path: JStr::new(&format!("file:{}/{name}", canonical.display())),
    });
    assert!(stream_errors(bytes, &dir).is_empty());
    // a path that climbs out with .. is refused even when it starts inside
    let bytes = with_delegates(|_| StreamHandle::File {
        size: 10,
        path: JStr::new(&format!(
            "file:{}/../../../../etc/passwd",
            canonical.display()
        )),
    });
    assert!(!stream_errors(bytes, &dir).is_empty());
}

#[test]
fn without_a_directory_no_file_is_read() {
    let bytes = with_delegates(|name| StreamHandle::RelativeFile {
        path: JStr::new(name),
        size: 10,
    });
    let cp = Checkpoint::from_bytes("crafted", None, Bytes::from(bytes)).unwrap();
    let report = checkpoint_surgeon::report::inspect::inspect(&cp);
    let errors: Vec<_> = report
        .operators
        .iter()
        .flat_map(|o| &o.subtasks)
        .filter_map(|s| s.managed_operator.as_ref())
        .map(|h| h.stream_error.clone())
        .filter(|e| !e.is_empty())
        .collect();
    assert!(!errors.is_empty());
    assert!(
        errors
            .iter()
            .all(|e| e.contains("no checkpoint directory is known")),
        "{errors:?}"
    );
}

#[test]
fn state_files_that_are_symlinks_out_of_the_job_directory_are_refused() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files");
    let root = std::env::temp_dir().join(format!(
        "cs-symlink-{}",
        checkpoint_surgeon::commit::random_file_name()
    ));
    let job = root.join("job");
    let dir = job.join("chk-1");
    let outside = root.join("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let mut linked = 0;
    for e in std::fs::read_dir(&fixture).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_owned();
        if name == "_metadata" || linked > 0 {
            std::fs::copy(&p, dir.join(&name)).unwrap();
        } else {
            // the first state file lives outside the job directory, behind a symlink
            std::fs::copy(&p, outside.join(&name)).unwrap();
            std::os::unix::fs::symlink(outside.join(&name), dir.join(&name)).unwrap();
            linked += 1;
        }
    }
    let cp = Checkpoint::open(&dir).unwrap();
    let errors = managed_stream_errors(&cp);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("symbolic link"), "{errors:?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_fifo_is_refused_at_once_in_every_role() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files");
    let dir = std::env::temp_dir().join(format!(
        "cs-fifo-{}",
        checkpoint_surgeon::commit::random_file_name()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = |p: &Path| {
        let ok = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    // `_metadata` itself a FIFO
    fifo(&dir.join("_metadata"));
    let start = std::time::Instant::now();
    let e = Checkpoint::open(&dir)
        .err()
        .expect("a FIFO is no checkpoint");
    assert!(e.to_string().contains("found a FIFO"), "{e}");
    std::fs::remove_file(dir.join("_metadata")).unwrap();
    // a state file a FIFO
    let mut fifos = 0;
    for e in std::fs::read_dir(&fixture).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_owned();
        if name == "_metadata" {
            std::fs::copy(&p, dir.join(&name)).unwrap();
        } else {
            fifo(&dir.join(&name));
            fifos += 1;
        }
    }
    assert!(fifos > 0);
    let cp = Checkpoint::open(&dir).unwrap();
    let errors = managed_stream_errors(&cp);
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|e| e.contains("found a FIFO")),
        "{errors:?}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}
