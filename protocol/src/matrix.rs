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

use crate::params::Kind;
use crate::result::StepResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One test of a round: agent `server` serves, agent `client` drives.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pair {
    pub server: usize,
    pub client: usize,
}

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
}

impl Metric {
    /// Every metric, in the order a chooser lists them.
    pub const ALL: [Metric; 4] = [
        Metric::Gbps,
        Metric::RttP50,
        Metric::RttP99,
        Metric::LossPct,
    ];

    /// The figure a kind's matrix shows unless asked for another.
    pub fn default_for(kind: Kind) -> Metric {
        match kind {
            Kind::TcpStream | Kind::UnixStream => Metric::Gbps,
            Kind::TcpRr | Kind::UdpRr | Kind::UnixRr | Kind::LatencyUnderLoad => Metric::RttP50,
            Kind::UdpStream => Metric::LossPct,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Gbps => "gbps",
            Metric::RttP50 => "rtt_p50",
            Metric::RttP99 => "rtt_p99",
            Metric::LossPct => "loss_pct",
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
        }
    }
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
        Kind::TcpRr | Kind::UdpRr | Kind::UnixRr => {
            Some(("median RTT", Metric::RttP50.of_summary(summary)?, "us"))
        }
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
        assert_eq!(Metric::from_name("rtt_p99"), Some(Metric::RttP99));
    }
}
