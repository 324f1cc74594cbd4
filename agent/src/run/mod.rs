//! `meshperf run`: runs a plan headless against one or two agents through
//! the same control protocol the web app uses, prints the seeds' text output
//! on stdout and progress on stderr, and writes the result format.
//!
//! The last line of stdout is the permalink (see `meshperf_protocol::permalink`):
//! the web app's address (the first agent's unless `--web`) with the whole
//! result in the fragment; with `--quiet` it goes to stderr unless `--link`. With `--json -` or `--csv -` stdout carries that
//! document alone and the text and the link go to stderr.
//!
//! Exit status: 0 success, 1 a test failed (or an agent was unreachable), 2 a
//! usage error (bad flags, unknown preset, unreadable plan, bad agent URL,
//! wrong token, a parameter an agent would refuse, an `--expect` figure no
//! step has), 3 an expectation not met ([`gate`]), 130 interrupted (Ctrl-C
//! or SIGTERM: what was measured is still printed, written and linked; see
//! [`interrupt`]).

mod cpu_out;
mod gate;
pub(crate) mod interrupt;
pub(crate) mod json_stream;
mod lul_out;
mod matrix_out;
pub(crate) mod output;
mod path_out;
mod rate_out;
mod seed_out;
mod seedtext;
mod stamp_out;

use crate::ctl::client::{AgentUrl, Ctl, CtlError};
use crate::ctl::flags::AgentFlags;
use crate::ctl::plan_flags::PlanFlags;
use crate::ctl::{
    agent_refs, first_test_id, hellos, peers_line, rounds, sample, unix_now, with_endpoints,
};
use meshperf_protocol::driver::{check_step, AgentRef};
use meshperf_protocol::matrix::{self, Metric, Pair};
use meshperf_protocol::plan::Plan;
use meshperf_protocol::result::RunResult;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").args(["plan", "preset", "kind"]).required(true).multiple(true)))]
pub struct RunArgs {
    #[command(flatten)]
    agents: AgentFlags,
    /// Run the step between every ordered pair of the agents given (three
    /// or more, or two for both directions) and print the matrix: rows
    /// drive, columns serve. Pairs with no agent in common run at once.
    #[arg(long)]
    matrix: bool,
    /// With --matrix: one pair at a time (links that share a bottleneck).
    #[arg(long, requires = "matrix")]
    serial: bool,
    /// With --matrix, for a fleet: each agent measures K peers instead of
    /// every other, those of round --round of a rotation in which any
    /// ceil((N-1)/K) consecutive rounds measure every ordered pair (K of
    /// N-1 or more: the full mesh).
    #[arg(long, value_name = "K", requires = "matrix", value_parser = sample::peers_arg)]
    peers: Option<usize>,
    /// With --peers: the round of the rotation to measure (0, 1, ...).
    #[arg(long, value_name = "R", requires = "peers", default_value_t = 0)]
    round: u64,
    /// With --matrix: the figure per cell: gbps, rtt_p50, rtt_p99,
    /// loss_pct, added_rtt, tps, hops, path_mtu, marks_changed (default:
    /// the kind's: gbps for streams, rtt_p50 for request/response and
    /// path, loss_pct for udp_stream, tps (transactions per second) for
    /// tcp_crr; hops to the peer, the path MTU and the DSCP/ECN marks
    /// changed on the way are path's).
    #[arg(long, value_name = "NAME", requires = "matrix")]
    metric: Option<String>,
    #[command(flatten)]
    plan: PlanFlags,
    /// Send this file's bytes in a tcp_stream (the Perl seed's --file): a
    /// file name in the sending agent's --payload-dir, which that agent
    /// reads into memory once before the test; --set payload_file=NAME.
    #[arg(long, value_name = "NAME")]
    file: Option<String>,
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
    /// The --json document's shape: meshperf (the result file) or iperf3
    /// (iperf3 -J's start/intervals/end, for a run of one tcp_stream or
    /// udp_stream step; on stdout unless --json FILE; see docs/formats.md).
    #[arg(long, value_name = "FORMAT", default_value = "meshperf", value_parser = ["meshperf", "iperf3"])]
    json_format: String,
    /// Write one `;`-separated line per step here; `-` is stdout, alone.
    #[arg(long, value_name = "FILE")]
    csv: Option<String>,
    /// Write one JSON object per line here as the run goes (iperf3
    /// --json-stream): a start line, the intervals of stream steps (every
    /// -i seconds, default 1), each step as it ends, an end line; `-` is
    /// stdout, alone. See docs/formats.md.
    #[arg(long, value_name = "FILE")]
    json_stream: Option<String>,
    /// Print only one `;`-separated record per step, below a heading line
    /// naming its fields; the permalink goes to stderr (see --link).
    #[arg(long)]
    quiet: bool,
    /// Print the permalink as the last line of stdout with --quiet too.
    #[arg(long)]
    link: bool,
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
    /// A figure every step must meet, as FIGURE OP VALUE: a summary key
    /// (bits_per_second, retransmits, rtt_us.p99, ...) or a --metric name,
    /// with a unit that fits it: 'bits_per_second >= 9G', 'rtt_p99 <=
    /// 2ms', 'loss_pct < 0.1%' (repeatable; a plan's "expect" list adds
    /// to these). Each prints one line; one not met makes the exit status 3.
    #[arg(long = "expect", value_name = "EXPR")]
    expect: Vec<String>,
    /// Write a JUnit XML report here: a testcase per step (an error when
    /// it failed) and per step and expectation (a failure when missed).
    #[arg(long, value_name = "FILE")]
    junit: Option<String>,
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

impl RunArgs {
    /// `--json-format iperf3`.
    fn iperf3_json(&self) -> bool {
        self.json_format == meshperf_protocol::iperf3_json::NAME
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

fn load_plan(a: &RunArgs) -> Result<Plan, String> {
    let mut plan = a.plan.build(&a.sweep, a.repeat)?;
    if let Some(f) = &a.file {
        // A string whatever it looks like (--set would read "123" as a number).
        plan.params
            .insert("payload_file".into(), serde_json::Value::String(f.clone()));
        plan.expand().map_err(|e| e.to_string())?;
    }
    Ok(plan)
}

/// A usage error's line on stderr and exit status 2.
fn usage_code(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("meshperf run: {msg}");
    ExitCode::from(2)
}

/// What the flags ask for, checked before any agent is reached.
struct Asked {
    plan: Plan,
    hist: Option<output::HistOpts>,
    steps: Vec<meshperf_protocol::plan::Step>,
    metric: Metric,
    urls: Vec<AgentUrl>,
    /// `--expect` and the plan's `expect`, parsed.
    expects: Vec<meshperf_protocol::expect::Expect>,
}

/// How the steps went.
#[derive(Default)]
struct Outcome {
    failed: bool,
    /// Steps (or pairs) cut short by Ctrl-C and left out.
    interrupted: usize,
    /// The step cut short by Ctrl-C and kept as partial.
    partial: Option<usize>,
}

/// A run under way: its result so far, its output, how its steps went.
struct Ran {
    result: RunResult,
    out: output::Output,
    outcome: Outcome,
    /// Steps (or pairs) planned.
    total: usize,
}

pub fn run(mut a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.iperf3_json() && a.json.is_none() {
        // iperf3 -J: the document alone on stdout.
        a.json = Some("-".into());
    }
    let asked = match asked(&a) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let (ctls, gone) = match connect(&asked.urls, a.matrix) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let stop = Arc::new(AtomicBool::new(false));
    interrupt::install(&stop)?;
    let doc_on_stdout = match doc_on_stdout(&a) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let refs = agent_refs(&asked.urls, &ctls);
    let agents = rounds::Agents { ctls, refs, gone };
    let ran = if a.matrix {
        matrix_mode(&a, &asked, agents, &stop, doc_on_stdout)?
    } else {
        steps_mode(&a, &asked, agents, &stop, doc_on_stdout)?
    };
    match ran {
        Ok(ran) => ended(&a, &asked, ran, &stop, doc_on_stdout),
        Err(code) => Ok(code),
    }
}

/// `--matrix`: the one step between every pair (or this round's sample of
/// them, `--peers`), a cell printed per pair and the table at the end; a
/// limit any pair breaks is the usage error's code.
fn matrix_mode(
    a: &RunArgs,
    asked: &Asked,
    mut agents: rounds::Agents,
    stop: &AtomicBool,
    doc_on_stdout: bool,
) -> anyhow::Result<Result<Ran, ExitCode>> {
    let (plan, step, urls) = (&asked.plan, &asked.steps[0], &asked.urls);
    let mut hellos = hellos(&agents.ctls);
    with_endpoints(&mut hellos, urls);
    let mut result = RunResult::new(plan.clone(), hellos, unix_now());
    let n = urls.len();
    let both_ways = matrix::both_ways(plan.kind, &step.params);
    let names: Vec<String> = urls.iter().map(AgentUrl::hostport).collect();
    let (sampled_schedule, sampled) = sample::schedule(&names, a.peers, a.round, None, a.serial);
    let schedule = if both_ways {
        matrix::Schedule::new(n, a.serial, both_ways)
    } else {
        sampled_schedule
    };
    if let Err(code) = checked_pairs(a, plan, &asked.steps, &agents.refs, &agents.ctls, both_ways) {
        return Ok(Err(code));
    }
    let total = schedule.pairs();
    announce_matrix(a, plan, &schedule, &agents.refs, both_ways, total);
    if let Some(k) = a.peers {
        eprintln!("{}", peers_line(k, n, a.round, sampled.rotation));
    }
    let mut out = output(a, asked, &result, total, doc_on_stdout)?;
    let outcome = run_matrix(
        &mut agents,
        step,
        schedule,
        stop,
        &mut out,
        &mut result,
        asked.metric,
    );
    out.finish();
    let mut text = out.text();
    for l in matrix_out::table(&result, &agents.refs, asked.metric) {
        let _ = writeln!(text, "{l}");
    }
    drop(text);
    Ok(Ok(Ran {
        result,
        out,
        outcome,
        total,
    }))
}

/// Between one or two agents: the plan's steps one after the other, each
/// step's text as it ends, the fits and totals at the end; a limit a step
/// breaks is the usage error's code.
fn steps_mode(
    a: &RunArgs,
    asked: &Asked,
    mut agents: rounds::Agents,
    stop: &AtomicBool,
    doc_on_stdout: bool,
) -> anyhow::Result<Result<Ran, ExitCode>> {
    let hellos = hellos(&agents.ctls);
    let mut result = RunResult::new(asked.plan.clone(), hellos, unix_now());
    let checked = match checked_pairs(
        a,
        &asked.plan,
        &asked.steps,
        &agents.refs,
        &agents.ctls,
        false,
    ) {
        Ok(x) => x,
        Err(code) => return Ok(Err(code)),
    };
    let total = asked.steps.len();
    let mut out = output(a, asked, &result, total, doc_on_stdout)?;
    let outcome = run_pairs(
        &mut agents,
        &asked.steps,
        &checked,
        stop,
        &mut out,
        &mut result,
    );
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
    Ok(Ok(Ran {
        result,
        out,
        outcome,
        total,
    }))
}

/// The run's output: text (a matrix's cells, or each step's text unless
/// --quiet), progress, and the --json-stream lines.
fn output(
    a: &RunArgs,
    asked: &Asked,
    result: &RunResult,
    total: usize,
    doc_on_stdout: bool,
) -> anyhow::Result<output::Output> {
    let mut out = output::Output::new(a.quiet || a.matrix, asked.hist, &asked.plan, total);
    out.interval_s = a.interval;
    out.to_stderr = doc_on_stdout;
    out.say_interrupt = true;
    if let Some(path) = &a.json_stream {
        let every = a.interval.unwrap_or(json_stream::DEFAULT_INTERVAL_S);
        let mut js = json_stream::JsonStream::open(path, every, result, total)?;
        js.matrix = a.matrix;
        out.json_stream = Some(js);
    }
    Ok(out)
}

/// What every run ends with: what Ctrl-C left, the documents, the
/// expectations and the JUnit report, the permalink, the --json-stream's
/// end line; the exit status.
fn ended(
    a: &RunArgs,
    asked: &Asked,
    ran: Ran,
    stop: &AtomicBool,
    doc_on_stdout: bool,
) -> anyhow::Result<ExitCode> {
    let Ran {
        result,
        mut out,
        outcome,
        total,
    } = ran;
    let urls = &asked.urls;
    let names: Vec<String> = urls.iter().map(AgentUrl::hostport).collect();
    let stopped = stop.load(Ordering::Relaxed);
    if stopped {
        say_interrupted(a, &result, total, &outcome);
    }
    write_documents(a, &result)?;
    let checked = gate::check(&asked.expects, &result);
    for l in gate::lines(&checked, &result, &names) {
        eprintln!("meshperf run: {l}");
    }
    if let Some(path) = &a.junit {
        std::fs::write(path, gate::junit(&result, &checked, &names))
            .map_err(|e| anyhow::anyhow!("cannot write {path}: {e}"))?;
    }
    let web = a.web.clone().unwrap_or_else(|| {
        let scheme = if urls[0].tls() { "https" } else { "http" };
        format!("{scheme}://{}/", urls[0].hostport())
    });
    // --quiet leaves stdout to its records unless the link is asked for.
    print_permalink(&web, &result, doc_on_stdout || (a.quiet && !a.link));
    let code = if stopped {
        interrupt::EXIT_INTERRUPTED
    } else if outcome.failed {
        1
    } else {
        match gate::gate(&checked) {
            gate::Gate::Unknown => 2,
            gate::Gate::NotMet => gate::EXIT_NOT_MET,
            gate::Gate::Met => 0,
        }
    };
    if let Some(js) = out.json_stream.take() {
        let end = meshperf_protocol::json_stream::StreamEnd {
            steps: result.steps.len(),
            failed: result.steps.iter().filter(|s| s.error.is_some()).count(),
            interrupted: stopped,
            exit: code,
        };
        if let Some(e) = js.end(end) {
            eprintln!("meshperf run: --json-stream: {e}");
        }
    }
    Ok(ExitCode::from(code))
}

/// The plan, its steps, the histogram, the matrix metric and the agents'
/// URLs from the flags (dns: names resolved), or the usage error's code.
fn asked(a: &RunArgs) -> Result<Asked, ExitCode> {
    if a.agents.agent.len() > 2 && !a.matrix {
        return Err(usage_code(
            "give one or two --agent URLs, or --matrix to measure between every pair of more",
        ));
    }
    let plan = load_plan(a).map_err(usage_code)?;
    let hist = a.hist(&plan).map_err(usage_code)?;
    let steps = plan.expand().map_err(usage_code)?;
    if a.matrix && steps.len() != 1 {
        return Err(usage_code(format!(
            "--matrix runs one step between every pair; this plan has {} (sweeps and repetitions are not supported with --matrix yet)",
            steps.len()
        )));
    }
    if a.iperf3_json() {
        if a.matrix || steps.len() != 1 {
            return Err(usage_code(format!(
                "--json-format iperf3 writes one test (one tcp_stream or udp_stream step); this run has {}",
                if a.matrix { "a matrix".to_string() } else { format!("{} steps", steps.len()) }
            )));
        }
        if let Some(why) = meshperf_protocol::iperf3_json::refuse(plan.kind, &steps[0].params) {
            return Err(usage_code(why));
        }
    }
    if a.peers.is_some() && matrix::both_ways(plan.kind, &steps[0].params) {
        return Err(usage_code(format!(
            "--peers samples ordered pairs; a {} step measures both ways at once: leave --peers out (the full mesh)",
            plan.kind.name()
        )));
    }
    let expects = plan
        .expect
        .iter()
        .flatten()
        .chain(&a.expect)
        .map(|t| meshperf_protocol::expect::Expect::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage_code)?;
    let metric = match a.metric.as_deref() {
        None => Metric::default_for(plan.kind),
        Some(m) => Metric::from_name(m).ok_or_else(|| {
            let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            usage_code(format!("--metric {m:?}: known: {}", known.join(", ")))
        })?,
    };
    let token = a.agents.token("meshperf run").map_err(usage_code)?;
    let mut urls: Vec<AgentUrl> = Vec::new();
    for (_, found) in a.agents.resolve(token.as_deref()) {
        match found {
            Ok(u) => urls.extend(u),
            Err(CtlError::Usage(m)) | Err(CtlError::Auth(m)) => return Err(usage_code(m)),
            Err(CtlError::Io(m)) => {
                eprintln!("meshperf run: {m}");
                return Err(ExitCode::from(1));
            }
        }
    }
    if a.matrix && urls.len() < 2 {
        return Err(usage_code("--matrix needs two or more agents (--agent URLs, or a dns: name with several addresses)"));
    }
    if urls.len() > 2 && !a.matrix {
        return Err(usage_code(format!(
            "{} agents given (a dns: name counts each address); measure between them with --matrix",
            urls.len()
        )));
    }
    Ok(Asked {
        plan,
        hist,
        steps,
        metric,
        urls,
        expects,
    })
}

/// The control connections. A matrix goes on without an unreachable agent
/// (its row and column fail: `gone` says why); a run between two agents
/// needs both.
#[allow(clippy::type_complexity)]
fn connect(
    urls: &[AgentUrl],
    matrix: bool,
) -> Result<(Vec<Option<Ctl>>, Vec<Option<String>>), ExitCode> {
    let mut ctls = Vec::new();
    let mut gone = Vec::new();
    for u in urls {
        match Ctl::connect(u) {
            Ok(c) => {
                ctls.push(Some(c));
                gone.push(None);
            }
            Err(CtlError::Auth(m)) | Err(CtlError::Usage(m)) => return Err(usage_code(m)),
            Err(CtlError::Io(m)) if matrix => {
                eprintln!("meshperf run: {m}");
                ctls.push(None);
                gone.push(Some(m));
            }
            Err(CtlError::Io(m)) => {
                eprintln!("meshperf run: {m}");
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok((ctls, gone))
}

/// Whether a document (`--json -`, `--csv -`, `--json-stream -`) has
/// stdout; more than one is a usage error.
fn doc_on_stdout(a: &RunArgs) -> Result<bool, ExitCode> {
    let on_stdout: Vec<&str> = [
        ("--json", &a.json),
        ("--csv", &a.csv),
        ("--json-stream", &a.json_stream),
    ]
    .iter()
    .filter(|(_, p)| p.as_deref() == Some("-"))
    .map(|(flag, _)| *flag)
    .collect();
    if on_stdout.len() > 1 {
        return Err(usage_code(format!(
            "{} - cannot {} have stdout: give all but one a file",
            on_stdout.join(" - and "),
            if on_stdout.len() == 2 { "both" } else { "all" }
        )));
    }
    Ok(!on_stdout.is_empty())
}

/// The (step, pair) list to run, every limit known before the run checked
/// first: the agents' own parsing against the limits they announced. A
/// matrix runs its one step between every pair of live agents (the
/// strictest limits bind); a run between two agents has the first serve and
/// the last drive.
fn checked_pairs(
    a: &RunArgs,
    plan: &Plan,
    steps: &[meshperf_protocol::plan::Step],
    refs: &[AgentRef],
    ctls: &[Option<Ctl>],
    both_ways: bool,
) -> Result<Vec<(usize, Pair)>, ExitCode> {
    let n = refs.len();
    let checked: Vec<(usize, Pair)> = if a.matrix {
        if let Err(e) = matrix::check_agents(refs, plan.kind) {
            return Err(usage_code(format!("{e}; nothing was run")));
        }
        // Every pair is checked, sampled or not: a limit found in a later
        // round of the rotation is a usage error now, not a failed cell then.
        matrix::pairs(n, both_ways)
            .into_iter()
            .map(|p| (0, p))
            .collect()
    } else {
        let two = Pair {
            server: 0,
            client: n - 1,
        };
        (0..steps.len()).map(|i| (i, two)).collect()
    };
    for (i, pair) in &checked {
        let step = &steps[*i];
        let live = |j: usize| ctls[j].is_some();
        if !(live(pair.server) && live(pair.client)) {
            continue;
        }
        if let Err(e) = check_step(step, pair.server, pair.client, refs) {
            let point: Vec<String> = step.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let at = if point.is_empty() {
                String::new()
            } else {
                format!(" ({})", point.join(" "))
            };
            return Err(usage_code(format!(
                "step {}{at}: {e}; nothing was run",
                step.index
            )));
        }
    }
    Ok(checked)
}

/// The matrix's first lines on stderr: its size, rounds and binding limits.
fn announce_matrix(
    a: &RunArgs,
    plan: &Plan,
    schedule: &matrix::Schedule,
    refs: &[AgentRef],
    both_ways: bool,
    total: usize,
) {
    let rounds = schedule.planned_rounds();
    eprintln!(
        "meshperf run: matrix of {} agents, {}: {total} {} in {rounds} round{}{}",
        refs.len(),
        plan.kind.name(),
        if both_ways {
            "pairs (one test each, both directions at once)"
        } else {
            "pairs"
        },
        if rounds == 1 { "" } else { "s" },
        if a.serial {
            ", one pair at a time"
        } else {
            ", pairs with no agent in common at once"
        }
    );
    for l in matrix::strictest(refs) {
        eprintln!("meshperf run: the strictest limit binds: {l}");
    }
}

/// `--matrix`: the one step between every pair, a cell printed per pair.
fn run_matrix(
    agents: &mut rounds::Agents,
    step: &meshperf_protocol::plan::Step,
    schedule: matrix::Schedule,
    stop: &AtomicBool,
    out: &mut output::Output,
    result: &mut RunResult,
    metric: Metric,
) -> Outcome {
    let mut next_id = first_test_id();
    let mut o = Outcome::default();
    rounds::run_matrix(
        agents,
        step,
        schedule,
        &mut next_id,
        stop,
        out,
        "meshperf run",
        |mut sr, agents, out| {
            if stop.load(Ordering::Relaxed) && sr.error.is_some() {
                // Cut short by Ctrl-C: not a measurement (udp_req_timo
                // likewise reports what it had before the signal).
                o.interrupted += 1;
                return;
            }
            o.failed |= sr.error.is_some();
            out.cell(&sr, &agents.refs, metric);
            sr.index = result.steps.len();
            if let Some(js) = out.json_stream.as_mut() {
                js.step(&sr);
            }
            result.steps.push(sr);
        },
    );
    o
}

/// Between two agents: the steps one after the other, until Ctrl-C or an
/// agent lost.
fn run_pairs(
    agents: &mut rounds::Agents,
    steps: &[meshperf_protocol::plan::Step],
    checked: &[(usize, Pair)],
    stop: &AtomicBool,
    out: &mut output::Output,
    result: &mut RunResult,
) -> Outcome {
    let mut next_id = first_test_id();
    let mut o = Outcome::default();
    for (i, pair) in checked {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        next_id = next_id.wrapping_add(1).max(1);
        let job = rounds::Job {
            step: &steps[*i],
            pair: *pair,
            test_id: next_id,
        };
        for e in rounds::run_round(agents, &[job], stop, out) {
            let mut sr = e.result;
            sr.pair = None;
            if stop.load(Ordering::Relaxed) && sr.error.is_some() {
                // Cut short by Ctrl-C: kept, marked partial, when its
                // samples came back (udp_req_timo likewise shows what it
                // had when the signal came).
                o.interrupted += 1;
                if let Some(p) = interrupt::partial(sr, e.fraction, "interrupted") {
                    out.step_done();
                    let _ = writeln!(out.text(), "{}", interrupt::partial_line(&p));
                    if let Some(js) = out.json_stream.as_mut() {
                        js.step(&p);
                    }
                    o.partial = Some(p.index);
                    result.steps.push(p);
                }
                continue;
            }
            o.failed |= sr.error.is_some();
            out.step(&sr);
            let place =
                meshperf_protocol::driver::Placement::for_kind(sr.kind, pair.server, pair.client);
            let label = |i: usize| agents.refs[i].label.as_str();
            for l in meshperf_protocol::result::shared_marks(
                &sr,
                label(place.server),
                label(place.client),
            ) {
                eprintln!("meshperf run: {l}");
            }
            if let Some(js) = out.json_stream.as_mut() {
                js.step(&sr);
            }
            result.steps.push(sr);
        }
        // A run between two agents ends with an agent lost.
        if let Some(why) = agents.gone.iter().flatten().next() {
            eprintln!("meshperf run: {why}");
            o.failed = true;
            break;
        }
    }
    o
}

/// After Ctrl-C: what was kept, and where.
fn say_interrupted(a: &RunArgs, result: &RunResult, total: usize, o: &Outcome) {
    let kept = [
        ("--json", &a.json),
        ("--csv", &a.csv),
        ("--json-stream", &a.json_stream),
    ]
    .iter()
    .filter_map(|(flag, p)| p.as_ref().map(|p| format!("{flag} {p}")))
    .collect::<Vec<_>>();
    let whole = result.steps.len() - usize::from(o.partial.is_some());
    eprintln!(
        "meshperf run: interrupted after {whole} of {total} step{}{}; {}",
        if total == 1 { "" } else { "s" },
        match (o.partial, o.interrupted) {
            (Some(i), _) => format!(
                " and step {} of {total} cut short (cancelled on its agents, kept as partial)",
                i + 1
            ),
            (None, 0) => String::new(),
            (None, n) => format!(
                " ({n} cut short and cancelled on {} agents before any samples came back, left out)",
                if n == 1 { "its" } else { "their" }
            ),
        },
        if kept.is_empty() {
            "the link below has what was measured".to_string()
        } else {
            format!(
                "what was measured is in {} and the link below",
                kept.join(" and ")
            )
        }
    );
}

/// `--json` and `--csv`, to their files or stdout (`-`).
fn write_documents(a: &RunArgs, result: &RunResult) -> anyhow::Result<()> {
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
        let mut doc = match (a.iperf3_json(), result.steps.first()) {
            (true, Some(step)) => {
                let every = a.interval.unwrap_or(json_stream::DEFAULT_INTERVAL_S);
                let doc = meshperf_protocol::iperf3_json::document(result, step, every);
                serde_json::to_vec_pretty(&doc)?
            }
            // iperf3's shape of a test that never ran.
            (true, None) => serde_json::to_vec_pretty(&serde_json::json!({
                "start": {}, "intervals": [], "end": {},
                "error": "interrupted before the test ran",
            }))?,
            (false, _) => serde_json::to_vec_pretty(result)?,
        };
        doc.push(b'\n');
        write(path, doc)?;
    }
    if let Some(path) = &a.csv {
        write(path, meshperf_protocol::export::csv(result).into_bytes())?;
    }
    Ok(())
}

/// Prints the permalink as the last line of stdout: `<web>#r=<link>`, the
/// web app's address with the whole result in the fragment (on stderr when
/// stdout carries a `-` document).
fn print_permalink(web: &str, result: &RunResult, to_stderr: bool) {
    let base = web.split('#').next().unwrap_or(web);
    match meshperf_protocol::permalink::encode_reporting(result) {
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
