//! rename-operator: gives one operator a new OperatorID (a uid's hash, or an id as such) and, in
//! metadata V5+, a new stored uid and name. Everything the operator holds is keyed by that one
//! id in `_metadata` (every subtask's operator, keyed and channel state, the coordinator state
//! and the finished markers), so all of it moves; no stream changes.

use super::{hex, Change, NewIdentity, Selector};
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
    let new_id = match to {
        NewIdentity::Uid(uid) => operator_id_for_uid(uid),
        NewIdentity::Id(id) => *id,
    };
    let op = &mut md.operators[index];
    if name.is_some() && op.name.is_none() {
        return Err(Error::InvalidArgument(format!(
            "metadata version {} stores no operator names (V5+ does); leave out the new name",
            md.version
        )));
    }
    let old = op.hex_id();
    let detail = match to {
        NewIdentity::Uid(uid) => format!("{old} -> {} (uid '{uid}')", hex(&new_id)),
        NewIdentity::Id(_) => format!("{old} -> {}", hex(&new_id)),
    };
    // the change names the operator as the request selected it; the detail names the new id
    changes.push(Change::operator(op, "rename-operator", detail));
    op.id = new_id;
    // V5+ stores the uid (empty when there is none) and the name.
    if op.uid.is_some() {
        op.uid = Some(match to {
            NewIdentity::Uid(uid) => JStr::new(uid),
            NewIdentity::Id(_) => JStr::default(),
        });
    }
    if let Some(n) = name {
        op.name = Some(JStr::new(n));
    }
    Ok(true)
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
