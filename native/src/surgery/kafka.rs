//! Kafka source surgery:
//! - `migrate-legacy` turns a `FlinkKafkaConsumer`'s union state `topic-partition-offset-states`
//!   into `KafkaSource` state: one split per partition in the `SourceReaderState` of the reader
//!   that `KafkaSourceEnumerator` would assign it to, and the enumerator's checkpoint in the
//!   operator's coordinator state; the legacy state is purged;
//! - `drop-topic` removes a topic's (or one partition's) splits from every reader and from the
//!   enumerator state;
//! - `set-offsets` changes the starting offsets of splits (and of the enumerator's splits, which
//!   only version 3 of its state holds).
//!
//! The streams of the handles it touches are rebuilt state by state
//! ([`opstate::split_stream`], [`opstate::join_stream`]); other states' elements pass through as
//! slices, decoded from their snappy frames when compressed (Flink 1.19+'s layout; 1.18's is
//! refused, see [`opstate::split_stream`]).

use super::{delegate_location, replace_stream, Change, ChangeAction, NewStream, Selector};
use crate::codec::elements::{self, ElementType};
use crate::codec::handles::{Mode, OperatorHandle, StreamHandle};
use crate::codec::io::JStr;
use crate::codec::kafka::{
    self, describe_legacy_offset, describe_offset, EnumState, KafkaOffset, ASSIGNED, LEGACY_STATE,
    NO_STOPPING_OFFSET, SOURCE_READER_STATE,
};
use crate::codec::metadata::{
    CheckpointMetadata, OperatorState, SubtaskEntry, SubtaskState, Subtasks,
};
use crate::codec::metainfo::EntryKind;
use crate::codec::opstate::{self, StatePart, StreamParts};
use crate::codec::StreamSource;
use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};

/// Flink's upper bound of the max parallelism (`KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`).
const MAX_PARALLELISM: i32 = 1 << 15;

/// A Kafka operation of a request.
#[derive(Clone, Debug, PartialEq)]
pub enum KafkaOperation {
    /// FlinkKafkaConsumer state to KafkaSource state.
    MigrateLegacy {
        /// The `KafkaSourceEnumStateSerializer` version of the target connector (1 to 3).
        enum_state_version: i32,
        /// The new job's source parallelism (default: the operator's).
        parallelism: Option<i32>,
        /// The split starting offset for the legacy `OFFSET_NOT_SET` (refused when None).
        offset_not_set: Option<i64>,
    },
    /// Remove a topic's (or one partition's) splits.
    DropTopic {
        topic: String,
        partition: Option<i32>,
    },
    /// Set the starting offsets of a topic's (or one partition's) splits.
    SetOffsets {
        topic: String,
        partition: Option<i32>,
        to: NewOffset,
    },
}

/// A new starting offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewOffset {
    /// An offset, or a marker (`EARLIEST_OFFSET`, `LATEST_OFFSET`, `COMMITTED_OFFSET`).
    At(i64),
    /// The current numeric offset plus this.
    Shift(i64),
}

impl KafkaOperation {
    pub fn describe(&self, operators: &Selector) -> String {
        match self {
            KafkaOperation::MigrateLegacy { .. } => {
                format!(
                    "FlinkKafkaConsumer state '{LEGACY_STATE}' of {}",
                    operators.describe()
                )
            }
            KafkaOperation::DropTopic { topic, partition }
            | KafkaOperation::SetOffsets {
                topic, partition, ..
            } => format!(
                "{} in the KafkaSource state of {}",
                partitions_text(topic, *partition),
                operators.describe()
            ),
        }
    }
}

fn partitions_text(topic: &str, partition: Option<i32>) -> String {
    match partition {
        Some(p) => format!("partition {p} of topic '{topic}'"),
        None => format!("topic '{topic}'"),
    }
}

/// Applies one Kafka operation to the selected operators of `md`; returns whether it selected
/// anything (when not, `nothing` may say why).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    cp: &dyn StreamSource,
    md: &mut CheckpointMetadata,
    selector: &Selector,
    op: &KafkaOperation,
    name_stream: &mut dyn FnMut() -> String,
    changes: &mut Vec<Change>,
    new_streams: &mut Vec<NewStream>,
    nothing: &mut String,
) -> Result<bool> {
    if md.version < 3 {
        return Err(Error::InvalidArgument(format!(
            "metadata version {} (Flink 1.10 or earlier) has no coordinator state",
            md.version
        )));
    }
    let mut hit = false;
    for o in md.operators.iter_mut().filter(|o| selector.matches(o)) {
        let mut s = OperatorSurgery {
            cp,
            name_stream: &mut *name_stream,
            changes: &mut *changes,
            new_streams: &mut *new_streams,
        };
        let hit_here = match op {
            KafkaOperation::MigrateLegacy {
                enum_state_version,
                parallelism,
                offset_not_set,
            } => s.migrate(o, *enum_state_version, *parallelism, *offset_not_set)?,
            KafkaOperation::DropTopic { topic, partition } => {
                s.edit_splits(o, topic, *partition, None, *selector == Selector::All)?
            }
            KafkaOperation::SetOffsets {
                topic,
                partition,
                to,
            } => {
                if let NewOffset::At(n) = to {
                    if !kafka::valid_starting_offset(*n) {
                        return Err(Error::InvalidArgument(format!(
                            "{n} is no starting offset: an offset >= 0, or -2 (earliest), -1 \
                             (latest), -3 (committed)"
                        )));
                    }
                }
                s.edit_splits(o, topic, *partition, Some(*to), *selector == Selector::All)?
            }
        };
        if !hit_here && !matches!(op, KafkaOperation::MigrateLegacy { .. }) {
            if let Some(note) = legacy_note(cp, o)? {
                *nothing = format!("{} selects nothing: {note}", op.describe(selector));
            }
        }
        hit |= hit_here;
    }
    Ok(hit)
}

/// What an operator without KafkaSource splits holds under the legacy consumer's state name, for
/// the message of a drop-topic or set-offsets that selects nothing.
fn legacy_note(cp: &dyn StreamSource, o: &OperatorState) -> Result<Option<String>> {
    let legacy = JStr::new(LEGACY_STATE);
    let Some(h) = o
        .subtask_states()
        .filter_map(|(_, s)| s.managed_operator())
        .find(|h| h.states.iter().any(|x| x.name == legacy))
    else {
        return Ok(None);
    };
    let id = o.hex_id();
    let Some(delegate) = &h.delegate else {
        return Ok(None);
    };
    let stream = cp.stream_bytes(delegate)?;
    Ok(Some(match legacy_element_type(&stream, h)? {
        Some((t, _)) if t.is_kafka_legacy() => format!(
            "operator {id} holds FlinkKafkaConsumer offsets ('{LEGACY_STATE}'), not KafkaSource \
             splits: turn them into splits with kafka migrate-legacy first"
        ),
        Some((t, _)) => format!(
            "operator {id} holds '{LEGACY_STATE}' under FlinkKafkaConsumer's name, but it is not \
             Kafka's: its elements are {t}, not {}",
            elements::kafka_legacy_type()
        ),
        None => return Ok(None),
    }))
}

/// The element type of the legacy state in a stream, and where its serializer snapshot's body
/// starts; None when the header has no such entry.
fn legacy_element_type(stream: &Bytes, h: &OperatorHandle) -> Result<Option<(ElementType, usize)>> {
    let header = opstate::parse_header(stream, h)?;
    let Some(e) = header.entry(&JStr::new(LEGACY_STATE)) else {
        return Ok(None);
    };
    let (t, s) = ElementType::read_entry(stream, e)?;
    Ok(Some((t, s.body.0)))
}

struct OperatorSurgery<'a> {
    cp: &'a dyn StreamSource,
    name_stream: &'a mut dyn FnMut() -> String,
    changes: &'a mut Vec<Change>,
    new_streams: &'a mut Vec<NewStream>,
}

/// One subtask's managed operator state, taken apart.
struct Taken {
    parts: StreamParts,
    delegate: StreamHandle,
    location: String,
    stream: Bytes,
}

fn has_state(s: &SubtaskState, name: &JStr) -> bool {
    s.managed_operator()
        .is_some_and(|h| h.states.iter().any(|x| &x.name == name))
}

fn state_entries(op: &OperatorState) -> &[SubtaskEntry] {
    match &op.subtasks {
        Subtasks::FullyFinished => &[],
        Subtasks::List(l) => l,
    }
}

impl OperatorSurgery<'_> {
    fn take(&self, h: &OperatorHandle) -> Result<Taken> {
        let delegate = h.delegate.clone().ok_or_else(|| {
            Error::InvalidArgument("an operator state handle without a stream".into())
        })?;
        let location = delegate_location(&delegate);
        let stream = self.cp.stream_bytes(&delegate)?;
        let parts = opstate::split_stream(&stream, h).map_err(|e| e.in_file(&location))?;
        Ok(Taken {
            parts,
            delegate,
            location,
            stream,
        })
    }

    /// Writes `parts` as the new stream of `state`'s managed operator state, in place of
    /// `delegate`'s (inline stays inline, a file becomes a new file); `new_subtask`: a subtask
    /// without operator state so far, whose stream takes `delegate`'s kind and replaces nothing.
    fn put(
        &mut self,
        state: &mut SubtaskState,
        parts: &StreamParts,
        delegate: &StreamHandle,
        new_subtask: Option<i32>,
    ) -> Result<()> {
        let (pieces, len, map) = opstate::join_stream(parts);
        let (handle, mut stream) = replace_stream(delegate, pieces, len, self.name_stream)?;
        if let Some(i) = new_subtask {
            stream.replaces = format!("(new stream of subtask {i})");
        }
        let flag = state.managed_operator.as_ref().map_or(1, |(f, _)| *f);
        state.managed_operator = Some((
            flag,
            Some(OperatorHandle {
                states: map,
                file_merging: None,
                delegate: Some(handle),
            }),
        ));
        self.new_streams.push(stream);
        Ok(())
    }

    fn change(
        &mut self,
        op: &OperatorState,
        subtask: i32,
        state: &str,
        action: ChangeAction,
    ) -> &mut Change {
        self.changes.push(Change {
            operator: op.hex_id(),
            subtask,
            state: state.to_string(),
            action,
            elements_before: 0,
            elements_after: 0,
            bytes_removed: 0,
            detail: String::new(),
        });
        self.changes.last_mut().expect("just pushed")
    }

    // -----------------------------------------------------------------------------------------
    // migrate-legacy

    fn migrate(
        &mut self,
        op: &mut OperatorState,
        enum_state_version: i32,
        parallelism: Option<i32>,
        offset_not_set: Option<i64>,
    ) -> Result<bool> {
        let legacy = JStr::new(LEGACY_STATE);
        let reader = JStr::new(SOURCE_READER_STATE);
        if !state_entries(op).iter().any(|e| match e {
            SubtaskEntry::State(_, s) => has_state(s, &legacy),
            SubtaskEntry::Finished(_) => false,
        }) {
            return Ok(false);
        }
        let id = op.hex_id();
        if !(1..=kafka::MAX_ENUM_STATE_VERSION).contains(&enum_state_version) {
            return Err(Error::InvalidArgument(format!(
                "Kafka enumerator state version {enum_state_version} cannot be written (1 to {})",
                kafka::MAX_ENUM_STATE_VERSION
            )));
        }
        if op.coordinator.is_some() {
            return Err(Error::InvalidArgument(format!(
                "operator {id} already has coordinator state (it is a FLIP-27 source, such as a \
                 KafkaSource): migrate-legacy turns a FlinkKafkaConsumer's state into a \
                 KafkaSource's; to drop the stale legacy state, use remove-state --state {LEGACY_STATE}"
            )));
        }
        let mut subtasks: BTreeMap<i32, (SubtaskState, Option<Taken>)> = BTreeMap::new();
        let mut legacy_offsets: BTreeMap<(String, i32), i64> = BTreeMap::new();
        let mut conflicts = Vec::new();
        for e in state_entries(op) {
            let (index, state) = match e {
                SubtaskEntry::State(i, s) => (*i, (**s).clone()),
                SubtaskEntry::Finished(i) => {
                    return Err(Error::InvalidArgument(format!(
                        "subtask {} of operator {id} has finished: a finished legacy source has \
                         no offsets to migrate",
                        -i - 1
                    )))
                }
            };
            let mut taken = match state.managed_operator() {
                Some(h) => Some(self.take(h)?),
                None => None,
            };
            if let Some(t) = &mut taken {
                if t.parts.states.iter().any(|s| s.name == reader) {
                    return Err(Error::InvalidArgument(format!(
                        "operator {id} already has '{SOURCE_READER_STATE}' (KafkaSource splits) \
                         beside '{LEGACY_STATE}': the job already runs a KafkaSource; drop the \
                         stale legacy state with remove-state --state {LEGACY_STATE}"
                    )));
                }
                if let Some(pos) = t.parts.states.iter().position(|s| s.name == legacy) {
                    let h = state.managed_operator().expect("taken from it");
                    // The name alone is not enough: pulsar-flink and others use it too.
                    if let Some((ty, at)) = legacy_element_type(&t.stream, h)
                        .map_err(|e| e.in_file(&t.location))?
                        .filter(|(ty, _)| !ty.is_kafka_legacy())
                    {
                        return Err(Error::Format {
                            file: t.location.clone(),
                            offset: at as u64,
                            expected: format!(
                                "a FlinkKafkaConsumer offset entry of '{LEGACY_STATE}' in the \
                                 state's serializer snapshot (elements {})",
                                elements::kafka_legacy_type()
                            ),
                            found: Some(format!(
                                "elements {ty}: not Kafka's, so operator {id} is not migrated"
                            )),
                        });
                    }
                    let part = t.parts.states.remove(pos);
                    let offsets = &h.states[pos].offsets;
                    let bytes: usize =
                        part.entry.len() + part.elements.iter().map(|e| e.len()).sum::<usize>();
                    for (j, e) in part.elements.iter().enumerate() {
                        let k = kafka::decode_legacy(e).ok_or_else(|| Error::Format {
                            file: t.location.clone(),
                            offset: offsets.get(j) as u64,
                            expected: format!(
                                "a FlinkKafkaConsumer offset entry of '{LEGACY_STATE}' (Kryo \
                                 KafkaTopicPartition, then the offset)"
                            ),
                            found: None,
                        })?;
                        match legacy_offsets.entry((k.topic.clone(), k.partition)) {
                            std::collections::btree_map::Entry::Vacant(v) => {
                                v.insert(k.offset);
                            }
                            std::collections::btree_map::Entry::Occupied(o) => {
                                if *o.get() != k.offset {
                                    conflicts.push(format!(
                                        "{}-{}: {} and {}",
                                        k.topic,
                                        k.partition,
                                        describe_legacy_offset(*o.get()),
                                        describe_legacy_offset(k.offset)
                                    ));
                                }
                            }
                        }
                    }
                    let c = self.change(op, index, LEGACY_STATE, ChangeAction::PurgeState);
                    c.elements_before = part.elements.len() as i64;
                    c.bytes_removed = bytes as i64;
                }
            }
            subtasks.insert(index, (state, taken));
        }
        if !conflicts.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "'{LEGACY_STATE}' of operator {id} holds different offsets for the same \
                 partition, so which one the job would restore is not defined: {}",
                conflicts.join("; ")
            )));
        }
        let mut splits: Vec<(KafkaOffset, i64)> = Vec::with_capacity(legacy_offsets.len());
        let mut unmappable = Vec::new();
        for ((topic, partition), legacy) in &legacy_offsets {
            match kafka::starting_offset_of_legacy(*legacy, offset_not_set) {
                Some(start) => splits.push((
                    KafkaOffset {
                        topic: topic.clone(),
                        partition: *partition,
                        offset: start,
                        stopping: NO_STOPPING_OFFSET,
                    },
                    *legacy,
                )),
                None => unmappable.push(format!(
                    "{topic}-{partition}: {}",
                    describe_legacy_offset(*legacy)
                )),
            }
        }
        if !unmappable.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "offsets of operator {id} that cannot be mapped onto a KafkaSource split: {} \
                 (OFFSET_NOT_SET, which the legacy consumer cannot restore either, maps only \
                 with --offset-not-set earliest|latest|committed; other negative values are not \
                 offsets the legacy consumer writes)",
                unmappable.join(", ")
            )));
        }
        let p = parallelism.unwrap_or(op.parallelism);
        if !(1..=MAX_PARALLELISM).contains(&p) || (op.max_parallelism > 0 && p > op.max_parallelism)
        {
            return Err(Error::InvalidArgument(format!(
                "parallelism {p} for operator {id}: it must be from 1 to its max parallelism {} \
                 (at most {MAX_PARALLELISM})",
                op.max_parallelism
            )));
        }
        let (template_delegate, proxy_version, compressed) = subtasks
            .values()
            .find_map(|(_, t)| {
                t.as_ref().map(|t| {
                    (
                        t.delegate.clone(),
                        t.parts.proxy_version,
                        t.parts.compressed,
                    )
                })
            })
            .expect("the legacy state is in a stream");
        let mut blank = subtasks.values().next().expect("a subtask").0.clone();
        blank.managed_operator = None;
        blank.raw_operator = None;
        blank.managed_keyed = None;
        blank.raw_keyed = None;
        blank.input_channels.clear();
        blank.output_channels.clear();
        // the new readers 0..p, and the old subtasks beyond them (which must hold nothing else)
        let mut indices: Vec<i32> = (0..p)
            .chain(subtasks.keys().copied().filter(|&i| i >= p))
            .collect();
        indices.sort_unstable();
        let mut entries = Vec::with_capacity(p as usize);
        for i in indices {
            let (mut state, taken) = subtasks.remove(&i).unwrap_or_else(|| (blank.clone(), None));
            let is_new = state.managed_operator.is_none();
            let (mut parts, delegate) = match taken {
                Some(t) => (t.parts, t.delegate),
                None => (
                    StreamParts {
                        proxy_version,
                        compressed,
                        states: Vec::new(),
                    },
                    template_delegate.clone(),
                ),
            };
            if i >= p {
                let others: Vec<String> = parts.states.iter().map(|s| s.name.to_string()).collect();
                if !others.is_empty()
                    || state.raw_operator().is_some()
                    || state.managed_keyed.is_some()
                    || state.raw_keyed.is_some()
                    || !state.input_channels.is_empty()
                    || !state.output_channels.is_empty()
                {
                    return Err(Error::InvalidArgument(format!(
                        "subtask {i} of operator {id} holds state besides the legacy offsets \
                         ({}); --parallelism {p} would drop it",
                        if others.is_empty() {
                            "raw, keyed or channel state".to_string()
                        } else {
                            others.join(", ")
                        }
                    )));
                }
                continue;
            }
            let mine: Vec<&(KafkaOffset, i64)> = splits
                .iter()
                .filter(|(s, _)| kafka::split_owner(&s.topic, s.partition, p) == i)
                .collect();
            parts.states.push(StatePart {
                name: reader.clone(),
                mode: Mode::SplitDistribute,
                kind: EntryKind::List,
                entry: opstate::byte_array_list_entry(SOURCE_READER_STATE),
                elements: mine
                    .iter()
                    .map(|(s, _)| Bytes::from(kafka::source_split_element(s)))
                    .collect(),
            });
            for (s, legacy) in &mine {
                let c = self.change(op, i, SOURCE_READER_STATE, ChangeAction::KafkaSplit);
                c.elements_after = 1;
                c.detail = format!(
                    "{}-{}: legacy offset {} -> starting offset {}",
                    s.topic,
                    s.partition,
                    describe_legacy_offset(*legacy),
                    describe_offset(s.offset)
                );
            }
            self.put(&mut state, &parts, &delegate, is_new.then_some(i))?;
            entries.push(SubtaskEntry::State(i, Box::new(state)));
        }
        let enum_state = EnumState {
            version: enum_state_version,
            coordinator_version: kafka::COORDINATOR_SERDE_VERSION,
            splits: splits.iter().map(|(s, _)| (s.clone(), ASSIGNED)).collect(),
            initial_discovery_finished: true,
        };
        let data = Bytes::from(kafka::encode_enum_state(&enum_state));
        let c = self.change(op, -1, "coordinator", ChangeAction::KafkaEnumerator);
        c.elements_after = splits.len() as i64;
        c.detail = format!(
            "KafkaSourceEnumState version {enum_state_version}: {} partitions ASSIGNED to {p} readers ({} bytes)",
            splits.len(),
            data.len()
        );
        op.coordinator = Some(StreamHandle::ByteStream {
            name: JStr::new(&(self.name_stream)()),
            data,
        });
        op.parallelism = p;
        op.subtasks = Subtasks::List(entries);
        Ok(true)
    }

    // -----------------------------------------------------------------------------------------
    // drop-topic and set-offsets

    /// Drops (`to` None) or moves the matching splits of one operator's readers and enumerator.
    fn edit_splits(
        &mut self,
        op: &mut OperatorState,
        topic: &str,
        partition: Option<i32>,
        to: Option<NewOffset>,
        any_operator: bool,
    ) -> Result<bool> {
        let reader = JStr::new(SOURCE_READER_STATE);
        let id = op.hex_id();
        let matches =
            |s: &KafkaOffset| s.topic == topic && partition.is_none_or(|p| p == s.partition);
        let new_offset = |s: &KafkaOffset, to: NewOffset| -> Result<i64> {
            match to {
                NewOffset::At(n) => Ok(n),
                NewOffset::Shift(d) if s.offset >= 0 => {
                    s.offset.checked_add(d).filter(|n| *n >= 0).ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "{}-{} starts at {}: shifting it by {d} gives no valid offset",
                            s.topic, s.partition, s.offset
                        ))
                    })
                }
                NewOffset::Shift(_) => Err(Error::InvalidArgument(format!(
                    "{}-{} starts at {}, not at a numeric offset: --shift cannot move it",
                    s.topic,
                    s.partition,
                    describe_offset(s.offset)
                ))),
            }
        };
        // Read every reader's splits first: nothing changes unless all of them are Kafka splits.
        let mut readers: Vec<(usize, Taken, usize, Vec<KafkaOffset>)> = Vec::new();
        let entries = state_entries(op);
        for (at, e) in entries.iter().enumerate() {
            let SubtaskEntry::State(_, s) = e else {
                continue;
            };
            if !has_state(s, &reader) {
                continue;
            }
            let h = s.managed_operator().expect("has the state");
            let t = self.take(h)?;
            let pos = t
                .parts
                .states
                .iter()
                .position(|x| x.name == reader)
                .expect("in the map");
            let offsets = &h.states[pos].offsets;
            let mut splits = Vec::with_capacity(t.parts.states[pos].elements.len());
            for (j, e) in t.parts.states[pos].elements.iter().enumerate() {
                match kafka::decode_source_split(e) {
                    Some(k) => splits.push(k),
                    None if any_operator => return Ok(false),
                    None => {
                        return Err(Error::Format {
                            file: t.location.clone(),
                            offset: offsets.get(j) as u64,
                            expected: format!(
                                "a KafkaSource split in '{SOURCE_READER_STATE}' of operator {id} \
                                 (KafkaPartitionSplitSerializer version 0); this is not a Kafka source"
                            ),
                            found: None,
                        })
                    }
                }
            }
            readers.push((at, t, pos, splits));
        }
        let has_splits = readers.iter().any(|r| !r.3.is_empty());
        let enum_state = match &op.coordinator {
            Some(c) => {
                let bytes = self.cp.stream_bytes(c)?;
                match kafka::decode_enum_state(&bytes) {
                    Ok(s) => Some(s),
                    Err(e) if has_splits || !any_operator => {
                        return Err(e.in_file(&format!("coordinator state of operator {id}")))
                    }
                    Err(_) => None,
                }
            }
            None => None,
        };
        if !has_splits && enum_state.is_none() {
            if any_operator {
                return Ok(false);
            }
            return Err(Error::InvalidArgument(format!(
                "operator {id} has no KafkaSource state (no Kafka splits in '{SOURCE_READER_STATE}', \
                 no Kafka enumerator state)"
            )));
        }
        if enum_state
            .as_ref()
            .is_some_and(|s| s.coordinator_version == 0)
        {
            return Err(Error::Unsupported {
                file: format!("coordinator state of operator {id}"),
                offset: 0,
                what: "source coordinator serde version 0 (Flink 1.14 or earlier; restore the job \
                       with Flink 1.15+ and take a new savepoint)"
                    .into(),
            });
        }
        let mut hit = false;
        let mut moved: HashMap<(String, i32), i64> = HashMap::new();
        let mut edits: Vec<(usize, StreamParts, StreamHandle)> = Vec::new();
        for (at, t, pos, splits) in readers {
            let index = match &entries[at] {
                SubtaskEntry::State(i, _) => *i,
                SubtaskEntry::Finished(i) => *i,
            };
            let mut parts = t.parts;
            let before = splits.len();
            let mut elements = Vec::with_capacity(before);
            let mut details = Vec::new();
            for (k, e) in splits.iter().zip(&parts.states[pos].elements) {
                if !matches(k) {
                    elements.push(e.clone());
                    continue;
                }
                hit = true;
                match to {
                    None => details.push(format!(
                        "{}-{} dropped (starting offset {})",
                        k.topic,
                        k.partition,
                        describe_offset(k.offset)
                    )),
                    Some(to) => {
                        let n = new_offset(k, to)?;
                        moved.insert((k.topic.clone(), k.partition), n);
                        details.push(format!(
                            "{}-{}: starting offset {} -> {}",
                            k.topic,
                            k.partition,
                            describe_offset(k.offset),
                            describe_offset(n)
                        ));
                        let new = KafkaOffset {
                            offset: n,
                            ..k.clone()
                        };
                        elements.push(Bytes::from(kafka::source_split_element(&new)));
                    }
                }
            }
            if details.is_empty() {
                continue;
            }
            let removed: i64 = parts.states[pos]
                .elements
                .iter()
                .map(|e| e.len() as i64)
                .sum::<i64>()
                - elements.iter().map(|e| e.len() as i64).sum::<i64>();
            parts.states[pos].elements = elements;
            let c = self.change(
                op,
                index,
                SOURCE_READER_STATE,
                if to.is_none() {
                    ChangeAction::KafkaDropSplit
                } else {
                    ChangeAction::KafkaSetOffset
                },
            );
            c.elements_before = before as i64;
            c.elements_after = parts.states[pos].elements.len() as i64;
            c.bytes_removed = removed;
            c.detail = details.join("; ");
            edits.push((at, parts, t.delegate));
        }
        let mut new_enum = None;
        if let Some(mut s) = enum_state {
            let before = s.splits.len();
            let mut details = Vec::new();
            let mut kept = Vec::with_capacity(before);
            for (k, status) in s.splits.drain(..) {
                if !matches(&k) {
                    kept.push((k, status));
                    continue;
                }
                hit = true;
                match to {
                    None => details.push(format!("{}-{} dropped", k.topic, k.partition)),
                    Some(_) if s.version < 3 => kept.push((k, status)),
                    Some(to) => {
                        let n = match moved.get(&(k.topic.clone(), k.partition)) {
                            Some(n) => *n,
                            None => match new_offset(&k, to) {
                                Ok(n) => n,
                                Err(_) => k.offset,
                            },
                        };
                        if n != k.offset {
                            details.push(format!(
                                "{}-{}: {} -> {}",
                                k.topic,
                                k.partition,
                                describe_offset(k.offset),
                                describe_offset(n)
                            ));
                        }
                        kept.push((KafkaOffset { offset: n, ..k }, status));
                    }
                }
            }
            s.splits = kept;
            if !details.is_empty() {
                let c = self.change(op, -1, "coordinator", ChangeAction::KafkaEnumerator);
                c.elements_before = before as i64;
                c.elements_after = s.splits.len() as i64;
                c.detail = format!(
                    "KafkaSourceEnumState version {}: {}",
                    s.version,
                    details.join("; ")
                );
                new_enum = Some(s);
            }
        }
        if !hit {
            return if any_operator {
                Ok(false)
            } else {
                Err(Error::NothingSelected(format!(
                    "{} is not in the KafkaSource state of operator {id}",
                    partitions_text(topic, partition)
                )))
            };
        }
        let Subtasks::List(list) = &mut op.subtasks else {
            unreachable!("readers came from a subtask list")
        };
        for (at, parts, delegate) in edits {
            let SubtaskEntry::State(_, state) = &mut list[at] else {
                unreachable!("readers are subtask states")
            };
            self.put(state, &parts, &delegate, None)?;
        }
        if let Some(s) = new_enum {
            let name = match &op.coordinator {
                Some(StreamHandle::ByteStream { name, .. }) => name.clone(),
                _ => JStr::new(&(self.name_stream)()),
            };
            op.coordinator = Some(StreamHandle::ByteStream {
                name,
                data: Bytes::from(kafka::encode_enum_state(&s)),
            });
        }
        Ok(true)
    }
}
