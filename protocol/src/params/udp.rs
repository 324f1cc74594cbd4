//! Parameters of `udp_rr` (udp_req_timo/udp_resp) and `udp_stream`
//! (udp_bw_mon/udp_bw_resp), and the meshperf UDP datagram header both use.
//!
//! Every datagram starts with a 28-byte little-endian header:
//!
//! | offset | size | field                                              |
//! |--------|------|----------------------------------------------------|
//! | 0      | 3    | magic `MPU`                                        |
//! | 3      | 1    | type: `H` hello, `Q` request, `R` reply, `D` data, |
//! |        |      | `E` end (udp_rr: the requester's `done` is sent)   |
//! | 4      | 8    | per-test token (sent on the TCP control connection)|
//! | 12     | 8    | sequence number                                    |
//! | 20     | 8    | sender's time in ns since its test start           |
//!
//! The rest of the datagram is padding up to the requested size.
//!
//! A datagram shorter than 28 bytes (down to 18: a 64-byte Ethernet frame,
//! for packet-rate tests) carries the compact form:
//!
//! | offset | size | field                                              |
//! |--------|------|----------------------------------------------------|
//! | 0      | 1    | magic `m`                                          |
//! | 1      | 1    | type, as above                                     |
//! | 2      | 4    | the token's low 32 bits                            |
//! | 6      | 4    | sequence number (counts stay below 2^32)           |
//! | 10     | 8    | sender's time in ns since its test start           |

use super::lul::{Clocks, ProbeParams};
use super::pace::Pace;
use super::rr::bind_addr;
use super::spec::udp::*;
use super::spec::{ParamSpec, CLIENT_BIND, DURATION_S, OMIT_S, RCVBUF, SERVER_BIND, SNDBUF};
use super::{both_bounds, Direction, Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// Length of the meshperf UDP header.
pub const UDP_HEADER_LEN: u64 = 28;
/// Length of the compact header: the smallest datagram meshperf sends (18
/// bytes of payload make a 64-byte Ethernet frame).
pub const UDP_MIN_LEN: u64 = 18;
/// Largest UDP payload over IPv4 (65535 - 20 IP - 8 UDP).
pub const UDP_MAX_PAYLOAD: u64 = 65507;

/// What both UDP tests set on their sockets, and where they bind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSocketParams {
    /// IP TOS / traffic class byte.
    pub tos: Option<u8>,
    /// Requested SO_SNDBUF, bytes.
    pub sndbuf: Option<u64>,
    /// Requested SO_RCVBUF, bytes.
    pub rcvbuf: Option<u64>,
    /// Local address of the driving agent's control and UDP sockets.
    pub client_bind: Option<IpAddr>,
    /// Local address of the serving agent's listener and UDP socket
    /// (default: the agent's listen address); the driving agent connects to it.
    pub server_bind: Option<IpAddr>,
}

impl UdpSocketParams {
    fn parse(r: &mut Reader) -> Result<Self, ParamError> {
        let tos = super::tos(r)?;
        let (sndbuf, rcvbuf) = (r.opt_int(&SNDBUF)?, r.opt_int(&RCVBUF)?);
        Ok(UdpSocketParams {
            tos,
            sndbuf,
            rcvbuf,
            client_bind: bind_addr(r, CLIENT_BIND.name)?,
            server_bind: bind_addr(r, SERVER_BIND.name)?,
        })
    }
}

/// Parameters of `udp_rr`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpRrParams {
    /// Request datagram size in bytes (udp_req_timo -p).
    pub req_bytes: u64,
    /// Response datagram size in bytes (udp_req_timo -r).
    pub resp_bytes: u64,
    /// Number of request/response transactions (udp_req_timo -l); with
    /// `duration_s`, the most that may run.
    pub count: u64,
    /// Run for this many seconds instead of a count (netperf UDP_RR -l).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// How long to wait for each response, in ms.
    pub timeout_ms: u64,
    /// A request every this many us, on an absolute schedule from the
    /// first (0: each as soon as the last one's reply came).
    #[serde(default)]
    pub wait_us: u64,
    /// Socket options and addresses (flattened: the same JSON keys).
    #[serde(flatten)]
    pub sock: UdpSocketParams,
    /// Progress interval in ms.
    pub interval_ms: u64,
}

/// Parameters of `udp_stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpStreamParams {
    /// Datagram size in bytes (udp_bw_mon -p), header included.
    pub pkt_bytes: u64,
    /// Datagrams to send (udp_bw_mon -l); with `duration_s`, the most that
    /// may leave in that time (at `wait_us`, the agent's count and byte limits).
    pub count: u64,
    /// Time between datagram sends in us (udp_bw_mon -w); fractions allowed.
    /// With `rate`, worked out from it.
    pub wait_us: f64,
    /// The rate asked for, bits per second of payload (iperf3 -b), if the
    /// plan gave one instead of `wait_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Send for this many seconds instead of a count (iperf3 -t).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Warm-up left out of the figures, seconds (iperf3 -O; needs `duration_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_s: Option<f64>,
    /// `send`: the driving agent sends; `receive`: the serving agent sends;
    /// `both`: each sends to the other at once (two flows, each paced alike).
    pub direction: Direction,
    /// Socket options and addresses (flattened: the same JSON keys).
    #[serde(flatten)]
    pub sock: UdpSocketParams,
    /// Per-frame bytes on the wire beyond the UDP payload (Ethernet: 66).
    pub overhead_bytes: u64,
    /// Quiet time after which the receiver stops waiting, in ms.
    pub timeout_ms: u64,
    /// A UDP probe flow beside the burst every `probe_ms` (absent: none):
    /// the latency under the test's own load, as tcp_stream's. See
    /// [`UdpStreamParams::probe`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<f64>,
    /// Its datagrams' size (used only with `probe_ms`).
    #[serde(default = "default_probe_bytes")]
    pub probe_bytes: u64,
    /// Its clocks (used only with `probe_ms`).
    #[serde(default)]
    pub clocks: Clocks,
    /// UDP GSO on the sender, GRO on the receiver ([`UdpGso`]).
    #[serde(default)]
    pub gso: UdpGso,
    /// Parallel flows, each on its own pair of sockets and control line
    /// (`count` is per stream; `rate` is all streams together, each
    /// stream paced at its share). Absent in plans written before it: 1.
    #[serde(default = "one")]
    pub streams: u32,
    /// Worker threads per side, as tcp_stream's (`None`: one per flow up
    /// to the CPUs the side may use; [`UdpStreamParams::cpus_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The driving side's data threads on these CPUs, in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// The serving side's data threads on these CPUs, in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<u32>>,
}

fn one() -> u32 {
    1
}

/// Whether `udp_stream` hands the kernel many datagrams in one segmented
/// send (`UDP_SEGMENT`, Linux 4.18) and reads coalesced ones (`UDP_GRO`,
/// Linux 5.0). Each datagram still carries its own header, so the
/// receiver's loss, order and duplicate counts are the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UdpGso {
    /// One datagram per message (what every result before `gso` measured;
    /// each arrival has its own kernel time stamp).
    #[default]
    Off,
    /// Used where the kernel and the path allow it; the summary's `gso`
    /// and `gro` say whether it was.
    Auto,
    /// Used, or the test is refused before its burst, naming `gso`.
    On,
}

/// The most datagrams of `pkt_bytes` one segmented send carries: the
/// kernel's UDP_MAX_SEGMENTS (64; newer kernels allow more)
/// and one IP datagram's payload.
pub fn gso_segments(pkt_bytes: u64) -> u64 {
    (UDP_MAX_PAYLOAD / pkt_bytes.max(1)).clamp(1, 64)
}

fn default_probe_bytes() -> u64 {
    PROBE_BYTES.default_num()
}

/// A datagram size within the table's range, refused with what its ends are.
fn size(r: &mut Reader, s: &ParamSpec) -> Result<u64, ParamError> {
    let v = r.u64(s.name)?.unwrap_or_else(|| s.default_num());
    if !s.contains(v as f64, r.limits) {
        return Err(ParamError::new(
            s.name,
            format!(
                "must be between {UDP_MIN_LEN} (the compact meshperf header) and {UDP_MAX_PAYLOAD} \
                 (the largest UDP payload), got {v}"
            ),
        ));
    }
    Ok(v)
}

impl UdpRrParams {
    /// Parses and validates `udp_rr` parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let req_bytes = size(&mut r, &REQ_BYTES)?;
        let resp_bytes = size(&mut r, &RESP_BYTES)?;
        let (count, duration_s) = match r.opt_float(&DURATION_S)? {
            None => (r.int(&RR_COUNT)?, None),
            Some(_) if r.u64(RR_COUNT.name)?.is_some() => return Err(both_bounds()),
            // A time-bounded run stops at the agent's count limit at the latest.
            Some(d) => (limits.max_count, Some(d)),
        };
        let timeout_ms = r.int(&RR_TIMEOUT_MS)?;
        let wait_us = r.int(&RR_WAIT_US)?;
        let sock = UdpSocketParams::parse(&mut r)?;
        let interval_ms = r.int(&RR_INTERVAL_MS)?;
        r.finish()?;
        if duration_s.is_none() {
            Pace::new("request", req_bytes, 1, wait_us as f64, None).within(
                Some(count),
                None,
                limits,
            )?;
        }
        Ok(UdpRrParams {
            req_bytes,
            resp_bytes,
            count,
            duration_s,
            timeout_ms,
            wait_us,
            sock,
            interval_ms,
        })
    }
}

impl UdpStreamParams {
    /// Parses and validates `udp_stream` parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let pkt_bytes = size(&mut r, &PKT_BYTES)?;
        let count = r.opt_int(&STREAM_COUNT)?;
        let duration_s = r.opt_float(&DURATION_S)?;
        let wait = r.opt_float(&WAIT_US)?;
        let rate = r.opt_rate(&RATE)?;
        let streams = r.int(&STREAMS)? as u32;
        let direction = match r.choice(&DIRECTION)? {
            "send" => Direction::Send,
            "receive" => Direction::Receive,
            "both" => Direction::Both,
            o => unreachable!("direction {o:?} is in the table but not read"),
        };
        let omit_s = r.opt_float(&OMIT_S)?.filter(|&o| o > 0.0);
        let sock = UdpSocketParams::parse(&mut r)?;
        let overhead_bytes = r.int(&OVERHEAD_BYTES)?;
        let timeout_ms = r.int(&STREAM_TIMEOUT_MS)?;
        let (probe_ms, probe_bytes, clocks) =
            ProbeParams::read(&mut r, [&PROBE_MS, &PROBE_BYTES, &CLOCKS])?;
        let gso = match r.choice(&GSO)? {
            "off" => UdpGso::Off,
            "auto" => UdpGso::Auto,
            "on" => UdpGso::On,
            o => unreachable!("gso {o:?} is in the table but not read"),
        };
        let threads = r.opt_int(&THREADS)?.map(|t| t as u32);
        let cpus = r.cpu_list(CPUS.name)?;
        let server_cpus = r.cpu_list(SERVER_CPUS.name)?;
        r.finish()?;
        if gso == UdpGso::On && gso_segments(pkt_bytes) < 2 {
            return Err(ParamError::new(
                "gso",
                format!(
                    "on needs two datagrams in one send of at most {UDP_MAX_PAYLOAD} bytes: \
                     pkt_bytes at most {}, got {pkt_bytes} (use gso auto or off)",
                    UDP_MAX_PAYLOAD / 2
                ),
            ));
        }
        if wait.is_some() && rate.is_some() {
            return Err(ParamError::new("rate", "give rate or wait_us, not both"));
        }
        // The wait, given or worked out from the rate, and every count and
        // time it implies are checked in one place (`pace.rs`).
        let wait = wait.unwrap_or(if rate.is_some() {
            0.0
        } else {
            WAIT_US.default_num() as f64
        });
        if gso == UdpGso::On && rate.is_none() && wait > 0.0 {
            return Err(ParamError::new(
                "gso",
                "on sends several datagrams a call, but wait_us paces one datagram a call: \
                 give rate (or wait_us 0) instead, or gso auto or off",
            ));
        }
        let pace = Pace::new("datagram", pkt_bytes, streams, wait, rate);
        pace.udp_rate_within(limits)?;
        // A rate alone runs for a time, as iperf3 -u -b does (10 s, or the
        // agent's limit if shorter).
        let duration_s = match (count, duration_s, rate) {
            (Some(_), Some(_), _) => return Err(super::both_bounds()),
            (None, None, Some(_)) => Some(limits.max_duration_s.min(10.0)),
            (_, d, _) => d,
        };
        let count = match duration_s {
            None => count.unwrap_or_else(|| STREAM_COUNT.default_num()),
            // What leaves in that time at the pace, within the agent's
            // count and bytes (unpaced: as many as those allow).
            Some(d) => pace.count_in(d, limits),
        };
        // A given count was held to the agent's count limit as it was read,
        // and one worked out from a time is capped by it; the default is
        // held to it here (an agent started with `--max-count` below it).
        if duration_s.is_none() && count > limits.max_count {
            return Err(ParamError::new(
                "count",
                format!(
                    "the default of {count} datagrams is above the agent's limit of {}: \
                     give count or duration_s",
                    limits.max_count
                ),
            ));
        }
        super::omit_within(omit_s, duration_s)?;
        pace.within(duration_s.is_none().then_some(count), duration_s, limits)?;
        if (count as u128) * (pkt_bytes as u128) * (streams as u128) > limits.max_bytes as u128 {
            return Err(ParamError::new(
                "count",
                format!(
                    "count x pkt_bytes x streams is above the agent's limit of {} bytes",
                    limits.max_bytes
                ),
            ));
        }
        let p = UdpStreamParams {
            pkt_bytes,
            count,
            wait_us: pace.wait_us,
            rate,
            duration_s,
            omit_s,
            direction,
            sock,
            overhead_bytes,
            timeout_ms,
            probe_ms,
            probe_bytes,
            clocks,
            gso,
            streams,
            threads,
            cpus,
            server_cpus,
        };
        if let Some(pp) = ProbeParams::beside(probe_ms, probe_bytes, clocks, duration_s, limits)? {
            pace.udp_rate_with_probes_within(pp.bits_per_second(), limits)?;
        }
        Ok(p)
    }

    /// The probe flow beside the burst, if `probe_ms` asks for one.
    pub fn probe(&self) -> Option<ProbeParams> {
        ProbeParams::of(self.probe_ms, self.probe_bytes, self.clocks)
    }

    /// The CPU list of one side and the parameter that gave it: `cpus` for
    /// the driving side, `server_cpus` for the serving side.
    pub fn cpus_of(&self, serving: bool) -> (&'static str, Option<&[u32]>) {
        if serving {
            (SERVER_CPUS.name, self.server_cpus.as_deref())
        } else {
            (CPUS.name, self.cpus.as_deref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_rate;
    use super::*;
    use serde_json::json;

    fn rr(v: Value) -> Result<UdpRrParams, ParamError> {
        UdpRrParams::parse(&v, &Limits::default())
    }
    fn st(v: Value) -> Result<UdpStreamParams, ParamError> {
        UdpStreamParams::parse(&v, &Limits::default())
    }

    /// The default count (10 000 datagrams) is held to an agent's count
    /// limit below it, as a given count is (the control fuzzer's find:
    /// `{"wait_us": 500}` ran 10 000 datagrams on an agent allowing 1000).
    #[test]
    fn the_default_count_is_held_to_the_agents_count_limit() {
        let l = Limits {
            max_count: 1000,
            ..Limits::default()
        };
        let e = UdpStreamParams::parse(&json!({"wait_us": 500}), &l).unwrap_err();
        assert_eq!(e.param, "count");
        assert!(
            e.to_string()
                .contains("default of 10000 datagrams is above the agent's limit of 1000"),
            "{e}"
        );
        // A given count is held to it as it is read.
        let e = UdpStreamParams::parse(&json!({"count": 1001}), &l).unwrap_err();
        assert_eq!(e.param, "count");
        assert_eq!(
            UdpStreamParams::parse(&json!({"count": 1000}), &l)
                .unwrap()
                .count,
            1000
        );
        // A time's count is capped by it.
        let p = UdpStreamParams::parse(&json!({"duration_s": 1, "wait_us": 100}), &l).unwrap();
        assert_eq!(p.count, 1000);
        assert_eq!(st(json!({"wait_us": 500})).unwrap().count, 10_000);
    }

    #[test]
    fn gso_is_off_unless_asked_and_on_needs_two_datagrams_a_send() {
        let p = st(json!({})).unwrap();
        assert_eq!(p.gso, UdpGso::Off);
        // Parameters written before `gso` read as off.
        let mut old = serde_json::to_value(&p).unwrap();
        old.as_object_mut().unwrap().remove("gso");
        let back: UdpStreamParams = serde_json::from_value(old).unwrap();
        assert_eq!(back.gso, UdpGso::Off);
        for (v, g) in [
            ("auto", UdpGso::Auto),
            ("on", UdpGso::On),
            ("off", UdpGso::Off),
        ] {
            assert_eq!(st(json!({ "gso": v })).unwrap().gso, g);
        }
        // One datagram a call by wait_us (the default 20): nothing to segment.
        let e = st(json!({"gso": "on", "wait_us": 20})).unwrap_err();
        assert_eq!(e.param, "gso");
        assert_eq!(st(json!({"gso": "auto"})).unwrap().gso, UdpGso::Auto);
        let on = st(json!({"gso": "on", "rate": "20M"})).unwrap();
        assert_eq!(serde_json::to_value(&on).unwrap()["gso"], "on");
        let e = st(json!({"gso": "yes"})).unwrap_err();
        assert_eq!(e.param, "gso");
        // 32753 bytes: two in one send; 32754: one, no GSO to be had.
        assert_eq!(gso_segments(32753), 2);
        assert!(st(json!({"gso": "on", "pkt_bytes": 32753, "wait_us": 0})).is_ok());
        let e = st(json!({"gso": "on", "pkt_bytes": 32754, "wait_us": 0})).unwrap_err();
        assert_eq!(e.param, "gso");
        assert!(e.to_string().contains("pkt_bytes at most 32753"), "{e}");
        assert_eq!(
            st(json!({"gso": "auto", "pkt_bytes": 65507})).unwrap().gso,
            UdpGso::Auto
        );
        // The kernel's 64 segments, or one IP datagram's payload.
        assert_eq!((gso_segments(18), gso_segments(1400)), (64, 46));
    }

    #[test]
    fn streams_share_the_rate_and_the_byte_limit_and_bound_their_threads() {
        let p = st(json!({})).unwrap();
        assert_eq!(
            (p.streams, p.threads, p.cpus_of(false)),
            (1, None, ("cpus", None))
        );
        // Plans written before `streams` read as one flow.
        let mut old = serde_json::to_value(&p).unwrap();
        old.as_object_mut().unwrap().remove("streams");
        assert_eq!(
            serde_json::from_value::<UdpStreamParams>(old)
                .unwrap()
                .streams,
            1
        );
        // 20 Mbit/s of 1400 B over 4 flows: each a datagram every 2240 us.
        let p = st(json!({"rate": "20M", "streams": 4, "duration_s": 2})).unwrap();
        assert!((p.wait_us - 2240.0).abs() < 1e-9, "{}", p.wait_us);
        assert_eq!(p.count, 893, "per flow: 2 s / 2240 us, rounded up");
        let p = st(json!({"streams": 8, "threads": 2, "server_cpus": "0-1"})).unwrap();
        assert_eq!((p.streams, p.threads), (8, Some(2)));
        assert_eq!(p.cpus_of(true), ("server_cpus", Some(&[0, 1][..])));
        for (v, param) in [
            (json!({"streams": 0}), "streams"),
            (json!({"streams": 65}), "streams"),
            (json!({"threads": 65}), "threads"),
            (json!({"cpus": "2-1"}), "cpus"),
        ] {
            assert_eq!(st(v.clone()).unwrap_err().param, param, "{v}");
        }
        // The byte limit counts every flow.
        let small = Limits {
            max_bytes: 1_400_000,
            ..Limits::default()
        };
        let one = UdpStreamParams::parse(&json!({"count": 1000}), &small);
        assert!(one.is_ok());
        let e = UdpStreamParams::parse(&json!({"count": 1000, "streams": 2}), &small).unwrap_err();
        assert_eq!(e.param, "count");
    }

    #[test]
    fn defaults() {
        let p = rr(Value::Null).unwrap();
        assert_eq!((p.req_bytes, p.resp_bytes, p.timeout_ms), (64, 64, 1000));
        let s = st(json!({"wait_us": 11.2})).unwrap();
        assert_eq!((s.pkt_bytes, s.overhead_bytes, s.wait_us), (1400, 66, 11.2));
        assert_eq!(s.direction, Direction::Send);
        assert_eq!((s.sock.client_bind, p.sock.server_bind), (None, None));
        let s = st(json!({"client_bind": "127.0.0.2", "server_bind": "[::1]"})).unwrap();
        assert_eq!(s.sock.client_bind, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(s.sock.server_bind, Some("::1".parse().unwrap()));
        // Flattened: the socket options serialise as keys of the test's own.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["client_bind"], "127.0.0.2");
        assert_eq!(serde_json::from_value::<UdpStreamParams>(v).unwrap(), s);
    }

    #[test]
    fn udp_rr_runs_for_a_count_or_a_duration() {
        let p = rr(json!({"duration_s": 2.5})).unwrap();
        assert_eq!(p.duration_s, Some(2.5));
        assert_eq!(p.count, Limits::default().max_count, "the cap");
        assert_eq!(rr(Value::Null).unwrap().duration_s, None);
        let e = rr(json!({"duration_s": 1, "count": 10})).unwrap_err();
        assert_eq!(
            (e.param.as_str(), e.message.as_str()),
            ("count", "give count or duration_s, not both")
        );
        assert_eq!(
            rr(json!({"duration_s": 0})).unwrap_err().param,
            "duration_s"
        );
        assert_eq!(
            rr(json!({"duration_s": 3600})).unwrap_err().param,
            "duration_s"
        );
        // Only a given duration is written back.
        let v = serde_json::to_value(rr(Value::Null).unwrap()).unwrap();
        assert!(v.get("duration_s").is_none(), "{v}");
    }

    #[test]
    fn the_udp_rate_limit_refuses_faster_bursts() {
        let limits = Limits {
            max_udp_bits_per_second: Some(100e6),
            ..Limits::default()
        };
        let p = |v: Value| UdpStreamParams::parse(&v, &limits);
        // 1400 B every 112 us is exactly 100 Mbit/s of payload.
        assert!(p(json!({"pkt_bytes": 1400, "wait_us": 112})).is_ok());
        let e = p(json!({"pkt_bytes": 1400, "wait_us": 100})).unwrap_err();
        assert_eq!(e.param, "wait_us");
        assert!(
            e.message.contains("100 Mbit/s") && e.message.contains("112.00"),
            "{e}"
        );
        assert_eq!(p(json!({"pkt_bytes": 1400})).unwrap_err().param, "wait_us");
        assert!(st(json!({"pkt_bytes": 1400})).is_ok(), "no cap by default");
    }

    #[test]
    fn udp_stream_by_rate_and_by_time() {
        // 20 Mbit/s of 1400-byte datagrams: one every 560 us.
        let p = st(json!({"rate": "20M", "duration_s": 1})).unwrap();
        assert!((p.wait_us - 560.0).abs() < 1e-9, "{}", p.wait_us);
        assert_eq!(
            (p.rate, p.duration_s, p.count),
            (Some(20e6), Some(1.0), 1786)
        );
        // A rate alone runs 10 s, as iperf3 -u -b does.
        let p = st(json!({"rate": 1e6})).unwrap();
        assert_eq!(p.duration_s, Some(10.0));
        let e = st(json!({"rate": 1e6, "wait_us": 10})).unwrap_err();
        assert_eq!(
            (e.param.as_str(), e.message.as_str()),
            ("rate", "give rate or wait_us, not both")
        );
        assert_eq!(st(json!({"rate": "fast"})).unwrap_err().param, "rate");
        assert_eq!(st(json!({"rate": 0})).unwrap_err().param, "rate");
        assert_eq!(
            st(json!({"count": 5, "duration_s": 1})).unwrap_err().param,
            "count"
        );
        // Unpaced by time: as many as the agent's count limit allows.
        let p = st(json!({"duration_s": 2})).unwrap();
        assert_eq!(p.count, Limits::default().max_count);
        // Over the agent's UDP rate limit: refused naming `rate`.
        let limits = Limits {
            max_udp_bits_per_second: Some(100e6),
            ..Limits::default()
        };
        let e = UdpStreamParams::parse(&json!({"rate": "200M"}), &limits).unwrap_err();
        assert_eq!(e.param, "rate");
        assert!(e.message.contains("100 Mbit/s"), "{e}");
        assert!(UdpStreamParams::parse(&json!({"rate": "100M"}), &limits).is_ok());
        // Warm-up: within a duration.
        assert_eq!(
            st(json!({"omit_s": 1, "duration_s": 2})).unwrap().omit_s,
            Some(1.0)
        );
        assert_eq!(st(json!({"omit_s": 1})).unwrap_err().param, "omit_s");
        assert_eq!(
            st(json!({"omit_s": 2, "duration_s": 2})).unwrap_err().param,
            "omit_s"
        );
        assert_eq!(
            st(json!({"direction": "both"})).unwrap().direction,
            Direction::Both
        );
    }

    /// The bound a refusal offers (`give rate 2.24k or more`, `wait at
    /// most 500000 us`): the word after `after`.
    fn offered<'a>(e: &'a ParamError, after: &str) -> &'a str {
        let i = e
            .message
            .find(after)
            .unwrap_or_else(|| panic!("{after:?} in {e}"));
        e.message[i + after.len()..].split(' ').next().unwrap()
    }

    #[test]
    fn a_rate_whose_time_holds_one_datagram_is_refused_with_the_lowest_that_holds_two() {
        // The fuzzer's input (control, regress-udp-rate-one-datagram): 2
        // bit/s of 1400-byte datagrams is one every 5600 s, so the 10 s a
        // rate alone runs held one datagram, "sent" in microseconds.
        let e = st(json!({"rate": 2})).unwrap_err();
        assert_eq!(e.param, "rate", "{e}");
        assert_eq!(
            e.message,
            "2 bit/s is one 1400-byte datagram every 5600 s, fewer than 2 in the test's 10 s: \
             give rate 2.24k or more (bit/s), a longer duration_s or smaller messages"
        );
        // The lowest is 2 datagrams in the time: exactly, and no less.
        let p = st(json!({"rate": "2.24k"})).unwrap();
        assert_eq!((p.count, p.wait_us), (2, 5e6));
        assert_eq!(st(json!({"rate": 2239})).unwrap_err().param, "rate");
        // The agent's shorter time limit shortens a rate-alone test: 2 s.
        let short = Limits {
            max_duration_s: 2.0,
            ..Limits::default()
        };
        let e = UdpStreamParams::parse(&json!({"rate": 5000}), &short).unwrap_err();
        assert!(
            e.message
                .contains("in the test's 2 s: give rate 11.2k or more"),
            "{e}"
        );
        // Whatever the size and time, the rate offered is accepted and
        // holds at least 2 datagrams; a hundredth less is refused.
        for pkt in [18, 64, 1400, 9000, 65507] {
            for d in [0.001, 0.3, 1.0, 7.0, 60.0] {
                let v = json!({"rate": 1, "pkt_bytes": pkt, "duration_s": d});
                let e = st(v).unwrap_err();
                assert_eq!(e.param, "rate", "{e}");
                let low = offered(&e, "give rate ");
                let p = st(json!({"rate": low, "pkt_bytes": pkt, "duration_s": d}))
                    .unwrap_or_else(|e| panic!("{pkt} B, {d} s: {low} offered, {e}"));
                assert!(
                    p.count >= 2 && (p.count - 1) as f64 * p.wait_us < d * 1e6,
                    "{p:?}"
                );
                let under = parse_rate(low).unwrap() * 0.99;
                let v = json!({"rate": under, "pkt_bytes": pkt, "duration_s": d});
                assert_eq!(st(v).unwrap_err().param, "rate", "{pkt} B, {d} s, {under}");
            }
        }
    }

    #[test]
    fn a_paced_udp_stream_past_the_agents_limits_is_refused_naming_what_paced_it() {
        // A count at a rate that takes longer than the agent's time limit.
        let e = st(json!({"rate": "1M", "count": 10000})).unwrap_err();
        assert_eq!(e.param, "rate", "{e}");
        assert_eq!(
            e.message,
            "1 Mbit/s sends 10000 1400-byte datagrams in 112.0 s, above the agent's limit of \
             60 s: give rate 1.87M or more, a smaller count, or duration_s instead"
        );
        assert_eq!(
            st(json!({"rate": "1.87M", "count": 10000})).unwrap().count,
            10000
        );
        // By wait_us, as before: the count is named.
        let e = st(json!({"wait_us": 7000, "count": 10000})).unwrap_err();
        assert_eq!(
            (e.param.as_str(), e.message.as_str()),
            (
                "count",
                "count x wait_us = 70.0 s is above the agent's limit of 60 s"
            )
        );
        // A time at a pace that sends more than the agent's count limit
        // runs, at most that many: the sender stops at its time or there,
        // whichever comes first (1000G is a rate no host sends; the test says
        // it was not reached rather than being refused).
        let p = st(json!({"rate": "1G", "pkt_bytes": 18, "duration_s": 60})).unwrap();
        assert_eq!(p.count, 10_000_000);
        let p = st(json!({"rate": "1000G", "duration_s": 3})).unwrap();
        assert_eq!((p.count, p.duration_s), (10_000_000, Some(3.0)));
        let p = st(json!({"rate": "24M", "pkt_bytes": 18, "duration_s": 60})).unwrap();
        assert_eq!(p.count, 10_000_000);
        assert_eq!(
            st(json!({"wait_us": 1, "pkt_bytes": 18, "duration_s": 60}))
                .unwrap()
                .count,
            10_000_000
        );
        // Below the limit, what leaves in the time: 60 s / 7 us.
        assert_eq!(
            st(json!({"wait_us": 7, "pkt_bytes": 18, "duration_s": 60}))
                .unwrap()
                .count,
            8_571_429
        );
        // The agent's byte limit counts as well: 1 GiB is 766958 datagrams.
        let small = Limits {
            max_bytes: 1 << 30,
            ..Limits::default()
        };
        let p = UdpStreamParams::parse(&json!({"rate": "1G", "duration_s": 10}), &small).unwrap();
        assert_eq!(p.count, 766958);
        // Unpaced by time: as many as the limits allow, as before.
        let p = UdpStreamParams::parse(&json!({"duration_s": 10}), &small).unwrap();
        assert_eq!(p.count, 766958);
        // A wait that leaves one datagram in the time.
        let e = st(json!({"wait_us": 1e7, "duration_s": 1})).unwrap_err();
        assert_eq!(
            (e.param.as_str(), e.message.as_str()),
            (
                "wait_us",
                "10000000 us is one 1400-byte datagram every 10 s, fewer than 2 in the test's \
                 1 s: wait at most 500000 us, or give a longer duration_s"
            )
        );
        assert_eq!(
            st(json!({"wait_us": 5e5, "duration_s": 1})).unwrap().count,
            2
        );
    }

    #[test]
    fn bad_input_names_the_parameter() {
        let bad = |v: Value| st(v).unwrap_err().param;
        assert_eq!(bad(json!({"pkt_bytes": 65508})), "pkt_bytes");
        assert_eq!(bad(json!({"pkt_bytes": 17})), "pkt_bytes");
        assert_eq!(bad(json!({"wait_us": -1})), "wait_us");
        assert_eq!(bad(json!({"count": 0})), "count");
        assert_eq!(bad(json!({"timeout_ms": 0})), "timeout_ms");
        assert_eq!(bad(json!({"direction": "up"})), "direction");
        assert_eq!(bad(json!({"count": 1000000, "wait_us": 1000})), "count");
        assert_eq!(rr(json!({"req_bytes": 10})).unwrap_err().param, "req_bytes");
        assert_eq!(
            rr(json!({"resp_bytes": 70000})).unwrap_err().param,
            "resp_bytes"
        );
        assert_eq!(rr(json!({"count": 0})).unwrap_err().param, "count");
        assert_eq!(
            rr(json!({"timeout_ms": 0})).unwrap_err().param,
            "timeout_ms"
        );
        assert_eq!(bad(json!({"client_bind": "nohost"})), "client_bind");
        assert_eq!(
            rr(json!({"server_bind": "1.2.3"})).unwrap_err().param,
            "server_bind"
        );
        let e = st(json!({"pkt_bytes": 70000})).unwrap_err();
        assert!(e.to_string().contains("65507"), "{e}");
    }
}
