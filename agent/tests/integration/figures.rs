//! Issue 15's figures and printed lines, each as a seed's command line in
//! `meshperf run` form between real agents and the line it must print:
//! receive times no shorter than the send, udpmon's headings, its 13-field
//! line and `-T` in hexadecimal, and `--quiet` records under a heading with
//! the link kept off stdout unless asked for.

use crate::run::{run_ab, text, tmp};
use crate::util::AgentProc;
use meshperf_protocol::result::{self, RunResult};

/// `meshperf run` with `a` serving and `b` driving and `args`, which must
/// succeed: its stdout, its stderr and the result it wrote.
fn run_json(
    a: &AgentProc,
    b: &AgentProc,
    name: &str,
    args: &[&str],
) -> (String, String, RunResult) {
    let json = tmp(&format!("figures-{name}.json"));
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let o = run_ab(a, b, &all);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, err, r)
}

/// Issue 15 item 1 for `unix_stream` (tcp_stream's is in tcp.rs): both
/// ends run in one agent, and the receiving side started its own clock
/// once it had accepted the connections, after the sender had begun to
/// fill the socket buffers: 3 streams of 2000 x 1000 B, 8 us apart,
/// received in less time than they took to send, 6 runs in 6.
#[test]
fn a_unix_stream_receiver_is_never_faster_than_its_sender() {
    let a = AgentProc::start(&[]);
    let (out, _, r) = run_json(
        &a,
        &a,
        "unix-recv-3x2000",
        &[
            "--kind",
            "unix_stream",
            "--set",
            "streams=3",
            "--set",
            "count=2000",
            "--set",
            "msg_bytes=1000",
            "--set",
            "wait_us=8",
            "--repeat",
            "4",
        ],
    );
    assert_eq!(r.steps.len(), 4);
    for s in &r.steps {
        let secs =
            |side: &Option<serde_json::Value>| side.as_ref().unwrap()["seconds"].as_f64().unwrap();
        let (ts, tr) = (secs(&s.sides.client), secs(&s.sides.server));
        assert_eq!(s.summary["bytes"], 6_000_000);
        // The last write may return a moment after its bytes were read.
        assert!(
            tr + 100e-6 >= ts,
            "repeat {}: received in {tr} s what took {ts} s to send\n{out}",
            s.repeat
        );
    }
}
