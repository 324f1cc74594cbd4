//! The summary card of a `latency_under_load` step: the figures a reader
//! wants first (throughput each way, idle round trip, the latency the load
//! added, one-way delays, probe loss), each with what it rests on and with
//! the rule `meshperf run`'s table follows for one-way delays: an absolute
//! one-way delay no larger than the clock estimate's uncertainty is shown
//! as `<±U` (U in ms), not as a number that means nothing.
//!
//! One definition for both readers: the CLI's table (agent/src/run/lul_out.rs)
//! formats its cells with [`ms`], [`mbit`] and [`one_way_text`], and the page
//! shows [`card`] of the same summary through the codec wasm module
//! (`lul_card`). Every figure names the JSON pointers into the step's summary
//! it was read from and the factor to its unit, so a test can check the card
//! against any result file.

use crate::params::LulPhase;
use crate::summary::{ClockBasis, LulPhaseSummary, LulSummary, Stats, Timestamps};
use crate::verdict::Quantile;
use serde::Serialize;

/// Milliseconds from us, as the CLI prints them.
pub fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

/// Mbit/s from bit/s, as the CLI prints them.
pub fn mbit(bps: f64) -> String {
    format!("{:.1}", bps / 1e6)
}

/// Whether an absolute one-way delay (us) is no larger than the clock's
/// uncertainty `unc_us` (infinite when there is no clock estimate).
pub fn below_uncertainty(median_us: f64, unc_us: f64) -> bool {
    median_us.abs() <= unc_us
}

/// The cell of an absolute one-way median (us): ms, `<±U` when it is no
/// larger than the uncertainty, `-` without probes.
pub fn one_way_text(s: &Option<Stats>, unc_us: f64) -> String {
    match s {
        Some(x) if below_uncertainty(x.median, unc_us) => format!("<±{}", ms(unc_us)),
        Some(x) => ms(x.median),
        None => "-".into(),
    }
}

/// What a figure rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// TCP payload over the receiver's time.
    Tcp,
    /// Round trips on the driving agent's clock alone (no clock offset).
    Rtt,
    /// One-way delays through a clock offset and drift estimated from the
    /// probes (absolute values within ± the uncertainty; changes exact).
    Estimated,
    /// One-way delays on the agents' system clocks, taken to agree.
    Synced,
    /// Probe counts.
    Count,
}

/// One figure of the card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Stable name, e.g. `download.added_rtt.p90`.
    pub key: String,
    pub label: String,
    /// JSON pointers into the step's summary whose values, added and
    /// divided by `div`, give `value`.
    pub from: Vec<String>,
    pub div: f64,
    /// In `unit`; null when the summary has no such figure.
    pub value: Option<f64>,
    pub unit: &'static str,
    /// As shown (the CLI's precision; `<±U`; `-` without a value).
    pub text: String,
    pub basis: Basis,
    /// The clock's uncertainty is larger than this figure: `text` says so.
    pub uncertain: bool,
    /// An added delay no larger than its uncertainty, or below zero
    /// ([`crate::verdict::Added`]): that uncertainty in `unit`, and `text`
    /// reads `none (±U)`; `value` keeps the raw difference.
    pub none_within: Option<f64>,
}

/// A titled group of figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub title: String,
    pub figures: Vec<Figure>,
}

/// The card of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    /// The grade and the sentence a reader wants first ([`crate::verdict`]).
    pub verdict: crate::verdict::Verdict,
    pub sections: Vec<Section>,
    /// What the one-way delays rest on, in one line.
    pub clock: String,
    pub complete: bool,
    pub note: Option<String>,
}

/// Builds figures of one summary.
struct Builder<'a> {
    s: &'a LulSummary,
    /// The clock's uncertainty, us (infinite without an estimate).
    unc: f64,
    one_way: Basis,
}

impl Builder<'_> {
    fn phase(&self, ph: LulPhase) -> Option<(usize, &LulPhaseSummary)> {
        self.s
            .phases
            .iter()
            .enumerate()
            .find(|(_, p)| p.phase == ph)
    }

    /// A figure read from `pointers` of phase `ph` (relative to the phase).
    #[allow(clippy::too_many_arguments)]
    fn fig(
        &self,
        key: String,
        label: &str,
        ph: LulPhase,
        pointers: &[&str],
        read: impl Fn(&LulPhaseSummary) -> Option<f64>,
        unit: &'static str,
        basis: Basis,
    ) -> Figure {
        // The text from the summary's own figure, exactly as the CLI formats it.
        let (div, fmt): (f64, fn(f64) -> String) = match unit {
            "Mbit/s" => (1e6, mbit),
            _ => (1e3, ms),
        };
        let at = self.phase(ph);
        let from = at.map_or_else(Vec::new, |(i, _)| {
            pointers
                .iter()
                .map(|p| format!("/phases/{i}/{p}"))
                .collect()
        });
        let raw = at.and_then(|(_, p)| read(p));
        Figure {
            key,
            label: label.into(),
            from,
            div,
            value: raw.map(|v| v / div),
            unit,
            text: raw.map_or_else(|| "-".into(), fmt),
            basis,
            uncertain: false,
            none_within: None,
        }
    }

    fn throughput(&self) -> Section {
        let t = |key: &str, label: &str, ph, ptrs: &[&str], read: fn(&LulPhaseSummary) -> f64| {
            self.fig(
                key.into(),
                label,
                ph,
                ptrs,
                |p| Some(read(p)),
                "Mbit/s",
                Basis::Tcp,
            )
        };
        use LulPhase::*;
        Section {
            title: "Throughput".into(),
            figures: vec![
                t(
                    "download.down",
                    "download ↓",
                    Download,
                    &["down_bits_per_second"],
                    |p| p.down_bits_per_second,
                ),
                t(
                    "upload.up",
                    "upload ↑",
                    Upload,
                    &["up_bits_per_second"],
                    |p| p.up_bits_per_second,
                ),
                t(
                    "both.down",
                    "both ↓",
                    Both,
                    &["down_bits_per_second"],
                    |p| p.down_bits_per_second,
                ),
                t("both.up", "both ↑", Both, &["up_bits_per_second"], |p| {
                    p.up_bits_per_second
                }),
                t(
                    "both.sum",
                    "both, sum",
                    Both,
                    &["down_bits_per_second", "up_bits_per_second"],
                    |p| p.down_bits_per_second + p.up_bits_per_second,
                ),
            ],
        }
    }

    fn idle_rtt(&self) -> Section {
        let q = |name: &str, read: fn(&Stats) -> f64| {
            self.fig(
                format!("idle.rtt.{name}"),
                name,
                LulPhase::Idle,
                &[&format!("rtt_us/{name}")],
                |p| p.rtt_us.as_ref().map(read),
                "ms",
                Basis::Rtt,
            )
        };
        Section {
            title: "Idle round trip".into(),
            figures: vec![
                q("median", |s| s.median),
                q("p90", |s| s.p90),
                q("p99", |s| s.p99),
            ],
        }
    }

    /// An added delay's figure follows the rule of [`crate::verdict::Added`]:
    /// `none (±U)` when it is no larger than its uncertainty, or below zero.
    fn none_rule(&self, mut f: Figure, ph: LulPhase, way: &str, q: Quantile) -> Figure {
        let idle = crate::verdict::idle_phase(self.s);
        let a = self
            .phase(ph)
            .and_then(|(_, p)| crate::verdict::added(idle, p, way, q));
        if let Some(a) = a.filter(|a| a.none()) {
            f.text = a.text(ms);
            f.none_within = Some(a.uncertainty_us / f.div);
        }
        f
    }

    fn added_rtt(&self, ph: LulPhase) -> Section {
        let q = |name: &str, read: fn(&crate::summary::AddedLatency) -> f64, qu: Quantile| {
            let f = self.fig(
                format!("{}.added_rtt.{name}", ph.name()),
                name,
                ph,
                &[&format!("added_rtt_us/{name}")],
                |p| p.added_rtt_us.as_ref().map(read),
                "ms",
                Basis::Rtt,
            );
            self.none_rule(f, ph, "rtt", qu)
        };
        Section {
            title: format!("Added round trip, {}", ph.name()),
            figures: vec![
                q("median", |a| a.median, Quantile::Median),
                q("p90", |a| a.p90, Quantile::P90),
                q("p99", |a| a.p99, Quantile::P99),
            ],
        }
    }

    /// Per phase: absolute one-way medians (with the uncertainty rule) and,
    /// under load, what the load added each way (changes: exact).
    fn one_way(&self) -> Section {
        let mut figures = Vec::new();
        for ph in LulPhase::ALL {
            for (dir, arrow) in [("up", "↑"), ("down", "↓")] {
                let key = format!("{}.{dir}.median", ph.name());
                let stats = move |p: &LulPhaseSummary| {
                    if dir == "up" {
                        p.up_us
                    } else {
                        p.down_us
                    }
                };
                let mut f = self.fig(
                    key,
                    &format!("{} {arrow}", ph.name()),
                    ph,
                    &[&format!("{dir}_us/median")],
                    |p| stats(p).map(|s| s.median),
                    "ms",
                    self.one_way,
                );
                if let Some((_, p)) = self.phase(ph) {
                    f.text = one_way_text(&stats(p), self.unc);
                    f.uncertain = stats(p).is_some_and(|s| below_uncertainty(s.median, self.unc));
                }
                figures.push(f);
            }
        }
        for ph in [LulPhase::Download, LulPhase::Upload, LulPhase::Both] {
            for (dir, arrow) in [("up", "↑"), ("down", "↓")] {
                let f = self.fig(
                    format!("{}.added_{dir}.median", ph.name()),
                    &format!("added {} {arrow}", ph.name()),
                    ph,
                    &[&format!("added_{dir}_us/median")],
                    move |p| {
                        let a = if dir == "up" {
                            p.added_up_us
                        } else {
                            p.added_down_us
                        };
                        a.map(|a| a.median)
                    },
                    "ms",
                    self.one_way,
                );
                figures.push(self.none_rule(f, ph, dir, Quantile::Median));
            }
        }
        Section {
            title: "One-way delay (median)".into(),
            figures,
        }
    }

    fn loss(&self) -> Section {
        let f = |dir: &str, arrow: &str, flow: &crate::summary::ProbeFlow| Figure {
            key: format!("loss.{dir}"),
            label: format!("{dir} {arrow}"),
            from: vec![format!("/probes_{dir}/lost")],
            div: 1.0,
            value: Some(flow.lost as f64),
            unit: "probes",
            text: if flow.sent == 0 {
                "-".into()
            } else {
                format!("{} of {} ({:.2}%)", flow.lost, flow.sent, flow.loss_pct())
            },
            basis: Basis::Count,
            uncertain: false,
            none_within: None,
        };
        Section {
            title: "Probe loss".into(),
            figures: vec![
                f("up", "↑", &self.s.probes_up),
                f("down", "↓", &self.s.probes_down),
            ],
        }
    }
}

/// The line that says what the one-way delays rest on, and where the
/// receive times come from (the CLI's footer, the card's last line).
pub fn clock_line(s: &LulSummary) -> String {
    clock_line_in(s, "us")
}

/// [`clock_line`] with microseconds written `micro`: the CLI's `us`, the
/// page's card `µs` (docs/usage.md, units).
pub fn clock_line_in(s: &LulSummary, micro: &str) -> String {
    let basis = clock_basis(s, micro);
    match (s.clock, s.timestamps) {
        (None, _) => basis,
        (Some(_), Timestamps::Kernel) => format!("{basis}; receive times from the kernel"),
        (Some(_), Timestamps::User) => {
            format!("{basis}; receive times from the reading threads (a busy host's wake-ups are in the delays)")
        }
    }
}

fn clock_basis(s: &LulSummary, micro: &str) -> String {
    match s.clock {
        Some(c) if c.basis == ClockBasis::Synced => {
            "one-way delays on the agents' system clocks (clocks: synced)".into()
        }
        Some(c) => format!(
            "one-way delays on estimated clocks: offset {:.1} {micro}, drift {:.2} ppm, \
             uncertainty ±{:.1} {micro} (<± marks a delay smaller than that); their changes \
             (added up/down) are not affected",
            c.offset_us, c.drift_ppm, c.uncertainty_us
        ),
        None => "no probe was answered: no delays".into(),
    }
}

/// The card of a driving side's summary.
pub fn card(s: &LulSummary) -> Card {
    let b = Builder {
        s,
        unc: s.clock.map_or(f64::INFINITY, |c| c.uncertainty_us),
        one_way: match s.clock.map(|c| c.basis) {
            Some(ClockBasis::Synced) => Basis::Synced,
            _ => Basis::Estimated,
        },
    };
    let mut sections = vec![b.throughput(), b.idle_rtt()];
    for ph in [LulPhase::Download, LulPhase::Upload, LulPhase::Both] {
        sections.push(b.added_rtt(ph));
    }
    sections.push(b.one_way());
    sections.push(b.loss());
    // Figures of phases that did not run (a test cut short; a stream
    // test's probes have one loaded phase) are left out, and so are
    // sections left empty.
    for sec in &mut sections {
        sec.figures.retain(|f| !f.from.is_empty());
    }
    sections.retain(|sec| !sec.figures.is_empty());
    Card {
        verdict: crate::verdict::lul(s),
        sections,
        // The page's unit (the card is the page's; the CLI prints clock_line).
        clock: clock_line_in(s, "µs"),
        complete: s.complete,
        note: s.note.clone(),
    }
}

/// The card of a summary given as JSON (the page's call, through wasm);
/// an error when it is not a `latency_under_load` driving side's summary.
pub fn card_json(summary_json: &str) -> Result<String, String> {
    // Through a `Value` both ways, as result.rs and plans.rs read and the
    // wasm facade writes: the codec module then holds one deserialiser and
    // one serialiser per type (docs/performance.md, the codec's size).
    let s: LulSummary = serde_json::from_str(summary_json)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("not a latency_under_load summary: {e}"))?;
    serde_json::to_value(card(&s))
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn st(m: f64) -> Value {
        json!({"n": 10, "min": m, "max": m + 2.0, "mean": m, "sigma": 0.0,
        "skew": 0.0, "kurtosis": 0.0, "median": m, "iq25": m, "iq75": m, "p90": m + 1.0,
        "p99": m + 2.0, "p999": m, "p9999": m, "mad": 0.0})
    }

    fn summary(basis: &str, unc: f64) -> Value {
        let flow =
            json!({"sent": 200, "received": 194, "lost": 6, "duplicates": 0, "reordered": 0});
        let added = json!({"median": 4000.0, "p90": 5000.0, "p99": 9000.0});
        let phase = |name: &str, down: f64, up: f64, loaded: bool| {
            json!({"phase": name, "seconds": 1.0, "down_bytes": 0,
                "down_bits_per_second": down, "up_bytes": 0, "up_bits_per_second": up,
                "rtt_us": st(60.0), "up_us": st(20.0), "down_us": st(2500.0),
                "added_rtt_us": if loaded { added.clone() } else { Value::Null },
                "added_up_us": if loaded { added.clone() } else { Value::Null },
                "added_down_us": if loaded { added.clone() } else { Value::Null },
                "probes_up": flow, "probes_down": flow, "probes_skipped": 0})
        };
        json!({
            "phases": [phase("idle", 0.0, 0.0, false), phase("download", 9.5e8, 1e5, true),
                phase("upload", 1e5, 8.25e8, true), phase("both", 4e8, 3e8, true)],
            "clock": {"basis": basis, "offset_us": 1.0, "drift_ppm": 0.5,
                "uncertainty_us": unc, "min_rtt_us": 60.0, "residual_us": 1.0, "probes_used": 5},
            "probes_up": flow, "probes_down": {"sent": 194, "received": 194, "lost": 0, "duplicates": 0, "reordered": 0},
            "probes_skipped": 0, "probe_ms": 5.0,
            "probe_bytes": 64, "streams_per_direction": 1, "seconds": 1.0, "foreign": 0, "peer": "x",
            "complete": true, "note": null, "rate_capped_us": 0.0, "base_ns": 1, "peer_base_ns": 2
        })
    }

    fn figure<'a>(c: &'a Card, key: &str) -> &'a Figure {
        c.sections
            .iter()
            .flat_map(|s| &s.figures)
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no figure {key}"))
    }

    #[test]
    fn every_figure_is_its_pointers_over_its_divisor() {
        let v = summary("estimated", 30.0);
        let c: Card = card(&serde_json::from_value(v.clone()).unwrap());
        let mut n = 0;
        for f in c.sections.iter().flat_map(|s| &s.figures) {
            let sum: f64 = f
                .from
                .iter()
                .map(|p| v.pointer(p).unwrap().as_f64().unwrap())
                .sum();
            assert_eq!(f.value, Some(sum / f.div), "{}", f.key);
            n += 1;
        }
        assert_eq!(n, 5 + 3 + 9 + 8 + 6 + 2);
        assert_eq!(figure(&c, "both.sum").text, "700.0");
        assert_eq!(figure(&c, "download.added_rtt.p99").text, "9.000");
        assert_eq!(figure(&c, "loss.up").text, "6 of 200 (3.00%)");
        assert_eq!(figure(&c, "loss.down").value, Some(0.0));
    }

    /// The card of a summary whose four phases all differ (every figure,
    /// and every statistic beside the one shown, is a value of its own):
    /// a figure read from the wrong phase, direction or statistic does not
    /// match this table, written by hand from the fixture (the e2e test
    /// `lul.spec.ts` checks the page's card against the same table).
    const DISTINCT: &str = include_str!("../tests/fixtures/lul-card-phases.json");

    /// key, value (in the figure's unit), text, below the uncertainty.
    const TABLE: [(&str, f64, &str, bool); 33] = [
        ("download.down", 941.37, "941.4", false),
        ("upload.up", 827.49, "827.5", false),
        ("both.down", 413.22, "413.2", false),
        ("both.up", 296.51, "296.5", false),
        ("both.sum", 709.73, "709.7", false),
        ("idle.rtt.median", 0.0612, "0.061", false),
        ("idle.rtt.p90", 0.0674, "0.067", false),
        ("idle.rtt.p99", 0.0889, "0.089", false),
        ("download.added_rtt.median", 4.1018, "4.102", false),
        ("download.added_rtt.p90", 5.2226, "5.223", false),
        ("download.added_rtt.p99", 9.3498, "9.350", false),
        ("upload.added_rtt.median", 12.8698, "12.870", false),
        ("upload.added_rtt.p90", 14.5526, "14.553", false),
        ("upload.added_rtt.p99", 20.3188, "20.319", false),
        ("both.added_rtt.median", 15.4998, "15.500", false),
        ("both.added_rtt.p90", 17.6226, "17.623", false),
        ("both.added_rtt.p99", 25.9488, "25.949", false),
        // Uncertainty 30 us: |21.3| and |-12.4| are below it, 35.8 is not.
        ("idle.up.median", 0.0213, "<±0.030", true),
        ("idle.down.median", 2.4816, "2.482", false),
        ("download.up.median", 0.0358, "0.036", false),
        ("download.down.median", 6.5224, "6.522", false),
        ("upload.up.median", 12.9517, "12.952", false),
        ("upload.down.median", -0.0124, "<±0.030", true),
        ("both.up.median", 8.8329, "8.833", false),
        ("both.down.median", 7.3446, "7.345", false),
        // Changes do not rest on the clock's offset, but are differences of
        // two medians: -33.7 us (below zero) reads none, with the
        // difference's own uncertainty; 14.7 us is beyond its own.
        ("download.added_up.median", 0.0147, "0.015", false),
        ("download.added_down.median", 4.0408, "4.041", false),
        ("upload.added_up.median", 12.9304, "12.930", false),
        ("upload.added_down.median", -0.0337, "none (±0.0004)", false),
        ("both.added_up.median", 8.8116, "8.812", false),
        ("both.added_down.median", 4.863, "4.863", false),
        // The whole test's probes, not any phase's.
        ("loss.up", 7.0, "7 of 760 (0.92%)", false),
        ("loss.down", 3.0, "3 of 753 (0.40%)", false),
    ];

    #[test]
    fn every_figure_of_a_card_whose_phases_differ_is_the_hand_written_one() {
        let sum = serde_json::from_str(DISTINCT).unwrap();
        let c = card(&sum);
        let figs: Vec<&Figure> = c.sections.iter().flat_map(|s| &s.figures).collect();
        let keys: Vec<&str> = figs.iter().map(|f| f.key.as_str()).collect();
        let want: Vec<&str> = TABLE.iter().map(|t| t.0).collect();
        assert_eq!(keys, want);
        for (f, &(key, value, text, uncertain)) in figs.iter().zip(&TABLE) {
            let v = f.value.unwrap_or_else(|| panic!("{key}: no value"));
            assert!(
                (v - value).abs() <= 1e-9 * value.abs(),
                "{key}: {v}, expected {value}"
            );
            assert_eq!((f.text.as_str(), f.uncertain), (text, uncertain), "{key}");
            // The uncertainty in the figure's unit goes with every `none`.
            assert_eq!(f.none_within.is_some(), text.starts_with("none"), "{key}");
        }
        let down = figs
            .iter()
            .find(|f| f.key == "upload.added_down.median")
            .unwrap();
        assert!(
            (down.none_within.unwrap() - 0.0004).abs() < 0.00005,
            "{down:?}"
        );
        let basis = |k: &str| figs.iter().find(|f| f.key == k).unwrap().basis;
        assert_eq!(basis("both.sum"), Basis::Tcp);
        assert_eq!(basis("idle.rtt.p99"), Basis::Rtt);
        assert_eq!(basis("both.added_rtt.p90"), Basis::Rtt);
        assert_eq!(basis("upload.down.median"), Basis::Estimated);
        assert_eq!(basis("both.added_down.median"), Basis::Estimated);
        assert_eq!(basis("loss.down"), Basis::Count);
        assert_eq!(
            c.clock,
            "one-way delays on estimated clocks: offset 1523.4 µs, drift 0.42 ppm, \
             uncertainty ±30.0 µs (<± marks a delay smaller than that); their changes \
             (added up/down) are not affected; receive times from the kernel"
        );
        // The CLI's copy of the same line writes microseconds in ASCII.
        assert!(clock_line(&sum).contains("offset 1523.4 us, drift 0.42 ppm"));
    }

    #[test]
    fn a_one_way_delay_below_the_uncertainty_says_so_as_the_cli_does() {
        let s = serde_json::from_value(summary("estimated", 30.0)).unwrap();
        let c = card(&s);
        let up = figure(&c, "idle.up.median");
        assert_eq!((up.text.as_str(), up.uncertain), ("<±0.030", true));
        assert_eq!(up.value, Some(0.02));
        assert_eq!(up.basis, Basis::Estimated);
        let down = figure(&c, "idle.down.median");
        assert_eq!((down.text.as_str(), down.uncertain), ("2.500", false));
        // Changes are not affected by the uncertainty.
        assert!(!figure(&c, "upload.added_up.median").uncertain);
        // The card is the page's: µs; the CLI's line keeps ASCII us.
        assert!(c.clock.contains("uncertainty ±30.0 µs"), "{}", c.clock);
        assert!(clock_line(&s).contains("uncertainty ±30.0 us"));
        // A result from before kernel timestamps says its are the threads'.
        assert!(
            c.clock.ends_with(
                "receive times from the reading threads (a busy host's wake-ups are in the delays)"
            ),
            "{}",
            c.clock
        );
        let mut k: LulSummary = serde_json::from_value(summary("estimated", 30.0)).unwrap();
        k.timestamps = Timestamps::Kernel;
        assert!(card(&k).clock.ends_with("; receive times from the kernel"));
        let synced = card(&serde_json::from_value(summary("synced", 0.0)).unwrap());
        let up = figure(&synced, "idle.up.median");
        assert_eq!(
            (up.text.as_str(), up.uncertain, up.basis),
            ("0.020", false, Basis::Synced)
        );
        assert_eq!(figure(&synced, "idle.rtt.median").basis, Basis::Rtt);
    }

    #[test]
    fn missing_phases_are_left_out_and_other_summaries_are_refused() {
        let mut v = summary("estimated", 30.0);
        v["phases"].as_array_mut().unwrap().truncate(2);
        let c = card(&serde_json::from_value(v).unwrap());
        let keys: Vec<&str> = c
            .sections
            .iter()
            .flat_map(|s| s.figures.iter().map(|f| f.key.as_str()))
            .collect();
        assert!(keys.contains(&"download.down"), "{keys:?}");
        assert!(
            !keys
                .iter()
                .any(|k| k.starts_with("both.") || k.starts_with("upload.")),
            "{keys:?}"
        );
        let titles: Vec<&str> = c.sections.iter().map(|s| s.title.as_str()).collect();
        assert!(!titles.contains(&"Added round trip, both"), "{titles:?}");
        assert!(titles.contains(&"Probe loss"), "{titles:?}");
        assert!(card_json(r#"{"bytes": 1}"#)
            .unwrap_err()
            .starts_with("not a latency_under_load summary"));
    }
}
