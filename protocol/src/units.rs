//! Units as meshperf reads and writes them: the one SI-prefix table (k, M,
//! G: powers of 1000, as rates are given and shown, iperf3's `-b`), and C's
//! `%g` for the seeds' records. The page reads the prefixes from the
//! generated tables (protocol/examples/export_params.rs writes
//! [`SI_PREFIXES`] into web/src/lib/generated/params.ts, which
//! web/src/lib/units.ts reads); binary sizes (`1M` = 1024 KiB) are not
//! these.

/// The one rule for a duration written with its unit (issue 45 item 12):
/// microseconds below this many, milliseconds from it (10 ms): "65.2 us",
/// "9999 us", "10 ms", "118.1 ms". The page's `formatUs`/`timeUnit`
/// (web/src/lib/units.ts) read it from the generated tables and write µs.
pub const MS_FROM_US: f64 = 10_000.0;

/// A duration given in microseconds, with its unit by [`MS_FROM_US`]:
/// four significant digits, trailing zeros dropped, ASCII `us` as the
/// terminal writes it (the page shows `µs`).
pub fn duration_us(us: f64) -> String {
    if !us.is_finite() {
        return "-".into();
    }
    let (v, unit) = if us.abs() >= MS_FROM_US {
        (us / 1e3, "ms")
    } else {
        (us, "us")
    };
    if v == 0.0 {
        return format!("0 {unit}");
    }
    let digits = 4 - 1 - v.abs().log10().floor() as i32;
    let t = if digits > 0 {
        let t = format!("{v:.*}", digits as usize);
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0}")
    };
    format!("{t} {unit}")
}

/// SI prefixes, largest first: each one's factor and the prefix as a unit
/// begins with it (`Gbit/s`) and as a value's suffix reads (`20M`; the
/// suffix in either case).
pub const SI_PREFIXES: [(f64, &str); 4] = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];

/// The largest prefix in which `v` is at least 1 (the last one below
/// 1000, so `0.5` is `(1.0, "")`).
pub fn si_scale(v: f64) -> (f64, &'static str) {
    SI_PREFIXES
        .into_iter()
        .find(|&(div, _)| v.abs() >= div)
        .unwrap_or(SI_PREFIXES[SI_PREFIXES.len() - 1])
}

/// `text` as a number with an optional SI suffix in either case (`20M`,
/// `1.5G`, `64k`, `1000`); `None` if it is not one (or not finite).
pub fn parse_si(text: &str) -> Option<f64> {
    let t = text.trim();
    let last = t.chars().last()?;
    let (num, mult) = match SI_PREFIXES
        .into_iter()
        .find(|(_, p)| !p.is_empty() && p.eq_ignore_ascii_case(&last.to_string()))
    {
        Some((mult, _)) => (&t[..t.len() - last.len_utf8()], mult),
        None => (t, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .map(|n| n * mult)
        .filter(|r| r.is_finite())
}

/// `v` as C's `printf("%g")` prints it: six significant digits, trailing
/// zeros dropped, an exponent below 1e-4 and from 1e6 up (23.7852,
/// 23785.2, 0.723978, 1.18412e+06), except that a whole number prints
/// whole (2000123, not 2e+06). The seeds' lines (the udpmon family's
/// records) keep their digits with it where fixed decimals printed 0.0004
/// or 0.
pub fn g6(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".into();
    }
    // Whole numbers whole (counts, microseconds), where %g would round
    // 2000123 us to 2e+06.
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    // The exponent after rounding to six digits (999999.7 is 1e+06).
    let sci = format!("{v:.5e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mant), exp.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim(&format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_g_prints_them() {
        for (v, want) in [
            (23.7852, "23.7852"),
            (23785.2, "23785.2"),
            (2.10214, "2.10214"),
            (0.7239781, "0.723978"),
            (20.0, "20"),
            (29985.0, "29985"),
            (1184123.4, "1.18412e+06"),
            (2000123.0, "2000123"),
            (999999.7, "1e+06"),
            (0.00001234, "1.234e-05"),
            (0.0, "0"),
            (-3.5, "-3.5"),
        ] {
            assert_eq!(g6(v), want, "{v}");
        }
    }

    #[test]
    fn durations_read_in_us_below_10_ms_and_in_ms_from_it() {
        for (us, want) in [
            (65.2, "65.2 us"),
            (0.9, "0.9 us"),
            (449.0, "449 us"),
            (9999.0, "9999 us"),
            (9999.6, "10000 us"),
            (10_000.0, "10 ms"),
            (12_870.0, "12.87 ms"),
            (118_132.0, "118.1 ms"),
            (0.0, "0 us"),
            (-2.674, "-2.674 us"),
        ] {
            assert_eq!(duration_us(us), want, "{us}");
        }
    }

    #[test]
    fn si_values_read_and_scale_in_powers_of_1000() {
        assert_eq!(parse_si("20M"), Some(20e6));
        assert_eq!(parse_si("20m"), Some(20e6));
        assert_eq!(parse_si(" 1.5G "), Some(1.5e9));
        assert_eq!(parse_si("64K"), Some(64e3));
        assert_eq!(parse_si("1000"), Some(1000.0));
        assert_eq!(parse_si("M"), None);
        assert_eq!(parse_si("20 M"), None);
        assert_eq!(parse_si("1e999"), None);
        assert_eq!(parse_si(""), None);
        assert_eq!(si_scale(2.4e9), (1e9, "G"));
        assert_eq!(si_scale(-2.4e6), (1e6, "M"));
        assert_eq!(si_scale(999.0), (1.0, ""));
        assert_eq!(si_scale(0.2), (1.0, ""));
    }
}
