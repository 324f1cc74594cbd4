//! `udp_stream`: paced UDP bursts (udp_bw_mon/udp_bw_resp). The seed's
//! exchange runs over the TCP control connection, so it never times out on a
//! lost control datagram: the sender asks `zero`, the receiver answers
//! `zeroed`, the burst follows, then the sender's `stats` (its own figures)
//! is answered by the receiver's `stats` with the whole summary, computed with
//! `meshperf_wasm::udp` so the page derives the same numbers from the raw
//! samples. Pacing follows absolute deadlines `start + k * wait_us`; the last
//! [`SPIN`] before a deadline spins because timer wake-ups arrive late.

use super::udp::{self, Clock, Flow, Hdr, Opts, DATA, HELLO};
use super::udp_batch::{RecvBatch, SendBatch};
use super::{peer, TestCtx, TestError};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::PeerAddr;
use meshperf_protocol::params::{Direction, Kind, UdpStreamParams};
use meshperf_wasm::stats::Summary;
use serde_json::{json, Value};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

/// Time before a send deadline that is spun rather than slept.
const SPIN: Duration = Duration::from_micros(250);
/// Datagrams per sendmmsg/recvmmsg call.
const BATCH: usize = 32;

fn opts(p: &UdpStreamParams) -> Opts {
    Opts {
        tos: p.tos,
        sndbuf: p.sndbuf,
        rcvbuf: p.rcvbuf,
    }
}

fn binds(p: &UdpStreamParams) -> meshperf_protocol::params::StreamParams {
    udp::bind_params(p.client_bind, p.server_bind)
}

/// Serving side set-up (see [`super::prepare`]).
pub fn prepare(
    params: &Value,
    env: &super::EngineEnv,
) -> Result<(u16, [u8; 16], super::Job), super::Refusal> {
    let p =
        UdpStreamParams::parse(params, env.limits).map_err(|e| ("bad_params", e.to_string()))?;
    let (listener, sock) = udp::serve_sockets(env, &binds(&p), &opts(&p))?;
    let port = listener
        .local_addr()
        .map_err(|e| ("io", e.to_string()))?
        .port();
    let key = peer::new_key();
    Ok((
        port,
        key,
        Box::new(move |ctx| serve(ctx, p, listener, key, sock)),
    ))
}

/// Driving side set-up (see [`super::start`]).
pub fn start(
    params: Value,
    peer_addr: PeerAddr,
    env: &super::EngineEnv,
) -> Result<super::Job, super::Refusal> {
    let p =
        UdpStreamParams::parse(&params, env.limits).map_err(|e| ("bad_params", e.to_string()))?;
    super::bind::check_client(&binds(&p), &peer_addr)?;
    Ok(Box::new(move |ctx| {
        let r = udp::drive_flow(
            &ctx,
            &peer_addr,
            Kind::UdpStream,
            &params,
            &opts(&p),
            &binds(&p),
        )
        .and_then(|f| run(&ctx, &p, f, p.direction == Direction::Send));
        ctx.report(r);
        ctx.finished();
    }))
}

fn serve(ctx: TestCtx, p: UdpStreamParams, l: TcpListener, key: [u8; 16], sock: UdpSocket) {
    let r = udp::serve_flow(&ctx, l, &key, Kind::UdpStream, sock)
        .and_then(|f| run(&ctx, &p, f, p.direction == Direction::Receive));
    ctx.report(r);
    ctx.finished();
}

fn run(ctx: &TestCtx, p: &UdpStreamParams, f: Flow, sending: bool) -> Result<Value, TestError> {
    let applied = udp::applied(&f.sock, &opts(p));
    let peer = f.peer.to_string();
    let mut out = if sending {
        send(ctx, p, f)?
    } else {
        receive(ctx, p, f)?
    };
    if let (Value::Object(o), Value::Object(a)) = (&mut out, applied) {
        o.extend(a);
        // This side's view: the address its UDP flow is bound to.
        o.insert("peer".into(), json!(peer));
    }
    Ok(out)
}

/// The sender: zero, paced burst, stats.
fn send(ctx: &TestCtx, p: &UdpStreamParams, mut f: Flow) -> Result<Value, TestError> {
    f.line.send(&json!({"op": "zero"})).map_err(udp::gone)?;
    f.line.expect(
        "zeroed",
        Duration::from_secs(5),
        "the receiving agent did not answer zero",
    )?;
    let fd = f.sock.as_raw_fd();
    let mut batch = SendBatch::new(
        BATCH,
        p.pkt_bytes as usize,
        (!f.connected).then_some(f.peer),
    );
    let wait_ns = p.wait_us * 1e3;
    let mut times: Vec<u64> = Vec::with_capacity(p.count as usize);
    let mut note = None;
    let clock = Clock::new();
    let mut tick = clock.start;
    let mut k = 0u64;
    while k < p.count {
        let now = Instant::now();
        let left = p.count - k;
        let due = if wait_ns <= 0.0 {
            left
        } else {
            ((clock.ns(now) as f64 / wait_ns) as u64 + 1)
                .saturating_sub(k)
                .min(left)
        }
        .min(BATCH as u64) as usize;
        if due == 0 {
            let next = clock.start + Duration::from_nanos((k as f64 * wait_ns) as u64);
            let gap = next.saturating_duration_since(now);
            if gap > SPIN {
                std::thread::sleep(gap - SPIN);
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        let t = clock.ns(now);
        for i in 0..due {
            let h = Hdr {
                kind: DATA,
                token: f.token,
                seq: k + i as u64,
                t_ns: t,
            };
            h.write(batch.buf(i));
        }
        match batch.send(fd, due) {
            Ok(n) => {
                times.extend(std::iter::repeat(t).take(n));
                k += n as u64;
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || udp::is_timeout(&e) => {}
            Err(e) => {
                note = Some(format!("sending stopped after {k} datagrams: {e}"));
                break;
            }
        }
        if now.duration_since(tick) >= Duration::from_millis(100) {
            tick = now;
            if ctx.cancelled() {
                return Err(TestError::new("cancelled", "test cancelled"));
            }
            udp::progress(ctx, clock.start, k * p.pkt_bytes, k as f64 / p.count as f64);
        }
    }
    let send_seconds = times
        .first()
        .map_or(0.0, |&t0| (clock.now_ns() - t0) as f64 / 1e9);
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e3)
        .collect();
    let gap = Summary::new(&gaps).ok();
    let errs: Vec<f64> = gaps.iter().map(|g| (g - p.wait_us).abs()).collect();
    let snd = json!({
        "sent": k, "send_seconds": send_seconds, "send_gap_us": udp::stats_json(gap.as_ref()),
        "pacing_error_us": {
            "mean": gap.map(|g| g.mean - p.wait_us),
            "p99": Summary::new(&errs).ok().map(|s| s.p99),
        },
        "from": f.sock.local_addr().map(|a| a.ip().to_string()).ok(),
        "to": f.peer.ip().to_string(),
    });
    ctx.sink.samples(
        SampleKind::SendTimeNs,
        ctx.role,
        ctx.test_id,
        ctx.step,
        0,
        &times,
    );
    let wait = Duration::from_millis(p.timeout_ms) + Duration::from_secs(5);
    let reply = f
        .line
        .send(&json!({"op": "stats", "send": snd}))
        .map_err(udp::gone)
        .and_then(|_| {
            f.line.expect(
                "stats",
                wait,
                "the receiving agent did not report its statistics",
            )
        });
    match reply {
        Ok(v) if note.is_none() => Ok(v["summary"].clone()),
        Ok(v) => Ok(summary(p, &snd, &v["receive"], note, 0)),
        Err(e) => Ok(summary(p, &snd, &Value::Null, note.or(Some(e.message)), 1)),
    }
}

/// The receiver: records every datagram until the burst is over.
fn receive(ctx: &TestCtx, p: &UdpStreamParams, mut f: Flow) -> Result<Value, TestError> {
    let kernel = udp::enable_timestamps(&f.sock);
    if p.rcvbuf.is_none() {
        udp::force_rcvbuf(&f.sock, 8 << 20);
    }
    f.line.expect(
        "zero",
        Duration::from_secs(10),
        "the sending agent did not start",
    )?;
    f.sock
        .set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(udp::io_err)?;
    let fd = f.sock.as_raw_fd();
    let mut batch = RecvBatch::new(BATCH, p.pkt_bytes.max(2048) as usize);
    let cap = p.count.min(1 << 22) as usize;
    let (mut seq, mut arr, mut snt) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    let (mut user_ts, mut prev) = (0u64, 0u64);
    let timeout = Duration::from_millis(p.timeout_ms);
    let quiet = timeout + Duration::from_secs_f64(2.0 * p.wait_us / 1e6);
    let mut stats: Option<(Value, Instant)> = None;
    let mut note = None;
    let clock = Clock::new();
    f.line.send(&json!({"op": "zeroed"})).map_err(udp::gone)?;
    let (mut last, mut checked) = (Instant::now(), Instant::now());
    loop {
        match batch.recv(fd) {
            Ok(n) => {
                let now = Instant::now();
                for i in 0..n {
                    let (data, from, ts) = batch.get(i);
                    if !f.connected && from != Some(f.peer) {
                        f.foreign += 1;
                        continue;
                    }
                    match Hdr::read(data) {
                        Some(h) if h.token == f.token && h.kind == DATA => {
                            let a = match ts {
                                Some((s, ns)) => clock.since_realtime(s, ns),
                                None => {
                                    user_ts += 1;
                                    clock.ns(now)
                                }
                            };
                            prev = prev.max(a);
                            seq.push(h.seq);
                            arr.push(prev);
                            snt.push(h.t_ns);
                        }
                        Some(h) if h.token == f.token && h.kind == HELLO => {}
                        _ => f.foreign += 1,
                    }
                }
                last = now;
            }
            Err(e) if udp::is_timeout(&e) => {}
            Err(e) => return Err(udp::io_err(e)),
        }
        let now = Instant::now();
        if stats.is_none()
            && (now - checked >= Duration::from_millis(10) || seq.len() as u64 >= p.count)
        {
            checked = now;
            if ctx.cancelled() {
                return Err(TestError::new("cancelled", "test cancelled"));
            }
            match f.line.recv(Duration::ZERO) {
                Ok(Some(v)) if v["op"] == "stats" => stats = Some((v, now)),
                Ok(_) => {}
                Err(e) => {
                    note = Some(format!("the sending agent went away mid-burst ({e})"));
                    break;
                }
            }
        }
        match &stats {
            Some((v, at)) => {
                let sent = v["send"]["sent"].as_u64().unwrap_or(0);
                let idle = now - last.max(*at);
                if seq.len() as u64 >= sent || idle > timeout.min(Duration::from_millis(250)) {
                    break;
                }
            }
            None if now - last > quiet => {
                note = Some(format!(
                    "no datagram for {} ms and no end of burst: the sender stopped mid-burst",
                    quiet.as_millis()
                ));
                break;
            }
            None => {}
        }
    }
    let snd = stats.map_or(Value::Null, |(v, _)| v["send"].clone());
    let a = meshperf_wasm::udp::analyze(&seq, &arr, snd["sent"].as_u64(), Some(&snt))
        .map_err(|e| TestError::new("internal", format!("udp analysis: {e}")))?;
    let rcv = json!({
        "received": a.received, "lost": a.lost, "out_of_order": a.out_of_order,
        "duplicates": a.duplicates, "out_of_range": a.out_of_range, "packets": a.packets,
        "foreign": f.foreign, "recv_seconds": a.recv_seconds, "jitter_us": a.jitter_us,
        "interarrival_us": udp::stats_json(a.interarrival_us.as_ref()),
        "timestamps": if kernel && user_ts == 0 { "kernel" } else { "user" },
        "from": f.peer.ip().to_string(),
        "to": f.sock.local_addr().map(|a| a.ip().to_string()).ok(),
    });
    ctx.sink.samples(
        SampleKind::Sequence,
        ctx.role,
        ctx.test_id,
        ctx.step,
        0,
        &seq,
    );
    ctx.sink.samples(
        SampleKind::ArrivalNs,
        ctx.role,
        ctx.test_id,
        ctx.step,
        0,
        &arr,
    );
    let timeouts = u64::from(snd.is_null());
    let out = summary(p, &snd, &rcv, note.clone(), timeouts);
    if note.is_none() {
        let _ = f
            .line
            .send(&json!({"op": "stats", "summary": out, "receive": rcv}));
    }
    Ok(out)
}

/// Both sides' figures in one summary (DESIGN.md keys) with the seed's line.
fn summary(
    p: &UdpStreamParams,
    snd: &Value,
    rcv: &Value,
    note: Option<String>,
    timeouts: u64,
) -> Value {
    let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    let (sent, send_s) = (num(snd, "sent"), num(snd, "send_seconds"));
    let (received, recv_s) = (num(rcv, "received"), num(rcv, "recv_seconds"));
    let rate = |n: f64, bytes: u64, s: f64| {
        if s > 0.0 {
            n * bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    };
    let send_bps = rate(sent, p.pkt_bytes, send_s);
    let recv_bps = rate(received, p.pkt_bytes, recv_s);
    let wire_bps = rate(received, p.pkt_bytes + p.overhead_bytes, recv_s);
    let per = |s: f64, n: f64| if n > 0.0 { s * 1e6 / n } else { 0.0 };
    let ia = &rcv["interarrival_us"];
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ip = |k: &str| {
        rcv[k]
            .as_str()
            .or(snd[k].as_str())
            .unwrap_or("-")
            .to_string()
    };
    let mut fields = vec![
        now.to_string(),
        ip("from"),
        ip("to"),
        p.pkt_bytes.to_string(),
        format!("{sent}"),
        "0".into(),
        timeouts.to_string(),
        format!("{:.4}", per(send_s, sent)),
        format!("{}", p.wait_us),
        format!("{:.0}", send_s * 1e6),
        format!("{:.4}", send_bps / 1e6),
        format!("{received}"),
        format!("{}", num(rcv, "lost")),
        format!("{}", num(rcv, "out_of_order")),
        format!("{:.0}", recv_s * 1e6),
        format!("{:.4}", per(recv_s, received)),
        format!("{:.4}", recv_bps / 1e6),
        format!("{:.4}", wire_bps / 1e6),
    ];
    for k in [
        "n", "mean", "sigma", "skew", "kurtosis", "median", "iq25", "iq75",
    ] {
        fields.push(
            format!("{:.4}", num(ia, k))
                .trim_end_matches(".0000")
                .to_string(),
        );
    }
    json!({
        "sent": snd["sent"], "received": rcv["received"], "lost": rcv["lost"],
        "out_of_order": rcv["out_of_order"], "duplicates": rcv["duplicates"],
        "foreign": rcv["foreign"], "out_of_range": rcv["out_of_range"],
        "send_seconds": snd["send_seconds"], "recv_seconds": rcv["recv_seconds"],
        "send_bits_per_second": send_bps, "recv_bits_per_second": recv_bps,
        "wire_bits_per_second": wire_bps, "jitter_us": rcv["jitter_us"],
        "send_gap_us": snd["send_gap_us"], "interarrival_us": rcv["interarrival_us"],
        "pacing_error_us": snd["pacing_error_us"], "timestamps": rcv["timestamps"],
        "time_per_frame_us": per(send_s, sent), "recv_time_per_frame_us": per(recv_s, received),
        "pkt_bytes": p.pkt_bytes, "wait_us": p.wait_us, "count": p.count,
        "overhead_bytes": p.overhead_bytes, "direction": p.direction,
        "complete": note.is_none(), "note": note, "line": fields.join("; "),
    })
}
