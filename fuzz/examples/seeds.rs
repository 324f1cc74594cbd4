//! Writes the seed corpora, fuzz/corpus/<target>/, from the repository:
//! the plans in plans/, the permalink fixtures in wasm/tests/fixtures, and
//! the messages, frames, lines and datagrams the unit tests use, made with
//! the real encoders. Run from the repository root (scripts/fuzz.sh seeds):
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example seeds
//!
//! Each file is named by a hash of its bytes, as libFuzzer names what it
//! adds, so regenerating over an existing corpus only adds.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use meshperf_agent::engine::udp::{Hdr, DATA, END, HELLO, REPLY, REQUEST};
use meshperf_protocol::frame::{self, FrameHeader, SampleKind};
use meshperf_protocol::msg::{AgentInfo, ErrorCode, Event, PeerAddr, Request, Role};
use meshperf_protocol::params::{Kind, Limits};
use meshperf_protocol::peer::{
    key_hex, PeerDone, PeerHello, PeerReply, UdpBound, UdpRrRequesterLine, UdpRrResponderLine,
    UdpRrServerCounts, UdpSetup, UdpStreamReceiverLine, UdpStreamSenderLine,
};
use meshperf_protocol::plan::Plan;
use meshperf_protocol::summary::{UdpStreamFigures, UdpStreamReceive, UdpStreamSend};
use serde_json::{json, Value};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;

fn put(target: &str, bytes: &[u8]) {
    let dir = Path::new("fuzz/corpus").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    std::fs::write(dir.join(format!("seed-{:016x}", h.finish())), bytes).unwrap();
}

fn plans() -> Vec<(String, Plan)> {
    let mut out: Vec<(String, Plan)> = std::fs::read_dir("plans")
        .expect("run from the repository root")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (text.clone(), Plan::from_json(&text).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn control() {
    let t = "control";
    let msg = |v: &dyn erased::Ser| put(t, v.json().as_bytes());
    msg(&Request::Auth {
        id: 1,
        token: "3f9c0a4e1b2d4c5f8a7b6c5d4e3f2a1b".into(),
    });
    msg(&Request::Ping { id: 2 });
    msg(&Request::Cancel { id: 3, test_id: 9 });
    for (i, (_, plan)) in plans().into_iter().enumerate() {
        let steps = plan.expand().unwrap();
        let step = &steps[steps.len() / 2];
        let params = Value::Object(step.params.clone());
        msg(&Request::Prepare {
            id: 10 + i as u64,
            test_id: 100 + i as u32,
            step: 0,
            kind: step.kind,
            params: params.clone(),
            queue: None,
            exclusive: None,
        });
        msg(&Request::Start {
            id: 20 + i as u64,
            test_id: 100 + i as u32,
            step: 0,
            kind: step.kind,
            params: params.clone(),
            peer: PeerAddr {
                host: "127.0.0.1".into(),
                port: 40355,
                key: "ab".repeat(16),
            },
            queue: None,
            exclusive: None,
        });
        put(t, params.to_string().as_bytes());
    }
    msg(&Event::Hello { protocol: 1 });
    msg(&Event::AuthOk {
        id: 1,
        info: Box::new(AgentInfo {
            protocol: 1,
            version: "0.1.0".into(),
            hostname: "node1".into(),
            addresses: vec!["127.0.0.1".into(), "::1".into()],
            cores: 2,
            kernel: "6.1.0".into(),
            capabilities: Kind::ALL.to_vec(),
            limits: Limits {
                max_udp_bits_per_second: Some(1e8),
                ..Limits::default()
            },
            instance: "5f0c2a9e1b7d4c38".into(),
        }),
    });
    msg(&Event::Prepared {
        id: 10,
        test_id: 100,
        port: 40355,
        key: "ab".repeat(16),
    });
    msg(&Event::Progress {
        test_id: 100,
        step: 0,
        role: Role::Server,
        elapsed_s: 0.25,
        bytes: 1 << 30,
        fraction: 0.5,
    });
    msg(&Event::Result {
        test_id: 100,
        step: 0,
        role: Role::Client,
        kind: Kind::UdpStream,
        summary: serde_json::to_value(UdpStreamFigures::default()).unwrap(),
    });
    msg(&Event::error(
        Some(2),
        ErrorCode::BadParams,
        "msg_bytes: too big",
    ));
}

fn frames() {
    let h = FrameHeader {
        kind: SampleKind::RttNs,
        role: Role::Server,
        stream: 3,
        test_id: 7,
        step: 2,
        first_seq: 100,
        count: 3,
    };
    let mut out = Vec::new();
    frame::encode(&h, &[1, u64::MAX, 42], &mut out);
    put("frame", &out);
    let h = FrameHeader {
        kind: SampleKind::IntervalBytes,
        role: Role::Client,
        count: 1,
        ..h
    };
    frame::encode(&h, &[5], &mut out);
    put("frame", &out);
    // What the target found (driver/tests.rs
    // a_frame_far_past_its_series_is_refused_not_allocated): a frame far
    // past its series, after one at its start.
    let mut two = out.clone();
    frame::encode(
        &FrameHeader {
            first_seq: u32::MAX - 1,
            ..h
        },
        &[9],
        &mut out,
    );
    two.extend(&out);
    put("frame", &two);
}

fn plan_files() {
    for (text, _) in plans() {
        put("plan", text.as_bytes());
    }
    // The forms plan.rs documents: pow2 with per_octave, a paired axis.
    put(
        "plan",
        br#"{"kind": "tcp_rr", "params": {"count": 100}, "sweep": {"req_bytes": {"pow2": [1, 65536], "per_octave": 4}, "transport": ["unix", "tcp", "tcp_local"]}, "repeat": 2}"#,
    );
    put(
        "plan",
        br#"{"kind": "tcp_stream", "sweep": {"client_bind+server_bind": [["10.1.0.1", "10.1.0.2"], ["10.9.0.1", "10.9.0.2"]]}, "histogram": {"bin_us": 2.5}}"#,
    );
    // What the target found (plan.rs refuses_axes_with_extreme_or_empty_bounds).
    for axis in [
        r#"{"from": -1e308, "to": 1e308, "step": 1e-300}"#,
        r#"{"pow2": [1e308, 1.7976931348623157e308]}"#,
        r#"{"pow2": [1.6, 1.6]}"#,
    ] {
        put(
            "plan",
            format!(r#"{{"kind": "tcp_rr", "sweep": {{"req_bytes": {axis}}}}}"#).as_bytes(),
        );
    }
}

fn permalinks() {
    for f in ["permalink-v1.txt", "permalink-v2.txt"] {
        let text = std::fs::read_to_string(Path::new("protocol/tests/fixtures").join(f)).unwrap();
        // The fixtures are wrapped; a link is one line.
        let text: String = text.split_whitespace().collect();
        put("permalink", text.as_bytes());
        put(
            "permalink",
            format!("http://127.0.0.1:7800/#r={text}").as_bytes(),
        );
        // permalink_body: the link format byte, then the inflated body.
        let bytes = URL_SAFE_NO_PAD
            .decode(text.strip_prefix("mp").unwrap())
            .unwrap();
        let body = miniz_oxide::inflate::decompress_to_vec_zlib(&bytes[1..]).unwrap();
        let mut seed = vec![bytes[0] - 1];
        seed.extend(body);
        put("permalink_body", &seed);
    }
}

fn http_heads() {
    let t = "http_head";
    for head in [
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:7800\r\nAccept-Encoding: gzip, br\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: node1.example.net\r\n\r\n",
        "HEAD /index.html?x=1 HTTP/1.0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: [::1]:7800\r\nContent-Length: 0\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:7800\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Origin: http://127.0.0.1:7800\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: localhost:7800\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Origin: http://127.0.0.1:7801\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: evil.example:7800\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Origin: http://evil.example:7800\r\n\r\n",
        "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:7800\r\n",
    ] {
        put(t, head.as_bytes());
    }
}

/// A hello tagged with the seeds' session key, as a driving agent sends it.
fn signed_hello(kind: Kind) -> PeerHello {
    let mut h = PeerHello {
        kind,
        mac: String::new(),
    };
    h.mac = meshperf_agent::engine::peer::tag(b"0123456789abcdef", &h.signed());
    h
}

fn peer_lines() {
    let key = key_hex(b"0123456789abcdef");
    let send = UdpStreamSend {
        sent: 10,
        send_seconds: 0.5,
        sender_nice: Some(-20),
        to: "::1".into(),
        ..Default::default()
    };
    let lines: Vec<String> = vec![
        json!(signed_hello(Kind::UdpRr)).to_string(),
        json!(signed_hello(Kind::TcpStream)).to_string(),
        json!({"key": key, "kind": "udp_rr", "params": {"count": 5}}).to_string(),
        json!(PeerReply {
            ok: true,
            code: None,
            message: None,
            mac: String::new(),
        })
        .to_string(),
        json!(PeerReply {
            ok: false,
            code: Some(ErrorCode::BadKey),
            message: Some("unknown or spent session key".into()),
            mac: String::new(),
        })
        .to_string(),
        json!(UdpSetup::new(5201, 0x0123_4567_89ab_cdef)).to_string(),
        json!(UdpBound {
            bound: "[::1]:4000".parse().unwrap()
        })
        .to_string(),
        json!(UdpStreamSenderLine::Zero).to_string(),
        json!(UdpStreamReceiverLine::Zeroed).to_string(),
        json!(UdpStreamSenderLine::Stats { send }).to_string(),
        json!(UdpStreamReceiverLine::Stats {
            summary: UdpStreamFigures::default(),
            receive: UdpStreamReceive::default(),
        })
        .to_string(),
        json!(UdpRrRequesterLine::Done { sent: 7 }).to_string(),
        json!(UdpRrResponderLine::Done {
            server: UdpRrServerCounts {
                received: 7,
                replied: 7,
                bad: 0,
                foreign: 1
            }
        })
        .to_string(),
        json!(PeerDone {
            done: true,
            bytes: 1 << 30
        })
        .to_string(),
    ];
    for (i, line) in lines.iter().enumerate() {
        // Byte 0: piece size; byte 1: repeats (see the target).
        put(
            "peer_lines",
            format!("{}\x00{line}\n", char::from(i as u8 * 7)).as_bytes(),
        );
    }
    put(
        "peer_lines",
        format!("\x03\x00{}\n", lines.join("\n")).as_bytes(),
    );
}

fn udp_headers() {
    for (kind, len) in [
        (HELLO, 28),
        (REQUEST, 64),
        (REPLY, 1472),
        (DATA, 18),
        (DATA, 27),
        (END, 28),
    ] {
        let mut d = vec![0u8; len];
        Hdr {
            kind,
            token: 0x0123_4567_89ab_cdef,
            seq: 41,
            t_ns: 1_000_000,
        }
        .write(&mut d);
        put("udp_header", &d);
    }
}

/// Serialising any message as JSON text, whatever its type.
mod erased {
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}

fn main() {
    control();
    frames();
    plan_files();
    permalinks();
    http_heads();
    peer_lines();
    udp_headers();
}
