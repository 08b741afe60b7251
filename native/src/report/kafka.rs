//! Kafka source offsets decoded from operator state, so that a user can check them before and
//! after a migration or a repair:
//! - the legacy `FlinkKafkaConsumer` union state `topic-partition-offset-states`: each element is
//!   a Kryo-serialized `KafkaTopicPartition` (Flink registers the class, so no class name is
//!   written; fields in name order, `topic` last) followed by the offset as a big-endian long;
//! - `KafkaSource` splits in `SourceReaderState`: a `byte[]` (i32 length) holding
//!   `SimpleVersionedSerialization` (i32 version, i32 length) of `KafkaPartitionSplitSerializer`
//!   version 0: `UTF topic`, `i32 partition`, `i64 startingOffset`, `i64 stoppingOffset`.

use crate::codec::io::Reader;
use bytes::Bytes;

pub const LEGACY_STATE: &str = "topic-partition-offset-states";
pub const SOURCE_READER_STATE: &str = "SourceReaderState";

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaOffset {
    pub topic: String,
    pub partition: i32,
    /// The next offset to read (legacy: the last committed/restored offset as stored).
    pub offset: i64,
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
    let topic = r.utf("").ok()?;
    let partition = r.i32("").ok()?;
    let offset = r.i64("").ok()?;
    let _stopping = r.i64("").ok()?;
    if r.remaining() != 0 || topic.is_empty() {
        return None;
    }
    Some(KafkaOffset {
        topic: topic.to_string_lossy(),
        partition,
        offset,
    })
}

/// Decodes one element of a state, or says it is not one.
pub type Decoder = fn(&[u8]) -> Option<KafkaOffset>;

/// The decoder for a state name, if it is a Kafka source state.
pub fn decoder(state: &str) -> Option<Decoder> {
    match state {
        LEGACY_STATE => Some(decode_legacy),
        SOURCE_READER_STATE => Some(decode_source_split),
        _ => None,
    }
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
                offset: 1003
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
                offset: 563
            })
        );
        // a NumberSequenceSource split is not a Kafka split
        assert_eq!(decode_source_split(&e[..e.len() - 1]), None);
    }
}
