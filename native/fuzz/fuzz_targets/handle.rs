//! The operator state handle of the fuzz targets that take one: up to 8 states, each a name, a
//! distribution mode and offsets, and no stream of its own.
use checkpoint_surgeon::codec::handles::{Mode, Offsets, OperatorHandle, StateMetaInfo};
use checkpoint_surgeon::codec::io::JStr;

pub fn handle(states: &[(String, u8, Vec<u16>)]) -> OperatorHandle {
    let states = states
        .iter()
        .take(8)
        .map(|(name, mode, offs)| StateMetaInfo {
            name: JStr::new(name),
            mode: Mode::from_ordinal(mode % 3).unwrap_or(Mode::SplitDistribute),
            offsets: Offsets::from_slice(&offs.iter().map(|&o| o as i64).collect::<Vec<_>>()),
        })
        .collect();
    OperatorHandle {
        states,
        file_merging: None,
        delegate: None,
    }
}
