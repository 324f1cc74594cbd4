//! Soak and fault tests (issue 10): many short tests back to back, and the
//! faults a node sees (a peer agent frozen then killed mid-test, a flood of
//! idle connections during a run). After each, the agents serve the next
//! test and hold what they held before: descriptors, threads, memory.

use crate::util::{run_pair, AgentProc, Ctl};
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// What an agent holds: open descriptors, threads, resident KiB.
fn held(a: &AgentProc) -> (usize, u64, u64) {
    (a.fds(), a.threads(), a.status_kib("VmRSS"))
}

/// What an idle agent holds: waits (up to 3 s) until only its main thread
/// runs, the engine threads of finished tests having ended.
fn idle(a: &AgentProc) -> (usize, u64, u64) {
    let t0 = Instant::now();
    while a.threads() > 1 && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    held(a)
}

/// Waits until the agent's descriptors and threads are back to `before`
/// (engine threads end a moment after their last event), and returns
/// what it holds then.
fn settled(a: &AgentProc, before: (usize, u64, u64)) -> (usize, u64, u64) {
    let t0 = Instant::now();
    loop {
        let now = held(a);
        if (now.0, now.1) == (before.0, before.1) || t0.elapsed() > Duration::from_secs(3) {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One short test of each two-agent kind in turn (and unix_rr inside A),
/// every one checked for its exact figures.
fn short_test(ca: &mut Ctl, cb: &mut Ctl, id: u32) {
    let (kind, params): (&str, Value) = match id % 5 {
        0 => ("tcp_rr", json!({"count": 20})),
        1 => ("tcp_stream", json!({"count": 8, "msg_bytes": 65536})),
        2 => ("udp_rr", json!({"count": 20})),
        3 => (
            "udp_stream",
            json!({"count": 50, "pkt_bytes": 200, "wait_us": 10}),
        ),
        _ => ("unix_rr", json!({"count": 20})),
    };
    let (client, server) = if kind == "unix_rr" {
        // Inside one agent: A prepares and A starts.
        let prep = ca.request(
            json!({"type": "prepare", "test_id": id, "step": 0, "kind": kind, "params": params}),
        );
        assert_eq!(prep["type"], "prepared", "{prep}");
        let start = ca.request(
            json!({"type": "start", "test_id": id, "step": 0, "kind": kind,
            "params": params, "peer": {"host": "local", "port": prep["port"], "key": prep["key"]}}),
        );
        assert_eq!(start["type"], "started", "{start}");
        let first = ca.wait_end(id);
        let second = ca.wait_end(id);
        if first["role"] == "client" {
            (first, second)
        } else {
            (second, first)
        }
    } else {
        run_pair(cb, ca, id, kind, params)
    };
    for end in [&client, &server] {
        assert_eq!(end["type"], "result", "test {id} {kind}: {end}");
    }
    let s = &client["summary"];
    match kind {
        "tcp_rr" | "udp_rr" | "unix_rr" => assert_eq!(s["count"], 20, "{kind}: {s}"),
        "tcp_stream" => assert_eq!(server["summary"]["bytes"], 8 * 65536, "{s}"),
        _ => assert_eq!(server["summary"]["received"], 50, "{}", server["summary"]),
    }
}

/// 1 000 short tests back to back between two agents (tcp_rr, tcp_stream,
/// udp_rr, udp_stream, and unix_rr inside one), every one with its exact
/// figures; afterwards both agents hold the descriptors and threads they
/// held after the first 50, and at most 2 MiB more memory.
#[test]
fn a_thousand_short_tests_back_to_back_leak_nothing() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    for id in 0..50 {
        short_test(&mut ca, &mut cb, id);
    }
    let (a0, b0) = (idle(&a), idle(&b));
    let t0 = Instant::now();
    for id in 50..1050 {
        short_test(&mut ca, &mut cb, id);
    }
    let took = t0.elapsed();
    let (a1, b1) = (settled(&a, a0), settled(&b, b0));
    eprintln!("1000 tests in {took:?}; A (fds, threads, KiB) {a0:?} -> {a1:?}, B {b0:?} -> {b1:?}");
    for (name, before, after) in [("A", a0, a1), ("B", b0, b1)] {
        assert_eq!(
            after.0, before.0,
            "{name}'s open descriptors grew: {before:?} -> {after:?}"
        );
        assert_eq!(
            after.1, before.1,
            "{name}'s threads grew: {before:?} -> {after:?}"
        );
        assert!(
            after.2 <= before.2 + 2048,
            "{name}'s memory grew: {before:?} -> {after:?}"
        );
    }
}

/// A peer agent frozen (SIGSTOP) mid-test, then killed: the serving agent's
/// side fails with a clear message within its stall deadline, not at the
/// test's 20 s, the agent serves the next test with another peer, and it
/// holds no more than before.
#[test]
fn a_peer_agent_frozen_then_killed_mid_test_fails_clearly_and_leaks_nothing() {
    let (a, mut b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    run_pair(&mut cb, &mut ca, 1, "tcp_rr", json!({"count": 10}));
    let before = idle(&a);
    for (id, kind) in [(2u32, "tcp_stream"), (3, "udp_rr")] {
        let params = json!({"duration_s": 20});
        let prep = ca.request(
            json!({"type": "prepare", "test_id": id, "step": 0, "kind": kind, "params": params}),
        );
        let start = cb.request(
            json!({"type": "start", "test_id": id, "step": 0, "kind": kind, "params": params,
            "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
        );
        assert_eq!(start["type"], "started", "{start}");
        std::thread::sleep(Duration::from_millis(500));
        let pid = b.child.id() as i32;
        let t0 = Instant::now();
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        if kind == "udp_rr" {
            // Frozen past the quiet deadline: A's side gives up by itself,
            // with what it served and why it is incomplete.
            let end = ca.wait_end(id);
            assert_eq!(end["type"], "result", "{kind}: {end}");
            assert_eq!(end["summary"]["complete"], false, "{kind}: {end}");
            assert!(
                end["summary"]["note"]
                    .as_str()
                    .unwrap()
                    .contains("sent nothing for 11 s"),
                "{kind}: {end}"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "{kind}: {:?}",
                t0.elapsed()
            );
            eprintln!(
                "{kind}, peer frozen: A ended after {:?}: {end}",
                t0.elapsed()
            );
            unsafe { libc::kill(pid, libc::SIGKILL) };
        } else {
            std::thread::sleep(Duration::from_secs(1));
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let end = ca.wait_end(id);
            assert_eq!(end["type"], "error", "{kind}: {end}");
            let msg = end["message"].as_str().unwrap();
            assert!(
                msg.contains("peer") || msg.contains("connection"),
                "{kind}: {msg}"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{kind}: {:?}",
                t0.elapsed()
            );
        }
        let _ = b.child.wait();
        // A new peer for the next round.
        b = AgentProc::start(&[]);
        cb = b.connect();
        let (client, server) = run_pair(&mut cb, &mut ca, id + 100, "tcp_rr", json!({"count": 50}));
        assert_eq!(
            (
                client["summary"]["count"].as_u64(),
                server["summary"]["count"].as_u64()
            ),
            (Some(50), Some(50))
        );
    }
    let after = settled(&a, before);
    assert_eq!(
        (after.0, after.1),
        (before.0, before.1),
        "A held {before:?}, now {after:?}"
    );
}

/// 1 000 idle connections to A's control port from 40 loopback addresses
/// while a 20 000-transaction tcp_rr runs between A and B: the run's figures
/// are exact, A's controller is answered, and once the flood leaves A holds
/// what it held before.
#[test]
fn a_flood_of_idle_connections_during_a_run_changes_nothing() {
    // Room for our own 1 000 sockets.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit on a valid struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(8192);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    run_pair(&mut cb, &mut ca, 1, "tcp_rr", json!({"count": 10}));
    let before = idle(&a);
    let params = json!({"count": 20000});
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 2, "step": 0, "kind": "tcp_rr", "params": params}),
    );
    let start = cb.request(
        json!({"type": "start", "test_id": 2, "step": 0, "kind": "tcp_rr", "params": params,
        "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
    );
    assert_eq!(start["type"], "started", "{start}");
    let port = a.port;
    let flood: Vec<TcpStream> = (0..1000)
        .filter_map(|i| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
            s.bind(&SocketAddr::from(([127, 0, 1, 1 + (i % 40) as u8], 0)).into())
                .ok()?;
            s.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())
                .ok()?;
            Some(s.into())
        })
        .collect();
    assert!(
        flood.len() >= 900,
        "only {} connections opened",
        flood.len()
    );
    let pong = ca.request(json!({"type": "ping"}));
    assert_eq!(pong["type"], "pong", "{pong}");
    let (client, server) = (cb.wait_end(2), ca.wait_end(2));
    assert_eq!(client["summary"]["count"], 20000, "{client}");
    assert_eq!(client["summary"]["bad"], 0, "{client}");
    assert_eq!(server["summary"]["count"], 20000, "{server}");
    drop(flood);
    let after = settled(&a, before);
    assert_eq!(
        (after.0, after.1),
        (before.0, before.1),
        "A held {before:?}, now {after:?}"
    );
    let (client, _) = run_pair(&mut cb, &mut ca, 3, "tcp_rr", json!({"count": 10}));
    assert_eq!(client["summary"]["count"], 10, "{client}");
}
