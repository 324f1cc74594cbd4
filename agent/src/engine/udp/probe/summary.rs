//! The driving side's summary of `latency_under_load`: its own records and
//! the serving side's counts, through the statistics crate
//! (`meshperf_stats::lul`), and the raw probes as sample frames.

use super::{Answer, Requested, CODES};
use crate::engine::ctx::TestCtx;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::params::{Clocks, LulPhase, ProbeParams};
use meshperf_protocol::peer::LulTally;
use meshperf_protocol::summary::{
    AddedLatency, ClockBasis, LulClock, LulPhaseSummary, LulServerPhase, LulSummary, ProbeFlow,
    Timestamps,
};
use meshperf_stats::lul::{self, Added, Probes};

/// A phase the driving side ran to its end.
pub struct Ran {
    pub phase: LulPhase,
    pub seconds: f64,
    /// Download bytes this side received, and over how long.
    pub down_bytes: u64,
    pub down_seconds: f64,
    /// Upload bytes and seconds, where this side knows them (a stream
    /// test's sender); `None`: the serving side's count ([`Server::phases`]).
    pub up: Option<(u64, f64)>,
}

/// What the serving side sent back at the end.
pub struct Server {
    pub probes: Vec<LulTally>,
    pub phases: Vec<LulServerPhase>,
    pub base_ns: u64,
    pub foreign: u64,
    /// Where its receive times (t2) came from.
    pub timestamps: Timestamps,
}

fn bps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

fn added(a: Option<Added>) -> Option<AddedLatency> {
    a.map(|a| AddedLatency {
        median: a.median,
        p90: a.p90,
        p99: a.p99,
    })
}

/// Sends the answered probes (first copies, in sequence order) as sample
/// frames: `rtt_ns`, and the raw `sequence`, `probe_phase`,
/// `send_time_ns` (t1), `peer_recv_ns` (t2), `peer_send_ns` (t3),
/// `arrival_ns` (t4).
fn send_samples(ctx: &TestCtx, first: &[Answer], stream: u16) {
    let col = |f: fn(&Answer) -> u64| first.iter().map(f).collect::<Vec<u64>>();
    let rtt = col(|a| {
        a.t4.saturating_sub(a.t1)
            .saturating_sub(a.t3.saturating_sub(a.t2))
    });
    for (kind, v) in [
        (SampleKind::RttNs, rtt),
        (SampleKind::Sequence, col(|a| a.seq)),
        (SampleKind::ProbePhase, col(|a| a.phase as u64)),
        (SampleKind::SendTimeNs, col(|a| a.t1)),
        (SampleKind::PeerRecvNs, col(|a| a.t2)),
        (SampleKind::PeerSendNs, col(|a| a.t3)),
        (SampleKind::ArrivalNs, col(|a| a.t4)),
    ] {
        ctx.sink
            .samples(kind, ctx.role, ctx.test_id, ctx.step, stream, &v);
    }
}

#[allow(clippy::too_many_arguments)]
pub fn build(
    ctx: &TestCtx,
    p: &ProbeParams,
    streams_per_direction: u32,
    ran: &[Ran],
    r: &Requested,
    server: Option<&Server>,
    base_ns: u64,
    peer: String,
    mut note: Option<String>,
    stream: u16,
) -> LulSummary {
    let seqs: Vec<u64> = r.arrivals.iter().map(|a| a.seq).collect();
    let codes: Vec<u8> = r.arrivals.iter().map(|a| a.phase).collect();
    let down_tally = lul::tally(&seqs, &codes).expect("parallel arrays");
    let mut first: Vec<Answer> = Vec::with_capacity(r.arrivals.len());
    let mut seen = std::collections::HashSet::new();
    for a in &r.arrivals {
        if seen.insert(a.seq) {
            first.push(*a);
        }
    }
    first.sort_by_key(|a| a.seq);
    send_samples(ctx, &first, stream);
    // The responder's times on the requester's origin: through the two
    // system clocks (exact when they agree; the estimate corrects the rest).
    let shift = server.map_or(0.0, |s| s.base_ns as f64 - base_ns as f64);
    let f = |g: fn(&Answer) -> u64, plus: f64| -> Vec<f64> {
        first.iter().map(|a| g(a) as f64 + plus).collect()
    };
    let phase: Vec<u8> = first.iter().map(|a| a.phase).collect();
    let (t1, t2, t3, t4) = (
        f(|a| a.t1, 0.0),
        f(|a| a.t2, shift),
        f(|a| a.t3, shift),
        f(|a| a.t4, 0.0),
    );
    let synced = p.clocks == Clocks::Synced;
    // Without the serving side's clock start only an estimate can place
    // its times (the fit absorbs any offset).
    let analysis = if server.is_some() || !synced {
        let probes = Probes {
            phase: &phase,
            t1: &t1,
            t2: &t2,
            t3: &t3,
            t4: &t4,
        };
        match lul::analyze(&probes, synced) {
            Ok(a) => Some(a),
            Err(e) => {
                note.get_or_insert(format!("no delays: {e}"));
                None
            }
        }
    } else {
        None
    };
    let up_of = |code: usize| -> ProbeFlow {
        match server.and_then(|s| s.probes.get(code)) {
            Some(t) => ProbeFlow::new(r.sent[code], t.received, t.duplicates, t.reordered),
            // The serving side did not say: every answered probe arrived.
            None => ProbeFlow::new(r.sent[code], down_tally[code].received, 0, 0),
        }
    };
    let down_of = |code: usize| -> ProbeFlow {
        let t = down_tally[code];
        // Without the serving side's count, what arrived is all we know of.
        let answered = server
            .and_then(|s| s.probes.get(code))
            .map_or(t.received, |t| t.answered);
        ProbeFlow::new(answered, t.received, t.duplicates, t.reordered)
    };
    let sum = |flows: Vec<ProbeFlow>| {
        let s = |g: fn(&ProbeFlow) -> u64| flows.iter().map(g).sum::<u64>();
        ProbeFlow::new(
            s(|f| f.sent),
            s(|f| f.received),
            s(|f| f.duplicates),
            s(|f| f.reordered),
        )
    };
    let phases = ran
        .iter()
        .map(|x| {
            let code = x.phase.code() as usize;
            let d = analysis
                .as_ref()
                .map(|a| a.phases[code].clone())
                .unwrap_or_default();
            let up = server.and_then(|s| s.phases.iter().find(|sp| sp.phase == x.phase));
            let (up_bytes, up_secs) =
                x.up.unwrap_or_else(|| up.map_or((0, 0.0), |u| (u.up_bytes, u.up_seconds)));
            LulPhaseSummary {
                phase: x.phase,
                seconds: x.seconds,
                down_bytes: x.down_bytes,
                down_bits_per_second: bps(x.down_bytes, x.down_seconds),
                up_bytes,
                up_bits_per_second: bps(up_bytes, up_secs),
                rtt_us: d.rtt,
                up_us: d.up,
                down_us: d.down,
                added_rtt_us: added(d.added_rtt),
                added_up_us: added(d.added_up),
                added_down_us: added(d.added_down),
                probes_up: up_of(code),
                probes_down: down_of(code),
                probes_skipped: r.skipped[code],
            }
        })
        .collect();
    let clock = analysis.as_ref().map(|a| LulClock {
        basis: if a.clock.synced {
            ClockBasis::Synced
        } else {
            ClockBasis::Estimated
        },
        offset_us: a.clock.fit.offset / 1e3,
        drift_ppm: a.clock.fit.drift_ppm,
        uncertainty_us: a.clock.uncertainty_us,
        min_rtt_us: a.clock.fit.min_rtt / 1e3,
        residual_us: a.clock.fit.residual_sd / 1e3,
        probes_used: a.clock.fit.used as u64,
    });
    LulSummary {
        phases,
        clock,
        probes_up: sum((0..CODES).map(up_of).collect()),
        probes_down: sum((0..CODES).map(down_of).collect()),
        probes_skipped: r.skipped.iter().sum(),
        probe_ms: p.probe_ms,
        probe_bytes: p.probe_bytes,
        streams_per_direction,
        seconds: r.seconds,
        foreign: server.map(|s| s.foreign),
        peer,
        complete: note.is_none(),
        note,
        rate_capped_us: r.capped_us,
        base_ns,
        peer_base_ns: server.map(|s| s.base_ns),
        timestamps: match server {
            Some(s) if s.timestamps == Timestamps::Kernel && r.kernel_stamps => Timestamps::Kernel,
            _ => Timestamps::User,
        },
        samples_stream: stream,
    }
}
