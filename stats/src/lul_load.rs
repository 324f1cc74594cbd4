//! Latency under load's TCP load against time: each phase's streams on the
//! test's own time axis.
//!
//! The phases run one after another, and every load stream's `interval_bytes`
//! count from the start of its own phase (agent/src/engine/lul/load.rs), so
//! interval `i` of the download phase and interval `i` of the upload phase are
//! seconds apart. Adding every stream's interval `i` (what a one-phase stream
//! test's total is) would lay the phases onto one another and read download +
//! upload + both as one rate. Here the streams are summed only within their
//! phase and each phase's intervals are placed at their own time: the phase
//! starts where the one before ended plus the gap (the driving agent's
//! timeline: `idle`, gap, `download`, gap, `upload`, gap, `both`).
//!
//! Stream numbering (the engine's): with `n` streams per direction, up
//! connections `0..n` (upload phase) and `n..2n` (both), down connections
//! `2n..3n` (download) and `3n..4n` (both).

use crate::error::StatsError;
use crate::series::rate_series;

/// Phase codes, as the probes' `probe_phase` has them.
pub const IDLE: u8 = 0;
pub const DOWNLOAD: u8 = 1;
pub const UPLOAD: u8 = 2;
pub const BOTH: u8 = 3;

/// The phase (code) of load stream `stream` and whether it carries the up
/// direction (driving to serving agent); `None` outside the `4n` streams.
pub fn stream_phase(stream: u16, n: u16) -> Option<(u8, bool)> {
    let (s, n) = (stream as u32, n.max(1) as u32);
    Some(match s / n {
        0 => (UPLOAD, true),
        1 => (BOTH, true),
        2 => (DOWNLOAD, false),
        3 => (BOTH, false),
        _ => return None,
    })
}

/// When each phase (idle, download, upload, both) started, s since the
/// test's start: each starts where the one before ended (`phase_s`, how long
/// each ran) plus `gap_s`.
pub fn phase_starts(phase_s: &[f64; 4], gap_s: f64) -> [f64; 4] {
    let mut out = [0.0; 4];
    for k in 1..4 {
        out[k] = out[k - 1] + phase_s[k - 1] + gap_s;
    }
    out
}

/// When each load stream's phase started, s since the test's start
/// ([`stream_phase`], [`phase_starts`]): its `interval_bytes` count from
/// there. NaN for a stream outside the `4n`.
pub fn stream_starts(streams: &[u16], n: u16, phase_s: &[f64; 4], gap_s: f64) -> Vec<f64> {
    let starts = phase_starts(phase_s, gap_s);
    streams
        .iter()
        .map(|&s| stream_phase(s, n).map_or(f64::NAN, |(code, _)| starts[code as usize]))
        .collect()
}

/// One direction's load, interval by interval, in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseRates {
    /// When each interval ended, s since the test's start (the last one of
    /// a phase where the phase's last byte arrived, when known).
    pub t_s: Vec<f64>,
    /// Bits per second over the interval, the phase's streams of this
    /// direction summed.
    pub bps: Vec<f64>,
    /// The interval's phase code.
    pub phase: Vec<u8>,
    /// 1 for a phase's last interval (usually shorter than the others), else 0.
    pub last: Vec<u8>,
}

/// Direction `up`'s throughput from the receiving side's load streams
/// (`(stream, bytes per interval)`; the other direction's streams are
/// ignored), `n` streams per direction, intervals of `interval_ms`.
/// `phase_s` and `gap_s` place the phases ([`phase_starts`]); `recv_s[code]`,
/// when finite, is the receiver's time from the phase's start to its last
/// byte (the summary's rate rests on it): the phase's last interval is scaled
/// to it ([`rate_series`]) and ends there.
pub fn phase_rates(
    streams: &[(u16, &[f64])],
    n: u16,
    up: bool,
    phase_s: &[f64; 4],
    gap_s: f64,
    recv_s: &[f64; 4],
    interval_ms: f64,
) -> Result<PhaseRates, StatsError> {
    let starts = phase_starts(phase_s, gap_s);
    let dt = interval_ms / 1e3;
    let mut out = PhaseRates::default();
    for code in [DOWNLOAD, UPLOAD, BOTH] {
        let mut sum: Vec<f64> = Vec::new();
        let mut any = false;
        for &(s, v) in streams {
            if stream_phase(s, n) != Some((code, up)) {
                continue;
            }
            any = true;
            if sum.len() < v.len() {
                sum.resize(v.len(), 0.0);
            }
            for (a, b) in sum.iter_mut().zip(v) {
                *a += b;
            }
        }
        if !any || sum.is_empty() {
            continue;
        }
        let end = Some(recv_s[code as usize]).filter(|s| s.is_finite() && *s > 0.0);
        let rates = rate_series(&sum, interval_ms, end)?;
        let last = rates.len() - 1;
        for (i, r) in rates.into_iter().enumerate() {
            let full = (i + 1) as f64 * dt;
            let at = match end {
                Some(e) if i == last && e > i as f64 * dt => full.min(e),
                _ => full,
            };
            out.t_s.push(starts[code as usize] + at);
            out.bps.push(r);
            out.phase.push(code);
            out.last.push((i == last) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_load_stream_starts_with_its_phase() {
        // 1 s idle, 2 s download, 3 s upload, 4 s both, 0.5 s gaps; 2 streams a direction.
        let t = stream_starts(&[0, 1, 2, 3, 4, 5, 6, 7, 8], 2, &[1.0, 2.0, 3.0, 4.0], 0.5);
        // upload 4 s in (1 + 0.5 + 2 + 0.5), both 7.5 s, download 1.5 s.
        assert_eq!(t[..8], [4.0, 4.0, 7.5, 7.5, 1.5, 1.5, 7.5, 7.5]);
        assert!(t[8].is_nan());
    }

    /// Two streams per direction, 100 ms intervals, phases 1 s idle and 2 s
    /// each with 0.5 s gaps: download at 8, upload at 4, both at 2 (down)
    /// and 1 (up) Mbit/s per stream.
    fn fixture() -> Vec<(u16, Vec<f64>)> {
        let flat = |mbit: f64, k: usize| vec![mbit * 1e6 / 8.0 * 0.1; k];
        vec![
            (0, flat(4.0, 20)),
            (1, flat(4.0, 20)),
            (2, flat(1.0, 20)),
            (3, flat(1.0, 20)),
            (4, flat(8.0, 20)),
            (5, flat(8.0, 20)),
            (6, flat(2.0, 20)),
            (7, flat(2.0, 19)),
        ]
    }

    #[test]
    fn each_phase_stays_at_its_own_time_and_phases_are_never_added() {
        let f = fixture();
        let streams: Vec<(u16, &[f64])> = f.iter().map(|(s, v)| (*s, v.as_slice())).collect();
        let len = [1.0, 2.0, 2.0, 2.0];
        assert_eq!(phase_starts(&len, 0.5), [0.0, 1.5, 4.0, 6.5]);
        let nan = [f64::NAN; 4];
        let down = phase_rates(&streams, 2, false, &len, 0.5, &nan, 100.0).unwrap();
        let up = phase_rates(&streams, 2, true, &len, 0.5, &nan, 100.0).unwrap();
        // Down: download's 20 intervals from 1.5 s, then both's 20 from 6.5 s.
        assert_eq!(down.bps.len(), 40);
        assert!((down.t_s[0] - 1.6).abs() < 1e-9 && (down.t_s[19] - 3.5).abs() < 1e-9);
        assert!((down.t_s[20] - 6.6).abs() < 1e-9 && (down.t_s[39] - 8.5).abs() < 1e-9);
        let mb = |v: f64| (v / 1e6 * 1e6).round() / 1e6;
        assert!(
            down.bps[..20].iter().all(|&v| mb(v) == 16.0),
            "{:?}",
            down.bps
        );
        // Both: 2 + 2 Mbit/s, then one stream alone in the last interval.
        assert!(down.bps[20..39].iter().all(|&v| mb(v) == 4.0));
        assert_eq!(mb(down.bps[39]), 2.0);
        assert_eq!(down.phase[..20], [DOWNLOAD; 20]);
        assert_eq!(down.phase[20..], [BOTH; 20]);
        assert_eq!((down.last[19], down.last[18], down.last[39]), (1, 0, 1));
        // Up: upload from 4 s, both from 6.5 s.
        assert!((up.t_s[0] - 4.1).abs() < 1e-9 && (up.t_s[20] - 6.6).abs() < 1e-9);
        assert!(up.bps[..20].iter().all(|&v| mb(v) == 8.0));
        assert!(up.bps[20..].iter().all(|&v| mb(v) == 2.0));
        // The mean over the whole test is a mean of intervals, never the
        // phases' sum (16 + 8 + 6 = 30 is what adding by index gave).
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert_eq!(
            mb(mean(&down.bps[..39])),
            mb((16e6 * 20.0 + 4e6 * 19.0) / 39.0)
        );
        assert!(down.t_s.windows(2).all(|w| w[0] < w[1]), "time order");
    }

    #[test]
    fn the_last_interval_ends_at_the_last_byte_and_strays_are_left_out() {
        let a = [1000.0, 1000.0, 500.0];
        // Stream 9 is outside 4 x 2 streams: ignored.
        let streams: [(u16, &[f64]); 2] = [(4, &a), (9, &a)];
        let recv = [f64::NAN, 0.25, f64::NAN, f64::NAN];
        let r = phase_rates(&streams, 2, false, &[1.0, 0.3, 0.0, 0.0], 0.0, &recv, 100.0).unwrap();
        assert_eq!(r.bps.len(), 3);
        assert!((r.t_s[2] - 1.25).abs() < 1e-9, "{:?}", r.t_s);
        // 500 bytes over the 50 ms the last interval covered.
        assert!((r.bps[2] - 500.0 * 8.0 / 0.05).abs() < 1e-6);
        assert_eq!(stream_phase(9, 2), None);
        assert_eq!(stream_phase(3, 1), Some((BOTH, false)));
        assert!(phase_rates(&streams, 2, false, &[0.0; 4], 0.0, &recv, 0.0).is_err());
    }
}
