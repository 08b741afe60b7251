//! Serializer snapshots and the byte layout of the elements they describe, for the serializers
//! whose format the tool knows: Flink's basic types (`LongSerializer`, `StringSerializer`, ...),
//! `byte[]`, enums, the legacy Kafka consumer's `KafkaTopicPartition` (Kryo), tuples, POJOs whose
//! snapshot lists their field serializers, `List`/`Map` serializers, the keyed backends'
//! namespaces (`VoidNamespace`, `TimeWindow`, `GlobalWindow`), Flink's TTL wrapper
//! (`TtlSerializer`) and timers (`TimerSerializer`). The serializer is read from its snapshot in a
//! state's meta info, by class name; no Java class is loaded.
//!
//! [`read_snapshot`] walks a snapshot body (unframed in the file, so its end is known only by
//! understanding it) and returns what it names and nests ([`SnapshotInfo`]), with the element
//! [`Layout`] where known. Checked against Flink 1.13.6, 1.15.4, 1.20.3 and 2.3.0's sources:
//! `CompositeTypeSerializerSnapshot` (magic 911108, outer version, outer snapshot, then
//! `NestedSerializersSnapshotDelegate`: magic 1333245, version 1, count, each nested snapshot as
//! class name, version, body), `PojoSerializerSnapshotData` (class name and three
//! `LinkedOptionalMap`s whose keys and values are length-framed), `KryoSerializerSnapshotData`
//! (type class and three `LinkedOptionalMap`s), `EnumSerializerSnapshot` (class, constants),
//! `ListSerializer`/`MapSerializer`/`PojoSerializer`/`CompositeSerializer`/`TimerSerializer`
//! `serialize`. `TtlSerializerSnapshot` nests the timestamp's and the user value's snapshots and
//! holds no TTL settings (`TtlStateFactory`).
//!
//! Element layouts are needed where a stream gives no element boundaries: Flink 1.18's compressed
//! operator state (one offset for all elements of a state), and the heap backend's uncompressed
//! full checkpoints (`codec::keyed::heap`).

use crate::codec::io::{JStr, Reader};
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
const TYPEUTILS: &str = "org.apache.flink.api.common.typeutils.";
const POJO_SNAPSHOT: &str = "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot";
const ENUM_SNAPSHOT: &str =
    "org.apache.flink.api.common.typeutils.base.EnumSerializer$EnumSerializerSnapshot";
/// Flink's TTL wrapper of a state's value (`TtlStateFactory.TtlSerializer`).
pub const TTL_SNAPSHOT: &str =
    "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot";
const TIMER_SNAPSHOT: &str = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot";
/// `CompositeTypeSerializerSnapshot.MAGIC_NUMBER` and `NestedSerializersSnapshotDelegate.MAGIC_NUMBER`.
const COMPOSITE_MAGIC: i32 = 911108;
const NESTED_MAGIC: i32 = 1333245;
/// `LinkedOptionalMapSerializer.HEADER`.
const OPTIONAL_MAP_HEADER: i64 = 0x4f2c69a3d70;
/// Nested snapshots deeper than this are no snapshot Flink wrote (and must not exhaust the stack).
const MAX_DEPTH: u32 = 32;

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
    /// The fields one after another: `TupleSerializer`, `TtlSerializer` (the last-access
    /// timestamp, then the user value) and `TimerSerializer` (the timestamp, key and namespace).
    Tuple(Vec<Layout>),
    /// `ListSerializer`: an i32 count, then the elements.
    List(Box<Layout>),
    /// `MapSerializer`: an i32 count, then per entry the key, a null flag and (unless null) the value.
    Map(Box<Layout>, Box<Layout>),
    /// `PojoSerializer` of a POJO written without subclass: a flags byte (1 null, 2 no subclass),
    /// then per field a null flag and (unless null) the value. A subclass' element is not known.
    Pojo(Vec<Layout>),
}

impl Layout {
    /// The element layout of a list state's entry, or an Unsupported error naming its serializer.
    pub fn of_entry(stream: &Bytes, entry: &MetaInfoEntry) -> Result<Layout> {
        let s = value_serializer(entry)?;
        let mut r = Reader::new(stream.slice(..s.body.1));
        r.seek(s.body.0)?;
        let class = s.class_name.to_string_lossy();
        let layout = read_snapshot(&mut r, &class, s.version, 0)
            .and_then(|info| {
                info.layout
                    .ok_or_else(|| NotKnown(format!("no known element layout for {class}")))
            })
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
            Layout::List(e) => {
                let (n, p) = count(data, at, e.min_len())?;
                (0..n).try_fold(p, |p, _| e.end(data, p))
            }
            Layout::Map(k, v) => {
                let (n, p) = count(data, at, k.min_len() + 1)?;
                (0..n).try_fold(p, |p, _| {
                    let p = k.end(data, p)?;
                    match *data.get(p)? {
                        0 => v.end(data, p + 1),
                        1 => Some(p + 1),
                        _ => None,
                    }
                })
            }
            Layout::Pojo(fields) => match *data.get(at)? {
                1 => Some(at + 1),
                2 => fields.iter().try_fold(at + 1, |p, f| match *data.get(p)? {
                    0 => f.end(data, p + 1),
                    1 => Some(p + 1),
                    _ => None,
                }),
                _ => None,
            },
        }
    }

    /// The fewest bytes one element takes.
    pub fn min_len(&self) -> usize {
        match self {
            Layout::Fixed(n) => *n,
            Layout::String | Layout::Pojo(_) => 1,
            Layout::ByteArray | Layout::List(_) | Layout::Map(..) => 4,
            Layout::KafkaTopicPartition => 4,
            Layout::Tuple(fields) => fields.iter().map(Layout::min_len).sum(),
        }
    }
}

/// An i32 element count at `at` that the rest of `data` can hold at `min` bytes an element (so
/// that no count makes a walk loop without consuming bytes), and the position after it.
fn count(data: &[u8], at: usize, min: usize) -> Option<(usize, usize)> {
    let n = usize::try_from(i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?)).ok()?;
    let left = data.len() - (at + 4);
    (n == 0 || (min > 0 && n <= left / min)).then_some((n, at + 4))
}

/// The VALUE_SERIALIZER snapshot of a list state's entry.
fn value_serializer(entry: &MetaInfoEntry) -> Result<&SerializerSnapshot> {
    entry
        .serializers
        .iter()
        .find(|s| s.key.as_bytes() == b"VALUE_SERIALIZER")
        .ok_or_else(|| {
            Error::format(
                entry.start as u64,
                format!("a VALUE_SERIALIZER snapshot for state '{}'", entry.name),
                None,
            )
        })
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

/// The keyed backends' namespace serializers (`SimpleTypeSerializerSnapshot`: no body):
/// `VoidNamespace` and `GlobalWindow` write one byte, `TimeWindow` its start and end.
const NAMESPACES: [(&str, Layout); 3] = [
    (
        "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot",
        Layout::Fixed(1),
    ),
    (
        "org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot",
        Layout::Fixed(16),
    ),
    (
        "org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot",
        Layout::Fixed(1),
    ),
];

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

/// Why a snapshot's body or layout is not known (the class, or what in its body was unexpected).
#[derive(Debug)]
pub struct NotKnown(pub String);

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

/// The header of a serializer snapshot as `TypeSerializerSnapshotSerializationProxy` writes it: its
/// version (2 since Flink 1.7; version 1 is refused), the snapshot class and the snapshot's
/// version. `of` says whose snapshot it is, for the message.
pub fn read_snapshot_header(r: &mut Reader, of: &str) -> Result<(JStr, i32)> {
    let at = r.pos();
    let proxy = r.i32("the serializer snapshot proxy version")?;
    if proxy != 2 {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: at as u64,
            what: format!(
                "serializer snapshot proxy version {proxy} of {of} (version 2, written since \
                 Flink 1.7, is read)"
            ),
        });
    }
    let class = r.utf("a serializer snapshot class name")?;
    let version = r.i32("a serializer snapshot version")?;
    Ok((class, version))
}

/// What one serializer snapshot says: its class and version, the classes its body names (a
/// tuple's, a POJO's, an enum's, Kryo's type class), its nested serializers' snapshots in order,
/// and the element layout where the tool knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotInfo {
    pub class: String,
    pub version: i32,
    pub names: Vec<String>,
    pub nested: Vec<SnapshotInfo>,
    pub layout: Option<Layout>,
}

impl SnapshotInfo {
    fn new(class: &str, version: i32, layout: Option<Layout>) -> Self {
        SnapshotInfo {
            class: class.to_string(),
            version,
            names: Vec::new(),
            nested: Vec::new(),
            layout,
        }
    }

    /// Whether this is Flink's TTL wrapper, directly or as the element of a list or the value of
    /// a map (how `TtlStateFactory` wraps list and map states).
    pub fn is_ttl(&self) -> bool {
        let short = |s: &SnapshotInfo, name: &str| s.class == format!("{BASE}{name}");
        self.class == TTL_SNAPSHOT
            || (short(self, "ListSerializerSnapshot")
                && self.nested.first().is_some_and(|n| n.class == TTL_SNAPSHOT))
            || (short(self, "MapSerializerSnapshot")
                && self.nested.get(1).is_some_and(|n| n.class == TTL_SNAPSHOT))
    }
}

/// Reads the body of a snapshot of `class` (written at `version`) that `r` stands at, leaving
/// `r` after it. Err when the body's end cannot be known: a class the tool does not know, or a
/// body that is not as that class writes it.
pub fn read_snapshot(
    r: &mut Reader,
    class: &str,
    version: i32,
    depth: u32,
) -> std::result::Result<SnapshotInfo, NotKnown> {
    if depth > MAX_DEPTH {
        return Err(NotKnown(format!(
            "serializer snapshots nested deeper than {MAX_DEPTH}"
        )));
    }
    let simple = SIMPLE
        .iter()
        .find(|(name, _)| class.strip_prefix(BASE) == Some(name))
        .or_else(|| NAMESPACES.iter().find(|(name, _)| *name == class));
    if let Some((_, layout)) = simple {
        // SimpleTypeSerializerSnapshot: no body since version 3 (Flink 1.8); version 2 wrote
        // the serializer's class name
        if version == 2 && r.utf("").is_err() || version < 2 {
            return Err(NotKnown(format!("{class} version {version}")));
        }
        return Ok(SnapshotInfo::new(class, version, Some(layout.clone())));
    }
    let bad = |what: &str| NotKnown(format!("a {class} body with {what}"));
    match class {
        TUPLE_SNAPSHOT => {
            let (mut info, tuple) = composite(r, class, version, depth, |r| {
                r.utf("")
                    .map(|t| t.to_string_lossy())
                    .map_err(|_| bad("the tuple class"))
            })?;
            let arity: Option<usize> = tuple.strip_prefix(TUPLE_CLASS).and_then(|n| n.parse().ok());
            if arity != Some(info.nested.len()) {
                return Err(bad(&format!(
                    "{} nested snapshots for {tuple}",
                    info.nested.len()
                )));
            }
            info.layout = all_layouts(&info.nested).map(Layout::Tuple);
            info.names.push(tuple);
            Ok(info)
        }
        KRYO_SNAPSHOT => {
            let t = r
                .utf("")
                .map_err(|_| bad("its type class"))?
                .to_string_lossy();
            for _ in 0..3 {
                skip_optional_map(r).map_err(|e| bad(&e))?;
            }
            let layout = (t == KAFKA_TOPIC_PARTITION).then_some(Layout::KafkaTopicPartition);
            let mut info = SnapshotInfo::new(class, version, layout);
            info.names.push(t);
            Ok(info)
        }
        POJO_SNAPSHOT => {
            let pojo = r
                .utf("")
                .map_err(|_| bad("the POJO class"))?
                .to_string_lossy();
            let mut info = SnapshotInfo::new(class, version, None);
            info.names.push(pojo);
            let fields = read_optional_map(r, depth).map_err(|e| bad(&e))?;
            let registered = read_optional_map(r, depth).map_err(|e| bad(&e))?;
            let other = read_optional_map(r, depth).map_err(|e| bad(&e))?;
            let flat = fields.iter().flatten().cloned().collect::<Vec<_>>();
            // a field whose snapshot is missing (not restorable) leaves the layout unknown
            if flat.len() == fields.len() && registered.is_empty() && other.is_empty() {
                info.layout = all_layouts(&flat).map(Layout::Pojo);
            }
            info.nested = flat;
            info.nested
                .extend(registered.into_iter().chain(other).flatten());
            Ok(info)
        }
        ENUM_SNAPSHOT => {
            let e = r
                .utf("")
                .map_err(|_| bad("the enum class"))?
                .to_string_lossy();
            let n = r.count("", 2).map_err(|_| bad("the number of constants"))?;
            for _ in 0..n {
                r.utf("").map_err(|_| bad("a constant"))?;
            }
            let mut info = SnapshotInfo::new(class, version, Some(Layout::Fixed(4)));
            info.names.push(e);
            Ok(info)
        }
        _ => {
            let list = format!("{TYPEUTILS}base.ListSerializerSnapshot");
            let map = format!("{TYPEUTILS}base.MapSerializerSnapshot");
            let (mut info, ()) = composite(r, class, version, depth, |_| Ok(()))?;
            let n = &info.nested;
            info.layout = if class == list && n.len() == 1 {
                n[0].layout.clone().map(|e| Layout::List(Box::new(e)))
            } else if class == map && n.len() == 2 {
                all_layouts(n).map(|mut v| {
                    let value = v.pop().expect("two layouts");
                    let key = v.pop().expect("two layouts");
                    Layout::Map(Box::new(key), Box::new(value))
                })
            } else if class == TTL_SNAPSHOT && n.len() == 2 {
                all_layouts(n).map(Layout::Tuple)
            } else if class == TIMER_SNAPSHOT && n.len() == 2 {
                all_layouts(n).map(|kn| Layout::Tuple([vec![Layout::Fixed(8)], kn].concat()))
            } else {
                // another composite (the outer snapshot was empty): its nested classes are known,
                // its element format is not
                None
            };
            Ok(info)
        }
    }
}

/// Every layout of `nested`, or None if one is unknown.
fn all_layouts(nested: &[SnapshotInfo]) -> Option<Vec<Layout>> {
    nested.iter().map(|n| n.layout.clone()).collect()
}

/// A `CompositeTypeSerializerSnapshot` body (version 3+): its magic, outer version, the outer
/// snapshot (`outer` reads it: nothing for most classes, the tuple class for tuples), then the
/// nested snapshots. Only Flink's own composite classes, whose outer snapshot is known, and
/// classes whose outer snapshot is empty are read; any other outer snapshot makes the nested
/// block's magic mismatch.
fn composite<T>(
    r: &mut Reader,
    class: &str,
    version: i32,
    depth: u32,
    outer: impl FnOnce(&mut Reader) -> std::result::Result<T, NotKnown>,
) -> std::result::Result<(SnapshotInfo, T), NotKnown> {
    let i32_is = |r: &mut Reader, v: i32| r.i32("").ok() == Some(v);
    if version < 3 || !i32_is(r, COMPOSITE_MAGIC) || r.i32("").is_err() {
        return Err(NotKnown(format!("no known layout for {class}")));
    }
    let outer = outer(r)?;
    if !i32_is(r, NESTED_MAGIC) || !i32_is(r, 1) {
        return Err(NotKnown(format!(
            "no known layout for {class} (an outer snapshot the tool does not know)"
        )));
    }
    let n = r
        .count("", 6)
        .map_err(|_| NotKnown(format!("a {class} body with its nested serializer count")))?;
    let mut info = SnapshotInfo::new(class, version, None);
    for _ in 0..n {
        info.nested.push(nested_snapshot(r, depth)?);
    }
    Ok((info, outer))
}

/// One nested snapshot as `writeVersionedSnapshot` writes it: class name, version, body.
fn nested_snapshot(r: &mut Reader, depth: u32) -> std::result::Result<SnapshotInfo, NotKnown> {
    let class = r
        .utf("")
        .map_err(|_| NotKnown("a nested snapshot class".into()))?
        .to_string_lossy();
    let version = r
        .i32("")
        .map_err(|_| NotKnown("a nested snapshot version".into()))?;
    read_snapshot(r, &class, version, depth + 1)
}

/// A `LinkedOptionalMap` whose values are versioned snapshots, framed: per entry its snapshot
/// (None when absent, or when its body is not as its class writes it: the frame still bounds it).
fn read_optional_map(
    r: &mut Reader,
    depth: u32,
) -> std::result::Result<Vec<Option<SnapshotInfo>>, String> {
    let mut out = Vec::new();
    for (_, value) in optional_map_frames(r)? {
        out.push(value.and_then(|v| {
            let mut vr = Reader::new(v);
            nested_snapshot(&mut vr, depth)
                .ok()
                .filter(|_| vr.remaining() == 0)
        }));
    }
    Ok(out)
}

fn skip_optional_map(r: &mut Reader) -> std::result::Result<(), String> {
    optional_map_frames(r).map(|_| ())
}

/// The entries of a `LinkedOptionalMap` (`LinkedOptionalMapSerializer`): a header, a count, then
/// per entry its key name and the framed key and value, each present or not.
#[allow(clippy::type_complexity)]
fn optional_map_frames(
    r: &mut Reader,
) -> std::result::Result<Vec<(Option<Bytes>, Option<Bytes>)>, String> {
    if r.i64("").ok() != Some(OPTIONAL_MAP_HEADER) {
        return Err("a LinkedOptionalMap header".into());
    }
    let n = r
        .count("", 4)
        .map_err(|_| "a LinkedOptionalMap size".to_string())?;
    let mut out = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        r.utf("")
            .map_err(|_| "a LinkedOptionalMap key name".to_string())?;
        let mut framed = || -> std::result::Result<Option<Bytes>, String> {
            match r.u8("") {
                Ok(0) => Ok(None),
                Ok(_) => {
                    let len = r
                        .count("", 1)
                        .map_err(|_| "a LinkedOptionalMap frame length".to_string())?;
                    r.bytes(len, "")
                        .map(Some)
                        .map_err(|_| "a LinkedOptionalMap frame".to_string())
                }
                Err(_) => Err("a LinkedOptionalMap presence flag".into()),
            }
        };
        let key = framed()?;
        let value = framed()?;
        out.push((key, value));
    }
    Ok(out)
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

/// What a list state's elements are, as the state's VALUE_SERIALIZER snapshot names them
/// (`Tuple2<String, Long>`, `Tuple2<org.example.Partition (Kryo), Long>`): a name is no proof of
/// whose state it is, its element type is.
#[derive(Clone, Debug, PartialEq)]
pub enum ElementType {
    /// One of Flink's basic types, by its Java name.
    Basic(&'static str),
    /// A class that `KryoSerializer` writes.
    Kryo(String),
    /// `TupleSerializer`: the fields' types.
    Tuple(Vec<ElementType>),
    /// Any other serializer: its snapshot class.
    Other(String),
}

/// The Java types of [`SIMPLE`]'s snapshots.
const JAVA_NAMES: [(&str, &str); 10] = [
    ("LongSerializer$LongSerializerSnapshot", "Long"),
    ("DoubleSerializer$DoubleSerializerSnapshot", "Double"),
    ("IntSerializer$IntSerializerSnapshot", "Integer"),
    ("FloatSerializer$FloatSerializerSnapshot", "Float"),
    ("ShortSerializer$ShortSerializerSnapshot", "Short"),
    ("CharSerializer$CharSerializerSnapshot", "Character"),
    ("ByteSerializer$ByteSerializerSnapshot", "Byte"),
    ("BooleanSerializer$BooleanSerializerSnapshot", "Boolean"),
    ("StringSerializer$StringSerializerSnapshot", "String"),
    (
        "array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot",
        "byte[]",
    ),
];

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElementType::Basic(name) => f.write_str(name),
            ElementType::Kryo(class) => write!(f, "{class} (Kryo)"),
            ElementType::Tuple(fields) => {
                write!(f, "Tuple{}<", fields.len())?;
                for (i, t) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
            ElementType::Other(class) => f.write_str(class),
        }
    }
}

impl ElementType {
    /// The element type of a list state's entry, and the snapshot it was read from. A snapshot
    /// the tool cannot read is [`ElementType::Other`]; only a missing VALUE_SERIALIZER is an error.
    pub fn read_entry<'e>(
        stream: &Bytes,
        entry: &'e MetaInfoEntry,
    ) -> Result<(ElementType, &'e SerializerSnapshot)> {
        let s = value_serializer(entry)?;
        let class = s.class_name.to_string_lossy();
        let mut r = Reader::new(stream.slice(..s.body.1));
        r.seek(s.body.0)?;
        let t = match read_snapshot(&mut r, &class, s.version, 0) {
            Ok(info) if r.remaining() == 0 => ElementType::of(&info),
            _ => ElementType::Other(class),
        };
        Ok((t, s))
    }

    fn of(info: &SnapshotInfo) -> ElementType {
        let java = JAVA_NAMES
            .iter()
            .find(|(name, _)| info.class.strip_prefix(BASE) == Some(name));
        match (info.class.as_str(), java) {
            (_, Some((_, java))) => ElementType::Basic(java),
            (KRYO_SNAPSHOT, _) if info.names.len() == 1 => ElementType::Kryo(info.names[0].clone()),
            (TUPLE_SNAPSHOT, _) => {
                ElementType::Tuple(info.nested.iter().map(ElementType::of).collect())
            }
            _ => ElementType::Other(info.class.clone()),
        }
    }

    /// Whether these are the legacy `FlinkKafkaConsumer`'s offsets: `Tuple2<KafkaTopicPartition,
    /// Long>` with the partition written by Kryo (`FlinkKafkaConsumerBase.createStateSerializer`).
    pub fn is_kafka_legacy(&self) -> bool {
        matches!(self, ElementType::Tuple(f) if f.len() == 2
            && f[0] == ElementType::Kryo(KAFKA_TOPIC_PARTITION.into())
            && f[1] == ElementType::Basic("Long"))
    }
}

/// The legacy `FlinkKafkaConsumer` offsets' element type, as [`ElementType`] displays it.
pub fn kafka_legacy_type() -> String {
    ElementType::Tuple(vec![
        ElementType::Kryo(KAFKA_TOPIC_PARTITION.into()),
        ElementType::Basic("Long"),
    ])
    .to_string()
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
                version: 3,
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

    #[test]
    fn lists_maps_and_pojos_of_keyed_state() {
        // ListSerializer: count, elements
        let list = Layout::List(Box::new(Layout::Fixed(8)));
        let mut d = 2i32.to_be_bytes().to_vec();
        d.extend_from_slice(&[7; 16]);
        assert_eq!(list.end(&d, 0), Some(20));
        assert_eq!(list.end(&d[..19], 0), None);
        // a count the bytes cannot hold is refused at once, not walked
        let mut huge = 0x7FFF_FFFFi32.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0; 64]);
        assert_eq!(list.end(&huge, 0), None);
        // MapSerializer: count, then key, null flag, value unless null
        let map = Layout::Map(Box::new(Layout::Fixed(8)), Box::new(Layout::String));
        let mut d = 2i32.to_be_bytes().to_vec();
        d.extend_from_slice(&[1; 8]);
        d.extend_from_slice(&[0, 3, b'a', b'b']); // not null, "ab"
        d.extend_from_slice(&[2; 8]);
        d.push(1); // null
        assert_eq!(map.end(&d, 0), Some(d.len()));
        // PojoSerializer: flags (1 null, 2 no subclass), then per field a null flag and value
        let pojo = Layout::Pojo(vec![Layout::Fixed(8), Layout::String]);
        assert_eq!(pojo.end(&[1], 0), Some(1));
        let d = [&[2u8, 0][..], &[9; 8], &[1]].concat();
        assert_eq!(pojo.end(&d, 0), Some(d.len()));
        // a subclass (flags 4 or 8) has no layout the tool knows
        assert_eq!(pojo.end(&[4, 0], 0), None);
    }
}
