//! `meshperf run`'s verdict and per-phase table of a `latency_under_load`
//! step (the driving side's typed summary), times in ms.

use meshperf_protocol::lul_card::{clock_line, mbit, ms, one_way_text};
use meshperf_protocol::summary::{LulPhaseSummary, LulSummary, Stats};
use meshperf_protocol::verdict::{self, Quantile};
use serde_json::Value;
use std::fmt::Write;

fn stat(s: &Option<Stats>, f: fn(&Stats) -> f64) -> String {
    s.as_ref().map_or("-".into(), |s| ms(f(s)))
}

/// The table, and what the one-way delays rest on; `None` when the summary
/// is not a `latency_under_load` driving side's.
pub fn table(summary: &Value) -> Option<String> {
    let s: LulSummary = serde_json::from_value(summary.clone()).ok()?;
    let unc = s.clock.map_or(f64::INFINITY, |c| c.uncertainty_us);
    // A one-way figure smaller than its uncertainty means nothing: say so
    // (the page's summary card follows the same rule: lul_card.rs).
    let one_way = |st: &Option<Stats>| one_way_text(st, unc);
    let loss = |lost: u64, sent: u64| {
        if sent == 0 {
            "-".to_string()
        } else {
            format!("{lost} ({:.2}%)", lost as f64 * 100.0 / sent as f64)
        }
    };
    // The verdict first: the answer before the figures it rests on (the
    // page's card and the matrix's tooltip say the same words).
    let mut out = format!("{}\n", meshperf_protocol::verdict::lul(&s).sentence);
    // An added delay within its uncertainty, or below zero, reads
    // `none (±U)` (protocol/src/verdict.rs, `Added`), as on the page's card.
    let idle = verdict::idle_phase(&s);
    let add = |p: &LulPhaseSummary, way: &str, q: Quantile| {
        verdict::added(idle, p, way, q).map_or("-".into(), |a| a.text(ms))
    };
    let addeds: Vec<String> = s
        .phases
        .iter()
        .map(|p| match p.added_rtt_us {
            None => "-".into(),
            Some(_) => [Quantile::Median, Quantile::P90, Quantile::P99]
                .map(|q| add(p, "rtt", q))
                .join("/"),
        })
        .collect();
    let w = addeds
        .iter()
        .map(|a| a.chars().count())
        .max()
        .unwrap_or(0)
        .max(23);
    let _ = writeln!(
        out,
        "{:<9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>w$} {:>10} {:>10} {:>13} {:>13}",
        "phase",
        "down Mb/s",
        "up Mb/s",
        "RTT p50",
        "p90",
        "p99",
        "added p50/p90/p99",
        "up p50",
        "down p50",
        "loss up",
        "loss down"
    );
    for (p, added) in s.phases.iter().zip(&addeds) {
        let _ = writeln!(
            out,
            "{:<9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>w$} {:>10} {:>10} {:>13} {:>13}",
            p.phase.name(),
            mbit(p.down_bits_per_second),
            mbit(p.up_bits_per_second),
            stat(&p.rtt_us, |x| x.median),
            stat(&p.rtt_us, |x| x.p90),
            stat(&p.rtt_us, |x| x.p99),
            added,
            one_way(&p.up_us),
            one_way(&p.down_us),
            loss(p.probes_up.lost, p.probes_up.sent),
            loss(p.probes_down.lost, p.probes_down.sent),
        );
    }
    let _ = match s.clock {
        Some(_) => writeln!(out, "times in ms; {}", clock_line(&s)),
        None => writeln!(out, "{}", clock_line(&s)),
    };
    let added = |way: &str| {
        s.phases
            .iter()
            .filter_map(|p| {
                verdict::added(idle, p, way, Quantile::Median)
                    .map(|a| format!("{} {}", p.phase.name(), a.text(ms)))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let up = added("up");
    if !up.is_empty() {
        let down = added("down");
        let _ = writeln!(out, "added one-way p50 up: {up}; down: {down}");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_one_way_delay_below_its_uncertainty_is_not_printed_as_a_number() {
        let st = |m: f64| {
            json!({"n": 10, "min": m, "max": m, "mean": m, "sigma": 0.0,
            "skew": 0.0, "kurtosis": 0.0, "median": m, "iq25": m, "iq75": m, "p90": m,
            "p99": m, "p999": m, "p9999": m, "mad": 0.0})
        };
        let flow =
            json!({"sent": 200, "received": 194, "lost": 6, "duplicates": 0, "reordered": 0});
        let s = json!({
            "phases": [{"phase": "idle", "seconds": 1.0, "down_bytes": 0,
                "down_bits_per_second": 0.0, "up_bytes": 0, "up_bits_per_second": 0.0,
                "rtt_us": st(60.0), "up_us": st(20.0), "down_us": st(2500.0),
                "added_rtt_us": null, "added_up_us": null, "added_down_us": null,
                "probes_up": flow, "probes_down": flow, "probes_skipped": 0}],
            "clock": {"basis": "estimated", "offset_us": 1.0, "drift_ppm": 0.5,
                "uncertainty_us": 30.0, "min_rtt_us": 60.0, "residual_us": 1.0, "probes_used": 5},
            "probes_up": flow, "probes_down": flow, "probes_skipped": 0, "probe_ms": 5.0,
            "probe_bytes": 64, "streams_per_direction": 1, "seconds": 1.0, "foreign": 0, "peer": "x",
            "complete": true, "note": null, "rate_capped_us": 0.0, "base_ns": 1, "peer_base_ns": 2
        });
        let t = table(&s).unwrap();
        // The verdict first (no loaded phase here), then the header, then idle.
        assert!(
            t.starts_with("No verdict: no probe was answered in a loaded phase."),
            "{t}"
        );
        let row = t.lines().nth(2).unwrap();
        assert!(row.contains("<±0.030"), "{t}");
        assert!(row.contains("2.500"), "{t}");
        assert!(row.contains("6 (3.00%)"), "{t}");
        assert!(t.contains("uncertainty ±30.0 us"), "{t}");
        assert!(table(&json!({"bytes": 1})).is_none());
    }

    #[test]
    fn an_added_delay_within_its_uncertainty_or_below_zero_reads_none_in_the_table() {
        // Round trips of MAD 10 us over 100 probes: a median's difference is
        // uncertain by 5.3 us (protocol/src/verdict.rs).
        let st = |m: f64| {
            json!({"n": 100, "min": m, "max": m, "mean": m, "sigma": 15.0,
            "skew": 0.0, "kurtosis": 0.0, "median": m, "iq25": m, "iq75": m, "p90": m,
            "p99": m, "p999": m, "p9999": m, "mad": 10.0})
        };
        let a = |m: f64, p90: f64, p99: f64| json!({"median": m, "p90": p90, "p99": p99});
        let flow =
            json!({"sent": 100, "received": 100, "lost": 0, "duplicates": 0, "reordered": 0});
        let phase = |name: &str, rtt: f64, added: Value, up: Value, down: Value| {
            json!({"phase": name, "seconds": 1.0, "down_bytes": 0,
                "down_bits_per_second": 0.0, "up_bytes": 0, "up_bits_per_second": 0.0,
                "rtt_us": st(rtt), "up_us": st(30.0), "down_us": st(30.0),
                "added_rtt_us": added, "added_up_us": up, "added_down_us": down,
                "probes_up": flow, "probes_down": flow, "probes_skipped": 0})
        };
        let s = json!({
            "phases": [
                phase("idle", 60.0, Value::Null, Value::Null, Value::Null),
                // What a busy loopback gives: the loaded round trip faster than idle.
                phase("download", 49.83, a(-10.17, -2.0, 15.0), a(-2.674, 0.0, 0.0), a(3.0, 0.0, 0.0)),
                phase("upload", 1060.0, a(1000.0, 2000.0, 3000.0), a(990.0, 0.0, 0.0), a(10.0, 0.0, 0.0)),
            ],
            "clock": null,
            "probes_up": flow, "probes_down": flow, "probes_skipped": 0, "probe_ms": 5.0,
            "probe_bytes": 64, "streams_per_direction": 1, "seconds": 1.0, "foreign": 0, "peer": "x",
            "complete": true, "note": null, "rate_capped_us": 0.0, "base_ns": 1, "peer_base_ns": 2
        });
        let t = table(&s).unwrap();
        let row = |name: &str| t.lines().find(|l| l.starts_with(name)).unwrap();
        // -10.17 and -2 us read none; +15 us at p99 is within that
        // quantile's larger uncertainty (15.7 us), so none too.
        assert!(
            row("download ").contains("none (±0.0053)/none (±0.0072)/none (±0.016)"),
            "{t}"
        );
        assert!(row("upload ").contains("1.000/2.000/3.000"), "{t}");
        assert!(!t.contains("-0.0") && !t.contains("-10"), "{t}");
        // Each row's columns still line up under the header.
        let width = |l: &str| l.chars().count();
        let head = width(t.lines().nth(1).unwrap());
        assert_eq!(width(row("download ")), head, "{t}");
        assert_eq!(width(row("upload ")), head, "{t}");
        // The one-way changes follow the same rule.
        assert!(
            t.contains(
                "added one-way p50 up: download none (±0.0053), upload 0.990; \
                 down: download none (±0.0053), upload 0.010"
            ),
            "{t}"
        );
    }
}
