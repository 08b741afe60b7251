//! Flink's byte formats: `_metadata` ([`metadata`]), the state handles in it ([`handles`]), the
//! operator-state streams ([`opstate`]) with their header entries ([`metainfo`]), snappy frames
//! ([`snappy`]), element layouts ([`elements`]), checks over `long[]` offsets ([`longs`]), Java's modified UTF-8 and the readers/writers
//! ([`io`]), the check of Java-serialized parts ([`javaser`]), uid hashing ([`uid`]) and the Kafka
//! connector's states ([`kafka`]).
//! Bytes in, model out: nothing here touches a file or the JVM.

pub mod elements;
pub mod handles;
pub mod io;
pub mod javaser;
pub mod kafka;
pub mod keyed;
pub mod longs;
pub mod metadata;
pub mod metainfo;
pub mod opstate;
pub mod snappy;
pub mod uid;

use crate::error::Result;
use bytes::Bytes;
use handles::StreamHandle;
use metadata::CheckpointMetadata;

/// A checkpoint as surgery and report see it: the parsed `_metadata` and the bytes of its state
/// streams. `commit::Checkpoint` serves them from the file system (mapped, guarded); a test or a
/// fuzz target can serve them from memory.
pub trait StreamSource {
    fn metadata(&self) -> &CheckpointMetadata;
    /// The `_metadata` file's name, for messages and reports.
    fn name(&self) -> String;
    /// The size of the `_metadata` bytes.
    fn metadata_len(&self) -> u64;
    /// The bytes of one state stream.
    fn stream_bytes(&self, h: &StreamHandle) -> Result<Bytes>;
    /// One state stream for reads at any offset. A source that holds its streams in memory (or
    /// mapped) gives their bytes; a remote one reads only the ranges asked for (the keyed readers
    /// read an SST file's last few KiB, a canonical stream front to back).
    fn open_stream(&self, h: &StreamHandle) -> Result<Box<dyn keyed::RangeSource + '_>> {
        Ok(Box::new(self.stream_bytes(h)?))
    }
    /// The footer and properties of the SST file `h` (one of [`keyed::handle::sst_streams`]). A
    /// source may have read them ahead, many files at once (`commit::keyed`).
    fn sst(&self, h: &StreamHandle) -> Result<keyed::sst::SstFile> {
        keyed::sst::read(&*self.open_stream(h)?)
    }
}
