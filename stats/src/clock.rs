//! Clock offset and drift between two agents, and one-way delays, from
//! probes that carry four timestamps: `t1` the requester sent (its clock),
//! `t2` the responder received and `t3` it replied (the responder's clock),
//! `t4` the reply arrived (the requester's clock). This is what latency under
//! load needs to say which direction is congested.
//!
//! For each probe the round trip is `(t4 - t1) - (t3 - t2)` and the offset
//! of the responder's clock is `((t2 - t1) + (t3 - t4)) / 2`, exact when the
//! two directions take equally long. Queueing only ever adds delay, so the
//! probes with the smallest round trips carry the least error: the time
//! range is cut into windows, the fastest probe of each is kept, and a
//! least-squares line through their offsets gives the offset and its drift
//! (clocks run at slightly different rates: tens of ppm). What no two-way
//! exchange can see is a constant asymmetry of the path; the offset is
//! therefore only known within half the smallest round trip, which is
//! reported as the uncertainty of every one-way delay.

use crate::error::{check_finite, StatsError};
use crate::fit::linfit;

/// How the responder's clock relates to the requester's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockFit {
    /// Responder clock minus requester clock at the first probe's send
    /// time, in the timestamps' unit (ns).
    pub offset: f64,
    /// How fast the offset grows: responder seconds gained per requester
    /// second, in parts per million.
    pub drift_ppm: f64,
    /// The smallest round trip of a probe (ns).
    pub min_rtt: f64,
    /// Half of `min_rtt`: a path that is slower one way than the other by
    /// a constant amount shifts the offset by up to this much unseen.
    pub uncertainty: f64,
    /// Standard deviation of the kept probes' offsets about the fitted line.
    pub residual_sd: f64,
    /// Probes the fit used (one per window) and probes that were usable.
    pub used: usize,
    pub valid: usize,
}

impl ClockFit {
    /// The offset at requester time `t` (same unit and origin as `t1`).
    pub fn offset_at(&self, t: f64, t0: f64) -> f64 {
        self.offset + self.drift_ppm * 1e-6 * (t - t0)
    }
}

fn same_len(t1: &[f64], others: [&[f64]; 3]) -> Result<(), StatsError> {
    for o in others {
        if o.len() != t1.len() {
            return Err(StatsError::LengthMismatch {
                what: "probe timestamps t1..t4",
                left: t1.len(),
                right: o.len(),
            });
        }
    }
    Ok(())
}

/// Estimates the clocks' offset and drift from probes `t1..t4` (one entry
/// per probe, ns). Probes with a negative round trip (damaged timestamps)
/// are left out. `windows` (at least 1) is how many slices of the time range
/// contribute their fastest probe; with one the offset is the fastest
/// probe's and the drift 0.
pub fn clock_fit(
    t1: &[f64],
    t2: &[f64],
    t3: &[f64],
    t4: &[f64],
    windows: usize,
) -> Result<ClockFit, StatsError> {
    same_len(t1, [t2, t3, t4])?;
    for t in [t1, t2, t3, t4] {
        check_finite(t)?;
    }
    let valid: Vec<usize> = (0..t1.len())
        .filter(|&i| (t4[i] - t1[i]) - (t3[i] - t2[i]) >= 0.0 && t4[i] >= t1[i])
        .collect();
    if valid.is_empty() {
        return Err(StatsError::TooFew {
            what: "clock fit (probes with a round trip)",
            need: 1,
            got: 0,
        });
    }
    let rtt = |i: usize| (t4[i] - t1[i]) - (t3[i] - t2[i]);
    let theta = |i: usize| ((t2[i] - t1[i]) + (t3[i] - t4[i])) / 2.0;
    let t0 = t1[valid[0]];
    let (lo, hi) = valid
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &i| {
            (lo.min(t1[i]), hi.max(t1[i]))
        });
    let windows = windows.max(1);
    let width = ((hi - lo) / windows as f64).max(f64::MIN_POSITIVE);
    let mut best: Vec<Option<usize>> = vec![None; windows];
    for &i in &valid {
        let w = (((t1[i] - lo) / width) as usize).min(windows - 1);
        if best[w].map_or(true, |b| rtt(i) < rtt(b)) {
            best[w] = Some(i);
        }
    }
    let kept: Vec<usize> = best.into_iter().flatten().collect();
    let min_rtt = valid.iter().map(|&i| rtt(i)).fold(f64::INFINITY, f64::min);
    let x: Vec<f64> = kept.iter().map(|&i| t1[i] - t0).collect();
    let y: Vec<f64> = kept.iter().map(|&i| theta(i)).collect();
    let (offset, slope) = match linfit(&x, &y) {
        Ok(f) => (f.intercept, f.slope),
        // One window, or every kept probe at one instant: no drift to see.
        Err(StatsError::Degenerate) | Err(StatsError::TooFew { .. }) => {
            let i = kept
                .iter()
                .copied()
                .min_by(|&a, &b| rtt(a).total_cmp(&rtt(b)))
                .expect("at least one kept probe");
            (theta(i), 0.0)
        }
        Err(e) => return Err(e),
    };
    let residual_sd = if kept.len() > 2 {
        let ss: f64 = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| (b - (offset + slope * a)).powi(2))
            .sum();
        (ss / (kept.len() - 2) as f64).sqrt()
    } else {
        0.0
    };
    Ok(ClockFit {
        offset,
        drift_ppm: slope * 1e6,
        min_rtt,
        uncertainty: min_rtt / 2.0,
        residual_sd,
        used: kept.len(),
        valid: valid.len(),
    })
}

/// One-way delays of every probe under `fit`: up (requester to responder)
/// and down, in the timestamps' unit. For each probe up + down is its round
/// trip exactly; each is uncertain by `fit.uncertainty`.
pub fn one_way(
    t1: &[f64],
    t2: &[f64],
    t3: &[f64],
    t4: &[f64],
    fit: &ClockFit,
) -> Result<(Vec<f64>, Vec<f64>), StatsError> {
    same_len(t1, [t2, t3, t4])?;
    let t0 = t1.first().copied().unwrap_or(0.0);
    Ok(t1
        .iter()
        .zip(t2)
        .zip(t3)
        .zip(t4)
        .map(|(((&a, &b), &c), &d)| {
            let off = fit.offset_at((a + d) / 2.0, t0);
            (b - off - a, d - (c - off))
        })
        .unzip())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes every 5 ms for 10 s between clocks `offset` ns and `ppm` apart,
    /// with one-way delays `up`/`down` ns plus queueing noise that only adds
    /// (a deterministic pseudo-random sequence), 5 us in the responder.
    fn probes(offset: f64, ppm: f64, up: f64, down: f64) -> [Vec<f64>; 4] {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut noise = |scale: f64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let u = (seed >> 11) as f64 / (1u64 << 53) as f64;
            -scale * (1.0 - u).ln()
        };
        let server = |t: f64| t + offset + ppm * 1e-6 * t;
        let mut out: [Vec<f64>; 4] = Default::default();
        for k in 0..2000 {
            let a = 1e9 + k as f64 * 5e6;
            let arrive = a + up + noise(40_000.0);
            let leave = arrive + 5_000.0;
            let back = leave + down + noise(40_000.0);
            out[0].push(a);
            out[1].push(server(arrive));
            out[2].push(server(leave));
            out[3].push(back);
        }
        out
    }

    #[test]
    fn recovers_offset_and_drift_and_splits_the_round_trip() {
        let [t1, t2, t3, t4] = probes(3.7e6, 40.0, 30_000.0, 30_000.0);
        let f = clock_fit(&t1, &t2, &t3, &t4, 20).unwrap();
        // The offset at the first probe: 3.7 ms plus 40 ppm of 1 s.
        let truth = 3.7e6 + 40e-6 * 1e9;
        assert!((f.offset - truth).abs() < 2_000.0, "{f:?}");
        assert!((f.drift_ppm - 40.0).abs() < 0.5, "{f:?}");
        assert_eq!((f.used, f.valid), (20, 2000));
        assert!(f.min_rtt >= 60_000.0 && f.uncertainty == f.min_rtt / 2.0);
        let (up, down) = one_way(&t1, &t2, &t3, &t4, &f).unwrap();
        for i in 0..t1.len() {
            let rtt = (t4[i] - t1[i]) - (t3[i] - t2[i]);
            assert!((up[i] + down[i] - rtt).abs() < 1e-3, "probe {i}");
        }
        // The fastest probes' one-way delays are near the path's 30 us each.
        let min_up = up.iter().copied().fold(f64::INFINITY, f64::min);
        assert!((min_up - 30_000.0).abs() < 3_000.0, "{min_up}");
    }

    #[test]
    fn an_asymmetric_path_stays_within_the_reported_uncertainty() {
        // 20 us up, 80 us down: no two-way exchange can tell this from an
        // offset 30 us different; the uncertainty must cover it.
        let [t1, t2, t3, t4] = probes(-1.2e6, -15.0, 20_000.0, 80_000.0);
        let f = clock_fit(&t1, &t2, &t3, &t4, 20).unwrap();
        let truth = -1.2e6 - 15e-6 * 1e9;
        assert!((f.offset - truth).abs() <= f.uncertainty, "{f:?}");
        assert!((f.offset - (truth - 30_000.0)).abs() < 3_000.0, "{f:?}");
        assert!((f.drift_ppm + 15.0).abs() < 0.5, "{f:?}");
    }

    #[test]
    fn damaged_probes_and_short_inputs() {
        let [mut t1, t2, t3, t4] = probes(0.0, 0.0, 10_000.0, 10_000.0);
        t1[7] = t4[7] + 1.0; // a reply before its request: left out
        let f = clock_fit(&t1, &t2, &t3, &t4, 1).unwrap();
        assert_eq!((f.valid, f.used, f.drift_ppm), (1999, 1, 0.0));
        assert!(f.offset.abs() < 10_000.0);
        assert!(matches!(
            clock_fit(&t1[..3], &t2, &t3, &t4, 4),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            clock_fit(&[], &[], &[], &[], 4),
            Err(StatsError::TooFew { .. })
        ));
        assert!(clock_fit(&[f64::NAN], &[0.0], &[0.0], &[1.0], 1).is_err());
    }
}
