//! What `meshperf monitor` keeps between runs (the last result of each
//! ordered pair of agents, the run counters) and its `/metrics` page in the
//! Prometheus text exposition format 0.0.4, written by the `prometheus`
//! crate's encoder.
//!
//! The page is rendered whole after each run and swapped in as one
//! `Arc<String>` ([`Snapshot`]): a scrape in the middle of a run reads the
//! previous run's page, never half of each. The label set is bounded: only
//! pairs of the agents of the last run are kept (an agent that vanished
//! takes its pairs along), each labelled by the agents' `HOST:PORT`.

use meshperf_protocol::result::StepResult;
use prometheus::{
    Encoder, Gauge, GaugeVec, IntCounter, IntCounterVec, Opts, Registry, TextEncoder,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use crate::serve::metrics::CONTENT_TYPE;

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
    /// Runs in which it failed, since the monitor started (or the pair appeared).
    pub failures: u64,
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
    /// agents no longer listed are dropped, the others keep their failure
    /// counts and last success.
    pub fn record(
        &mut self,
        agents: Vec<AgentInfo>,
        results: &[(String, String, &StepResult)],
        now: f64,
    ) {
        let mut pairs = BTreeMap::new();
        for (src, dst, r) in results {
            let key = (src.clone(), dst.clone());
            let old = self.pairs.remove(&key).unwrap_or_default();
            let (rtt_s, loss, bps) = figures(r);
            let up = r.error.is_none();
            pairs.insert(
                key,
                PairStat {
                    up,
                    rtt_s,
                    loss,
                    bps,
                    last_success: if up { Some(now) } else { old.last_success },
                    failures: old.failures + u64::from(!up),
                },
            );
        }
        self.pairs = pairs;
        self.agents = agents;
    }

    /// The page, rendered now.
    pub fn render(&self) -> String {
        let reg = Registry::new();
        let pair = ["src", "dst"];
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
            reg.register(Box::new(g.clone())).expect("registered once");
            g
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            reg.register(Box::new(c.clone())).expect("registered once");
            c
        };
        let scalar = |name: &str, help: &str, v: f64| {
            let g = Gauge::new(name, help).expect("valid metric");
            g.set(v);
            reg.register(Box::new(g)).expect("registered once");
        };
        let count = |name: &str, help: &str, v: u64| {
            let c = IntCounter::new(name, help).expect("valid metric");
            c.inc_by(v);
            reg.register(Box::new(c)).expect("registered once");
        };
        let rtt = gauge(
            "meshperf_pair_rtt_seconds",
            "Round-trip time of the last run, quantile over its requests (src drives, dst serves).",
            &["src", "dst", "quantile"],
        );
        let loss = gauge(
            "meshperf_pair_loss_ratio",
            "Requests unanswered (udp_rr) or datagrams lost (udp_stream) in the last run, 0 to 1.",
            &pair,
        );
        let bps = gauge(
            "meshperf_pair_throughput_bits_per_second",
            "Throughput of the last run (stream kinds only).",
            &pair,
        );
        let up = gauge(
            "meshperf_pair_up",
            "1 if the last run measured the pair, 0 if it failed.",
            &pair,
        );
        let last = gauge(
            "meshperf_pair_last_success_timestamp_seconds",
            "Unix time of the last run that measured the pair.",
            &pair,
        );
        let fails = counter(
            "meshperf_pair_failures_total",
            "Runs in which the pair's test failed.",
            &pair,
        );
        let info = gauge(
            "meshperf_agent_info",
            "An agent of the last run, by address, with the hostname it reported.",
            &["agent", "hostname"],
        );
        let kind = gauge(
            "meshperf_monitor_info",
            "The test kind the monitor runs between every pair.",
            &["kind"],
        );
        for ((s, d), p) in &self.pairs {
            let l = [s.as_str(), d.as_str()];
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
        }
        for a in &self.agents {
            info.with_label_values(&[a.addr.as_str(), a.hostname.as_str()])
                .set(1.0);
        }
        kind.with_label_values(&[self.kind.as_str()]).set(1.0);
        scalar(
            "meshperf_monitor_agents",
            "Agents in the last run.",
            self.agents.len() as f64,
        );
        count(
            "meshperf_monitor_runs_total",
            "Matrix runs finished.",
            self.runs,
        );
        count(
            "meshperf_monitor_overruns_total",
            "Runs that took longer than --every (the next one waited).",
            self.overruns,
        );
        count(
            "meshperf_monitor_resolve_errors_total",
            "Runs skipped because an --agent could not be resolved (no addresses).",
            self.resolve_errors,
        );
        if let Some(v) = self.last_run_seconds {
            scalar(
                "meshperf_monitor_run_duration_seconds",
                "How long the last run took.",
                v,
            );
        }
        if let Some(v) = self.last_run_end {
            scalar(
                "meshperf_monitor_last_run_timestamp_seconds",
                "Unix time the last run ended.",
                v,
            );
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&reg.gather(), &mut out)
            .expect("text encoding of valid metrics");
        String::from_utf8(out).expect("the encoder writes UTF-8")
    }

    /// Renders the page and swaps it in whole.
    pub fn publish(&self, snap: &Snapshot) {
        snap.set(self.render());
    }
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
            &[
                ("a:1".into(), "b:1".into(), &ok),
                ("b:1".into(), "a:1".into(), &ok),
            ],
            100.0,
        );
        st.record(
            vec![agent("a:1"), agent("b:1")],
            &[
                ("a:1".into(), "b:1".into(), &bad),
                ("b:1".into(), "a:1".into(), &ok),
            ],
            200.0,
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
        st.record(vec![agent("a:1")], &[], 300.0);
        assert!(st.pairs.is_empty());
        assert!(!st.render().contains("b:1"));
    }
}
