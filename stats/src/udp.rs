//! UDP stream receive analysis from what the receiver recorded: one sequence
//! number and one arrival time (ns) per packet, in receive order, and
//! optionally the send time (ns) stamped in each packet.
//!
//! Definitions:
//! - `packets` is the array length; `received` counts distinct sequence
//!   numbers below `expected`; `duplicates` counts repeats of an already
//!   received number; `out_of_range` counts numbers >= `expected` (only
//!   possible when `sent` is given).
//! - `expected` is `sent` when the sender's count is known, else max_seq + 1;
//!   `lost = expected - received`.
//! - `out_of_order` counts first copies whose number is lower than the highest
//!   number received before them (udpmon `num_badorder`).
//! - `recv_seconds` is last arrival minus first arrival.
//! - `interarrival_us` summarises the gaps between consecutive arrivals (all
//!   packets, receive order), in microseconds; `None` with fewer than 2 packets.
//! - `jitter_us` is the RFC 3550 (section 6.4.1) estimator over consecutive
//!   arrivals: D = (R_i - R_{i-1}) - (S_i - S_{i-1}), J += (|D| - J) / 16;
//!   `None` without send times or with fewer than 2 packets.

use std::collections::HashSet;

use crate::error::StatsError;
use crate::stats::Summary;

/// Result of [`analyze`].
#[derive(Debug, Clone, PartialEq)]
pub struct UdpAnalysis {
    /// Packets recorded (array length).
    pub packets: u64,
    /// Sender count if known, else highest sequence number + 1.
    pub expected: u64,
    /// Distinct sequence numbers received below `expected`.
    pub received: u64,
    /// expected - received.
    pub lost: u64,
    /// First copies arriving after a higher sequence number.
    pub out_of_order: u64,
    /// Extra copies of an already received sequence number.
    pub duplicates: u64,
    /// Sequence numbers >= `sent` (not part of this flow's range).
    pub out_of_range: u64,
    /// Seconds from first to last arrival.
    pub recv_seconds: f64,
    /// Inter-arrival gaps in microseconds.
    pub interarrival_us: Option<Summary>,
    /// RFC 3550 interarrival jitter in microseconds.
    pub jitter_us: Option<f64>,
}

/// Set of seen sequence numbers: a bitmap when the range is compact, else a
/// hash set (a stray huge number must not allocate gigabytes).
enum Seen {
    Bits { base: u64, words: Vec<u64> },
    Hash(HashSet<u64>),
}

impl Seen {
    fn new(seq: &[u64]) -> Seen {
        let (lo, hi) = seq
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &s| (lo.min(s), hi.max(s)));
        let span = hi.saturating_sub(lo).saturating_add(1);
        if span <= 64 * seq.len() as u64 + (1 << 16) {
            Seen::Bits {
                base: lo,
                words: vec![0; (span as usize).div_ceil(64)],
            }
        } else {
            Seen::Hash(HashSet::with_capacity(seq.len()))
        }
    }

    /// Mark `s`; true if it was already marked.
    fn insert(&mut self, s: u64) -> bool {
        match self {
            Seen::Bits { base, words } => {
                let i = (s - *base) as usize;
                let (w, b) = (i / 64, 1u64 << (i % 64));
                let was = words[w] & b != 0;
                words[w] |= b;
                was
            }
            Seen::Hash(h) => !h.insert(s),
        }
    }
}

/// Analyse one receiver's record. `seq` and `arrival_ns` (and `send_ns` when
/// given) are parallel arrays in receive order; arrival times must not go
/// backwards. `sent` is the sender's packet count when known.
pub fn analyze(
    seq: &[u64],
    arrival_ns: &[u64],
    sent: Option<u64>,
    send_ns: Option<&[u64]>,
) -> Result<UdpAnalysis, StatsError> {
    if seq.len() != arrival_ns.len() {
        return Err(StatsError::LengthMismatch {
            what: "sequence numbers and arrival times",
            left: seq.len(),
            right: arrival_ns.len(),
        });
    }
    if let Some(s) = send_ns {
        if s.len() != seq.len() {
            return Err(StatsError::LengthMismatch {
                what: "sequence numbers and send times",
                left: seq.len(),
                right: s.len(),
            });
        }
    }
    if let Some(index) = arrival_ns.windows(2).position(|w| w[1] < w[0]) {
        return Err(StatsError::NotMonotonic { index: index + 1 });
    }
    let expected = match sent {
        Some(s) => s,
        None => seq.iter().max().map_or(0, |m| m.saturating_add(1)),
    };
    let mut seen = Seen::new(seq);
    let (mut received, mut duplicates, mut out_of_order, mut out_of_range) = (0u64, 0, 0, 0);
    let mut highest: Option<u64> = None;
    for &s in seq {
        if s >= expected {
            out_of_range += 1;
            continue;
        }
        if seen.insert(s) {
            duplicates += 1;
            continue;
        }
        received += 1;
        match highest {
            Some(h) if s < h => out_of_order += 1,
            _ => highest = Some(s),
        }
    }
    let recv_seconds = match (arrival_ns.first(), arrival_ns.last()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => 0.0,
    };
    let interarrival_us = if arrival_ns.len() >= 2 {
        let gaps: Vec<f64> = arrival_ns
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e3)
            .collect();
        Some(Summary::new(&gaps)?)
    } else {
        None
    };
    let jitter_us = match send_ns {
        Some(s) if s.len() >= 2 => {
            let mut j = 0.0f64;
            for i in 1..s.len() {
                let r = arrival_ns[i] as i128 - arrival_ns[i - 1] as i128;
                let t = s[i] as i128 - s[i - 1] as i128;
                let d = ((r - t) as f64).abs();
                j += (d - j) / 16.0;
            }
            Some(j / 1e3)
        }
        _ => None,
    };
    Ok(UdpAnalysis {
        packets: seq.len() as u64,
        expected,
        received,
        lost: expected - received,
        out_of_order,
        duplicates,
        out_of_range,
        recv_seconds,
        interarrival_us,
        jitter_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_reorder_duplicates() {
        // 0..6 sent; 2 lost; 4 arrives before 3; 1 duplicated.
        let seq = [0, 1, 1, 4, 3, 5];
        let arr = [100, 200, 250, 400, 450, 600];
        let a = analyze(&seq, &arr, Some(6), None).unwrap();
        assert_eq!(
            (
                a.packets,
                a.expected,
                a.received,
                a.lost,
                a.out_of_order,
                a.duplicates
            ),
            (6, 6, 5, 1, 1, 1)
        );
        assert_eq!(a.recv_seconds, 500e-9);
        let ia = a.interarrival_us.unwrap();
        assert_eq!((ia.n, ia.min, ia.max), (5, 0.05, 0.15));
        assert_eq!(a.jitter_us, None);
    }

    #[test]
    fn unknown_sent_uses_max_seq_and_sent_bounds_range() {
        let a = analyze(&[0, 2, 9], &[1, 2, 3], None, None).unwrap();
        assert_eq!((a.expected, a.received, a.lost), (10, 3, 7));
        let b = analyze(&[0, 2, 9], &[1, 2, 3], Some(5), None).unwrap();
        assert_eq!(
            (b.expected, b.received, b.lost, b.out_of_range),
            (5, 2, 3, 1)
        );
    }

    #[test]
    fn sparse_huge_sequence_numbers_use_hash_set() {
        let a = analyze(
            &[u64::MAX - 1, 0, u64::MAX - 1],
            &[1, 2, 3],
            Some(u64::MAX),
            None,
        )
        .unwrap();
        assert_eq!((a.received, a.duplicates, a.out_of_order), (2, 1, 1));
    }

    #[test]
    fn rfc3550_jitter_constant_delay_is_zero_and_steps_accumulate() {
        let send = [0, 1000, 2000, 3000];
        let a = analyze(&[0, 1, 2, 3], &[500, 1500, 2500, 3500], None, Some(&send)).unwrap();
        assert_eq!(a.jitter_us, Some(0.0));
        // one 1600 ns transit change: J = 1600/16 = 100 ns, then D = 0 decays it by 15/16
        let b = analyze(&[0, 1, 2], &[500, 3100, 4100], None, Some(&send[..3])).unwrap();
        let expect = (1600.0 / 16.0) * (15.0 / 16.0);
        assert!(
            (b.jitter_us.unwrap() * 1e3 - expect).abs() < 1e-9,
            "{:?}",
            b.jitter_us
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(matches!(
            analyze(&[0, 1], &[1], None, None),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            analyze(&[0, 1], &[5, 4], None, None),
            Err(StatsError::NotMonotonic { index: 1 })
        ));
        assert!(analyze(&[0], &[1], None, Some(&[])).is_err());
        let e = analyze(&[], &[], None, None).unwrap();
        assert_eq!((e.expected, e.lost, e.interarrival_us), (0, 0, None));
    }
}
