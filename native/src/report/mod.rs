//! What the tool tells: the inspection report ([`inspect`]), the canonical description of a
//! model ([`describe`]) and the files a checkpoint's state lives in ([`files`]). Reads the model
//! and the state streams through [`crate::codec::StreamSource`]; writes nothing.

pub mod describe;
pub mod files;
pub mod inspect;
pub mod keyed;
