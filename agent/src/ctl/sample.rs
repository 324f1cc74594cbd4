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

/// How many ordered pairs of `names` shard `s` owns. Every pair's hash, so
/// the last few answers are kept for the next runs' same agents and shard
/// (a monitor's list seldom changes): at 1000 agents a million hashes,
/// about 0.14 s of CPU a run otherwise (70 s over the 500 schedules of
/// the 1000-agent unit test below).
fn owned_pairs(names: &[String], s: Shard) -> usize {
    use std::hash::{Hash, Hasher};
    static KEPT: std::sync::Mutex<Vec<(u64, usize)>> = std::sync::Mutex::new(Vec::new());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (names, s.index, s.count).hash(&mut h);
    let key = h.finish();
    let kept = |k: &Vec<(u64, usize)>| k.iter().find(|(x, _)| *x == key).map(|&(_, o)| o);
    if let Some(owned) = kept(&KEPT.lock().unwrap_or_else(|e| e.into_inner())) {
        return owned;
    }
    let owned = (0..names.len())
        .flat_map(|c| {
            (0..names.len())
                .filter(move |&v| v != c)
                .map(move |v| (c, v))
        })
        .filter(|&(c, v)| matrix::shard_of(&names[c], &names[v], s.count) == s.index)
        .count();
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= 4 {
        kept.remove(0);
    }
    kept.push((key, owned));
    owned
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
    let owned = match shard {
        None => n * others,
        Some(s) => owned_pairs(names, s),
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

    /// A whole cycle at fleet size, as the monitors plan it (the bench runs
    /// a few of its runs between 1000 real agents; a cycle there is 250
    /// runs, hours on two cores): 1000 agents on 127.1.x.y, --peers 4, two
    /// shards. Each run, each shard's pairs are disjoint from the other's and
    /// its rounds have no agent twice; over the 250 runs of the rotation the
    /// two shards measure every one of the 999 000 ordered pairs, and none
    /// more than twice (999 is not a multiple of 4: the last run repeats
    /// some). From any run on.
    #[test]
    fn two_shards_cover_a_thousand_agents_within_one_rotation() {
        let n = 1000;
        let names: Vec<String> = (0..n)
            .map(|i| format!("127.1.{}.{}:7800", i / 250, 1 + i % 250))
            .collect();
        for start in [0u64, 7] {
            let mut times = vec![0u8; n * n];
            let (_, s) = schedule(&names, Some(4), start, None, false);
            assert_eq!((s.peers, s.rotation), (4, 250));
            for run in start..start + s.rotation {
                let mut this_run = std::collections::HashSet::new();
                for index in 0..2 {
                    let (mut sch, sampled) =
                        schedule(&names, Some(4), run, Some(Shard { index, count: 2 }), false);
                    assert_eq!(sampled.rotation, 250);
                    while let matrix::Next::Round(r) = sch.next(0.0) {
                        let mut busy = std::collections::HashSet::new();
                        for p in r {
                            assert!(busy.insert(p.client) && busy.insert(p.server));
                            assert!(this_run.insert(p), "{p:?} in both shards in run {run}");
                            times[p.client * n + p.server] += 1;
                        }
                    }
                }
                assert_eq!(this_run.len(), n * 4, "run {run}");
            }
            for c in 0..n {
                for v in 0..n {
                    let t = times[c * n + v];
                    assert!(
                        if c == v { t == 0 } else { (1..=2).contains(&t) },
                        "{} -> {}: {t} times from run {start}",
                        names[c],
                        names[v]
                    );
                }
            }
        }
    }
}
