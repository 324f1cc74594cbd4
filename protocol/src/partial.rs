//! A step cut short by its controller (Ctrl-C in `meshperf run`, Cancel on
//! the page): kept, marked partial, with the figures the samples that came
//! back before the cancel give. One rule for the CLI and the page (through
//! the wasm codec's `StepDriver::cut_short`).

use crate::frame::SampleKind;
use crate::msg::Role;
use crate::params::Kind;
use crate::plan::Step;
use crate::result::{primary_role, StepResult};
use crate::summary::Stats;
use serde_json::{json, Value};

/// `msg_bytes=1M repeat 2`: a step's sweep point and repetition.
pub fn describe(step: &Step) -> String {
    let mut parts: Vec<String> = step
        .point
        .iter()
        .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
        .collect();
    if step.repeat > 0 {
        parts.push(format!("repeat {}", step.repeat));
    }
    parts.join(" ")
}

/// The step cut short, kept when its samples came back: `summary` holds
/// what they give (with `"partial": true`), `error` says how it was cut
/// (`how`: "interrupted" for Ctrl-C, the page's "Cancel pressed") and how
/// far. `None` when nothing came back worth keeping.
pub fn partial(mut s: StepResult, fraction: f64, how: &str) -> Option<StepResult> {
    let figures = partial_figures(&s)?;
    s.summary = figures;
    s.sides = Default::default();
    s.error = Some(format!(
        "{how} at {:.0}% and cancelled on its agents: partial, the summary is what the samples received before the cancel give",
        fraction * 100.0
    ));
    Some(s)
}

/// A stream step's bytes and rate from its receiver's interval samples, a
/// request/response step's round trips: the figures samples streamed
/// during a step give (udp_stream and latency_under_load report theirs at
/// the end only).
fn partial_figures(s: &StepResult) -> Option<Value> {
    let series = |role: Role, kind: SampleKind| {
        s.samples
            .iter()
            .filter(move |x| x.role == role && x.kind == kind && !x.values.is_empty())
    };
    match s.kind {
        Kind::TcpStream | Kind::UnixStream => {
            let tick_ms = interval_ms(s);
            let role = primary_role(s.kind, &s.params);
            let mut streams: Vec<_> = series(role, SampleKind::IntervalBytes).collect();
            streams.sort_by_key(|x| x.stream);
            let ticks = streams.iter().map(|x| x.values.len()).max()?;
            let bytes: u64 = streams.iter().flat_map(|x| &x.values).sum();
            let seconds = ticks as f64 * tick_ms / 1000.0;
            Some(json!({
                "partial": true,
                "bytes": bytes,
                "seconds": seconds,
                "bits_per_second": bytes as f64 * 8.0 / seconds,
                "streams": streams.iter().map(|x| json!({
                    "stream": x.stream,
                    "bytes": x.values.iter().sum::<u64>(),
                })).collect::<Vec<_>>(),
            }))
        }
        Kind::TcpRr | Kind::UnixRr | Kind::UdpRr => {
            let rtt = series(Role::Client, SampleKind::RttNs).next()?;
            let stats = stats_us(&rtt.values)?;
            Some(json!({
                "partial": true,
                "count": rtt.values.len(),
                "rtt_us": stats,
            }))
        }
        Kind::TcpCrr => {
            let txn = series(Role::Client, SampleKind::RttNs).next()?;
            let stats = stats_us;
            let connect = series(Role::Client, SampleKind::ConnectNs).next();
            Some(json!({
                "partial": true,
                "transactions": txn.values.len(),
                "connect_us": connect.and_then(|c| stats(&c.values)),
                "txn_us": stats(&txn.values)?,
            }))
        }
        Kind::UdpStream | Kind::LatencyUnderLoad | Kind::Path | Kind::Stamp => None,
    }
}

/// Round trips in ns as the statistics in µs every summary carries.
fn stats_us(ns: &[u64]) -> Option<Stats> {
    let us: Vec<f64> = ns.iter().map(|&v| v as f64 / 1e3).collect();
    Stats::new(&us).ok()
}

/// A stream step's sample interval: its `interval_ms`, else the table's default.
pub fn interval_ms(s: &StepResult) -> f64 {
    s.params
        .get("interval_ms")
        .and_then(Value::as_f64)
        .unwrap_or_else(|| {
            s.kind
                .params()
                .iter()
                .find(|p| p.name == "interval_ms")
                .map_or(10.0, |p| p.default_num() as f64)
        })
}

/// One line for the step cut short, as the other steps' lines name it:
/// `step 2 msg_bytes=1M: PARTIAL, interrupted at 43%: 1234567 bytes in
/// 0.430 s, 0.0230 Gbit/s`.
pub fn partial_line(s: &StepResult) -> String {
    let d = describe(&Step {
        index: s.index,
        kind: s.kind,
        params: s.params.clone(),
        point: s.point.clone(),
        repeat: s.repeat,
        transport: s.transport,
    });
    let f = &s.summary;
    let figures = if let Some(b) = f["bytes"].as_u64() {
        format!(
            "{b} bytes in {:.3} s, {:.4} Gbit/s",
            f["seconds"].as_f64().unwrap_or(0.0),
            f["bits_per_second"].as_f64().unwrap_or(0.0) / 1e9
        )
    } else {
        let r = &f["rtt_us"];
        let us = |k: &str| r[k].as_f64().unwrap_or(0.0);
        format!(
            "{} transactions, rtt us: min {:.1}, median {:.1}, mean {:.1}, p99 {:.1}, max {:.1}",
            f["count"],
            us("min"),
            us("median"),
            us("mean"),
            us("p99"),
            us("max")
        )
    };
    let how_far = s
        .error
        .as_deref()
        .and_then(|e| e.split(" and ").next())
        .unwrap_or("interrupted");
    format!(
        "step {}{}{d}: PARTIAL, {how_far}: {figures}",
        s.index,
        if d.is_empty() { "" } else { " " }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Series;

    fn step(kind: &str, samples: Vec<Series>) -> StepResult {
        let mut s: StepResult = serde_json::from_value(
            json!({"index": 2, "kind": kind, "params": {"interval_ms": 100},
                "point": [["msg_bytes", 1024]], "repeat": 1}),
        )
        .unwrap();
        s.samples = samples;
        s
    }

    #[test]
    fn a_stream_step_cut_short_keeps_the_bytes_its_samples_give() {
        let iv = |stream, values: Vec<u64>| Series {
            role: Role::Server,
            kind: SampleKind::IntervalBytes,
            stream,
            values,
        };
        let s = partial(
            step(
                "tcp_stream",
                vec![iv(1, vec![10, 20]), iv(0, vec![5, 5, 5])],
            ),
            0.25,
            "interrupted",
        )
        .unwrap();
        assert_eq!(s.summary["bytes"], 45);
        assert_eq!(s.summary["seconds"], 0.3);
        assert_eq!(s.summary["bits_per_second"], 1200.0);
        assert_eq!(s.summary["streams"][1], json!({"stream": 1, "bytes": 30}));
        assert_eq!(s.summary["partial"], true);
        assert!(s
            .error
            .as_deref()
            .unwrap()
            .starts_with("interrupted at 25%"));
        assert_eq!(
            partial_line(&s),
            "step 2 msg_bytes=1024 repeat 1: PARTIAL, interrupted at 25%: 45 bytes in 0.300 s, 0.0000 Gbit/s"
        );
        // Nothing came back: nothing to keep.
        assert!(partial(step("tcp_stream", vec![]), 0.5, "interrupted").is_none());
        assert!(partial(step("udp_stream", vec![iv(0, vec![1])]), 0.5, "interrupted").is_none());
    }

    #[test]
    fn a_request_response_step_cut_short_keeps_its_round_trips() {
        let rtt = Series {
            role: Role::Client,
            kind: SampleKind::RttNs,
            stream: 0,
            values: vec![10_000, 20_000, 30_000],
        };
        let s = partial(step("tcp_rr", vec![rtt]), 0.5, "interrupted").unwrap();
        assert_eq!(s.summary["count"], 3);
        assert_eq!(s.summary["rtt_us"]["median"], 20.0);
        assert!(partial_line(&s).contains("PARTIAL, interrupted at 50%: 3 transactions"));
    }
}
