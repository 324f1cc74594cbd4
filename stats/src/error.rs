//! The one error type of the statistics core. Every message says what was
//! wrong with the input; through wasm-bindgen it becomes the message of the
//! exception JS sees.

use thiserror::Error;

/// Why a computation refused its input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The input had no values; statistics of nothing are undefined.
    #[error("no {what}: need at least one value")]
    Empty {
        /// What was empty ("samples", "x values", ...).
        what: &'static str,
    },
    /// Fewer values than the computation needs.
    #[error("{what}: need at least {need} values, got {got}")]
    TooFew {
        /// What was too short.
        what: &'static str,
        /// Minimum accepted.
        need: usize,
        /// Length given.
        got: usize,
    },
    /// A value was NaN or infinite.
    #[error("value {value} at index {index} is not a finite number")]
    NotFinite {
        /// Position of the first offending value.
        index: usize,
        /// The value itself.
        value: f64,
    },
    /// A time or count was negative.
    #[error("value {value} at index {index} is negative; times and counts must be >= 0")]
    Negative {
        /// Position of the first offending value.
        index: usize,
        /// The value itself.
        value: f64,
    },
    /// Two parallel arrays had different lengths.
    #[error("{what}: arrays have different lengths ({left} and {right})")]
    LengthMismatch {
        /// Which arrays.
        what: &'static str,
        /// Length of the first array.
        left: usize,
        /// Length of the second array.
        right: usize,
    },
    /// A parameter was out of its accepted range.
    #[error("invalid {name} {value}: {why}")]
    InvalidParameter {
        /// Parameter name as the caller knows it.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is accepted instead.
        why: &'static str,
    },
    /// All x values are equal, so no line y = a + b x fits (vertical line).
    #[error("all x values are equal: a line cannot be fitted (vertical or single-point data)")]
    Degenerate,
    /// Arrival times went backwards, so inter-arrival gaps are meaningless.
    #[error("arrival time at index {index} is earlier than the one before it; arrival times must be in receive order")]
    NotMonotonic {
        /// Position of the first earlier value.
        index: usize,
    },
}

/// Reject NaN and infinities.
pub fn check_finite(values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NotFinite {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// Validate values the caller says are times (or sizes, counts): finite and
/// not negative. `-0.0` is accepted.
pub fn check_times(values: &[f64]) -> Result<(), StatsError> {
    check_finite(values)?;
    match values.iter().position(|v| *v < 0.0) {
        Some(index) => Err(StatsError::Negative {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_times_rejects_nan_inf_negative_with_index() {
        assert_eq!(check_times(&[1.0, 2.0, 0.0, -0.0]), Ok(()));
        assert!(matches!(
            check_times(&[1.0, f64::NAN]),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
        assert!(matches!(
            check_times(&[f64::INFINITY]),
            Err(StatsError::NotFinite { index: 0, .. })
        ));
        assert_eq!(
            check_times(&[3.0, 2.0, -1.0]),
            Err(StatsError::Negative {
                index: 2,
                value: -1.0
            })
        );
        let msg = check_times(&[-1.0]).unwrap_err().to_string();
        assert!(msg.contains("negative"), "{msg}");
    }
}
