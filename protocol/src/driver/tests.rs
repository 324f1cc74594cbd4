use super::*;
use crate::frame::SampleKind;
use serde_json::{json, Map};

fn agents() -> Vec<AgentRef> {
    vec![
        AgentRef {
            label: "agent A".into(),
            host: "127.0.0.1".into(),
            addresses: vec!["127.0.0.1 (lo)".into(), "10.1.2.3 (eth0)".into()],
            limits: None,
            capabilities: None,
            version: None,
            accepts: None,
            instance: None,
            cores: None,
        },
        AgentRef {
            label: "agent B".into(),
            host: "127.0.0.2".into(),
            addresses: vec![],
            limits: Some(Limits {
                max_streams: 2,
                ..Limits::default()
            }),
            capabilities: None,
            version: None,
            accepts: None,
            instance: None,
            cores: Some(1),
        },
    ]
}

fn step(kind: Kind, transport: Transport, params: Value) -> Step {
    Step {
        index: 3,
        kind,
        params: params.as_object().cloned().unwrap_or_else(Map::new),
        point: vec![],
        repeat: 0,
        transport,
    }
}

fn prepared() -> Event {
    Event::Prepared {
        id: 1,
        test_id: 7,
        port: 5201,
        key: "k".into(),
    }
}

fn refused(message: &str) -> Event {
    serde_json::from_value(json!({"type": "error", "id": 2, "code": "busy", "message": message}))
        .unwrap()
}

fn test_error(message: &str) -> Event {
    serde_json::from_value(
        json!({"type": "error", "test_id": 7, "code": "cancelled", "message": message}),
    )
    .unwrap()
}

fn result(role: Role, bytes: u64) -> Event {
    Event::Result {
        test_id: 7,
        step: 3,
        role,
        kind: Kind::TcpStream,
        summary: json!({ "bytes": bytes }),
    }
}

/// A step of `kind` between agents 0 (serving) and 1, prepared and started.
fn running(kind: Kind) -> StepRun {
    let (mut run, _) = StepRun::new(
        step(kind, Transport::Tcp, json!({})),
        7,
        0,
        1,
        &agents(),
        0.0,
    )
    .unwrap();
    run.on_reply(0, &prepared());
    run.on_reply(1, &Event::Started { id: 2, test_id: 7 });
    run
}

fn is_cancel(o: &Outgoing, agent: usize) -> bool {
    o.agent == agent && matches!(o.request, Request::Cancel { test_id: 7, .. })
}

#[test]
fn unix_kinds_run_inside_the_serving_agent_whatever_agents_are_given() {
    assert_eq!(
        Placement::for_kind(Kind::UnixStream, 0, 1),
        Placement {
            server: 0,
            client: 0
        }
    );
    assert_eq!(
        Placement::for_kind(Kind::UnixRr, 2, 5),
        Placement {
            server: 2,
            client: 2
        }
    );
    assert_eq!(
        Placement::for_kind(Kind::TcpRr, 2, 5),
        Placement {
            server: 2,
            client: 5
        }
    );
    let s = step(Kind::UnixRr, Transport::Unix, json!({}));
    let (mut run, first) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    assert_eq!(first.agent, 0);
    let start = run.on_reply(0, &prepared());
    assert_eq!(start.len(), 1);
    assert_eq!(start[0].agent, 0, "start goes to the agent that prepared");
}

#[test]
fn a_full_step_prepares_starts_and_gathers_both_ends() {
    let s = step(
        Kind::TcpStream,
        Transport::Tcp,
        json!({"direction": "receive"}),
    );
    let (mut run, first) = StepRun::new(s, 7, 0, 1, &agents(), 5.0).unwrap();
    assert!(matches!(
        first.request,
        Request::Prepare {
            test_id: 7,
            step: 3,
            ..
        }
    ));
    let out = run.on_reply(0, &prepared());
    match &out[..] {
        [Outgoing {
            agent: 1,
            request: Request::Start { peer, .. },
        }] => assert_eq!(
            (peer.host.as_str(), peer.port, peer.key.as_str()),
            ("127.0.0.1", 5201, "k")
        ),
        other => panic!("expected one start to agent 1, got {other:?}"),
    }
    assert!(run
        .on_reply(1, &Event::Started { id: 2, test_id: 7 })
        .is_empty());
    // Frames out of order land at their sequence numbers; other tests' are ignored.
    let h = |first_seq, test_id| FrameHeader {
        kind: SampleKind::IntervalBytes,
        role: Role::Client,
        stream: 0,
        test_id,
        step: 3,
        first_seq,
        count: 2,
    };
    assert!(run.on_samples(&h(2, 7), vec![30, 40]));
    assert!(run.on_samples(&h(0, 7), vec![10, 20]));
    assert!(!run.on_samples(&h(0, 8), vec![1, 1]));
    let mut buf = Vec::new();
    frame::encode(&h(4, 7), &[50, 60], &mut buf);
    assert!(run.on_frame(&buf).unwrap());
    assert!(run.on_frame(&buf[..10]).is_err());
    run.on_event(1, &result(Role::Client, 11));
    assert!(!run.is_done());
    run.on_event(0, &result(Role::Server, 12));
    assert!(run.is_done());
    let r = run.result(1.5);
    // direction receive: the driving (client) side received, its summary is primary.
    assert_eq!(r.summary, json!({"bytes": 11}));
    assert_eq!(r.sides.server, Some(json!({"bytes": 12})));
    assert_eq!(r.samples[0].values, vec![10, 20, 30, 40, 50, 60]);
    assert_eq!(
        (r.started_unix, r.wall_seconds, r.error),
        (Some(5.0), Some(1.5), None)
    );
}

#[test]
fn a_refused_start_cancels_the_prepared_side_at_once() {
    let s = step(Kind::TcpRr, Transport::Tcp, json!({}));
    let (mut run, _) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    run.on_reply(0, &prepared());
    let out = run.on_reply(1, &refused("streams: too many"));
    assert_eq!(out.len(), 1);
    assert!(is_cancel(&out[0], 0), "{out:?}");
    assert!(!run.is_done(), "ends when the prepared side has reported");
    assert!(run.cancel().is_empty(), "the cancel already went out");
    run.on_event(0, &test_error("test cancelled"));
    assert!(run.is_done());
    assert_eq!(
        run.result(0.1).error.as_deref(),
        Some("agent B: streams: too many; agent A: test cancelled")
    );
}

#[test]
fn a_refused_prepare_ends_the_step_without_traffic() {
    let s = step(Kind::TcpRr, Transport::Tcp, json!({}));
    let (mut run, _) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    assert!(run.on_reply(0, &refused("this agent is busy")).is_empty());
    assert!(run.is_done());
    assert_eq!(
        run.result(0.0).error.as_deref(),
        Some("agent A: this agent is busy")
    );
}

#[test]
fn an_error_on_one_side_cancels_the_other_and_waits_for_it() {
    let mut run = running(Kind::TcpStream);
    let out = run.on_event(1, &test_error("cannot bind 192.0.2.1"));
    assert_eq!(out.len(), 1);
    assert!(is_cancel(&out[0], 0));
    assert!(!run.is_done(), "the serving side has not ended yet");
    assert!(run.on_event(0, &test_error("test cancelled")).is_empty());
    assert!(run.is_done());
    assert_eq!(
        run.result(0.0).error.as_deref(),
        Some("agent B: cannot bind 192.0.2.1; agent A: test cancelled")
    );
}

#[test]
fn cancel_before_prepared_cancels_what_the_reply_prepared() {
    let s = step(Kind::TcpStream, Transport::Tcp, json!({}));
    let (mut run, _) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    assert!(run.cancel().is_empty());
    let out = run.on_reply(0, &prepared());
    assert_eq!(out.len(), 1);
    assert!(is_cancel(&out[0], 0));
    assert!(!run.is_done());
    run.on_event(0, &test_error("test cancelled"));
    assert!(run.is_done());
    assert_eq!(
        run.result(0.0).error.as_deref(),
        Some("cancelled; agent A: test cancelled")
    );
    // Cancelling a running step asks both, once; identical errors are kept once.
    let mut run = running(Kind::TcpStream);
    let out = run.cancel();
    assert!(out.len() == 2 && is_cancel(&out[0], 0) && is_cancel(&out[1], 1));
    assert!(run.cancel().is_empty());
    run.on_event(0, &test_error("test cancelled"));
    run.on_event(1, &test_error("test cancelled"));
    assert!(run.is_done());
    let e = run.result(0.0).error.unwrap();
    assert_eq!(e, "agent A: test cancelled; agent B: test cancelled");
}

#[test]
fn a_closed_agent_fails_the_step_and_stops_the_other() {
    let mut run = running(Kind::UdpRr);
    assert!(run.on_closed(2).is_empty(), "an agent not in the step");
    let out = run.on_closed(1);
    assert!(out.len() == 1 && is_cancel(&out[0], 0));
    assert!(run.is_done());
    assert_eq!(
        run.result(0.0).error.as_deref(),
        Some("agent B disconnected during the test")
    );
}

#[test]
fn tcp_local_binds_and_connects_to_the_serving_agents_local_address() {
    let s = step(Kind::TcpRr, Transport::TcpLocal, json!({}));
    let (mut run, first) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    match first.request {
        Request::Prepare { params, .. } => assert_eq!(params["server_bind"], "10.1.2.3"),
        r => panic!("{r:?}"),
    }
    match &run.on_reply(0, &prepared())[0].request {
        Request::Start { peer, params, .. } => {
            assert_eq!(peer.host, "10.1.2.3");
            assert_eq!(params["server_bind"], "10.1.2.3");
        }
        r => panic!("{r:?}"),
    }
    // The step's own params are kept as planned (the result shows them).
    run.abandon("gave up");
    assert!(run.result(0.0).params.get("server_bind").is_none());
    let s = step(Kind::TcpRr, Transport::TcpLocal, json!({}));
    let e = StepRun::new(s, 7, 1, 0, &agents(), 0.0).unwrap_err();
    assert!(
        e.contains("agent B has no non-loopback IPv4 address"),
        "{e}"
    );
}

#[test]
fn threads_beyond_an_agent_s_cores_are_refused_before_any_traffic() {
    // Agent B said it may use 1 CPU; A said nothing (not checked).
    for (kind, more) in [(Kind::TcpStream, "streams"), (Kind::TcpRr, "flows")] {
        let s = step(kind, Transport::Tcp, json!({"threads": 2, more: 2}));
        let e = check_step(&s, 0, 1, &agents()).unwrap_err();
        assert_eq!(
            e,
            "agent B would refuse it: threads: 2 is more than the 1 CPUs this agent may use; give at most 1",
            "{kind:?}"
        );
        let one = step(kind, Transport::Tcp, json!({"threads": 1, more: 2}));
        assert_eq!(check_step(&one, 0, 1, &agents()), Ok(()), "{kind:?}");
    }
    let mut only_a = agents();
    only_a[1].cores = None;
    let s = step(
        Kind::TcpStream,
        Transport::Tcp,
        json!({"threads": 2, "streams": 2}),
    );
    assert_eq!(check_step(&s, 0, 1, &only_a), Ok(()));
}

#[test]
fn steps_are_checked_against_both_agents_limits_before_any_traffic() {
    let s = step(Kind::TcpStream, Transport::Tcp, json!({"streams": 4}));
    // Agent B allows 2 streams: refused whichever end it plays.
    let e = check_step(&s, 0, 1, &agents()).unwrap_err();
    assert_eq!(
        e,
        "agent B would refuse it: streams: must be between 1 and 2 (the agent's limit), got 4"
    );
    assert!(check_step(&s, 1, 0, &agents()).is_err());
    // Agent A (default limits) takes it alone; a Unix step never reaches B.
    assert_eq!(check_step(&s, 0, 0, &agents()), Ok(()));
    let u = step(Kind::UnixStream, Transport::Unix, json!({"streams": 4}));
    assert_eq!(check_step(&u, 0, 1, &agents()), Ok(()));
    // udp_rr requests carry an 18-byte header at least.
    let r = step(Kind::UdpRr, Transport::Tcp, json!({"req_bytes": 1}));
    let e = check_step(&r, 0, 0, &agents()).unwrap_err();
    assert!(e.starts_with("agent A would refuse it: req_bytes:"), "{e}");
    let l = step(Kind::TcpRr, Transport::TcpLocal, json!({}));
    assert!(check_step(&l, 1, 0, &agents())
        .unwrap_err()
        .contains("no non-loopback IPv4"));
}

#[test]
fn bind_addresses_are_checked_against_the_addresses_the_agents_listed() {
    let bind = |k: &str, ip: &str| step(Kind::TcpRr, Transport::Tcp, json!({ k: ip }));
    // Agent A (index 0) serves, agent B (index 1) drives.
    let e = check_step(&bind("server_bind", "10.9.9.9"), 0, 1, &agents()).unwrap_err();
    assert_eq!(
        e,
        "agent A would refuse it: server_bind: 10.9.9.9 is not an address of that host (its addresses: 127.0.0.1, 10.1.2.3)"
    );
    assert_eq!(
        check_step(&bind("server_bind", "10.1.2.3"), 0, 1, &agents()),
        Ok(())
    );
    // Loopback and any are every host's.
    assert_eq!(
        check_step(&bind("client_bind", "127.0.0.9"), 1, 0, &agents()),
        Ok(())
    );
    assert_eq!(
        check_step(&bind("client_bind", "::"), 1, 0, &agents()),
        Ok(())
    );
    let e = check_step(&bind("client_bind", "10.9.9.9"), 1, 0, &agents()).unwrap_err();
    assert!(
        e.starts_with("agent A would refuse it: client_bind: 10.9.9.9"),
        "{e}"
    );
    // Agent B listed no addresses: left to the agent.
    assert_eq!(
        check_step(&bind("client_bind", "10.9.9.9"), 0, 1, &agents()),
        Ok(())
    );
}

#[test]
fn an_error_with_a_code_this_build_does_not_know_still_fails_the_step() {
    let mut run = running(Kind::TcpRr);
    let e: Event = serde_json::from_value(
        json!({"type": "error", "test_id": 7, "code": "brand_new_code", "message": "from a newer agent"}),
    )
    .unwrap();
    assert!(
        !run.on_event(1, &e).is_empty(),
        "the other side is cancelled"
    );
    run.on_event(0, &test_error("test cancelled"));
    assert!(run.is_done());
    assert!(run
        .result(0.0)
        .error
        .unwrap()
        .starts_with("agent B: from a newer agent"));
}

/// Found while extending the fuzz target `frame` to what a controller does
/// with frames (issue 10): a 24-byte frame whose first_seq lies far past
/// what its series holds made the controller fill the gap with zeros (up to 2^32 values, 32 GiB: `meshperf run` or the
/// page's tab killed by one frame from a hostile agent). A gap is allowed,
/// frames may arrive out of order, but only as large as `MAX_GAP` past
/// the values received; past it the frame is refused and the step says so.
#[test]
fn a_frame_far_past_its_series_is_refused_not_allocated() {
    let s = step(Kind::TcpRr, Transport::Tcp, json!({}));
    let (mut run, _) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    let h = |first_seq, count| FrameHeader {
        kind: SampleKind::RttNs,
        role: Role::Client,
        stream: 0,
        test_id: 7,
        step: 3,
        first_seq,
        count,
    };
    // In order, and out of order within the gap, as before.
    assert!(run.on_samples(&h(0, 2), vec![1, 2]));
    assert!(run.on_samples(&h(4, 1), vec![5]));
    // 24 bytes asking for 400 MB of zeros: refused, and said.
    assert!(run.on_samples(&h(50_000_000, 1), vec![9]));
    let values = &run.take_samples()[0].values;
    assert_eq!(
        values.len(),
        5,
        "the series grew to {} values",
        values.len()
    );
    assert_eq!(values, &vec![1, 2, 0, 0, 5]);
    let r = run.result(1.0);
    let e = r.error.unwrap_or_default();
    assert!(
        e.contains("agent B") && e.contains("out of sequence"),
        "{e}"
    );
}

/// A mixed fleet: an agent of another release that lacks a kind or one of
/// its parameters is refused before any traffic, in one line naming it,
/// its release and what it lacks; one that did not say (before `accepts`)
/// is left to refuse a parameter itself.
#[test]
fn a_step_an_older_agent_cannot_run_is_refused_naming_it_and_its_release() {
    let mut a = agents();
    let mut accepts = std::collections::BTreeMap::new();
    accepts.insert(
        "tcp_rr".to_string(),
        vec!["count".to_string(), "req_bytes".to_string()],
    );
    a[1].version = Some("0.0.9".into());
    a[1].capabilities = Some(vec![Kind::TcpRr, Kind::UdpRr]);
    a[1].accepts = Some(accepts);
    let s = step(Kind::Path, Transport::Tcp, json!({}));
    assert_eq!(
        check_step(&s, 0, 1, &a).unwrap_err(),
        "agent B (meshperf 0.0.9) does not run path (a release before it): upgrade it"
    );
    // A kind its release knows (in accepts) and its platform does not run
    // (not in capabilities): the agent's own refusal says why.
    a[1].accepts
        .as_mut()
        .unwrap()
        .insert("unix_stream".into(), vec![]);
    let u = step(Kind::UnixStream, Transport::Unix, json!({}));
    assert_eq!(check_step(&u, 1, 1, &a), Ok(()));
    // Without accepts (a release before it), the kinds it runs are all it
    // tells.
    let mut old = a.clone();
    old[1].accepts = None;
    assert_eq!(
        check_step(&s, 0, 1, &old).unwrap_err(),
        "agent B (meshperf 0.0.9) does not run path (it runs tcp_rr, udp_rr): upgrade it"
    );
    let s = step(
        Kind::TcpRr,
        Transport::Tcp,
        json!({"count": 5, "resp_bytes": 9}),
    );
    assert_eq!(
        check_step(&s, 1, 0, &a).unwrap_err(),
        "agent B (meshperf 0.0.9) does not take tcp_rr's parameter resp_bytes (a release before it): upgrade it, or leave resp_bytes out"
    );
    let s = step(
        Kind::TcpRr,
        Transport::Tcp,
        json!({"count": 5, "req_bytes": 9}),
    );
    assert_eq!(check_step(&s, 1, 0, &a), Ok(()));
    // Agent A said nothing of its kinds or parameters: the agent decides.
    let s = step(
        Kind::TcpRr,
        Transport::Tcp,
        json!({"count": 5, "resp_bytes": 9}),
    );
    assert_eq!(check_step(&s, 0, 0, &a), Ok(()));
}

/// A newer agent's capabilities with a kind this build does not know still
/// say which known kinds it runs; its `accepts` is read as given.
#[test]
fn a_newer_agent_s_unknown_kinds_are_left_out() {
    let r: AgentRef = serde_json::from_value(json!({
        "label": "agent N", "host": "h",
        "capabilities": ["tcp_rr", "carrier_pigeon", "path"],
        "version": "9.0.0",
        "accepts": {"carrier_pigeon": ["wings"], "tcp_rr": ["count"]}
    }))
    .unwrap();
    assert_eq!(r.capabilities, Some(vec![Kind::TcpRr, Kind::Path]));
    assert_eq!(r.accepts.unwrap()["carrier_pigeon"], ["wings"]);
    let r: AgentRef = serde_json::from_value(json!({"label": "a", "host": "h"})).unwrap();
    assert_eq!(r.capabilities, None);
}

#[test]
fn a_stamp_step_starts_one_side_at_the_serving_agent_without_a_prepare() {
    let s = step(
        Kind::Stamp,
        Transport::Tcp,
        json!({"target": "stamp://192.0.2.9:8862"}),
    );
    let (mut run, first) = StepRun::new(s.clone(), 7, 0, 1, &agents(), 0.0).unwrap();
    match &first {
        Outgoing {
            agent: 0,
            request: Request::Start { peer, kind, .. },
        } => {
            assert_eq!(*kind, Kind::Stamp);
            assert_eq!(
                (peer.host.as_str(), peer.port, peer.key.as_str()),
                ("192.0.2.9", 8862, "")
            );
        }
        other => panic!("expected a start to agent 0, got {other:?}"),
    }
    assert!(run
        .on_reply(0, &Event::Started { id: 2, test_id: 7 })
        .is_empty());
    assert!(!run.is_done());
    run.on_event(
        0,
        &Event::Result {
            test_id: 7,
            step: 3,
            role: Role::Client,
            kind: Kind::Stamp,
            summary: json!({"sent": 3}),
        },
    );
    assert!(run.is_done(), "its one side has reported");
    assert_eq!(run.result(0.1).summary, json!({"sent": 3}));
    // A refused start (not allowed by --allow-target) ends the step: there
    // is nothing prepared to cancel.
    let (mut run, _) = StepRun::new(s, 7, 0, 1, &agents(), 0.0).unwrap();
    assert!(run
        .on_reply(0, &refused("not inside --allow-target"))
        .is_empty());
    assert!(run.is_done());
    assert_eq!(
        run.result(0.1).error.as_deref(),
        Some("agent A: not inside --allow-target")
    );
    // A target that does not parse fails before any request.
    let bad = step(Kind::Stamp, Transport::Tcp, json!({"target": "iperf3://h"}));
    assert!(StepRun::new(bad, 7, 0, 1, &agents(), 0.0).is_err());
}
