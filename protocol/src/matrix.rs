//! The matrix of many agents: which ordered pairs run in which round, and
//! the headline figure of each cell. Written once for `meshperf run
//! --matrix` and the page (through wasm).
//!
//! One test per agent at a time remains the rule (tests must not disturb
//! each other), and tests whose agents are disjoint run at once: the circle
//! method (round-robin tournament) pairs N agents in N-1 rounds (N even; N
//! rounds with a bye when odd) so that every unordered pair meets once; each
//! round runs in both orientations, so all N(N-1) ordered pairs take about
//! 2(N-1) rounds instead of N(N-1) one after another. [`serial`] runs one
//! pair per round, for links that share a bottleneck.
//!
//! A cell (row, column) is the step the row agent drives (`start`: the
//! sender of a stream with `direction` send, the requester of a
//! request/response test) and the column agent serves (`prepare`).

use crate::driver::AgentRef;
use crate::params::{Kind, Limits};
/// Where a matrix cell's pair is defined: with the step results that carry it.
pub use crate::result::Pair;
use crate::result::StepResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Rounds of ordered pairs over `n` agents, no agent twice in a round,
/// every ordered pair exactly once (circle method, both orientations).
pub fn rounds(n: usize) -> Vec<Vec<Pair>> {
    if n < 2 {
        return Vec::new();
    }
    // An odd count gets a "bye" seat: whoever meets it sits the round out.
    let seats = n + n % 2;
    let mut ring: Vec<usize> = (0..seats).collect();
    let mut half = Vec::new();
    for _ in 0..seats - 1 {
        let round: Vec<(usize, usize)> = (0..seats / 2)
            .map(|i| (ring[i], ring[seats - 1 - i]))
            .filter(|&(a, b)| a < n && b < n)
            .collect();
        half.push(round);
        // Seat 0 stays; the others turn one place.
        ring[1..].rotate_right(1);
    }
    let orient = |flip: bool| {
        half.iter().map(move |r| {
            r.iter()
                .map(|&(a, b)| {
                    let (server, client) = if flip { (b, a) } else { (a, b) };
                    Pair { server, client }
                })
                .collect::<Vec<_>>()
        })
    };
    orient(false).chain(orient(true)).collect()
}

/// Every ordered pair in its own round (row by row): for links that share a
/// bottleneck, where tests at once would measure each other.
pub fn serial(n: usize) -> Vec<Vec<Pair>> {
    (0..n)
        .flat_map(|client| {
            (0..n)
                .filter(move |&server| server != client)
                .map(move |server| vec![Pair { server, client }])
        })
        .collect()
}

/// Every unordered pair once, no agent twice in a round (the circle
/// method's N-1 rounds, N even): for steps that measure both directions at
/// once ([`both_ways`]), where the reverse orientation would measure the
/// same thing again.
pub fn unordered(n: usize, serial: bool) -> Vec<Vec<Pair>> {
    let half: Vec<Vec<Pair>> = rounds(n).into_iter().take(n + n % 2 - 1).collect();
    if serial {
        half.into_iter().flatten().map(|p| vec![p]).collect()
    } else {
        half
    }
}

/// The pairs a matrix measures: every ordered pair, or every unordered one
/// for a step that measures both ways.
pub fn pairs(n: usize, both_ways: bool) -> Vec<Pair> {
    if both_ways {
        unordered(n, false).concat()
    } else {
        rounds(n).concat()
    }
}

/// Rounds of a sampled rotation for a mesh too large to measure whole:
/// how many consecutive rounds of [`sampled`] measure every ordered pair of
/// `n` agents when each measures `k` peers a round, ceil((n-1)/k) (1 when
/// `k` covers every other agent: the full mesh).
pub fn rotation_rounds(n: usize, k: usize) -> u64 {
    if n < 2 || k == 0 {
        return 1;
    }
    (n as u64 - 1).div_ceil(k as u64)
}

/// The ordered pairs of round `round` of the sampled rotation over `n`
/// agents (positions 0..n in a stable order, e.g. sorted by address): each
/// agent drives the test to `k` peers, those at offsets
/// 1 + ((round*k + j) mod (n-1)), j < k, around the ring. Any
/// [`rotation_rounds`] consecutive rounds measure every ordered pair (their
/// offsets run through n-1 consecutive values); `k` >= n-1 is the full
/// mesh every round. Rounds of pairs to run at once: [`pack`].
pub fn sampled(n: usize, k: usize, round: u64) -> Vec<Pair> {
    if n < 2 || k == 0 {
        return Vec::new();
    }
    let others = n as u64 - 1;
    let k = (k as u64).min(others);
    let base = (round % others) * k;
    let mut out = Vec::with_capacity(n * k as usize);
    for client in 0..n {
        for j in 0..k {
            let offset = 1 + (base + j) % others;
            let server = (client + offset as usize) % n;
            out.push(Pair { server, client });
        }
    }
    out
}

/// `pairs` packed into rounds with no agent twice in a round (first fit:
/// each pair in the first round where both its agents are free), in their
/// order within a round; `serial`: one pair per round. An agent in `d`
/// pairs makes at most 2d-1 rounds.
pub fn pack(pairs: &[Pair], serial: bool) -> Vec<Vec<Pair>> {
    if serial {
        return pairs.iter().map(|&p| vec![p]).collect();
    }
    let mut rounds: Vec<Vec<Pair>> = Vec::new();
    // The rounds each agent is in, as a sorted list (short: its degree).
    let mut used: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for &p in pairs {
        let a = used.get(&p.server).map_or(&[][..], Vec::as_slice);
        let b = used.get(&p.client).map_or(&[][..], Vec::as_slice);
        let r = (0..)
            .find(|r| !a.contains(r) && !b.contains(r))
            .expect("a free round");
        if r == rounds.len() {
            rounds.push(Vec::new());
        }
        rounds[r].push(p);
        used.entry(p.server).or_default().push(r);
        used.entry(p.client).or_default().push(r);
    }
    rounds
}

/// Which of `shards` monitors owns the ordered pair `src` -> `dst` (the
/// agents' names, e.g. `HOST:PORT`): a stable hash (64-bit FNV-1a of
/// `src`, a 0 byte, `dst`, through SplitMix64's finalizer) modulo the count, so that every replica of the
/// same version computes the same split with no word between them, and
/// the shards' pairs together are every pair exactly once.
pub fn shard_of(src: &str, dst: &str, shards: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in src.bytes().chain([0]).chain(dst.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's low bits are the bytes' parity (the same both ways round):
    // SplitMix64's finalizer spreads every bit over them.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h % u64::from(shards.max(1))) as u32
}

/// The agents of a matrix, checked before any traffic: two or more, none
/// listed twice (the same address and port, or one agent process reached
/// under two names: the same `instance`), and each runs `kind`. Agents not
/// connected (no capabilities known) fail their pairs when they run.
pub fn check_agents(agents: &[AgentRef], kind: Kind) -> Result<(), String> {
    if agents.len() < 2 {
        return Err(format!(
            "a matrix needs two or more agents; {} given",
            agents.len()
        ));
    }
    for (i, a) in agents.iter().enumerate() {
        for b in &agents[..i] {
            if a.label == b.label {
                return Err(format!("{} is listed twice", a.label));
            }
            if a.instance.is_some() && a.instance == b.instance {
                return Err(format!(
                    "{} and {} are one agent (the same process answers at both addresses): list it once",
                    b.label, a.label
                ));
            }
        }
        if let Some(why) = a.cannot_run(kind, std::iter::empty()) {
            return Err(why);
        }
        // A kind its release knows and its platform does not run.
        if let Some(caps) = a.capabilities.as_ref().filter(|c| !c.contains(&kind)) {
            let names: Vec<&str> = caps.iter().map(|k| k.name()).collect();
            return Err(format!(
                "{} does not run {} (it runs {})",
                a.named(),
                kind.name(),
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// The limits that differ between the agents, each with its strictest
/// value and the agent that sets it (every pair's step must be within both
/// its agents' limits, so over a matrix the strictest binds): one line
/// each, e.g. `max_duration_s 10 (agent 10.0.0.3:7800; up to 60 elsewhere)`.
pub fn strictest(agents: &[AgentRef]) -> Vec<String> {
    let known: Vec<(&AgentRef, &Limits)> = agents
        .iter()
        .filter_map(|a| Some((a, a.limits.as_ref()?)))
        .collect();
    let mut out = Vec::new();
    for row in crate::params::LIMITS {
        let (name, get) = (row.name, |l: &Limits| (row.get)(l).unwrap_or(f64::INFINITY));
        let Some((low, at)) = known
            .iter()
            .map(|(a, l)| (get(l), a))
            .min_by(|x, y| x.0.total_cmp(&y.0))
        else {
            continue;
        };
        let high = known.iter().map(|(_, l)| get(l)).fold(low, f64::max);
        if high > low {
            let high = if high.is_finite() {
                format!("up to {high}")
            } else {
                "none".to_string()
            };
            out.push(format!("{name} {low} ({}; {high} elsewhere)", at.label));
        }
    }
    out
}

/// A step measures both directions at once, so one test per unordered pair
/// fills both of its cells: `latency_under_load` (download and upload
/// phases) and a stream with `direction` both.
pub fn both_ways(kind: Kind, params: &serde_json::Map<String, Value>) -> bool {
    match kind {
        Kind::LatencyUnderLoad => true,
        Kind::TcpStream => params.get("direction").and_then(Value::as_str) == Some("both"),
        _ => false,
    }
}

/// How a pair's test ended, for the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Measured, or failed for good (its cell shows why).
    Ended,
    /// An agent refused it as busy with another controller's test: the
    /// pair is tried again later in the schedule.
    Busy,
}

/// What the schedule has next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// Run these pairs at once (no agent in two of them).
    Round(Vec<Pair>),
    /// Nothing to run before this many seconds (pairs wait to be retried).
    Wait(f64),
    /// Every pair has ended.
    Done,
}

/// Tries a pair gets when an agent answers busy (the first included).
pub const BUSY_TRIES: u32 = 5;
/// Seconds between tries of a pair an agent refused as busy.
pub const BUSY_RETRY_S: f64 = 2.0;

/// The matrix's schedule, written once for `meshperf run --matrix` and the
/// page (through wasm): the planned rounds ([`rounds`], [`serial`] or
/// [`unordered`]), then the pairs an agent refused as busy (another
/// controller's test: one test per agent remains the rule), retried in
/// rounds of their own, [`BUSY_RETRY_S`] apart, up to [`BUSY_TRIES`] times.
/// Times are seconds on the caller's monotonic clock.
#[derive(Debug, Clone)]
pub struct Schedule {
    planned: std::collections::VecDeque<Vec<Pair>>,
    /// Pairs waiting for a retry: the pair, tries so far, not before.
    retry: Vec<(Pair, u32, f64)>,
    /// Tries of pairs now running.
    running: Vec<(Pair, u32)>,
    serial: bool,
    pairs: usize,
    planned_rounds: usize,
}

impl Schedule {
    /// The schedule of `n` agents; `both_ways`: one test per unordered pair.
    pub fn new(n: usize, serial: bool, both_ways: bool) -> Schedule {
        let planned: Vec<Vec<Pair>> = match (both_ways, serial) {
            (true, _) => unordered(n, serial),
            (false, true) => self::serial(n),
            (false, false) => rounds(n),
        };
        Schedule::of_rounds(planned, serial)
    }

    /// The schedule of given rounds of pairs (each round with no agent
    /// twice, e.g. [`pack`]'s or a subset of [`rounds`]'); empty rounds
    /// are dropped.
    pub fn of_rounds(planned: Vec<Vec<Pair>>, serial: bool) -> Schedule {
        let planned: Vec<Vec<Pair>> = planned.into_iter().filter(|r| !r.is_empty()).collect();
        Schedule {
            pairs: planned.iter().map(Vec::len).sum(),
            planned_rounds: planned.len(),
            planned: planned.into(),
            retry: Vec::new(),
            running: Vec::new(),
            serial,
        }
    }

    /// Tests the matrix runs (each pair once).
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// Rounds planned (retries of busy pairs come on top).
    pub fn planned_rounds(&self) -> usize {
        self.planned_rounds
    }

    /// Pairs waiting to be retried.
    pub fn retrying(&self) -> usize {
        self.retry.len()
    }

    /// What to do at `now` (call once the previous round has ended).
    pub fn next(&mut self, now: f64) -> Next {
        if let Some(r) = self.planned.pop_front() {
            self.running = r.iter().map(|&p| (p, 1)).collect();
            return Next::Round(r);
        }
        if self.retry.is_empty() {
            return Next::Done;
        }
        let due: f64 = self.retry.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
        if due > now {
            return Next::Wait(due - now);
        }
        // The due pairs, packed so no agent is in two.
        let mut round = Vec::new();
        let mut busy = std::collections::HashSet::new();
        self.retry.retain(|&(p, tries, at)| {
            let fits = at <= now
                && (!self.serial || round.is_empty())
                && !busy.contains(&p.server)
                && !busy.contains(&p.client);
            if fits {
                busy.insert(p.server);
                busy.insert(p.client);
                round.push((p, tries + 1));
            }
            !fits
        });
        let pairs = round.iter().map(|r| r.0).collect();
        self.running = round;
        Next::Round(pairs)
    }

    /// Pair `p` of the running round ended with `outcome` at `now`. `None`:
    /// its result stands (or it will be retried: see [`Schedule::will_retry`]);
    /// `Some(why)`: an agent stayed busy over every try, the pair fails so.
    pub fn ended(&mut self, p: Pair, outcome: Outcome, now: f64) -> Option<String> {
        let k = self.running.iter().position(|r| r.0 == p)?;
        let (_, tries) = self.running.swap_remove(k);
        if outcome == Outcome::Ended {
            return None;
        }
        if tries >= BUSY_TRIES {
            return Some(format!(
                "an agent was busy with another controller's test at each of {tries} tries, {BUSY_RETRY_S} s apart"
            ));
        }
        self.retry.push((p, tries, now + BUSY_RETRY_S));
        None
    }

    /// Pair `p` is waiting for a retry (its busy result is not kept).
    pub fn will_retry(&self, p: Pair) -> bool {
        self.retry.iter().any(|r| r.0 == p)
    }
}

/// Which figure a matrix shows per cell.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Throughput of a stream (the receiver's), Gbit/s.
    Gbps,
    /// Median round-trip time, us.
    RttP50,
    /// 99th percentile round-trip time, us.
    RttP99,
    /// Datagrams lost, % of those sent.
    LossPct,
    /// Median round-trip time the load added over the idle phase, us
    /// (`latency_under_load`).
    AddedRtt,
    /// Transactions (fresh connections) per second (`tcp_crr`).
    Tps,
    /// Hops to the peer agent (`path`: the row agent's trace; none when
    /// the trace did not reach the peer).
    Hops,
    /// The path MTU, bytes (`path`: the largest datagram that reached the
    /// peer with DF set, the row agent's way).
    PathMtu,
    /// Marks (DSCP x ECN sent) that arrived changed: rewritten, zeroed,
    /// CE-marked, ECN bleached or changed, not lost ones (`path`).
    MarksChanged,
}

impl Metric {
    /// Every metric, in the order a chooser lists them.
    pub const ALL: [Metric; 9] = [
        Metric::Gbps,
        Metric::RttP50,
        Metric::RttP99,
        Metric::LossPct,
        Metric::AddedRtt,
        Metric::Tps,
        Metric::Hops,
        Metric::PathMtu,
        Metric::MarksChanged,
    ];

    /// The figure a kind's matrix shows unless asked for another.
    pub fn default_for(kind: Kind) -> Metric {
        match kind {
            Kind::TcpStream | Kind::UnixStream => Metric::Gbps,
            Kind::TcpRr | Kind::UdpRr | Kind::UnixRr | Kind::Path | Kind::Stamp => Metric::RttP50,
            Kind::LatencyUnderLoad => Metric::AddedRtt,
            Kind::UdpStream => Metric::LossPct,
            Kind::TcpCrr => Metric::Tps,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Gbps => "gbps",
            Metric::RttP50 => "rtt_p50",
            Metric::RttP99 => "rtt_p99",
            Metric::LossPct => "loss_pct",
            Metric::AddedRtt => "added_rtt",
            Metric::Tps => "tps",
            Metric::Hops => "hops",
            Metric::PathMtu => "path_mtu",
            Metric::MarksChanged => "marks_changed",
        }
    }

    /// The metric whose [`Metric::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What the figure is, with its unit (a table's heading).
    pub fn label(self) -> &'static str {
        match self {
            Metric::Gbps => "throughput, Gbit/s",
            Metric::RttP50 => "median round-trip time, us",
            Metric::RttP99 => "p99 round-trip time, us",
            Metric::LossPct => "loss, % of datagrams sent",
            Metric::AddedRtt => "median RTT added under load, us",
            Metric::Tps => "connection rate, transactions/s",
            Metric::Hops => "hops to the peer, hops",
            Metric::PathMtu => "path MTU, bytes",
            Metric::MarksChanged => "DSCP/ECN marks changed on the way, marks",
        }
    }

    /// The figure of one step, from its primary summary; `None` when the
    /// step failed or its kind has no such figure.
    pub fn of(self, step: &StepResult) -> Option<f64> {
        if step.error.is_some() {
            return None;
        }
        self.of_summary(&step.summary)
    }

    /// The figure from a side's summary.
    pub fn of_summary(self, s: &Value) -> Option<f64> {
        let num = |v: &Value| v.as_f64();
        if s["phases"].is_array() {
            // latency_under_load, read as one direction: upload (the
            // driving agent sends), as a step's own cell is the driving
            // agent's row.
            return self.of_lul(s, true);
        }
        match self {
            Metric::Gbps => num(&s["bits_per_second"])
                .or_else(|| num(&s["recv_bits_per_second"]))
                .map(|b| b / 1e9),
            Metric::RttP50 => num(&s["rtt_us"]["median"]),
            Metric::RttP99 => num(&s["rtt_us"]["p99"]),
            Metric::LossPct => {
                let sent = num(&s["sent"])?;
                (sent > 0.0).then(|| num(&s["lost"]).unwrap_or(0.0) / sent * 100.0)
            }
            Metric::AddedRtt => None,
            Metric::Tps => num(&s["transactions_per_second"]),
            Metric::Hops => num(&path_way(s)?["peer_hop"]),
            Metric::PathMtu => num(&path_way(s)?["mtu"]["bytes"]),
            Metric::MarksChanged => {
                let marks = path_way(s)?["marks"].as_array().filter(|m| !m.is_empty())?;
                let changed = marks
                    .iter()
                    .filter(|m| !matches!(m["verdict"].as_str(), Some("kept" | "lost")))
                    .count();
                Some(changed as f64)
            }
        }
    }

    /// A `latency_under_load` summary's figure for one direction: `up`
    /// (driving to serving agent: the upload phase's throughput and added
    /// RTT, the probes' loss that way) or down (the download phase's, the
    /// answers' loss). Round-trip times are the idle phase's, either way.
    fn of_lul(self, s: &Value, up: bool) -> Option<f64> {
        let phase = |name: &str| {
            s["phases"]
                .as_array()?
                .iter()
                .find(|p| p["phase"].as_str() == Some(name))
        };
        let loaded = phase(if up { "upload" } else { "download" });
        match self {
            Metric::Gbps => loaded?[if up {
                "up_bits_per_second"
            } else {
                "down_bits_per_second"
            }]
            .as_f64()
            .map(|b| b / 1e9),
            Metric::RttP50 => phase("idle")?["rtt_us"]["median"].as_f64(),
            Metric::RttP99 => phase("idle")?["rtt_us"]["p99"].as_f64(),
            Metric::LossPct => {
                let f = &s[if up { "probes_up" } else { "probes_down" }];
                let sent = f["sent"].as_f64()?;
                (sent > 0.0).then(|| f["lost"].as_f64().unwrap_or(0.0) / sent * 100.0)
            }
            Metric::AddedRtt => loaded?["added_rtt_us"]["median"].as_f64(),
            Metric::Tps | Metric::Hops | Metric::PathMtu | Metric::MarksChanged => None,
        }
    }

    /// The cells one step of a matrix fills: (row, column, figure), row the
    /// sending agent. An ordered step fills its own cell (row = the driving
    /// agent); a step that measures both ways ([`both_ways`]) fills both
    /// cells of its pair, each with that direction's figure. `None` for a
    /// failed step or a figure its kind does not have.
    pub fn cells(self, step: &StepResult) -> Vec<(usize, usize, Option<f64>)> {
        let Some(p) = step.pair else {
            return Vec::new();
        };
        let ok = step.error.is_none();
        if !both_ways(step.kind, &step.params) {
            return vec![(p.client, p.server, self.of(step))];
        }
        let (up, down) = if step.kind == Kind::LatencyUnderLoad {
            (
                self.of_lul(&step.summary, true),
                self.of_lul(&step.summary, false),
            )
        } else {
            // A stream both ways: each direction's receiver's rate; other
            // figures from the step's summary, in both cells.
            let rate = |side: &Option<Value>| {
                let v = side.as_ref()?;
                let secs = v["recv_seconds"].as_f64().filter(|&t| t > 0.0)?;
                Some(v["received_bytes"].as_f64()? * 8.0 / secs / 1e9)
            };
            match self {
                Metric::Gbps => (rate(&step.sides.server), rate(&step.sides.client)),
                _ => (self.of(step), self.of(step)),
            }
        };
        let keep = |v: Option<f64>| v.filter(|_| ok);
        vec![
            (p.client, p.server, keep(up)),
            (p.server, p.client, keep(down)),
        ]
    }
}

/// A `path` summary's own direction: the driving side's holds both ways
/// (`forth` is its own trace, the row's), the serving side's only `back`.
fn path_way(s: &Value) -> Option<&Value> {
    [&s["forth"], &s["back"]]
        .into_iter()
        .find(|d| d.is_object())
}

/// The one figure a side's summary is known by (the agent's record of a
/// test, the mean over repetitions): name, value, unit.
pub fn headline(kind: Kind, summary: &Value) -> Option<(&'static str, f64, &'static str)> {
    match kind {
        Kind::TcpStream | Kind::UnixStream => {
            Some(("throughput", Metric::Gbps.of_summary(summary)?, "Gbit/s"))
        }
        Kind::UdpStream => Some((
            "receive rate",
            summary["recv_bits_per_second"].as_f64()? / 1e6,
            "Mbit/s",
        )),
        Kind::TcpRr | Kind::UdpRr | Kind::UnixRr | Kind::Stamp => {
            Some(("median RTT", Metric::RttP50.of_summary(summary)?, "us"))
        }
        // The driving side's summary holds both ways; the serving side's
        // only its own (back).
        Kind::Path => {
            let way = path_way(summary)?;
            let hops = way["peer_hop"]
                .as_f64()
                .or_else(|| way["hops"].as_array().map(|h| h.len() as f64))?;
            Some(("hops to the peer", hops, "hops"))
        }
        Kind::TcpCrr => Some((
            "connection rate",
            Metric::Tps.of_summary(summary)?,
            "transactions/s",
        )),
        Kind::LatencyUnderLoad => Some((
            "added RTT under load (both), median",
            summary["phases"]
                .as_array()?
                .iter()
                .rev()
                .find_map(|p| p["added_rtt_us"]["median"].as_f64())?,
            "us",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(n: usize, rs: &[Vec<Pair>]) {
        let mut seen = HashSet::new();
        for r in rs {
            let mut busy = HashSet::new();
            for p in r {
                assert_ne!(p.server, p.client);
                assert!(p.server < n && p.client < n);
                assert!(
                    busy.insert(p.server) && busy.insert(p.client),
                    "an agent twice in {r:?}"
                );
                assert!(seen.insert(*p), "{p:?} twice");
            }
        }
        assert_eq!(seen.len(), n * (n - 1), "every ordered pair once");
    }

    #[test]
    fn every_ordered_pair_once_no_agent_twice_in_a_round_in_about_2_n_minus_1_rounds() {
        for n in 2..=12 {
            let rs = rounds(n);
            check(n, &rs);
            let want = if n % 2 == 0 { 2 * (n - 1) } else { 2 * n };
            assert_eq!(rs.len(), want, "n = {n}");
            // Full rounds: with N even, every agent is busy in every round.
            if n % 2 == 0 {
                assert!(rs.iter().all(|r| r.len() == n / 2), "n = {n}");
            }
            check(n, &serial(n));
            assert_eq!(serial(n).len(), n * (n - 1));
        }
        assert!(rounds(1).is_empty() && rounds(0).is_empty());
    }

    /// Any ceil((n-1)/k) consecutive rounds of the rotation measure every
    /// ordered pair; each agent drives k tests and serves k a round; the
    /// packed rounds have no agent twice and lose no pair.
    #[test]
    fn sampled_rotation_covers_every_ordered_pair_within_its_rounds() {
        for n in 2..=13 {
            for k in 1..=n + 1 {
                let c = rotation_rounds(n, k);
                assert_eq!(c, ((n - 1) as u64).div_ceil(k as u64), "n {n} k {k}");
                for start in [0u64, 1, 5, 1_000_000_007] {
                    let mut seen = HashSet::new();
                    for r in start..start + c {
                        let round = sampled(n, k, r);
                        assert_eq!(round.len(), n * k.min(n - 1));
                        for i in 0..n {
                            assert_eq!(
                                round.iter().filter(|p| p.client == i).count(),
                                k.min(n - 1)
                            );
                            assert_eq!(
                                round.iter().filter(|p| p.server == i).count(),
                                k.min(n - 1)
                            );
                        }
                        let packed = pack(&round, false);
                        let mut again: Vec<Pair> = Vec::new();
                        for rr in &packed {
                            let mut busy = HashSet::new();
                            for p in rr {
                                assert!(busy.insert(p.server) && busy.insert(p.client), "{rr:?}");
                            }
                            again.extend(rr);
                        }
                        assert_eq!(again.len(), round.len());
                        assert!(
                            packed.len() < 4 * k.min(n - 1),
                            "n {n} k {k}: {}",
                            packed.len()
                        );
                        for p in round {
                            assert_ne!(p.server, p.client);
                            seen.insert(p);
                        }
                    }
                    assert_eq!(seen.len(), n * (n - 1), "n {n} k {k} from round {start}");
                }
            }
        }
        assert!(sampled(1, 4, 0).is_empty() && sampled(5, 0, 0).is_empty());
    }

    /// Shards split the ordered pairs: each pair in exactly one, the
    /// split stable (the same names give the same shard) and not lopsided.
    #[test]
    fn shards_split_every_ordered_pair_once() {
        let names: Vec<String> = (0..40)
            .map(|i| format!("10.0.{}.{}:7800", i / 7, i))
            .collect();
        let mut per = [0usize; 3];
        for a in &names {
            for b in names.iter().filter(|b| *b != a) {
                let s = shard_of(a, b, 3);
                assert!(s < 3);
                assert_eq!(s, shard_of(a, b, 3));
                per[s as usize] += 1;
            }
        }
        assert_eq!(per.iter().sum::<usize>(), 40 * 39);
        assert!(per.iter().all(|&c| c > 40 * 39 / 3 * 8 / 10), "{per:?}");
        // a -> b and b -> a are pairs of their own.
        assert!(
            (1..40).any(|i| shard_of(&names[0], &names[i], 2) != shard_of(&names[i], &names[0], 2))
        );
        assert_eq!(shard_of("a", "b", 1), 0);
        // Pinned (worked in Python): replicas of other builds must agree.
        assert_eq!(shard_of("10.0.0.1:7800", "10.0.0.2:7800", 1_000_003), 84885);
    }

    #[test]
    fn unordered_pairs_once_in_n_minus_1_rounds() {
        for n in 2..=9 {
            let rs = unordered(n, false);
            let mut seen = HashSet::new();
            for r in &rs {
                let mut busy = HashSet::new();
                for p in r {
                    assert!(busy.insert(p.server) && busy.insert(p.client));
                    let key = (p.server.min(p.client), p.server.max(p.client));
                    assert!(seen.insert(key), "{p:?} twice");
                }
            }
            assert_eq!(seen.len(), n * (n - 1) / 2, "n = {n}");
            assert_eq!(rs.len(), n + n % 2 - 1, "n = {n}");
            assert_eq!(unordered(n, true).len(), n * (n - 1) / 2);
            assert_eq!(pairs(n, true).len(), n * (n - 1) / 2);
            assert_eq!(pairs(n, false).len(), n * (n - 1));
        }
    }

    /// Busy pairs come back after the planned rounds, packed so no agent
    /// is in two, not before their time, and fail after BUSY_TRIES.
    #[test]
    fn the_schedule_retries_busy_pairs_later_and_gives_up_after_its_tries() {
        let mut s = Schedule::new(4, false, false);
        assert_eq!((s.pairs(), s.planned_rounds()), (12, 6));
        let mut now = 0.0;
        let mut first = true;
        let mut busy_pairs = Vec::new();
        while let Next::Round(r) = s.next(now) {
            for p in r {
                // Agent 3 is busy throughout the planned rounds.
                let busy = p.server == 3 || p.client == 3;
                assert_eq!(
                    s.ended(p, if busy { Outcome::Busy } else { Outcome::Ended }, now),
                    None
                );
                assert_eq!(s.will_retry(p), busy);
                if busy && first {
                    busy_pairs.push(p);
                }
            }
            if s.retrying() == 6 {
                first = false;
            }
            now += 0.1;
        }
        assert_eq!(busy_pairs.len(), 6);
        // Not yet due: wait, then the retries, no agent twice per round.
        let Next::Wait(w) = s.next(now) else {
            panic!("retries wait")
        };
        assert!(w > 0.0 && w <= BUSY_RETRY_S);
        now += w;
        let mut tries = 1;
        let mut gave_up = 0;
        loop {
            match s.next(now) {
                Next::Done => break,
                Next::Wait(w) => {
                    now += w;
                    tries += 1;
                }
                Next::Round(r) => {
                    let mut agents = HashSet::new();
                    for p in r {
                        assert!(agents.insert(p.server) && agents.insert(p.client));
                        if let Some(why) = s.ended(p, Outcome::Busy, now) {
                            assert!(why.contains("busy"), "{why}");
                            gave_up += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(gave_up, 6, "each busy pair fails once, after its last try");
        assert!(tries >= (BUSY_TRIES - 1) as usize);
        // A retried pair that is measured ends there.
        let mut s = Schedule::new(2, true, false);
        let Next::Round(r) = s.next(0.0) else {
            panic!()
        };
        assert_eq!(s.ended(r[0], Outcome::Busy, 0.0), None);
        let Next::Round(r2) = s.next(0.0) else {
            panic!()
        };
        assert_eq!(s.ended(r2[0], Outcome::Ended, 0.0), None);
        assert!(matches!(s.next(0.0), Next::Wait(_)));
        let Next::Round(r3) = s.next(BUSY_RETRY_S) else {
            panic!()
        };
        assert_eq!(r3, r);
        assert_eq!(s.ended(r3[0], Outcome::Ended, BUSY_RETRY_S), None);
        assert_eq!(s.next(10.0), Next::Done);
    }

    #[test]
    fn agents_twice_or_without_the_kind_are_refused_and_differing_limits_named() {
        let agent = |label: &str, instance: Option<&str>, max_duration_s: f64| AgentRef {
            label: label.into(),
            host: "h".into(),
            addresses: vec![],
            limits: Some(Limits {
                max_duration_s,
                ..Limits::default()
            }),
            capabilities: Some(vec![Kind::TcpRr, Kind::UdpRr]),
            version: None,
            accepts: None,
            instance: instance.map(str::to_string),
            cores: None,
        };
        let a = agent("agent A", Some("1"), 60.0);
        let b = agent("agent B", Some("2"), 10.0);
        assert!(check_agents(&[a.clone(), b.clone()], Kind::TcpRr).is_ok());
        assert!(check_agents(std::slice::from_ref(&a), Kind::TcpRr)
            .unwrap_err()
            .contains("two or more"));
        let e = check_agents(&[a.clone(), b.clone(), a.clone()], Kind::TcpRr).unwrap_err();
        assert_eq!(e, "agent A is listed twice");
        let a2 = agent("agent A2", Some("1"), 60.0);
        let e = check_agents(&[a.clone(), a2], Kind::TcpRr).unwrap_err();
        assert!(e.starts_with("agent A and agent A2 are one agent"), "{e}");
        let e = check_agents(&[a.clone(), b.clone()], Kind::TcpStream).unwrap_err();
        assert_eq!(
            e,
            "agent A does not run tcp_stream (it runs tcp_rr, udp_rr)"
        );
        assert_eq!(
            strictest(&[a.clone(), b.clone()]),
            ["max_duration_s 10 (agent B; up to 60 elsewhere)"]
        );
        assert!(strictest(&[a.clone(), a]).is_empty());
    }

    #[test]
    fn headline_figures_from_the_primary_summary() {
        use serde_json::json;
        let step = |kind, summary: Value| StepResult {
            index: 0,
            kind,
            params: Default::default(),
            point: vec![],
            repeat: 0,
            transport: crate::plan::Transport::Tcp,
            summary,
            sides: Default::default(),
            samples: vec![],
            histograms: vec![],
            error: None,
            started_unix: None,
            wall_seconds: None,
            pair: None,
        };
        let s = step(Kind::TcpStream, json!({"bits_per_second": 2.5e9}));
        assert_eq!(Metric::Gbps.of(&s), Some(2.5));
        let r = step(
            Kind::UdpRr,
            json!({"rtt_us": {"median": 40.0, "p99": 90.0}}),
        );
        assert_eq!(Metric::RttP50.of(&r), Some(40.0));
        assert_eq!(Metric::RttP99.of(&r), Some(90.0));
        let u = step(Kind::UdpStream, json!({"sent": 200, "lost": 3}));
        assert_eq!(Metric::LossPct.of(&u), Some(1.5));
        let mut failed = s.clone();
        failed.error = Some("agent B disconnected".into());
        assert_eq!(Metric::Gbps.of(&failed), None);
        assert_eq!(Metric::default_for(Kind::UdpStream), Metric::LossPct);
        let c = step(Kind::TcpCrr, json!({"transactions_per_second": 12000.5}));
        assert_eq!(Metric::Tps.of(&c), Some(12000.5));
        assert_eq!(Metric::default_for(Kind::TcpCrr), Metric::Tps);
        assert_eq!(
            headline(Kind::TcpCrr, &c.summary),
            Some(("connection rate", 12000.5, "transactions/s"))
        );
        assert_eq!(Metric::from_name("rtt_p99"), Some(Metric::RttP99));
    }

    /// A path step's cell reads the driving agent's trace (forth): hops
    /// to the peer, the path MTU, the marks that arrived changed (lost
    /// ones are not changed); none where the trace did not reach the
    /// peer, the MTU was not searched or no marks were sent.
    #[test]
    fn path_cells_read_hops_mtu_and_changed_marks_of_the_row_agents_trace() {
        use serde_json::json;
        let mark = |v: &str| json!({"dscp": 46, "ecn": 0, "sent": 4, "received": 4, "verdict": v});
        let summary = json!({
            "forth": {"from": "a", "to": "b", "hops": [], "end": "peer", "peer_hop": 4,
                "mtu": {"bytes": 1400, "local": 1500, "probes": 9},
                "marks": [mark("kept"), mark("rewritten"), mark("ce_marked"), mark("lost")]},
            "back": {"from": "b", "to": "a", "hops": [], "end": "peer", "peer_hop": 5,
                "mtu": {"bytes": 1500, "local": 1500, "probes": 2}, "marks": [mark("kept")]},
            "asymmetric": true,
            "rtt_us": {"median": 210.0}
        });
        let mut s: StepResult = serde_json::from_value(json!({
            "index": 0, "kind": "path", "params": {}, "point": [], "repeat": 0,
            "transport": "tcp", "summary": summary, "sides": {}, "samples": [],
            "pair": {"server": 1, "client": 0}
        }))
        .unwrap();
        assert_eq!(Metric::Hops.cells(&s), [(0, 1, Some(4.0))]);
        assert_eq!(Metric::PathMtu.cells(&s), [(0, 1, Some(1400.0))]);
        assert_eq!(Metric::MarksChanged.cells(&s), [(0, 1, Some(2.0))]);
        assert_eq!(Metric::RttP50.cells(&s), [(0, 1, Some(210.0))]);
        // The serving side's summary: its own way, back.
        let back = json!({"back": s.summary["back"].clone()});
        assert_eq!(Metric::Hops.of_summary(&back), Some(5.0));
        assert_eq!(Metric::MarksChanged.of_summary(&back), Some(0.0));
        s.summary["forth"]["end"] = json!("silence");
        s.summary["forth"]["peer_hop"] = Value::Null;
        s.summary["forth"]["mtu"] = Value::Null;
        s.summary["forth"]["marks"] = json!([]);
        for m in [Metric::Hops, Metric::PathMtu, Metric::MarksChanged] {
            assert_eq!(m.cells(&s), [(0, 1, None)], "{m:?}");
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        // Other kinds have none of them.
        let r = json!({"rtt_us": {"median": 40.0}, "sent": 10, "lost": 0});
        assert_eq!(Metric::Hops.of_summary(&r), None);
        assert_eq!(Metric::MarksChanged.of_summary(&r), None);
    }
}
