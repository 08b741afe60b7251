//! checkpoint-surgeon: reads and rewrites Flink checkpoint `_metadata` files and the
//! operator-state streams they reference.
//!
//! The folders are the layers, each knowing only the ones above it in this list:
//! - [`codec`]: Flink's byte formats (`_metadata`, state handles, operator-state streams, the
//!   Java-serialization check). Bytes in, model out; no file system, no JNI.
//! - [`surgery`]: requests, operator selection, planning and stream cutting, on the model.
//! - [`report`]: inspect, describe and the Kafka decoders, on the model.
//! - [`commit`]: the file system: reading a checkpoint (mapped, guarded), staging the new files
//!   of a surgery and the directory locks of the commit protocol.
//! - [`wire`]: every payload that crosses JNI, versioned; the Java twin is `Wire.java`.
//! - `bridge`: the `extern "system"` exports, a few lines each.

pub mod codec;
pub mod commit;
pub mod error;
pub mod report;
pub mod surgery;
pub mod wire;

#[doc(hidden)] // public for the test-only exports of native/testing, not an API
pub mod bridge;

pub use error::{Code, Error, Result};
