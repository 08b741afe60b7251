//! Any bytes: the `_metadata` parser returns a model or an error, never panics or hangs; an
//! accepted input writes back to the identical bytes and can be described and inspected.
#![no_main]
use bytes::Bytes;
use checkpoint_surgeon::commit::read::Checkpoint;
use checkpoint_surgeon::{report::describe, report::inspect, codec::metadata};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(md) = metadata::parse(Bytes::copy_from_slice(data)) else {
        return;
    };
    assert_eq!(
        md.to_vec(),
        data,
        "parse then write must give the identical bytes"
    );
    let _ = describe::describe(&md);
    // no directory: relative and absolute stream handles are refused, never read
    if let Ok(cp) = Checkpoint::from_bytes("fuzz", None, Bytes::copy_from_slice(data)) {
        let _ = inspect::inspect(&cp).encode();
    }
});
