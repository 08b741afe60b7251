//! Remote checkpoints (S3, HDFS, ... staged by the Java side in a local mirror): absolute remote
//! paths below the mirrored prefix are read from the mirror, nothing else is, and a surgery names
//! its new files in the remote output directory.

use bytes::Bytes;
use checkpoint_surgeon::codec::handles::StreamHandle;
use checkpoint_surgeon::codec::io::JStr;
use checkpoint_surgeon::codec::metadata::{self, SubtaskEntry, Subtasks};
use checkpoint_surgeon::commit;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::surgery::{self, Request, Selector};
use std::path::{Path, PathBuf};

const JOB: &str = "s3://bucket/checkpoints/job";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/1.15.4/operator-state-files")
}

/// The fixture with its relative delegates turned into absolute `s3://` file handles made by `path`.
fn remote_metadata(path: impl Fn(&str) -> String) -> Vec<u8> {
    let mut md = metadata::parse(Bytes::from(
        std::fs::read(fixture().join("_metadata")).unwrap(),
    ))
    .unwrap();
    for op in &mut md.operators {
        let Subtasks::List(l) = &mut op.subtasks else {
            continue;
        };
        for e in l {
            let SubtaskEntry::State(_, st) = e else {
                continue;
            };
            if let Some((_, Some(h))) = &mut st.managed_operator {
                if let Some(StreamHandle::RelativeFile { path: p, size }) = &h.delegate {
                    h.delegate = Some(StreamHandle::File {
                        size: *size,
                        path: JStr::new(&path(&p.to_string())),
                    });
                }
            }
        }
    }
    md.to_vec()
}

/// A mirror of `JOB` with chk-7 holding the fixture's state files.
fn mirror(tag: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("cs-mirror-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let chk = root.join("chk-7");
    std::fs::create_dir_all(&chk).unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() != "_metadata" {
            std::fs::copy(&p, chk.join(p.file_name().unwrap())).unwrap();
        }
    }
    root
}

fn stream_results(cp: &Checkpoint) -> Vec<Result<Bytes, String>> {
    let mut out = Vec::new();
    for op in &cp.metadata.operators {
        for (_, st) in op.subtask_states() {
            if let Some(h) = st.managed_operator() {
                if let Some(d) = &h.delegate {
                    out.push(cp.stream_bytes(d).map_err(|e| e.to_string()));
                }
            }
        }
    }
    assert!(!out.is_empty());
    out
}

#[test]
fn mirrored_remote_paths_are_read_from_the_mirror_and_nothing_else() {
    let root = mirror("read");
    let bytes = remote_metadata(|name| format!("{JOB}/chk-7/{name}"));
    let name = format!("{JOB}/chk-7/_metadata");

    // Without a mirror an s3:// path is not read natively.
    let plain =
        Checkpoint::from_bytes(&name, Some(&root.join("chk-7")), Bytes::from(bytes.clone()))
            .unwrap();
    for r in stream_results(&plain) {
        assert!(r.unwrap_err().contains("only local paths"));
    }

    let cp = Checkpoint::from_bytes(&name, Some(&root.join("chk-7")), Bytes::from(bytes))
        .unwrap()
        .with_mirrors(&format!("{JOB}\t{}", root.display()))
        .unwrap();
    for r in stream_results(&cp) {
        assert!(!r.unwrap().is_empty());
    }

    // A prefix that only shares characters is not the mirrored directory, and `..` may not leave it.
    for bad in [
        format!("{JOB}-other/chk-7/x"),
        format!("{JOB}/chk-7/../../../etc/passwd"),
        format!("{JOB}//etc/passwd"),
    ] {
        let bytes = remote_metadata(|_| bad.clone());
        let cp = Checkpoint::from_bytes(&name, Some(&root.join("chk-7")), Bytes::from(bytes))
            .unwrap()
            .with_mirrors(&format!("{JOB}/\t{}", root.display()))
            .unwrap();
        for r in stream_results(&cp) {
            let e = r.unwrap_err();
            assert!(
                e.contains("only local paths") || e.contains("refusing"),
                "{bad}: {e}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn surgery_names_new_files_in_the_remote_output_directory() {
    let root = mirror("apply");
    let bytes = remote_metadata(|name| format!("{JOB}/chk-7/{name}"));
    let name = format!("{JOB}/chk-7/_metadata");
    let dir = root.join("chk-7");
    let cp = Checkpoint::from_bytes(&name, Some(&dir), Bytes::from(bytes))
        .unwrap()
        .with_mirrors(&format!("{JOB}\t{}", root.display()))
        .unwrap();
    // Remove the first state of the first handle that has one.
    let state = cp
        .metadata
        .operators
        .iter()
        .flat_map(|o| o.subtask_states())
        .find_map(|(_, st)| {
            st.managed_operator()
                .and_then(|h| h.states.first().map(|s| s.name.to_string()))
        })
        .unwrap();
    let req = Request::remove_state(Selector::All, &state);
    let plan = surgery::plan(&cp, &req, &mut commit::random_file_name).unwrap();
    let out = "s3://bucket/repaired/chk-7";
    let applied = commit::stage(&cp, &plan, &dir, Some(out)).unwrap();
    assert!(!applied.written.is_empty());
    let new_bytes = std::fs::read(&applied.metadata_tmp).unwrap();
    let md = metadata::parse(Bytes::from(new_bytes)).unwrap();
    let mut new_paths = Vec::new();
    md.visit_stream_handles(&mut |h| {
        if let StreamHandle::File { path, .. } = h {
            let p = path.to_string();
            if !p.starts_with(&format!("{JOB}/")) {
                new_paths.push(p);
            }
        }
    });
    assert_eq!(new_paths.len(), applied.written.len(), "{new_paths:?}");
    for p in &new_paths {
        let file = p.strip_prefix(&format!("{out}/")).expect(p);
        assert!(
            dir.join(file).is_file(),
            "{p} written into the mirror for upload"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
