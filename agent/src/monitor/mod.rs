//! `meshperf monitor`: the matrix of `meshperf run --matrix` on a schedule,
//! its last result per ordered pair served as Prometheus metrics.
//!
//! A subcommand of its own rather than a mode of `meshperf agent`: it is a
//! controller (the same step driver and rounds as `meshperf run`), one per
//! cluster or a few, while agents are one per node; an agent that also
//! scheduled matrices would make every node start the same N^2 tests. Apart,
//! the agent keeps no schedule, no agent list and no token of others, and the
//! monitor needs no data ports and no privileges.
//!
//! Each run: resolve every `--agent` again (a `dns:` name follows the pods
//! that come and go), connect, check the step against each pair's limits,
//! run the circle method's rounds, record and publish the whole page. An
//! agent that cannot be reached or refuses the token fails its pairs; the
//! others are measured. A run longer than `--every` delays the next one
//! (never two at once), and says so on stderr.
//!
//! For a fleet (`ctl::sample`): `--peers K` measures each run's round of a
//! rotation (K peers per agent) instead of every pair, `--shard I/N` only
//! the pairs this monitor owns of N, and `--stale` bounds the pairs kept.

pub mod compact;
pub mod http;
pub mod metrics;

use crate::ctl::client::{self, AgentUrl, Ctl, CtlError};
use crate::ctl::flags::AgentFlags;
use crate::ctl::plan_flags::PlanFlags;
use crate::ctl::progress::Progress;
use crate::ctl::sample::{self, Sampled, Shard};
use crate::ctl::{
    agent_refs, first_test_id, hellos, inline, peers_line, rounds, unix_now, with_endpoints,
};
use crate::flags::{AllowHost, FlagText, Listen};
use meshperf_protocol::matrix::Pair;
use meshperf_protocol::plan::{Plan, Step};
use meshperf_protocol::result::{RunResult, StepResult};
use metrics::{AgentInfo, Measured, Snapshot, State};
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The light default: short udp_rr between every pair.
const DEFAULT_SETS: [&str; 2] = ["count=200", "timeout_ms=500"];

#[derive(clap::Args)]
#[command(
    flag("agent", |a| a.help(
        "Agent URL (http://HOST:PORT/#token=T) or dns:NAME[:PORT][#token=T] (every address of NAME, token from --token-file or $MESHPERF_TOKEN); repeatable. Resolved again before every run")),
    flag("max_resolve", |a| a.help(
        "Most addresses a dns: name may give: a name with more is refused with its count (in that run's line), never cut to a subset")),
    flag("token_file", |a| a.help(
        "Read the token of every --agent given without one (a dns: name, or a URL with no #token=) from this file, e.g. a mounted Kubernetes Secret, instead of $MESHPERF_TOKEN; read once, at start")),
    flag("listen", |a| a.help("Serve /metrics and /healthz here").default_value("127.0.0.1:9464")),
    flag("allow_host", |a| a.help(
        "Another name /metrics and /matrix may be reached by (repeatable), e.g. monitor.example.net; addresses, the host name and, bound to loopback or any, localhost need none")),
)]
pub struct MonitorArgs {
    #[command(flatten)]
    agents: AgentFlags,
    /// --token-file's token, read at start.
    #[arg(skip)]
    token: Option<String>,
    /// Where /metrics is served, once bound: never an agent.
    #[arg(skip)]
    own: Option<SocketAddr>,
    /// Time from one run's start to the next, e.g. 30s, 5m.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration_arg)]
    every: Duration,
    /// Each run starts up to this much later than its slot, at random, so
    /// that monitors started together do not test at once (default: a
    /// tenth of --every).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    jitter: Option<Duration>,
    #[command(flatten)]
    listen: Listen,
    #[command(flatten)]
    allow_host: AllowHost,
    /// The origin of a page that may read /matrix.json from a browser
    /// (CORS), e.g. https://meshperf.example.net (repeatable; * for any):
    /// the last run's agents, --web and pages on loopback need none.
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = origin_arg)]
    allow_origin: Vec<String>,
    #[command(flatten)]
    plan: PlanFlags,
    /// One pair at a time (links that share a bottleneck).
    #[arg(long)]
    serial: bool,
    /// The web app /matrix opens the latest matrix in (default: the page
    /// of the run's first agent, http://HOST:PORT/).
    #[arg(long, value_name = "URL")]
    web: Option<String>,
    /// For a fleet: each run, every agent measures K peers instead of every
    /// other, rotating so that any ceil((N-1)/K) consecutive runs measure
    /// every ordered pair (K of N-1 or more: the full mesh, said once).
    #[arg(long, value_name = "K", value_parser = sample::peers_arg)]
    peers: Option<usize>,
    /// This monitor's share of the pairs, shard I of N (0 to N-1), e.g.
    /// 0/2; ordinal/N takes I from the host name's -NUMBER suffix (a
    /// StatefulSet's pod). The N monitors of a set, each given the same N,
    /// split the ordered pairs by a stable hash of their agents' names:
    /// together every pair, each once; /metrics says the shard.
    #[arg(long, value_name = "I/N", env = "MESHPERF_SHARD", value_parser = sample::shard_arg)]
    shard: Option<Shard>,
    /// Per-pair series only for pairs measured within this window, e.g.
    /// 15m (default: twice --every); the per-node aggregates cover the
    /// same pairs.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    stale: Option<Duration>,
    /// Stop after this many runs (default: until SIGTERM or Ctrl-C).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    runs: Option<u64>,
}

fn origin_arg(s: &str) -> Result<String, String> {
    let o = s.trim_end_matches('/').to_ascii_lowercase();
    let well_formed = o == "*"
        || o.split_once("://").is_some_and(|(scheme, rest)| {
            matches!(scheme, "http" | "https") && !rest.is_empty() && !rest.contains('/')
        });
    if well_formed {
        Ok(o)
    } else {
        Err(format!(
            "{s:?} is not an origin: give scheme://host[:port] as the browser shows it, e.g. https://meshperf.example.net, or *"
        ))
    }
}

/// From this many agents the page shows a matrix as a fleet (web/src/lib/
/// matrix/fleet.ts `FLEET_FROM`), and `/matrix` opens the compact form by
/// URL: a link carries at most some hundred pairs, and building one for
/// thousands (four encodings of the whole run, each a copy of every step,
/// before it says "too large") took most of the monitor's memory.
const FLEET_FROM: usize = 65;

fn duration_arg(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 30s, 5m)"))
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("meshperf monitor: {msg}");
    Ok(ExitCode::from(2))
}

fn random_below(max: Duration) -> Duration {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the OS random source works");
    max.mul_f64((u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64)
}

fn load_plan(a: &MonitorArgs) -> Result<Plan, String> {
    if a.plan.none() {
        let sets: Vec<String> = DEFAULT_SETS
            .iter()
            .map(|s| s.to_string())
            .chain(a.plan.set.iter().cloned())
            .collect();
        return inline::build(None, Some("udp_rr"), &sets, &[], None);
    }
    a.plan.build(&[], None)
}

/// A run's figures into the metrics and the latest matrix; the lines said
/// of it.
fn record(
    state: &mut State,
    run: Collected,
    a: &MonitorArgs,
    plan: &Plan,
    last_matrix: &http::LatestMatrix,
    began: Instant,
) -> Vec<String> {
    let (agents, total, ok) = (run.agents, run.figures.len(), run.ok);
    let view: Vec<(String, String, Measured)> = run
        .figures
        .into_iter()
        .map(|(p, m)| {
            (
                agents[p.client].addr.clone(),
                agents[p.server].addr.clone(),
                m,
            )
        })
        .collect();
    let stale = state.stale_seconds;
    let now = unix_now();
    state.record(agents, view, now, stale);
    state.runs += 1;
    let plan_json = serde_json::to_string(plan).unwrap_or_else(|_| "null".into());
    let mut origins: Vec<String> = a.allow_origin.clone();
    for u in &run.urls {
        let scheme = if u.tls() { "https" } else { "http" };
        origins.push(format!("{scheme}://{}", u.hostport()).to_ascii_lowercase());
    }
    if let Some(w) = &run.page {
        origins.extend(page_origin(w));
    }
    let latest = http::Latest {
        json: run.json,
        link: run.link,
        compact: compact::render(state, &plan_json, now),
        origins,
    };
    if let Ok(mut l) = last_matrix.lock() {
        *l = Some(Arc::new(latest));
    }
    let mut said = vec![format!(
        "run {}: {} agents, {ok} of {total} pairs measured in {:.1} s{}",
        state.runs,
        state.agents.len(),
        began.elapsed().as_secs_f64(),
        match (state.rotation > 1, state.shard) {
            (false, None) => String::new(),
            (true, None) => format!(
                " (--peers {}, rotation of {} runs)",
                state.peers, state.rotation
            ),
            (false, Some((i, n))) => format!(" (shard {i}/{n}: {} pairs)", state.owned),
            (true, Some((i, n))) => format!(
                " (shard {i}/{n}: {} pairs; --peers {}, rotation of {} runs)",
                state.owned, state.peers, state.rotation
            ),
        }
    )];
    if let [only] = &state.agents[..] {
        said.push(format!(
            "only one agent ({}): a matrix needs two or more; nothing is measured until another appears",
            only.addr
        ));
    }
    said
}

/// The origin (`scheme://host[:port]`, lower case) of page address `url`.
fn page_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '#', '?']).next()?;
    (!host.is_empty()).then(|| format!("{scheme}://{host}").to_ascii_lowercase())
}

/// The least a run over `n` agents takes: its rounds times the step's
/// `duration_s` (0 for a step bounded by a count).
fn least_run_time(step: &Step, rounds: usize) -> f64 {
    step.params
        .get("duration_s")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
        * rounds as f64
}

/// The plan's one step and the jitter, from the flags (the token file read
/// into `a.token`), or the usage error.
fn checked(a: &mut MonitorArgs) -> Result<(Plan, Step, Duration), String> {
    let plan = load_plan(a)?;
    let steps = plan.expand().map_err(|e| e.to_string())?;
    if steps.len() != 1 {
        return Err(format!(
            "a monitor runs one step between every pair; this plan has {} (no sweeps or repetitions)",
            steps.len()
        ));
    }
    let step = steps.into_iter().next().expect("one step");
    if a.every < Duration::from_secs(1) {
        return Err(format!("--every {:?} is below 1 s", a.every));
    }
    let jitter = a.jitter.unwrap_or(a.every / 10);
    if jitter >= a.every {
        return Err("--jitter must be shorter than --every".into());
    }
    let stale = a.stale.unwrap_or(a.every * 2);
    if stale < a.every {
        return Err(format!(
            "--stale {} is shorter than --every {}: every pair's series would vanish between runs; give --every or more",
            humantime::format_duration(stale),
            humantime::format_duration(a.every)
        ));
    }
    a.stale = Some(stale);
    a.token = a.agents.token("meshperf monitor")?;
    // Bad agent arguments (syntax, a missing token) are usage errors now;
    // a name with no addresses is only reported, run by run.
    for (_, found) in a.agents.resolve(a.token.as_deref()) {
        if let Err(CtlError::Usage(m)) = found {
            return Err(m);
        }
    }
    Ok((plan, step, jitter))
}

pub fn run(mut a: MonitorArgs) -> anyhow::Result<ExitCode> {
    let (plan, step, jitter) = match checked(&mut a) {
        Ok(x) => x,
        Err(e) => return usage(e),
    };
    let at = a.listen.listen;
    let listener = match TcpListener::bind(at) {
        Ok(l) => l,
        Err(e) => return usage(format!("--listen {at}: {e}")),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(s, stop.clone())?;
    }
    let snap = Snapshot::default();
    let mut state = State {
        kind: plan.kind.name().to_string(),
        shard: a.shard.map(|s| (s.index, s.count)),
        stale_seconds: a.stale.unwrap_or(a.every * 2).as_secs_f64(),
        ..State::default()
    };
    state.publish(&snap);
    let bound = listener.local_addr()?;
    a.own = Some(bound);
    let page = snap.clone();
    let last_matrix = http::LatestMatrix::default();
    http::spawn(
        listener,
        "meshperf monitor",
        a.allow_host.names(bound.ip()),
        move || page.get(),
        Some(last_matrix.clone()),
    );
    eprintln!(
        "meshperf monitor: {} every {} (jitter up to {}), metrics on http://{}/metrics",
        plan.name.as_deref().unwrap_or(plan.kind.name()),
        humantime::format_duration(a.every),
        humantime::format_duration(Duration::from_millis(jitter.as_millis() as u64)),
        bound,
    );

    let mut next_id = first_test_id();
    let mut slot = Instant::now();
    let mut due = slot + random_below(jitter);
    let mut done = 0u64;
    let mut said_full = false;
    loop {
        while Instant::now() < due && !stop.load(Ordering::Relaxed) {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(100)));
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let began = Instant::now();
        // What is said of the run goes out after its page is published: a
        // reader of stderr then finds the page up to date.
        let mut said = Vec::new();
        let round = state.rotation_run;
        match run_once(&a, &plan, &step, &stop, &mut next_id, done == 0, round) {
            Err(RunError::Usage(m)) => return usage(m),
            Err(RunError::Resolve(m)) => {
                said.push(format!("{m}; no run this time"));
                state.resolve_errors += 1;
            }
            Ok((measured, sampled)) => {
                let n = measured.agents.len();
                if let Some(k) = a
                    .peers
                    .filter(|_| !said_full && n >= 2 && sampled.rotation == 1)
                {
                    said_full = true;
                    said.push(peers_line(k, n, round, 1));
                }
                state.peers = sampled.peers;
                state.rotation = sampled.rotation;
                state.owned = sampled.owned;
                state.rotation_run += 1;
                said.extend(record(&mut state, measured, &a, &plan, &last_matrix, began));
            }
        }
        done += 1;
        let took = began.elapsed();
        state.last_run_seconds = Some(took.as_secs_f64());
        state.last_run_end = Some(unix_now());
        slot += a.every;
        let now = Instant::now();
        if now > slot {
            state.overruns += 1;
            said.push(format!(
                "the run took {:.1} s, longer than --every {}: the next one starts now, {:.1} s late",
                took.as_secs_f64(),
                humantime::format_duration(a.every),
                (now - slot).as_secs_f64()
            ));
            slot = now;
            due = now;
        } else {
            due = slot + random_below(jitter);
        }
        state.publish(&snap);
        for m in said {
            eprintln!("meshperf monitor: {m}");
        }
        if a.runs.is_some_and(|n| done >= n) || stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `u` (of `--agent arg`) is the monitor's own `/metrics` socket
/// `own` (any address of this host when bound to any), which a `dns:` name
/// may list: said on stderr, and left out (it is not an agent).
fn is_self(arg: &str, u: &AgentUrl, own: Option<SocketAddr>) -> bool {
    let (Some(own), Ok(ip)) = (own, u.host.parse::<std::net::IpAddr>()) else {
        return false;
    };
    let ip = ip.to_canonical();
    let me = u.port == own.port()
        && (ip == own.ip()
            || (own.ip().is_unspecified()
                && (ip.is_loopback()
                    || crate::sysinfo::addresses().iter().any(|(_, a)| *a == ip))));
    if me {
        eprintln!(
            "meshperf monitor: --agent {arg}: {} is this monitor's own /metrics address, not an agent: left out",
            u.hostport()
        );
    }
    me
}

enum RunError {
    /// Stops the monitor (only before its first run).
    Usage(String),
    /// This run is skipped.
    Resolve(String),
}

/// One run as the monitor keeps it: its agents, each pair's figures (not
/// its test: see [`Measured`]), the run's result file as text, and where
/// `/matrix` goes.
struct Collected {
    agents: Vec<AgentInfo>,
    urls: Vec<AgentUrl>,
    figures: Vec<(Pair, Measured)>,
    /// Pairs measured (not failed).
    ok: usize,
    json: String,
    link: http::Link,
    /// The web app's address (`--web`, else the first agent's page).
    page: Option<String>,
}

/// The run's result file, as `meshperf run --matrix --json` writes it
/// (each agent's `hello` with its `endpoint`, HOST:PORT, as the page
/// writes a matrix), from `steps`: each step already as JSON, joined by
/// commas (a step is serialized as it ends and dropped: a run of thousands
/// of pairs is never held whole); and the link to the page carrying it
/// (`kept`, the steps themselves, for a run under [`FLEET_FROM`] agents)
/// or, for a fleet, the page that opens `/matrix.json?form=compact`.
fn latest(
    plan: &Plan,
    mut hellos: Vec<serde_json::Value>,
    urls: &[AgentUrl],
    web: Option<&str>,
    steps: &str,
    kept: Vec<StepResult>,
) -> (String, http::Link, String) {
    with_endpoints(&mut hellos, urls);
    let mut doc = RunResult::new(plan.clone(), hellos, unix_now());
    let head = serde_json::to_string(&doc).unwrap_or_default();
    // `steps` is the last field written (samples_replaced, after it, is
    // never set here): the steps go in its place.
    let json = match head.strip_suffix("[]}") {
        Some(h) => format!("{h}[{steps}]}}\n"),
        None => format!("{head}\n"),
    };
    let base = web.map(str::to_string).unwrap_or_else(|| {
        urls.first().map_or_else(String::new, |u| {
            let scheme = if u.tls() { "https" } else { "http" };
            format!("{scheme}://{}/", u.hostport())
        })
    });
    let base = base.split('#').next().unwrap_or("").to_string();
    if urls.len() >= FLEET_FROM {
        return (json, http::Link::Fleet { page: base.clone() }, base);
    }
    doc.steps = kept;
    let link = match meshperf_protocol::permalink::encode_reporting(&doc) {
        Ok((link, _)) => format!("{base}#r={link}"),
        Err(e) => format!("{base}#no-link: {e}"),
    };
    (json, http::Link::Permalink(link), base)
}

fn run_once(
    a: &MonitorArgs,
    plan: &Plan,
    step: &Step,
    stop: &AtomicBool,
    next_id: &mut u32,
    first: bool,
    round: u64,
) -> Result<(Collected, Sampled), RunError> {
    let mut urls: Vec<AgentUrl> = Vec::new();
    for (arg, found) in a.agents.resolve(a.token.as_deref()) {
        match found {
            Ok(u) => urls.extend(u.into_iter().filter(|u| !is_self(arg, u, a.own))),
            Err(CtlError::Usage(m) | CtlError::Auth(m) | CtlError::Io(m)) => {
                return Err(RunError::Resolve(m))
            }
        }
    }
    // The same agent named twice (a URL and a dns: name) is one agent.
    let mut seen = std::collections::HashSet::new();
    urls.retain(|u| seen.insert(u.hostport()));
    let n = urls.len();
    // Every ordered pair (its metrics are per ordered pair), or this run's
    // round of the --peers rotation, of this --shard's pairs; pairs an
    // agent refuses as busy (another controller) tried again later.
    let names: Vec<String> = urls.iter().map(AgentUrl::hostport).collect();
    let (schedule, sampled) = sample::schedule(&names, a.peers, round, a.shard, a.serial);
    let least = least_run_time(step, schedule.planned_rounds());
    if least >= a.every.as_secs_f64() {
        let m = format!(
            "--every {} is shorter than the matrix takes: {} rounds over {n} agents of duration_s {} each, {least:.0} s at least",
            humantime::format_duration(a.every),
            schedule.planned_rounds(),
            least / schedule.planned_rounds() as f64
        );
        if first {
            return Err(RunError::Usage(m));
        }
        eprintln!("meshperf monitor: {m}");
    }
    let mut ctls = Vec::with_capacity(n);
    let mut gone = Vec::with_capacity(n);
    for u in &urls {
        match Ctl::connect_reading(u, client::LEAN_READ_CHUNK) {
            Ok(c) => {
                ctls.push(Some(c));
                gone.push(None);
            }
            Err(CtlError::Usage(m) | CtlError::Auth(m) | CtlError::Io(m)) => {
                eprintln!("meshperf monitor: {m}; its pairs fail this run");
                ctls.push(None);
                gone.push(Some(m));
            }
        }
    }
    let infos: Vec<AgentInfo> = urls
        .iter()
        .zip(&ctls)
        .map(|(u, c)| AgentInfo {
            addr: u.hostport(),
            hostname: c
                .as_ref()
                .and_then(|c| c.hello["hostname"].as_str())
                .unwrap_or("")
                .to_string(),
        })
        .collect();
    let refs = agent_refs(&urls, &ctls);
    let hellos = hellos(&ctls);
    let mut agents = rounds::Agents { ctls, refs, gone };
    let total = schedule.pairs();
    let mut out = Progress::new(total);
    let mut figures = Vec::with_capacity(total);
    let mut steps = String::new();
    let mut kept = Vec::new();
    let mut ok = 0;
    rounds::run_matrix(
        &mut agents,
        step,
        schedule,
        next_id,
        stop,
        &mut out,
        "meshperf monitor",
        |mut r, agents, _| {
            let pair = r.pair.expect("a matrix's results carry their pair");
            if let Some(e) = &r.error {
                eprintln!(
                    "meshperf monitor: {} -> {}: {e}",
                    agents.refs[pair.client].label, agents.refs[pair.server].label
                );
            } else {
                ok += 1;
            }
            r.index = figures.len();
            figures.push((pair, Measured::of(&r)));
            if !steps.is_empty() {
                steps.push(',');
            }
            steps.push_str(&serde_json::to_string(&r).unwrap_or_else(|_| "null".into()));
            if n < FLEET_FROM {
                kept.push(r);
            }
        },
    );
    drop(agents);
    let (json, link, page) = latest(plan, hellos, &urls, a.web.as_deref(), &steps, kept);
    drop(steps);
    Ok((
        Collected {
            agents: infos,
            urls,
            figures,
            ok,
            json,
            link,
            page: Some(page),
        },
        sampled,
    ))
}
