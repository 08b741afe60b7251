//! The keyed-state report: per operator and per keyed state, its name, type, serializers, TTL,
//! and entries and bytes in total and per subtask, built from the readings of every keyed handle
//! (`codec::keyed`). Handles that could not be read are listed with their error (file and byte
//! offset); the rest of the report stands.
//!
//! What the numbers mean depends on the format, which each state lists:
//! - canonical savepoints and heap checkpoints: exact counts of the snapshot's records;
//! - RocksDB files (incremental checkpoints, native savepoints): RocksDB's table properties,
//!   whose entries include tombstones and overwritten versions that compaction has not removed
//!   yet ([`KeyedStateReport::rocksdb`]);
//! - a changelog's state change log: change records per state (SET, ADD, CLEAR, ...), named by
//!   the log's METADATA records: changes since the last materialization, not live entries.

use crate::codec::elements::SnapshotInfo;
use crate::codec::keyed::handle::{HandleReading, RocksdbCounts, SnapshotFormat};
use crate::codec::keyed::meta::{KeyedSerializer, KeyedStateMeta, KEY_SERIALIZER};
use crate::codec::keyed::{Note, StateCount};
use crate::codec::metadata::CheckpointMetadata;
use crate::error::Error;

/// What the meta info says of TTL settings, for every state with a TTL.
pub const TTL_SETTINGS: &str = "the meta info holds no TTL settings: the time to live, update \
     type, visibility and cleanup are set in the job's code (only the value serializer shows the \
     TTL wrapper)";

/// What RocksDB's numbers are.
pub const ROCKSDB_NUMBERS: &str = "RocksDB's table properties: entries include tombstones and \
     overwritten versions not compacted yet, bytes are the SST files' sizes";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyedReport {
    pub operators: Vec<OperatorKeyed>,
}

/// The keyed state of one operator.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperatorKeyed {
    pub operator_id: String,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub parallelism: i32,
    pub max_parallelism: i32,
    /// In the order of the first handle's meta info, then states only later handles name.
    pub states: Vec<KeyedStateReport>,
    pub handles: Vec<HandleReport>,
}

/// One serializer of a state: its key in the meta info and its snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct SerializerReport {
    /// `KEY_SERIALIZER`, `NAMESPACE_SERIALIZER`, `VALUE_SERIALIZER`, `USER_KEY_SERIALIZER`.
    pub key: String,
    pub snapshot: SnapshotReport,
}

/// A serializer snapshot as the meta info names it.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotReport {
    pub snapshot_class: String,
    pub version: i32,
    /// The serializer class, where the snapshot class names it (a nested `...Serializer$...Snapshot`).
    pub serializer_class: Option<String>,
    /// Classes the snapshot's body names: a POJO's, a tuple's, an enum's, Kryo's type class.
    pub classes: Vec<String>,
    /// The nested serializers' snapshots (a list's element, a map's key and value, TTL's timestamp
    /// and value, a tuple's or a POJO's fields), when the body was read.
    pub nested: Vec<SnapshotReport>,
    /// Whether the tool knows the element format (it can walk the elements).
    pub layout_known: bool,
}

impl SnapshotReport {
    fn of(class: &str, version: i32, info: Option<&SnapshotInfo>) -> Self {
        SnapshotReport {
            snapshot_class: class.to_string(),
            version,
            serializer_class: serializer_class(class),
            classes: info.map(|i| i.names.clone()).unwrap_or_default(),
            nested: info
                .map(|i| {
                    i.nested
                        .iter()
                        .map(|n| SnapshotReport::of(&n.class, n.version, Some(n)))
                        .collect()
                })
                .unwrap_or_default(),
            layout_known: info.is_some_and(|i| i.layout.is_some()),
        }
    }

    /// A short form: the simple serializer name with its nested ones, e.g.
    /// `ListSerializer<TtlSerializer<LongSerializer, StringSerializer>>`.
    pub fn short(&self) -> String {
        let own = self
            .serializer_class
            .as_deref()
            .unwrap_or(&self.snapshot_class);
        let simple = own.rsplit(['.', '$']).next().unwrap_or(own);
        let simple = if simple == "Serializer" {
            // TimeWindow$Serializer
            own.rsplit('.').next().unwrap_or(own).replace('$', ".")
        } else {
            simple
                .strip_suffix("Snapshot")
                .unwrap_or(simple)
                .to_string()
        };
        let mut s = simple;
        if let Some(c) = self.classes.first() {
            s.push_str(&format!("({})", c.rsplit('.').next().unwrap_or(c)));
        }
        if !self.nested.is_empty() {
            let inner: Vec<String> = self.nested.iter().map(|n| n.short()).collect();
            s.push_str(&format!("<{}>", inner.join(", ")));
        }
        s
    }
}

/// The serializer class a snapshot class names: its enclosing class, when that is a serializer
/// (`LongSerializer$LongSerializerSnapshot`, `TimeWindow$Serializer$TimeWindowSerializerSnapshot`).
fn serializer_class(snapshot: &str) -> Option<String> {
    let (outer, _) = snapshot.rsplit_once('$')?;
    let simple = outer.rsplit(['.', '$']).next()?;
    simple.ends_with("Serializer").then(|| outer.to_string())
}

/// One keyed state of an operator.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedStateReport {
    pub name: String,
    /// `KEY_VALUE`, `PRIORITY_QUEUE` (timers), `KEY_VALUE_V2`.
    pub backend_type: &'static str,
    /// `VALUE`, `LIST`, `MAP`, `REDUCING`, `AGGREGATING` (None for priority queues).
    pub state_type: Option<String>,
    /// The key serializer, then the state's own, as the meta info lists them.
    pub serializers: Vec<SerializerReport>,
    /// The value serializer is Flink's TTL wrapper; the settings are not in the meta info
    /// ([`TTL_SETTINGS`]).
    pub ttl: bool,
    pub total: StateCount,
    /// Per subtask (in subtask order) of the handles that hold the state.
    pub per_subtask: Vec<(i32, StateCount)>,
    /// The formats the state was read from.
    pub formats: Vec<SnapshotFormat>,
    /// RocksDB's own figures, summed, when read from RocksDB files ([`ROCKSDB_NUMBERS`]).
    pub rocksdb: Option<RocksdbCounts>,
}

impl KeyedStateReport {
    /// Whether (some of) the numbers are RocksDB's table properties ([`ROCKSDB_NUMBERS`]).
    pub fn rocksdb_numbers(&self) -> bool {
        self.formats.contains(&SnapshotFormat::RocksdbFiles)
    }
}

/// One keyed handle (or part of one) of a subtask.
#[derive(Clone, Debug, PartialEq)]
pub struct HandleReport {
    pub subtask: i32,
    /// Raw keyed state (written by the operator itself), not the backend's.
    pub raw: bool,
    pub kind: String,
    pub format: Option<SnapshotFormat>,
    pub key_groups: (i32, i32),
    pub total_bytes: u64,
    pub header_bytes: u64,
    pub overhead_bytes: u64,
    pub unattributed_bytes: u64,
    pub stored_apportioned: bool,
    pub notes: Vec<Note>,
    /// Why the handle could not be read (its file and byte offset are in the message).
    pub error: Option<String>,
}

impl HandleReport {
    /// A handle whose bytes are not broken down: all of them unattributed.
    fn unread(hr: &HandleReadings) -> Self {
        let size = hr.size.max(0) as u64;
        HandleReport {
            subtask: hr.subtask,
            raw: hr.raw,
            kind: hr.kind.to_string(),
            format: None,
            key_groups: (0, 0),
            total_bytes: size,
            header_bytes: 0,
            overhead_bytes: 0,
            unattributed_bytes: size,
            stored_apportioned: false,
            notes: Vec::new(),
            error: None,
        }
    }
}

/// One handle's readings, as the commit layer hands them over: the operator (index in
/// `_metadata`), the subtask, raw or managed, and the readings (one per part of a changelog
/// handle), or for raw keyed state its kind and size only.
pub struct HandleReadings {
    pub operator: usize,
    pub subtask: i32,
    pub raw: bool,
    pub kind: &'static str,
    pub size: i64,
    pub readings: Vec<Result<HandleReading, Error>>,
}

/// Builds the report from every keyed handle's readings.
pub fn build(md: &CheckpointMetadata, mut readings: Vec<HandleReadings>) -> KeyedReport {
    readings.sort_by_key(|r| (r.operator, r.raw, r.subtask));
    let mut report = KeyedReport::default();
    for (index, op) in md.operators.iter().enumerate() {
        let mut o = OperatorKeyed {
            operator_id: op.hex_id(),
            name: op.name.as_ref().map(|n| n.to_string_lossy()),
            uid: op.uid.as_ref().map(|n| n.to_string_lossy()),
            parallelism: op.parallelism,
            max_parallelism: op.max_parallelism,
            ..OperatorKeyed::default()
        };
        for hr in readings.iter().filter(|r| r.operator == index) {
            if hr.raw {
                let mut h = HandleReport::unread(hr);
                h.notes.push(Note {
                    file: String::new(),
                    offset: 0,
                    message: "raw keyed state is written by the operator itself (for example \
                              heap timers next to the RocksDB backend), not broken down by state"
                        .into(),
                });
                o.handles.push(h);
                continue;
            }
            for r in &hr.readings {
                match r {
                    Ok(r) => {
                        add_reading(&mut o, hr.subtask, r);
                        o.handles.push(HandleReport {
                            subtask: hr.subtask,
                            raw: false,
                            kind: r.kind.to_string(),
                            format: Some(r.format),
                            key_groups: r.key_groups,
                            total_bytes: r.total_bytes,
                            header_bytes: r.header_bytes,
                            overhead_bytes: r.overhead_bytes,
                            unattributed_bytes: r.unattributed_bytes,
                            stored_apportioned: r.stored_apportioned,
                            notes: r.notes.clone(),
                            error: None,
                        });
                    }
                    Err(e) => {
                        let mut h = HandleReport::unread(hr);
                        h.error = Some(e.to_string());
                        o.handles.push(h);
                    }
                }
            }
        }
        if !o.handles.is_empty() {
            report.operators.push(o);
        }
    }
    report
}

fn serializer_report(s: &KeyedSerializer) -> SerializerReport {
    SerializerReport {
        key: s.snapshot.key.to_string_lossy(),
        snapshot: SnapshotReport::of(&s.class(), s.snapshot.version, s.info.as_ref()),
    }
}

fn add_reading(o: &mut OperatorKeyed, subtask: i32, r: &HandleReading) {
    // the meta info, or a change log's METADATA records (which hold no key serializer)
    let (key, states): (Option<&KeyedSerializer>, Vec<&KeyedStateMeta>) =
        match (&r.meta, &r.changelog) {
            (Some(m), _) => (Some(&m.key_serializer), m.states.iter().collect()),
            (None, Some(c)) => (None, c.states.iter().map(|s| &s.meta).collect()),
            (None, None) => return,
        };
    for (i, m) in states.into_iter().enumerate() {
        let name = m.name.to_string_lossy();
        let pos = match o.states.iter().position(|s| s.name == name) {
            Some(p) => p,
            None => {
                let mut serializers = Vec::new();
                if let Some(k) = key {
                    serializers.push(serializer_report(k));
                    serializers[0].key = KEY_SERIALIZER.into();
                }
                serializers.extend(m.serializers.iter().map(serializer_report));
                o.states.push(KeyedStateReport {
                    name: name.clone(),
                    backend_type: m.backend_type.name(),
                    state_type: m.state_type(),
                    serializers,
                    ttl: m.has_ttl(),
                    total: StateCount::none(),
                    per_subtask: Vec::new(),
                    formats: Vec::new(),
                    rocksdb: None,
                });
                o.states.len() - 1
            }
        };
        let s = &mut o.states[pos];
        let count = r.states.get(i).cloned().unwrap_or_default();
        s.total.add(&count);
        match s.per_subtask.iter_mut().find(|(t, _)| *t == subtask) {
            Some((_, c)) => c.add(&count),
            None => s.per_subtask.push((subtask, count)),
        }
        if !s.formats.contains(&r.format) {
            s.formats.push(r.format);
        }
        if let Some(rc) = r.rocksdb.as_ref().and_then(|x| x.per_state.get(i)) {
            let t = s.rocksdb.get_or_insert_with(RocksdbCounts::default);
            t.files += rc.files;
            t.deleted_keys += rc.deleted_keys;
            t.merge_operands += rc.merge_operands;
            t.range_deletions += rc.range_deletions;
            t.data_size += rc.data_size;
        }
    }
}
