//! Numbers in the seeds' lines as the seeds print them: C's `%g` (six
//! significant digits) for the udpmon family's records, so a slow test
//! keeps its digits where fixed decimals printed 0.0004 or 0.

/// `v` as C's `printf("%g")` prints it: six significant digits, trailing
/// zeros dropped, an exponent below 1e-4 and from 1e6 up (23.7852,
/// 23785.2, 0.723978, 1.18412e+06), except that a whole number prints
/// whole (2000123, not 2e+06).
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
}
