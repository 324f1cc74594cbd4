//! `tcp_crr` between real agents: a fresh connection per transaction,
//! counted exactly on both sides, every descriptor closed at the end,
//! failed connects counted by errno, strangers' connections left
//! unanswered, bad parameters refused in one line, and the CLI's figure.

use crate::run::run_ok;
use crate::util::{fds_back_to, run_pair, AgentProc, Ctl};
use meshperf_protocol::frame::SampleKind;
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// All samples of `kind` for `test_id`, checking batches are contiguous.
fn series(c: &Ctl, kind: SampleKind, test_id: u32) -> Vec<u64> {
    let mut all = Vec::new();
    for f in c
        .samples(kind)
        .into_iter()
        .filter(|f| f.header.test_id == test_id)
    {
        assert_eq!(f.header.first_seq as usize, all.len(), "contiguous batches");
        all.extend_from_slice(&f.values);
    }
    all
}

fn map_total(v: &Value) -> u64 {
    v.as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
}

#[test]
fn tcp_crr_counts_every_connection_on_both_sides_and_closes_them_all() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    assert!(ca.hello["capabilities"]
        .as_array()
        .unwrap()
        .contains(&json!("tcp_crr")));
    let (fa, fb) = (a.fds(), b.fds());

    // By count: exactly that many connections, each answered once.
    let (cl, sv) = run_pair(
        &mut cb,
        &mut ca,
        1,
        "tcp_crr",
        json!({"req_bytes": 100, "resp_bytes": 3000, "count": 500}),
    );
    let (s, ss) = (&cl["summary"], &sv["summary"]);
    assert_eq!(s["transactions"], 500, "{cl}");
    assert_eq!(s["attempts"], 500, "{cl}");
    assert_eq!(s["peer_transactions"], 500, "{cl}");
    assert_eq!(ss["transactions"], 500, "{sv}");
    assert_eq!(ss["peer_transactions"], 500, "{sv}");
    assert_eq!(s["connect_failures"], json!({}), "{cl}");
    assert_eq!(s["transaction_failures"], json!({}), "{cl}");
    assert_eq!(ss["transaction_failures"], json!({}), "{sv}");
    assert_eq!((&s["note"], &ss["note"]), (&Value::Null, &Value::Null));
    assert_eq!(ss["strangers"], 0);
    assert_eq!(s["bytes"], 500 * 3100);
    assert_eq!(s["nodelay"], true, "{cl}");
    let tps = s["transactions_per_second"].as_f64().unwrap();
    let secs = s["seconds"].as_f64().unwrap();
    assert!((tps * secs - 500.0).abs() < 1e-6, "{s}");
    for key in ["connect_us", "txn_us"] {
        assert_eq!(s[key]["n"], 500.0, "{key}: {s}");
    }
    // A transaction holds its connect: per sample and in the medians.
    let (conn, txn) = (
        series(&cb, SampleKind::ConnectNs, 1),
        series(&cb, SampleKind::RttNs, 1),
    );
    assert_eq!((conn.len(), txn.len()), (500, 500));
    assert!(conn.iter().zip(&txn).all(|(c, t)| c < t));
    assert!(s["connect_us"]["median"].as_f64() < s["txn_us"]["median"].as_f64());
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));

    // By time: whatever the count, both sides agree on it, and samples
    // stream while the test runs.
    let p = json!({"duration_s": 0.6, "interval_ms": 50});
    let (cl, sv) = run_pair(&mut cb, &mut ca, 2, "tcp_crr", p);
    let n = cl["summary"]["transactions"].as_u64().unwrap();
    assert!(n >= 20, "{cl}");
    assert_eq!(sv["summary"]["transactions"], n, "{cl} {sv}");
    assert_eq!(cl["summary"]["peer_transactions"], n, "{cl}");
    assert_eq!(series(&cb, SampleKind::RttNs, 2).len() as u64, n);
    let batches = cb
        .samples(SampleKind::ConnectNs)
        .into_iter()
        .filter(|f| f.header.test_id == 2)
        .count();
    assert!(batches >= 3, "{batches} batches");
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));
}

#[test]
fn bad_crr_parameters_are_refused_in_one_line_before_traffic() {
    let a = AgentProc::start(&[]);
    let mut c = a.connect();
    let fds = a.fds();
    for (i, (params, name)) in [
        (json!({"req_bytes": 0}), "req_bytes"),
        (json!({"resp_bytes": 1u64 << 30}), "resp_bytes"),
        (json!({"count": 0}), "count"),
        (json!({"count": 5, "duration_s": 1}), "count"),
        (json!({"duration_s": 3600}), "duration_s"),
        (json!({"connect_timeout_ms": 0}), "connect_timeout_ms"),
        (json!({"wait_us": 10}), "wait_us"),
        (json!({"congestion": "nosuchalgo"}), "congestion"),
        (json!({"server_bind": "203.0.113.9"}), "server_bind"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.request(json!({"type": "prepare", "test_id": 10 + i, "step": 0,
            "kind": "tcp_crr", "params": params}));
        let msg = r["message"].as_str().unwrap_or_default();
        assert_eq!(r["code"], "bad_params", "{r}");
        assert!(msg.starts_with(name) && !msg.contains('\n'), "{r}");
    }
    let r = c.request(
        json!({"type": "start", "test_id": 30, "step": 0, "kind": "tcp_crr",
        "params": {"client_bind": "203.0.113.9"},
        "peer": {"host": "127.0.0.1", "port": 9, "key": "00".repeat(16)}}),
    );
    assert_eq!(r["code"], "bad_params", "{r}");
    assert!(r["message"].as_str().unwrap().starts_with("client_bind"));
    // Nothing was opened, and the agent serves on.
    assert_eq!(a.fds(), fds);
    let b = AgentProc::start(&[]);
    let mut cb = b.connect();
    let (cl, _) = run_pair(&mut cb, &mut c, 40, "tcp_crr", json!({"count": 20}));
    assert_eq!(cl["summary"]["transactions"], 20, "{cl}");
}

/// The serving agent dies mid-test (SIGKILL): the connections it held
/// are reset and its port refuses; the driving side counts both by errno,
/// says in one line that the count was not confirmed, and closes all.
#[test]
fn a_peer_that_dies_mid_test_is_counted_by_errno_not_a_crash() {
    let (mut a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let fb = b.fds();
    let p = json!({"duration_s": 1.5, "req_bytes": 64, "resp_bytes": 64});
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 1, "step": 0, "kind": "tcp_crr", "params": p}),
    );
    let start = cb.request(
        json!({"type": "start", "test_id": 1, "step": 0, "kind": "tcp_crr",
        "params": p, "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
    );
    assert_eq!(start["type"], "started", "{start}");
    std::thread::sleep(Duration::from_millis(400));
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let end = cb.wait_end(1);
    assert_eq!(end["type"], "result", "{end}");
    let s = &end["summary"];
    assert!(s["transactions"].as_u64().unwrap() > 0, "{end}");
    let refused = s["connect_failures"]["ECONNREFUSED"].as_u64().unwrap_or(0);
    assert!(refused > 0, "{end}");
    assert_eq!(
        s["attempts"].as_u64().unwrap(),
        s["transactions"].as_u64().unwrap()
            + map_total(&s["connect_failures"])
            + map_total(&s["transaction_failures"]),
        "every attempt is a transaction or a counted failure: {end}"
    );
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with("the serving agent did not confirm its count") && !note.contains('\n'),
        "{note}"
    );
    assert!(s["line"].as_str().unwrap().contains("ECONNREFUSED"), "{s}");
    assert_eq!(fds_back_to(&b, fb), fb);
    // The driving agent serves on.
    let c = AgentProc::start(&[]);
    let mut cc = c.connect();
    let (cl, _) = run_pair(&mut cb, &mut cc, 2, "tcp_crr", json!({"count": 10}));
    assert_eq!(cl["summary"]["transactions"], 10, "{cl}");
}

/// Connections from any address but the driving agent's are closed
/// unanswered and counted; the test's own count stays exact.
#[test]
fn connections_from_strangers_are_closed_unanswered() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    // The strangers must land while the test runs: 3 s, and the time they
    // took is checked against it below (a 1 s test with a 300 ms sleep
    // first left a busy host 0.7 s for three connects and their closes).
    let secs = 3.0;
    let p = json!({"duration_s": secs});
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 1, "step": 0, "kind": "tcp_crr", "params": p}),
    );
    let port = prep["port"].as_u64().unwrap() as u16;
    cb.request(
        json!({"type": "start", "test_id": 1, "step": 0, "kind": "tcp_crr",
        "params": p, "peer": {"host": "127.0.0.1", "port": port, "key": prep["key"]}}),
    );
    let started = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(100));
    let mut answered = 0;
    for _ in 0..3 {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::from(([127, 0, 0, 2], 0)).into())
            .unwrap();
        s.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())
            .unwrap();
        let mut s: TcpStream = s.into();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        use std::io::{Read, Write};
        let _ = s.write_all(b"x");
        let mut buf = [0u8; 16];
        // Closed without a byte of answer (EOF, or a reset).
        answered += s.read(&mut buf).unwrap_or(0);
    }
    assert_eq!(answered, 0);
    let took = started.elapsed().as_secs_f64();
    assert!(
        took < secs,
        "the strangers took {took} s, past the {secs} s test"
    );
    let (cl, sv) = (cb.wait_end(1), ca.wait_end(1));
    assert_eq!(sv["summary"]["strangers"], 3, "{sv}");
    let n = cl["summary"]["transactions"].as_u64().unwrap();
    assert!(n > 0 && sv["summary"]["transactions"] == n, "{cl} {sv}");
}

/// `meshperf run --kind tcp_crr` prints the two sides' lines and the
/// connect and transaction percentiles; the result carries the samples.
#[test]
fn the_cli_prints_the_connection_rate_and_its_percentiles() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, r) = run_ok(&a, &b, &["--kind", "tcp_crr", "--set", "count=200"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("200 transactions of 1 + 1 bytes in ")
                && l.ends_with(" transactions/s")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l == "answered 200 connections of 1 bytes with 1 bytes"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("connect us: n 200, min ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("transaction us: n 200, min ")),
        "{out}"
    );
    let step = &r.steps[0];
    assert!(step.error.is_none());
    assert_eq!(step.summary["transactions"], 200);
    let kinds: Vec<SampleKind> = step.samples.iter().map(|s| s.kind).collect();
    assert!(kinds.contains(&SampleKind::ConnectNs) && kinds.contains(&SampleKind::RttNs));
}

/// A driving agent out of descriptors (its open-file limit set to leave
/// two numbers free before the test: the control connection and the
/// test's poll take them) ends the test at once with one line saying so, never a
/// hang, and gives back what it took.
#[test]
fn out_of_descriptors_the_test_ends_in_one_line_not_a_hang() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    // A new descriptor takes the lowest free number, and the limit bounds
    // the numbers (descriptors above it stay open): a limit one above the
    // second free number leaves exactly two.
    let open: Vec<usize> = std::fs::read_dir(format!("/proc/{}/fd", b.child.id()))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let second_free = (0..).filter(|n| !open.contains(n)).nth(1).unwrap();
    let fb = b.fds();
    // The running agent's open-file limit, as `prlimit --nofile` sets it.
    let lim = libc::rlimit {
        rlim_cur: second_free as libc::rlim_t + 1,
        rlim_max: second_free as libc::rlim_t + 1,
    };
    // SAFETY: a valid rlimit for a child of this process; no old value asked.
    let rc = unsafe {
        libc::prlimit(
            b.child.id() as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    let t0 = Instant::now();
    let (cl, sv) = run_pair(&mut cb, &mut ca, 1, "tcp_crr", json!({"count": 100}));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let s = &cl["summary"];
    assert_eq!(cl["type"], "result", "{cl}");
    assert_eq!(s["transactions"], 0, "{cl}");
    assert_eq!(s["connect_failures"], json!({"EMFILE": 1}), "{cl}");
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with("file descriptors ran out after 0 transactions (EMFILE)")
            && !note.contains('\n'),
        "{note}"
    );
    assert_eq!(sv["summary"]["transactions"], 0, "{sv}");
    assert_eq!(fds_back_to(&b, fb), fb);
    // The agent serves on: a fresh controller session still gets in.
    let mut again = b.connect();
    assert_eq!(again.request(json!({"type": "ping"}))["type"], "pong");
}

/// Cancelling a running tcp_crr on its driving agent ends both sides
/// within a second or two, and neither keeps a descriptor.
#[test]
fn a_cancelled_tcp_crr_ends_both_sides_and_closes_everything() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let (fa, fb) = (a.fds(), b.fds());
    let p = json!({"duration_s": 20});
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 5, "step": 0, "kind": "tcp_crr", "params": p}),
    );
    cb.request(
        json!({"type": "start", "test_id": 5, "step": 0, "kind": "tcp_crr",
        "params": p, "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
    );
    std::thread::sleep(Duration::from_millis(400));
    let t0 = Instant::now();
    let r = cb.request(json!({"type": "cancel", "test_id": 5}));
    assert_eq!(r["type"], "cancelled", "{r}");
    let (end_b, end_a) = (cb.wait_end(5), ca.wait_end(5));
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(end_b["code"], "cancelled", "{end_b}");
    assert_eq!(end_a["type"], "error", "{end_a}");
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));
}

/// Issue 21 part 6: tcp_crr with 32 flows on 2 threads. Exactly `count`
/// connections tried and answered over all flows, every flow did work, the
/// per-flow counts sum to the total, every connection closed on both
/// agents; by time both sides agree too.
#[test]
fn tcp_crr_with_32_flows_counts_exactly_and_closes_every_connection() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let (fa, fb) = (a.fds(), b.fds());
    let p = json!({"flows": 32, "threads": 2, "count": 2000, "req_bytes": 10, "resp_bytes": 500});
    let (cl, sv) = run_pair(&mut cb, &mut ca, 1, "tcp_crr", p);
    let (s, ss) = (&cl["summary"], &sv["summary"]);
    assert_eq!(s["attempts"], 2000, "{cl}");
    assert_eq!(s["transactions"], 2000, "{cl}");
    assert_eq!(s["peer_transactions"], 2000, "{cl}");
    assert_eq!(ss["transactions"], 2000, "{sv}");
    assert_eq!(s["connect_failures"], json!({}), "{cl}");
    assert_eq!(s["transaction_failures"], json!({}), "{cl}");
    assert_eq!(ss["transaction_failures"], json!({}), "{sv}");
    assert_eq!(s["bytes"], 2000 * 510);
    let f = &s["flows"];
    assert_eq!(
        (f["count"].as_u64(), f["threads"].as_u64()),
        (Some(32), Some(2)),
        "{f}"
    );
    let per: Vec<u64> = f["per_flow"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(per.len(), 32);
    assert_eq!(per.iter().sum::<u64>(), 2000, "{f}");
    assert!(per.iter().all(|&n| n > 0), "every flow did work: {f}");
    assert!(
        s["line"]
            .as_str()
            .unwrap()
            .contains("32 flows on 2 threads"),
        "{cl}"
    );
    assert!(ss.get("flows").is_none(), "{sv}");
    let (conn, txn) = (
        series(&cb, SampleKind::ConnectNs, 1),
        series(&cb, SampleKind::RttNs, 1),
    );
    assert_eq!((conn.len(), txn.len()), (2000, 2000));
    assert!(conn.iter().zip(&txn).all(|(c, t)| c < t));
    assert_eq!(s["txn_us"]["n"], 2000.0);
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));

    let p = json!({"flows": 32, "duration_s": 0.5, "interval_ms": 50});
    let (cl, sv) = run_pair(&mut cb, &mut ca, 2, "tcp_crr", p);
    let n = cl["summary"]["transactions"].as_u64().unwrap();
    assert!(n >= 64, "{cl}");
    assert_eq!(sv["summary"]["transactions"], n, "{cl} {sv}");
    assert_eq!(cl["summary"]["attempts"], n, "{cl}");
    assert_eq!(series(&cb, SampleKind::RttNs, 2).len() as u64, n);
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));
}

/// Cancelling a many-flow tcp_crr ends both sides at once and every one
/// of its connections is closed.
#[test]
fn a_cancelled_many_flow_tcp_crr_closes_every_connection() {
    crate::util::cancelling_many_flows_closes_every_connection("tcp_crr", 16);
}

/// Issue 40 finding 5: 1 100 idle connections to the data port, from the
/// driving agent's own address, while a one-flow tcp_crr runs on a serving
/// agent limited to 1 024 descriptors. Before, the serving side held every
/// one (EMFILE, "open at the end" 1 008, a controller's login 9.5 s, the
/// test past its time); now it holds at most `flows` + 16 connections
/// (the agent's descriptors, sampled through the flood, stay within that
/// of what it held before the test), closes the idle ones past that
/// (counted with `strangers`), a controller logs in meanwhile, and the
/// test's transactions go on and agree on both sides.
#[test]
fn idle_connections_from_the_drivers_address_are_capped_at_flows_plus_a_few() {
    let a = AgentProc::start_logged_nofile(&[], 1024);
    let b = AgentProc::start(&[]);
    let (mut ca, mut cb) = (a.connect(), b.connect());
    // This process holds the idle connections: more than its usual 1 024.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on valid structs, raising the soft limit
    // at most to the hard one.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(4096);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    let idle = 1100.min(lim.rlim_cur as usize - 200);
    assert!(
        idle >= 1000,
        "this process may open {} descriptors",
        lim.rlim_cur
    );
    let fa = a.fds();
    let p = json!({"duration_s": 3});
    let prep = ca.request(
        json!({"type": "prepare", "test_id": 1, "step": 0, "kind": "tcp_crr", "params": p}),
    );
    let port = prep["port"].as_u64().unwrap() as u16;
    let start = cb.request(
        json!({"type": "start", "test_id": 1, "step": 0, "kind": "tcp_crr",
        "params": p, "peer": {"host": "127.0.0.1", "port": port, "key": prep["key"]}}),
    );
    assert_eq!(start["type"], "started", "{start}");
    std::thread::sleep(Duration::from_millis(300));
    let flood = std::thread::spawn(move || {
        let mut held = Vec::new();
        for _ in 0..idle {
            match TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_secs(5),
            ) {
                Ok(s) => held.push(s),
                Err(_) => break,
            }
        }
        held
    });
    let mut most = 0;
    while !flood.is_finished() {
        most = most.max(a.fds());
        std::thread::sleep(Duration::from_millis(10));
    }
    let held = flood.join().unwrap();
    assert_eq!(held.len(), idle, "every idle connection was made");
    for _ in 0..20 {
        most = most.max(a.fds());
        std::thread::sleep(Duration::from_millis(10));
    }
    // A controller logs in while they are held.
    let t0 = Instant::now();
    let mut again = a.connect();
    let login = t0.elapsed();
    assert_eq!(again.request(json!({"type": "ping"}))["type"], "pong");
    let (cl, sv) = (cb.wait_end(1), ca.wait_end(1));
    drop(held);
    eprintln!(
        "{idle} idle connections: the serving agent held at most {most} descriptors ({fa} before), \
         a login took {login:?}; {} / {}",
        sv["summary"]["line"], cl["summary"]["line"]
    );
    let (s, ss) = (&cl["summary"], &sv["summary"]);
    assert_eq!(cl["type"], "result", "{cl}");
    assert_eq!(sv["type"], "result", "{sv}");
    // The test's own descriptors (listener twice, control line, poll), the
    // login's connection, one just accepted before another is closed, a
    // few to spare, and 1 + 16 held connections at most (before: 1 024).
    assert!(
        most <= fa + 10 + 17,
        "the serving agent held {most} descriptors, {fa} before the test: {sv}"
    );
    assert!(login < Duration::from_secs(3), "a login took {login:?}");
    let n = s["transactions"].as_u64().unwrap();
    assert!(n >= 50, "{cl}");
    assert_eq!(ss["transactions"].as_u64(), Some(n), "{cl} {sv}");
    assert!(
        s["seconds"].as_f64().unwrap() < 4.5,
        "the 3 s test ran past its time: {cl}"
    );
    let open = ss["transaction_failures"]["open at the end"]
        .as_u64()
        .unwrap_or(0);
    assert!(open <= 17, "{sv}");
    let closed = ss["strangers"].as_u64().unwrap();
    assert!(closed + 17 >= idle as u64, "{sv}");
    assert!(
        ss["line"]
            .as_str()
            .unwrap()
            .contains(" idle past the 17 held at once"),
        "{sv}"
    );
}
