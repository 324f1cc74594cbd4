//! `meshperf monitor` against real agents on loopback: scheduled matrices,
//! `/metrics` fetched over HTTP and parsed as the Prometheus text format,
//! a killed agent's pairs failing, and its bad input.

use crate::util::{http_get, scrapes_survive_slow_clients, AgentProc};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) fn url(a: &AgentProc) -> String {
    format!("http://{}/#token={}", a.addr(), a.token)
}

/// A running `meshperf monitor` with its stderr collected line by line.
pub(crate) struct Monitor {
    child: Child,
    err: Arc<Mutex<Vec<String>>>,
    pub(crate) metrics: String,
}

impl Monitor {
    pub(crate) fn start(args: &[&str]) -> Monitor {
        Self::start_env(args, &[])
    }

    /// Like [`Monitor::start`] with extra environment variables.
    pub(crate) fn start_env(args: &[&str], env: &[(&str, &str)]) -> Monitor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_meshperf"))
            .envs(env.iter().copied())
            .arg("monitor")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn meshperf monitor");
        let err = Arc::new(Mutex::new(Vec::new()));
        let lines = err.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(l);
            }
        });
        let mut m = Monitor {
            child,
            err,
            metrics: String::new(),
        };
        let first = m.wait_line("metrics on http://", 10);
        m.metrics = first
            .split("metrics on http://")
            .nth(1)
            .unwrap()
            .trim_end_matches("/metrics")
            .to_string();
        m
    }

    pub(crate) fn stderr(&self) -> String {
        self.err.lock().unwrap().join("\n")
    }

    /// The first stderr line containing `what`, waiting up to `secs`.
    pub(crate) fn wait_line(&self, what: &str, secs: u64) -> String {
        let t = Instant::now();
        loop {
            if let Some(l) = self.err.lock().unwrap().iter().find(|l| l.contains(what)) {
                return l.clone();
            }
            assert!(
                t.elapsed() < Duration::from_secs(secs),
                "no {what:?} on stderr within {secs} s:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `/metrics`, parsed: series (name and sorted labels) to value.
    pub(crate) fn scrape(&self) -> Series {
        let (head, body) = http_get(&self.metrics, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.contains("Content-Type: text/plain; version=0.0.4"),
            "{head}"
        );
        parse(&body)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One series: its metric name and labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) labels: Vec<(String, String)>,
}

impl Key {
    pub(crate) fn label(&self, k: &str) -> &str {
        &self.labels.iter().find(|(n, _)| n == k).unwrap().1
    }
}

pub(crate) type Series = HashMap<Key, f64>;

/// The text exposition format: `# HELP`/`# TYPE` lines, then
/// `name{k="v",...} value` (labels as the prometheus crate writes them:
/// no commas or quotes inside our values).
fn parse(text: &str) -> Series {
    let mut out = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').expect("series value");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let mut labels: Vec<(String, String)> = labels
            .split(',')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("k=v");
                (k.to_string(), v.trim_matches('"').to_string())
            })
            .collect();
        labels.sort();
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
        let key = Key {
            name: name.to_string(),
            labels,
        };
        assert!(out.insert(key, v).is_none(), "{line} twice");
    }
    out
}

pub(crate) fn of<'a>(s: &'a Series, name: &str) -> Vec<(&'a Key, f64)> {
    let mut v: Vec<_> = s
        .iter()
        .filter(|(k, _)| k.name == name)
        .map(|(k, v)| (k, *v))
        .collect();
    v.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
    v
}

pub(crate) fn one(s: &Series, name: &str) -> f64 {
    let v = of(s, name);
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    v[0].1
}

/// What every page must hold, whenever it is read (scrapes land mid-run
/// too): one `up`, one failure counter and one age per pair, as many as
/// the page counts, one info series per agent counted, every ordered pair
/// of a full mesh of one monitor, and no run counted twice or lost.
fn consistent(s: &Series, runs_before: &mut f64) {
    let up = of(s, "meshperf_pair_up");
    let fails = of(s, "meshperf_pair_failures_total");
    let ages = of(s, "meshperf_pair_last_measured_timestamp_seconds");
    let pairs = |v: &[(&Key, f64)]| -> Vec<(String, String)> {
        v.iter().map(|(k, _)| pair_of(k)).collect()
    };
    assert_eq!(pairs(&up), pairs(&fails), "a page with half a run");
    assert_eq!(pairs(&up), pairs(&ages), "a page with half a run");
    assert_eq!(one(s, "meshperf_monitor_pairs"), up.len() as f64);
    let agents = of(s, "meshperf_agent_info").len() as f64;
    let (shard, _) = of(s, "meshperf_monitor_shard_info")[0];
    let whole = shard.label("shards") == "1" && one(s, "meshperf_monitor_rotation_runs") == 1.0;
    if agents > 0.0 && whole {
        assert_eq!(one(s, "meshperf_monitor_agents"), agents);
        assert_eq!(
            up.len() as f64,
            agents * (agents - 1.0),
            "every ordered pair of the run's agents"
        );
    }
    let runs = one(s, "meshperf_monitor_runs_total");
    assert!(
        runs >= *runs_before,
        "runs_total went from {runs_before} to {runs}"
    );
    *runs_before = runs;
}

/// Waits until `/metrics` reports `runs` finished runs, checking every page
/// read on the way (every 20 ms: most land during a run).
pub(crate) fn scrape_after(m: &Monitor, runs: f64, secs: u64) -> Series {
    let t = Instant::now();
    let mut seen = 0.0;
    loop {
        let s = m.scrape();
        consistent(&s, &mut seen);
        if one(&s, "meshperf_monitor_runs_total") >= runs {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(secs),
            "{runs} runs not done in {secs} s:\n{}",
            m.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn pair_of(k: &Key) -> (String, String) {
    (k.label("src").to_string(), k.label("dst").to_string())
}

/// Three agents, a run every 2 s: after two runs `/metrics` has one series
/// per ordered pair (6) of each figure, with plausible loopback values;
/// an agent killed then fails its 4 pairs (up 0, failures counted, last
/// success kept) while the other 2 stay measured.
#[test]
fn monitor_serves_every_ordered_pair_and_a_killed_agent_fails_its_pairs() {
    let mut agents: Vec<AgentProc> = (0..3).map(|_| AgentProc::start(&[])).collect();
    let urls: Vec<String> = agents.iter().map(url).collect();
    let mut args: Vec<&str> = urls.iter().flat_map(|u| ["--agent", u.as_str()]).collect();
    args.extend(["--every", "2s"]);
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let m = Monitor::start(&args);
    let (head, body) = http_get(&m.metrics, "/healthz");
    assert!(
        head.starts_with("HTTP/1.1 200") && body == "ok\n",
        "{head}{body}"
    );
    let (head, _) = http_get(&m.metrics, "/nope");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    let s = scrape_after(&m, 2.0, 30);
    m.wait_line("run 2: 3 agents, 6 of 6 pairs measured", 5);
    // The latest matrix: its result file, and a link to the first agent's
    // page carrying it (what the page opens as a matrix).
    let (head, body) = http_get(&m.metrics, "/matrix.json");
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("application/json"),
        "{head}"
    );
    let doc = meshperf_protocol::result::load(&body).unwrap();
    assert_eq!(doc.steps.len(), 6);
    assert!(doc
        .steps
        .iter()
        .all(|s| s.pair.is_some() && s.error.is_none()));
    let (head, _) = http_get(&m.metrics, "/matrix");
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap_or_else(|| panic!("{head}"));
    let (page, link) = location.split_once("#r=").unwrap();
    assert_eq!(page, format!("http://{}/", agents[0].addr()));
    let linked = meshperf_protocol::permalink::decode(link).unwrap();
    assert_eq!(linked.steps.len(), 6);
    assert!(linked.steps.iter().all(|s| s.pair.is_some()));
    let addrs: Vec<String> = agents.iter().map(AgentProc::addr).collect();
    let want = every_pair(&agents);
    let pairs = |name: &str| -> std::collections::BTreeSet<(String, String)> {
        of(&s, name).into_iter().map(|(k, _)| pair_of(k)).collect()
    };
    for name in [
        "meshperf_pair_loss_ratio",
        "meshperf_pair_up",
        "meshperf_pair_last_success_timestamp_seconds",
        "meshperf_pair_failures_total",
    ] {
        assert_eq!(of(&s, name).len(), 6, "{name}");
        assert_eq!(pairs(name), want, "{name}");
    }
    // udp_rr by default: no throughput series.
    assert!(of(&s, "meshperf_pair_throughput_bits_per_second").is_empty());
    let rtt = of(&s, "meshperf_pair_rtt_seconds");
    assert_eq!(rtt.len(), 18, "3 quantiles x 6 pairs");
    for (src, dst) in &want {
        let q = |quantile: &str| {
            rtt.iter()
                .find(|(k, _)| {
                    pair_of(k) == (src.clone(), dst.clone()) && k.label("quantile") == quantile
                })
                .unwrap()
                .1
        };
        let (p50, p90, p99) = (q("0.5"), q("0.9"), q("0.99"));
        assert!(
            0.0 < p50 && p50 <= p90 && p90 <= p99 && p99 < 0.05,
            "{src} -> {dst}: {p50} {p90} {p99}"
        );
    }
    for (k, v) in of(&s, "meshperf_pair_loss_ratio") {
        assert!(v < 0.05, "{k:?} lost {v}");
    }
    for (k, v) in of(&s, "meshperf_pair_up") {
        assert_eq!(v, 1.0, "{k:?}");
    }
    for (k, v) in of(&s, "meshperf_pair_failures_total") {
        assert_eq!(v, 0.0, "{k:?}");
    }
    let now = t0 + 60.0;
    for (k, v) in of(&s, "meshperf_pair_last_success_timestamp_seconds") {
        assert!(t0 < v && v < now, "{k:?} {v}");
    }
    assert_eq!(one(&s, "meshperf_monitor_agents"), 3.0);
    assert_eq!(of(&s, "meshperf_agent_info").len(), 3);
    let took = one(&s, "meshperf_monitor_run_duration_seconds");
    assert!(0.0 < took && took < 2.0, "a run took {took} s");
    assert_eq!(one(&s, "meshperf_monitor_overruns_total"), 0.0);
    let end = one(&s, "meshperf_monitor_last_run_timestamp_seconds");
    assert!(t0 < end && end < now, "{end}");

    // Kill the third agent: its pairs fail from the next run on.
    let dead = addrs[2].clone();
    let _ = agents[2].child.kill();
    let _ = agents[2].child.wait();
    let runs = one(&m.scrape(), "meshperf_monitor_runs_total");
    let s2 = scrape_after(&m, runs + 1.0, 30);
    let fails: HashMap<(String, String), f64> = of(&s2, "meshperf_pair_failures_total")
        .into_iter()
        .map(|(k, v)| (pair_of(k), v))
        .collect();
    let ups: HashMap<(String, String), f64> = of(&s2, "meshperf_pair_up")
        .into_iter()
        .map(|(k, v)| (pair_of(k), v))
        .collect();
    let lasts: HashMap<(String, String), f64> =
        of(&s2, "meshperf_pair_last_success_timestamp_seconds")
            .into_iter()
            .map(|(k, v)| (pair_of(k), v))
            .collect();
    assert_eq!(fails.len(), 6, "the dead agent's pairs stay listed");
    for p in &want {
        let involved = p.0 == dead || p.1 == dead;
        assert_eq!(fails[p], if involved { 1.0 } else { 0.0 }, "{p:?}");
        assert_eq!(ups[p], if involved { 0.0 } else { 1.0 }, "{p:?}");
        assert!(lasts[p] > t0, "{p:?}: the last success is kept");
    }
    let rtt2 = of(&s2, "meshperf_pair_rtt_seconds");
    assert_eq!(rtt2.len(), 6, "RTTs of the 2 measured pairs only: {rtt2:?}");
    assert!(
        m.stderr().contains(&format!("agent {dead}: unreachable")),
        "{}",
        m.stderr()
    );
    drop(agents);
}

/// Bad input, each a one-line error: an agent with another token fails its
/// pairs while the rest is measured; a listener that never answers makes a
/// run overrun `--every`, and the next waits and says so; a name that
/// resolves to nothing skips the run; a schedule shorter than the matrix
/// takes is refused before anything runs.
#[test]
fn monitor_bad_input_wrong_token_overrun_empty_name_short_schedule() {
    let a = AgentProc::start(&[]);
    let b = AgentProc::start(&[]);
    let c = AgentProc::start(&[]);
    let wrong = format!("http://{}/#token=not-{}", c.addr(), c.token);
    // Accepts TCP, never says a word: the WebSocket handshake waits 5 s.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/#token=x", silent.local_addr().unwrap());
    let (ua, ub) = (url(&a), url(&b));
    let m = Monitor::start(&[
        "--agent",
        &ua,
        "--agent",
        &ub,
        "--agent",
        &wrong,
        "--agent",
        &silent_url,
        "--every",
        "1s",
    ]);
    let s = scrape_after(&m, 1.0, 30);
    let err = m.stderr();
    let auth: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("authentication failed"))
        .collect();
    assert!(!auth.is_empty(), "{err}");
    assert!(auth[0].contains(&c.addr()), "{err}");
    m.wait_line("longer than --every 1s: the next one starts now", 5);
    assert!(one(&s, "meshperf_monitor_overruns_total") >= 1.0, "{err}");
    let ups: HashMap<(String, String), f64> = of(&s, "meshperf_pair_up")
        .into_iter()
        .map(|(k, v)| (pair_of(k), v))
        .collect();
    assert_eq!(ups.len(), 12, "4 agents");
    for ((src, dst), v) in &ups {
        let good = [a.addr(), b.addr()];
        let measured = good.contains(src) && good.contains(dst);
        assert_eq!(*v, if measured { 1.0 } else { 0.0 }, "{src} -> {dst}");
    }
    drop(m);

    // A name with no addresses: the run is skipped and counted, one line.
    let m = Monitor::start(&[
        "--agent",
        "dns:no-such-host.invalid#token=abcdefgh",
        "--every",
        "1s",
    ]);
    let s = scrape_after_resolve_error(&m);
    assert_eq!(one(&s, "meshperf_monitor_runs_total"), 0.0);
    let line = m.wait_line("no-such-host.invalid", 5);
    assert!(
        line.contains("cannot resolve") && line.ends_with("no run this time"),
        "{line}"
    );
    drop(m);

    // Six rounds of 2 s cannot fit in 2 s: refused, one line, exit 2.
    let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "monitor",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &ua,
            "--agent",
            &ub,
        ])
        .args([
            "--agent",
            &url(&c),
            "--kind",
            "tcp_stream",
            "--set",
            "duration_s=2",
            "--every",
            "2s",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("meshperf monitor: --every 2s is shorter than the matrix takes: 6 rounds"),
        "{err}"
    );
}

fn scrape_after_resolve_error(m: &Monitor) -> Series {
    let t = Instant::now();
    loop {
        let s = m.scrape();
        if one(&s, "meshperf_monitor_resolve_errors_total") >= 1.0 {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{}", m.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The monitor's /metrics under 32 slow clients from two addresses (one the
/// scraper's): every scrape answered within 1 s, the slow ones closed at
/// their request deadline, foreign `Host` names refused (util.rs).
#[test]
fn monitor_answers_scrapes_under_slow_clients() {
    let a = AgentProc::start(&[]);
    let b = AgentProc::start(&[]);
    let (ua, ub) = (url(&a), url(&b));
    let m = Monitor::start(&["--agent", &ua, "--agent", &ub, "--every", "1h"]);
    scrapes_survive_slow_clients(&m.metrics, "/metrics");
    scrapes_survive_slow_clients(&m.metrics, "/healthz");
}

/// Every ordered pair of `agents`' addresses (driving, serving).
pub(crate) fn every_pair(agents: &[AgentProc]) -> std::collections::BTreeSet<(String, String)> {
    let addrs: Vec<String> = agents.iter().map(AgentProc::addr).collect();
    addrs
        .iter()
        .flat_map(|a| {
            addrs
                .iter()
                .filter(move |b| *b != a)
                .map(move |b| (a.clone(), b.clone()))
        })
        .collect()
}

/// A path monitor over three loopback agents, two runs: every ordered
/// pair's hops (1: the peer) and path MTU (lo's) each way, its route
/// changes each way counted (none: loopback's route cannot change; the
/// counting itself is monitor::metrics' unit test), the per-node
/// aggregates over the same pairs, and the RTT of the probes.
#[test]
fn monitor_path_exports_hops_and_mtu_each_way_and_counts_route_changes() {
    let agents: Vec<AgentProc> = (0..3).map(|_| AgentProc::start(&[])).collect();
    let urls: Vec<String> = agents.iter().map(url).collect();
    let mut args: Vec<&str> = urls.iter().flat_map(|u| ["--agent", u.as_str()]).collect();
    args.extend([
        "--kind",
        "path",
        "--set",
        "max_hops=3",
        "--set",
        "wait_ms=200",
        "--set",
        "dscp=46",
        "--every",
        "3s",
    ]);
    let m = Monitor::start(&args);
    let s = scrape_after(&m, 2.0, 60);
    m.wait_line("run 2: 3 agents, 6 of 6 pairs measured", 5);
    let want = every_pair(&agents);
    let mtu = crate::path::lo_mtu() as f64;
    for (name, value) in [
        ("meshperf_pair_path_hops", 1.0),
        ("meshperf_pair_path_mtu_bytes", mtu),
        ("meshperf_pair_path_changes_total", 0.0),
    ] {
        let series = of(&s, name);
        assert_eq!(
            series.len(),
            12,
            "{name}: 6 pairs, 2 directions: {series:?}"
        );
        let mut ways = std::collections::BTreeSet::new();
        for (k, v) in series {
            assert_eq!(v, value, "{name} {k:?}");
            ways.insert((pair_of(k), k.label("direction").to_string()));
        }
        let both: std::collections::BTreeSet<_> = want
            .iter()
            .flat_map(|p| ["forth", "back"].map(|d| (p.clone(), d.to_string())))
            .collect();
        assert_eq!(ways, both, "{name}");
    }
    assert_eq!(of(&s, "meshperf_pair_rtt_seconds").len(), 18);
    let kind = of(&s, "meshperf_monitor_info");
    assert_eq!(kind[0].0.label("kind"), "path");
    // Per node, as src and dst: the worst and the median peer, and no
    // pair whose route changed.
    for a in &agents {
        for role in ["src", "dst"] {
            let node = |name: &str| -> Vec<(String, f64)> {
                of(&s, name)
                    .into_iter()
                    .filter(|(k, _)| k.label("agent") == a.addr() && k.label("role") == role)
                    .map(|(k, v)| {
                        let stat = k.labels.iter().find(|(n, _)| n == "stat");
                        (stat.map_or(String::new(), |s| s.1.clone()), v)
                    })
                    .collect()
            };
            assert_eq!(
                node("meshperf_node_path_hops"),
                [("median".to_string(), 1.0), ("worst".to_string(), 1.0)]
            );
            assert_eq!(
                node("meshperf_node_path_mtu_bytes"),
                [("median".to_string(), mtu), ("worst".to_string(), mtu)]
            );
            assert_eq!(
                node("meshperf_node_pairs_path_changed"),
                [(String::new(), 0.0)]
            );
        }
    }
    // The latest matrix holds the path steps, both ways each.
    let (_, body) = http_get(&m.metrics, "/matrix.json");
    let doc = meshperf_protocol::result::load(&body).unwrap();
    assert_eq!(doc.steps.len(), 6);
    for st in &doc.steps {
        assert_eq!(st.summary["forth"]["peer_hop"], 1, "{}", st.summary);
        assert_eq!(st.summary["back"]["peer_hop"], 1, "{}", st.summary);
    }
}
