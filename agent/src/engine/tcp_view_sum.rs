//! A side's `tcp_info` summary from its streams' TCP_INFO series
//! ([`super::tcp_view::Sampler`], kept in each [`Outcome`]): sums, shares
//! and the rest of the busy time each limit bound.

use super::bulk::Outcome;
use super::sockopt::missing_fields;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::summary::TcpInfoSummary;

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
