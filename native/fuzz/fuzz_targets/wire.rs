//! The JNI wire: any bytes given as a source or a request decode to a value or to an error (never
//! a panic or an allocation larger than the input allows), and every value that decodes encodes
//! back to bytes that decode to the same value.
#![no_main]
use bytes::Bytes;
use checkpoint_surgeon::surgery::Request;
use checkpoint_surgeon::wire::Source;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = Request::decode(Bytes::copy_from_slice(data)) {
        let again = Request::decode(Bytes::from(req.encode())).expect("an encoded request decodes");
        assert_eq!(again, req);
    }
    if let Ok(src) = Source::decode(Bytes::copy_from_slice(data)) {
        let again = Source::decode(Bytes::from(src.encode())).expect("an encoded source decodes");
        assert_eq!(again, src);
    }
});
