//! The seeds' own column headings and lines that `meshperf run` prints
//! beside the agents' records: udp_req_timo's and tcp_req's heading above
//! their records, udp_bw_mon's 13-field line and heading in normal mode
//! (its 26-field record is the `--quiet` one), a heading line above
//! `--quiet` records, and the TOS byte in hexadecimal as udpmon's `-T`
//! takes it. Numbers of the udpmon lines made here are printed as C's `%g`
//! prints them (six significant digits), as the seed's lines are.

use meshperf_protocol::export::scalars;
use meshperf_protocol::params::Kind;
use meshperf_protocol::result::StepResult;
use meshperf_protocol::seedline::{RR_HEADING, UDP_BW_MON_QUIET_HEADING};
use meshperf_protocol::units::g6;
use serde_json::Value;

/// udp_bw_mon's heading in normal mode, one name per field of
/// [`udp_bw_mon_line`].
pub const UDP_BW_MON_HEADING: &str = "pkt len; loop_count; num_timeout_zero; num_timeout; Time/frame us; wait_time; data_rate; num_recv; num_lost; num_badorder; time; time/recv pkt; recv_data_rate";

/// The heading above a step's record: the seed's for the kinds whose
/// record is a seed's (request/response, udp_stream), else (`--quiet`
/// only) the names of the record's fields, point first as [`record`]
/// writes them. None: the kind prints no record in normal mode.
///
/// [`record`]: super::output::record
pub fn heading(s: &StepResult, quiet: bool) -> Option<String> {
    match s.kind {
        Kind::TcpRr | Kind::UdpRr | Kind::UnixRr => Some(RR_HEADING.into()),
        Kind::UdpStream if quiet => Some(UDP_BW_MON_QUIET_HEADING.into()),
        Kind::UdpStream => Some(UDP_BW_MON_HEADING.into()),
        _ if !quiet => None,
        _ if s.summary["line"].as_str().is_some_and(|l| l.contains(';')) => None,
        _ => {
            let mut names: Vec<String> = s.point.iter().map(|(k, _)| k.clone()).collect();
            names.extend(scalars(&s.summary, false).into_iter().map(|(k, _)| k));
            Some(names.join("; "))
        }
    }
}

/// The line a side's `line` is printed as in normal mode: udp_bw_mon's
/// 13 fields for a udp_stream (its 26-field record is `--quiet`'s), the
/// line itself otherwise.
pub fn normal_line(kind: Kind, side: &Value, line: &str) -> String {
    match kind {
        Kind::UdpStream => udp_bw_mon_line(side).unwrap_or_else(|| line.to_string()),
        _ => line.to_string(),
    }
}

/// udp_bw_mon's line in normal mode, one field per name of
/// [`UDP_BW_MON_HEADING`]: pkt len, datagrams sent, the timeouts of the
/// zero-statistics and the other commands, send time per frame (us), wait
/// (us), send data rate (MByte/s: the seed's 2.10214 is its 50 bytes per
/// 23.7852 us), received, lost, out of order, receive time (first to last
/// datagram, us), receive time per datagram (us), received data rate
/// (MByte/s). The seed's example line also carries the total send time
/// after the wait, which its heading does not name; it is in the `--quiet`
/// record (Send_total_send_time) and in `send_seconds`.
pub fn udp_bw_mon_line(sum: &Value) -> Option<String> {
    let n = |k: &str| sum[k].as_f64();
    // The other timeouts are a field of the record only (its 7th).
    let timeouts = sum["line"]
        .as_str()
        .and_then(|l| l.split(';').nth(6))
        .map_or("0".to_string(), |t| t.trim().to_string());
    let fields = [
        g6(n("pkt_bytes")?),
        g6(n("sent").unwrap_or(0.0)),
        "0".to_string(),
        timeouts,
        g6(n("time_per_frame_us")?),
        g6(n("wait_us")?),
        g6(n("send_bits_per_second")? / 8e6),
        g6(n("received").unwrap_or(0.0)),
        g6(n("lost").unwrap_or(0.0)),
        g6(n("out_of_order").unwrap_or(0.0)),
        g6((n("recv_seconds").unwrap_or(0.0) * 1e6).round()),
        g6(n("recv_time_per_frame_us")?),
        g6(n("recv_bits_per_second")? / 8e6),
    ];
    Some(fields.join("; "))
}

/// tcp_bw_mon's and tcp_bw_nstream's heading, above [`tcp_bw_mon_line`].
pub const TCP_BW_MON_HEADING: &str =
    "pkt len; loop_count; Time/loop us; wait_time; Total send time; data_rate; Total recv time; link:; recv_bytes; # reads";

/// tcp_bw_mon's record of a one-way `tcp_stream` step of the shape
/// tcp_bw_mon varies (more than one link, a wait between writes, or a scan
/// of either), after the socketsend lines: write size, writes over all
/// links, send time per write (us), wait (us), total send time (us), data
/// rate (MByte/s: the seed's 11.4788 is its 1000 bytes per 87.1173 us),
/// total receive time (us), then per data link `i:; bytes; reads` from 1
/// (the seed's link 0 is its command stream; meshperf's control line is
/// not a data link).
pub fn tcp_bw_mon_line(s: &StepResult) -> Option<String> {
    if s.kind != Kind::TcpStream {
        return None;
    }
    let param = |k: &str| s.params.get(k).and_then(Value::as_f64);
    let swept = s
        .point
        .iter()
        .any(|(k, _)| k == "streams" || k == "wait_us");
    let wait = param("wait_us").unwrap_or(0.0);
    if !(swept || wait > 0.0 || param("streams").unwrap_or(1.0) > 1.0) {
        return None;
    }
    let sides = [&s.sides.client, &s.sides.server];
    let by = |key: &str| {
        sides
            .into_iter()
            .flatten()
            .find(|v| v[key].as_u64().unwrap_or(0) > 0)
    };
    let (snd, rcv) = (by("sent_bytes")?, by("received_bytes")?);
    if snd == rcv {
        return None; // direction both: tcp_bw_mon sends one way
    }
    let writes = snd["writes"].as_f64()?;
    let send_us = snd["send_seconds"].as_f64()? * 1e6;
    let per = if writes > 0.0 { send_us / writes } else { 0.0 };
    let msg = snd["msg_bytes"].as_f64()?;
    let mut f = vec![
        g6(msg),
        g6(writes),
        g6(per),
        g6(wait),
        g6(send_us.round()),
        g6(if per > 0.0 { msg / per } else { 0.0 }),
        g6((rcv["recv_seconds"].as_f64()? * 1e6).round()),
    ];
    for (i, st) in rcv["streams"].as_array()?.iter().enumerate() {
        f.push(format!("{}:", i + 1));
        f.push(st["bytes"].as_u64()?.to_string());
        f.push(st["reads"].as_u64()?.to_string());
    }
    Some(f.join("; "))
}

/// The TOS byte a step asked for and each side's socket has, in
/// hexadecimal as udpmon's `-T` takes it: `tos 0x10: client 0x10, server
/// 0x10`. None when the step set neither `tos` nor `precedence`.
pub fn tos_line(s: &StepResult) -> Option<String> {
    let tos = s.params.get("tos").and_then(Value::as_u64);
    let prec = s.params.get("precedence").and_then(Value::as_u64);
    if tos.is_none() && prec.is_none() {
        return None;
    }
    let asked = tos.unwrap_or(0) | prec.unwrap_or(0) << 5;
    let got = |side: &Option<Value>| match side.as_ref().map(|v| &v["tos"]) {
        Some(Value::Number(t)) => format!("{:#04x}", t.as_u64().unwrap_or(0)),
        _ => "-".to_string(),
    };
    Some(format!(
        "tos {asked:#04x}: client {}, server {}",
        got(&s.sides.client),
        got(&s.sides.server)
    ))
}

/// Prints `h` above the next record when it is not the heading printed
/// last (`last`): once per run, again where the kind changes.
pub fn head(last: &mut String, h: Option<String>, out: &mut dyn std::io::Write) {
    if let Some(h) = h {
        if *last != h {
            let _ = writeln!(out, "{h}");
            *last = h;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_name_every_field_of_their_lines() {
        assert_eq!(RR_HEADING.split("; ").count(), 11);
        assert_eq!(UDP_BW_MON_HEADING.split("; ").count(), 13);
        assert_eq!(UDP_BW_MON_QUIET_HEADING.split("; ").count(), 26);
        assert_eq!(TCP_BW_MON_HEADING.split("; ").count(), 10);
    }
}
