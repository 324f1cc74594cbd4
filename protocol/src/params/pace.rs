//! How a paced test spaces its messages (`wait_us`, or the wait a `rate`
//! gives), checked in one place against the test's count or duration and
//! the agent's limits: `tcp_stream`, `udp_stream`, `tcp_rr` and `udp_rr`
//! all derive their wait here, so a plan cannot ask for a count that the
//! agent's time limit would cut short, or a time so slow that it holds a
//! single message (whose "rate" would be one message over a few microseconds of
//! sending: `rate: 2` once printed 2.6 Mbit/s).

use super::rate::{mbit, rate_text};
use super::{Limits, ParamError};

/// Slack for comparisons with a bound this module printed: the bound is
/// printed to 3 significant digits, rounded outwards, and reads back
/// (`2.24k` is 2240.0000000000005) within this share of it.
const SLACK: f64 = 1e-9;

/// The fewest messages a time-bounded paced test must hold: one message is
/// no rate at all (nothing to time it against).
pub const MIN_PACED_MESSAGES: u64 = 2;

/// The spacing of a test's messages and what set it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pace {
    /// Time between messages (per stream), us; 0: as fast as they go.
    pub wait_us: f64,
    /// The rate asked for, bits per second of payload, if the wait comes
    /// from it (`rate`) rather than from `wait_us`.
    pub rate: Option<f64>,
    /// Bytes one message carries (a datagram, or a write on one stream).
    bytes: u64,
    /// Messages that leave together at each step (streams).
    streams: u32,
    /// What a message is, for messages: `datagram`, `write`, `request`.
    unit: &'static str,
}

impl Pace {
    /// The wait between messages of `bytes` (on each of `streams`): `wait_us`,
    /// or with `rate` at least what carries `rate` bits per second over all
    /// streams together (the larger of the two).
    pub(crate) fn new(
        unit: &'static str,
        bytes: u64,
        streams: u32,
        wait_us: f64,
        rate: Option<f64>,
    ) -> Self {
        let by_rate = rate.map_or(0.0, |r| Self::step_bits(bytes, streams) / r * 1e6);
        Pace {
            wait_us: wait_us.max(by_rate),
            // The rate sets the wait only when it is the slower of the two.
            rate: rate.filter(|_| by_rate >= wait_us),
            bytes,
            streams,
            unit,
        }
    }

    fn step_bits(bytes: u64, streams: u32) -> f64 {
        bytes as f64 * 8.0 * streams.max(1) as f64
    }

    /// Bits of payload that leave at each step (one message per stream).
    fn bits(&self) -> f64 {
        Self::step_bits(self.bytes, self.streams)
    }

    /// `1400-byte datagram`, `131072-byte writes on each of 4 streams`.
    fn message(&self, plural: bool) -> String {
        let s = if plural { "s" } else { "" };
        match self.streams {
            0 | 1 => format!("{}-byte {}{s}", self.bytes, self.unit),
            n => format!(
                "{}-byte {}{s} on each of {n} streams",
                self.bytes, self.unit
            ),
        }
    }

    /// Checks the pace against the test's bound, `count` messages (per
    /// stream) or `duration_s`, and the agent's `limits`:
    /// - a count takes count x wait at most the agent's duration limit
    ///   (else it would be stopped there, part done);
    /// - a duration holds at least [`MIN_PACED_MESSAGES`] messages (else
    ///   the test is one message and its rate meaningless).
    pub(crate) fn within(
        &self,
        count: Option<u64>,
        duration_s: Option<f64>,
        limits: &Limits,
    ) -> Result<(), ParamError> {
        if self.wait_us <= 0.0 {
            return Ok(());
        }
        match (count, duration_s) {
            (Some(c), None) => {
                let secs = c as f64 * self.wait_us / 1e6;
                if secs <= limits.max_duration_s * (1.0 + SLACK) {
                    return Ok(());
                }
                let Some(r) = self.rate else {
                    return Err(ParamError::new(
                        "count",
                        format!(
                            "count x wait_us = {secs:.1} s is above the agent's limit of {} s",
                            limits.max_duration_s
                        ),
                    ));
                };
                let lowest = c as f64 * self.bits() / limits.max_duration_s;
                Err(ParamError::new(
                    "rate",
                    format!(
                        "{} sends {c} {} in {secs:.1} s, above the agent's limit of {} s: \
                         give rate {} or more, a smaller count, or duration_s instead",
                        rate_text(r),
                        self.message(true),
                        limits.max_duration_s,
                        rate_value(lowest, true)
                    ),
                ))
            }
            (None, Some(d)) => {
                let most_us = d * 1e6 / MIN_PACED_MESSAGES as f64;
                if self.wait_us <= most_us * (1.0 + SLACK) {
                    return Ok(());
                }
                let why = format!(
                    "one {} every {} s, fewer than {MIN_PACED_MESSAGES} in the test's {d} s",
                    self.message(false),
                    secs_text(self.wait_us / 1e6)
                );
                Err(match self.rate {
                    Some(r) => ParamError::new(
                        "rate",
                        format!(
                            "{} is {why}: give rate {} or more (bit/s), a longer duration_s \
                             or smaller messages",
                            rate_text(r),
                            rate_value(MIN_PACED_MESSAGES as f64 * self.bits() / d, true)
                        ),
                    ),
                    None => ParamError::new(
                        "wait_us",
                        format!(
                            "{} us is {why}: wait at most {} us, or give a longer duration_s",
                            self.wait_us,
                            most_us.floor()
                        ),
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// The datagrams a paced, time-bounded UDP test may send in
    /// `duration_s` on each stream (the first at 0, one every wait after
    /// it, none at or past the end), at most the agent's count and byte
    /// limits (the bytes of all streams together): the sender stops
    /// at its time or there, whichever comes first (a rate far above what
    /// the host can send, `rate=1000G`, runs its time and says the rate was
    /// not reached; refusing it would refuse every such test). Unpaced, as
    /// many as those limits allow.
    pub(crate) fn count_in(&self, duration_s: f64, limits: &Limits) -> u64 {
        let cap = limits
            .max_count
            .min((limits.max_bytes / (self.bytes.max(1) * self.streams.max(1) as u64)).max(1));
        if self.wait_us <= 0.0 {
            return cap;
        }
        let n = (duration_s * 1e6 / self.wait_us).ceil();
        if n <= cap as f64 {
            (n as u64).max(1)
        } else {
            cap
        }
    }
}

impl Pace {
    /// A UDP sender's pace within the agent's UDP rate limit
    /// (`--max-udp-rate`; UDP has no congestion control): the rate asked
    /// for, or the one `wait_us` gives.
    pub(crate) fn udp_rate_within(&self, limits: &Limits) -> Result<(), ParamError> {
        let Some(max) = limits.max_udp_bits_per_second else {
            return Ok(());
        };
        if let Some(bps) = self.rate {
            if bps > max {
                return Err(ParamError::new(
                    "rate",
                    format!(
                        "{} is above the agent's UDP rate limit of {}",
                        mbit(bps),
                        mbit(max)
                    ),
                ));
            }
            return Ok(());
        }
        let min_wait = self.bits() / max * 1e6;
        if self.wait_us < min_wait {
            return Err(ParamError::new(
                "wait_us",
                format!(
                    "{} us between {} is above the agent's UDP rate limit of {} Mbit/s: \
                     wait at least {min_wait:.2} us",
                    self.wait_us,
                    self.message(true),
                    max / 1e6
                ),
            ));
        }
        Ok(())
    }

    /// The UDP burst and the probe flow beside it (`probes`: its rate,
    /// [`super::ProbeParams::bits_per_second`]) together within the agent's
    /// UDP rate limit.
    pub(crate) fn udp_rate_with_probes_within(
        &self,
        probes: f64,
        limits: &Limits,
    ) -> Result<(), ParamError> {
        let (Some(max), true) = (limits.max_udp_bits_per_second, self.wait_us > 0.0) else {
            return Ok(());
        };
        let burst = self.bits() / self.wait_us * 1e6;
        if burst + probes > max {
            return Err(ParamError::new(
                "probe_ms",
                format!(
                    "the burst ({:.3} Mbit/s) and its probes ({:.3} Mbit/s) together are \
                     above the agent's UDP rate limit of {:.3} Mbit/s",
                    burst / 1e6,
                    probes / 1e6,
                    max / 1e6
                ),
            ));
        }
        Ok(())
    }
}

/// `x` to 3 significant digits, rounded up or down (a bound printed so
/// that the printed value is within it).
fn sig3(x: f64, up: bool) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(2 - x.log10().floor() as i32);
    let v = x * scale;
    // Outwards, but a value already on 3 digits stays as it is.
    let r = if up {
        (v * (1.0 - 1e-12)).ceil()
    } else {
        (v * (1.0 + 1e-12)).floor()
    };
    r / scale
}

/// A bound on `rate` as a plan or `--set rate=` takes it, 3 significant
/// digits rounded towards the allowed side: `2.24k`, `186M`.
fn rate_value(bps: f64, up: bool) -> String {
    let (div, suffix) = crate::units::si_scale(bps.max(0.0));
    let v = sig3(bps / div, up);
    // 999.5 rounded up is 1000 of this unit: still a valid text.
    format!("{}{suffix}", trim(v))
}

/// A float without float noise (`2.24`, not `2.2400000000000002`).
fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn secs_text(s: f64) -> String {
    trim(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(wait_us: f64, rate: Option<f64>) -> Pace {
        Pace::new("datagram", 1400, 1, wait_us, rate)
    }

    #[test]
    fn the_wait_comes_from_the_slower_of_wait_us_and_rate() {
        let p = udp(0.0, Some(20e6));
        assert_eq!((p.wait_us, p.rate), (560.0, Some(20e6)));
        let p = Pace::new("write", 1000, 4, 100.0, Some(32e6));
        assert_eq!(
            (p.wait_us, p.rate),
            (1000.0, Some(32e6)),
            "4 x 8000 bits at 32M"
        );
        let p = Pace::new("write", 1000, 4, 5000.0, Some(32e6));
        assert_eq!((p.wait_us, p.rate), (5000.0, None), "wait_us is the slower");
    }

    #[test]
    fn bounds_print_to_three_digits_on_the_allowed_side() {
        assert_eq!(rate_value(2240.0, true), "2.24k");
        assert_eq!(rate_value(2240.0001, true), "2.25k");
        assert_eq!(rate_value(1866666666.7, true), "1.87G");
        assert_eq!(rate_value(1866666666.7, false), "1.86G");
        assert_eq!(rate_value(999.7, true), "1000");
        assert_eq!(rate_value(5.0, false), "5");
        assert_eq!(sig3(0.12345, true), 0.124);
    }
}
