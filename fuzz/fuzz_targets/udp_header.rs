//! The meshperf UDP datagram header, both forms (28-byte `MPU` and 18..27-byte
//! compact `m`), as udp_rr and udp_stream read every datagram that reaches
//! their port: `engine::udp::Hdr::read`. Every header byte is a field, so a
//! datagram that reads writes back to the same bytes; and any header written
//! into a datagram of a size the parameters allow reads back.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_agent::engine::udp::Hdr;
use meshperf_protocol::params::{UDP_HEADER_LEN, UDP_MAX_PAYLOAD, UDP_MIN_LEN};

fuzz_target!(|data: &[u8]| {
    if let Some(h) = Hdr::read(data) {
        assert!(data.len() >= UDP_MIN_LEN as usize);
        assert!(h.is(h.kind, h.token));
        let mut again = data.to_vec();
        h.write(&mut again);
        assert_eq!(again, data, "write(read(datagram)) changed the header");
        assert_eq!(Hdr::read(&again), Some(h));
    }
    // The other way: a header from the input, written into a datagram of
    // any size the parameters accept, reads back (the compact form keeps the
    // low 32 bits of token and sequence).
    if data.len() >= 27 {
        let u = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
        let h = Hdr {
            kind: data[0],
            token: u(1),
            seq: u(9),
            t_ns: u(17),
        };
        let len = u16::from_le_bytes([data[25], data[26]]) as u64;
        let len = UDP_MIN_LEN + len % (UDP_MAX_PAYLOAD - UDP_MIN_LEN + 1);
        let mut dgram = vec![0u8; len as usize];
        h.write(&mut dgram);
        let back = Hdr::read(&dgram).expect("a written header reads");
        if len >= UDP_HEADER_LEN {
            assert_eq!(back, h);
        } else {
            assert_eq!(
                back,
                Hdr {
                    token: h.token & 0xffff_ffff,
                    seq: h.seq & 0xffff_ffff,
                    ..h
                }
            );
        }
        assert!(back.is(h.kind, h.token));
    }
});
