//! An operator-state stream and a handle map (names, modes, offsets) from the fuzzer: header
//! parsing and element ranges return results or errors, never panic.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use checkpoint_surgeon::codec::opstate;
use libfuzzer_sys::fuzz_target;

#[path = "handle.rs"]
mod handle;

#[derive(Arbitrary, Debug)]
struct Input {
    states: Vec<(String, u8, Vec<u16>)>,
    stream: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let h = handle::handle(&input.states);
    let stream = Bytes::from(input.stream);
    if let Ok(header) = opstate::parse_header(&stream, &h) {
        assert!(header.data_start <= stream.len());
        for e in &header.entries {
            assert!(e.start <= e.end && e.end <= header.data_start);
        }
    }
    if let Ok(ranges) = opstate::element_ranges(&h, stream.len() as u64) {
        for r in ranges.iter().flatten() {
            assert!(r.0 <= r.1 && r.1 <= stream.len() as u64);
        }
    }
});
