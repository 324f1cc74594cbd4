//! One side of a stream test (`tcp_stream`, `unix_stream`) from connected
//! sockets to outcomes: runs the workers and, while they run, reports to the
//! controller — progress about every 100 ms and each stream's bytes per
//! interval as intervals complete (live plots); the rest, and TCP_INFO
//! series, at the end.

use super::bulk::{self, DataStream, Flow, LiveStream, Outcome, Workload};
use super::ctx::TestCtx;
use super::error::TestError;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::{ErrorCode, Role};
use meshperf_protocol::params::{Direction, Payload, StreamParams};
use meshperf_protocol::summary::{StreamDir, StreamFigures, StreamTcpInfo};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Workload {
    /// The worker plan of stream parameters.
    pub fn from_params(p: &StreamParams) -> Workload {
        Workload {
            msg_bytes: p.msg_bytes as usize,
            read_bytes: p.read_bytes as usize,
            bytes_per_stream: p.bytes_per_stream(),
            duration: p.duration_s.map(Duration::from_secs_f64),
            wait: super::pace::write_wait(p),
            interval: Duration::from_millis(p.interval_ms as u64),
            stall: Duration::from_secs(10) + 2 * Duration::from_micros(p.wait_us),
            random: p.payload == Payload::Random,
            file: None,
            zerocopy: p.zerocopy,
        }
    }
}

/// Runs `streams` on the side's worker threads ([`super::placement`]) and
/// reports as it goes; fails if any stream failed. Stream times count from
/// `start`.
pub fn run_streams<S: DataStream>(
    ctx: &TestCtx,
    p: &StreamParams,
    streams: Vec<(S, Flow)>,
    start: Instant,
) -> Result<Vec<Outcome>, TestError> {
    run_streams_with(ctx, p, streams, start, None)
}

/// [`run_streams`] whose writes carry `file` (`payload_file`), if given.
pub fn run_streams_with<S: DataStream>(
    ctx: &TestCtx,
    p: &StreamParams,
    streams: Vec<(S, Flow)>,
    start: Instant,
    file: Option<std::sync::Arc<super::payload::FileData>>,
) -> Result<Vec<Outcome>, TestError> {
    let plan = Workload {
        file,
        ..Workload::from_params(p)
    };
    let n = streams.len();
    let live: Vec<LiveStream> = (0..n).map(|_| LiveStream::default()).collect();
    let mut sent = vec![0usize; n];
    let expected = p.bytes_per_stream().map(|b| {
        b * streams
            .iter()
            .filter(|(_, d)| *d == Flow::Send)
            .count()
            .max(1) as u64
    });
    let send = |i: usize, first: usize, values: &[u64]| {
        ctx.sink.samples_from(
            SampleKind::IntervalBytes,
            ctx.role,
            ctx.test_id,
            ctx.step,
            i as u16,
            first as u32,
            values,
        );
    };
    let place =
        super::placement::plan(p, ctx.role, n).map_err(|(code, m)| TestError::new(code, m))?;
    let mut last_tick = Instant::now();
    let outcomes = bulk::run_workers(streams, &plan, start, &ctx.cancel, &live, &place, || {
        let now = Instant::now();
        if now.duration_since(last_tick) < Duration::from_millis(100) {
            return;
        }
        last_tick = now;
        for (i, ls) in live.iter().enumerate() {
            let done = ls
                .intervals
                .lock()
                .map(|mut q| std::mem::take(&mut *q))
                .unwrap_or_default();
            if !done.is_empty() {
                send(i, sent[i], &done);
                sent[i] += done.len();
            }
        }
        let bytes: u64 = live.iter().map(|b| b.bytes.load(Ordering::Relaxed)).sum();
        let elapsed = now.duration_since(start).as_secs_f64();
        let fraction =
            super::ctx::done_fraction(expected.map(|e| (bytes, e)), elapsed, p.duration_s);
        ctx.progress(elapsed, bytes, fraction);
    });
    if ctx.cancelled() {
        return Err(TestError::cancelled());
    }
    if let Some(e) = outcomes.iter().find_map(|o| o.error.clone()) {
        return Err(TestError::new(ErrorCode::StreamFailed, e));
    }
    for o in &outcomes {
        let i = o.index;
        if sent[i] < o.intervals.len() {
            send(i, sent[i], &o.intervals[sent[i]..]);
        }
        if o.send && !o.rtt_us.is_empty() {
            for (kind, v) in [
                (SampleKind::TcpRttUs, &o.rtt_us),
                (SampleKind::TcpCwnd, &o.cwnd),
                (SampleKind::TcpRetrans, &o.retrans),
            ] {
                ctx.sink
                    .samples(kind, ctx.role, ctx.test_id, ctx.step, i as u16, v);
            }
        }
        for (kind, v) in o.tcp.series.iter().filter(|(_, v)| !v.is_empty()) {
            ctx.sink
                .samples(*kind, ctx.role, ctx.test_id, ctx.step, i as u16, v);
        }
    }
    Ok(outcomes)
}

/// Number of data connections and which of them this side sends on.
pub fn layout(p: &StreamParams, role: Role) -> Vec<Flow> {
    let n = p.streams as usize;
    let client_sends = |i: usize| match p.direction {
        Direction::Send => true,
        Direction::Receive => false,
        Direction::Both => i < n,
    };
    let total = if p.direction == Direction::Both {
        2 * n
    } else {
        n
    };
    (0..total)
        .map(|i| {
            if client_sends(i) == (role == Role::Client) {
                Flow::Send
            } else {
                Flow::Recv
            }
        })
        .collect()
}

/// One connection's entry in `streams`; `tcp` adds the writes and the
/// TCP_INFO figures (`unix_stream` has neither).
pub fn figures(o: &Outcome, tcp: bool) -> StreamFigures {
    StreamFigures {
        index: o.index as u64,
        dir: if o.send {
            StreamDir::Send
        } else {
            StreamDir::Recv
        },
        bytes: o.bytes,
        reads: if o.send { 0 } else { o.ops },
        writes: tcp.then_some(if o.send { o.ops } else { 0 }),
        seconds: o.last.as_secs_f64(),
        tcp: tcp.then(|| StreamTcpInfo {
            first_seconds: o.first.as_secs_f64(),
            rtt_us: o.info.map(|i| i.rtt_us),
            cwnd: o.info.map(|i| i.snd_cwnd),
            retransmits: o.info.map(|i| i.total_retrans),
        }),
    }
}

/// With `recv_count`, which end's buffers decided how much moved: as the
/// counts say when the sender has one; a time-bounded sender's when its
/// time ran out before the receiver had every buffer, else the receiver's.
pub fn limited_by(p: &StreamParams, outs: &[Outcome]) -> Option<String> {
    let planned = p.limited_by()?;
    if p.count.is_some() {
        return Some(planned.to_string());
    }
    let quota = p.bytes_per_stream()?;
    let full = outs.iter().all(|o| o.bytes == quota);
    Some(if full { "receiver" } else { "sender" }.to_string())
}

/// Milliseconds per read over `seconds` of receiving (the Perl seed's
/// "Average milliseconds"); `None` without reads.
pub fn ms_per_read(seconds: f64, reads: u64) -> Option<f64> {
    (reads > 0).then(|| seconds * 1e3 / reads as f64)
}
