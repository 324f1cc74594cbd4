//! `meshperf run` against real agents: the text it prints, the permalink on
//! its last line (decoded with the same codec the web app uses), and its
//! usage errors and exit statuses.

use crate::util::AgentProc;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::permalink;
use meshperf_protocol::result::{self, RunResult};
use std::process::{Command, Output};

fn url(a: &AgentProc) -> String {
    format!("http://{}/#token={}", a.addr(), a.token)
}

pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .arg("run")
        .args(args)
        .output()
        .expect("spawn meshperf run")
}

/// `meshperf run` with `a` serving and `b` driving, and `args`.
pub(crate) fn run_ab(a: &AgentProc, b: &AgentProc, args: &[&str]) -> Output {
    let (ua, ub) = (url(a), url(b));
    let mut all = vec!["--agent", &ua, "--agent", &ub];
    all.extend_from_slice(args);
    run(&all)
}

/// [`run_ab`] that must succeed, with its stdout and the result it wrote.
pub(crate) fn run_ok(a: &AgentProc, b: &AgentProc, args: &[&str]) -> (String, RunResult) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let json = tmp(&format!("run-ok-{n}.json"));
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let o = run_ab(a, b, &all);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    (
        out,
        result::load(&std::fs::read_to_string(&json).unwrap()).unwrap(),
    )
}

/// `a` serving and `b` driving run a test right away (neither is still
/// busy with what came before).
fn serves_at_once(a: &AgentProc, b: &AgentProc) {
    let (_, ok) = run_ok(a, b, &["--kind", "tcp_rr", "--set", "count=100", "--quiet"]);
    assert!(ok.steps[0].error.is_none());
}

/// `meshperf run` with `args` refused as a usage error: exit status 2, one
/// line on stderr (returned), nothing on stdout.
fn usage_error(args: &[&str]) -> String {
    let o = run(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o.stdout));
    err
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A path in this test binary's scratch folder (removed at its exit).
pub(crate) fn tmp(name: &str) -> std::path::PathBuf {
    let d = crate::util::scratch_root().join("run");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `r` with times rounded as a permalink keeps them.
fn as_link_keeps(r: &RunResult) -> RunResult {
    let mut r = r.clone();
    for s in r.steps.iter_mut().flat_map(|s| &mut s.samples) {
        if matches!(
            s.kind,
            SampleKind::RttNs | SampleKind::SendTimeNs | SampleKind::ArrivalNs
        ) {
            s.values
                .iter_mut()
                .for_each(|v| *v = permalink::round_time(*v));
        }
    }
    r
}

#[test]
fn run_prints_seed_lines_and_a_permalink_that_decodes_to_the_json_file() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let plan = tmp("stream.json");
    std::fs::write(
        &plan,
        r#"{"kind": "tcp_stream", "params": {"msg_bytes": 65536, "count": 2000},
            "sweep": {"streams": [1, 2]}}"#,
    )
    .unwrap();
    let json = tmp("stream-result.json");
    let csv = tmp("stream-result.csv");
    let o = run_ab(
        &a,
        &b,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    // The seed's socketsend/socketslurp line, once per side and step.
    let seed: Vec<&str> = out.lines().filter(|l| l.contains("MByte/s")).collect();
    assert!(seed.len() >= 2, "{out}");
    assert!(
        seed.iter().any(|l| l.contains("131072000 bytes in")),
        "{out}"
    );
    // The last line is the permalink, based at the first agent's web app.
    let last = out.lines().last().unwrap();
    let base = format!("http://{}/#r=mp", a.addr());
    assert!(last.starts_with(&base), "{last}");
    let file = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(file.steps.len(), 2);
    assert!(file.steps.iter().all(|s| s.error.is_none()));
    // The CSV: a row per step, nested figures as dotted columns (the
    // per-stream bytes and reads tcp_bw_mon prints per link).
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(';').collect()).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    let head = &rows[0];
    assert_eq!(&head[..4], &["step", "kind", "streams", "repeat"], "{csv}");
    assert_eq!(head.last(), Some(&"error"));
    assert!(rows.iter().all(|r| r.len() == head.len()), "{csv}");
    let cell = |row: usize, col: &str| {
        let i = head
            .iter()
            .position(|h| *h == col)
            .unwrap_or_else(|| panic!("no {col}: {csv}"));
        rows[row][i]
    };
    for (i, s) in file.steps.iter().enumerate() {
        assert_eq!(
            cell(i + 1, "bits_per_second"),
            s.summary["bits_per_second"].to_string()
        );
        for k in 0..2 {
            let want = s.summary["streams"]
                .get(k)
                .map_or(String::new(), |x| x["bytes"].to_string());
            assert_eq!(cell(i + 1, &format!("streams.{k}.bytes")), want, "{csv}");
        }
    }
    assert_eq!(cell(2, "streams.1.bytes"), "131072000", "{csv}");
    crate::cpu::check_stream_run(&out, &file, &csv);
    // When each step started and how long it took in all (the Perl seed's
    // start time and total elapsed), also in the text.
    for (i, s) in file.steps.iter().enumerate() {
        let (t0, wall) = (s.started_unix.unwrap(), s.wall_seconds.unwrap());
        assert!(t0 > 1.7e9 && wall > 0.0 && wall < 60.0, "{t0} {wall}");
        assert_eq!(cell(i + 1, "started_unix"), t0.to_string());
        assert_eq!(cell(i + 1, "wall_seconds"), wall.to_string());
    }
    assert!(file.steps[1].started_unix > file.steps[0].started_unix);
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("step time: started 20") && l.ends_with(" s in all"))
            .count(),
        2,
        "{out}"
    );
    assert!(
        cell(2, "streams.1.reads").parse::<u64>().unwrap() > 0,
        "{csv}"
    );
    let link = permalink::decode(last).unwrap();
    if link.samples_replaced {
        // Too many per-read samples for a link: every summary and short
        // series as in the file, every long series as a full histogram.
        for (l, f) in link.steps.iter().zip(&file.steps) {
            assert_eq!(
                (&l.summary, &l.sides, &l.params),
                (&f.summary, &f.sides, &f.params)
            );
            let n: u64 = l
                .histograms
                .iter()
                .map(|h| h.counts.iter().sum::<u64>())
                .sum::<u64>()
                + l.samples.iter().map(|s| s.values.len() as u64).sum::<u64>();
            assert_eq!(
                n,
                f.samples.iter().map(|s| s.values.len() as u64).sum::<u64>()
            );
        }
        let mut l = link.clone();
        let mut f = file.clone();
        l.samples_replaced = false;
        for s in l.steps.iter_mut().chain(f.steps.iter_mut()) {
            s.samples.clear();
            s.histograms.clear();
        }
        assert_eq!(l, f);
    } else {
        assert_eq!(link, as_link_keeps(&file));
    }
    // --web replaces the base (and drops its fragment).
    std::fs::write(&plan, r#"{"kind": "tcp_rr", "params": {"count": 200}}"#).unwrap();
    let o = run(&[
        "--agent",
        &url(&a),
        "--plan",
        plan.to_str().unwrap(),
        "--web",
        "https://example.org/meshperf/#old",
        "--quiet",
        "--link",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let last = out.lines().last().unwrap_or("");
    assert!(
        last.starts_with("https://example.org/meshperf/#r=mp"),
        "{last}"
    );
    let rr = permalink::decode(last).unwrap();
    assert_eq!(rr.steps[0].samples[0].values.len(), 200);
}

#[test]
fn unknown_preset_is_a_usage_error_in_one_line() {
    let err = usage_error(&["--agent", "http://127.0.0.1:9/#token=x", "--preset", "nope"]);
    assert!(
        err.contains("unknown preset \"nope\"") && err.contains("socketsend"),
        "{err}"
    );
}

#[test]
fn unreadable_plan_is_a_usage_error() {
    let err = usage_error(&[
        "--agent",
        "http://127.0.0.1:9/#token=x",
        "--plan",
        "/nonexistent/plan.json",
    ]);
    assert!(
        err.contains("cannot read plan /nonexistent/plan.json"),
        "{err}"
    );
    let bad = tmp("bad-plan.json");
    std::fs::write(&bad, "{\"kind\": \"warp_drive\"}").unwrap();
    usage_error(&[
        "--agent",
        "http://127.0.0.1:9/#token=x",
        "--plan",
        bad.to_str().unwrap(),
    ]);
}

#[test]
fn wrong_token_is_a_usage_error() {
    let a = AgentProc::start(&[]);
    // Nothing on stdout: no test ran.
    let err = usage_error(&[
        "--agent",
        &format!("http://{}/#token=wrong{}", a.addr(), a.token),
        "--preset",
        "socketsend",
    ]);
    assert!(err.contains("token"), "{err}");
}

#[test]
fn unreachable_agent_exits_1() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = run(&[
        "--agent",
        &format!("http://127.0.0.1:{port}/#token=x"),
        "--preset",
        "socketsend",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}

/// The histograms `-H` printed: (counts, underflows, overflows, [(edge, count)]) each.
type Hist = (u64, u64, u64, Vec<(f64, u64)>);

fn histograms(out: &str) -> Vec<Hist> {
    let mut hs: Vec<Hist> = Vec::new();
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        if !l.starts_with("Hist ") {
            continue;
        }
        let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let field = |name: &str| -> u64 {
            let i = head.iter().position(|w| *w == name).unwrap();
            head[i + 1].parse().unwrap()
        };
        hs.push((
            field("counts"),
            field("underflows"),
            field("overflows"),
            Vec::new(),
        ));
        let bins = &mut hs.last_mut().unwrap().3;
        for l in lines.by_ref() {
            let Some((e, c)) = l.split_once(';') else {
                break;
            };
            match (e.trim().parse(), c.trim().parse()) {
                (Ok(e), Ok(c)) => bins.push((e, c)),
                _ => break,
            }
        }
    }
    hs
}

#[test]
fn histogram_flag_prints_rtt_and_inter_packet_histograms_in_the_seed_layout() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let plan = tmp("udp-hist.json");
    // `meshperf run` of `text` with a serving and b driving, and `flags`.
    let run_plan = |text: &str, flags: &[&str]| {
        std::fs::write(&plan, text).unwrap();
        let (ua, ub) = (url(&a), url(&b));
        let mut args = vec![
            "--agent",
            &ua,
            "--agent",
            &ub,
            "--plan",
            plan.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        run(&args)
    };
    // udp_req_timo -H -b 1 -m 0 over two response sizes.
    let o = run_plan(
        r#"{"kind": "udp_rr", "params": {"count": 300}, "sweep": {"resp_bytes": [64, 1000]}}"#,
        &["-H"],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let hs = histograms(&out);
    assert_eq!(hs.len(), 2, "{out}");
    for (counts, under, over, bins) in &hs {
        assert_eq!(counts + under + over, 300, "{out}");
        assert_eq!(*under, 0);
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), *counts);
        assert!(
            bins.last().unwrap().1 > 0,
            "trailing empty bins are left out"
        );
        // 1 us bins from 0, one line each.
        for (i, (edge, _)) in bins.iter().enumerate() {
            assert_eq!(*edge, i as f64);
        }
    }

    // udp_bw_mon -H -B 5 -M 0: the receiver's times between packets, paced at 20 us.
    let json = tmp("udp-hist-result.json");
    let o = run_plan(
        r#"{"kind": "udp_stream", "params": {"count": 2000, "wait_us": 20}}"#,
        &[
            "--quiet",
            "-H",
            "--bin-us",
            "5",
            "--bins",
            "400",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("Time between packets us"), "{out}");
    let hs = histograms(&out);
    let (counts, under, over, bins) = &hs[0];
    let file = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arrivals = &file.steps[0]
        .samples
        .iter()
        .find(|s| s.kind == SampleKind::ArrivalNs)
        .unwrap()
        .values;
    let n = arrivals.len() as u64;
    assert!(n > 1000, "{n} of 2000 arrived");
    assert_eq!(counts + under + over, n - 1, "{out}");
    // The printed bins are the receiver's own arrival times, binned: gaps
    // computed here from the JSON file fall in the same 5 us bins. (Where
    // they fall depends on how the sender was scheduled, which a loaded CI
    // machine does not promise; the bench measures pacing.)
    let mut want = vec![0u64; 400];
    let mut want_over = 0;
    let mut sum = 0.0;
    for w in arrivals.windows(2) {
        let gap_us = (w[1] - w[0]) as f64 / 1e3;
        sum += gap_us;
        match want.get_mut((gap_us / 5.0) as usize) {
            Some(c) => *c += 1,
            None => want_over += 1,
        }
    }
    assert_eq!(*over, want_over, "{out}");
    let last = want.iter().rposition(|&c| c > 0).unwrap();
    let want: Vec<(f64, u64)> = (0..=last).map(|i| (i as f64 * 5.0, want[i])).collect();
    assert_eq!(bins, &want, "{out}");
    let mean: f64 = out
        .lines()
        .find(|l| l.contains(" counts "))
        .and_then(|l| l.split_whitespace().skip_while(|w| *w != "mean").nth(1))
        .unwrap()
        .parse()
        .unwrap();
    assert!((mean - sum / (n - 1) as f64).abs() < 0.001, "{out}");

    // Impossible bins are a usage error before anything runs.
    let err = usage_error(&[
        "--agent",
        &url(&a),
        "--plan",
        plan.to_str().unwrap(),
        "-H",
        "--bin-us",
        "0",
    ]);
    assert!(err.contains("--bin-us must be above 0"), "{err}");
}

#[test]
fn a_plan_from_flags_alone_or_a_preset_with_values_changed() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let ua = url(&a);
    // udp_req_timo -p64 -l200 -i64 -e192, each point twice.
    let (out, file) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "req_bytes=64",
            "--set",
            "count=200",
            "--sweep",
            "resp_bytes=64:192:64",
            "--repeat",
            "2",
            "--quiet",
        ],
    );
    let got: Vec<(u64, u32, u64)> = file
        .steps
        .iter()
        .map(|s| {
            (
                s.params["resp_bytes"].as_u64().unwrap(),
                s.repeat,
                s.summary["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (64, 0, 200),
            (64, 1, 200),
            (128, 0, 200),
            (128, 1, 200),
            (192, 0, 200),
            (192, 1, 200)
        ]
    );
    assert_eq!(file.plan.params["req_bytes"], 64);
    // The seed's heading, then one record per step (the link is on stderr).
    assert!(out.starts_with("response len bytes; Req len;"), "{out}");
    assert_eq!(out.lines().filter(|l| l.contains(';')).count(), 7, "{out}");
    assert!(!out.contains("#r="), "{out}");

    // A preset with one value changed: socketsend moving 10 messages of 1 MiB.
    let (_, file) = run_ok(
        &a,
        &b,
        &[
            "--preset",
            "socketsend",
            "--set",
            "count=10",
            "--set",
            "msg_bytes=1M",
        ],
    );
    assert_eq!(
        file.steps[0].summary["bytes"],
        10 << 20,
        "{:?}",
        file.steps[0].summary
    );

    // A scan of 3 sizes ends with its least-squares line, as the page draws it.
    let o = run_ab(
        &a,
        &b,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "count=100",
            "--sweep",
            "resp_bytes=64:192:64",
        ],
    );
    let out = text(&o.stdout);
    // tcp_rr steps print their percentiles too.
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("rtt us: n 100, min "))
            .count(),
        3,
        "{out}"
    );
    let fit = out
        .lines()
        .find(|l| l.starts_with("fit: mean rtt = "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        fit.contains(" us/byte x resp_bytes (r2 ") && fit.ends_with(", 3 points)"),
        "{fit}"
    );

    // A paired axis: each step binds both ends to its own address pair, and
    // each end sees the other's (seed 002's local/remote host pairs).
    let (_, file) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "count=50",
            "--sweep",
            "client_bind+server_bind=127.0.0.1/127.0.0.1,127.0.0.2/127.0.0.3",
        ],
    );
    let seen: Vec<(String, String)> = file
        .steps
        .iter()
        .map(|s| {
            let side = |x: &Option<serde_json::Value>| {
                x.as_ref().unwrap()["peer"].as_str().unwrap().to_string()
            };
            (side(&s.sides.server), side(&s.sides.client))
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("127.0.0.1".to_string(), "127.0.0.1".to_string()),
            ("127.0.0.2".to_string(), "127.0.0.3".to_string())
        ]
    );

    // A scan ends with its totals, as udp_req_timo's does.
    let o = run_ab(
        &a,
        &b,
        &[
            "--kind",
            "udp_rr",
            "--set",
            "count=50",
            "--sweep",
            "resp_bytes=64,128",
        ],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    // Two sizes make no line worth printing.
    assert!(!out.contains("fit"), "{out}");
    // Each step's percentiles, in order.
    let rtt: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("rtt us: n "))
        .collect();
    assert_eq!(rtt.len(), 2, "{out}");
    for l in rtt {
        let v: Vec<f64> = l
            .split(", ")
            .map(|p| p.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        // n, min, median, mean, p99, p99.9, max
        assert_eq!(v.len(), 7, "{l}");
        assert!(
            v[1] <= v[2] && v[2] <= v[4] && v[4] <= v[5] && v[5] <= v[6],
            "{l}"
        );
        assert!(v[1] <= v[3] && v[3] <= v[6], "{l}");
    }
    let total = out
        .lines()
        .find(|l| l.starts_with("total over "))
        .unwrap_or_else(|| panic!("{out}"));
    let n: Vec<u64> = total
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    // steps, sent, answered, timeouts, bad
    assert_eq!(n.len(), 5, "{total}");
    assert_eq!((n[0], n[1]), (2, 100), "{total}");
    assert_eq!(n[2] + n[3], 100, "{total}");
    assert!(total.contains(" requests sent, "), "{total}");

    // Mistakes are one-line usage errors before any traffic.
    for (args, msg) in [
        (&["--kind", "tcp_xx"][..], "unknown kind \"tcp_xx\""),
        (
            &["--kind", "tcp_rr", "--set", "count"][..],
            "--set takes NAME=VALUE",
        ),
        (
            &["--kind", "tcp_rr", "--sweep", "count=1:2"][..],
            "FROM:TO:STEP",
        ),
        (
            &["--kind", "tcp_rr", "--sweep", "count=10:1:1"][..],
            "to must not be below from",
        ),
    ] {
        let mut all = vec!["--agent", &ua];
        all.extend_from_slice(args);
        let err = usage_error(&all);
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

#[test]
fn interval_reports_account_for_every_byte_as_iperf3_i_prints_them() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, file) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "duration_s=1",
            "--set",
            "streams=2",
            "-i",
            "0.25",
        ],
    );
    let bytes = file.steps[0].summary["bytes"].as_u64().unwrap() as f64;
    assert!(out.contains("[ ID] Interval "), "{out}");
    // [SUM] lines: contiguous intervals from 0, their MBytes add up to the
    // step's bytes (each printed to 0.01 MByte).
    let sums: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("[SUM]"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(sums.len() >= 4, "{out}");
    let mut from = 0.0;
    let mut mbytes = 0.0;
    for w in &sums {
        let (a, b) = w[1].split_once('-').unwrap();
        let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
        assert!((a - from).abs() < 1e-9 && b > a, "{out}");
        from = b;
        mbytes += w[3].parse::<f64>().unwrap();
    }
    assert!(
        (mbytes - bytes / 1048576.0).abs() <= 0.01 * sums.len() as f64,
        "{mbytes} MB vs {bytes} B\n{out}"
    );
    // Per-stream lines carry the sender's TCP_INFO: retransmits, window, RTT.
    let per: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("[  0]") || l.starts_with("[  1]"))
        .collect();
    assert_eq!(per.len(), 2 * sums.len(), "{out}");
    assert!(per.iter().all(|l| l.ends_with(" us")), "{out}");
    // Not a stream step: nothing to report, and a bad interval is refused.
    let o = run(&[
        "--agent",
        &url(&a),
        "--kind",
        "tcp_rr",
        "--set",
        "count=10",
        "-i",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!text(&o.stdout).contains("[ ID]"));
    let o = run(&["--agent", &url(&a), "--kind", "tcp_stream", "-i", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not a number of seconds from 0.01 to 3600"),
        "{}",
        text(&o.stderr)
    );
}

/// Issue 29 item 9: `-i`'s last row is the bytes over the time it covered
/// (iperf3's "10.00-10.04 sec"), not over a whole interval the test ended
/// partway through, which read low: it ends at the receiver's last byte,
/// and its rate is its bytes over that time, checked against the samples.
#[test]
fn the_last_interval_row_ends_with_the_data_and_its_rate_is_over_that_time() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, file) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "duration_s=0.35",
            "--set",
            "streams=2",
            "-i",
            "0.2",
        ],
    );
    let step = &file.steps[0];
    // The receiving (serving) side's streams: when the last byte came in.
    let end = step.sides.server.as_ref().unwrap()["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["seconds"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let sums: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("[SUM]"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let last = sums.last().unwrap_or_else(|| panic!("{out}"));
    let (from, to) = last[1].split_once('-').unwrap();
    let (from, to): (f64, f64) = (from.parse().unwrap(), to.parse().unwrap());
    assert_eq!(to, (end * 100.0).round() / 100.0, "ends at {end} s\n{out}");
    // No row shorter than a tenth of the interval, none longer than 1.1 of it.
    assert!(
        end - from >= 0.02 - 1e-9 && end - from <= 0.22 + 1e-9,
        "{out}"
    );
    // Its rate: every stream's bytes from its first tick on, over the time
    // from its start to the data's end (printed to 1 Mbit/s).
    let first = (from / 0.01).round() as usize;
    let bytes: u64 = step
        .samples
        .iter()
        .filter(|x| {
            x.kind == SampleKind::IntervalBytes && x.role == meshperf_protocol::msg::Role::Server
        })
        .map(|x| x.values.iter().skip(first).sum::<u64>())
        .sum();
    let want = bytes as f64 * 8.0 / (end - from) / 1e9;
    let printed: f64 = last[5].parse().unwrap();
    assert!(
        (printed - want).abs() <= 0.0005 + 1e-9,
        "{printed} vs {want} Gbit/s\n{out}"
    );
}

#[test]
fn json_or_csv_to_stdout_leaves_stdout_to_that_document_alone() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let ua = url(&a);
    // iperf3 -J: the result JSON and nothing else on stdout.
    let o = run_ab(
        &a,
        &b,
        &[
            "--kind",
            "udp_rr",
            "--set",
            "count=30",
            "--sweep",
            "resp_bytes=64,128",
            "--json",
            "-",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let file = result::load(&text(&o.stdout)).expect("stdout is one result JSON");
    assert_eq!(file.steps.len(), 2);
    assert!(file.steps.iter().all(|s| s.summary["count"] == 30));
    for s in &file.steps {
        crate::cpu::sides(s);
    }
    // The text and the permalink went to stderr.
    let err = text(&o.stderr);
    assert!(
        err.contains("total over 2 steps: 60 requests sent"),
        "{err}"
    );
    let link = err
        .lines()
        .find_map(|l| l.strip_prefix("permalink: "))
        .expect("link on stderr");
    assert_eq!(permalink::decode(link).unwrap().steps.len(), 2);
    // The CSV alone.
    let o = run_ab(
        &a,
        &b,
        &["--kind", "tcp_rr", "--set", "count=20", "--csv", "-"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let csv = text(&o.stdout);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.starts_with("step;kind;repeat;") && csv.contains("rtt_us.median"),
        "{csv}"
    );
    // Not both.
    let err = usage_error(&[
        "--agent", &ua, "--kind", "tcp_rr", "--json", "-", "--csv", "-",
    ]);
    assert!(err.contains("cannot both have stdout"), "{err}");
}

/// Seed 003 (sockbench) compares Unix sockets with TCP: given two agents,
/// the Unix steps run inside the first (prepare and start on the same
/// agent) and the TCP steps between the two. They failed with "unix_stream
/// runs inside one agent" and left the serving agent busy for the next steps.
#[test]
fn unix_steps_run_inside_the_first_agent_when_two_are_given() {
    let a = AgentProc::start_logged(&[]);
    let b = AgentProc::start_logged(&[]);
    let (_, r) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "count=64",
            "--set",
            "msg_bytes=64K",
            "--sweep",
            "transport=unix,tcp",
            "--quiet",
        ],
    );
    assert_eq!(r.steps.len(), 2);
    for s in &r.steps {
        assert!(s.error.is_none(), "{:?}", s.error);
        assert_eq!(s.summary["bytes"], 64 * 65536, "{}", s.summary);
        crate::cpu::sides(s);
    }
    assert_eq!(r.steps[0].kind.name(), "unix_stream");
    assert_eq!(r.steps[1].kind.name(), "tcp_stream");
    // Agent B's record: one driving side (the TCP step), nothing of the Unix one.
    let started = |log: Vec<String>, what: &str| {
        log.iter()
            .filter(|l| l.contains(what) && l.contains("started"))
            .count()
    };
    assert_eq!(started(b.log(), "unix_stream"), 0, "{:#?}", b.log());
    assert_eq!(started(b.log(), "tcp_stream"), 1, "{:#?}", b.log());
    assert_eq!(started(a.log(), "unix_stream"), 2, "{:#?}", a.log());
}

/// A step whose `start` is refused cancels its prepared side at once, and
/// the next step finds the serving agent free: agent B is kept busy by
/// another controller, so every start on it is refused (the steps say
/// `queue=false`: they would wait in B's queue), while agent A
/// serves each step in turn (it would answer `busy` for its 10 s accept
/// window if the prepared side were left waiting).
#[test]
fn a_refused_start_frees_the_prepared_agent_for_the_next_step() {
    let a = AgentProc::start(&[]);
    let b = AgentProc::start_logged(&[]);
    let ub = url(&b);
    let mut hog = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "run",
            "--agent",
            &ub,
            "--kind",
            "tcp_stream",
            "--set",
            "duration_s=20",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // B is busy from its serving side's start (it serves and drives the
    // hog's test); the hog outlasts the steps below and is stopped after.
    crate::util::logged(&b, &["tcp_stream serving started"]);
    let t0 = std::time::Instant::now();
    let json = tmp("refused-start.json");
    let o = run_ab(
        &a,
        &b,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "count=100",
            "--set",
            "queue=false",
            "--repeat",
            "3",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let took = t0.elapsed();
    let _ = hog.kill();
    let _ = hog.wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 3, "every step was tried");
    for s in &r.steps {
        let e = s.error.as_deref().unwrap_or("");
        // B refused the start (busy); A was never busy and its prepared side was cancelled.
        assert!(
            e.starts_with(&format!("agent {}: ", b.addr())) && e.contains("busy"),
            "{e}"
        );
        assert!(
            !e.contains(&format!("agent {}: this agent is busy", a.addr())),
            "{e}"
        );
        assert!(
            e.contains(&format!("agent {}: test cancelled", a.addr())),
            "{e}"
        );
    }
    // Less than one 10 s accept window for all three: no step waited for
    // a prepared side that nobody would connect to.
    assert!(took.as_secs_f64() < 10.0, "3 refused steps took {took:?}");
    // A serves a real test right away.
    serves_at_once(&a, &a);
}

/// Every limit known before the run is checked before the run (issue 15,
/// item 6): a parameter an agent would refuse is a usage error (exit 2, one
/// line naming the step, the agent and the parameter) and nothing runs.
#[test]
fn parameters_the_agents_would_refuse_are_a_usage_error_before_any_traffic() {
    let a = AgentProc::start_logged(&[]);
    let b = AgentProc::start_logged(&["--max-streams", "2"]);
    let (ua, ub) = (url(&a), url(&b));
    let err = usage_error(&[
        "--agent",
        &ua,
        "--agent",
        &ub,
        "--kind",
        "udp_rr",
        "--set",
        "req_bytes=1",
    ]);
    assert!(err.starts_with("meshperf run: step 0: agent "), "{err}");
    assert!(
        err.contains("would refuse it: req_bytes:") && err.contains("nothing was run"),
        "{err}"
    );
    // B's own limit, in the second step of a sweep.
    let err = usage_error(&[
        "--agent",
        &ua,
        "--agent",
        &ub,
        "--kind",
        "tcp_stream",
        "--sweep",
        "streams=1,4",
    ]);
    assert!(
        err.starts_with(&format!(
            "meshperf run: step 1 (streams=4): agent {} would refuse it: streams:",
            b.addr()
        )),
        "{err}"
    );
    // Neither agent saw a test.
    std::thread::sleep(std::time::Duration::from_millis(200));
    for log in [a.log(), b.log()] {
        assert!(!log.iter().any(|l| l.contains(" test ")), "{log:#?}");
    }
}

/// `meshperf run --matrix` of tcp_rr (`count`, e.g. "count=300") over
/// every agent URL in `urls`, writing the result to `json`.
fn run_matrix(urls: &[String], count: &str, json: &std::path::Path) -> Output {
    let mut args: Vec<&str> = urls.iter().flat_map(|u| ["--agent", u.as_str()]).collect();
    let path = json.to_str().unwrap();
    args.extend([
        "--matrix", "--kind", "tcp_rr", "--set", count, "--json", path,
    ]);
    run(&args)
}

/// `--matrix` (issue 11): every ordered pair of four agents once, in 6
/// rounds of 2 pairs with no agent in common that run at once; the table
/// rows drive and columns serve; the JSON and the permalink carry each
/// cell's pair. A fifth agent that is not there fails its row and column
/// only (exit 1), and the rest is measured.
#[test]
fn matrix_measures_every_ordered_pair_in_rounds_and_a_dead_agent_fails_only_its_row_and_column() {
    let agents: Vec<AgentProc> = (0..4).map(|_| AgentProc::start(&[])).collect();
    let mut urls: Vec<String> = agents.iter().map(url).collect();
    let json = tmp("matrix.json");
    let o = run_matrix(&urls, "count=300", &json);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains("matrix of 4 agents, tcp_rr: 12 pairs in 6 rounds"),
        "{err}"
    );
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.agents.len(), 4);
    let mut seen = std::collections::HashSet::new();
    for s in &r.steps {
        let p = s.pair.expect("a matrix step has its pair");
        assert_ne!(p.server, p.client);
        assert!(seen.insert((p.server, p.client)));
        assert!(s.error.is_none(), "{:?}", s.error);
        assert!(s.summary["rtt_us"]["median"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(seen.len(), 12);
    // The two pairs of each round ran at the same time.
    for round in r.steps.chunks(2) {
        let span = |s: &result::StepResult| {
            let t0 = s.started_unix.unwrap();
            (t0, t0 + s.wall_seconds.unwrap())
        };
        let ((a0, a1), (b0, b1)) = (span(&round[0]), span(&round[1]));
        assert!(
            a0 < b1 && b0 < a1,
            "{:?} and {:?} did not overlap",
            (a0, a1),
            (b0, b1)
        );
        let busy: std::collections::HashSet<usize> = round
            .iter()
            .flat_map(|s| [s.pair.unwrap().server, s.pair.unwrap().client])
            .collect();
        assert_eq!(busy.len(), 4, "no agent in two tests of a round");
    }
    // The table: a row per driving agent, the diagonal '-', a figure elsewhere.
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("matrix: tcp_rr"))
        .collect();
    assert!(
        rows[0].contains("median round-trip time, us; rows drive, columns serve"),
        "{out}"
    );
    for (i, name) in ["A", "B", "C", "D"].iter().enumerate() {
        assert!(rows[1 + i]
            .trim_start()
            .starts_with(&format!("{name} = agent {}", agents[i].addr())));
        let cells: Vec<&str> = rows[6 + i].split_whitespace().collect();
        assert_eq!(cells[0], *name);
        for (j, c) in cells[1..].iter().enumerate() {
            if i == j {
                assert_eq!(*c, "-");
            } else {
                let want = r
                    .steps
                    .iter()
                    .find(|s| s.pair.unwrap().client == i && s.pair.unwrap().server == j)
                    .unwrap();
                assert_eq!(
                    *c,
                    format!("{:.1}", want.summary["rtt_us"]["median"].as_f64().unwrap()),
                    "row {name}"
                );
            }
        }
    }
    let link = out.lines().last().unwrap();
    let decoded = permalink::decode(link.split("#r=").nth(1).unwrap()).unwrap();
    assert_eq!(decoded.steps.len(), 12);
    assert!(decoded
        .steps
        .iter()
        .zip(&r.steps)
        .all(|(d, s)| d.pair == s.pair));

    // A fifth agent that is not running: its row and column fail, the rest runs.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    urls.push(format!(
        "http://{}/#token=nobodyhome",
        dead.local_addr().unwrap()
    ));
    drop(dead);
    let o = run_matrix(&urls, "count=100", &json);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 20);
    for s in &r.steps {
        let p = s.pair.unwrap();
        let with_dead = p.server == 4 || p.client == 4;
        assert_eq!(s.error.is_some(), with_dead, "{p:?}: {:?}", s.error);
        if with_dead {
            assert!(
                s.error.as_deref().unwrap().contains("is not connected"),
                "{:?}",
                s.error
            );
        }
    }
    assert!(text(&o.stdout)
        .lines()
        .any(|l| l.trim_start().starts_with("E ") && l.contains("FAILED")));
}

/// Issue 15 item 3: a udp_stream step's seed record is printed once, not
/// once per side (both sides' summaries carry the same udp_bw_mon line):
/// in normal mode as udp_bw_mon's 13 fields (the 26-field record is not
/// printed), with --quiet as the record.
#[test]
fn a_udp_stream_record_is_printed_once() {
    let a = AgentProc::start(&[]);
    let b = AgentProc::start(&[]);
    for quiet in [false, true] {
        let mut args = vec!["--kind", "udp_stream", "--set", "count=500"];
        args.extend(["--set", "wait_us=20"]);
        if quiet {
            args.push("--quiet");
        }
        let (out, r) = run_ok(&a, &b, &args);
        let line = r.steps[0].summary["line"].as_str().unwrap().to_string();
        assert_eq!(
            r.steps[0].sides.client.as_ref().unwrap()["line"],
            r.steps[0].sides.server.as_ref().unwrap()["line"]
        );
        let printed = |l: &&str| *l == line;
        assert_eq!(out.lines().filter(printed).count(), quiet as usize, "{out}");
        let thirteen = out
            .lines()
            .filter(|l| l.split("; ").count() == 13 && l.starts_with("1400; 500; "))
            .count();
        assert_eq!(thirteen, !quiet as usize, "{out}");
    }
}

/// Issue 15 item 4: `-H` names which mean it prints: the mean of all the
/// samples (udp_req_timo's statistics are of the samples, as the summary's
/// rtt_us.mean) and the mean of the samples inside the bins.
#[test]
fn histogram_heads_name_the_mean_of_all_samples_and_of_the_binned_ones() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, r) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "udp_rr",
            "--set",
            "count=500",
            "-H",
            "--bin-us",
            "1",
            "--low-us",
            "0",
            "--bins",
            "25",
        ],
    );
    let head: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Hist "))
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    let after = |name: &str| head[head.iter().position(|w| *w == name).unwrap() + 1];
    let all: f64 = after("mean").parse().unwrap();
    let want = r.steps[0].summary["rtt_us"]["mean"].as_f64().unwrap();
    assert!(
        (all - want).abs() < 0.002,
        "{all} vs the summary's {want}: {head:?}"
    );
    assert_eq!(after("(all"), "500", "{head:?}");
    let counted: u64 = after("counts").parse().unwrap();
    let overflows: u64 = after("overflows").parse().unwrap();
    assert_eq!(
        counted + overflows + after("underflows").parse::<u64>().unwrap(),
        500
    );
    match after("binned_mean") {
        "-" => assert_eq!(counted, 0),
        m => {
            let m: f64 = m.parse().unwrap();
            assert!((0.0..25.0).contains(&m), "{m}");
            // Samples past the bins are all larger: the binned mean is lower.
            if overflows > 0 {
                assert!(m < all, "{m} vs {all}");
            }
        }
    }
}

/// Issue 15 item 2: the Perl preset's slow case (1 KiB writes 5 ms apart)
/// printed `0 MByte/s`; the seed lines keep three significant digits, and
/// the rate is the line's own bytes over its own seconds.
#[test]
fn slow_transfers_print_their_rate_not_zero() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, _) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "msg_bytes=1K",
            "--set",
            "count=20",
            "--set",
            "wait_us=5000",
        ],
    );
    let lines: Vec<&str> = out.lines().filter(|l| l.ends_with(" MByte/s")).collect();
    assert_eq!(lines.len(), 2, "{out}");
    for l in lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (bytes, secs): (f64, f64) = (w[1].parse().unwrap(), w[4].parse().unwrap());
        let printed: f64 = w[w.len() - 2].parse().unwrap();
        assert!(printed > 0.0, "{l}");
        let want = bytes / secs / 1e6;
        assert!((printed / want - 1.0).abs() < 0.01, "{l}: {want}");
    }
}

/// Issue 10 finding 3 (the part a controller can see): a paced tcp_rr or
/// tcp_stream whose count x wait_us is longer than an agent's
/// --max-duration is refused before any traffic (it ran 13 s on an agent
/// with --max-duration 10), as udp_stream's already was.
#[test]
fn count_times_wait_beyond_the_duration_limit_is_refused_before_traffic() {
    let a = AgentProc::start(&["--max-duration", "10"]);
    let ua = url(&a);
    for kind in ["tcp_rr", "tcp_stream"] {
        let err = usage_error(&[
            "--agent",
            &ua,
            "--kind",
            kind,
            "--set",
            "count=14",
            "--set",
            "wait_us=1000000",
        ]);
        assert!(
            err.contains("count: count x wait_us = 14.0 s is above the agent's limit of 10 s"),
            "{kind}: {err}"
        );
    }
    // Within the limit it runs.
    let (_, r) = run_ok(
        &a,
        &a,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "count=3",
            "--set",
            "wait_us=1000",
            "--quiet",
        ],
    );
    assert!(r.steps[0].error.is_none());
}

/// tcp_stream `direction=both` (issue 45, item 2): each direction's rate as
/// its receiver counted it, and the sum said to be a sum, as iperf3 --bidir
/// reports them.
#[test]
fn a_tcp_stream_both_ways_prints_each_direction_and_labels_the_sum() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, r) = run_ok(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "direction=both",
            "--set",
            "count=64",
            "--set",
            "msg_bytes=64K",
        ],
    );
    let s = &r.steps[0];
    let rate = |side: &Option<serde_json::Value>| {
        let v = side.as_ref().unwrap();
        v["received_bytes"].as_f64().unwrap() * 8.0 / v["recv_seconds"].as_f64().unwrap()
    };
    // The driving agent (B, client) sends up to the serving one (A, server).
    let (up, down) = (rate(&s.sides.server), rate(&s.sides.client));
    assert_eq!(
        s.sides.server.as_ref().unwrap()["received_bytes"],
        64 * 65536
    );
    assert_eq!(
        s.sides.client.as_ref().unwrap()["received_bytes"],
        64 * 65536
    );
    let fig = meshperf_protocol::params::rate_figure;
    let want = format!(
        "each direction: driving agent to serving agent {}, serving agent to driving agent {} \
         (each over its receiver's time); sum {}",
        fig(up),
        fig(down),
        fig(up + down)
    );
    assert!(out.lines().any(|l| l == want), "{out}\nexpected: {want}");
    let speed = out
        .lines()
        .find(|l| l.starts_with("speed (bits): "))
        .unwrap();
    assert!(speed.ends_with(" (both directions summed)"), "{speed}");
}
