//! Latency under load against time, probe by probe: the latency lanes of
//! the page's time-aligned figure (round trip, one-way up and down), the
//! probes that never came back (loss marks) and where each phase ran.
//!
//! The one-way delays come from the same clock placement as the step's
//! statistics ([`crate::lul::clock`], then [`crate::clock::one_way`]), so a
//! lane and the summary's medians never disagree.

use crate::clock::one_way;
use crate::error::StatsError;
use crate::lul::{self, Probes, CODES};

/// Probe by probe, in sequence order; times in s on the requester's probe
/// clock (0 = the test's start), delays in ms.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lanes {
    pub t_s: Vec<f64>,
    pub rtt_ms: Vec<f64>,
    pub up_ms: Vec<f64>,
    pub down_ms: Vec<f64>,
    /// Send times of the probes that were never answered (interpolated
    /// between the answered neighbours; after the last one, one probe
    /// interval apart).
    pub lost_t_s: Vec<f64>,
    /// Per phase code (idle, download, upload, both): the first answered
    /// probe's send time and the last one's plus one probe interval (s);
    /// NaN for a phase without answered probes.
    pub start_s: [f64; 4],
    pub end_s: [f64; 4],
}

/// The lanes of the answered probes `p` (sequence numbers `seq`, parallel
/// to `p`, increasing), of `sent` probes sent every `probe_ms`.
pub fn lanes(
    p: &Probes,
    seq: &[f64],
    synced: bool,
    sent: u64,
    probe_ms: f64,
) -> Result<Lanes, StatsError> {
    let clock = lul::clock(p, synced)?;
    if seq.len() != p.t1.len() {
        return Err(StatsError::LengthMismatch {
            what: "probe sequence numbers",
            left: p.t1.len(),
            right: seq.len(),
        });
    }
    let (up, down) = one_way(p.t1, p.t2, p.t3, p.t4, &clock.fit)?;
    let n = p.t1.len();
    let s = |ns: f64| ns / 1e9;
    let mut out = Lanes {
        t_s: p.t1.iter().map(|&t| s(t)).collect(),
        rtt_ms: (0..n).map(|i| lul::rtt(p, i) / 1e6).collect(),
        up_ms: up.iter().map(|v| v / 1e6).collect(),
        down_ms: down.iter().map(|v| v / 1e6).collect(),
        lost_t_s: Vec::new(),
        start_s: [f64::NAN; 4],
        end_s: [f64::NAN; 4],
    };
    // Unanswered sequence numbers before, between and after the answered ones.
    let step = probe_ms / 1e3;
    let mut prev: Option<(f64, f64)> = None;
    for (&q, &t) in seq.iter().zip(&out.t_s).take(n) {
        match prev {
            Some((pq, pt)) => {
                for k in (pq as u64 + 1)..(q as u64) {
                    out.lost_t_s
                        .push(pt + (t - pt) * (k as f64 - pq) / (q - pq));
                }
            }
            None => {
                for k in 0..(q as u64) {
                    out.lost_t_s.push(t - step * (q - k as f64));
                }
            }
        }
        prev = Some((q, t));
    }
    if let Some((pq, pt)) = prev {
        for k in (pq as u64 + 1)..sent {
            out.lost_t_s.push(pt + step * (k as f64 - pq));
        }
    }
    for i in 0..n {
        let c = p.phase[i] as usize;
        if c >= CODES - 1 {
            continue;
        }
        let t = out.t_s[i];
        if out.start_s[c].is_nan() || t < out.start_s[c] {
            out.start_s[c] = t;
        }
        if out.end_s[c].is_nan() || t + step > out.end_s[c] {
            out.end_s[c] = t + step;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_follow_the_clock_fit_and_mark_the_missing_probes() {
        // Probes every 5 ms; 10 idle then 10 upload with 2 ms more on the
        // way up; the responder's clock 3 ms ahead; probes 3, 4 and 19..21
        // never answered (sent = 22).
        let (mut phase, mut seq) = (Vec::new(), Vec::new());
        let mut t: [Vec<f64>; 4] = Default::default();
        for k in 0..20u32 {
            if k == 3 || k == 4 || k == 19 {
                continue;
            }
            let a = 1e9 + k as f64 * 5e6;
            let q = if k >= 10 { 2e6 } else { 0.0 };
            phase.push(if k >= 10 { 2 } else { 0 });
            seq.push(k as f64);
            t[0].push(a);
            t[1].push(a + 50e3 + q + 3e6);
            t[2].push(a + 60e3 + q + 3e6);
            t[3].push(a + 110e3 + q);
        }
        let p = Probes::columns(&phase, &t);
        let l = lanes(&p, &seq, false, 22, 5.0).unwrap();
        assert_eq!(l.t_s[0], 1.0);
        assert!((l.rtt_ms[0] - 0.1).abs() < 1e-9);
        // Idle: 50 us each way once the offset is fitted out; upload: +2 ms up.
        assert!((l.up_ms[0] - 0.05).abs() < 1e-6, "{:?}", l.up_ms);
        assert!((l.up_ms[10] - 2.05).abs() < 1e-6, "{:?}", l.up_ms);
        assert!((l.down_ms[10] - 0.05).abs() < 1e-6, "{:?}", l.down_ms);
        let lost: Vec<f64> = l.lost_t_s.iter().map(|v| (v * 1e3).round()).collect();
        assert_eq!(lost, [1015.0, 1020.0, 1095.0, 1100.0, 1105.0]);
        assert!(l.start_s[0] == 1.0 && (l.end_s[0] - 1.05).abs() < 1e-12);
        assert!((l.start_s[2] - 1.05).abs() < 1e-12 && (l.end_s[2] - 1.095).abs() < 1e-12);
        assert!(l.start_s[1].is_nan());
        // Synced clocks take the 3 ms offset as a real delay.
        let s = lanes(&p, &seq, true, 22, 5.0).unwrap();
        assert!((s.up_ms[0] - 3.05).abs() < 1e-6, "{:?}", s.up_ms);
        assert!(lanes(&p, &seq[1..], false, 22, 5.0).is_err());
    }

    /// The lanes are the analysis' one-way delays probe by probe: their
    /// median in each phase is the phase's median in `lul::analyze` (us
    /// there, ms here), with estimated and with synchronised clocks (the
    /// page draws the lanes; the agents' summaries carry the analysis).
    #[test]
    fn lanes_medians_are_the_analysis_medians() {
        // 600 probes every 5 ms: idle, then upload with a 10 ms queue up,
        // then download with 4 ms down; jitter of 0..4 us; the responder's
        // clock 5.5 ms ahead.
        let (mut phase, mut seq) = (Vec::new(), Vec::new());
        let mut t: [Vec<f64>; 4] = Default::default();
        for k in 0..600u32 {
            let a = 1e9 + k as f64 * 5e6;
            let jitter = ((k * 7919) % 5) as f64 * 1e3;
            let code = [0u8, 2, 1][k as usize / 200];
            let (up, down) = match code {
                2 => (10e6, 0.0),
                1 => (0.0, 4e6),
                _ => (0.0, 0.0),
            };
            let arrive = a + 20e3 + jitter + up;
            phase.push(code);
            seq.push(k as f64);
            t[0].push(a);
            t[1].push(arrive + 5.5e6);
            t[2].push(arrive + 3e3 + 5.5e6);
            t[3].push(arrive + 3e3 + 20e3 + (4e3 - jitter) + down);
        }
        let p = Probes::columns(&phase, &t);
        let median = |v: Vec<f64>| crate::stats::Summary::new(&v).unwrap().median;
        for synced in [false, true] {
            let l = lanes(&p, &seq, synced, 600, 5.0).unwrap();
            let a = lul::analyze(&p, synced).unwrap();
            for code in [0u8, 1, 2] {
                let us = |v: &[f64]| of_phase(v, &phase, code).iter().map(|x| x * 1e3).collect();
                let ph = &a.phases[code as usize];
                let (up, down) = (ph.up.as_ref().unwrap(), ph.down.as_ref().unwrap());
                assert!(
                    (median(us(&l.up_ms)) - up.median).abs() < 1e-6,
                    "{synced} {code}"
                );
                assert!(
                    (median(us(&l.down_ms)) - down.median).abs() < 1e-6,
                    "{synced} {code}"
                );
            }
            // And what the queues added, from the lanes alone.
            let added = |v: &[f64], code: u8| {
                median(of_phase(v, &phase, code)) - median(of_phase(v, &phase, 0))
            };
            assert!((added(&l.up_ms, 2) - 10.0).abs() < 0.01, "{synced}");
            assert!(added(&l.down_ms, 2).abs() < 0.01, "{synced}");
            assert!((added(&l.down_ms, 1) - 4.0).abs() < 0.01, "{synced}");
        }
    }

    /// `v`'s values where `phase` is `code`.
    fn of_phase(v: &[f64], phase: &[u8], code: u8) -> Vec<f64> {
        v.iter()
            .zip(phase)
            .filter(|(_, &c)| c == code)
            .map(|(&x, _)| x)
            .collect()
    }
}
