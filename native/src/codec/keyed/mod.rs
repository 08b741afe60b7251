//! Keyed state behind the keyed handles of `_metadata`, counted per state without the job's
//! classes and without decoding keys or values:
//! - [`meta`]: the keyed backend's meta info (`KeyedBackendSerializationProxy`), which opens every
//!   canonical savepoint stream and heap checkpoint stream, and is the whole meta stream of a
//!   RocksDB incremental, native or (1.16+) full handle;
//! - [`canonical`]: the canonical savepoint format (`FullSnapshotAsyncWriter`), also written by
//!   RocksDB's full checkpoints up to Flink 1.15;
//! - [`heap`]: the heap backend's full checkpoint format (`HeapSnapshotStrategy`);
//! - [`sst`]: a RocksDB SST file's footer and properties block (ranged reads, never the data);
//! - [`manifest`]: a RocksDB MANIFEST (the log of `VersionEdit`s: column families, live files);
//! - [`changelog`]: the state change log of a changelog handle (`StateChangeFormat`, METADATA
//!   records naming the states), counted per state;
//! - [`handle`]: one keyed handle of any kind, read into a [`HandleReading`];
//! - [`rewrite`]: the stream of a key-groups handle rewritten without some states, or with states
//!   renamed (keyed surgery).
//!
//! Streams are read through a [`RangeSource`] (`read_at(offset, len)`): a mapped local file, an
//! inline handle, or later a Flink path through Java. Memory stays bounded whatever the stream's
//! size ([`Window`] keeps at most one chunk of a source that is not in memory), and nothing here
//! shares state between handles, so callers read handles in parallel.

pub mod canonical;
pub mod changelog;
pub mod handle;
pub mod heap;
pub mod manifest;
pub mod meta;
pub mod rewrite;
pub mod sst;

pub use handle::{read_handle, HandleReading, SnapshotFormat};

use crate::error::{Error, Result};
use bytes::Bytes;

/// Bytes that can be read at any offset: the one thing the keyed readers need of a file.
pub trait RangeSource: Send + Sync {
    /// The source's length in bytes.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` with the bytes at `offset`; an error if they are not all there.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// All bytes as one slice, when the source holds them in memory (a mapped file, an inline
    /// handle): readers then copy nothing.
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }
}

/// `read_at` of bytes in memory.
fn slice_read_at(s: &[u8], offset: u64, buf: &mut [u8]) -> Result<()> {
    let end = offset.checked_add(buf.len() as u64);
    match end.filter(|&e| e <= s.len() as u64) {
        Some(e) => {
            buf.copy_from_slice(&s[offset as usize..e as usize]);
            Ok(())
        }
        None => Err(Error::format(
            offset,
            format!("{} bytes within the {}-byte file", buf.len(), s.len()),
            Some("its end".into()),
        )),
    }
}

macro_rules! in_memory_source {
    ($($t:ty),*) => {$(
        impl RangeSource for $t {
            fn len(&self) -> u64 {
                <[u8]>::len(self) as u64
            }
            fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
                slice_read_at(self, offset, buf)
            }
            fn as_slice(&self) -> Option<&[u8]> {
                Some(self)
            }
        }
    )*};
}

// Not for `&[u8]`: its `len` would shadow the slice's own on a `&&[u8]`.
in_memory_source!(Vec<u8>, Bytes);

/// How much of a source that is not in memory one read brings in.
const CHUNK: usize = 256 << 10;
/// The largest contiguous run a reader may ask for: one element of a heap state, one snappy
/// chunk, one RocksDB meta block. Larger is no file Flink or RocksDB wrote here.
pub const MAX_WINDOW: usize = 64 << 20;

/// A sequential view of a [`RangeSource`]: hands out slices of it, refilling one bounded buffer
/// when the source is not in memory.
pub struct Window<'a> {
    src: &'a dyn RangeSource,
    buf: Vec<u8>,
    buf_at: u64,
}

impl<'a> Window<'a> {
    pub fn new(src: &'a dyn RangeSource) -> Self {
        Window {
            src,
            buf: Vec::new(),
            buf_at: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.src.len()
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// The bytes from `at` on: at least `want` of them, or all up to the end of the source if
    /// fewer remain (possibly more than `want`).
    pub fn get(&mut self, at: u64, want: usize) -> Result<&[u8]> {
        let len = self.src.len();
        if at > len {
            return Err(Error::format(
                at,
                format!("a position within the {len}-byte file"),
                None,
            ));
        }
        if want > MAX_WINDOW {
            return Err(Error::Unsupported {
                file: String::new(),
                offset: at,
                what: format!(
                    "a run of {want} bytes read at once (at most {} MiB)",
                    MAX_WINDOW >> 20
                ),
            });
        }
        if let Some(s) = self.src.as_slice() {
            return Ok(&s[at as usize..]);
        }
        let avail = (len - at).min(want as u64) as usize;
        let buf_end = self.buf_at + self.buf.len() as u64;
        if at < self.buf_at || at + avail as u64 > buf_end {
            let n = (len - at).min(want.max(CHUNK) as u64) as usize;
            self.buf.resize(n, 0);
            self.src.read_at(at, &mut self.buf)?;
            self.buf_at = at;
        }
        Ok(&self.buf[(at - self.buf_at) as usize..])
    }

    /// Exactly `n` bytes at `at`.
    pub fn exact(&mut self, at: u64, n: usize, what: &str) -> Result<&[u8]> {
        let len = self.src.len();
        let s = self.get(at, n)?;
        if s.len() < n {
            return Err(Error::format(
                at,
                format!("{what} ({n} bytes)"),
                Some(format!("the end of the {len}-byte file")),
            ));
        }
        Ok(&s[..n])
    }

    pub fn i16(&mut self, at: u64, what: &str) -> Result<i16> {
        let b = self.exact(at, 2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub fn i32(&mut self, at: u64, what: &str) -> Result<i32> {
        let b = self.exact(at, 4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// One state's share of a handle: what the snapshot holds for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateCount {
    /// Records: one per key and namespace in a heap checkpoint (a map state's whole map is one),
    /// one per key-value pair in the canonical format and in RocksDB (a map state's entry per user
    /// key); for RocksDB the SST files' `rocksdb.num.entries` (tombstones and versions included).
    pub entries: u64,
    /// The state's bytes as serialized, uncompressed (RocksDB: raw key and value sizes).
    pub raw_bytes: u64,
    /// The state's bytes in the files. Without compression equal to `raw_bytes`; a compressed
    /// canonical key group holds several states in one snappy stream, whose stored bytes are
    /// split in proportion to `raw_bytes` (`HandleReading::stored_apportioned`); RocksDB: the
    /// SST files' sizes.
    pub stored_bytes: u64,
    /// False when part of the state could not be counted (see the reading's notes): the numbers
    /// are then a lower bound.
    pub complete: bool,
}

impl StateCount {
    /// Nothing counted yet, and nothing missed.
    pub fn none() -> Self {
        StateCount {
            complete: true,
            ..StateCount::default()
        }
    }

    pub fn add(&mut self, o: &StateCount) {
        self.entries += o.entries;
        self.raw_bytes += o.raw_bytes;
        self.stored_bytes += o.stored_bytes;
        self.complete &= o.complete;
    }
}

/// Something a reader could not count, with where and why: the handle is still reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The file (or inline handle) and the byte offset in it.
    pub file: String,
    pub offset: u64,
    pub message: String,
}

/// Splits `total` over `weights` in proportion, the rounding remainder to the largest weight,
/// so that the parts add up to `total` exactly.
pub(crate) fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    if sum == 0 {
        let mut v = vec![0; weights.len()];
        if let Some(first) = v.first_mut() {
            *first = total;
        }
        return v;
    }
    let mut v: Vec<u64> = weights
        .iter()
        .map(|&w| (total as u128 * w as u128 / sum) as u64)
        .collect();
    let rest = total - v.iter().sum::<u64>();
    let max = (0..weights.len()).max_by_key(|&i| weights[i]).unwrap_or(0);
    v[max] += rest;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that is not in memory, to exercise the window's refills.
    struct Remote(Vec<u8>);

    impl RangeSource for Remote {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            slice_read_at(&self.0, offset, buf)
        }
    }

    #[test]
    fn the_window_of_a_remote_source_refills_and_stops_at_the_end() {
        let data: Vec<u8> = (0..(CHUNK * 3) as u32).map(|i| i as u8).collect();
        let src = Remote(data.clone());
        let mut w = Window::new(&src);
        assert_eq!(w.exact(10, 4, "x").unwrap(), &data[10..14]);
        let at = CHUNK as u64 - 2;
        assert_eq!(
            w.exact(at, 8, "x").unwrap(),
            &data[at as usize..at as usize + 8]
        );
        assert_eq!(w.get(data.len() as u64 - 3, 100).unwrap().len(), 3);
        let e = w.exact(data.len() as u64 - 3, 4, "an int").unwrap_err();
        assert!(e.to_string().contains("an int (4 bytes)"), "{e}");
        assert!(w.get(data.len() as u64 + 1, 1).is_err());
        assert!(w.get(0, MAX_WINDOW + 1).is_err());
    }

    #[test]
    fn apportioned_parts_add_up() {
        // the remainder goes to the largest weight (the last of equal ones)
        assert_eq!(apportion(10, &[1, 1, 1]), vec![3, 3, 4]);
        assert_eq!(apportion(7, &[0, 0]), vec![7, 0]);
        assert_eq!(apportion(100, &[30, 10]).iter().sum::<u64>(), 100);
        assert_eq!(apportion(0, &[]), Vec::<u64>::new());
    }
}
