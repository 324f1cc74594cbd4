//! Latency under load from raw probes: per phase, the round trip and the
//! one-way delays up and down with the usual statistics, the latency the
//! load added over the idle phase, and per direction the probes received,
//! duplicated and reordered.
//!
//! Every probe carries four timestamps (ns): `t1` the requester sent it and
//! `t4` the answer came back (the requester's clock), `t2` the responder
//! received it and `t3` answered (the responder's clock, already moved to
//! the requester's origin by the caller). With synchronised clocks the
//! one-way delays are `t2 - t1` and `t4 - t3`; otherwise the offset and
//! drift come from [`crate::clock::clock_fit`] over the fastest probes of
//! the whole test, and absolute one-way delays are known within half the
//! smallest round trip (a constant asymmetry of the path looks exactly
//! like an offset); how they change from phase to phase is not affected.
//!
//! This module is the one caller of [`crate::clock`].

use crate::clock::{clock_fit, one_way, ClockFit};
use crate::error::StatsError;
use crate::stats::{quantile, Summary};
use std::collections::HashSet;

/// Phase codes 0..=3 are the test's phases; 4 is "between phases".
pub const PHASES: usize = 4;
/// Slots of a per-phase-code table: the four phases and the gaps.
pub const CODES: usize = 5;

/// What one direction of the probe flow delivered, in one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Distinct probes (sequence numbers) that arrived.
    pub received: u64,
    /// Further copies of a probe that had already arrived.
    pub duplicates: u64,
    /// First copies that arrived after a probe with a higher sequence number.
    pub reordered: u64,
}

/// Counts arrivals by phase code: `seq` and `phase` are parallel, in
/// arrival order. Codes past [`CODES`] are not counted.
pub fn tally(seq: &[u64], phase: &[u8]) -> Result<[Tally; CODES], StatsError> {
    if seq.len() != phase.len() {
        return Err(StatsError::LengthMismatch {
            what: "probe sequence numbers and phases",
            left: seq.len(),
            right: phase.len(),
        });
    }
    let mut out = [Tally::default(); CODES];
    let mut seen = HashSet::with_capacity(seq.len());
    let mut highest: Option<u64> = None;
    for (&s, &p) in seq.iter().zip(phase) {
        let Some(t) = out.get_mut(p as usize) else {
            continue;
        };
        if !seen.insert(s) {
            t.duplicates += 1;
            continue;
        }
        t.received += 1;
        if highest.is_some_and(|h| s < h) {
            t.reordered += 1;
        }
        highest = Some(highest.map_or(s, |h| h.max(s)));
    }
    Ok(out)
}

/// Loaded minus idle, at the median, p90 and p99 (us).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Added {
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Added {
    fn of(loaded: &Summary, idle: &Summary) -> Added {
        Added {
            median: loaded.median - idle.median,
            p90: loaded.p90 - idle.p90,
            p99: loaded.p99 - idle.p99,
        }
    }
}

/// One phase's delays (us); `None` where the phase has no answered probe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseDelays {
    pub rtt: Option<Summary>,
    pub up: Option<Summary>,
    pub down: Option<Summary>,
    /// Over the idle phase's (`None` for the idle phase itself).
    pub added_rtt: Option<Added>,
    pub added_up: Option<Added>,
    pub added_down: Option<Added>,
}

/// How the one-way delays were placed in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// The clocks were taken to agree (`fit` is then offset 0, drift 0).
    pub synced: bool,
    /// Offset (ns, responder minus requester at the first probe), drift,
    /// smallest round trip and the fit's spread.
    pub fit: ClockFit,
    /// How far an absolute one-way delay may be off (us): half the smallest
    /// round trip when estimated, 0 with synchronised clocks.
    pub uncertainty_us: f64,
}

/// The whole test.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub clock: Clock,
    /// Index = phase code (idle, download, upload, both).
    pub phases: Vec<PhaseDelays>,
}

/// The answered probes of a test, parallel arrays (ns; `t2`, `t3` on the
/// requester's origin).
pub struct Probes<'a> {
    pub phase: &'a [u8],
    pub t1: &'a [f64],
    pub t2: &'a [f64],
    pub t3: &'a [f64],
    pub t4: &'a [f64],
}

/// Round trip of probe `i` without the responder's own time.
pub(crate) fn rtt(p: &Probes, i: usize) -> f64 {
    (p.t4[i] - p.t1[i]) - (p.t3[i] - p.t2[i])
}

/// The clock fit over the fastest probes: those whose round trip is within
/// twice the test's 10th percentile, one per second of the test, so the
/// loaded phases' queueing (which may sit in one direction only) stays out
/// of the offset and the quiet stretches (idle, gaps) fix the drift.
fn fit_fastest(p: &Probes) -> Result<ClockFit, StatsError> {
    let rtts: Vec<f64> = (0..p.t1.len()).map(|i| rtt(p, i)).collect();
    let cut = 2.0 * quantile(&rtts, 0.1)?;
    let keep: Vec<usize> = (0..rtts.len()).filter(|&i| rtts[i] <= cut).collect();
    let pick = |t: &[f64]| keep.iter().map(|&i| t[i]).collect::<Vec<f64>>();
    let (a, b, c, d) = (pick(p.t1), pick(p.t2), pick(p.t3), pick(p.t4));
    let span_s = (p.t1.last().unwrap_or(&0.0) - p.t1.first().unwrap_or(&0.0)) / 1e9;
    let fit = clock_fit(&a, &b, &c, &d, (span_s as usize).max(1))?;
    // The offset is at the first kept probe; move it to the first probe.
    let back = fit.drift_ppm * 1e-6 * (a[0] - p.t1[0]);
    Ok(ClockFit {
        offset: fit.offset - back,
        ..fit
    })
}

/// How the responder's times are placed on the requester's clock: taken as
/// they are (`synced`) or through the offset and drift fitted to the
/// fastest probes. Checks that the arrays are parallel and not empty.
pub fn clock(p: &Probes, synced: bool) -> Result<Clock, StatsError> {
    let n = p.t1.len();
    for (what, len) in [
        ("probe t2", p.t2.len()),
        ("probe t3", p.t3.len()),
        ("probe t4", p.t4.len()),
        ("probe phases", p.phase.len()),
    ] {
        if len != n {
            return Err(StatsError::LengthMismatch {
                what,
                left: n,
                right: len,
            });
        }
    }
    if n == 0 {
        return Err(StatsError::Empty {
            what: "answered probes",
        });
    }
    let min_rtt = (0..n).map(|i| rtt(p, i)).fold(f64::INFINITY, f64::min);
    Ok(if synced {
        Clock {
            synced,
            fit: ClockFit {
                offset: 0.0,
                drift_ppm: 0.0,
                min_rtt,
                uncertainty: 0.0,
                residual_sd: 0.0,
                used: 0,
                valid: n,
            },
            uncertainty_us: 0.0,
        }
    } else {
        let fit = fit_fastest(p)?;
        Clock {
            synced,
            fit,
            uncertainty_us: fit.uncertainty / 1e3,
        }
    })
}

/// Analyses the answered probes: per phase delays and what the load added.
pub fn analyze(p: &Probes, synced: bool) -> Result<Analysis, StatsError> {
    let n = p.t1.len();
    let clock = clock(p, synced)?;
    let (up, down) = one_way(p.t1, p.t2, p.t3, p.t4, &clock.fit)?;
    let of_phase = |code: usize, f: &dyn Fn(usize) -> f64| -> Option<Summary> {
        let v: Vec<f64> = (0..n)
            .filter(|&i| p.phase[i] as usize == code)
            .map(|i| f(i) / 1e3)
            .collect();
        Summary::new(&v).ok()
    };
    let mut phases: Vec<PhaseDelays> = (0..PHASES)
        .map(|code| PhaseDelays {
            rtt: of_phase(code, &|i| rtt(p, i)),
            up: of_phase(code, &|i| up[i]),
            down: of_phase(code, &|i| down[i]),
            ..PhaseDelays::default()
        })
        .collect();
    let idle = phases[0].clone();
    let added =
        |l: &Option<Summary>, i: &Option<Summary>| Some(Added::of(l.as_ref()?, i.as_ref()?));
    for ph in phases.iter_mut().skip(1) {
        ph.added_rtt = added(&ph.rtt, &idle.rtt);
        ph.added_up = added(&ph.up, &idle.up);
        ph.added_down = added(&ph.down, &idle.down);
    }
    Ok(Analysis { clock, phases })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes every 5 ms: 2 s idle (phase 0), 2 s with `queue_ns` more on the
    /// way up (phase 2), 2 s quiet again (between phases, 4), clocks `offset` ns and `ppm` apart, 20 us each way
    /// plus deterministic jitter up to 4 us.
    fn probes(offset: f64, ppm: f64, queue_ns: f64) -> (Vec<u8>, [Vec<f64>; 4]) {
        let mut phase = Vec::new();
        let mut t: [Vec<f64>; 4] = Default::default();
        for k in 0..1200 {
            let a = 1e9 + k as f64 * 5e6;
            let loaded = (400..800).contains(&k);
            let jitter = ((k * 7919) % 5) as f64 * 1_000.0;
            let arrive = a + 20_000.0 + jitter + if loaded { queue_ns } else { 0.0 };
            let server = |x: f64| x + offset + ppm * 1e-6 * x;
            let back = arrive + 3_000.0 + 20_000.0 + (4_000.0 - jitter);
            phase.push(match k {
                0..400 => 0,
                400..800 => 2,
                _ => 4,
            });
            t[0].push(a);
            t[1].push(server(arrive));
            t[2].push(server(arrive + 3_000.0));
            t[3].push(back);
        }
        (phase, t)
    }

    fn of<'a>(phase: &'a [u8], t: &'a [Vec<f64>; 4]) -> Probes<'a> {
        Probes {
            phase,
            t1: &t[0],
            t2: &t[1],
            t3: &t[2],
            t4: &t[3],
        }
    }

    #[test]
    fn a_queue_on_the_way_up_shows_up_only_and_in_the_round_trip() {
        let (phase, t) = probes(5.5e6, 30.0, 10e6);
        let a = analyze(&of(&phase, &t), false).unwrap();
        assert!((a.clock.fit.drift_ppm - 30.0).abs() < 1.5, "{:?}", a.clock);
        let up = a.phases[2].added_up.unwrap();
        let down = a.phases[2].added_down.unwrap();
        let rtt = a.phases[2].added_rtt.unwrap();
        // 10 ms up, nothing down, within the jitter (us).
        assert!((up.median - 10_000.0).abs() < 5.0, "{up:?}");
        assert!(down.median.abs() < 5.0, "{down:?}");
        assert!((rtt.median - 10_000.0).abs() < 5.0, "{rtt:?}");
        assert_eq!(a.phases[0].rtt.as_ref().unwrap().n, 400);
        assert!(a.phases[1].rtt.is_none() && a.phases[1].added_rtt.is_none());
        // Absolute one-way: 20 us + jitter each way, within the uncertainty.
        let idle_up = a.phases[0].up.as_ref().unwrap().median;
        assert!(
            (idle_up - 22.0).abs() <= a.clock.uncertainty_us,
            "{idle_up}"
        );
        assert!(a.clock.uncertainty_us >= 20.0);
    }

    #[test]
    fn synced_clocks_are_taken_as_they_are() {
        // 2 ms more up than down: synced clocks show it, no estimate can.
        let (phase, mut t) = probes(0.0, 0.0, 0.0);
        for x in t[1..].iter_mut().flatten() {
            *x += 2e6;
        }
        let a = analyze(&of(&phase, &t), true).unwrap();
        assert_eq!((a.clock.fit.offset, a.clock.uncertainty_us), (0.0, 0.0));
        let up = a.phases[0].up.as_ref().unwrap();
        let down = a.phases[0].down.as_ref().unwrap();
        assert!((up.min - 2_020.0).abs() < 0.01, "{up:?}");
        assert!((down.min - 20.0).abs() < 0.01, "{down:?}");
    }

    #[test]
    fn tally_counts_duplicates_and_reordering_per_phase() {
        let seq = [0, 1, 3, 2, 3, 5, 4, 9];
        let phase = [0, 0, 1, 1, 1, 4, 4, 7];
        let t = tally(&seq, &phase).unwrap();
        assert_eq!(
            t[0],
            Tally {
                received: 2,
                duplicates: 0,
                reordered: 0
            }
        );
        assert_eq!(
            t[1],
            Tally {
                received: 2,
                duplicates: 1,
                reordered: 1
            }
        );
        assert_eq!(
            t[4],
            Tally {
                received: 2,
                duplicates: 0,
                reordered: 1
            }
        );
        assert!(tally(&seq[..2], &phase).is_err());
        assert!(analyze(
            &Probes {
                phase: &[],
                t1: &[],
                t2: &[],
                t3: &[],
                t4: &[]
            },
            false
        )
        .is_err());
    }
}
