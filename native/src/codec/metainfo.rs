//! The META_INFO entries of an operator-state stream header (`StateMetaInfoSnapshot` as
//! `OperatorBackendSerializationProxy` writes it): a state's name, kind, distribution mode and
//! serializer snapshots, with where each lies in the stream. [`opstate`](super::opstate) finds
//! them; [`elements`](super::elements) reads an element's layout from their serializer snapshots.
//! Types only: no parsing here, so neither of those two modules needs the other's.

use crate::codec::io::JStr;

/// `StateMetaInfoSnapshot.BackendStateType` ordinal of a META_INFO entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    List,
    Broadcast,
}

/// One serializer snapshot of an entry: its key and snapshot class, and where its body lies.
#[derive(Clone, Debug)]
pub struct SerializerSnapshot {
    pub key: JStr,
    pub class_name: JStr,
    pub version: i32,
    pub body: (usize, usize),
}

/// One META_INFO entry of the header, with its exact byte range in the stream.
#[derive(Clone, Debug)]
pub struct MetaInfoEntry {
    pub name: JStr,
    pub kind: EntryKind,
    /// The distribution mode option as written (`SPLIT_DISTRIBUTE`, `UNION`, `BROADCAST`).
    pub mode: JStr,
    pub serializers: Vec<SerializerSnapshot>,
    pub start: usize,
    pub end: usize,
}
