//! Where one element of an operator list state ends, for the serializers whose byte format the
//! tool knows: Flink's basic types (`LongSerializer`, `StringSerializer`, ...), `byte[]`, the
//! legacy Kafka consumer's `KafkaTopicPartition` (Kryo), and tuples of them (`TupleSerializer`:
//! `Tuple2<String, Long>`, or `Tuple2<KafkaTopicPartition, Long>` of `topic-partition-offset-states`).
//! The serializer is read from the state's snapshot in the stream header, by class name; no Java
//! class is loaded.
//!
//! Needed only where a stream gives no element boundaries: Flink 1.18's compressed layout records
//! one offset for all elements of a state.

use crate::codec::io::Reader;
use crate::codec::metainfo::{MetaInfoEntry, SerializerSnapshot};
use crate::error::{Error, Result};
use bytes::Bytes;

const BASE: &str = "org.apache.flink.api.common.typeutils.base.";
const TUPLE_SNAPSHOT: &str = "org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot";
const TUPLE_CLASS: &str = "org.apache.flink.api.java.tuple.Tuple";
const KRYO_SNAPSHOT: &str =
    "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot";
const KAFKA_TOPIC_PARTITION: &str =
    "org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartition";
/// `CompositeTypeSerializerSnapshot.MAGIC_NUMBER` and `NestedSerializersSnapshotDelegate.MAGIC_NUMBER`.
const COMPOSITE_MAGIC: i32 = 911108;
const NESTED_MAGIC: i32 = 1333245;

/// The byte layout of one element.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// A fixed number of bytes (`long`: 8, `int`: 4, ...).
    Fixed(usize),
    /// `StringValue.writeString`: the length plus one as a 7-bit varint (0 for null), then each
    /// UTF-16 unit as a 7-bit varint.
    String,
    /// `BytePrimitiveArraySerializer`: an i32 length, then the bytes.
    ByteArray,
    /// `KryoSerializer` of the legacy Kafka consumer's `KafkaTopicPartition` (Flink registers the
    /// class): its registration id and the reference marker of a new object (1), then the fields
    /// in name order, `cachedHash` and `partition` as zig-zag varints, `topic` as a not-null byte
    /// and a Kryo string.
    KafkaTopicPartition,
    /// `TupleSerializer`: the fields one after another.
    Tuple(Vec<Layout>),
}

impl Layout {
    /// The element layout of a list state's entry, or an Unsupported error naming its serializer.
    pub fn of_entry(stream: &Bytes, entry: &MetaInfoEntry) -> Result<Layout> {
        let s = entry
            .serializers
            .iter()
            .find(|s| s.key.as_bytes() == b"VALUE_SERIALIZER")
            .ok_or_else(|| {
                Error::format(
                    entry.start as u64,
                    format!("a VALUE_SERIALIZER snapshot for state '{}'", entry.name),
                    None,
                )
            })?;
        let mut r = Reader::new(stream.slice(..s.body.1));
        r.seek(s.body.0)?;
        let layout = snapshot(&mut r, &s.class_name.to_string_lossy())
            .map_err(|e| unsupported(e, s, &entry.name.to_string_lossy()))?;
        if r.remaining() != 0 {
            return Err(Error::format(
                r.pos() as u64,
                format!(
                    "the end of the serializer snapshot of state '{}'",
                    entry.name
                ),
                Some(format!("{} more bytes", r.remaining())),
            ));
        }
        Ok(layout)
    }

    /// Where the element that starts at `at` ends; None when `data` cannot hold it.
    pub fn end(&self, data: &[u8], at: usize) -> Option<usize> {
        match self {
            Layout::Fixed(n) => (at + n <= data.len()).then_some(at + n),
            Layout::ByteArray => {
                let n = i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?);
                let end = at + 4 + usize::try_from(n).ok()?;
                (end <= data.len()).then_some(end)
            }
            Layout::String => {
                let (len, mut p) = varint7(data, at, 5)?;
                for _ in 1..len {
                    p = varint7(data, p, 3)?.1;
                }
                Some(p)
            }
            Layout::KafkaTopicPartition => {
                let p = varint7(data, at, 5)?.1;
                // Kryo's reference marker of a new object
                if varint7(data, p, 5)? != (1, p + 1) {
                    return None;
                }
                let p = varint7(data, p + 1, 5)?.1;
                let p = varint7(data, p, 5)?.1;
                if *data.get(p)? != 1 {
                    return None;
                }
                kryo_string_end(data, p + 1)
            }
            Layout::Tuple(fields) => fields.iter().try_fold(at, |p, f| f.end(data, p)),
        }
    }
}

/// Where a Kryo 2 string (`Output.writeString`) that starts at `at` ends: ASCII with the high bit
/// set on its last byte, or a UTF-8 length (char count + 1, 0 for null, flagged by the high bit;
/// 6 bits, then 7 per byte) followed by the chars in UTF-8.
fn kryo_string_end(data: &[u8], at: usize) -> Option<usize> {
    let b = *data.get(at)?;
    if b & 0x80 == 0 {
        let n = data.get(at..)?.iter().position(|&x| x & 0x80 != 0)?;
        return Some(at + n + 1);
    }
    let mut count = (b & 0x3F) as u32;
    let mut p = at + 1;
    if b & 0x40 != 0 {
        for shift in [6, 13, 20, 27] {
            let c = *data.get(p)?;
            p += 1;
            count |= ((c & 0x7F) as u32) << shift;
            if c & 0x80 == 0 {
                break;
            }
        }
    }
    for _ in 1..count {
        p += match *data.get(p)? >> 4 {
            0..=7 => 1,
            12 | 13 => 2,
            14 => 3,
            _ => return None,
        };
    }
    (p <= data.len()).then_some(p)
}

/// A `StringValue` varint (7 bits per byte, low first, high bit = more) of at most `max` bytes.
fn varint7(data: &[u8], at: usize, max: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..max {
        let b = *data.get(at + i)?;
        v |= ((b & 0x7F) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, at + i + 1));
        }
    }
    None
}

/// The basic types' snapshots (`SimpleTypeSerializerSnapshot`: no body), after [`BASE`].
const SIMPLE: [(&str, Layout); 10] = [
    ("LongSerializer$LongSerializerSnapshot", Layout::Fixed(8)),
    (
        "DoubleSerializer$DoubleSerializerSnapshot",
        Layout::Fixed(8),
    ),
    ("IntSerializer$IntSerializerSnapshot", Layout::Fixed(4)),
    ("FloatSerializer$FloatSerializerSnapshot", Layout::Fixed(4)),
    ("ShortSerializer$ShortSerializerSnapshot", Layout::Fixed(2)),
    ("CharSerializer$CharSerializerSnapshot", Layout::Fixed(2)),
    ("ByteSerializer$ByteSerializerSnapshot", Layout::Fixed(1)),
    (
        "BooleanSerializer$BooleanSerializerSnapshot",
        Layout::Fixed(1),
    ),
    ("StringSerializer$StringSerializerSnapshot", Layout::String),
    (
        "array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot",
        Layout::ByteArray,
    ),
];

/// Why a snapshot has no known layout (the class, or what in its body was not as expected).
struct NotKnown(String);

fn unsupported(e: NotKnown, s: &SerializerSnapshot, state: &str) -> Error {
    Error::Unsupported {
        file: String::new(),
        offset: s.body.0 as u64,
        what: format!(
            "element format of state '{state}' ({}; the tool reads the elements of Flink's basic \
             types, byte[], the Kafka consumer's KafkaTopicPartition and tuples of them; serializer {})",
            e.0, s.class_name
        ),
    }
}

/// The layout of one serializer snapshot whose class name and version were read; `r` stands at
/// its body and is left after it.
fn snapshot(r: &mut Reader, class: &str) -> std::result::Result<Layout, NotKnown> {
    if let Some(simple) = class.strip_prefix(BASE) {
        // SimpleTypeSerializerSnapshot: no body
        return SIMPLE
            .iter()
            .find(|(name, _)| *name == simple)
            .map(|(_, layout)| layout.clone())
            .ok_or_else(|| NotKnown(format!("no known layout for {class}")));
    }
    if class != TUPLE_SNAPSHOT {
        return Err(NotKnown(format!("no known layout for {class}")));
    }
    // CompositeTypeSerializerSnapshot: magic, outer version, the tuple class, then the nested
    // serializers' snapshots (magic, version 1, count, each: class name, version, body).
    let bad = |what: &str| NotKnown(format!("a TupleSerializerSnapshot body with {what}"));
    let i32_is = |r: &mut Reader, v: i32| r.i32("").ok() == Some(v);
    if !i32_is(r, COMPOSITE_MAGIC) || r.i32("").is_err() {
        return Err(bad("the composite snapshot's magic number"));
    }
    let tuple = r.utf("").map_err(|_| bad("the tuple class"))?;
    let arity: usize = tuple
        .to_string_lossy()
        .strip_prefix(TUPLE_CLASS)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| bad(&format!("a Tuple class, not {tuple}")))?;
    if !i32_is(r, NESTED_MAGIC) || !i32_is(r, 1) || !i32_is(r, arity as i32) {
        return Err(bad(&format!("{arity} nested serializer snapshots")));
    }
    let mut fields = Vec::with_capacity(arity);
    for i in 0..arity {
        let class = r.utf("").map_err(|_| bad("a nested snapshot class"))?;
        r.i32("").map_err(|_| bad("a nested snapshot version"))?;
        let class = class.to_string_lossy();
        if class == KRYO_SNAPSHOT {
            fields.push(kryo_snapshot(r, arity - i - 1)?);
        } else {
            fields.push(snapshot(r, &class)?);
        }
    }
    Ok(Layout::Tuple(fields))
}

/// The layout of a nested `KryoSerializerSnapshot` (its body starts with the type's class name;
/// registrations and default serializers follow, unframed). Its end is found from the end of the
/// state's snapshot (`r`'s end): the `after` nested snapshots that follow it must be basic types'
/// (no body), found backwards from there. In a tuple nested in another, what follows would not
/// parse, and the state is refused.
fn kryo_snapshot(r: &mut Reader, after: usize) -> std::result::Result<Layout, NotKnown> {
    let class = r
        .utf("")
        .map_err(|_| NotKnown("a KryoSerializerSnapshot body with its type class".into()))?
        .to_string_lossy();
    if class != KAFKA_TOPIC_PARTITION {
        return Err(NotKnown(format!("the Kryo-serialized class {class}")));
    }
    let buf = r.slice(0, r.len());
    let mut end = buf.len();
    for _ in 0..after {
        end = SIMPLE
            .iter()
            .find_map(|(name, _)| {
                let name = format!("{BASE}{name}");
                let n = name.len();
                let at = end.checked_sub(n + 6)?;
                (buf[at..at + 2] == (n as u16).to_be_bytes()
                    && &buf[at + 2..at + 2 + n] == name.as_bytes())
                .then_some(at)
            })
            .ok_or_else(|| {
                NotKnown("a basic type's snapshot after the KafkaTopicPartition snapshot".into())
            })?;
    }
    if end < r.pos() {
        return Err(NotKnown("a KryoSerializerSnapshot body".into()));
    }
    r.seek(end)
        .map_err(|_| NotKnown("a KryoSerializerSnapshot body".into()))?;
    Ok(Layout::KafkaTopicPartition)
}

/// Splits `data` into `count` elements of `layout`; None unless they fill it exactly.
pub fn split(layout: &Layout, data: &[u8], count: usize) -> Option<Vec<(usize, usize)>> {
    let mut v = Vec::with_capacity(count);
    let mut p = 0;
    for _ in 0..count {
        let e = layout.end(data, p)?;
        v.push((p, e));
        p = e;
    }
    (p == data.len()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::io::JStr;
    use crate::codec::metainfo::EntryKind;

    /// An entry whose VALUE_SERIALIZER snapshot is `class` with `body`, as the stream holds it.
    fn entry(class: &str, body: &[u8]) -> (Bytes, MetaInfoEntry) {
        let stream = Bytes::from([&[0u8; 16][..], body].concat());
        let e = MetaInfoEntry {
            name: JStr::new("s"),
            kind: EntryKind::List,
            mode: JStr::new("UNION"),
            serializers: vec![SerializerSnapshot {
                key: JStr::new("VALUE_SERIALIZER"),
                class_name: JStr::new(class),
                version: 1,
                body: (16, 16 + body.len()),
            }],
            start: 0,
            end: stream.len(),
        };
        (stream, e)
    }

    #[test]
    fn layouts_from_serializer_snapshots() {
        let (s, e) = entry(
            "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot",
            b"",
        );
        assert_eq!(Layout::of_entry(&s, &e).unwrap(), Layout::Fixed(8));
        // a basic type's snapshot has no body
        let (s, e) = entry(
            "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot",
            b"x",
        );
        assert!(Layout::of_entry(&s, &e).is_err());
        let (s, e) = entry("org.example.PojoSerializerSnapshot", b"");
        let err = Layout::of_entry(&s, &e).unwrap_err().to_string();
        assert!(
            err.contains("unsupported element format of state 's'")
                && err.contains("org.example.PojoSerializerSnapshot"),
            "{err}"
        );
    }

    #[test]
    fn element_ends() {
        let s = Layout::String;
        // "ab" is written as length+1 = 3, 'a', 'b'; null as 0; U+00E4 as two 7-bit groups
        assert_eq!(s.end(&[3, b'a', b'b', 9], 0), Some(3));
        assert_eq!(s.end(&[0], 0), Some(1));
        assert_eq!(s.end(&[2, 0xE4, 0x01], 0), Some(3));
        assert_eq!(s.end(&[3, b'a'], 0), None);
        let t = Layout::Tuple(vec![Layout::String, Layout::Fixed(8)]);
        let mut e = vec![2, b'x'];
        e.extend_from_slice(&7i64.to_be_bytes());
        assert_eq!(t.end(&e, 0), Some(10));
        assert_eq!(
            split(&t, &[e.clone(), e.clone()].concat(), 2).unwrap()[1],
            (10, 20)
        );
        assert!(split(&t, &[e.clone(), e.clone()].concat(), 1).is_none());
        // Kryo strings: ASCII with the last high bit, else a UTF-8 length (count + 1) and UTF-8
        assert_eq!(kryo_string_end(&[b'a', b'b' | 0x80, 9], 0), Some(2));
        assert_eq!(kryo_string_end(&[0x82, b'a', 9], 0), Some(2));
        assert_eq!(kryo_string_end(&[0x82, 0xC3, 0xA4, 9], 0), Some(3));
        assert_eq!(kryo_string_end(&[0x81, 9], 0), Some(1));
        assert_eq!(kryo_string_end(&[0x83, 0xE2, 0x9C, 0x93, b'x'], 0), Some(5));
        assert_eq!(kryo_string_end(&[0x83, 0xE2, 0x9C], 0), None);
        // KafkaTopicPartition("topic-a", 1) at offset 164, as Flink 1.18.1 wrote it
        let ktp = [
            &[0x57, 0x01, 0xC3, 0xEB, 0xFE, 0x90, 0x07, 0x02, 0x01][..],
            b"topic-",
            &[b'a' | 0x80],
        ]
        .concat();
        let t = Layout::Tuple(vec![Layout::KafkaTopicPartition, Layout::Fixed(8)]);
        let e = [&ktp[..], &164i64.to_be_bytes()].concat();
        assert_eq!(t.end(&e, 0), Some(24));
        assert_eq!(t.end(&e[..23], 0), None);
        assert_eq!(Layout::ByteArray.end(&[0, 0, 0, 2, 1, 2], 0), Some(6));
        assert_eq!(Layout::ByteArray.end(&[0xFF, 0, 0, 2, 1, 2], 0), None);
    }
}
