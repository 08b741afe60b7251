//! Helpers shared by the integration tests: the generated fixtures and temporary copies.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The fixture `name` of every Flink version that has it (tests/fixtures/<version>/<name>).
pub fn fixture_dirs(name: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path().join(name))
        .filter(|p| p.join("_metadata").is_file())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no fixture {name}");
    v
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cs-test-{tag}-{}",
        checkpoint_surgeon::commit::random_file_name()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copies a fixture so in-place tests never touch the repository.
pub fn copy_fixture(dir: &Path) -> PathBuf {
    let to = temp_dir("copy");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    to
}

/// Opens a retained checkpoint of a fixture whose shared files Flink referenced by absolute paths
/// below the job directory it wrote them in (`.../<job>/shared/...`): that directory is read from
/// the fixture directory holding the checkpoint, as a mirror.
pub fn open_retained(chk: &Path) -> checkpoint_surgeon::commit::Checkpoint {
    let mut cp = checkpoint_surgeon::commit::Checkpoint::open(chk).unwrap();
    let mut prefix = None;
    cp.metadata.visit_stream_handles(&mut |h| {
        if let checkpoint_surgeon::codec::handles::StreamHandle::File { path, .. } = h {
            let p = path.to_string();
            if let Some(i) = p.find("/shared/") {
                prefix = Some(p[..i + 1].to_string());
            }
        }
    });
    if let Some(p) = prefix {
        cp.add_mirror(&p, chk.parent().unwrap().to_path_buf());
    }
    cp
}
