//! TCP's own view of a stream, per interval (issue 43): at each interval
//! boundary a bulk worker reads TCP_INFO ([`super::sockopt::tcp_info`])
//! and hands it to its stream's [`Sampler`], which keeps one series per
//! figure (the sample kinds from `tcp_min_rtt_us` on) and the first and
//! last readings; [`summary`] sums them into the side's `tcp_info`.
//!
//! A sending connection: minimum RTT, delivery rate and its app-limited
//! mark, bytes in flight and not sent, bytes retransmitted and reordering
//! seen (running totals), the receiver's window as the sender has it, and
//! the shares of the interval the kernel counted busy, receive-window
//! limited and send-buffer limited. A receiving one: the window it
//! advertises, its receive space and its receive queue. A field the
//! kernel does not return gives no series (never a series of zeros).

use super::sockopt::TcpInfo;
use meshperf_protocol::frame::SampleKind;
use std::time::Instant;

/// One stream's TCP_INFO series and the readings its sums need.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    /// Series by kind, indexed by interval like `interval_bytes`.
    pub series: Vec<(SampleKind, Vec<u64>)>,
    /// The first reading (the stream's first move) and when.
    pub(crate) first: Option<(Instant, TcpInfo)>,
    /// The last reading, when, and the interval it was taken in.
    last: Option<(Instant, TcpInfo, usize)>,
    /// The reading at the stream's end and when (the sending time ends there).
    pub end: Option<(Instant, TcpInfo)>,
}

/// The per-mille share of `span_us` that a counter rose by `d_us`.
fn per_mille(d_us: u64, span_us: u64) -> u64 {
    if span_us == 0 {
        return 0;
    }
    ((d_us as f64 / span_us as f64 * 1000.0).round() as u64).min(1000)
}

impl Sampler {
    fn put(&mut self, kind: SampleKind, to: usize, v: u64) {
        let i = match self.series.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => {
                self.series.push((kind, Vec::new()));
                self.series.len() - 1
            }
        };
        let s = &mut self.series[i].1;
        if s.len() < to {
            s.resize(to, v);
        }
    }

    /// The shares of the time since the last reading, for the intervals
    /// up to `to` (exclusive).
    fn shares(&mut self, now: Instant, ti: &TcpInfo, to: usize) {
        let Some((t0, prev, _)) = self.last else {
            return;
        };
        let span = now.saturating_duration_since(t0).as_micros() as u64;
        for (kind, a, b) in [
            (SampleKind::TcpBusyPm, prev.busy_us, ti.busy_us),
            (
                SampleKind::TcpRwndLimitedPm,
                prev.rwnd_limited_us,
                ti.rwnd_limited_us,
            ),
            (
                SampleKind::TcpSndbufLimitedPm,
                prev.sndbuf_limited_us,
                ti.sndbuf_limited_us,
            ),
        ] {
            if let (Some(a), Some(b)) = (a, b) {
                self.put(kind, to, per_mille(b.saturating_sub(a), span));
            }
        }
    }

    /// A reading taken in interval `idx` of a stream that sends (`send`)
    /// or receives; `rcvq`: its receive queue then.
    pub fn sample(&mut self, ti: TcpInfo, rcvq: Option<u32>, idx: usize, now: Instant, send: bool) {
        if self.first.is_none() {
            self.first = Some((now, ti));
        }
        let to = idx + 1;
        if send {
            self.shares(now, &ti, idx);
            let state = [
                (SampleKind::TcpMinRttUs, ti.min_rtt_us.map(u64::from)),
                (SampleKind::TcpDeliveryRate, ti.delivery_rate),
                (SampleKind::TcpAppLimited, ti.app_limited.map(u64::from)),
                (
                    SampleKind::TcpUnackedBytes,
                    Some(u64::from(ti.unacked) * u64::from(ti.snd_mss)),
                ),
                (SampleKind::TcpNotsentBytes, ti.notsent_bytes.map(u64::from)),
                (SampleKind::TcpBytesRetrans, ti.bytes_retrans),
                (SampleKind::TcpReordSeen, ti.reord_seen.map(u64::from)),
                (SampleKind::TcpSndWnd, ti.snd_wnd.map(u64::from)),
            ];
            for (kind, v) in state {
                if let Some(v) = v {
                    self.put(kind, to, v);
                }
            }
        } else {
            for (kind, v) in [
                (SampleKind::TcpRcvWnd, ti.rcv_wnd),
                (SampleKind::TcpRcvSpace, Some(ti.rcv_space)),
                (SampleKind::TcpRcvQueue, rcvq),
            ] {
                if let Some(v) = v {
                    self.put(kind, to, u64::from(v));
                }
            }
        }
        self.last = Some((now, ti, idx));
    }

    /// The stream's end: its last reading `ti` (None without TCP_INFO)
    /// closes the shares of the intervals up to `intervals`.
    pub fn finish(&mut self, ti: Option<TcpInfo>, intervals: usize, send: bool) {
        let now = Instant::now();
        let Some(ti) = ti else { return };
        if send {
            self.shares(now, &ti, intervals);
        }
        self.end = Some((now, ti));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn info(busy: u64, rwnd: u64) -> TcpInfo {
        TcpInfo {
            len: 240,
            snd_mss: 1000,
            unacked: 5,
            min_rtt_us: Some(100),
            delivery_rate: Some(1000),
            app_limited: Some(false),
            busy_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(0),
            ..Default::default()
        }
    }

    #[test]
    fn shares_cover_the_intervals_between_readings() {
        let mut s = Sampler::default();
        let t0 = Instant::now();
        s.sample(info(0, 0), None, 0, t0, true);
        // 200 ms later, in interval 2: busy all of it, window-limited half.
        s.sample(
            info(200_000, 100_000),
            None,
            2,
            t0 + Duration::from_millis(200),
            true,
        );
        let get = |s: &Sampler, k| s.series.iter().find(|(x, _)| *x == k).unwrap().1.clone();
        assert_eq!(get(&s, SampleKind::TcpBusyPm), [1000, 1000]);
        assert_eq!(get(&s, SampleKind::TcpRwndLimitedPm), [500, 500]);
        assert_eq!(get(&s, SampleKind::TcpUnackedBytes), [5000, 5000, 5000]);
        // No series for a field the kernel lacks: rcv_wnd is None here.
        assert!(s.series.iter().all(|(k, _)| *k != SampleKind::TcpRcvWnd));
        assert_eq!(per_mille(5, 0), 0);
        assert_eq!(per_mille(1_200, 1_000), 1000);
    }
}
