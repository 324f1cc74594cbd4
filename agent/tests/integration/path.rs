//! `path` between real agents on loopback: what loopback can show (the
//! peer at hop 1 each way, the marks kept, the loopback MTU, bad
//! parameters refused before any traffic). The routers, the MTU step, the
//! rewritten DSCP and the silent hop are tests/netns/path.sh's.

use crate::run::run_ok;
use crate::util::{run_pair, run_pair_at, AgentProc};
use serde_json::{json, Value};

/// The loopback MTU as the kernel gives it to a route (`IP_MTU` is capped
/// at the largest IP datagram, 65535).
pub(crate) fn lo_mtu() -> u64 {
    let m: u64 = std::fs::read_to_string("/sys/class/net/lo/mtu")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    m.min(65535)
}

/// One direction over loopback: the peer answers at hop 1 to every probe,
/// the MTU search ends at `bytes`, every mark arrives as sent.
fn check_loopback(d: &Value, probes: u64, marks: usize, bytes: u64, what: &str) {
    assert_eq!(d["end"], "peer", "{what}: {d}");
    assert_eq!(d["peer_hop"], 1, "{what}: {d}");
    let hops = d["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 1, "{what}: {d}");
    let h = &hops[0];
    assert_eq!(h["peer"], true, "{what}: {d}");
    assert_eq!(h["silent"], false, "{what}: {d}");
    assert_eq!(
        (h["sent"].as_u64(), h["answered"].as_u64()),
        (Some(probes), Some(probes)),
        "{what}: {d}"
    );
    assert_eq!(
        h["rtt_us"].as_array().unwrap().len() as u64,
        probes,
        "{what}: {d}"
    );
    assert!(
        h["rtt_us"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.as_f64().unwrap() > 0.0),
        "{what}: {d}"
    );
    assert_eq!(h["addr"], d["to"], "{what}: {d}");
    assert_eq!(d["mtu"]["bytes"], bytes, "{what}: {d}");
    assert!(
        d["mtu"]["lowered_by"].is_null() && d["mtu"]["black_hole_above"].is_null(),
        "{what}: {d}"
    );
    let m = d["marks"].as_array().unwrap();
    assert_eq!(m.len(), marks, "{what}: {d}");
    for x in m {
        assert_eq!(x["verdict"], "kept", "{what}: {x}");
        assert_eq!(x["got_dscp"], x["dscp"], "{what}: {x}");
        assert_eq!(x["got_ecn"], x["ecn"], "{what}: {x}");
        assert_eq!(x["received"], x["sent"], "{what}: {x}");
    }
}

#[test]
fn a_trace_over_loopback_finds_the_peer_at_hop_1_keeps_the_marks_and_the_mtu_of_lo() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"max_hops": 4, "probes": 3, "wait_ms": 200, "dscp": "0,10,46"});
    let (cl, sv) = run_pair(&mut cb, &mut ca, 1, "path", p);
    assert_eq!(cl["type"], "result", "{cl}");
    assert_eq!(sv["type"], "result", "{sv}");
    let s = &cl["summary"];
    // Three DSCP values, each with the four ECN codepoints.
    check_loopback(&s["forth"], 3, 12, lo_mtu(), "forth");
    check_loopback(&s["back"], 3, 12, lo_mtu(), "back");
    assert_eq!(s["forth"]["mtu"]["local"], lo_mtu(), "{s}");
    assert_eq!(s["asymmetric"], false, "{s}");
    assert_eq!(s["rtt_us"]["n"], 3, "{s}");
    // The serving agent's own summary is the direction it traced.
    assert_eq!(sv["summary"]["back"], s["back"], "{sv}");
    // Each side's progress: the driving agent's direction is the first
    // half of the test, the serving agent's the second.
    let fractions = |c: &crate::util::Ctl| -> Vec<f64> {
        c.events
            .iter()
            .filter(|e| e["type"] == "progress" && e["test_id"] == 1)
            .map(|e| e["fraction"].as_f64().unwrap())
            .collect()
    };
    let (fb, fa) = (fractions(&cb), fractions(&ca));
    assert!(
        !fb.is_empty() && fb.iter().all(|&f| f > 0.0 && f <= 0.5),
        "{fb:?}"
    );
    assert_eq!(fb.last(), Some(&0.5), "{fb:?}");
    assert!(
        !fa.is_empty() && fa.iter().all(|&f| f > 0.5 && f <= 1.0),
        "{fa:?}"
    );
    assert_eq!(fa.last(), Some(&1.0), "{fa:?}");
}

/// `names`: off by default (no hop carries a name); asked, each side names
/// its own direction's hops through its resolver, and loopback's peer hop
/// is localhost (the hosts file) each way.
#[test]
fn hop_names_are_looked_up_each_way_only_when_asked() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    for (id, names) in [(1, false), (2, true)] {
        let p = json!({"max_hops": 2, "probes": 1, "wait_ms": 200, "mtu": false, "dscp": "", "names": names});
        let (cl, _) = run_pair(&mut cb, &mut ca, id, "path", p);
        assert_eq!(cl["type"], "result", "{cl}");
        for dir in ["forth", "back"] {
            let h = &cl["summary"][dir]["hops"][0];
            assert_eq!(h["peer"], true, "{h}");
            if names {
                assert_eq!(h["name"], "localhost", "{dir}: {h}");
            } else {
                assert!(h.get("name").is_none(), "{dir}: {h}");
            }
        }
    }
}

#[test]
fn a_trace_over_ipv6_loopback_uses_the_hop_limit_and_traffic_class() {
    let (a, b) = (
        AgentProc::start(&["--listen", "[::1]:0"]),
        AgentProc::start(&["--listen", "[::1]:0"]),
    );
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"max_hops": 2, "probes": 2, "wait_ms": 200, "dscp": "46"});
    let (cl, _) = run_pair_at(&mut cb, &mut ca, 1, "path", p, "::1");
    assert_eq!(cl["type"], "result", "{cl}");
    // No 65535 cap here: an IPv6 datagram's payload length does not count
    // its 40-byte header, so loopback's whole MTU (65536) fits.
    let lo: u64 = std::fs::read_to_string("/sys/class/net/lo/mtu")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for dir in ["forth", "back"] {
        let d = &cl["summary"][dir];
        assert_eq!(d["to"], "::1", "{d}");
        assert_eq!(d["peer_hop"], 1, "{d}");
        assert_eq!(d["mtu"]["bytes"], lo, "{d}");
        assert_eq!(d["mtu"]["local"], lo, "{d}");
        let m = d["marks"].as_array().unwrap();
        assert_eq!(m.len(), 4, "{d}");
        assert!(m.iter().all(|x| x["verdict"] == "kept"), "{d}");
    }
}

#[test]
fn bad_path_params_are_refused_before_traffic_and_the_agent_keeps_serving() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    for (params, name) in [
        (json!({"first_ttl": 0}), "first_ttl"),
        (json!({"max_hops": 65}), "max_hops"),
        (json!({"max_hops": 0}), "max_hops"),
        (json!({"dscp": "10,64"}), "dscp"),
        (json!({"dscp": "ef"}), "dscp"),
        (json!({"first_ttl": 9, "max_hops": 8}), "first_ttl"),
        (json!({"probes": 0}), "probes"),
        (json!({"wait_ms": 5}), "wait_ms"),
        (json!({"ttl": 3}), "ttl"),
    ] {
        for (ty, c) in [("prepare", &mut ca), ("start", &mut cb)] {
            let r = c.request(json!({"type": ty, "test_id": 9, "step": 0, "kind": "path",
                "params": params, "peer": {"host": "127.0.0.1", "port": 9, "key": "00".repeat(16)}}));
            assert_eq!(r["type"], "error", "{params}: {r}");
            assert_eq!(r["code"], "bad_params", "{r}");
            let msg = r["message"].as_str().unwrap();
            assert!(msg.starts_with(&format!("{name}: ")), "{r}");
            assert!(!msg.contains('\n'), "one line: {r}");
        }
    }
    // The agents' limits bound the probes: a 2 s duration limit cannot
    // wait for one silent hop of 3 probes x 500 ms each way.
    let c = AgentProc::start(&["--max-duration", "2"]);
    let r = c
        .connect()
        .request(json!({"type": "prepare", "test_id": 9, "step": 0,
        "kind": "path", "params": {"probes": 3, "wait_ms": 500}}));
    assert_eq!(r["code"], "bad_params", "{r}");
    assert!(
        r["message"].as_str().unwrap().starts_with("wait_ms: "),
        "{r}"
    );
    // Both agents still serve.
    let (cl, sv) = run_pair(
        &mut cb,
        &mut ca,
        10,
        "path",
        json!({"max_hops": 2, "wait_ms": 100, "dscp": "", "mtu": false}),
    );
    assert_eq!(cl["type"], "result", "{cl}");
    assert_eq!(sv["type"], "result", "{sv}");
    assert_eq!(cl["summary"]["forth"]["peer_hop"], 1, "{cl}");
}

#[test]
fn an_agent_tracing_to_itself_finds_itself_at_hop_1() {
    let a = AgentProc::start(&[]);
    let mut ca = a.connect();
    let mut cb = a.connect();
    let p = json!({"max_hops": 3, "probes": 1, "wait_ms": 200, "dscp": "0", "ecn": false});
    let (cl, sv) = run_pair(&mut cb, &mut ca, 1, "path", p);
    assert_eq!(cl["type"], "result", "{cl}");
    assert_eq!(sv["type"], "result", "{sv}");
    check_loopback(&cl["summary"]["forth"], 1, 1, lo_mtu(), "forth");
    check_loopback(&cl["summary"]["back"], 1, 1, lo_mtu(), "back");
}

#[test]
fn meshperf_run_prints_both_directions_the_mtu_and_the_marks_and_keeps_them_in_the_json() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, r) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "path",
            "--set",
            "max_hops=3",
            "--set",
            "wait_ms=200",
            "--set",
            "dscp=46",
        ],
    );
    assert!(
        out.contains("forth 127.0.0.1 -> 127.0.0.1: peer at hop 1"),
        "{out}"
    );
    assert!(
        out.contains("back  127.0.0.1 -> 127.0.0.1: peer at hop 1"),
        "{out}"
    );
    assert!(out.contains("127.0.0.1 (peer)"), "{out}");
    assert!(
        out.contains(&format!("path MTU forth: {} bytes", lo_mtu())),
        "{out}"
    );
    assert!(out.contains("marks forth: 4 of 4 kept"), "{out}");
    assert!(out.contains("marks back: 4 of 4 kept"), "{out}");
    let s = &r.steps[0].summary;
    assert_eq!(s["forth"]["peer_hop"], 1, "{s}");
    assert_eq!(s["back"]["marks"].as_array().unwrap().len(), 4, "{s}");
}

#[test]
fn the_agents_udp_rate_cap_paces_the_probes() {
    // B drives under --max-udp-rate 20k (2 500 bytes/s, a 64 KiB burst):
    // its trace (3 x 92 bytes), the loopback MTU probe (65535) and 8 marks
    // x 3 (92 each) are 68 019 bytes, 2 483 past the burst, so its trace
    // cannot end sooner than 0.99 s after it starts, however fast the
    // machine (uncapped it takes milliseconds); a load only adds to it.
    let a = AgentProc::start(&[]);
    let b = AgentProc::start(&["--max-udp-rate", "20k"]);
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"max_hops": 2, "probes": 3, "wait_ms": 500, "dscp": "0,46"});
    let t0 = std::time::Instant::now();
    let (cl, _) = run_pair(&mut cb, &mut ca, 1, "path", p);
    let took = t0.elapsed();
    assert_eq!(cl["type"], "result", "{cl}");
    let s = &cl["summary"];
    assert!(took.as_secs_f64() >= 0.99, "{took:?}: {s}");
    assert!(s["back"]["rate_capped_us"].is_null(), "A has no cap: {s}");
    assert_eq!(s["forth"]["marks"].as_array().unwrap().len(), 8, "{s}");
    assert!(
        s["forth"]["marks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["verdict"] == "kept"),
        "{s}"
    );
}

/// `meshperf run --matrix --kind path --metric hops`: both ordered pairs
/// run, each the peer at hop 1, the table of hops to the peer; the other
/// path figures read from the same file (lo's MTU, no mark changed).
#[test]
fn a_path_matrix_prints_hops_to_the_peer_and_its_file_has_the_mtu_and_marks() {
    use meshperf_protocol::matrix::Metric;
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let json = crate::run::tmp("path-matrix.json");
    let (ua, ub) = (
        format!("http://{}/#token={}", a.addr(), a.token),
        format!("http://{}/#token={}", b.addr(), b.token),
    );
    let o = crate::run::run(&[
        "--agent",
        &ua,
        "--agent",
        &ub,
        "--matrix",
        "--kind",
        "path",
        "--metric",
        "hops",
        "--set",
        "max_hops=3",
        "--set",
        "wait_ms=200",
        "--set",
        "dscp=46",
        "--json",
        json.to_str().unwrap(),
    ]);
    let out = crate::run::text(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        crate::run::text(&o.stderr)
    );
    assert!(
        out.contains("matrix: path hops to the peer, hops; rows drive, columns serve"),
        "{out}"
    );
    assert!(out.contains("(hops to the peer, hops)"), "{out}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("   A ") || l.starts_with("   B "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows, [["A", "-", "1"], ["B", "1", "-"]], "{out}");
    let r = meshperf_protocol::result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 2);
    for s in &r.steps {
        let p = s.pair.unwrap();
        assert_eq!(
            Metric::PathMtu.cells(s),
            [(p.client, p.server, Some(lo_mtu() as f64))]
        );
        assert_eq!(
            Metric::MarksChanged.cells(s),
            [(p.client, p.server, Some(0.0))]
        );
    }
}
