//! On a cluster: the token read from a file (`--token-file`, a mounted
//! Secret) by `meshperf agent`, `run` and `monitor`, and its bad files; the
//! agent's own counters on `--metrics`; the monitor's bad lists (a name
//! with one address, a name listing the monitor itself, an agent with
//! another token). Real processes on loopback.

use crate::util::{http_get, random_token, scrapes_survive_slow_clients, AgentProc, Ctl};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn meshperf(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_meshperf"));
    c.args(args).env_remove("MESHPERF_TOKEN");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A file in this test binary's scratch folder (removed at its exit)
/// holding `content` with `mode`.
fn file(name: &str, content: &str, mode: u32) -> PathBuf {
    let dir = crate::util::scratch_root().join("cluster");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// An agent whose token is only in `token_file`.
fn file_agent(token_file: &Path, token: &str) -> AgentProc {
    AgentProc::start_token(&["--token-file", token_file.to_str().unwrap()], token)
}

/// `meshperf monitor --listen LISTEN --runs 1` over `agents`, the token
/// from `token_file`.
fn monitor_once(listen: &str, agents: &[&str], token_file: &Path) -> Output {
    let mut c = meshperf(&[
        "monitor", "--listen", listen, "--runs", "1", "--every", "5s",
    ]);
    for a in agents {
        c.args(["--agent", a]);
    }
    c.arg("--token-file").arg(token_file).output().unwrap()
}

/// The one line a refused command wrote, which must contain `what`;
/// exit status 2.
fn one_line(o: &Output, what: &str) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains(what), "{what:?} not in {err}");
    lines[0].to_string()
}

/// `--token-file` with a mounted Secret's shape (the token and a newline,
/// 0400): the agent takes it, `meshperf run` and `meshperf monitor` use it
/// for `dns:` names and URLs without a token, over `$MESHPERF_TOKEN`;
/// missing, empty, multi-line and directory paths are one-line errors with
/// exit status 2; a world-readable file works, with a warning.
#[test]
fn token_file_for_agent_run_and_monitor() {
    let token = random_token();
    let secret = file("token", &format!("{token}\n"), 0o400);
    let a = file_agent(&secret, &token);
    let b = file_agent(&secret, &token);

    let run = |extra: &[&str]| -> Output {
        let mut c = meshperf(&["run", "--kind", "tcp_rr", "--set", "count=50", "--quiet"]);
        c.args(extra).arg("--token-file").arg(&secret);
        c.output().unwrap()
    };
    // A dns: name and a URL without a token take the file's token, even
    // with another in MESHPERF_TOKEN; a URL's own token stays its own.
    let dns_a = format!("dns:127.0.0.1:{}", a.port);
    let bare_b = format!("http://127.0.0.1:{}/", b.port);
    let o = meshperf(&["run", "--kind", "tcp_rr", "--set", "count=50", "--quiet"])
        .args(["--agent", &dns_a, "--agent", &bare_b, "--token-file"])
        .arg(&secret)
        .env("MESHPERF_TOKEN", "not-the-token-at-all")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Another token in the list: the agent says so, one line, naming where
    // the token comes from.
    let wrong = format!("http://127.0.0.1:{}/#token=not-{token}", b.port);
    let o = run(&["--agent", &dns_a, "--agent", &wrong]);
    let line = one_line(&o, "authentication failed: it has another token");
    assert!(
        line.contains(&format!("127.0.0.1:{}", b.port)) && line.contains("--token-file"),
        "{line}"
    );

    // The monitor: one run over both, through the file's token.
    let dns_b = format!("dns:127.0.0.1:{}", b.port);
    let o = monitor_once("127.0.0.1:0", &[&dns_a, &dns_b], &secret);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("run 1: 2 agents, 2 of 2 pairs measured"),
        "{err}"
    );

    // Bad files, for each command: one line, exit 2, the agent not started.
    let missing = Path::new("/nonexistent/meshperf/token");
    let empty = file("empty", "\n", 0o600);
    let lines = file("lines", &format!("{token}\n{token}\n"), 0o600);
    let dir = secret.parent().unwrap().to_path_buf();
    for (path, what) in [
        (
            missing,
            "--token-file /nonexistent/meshperf/token: cannot read it: No such file or directory",
        ),
        (empty.as_path(), "is empty: put the token in it"),
        (lines.as_path(), "more than one line"),
        (dir.as_path(), "not a file"),
    ] {
        let agent = meshperf(&["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(path)
            .output()
            .unwrap();
        let l = one_line(&agent, what);
        assert!(l.starts_with("meshperf: --token-file"), "{l}");
        let r = meshperf(&["run", "--kind", "tcp_rr", "--agent", &dns_a, "--token-file"])
            .arg(path)
            .output()
            .unwrap();
        assert!(one_line(&r, what).starts_with("meshperf run: --token-file"));
        let m = meshperf(&[
            "monitor",
            "--listen",
            "127.0.0.1:0",
            "--agent",
            &dns_a,
            "--token-file",
        ])
        .arg(path)
        .output()
        .unwrap();
        assert!(one_line(&m, what).starts_with("meshperf monitor: --token-file"));
    }
    // --token and --token-file together: clap's usage error.
    let o = meshperf(&["agent", "--token", "0123456789abcdef", "--token-file"])
        .arg(&secret)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("cannot be used with"),
        "{}",
        text(&o.stderr)
    );
    // Unreadable (not for root, who reads every file).
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !root {
        let locked = file("locked", &token, 0o000);
        let o = meshperf(&["agent", "--token-file"])
            .arg(&locked)
            .output()
            .unwrap();
        one_line(&o, "cannot read it: Permission denied");
    }
    // World-readable: taken, with a warning.
    let open = file("open", &token, 0o644);
    let mut c = meshperf(&[
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--quiet",
        "--token-file",
    ])
    .arg(&open)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut ready = String::new();
    BufReader::new(c.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let mut warning = String::new();
    BufReader::new(c.stderr.take().unwrap())
        .read_line(&mut warning)
        .unwrap();
    let _ = c.kill();
    let _ = c.wait();
    // Taken, and never printed: the ready line says where it is.
    assert!(!ready.contains(&token), "{ready}");
    assert!(
        ready.contains(&format!(
            "(the token is in {}, not shown here)",
            open.display()
        )),
        "{ready}"
    );
    assert!(
        warning.starts_with("meshperf agent: warning: --token-file")
            && warning.contains("readable by every user"),
        "{warning}"
    );
}

/// `/metrics` of `--metrics`, parsed to `series -> value`.
fn counters(hostport: &str) -> std::collections::HashMap<String, f64> {
    let (head, body) = http_get(hostport, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// The address of an agent's `--metrics`, from its record.
pub(crate) fn metrics_at(a: &AgentProc) -> String {
    let t = Instant::now();
    loop {
        if let Some(l) = a.log().iter().find(|l| l.contains("metrics on http://")) {
            return l
                .split("http://")
                .nth(1)
                .unwrap()
                .trim_end_matches("/metrics")
                .to_string();
        }
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", a.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--metrics` under 32 slow clients from two addresses: scrapes from one
/// of those addresses answered within 1 s, the slow ones closed at their
/// request deadline, foreign `Host` names refused (util.rs).
#[test]
fn agent_metrics_answer_scrapes_under_slow_clients() {
    let a = AgentProc::start_logged(&["--metrics", "127.0.0.1:0"]);
    scrapes_survive_slow_clients(&metrics_at(&a), "/metrics");
}

/// The agent's own counters with `--metrics`: a wrong token, a refused
/// prepare and a served tcp_rr (one agent, both ends) are counted, by
/// reason, role and kind; the page holds counts only (no address, no
/// token); /healthz answers, anything else is 404.
#[test]
fn agent_metrics_count_sessions_auth_failures_tests_and_refusals() {
    let a = AgentProc::start_logged(&["--metrics", "127.0.0.1:0"]);
    let at = metrics_at(&a);
    let c0 = counters(&at);
    assert_eq!(c0["meshperf_agent_sessions_total"], 0.0, "{c0:?}");
    assert_eq!(
        c0[r#"meshperf_agent_auth_failures_total{reason="wrong_token"}"#],
        0.0
    );

    // A wrong token.
    let r = Ctl::connect(a.port, "not-the-token", None)
        .err()
        .expect("refused");
    assert_eq!(r["code"], "auth_failed", "{r}");
    // A refused prepare (mss below 88 bytes is bad_params).
    let mut ctl = a.connect();
    let r = ctl.request(json!({"type": "prepare", "test_id": 7, "step": 0, "kind": "tcp_stream", "params": {"mss": 40}}));
    assert_eq!(r["code"], "bad_params", "{r}");
    // A served test: one agent plays both ends.
    let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args(["run", "--kind", "tcp_rr", "--set", "count=100", "--quiet"])
        .args([
            "--agent",
            &format!("http://{}/#token={}", a.addr(), a.token),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    drop(ctl);

    let t = Instant::now();
    let c = loop {
        let c = counters(&at);
        if c["meshperf_agent_sessions_open"] == 0.0 {
            break c;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "sessions still open: {c:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let n = |k: &str| *c.get(k).unwrap_or_else(|| panic!("no {k} in {c:?}"));
    assert_eq!(
        n(r#"meshperf_agent_auth_failures_total{reason="wrong_token"}"#),
        1.0
    );
    assert_eq!(
        n(r#"meshperf_agent_auth_failures_total{reason="blocked"}"#),
        0.0
    );
    assert_eq!(
        n(r#"meshperf_agent_refusals_total{reason="bad_params"}"#),
        1.0
    );
    assert_eq!(n(r#"meshperf_agent_refusals_total{reason="busy"}"#), 0.0);
    assert_eq!(
        n(r#"meshperf_agent_tests_total{kind="tcp_rr",role="serve"}"#),
        1.0
    );
    assert_eq!(
        n(r#"meshperf_agent_tests_total{kind="tcp_rr",role="drive"}"#),
        1.0
    );
    assert_eq!(
        n(r#"meshperf_agent_tests_total{kind="tcp_stream",role="serve"}"#),
        0.0
    );
    // The failed one, the prepare's, and meshperf run's.
    let sessions = n("meshperf_agent_sessions_total");
    let authed = n("meshperf_agent_sessions_authenticated_total");
    assert!((3.0..=4.0).contains(&sessions), "{c:?}");
    assert_eq!(authed, sessions - 1.0, "{c:?}");

    let (_, body) = http_get(&at, "/metrics");
    assert!(
        !body.contains("127.0.0.1") && !body.contains(&a.token),
        "counts only:\n{body}"
    );
    let (head, body) = http_get(&at, "/healthz");
    assert!(
        head.starts_with("HTTP/1.1 200") && body == "ok\n",
        "{head}{body}"
    );
    let (head, body) = http_get(&at, "/ws");
    assert!(
        head.starts_with("HTTP/1.1 404") && body.contains("meshperf agent"),
        "{head}"
    );

    // A --metrics address already in use: one line, exit 2.
    let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
        .args(["agent", "--listen", "127.0.0.1:0", "--metrics", &at])
        .output()
        .unwrap();
    let l = one_line(&o, &format!("--metrics {at}: "));
    assert!(l.contains("in use"), "{l}");
}

/// A monitor whose list holds a name with one address says that nothing
/// can be measured yet; a name that lists the monitor's own /metrics
/// address leaves it out (it is not an agent) and measures the others;
/// `meshperf run --matrix` on a name with one address is a usage error.
#[test]
fn monitor_one_address_and_itself() {
    let token = random_token();
    let secret = file("token-self", &token, 0o600);
    let a = file_agent(&secret, &token);
    let b = file_agent(&secret, &token);
    let dns_a = format!("dns:127.0.0.1:{}", a.port);

    let o = monitor_once("127.0.0.1:0", &[&dns_a], &secret);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|l| l
            == format!(
                "meshperf monitor: only one agent (127.0.0.1:{}): a matrix needs two or more; nothing is measured until another appears",
                a.port
            )),
        "{err}"
    );

    // The monitor's own port, as a dns: name might list it among agents.
    let own = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let own_port = own.local_addr().unwrap().port();
    drop(own);
    let listen = format!("127.0.0.1:{own_port}");
    let dns_self = format!("dns:127.0.0.1:{own_port}");
    let dns_b = format!("dns:127.0.0.1:{}", b.port);
    let o = monitor_once(&listen, &[&dns_a, &dns_self, &dns_b], &secret);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|l| l
            == format!(
                "meshperf monitor: --agent {dns_self}: {listen} is this monitor's own /metrics address, not an agent: left out"
            )),
        "{err}"
    );
    assert!(
        err.contains("run 1: 2 agents, 2 of 2 pairs measured"),
        "{err}"
    );
    assert!(!err.contains(&format!("-> {listen}")), "{err}");

    let o = meshperf(&[
        "run",
        "--matrix",
        "--kind",
        "tcp_rr",
        "--agent",
        &dns_a,
        "--token-file",
    ])
    .arg(&secret)
    .output()
    .unwrap();
    one_line(&o, "--matrix needs two or more agents");
}
