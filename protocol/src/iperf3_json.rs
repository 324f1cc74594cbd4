//! `meshperf run --json-format iperf3`: one `tcp_stream` or `udp_stream`
//! step written as `iperf3 -J` writes a test, seen from the driving agent
//! (iperf3's client): the same `start` / `intervals` / `end` shape and
//! keys, each filled from meshperf's own figures with iperf3's meaning, so
//! the tools that read iperf3's JSON read meshperf's.
//!
//! What is written (docs/formats.md lists it with each key's source):
//! * `start`: `connected` (one entry per stream: `socket` is the stream's
//!   number, `local_host`, `remote_host`), `version`, `system_info`,
//!   `timestamp`, `tcp_mss_default` (TCP), `target_bitrate`,
//!   `sock_bufsize`, `sndbuf_actual`, `rcvbuf_actual`, `test_start`.
//! * `intervals`: every `interval_s` (iperf3 `-i`), per stream and `sum`,
//!   from the receiving side's counts (TCP: its `interval_bytes`; UDP: its
//!   arrival times, with `packets`).
//! * `end`: `streams` (TCP `sender`/`receiver`, UDP `udp`), `sum_sent`,
//!   `sum_received` (UDP also `sum`, with `jitter_ms`, `lost_packets`,
//!   `packets`, `lost_percent`), `cpu_utilization_percent` (the test's
//!   threads on each agent, percent of one CPU over the test, as iperf3's
//!   process figure), `sender_tcp_congestion`, `receiver_tcp_congestion`.
//!
//! iperf3's `sender` flag is `true` where the driving agent sends
//! (`direction=send`), `false` where it receives (iperf3 `-R`).

use crate::frame::SampleKind;
use crate::json_stream::IntervalCutter;
use crate::msg::Role;
use crate::params::{DefaultValue, Kind};
use crate::result::{RunResult, StepResult};
use serde_json::{json, Map, Value};

/// The `--json-format` value.
pub const NAME: &str = "iperf3";

/// Why a step cannot be written in iperf3's shape, before it runs: a kind
/// other than `tcp_stream` or `udp_stream`, or both directions at once.
pub fn refuse(kind: Kind, params: &Map<String, Value>) -> Option<String> {
    if !matches!(kind, Kind::TcpStream | Kind::UdpStream) {
        return Some(format!(
            "--json-format iperf3 writes tcp_stream and udp_stream steps, not {}",
            kind.name()
        ));
    }
    if params.get("direction").and_then(Value::as_str) == Some("both") {
        return Some(
            "--json-format iperf3 does not write direction=both (iperf3's --bidir shape)".into(),
        );
    }
    None
}

/// The iperf3 document of `result`'s step `step` (intervals of
/// `interval_s`); a failed step gives iperf3's `{"start", "intervals",
/// "end", "error"}` with what there is.
pub fn document(result: &RunResult, step: &StepResult, interval_s: f64) -> Value {
    let reverse = step.params.get("direction").and_then(Value::as_str) == Some("receive");
    let tcp = step.kind == Kind::TcpStream;
    let client = step.sides.client.as_ref().unwrap_or(&step.summary);
    let server = step.sides.server.as_ref().unwrap_or(&step.summary);
    let (snd, rcv) = if reverse {
        (server, client)
    } else {
        (client, server)
    };
    let num = |name: &str| -> f64 {
        step.params
            .get(name)
            .and_then(Value::as_f64)
            .or_else(|| {
                let p = step.kind.params().iter().find(|p| p.name == name)?;
                match p.default {
                    DefaultValue::Num(n) => Some(n as f64),
                    _ => None,
                }
            })
            .unwrap_or(0.0)
    };
    let streams = if tcp {
        num("streams").max(1.0) as u64
    } else {
        1
    };
    let blksize = if tcp {
        num("msg_bytes")
    } else {
        num("pkt_bytes")
    } as u64;
    let hello = |i: usize| result.agents.get(i).cloned().unwrap_or(Value::Null);
    // The driving agent is the last one of a pair (the first serves).
    let drv = match step.pair {
        Some(p) => hello(p.client),
        None => hello(result.agents.len().saturating_sub(1)),
    };
    let started = step.started_unix.unwrap_or(result.created_unix);
    let local = host_of(&str_of(server, "peer").unwrap_or_default());
    let remote = str_of(client, "peer").unwrap_or_default();
    let connected: Vec<Value> = (0..streams)
        .map(|i| json!({"socket": i + 1, "local_host": local, "remote_host": host_of(&remote)}))
        .collect();
    let rate = match step.params.get("rate") {
        Some(Value::String(t)) => crate::params::parse_rate(t).unwrap_or(0.0),
        Some(v) => v.as_f64().unwrap_or(0.0),
        None => 0.0,
    };
    let mut start = json!({
        "connected": connected,
        "version": format!("meshperf {}", str_of(&drv, "version").unwrap_or_default()),
        "system_info": system_info(&drv),
        "timestamp": {"time": http_date(started as i64), "timesecs": started as i64},
        "target_bitrate": rate as u64,
        "sock_bufsize": num_of(client, "sndbuf_requested").unwrap_or(0.0) as u64,
        "sndbuf_actual": num_of(client, "sndbuf_actual").unwrap_or(0.0) as u64,
        "rcvbuf_actual": num_of(client, "rcvbuf_actual").unwrap_or(0.0) as u64,
        "test_start": {
            "protocol": if tcp { "TCP" } else { "UDP" },
            "num_streams": streams,
            "blksize": blksize,
            "omit": num("omit_s"),
            "duration": step.params.get("duration_s").and_then(Value::as_f64).unwrap_or(0.0),
            "bytes": if step.params.contains_key("duration_s") || !tcp { 0 } else {
                num("count") as u64 * blksize * streams
            },
            "blocks": 0,
            "reverse": u8::from(reverse),
            "tos": num("tos") as u64,
            "target_bitrate": rate as u64,
        },
    });
    if tcp {
        start["tcp_mss_default"] = json!(num_of(client, "mss").unwrap_or(0.0) as u64);
    }
    let sender = !reverse;
    let (intervals, end) = if tcp {
        (
            tcp_intervals(step, interval_s, sender),
            tcp_end(step, snd, rcv, sender),
        )
    } else {
        (
            udp_intervals(step, interval_s, blksize, sender),
            udp_end(&step.summary, blksize, sender),
        )
    };
    let mut end = end;
    end["cpu_utilization_percent"] = cpu(client, server);
    let mut doc = json!({"start": start, "intervals": intervals, "end": end});
    if let Some(e) = &step.error {
        doc["error"] = json!(e);
    }
    doc
}

fn str_of(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn num_of(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// `1.2.3.4:5` or `[::1]:5` to its address; a bare address as it is.
fn host_of(s: &str) -> String {
    match s.parse::<std::net::SocketAddr>() {
        Ok(a) => a.ip().to_string(),
        Err(_) => s.to_string(),
    }
}

/// iperf3's `system_info` (`uname -a`'s first fields) from an agent's
/// hello: `Linux HOST 6.1.0 x86_64`.
fn system_info(hello: &Value) -> String {
    let kernel = str_of(hello, "kernel").unwrap_or_default();
    let host = str_of(hello, "hostname").unwrap_or_default();
    let mut w = kernel.splitn(2, ' ');
    let os = w.next().unwrap_or_default();
    let rest = w.next().unwrap_or_default();
    format!("{os} {host} {rest}").trim().to_string()
}

/// RFC 7231's date (`Sun, 29 Nov 2026 02:33:25 GMT`), iperf3's `time`.
pub fn http_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let s = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WD[days.rem_euclid(7) as usize],
        d,
        MO[(m - 1) as usize],
        y,
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// iperf3's interval or end entry: `start`, `end`, `seconds`, `bytes`,
/// `bits_per_second`.
fn span(start: f64, end: f64, bytes: u64) -> Map<String, Value> {
    let secs = end - start;
    let bps = if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    };
    let mut m = Map::new();
    m.insert("start".into(), json!(start));
    m.insert("end".into(), json!(end));
    m.insert("seconds".into(), json!(secs));
    m.insert("bytes".into(), json!(bytes));
    m.insert("bits_per_second".into(), json!(bps));
    m
}

fn tcp_intervals(step: &StepResult, every: f64, sender: bool) -> Vec<Value> {
    let Some(mut cut) = IntervalCutter::new(
        step.kind,
        step.index,
        &step.params,
        step.point.clone(),
        step.repeat,
        step.pair,
        every,
    ) else {
        return Vec::new();
    };
    cut.rest(step)
        .into_iter()
        .map(|r| {
            let entry = |socket: u64, bytes: u64| {
                let mut m = span(r.start_s, r.end_s, bytes);
                if socket > 0 {
                    m.insert("socket".into(), json!(socket));
                }
                m.insert("omitted".into(), json!(false));
                m.insert("sender".into(), json!(sender));
                Value::Object(m)
            };
            json!({
                "streams": r.streams.iter().map(|s| entry(u64::from(s.stream) + 1, s.bytes)).collect::<Vec<_>>(),
                "sum": entry(0, r.sum.bytes),
            })
        })
        .collect()
}

/// A stream's entry in `side`'s summary.
fn stream_of(side: &Value, i: u64) -> Option<&Value> {
    side.get("streams")?
        .as_array()?
        .iter()
        .find(|x| x.get("index").and_then(Value::as_u64) == Some(i))
}

fn tcp_end(step: &StepResult, snd: &Value, rcv: &Value, sender: bool) -> Value {
    let sender_role = if sender { Role::Client } else { Role::Server };
    let n = snd
        .get("streams")
        .and_then(Value::as_array)
        .map_or(0, Vec::len) as u64;
    let rtts = |i: u64| -> Vec<u64> {
        step.samples
            .iter()
            .find(|s| {
                s.role == sender_role && s.kind == SampleKind::TcpRttUs && u64::from(s.stream) == i
            })
            .map(|s| s.values.iter().copied().filter(|&v| v > 0).collect())
            .unwrap_or_default()
    };
    let (mut sent, mut got, mut sent_end, mut got_end, mut retr) = (0u64, 0u64, 0f64, 0f64, 0u64);
    let mut streams = Vec::new();
    for i in 0..n {
        let s = stream_of(snd, i).cloned().unwrap_or(Value::Null);
        let r = stream_of(rcv, i).cloned().unwrap_or(Value::Null);
        let (sb, ss) = (
            num_of(&s, "bytes").unwrap_or(0.0) as u64,
            num_of(&s, "seconds").unwrap_or(0.0),
        );
        let (rb, rs) = (
            num_of(&r, "bytes").unwrap_or(0.0) as u64,
            num_of(&r, "seconds").unwrap_or(0.0),
        );
        let re = num_of(&s, "retransmits").unwrap_or(0.0) as u64;
        let mut se = span(0.0, ss, sb);
        se.insert("socket".into(), json!(i + 1));
        se.insert("retransmits".into(), json!(re));
        let rt = rtts(i);
        if !rt.is_empty() {
            se.insert("max_rtt".into(), json!(rt.iter().max()));
            se.insert("min_rtt".into(), json!(rt.iter().min()));
            se.insert(
                "mean_rtt".into(),
                json!(rt.iter().sum::<u64>() / rt.len() as u64),
            );
        }
        se.insert("sender".into(), json!(sender));
        let mut rc = span(0.0, rs, rb);
        rc.insert("socket".into(), json!(i + 1));
        rc.insert("sender".into(), json!(sender));
        streams.push(json!({"sender": se, "receiver": rc}));
        sent += sb;
        got += rb;
        retr += re;
        sent_end = sent_end.max(ss);
        got_end = got_end.max(rs);
    }
    let mut sum_sent = span(0.0, sent_end, sent);
    sum_sent.insert("retransmits".into(), json!(retr));
    sum_sent.insert("sender".into(), json!(sender));
    let mut sum_received = span(0.0, got_end, got);
    sum_received.insert("sender".into(), json!(sender));
    let mut end = json!({
        "streams": streams,
        "sum_sent": sum_sent,
        "sum_received": sum_received,
    });
    if let Some(c) = str_of(snd, "congestion") {
        end["sender_tcp_congestion"] = json!(c);
    }
    if let Some(c) = str_of(rcv, "congestion") {
        end["receiver_tcp_congestion"] = json!(c);
    }
    end
}

/// UDP intervals from the receiver's arrival times (nanoseconds from its
/// start), `blksize` bytes a datagram.
fn udp_intervals(step: &StepResult, every: f64, blksize: u64, sender: bool) -> Vec<Value> {
    let Some(arr) = step
        .samples
        .iter()
        .find(|s| s.kind == SampleKind::ArrivalNs)
    else {
        return Vec::new();
    };
    if arr.values.is_empty() {
        return Vec::new();
    }
    let first = arr.values.iter().copied().min().unwrap_or(0);
    let last = arr.values.iter().copied().max().unwrap_or(0);
    let every_ns = (every * 1e9).max(1.0);
    let n = ((last - first) as f64 / every_ns).floor() as usize + 1;
    let mut counts = vec![0u64; n];
    for &v in &arr.values {
        let i = (((v - first) as f64 / every_ns) as usize).min(n - 1);
        counts[i] += 1;
    }
    let end_s = (last - first) as f64 / 1e9;
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let a = i as f64 * every;
            let b = if i + 1 == n { end_s.max(a) } else { a + every };
            let mut m = span(a, b, c * blksize);
            m.insert("packets".into(), json!(c));
            m.insert("omitted".into(), json!(false));
            m.insert("sender".into(), json!(sender));
            let mut st = m.clone();
            st.insert("socket".into(), json!(1));
            json!({"streams": [st], "sum": m})
        })
        .collect()
}

fn udp_end(s: &Value, blksize: u64, sender: bool) -> Value {
    let n = |k: &str| num_of(s, k).unwrap_or(0.0);
    let sent = n("sent") as u64;
    let received = n("received") as u64;
    let lost = n("lost") as u64;
    let packets = received + lost;
    let jitter_ms = n("jitter_us") / 1000.0;
    let lost_pct = if packets > 0 {
        lost as f64 * 100.0 / packets as f64
    } else {
        0.0
    };
    let (ss, rs) = (n("send_seconds"), n("recv_seconds"));
    let udp = |secs: f64, bytes: u64, jitter: f64, lost: u64, packets: u64, lost_pct: f64| {
        let mut m = span(0.0, secs, bytes);
        m.insert("jitter_ms".into(), json!(jitter));
        m.insert("lost_packets".into(), json!(lost));
        m.insert("packets".into(), json!(packets));
        m.insert("lost_percent".into(), json!(lost_pct));
        m
    };
    let mut stream = udp(ss, sent * blksize, jitter_ms, lost, packets, lost_pct);
    stream.insert("socket".into(), json!(1));
    stream.insert("out_of_order".into(), json!(n("out_of_order") as u64));
    stream.insert("sender".into(), json!(sender));
    let mut sum = udp(
        ss.max(rs),
        sent * blksize,
        jitter_ms,
        lost,
        packets,
        lost_pct,
    );
    sum.insert("sender".into(), json!(sender));
    let mut sum_sent = udp(ss, sent * blksize, 0.0, 0, sent, 0.0);
    sum_sent.insert("sender".into(), json!(sender));
    let mut sum_received = udp(rs, received * blksize, jitter_ms, lost, packets, lost_pct);
    sum_received.insert("sender".into(), json!(!sender));
    json!({
        "streams": [{"udp": stream}],
        "sum": sum,
        "sum_sent": sum_sent,
        "sum_received": sum_received,
    })
}

/// iperf3's `cpu_utilization_percent`: the driving agent's test threads
/// (`host_*`) and the serving agent's (`remote_*`), percent of one CPU
/// over the test.
fn cpu(client: &Value, server: &Value) -> Value {
    let pct = |side: &Value| {
        let c = side.get("cpu")?;
        let secs = num_of(c, "seconds")?;
        if secs <= 0.0 {
            return None;
        }
        let user = num_of(c, "user_seconds").unwrap_or(0.0) * 100.0 / secs;
        let system = num_of(c, "system_seconds").unwrap_or(0.0) * 100.0 / secs;
        Some((user + system, user, system))
    };
    let (ht, hu, hs) = pct(client).unwrap_or_default();
    let (rt, ru, rs) = pct(server).unwrap_or_default();
    json!({
        "host_total": ht, "host_user": hu, "host_system": hs,
        "remote_total": rt, "remote_user": ru, "remote_system": rs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_date_is_iperf3s() {
        assert_eq!(http_date(1795919605), "Sun, 29 Nov 2026 02:33:25 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn kinds_other_than_the_streams_and_both_directions_are_refused() {
        let mut p = Map::new();
        assert!(refuse(Kind::TcpStream, &p).is_none());
        assert!(refuse(Kind::UdpStream, &p).is_none());
        assert!(refuse(Kind::TcpRr, &p).unwrap().contains("not tcp_rr"));
        p.insert("direction".into(), json!("both"));
        assert!(refuse(Kind::TcpStream, &p).unwrap().contains("--bidir"));
    }
}
