//! What a throughput or request/response step measured against what the
//! agents' links allow, in one line (issue 26 part 1): the figure a user
//! gets ("9.4 Gbit/s") means little until it is set beside the link it ran
//! over ("all a 10 Gbit/s link carries as TCP payload").
//!
//! Each side's summary says which interface its traffic left by and the
//! speed that interface reports ([`LinkSummary`]). The slower end's speed
//! is what the path can carry at best:
//! * a stream's payload rate is set against that speed less the headers
//!   every packet carries at the MTU of the smaller end: TCP (IP 20, TCP 20
//!   and its timestamp option 12 bytes of each MTU; Ethernet's preamble,
//!   header, CRC and gap 38 bytes more on the wire), so a 1500-byte MTU
//!   carries at most 1448 / 1538 = 94.1 % of the link's rate; UDP's wire
//!   rate (the summary's `wire_bits_per_second`, 66 bytes a datagram more)
//!   against the speed itself. At 90 % and more the link is the limit;
//!   below, something else is as well.
//! * a request/response round trip is set against the time the request and
//!   its reply take on the wire at that speed: when that is a small part of
//!   the round trip, the link's rate is not what a faster link would fix.
//!
//! Loopback at both ends reads as such (no link; the figure is the hosts'
//! CPUs and kernels). Where no end knows its speed (virtual interfaces,
//! most wireless drivers) or a result comes from agents before `link`,
//! there is no line.

use crate::matrix::Metric;
use crate::params::Kind;
use crate::result::StepResult;
use crate::summary::{speed_text, LinkSummary};

/// Bytes of each TCP segment that are not payload, within the MTU: IPv4
/// 20, TCP 20, the timestamp option 12 (Linux sends it by default).
pub const TCP_HEADERS: f64 = 52.0;
/// Bytes each packet costs on Ethernet outside the MTU: header 14, CRC 4,
/// preamble 8, inter-frame gap 12.
pub const ETHERNET: f64 = 38.0;
/// At this share of what the link carries or more, the link is the limit.
pub const FULL: f64 = 0.9;

/// The line for a step, if its agents know enough (see the module docs).
pub fn line(s: &StepResult) -> Option<String> {
    let sides = [
        ("driving", s.sides.client.as_ref()),
        ("serving", s.sides.server.as_ref()),
    ];
    let links: Vec<(&str, LinkSummary)> = sides
        .iter()
        .filter_map(|(who, v)| Some((*who, LinkSummary::of((*v)?)?)))
        .collect();
    if links.is_empty() || s.error.is_some() {
        return None;
    }
    let stream = matches!(s.kind, Kind::TcpStream | Kind::UdpStream);
    let rr = matches!(s.kind, Kind::TcpRr | Kind::UdpRr);
    if !stream && !rr {
        return None;
    }
    if links.iter().all(|(_, l)| l.loopback()) {
        return Some(if stream {
            "Over loopback at both agents: no link limits it; this is what the hosts' CPUs and kernels move.".into()
        } else {
            "Over loopback at both agents: no link in the path; this round trip is the hosts' own."
                .into()
        });
    }
    let (who, slow) = links
        .iter()
        .filter(|(_, l)| l.speed_mbps.is_some_and(|m| m > 0))
        .min_by_key(|(_, l)| l.speed_mbps)?;
    let speed = slow.speed_mbps? as f64 * 1e6;
    let at = format!(
        "the {} link at the {who} agent ({})",
        speed_text(slow.speed_mbps?),
        slow.interface
    );
    if stream {
        stream_line(s, &links, speed, &at)
    } else {
        rr_line(s, speed, &at)
    }
}

fn stream_line(
    s: &StepResult,
    links: &[(&str, LinkSummary)],
    speed: f64,
    at: &str,
) -> Option<String> {
    let (got, carries, what) = if s.kind == Kind::UdpStream {
        let wire = s.summary["wire_bits_per_second"].as_f64()?;
        (wire, speed, "on the wire")
    } else {
        let mtu = links
            .iter()
            .filter_map(|(_, l)| l.mtu)
            .min()
            .unwrap_or(1500) as f64;
        let share = (mtu - TCP_HEADERS) / (mtu + ETHERNET);
        let gbps = Metric::Gbps.of_summary(&s.summary)?;
        (gbps * 1e9, speed * share, "of TCP payload")
    };
    let pct = got / carries;
    let rate = rate_text(got);
    let most = rate_text(carries);
    let judged = if pct >= FULL {
        "the link is the limit".to_string()
    } else if pct >= 0.5 {
        "something besides the link limits it as well (the CPUs, a shaper, a slower hop, the window)".to_string()
    } else {
        "the limit is elsewhere: the CPUs, a shaper, a slower hop on the path or the window"
            .to_string()
    };
    Some(format!(
        "{rate} {what}: {:.0} % of the {most} {at} can carry: {judged}.",
        pct * 100.0
    ))
}

fn rr_line(s: &StepResult, speed: f64, at: &str) -> Option<String> {
    let rtt_us = Metric::RttP50.of_summary(&s.summary)?;
    let req = s.summary["req_bytes"].as_f64()?;
    let resp = s.summary["resp_bytes"].as_f64()?;
    // Headers per message: IP and UDP 28, or IP and TCP with timestamps 52;
    // Ethernet's 38 on top; one packet each way (a larger message is more
    // packets, each with its headers, which this leaves out).
    let hdr = if s.kind == Kind::UdpRr {
        28.0
    } else {
        TCP_HEADERS
    } + ETHERNET;
    let wire_us = (req + resp + 2.0 * hdr) * 8.0 / speed * 1e6;
    let share = wire_us / rtt_us;
    let judged = if share >= 0.5 {
        "most of the round trip is the link's rate: a faster link would shorten it"
    } else {
        "the round trip is the hosts' and the path's, not the link's rate"
    };
    Some(format!(
        "Median round trip {}: {at} puts a {req:.0}-byte request and its {resp:.0}-byte reply on the wire in {} ({:.0} %): {judged}.",
        us_text(rtt_us),
        us_text(wire_us),
        share * 100.0
    ))
}

/// `9.41 Gbit/s`, `941 Mbit/s`.
fn rate_text(bps: f64) -> String {
    // Link speeds are whole Mbit/s: never below M.
    let (div, prefix) = crate::units::si_scale(bps.max(1e6));
    let decimals = if div > 1e6 { 2 } else { 0 };
    format!("{:.decimals$} {prefix}bit/s", bps / div)
}

/// A time by the one rule (µs below 10 ms, ms from it: [`crate::units::duration_us`]).
fn us_text(us: f64) -> String {
    crate::units::duration_us(us)
}

/// The line of a step given as JSON (the page, through wasm): `null` when
/// there is none.
pub fn line_json(step_json: &str) -> Result<String, String> {
    let s: StepResult = serde_json::from_str(step_json)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("not a step: {e}"))?;
    Ok(serde_json::Value::from(line(&s)).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn step(kind: &str, summary: Value, client: Value, server: Value) -> StepResult {
        serde_json::from_value(json!({
            "index": 0, "kind": kind, "summary": summary,
            "sides": {"client": client, "server": server}
        }))
        .unwrap()
    }

    fn link(name: &str, mbps: Option<u64>, mtu: u32) -> Value {
        json!({"interface": name, "speed_mbps": mbps, "mtu": mtu})
    }

    #[test]
    fn a_stream_against_the_slower_link_and_its_tcp_payload_ceiling() {
        // 1448 / 1538 of 1 Gbit/s = 941.5 Mbit/s of payload at most.
        let full = step(
            "tcp_stream",
            json!({"bits_per_second": 0.94e9}),
            json!({"link": link("eth0", Some(10000), 1500)}),
            json!({"link": link("enp3s0", Some(1000), 1500)}),
        );
        assert_eq!(
            line(&full).unwrap(),
            "940 Mbit/s of TCP payload: 100 % of the 941 Mbit/s the 1 Gbit/s link at the serving agent (enp3s0) can carry: the link is the limit."
        );
        let half = step(
            "tcp_stream",
            json!({"bits_per_second": 0.6e9}),
            json!({"link": link("eth0", Some(1000), 9000)}),
            json!({"link": link("eth1", None, 9000)}),
        );
        // 8948 / 9038 of 1 Gbit/s = 990 Mbit/s.
        let l = line(&half).unwrap();
        assert!(l.starts_with("600 Mbit/s of TCP payload: 61 % of the 990 Mbit/s the 1 Gbit/s link at the driving agent (eth0)"), "{l}");
        assert!(l.ends_with("something besides the link limits it as well (the CPUs, a shaper, a slower hop, the window)."), "{l}");
        let low = step(
            "udp_stream",
            json!({"wire_bits_per_second": 2.0e9, "recv_bits_per_second": 1.9e9}),
            json!({"link": link("veth0", Some(10000), 1500)}),
            json!({"link": link("veth1", Some(10000), 1500)}),
        );
        assert_eq!(
            line(&low).unwrap(),
            "2.00 Gbit/s on the wire: 20 % of the 10.00 Gbit/s the 10 Gbit/s link at the driving agent (veth0) can carry: the limit is elsewhere: the CPUs, a shaper, a slower hop on the path or the window."
        );
    }

    #[test]
    fn a_round_trip_against_its_time_on_the_wire() {
        // 64 + 64 bytes and 2 x (52 + 38) of headers at 1 Gbit/s: 2.464 us.
        let s = step(
            "tcp_rr",
            json!({"rtt_us": {"median": 50.0}, "req_bytes": 64, "resp_bytes": 64}),
            json!({"link": link("eth0", Some(1000), 1500)}),
            json!({"link": link("eth0", Some(1000), 1500)}),
        );
        assert_eq!(
            line(&s).unwrap(),
            "Median round trip 50 us: the 1 Gbit/s link at the driving agent (eth0) puts a 64-byte request and its 64-byte reply on the wire in 2.464 us (5 %): the round trip is the hosts' and the path's, not the link's rate."
        );
        // 1 MB each way at 100 Mbit/s is 160 ms of a 170 ms round trip.
        let big = step(
            "udp_rr",
            json!({"rtt_us": {"median": 170000.0}, "req_bytes": 1000000, "resp_bytes": 1000000}),
            json!({"link": link("eth0", Some(100), 1500)}),
            Value::Null,
        );
        let l = line(&big).unwrap();
        assert!(
            l.contains("on the wire in 160 ms (94 %): most of the round trip is the link's rate"),
            "{l}"
        );
    }

    #[test]
    fn loopback_unknown_speeds_other_kinds_and_old_results() {
        let lo = json!({"link": link("lo", None, 65536)});
        let s = step(
            "tcp_stream",
            json!({"bits_per_second": 3e10}),
            lo.clone(),
            lo.clone(),
        );
        assert!(line(&s)
            .unwrap()
            .starts_with("Over loopback at both agents: no link limits it"));
        let rr = step(
            "udp_rr",
            json!({"rtt_us": {"median": 20.0}}),
            lo.clone(),
            lo.clone(),
        );
        assert!(line(&rr).unwrap().contains("no link in the path"));
        // No end knows its speed: nothing to compare with.
        let wg = json!({"link": link("wg0", None, 1420)});
        assert_eq!(
            line(&step(
                "tcp_stream",
                json!({"bits_per_second": 1e9}),
                wg.clone(),
                wg
            )),
            None
        );
        // Agents before `link`, a unix kind, a failed step: no line.
        assert_eq!(
            line(&step(
                "tcp_stream",
                json!({"bits_per_second": 1e9}),
                json!({}),
                json!({})
            )),
            None
        );
        assert_eq!(
            line(&step(
                "unix_stream",
                json!({"bits_per_second": 1e9}),
                lo.clone(),
                lo.clone()
            )),
            None
        );
        let mut failed = step(
            "tcp_stream",
            json!({"bits_per_second": 1e9}),
            lo.clone(),
            lo,
        );
        failed.error = Some("peer went away".into());
        assert_eq!(line(&failed), None);
    }

    #[test]
    fn the_json_form_is_the_same_line_or_null() {
        let st = json!({"index": 0, "kind": "tcp_stream", "summary": {"bits_per_second": 3e10},
            "sides": {"client": {"link": link("lo", None, 65536)}, "server": null}});
        let out: Value = serde_json::from_str(&line_json(&st.to_string()).unwrap()).unwrap();
        assert!(out.as_str().unwrap().starts_with("Over loopback"));
        let old = json!({"index": 0, "kind": "tcp_stream", "summary": {}, "sides": {}});
        assert_eq!(line_json(&old.to_string()).unwrap(), "null");
        assert!(line_json("[1]").is_err());
    }
}
