//! The lines `meshperf run` prints under a stream step paced by `rate` or
//! with a warm-up left out (`omit_s`): the rate asked and the rates
//! achieved (as iperf3 reports `-b` runs), and what the warm-up took out.

use meshperf_protocol::result::StepResult;
use serde_json::Value;

/// A rate in Mbit/s as typed (`20`, `0.064`) or measured (3 decimals).
fn mbit(v: &Value) -> Option<f64> {
    v.as_f64().map(|b| b / 1e6)
}

/// `rate asked 20 Mbit/s: sent 20.006 Mbit/s, received 20.004 Mbit/s`
/// (udp_stream, once per flow) or `rate asked 50 Mbit/s: 49.987 Mbit/s`
/// (tcp_stream), and `warm-up: ...`; none for a step without them.
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
        out.push(format!("rate asked {asked} Mbit/s{flow}: {got}"));
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
