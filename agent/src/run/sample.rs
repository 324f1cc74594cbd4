//! A fleet's matrix: which ordered pairs a run measures when the whole mesh
//! is too many (`--peers K`: each agent measures K peers a round, rotating,
//! [`matrix::sampled`]) or when several monitors split the pairs between
//! them (`--shard I/N`, [`matrix::shard_of`]). Shared by `meshperf run
//! --matrix` and `meshperf monitor`.

use meshperf_protocol::matrix::{self, Pair, Schedule};

/// `--peers K`: 1 or more.
pub fn peers_arg(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("each agent must measure at least one peer a round: give 1 or more, or leave --peers out for the full mesh".into()),
        Ok(k) => Ok(k),
        Err(_) => Err("not a count of peers: give a whole number, 1 or more".into()),
    }
}

/// One monitor's share of the pairs: shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// `--shard I/N`: I below N, or `ordinal/N`: I is the number after the
/// host name's last `-` (a StatefulSet's pod `meshperf-monitor-2` is 2).
pub fn shard_arg(s: &str) -> Result<Shard, String> {
    shard_of_host(s, &crate::sysinfo::hostname())
}

/// [`shard_arg`] with the host name given.
pub fn shard_of_host(s: &str, host: &str) -> Result<Shard, String> {
    let Some((i, n)) = s.split_once('/') else {
        return Err(
            "give I/N, this monitor's shard I of N (0 to N-1), e.g. 0/2, or ordinal/N for a StatefulSet's pod"
                .into(),
        );
    };
    let count: u32 = match n.parse() {
        Ok(n) if n >= 1 => n,
        _ => {
            return Err(format!(
                "the shard count {n:?} must be a whole number, 1 or more"
            ))
        }
    };
    let index: u32 = if i == "ordinal" {
        let tail = host.rsplit('-').next().unwrap_or("");
        match tail.parse() {
            Ok(i) if host.contains('-') => i,
            _ => {
                return Err(format!(
                    "the host name {host:?} does not end in -NUMBER (a StatefulSet pod's ordinal): give the index, e.g. 0/{count}"
                ))
            }
        }
    } else {
        i.parse().map_err(|_| {
            format!(
                "the shard index {i:?} must be a whole number, 0 to {}",
                count - 1
            )
        })?
    };
    if index >= count {
        return Err(format!(
            "shard {index} of {count} does not exist: the index runs from 0 to {} (every monitor of the set is given the same N)",
            count - 1
        ));
    }
    Ok(Shard { index, count })
}

/// What a run of a fleet's matrix measures, besides its schedule.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sampled {
    /// Peers each agent measures a round (n-1 for the full mesh).
    pub peers: usize,
    /// Rounds of the rotation that measure every pair (1: the full mesh).
    pub rotation: u64,
    /// Pairs this shard owns among the agents (all without --shard).
    pub owned: usize,
}

/// The schedule of one run over agents named `names` (`HOST:PORT`, in the
/// run's order; the rotation goes by their sorted order, so that the same
/// agents listed in another order are the same ring): round `round` of the
/// rotation with `peers`, every ordered pair without, each kept only if
/// `shard` owns it. Without either, [`Schedule::new`]'s circle rounds.
pub fn schedule(
    names: &[String],
    peers: Option<usize>,
    round: u64,
    shard: Option<Shard>,
    serial: bool,
) -> (Schedule, Sampled) {
    let n = names.len();
    let full = peers.map_or(true, |k| k + 1 >= n);
    let others = n.saturating_sub(1);
    let owns = |p: &Pair| {
        shard.map_or(true, |s| {
            matrix::shard_of(&names[p.client], &names[p.server], s.count) == s.index
        })
    };
    let owned = if shard.is_none() {
        n * others
    } else {
        (0..n)
            .flat_map(|c| {
                (0..n).filter(move |&s| s != c).map(move |s| Pair {
                    server: s,
                    client: c,
                })
            })
            .filter(|p| owns(p))
            .count()
    };
    if full {
        let schedule = if shard.is_none() {
            Schedule::new(n, serial, false)
        } else {
            let planned = if serial {
                matrix::serial(n)
            } else {
                matrix::rounds(n)
            };
            let planned = planned
                .into_iter()
                .map(|r| r.into_iter().filter(|p| owns(p)).collect())
                .collect();
            Schedule::of_rounds(planned, serial)
        };
        return (
            schedule,
            Sampled {
                peers: others,
                rotation: 1,
                owned,
            },
        );
    }
    let k = peers.expect("sampled");
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let pairs: Vec<Pair> = matrix::sampled(n, k, round)
        .into_iter()
        .map(|p| Pair {
            server: order[p.server],
            client: order[p.client],
        })
        .filter(|p| owns(p))
        .collect();
    (
        Schedule::of_rounds(matrix::pack(&pairs, serial), serial),
        Sampled {
            peers: k,
            rotation: matrix::rotation_rounds(n, k),
            owned,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_flags_and_their_errors() {
        assert_eq!(shard_of_host("1/3", "x"), Ok(Shard { index: 1, count: 3 }));
        assert_eq!(
            shard_of_host("ordinal/3", "meshperf-monitor-2"),
            Ok(Shard { index: 2, count: 3 })
        );
        let e = shard_of_host("3/2", "x").unwrap_err();
        assert!(
            e.contains("shard 3 of 2 does not exist") && e.contains("0 to 1"),
            "{e}"
        );
        let e = shard_of_host("ordinal/2", "meshperf-monitor-2").unwrap_err();
        assert!(e.contains("shard 2 of 2 does not exist"), "{e}");
        assert!(shard_of_host("ordinal/2", "monitor")
            .unwrap_err()
            .contains("-NUMBER"));
        assert!(shard_of_host("0/0", "x").unwrap_err().contains("1 or more"));
        assert!(shard_of_host("2", "x").unwrap_err().contains("I/N"));
        assert!(peers_arg("0").unwrap_err().contains("at least one peer"));
        assert_eq!(peers_arg("4"), Ok(4));
    }

    /// Two shards of the full mesh and of a sampled round: together every
    /// pair of the round, none twice; the rotation by sorted names.
    #[test]
    fn shards_of_a_schedule_are_disjoint_and_whole() {
        let names: Vec<String> = (0..9).map(|i| format!("127.1.0.{}:7800", 9 - i)).collect();
        let pairs = |mut s: Schedule| {
            let mut v = Vec::new();
            while let matrix::Next::Round(r) = s.next(0.0) {
                v.extend(r);
            }
            v
        };
        for peers in [None, Some(3)] {
            let all = pairs(schedule(&names, peers, 5, None, false).0);
            let (a, sa) = schedule(&names, peers, 5, Some(Shard { index: 0, count: 2 }), false);
            let (b, sb) = schedule(&names, peers, 5, Some(Shard { index: 1, count: 2 }), false);
            assert_eq!(sa.owned + sb.owned, 72);
            let (a, b) = (pairs(a), pairs(b));
            let mut union: Vec<Pair> = a.iter().chain(&b).copied().collect();
            union.sort_by_key(|p| (p.client, p.server));
            let mut want = all.clone();
            want.sort_by_key(|p| (p.client, p.server));
            assert_eq!(union, want, "{peers:?}");
            assert!(!a.is_empty() && !b.is_empty());
        }
        assert_eq!(pairs(schedule(&names, None, 0, None, false).0).len(), 72);
        let (s0, s) = schedule(&names, Some(3), 0, None, false);
        assert_eq!((s.peers, s.rotation), (3, 3));
        // Round 0 by sorted names: 127.1.0.1 (position 8) drives to .2 .3 .4.
        let r0 = pairs(s0);
        let mut of_first: Vec<&str> = r0
            .iter()
            .filter(|p| p.client == 8)
            .map(|p| names[p.server].as_str())
            .collect();
        of_first.sort();
        assert_eq!(
            of_first,
            ["127.1.0.2:7800", "127.1.0.3:7800", "127.1.0.4:7800"]
        );
        // K over n-1: the full mesh.
        let (all, s) = schedule(&names, Some(20), 0, None, false);
        assert_eq!((s.peers, s.rotation, all.pairs()), (8, 1, 72));
    }
}
