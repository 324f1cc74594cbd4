//! The `cpu:` lines of `meshperf run`: each side's CPU use (the summaries'
//! `cpu`), one line per side, as netperf `-c -C` and iperf3 report the
//! local and remote CPU; and the `link:` line, each side's interface, with
//! what the step measured against what the links allow
//! (`meshperf_protocol::link`).

use meshperf_protocol::result::StepResult;
use meshperf_protocol::summary::{CpuSummary, LinkSummary};

/// `cpu: client 95.2% of a CPU (user 0.050 s, system 0.902 s, 3 threads,
/// 1.000 s); host 51.0% of 2 CPUs`, then the server's; none for results
/// of agents that did not measure it.
pub fn lines(s: &StepResult) -> Vec<String> {
    [("client", &s.sides.client), ("server", &s.sides.server)]
        .into_iter()
        .filter_map(|(role, side)| {
            let c = CpuSummary::of(side.as_ref()?)?;
            Some(format!("cpu: {role} {}", c.text()))
        })
        .collect()
}

/// `link: client eth0, 10 Gbit/s, MTU 1500; server lo, MTU 65536`, then
/// the line setting the figure against the links, where there is one.
pub fn link_lines(s: &StepResult) -> Vec<String> {
    let sides: Vec<String> = [("client", &s.sides.client), ("server", &s.sides.server)]
        .into_iter()
        .filter_map(|(role, side)| {
            Some(format!(
                "{role} {}",
                LinkSummary::of(side.as_ref()?)?.text()
            ))
        })
        .collect();
    let mut out = Vec::new();
    if !sides.is_empty() {
        out.push(format!("link: {}", sides.join("; ")));
    }
    out.extend(meshperf_protocol::link::line(s));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_line_per_side_that_measured() {
        let cpu = json!({"seconds": 2.0, "user_seconds": 0.5, "system_seconds": 1.5,
            "threads": 2, "percent": 100.0, "host_percent": 55.5, "host_user_percent": 20.0,
            "host_system_percent": 35.5, "host_cpus": 2});
        let s: StepResult = serde_json::from_value(json!({"index": 0, "kind": "tcp_stream",
            "sides": {"client": {"bytes": 1, "cpu": cpu}, "server": {"bytes": 1}}}))
        .unwrap();
        assert_eq!(
            lines(&s),
            ["cpu: client 100.0% of a CPU (user 0.500 s, system 1.500 s, 2 threads, 2.000 s); host 55.5% of 2 CPUs"]
        );
    }
}
