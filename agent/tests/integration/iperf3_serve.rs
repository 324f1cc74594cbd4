//! `meshperf agent --iperf3`: the real iperf3 3.12 client (Debian's,
//! /usr/bin/iperf3) against the agent, its bytes checked against iperf3's
//! own JSON (-J).

use crate::iperf3::{client, f, have_iperf3, IPERF3};
use crate::util::{logged, AgentProc};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

/// An agent answering iperf3 clients, and its port.
fn iperf3_agent(extra: &[&str]) -> (AgentProc, u16) {
    let mut args = vec!["--iperf3", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let a = AgentProc::start_logged(&args);
    let l = logged(&a, &["iperf3 clients on"]);
    let port = l
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|x| x.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .expect("the iperf3 port");
    (a, port)
}

/// `iperf3 -J ARGS` against the agent, which must succeed.
fn ok_json(port: u16, args: &[&str]) -> Value {
    let o = client(port, &[args, &["-J"]].concat());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    // iperf3 -J exits 0 with an "error" key too.
    assert!(
        o.status.success() && v.get("error").is_none(),
        "iperf3 {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    v
}

fn within(a: f64, b: f64, share: f64) -> bool {
    (a - b).abs() <= share * a.max(b)
}

#[test]
fn the_agent_answers_iperf3_clients_tcp_both_ways() {
    if !have_iperf3() {
        return;
    }
    let (a, port) = iperf3_agent(&[]);
    // Byte-bounded: exactly, both ways.
    let v = ok_json(port, &["-n", "20M"]);
    assert_eq!(f(&v, "end.sum_sent.bytes"), 20.0 * 1048576.0);
    assert_eq!(
        f(&v, "end.sum_received.bytes"),
        20.0 * 1048576.0,
        "the agent's count"
    );
    logged(&a, &["tcp normal, 1 stream, received 20971520 bytes"]);
    let v = ok_json(port, &["-n", "10M", "-R"]);
    assert_eq!(
        f(&v, "end.sum_received.bytes"),
        10.0 * 1048576.0,
        "what iperf3 received"
    );
    assert_eq!(
        f(&v, "end.sum_sent.bytes"),
        10.0 * 1048576.0,
        "the agent's count"
    );
    logged(&a, &["tcp reverse, 1 stream, sent 10485760 bytes"]);
    // Timed: within 2%.
    for args in [
        &["-t", "2"][..],
        &["-t", "2", "-R"],
        &["-t", "2", "-P", "2"],
    ] {
        let v = ok_json(port, args);
        let (s, r) = (f(&v, "end.sum_sent.bytes"), f(&v, "end.sum_received.bytes"));
        assert!(
            s > 0.0 && within(s, r, 0.02),
            "{args:?}: sent {s}, received {r}"
        );
        let streams = v["end"]["streams"].as_array().unwrap().len();
        assert_eq!(streams, if args.contains(&"-P") { 2 } else { 1 });
        assert!(f(&v, "end.sum_received.seconds") > 1.5, "{args:?}");
    }
}

#[test]
fn the_agent_answers_iperf3_clients_udp_at_a_rate_both_ways() {
    if !have_iperf3() {
        return;
    }
    let (_a, port) = iperf3_agent(&[]);
    for args in [
        &["-u", "-b", "10M", "-t", "2"][..],
        &["-u", "-b", "10M", "-t", "2", "-R"],
    ] {
        let v = ok_json(port, args);
        let (s, r) = (f(&v, "end.sum_sent.bytes"), f(&v, "end.sum_received.bytes"));
        // At most 10 Mbit/s over the sender's own time (and a datagram:
        // the first goes at once); a busy host may send less, never more.
        let (secs, blk) = (
            f(&v, "end.sum_sent.seconds"),
            f(&v, "start.test_start.blksize"),
        );
        assert!(
            s > 0.0 && s <= 10e6 / 8.0 * secs * 1.01 + blk,
            "{args:?}: sent {s} in {secs} s"
        );
        assert!(within(s, r, 0.02), "{args:?}: sent {s}, received {r}");
        let (sp, rp) = (
            f(&v, "end.sum_sent.packets"),
            f(&v, "end.sum_received.packets"),
        );
        assert!(
            within(sp, rp, 0.02),
            "{args:?}: packets sent {sp}, counted {rp}"
        );
        assert!(f(&v, "end.sum_received.jitter_ms") >= 0.0);
    }
    // The 64-bit packet counter.
    let v = ok_json(
        port,
        &["-u", "-b", "5M", "-n", "1M", "--udp-counters-64bit"],
    );
    assert!(f(&v, "end.sum_received.packets") > 0.0);
}

#[test]
fn iperf3_options_the_agent_does_not_do_are_refused_and_it_serves_on() {
    if !have_iperf3() {
        return;
    }
    let (a, port) = iperf3_agent(&["--max-streams", "4", "--max-duration", "5"]);
    for (args, option, says) in [
        (
            &["--bidir", "-t", "1"][..],
            "--bidir",
            "not implemented yet",
        ),
        (
            &["-P", "8", "-t", "1"],
            "-P 8",
            "parallel streams too large",
        ),
        (&["-t", "30"], "-t 30", "test duration too long"),
        (&["-O", "1", "-t", "1"], "--omit", "--omit"),
    ] {
        let o = client(port, args);
        assert!(!o.status.success(), "{args:?}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("iperf3: error"))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {text}");
        assert!(errors[0].contains(says), "{args:?}: {text}");
        let l = logged(&a, &["refused: ", option]);
        assert_eq!(l.lines().count(), 1);
        // Serves the next client.
        let v = ok_json(port, &["-n", "1M"]);
        assert_eq!(f(&v, "end.sum_received.bytes"), 1048576.0);
    }
}

#[test]
fn an_iperf3_client_that_leaves_mid_test_leaves_the_agent_serving() {
    if !have_iperf3() {
        return;
    }
    let (a, port) = iperf3_agent(&[]);
    for reverse in [false, true] {
        let mut args = vec!["-t", "30"];
        if reverse {
            args.push("-R");
        }
        let mut c = under_way(port, &args);
        c.kill().unwrap();
        c.wait().unwrap();
        let want = usize::from(reverse) + 1;
        let t0 = std::time::Instant::now();
        while a.log().iter().filter(|l| l.contains("mid-test")).count() < want {
            assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", a.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        let v = ok_json(port, &["-n", "1M"]);
        assert_eq!(f(&v, "end.sum_received.bytes"), 1048576.0);
    }
}

/// `iperf3 -c` with `args` against the agent, once its first interval's
/// line came (the test is under way).
fn under_way(port: u16, args: &[&str]) -> std::process::Child {
    use std::io::BufRead;
    let p = port.to_string();
    // --forceflush: each interval's line as it is printed (a pipe is
    // otherwise block-buffered until iperf3 ends).
    let mut c = Command::new(IPERF3)
        .args(["-c", "127.0.0.1", "-p", &p, "--forceflush"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "iperf3 ended early");
        if line.contains("/sec") {
            break;
        }
    }
    // The rest of its output is read (and dropped) so it never blocks.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    c
}

#[test]
fn a_second_iperf3_client_during_a_test_hears_the_agent_is_busy() {
    if !have_iperf3() {
        return;
    }
    let (a, port) = iperf3_agent(&[]);
    let mut first = under_way(port, &["-t", "3"]);
    let o = client(port, &["-t", "1"]);
    let text = String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success());
    assert!(text.contains("the server is busy running a test"), "{text}");
    logged(&a, &["refused: busy with another client's test"]);
    assert!(first.wait().unwrap().success(), "the first test went on");
    logged(&a, &["tcp normal, 1 stream, received"]);
}
