//! The canonical text description of a parsed `_metadata` (tests/describe-format.md). The Java
//! tests print the same text from Flink's own `CheckpointMetadata`; the two must agree.

use crate::codec::handles::{ChannelHandle, KeyedHandle, OperatorHandle, StreamHandle};
use crate::codec::handles::{HandleList, KeyGroups, Offsets};
use crate::codec::metadata::{CheckpointMetadata, SubtaskEntry, Subtasks};
use std::fmt::Write;

pub fn describe(md: &CheckpointMetadata) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "checkpoint id={}", md.checkpoint_id);
    for m in &md.master_states {
        let _ = writeln!(
            out,
            "master name={} version={} bytes={}",
            m.name,
            m.version,
            m.payload.len()
        );
    }
    let mut ops: Vec<_> = md.operators.iter().collect();
    ops.sort_by_key(|o| o.hex_id());
    for op in ops {
        let opt = |s: &Option<crate::codec::io::JStr>| match s {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "operator id={} name={} uid={} parallelism={} maxParallelism={} coordinator={}",
            op.hex_id(),
            opt(&op.name),
            opt(&op.uid),
            op.parallelism,
            op.max_parallelism,
            stream(&op.coordinator)
        );
        let list = match &op.subtasks {
            Subtasks::FullyFinished => {
                out.push_str("  fully-finished\n");
                continue;
            }
            Subtasks::List(l) => l,
        };
        let mut subtasks: Vec<_> = list.iter().collect();
        subtasks.sort_by_key(|e| match e {
            SubtaskEntry::Finished(i) | SubtaskEntry::State(i, _) => *i,
        });
        for e in subtasks {
            match e {
                SubtaskEntry::Finished(i) => {
                    let _ = writeln!(out, "  subtask {i} finished");
                }
                SubtaskEntry::State(i, s) => {
                    let _ = writeln!(out, "  subtask {i}");
                    if let Some(h) = s.managed_operator() {
                        let _ = writeln!(out, "    managedOperator {}", operator(h));
                    }
                    if let Some(h) = s.raw_operator() {
                        let _ = writeln!(out, "    rawOperator {}", operator(h));
                    }
                    if let Some(h) = &s.managed_keyed {
                        let _ = writeln!(out, "    managedKeyed {}", keyed(h));
                    }
                    if let Some(h) = &s.raw_keyed {
                        let _ = writeln!(out, "    rawKeyed {}", keyed(h));
                    }
                    for c in &s.input_channels {
                        let _ = writeln!(out, "    inputChannel {}", channel(c));
                    }
                    for c in &s.output_channels {
                        let _ = writeln!(out, "    outputChannel {}", channel(c));
                    }
                }
            }
        }
    }
    out
}

/// Java's `String.compareTo` order (UTF-16 code units), which differs from Rust's byte order
/// for characters beyond the BMP.
fn java_order(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn offsets(o: &Offsets, sep: &str) -> String {
    o.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

fn range(start: i32, count: i64) -> String {
    format!("{start}+{count}")
}

fn key_groups(name: &str, k: &KeyGroups, with_id: bool) -> String {
    let id = if with_id {
        format!(
            ",id={}",
            k.id.as_ref().map_or("-".to_string(), |i| i.to_string())
        )
    } else {
        String::new()
    };
    format!(
        "{name}(range={},offsets=[{}]{id},delegate={})",
        range(k.start_key_group, k.offsets.len() as i64),
        offsets(&k.offsets, ";"),
        stream(&k.delegate)
    )
}

pub fn stream(h: &Option<StreamHandle>) -> String {
    let Some(h) = h else { return "null".into() };
    match h {
        StreamHandle::ByteStream { name, data } => {
            format!("ByteStream(name={name},size={})", data.len())
        }
        StreamHandle::File { size, path } => format!("File(path={path},size={size})"),
        StreamHandle::KeyGroups(k) => key_groups("KeyGroups", k, true),
        StreamHandle::RelativeFile { path, size } => {
            format!("RelativeFile(path={path},size={size})")
        }
        StreamHandle::Segment {
            start,
            size,
            scope,
            path,
            logical_id,
        } => format!(
            "Segment(start={start},size={size},scope={},path={path},logical={logical_id})",
            if *scope == 0 { "EXCLUSIVE" } else { "SHARED" }
        ),
        StreamHandle::EmptySegment => "EmptySegment".into(),
    }
}

fn operator(h: &OperatorHandle) -> String {
    let mut states: Vec<_> = h.states.iter().collect();
    states.sort_by_cached_key(|s| java_order(&s.name.to_string()));
    let states = states
        .iter()
        .map(|s| format!("{}:{}:{}", s.name, s.mode.name(), offsets(&s.offsets, ",")))
        .collect::<Vec<_>>()
        .join(";");
    match &h.file_merging {
        None => format!(
            "OperatorStream(states=[{states}],delegate={})",
            stream(&h.delegate)
        ),
        Some(d) => format!(
            "FileMergingOperatorStream(states=[{states}],taskOwnedDir={},sharedDir={},empty={},delegate={})",
            d.task_owned_dir,
            d.shared_dir,
            d.is_empty != 0,
            stream(&h.delegate)
        ),
    }
}

fn handle_list(l: &HandleList) -> String {
    let mut v: Vec<(String, String)> = l.iter().map(|(k, h)| (k.to_string(), stream(h))).collect();
    v.sort_by_cached_key(|(k, _)| java_order(k));
    v.iter()
        .map(|(k, h)| format!("{k}={h}"))
        .collect::<Vec<_>>()
        .join(";")
}

pub fn keyed(h: &KeyedHandle) -> String {
    match h {
        KeyedHandle::KeyGroups { code: 7, handle } => key_groups("SavepointKeyGroups", handle, false),
        KeyedHandle::KeyGroups { handle, .. } => key_groups("KeyGroups", handle, true),
        KeyedHandle::Incremental {
            checkpoint_id,
            backend_id,
            start_key_group,
            num_key_groups,
            meta,
            shared,
            private,
            ..
        } => format!(
            "Incremental(checkpointId={checkpoint_id},backendId={backend_id},range={},meta={},shared=[{}],private=[{}])",
            range(*start_key_group, *num_key_groups as i64),
            stream(meta),
            handle_list(shared),
            handle_list(private)
        ),
        KeyedHandle::Changelog {
            start_key_group,
            num_key_groups,
            materialized,
            non_materialized,
            materialization_id,
            ..
        } => {
            let list = |l: &Vec<Option<KeyedHandle>>| {
                l.iter()
                    .flatten()
                    .map(keyed)
                    .collect::<Vec<_>>()
                    .join(";")
            };
            format!(
                "Changelog(range={},materialized=[{}],nonMaterialized=[{}],materializationId={materialization_id})",
                range(*start_key_group, *num_key_groups as i64),
                list(materialized),
                list(non_materialized)
            )
        }
        KeyedHandle::ChangelogInMemory {
            start_key_group,
            num_key_groups,
            from,
            to,
            num_changes,
            ..
        } => format!(
            "ChangelogInMemory(range={},from={from},to={to},changes={num_changes})",
            range(*start_key_group, *num_key_groups as i64)
        ),
        KeyedHandle::ChangelogFile {
            start_key_group,
            num_key_groups,
            handles,
            ..
        } => format!(
            "ChangelogFile(range={},handles=[{}])",
            range(*start_key_group, *num_key_groups as i64),
            handles
                .iter()
                .map(|(o, h)| format!("{o}@{}", stream(h)))
                .collect::<Vec<_>>()
                .join(";")
        ),
    }
}

fn channel(c: &ChannelHandle) -> String {
    let merged = c.merged_offsets.is_some();
    let name = match (c.input, merged) {
        (true, false) => "InputChannel",
        (false, false) => "ResultSubpartition",
        (true, true) => "MergedInputChannel",
        (false, true) => "MergedResultSubpartition",
    };
    if let Some(raw) = &c.merged_offsets {
        return format!(
            "{name}(subtask={},size={},delegate={},offsetsBytes={})",
            c.subtask,
            c.size,
            stream(&c.delegate),
            raw.len()
        );
    }
    let (a, b) = c.info.unwrap_or((0, 0));
    let (an, bn) = if c.input {
        ("gate", "channel")
    } else {
        ("partition", "subpartition")
    };
    format!(
        "{name}(subtask={},{an}={a},{bn}={b},offsets=[{}],size={},delegate={})",
        c.subtask,
        offsets(&c.offsets, ";"),
        c.size,
        stream(&c.delegate)
    )
}
