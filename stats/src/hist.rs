//! Histograms and CDFs rebuilt on demand from raw samples, so the page can
//! change bin width and low limit without asking the agent again.
//!
//! Bins follow udpmon: a bin width and a low limit, plus either a high limit
//! or a bin count. Bin `i` holds `low + i*w <= x < low + (i+1)*w`. Values
//! below `low` count as underflow, values at or above the effective high limit
//! `low + bins*w` as overflow, so `sum(counts) + underflow + overflow == n`.
//! When a high limit is given the bin count is `ceil((high - low) / w)`, so
//! the last bin may reach a little past `high` (it is never cut short).

use crate::error::{check_finite, StatsError};

/// Largest bin count accepted (16 Mi bins = 64 MiB of counts).
pub const MAX_BINS: usize = 1 << 24;

/// How the top of the histogram is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Upper {
    /// A high limit; bins = ceil((high - low) / width), at least 1.
    High(f64),
    /// An explicit number of bins (>= 1).
    Bins(usize),
    /// Just enough bins to hold the largest sample (no overflow).
    Auto,
}

/// Bin one chunk (non-inlined: see [`crate::select::CHUNK`]); returns
/// (underflow, overflow).
#[inline(never)]
fn bin_chunk(
    values: &[f64],
    bin_width: f64,
    low: f64,
    bins_f: f64,
    counts: &mut [u32],
) -> (u64, u64) {
    let (mut underflow, mut overflow) = (0u64, 0u64);
    for &x in values {
        if x < low {
            underflow += 1;
            continue;
        }
        // x >= low, so truncation is floor (and avoids a libm call).
        let q = (x - low) / bin_width;
        if q >= bins_f {
            overflow += 1;
        } else {
            counts[q as usize] += 1;
        }
    }
    (underflow, overflow)
}

/// A fixed-width histogram with underflow and overflow counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Low edge of bin 0.
    pub low: f64,
    /// Bin width (> 0).
    pub bin_width: f64,
    /// Counts per bin.
    pub counts: Vec<u32>,
    /// Samples below `low`.
    pub underflow: u64,
    /// Samples at or above `high()`.
    pub overflow: u64,
}

impl Histogram {
    /// Bin `values` (finite; at most `u32::MAX` of them).
    pub fn new(values: &[f64], bin_width: f64, low: f64, upper: Upper) -> Result<Self, StatsError> {
        check_finite(values)?;
        if !(bin_width.is_finite() && bin_width > 0.0) {
            return Err(StatsError::InvalidParameter {
                name: "bin width",
                value: bin_width,
                why: "must be a finite number > 0",
            });
        }
        if !low.is_finite() {
            return Err(StatsError::InvalidParameter {
                name: "low limit",
                value: low,
                why: "must be a finite number",
            });
        }
        if values.len() > u32::MAX as usize {
            return Err(StatsError::InvalidParameter {
                name: "sample count",
                value: values.len() as f64,
                why: "histograms hold at most 2^32-1 samples",
            });
        }
        let bins_f = match upper {
            Upper::High(high) => {
                if !(high.is_finite() && high > low) {
                    return Err(StatsError::InvalidParameter {
                        name: "high limit",
                        value: high,
                        why: "must be a finite number above the low limit",
                    });
                }
                ((high - low) / bin_width).ceil().max(1.0)
            }
            Upper::Bins(b) => b as f64,
            Upper::Auto => {
                let max = values.iter().copied().fold(low, f64::max);
                ((max - low) / bin_width).floor() + 1.0
            }
        };
        if !(1.0..=MAX_BINS as f64).contains(&bins_f) {
            return Err(StatsError::InvalidParameter {
                name: "bin count",
                value: bins_f,
                why: "must be between 1 and 16777216; use a wider bin or a narrower range",
            });
        }
        let bins = bins_f as usize;
        let mut counts = vec![0u32; bins];
        let (mut underflow, mut overflow) = (0u64, 0u64);
        for c in values.chunks(crate::select::CHUNK) {
            let (u, o) = bin_chunk(c, bin_width, low, bins_f, &mut counts);
            underflow += u;
            overflow += o;
        }
        Ok(Histogram {
            low,
            bin_width,
            counts,
            underflow,
            overflow,
        })
    }

    /// Effective high limit, `low + bins * bin_width`.
    pub fn high(&self) -> f64 {
        self.low + self.counts.len() as f64 * self.bin_width
    }

    /// Total of all counts including underflow and overflow (== n).
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum::<u64>() + self.underflow + self.overflow
    }
}

/// Bins a histogram starts with before anyone chooses (the page's default;
/// `meshperf run -H` keeps the seeds' 1 us from 0 unless told).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bins {
    /// Low edge of bin 0.
    pub low: f64,
    /// Bin width: 1, 2 or 5 times a power of ten.
    pub width: f64,
    /// Number of bins (at most [`DEFAULT_MOST_BINS`] + 2).
    pub bins: usize,
}

/// Most bins a default histogram is cut into (fewer when the
/// Freedman-Diaconis width is wider).
pub const DEFAULT_MOST_BINS: f64 = 200.0;

/// 1, 2 or 5 times a power of ten, at least `v` (> 0).
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&w| w >= v)
        .unwrap_or(10.0 * p)
}

/// Default bins that cover the data: from the 0.5th to the 99.5th
/// percentile, widened by 5% of that range each side, or out to the
/// minimum or maximum where that tail is short (within half the central
/// range), so at most 1% of the samples (a long tail's) fall outside, as
/// underflow and overflow, and a sample set without long tails fits
/// whole. Widths are Freedman-Diaconis (2 IQR / n^(1/3)), kept between
/// 1/200 and 1/20 of the range and rounded up to 1, 2 or 5 times a power
/// of ten; the low edge is a multiple of the width.
pub fn default_bins(values: &[f64]) -> Result<Bins, StatsError> {
    let q = crate::stats::quantiles_at(values, &[0.0, 0.005, 0.25, 0.75, 0.995, 1.0])?;
    let [min, p005, q25, q75, p995, max] = [q[0], q[1], q[2], q[3], q[4], q[5]];
    let core = p995 - p005;
    let (lo, hi) = if core > 0.0 {
        let lo = if p005 - min <= 0.5 * core {
            min
        } else {
            p005 - 0.05 * core
        };
        let hi = if max - p995 <= 0.5 * core {
            max
        } else {
            p995 + 0.05 * core
        };
        (lo, hi)
    } else {
        (min, max)
    };
    let span = hi - lo;
    if span <= 0.0 {
        // One value: one bin around it.
        let width = nice(if lo != 0.0 { lo.abs() / 10.0 } else { 1.0 });
        let low = (lo / width).floor() * width;
        return Ok(Bins {
            low,
            width,
            bins: 1,
        });
    }
    let fd = 2.0 * (q75 - q25) / (values.len() as f64).cbrt();
    let want = if fd > 0.0 { fd } else { span / 60.0 };
    let width = nice(want.clamp(span / DEFAULT_MOST_BINS, span / 20.0));
    let mut low = (lo / width).floor() * width;
    if low > lo {
        low -= width;
    }
    let mut bins = ((hi - low) / width).floor() as usize + 1;
    // Rounding: the top value lies inside the last bin, not on its edge.
    while low + bins as f64 * width <= hi {
        bins += 1;
    }
    Ok(Bins { low, width, bins })
}

/// Indices of the CDF points kept for `n` values and `max_points`.
fn cdf_indices(n: usize, max_points: usize) -> Result<Vec<usize>, StatsError> {
    if max_points < 2 {
        return Err(StatsError::InvalidParameter {
            name: "max points",
            value: max_points as f64,
            why: "must be at least 2",
        });
    }
    let take = n.min(max_points);
    Ok((0..take)
        .map(|k| {
            if take == n {
                k
            } else {
                ((k as u128 * (n - 1) as u128 + (take - 1) as u128 / 2) / (take - 1) as u128)
                    as usize
            }
        })
        .collect())
}

/// Like [`cdf`] for values in any order (finite, at most 65534 points):
/// the kept order statistics come from radix selection, so 10 M samples
/// need a few linear passes instead of a sort. Same result as [`cdf`] on the
/// sorted values.
pub fn cdf_unsorted(values: &[f64], max_points: usize) -> Result<(Vec<f64>, Vec<f64>), StatsError> {
    check_finite(values)?;
    let n = values.len();
    let idx = cdf_indices(n, max_points.min(65534))?;
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let xs = crate::select::select(values, |x| x, (lo, hi), &idx);
    let fs = idx.iter().map(|&i| (i + 1) as f64 / n as f64).collect();
    Ok((xs, fs))
}

/// Empirical CDF points `(x, fraction)` of ascending `sorted` values, at most
/// `max_points` of them (>= 2). Point `i` is `(sorted[i], (i + 1) / n)`; when
/// decimating, indices are spread evenly and the first and last are kept.
pub fn cdf(sorted: &[f64], max_points: usize) -> Result<(Vec<f64>, Vec<f64>), StatsError> {
    let n = sorted.len();
    let idx = cdf_indices(n, max_points)?;
    let xs = idx.iter().map(|&i| sorted[i]).collect();
    let fs = idx.iter().map(|&i| (i + 1) as f64 / n as f64).collect();
    Ok((xs, fs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic uniform in (0, 1) (xorshift64*), so the tests need no crate.
    fn uniforms(n: usize, mut x: u64) -> impl Iterator<Item = f64> {
        (0..n).map(move |_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        })
    }

    fn binned(v: &[f64]) -> (Bins, Histogram) {
        let b = default_bins(v).unwrap();
        let h = Histogram::new(v, b.width, b.low, Upper::Bins(b.bins)).unwrap();
        assert_eq!(h.total(), v.len() as u64);
        (b, h)
    }

    #[test]
    fn default_bins_hold_a_heavy_tailed_set_but_its_far_tail() {
        // Packet gaps as issue 29 met them: most near 20 us, and a Pareto
        // tail (alpha 1.1) of stalls up to seconds. The old default (60
        // Freedman-Diaconis bins from the minimum) left 220916 of 223214 in
        // overflow.
        let n = 223_214;
        let v: Vec<f64> = uniforms(n, 0x9e37_79b9_7f4a_7c15)
            .map(|u| 18.0 + 2.0 / u.powf(1.0 / 1.1))
            .collect();
        let (b, h) = binned(&v);
        let out = (h.overflow + h.underflow) as f64 / n as f64;
        assert!(
            h.overflow as f64 / (n as f64) < 0.01,
            "{b:?}: overflow {}",
            h.overflow
        );
        assert!(
            out <= 0.01,
            "{b:?}: {} under, {} over",
            h.underflow,
            h.overflow
        );
        assert!(
            h.overflow > 0,
            "the far tail still counts as overflow: {b:?}"
        );
        assert!(
            (20..=DEFAULT_MOST_BINS as usize + 2).contains(&b.bins),
            "{b:?}"
        );
        let old_width = {
            let s = crate::stats::Summary::new(&v).unwrap();
            nice((2.0 * (s.iq75 - s.iq25) / (n as f64).cbrt()).min((s.max - s.min) / 60.0))
        };
        let old = Histogram::new(
            &v,
            old_width,
            v.iter().copied().fold(f64::MAX, f64::min),
            Upper::Bins(60),
        )
        .unwrap();
        assert!(
            old.overflow as f64 / n as f64 > 0.05,
            "the set is heavy-tailed: {}",
            old.overflow
        );
    }

    #[test]
    fn default_bins_hold_a_set_without_long_tails_whole() {
        // Round-trip times 40..60 us, a normal-ish bump (sum of uniforms).
        let u: Vec<f64> = uniforms(30_000, 7).collect();
        let v: Vec<f64> = u
            .chunks(3)
            .map(|c| 40.0 + 20.0 * c.iter().sum::<f64>() / 3.0)
            .collect();
        let (b, h) = binned(&v);
        assert_eq!((h.underflow, h.overflow), (0, 0), "{b:?}");
        let m = b.width / 10f64.powf(b.width.log10().floor());
        assert!(
            [1.0, 2.0, 5.0].iter().any(|k| (m - k).abs() < 1e-9),
            "{b:?}"
        );
        let k = b.low / b.width;
        assert!(
            (k - k.round()).abs() < 1e-9,
            "the low edge is a multiple of the width: {b:?}"
        );
        // A negative range too (clock offsets), and one value alone.
        let neg: Vec<f64> = v.iter().map(|x| -x).collect();
        let (_, h) = binned(&neg);
        assert_eq!((h.underflow, h.overflow), (0, 0));
        for one in [[7.5; 10], [0.0; 10], [-3.0; 10]] {
            let (b, h) = binned(&one);
            assert_eq!((b.bins, h.counts[0]), (1, 10), "{b:?}");
        }
        assert!(default_bins(&[]).is_err());
    }

    #[test]
    fn counts_plus_under_and_overflow_equal_n() {
        let v = [-1.0, 0.0, 0.5, 1.0, 1.99, 2.0, 2.5, 3.0, 100.0];
        let h = Histogram::new(&v, 1.0, 0.0, Upper::High(3.0)).unwrap();
        assert_eq!(h.counts, vec![2, 2, 2]);
        assert_eq!((h.underflow, h.overflow), (1, 2));
        assert_eq!(h.total(), v.len() as u64);
        assert_eq!(h.high(), 3.0);
    }

    #[test]
    fn high_not_a_multiple_rounds_bins_up() {
        let h = Histogram::new(&[2.4, 2.6], 1.0, 0.0, Upper::High(2.5)).unwrap();
        assert_eq!((h.counts.len(), h.high(), h.overflow), (3, 3.0, 0));
    }

    #[test]
    fn bin_count_and_auto() {
        let h = Histogram::new(&[0.0, 5.0, 9.9, 10.0], 2.0, 0.0, Upper::Bins(5)).unwrap();
        assert_eq!((h.counts, h.overflow), (vec![1, 0, 1, 0, 1], 1));
        let a = Histogram::new(&[0.0, 5.0, 10.0], 2.0, 0.0, Upper::Auto).unwrap();
        assert_eq!((a.counts.len(), a.overflow, a.total()), (6, 0, 3));
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(Histogram::new(&[1.0], 0.0, 0.0, Upper::Auto).is_err());
        assert!(Histogram::new(&[1.0], 1.0, 5.0, Upper::High(5.0)).is_err());
        assert!(Histogram::new(&[1.0], 1e-9, 0.0, Upper::High(1.0)).is_err());
        assert!(Histogram::new(&[1.0], 1.0, 0.0, Upper::Bins(0)).is_err());
        assert!(Histogram::new(&[f64::NAN], 1.0, 0.0, Upper::Auto).is_err());
    }

    #[test]
    fn cdf_keeps_ends_and_decimates() {
        let v: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        let (x, f) = cdf(&v, 11).unwrap();
        assert_eq!(x.len(), 11);
        assert_eq!((x[0], f[0]), (0.0, 0.001));
        assert_eq!((x[10], f[10]), (999.0, 1.0));
        assert!(x.windows(2).all(|w| w[0] < w[1]));
        let (x, f) = cdf(&[1.0, 2.0], 10).unwrap();
        assert_eq!((x, f), (vec![1.0, 2.0], vec![0.5, 1.0]));
        assert!(cdf(&v, 1).is_err());
        let shuffled: Vec<f64> = (0..100_000)
            .map(|i| ((i * 7919) % 100_000) as f64)
            .collect();
        let mut sorted = shuffled.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        assert_eq!(
            cdf_unsorted(&shuffled, 1000).unwrap(),
            cdf(&sorted, 1000).unwrap()
        );
        assert_eq!(
            cdf_unsorted(&[2.0, 1.0], 5).unwrap(),
            (vec![1.0, 2.0], vec![0.5, 1.0])
        );
    }
}
