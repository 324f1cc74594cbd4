//! The operator's limits bind the serving side while a test runs, whatever
//! the peer does (issue 10, finding 3): a serving side ends at its agent's
//! `--max-duration` and at the count it prepared, says so, and the agent
//! serves the next test. The peers here are a real agent with looser limits
//! and a hand-written one holding the real session key.

use crate::util::{logged, peer_hello, run_pair, AgentProc};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Agent A (`--max-duration 1`) serves tests that agent B, under the
/// default 60 s, drives for far longer (count-bounded and unpaced, so
/// neither agent can refuse them before traffic). Each of A's sides stops
/// about 1 s after B connected (plus the 2 s grace), with `duration_limit`
/// and a line on A's record, and A serves the next one.
#[test]
fn every_serving_side_ends_at_the_duration_limit_whatever_the_peer_does() {
    let a = AgentProc::start_logged(&["--max-duration", "1"]);
    let b = AgentProc::start(&[]);
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let cases = [
        ("tcp_rr", json!({"count": 10_000_000})),
        (
            "tcp_stream",
            json!({"count": 500_000, "msg_bytes": 131072, "direction": "send"}),
        ),
        (
            "tcp_stream",
            json!({"count": 500_000, "msg_bytes": 131072, "direction": "receive"}),
        ),
        ("udp_rr", json!({"count": 10_000_000})),
        (
            "udp_stream",
            json!({"count": 10_000_000, "pkt_bytes": 1400, "wait_us": 0}),
        ),
    ];
    for (i, (kind, params)) in cases.iter().enumerate() {
        let id = 700 + i as u32;
        let t0 = Instant::now();
        let (client, server) = run_pair(&mut cb, &mut ca, id, kind, params.clone());
        let took = t0.elapsed();
        assert_eq!(server["type"], "error", "{kind} {params}: {server}");
        assert_eq!(
            server["code"], "duration_limit",
            "{kind} {params}: {server}"
        );
        let msg = server["message"].as_str().unwrap();
        assert!(
            msg.contains("duration limit, 1 s after the peer connected"),
            "{msg}"
        );
        // B's side cannot end well either: its peer stopped mid-test (a
        // udp_rr requester keeps what it measured, marked incomplete).
        let incomplete = client["type"] == "error"
            || (client["type"] == "result" && client["summary"]["complete"] == false);
        assert!(incomplete, "{kind} {params}: {client}");
        assert!(
            took > Duration::from_millis(2900) && took < Duration::from_secs(8),
            "{kind} {params}: ended after {took:?}"
        );
        logged(
            &a,
            &[
                &format!("test {id} "),
                "stopped at the duration limit (1 s)",
            ],
        );
    }
    // A is free at once: a short test it can finish in time runs.
    let (client, server) = run_pair(&mut cb, &mut ca, 799, "tcp_rr", json!({"count": 100}));
    assert_eq!(client["type"], "result", "{client}");
    assert_eq!(server["summary"]["count"], 100, "{server}");
    assert_eq!(server["summary"]["beyond_count"], 0, "{server}");
}

/// A hand-written driving peer holding the real key of a tcp_rr prepared
/// with count 100 asks 150 times: the responder answers exactly 100,
/// answers nothing more, closes, and reports `beyond_count` (it answered
/// until the client closed before).
#[test]
fn a_tcp_rr_responder_answers_no_more_than_its_prepared_count() {
    let a = AgentProc::start(&[]);
    let mut ca = a.connect();
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 71, "step": 0, "kind": "tcp_rr",
        "params": {"count": 100, "req_bytes": 64, "resp_bytes": 64}}),
    );
    assert_eq!(prep["type"], "prepared", "{prep}");
    let port = prep["port"].as_u64().unwrap() as u16;
    let key_hex = prep["key"].as_str().unwrap();
    let line = TcpStream::connect(("127.0.0.1", port)).unwrap();
    line.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = BufReader::new(line.try_clone().unwrap());
    let mut w = line;
    writeln!(w, "{}", peer_hello(key_hex, "tcp_rr")).unwrap();
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&l).unwrap()["ok"],
        true,
        "{l}"
    );
    let mut data = TcpStream::connect(("127.0.0.1", port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.write_all(&crate::util::data_preamble(key_hex, 0))
        .unwrap();
    let mut resp = [0u8; 64];
    let mut answered = 0;
    for seq in 0..150u64 {
        let mut req = [0u8; 64];
        req[..8].copy_from_slice(&seq.to_le_bytes());
        if data.write_all(&req).is_err() {
            break;
        }
        match data.read_exact(&mut resp) {
            Ok(()) => {
                assert_eq!(
                    &resp[..8],
                    &seq.to_le_bytes(),
                    "answer {seq} echoes its request"
                );
                answered += 1;
            }
            Err(_) => break, // closed: no answer past the count
        }
    }
    assert_eq!(answered, 100, "answers past the prepared count");
    let end = ca.wait_end(71);
    assert_eq!(end["type"], "result", "{end}");
    assert_eq!(end["summary"]["count"], 100, "{end}");
    assert_eq!(end["summary"]["beyond_count"], 1, "{end}");
    assert!(
        end["summary"]["line"]
            .as_str()
            .unwrap()
            .contains("past the prepared count"),
        "{end}"
    );
}
