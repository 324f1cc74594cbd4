//! `latency_under_load`: the driving side's summary (it has all four
//! timestamps of every probe) and the serving side's.
//!
//! "Up" is the driving agent to the serving agent, "down" the way back;
//! `download` is the phase where the serving agent sends.

use super::{Stats, Timestamps};
use crate::params::LulPhase;
use serde::{Deserialize, Serialize};

/// One direction of the probe flow over one phase (or the whole test).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeFlow {
    /// Probes (up) or answers (down) sent this way.
    pub sent: u64,
    /// Distinct ones that arrived.
    pub received: u64,
    /// `sent - received`.
    pub lost: u64,
    /// Further copies of one that had already arrived.
    pub duplicates: u64,
    /// First copies that arrived after a later one.
    pub reordered: u64,
}

impl ProbeFlow {
    /// From what was sent and what the other end counted.
    pub fn new(sent: u64, received: u64, duplicates: u64, reordered: u64) -> ProbeFlow {
        ProbeFlow {
            sent,
            received,
            lost: sent.saturating_sub(received),
            duplicates,
            reordered,
        }
    }

    /// Lost as a percentage of sent (0 when nothing was sent).
    pub fn loss_pct(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 * 100.0 / self.sent as f64
        }
    }
}

/// What the load added over the idle phase, us: loaded minus idle.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AddedLatency {
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
}

/// One phase as the driving side measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LulPhaseSummary {
    pub phase: LulPhase,
    /// How long the phase ran on the driving side: its planned length, and
    /// for a loaded phase the wait for the last bytes of its streams.
    pub seconds: f64,
    /// TCP payload the driving agent received (download load), and its rate
    /// over the receiver's time from the phase's start to its last byte.
    pub down_bytes: u64,
    pub down_bits_per_second: f64,
    /// TCP payload the serving agent received (upload load), and its rate.
    pub up_bytes: u64,
    pub up_bits_per_second: f64,
    /// Round trips of the answered probes (the responder's own time taken out).
    pub rtt_us: Option<Stats>,
    /// One-way delays, driving to serving agent and back (see `clock`).
    pub up_us: Option<Stats>,
    pub down_us: Option<Stats>,
    /// Over the idle phase's (null for the idle phase, or without probes).
    pub added_rtt_us: Option<AddedLatency>,
    pub added_up_us: Option<AddedLatency>,
    pub added_down_us: Option<AddedLatency>,
    /// The probe flow each way. Up counts are the serving agent's; when it
    /// did not send them (see `note`), up `received` and down `sent` count
    /// the probes that were answered.
    pub probes_up: ProbeFlow,
    pub probes_down: ProbeFlow,
    /// Slots of the probe schedule left out: the prober woke more than
    /// 100 ms late (a busy machine) and resumed at the next slot rather
    /// than sending a burst. `probes_up.sent + probes_skipped` is the
    /// phase's length / `probe_ms`.
    pub probes_skipped: u64,
}

/// Which clocks the one-way delays rest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockBasis {
    /// Offset and drift estimated from the probes.
    Estimated,
    /// The agents' system clocks, taken to agree (plan option `clocks: synced`).
    Synced,
}

/// How the serving agent's clock relates to the driving agent's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LulClock {
    pub basis: ClockBasis,
    /// Serving minus driving agent's system clock at the first probe, us
    /// (0 when synced).
    pub offset_us: f64,
    /// How fast the offset grows, parts per million (0 when synced).
    pub drift_ppm: f64,
    /// How far an absolute one-way delay may be off, us: when estimated, how
    /// far the true offset may be from the fitted line anywhere in the test
    /// (about half the smallest round trip: an asymmetric path looks like an
    /// offset; more where the drift is loosely pinned), 0 when synced.
    /// Changes of a one-way delay are not affected.
    pub uncertainty_us: f64,
    /// The smallest round trip of a probe, us.
    pub min_rtt_us: f64,
    /// Spread of the fastest probes' offsets about the fitted line, us.
    pub residual_us: f64,
    /// Probes the fit used (the least-delayed each way, per window).
    pub probes_used: u64,
}

/// The `stream` of the raw probe series of a probe flow beside a bulk test
/// (`probe_ms`): apart from the test's own series (streams from 0 up).
pub const BESIDE_STREAM: u16 = u16::MAX;

/// `latency_under_load`, the driving side (the step's summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LulSummary {
    /// The phases measured, in the order they ran.
    pub phases: Vec<LulPhaseSummary>,
    /// Null when no probe was answered.
    pub clock: Option<LulClock>,
    /// The probe flow over the whole test, gaps included (what a firewall
    /// counter on the probe port sees).
    pub probes_up: ProbeFlow,
    pub probes_down: ProbeFlow,
    /// Schedule slots left out over the whole test (see the phases').
    pub probes_skipped: u64,
    pub probe_ms: f64,
    pub probe_bytes: u64,
    /// TCP streams each way (`streams` in the parameters; in a summary
    /// `streams` is a stream test's list of connections).
    pub streams_per_direction: u32,
    /// From the first probe to the end.
    pub seconds: f64,
    /// Datagrams the serving agent got from anyone else (null: it did not say).
    pub foreign: Option<u64>,
    /// The serving agent's UDP address.
    pub peer: String,
    /// Every phase ran to its end.
    pub complete: bool,
    /// Why not (null when complete).
    pub note: Option<String>,
    /// Microseconds probes waited for this agent's `--max-udp-rate`.
    pub rate_capped_us: f64,
    /// The driving agent's system clock (CLOCK_REALTIME, ns since 1970)
    /// when its probe clock started: the `send_time_ns` and `arrival_ns`
    /// samples are ns since then.
    pub base_ns: u64,
    /// The same of the serving agent (null: it did not say): the
    /// `peer_recv_ns` and `peer_send_ns` samples are ns since then.
    pub peer_base_ns: Option<u64>,
    /// Where the receive times of probes (`t2`) and answers (`t4`) come
    /// from: `kernel` when both agents took every one from the kernel
    /// (SO_TIMESTAMPNS: the datagram's arrival, not the thread's wake-up,
    /// so a busy host's scheduling is not in the delays), else `user`
    /// (results before kernel timestamps: `user`).
    #[serde(default)]
    pub timestamps: Timestamps,
    /// The `stream` of this flow's raw probe series (`rtt_ns`, `sequence`,
    /// the four timestamps, `probe_phase`) on the driving side: 0 for
    /// `latency_under_load`, [`BESIDE_STREAM`] beside a bulk test.
    #[serde(default)]
    pub samples_stream: u16,
}

/// One phase of the serving side: what it received of the upload load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LulServerPhase {
    pub phase: LulPhase,
    pub up_bytes: u64,
    /// From the phase's start to the last byte received.
    pub up_seconds: f64,
    /// Download load this side sent.
    pub down_sent_bytes: u64,
}

/// `latency_under_load`, the serving side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LulServerSummary {
    pub phases: Vec<LulServerPhase>,
    /// Probes received from the bound peer (distinct) and answered.
    pub probes_received: u64,
    pub answered: u64,
    /// Datagrams from the bound peer that were not probes of this test.
    pub bad: u64,
    /// Datagrams from anyone else (never answered).
    pub foreign: u64,
    /// The driving agent's UDP address.
    pub peer: String,
    pub complete: bool,
    pub note: Option<String>,
    /// Microseconds answers waited for this agent's `--max-udp-rate`.
    pub rate_capped_us: f64,
}
