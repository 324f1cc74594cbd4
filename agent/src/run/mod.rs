//! `meshperf run`: runs a plan headless against one or two agents through
//! the same control protocol the web app uses, prints the seeds' text output
//! on stdout and progress on stderr, and writes the result format.
//!
//! The last line of stdout is the permalink (see `meshperf_wasm::permalink`):
//! the web app's address (the first agent's unless `--web`) with the whole
//! result in the fragment. With `--json -` or `--csv -` stdout carries that
//! document alone and the text and the link go to stderr.
//!
//! Exit status: 0 success, 1 a test failed (or an agent was unreachable, or
//! Ctrl-C), 2 a usage error (bad flags, unknown preset, unreadable plan, bad
//! agent URL, wrong token).

mod client;
mod inline;
mod output;

use client::{AgentUrl, Ctl, CtlError, Incoming};
use meshperf_protocol::driver::{check_step, AgentRef, Outgoing, StepRun};
use meshperf_protocol::msg::{Event, Request};
use meshperf_protocol::plan::{Plan, Step};
use meshperf_protocol::presets;
use meshperf_protocol::result::{RunResult, StepResult};
use std::collections::VecDeque;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(clap::Args)]
pub struct RunArgs {
    /// Agent URL as the agent printed it (http://HOST:PORT/#token=T). The
    /// first serves, the second drives; one agent plays both ends.
    #[arg(long, value_name = "URL", required = true)]
    agent: Vec<String>,
    /// Plan file (JSON, see plans/).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["preset", "kind"],
        required_unless_present_any = ["preset", "kind"]
    )]
    plan: Option<String>,
    /// A built-in plan: socketsend, bw_tcp, perl_buffers, sockbench, tcp_req, tcp_bw_mon_2, tcp_bw_mon_20, tcp_bw_nstream, udp_req_timo, udp_bw_mon.
    #[arg(long, value_name = "NAME", conflicts_with = "kind")]
    preset: Option<String>,
    /// A plan of this kind from the flags alone: tcp_stream, tcp_rr,
    /// udp_stream, udp_rr, unix_stream, unix_rr.
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// Set a parameter (repeatable), over the plan's or preset's own:
    /// --set msg_bytes=1M --set direction=receive. K/M/G are powers of 1024.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Sweep a parameter (at most two, the first is the outer loop; they
    /// replace the plan's axes): NAME=a,b,c or NAME=FROM:TO:STEP or
    /// NAME=pow2:LOW:HIGH, e.g. --sweep resp_bytes=64:1500:8.
    #[arg(long = "sweep", value_name = "NAME=AXIS")]
    sweep: Vec<String>,
    /// Run every point this many times (netperf -i; the mean and its
    /// confidence interval are printed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: Option<u32>,
    /// Write the result (meshperf-result JSON) here; `-` is stdout, which
    /// then carries the JSON alone (iperf3 -J; the text goes to stderr).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Write one `;`-separated line per step here; `-` is stdout, alone.
    #[arg(long, value_name = "FILE")]
    csv: Option<String>,
    /// Print only one `;`-separated record per step.
    #[arg(long)]
    quiet: bool,
    /// Base URL of the web app for the permalink (default: the first agent's).
    #[arg(long, value_name = "URL")]
    web: Option<String>,
    /// Print each step's histogram, `;`-separated (udp_req_timo -H): the
    /// round-trip times of request/response steps, the times between packets
    /// at the receiver of udp_stream steps.
    #[arg(short = 'H', long)]
    histogram: bool,
    /// Histogram bin width in us (udp_req_timo -b, udp_bw_mon -B); default:
    /// the plan's `histogram`, else 1.
    #[arg(long, value_name = "US", requires = "histogram")]
    bin_us: Option<f64>,
    /// Histogram low limit in us (udp_req_timo -m, udp_bw_mon -M); default:
    /// the plan's `histogram`, else 0.
    #[arg(long, value_name = "US", requires = "histogram")]
    low_us: Option<f64>,
    /// Interval reports of stream steps every S seconds, as iperf3 -i:
    /// per stream and summed, bytes and rate, the sender's retransmits,
    /// congestion window and RTT (from the raw samples).
    #[arg(short = 'i', long = "interval", value_name = "S", value_parser = interval_arg)]
    interval: Option<f64>,
    /// Number of histogram bins; samples past the last count as overflows.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "histogram")]
    bins: usize,
}

impl RunArgs {
    /// The histogram bins asked for, else the plan's, checked.
    fn hist(&self, plan: &Plan) -> Result<Option<output::HistOpts>, String> {
        if !self.histogram {
            return Ok(None);
        }
        let bin_us = self
            .bin_us
            .or(plan.histogram.map(|h| h.bin_us))
            .unwrap_or(1.0);
        let low_us = self
            .low_us
            .or(plan.histogram.map(|h| h.low_us))
            .unwrap_or(0.0);
        if !(bin_us.is_finite() && bin_us > 0.0) {
            return Err(format!("--bin-us must be above 0, got {bin_us}"));
        }
        if !low_us.is_finite() {
            return Err(format!("--low-us must be a number, got {low_us}"));
        }
        if !(1..=100_000).contains(&self.bins) {
            return Err(format!(
                "--bins must be from 1 to 100000, got {}",
                self.bins
            ));
        }
        Ok(Some(output::HistOpts {
            bin_us,
            low_us,
            bins: self.bins,
        }))
    }
}

fn interval_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.01..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0.01 to 3600"
        )),
    }
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("meshperf run: {msg}");
    Ok(ExitCode::from(2))
}

fn load_plan(a: &RunArgs) -> Result<Plan, String> {
    let base = if let Some(name) = &a.preset {
        Some(presets::preset(name).ok_or_else(|| {
            format!(
                "unknown preset {name:?}; known: {}",
                presets::names().join(", ")
            )
        })?)
    } else if let Some(path) = a.plan.as_deref() {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read plan {path}: {e}"))?;
        Some(Plan::from_json(&text).map_err(|e| format!("plan {path}: {e}"))?)
    } else {
        None
    };
    inline::build(base, a.kind.as_deref(), &a.set, &a.sweep, a.repeat)
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.agent.len() > 2 {
        return usage("give one or two --agent URLs");
    }
    let plan = match load_plan(&a) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let hist = match a.hist(&plan) {
        Ok(h) => h,
        Err(e) => return usage(e),
    };
    let steps = match plan.expand() {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let urls: Vec<AgentUrl> = match a.agent.iter().map(|u| AgentUrl::parse(u)).collect() {
        Ok(u) => u,
        Err(CtlError::Usage(m)) => return usage(m),
        Err(_) => unreachable!(),
    };
    let mut ctls = Vec::new();
    for u in &urls {
        match Ctl::connect(u) {
            Ok(c) => ctls.push(c),
            Err(CtlError::Auth(m)) | Err(CtlError::Usage(m)) => return usage(m),
            Err(CtlError::Io(m)) => {
                eprintln!("meshperf run: {m}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(s, stop.clone())?;
    }
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut result = RunResult::new(
        plan.clone(),
        ctls.iter().map(|c| c.hello.clone()).collect(),
        created,
    );
    if a.json.as_deref() == Some("-") && a.csv.as_deref() == Some("-") {
        return usage("--json - and --csv - cannot both have stdout");
    }
    let agents = agent_refs(&ctls);
    // Every limit known before the run is checked before the run: the
    // agents' own parsing against the limits they announced.
    for step in &steps {
        if let Err(e) = check_step(step, 0, ctls.len() - 1, &agents) {
            let point: Vec<String> = step.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let at = if point.is_empty() {
                String::new()
            } else {
                format!(" ({})", point.join(" "))
            };
            return usage(format!("step {}{at}: {e}; nothing was run", step.index));
        }
    }
    let doc_on_stdout = a.json.as_deref() == Some("-") || a.csv.as_deref() == Some("-");
    let mut out = output::Output::new(a.quiet, hist, &plan, steps.len());
    out.interval_s = a.interval;
    out.to_stderr = doc_on_stdout;
    // Random, as the page's: two controllers started in the same second
    // took the same ids, and an agent refused the second as a duplicate.
    let mut seed = [0u8; 4];
    getrandom::fill(&mut seed).expect("the OS random source works");
    let base_id = u32::from_le_bytes(seed);
    let mut failed = false;
    for step in &steps {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let test_id = base_id.wrapping_add(step.index as u32).max(1);
        let r = run_step(&mut ctls, &agents, step, test_id, &stop, &mut out);
        match r {
            Ok(sr) => {
                failed |= sr.error.is_some();
                out.step(&sr);
                result.steps.push(sr);
            }
            Err(m) => {
                eprintln!("meshperf run: {m}");
                failed = true;
                break;
            }
        }
    }
    out.finish();
    if !a.quiet {
        let mut text = out.text();
        for l in output::fits(&result)
            .into_iter()
            .chain(output::totals(&result))
        {
            let _ = writeln!(text, "{l}");
        }
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("meshperf run: interrupted; the running test was cancelled on both agents");
        failed = true;
    }
    let write = |path: &str, doc: Vec<u8>| -> anyhow::Result<()> {
        if path == "-" {
            let mut o = std::io::stdout().lock();
            o.write_all(&doc).and_then(|_| o.flush())?;
            Ok(())
        } else {
            std::fs::write(path, doc).map_err(|e| anyhow::anyhow!("cannot write {path}: {e}"))
        }
    };
    if let Some(path) = &a.json {
        let mut doc = serde_json::to_vec_pretty(&result)?;
        doc.push(b'\n');
        write(path, doc)?;
    }
    if let Some(path) = &a.csv {
        write(path, meshperf_protocol::export::csv(&result).into_bytes())?;
    }
    let web = a
        .web
        .clone()
        .unwrap_or_else(|| format!("http://{}/", urls[0].hostport()));
    print_permalink(&web, &result, doc_on_stdout);
    Ok(ExitCode::from(if failed { 1 } else { 0 }))
}

/// Prints the permalink as the last line of stdout: `<web>#r=<link>`, the
/// web app's address with the whole result in the fragment (on stderr when
/// stdout carries a `-` document).
fn print_permalink(web: &str, result: &RunResult, to_stderr: bool) {
    let base = web.split('#').next().unwrap_or(web);
    match meshperf_wasm::permalink::encode_reporting(result) {
        Ok((link, replaced)) => {
            if replaced {
                eprintln!("meshperf run: too many samples for a link: the permalink carries histograms and summaries; the --json file has every raw sample");
            }
            if to_stderr {
                eprintln!("permalink: {base}#r={link}");
            } else {
                println!("{base}#r={link}");
            }
        }
        Err(e) => eprintln!("meshperf run: no permalink: {e}"),
    }
}

/// How the step driver names and reaches each agent.
fn agent_refs(ctls: &[Ctl]) -> Vec<AgentRef> {
    ctls.iter()
        .map(|c| AgentRef {
            label: format!("agent {}", c.addr.hostport()),
            host: c.addr.host.clone(),
            addresses: serde_json::from_value(c.hello["addresses"].clone()).unwrap_or_default(),
            limits: serde_json::from_value(c.hello["limits"].clone()).ok(),
        })
        .collect()
}

/// How long a cancelled step waits for its agents to report before it is
/// given up (they answer within a fraction of a second when alive).
const CANCEL_GRACE: Duration = Duration::from_secs(15);

/// Runs one step through the step driver (`meshperf_protocol::driver`): the
/// first agent serves and the last drives (Unix kinds: both on the first).
fn run_step(
    ctls: &mut [Ctl],
    agents: &[AgentRef],
    step: &Step,
    test_id: u32,
    stop: &AtomicBool,
    out: &mut output::Output,
) -> Result<StepResult, String> {
    let began = Instant::now();
    let (mut run, first) =
        StepRun::new(step.clone(), test_id, 0, ctls.len() - 1, agents, unix_now())?;
    let ends = run.placement().agents();
    let mut queue: VecDeque<Outgoing> = VecDeque::from([first]);
    let mut cancelled_at: Option<Instant> = None;
    loop {
        while let Some(o) = queue.pop_front() {
            let i = o.agent;
            if let Request::Cancel { test_id, .. } = o.request {
                ctls[i].cancel(test_id);
                continue;
            }
            let req = serde_json::to_value(&o.request).map_err(|e| e.to_string())?;
            let mut other = |x: Incoming| feed(&mut run, i, x, &mut queue, out);
            match ctls[i].request(req, &mut other) {
                Ok(reply) => {
                    if let Ok(ev) = serde_json::from_value::<Event>(reply) {
                        queue.extend(run.on_reply(i, &ev));
                    }
                }
                Err(e) => return Err(closed(ctls, &mut run, i, e)),
            }
        }
        if run.is_done() {
            break;
        }
        if stop.load(Ordering::Relaxed) && !run.is_cancelling() {
            queue.extend(run.cancel());
            continue;
        }
        if run.is_cancelling() {
            let at = *cancelled_at.get_or_insert_with(Instant::now);
            if at.elapsed() > CANCEL_GRACE {
                run.abandon("the agents did not confirm the cancel within 15 s");
                break;
            }
        }
        // Both connections drained, then a wait for either: a result is
        // taken the moment it arrives, whichever agent sends it.
        for &i in &ends {
            loop {
                match ctls[i].try_poll() {
                    Ok(Some(x)) => feed(&mut run, i, x, &mut queue, out),
                    Ok(None) => break,
                    Err(e) => return Err(closed(ctls, &mut run, i, e)),
                }
            }
        }
        if !queue.is_empty() || run.is_done() {
            continue;
        }
        let waiting: Vec<&Ctl> = ends.iter().map(|&i| &ctls[i]).collect();
        client::wait_any(&waiting, Duration::from_millis(100));
        if began.elapsed().as_secs() > 3600 {
            return Err("a step ran for over an hour; giving up".into());
        }
    }
    Ok(run.result(began.elapsed().as_secs_f64()))
}

/// Hands what agent `i` sent to the driver.
fn feed(
    run: &mut StepRun,
    i: usize,
    x: Incoming,
    queue: &mut VecDeque<Outgoing>,
    out: &mut output::Output,
) {
    match x {
        Incoming::Event(v) => {
            if let Ok(ev) = serde_json::from_value::<Event>(v) {
                queue.extend(run.on_event(i, &ev));
                if matches!(ev, Event::Progress { test_id, .. } if test_id == run.test_id()) {
                    out.progress(run.progress());
                }
            }
        }
        Incoming::Frame(h, v) => {
            run.on_samples(&h, v);
        }
    }
}

/// Agent `i` went away mid-step: the other end is asked to stop (best
/// effort) and the run ends with the reason.
fn closed(ctls: &mut [Ctl], run: &mut StepRun, i: usize, e: CtlError) -> String {
    for o in run.on_closed(i) {
        ctls[o.agent].cancel(run.test_id());
    }
    err_text(e)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn err_text(e: CtlError) -> String {
    match e {
        CtlError::Usage(m) | CtlError::Auth(m) | CtlError::Io(m) => m,
    }
}
