//! Sample frames (WebSocket binary messages from an agent to the page and
//! `meshperf run`): `protocol::frame::decode`, and what a controller does
//! with them, `driver::StepRun::on_frame`. Every bit of a frame is a field,
//! so a frame that decodes re-encodes to the very same bytes; and a run of
//! frames, however numbered, makes a controller hold no more values than it
//! received plus `MAX_GAP`.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_protocol::driver::{StepRun, MAX_GAP};
use meshperf_protocol::frame::{self, HEADER_LEN};
use meshperf_protocol::params::Kind;
use meshperf_protocol::plan::{Step, Transport};

fuzz_target!(|data: &[u8]| {
    if let Ok((h, values)) = frame::decode(data) {
        assert_eq!(h.count as usize, values.len());
        let mut out = Vec::new();
        frame::encode(&h, &values, &mut out);
        assert_eq!(out, data, "encode(decode(frame)) is not the frame");
        assert_eq!(frame::decode(&out), Ok((h, values)));
    }
    // The input as frames one after the other, each as long as its header
    // says, for the test the first one names.
    if data.len() < HEADER_LEN {
        return;
    }
    let test_id = u32::from_le_bytes(data[8..12].try_into().unwrap());
    let step = Step {
        index: 0,
        kind: Kind::UdpStream,
        params: Default::default(),
        point: Vec::new(),
        repeat: 0,
        transport: Transport::Tcp,
    };
    let mut run = StepRun::failed(step, test_id, 0.0, "fuzzed".into());
    let (mut rest, mut received) = (data, 0usize);
    while rest.len() >= HEADER_LEN {
        let count = u32::from_le_bytes(rest[20..24].try_into().unwrap()) as usize;
        let len = (HEADER_LEN + count.saturating_mul(8)).min(rest.len());
        let (one, next) = rest.split_at(len);
        if let Ok((h, values)) = frame::decode(one) {
            if h.test_id == test_id {
                received += values.len();
            }
        }
        let _ = run.on_frame(one);
        rest = next;
    }
    let held: usize = run.take_samples().iter().map(|s| s.values.len()).sum();
    assert!(
        held <= received + MAX_GAP,
        "{held} values held for {received} received"
    );
});
