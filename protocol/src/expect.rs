//! Expectations: pass/fail gates on a run's figures (`meshperf run --expect
//! 'bits_per_second >= 9G'`, a plan file's `"expect"` list), as a CI
//! pipeline or a change window asks "fail if throughput drops below 9
//! Gbit/s or p99 rises above 2 ms" (k8s-netperf's tolerances).
//!
//! An expectation is `FIGURE OP VALUE`:
//! - FIGURE is a matrix metric (`gbps`, `rtt_p50`, `rtt_p99`, `loss_pct`,
//!   `added_rtt`, `tps`, `hops`, `path_mtu`, `marks_changed`: see
//!   [`Metric`]) or a key of the step's summary, dotted into its objects
//!   (`bits_per_second`, `retransmits`, `rtt_us.p99`, `lost`);
//! - OP is `<`, `<=`, `>`, `>=`, `==` or `!=`;
//! - VALUE is a number in the figure's own unit, or with a unit that fits
//!   it: rates `9G`, `9Gbit/s`, `900M` (powers of 1000, bits per second);
//!   times `2ms`, `150us`, `1s`, `500ns`; sizes `64K`, `1M` (powers of
//!   1024, bytes); percentages `0.5%`.
//!
//! The figure's unit comes from its name: the metrics' own (`gbps` in
//! Gbit/s, the RTT metrics in us, `loss_pct` in %), and for summary keys the
//! suffix (`_us` us, `_s`/`seconds` s, `bits_per_second` bit/s, `bytes`
//! bytes, `_pct` %); anything else is a count and takes a plain number.
//!
//! Parsing is checked before any test runs; whether the figure is in a
//! step's summary is known only from the step, so a figure no step has is
//! reported after the run as a usage error ([`Verdict::Unknown`]).

use crate::matrix::Metric;
use crate::params::parse_rate;
use crate::result::StepResult;
use serde_json::Value;

/// One expectation, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    /// As written (trimmed), for messages and reports.
    pub text: String,
    figure: Figure,
    op: Op,
    /// The bound in the figure's own unit.
    bound: f64,
}

#[derive(Debug, Clone, PartialEq)]
enum Figure {
    Metric(Metric),
    /// A summary key, split at the dots.
    Key(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// The unit a figure is kept in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    BitsPerSecond,
    Gbps,
    Micros,
    Seconds,
    Bytes,
    Percent,
    Count,
}

/// How one expectation fared on one step.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The figure met the bound.
    Held(f64),
    /// The figure missed the bound.
    Broken(f64),
    /// The step failed: no figure to check (the reason).
    Failed(String),
    /// The step's summary has no such figure.
    Unknown,
}

impl Verdict {
    pub fn held(&self) -> bool {
        matches!(self, Verdict::Held(_))
    }
}

impl Expect {
    /// Parses `FIGURE OP VALUE`; the error is one line saying what is wrong.
    pub fn parse(text: &str) -> Result<Expect, String> {
        let t = text.trim();
        let bad = |why: &str| format!("expectation {t:?}: {why}");
        const OPS: [(&str, Op); 7] = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
            ("=", Op::Eq),
        ];
        let (at, sym, op) = OPS
            .iter()
            .filter_map(|&(sym, op)| t.find(sym).map(|at| (at, sym, op)))
            .min_by_key(|&(at, sym, _)| (at, usize::MAX - sym.len()))
            .ok_or_else(|| {
                bad("give FIGURE OP VALUE with OP one of <, <=, >, >=, ==, !=, e.g. 'bits_per_second >= 9G'")
            })?;
        let name = t[..at].trim();
        let value = t[at + sym.len()..].trim();
        if name.is_empty() || value.is_empty() {
            return Err(bad(
                "give FIGURE OP VALUE, e.g. 'rtt_p99 <= 2ms' or 'bits_per_second >= 9G'",
            ));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            || name.split('.').any(str::is_empty)
        {
            return Err(bad(&format!(
                "{name:?} is not a figure: a metric ({}) or a summary key such as bits_per_second or rtt_us.p99",
                metric_names()
            )));
        }
        let figure = match Metric::from_name(name) {
            Some(m) => Figure::Metric(m),
            None => Figure::Key(name.split('.').map(str::to_string).collect()),
        };
        let unit = figure.unit();
        let bound = unit
            .parse(value)
            .ok_or_else(|| bad(&format!("{value:?} is not {}", unit.expects())))?;
        Ok(Expect {
            text: t.to_string(),
            figure,
            op,
            bound,
        })
    }

    /// The figure's name as written (`bits_per_second`, `rtt_us.p99`).
    pub fn figure(&self) -> String {
        match &self.figure {
            Figure::Metric(m) => m.name().to_string(),
            Figure::Key(path) => path.join("."),
        }
    }

    /// How this expectation fared on `step`.
    pub fn check(&self, step: &StepResult) -> Verdict {
        if let Some(e) = &step.error {
            return Verdict::Failed(e.clone());
        }
        let v = match &self.figure {
            Figure::Metric(m) => m.of_summary(&step.summary),
            Figure::Key(path) => path
                .iter()
                .try_fold(&step.summary, |v, k| v.get(k))
                .and_then(Value::as_f64),
        };
        match v {
            None => Verdict::Unknown,
            Some(v) if self.op.holds(v, self.bound) => Verdict::Held(v),
            Some(v) => Verdict::Broken(v),
        }
    }

    /// A figure of this expectation's, with its unit (`7.31 Gbit/s`).
    pub fn show(&self, v: f64) -> String {
        self.figure.unit().show(v)
    }
}

/// The numeric top-level figures of a summary (for "no such figure"
/// messages: what the step does have).
pub fn figures_of(summary: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(o) = summary.as_object() {
        for (k, v) in o {
            if v.is_number() {
                out.push(k.clone());
            } else if let Some(inner) = v.as_object() {
                if inner.get("p99").is_some_and(Value::is_number) {
                    out.push(format!("{k}.p99"));
                }
            }
        }
    }
    out
}

fn metric_names() -> String {
    Metric::ALL
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Op {
    fn holds(self, v: f64, bound: f64) -> bool {
        match self {
            Op::Lt => v < bound,
            Op::Le => v <= bound,
            Op::Gt => v > bound,
            Op::Ge => v >= bound,
            Op::Eq => v == bound,
            Op::Ne => v != bound,
        }
    }
}

impl Figure {
    fn unit(&self) -> Unit {
        match self {
            Figure::Metric(m) => match m {
                Metric::Gbps => Unit::Gbps,
                Metric::RttP50 | Metric::RttP99 | Metric::AddedRtt => Unit::Micros,
                Metric::LossPct => Unit::Percent,
                Metric::PathMtu => Unit::Bytes,
                Metric::Tps | Metric::Hops | Metric::MarksChanged => Unit::Count,
            },
            Figure::Key(path) => {
                // The innermost key that names a unit: `rtt_us.p99` is in us.
                for k in path.iter().rev() {
                    let k = k.as_str();
                    if k.contains("bits_per_second") {
                        return Unit::BitsPerSecond;
                    }
                    if k.ends_with("_us") {
                        return Unit::Micros;
                    }
                    if k.ends_with("_s") || k.ends_with("seconds") {
                        return Unit::Seconds;
                    }
                    if k.ends_with("bytes") {
                        return Unit::Bytes;
                    }
                    if k.ends_with("_pct") {
                        return Unit::Percent;
                    }
                }
                Unit::Count
            }
        }
    }
}

/// `text` as a number with one of `units` (name, factor to the figure's
/// unit); a bare number is in the figure's unit.
fn with_units(text: &str, units: &[(&str, f64)]) -> Option<f64> {
    let t = text.trim();
    let num_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..num_end].trim(), t[num_end..].trim());
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite())?;
    if unit.is_empty() {
        return Some(n);
    }
    units
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, f)| n * f)
}

impl Unit {
    /// The bound as written, in this unit.
    fn parse(self, text: &str) -> Option<f64> {
        let t = text.trim();
        match self {
            Unit::BitsPerSecond | Unit::Gbps => {
                // 9G, 9Gbit/s, 9 Gbps, 900M, 9e9: bits per second, k, M, G
                // in powers of 1000 (as --set rate= and --max-udp-rate).
                let core: String = ["bit/s", "bps", "b/s"]
                    .iter()
                    .find_map(|s| t.strip_suffix(s))
                    .unwrap_or(t)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                let scaled =
                    core.len() != t.len() || core.ends_with(|c: char| "kKmMgG".contains(c));
                let bps = parse_rate(&core)?;
                // A bare number is in the figure's own unit.
                Some(if self == Unit::Gbps && scaled {
                    bps / 1e9
                } else {
                    bps
                })
            }
            Unit::Micros => with_units(
                t,
                &[
                    ("ns", 1e-3),
                    ("us", 1.0),
                    ("µs", 1.0),
                    ("ms", 1e3),
                    ("s", 1e6),
                ],
            ),
            Unit::Seconds => with_units(
                t,
                &[
                    ("ns", 1e-9),
                    ("us", 1e-6),
                    ("µs", 1e-6),
                    ("ms", 1e-3),
                    ("s", 1.0),
                ],
            ),
            Unit::Bytes => with_units(
                t,
                &[
                    ("B", 1.0),
                    ("K", 1024.0),
                    ("KB", 1024.0),
                    ("KiB", 1024.0),
                    ("M", 1048576.0),
                    ("MB", 1048576.0),
                    ("MiB", 1048576.0),
                    ("G", 1073741824.0),
                    ("GB", 1073741824.0),
                    ("GiB", 1073741824.0),
                ],
            ),
            Unit::Percent => with_units(t, &[("%", 1.0)]),
            Unit::Count => with_units(t, &[]),
        }
    }

    /// What a bound of this unit looks like (for the parse error).
    fn expects(self) -> &'static str {
        match self {
            Unit::BitsPerSecond => {
                "a rate: bits per second, or with k, M, G (powers of 1000), e.g. 9G or 9Gbit/s"
            }
            Unit::Gbps => "a rate: Gbit/s, or with k, M, G and bit/s, e.g. 9 or 900Mbit/s",
            Unit::Micros => "a time: us, or with ns, us, ms, s, e.g. 2ms",
            Unit::Seconds => "a time: seconds, or with ns, us, ms, s, e.g. 1.5s",
            Unit::Bytes => "a size: bytes, or with K, M, G (powers of 1024), e.g. 64K",
            Unit::Percent => "a percentage, e.g. 0.5 or 0.5%",
            Unit::Count => "a plain number (this figure is a count)",
        }
    }

    /// A figure in this unit, for messages.
    fn show(self, v: f64) -> String {
        let g = |v: f64| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{v:.0}")
            } else if v != 0.0 && v.abs() < 1e-3 {
                format!("{v:e}")
            } else {
                format!("{}", (v * 1000.0).round() / 1000.0)
            }
        };
        match self {
            Unit::BitsPerSecond => format!("{} Gbit/s", g(v / 1e9)),
            Unit::Gbps => format!("{} Gbit/s", g(v)),
            Unit::Micros => format!("{} us", g(v)),
            Unit::Seconds => format!("{} s", g(v)),
            Unit::Bytes => format!("{} bytes", g(v)),
            Unit::Percent => format!("{}%", g(v)),
            Unit::Count => g(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(summary: Value) -> StepResult {
        serde_json::from_value(json!({"index": 0, "kind": "tcp_stream", "summary": summary}))
            .unwrap()
    }

    /// Whether `e` held on a step of `summary`, and the figure it read.
    fn verdict(e: &str, summary: Value) -> Option<(bool, f64)> {
        match Expect::parse(e).unwrap().check(&step(summary)) {
            Verdict::Held(v) => Some((true, v)),
            Verdict::Broken(v) => Some((false, v)),
            other => panic!("{e}: {other:?}"),
        }
    }

    fn is(got: Option<(bool, f64)>, held: bool, v: f64) {
        let (h, g) = got.unwrap();
        assert!(
            h == held && (g - v).abs() <= 1e-9 * v.abs(),
            "got {h} {g}, want {held} {v}"
        );
    }

    #[test]
    fn rates_in_bits_per_second_and_gbps() {
        let s = json!({"bits_per_second": 7.3e9});
        is(verdict("bits_per_second >= 9G", s.clone()), false, 7.3e9);
        is(verdict("bits_per_second>=7Gbit/s", s.clone()), true, 7.3e9);
        is(
            verdict("bits_per_second >= 7300000001", s.clone()),
            false,
            7.3e9,
        );
        is(
            verdict("bits_per_second < 7.4 Gbps", s.clone()),
            true,
            7.3e9,
        );
        // gbps is in Gbit/s: a bare 7 is 7 Gbit/s, 7400M is 7.4.
        is(verdict("gbps >= 7", s.clone()), true, 7.3);
        is(verdict("gbps >= 7400Mbit/s", s.clone()), false, 7.3);
        is(verdict("gbps >= 7400M", s.clone()), false, 7.3);
        is(verdict("gbps > 7299M", s), true, 7.3);
    }

    #[test]
    fn times_percentages_sizes_and_counts() {
        let s = json!({"rtt_us": {"median": 40.0, "p99": 1500.0}, "sent": 1000, "lost": 7,
                       "seconds": 1.25, "bytes": 1048576, "retransmits": 3});
        is(verdict("rtt_p99 <= 2ms", s.clone()), true, 1500.0);
        is(verdict("rtt_us.p99 <= 1400us", s.clone()), false, 1500.0);
        is(verdict("rtt_p50 < 0.04ms", s.clone()), false, 40.0);
        is(verdict("rtt_p50 < 41000ns", s.clone()), true, 40.0);
        is(verdict("loss_pct <= 0.5%", s.clone()), false, 0.7);
        is(verdict("loss_pct <= 1", s.clone()), true, 0.7);
        is(verdict("seconds < 1300ms", s.clone()), true, 1.25);
        is(verdict("bytes == 1M", s.clone()), true, 1048576.0);
        is(verdict("bytes < 1023K", s.clone()), false, 1048576.0);
        is(verdict("retransmits == 0", s.clone()), false, 3.0);
        is(verdict("retransmits != 0", s.clone()), true, 3.0);
        let unknown = |e: &str| Expect::parse(e).unwrap().check(&step(s.clone()));
        assert_eq!(unknown("nothing_here > 1"), Verdict::Unknown);
        assert_eq!(unknown("rtt_us.p42 > 1us"), Verdict::Unknown);
        assert_eq!(
            unknown("rtt_us > 1us"),
            Verdict::Unknown,
            "an object is no figure"
        );
    }

    #[test]
    fn a_failed_step_fails_every_expectation() {
        let mut st = step(json!({"bits_per_second": 1e10}));
        st.error = Some("agent went away".into());
        assert_eq!(
            Expect::parse("gbps > 1").unwrap().check(&st),
            Verdict::Failed("agent went away".into())
        );
    }

    #[test]
    fn bad_expectations_say_what_is_wrong_in_one_line() {
        for (text, says) in [
            ("bits_per_second 9G", "give FIGURE OP VALUE with OP one of"),
            (">= 9G", "give FIGURE OP VALUE"),
            ("gbps >=", "give FIGURE OP VALUE"),
            ("rtt p99 <= 2ms", "is not a figure"),
            ("rtt_us..p99 <= 2ms", "is not a figure"),
            ("rtt_p99 <= 2 fortnights", "is not a time"),
            ("bits_per_second >= fast", "is not a rate"),
            ("retransmits <= 2ms", "is not a plain number"),
            ("loss_pct < 1‰", "is not a percentage"),
            ("bytes > 1X", "is not a size"),
        ] {
            let e = Expect::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn every_metric_parses_with_its_own_unit() {
        for m in Metric::ALL {
            let e = Expect::parse(&format!("{} >= 1", m.name())).unwrap();
            assert_eq!(e.figure(), m.name());
        }
    }

    #[test]
    fn figures_are_shown_in_their_unit() {
        let e = Expect::parse("bits_per_second >= 9G").unwrap();
        assert_eq!(e.show(7.3e9), "7.3 Gbit/s");
        assert_eq!(
            Expect::parse("rtt_p99 <= 2ms").unwrap().show(1500.0),
            "1500 us"
        );
        assert_eq!(Expect::parse("loss_pct <= 1").unwrap().show(0.7), "0.7%");
        assert_eq!(
            Expect::parse("bytes >= 1").unwrap().show(2097152.0),
            "2097152 bytes"
        );
        assert_eq!(
            Expect::parse("rtt_p50 <= 1").unwrap().show(0.0001234),
            "1.234e-4 us"
        );
        let f = figures_of(&json!({"bits_per_second": 1, "rtt_us": {"p99": 2}, "x": "y"}));
        assert_eq!(
            f,
            vec!["bits_per_second".to_string(), "rtt_us.p99".to_string()]
        );
    }
}
