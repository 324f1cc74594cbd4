//! `--expect` and `--junit`: a run's figures against expectations
//! ([`meshperf_protocol::expect`]) as a CI gate. One line per expectation on
//! stderr (met, not met naming the steps or pairs that missed it, or a
//! figure no step has), exit status 3 when one is not met, and a JUnit XML
//! report of the steps and expectations for CI systems.

use meshperf_protocol::expect::{figures_of, Expect, Verdict};
use meshperf_protocol::result::{RunResult, StepResult};
use std::fmt::Write;

/// The exit status of a run whose expectations were not all met.
pub const EXIT_NOT_MET: u8 = 3;

/// How the expectations fared, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gate {
    /// A figure no step's summary has: a usage error (exit 2).
    Unknown,
    /// At least one expectation missed on at least one step (exit 3).
    NotMet,
    /// Every expectation held on every step (or none was given).
    Met,
}

/// One expectation and its verdict on each step of the result, in order.
pub struct Checked {
    pub expect: Expect,
    pub verdicts: Vec<Verdict>,
}

impl Checked {
    fn gate(&self) -> Gate {
        if self.verdicts.contains(&Verdict::Unknown) {
            Gate::Unknown
        } else if self.verdicts.iter().all(Verdict::held) {
            Gate::Met
        } else {
            Gate::NotMet
        }
    }
}

/// Every expectation on every step.
pub fn check(expects: &[Expect], result: &RunResult) -> Vec<Checked> {
    expects
        .iter()
        .map(|e| Checked {
            expect: e.clone(),
            verdicts: result.steps.iter().map(|s| e.check(s)).collect(),
        })
        .collect()
}

/// The gate over all expectations: the worst of them.
pub fn gate(checked: &[Checked]) -> Gate {
    checked.iter().map(Checked::gate).min().unwrap_or(Gate::Met)
}

/// A step as a report names it: the pair in a matrix (`DRIVER -> SERVER`,
/// the agents' addresses), else `step N` and its sweep point.
pub fn step_name(s: &StepResult, names: &[String]) -> String {
    let name = |i: usize| {
        names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("agent {i}"))
    };
    if let Some(p) = s.pair {
        return format!("{} -> {}", name(p.client), name(p.server));
    }
    let mut n = format!("step {}", s.index);
    for (k, v) in &s.point {
        let _ = write!(n, " {k}={v}");
    }
    if s.repeat > 0 {
        let _ = write!(n, " repeat {}", s.repeat);
    }
    n
}

/// The line of each expectation (for stderr, after `meshperf run: `).
pub fn lines(checked: &[Checked], result: &RunResult, names: &[String]) -> Vec<String> {
    const LISTED: usize = 8;
    let mut out = Vec::new();
    for c in checked {
        let e = &c.expect;
        match c.gate() {
            Gate::Unknown => {
                let kind = result.steps.first().map_or("", |s| s.kind.name());
                let has = result
                    .steps
                    .iter()
                    .find(|s| s.error.is_none())
                    .map(|s| figures_of(&s.summary).join(", "))
                    .unwrap_or_default();
                out.push(format!(
                    "expectation {:?}: no figure {} in a {kind} step's summary (its figures: {has}; or a metric: gbps, rtt_p50, rtt_p99, loss_pct, ...)",
                    e.text,
                    e.figure()
                ));
            }
            Gate::Met => {
                let v: Vec<f64> = c
                    .verdicts
                    .iter()
                    .filter_map(|v| match v {
                        Verdict::Held(x) => Some(*x),
                        _ => None,
                    })
                    .collect();
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                out.push(match v.len() {
                    0 => format!("expectation met: {} (no steps)", e.text),
                    1 => format!("expectation met: {}: {}", e.text, e.show(lo)),
                    n => format!(
                        "expectation met: {} on all {n} steps ({} to {})",
                        e.text,
                        e.show(lo),
                        e.show(hi)
                    ),
                });
            }
            Gate::NotMet => {
                let missed: Vec<String> = result
                    .steps
                    .iter()
                    .zip(&c.verdicts)
                    .filter_map(|(s, v)| match v {
                        Verdict::Broken(x) => {
                            Some(format!("{} {}", step_name(s, names), e.show(*x)))
                        }
                        Verdict::Failed(why) => {
                            Some(format!("{} failed ({why})", step_name(s, names)))
                        }
                        _ => None,
                    })
                    .collect();
                let more = missed.len().saturating_sub(LISTED);
                out.push(format!(
                    "expectation not met: {}: {} of {} {} missed it: {}{}",
                    e.text,
                    missed.len(),
                    c.verdicts.len(),
                    if result.steps.iter().any(|s| s.pair.is_some()) {
                        "pairs"
                    } else {
                        "steps"
                    },
                    missed[..missed.len().min(LISTED)].join(", "),
                    if more > 0 {
                        format!(", and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    out
}

/// XML text with the five markup characters escaped and the characters
/// XML 1.0 cannot carry replaced.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A JUnit XML report (the Jenkins/Ant schema CI systems read): one
/// testsuite for the run, a testcase per step (an error when it failed)
/// and one per step and expectation (a failure when the figure missed).
pub fn junit(result: &RunResult, checked: &[Checked], names: &[String]) -> String {
    let kind = result.plan.kind.name();
    let suite = result.plan.name.clone().unwrap_or_else(|| kind.to_string());
    let mut cases = String::new();
    let (mut tests, mut failures, mut errors, mut time) = (0usize, 0usize, 0usize, 0.0f64);
    for (i, s) in result.steps.iter().enumerate() {
        let name = step_name(s, names);
        let secs = s.wall_seconds.unwrap_or(0.0).max(0.0);
        time += secs;
        tests += 1;
        let _ = write!(
            cases,
            "    <testcase classname=\"meshperf.{kind}\" name=\"{}\" time=\"{secs:.3}\"",
            xml(&name)
        );
        match &s.error {
            Some(e) => {
                errors += 1;
                let _ = writeln!(
                    cases,
                    ">\n      <error type=\"step\" message=\"{}\"/>\n    </testcase>",
                    xml(e)
                );
            }
            None => cases.push_str("/>\n"),
        }
        for c in checked {
            tests += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"meshperf.expect\" name=\"{}: {}\" time=\"0\"",
                xml(&name),
                xml(&c.expect.text)
            );
            let failure = match &c.verdicts[i] {
                Verdict::Held(_) => None,
                Verdict::Broken(v) => Some(format!("measured {}", c.expect.show(*v))),
                Verdict::Failed(why) => Some(format!("the step failed: {why}")),
                Verdict::Unknown => Some(format!(
                    "no figure {} in the step's summary",
                    c.expect.figure()
                )),
            };
            match failure {
                Some(m) => {
                    failures += 1;
                    let _ = writeln!(
                        cases,
                        ">\n      <failure type=\"expectation\" message=\"{}\"/>\n    </testcase>",
                        xml(&m)
                    );
                }
                None => cases.push_str("/>\n"),
            }
        }
    }
    let head =
        format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\"");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"meshperf run\" {head}>\n  <testsuite name=\"{}\" {head}>\n{cases}  </testsuite>\n</testsuites>\n",
        xml(&suite)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(
            xml("a<b>&\"c'\u{1}"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{fffd}"
        );
    }
}
