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

use super::bulk::Outcome;
use super::sockopt::{missing_fields, TcpInfo};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::summary::TcpInfoSummary;
use std::time::Instant;

/// One stream's TCP_INFO series and the readings its sums need.
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    /// Series by kind, indexed by interval like `interval_bytes`.
    pub series: Vec<(SampleKind, Vec<u64>)>,
    /// The first reading (the stream's first move) and when.
    first: Option<(Instant, TcpInfo)>,
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

/// Sums of the outcomes' TCP_INFO into a side's `tcp_info` (None when no
/// stream had TCP_INFO: not Linux, or not TCP).
pub fn summary(outs: &[Outcome]) -> Option<TcpInfoSummary> {
    let len = outs.iter().find_map(|o| o.info.map(|i| i.len))?;
    let mut s = TcpInfoSummary {
        kernel_bytes: len,
        missing: missing_fields(len),
        ..Default::default()
    };
    let series = |o: &Outcome, k: SampleKind| {
        o.tcp
            .series
            .iter()
            .find(|(x, _)| *x == k)
            .map(|(_, v)| v.clone())
    };
    let opt_sum = |v: &mut Option<u64>, x: Option<u64>| {
        if let Some(x) = x {
            *v = Some(v.unwrap_or(0) + x);
        }
    };
    let opt_max = |v: &mut Option<u64>, x: Option<u64>| {
        if let Some(x) = x {
            *v = Some(v.unwrap_or(0).max(x));
        }
    };
    let senders: Vec<&Outcome> = outs.iter().filter(|o| o.send).collect();
    let (mut span, mut busy, mut rwnd, mut sndbuf) = (0f64, None, None, None);
    let (mut sent, mut retrans, mut reord) = (None, None, None);
    let (mut app, mut app_n) = (0u64, 0u64);
    let (mut rtt_sum, mut rtt_n, mut cwnd) = (0f64, 0u64, 0f64);
    let mut delivery: Vec<u64> = Vec::new();
    let mut bound: Option<(f64, f64)> = None;
    for o in &senders {
        let (Some((t0, a)), Some((t1, b))) = (o.tcp.first, o.tcp.end) else {
            continue;
        };
        span += t1.saturating_duration_since(t0).as_secs_f64();
        let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        opt_sum(&mut busy, d(a.busy_us, b.busy_us));
        opt_sum(&mut rwnd, d(a.rwnd_limited_us, b.rwnd_limited_us));
        opt_sum(&mut sndbuf, d(a.sndbuf_limited_us, b.sndbuf_limited_us));
        opt_sum(&mut sent, b.bytes_sent);
        opt_sum(&mut retrans, b.bytes_retrans);
        opt_sum(&mut reord, b.reord_seen.map(u64::from));
        opt_max(&mut s.snd_wnd_max, b.snd_wnd.map(u64::from));
        opt_max(
            &mut s.snd_wnd_max,
            series(o, SampleKind::TcpSndWnd).and_then(|v| v.into_iter().max()),
        );
        let min = b.min_rtt_us.filter(|&m| m > 0).map(f64::from);
        s.min_rtt_us = match (s.min_rtt_us, min) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        s.snd_mss = s.snd_mss.or(Some(b.snd_mss));
        if let Some(v) = series(o, SampleKind::TcpAppLimited) {
            app += v.iter().sum::<u64>();
            app_n += v.len() as u64;
        }
        // The loaded round trip and window: past the first interval (slow
        // start) when there are more.
        let skip = usize::from(o.rtt_us.len() > 2);
        for &r in &o.rtt_us[skip..] {
            rtt_sum += r as f64;
            rtt_n += 1;
        }
        let c = &o.cwnd[skip.min(o.cwnd.len())..];
        if !c.is_empty() {
            cwnd += c.iter().sum::<u64>() as f64 / c.len() as f64;
        }
        if let Some((r, b)) = bound_shares(o, b.snd_mss) {
            let secs = t1.saturating_duration_since(t0).as_secs_f64();
            let (r0, b0) = bound.unwrap_or((0.0, 0.0));
            bound = Some((r0 + r * secs, b0 + b * secs));
        }
        if let Some(v) = series(o, SampleKind::TcpDeliveryRate) {
            for (i, x) in v.iter().enumerate() {
                if i >= delivery.len() {
                    delivery.push(0);
                }
                delivery[i] += x;
            }
        }
    }
    if span > 0.0 {
        let share = |x: Option<u64>| x.map(|us| (us as f64 / 1e6 / span).min(1.0));
        s.send_seconds = Some(span);
        s.busy_share = share(busy);
        s.rwnd_limited_share = share(rwnd);
        s.sndbuf_limited_share = share(sndbuf);
        s.bytes_sent = sent;
        s.bytes_retrans = retrans;
        s.reord_seen = reord;
        s.rwnd_bound_share = bound.map(|(r, _)| (r / span).min(1.0));
        s.sndbuf_bound_share = bound.map(|(_, b)| (b / span).min(1.0));
        s.app_limited_share = (app_n > 0).then(|| app as f64 / app_n as f64);
        s.srtt_us = (rtt_n > 0).then(|| rtt_sum / rtt_n as f64);
        s.cwnd = (rtt_n > 0).then_some(cwnd);
        if !delivery.is_empty() {
            let skip = usize::from(delivery.len() > 2);
            let mut d = delivery[skip..].to_vec();
            d.sort_unstable();
            let m = (d[(d.len() - 1) / 2] + d[d.len() / 2]) as f64 / 2.0;
            s.delivery_bits_per_second = Some(m * 8.0);
        }
    } else {
        s.min_rtt_us = None;
        s.snd_mss = None;
    }
    for o in outs.iter().filter(|o| !o.send) {
        for (k, v) in [
            (SampleKind::TcpRcvWnd, &mut s.rcv_wnd_max),
            (SampleKind::TcpRcvSpace, &mut s.rcv_space_max),
            (SampleKind::TcpRcvQueue, &mut s.rcv_queue_max),
        ] {
            opt_max(v, series(o, k).and_then(|x| x.into_iter().max()));
        }
        if let Some(q) = series(o, SampleKind::TcpRcvQueue).filter(|q| !q.is_empty()) {
            let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
            s.rcv_queue_mean = Some(s.rcv_queue_mean.map_or(mean, |m: f64| m.max(mean)));
        }
        let end = o.tcp.end.map(|(_, i)| i);
        opt_max(
            &mut s.rcv_wnd_max,
            end.and_then(|i| i.rcv_wnd).map(u64::from),
        );
        opt_max(&mut s.rcv_space_max, end.map(|i| u64::from(i.rcv_space)));
    }
    Some(s)
}

/// Of a sending stream's time, the shares it was busy and limited
/// neither by the receiver's window nor by its send buffer by the
/// kernel's count, yet bound by one of them, judged per interval from
/// the windows: the receiver's (`tcpi_snd_wnd`) smaller than the
/// congestion window, the window in use was the receiver's; else bytes
/// in flight under half of both windows, the sender had no more in its
/// buffer to send (busy: it had data queued, so not the application).
/// The kernel counts either limit only while a segment waits for it, not
/// while the smaller window or the full buffer is simply in use. None
/// without the series (a kernel before 5.4 has no `tcpi_snd_wnd`).
fn bound_shares(o: &Outcome, mss: u32) -> Option<(f64, f64)> {
    let get = |k: SampleKind| o.tcp.series.iter().find(|(x, _)| *x == k).map(|(_, v)| v);
    let (busy, rwnd, sndbuf, wnd, flight) = (
        get(SampleKind::TcpBusyPm)?,
        get(SampleKind::TcpRwndLimitedPm)?,
        get(SampleKind::TcpSndbufLimitedPm)?,
        get(SampleKind::TcpSndWnd)?,
        get(SampleKind::TcpUnackedBytes)?,
    );
    let n = busy.len().min(rwnd.len()).min(sndbuf.len());
    if n == 0 {
        return None;
    }
    let (mut by_rwnd, mut by_buf) = (0u64, 0u64);
    for i in 0..n {
        let neither = busy[i].saturating_sub(rwnd[i] + sndbuf[i]);
        let cwnd = o.cwnd.get(i).copied().unwrap_or(0) * u64::from(mss);
        let (Some(&w), Some(&f)) = (wnd.get(i), flight.get(i)) else {
            continue;
        };
        if cwnd > w {
            by_rwnd += neither;
        } else if 2 * f < cwnd {
            by_buf += neither;
        }
    }
    let share = |x: u64| x as f64 / 1000.0 / n as f64;
    Some((share(by_rwnd), share(by_buf)))
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
