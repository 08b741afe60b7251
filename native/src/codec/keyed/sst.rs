//! A RocksDB block-based SST file's footer, metaindex and properties block: which column family
//! (= Flink state) the file holds, and its entries and sizes. Only these few KiB at the end of the
//! file are read, through ranged reads ([`RangeSource::read_at`]); never a data block.
//!
//! Read in RocksDB's sources (facebook/rocksdb `table/format.cc` at 6.x and 8.x/9.x,
//! `table/meta_blocks.cc`, `table/table_properties.cc`, `table/block_based/block_builder.cc`;
//! files of Flink 1.15-1.20 (FRocksDB 6.20.3) and 2.x (FRocksDB 8.10.0) checked against them):
//! - the file ends with the table magic number (u64 little-endian; block-based
//!   `0x88e241b785f4cff7`, legacy `0xdb4775248b80fb57`, plain tables `0x8242229663bf9564` /
//!   `0x4f3418eb7a8f13b8`). Legacy footer (format_version 0): 48 bytes, metaindex and index
//!   handles (varint64 offset, varint64 size) padded to 40, magic. format_version 1 to 5: 53
//!   bytes, checksum type (u8), the two handles padded to 40, u32 format_version, magic.
//!   format_version 6+: checksum type, extended magic `3e 00 7a 00`, footer checksum, base
//!   context checksum, u32 metaindex size (the metaindex lies right before the footer), 24 zero
//!   bytes, format_version, magic; the index handle moves into the metaindex.
//! - every block is followed by a 5-byte trailer: compression type, u32 checksum (for CRC32c
//!   the masked CRC-32C of the block and the type byte). Meta blocks are written uncompressed.
//! - a block holds entries `varint32 shared, varint32 non-shared, varint32 value length, key
//!   suffix, value`, then u32 restart offsets and u32 restart count (its top bit flags a data
//!   block hash index in newer versions). The metaindex maps block names to handles
//!   (`rocksdb.properties`, formerly `rocksdb.stats`); the properties block maps property names to
//!   varint64 numbers or raw strings.
//!
//! Flink's files: format_version 5 from Flink 1.15 to 2.3 (FRocksDB 6.20.3 up to 1.20, 8.10.0 in
//! 2.x); checksum type CRC32c (1) up to 1.20, XXH3 (4) in 2.x. format_version 6 footers are read as
//! RocksDB's `Footer::DecodeFrom` reads them but no Flink file was seen with one. CRC32c block checksums are checked; XXH3 and xxHash ones are not (the tool
//! has no xxHash), nor the footer checksum of format_version 6.

use super::RangeSource;
use crate::codec::snappy::masked_crc32c_of;
use crate::error::{Error, Result};

const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
const LEGACY_BLOCK_BASED_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
const PLAIN_MAGICS: [u64; 2] = [0x8242_2296_63bf_9564, 0x4f34_18eb_7a8f_13b8];
const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];
const FOOTER_LEN: u64 = 53;
const LEGACY_FOOTER_LEN: u64 = 48;
const TRAILER: u64 = 5;
/// The largest metaindex and properties blocks read. Real ones are a few KiB; a larger one is
/// no file Flink's RocksDB wrote, and is refused before the memory is spent.
pub const MAX_META_BLOCK: u64 = 4 << 20;
/// `TablePropertiesCollectorFactory`'s "unknown column family" (SstFileWriter files).
pub const UNKNOWN_COLUMN_FAMILY: u64 = 0x7FFF_FFFF;

/// Where a block lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

/// The footer of a block-based table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footer {
    pub format_version: u32,
    /// `ChecksumType`: 0 none, 1 CRC32c, 2 xxHash, 3 xxHash64, 4 XXH3.
    pub checksum_type: u8,
    pub metaindex: BlockHandle,
    /// None from format_version 6 on (the metaindex holds it).
    pub index: Option<BlockHandle>,
}

/// What an SST file's properties block says about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SstProperties {
    pub column_family_name: Option<String>,
    pub column_family_id: Option<u64>,
    pub num_entries: u64,
    pub data_size: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    pub deleted_keys: u64,
    pub merge_operands: u64,
    pub range_deletions: u64,
    pub num_data_blocks: u64,
    pub index_size: u64,
    pub filter_size: u64,
    pub comparator: Option<String>,
    pub compression: Option<String>,
    pub creation_time: u64,
}

/// One SST file's footer and properties.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstFile {
    pub size: u64,
    pub footer: Footer,
    pub properties: SstProperties,
    /// Whether the meta blocks' checksums were checked (CRC32c below format_version 6).
    pub checksums_verified: bool,
}

/// How much of an SST file's end the first read brings in. RocksDB writes the properties block,
/// the metaindex and the footer last, one after the other; in Flink's files the three take 1 to
/// 3 KiB (`native/tests/keyed.rs` checks every fixture), so one ranged read usually serves all
/// three, and a larger properties block costs one more read of exactly the bytes missing.
pub const TAIL: u64 = 4 << 10;

/// The last [`TAIL`] bytes of a source that is not in memory, read once; reads before them go to
/// the source.
struct Tail<'a> {
    src: &'a dyn RangeSource,
    at: u64,
    bytes: Vec<u8>,
}

impl<'a> Tail<'a> {
    fn new(src: &'a dyn RangeSource) -> Result<Self> {
        let at = src.len().saturating_sub(TAIL);
        let mut bytes = vec![0u8; (src.len() - at) as usize];
        src.read_at(at, &mut bytes)?;
        Ok(Tail { src, at, bytes })
    }
}

impl RangeSource for Tail<'_> {
    fn len(&self) -> u64 {
        self.src.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        if end <= self.at || end > self.len() {
            return self.src.read_at(offset, buf);
        }
        // what lies before the tail comes from the source, the rest from the tail
        let before = self.at.saturating_sub(offset) as usize;
        if before > 0 {
            self.src.read_at(offset, &mut buf[..before])?;
        }
        let from = (offset + before as u64 - self.at) as usize;
        let n = buf.len() - before;
        buf[before..].copy_from_slice(&self.bytes[from..from + n]);
        Ok(())
    }
}

/// Reads the footer and the properties of the SST file `src`: from memory, or (a remote file)
/// with one ranged read of its last [`TAIL`] bytes, sometimes two.
pub fn read(src: &dyn RangeSource) -> Result<SstFile> {
    let tail;
    let src: &dyn RangeSource = if src.as_slice().is_some() || src.len() < LEGACY_FOOTER_LEN {
        src
    } else {
        tail = Tail::new(src)?;
        &tail
    };
    let size = src.len();
    let footer = footer(src)?;
    let verify = footer.checksum_type == 1 && footer.format_version < 6;
    let metaindex = block(
        src,
        footer.metaindex,
        "the metaindex block",
        verify,
        &footer,
    )?;
    let mut props = None;
    for (k, v) in entries(&metaindex, footer.metaindex.offset)? {
        if k == b"rocksdb.properties" || k == b"rocksdb.stats" {
            let mut s = &v[..];
            let h = BlockHandle {
                offset: varint(&mut s).ok_or_else(|| bad_handle(footer.metaindex.offset))?,
                size: varint(&mut s).ok_or_else(|| bad_handle(footer.metaindex.offset))?,
            };
            props = Some(h);
        }
    }
    let h = props.ok_or_else(|| {
        Error::format(
            footer.metaindex.offset,
            "a rocksdb.properties entry in the SST's metaindex block",
            None,
        )
    })?;
    let block = block(src, h, "the properties block", verify, &footer)?;
    let mut p = SstProperties::default();
    for (k, v) in entries(&block, h.offset)? {
        let num = || {
            let mut s = &v[..];
            varint(&mut s).filter(|_| s.is_empty()).ok_or_else(|| {
                Error::format(
                    h.offset,
                    format!(
                        "a varint64 value of property {}",
                        String::from_utf8_lossy(&k)
                    ),
                    None,
                )
            })
        };
        let text = || Some(String::from_utf8_lossy(&v).into_owned());
        match &k[..] {
            b"rocksdb.column.family.name" => p.column_family_name = text(),
            b"rocksdb.column.family.id" => p.column_family_id = Some(num()?),
            b"rocksdb.num.entries" => p.num_entries = num()?,
            b"rocksdb.data.size" => p.data_size = num()?,
            b"rocksdb.raw.key.size" => p.raw_key_size = num()?,
            b"rocksdb.raw.value.size" => p.raw_value_size = num()?,
            b"rocksdb.deleted.keys" => p.deleted_keys = num()?,
            b"rocksdb.merge.operands" => p.merge_operands = num()?,
            b"rocksdb.num.range-deletions" => p.range_deletions = num()?,
            b"rocksdb.num.data.blocks" => p.num_data_blocks = num()?,
            b"rocksdb.index.size" => p.index_size = num()?,
            b"rocksdb.filter.size" => p.filter_size = num()?,
            b"rocksdb.creation.time" => p.creation_time = num()?,
            b"rocksdb.comparator" => p.comparator = text(),
            b"rocksdb.compression" => p.compression = text(),
            _ => {}
        }
    }
    Ok(SstFile {
        size,
        footer,
        properties: p,
        checksums_verified: verify,
    })
}

fn bad_handle(at: u64) -> Error {
    Error::format(at, "a block handle (two varint64s)", None)
}

/// Reads and decodes the footer.
pub fn footer(src: &dyn RangeSource) -> Result<Footer> {
    let size = src.len();
    if size < LEGACY_FOOTER_LEN {
        return Err(Error::format(
            0,
            format!("an SST file of at least {LEGACY_FOOTER_LEN} bytes (its footer)"),
            Some(format!("{size} bytes")),
        ));
    }
    let mut tail = [0u8; FOOTER_LEN as usize];
    let n = size.min(FOOTER_LEN) as usize;
    let tail = &mut tail[FOOTER_LEN as usize - n..];
    let tail_at = size - n as u64;
    src.read_at(tail_at, tail)?;
    let magic = u64::from_le_bytes(tail[n - 8..].try_into().expect("8 bytes"));
    let handles = |b: &[u8], at: u64| -> Result<(BlockHandle, BlockHandle)> {
        let mut s = b;
        let mut h = || -> Result<BlockHandle> {
            Ok(BlockHandle {
                offset: varint(&mut s).ok_or_else(|| bad_handle(at))?,
                size: varint(&mut s).ok_or_else(|| bad_handle(at))?,
            })
        };
        Ok((h()?, h()?))
    };
    let footer = if magic == LEGACY_BLOCK_BASED_MAGIC {
        let at = size - LEGACY_FOOTER_LEN;
        let (m, i) = handles(&tail[n - LEGACY_FOOTER_LEN as usize..], at)?;
        Footer {
            format_version: 0,
            checksum_type: 1,
            metaindex: m,
            index: Some(i),
        }
    } else if magic == BLOCK_BASED_MAGIC {
        if n < FOOTER_LEN as usize {
            return Err(Error::format(
                0,
                format!("an SST file of at least {FOOTER_LEN} bytes (its footer)"),
                Some(format!("{size} bytes")),
            ));
        }
        let at = size - FOOTER_LEN;
        let format_version = u32::from_le_bytes(tail[41..45].try_into().expect("4 bytes"));
        let checksum_type = tail[0];
        if format_version >= 6 {
            if format_version > 7 {
                return Err(Error::Unsupported {
                    file: String::new(),
                    offset: size - 12,
                    what: format!("SST format_version {format_version} (1 to 7 are read)"),
                });
            }
            if tail[1..5] != EXTENDED_MAGIC {
                return Err(Error::format(
                    at + 1,
                    "the extended magic number 3e 00 7a 00 of a format_version 6+ footer",
                    None,
                ));
            }
            let meta_size = u32::from_le_bytes(tail[13..17].try_into().expect("4 bytes")) as u64;
            let offset = at.checked_sub(TRAILER + meta_size).ok_or_else(|| {
                Error::format(
                    at + 13,
                    "a metaindex size that fits before the footer",
                    Some(meta_size.to_string()),
                )
            })?;
            Footer {
                format_version,
                checksum_type,
                metaindex: BlockHandle {
                    offset,
                    size: meta_size,
                },
                index: None,
            }
        } else {
            if format_version == 0 {
                return Err(Error::format(
                    size - 12,
                    "a format_version of 1 or more with the block-based magic number",
                    Some("0".into()),
                ));
            }
            let (m, i) = handles(&tail[1..41], at + 1)?;
            Footer {
                format_version,
                checksum_type,
                metaindex: m,
                index: Some(i),
            }
        }
    } else if PLAIN_MAGICS.contains(&magic) {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: size - 8,
            what: "RocksDB plain table (Flink writes block-based tables)".into(),
        });
    } else {
        return Err(Error::format(
            size - 8,
            "the magic number of a RocksDB block-based table (f7 cf f4 85 b7 41 e2 88) at the end of the SST file",
            Some(
                tail[n - 8..]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ));
    };
    let footer_at = size
        - if footer.format_version == 0 {
            LEGACY_FOOTER_LEN
        } else {
            FOOTER_LEN
        };
    for (h, what) in [
        (Some(footer.metaindex), "metaindex"),
        (footer.index, "index"),
    ] {
        if let Some(h) = h {
            if h.offset.saturating_add(h.size).saturating_add(TRAILER) > footer_at {
                return Err(Error::format(
                    footer_at,
                    format!("a {what} block handle before the footer (at byte {footer_at})"),
                    Some(format!("{}+{}", h.offset, h.size)),
                ));
            }
        }
    }
    Ok(footer)
}

/// Reads one uncompressed meta block, checking its trailer.
fn block(
    src: &dyn RangeSource,
    h: BlockHandle,
    what: &str,
    verify: bool,
    footer: &Footer,
) -> Result<Vec<u8>> {
    if h.size > MAX_META_BLOCK {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: h.offset,
            what: format!(
                "{what} of {} bytes (at most {} MiB are read; RocksDB writes a few KiB)",
                h.size,
                MAX_META_BLOCK >> 20
            ),
        });
    }
    let end = h.offset.saturating_add(h.size).saturating_add(TRAILER);
    if end > src.len() {
        return Err(Error::format(
            h.offset,
            format!("{what} within the {}-byte file", src.len()),
            Some(format!("{} bytes at {}", h.size, h.offset)),
        ));
    }
    let mut b = vec![0u8; (h.size + TRAILER) as usize];
    src.read_at(h.offset, &mut b)?;
    let (data, trailer) = b.split_at(h.size as usize);
    if trailer[0] != 0 {
        return Err(Error::Unsupported {
            file: String::new(),
            offset: h.offset + h.size,
            what: format!(
                "{what} compressed with type {} (RocksDB writes meta blocks uncompressed)",
                trailer[0]
            ),
        });
    }
    if verify {
        let stored = u32::from_le_bytes(trailer[1..5].try_into().expect("4 bytes"));
        let actual = masked_crc32c_of(&[data, &trailer[..1]]);
        if stored != actual {
            return Err(Error::format(
                h.offset + h.size + 1,
                format!(
                    "the CRC32c checksum {actual:#010x} of {what} (format_version {})",
                    footer.format_version
                ),
                Some(format!("{stored:#010x}")),
            ));
        }
    }
    b.truncate(h.size as usize);
    Ok(b)
}

/// The key-value entries of a block (`at`: its offset, for messages).
pub fn entries(b: &[u8], at: u64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let bad = |what: &str| Error::format(at, format!("{what} in a RocksDB block"), None);
    if b.len() < 4 {
        return Err(bad("the restart count"));
    }
    let restarts =
        (u32::from_le_bytes(b[b.len() - 4..].try_into().expect("4 bytes")) & 0x7FFF_FFFF) as usize;
    let end = restarts
        .checked_mul(4)
        .and_then(|r| b.len().checked_sub(4 + r))
        .ok_or_else(|| bad("restart offsets that fit"))?;
    let mut s = &b[..end];
    let mut out = Vec::new();
    let mut key: Vec<u8> = Vec::new();
    while !s.is_empty() {
        let shared = varint(&mut s).ok_or_else(|| bad("an entry's shared key length"))? as usize;
        let own = varint(&mut s).ok_or_else(|| bad("an entry's key length"))? as usize;
        let vlen = varint(&mut s).ok_or_else(|| bad("an entry's value length"))? as usize;
        if shared > key.len() || own.saturating_add(vlen) > s.len() {
            return Err(bad("an entry within the block"));
        }
        key.truncate(shared);
        key.extend_from_slice(&s[..own]);
        out.push((key.clone(), s[own..own + vlen].to_vec()));
        s = &s[own + vlen..];
    }
    Ok(out)
}

/// A little-endian base-128 varint (at most 64 bits), advancing `s`.
pub fn varint(s: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *s.get(i)?;
        v |= ((b & 0x7F) as u64) << (7 * i);
        if b & 0x80 == 0 {
            *s = &s[i + 1..];
            return Some(v);
        }
    }
    None
}

/// The file number of an SST file name (`000042.sst`), as a MANIFEST names it.
pub fn file_number(name: &str) -> Option<u64> {
    let base = name.rsplit('/').next()?;
    base.strip_suffix(".sst")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_file_numbers() {
        let mut s = &[0x96u8, 0x01, 7][..];
        assert_eq!(varint(&mut s), Some(150));
        assert_eq!(s, &[7]);
        assert_eq!(varint(&mut &[0x80u8][..]), None);
        assert_eq!(file_number("000042.sst"), Some(42));
        assert_eq!(file_number("x/000042.sst"), Some(42));
        assert_eq!(file_number("MANIFEST-000004"), None);
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            out.push(if v == 0 { b } else { b | 0x80 });
            if v == 0 {
                return;
            }
        }
    }

    /// A meta block (restart interval 1) of these entries, then its trailer (uncompressed,
    /// masked CRC-32C of the block and the type byte).
    fn block(entries: &[(&[u8], Vec<u8>)]) -> Vec<u8> {
        let mut b = Vec::new();
        let mut restarts = Vec::new();
        for (k, v) in entries {
            restarts.push(b.len() as u32);
            put_varint(&mut b, 0);
            put_varint(&mut b, k.len() as u64);
            put_varint(&mut b, v.len() as u64);
            b.extend_from_slice(k);
            b.extend_from_slice(v);
        }
        for r in &restarts {
            b.extend_from_slice(&r.to_le_bytes());
        }
        b.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
        let crc = masked_crc32c_of(&[&b, &[0]]);
        b.push(0);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Properties, then a metaindex pointing at them; the footer is the caller's.
    fn tables() -> (Vec<u8>, BlockHandle) {
        let mut entries = Vec::new();
        put_varint(&mut entries, 5);
        let props = block(&[
            (b"rocksdb.column.family.name", b"state-a".to_vec()),
            (b"rocksdb.num.entries", entries),
        ]);
        let mut handle = Vec::new();
        put_varint(&mut handle, 0);
        put_varint(&mut handle, props.len() as u64 - TRAILER);
        let meta = block(&[(b"rocksdb.properties", handle)]);
        let at = props.len() as u64;
        let size = meta.len() as u64 - TRAILER;
        ([props, meta].concat(), BlockHandle { offset: at, size })
    }

    #[test]
    fn legacy_and_format_version_6_footers_lead_to_the_properties() {
        // format_version 6: the metaindex lies right before the footer, only its size is written
        let (mut file, meta) = tables();
        let mut footer = vec![4u8]; // XXH3: not checked
        footer.extend_from_slice(&EXTENDED_MAGIC);
        footer.extend_from_slice(&[0; 4]); // footer checksum
        footer.extend_from_slice(&1u32.to_le_bytes()); // base context checksum
        footer.extend_from_slice(&(meta.size as u32).to_le_bytes());
        footer.resize(41, 0);
        footer.extend_from_slice(&6u32.to_le_bytes());
        footer.extend_from_slice(&BLOCK_BASED_MAGIC.to_le_bytes());
        file.extend_from_slice(&footer);
        let f = read(&file).unwrap();
        assert_eq!(
            (f.footer.format_version, f.footer.metaindex, f.footer.index),
            (6, meta, None)
        );
        assert_eq!(f.properties.column_family_name.as_deref(), Some("state-a"));
        assert_eq!(f.properties.num_entries, 5);
        assert!(!f.checksums_verified);
        // the legacy footer (format_version 0): two handles padded to 40 bytes, CRC32c checked
        let (mut file, meta) = tables();
        let mut footer = Vec::new();
        put_varint(&mut footer, meta.offset);
        put_varint(&mut footer, meta.size);
        footer.resize(40, 0);
        footer.extend_from_slice(&LEGACY_BLOCK_BASED_MAGIC.to_le_bytes());
        file.extend_from_slice(&footer);
        let f = read(&file).unwrap();
        assert_eq!((f.footer.format_version, f.checksums_verified), (0, true));
        assert_eq!(f.properties.num_entries, 5);
        // a flipped bit in the properties fails their checksum, with its offset
        file[3] ^= 1;
        let e = read(&file).unwrap_err().to_string();
        assert!(
            e.contains("CRC32c checksum") && e.contains("of the properties block"),
            "{e}"
        );
    }

    #[test]
    fn short_or_foreign_files_are_refused_with_their_offset() {
        let e = footer(&vec![0u8; 20]).unwrap_err().to_string();
        assert!(e.contains("at least 48 bytes"), "{e}");
        let e = footer(&vec![0u8; 100]).unwrap_err().to_string();
        assert!(
            e.contains("at byte 92") && e.contains("magic number"),
            "{e}"
        );
    }
}
