//! Snappy-framed operator state from the fuzzer: decoding any bytes returns frames that the
//! tool's own writer encodes back to the same bytes, or an error; decoding the elements of any
//! state of any compressed stream header returns elements within the decoded bytes, or an
//! error; never a panic.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use checkpoint_surgeon::codec::{opstate, snappy};
use libfuzzer_sys::fuzz_target;

#[path = "handle.rs"]
mod handle;

#[derive(Arbitrary, Debug)]
struct Input {
    from: u16,
    states: Vec<(String, u8, Vec<u16>)>,
    stream: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let file = &input.stream;
    let from = input.from as usize % (file.len() + 1);
    if let Ok(d) = snappy::decode_until_identifier(file, from) {
        assert!(d.end as usize <= file.len() && d.end as usize >= from);
        assert!(d.frames.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(d.frames.iter().all(|f| f.1 <= d.bytes.len()));
        let mut again = Vec::new();
        snappy::push_frames(&mut again, &d.bytes);
        let back = snappy::decode_until_identifier(&again, 0).expect("own frames decode");
        assert_eq!(back.bytes, d.bytes);
        assert_eq!(back.end as usize, again.len());
    }

    let h = handle::handle(&input.states);
    let stream = Bytes::from(input.stream);
    if let Ok(header) = opstate::parse_header(&stream, &h) {
        for st in &h.states {
            if let Ok(fe) = opstate::framed_elements(&stream, &header, st) {
                assert_eq!(fe.elements.len(), st.offsets.len());
                assert!(fe.elements.iter().all(|&(a, b)| a <= b && b <= fe.bytes.len()));
                assert!(fe.from <= fe.to && fe.to as usize <= stream.len());
            }
        }
    }
});
