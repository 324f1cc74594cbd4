//! The TCP load of one phase: the `tcp_stream` workers ([`bulk::run_workers`])
//! on this side's connections of the phase, for the phase's duration, with
//! each stream's bytes per interval sent to the page as `interval_bytes`.

use super::super::bulk::{self, Flow, LiveStream, Outcome, Workload};
use super::super::sockopt;
use super::super::udp;
use crate::engine::ctx::TestCtx;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::params::{LulParams, LulPhase};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// This side's data connections, one list per direction: `up` carries the
/// driving agent's sends, `down` the serving agent's. Each holds the
/// `upload` (or `download`) phase's streams, then the `both` phase's.
pub struct Conns {
    pub up: Vec<Option<TcpStream>>,
    pub down: Vec<Option<TcpStream>>,
}

/// Stream index of a connection in the sample frames: up connections
/// first, then down ones.
fn index(up: bool, i: usize, per_dir: usize) -> usize {
    if up {
        i
    } else {
        2 * per_dir + i
    }
}

/// What a phase moved on this side.
pub struct PhaseLoad {
    /// Bytes this side received, and the receiver's time from the phase's
    /// start to its last byte (s).
    pub received: u64,
    pub recv_seconds: f64,
    /// Bytes this side sent.
    pub sent: u64,
    /// Why a stream failed, if one did.
    pub error: Option<String>,
}

/// Runs `phase`'s load on this side (`driving`: the driving agent's).
/// `stop` ends it early (set by `halt`, looked at every 20 ms).
#[allow(clippy::too_many_arguments)]
pub fn run(
    ctx: &TestCtx,
    p: &LulParams,
    phase: LulPhase,
    driving: bool,
    conns: &mut Conns,
    ipv6: bool,
    test_start: Instant,
    halt: &dyn Fn() -> bool,
) -> PhaseLoad {
    let sp = p.stream_params(phase, &ctx.limits);
    let sock = sp.socket();
    let n = p.streams as usize;
    // The phase's slice of each list: the first half in a one-way phase,
    // the second in `both`.
    let range = if phase == LulPhase::Both {
        n..2 * n
    } else {
        0..n
    };
    let mut streams = Vec::new();
    let mut indices = Vec::new();
    for (up, list) in [(true, &mut conns.up), (false, &mut conns.down)] {
        if (up && !phase.up()) || (!up && !phase.down()) {
            continue;
        }
        for i in range.clone() {
            let Some(s) = list[i].take() else { continue };
            if let Err(m) = sockopt::apply(&s, &sock, ipv6) {
                return PhaseLoad {
                    received: 0,
                    recv_seconds: 0.0,
                    sent: 0,
                    error: Some(m),
                };
            }
            // The driving agent sends on up connections, the serving on down.
            let dir = if up == driving {
                Flow::Send
            } else {
                Flow::Recv
            };
            streams.push((s, dir));
            indices.push(index(up, i, n));
        }
    }
    let plan = Workload::from_params(&sp);
    let live: Vec<LiveStream> = streams.iter().map(|_| LiveStream::default()).collect();
    let stop = AtomicBool::new(false);
    let mut tick = Instant::now();
    let total = p.total_s();
    let place = crate::engine::placement::Placement::spread(streams.len());
    let outs: Vec<Outcome> =
        bulk::run_workers(streams, &plan, Instant::now(), &stop, &live, &place, || {
            if halt() {
                stop.store(true, Ordering::Relaxed);
            }
            if tick.elapsed() >= Duration::from_millis(100) {
                tick = Instant::now();
                let bytes = live.iter().map(|l| l.bytes.load(Ordering::Relaxed)).sum();
                let done = test_start.elapsed().as_secs_f64() / total;
                udp::progress(ctx, test_start, bytes, done);
            }
        });
    for o in &outs {
        ctx.sink.samples(
            SampleKind::IntervalBytes,
            ctx.role,
            ctx.test_id,
            ctx.step,
            indices[o.index] as u16,
            &o.intervals,
        );
    }
    let recv = || outs.iter().filter(|o| !o.send);
    PhaseLoad {
        received: recv().map(|o| o.bytes).sum(),
        recv_seconds: recv().map(|o| o.last.as_secs_f64()).fold(0.0, f64::max),
        sent: outs.iter().filter(|o| o.send).map(|o| o.bytes).sum(),
        error: if stop.load(Ordering::Relaxed) {
            Some("stopped".into())
        } else {
            outs.iter().find_map(|o| o.error.clone())
        },
    }
}
