//! `tcp_info`: what TCP itself saw on one side of a `tcp_stream`, from
//! Linux's TCP_INFO (issue 43), in that side's summary (new key; results
//! from agents before it have none and still open). The per-interval
//! series are raw samples (`tcp_min_rtt_us`, `tcp_busy_pm`, ...: see
//! [`crate::frame::SampleKind`]); this is their sum over the test, what
//! the limit's verdict ([`crate::verdict::tcp`]) reads.
//!
//! A figure the kernel's TCP_INFO does not have (an older kernel returns a
//! shorter struct) is null, never 0, and named once in `missing`; a side
//! whose host has no TCP_INFO at all (Windows, macOS) has no `tcp_info`.
//!
//! Times: the sending figures cover each sending connection from its
//! first write to its last (summed over the connections, `send_seconds`);
//! the limited times are the kernel's own (`tcpi_busy_time`,
//! `tcpi_rwnd_limited`, `tcpi_sndbuf_limited`, counted in jiffies: a few
//! ms of resolution) over that time.

use serde::{Deserialize, Serialize};

/// One side's TCP_INFO figures (sending ones when it sent, receiving ones
/// when it received; `direction` both: each).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpInfoSummary {
    /// Bytes of `struct tcp_info` this host's kernel returned.
    pub kernel_bytes: u32,
    /// The TCP_INFO fields this kernel lacks (their figures and series
    /// are absent, not zero), e.g. `tcpi_bytes_retrans`; empty when none.
    #[serde(default)]
    pub missing: Vec<String>,
    /// Sending connections' time covered, seconds (summed over them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_seconds: Option<f64>,
    /// Share (0 to 1) of that time the connections had data in flight or
    /// queued (`tcpi_busy_time`, which includes the two limited times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<f64>,
    /// Share of that time the receiver's window held the sender back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_share: Option<f64>,
    /// Share of that time busy and limited by neither by the kernel's
    /// count while the receiver's window was smaller than the congestion
    /// window (`tcpi_snd_wnd` below `tcpi_snd_cwnd` x MSS, per interval):
    /// the window in use was the receiver's. The kernel counts a
    /// connection receive-window limited only while a segment waits for
    /// the window; this is the rest of the time that window bound it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_bound_share: Option<f64>,
    /// Share of that time the send buffer held the sender back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_share: Option<f64>,
    /// Share of that time busy and limited by neither by the kernel's
    /// count while the bytes in flight stayed under half of both windows
    /// (per interval): the sender had nothing more in its buffer to send
    /// (it was busy, so the application had queued data), the send
    /// buffer's rest of the time, as `rwnd_bound_share` is the window's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_bound_share: Option<f64>,
    /// Share of the intervals whose delivery rate the kernel marked
    /// application-limited (`tcpi_delivery_rate_app_limited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_limited_share: Option<f64>,
    /// Smallest round trip any sending connection saw (`tcpi_min_rtt`),
    /// us: the path's round trip without a queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<f64>,
    /// Mean smoothed round trip over the sending intervals (`tcpi_rtt`),
    /// us: the round trip under this load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_us: Option<f64>,
    /// Mean congestion window over the sending intervals, segments (all
    /// sending connections together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<f64>,
    /// The sending MSS (`tcpi_snd_mss`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_mss: Option<u32>,
    /// Median over the sending intervals of the connections' delivery
    /// rates summed, bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_bits_per_second: Option<f64>,
    /// Bytes the sending connections sent, retransmissions included
    /// (`tcpi_bytes_sent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<u64>,
    /// Of those, bytes retransmitted (`tcpi_bytes_retrans`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_retrans: Option<u64>,
    /// Reordering events the sending connections saw (`tcpi_reord_seen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reord_seen: Option<u64>,
    /// Largest window the receiver advertised, as the sender had it
    /// (`tcpi_snd_wnd`), bytes, one connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd_max: Option<u64>,
    /// Receiving: the largest window this side advertised (`tcpi_rcv_wnd`),
    /// bytes, one connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_wnd_max: Option<u64>,
    /// Receiving: the largest receive space autotuning reached
    /// (`tcpi_rcv_space`), bytes, one connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_space_max: Option<u64>,
    /// Receiving: the most bytes waiting in a receive queue at an
    /// interval's sample (SIOCINQ), one connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_queue_max: Option<u64>,
    /// Receiving: the mean of those samples, bytes (the largest
    /// connection's): a reader that keeps up holds it near 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_queue_mean: Option<f64>,
}

impl TcpInfoSummary {
    /// The `tcp_info` object of a side's summary, if it has one.
    pub fn of(summary: &serde_json::Value) -> Option<TcpInfoSummary> {
        serde_json::from_value(summary.get("tcp_info")?.clone()).ok()
    }

    /// A sending side's: it has the limited times.
    pub fn sent(&self) -> bool {
        self.send_seconds.is_some_and(|s| s > 0.0)
    }
}
