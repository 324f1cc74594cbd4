//! Parameters of `tcp_stream` and `unix_stream`.

use super::rr::{bind_addr, congestion};
use super::{bound, opt_range, range_u64, Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// Who sends in a stream test, seen from the driving (client) agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client agent sends, serving agent receives (iperf3's default).
    Send,
    /// Serving agent sends, client agent receives (socketsend/socketslurp).
    Receive,
    /// Both at once.
    Both,
}

/// What a stream's writes carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// Bytes from the OS random source, drawn once per test (as iperf3):
    /// a link that compresses (a VPN, a WAN optimiser, ssh) cannot make
    /// them smaller, so the figure is the link's.
    #[default]
    Random,
    /// All zero (seed 000's netcat from /dev/zero): shows what a
    /// compressing link gains on compressible data.
    Zeros,
}

/// Parameters of `tcp_stream` (and `unix_stream`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamParams {
    /// Bytes per write.
    pub msg_bytes: u64,
    /// Bytes per read (defaults to `msg_bytes`).
    pub read_bytes: u64,
    /// Number of writes per stream, if the test is count-bounded.
    pub count: Option<u64>,
    /// Duration in seconds, if the test is time-bounded.
    pub duration_s: Option<f64>,
    /// Parallel streams.
    pub streams: u32,
    /// Who sends.
    pub direction: Direction,
    /// Wait between writes in microseconds.
    pub wait_us: u64,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// Requested SO_SNDBUF, bytes.
    pub sndbuf: Option<u64>,
    /// Requested SO_RCVBUF, bytes.
    pub rcvbuf: Option<u64>,
    /// IP TOS / traffic class byte.
    pub tos: Option<u8>,
    /// TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// Sample interval in milliseconds.
    pub interval_ms: u32,
    /// Local address of the driving agent's sockets (the Perl seed's --local-host).
    #[serde(default)]
    pub client_bind: Option<IpAddr>,
    /// Address the serving agent listens on; the driving agent connects to it.
    #[serde(default)]
    pub server_bind: Option<IpAddr>,
    /// SO_RCVLOWAT asked for (TCP): a receiver is woken, and a read returns,
    /// only once this many bytes are queued (or at EOF). `None`: see
    /// [`StreamParams::rcvlowat`].
    #[serde(default)]
    pub rcvlowat: Option<u64>,
    /// What the writes carry.
    #[serde(default)]
    pub payload: Payload,
    /// TCP_MAXSEG asked for, bytes: the largest segment either end sends
    /// (announced in the SYN), to compare segment sizes as seed 002 compares
    /// MTUs. The summary's `mss` is what the connection uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
}

/// Largest default SO_RCVLOWAT: at 10 Mbit/s a receiver still wakes every
/// 100 ms, so its per-interval samples stay meaningful on slow links.
pub const RCVLOWAT_DEFAULT_MAX: u64 = 128 * 1024;

impl StreamParams {
    /// Total bytes one stream's sender will write when count-bounded.
    pub fn bytes_per_stream(&self) -> Option<u64> {
        self.count.map(|c| c * self.msg_bytes)
    }

    /// The SO_RCVLOWAT a receiving TCP socket gets: as asked, else for an
    /// unpaced bulk transfer one read buffer (at most 128 KiB), so the
    /// receiver wakes once per full read instead of once per segment, else 1
    /// (a paced or request/response test sees every arrival as it happens).
    pub fn rcvlowat(&self) -> u64 {
        self.rcvlowat.unwrap_or(if self.wait_us == 0 {
            self.read_bytes.min(RCVLOWAT_DEFAULT_MAX)
        } else {
            1
        })
    }
}

impl StreamParams {
    /// Parses and validates stream parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v)?;
        let lim = " (the agent's limit)";
        let msg_bytes = range_u64(
            "msg_bytes",
            r.u64("msg_bytes")?.unwrap_or(128 * 1024),
            1,
            limits.max_msg_bytes,
            lim,
        )?;
        let read_bytes = match r.u64("read_bytes")? {
            Some(n) => range_u64("read_bytes", n, 1, limits.max_msg_bytes, lim)?,
            None => msg_bytes,
        };
        let count = r.u64("count")?;
        let duration_s = r.f64("duration_s")?;
        let streams = range_u64(
            "streams",
            r.u64("streams")?.unwrap_or(1),
            1,
            limits.max_streams as u64,
            lim,
        )? as u32;
        let direction = match r.string("direction")?.as_deref() {
            None | Some("send") => Direction::Send,
            Some("receive") => Direction::Receive,
            Some("both") => Direction::Both,
            Some(o) => {
                return Err(ParamError::new(
                    "direction",
                    format!("must be send, receive or both, got {o:?}"),
                ))
            }
        };
        let wait_us = range_u64("wait_us", r.u64("wait_us")?.unwrap_or(0), 0, 10_000_000, "")?;
        let nodelay = r.bool("nodelay")?.unwrap_or(false);
        let sndbuf = opt_range(&mut r, "sndbuf", 1, 1 << 30)?;
        let rcvbuf = opt_range(&mut r, "rcvbuf", 1, 1 << 30)?;
        let tos = super::tos(&mut r)?;
        let congestion = congestion(&mut r)?;
        let client_bind = bind_addr(&mut r, "client_bind")?;
        let server_bind = bind_addr(&mut r, "server_bind")?;
        let rcvlowat = opt_range(&mut r, "rcvlowat", 1, 1 << 30)?;
        let mss = super::mss(&mut r)?;
        let payload = match r.string("payload")?.as_deref() {
            None | Some("random") => Payload::Random,
            Some("zeros") => Payload::Zeros,
            Some(o) => {
                return Err(ParamError::new(
                    "payload",
                    format!("must be random or zeros, got {o:?}"),
                ))
            }
        };
        let interval_ms = range_u64(
            "interval_ms",
            r.u64("interval_ms")?.unwrap_or(10),
            1,
            10_000,
            "",
        )? as u32;
        r.finish()?;

        let (count, duration_s) = bound(
            count,
            duration_s,
            1024,
            (
                msg_bytes as u128 * streams as u128,
                "count x msg_bytes x streams",
            ),
            limits,
        )?;
        Ok(StreamParams {
            msg_bytes,
            read_bytes,
            count,
            duration_s,
            streams,
            direction,
            wait_us,
            nodelay,
            sndbuf,
            rcvbuf,
            tos,
            congestion,
            interval_ms,
            client_bind,
            server_bind,
            rcvlowat,
            payload,
            mss,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serde_json::Value;

    fn parse(v: Value) -> Result<StreamParams, ParamError> {
        StreamParams::parse(&v, &Limits::default())
    }

    #[test]
    fn defaults_and_values() {
        let p = parse(json!({"msg_bytes": 1048576, "count": 128})).unwrap();
        assert_eq!(p.msg_bytes, 1 << 20);
        assert_eq!(p.read_bytes, 1 << 20);
        assert_eq!(p.count, Some(128));
        assert_eq!(p.streams, 1);
        assert_eq!(p.direction, Direction::Send);
        assert_eq!(p.bytes_per_stream(), Some(128 << 20));
    }

    #[test]
    fn rcvlowat_defaults_to_one_read_for_bulk_and_1_when_paced() {
        assert_eq!(parse(json!({})).unwrap().rcvlowat(), 131072);
        assert_eq!(parse(json!({"read_bytes": 1000})).unwrap().rcvlowat(), 1000);
        assert_eq!(
            parse(json!({"msg_bytes": 1 << 20})).unwrap().rcvlowat(),
            131072
        );
        assert_eq!(parse(json!({"wait_us": 100})).unwrap().rcvlowat(), 1);
        assert_eq!(parse(json!({"rcvlowat": 1})).unwrap().rcvlowat(), 1);
        assert_eq!(parse(json!({"rcvlowat": 0})).unwrap_err().param, "rcvlowat");
    }

    #[test]
    fn precedence_fills_the_top_three_bits_of_tos() {
        assert_eq!(parse(json!({"precedence": 5})).unwrap().tos, Some(0xa0));
        assert_eq!(
            parse(json!({"precedence": 1, "tos": 0x10})).unwrap().tos,
            Some(0x30)
        );
        assert_eq!(parse(json!({"tos": 0xb8})).unwrap().tos, Some(0xb8));
        let e = parse(json!({"precedence": 1, "tos": 0xb8})).unwrap_err();
        assert_eq!(e.param, "precedence", "{e}");
        assert_eq!(
            parse(json!({"precedence": 8})).unwrap_err().param,
            "precedence"
        );
    }

    #[test]
    fn bad_values_name_the_parameter() {
        assert_eq!(
            parse(json!({"msg_bytes": 0})).unwrap_err().param,
            "msg_bytes"
        );
        let e = parse(json!({"msg_bytes": "abc"})).unwrap_err();
        assert_eq!(e.param, "msg_bytes");
        let e = parse(json!({"msg_bytes": 1u64 << 40})).unwrap_err();
        assert!(e.message.contains("67108864"), "{e}");
        assert_eq!(parse(json!({"streams": 0})).unwrap_err().param, "streams");
        assert_eq!(parse(json!({"wait_us": -1})).unwrap_err().param, "wait_us");
        assert_eq!(parse(json!({"bogus": 1})).unwrap_err().param, "bogus");
        assert_eq!(
            parse(json!({"duration_s": 1e9})).unwrap_err().param,
            "duration_s"
        );
        assert_eq!(
            parse(json!({"count": 1, "duration_s": 1}))
                .unwrap_err()
                .param,
            "count"
        );
        assert_eq!(
            parse(json!({"direction": "up"})).unwrap_err().param,
            "direction"
        );
        assert_eq!(
            parse(json!({"msg_bytes": 67108864, "count": 10000000}))
                .unwrap_err()
                .param,
            "count"
        );
    }
}
