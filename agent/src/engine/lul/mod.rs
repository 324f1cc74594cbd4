//! `latency_under_load`: the bufferbloat test (crusader, flent RRUL). Four
//! phases (idle, download, upload, both) of TCP load from the `tcp_stream`
//! workers, with a gap between each, while a UDP probe flow runs through
//! all of them ([`probe`]); the driving agent then works out per phase the
//! round trip, the one-way delays up and down and the latency the load
//! added, with the statistics crate (`meshperf_stats::lul`).
//!
//! Set-up, on the serving agent's data port (see `meshperf_protocol::peer`):
//! 1. the driving agent connects as for `tcp_stream`, opening its upload
//!    connections (the `upload` phase's, then the `both` phase's);
//! 2. the UDP flow is bound as for `udp_rr` ([`super::udp`]): the serving
//!    side talks only to the address that proved itself;
//! 3. the driving agent listens on its control connection's address and
//!    says so (`listen`, with a fresh key); the serving agent opens the
//!    download connections to it, so each stream is opened by the agent
//!    that sends on it.
//!
//! Then the driving agent runs the schedule: idle, and before each loaded
//! phase a `phase` line on which the serving side starts its part of the
//! load; at the end `done` with its probe counts, answered by the serving
//! side's counts and the upload bytes it received. The serving side ends
//! at the test's length plus a margin, whatever the peer does; a peer that
//! stops answering probes (or whose streams fail) ends the test with the
//! phases measured so far, and the summary says why.

mod load;

use super::udp::probe::{self, summary};
use super::{bind, peer, udp};
use crate::engine::ctx::{EngineEnv, Job, TestCtx};
use crate::engine::error::{Refusal, TestError};
use load::Conns;
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{
    Kind, LulParams, LulPhase, TcpSocketParams, UdpSocketParams, GAP_PHASE,
};
use meshperf_protocol::peer::{key_hex, parse_key, LulDriverLine, LulServerLine};
use meshperf_protocol::summary::{LulServerPhase, LulServerSummary, LulSummary};
use probe::LINE_WAIT;
use serde_json::Value;
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KIND: Kind = Kind::LatencyUnderLoad;
/// How long past the planned end the serving side keeps going (set-up,
/// the last answers, the end exchange).
const MARGIN: Duration = Duration::from_secs(10);
fn udp_params(p: &LulParams) -> UdpSocketParams {
    UdpSocketParams {
        client_bind: p.client_bind,
        server_bind: p.server_bind,
        ..UdpSocketParams::default()
    }
}

fn parse(params: &Value, env: &EngineEnv) -> Result<LulParams, Refusal> {
    LulParams::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))
}

/// Serving side set-up (see [`super::prepare`]).
pub fn prepare(params: &Value, env: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    let p = parse(params, env)?;
    let (listener, sock) = udp::serve_sockets(env, &udp_params(&p), true)?;
    udp::serving_job(listener, sock, move |ctx, listener, sock, key| {
        serve(ctx, &p, listener, sock, key)
    })
}

/// Driving side set-up (see [`super::start`]).
pub fn start(params: Value, peer_addr: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let p = parse(&params, env)?;
    bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| {
        let r = drive(&ctx, &p, &peer_addr);
        ctx.report(r);
        ctx.finished();
    }))
}

/// The serving agent's part.
fn serve(
    ctx: &TestCtx,
    p: &LulParams,
    listener: TcpListener,
    sock: UdpSocket,
    key: &[u8; 16],
) -> Result<LulServerSummary, TestError> {
    let n = p.connections_per_side();
    let conn = peer::accept(ctx, listener, key, KIND, n)?;
    let deadline = Instant::now() + Duration::from_secs_f64(p.total_s()) + MARGIN;
    let mut line = conn.control;
    let mut foreign = 0;
    let (token, peer_udp) = udp::serve_bind(ctx, &mut line, &sock, conn.peer_ip, &mut foreign)?;
    let port = match line.expect(LINE_WAIT, "the driving agent sent no listen line")? {
        LulDriverLine::Listen { port } => port,
        other => return Err(peer::unexpected("listen", &other)),
    };
    let rkey = key_hex(&peer::derive_key(key, DOWNLOAD_KEY));
    // The download connections, to the driving agent's control address.
    let local = line.stream().local_addr().map_err(udp::io_err)?.ip();
    let back = PeerAddr {
        host: conn.peer_ip.to_string(),
        port,
        key: rkey,
    };
    let rev = TcpSocketParams {
        client_bind: Some(local),
        ..TcpSocketParams::default()
    };
    let down = peer::connect(ctx, &back, KIND, &rev, n)?;
    let mut conns = Conns {
        up: conn.data.into_iter().map(Some).collect(),
        down: down.data.into_iter().map(Some).collect(),
    };
    let clock = probe::ProbeClock::new();
    let stop = AtomicBool::new(false);
    let max_probes = p.probes() + 1;
    let ipv6 = conn.peer_ip.is_ipv6();
    let start = Instant::now();
    let meter = super::cpu::current();
    std::thread::scope(|s| {
        let responder = s.spawn(|| {
            let _cpu = super::cpu::Worker::count(meter.as_deref());
            probe::respond(
                sock,
                token,
                peer_udp,
                p.probe_bytes as usize,
                max_probes,
                &ctx.limits,
                &clock,
                &stop,
            )
        });
        let late = || ctx.cancelled() || Instant::now() >= deadline;
        let mut phases = Vec::new();
        let mut note = None;
        let mut sent = None;
        while note.is_none() && sent.is_none() {
            if ctx.cancelled() {
                note = Some("cancelled".to_string());
            } else if Instant::now() >= deadline {
                note = Some(format!(
                    "the serving side's time limit ({:.0} s) passed before the driving agent was done",
                    (deadline - start).as_secs_f64()
                ));
            } else {
                match line.recv::<LulDriverLine>(Duration::from_millis(100)) {
                    Ok(None) => {}
                    Ok(Some(LulDriverLine::Phase { phase })) => {
                        let l = load::run(ctx, p, phase, false, &mut conns, ipv6, start, &late);
                        phases.push(LulServerPhase {
                            phase,
                            up_bytes: l.received,
                            up_seconds: l.recv_seconds,
                            down_sent_bytes: l.sent,
                        });
                        if let Some(e) = l.error {
                            note = Some(format!("{} phase: {e}", phase.name()));
                        }
                    }
                    Ok(Some(LulDriverLine::Done { sent: s })) => sent = Some(s),
                    Ok(Some(other)) => note = Some(format!("unexpected line {other:?}")),
                    Err(e) => note = Some(format!("the driving agent went away ({e})")),
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let r = responder
            .join()
            .expect("responder panicked")
            .map_err(udp::io_err)?;
        if sent.is_some() {
            let _ = line.send(&LulServerLine::Done {
                probes: r.tally.clone(),
                phases: phases.clone(),
                base_ns: clock.base_ns,
                foreign: foreign + r.foreign,
                bad: r.bad,
                timestamps: probe::stamps(r.kernel_stamps),
            });
        }
        Ok(LulServerSummary {
            phases,
            probes_received: r.tally.iter().map(|t| t.received).sum(),
            answered: r.tally.iter().map(|t| t.answered).sum(),
            bad: r.bad,
            foreign: foreign + r.foreign,
            peer: peer_udp.to_string(),
            complete: note.is_none(),
            note,
            rate_capped_us: r.capped_us,
        })
    })
}

/// What the download streams' key is derived from (both agents derive it
/// from the session key: it never travels).
const DOWNLOAD_KEY: &str = "meshperf latency_under_load download streams";

/// The driving agent's part.
fn drive(ctx: &TestCtx, p: &LulParams, peer_addr: &PeerAddr) -> Result<LulSummary, TestError> {
    let n = p.connections_per_side();
    let up = peer::connect(ctx, peer_addr, KIND, &udp_params(p).control(), n)?;
    let local = up.control.stream().local_addr().map_err(udp::io_err)?.ip();
    let mut line = up.control;
    let (sock, token) = udp::client_bind(ctx, &mut line, local, up.peer_ip, &udp_params(p))?;
    let peer_udp = sock.peer_addr().map_err(udp::io_err)?;
    let listener = peer::listen(local, 0, &TcpSocketParams::default()).map_err(|e| {
        TestError::new(
            ErrorCode::Io,
            format!("cannot listen for the download streams: {e}"),
        )
    })?;
    let key = parse_key(&peer_addr.key)
        .ok_or_else(|| TestError::new(ErrorCode::BadRequest, "peer.key must be 32 hex digits"))?;
    let rkey = peer::derive_key(&key, DOWNLOAD_KEY);
    let port = listener.local_addr().map_err(udp::io_err)?.port();
    line.send(&LulDriverLine::Listen { port })
        .map_err(peer::gone)?;
    let down = peer::accept(ctx, listener, &rkey, KIND, n)?;
    let mut conns = Conns {
        up: up.data.into_iter().map(Some).collect(),
        down: down.data.into_iter().map(Some).collect(),
    };
    let ipv6 = up.peer_ip.is_ipv6();
    let clock = probe::ProbeClock::new();
    let phase_now = probe::Phases::new(LulPhase::Idle.code());
    let stop = AtomicBool::new(false);
    let silent = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let meter = super::cpu::current();
    std::thread::scope(|s| {
        let requester = s.spawn(|| {
            let _cpu = super::cpu::Worker::count(meter.as_deref());
            probe::request(
                sock,
                token,
                p.probe_ms,
                p.probe_bytes as usize,
                p.probes() + 1,
                &ctx.limits,
                &clock,
                &phase_now,
                &stop,
                &silent,
            )
        });
        let halt = || ctx.cancelled() || silent.load(Ordering::Relaxed);
        let mut done = Vec::new();
        let mut note = None;
        for (k, phase) in LulPhase::ALL.into_iter().enumerate() {
            let t0 = Instant::now();
            phase_now.set(phase.code());
            let mut down_bytes = (0, 0.0);
            if phase == LulPhase::Idle {
                sleep_unless(ctx, p, start, Duration::from_secs_f64(p.idle_s), &halt);
            } else {
                if let Err(e) = line.send(&LulDriverLine::Phase { phase }) {
                    note = Some(format!("the serving agent went away ({e})"));
                    break;
                }
                let l = load::run(ctx, p, phase, true, &mut conns, ipv6, start, &halt);
                down_bytes = (l.received, l.recv_seconds);
                if let Some(e) = l.error {
                    note = Some(format!("{} phase: {e}", phase.name()));
                }
            }
            if halt() || note.is_some() {
                break;
            }
            done.push(summary::Ran {
                phase,
                seconds: t0.elapsed().as_secs_f64(),
                down_bytes: down_bytes.0,
                down_seconds: down_bytes.1,
                up: None,
            });
            if k + 1 < LulPhase::ALL.len() {
                phase_now.set(GAP_PHASE);
                sleep_unless(ctx, p, start, Duration::from_secs_f64(p.gap_s), &halt);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let r = requester
            .join()
            .expect("requester panicked")
            .map_err(udp::io_err)?;
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        if let Some(why) = &r.silent {
            note = Some(match note {
                Some(n) if n.ends_with("stopped") => why.clone(),
                Some(n) => format!("{n}; {why}"),
                None => why.clone(),
            });
        }
        let server = match probe::end_counts(&mut line, &r.sent) {
            Ok(s) => Some(s),
            Err(e) => {
                note.get_or_insert(e.message);
                None
            }
        };
        Ok(summary::build(
            ctx,
            &p.probe(),
            p.streams,
            &done,
            &r,
            server.as_ref(),
            clock.base_ns,
            peer_udp.to_string(),
            note,
            0,
        ))
    })
}

/// Sleeps `d`, waking every 20 ms to see whether to stop and every 100 ms
/// to report progress (the idle phase and the gaps move no bytes).
fn sleep_unless(
    ctx: &TestCtx,
    p: &LulParams,
    start: Instant,
    d: Duration,
    halt: &dyn Fn() -> bool,
) {
    let end = Instant::now() + d;
    let mut tick = Instant::now();
    while !halt() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        if tick.elapsed() >= Duration::from_millis(100) {
            tick = Instant::now();
            udp::progress(ctx, start, 0, start.elapsed().as_secs_f64() / p.total_s());
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}
