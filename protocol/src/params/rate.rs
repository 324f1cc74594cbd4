//! Rates (`rate` of `tcp_stream` and `udp_stream`, iperf3's `-b`): bits per
//! second, given as a number or as text with a k, M or G suffix in powers of
//! 1000 (`20M` is 20 000 000), as the agent's `--max-udp-rate` reads them.

use super::spec::ParamSpec;
use super::{ParamError, Reader};
use serde_json::Value;

/// `text` as bits per second: a number, optionally with a k/K, M or G
/// suffix (powers of 1000). `None` if it is not one.
pub fn parse_rate(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'm' | 'M' => (&t[..t.len() - 1], 1e6),
        'g' | 'G' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .map(|n| n * mult)
        .filter(|r| r.is_finite())
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
    let (div, unit) = match bits_per_second {
        b if b >= 1e9 => (1e9, "Gbit/s"),
        b if b >= 1e6 => (1e6, "Mbit/s"),
        b if b >= 1e3 => (1e3, "kbit/s"),
        _ => (1.0, "bit/s"),
    };
    format!("{} {unit}", bits_per_second / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_with_suffixes_in_powers_of_1000() {
        assert_eq!(parse_rate("20M"), Some(20e6));
        assert_eq!(parse_rate("1.5G"), Some(1.5e9));
        assert_eq!(parse_rate("64k"), Some(64e3));
        assert_eq!(parse_rate("1000"), Some(1000.0));
        assert_eq!(parse_rate("M"), None);
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate(""), None);
        assert_eq!(rate_text(2.0), "2 bit/s");
        assert_eq!(rate_text(2240.0), "2.24 kbit/s");
        assert_eq!(rate_text(20e6), "20 Mbit/s");
        assert_eq!(rate_text(1.5e9), "1.5 Gbit/s");
    }
}
