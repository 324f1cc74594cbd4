//! Fits over results: the least-squares line of latency against message size
//! (slope in time units per byte, intercept, r^2) and the mean with a 95%
//! confidence interval over repeated runs of one step.

use crate::error::{check_finite, StatsError};
use crate::stats::moments;

/// Least-squares line y = intercept + slope * x.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFit {
    /// Number of points.
    pub n: usize,
    /// dy/dx (e.g. us per byte).
    pub slope: f64,
    /// y at x = 0.
    pub intercept: f64,
    /// Coefficient of determination, in [0, 1]; exactly 1 when every point is
    /// on the line (including a horizontal line, where r^2 is otherwise 0/0).
    pub r2: f64,
}

/// Ordinary least squares of `y` on `x` (same length, >= 2 points, finite).
/// All-equal `x` (a vertical line or repeated single point) is
/// [`StatsError::Degenerate`].
pub fn linfit(x: &[f64], y: &[f64]) -> Result<LineFit, StatsError> {
    if x.len() != y.len() {
        return Err(StatsError::LengthMismatch {
            what: "line fit x and y",
            left: x.len(),
            right: y.len(),
        });
    }
    if x.len() < 2 {
        return Err(StatsError::TooFew {
            what: "line fit",
            need: 2,
            got: x.len(),
        });
    }
    check_finite(x)?;
    check_finite(y)?;
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (&a, &b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx == 0.0 || x.iter().all(|&a| a == x[0]) {
        return Err(StatsError::Degenerate);
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    };
    Ok(LineFit {
        n: x.len(),
        slope,
        intercept,
        r2,
    })
}

/// Two-sided 95% Student t quantiles t(0.975, df), exact to 9 decimals at
/// these degrees of freedom (scipy.stats.t.ppf); between entries the value is
/// interpolated linearly in 1/df, beyond the table it tends to 1.959964.
const T975: [(u32, f64); 39] = [
    (1, 12.706204736),
    (2, 4.302652730),
    (3, 3.182446305),
    (4, 2.776445105),
    (5, 2.570581836),
    (6, 2.446911851),
    (7, 2.364624252),
    (8, 2.306004135),
    (9, 2.262157163),
    (10, 2.228138852),
    (11, 2.200985160),
    (12, 2.178812830),
    (13, 2.160368656),
    (14, 2.144786688),
    (15, 2.131449546),
    (16, 2.119905299),
    (17, 2.109815578),
    (18, 2.100922040),
    (19, 2.093024054),
    (20, 2.085963447),
    (21, 2.079613845),
    (22, 2.073873068),
    (23, 2.068657610),
    (24, 2.063898562),
    (25, 2.059538553),
    (26, 2.055529439),
    (27, 2.051830516),
    (28, 2.048407142),
    (29, 2.045229642),
    (30, 2.042272456),
    (40, 2.021075390),
    (50, 2.008559112),
    (60, 2.000297822),
    (80, 1.990063421),
    (100, 1.983971519),
    (120, 1.979930405),
    (200, 1.971896224),
    (500, 1.964719837),
    (1000, 1.962339081),
];

/// Normal 97.5% quantile, the limit of t(0.975, df) as df grows.
const Z975: f64 = 1.959963985;

/// t(0.975, df) for df >= 1 (table, interpolated in 1/df between entries).
pub fn t975(df: u32) -> f64 {
    let df = df.max(1);
    let inv = 1.0 / df as f64;
    for w in T975.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if df == d0 {
            return t0;
        }
        if df < d1 {
            let (i0, i1) = (1.0 / d0 as f64, 1.0 / d1 as f64);
            return t1 + (t0 - t1) * (inv - i1) / (i0 - i1);
        }
    }
    let (dl, tl) = T975[T975.len() - 1];
    if df == dl {
        return tl;
    }
    Z975 + (tl - Z975) * inv * dl as f64
}

/// Mean of repetitions with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence {
    /// Number of repetitions (>= 2).
    pub n: usize,
    /// Mean of the repetitions.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator).
    pub sd: f64,
    /// Half width of the interval, t(0.975, n-1) * sd / sqrt(n).
    pub half_width: f64,
    /// mean - half_width.
    pub low: f64,
    /// mean + half_width.
    pub high: f64,
}

/// Mean and Student-t 95% confidence interval of repeated measurements.
/// Needs at least 2 values (one repetition has no interval).
pub fn confidence(values: &[f64]) -> Result<Confidence, StatsError> {
    if values.len() < 2 {
        return Err(StatsError::TooFew {
            what: "confidence interval (repetitions)",
            need: 2,
            got: values.len(),
        });
    }
    check_finite(values)?;
    let n = values.len();
    let (mean, m2) = if values.iter().all(|&v| v == values[0]) {
        (values[0], 0.0)
    } else {
        let (mean, m2, _, _) = moments(values);
        (mean, m2)
    };
    let sd = (m2 * n as f64 / (n - 1) as f64).sqrt();
    let half_width = t975((n - 1) as u32) * sd / (n as f64).sqrt();
    Ok(Confidence {
        n,
        mean,
        sd,
        half_width,
        low: mean - half_width,
        high: mean + half_width,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_line_has_r2_one() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let y: Vec<f64> = x.iter().map(|v| 3.0 + 0.5 * v).collect();
        let f = linfit(&x, &y).unwrap();
        assert_eq!((f.slope, f.intercept, f.r2, f.n), (0.5, 3.0, 1.0, 4));
        let h = linfit(&x, &[2.0; 4]).unwrap();
        assert_eq!((h.slope, h.intercept, h.r2), (0.0, 2.0, 1.0));
    }

    #[test]
    fn degenerate_and_mismatched_inputs_are_errors() {
        assert_eq!(
            linfit(&[1.0, 1.0], &[1.0, 2.0]),
            Err(StatsError::Degenerate)
        );
        assert!(matches!(
            linfit(&[1.0], &[1.0]),
            Err(StatsError::TooFew { .. })
        ));
        assert!(matches!(
            linfit(&[1.0, 2.0], &[1.0]),
            Err(StatsError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn noisy_line_r2_below_one() {
        let f = linfit(&[0.0, 1.0, 2.0], &[0.0, 2.0, 1.0]).unwrap();
        assert_eq!(f.slope, 0.5);
        assert!((f.r2 - 0.25).abs() < 1e-15);
    }

    #[test]
    fn t_table_exact_interpolated_and_limit() {
        assert_eq!(t975(1), 12.706204736);
        assert_eq!(t975(30), 2.042272456);
        // scipy: t.ppf(0.975, 35) = 2.0301079, t.ppf(0.975, 5000) = 1.9604386
        assert!((t975(35) - 2.0301079).abs() < 2e-4, "{}", t975(35));
        assert!((t975(5000) - 1.9604386).abs() < 1e-5, "{}", t975(5000));
        assert!(t975(u32::MAX) > Z975);
    }

    #[test]
    fn confidence_small_sample() {
        let c = confidence(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((c.mean, c.sd), (2.0, 1.0));
        assert!((c.half_width - 4.302652730 / 3f64.sqrt()).abs() < 1e-12);
        assert!(confidence(&[1.0]).is_err());
        assert_eq!(confidence(&[5.0, 5.0]).unwrap().half_width, 0.0);
    }
}
