//! Rates (`rate` of `tcp_stream` and `udp_stream`, iperf3's `-b`): bits per
//! second, given as a number or as text with a k, M or G suffix in powers of
//! 1000 (`20M` is 20 000 000), as the agent's `--max-udp-rate` reads them.

use super::spec::ParamSpec;
use super::{ParamError, Reader};
use crate::units::{si_scale, SI_PREFIXES};
use serde_json::Value;

/// `text` as bits per second: a number, optionally with a k/K, M or G
/// suffix (powers of 1000, [`crate::units::parse_si`]). `None` if it is not one.
pub fn parse_rate(text: &str) -> Option<f64> {
    crate::units::parse_si(text)
}

impl Reader<'_> {
    /// A rate without a default (number or `20M`), within the table's range.
    pub(crate) fn opt_rate(&mut self, s: &ParamSpec) -> Result<Option<f64>, ParamError> {
        let v = match self.raw(s.name) {
            None => return Ok(None),
            Some(Value::String(t)) => parse_rate(t).ok_or_else(|| {
                ParamError::new(
                    s.name,
                    format!(
                        "{t:?} is not a rate: bits per second, e.g. 20M (k, M, G: powers of 1000)"
                    ),
                )
            })?,
            Some(v) => v.as_f64().filter(|f| f.is_finite()).ok_or_else(|| {
                ParamError::new(s.name, format!("must be bits per second, got {v}"))
            })?,
        };
        s.check(v, self.limits).map(Some)
    }
}

/// A rate for messages: `20.0 Mbit/s`.
pub fn mbit(bits_per_second: f64) -> String {
    format!("{} Mbit/s", bits_per_second / 1e6)
}

/// A rate as asked, in the unit that reads best: `2 bit/s`, `2.24 kbit/s`,
/// `20 Mbit/s` (k, M, G: powers of 1000, as `rate` reads them).
pub fn rate_text(bits_per_second: f64) -> String {
    let (div, prefix) = si_scale(bits_per_second.max(0.0));
    format!("{} {prefix}bit/s", bits_per_second / div)
}

/// A measured rate as people read it, as the page shows every rate
/// (web/src/lib/units.ts `formatRate`) and `meshperf run`'s own lines print
/// them: scaled to the unit in which it reads as 1 to 999 (Gbit/s at most),
/// four significant digits, a space before the unit, grouped past 9,999:
/// `28.05 Gbit/s`, `950 Mbit/s`, `12.5 kbit/s`, `12,346 Gbit/s`. A value
/// that rounds up to 1000 of a unit takes the next (`999.96 Mbit/s` is
/// `1 Gbit/s`). The seeds' lines keep their own formats.
pub fn rate_figure(bits_per_second: f64) -> String {
    const DIGITS: i32 = 4;
    let b = bits_per_second;
    if !b.is_finite() {
        return "-".into();
    }
    let round = |v: f64| {
        if v == 0.0 {
            return 0.0;
        }
        let scale = 10f64.powi(DIGITS - 1 - v.abs().log10().floor() as i32);
        (v * scale).round() / scale
    };
    let mut k = SI_PREFIXES
        .iter()
        .position(|&(d, _)| b.abs() >= d)
        .unwrap_or(SI_PREFIXES.len() - 1);
    if k > 0 && round(b / SI_PREFIXES[k].0).abs() >= 1000.0 {
        k -= 1;
    }
    let (div, prefix) = SI_PREFIXES[k];
    let unit = format!("{prefix}bit/s");
    let v = b / div;
    if v.abs() >= 1e4 {
        let digits = format!("{:.0}", v.abs());
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}{grouped} {unit}");
    }
    let v = round(v);
    let decimals = if v == 0.0 {
        0
    } else {
        (DIGITS - 1 - v.abs().log10().floor() as i32).max(0) as usize
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_rates_read_as_the_page_shows_them() {
        assert_eq!(rate_figure(28053.4e6), "28.05 Gbit/s");
        assert_eq!(rate_figure(5.012345e9), "5.012 Gbit/s");
        assert_eq!(rate_figure(4.99e9), "4.99 Gbit/s");
        assert_eq!(rate_figure(950e6), "950 Mbit/s");
        assert_eq!(rate_figure(19.926e6), "19.93 Mbit/s");
        assert_eq!(rate_figure(12.5e3), "12.5 kbit/s");
        assert_eq!(rate_figure(640.0), "640 bit/s");
        assert_eq!(rate_figure(0.0), "0 bit/s");
        assert_eq!(rate_figure(999.96e6), "1 Gbit/s");
        assert_eq!(rate_figure(1e12), "1000 Gbit/s");
        assert_eq!(rate_figure(12_345.6e9), "12,346 Gbit/s");
        assert_eq!(rate_figure(f64::NAN), "-");
    }

    #[test]
    fn rates_read_with_suffixes_in_powers_of_1000() {
        // The suffixes are units.rs's (its test has the cases).
        assert_eq!(parse_rate("1.5G"), Some(1.5e9));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(rate_text(2.0), "2 bit/s");
        assert_eq!(rate_text(2240.0), "2.24 kbit/s");
        assert_eq!(rate_text(20e6), "20 Mbit/s");
        assert_eq!(rate_text(1.5e9), "1.5 Gbit/s");
    }
}
