//! `udp_rr`: UDP request/response latency (udp_req_timo/udp_resp, netperf
//! UDP_RR, sockperf ping-pong). One request in flight at a time; each reply
//! is matched to its request by sequence number and token, so a late reply
//! is counted as `bad` and never taken for the answer to a later request.
//! The serving side answers only the address bound during set-up (see
//! [`super::udp`]); everything else is counted as `foreign` and dropped.

use super::udp::{self, Clock, Flow, Hdr, UdpTest, END, REPLY, REQUEST};
use super::{TestCtx, TestError};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::params::{Kind, Limits, ParamError, UdpRrParams, UdpSocketParams};
use meshperf_wasm::stats::Summary;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Consecutive timeouts after which the peer is taken to have stopped answering.
const GIVE_UP: u64 = 10;

impl UdpTest for UdpRrParams {
    const KIND: Kind = Kind::UdpRr;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        UdpRrParams::parse(v, limits)
    }
    fn sock(&self) -> &UdpSocketParams {
        &self.sock
    }
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<Value, TestError> {
        respond(ctx, self, f)
    }
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<Value, TestError> {
        drive(ctx, self, f)
    }
}

/// Serving side: answer requests from the bound peer until it says done.
fn respond(ctx: &TestCtx, p: &UdpRrParams, mut f: Flow) -> Result<Value, TestError> {
    f.sock
        .set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(udp::io_err)?;
    let mut buf = vec![0u8; 65536];
    let mut reply = vec![0u8; p.resp_bytes as usize];
    let (mut received, mut replied, mut bad) = (0u64, 0u64, 0u64);
    let mut note = None;
    let mut checked = Instant::now();
    let mut end_seen = false;
    loop {
        match f.sock.recv_from(&mut buf) {
            Ok((n, from)) if from == f.peer => match Hdr::read(&buf[..n]) {
                Some(h) if h.token == f.token && h.kind == REQUEST => {
                    received += 1;
                    Hdr { kind: REPLY, ..h }.write(&mut reply);
                    if f.sock.send_to(&reply, f.peer).is_ok() {
                        replied += 1;
                    }
                }
                Some(h) if h.token == f.token && h.kind == udp::HELLO => {}
                // The requester's `done` is on its way (or here): look now
                // rather than at the next 20 ms check.
                Some(h) if h.token == f.token && h.kind == END => end_seen = true,
                _ => bad += 1,
            },
            Ok(_) => f.foreign += 1,
            Err(e) if udp::is_timeout(&e) => {}
            Err(e) => return Err(udp::io_err(e)),
        }
        if end_seen || checked.elapsed() >= Duration::from_millis(20) {
            checked = Instant::now();
            if ctx.cancelled() {
                return Err(TestError::new("cancelled", "test cancelled"));
            }
            // After END the line was sent first; on a network it may still
            // be on its way.
            let wait = if end_seen {
                Duration::from_millis(50)
            } else {
                Duration::ZERO
            };
            end_seen = false;
            match f.line.recv(wait) {
                Ok(Some(v)) if v["op"] == "done" => break,
                Ok(_) => {}
                Err(e) => {
                    note = Some(format!("the driving agent went away ({e})"));
                    break;
                }
            }
        }
    }
    let mut out =
        json!({"received": received, "replied": replied, "bad": bad, "foreign": f.foreign});
    if note.is_none() {
        let _ = f.line.send(&json!({"op": "done", "server": out}));
    }
    out["complete"] = json!(note.is_none());
    out["note"] = json!(note);
    out["peer"] = json!(f.peer.to_string());
    if let (Value::Object(o), Value::Object(a)) = (&mut out, udp::applied(&f.sock, &p.sock)) {
        o.extend(a);
    }
    Ok(out)
}

/// Driving side: `count` requests, one at a time, each with its own timeout.
fn drive(ctx: &TestCtx, p: &UdpRrParams, mut f: Flow) -> Result<Value, TestError> {
    let timeout = Duration::from_millis(p.timeout_ms);
    f.sock
        .set_read_timeout(Some(timeout))
        .map_err(udp::io_err)?;
    let applied = udp::applied(&f.sock, &p.sock);
    let clock = Clock::new();
    let mut req = vec![0u8; p.req_bytes as usize];
    let mut buf = vec![0u8; 65536];
    let mut rtt: Vec<u64> = Vec::with_capacity(p.count as usize);
    let (mut sent, mut timeouts, mut bad, mut in_a_row) = (0u64, 0u64, 0u64, 0u64);
    let mut note: Option<String> = None;
    let mut tick = Instant::now();
    let interval = Duration::from_millis(p.interval_ms);
    for seq in 0..p.count {
        let t0 = Instant::now();
        Hdr {
            kind: REQUEST,
            token: f.token,
            seq,
            t_ns: clock.ns(t0),
        }
        .write(&mut req);
        if let Err(e) = f.sock.send(&req) {
            note = Some(format!("sending request {seq} failed: {e}"));
            break;
        }
        sent += 1;
        let deadline = t0 + timeout;
        let mut shortened = false;
        let answered = loop {
            match f.sock.recv(&mut buf) {
                Ok(n) => {
                    let t1 = Instant::now();
                    match Hdr::read(&buf[..n]) {
                        Some(h)
                            if h.kind == REPLY
                                && h.token == f.token
                                && h.seq == seq
                                && n as u64 == p.resp_bytes =>
                        {
                            rtt.push((t1 - t0).as_nanos() as u64);
                            break true;
                        }
                        _ => bad += 1,
                    }
                    let left = deadline.saturating_duration_since(t1);
                    if left.is_zero() {
                        break false;
                    }
                    f.sock.set_read_timeout(Some(left)).map_err(udp::io_err)?;
                    shortened = true;
                }
                Err(e) if udp::is_timeout(&e) => break false,
                Err(e) => {
                    note = Some(format!("the peer's UDP port stopped answering ({e})"));
                    break false;
                }
            }
        };
        if shortened {
            f.sock
                .set_read_timeout(Some(timeout))
                .map_err(udp::io_err)?;
        }
        if answered {
            in_a_row = 0;
        } else {
            timeouts += 1;
            in_a_row += 1;
        }
        if note.is_some() {
            break;
        }
        if in_a_row >= GIVE_UP {
            note = Some(format!(
                "the peer stopped answering: {GIVE_UP} requests in a row timed out after {} ms each",
                p.timeout_ms
            ));
            break;
        }
        if tick.elapsed() >= interval {
            tick = Instant::now();
            if ctx.cancelled() {
                return Err(TestError::new("cancelled", "test cancelled"));
            }
            let bytes = sent * p.req_bytes + rtt.len() as u64 * p.resp_bytes;
            udp::progress(ctx, clock.start, bytes, sent as f64 / p.count as f64);
        }
    }
    let seconds = clock.start.elapsed().as_secs_f64();
    let server = match f.line.send(&json!({"op": "done", "sent": sent})) {
        Ok(()) => {
            // A hint on the UDP path, which the responder is reading: it
            // then reads the line at once. If the datagram is lost it finds
            // the line within 20 ms anyway.
            let mut end = [0u8; udp::UDP_HEADER_LEN as usize];
            Hdr {
                kind: END,
                token: f.token,
                seq: sent,
                t_ns: clock.ns(Instant::now()),
            }
            .write(&mut end);
            let _ = f.sock.send(&end);
            Ok(())
        }
        Err(e) => Err(e),
    };
    let server = match server {
        Ok(()) => f
            .line
            .expect("done", Duration::from_secs(5), "no end line from the peer"),
        Err(e) => Err(udp::gone(e)),
    };
    let server = match server {
        Ok(v) => v["server"].clone(),
        Err(e) => {
            note.get_or_insert(e.message);
            Value::Null
        }
    };
    ctx.sink
        .samples(SampleKind::RttNs, ctx.role, ctx.test_id, ctx.step, 0, &rtt);
    let us: Vec<f64> = rtt.iter().map(|&n| n as f64 / 1e3).collect();
    let stats = Summary::new(&us).ok();
    let tpf = if sent > 0 {
        seconds * 1e6 / sent as f64
    } else {
        0.0
    };
    let mbs = if tpf > 0.0 {
        (p.req_bytes + p.resp_bytes) as f64 / tpf
    } else {
        0.0
    };
    let (ave, min, max) = stats.map_or((0.0, 0.0, 0.0), |s| (s.mean, s.min, s.max));
    let line = format!(
        "{}; {}; 1; {}; {}; {:.3}; {:.5}; {:.3}; {:.3}; {:.3}; {}",
        p.resp_bytes, p.req_bytes, sent, bad, tpf, mbs, ave, min, max, timeouts
    );
    let mut out = json!({
        "count": sent, "answered": rtt.len(), "timeouts": timeouts, "bad": bad,
        "foreign": server["foreign"], "server_bad": server["bad"], "server_received": server["received"],
        "rtt_us": udp::stats_json(stats.as_ref()),
        "req_bytes": p.req_bytes, "resp_bytes": p.resp_bytes, "timeout_ms": p.timeout_ms,
        "seconds": seconds, "time_per_frame_us": tpf, "mbytes_per_second": mbs,
        "peer": f.peer.to_string(), "complete": note.is_none(), "note": note, "line": line,
    });
    if let (Value::Object(o), Value::Object(a)) = (&mut out, applied) {
        o.extend(a);
    }
    Ok(out)
}
