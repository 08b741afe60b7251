//! rename-operator: gives one operator a new OperatorID (a uid's hash, or an id as such) and, in
//! metadata V5+, a new stored uid and name, or only a new name (same id and uid). Everything the operator holds is keyed by that one
//! id in `_metadata` (every subtask's operator, keyed and channel state, the coordinator state
//! and the finished markers), so all of it moves; no stream changes.

use super::{hex, Change, ChangeAction, NewIdentity, Selector};
use crate::codec::io::JStr;
use crate::codec::metadata::CheckpointMetadata;
use crate::codec::uid::operator_id_for_uid;
use crate::error::{Error, Result};

/// Renames the operator `selector` selects in the checkpoint as it was read (`original`), so a
/// request may swap ids or rename operators in a cycle; `false` when it selects none. Whether
/// two operators end up with one id is checked once every rename is done ([`check_unique`]).
pub fn rename(
    original: &CheckpointMetadata,
    md: &mut CheckpointMetadata,
    renamed: &mut Vec<usize>,
    selector: &Selector,
    to: &NewIdentity,
    name: Option<&str>,
    changes: &mut Vec<Change>,
) -> Result<bool> {
    if *selector == Selector::All {
        return Err(Error::InvalidArgument(
            "rename-operator needs an operator id, uid or name".into(),
        ));
    }
    let selected: Vec<usize> = (0..original.operators.len())
        .filter(|&i| selector.matches(&original.operators[i]))
        .collect();
    let index = match selected[..] {
        [] => return Ok(false),
        [i] => i,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{} operators match {}; rename-operator renames one",
                selected.len(),
                selector.describe()
            )))
        }
    };
    if renamed.contains(&index) {
        return Err(Error::InvalidArgument(format!(
            "operator {} is renamed twice in one request",
            original.operators[index].hex_id()
        )));
    }
    renamed.push(index);
    let op = &mut md.operators[index];
    if name.is_some() && op.name.is_none() {
        return Err(Error::InvalidArgument(format!(
            "metadata version {} stores no operator names (V5+, written by Flink 2.x, does); {}",
            md.version,
            if *to == NewIdentity::Keep {
                "a new name alone changes nothing in it"
            } else {
                "leave out the new name"
            }
        )));
    }
    if *to == NewIdentity::Keep && name.is_none() {
        return Err(Error::InvalidArgument(
            "rename-operator needs a new uid, a new operator id or a new name".into(),
        ));
    }
    let new_id = match to {
        NewIdentity::Uid(uid) => operator_id_for_uid(uid),
        NewIdentity::Id(id) => *id,
        NewIdentity::Keep => op.id,
    };
    // V5+ stores the uid (empty when there is none) and the name.
    let new_uid = match (&op.uid, to) {
        (None, _) | (_, NewIdentity::Keep) => op.uid.clone(),
        (Some(_), NewIdentity::Uid(uid)) => Some(JStr::new(uid)),
        (Some(_), NewIdentity::Id(_)) => Some(JStr::default()),
    };
    let new_name = name.map(JStr::new).or_else(|| op.name.clone());
    // Flink writes both with writeUTF: at most 65,535 bytes of modified UTF-8
    for (what, v) in [("uid", &new_uid), ("name", &new_name)] {
        let len = v.as_ref().map_or(0, |v| v.as_bytes().len());
        if len > u16::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "the new {what} is {len} bytes long in modified UTF-8; Flink stores at most 65535"
            )));
        }
    }
    // Every change the rename makes, in the plan: id, stored uid, stored name.
    let mut made = Vec::new();
    if new_id != op.id {
        made.push(match to {
            NewIdentity::Uid(uid) if op.uid.is_none() => format!(
                "id {} -> {} (the hash of uid '{uid}'; metadata V{} stores no uids)",
                op.hex_id(),
                hex(&new_id),
                md.version
            ),
            _ => format!("id {} -> {}", op.hex_id(), hex(&new_id)),
        });
    }
    if new_uid != op.uid {
        made.push(format!("uid {} -> {}", quoted(&op.uid), quoted(&new_uid)));
    }
    if new_name != op.name {
        made.push(format!(
            "name {} -> {}",
            quoted(&op.name),
            quoted(&new_name)
        ));
    }
    if made.is_empty() {
        made.push("no change: the operator has this identity already".into());
    }
    // the change names the operator as the request selected it; the detail what it becomes
    changes.push(Change::operator(
        op,
        ChangeAction::RenameOperator,
        made.join(", "),
    ));
    op.id = new_id;
    op.uid = new_uid;
    op.name = new_name;
    Ok(true)
}

/// A stored uid or name for a plan: quoted, `''` when empty.
fn quoted(s: &Option<JStr>) -> String {
    match s {
        Some(s) => format!("'{s}'"),
        None => "-".into(),
    }
}

/// Refuses a result in which two operators share an id: a renamed operator's new id that
/// another operator still has (unless that one was renamed away too).
pub fn check_unique(md: &CheckpointMetadata, renamed: &[usize]) -> Result<()> {
    for &i in renamed {
        let id = md.operators[i].id;
        if let Some((j, _)) = md
            .operators
            .iter()
            .enumerate()
            .find(|(j, o)| *j != i && o.id == id)
        {
            let other = if renamed.contains(&j) {
                "renamed to it too".to_string()
            } else {
                format!("operator {}", md.operators[j].hex_id())
            };
            return Err(Error::InvalidArgument(format!(
                "operator id {} already exists in this checkpoint ({other}); two operators cannot share an id",
                hex(&id)
            )));
        }
    }
    Ok(())
}
