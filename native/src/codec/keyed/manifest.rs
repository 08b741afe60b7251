//! A RocksDB MANIFEST: the log of `VersionEdit`s that says which column families a RocksDB
//! instance has (their ids and names, added or dropped) and which SST files are live in each.
//! Flink keeps it as a private file of each incremental or native handle.
//!
//! Read in RocksDB's sources (`db/log_format.h`, `db/log_reader.cc`, `db/log_writer.cc`,
//! `db/version_edit.h`, `db/version_edit.cc` of RocksDB 6.x and 8.x):
//! - the log is a sequence of 32 KiB blocks; a record is a 7-byte header (u32 masked CRC-32C of
//!   the type byte and the payload, u16 payload length, u8 type: 1 FULL, 2 FIRST, 3 MIDDLE,
//!   4 LAST; 5-8 their recyclable forms with an 11-byte header that adds a u32 log number) and its
//!   payload; fewer than a header's bytes at the end of a block are zero filler. A zero type with
//!   length 0 is preallocated space: the log ends there.
//! - a logical record is one encoded `VersionEdit`: varint32 tags, each with its value. Tags:
//!   1 comparator (length-prefixed), 2 log number, 3 next file number, 4 last sequence, 9 previous
//!   log number, 10 min log number to keep (varint64 each), 5 compact cursor (varint32 level,
//!   length-prefixed key), 6 deleted file (varint32 level, varint64 number), 7 / 100 / 102 / 103
//!   new file (legacy forms and `kNewFile4`: level, number, size, smallest and largest keys,
//!   smallest and largest sequence numbers, then custom fields `varint32 tag, length-prefixed
//!   value` up to tag 1; custom tags with bit 64 set must be understood: 65 is the path id),
//!   200 column family (varint32 id; 0, the default family, is not written), 201 column family
//!   add (length-prefixed name), 202 column family drop (no value), 203 max column family
//!   (varint32), 300 in atomic group (varint32), 400 / 401 blob files. Tags with bit 8192 set can
//!   be skipped (a length-prefixed value) unless they are 8194 to 8197 (blob and WAL records of
//!   other layouts).
//!
//! Flink does not use blob files or WAL tracking: such records are refused with their offset.

use super::sst::varint;
use super::RangeSource;
use crate::codec::snappy::masked_crc32c_of;
use crate::error::{Error, Result};
use std::collections::BTreeMap;

const BLOCK: u64 = 32 * 1024;
const HEADER: usize = 7;
const RECYCLABLE_HEADER: usize = 11;
/// The largest logical record read (a VersionEdit of a large instance is a few MiB at most).
const MAX_RECORD: usize = 64 << 20;

/// A column family of the instance, as the MANIFEST leaves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnFamily {
    pub id: u32,
    /// The name's bytes as UTF-8 (Flink names a column family after its state, in UTF-8).
    pub name: String,
    pub dropped: bool,
    /// Live SST files: file number to (level, size).
    pub files: BTreeMap<u64, (u32, u64)>,
}

/// What a MANIFEST says at its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// By id; the default family (0) always exists.
    pub column_families: BTreeMap<u32, ColumnFamily>,
    pub comparator: Option<String>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub max_column_family: Option<u32>,
    pub edits: usize,
    /// Where the last record ends: a new record (a column family drop) is appended here.
    pub end: u64,
}

impl Manifest {
    /// The column family a live SST file belongs to.
    pub fn live_file(&self, number: u64) -> Option<&ColumnFamily> {
        self.column_families
            .values()
            .find(|cf| !cf.dropped && cf.files.contains_key(&number))
    }

    /// The live column family of that name.
    pub fn by_name(&self, name: &str) -> Option<&ColumnFamily> {
        self.column_families
            .values()
            .find(|cf| !cf.dropped && cf.name == name)
    }
}

/// Reads a whole MANIFEST.
pub fn parse(src: &dyn RangeSource) -> Result<Manifest> {
    let mut m = Manifest::default();
    m.column_families.insert(
        0,
        ColumnFamily {
            id: 0,
            name: "default".into(),
            dropped: false,
            files: BTreeMap::new(),
        },
    );
    m.end = records(src, &mut |at, record| {
        apply(&mut m, record, at)?;
        m.edits += 1;
        Ok(())
    })?;
    Ok(m)
}

/// Hands `visit` every logical record of the log (a `VersionEdit`) with the offset where it
/// starts, checking each fragment's checksum; returns where the last record ends.
pub fn records(
    src: &dyn RangeSource,
    visit: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let len = src.len();
    let mut block = vec![0u8; BLOCK as usize];
    let mut record: Vec<u8> = Vec::new();
    let mut record_at = 0u64;
    let mut in_fragments = false;
    let mut block_at = 0u64;
    let mut end = 0u64;
    'blocks: while block_at < len {
        let n = (len - block_at).min(BLOCK) as usize;
        src.read_at(block_at, &mut block[..n])?;
        let b = &block[..n];
        let mut p = 0usize;
        while p + HEADER <= n {
            let at = block_at + p as u64;
            let length = u16::from_le_bytes([b[p + 4], b[p + 5]]) as usize;
            let kind = b[p + 6];
            if kind == 0 && length == 0 {
                break 'blocks;
            }
            let header = match kind {
                1..=4 => HEADER,
                5..=8 => RECYCLABLE_HEADER,
                _ => return Err(Error::format(
                    at + 6,
                    "a MANIFEST record type (1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST, 5-8 recyclable)",
                    Some(kind.to_string()),
                )),
            };
            if p + header + length > n {
                return Err(Error::format(
                    at,
                    format!("a MANIFEST record of {length} bytes within its 32 KiB block"),
                    Some(format!(
                        "{} bytes left in the block",
                        n - p - header.min(n - p)
                    )),
                ));
            }
            let payload = &b[p + header..p + header + length];
            let stored = u32::from_le_bytes(b[p..p + 4].try_into().expect("4 bytes"));
            let actual = masked_crc32c_of(&[&b[p + 6..p + header], payload]);
            if stored != actual {
                return Err(Error::format(
                    at,
                    format!("a MANIFEST record's checksum {actual:#010x}"),
                    Some(format!("{stored:#010x}")),
                ));
            }
            let first = matches!(kind, 1 | 2 | 5 | 6);
            if first == in_fragments {
                return Err(Error::format(
                    at,
                    if in_fragments {
                        "the MIDDLE or LAST fragment of the record begun before"
                    } else {
                        "a FULL or FIRST record"
                    },
                    Some(format!("record type {kind}")),
                ));
            }
            if first {
                record.clear();
                record_at = at;
            }
            if record.len() + length > MAX_RECORD {
                return Err(Error::Unsupported {
                    file: String::new(),
                    offset: record_at,
                    what: format!("a MANIFEST record over {} MiB", MAX_RECORD >> 20),
                });
            }
            record.extend_from_slice(payload);
            in_fragments = matches!(kind, 2 | 3 | 6 | 7);
            p += header + length;
            if !in_fragments {
                visit(record_at, &record)?;
                end = block_at + p as u64;
            }
        }
        block_at += n as u64;
    }
    if in_fragments {
        return Err(Error::format(
            record_at,
            "the LAST fragment of a MANIFEST record",
            Some("the end of the file".into()),
        ));
    }
    Ok(end)
}

/// One decoded `VersionEdit`: what the tool needs of it.
#[derive(Default)]
struct Edit {
    comparator: Option<String>,
    next_file_number: Option<u64>,
    last_sequence: Option<u64>,
    max_column_family: Option<u32>,
    column_family: u32,
    /// A column family add: its name and where the name, with its length, lies in the edit.
    add: Option<(Vec<u8>, std::ops::Range<usize>)>,
    drop: bool,
    /// (level, number, size)
    new_files: Vec<(u32, u64, u64)>,
    deleted: Vec<u64>,
}

/// Decodes one encoded `VersionEdit` (read at `at`).
fn decode(edit: &[u8], at: u64) -> Result<Edit> {
    let mut s = edit;
    let mut e = Edit::default();
    let bad = |what: &str| Error::format(at, format!("{what} in a MANIFEST VersionEdit"), None);
    let v64 = |s: &mut &[u8], what: &str| varint(s).ok_or_else(|| bad(what));
    let v32 = |s: &mut &[u8], what: &str| {
        varint(s)
            .filter(|&v| v <= u32::MAX as u64)
            .map(|v| v as u32)
            .ok_or_else(|| bad(what))
    };
    let lp = |s: &mut &[u8], what: &str| -> Result<Vec<u8>> {
        let n = varint(s).ok_or_else(|| bad(what))? as usize;
        if n > s.len() {
            return Err(bad(what));
        }
        let v = s[..n].to_vec();
        *s = &s[n..];
        Ok(v)
    };
    while !s.is_empty() {
        let tag = v32(&mut s, "a tag")?;
        match tag {
            1 => {
                e.comparator = Some(String::from_utf8_lossy(&lp(&mut s, "the comparator")?).into())
            }
            2 | 9 | 10 => {
                v64(&mut s, "a log number")?;
            }
            3 => e.next_file_number = Some(v64(&mut s, "the next file number")?),
            4 => e.last_sequence = Some(v64(&mut s, "the last sequence")?),
            5 => {
                v32(&mut s, "a compact cursor's level")?;
                lp(&mut s, "a compact cursor's key")?;
            }
            6 => {
                v32(&mut s, "a deleted file's level")?;
                e.deleted.push(v64(&mut s, "a deleted file's number")?);
            }
            7 | 100 | 102 | 103 => {
                let level = v32(&mut s, "a new file's level")?;
                let number = v64(&mut s, "a new file's number")?;
                if tag == 102 {
                    v32(&mut s, "a new file's path id")?;
                }
                let size = v64(&mut s, "a new file's size")?;
                lp(&mut s, "a new file's smallest key")?;
                lp(&mut s, "a new file's largest key")?;
                if tag != 7 {
                    v64(&mut s, "a new file's smallest sequence")?;
                    v64(&mut s, "a new file's largest sequence")?;
                }
                if tag == 103 {
                    loop {
                        let custom = v32(&mut s, "a new file's custom field tag")?;
                        if custom == 1 {
                            break;
                        }
                        lp(&mut s, "a new file's custom field")?;
                        if custom & 64 != 0 && custom != 65 {
                            return Err(Error::Unsupported {
                                file: String::new(),
                                offset: at,
                                what: format!(
                                    "MANIFEST new-file field {custom} (one RocksDB requires to understand)"
                                ),
                            });
                        }
                    }
                }
                e.new_files.push((level, number, size));
            }
            200 => e.column_family = v32(&mut s, "a column family id")?,
            201 => {
                let from = edit.len() - s.len();
                let name = lp(&mut s, "a column family name")?;
                e.add = Some((name, from..edit.len() - s.len()));
            }
            202 => e.drop = true,
            203 => e.max_column_family = Some(v32(&mut s, "the max column family")?),
            300 => {
                v32(&mut s, "an atomic group's remaining entries")?;
            }
            400 | 401 | 8194..=8197 => {
                return Err(Error::Unsupported {
                    file: String::new(),
                    offset: at,
                    what: format!(
                        "MANIFEST tag {tag} (blob files or WAL tracking, which Flink does not use)"
                    ),
                })
            }
            t if t & 8192 != 0 => {
                lp(&mut s, "a skippable field")?;
            }
            t => {
                return Err(Error::format(
                    at,
                    "a VersionEdit tag RocksDB writes",
                    Some(t.to_string()),
                ))
            }
        }
    }
    Ok(e)
}

/// Applies one encoded `VersionEdit` (read at `at`).
fn apply(m: &mut Manifest, edit: &[u8], at: u64) -> Result<()> {
    let e = decode(edit, at)?;
    let cf = e.column_family;
    m.comparator = e.comparator.or(m.comparator.take());
    m.next_file_number = e.next_file_number.or(m.next_file_number);
    m.last_sequence = e.last_sequence.or(m.last_sequence);
    m.max_column_family = e.max_column_family.or(m.max_column_family);
    if let Some((name, _)) = e.add {
        m.column_families.insert(
            cf,
            ColumnFamily {
                id: cf,
                name: String::from_utf8_lossy(&name).into(),
                dropped: false,
                files: BTreeMap::new(),
            },
        );
    }
    let family = m.column_families.get_mut(&cf).ok_or_else(|| {
        Error::format(
            at,
            "an edit of a column family the MANIFEST added before",
            Some(format!("column family {cf}")),
        )
    })?;
    if e.drop {
        family.dropped = true;
        family.files.clear();
    }
    for n in e.deleted {
        family.files.remove(&n);
    }
    for (level, number, size) in e.new_files {
        family.files.insert(number, (level, size));
    }
    Ok(())
}

/// The `VersionEdit` RocksDB logs when it drops column family `id`: `DropColumnFamilyImpl` sets
/// the drop and the family, `VersionSet::LogAndApplyCFHelper` the next file number, the last
/// sequence and (for a drop) the max column family, so that the id is never used again; encoded
/// in `VersionEdit::EncodeTo`'s order (FRocksDB 6.20.3 and 8.10.0 alike). The values are the
/// ones the MANIFEST ends with: what RocksDB's `VersionSet` holds after recovering from it (a
/// Flink checkpoint has no write-ahead log).
pub fn drop_edit(m: &Manifest, id: u32) -> Result<Vec<u8>> {
    let missing = |what: &str| {
        Error::format(
            m.end,
            format!("{what} recorded in the MANIFEST before its end"),
            Some("none".into()),
        )
    };
    let next = m
        .next_file_number
        .ok_or_else(|| missing("a next file number"))?;
    let last = m.last_sequence.ok_or_else(|| missing("a last sequence"))?;
    let max_cf = m
        .column_families
        .keys()
        .copied()
        .chain(m.max_column_family)
        .max()
        .unwrap_or(0);
    let mut e = Vec::new();
    put_varint(&mut e, 3);
    put_varint(&mut e, next);
    put_varint(&mut e, 203);
    put_varint(&mut e, max_cf as u64);
    put_varint(&mut e, 4);
    put_varint(&mut e, last);
    put_varint(&mut e, 200);
    put_varint(&mut e, id as u64);
    put_varint(&mut e, 202);
    Ok(e)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bytes that append `records` to a log whose last record ends at `end`, as RocksDB's
/// `log::Writer::AddRecord` writes them (legacy headers, as every MANIFEST writer does): a record
/// starts in the current 32 KiB block unless fewer than a header's bytes are left, which are then
/// zero filled; it is split into FIRST, MIDDLE and LAST fragments at block ends (a FIRST fragment
/// may be empty when exactly a header's bytes are left).
pub fn frame(end: u64, records: &[Vec<u8>]) -> Vec<u8> {
    let block = BLOCK as usize;
    let mut out = Vec::new();
    let mut offset = (end % BLOCK) as usize;
    for r in records {
        let mut left = &r[..];
        let mut begin = true;
        loop {
            if block - offset < HEADER {
                out.resize(out.len() + block - offset, 0);
                offset = 0;
            }
            let n = left.len().min(block - offset - HEADER);
            let last = n == left.len();
            let kind: u8 = match (begin, last) {
                (true, true) => 1,
                (true, false) => 2,
                (false, false) => 3,
                (false, true) => 4,
            };
            let crc = masked_crc32c_of(&[&[kind], &left[..n]]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(n as u16).to_le_bytes());
            out.push(kind);
            out.extend_from_slice(&left[..n]);
            offset += HEADER + n;
            left = &left[n..];
            begin = false;
            if last {
                break;
            }
        }
    }
    out
}

/// A MANIFEST with the column families of `renames` (id, new name) added under their new names:
/// every record of `src` decoded, the name in a column family add replaced, and the log framed
/// anew from its first block. RocksDB has no rename: a column family's name lives only in the
/// edit that adds it (SST files keep the name they were written under as a table property, which
/// only `RepairDB` reads), so a MANIFEST whose add names the new name is the one RocksDB would have
/// written had the family been created under it.
pub fn renamed(src: &dyn RangeSource, renames: &[(u32, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut edits: Vec<Vec<u8>> = Vec::new();
    let mut done = vec![false; renames.len()];
    records(src, &mut |at, record| {
        let e = decode(record, at)?;
        let mut record = record.to_vec();
        if let Some((_, range)) = &e.add {
            if let Some(i) = renames.iter().position(|(id, _)| *id == e.column_family) {
                let mut name = Vec::new();
                put_varint(&mut name, renames[i].1.len() as u64);
                name.extend_from_slice(&renames[i].1);
                record.splice(range.clone(), name);
                done[i] = true;
            }
        }
        edits.push(record);
        Ok(())
    })?;
    if let Some(i) = done.iter().position(|d| !d) {
        return Err(Error::format(
            0,
            format!("the edit that adds column family {}", renames[i].0),
            Some("none in the MANIFEST".into()),
        ));
    }
    Ok(frame(0, &edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MANIFEST of the given edits, each one FULL record, as RocksDB's log writer frames them.
    fn log(edits: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in edits {
            let mut h = vec![0u8; 7];
            h[4..6].copy_from_slice(&(e.len() as u16).to_le_bytes());
            h[6] = 1;
            let crc = masked_crc32c_of(&[&[1u8], e]);
            h[..4].copy_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&h);
            out.extend_from_slice(e);
        }
        out
    }

    #[test]
    fn column_families_and_live_files() {
        // tags as varints: 200 column family (C8 01), 201 add (C9 01), 202 drop (CA 01), 103 new
        // file (level, number, size, two empty keys, two sequences, custom fields up to tag 1),
        // 6 deleted file (level, number)
        let add = vec![0xC8, 0x01, 1, 0xC9, 0x01, 1, b's'];
        let file = |n: u8| vec![0xC8, 0x01, 1, 103, 0, n, 100, 0, 0, 0, 0, 1];
        let del = vec![0xC8, 0x01, 1, 6, 0, 7];
        let l = log(&[add.clone(), file(7), del, file(9)]);
        let m = parse(&l).unwrap();
        assert_eq!((m.edits, m.end), (4, l.len() as u64));
        let cf = m.by_name("s").unwrap();
        assert_eq!(cf.id, 1);
        assert_eq!(cf.files.keys().copied().collect::<Vec<_>>(), vec![9]);
        assert_eq!(m.live_file(9).unwrap().name, "s");
        assert!(m.live_file(7).is_none());
        // a drop removes the family's files from the live ones
        let drop = vec![0xC8, 0x01, 1, 0xCA, 0x01];
        let m = parse(&log(&[add.clone(), file(9), drop])).unwrap();
        assert!(m.live_file(9).is_none() && m.by_name("s").is_none());
        // a flipped bit fails the record's checksum
        let mut bad = log(&[add]);
        bad[9] ^= 1;
        assert!(parse(&bad).unwrap_err().to_string().contains("checksum"));
    }

    #[test]
    fn appended_records_are_framed_as_rocksdbs_log_writer_frames_them() {
        let add = vec![0xC8, 0x01, 1, 0xC9, 0x01, 1, b's'];
        let file = vec![0xC8, 0x01, 1, 103, 0, 9, 100, 0, 0, 0, 0, 1];
        let seq = vec![3, 20, 4, 77];
        // a log whose first record leaves exactly 0..12 bytes in the first block, then a drop
        // appended there: filler, an empty FIRST fragment, or a record in the same block
        for left in 0..12usize {
            // a skippable field (tag 8200) sized so that the first records end `left` bytes
            // before the end of the first block
            let guess = BLOCK as usize - left - 3 * HEADER - add.len() - file.len() - seq.len();
            let base = (guess - 8..guess)
                .map(|pad| {
                    let mut filler = seq.clone();
                    put_varint(&mut filler, 8200);
                    put_varint(&mut filler, pad as u64);
                    filler.resize(filler.len() + pad, 0);
                    frame(0, &[add.clone(), file.clone(), filler])
                })
                .find(|b| b.len() == BLOCK as usize - left)
                .unwrap();
            let m = parse(&base).unwrap();
            assert_eq!((m.end, m.edits), (base.len() as u64, 3));
            let drop = drop_edit(&m, 1).unwrap();
            let mut log = base.clone();
            log.extend_from_slice(&frame(m.end, std::slice::from_ref(&drop)));
            let after = parse(&log).unwrap();
            assert_eq!(after.edits, 4, "left {left}");
            assert!(after.by_name("s").is_none() && after.live_file(9).is_none());
            assert_eq!(after.max_column_family, Some(1));
            assert_eq!(after.end, log.len() as u64);
            // fewer than a header's bytes left: zero filler, the record in the next block
            if left < HEADER {
                assert_eq!(&log[base.len()..BLOCK as usize], &vec![0u8; left][..]);
                assert_eq!(log[BLOCK as usize + 6], 1, "a FULL record");
            } else if left == HEADER {
                // an empty FIRST fragment, then the LAST in the next block
                assert_eq!(&log[base.len() + 4..base.len() + 7], &[0, 0, 2]);
                assert_eq!(log[BLOCK as usize + 6], 4);
            } else {
                assert_eq!(
                    log[base.len() + 6],
                    if left - HEADER >= drop.len() { 1 } else { 2 }
                );
            }
        }
        // the drop edit as RocksDB encodes it: next file, max column family, last sequence,
        // column family, drop
        let m = parse(&frame(0, &[add, seq])).unwrap();
        assert_eq!(
            drop_edit(&m, 1).unwrap(),
            vec![3, 20, 0xCB, 0x01, 1, 4, 77, 0xC8, 0x01, 1, 0xCA, 0x01]
        );
    }

    #[test]
    fn a_record_longer_than_a_block_is_framed_in_fragments_and_read_back() {
        let mut big = vec![0xC8, 0x01, 1, 0xC9, 0x01, 1, b's'];
        let mut tag = Vec::new();
        put_varint(&mut tag, 8200);
        big.extend_from_slice(&tag);
        put_varint(&mut big, 80_000);
        big.resize(big.len() + 80_000, 7);
        let log = frame(100, &[vec![0x03, 5, 0x04, 6], big.clone()]);
        // the framing alone is checked here, from block offset 100
        let kinds: Vec<u8> = {
            let mut v = Vec::new();
            let mut p = 0usize;
            let mut offset = 100usize;
            while p < log.len() {
                if BLOCK as usize - offset < HEADER {
                    p += BLOCK as usize - offset;
                    offset = 0;
                    continue;
                }
                let n = u16::from_le_bytes([log[p + 4], log[p + 5]]) as usize;
                v.push(log[p + 6]);
                p += HEADER + n;
                offset += HEADER + n;
            }
            v
        };
        assert_eq!(kinds, vec![1, 2, 3, 4]);
        let renamed_to = renamed(&frame(0, &[big.clone()]), &[(1, b"t".to_vec())]).unwrap();
        let m = parse(&renamed_to).unwrap();
        assert!(m.by_name("t").is_some() && m.by_name("s").is_none());
    }
}
