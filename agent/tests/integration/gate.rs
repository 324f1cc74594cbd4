//! `meshperf run --expect` and `--junit` between real agents: a gate that
//! holds, one that a step misses (exit 3, the step named with the figure it
//! measured), the same from a plan file, a matrix naming the pairs that
//! missed, bad expectations as usage errors, and the JUnit report read back
//! with nextest's JUnit reader.

use crate::run::{run, run_ab, text, tmp};
use crate::util::AgentProc;
use meshperf_protocol::result;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

fn url(a: &AgentProc) -> String {
    format!("http://{}/#token={}", a.addr(), a.token)
}

/// The `meshperf run: expectation ...` lines of stderr.
fn gate_lines(stderr: &[u8]) -> Vec<String> {
    text(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("meshperf run: "))
        .filter(|l| l.starts_with("expectation"))
        .map(str::to_string)
        .collect()
}

/// A test case of the report: classname, name, failure or error message.
type Case = (String, String, Option<(NonSuccessKind, String)>);

/// Each test case of the report.
fn cases(xml: &str) -> Vec<Case> {
    let r = Report::deserialize_from_str(xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    assert_eq!(r.test_suites.len(), 1, "{xml}");
    let s = &r.test_suites[0];
    assert_eq!(
        (r.tests, r.failures, r.errors),
        (s.tests, s.failures, s.errors)
    );
    assert_eq!(s.tests, s.test_cases.len(), "{xml}");
    s.test_cases
        .iter()
        .map(|c| {
            let bad = match &c.status {
                TestCaseStatus::NonSuccess { kind, message, .. } => Some((
                    *kind,
                    message
                        .as_ref()
                        .map(|m| m.as_str().to_string())
                        .unwrap_or_default(),
                )),
                _ => None,
            };
            let class = c
                .classname
                .as_ref()
                .map(|n| n.as_str().to_string())
                .unwrap_or_default();
            (class, c.name.as_str().to_string(), bad)
        })
        .collect()
}

/// Two steps of 2 and 4 MiB: `bytes >= 3M` is missed by the first alone,
/// with exactly the bytes it moved; `bytes <= 4M` holds on both; exit 3,
/// and the JUnit report says the same.
#[test]
fn an_expectation_one_step_misses_exits_3_naming_that_step_and_its_figure() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (json, junit) = (tmp("gate-steps.json"), tmp("gate-steps.xml"));
    let o = run_ab(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "msg_bytes=1M",
            "--sweep",
            "count=2,4",
            "--expect",
            "bytes >= 3M",
            "--expect",
            "bytes<=4M",
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let r = result::load(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.steps.len(), 2);
    let moved: Vec<u64> = r
        .steps
        .iter()
        .map(|s| s.summary["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(moved, [2 << 20, 4 << 20], "{err}");
    assert_eq!(
        gate_lines(&o.stderr),
        [
            format!(
                "expectation not met: bytes >= 3M: 1 of 2 steps missed it: step 0 count=2 {} bytes",
                2 << 20
            ),
            format!(
                "expectation met: bytes<=4M on all 2 steps ({} bytes to {} bytes)",
                2 << 20,
                4 << 20
            ),
        ],
        "{err}"
    );
    // The permalink is still the last line of stdout.
    let out = text(&o.stdout);
    assert!(
        out.trim_end().lines().last().unwrap().contains("#r="),
        "{out}"
    );

    let c = cases(&std::fs::read_to_string(&junit).unwrap());
    let names: Vec<&str> = c.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "step 0 count=2",
            "step 0 count=2: bytes >= 3M",
            "step 0 count=2: bytes<=4M",
            "step 1 count=4",
            "step 1 count=4: bytes >= 3M",
            "step 1 count=4: bytes<=4M",
        ]
    );
    let failed: Vec<_> = c.iter().filter(|(_, _, bad)| bad.is_some()).collect();
    assert_eq!(failed.len(), 1, "{c:?}");
    assert_eq!(failed[0].0, "meshperf.expect");
    assert_eq!(
        failed[0].2,
        Some((
            NonSuccessKind::Failure,
            format!("measured {} bytes", 2 << 20)
        ))
    );
    assert_eq!(c[0].0, "meshperf.tcp_stream");
}

/// Expectations that hold leave the exit status 0, from a plan file's
/// `expect` list and --expect together; the report has no failure.
#[test]
fn expectations_that_hold_exit_0_from_a_plan_file_and_flags() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let plan = tmp("gate-plan.json");
    std::fs::write(
        &plan,
        r#"{"kind": "tcp_rr", "params": {"count": 200}, "expect": ["count == 200", "rtt_p99 < 10s"]}"#,
    )
    .unwrap();
    let junit = tmp("gate-plan.xml");
    let o = run_ab(
        &a,
        &b,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--expect",
            "timeouts == 0",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines = gate_lines(&o.stderr);
    assert_eq!(lines.len(), 3, "{err}");
    assert_eq!(lines[0], "expectation met: count == 200: 200");
    assert!(
        lines[1].starts_with("expectation met: rtt_p99 < 10s: "),
        "{err}"
    );
    assert_eq!(lines[2], "expectation met: timeouts == 0: 0");
    let c = cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(c.len(), 4, "{c:?}");
    assert!(c.iter().all(|(_, _, bad)| bad.is_none()), "{c:?}");

    // The same plan with an expectation its steps miss: exit 3.
    std::fs::write(
        &plan,
        r#"{"kind": "tcp_rr", "params": {"count": 200}, "expect": ["count == 199"]}"#,
    )
    .unwrap();
    let o = run_ab(&a, &b, &["--plan", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert_eq!(
        gate_lines(&o.stderr),
        ["expectation not met: count == 199: 1 of 1 steps missed it: step 0 200"]
    );
}

/// In a matrix the line names each pair that missed, driver -> server.
#[test]
fn a_matrix_gate_names_the_pairs_that_missed() {
    let agents: Vec<AgentProc> = (0..3).map(|_| AgentProc::start(&[])).collect();
    let urls: Vec<String> = agents.iter().map(url).collect();
    let junit = tmp("gate-matrix.xml");
    let mut args = vec![
        "--matrix",
        "--kind",
        "tcp_rr",
        "--set",
        "count=50",
        "--expect",
        "rtt_p50 < 1ns",
        "--expect",
        "count == 50",
    ];
    for u in &urls {
        args.extend(["--agent", u.as_str()]);
    }
    args.extend(["--junit", junit.to_str().unwrap()]);
    let o = run(&args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let lines = gate_lines(&o.stderr);
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("expectation not met: rtt_p50 < 1ns: 6 of 6 pairs missed it: "),
        "{err}"
    );
    for (i, a) in agents.iter().enumerate() {
        for (j, b) in agents.iter().enumerate() {
            if i != j {
                let pair = format!("{} -> {} ", a.addr(), b.addr());
                assert_eq!(lines[0].matches(&pair).count(), 1, "{pair}: {}", lines[0]);
            }
        }
    }
    assert_eq!(
        lines[1],
        "expectation met: count == 50 on all 6 steps (50 to 50)"
    );
    let c = cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(c.len(), 18, "{c:?}");
    assert_eq!(
        c.iter().filter(|(_, _, bad)| bad.is_some()).count(),
        6,
        "{c:?}"
    );
}

/// A malformed expectation is a usage error before any traffic; a figure
/// no step has is one after the run (exit 2), with the figures it has.
#[test]
fn bad_expectations_are_usage_errors() {
    let a = AgentProc::start(&[]);
    let ua = url(&a);
    for (e, says) in [
        ("bits_per_second 9G", "give FIGURE OP VALUE"),
        ("rtt_p99 <= 2 fortnights", "is not a time"),
        ("retransmits <= 2ms", "is not a plain number"),
    ] {
        let o = run(&[
            "--agent", &ua, "--kind", "tcp_rr", "--set", "count=10", "--expect", e,
        ]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{e}: {err}");
        assert!(o.stdout.is_empty(), "{e}: no test runs");
    }
    let o = run(&[
        "--agent",
        &ua,
        "--kind",
        "tcp_rr",
        "--set",
        "count=10",
        "--expect",
        "nope >= 1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let lines = gate_lines(&o.stderr);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with(
            "expectation \"nope >= 1\": no figure nope in a tcp_rr step's summary (its figures: "
        ) && lines[0].contains("count"),
        "{}",
        lines[0]
    );
}
