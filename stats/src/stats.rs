//! Summary statistics of one set of samples, computed exactly from the raw
//! values (never from histogram bins).
//!
//! Definitions (the udpmon ones, see docs/design.md "Statistics"):
//! - `sigma` is the population standard deviation sqrt(m2), where
//!   mk = (1/n) sum (x - mean)^k;
//! - `skew` = m3 / m2^1.5 and `kurtosis` = m4 / m2^2 - 3 (excess kurtosis,
//!   0 for a normal distribution);
//! - quantiles use linear interpolation between order statistics, numpy's
//!   default `"linear"` method: position h = (n - 1) p, value
//!   x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]);
//! - `mad` is the median of |x - median| (not scaled by 1.4826).
//!
//! Edge cases: n = 0 is an error ([`StatsError::Empty`]); when all values are
//! equal (including n = 1) sigma, skew and kurtosis are exactly 0, not NaN.
//! NaN and infinities are always rejected; callers whose values are times also
//! call [`check_times`](crate::error::check_times) to reject negatives.
//!
//! Speed: moments are one corrected two-pass sweep; quantiles and the MAD use
//! radix selection ([`crate::select`]), a few linear passes instead of a sort,
//! and the input is never copied or reordered.

use crate::error::{check_finite, StatsError};
use crate::select::{select, CHUNK};

/// Probabilities of the reported quantiles, in [`Summary`] field order
/// `iq25, median, iq75, p90, p99, p999, p9999`.
pub const QUANTILE_PROBS: [f64; 7] = [0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999];

/// Statistics of one sample set. Keys match the JS/JSON contract: this is
/// also the statistics object of every result summary (`rtt_us`,
/// `send_gap_us`, `interarrival_us`, ...; the protocol's `summary::Stats`),
/// in the unit the key that holds it names.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Number of samples (>= 1; 0 only in a default, empty object).
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation, sqrt(m2).
    pub sigma: f64,
    /// m3 / m2^1.5; 0 when all values are equal.
    pub skew: f64,
    /// m4 / m2^2 - 3; 0 when all values are equal.
    pub kurtosis: f64,
    /// 50th percentile.
    pub median: f64,
    /// 25th percentile.
    pub iq25: f64,
    /// 75th percentile.
    pub iq75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
}

/// Adds sum d, d^2, d^3, d^4 (d = x - mean0) of one chunk to `acc`.
#[inline(never)]
fn moment_sums(values: &[f64], mean0: f64, acc: &mut [f64; 4]) {
    let [mut s1, mut s2, mut s3, mut s4] = *acc;
    for &x in values {
        let d = x - mean0;
        let d2 = d * d;
        s1 += d;
        s2 += d2;
        s3 += d2 * d;
        s4 += d2 * d2;
    }
    *acc = [s1, s2, s3, s4];
}

/// One pass over a chunk: all finite?, min, max, sum.
#[inline(never)]
fn scan(values: &[f64], acc: &mut (bool, f64, f64, f64)) {
    let (mut finite, mut min, mut max, mut sum) = *acc;
    for &x in values {
        finite &= x.is_finite();
        min = min.min(x);
        max = max.max(x);
        sum += x;
    }
    *acc = (finite, min, max, sum);
}

/// Mean, m2, m3, m4 of finite, non-empty values (corrected two-pass).
pub(crate) fn moments(values: &[f64]) -> (f64, f64, f64, f64) {
    moments_from(values, values.iter().sum())
}

/// [`moments`] when the plain sum of `values` is already known.
fn moments_from(values: &[f64], sum: f64) -> (f64, f64, f64, f64) {
    let n = values.len() as f64;
    let mean0 = sum / n;
    let mut acc = [0.0; 4];
    for c in values.chunks(CHUNK) {
        moment_sums(c, mean0, &mut acc);
    }
    let [s1, s2, s3, s4] = acc;
    // Correct for the rounding error of mean0 (c = true mean - mean0).
    let c = s1 / n;
    let mean = mean0 + c;
    let m2 = (s2 / n - c * c).max(0.0);
    let m3 = s3 / n - 3.0 * c * s2 / n + 2.0 * c * c * c;
    let m4 = s4 / n - 4.0 * c * s3 / n + 6.0 * c * c * s2 / n - 3.0 * c * c * c * c;
    (mean, m2, m3, m4)
}

/// Linear-interpolation quantiles at `probs` of `map(v)` over `values`.
/// With `sorted` (values ascending, `map` the identity) ranks are read
/// directly; otherwise they come from radix selection.
fn quantiles<F: Fn(f64) -> f64>(
    values: &[f64],
    map: F,
    range: (f64, f64),
    probs: &[f64],
    sorted: bool,
) -> Vec<f64> {
    let n = values.len();
    let pos: Vec<(usize, f64)> = probs
        .iter()
        .map(|p| {
            let h = (n - 1) as f64 * p;
            let k = (h.floor() as usize).min(n - 1);
            (k, h - k as f64)
        })
        .collect();
    let mut ranks: Vec<usize> = pos
        .iter()
        .flat_map(|&(k, f)| [k, if f > 0.0 && k + 1 < n { k + 1 } else { k }])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let found: Vec<f64> = if sorted {
        ranks.iter().map(|&r| values[r]).collect()
    } else {
        select(values, map, range, &ranks)
    };
    let get = |r: usize| found[ranks.binary_search(&r).expect("rank selected")];
    pos.iter()
        .map(|&(k, f)| {
            let lo = get(k);
            if f > 0.0 && k + 1 < n {
                lo + f * (get(k + 1) - lo)
            } else {
                lo
            }
        })
        .collect()
}

/// One linear-interpolation quantile of `values` (0 <= p <= 1).
pub fn quantile(values: &[f64], p: f64) -> Result<f64, StatsError> {
    quantiles_at(values, &[p]).map(|q| q[0])
}

/// Linear-interpolation quantiles of `values` at each of `probs` (each
/// 0 <= p <= 1), from one selection pass rather than one per probability.
pub fn quantiles_at(values: &[f64], probs: &[f64]) -> Result<Vec<f64>, StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty { what: "samples" });
    }
    check_finite(values)?;
    if let Some(&p) = probs.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(StatsError::InvalidParameter {
            name: "probability",
            value: p,
            why: "must be between 0 and 1",
        });
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(quantiles(values, |x| x, (lo, hi), probs, false))
}

impl Summary {
    /// Summary of finite values in any order. Copies the values once (a
    /// scratch buffer for selection); `values` is not modified.
    pub fn new(values: &[f64]) -> Result<Summary, StatsError> {
        Self::compute(values, false)
    }

    /// Summary of values already sorted ascending (e.g. a cached sorted
    /// copy); skips the selection work. Unsorted input gives wrong quantiles.
    pub fn from_sorted(sorted: &[f64]) -> Result<Summary, StatsError> {
        Self::compute(sorted, true)
    }

    fn compute(values: &[f64], sorted: bool) -> Result<Summary, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty { what: "samples" });
        }
        let n = values.len();
        let mut acc = (true, values[0], values[0], 0.0);
        for c in values.chunks(CHUNK) {
            scan(c, &mut acc);
        }
        let (finite, min, max, sum) = acc;
        if !finite {
            check_finite(values)?;
        }
        let (mean, sigma, skew, kurtosis) = if min == max {
            (min, 0.0, 0.0, 0.0)
        } else {
            let (mean, m2, m3, m4) = moments_from(values, sum);
            if m2 > 0.0 {
                (mean, m2.sqrt(), m3 / m2.powf(1.5), m4 / (m2 * m2) - 3.0)
            } else {
                (mean, 0.0, 0.0, 0.0)
            }
        };
        let q = quantiles(values, |x| x, (min, max), &QUANTILE_PROBS, sorted);
        let median = q[1];
        // fl(x - median) is monotonic in x, so |x - median| peaks at min or max.
        let dev_max = (median - min).max(max - median);
        let mad = quantiles(
            values,
            |x| (x - median).abs(),
            (0.0, dev_max),
            &[0.5],
            false,
        )[0];
        Ok(Summary {
            n: n as u64,
            min,
            max,
            mean: mean.clamp(min, max),
            sigma,
            skew,
            kurtosis,
            median,
            iq25: q[0],
            iq75: q[2],
            p90: q[3],
            p99: q[4],
            p999: q[5],
            p9999: q[6],
            mad,
        })
    }

    /// `(key, value)` pairs in contract order, for serializers and bindings.
    pub fn fields(&self) -> [(&'static str, f64); 15] {
        [
            ("n", self.n as f64),
            ("min", self.min),
            ("max", self.max),
            ("mean", self.mean),
            ("sigma", self.sigma),
            ("skew", self.skew),
            ("kurtosis", self.kurtosis),
            ("median", self.median),
            ("iq25", self.iq25),
            ("iq75", self.iq75),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p999", self.p999),
            ("p9999", self.p9999),
            ("mad", self.mad),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rtt_us` and friends carry every figure of the statistics crate's
    /// `Summary`, in its order, `n` as a whole number and the rest as floats.
    #[test]
    fn stats_object_has_every_summary_field_in_order() {
        let s = Summary::new(&[1.0, 2.0, 4.0, 8.0]).unwrap();
        let v = serde_json::to_value(s).unwrap();
        let o = v.as_object().unwrap();
        let names: Vec<&str> = s.fields().iter().map(|(k, _)| *k).collect();
        assert_eq!(o.keys().map(String::as_str).collect::<Vec<_>>(), names);
        for (k, x) in s.fields() {
            if k == "n" {
                assert_eq!(o[k].as_u64(), Some(x as u64));
            } else {
                assert!(o[k].is_f64(), "{k}: {}", o[k]);
                assert_eq!(o[k].as_f64(), Some(x), "{k}");
            }
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn empty_is_an_error() {
        assert_eq!(
            Summary::new(&[]),
            Err(StatsError::Empty { what: "samples" })
        );
    }

    #[test]
    fn single_value_has_zero_spread_not_nan() {
        let s = Summary::new(&[7.5]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.mean, s.median, s.p9999),
            (1, 7.5, 7.5, 7.5, 7.5, 7.5)
        );
        assert_eq!((s.sigma, s.skew, s.kurtosis, s.mad), (0.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn all_equal_values_with_inexact_mean_give_zero_moments() {
        // 0.1 summed 3 times / 3 is not exactly 0.1; the result must still be 0.
        let s = Summary::new(&[0.1; 3]).unwrap();
        assert_eq!((s.mean, s.sigma, s.skew, s.kurtosis), (0.1, 0.0, 0.0, 0.0));
    }

    #[test]
    fn small_set_matches_hand_computation() {
        let s = Summary::new(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.mean, 2.5);
        assert!(close(s.sigma, 1.25f64.sqrt(), 1e-15));
        assert_eq!(s.skew, 0.0);
        // m4 = (2*1.5^4 + 2*0.5^4)/4 = 2.5625; m2^2 = 1.5625
        assert!(close(s.kurtosis, 2.5625 / 1.5625 - 3.0, 1e-14));
        assert_eq!((s.median, s.iq25, s.iq75), (2.5, 1.75, 3.25));
        assert!(close(s.p90, 3.7, 1e-15));
        assert_eq!(s.mad, 1.0);
    }

    #[test]
    fn nan_is_rejected() {
        assert!(matches!(
            Summary::new(&[1.0, f64::NAN]),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
    }

    #[test]
    fn sorted_and_unsorted_paths_agree() {
        let v: Vec<f64> = (0..1001)
            .map(|i| ((i * 7919) % 1001) as f64 * 0.37)
            .collect();
        let mut s = v.clone();
        s.sort_unstable_by(f64::total_cmp);
        let (a, b) = (Summary::new(&v).unwrap(), Summary::from_sorted(&s).unwrap());
        // Quantiles are identical; moments differ only by summation order.
        for ((k, x), (_, y)) in a.fields().iter().zip(b.fields()) {
            let tol = if ["mean", "sigma", "kurtosis"].contains(k) {
                1e-13
            } else {
                0.0
            };
            let ok = if *k == "skew" {
                (x - y).abs() < 1e-14
            } else {
                close(*x, y, tol) || x == &y
            };
            assert!(ok, "{k}: {x} vs {y}");
        }
    }

    #[test]
    fn large_offset_does_not_destroy_variance() {
        let v: Vec<f64> = (0..1000).map(|i| 1e12 + (i % 10) as f64).collect();
        let s = Summary::new(&v).unwrap();
        assert!(close(s.sigma, 8.25f64.sqrt(), 1e-9), "{}", s.sigma);
        assert!(s.skew.abs() < 1e-6, "{}", s.skew);
    }

    #[test]
    fn quantile_interpolates_like_numpy() {
        assert_eq!(quantile(&[10.0, 20.0], 0.25).unwrap(), 12.5);
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 1.0).unwrap(), 3.0);
        assert!(quantile(&[1.0], 1.5).is_err());
    }
}
