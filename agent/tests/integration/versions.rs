//! Agents and controllers of different releases in one fleet (issue 44
//! part 4): `hello` says the protocol versions an agent speaks, `auth`
//! the one the controller chose (the highest both speak), `auth_ok`'s info
//! each kind and its parameters; a controller refuses, before any traffic
//! and in one line naming the agent and its release, a step an agent
//! cannot run, and an agent whose versions it does not speak. Real agents
//! of an older commit against these: tests/fleet/mixed.sh.

use crate::util::{fake_agent, open, AgentProc};
use meshperf_protocol::params::Kind;
use meshperf_protocol::{PROTOCOL_MAX, PROTOCOL_VERSION};
use serde_json::{json, Value};
use std::process::Command;
use tungstenite::Message;

fn text(ws: &mut tungstenite::WebSocket<std::net::TcpStream>) -> Option<Value> {
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// A real agent's `auth_ok` info.
fn real_info(a: &AgentProc) -> Value {
    let mut ws = open(a.port, None).unwrap();
    text(&mut ws).unwrap();
    let auth = json!({"type": "auth", "id": 1, "token": a.token, "protocol": PROTOCOL_MAX});
    ws.send(Message::text(auth.to_string())).unwrap();
    let ok = text(&mut ws).unwrap();
    assert_eq!(ok["type"], "auth_ok", "{ok}");
    ok["info"].clone()
}

/// `meshperf run ARGS`: its exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .arg("run")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn an_agent_says_the_versions_it_speaks_and_each_kind_s_parameters() {
    let a = AgentProc::start(&[]);
    let mut ws = open(a.port, None).unwrap();
    let hello = text(&mut ws).unwrap();
    assert_eq!(
        hello,
        json!({"type": "hello", "protocol": PROTOCOL_VERSION, "protocol_max": PROTOCOL_MAX})
    );
    // A version outside that range: one line, and the socket closes.
    let auth = json!({"type": "auth", "id": 1, "token": a.token, "protocol": PROTOCOL_MAX + 1});
    ws.send(Message::text(auth.to_string())).unwrap();
    let e = text(&mut ws).unwrap();
    assert_eq!(e["code"], "bad_request", "{e}");
    assert_eq!(
        e["message"],
        format!(
            "protocol {} asked for; this agent speaks {PROTOCOL_VERSION} to {PROTOCOL_MAX} (its hello said so)",
            PROTOCOL_MAX + 1
        )
    );
    assert_eq!(text(&mut ws), None, "the socket stays open");
    // Each kind its release knows, with exactly the parameters its parser
    // takes; those it runs here are its capabilities.
    let info = real_info(&a);
    let accepts = info["accepts"].as_object().unwrap();
    assert_eq!(accepts.len(), Kind::ALL.len(), "{info}");
    for kind in Kind::ALL {
        let names: Vec<&str> = kind.params().iter().map(|p| p.name).collect();
        assert_eq!(accepts[kind.name()], json!(names), "{kind:?}");
    }
    for k in info["capabilities"].as_array().unwrap() {
        assert!(accepts.contains_key(k.as_str().unwrap()), "{k}");
    }
    // And it still serves.
    let mut ws = open(a.port, None).unwrap();
    text(&mut ws).unwrap();
    let auth = json!({"type": "auth", "id": 1, "token": a.token});
    ws.send(Message::text(auth.to_string())).unwrap();
    assert_eq!(text(&mut ws).unwrap()["type"], "auth_ok");
}

#[test]
fn a_controller_speaks_the_highest_version_both_speak_or_refuses_in_one_line() {
    let real = AgentProc::start(&[]);
    let info = real_info(&real);
    let token = "whatever-token-00";
    // An agent of a future protocol only: refused before its token is sent.
    let future =
        json!({"type": "hello", "protocol": PROTOCOL_MAX + 1, "protocol_max": PROTOCOL_MAX + 3});
    let (port, got) = fake_agent(future, info.clone(), "no");
    let url = format!("http://127.0.0.1:{port}/#token={token}");
    let (code, err) = run(&["--agent", &url, "--kind", "tcp_rr"]);
    assert_ne!(code, Some(0), "{err}");
    let want = format!(
        "agent 127.0.0.1:{port} speaks protocol {} to {}, this meshperf {}: it is newer than this meshperf: upgrade this meshperf (or the page) to one that speaks it",
        PROTOCOL_MAX + 1,
        PROTOCOL_MAX + 3,
        if PROTOCOL_VERSION == PROTOCOL_MAX { format!("{PROTOCOL_MAX}") } else { format!("{PROTOCOL_VERSION} to {PROTOCOL_MAX}") }
    );
    assert!(err.lines().any(|l| l.contains(&want)), "{err}");
    assert!(got.lock().unwrap().is_empty(), "{:?}", got.lock().unwrap());
    // An agent that speaks this version and later ones: this one is chosen
    // and said in auth.
    let wider =
        json!({"type": "hello", "protocol": PROTOCOL_VERSION, "protocol_max": PROTOCOL_MAX + 5});
    let (port, got) = fake_agent(wider, info.clone(), "no");
    let url = format!("http://127.0.0.1:{port}/#token={token}");
    run(&["--agent", &url, "--kind", "tcp_rr"]);
    let first = got.lock().unwrap()[0].clone();
    assert_eq!(first["type"], "auth");
    assert_eq!(first["protocol"], json!(PROTOCOL_MAX), "{first}");
    // An agent before protocol_max is not told (it speaks one version).
    let old = json!({"type": "hello", "protocol": PROTOCOL_VERSION});
    let (port, got) = fake_agent(old, info, "no");
    let url = format!("http://127.0.0.1:{port}/#token={token}");
    run(&["--agent", &url, "--kind", "tcp_rr"]);
    let first = got.lock().unwrap()[0].clone();
    assert_eq!(first["type"], "auth");
    assert_eq!(first.get("protocol"), None, "{first}");
}

#[test]
fn a_step_an_older_agent_cannot_run_is_refused_naming_it_before_any_traffic() {
    let real = AgentProc::start(&[]);
    let mut info = real_info(&real);
    // The fake says it is an older release: no path, and tcp_rr without
    // resp_bytes.
    info["version"] = json!("0.0.9");
    info["instance"] = json!("0123456789abcdef");
    info["capabilities"] = json!(["tcp_stream", "tcp_rr", "udp_rr"]);
    let rr: Vec<&str> = Kind::TcpRr
        .params()
        .iter()
        .map(|p| p.name)
        .filter(|n| *n != "resp_bytes")
        .collect();
    info["accepts"]["tcp_rr"] = json!(rr);
    info["accepts"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k != "path");
    let hello =
        json!({"type": "hello", "protocol": PROTOCOL_VERSION, "protocol_max": PROTOCOL_MAX});
    let (port, got) = fake_agent(hello, info, "no");
    let old = format!("http://127.0.0.1:{port}/#token=whatever-token-00");
    let new = format!("http://{}/#token={}", real.addr(), real.token);
    let name = format!("agent 127.0.0.1:{port} (meshperf 0.0.9)");
    for (args, want) in [
        (
            vec!["--kind", "path"],
            format!("{name} does not run path (a release before it): upgrade it"),
        ),
        (
            vec!["--kind", "tcp_rr", "--set", "resp_bytes=100"],
            format!("{name} does not take tcp_rr's parameter resp_bytes (a release before it): upgrade it, or leave resp_bytes out"),
        ),
        (
            vec!["--matrix", "--kind", "path"],
            format!("{name} does not run path (a release before it): upgrade it"),
        ),
    ] {
        for order in [[&new, &old], [&old, &new]] {
            let mut all = vec!["--agent", order[0], "--agent", order[1]];
            all.extend(&args);
            let (code, err) = run(&all);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            let lines: Vec<&str> = err.lines().filter(|l| l.contains(&want)).collect();
            assert_eq!(lines.len(), 1, "{args:?}: {err}");
            assert!(lines[0].ends_with("; nothing was run"), "{err}");
        }
    }
    // Nothing but auth reached the older agent.
    let got = got.lock().unwrap();
    assert!(got.iter().all(|m| m["type"] == "auth"), "{got:?}");
}
