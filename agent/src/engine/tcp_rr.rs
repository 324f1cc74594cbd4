//! `tcp_rr`: TCP request/response latency between two agents (udpmon's
//! tcp_req/tcp_resp, netperf TCP_RR, sockperf ping-pong). Set-up is the
//! `tcp_stream` one (one-time key, control line, one data connection); the
//! loops live in [`super::rr`]. Also builds the summaries `unix_rr` shares.

use super::peer::{self, Connected};
use super::rr::{self, ClientOut};
use super::{bind, sockopt, EngineEnv, Job, Refusal, TestCtx, TestError};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, RrParams};
use meshperf_protocol::summary::{RrClient, RrSummary, Stats, TcpRrSocket};
use meshperf_wasm::stats::Summary;
use serde_json::Value;
use std::net::TcpListener;

fn parse(params: &Value, env: &EngineEnv) -> Result<RrParams, Refusal> {
    let p =
        RrParams::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    sockopt::check_congestion(p.congestion.as_deref())?;
    Ok(p)
}

/// Serving side set-up (see [`super::prepare`]).
pub fn prepare(params: &Value, env: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    let p = parse(params, env)?;
    let sp = p.socket();
    bind::check_server(sp.server_bind)?;
    let ip = sp.server_bind.unwrap_or(env.data_ip);
    let listener = bind::on_data_port(env.data_ports, |port| peer::listen(ip, port, &sp))
        .map_err(|e| (ErrorCode::Io, format!("cannot open a data listener: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| (ErrorCode::Io, e.to_string()))?
        .port();
    let key = peer::new_key();
    Ok((port, key, Box::new(move |ctx| serve(ctx, p, listener, key))))
}

/// Driving side set-up (see [`super::start`]).
pub fn start(params: Value, peer_addr: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let p = parse(&params, env)?;
    bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| drive(ctx, p, peer_addr)))
}

fn serve(ctx: TestCtx, p: RrParams, listener: TcpListener, key: [u8; 16]) {
    let r = peer::accept(&ctx, listener, &key, Kind::TcpRr, 1).and_then(|c| run(&ctx, &p, c));
    ctx.report(r);
    ctx.finished();
}

fn drive(ctx: TestCtx, p: RrParams, peer_addr: PeerAddr) {
    let sp = p.socket();
    let r = peer::connect(&ctx, &peer_addr, Kind::TcpRr, &sp, 1).and_then(|c| run(&ctx, &p, c));
    ctx.report(r);
    ctx.finished();
}

fn run(ctx: &TestCtx, p: &RrParams, mut conn: Connected) -> Result<RrSummary, TestError> {
    let mut s = conn.data.pop().expect("one data connection");
    let applied = sockopt::apply(&s, &p.socket(), conn.peer_ip.is_ipv6())
        .map_err(|m| TestError::new(ErrorCode::BadParams, m))?;
    let mut sum = if ctx.role == meshperf_protocol::msg::Role::Client {
        let out = rr::client(ctx, p, &mut s)?;
        let _ = s.shutdown(std::net::Shutdown::Write);
        let done = peer::exchange_done(&mut conn.control, out.rtt_ns.len() as u64)?;
        let mut sum = client_summary(p, &out)?;
        sum.peer_count = Some(done.bytes);
        sum
    } else {
        let n = rr::server(ctx, p, &mut s)?;
        peer::exchange_done(&mut conn.control, n)?;
        server_summary(p, n)
    };
    sum.tcp = Some(TcpRrSocket {
        peer: conn.peer_ip.to_string(),
        nodelay: applied.nodelay,
        tos: applied.tos,
        congestion: applied.congestion,
        mss_requested: p.mss,
        mss: applied.mss,
        sndbuf_actual: applied.sndbuf_actual,
        rcvbuf_actual: applied.rcvbuf_actual,
    });
    Ok(sum)
}

/// The statistics object of DESIGN.md (`rtt_us` and friends) from ns samples.
pub(super) fn stats_us(ns: &[u64]) -> Option<Stats> {
    let us: Vec<f64> = ns.iter().map(|&v| v as f64 / 1e3).collect();
    // The same object udp_rr reports.
    Summary::new(&us).ok().as_ref().map(super::udp::stats)
}

/// Client summary: counts, `rtt_us`, rates and tcp_req's quiet-mode line
/// ("resp_bytes; req_bytes; msg_count; loop_count; num_bad; time/frame us;
/// Mbytes/s; ave time; min time; max time; num timeouts").
pub(super) fn client_summary(p: &RrParams, out: &ClientOut) -> Result<RrSummary, TestError> {
    let n = out.rtt_ns.len() as u64;
    if n == 0 {
        return Err(TestError::new(
            ErrorCode::NoSamples,
            "no transaction completed",
        ));
    }
    let secs = out.elapsed.as_secs_f64();
    let frame_us = secs * 1e6 / n as f64;
    let mbs = (p.req_bytes + p.resp_bytes) as f64 / frame_us;
    let us = |v: u64| v as f64 / 1e3;
    let ave = out.rtt_ns.iter().sum::<u64>() as f64 / n as f64 / 1e3;
    let (min, max) = (
        us(*out.rtt_ns.iter().min().unwrap()),
        us(*out.rtt_ns.iter().max().unwrap()),
    );
    let line = format!(
        "{}; {}; 1; {n}; {}; {frame_us:.3}; {mbs:.5}; {ave:.3}; {min:.2}; {max:.2}; 0",
        p.resp_bytes, p.req_bytes, out.bad
    );
    Ok(RrSummary {
        count: n,
        client: Some(RrClient {
            timeouts: 0,
            bad: out.bad,
            rtt_us: stats_us(&out.rtt_ns),
            seconds: secs,
            transactions_per_second: n as f64 / secs,
            time_per_frame_us: frame_us,
            mbytes_per_second: mbs,
        }),
        bytes: n * (p.req_bytes + p.resp_bytes),
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        busy_poll: p.busy_poll,
        line,
        peer_count: None,
        transport: None,
        tcp: None,
    })
}

/// Server summary: transactions served and bytes moved.
pub(super) fn server_summary(p: &RrParams, n: u64) -> RrSummary {
    RrSummary {
        count: n,
        client: None,
        bytes: n * (p.req_bytes + p.resp_bytes),
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        busy_poll: p.busy_poll,
        line: format!(
            "answered {n} requests of {} bytes with {} bytes",
            p.req_bytes, p.resp_bytes
        ),
        peer_count: None,
        transport: None,
        tcp: None,
    }
}
