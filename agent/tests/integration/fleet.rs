//! A fleet's matrix between real agents on loopback addresses (127.1.x.y):
//! the sampled rotation (`--peers K`, in `meshperf monitor` and `meshperf
//! run --matrix`) measures every ordered pair within ceil((N-1)/K) runs,
//! sharded monitors (`--shard I/N`) split the pairs, a pair's series goes
//! once it is older than `--stale`, the per-node aggregates agree with the
//! pairs' own series, and the bad input.

use crate::monitor::{every_pair, of, one, pair_of, scrape_after, url, Key, Monitor, Series};
use crate::run::{run, text};
use crate::util::{http_get, AgentProc};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

type Pairs = BTreeSet<(String, String)>;

/// `n` agents on 127.1.`net`.1 to 127.1.`net`.n.
fn fleet(net: u8, n: usize) -> Vec<AgentProc> {
    (1..=n)
        .map(|i| AgentProc::start(&["--listen", &format!("127.1.{net}.{i}:0")]))
        .collect()
}

fn agent_args(urls: &[String]) -> Vec<&str> {
    urls.iter().flat_map(|u| ["--agent", u.as_str()]).collect()
}

fn pairs_of(s: &Series, name: &str) -> Pairs {
    of(s, name).into_iter().map(|(k, _)| pair_of(k)).collect()
}

/// The page's pairs grouped by the run that last measured them (the
/// run's time, the same for all its pairs).
fn by_run(s: &Series) -> BTreeMap<u64, Pairs> {
    let mut runs: BTreeMap<u64, Pairs> = BTreeMap::new();
    for (k, t) in of(s, "meshperf_pair_last_measured_timestamp_seconds") {
        runs.entry(t.to_bits()).or_default().insert(pair_of(k));
    }
    runs
}

/// Each agent drives `k` and serves `k` of `pairs`.
fn k_each(pairs: &Pairs, agents: &[AgentProc], k: usize) {
    for a in agents.iter().map(AgentProc::addr) {
        let src = pairs.iter().filter(|p| p.0 == a).count();
        let dst = pairs.iter().filter(|p| p.1 == a).count();
        assert_eq!((src, dst), (k, k), "{a} in {pairs:?}");
    }
}

fn value(s: &Series, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut want: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    want.sort();
    s.get(&Key {
        name: name.to_string(),
        labels: want,
    })
    .copied()
}

/// The per-node aggregates, worked again from the page's own pair series:
/// pairs and pairs failing, the worst (highest) and median of the pairs'
/// median RTT, the worst peer (a failing one if any, else the highest
/// RTT), for each node as src and as dst; and no aggregate of a node with
/// no pairs.
fn aggregates_agree(s: &Series) {
    let up: BTreeMap<(String, String), f64> = of(s, "meshperf_pair_up")
        .into_iter()
        .map(|(k, v)| (pair_of(k), v))
        .collect();
    let p50: BTreeMap<(String, String), f64> = of(s, "meshperf_pair_rtt_seconds")
        .into_iter()
        .filter(|(k, _)| k.label("quantile") == "0.5")
        .map(|(k, v)| (pair_of(k), v))
        .collect();
    let nodes: BTreeSet<String> = up
        .keys()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let mut checked = 0;
    for node in &nodes {
        for role in ["src", "dst"] {
            let mine: Vec<(&String, &(String, String))> = up
                .keys()
                .filter_map(|p| match role {
                    "src" if p.0 == *node => Some((&p.1, p)),
                    "dst" if p.1 == *node => Some((&p.0, p)),
                    _ => None,
                })
                .collect();
            let l = [("agent", node.as_str()), ("role", role)];
            let count = value(s, "meshperf_node_pairs", &l);
            if mine.is_empty() {
                // In a shard a node may drive none of its pairs, or serve
                // none (the pairs are split by a hash of the ports' names):
                // no aggregate in that role.
                assert_eq!(count, None, "{node} {role}");
                continue;
            }
            assert_eq!(count, Some(mine.len() as f64), "{node} {role}");
            let failing: Vec<&String> = mine
                .iter()
                .filter(|(_, p)| up[*p] == 0.0)
                .map(|(peer, _)| *peer)
                .collect();
            assert_eq!(
                value(s, "meshperf_node_pairs_failing", &l),
                Some(failing.len() as f64),
                "{node} {role}"
            );
            let mut rtts: Vec<(f64, &String)> = mine
                .iter()
                .filter_map(|(peer, p)| Some((*p50.get(*p)?, *peer)))
                .collect();
            rtts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let stat =
                |st: &str| value(s, "meshperf_node_rtt_seconds", &[l[0], l[1], ("stat", st)]);
            if rtts.is_empty() {
                assert_eq!(stat("worst"), None);
            } else {
                let m = rtts.len() / 2;
                let median = if rtts.len() % 2 == 1 {
                    rtts[m].0
                } else {
                    (rtts[m - 1].0 + rtts[m].0) / 2.0
                };
                assert_eq!(stat("worst"), Some(rtts[rtts.len() - 1].0), "{node} {role}");
                let got = stat("median").unwrap();
                assert!(
                    (got - median).abs() <= 1e-12,
                    "{node} {role}: {got} {median}"
                );
            }
            let worst: Vec<String> = of(s, "meshperf_node_worst_peer_info")
                .into_iter()
                .filter(|(k, _)| k.label("agent") == node && k.label("role") == role)
                .map(|(k, _)| k.label("peer").to_string())
                .collect();
            assert_eq!(worst.len(), 1, "{node} {role}: {worst:?}");
            if failing.is_empty() {
                let highest = rtts.last().map(|r| r.1);
                assert_eq!(Some(&worst[0]), highest, "{node} {role}");
            } else {
                assert!(
                    failing.contains(&&worst[0]),
                    "{node} {role}: {worst:?} of {failing:?}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(
        of(s, "meshperf_node_pairs").len(),
        checked,
        "a node with no pairs"
    );
}

/// `/matrix.json?form=compact` beside `/metrics` of the same run (read
/// again until both are): a cell per pair with series, every ordered pair
/// of `agents` (the whole rotation, not the last run's 14), each with the
/// median and p99 RTT of `meshperf_pair_rtt_seconds` (to the form's six
/// digits) and its age (since `meshperf_pair_last_measured_timestamp_seconds`);
/// each agent with its `endpoint`.
/// The whole run's file names the endpoints too. CORS: a page on loopback
/// or from `--allow-origin` may read it, another site may not.
fn compact_agrees(m: &Monitor, agents: &[AgentProc]) {
    use crate::util::http_get_from;
    let (s, doc) = (0..20)
        .find_map(|_| {
            let s = m.scrape();
            let (_, body) = http_get(&m.metrics, "/matrix.json?form=compact");
            let doc: serde_json::Value = serde_json::from_str(&body).expect("compact JSON");
            (doc["monitor"]["runs"].as_f64() == Some(one(&s, "meshperf_monitor_runs_total")))
                .then_some((s, doc))
        })
        .expect("/metrics and the compact form of one run");
    assert_eq!(doc["format"], "meshperf-cells");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["kind"], "udp_rr");
    assert_eq!(doc["metrics"], serde_json::json!(["rtt_p50", "rtt_p99"]));
    assert_eq!(doc["monitor"]["rotation"], 3);
    let ends: Vec<&str> = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["endpoint"].as_str().unwrap())
        .collect();
    let addrs: Vec<String> = agents.iter().map(AgentProc::addr).collect();
    assert_eq!(ends, addrs);
    let rtt = |src: &str, dst: &str, q: &str| {
        value(
            &s,
            "meshperf_pair_rtt_seconds",
            &[("src", src), ("dst", dst), ("quantile", q)],
        )
        .unwrap()
            * 1e6
    };
    let mut seen = Pairs::new();
    for c in doc["cells"].as_array().unwrap() {
        let (r, col) = (
            c[0].as_u64().unwrap() as usize,
            c[1].as_u64().unwrap() as usize,
        );
        let (src, dst) = (ends[r], ends[col]);
        assert!(seen.insert((src.to_string(), dst.to_string())), "{c} twice");
        let measured = value(
            &s,
            "meshperf_pair_last_measured_timestamp_seconds",
            &[("src", src), ("dst", dst)],
        )
        .unwrap();
        let age = doc["created_unix"].as_f64().unwrap() - measured;
        assert!(
            (c[2].as_f64().unwrap() - age).abs() <= 0.051,
            "age {age}: {c}"
        );
        for (i, q) in [(3, "0.5"), (4, "0.99")] {
            let want = rtt(src, dst, q);
            let got = c[i].as_f64().unwrap_or_else(|| panic!("{c}"));
            assert!((got - want).abs() <= want * 1e-5, "{c}: {q} {want}");
        }
    }
    assert_eq!(seen, every_pair(agents));
    let (_, body) = http_get(&m.metrics, "/matrix.json");
    let full: serde_json::Value = serde_json::from_str(&body).unwrap();
    let named: Vec<&str> = full["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["endpoint"].as_str().unwrap())
        .collect();
    assert_eq!(named, addrs);
    for (origin, allowed) in [
        (None, None),
        (Some("http://localhost:5173"), Some("http://localhost:5173")),
        (Some("http://127.0.0.1:7800"), Some("http://127.0.0.1:7800")),
        (Some("https://page.example"), Some("https://page.example")),
        (Some("https://elsewhere.example"), None),
    ] {
        for path in ["/matrix.json", "/matrix.json?form=compact"] {
            let (head, _) = http_get_from(&m.metrics, path, origin);
            let got = head
                .lines()
                .find_map(|l| l.strip_prefix("Access-Control-Allow-Origin: "));
            assert_eq!(got, allowed, "{origin:?} {path}:\n{head}");
        }
    }
}

/// Seven agents, `--peers 2`: a rotation of ceil(6/2) = 3 runs. After four
/// runs the page (--stale 1h keeps every pair) holds every ordered pair,
/// last measured by the last three runs, 14 each, every agent driving 2
/// and serving 2 in each; the aggregates agree with the pairs. Then
/// `--peers 1 --stale 3s` every 2 s: only the last two runs' pairs keep
/// series, and an agent killed fails its pairs, counted per node.
#[test]
fn a_sampled_monitor_measures_every_pair_within_its_rotation_and_ages_them_out() {
    let mut agents = fleet(0, 7);
    let urls: Vec<String> = agents.iter().map(url).collect();
    let mut args = agent_args(&urls);
    args.extend(["--peers", "2", "--every", "1s", "--stale", "1h"]);
    args.extend(["--allow-origin", "https://page.example/"]);
    let m = Monitor::start(&args);
    let s = scrape_after(&m, 4.0, 60);
    assert_eq!(one(&s, "meshperf_monitor_rotation_runs"), 3.0);
    assert_eq!(one(&s, "meshperf_monitor_peers"), 2.0);
    assert_eq!(one(&s, "meshperf_monitor_pairs_owned"), 42.0);
    assert_eq!(one(&s, "meshperf_monitor_stale_seconds"), 3600.0);
    assert_eq!(pairs_of(&s, "meshperf_pair_up"), every_pair(&agents));
    let runs = by_run(&s);
    assert_eq!(runs.len(), 3, "every pair within the last 3 runs: {runs:?}");
    for pairs in runs.values() {
        assert_eq!(pairs.len(), 14);
        k_each(pairs, &agents, 2);
    }
    for (k, v) in of(&s, "meshperf_pair_up") {
        assert_eq!(v, 1.0, "{k:?}\n{}", m.stderr());
    }
    aggregates_agree(&s);
    m.wait_line("run 2: 7 agents, 14 of 14 pairs measured", 5);
    assert!(m.stderr().contains("(--peers 2, rotation of 3 runs)"));
    compact_agrees(&m, &agents);
    drop(m);

    let mut args = agent_args(&urls);
    args.extend([
        "--peers", "1", "--every", "2s", "--jitter", "0s", "--stale", "3s",
    ]);
    let m = Monitor::start(&args);
    let s = scrape_after(&m, 4.0, 60);
    assert_eq!(one(&s, "meshperf_monitor_rotation_runs"), 6.0);
    let runs = by_run(&s);
    assert_eq!(runs.len(), 2, "the last two runs' pairs only: {runs:?}");
    for pairs in runs.values() {
        assert_eq!(pairs.len(), 7);
        k_each(pairs, &agents, 1);
    }
    assert_eq!(pairs_of(&s, "meshperf_pair_up").len(), 14);
    assert_eq!(one(&s, "meshperf_monitor_pairs"), 14.0);
    aggregates_agree(&s);

    let dead = agents[6].addr();
    let _ = agents[6].child.kill();
    let _ = agents[6].child.wait();
    let runs_now = one(&m.scrape(), "meshperf_monitor_runs_total");
    let s = scrape_after(&m, runs_now + 1.0, 30);
    let last = by_run(&s).into_values().last().unwrap();
    let failed: Pairs = of(&s, "meshperf_pair_up")
        .into_iter()
        .filter(|(_, v)| *v == 0.0)
        .map(|(k, _)| pair_of(k))
        .collect();
    let want: Pairs = last
        .iter()
        .filter(|p| p.0 == dead || p.1 == dead)
        .cloned()
        .collect();
    assert_eq!(want.len(), 2, "the dead agent drives one and serves one");
    assert!(want.is_subset(&failed), "{want:?} {failed:?}");
    aggregates_agree(&s);
    assert_eq!(
        value(
            &s,
            "meshperf_node_pairs_failing",
            &[("agent", &dead), ("role", "src")]
        ),
        Some(failed.iter().filter(|p| p.0 == dead).count() as f64)
    );
}

/// Two monitors of six agents, shards 0/2 (the flag) and 1/2 (from
/// $MESHPERF_SHARD): their pairs are disjoint and together every ordered
/// pair, each page says its shard and how many pairs it owns; the same with
/// `--peers 2` over a rotation. Two monitors given the same shard show it:
/// the same shard labels and the same pairs on both pages.
#[test]
fn two_shards_cover_every_pair_once_and_an_overlap_shows() {
    let agents = fleet(1, 6);
    let urls: Vec<String> = agents.iter().map(url).collect();
    let all = every_pair(&agents);
    for sampled in [false, true] {
        let mut args = agent_args(&urls);
        args.extend(["--every", "1s", "--stale", "1h"]);
        if sampled {
            args.extend(["--peers", "2"]);
        }
        let mut a0 = args.clone();
        a0.extend(["--shard", "0/2"]);
        // The full mesh in one run, the sampled one in ceil(5/2) = 3.
        let runs = if sampled { 3.0 } else { 1.0 };
        // One shard after the other: two monitors testing the same six
        // agents back to back (--every 1s) keep refusing each other as
        // busy, and a pair refused at each of its tries fails (the overlap
        // below and tests/monitor/cluster.sh run shards at once).
        let m0 = Monitor::start(&a0);
        let s0 = scrape_after(&m0, runs, 60);
        m0.wait_line(
            &format!(
                "(shard 0/2: {} pairs",
                pairs_of(&s0, "meshperf_pair_up").len()
            ),
            5,
        );
        drop(m0);
        let m1 = Monitor::start_env(&args, &[("MESHPERF_SHARD", "1/2")]);
        let s1 = scrape_after(&m1, runs, 60);
        drop(m1);
        let (p0, p1) = (
            pairs_of(&s0, "meshperf_pair_up"),
            pairs_of(&s1, "meshperf_pair_up"),
        );
        assert!(p0.is_disjoint(&p1), "{:?}", p0.intersection(&p1));
        let union: Pairs = p0.union(&p1).cloned().collect();
        assert_eq!(union, all, "sampled {sampled}");
        assert!(!p0.is_empty() && !p1.is_empty());
        for (s, i, p) in [(&s0, "0", &p0), (&s1, "1", &p1)] {
            assert_eq!(
                value(
                    s,
                    "meshperf_monitor_shard_info",
                    &[("shard", i), ("shards", "2")]
                ),
                Some(1.0)
            );
            assert_eq!(one(s, "meshperf_monitor_pairs_owned"), p.len() as f64);
            for (k, v) in of(s, "meshperf_pair_up") {
                assert_eq!(v, 1.0, "{k:?}");
            }
            aggregates_agree(s);
        }
    }

    let mut args = agent_args(&urls);
    args.extend(["--every", "1h", "--jitter", "0s", "--shard", "1/2"]);
    let (x, y) = (Monitor::start(&args), Monitor::start(&args));
    let (sx, sy) = (scrape_after(&x, 1.0, 60), scrape_after(&y, 1.0, 60));
    for s in [&sx, &sy] {
        assert_eq!(
            value(
                s,
                "meshperf_monitor_shard_info",
                &[("shard", "1"), ("shards", "2")]
            ),
            Some(1.0)
        );
    }
    assert_eq!(
        pairs_of(&sx, "meshperf_pair_up"),
        pairs_of(&sy, "meshperf_pair_up"),
        "the same shard measures the same pairs twice"
    );
}

/// `meshperf run --matrix --peers 2 --round R` over five agents: rounds 0
/// and 1 measure 10 pairs each, every agent driving 2 and serving 2, and
/// together every ordered pair (a rotation of 2), as stderr says; the file
/// names each agent's endpoint.
#[test]
fn run_matrix_peers_measures_one_round_of_the_rotation() {
    let agents = fleet(2, 5);
    let urls: Vec<String> = agents.iter().map(url).collect();
    let addrs: Vec<String> = agents.iter().map(AgentProc::addr).collect();
    let mut union = Pairs::new();
    for round in ["0", "1"] {
        let mut args = agent_args(&urls);
        args.extend(["--matrix", "--peers", "2", "--round", round]);
        args.extend(["--kind", "udp_rr", "--set", "count=50", "--json", "-"]);
        let o = run(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "--peers 2: each of 5 agents measures 2 of its 4 peers, round {round} of a rotation that measures every ordered pair within 2 rounds"
            )),
            "{err}"
        );
        let r = meshperf_protocol::result::load(&text(&o.stdout)).unwrap();
        // Each agent with the HOST:PORT it was reached at, as the page and
        // the monitor write a matrix.
        let endpoints: Vec<&str> = r
            .agents
            .iter()
            .map(|h| h["endpoint"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(endpoints, addrs, "{:?}", r.agents);
        let pairs: Pairs = r
            .steps
            .iter()
            .map(|s| {
                assert!(s.error.is_none(), "{:?}", s.error);
                let p = s.pair.unwrap();
                (addrs[p.client].clone(), addrs[p.server].clone())
            })
            .collect();
        assert_eq!((r.steps.len(), pairs.len()), (10, 10));
        k_each(&pairs, &agents, 2);
        assert!(union.is_disjoint(&pairs));
        union.extend(pairs);
    }
    assert_eq!(union, every_pair(&agents));
}

/// Bad input, each one line naming the flag before any traffic (exit 2):
/// --peers 0, --shard 3/2, a $MESHPERF_SHARD that is no shard, --stale
/// under --every, --peers with a kind that measures both ways. And --peers
/// over N-1 is the full mesh, said once.
#[test]
fn fleet_bad_input_and_peers_over_the_fleet() {
    let agents = fleet(3, 3);
    let urls: Vec<String> = agents.iter().map(url).collect();
    let monitor = |extra: &[&str], env: &[(&str, &str)]| {
        let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
            .envs(env.iter().copied())
            .args(["monitor", "--listen", "127.0.0.1:0", "--runs", "1"])
            .args(agent_args(&urls))
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?} {}", text(&o.stderr));
        text(&o.stderr)
    };
    let e = monitor(&["--peers", "0"], &[]);
    assert!(
        e.contains("'--peers <K>'")
            && e.contains("each agent must measure at least one peer a round: give 1 or more"),
        "{e}"
    );
    let e = monitor(&["--shard", "3/2"], &[]);
    assert!(
        e.contains("'--shard <I/N>'")
            && e.contains("shard 3 of 2 does not exist: the index runs from 0 to 1"),
        "{e}"
    );
    let e = monitor(&[], &[("MESHPERF_SHARD", "two")]);
    assert!(e.contains("give I/N"), "{e}");
    let e = monitor(&["--every", "10s", "--stale", "5s"], &[]);
    assert_eq!(
        e.trim_end(),
        "meshperf monitor: --stale 5s is shorter than --every 10s: every pair's series would vanish between runs; give --every or more"
    );
    let mut args = agent_args(&urls);
    args.extend(["--matrix", "--peers", "1", "--kind", "latency_under_load"]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr).trim_end(),
        "meshperf run: --peers samples ordered pairs; a latency_under_load step measures both ways at once: leave --peers out (the full mesh)"
    );

    let mut args = agent_args(&urls);
    args.extend(["--peers", "5", "--every", "1s"]);
    let m = Monitor::start(&args);
    let s = scrape_after(&m, 3.0, 60);
    assert_eq!(pairs_of(&s, "meshperf_pair_up"), every_pair(&agents));
    assert_eq!(one(&s, "meshperf_monitor_rotation_runs"), 1.0);
    assert_eq!(one(&s, "meshperf_monitor_peers"), 2.0);
    let said: Vec<String> = m
        .stderr()
        .lines()
        .filter(|l| l.contains("the full mesh"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        said,
        ["meshperf monitor: --peers 5 with 3 agents: each measures all 2 others, the full mesh"]
    );
}
