//! `tcp_rr`: TCP request/response latency between two agents (udpmon's
//! tcp_req/tcp_resp, netperf TCP_RR, sockperf ping-pong). Set-up is the
//! `tcp_stream` one (one-time key, control line, one data connection); the
//! loops live in [`crate::engine::rr_loop`]. Also builds the summaries `unix_rr` shares.

use crate::engine::peer::{self, Connected};
use crate::engine::rr_loop::{self, client_summary, server_summary};
use crate::engine::{bind, sockopt, EngineEnv, Job, Refusal, TestCtx, TestError};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, RrParams};
use meshperf_protocol::summary::{RrSummary, TcpRrSocket};
use serde_json::Value;
use std::net::TcpListener;

fn parse(params: &Value, env: &EngineEnv) -> Result<RrParams, Refusal> {
    let p =
        RrParams::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    sockopt::check_congestion(p.congestion.as_deref())?;
    Ok(p)
}

/// Serving side set-up (see [`crate::engine::prepare`]).
pub fn prepare(params: &Value, env: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    let p = parse(params, env)?;
    let sp = p.socket();
    bind::check_server(sp.server_bind)?;
    let ip = sp.server_bind.unwrap_or(env.data_ip);
    let (listener, port) = peer::data_listener(ip, env.data_ports, &sp)?;
    let key = peer::new_key();
    Ok((port, key, Box::new(move |ctx| serve(ctx, p, listener, key))))
}

/// Driving side set-up (see [`crate::engine::start`]).
pub fn start(params: Value, peer_addr: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let p = parse(&params, env)?;
    bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| drive(ctx, p, peer_addr)))
}

fn serve(ctx: TestCtx, p: RrParams, listener: TcpListener, key: [u8; 16]) {
    let r = peer::accept(&ctx, listener, &key, Kind::TcpRr, 1)
        .and_then(|c| run_connection(&ctx, &p, c));
    ctx.report(r);
    ctx.finished();
}

fn drive(ctx: TestCtx, p: RrParams, peer_addr: PeerAddr) {
    let sp = p.socket();
    let r = peer::connect(&ctx, &peer_addr, Kind::TcpRr, &sp, 1)
        .and_then(|c| run_connection(&ctx, &p, c));
    ctx.report(r);
    ctx.finished();
}

fn run_connection(
    ctx: &TestCtx,
    p: &RrParams,
    mut conn: Connected,
) -> Result<RrSummary, TestError> {
    let mut s = conn.data.pop().expect("one data connection");
    let applied = sockopt::apply(&s, &p.socket(), conn.peer_ip.is_ipv6())
        .map_err(|m| TestError::new(ErrorCode::BadParams, m))?;
    let mut sum = if ctx.role == meshperf_protocol::msg::Role::Client {
        let out = rr_loop::client(ctx, p, &mut s)?;
        let _ = s.shutdown(std::net::Shutdown::Write);
        let done = peer::exchange_done(&mut conn.control, out.rtt_ns.len() as u64)?;
        let mut sum = client_summary(p, &out)?;
        sum.peer_count = Some(done.bytes);
        sum
    } else {
        let served = rr_loop::server(ctx, p, &mut s)?;
        if served.beyond_count == 0 {
            // A peer that asked past the count is not finishing the test
            // by the protocol: its end line is not waited for.
            peer::exchange_done(&mut conn.control, served.answered)?;
        }
        server_summary(p, served)
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
