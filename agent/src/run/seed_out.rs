//! The seeds' stream figures `meshperf run` prints under a stream step's
//! seed lines: the Perl transfer test's reads (average milliseconds per read
//! and per MiB) and socket buffers asked and got, sockbench's speed in bits
//! and bytes per second, which end's buffers decided how much moved
//! (socketsend/socketslurp), and after the last repetition of a point the
//! average of every figure over the runs (the Perl seed's packet-averages.pl).

use meshperf_protocol::export::scalars;
use meshperf_protocol::params::{rate_figure, Kind};
use meshperf_protocol::result::StepResult;
use serde_json::Value;

/// The lines a stream step adds under its seed lines (none for other kinds).
pub fn stream_lines(s: &StepResult) -> Vec<String> {
    if !matches!(s.kind, Kind::TcpStream | Kind::UnixStream) {
        return Vec::new();
    }
    let m = &s.summary;
    let mut out = Vec::new();
    if let (Some(reads), Some(avg)) = (m["reads"].as_u64(), m["avg_read_bytes"].as_f64()) {
        let mut l = format!("reads: {reads} of {avg:.2} bytes on average");
        if let Some(ms) = m["ms_per_read"].as_f64() {
            l.push_str(&format!(", {ms:.6} ms per read"));
        }
        if let Some(ms) = m["ms_per_mib"].as_f64() {
            l.push_str(&format!(", {ms:.6} ms per MiB"));
        }
        out.push(l);
    }
    let both = m["direction"].as_str() == Some("both");
    if let Some(bps) = m["bits_per_second"].as_f64() {
        out.push(format!(
            "speed (bits): {}; speed (bytes): {}{}",
            sockbench_rate(bps, 10.0, "bit"),
            sockbench_rate(bps / 8.0, 1.0, "Byte"),
            if both {
                " (both directions summed)"
            } else {
                ""
            }
        ));
    }
    if both {
        if let Some(l) = each_direction(s) {
            out.push(l);
        }
    }
    if let Some(l) = buffers(s) {
        out.push(l);
    }
    if let Some(l) = decided(s) {
        out.push(l);
    }
    for (role, side) in [("client", &s.sides.client), ("server", &s.sides.server)] {
        let Some(side) = side else { continue };
        if let (Some(name), Some(len)) = (
            side["payload_file"].as_str(),
            side["payload_file_bytes"].as_u64(),
        ) {
            out.push(format!(
                "data: file {name} ({len} bytes, read into memory before the test) sent by the {role}"
            ));
        }
        if let Some(l) = zerocopy_line(role, side) {
            out.push(l);
        }
    }
    out
}

/// The rate of one direction: its receiver's bytes over its receiver's
/// time (first byte to last), bits per second.
fn received_rate(side: &Option<Value>) -> Option<f64> {
    let v = side.as_ref()?;
    let secs = v["recv_seconds"].as_f64().filter(|&t| t > 0.0)?;
    Some(v["received_bytes"].as_f64()? * 8.0 / secs)
}

/// `direction=both`: each direction's rate as its receiver counted it (as
/// iperf3 --bidir reports each), and their sum labelled as one:
/// `each direction: driving agent to serving agent 9.8 Gbit/s, serving
/// agent to driving agent 10.1 Gbit/s (each over its receiver's time); sum 19.9 Gbit/s`.
pub fn each_direction(s: &StepResult) -> Option<String> {
    let up = received_rate(&s.sides.server)?;
    let down = received_rate(&s.sides.client)?;
    Some(format!(
        "each direction: driving agent to serving agent {}, serving agent to driving agent {} \
         (each over its receiver's time); sum {}",
        rate_figure(up),
        rate_figure(down),
        rate_figure(up + down)
    ))
}

/// A side that sent with `zerocopy`: `zerocopy: client 8192 sends with
/// MSG_ZEROCOPY, 0 zero-copy, 8192 copied by the kernel; 0.412 CPU s per GB
/// sent` (the side's threads' user + system time over the bytes it sent;
/// without its `cpu`, no CPU figure).
fn zerocopy_line(role: &str, side: &Value) -> Option<String> {
    let sends = side["zerocopy_sends"].as_u64()?;
    let zero = side["zerocopy_zero_copied"].as_u64().unwrap_or(0);
    let copied = side["zerocopy_copied"].as_u64().unwrap_or(0);
    let mut l = format!(
        "zerocopy: {role} {sends} sends with MSG_ZEROCOPY, {zero} zero-copy, {copied} copied by the kernel"
    );
    if let Some(n) = side["zerocopy_enobufs"].as_u64().filter(|&n| n > 0) {
        l.push_str(&format!(" ({n} made again after ENOBUFS)"));
    }
    let cpu = &side["cpu"];
    let sent = side["sent_bytes"].as_u64().unwrap_or(0);
    if let (Some(u), Some(sys), true) = (
        cpu["user_seconds"].as_f64(),
        cpu["system_seconds"].as_f64(),
        sent > 0,
    ) {
        l.push_str(&format!(
            "; {:.3} CPU s per GB sent",
            (u + sys) / (sent as f64 / 1e9)
        ));
    }
    Some(l)
}

/// A rate as sockbench's table prints it: two decimals in the largest
/// decimal unit (K, M, G, T: powers of 1000) the value still fills `least`
/// times: bits switch unit at 10 (`7951.25 Kbit/s`, `10.71 Mbit/s`), bytes
/// at 1 (`993.91 KByte/s`, `1.34 MByte/s`).
pub fn sockbench_rate(v: f64, least: f64, unit: &str) -> String {
    let mut prefix = "";
    let mut scaled = v;
    for (p, f) in [("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)] {
        if v / f >= least {
            prefix = p;
            scaled = v / f;
        }
    }
    format!("{scaled:.2} {prefix}{unit}/s")
}

/// The socket buffers as the Perl seed prints them, each on the end that
/// uses it (the sender's send buffer, the receiver's receive buffer), with
/// what the plan asked for: `Send Buffer is 2626560 bytes (asked 1048576)
/// at the client; Receive Buffer is 131072 bytes (not asked) at the server`.
fn buffers(s: &StepResult) -> Option<String> {
    let mut parts = Vec::new();
    for (want, key, label) in [
        ("sent_bytes", "sndbuf", "Send Buffer"),
        ("received_bytes", "rcvbuf", "Receive Buffer"),
    ] {
        for (role, side) in [("client", &s.sides.client), ("server", &s.sides.server)] {
            let Some(side) = side else { continue };
            let (Some(got), true) = (
                side[format!("{key}_actual")].as_u64(),
                side[want].as_u64().is_some_and(|b| b > 0),
            ) else {
                continue;
            };
            let asked = side[format!("{key}_requested")]
                .as_u64()
                .map_or("not asked".to_string(), |a| format!("asked {a}"));
            parts.push(format!("{label} is {got} bytes ({asked}) at the {role}"));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// With the receiver's own count (`recv_count`), which end decided how much
/// moved, socketsend's "the side with the smaller amount of data".
fn decided(s: &StepResult) -> Option<String> {
    let m = &s.summary;
    let by = m["limited_by"].as_str()?;
    let recv_count = m["recv_count"].as_u64()?;
    let read = m["read_bytes"]
        .as_u64()
        .or_else(|| s.params.get("read_bytes").and_then(Value::as_u64))
        .or_else(|| m["msg_bytes"].as_u64())?;
    let msg = m["msg_bytes"].as_u64()?;
    let sender = match s.params.get("count").and_then(Value::as_u64) {
        Some(c) => format!("{c} buffers of {msg} bytes ({} bytes)", c * msg),
        None => match s.params.get("duration_s").and_then(Value::as_f64) {
            Some(d) => format!("{d} s of {msg}-byte buffers"),
            None => format!("its {msg}-byte buffers"),
        },
    };
    let receiver = format!(
        "{recv_count} buffers of {read} bytes ({} bytes)",
        recv_count * read
    );
    let who = match by {
        "receiver" => "the receiver decided",
        "sender" => "the sender decided",
        _ => "both ends had the same",
    };
    let per = m["streams"]
        .as_array()
        .and_then(|v| v.first())
        .and_then(|x| x["bytes"].as_u64())
        .unwrap_or(0);
    Some(format!(
        "buffers: {who}: receiver {receiver}, sender {sender}; {per} bytes moved per stream"
    ))
}

/// The figures of the repetitions of one point, averaged at its last.
#[derive(Default)]
pub struct Averages {
    runs: Vec<Vec<(String, f64)>>,
}

impl Averages {
    /// Takes repetition `s.repeat` of `repeat`; after the last, the lines
    /// `key/avg: NAME VALUE` (packet-averages.pl's layout), one per number
    /// in the summary every run has, averaged over the runs that succeeded.
    pub fn step(&mut self, s: &StepResult, repeat: u32) -> Vec<String> {
        if s.repeat == 0 {
            self.runs.clear();
        }
        if s.error.is_none() {
            let nums = scalars(&s.summary, false)
                .into_iter()
                .filter_map(|(k, v)| Some((k, v.parse::<f64>().ok()?)))
                .collect();
            self.runs.push(nums);
        }
        if repeat < 2 || s.repeat + 1 != repeat || self.runs.is_empty() {
            return Vec::new();
        }
        let runs = std::mem::take(&mut self.runs);
        let keys: Vec<&String> = runs[0]
            .iter()
            .map(|(k, _)| k)
            .filter(|k| runs.iter().all(|r| r.iter().any(|(q, _)| q == *k)))
            .collect();
        let width = keys.iter().map(|k| k.len()).max().unwrap_or(0);
        let mut out = vec![format!("averages over {} runs:", runs.len())];
        for k in keys {
            let sum: f64 = runs
                .iter()
                .filter_map(|r| r.iter().find(|(q, _)| q == k).map(|(_, v)| v))
                .sum();
            out.push(format!(
                "key/avg: {k:>width$} {:>17.6}",
                sum / runs.len() as f64
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_copy_sender_gets_its_line() {
        let side = serde_json::json!({"sent_bytes": 2_000_000_000u64, "zerocopy_sends": 10,
            "zerocopy_zero_copied": 4, "zerocopy_copied": 6,
            "cpu": {"user_seconds": 0.25, "system_seconds": 0.75}});
        assert_eq!(
            zerocopy_line("client", &side).unwrap(),
            "zerocopy: client 10 sends with MSG_ZEROCOPY, 4 zero-copy, 6 copied by the kernel; 0.500 CPU s per GB sent"
        );
        assert_eq!(
            zerocopy_line("server", &serde_json::json!({"sent_bytes": 5})),
            None
        );
        let side = serde_json::json!({"zerocopy_sends": 3, "zerocopy_zero_copied": 0,
            "zerocopy_copied": 3, "zerocopy_enobufs": 2});
        assert_eq!(
            zerocopy_line("server", &side).unwrap(),
            "zerocopy: server 3 sends with MSG_ZEROCOPY, 0 zero-copy, 3 copied by the kernel (2 made again after ENOBUFS)"
        );
    }

    #[test]
    fn rates_in_sockbench_units() {
        assert_eq!(sockbench_rate(7_951_250.0, 10.0, "bit"), "7951.25 Kbit/s");
        assert_eq!(sockbench_rate(993_910.0, 1.0, "Byte"), "993.91 KByte/s");
        assert_eq!(sockbench_rate(10_710_000.0, 10.0, "bit"), "10.71 Mbit/s");
        assert_eq!(sockbench_rate(1_340_000.0, 1.0, "Byte"), "1.34 MByte/s");
        assert_eq!(sockbench_rate(20.2e9, 10.0, "bit"), "20.20 Gbit/s");
        assert_eq!(sockbench_rate(5.0, 10.0, "bit"), "5.00 bit/s");
    }

    #[test]
    fn averages_cover_every_number_after_the_last_run() {
        let mut a = Averages::default();
        let step = |rep: u32, bytes: u64, secs: f64| -> StepResult {
            serde_json::from_value(serde_json::json!({
                "index": rep, "kind": "tcp_stream", "repeat": rep,
                "summary": {"bytes": bytes, "seconds": secs, "line": "x", "peer": "127.0.0.1"}
            }))
            .unwrap()
        };
        assert!(a.step(&step(0, 100, 1.0), 3).is_empty());
        assert!(a.step(&step(1, 200, 2.0), 3).is_empty());
        let out = a.step(&step(2, 600, 3.0), 3);
        assert_eq!(out[0], "averages over 3 runs:");
        assert_eq!(out[1], "key/avg:   bytes        300.000000");
        assert_eq!(out[2], "key/avg: seconds          2.000000");
        assert_eq!(out.len(), 3);
    }
}
