//! Integration tests: real agent processes, real sockets.

use crate::util::{logged, open, run_pair, AgentProc, Ctl};
use meshperf_protocol::frame::SampleKind;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn interval_sum(c: &Ctl, test_id: u32) -> u64 {
    c.samples(SampleKind::IntervalBytes)
        .iter()
        .filter(|f| f.header.test_id == test_id)
        .flat_map(|f| f.values.iter())
        .sum()
}

#[test]
fn tcp_stream_moves_exact_bytes_between_two_agents() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    assert_eq!(ca.hello["protocol"], 1);
    assert!(ca.hello["capabilities"]
        .as_array()
        .unwrap()
        .contains(&json!("tcp_stream")));
    let (client, server) = run_pair(
        &mut cb,
        &mut ca,
        11,
        "tcp_stream",
        json!({"msg_bytes": 1048576, "count": 64}),
    );
    for end in [&client, &server] {
        assert_eq!(end["type"], "result", "{end}");
        assert_eq!(end["summary"]["bytes"], 67108864, "{end}");
        assert_eq!(end["summary"]["peer_bytes"], 67108864, "{end}");
    }
    assert_eq!(client["role"], "client");
    assert_eq!(server["role"], "server");
    let line = client["summary"]["line"].as_str().unwrap();
    assert!(
        line.starts_with("sent 67108864 bytes in ")
            && line.contains(" seconds to 127.0.0.1, ")
            && line.ends_with(" MByte/s"),
        "{line}"
    );
    assert!(server["summary"]["line"]
        .as_str()
        .unwrap()
        .starts_with("received 67108864 bytes in "));
    assert!(server["summary"]["reads"].as_u64().unwrap() > 0);
    // Raw interval samples account for every byte, on both sides.
    assert_eq!(interval_sum(&cb, 11), 67108864);
    assert_eq!(interval_sum(&ca, 11), 67108864);
    // The serving agent stays usable: a second test runs.
    let (c2, s2) = run_pair(
        &mut cb,
        &mut ca,
        12,
        "tcp_stream",
        json!({"msg_bytes": 1000, "count": 3}),
    );
    assert_eq!(c2["summary"]["bytes"], 3000);
    assert_eq!(s2["summary"]["bytes"], 3000);
}

#[test]
fn directions_and_parallel_streams_add_up() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"msg_bytes": 65536, "count": 100, "streams": 3, "direction": "both"});
    let (client, server) = run_pair(&mut cb, &mut ca, 21, "tcp_stream", p);
    for end in [&client, &server] {
        let s = &end["summary"];
        assert_eq!(s["sent_bytes"], 3 * 65536 * 100, "{end}");
        assert_eq!(s["received_bytes"], 3 * 65536 * 100, "{end}");
        let per: u64 = s["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(per, s["bytes"].as_u64().unwrap());
        assert_eq!(s["streams"].as_array().unwrap().len(), 6);
    }
    let (client, server) = run_pair(
        &mut cb,
        &mut ca,
        22,
        "tcp_stream",
        json!({"msg_bytes": 4096, "count": 10, "direction": "receive"}),
    );
    assert_eq!(client["summary"]["received_bytes"], 40960);
    assert_eq!(client["summary"]["sent_bytes"], 0);
    assert_eq!(server["summary"]["sent_bytes"], 40960);
}

#[test]
fn socket_options_are_read_back_from_the_kernel() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"msg_bytes": 8192, "count": 10, "nodelay": true, "tos": 16, "sndbuf": 65536, "rcvbuf": 131072});
    let (client, server) = run_pair(&mut cb, &mut ca, 31, "tcp_stream", p);
    for end in [&client, &server] {
        let s = &end["summary"];
        assert_eq!(s["nodelay"], true, "{end}");
        assert_eq!(s["tos"], 16, "{end}");
        // Linux doubles the requested size for bookkeeping overhead.
        assert_eq!(s["sndbuf_actual"], 131072, "{end}");
        assert_eq!(s["rcvbuf_actual"], 262144, "{end}");
        // Unpaced bulk: the receiver is woken once per full read buffer.
        assert_eq!(s["rcvlowat"], 8192, "{end}");
        // Loopback's 64 KiB MTU gives a segment size far above Ethernet's.
        assert!(s["mss"].as_u64().unwrap() > 16000, "{end}");
        assert!(s.get("mss_requested").is_none_or(|m| m.is_null()), "{end}");
    }
    // TCP_MAXSEG asked for: the connection segments at it (less the 12
    // bytes of the timestamp option), both ends, bulk and request/response.
    for (id, kind, p) in [
        (
            35,
            "tcp_stream",
            json!({"msg_bytes": 100000, "count": 10, "mss": 1000}),
        ),
        (
            36,
            "tcp_rr",
            json!({"req_bytes": 3000, "resp_bytes": 3000, "count": 10, "mss": 536}),
        ),
    ] {
        let (client, server) = run_pair(&mut cb, &mut ca, id, kind, p.clone());
        let want = p["mss"].as_u64().unwrap();
        for end in [&client, &server] {
            let s = &end["summary"];
            assert_eq!(s["mss_requested"], want, "{end}");
            let mss = s["mss"].as_u64().unwrap();
            assert!(mss <= want && mss + 40 >= want, "{kind}: {end}");
        }
    }
    let r = ca.request(json!({"type": "prepare", "test_id": 37, "step": 0, "kind": "tcp_stream", "params": {"mss": 40}}));
    assert_eq!(r["code"], "bad_params", "{r}");
    assert!(r["message"].as_str().unwrap().starts_with("mss"), "{r}");
    // Paced, explicit, and a transfer whose tail is shorter than the low
    // water mark (it must still arrive whole, at EOF, not at a timeout).
    for (id, p, lowat) in [
        (
            32,
            json!({"msg_bytes": 1000, "count": 20, "wait_us": 100}),
            1,
        ),
        (
            33,
            json!({"msg_bytes": 4096, "count": 10, "rcvlowat": 2000}),
            2000,
        ),
        (
            34,
            json!({"msg_bytes": 100000, "read_bytes": 1 << 20, "count": 3}),
            131072,
        ),
    ] {
        let t0 = std::time::Instant::now();
        let (client, server) = run_pair(&mut cb, &mut ca, id, "tcp_stream", p.clone());
        assert!(t0.elapsed().as_secs_f64() < 2.0, "{p}: {:?}", t0.elapsed());
        let total = p["msg_bytes"].as_u64().unwrap() * p["count"].as_u64().unwrap();
        for end in [&client, &server] {
            assert_eq!(end["summary"]["rcvlowat"], lowat, "{p}: {end}");
            assert_eq!(end["summary"]["bytes"], total, "{p}: {end}");
        }
    }
}

#[test]
fn wrong_token_is_refused_and_the_socket_closed() {
    let a = AgentProc::start(&[]);
    let err = Ctl::connect(a.port, "not-the-token", None)
        .err()
        .expect("refused");
    assert_eq!(err["code"], "auth_failed");
    // Requests before auth are refused too.
    let mut ws = open(a.port, None).unwrap();
    let _hello = ws.read().unwrap();
    ws.send(tungstenite::Message::text(r#"{"type":"ping","id":1}"#))
        .unwrap();
    let m = ws.read().unwrap();
    assert!(m.to_text().unwrap().contains("auth_required"), "{m}");
    // The agent still serves a correct client.
    a.connect();
}

#[test]
fn foreign_origins_are_refused_and_allowed_ones_accepted() {
    let a = AgentProc::start(&["--allow-origin", "http://localhost:5173"]);
    let err = open(a.port, Some("http://evil.example")).expect_err("refused");
    match err {
        tungstenite::Error::Http(r) => assert_eq!(r.status(), 403),
        e => panic!("expected 403, got {e}"),
    }
    Ctl::connect(a.port, &a.token, Some("http://localhost:5173")).expect("allowed origin");
    Ctl::connect(
        a.port,
        &a.token,
        Some(&format!("http://127.0.0.1:{}", a.port)),
    )
    .expect("own origin");
}

/// Issue 45 item 5: a page whose origin is refused is on the agent's record,
/// its origin escaped, at most one line a second however many knock.
#[test]
fn a_refused_origin_is_logged_escaped_and_at_most_once_a_second() {
    let a = AgentProc::start_logged(&[]);
    let t0 = Instant::now();
    match open(a.port, Some("http://127.0.0.1:18001")).expect_err("refused") {
        tungstenite::Error::Http(r) => assert_eq!(r.status(), 403),
        e => panic!("expected 403, got {e}"),
    }
    let line = logged(&a, &["origin \"http://127.0.0.1:18001\"", "--allow-origin"]);
    assert!(line.contains("refused 1 connection"), "{line}");
    // A stranger's origin with a right-to-left override and a byte that is no
    // UTF-8, sent raw (a header type would refuse them), 40 times at once.
    for _ in 0..40 {
        let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
        let mut req = format!(
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://evil\u{202e}.example",
            a.port
        )
        .into_bytes();
        req.extend_from_slice(b"\xff\r\n\r\n");
        s.write_all(&req).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 403", "{}", String::from_utf8_lossy(&head));
    }
    let line = logged(&a, &["evil\\u{202e}.example\u{fffd}"]);
    assert!(!line.contains('\u{202e}'), "{line}");
    let elapsed = t0.elapsed().as_secs_f64();
    let lines = a
        .log()
        .iter()
        .filter(|l| l.contains("not allowed; start the agent with --allow-origin"))
        .count();
    assert!(
        lines as f64 <= elapsed.ceil() + 1.0,
        "{lines} lines about refused origins in {elapsed:.1} s:\n{}",
        a.log().join("\n")
    );
    // The agent still serves a page it allows.
    a.connect();
}

#[test]
fn bad_parameters_are_refused_before_any_traffic() {
    let a = AgentProc::start(&[]);
    let mut c = a.connect();
    let cases = [
        (
            json!({"msg_bytes": 0}),
            "msg_bytes",
            "between 1 and 67108864",
        ),
        (json!({"msg_bytes": "abc"}), "msg_bytes", "whole number"),
        (json!({"msg_bytes": 1u64 << 30}), "msg_bytes", "67108864"),
        (json!({"streams": 0}), "streams", "between"),
        (json!({"wait_us": -5}), "wait_us", "negative"),
        (json!({"duration_s": 3600}), "duration_s", "limit"),
        (json!({"payload": "gzip"}), "payload", "random or zeros"),
    ];
    for (i, (params, name, text)) in cases.into_iter().enumerate() {
        let r = c.request(json!({"type": "prepare", "test_id": 100 + i, "step": 0, "kind": "tcp_stream", "params": params}));
        assert_eq!(r["code"], "bad_params", "{r}");
        let msg = r["message"].as_str().unwrap();
        assert!(msg.starts_with(name) && msg.contains(text), "{msg}");
    }
    let r = c.request(json!({"type": "launch", "test_id": 1}));
    assert_eq!(r["code"], "bad_request");
    let r = c.request(json!({"type": "ping"}));
    assert_eq!(r["type"], "pong");
}

#[test]
fn http_serves_the_app_and_nothing_else() {
    let a = AgentProc::start(&[]);
    let get = |path: &str| {
        let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let index = get("/");
    assert!(
        index.starts_with("HTTP/1.1 200") && index.contains("text/html"),
        "{index}"
    );
    assert!(get("/../../etc/passwd").starts_with("HTTP/1.1 404"));
    assert!(get("/nope.js").starts_with("HTTP/1.1 404"));
    let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    s.write_all(b"\x16\x03\x01garbage\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    a.connect(); // still serving
}

#[test]
fn healthz_answers_ok_without_a_token_and_says_nothing_else() {
    // As a kubelet probes: Host is the pod's address and port, no token.
    let a = AgentProc::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let host = format!("10.1.2.3:{}", a.port);
    write!(s, "GET /healthz HTTP/1.1\r\nHost: {host}\r\nUser-Agent: kube-probe/1.32\r\nAccept: */*\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200 "), "{out}");
    assert_eq!(body, "ok\n", "the body reveals nothing: {out}");
    for secret in [a.token.as_str(), "meshperf", "0.1"] {
        assert!(!out.contains(secret), "{secret:?} in {out}");
    }
}

#[test]
fn port_in_use_is_one_clear_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args(["agent", "--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&port.to_string()) && err.contains("--listen"),
        "{err}"
    );
}

#[test]
fn peer_gone_mid_test_is_reported_and_the_other_agent_stays_usable() {
    let (a, mut b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    // A serves and receives; B drives and sends for 20 s, then B dies.
    let prep = ca.request(json!({"type": "prepare", "test_id": 41, "step": 0, "kind": "tcp_stream", "params": {"duration_s": 20}}));
    let start = cb.request(json!({"type": "start", "test_id": 41, "step": 0, "kind": "tcp_stream", "params": {"duration_s": 20},
        "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}));
    assert_eq!(start["type"], "started");
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    b.child.kill().unwrap();
    let end = ca.wait_end(41);
    assert_eq!(end["type"], "error", "{end}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(end["message"].as_str().unwrap().contains("peer"), "{end}");
    // A runs the next test with a new peer.
    let c = AgentProc::start(&[]);
    let mut cc = c.connect();
    let (cl, sv) = run_pair(
        &mut cc,
        &mut ca,
        42,
        "tcp_stream",
        json!({"msg_bytes": 1024, "count": 5}),
    );
    assert_eq!(cl["summary"]["bytes"], 5120);
    assert_eq!(sv["summary"]["bytes"], 5120);
}

#[test]
fn a_closed_controller_cancels_its_test_and_a_wrong_key_is_refused() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let mut ca = a.connect();
    let prep = ca.request(json!({"type": "prepare", "test_id": 51, "step": 0, "kind": "tcp_stream", "params": {"count": 2}}));
    // A driver with a wrong key is refused by the serving agent.
    let mut cb = b.connect();
    let bad = cb.request(json!({"type": "start", "test_id": 51, "step": 0, "kind": "tcp_stream", "params": {"count": 2},
        "peer": {"host": "127.0.0.1", "port": prep["port"], "key": "00".repeat(16)}}));
    assert_eq!(bad["type"], "started");
    let end = cb.wait_end(51);
    assert_eq!(end["code"], "peer_refused", "{end}");
    // The controller of a long test goes away: the test stops, the agent is free again.
    let mut ca2 = a.connect();
    // (A tcp_stream runs alone: one that may not wait is refused busy.)
    let prep = ca2.request(json!({"type": "prepare", "test_id": 52, "step": 0, "kind": "tcp_stream", "params": {"duration_s": 30}, "queue": false}));
    assert_eq!(prep["type"], "error", "a tcp_stream runs alone: {prep}");
    assert_eq!(prep["code"], "busy");
    drop(ca);
    let t0 = Instant::now();
    loop {
        let r = ca2.request(json!({"type": "prepare", "test_id": 53, "step": 0, "kind": "tcp_stream", "params": {"count": 1}}));
        if r["type"] == "prepared" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "agent never freed: {r}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A stranger on a prepared test's data port (issue 10, finding 2): it
/// connects, sends `{` and then one more byte every 1.5 s, never a whole
/// line, until dropped or until the agent closes on it.
struct Dripper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Dripper {
    fn start(port: u64) -> Dripper {
        use std::sync::atomic::{AtomicBool, Ordering};
        let mut s = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        s.write_all(b"{").unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now() + Duration::from_millis(1500);
            while !flag.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    next += Duration::from_millis(1500);
                    if s.write_all(b" ").is_err() {
                        return;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Dripper {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Dripper {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.thread.take().map(|t| t.join());
    }
}

#[test]
fn strangers_on_the_data_port_neither_stall_the_peer_nor_delay_cancel() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    // The real peer runs its test while strangers hold the data port: a slow
    // dripper, one that sends nothing, one that sends a line longer than
    // any control line without a newline, one with a wrong key.
    for (id, kind, params) in [
        (91, "tcp_stream", json!({"msg_bytes": 1024, "count": 5})),
        (92, "udp_rr", json!({"count": 5})),
    ] {
        let prep = ca.request(
            json!({"type": "prepare", "test_id": id, "step": 0, "kind": kind, "params": params}),
        );
        assert_eq!(prep["type"], "prepared", "{prep}");
        let port = prep["port"].as_u64().unwrap();
        let _drip = Dripper::start(port);
        let _silent = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        let mut long = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        let _ = long.write_all(&vec![b'{'; 70_000]);
        let mut wrong = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        let hello = json!({"key": "00".repeat(16), "kind": kind});
        wrong.write_all(format!("{hello}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        let start = cb.request(
            json!({"type": "start", "test_id": id, "step": 0, "kind": kind,
            "params": params, "peer": {"host": "127.0.0.1", "port": port, "key": prep["key"]}}),
        );
        assert_eq!(start["type"], "started", "{start}");
        let (end_b, end_a) = (cb.wait_end(id), ca.wait_end(id));
        assert_eq!(end_b["type"], "result", "{kind}: {end_b}");
        assert_eq!(end_a["type"], "result", "{kind}: {end_a}");
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{kind}: the peer waited {:?} behind the strangers",
            t0.elapsed()
        );
        // The wrong key was told so.
        let mut reply = String::new();
        wrong
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let _ = wrong.read_to_string(&mut reply);
        assert!(reply.contains("bad_key"), "{reply:?}");
    }
    // A cancel of a prepared test with a stranger attached takes effect at
    // once: acknowledged, the side ended, the agent free for the next test.
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 93, "step": 0, "kind": "tcp_stream", "params": {"count": 1}}),
    );
    let dripping = Instant::now();
    let _drip = Dripper::start(prep["port"].as_u64().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    let r = ca.request(json!({"type": "cancel", "test_id": 93}));
    assert_eq!(r["type"], "cancelled", "{r}");
    let end = ca.wait_end(93);
    assert_eq!(end["code"], "cancelled", "{end}");
    let next = ca.request(
        json!({"type": "prepare", "test_id": 94, "step": 0, "kind": "tcp_stream", "params": {"count": 1}}),
    );
    assert_eq!(next["type"], "prepared", "{next}");
    // Before the stranger's next byte (1.5 s after its first): a cancel
    // that waited on the stranger's connection would end no sooner (and a
    // prepared side left waiting would hold the agent for its 10 s window).
    assert!(
        dripping.elapsed() < Duration::from_millis(1500),
        "cancel and the next prepare ended {:?} after the stranger's first byte",
        dripping.elapsed()
    );
}

#[test]
fn a_stranger_cannot_stretch_the_accept_window_and_the_error_says_why() {
    let a = AgentProc::start(&[]);
    let mut ca = a.connect();
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 95, "step": 0, "kind": "tcp_stream", "params": {"count": 1}}),
    );
    let t0 = Instant::now();
    let _drip = Dripper::start(prep["port"].as_u64().unwrap());
    let end = ca.wait_end(95);
    let took = t0.elapsed();
    assert_eq!(end["code"], "peer_timeout", "{end}");
    // The 10 s window is a hard bound, whatever the stranger does: it
    // started before `prepared` reached us, and a window the stranger's
    // bytes (one every 1.5 s) stretched would not end while it drips;
    // 3 s over it for the end to reach us on a loaded machine.
    assert!(
        took > Duration::from_secs(9) && took < Duration::from_secs(13),
        "ended after {took:?}"
    );
    let msg = end["message"].as_str().unwrap();
    assert!(
        msg.contains("no peer presented the test's key within 10 s")
            && msg.contains("1 connection from 127.0.0.1"),
        "{msg}"
    );
}

#[test]
fn next_step_is_never_busy_right_after_results() {
    // One agent plays both ends through two sessions; each prepare follows
    // the previous results at once (the page and `meshperf run` do this).
    let a = AgentProc::start(&[]);
    let (mut srv, mut cli) = (a.connect(), a.connect());
    for i in 0..40u32 {
        let (kind, params) = if i % 2 == 0 {
            ("tcp_stream", json!({"msg_bytes": 100, "count": 1}))
        } else {
            ("unix_rr", json!({"count": 20}))
        };
        let (c, s) = run_pair(&mut cli, &mut srv, 600 + i, kind, params);
        assert_eq!(
            (c["type"].as_str(), s["type"].as_str()),
            (Some("result"), Some("result")),
            "step {i}: {c} {s}"
        );
    }
}

#[test]
fn interval_samples_stream_while_the_test_runs() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let (client, server) = run_pair(
        &mut cb,
        &mut ca,
        71,
        "tcp_stream",
        json!({"msg_bytes": 65536, "duration_s": 1.2}),
    );
    assert_eq!(client["type"], "result", "{client}");
    for (ctl, end) in [(&cb, &client), (&ca, &server)] {
        let mut frames: Vec<_> = ctl
            .samples(SampleKind::IntervalBytes)
            .into_iter()
            .filter(|f| f.header.test_id == 71)
            .collect();
        frames.sort_by_key(|f| f.header.first_seq);
        // Sent in batches as intervals complete, not in one frame at the end.
        assert!(frames.len() >= 5, "only {} frames", frames.len());
        let mut next = 0;
        for f in &frames {
            assert_eq!(f.header.first_seq, next, "batches are contiguous");
            next += f.header.count;
        }
        let total: u64 = frames.iter().flat_map(|f| f.values.iter()).sum();
        assert_eq!(total, end["summary"]["bytes"].as_u64().unwrap());
        assert!(next >= 110, "1.2 s of 10 ms intervals, got {next}");
    }
}

#[test]
fn cancel_stops_a_running_transfer_at_once() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let cases = [
        ("tcp_stream", json!({"duration_s": 20, "direction": "send"})),
        (
            "tcp_stream",
            json!({"duration_s": 20, "direction": "receive"}),
        ),
        // A paced UDP sender between two datagrams 5 s apart.
        ("udp_stream", json!({"wait_us": 5_000_000, "count": 4})),
    ];
    for (i, (kind, params)) in cases.into_iter().enumerate() {
        let id = 81 + i as u32;
        let dir = &params;
        let prep = ca.request(
            json!({"type": "prepare", "test_id": id, "step": 0, "kind": kind, "params": params}),
        );
        let start = cb.request(
            json!({"type": "start", "test_id": id, "step": 0, "kind": kind, "params": params,
            "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
        );
        assert_eq!(start["type"], "started");
        std::thread::sleep(Duration::from_millis(500));
        let t0 = Instant::now();
        let r = cb.request(json!({"type": "cancel", "test_id": id}));
        assert_eq!(r["type"], "cancelled", "{r}");
        let (end_b, end_a) = (cb.wait_end(id), ca.wait_end(id));
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{dir}: took {:?}",
            t0.elapsed()
        );
        assert_eq!(end_b["type"], "error", "{end_b}");
        if kind == "udp_stream" {
            // The receiver keeps what it measured and says the burst was cut.
            assert_eq!(end_a["summary"]["complete"], false, "{end_a}");
        } else {
            assert_eq!(end_a["type"], "error", "{end_a}");
        }
    }
}

#[test]
fn the_agent_records_who_connected_and_what_ran_on_stderr() {
    let (a, b) = (AgentProc::start_logged(&[]), AgentProc::start_logged(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let (client, server) = run_pair(
        &mut cb,
        &mut ca,
        21,
        "tcp_stream",
        json!({"msg_bytes": 1000, "count": 3, "payload": "zeros"}),
    );
    assert_eq!(client["summary"]["bytes"], 3000, "{client}");
    assert_eq!(server["summary"]["bytes"], 3000, "{server}");
    // Every line starts with a UTC time stamp.
    let opened = logged(&a, &["session 1 opened from 127.0.0.1:"]);
    assert!(
        opened.len() > 24 && opened.as_bytes()[10] == b'T' && opened[..24].ends_with('Z'),
        "{opened}"
    );
    let started = logged(
        &a,
        &["session 1 test 21 step 0 tcp_stream serving started, listening on port "],
    );
    let port = started.rsplit(' ').next().unwrap();
    logged(
        &b,
        &[
            "test 21 step 0 tcp_stream driving started, to 127.0.0.1:",
            port,
        ],
    );
    logged(
        &a,
        &[
            "test 21 step 0 tcp_stream serving ended after ",
            " s: throughput ",
            " Gbit/s",
        ],
    );
    logged(&b, &["test 21 step 0 tcp_stream driving ended after "]);
    // Refusals and strangers are on the record too.
    let r = ca.request(json!({"type": "prepare", "test_id": 22, "step": 0, "kind": "tcp_rr", "params": {"count": 0}}));
    assert_eq!(r["code"], "bad_params", "{r}");
    logged(&a, &["session 1 test 22 tcp_rr refused: count"]);
    assert!(Ctl::connect(a.port, "not-the-token", None).is_err());
    logged(&a, &["session 2 from 127.0.0.1:", "wrong token, closing"]);
    drop(ca);
    logged(&a, &["session 1 closed"]);
    // --quiet keeps stderr empty.
    let q = AgentProc::start_logged(&["--quiet"]);
    let mut cq = q.connect();
    assert_eq!(cq.request(json!({"type": "ping"}))["type"], "pong");
    drop(cq);
    std::thread::sleep(Duration::from_millis(200));
    assert!(q.log().is_empty(), "{:?}", q.log());
}

#[test]
fn data_ports_keep_every_serving_side_inside_the_range() {
    // Below the kernel's ephemeral range (32768 up), so nothing else is
    // handed these ports while the test runs.
    let lo = 20000 + (std::process::id() % 5000) as u16 * 2;
    let range = format!("{lo}-{}", lo + 1);
    let a = AgentProc::start_logged(&["--data-ports", &range]);
    let b = AgentProc::start(&[]);
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let cases = [
        (
            "tcp_stream",
            json!({"msg_bytes": 1000, "count": 3, "streams": 2}),
        ),
        ("tcp_rr", json!({"count": 10})),
        ("udp_stream", json!({"count": 10, "wait_us": 10})),
        ("udp_rr", json!({"count": 10})),
        ("tcp_stream", json!({"msg_bytes": 1000, "count": 3})),
    ];
    let mut ports = Vec::new();
    for (i, (kind, params)) in cases.into_iter().enumerate() {
        let id = 31 + i as u32;
        let (client, server) = run_pair(&mut cb, &mut ca, id, kind, params);
        assert_eq!(client["type"], "result", "{kind}: {client}");
        assert_eq!(server["type"], "result", "{kind}: {server}");
        let line = logged(
            &a,
            &[&format!(
                "test {id} step 0 {kind} serving started, listening on port "
            )],
        );
        let port: u16 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((lo..=lo + 1).contains(&port), "{line}");
        ports.push(port);
    }
    assert!(
        ports.contains(&lo) && ports.contains(&(lo + 1)),
        "taken in turn: {ports:?}"
    );

    // A range whose only port is taken: refused in one line, agent serving.
    let held = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let p = held.local_addr().unwrap().port();
    let busy = AgentProc::start(&["--data-ports", &p.to_string()]);
    let mut c = busy.connect();
    let r = c.request(
        json!({"type": "prepare", "test_id": 40, "step": 0, "kind": "tcp_rr", "params": {}}),
    );
    assert_eq!(r["code"], "io", "{r}");
    assert_eq!(
        r["message"],
        format!("cannot open a data listener: every data port in {p}-{p} (--data-ports) is in use")
    );
    // UDP kinds need the port free for both TCP and UDP.
    let held_udp = std::net::UdpSocket::bind(("127.0.0.1", 0)).unwrap();
    let q = held_udp.local_addr().unwrap().port();
    let busy_udp = AgentProc::start(&["--data-ports", &q.to_string()]);
    let mut c2 = busy_udp.connect();
    let r = c2.request(
        json!({"type": "prepare", "test_id": 41, "step": 0, "kind": "udp_rr", "params": {}}),
    );
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("(--data-ports) is in use"),
        "{r}"
    );
    assert_eq!(c.request(json!({"type": "ping"}))["type"], "pong");
    assert_eq!(c2.request(json!({"type": "ping"}))["type"], "pong");

    // An impossible range is a usage error before the agent starts.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--data-ports",
            "9000-8000",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the first port must not be above the last"),
        "{err}"
    );
}

#[test]
fn a_test_id_reused_at_once_is_a_new_test_the_old_one_cannot_end() {
    // A controller may prepare the same test id again as soon as the old
    // side's final event arrives; the old side's thread ends a moment later
    // and must not unregister the new side (which could then be neither
    // cancelled nor seen as running: a test in CI waited out a 10 s accept
    // window for it).
    let a = AgentProc::start(&[]);
    let mut c = a.connect();
    for i in 0..60 {
        let kind = ["udp_stream", "tcp_stream", "tcp_rr"][i % 3];
        let r = c.request(
            json!({"type": "prepare", "test_id": 61, "step": i, "kind": kind, "params": {}}),
        );
        assert_eq!(r["type"], "prepared", "round {i}: {r}");
        let r = c.request(json!({"type": "cancel", "test_id": 61}));
        assert_eq!(r["type"], "cancelled", "round {i}: {r}");
        let end = c.wait_end(61);
        assert_eq!(end["code"], "cancelled", "round {i}: {end}");
    }
    // Nothing is left registered: a different test runs at once.
    let r = c.request(
        json!({"type": "prepare", "test_id": 62, "step": 0, "kind": "tcp_rr", "params": {}}),
    );
    assert_eq!(r["type"], "prepared", "{r}");
}

/// The JSON type of every key path of `v`, in order (`.streams.0.bytes: int`).
fn shape(v: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    fn walk(v: &Value, path: String, out: &mut Vec<String>) {
        let t = match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_f64() => "float",
            Value::Number(_) => "int",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        out.push(format!("{path}: {t}"));
        match v {
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| walk(x, format!("{path}.{i}"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| walk(x, format!("{path}.{k}"), out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

/// Reads `end`'s summary into `T` and writes it back: it must come out the
/// same, key for key, in the same order, with the same JSON types. A key
/// an engine writes that `T` lacks (dropped on the way back), a renamed or
/// missing one (refused on the way in) or a changed type fails.
pub(crate) fn strictly<T>(what: &str, end: &serde_json::Value) -> T
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    assert_eq!(end["type"], "result", "{what}: {end}");
    // Every side of every kind adds its `cpu` as it reports (issue 15),
    // typed once for all kinds: checked the same way, then the rest.
    let mut v = end["summary"].clone();
    let cpu = v
        .as_object_mut()
        .and_then(|o| o.shift_remove("cpu"))
        .unwrap_or_else(|| panic!("{what}: no cpu in {v}"));
    let c: meshperf_protocol::summary::CpuSummary = serde_json::from_value(cpu.clone())
        .unwrap_or_else(|e| panic!("{what}: cpu is not a CpuSummary: {e}\n{cpu}"));
    let c = serde_json::to_value(c).unwrap();
    assert_eq!((shape(&c), &c), (shape(&cpu), &cpu), "{what}: cpu differs");
    // And, between two agents, the interface it ran over (loopback here).
    if let Some(link) = v.as_object_mut().and_then(|o| o.shift_remove("link")) {
        let l: meshperf_protocol::summary::LinkSummary = serde_json::from_value(link.clone())
            .unwrap_or_else(|e| panic!("{what}: link is not a LinkSummary: {e}\n{link}"));
        assert_eq!(
            (l.interface.as_str(), l.speed_mbps),
            ("lo", None),
            "{what}: {link}"
        );
        assert!(l.mtu.is_some(), "{what}: {link}");
        let l = serde_json::to_value(l).unwrap();
        assert_eq!(
            (shape(&l), &l),
            (shape(&link), &link),
            "{what}: link differs"
        );
    } else {
        assert!(what.contains("unix"), "{what}: no link in {v}");
    }
    let v = &v;
    let typed: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{what}: not its typed summary: {e}\n{v}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(shape(&back), shape(v), "{what}: keys or types differ\n{v}");
    assert_eq!(&back, v, "{what}: values differ");
    typed
}

/// The summary keys are a public interface, typed once in
/// `meshperf_protocol::summary`: every kind and side, run between real
/// agents, reports exactly its struct.
#[test]
fn every_kind_and_side_reports_exactly_its_typed_summary() {
    use meshperf_protocol::plan::Transport;
    use meshperf_protocol::summary::{
        RrSummary, StreamSummary, UdpRrServerSummary, UdpRrSummary, UdpStreamSummary,
    };
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut sa, mut ca, mut cb) = (a.connect(), a.connect(), b.connect());
    let mut id = 900;
    let mut pair = |kind: &str, params: serde_json::Value| {
        id += 1;
        // unix kinds run inside one agent; the others from b to a.
        let driver = if kind.starts_with("unix") {
            &mut ca
        } else {
            &mut cb
        };
        run_pair(driver, &mut sa, id, kind, params)
    };
    let opts = json!({"tos": 16, "sndbuf": 262144});
    for direction in ["send", "receive", "both"] {
        let mut p = json!({"count": 32, "msg_bytes": 65536, "direction": direction});
        if direction == "receive" {
            p["streams"] = json!(2);
            p["mss"] = json!(1000);
            p["tos"] = opts["tos"].clone();
        }
        let (cl, sv) = pair("tcp_stream", p);
        for (role, end) in [("client", &cl), ("server", &sv)] {
            let s: StreamSummary = strictly(&format!("tcp_stream {direction} {role}"), end);
            assert!(s.tcp.is_some() && s.transport.is_none(), "{end}");
            assert!(s.streams.iter().all(|x| x.tcp.is_some()), "{end}");
        }
    }
    for direction in ["send", "both"] {
        let (cl, sv) = pair(
            "unix_stream",
            json!({"count": 32, "msg_bytes": 65536, "direction": direction}),
        );
        for (role, end) in [("client", &cl), ("server", &sv)] {
            let s: StreamSummary = strictly(&format!("unix_stream {direction} {role}"), end);
            assert!(s.tcp.is_none() && s.transport == Some(Transport::Unix));
            assert!(s
                .streams
                .iter()
                .all(|x| x.tcp.is_none() && x.writes.is_none()));
        }
    }
    // The check itself: a key the struct lacks, at the top or nested, and
    // a renamed key are caught.
    let (cl, _) = pair("tcp_rr", json!({"count": 10}));
    let mut changed = Vec::new();
    for (from, to) in [("", "extra"), ("rtt_us", "p42"), ("bytes", "byte")] {
        let mut end = cl.clone();
        let sum = end["summary"].as_object_mut().unwrap();
        match (from, to) {
            ("", k) => sum.insert(k.into(), json!(1)),
            ("rtt_us", k) => sum["rtt_us"]
                .as_object_mut()
                .unwrap()
                .insert(k.into(), json!(1.0)),
            (k, new) => {
                let v = sum.shift_remove(k).unwrap();
                sum.insert(new.into(), v)
            }
        };
        changed.push(end);
    }
    for end in changed {
        let r = std::panic::catch_unwind(|| strictly::<RrSummary>("changed", &end));
        assert!(r.is_err(), "not caught: {end}");
    }
    for (kind, p) in [
        ("tcp_rr", json!({"count": 100})),
        (
            "tcp_rr",
            json!({"count": 100, "mss": 1000, "busy_poll": true, "tos": 16}),
        ),
        ("unix_rr", json!({"count": 100})),
    ] {
        let (cl, sv) = pair(kind, p);
        let c: RrSummary = strictly(&format!("{kind} client"), &cl);
        let s: RrSummary = strictly(&format!("{kind} server"), &sv);
        assert!(c.client.is_some() && s.client.is_none());
        assert_eq!(c.tcp.is_some(), kind == "tcp_rr");
        assert_eq!(c.peer_count.is_some(), kind == "tcp_rr");
    }
    for p in [json!({"count": 100}), {
        let mut p = opts.clone();
        p["count"] = json!(100);
        p
    }] {
        let (cl, sv) = pair("udp_rr", p);
        let c: UdpRrSummary = strictly("udp_rr client", &cl);
        strictly::<UdpRrServerSummary>("udp_rr server", &sv);
        assert_eq!(c.answered, 100);
    }
    for (direction, wait_us) in [("send", 20), ("receive", 0)] {
        let (cl, sv) = pair(
            "udp_stream",
            json!({"count": 100, "wait_us": wait_us, "direction": direction, "rcvbuf": 262144}),
        );
        for (role, end) in [("client", &cl), ("server", &sv)] {
            let s: UdpStreamSummary = strictly(&format!("udp_stream {direction} {role}"), end);
            assert!(s.figures.complete, "{end}");
        }
    }
}
