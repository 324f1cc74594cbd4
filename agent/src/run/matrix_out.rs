//! What `meshperf run --matrix` prints: one line per pair as it ends, and
//! the matrix of the headline figure (rows drive, columns serve).

use super::output::Output;
use meshperf_protocol::driver::AgentRef;
use meshperf_protocol::matrix::Metric;
use meshperf_protocol::params::Kind;
use meshperf_protocol::result::{RunResult, StepResult};
use meshperf_protocol::summary::LulSummary;
use meshperf_protocol::verdict;
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
                        let v = v.map_or_else(|| "?".to_string(), |v| figure(metric, v));
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
                (None, Some(v)) => figure(metric, v),
                (None, None) => "?".into(),
            };
        }
    }
    let width = cells
        .iter()
        .flatten()
        .map(String::len)
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
}
