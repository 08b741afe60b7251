//! What the tool tells: the inspection report ([`inspect`]), the canonical description of a
//! model ([`describe`]) and the decoders of known connector states ([`kafka`]). Reads the model
//! and the state streams through [`crate::codec::StreamSource`]; writes nothing.

pub mod describe;
pub mod files;
pub mod inspect;
pub mod kafka;
