//! The lines `meshperf run` prints under a stream step paced by `rate` or
//! with a warm-up left out (`omit_s`): the rate asked and the rates
//! achieved (as iperf3 reports `-b` runs), and what the warm-up took out;
//! under a UDP step, the ICMP errors its sockets reported.

use meshperf_protocol::params::{rate_figure, rate_text};
use meshperf_protocol::result::StepResult;

/// A share as a percentage with 3 significant digits (`0.501%`, `97.3%`).
fn share(x: f64) -> String {
    let pct = x * 100.0;
    let decimals = (2 - pct.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize;
    format!("{pct:.decimals$}%")
}

/// `rate asked 20 Mbit/s: sent 20.01 Mbit/s, received 20 Mbit/s`
/// (udp_stream, once per flow; a rate the sender did not reach, its
/// summary's `rate_reached` false, ends `; not reached: the sender managed
/// 1.235 Gbit/s, 0.123% of it`) or `rate asked 50 Mbit/s: 49.99 Mbit/s`
/// (tcp_stream), and `warm-up: ...`; none for a step without them. The rate
/// asked as typed ([`rate_text`]), the rates measured as the page shows
/// them ([`rate_figure`]: scaled, four significant digits).
pub fn lines(s: &StepResult) -> Vec<String> {
    let m = &s.summary;
    let mut out = Vec::new();
    for (flow, x) in [
        ("", m),
        (" (serving agent to driving agent)", &m["reverse"]),
    ] {
        let Some(asked) = x["rate"].as_f64() else {
            continue;
        };
        let (snd, rcv) = (
            x["send_bits_per_second"].as_f64(),
            x["recv_bits_per_second"].as_f64(),
        );
        let got = match (snd, rcv) {
            (Some(snd), Some(rcv)) => {
                // The received rate is over the receiver's own span of
                // arrivals (first to last datagram), not the test's length.
                let over = x["recv_seconds"].as_f64().map_or(String::new(), |t| {
                    format!(" over the receiver's {t:.3} s of arrivals")
                });
                format!(
                    "sent {}, received {}{over}",
                    rate_figure(snd),
                    rate_figure(rcv)
                )
            }
            _ => rate_figure(x["bits_per_second"].as_f64().unwrap_or(0.0)),
        };
        // udp_stream: lost of sent, as iperf3 prints Lost/Total.
        let lost = match (x["lost"].as_u64(), x["sent"].as_u64()) {
            (Some(0), Some(sent)) if sent > 0 => format!("; lost 0 of {sent} datagrams (0%)"),
            (Some(lost), Some(sent)) if sent > 0 => format!(
                "; lost {lost} of {sent} datagrams ({})",
                share(lost as f64 / sent as f64)
            ),
            _ => String::new(),
        };
        let short = match (x["rate_reached"].as_bool(), snd) {
            (Some(false), Some(snd)) => format!(
                "; not reached: the sender managed {}, {} of it",
                rate_figure(snd),
                share(snd / asked)
            ),
            _ => String::new(),
        };
        out.push(format!(
            "rate asked {}{flow}: {got}{lost}{short}",
            rate_text(asked)
        ));
    }
    let gso = s.params.get("gso").and_then(serde_json::Value::as_str);
    if gso.is_some_and(|g| g != "off") {
        for (flow, x) in [
            ("", m),
            (" (serving agent to driving agent)", &m["reverse"]),
        ] {
            if let Some(l) = offload(x) {
                out.push(format!("offload{flow}: {l}"));
            }
        }
    }
    for (flow, x) in [
        ("", m),
        (" (serving agent to driving agent)", &m["reverse"]),
    ] {
        if let Some(n) = x["icmp_errors"].as_u64().filter(|&n| n > 0) {
            out.push(format!(
                "icmp{flow}: {n} ICMP errors (unreachable, fragmentation needed) reported on the test's sockets: counted, the test went on"
            ));
        }
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

/// `GSO used: 3020 send calls, 2048 datagrams a call; GRO used: 3488
/// receive calls, 1773 datagrams a call` (udp_stream with `gso` auto or
/// on: what each side used and the datagrams per system call).
fn offload(x: &serde_json::Value) -> Option<String> {
    let per = |n: &serde_json::Value, calls: &serde_json::Value| match (n.as_u64(), calls.as_u64())
    {
        (Some(n), Some(c)) if c > 0 => format!("{:.1}", n as f64 / c as f64),
        _ => "-".into(),
    };
    let used = |b: &serde_json::Value| {
        if b.as_bool()? {
            Some("used")
        } else {
            Some("not used")
        }
    };
    let gso = used(&x["gso"]).map(|u| {
        format!(
            "GSO {u}: {} send calls, {} datagrams a call",
            x["send_calls"],
            per(&x["sent"], &x["send_calls"])
        )
    });
    let gro = used(&x["gro"]).map(|u| {
        format!(
            "GRO {u}: {} receive calls, {} datagrams a call",
            x["recv_calls"],
            per(&x["received"], &x["recv_calls"])
        )
    });
    match (gso, gro) {
        (None, None) => None,
        (a, b) => Some(a.into_iter().chain(b).collect::<Vec<_>>().join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::lines;
    use meshperf_protocol::result::StepResult;
    use serde_json::json;

    #[test]
    fn gso_auto_or_on_says_what_each_side_used_and_the_datagrams_a_call() {
        let mut s = step(json!({
            "sent": 6000, "received": 5990, "gso": true, "gro": false,
            "send_calls": 100, "recv_calls": 599,
        }));
        // Not asked for: no line (every summary has the keys).
        assert!(lines(&s).is_empty());
        s.params.insert("gso".into(), json!("auto"));
        assert_eq!(
            lines(&s),
            ["offload: GSO used: 100 send calls, 60.0 datagrams a call; \
              GRO not used: 599 receive calls, 10.0 datagrams a call"]
        );
    }

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
                "rate asked 1000 Gbit/s: sent 5.012 Gbit/s, received 4.99 Gbit/s; \
                 not reached: the sender managed 5.012 Gbit/s, 0.501% of it",
                "rate asked 20 Mbit/s (serving agent to driving agent): sent 19.93 Mbit/s, \
                 received 20.01 Mbit/s",
            ]
        );
        // A result from before `rate_reached`: no `not reached`.
        let s =
            step(json!({"rate": 20e6, "send_bits_per_second": 1e6, "recv_bits_per_second": 1e6}));
        assert_eq!(
            lines(&s),
            ["rate asked 20 Mbit/s: sent 1 Mbit/s, received 1 Mbit/s"]
        );
    }

    #[test]
    fn a_udp_rate_line_says_what_was_lost_of_what_was_sent_and_over_what_time() {
        // The run: 40% of datagrams lost, the receiver's rate over its 1.39 s of arrivals.
        let s = step(json!({
            "rate": 200e6, "rate_reached": true, "sent": 447_457, "received": 268_983,
            "lost": 178_474, "send_bits_per_second": 200.1e6, "recv_bits_per_second": 174.2e6,
            "recv_seconds": 1.387_654,
        }));
        assert_eq!(
            lines(&s),
            [
                "rate asked 200 Mbit/s: sent 200.1 Mbit/s, received 174.2 Mbit/s over the \
              receiver's 1.388 s of arrivals; lost 178474 of 447457 datagrams (39.9%)"
            ]
        );
    }
}
