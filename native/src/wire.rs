//! Every payload that crosses JNI, defined once; `io.checkpointsurgeon.Wire` is the Java twin.
//!
//! A payload starts with a 4-byte magic that names it and the 2-byte [`VERSION`]; a payload of
//! another version is refused with [`Code::Wire`](crate::error::Code::Wire), never misread.
//! Numbers are big-endian; a string is a u32 byte count and Java's modified UTF-8, so any Java
//! string (tabs, newlines, NUL, lone surrogates) crosses unchanged; an optional value is a
//! presence byte and the value; a list is a u32 count and its items.
//!
//! | payload | direction | magic |
//! |---|---|---|
//! | [`Source`]: a checkpoint path, or `_metadata` bytes with their directory and mirrors | Java → Rust | `CSSO` |
//! | [`Request`]: the typed surgery | Java → Rust | `CSRQ` |
//! | [`PlanSummary`]: the plan, and what the stage step wrote | Rust → Java | `CSPL` |
//! | [`Report`]: the inspection report | Rust → Java | `CSRE` |
//! | [`StateFile`] list: the files a checkpoint's state lives in | Rust → Java | `CSSF` |
//! | [`KeyedReport`]: keyed state per operator, state and subtask | Rust → Java | `CSKR` |
//!
//! [`samples`] builds each payload from known values for the tests of both sides.
//!
//! Errors do not travel as bytes: the bridge throws `CheckpointSurgeonException` with the
//! `Code` constant of [`crate::error::Code`].

use crate::codec::io::{encode_modified_utf8, JStr};
use crate::codec::kafka::KafkaOffset;
use crate::codec::keyed::handle::{RocksdbCounts, SnapshotFormat};
use crate::codec::keyed::meta::BackendStateType;
use crate::codec::keyed::{Note, StateCount};
use crate::codec::StreamSource;
use crate::commit::{Staged, StagedKeyed};
use crate::error::{Error, Result};
use crate::report::files::{FileKind, StateFile};
use crate::report::inspect::{
    HandleReport, KafkaEnumReport, OperatorReport, Report, StateReport, SubtaskReport,
};
use crate::report::keyed::{
    HandleReport as KeyedHandleReport, KeyedReport, KeyedStateReport, OperatorKeyed,
    SerializerReport, SnapshotReport,
};
use crate::surgery::kafka::{KafkaOperation, NewOffset};
use crate::surgery::keyed::{KeyedHandleChange, KeyedOperation};
use crate::surgery::{ChangeAction, Depth, NewIdentity, Operation, Plan, Request, Selector};
use bytes::Bytes;

pub mod samples;

/// The wire version of every payload; bump it with any change of layout, on both sides.
pub const VERSION: u16 = 6;

pub const SOURCE: u32 = u32::from_be_bytes(*b"CSSO");
pub const REQUEST: u32 = u32::from_be_bytes(*b"CSRQ");
pub const PLAN: u32 = u32::from_be_bytes(*b"CSPL");
pub const REPORT: u32 = u32::from_be_bytes(*b"CSRE");
pub const STATE_FILES: u32 = u32::from_be_bytes(*b"CSSF");
pub const KEYED_REPORT: u32 = u32::from_be_bytes(*b"CSKR");

// ---------------------------------------------------------------------------------------------
// Encoder and decoder

/// Writes one payload.
pub struct Enc(Vec<u8>);

impl Enc {
    pub fn new(magic: u32) -> Enc {
        let mut e = Enc(Vec::with_capacity(1024));
        e.u32(magic);
        e.u16(VERSION);
        e
    }
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn bool(&mut self, v: bool) {
        self.u8(v as u8);
    }
    pub fn len(&mut self, n: usize) {
        self.u32(n as u32);
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    pub fn str(&mut self, s: &str) {
        self.bytes(&encode_modified_utf8(s));
    }
    pub fn jstr(&mut self, s: &JStr) {
        self.bytes(s.as_bytes());
    }
    pub fn opt_str(&mut self, s: Option<&str>) {
        self.bool(s.is_some());
        if let Some(s) = s {
            self.str(s);
        }
    }
}

/// Reads one payload; every failure is [`Error::Wire`] naming the payload and the byte offset.
pub struct Dec {
    buf: Bytes,
    pos: usize,
    what: &'static str,
}

impl Dec {
    /// Checks the magic and the version.
    pub fn new(buf: Bytes, magic: u32, what: &'static str) -> Result<Dec> {
        let mut d = Dec { buf, pos: 0, what };
        let m = d.u32()?;
        if m != magic {
            return Err(d.err(0, format!("magic {magic:#010x}, found {m:#010x}")));
        }
        let v = d.u16()?;
        if v != VERSION {
            return Err(d.err(
                4,
                format!(
                    "wire version {VERSION}, found {v} (the jar and the native library are of different builds)"
                ),
            ));
        }
        Ok(d)
    }

    fn err(&self, at: usize, expected: String) -> Error {
        Error::Wire(format!(
            "{} payload at byte {at}: expected {expected}",
            self.what
        ))
    }

    fn take(&mut self, n: usize) -> Result<Bytes> {
        if self.buf.len() - self.pos < n {
            return Err(self.err(
                self.pos,
                format!("{n} more bytes, found {}", self.buf.len() - self.pos),
            ));
        }
        self.pos += n;
        Ok(self.buf.slice(self.pos - n..self.pos))
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(
            self.take(2)?[..].try_into().unwrap_or_default(),
        ))
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(
            self.take(4)?[..].try_into().unwrap_or_default(),
        ))
    }
    pub fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(
            self.take(8)?[..].try_into().unwrap_or_default(),
        ))
    }
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.err(self.pos - 1, format!("a boolean byte, found {b}"))),
        }
    }
    /// A count of items of at least `min_bytes` each, checked against what remains.
    pub fn len(&mut self, min_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_bytes.max(1)) > self.buf.len() - self.pos {
            return Err(self.err(
                self.pos - 4,
                format!("a count that fits the payload, found {n}"),
            ));
        }
        Ok(n)
    }
    pub fn bytes(&mut self) -> Result<Bytes> {
        let n = self.len(1)?;
        self.take(n)
    }
    pub fn jstr(&mut self) -> Result<JStr> {
        Ok(JStr(self.bytes()?))
    }
    pub fn str(&mut self) -> Result<String> {
        Ok(self.jstr()?.to_string_lossy())
    }
    pub fn opt_str(&mut self) -> Result<Option<String>> {
        Ok(if self.bool()? {
            Some(self.str()?)
        } else {
            None
        })
    }
    fn list<T>(
        &mut self,
        min_bytes: usize,
        mut item: impl FnMut(&mut Dec) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.len(min_bytes)?;
        (0..n).map(|_| item(self)).collect()
    }
    /// The payload must end here.
    pub fn end(&self) -> Result<()> {
        if self.pos != self.buf.len() {
            return Err(self.err(
                self.pos,
                format!("the end, found {} more bytes", self.buf.len() - self.pos),
            ));
        }
        Ok(())
    }
    fn tag_err<T>(&self, what: &str, tag: u8) -> Result<T> {
        Err(self.err(self.pos - 1, format!("{what}, found tag {tag}")))
    }
}

fn enc_list<T>(e: &mut Enc, items: &[T], mut item: impl FnMut(&mut Enc, &T)) {
    e.len(items.len());
    for i in items {
        item(e, i);
    }
}

// ---------------------------------------------------------------------------------------------
// Source

/// Which checkpoint a call is about.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A local `_metadata` file or its directory, read natively.
    Path(String),
    /// `_metadata` bytes held by Java (an HA file's, or a remote checkpoint's): `dir` is where
    /// relative state files are; `mirrors` are (remote prefix, local directory) pairs of remote
    /// directories staged locally.
    Bytes {
        metadata: Bytes,
        name: String,
        dir: Option<String>,
        mirrors: Vec<(String, String)>,
    },
}

impl Source {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new(SOURCE);
        match self {
            Source::Path(p) => {
                e.u8(0);
                e.str(p);
            }
            Source::Bytes {
                metadata,
                name,
                dir,
                mirrors,
            } => {
                e.u8(1);
                e.bytes(metadata);
                e.str(name);
                e.opt_str(dir.as_deref());
                enc_list(&mut e, mirrors, |e, (p, l)| {
                    e.str(p);
                    e.str(l);
                });
            }
        }
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<Source> {
        let mut d = Dec::new(buf, SOURCE, "source")?;
        let s = match d.u8()? {
            0 => Source::Path(d.str()?),
            1 => Source::Bytes {
                metadata: d.bytes()?,
                name: d.str()?,
                dir: d.opt_str()?,
                mirrors: d.list(8, |d| Ok((d.str()?, d.str()?)))?,
            },
            t => return d.tag_err("source tag 0 (path) or 1 (bytes)", t),
        };
        d.end()?;
        Ok(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Request

const REMOVE_STATE: u8 = 1;
const REMOVE_OPERATOR: u8 = 2;
const DEDUPE_UNION: u8 = 3;
const RENAME_OPERATOR: u8 = 4;
const RELOCATE: u8 = 5;
const KAFKA: u8 = 6;
/// A keyed-state surgery: the selector, then 0 and the state (remove-keyed-state) or 1, the old
/// and the new name (rename-keyed-state).
const KEYED: u8 = 7;

fn enc_opt_i32(e: &mut Enc, v: Option<i32>) {
    e.bool(v.is_some());
    e.i32(v.unwrap_or(0));
}

fn dec_opt_i32(d: &mut Dec) -> Result<Option<i32>> {
    let present = d.bool()?;
    let v = d.i32()?;
    Ok(present.then_some(v))
}

fn enc_kafka(e: &mut Enc, op: &KafkaOperation) {
    match op {
        KafkaOperation::MigrateLegacy {
            enum_state_version,
            parallelism,
            offset_not_set,
        } => {
            e.u8(0);
            e.i32(*enum_state_version);
            enc_opt_i32(e, *parallelism);
            e.bool(offset_not_set.is_some());
            e.i64(offset_not_set.unwrap_or(0));
        }
        KafkaOperation::DropTopic { topic, partition } => {
            e.u8(1);
            e.str(topic);
            enc_opt_i32(e, *partition);
        }
        KafkaOperation::SetOffsets {
            topic,
            partition,
            to,
        } => {
            e.u8(2);
            e.str(topic);
            enc_opt_i32(e, *partition);
            let (kind, v) = match to {
                NewOffset::At(n) => (0, *n),
                NewOffset::Shift(n) => (1, *n),
            };
            e.u8(kind);
            e.i64(v);
        }
    }
}

fn dec_kafka(d: &mut Dec) -> Result<KafkaOperation> {
    Ok(match d.u8()? {
        0 => KafkaOperation::MigrateLegacy {
            enum_state_version: d.i32()?,
            parallelism: dec_opt_i32(d)?,
            offset_not_set: {
                let present = d.bool()?;
                let v = d.i64()?;
                present.then_some(v)
            },
        },
        1 => KafkaOperation::DropTopic {
            topic: d.str()?,
            partition: dec_opt_i32(d)?,
        },
        2 => KafkaOperation::SetOffsets {
            topic: d.str()?,
            partition: dec_opt_i32(d)?,
            to: match d.u8()? {
                0 => NewOffset::At(d.i64()?),
                1 => NewOffset::Shift(d.i64()?),
                t => return d.tag_err("offset tag 0 (at) or 1 (shift)", t),
            },
        },
        t => return d.tag_err("Kafka operation tag 0 to 2", t),
    })
}

fn enc_selector(e: &mut Enc, s: &Selector) {
    match s {
        Selector::All => e.u8(0),
        Selector::Id(id) => {
            e.u8(1);
            e.bytes(id);
        }
        Selector::Uid(u) => {
            e.u8(2);
            e.str(u);
        }
        Selector::Name(n) => {
            e.u8(3);
            e.str(n);
        }
    }
}

fn operator_id(d: &mut Dec) -> Result<[u8; 16]> {
    let b = d.bytes()?;
    <[u8; 16]>::try_from(&b[..]).map_err(|_| {
        d.err(
            d.pos,
            format!("an operator id of 16 bytes, found {}", b.len()),
        )
    })
}

fn dec_selector(d: &mut Dec) -> Result<Selector> {
    Ok(match d.u8()? {
        0 => Selector::All,
        1 => Selector::Id(operator_id(d)?),
        2 => Selector::Uid(d.str()?),
        3 => Selector::Name(d.str()?),
        t => return d.tag_err("selector tag 0 to 3", t),
    })
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new(REQUEST);
        e.bool(self.depth == Depth::MetadataOnly);
        e.opt_str(self.reference_unchanged.as_deref());
        enc_opt_i32(
            &mut e,
            self.threads.map(|t| t.min(i32::MAX as usize) as i32),
        );
        enc_list(&mut e, &self.operations, |e, op| match op {
            Operation::RemoveState { operators, state } => {
                e.u8(REMOVE_STATE);
                enc_selector(e, operators);
                e.jstr(state);
            }
            Operation::RemoveOperator { operators } => {
                e.u8(REMOVE_OPERATOR);
                enc_selector(e, operators);
            }
            Operation::DedupeUnion { operators, state } => {
                e.u8(DEDUPE_UNION);
                enc_selector(e, operators);
                e.jstr(state);
            }
            Operation::RenameOperator { operator, to, name } => {
                e.u8(RENAME_OPERATOR);
                enc_selector(e, operator);
                match to {
                    NewIdentity::Uid(u) => {
                        e.u8(0);
                        e.str(u);
                    }
                    NewIdentity::Id(id) => {
                        e.u8(1);
                        e.bytes(id);
                    }
                    NewIdentity::Keep => e.u8(2),
                }
                e.opt_str(name.as_deref());
            }
            Operation::Relocate { from, to, outside } => {
                e.u8(RELOCATE);
                e.str(from);
                e.str(to);
                e.bool(*outside);
            }
            Operation::Kafka { operators, op } => {
                e.u8(KAFKA);
                enc_selector(e, operators);
                enc_kafka(e, op);
            }
            Operation::Keyed { operators, op } => {
                e.u8(KEYED);
                enc_selector(e, operators);
                match op {
                    KeyedOperation::RemoveState { state } => {
                        e.u8(0);
                        e.jstr(state);
                    }
                    KeyedOperation::RenameState { from, to } => {
                        e.u8(1);
                        e.jstr(from);
                        e.jstr(to);
                    }
                }
            }
        });
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<Request> {
        let mut d = Dec::new(buf, REQUEST, "request")?;
        let depth = if d.bool()? {
            Depth::MetadataOnly
        } else {
            Depth::Purge
        };
        let reference_unchanged = d.opt_str()?;
        let threads = match dec_opt_i32(&mut d)? {
            Some(t) if t < 1 => {
                return Err(Error::InvalidArgument(format!(
                    "--threads is at least 1; got {t}"
                )))
            }
            t => t.map(|t| t as usize),
        };
        let operations = d.list(2, |d| {
            Ok(match d.u8()? {
                REMOVE_STATE => Operation::RemoveState {
                    operators: dec_selector(d)?,
                    state: d.jstr()?,
                },
                REMOVE_OPERATOR => Operation::RemoveOperator {
                    operators: dec_selector(d)?,
                },
                DEDUPE_UNION => Operation::DedupeUnion {
                    operators: dec_selector(d)?,
                    state: d.jstr()?,
                },
                RENAME_OPERATOR => Operation::RenameOperator {
                    operator: dec_selector(d)?,
                    to: match d.u8()? {
                        0 => NewIdentity::Uid(d.str()?),
                        1 => NewIdentity::Id(operator_id(d)?),
                        2 => NewIdentity::Keep,
                        t => return d.tag_err("new identity tag 0 (uid), 1 (id) or 2 (kept)", t),
                    },
                    name: d.opt_str()?,
                },
                RELOCATE => Operation::Relocate {
                    from: d.str()?,
                    to: d.str()?,
                    outside: d.bool()?,
                },
                KAFKA => Operation::Kafka {
                    operators: dec_selector(d)?,
                    op: dec_kafka(d)?,
                },
                KEYED => Operation::Keyed {
                    operators: dec_selector(d)?,
                    op: match d.u8()? {
                        0 => KeyedOperation::RemoveState { state: d.jstr()? },
                        1 => KeyedOperation::RenameState {
                            from: d.jstr()?,
                            to: d.jstr()?,
                        },
                        t => return d.tag_err("keyed operation tag 0 (remove) or 1 (rename)", t),
                    },
                },
                t => return d.tag_err("operation tag 1 to 7", t),
            })
        })?;
        d.end()?;
        if operations.is_empty() {
            return Err(Error::InvalidArgument(
                "no surgery operation was requested".into(),
            ));
        }
        Ok(Request {
            operations,
            depth,
            reference_unchanged,
            threads,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Plan

/// One change of a plan, as it crosses the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeSummary {
    pub operator: String,
    pub subtask: i32,
    pub state: String,
    /// On the wire as its name ([`ChangeAction::as_str`]); Java decodes it by that name.
    pub action: ChangeAction,
    pub elements_before: i64,
    pub elements_after: i64,
    pub bytes_removed: i64,
    pub detail: String,
}

/// A plan as Java sees it (`SurgeryPlan` and its `Staged`).
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSummary {
    pub source: String,
    pub metadata_only: bool,
    pub metadata_bytes_before: i64,
    pub metadata_bytes_after: i64,
    pub changes: Vec<ChangeSummary>,
    /// (file name or "" for inline, what it replaces, length)
    pub new_streams: Vec<(String, String, i64)>,
    /// Operators the new `_metadata` has (the read-back check of the commit compares it).
    pub operators: i32,
    /// Absolute paths a relocation rewrote: (old, new).
    pub relocated: Vec<(String, String)>,
    /// Bytes of keyed state read and written: the plan's estimate, exact once staged.
    pub keyed_bytes_read: i64,
    pub keyed_bytes_written: i64,
    /// How many keyed streams the stage rewrites at once.
    pub threads: i32,
    pub staged: Option<StagedSummary>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StagedSummary {
    pub metadata_tmp: String,
    pub metadata_bytes: i64,
    pub written: Vec<String>,
    pub unchanged_relative: Vec<String>,
}

/// A keyed figure of the plan; once staged, the key-groups streams count as they were written
/// (the plan only estimates a removal from them), the RocksDB handles and the dropped handles as
/// planned (their new files are written by the plan itself).
fn keyed_bytes(
    plan: &Plan,
    staged: Option<&Staged>,
    planned: impl Fn(&KeyedHandleChange) -> u64,
    written: impl Fn(&StagedKeyed) -> u64,
) -> u64 {
    match staged {
        None => plan.keyed.iter().map(planned).sum(),
        Some(st) => {
            let rest = plan
                .keyed
                .iter()
                .filter(|k| k.format == SnapshotFormat::RocksdbFiles || k.handle_dropped);
            rest.map(planned).sum::<u64>() + st.keyed.iter().map(written).sum::<u64>()
        }
    }
}

/// The entries and bytes a removal from a key-groups file took out, counted when the file was
/// rewritten: for a change whose figures the plan left open (-1), the only change naming the file.
fn counted_when_staged(plan: &Plan, st: &Staged, c: &crate::surgery::Change) -> Option<(i64, i64)> {
    if c.elements_before >= 0 {
        return None;
    }
    let k = st
        .keyed
        .iter()
        .find(|k| c.detail.contains(k.file.as_str()))?;
    let naming = plan
        .changes
        .iter()
        .filter(|o| o.detail.contains(k.file.as_str()));
    (naming.count() == 1).then_some((k.entries_removed as i64, k.raw_bytes_removed as i64))
}

impl PlanSummary {
    pub fn of(cp: &dyn StreamSource, plan: &Plan, staged: Option<&Staged>) -> PlanSummary {
        PlanSummary {
            source: cp.name(),
            metadata_only: plan.depth == Depth::MetadataOnly,
            metadata_bytes_before: cp.metadata_len() as i64,
            metadata_bytes_after: plan.metadata_bytes as i64,
            changes: plan
                .changes
                .iter()
                .map(|c| {
                    let counted = staged.and_then(|st| counted_when_staged(plan, st, c));
                    ChangeSummary {
                        operator: c.operator.clone(),
                        subtask: c.subtask,
                        state: c.state.clone(),
                        action: c.action,
                        elements_before: counted.map_or(c.elements_before, |k| k.0),
                        elements_after: c.elements_after,
                        bytes_removed: counted.map_or(c.bytes_removed, |k| k.1),
                        detail: c.detail.clone(),
                    }
                })
                .collect(),
            new_streams: plan
                .new_streams
                .iter()
                .map(|s| {
                    (
                        s.file_name.clone().unwrap_or_default(),
                        s.replaces.clone(),
                        s.len as i64,
                    )
                })
                .collect(),
            operators: plan.metadata.operators.len() as i32,
            relocated: plan.relocated.clone(),
            keyed_bytes_read: keyed_bytes(plan, staged, |k| k.bytes_read, |k| k.bytes_read) as i64,
            keyed_bytes_written: keyed_bytes(plan, staged, |k| k.bytes_written, |k| k.bytes_written)
                as i64,
            threads: plan.threads.min(i32::MAX as usize) as i32,
            staged: staged.map(|st| StagedSummary {
                metadata_tmp: st.metadata_tmp.display().to_string(),
                metadata_bytes: st.metadata_bytes as i64,
                written: st.written.clone(),
                unchanged_relative: st.unchanged_relative.clone(),
            }),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new(PLAN);
        e.str(&self.source);
        e.bool(self.metadata_only);
        e.i64(self.metadata_bytes_before);
        e.i64(self.metadata_bytes_after);
        enc_list(&mut e, &self.changes, |e, c| {
            e.str(&c.operator);
            e.i32(c.subtask);
            e.str(&c.state);
            e.str(c.action.as_str());
            e.i64(c.elements_before);
            e.i64(c.elements_after);
            e.i64(c.bytes_removed);
            e.str(&c.detail);
        });
        enc_list(&mut e, &self.new_streams, |e, (f, r, n)| {
            e.str(f);
            e.str(r);
            e.i64(*n);
        });
        e.i32(self.operators);
        enc_list(&mut e, &self.relocated, |e, (old, new)| {
            e.str(old);
            e.str(new);
        });
        e.i64(self.keyed_bytes_read);
        e.i64(self.keyed_bytes_written);
        e.i32(self.threads);
        e.bool(self.staged.is_some());
        if let Some(st) = &self.staged {
            e.str(&st.metadata_tmp);
            e.i64(st.metadata_bytes);
            for list in [&st.written, &st.unchanged_relative] {
                enc_list(&mut e, list, |e, s| e.str(s));
            }
        }
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<PlanSummary> {
        let mut d = Dec::new(buf, PLAN, "plan")?;
        let p = PlanSummary {
            source: d.str()?,
            metadata_only: d.bool()?,
            metadata_bytes_before: d.i64()?,
            metadata_bytes_after: d.i64()?,
            changes: d.list(48, |d| {
                let operator = d.str()?;
                let subtask = d.i32()?;
                let state = d.str()?;
                let at = d.pos;
                let name = d.str()?;
                let action = ChangeAction::from_name(&name)
                    .ok_or_else(|| d.err(at, format!("a change action, found {name}")))?;
                Ok(ChangeSummary {
                    operator,
                    subtask,
                    state,
                    action,
                    elements_before: d.i64()?,
                    elements_after: d.i64()?,
                    bytes_removed: d.i64()?,
                    detail: d.str()?,
                })
            })?,
            new_streams: d.list(16, |d| Ok((d.str()?, d.str()?, d.i64()?)))?,
            operators: d.i32()?,
            relocated: d.list(8, |d| Ok((d.str()?, d.str()?)))?,
            keyed_bytes_read: d.i64()?,
            keyed_bytes_written: d.i64()?,
            threads: d.i32()?,
            staged: if d.bool()? {
                Some(StagedSummary {
                    metadata_tmp: d.str()?,
                    metadata_bytes: d.i64()?,
                    written: d.list(4, Dec::str)?,
                    unchanged_relative: d.list(4, Dec::str)?,
                })
            } else {
                None
            },
        };
        d.end()?;
        Ok(p)
    }
}

// ---------------------------------------------------------------------------------------------
// Report

fn enc_handle(e: &mut Enc, h: &Option<HandleReport>) {
    e.bool(h.is_some());
    let Some(h) = h else { return };
    e.str(&h.kind);
    e.str(&h.delegate_kind);
    e.str(&h.location);
    e.i64(h.delegate_size);
    e.bool(h.inline);
    e.i32(h.proxy_version);
    e.bool(h.compressed);
    e.str(&h.stream_error);
    e.i64(h.header_bytes);
    enc_list(e, &h.states, |e, s| {
        e.str(&s.name);
        e.str(&s.mode);
        e.i64(s.elements);
        e.i64(s.bytes);
        e.str(&s.serializer);
        e.str(&s.element_type);
        e.i64(s.distinct);
        e.i64(s.digest);
        enc_list(e, &s.kafka, |e, (k, n)| {
            enc_kafka_offset(e, k);
            e.i64(*n as i64);
        });
    });
}

fn enc_kafka_offset(e: &mut Enc, k: &KafkaOffset) {
    e.str(&k.topic);
    e.i32(k.partition);
    e.i64(k.offset);
    e.i64(k.stopping);
}

fn dec_kafka_offset(d: &mut Dec) -> Result<KafkaOffset> {
    Ok(KafkaOffset {
        topic: d.str()?,
        partition: d.i32()?,
        offset: d.i64()?,
        stopping: d.i64()?,
    })
}

fn dec_handle(d: &mut Dec) -> Result<Option<HandleReport>> {
    if !d.bool()? {
        return Ok(None);
    }
    Ok(Some(HandleReport {
        kind: d.str()?,
        delegate_kind: d.str()?,
        location: d.str()?,
        delegate_size: d.i64()?,
        inline: d.bool()?,
        proxy_version: d.i32()?,
        compressed: d.bool()?,
        stream_error: d.str()?,
        header_bytes: d.i64()?,
        states: d.list(44, |d| {
            Ok(StateReport {
                name: d.str()?,
                mode: d.str()?,
                elements: d.i64()?,
                bytes: d.i64()?,
                serializer: d.str()?,
                element_type: d.str()?,
                distinct: d.i64()?,
                digest: d.i64()?,
                kafka: d.list(32, |d| Ok((dec_kafka_offset(d)?, d.i64()? as u64)))?,
            })
        })?,
    }))
}

fn enc_keyed(e: &mut Enc, k: &Option<(String, i64)>) {
    e.bool(k.is_some());
    if let Some((kind, size)) = k {
        e.str(kind);
        e.i64(*size);
    }
}

fn dec_keyed(d: &mut Dec) -> Result<Option<(String, i64)>> {
    Ok(if d.bool()? {
        Some((d.str()?, d.i64()?))
    } else {
        None
    })
}

impl Report {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new(REPORT);
        e.str(&self.source);
        e.i32(self.version);
        e.i64(self.checkpoint_id);
        e.i64(self.metadata_bytes as i64);
        e.i64(self.properties_bytes as i64);
        enc_list(&mut e, &self.master_states, |e, (name, version, bytes)| {
            e.str(name);
            e.i32(*version);
            e.i64(*bytes as i64);
        });
        enc_list(&mut e, &self.operators, |e, op| {
            e.str(&op.id);
            e.str(&op.name);
            e.str(&op.uid);
            e.i32(op.parallelism);
            e.i32(op.max_parallelism);
            e.i64(op.coordinator_bytes);
            e.bytes(&op.coordinator_head);
            e.bool(op.fully_finished);
            e.i32(op.finished_subtasks);
            e.bool(op.kafka_enumerator.is_some());
            if let Some(k) = &op.kafka_enumerator {
                e.i32(k.version);
                e.str(&k.error);
                e.bool(k.initial_discovery_finished);
                enc_list(e, &k.splits, |e, (s, status)| {
                    enc_kafka_offset(e, s);
                    e.i32(*status);
                });
            }
            enc_list(e, &op.subtasks, |e, s| {
                e.i32(s.index);
                enc_handle(e, &s.managed_operator);
                enc_handle(e, &s.raw_operator);
                enc_keyed(e, &s.managed_keyed);
                enc_keyed(e, &s.raw_keyed);
                e.i32(s.input_channels);
                e.i32(s.output_channels);
                e.i64(s.channel_bytes);
            });
        });
        e.finish()
    }

    pub fn decode(buf: Bytes) -> Result<Report> {
        let mut d = Dec::new(buf, REPORT, "report")?;
        let r = Report {
            source: d.str()?,
            version: d.i32()?,
            checkpoint_id: d.i64()?,
            metadata_bytes: d.i64()? as u64,
            properties_bytes: d.i64()? as u64,
            master_states: d.list(16, |d| Ok((d.str()?, d.i32()?, d.i64()? as u64)))?,
            operators: d.list(37, |d| {
                Ok(OperatorReport {
                    id: d.str()?,
                    name: d.str()?,
                    uid: d.str()?,
                    parallelism: d.i32()?,
                    max_parallelism: d.i32()?,
                    coordinator_bytes: d.i64()?,
                    coordinator_head: d.bytes()?.to_vec(),
                    fully_finished: d.bool()?,
                    finished_subtasks: d.i32()?,
                    kafka_enumerator: if d.bool()? {
                        Some(KafkaEnumReport {
                            version: d.i32()?,
                            error: d.str()?,
                            initial_discovery_finished: d.bool()?,
                            splits: d.list(28, |d| Ok((dec_kafka_offset(d)?, d.i32()?)))?,
                        })
                    } else {
                        None
                    },
                    subtasks: d.list(24, |d| {
                        Ok(SubtaskReport {
                            index: d.i32()?,
                            managed_operator: dec_handle(d)?,
                            raw_operator: dec_handle(d)?,
                            managed_keyed: dec_keyed(d)?,
                            raw_keyed: dec_keyed(d)?,
                            input_channels: d.i32()?,
                            output_channels: d.i32()?,
                            channel_bytes: d.i64()?,
                        })
                    })?,
                })
            })?,
        };
        d.end()?;
        Ok(r)
    }
}

// ---------------------------------------------------------------------------------------------
// State files

pub fn encode_state_files(files: &[StateFile]) -> Vec<u8> {
    let mut e = Enc::new(STATE_FILES);
    enc_list(&mut e, files, |e, f| {
        e.bool(f.operator_state);
        match f.kind {
            FileKind::Relative { size } => {
                e.u8(0);
                e.i64(size);
            }
            FileKind::File { size } => {
                e.u8(1);
                e.i64(size);
            }
            FileKind::Segment { start, size } => {
                e.u8(2);
                e.i64(start);
                e.i64(size);
            }
        }
        e.str(&f.path);
    });
    e.finish()
}

pub fn decode_state_files(buf: Bytes) -> Result<Vec<StateFile>> {
    let mut d = Dec::new(buf, STATE_FILES, "state files")?;
    let files = d.list(6, |d| {
        let operator_state = d.bool()?;
        let kind = match d.u8()? {
            0 => FileKind::Relative { size: d.i64()? },
            1 => FileKind::File { size: d.i64()? },
            2 => FileKind::Segment {
                start: d.i64()?,
                size: d.i64()?,
            },
            t => return d.tag_err("file kind 0 to 2", t),
        };
        Ok(StateFile {
            operator_state,
            kind,
            path: d.str()?,
        })
    })?;
    d.end()?;
    Ok(files)
}

// ---------------------------------------------------------------------------------------------
// Keyed report

fn enc_count(e: &mut Enc, c: &StateCount) {
    e.i64(c.entries as i64);
    e.i64(c.raw_bytes as i64);
    e.i64(c.stored_bytes as i64);
    e.bool(c.complete);
}

fn dec_count(d: &mut Dec) -> Result<StateCount> {
    Ok(StateCount {
        entries: d.i64()? as u64,
        raw_bytes: d.i64()? as u64,
        stored_bytes: d.i64()? as u64,
        complete: d.bool()?,
    })
}

fn enc_format(e: &mut Enc, f: SnapshotFormat) {
    e.u8(SnapshotFormat::ALL
        .iter()
        .position(|x| *x == f)
        .unwrap_or(0) as u8);
}

fn dec_format(d: &mut Dec) -> Result<SnapshotFormat> {
    let t = d.u8()?;
    match SnapshotFormat::ALL.get(t as usize) {
        Some(f) => Ok(*f),
        None => d.tag_err("snapshot format tag 0 to 3", t),
    }
}

fn enc_snapshot(e: &mut Enc, s: &SnapshotReport) {
    e.str(&s.snapshot_class);
    e.i32(s.version);
    e.opt_str(s.serializer_class.as_deref());
    enc_list(e, &s.classes, |e, c| e.str(c));
    enc_list(e, &s.nested, enc_snapshot);
    e.bool(s.layout_known);
}

/// Nested snapshots deeper than this are no serializer Flink writes; refused, not recursed into.
const MAX_SNAPSHOT_DEPTH: usize = 64;

fn dec_snapshot(d: &mut Dec, depth: usize) -> Result<SnapshotReport> {
    if depth > MAX_SNAPSHOT_DEPTH {
        return Err(d.err(
            d.pos,
            format!("snapshots nested at most {MAX_SNAPSHOT_DEPTH} deep"),
        ));
    }
    Ok(SnapshotReport {
        snapshot_class: d.str()?,
        version: d.i32()?,
        serializer_class: d.opt_str()?,
        classes: d.list(4, Dec::str)?,
        nested: d.list(14, |d| dec_snapshot(d, depth + 1))?,
        layout_known: d.bool()?,
    })
}

/// The keyed report of the checkpoint `source`.
pub fn encode_keyed_report(source: &str, r: &KeyedReport) -> Vec<u8> {
    let mut e = Enc::new(KEYED_REPORT);
    e.str(source);
    enc_list(&mut e, &r.operators, |e, op| {
        e.str(&op.operator_id);
        e.opt_str(op.name.as_deref());
        e.opt_str(op.uid.as_deref());
        e.i32(op.parallelism);
        e.i32(op.max_parallelism);
        enc_list(e, &op.states, |e, s| {
            e.str(&s.name);
            e.str(s.backend_type);
            e.opt_str(s.state_type.as_deref());
            enc_list(e, &s.serializers, |e, x| {
                e.str(&x.key);
                enc_snapshot(e, &x.snapshot);
            });
            e.bool(s.ttl);
            enc_count(e, &s.total);
            enc_list(e, &s.per_subtask, |e, (t, c)| {
                e.i32(*t);
                enc_count(e, c);
            });
            enc_list(e, &s.formats, |e, f| enc_format(e, *f));
            e.bool(s.rocksdb.is_some());
            if let Some(r) = &s.rocksdb {
                for v in [
                    r.files,
                    r.deleted_keys,
                    r.merge_operands,
                    r.range_deletions,
                    r.data_size,
                ] {
                    e.i64(v as i64);
                }
            }
        });
        enc_list(e, &op.handles, |e, h| {
            e.i32(h.subtask);
            e.bool(h.raw);
            e.str(&h.kind);
            e.bool(h.format.is_some());
            if let Some(f) = h.format {
                enc_format(e, f);
            }
            e.i32(h.key_groups.0);
            e.i32(h.key_groups.1);
            for v in [
                h.total_bytes,
                h.header_bytes,
                h.overhead_bytes,
                h.unattributed_bytes,
            ] {
                e.i64(v as i64);
            }
            e.bool(h.stored_apportioned);
            enc_list(e, &h.notes, |e, n| {
                e.str(&n.file);
                e.i64(n.offset as i64);
                e.str(&n.message);
            });
            e.opt_str(h.error.as_deref());
        });
    });
    e.finish()
}

pub fn decode_keyed_report(buf: Bytes) -> Result<(String, KeyedReport)> {
    let mut d = Dec::new(buf, KEYED_REPORT, "keyed report")?;
    let source = d.str()?;
    let operators = d.list(22, |d| {
        Ok(OperatorKeyed {
            operator_id: d.str()?,
            name: d.opt_str()?,
            uid: d.opt_str()?,
            parallelism: d.i32()?,
            max_parallelism: d.i32()?,
            states: d.list(40, |d| {
                let name = d.str()?;
                let at = d.pos;
                let t = d.str()?;
                let backend_type = BackendStateType::from_name(&t)
                    .ok_or_else(|| d.err(at, format!("a backend state type, found {t}")))?
                    .name();
                Ok(KeyedStateReport {
                    name,
                    backend_type,
                    state_type: d.opt_str()?,
                    serializers: d.list(18, |d| {
                        Ok(SerializerReport {
                            key: d.str()?,
                            snapshot: dec_snapshot(d, 0)?,
                        })
                    })?,
                    ttl: d.bool()?,
                    total: dec_count(d)?,
                    per_subtask: d.list(29, |d| Ok((d.i32()?, dec_count(d)?)))?,
                    formats: d.list(1, dec_format)?,
                    rocksdb: if d.bool()? {
                        Some(RocksdbCounts {
                            files: d.i64()? as u64,
                            deleted_keys: d.i64()? as u64,
                            merge_operands: d.i64()? as u64,
                            range_deletions: d.i64()? as u64,
                            data_size: d.i64()? as u64,
                        })
                    } else {
                        None
                    },
                })
            })?,
            handles: d.list(52, |d| {
                Ok(KeyedHandleReport {
                    subtask: d.i32()?,
                    raw: d.bool()?,
                    kind: d.str()?,
                    format: if d.bool()? {
                        Some(dec_format(d)?)
                    } else {
                        None
                    },
                    key_groups: (d.i32()?, d.i32()?),
                    total_bytes: d.i64()? as u64,
                    header_bytes: d.i64()? as u64,
                    overhead_bytes: d.i64()? as u64,
                    unattributed_bytes: d.i64()? as u64,
                    stored_apportioned: d.bool()?,
                    notes: d.list(16, |d| {
                        Ok(Note {
                            file: d.str()?,
                            offset: d.i64()? as u64,
                            message: d.str()?,
                        })
                    })?,
                    error: d.opt_str()?,
                })
            })?,
        })
    })?;
    d.end()?;
    Ok((source, KeyedReport { operators }))
}

/// Decodes any payload by its magic and encodes it again: the Java tests send their payloads
/// through this to prove both sides agree on every byte.
pub fn echo(buf: Bytes) -> Result<Vec<u8>> {
    let magic = buf
        .get(..4)
        .map(|m| u32::from_be_bytes([m[0], m[1], m[2], m[3]]))
        .unwrap_or(0);
    Ok(match magic {
        SOURCE => Source::decode(buf)?.encode(),
        REQUEST => Request::decode(buf)?.encode(),
        PLAN => PlanSummary::decode(buf)?.encode(),
        REPORT => Report::decode(buf)?.encode(),
        STATE_FILES => encode_state_files(&decode_state_files(buf)?),
        KEYED_REPORT => {
            let (source, r) = decode_keyed_report(buf)?;
            encode_keyed_report(&source, &r)
        }
        m => {
            return Err(Error::Wire(format!(
                "payload at byte 0: expected a known magic, found {m:#010x}"
            )))
        }
    })
}
