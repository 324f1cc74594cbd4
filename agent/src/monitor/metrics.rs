//! What `meshperf monitor` keeps between runs (the last result of each
//! ordered pair of agents, the run counters) and its `/metrics` page in the
//! Prometheus text exposition format 0.0.4, written by the `prometheus`
//! crate's encoder.
//!
//! The page is rendered whole after each run and swapped in as one
//! `Arc<String>` ([`Snapshot`]): a scrape in the middle of a run reads the
//! previous run's page, never half of each. The label set is bounded: only
//! pairs of the agents of the last run are kept (an agent that vanished
//! takes its pairs along), each labelled by the agents' `HOST:PORT`, and
//! of those only the pairs measured within `--stale` (a sampled mesh,
//! `--peers`, measures a few each run). Per node, aggregates over the pairs
//! kept (`meshperf_node_*`: pairs, pairs failing, the worst and the median
//! peer's figure, the worst peer's name), as its row (`role="src"`, the
//! node drives) and its column (`role="dst"`, it serves): a dashboard of a
//! fleet reads those, N series each, and drills into one node's pairs.
//!
//! A `path` monitor adds each pair's hop count and path MTU each way
//! (`direction` forth, src's trace to dst, and back) and counts the runs
//! whose list of responding hops changed since the run before
//! ([`route_changed`]): a route flap shows as an increase. The routes are
//! kept over failed runs and go with the pair when it goes stale.

use meshperf_protocol::matrix::Metric;
use meshperf_protocol::params::Kind;
use meshperf_protocol::result::StepResult;
use meshperf_protocol::summary::{route_changed, PathDirection};
use prometheus::{
    Encoder, Gauge, GaugeVec, IntCounter, IntCounterVec, Opts, Registry, TextEncoder,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The latest rendered page, shared with the HTTP thread.
#[derive(Clone, Default)]
pub struct Snapshot(Arc<Mutex<Arc<String>>>);

impl Snapshot {
    pub fn get(&self) -> Arc<String> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }

    fn set(&self, page: String) {
        if let Ok(mut g) = self.0.lock() {
            *g = Arc::new(page);
        }
    }
}

/// The last result of one ordered pair: `src` drives, `dst` serves.
#[derive(Debug, Clone, Default)]
pub struct PairStat {
    /// The last run measured it.
    pub up: bool,
    /// RTT p50, p90, p99 in seconds (request/response kinds).
    pub rtt_s: Option<[f64; 3]>,
    /// Requests unanswered / requests (udp_rr), datagrams lost / sent (udp_stream).
    pub loss: Option<f64>,
    /// Bits per second (stream kinds).
    pub bps: Option<f64>,
    /// Unix time of the last run that measured it.
    pub last_success: Option<f64>,
    /// Unix time of the last run that tried it, measured or failed: its
    /// age is the time since.
    pub last_measured: f64,
    /// Runs in which it failed, since the monitor started (or the pair appeared).
    pub failures: u64,
    /// Its last test's cells, for `/matrix.json?form=compact`.
    pub cells: Cells,
    /// `path`: the routes and their changes (none for other kinds, and
    /// until the pair's first trace).
    pub path: Option<PathStat>,
    /// `tcp_stream`: what limited its last run ([`tcp_limit`]).
    pub tcp_limit: Option<f64>,
}

/// The cells a pair's last test fills (`Metric::cells`): its own (row =
/// the driving agent) and, for a kind measured both ways, the reverse; each
/// with every [`Metric::ALL`] figure (NaN where none), or why it failed.
#[derive(Debug, Clone, Default)]
pub struct Cells {
    pub own: [f64; METRICS],
    pub back: Option<Box<[f64; METRICS]>>,
    pub error: Option<String>,
}

/// The figures a cell carries: every [`Metric`].
pub const METRICS: usize = Metric::ALL.len();

impl Cells {
    pub fn of(r: &StepResult) -> Cells {
        let mut own = [f64::NAN; METRICS];
        let mut back: Option<Box<[f64; METRICS]>> = None;
        for (i, m) in Metric::ALL.into_iter().enumerate() {
            let cells = m.cells(r);
            if let Some((_, _, v)) = cells.first() {
                own[i] = v.unwrap_or(f64::NAN);
            }
            if let Some((_, _, v)) = cells.get(1) {
                back.get_or_insert_with(|| Box::new([f64::NAN; METRICS]))[i] =
                    v.unwrap_or(f64::NAN);
            }
        }
        // One line of it is enough for a cell (an agent's error can be long).
        let error = r.error.as_ref().map(|e| {
            let line = e.lines().next().unwrap_or("");
            line.chars().take(ERROR_CHARS).collect()
        });
        Cells { own, back, error }
    }
}

/// The longest error a compact cell carries, in characters.
const ERROR_CHARS: usize = 200;

/// What the monitor keeps of one pair's test: its figures, not the test
/// (a test's summaries and samples are tens of KB in memory: a thousand
/// agents' pairs of a run held whole took most of the monitor's memory).
#[derive(Debug, Clone)]
pub struct Measured {
    pub up: bool,
    pub rtt_s: Option<[f64; 3]>,
    pub loss: Option<f64>,
    pub bps: Option<f64>,
    pub cells: Cells,
    /// A `path` test's two ways (forth, back; none: it failed); none for
    /// other kinds.
    pub path: Option<Option<[Way; 2]>>,
    pub tcp_limit: Option<f64>,
}

/// What the monitor keeps of one way of a path test: its figures and its
/// route (to compare with the next run's), not the probes.
#[derive(Debug, Clone)]
pub struct Way {
    pub hops: Option<f64>,
    pub mtu: Option<f64>,
    pub route: Vec<Vec<String>>,
}

impl Way {
    fn of(d: &PathDirection) -> Way {
        Way {
            hops: d.peer_hop.map(f64::from),
            mtu: d.mtu.as_ref().and_then(|m| m.bytes).map(f64::from),
            route: d.route(),
        }
    }
}

impl Measured {
    pub fn of(r: &StepResult) -> Measured {
        let (rtt_s, loss, bps) = figures(r);
        Measured {
            up: r.error.is_none(),
            rtt_s,
            loss,
            bps,
            cells: Cells::of(r),
            path: (r.kind == Kind::Path).then(|| traced(r)),
            tcp_limit: tcp_limit(r),
        }
    }
}

/// What limited a `tcp_stream` test (protocol/src/verdict/tcp.rs) as the
/// gauge's number: 1 + its index in `LIMITS` (1 network, 2 receiver_window,
/// 3 send_buffer, 4 application, 5 rate), 0 no verdict; None for other
/// kinds, a failed test or sides without TCP_INFO.
pub fn tcp_limit(r: &StepResult) -> Option<f64> {
    use meshperf_protocol::verdict::tcp::{step, LIMITS};
    let v = step(r)?;
    Some(v.limit.map_or(0.0, |l| {
        LIMITS
            .iter()
            .position(|x| *x == l)
            .map_or(0.0, |i| i as f64 + 1.0)
    }))
}

/// A path test's two ways, from the driving side's summary.
fn traced(r: &StepResult) -> Option<[Way; 2]> {
    if r.error.is_some() {
        return None;
    }
    let way = |k: &str| {
        serde_json::from_value::<PathDirection>(r.summary[k].clone())
            .ok()
            .map(|d| Way::of(&d))
    };
    Some([way("forth")?, way("back")?])
}

/// A `path` pair's figures each way (`[forth, back]`: forth is `src`'s
/// trace to `dst`, back `dst`'s to `src`), its last routes and how often
/// they changed.
#[derive(Debug, Clone, Default)]
pub struct PathStat {
    /// Hops to the peer in the last run (none: failed, or the trace did
    /// not reach the peer).
    pub hops: [Option<f64>; 2],
    /// The path MTU of the last run, bytes.
    pub mtu: [Option<f64>; 2],
    /// The last routes traced ([`meshperf_protocol::summary::PathDirection::route`]), kept over
    /// failed runs: the next trace is compared with them.
    pub route: [Option<Vec<Vec<String>>>; 2],
    /// Runs whose route differed from the one before ([`route_changed`]).
    pub changes: [u64; 2],
    /// The last run's trace changed either way.
    pub changed: bool,
}

/// The two directions' names, as the `direction` label says them.
pub const DIRECTIONS: [&str; 2] = ["forth", "back"];

impl PathStat {
    /// The pair's path stat after a run that traced `ways` (the driving
    /// side's forth and back; none: the run failed).
    pub fn next(old: Option<PathStat>, ways: Option<[Way; 2]>) -> Option<PathStat> {
        let Some(ways) = ways else {
            // A failed run: no figures; the routes and counts stay.
            return old.map(|o| PathStat {
                hops: [None; 2],
                mtu: [None; 2],
                changed: false,
                ..o
            });
        };
        let mut st = old.unwrap_or_default();
        st.changed = false;
        for (i, w) in ways.into_iter().enumerate() {
            st.hops[i] = w.hops;
            st.mtu[i] = w.mtu;
            if st.route[i]
                .as_ref()
                .is_some_and(|r| route_changed(r, &w.route))
            {
                st.changes[i] += 1;
                st.changed = true;
            }
            st.route[i] = Some(w.route);
        }
        Some(st)
    }
}

/// One agent of the last run: its `HOST:PORT` and the hostname it told.
#[derive(Debug, Clone)]
pub struct AgentInfo {
    pub addr: String,
    pub hostname: String,
}

/// Everything `/metrics` shows.
#[derive(Debug, Default)]
pub struct State {
    pub kind: String,
    pub agents: Vec<AgentInfo>,
    pub pairs: BTreeMap<(String, String), PairStat>,
    pub runs: u64,
    pub overruns: u64,
    pub resolve_errors: u64,
    pub last_run_seconds: Option<f64>,
    pub last_run_end: Option<f64>,
    /// `--shard I/N` as (I, N).
    pub shard: Option<(u32, u32)>,
    /// Pairs not measured within this many seconds lose their series.
    pub stale_seconds: f64,
    /// Peers each agent measured in the last run (N-1: the full mesh).
    pub peers: usize,
    /// Runs of the rotation that measure every pair (1: the full mesh).
    pub rotation: u64,
    /// The next run's round of the rotation.
    pub rotation_run: u64,
    /// Ordered pairs of the last run's agents this monitor owns (its shard's).
    pub owned: usize,
}

/// The figures of one step's summary: RTT quantiles (s), loss ratio, bits/s.
pub fn figures(s: &StepResult) -> (Option<[f64; 3]>, Option<f64>, Option<f64>) {
    let v = &s.summary;
    let q = |k: &str| v["rtt_us"][k].as_f64().map(|us| us / 1e6);
    let rtt = (s.error.is_none())
        .then(|| Some([q("median")?, q("p90")?, q("p99")?]))
        .flatten();
    let ratio = |bad: &str, all: &str| {
        let all = v[all].as_f64()?;
        (all > 0.0).then(|| v[bad].as_f64().unwrap_or(0.0) / all)
    };
    let loss = ratio("timeouts", "count").or_else(|| ratio("lost", "sent"));
    let bps = (s.error.is_none())
        .then(|| {
            v["bits_per_second"]
                .as_f64()
                .or_else(|| v["recv_bits_per_second"].as_f64())
        })
        .flatten();
    (rtt, loss, bps)
}

impl State {
    /// Takes a run's results, `(src, dst, result)`, over `agents`: pairs of
    /// agents no longer listed are dropped, and pairs not measured since
    /// `now - stale`; the others keep their failure counts and last
    /// success (a pair that comes back after it was dropped starts afresh).
    pub fn record(
        &mut self,
        agents: Vec<AgentInfo>,
        results: Vec<(String, String, Measured)>,
        now: f64,
        stale: f64,
    ) {
        let listed: std::collections::HashSet<&str> =
            agents.iter().map(|a| a.addr.as_str()).collect();
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.retain(|(s, d), p| {
            listed.contains(s.as_str())
                && listed.contains(d.as_str())
                && p.last_measured >= now - stale
        });
        for (src, dst, m) in results {
            let key = (src, dst);
            let old = pairs.remove(&key).unwrap_or_default();
            let up = m.up;
            let path = m.path.and_then(|ways| PathStat::next(old.path, ways));
            pairs.insert(
                key,
                PairStat {
                    up,
                    rtt_s: m.rtt_s,
                    loss: m.loss,
                    bps: m.bps,
                    last_success: if up { Some(now) } else { old.last_success },
                    last_measured: now,
                    failures: old.failures + u64::from(!up),
                    cells: m.cells,
                    path,
                    tcp_limit: m.tcp_limit,
                },
            );
        }
        self.pairs = pairs;
        self.agents = agents;
    }

    /// The page, rendered now: the pairs' series, the agents, the routes
    /// of a `path` monitor, the per-node aggregates, the monitor's own.
    pub fn render(&self) -> String {
        let page = Page::new();
        self.render_pairs(&page);
        self.render_paths(&page);
        self.render_nodes(&page);
        shard_info(&page, self.shard);
        self.render_monitor(&page);
        page.text()
    }

    /// Each pair's figures of its last run, whether it was measured, when
    /// last, and its failures.
    fn render_pairs(&self, page: &Page) {
        let pair = ["src", "dst"];
        let rtt = page.gauge(
            "meshperf_pair_rtt_seconds",
            "Round-trip time of the last run, quantile over its requests (src drives, dst serves).",
            &["src", "dst", "quantile"],
        );
        let loss = page.gauge(
            "meshperf_pair_loss_ratio",
            "Requests unanswered (udp_rr) or datagrams lost (udp_stream) in the last run, 0 to 1.",
            &pair,
        );
        let bps = page.gauge(
            "meshperf_pair_throughput_bits_per_second",
            "Throughput of the last run (stream kinds only).",
            &pair,
        );
        let up = page.gauge(
            "meshperf_pair_up",
            "1 if the last run measured the pair, 0 if it failed.",
            &pair,
        );
        let last = page.gauge(
            "meshperf_pair_last_success_timestamp_seconds",
            "Unix time of the last run that measured the pair.",
            &pair,
        );
        let fails = page.counter(
            "meshperf_pair_failures_total",
            "Runs in which the pair's test failed.",
            &pair,
        );
        let measured = page.gauge(
            "meshperf_pair_last_measured_timestamp_seconds",
            "Unix time of the last run that tried the pair, measured or failed (its age: time() minus this).",
            &pair,
        );
        let limit = page.gauge(
            "meshperf_pair_tcp_limit",
            "What limited the pair's last tcp_stream, from TCP_INFO: 1 the network, 2 the receiver's window, 3 the sender's socket buffer, 4 the application or CPU, 5 the rate asked for; 0 no verdict.",
            &pair,
        );
        for ((s, d), p) in &self.pairs {
            let l = [s.as_str(), d.as_str()];
            if let Some(v) = p.tcp_limit {
                limit.with_label_values(&l).set(v);
            }
            if let Some(q) = p.rtt_s {
                for (name, v) in ["0.5", "0.9", "0.99"].into_iter().zip(q) {
                    rtt.with_label_values(&[s.as_str(), d.as_str(), name])
                        .set(v);
                }
            }
            if let Some(v) = p.loss {
                loss.with_label_values(&l).set(v);
            }
            if let Some(v) = p.bps {
                bps.with_label_values(&l).set(v);
            }
            up.with_label_values(&l).set(if p.up { 1.0 } else { 0.0 });
            if let Some(t) = p.last_success {
                last.with_label_values(&l).set(t);
            }
            fails.with_label_values(&l).inc_by(p.failures);
            measured.with_label_values(&l).set(p.last_measured);
        }
    }

    /// The monitor's own series: the last run's agents and kind, the
    /// pairs, the sampling, the run counters and times.
    fn render_monitor(&self, page: &Page) {
        let info = page.gauge(
            "meshperf_agent_info",
            "An agent of the last run, by address, with the hostname it reported.",
            &["agent", "hostname"],
        );
        for a in &self.agents {
            info.with_label_values(&[a.addr.as_str(), a.hostname.as_str()])
                .set(1.0);
        }
        page.gauge(
            "meshperf_monitor_info",
            "The test kind the monitor runs between every pair.",
            &["kind"],
        )
        .with_label_values(&[self.kind.as_str()])
        .set(1.0);
        let scalars = [
            (
                "meshperf_monitor_pairs_owned",
                "Ordered pairs of the last run's agents this monitor owns (its --shard's; all without).",
                Some(self.owned as f64),
            ),
            (
                "meshperf_monitor_pairs",
                "Pairs with series now: measured within the staleness window.",
                Some(self.pairs.len() as f64),
            ),
            (
                "meshperf_monitor_peers",
                "Peers each agent measured in the last run (--peers; N-1 for the full mesh).",
                Some(self.peers as f64),
            ),
            (
                "meshperf_monitor_rotation_runs",
                "Consecutive runs that measure every ordered pair (1 for the full mesh).",
                Some(self.rotation.max(1) as f64),
            ),
            (
                "meshperf_monitor_stale_seconds",
                "A pair not measured within this many seconds loses its series (--stale).",
                Some(self.stale_seconds),
            ),
            (
                "meshperf_monitor_agents",
                "Agents in the last run.",
                Some(self.agents.len() as f64),
            ),
            (
                "meshperf_monitor_run_duration_seconds",
                "How long the last run took.",
                self.last_run_seconds,
            ),
            (
                "meshperf_monitor_last_run_timestamp_seconds",
                "Unix time the last run ended.",
                self.last_run_end,
            ),
        ];
        for (name, help, v) in scalars {
            if let Some(v) = v {
                page.scalar(name, help, v);
            }
        }
        for (name, help, v) in [
            (
                "meshperf_monitor_runs_total",
                "Matrix runs finished.",
                self.runs,
            ),
            (
                "meshperf_monitor_overruns_total",
                "Runs that took longer than --every (the next one waited).",
                self.overruns,
            ),
            (
                "meshperf_monitor_resolve_errors_total",
                "Runs skipped because an --agent could not be resolved (no addresses).",
                self.resolve_errors,
            ),
        ] {
            page.count(name, help, v);
        }
    }

    /// `path`'s pair series: hops and path MTU each way, and the route
    /// changes each way since the pair appeared.
    fn render_paths(&self, page: &Page) {
        if !self.pairs.values().any(|p| p.path.is_some()) {
            return;
        }
        let labels = ["src", "dst", "direction"];
        let hops = page.gauge(
            "meshperf_pair_path_hops",
            "Hops to the peer agent in the last run (path): direction forth is src's trace to dst, back dst's to src.",
            &labels,
        );
        let mtu = page.gauge(
            "meshperf_pair_path_mtu_bytes",
            "Path MTU of the last run, bytes: the largest datagram that reached the peer with DF set (path; forth src to dst, back dst to src).",
            &labels,
        );
        let changes = page.counter(
            "meshperf_pair_path_changes_total",
            "Runs whose list of responding hops differed from the run before (path; forth src's trace, back dst's): another hop count, or a hop answering from another address.",
            &labels,
        );
        for ((s, d), p) in &self.pairs {
            let Some(ps) = &p.path else { continue };
            for (i, dir) in DIRECTIONS.into_iter().enumerate() {
                let l = [s.as_str(), d.as_str(), dir];
                if let Some(v) = ps.hops[i] {
                    hops.with_label_values(&l).set(v);
                }
                if let Some(v) = ps.mtu[i] {
                    mtu.with_label_values(&l).set(v);
                }
                changes.with_label_values(&l).inc_by(ps.changes[i]);
            }
        }
    }

    /// The per-node aggregates over the pairs kept: each node as the
    /// driving end (`src`, its row) and the serving end (`dst`, its
    /// column).
    fn render_nodes(&self, page: &Page) {
        let labels = ["agent", "role", "stat"];
        let pairs = page.gauge(
            "meshperf_node_pairs",
            "Pairs of the node with series (measured within the staleness window), as src (it drives) or dst (it serves).",
            &["agent", "role"],
        );
        let failing = page.gauge(
            "meshperf_node_pairs_failing",
            "Of those, pairs whose last test failed.",
            &["agent", "role"],
        );
        let rtt = page.gauge(
            "meshperf_node_rtt_seconds",
            "Median RTT of the node's pairs: the worst (highest) and the median over its peers.",
            &labels,
        );
        let loss = page.gauge(
            "meshperf_node_loss_ratio",
            "Loss ratio of the node's pairs: the worst (highest) and the median over its peers.",
            &labels,
        );
        let bps = page.gauge(
            "meshperf_node_throughput_bits_per_second",
            "Throughput of the node's pairs: the worst (lowest) and the median over its peers.",
            &labels,
        );
        let worst = page.gauge(
            "meshperf_node_worst_peer_info",
            "The node's worst peer: one whose last test failed, else the highest RTT, else the lowest throughput, else the highest loss.",
            &["agent", "role", "peer"],
        );
        let paths = self.pairs.values().any(|p| p.path.is_some());
        let path_gauges = paths.then(|| {
            (
                page.gauge(
                    "meshperf_node_path_hops",
                    "Hops to the peer over the node's pairs (path, each pair's src-to-dst trace): the worst (most) and the median over its peers.",
                    &labels,
                ),
                page.gauge(
                    "meshperf_node_path_mtu_bytes",
                    "Path MTU over the node's pairs (path, src to dst), bytes: the worst (lowest) and the median over its peers.",
                    &labels,
                ),
                page.gauge(
                    "meshperf_node_pairs_path_changed",
                    "Of the node's pairs, those whose last run found the route changed either way (path).",
                    &["agent", "role"],
                ),
            )
        });
        for (agent, role, of) in node_pairs(&self.pairs) {
            let l = [agent, role];
            pairs.with_label_values(&l).set(of.len() as f64);
            let bad = of.iter().filter(|(_, p)| !p.up).count();
            failing.with_label_values(&l).set(bad as f64);
            let set = |g: &GaugeVec, v: &mut Vec<f64>, high_is_bad: bool| {
                if v.is_empty() {
                    return;
                }
                v.sort_by(f64::total_cmp);
                let w = if high_is_bad { v[v.len() - 1] } else { v[0] };
                g.with_label_values(&[agent, role, "worst"]).set(w);
                g.with_label_values(&[agent, role, "median"]).set(median(v));
            };
            let mut rtts: Vec<f64> = of.iter().filter_map(|(_, p)| Some(p.rtt_s?[0])).collect();
            let mut losses: Vec<f64> = of.iter().filter_map(|(_, p)| p.loss).collect();
            let mut rates: Vec<f64> = of.iter().filter_map(|(_, p)| p.bps).collect();
            let key = |p: &PairStat| -> (bool, f64) {
                let figure = p
                    .rtt_s
                    .map(|q| q[0])
                    .or(p.bps.map(|b| -b))
                    .or(p.loss)
                    .unwrap_or(f64::NEG_INFINITY);
                (!p.up, figure)
            };
            let pick = of.iter().max_by(|a, b| {
                let (x, y) = (key(a.1), key(b.1));
                x.0.cmp(&y.0).then(x.1.total_cmp(&y.1))
            });
            if let Some((peer, _)) = pick {
                worst.with_label_values(&[agent, role, peer]).set(1.0);
            }
            set(&rtt, &mut rtts, true);
            set(&loss, &mut losses, true);
            set(&bps, &mut rates, false);
            if let Some((hops, mtu, changed)) = &path_gauges {
                let ways: Vec<&PathStat> = of.iter().filter_map(|(_, p)| p.path.as_ref()).collect();
                let mut h: Vec<f64> = ways.iter().filter_map(|p| p.hops[0]).collect();
                let mut m: Vec<f64> = ways.iter().filter_map(|p| p.mtu[0]).collect();
                set(hops, &mut h, true);
                set(mtu, &mut m, false);
                let n = ways.iter().filter(|p| p.changed).count();
                changed.with_label_values(&l).set(n as f64);
            }
        }
    }

    /// Renders the page and swaps it in whole.
    pub fn publish(&self, snap: &Snapshot) {
        snap.set(self.render());
    }
}

/// `meshperf_monitor_shard_info{shard, shards}`: which share of the pairs
/// this monitor measures (0 of 1 without --shard). Two monitors with the
/// same labels, or with different counts, overlap: the rules in
/// deploy/prometheus/meshperf-rules.yml say so.
fn shard_info(page: &Page, shard: Option<(u32, u32)>) {
    let (i, n) = shard.unwrap_or((0, 1));
    page.gauge(
        "meshperf_monitor_shard_info",
        "This monitor's shard of the pairs (--shard I/N; 0 of 1 without): monitors of one set share shards and differ in shard.",
        &["shard", "shards"],
    )
    .with_label_values(&[i.to_string().as_str(), n.to_string().as_str()])
    .set(1.0);
}

/// A page being rendered: the series registered on it, each once.
struct Page {
    reg: Registry,
}

impl Page {
    fn new() -> Page {
        Page {
            reg: Registry::new(),
        }
    }

    fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
        let g = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
        self.reg
            .register(Box::new(g.clone()))
            .expect("registered once");
        g
    }

    fn counter(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
        self.reg
            .register(Box::new(c.clone()))
            .expect("registered once");
        c
    }

    /// A gauge without labels, set to `v`.
    fn scalar(&self, name: &str, help: &str, v: f64) {
        let g = Gauge::new(name, help).expect("valid metric");
        g.set(v);
        self.reg.register(Box::new(g)).expect("registered once");
    }

    /// A counter without labels, at `v`.
    fn count(&self, name: &str, help: &str, v: u64) {
        let c = IntCounter::new(name, help).expect("valid metric");
        c.inc_by(v);
        self.reg.register(Box::new(c)).expect("registered once");
    }

    /// The page in the text format.
    fn text(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.reg.gather(), &mut out)
            .expect("text encoding of valid metrics");
        String::from_utf8(out).expect("the encoder writes UTF-8")
    }
}

/// The median of sorted, non-empty `v` (the mean of the middle two of an
/// even count).
fn median(v: &[f64]) -> f64 {
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// One node's pairs in one role: (node, role, [(peer, pair)]).
type NodePairs<'a> = (&'a str, &'static str, Vec<(&'a str, &'a PairStat)>);

/// Each node's pairs: `src` the pairs it drives, `dst` those it serves.
fn node_pairs(pairs: &BTreeMap<(String, String), PairStat>) -> Vec<NodePairs<'_>> {
    let mut by: BTreeMap<(&str, &'static str), Vec<(&str, &PairStat)>> = BTreeMap::new();
    for ((s, d), p) in pairs {
        by.entry((s.as_str(), "src"))
            .or_default()
            .push((d.as_str(), p));
        by.entry((d.as_str(), "dst"))
            .or_default()
            .push((s.as_str(), p));
    }
    by.into_iter().map(|((a, r), v)| (a, r, v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshperf_protocol::params::Kind;
    use serde_json::json;

    fn step(summary: serde_json::Value, error: Option<&str>) -> StepResult {
        StepResult {
            index: 0,
            kind: Kind::UdpRr,
            params: Default::default(),
            point: vec![],
            repeat: 0,
            transport: meshperf_protocol::plan::Transport::Tcp,
            summary,
            sides: Default::default(),
            samples: vec![],
            histograms: vec![],
            error: error.map(str::to_string),
            started_unix: None,
            wall_seconds: None,
            pair: None,
        }
    }

    #[test]
    fn a_tcp_stream_pair_s_limit_is_a_small_gauge() {
        // The driving side sends; its kernel counted it receive-window
        // limited most of the time.
        let mut r = step(json!({}), None);
        r.kind = Kind::TcpStream;
        let t = json!({"kernel_bytes": 280, "missing": [], "send_seconds": 2.0,
            "busy_share": 1.0, "rwnd_limited_share": 0.8, "sndbuf_limited_share": 0.0});
        r.sides.client = Some(json!({"tcp_info": t}));
        r.sides.server = Some(json!({"rcvbuf_actual": 65536}));
        assert_eq!(tcp_limit(&r), Some(2.0));
        // No TCP_INFO (an older agent, Windows): no series at all.
        r.sides.client = Some(json!({}));
        assert_eq!(tcp_limit(&r), None);
        r.sides.client = Some(json!({"tcp_info": t}));
        let mut st = State::default();
        let agent = |a: &str| AgentInfo {
            addr: a.into(),
            hostname: "h".into(),
        };
        st.record(
            vec![agent("a:1"), agent("b:1")],
            vec![("a:1".into(), "b:1".into(), Measured::of(&r))],
            100.0,
            1e9,
        );
        let page = st.render();
        assert!(
            page.contains("meshperf_pair_tcp_limit{dst=\"b:1\",src=\"a:1\"} 2"),
            "{page}"
        );
    }

    #[test]
    fn pairs_keep_failures_and_last_success_and_vanish_with_their_agents() {
        let ok = step(
            json!({"count": 200, "timeouts": 2, "rtt_us": {"median": 40.0, "p90": 60.0, "p99": 90.0}}),
            None,
        );
        let bad = step(json!(null), Some("agent B is not connected"));
        let agent = |a: &str| AgentInfo {
            addr: a.into(),
            hostname: "h".into(),
        };
        let mut st = State::default();
        st.record(
            vec![agent("a:1"), agent("b:1")],
            vec![
                ("a:1".into(), "b:1".into(), Measured::of(&ok)),
                ("b:1".into(), "a:1".into(), Measured::of(&ok)),
            ],
            100.0,
            1e9,
        );
        st.record(
            vec![agent("a:1"), agent("b:1")],
            vec![
                ("a:1".into(), "b:1".into(), Measured::of(&bad)),
                ("b:1".into(), "a:1".into(), Measured::of(&ok)),
            ],
            200.0,
            1e9,
        );
        let ab = &st.pairs[&("a:1".into(), "b:1".into())];
        assert_eq!(
            (ab.up, ab.failures, ab.last_success, ab.rtt_s),
            (false, 1, Some(100.0), None)
        );
        let page = st.render();
        assert!(
            page.contains("meshperf_pair_failures_total{dst=\"b:1\",src=\"a:1\"} 1"),
            "{page}"
        );
        assert!(
            page.contains(
                "meshperf_pair_rtt_seconds{dst=\"a:1\",quantile=\"0.99\",src=\"b:1\"} 0.00009"
            ),
            "{page}"
        );
        assert!(
            page.contains("meshperf_pair_loss_ratio{dst=\"a:1\",src=\"b:1\"} 0.01"),
            "{page}"
        );
        assert!(
            page.contains("# TYPE meshperf_pair_failures_total counter"),
            "{page}"
        );
        // b vanishes: its pairs go.
        st.record(vec![agent("a:1")], vec![], 300.0, 1e9);
        assert!(st.pairs.is_empty());
        assert!(!st.render().contains("b:1"));
    }

    /// A path summary: `forth` through routers `via` to the peer, `back`
    /// straight (hop 1), MTU `mtu` forth.
    fn path_step(via: &[Option<&str>], mtu: u32) -> StepResult {
        let hop = |ttl: usize, addr: Option<&str>, peer: bool| {
            let answered = if addr.is_some() { 3 } else { 0 };
            json!({"ttl": ttl, "addr": addr, "sent": 3, "answered": answered,
                "rtt_us": [], "silent": addr.is_none(), "peer": peer})
        };
        let mut hops: Vec<_> = via
            .iter()
            .enumerate()
            .map(|(i, a)| hop(i + 1, *a, false))
            .collect();
        hops.push(hop(via.len() + 1, Some("10.9.0.2"), true));
        let mut s = step(
            json!({
                "forth": {"from": "10.1.0.1", "to": "10.9.0.2", "hops": hops, "end": "peer",
                    "peer_hop": via.len() + 1, "mtu": {"bytes": mtu, "local": 1500, "probes": 4}},
                "back": {"from": "10.9.0.2", "to": "10.1.0.1", "hops": [hop(1, Some("10.1.0.1"), true)],
                    "end": "peer", "peer_hop": 1, "mtu": {"bytes": 1500, "local": 1500, "probes": 1}},
                "asymmetric": !via.is_empty(),
                "rtt_us": {"median": 300.0, "p90": 400.0, "p99": 500.0}
            }),
            None,
        );
        s.kind = Kind::Path;
        s
    }

    /// Path changes counted per pair and direction: the first trace is
    /// no change, the same route again none, another router at hop 2 one,
    /// a silent hop none, a failed run none (and the route before it is
    /// what the next is compared with), one hop more another; hops and
    /// MTU each way, and the node aggregates over the pairs kept.
    #[test]
    fn path_changes_count_per_pair_and_direction_with_hops_and_mtu_each_way() {
        let agent = |a: &str| AgentInfo {
            addr: a.into(),
            hostname: "h".into(),
        };
        let agents = || vec![agent("a:1"), agent("b:1"), agent("c:1")];
        let mut st = State::default();
        let first = path_step(&[Some("10.1.0.254"), Some("10.2.0.254")], 1400);
        let same = path_step(&[Some("10.1.0.254"), Some("10.2.0.254")], 1400);
        let moved = path_step(&[Some("10.1.0.254"), Some("10.3.0.254")], 1500);
        let quiet = path_step(&[Some("10.1.0.254"), None], 1500);
        let mut failed = step(json!(null), Some("agent b:1 is not connected"));
        failed.kind = Kind::Path;
        let longer = path_step(
            &[Some("10.1.0.254"), Some("10.3.0.254"), Some("10.4.0.254")],
            1500,
        );
        let straight = path_step(&[], 1500);
        let key = ("a:1".to_string(), "b:1".to_string());
        let mut t = 0.0;
        let mut run = |st: &mut State, r: &StepResult| {
            t += 10.0;
            st.record(
                agents(),
                vec![
                    ("a:1".into(), "b:1".into(), Measured::of(r)),
                    ("a:1".into(), "c:1".into(), Measured::of(&straight)),
                ],
                t,
                1e9,
            );
            let p = st.pairs[&key].path.clone().expect("a path pair's stat");
            (p.changes, p.changed, p.hops, p.mtu)
        };
        assert_eq!(
            run(&mut st, &first),
            (
                [0, 0],
                false,
                [Some(3.0), Some(1.0)],
                [Some(1400.0), Some(1500.0)]
            )
        );
        assert_eq!(run(&mut st, &same).0, [0, 0]);
        let r = run(&mut st, &moved);
        assert_eq!((r.0, r.1), ([1, 0], true));
        let page = st.render();
        for want in [
            "meshperf_pair_path_changes_total{direction=\"forth\",dst=\"b:1\",src=\"a:1\"} 1",
            "meshperf_pair_path_changes_total{direction=\"back\",dst=\"b:1\",src=\"a:1\"} 0",
            "meshperf_pair_path_changes_total{direction=\"forth\",dst=\"c:1\",src=\"a:1\"} 0",
            "meshperf_pair_path_hops{direction=\"forth\",dst=\"b:1\",src=\"a:1\"} 3",
            "meshperf_pair_path_hops{direction=\"back\",dst=\"b:1\",src=\"a:1\"} 1",
            "meshperf_pair_path_mtu_bytes{direction=\"forth\",dst=\"b:1\",src=\"a:1\"} 1500",
            "# TYPE meshperf_pair_path_changes_total counter",
            // a drives 2 pairs: 3 and 1 hops, 1 of them changed this run.
            "meshperf_node_path_hops{agent=\"a:1\",role=\"src\",stat=\"worst\"} 3",
            "meshperf_node_path_hops{agent=\"a:1\",role=\"src\",stat=\"median\"} 2",
            "meshperf_node_path_mtu_bytes{agent=\"a:1\",role=\"src\",stat=\"worst\"} 1500",
            "meshperf_node_pairs_path_changed{agent=\"a:1\",role=\"src\"} 1",
            "meshperf_node_pairs_path_changed{agent=\"b:1\",role=\"dst\"} 1",
            "meshperf_node_pairs_path_changed{agent=\"c:1\",role=\"dst\"} 0",
        ] {
            assert!(page.contains(want), "{want} in\n{page}");
        }
        // Silent this time: not a change; a failed run: none, no figures.
        assert_eq!(run(&mut st, &quiet).0, [1, 0]);
        assert_eq!(
            run(&mut st, &failed),
            ([1, 0], false, [None, None], [None, None])
        );
        let page = st.render();
        assert!(
            !page.contains("meshperf_pair_path_hops{direction=\"forth\",dst=\"b:1\""),
            "{page}"
        );
        assert!(page.contains(
            "meshperf_pair_path_changes_total{direction=\"forth\",dst=\"b:1\",src=\"a:1\"} 1"
        ));
        // Compared with the route before the failure: one hop more.
        let r = run(&mut st, &longer);
        assert_eq!((r.0, r.1), ([2, 0], true));
        // The pair goes stale and comes back: it starts afresh.
        st.record(agents(), vec![], 1e6, 10.0);
        assert!(st.pairs.is_empty());
        assert!(!st.render().contains("meshperf_pair_path"));
        st.record(
            agents(),
            vec![("a:1".into(), "b:1".into(), Measured::of(&first))],
            1e6 + 1.0,
            10.0,
        );
        assert_eq!(st.pairs[&key].path.as_ref().unwrap().changes, [0, 0]);
        // Other kinds have no path series.
        let mut rr = State::default();
        let ok = step(
            json!({"count": 10, "rtt_us": {"median": 1.0, "p90": 2.0, "p99": 3.0}}),
            None,
        );
        rr.record(
            agents(),
            vec![("a:1".into(), "b:1".into(), Measured::of(&ok))],
            1.0,
            1e9,
        );
        assert!(!rr.render().contains("path"));
    }
}
