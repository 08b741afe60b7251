//! What a checkpoint holds and how big it is: the inspection report (`wire` carries it to
//! `InspectReport`).

use crate::codec::elements::ElementType;
use crate::codec::handles::{KeyedHandle, Offsets, OperatorHandle, StreamHandle};
use crate::codec::kafka::{self, Decoder, KafkaOffset};
use crate::codec::metadata::Subtasks;
use crate::codec::metainfo::EntryKind;
use crate::codec::StreamSource;
use crate::codec::{longs, opstate, snappy};
use crate::commit::mapguard;
use crate::Result;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub source: String,
    pub version: i32,
    pub checkpoint_id: i64,
    pub metadata_bytes: u64,
    pub properties_bytes: u64,
    pub master_states: Vec<(String, i32, u64)>,
    pub operators: Vec<OperatorReport>,
}

/// How much of an operator's coordinator state the report carries.
pub const COORDINATOR_HEAD: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub struct OperatorReport {
    pub id: String,
    pub name: String,
    pub uid: String,
    pub parallelism: i32,
    pub max_parallelism: i32,
    pub coordinator_bytes: i64,
    /// The first [`COORDINATOR_HEAD`] bytes of the coordinator state (empty if none or unreadable),
    /// for recognising a source's enumerator state by its layout.
    pub coordinator_head: Vec<u8>,
    pub fully_finished: bool,
    pub finished_subtasks: i32,
    /// A KafkaSource's enumerator state, decoded from the coordinator state.
    pub kafka_enumerator: Option<KafkaEnumReport>,
    pub subtasks: Vec<SubtaskReport>,
}

/// A KafkaSource's enumerator state: the partitions it assigned or has yet to assign.
#[derive(Clone, Debug, PartialEq)]
pub struct KafkaEnumReport {
    /// The `KafkaSourceEnumStateSerializer` version (-1 if the header could not be read).
    pub version: i32,
    /// Why the state could not be decoded; empty if it was.
    pub error: String,
    pub initial_discovery_finished: bool,
    /// Each partition's split (offsets only in version 3) and its assignment status.
    pub splits: Vec<(KafkaOffset, i32)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SubtaskReport {
    pub index: i32,
    pub managed_operator: Option<HandleReport>,
    pub raw_operator: Option<HandleReport>,
    pub managed_keyed: Option<(String, i64)>,
    pub raw_keyed: Option<(String, i64)>,
    pub input_channels: i32,
    pub output_channels: i32,
    pub channel_bytes: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HandleReport {
    pub kind: String,
    pub delegate_kind: String,
    pub location: String,
    pub delegate_size: i64,
    pub inline: bool,
    pub proxy_version: i32,
    pub compressed: bool,
    /// Why the stream could not be read (missing file, remote file system, ...); empty if read.
    pub stream_error: String,
    pub header_bytes: i64,
    pub states: Vec<StateReport>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StateReport {
    pub name: String,
    pub mode: String,
    pub elements: i64,
    /// Bytes of the state's elements in the stream; -1 when the stream was not read.
    pub bytes: i64,
    pub serializer: String,
    /// The element type its VALUE_SERIALIZER snapshot names (`Tuple2<String, Long>`); empty when
    /// the stream was not read.
    pub element_type: String,
    /// Distinct element values in this handle (-1 when the stream was not read).
    pub distinct: i64,
    /// An order-independent digest of the element values: equal multisets give equal digests.
    pub digest: i64,
    /// Kafka source states: the distinct (topic, partition, offset) values and how often each
    /// occurs (at most `MAX_KAFKA_OFFSETS` of them).
    pub kafka: Vec<(crate::codec::kafka::KafkaOffset, u64)>,
}

const MAX_KAFKA_OFFSETS: usize = 10_000;

/// The report of a checkpoint. The operator-state streams are unmapped on a thread of their own
/// after use, while the report goes on (unmapping hundreds of MB of pages takes ~15 ms).
pub fn inspect(cp: &(dyn StreamSource + Sync)) -> Report {
    let (unmap, unmapped) = std::sync::mpsc::channel::<Box<dyn Send>>();
    std::thread::spawn(move || unmapped.into_iter().for_each(drop));
    report(cp, &Unmap(unmap))
}

/// Where streams (and what holds slices of them) go once read: to the unmapping thread.
struct Unmap(std::sync::mpsc::Sender<Box<dyn Send>>);

impl Unmap {
    fn done(&self, x: impl Send + 'static) {
        if let Err(back) = self.0.send(Box::new(x)) {
            drop(back.0);
        }
    }
}

fn report(cp: &(dyn StreamSource + Sync), unmap: &Unmap) -> Report {
    let md = cp.metadata();
    let mut handles = handle_reports(cp, unmap).into_iter();
    let mut next_handle = || handles.next().expect("a report for every operator handle");
    let report = Report {
        source: cp.name(),
        version: md.version,
        checkpoint_id: md.checkpoint_id,
        metadata_bytes: cp.metadata_len(),
        properties_bytes: md.properties.len() as u64,
        master_states: md
            .master_states
            .iter()
            .map(|m| (m.name.to_string(), m.version, m.payload.len() as u64))
            .collect(),
        operators: md
            .operators
            .iter()
            .map(|op| {
                let subtasks: Vec<SubtaskReport> = op
                    .subtask_states()
                    .map(|(index, s)| SubtaskReport {
                        index,
                        managed_operator: s.managed_operator().map(|_| next_handle()),
                        raw_operator: s.raw_operator().map(|_| next_handle()),
                        managed_keyed: s.managed_keyed.as_ref().map(keyed_report),
                        raw_keyed: s.raw_keyed.as_ref().map(keyed_report),
                        input_channels: s.input_channels.len() as i32,
                        output_channels: s.output_channels.len() as i32,
                        channel_bytes: s
                            .input_channels
                            .iter()
                            .chain(&s.output_channels)
                            .map(|c| c.size)
                            .sum(),
                    })
                    .collect();
                OperatorReport {
                    id: op.hex_id(),
                    name: op.name.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                    uid: op.uid.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                    parallelism: op.parallelism,
                    max_parallelism: op.max_parallelism,
                    coordinator_bytes: op.coordinator.as_ref().map_or(-1, |c| c.state_size()),
                    coordinator_head: op
                        .coordinator
                        .as_ref()
                        .and_then(|c| cp.stream_bytes(c).ok())
                        .map(|b| b[..b.len().min(COORDINATOR_HEAD)].to_vec())
                        .unwrap_or_default(),
                    fully_finished: op.subtasks == Subtasks::FullyFinished,
                    finished_subtasks: match &op.subtasks {
                        Subtasks::FullyFinished => op.parallelism,
                        Subtasks::List(l) => l
                            .iter()
                            .filter(|e| {
                                matches!(e, crate::codec::metadata::SubtaskEntry::Finished(_))
                            })
                            .count() as i32,
                    },
                    kafka_enumerator: kafka_enumerator(cp, op, &subtasks),
                    subtasks,
                }
            })
            .collect(),
    };
    report
}

/// The report of every operator-state handle, in the order [`report`] takes them: each handle's
/// stream is read on one of up to [`WORKERS`] threads, this one included (reading the streams is
/// most of inspect's time, and bound by memory and page mapping, not by one core). A file that
/// shrinks while a helper reads it faults on that helper: the fault is handed to this thread, so
/// that the call fails as it would have here (`mapguard`).
fn handle_reports(cp: &(dyn StreamSource + Sync), unmap: &Unmap) -> Vec<HandleReport> {
    let handles: Vec<&OperatorHandle> = cp
        .metadata()
        .operators
        .iter()
        .flat_map(|op| op.subtask_states())
        .flat_map(|(_, s)| s.managed_operator().into_iter().chain(s.raw_operator()))
        .collect();
    let (seen, next) = (Mutex::new(Seen::default()), AtomicUsize::new(0));
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&h) = handles.get(i) else {
                return done;
            };
            done.push((i, handle_report(cp, h, &seen, unmap)));
        }
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(WORKERS));
    let mut done = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..workers.min(handles.len()))
            .map(|_| {
                s.spawn(|| {
                    let done = work();
                    (done, mapguard::take())
                })
            })
            .collect();
        let mut done = work();
        for helper in helpers {
            let (theirs, fault) = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            mapguard::adopt(fault);
            done.extend(theirs);
        }
        done
    });
    unmap.done(seen.into_inner().unwrap_or_else(|p| p.into_inner()));
    done.sort_unstable_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

/// Threads that read operator-state streams at once (memory bandwidth, not cores, bounds them).
const WORKERS: usize = 4;

/// The enumerator state of a KafkaSource: decoded when the readers hold Kafka splits, or when
/// the coordinator state decodes as a Kafka enumerator state with at least one partition.
fn kafka_enumerator(
    cp: &dyn StreamSource,
    op: &crate::codec::metadata::OperatorState,
    subtasks: &[SubtaskReport],
) -> Option<KafkaEnumReport> {
    let coordinator = op.coordinator.as_ref()?;
    let kafka_readers = subtasks
        .iter()
        .filter_map(|s| s.managed_operator.as_ref())
        .flat_map(|h| &h.states)
        .any(|s| s.name == kafka::SOURCE_READER_STATE && !s.kafka.is_empty());
    let decoded = cp
        .stream_bytes(coordinator)
        .and_then(|b| kafka::decode_enum_state(&b));
    match decoded {
        Ok(s) if kafka_readers || !s.splits.is_empty() => Some(KafkaEnumReport {
            version: s.version,
            error: String::new(),
            initial_discovery_finished: s.initial_discovery_finished,
            splits: s.splits,
        }),
        Err(e) if kafka_readers => Some(KafkaEnumReport {
            version: -1,
            error: e.to_string(),
            initial_discovery_finished: false,
            splits: Vec::new(),
        }),
        _ => None,
    }
}

/// What inspect reports of a state's elements in one handle.
#[derive(Clone)]
struct ElementValues {
    bytes: i64,
    distinct: i64,
    digest: i64,
    kafka: Vec<(KafkaOffset, u64)>,
}

impl ElementValues {
    /// One pass over the elements: their bytes, their digest, and their distinct values with how
    /// often each occurs, from which the Kafka offsets are decoded (once per distinct value).
    fn of(kafka: Option<Decoder>, stream: &[u8], elements: Elements) -> ElementValues {
        let element = |i: usize| {
            let (a, b) = elements.range(i);
            &stream[a as usize..b as usize]
        };
        let (mut bytes, mut digest) = (0u64, 0u64);
        let mut table = Some(DistinctTable::default());
        for i in 0..elements.len() {
            let e = element(i);
            bytes += e.len() as u64;
            let h = element_hash(e);
            digest = digest.wrapping_add(h);
            if table.as_mut().is_some_and(|t| !t.add(h, i, e, element)) {
                table = None; // too many distinct values for the table: sorted below
            }
        }
        let distinct = match table {
            Some(t) => t.values(),
            None => distinct_by_sorting(elements.len(), element),
        };
        ElementValues {
            bytes: bytes as i64,
            distinct: distinct.len() as i64,
            digest: digest as i64,
            kafka: kafka.map_or_else(Vec::new, |d| {
                kafka_offsets(d, distinct.iter().map(|&(i, n)| (element(i), n)))
            }),
        }
    }
}

impl ElementValues {
    /// The values of `k` copies of these elements.
    fn times(mut self, k: u64) -> ElementValues {
        self.bytes *= k as i64;
        self.digest = self.digest.wrapping_mul(k as i64);
        for (_, n) in &mut self.kafka {
            *n *= k;
        }
        self
    }
}

/// The elements at `offsets` (the last ending at `end`) as copies of a first one: a union state
/// restored into every subtask and written back is k copies of what was restored, again and again.
/// The first copy's offsets and end, and the number of copies (1: none).
fn first_copy(stream: &[u8], offsets: &Offsets, end: u64) -> (Offsets, u64, u64) {
    if let Some(found) = probed_copy(stream, offsets, end) {
        return found;
    }
    let (mut part, mut part_end, mut copies) = (offsets.clone(), end, 1u64);
    while let Some((k, shorter, e)) = repeated(stream, &part, part_end) {
        (part, part_end, copies) = (shorter, e, copies * k as u64);
    }
    (part, part_end, copies)
}

/// How many bytes of two copies [`probed_copy`] compares to guess that a block is made of copies.
const PROBE: u64 = 4096;

/// The first copy that cheap probes point to, proven in one pass over the offsets and the block:
/// narrowed by factors k as [`repeated`] would (the offset n / k apart, the first [`PROBE`] bytes
/// of two copies), then every offset checked to be `m` before one `p` bytes on, and the block
/// equal to itself shifted by `p` (a lag that stays in cache: each byte is read from memory once,
/// where the search by factors reads the block twice per level). None when the guess is wrong
/// (the search by factors decides then); `(offsets, end, 1)` when no factor passes the probes,
/// which [`repeated`] checks too.
fn probed_copy(stream: &[u8], offsets: &Offsets, end: u64) -> Option<(Offsets, u64, u64)> {
    let n = offsets.len();
    let start = offsets.get(0) as u64;
    let len = end.checked_sub(start)?;
    let block = &stream[start as usize..end as usize];
    let (mut m, mut p) = (n, len);
    while let Some(k) = (2..=m.min(64)).find(|&k| {
        let (mk, pk) = (m / k, p / k as u64);
        let q = pk.min(PROBE) as usize;
        m.is_multiple_of(k)
            && p.is_multiple_of(k as u64)
            && offsets.get(mk) as u64 == start + pk
            && block[..q] == block[pk as usize..pk as usize + q]
    }) {
        (m, p) = (m / k, p / k as u64);
    }
    if m == n {
        return Some((offsets.clone(), end, 1));
    }
    let p_at = p as usize;
    (longs::shifted_by(&offsets.0, m, p) && block[..block.len() - p_at] == block[p_at..])
        .then(|| (Offsets(offsets.0.slice(..m * 8)), start + p, (n / m) as u64))
}

/// Whether the elements at `offsets` (the last ending at `end`) are `k` copies of their first
/// `n / k` for some k from 2 to 64: the offsets `n / k` apart differ by a `k`-th of the block, and
/// the block equals itself shifted by that much. Then k, the first copy's offsets and its end.
fn repeated(stream: &[u8], offsets: &Offsets, end: u64) -> Option<(usize, Offsets, u64)> {
    let n = offsets.len();
    let start = offsets.get(0) as u64;
    let len = end.checked_sub(start)?;
    (2..=n.min(64)).find_map(|k| {
        let (m, p) = (n / k, len / k as u64);
        if !n.is_multiple_of(k)
            || !len.is_multiple_of(k as u64)
            || offsets.get(m) as u64 != start + p
        {
            return None;
        }
        let o = &offsets.0;
        let block = &stream[start as usize..end as usize];
        (longs::shifted_by(o, m, p) && block[..block.len() - p as usize] == block[p as usize..])
            .then(|| (k, Offsets(o.slice(..m * 8)), start + p))
    })
}

/// The elements of one state: each one's byte range in its stream, by index.
#[derive(Clone, Copy)]
enum Elements<'a> {
    /// Flink's layout: element i runs from offset i to offset i + 1, the last one to the end of
    /// the state's block (no range is materialised: a union state can have millions).
    Offsets(&'a Offsets, u64),
    Ranges(&'a [(u64, u64)]),
}

impl Elements<'_> {
    fn len(&self) -> usize {
        match self {
            Elements::Offsets(o, _) => o.len(),
            Elements::Ranges(r) => r.len(),
        }
    }

    fn range(&self, i: usize) -> (u64, u64) {
        match self {
            Elements::Offsets(o, end) => (
                o.get(i) as u64,
                if i + 1 < o.len() {
                    o.get(i + 1) as u64
                } else {
                    *end
                },
            ),
            Elements::Ranges(r) => r[i],
        }
    }
}

/// The distinct values of a state while they are few (a union state restored into every subtask
/// holds a few values many times): an open-addressing table of (hash, an element holding the
/// value, count), small enough to stay in cache; equal hashes are told apart by the bytes.
#[derive(Default)]
struct DistinctTable {
    slots: Vec<(u64, usize, u64)>,
    used: usize,
}

/// Beyond this many distinct values, they are counted by sorting the hashes instead.
const TABLE_MAX_DISTINCT: usize = 1 << 16;

impl DistinctTable {
    /// Counts element `i` (bytes `e`, hash `h`); false when the table is full.
    fn add<'s>(&mut self, h: u64, i: usize, e: &[u8], element: impl Fn(usize) -> &'s [u8]) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0, 0); 64];
        }
        let mask = self.slots.len() - 1;
        let mut at = h as usize & mask;
        loop {
            let slot = &mut self.slots[at];
            if slot.2 == 0 {
                if self.used == TABLE_MAX_DISTINCT {
                    return false;
                }
                *slot = (h, i, 1);
                self.used += 1;
                if self.used * 2 > self.slots.len() {
                    self.grow();
                }
                return true;
            }
            if slot.0 == h && element(slot.1) == e {
                slot.2 += 1;
                return true;
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![(0, 0, 0); size]);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s.2 > 0) {
            let mut at = slot.0 as usize & mask;
            while self.slots[at].2 > 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }

    /// Each distinct value: an element that holds it, and how many do.
    fn values(self) -> Vec<(usize, u64)> {
        self.slots
            .into_iter()
            .filter(|s| s.2 > 0)
            .map(|(_, i, n)| (i, n))
            .collect()
    }
}

/// Each distinct value of `n` elements (an element that holds it, and how many do), by sorting
/// their 64-bit hashes and comparing the bytes of equal hashes: exact, and without a set, whose
/// cache misses dominate with millions of distinct values.
fn distinct_by_sorting<'s>(n: usize, element: impl Fn(usize) -> &'s [u8]) -> Vec<(usize, u64)> {
    let mut hashes: Vec<(u64, u32)> = (0..n as u32)
        .map(|i| (element_hash(element(i as usize)), i))
        .collect();
    hashes.sort_unstable();
    let mut out = Vec::new();
    for run in hashes.chunk_by_mut(|x, y| x.0 == y.0) {
        if run.len() > 1 {
            run.sort_unstable_by(|x, y| element(x.1 as usize).cmp(element(y.1 as usize)));
        }
        for same in run.chunk_by(|x, y| element(x.1 as usize) == element(y.1 as usize)) {
            out.push((same[0].1 as usize, same.len() as u64));
        }
    }
    out
}

/// The element values of the states already inspected, by content. A union state is restored
/// whole into every subtask, and every subtask snapshots it again, so the same elements appear
/// once per subtask: a state whose block of elements is byte-identical to one seen before (same
/// bytes, same relative offsets) takes that one's values after a `memcmp`, instead of being
/// hashed, sorted and decoded again.
#[derive(Default)]
struct Seen {
    by_shape: HashMap<ShapeKey, Vec<Arc<SeenState>>>,
}

/// A state's name, whether its elements are decoded as Kafka offsets, its element count and the
/// length of its block.
type ShapeKey = (String, bool, usize, u64);

struct SeenState {
    block: bytes::Bytes,
    start: u64,
    offsets: Offsets,
    values: ElementValues,
}

impl SeenState {
    fn matches(&self, block: &[u8], start: u64, offsets: &Offsets) -> bool {
        self.block[..] == *block
            && if self.start == start {
                // the usual case: the same header before the state, the same offsets
                self.offsets.0 == offsets.0
            } else {
                self.offsets
                    .iter()
                    .zip(offsets.iter())
                    .all(|(a, b)| a as u64 - self.start == b as u64 - start)
            }
    }
}

impl Seen {
    /// The values of every state of a handle whose stream is uncompressed, in state order. With
    /// Flink's layout (`blocks`: one block per state, ascending offsets, checked by the header's
    /// parse), a block that is k copies of its first k-th is reduced to that first copy, which is
    /// then looked up among the states seen before (a `memcmp` of the copy, not of the block: each
    /// subtask's block is read once, by the shifted compare), or counted.
    fn handle_values(
        seen: &Mutex<Seen>,
        h: &OperatorHandle,
        stream: &bytes::Bytes,
        blocks: Option<&opstate::Blocks>,
        kafka: &[Option<Decoder>],
    ) -> Result<Vec<ElementValues>> {
        let len = stream.len() as u64;
        let mut ranges = None;
        let mut out = Vec::with_capacity(h.states.len());
        for (i, st) in h.states.iter().enumerate() {
            let Some((start, end)) = blocks.as_ref().and_then(|b| b[i]) else {
                if ranges.is_none() {
                    ranges = Some(opstate::element_ranges(h, len)?);
                }
                let ranges = &ranges.as_ref().expect("just set")[i];
                out.push(ElementValues::of(
                    kafka[i],
                    stream,
                    Elements::Ranges(ranges),
                ));
                continue;
            };
            let (part, part_end, copies) = first_copy(stream, &st.offsets, end);
            let key = (
                st.name.to_string(),
                kafka[i].is_some(),
                part.len(),
                part_end - start,
            );
            let bytes = &stream[start as usize..part_end as usize];
            // compared outside the lock (a block can be megabytes); a new block is counted under
            // it, after a look at what other threads added meanwhile, so that a thread meeting the
            // same new block waits and takes its values instead of counting it again
            let lock = || seen.lock().unwrap_or_else(|p| p.into_inner());
            let find = |cs: &[Arc<SeenState>]| {
                cs.iter()
                    .find(|c| c.matches(bytes, start, &part))
                    .map(|c| c.values.clone())
            };
            let candidates = lock().by_shape.get(&key).cloned().unwrap_or_default();
            let values = match find(&candidates) {
                Some(v) => v,
                None => {
                    let mut held = lock();
                    let added = held
                        .by_shape
                        .get(&key)
                        .map_or(&[][..], |c| &c[candidates.len()..]);
                    match find(added) {
                        Some(v) => v,
                        None => {
                            let values = ElementValues::of(
                                kafka[i],
                                stream,
                                Elements::Offsets(&part, part_end),
                            );
                            held.by_shape
                                .entry(key)
                                .or_default()
                                .push(Arc::new(SeenState {
                                    block: stream.slice(start as usize..part_end as usize),
                                    start,
                                    offsets: part.clone(),
                                    values: values.clone(),
                                }));
                            values
                        }
                    }
                }
            };
            out.push(values.times(copies));
        }
        Ok(out)
    }
}

/// The values of every state of a compressed stream, from what the elements' frames hold (their
/// stored size stays unreported): None for a state whose elements share frames (Flink 1.18) and
/// whose serializer's element layout the tool does not know.
fn compressed_values(
    h: &OperatorHandle,
    stream: &bytes::Bytes,
    header: &opstate::StreamHeader,
    kafka: &[Option<Decoder>],
) -> Result<Vec<Option<ElementValues>>> {
    let ranges = opstate::stream_element_ranges(header, h, stream.len() as u64)?;
    let mut out = Vec::with_capacity(h.states.len());
    for ((st, ranges), decode) in h.states.iter().zip(ranges).zip(kafka) {
        let decoded = if opstate::shares_offsets(&st.offsets) {
            opstate::framed_elements(stream, header, st).map(|fe| {
                let ranges = fe.elements.iter().map(|&(a, b)| (a as u64, b as u64));
                (fe.bytes, ranges.collect())
            })
        } else {
            decode_each(stream, &ranges)
        };
        out.push(match decoded {
            Ok((bytes, ranges)) => Some(ElementValues::of(
                *decode,
                &bytes,
                Elements::Ranges(&ranges),
            )),
            Err(crate::error::Error::Unsupported { .. }) => None,
            Err(e) => return Err(e),
        });
    }
    Ok(out)
}

/// Elements' bytes one after another, and each element's range in them.
type Decoded = (Vec<u8>, Vec<(u64, u64)>);

/// The bytes of each element's frames, one after another, and each element's range in them.
fn decode_each(stream: &[u8], ranges: &[(u64, u64)]) -> Result<Decoded> {
    let (mut bytes, mut decoded) = (Vec::new(), Vec::with_capacity(ranges.len()));
    for &(a, b) in ranges {
        let d = snappy::decode_until_identifier(&stream[..b as usize], a as usize)?;
        decoded.push((bytes.len() as u64, (bytes.len() + d.bytes.len()) as u64));
        bytes.extend_from_slice(&d.bytes);
    }
    Ok((bytes, decoded))
}

/// A 64-bit hash of an element's bytes, eight bytes at a time (the per-element cost of inspect:
/// a byte-wise FNV and SipHash in the set took 75 % of its time on a union state of 8 M elements).
fn element_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // MurmurHash3's finaliser: every input bit reaches every output bit, so that both the set's
    // bucket index (low bits) and control byte (top bits) depend on every byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The Kafka offsets of a state's distinct values, each with how many elements hold it (at most
/// `MAX_KAFKA_OFFSETS` of them).
fn kafka_offsets<'s>(
    decode: Decoder,
    distinct: impl Iterator<Item = (&'s [u8], u64)>,
) -> Vec<(crate::codec::kafka::KafkaOffset, u64)> {
    let mut counts: std::collections::BTreeMap<crate::codec::kafka::KafkaOffset, u64> =
        Default::default();
    for (e, n) in distinct {
        if let Some(k) = decode(e) {
            if counts.len() < MAX_KAFKA_OFFSETS || counts.contains_key(&k) {
                *counts.entry(k).or_default() += n;
            }
        }
    }
    counts.into_iter().collect()
}

fn keyed_report(h: &KeyedHandle) -> (String, i64) {
    (h.kind().to_string(), h.state_size())
}

fn location(h: &StreamHandle) -> String {
    match h {
        StreamHandle::ByteStream { name, .. } => name.to_string(),
        StreamHandle::File { path, .. } | StreamHandle::RelativeFile { path, .. } => {
            path.to_string()
        }
        StreamHandle::Segment {
            start, size, path, ..
        } => format!("{path}@{start}+{size}"),
        StreamHandle::KeyGroups(_) | StreamHandle::EmptySegment => String::new(),
    }
}

fn handle_report(
    cp: &dyn StreamSource,
    h: &OperatorHandle,
    seen: &Mutex<Seen>,
    unmap: &Unmap,
) -> HandleReport {
    let mut r = HandleReport {
        kind: h.kind().to_string(),
        delegate_kind: h.delegate.as_ref().map_or("null", |d| d.kind()).to_string(),
        location: h.delegate.as_ref().map(location).unwrap_or_default(),
        delegate_size: h.delegate.as_ref().map_or(0, |d| d.state_size()),
        inline: matches!(h.delegate, Some(StreamHandle::ByteStream { .. })),
        proxy_version: -1,
        compressed: false,
        stream_error: String::new(),
        header_bytes: -1,
        states: h
            .states
            .iter()
            .map(|s| StateReport {
                name: s.name.to_string(),
                mode: s.mode.name().to_string(),
                elements: s.offsets.len() as i64,
                bytes: -1,
                serializer: String::new(),
                element_type: String::new(),
                distinct: -1,
                digest: 0,
                kafka: Vec::new(),
            })
            .collect(),
    };
    let Some(delegate) = &h.delegate else {
        return r;
    };
    let stream = match cp.stream_bytes(delegate) {
        Ok(s) => s,
        Err(e) => {
            r.stream_error = e.to_string();
            return r;
        }
    };
    let name = location(delegate);
    match opstate::parse_header(&stream, h) {
        Ok(header) => {
            r.proxy_version = header.proxy_version;
            r.compressed = header.compressed;
            r.header_bytes = header.data_start as i64;
            let mut kafka = Vec::with_capacity(h.states.len());
            for (s, report) in h.states.iter().zip(r.states.iter_mut()) {
                let mut decode = None;
                if let Some(e) = header.entry(&s.name) {
                    report.serializer = e
                        .serializers
                        .iter()
                        .find(|x| x.key.as_bytes() == b"VALUE_SERIALIZER")
                        .or(e.serializers.first())
                        .map(|x| x.class_name.to_string())
                        .unwrap_or_default();
                    if e.kind == EntryKind::List {
                        if let Ok((t, _)) = ElementType::read_entry(&stream, e) {
                            report.element_type = t.to_string();
                            decode = kafka::decoder(&report.name, &t);
                        }
                    }
                }
                kafka.push(decode);
            }
            if !header.compressed {
                match Seen::handle_values(seen, h, &stream, header.blocks.as_ref(), &kafka) {
                    Ok(values) => {
                        for (report, v) in r.states.iter_mut().zip(values) {
                            report.bytes = v.bytes;
                            report.distinct = v.distinct;
                            report.digest = v.digest;
                            report.kafka = v.kafka;
                        }
                    }
                    Err(e) => r.stream_error = e.in_file(&name).to_string(),
                }
            } else {
                match compressed_values(h, &stream, &header, &kafka) {
                    Ok(values) => {
                        for (report, v) in r.states.iter_mut().zip(values) {
                            if let Some(v) = v {
                                report.distinct = v.distinct;
                                report.digest = v.digest;
                                report.kafka = v.kafka;
                            }
                        }
                    }
                    Err(e) => r.stream_error = e.in_file(&name).to_string(),
                }
            }
        }
        Err(e) => r.stream_error = e.in_file(&name).to_string(),
    }
    unmap.done(stream);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements of every length from 0 to 40 bytes, many repeated: the distinct count is what a
    /// plain set of the byte strings says, and the digest does not depend on the order.
    #[test]
    fn distinct_count_is_exact_and_digest_is_order_independent() {
        let mut stream = Vec::new();
        let mut ranges = Vec::new();
        for i in 0..5000u32 {
            let len = (i * 7 % 41) as usize;
            let start = stream.len() as u64;
            stream.extend((0..len).map(|k| ((i % 613) as usize * 31 + k) as u8));
            ranges.push((start, stream.len() as u64));
        }
        let naive: std::collections::HashMap<&[u8], u64> =
            ranges.iter().fold(Default::default(), |mut m, &(a, b)| {
                *m.entry(&stream[a as usize..b as usize]).or_default() += 1;
                m
            });
        let values =
            |ranges: &[(u64, u64)]| ElementValues::of(None, &stream, Elements::Ranges(ranges));
        let v = values(&ranges);
        assert_eq!(v.distinct, naive.len() as i64);
        assert!(v.distinct < ranges.len() as i64);
        // counted by sorting, the same distinct values with the same counts
        let element = |i: usize| &stream[ranges[i].0 as usize..ranges[i].1 as usize];
        let sorted = distinct_by_sorting(ranges.len(), element);
        assert_eq!(sorted.len(), naive.len());
        for (i, n) in sorted {
            assert_eq!(naive[element(i)], n);
        }
        let mut reversed = ranges.clone();
        reversed.reverse();
        let r = values(&reversed);
        assert_eq!(
            (r.distinct, r.digest, r.bytes),
            (v.distinct, v.digest, v.bytes)
        );
        assert_eq!((values(&[]).distinct, values(&[]).digest), (0, 0));
    }

    /// A block that is copies of copies (a union state restored again and again) gives, through the
    /// shortcut over the copies, the values that element-by-element counting gives; one byte
    /// changed in the last copy defeats the shortcut and changes the values.
    #[test]
    fn copies_of_a_block_count_as_their_elements() {
        // legacy Kafka consumer elements (Kryo KafkaTopicPartition, offset), two partitions
        let element = |p: u8, offset: u8| {
            let mut e = vec![
                0x57,
                0x01,
                0x06 + 2 * p,
                0x01,
                b't',
                b'o',
                b'p',
                b'i',
                b'c' | 0x80,
            ];
            e.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, offset]);
            e
        };
        let mut stream = vec![9u8; 7]; // a header before the block
        let mut first = [element(0, 5), element(1, 6), element(0, 5)].concat();
        for k in [3, 4, 4, 2] {
            first = first.repeat(k);
        }
        stream.extend_from_slice(&first);
        let e = element(0, 5).len() as u64;
        let n = (first.len() as u64) / e;
        let offsets = Offsets::from_slice(&(0..n).map(|i| (7 + i * e) as i64).collect::<Vec<_>>());
        let ranges: Vec<(u64, u64)> = (0..n).map(|i| (7 + i * e, 7 + (i + 1) * e)).collect();
        let end = stream.len() as u64;
        let decode = Some(kafka::decode_legacy as Decoder);
        let (part, part_end, k) = first_copy(&stream, &offsets, end);
        assert_eq!((part.len(), k), (3, 96));
        let copies =
            ElementValues::of(decode, &stream, Elements::Offsets(&part, part_end)).times(k);
        let each = ElementValues::of(decode, &stream, Elements::Ranges(&ranges));
        assert_eq!(
            (copies.bytes, copies.distinct, copies.digest, &copies.kafka),
            (each.bytes, each.distinct, each.digest, &each.kafka)
        );
        assert_eq!(copies.distinct, 2);
        assert_eq!(copies.kafka.iter().map(|(_, c)| c).sum::<u64>(), n);
        assert!(repeated(&stream, &offsets, end).is_some());
        let last = stream.len() - 1;
        stream[last] = 7;
        assert!(repeated(&stream, &offsets, end).is_none());
        let (part, part_end, k) = first_copy(&stream, &offsets, end);
        assert_eq!(k, 1);
        let changed = ElementValues::of(decode, &stream, Elements::Offsets(&part, part_end));
        assert_eq!(changed.distinct, 3);
        assert_ne!(changed.digest, copies.digest);
    }

    /// Two copies of a block whose halves agree well beyond the probed bytes and differ at their
    /// ends: the probes point to a shorter copy, the one-pass proof refutes it, and the search by
    /// factors finds the two copies; the values are those of counting element by element.
    #[test]
    fn a_wrong_guess_of_the_probes_falls_back_to_the_search_by_factors() {
        let e = 16usize;
        let element = |v: u8| vec![v; e];
        // a half: 600 equal elements (9,600 bytes, more than PROBE), the last one different
        let half = |last: u8| {
            let mut h: Vec<u8> = (0..599).flat_map(|_| element(1)).collect();
            h.extend(element(last));
            h
        };
        let copy = [half(2), half(3)].concat();
        let stream = copy.repeat(2);
        let n = (stream.len() / e) as u64;
        let offsets =
            Offsets::from_slice(&(0..n).map(|i| (i * e as u64) as i64).collect::<Vec<_>>());
        let end = stream.len() as u64;
        assert!(
            probed_copy(&stream, &offsets, end).is_none(),
            "the guess is refuted"
        );
        let (part, part_end, k) = first_copy(&stream, &offsets, end);
        assert_eq!((part.len(), part_end, k), (1200, copy.len() as u64, 2));
        let ranges: Vec<(u64, u64)> = (0..n).map(|i| (i * e as u64, (i + 1) * e as u64)).collect();
        let copies = ElementValues::of(None, &stream, Elements::Offsets(&part, part_end)).times(k);
        let each = ElementValues::of(None, &stream, Elements::Ranges(&ranges));
        assert_eq!(
            (copies.bytes, copies.distinct, copies.digest),
            (each.bytes, each.distinct, each.digest)
        );
        assert_eq!(each.distinct, 3);
    }

    /// More distinct values than the table holds: counted by sorting, still exact.
    #[test]
    fn many_distinct_values_are_counted_by_sorting() {
        let n = TABLE_MAX_DISTINCT + 1000;
        let stream: Vec<u8> = (0..n as u32).flat_map(|i| (i / 2).to_le_bytes()).collect();
        let ranges: Vec<(u64, u64)> = (0..n as u64).map(|i| (4 * i, 4 * i + 4)).collect();
        let v = ElementValues::of(None, &stream, Elements::Ranges(&ranges));
        assert_eq!(v.distinct, (n / 2) as i64);
    }
}
