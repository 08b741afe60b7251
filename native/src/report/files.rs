//! The files a checkpoint's state lives in: what the Java side needs to mirror a remote
//! checkpoint, what the doctor and `recover` check for existence and size, and what `orphans`
//! keeps. Sizes are the ones the handles record.

use crate::codec::handles::StreamHandle;
use crate::codec::metadata::CheckpointMetadata;

/// Where a file-backed stream handle's bytes are.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    /// A `RelativeFileStateHandle`: a file name in the checkpoint directory, `size` bytes.
    Relative { size: i64 },
    /// A `FileStateHandle`: an absolute path, `size` bytes.
    File { size: i64 },
    /// A file-merging `SegmentFileStateHandle`: `size` bytes from `start` of a shared file.
    Segment { start: i64, size: i64 },
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StateFile {
    /// The stream of an operator state handle (the ones inspect and surgery read), or any
    /// other (keyed, channel, coordinator).
    pub operator_state: bool,
    pub kind: FileKind,
    pub path: String,
}

/// Every file-backed stream handle, operator-state streams first, each sorted and listed once.
pub fn state_files(md: &CheckpointMetadata) -> Vec<StateFile> {
    fn file(operator_state: bool, h: &StreamHandle) -> Option<StateFile> {
        let (kind, path) = match h {
            StreamHandle::RelativeFile { path, size } => (FileKind::Relative { size: *size }, path),
            StreamHandle::File { path, size } => (FileKind::File { size: *size }, path),
            StreamHandle::Segment {
                path, start, size, ..
            } => (
                FileKind::Segment {
                    start: *start,
                    size: *size,
                },
                path,
            ),
            _ => return None,
        };
        Some(StateFile {
            operator_state,
            kind,
            path: path.to_string(),
        })
    }
    let mut op: Vec<StateFile> = md
        .operator_handles()
        .filter_map(|at| at.handle.delegate.as_ref().and_then(|d| file(true, d)))
        .collect();
    let mut all = Vec::new();
    md.visit_stream_handles(&mut |h| all.extend(file(false, h)));
    op.sort();
    op.dedup();
    all.sort();
    all.dedup();
    op.extend(all);
    op
}
