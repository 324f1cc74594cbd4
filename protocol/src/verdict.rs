//! The verdict of a `latency_under_load` step: a grade and one sentence in
//! plain words, for a reader who asked "is my connection bloated?" and
//! should not have to read 40 figures to hear the answer.
//!
//! The grade is the bufferbloat scale that DSLReports' speed test
//! introduced and Waveform's bufferbloat test uses: the round trip the load
//! added over the idle phase, A+ under 5 ms, A under 30, B under 60, C
//! under 200, D under 400, F from 400 ms. Those tests average the download
//! and upload phases; this grades the worst loaded phase, and names it: an
//! upload that adds 300 ms is what breaks a video call, whatever the
//! download does. The words per grade follow what real-time applications
//! tolerate (ITU-T G.114 puts the limit for a conversation at 150 ms one
//! way; games and calls notice tens of milliseconds of jitter).
//!
//! An added delay no larger than its uncertainty, or below zero (on an idle
//! loopback the loaded round trip can read *less* than the idle one: busy
//! CPUs wake faster), reads "none", with the uncertainty, never a negative
//! number. The uncertainty is that of a difference of two medians: about
//! two standard errors, each 1.2533 sigma / sqrt(n) with sigma estimated
//! robustly as 1.4826 MAD of the phase's round trips.
//!
//! One definition for every reader: `meshperf run` prints [`lul`]'s sentence
//! under the phase table, the page's card shows it first (`lul_card`), and
//! the matrix cell of a `latency_under_load` pair shows it in its tooltip.

pub mod tcp;

use crate::params::LulPhase;
use crate::summary::{AddedLatency, LulPhaseSummary, LulSummary, Stats};
use crate::units::duration_us;
use serde::Serialize;

/// Upper bounds (ms, exclusive) of the grades A+ to D; F above the last.
pub const GRADES: [(&str, f64); 5] = [
    ("A+", 5.0),
    ("A", 30.0),
    ("B", 60.0),
    ("C", 200.0),
    ("D", 400.0),
];

/// What one loaded phase added to the round trip.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseVerdict {
    pub phase: LulPhase,
    /// Loaded minus idle median round trip, ms (negative when the load
    /// made it faster; then `none`).
    pub added_ms: f64,
    /// Its uncertainty, ms.
    pub uncertainty_ms: f64,
    /// No delay beyond the uncertainty (or below zero).
    pub none: bool,
    /// The phase's added one-way medians, ms, when the probes had both ways.
    pub up_ms: Option<f64>,
    pub down_ms: Option<f64>,
    pub grade: &'static str,
}

/// The step's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The worst loaded phase's grade; `?` with no loaded phase measured.
    pub grade: &'static str,
    /// One sentence, e.g. "Grade C: uploads add 34 ms (on the way up): a
    /// video call will stutter while you upload; downloads add none (±0.02 ms)."
    pub sentence: String,
    pub phases: Vec<PhaseVerdict>,
}

/// The grade of an added round trip of `ms` (none counts as 0).
pub fn grade(ms: f64) -> &'static str {
    GRADES
        .iter()
        .find(|(_, below)| ms < *below)
        .map_or("F", |(g, _)| g)
}

/// What a grade means for a call or a game, while the phase's traffic runs.
fn meaning(grade: &str) -> &'static str {
    match grade {
        "A+" => "calls and games will not notice",
        "A" => "calls and games will hardly notice",
        "B" => "games may lag a little",
        "C" => "a video call will stutter",
        "D" => "a video call will break up",
        _ => "calls and games will be unusable",
    }
}

/// A quantile of a phase's delays: the standard error of a sample quantile
/// q of n values is sqrt(q (1 - q) / n) / f(x_q); for a normal shape of
/// sigma 1.4826 MAD, `factor` sigma / sqrt(n) (median: 1.2533).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    Median,
    P90,
    P99,
}

impl Quantile {
    fn factor(self) -> f64 {
        match self {
            Quantile::Median => 1.2533,
            Quantile::P90 => 1.7094,
            Quantile::P99 => 3.7328,
        }
    }
}

/// The standard error of quantile `q` of `s` (us), from its MAD.
fn quantile_se(s: &Stats, q: Quantile) -> f64 {
    if s.n == 0 {
        return f64::INFINITY;
    }
    q.factor() * 1.4826 * s.mad / (s.n as f64).sqrt()
}

/// An added delay (loaded minus idle, us) and its uncertainty (us): about
/// two standard errors of the difference of the two quantiles.
///
/// The one rule every reader follows (the card, the verdict, `meshperf
/// run`'s table, the matrix's tooltip): an added delay no larger than its
/// uncertainty, or below zero, reads `none (±U)`, never as a figure. Files
/// (JSON, CSV) keep the raw difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Added {
    pub us: f64,
    pub uncertainty_us: f64,
}

impl Added {
    /// The added delay of `added_us` between quantile `q` of `idle` and of
    /// `loaded`; without either's statistics only the sign rule applies.
    pub fn of(added_us: f64, idle: Option<&Stats>, loaded: Option<&Stats>, q: Quantile) -> Added {
        let uncertainty_us = match (idle, loaded) {
            (Some(i), Some(l)) => {
                2.0 * (quantile_se(i, q).powi(2) + quantile_se(l, q).powi(2)).sqrt()
            }
            _ => 0.0,
        };
        Added {
            us: added_us,
            uncertainty_us,
        }
    }

    /// No delay beyond the uncertainty (or below zero).
    pub fn none(&self) -> bool {
        self.us <= self.uncertainty_us
    }

    /// `none (±U)`, U in ms as the verdict writes it ([`ms_text`]), or the
    /// delay written by `fmt` from us (the CLI's ms).
    pub fn text(&self, fmt: impl Fn(f64) -> String) -> String {
        if self.none() {
            format!("none (±{})", ms_text(self.uncertainty_us / 1e3))
        } else {
            fmt(self.us)
        }
    }
}

/// Which statistics of a phase an added delay is the difference of.
type PhaseStats = fn(&LulPhaseSummary) -> Option<&Stats>;

/// What phase `p` added over `idle`, each way: `rtt`, `up` or `down`, at
/// quantile `q`; None when the summary has no such added figure.
pub fn added(
    idle: Option<&LulPhaseSummary>,
    p: &LulPhaseSummary,
    way: &str,
    q: Quantile,
) -> Option<Added> {
    let (a, of): (Option<AddedLatency>, PhaseStats) = match way {
        "rtt" => (p.added_rtt_us, |p| p.rtt_us.as_ref()),
        "up" => (p.added_up_us, |p| p.up_us.as_ref()),
        _ => (p.added_down_us, |p| p.down_us.as_ref()),
    };
    let a = a?;
    let v = match q {
        Quantile::Median => a.median,
        Quantile::P90 => a.p90,
        Quantile::P99 => a.p99,
    };
    Some(Added::of(v, idle.and_then(of), of(p), q))
}

/// The idle phase of a summary: what the added delays are over.
pub fn idle_phase(s: &LulSummary) -> Option<&LulPhaseSummary> {
    s.phases.iter().find(|p| p.phase == LulPhase::Idle)
}

/// Milliseconds as the verdict writes them: 3 significant figures at most,
/// never "-0".
pub fn ms_text(ms: f64) -> String {
    if ms == 0.0 {
        return "0".into();
    }
    let a = ms.abs();
    let t = if a >= 100.0 {
        format!("{ms:.0}")
    } else if a >= 10.0 {
        format!("{ms:.1}")
    } else if a >= 1.0 {
        format!("{ms:.2}")
    } else if a >= 0.01 {
        format!("{ms:.3}")
    } else {
        format!("{ms:.4}")
    };
    if t.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        t.trim_start_matches('-').to_string()
    } else {
        t
    }
}

fn phase_verdict(idle: &Stats, p: &LulPhaseSummary) -> Option<PhaseVerdict> {
    let loaded = p.rtt_us.as_ref()?;
    let added_us = p
        .added_rtt_us
        .map_or(loaded.median - idle.median, |a| a.median);
    let a = Added::of(added_us, Some(idle), Some(loaded), Quantile::Median);
    let (unc_us, none) = (a.uncertainty_us, a.none());
    Some(PhaseVerdict {
        phase: p.phase,
        added_ms: added_us / 1e3,
        uncertainty_ms: unc_us / 1e3,
        none,
        up_ms: p.added_up_us.map(|a| a.median / 1e3),
        down_ms: p.added_down_us.map(|a| a.median / 1e3),
        grade: grade(if none { 0.0 } else { added_us / 1e3 }),
    })
}

/// "uploads", "downloads", "uploading and downloading at once"; a `both`
/// phase without the one-way phases beside it is a test's own load (the
/// probes beside a tcp_stream or udp_stream: `probe_ms`), "the load".
fn doing(ph: LulPhase, alone: bool) -> (&'static str, &'static str, &'static str) {
    match ph {
        LulPhase::Download => ("downloads", "add", "while you download"),
        LulPhase::Upload => ("uploads", "add", "while you upload"),
        _ if alone => ("the load", "adds", "while it runs"),
        _ => (
            "uploading and downloading at once",
            "adds",
            "while both run",
        ),
    }
}

fn clause(v: &PhaseVerdict, alone: bool) -> String {
    let (what, verb, _) = doing(v.phase, alone);
    if v.none {
        // Durations by the one rule (µs below 10 ms, ms from it: issue 45
        // item 12; "±0.0009 ms" read beside a card in µs).
        return format!(
            "{what} {verb} none (±{})",
            duration_us(v.uncertainty_ms * 1e3)
        );
    }
    // The way the queue built: the larger added one-way delay, when it
    // holds most of the added round trip.
    let way = match (v.up_ms, v.down_ms) {
        (Some(u), Some(d)) if u > 0.0 && u >= 2.0 * d.max(0.0) => " (on the way up)",
        (Some(u), Some(d)) if d > 0.0 && d >= 2.0 * u.max(0.0) => " (on the way down)",
        _ => "",
    };
    format!("{what} {verb} {}{way}", duration_us(v.added_ms * 1e3))
}

/// The verdict of a driving side's summary.
pub fn lul(s: &LulSummary) -> Verdict {
    let idle = s
        .phases
        .iter()
        .find(|p| p.phase == LulPhase::Idle)
        .and_then(|p| p.rtt_us.as_ref());
    let phases: Vec<PhaseVerdict> = match idle {
        Some(idle) => s
            .phases
            .iter()
            .filter(|p| p.phase != LulPhase::Idle)
            .filter_map(|p| phase_verdict(idle, p))
            .collect(),
        None => Vec::new(),
    };
    // The worst phase: the largest added delay beyond its uncertainty.
    let worst = phases.iter().max_by(|a, b| {
        let key = |v: &PhaseVerdict| {
            if v.none {
                f64::NEG_INFINITY
            } else {
                v.added_ms
            }
        };
        key(a).total_cmp(&key(b))
    });
    let Some(worst) = worst else {
        return Verdict {
            grade: "?",
            sentence: if idle.is_none() {
                "No verdict: no probe was answered in the idle phase, so nothing to compare the loaded round trips with.".into()
            } else {
                "No verdict: no probe was answered in a loaded phase.".into()
            },
            phases,
        };
    };
    let alone = !phases
        .iter()
        .any(|v| matches!(v.phase, LulPhase::Download | LulPhase::Upload));
    let clause = |v: &PhaseVerdict| clause(v, alone);
    let mut sentence = format!("Grade {}: ", worst.grade);
    if worst.none {
        let all: Vec<String> = phases.iter().map(clause).collect();
        sentence.push_str(&format!(
            "the load added no delay beyond the measurement's uncertainty: {}; {}.",
            all.join(", "),
            meaning(worst.grade)
        ));
    } else {
        let (_, _, when) = doing(worst.phase, alone);
        sentence.push_str(&format!(
            "{}: {} {when}",
            clause(worst),
            meaning(worst.grade)
        ));
        let rest: Vec<String> = phases
            .iter()
            .filter(|v| v.phase != worst.phase)
            .map(clause)
            .collect();
        if !rest.is_empty() {
            sentence.push_str("; ");
            sentence.push_str(&rest.join(", "));
        }
        sentence.push('.');
    }
    Verdict {
        grade: worst.grade,
        sentence,
        phases,
    }
}

/// The verdict of a summary given as JSON (the page's matrix, through wasm).
pub fn lul_json(summary_json: &str) -> Result<String, String> {
    // Through a `Value` both ways, as result.rs and plans.rs read and the
    // wasm facade writes: the codec module then holds one deserialiser and
    // one serialiser per type (docs/performance.md, the codec's size).
    let s: LulSummary = serde_json::from_str(summary_json)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("not a latency_under_load summary: {e}"))?;
    serde_json::to_value(lul(&s))
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A phase whose round trips have median `med` us, MAD `mad`, n `n`;
    /// added round trip `added` us and one-way `up`/`down` us.
    fn phase(
        name: &str,
        med: f64,
        mad: f64,
        n: u64,
        added: Option<(f64, f64, f64)>,
    ) -> serde_json::Value {
        let st = json!({"n": n, "min": med, "max": med, "mean": med, "sigma": mad,
            "skew": 0.0, "kurtosis": 0.0, "median": med, "iq25": med, "iq75": med, "p90": med,
            "p99": med, "p999": med, "p9999": med, "mad": mad});
        let flow = json!({"sent": n, "received": n, "lost": 0, "duplicates": 0, "reordered": 0});
        let a = |v: f64| json!({"median": v, "p90": v, "p99": v});
        json!({"phase": name, "seconds": 5.0, "down_bytes": 0, "down_bits_per_second": 0.0,
            "up_bytes": 0, "up_bits_per_second": 0.0, "rtt_us": st, "up_us": null, "down_us": null,
            "added_rtt_us": added.map(|(r, _, _)| a(r)),
            "added_up_us": added.map(|(_, u, _)| a(u)),
            "added_down_us": added.map(|(_, _, d)| a(d)),
            "probes_up": flow, "probes_down": flow, "probes_skipped": 0})
    }

    fn summary(phases: Vec<serde_json::Value>) -> LulSummary {
        let flow = json!({"sent": 0, "received": 0, "lost": 0, "duplicates": 0, "reordered": 0});
        serde_json::from_value(json!({"phases": phases, "clock": null, "probes_up": flow,
            "probes_down": flow, "probes_skipped": 0, "probe_ms": 5.0, "probe_bytes": 64,
            "streams_per_direction": 4, "seconds": 20.0, "foreign": null, "peer": "10.0.0.2:1",
            "complete": true, "note": null, "rate_capped_us": 0.0, "base_ns": 0,
            "server_base_ns": null, "timestamps": "kernel"}))
        .unwrap()
    }

    /// Idle 20 ms (MAD 100 us, 1000 probes); each loaded phase `added` ms.
    fn graded(down: f64, up: f64) -> Verdict {
        let ph = |name: &str, ms: f64| {
            let us = ms * 1e3;
            phase(name, 20_000.0 + us, 100.0, 1000, Some((us, 0.0, 0.0)))
        };
        lul(&summary(vec![
            phase("idle", 20_000.0, 100.0, 1000, None),
            ph("download", down),
            ph("upload", up),
        ]))
    }

    #[test]
    fn each_grade_starts_at_its_boundary() {
        for (ms, g) in [
            (4.99, "A+"),
            (5.0, "A"),
            (29.99, "A"),
            (30.0, "B"),
            (59.99, "B"),
            (60.0, "C"),
            (199.99, "C"),
            (200.0, "D"),
            (399.99, "D"),
            (400.0, "F"),
            (5000.0, "F"),
        ] {
            assert_eq!(grade(ms), g, "{ms} ms");
            // The worst phase grades the step, whichever way it is.
            assert_eq!(graded(ms, 1.0).grade, g, "download {ms} ms");
            assert_eq!(graded(1.0, ms).grade, g, "upload {ms} ms");
        }
    }

    #[test]
    fn the_sentence_names_the_phase_and_the_way_that_bloats() {
        let v = lul(&summary(vec![
            phase("idle", 20_000.0, 100.0, 1000, None),
            phase("download", 20_050.0, 100.0, 1000, Some((50.0, 20.0, 30.0))),
            phase(
                "upload",
                54_000.0,
                900.0,
                1000,
                Some((34_000.0, 33_500.0, 500.0)),
            ),
        ]));
        assert_eq!(v.grade, "B");
        assert_eq!(
            v.sentence,
            "Grade B: uploads add 34 ms (on the way up): games may lag a little while you upload; downloads add 50 us."
        );
        assert_eq!(v.phases.len(), 2);
        assert!(
            !v.phases[0].none,
            "50 us is past 2 x 1.25 x 1.48 x 100 / sqrt(1000) x sqrt 2 = 16.6 us"
        );
        assert!(
            (v.phases[0].uncertainty_ms - 0.0166).abs() < 0.0005,
            "{}",
            v.phases[0].uncertainty_ms
        );
    }

    #[test]
    fn negative_and_within_uncertainty_delays_read_none_never_negative() {
        // Loopback: loaded round trips 10 us faster than idle (busy CPUs
        // wake faster), and 5 us slower with a spread that hides it.
        let v = lul(&summary(vec![
            phase("idle", 30.0, 5.0, 1000, None),
            phase("download", 20.0, 5.0, 1000, Some((-10.0, -5.0, -5.0))),
            phase("upload", 35.0, 60.0, 1000, Some((5.0, 2.0, 3.0))),
        ]));
        assert!(v.phases.iter().all(|p| p.none), "{v:?}");
        assert_eq!(v.grade, "A+");
        assert!(!v.sentence.contains('-'), "{}", v.sentence);
        assert_eq!(
            v.sentence,
            "Grade A+: the load added no delay beyond the measurement's uncertainty: downloads add none (±0.831 us), uploads add none (±7.076 us); calls and games will not notice."
        );
    }

    #[test]
    fn no_idle_or_no_loaded_probe_is_no_verdict() {
        let mut s = summary(vec![
            phase("idle", 30.0, 5.0, 1000, None),
            phase("download", 20.0, 5.0, 1000, None),
        ]);
        s.phases[1].rtt_us = None;
        assert_eq!(lul(&s).grade, "?");
        assert!(lul(&s)
            .sentence
            .contains("no probe was answered in a loaded phase"));
        s.phases[0].rtt_us = None;
        assert!(lul(&s).sentence.contains("in the idle phase"));
    }

    /// The card's fixture, whose phases all differ (the page's e2e test
    /// checks it shows this same sentence), worked by hand: the both phase
    /// adds 15.4998 ms (A: 5 to 30); its one-way parts (8.81 up, 4.86 down)
    /// name no way; download's 4.04 of 4.10 ms are on the way down, upload's
    /// 12.93 of 12.87 on the way up (its way down is -0.03).
    #[test]
    fn the_card_fixture_reads_as_worked_by_hand() {
        let s: LulSummary =
            serde_json::from_str(include_str!("../tests/fixtures/lul-card-phases.json")).unwrap();
        let v = lul(&s);
        assert_eq!(v.grade, "A");
        assert_eq!(
            v.sentence,
            "Grade A: uploading and downloading at once adds 15.5 ms: calls and games will hardly notice while both run; downloads add 4102 us (on the way down), uploads add 12.87 ms (on the way up)."
        );
    }

    #[test]
    fn a_load_alone_is_the_test_s_own() {
        // The probes beside a tcp_stream: idle, then the stream's own load.
        let v = lul(&summary(vec![
            phase("idle", 20_000.0, 100.0, 1000, None),
            phase(
                "both",
                32_000.0,
                100.0,
                1000,
                Some((12_000.0, 11_900.0, 100.0)),
            ),
        ]));
        assert_eq!(
            v.sentence,
            "Grade A: the load adds 12 ms (on the way up): calls and games will hardly notice while it runs."
        );
    }

    #[test]
    fn milliseconds_read_short_and_never_minus_zero() {
        assert_eq!(ms_text(34.0), "34.0");
        assert_eq!(ms_text(412.4), "412");
        assert_eq!(ms_text(1.234), "1.23");
        assert_eq!(ms_text(0.0166), "0.017");
        assert_eq!(ms_text(-0.00001), "0.0000");
    }

    #[test]
    fn an_added_delay_within_its_uncertainty_or_below_zero_reads_none() {
        let st = |med: f64, mad: f64, n: u64| -> Stats {
            serde_json::from_value(json!({"n": n, "min": med, "max": med, "mean": med,
                "sigma": mad, "skew": 0.0, "kurtosis": 0.0, "median": med, "iq25": med,
                "iq75": med, "p90": med, "p99": med, "p999": med, "p9999": med, "mad": mad}))
            .unwrap()
        };
        let (idle, loaded) = (st(100.0, 10.0, 100), st(104.0, 10.0, 100));
        // 2 sqrt(2) 1.2533 1.4826 10 / 10 = 5.26 us: +4 us is within it.
        let a = Added::of(4.0, Some(&idle), Some(&loaded), Quantile::Median);
        assert!((a.uncertainty_us - 5.2556).abs() < 1e-3, "{a:?}");
        assert!(a.none());
        assert_eq!(a.text(crate::lul_card::ms), "none (±0.0053)");
        // A p99 is less certain than a median of the same probes.
        let p99 = Added::of(4.0, Some(&idle), Some(&loaded), Quantile::P99);
        assert!(p99.uncertainty_us > 2.9 * a.uncertainty_us, "{p99:?}");
        // Beyond it: the figure, as the CLI prints it.
        let b = Added::of(12.0, Some(&idle), Some(&loaded), Quantile::Median);
        assert_eq!(b.text(crate::lul_card::ms), "0.012");
        // Below zero reads none whatever the uncertainty; never "-0.010".
        let c = Added::of(-10.17, None, None, Quantile::Median);
        assert_eq!(c.text(crate::lul_card::ms), "none (±0)");
    }
}
