//! The lines `meshperf run` prints under a stream step paced by `rate` or
//! with a warm-up left out (`omit_s`): the rate asked and the rates
//! achieved (as iperf3 reports `-b` runs), and what the warm-up took out.

use meshperf_protocol::result::StepResult;
use serde_json::Value;

/// A rate in Mbit/s as typed (`20`, `0.064`) or measured (3 decimals).
fn mbit(v: &Value) -> Option<f64> {
    v.as_f64().map(|b| b / 1e6)
}

/// A share as a percentage with 3 significant digits (`0.501%`, `97.3%`).
fn share(x: f64) -> String {
    let pct = x * 100.0;
    let decimals = (2 - pct.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize;
    format!("{pct:.decimals$}%")
}

/// `rate asked 20 Mbit/s: sent 20.006 Mbit/s, received 20.004 Mbit/s`
/// (udp_stream, once per flow; a rate the sender did not reach, its
/// summary's `rate_reached` false, ends `; not reached: the sender managed
/// 1234.567 Mbit/s, 0.123% of it`) or `rate asked 50 Mbit/s: 49.987
/// Mbit/s` (tcp_stream), and `warm-up: ...`; none for a step without them.
pub fn lines(s: &StepResult) -> Vec<String> {
    let m = &s.summary;
    let mut out = Vec::new();
    for (flow, x) in [
        ("", m),
        (" (serving agent to driving agent)", &m["reverse"]),
    ] {
        let Some(asked) = mbit(&x["rate"]) else {
            continue;
        };
        let got = match (
            mbit(&x["send_bits_per_second"]),
            mbit(&x["recv_bits_per_second"]),
        ) {
            (Some(snd), Some(rcv)) => format!("sent {snd:.3} Mbit/s, received {rcv:.3} Mbit/s"),
            _ => format!("{:.3} Mbit/s", mbit(&x["bits_per_second"]).unwrap_or(0.0)),
        };
        let short = match (
            x["rate_reached"].as_bool(),
            mbit(&x["send_bits_per_second"]),
        ) {
            (Some(false), Some(snd)) => format!(
                "; not reached: the sender managed {snd:.3} Mbit/s, {} of it",
                share(snd / asked)
            ),
            _ => String::new(),
        };
        out.push(format!("rate asked {asked} Mbit/s{flow}: {got}{short}"));
    }
    if let Some(o) = m["omitted"].as_u64() {
        out.push(format!(
            "warm-up: the first {} s ({o} datagrams) left out of the figures, kept in the samples",
            m["omit_s"].as_f64().unwrap_or(0.0)
        ));
    } else if let Some(n) = m["omitted_intervals"].as_u64() {
        out.push(format!(
            "warm-up: the first {} s ({n} intervals, {} bytes) left out of the figures, kept in the samples",
            m["omitted_s"].as_f64().unwrap_or(0.0),
            m["omitted_bytes"].as_u64().unwrap_or(0)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::lines;
    use meshperf_protocol::result::StepResult;
    use serde_json::json;

    fn step(summary: serde_json::Value) -> StepResult {
        serde_json::from_value(json!({"index": 0, "kind": "udp_stream", "summary": summary}))
            .unwrap()
    }

    #[test]
    fn a_rate_not_reached_says_what_the_sender_managed() {
        let s = step(json!({
            "rate": 1e12, "rate_reached": false,
            "send_bits_per_second": 5.012345e9, "recv_bits_per_second": 4.99e9,
            "reverse": {
                "rate": 20e6, "rate_reached": true,
                "send_bits_per_second": 19.926e6, "recv_bits_per_second": 20.011e6,
            },
        }));
        assert_eq!(
            lines(&s),
            [
                "rate asked 1000000 Mbit/s: sent 5012.345 Mbit/s, received 4990.000 Mbit/s; \
                 not reached: the sender managed 5012.345 Mbit/s, 0.501% of it",
                "rate asked 20 Mbit/s (serving agent to driving agent): sent 19.926 Mbit/s, \
                 received 20.011 Mbit/s",
            ]
        );
        // A result from before `rate_reached`: the line as it was.
        let s =
            step(json!({"rate": 20e6, "send_bits_per_second": 1e6, "recv_bits_per_second": 1e6}));
        assert_eq!(
            lines(&s),
            ["rate asked 20 Mbit/s: sent 1.000 Mbit/s, received 1.000 Mbit/s"]
        );
    }
}
