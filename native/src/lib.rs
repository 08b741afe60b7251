//! checkpoint-surgeon: reads and rewrites Flink checkpoint `_metadata` files and the
//! operator-state streams they reference. The format modules take and return bytes and know
//! nothing of the JVM; `bridge` is the only module that does.

pub mod checkpoint;
pub mod commit;
pub mod describe;
pub mod error;
pub mod handles;
pub mod inspect;
pub mod io;
pub mod javaser;
pub mod kafka;
pub mod mapguard;
pub mod metadata;
pub mod opstate;
pub mod surgery;
pub mod uid;

mod bridge;

pub use error::{Error, Result};
