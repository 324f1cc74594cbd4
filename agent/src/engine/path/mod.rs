//! `path`: where in the path, each way. Over the test's own UDP flow (bound
//! as for `udp_rr`, see [`crate::engine::udp`]), the driving agent traces
//! toward the serving agent while the serving agent echoes its probes;
//! `back` on the control connection hands the turn over, the serving agent
//! traces back while the driving agent echoes, and its `traced` line
//! carries its direction to the driving agent, whose summary holds both.
//!
//! Each direction ([`trace::direction`]): the hops by rising TTL / hop
//! limit, the ICMP answers read from the socket's error queue
//! ([`probe`]); the path MTU with DF set; each mark (DSCP x ECN) sent for
//! the peer to say what arrived. Silent hops are hops that do not answer,
//! not loss of the path; `max_hops` reached is a result. With `names`,
//! each side names its direction's hops by reverse DNS ([`names`]).

mod names;
mod probe;
mod trace;

use super::pace::RateCap;
use super::udp::{self, Flow, UdpTest};
use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use meshperf_protocol::params::{Kind, Limits, ParamError, PathParams, UdpSocketParams};
use meshperf_protocol::peer::PathLine;
use meshperf_protocol::summary::{PathDirection, PathServerSummary, PathSummary};
use meshperf_stats::stats::Summary;
use probe::Prober;
use serde_json::Value;
use std::time::{Duration, Instant};
use trace::Budget;

/// How often the echoing side looks at the control line.
const LOOK: Duration = Duration::from_millis(20);

/// The parameters with the socket options the UDP set-up reads.
pub struct Path {
    p: PathParams,
    sock: UdpSocketParams,
}

impl UdpTest for Path {
    const KIND: Kind = Kind::Path;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let p = PathParams::parse(v, limits)?;
        let sock = UdpSocketParams {
            client_bind: p.client_bind,
            server_bind: p.server_bind,
            ..UdpSocketParams::default()
        };
        Ok(Path { p, sock })
    }
    fn sock(&self) -> &UdpSocketParams {
        &self.sock
    }
    type ServeSummary = PathServerSummary;
    type DriveSummary = PathSummary;
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<PathServerSummary, TestError> {
        let (mut pr, mut line, from, to) = prober(ctx, f)?;
        // Echo the driving agent's probes until it hands the turn over.
        match echo_until(ctx, &mut pr, &mut line)? {
            PathLine::Back => {}
            other => return Err(super::peer::unexpected("back", &other)),
        }
        let step = progress(ctx, 1.0);
        let mut back = trace::direction(&mut pr, &self.p, from, to, &budget(ctx, &step))
            .map_err(udp::io_err)?;
        back.rate_capped_us = pr.capped_us();
        if self.p.names {
            names::name_hops(&mut back.hops, names::WAIT);
        }
        line.send(&PathLine::Traced {
            back: Box::new(back.clone()),
        })
        .map_err(super::peer::gone)?;
        Ok(PathServerSummary { back })
    }
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<PathSummary, TestError> {
        let (mut pr, mut line, from, to) = prober(ctx, f)?;
        let step = progress(ctx, 0.0);
        let mut forth = trace::direction(&mut pr, &self.p, from, to, &budget(ctx, &step))
            .map_err(udp::io_err)?;
        forth.rate_capped_us = pr.capped_us();
        if self.p.names {
            names::name_hops(&mut forth.hops, names::WAIT);
        }
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        line.send(&PathLine::Back).map_err(super::peer::gone)?;
        let back = match echo_until(ctx, &mut pr, &mut line)? {
            PathLine::Traced { back } => *back,
            other => return Err(super::peer::unexpected("traced", &other)),
        };
        Ok(summary(forth, back))
    }
}

/// Both directions in one summary.
fn summary(forth: PathDirection, back: PathDirection) -> PathSummary {
    let rtt: Vec<f64> = forth
        .hops
        .iter()
        .filter(|h| h.peer)
        .flat_map(|h| h.rtt_us.iter().copied())
        .collect();
    let asymmetric = matches!((forth.peer_hop, back.peer_hop), (Some(a), Some(b)) if a != b);
    PathSummary {
        rtt_us: Summary::new(&rtt).ok(),
        forth,
        back,
        asymmetric,
    }
}

/// The flow's socket set up for probing (connected to the peer), its
/// control line, and the two addresses.
fn prober(ctx: &TestCtx, f: Flow) -> Result<(Prober, udp::Line, String, String), TestError> {
    f.sock.connect(f.peer).map_err(udp::io_err)?;
    let from = f.sock.local_addr().map_err(udp::io_err)?.ip().to_string();
    let to = f.peer.ip().to_string();
    let mut pr = Prober::new(f.sock, f.token).map_err(udp::io_err)?;
    pr.cap = RateCap::new(&ctx.limits);
    Ok((pr, f.line, from, to))
}

/// Each direction may take under half the agent's duration limit, so both
/// end within it.
/// `progress` turns the direction's share done into a progress event.
fn budget<'a>(ctx: &'a TestCtx, progress: &'a dyn Fn(f64)) -> Budget<'a> {
    let half = Duration::from_secs_f64(ctx.limits.max_duration_s * 0.45);
    Budget {
        deadline: Instant::now() + half,
        cancel: &ctx.cancel,
        progress,
    }
}

/// Progress events of a side whose direction is `half` of the test (the
/// driving agent's the first, the serving agent's the second).
fn progress(ctx: &TestCtx, half: f64) -> impl Fn(f64) + '_ {
    let start = Instant::now();
    move |f| ctx.progress(start.elapsed().as_secs_f64(), 0, (half + f) / 2.0)
}

/// Echoes the peer's probes until its next control line comes.
fn echo_until(ctx: &TestCtx, pr: &mut Prober, line: &mut udp::Line) -> Result<PathLine, TestError> {
    loop {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        pr.answer(LOOK).map_err(udp::io_err)?;
        match line.recv::<PathLine>(Duration::ZERO) {
            Ok(Some(l)) => return Ok(l),
            Ok(None) => {}
            Err(e) => return Err(super::peer::gone(e)),
        }
    }
}
