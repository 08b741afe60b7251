//! The operator-state stream that an `OperatorStreamStateHandle` delegate holds
//! (`OperatorBackendSerializationProxy` header, then the elements): locating each META_INFO entry
//! exactly, and each state's element byte ranges from the handle's offsets.
//!
//! Serializer snapshot bodies are not framed, so an entry's end is found from what must follow it
//! (the next serializer key, the next entry's fixed prefix, the broadcast count, or the first
//! element) and the whole layout is then checked against the offsets. Nothing here needs the
//! state's Java classes.

use crate::codec::elements::{self, Layout};
use crate::codec::handles::{Mode, Offsets, OperatorHandle, StateMetaInfo};
use crate::codec::io::{JStr, Reader};
use crate::codec::longs;
use crate::codec::metainfo::{EntryKind, MetaInfoEntry, SerializerSnapshot};
use crate::codec::snappy;
use crate::error::{Error, Result};
use bytes::Bytes;

const DISTRIBUTION_MODE_OPTION: &[u8] = b"\x00\x20OPERATOR_STATE_DISTRIBUTION_MODE";
/// The snappy framing stream identifier that opens a compressed data section.
pub const SNAPPY_STREAM_IDENTIFIER: [u8; 10] =
    [0xFF, 0x06, 0x00, 0x00, 0x73, 0x4E, 0x61, 0x50, 0x70, 0x59];

/// The parsed header of one operator-state stream.
#[derive(Clone, Debug)]
pub struct StreamHeader {
    pub proxy_version: i32,
    /// Proxy 6: the compression flag (snappy, Flink 1.18+).
    pub compressed: bool,
    /// Position of the i16 list-state count and of the i16 broadcast-state count.
    pub list_count_at: usize,
    pub broadcast_count_at: usize,
    pub entries: Vec<MetaInfoEntry>,
    /// Where the data section starts (the first byte after the header).
    pub data_start: usize,
    /// Each state's block of elements, when the offsets have the usual layout (see
    /// [`state_blocks`]); computed here because it costs the same pass as the smallest offset.
    pub blocks: Option<Blocks>,
    /// Flink 1.18's compressed layout: a snappy stream identifier opens each state's data.
    pub stream_per_state: bool,
}

/// Per state (in the handle's order) the byte range of its data, None for a state without any.
pub type Blocks = Vec<Option<(u64, u64)>>;

impl StreamHeader {
    pub fn entry(&self, name: &JStr) -> Option<&MetaInfoEntry> {
        self.entries.iter().find(|e| &e.name == name)
    }
}

/// Parses the header of `stream`, given the handle that points at it (its map names every state
/// the backend registered, and its offsets fix where the data starts).
pub fn parse_header(stream: &Bytes, handle: &OperatorHandle) -> Result<StreamHeader> {
    if stream.is_empty() && handle.states.is_empty() {
        // An EmptyFileMergingOperatorStreamStateHandle (file merging, nothing registered).
        return Ok(StreamHeader {
            proxy_version: 0,
            compressed: false,
            list_count_at: 0,
            broadcast_count_at: 0,
            entries: Vec::new(),
            data_start: 0,
            blocks: None,
            stream_per_state: false,
        });
    }
    let mut r = Reader::new(stream.clone());
    let proxy_version = r.i32("the operator state proxy version")?;
    if !(1..=6).contains(&proxy_version) {
        return Err(Error::format(
            0,
            "an operator state serialization proxy version from 1 to 6",
            Some(proxy_version.to_string()),
        ));
    }
    if proxy_version < 5 {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: 0,
            what: format!(
                "operator state proxy version {proxy_version} (written before Flink 1.13; \
                 restore it with Flink 1.16 and take a new savepoint)"
            ),
        });
    }
    let compressed = if proxy_version >= 6 {
        r.u8("the state compression flag")? != 0
    } else {
        false
    };
    let names: Vec<&JStr> = handle.states.iter().map(|s| &s.name).collect();
    // One pass over the offsets: with the usual layout the smallest offset is the first block's.
    let blocks = state_blocks(handle, stream.len() as u64);
    let min_offset = match &blocks {
        Some(b) => b.iter().flatten().map(|&(start, _)| start as usize).min(),
        None => handle
            .states
            .iter()
            .flat_map(|s| s.offsets.iter())
            .min()
            .map(|o| o as usize),
    };
    if let Some(m) = min_offset.filter(|&m| m > stream.len()) {
        return Err(Error::format(
            0,
            format!(
                "element offsets within the {}-byte state stream",
                stream.len()
            ),
            Some(m.to_string()),
        ));
    }
    let mut walk = Walk {
        r,
        names,
        data_start: min_offset,
        stream_len: stream.len(),
        compressed,
    };
    let list_count_at = walk.r.pos();
    let n_list = walk.count16("the number of operator states in the header")?;
    let mut entries = Vec::with_capacity(n_list);
    for i in 0..n_list {
        let follow = if i + 1 < n_list {
            Follow::Entry
        } else {
            Follow::BroadcastCount
        };
        entries.push(walk.entry(EntryKind::List, follow)?);
    }
    let broadcast_count_at = walk.r.pos();
    let n_broadcast = walk.count16("the number of broadcast states in the header")?;
    for i in 0..n_broadcast {
        let follow = if i + 1 < n_broadcast {
            Follow::Entry
        } else {
            Follow::Data
        };
        entries.push(walk.entry(EntryKind::Broadcast, follow)?);
    }
    let data_start = walk.r.pos();
    walk.check_data_start(data_start)?;
    let segments = if compressed {
        identifier_segments(stream, data_start, &entries, handle)?
    } else {
        None
    };
    let stream_per_state = segments.is_some();
    let blocks = segments.or(blocks);
    Ok(StreamHeader {
        proxy_version,
        compressed,
        list_count_at,
        broadcast_count_at,
        entries,
        data_start,
        blocks,
        stream_per_state,
    })
}

/// What must come right after a serializer snapshot body that ends an entry.
#[derive(Clone, Copy, PartialEq)]
enum Follow {
    Entry,
    BroadcastCount,
    Data,
}

struct Walk<'a> {
    r: Reader,
    names: Vec<&'a JStr>,
    data_start: Option<usize>,
    stream_len: usize,
    compressed: bool,
}

impl Walk<'_> {
    fn count16(&mut self, what: &str) -> Result<usize> {
        let at = self.r.pos();
        let n = self.r.i16(what)?;
        if n < 0 {
            return Err(Error::format(
                at as u64,
                format!("{what} (>= 0)"),
                Some(n.to_string()),
            ));
        }
        Ok(n as usize)
    }

    fn entry(&mut self, kind: EntryKind, follow: Follow) -> Result<MetaInfoEntry> {
        let start = self.r.pos();
        let name = self.r.utf("a state name in the operator state header")?;
        let at = self.r.pos();
        let t = self.r.i32("the backend state type")?;
        let expected = if kind == EntryKind::List { 1 } else { 2 };
        if t != expected {
            return Err(Error::format(
                at as u64,
                format!(
                    "backend state type {expected} ({}) for state '{name}'",
                    if expected == 1 {
                        "OPERATOR"
                    } else {
                        "BROADCAST"
                    }
                ),
                Some(t.to_string()),
            ));
        }
        let n_options = self.r.count("the number of state options", 4)?;
        let mut mode = JStr::default();
        for _ in 0..n_options {
            let key = self.r.utf("a state option key")?;
            let value = self.r.utf("a state option value")?;
            if key.as_bytes() == b"OPERATOR_STATE_DISTRIBUTION_MODE" {
                mode = value;
            }
        }
        let n_ser = self.r.count("the number of serializer snapshots", 8)?;
        let mut serializers = Vec::with_capacity(n_ser);
        for j in 0..n_ser {
            let key = self.r.utf("a serializer key")?;
            let (class_name, version) =
                elements::read_snapshot_header(&mut self.r, &format!("state '{name}'"))?;
            let body_start = self.r.pos();
            let body_end = if j + 1 < n_ser {
                self.find_serializer_key(body_start)?
            } else {
                match follow {
                    Follow::Entry => self.find_entry_start(body_start)?,
                    Follow::BroadcastCount => self.find_broadcast_count(body_start)?,
                    Follow::Data => self.find_data_start(body_start)?,
                }
            };
            self.r.seek(body_end)?;
            serializers.push(SerializerSnapshot {
                key,
                class_name,
                version,
                body: (body_start, body_end),
            });
        }
        Ok(MetaInfoEntry {
            name,
            kind,
            mode,
            serializers,
            start,
            end: self.r.pos(),
        })
    }

    /// The bytes the header can lie in: up to the first element (the smallest offset), so that
    /// no search ever reads into the data section, which can be gigabytes.
    fn buf(&self) -> Bytes {
        let end = self
            .data_start
            .map_or(self.r.len(), |d| d.min(self.r.len()));
        self.r.slice(0, end)
    }

    fn not_found(&self, from: usize, what: &str) -> Error {
        Error::format(
            from as u64,
            format!("a serializer snapshot body followed by {what}"),
            None,
        )
    }

    fn find_serializer_key(&self, from: usize) -> Result<usize> {
        let buf = self.buf();
        let mut best: Option<usize> = None;
        for key in [
            &b"\x00\x0EKEY_SERIALIZER\x00\x00\x00\x02"[..],
            &b"\x00\x10VALUE_SERIALIZER\x00\x00\x00\x02"[..],
        ] {
            if let Some(p) = find(&buf, key, from) {
                best = Some(best.map_or(p, |b| b.min(p)));
            }
        }
        best.ok_or_else(|| self.not_found(from, "the next serializer key"))
    }

    /// The start of the next META_INFO entry: `UTF name`, `i32 type (1|2)`, `i32 1`,
    /// `UTF "OPERATOR_STATE_DISTRIBUTION_MODE"`. Prefers names that the handle's map contains.
    fn find_entry_start(&self, from: usize) -> Result<usize> {
        let buf = self.buf();
        let mut search = from;
        while let Some(k) = find(&buf, DISTRIBUTION_MODE_OPTION, search) {
            // k points at the option key; before it: i32 numOptions, i32 type, UTF name.
            if k >= from + 10
                && buf[k - 4..k] == [0, 0, 0, 1]
                && matches!(buf[k - 8..k - 4], [0, 0, 0, 1] | [0, 0, 0, 2])
            {
                let name_end = k - 8;
                for n in &self.names {
                    let len = n.as_bytes().len();
                    if name_end >= from + len + 2
                        && &buf[name_end - len..name_end] == n.as_bytes()
                        && buf[name_end - len - 2..name_end - len] == (len as u16).to_be_bytes()
                    {
                        return Ok(name_end - len - 2);
                    }
                }
                // A name the map does not list (Flink lists every registered state, so this
                // is unusual): take the nearest consistent length prefix.
                let mut s = name_end.saturating_sub(2);
                while s >= from {
                    let len = u16::from_be_bytes([buf[s], buf[s + 1]]) as usize;
                    if s + 2 + len == name_end {
                        return Ok(s);
                    }
                    if s == 0 {
                        break;
                    }
                    s -= 1;
                }
            }
            search = k + 1;
        }
        Err(self.not_found(from, "the next state's META_INFO entry"))
    }

    fn find_broadcast_count(&self, from: usize) -> Result<usize> {
        let buf = self.buf();
        // Either broadcast entries follow (count > 0, then an entry), or the count is 0 and
        // the data (or EOF) follows.
        if let Some(ds) = self.expected_data_start() {
            if ds >= from + 2 && buf[ds - 2..ds] == [0, 0] {
                // Might still be a broadcast section ending exactly at ds; prefer an entry
                // start if one exists before ds.
                if let Ok(e) = self.find_entry_start(from) {
                    if e < ds && e >= from + 2 && i16::from_be_bytes([buf[e - 2], buf[e - 1]]) > 0 {
                        return Ok(e - 2);
                    }
                }
                return Ok(ds - 2);
            }
        }
        let e = self.find_entry_start(from)?;
        if e >= from + 2 && i16::from_be_bytes([buf[e - 2], buf[e - 1]]) > 0 {
            Ok(e - 2)
        } else {
            Err(self.not_found(from, "the broadcast state count"))
        }
    }

    fn find_data_start(&self, from: usize) -> Result<usize> {
        self.expected_data_start()
            .filter(|&d| d >= from)
            .ok_or_else(|| self.not_found(from, "the first element of the data section"))
    }

    /// The first data byte as the offsets tell it: the smallest offset (less the snappy
    /// identifier when compressed), or EOF when no state has elements.
    ///
    /// Flink 1.18 opens each state's data with its own stream identifier, and a state without
    /// elements leaves only that identifier: the data starts before any run of identifiers that
    /// ends where the first element (or the stream) does.
    fn expected_data_start(&self) -> Option<usize> {
        if !self.compressed {
            return Some(self.data_start.unwrap_or(self.stream_len));
        }
        let id = &SNAPPY_STREAM_IDENTIFIER[..];
        let buf = self.buf();
        let mut d = match self.data_start {
            Some(d) => d.saturating_sub(id.len()),
            None => self.stream_len,
        };
        while d >= id.len() && &buf[d - id.len()..d] == id {
            d -= id.len();
        }
        (d < self.stream_len).then_some(d)
    }

    fn check_data_start(&self, end: usize) -> Result<()> {
        let buf = self.r.slice(0, self.r.len());
        if self.compressed {
            if buf.len() > end && buf[end..].starts_with(&SNAPPY_STREAM_IDENTIFIER)
                || buf.len() == end
            {
                return Ok(());
            }
            return Err(Error::format(
                end as u64,
                "the snappy stream identifier after the header",
                None,
            ));
        }
        match self.expected_data_start() {
            Some(d) if d != end => Err(Error::format(
                end as u64,
                format!("the header to end where the first element starts (byte {d})"),
                None,
            )),
            _ => Ok(()),
        }
    }
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() || needle.is_empty() {
        return None;
    }
    let first = needle[0];
    let mut i = from;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|&b| b == first)
        {
            None => return None,
            Some(p) => {
                i += p;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

/// The snappy frames of a compressed data section (a 4-byte chunk header: type, then a 24-bit
/// little-endian length). Flink 1.19+ writes one stream identifier chunk, then frames. Flink 1.18
/// (FLINK-30113) compressed each state with a new stream, so an identifier opens each state's data,
/// in header order, for states without elements too. For that layout, returns per handle state
/// its segment `[identifier, next identifier or end of stream)`: cutting a whole segment leaves
/// what Flink writes without the state, and an element runs to the next offset or the segment's
/// end. None for the single-identifier layout.
fn identifier_segments(
    stream: &Bytes,
    data_start: usize,
    entries: &[MetaInfoEntry],
    handle: &OperatorHandle,
) -> Result<Option<Blocks>> {
    let id = &SNAPPY_STREAM_IDENTIFIER[..];
    let mut starts = Vec::new();
    let mut p = data_start;
    while p < stream.len() {
        let Some(chunk) = stream.get(p..p + 4) else {
            return Err(Error::format(
                p as u64,
                "a snappy frame header (4 bytes)",
                Some(format!("{} bytes before the end", stream.len() - p)),
            ));
        };
        let len = u32::from_le_bytes([chunk[1], chunk[2], chunk[3], 0]) as usize;
        if stream.get(p..p + id.len()) == Some(id) {
            starts.push(p);
        }
        if p + 4 + len > stream.len() {
            return Err(Error::format(
                p as u64,
                format!("a snappy frame of {len} bytes within the stream"),
                Some(format!("{} bytes left", stream.len() - p - 4)),
            ));
        }
        p += 4 + len;
    }
    if starts.len() <= 1 {
        return Ok(None);
    }
    if starts.len() != entries.len() {
        return Err(Error::format(
            data_start as u64,
            format!(
                "one snappy stream identifier per state of the header ({} states; the Flink 1.18 layout)",
                entries.len()
            ),
            Some(format!("{} identifiers", starts.len())),
        ));
    }
    let segment = |i: usize| {
        (
            starts[i],
            starts.get(i + 1).copied().unwrap_or(stream.len()),
        )
    };
    let mut out = Vec::with_capacity(handle.states.len());
    for st in &handle.states {
        let Some(i) = entries.iter().position(|e| e.name == st.name) else {
            return Err(Error::format(
                data_start as u64,
                format!("a META_INFO entry for state '{}' in the header", st.name),
                None,
            ));
        };
        let (a, b) = segment(i);
        // 1.18 does not flush the compressor for each element: every element of a state may
        // have the offset of its first frame, and the restore reads them one after another.
        let mut expect = a + id.len();
        for o in st.offsets.iter() {
            let o = o as usize;
            if o < expect || o >= b {
                return Err(Error::format(
                    a as u64,
                    format!(
                        "the offsets of state '{}' after its stream identifier, not descending, within [{}, {b})",
                        st.name,
                        a + id.len()
                    ),
                    Some(format!("offset {o}")),
                ));
            }
            expect = o;
        }
        out.push(Some((a as u64, b as u64)));
    }
    Ok(Some(out))
}

/// Whether some elements of a state share an offset: Flink 1.18 records one offset for all
/// elements of a compressed state, so their boundaries are not in the file.
pub fn shares_offsets(offsets: &Offsets) -> bool {
    (1..offsets.len()).any(|i| offsets.get(i) == offsets.get(i - 1))
}

/// A compressed state's elements, decoded: its frames `[from, to)` (from its first offset to the
/// next stream identifier or the end) hold `bytes`, and element k is `bytes[elements[k]]`.
pub struct FramedElements {
    pub from: u64,
    pub to: u64,
    pub bytes: Vec<u8>,
    pub elements: Vec<(usize, usize)>,
}

/// Decodes the elements of a compressed list state whose offsets do not bound them, with the
/// element layout its serializer snapshot gives. Each offset must be the start of a frame at or
/// before its element (Flink 1.18 gives every element the state's first frame).
pub fn framed_elements(
    stream: &Bytes,
    header: &StreamHeader,
    st: &StateMetaInfo,
) -> Result<FramedElements> {
    let entry = header.entry(&st.name).ok_or_else(|| {
        Error::format(
            0,
            format!("a META_INFO entry for state '{}' in the header", st.name),
            None,
        )
    })?;
    let layout = Layout::of_entry(stream, entry)?;
    let first = st.offsets.iter().next().unwrap_or(0);
    let from = usize::try_from(first)
        .ok()
        .filter(|&o| o <= stream.len())
        .ok_or_else(|| {
            Error::format(
                0,
                format!("the offsets of state '{}' within the stream", st.name),
                Some(first.to_string()),
            )
        })?;
    let decoded = snappy::decode_until_identifier(stream, from)?;
    let elements = elements::split(&layout, &decoded.bytes, st.offsets.len()).ok_or_else(|| {
        Error::format(
            from as u64,
            format!(
                "{} elements of state '{}' filling its {} decompressed bytes",
                st.offsets.len(),
                st.name,
                decoded.bytes.len()
            ),
            None,
        )
    })?;
    for (o, &(start, _)) in st.offsets.iter().zip(&elements) {
        match decoded.frames.binary_search_by_key(&(o as u64), |f| f.0) {
            Ok(i) if decoded.frames[i].1 <= start => {}
            _ => {
                return Err(Error::format(
                    o as u64,
                    format!(
                        "an offset of state '{}' at the start of a snappy frame at or before its element",
                        st.name
                    ),
                    None,
                ))
            }
        }
    }
    Ok(FramedElements {
        from: from as u64,
        to: decoded.end,
        bytes: decoded.bytes,
        elements,
    })
}

/// Each state's element ranges (in the handle's state order), from the header's blocks where it
/// has them (Flink's usual layout, and the per-state segments of Flink 1.18's compressed layout),
/// else from the offsets alone ([`element_ranges`]).
pub fn stream_element_ranges(
    header: &StreamHeader,
    h: &OperatorHandle,
    stream_len: u64,
) -> Result<Vec<Vec<(u64, u64)>>> {
    match &header.blocks {
        Some(blocks) => Ok(ranges_in_blocks(h, blocks)),
        None => element_ranges(h, stream_len),
    }
}

/// The byte ranges of every state's elements in an uncompressed stream, in the handle's state
/// order: each element runs from its offset to the next larger offset of any state in the
/// handle, or to the end of the stream. One sort for the whole handle.
pub fn element_ranges(handle: &OperatorHandle, stream_len: u64) -> Result<Vec<Vec<(u64, u64)>>> {
    for st in &handle.states {
        if let Some(o) = st.offsets.iter().find(|&o| o < 0 || o as u64 > stream_len) {
            return Err(Error::format(
                0,
                format!(
                    "offsets of state '{}' within the {stream_len}-byte state stream",
                    st.name
                ),
                Some(o.to_string()),
            ));
        }
    }
    Ok(element_ranges_in_blocks(handle, stream_len)
        .unwrap_or_else(|| element_ranges_sorted(handle, stream_len)))
}

/// Any layout: one sort of all offsets of the handle.
fn element_ranges_sorted(handle: &OperatorHandle, stream_len: u64) -> Vec<Vec<(u64, u64)>> {
    let mut all: Vec<u64> = handle
        .states
        .iter()
        .flat_map(|s| s.offsets.iter().map(|o| o as u64))
        .collect();
    all.sort_unstable();
    all.dedup();
    handle
        .states
        .iter()
        .map(|s: &StateMetaInfo| {
            s.offsets
                .iter()
                .map(|o| {
                    let o = o as u64;
                    let next = match all.binary_search(&o) {
                        Ok(i) | Err(i) => all.get(i + 1).copied().unwrap_or(stream_len),
                    };
                    (o, next)
                })
                .collect()
        })
        .collect()
}

/// Where each state's elements lie when the stream has the layout Flink writes: each state's
/// offsets ascend strictly and the states occupy disjoint blocks, one after the other. Per state
/// (in handle order) the block `[first offset, start of the next block or end of stream)`, or
/// None for a state without elements. None when the offsets do not have that shape. Linear in the
/// number of offsets, and it allocates nothing per element.
pub fn state_blocks(handle: &OperatorHandle, stream_len: u64) -> Option<Blocks> {
    let mut blocks: Vec<(u64, u64, usize)> = Vec::with_capacity(handle.states.len());
    for (i, st) in handle.states.iter().enumerate() {
        if st.offsets.is_empty() {
            continue;
        }
        // Each above the one before it, none beyond the stream (a negative one, as u64, is): a
        // union state may have millions, checked in one vectorized pass.
        if !longs::ascending_within(&st.offsets.0, stream_len) {
            return None;
        }
        let (first, last) = (
            st.offsets.get(0) as u64,
            st.offsets.get(st.offsets.len() - 1) as u64,
        );
        blocks.push((first, last, i));
    }
    blocks.sort_unstable();
    if blocks.windows(2).any(|w| w[0].1 >= w[1].0) {
        return None;
    }
    let mut out = vec![None; handle.states.len()];
    for (b, &(start, _, i)) in blocks.iter().enumerate() {
        out[i] = Some((start, blocks.get(b + 1).map_or(stream_len, |n| n.0)));
    }
    Some(out)
}

/// The element ranges of one state whose elements fill `[offsets[0], block_end)`.
pub fn ranges_in_block(
    offsets: &crate::codec::handles::Offsets,
    block_end: u64,
) -> Vec<(u64, u64)> {
    let mut v = Vec::with_capacity(offsets.len());
    let mut it = offsets.iter().map(|o| o as u64).peekable();
    while let Some(o) = it.next() {
        v.push((o, it.peek().copied().unwrap_or(block_end)));
    }
    v
}

fn element_ranges_in_blocks(
    handle: &OperatorHandle,
    stream_len: u64,
) -> Option<Vec<Vec<(u64, u64)>>> {
    Some(ranges_in_blocks(handle, &state_blocks(handle, stream_len)?))
}

/// Each state's element ranges when its elements fill its block (in the handle's state order).
fn ranges_in_blocks(handle: &OperatorHandle, blocks: &Blocks) -> Vec<Vec<(u64, u64)>> {
    handle
        .states
        .iter()
        .zip(blocks)
        .map(|(st, b)| b.map_or_else(Vec::new, |(_, end)| ranges_in_block(&st.offsets, end)))
        .collect()
}

/// Appends `stream[from..to]` to `pieces`, with each i16 state count of the header that lies
/// inside the range lowered by its removed number: `counts` are (offset of the count in the
/// stream, states removed), from [`StreamHeader::list_count_at`] and `broadcast_count_at`.
pub fn push_patched(
    pieces: &mut Vec<Bytes>,
    stream: &Bytes,
    from: u64,
    to: u64,
    counts: &[(u64, i16)],
) {
    let mut f = from;
    for &(count_at, removed) in counts {
        if removed != 0 && count_at >= f && count_at + 2 <= to {
            if count_at > f {
                pieces.push(stream.slice(f as usize..count_at as usize));
            }
            let old =
                i16::from_be_bytes([stream[count_at as usize], stream[count_at as usize + 1]]);
            pieces.push(Bytes::copy_from_slice(&(old - removed).to_be_bytes()));
            f = count_at + 2;
        }
    }
    if to > f {
        pieces.push(stream.slice(f as usize..to as usize));
    }
}

// ---------------------------------------------------------------------------------------------
// Rebuilding a stream state by state (the Kafka surgery rewrites elements, not only cuts them)

/// One state of a stream taken apart: its META_INFO entry as written and its elements.
#[derive(Clone, Debug)]
pub struct StatePart {
    pub name: JStr,
    pub mode: Mode,
    pub kind: EntryKind,
    pub entry: Bytes,
    pub elements: Vec<Bytes>,
}

/// An operator-state stream taken apart.
#[derive(Clone, Debug)]
pub struct StreamParts {
    pub proxy_version: i32,
    /// Snappy-compressed data in Flink 1.19+'s layout (the elements here are decoded).
    pub compressed: bool,
    pub states: Vec<StatePart>,
}

/// Takes a stream apart: each state of the handle's map with its header entry and its elements
/// (slices of `stream`; decoded from their snappy frames when compressed). Header entries the map
/// does not list (left by a metadata-only removal) are dropped with their elements. Flink 1.18's
/// compressed layout is refused: 1.18 reads a stream of several states only in the order of its
/// name map (FLINK-34063), which a rebuilt stream cannot be trusted to keep.
pub fn split_stream(stream: &Bytes, handle: &OperatorHandle) -> Result<StreamParts> {
    let header = parse_header(stream, handle)?;
    if header.stream_per_state || handle.states.iter().any(|s| shares_offsets(&s.offsets)) {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: header.data_start as u64,
            what: "Flink 1.18's compressed operator state layout for this operation (restore the \
                   job with execution.checkpointing.snapshot-compression: false, or with Flink \
                   1.19+, and take a savepoint)"
                .into(),
        });
    }
    let ranges = element_ranges(handle, stream.len() as u64)?;
    let mut states = Vec::with_capacity(handle.states.len());
    for (s, ranges) in handle.states.iter().zip(ranges) {
        let e = header.entry(&s.name).ok_or_else(|| {
            Error::format(
                0,
                format!("a META_INFO entry for state '{}' in the header", s.name),
                None,
            )
        })?;
        let elements = ranges
            .iter()
            .map(|&r| element_bytes(stream, header.compressed, r))
            .collect::<Result<_>>()?;
        states.push(StatePart {
            name: s.name.clone(),
            mode: s.mode,
            kind: e.kind,
            entry: stream.slice(e.start..e.end),
            elements,
        });
    }
    Ok(StreamParts {
        proxy_version: header.proxy_version,
        compressed: header.compressed,
        states,
    })
}

/// The bytes of the element at `[a, b)` of a stream: a slice of it, or, when `compressed`, what
/// its snappy frames hold (they end at `b`, or at the next state's stream identifier in Flink
/// 1.18's layout).
pub fn element_bytes(stream: &Bytes, compressed: bool, (a, b): (u64, u64)) -> Result<Bytes> {
    if !compressed {
        return Ok(stream.slice(a as usize..b as usize));
    }
    let d = snappy::decode_until_identifier(&stream[..b as usize], a as usize)?;
    Ok(Bytes::from(d.bytes))
}

/// Puts a stream together as `OperatorStateBackend` writes it: the proxy header with the list
/// entries, then the broadcast entries, then each state's elements (compressed: one snappy stream
/// identifier, then each element as its own run of uncompressed frames, as Flink 1.19+ flushes
/// each element). Returns the pieces, their length and the handle's new map.
pub fn join_stream(parts: &StreamParts) -> (Vec<Bytes>, u64, Vec<StateMetaInfo>) {
    let mut head = Vec::new();
    head.extend_from_slice(&parts.proxy_version.to_be_bytes());
    if parts.proxy_version >= 6 {
        head.push(parts.compressed as u8);
    }
    let mut pieces = Vec::new();
    for kind in [EntryKind::List, EntryKind::Broadcast] {
        let of_kind: Vec<&StatePart> = parts.states.iter().filter(|s| s.kind == kind).collect();
        head.extend_from_slice(&(of_kind.len() as i16).to_be_bytes());
        pieces.push(Bytes::from(std::mem::take(&mut head)));
        pieces.extend(of_kind.iter().map(|s| s.entry.clone()));
    }
    if parts.compressed {
        pieces.push(Bytes::from_static(&SNAPPY_STREAM_IDENTIFIER));
    }
    let mut len: u64 = pieces.iter().map(|p| p.len() as u64).sum();
    let mut map = Vec::with_capacity(parts.states.len());
    for s in &parts.states {
        let mut offsets = Vec::with_capacity(s.elements.len());
        for e in &s.elements {
            offsets.push(len as i64);
            let e = if parts.compressed {
                let mut framed = Vec::with_capacity(e.len() + 8);
                snappy::push_frames(&mut framed, e);
                Bytes::from(framed)
            } else {
                e.clone()
            };
            len += e.len() as u64;
            pieces.push(e);
        }
        map.push(StateMetaInfo {
            name: s.name.clone(),
            mode: s.mode,
            offsets: Offsets::from_slice(&offsets),
        });
    }
    (pieces, len, map)
}

/// The META_INFO entry of a `SPLIT_DISTRIBUTE` list state of `byte[]` (a FLIP-27 source's
/// `SourceReaderState`), as Flink 1.13 to 2.x write it.
pub fn byte_array_list_entry(name: &str) -> Bytes {
    use crate::codec::io::push_utf as utf;
    let mut b = Vec::with_capacity(200);
    utf(&mut b, name);
    b.extend_from_slice(&1i32.to_be_bytes()); // BackendStateType.OPERATOR
    b.extend_from_slice(&1i32.to_be_bytes()); // one option
    utf(&mut b, "OPERATOR_STATE_DISTRIBUTION_MODE");
    utf(&mut b, Mode::SplitDistribute.name());
    b.extend_from_slice(&1i32.to_be_bytes()); // one serializer snapshot
    utf(&mut b, "VALUE_SERIALIZER");
    b.extend_from_slice(&2i32.to_be_bytes()); // snapshot proxy version
    utf(
        &mut b,
        "org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot",
    );
    b.extend_from_slice(&3i32.to_be_bytes()); // SimpleTypeSerializerSnapshot version, no body
    Bytes::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::handles::{Mode, Offsets, StateMetaInfo};

    /// A small xorshift generator: deterministic cases without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn block_fast_path_agrees_with_the_sorting_path() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut fast_taken = 0;
        for case in 0..2000 {
            let n_states = 1 + rng.next() % 4;
            let mut pos = 100u64;
            let mut states = Vec::new();
            for s in 0..n_states {
                let k = rng.next() % 6;
                let mut offs = Vec::new();
                for _ in 0..k {
                    offs.push(pos as i64);
                    pos += 1 + rng.next() % 9;
                }
                states.push(StateMetaInfo {
                    name: JStr::new(&format!("s{s}")),
                    mode: Mode::SplitDistribute,
                    offsets: Offsets::from_slice(&offs),
                });
            }
            if case % 3 == 0 && states.len() > 1 {
                // interleave two states' offsets: the fast path must step aside
                let a: Vec<i64> = states[0].offsets.iter().collect();
                let b: Vec<i64> = states[1].offsets.iter().collect();
                let (mut x, mut y) = (Vec::new(), Vec::new());
                for (i, o) in a.iter().chain(&b).enumerate() {
                    if i % 2 == 0 {
                        x.push(*o)
                    } else {
                        y.push(*o)
                    }
                }
                x.sort();
                y.sort();
                states[0].offsets = Offsets::from_slice(&x);
                states[1].offsets = Offsets::from_slice(&y);
            }
            let h = OperatorHandle {
                states,
                file_merging: None,
                delegate: None,
            };
            let len = pos + rng.next() % 5;
            let slow = element_ranges_sorted(&h, len);
            if let Some(fast) = element_ranges_in_blocks(&h, len) {
                fast_taken += 1;
                assert_eq!(fast, slow, "case {case}");
            }
            assert_eq!(element_ranges(&h, len).unwrap(), slow, "case {case}");
        }
        assert!(fast_taken > 500);
    }
}
