//! `stamp`: what a STAMP Session-Sender measured toward a reflector (RFC
//! 8762): the round trip with the reflector's own time taken out, the two
//! one-way delays as the two clocks read them, loss, reordering,
//! duplicates, and what the reflector reported of our packets (the TTL it
//! received them with; the DSCP and ECN with RFC 8972's Class of Service
//! TLV).

use super::Stats;
use serde::{Deserialize, Serialize};

/// The sending agent's summary (the only side).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StampSummary {
    /// The target as the plan gave it, and the address it resolved to.
    pub target: String,
    pub peer: String,
    /// Authenticated mode (HMAC-SHA-256).
    pub auth: bool,
    /// Our timestamps' format, `ntp` or `ptp`.
    pub clock: String,
    pub pkt_bytes: u64,
    /// The Session-Sender Identifier our packets carried (RFC 8972).
    pub ssid: u16,
    /// Test packets sent.
    pub sent: u64,
    /// Packets answered within `timeout_ms` (each once).
    pub answered: u64,
    /// Packets with no answer within `timeout_ms`.
    pub lost: u64,
    /// Answers that came after a later packet's answer.
    pub out_of_order: u64,
    /// Answers to a packet already answered.
    pub duplicates: u64,
    /// Answers past `timeout_ms` (their packet counted lost).
    pub late: u64,
    /// Answers whose HMAC was wrong (authenticated mode): dropped.
    pub bad_hmac: u64,
    /// Datagrams that were not an answer to this session's packets
    /// (malformed, another SSID, a sequence number or timestamp we never
    /// sent: another sender's packets): dropped.
    pub foreign: u64,
    /// ICMP errors the kernel reported on the socket (a closed port).
    pub icmp_errors: u64,
    /// Round trip `(t4 - t1) - (t3 - t2)`, us: the reflector's own time
    /// taken out (null without an answer).
    pub rtt_us: Option<Stats>,
    /// RFC 3550's jitter estimator over the round trips, us.
    pub jitter_us: f64,
    /// One-way delays `t2 - t1` (forward, to the reflector) and `t4 - t3`
    /// (backward), us, as the two clocks read them: they hold the offset
    /// between the clocks (see `clock_offset_us`), so they mean a delay
    /// only when both clocks are synchronised well below it.
    pub forward_us: Option<Stats>,
    pub backward_us: Option<Stats>,
    /// The reflector's clock minus ours, us, estimated from the four
    /// timestamps (the project's clock fit, stats/src/clock.rs), and how
    /// far the truth may be from it (about half the smallest round trip).
    pub clock_offset_us: Option<f64>,
    pub clock_uncertainty_us: Option<f64>,
    /// The reflector's S bit: it says its clock is synchronised to UTC.
    pub reflector_synced: Option<bool>,
    /// The reflector's timestamps were PTP (its Z bit).
    pub reflector_ptp: Option<bool>,
    /// The TTL / hop limit our packets reached the reflector with (the
    /// Session-Sender TTL field of its last answer; 0 or 255 from some
    /// reflectors that do not read it).
    pub reflector_ttl: Option<u8>,
    /// The DSCP and ECN our packets reached the reflector with (its Class
    /// of Service TLV; null when not asked or not answered).
    pub reflector_dscp: Option<u8>,
    pub reflector_ecn: Option<u8>,
    /// From the first packet to the end of the last answer's wait.
    pub seconds: f64,
    /// Microseconds packets waited for this agent's `--max-udp-rate`.
    pub rate_capped_us: f64,
    /// The test ran to its end.
    pub complete: bool,
    /// Why it did not (null when complete).
    pub note: Option<String>,
}
