//! What `meshperf run` prints: the seeds' text on stdout (socketsend's
//! `sent ... MByte/s` lines, udpmon-style `;` records), progress on stderr
//! (a bar on a terminal, plain lines otherwise), and the CSV export.

use super::seedtext;
use crate::ctl::progress::Progress;
use crate::ctl::rounds::Watch;
use meshperf_protocol::driver::StepRun;
use meshperf_protocol::export::scalars;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::Role;
use meshperf_protocol::params::Kind;
use meshperf_protocol::plan::{Plan, Step};
use meshperf_protocol::result::{primary_role, RunResult, StepResult};
use meshperf_stats::hist::{Histogram, Upper};
use serde_json::Value;
use std::io::Write;

pub struct Output {
    quiet: bool,
    /// The bar or lines on stderr, and how many steps have ended.
    progress: Progress,
    sweep: bool,
    repeat: u32,
    /// The headline figure of each repetition of the current point.
    reps: Vec<f64>,
    /// Every figure of each repetition of the current point.
    avgs: super::seed_out::Averages,
    /// Print each step's histogram (`-H`) with these bins.
    hist: Option<HistOpts>,
    /// Print stream steps' interval reports (`-i`), this many seconds each.
    pub interval_s: Option<f64>,
    /// The text goes to stderr: stdout carries a `--json -` or `--csv -`
    /// document and nothing else.
    pub to_stderr: bool,
    /// `--json-stream`: lines written as the run goes.
    pub json_stream: Option<super::json_stream::JsonStream>,
    /// Say where the run stood when Ctrl-C stops it (`meshperf run`).
    pub say_interrupt: bool,
    /// The column heading printed last (`seedtext::head`).
    heading: String,
    /// The waiting state said last (test, place, tests ahead) and when.
    waited: Option<((u32, u32, u32), std::time::Instant)>,
}

/// Bins of the histograms `meshperf run -H` prints: udp_req_timo's `-b`
/// (width, default 1 us) and `-m` (low limit, default 0), udp_bw_mon's `-B`
/// and `-M` for the receiver's inter-packet times.
#[derive(Debug, Clone, Copy)]
pub struct HistOpts {
    pub bin_us: f64,
    pub low_us: f64,
    pub bins: usize,
}

impl Output {
    pub fn new(quiet: bool, hist: Option<HistOpts>, plan: &Plan, total: usize) -> Self {
        if !quiet {
            let name = plan.name.as_deref().unwrap_or(plan.kind.name());
            eprintln!(
                "meshperf run: {name}: {total} step{}",
                if total == 1 { "" } else { "s" }
            );
        }
        Output {
            quiet,
            progress: Progress::new(total),
            sweep: !plan.sweep.is_empty() || plan.repeat > 1,
            repeat: plan.repeat,
            reps: Vec::new(),
            avgs: Default::default(),
            hist,
            interval_s: None,
            to_stderr: false,
            json_stream: None,
            say_interrupt: false,
            heading: String::new(),
            waited: None,
        }
    }

    /// A finished step: its text on stdout.
    pub fn step(&mut self, s: &StepResult) {
        self.progress.step_done();
        for n in notes(s) {
            eprintln!("meshperf run: {n}");
        }
        let mut out = self.text();
        let point: Vec<String> = s.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if let Some(e) = &s.error {
            let at = if point.is_empty() {
                String::new()
            } else {
                format!(" {}", point.join(" "))
            };
            let _ = writeln!(out, "step {}{at}: FAILED: {e}", s.index);
            return;
        }
        if self.quiet {
            seedtext::head(&mut self.heading, seedtext::heading(s, true), &mut out);
            let _ = writeln!(out, "{}", record(s));
            self.histogram(&mut out, s);
            return;
        }
        if self.sweep {
            let _ = writeln!(
                out,
                "step {} {}{}",
                s.index,
                point.join(" "),
                if s.repeat > 0 {
                    format!(" repeat {}", s.repeat)
                } else {
                    String::new()
                }
            );
        }
        // Each side's seed line, once: both sides of a udp_stream carry the
        // same record (the receiver's figures reach the sender at the end).
        // Below the seed's column heading, where it has one; udp_stream's
        // as udp_bw_mon's 13 fields (its 26-field record is --quiet's).
        seedtext::head(&mut self.heading, seedtext::heading(s, false), &mut out);
        let mut lines: Vec<String> = Vec::new();
        for side in [&s.sides.client, &s.sides.server].into_iter().flatten() {
            // udp_stream direction both: the reverse flow's line too.
            for flow in [side, &side["reverse"]] {
                let Some(line) = flow["line"].as_str().filter(|l| !l.is_empty()) else {
                    continue;
                };
                let line = seedtext::normal_line(s.kind, flow, line);
                if !lines.contains(&line) {
                    let _ = writeln!(out, "{line}");
                    lines.push(line);
                }
            }
        }
        if let Some(l) = seedtext::tcp_bw_mon_line(s) {
            let h = Some(seedtext::TCP_BW_MON_HEADING.to_string());
            seedtext::head(&mut self.heading, h, &mut out);
            let _ = writeln!(out, "{l}");
        }
        if let Some(l) = seedtext::tos_line(s) {
            let _ = writeln!(out, "{l}");
        }
        for (key, what) in STATS_LINES {
            if let Some(l) = stats_line(&s.summary, key, what) {
                let _ = writeln!(out, "{l}");
            }
        }
        for l in super::seed_out::stream_lines(s) {
            let _ = writeln!(out, "{l}");
        }
        for l in super::cpu_out::lines(s) {
            let _ = writeln!(out, "{l}");
        }
        for l in super::cpu_out::link_lines(s) {
            let _ = writeln!(out, "{l}");
        }
        for l in super::rate_out::lines(s) {
            let _ = writeln!(out, "{l}");
        }
        // What limited a tcp_stream, from TCP_INFO (issue 43).
        if let Some(v) = meshperf_protocol::verdict::tcp::step(s) {
            let _ = writeln!(out, "{}", v.sentence);
        }
        if s.kind == Kind::Path {
            if let Some(t) = super::path_out::text(&s.summary) {
                let _ = out.write_all(t.as_bytes());
            }
        }
        if s.kind == Kind::Stamp {
            for l in super::stamp_out::lines(&s.summary) {
                let _ = writeln!(out, "{l}");
            }
        }
        if s.kind == Kind::LatencyUnderLoad {
            if let Some(t) = super::lul_out::table(&s.summary) {
                let _ = out.write_all(t.as_bytes());
            }
        }
        // A stream's probe flow (`probe_ms`): the driving side's summary has it.
        let probe = s.sides.client.as_ref().map(|c| &c["probe"]);
        if let Some(t) = probe
            .filter(|v| v.is_object())
            .and_then(super::lul_out::table)
        {
            let every = probe.and_then(|v| v["probe_ms"].as_f64()).unwrap_or(0.0);
            let _ = writeln!(out, "latency under this load (probes every {every} ms):");
            let _ = out.write_all(t.as_bytes());
        }
        if let (Some(t0), Some(wall)) = (s.started_unix, s.wall_seconds) {
            // The Perl seed's start time and total (not network) elapsed time.
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t0);
            let _ = writeln!(
                out,
                "step time: started {}, {wall:.3} s in all",
                humantime::format_rfc3339_millis(at)
            );
        }
        if let Some(t) = self.interval_s.and_then(|secs| intervals(s, secs)) {
            let _ = out.write_all(t.as_bytes());
        }
        if self.repeat > 1 {
            if let Some((name, v, unit)) = meshperf_protocol::matrix::headline(s.kind, &s.summary) {
                self.reps.push(v);
                if s.repeat + 1 == self.repeat {
                    if let Ok(c) = meshperf_stats::fit::confidence(&self.reps) {
                        let _ = writeln!(
                            out,
                            "{name} over {} runs: mean {:.4} {unit}, 95% CI [{:.4}, {:.4}] (+/- {:.4})",
                            c.n, c.mean, c.low, c.high, c.half_width
                        );
                    }
                    self.reps.clear();
                }
            }
        }
        for l in self.avgs.step(s, self.repeat) {
            let _ = writeln!(out, "{l}");
        }
        self.histogram(&mut out, s);
    }

    fn histogram(&self, out: &mut impl Write, s: &StepResult) {
        if let Some(o) = &self.hist {
            let _ = out.write_all(histogram(s, o).as_bytes());
        }
    }

    /// One more step has ended (clears a progress bar).
    pub fn step_done(&mut self) {
        self.progress.step_done();
    }

    pub fn done(&self) -> usize {
        self.progress.done()
    }

    pub fn total(&self) -> usize {
        self.progress.total()
    }

    /// Where the step text goes: stdout, or stderr (see `to_stderr`).
    pub fn text(&self) -> Box<dyn Write> {
        if self.to_stderr {
            Box::new(std::io::stderr().lock())
        } else {
            Box::new(std::io::stdout().lock())
        }
    }

    pub fn finish(&mut self) {
        self.progress.finish();
    }
}

/// The rounds as `meshperf run` shows them: the progress bar, the
/// `--json-stream` lines, and where Ctrl-C stopped the run.
impl Watch for Output {
    fn progress(&mut self, fraction: f64) {
        self.progress.progress(fraction);
    }

    fn samples(&mut self, run: &StepRun) {
        if let Some(js) = self.json_stream.as_mut() {
            js.samples(run);
        }
    }

    fn step_ended(&mut self, test_id: u32, result: &StepResult) {
        if let Some(js) = self.json_stream.as_mut() {
            js.step_ended(test_id, result);
        }
    }

    fn waiting(&mut self, test_id: u32, w: &meshperf_protocol::driver::Waiting) {
        // Said when it changes, and every 5 s while it does not.
        let key = (test_id, w.place, w.behind);
        if self
            .waited
            .as_ref()
            .is_some_and(|(k, at)| *k == key && at.elapsed().as_secs() < 5)
        {
            return;
        }
        self.waited = Some((key, std::time::Instant::now()));
        self.progress.finish();
        eprintln!(
            "meshperf run: {} (place {} in its queue)",
            w.text(),
            w.place
        );
    }

    fn interrupted(&mut self, running: &[(&Step, f64)]) {
        if self.say_interrupt {
            self.finish();
            eprintln!(
                "{}",
                super::interrupt::where_it_stood(self.done(), self.total(), running)
            );
        }
    }
}

/// A stream step's interval reports, as iperf3 -i prints them: per stream
/// and summed, the bytes the receiving side took in each `secs`-long
/// interval and their rate, with the sender's retransmits in the interval,
/// congestion window (segments) and smoothed RTT at its end (TCP_INFO).
/// Built from the raw `interval_bytes` samples (one per `interval_ms`).
/// The last interval ends when the data did (iperf3's "10.00-10.04 sec"),
/// its rate over that time; a last piece shorter than a tenth of `secs`
/// joins the interval before it, so no row is a rate over a few ms.
pub fn intervals(s: &StepResult, secs: f64) -> Option<String> {
    if !matches!(s.kind, Kind::TcpStream | Kind::UnixStream) || s.error.is_some() {
        return None;
    }
    let tick = meshperf_protocol::intervals::tick_s(s);
    let per = ((secs / tick).round() as usize).max(1);
    let role = primary_role(s.kind, &s.params);
    let mut streams: Vec<&meshperf_protocol::result::Series> = s
        .samples
        .iter()
        .filter(|x| x.role == role && x.kind == SampleKind::IntervalBytes)
        .collect();
    streams.sort_by_key(|x| x.stream);
    let ticks = streams.iter().map(|x| x.values.len()).max()?;
    // The sending side's TCP_INFO series of stream `i`, if any.
    let info = |kind: SampleKind, i: u16| {
        s.samples
            .iter()
            .find(|x| x.kind == kind && x.stream == i)
            .map(|x| &x.values)
    };
    let secs_at = |t: usize| t as f64 * tick;
    // The last tick ends when the last stream's last byte came in (it is in
    // that tick; a summary without the streams' times: the tick's end).
    let ids: Vec<u16> = streams.iter().map(|x| x.stream).collect();
    let end = meshperf_protocol::intervals::data_end_s(s, role, &ids)
        .unwrap_or(secs_at(ticks))
        .clamp(secs_at(ticks.saturating_sub(1)), secs_at(ticks));
    let time_at = |t: usize| if t == ticks { end } else { secs_at(t) };
    let mut rows: Vec<(usize, usize)> = (0..ticks)
        .step_by(per)
        .map(|a| (a, (a + per).min(ticks)))
        .collect();
    if rows.len() > 1 && end - secs_at(rows[rows.len() - 1].0) < 0.1 * secs_at(per) {
        rows.pop();
        rows.last_mut().expect("more than one row").1 = ticks;
    }
    let mut out = String::from(
        "[ ID] Interval           Transfer        Bitrate        Retr   Cwnd     RTT\n",
    );
    let row = |id: &str, a: usize, b: usize, bytes: u64, tcp: Option<(u64, u64, u64)>| {
        let span = time_at(b) - time_at(a);
        let rate = if span > 0.0 {
            bytes as f64 * 8.0 / span / 1e9
        } else {
            0.0
        };
        let tcp = tcp.map_or(String::new(), |(r, c, t)| {
            format!("  {r:>5}  {c:>5}  {t:>5} us")
        });
        format!(
            "[{id:>3}] {:>6.2}-{:<6.2} s  {:>9.2} MBytes  {rate:>7.3} Gbit/s{tcp}\n",
            time_at(a),
            time_at(b),
            bytes as f64 / 1048576.0
        )
    };
    for (a, b) in rows {
        let mut sum = 0;
        for x in &streams {
            let bytes: u64 = x.values.iter().skip(a).take(b - a).sum();
            sum += bytes;
            // Retransmits are a running total; window and RTT as they were
            // at the interval's last sample.
            let at = |v: &Vec<u64>, t: usize| v.get(t.min(v.len()).checked_sub(1)?).copied();
            let tcp = match (
                info(SampleKind::TcpRetrans, x.stream),
                info(SampleKind::TcpCwnd, x.stream),
                info(SampleKind::TcpRttUs, x.stream),
            ) {
                (Some(r), Some(c), Some(t)) => at(r, b)
                    .zip(at(c, b))
                    .zip(at(t, b))
                    .map(|((rb, cb), tb)| (rb - at(r, a).unwrap_or(0).min(rb), cb, tb)),
                _ => None,
            };
            out.push_str(&row(&x.stream.to_string(), a, b, bytes, tcp));
        }
        if streams.len() > 1 {
            out.push_str(&row("SUM", a, b, sum, None));
        }
    }
    Some(out)
}

/// The statistics objects a step's text shows percentiles of, and what
/// each line calls them.
const STATS_LINES: [(&str, &str); 3] = [
    ("rtt_us", "rtt us"),
    ("connect_us", "connect us"),
    ("txn_us", "transaction us"),
];

/// The percentiles of a statistics object (`rtt_us` of a request/response
/// step, which the seeds' ave/min/max record leaves out; `connect_us` and
/// `txn_us` of a tcp_crr step): `rtt us: n 10000, min 52.1, median 59.3,
/// mean 61.0, p99 103.0, p99.9 180.2, max 950.7`.
fn stats_line(summary: &Value, key: &str, what: &str) -> Option<String> {
    let r = summary.get(key)?.as_object()?;
    let f = |k: &str| r.get(k).and_then(Value::as_f64);
    // (Results written before `n` was a whole number have it as 1000.0.)
    let mut parts = vec![format!("n {}", r.get("n")?.as_f64()? as u64)];
    for (name, key) in [
        ("min", "min"),
        ("median", "median"),
        ("mean", "mean"),
        ("p99", "p99"),
        ("p99.9", "p999"),
        ("max", "max"),
    ] {
        parts.push(format!("{name} {:.1}", f(key)?));
    }
    Some(format!("{what}: {}", parts.join(", ")))
}

/// The least-squares line of a request/response scan, as the page draws it
/// (and as seed 001 fits latency against message size): mean round-trip
/// time against the first numeric swept parameter, all repetitions, one
/// line per value of the other axis (with at least 3 values of x).
pub fn fits(r: &RunResult) -> Vec<String> {
    let ok: Vec<&StepResult> = r
        .steps
        .iter()
        .filter(|s| s.error.is_none() && s.kind.name().ends_with("_rr"))
        .collect();
    let Some(x) = ok
        .first()
        .and_then(|s| s.point.iter().find(|(_, v)| v.is_number()))
        .map(|(k, _)| k.clone())
    else {
        return Vec::new();
    };
    let mut curves: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for s in ok {
        let (Some(xv), Some(y)) = (
            s.point
                .iter()
                .find(|(k, _)| *k == x)
                .and_then(|(_, v)| v.as_f64()),
            s.summary["rtt_us"]["mean"].as_f64(),
        ) else {
            continue;
        };
        let label: Vec<String> = s
            .point
            .iter()
            .filter(|(k, _)| *k != x)
            .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
            .collect();
        let label = label.join(" ");
        match curves.iter_mut().find(|c| c.0 == label) {
            Some(c) => {
                c.1.push(xv);
                c.2.push(y);
            }
            None => curves.push((label, vec![xv], vec![y])),
        };
    }
    let unit = if x.ends_with("_bytes") {
        "byte"
    } else {
        x.as_str()
    };
    curves
        .iter()
        .filter_map(|(label, xs, ys)| {
            // A line through two points says nothing about its fit.
            let mut distinct = xs.clone();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            if distinct.len() < 3 {
                return None;
            }
            let f = meshperf_stats::fit::linfit(xs, ys).ok()?;
            Some(format!(
                "fit{}{label}: mean rtt = {:.3} us {:+.6} us/{unit} x {x} (r2 {:.4}, {} points)",
                if label.is_empty() { "" } else { " " },
                f.intercept,
                f.slope,
                f.r2,
                f.n
            ))
        })
        .collect()
}

/// The totals a scan ends with (udp_req_timo and udp_bw_mon print the
/// packets sent and the timeouts over the whole scan): one line over every
/// step that has a result, for runs of more than one step.
pub fn totals(r: &RunResult) -> Option<String> {
    let ok: Vec<&StepResult> = r.steps.iter().filter(|s| s.error.is_none()).collect();
    if r.steps.len() < 2 || ok.is_empty() {
        return None;
    }
    let sum = |k: &str| ok.iter().filter_map(|s| s.summary[k].as_u64()).sum::<u64>();
    let what = match r.plan.kind {
        Kind::Stamp => format!(
            "{} STAMP packets sent, {} answered, {} lost",
            sum("sent"),
            sum("answered"),
            sum("lost")
        ),
        Kind::UdpRr => format!(
            "{} requests sent, {} answered, {} timeouts, {} bad",
            sum("count"),
            sum("answered"),
            sum("timeouts"),
            sum("bad")
        ),
        Kind::UdpStream => format!(
            "{} datagrams sent, {} received, {} lost, {} out of order, {} duplicates",
            sum("sent"),
            sum("received"),
            sum("lost"),
            sum("out_of_order"),
            sum("duplicates")
        ),
        Kind::TcpRr | Kind::UnixRr => format!("{} transactions", sum("count")),
        Kind::TcpCrr => format!("{} transactions (connections)", sum("transactions")),
        Kind::TcpStream | Kind::UnixStream => format!("{} bytes", sum("bytes")),
        Kind::LatencyUnderLoad => format!(
            "{} probes sent, {} lost up, {} lost down",
            sum_in(&ok, "probes_up", "sent"),
            sum_in(&ok, "probes_up", "lost"),
            sum_in(&ok, "probes_down", "lost")
        ),
        Kind::Path => format!(
            "{} traces to the peer each way",
            ok.iter()
                .filter(|s| s.summary["forth"]["end"] == "peer")
                .count()
        ),
    };
    let failed = r.steps.len() - ok.len();
    Some(format!(
        "total over {} steps{}: {what}",
        ok.len(),
        if failed > 0 {
            format!(" ({failed} failed, not counted)")
        } else {
            String::new()
        }
    ))
}

/// The sum of `summary[outer][inner]` over `steps`.
fn sum_in(steps: &[&StepResult], outer: &str, inner: &str) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.summary[outer][inner].as_u64())
        .sum()
}

/// Why a side of step `s` ended early with what it had measured (its
/// summary's `note`), one line each: "step 3 client: the peer stopped ...".
pub fn notes(s: &StepResult) -> Vec<String> {
    [("client", &s.sides.client), ("server", &s.sides.server)]
        .into_iter()
        .filter_map(|(who, side)| {
            let n = side.as_ref()?.get("note")?.as_str()?;
            Some(format!("step {} {who}: {n}", s.index))
        })
        .collect()
}

/// The values a step's histogram is made of, in us, and what they are: the
/// round-trip times of a request/response step (its driving side), the
/// times between packets at the receiver of a udp_stream step.
fn hist_values(s: &StepResult) -> Option<(&'static str, Vec<f64>)> {
    let series = |role: Role, kind: SampleKind| {
        s.samples
            .iter()
            .find(|x| x.role == role && x.kind == kind)
            .map(|x| &x.values)
    };
    match s.kind {
        Kind::TcpRr | Kind::UdpRr | Kind::UnixRr | Kind::LatencyUnderLoad | Kind::Stamp => {
            let v = series(Role::Client, SampleKind::RttNs)?;
            Some((
                "Time per req-resp us",
                v.iter().map(|&n| n as f64 / 1e3).collect(),
            ))
        }
        Kind::TcpCrr => {
            let v = series(Role::Client, SampleKind::RttNs)?;
            Some((
                "Time per connect-req-resp-close us",
                v.iter().map(|&n| n as f64 / 1e3).collect(),
            ))
        }
        Kind::UdpStream => {
            let v = series(primary_role(s.kind, &s.params), SampleKind::ArrivalNs)?;
            Some((
                "Time between packets us",
                v.windows(2)
                    .map(|w| w[1].saturating_sub(w[0]) as f64 / 1e3)
                    .collect(),
            ))
        }
        Kind::TcpStream | Kind::UnixStream | Kind::Path => None,
    }
}

/// A step's histogram as udp_req_timo -H prints it (`;`-separated, one line
/// per bin from the low limit to the last bin with a count), or one line
/// saying why there is none.
pub fn histogram(s: &StepResult, o: &HistOpts) -> String {
    let Some((what, v)) = hist_values(s) else {
        return format!("Hist {:>8} no histogram for {}\n", s.index, s.kind.name());
    };
    if v.is_empty() {
        return format!("Hist {:>8} {what}: no samples\n", s.index);
    }
    let h = match Histogram::new(&v, o.bin_us, o.low_us, Upper::Bins(o.bins)) {
        Ok(h) => h,
        Err(e) => return format!("Hist {:>8} {what}: {e}\n", s.index),
    };
    let counted: u64 = h.counts.iter().map(|&c| c as u64).sum();
    // Both means, each named (udp_req_timo's statistics are of the samples):
    // of every sample, and of those in the bins (under/overflows left out).
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let high = h.low + h.counts.len() as f64 * h.bin_width;
    let inside: Vec<f64> = v
        .iter()
        .copied()
        .filter(|&x| x >= h.low && x < high)
        .collect();
    let binned = if inside.is_empty() {
        "-".to_string()
    } else {
        format!("{:.3}", inside.iter().sum::<f64>() / inside.len() as f64)
    };
    let mut t = format!(
        "Hist {:>8} {what}\n counts {counted} mean {mean:.3} (all {} samples) binned_mean {binned} (the {counted} in the bins) underflows {} overflows {}\n",
        s.index, v.len(), h.underflow, h.overflow
    );
    let last = h.counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    for (i, c) in h.counts[..last].iter().enumerate() {
        let edge = h.low + i as f64 * h.bin_width;
        t.push_str(&format!("{:>8} ; {c:>8}\n", trim(edge)));
    }
    t
}

/// A bin edge without trailing zeros (110, 110.5, 0.25).
fn trim(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One `;`-separated record of a step: the primary side's seed record when
/// it has one (udpmon's quiet mode), else its scalar figures.
pub fn record(s: &StepResult) -> String {
    match s.summary["line"].as_str() {
        Some(l) if l.contains(';') => l.to_string(),
        _ => {
            let mut f: Vec<String> = s.point.iter().map(|(_, v)| v.to_string()).collect();
            f.extend(scalars(&s.summary, false).into_iter().map(|(_, v)| v));
            f.join("; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshperf_protocol::result::Sides;
    use serde_json::json;

    #[test]
    fn a_side_that_ended_early_says_why_in_one_line() {
        let mut s: StepResult =
            serde_json::from_value(json!({"index": 3, "kind": "udp_rr"})).unwrap();
        assert!(notes(&s).is_empty());
        s.sides = Sides {
            client: Some(
                json!({"note": "the peer stopped answering: 10 requests in a row timed out after 50 ms each"}),
            ),
            server: Some(json!({"note": null})),
        };
        assert_eq!(
            notes(&s),
            ["step 3 client: the peer stopped answering: 10 requests in a row timed out after 50 ms each"]
        );
    }
}
