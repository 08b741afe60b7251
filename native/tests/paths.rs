//! The tool never reads or writes outside the places a checkpoint legitimately references:
//! relative state file names must be plain names, absolute ones must lie below the job's
//! checkpoint directory.

use bytes::Bytes;
use checkpoint_surgeon::checkpoint::Checkpoint;
use checkpoint_surgeon::handles::StreamHandle;
use checkpoint_surgeon::io::JStr;
use checkpoint_surgeon::metadata::{self, SubtaskEntry, Subtasks};
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
    let report = checkpoint_surgeon::inspect::inspect(&cp);
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
