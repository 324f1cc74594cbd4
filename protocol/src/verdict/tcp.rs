//! The verdict of a `tcp_stream`: what limited it, in one sentence, from
//! what TCP itself saw ([`TcpInfoSummary`], Linux's TCP_INFO on the
//! sending side; issue 43). "How fast" is the stream's figure; this is
//! "why not faster".
//!
//! The kernel counts, for each sending connection, the time it was busy
//! (data in flight or queued: `tcpi_busy_time`) and, inside that, the
//! time the receiver's window held it back (`tcpi_rwnd_limited`) and the
//! time its send buffer did (`tcpi_sndbuf_limited`). Over the sending
//! time that gives four shares that add up to one:
//!
//! | limit | share of the sending time |
//! |---|---|
//! | the receiver's window | rwnd-limited, and busy while its window was below the congestion window (`rwnd_bound_share`) |
//! | the sender's socket buffer | sndbuf-limited, and busy while the bytes in flight stayed under half of both windows (`sndbuf_bound_share`) |
//! | the network (congestion window: loss, a queue) | busy, none of those |
//! | the application or the CPU | not busy: nothing queued to send |
//!
//! The verdict names the largest and says its share (so the largest is
//! always at least 25%). Two refinements:
//! - a stream with a `rate` that reached at least [`RATE_REACHED`] of it
//!   and whose largest share is the network or the application is
//!   limited by the rate asked for (the kernel's pacing keeps it busy);
//! - the network's sentence says the bytes retransmitted and the loaded
//!   round trip against the idle one (`tcpi_min_rtt`), and calls it a
//!   queue when the loaded one is more than [`QUEUE_RATIO`] times the idle
//!   one and at least [`QUEUE_MIN_MS`] more;
//! - the receiver's window's sentence blames the receiving application
//!   when its receive queue held on average at least [`READER_QUEUE`] of
//!   the window (it does not read as fast as data comes), else the
//!   receive buffer (`rcvbuf` when asked for, else `tcp_rmem`'s maximum).
//!
//! No verdict (a sentence saying why, `limit` null) when the sending
//! side's kernel lacks the limited times (before Linux 4.10) or it sent
//! for less than [`MIN_SEND_S`] (the kernel counts those times in
//! jiffies, a few ms each); none at all (None) when the sending side
//! reported no TCP_INFO (an agent before it, Windows, macOS).
//!
//! One definition for every reader: `meshperf run` prints the sentence
//! under a stream step's lines, the page's step card shows it first, the
//! matrix cell's tooltip carries it and the monitor exports the limit.

use crate::params::{Direction, Kind};
use crate::result::StepResult;
use crate::summary::{CpuSummary, TcpInfoSummary};
use serde::Serialize;
use serde_json::Value;

/// Least sending time with a verdict, seconds.
pub const MIN_SEND_S: f64 = 0.1;
/// Loaded over idle round trip beyond which the network's limit is a queue.
pub const QUEUE_RATIO: f64 = 1.5;
/// ... and by at least this much, ms.
pub const QUEUE_MIN_MS: f64 = 1.0;
/// A receive queue holding on average this share of the window: the
/// receiving application is what the window waits for.
pub const READER_QUEUE: f64 = 0.5;
/// Share of a `rate` reached that makes the rate the limit.
pub const RATE_REACHED: f64 = 0.9;

/// The limits, as `limit` names them (and the monitor's gauge numbers
/// them, 1 on: 0 is no verdict).
pub const LIMITS: [&str; 5] = [
    "network",
    "receiver_window",
    "send_buffer",
    "application",
    "rate",
];

/// The verdict of one sending side (a way of the stream).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpVerdict {
    /// One of [`LIMITS`]; None: no verdict (the sentence says why).
    pub limit: Option<&'static str>,
    /// The share of the sending time (0 to 1) of the limit named.
    pub share: Option<f64>,
    /// E.g. "limited by the receiver's window 71% of the time: ...".
    pub sentence: String,
}

/// `bytes` as buffers read: KiB and MiB.
fn size(bytes: f64) -> String {
    if bytes >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", bytes / 1048576.0)
    } else {
        format!("{:.0} KiB", bytes / 1024.0)
    }
}

/// A rate in bit/s: "26.2 Mbit/s".
fn rate(bps: f64) -> String {
    let (div, p) = crate::units::si_scale(bps);
    let v = bps / div;
    let d = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.d$} {p}bit/s")
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn ms(us: f64) -> String {
    super::ms_text(us / 1e3)
}

/// The verdict of a sending side `sender` (its summary) and the
/// receiving side `receiver` of the same connections; None when the
/// sender has no `tcp_info`, or it did not send.
pub fn way(sender: &Value, receiver: Option<&Value>) -> Option<TcpVerdict> {
    let t = TcpInfoSummary::of(sender)?;
    if !t.sent() && t.missing.is_empty() {
        return None;
    }
    let no = |why: String| {
        Some(TcpVerdict {
            limit: None,
            share: None,
            sentence: format!("No verdict: {why}."),
        })
    };
    let (Some(busy), Some(rwnd), Some(sndbuf)) =
        (t.busy_share, t.rwnd_limited_share, t.sndbuf_limited_share)
    else {
        return no(format!(
            "the sending side's kernel has no TCP limited times in TCP_INFO ({} bytes; tcpi_busy_time came in Linux 4.10)",
            t.kernel_bytes
        ));
    };
    let secs = t.send_seconds.unwrap_or(0.0);
    if secs < MIN_SEND_S {
        return no(format!(
            "it sent for {} ms, too short for the kernel's limited times (counted in jiffies)",
            super::ms_text(secs * 1e3)
        ));
    }
    // The receiver's window: the kernel's limited time, and the rest of
    // the busy time its window was the smaller one (rwnd_bound_share).
    // The buffer likewise (sndbuf_bound_share).
    let rwnd = rwnd + t.rwnd_bound_share.unwrap_or(0.0);
    let sndbuf = sndbuf + t.sndbuf_bound_share.unwrap_or(0.0);
    let network = (busy - rwnd - sndbuf).max(0.0);
    let app = (1.0 - busy).max(0.0);
    let shares = [network, rwnd, sndbuf, app];
    let (mut i, mut share) = (0, network);
    for (k, &s) in shares.iter().enumerate() {
        if s > share {
            (i, share) = (k, s);
        }
    }
    let srtt = t.srtt_us.filter(|&r| r > 0.0);
    let asked = sender["rate"].as_f64();
    let got = sender["sent_bytes"]
        .as_f64()
        .zip(sender["send_seconds"].as_f64())
        .filter(|&(_, s)| s > 0.0)
        .map(|(b, s)| b * 8.0 / s);
    if let (Some(asked), Some(got), 0 | 3) = (asked, got, i) {
        if got >= RATE_REACHED * asked {
            return Some(TcpVerdict {
                limit: Some("rate"),
                share: Some(busy.min(1.0)),
                sentence: format!(
                    "limited by the rate asked for: {} asked, {} sent (the kernel paces it)",
                    rate(asked),
                    rate(got)
                ),
            });
        }
    }
    let sentence = match i {
        0 => network_sentence(&t, srtt, share),
        1 => rwnd_sentence(&t, receiver, srtt, share),
        2 => sndbuf_sentence(sender, srtt, share),
        _ => app_sentence(sender, share),
    };
    let mut sentence = sentence;
    if let Some(first) = sentence.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    sentence.push('.');
    Some(TcpVerdict {
        limit: Some(LIMITS[i]),
        share: Some(share),
        sentence,
    })
}

/// The share of a side's CPU its summary reports (percent of one CPU).
fn cpu(side: &Value) -> Option<f64> {
    CpuSummary::of(side).map(|c| c.percent)
}

/// Network-limited: the congestion window, retransmits, a queue's round trip.
fn network_sentence(t: &TcpInfoSummary, srtt: Option<f64>, share: f64) -> String {
    let mut parts = vec![match t.cwnd {
        Some(c) => format!("the congestion window ({c:.0} segments)"),
        None => "the congestion window".to_string(),
    }];
    if let (Some(sent), Some(re)) = (t.bytes_sent, t.bytes_retrans) {
        if sent > 0 {
            parts.push(format!(
                "{} of bytes retransmitted",
                retrans_pct(re as f64 / sent as f64)
            ));
        }
    }
    if let (Some(r), Some(m)) = (srtt, t.min_rtt_us) {
        let queue = r > QUEUE_RATIO * m && r - m >= QUEUE_MIN_MS * 1e3;
        parts.push(format!(
            "round trip {} ms against {} ms idle{}",
            ms(r),
            ms(m),
            if queue { " (a queue)" } else { "" }
        ));
    }
    format!(
        "limited by the network {} of the time: {}",
        pct(share),
        parts.join(", ")
    )
}

/// Receiver-window-limited: its buffer, the rate its window allows, a slow reader.
fn rwnd_sentence(
    t: &TcpInfoSummary,
    receiver: Option<&Value>,
    srtt: Option<f64>,
    share: f64,
) -> String {
    let rcvbuf = receiver.and_then(|r| r["rcvbuf_actual"].as_f64());
    let asked = receiver.is_some_and(|r| r["rcvbuf_requested"].is_u64());
    let window = t.snd_wnd_max.map(|w| w as f64).or_else(|| {
        receiver
            .and_then(TcpInfoSummary::of)
            .and_then(|r| r.rcv_wnd_max)
            .map(|w| w as f64)
    });
    let mut s = format!(
        "limited by the receiver's window {} of the time",
        pct(share)
    );
    let buf = rcvbuf.map_or(String::new(), |b| format!("rcvbuf {}, ", size(b)));
    if let (Some(w), Some(r)) = (window, srtt) {
        s.push_str(&format!(
            ": its receive buffer ({buf}a window of at most {}) allows {} at a round trip of {} ms",
            size(w),
            rate(w * 8.0 / (r / 1e6)),
            ms(r)
        ));
    }
    // A receive queue that stays half full: the reader is slow.
    let queued = receiver
        .and_then(TcpInfoSummary::of)
        .and_then(|r| r.rcv_queue_mean)
        .filter(|&q| window.is_some_and(|w| q >= READER_QUEUE * w));
    match (asked, queued) {
        (true, _) => s.push_str(": raise it, or let it autotune (no rcvbuf)"),
        (false, Some(q)) => {
            s.push_str(&format!(
                    ": the receiving application reads no faster ({} waiting in its receive queue on average",
                    size(q)
                ));
            if let Some(c) = receiver.and_then(cpu) {
                s.push_str(&format!("; it used {c:.0}% of a CPU"));
            }
            s.push(')');
        }
        (false, None) => s.push_str(": raise the receiver's net.ipv4.tcp_rmem maximum"),
    }
    s
}

/// Send-buffer-limited: the sender's sndbuf against the round trip.
fn sndbuf_sentence(sender: &Value, srtt: Option<f64>, share: f64) -> String {
    let sndbuf = sender["sndbuf_actual"].as_f64();
    let asked = sender["sndbuf_requested"].is_u64();
    let mut s = format!(
        "limited by the sender's socket buffer {} of the time",
        pct(share)
    );
    if let (Some(b), Some(r)) = (sndbuf, srtt) {
        s.push_str(&format!(
            ": sndbuf {} for a round trip of {} ms",
            size(b),
            ms(r)
        ));
    }
    s.push_str(if asked {
        ": raise it, or let it autotune (no sndbuf)"
    } else {
        ": raise the sender's net.ipv4.tcp_wmem maximum"
    });
    s
}

/// Application- or CPU-limited: nothing to send, and the sender's CPU.
fn app_sentence(sender: &Value, share: f64) -> String {
    let mut s = format!(
        "limited by the application or the CPU (nothing to send {} of the time",
        pct(share)
    );
    if let Some(c) = cpu(sender) {
        s.push_str(&format!("; the sending side used {c:.0}% of a CPU"));
    }
    s.push(')');
    s
}

/// A retransmitted share as a percent with two significant digits.
fn retrans_pct(f: f64) -> String {
    let p = f * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// The verdict of a `tcp_stream` step: the way its driving side sends
/// (`direction` send or both) or receives; with `direction` both, both
/// ways in one sentence and the limit of the driving side's. None for
/// other kinds, a failed step or sides without TCP_INFO.
pub fn step(s: &StepResult) -> Option<TcpVerdict> {
    if s.kind != Kind::TcpStream || s.error.is_some() {
        return None;
    }
    let (client, server) = (s.sides.client.as_ref()?, s.sides.server.as_ref()?);
    let dir: Direction = s
        .params
        .get("direction")
        .and_then(|d| serde_json::from_value(d.clone()).ok())
        .unwrap_or_default();
    match dir {
        Direction::Send => way(client, Some(server)),
        Direction::Receive => way(server, Some(client)),
        Direction::Both => {
            let up = way(client, Some(server));
            let down = way(server, Some(client));
            match (up, down) {
                (Some(u), Some(d)) => Some(TcpVerdict {
                    sentence: format!(
                        "Driving agent to serving agent: {} Serving agent to driving agent: {}",
                        u.sentence, d.sentence
                    ),
                    ..u
                }),
                (u, d) => u.or(d),
            }
        }
    }
}

/// The verdict of a step given as JSON (the page, through wasm): the
/// verdict's JSON, `null` when it has none.
pub fn step_json(step_json: &str) -> Result<String, String> {
    let s: StepResult = serde_json::from_str::<Value>(step_json)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("not a step result: {e}"))?;
    serde_json::to_value(step(&s))
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A sending side's summary with these shares and figures.
    fn sender(busy: f64, rwnd: f64, sndbuf: f64, extra: Value) -> Value {
        let mut t = json!({"kernel_bytes": 240, "missing": [], "send_seconds": 4.0,
            "busy_share": busy, "rwnd_limited_share": rwnd, "sndbuf_limited_share": sndbuf,
            "min_rtt_us": 20_000.0, "srtt_us": 21_000.0, "cwnd": 60.0,
            "bytes_sent": 10_000_000u64, "bytes_retrans": 0u64, "snd_wnd_max": 65_536u64});
        if let (Some(t), Some(e)) = (t.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                t.insert(k.clone(), v.clone());
            }
        }
        json!({"sent_bytes": 10_000_000u64, "send_seconds": 4.0, "sndbuf_actual": 46_080,
            "sndbuf_requested": null, "cpu": {"seconds": 4.0, "user_seconds": 0.1, "system_seconds": 0.2,
            "threads": 2, "percent": 7.5, "host_percent": null, "host_user_percent": null,
            "host_system_percent": null, "host_cpus": 2}, "tcp_info": t})
    }

    fn receiver(rcvbuf: Option<u64>) -> Value {
        json!({"rcvbuf_actual": 131_072, "rcvbuf_requested": rcvbuf})
    }

    #[test]
    fn the_largest_share_names_the_limit() {
        let v = |busy, rwnd, sndbuf| {
            way(
                &sender(busy, rwnd, sndbuf, json!({})),
                Some(&receiver(None)),
            )
            .unwrap()
        };
        assert_eq!(v(1.0, 0.2, 0.0).limit, Some("network"));
        assert_eq!(v(1.0, 0.6, 0.0).limit, Some("receiver_window"));
        assert_eq!(v(0.95, 0.1, 0.5).limit, Some("send_buffer"));
        assert_eq!(v(0.3, 0.0, 0.0).limit, Some("application"));
        let r = v(1.0, 0.71, 0.0);
        assert_eq!(r.share, Some(0.71));
        assert!(r.sentence.starts_with("Limited by the receiver's window 71% of the time: its receive buffer (rcvbuf 128 KiB, a window of at most 64 KiB) allows 25.0 Mbit/s at a round trip of 21.0 ms: raise the receiver's net.ipv4.tcp_rmem maximum."), "{}", r.sentence);
    }

    #[test]
    fn the_network_says_retransmits_and_a_queue() {
        let s = sender(
            1.0,
            0.0,
            0.0,
            json!({"bytes_retrans": 210_000u64, "srtt_us": 38_000.0, "min_rtt_us": 400.0}),
        );
        let v = way(&s, None).unwrap();
        assert_eq!(
            v.sentence,
            "Limited by the network 100% of the time: the congestion window (60 segments), 2.1% of bytes retransmitted, round trip 38.0 ms against 0.400 ms idle (a queue)."
        );
        // 21 against 20 ms is no queue.
        assert!(!way(&sender(1.0, 0.0, 0.0, json!({})), None)
            .unwrap()
            .sentence
            .contains("queue"));
    }

    #[test]
    fn a_rate_reached_is_the_limit_and_no_times_no_verdict() {
        let mut s = sender(1.0, 0.0, 0.0, json!({}));
        s["rate"] = json!(20e6);
        assert_eq!(way(&s, None).unwrap().limit, Some("rate"));
        s["rate"] = json!(40e6);
        assert_eq!(way(&s, None).unwrap().limit, Some("network"));
        // A kernel before 4.10: said, never a limit made up.
        let old = json!({"tcp_info": {"kernel_bytes": 168, "missing": ["tcpi_busy_time"], "send_seconds": 4.0}});
        let v = way(&old, None).unwrap();
        assert_eq!(v.limit, None);
        assert!(
            v.sentence.contains("no TCP limited times"),
            "{}",
            v.sentence
        );
        // Too short; no tcp_info at all (Windows, older agents): nothing.
        let short = sender(1.0, 0.0, 0.0, json!({"send_seconds": 0.01}));
        assert!(way(&short, None).unwrap().sentence.contains("too short"));
        assert_eq!(way(&json!({"bytes": 1}), None), None);
    }
}
