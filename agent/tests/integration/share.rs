//! Many tests at once on one agent (issue 42): light tests run side by
//! side with exact counts and name each other; a link-filling test waits
//! in the agent's queue, told its place, and starts when its turn comes;
//! a full queue, `queue: false` and a controller that leaves while
//! waiting, each in one line with the agent serving on.

use crate::util::{logged, AgentProc, Ctl};
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use tungstenite::Message;

fn prepare(kind: &str, test_id: u32, params: &Value) -> Value {
    json!({"type": "prepare", "test_id": test_id, "step": 0, "kind": kind, "params": params})
}

fn start(kind: &str, test_id: u32, params: &Value, prep: &Value) -> Value {
    json!({"type": "start", "test_id": test_id, "step": 0, "kind": kind, "params": params,
           "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}})
}

/// Sends a request without waiting for its reply (it may wait in a queue).
fn send(c: &mut Ctl, mut v: Value, id: u64) {
    v["id"] = json!(id);
    c.ws.send(Message::text(v.to_string())).unwrap();
}

/// The next message of `c` that is not a `queued` event, and the queued
/// events met before it.
fn reply_after_queued(c: &mut Ctl) -> (Value, Vec<Value>) {
    let mut queued = Vec::new();
    loop {
        let m = c.next_text();
        if m["type"] == "queued" {
            queued.push(m);
        } else {
            return (m, queued);
        }
    }
}

/// The test ids the `shared` key of a side's summary names.
fn shared_ids(end: &Value) -> Vec<u64> {
    let mut ids: Vec<u64> = end["summary"]["shared"]["tests"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["test_id"].as_u64()).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

/// Four controllers, each with its own sessions, run tcp_rr at once with
/// one serving agent and one driving agent: all four run together (none
/// waits: one flow of tcp_rr shares), every count is exact on both sides,
/// and each serving side names the other three (all four were prepared
/// before any started, so each overlapped every other there).
#[test]
fn four_controllers_run_tcp_rr_at_once_and_each_result_names_the_others() {
    let (s, d) = (
        Arc::new(AgentProc::start(&[])),
        Arc::new(AgentProc::start(&[])),
    );
    let n = 4u32;
    let count = 4000u64;
    let prepared = Arc::new(Barrier::new(n as usize));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (s, d, prepared) = (s.clone(), d.clone(), prepared.clone());
            std::thread::spawn(move || {
                let id = 4200 + i;
                let params = json!({"count": count, "req_bytes": 64, "resp_bytes": 64});
                let (mut cs, mut cd) = (s.connect(), d.connect());
                let prep = cs.request(prepare("tcp_rr", id, &params));
                assert_eq!(prep["type"], "prepared", "{prep}");
                prepared.wait();
                let st = cd.request(start("tcp_rr", id, &params, &prep));
                assert_eq!(st["type"], "started", "{st}");
                let queued = cs
                    .events
                    .iter()
                    .chain(&cd.events)
                    .any(|e| e["type"] == "queued");
                (id, cd.wait_end(id), cs.wait_end(id), queued)
            })
        })
        .collect();
    let ends: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ids: Vec<u64> = ends.iter().map(|e| u64::from(e.0)).collect();
    for (id, client, server, queued) in &ends {
        assert_eq!(client["type"], "result", "{client}");
        assert_eq!(server["type"], "result", "{server}");
        assert!(!queued, "test {id} waited: four tcp_rr of one flow share");
        assert_eq!(client["summary"]["count"], count, "{client}");
        assert_eq!(client["summary"]["peer_count"], count, "{client}");
        assert_eq!(server["summary"]["count"], count, "{server}");
        let others: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|x| *x != u64::from(*id))
            .collect();
        assert_eq!(shared_ids(server), others, "{server}");
        for t in server["summary"]["shared"]["tests"].as_array().unwrap() {
            assert_eq!(t["kind"], "tcp_rr");
            assert!(t["overlap_s"].as_f64().unwrap() > 0.0, "{t}");
        }
        let sh = &server["summary"]["shared"];
        assert!(
            sh["overlap_s"].as_f64().unwrap() <= sh["of_s"].as_f64().unwrap(),
            "{sh}"
        );
    }
}

/// A tcp_stream asked while another runs waits in the serving agent's
/// queue: its controller hears its place (1, behind 1 test) and an
/// estimate, and its `prepared` comes once the first test's serving side
/// has ended (within a generous margin of it, not before), then it moves
/// its exact bytes.
#[test]
fn a_tcp_stream_asked_while_another_runs_waits_its_turn() {
    let (s, d) = (AgentProc::start_logged(&[]), AgentProc::start(&[]));
    let (mut cs1, mut cd1) = (s.connect(), d.connect());
    let first = json!({"msg_bytes": 65536, "duration_s": 2});
    let prep1 = cs1.request(prepare("tcp_stream", 4300, &first));
    assert_eq!(prep1["type"], "prepared", "{prep1}");
    let st1 = cd1.request(start("tcp_stream", 4300, &first, &prep1));
    assert_eq!(st1["type"], "started", "{st1}");
    let (mut cs2, mut cd2) = (s.connect(), d.connect());
    let second = json!({"msg_bytes": 1000, "count": 3000});
    send(&mut cs2, prepare("tcp_stream", 4301, &second), 1);
    let first_end = std::thread::spawn(move || {
        let e = cs1.wait_end(4300);
        (e, Instant::now(), cd1.wait_end(4300))
    });
    let (prep2, queued) = reply_after_queued(&mut cs2);
    let prepared_at = Instant::now();
    let (end1, end1_at, client1) = first_end.join().unwrap();
    assert_eq!(end1["type"], "result", "{end1}");
    assert_eq!(client1["type"], "result", "{client1}");
    assert_eq!(prep2["type"], "prepared", "{prep2}");
    let q = queued
        .first()
        .expect("the waiting controller heard its place");
    assert_eq!(
        (q["test_id"].as_u64(), q["role"].as_str()),
        (Some(4301), Some("server")),
        "{q}"
    );
    assert_eq!(
        (q["place"].as_u64(), q["behind"].as_u64()),
        (Some(1), Some(1)),
        "{q}"
    );
    let w = q["wait_s"].as_f64().unwrap();
    assert!(w > 0.0 && w <= 2.1, "about the first test's 2 s: {q}");
    // Its turn came with the first test's end: the record says it waited
    // and the first ended before it was prepared.
    logged(
        &s,
        &["test 4301 tcp_stream serving waits, place 1 in the queue: tcp_stream runs alone and test 4300 (tcp_stream) runs here"],
    );
    assert!(
        prepared_at + Duration::from_millis(50) >= end1_at,
        "prepared before the first test ended"
    );
    assert!(
        prepared_at <= end1_at + Duration::from_secs(3),
        "prepared {:?} after the first test ended",
        prepared_at - end1_at
    );
    let st2 = cd2.request(start("tcp_stream", 4301, &second, &prep2));
    assert_eq!(st2["type"], "started", "{st2}");
    let (c2, s2) = (cd2.wait_end(4301), cs2.wait_end(4301));
    assert_eq!(c2["summary"]["bytes"], 3_000_000, "{c2}");
    assert_eq!(s2["summary"]["bytes"], 3_000_000, "{s2}");
    // It ran alone: nothing shared.
    assert!(s2["summary"].get("shared").is_none(), "{s2}");
}

/// Three tcp_rr run at once; the one bounded by time is cancelled while
/// the other two run: it ends `cancelled`, they end with exact counts.
#[test]
fn cancelling_one_of_three_running_tests_leaves_the_other_two_exact() {
    let (s, d) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let mut sessions: Vec<(Ctl, Ctl)> = (0..3).map(|_| (s.connect(), d.connect())).collect();
    let count = 20000u64;
    let params = |i: usize| {
        if i == 1 {
            json!({"duration_s": 20})
        } else {
            json!({"count": count})
        }
    };
    for (i, (cs, cd)) in sessions.iter_mut().enumerate() {
        let id = 4400 + i as u32;
        let prep = cs.request(prepare("tcp_rr", id, &params(i)));
        assert_eq!(prep["type"], "prepared", "{prep}");
        let st = cd.request(start("tcp_rr", id, &params(i), &prep));
        assert_eq!(st["type"], "started", "{st}");
    }
    let c = sessions[1]
        .1
        .request(json!({"type": "cancel", "test_id": 4401}));
    assert_eq!(c["type"], "cancelled", "{c}");
    let cancelled = sessions[1].1.wait_end(4401);
    assert_eq!(cancelled["type"], "error", "{cancelled}");
    assert_eq!(cancelled["code"], "cancelled", "{cancelled}");
    for i in [0usize, 2] {
        let id = 4400 + i as u32;
        let (cs, cd) = &mut sessions[i];
        let (client, server) = (cd.wait_end(id), cs.wait_end(id));
        assert_eq!(client["summary"]["count"], count, "{client}");
        assert_eq!(client["summary"]["peer_count"], count, "{client}");
        assert_eq!(server["summary"]["count"], count, "{server}");
        assert!(shared_ids(&server).contains(&4401), "{server}");
    }
}

/// With `--max-tests 1 --max-queue 1`: a test holds the agent, a second
/// waits, a third is refused `busy` in one line saying the queue is full
/// and how long it is, and `queue: false` is refused saying so. The
/// waiting controller goes away: it leaves the queue (the next one waits
/// at place 1, not 2), and it starts once the first test is cancelled.
#[test]
fn a_full_queue_is_refused_in_one_line_and_a_gone_controller_leaves_it() {
    let s = AgentProc::start_logged(&["--max-tests", "1", "--max-queue", "1"]);
    assert_eq!(s.connect().hello["limits"]["max_tests"], 1);
    let p = json!({"duration_s": 5});
    let mut c1 = s.connect();
    let prep = c1.request(prepare("tcp_rr", 4500, &p));
    assert_eq!(prep["type"], "prepared", "{prep}");
    let mut c2 = s.connect();
    send(&mut c2, prepare("tcp_rr", 4501, &p), 1);
    let q = c2.next_text();
    assert_eq!(q["type"], "queued", "{q}");
    assert_eq!(
        (q["place"].as_u64(), q["behind"].as_u64()),
        (Some(1), Some(1)),
        "{q}"
    );
    let mut c3 = s.connect();
    let full = c3.request(prepare("tcp_rr", 4502, &p));
    assert_eq!(full["code"], "busy", "{full}");
    let m = full["message"].as_str().unwrap();
    assert!(
        m.contains("1 test runs here (--max-tests 1)")
            && m.contains("its queue is full: 1 test waits (--max-queue 1)")
            && !m.contains('\n'),
        "{m}"
    );
    let no = c3.request(
        json!({"type": "prepare", "test_id": 4503, "step": 0, "kind": "tcp_rr",
                               "params": p, "queue": false}),
    );
    assert_eq!(no["code"], "busy", "{no}");
    assert!(
        no["message"]
            .as_str()
            .unwrap()
            .contains("the request said queue: false; 1 test waits in its queue"),
        "{no}"
    );
    // The same test id again while it waits: refused, the first stays.
    send(&mut c2, prepare("tcp_rr", 4501, &p), 2);
    let dup = reply_after_queued(&mut c2).0;
    assert_eq!(dup["code"], "duplicate_test", "{dup}");
    drop(c2);
    logged(
        &s,
        &["closed with 1 test side(s) waiting: they left the queue"],
    );
    let mut c4 = s.connect();
    send(&mut c4, prepare("tcp_rr", 4504, &p), 1);
    let q = c4.next_text();
    assert_eq!(q["type"], "queued", "{q}");
    assert_eq!(
        q["place"], 1,
        "the gone controller's test left the queue: {q}"
    );
    let t0 = Instant::now();
    let c = c1.request(json!({"type": "cancel", "test_id": 4500}));
    assert_eq!(c["type"], "cancelled", "{c}");
    let (r, _) = reply_after_queued(&mut c4);
    assert_eq!(r["type"], "prepared", "{r}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // A waiting request cancelled by its controller leaves the queue too.
    let mut c5 = s.connect();
    send(&mut c5, prepare("tcp_rr", 4505, &p), 1);
    assert_eq!(c5.next_text()["type"], "queued");
    send(&mut c5, json!({"type": "cancel", "test_id": 4505}), 2);
    let (a, _) = reply_after_queued(&mut c5);
    let (b, _) = reply_after_queued(&mut c5);
    let (err, ok) = if a["type"] == "error" { (a, b) } else { (b, a) };
    assert_eq!(err["code"], "cancelled", "{err}");
    assert_eq!(err["id"], 1, "{err}");
    assert_eq!(ok["type"], "cancelled", "{ok}");
    assert_eq!(c4.request(json!({"type": "ping"}))["type"], "pong");
}

/// `meshperf run` says what a step shared: a 1 s tcp_rr run while another
/// controller's tcp_rr runs on the same two agents prints one line per
/// agent, "shared agent ADDR with 1 other test (tcp_rr) for X of Y s",
/// and its result file carries `shared` on both sides, with the bytes the
/// other test moved meanwhile (from its progress, 10 a second).
#[test]
fn meshperf_run_says_which_agents_a_step_shared() {
    let (a, b) = (AgentProc::start_logged(&[]), AgentProc::start(&[]));
    let mut other = std::process::Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "run",
            "--agent",
            &format!("http://{}/#token={}", a.addr(), a.token),
        ])
        .args([
            "--agent",
            &format!("http://{}/#token={}", b.addr(), b.token),
        ])
        .args(["--kind", "tcp_rr", "--set", "duration_s=20", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    logged(&a, &["tcp_rr serving started"]);
    let json = crate::run::tmp("shared-run.json");
    let o = crate::run::run_ab(
        &a,
        &b,
        &[
            "--kind",
            "tcp_rr",
            "--set",
            "duration_s=1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let _ = other.kill();
    let _ = other.wait();
    let err = crate::run::text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for ag in [&a, &b] {
        let line = format!(
            "meshperf run: shared agent {} with 1 other test (tcp_rr) for ",
            ag.addr()
        );
        assert!(err.contains(&line), "{line} not in {err}");
    }
    let r = meshperf_protocol::result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &r.steps[0];
    assert_eq!(s.summary["count"], s.summary["peer_count"], "{}", s.summary);
    for side in [&s.sides.client, &s.sides.server] {
        let sh = &side.as_ref().unwrap()["shared"];
        assert_eq!(sh["tests"].as_array().unwrap().len(), 1, "{sh}");
        assert_eq!(sh["tests"][0]["kind"], "tcp_rr", "{sh}");
    }
    // Beside the other test's requester, its bytes; beside its responder
    // (which sends no progress), unknown.
    let bytes = |side: &Option<serde_json::Value>| {
        side.as_ref().unwrap()["shared"]["tests"][0]["bytes"].clone()
    };
    assert!(
        bytes(&s.sides.client).as_u64().unwrap() > 0,
        "{:?}",
        s.sides.client
    );
    assert!(bytes(&s.sides.server).is_null(), "{:?}", s.sides.server);
}

/// Ctrl-C while a step waits in an agent's queue: `meshperf run` takes it
/// out of the queue (the agent's record says so) and ends at once, not at
/// its turn (the tcp_stream ahead of it runs 20 s).
#[test]
fn ctrl_c_while_waiting_leaves_the_queue() {
    let (a, b) = (AgentProc::start_logged(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let p = json!({"duration_s": 20});
    let prep = ca.request(prepare("tcp_stream", 4600, &p));
    assert_eq!(prep["type"], "prepared", "{prep}");
    let st = cb.request(start("tcp_stream", 4600, &p, &prep));
    assert_eq!(st["type"], "started", "{st}");
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args([
            "run",
            "--agent",
            &format!("http://{}/#token={}", a.addr(), a.token),
        ])
        .args([
            "--agent",
            &format!("http://{}/#token={}", b.addr(), b.token),
        ])
        .args(["--kind", "tcp_stream", "--set", "count=10"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    logged(&a, &["tcp_stream serving waits, place 1 in the queue"]);
    let t0 = Instant::now();
    // SAFETY: kill(2) on a pid this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let status = run.wait().unwrap();
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(took < Duration::from_secs(10), "{took:?}: {err}");
    assert_ne!(status.code(), Some(0), "{err}");
    assert!(err.contains("waiting behind 1 test on agent"), "{err}");
    logged(&a, &["tcp_stream serving left the queue: cancelled"]);
    let c = ca.request(json!({"type": "cancel", "test_id": 4600}));
    assert_eq!(c["type"], "cancelled", "{c}");
}
