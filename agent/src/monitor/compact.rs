//! `/matrix.json?form=compact`: the pairs a monitor keeps (those `/metrics`
//! shows: measured within `--stale`, of the last run's agents) as the
//! page's fleet view reads them, a cell per line of the heatmap's figures
//! and nothing else. The whole result file of a run (`/matrix.json`) is
//! about 4.6 KB a pair (both sides' summaries and the raw samples): 4.6 GB
//! for the million pairs of 1000 agents; a compact cell is about 40 bytes.
//! With `--peers` it is also the only view of the whole fleet: the last
//! run measured K peers of each agent, the cells here are every pair of
//! the rotation still fresh, each with its age. Written by hand (no
//! `serde_json::Value` per cell) and documented in docs/formats.md.

use super::metrics::State;
use meshperf_protocol::matrix::Metric;
use meshperf_protocol::params::Kind;
use std::fmt::Write;

/// The `format` field of the compact form.
pub const FORMAT: &str = "meshperf-cells";
/// The version this build writes.
pub const VERSION: u32 = 1;

/// `v` to six significant digits (a figure's noise beyond that is not
/// worth the bytes), as JSON; `null` for NaN.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let m = 10f64.powi(5 - v.abs().log10().floor() as i32);
    let r = (v * m).round() / m;
    format!("{}", if r.is_finite() { r } else { v })
}

fn text(s: &str) -> String {
    serde_json::to_string(s).expect("a string is JSON")
}

/// The compact form of what `state` keeps, at unix time `now`; `plan` is
/// the monitor's plan as JSON.
pub fn render(state: &State, plan: &str, now: f64) -> String {
    let index: std::collections::HashMap<&str, usize> = state
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a.addr.as_str(), i))
        .collect();
    // (row, column, measured at, figures, error)
    let mut cells = Vec::with_capacity(state.pairs.len());
    for ((s, d), p) in &state.pairs {
        let (Some(&r), Some(&c)) = (index.get(s.as_str()), index.get(d.as_str())) else {
            continue;
        };
        let err = p.cells.error.as_deref();
        cells.push((r, c, p.last_measured, &p.cells.own, err));
        if let Some(b) = &p.cells.back {
            cells.push((c, r, p.last_measured, &**b, err));
        }
    }
    // A kind measured both ways fills each cell from two pairs' tests:
    // the later one stands.
    cells.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(b.2.total_cmp(&a.2)));
    cells.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    // The figures the kind has (a column only where some cell has it).
    let mut cols: Vec<usize> = (0..Metric::ALL.len())
        .filter(|&i| cells.iter().any(|c| c.4.is_none() && c.3[i].is_finite()))
        .collect();
    if cols.is_empty() {
        let m = Kind::from_name(&state.kind).map_or(Metric::RttP50, Metric::default_for);
        cols = vec![Metric::ALL.iter().position(|&x| x == m).unwrap_or(0)];
    }
    let mut out = String::with_capacity(1024 + cells.len() * 48 + state.agents.len() * 64);
    let _ = write!(
        out,
        "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"created_unix\":{now:.3},\"kind\":{},\"plan\":{plan},",
        text(&state.kind)
    );
    let shard = state
        .shard
        .map_or_else(|| "null".to_string(), |(i, n)| text(&format!("{i}/{n}")));
    let _ = write!(
        out,
        "\"monitor\":{{\"runs\":{},\"peers\":{},\"rotation\":{},\"shard\":{shard},\"stale_s\":{}}},",
        state.runs,
        state.peers,
        state.rotation.max(1),
        num(state.stale_seconds)
    );
    out.push_str("\"agents\":[");
    for (i, a) in state.agents.iter().enumerate() {
        let _ = write!(
            out,
            "{}{{\"hostname\":{},\"endpoint\":{}}}",
            if i > 0 { "," } else { "" },
            text(&a.hostname),
            text(&a.addr)
        );
    }
    out.push_str("],\"metrics\":[");
    for (j, &i) in cols.iter().enumerate() {
        let _ = write!(
            out,
            "{}{}",
            if j > 0 { "," } else { "" },
            text(Metric::ALL[i].name())
        );
    }
    out.push_str("],\"cells\":[");
    for (j, (r, c, at, v, err)) in cells.iter().enumerate() {
        let _ = write!(
            out,
            "{}\n[{r},{c},{}",
            if j > 0 { "," } else { "" },
            num(((now - at) * 10.0).round().max(0.0) / 10.0)
        );
        match err {
            Some(e) => {
                let _ = write!(out, ",{}", text(e));
            }
            None => {
                for &i in &cols {
                    let _ = write!(out, ",{}", num(v[i]));
                }
            }
        }
        out.push(']');
    }
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::metrics::{AgentInfo, Cells, Measured};
    use meshperf_protocol::result::{Pair, StepResult};
    use serde_json::{json, Value};

    fn step(kind: Kind, summary: Value, error: Option<&str>, pair: Pair) -> StepResult {
        let mut r: StepResult =
            serde_json::from_value(json!({"index": 0, "kind": kind.name()})).expect("a bare step");
        r.summary = summary;
        r.error = error.map(str::to_string);
        r.pair = Some(pair);
        r
    }

    #[test]
    fn numbers_keep_six_digits_and_nan_is_null() {
        assert_eq!(num(36.88889999999999), "36.8889");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "null");
        assert_eq!(num(1234567.0), "1234570");
        assert_eq!(num(0.000123456789), "0.000123457");
    }

    /// Three agents: a measured pair, a failed one, one of an agent gone
    /// (left out); the figures a udp_rr has, a column each; ages.
    #[test]
    fn cells_of_the_kept_pairs_with_their_figures_errors_and_ages() {
        let agents = |n: usize| {
            (0..n)
                .map(|i| AgentInfo {
                    addr: format!("10.0.0.{i}:7800"),
                    hostname: format!("h{i}"),
                })
                .collect::<Vec<_>>()
        };
        let ok = step(
            Kind::UdpRr,
            json!({"count": 200, "timeouts": 2, "rtt_us": {"median": 40.5, "p90": 60.0, "p99": 90.25}}),
            None,
            Pair {
                server: 1,
                client: 0,
            },
        );
        let bad = step(
            Kind::UdpRr,
            Value::Null,
            Some("no answer\nmore"),
            Pair {
                server: 0,
                client: 1,
            },
        );
        let mut st = State {
            kind: "udp_rr".into(),
            ..State::default()
        };
        let m = |r: &StepResult| Measured::of(r);
        st.record(
            agents(3),
            vec![
                ("10.0.0.0:7800".into(), "10.0.0.1:7800".into(), m(&ok)),
                ("10.0.0.1:7800".into(), "10.0.0.2:7800".into(), m(&ok)),
            ],
            100.0,
            1e9,
        );
        st.record(
            agents(2),
            vec![("10.0.0.1:7800".into(), "10.0.0.0:7800".into(), m(&bad))],
            110.0,
            1e9,
        );
        let doc: Value =
            serde_json::from_str(&render(&st, "{\"kind\":\"udp_rr\"}", 115.0)).unwrap();
        assert_eq!(doc["format"], FORMAT);
        assert_eq!(
            doc["agents"][1],
            json!({"hostname": "h1", "endpoint": "10.0.0.1:7800"})
        );
        assert_eq!(doc["metrics"], json!(["rtt_p50", "rtt_p99"]));
        assert_eq!(
            doc["cells"],
            json!([[0, 1, 15, 40.5, 90.25], [1, 0, 5, "no answer"]])
        );
        assert!(Cells::of(&ok).back.is_none());
    }

    /// A kind measured both ways fills both cells of a pair, and the later
    /// test of a cell stands.
    #[test]
    fn a_kind_both_ways_fills_both_cells_and_the_later_stands() {
        let lul = |up: f64, down: f64, pair: Pair| {
            step(
                Kind::LatencyUnderLoad,
                json!({"phases": [
                    {"phase": "idle", "rtt_us": {"median": 50.0, "p99": 70.0}},
                    {"phase": "upload", "added_rtt_us": {"median": up}},
                    {"phase": "download", "added_rtt_us": {"median": down}}
                ]}),
                None,
                pair,
            )
        };
        let mut st = State {
            kind: "latency_under_load".into(),
            ..State::default()
        };
        let a = |i: usize| AgentInfo {
            addr: format!("a:{i}"),
            hostname: String::new(),
        };
        st.record(
            vec![a(0), a(1)],
            vec![(
                "a:0".into(),
                "a:1".into(),
                Measured::of(&lul(
                    10.0,
                    20.0,
                    Pair {
                        server: 1,
                        client: 0,
                    },
                )),
            )],
            100.0,
            1e9,
        );
        st.record(
            vec![a(0), a(1)],
            vec![(
                "a:1".into(),
                "a:0".into(),
                Measured::of(&lul(
                    30.0,
                    40.0,
                    Pair {
                        server: 0,
                        client: 1,
                    },
                )),
            )],
            200.0,
            1e9,
        );
        let doc: Value = serde_json::from_str(&render(&st, "{}", 200.0)).unwrap();
        let added = doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .position(|m| m == "added_rtt")
            .unwrap();
        let cells = doc["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2);
        // 1 -> 0 (the second test's upload) and 0 -> 1 (its download), both from it.
        assert_eq!(
            (&cells[0][1], &cells[0][3 + added]),
            (&json!(1), &json!(40))
        );
        assert_eq!(
            (&cells[1][1], &cells[1][3 + added]),
            (&json!(0), &json!(30))
        );
        assert_eq!((&cells[0][2], &cells[1][2]), (&json!(0), &json!(0)));
    }
}
