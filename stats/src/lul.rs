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
//! drift come from [`crate::clock::clock_fit`] over the least-delayed
//! probes of the whole test, and absolute one-way delays are known within
//! its uncertainty, about half the smallest round trip (a constant
//! asymmetry of the path looks exactly like an offset); how they change
//! from phase to phase is not affected.
//!
//! This module is the one caller of [`crate::clock`].

use crate::clock::{clock_fit, one_way, ClockFit};
use crate::error::StatsError;
use crate::stats::Summary;
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
    /// How far an absolute one-way delay may be off (us): the fit's
    /// uncertainty when estimated (about half the smallest round trip, see
    /// [`crate::clock::clock_fit`]), 0 with synchronised clocks.
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

#[cfg(test)]
impl<'a> Probes<'a> {
    /// Tests' probes: phase codes `phase` and the timestamp columns `t`
    /// (t1 to t4).
    pub(crate) fn columns(phase: &'a [u8], t: &'a [Vec<f64>; 4]) -> Probes<'a> {
        Probes {
            phase,
            t1: &t[0],
            t2: &t[1],
            t3: &t[2],
            t4: &t[3],
        }
    }
}

/// Round trip of probe `i` without the responder's own time.
pub(crate) fn rtt(p: &Probes, i: usize) -> f64 {
    (p.t4[i] - p.t1[i]) - (p.t3[i] - p.t2[i])
}

/// Probes per window of the clock fit: each window gives its least-delayed
/// probe each way, so the loaded phases' queueing (which may sit in one
/// direction only) loosens only their own bands.
const PER_WINDOW: usize = 4;
/// At most this many windows (a long test's fit stays cheap).
const MAX_WINDOWS: usize = 5000;

/// The clock fit over the least-delayed probes of the whole test, with the
/// offset moved to the first probe.
fn fit_fastest(p: &Probes) -> Result<ClockFit, StatsError> {
    let windows = (p.t1.len() / PER_WINDOW).clamp(1, MAX_WINDOWS);
    let fit = clock_fit(p.t1, p.t2, p.t3, p.t4, windows)?;
    // The offset is at the first valid probe; move it to the first probe
    // (the same unless the first ones were damaged).
    let first = (0..p.t1.len())
        .find(|&i| rtt(p, i) >= 0.0 && p.t4[i] >= p.t1[i])
        .unwrap_or(0);
    let back = fit.drift_ppm * 1e-6 * (p.t1[first] - p.t1[0]);
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
                slack: 0.0,
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

    #[test]
    fn a_queue_on_the_way_up_shows_up_only_and_in_the_round_trip() {
        let (phase, t) = probes(5.5e6, 30.0, 10e6);
        let a = analyze(&Probes::columns(&phase, &t), false).unwrap();
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

    /// A deterministic pseudo-random sequence in [0, 1).
    fn uniform(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` probes every 5 ms from 1 s, clocks `offset` ns and `ppm` apart,
    /// one-way delays `up(k)` and `down(k)` ns, 20 us in the responder.
    fn exchange(
        n: usize,
        offset: f64,
        ppm: f64,
        mut up: impl FnMut(usize) -> f64,
        mut down: impl FnMut(usize) -> f64,
    ) -> (Vec<u8>, [Vec<f64>; 4]) {
        let server = |x: f64| x + offset + ppm * 1e-6 * x;
        let mut t: [Vec<f64>; 4] = Default::default();
        for k in 0..n {
            let a = 1e9 + k as f64 * 5e6;
            let arrive = a + up(k);
            let leave = arrive + 20_000.0;
            t[0].push(a);
            t[1].push(server(arrive));
            t[2].push(server(leave));
            t[3].push(leave + down(k));
        }
        (vec![0; n], t)
    }

    /// The largest distance (ns) between the fitted offset and the true
    /// one (`offset` + `ppm` of the requester's time) over the probes, at
    /// the times the one-way delays use.
    fn worst_error(c: &Clock, t: &[Vec<f64>; 4], offset: f64, ppm: f64) -> f64 {
        (0..t[0].len())
            .map(|i| {
                let at = (t[0][i] + t[3][i]) / 2.0;
                let fitted = c.fit.offset_at(at, t[0][0]);
                (fitted - (offset + ppm * 1e-6 * at)).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn the_true_offset_lies_within_the_uncertainty_through_queueing_noise() {
        // 3.2 ms and 45 ppm apart, 40 us each way plus queueing that only
        // adds (exponential, 60 us mean), and 8 s of a 2 ms queue on the
        // way down in the middle: 20 s of probes.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut queue = move || -60_000.0 * (1.0 - uniform(&mut seed)).ln();
        let mut seed2 = 0x2545_f491_4f6c_dd1du64;
        let mut queue2 = move || -60_000.0 * (1.0 - uniform(&mut seed2)).ln();
        let (phase, t) = exchange(
            4000,
            3.2e6,
            45.0,
            |_| 40_000.0 + queue(),
            |k| 40_000.0 + queue2() + if (1200..2800).contains(&k) { 2e6 } else { 0.0 },
        );
        let c = analyze(&Probes::columns(&phase, &t), false).unwrap().clock;
        let worst = worst_error(&c, &t, 3.2e6, 45.0);
        assert!(worst <= c.fit.uncertainty, "{worst} ns: {c:?}");
        // The path is symmetric: the estimate is close, the drift too, and
        // the uncertainty about half the smallest round trip.
        assert!(worst < 5_000.0, "{worst} ns: {c:?}");
        assert!((c.fit.drift_ppm - 45.0).abs() < 0.5, "{c:?}");
        assert!(c.fit.slack == 0.0 && c.fit.min_rtt >= 80_000.0, "{c:?}");
        assert!(
            (c.fit.uncertainty - c.fit.min_rtt / 2.0).abs() < 5_000.0,
            "{c:?}"
        );
    }

    #[test]
    fn a_delay_line_one_way_is_a_shift_within_the_uncertainty() {
        // One clock; the way up (then down) holds every probe 10 ms and
        // wakes late by 0.1 to 0.5 ms (a user-space delay line), 30 us each
        // way besides: to a two-way exchange this is the responder's clock
        // 5 ms ahead (behind). Both the truth (0) and the shift must lie
        // within the uncertainty; as both are possible, the shift with D/2
        // less to spare. 4.3 s, as in tests/netns/lul.sh.
        let d = 10e6;
        for sign in [1.0, -1.0] {
            let mut seed = 0x0123_4567_89ab_cdefu64;
            let mut late = move || d + 100_000.0 + 400_000.0 * uniform(&mut seed);
            let mut held = vec![0.0; 860];
            held.iter_mut().for_each(|h| *h = late());
            let (up, down) = if sign > 0.0 { (1.0, 0.0) } else { (0.0, 1.0) };
            let (phase, t) = exchange(
                860,
                0.0,
                0.0,
                |k| 30_000.0 + up * held[k],
                |k| 30_000.0 + down * held[k],
            );
            let c = analyze(&Probes::columns(&phase, &t), false).unwrap().clock;
            let u = c.fit.uncertainty;
            assert!(worst_error(&c, &t, 0.0, 0.0) <= u, "{c:?}");
            assert!(
                worst_error(&c, &t, sign * d / 2.0, 0.0) <= u - d / 2.0,
                "{c:?}"
            );
            // Meaningful: within 0.1 ms of NTP's bound, half the smallest
            // round trip (the ends of the test sit beside probes the line
            // held late, and a line may tilt there by up to 1000 ppm, 5 us
            // a probe), and the drift (none) within 2 ppm.
            assert!(u - c.fit.min_rtt / 2.0 < 100_000.0, "{c:?}");
            assert!(c.fit.drift_ppm.abs() < 2.0, "{c:?}");
        }
    }

    #[test]
    fn a_late_stretch_does_not_move_the_estimate() {
        // As above, but for the first 1.5 s the line wakes late by 0.4 to
        // 0.8 ms (a busy moment), later by 0.1 to 0.5 ms. The estimate is
        // the least-delayed probes' (held 10.1 ms: +5.05 ms), not pulled up
        // by the slow start, and the truth (0) and the shift (+5 ms) lie
        // within the uncertainty. A line fitted through each second's
        // fastest probe and read at the first probe tilts towards the slow
        // start: +5.2 ms, outside half the smallest round trip.
        let mut seed = 0x0fed_cba9_8765_4321u64;
        let d = 10e6;
        let mut late = move |k: usize| {
            (if k < 300 { 400_000.0 } else { 100_000.0 }) + 400_000.0 * uniform(&mut seed)
        };
        let (phase, t) = exchange(860, 0.0, 0.0, |k| 30_000.0 + d + late(k), |_| 30_000.0);
        let c = analyze(&Probes::columns(&phase, &t), false).unwrap().clock;
        let u = c.fit.uncertainty;
        assert!(worst_error(&c, &t, 0.0, 0.0) <= u, "{c:?}");
        assert!(worst_error(&c, &t, d / 2.0, 0.0) <= u - d / 2.0, "{c:?}");
        assert!((c.fit.offset - 5.05e6).abs() < 5_000.0, "{c:?}");
        assert!(c.fit.drift_ppm.abs() < 2.0, "{c:?}");
        assert!(u - c.fit.min_rtt / 2.0 < 500_000.0, "{c:?}");
    }

    #[test]
    fn the_estimate_rests_on_the_least_delayed_probes() {
        // 1.5 ms and -20 ppm apart, 50 us each way; a third of the probes,
        // the first among them, are held 0.2 to 3 ms more on one way or
        // the other (a late minority). The estimate is the least-delayed
        // probes': the symmetric path's offset within a few us.
        let (mut s1, mut s2) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64);
        let mut extra = move |k: usize, way: u64| {
            let pick = uniform(&mut s1);
            let size = 200_000.0 + 2.8e6 * uniform(&mut s2);
            let held = k == 0 || pick < 1.0 / 3.0;
            if held && (k as u64 + way) % 2 == 0 {
                size
            } else {
                0.0
            }
        };
        let mut ups = Vec::new();
        let mut downs = Vec::new();
        for k in 0..1500 {
            ups.push(50_000.0 + extra(k, 0));
            downs.push(50_000.0 + extra(k, 1));
        }
        let (phase, t) = exchange(1500, 1.5e6, -20.0, |k| ups[k], |k| downs[k]);
        let c = analyze(&Probes::columns(&phase, &t), false).unwrap().clock;
        let worst = worst_error(&c, &t, 1.5e6, -20.0);
        assert!(worst <= c.fit.uncertainty, "{worst} ns: {c:?}");
        assert!(worst < 2_000.0, "{worst} ns: {c:?}");
        assert!((c.fit.uncertainty - 50_000.0).abs() < 2_000.0, "{c:?}");
    }

    #[test]
    fn synced_clocks_are_taken_as_they_are() {
        // 2 ms more up than down: synced clocks show it, no estimate can.
        let (phase, mut t) = probes(0.0, 0.0, 0.0);
        for x in t[1..].iter_mut().flatten() {
            *x += 2e6;
        }
        let a = analyze(&Probes::columns(&phase, &t), true).unwrap();
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
