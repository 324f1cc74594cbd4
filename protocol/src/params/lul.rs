//! Parameters of `latency_under_load` (the bufferbloat test, crusader's and
//! flent RRUL's): four phases of TCP load, in this order and with a gap
//! between each, while a UDP probe flow runs through all of them.
//!
//! | phase | load |
//! |---|---|
//! | `idle` | none: the path's latency at rest |
//! | `download` | `streams` TCP streams, serving agent to driving agent |
//! | `upload` | `streams` TCP streams, driving agent to serving agent |
//! | `both` | both at once |
//!
//! "Up" is always the driving agent to the serving agent (the way probes
//! go), "down" the way back.
//!
//! The probe datagram (the same size both ways, `probe_bytes`, so a reply
//! is never larger than its probe) extends the meshperf UDP header:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 28 | meshperf header (`params::udp`): type `P` probe or `A` answer, token, sequence, `t1` = requester's send time (ns since its test clock's start) |
//! | 28 | 1 | phase the requester was in when it sent: 0 idle, 1 download, 2 upload, 3 both, 4 between phases |
//! | 29 | 3 | zero |
//! | 32 | 8 | `t2`: the responder received the probe (ns since its test clock's start); 0 in a probe |
//! | 40 | 8 | `t3`: the responder sent the answer (ns, same clock); 0 in a probe |
//!
//! The rest is padding up to `probe_bytes`.

use super::rr::bind_addr;
use super::spec::lul::*;
use super::spec::{ParamSpec, CLIENT_BIND, SERVER_BIND};
use super::{Limits, ParamError, Reader, StreamParams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::net::IpAddr;

/// The probe sizes' ends, defined with the parameter table that bounds
/// `probe_bytes` by them.
pub use super::spec::lul::{PROBE_MAX_LEN, PROBE_MIN_LEN};
/// The phase byte of a probe sent between two phases.
pub const GAP_PHASE: u8 = 4;

/// A phase of the test, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LulPhase {
    Idle,
    Download,
    Upload,
    Both,
}

impl LulPhase {
    /// The phase a bulk test's load is, seen from the driving agent (a
    /// stream test's probes beside it, `probe_ms`).
    pub fn loaded_by(d: super::Direction) -> LulPhase {
        match d {
            super::Direction::Send => LulPhase::Upload,
            super::Direction::Receive => LulPhase::Download,
            super::Direction::Both => LulPhase::Both,
        }
    }

    /// Every phase, in the order they run (index = the probe's phase byte).
    pub const ALL: [LulPhase; 4] = [
        LulPhase::Idle,
        LulPhase::Download,
        LulPhase::Upload,
        LulPhase::Both,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LulPhase::Idle => "idle",
            LulPhase::Download => "download",
            LulPhase::Upload => "upload",
            LulPhase::Both => "both",
        }
    }

    /// The probe's phase byte.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Whether the serving agent sends in this phase.
    pub fn down(self) -> bool {
        matches!(self, LulPhase::Download | LulPhase::Both)
    }

    /// Whether the driving agent sends in this phase.
    pub fn up(self) -> bool {
        matches!(self, LulPhase::Upload | LulPhase::Both)
    }
}

/// Where one-way delays take their clocks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clocks {
    /// Offset and drift are estimated from the probes (NTP-style, the
    /// least-delayed probes, a line over the test); a constant asymmetry of
    /// the path cannot be told from offset, so absolute one-way delays carry
    /// an uncertainty of about half the smallest round trip, their changes
    /// do not.
    #[default]
    Estimate,
    /// The agents' system clocks agree (one host, or PTP): used directly.
    Synced,
}

/// A probe flow beside a bulk test: `probe_ms` on `tcp_stream` (with its
/// `probe_bytes` and `clocks`), the same datagrams and exchange as this
/// kind's, so the stream reports the latency under its own load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeParams {
    /// Time between two probes, ms.
    pub probe_ms: f64,
    /// Probe datagram size, bytes (answers are the same size).
    pub probe_bytes: u64,
    pub clocks: Clocks,
}

impl ProbeParams {
    /// Reads `probe_ms` (absent: no probe flow), `probe_bytes` and
    /// `clocks` by the kind's table entries (the last two apply only with
    /// the first).
    pub(crate) fn read(
        r: &mut Reader,
        [ms, bytes, clocks]: [&ParamSpec; 3],
    ) -> Result<(Option<f64>, u64, Clocks), ParamError> {
        Ok((r.opt_float(ms)?, r.int(bytes)?, read_clocks(r, clocks)?))
    }

    /// The probe flow `probe_ms` asks for beside a bulk test (`None`: no
    /// probe flow), from a kind's `probe_ms`, `probe_bytes` and `clocks`.
    pub fn of(probe_ms: Option<f64>, probe_bytes: u64, clocks: Clocks) -> Option<ProbeParams> {
        probe_ms.map(|probe_ms| ProbeParams {
            probe_ms,
            probe_bytes,
            clocks,
        })
    }

    /// [`ProbeParams::of`], checked against `limits` over the lead and a
    /// test of `duration_s` (a count-bounded test may run up to the
    /// agent's time limit).
    pub(crate) fn beside(
        probe_ms: Option<f64>,
        probe_bytes: u64,
        clocks: Clocks,
        duration_s: Option<f64>,
        limits: &Limits,
    ) -> Result<Option<ProbeParams>, ParamError> {
        let probe = ProbeParams::of(probe_ms, probe_bytes, clocks);
        if let Some(pp) = &probe {
            let secs = pp.lead_s() + duration_s.unwrap_or(limits.max_duration_s);
            pp.within(secs, limits)?;
        }
        Ok(probe)
    }

    /// How long the flow probes the idle path before a bulk test's load
    /// starts (its `idle` phase, the baseline of the added latency): 20
    /// probes, from 0.2 s to 2 s.
    pub fn lead_s(&self) -> f64 {
        (self.probe_ms * 20.0 / 1e3).clamp(0.2, 2.0)
    }

    /// The flow's rate one way, bits per second of UDP payload.
    pub fn bits_per_second(&self) -> f64 {
        self.probe_bytes as f64 * 8.0 * 1e3 / self.probe_ms
    }

    /// Probes sent over `seconds`.
    pub fn probes(&self, seconds: f64) -> u64 {
        (seconds * 1e3 / self.probe_ms).ceil() as u64
    }

    /// The probes over `seconds` within the agent's count and UDP rate.
    pub fn within(&self, seconds: f64, limits: &Limits) -> Result<(), ParamError> {
        let probes = self.probes(seconds);
        if probes > limits.max_count {
            return Err(ParamError::new(
                PROBE_MS.name,
                format!(
                    "{probes} probes in {seconds} s is above the agent's limit of {} datagrams",
                    limits.max_count
                ),
            ));
        }
        if let Some(max) = limits.max_udp_bits_per_second {
            let rate = self.bits_per_second();
            if rate > max {
                return Err(ParamError::new(
                    PROBE_MS.name,
                    format!(
                        "{}-byte probes every {} ms are {:.3} Mbit/s, above the agent's UDP rate \
                         limit of {} Mbit/s",
                        self.probe_bytes,
                        self.probe_ms,
                        rate / 1e6,
                        max / 1e6
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn read_clocks(r: &mut Reader, spec: &ParamSpec) -> Result<Clocks, ParamError> {
    Ok(match r.choice(spec)? {
        "estimate" => Clocks::Estimate,
        "synced" => Clocks::Synced,
        o => unreachable!("clocks {o:?} is in the table but not read"),
    })
}

/// Parameters of `latency_under_load`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LulParams {
    pub idle_s: f64,
    pub download_s: f64,
    pub upload_s: f64,
    pub both_s: f64,
    /// Quiet time between two phases (queues drain).
    pub gap_s: f64,
    /// TCP streams per direction.
    pub streams: u32,
    /// Bytes per write of the load.
    pub msg_bytes: u64,
    /// Time between two probes, ms.
    pub probe_ms: f64,
    /// Probe datagram size, bytes (answers are the same size).
    pub probe_bytes: u64,
    pub clocks: Clocks,
    /// Sample interval of the load's per-stream bytes, ms.
    pub interval_ms: u32,
    #[serde(default)]
    pub client_bind: Option<IpAddr>,
    #[serde(default)]
    pub server_bind: Option<IpAddr>,
}

impl LulParams {
    /// Parses and validates `latency_under_load` parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let idle_s = r.float(&IDLE_S)?;
        let download_s = r.float(&DOWNLOAD_S)?;
        let upload_s = r.float(&UPLOAD_S)?;
        let both_s = r.float(&BOTH_S)?;
        let gap_s = r.float(&GAP_S)?;
        let streams = r.int(&STREAMS)? as u32;
        let msg_bytes = r.int(&MSG_BYTES)?;
        let probe_ms = r.float(&PROBE_MS)?;
        let probe_bytes = r.int(&PROBE_BYTES)?;
        let clocks = read_clocks(&mut r, &CLOCKS)?;
        let interval_ms = r.int(&INTERVAL_MS)? as u32;
        let client_bind = bind_addr(&mut r, CLIENT_BIND.name)?;
        let server_bind = bind_addr(&mut r, SERVER_BIND.name)?;
        r.finish()?;
        let p = LulParams {
            idle_s,
            download_s,
            upload_s,
            both_s,
            gap_s,
            streams,
            msg_bytes,
            probe_ms,
            probe_bytes,
            clocks,
            interval_ms,
            client_bind,
            server_bind,
        };
        p.within(limits)?;
        Ok(p)
    }

    /// The limits no single parameter shows: the whole test within the
    /// agent's duration, the probes within its count and UDP rate.
    fn within(&self, limits: &Limits) -> Result<(), ParamError> {
        let total = self.total_s();
        if total > limits.max_duration_s {
            // The longest phase is the one to shorten.
            let longest = LulPhase::ALL
                .into_iter()
                .rev()
                .max_by(|a, b| self.seconds(*a).total_cmp(&self.seconds(*b)))
                .expect("four phases");
            return Err(ParamError::new(
                PHASE_SPECS[longest as usize].name,
                format!(
                    "idle_s + download_s + upload_s + both_s + 3 x gap_s = {total} s is above \
                     the agent's limit of {} s",
                    limits.max_duration_s
                ),
            ));
        }
        self.probe().within(total, limits)
    }

    /// How long `phase` runs, s.
    pub fn seconds(&self, phase: LulPhase) -> f64 {
        match phase {
            LulPhase::Idle => self.idle_s,
            LulPhase::Download => self.download_s,
            LulPhase::Upload => self.upload_s,
            LulPhase::Both => self.both_s,
        }
    }

    /// The whole test: four phases and three gaps, s.
    pub fn total_s(&self) -> f64 {
        LulPhase::ALL.iter().map(|p| self.seconds(*p)).sum::<f64>() + 3.0 * self.gap_s
    }

    /// Probes the test sends (one every `probe_ms` over [`Self::total_s`]).
    pub fn probes(&self) -> u64 {
        self.probe().probes(self.total_s())
    }

    /// The probe flow's parameters.
    pub fn probe(&self) -> ProbeParams {
        ProbeParams {
            probe_ms: self.probe_ms,
            probe_bytes: self.probe_bytes,
            clocks: self.clocks,
        }
    }

    /// Data connections the driving agent opens (the upload streams of
    /// the `upload` and `both` phases); the serving agent opens as many
    /// for the download streams.
    pub fn connections_per_side(&self) -> usize {
        2 * self.streams as usize
    }

    /// The load of `phase` in one direction as `tcp_stream` parameters
    /// (duration-bounded, so the stream engine's own checks apply).
    pub fn stream_params(&self, phase: LulPhase, limits: &Limits) -> StreamParams {
        let v = json!({
            "msg_bytes": self.msg_bytes,
            "duration_s": self.seconds(phase),
            "streams": self.streams,
            "interval_ms": self.interval_ms,
        });
        StreamParams::parse(&v, limits).expect("within the limits LulParams::parse checked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<LulParams, ParamError> {
        LulParams::parse(&v, &Limits::default())
    }

    #[test]
    fn defaults_make_a_test_of_about_30_s() {
        let p = parse(json!({})).unwrap();
        assert_eq!(p.total_s(), 29.0);
        assert_eq!(p.probe_ms, 5.0);
        assert_eq!(p.clocks, Clocks::Estimate);
        assert_eq!(p.probes(), 5800);
        let s = p.stream_params(LulPhase::Download, &Limits::default());
        assert_eq!((s.duration_s, s.streams), (Some(7.0), p.streams));
    }

    #[test]
    fn bad_values_are_refused_naming_the_parameter() {
        let cases = [
            (json!({"idle_s": 0}), "idle_s", "must be above 0"),
            (json!({"upload_s": 61}), "upload_s", "the agent's limit"),
            (json!({"gap_s": -1}), "gap_s", "between 0"),
            (json!({"probe_ms": 0.5}), "probe_ms", "between 1 and 1000"),
            (json!({"probe_ms": 1001}), "probe_ms", "between 1 and 1000"),
            (json!({"streams": 65}), "streams", "the agent's limit"),
            (json!({"probe_bytes": 47}), "probe_bytes", "between 48"),
            (json!({"clocks": "ntp"}), "clocks", "estimate or synced"),
            (
                json!({"idle_s": 10, "download_s": 20, "upload_s": 20, "both_s": 10}),
                "download_s",
                "3 x gap_s = 63 s is above the agent's limit of 60 s",
            ),
        ];
        for (v, param, text) in cases {
            let e = parse(v.clone()).expect_err(&v.to_string());
            assert_eq!(e.param, param, "{v}: {e}");
            assert!(e.message.contains(text), "{v}: {e}");
            assert!(!e.to_string().contains('\n'));
        }
        let capped = Limits {
            max_udp_bits_per_second: Some(50_000.0),
            ..Limits::default()
        };
        let e = LulParams::parse(&json!({"probe_ms": 5}), &capped).unwrap_err();
        assert_eq!(e.param, "probe_ms", "{e}");
        LulParams::parse(&json!({"probe_ms": 20}), &capped).unwrap();
    }
}
