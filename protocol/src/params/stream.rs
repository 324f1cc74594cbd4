//! Parameters of `tcp_stream` and `unix_stream`.

use super::pace::Pace;
use super::rr::{bind_addr, congestion};
use super::spec::stream::*;
use super::spec::{CLIENT_BIND, DURATION_S, OMIT_S, RATE, RCVBUF, SERVER_BIND, SNDBUF};
use super::{bound, Clocks, Limits, ParamError, ProbeParams, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// Who sends in a stream test, seen from the driving (client) agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client agent sends, serving agent receives (iperf3's default).
    #[default]
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
    /// `read_bytes` buffers the receiving end takes per stream
    /// (socketslurp's count); `None`: whatever the sender sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_count: Option<u64>,
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
    /// The writes carry this file's bytes instead (a name in the sending
    /// agent's `--payload-dir`; see [`payload_file_name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_file: Option<String>,
    /// TCP_MAXSEG asked for, bytes: the largest segment either end sends
    /// (announced in the SYN), to compare segment sizes as seed 002 compares
    /// MTUs. The summary's `mss` is what the connection uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
    /// The rate asked for, bits per second of payload, all streams of one
    /// direction together (each stream's sender is paced at its share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Warm-up left out of the figures, seconds (iperf3 -O; needs `duration_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_s: Option<f64>,
    /// A UDP probe flow beside the streams every `probe_ms` (`tcp_stream`
    /// only; absent: none): the latency under the test's own load. See
    /// [`StreamParams::probe`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<f64>,
    /// Its datagrams' size (used only with `probe_ms`).
    #[serde(default = "default_probe_bytes")]
    pub probe_bytes: u64,
    /// Its clocks (used only with `probe_ms`).
    #[serde(default)]
    pub clocks: Clocks,
    /// Worker threads per side, each with its own poll; `None`: one per
    /// stream, up to the CPUs the side may use (see [`StreamParams::cpus_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The driving side's data threads on these CPUs, in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// The serving side's data threads on these CPUs, in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<u32>>,
    /// The sending side writes with MSG_ZEROCOPY (iperf3 `-Z`).
    #[serde(default)]
    pub zerocopy: bool,
}

fn default_probe_bytes() -> u64 {
    PROBE_BYTES.default_num()
}

/// Largest default SO_RCVLOWAT: at 10 Mbit/s a receiver still wakes every
/// 100 ms, so its per-interval samples stay meaningful on slow links.
pub const RCVLOWAT_DEFAULT_MAX: u64 = 128 * 1024;

impl StreamParams {
    fn pace_of(msg_bytes: u64, streams: u32, wait_us: u64, rate: Option<f64>) -> Pace {
        Pace::new("write", msg_bytes, streams, wait_us as f64, rate)
    }

    /// Time between one stream's writes, us: `wait_us`, or with `rate` at
    /// least a message at the stream's share of it.
    pub fn write_wait_us(&self) -> f64 {
        Self::pace_of(self.msg_bytes, self.streams, self.wait_us, self.rate).wait_us
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

    /// The probe flow beside the streams, if `probe_ms` asks for one.
    pub fn probe(&self) -> Option<ProbeParams> {
        ProbeParams::of(self.probe_ms, self.probe_bytes, self.clocks)
    }

    /// Bytes one stream moves at most: the sender's `count` x `msg_bytes`
    /// or the receiver's `recv_count` x `read_bytes`, whichever is fewer
    /// (socketsend/socketslurp: the end with fewer buffers decides);
    /// `None` when neither bounds it (a time-bounded test).
    pub fn bytes_per_stream(&self) -> Option<u64> {
        let send = self.count.map(|c| c * self.msg_bytes);
        let recv = self.recv_count.map(|c| c * self.read_bytes);
        match (send, recv) {
            (Some(s), Some(r)) => Some(s.min(r)),
            (s, r) => s.or(r),
        }
    }

    /// Which end's buffers decide how much moves, once the receiver has a
    /// count of its own: `sender`, `receiver`, or `equal` (both the same
    /// bytes); `None` without `recv_count`. A time-bounded sender decides
    /// only if its time runs out first, which the figures then show.
    pub fn limited_by(&self) -> Option<&'static str> {
        let recv = self.recv_count? * self.read_bytes;
        Some(match self.count.map(|c| c * self.msg_bytes) {
            Some(send) if send < recv => "sender",
            Some(send) if send == recv => "equal",
            _ => "receiver",
        })
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
        let mut r = Reader::new(v, limits)?;
        let msg_bytes = r.int(&MSG_BYTES)?;
        let read_bytes = r.opt_int(&READ_BYTES)?.unwrap_or(msg_bytes);
        let count = r.opt_int(&COUNT)?;
        let duration_s = r.opt_float(&DURATION_S)?;
        let recv_count = r.opt_int(&RECV_COUNT)?;
        let streams = r.int(&STREAMS)? as u32;
        let direction = match r.choice(&DIRECTION)? {
            "send" => Direction::Send,
            "receive" => Direction::Receive,
            "both" => Direction::Both,
            o => unreachable!("direction {o:?} is in the table but not read"),
        };
        let wait_us = r.int(&WAIT_US)?;
        let rate = r.opt_rate(&RATE)?;
        let omit_s = r.opt_float(&OMIT_S)?.filter(|&o| o > 0.0);
        let nodelay = r.flag(&NODELAY)?;
        let sndbuf = r.opt_int(&SNDBUF)?;
        let rcvbuf = r.opt_int(&RCVBUF)?;
        let tos = super::tos(&mut r)?;
        let congestion = congestion(&mut r)?;
        let client_bind = bind_addr(&mut r, CLIENT_BIND.name)?;
        let server_bind = bind_addr(&mut r, SERVER_BIND.name)?;
        let rcvlowat = r.opt_int(&RCVLOWAT)?;
        let mss = super::mss(&mut r)?;
        let payload = match r.choice(&PAYLOAD)? {
            "random" => Payload::Random,
            "zeros" => Payload::Zeros,
            o => unreachable!("payload {o:?} is in the table but not read"),
        };
        let payload_file = r
            .string(PAYLOAD_FILE.name)?
            .map(|f| payload_file_name(&f).map(|_| f))
            .transpose()?;
        if payload_file.is_some() && payload == Payload::Zeros {
            return Err(ParamError::new(
                PAYLOAD_FILE.name,
                "the writes carry the file: give payload_file or payload zeros, not both",
            ));
        }
        let zerocopy = r.flag(&ZEROCOPY)?;
        let interval_ms = r.int(&INTERVAL_MS)? as u32;
        let threads = r.opt_int(&THREADS)?.map(|t| t as u32);
        let cpus = r.cpu_list(CPUS.name)?;
        let server_cpus = r.cpu_list(SERVER_CPUS.name)?;
        let (probe_ms, probe_bytes, clocks) =
            ProbeParams::read(&mut r, [&PROBE_MS, &PROBE_BYTES, &CLOCKS])?;
        r.finish()?;

        let (count, duration_s) = bound(
            count,
            duration_s,
            &COUNT,
            (
                msg_bytes as u128 * streams as u128,
                "count x msg_bytes x streams",
            ),
            limits,
        )?;
        // The writes' pace (`wait_us`, or what `rate` gives each stream)
        // against the count or duration, in one place with udp_stream's.
        Self::pace_of(msg_bytes, streams, wait_us, rate).within(count, duration_s, limits)?;
        ProbeParams::beside(probe_ms, probe_bytes, clocks, duration_s, limits)?;
        super::omit_within(omit_s, duration_s)?;
        Ok(StreamParams {
            msg_bytes,
            read_bytes,
            count,
            duration_s,
            recv_count,
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
            payload_file,
            mss,
            probe_ms,
            probe_bytes,
            clocks,
            rate,
            omit_s,
            threads,
            cpus,
            server_cpus,
            zerocopy,
        })
    }
}

/// Checks that `name` is a plain file name, as `payload_file` must be: not
/// empty, at most 255 bytes, no `/` or NUL, not starting with `.` (no
/// path, no parent, no hidden file), so it can only name a file directly
/// in the directory the agent's operator allowed.
pub fn payload_file_name(name: &str) -> Result<(), ParamError> {
    let bad = name.is_empty()
        || name.len() > 255
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(ParamError::new(
            PAYLOAD_FILE.name,
            format!(
                "must be a file name in the sending agent's --payload-dir (no path, not starting with '.'), got {name:?}"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serde_json::Value;

    fn parse(v: Value) -> Result<StreamParams, ParamError> {
        StreamParams::parse(&v, &Limits::default())
    }

    /// 99999999999999999999 messages was "must be a whole number, got
    /// 1e+20" (issue 45, item 16): a whole number beyond 64 bits is too
    /// large, and says so; a fraction is still not whole.
    #[test]
    fn a_count_beyond_64_bits_is_too_large_not_fractional() {
        let big: Value = serde_json::from_str(r#"{"count": 99999999999999999999}"#).unwrap();
        let e = parse(big).unwrap_err();
        assert_eq!(e.param, "count");
        assert!(
            e.message
                .starts_with("too large: at most 18446744073709551615, got "),
            "{}",
            e.message
        );
        let e = parse(json!({"count": 2.5})).unwrap_err();
        assert!(
            e.message.starts_with("must be a whole number"),
            "{}",
            e.message
        );
        let e = parse(json!({"count": -3})).unwrap_err();
        assert!(
            e.message.starts_with("must not be negative"),
            "{}",
            e.message
        );
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
    fn the_end_with_fewer_buffers_decides_how_much_moves() {
        let p = parse(json!({"msg_bytes": 1024, "count": 100, "recv_count": 50})).unwrap();
        assert_eq!(p.bytes_per_stream(), Some(51200));
        assert_eq!(p.limited_by(), Some("receiver"));
        let p = parse(json!({"msg_bytes": 1024, "count": 10, "recv_count": 50})).unwrap();
        assert_eq!(p.bytes_per_stream(), Some(10240));
        assert_eq!(p.limited_by(), Some("sender"));
        // Buffers of the receiver's own size: 40 reads of 512 = 20 writes of 1024.
        let p = parse(json!({"msg_bytes": 1024, "read_bytes": 512, "count": 20, "recv_count": 40}))
            .unwrap();
        assert_eq!(p.limited_by(), Some("equal"));
        let p = parse(json!({"duration_s": 1, "recv_count": 8, "read_bytes": 1000})).unwrap();
        assert_eq!(p.bytes_per_stream(), Some(8000));
        assert_eq!(p.limited_by(), Some("receiver"));
        assert_eq!(parse(json!({"count": 5})).unwrap().limited_by(), None);
        assert_eq!(
            parse(json!({"recv_count": 0})).unwrap_err().param,
            "recv_count"
        );
    }

    #[test]
    fn payload_file_is_a_plain_name_only() {
        let p = parse(json!({"payload_file": "testdata-10M.dat"})).unwrap();
        assert_eq!(p.payload_file.as_deref(), Some("testdata-10M.dat"));
        for bad in [
            "",
            "../etc/passwd",
            "a/b",
            ".hidden",
            "/etc/passwd",
            "a\\b",
            "a\0b",
        ] {
            let e = parse(json!({"payload_file": bad})).unwrap_err();
            assert_eq!(e.param, "payload_file", "{bad:?}: {e}");
        }
        let e = parse(json!({"payload_file": "x", "payload": "zeros"})).unwrap_err();
        assert_eq!(e.param, "payload_file");
        assert_eq!(
            parse(json!({"payload_file": 1})).unwrap_err().param,
            "payload_file"
        );
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
    fn a_probe_flow_is_asked_for_by_probe_ms_and_kept_within_the_limits() {
        assert_eq!(parse(json!({})).unwrap().probe(), None);
        let p = parse(json!({"probe_ms": 5, "duration_s": 2})).unwrap();
        let pp = p.probe().unwrap();
        assert_eq!((pp.probe_ms, pp.probe_bytes), (5.0, 64));
        assert_eq!(pp.lead_s(), 0.2);
        assert_eq!(pp.probes(2.2), 440);
        for (v, text) in [
            (json!({"probe_ms": 0.5}), "between 1 and 1000"),
            (json!({"probe_ms": 1001}), "between 1 and 1000"),
            (json!({"probe_ms": 5, "probe_bytes": 47}), "between 48"),
        ] {
            let e = parse(v.clone()).expect_err(&v.to_string());
            assert!(e.message.contains(text), "{v}: {e}");
        }
        let capped = Limits {
            max_udp_bits_per_second: Some(50_000.0),
            max_count: 1000,
            ..Limits::default()
        };
        let e = StreamParams::parse(&json!({"probe_ms": 5, "duration_s": 1}), &capped).unwrap_err();
        assert_eq!(e.param, "probe_ms", "{e}");
        assert!(e.message.contains("UDP rate limit of 0.05 Mbit/s"), "{e}");
        // A count-bounded test may last the agent's whole time limit.
        let e = StreamParams::parse(&json!({"probe_ms": 50}), &capped).unwrap_err();
        assert!(e.message.contains("1220 probes in 61 s"), "{e}");
        StreamParams::parse(&json!({"probe_ms": 50, "duration_s": 10}), &capped).unwrap();
    }

    #[test]
    fn a_rate_is_checked_against_the_count_or_time_as_udp_streams_is() {
        // 20 Mbit/s over 4 streams of 64 KiB writes: each stream writes every
        // 4 x 524288 bits / 20e6 = 104.8576 ms.
        let p = parse(json!({"rate": "20M", "streams": 4, "msg_bytes": 65536, "duration_s": 2}))
            .unwrap();
        assert!(
            (p.write_wait_us() - 104857.6).abs() < 1e-6,
            "{}",
            p.write_wait_us()
        );
        // wait_us when it is the slower.
        let p = parse(json!({"rate": "20M", "wait_us": 200000, "duration_s": 2})).unwrap();
        assert_eq!(p.write_wait_us(), 200000.0);
        // One 128 KiB write in the test's 10 s: no rate to speak of.
        let e = parse(json!({"rate": 2, "duration_s": 10})).unwrap_err();
        assert_eq!(e.param, "rate", "{e}");
        assert!(
            e.message.starts_with(
                "2 bit/s is one 131072-byte write every 524288 s, fewer than 2 in the test's \
                 10 s: give rate 210k or more"
            ),
            "{e}"
        );
        assert!(parse(json!({"rate": "210k", "duration_s": 10})).is_ok());
        let e = parse(json!({"rate": "500k", "streams": 4, "duration_s": 10})).unwrap_err();
        assert!(
            e.message.contains("131072-byte write on each of 4 streams"),
            "{e}"
        );
        assert!(e.message.contains("give rate 839k or more"), "{e}");
        // A count at a rate past the agent's time: 1024 writes of 128 KiB at
        // 1 Mbit/s take 1074 s, and the agent would stop it at 60.
        let e = parse(json!({"rate": "1M"})).unwrap_err();
        assert_eq!(e.param, "rate", "{e}");
        assert!(
            e.message
                .contains("in 1073.7 s, above the agent's limit of 60 s"),
            "{e}"
        );
        assert!(e.message.contains("give rate 17.9M or more"), "{e}");
        assert_eq!(parse(json!({"rate": "17.9M"})).unwrap().count, Some(1024));
        assert_eq!(parse(json!({"rate": "17.8M"})).unwrap_err().param, "rate");
        // wait_us alone: 2 writes in the time, as for a datagram.
        let e = parse(json!({"wait_us": 600000, "duration_s": 1})).unwrap_err();
        assert_eq!(e.param, "wait_us", "{e}");
        assert!(e.message.contains("wait at most 500000 us"), "{e}");
    }

    #[test]
    fn threads_and_cpu_lists_are_read_and_bounded() {
        let p = parse(json!({})).unwrap();
        assert_eq!(
            (p.threads, p.cpus_of(false), p.cpus_of(true)),
            (None, ("cpus", None), ("server_cpus", None))
        );
        let p = parse(json!({"threads": 2, "cpus": 1, "server_cpus": "0,2-3"})).unwrap();
        assert_eq!(p.threads, Some(2));
        assert_eq!(p.cpus_of(false), ("cpus", Some(&[1][..])));
        assert_eq!(p.cpus_of(true), ("server_cpus", Some(&[0, 2, 3][..])));
        // The agent's stream limit bounds the threads (its CPUs, the agent).
        let e = parse(json!({"threads": 65})).unwrap_err();
        assert_eq!(e.param, "threads");
        assert!(e.message.contains("(the agent's limit)"), "{e}");
        assert_eq!(parse(json!({"threads": 0})).unwrap_err().param, "threads");
        let e = parse(json!({"server_cpus": "2-1"})).unwrap_err();
        assert_eq!(e.to_string(), "server_cpus: the range 2-1 runs backwards: give CPU numbers as taskset -c does (1, 0,2-3), got \"2-1\"");
        assert_eq!(parse(json!({"cpus": "x"})).unwrap_err().param, "cpus");
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
