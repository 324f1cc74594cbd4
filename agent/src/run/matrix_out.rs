//! What `meshperf run --matrix` prints: one line per pair as it ends, and
//! the matrix of the headline figure (rows drive, columns serve).

use super::output::Output;
use meshperf_protocol::driver::AgentRef;
use meshperf_protocol::matrix::Metric;
use meshperf_protocol::params::Kind;
use meshperf_protocol::params::LulPhase;
use meshperf_protocol::result::{RunResult, StepResult};
use meshperf_protocol::summary::LulSummary;
use meshperf_protocol::verdict::{self, Quantile};
use std::io::Write;

/// A figure with the precision its metric needs.
fn figure(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Gbps => format!("{v:.3}"),
        Metric::RttP50 | Metric::RttP99 => format!("{v:.1}"),
        Metric::LossPct => format!("{v:.2}"),
        Metric::AddedRtt => format!("{v:.1}"),
        Metric::Tps | Metric::Hops | Metric::PathMtu | Metric::MarksChanged => format!("{v:.0}"),
    }
}

/// A cell's text: a figure, except that latency_under_load's added round
/// trip within its uncertainty, or below zero, reads `none (±U)` (U in us,
/// as the cell's figures), the rule of protocol/src/verdict.rs (`Added`)
/// that the page's cell and tooltip follow too. Row `row` sends: the
/// upload phase's when it is the driving agent, else the download's.
fn cell_text(metric: Metric, s: &StepResult, row: usize, v: f64) -> String {
    if matches!(metric, Metric::AddedRtt) && s.kind == Kind::LatencyUnderLoad {
        if let (Some(p), Ok(lul)) = (
            s.pair,
            serde_json::from_value::<LulSummary>(s.summary.clone()),
        ) {
            let phase = if row == p.client {
                LulPhase::Upload
            } else {
                LulPhase::Download
            };
            let idle = verdict::idle_phase(&lul);
            let a = lul
                .phases
                .iter()
                .find(|x| x.phase == phase)
                .and_then(|x| verdict::added(idle, x, "rtt", Quantile::Median));
            if let Some(a) = a.filter(|a| a.none()) {
                return format!("none (±{:.1})", a.uncertainty_us);
            }
        }
    }
    figure(metric, v)
}

/// The short name of agent `i` in the table: A, B, ... Z, then A1, B1, ...
pub fn short(i: usize) -> String {
    let letter = (b'A' + (i % 26) as u8) as char;
    match i / 26 {
        0 => letter.to_string(),
        k => format!("{letter}{k}"),
    }
}

impl Output {
    /// One pair as it ends: `[3/6] B -> A (agent 127.0.0.1:7801 -> ...): 12.345`
    /// (a step that measures both ways: both directions on one line).
    pub fn cell(&mut self, s: &StepResult, refs: &[AgentRef], metric: Metric) {
        self.step_done();
        let Some(p) = s.pair else { return };
        let what = match &s.error {
            Some(e) => format!("FAILED: {e}"),
            None => {
                let figures: Vec<String> = metric
                    .cells(s)
                    .into_iter()
                    .map(|(row, col, v)| {
                        let v = v.map_or_else(|| "?".to_string(), |v| cell_text(metric, s, row, v));
                        if row == p.client {
                            v
                        } else {
                            format!("{v} back {} -> {}", short(row), short(col))
                        }
                    })
                    .collect();
                format!("{} ({})", figures.join(", "), metric.label())
            }
        };
        let _ = writeln!(
            self.text(),
            "[{}/{}] {} -> {} ({} -> {}): {what}",
            self.done(),
            self.total(),
            short(p.client),
            short(p.server),
            refs[p.client].label,
            refs[p.server].label,
        );
        // latency_under_load: the verdict in words under its figure, the
        // sentence the page's card and the heatmap cell's tooltip show.
        if s.error.is_none() && s.kind == Kind::LatencyUnderLoad {
            if let Ok(lul) = serde_json::from_value::<LulSummary>(s.summary.clone()) {
                let _ = writeln!(self.text(), "      {}", verdict::lul(&lul).sentence);
            }
        }
        // tcp_stream: what limited the pair (issue 43), the same way.
        if let Some(v) = verdict::tcp::step(s) {
            let _ = writeln!(self.text(), "      {}", v.sentence);
        }
    }
}

/// The matrix as text: a legend of the agents, then one row per driving
/// agent and one column per serving agent; `-` on the diagonal, `FAILED`
/// where the pair failed (its line above says why).
pub fn table(r: &RunResult, refs: &[AgentRef], metric: Metric) -> Vec<String> {
    let n = refs.len();
    let mut cells = vec![vec![String::new(); n]; n];
    for (i, row) in cells.iter_mut().enumerate() {
        row[i] = "-".into();
    }
    for s in &r.steps {
        for (row, col, v) in metric.cells(s) {
            cells[row][col] = match (&s.error, v) {
                (Some(_), _) => "FAILED".into(),
                (None, Some(v)) => cell_text(metric, s, row, v),
                (None, None) => "?".into(),
            };
        }
    }
    let width = cells
        .iter()
        .flatten()
        .map(|c| c.chars().count())
        .chain([6])
        .max()
        .unwrap_or(6);
    let both = r
        .steps
        .iter()
        .any(|s| meshperf_protocol::matrix::both_ways(s.kind, &s.params));
    let mut out = vec![format!(
        "matrix: {} {}; {}",
        r.plan.kind.name(),
        metric.label(),
        if both {
            "one test per pair measured both ways: rows send, columns receive"
        } else {
            "rows drive, columns serve"
        }
    )];
    out.extend((0..n).map(|i| format!("  {} = {}", short(i), refs[i].label)));
    let head: String = (0..n).map(|j| format!(" {:>width$}", short(j))).collect();
    out.push(format!("{:>4}{head}", ""));
    for (i, row) in cells.iter().enumerate() {
        let line: String = row.iter().map(|c| format!(" {c:>width$}")).collect();
        out.push(format!("{:>4}{line}", short(i)));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_names() {
        assert_eq!(super::short(0), "A");
        assert_eq!(super::short(25), "Z");
        assert_eq!(super::short(26), "A1");
    }

    #[test]
    fn an_added_round_trip_below_zero_reads_none_in_its_cell() {
        use super::*;
        let mut summary: serde_json::Value = serde_json::from_str(include_str!(
            "../../../protocol/tests/fixtures/lul-card-phases.json"
        ))
        .unwrap();
        let down = summary["phases"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|p| p["phase"] == "download")
            .unwrap();
        down["added_rtt_us"]["median"] = serde_json::json!(-10.17);
        let s: StepResult = serde_json::from_value(serde_json::json!({"index": 0,
            "kind": "latency_under_load", "pair": {"client": 0, "server": 1}, "summary": summary}))
        .unwrap();
        let cells = Metric::AddedRtt.cells(&s);
        let text = |row: usize| {
            let (_, _, v) = cells.iter().find(|c| c.0 == row).unwrap();
            cell_text(Metric::AddedRtt, &s, row, v.unwrap())
        };
        // Row 1, the serving agent, sends the download: -10.17 us is none.
        assert!(text(1).starts_with("none (±"), "{}", text(1));
        assert!(!text(1).contains('-'), "{}", text(1));
        // The upload's 12.87 ms stays a figure.
        assert_eq!(text(0), "12869.8");
    }
}
