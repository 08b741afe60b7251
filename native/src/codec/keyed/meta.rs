//! The keyed backend's meta info (`KeyedBackendSerializationProxy`): the compression flag, the key
//! serializer and one META_INFO entry per registered state, with each entry's exact byte range.
//!
//! Read in Flink's sources (flink-runtime and flink-core sources jars of 1.13.6, 1.15.4, 1.20.3
//! and 2.3.0; the layout is the same in all four):
//! - `KeyedBackendSerializationProxy.write`: i32 `VERSION` (6 in every one), bool
//!   `usingKeyGroupCompression`, the key serializer's snapshot, i16 number of states (checked
//!   `<= Short.MAX_VALUE`), then each state's meta info. 1.13 and 1.15 read versions 1 to 6, 1.17+
//!   only 6 ("please migrate using Flink 1.16").
//! - A snapshot (`TypeSerializerSnapshotSerializationProxy`, version 2): i32 2, UTF snapshot class,
//!   i32 snapshot version, then the body, which is not framed (see [`crate::codec::elements`]).
//! - `StateMetaInfoSnapshotReadersWriters.CurrentWriterImpl`: UTF name, i32 ordinal of
//!   `BackendStateType` (KEY_VALUE 0, OPERATOR 1, BROADCAST 2, PRIORITY_QUEUE 3, and 2.0+'s
//!   KEY_VALUE_V2 4 of the async state API), i32 option count and (UTF, UTF) pairs, i32
//!   serializer count and (UTF key, snapshot) pairs, both from `HashMap`s (order not fixed).
//! - `RegisteredKeyValueStateBackendMetaInfo.computeSnapshot`: the option `KEYED_STATE_TYPE`
//!   (`StateDescriptor.Type`: VALUE, LIST, REDUCING, FOLDING, AGGREGATING, MAP), serializers
//!   NAMESPACE_SERIALIZER and VALUE_SERIALIZER; 2.x's V2 map state adds USER_KEY_SERIALIZER.
//!   `RegisteredPriorityQueueStateBackendMetaInfo` (timers): no option, VALUE_SERIALIZER only.
//! - TTL: `TtlStateFactory` registers the state with `TtlSerializer` as value serializer (in a
//!   list state as the element, in a map state as the value serializer). Its snapshot nests the
//!   timestamp's and the user value's snapshots and nothing else: the TTL settings (time to live,
//!   update type, visibility, cleanup) are not in the meta info.
//!
//! Not seen in a real file (the fixtures' jobs use Flink's synchronous state API): KEY_VALUE_V2
//! entries and USER_KEY_SERIALIZER, read by the same layout as Flink's writer.
//!
//! A snapshot body's end is found by reading the body where its class is known
//! ([`elements::read_snapshot`]); otherwise from what must follow it (the next serializer key, the
//! next entry, the end of the header), searched in the header, which the caller bounds by where
//! the data starts.

use crate::codec::elements::{self, Layout, SnapshotInfo};
use crate::codec::io::{JStr, Reader};
use crate::codec::metainfo::SerializerSnapshot;
use crate::error::{Error, Result};
use bytes::Bytes;

/// The only version written since Flink 1.8.
pub const VERSION: i32 = 6;
/// The key the meta info gives the key serializer (it writes none: the snapshot comes first).
pub const KEY_SERIALIZER: &str = "KEY_SERIALIZER";
/// A keyed entry's serializer keys: Flink's `StateMetaInfoSnapshot.CommonSerializerKeys` but the
/// key serializer's, the only ones its keyed meta infos write; any other key is refused.
const SERIALIZER_KEYS: [&[u8]; 3] = [
    b"NAMESPACE_SERIALIZER",
    b"VALUE_SERIALIZER",
    b"USER_KEY_SERIALIZER",
];
/// The bytes a key-value entry has after its name: its type (0 or 4) comes before them, then one
/// option, `KEYED_STATE_TYPE`.
const KEYED_OPTION: &[u8] = b"\x00\x00\x00\x01\x00\x10KEYED_STATE_TYPE";
/// A priority queue entry after its name: type 3, no option, one serializer, VALUE_SERIALIZER.
const QUEUE_ENTRY: &[u8] =
    b"\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00\x10VALUE_SERIALIZER\x00\x00\x00\x02";
/// The fewest bytes an entry takes: name, type, no option, one serializer key and snapshot header.
const MIN_ENTRY: usize = 2 + 4 + 4 + 4 + 2 + 4 + 2 + 4;

/// `StateMetaInfoSnapshot.BackendStateType`, by the ordinal the meta info writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendStateType {
    KeyValue,
    Operator,
    Broadcast,
    PriorityQueue,
    KeyValueV2,
}

impl BackendStateType {
    pub fn from_ordinal(o: i32) -> Option<Self> {
        Some(match o {
            0 => BackendStateType::KeyValue,
            1 => BackendStateType::Operator,
            2 => BackendStateType::Broadcast,
            3 => BackendStateType::PriorityQueue,
            4 => BackendStateType::KeyValueV2,
            _ => return None,
        })
    }

    /// The type [`Self::name`] spells `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        (0..5)
            .filter_map(Self::from_ordinal)
            .find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            BackendStateType::KeyValue => "KEY_VALUE",
            BackendStateType::Operator => "OPERATOR",
            BackendStateType::Broadcast => "BROADCAST",
            BackendStateType::PriorityQueue => "PRIORITY_QUEUE",
            BackendStateType::KeyValueV2 => "KEY_VALUE_V2",
        }
    }
}

/// One serializer of a state, or the key serializer: its snapshot (key, class, version, body
/// range in the header) and, where the tool knows the class, what the body says.
#[derive(Clone, Debug)]
pub struct KeyedSerializer {
    pub snapshot: SerializerSnapshot,
    pub info: Option<SnapshotInfo>,
}

impl KeyedSerializer {
    pub fn layout(&self) -> Option<&Layout> {
        self.info.as_ref().and_then(|i| i.layout.as_ref())
    }

    pub fn class(&self) -> String {
        self.snapshot.class_name.to_string_lossy()
    }
}

/// One META_INFO entry: a registered state, with its byte range in the stream.
#[derive(Clone, Debug)]
pub struct KeyedStateMeta {
    pub name: JStr,
    pub backend_type: BackendStateType,
    pub options: Vec<(JStr, JStr)>,
    pub serializers: Vec<KeyedSerializer>,
    pub start: usize,
    pub end: usize,
}

impl KeyedStateMeta {
    /// The `KEYED_STATE_TYPE` option (VALUE, LIST, MAP, REDUCING, AGGREGATING, FOLDING).
    pub fn state_type(&self) -> Option<String> {
        self.options
            .iter()
            .find(|(k, _)| k.as_bytes() == b"KEYED_STATE_TYPE")
            .map(|(_, v)| v.to_string_lossy())
    }

    pub fn serializer(&self, key: &str) -> Option<&KeyedSerializer> {
        self.serializers
            .iter()
            .find(|s| s.snapshot.key.as_bytes() == key.as_bytes())
    }

    /// Whether the value serializer is Flink's TTL wrapper (the state has a TTL).
    pub fn has_ttl(&self) -> bool {
        self.serializer("VALUE_SERIALIZER")
            .and_then(|s| s.info.as_ref())
            .is_some_and(SnapshotInfo::is_ttl)
            || self
                .serializer("VALUE_SERIALIZER")
                .is_some_and(|s| s.class() == elements::TTL_SNAPSHOT)
    }
}

/// The parsed header of a keyed state stream (or a RocksDB handle's meta stream).
#[derive(Clone, Debug)]
pub struct KeyedBackendMeta {
    pub version: i32,
    /// Snappy-compressed key groups (`execution.checkpointing.snapshot-compression`).
    pub compressed: bool,
    pub key_serializer: KeyedSerializer,
    /// The states in the order of the header: a state's index here is its `kvStateId`.
    pub states: Vec<KeyedStateMeta>,
    /// The header's length.
    pub len: usize,
}

/// Parses a header that is exactly `header` (the stream up to where its data starts, or a whole
/// meta stream).
pub fn parse(header: &Bytes) -> Result<KeyedBackendMeta> {
    let mut r = Reader::new(header.clone());
    let version = r.i32("the keyed backend serialization proxy version")?;
    if version != VERSION {
        if (1..VERSION).contains(&version) {
            return Err(Error::Unsupported {
                file: String::new(),
                offset: 0,
                what: format!(
                    "keyed backend serialization proxy version {version} (written by Flink 1.7 or \
                     older; Flink 1.17+ cannot read it either: restore it with Flink 1.16 and take \
                     a new savepoint)"
                ),
            });
        }
        return Err(Error::format(
            0,
            format!("the keyed backend serialization proxy version {VERSION}"),
            Some(version.to_string()),
        ));
    }
    let compressed = r.u8("the key-group compression flag")? != 0;
    let mut p = Parser { r, buf: header };
    let key_serializer = p.serializer(JStr::new(KEY_SERIALIZER), "the key", Follow::StateCount)?;
    let at = p.r.pos();
    let n = p.r.i16("the number of keyed states")?;
    if n < 0 || n as usize * MIN_ENTRY > p.r.remaining() {
        return Err(Error::format(
            at as u64,
            format!(
                "a number of keyed states that fits in the {} bytes of meta info left",
                p.r.remaining()
            ),
            Some(n.to_string()),
        ));
    }
    let n = n as usize;
    let mut states = Vec::with_capacity(n);
    for i in 0..n {
        let follow = if i + 1 < n {
            Follow::Entry
        } else {
            Follow::End
        };
        states.push(p.entry(follow)?);
    }
    if p.r.remaining() != 0 {
        return Err(p.r.error(
            format!(
                "the end of the keyed meta info (the data starts at byte {})",
                header.len()
            ),
            None,
        ));
    }
    Ok(KeyedBackendMeta {
        version,
        compressed,
        key_serializer,
        states,
        len: header.len(),
    })
}

/// What must come right after a serializer snapshot body.
#[derive(Clone, Copy, PartialEq)]
enum Follow {
    /// The i16 state count after the key serializer.
    StateCount,
    /// The next serializer key of the same entry.
    Serializer,
    /// The next entry.
    Entry,
    /// The end of the header.
    End,
}

struct Parser<'a> {
    r: Reader,
    buf: &'a Bytes,
}

impl Parser<'_> {
    fn entry(&mut self, follow: Follow) -> Result<KeyedStateMeta> {
        let start = self.r.pos();
        let name = self.r.utf("a keyed state name")?;
        let at = self.r.pos();
        let t = self.r.i32("the backend state type")?;
        let backend_type = BackendStateType::from_ordinal(t)
            .filter(|t| !matches!(t, BackendStateType::Operator | BackendStateType::Broadcast))
            .ok_or_else(|| {
                Error::format(
                    at as u64,
                    format!(
                        "a keyed backend state type of state '{name}' (0 KEY_VALUE, 3 \
                         PRIORITY_QUEUE or 4 KEY_VALUE_V2)"
                    ),
                    Some(t.to_string()),
                )
            })?;
        let n_options = self.r.count("the number of state options", 4)?;
        let mut options = Vec::with_capacity(n_options);
        for _ in 0..n_options {
            let k = self.r.utf("a state option key")?;
            let v = self.r.utf("a state option value")?;
            options.push((k, v));
        }
        let n_ser = self.r.count("the number of serializer snapshots", 12)?;
        let mut serializers = Vec::with_capacity(n_ser);
        let what = format!("state '{name}'");
        for j in 0..n_ser {
            let at = self.r.pos();
            let key = self.r.utf("a serializer key")?;
            // Flink's reader takes any key, but its keyed meta infos write only these
            // (`CommonSerializerKeys`): another is no file Flink wrote, and no role to report
            if !SERIALIZER_KEYS.contains(&key.as_bytes()) {
                return Err(Error::format(
                    at as u64,
                    format!(
                        "a serializer key of state '{name}' (NAMESPACE_SERIALIZER, \
                         VALUE_SERIALIZER or USER_KEY_SERIALIZER)"
                    ),
                    Some(key.to_string()),
                ));
            }
            let f = if j + 1 < n_ser {
                Follow::Serializer
            } else {
                follow
            };
            serializers.push(self.serializer(key, &what, f)?);
        }
        Ok(KeyedStateMeta {
            name,
            backend_type,
            options,
            serializers,
            start,
            end: self.r.pos(),
        })
    }

    fn serializer(&mut self, key: JStr, of: &str, follow: Follow) -> Result<KeyedSerializer> {
        let (class_name, version) =
            elements::read_snapshot_header(&mut self.r, &format!("{of}'s {key}"))?;
        let body_start = self.r.pos();
        let mut probe = Reader::new(self.buf.clone());
        probe.seek(body_start)?;
        let parsed = elements::read_snapshot(&mut probe, &class_name.to_string_lossy(), version, 0);
        // a body the tool understands ends where it was read to: what follows is then parsed and
        // checked in turn, so a corruption there is named where it is, never searched around
        let (end, info) = match parsed {
            Ok(info) => (probe.pos(), Some(info)),
            Err(_) => (
                self.find(body_start, follow).ok_or_else(|| {
                    Error::format(
                        body_start as u64,
                        format!(
                            "the end of the {key} snapshot of {of} ({class_name}): {}",
                            match follow {
                                Follow::StateCount => "the number of states and an entry",
                                Follow::Serializer => "the next serializer key",
                                Follow::Entry => "the next state's entry",
                                Follow::End => "the end of the meta info",
                            }
                        ),
                        Some("none follows".into()),
                    )
                })?,
                None,
            ),
        };
        self.r.seek(end)?;
        Ok(KeyedSerializer {
            snapshot: SerializerSnapshot {
                key,
                class_name,
                version,
                body: (body_start, end),
            },
            info,
        })
    }

    /// Whether what `follow` names starts at `pos`.
    fn follows(&self, pos: usize, follow: Follow) -> bool {
        let b = &self.buf[..];
        match follow {
            Follow::End => pos == b.len(),
            Follow::Serializer => serializer_key_at(b, pos),
            Follow::Entry => entry_at(b, pos),
            Follow::StateCount => match b.get(pos..pos + 2) {
                Some(&[0, 0]) => pos + 2 == b.len(),
                Some(n) => i16::from_be_bytes([n[0], n[1]]) > 0 && entry_at(b, pos + 2),
                None => false,
            },
        }
    }

    /// The first position at or after `from` where what `follow` names starts.
    fn find(&self, from: usize, follow: Follow) -> Option<usize> {
        let b = &self.buf[..];
        match follow {
            Follow::End => (from <= b.len()).then_some(b.len()),
            Follow::Serializer => (from..b.len()).find(|&p| serializer_key_at(b, p)),
            Follow::Entry => find_entry(b, from),
            Follow::StateCount => match find_entry(b, from + 2) {
                Some(e) if self.follows(e - 2, follow) => Some(e - 2),
                _ => {
                    (b.len() >= from + 2 && self.follows(b.len() - 2, follow)).then(|| b.len() - 2)
                }
            },
        }
    }
}

/// A serializer key (UTF) and the snapshot proxy version 2 at `pos`.
fn serializer_key_at(b: &[u8], pos: usize) -> bool {
    SERIALIZER_KEYS.iter().any(|k| {
        let n = k.len();
        b.get(pos..pos + 2) == Some(&(n as u16).to_be_bytes()[..])
            && b.get(pos + 2..pos + 2 + n) == Some(k)
            && b.get(pos + 2 + n..pos + 6 + n) == Some(&[0, 0, 0, 2][..])
    })
}

/// Whether a keyed META_INFO entry plausibly starts at `pos`: a name, a keyed backend type, a
/// few options, a few serializers, and a first serializer key with snapshot proxy version 2.
fn entry_at(b: &[u8], pos: usize) -> bool {
    let mut p = pos;
    let utf = |p: &mut usize| -> Option<()> {
        let n = u16::from_be_bytes(b.get(*p..*p + 2)?.try_into().ok()?) as usize;
        b.get(*p + 2..*p + 2 + n)?;
        *p += 2 + n;
        Some(())
    };
    let i32_at = |p: &mut usize| -> Option<i32> {
        let v = i32::from_be_bytes(b.get(*p..*p + 4)?.try_into().ok()?);
        *p += 4;
        Some(v)
    };
    let ok = (|| -> Option<()> {
        utf(&mut p)?;
        if !matches!(i32_at(&mut p)?, 0 | 3 | 4) {
            return None;
        }
        let n = i32_at(&mut p)?;
        if !(0..=16).contains(&n) {
            return None;
        }
        for _ in 0..n * 2 {
            utf(&mut p)?;
        }
        if !(1..=8).contains(&i32_at(&mut p)?) {
            return None;
        }
        serializer_key_at(b, p).then_some(())
    })();
    ok.is_some()
}

/// The first entry start at or after `from`, found from the bytes that follow a name.
fn find_entry(b: &[u8], from: usize) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (pattern, type_before) in [(KEYED_OPTION, true), (QUEUE_ENTRY, false)] {
        let mut search = from;
        while let Some(k) = find(b, pattern, search) {
            // the name ends before the type, which the key-value pattern does not include
            let name_end = if type_before {
                k.checked_sub(4)
            } else {
                Some(k)
            };
            if let Some(start) = name_end.and_then(|e| name_start(b, from, e)) {
                best = Some(best.map_or(start, |x| x.min(start)));
                break;
            }
            search = k + 1;
        }
    }
    best
}

/// Where a name (a UTF: u16 length, bytes) that ends at `end` starts, no earlier than `from`,
/// such that an entry starts there. Modified UTF-8 has no zero byte: the search stops at the first
/// zero before `end` (for names below 256 bytes, the high byte of their length), so it is short
/// and no shorter false match exists.
fn name_start(b: &[u8], from: usize, end: usize) -> Option<usize> {
    let lowest = from.max(end.saturating_sub(2 + u16::MAX as usize));
    let mut s = end.checked_sub(2)?;
    while s >= lowest {
        if u16::from_be_bytes([b[s], b[s + 1]]) as usize == end - s - 2 && entry_at(b, s) {
            return Some(s);
        }
        // the next candidate's name would hold b[s + 1]
        if s == 0 || b[s + 1] == 0 {
            break;
        }
        s -= 1;
    }
    None
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Parses one state's meta info snapshot (`StateMetaInfoSnapshotReadersWriters.CurrentWriterImpl`)
/// that starts at `from` in `record` and is followed by bytes this tool does not read (a changelog
/// METADATA record's TTL config and default value): a snapshot body whose class the tool does not
/// know is taken to run to the end of `record`.
pub fn parse_state_entry(record: &Bytes, from: usize) -> Result<KeyedStateMeta> {
    let mut r = Reader::new(record.clone());
    r.seek(from)?;
    let mut p = Parser { r, buf: record };
    p.entry(Follow::End)
}
