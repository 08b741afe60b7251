//! relocate: the absolute paths of a checkpoint that lie under one prefix move under another,
//! for a checkpoint that was copied or moved to another directory, bucket or cluster. That covers
//! file handles (operator, keyed, channel and coordinator state), incremental RocksDB shared and
//! private files, changelog files, file-merging segments and their directories. Relative handles
//! (files next to `_metadata`) need nothing: they move with the directory. No stream changes.

use super::{Change, ChangeAction};
use crate::codec::handles::StreamHandle;
use crate::codec::io::JStr;
use crate::codec::metadata::CheckpointMetadata;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};

/// `path` with `from` replaced by `to`, or `None` when `path` is not `from` or below it. A
/// local prefix without a scheme (`/data/flink`) also matches the `file:` URIs Flink writes
/// (`file:/data/flink/...`, `file:///data/flink/...`); the new path keeps that form.
pub fn relocated(path: &str, from: &str, to: &str) -> Option<String> {
    let from = from.trim_end_matches('/');
    let to = to.trim_end_matches('/');
    let mut forms = vec![(from.to_string(), to.to_string())];
    if from.starts_with('/') {
        for scheme in ["file:", "file://"] {
            let t = if to.starts_with('/') {
                format!("{scheme}{to}")
            } else {
                to.to_string()
            };
            forms.push((format!("{scheme}{from}"), t));
        }
    }
    forms.into_iter().find_map(|(f, t)| {
        let rest = path.strip_prefix(f.as_str())?;
        (rest.is_empty() || rest.starts_with('/')).then(|| format!("{t}{rest}"))
    })
}

/// Rewrites every absolute path under `from`; records each (old, new) in `moved`. `false` when
/// no path is under `from`; [`explain_nothing`] says where the paths are.
pub fn relocate(
    md: &mut CheckpointMetadata,
    from: &str,
    to: &str,
    moved: &mut Vec<(String, String)>,
    changes: &mut Vec<Change>,
    nothing: &mut String,
) -> Result<bool> {
    if from.trim_end_matches('/').is_empty() || to.trim_end_matches('/').is_empty() {
        return Err(Error::InvalidArgument(
            "relocate needs a non-empty --from and --to prefix (not the root)".into(),
        ));
    }
    let before = moved.len();
    let mut elsewhere: Vec<String> = Vec::new();
    let mut relative = 0usize;
    let mut rewrite = |path: &mut JStr, moved: &mut Vec<(String, String)>| {
        let old = path.to_string();
        match relocated(&old, from, to) {
            Some(new) => {
                *path = JStr::new(&new);
                moved.push((old, new));
            }
            None => {
                if elsewhere.len() < 3 && !elsewhere.contains(&old) {
                    elsewhere.push(old);
                }
            }
        }
    };
    md.visit_stream_handles_mut(&mut |h| match h {
        StreamHandle::File { path, .. } | StreamHandle::Segment { path, .. } => {
            rewrite(path, moved)
        }
        StreamHandle::RelativeFile { .. } => relative += 1,
        _ => {}
    });
    for at in md.operator_handles_mut() {
        if let Some(dirs) = &mut at.handle.file_merging {
            rewrite(&mut dirs.task_owned_dir, moved);
            rewrite(&mut dirs.shared_dir, moved);
        }
    }
    let count = moved.len() - before;
    if count == 0 && !elsewhere.is_empty() {
        *nothing = format!(
            "no path of the checkpoint is under '{from}': its absolute paths are elsewhere, e.g. {}",
            elsewhere.join(", ")
        );
        return Ok(false);
    }
    changes.push(Change {
        operator: String::new(),
        subtask: -1,
        state: String::new(),
        action: ChangeAction::Relocate,
        elements_before: 0,
        elements_after: 0,
        bytes_removed: 0,
        detail: if count == 0 {
            format!(
                "the checkpoint holds no absolute path: its {relative} relative file handles move with the \
                 directory, and nothing needs rewriting"
            )
        } else {
            format!(
                "{count} absolute paths from {from} to {to}; {relative} relative file handles need nothing"
            )
        },
    });
    Ok(true)
}

/// `--reference-unchanged`: every relative file handle that the plan does not rewrite (not one
/// of `new_files`) becomes an absolute file handle under `base`, the source checkpoint's
/// directory. An output then needs none of the unchanged files, and depends on `base`.
pub fn reference_unchanged(
    md: &mut CheckpointMetadata,
    base: &str,
    new_files: &HashSet<&str>,
    changes: &mut Vec<Change>,
) {
    let base = base.trim_end_matches('/');
    // a file may back several handles: each is counted once
    let mut names: HashMap<String, i64> = HashMap::new();
    md.visit_stream_handles_mut(&mut |h| {
        if let StreamHandle::RelativeFile { path, size } = h {
            let name = path.to_string();
            if !new_files.contains(name.as_str()) {
                let size = *size;
                *h = StreamHandle::File {
                    size,
                    path: JStr::new(&format!("{base}/{name}")),
                };
                names.insert(name, size);
            }
        }
    });
    if names.is_empty() {
        return;
    }
    let bytes: i64 = names.values().sum();
    changes.push(Change {
        operator: String::new(),
        subtask: -1,
        state: String::new(),
        action: ChangeAction::ReferenceUnchanged,
        elements_before: 0,
        elements_after: 0,
        bytes_removed: 0,
        detail: format!(
            "{} unchanged state files ({bytes} bytes) stay in {base}: the new checkpoint depends on that \
             directory. Restore it in NO_CLAIM (the default) or LEGACY mode, not CLAIM, and keep {base} \
             until the job has taken a checkpoint of its own",
            names.len()
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::relocated;

    #[test]
    fn prefixes_match_whole_path_components_and_file_uris() {
        let r = |p| relocated(p, "/old/base/", "/new/place");
        assert_eq!(r("/old/base/x/y").as_deref(), Some("/new/place/x/y"));
        assert_eq!(r("/old/base").as_deref(), Some("/new/place"));
        assert_eq!(r("/old/basement/x"), None);
        assert_eq!(r("file:/old/base/x").as_deref(), Some("file:/new/place/x"));
        assert_eq!(
            r("file:///old/base/x").as_deref(),
            Some("file:///new/place/x")
        );
        assert_eq!(
            relocated("file:/old/base/x", "/old/base", "s3://bucket/p").as_deref(),
            Some("s3://bucket/p/x")
        );
        assert_eq!(
            relocated("s3://a/chk/1", "s3://a", "s3://b/").as_deref(),
            Some("s3://b/chk/1")
        );
        assert_eq!(relocated("s3://a/chk/1", "/a", "/b"), None);
    }
}
