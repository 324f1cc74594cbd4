//! iperf3 both ways with the real iperf3 (Debian's 3.12, /usr/bin/iperf3):
//! `meshperf run --json-format iperf3` against `iperf3 -J`'s own keys, and
//! `meshperf agent --iperf3` answering the unmodified iperf3 client.

use crate::run::{run, tmp};
use crate::util::{skipped, AgentProc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub(crate) const IPERF3: &str = "/usr/bin/iperf3";

/// Whether the real iperf3 is here (else the test says it was skipped).
pub(crate) fn have_iperf3() -> bool {
    let ok = std::path::Path::new(IPERF3).exists();
    if !ok {
        skipped("no /usr/bin/iperf3 (Debian's iperf3 package)");
    }
    ok
}

/// A free TCP port on loopback (bound and let go).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `iperf3 -c 127.0.0.1 -p PORT ARGS`.
pub(crate) fn client(port: u16, args: &[&str]) -> Output {
    Command::new(IPERF3)
        .args(["-c", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("spawn iperf3")
}

/// `iperf3 -J` of `args` against a real `iperf3 -s -1` (one test).
fn real_iperf3(args: &[&str]) -> Value {
    let port = free_port();
    let mut s = Command::new(IPERF3)
        .args(["-s", "-1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn iperf3 -s");
    let mut doc = Value::Null;
    for _ in 0..50 {
        let o = client(port, &[args, &["-J"]].concat());
        // iperf3 -J exits 0 with an "error" key when it could not connect.
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        if o.status.success() && v.get("error").is_none() {
            doc = v;
            break;
        }
        // Not listening yet.
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = s.kill();
    let _ = s.wait();
    assert!(doc.is_object(), "iperf3 -s never answered");
    doc
}

/// Every key path of `v` (`end.streams[].sender.bytes`).
fn keys(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.insert(p.clone());
                keys(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                keys(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn key_set(v: &Value) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    keys(v, "", &mut s);
    s
}

/// The fields `--json-format iperf3` claims for every stream test, and
/// those of TCP and of UDP (docs/formats.md lists them).
const CLAIMED: &[&str] = &[
    "start.connected[].socket",
    "start.connected[].local_host",
    "start.connected[].remote_host",
    "start.version",
    "start.system_info",
    "start.timestamp.time",
    "start.timestamp.timesecs",
    "start.test_start.protocol",
    "start.test_start.num_streams",
    "start.test_start.blksize",
    "start.test_start.duration",
    "start.test_start.bytes",
    "start.test_start.reverse",
    "intervals[].streams[].socket",
    "intervals[].streams[].start",
    "intervals[].streams[].end",
    "intervals[].streams[].seconds",
    "intervals[].streams[].bytes",
    "intervals[].streams[].bits_per_second",
    "intervals[].sum.bytes",
    "intervals[].sum.bits_per_second",
    "end.sum_sent.bytes",
    "end.sum_sent.seconds",
    "end.sum_sent.bits_per_second",
    "end.sum_received.bytes",
    "end.sum_received.seconds",
    "end.sum_received.bits_per_second",
    "end.cpu_utilization_percent.host_total",
    "end.cpu_utilization_percent.remote_total",
];
const CLAIMED_TCP: &[&str] = &[
    "start.tcp_mss_default",
    "end.streams[].sender.bytes",
    "end.streams[].sender.retransmits",
    "end.streams[].receiver.bytes",
    "end.sum_sent.retransmits",
    "end.sender_tcp_congestion",
    "end.receiver_tcp_congestion",
];
const CLAIMED_UDP: &[&str] = &[
    "intervals[].sum.packets",
    "end.streams[].udp.bytes",
    "end.streams[].udp.jitter_ms",
    "end.streams[].udp.lost_packets",
    "end.streams[].udp.packets",
    "end.sum.jitter_ms",
    "end.sum.lost_packets",
    "end.sum.packets",
    "end.sum.lost_percent",
];

/// Our document has every claimed field and no key iperf3's lacks.
fn same_keys(ours: &Value, theirs: &Value, claimed: &[&[&str]]) {
    let (o, t) = (key_set(ours), key_set(theirs));
    let extra: Vec<&String> = o.difference(&t).collect();
    assert!(extra.is_empty(), "keys iperf3 -J does not have: {extra:?}");
    for k in claimed.iter().flat_map(|c| c.iter()) {
        assert!(o.contains(*k), "claimed {k} missing from ours");
        assert!(t.contains(*k), "claimed {k} missing from iperf3's");
    }
}

/// The number after `word` in the line of `text` that starts with `start`.
fn figure(text: &str, start: &str, word: &str) -> f64 {
    let l = text
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"));
    let mut w = l.split_whitespace();
    w.find(|x| *x == word);
    w.next().unwrap().parse().unwrap()
}

pub(crate) fn f(v: &Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| match k.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[k],
        })
        .as_f64()
        .unwrap_or_else(|| panic!("no number at {path}"))
}

#[test]
fn json_format_iperf3_has_iperf3_s_keys_and_meshperf_s_figures() {
    if !have_iperf3() {
        return;
    }
    let a = AgentProc::start(&[]);
    let url = format!("http://{}/#token={}", a.addr(), a.token);
    // TCP, two streams, on stdout as iperf3 -J.
    let o = run(&[
        "--agent",
        &url,
        "--kind",
        "tcp_stream",
        "--set",
        "duration_s=1",
        "--set",
        "streams=2",
        "--json-format",
        "iperf3",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let ours: Value = serde_json::from_slice(&o.stdout).expect("stdout is the document alone");
    let theirs = real_iperf3(&["-t", "1", "-P", "2"]);
    same_keys(&ours, &theirs, &[CLAIMED, CLAIMED_TCP]);
    // The same figures as meshperf's own summary ("sent N bytes in S
    // seconds", "received N bytes ...").
    let sent = figure(&err, "sent ", "sent");
    let got = figure(&err, "received ", "received");
    assert_eq!(f(&ours, "end.sum_sent.bytes"), sent);
    assert_eq!(f(&ours, "end.sum_received.bytes"), got);
    // The line prints microseconds.
    let secs = f(&ours, "end.sum_sent.seconds");
    assert!((secs - figure(&err, "sent ", "in")).abs() < 1e-6, "{secs}");
    let per_stream: f64 = (0..2)
        .map(|i| f(&ours, &format!("end.streams.{i}.receiver.bytes")))
        .sum();
    assert_eq!(per_stream, got);
    let intervals: f64 = ours["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| f(i, "sum.bytes"))
        .sum();
    assert_eq!(intervals, got, "the intervals add up to what was received");
    assert_eq!(ours["start"]["test_start"]["num_streams"], 2);
    assert_eq!(ours["start"]["test_start"]["protocol"], "TCP");
    assert_eq!(ours["end"]["sum_sent"]["sender"], true);

    // UDP at 10 Mbit/s, written to a file.
    let path = tmp("iperf3-format-udp.json");
    let o = run(&[
        "--agent",
        &url,
        "--kind",
        "udp_stream",
        "--set",
        "duration_s=1",
        "--set",
        "rate=10M",
        "--json-format",
        "iperf3",
        "--json",
        path.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let ours: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let theirs = real_iperf3(&["-u", "-b", "10M", "-t", "1"]);
    same_keys(&ours, &theirs, &[CLAIMED, CLAIMED_UDP]);
    // The seed's line: pkt len; loop_count (sent); ...; num_recv; num_lost.
    let head: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("pkt len;"))
        .expect("udp_stream's heading")
        .split("; ")
        .collect();
    let row: Vec<f64> = out
        .lines()
        .skip_while(|l| !l.starts_with("pkt len;"))
        .nth(1)
        .unwrap()
        .split("; ")
        .map(|x| x.trim().parse().unwrap())
        .collect();
    let col = |n: &str| row[head.iter().position(|h| *h == n).unwrap()];
    let len = col("pkt len");
    assert_eq!(f(&ours, "end.sum_sent.packets"), col("loop_count"));
    assert_eq!(f(&ours, "end.sum_sent.bytes"), col("loop_count") * len);
    assert_eq!(f(&ours, "end.sum_received.bytes"), col("num_recv") * len);
    assert_eq!(f(&ours, "end.sum.lost_packets"), col("num_lost"));
    assert_eq!(ours["start"]["test_start"]["target_bitrate"], 10_000_000);
    let packets: f64 = ours["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| f(i, "sum.packets"))
        .sum();
    assert_eq!(packets, col("num_recv"));
    // A kind iperf3 has no shape for is a usage error before the run.
    let o = run(&[
        "--agent",
        &url,
        "--kind",
        "tcp_rr",
        "--json-format",
        "iperf3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not tcp_rr"));
}
