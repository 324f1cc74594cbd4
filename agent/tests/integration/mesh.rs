//! The matrix's schedule and checks between real agents (issue 11): pairs
//! an agent refuses as busy are tried again later, agents listed twice or
//! reached under two names are refused before any traffic, the strictest
//! limit is shown, a kind that measures both ways runs once per unordered
//! pair and fills both cells, and an agent looks names up for a page.

use crate::run::{run, text, tmp};
use crate::util::{AgentProc, Ctl};

use meshperf_protocol::matrix::Metric;
use meshperf_protocol::result;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::Duration;

fn url(a: &AgentProc) -> String {
    format!("http://{}/#token={}", a.addr(), a.token)
}

fn matrix_args<'a>(urls: &'a [String], rest: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = urls.iter().flat_map(|u| ["--agent", u.as_str()]).collect();
    args.push("--matrix");
    args.extend_from_slice(rest);
    args
}

/// Another controller's 3 s test holds agent C; a matrix of A, B and C
/// finds C busy: its pairs wait in C's queue (issue 42), the run says so,
/// and it ends with all six measured, none refused.
#[test]
fn a_pair_on_a_busy_agent_waits_in_its_queue_and_is_measured() {
    let agents: Vec<AgentProc> = (0..4).map(|_| AgentProc::start(&[])).collect();
    let (c, d) = (url(&agents[2]), url(&agents[3]));
    let mut other = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args(["run", "--agent", &c, "--agent", &d, "--kind", "tcp_stream"])
        .args(["--set", "duration_s=3", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The other test is under way in a fraction of that (asserted below:
    // the matrix says it found C busy, and the other run succeeds).
    std::thread::sleep(Duration::from_millis(800));
    let urls: Vec<String> = agents[..3].iter().map(url).collect();
    let json = tmp("busy-matrix.json");
    let o = run(&matrix_args(
        &urls,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "count=200",
            "--json",
            json.to_str().unwrap(),
        ],
    ));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}{err}", text(&o.stdout));
    assert!(
        err.contains("waiting behind 1 test on agent") && !err.contains("tried again"),
        "{err}"
    );
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 6);
    assert!(r.steps.iter().all(|s| s.error.is_none()), "{:?}", r.steps);
    // C's pairs ran after the other test had ended.
    let c_pairs: Vec<_> = r
        .steps
        .iter()
        .filter(|s| {
            let p = s.pair.unwrap();
            p.server == 2 || p.client == 2
        })
        .collect();
    assert_eq!(c_pairs.len(), 4);
    assert!(other.wait().unwrap().success());
}

/// Before any traffic (exit 2): the same agent twice, one agent reached
/// under two names (127.0.0.1 and 127.0.0.2 on a wildcard listener: the
/// same `instance`), a kind with a limit over the strictest agent's.
/// Limits that differ are shown with the agent that sets the strictest.
#[test]
fn agents_listed_twice_or_under_two_names_are_refused_and_the_strictest_limit_is_shown() {
    let a = AgentProc::start_logged(&["--listen", "0.0.0.0:0", "--allow-host", "127.0.0.2"]);
    let b = AgentProc::start(&["--max-duration", "10"]);
    let c = AgentProc::start(&[]);
    let ua = format!("http://127.0.0.1:{}/#token={}", a.port, a.token);
    let o = run(&matrix_args(
        &[ua.clone(), url(&b), ua.clone()],
        &["--kind", "tcp_rr"],
    ));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "agent 127.0.0.1:{} is listed twice; nothing was run",
            a.port
        )),
        "{err}"
    );
    let other_name = format!("http://127.0.0.2:{}/#token={}", a.port, a.token);
    let o = run(&matrix_args(
        &[
            format!("http://127.0.0.1:{}/#token={}", a.port, a.token),
            url(&b),
            other_name,
        ],
        &["--kind", "tcp_rr"],
    ));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "agent 127.0.0.1:{} and agent 127.0.0.2:{} are one agent",
            a.port, a.port
        )),
        "{err}"
    );
    // 20 s is over B's limit: refused, naming B; nothing ran anywhere.
    let o = run(&matrix_args(
        &[url(&c), url(&b)],
        &["--kind", "tcp_stream", "--set", "duration_s=20"],
    ));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("agent {} would refuse it", b.addr())),
        "{err}"
    );
    assert!(
        !a.log().iter().any(|l| l.contains(" test ")),
        "{:?}",
        a.log()
    );
    // Within it: measured, and the line says which limit binds and where.
    let o = run(&matrix_args(
        &[url(&c), url(&b)],
        &["--kind", "tcp_rr", "--set", "count=50"],
    ));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "the strictest limit binds: max_duration_s 10 (agent {}; up to 60 elsewhere)",
            b.addr()
        )),
        "{err}"
    );
}

/// latency_under_load measures both directions at once: a matrix of three
/// agents runs one test per unordered pair (3, not 6) and fills both cells
/// of each, upload (row = the driving agent) and download (row = the
/// serving agent), each equal to that phase's figure in the JSON.
#[test]
fn a_kind_that_measures_both_ways_runs_once_per_unordered_pair_and_fills_both_cells() {
    let agents: Vec<AgentProc> = (0..3).map(|_| AgentProc::start(&[])).collect();
    let urls: Vec<String> = agents.iter().map(url).collect();
    let json = tmp("lul-matrix.json");
    let mut rest = vec!["--kind", "latency_under_load"];
    for s in [
        "idle_s=0.4",
        "download_s=0.4",
        "upload_s=0.4",
        "both_s=0.4",
        "gap_s=0.1",
        "streams=1",
    ] {
        rest.extend(["--set", s]);
    }
    rest.extend(["--metric", "gbps", "--json", json.to_str().unwrap()]);
    let o = run(&matrix_args(&urls, &rest));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains("matrix of 3 agents, latency_under_load: 3 pairs (one test each, both directions at once) in 3 rounds"),
        "{err}"
    );
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 3);
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("matrix: latency_under_load"))
        .collect();
    assert!(rows[0].contains("rows send, columns receive"), "{out}");
    let table: Vec<Vec<&str>> = rows[5..8]
        .iter()
        .map(|l| l.split_whitespace().skip(1).collect())
        .collect();
    let mut filled = 0;
    for s in &r.steps {
        let p = s.pair.unwrap();
        let phase = |name: &str, key: &str| {
            let ph = s.summary["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["phase"] == name)
                .unwrap();
            ph[key].as_f64().unwrap() / 1e9
        };
        let up = phase("upload", "up_bits_per_second");
        let down = phase("download", "down_bits_per_second");
        assert!(up > 0.0 && down > 0.0);
        assert_eq!(table[p.client][p.server], format!("{up:.3}"), "{out}");
        assert_eq!(table[p.server][p.client], format!("{down:.3}"), "{out}");
        let cells = Metric::Gbps.cells(s);
        assert_eq!(cells.len(), 2);
        filled += 2;
        // The pair's verdict in words under its line, as the page's
        // tooltip: worked out from the pair's figures in the JSON.
        let sentence = crate::lul::verdict_by_hand(&s.summary);
        assert!(
            out.lines().any(|l| l.trim() == sentence),
            "no verdict line {sentence:?} in {out}"
        );
    }
    assert_eq!(filled, 6, "every off-diagonal cell");
}

/// `resolve` (the page's `dns:` field): the agent answers a name's
/// addresses; a name DNS cannot carry is a bad request, a name with no
/// address is not found; the agent goes on serving.
#[test]
fn an_agent_resolves_names_for_its_controller() {
    let a = AgentProc::start(&[]);
    let mut ctl: Ctl = a.connect();
    let r = ctl.request(json!({"type": "resolve", "name": "localhost"}));
    assert_eq!(r["type"], "resolved", "{r}");
    assert!(
        r["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == "127.0.0.1"),
        "{r}"
    );
    let r = ctl.request(json!({"type": "resolve", "name": "127.0.0.7"}));
    assert_eq!(r["addresses"], json!(["127.0.0.7"]), "{r}");
    let r = ctl.request(json!({"type": "resolve", "name": "a b/c"}));
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("error"), Some("bad_request")),
        "{r}"
    );
    let r = ctl.request(json!({"type": "resolve", "name": "x".repeat(300)}));
    assert_eq!(r["code"], "bad_request", "{r}");
    let r = ctl.request(json!({"type": "resolve", "name": "no-such-host.invalid"}));
    assert_eq!(r["code"], "not_found", "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("no-such-host.invalid"),
        "{r}"
    );
    assert_eq!(ctl.request(json!({"type": "ping"}))["type"], "pong");
    // Before auth a stranger cannot ask.
    let mut ws = crate::util::open(a.port, None).unwrap();
    let _hello = ws.read().unwrap();
    ws.send(tungstenite::Message::text(
        json!({"type": "resolve", "id": 1, "name": "localhost"}).to_string(),
    ))
    .unwrap();
    let m = ws.read().unwrap();
    assert!(m.to_text().unwrap().contains("auth_required"), "{m}");
}
