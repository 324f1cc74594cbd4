//! `tcp_rr`: TCP request/response latency between two agents (udpmon's
//! tcp_req/tcp_resp, netperf TCP_RR, sockperf ping-pong). Set-up is the
//! `tcp_stream` one (one-time key, control line, one data connection); the
//! loops live in [`crate::engine::rr_loop`]. Also builds the summaries `unix_rr` shares.

use super::{rr_flows, setup};
use crate::engine::ctx::{EngineEnv, Job, TestCtx};
use crate::engine::error::{Refusal, TestError};
use crate::engine::peer::{self, Connected};
use crate::engine::rr_loop::{self, client_summary, server_summary};
use crate::engine::{bind, sockopt};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, RrParams};
use meshperf_protocol::summary::{RrSummary, TcpRrSocket};
use serde_json::Value;
use std::net::TcpListener;

/// The parameters, and this side's worker threads for its flows (1 for
/// one flow), checked before any traffic.
fn parse(params: &Value, env: &EngineEnv) -> Result<(RrParams, usize), Refusal> {
    let p =
        RrParams::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    let workers = setup::workers(p.congestion.as_deref(), p.flows, p.threads)?;
    Ok((p, workers))
}

/// Serving side set-up (see [`crate::engine::prepare`]).
pub fn prepare(params: &Value, env: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    let (p, workers) = parse(params, env)?;
    let (listener, port, key) = setup::listen(&p.socket(), env)?;
    Ok((
        port,
        key,
        Box::new(move |ctx| serve(ctx, p, listener, key, workers)),
    ))
}

/// Driving side set-up (see [`crate::engine::start`]).
pub fn start(params: Value, peer_addr: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let (p, workers) = parse(&params, env)?;
    bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| drive(ctx, p, peer_addr, workers)))
}

fn serve(ctx: TestCtx, p: RrParams, listener: TcpListener, key: [u8; 16], workers: usize) {
    let r = peer::accept(&ctx, listener, &key, Kind::TcpRr, p.flows as usize).and_then(|c| {
        if p.flows == 1 {
            run_connection(&ctx, &p, c)
        } else {
            run_flows(&ctx, &p, c, workers)
        }
    });
    ctx.report(r);
    ctx.finished();
}

fn drive(ctx: TestCtx, p: RrParams, peer_addr: PeerAddr, workers: usize) {
    let sp = p.socket();
    let r = peer::connect(&ctx, &peer_addr, Kind::TcpRr, &sp, p.flows as usize).and_then(|c| {
        if p.flows == 1 {
            run_connection(&ctx, &p, c)
        } else {
            run_flows(&ctx, &p, c, workers)
        }
    });
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

/// `flows` above 1: every connection gets the test's options (the first
/// one's, as the kernel has them, go in the summary), then the flows run
/// on the side's workers ([`rr_flows`]) and the counts are exchanged.
fn run_flows(
    ctx: &TestCtx,
    p: &RrParams,
    mut conn: Connected,
    workers: usize,
) -> Result<RrSummary, TestError> {
    let (sp, ipv6) = (p.socket(), conn.peer_ip.is_ipv6());
    let conns = std::mem::take(&mut conn.data);
    let mut applied = None;
    for s in &conns {
        let r = match applied {
            None => sockopt::apply(s, &sp, ipv6).map(|a| applied = Some(a)),
            Some(_) => sockopt::set(s, &sp, ipv6, true),
        };
        r.map_err(|m| TestError::new(ErrorCode::BadParams, m))?;
    }
    let mut sum = if ctx.role == meshperf_protocol::msg::Role::Client {
        let mut sum = rr_flows::client(ctx, p, conns, workers)?;
        let done = peer::exchange_done(&mut conn.control, sum.count)?;
        sum.peer_count = Some(done.bytes);
        sum
    } else {
        let sum = rr_flows::server(ctx, p, conns, workers)?;
        if sum.beyond_count == Some(0) {
            peer::exchange_done(&mut conn.control, sum.count)?;
        }
        sum
    };
    let a = applied.expect("at least two flows");
    sum.tcp = Some(TcpRrSocket {
        peer: conn.peer_ip.to_string(),
        nodelay: a.nodelay,
        tos: a.tos,
        congestion: a.congestion,
        mss_requested: p.mss,
        mss: a.mss,
        sndbuf_actual: a.sndbuf_actual,
        rcvbuf_actual: a.rcvbuf_actual,
    });
    Ok(sum)
}
