//! The summary each side of a test reports in its `result` event: one typed
//! struct per kind family, so the keys scripts and the page read (a stable
//! public interface, docs/design.md "Public interfaces") are written down once.
//!
//! The engines build these and the agent sends `serde_json::to_value` of
//! them; the wire type (`msg::Event::Result`) and the result file keep a
//! plain JSON `summary`, so results from older agents still open. Field
//! order is key order (serde_json keeps it here), and key order is the
//! order of the CSV columns (`export::scalars`): do not reorder fields.
//!
//! | kind | struct |
//! |---|---|
//! | `tcp_stream`, `unix_stream` (both sides) | [`StreamSummary`] |
//! | `tcp_rr`, `unix_rr` (both sides) | [`RrSummary`] |
//! | `tcp_crr` (both sides) | [`CrrSummary`] |
//! | `udp_rr` requester (driving side) | [`UdpRrSummary`] |
//! | `udp_rr` responder (serving side) | [`UdpRrServerSummary`] |
//! | `udp_stream` (both sides) | [`UdpStreamSummary`] |
//! | `latency_under_load` driving side | [`LulSummary`] |
//! | `latency_under_load` serving side | [`LulServerSummary`] |
//! | `path` driving side (both directions) | [`PathSummary`] |
//! | `path` serving side (its direction) | [`PathServerSummary`] |
//! | `tcp_stream` (both sides, Linux): the `tcp_info` key | [`TcpInfoSummary`] |
//! | every kind, both sides: the `cpu` key, added by the agent as it reports | [`CpuSummary`] |
//! | every kind between two agents, both sides: the `link` key, added so | [`LinkSummary`] |
//!
//! `tcp_rr` and `udp_rr` keep separate structs because their keys come in
//! different orders (and so do their CSV columns). Keys only one transport
//! has sit in `#[serde(flatten)]` parts ([`TcpStreamSocket`], [`RrClient`],
//! ...) or are left out when `None`, exactly where the engines leave them
//! out; a field that is `null` on the wire is an `Option` without
//! `skip_serializing_if`.

mod cpu;
mod link;
mod lul;
mod path;
mod stamp;
mod tcp_info;
pub use cpu::CpuSummary;
pub use link::{speed_text, LinkSummary};
pub use lul::{
    AddedLatency, ClockBasis, LulClock, LulPhaseSummary, LulServerPhase, LulServerSummary,
    LulSummary, ProbeFlow, BESIDE_STREAM,
};
pub use path::{
    route_changed, MarkResult, PathDirection, PathHop, PathMtu, PathServerSummary, PathSummary,
    UNVERIFIED_FROM_MAX,
};
pub use stamp::StampSummary;
pub use tcp_info::TcpInfoSummary;

use crate::params::Direction;
use crate::plan::Transport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The statistics object of docs/design.md (`rtt_us`, `send_gap_us`,
/// `interarrival_us`): the statistics crate's summary itself, in the unit
/// the key that holds it names.
pub use meshperf_stats::stats::Summary as Stats;

/// Which way one connection of a stream test moved data, from the
/// reporting side's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamDir {
    /// This side wrote.
    #[default]
    Send,
    /// This side read.
    Recv,
}

/// `tcp_stream` and `unix_stream`: one side's figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamSummary {
    /// Bytes this side sent and received, all connections.
    pub bytes: u64,
    /// From the start to the last byte moved (EOF for a receiver), longest connection.
    pub seconds: f64,
    /// `bytes` * 8 / `seconds` (0 when `seconds` is 0).
    pub bits_per_second: f64,
    /// Bytes this side wrote.
    pub sent_bytes: u64,
    /// Bytes this side read.
    pub received_bytes: u64,
    /// TCP: seconds to the last write of the longest sending connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_seconds: Option<f64>,
    /// TCP: seconds to EOF of the longest receiving connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_seconds: Option<f64>,
    /// TCP: write calls that moved data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<u64>,
    /// Read calls that moved data.
    pub reads: u64,
    /// `received_bytes` / `reads` (0 without reads).
    pub avg_read_bytes: f64,
    /// TCP: milliseconds per MiB received (the Perl seed's figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms_per_mib: Option<f64>,
    /// One entry per connection, in index order.
    pub streams: Vec<StreamFigures>,
    /// TCP: retransmitted segments, all connections (TCP_INFO at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP: the sample interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u32>,
    /// Bytes per write.
    pub msg_bytes: u64,
    /// `unix` for `unix_stream`; absent for TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// TCP: parameters, peer and socket options as the kernel has them.
    #[serde(flatten)]
    pub tcp: Option<TcpStreamSocket>,
    // Keys added later go last, so a `--quiet` record's fields stay where
    // scripts found them.
    /// Milliseconds per read call that moved data, receiving time over
    /// reads (the Perl seed's "Average milliseconds"); absent when this
    /// side read nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms_per_read: Option<f64>,
    /// The receiving end's own count of `read_bytes` buffers per stream
    /// (socketslurp's), when the plan gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_count: Option<u64>,
    /// With `recv_count`: which end's buffers decided how much moved,
    /// `sender`, `receiver` or `equal` (socketsend: the end with fewer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// The file this side's writes carried (`payload_file`), read into
    /// memory before the test, and its length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_file_bytes: Option<u64>,
    /// `tcp_stream` with `probe_ms`, the driving side's: the UDP probe flow
    /// beside the streams, as `latency_under_load` reports it (phase `idle`:
    /// the path before the load started; then the loaded phase, `upload`,
    /// `download` or `both` by `direction`, with the streams' throughput).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<LulSummary>,
    /// One human line (sent/received bytes, seconds, MByte/s).
    pub line: String,
    /// The rate asked for, bits per second of payload per direction (absent:
    /// as fast as it goes); `bits_per_second` is the rate achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The ceiling the kernel paces each sending connection at
    /// (SO_MAX_PACING_RATE: its share of `rate` and 20% to catch up with),
    /// bits per second, on the sending side (absent: no `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate: Option<f64>,
    /// Warm-up left out of the figures, seconds: whole intervals, so it
    /// is `omit_s` rounded up to `interval_ms` (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_s: Option<f64>,
    /// The first intervals of every stream's `IntervalBytes` samples that
    /// are the warm-up: in the raw samples, not in the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_intervals: Option<u64>,
    /// Bytes moved during the warm-up (not in `bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_bytes: Option<u64>,
    /// `zerocopy`, a side that sent: its write calls made with
    /// MSG_ZEROCOPY, every one completed before the side reported (absent:
    /// no zero-copy sends, and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy_sends: Option<u64>,
    /// Of those, the ones the kernel sent from the payload's own pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy_zero_copied: Option<u64>,
    /// Of those, the ones the kernel copied after all
    /// (SO_EE_CODE_ZEROCOPY_COPIED: always on loopback, and on a device
    /// without scatter-gather).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy_copied: Option<u64>,
    /// Zero-copy send calls the kernel refused for want of option memory
    /// (ENOBUFS, `net.core.optmem_max` held by completions not read yet),
    /// made again once completions were read: none of their bytes lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy_enobufs: Option<u64>,
    /// TCP on Linux: what TCP_INFO saw over the test ([`TcpInfoSummary`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfoSummary>,
}

/// One connection of a stream test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamFigures {
    /// Connection index (the preamble's).
    pub index: u64,
    /// Which way this side moved data on it.
    pub dir: StreamDir,
    /// Bytes moved.
    pub bytes: u64,
    /// Read calls that moved data (0 when sending).
    pub reads: u64,
    /// TCP: write calls that moved data (0 when receiving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<u64>,
    /// Seconds from the start to the last byte moved (EOF when receiving).
    pub seconds: f64,
    /// TCP: first byte and TCP_INFO at the end.
    #[serde(flatten)]
    pub tcp: Option<StreamTcpInfo>,
}

/// The TCP-only figures of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamTcpInfo {
    /// Seconds from the start to the first byte moved.
    pub first_seconds: f64,
    /// Smoothed RTT from TCP_INFO at the end (null without TCP_INFO).
    pub rtt_us: Option<u32>,
    /// Congestion window in segments from TCP_INFO (null without).
    pub cwnd: Option<u32>,
    /// Retransmitted segments from TCP_INFO (null without).
    pub retransmits: Option<u32>,
}

/// `tcp_stream`: parameters, peer and socket options (null where not set
/// or not known).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpStreamSocket {
    /// Bytes per read call.
    pub read_bytes: u64,
    /// Who sends, from the driving agent's point of view.
    pub direction: Direction,
    /// The other agent's IP address.
    pub peer: String,
    /// Bytes the other side says it moved (its `done` line).
    pub peer_bytes: u64,
    /// SO_SNDBUF asked for.
    pub sndbuf_requested: Option<u64>,
    /// SO_RCVBUF asked for.
    pub rcvbuf_requested: Option<u64>,
    /// SO_SNDBUF the kernel has.
    pub sndbuf_actual: u64,
    /// SO_RCVBUF the kernel has.
    pub rcvbuf_actual: u64,
    /// TCP_NODELAY the kernel has.
    pub nodelay: bool,
    /// TOS byte / traffic class the kernel has.
    pub tos: Option<u32>,
    /// Congestion control the kernel has.
    pub congestion: Option<String>,
    /// SO_RCVLOWAT the kernel has.
    pub rcvlowat: u64,
    /// TCP_MAXSEG asked for.
    pub mss_requested: Option<u64>,
    /// Segment size the connection uses (TCP_MAXSEG, less TCP options).
    pub mss: Option<u32>,
}

/// `tcp_rr` and `unix_rr`: one side's figures. The driving side (the
/// requester) has the [`RrClient`] figures; the serving side only counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RrSummary {
    /// Transactions completed (requester) or answered (responder).
    pub count: u64,
    /// Requester: timeouts, bad answers, round trips and rates.
    #[serde(flatten)]
    pub client: Option<RrClient>,
    /// Request and response bytes moved, all transactions.
    pub bytes: u64,
    /// Bytes per request.
    pub req_bytes: u64,
    /// Bytes per response.
    pub resp_bytes: u64,
    /// Reads spun on instead of sleeping.
    pub busy_poll: bool,
    /// Requester: tcp_req's quiet-mode line ("resp_bytes; req_bytes;
    /// msg_count; loop_count; num_bad; time/frame us; Mbytes/s; ave time;
    /// min time; max time; num timeouts"); responder: one human line.
    pub line: String,
    /// `tcp_rr` requester: transactions the responder counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_count: Option<u64>,
    /// `unix` for `unix_rr`; absent for TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// Responder of a count-bounded test: 1 when the peer sent a request
    /// past the prepared count (the responder answers none of it, stops and
    /// closes), else 0. A real agent never does; absent on the requester.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_count: Option<u64>,
    /// `tcp_rr`: peer and socket options as the kernel has them.
    #[serde(flatten)]
    pub tcp: Option<TcpRrSocket>,
    /// `tcp_rr` with `flows` above 1: how the transactions spread over
    /// the flows; absent for one flow (and in results from before flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowFigures>,
}

/// `tcp_rr` and `tcp_crr` with `flows` above 1: one side's flows and the
/// transactions each completed (driving side) or answered (serving side).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FlowFigures {
    /// Concurrent connections.
    pub count: u32,
    /// This side's worker threads (each its own poll).
    pub threads: u32,
    /// Transactions of the flow with fewest.
    pub min: u64,
    /// The median flow's transactions.
    pub median: f64,
    /// Transactions of the flow with most.
    pub max: u64,
    /// Each flow's transactions, flow 0 first (they sum to the side's
    /// total); absent above [`FlowFigures::LISTED`] flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_flow: Option<Vec<u64>>,
}

impl FlowFigures {
    /// Most flows whose counts are listed one by one.
    pub const LISTED: usize = 1024;

    /// The figures of `per_flow` (each flow's transactions) on `threads` threads.
    pub fn of(per_flow: &[u64], threads: usize) -> FlowFigures {
        let mut sorted = per_flow.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => sorted[n / 2] as f64,
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
        };
        FlowFigures {
            count: n as u32,
            threads: threads as u32,
            min: sorted.first().copied().unwrap_or(0),
            median,
            max: sorted.last().copied().unwrap_or(0),
            per_flow: (n <= Self::LISTED).then(|| per_flow.to_vec()),
        }
    }

    /// "64 flows on 2 threads, transactions per flow 150 / 156 / 170 (min / median / max)".
    pub fn text(&self) -> String {
        format!(
            "{} flows on {} thread{}, transactions per flow {} / {} / {} (min / median / max)",
            self.count,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.min,
            self.median,
            self.max
        )
    }
}

/// The requester's figures of a `tcp_rr` or `unix_rr` test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RrClient {
    /// Requests that got no answer in time (always 0 on a stream socket).
    pub timeouts: u64,
    /// Answers that did not echo their request's sequence number.
    pub bad: u64,
    /// Round-trip times (null without samples).
    pub rtt_us: Option<Stats>,
    /// From the first request to the last answer.
    pub seconds: f64,
    /// `count` / `seconds`.
    pub transactions_per_second: f64,
    /// `seconds` / `count`, in microseconds.
    pub time_per_frame_us: f64,
    /// (`req_bytes` + `resp_bytes`) / `time_per_frame_us` (MB/s).
    pub mbytes_per_second: f64,
}

/// `tcp_rr`: the other agent and the socket options as the kernel has them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpRrSocket {
    /// The other agent's IP address.
    pub peer: String,
    /// TCP_NODELAY the kernel has.
    pub nodelay: bool,
    /// TOS byte / traffic class the kernel has.
    pub tos: Option<u32>,
    /// Congestion control the kernel has.
    pub congestion: Option<String>,
    /// TCP_MAXSEG asked for.
    pub mss_requested: Option<u64>,
    /// Segment size the connection uses.
    pub mss: Option<u32>,
    /// SO_SNDBUF the kernel has.
    pub sndbuf_actual: u64,
    /// SO_RCVBUF the kernel has.
    pub rcvbuf_actual: u64,
}

/// `tcp_crr`: one side's figures. The driving side (the connecting one)
/// has the [`CrrClient`] figures; the serving side counts what it answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CrrSummary {
    /// Transactions completed (connect, request, whole response, close:
    /// driving side) or answered (serving side).
    pub transactions: u64,
    /// Driving side: connects, request writes and response reads, times
    /// and rates.
    #[serde(flatten)]
    pub client: Option<CrrClient>,
    /// Connects that failed, by errno name (`ECONNREFUSED`, `ETIMEDOUT`
    /// for one past `connect_timeout_ms`, `EADDRNOTAVAIL` when the
    /// ephemeral ports ran out, ...); empty when none did.
    pub connect_failures: BTreeMap<String, u64>,
    /// Connections that failed after connecting, by errno name, or `EOF`
    /// for a peer that closed before the whole request or response: a
    /// peer that resets mid-test is counted here.
    pub transaction_failures: BTreeMap<String, u64>,
    /// Request and response bytes moved, all completed transactions.
    pub bytes: u64,
    /// Bytes per request.
    pub req_bytes: u64,
    /// Bytes per response.
    pub resp_bytes: u64,
    /// One human line.
    pub line: String,
    /// Why the test ended before its count or time (ephemeral ports or
    /// descriptors ran out, the peer agent did not confirm its count);
    /// null when it ran to its end.
    pub note: Option<String>,
    /// Driving side: transactions the serving side answered (equal to
    /// `transactions` when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_transactions: Option<u64>,
    /// Serving side: connections from an address other than the driving
    /// agent's, closed unanswered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strangers: Option<u64>,
    /// Peer and socket options as the kernel has them on the first connection.
    #[serde(flatten)]
    pub tcp: Option<TcpRrSocket>,
    /// `flows` above 1: how the transactions spread over the flows (the
    /// serving side holds no flows of its own: absent there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowFigures>,
}

/// The connecting side's figures of a `tcp_crr` test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CrrClient {
    /// Connects tried: completed transactions plus failures.
    pub attempts: u64,
    /// From the first connect to the end of the last transaction.
    pub seconds: f64,
    /// `transactions` / `seconds`.
    pub transactions_per_second: f64,
    /// From `connect()` to the connection established, per completed
    /// transaction (null without samples).
    pub connect_us: Option<Stats>,
    /// From `connect()` to the response read and the connection closed,
    /// per completed transaction (null without samples).
    pub txn_us: Option<Stats>,
}

/// UDP socket options: what was asked for and what the kernel has (null
/// where not asked for or not known).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UdpSocketReport {
    /// SO_SNDBUF asked for.
    pub sndbuf_requested: Option<u64>,
    /// SO_RCVBUF asked for.
    pub rcvbuf_requested: Option<u64>,
    /// SO_SNDBUF the kernel has.
    pub sndbuf_actual: Option<u64>,
    /// SO_RCVBUF the kernel has.
    pub rcvbuf_actual: Option<u64>,
    /// TOS byte / traffic class the kernel has (null unless `tos` was asked for).
    pub tos: Option<u32>,
}

/// `udp_rr`, the requester (driving side).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpRrSummary {
    /// Requests sent.
    pub count: u64,
    /// Requests answered in time.
    pub answered: u64,
    /// Requests not answered within `timeout_ms`.
    pub timeouts: u64,
    /// Datagrams that were not the awaited reply (or came too late).
    pub bad: u64,
    /// Datagrams the responder got from anyone else (null: it did not say).
    pub foreign: Option<u64>,
    /// Datagrams from us the responder could not take as requests (null: it did not say).
    pub server_bad: Option<u64>,
    /// Requests the responder received (null: it did not say).
    pub server_received: Option<u64>,
    /// Round-trip times of the answered requests (null without any).
    pub rtt_us: Option<Stats>,
    /// Bytes per request.
    pub req_bytes: u64,
    /// Bytes per reply.
    pub resp_bytes: u64,
    /// Per-request timeout.
    pub timeout_ms: u64,
    /// From the start to the last request's end.
    pub seconds: f64,
    /// `seconds` / `count`, in microseconds.
    pub time_per_frame_us: f64,
    /// (`req_bytes` + `resp_bytes`) / `time_per_frame_us` (MB/s).
    pub mbytes_per_second: f64,
    /// The responder's UDP address.
    pub peer: String,
    /// The test ran to its end.
    pub complete: bool,
    /// Why it did not (null when complete).
    pub note: Option<String>,
    /// Microseconds requests waited for this agent's `--max-udp-rate`
    /// before their send time was taken (0 without a cap).
    pub rate_capped_us: f64,
    /// ICMP errors (port, host or network unreachable, fragmentation
    /// needed) the kernel reported on this side's socket for earlier
    /// datagrams: each counted, the request sent again or the reply
    /// awaited on, never the end of the test (0 in results from before).
    #[serde(default)]
    pub icmp_errors: u64,
    /// udp_req_timo's line ("resp_bytes; req_bytes; 1; sent; bad;
    /// time/frame us; Mbytes/s; ave; min; max; timeouts").
    pub line: String,
    /// Socket options.
    #[serde(flatten)]
    pub socket: UdpSocketReport,
}

/// What the responding agent of a `udp_rr` counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UdpRrServerCounts {
    /// Requests of this test from the bound peer.
    pub received: u64,
    /// Replies sent.
    pub replied: u64,
    /// Datagrams from the bound peer that were not requests of this test.
    pub bad: u64,
    /// Datagrams from anyone else (never answered).
    pub foreign: u64,
}

/// `udp_rr`, the responder (serving side).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpRrServerSummary {
    /// What it counted (the same it sends the requester).
    #[serde(flatten)]
    pub counts: UdpRrServerCounts,
    /// The test ran to its end.
    pub complete: bool,
    /// Why it did not (null when complete).
    pub note: Option<String>,
    /// The requester's UDP address.
    pub peer: String,
    /// Microseconds replies waited for this agent's `--max-udp-rate` (0
    /// without a cap): the cap covers every UDP byte an agent sends, and a
    /// reply larger than its request counts against it too.
    pub rate_capped_us: f64,
    /// Requests past the prepared `count`, left unanswered (a requester
    /// that keeps asking gets no more than the test it prepared).
    pub beyond_count: u64,
    /// ICMP errors the kernel reported on this side's socket, as the
    /// requester's `icmp_errors`: counted, the test went on.
    #[serde(default)]
    pub icmp_errors: u64,
    /// Socket options.
    #[serde(flatten)]
    pub socket: UdpSocketReport,
}

/// How far the paced sender's gaps were from `wait_us`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PacingError {
    /// Mean gap less `wait_us` (null with fewer than two datagrams).
    pub mean: Option<f64>,
    /// 99th percentile of |gap - `wait_us`| (null with fewer than two datagrams).
    pub p99: Option<f64>,
}

/// Where a `udp_stream` receiver's arrival times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timestamps {
    /// SO_TIMESTAMPNS: the kernel's receive time of every datagram.
    Kernel,
    /// The receiving thread's clock after the read.
    #[default]
    User,
}

/// `udp_stream`: the sender's own figures, sent to the receiver in its
/// `stats` line (`peer::UdpStreamSenderLine::Stats`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpStreamSend {
    /// Datagrams sent.
    pub sent: u64,
    /// From the first send to the end of the burst.
    pub send_seconds: f64,
    /// Gaps between send times (null with fewer than two datagrams).
    pub send_gap_us: Option<Stats>,
    /// Pacing error against `wait_us`.
    pub pacing_error_us: PacingError,
    /// The nice value the burst ran at (null: not raised).
    pub sender_nice: Option<i32>,
    /// Stalls the schedule slipped for.
    pub schedule_slips: u64,
    /// Time the schedule slipped by, all stalls.
    pub schedule_slipped_us: f64,
    /// The sender's IP address (null if unknown).
    pub from: Option<String>,
    /// The receiver's IP address.
    pub to: String,
    /// Datagrams sent during the warm-up (`omit_s`): sequence numbers below
    /// this are left out of both sides' figures (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u64>,
    /// Whether the sender handed the kernel several datagrams in one
    /// segmented send (UDP GSO; absent: an agent from before `gso`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<bool>,
    /// Send system calls of the burst (`sendmmsg`), the warm-up's included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_calls: Option<u64>,
    /// ICMP errors the kernel reported on the sender's socket (sends made
    /// again; absent: an agent from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_errors: Option<u64>,
}

/// `udp_stream`: the receiver's own figures (`peer::UdpStreamReceiverLine::Stats`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpStreamReceive {
    /// Distinct datagrams of the test received.
    pub received: u64,
    /// Sent (or, without the sender's count, below the highest sequence number) but never received.
    pub lost: u64,
    /// First copies that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Extra copies of a datagram already received.
    pub duplicates: u64,
    /// Sequence numbers at or past `sent`.
    pub out_of_range: u64,
    /// Datagrams of the test received, duplicates included.
    pub packets: u64,
    /// Datagrams from anyone else (never counted as the test's).
    pub foreign: u64,
    /// From the first to the last datagram received.
    pub recv_seconds: f64,
    /// RFC 3550 interarrival jitter (null with fewer than two datagrams).
    pub jitter_us: Option<f64>,
    /// Gaps between arrival times (null with fewer than two datagrams).
    pub interarrival_us: Option<Stats>,
    /// Where arrival times come from.
    pub timestamps: Timestamps,
    /// The sender's IP address.
    pub from: String,
    /// The receiver's IP address (null if unknown).
    pub to: Option<String>,
    /// Whether the receiver read coalesced datagrams (UDP GRO on its
    /// socket; absent: an agent from before `gso`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// Receive system calls that returned datagrams (`recvmmsg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_calls: Option<u64>,
    /// Messages those calls returned: a coalesced one (GRO) counts once
    /// however many datagrams it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_messages: Option<u64>,
    /// ICMP errors the kernel reported on the receiver's socket (absent:
    /// an agent from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_errors: Option<u64>,
}

/// The share of the asked `rate` a `udp_stream` sender must manage for its
/// summary's `rate_reached`: a sender on schedule sends the whole of it
/// (the last datagram of a burst cut at its time is 1 in 1786 at 20 Mbit/s
/// for 1 s), so 99% tells a rate the host cannot reach, or a stall the
/// bucket did not make up, from the schedule's own granularity.
pub const RATE_REACHED: f64 = 0.99;

/// `udp_stream`: the summary of both sides' figures, as the receiver builds
/// it and sends it to the sender (`peer::UdpStreamReceiverLine::Stats`).
/// A figure of a side whose `stats` never came is null.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpStreamFigures {
    /// Datagrams sent.
    pub sent: Option<u64>,
    /// Distinct datagrams received.
    pub received: Option<u64>,
    /// Sent (or, without the sender's count, below the highest sequence number) but never received.
    pub lost: Option<u64>,
    /// First copies that arrived after a higher sequence number.
    pub out_of_order: Option<u64>,
    /// Extra copies of a datagram already received.
    pub duplicates: Option<u64>,
    /// Datagrams the receiver got from anyone else.
    pub foreign: Option<u64>,
    /// Sequence numbers at or past `sent`.
    pub out_of_range: Option<u64>,
    /// From the first send to the end of the burst.
    pub send_seconds: Option<f64>,
    /// From the first to the last datagram received.
    pub recv_seconds: Option<f64>,
    /// Payload rate the sender achieved.
    pub send_bits_per_second: f64,
    /// Payload rate received.
    pub recv_bits_per_second: f64,
    /// Received rate with `overhead_bytes` per frame.
    pub wire_bits_per_second: f64,
    /// RFC 3550 interarrival jitter.
    pub jitter_us: Option<f64>,
    /// Gaps between send times.
    pub send_gap_us: Option<Stats>,
    /// Gaps between arrival times.
    pub interarrival_us: Option<Stats>,
    /// Pacing error against `wait_us`.
    pub pacing_error_us: Option<PacingError>,
    /// The nice value the burst ran at (null: not raised).
    pub sender_nice: Option<i32>,
    /// Stalls the send schedule slipped for.
    pub schedule_slips: Option<u64>,
    /// Time the schedule slipped by, all stalls.
    pub schedule_slipped_us: Option<f64>,
    /// Where arrival times come from.
    pub timestamps: Option<Timestamps>,
    /// `send_seconds` / `sent`, in microseconds (0 without datagrams).
    pub time_per_frame_us: f64,
    /// `recv_seconds` / `received`, in microseconds (0 without datagrams).
    pub recv_time_per_frame_us: f64,
    /// Datagram length, header included.
    pub pkt_bytes: u64,
    /// Wait between datagrams asked for.
    pub wait_us: f64,
    /// Datagrams asked for.
    pub count: u64,
    /// Per-frame bytes on the wire beyond the payload.
    pub overhead_bytes: u64,
    /// Who sends, from the driving agent's point of view.
    pub direction: Direction,
    /// Both sides' figures arrived and the burst ended normally.
    pub complete: bool,
    /// Why not (null when complete).
    pub note: Option<String>,
    /// udp_bw_mon's line.
    pub line: String,
    /// The rate asked for, bits per second of payload (absent: paced by
    /// `wait_us`); `send_bits_per_second` is the rate achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// With `rate`: whether the sender reached it, its
    /// `send_bits_per_second` at least [`RATE_REACHED`] of `rate` (false: the
    /// host could not send that fast, or a stall slipped the schedule);
    /// absent without `rate` or without the sender's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_reached: Option<bool>,
    /// The time asked for, seconds (absent: bounded by `count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The warm-up asked for, seconds (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_s: Option<f64>,
    /// Datagrams of the warm-up, sequence numbers 0 to `omitted - 1`: in
    /// the raw samples, not in the figures (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u64>,
    /// The sender used UDP GSO: several datagrams in one segmented send
    /// (absent: without the sender's figures, or from before `gso`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<bool>,
    /// The receiver had UDP GRO on: a read may hold several datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// The sender's send system calls (`sendmmsg`), warm-up included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_calls: Option<u64>,
    /// The receiver's receive system calls that returned datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_calls: Option<u64>,
    /// The messages they returned (a coalesced one counts once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_messages: Option<u64>,
    /// ICMP errors (port, host or network unreachable, fragmentation
    /// needed) the kernel reported on the flow's sockets, the sender's and
    /// the receiver's together: each counted, the send made again or the
    /// receive gone on with, never the end of the burst (absent: neither
    /// side's figures arrived, or agents from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_errors: Option<u64>,
}

/// `udp_stream`: one side's summary: both sides' figures, this side's
/// socket options and its peer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpStreamSummary {
    /// Both sides' figures (as the receiver built them).
    #[serde(flatten)]
    pub figures: UdpStreamFigures,
    /// This side's socket options.
    #[serde(flatten)]
    pub socket: UdpSocketReport,
    /// The address this side's UDP flow is bound to.
    pub peer: String,
    /// `direction` both: the serving agent's flow to the driving agent (the
    /// top-level figures are the driving agent's flow to the serving one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Box<UdpStreamFigures>>,
    /// The driving side of a burst with `probe_ms`: the probe flow beside
    /// it, as `latency_under_load` reports it (phase `idle`, then
    /// `upload`, `download` or `both` by `direction`, with the burst's
    /// throughput as its receivers counted it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<LulSummary>,
    /// `streams` above 1: each flow's figures, flow `i` at index `i` (the
    /// top-level figures are all of them together: counts summed, times
    /// the longest, `jitter_us` the flows' mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<UdpStreamFigures>>,
    /// The same for the reverse flows of `direction` both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_streams: Option<Vec<UdpStreamFigures>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Every key path of `v` (`a`, `a.b`, list entries by their keys).
    fn keys(v: &impl Serialize) -> Vec<String> {
        fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => o.iter().for_each(|(k, x)| {
                    let name = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    out.push(name.clone());
                    walk(x, &name, out);
                }),
                Value::Array(a) => a.iter().for_each(|x| walk(x, at, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(&serde_json::to_value(v).unwrap(), "", &mut out);
        out
    }

    fn has_all(kind: &str, keys: &[String], documented: &[&str]) {
        for k in documented {
            assert!(keys.iter().any(|x| x == k), "{kind}: no `{k}` in {keys:?}");
        }
    }

    const STATS: [&str; 13] = [
        "n", "min", "max", "mean", "sigma", "skew", "kurtosis", "median", "iq25", "iq75", "p90",
        "p99", "p999",
    ];

    fn stats_keys(of: &str) -> Vec<String> {
        STATS.iter().map(|k| format!("{of}.{k}")).collect()
    }

    /// A udp_stream summary from before `gso` (no offload keys) still
    /// reads, and a new one without them writes none.
    #[test]
    fn udp_stream_figures_without_the_offload_keys_read_and_write_as_before() {
        let old = serde_json::to_value(UdpStreamFigures::default()).unwrap();
        for k in ["gso", "gro", "send_calls", "recv_calls", "recv_messages"] {
            assert!(old.get(k).is_none(), "{k} written when unknown");
        }
        let back: UdpStreamFigures = serde_json::from_value(old).unwrap();
        assert_eq!(
            (back.gso, back.send_calls, back.recv_messages),
            (None, None, None)
        );
        let new = UdpStreamFigures {
            gso: Some(true),
            send_calls: Some(3),
            ..Default::default()
        };
        let v = serde_json::to_value(&new).unwrap();
        assert_eq!(
            (&v["gso"], &v["send_calls"]),
            (&serde_json::json!(true), &serde_json::json!(3))
        );
        assert_eq!(serde_json::from_value::<UdpStreamFigures>(v).unwrap(), new);
    }

    /// docs/design.md "Public interfaces" (and docs/formats.md): the documented
    /// summary keys of every kind are fields of its struct.
    #[test]
    fn every_documented_summary_key_is_a_field() {
        let tcp = StreamSummary {
            streams: vec![StreamFigures::default()],
            retransmits: Some(0),
            tcp: Some(TcpStreamSocket::default()),
            zerocopy_sends: Some(0),
            zerocopy_zero_copied: Some(0),
            zerocopy_copied: Some(0),
            zerocopy_enobufs: Some(0),
            ..Default::default()
        };
        let unix = StreamSummary {
            streams: vec![StreamFigures::default()],
            transport: Some(Transport::Unix),
            ..Default::default()
        };
        let stream = [
            "bytes",
            "seconds",
            "bits_per_second",
            "reads",
            "avg_read_bytes",
            "streams",
            "streams.bytes",
            "streams.reads",
        ];
        has_all("tcp_stream", &keys(&tcp), &stream);
        has_all(
            "tcp_stream",
            &keys(&tcp),
            &[
                "retransmits",
                "zerocopy_sends",
                "zerocopy_zero_copied",
                "zerocopy_copied",
                "zerocopy_enobufs",
            ],
        );
        has_all("unix_stream", &keys(&unix), &stream);

        let stats = Some(Stats::default());
        let rr_client = Some(RrClient {
            rtt_us: stats,
            ..Default::default()
        });
        let rr = ["count", "timeouts", "bad", "rtt_us"];
        for (kind, k) in [
            (
                "tcp_rr",
                keys(&RrSummary {
                    client: rr_client.clone(),
                    tcp: Some(TcpRrSocket::default()),
                    ..Default::default()
                }),
            ),
            (
                "unix_rr",
                keys(&RrSummary {
                    client: rr_client.clone(),
                    transport: Some(Transport::Unix),
                    ..Default::default()
                }),
            ),
            (
                "udp_rr",
                keys(&UdpRrSummary {
                    rtt_us: stats,
                    ..Default::default()
                }),
            ),
        ] {
            has_all(kind, &k, &rr);
            if kind == "udp_rr" {
                has_all(kind, &k, &["icmp_errors"]);
            }
            let rtt = stats_keys("rtt_us");
            has_all(
                kind,
                &k,
                &rtt.iter().map(String::as_str).collect::<Vec<_>>(),
            );
        }

        let crr = keys(&CrrSummary {
            client: Some(CrrClient {
                connect_us: stats,
                txn_us: stats,
                ..Default::default()
            }),
            tcp: Some(TcpRrSocket::default()),
            ..Default::default()
        });
        has_all(
            "tcp_crr",
            &crr,
            &[
                "transactions",
                "transactions_per_second",
                "connect_failures",
                "transaction_failures",
                "connect_us",
                "txn_us",
            ],
        );
        for of in ["connect_us", "txn_us"] {
            let k = stats_keys(of);
            has_all(
                "tcp_crr",
                &crr,
                &k.iter().map(String::as_str).collect::<Vec<_>>(),
            );
        }

        let udp = keys(&UdpStreamSummary {
            figures: UdpStreamFigures {
                send_gap_us: stats,
                interarrival_us: stats,
                gso: Some(true),
                gro: Some(true),
                send_calls: Some(1),
                recv_calls: Some(1),
                recv_messages: Some(1),
                icmp_errors: Some(0),
                ..Default::default()
            },
            ..Default::default()
        });
        has_all(
            "udp_stream",
            &udp,
            &[
                "sent",
                "received",
                "lost",
                "out_of_order",
                "duplicates",
                "foreign",
                "send_seconds",
                "recv_seconds",
                "send_bits_per_second",
                "recv_bits_per_second",
                "wire_bits_per_second",
                "jitter_us",
                "send_gap_us",
                "interarrival_us",
                "gso",
                "gro",
                "send_calls",
                "recv_calls",
                "recv_messages",
                "icmp_errors",
            ],
        );
        for of in ["send_gap_us", "interarrival_us"] {
            let k = stats_keys(of);
            has_all(
                "udp_stream",
                &udp,
                &k.iter().map(String::as_str).collect::<Vec<_>>(),
            );
        }
    }

    /// The parts one transport lacks are left out, not written as null,
    /// and a summary reads back as what was written.
    #[test]
    fn transport_only_parts_are_absent_elsewhere_and_round_trip() {
        let unix = StreamSummary {
            streams: vec![StreamFigures::default()],
            transport: Some(Transport::Unix),
            ..Default::default()
        };
        assert_eq!(
            keys(&unix),
            [
                "bytes",
                "seconds",
                "bits_per_second",
                "sent_bytes",
                "received_bytes",
                "reads",
                "avg_read_bytes",
                "streams",
                "streams.index",
                "streams.dir",
                "streams.bytes",
                "streams.reads",
                "streams.seconds",
                "msg_bytes",
                "transport",
                "line"
            ]
        );
        let v = serde_json::to_value(&unix).unwrap();
        assert_eq!(v["transport"], "unix");
        let back: StreamSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, unix);
        let tcp = StreamSummary {
            streams: vec![StreamFigures {
                writes: Some(3),
                tcp: Some(StreamTcpInfo {
                    first_seconds: 0.5,
                    rtt_us: None,
                    cwnd: Some(10),
                    retransmits: Some(0),
                }),
                ..Default::default()
            }],
            tcp: Some(TcpStreamSocket {
                tos: None,
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = serde_json::to_value(&tcp).unwrap();
        assert_eq!(v["tos"], Value::Null, "null, not left out: {v}");
        assert!(v.as_object().unwrap().contains_key("tos"));
        assert_eq!(v["streams"][0]["rtt_us"], Value::Null);
        let back: StreamSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, tcp);
        let rr = RrSummary {
            count: 5,
            transport: Some(Transport::Unix),
            ..Default::default()
        };
        assert_eq!(
            keys(&rr),
            [
                "count",
                "bytes",
                "req_bytes",
                "resp_bytes",
                "busy_poll",
                "line",
                "transport"
            ]
        );
        let back: RrSummary = serde_json::from_value(serde_json::to_value(&rr).unwrap()).unwrap();
        assert_eq!(back, rr);
    }
}
