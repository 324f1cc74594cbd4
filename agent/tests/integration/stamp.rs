//! `stamp`: the agent as a STAMP Session-Sender toward a reflector nobody
//! here wrote (stamp-suite, `scripts/setup.sh --test` installs it into
//! `.tools/`), open and authenticated; `--allow-target`; and reflectors
//! that misbehave (never answer, answer late, with a wrong HMAC, with
//! another sender's packets): each counted, one line, the agent serving on.

use crate::cluster::metrics_at;
use crate::run::run_ok;
use crate::util::{http_get, AgentProc, TempDir};
use serde_json::Value;
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The pinned stamp-suite setup.sh installs (`$STAMP_SUITE` overrides).
pub(crate) fn stamp_suite() -> String {
    if let Ok(p) = std::env::var("STAMP_SUITE") {
        return p;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let p = root.join(".tools/stamp-suite-1.0.0/bin/stamp-suite");
    assert!(
        p.exists(),
        "stamp-suite is missing: run scripts/setup.sh --test (it installs stamp-suite 1.0.0 into .tools/), or set STAMP_SUITE"
    );
    p.to_string_lossy().into_owned()
}

/// A UDP port free now on 127.0.0.1.
pub(crate) fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process ended when dropped.
pub(crate) struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// stamp-suite reflecting on 127.0.0.1:`port` (`auth`: with `key`).
fn suite_reflector(port: u16, key: Option<&std::path::Path>) -> Proc {
    let mut c = Command::new(stamp_suite());
    c.args(["-i", "-S", "127.0.0.1", "-o", &port.to_string()]);
    if let Some(k) = key {
        c.args(["-A", "A", "--hmac-key-file", k.to_str().unwrap()]);
    }
    let p = Proc(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("stamp-suite starts"),
    );
    // Bound once a datagram to it no longer draws an ICMP port unreachable.
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe.connect(("127.0.0.1", port)).unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    for _ in 0..200 {
        let _ = probe.send(&[0u8; 1]);
        let mut b = [0u8; 64];
        match probe.recv(&mut b) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(25))
            }
            _ => return p,
        }
    }
    panic!("stamp-suite did not bind 127.0.0.1:{port}");
}

/// A key file of 32 hex digits, owner-only (stamp-suite refuses others).
pub(crate) fn key_file(dir: &TempDir, name: &str, hex: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("{hex}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

pub(crate) const KEY: &str = "00112233445566778899aabbccddeeff";

fn stamp(a: &AgentProc, target: &str, more: &[&str]) -> (String, Value) {
    let t = format!("target=stamp://{target}");
    let mut args = vec!["--kind", "stamp", "--set", &t];
    for m in more {
        args.extend(["--set", m]);
    }
    let (out, r) = run_ok(a, a, &args);
    let s = r.steps[0].summary.clone();
    assert!(!s.is_null(), "{out}");
    (out, s)
}

#[test]
fn stamp_suite_reflects_our_packets_open_and_authenticated() {
    let dir = TempDir::new("stamp-suite");
    let key = key_file(&dir, "key", KEY);
    let (open, authp) = (free_udp_port(), free_udp_port());
    let _r1 = suite_reflector(open, None);
    let _r2 = suite_reflector(authp, Some(&key));
    let a = AgentProc::start_logged(&[
        "--allow-target",
        "127.0.0.1",
        "--stamp-key",
        key.to_str().unwrap(),
        "--metrics",
        "127.0.0.1:0",
    ]);
    // Open mode, the Class of Service TLV asked, EF marked, padded to 64.
    let (out, s) = stamp(
        &a,
        &format!("127.0.0.1:{open}"),
        &[
            "count=200",
            "wait_us=1000",
            "cos=true",
            "tos=184",
            "pkt_bytes=64",
        ],
    );
    assert_eq!(s["sent"], 200, "{out}");
    // Loopback loses nothing that was sent; a busy host may answer late.
    assert_eq!(
        s["answered"].as_u64().unwrap() + s["late"].as_u64().unwrap(),
        200,
        "{s}"
    );
    assert_eq!(
        (s["foreign"].as_u64(), s["bad_hmac"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(s["reflector_ttl"], 64, "{s}");
    assert_eq!(
        (s["reflector_dscp"].as_u64(), s["reflector_ecn"].as_u64()),
        (Some(46), Some(0)),
        "{s}"
    );
    let rtt = &s["rtt_us"];
    assert!(rtt["median"].as_f64().unwrap() > 0.0, "{s}");
    // The sender's summary is exactly its typed summary (the public keys).
    crate::agent::strictly::<meshperf_protocol::summary::StampSummary>(
        "stamp",
        &serde_json::json!({"type": "result", "summary": s}),
    );
    // The round trip without the reflector's time is at most the whole.
    assert!(out.contains("stamp to 127.0.0.1:"), "{out}");
    assert!(
        out.contains("reflector received TTL 64, DSCP 46 ECN 0"),
        "{out}"
    );
    // Authenticated, PTP timestamps.
    let (out, s) = stamp(
        &a,
        &format!("127.0.0.1:{authp}"),
        &["count=100", "wait_us=1000", "auth=true", "clock=ptp"],
    );
    assert_eq!(s["auth"], true, "{out}");
    assert_eq!(s["pkt_bytes"], 112, "{s}");
    assert_eq!(
        s["answered"].as_u64().unwrap() + s["late"].as_u64().unwrap(),
        100,
        "{s}"
    );
    assert_eq!(s["bad_hmac"], 0, "{s}");
    assert!(out.contains(", authenticated)"), "{out}");
    // Sends to the target are counted by range in /metrics.
    let (_, page) = http_get(&metrics_at(&a), "/metrics");
    assert!(
        page.contains(
            "meshperf_agent_target_packets_total{allowed=\"127.0.0.1/32\",kind=\"stamp\"} 300"
        ),
        "{page}"
    );
}

#[test]
fn a_target_outside_allow_target_is_refused_in_one_line_and_counted() {
    let port = free_udp_port();
    let catch = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    catch.set_nonblocking(true).unwrap();
    for extra in [&[][..], &["--allow-target", "10.0.0.0/8,192.0.2.7"][..]] {
        let mut args = vec!["--metrics", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let a = AgentProc::start_logged(&args);
        let t = format!("target=stamp://127.0.0.1:{port}");
        let o = crate::run::run_ab(
            &a,
            &a,
            &["--kind", "stamp", "--set", &t, "--set", "count=5"],
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(o.status.code(), Some(1), "{out}");
        let line = out
            .lines()
            .find(|l| l.contains("FAILED"))
            .expect("a failed step");
        assert!(line.contains("--allow-target"), "{line}");
        assert!(line.contains("is not a meshperf agent"), "{line}");
        let (_, page) = http_get(&metrics_at(&a), "/metrics");
        assert!(
            page.contains("meshperf_agent_target_refusals_total{kind=\"stamp\"} 1"),
            "{page}"
        );
        // Nothing left for the target.
        let mut b = [0u8; 64];
        assert!(
            catch.recv(&mut b).is_err(),
            "a datagram reached the refused target"
        );
    }
    // A bad range is refused at start, in one line naming the flag.
    let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--allow-target",
            "10.1.2.3/8",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--allow-target") && err.contains("first address"),
        "{err}"
    );
}

/// How a fake reflector misbehaves.
#[derive(Clone, Copy)]
enum Misbehave {
    /// Takes the packets, answers none.
    Silent,
    /// Answers each after `ms`.
    Late(u64),
    /// Answers authenticated packets with a wrong HMAC.
    WrongHmac,
    /// Answers with a sender timestamp we never sent (another sender's).
    Strangers,
}

/// A reflector on its own thread, on a free port, doing `how` for `n` packets.
fn fake_reflector(how: Misbehave, auth: bool, n: usize) -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = s.local_addr().unwrap().port();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        for _ in 0..n {
            let Ok((len, from)) = s.recv_from(&mut b) else {
                return;
            };
            // Reflector fields: copy the sender's sequence number and
            // timestamp where the reflected packet carries them.
            let mut r = b[..len].to_vec();
            let (seq_at, ts_at, s_seq, s_ts, ssid) = if auth {
                (0, 16, 48, 64, 26)
            } else {
                (0, 4, 24, 28, 14)
            };
            let seq = r[seq_at..seq_at + 4].to_vec();
            let ts = r[ts_at..ts_at + 8].to_vec();
            let id = r[ssid..ssid + 2].to_vec();
            r[s_seq..s_seq + 4].copy_from_slice(&seq);
            r[s_ts..s_ts + 8].copy_from_slice(&ts);
            r[ssid..ssid + 2].copy_from_slice(&id);
            match how {
                Misbehave::Silent => continue,
                Misbehave::Late(ms) => std::thread::sleep(Duration::from_millis(ms)),
                Misbehave::WrongHmac => r[96] ^= 0xff,
                Misbehave::Strangers => r[s_ts + 7] ^= 0x55,
            }
            let _ = s.send_to(&r, from);
        }
    });
    port
}

#[test]
fn misbehaving_reflectors_are_counted_in_one_line_and_the_agent_serves_on() {
    let dir = TempDir::new("stamp-bad");
    let key = key_file(&dir, "key", KEY);
    let a = AgentProc::start(&[
        "--allow-target",
        "127.0.0.0/8",
        "--stamp-key",
        key.to_str().unwrap(),
    ]);
    // Never answers: given up after 10 in a row, one line, all lost.
    let p = fake_reflector(Misbehave::Silent, false, 1000);
    let (out, s) = stamp(
        &a,
        &format!("127.0.0.1:{p}"),
        &["count=50", "wait_us=2000", "timeout_ms=100"],
    );
    assert_eq!(s["answered"], 0, "{out}");
    assert_eq!(s["lost"], s["sent"], "{s}");
    assert!(
        s["note"].as_str().unwrap().contains("stopped answering"),
        "{s}"
    );
    // Answers 300 ms late (one after the other) with a 100 ms timeout, a
    // packet every 100 ms: the first answer comes while the test still
    // waits for the last packet's, late; none is a round trip.
    let p = fake_reflector(Misbehave::Late(300), false, 5);
    let (_, s) = stamp(
        &a,
        &format!("127.0.0.1:{p}"),
        &["count=5", "wait_us=100000", "timeout_ms=100"],
    );
    assert_eq!(
        (s["answered"].as_u64(), s["lost"].as_u64()),
        (Some(0), Some(5)),
        "{s}"
    );
    assert!(s["late"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["rtt_us"].is_null(), "{s}");
    // A wrong HMAC: every answer dropped and counted.
    let p = fake_reflector(Misbehave::WrongHmac, true, 20);
    let (_, s) = stamp(
        &a,
        &format!("127.0.0.1:{p}"),
        &["count=20", "wait_us=1000", "auth=true", "timeout_ms=500"],
    );
    assert_eq!(s["answered"], 0, "{s}");
    assert_eq!(s["bad_hmac"], s["sent"], "{s}");
    // Another sender's packets: counted as foreign, none taken as ours.
    let p = fake_reflector(Misbehave::Strangers, false, 20);
    let (_, s) = stamp(
        &a,
        &format!("127.0.0.1:{p}"),
        &["count=20", "wait_us=1000", "timeout_ms=500"],
    );
    assert_eq!(s["answered"], 0, "{s}");
    assert_eq!(s["foreign"], s["sent"], "{s}");
    // And the agent still runs a test that works.
    let p = fake_reflector(Misbehave::Late(0), false, 10);
    let (_, s) = stamp(&a, &format!("127.0.0.1:{p}"), &["count=10", "wait_us=1000"]);
    assert_eq!(s["answered"], 10, "{s}");
    // Auth without a key on the agent: refused before any traffic.
    let b = AgentProc::start(&["--allow-target", "127.0.0.1"]);
    let t = format!("target=stamp://127.0.0.1:{p}");
    let o = crate::run::run_ab(
        &b,
        &b,
        &["--kind", "stamp", "--set", &t, "--set", "auth=true"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("--stamp-key"), "{out}");
}

/// An agent whose `--stamp` reflector listens on a free port of 127.0.0.1.
fn reflecting_agent(extra: &[&str]) -> (AgentProc, u16) {
    let port = free_udp_port();
    let at = format!("127.0.0.1:{port}");
    let mut args = vec!["--stamp", &at, "--metrics", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let a = AgentProc::start_logged(&args);
    crate::util::logged(&a, &["STAMP reflector on", &at]);
    (a, port)
}

/// stamp-suite as the sender: its JSON summary.
fn suite_sender(port: u16, count: u32, key: Option<&std::path::Path>) -> Value {
    let mut c = Command::new(stamp_suite());
    c.args([
        "-r",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-c",
        &count.to_string(),
    ]);
    c.args(["-d", "2ms", "--output-format", "json"]);
    if let Some(k) = key {
        c.args(["-A", "A", "--hmac-key-file", k.to_str().unwrap()]);
    }
    let o = c.output().expect("stamp-suite runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| {
            panic!(
                "no summary from stamp-suite: {out}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
    last["measurements"].clone()
}

/// A counter of the agent's `/metrics` page.
fn counter(a: &AgentProc, line: &str) -> f64 {
    let (_, page) = http_get(&metrics_at(a), "/metrics");
    page.lines()
        .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line} not in {page}"))
}

#[test]
fn stamp_suite_measures_through_our_reflector_open_and_authenticated() {
    let (a, port) = reflecting_agent(&[]);
    let m = suite_sender(port, 50, None);
    assert_eq!(m["answered_probes"], 50, "{m}");
    assert_eq!(m["unknown_replies"], 0, "{m}");
    assert_eq!(counter(&a, "meshperf_agent_stamp_reflected_total"), 50.0);
    // Never more bytes out than in.
    assert_eq!(
        counter(&a, "meshperf_agent_stamp_reflected_bytes_total"),
        counter(&a, "meshperf_agent_stamp_received_bytes_total")
    );
    let dir = TempDir::new("stamp-refl");
    let key = key_file(&dir, "key", KEY);
    let (b, port) = reflecting_agent(&["--stamp-key", key.to_str().unwrap(), "--stamp-stateful"]);
    let m = suite_sender(port, 50, Some(&key));
    assert_eq!(m["answered_probes"], 50, "{m}");
    // Open-mode packets to an authenticated reflector: dropped, counted.
    let m = suite_sender(port, 5, None);
    assert_eq!(m["answered_probes"], 0, "{m}");
    assert!(
        counter(
            &b,
            "meshperf_agent_stamp_dropped_total{reason=\"malformed\"}"
        ) + counter(
            &b,
            "meshperf_agent_stamp_dropped_total{reason=\"bad_hmac\"}"
        ) >= 5.0
    );
    // A wrong key: every packet dropped as bad_hmac.
    let wrong = key_file(&dir, "wrong", "ffeeddccbbaa99887766554433221100");
    let m = suite_sender(port, 5, Some(&wrong));
    assert_eq!(m["answered_probes"], 0, "{m}");
    assert_eq!(
        counter(
            &b,
            "meshperf_agent_stamp_dropped_total{reason=\"bad_hmac\"}"
        ),
        5.0
    );
}

#[test]
fn our_reflector_keeps_sizes_its_state_and_rate_and_answers_our_sender() {
    // Our sender to our reflector, the CoS TLV asked, EF marked.
    let (a, port) = reflecting_agent(&["--allow-target", "127.0.0.1", "--stamp-stateful"]);
    let (out, s) = stamp(
        &a,
        &format!("127.0.0.1:{port}"),
        &[
            "count=100",
            "wait_us=1000",
            "cos=true",
            "tos=184",
            "pkt_bytes=80",
        ],
    );
    assert_eq!(
        s["answered"].as_u64().unwrap() + s["late"].as_u64().unwrap(),
        100,
        "{out}"
    );
    assert_eq!(s["reflector_ttl"], 64, "{s}");
    assert_eq!(
        (s["reflector_dscp"].as_u64(), s["reflector_ecn"].as_u64()),
        (Some(46), Some(0)),
        "{s}"
    );
    // Stateful: the reflector's own sequence numbers, per session, from 0,
    // whatever the sender's; each answer exactly as long as its packet; a
    // packet shorter than the base packet is not answered.
    let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
    raw.connect(("127.0.0.1", port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for (i, seq) in [100u32, 200, 300].into_iter().enumerate() {
        let mut p = vec![0u8; 44 + i * 10];
        p[..4].copy_from_slice(&seq.to_be_bytes());
        raw.send(&p).unwrap();
        let mut b = [0u8; 2048];
        let n = raw.recv(&mut b).unwrap();
        assert_eq!(n, p.len());
        assert_eq!(u32::from_be_bytes(b[..4].try_into().unwrap()), i as u32);
        assert_eq!(u32::from_be_bytes(b[24..28].try_into().unwrap()), seq);
    }
    raw.send(&[0u8; 20]).unwrap();
    raw.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        raw.recv(&mut [0u8; 64]).is_err(),
        "a short packet was answered"
    );
    assert_eq!(
        counter(
            &a,
            "meshperf_agent_stamp_dropped_total{reason=\"malformed\"}"
        ),
        1.0
    );
    // Stateless (the default): the sender's own sequence number.
    let (c, port) = reflecting_agent(&["--stamp-rate", "5"]);
    let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
    raw.connect(("127.0.0.1", port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut p = vec![0u8; 44];
    p[..4].copy_from_slice(&77u32.to_be_bytes());
    raw.send(&p).unwrap();
    let mut b = [0u8; 64];
    assert_eq!(raw.recv(&mut b).unwrap(), 44);
    assert_eq!(u32::from_be_bytes(b[..4].try_into().unwrap()), 77);
    // --stamp-rate 5: 50 packets at once get the bucket's 4 tokens left
    // and what it gains (5 a second) while they go.
    let t = std::time::Instant::now();
    for _ in 0..50 {
        raw.send(&p).unwrap();
    }
    let most = 4.0 + 5.0 * t.elapsed().as_secs_f64() + 1.0;
    let mut answered = 0;
    while raw.recv(&mut b).is_ok() {
        answered += 1;
    }
    assert!(
        answered as f64 <= most,
        "{answered} answers past --stamp-rate 5"
    );
    let dropped = counter(&c, "meshperf_agent_stamp_dropped_total{reason=\"rate\"}");
    assert_eq!(dropped as usize + answered, 50);
}

/// Wireshark's TWAMP-test dissector (STAMP's unauthenticated packets are
/// TWAMP-Light's) reads what our sender and our reflector put on the wire,
/// with no malformed field: 4 packets each way captured on loopback, decoded
/// live.
#[test]
fn tshark_reads_our_packets_as_twamp_test_without_malformed_fields() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::util::skipped("capturing on lo needs root");
        return;
    }
    assert!(
        Command::new("tshark").arg("--version").output().is_ok(),
        "tshark is missing: run scripts/setup.sh --test (it installs Debian's tshark)"
    );
    let (a, port) = reflecting_agent(&["--allow-target", "127.0.0.1"]);
    // Datagrams to `marker` show when the capture has begun.
    let marker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mport = marker.local_addr().unwrap().port();
    let mut cap = Proc(
        Command::new("tshark")
            .args([
                "-i",
                "lo",
                "-l",
                "-f",
                &format!("udp port {port} or udp port {mport}"),
            ])
            .args([
                "-d",
                &format!("udp.port=={port},twamp.test"),
                "-T",
                "fields",
                "-E",
                "separator=;",
            ])
            .args([
                "-e",
                "udp.srcport",
                "-e",
                "udp.dstport",
                "-e",
                "twamp.test.seq_number",
            ])
            .args([
                "-e",
                "twamp.test.sender_seq_number",
                "-e",
                "twamp.test.sender_ttl",
            ])
            .args(["-e", "_ws.malformed", "-e", "_ws.expert"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tshark starts"),
    );
    let out = cap.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    let t = std::time::Instant::now();
    loop {
        marker.send_to(b"m", ("127.0.0.1", mport)).unwrap();
        if rx.recv_timeout(Duration::from_millis(200)).is_ok() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "tshark captured nothing in 30 s"
        );
    }
    let (_, s) = stamp(
        &a,
        &format!("127.0.0.1:{port}"),
        &["count=4", "wait_us=1000"],
    );
    assert_eq!(s["answered"], 4, "{s}");
    let mut rows: Vec<Vec<String>> = Vec::new();
    while rows.len() < 8 {
        let l = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("tshark decoded {} of 8 packets: {rows:?}", rows.len()));
        let r: Vec<String> = l.split(';').map(str::to_string).collect();
        if r.len() == 7 && (r[0] == port.to_string() || r[1] == port.to_string()) {
            rows.push(r);
        }
    }
    let (mut sent, mut answers) = (Vec::new(), Vec::new());
    for r in &rows {
        assert!(
            r[5].is_empty() && r[6].is_empty(),
            "malformed or expert info: {rows:?}"
        );
        if r[0] == port.to_string() {
            // The reflector's answer: the sender's number echoed, the TTL it arrived with.
            answers.push(r[3].clone());
            assert_eq!(r[4], "64", "{rows:?}");
        } else {
            sent.push(r[2].clone());
        }
    }
    sent.sort();
    answers.sort();
    assert_eq!(sent, ["0", "1", "2", "3"], "{rows:?}");
    assert_eq!(answers, sent, "{rows:?}");
}
