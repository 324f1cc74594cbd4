//! Ground truth in network namespaces, driven by `tests/netns/run.sh`, which
//! builds two end namespaces joined through a router namespace, starts one
//! agent in each and runs this test *inside the router namespace* (so the
//! controller's own WebSocket traffic is never forwarded and never touched by
//! the router's rules).
//!
//! Checks: under `tc tbf rate 50mbit` the measured UDP receive rate is within
//! 2% of the goodput tbf allows; with an `iptables -m statistic` DROP rule
//! meshperf's lost count equals the rule's packet counter exactly; and a
//! `tcp_stream` through a lossy router counts at least the packets the rule
//! dropped as retransmits, and at most the sending namespace's own count;
//! a zero-copy `tcp_stream` whose sender's namespace has almost no option
//! memory (`net.core.optmem_max`, per namespace) meets ENOBUFS and still
//! moves every byte, every send completed.
//!
//! `test = false` in Cargo.toml: a plain `cargo test` neither runs it nor
//! counts it as passed; `run.sh` asks for it by name.

use serde_json::{json, Value};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;
use tungstenite::{Message, WebSocket};

struct Agent {
    host: String,
    ws: WebSocket<TcpStream>,
    id: u64,
}

impl Agent {
    /// Connects to a ready URL `http://HOST:PORT/#token=T` and authenticates.
    fn connect(url: &str) -> Agent {
        let rest = url.trim_start_matches("http://");
        let (hostport, token) = rest.split_once("/#token=").expect("URL with token");
        let host = hostport.rsplit_once(':').unwrap().0.to_string();
        let s = TcpStream::connect(hostport).expect("agent reachable");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let origin = format!("http://{hostport}");
        let mut req = tungstenite::client::IntoClientRequest::into_client_request(format!(
            "ws://{hostport}/ws"
        ))
        .unwrap();
        req.headers_mut().insert("origin", origin.parse().unwrap());
        let (ws, _) = tungstenite::client::client(req, s).expect("websocket");
        let mut a = Agent { host, ws, id: 0 };
        assert_eq!(a.next()["type"], "hello");
        let r = a.request(json!({"type": "auth", "token": token}));
        assert_eq!(r["type"], "auth_ok", "{r}");
        a
    }

    fn next(&mut self) -> Value {
        loop {
            if let Message::Text(t) = self.ws.read().expect("agent message") {
                return serde_json::from_str(t.as_str()).unwrap();
            }
        }
    }

    fn request(&mut self, mut v: Value) -> Value {
        self.id += 1;
        v["id"] = json!(self.id);
        self.ws.send(Message::text(v.to_string())).unwrap();
        loop {
            let m = self.next();
            if m["id"] == json!(self.id) {
                return m;
            }
        }
    }

    fn wait_end(&mut self, test_id: u32) -> Value {
        loop {
            let m = self.next();
            if (m["type"] == "result" || m["type"] == "error") && m["test_id"] == json!(test_id) {
                return m;
            }
        }
    }
}

/// `server` prepares, `client` runs; returns the client's summary.
fn run(client: &mut Agent, server: &mut Agent, id: u32, kind: &str, params: Value) -> Value {
    run_both(client, server, id, kind, params).0
}

/// [`run`], returning both sides' summaries (client, server).
fn run_both(
    client: &mut Agent,
    server: &mut Agent,
    id: u32,
    kind: &str,
    params: Value,
) -> (Value, Value) {
    let prep = server.request(
        json!({"type": "prepare", "test_id": id, "step": 0, "kind": kind, "params": params}),
    );
    assert_eq!(prep["type"], "prepared", "{prep}");
    let start = client.request(
        json!({"type": "start", "test_id": id, "step": 0, "kind": kind,
        "params": params, "peer": {"host": server.host, "port": prep["port"], "key": prep["key"]}}),
    );
    assert_eq!(start["type"], "started", "{start}");
    let (c, s) = (client.wait_end(id), server.wait_end(id));
    assert_eq!(c["type"], "result", "{c}");
    assert_eq!(s["type"], "result", "{s}");
    (c["summary"].clone(), s["summary"].clone())
}

fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect(args[0]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Packet counter of the first DROP rule in FORWARD.
/// UDP datagrams namespace `ns`'s sockets had no buffer room for (the
/// kernel's RcvbufErrors in /proc/net/snmp, per network namespace).
fn rcvbuf_errors(ns: &str) -> u64 {
    snmp(ns, "Udp:", "RcvbufErrors")
}

/// Counter `name` of the `proto` lines ("Udp:", "Tcp:") of namespace `ns`'s
/// /proc/net/snmp.
fn snmp(ns: &str, proto: &str, name: &str) -> u64 {
    let t = sh(&["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"]);
    let rows: Vec<Vec<&str>> = t
        .lines()
        .filter(|l| l.starts_with(proto))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let at = rows[0]
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("{name} in /proc/net/snmp"));
    rows[1][at].parse().expect("a count")
}

/// TCP segments namespace `ns` retransmitted (RetransSegs in /proc/net/snmp).
fn tcp_retrans_segs(ns: &str) -> u64 {
    snmp(ns, "Tcp:", "RetransSegs")
}

fn drop_count() -> u64 {
    drop_counters().0
}

/// Packet and byte counters of the first DROP rule in FORWARD.
fn drop_counters() -> (u64, u64) {
    let t = sh(&["iptables", "-L", "FORWARD", "-v", "-x", "-n"]);
    t.lines()
        .find(|l| l.contains("DROP"))
        .and_then(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse().ok());
            Some((f.next()??, f.next()??))
        })
        .expect("a DROP rule in FORWARD")
}

/// Each side names the veth its traffic left by (A's end of the A-R pair,
/// B's of R-B), with the speed the kernel gives a veth (10 Gbit/s) and
/// its MTU; the line set against the links says the 50 Mbit/s tbf left the
/// link far from full (issue 26 part 1).
fn links_are_the_veths(client: &Value, server: &Value, from_a: &str, to_b: &str) {
    // The router holds the ...a1 and ...b1 ends; the agents the ...0 ends.
    let end = |router_dev: &str| format!("{}0", &router_dev[..router_dev.len() - 1]);
    for (side, dev) in [(client, end(from_a)), (server, end(to_b))] {
        assert_eq!(
            side["link"],
            json!({"interface": dev, "speed_mbps": 10000, "mtu": 1500}),
            "{side}"
        );
    }
    let step: meshperf_protocol::result::StepResult = serde_json::from_value(json!({
        "index": 0, "kind": "udp_stream", "summary": client,
        "sides": {"client": client, "server": server}
    }))
    .unwrap();
    let line = meshperf_protocol::link::line(&step).expect("a line for two veths");
    println!("{line}");
    assert!(
        line.contains(&format!(
            "of the 10.00 Gbit/s the 10 Gbit/s link at the driving agent ({}) can carry: the limit is elsewhere",
            end(from_a)
        )),
        "{line}"
    );
}

#[test]
fn netns_ground_truth() {
    let a = std::env::var("MESHPERF_NETNS_A")
        .expect("MESHPERF_NETNS_A: run tests/netns/run.sh as root");
    let b = std::env::var("MESHPERF_NETNS_B")
        .expect("MESHPERF_NETNS_B: run tests/netns/run.sh as root");
    let to_b = std::env::var("MESHPERF_NETNS_DEV_B").expect("router's device towards B");
    let from_a = std::env::var("MESHPERF_NETNS_DEV_A").expect("router's device towards A");
    let ns_a = std::env::var("MESHPERF_NETNS_NS_A").expect("A's network namespace");
    let ns_b = std::env::var("MESHPERF_NETNS_NS_B").expect("B's network namespace");
    let (mut a, mut b) = (Agent::connect(&a), Agent::connect(&b));

    // 1. Rate: tbf on the router's egress towards B. The sender offers about
    // twice the rate, so tbf's queue (200 ms deep) fills within a few tens of
    // milliseconds and stays full: the bottleneck never idles, even when the
    // sending thread is preempted for tens of milliseconds on a busy VM, and
    // the receiver's first-to-last rate is then tbf's rate, not the sender's.
    sh(&[
        "tc", "qdisc", "add", "dev", &to_b, "root", "tbf", "rate", "50mbit", "burst", "64kb",
        "latency", "200ms",
    ]);
    let pkt = 1400u64;
    let (s, served) = run_both(
        &mut a,
        &mut b,
        1,
        "udp_stream",
        json!({"pkt_bytes": pkt, "count": 20000, "wait_us": 100}),
    );
    sh(&["tc", "qdisc", "del", "dev", &to_b, "root"]);
    links_are_the_veths(&s, &served, &from_a, &to_b);
    // tbf counts whole Ethernet frames: payload + UDP 8 + IPv4 20 + Ethernet 14.
    // Between the first and the last packet it passes its rate times the
    // time, plus the bucket it starts with (64 KiB; deep enough that a late
    // timer on this VM does not spill tokens).
    let t = s["recv_seconds"].as_f64().unwrap();
    let frames = 50e6 / 8.0 * t + 65536.0;
    let expected = frames * 8.0 / t * pkt as f64 / (pkt + 42) as f64;
    let got = s["recv_bits_per_second"].as_f64().unwrap();
    assert!(
        s["lost"].as_u64().unwrap() > 1000,
        "tbf should drop the excess: {s}"
    );
    println!(
        "tbf 50mbit: recv {got:.0} bit/s, expected goodput {expected:.0} ({:+.2}%)",
        (got / expected - 1.0) * 100.0
    );
    assert!((got / expected - 1.0).abs() < 0.02, "{s}");

    // 2. Loss: the kernel's DROP counter is the truth. Only this flow's data
    // datagrams (IP length pkt + 28) from A match, so hellos are never dropped.
    let len = (pkt + 28).to_string();
    let rule = [
        "FORWARD",
        "-i",
        &from_a,
        "-p",
        "udp",
        "-m",
        "length",
        "--length",
        &len,
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        "0.05",
        "-j",
        "DROP",
    ];
    sh(&[&["iptables", "-A"][..], &rule[..]].concat());
    // The receiver's own kernel counts what its socket buffer could not
    // take (a receiving thread held off the CPU on a loaded machine): the
    // loss is the DROP rule's count plus those, both the kernel's figures.
    let overflows_before = rcvbuf_errors(&ns_b);
    let s = run(
        &mut a,
        &mut b,
        2,
        "udp_stream",
        json!({"pkt_bytes": pkt, "count": 20000, "wait_us": 20}),
    );
    let dropped = drop_count();
    let overflowed = rcvbuf_errors(&ns_b) - overflows_before;
    sh(&[&["iptables", "-D"][..], &rule[..]].concat());
    println!(
        "iptables dropped {dropped}, B's socket overflowed {overflowed}, meshperf lost {}",
        s["lost"]
    );
    assert!(dropped > 500, "{dropped}");
    assert_eq!(s["lost"].as_u64(), Some(dropped + overflowed), "{s}");

    // 3. TCP through a lossy router retransmits what the router dropped.
    // The rule drops 10% of A's data packets (IP length 100 and more: no
    // bare ACK, SYN or FIN) while the connection has carried less than
    // `early` bytes from A. The sender's figure is read when its last write
    // is taken, with at most its send buffer not yet acknowledged (`sndbuf`:
    // the autotuning ceiling, or twice wmem_max if set by hand): every byte
    // below 16 MiB - sndbuf has arrived by then, so every packet the rule
    // dropped has been sent again and counted. The router forwards GSO
    // packets (up to 64 KiB, one header for the lot: 12 to 29 of them
    // dropped in a run here, against 389 to 609 segments retransmitted), so
    // a dropped packet of L bytes held at least L / MTU segments (a whole
    // segment on the wire is at most the MTU) and at least one. So
    // meshperf's retransmits are at least the rule's packets and its bytes
    // over the MTU, and at most A's kernel-wide count of retransmitted
    // segments over the test (A's other connections only add to that).
    let total = 256 * 65536u64;
    let sysctl = |k: &str| {
        let t = sh(&["ip", "netns", "exec", &ns_a, "sysctl", "-n", k]);
        t.split_whitespace().last().unwrap().parse::<u64>().unwrap()
    };
    let sndbuf = sysctl("net.ipv4.tcp_wmem").max(2 * sysctl("net.core.wmem_max"));
    // 1 MiB for a write that overshoots the buffer and for the headers.
    let early = total.saturating_sub(sndbuf + (1 << 20));
    assert!(
        early >= 4 << 20,
        "a send buffer of {sndbuf} bytes leaves {early} of the 16 MiB to drop from: lower tcp_wmem"
    );
    let connbytes = format!("0:{early}");
    let rule = [
        "FORWARD",
        "-i",
        &from_a,
        "-p",
        "tcp",
        "-m",
        "length",
        "--length",
        "100:65535",
        "-m",
        "connbytes",
        "--connbytes",
        &connbytes,
        "--connbytes-dir",
        "original",
        "--connbytes-mode",
        "bytes",
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        "0.1",
        "-j",
        "DROP",
    ];
    sh(&[&["iptables", "-A"][..], &rule[..]].concat());
    let retrans_before = tcp_retrans_segs(&ns_a);
    let s = run(
        &mut a,
        &mut b,
        3,
        "tcp_stream",
        json!({"msg_bytes": 65536, "count": 256}),
    );
    let (dropped, dropped_bytes) = drop_counters();
    let retrans_a = tcp_retrans_segs(&ns_a) - retrans_before;
    sh(&[&["iptables", "-D"][..], &rule[..]].concat());
    let mtu: u64 = std::fs::read_to_string(format!("/sys/class/net/{from_a}/mtu"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let least = dropped.max(dropped_bytes.div_ceil(mtu));
    let retransmits = s["retransmits"].as_u64().unwrap();
    println!(
        "tcp_stream through 10% loss: iptables dropped {dropped} data packets ({dropped_bytes} bytes: at least {least} segments of MTU {mtu}), meshperf retransmits {retransmits}, A's kernel retransmitted {retrans_a} segments"
    );
    assert!(dropped > 0, "the rule dropped nothing: no test: {s}");
    assert!(
        (least..=retrans_a).contains(&retransmits),
        "retransmits {retransmits} not between the {least} segments dropped and A's {retrans_a}: {s}"
    );

    // 4. Zero-copy under option-memory pressure: 1000 bytes of optmem in
    // A's namespace hold about one pending zero-copy send (an skb's
    // truesize), so the sender meets ENOBUFS, reads completions and sends
    // again; no byte may be lost and every send must complete.
    let optmem = sh(&[
        "ip",
        "netns",
        "exec",
        &ns_a,
        "sysctl",
        "-n",
        "net.core.optmem_max",
    ]);
    sh(&[
        "ip",
        "netns",
        "exec",
        &ns_a,
        "sysctl",
        "-qw",
        "net.core.optmem_max=1000",
    ]);
    let (msg, count) = (65536u64, 2000u64);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(
            &mut a,
            &mut b,
            4,
            "tcp_stream",
            json!({"msg_bytes": msg, "count": count, "streams": 2, "zerocopy": true}),
        )
    }));
    let restore = format!("net.core.optmem_max={}", optmem.trim());
    sh(&["ip", "netns", "exec", &ns_a, "sysctl", "-qw", &restore]);
    let s = r.unwrap_or_else(|e| std::panic::resume_unwind(e));
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("no {k}: {s}"));
    println!(
        "zero-copy with optmem_max 1000: {} sends, {} zero-copy, {} copied, {} made again after ENOBUFS",
        n("zerocopy_sends"),
        n("zerocopy_zero_copied"),
        n("zerocopy_copied"),
        n("zerocopy_enobufs")
    );
    assert_eq!(n("sent_bytes"), 2 * msg * count, "{s}");
    assert_eq!(
        n("peer_bytes"),
        2 * msg * count,
        "the receiver's count: {s}"
    );
    assert_eq!(
        n("zerocopy_zero_copied") + n("zerocopy_copied"),
        n("zerocopy_sends"),
        "every send completed: {s}"
    );
    assert!(n("zerocopy_enobufs") > 0, "no ENOBUFS met: {s}");
}
