//! Series helpers for plotting: min/max decimation of long sample series (so
//! a 10 M point series draws as a few thousand columns without hiding spikes)
//! and conversion of per-interval byte counts into bits/second.

use crate::error::{check_finite, check_times, StatsError};

/// Columnar min/max decimation: bucket `k` starts at sample index `x[k]`
/// and covers the samples up to the next bucket, with their `min` and `max`.
#[derive(Debug, Clone, PartialEq)]
pub struct MinMax {
    /// Index of the first sample of each bucket (or its x value, see
    /// [`decimate_minmax`]).
    pub x: Vec<f64>,
    /// Smallest sample in each bucket.
    pub min: Vec<f64>,
    /// Largest sample in each bucket.
    pub max: Vec<f64>,
}

/// Min and max of one bucket (non-inlined: see [`crate::select::CHUNK`]).
#[inline(never)]
fn min_max(values: &[f64]) -> (f64, f64) {
    // Plain comparisons: inputs are finite, and f64::min's NaN rules cost
    // extra instructions in wasm.
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &v in values {
        if v < lo {
            lo = v;
        }
        if v > hi {
            hi = v;
        }
    }
    (lo, hi)
}

/// Split `y` into at most `max_points` (>= 1) contiguous buckets of nearly
/// equal size and keep each bucket's min and max. When `y` is already short
/// enough every sample is its own bucket (min == max). `x` gives the x value of
/// each sample (same length as `y`); without it the sample index is used.
pub fn decimate_minmax(
    x: Option<&[f64]>,
    y: &[f64],
    max_points: usize,
) -> Result<MinMax, StatsError> {
    if max_points == 0 {
        return Err(StatsError::InvalidParameter {
            name: "max points",
            value: 0.0,
            why: "must be at least 1",
        });
    }
    if let Some(x) = x {
        if x.len() != y.len() {
            return Err(StatsError::LengthMismatch {
                what: "decimation x and y",
                left: x.len(),
                right: y.len(),
            });
        }
    }
    check_finite(y)?;
    let n = y.len();
    let buckets = n.min(max_points);
    let mut out = MinMax {
        x: Vec::with_capacity(buckets),
        min: Vec::with_capacity(buckets),
        max: Vec::with_capacity(buckets),
    };
    for k in 0..buckets {
        let start = (k as u128 * n as u128 / buckets as u128) as usize;
        let end = ((k + 1) as u128 * n as u128 / buckets as u128) as usize;
        let chunk = &y[start..end];
        let (lo, hi) = min_max(chunk);
        out.x.push(x.map_or(start as f64, |x| x[start]));
        out.min.push(lo);
        out.max.push(hi);
    }
    Ok(out)
}

/// Bits per second per interval from the bytes moved in each interval of
/// `interval_ms`. The last interval usually ends with the test, before a
/// full interval: when the side's total `seconds` is known, the last value
/// is divided by the time it really covered, so it does not show as a false
/// drop, unless that is a sliver under a quarter interval (timing noise
/// would turn it into a spike), which keeps the full interval.
pub fn rate_series(
    bytes: &[f64],
    interval_ms: f64,
    seconds: Option<f64>,
) -> Result<Vec<f64>, StatsError> {
    if !(interval_ms.is_finite() && interval_ms > 0.0) {
        return Err(StatsError::InvalidParameter {
            name: "interval_ms",
            value: interval_ms,
            why: "must be a finite number of milliseconds > 0",
        });
    }
    check_times(bytes)?;
    let dt = interval_ms / 1e3;
    let last = bytes.len().saturating_sub(1);
    Ok(bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let covered = seconds
                .filter(|_| i == last)
                .map(|s| s - i as f64 * dt)
                .filter(|&c| c >= dt / 4.0)
                .map_or(dt, |c| c.min(dt));
            b * 8.0 / covered
        })
        .collect())
}

/// The ticks `[from, to)` of a side's summed per-tick series (`n` ticks of
/// `tick_s` seconds) that every stream spent whole inside its own data
/// movement: from the tick where the last stream to start had started to
/// the one before the first stream to stop had stopped. `ends` holds each
/// stream's last byte time and `starts` each one's first (seconds on the
/// samples' clock; `starts` empty when not known: from `omitted_s`, the
/// warm-up). With no `ends` (older results), or nothing whole left, every
/// tick but the last. At least one tick. The rule of
/// `meshperf_protocol::intervals::whole_intervals` and of the page's
/// statistics (through wasm).
pub fn whole_ticks(
    ends: &[f64],
    starts: &[f64],
    omitted_s: f64,
    tick_s: f64,
    n: usize,
) -> (usize, usize) {
    // A millionth of a tick of slack: a tick that ends where a stream ended is whole.
    const EPS: f64 = 1e-6;
    let old = (0, if n > 1 { n - 1 } else { n });
    if ends.is_empty() {
        return old;
    }
    let end = ends.iter().copied().fold(f64::MAX, f64::min);
    let to = n.min((end / tick_s + EPS).floor().max(0.0) as usize);
    let first = if starts.is_empty() {
        omitted_s
    } else {
        starts.iter().copied().fold(f64::MIN, f64::max)
    };
    let from = ((first / tick_s - EPS).ceil().max(0.0) as usize).min(to);
    if to - from >= 1 {
        (from, to)
    } else {
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minmax_keeps_spikes_and_covers_every_sample() {
        let mut y = vec![1.0; 1000];
        y[537] = 99.0;
        y[10] = -5.0;
        let d = decimate_minmax(None, &y, 10).unwrap();
        assert_eq!(d.x.len(), 10);
        assert_eq!(d.x[..3], [0.0, 100.0, 200.0]);
        assert_eq!((d.min[0], d.max[5]), (-5.0, 99.0));
        assert_eq!(d.max.iter().cloned().fold(f64::MIN, f64::max), 99.0);
    }

    #[test]
    fn short_series_is_returned_as_is_and_x_is_used() {
        let d = decimate_minmax(Some(&[10.0, 20.0, 30.0]), &[3.0, 1.0, 2.0], 100).unwrap();
        assert_eq!(
            (d.x, d.min.clone(), d.max),
            (vec![10.0, 20.0, 30.0], vec![3.0, 1.0, 2.0], d.min)
        );
        assert!(decimate_minmax(None, &[1.0], 0).is_err());
        assert!(decimate_minmax(Some(&[1.0]), &[1.0, 2.0], 5).is_err());
    }

    #[test]
    fn rate_series_converts_bytes_to_bits_per_second_and_scales_the_last_interval() {
        let r = rate_series(&[125_000.0, 0.0, 250_000.0], 100.0, None).unwrap();
        assert_eq!(r, [10e6, 0.0, 20e6]);
        // The test ended 50 ms into the third interval: its bytes took 50 ms.
        let r = rate_series(&[125_000.0, 0.0, 250_000.0], 100.0, Some(0.25)).unwrap();
        assert_eq!(r[..2], [10e6, 0.0]);
        assert!((r[2] - 40e6).abs() < 1.0, "{r:?}");
        // A sliver (10 ms of a 100 ms interval) keeps the full interval.
        let r = rate_series(&[125_000.0, 1_000.0], 100.0, Some(0.11)).unwrap();
        assert_eq!(r, [10e6, 80e3]);
        assert!(rate_series(&[1.0], 0.0, None).is_err());
        assert!(rate_series(&[-1.0], 10.0, None).is_err());
        assert!(rate_series(&[], 10.0, Some(1.0)).unwrap().is_empty());
    }
}
