//! Clock offset and drift between two agents, and one-way delays, from
//! probes that carry four timestamps: `t1` the requester sent (its clock),
//! `t2` the responder received and `t3` it replied (the responder's clock),
//! `t4` the reply arrived (the requester's clock). This is what latency under
//! load needs to say which direction is congested.
//!
//! For each probe the round trip is `(t4 - t1) - (t3 - t2)` and the offset
//! of the responder's clock is `((t2 - t1) + (t3 - t4)) / 2`, exact when the
//! two directions take equally long. Neither one-way delay can be negative,
//! so the responder's clock is ahead by at most `t2 - t1` and at least
//! `t3 - t4` at that moment: a band as wide as the round trip (NTP's
//! bound). Queueing only ever adds delay, so the least-delayed probes give
//! the narrowest bands: the time range is cut into windows, the probe with
//! the least delay each way is kept from each (the lower envelopes, as
//! NTP's clock filter and Paxson's skew estimate keep the fastest); the
//! drift (clocks run at slightly different rates: tens of ppm) is the
//! slope through each window's fastest probe, and the offset lies midway
//! between the tightest ceiling and floor along that slope. The
//! uncertainty is how far any line through all the bands strays from it
//! within the test: the true offset lies inside it, whatever the drift
//! (up to 1000 ppm) and whatever constant asymmetry the path has, which no
//! two-way exchange can see; it comes to about half the smallest round
//! trip, and bounds every one-way delay.

use crate::error::{check_finite, StatsError};
use crate::stats::quantile;

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
    /// How far the true offset may be from the fitted line anywhere in the
    /// probes' span (ns): how far any line through every kept probe's band
    /// strays from it (about half the smallest round trip: a path slower
    /// one way than the other by a constant amount looks exactly like an
    /// offset; with `slack`, the widest kept probe's round trip plus it).
    pub uncertainty: f64,
    /// How far the bands had to be widened for one line to pass through
    /// them all (ns): 0 unless the drift changed or a timestamp is off.
    pub slack: f64,
    /// Standard deviation of the fastest probe of each window's offset
    /// about the fitted line (ns).
    pub residual_sd: f64,
    /// Probes the fit used (the least-delayed ones each way, per window)
    /// and probes that were usable.
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
/// are left out. The time range is cut into `windows` (at least 1) slices;
/// each contributes its least-delayed probe in each direction (the lower
/// envelopes of the two one-way delays). Every kept probe says where the
/// true offset line may pass: one-way delays are never negative, so at the
/// probe's time the offset lies between `t3 - t4` and `t2 - t1` (a band as
/// wide as its round trip: NTP's bound). The drift is the least-squares
/// slope through the offsets of each window's fastest quiet probe (kept to
/// the slopes a line through every band can have), the offset lies midway
/// between the tightest ceiling and floor along it, and the uncertainty is
/// how far any line through every band (drift up to 1000 ppm) strays from
/// it at the ends of the test, so the true offset lies within it anywhere
/// in the test as long as the drift was constant. Bands that no one line passes through (the clocks'
/// rate changed, a timestamp is off) are widened by the least amount that
/// lets one through, and the uncertainty is then the widest kept round
/// trip plus that amount (the truth is inside each band, the line within
/// that amount of it).
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
    // Each probe at the middle of its exchange, seconds from the first send.
    let at = |i: usize| ((t1[i] + t4[i]) / 2.0 - t0) / 1e9;
    let (lo, hi) = valid
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &i| {
            (lo.min(at(i)), hi.max(at(i)))
        });
    let windows = windows.max(1);
    let width = ((hi - lo) / windows as f64).max(f64::MIN_POSITIVE);
    // Per window: the least-delayed probe going up (smallest t2 - t1: the
    // tightest ceiling), coming down (largest t3 - t4: the tightest floor)
    // and over the round trip (for the residual).
    let mut up: Vec<Option<usize>> = vec![None; windows];
    let mut down = up.clone();
    let mut fast = up.clone();
    for &i in &valid {
        let w = (((at(i) - lo) / width) as usize).min(windows - 1);
        if up[w].map_or(true, |b| t2[i] - t1[i] < t2[b] - t1[b]) {
            up[w] = Some(i);
        }
        if down[w].map_or(true, |b| t3[i] - t4[i] > t3[b] - t4[b]) {
            down[w] = Some(i);
        }
        if fast[w].map_or(true, |b| rtt(i) < rtt(b)) {
            fast[w] = Some(i);
        }
    }
    // Ceilings and floors: (time s, offset ns).
    let ceil: Vec<(f64, f64)> = up
        .iter()
        .flatten()
        .map(|&i| (at(i), t2[i] - t1[i]))
        .collect();
    let floor: Vec<(f64, f64)> = down
        .iter()
        .flatten()
        .map(|&i| (at(i), t3[i] - t4[i]))
        .collect();
    let mut kept: Vec<usize> = up.iter().chain(&down).flatten().copied().collect();
    kept.sort_unstable();
    kept.dedup();
    // One window, or every probe at one instant: no drift to see.
    let drift = windows > 1 && hi > lo;
    let band = Band::new(ceil, floor, drift);
    // The drift: the weighted mean of the slopes of the two envelopes' lines over
    // the quiet probes (a round trip within twice the test's 10th
    // percentile: the loaded phases, whose queueing lifts every ceiling or
    // sinks every floor for seconds, stay out): the line under every
    // ceiling that is closest to them on average, and the one over every
    // floor (queueing and late wake-ups lift a ceiling or sink a floor,
    // never the other way, so these lines follow the least-delayed probes,
    // as in Moon, Skelly and Towsley's skew estimate), kept to the possible
    // slopes. The offset: midway between the tightest ceiling and the
    // tightest floor along it. The uncertainty is how far any possible line
    // strays from this one, which is largest at an end of the test.
    let rtts: Vec<f64> = valid.iter().map(|&i| rtt(i)).collect();
    let cut = 2.0 * quantile(&rtts, 0.1)?;
    let quiet = |side: &[Option<usize>], bound: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        side.iter()
            .flatten()
            .filter(|&&i| rtt(i) <= cut)
            .map(|&i| (at(i), bound(i)))
            .collect()
    };
    let max = if drift { MAX_SLOPE } else { 0.0 };
    let slopes: Vec<(f64, f64)> = [
        envelope_slope(&quiet(&up, &|i| t2[i] - t1[i]), true, max),
        envelope_slope(&quiet(&down, &|i| t3[i] - t4[i]), false, max),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Each side weighted by how tightly its points hug its line (a side
    // whose probes a queue or a late wake-up scatters counts for less).
    let weight = |spread: f64| 1.0 / spread.max(1.0);
    let b = if slopes.is_empty() {
        band.best
    } else {
        let total: f64 = slopes.iter().map(|&(_, s)| weight(s)).sum();
        let mean = slopes.iter().map(|&(b, s)| b * weight(s)).sum::<f64>() / total;
        mean.clamp(band.b_lo, band.b_hi)
    };
    let a = (band.top(b) + band.bottom(b)) / 2.0;
    let (offset, line) = (a, |x: f64| a + b * x);
    let min_rtt = valid.iter().map(|&i| rtt(i)).fold(f64::INFINITY, f64::min);
    let strays = [0.0, hi]
        .into_iter()
        .map(|x| {
            let (low, high) = band.range_at(x);
            (high - line(x)).max(line(x) - low)
        })
        .fold(0.0, f64::max);
    // Bands no one line passes through leave one possible line, within the
    // slack of every kept band; the truth is inside each band, so it is
    // within that band's width (the probe's round trip) plus the slack.
    let uncertainty = if band.slack > 0.0 {
        let widest = kept.iter().map(|&i| rtt(i)).fold(0.0, f64::max);
        strays.max(widest + band.slack)
    } else {
        strays
    };
    let fastest: Vec<usize> = fast.into_iter().flatten().collect();
    let residual_sd = if fastest.len() > 2 {
        let ss: f64 = fastest
            .iter()
            .map(|&i| (theta(i) - line(at(i))).powi(2))
            .sum();
        (ss / (fastest.len() - 2) as f64).sqrt()
    } else {
        0.0
    };
    Ok(ClockFit {
        offset,
        drift_ppm: b / 1e3,
        min_rtt,
        uncertainty,
        slack: band.slack,
        residual_sd,
        used: kept.len(),
        valid: valid.len(),
    })
}

/// The lines `v(x) = a + b x` (x in s, v in ns, b in ns/s) that pass on or
/// below every ceiling and on or above every floor, each widened by `slack`
/// (0 when some line passes as they are). For a slope `b` the highest line
/// is `top(b) = min (c - b x)` over the ceilings (concave in `b`), the lowest
/// `bottom(b) = max (f - b x)` over the floors (convex); a slope is possible
/// where `top - bottom` (concave) is at least `-2 slack`.
struct Band {
    ceil: Vec<(f64, f64)>,
    floor: Vec<(f64, f64)>,
    slack: f64,
    /// The possible slopes, and the one with the most room (the largest
    /// `top - bottom`).
    b_lo: f64,
    b_hi: f64,
    best: f64,
}

/// The largest drift taken as possible: 1000 ppm (1e6 ns/s). The kernel
/// steers a system clock's rate within 500 ppm (adjtimex's frequency
/// limit), so two clocks part by no more than this.
const MAX_SLOPE: f64 = 1e6;
/// Halvings (bisection) and thirds (ternary search): each shrinks the
/// range well below 1e-9 ns/s.
const STEPS: usize = 200;

impl Band {
    /// `drift`: whether the slope is free (else 0).
    fn new(ceil: Vec<(f64, f64)>, floor: Vec<(f64, f64)>, drift: bool) -> Band {
        let max = if drift { MAX_SLOPE } else { 0.0 };
        let mut band = Band {
            ceil,
            floor,
            slack: 0.0,
            b_lo: -max,
            b_hi: max,
            best: 0.0,
        };
        let gap = |b: f64| band.top(b) - band.bottom(b);
        let best = ternary(-max, max, |b| -gap(b));
        let slack = (-gap(best) / 2.0).max(0.0);
        // The possible slopes: where gap + 2 slack >= 0, around `best`.
        let ok = |b: f64| gap(b) + 2.0 * slack >= 0.0;
        let edge = |mut inside: f64, mut outside: f64| {
            if ok(outside) {
                return outside;
            }
            for _ in 0..STEPS {
                let m = (inside + outside) / 2.0;
                if ok(m) {
                    inside = m;
                } else {
                    outside = m;
                }
            }
            inside
        };
        let (b_lo, b_hi) = (edge(best, -max), edge(best, max));
        band.slack = slack;
        band.best = best;
        band.b_lo = b_lo;
        band.b_hi = b_hi;
        band
    }

    fn top(&self, b: f64) -> f64 {
        self.ceil
            .iter()
            .map(|&(x, c)| c - b * x)
            .fold(f64::INFINITY, f64::min)
    }

    fn bottom(&self, b: f64) -> f64 {
        self.floor
            .iter()
            .map(|&(x, f)| f - b * x)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The lowest and highest value the possible lines take at `x`.
    fn range_at(&self, x: f64) -> (f64, f64) {
        let high = |b: f64| self.top(b) + self.slack + b * x;
        let low = |b: f64| self.bottom(b) - self.slack + b * x;
        let bh = ternary(self.b_lo, self.b_hi, |b| -high(b));
        let bl = ternary(self.b_lo, self.b_hi, low);
        (low(bl), high(bh))
    }
}

/// The slope (within +/- `max`) of the envelope line of `points` (time s,
/// ns) and the points' mean distance from it (ns): with `below`, the line
/// on or below every point that is highest at their mean time (so closest
/// to them on average), else the line on or above every point lowest
/// there. `None` without points.
fn envelope_slope(points: &[(f64, f64)], below: bool, max: f64) -> Option<(f64, f64)> {
    if points.is_empty() {
        return None;
    }
    let mean = points.iter().map(|p| p.0).sum::<f64>() / points.len() as f64;
    // Below: the line through the lowest point of `y - b (x - mean)` is
    // the highest at the mean (concave in b); above, mirrored.
    let sign = if below { 1.0 } else { -1.0 };
    let at_mean = |b: f64| {
        points
            .iter()
            .map(|&(x, y)| sign * (y - b * (x - mean)))
            .fold(f64::INFINITY, f64::min)
    };
    let b = ternary(-max, max, |b| -at_mean(b));
    let v = at_mean(b);
    let spread = points
        .iter()
        .map(|&(x, y)| sign * (y - b * (x - mean)) - v)
        .sum::<f64>()
        / points.len() as f64;
    Some((b, spread))
}

/// The argument in `[lo, hi]` where the convex `f` is smallest.
fn ternary(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..STEPS {
        if hi - lo <= 1e-9 {
            break;
        }
        let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
        if f(a) <= f(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    (lo + hi) / 2.0
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
    pub(super) fn probes(offset: f64, ppm: f64, up: f64, down: f64) -> [Vec<f64>; 4] {
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
        let f = clock_fit(&t1, &t2, &t3, &t4, 200).unwrap();
        // The offset at the first probe: 3.7 ms plus 40 ppm of 1 s.
        let truth = 3.7e6 + 40e-6 * 1e9;
        assert!((f.offset - truth).abs() < 2_000.0, "{f:?}");
        assert!((f.drift_ppm - 40.0).abs() < 0.5, "{f:?}");
        assert!(f.used > 200 && f.used <= 400 && f.valid == 2000, "{f:?}");
        // The true offset within the uncertainty, which is about half the
        // smallest round trip (the envelopes are a few us above the path).
        assert!((f.offset - truth).abs() <= f.uncertainty, "{f:?}");
        assert!(f.min_rtt >= 60_000.0 && f.slack == 0.0, "{f:?}");
        assert!((f.uncertainty - f.min_rtt / 2.0).abs() < 5_000.0, "{f:?}");
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
        let f = clock_fit(&t1, &t2, &t3, &t4, 200).unwrap();
        let truth = -1.2e6 - 15e-6 * 1e9;
        assert!((f.offset - truth).abs() <= f.uncertainty, "{f:?}");
        assert!((f.offset - (truth - 30_000.0)).abs() < 3_000.0, "{f:?}");
        assert!((f.drift_ppm + 15.0).abs() < 0.5, "{f:?}");
    }

    #[test]
    fn a_clock_step_widens_the_bands_and_the_uncertainty() {
        // The responder's clock stepped 300 us back halfway (an NTP step):
        // no one line fits; the truth stays within the uncertainty.
        let [t1, mut t2, mut t3, t4] = probes(2e6, 0.0, 30_000.0, 30_000.0);
        for i in 1000..t1.len() {
            t2[i] -= 300_000.0;
            t3[i] -= 300_000.0;
        }
        let f = clock_fit(&t1, &t2, &t3, &t4, 200).unwrap();
        assert!(f.slack > 100_000.0, "{f:?}");
        for (i, &t) in t1.iter().enumerate() {
            let truth = 2e6 - if i >= 1000 { 300_000.0 } else { 0.0 };
            let err = (f.offset_at(t, t1[0]) - truth).abs();
            assert!(err <= f.uncertainty, "probe {i}: {err} ns: {f:?}");
        }
    }

    #[test]
    fn damaged_probes_and_short_inputs() {
        let [mut t1, t2, t3, t4] = probes(0.0, 0.0, 10_000.0, 10_000.0);
        t1[7] = t4[7] + 1.0; // a reply before its request: left out
        let f = clock_fit(&t1, &t2, &t3, &t4, 1).unwrap();
        // One window: its least-delayed probe each way, no drift.
        assert_eq!((f.valid, f.drift_ppm), (1999, 0.0));
        assert!(f.used <= 2 && f.offset.abs() < 10_000.0, "{f:?}");
        assert!(f.offset.abs() <= f.uncertainty, "{f:?}");
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
