//! Sample frames: how raw samples travel from an agent to the page.
//!
//! A frame is one WebSocket binary message: a 24-byte little-endian header
//! followed by `count` packed little-endian `u64` values.
//!
//! | offset | size | field                                   |
//! |--------|------|-----------------------------------------|
//! | 0      | 4    | magic `MPSF`                            |
//! | 4      | 1    | version (1)                             |
//! | 5      | 1    | sample kind ([`SampleKind`]) in bits 0-6; bit 7 set when the serving side sent it |
//! | 6      | 2    | stream index                            |
//! | 8      | 4    | test id                                 |
//! | 12     | 4    | step index                              |
//! | 16     | 4    | sequence number of the first value      |
//! | 20     | 4    | count of values                         |
//! | 24     | 8*n  | values (u64 LE)                         |

use crate::msg::Role;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The four bytes every sample frame starts with.
pub const MAGIC: [u8; 4] = *b"MPSF";
/// Frame format version.
pub const FRAME_VERSION: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 24;
/// Bit 7 of the kind byte: the values come from the serving side.
pub const SERVER_BIT: u8 = 0x80;

/// What the values of a frame are.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum SampleKind {
    /// Bytes moved per interval (the interval is in the test's `interval_ms`), per stream.
    IntervalBytes = 1,
    /// Round-trip times in nanoseconds, one per transaction.
    RttNs = 2,
    /// Sizes in bytes of individual reads.
    ReadBytes = 3,
    /// Sender's send times in ns since the test start.
    SendTimeNs = 4,
    /// Receiver's arrival times in ns since the test start.
    ArrivalNs = 5,
    /// Receiver's sequence numbers, parallel to `ArrivalNs`.
    Sequence = 6,
    /// TCP_INFO smoothed RTT in microseconds, one per interval.
    TcpRttUs = 7,
    /// TCP_INFO congestion window (segments), one per interval.
    TcpCwnd = 8,
    /// TCP_INFO total retransmits, one per interval.
    TcpRetrans = 9,
    /// `latency_under_load`: the phase code of each answered probe (0 idle,
    /// 1 download, 2 upload, 3 both, 4 between phases), parallel to its
    /// `sequence`, `send_time_ns` (t1), `peer_recv_ns` (t2), `peer_send_ns`
    /// (t3) and `arrival_ns` (t4) values.
    ProbePhase = 10,
    /// `latency_under_load`: when the responder received each probe (t2),
    /// ns since the responder's probe clock started.
    PeerRecvNs = 11,
    /// `latency_under_load`: when the responder answered each probe (t3),
    /// same clock as `peer_recv_ns`.
    PeerSendNs = 12,
    /// `tcp_crr`: connect times in nanoseconds, one per connection that
    /// completed (parallel to the `rtt_ns` transaction times).
    ConnectNs = 13,
    // TCP_INFO per interval beyond rtt, cwnd and retransmits (issue 43;
    // from 40, so kinds other work adds meanwhile keep their numbers). A
    // sending connection's, unless the name says receiving.
    /// Minimum RTT the connection has seen (`tcpi_min_rtt`), us.
    TcpMinRttUs = 40,
    /// Delivery rate (`tcpi_delivery_rate`), bytes per second.
    TcpDeliveryRate = 41,
    /// 1 when that delivery rate was application-limited, else 0.
    TcpAppLimited = 42,
    /// Bytes in flight: unacknowledged segments times the MSS.
    TcpUnackedBytes = 43,
    /// Bytes written but not sent yet (`tcpi_notsent_bytes`).
    TcpNotsentBytes = 44,
    /// Bytes retransmitted so far (`tcpi_bytes_retrans`), a running total.
    TcpBytesRetrans = 45,
    /// Reordering events seen so far (`tcpi_reord_seen`), a running total.
    TcpReordSeen = 46,
    /// Share of the interval the connection was busy sending, per mille.
    TcpBusyPm = 47,
    /// Share of the interval limited by the receiver's window, per mille.
    TcpRwndLimitedPm = 48,
    /// Share of the interval limited by the send buffer, per mille.
    TcpSndbufLimitedPm = 49,
    /// The receiver's advertised window as the sender has it (`tcpi_snd_wnd`), bytes.
    TcpSndWnd = 50,
    /// Receiving: the window this side advertises (`tcpi_rcv_wnd`), bytes.
    TcpRcvWnd = 51,
    /// Receiving: the receive space autotuning holds (`tcpi_rcv_space`), bytes.
    TcpRcvSpace = 52,
    /// Receiving: bytes in the socket's receive queue, not read yet (SIOCINQ).
    TcpRcvQueue = 53,
}

impl SampleKind {
    /// Maps the header byte back to a kind.
    pub fn from_u8(v: u8) -> Option<Self> {
        use SampleKind::*;
        Some(match v {
            1 => IntervalBytes,
            2 => RttNs,
            3 => ReadBytes,
            4 => SendTimeNs,
            5 => ArrivalNs,
            6 => Sequence,
            7 => TcpRttUs,
            8 => TcpCwnd,
            9 => TcpRetrans,
            10 => ProbePhase,
            11 => PeerRecvNs,
            12 => PeerSendNs,
            13 => ConnectNs,
            40 => TcpMinRttUs,
            41 => TcpDeliveryRate,
            42 => TcpAppLimited,
            43 => TcpUnackedBytes,
            44 => TcpNotsentBytes,
            45 => TcpBytesRetrans,
            46 => TcpReordSeen,
            47 => TcpBusyPm,
            48 => TcpRwndLimitedPm,
            49 => TcpSndbufLimitedPm,
            50 => TcpSndWnd,
            51 => TcpRcvWnd,
            52 => TcpRcvSpace,
            53 => TcpRcvQueue,
            _ => return None,
        })
    }

    /// The snake_case name used in JSON (as serde writes it).
    pub fn name(self) -> &'static str {
        use SampleKind::*;
        match self {
            IntervalBytes => "interval_bytes",
            RttNs => "rtt_ns",
            ReadBytes => "read_bytes",
            SendTimeNs => "send_time_ns",
            ArrivalNs => "arrival_ns",
            Sequence => "sequence",
            TcpRttUs => "tcp_rtt_us",
            TcpCwnd => "tcp_cwnd",
            TcpRetrans => "tcp_retrans",
            ProbePhase => "probe_phase",
            PeerRecvNs => "peer_recv_ns",
            PeerSendNs => "peer_send_ns",
            ConnectNs => "connect_ns",
            TcpMinRttUs => "tcp_min_rtt_us",
            TcpDeliveryRate => "tcp_delivery_rate",
            TcpAppLimited => "tcp_app_limited",
            TcpUnackedBytes => "tcp_unacked_bytes",
            TcpNotsentBytes => "tcp_notsent_bytes",
            TcpBytesRetrans => "tcp_bytes_retrans",
            TcpReordSeen => "tcp_reord_seen",
            TcpBusyPm => "tcp_busy_pm",
            TcpRwndLimitedPm => "tcp_rwnd_limited_pm",
            TcpSndbufLimitedPm => "tcp_sndbuf_limited_pm",
            TcpSndWnd => "tcp_snd_wnd",
            TcpRcvWnd => "tcp_rcv_wnd",
            TcpRcvSpace => "tcp_rcv_space",
            TcpRcvQueue => "tcp_rcv_queue",
        }
    }

    /// The kind whose [`SampleKind::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        (1..=127)
            .filter_map(Self::from_u8)
            .find(|k| k.name() == name)
    }
}

/// Errors decoding a sample frame.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than the header or than the values the header announces.
    #[error("sample frame truncated: {0} bytes")]
    Truncated(usize),
    /// Does not start with `MPSF`.
    #[error("not a meshperf sample frame (bad magic)")]
    BadMagic,
    /// A frame version this build does not read.
    #[error("sample frame version {0} not supported (this build reads version 1)")]
    Version(u8),
    /// A sample kind this build does not know.
    #[error("unknown sample kind {0}")]
    Kind(u8),
}

/// Header of a sample frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub kind: SampleKind,
    /// Which side of the test recorded the values.
    pub role: Role,
    pub stream: u16,
    pub test_id: u32,
    pub step: u32,
    pub first_seq: u32,
    pub count: u32,
}

/// Encodes a frame into `out` (cleared first).
pub fn encode(h: &FrameHeader, values: &[u64], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(HEADER_LEN + values.len() * 8);
    out.extend_from_slice(&MAGIC);
    out.push(FRAME_VERSION);
    out.push(
        h.kind as u8
            | if h.role == Role::Server {
                SERVER_BIT
            } else {
                0
            },
    );
    out.extend_from_slice(&h.stream.to_le_bytes());
    out.extend_from_slice(&h.test_id.to_le_bytes());
    out.extend_from_slice(&h.step.to_le_bytes());
    out.extend_from_slice(&h.first_seq.to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Decodes a frame: header and values.
pub fn decode(buf: &[u8]) -> Result<(FrameHeader, Vec<u64>), FrameError> {
    if buf.len() < HEADER_LEN {
        return Err(FrameError::Truncated(buf.len()));
    }
    if buf[0..4] != MAGIC {
        return Err(FrameError::BadMagic);
    }
    if buf[4] != FRAME_VERSION {
        return Err(FrameError::Version(buf[4]));
    }
    let kind =
        SampleKind::from_u8(buf[5] & !SERVER_BIT).ok_or(FrameError::Kind(buf[5] & !SERVER_BIT))?;
    let role = if buf[5] & SERVER_BIT != 0 {
        Role::Server
    } else {
        Role::Client
    };
    let u32_at = |o: usize| u32::from_le_bytes(buf[o..o + 4].try_into().unwrap());
    let h = FrameHeader {
        kind,
        role,
        stream: u16::from_le_bytes([buf[6], buf[7]]),
        test_id: u32_at(8),
        step: u32_at(12),
        first_seq: u32_at(16),
        count: u32_at(20),
    };
    let need = HEADER_LEN + h.count as usize * 8;
    if buf.len() != need {
        return Err(FrameError::Truncated(buf.len()));
    }
    let values = buf[HEADER_LEN..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok((h, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = FrameHeader {
            kind: SampleKind::RttNs,
            role: Role::Server,
            stream: 3,
            test_id: 7,
            step: 2,
            first_seq: 100,
            count: 3,
        };
        let mut out = Vec::new();
        encode(&h, &[1, u64::MAX, 42], &mut out);
        assert_eq!(out.len(), HEADER_LEN + 24);
        assert_eq!(decode(&out).unwrap(), (h, vec![1, u64::MAX, 42]));
    }

    #[test]
    fn rejects_bad_frames() {
        let h = FrameHeader {
            kind: SampleKind::IntervalBytes,
            role: Role::Client,
            stream: 0,
            test_id: 1,
            step: 0,
            first_seq: 0,
            count: 1,
        };
        let mut out = Vec::new();
        encode(&h, &[5], &mut out);
        assert_eq!(decode(&out[..10]), Err(FrameError::Truncated(10)));
        assert_eq!(
            decode(&out[..HEADER_LEN + 4]),
            Err(FrameError::Truncated(HEADER_LEN + 4))
        );
        let mut bad = out.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad), Err(FrameError::BadMagic));
        let mut bad = out.clone();
        bad[4] = 9;
        assert_eq!(decode(&bad), Err(FrameError::Version(9)));
        let mut bad = out;
        bad[5] = 100;
        assert_eq!(decode(&bad), Err(FrameError::Kind(100)));
    }
}
