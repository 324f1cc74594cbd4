//! Control messages: the JSON text frames a controller sends an agent
//! (`msg::Request`, with each kind's `params` as the agent parses them)
//! and those an agent sends a controller (`msg::Event`, read by
//! `meshperf run`). Whatever decodes encodes to text that decodes to the same
//! message, and parameters an agent accepts are within its limits: a paced
//! test's count fits the agent's time, and its time holds at least
//! `MIN_PACED_MESSAGES` messages (a UDP one at most the count and byte limits).
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_protocol::msg::{Event, Request};
use meshperf_protocol::params::{
    CrrParams, Kind, Limits, LulParams, PathParams, RrParams, StampParams, StreamParams,
    UdpRrParams, UdpStreamParams,
    MIN_PACED_MESSAGES, UDP_MAX_PAYLOAD, UDP_MIN_LEN,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Debug;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: &T) {
    let text = serde_json::to_string(v).expect("a message is JSON");
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(&back, v, "decode(encode(message)) differs: {text}");
}

fn udp_size(n: u64) -> bool {
    (UDP_MIN_LEN..=UDP_MAX_PAYLOAD).contains(&n)
}

/// Parses `params` as the agent does for `kind` (`engine::prepare` and
/// `start` run these parsers first) and checks what it accepted.
fn check_params(kind: Kind, params: &Value, l: &Limits) {
    let accepted = kind.check_params(params, l).is_ok();
    let within_time = |d: Option<f64>| d.is_none_or(|d| d > 0.0 && d <= l.max_duration_s);
    let typed = match kind {
        Kind::TcpStream | Kind::UnixStream => StreamParams::parse(params, l).map(|p| {
            assert!(p.streams >= 1 && p.streams <= l.max_streams, "{p:?}");
            assert!(p.msg_bytes <= l.max_msg_bytes, "{p:?}");
            assert!(p.count.is_some() != p.duration_s.is_some(), "{p:?}");
            assert!(within_time(p.duration_s), "{p:?}");
            // A rate's writes: a count within the agent's time, a time
            // that holds at least 2 writes per stream.
            let w = p.write_wait_us();
            assert!(w >= p.wait_us as f64, "{p:?}");
            match (p.count, p.duration_s) {
                (Some(c), None) => {
                    assert!(
                        c as f64 * w / 1e6 <= l.max_duration_s * (1.0 + 1e-9),
                        "{p:?}"
                    )
                }
                (None, Some(d)) => assert!(
                    w * MIN_PACED_MESSAGES as f64 / 1e6 <= d * (1.0 + 1e-9),
                    "{p:?}"
                ),
                _ => unreachable!(),
            }
            if let Some(b) = p.bytes_per_stream() {
                assert!(
                    b as u128 * p.streams as u128 <= l.max_bytes as u128,
                    "{p:?}"
                );
            }
            let _ = p.rcvlowat();
        }),
        Kind::TcpRr | Kind::UnixRr => RrParams::parse(params, l).map(|p| {
            assert!(
                p.req_bytes <= l.max_msg_bytes && p.resp_bytes <= l.max_msg_bytes,
                "{p:?}"
            );
            assert!(within_time(p.duration_s), "{p:?}");
        }),
        Kind::TcpCrr => CrrParams::parse(params, l).map(|p| {
            assert!(
                p.req_bytes <= l.max_msg_bytes && p.resp_bytes <= l.max_msg_bytes,
                "{p:?}"
            );
            assert!(p.count.map_or(true, |c| c <= l.max_count), "{p:?}");
            assert!(within_time(p.duration_s), "{p:?}");
        }),
        Kind::UdpRr => UdpRrParams::parse(params, l).map(|p| {
            assert!(udp_size(p.req_bytes) && udp_size(p.resp_bytes), "{p:?}");
            assert!(p.count <= l.max_count, "{p:?}");
            assert!(within_time(p.duration_s), "{p:?}");
        }),
        Kind::UdpStream => UdpStreamParams::parse(params, l).map(|p| {
            assert!(udp_size(p.pkt_bytes), "{p:?}");
            assert!(p.count <= l.max_count, "{p:?}");
            assert!(
                p.count as u128 * p.pkt_bytes as u128 <= l.max_bytes as u128,
                "{p:?}"
            );
            assert!(p.wait_us >= 0.0 && within_time(p.duration_s), "{p:?}");
            let secs = |n: u64| n as f64 * p.wait_us / 1e6;
            match p.duration_s {
                // A count fits the agent's time.
                None => assert!(secs(p.count) <= l.max_duration_s * (1.0 + 1e-9), "{p:?}"),
                // Paced for a time: at least 2 datagrams, the last one
                // inside the time, and enough to fill it unless the agent's
                // count or byte limit stops it first.
                Some(d) if p.wait_us > 0.0 => {
                    let cap = l.max_count.min((l.max_bytes / p.pkt_bytes).max(1));
                    assert!(p.count >= MIN_PACED_MESSAGES, "{p:?}");
                    assert!(secs(p.count - 1) < d * (1.0 + 1e-9), "{p:?}");
                    assert!(secs(p.count) >= d * (1.0 - 1e-9) || p.count == cap, "{p:?}");
                }
                Some(_) => {}
            }
        }),
        Kind::LatencyUnderLoad => LulParams::parse(params, l).map(|p| {
            let phases = [p.idle_s, p.download_s, p.upload_s, p.both_s];
            assert!(
                phases
                    .iter()
                    .all(|&d| (0.0..=l.max_duration_s).contains(&d)),
                "{p:?}"
            );
            assert!(
                p.gap_s >= 0.0 && (1.0..=1000.0).contains(&p.probe_ms),
                "{p:?}"
            );
            assert!(p.streams <= l.max_streams, "{p:?}");
        }),
        Kind::Stamp => StampParams::parse(params, l).map(|p| {
            assert!(p.count.is_some() != p.duration_s.is_some(), "{p:?}");
            assert!(p.count.is_none_or(|c| c <= l.max_count), "{p:?}");
            assert!(within_time(p.duration_s), "{p:?}");
            // A base packet (44 bytes, 112 authenticated) up to 9000.
            let base = if p.auth { 112 } else { 44 };
            assert!((base..=9000).contains(&p.pkt_bytes), "{p:?}");
            assert!(!(p.cos && p.auth), "{p:?}");
            assert!(!p.host.is_empty(), "{p:?}");
            if let Some(c) = p.count {
                assert!(
                    c as u128 * p.pkt_bytes as u128 * 2 <= l.max_bytes as u128,
                    "{p:?}"
                );
            }
        }),
        Kind::Path => PathParams::parse(params, l).map(|p| {
            assert!((1..=64).contains(&p.first_ttl) && p.first_ttl <= p.max_hops, "{p:?}");
            assert!(p.max_hops <= 64 && p.dscp.iter().all(|&d| d <= 63), "{p:?}");
            assert!(2 * p.datagrams_each_way() <= l.max_count, "{p:?}");
        }),
    };
    assert_eq!(typed.is_ok(), accepted);
}

fuzz_target!(|data: &[u8]| {
    // WebSocket text frames are UTF-8 (tungstenite checks before the agent reads).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = [
        Limits::default(),
        Limits {
            max_msg_bytes: 1 << 16,
            max_duration_s: 10.0,
            max_bytes: 1 << 30,
            max_streams: 4,
            max_count: 1000,
            max_flows: 8,
            max_udp_bits_per_second: Some(1e8),
            max_tests: 2,
            max_queue: 1,
        },
    ];
    if let Ok(req) = serde_json::from_str::<Request>(text) {
        round_trip(&req);
        if let Request::Prepare { kind, params, .. } | Request::Start { kind, params, .. } = &req {
            limits.iter().for_each(|l| check_params(*kind, params, l));
        }
    } else if let Ok(v) = serde_json::from_str::<Value>(text) {
        // Parameters alone (the fuzzer need not make a whole request).
        for kind in Kind::ALL {
            limits.iter().for_each(|l| check_params(kind, &v, l));
        }
    }
    if let Ok(ev) = serde_json::from_str::<Event>(text) {
        round_trip(&ev);
    }
});
