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
    let len = src.len();
    let mut block = vec![0u8; BLOCK as usize];
    let mut record: Vec<u8> = Vec::new();
    let mut record_at = 0u64;
    let mut in_fragments = false;
    let mut block_at = 0u64;
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
                apply(&mut m, &record, record_at)?;
                m.edits += 1;
                m.end = block_at + p as u64;
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
    Ok(m)
}

/// Applies one encoded `VersionEdit` (read at `at`).
fn apply(m: &mut Manifest, edit: &[u8], at: u64) -> Result<()> {
    let mut s = edit;
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
    let mut cf = 0u32;
    let mut add: Option<Vec<u8>> = None;
    let mut drop = false;
    let mut new_files: Vec<(u32, u64, u64)> = Vec::new();
    let mut deleted: Vec<u64> = Vec::new();
    while !s.is_empty() {
        let tag = v32(&mut s, "a tag")?;
        match tag {
            1 => {
                m.comparator = Some(String::from_utf8_lossy(&lp(&mut s, "the comparator")?).into())
            }
            2 | 9 | 10 => {
                v64(&mut s, "a log number")?;
            }
            3 => m.next_file_number = Some(v64(&mut s, "the next file number")?),
            4 => m.last_sequence = Some(v64(&mut s, "the last sequence")?),
            5 => {
                v32(&mut s, "a compact cursor's level")?;
                lp(&mut s, "a compact cursor's key")?;
            }
            6 => {
                v32(&mut s, "a deleted file's level")?;
                deleted.push(v64(&mut s, "a deleted file's number")?);
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
                new_files.push((level, number, size));
            }
            200 => cf = v32(&mut s, "a column family id")?,
            201 => add = Some(lp(&mut s, "a column family name")?),
            202 => drop = true,
            203 => m.max_column_family = Some(v32(&mut s, "the max column family")?),
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
    if let Some(name) = add {
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
    if drop {
        family.dropped = true;
        family.files.clear();
    }
    for n in deleted {
        family.files.remove(&n);
    }
    for (level, number, size) in new_files {
        family.files.insert(number, (level, size));
    }
    Ok(())
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
}
