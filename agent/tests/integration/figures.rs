//! Issue 15's figures and printed lines, each as a seed's command line in
//! `meshperf run` form between real agents and the line it must print:
//! receive times no shorter than the send, udpmon's headings, its 13-field
//! line and `-T` in hexadecimal, and `--quiet` records under a heading with
//! the link kept off stdout unless asked for.

use crate::run::{run_ab, text, tmp};
use crate::util::AgentProc;
use meshperf_protocol::permalink;
use meshperf_protocol::result::{self, RunResult};

const RR_HEADING: &str = "response len bytes; Req len; msg_count; loop_count; num_bad; time/frame us; Mbytes/s; ave time; min time; max time; num timeouts";
const UDP_BW_MON_HEADING: &str = "pkt len; loop_count; num_timeout_zero; num_timeout; Time/frame us; wait_time; data_rate; num_recv; num_lost; num_badorder; time; time/recv pkt; recv_data_rate";

/// `meshperf run` with `a` serving and `b` driving and `args`, which must
/// succeed: its stdout, its stderr and the result it wrote.
fn run_json(
    a: &AgentProc,
    b: &AgentProc,
    name: &str,
    args: &[&str],
) -> (String, String, RunResult) {
    let json = tmp(&format!("figures-{name}.json"));
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let o = run_ab(a, b, &all);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, err, r)
}

/// Fields of a `;`-separated line.
fn fields(l: &str) -> Vec<&str> {
    l.split(';').map(str::trim).collect()
}

/// Issue 15 item 1 for `unix_stream` (tcp_stream's is in tcp.rs): both
/// ends run in one agent, and the receiving side started its own clock
/// once it had accepted the connections, after the sender had begun to
/// fill the socket buffers: 3 streams of 2000 x 1000 B, 8 us apart,
/// received in less time than they took to send, 6 runs in 6.
#[test]
fn a_unix_stream_receiver_is_never_faster_than_its_sender() {
    let a = AgentProc::start(&[]);
    let (out, _, r) = run_json(
        &a,
        &a,
        "unix-recv-3x2000",
        &[
            "--kind",
            "unix_stream",
            "--set",
            "streams=3",
            "--set",
            "count=2000",
            "--set",
            "msg_bytes=1000",
            "--set",
            "wait_us=8",
            "--repeat",
            "4",
        ],
    );
    assert_eq!(r.steps.len(), 4);
    for s in &r.steps {
        let secs =
            |side: &Option<serde_json::Value>| side.as_ref().unwrap()["seconds"].as_f64().unwrap();
        let (ts, tr) = (secs(&s.sides.client), secs(&s.sides.server));
        assert_eq!(s.summary["bytes"], 6_000_000);
        // The last write may return a moment after its bytes were read.
        assert!(
            tr + 100e-6 >= ts,
            "repeat {}: received in {tr} s what took {ts} s to send\n{out}",
            s.repeat
        );
    }
}

/// Issue 15 item 5: udp_bw_mon -p50 -w20 -l1000 -T10 prints the seed's
/// heading and its 13 fields (rates in MByte/s as the seed computes them,
/// numbers as %g prints them), and the TOS in hexadecimal as -T takes it:
///
/// ```text
/// pkt len; loop_count; num_timeout_zero; num_timeout; Time/frame us; wait_time; data_rate; num_recv; num_lost; num_badorder; time; time/recv pkt; recv_data_rate
/// 50; 1000; 0; 0; 67.1698; 20; 0.744382; 1000; 0; 0; 64099; 64.099; 0.780043
/// tos 0x10: client 0x10, server 0x10
/// ```
///
/// and udp_req_timo -p64 -r64 -l200 its heading above its record.
#[test]
fn udpmon_lines_print_the_seeds_headings_13_fields_and_tos_in_hex() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, _, r) = run_json(
        &a,
        &b,
        "udp-bw-mon",
        &[
            "--kind",
            "udp_stream",
            "--set",
            "pkt_bytes=50",
            "--set",
            "wait_us=20",
            "--set",
            "count=1000",
            "--set",
            "tos=0x10",
        ],
    );
    let s = &r.steps[0].summary;
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == UDP_BW_MON_HEADING)
        .unwrap_or_else(|| panic!("no heading:\n{out}"));
    let f = fields(lines[at + 1]);
    assert_eq!(f.len(), 13, "{}", lines[at + 1]);
    assert_eq!(&f[..4], ["50", "1000", "0", "0"], "{}", lines[at + 1]);
    assert_eq!(f[5], "20");
    let num = |i: usize| f[i].parse::<f64>().unwrap();
    let close = |got: f64, want: f64| (got / want - 1.0).abs() < 1e-5;
    assert!(
        close(num(4), s["time_per_frame_us"].as_f64().unwrap()),
        "{f:?}"
    );
    // data_rate: MByte/s, the seed's 2.10214 for 50 bytes per 23.7852 us.
    assert!(close(num(6), 50.0 / num(4)), "{f:?}");
    assert_eq!(num(7), s["received"].as_f64().unwrap());
    assert_eq!(num(8) + num(7), 1000.0);
    assert!(close(
        num(10),
        (s["recv_seconds"].as_f64().unwrap() * 1e6).round()
    ));
    assert!(
        close(num(12), s["recv_bits_per_second"].as_f64().unwrap() / 8e6),
        "{f:?}"
    );
    // recv_data_rate: MByte/s, received bytes over the receive time.
    assert!(
        (num(12) / (num(7) * 50.0 / num(10)) - 1.0).abs() < 1e-3,
        "{f:?}"
    );
    // Six significant digits where the value has them, as %g.
    assert!(
        f[4].replace('.', "").trim_start_matches('0').len() <= 6,
        "{f:?}"
    );
    // The 26-field record is --quiet's, not printed here.
    assert!(!out.contains(s["line"].as_str().unwrap()), "{out}");
    assert!(
        out.lines()
            .any(|l| l == "tos 0x10: client 0x10, server 0x10"),
        "{out}"
    );

    let (out, _, _) = run_json(
        &a,
        &b,
        "udp-req-timo",
        &[
            "--kind",
            "udp_rr",
            "--set",
            "req_bytes=64",
            "--set",
            "resp_bytes=64",
            "--set",
            "count=200",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], RR_HEADING, "{out}");
    let f = fields(lines[1]);
    assert_eq!(f.len(), 11, "{out}");
    assert_eq!(&f[..5], ["64", "64", "1", "200", "0"], "{out}");
}

/// Issue 15 item 6: udp_bw_mon -q over a scan of waits prints its records
/// under one heading naming their 26 fields, and stdout holds nothing
/// else: the link goes to stderr unless --link asks for it; a kind without
/// a seed record names the fields of its record, one per field.
#[test]
fn quiet_records_carry_a_heading_and_the_link_only_when_asked() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, err, r) = run_json(
        &a,
        &b,
        "quiet-udp",
        &[
            "--kind",
            "udp_stream",
            "--set",
            "count=200",
            "--sweep",
            "wait_us=10,20",
            "--quiet",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("time of day; sending_ip_address; dest_ip_address; pkt_len;"),
        "{out}"
    );
    assert_eq!(fields(lines[0]).len(), 26);
    for (l, s) in lines[1..].iter().zip(&r.steps) {
        assert_eq!(*l, s.summary["line"].as_str().unwrap());
        assert_eq!(fields(l).len(), 26);
    }
    assert!(!out.contains("#r="), "{out}");
    let link = err
        .lines()
        .find_map(|l| l.strip_prefix("permalink: "))
        .unwrap_or_else(|| panic!("no link on stderr: {err}"));
    assert_eq!(permalink::decode(link).unwrap().steps.len(), 2);
    // Its rates keep six significant digits as %g prints them (fixed
    // decimals printed 0.0222 for 0.0222187 Mbit/s): udp_bw_mon -q -p50
    // -w20000 -l10.
    let (out, _, r) = run_json(
        &a,
        &b,
        "quiet-udp-slow",
        &[
            "--kind",
            "udp_stream",
            "--set",
            "pkt_bytes=50",
            "--set",
            "count=10",
        ]
        .into_iter()
        .chain(["--set", "wait_us=20000", "--quiet"])
        .collect::<Vec<_>>(),
    );
    let s = &r.steps[0].summary;
    let f = fields(out.lines().nth(1).unwrap());
    for (i, key) in [(10, "send_bits_per_second"), (16, "recv_bits_per_second")] {
        let want = s[key].as_f64().unwrap() / 1e6;
        let got: f64 = f[i].parse().unwrap();
        assert!(
            (got / want - 1.0).abs() < 1e-5,
            "{key}: {} for {want}",
            f[i]
        );
    }

    let (out, _, r) = run_json(
        &a,
        &b,
        "quiet-tcp",
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "count=50",
            "--sweep",
            "msg_bytes=1K,2K",
            "--quiet",
            "--link",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    let names = fields(lines[0]);
    assert_eq!(names[..3], ["msg_bytes", "bytes", "seconds"], "{out}");
    for (l, s) in lines[1..3].iter().zip(&r.steps) {
        let v = fields(l);
        assert_eq!(v.len(), names.len(), "{out}");
        let bytes = names.iter().position(|n| *n == "bytes").unwrap();
        assert_eq!(v[bytes], s.summary["bytes"].to_string());
    }
    assert!(lines[3].contains("#r=mp"), "{out}");
}

/// Issue 15 item 5 for TCP: tcp_bw_mon -p1000 -w100 -l100 -s2 (100 writes
/// per link here) prints, after the socketsend lines, the seed's heading
/// and its record with the bytes and reads of each link:
///
/// ```text
/// pkt len; loop_count; Time/loop us; wait_time; Total send time; data_rate; Total recv time; link:; recv_bytes; # reads
/// 1000; 200; 50.7066; 100; 10141; 19.7213; 10195; 1:; 100000; 100; 2:; 100000; 100
/// ```
#[test]
fn tcp_bw_mon_prints_its_heading_and_a_record_per_link() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, _, r) = run_json(
        &a,
        &b,
        "tcp-bw-mon",
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "msg_bytes=1000",
            "--set",
            "wait_us=100",
        ]
        .into_iter()
        .chain(["--set", "count=100", "--set", "streams=2"])
        .collect::<Vec<_>>(),
    );
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("pkt len; loop_count; Time/loop us; wait_time;"))
        .unwrap_or_else(|| panic!("no heading:\n{out}"));
    let f = fields(lines[at + 1]);
    assert_eq!(f.len(), 13, "{out}");
    assert_eq!([f[0], f[1], f[3]], ["1000", "200", "100"], "{out}");
    let num = |i: usize| f[i].parse::<f64>().unwrap();
    assert!((num(5) * num(2) / 1000.0 - 1.0).abs() < 1e-4, "{f:?}");
    let sent = r.steps[0].sides.client.as_ref().unwrap();
    let send_us = sent["send_seconds"].as_f64().unwrap() * 1e6;
    assert!((num(4) - send_us).abs() <= 1.0, "{f:?} vs {send_us}");
    assert_eq!(
        [f[7], f[8], f[10], f[11]],
        ["1:", "100000", "2:", "100000"],
        "{f:?}"
    );
    // Reads as the receiver made them (one per write when it keeps up).
    for i in [9, 12] {
        assert!((1..=100).contains(&f[i].parse::<u64>().unwrap()), "{f:?}");
    }
    let recv_us = r.steps[0].summary["recv_seconds"].as_f64().unwrap() * 1e6;
    assert!((num(6) - recv_us).abs() <= 1.0, "{f:?} vs {recv_us}");
}
