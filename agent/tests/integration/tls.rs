//! TLS on the control port (`--tls-self-signed`, `--tls-cert`/`--tls-key`)
//! and the tags (HMAC-SHA256 with the session key) on the agent-to-agent
//! lines: `meshperf run` pinned by `fp`, what a wrong `fp`, a plain client
//! and a staller meet, and a hand-written peer that alters its hello.

use crate::run::{run, text};
use crate::util::{self, peer_hello, peer_reply_ok, AgentProc};
use meshperf_agent::ctl::pin::{self, CtlStream};
use meshperf_protocol::result;
use serde_json::{json, Value};
use sha2::Digest;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// A wss control connection pinned to `fp`, authenticated with `token`;
/// returns the `auth` reply too.
fn wss(port: u16, fp: &str, token: &str) -> (WebSocket<CtlStream>, Value) {
    let sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let cfg = pin::client_config(pin::parse_fp(fp).expect("fp"));
    let tls = pin::handshake(cfg, "127.0.0.1", sock).expect("TLS handshake");
    let url = format!("wss://127.0.0.1:{port}/ws");
    let (mut ws, _) = tungstenite::client(url.as_str(), CtlStream::Tls(Box::new(tls)))
        .unwrap_or_else(|e| panic!("wss handshake: {e}"));
    let next = |ws: &mut WebSocket<CtlStream>| loop {
        if let Message::Text(t) = ws.read().unwrap() {
            return serde_json::from_str::<Value>(t.as_str()).unwrap();
        }
    };
    assert_eq!(next(&mut ws)["type"], "hello");
    ws.send(Message::text(
        json!({"type": "auth", "id": 1, "token": token}).to_string(),
    ))
    .unwrap();
    let r = next(&mut ws);
    (ws, r)
}

fn tls_agent(extra: &[&str]) -> AgentProc {
    let mut args = vec!["--tls-self-signed"];
    args.extend_from_slice(extra);
    let a = AgentProc::start(&args);
    assert!(a.url.starts_with("https://"), "{}", a.url);
    a
}

#[test]
fn meshperf_run_pinned_by_fp_runs_tcp_rr_and_tcp_stream_over_tls() {
    let (a, b) = (tls_agent(&[]), tls_agent(&[]));
    assert_ne!(a.fp, b.fp, "every agent makes its own certificate");
    let dir = crate::util::TempDir::new("tls-test");
    for (kind, set, want) in [
        ("tcp_rr", vec!["count=300"], "answered 300 requests"),
        (
            "tcp_stream",
            vec!["count=100", "msg_bytes=64K"],
            "6553600 bytes",
        ),
    ] {
        let json_path = dir.join(format!("{kind}.json"));
        let mut args = vec!["--agent", &a.url, "--agent", &b.url, "--kind", kind];
        for s in &set {
            args.extend(["--set", s]);
        }
        args.extend(["--json", json_path.to_str().unwrap()]);
        let o = run(&args);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{kind}: {out}{}", text(&o.stderr));
        assert!(out.contains(want), "{kind}: {out}");
        // The permalink names the page as the agent serves it: https.
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("https://{}/#r=", a.addr())),
            "{last}"
        );
        let r = result::load(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        assert!(r.steps[0].error.is_none(), "{kind}: {:?}", r.steps[0].error);
        assert!(!r.steps[0].samples.is_empty(), "{kind}: no samples");
    }
}

#[test]
fn a_wrong_fp_is_refused_in_one_line() {
    let (a, b) = (tls_agent(&[]), tls_agent(&[]));
    // b's fingerprint with a's address: a certificate that is not pinned.
    let wrong = a
        .url
        .replace(a.fp.as_deref().unwrap(), b.fp.as_deref().unwrap());
    let o = run(&["--agent", &wrong, "--agent", &b.url, "--kind", "tcp_rr"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("has SHA-256 {}", a.fp.as_deref().unwrap()))
            && err.contains("not the fp= of the URL"),
        "{err}"
    );
    // A malformed fp is a usage error (an https URL without fp is checked
    // against the trusted roots: see the test after this one).
    let base = a.url.split("&fp=").next().unwrap();
    for (url, says) in [
        (format!("{base}&fp=12ab"), "is not a SHA-256"),
        // 64 characters, one byte spelled with a sign: not hex.
        (format!("{base}&fp=+{}", "a".repeat(63)), "is not a SHA-256"),
    ] {
        let o = run(&["--agent", &url, "--agent", &b.url, "--kind", "tcp_rr"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_plain_client_on_the_tls_port_is_told_to_use_https_and_the_agent_serves_on() {
    let a = tls_agent(&[]);
    match util::open(a.port, None) {
        Err(tungstenite::Error::Http(r)) => {
            assert_eq!(r.status(), 400);
            let body = text(r.body().as_deref().unwrap_or(b""));
            assert!(body.contains("https and wss only"), "{body}");
        }
        Ok(_) => panic!("a plain WebSocket was accepted on the TLS port"),
        Err(e) => panic!("{e}"),
    }
    // meshperf run with the http URL says the same in one line.
    let http = a.url.replace("https://", "http://");
    let http = http.split("&fp=").next().unwrap();
    let o = run(&["--agent", http, "--kind", "tcp_rr", "--set", "count=5"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("https and wss only"), "{err}");
    let (_ws, r) = wss(a.port, a.fp.as_deref().unwrap(), &a.token);
    assert_eq!(r["type"], "auth_ok", "{r}");
    // A wrong token over TLS is still a wrong token.
    let (_ws, r) = wss(a.port, a.fp.as_deref().unwrap(), "not-the-token");
    assert_eq!(r["code"], "auth_failed", "{r}");
}

#[test]
fn the_head_deadline_covers_the_tls_handshake_and_a_staller_holds_only_its_slot() {
    let a = tls_agent(&["--head-timeout", "2"]);
    let t0 = Instant::now();
    // One sends nothing; one starts a handshake record (0x16, TLS 1.0,
    // 512 bytes announced) and stops after 5 bytes of it.
    let silent = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // A controller gets in and is served while both stall: before their
    // head deadline (2 s), when a controller queued behind them would get in.
    let (mut ws, r) = wss(a.port, a.fp.as_deref().unwrap(), &a.token);
    assert_eq!(r["type"], "auth_ok", "{r}");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "the controller waited {:?} behind the stallers",
        t0.elapsed()
    );
    for mut s in [silent, partial] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 64];
        // Closed (end of stream or reset), not answered.
        match s.read(&mut buf) {
            Ok(0) | Err(_) => {}
            Ok(n) => panic!("the staller got {n} bytes"),
        }
        let at = t0.elapsed();
        assert!(
            at >= Duration::from_millis(1900) && at < Duration::from_secs(4),
            "closed after {at:?}, the deadline is 2 s"
        );
    }
    // The controller, authenticated, outlives the head deadline.
    ws.send(Message::text(json!({"type": "ping", "id": 2}).to_string()))
        .unwrap();
    let reply = loop {
        if let Message::Text(t) = ws.read().unwrap() {
            break serde_json::from_str::<Value>(t.as_str()).unwrap();
        }
    };
    assert_eq!(reply["id"], 2, "{reply}");
}

fn write(dir: &std::path::Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn tls_cert_and_key_from_pem_files_are_served_and_bad_ones_refused_in_one_line() {
    let dir = crate::util::TempDir::new("tls-pem");
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = write(&dir, "cert.pem", &ck.cert.pem());
    let key = write(&dir, "key.pem", &ck.signing_key.serialize_pem());
    let want: String = sha2::Sha256::digest(ck.cert.der())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let a = AgentProc::start(&["--tls-cert", &cert, "--tls-key", &key]);
    assert_eq!(a.fp.as_deref(), Some(want.as_str()), "{}", a.url);
    let (_ws, r) = wss(a.port, &want, &a.token);
    assert_eq!(r["type"], "auth_ok", "{r}");

    let other = rcgen::KeyPair::generate().unwrap();
    let other_key = write(&dir, "other-key.pem", &other.serialize_pem());
    let not_pem = write(&dir, "not.pem", "hello\n");
    let missing = dir.join("missing.pem").to_str().unwrap().to_string();
    for (args, says) in [
        (
            vec!["--tls-cert", &cert, "--tls-key", &other_key],
            "give the key that belongs to the certificate",
        ),
        (
            vec!["--tls-cert", &not_pem, "--tls-key", &key],
            "no PEM certificate",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &not_pem],
            "--tls-key",
        ),
        (
            vec!["--tls-cert", &missing, "--tls-key", &key],
            "missing.pem",
        ),
        (vec!["--tls-cert", &cert], "--tls-key"),
        (
            vec!["--tls-self-signed", "--tls-cert", &cert, "--tls-key", &key],
            "cannot be used with",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_meshperf"))
            .arg("agent")
            .args(["--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o.stdout));
        assert!(err.contains(says), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        // clap adds its usage and a hint after its one-line error.
        assert!(
            lines.len() == 1 || lines[0].starts_with("error:"),
            "{args:?}: {err}"
        );
    }
}

/// An agent with a certificate from a CA (as an ACME client or a cluster's
/// issuer gives one): `meshperf run` reaches it by an https URL without
/// `fp=`, or by `dns:NAME#tls`, checking the certificate against the trusted
/// roots (here `SSL_CERT_FILE` names the test's CA) and the name; a CA that
/// did not sign it, or a certificate for another name, is refused in one
/// line (exit 1) and nothing runs.
#[test]
fn without_fp_the_certificate_is_checked_against_the_trusted_roots_and_the_name() {
    let dir = crate::util::TempDir::new("tls-ca");
    let ca = |name: &str| {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
    };
    let (ours, theirs) = (ca("meshperf test CA"), ca("another CA"));
    let leaf = |names: &[&str]| {
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        (params.signed_by(&key, &ours).unwrap(), key)
    };
    let (cert, key) = leaf(&["127.0.0.1"]);
    let a = AgentProc::start(&[
        "--tls-cert",
        &write(&dir, "a.pem", &cert.pem()),
        "--tls-key",
        &write(&dir, "a-key.pem", &key.serialize_pem()),
    ]);
    let (cert, key) = leaf(&["agent.example"]);
    let b = AgentProc::start(&[
        "--tls-cert",
        &write(&dir, "b.pem", &cert.pem()),
        "--tls-key",
        &write(&dir, "b-key.pem", &key.serialize_pem()),
    ]);
    let our_ca = write(&dir, "ca.pem", &ours.pem());
    let their_ca = write(&dir, "other-ca.pem", &theirs.pem());
    let run_with = |roots: &str, agent: &str| {
        Command::new(env!("CARGO_BIN_EXE_meshperf"))
            .args([
                "run", "--agent", agent, "--kind", "tcp_rr", "--set", "count=50",
            ])
            .env("SSL_CERT_FILE", roots)
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap()
    };
    let https = |x: &AgentProc| format!("https://127.0.0.1:{}/#token={}", x.port, x.token);
    for agent in [
        https(&a),
        format!("dns:127.0.0.1:{}#token={}&tls", a.port, a.token),
    ] {
        let o = run_with(&our_ca, &agent);
        assert_eq!(o.status.code(), Some(0), "{agent}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains("rtt"), "{}", text(&o.stdout));
    }
    for (roots, agent, says) in [
        (&their_ca, https(&a), "UnknownIssuer"),
        (&our_ca, https(&b), "not valid for name \"127.0.0.1\""),
    ] {
        let o = run_with(roots, &agent);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{agent}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("TLS handshake failed") && err.contains(says),
            "{err}"
        );
    }
}

/// Reads one JSON line.
fn line(r: &mut BufReader<TcpStream>) -> Value {
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    serde_json::from_str(&l).unwrap_or_else(|e| panic!("{l:?}: {e}"))
}

#[test]
fn a_driving_peer_with_the_right_key_but_an_altered_hello_is_refused() {
    let a = AgentProc::start(&[]);
    let mut c = a.connect();
    let prep = c.request(
        json!({"type": "prepare", "test_id": 5, "step": 0, "kind": "tcp_rr", "params": {"count": 5}}),
    );
    assert_eq!(prep["type"], "prepared", "{prep}");
    let key = prep["key"].as_str().unwrap();
    let port = prep["port"].as_u64().unwrap() as u16;
    let hello = |h: &Value| {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut w = s.try_clone().unwrap();
        writeln!(w, "{h}").unwrap();
        BufReader::new(s)
    };
    // Tagged as tcp_rr with the right key, then the kind changed on the way.
    let mut altered = peer_hello(key, "tcp_rr");
    altered["kind"] = json!("tcp_stream");
    let r = line(&mut hello(&altered));
    assert_eq!(
        (&r["ok"], &r["code"]),
        (&json!(false), &json!("bad_key")),
        "{r}"
    );
    assert!(r["message"].as_str().unwrap().contains("tag"), "{r}");
    // A tag of a made-up key, and a peer of the release before (the key
    // in clear, no tag), are refused too.
    let r = line(&mut hello(&peer_hello(&"ab".repeat(16), "tcp_rr")));
    assert_eq!(r["code"], "bad_key", "{r}");
    let r = line(&mut hello(&json!({"key": key, "kind": "tcp_rr"})));
    assert_eq!(r["code"], "bad_key", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("older release"),
        "{r}"
    );
    // The right hello is taken, and the reply is tagged with the same key
    // over the hello's tag and the reply without its tag.
    let good = peer_hello(key, "tcp_rr");
    let r = line(&mut hello(&good));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r, peer_reply_ok(key, good["mac"].as_str().unwrap()));
    let r = c.request(json!({"type": "cancel", "test_id": 5}));
    assert_eq!(r["type"], "cancelled", "{r}");
}

#[test]
fn a_driving_agent_refuses_an_ok_whose_tag_is_wrong() {
    let b = AgentProc::start(&[]);
    let mut cb = b.connect();
    let key = "ab".repeat(16);
    // A fake serving agent: reads the hello, answers ok tagged for another
    // hello (a reply replayed from another test), then waits.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let k = key.clone();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let hello = line(&mut r);
        let good = peer_reply_ok(&k, hello["mac"].as_str().unwrap());
        assert_eq!(good, peer_reply_ok(&k, hello["mac"].as_str().unwrap()));
        let replayed = peer_reply_ok(&k, &"0".repeat(64));
        writeln!(&s, "{replayed}").unwrap();
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest); // until the driving agent closes
    });
    let r = cb.request(
        json!({"type": "start", "test_id": 9, "step": 0, "kind": "tcp_rr",
        "params": {"count": 5}, "peer": {"host": "127.0.0.1", "port": port, "key": key}}),
    );
    let end = if r["type"] == "started" {
        cb.wait_end(9)
    } else {
        r
    };
    assert_eq!(end["code"], "protocol", "{end}");
    assert!(
        end["message"].as_str().unwrap().contains("wrong tag"),
        "{end}"
    );
    h.join().unwrap();
}
