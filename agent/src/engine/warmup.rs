//! What `omit_s` (iperf3's `-O`) does to a stream test's sides, in one
//! place for `tcp_stream` and `unix_stream` (`rate`, iperf3's `-b`, is
//! [`super::pace`]'s).
//!
//! Warm-up: the first seconds of a time-bounded test (slow start, buffers
//! filling) are left out of the figures but not out of the raw samples.
//! Interval samples start at the side's start and are `interval_ms` long,
//! so the warm-up is taken as whole intervals: `omit_s` rounded up to one.

use super::bulk::Outcome;
use meshperf_protocol::summary::StreamSummary;
use std::time::Duration;

/// What the warm-up took out of a side's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Omitted {
    /// Its length: whole intervals.
    pub seconds: f64,
    /// Intervals of every stream's samples it covers.
    pub intervals: u64,
    /// Bytes it moved, all streams.
    pub bytes: u64,
}

/// Takes the warm-up out of `outs`' figures: each stream's bytes of its
/// first intervals, and that time from its offsets, so its rate is that of
/// the rest. Read and write calls go in proportion to the bytes (the calls
/// are not counted per interval). `intervals` (the raw samples) stay whole.
pub fn omit(outs: &mut [Outcome], omit_s: f64, interval: Duration) -> Omitted {
    let n = (omit_s / interval.as_secs_f64() - 1e-9).ceil().max(0.0) as usize;
    let cut = interval * n as u32;
    let mut bytes = 0;
    for o in outs.iter_mut() {
        let early: u64 = o.intervals.iter().take(n).sum();
        if o.bytes > 0 {
            let kept = (o.bytes - early) as f64 / o.bytes as f64;
            o.ops = (o.ops as f64 * kept).round() as u64;
        }
        o.bytes -= early;
        bytes += early;
        o.first = o.first.saturating_sub(cut);
        o.last = o.last.saturating_sub(cut);
    }
    Omitted {
        seconds: cut.as_secs_f64(),
        intervals: n as u64,
        bytes,
    }
}

/// Notes the warm-up in a side's summary.
pub fn note(s: &mut StreamSummary, o: Option<Omitted>) {
    if let Some(o) = o {
        s.omitted_s = Some(o.seconds);
        s.omitted_intervals = Some(o.intervals);
        s.omitted_bytes = Some(o.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_is_whole_intervals_out_of_the_figures_only() {
        let iv = Duration::from_millis(100);
        let mut outs = vec![Outcome {
            bytes: 1000,
            ops: 10,
            first: Duration::from_millis(5),
            last: Duration::from_millis(995),
            intervals: vec![100; 10],
            ..Outcome::default()
        }];
        // 0.25 s rounds up to 3 intervals.
        let o = omit(&mut outs, 0.25, iv);
        assert_eq!((o.intervals, o.bytes), (3, 300));
        assert!((o.seconds - 0.3).abs() < 1e-12);
        let s = &outs[0];
        assert_eq!((s.bytes, s.ops), (700, 7));
        assert_eq!(s.last, Duration::from_millis(695));
        assert_eq!(s.intervals.len(), 10, "the raw samples stay");
        // An exact multiple is not rounded up.
        let mut outs = vec![Outcome {
            bytes: 1000,
            intervals: vec![100; 10],
            ..Outcome::default()
        }];
        assert_eq!(
            omit(&mut outs, 1.0, Duration::from_millis(100)).intervals,
            10
        );
    }
}
