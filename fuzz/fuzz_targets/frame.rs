//! Sample frames (WebSocket binary messages from an agent to the page and
//! `meshperf run`): `protocol::frame::decode`. Every bit of a frame is a
//! field, so a frame that decodes re-encodes to the very same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use meshperf_protocol::frame;

fuzz_target!(|data: &[u8]| {
    let Ok((h, values)) = frame::decode(data) else {
        return;
    };
    assert_eq!(h.count as usize, values.len());
    let mut out = Vec::new();
    frame::encode(&h, &values, &mut out);
    assert_eq!(out, data, "encode(decode(frame)) is not the frame");
    assert_eq!(frame::decode(&out), Ok((h, values)));
});
