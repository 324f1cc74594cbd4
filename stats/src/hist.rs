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
