//! The seeds of the keyed fuzz targets (real Flink files with their keyed state inline) and the
//! byte edits they make to a stream of them.
use bytes::Bytes;

pub const SEEDS: &[&[u8]] = &[
    // canonical (RocksDB) and heap streams inline in _metadata
    include_bytes!("../../../tests/fixtures/1.20.3/savepoint-canonical/_metadata"),
    include_bytes!("../../../tests/fixtures/1.20.3/stale-union-legacy-class/_metadata"),
    // a native savepoint with its meta stream, SST files and MANIFEST inline
    include_bytes!("../../../tests/fixtures/1.15.4/savepoint-native/_metadata"),
];

/// `data` with each `(at, byte)` written at `at` modulo its length, then cut at `cut` modulo its
/// length plus one.
pub fn edit(data: &[u8], edits: &[(u32, u8)], cut: Option<u32>) -> Bytes {
    let mut v = data.to_vec();
    if !v.is_empty() {
        let n = v.len();
        for &(at, b) in edits {
            v[at as usize % n] = b;
        }
    }
    if let Some(c) = cut {
        v.truncate(c as usize % (v.len() + 1));
    }
    Bytes::from(v)
}
