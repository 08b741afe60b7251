//! The Kafka connector's states, as the connector's own serializers write them:
//! - the legacy `FlinkKafkaConsumer` union state `topic-partition-offset-states`: each element is
//!   a Kryo-serialized `KafkaTopicPartition` (Flink registers the class, so no class name is
//!   written; fields in name order, `topic` last) followed by the offset as a big-endian long:
//!   the offset of the last record processed, or one of the `KafkaTopicPartitionStateSentinel`s;
//! - `KafkaSource` splits in `SourceReaderState`: a `byte[]` (i32 length) holding
//!   `SimpleVersionedSerialization` (i32 version, i32 length) of `KafkaPartitionSplitSerializer`
//!   version 0: `UTF topic`, `i32 partition`, `i64 startingOffset`, `i64 stoppingOffset`;
//! - the enumerator's checkpoint in the source operator's coordinator state: the
//!   `SourceCoordinator` header (i32 coordinator serde version, i32 enumerator serializer version,
//!   i32 length) and `KafkaSourceEnumStateSerializer`'s bytes, of version 1 (assigned
//!   partitions: Flink 1.14-1.16 and connector 3.0), 2 (partitions with an assignment status and
//!   the initial-discovery flag: connector 3.1-4.0) or 3 (splits with offsets: connector 5.0+).

use crate::codec::elements::ElementType;
use crate::codec::io::{push_utf, Reader};
use crate::error::{Error, Result};
use bytes::Bytes;

/// Kafka's longest topic name (`org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_LENGTH: usize = 249;

pub const LEGACY_STATE: &str = "topic-partition-offset-states";
pub const SOURCE_READER_STATE: &str = "SourceReaderState";

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaOffset {
    pub topic: String,
    pub partition: i32,
    /// A split's starting offset (the next to read); legacy: the offset as stored.
    pub offset: i64,
    /// A split's stopping offset ([`NO_STOPPING_OFFSET`] if unbounded; legacy: the same).
    pub stopping: i64,
}

/// Decodes one element of the legacy consumer's union state; None if it does not have that shape.
pub fn decode_legacy(e: &[u8]) -> Option<KafkaOffset> {
    if e.len() < 8 + 4 {
        return None;
    }
    let (kryo, tail) = e.split_at(e.len() - 8);
    let offset = i64::from_be_bytes(tail.try_into().ok()?);
    // The topic: Kryo's ASCII string, the last character with its high bit set.
    let last = *kryo.last()?;
    if last & 0x80 == 0 {
        return None;
    }
    let mut start = kryo.len() - 1;
    while start > 0 && (0x20..0x7f).contains(&kryo[start - 1]) {
        start -= 1;
    }
    // Before the string: the not-null marker 1, and before it the partition as a zig-zag varint.
    if start < 2 || kryo[start - 1] != 1 {
        return None;
    }
    // Kafka topic names have at most 249 characters (`Topic.MAX_NAME_LENGTH`)
    if kryo.len() - start > MAX_TOPIC_LENGTH {
        return None;
    }
    let mut topic: Vec<u8> = kryo[start..].to_vec();
    *topic.last_mut()? &= 0x7f;
    let end = start - 1;
    let mut begin = end - 1;
    while begin > 0 && kryo[begin - 1] & 0x80 != 0 && end - begin < 5 {
        begin -= 1;
    }
    let mut v: u64 = 0;
    for (i, b) in kryo[begin..end].iter().enumerate() {
        v |= ((b & 0x7f) as u64) << (7 * i);
    }
    let partition = ((v >> 1) as i64 ^ -((v & 1) as i64)) as i32;
    Some(KafkaOffset {
        topic: String::from_utf8(topic).ok()?,
        partition,
        offset,
        stopping: NO_STOPPING_OFFSET,
    })
}

/// Decodes one `SourceReaderState` element holding a Kafka split; None for other sources.
pub fn decode_source_split(e: &[u8]) -> Option<KafkaOffset> {
    let mut r = Reader::new(Bytes::copy_from_slice(e));
    let n = r.i32("").ok()?;
    if n < 0 || n as usize != r.remaining() {
        return None;
    }
    let _serializer_version = r.i32("").ok()?;
    let len = r.i32("").ok()?;
    if len < 0 || len as usize != r.remaining() {
        return None;
    }
    let split = read_split(&mut r).ok()?;
    (r.remaining() == 0).then_some(split)
}

/// Decodes one element of a state, or says it is not one.
pub type Decoder = fn(&[u8]) -> Option<KafkaOffset>;

/// The decoder of a Kafka source state: the legacy state only when its serializer snapshot names
/// the consumer's element type (pulsar-flink and others use the same name), `SourceReaderState`
/// when its elements are `byte[]` (each element is then checked to be a Kafka split).
pub fn decoder(state: &str, element: &ElementType) -> Option<Decoder> {
    match state {
        LEGACY_STATE if element.is_kafka_legacy() => Some(decode_legacy),
        SOURCE_READER_STATE if *element == ElementType::Basic("byte[]") => {
            Some(decode_source_split)
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Offsets and their sentinels

/// `KafkaPartitionSplit`: no stopping offset (an unbounded split).
pub const NO_STOPPING_OFFSET: i64 = i64::MIN;
/// `KafkaPartitionSplit` starting-offset markers.
pub const LATEST_OFFSET: i64 = -1;
pub const EARLIEST_OFFSET: i64 = -2;
pub const COMMITTED_OFFSET: i64 = -3;

/// `KafkaTopicPartitionStateSentinel` of the legacy consumer.
pub const LEGACY_OFFSET_NOT_SET: i64 = -915_623_761_776;
pub const LEGACY_EARLIEST_OFFSET: i64 = -915_623_761_775;
pub const LEGACY_LATEST_OFFSET: i64 = -915_623_761_774;
pub const LEGACY_GROUP_OFFSET: i64 = -915_623_761_773;

/// A split's offset as people read it: a number, or the marker's name.
pub fn describe_offset(o: i64) -> String {
    match o {
        EARLIEST_OFFSET => "EARLIEST".into(),
        LATEST_OFFSET => "LATEST".into(),
        COMMITTED_OFFSET => "COMMITTED".into(),
        NO_STOPPING_OFFSET => "NONE".into(),
        n => n.to_string(),
    }
}

/// A legacy state offset as people read it: a number (-1: nothing read yet), or the sentinel's name.
pub fn describe_legacy_offset(o: i64) -> String {
    match o {
        LEGACY_OFFSET_NOT_SET => "OFFSET_NOT_SET".into(),
        LEGACY_EARLIEST_OFFSET => "EARLIEST_OFFSET".into(),
        LEGACY_LATEST_OFFSET => "LATEST_OFFSET".into(),
        LEGACY_GROUP_OFFSET => "GROUP_OFFSET".into(),
        n => n.to_string(),
    }
}

/// The split's starting offset for a legacy state offset. The legacy consumer stores the offset
/// of the last record it processed and seeks to the next one on restore, so a real offset `n`
/// (`-1` when nothing was read from offset 0) becomes `n + 1`; its sentinels become the split's
/// markers. `OFFSET_NOT_SET` (which the legacy consumer cannot restore either) maps to
/// `not_set` when given. Anything else is refused.
pub fn starting_offset_of_legacy(legacy: i64, not_set: Option<i64>) -> Option<i64> {
    match legacy {
        LEGACY_EARLIEST_OFFSET => Some(EARLIEST_OFFSET),
        LEGACY_LATEST_OFFSET => Some(LATEST_OFFSET),
        LEGACY_GROUP_OFFSET => Some(COMMITTED_OFFSET),
        LEGACY_OFFSET_NOT_SET => not_set,
        n if (-1..i64::MAX).contains(&n) => Some(n + 1),
        _ => None,
    }
}

/// Whether `o` is a valid starting offset of a split (a position or a marker).
pub fn valid_starting_offset(o: i64) -> bool {
    o >= 0 || matches!(o, EARLIEST_OFFSET | LATEST_OFFSET | COMMITTED_OFFSET)
}

// ---------------------------------------------------------------------------------------------
// Splits

pub const SPLIT_SERIALIZER_VERSION: i32 = 0;

fn read_split(r: &mut Reader) -> Result<KafkaOffset> {
    let topic = r.utf("the split's topic")?;
    let partition = r.i32("the split's partition")?;
    let offset = r.i64("the split's starting offset")?;
    let stopping = r.i64("the split's stopping offset")?;
    if topic.is_empty() {
        return Err(r.error("a non-empty topic", None));
    }
    Ok(KafkaOffset {
        topic: topic.to_string_lossy(),
        partition,
        offset,
        stopping,
    })
}

/// `KafkaPartitionSplitSerializer.serialize`.
pub fn split_bytes(s: &KafkaOffset) -> Vec<u8> {
    let mut b = Vec::with_capacity(s.topic.len() + 22);
    push_utf(&mut b, &s.topic);
    b.extend_from_slice(&s.partition.to_be_bytes());
    b.extend_from_slice(&s.offset.to_be_bytes());
    b.extend_from_slice(&s.stopping.to_be_bytes());
    b
}

/// One `SourceReaderState` element: `BytePrimitiveArraySerializer` framing of
/// `SimpleVersionedSerialization.writeVersionAndSerialize`.
pub fn source_split_element(s: &KafkaOffset) -> Vec<u8> {
    let split = split_bytes(s);
    let mut e = Vec::with_capacity(split.len() + 12);
    e.extend_from_slice(&((split.len() + 8) as i32).to_be_bytes());
    e.extend_from_slice(&SPLIT_SERIALIZER_VERSION.to_be_bytes());
    e.extend_from_slice(&(split.len() as i32).to_be_bytes());
    e.extend_from_slice(&split);
    e
}

/// `String.hashCode()` of Java.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `KafkaSourceEnumerator.getSplitOwner`: the reader a partition is assigned to.
pub fn split_owner(topic: &str, partition: i32, readers: i32) -> i32 {
    let start = (java_string_hash(topic).wrapping_mul(31) & 0x7FFF_FFFF) % readers;
    (start + partition) % readers
}

// ---------------------------------------------------------------------------------------------
// The enumerator state in the coordinator state

/// `SourceCoordinatorSerdeUtils`: version 1 (Flink 1.15+); version 0 was followed by the split
/// assignment tracker's bytes, which the coordinator skips.
pub const COORDINATOR_SERDE_VERSION: i32 = 1;

/// The newest `KafkaSourceEnumStateSerializer` version this tool knows.
pub const MAX_ENUM_STATE_VERSION: i32 = 3;

/// `AssignmentStatus` codes (enumerator state version 2+).
pub const ASSIGNED: i32 = 0;
pub const UNASSIGNED: i32 = 1;

/// A `KafkaSourceEnumState`.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumState {
    /// The enumerator state serializer version (1 to 3).
    pub version: i32,
    /// The coordinator serde version of the header it came in.
    pub coordinator_version: i32,
    /// The partitions with their split (offsets: version 3 only, else `i64::MIN`) and
    /// assignment status ([`ASSIGNED`] for version 1).
    pub splits: Vec<(KafkaOffset, i32)>,
    /// Version 2+: whether the initial partition discovery has finished (true for version 1).
    pub initial_discovery_finished: bool,
}

/// Decodes the coordinator state of a `KafkaSource`. Versions other than 1 to 3 are refused
/// with the version found; any byte left over is an error.
pub fn decode_enum_state(b: &Bytes) -> Result<EnumState> {
    let mut r = Reader::new(b.clone());
    let coordinator_version = r.i32("the source coordinator serde version")?;
    if !(0..=COORDINATOR_SERDE_VERSION).contains(&coordinator_version) {
        return Err(Error::format(
            0,
            "source coordinator serde version 0 or 1",
            Some(coordinator_version.to_string()),
        ));
    }
    let at = r.pos();
    let version = r.i32("the Kafka enumerator state version")?;
    let len = r.count("the enumerator state length", 1)?;
    let body = r.bytes(len, "the enumerator state")?;
    if coordinator_version != 0 && r.remaining() != 0 {
        return Err(r.error("the end of the coordinator state", None));
    }
    if !(1..=MAX_ENUM_STATE_VERSION).contains(&version) {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: at as u64,
            what: format!(
                "Kafka enumerator state version {version} (this tool knows versions 1 to \
                 {MAX_ENUM_STATE_VERSION}: Kafka connector 1.14 to 5.x)"
            ),
        });
    }
    let mut r = Reader::new(body);
    let n = r.count("the number of partitions in the enumerator state", 6)?;
    let split_version = if version >= 3 {
        r.i32("the split serializer version")?
    } else {
        SPLIT_SERIALIZER_VERSION
    };
    if split_version != SPLIT_SERIALIZER_VERSION {
        return Err(r.error(
            "Kafka split serializer version 0",
            Some(split_version.to_string()),
        ));
    }
    let mut splits = Vec::with_capacity(n);
    for _ in 0..n {
        let split = if version >= 3 {
            let len = r.count("a split's length", 1)?;
            let mut s = Reader::new(r.bytes(len, "a split")?);
            let split = read_split(&mut s)?;
            if s.remaining() != 0 {
                return Err(s.error("the end of the split", None));
            }
            split
        } else {
            let topic = r.utf("a topic")?;
            KafkaOffset {
                topic: topic.to_string_lossy(),
                partition: r.i32("a partition")?,
                offset: i64::MIN,
                stopping: NO_STOPPING_OFFSET,
            }
        };
        let status = if version >= 2 {
            let at = r.pos();
            let s = r.i32("an assignment status")?;
            if s != ASSIGNED && s != UNASSIGNED {
                return Err(Error::format(
                    at as u64,
                    "assignment status 0 (ASSIGNED) or 1 (UNASSIGNED)",
                    Some(s.to_string()),
                ));
            }
            s
        } else {
            ASSIGNED
        };
        splits.push((split, status));
    }
    let initial_discovery_finished = if version >= 2 {
        r.u8("the initial discovery flag")? != 0
    } else {
        true
    };
    if r.remaining() != 0 {
        return Err(r.error("the end of the enumerator state", None));
    }
    Ok(EnumState {
        version,
        coordinator_version,
        splits,
        initial_discovery_finished,
    })
}

/// Encodes the coordinator state as `SourceCoordinator` writes it (serde version 1).
pub fn encode_enum_state(s: &EnumState) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(s.splits.len() as i32).to_be_bytes());
    if s.version >= 3 {
        body.extend_from_slice(&SPLIT_SERIALIZER_VERSION.to_be_bytes());
    }
    for (split, status) in &s.splits {
        if s.version >= 3 {
            let b = split_bytes(split);
            body.extend_from_slice(&(b.len() as i32).to_be_bytes());
            body.extend_from_slice(&b);
        } else {
            push_utf(&mut body, &split.topic);
            body.extend_from_slice(&split.partition.to_be_bytes());
        }
        if s.version >= 2 {
            body.extend_from_slice(&status.to_be_bytes());
        }
    }
    if s.version >= 2 {
        body.push(s.initial_discovery_finished as u8);
    }
    let mut b = Vec::with_capacity(body.len() + 12);
    b.extend_from_slice(&COORDINATOR_SERDE_VERSION.to_be_bytes());
    b.extend_from_slice(&s.version.to_be_bytes());
    b.extend_from_slice(&(body.len() as i32).to_be_bytes());
    b.extend_from_slice(&body);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_element_as_flink_1_15_writes_it() {
        // Kryo registration id, not-null, partition 3 (zig-zag 6), not-null, "topic-a", offset 1003
        let e = [
            0x57,
            0x01,
            0x06,
            0x01,
            b't',
            b'o',
            b'p',
            b'i',
            b'c',
            b'-',
            b'a' | 0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            0x03,
            0xeb,
        ];
        assert_eq!(
            decode_legacy(&e),
            Some(KafkaOffset {
                topic: "topic-a".into(),
                partition: 3,
                offset: 1003,
                stopping: NO_STOPPING_OFFSET
            })
        );
    }

    #[test]
    fn source_split() {
        let mut payload = vec![0, 5, b'i', b'n', b'p', b'u', b't', 0, 0, 0, 2];
        payload.extend_from_slice(&563i64.to_be_bytes());
        payload.extend_from_slice(&i64::MIN.to_be_bytes());
        let mut e = Vec::new();
        e.extend_from_slice(&((payload.len() + 8) as i32).to_be_bytes());
        e.extend_from_slice(&0i32.to_be_bytes());
        e.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        e.extend_from_slice(&payload);
        assert_eq!(
            decode_source_split(&e),
            Some(KafkaOffset {
                topic: "input".into(),
                partition: 2,
                offset: 563,
                stopping: NO_STOPPING_OFFSET
            })
        );
        // a NumberSequenceSource split is not a Kafka split
        assert_eq!(decode_source_split(&e[..e.len() - 1]), None);
    }

    #[test]
    fn split_owner_is_the_enumerators() {
        // String.hashCode and KafkaSourceEnumerator.getSplitOwner, as Java computes them
        assert_eq!(java_string_hash("input"), 100_358_090);
        assert_eq!(java_string_hash("topic-a"), -1_139_260_605);
        assert_eq!(java_string_hash("ü-topic"), 1_711_486_238);
        for (topic, readers, p0, p3) in [
            ("input", 5, 2, 0),
            ("topic-a", 2, 1, 0),
            ("topic-a", 5, 1, 4),
            ("numbers", 3, 0, 0),
            ("ü-topic", 3, 2, 2),
        ] {
            assert_eq!(split_owner(topic, 0, readers), p0, "{topic} 0 of {readers}");
            assert_eq!(split_owner(topic, 3, readers), p3, "{topic} 3 of {readers}");
        }
    }

    #[test]
    fn legacy_offsets_map_to_the_next_offset_and_sentinels_to_markers() {
        assert_eq!(starting_offset_of_legacy(1002, None), Some(1003));
        assert_eq!(starting_offset_of_legacy(-1, None), Some(0));
        assert_eq!(
            starting_offset_of_legacy(LEGACY_EARLIEST_OFFSET, None),
            Some(EARLIEST_OFFSET)
        );
        assert_eq!(
            starting_offset_of_legacy(LEGACY_LATEST_OFFSET, None),
            Some(LATEST_OFFSET)
        );
        assert_eq!(
            starting_offset_of_legacy(LEGACY_GROUP_OFFSET, None),
            Some(COMMITTED_OFFSET)
        );
        assert_eq!(starting_offset_of_legacy(LEGACY_OFFSET_NOT_SET, None), None);
        assert_eq!(
            starting_offset_of_legacy(LEGACY_OFFSET_NOT_SET, Some(EARLIEST_OFFSET)),
            Some(EARLIEST_OFFSET)
        );
        assert_eq!(starting_offset_of_legacy(-7, None), None);
        assert_eq!(starting_offset_of_legacy(i64::MAX, None), None);
    }

    #[test]
    fn enumerator_state_round_trips_in_every_version() {
        let split = |t: &str, p: i32, o: i64| KafkaOffset {
            topic: t.into(),
            partition: p,
            offset: o,
            stopping: NO_STOPPING_OFFSET,
        };
        for version in 1..=3 {
            let s = EnumState {
                version,
                coordinator_version: COORDINATOR_SERDE_VERSION,
                splits: vec![
                    (
                        split("a", 0, if version == 3 { 17 } else { i64::MIN }),
                        ASSIGNED,
                    ),
                    (
                        split(
                            "b",
                            3,
                            if version == 3 {
                                EARLIEST_OFFSET
                            } else {
                                i64::MIN
                            },
                        ),
                        if version == 1 { ASSIGNED } else { UNASSIGNED },
                    ),
                ],
                initial_discovery_finished: version == 1 || version == 3,
            };
            let b = Bytes::from(encode_enum_state(&s));
            assert_eq!(decode_enum_state(&b).unwrap(), s, "version {version}");
            let mut longer = b.to_vec();
            longer.push(0);
            assert!(decode_enum_state(&Bytes::from(longer)).is_err());
        }
        // a version from the future is refused with the version found
        let mut future = encode_enum_state(&EnumState {
            version: 2,
            coordinator_version: 1,
            splits: vec![],
            initial_discovery_finished: true,
        });
        future[7] = 9;
        let e = decode_enum_state(&Bytes::from(future))
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 9"), "{e}");
    }

    #[test]
    fn a_legacy_topic_longer_than_kafka_allows_is_no_legacy_element() {
        let element = |len: usize| {
            let mut e = vec![0x57, 0x01, 0x06, 0x01];
            e.extend(std::iter::repeat_n(b't', len - 1));
            e.push(b't' | 0x80);
            e.extend_from_slice(&5i64.to_be_bytes());
            e
        };
        assert_eq!(decode_legacy(&element(MAX_TOPIC_LENGTH)).unwrap().offset, 5);
        assert_eq!(decode_legacy(&element(MAX_TOPIC_LENGTH + 1)), None);
    }

    #[test]
    fn split_element_decodes_back() {
        let s = KafkaOffset {
            topic: "topic-a".into(),
            partition: 7,
            offset: 42,
            stopping: 100,
        };
        assert_eq!(decode_source_split(&source_split_element(&s)), Some(s));
    }
}
