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
use meshperf_protocol::msg::Role;
use meshperf_protocol::plan::{Plan, Step, Transport};
use meshperf_protocol::presets;
use meshperf_protocol::result::{primary_role, RunResult, Series, Sides, StepResult};
use serde_json::{json, Value};
use std::collections::HashMap;
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
    let doc_on_stdout = a.json.as_deref() == Some("-") || a.csv.as_deref() == Some("-");
    let mut out = output::Output::new(a.quiet, hist, &plan, steps.len());
    out.interval_s = a.interval;
    out.to_stderr = doc_on_stdout;
    let base_id = (created as u32).wrapping_mul(2654435761);
    let mut failed = false;
    for step in &steps {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let test_id = base_id.wrapping_add(step.index as u32);
        let r = run_step(&mut ctls, &urls, step, test_id, &stop, &mut out);
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
        write(path, output::csv(&result).into_bytes())?;
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

/// A local non-loopback IPv4 address of an agent, from its `hello`.
fn local_address(hello: &Value) -> Option<String> {
    hello["addresses"]
        .as_array()?
        .iter()
        .filter_map(|a| a.as_str()?.split(' ').next())
        .find(|ip| {
            ip.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_ipv4() && !ip.is_loopback())
        })
        .map(str::to_string)
}

fn run_step(
    ctls: &mut [Ctl],
    urls: &[AgentUrl],
    step: &Step,
    test_id: u32,
    stop: &AtomicBool,
    out: &mut output::Output,
) -> Result<StepResult, String> {
    let (si, ci) = (0, ctls.len() - 1);
    let (began, began_unix) = (Instant::now(), unix_now());
    let mut step_params = step.params.clone();
    let mut host = urls[0].host.clone();
    if step.transport == Transport::TcpLocal {
        // Data over a local interface address: the serving agent binds its
        // data listener there and the driving agent connects to it.
        let ip = local_address(&ctls[0].hello).ok_or_else(|| {
            format!(
                "agent {} has no non-loopback IPv4 address for transport tcp_local",
                urls[0].hostport()
            )
        })?;
        step_params
            .entry("server_bind")
            .or_insert(Value::from(ip.clone()));
        host = ip;
    }
    let params = Value::Object(step_params);
    let kind = step.kind;
    let mut ends: HashMap<Role, Value> = HashMap::new();
    let mut errors: Vec<String> = Vec::new();
    let mut samples: Vec<Series> = Vec::new();
    let mut sink = |x: Incoming,
                    ends: &mut HashMap<Role, Value>,
                    errors: &mut Vec<String>,
                    samples: &mut Vec<Series>| match x {
        Incoming::Event(e) if e["test_id"] == json!(test_id) => match e["type"].as_str() {
            Some("result") => {
                if let Ok(role) = serde_json::from_value::<Role>(e["role"].clone()) {
                    ends.insert(role, e["summary"].clone());
                }
            }
            Some("error") => {
                errors.push(e["message"].as_str().unwrap_or("test failed").to_string())
            }
            Some("progress") => out.progress(&e),
            _ => {}
        },
        Incoming::Frame(h, v) if h.test_id == test_id => {
            match samples
                .iter_mut()
                .find(|s| s.role == h.role && s.kind == h.kind && s.stream == h.stream)
            {
                Some(s) => s.values.extend(v),
                None => samples.push(Series {
                    role: h.role,
                    kind: h.kind,
                    stream: h.stream,
                    values: v,
                }),
            }
        }
        _ => {}
    };
    let prep = json!({"type": "prepare", "test_id": test_id, "step": step.index, "kind": kind, "params": params});
    let reply = ctls[si]
        .request(prep, &mut |x| sink(x, &mut ends, &mut errors, &mut samples))
        .map_err(err_text)?;
    let mut step_error = None;
    if reply["type"] != "prepared" {
        step_error = Some(format!(
            "agent {}: {}",
            urls[si].hostport(),
            reply["message"].as_str().unwrap_or("prepare failed")
        ));
    } else {
        let start = json!({"type": "start", "test_id": test_id, "step": step.index, "kind": kind, "params": params,
            "peer": {"host": host, "port": reply["port"], "key": reply["key"]}});
        let r = ctls[ci]
            .request(start, &mut |x| {
                sink(x, &mut ends, &mut errors, &mut samples)
            })
            .map_err(err_text)?;
        if r["type"] != "started" {
            ctls[si].cancel(test_id);
            step_error = Some(format!(
                "agent {}: {}",
                urls[ci].hostport(),
                r["message"].as_str().unwrap_or("start failed")
            ));
        } else {
            let t0 = Instant::now();
            let mut cancelled = false;
            while ends.len() + errors.len() < 2 {
                if stop.load(Ordering::Relaxed) && !cancelled {
                    ctls[si].cancel(test_id);
                    ctls[ci].cancel(test_id);
                    cancelled = true;
                }
                // Both connections drained, then a wait for either: a result
                // is taken the moment it arrives, whichever agent sends it.
                let ends_at = if si == ci { vec![si] } else { vec![si, ci] };
                for &i in &ends_at {
                    while let Some(x) = ctls[i].try_poll().map_err(err_text)? {
                        sink(x, &mut ends, &mut errors, &mut samples);
                    }
                }
                if ends.len() + errors.len() >= 2 {
                    break;
                }
                let waiting: Vec<&client::Ctl> = ends_at.iter().map(|&i| &ctls[i]).collect();
                client::wait_any(&waiting, Duration::from_millis(100));
                if t0.elapsed().as_secs() > 3600 {
                    return Err("a step ran for over an hour; giving up".into());
                }
            }
            if !errors.is_empty() {
                step_error = Some(errors.join("; "));
            }
        }
    }
    let primary = primary_role(kind, &step.params);
    Ok(StepResult {
        index: step.index,
        kind,
        params: step.params.clone(),
        point: step.point.clone(),
        repeat: step.repeat,
        transport: step.transport,
        summary: ends.get(&primary).cloned().unwrap_or(Value::Null),
        sides: Sides {
            client: ends.remove(&Role::Client),
            server: ends.remove(&Role::Server),
        },
        samples,
        histograms: Vec::new(),
        error: step_error,
        started_unix: Some(began_unix),
        wall_seconds: Some(began.elapsed().as_secs_f64()),
    })
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
