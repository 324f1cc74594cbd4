//! `tcp_rr` with `flows` above 1 (neper tcp_rr's flows): every flow is a
//! connection doing its transactions in lockstep (a request, the whole
//! response, the next request), all flows at once, spread over the side's
//! worker threads ([`crate::engine::flows`]). Both sides spread: the
//! serving side's workers answer the same flows the driving side's run.
//!
//! A count-bounded test shares `count` out among the flows
//! ([`flow_share`]: both sides work out the same shares, so the serving
//! side answers each flow its share and no more); a time-bounded one runs
//! every flow until the time is up, each finishing the transaction it is
//! in. Each worker is one edge-triggered mio `Poll` over its flows'
//! non-blocking sockets: a flow moves as far as its socket lets it, then
//! waits for its next event. Requests carry the flow's transaction number
//! in their first 8 bytes and responses echo it (as one flow's do), sent
//! with the shared payload in one `writev`, so a worker's buffers are its
//! request and response sizes, not one per flow.

use crate::engine::buf::PageBuf;
use crate::engine::ctx::{done_fraction, TestCtx};
use crate::engine::error::TestError;
use crate::engine::flows::Collected;
use crate::engine::pace;
use crate::engine::placement::Placement;
use crate::engine::pool;
use crate::engine::rr_loop::{self, ClientOut, Served};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{flow_share, RrParams};
use meshperf_protocol::summary::{FlowFigures, RrSummary};
use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a worker looks at cancel when nothing happens.
const SLICE: Duration = Duration::from_millis(200);
/// A flow that moves nothing for this long has stalled.
const STALL: Duration = Duration::from_secs(10);
/// Largest read of a response or request at once.
const SCRATCH: usize = 256 << 10;

/// What the side's workers share.
struct Shared<'a> {
    p: &'a RrParams,
    start: Instant,
    cancel: &'a AtomicBool,
    /// A worker failed: the others stop too.
    abort: AtomicBool,
    samples: Collected,
}

impl Shared<'_> {
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }
}

/// What one worker did.
#[derive(Default)]
struct WorkerOut {
    /// (flow, transactions) per flow of the worker.
    per_flow: Vec<(usize, u64)>,
    bad: u64,
    beyond: u64,
    /// When its last transaction ended.
    last: Option<Instant>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for its next request's time (`wait_us`).
    Idle,
    /// Requester: writing the request; responder: writing the response.
    Write,
    /// Requester: reading the response; responder: reading the request.
    Read,
    Done,
}

struct Flow {
    s: MioStream,
    index: usize,
    /// Transactions this flow does (count-bounded), else `u64::MAX`.
    share: u64,
    /// Transactions done (requester) or answered (responder).
    n: u64,
    phase: Phase,
    /// The request's sequence number (sent, or as read).
    hdr: [u8; 8],
    /// Bytes of the current message written or read.
    off: usize,
    t0: Instant,
    last_move: Instant,
}

/// The message being written: its first `hl` bytes from `hdr`, the rest
/// from `body`, at most up to the next `chunk` boundary per call.
fn write_part(f: &mut Flow, body: &[u8], hl: usize, chunk: usize) -> io::Result<usize> {
    let len = body.len();
    let end = len.min((f.off / chunk + 1).saturating_mul(chunk));
    let n = if f.off < hl {
        let h = &f.hdr[f.off..hl.min(end)];
        let rest = if end > hl { &body[hl..end] } else { &[][..] };
        f.s.write_vectored(&[IoSlice::new(h), IoSlice::new(rest)])?
    } else {
        f.s.write(&body[f.off..end])?
    };
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "the peer closed the connection",
        ));
    }
    f.off += n;
    Ok(n)
}

/// Reads more of a message of `len` bytes into `scratch`, its first `hl`
/// bytes kept in `into`. `Ok(0)` is end of stream.
fn read_part(
    f: &mut Flow,
    len: usize,
    hl: usize,
    scratch: &mut [u8],
    into: &mut [u8; 8],
) -> io::Result<usize> {
    let want = (len - f.off).min(scratch.len());
    let n = f.s.read(&mut scratch[..want])?;
    if f.off < hl {
        let k = (hl - f.off).min(n);
        into[f.off..f.off + k].copy_from_slice(&scratch[..k]);
    }
    f.off += n;
    Ok(n)
}

fn blocked(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

fn failed(what: &str, index: usize, e: io::Error) -> TestError {
    match e.kind() {
        io::ErrorKind::WriteZero | io::ErrorKind::UnexpectedEof => TestError::new(
            ErrorCode::PeerGone,
            format!("flow {index}: the peer closed the connection"),
        ),
        _ => TestError::new(
            ErrorCode::StreamFailed,
            format!("flow {index}: {what} failed: {e}"),
        ),
    }
}

/// The worker's flows, registered on a fresh poll (edge-triggered, both ways).
fn register(
    group: Vec<(usize, TcpStream)>,
    shares: impl Fn(usize) -> u64,
    start: Instant,
) -> io::Result<(Poll, Vec<Flow>)> {
    let poll = Poll::new()?;
    let mut out = Vec::with_capacity(group.len());
    for (k, (index, s)) in group.into_iter().enumerate() {
        s.set_nonblocking(true)?;
        let mut s = MioStream::from_std(s);
        poll.registry()
            .register(&mut s, Token(k), Interest::READABLE | Interest::WRITABLE)?;
        out.push(Flow {
            s,
            index,
            share: shares(index),
            n: 0,
            phase: Phase::Idle,
            hdr: [0; 8],
            off: 0,
            t0: start,
            last_move: start,
        });
    }
    Ok((poll, out))
}

/// Waits for events (at most `timeout`) and returns the flows they name.
fn wait(
    poll: &mut Poll,
    events: &mut Events,
    timeout: Duration,
    ready: &mut Vec<usize>,
) -> Result<(), TestError> {
    ready.clear();
    match poll.poll(events, Some(timeout)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
        Err(e) => return Err(TestError::new(ErrorCode::Io, format!("poll: {e}"))),
    }
    ready.extend(events.iter().map(|e| e.token().0));
    Ok(())
}

fn stalled(flows: &[Flow], now: Instant) -> Result<(), TestError> {
    match flows
        .iter()
        .find(|f| matches!(f.phase, Phase::Read | Phase::Write) && now - f.last_move > STALL)
    {
        Some(f) => Err(TestError::new(
            ErrorCode::Stalled,
            format!(
                "flow {}: the peer moved nothing for {} s",
                f.index,
                STALL.as_secs()
            ),
        )),
        None => Ok(()),
    }
}

/// One requester worker: its flows' transactions until each has done its
/// share or the time is up; each flow then half-closes.
fn requester(sh: &Shared, group: Vec<(usize, TcpStream)>) -> Result<WorkerOut, TestError> {
    let p = sh.p;
    let count = p.count;
    let (mut poll, mut fl) = register(
        group,
        |i| count.map_or(u64::MAX, |c| flow_share(c, p.flows, i as u32)),
        sh.start,
    )
    .map_err(|e| TestError::new(ErrorCode::Io, format!("flow set-up: {e}")))?;
    let req = PageBuf::random(p.req_bytes as usize);
    let mut scratch = vec![0u8; (p.resp_bytes as usize).min(SCRATCH)];
    let (req_len, resp_len) = (p.req_bytes as usize, p.resp_bytes as usize);
    let echo = p.req_bytes >= 8 && p.resp_bytes >= 8;
    let hl = if req_len >= 8 { 8 } else { 0 };
    let rhl = if echo { 8 } else { 0 };
    let chunk = p.write_bytes.map_or(usize::MAX, |w| w as usize);
    let wait_each = Duration::from_micros(p.wait_us);
    let end = p.duration_s.map(|d| sh.start + Duration::from_secs_f64(d));
    let interval = Duration::from_millis(p.interval_ms as u64).min(Duration::from_millis(50));
    let mut out = WorkerOut::default();
    let (mut rtt, mut none) = (Vec::new(), Vec::new());
    let mut handed = Instant::now();
    let mut events = Events::with_capacity(1024);
    let mut ready: Vec<usize> = Vec::new();
    // Flows between transactions: all of them at the start.
    let mut idle: Vec<usize> = (0..fl.len()).collect();
    let mut waiting: Vec<usize> = Vec::new();
    let mut resp_hdr = [0u8; 8];
    let mut live = fl.len();
    while live > 0 {
        if sh.stopped() {
            return Err(TestError::cancelled());
        }
        let now = Instant::now();
        let over = end.is_some_and(|e| now >= e);
        let mut next_due: Option<Instant> = None;
        // Idle flows whose time has come start a transaction; then the
        // flows with events move.
        for k in idle.drain(..) {
            let f = &mut fl[k];
            if f.n >= f.share || over {
                f.phase = Phase::Done;
                let _ = f.s.shutdown(std::net::Shutdown::Write);
                live -= 1;
                continue;
            }
            let due = sh.start + wait_each * f.n as u32;
            if !wait_each.is_zero() && now < due {
                next_due = Some(next_due.map_or(due, |d| d.min(due)));
                waiting.push(k);
                continue;
            }
            f.hdr = f.n.to_le_bytes();
            f.phase = Phase::Write;
            f.off = 0;
            f.t0 = Instant::now();
            f.last_move = f.t0;
            ready.push(k);
        }
        std::mem::swap(&mut idle, &mut waiting);
        let waiting_before = idle.len();
        while let Some(k) = ready.pop() {
            let Some(f) = fl.get_mut(k) else { continue };
            loop {
                match f.phase {
                    Phase::Write => match write_part(f, &req, hl, chunk) {
                        Ok(_) if f.off == req_len => {
                            f.phase = Phase::Read;
                            f.off = 0;
                        }
                        Ok(_) => {}
                        Err(e) if blocked(&e) => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(failed("send", f.index, e)),
                    },
                    Phase::Read => match read_part(f, resp_len, rhl, &mut scratch, &mut resp_hdr) {
                        Ok(0) => {
                            return Err(failed(
                                "receive",
                                f.index,
                                io::ErrorKind::UnexpectedEof.into(),
                            ))
                        }
                        Ok(_) if f.off == resp_len => {
                            let t = Instant::now();
                            rtt.push(t.duration_since(f.t0).as_nanos() as u64);
                            out.bad += (echo && resp_hdr != f.hdr) as u64;
                            out.last = Some(t);
                            f.n += 1;
                            f.last_move = t;
                            let more = f.n < f.share && end.map_or(true, |e| t < e);
                            if more && wait_each.is_zero() {
                                f.hdr = f.n.to_le_bytes();
                                f.phase = Phase::Write;
                                f.off = 0;
                                f.t0 = t;
                            } else {
                                f.phase = Phase::Idle;
                                idle.push(k);
                                break;
                            }
                        }
                        Ok(_) => f.last_move = Instant::now(),
                        Err(e) if blocked(&e) => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(failed("receive", f.index, e)),
                    },
                    Phase::Idle | Phase::Done => break,
                }
            }
        }
        let now = Instant::now();
        if now >= handed + interval {
            sh.samples.hand_over(&mut rtt, &mut none);
            handed = now;
            stalled(&fl, now)?;
        }
        if idle.len() > waiting_before {
            continue; // a flow finished a transaction: start its next at once
        }
        let mut timeout = if p.busy_poll { Duration::ZERO } else { SLICE };
        if let Some(due) = next_due {
            // Timer wake-ups come late: spin the last stretch.
            timeout = pace::poll_timeout(due, timeout);
        }
        if let Some(e) = end.filter(|_| !over) {
            timeout = timeout.min(e.saturating_duration_since(now));
        }
        wait(&mut poll, &mut events, timeout, &mut ready)?;
    }
    sh.samples.hand_over(&mut rtt, &mut none);
    out.per_flow = fl.iter().map(|f| (f.index, f.n)).collect();
    Ok(out)
}

/// One responder worker: answers each of its flows until the requester
/// half-closes it (or, count-bounded, asks past the flow's share).
fn responder(sh: &Shared, group: Vec<(usize, TcpStream)>) -> Result<WorkerOut, TestError> {
    let p = sh.p;
    let count = p.count;
    let (mut poll, mut fl) = register(
        group,
        |i| count.map_or(u64::MAX, |c| flow_share(c, p.flows, i as u32)),
        Instant::now(),
    )
    .map_err(|e| TestError::new(ErrorCode::Io, format!("flow set-up: {e}")))?;
    let resp = PageBuf::random(p.resp_bytes as usize);
    let mut scratch = vec![0u8; (p.req_bytes as usize).min(SCRATCH)];
    let (req_len, resp_len) = (p.req_bytes as usize, p.resp_bytes as usize);
    let echo = p.req_bytes >= 8 && p.resp_bytes >= 8;
    let hl = if echo { 8 } else { 0 };
    let chunk = p.write_bytes.map_or(usize::MAX, |w| w as usize);
    for f in fl.iter_mut() {
        f.phase = Phase::Read;
    }
    let mut out = WorkerOut::default();
    let mut events = Events::with_capacity(1024);
    let mut ready: Vec<usize> = (0..fl.len()).collect();
    let mut live = fl.len();
    let mut looked = Instant::now();
    while live > 0 {
        if sh.stopped() {
            return Err(TestError::cancelled());
        }
        while let Some(k) = ready.pop() {
            let Some(f) = fl.get_mut(k) else { continue };
            loop {
                match f.phase {
                    Phase::Read => {
                        let mut h = f.hdr;
                        match read_part(f, req_len, hl, &mut scratch, &mut h) {
                            Ok(0) if f.off == 0 => {
                                f.phase = Phase::Done;
                                live -= 1;
                                break;
                            }
                            Ok(0) => {
                                return Err(failed(
                                    "receive",
                                    f.index,
                                    io::ErrorKind::UnexpectedEof.into(),
                                ))
                            }
                            Ok(_) => {
                                f.hdr = h;
                                f.last_move = Instant::now();
                                if f.off == req_len {
                                    if f.n == f.share {
                                        // Past the prepared count: not answered.
                                        out.beyond += 1;
                                        f.phase = Phase::Done;
                                        live -= 1;
                                        break;
                                    }
                                    f.phase = Phase::Write;
                                    f.off = 0;
                                }
                            }
                            Err(e) if blocked(&e) => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(failed("receive", f.index, e)),
                        }
                    }
                    Phase::Write => match write_part(f, &resp, hl, chunk) {
                        Ok(_) if f.off == resp_len => {
                            f.n += 1;
                            f.phase = Phase::Read;
                            f.off = 0;
                            f.last_move = Instant::now();
                        }
                        Ok(_) => {}
                        Err(e) if blocked(&e) => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(failed("send", f.index, e)),
                    },
                    Phase::Idle | Phase::Done => break,
                }
            }
        }
        if live == 0 {
            break;
        }
        let now = Instant::now();
        if now >= looked + SLICE {
            looked = now;
            // A flow waiting for its next request is in Read too: only
            // one mid-message stalls.
            let mid: Vec<&Flow> = fl.iter().filter(|f| f.off > 0).collect();
            if let Some(f) = mid.iter().find(|f| now - f.last_move > STALL) {
                return Err(TestError::new(
                    ErrorCode::Stalled,
                    format!(
                        "flow {}: the peer sent nothing for {} s",
                        f.index,
                        STALL.as_secs()
                    ),
                ));
            }
        }
        let timeout = if p.busy_poll { Duration::ZERO } else { SLICE };
        wait(&mut poll, &mut events, timeout, &mut ready)?;
    }
    out.per_flow = fl.iter().map(|f| (f.index, f.n)).collect();
    Ok(out)
}

/// Runs `role` over `conns` (flow `i` = connection `i`) on `workers`
/// threads, the side's thread sending samples and progress meanwhile.
fn run_side(
    ctx: &TestCtx,
    p: &RrParams,
    conns: Vec<TcpStream>,
    workers: usize,
    requesting: bool,
) -> Result<(Vec<u64>, WorkerOut, Vec<u64>, Duration), TestError> {
    let n = conns.len();
    let sh = Shared {
        p,
        start: Instant::now(),
        cancel: &ctx.cancel,
        abort: AtomicBool::new(false),
        samples: Collected::default(),
    };
    let interval = Duration::from_millis(p.interval_ms as u64);
    let mut flushed = 0usize;
    let mut next_report = sh.start + interval;
    let report = |flushed: &mut usize| {
        sh.samples.drain(flushed, |from, v, _| {
            ctx.sink.samples_from(
                SampleKind::RttNs,
                ctx.role,
                ctx.test_id,
                ctx.step,
                0,
                from as u32,
                v,
            )
        });
        let elapsed = sh.start.elapsed().as_secs_f64();
        let done = *flushed as u64;
        let fraction = done_fraction(p.count.map(|c| (done, c)), elapsed, p.duration_s);
        ctx.progress(elapsed, done * (p.req_bytes + p.resp_bytes), fraction);
    };
    let results = pool::run(
        "flow",
        &Placement::unpinned(workers),
        conns.into_iter().enumerate().collect(),
        |_, g, _| {
            let r = if requesting {
                requester(&sh, g)
            } else {
                responder(&sh, g)
            };
            if r.is_err() {
                sh.abort.store(true, Ordering::Relaxed);
            }
            r
        },
        || {
            if requesting && Instant::now() >= next_report {
                next_report = Instant::now() + interval;
                report(&mut flushed);
            }
        },
    )
    .expect("the OS starts a thread")
    .into_iter()
    .map(|r| r.expect("flow worker panicked"));
    // The first failure that is not another worker stopping for it.
    let mut all = WorkerOut::default();
    let mut per_flow = vec![0u64; n];
    let mut first_err: Option<TestError> = None;
    for r in results {
        match r {
            Ok(w) => {
                for (i, c) in w.per_flow {
                    per_flow[i] = c;
                }
                all.bad += w.bad;
                all.beyond += w.beyond;
                all.last = all.last.max(w.last);
            }
            Err(e) => {
                let cancel = e.code == ErrorCode::Cancelled;
                if first_err
                    .as_ref()
                    .map_or(true, |f| f.code == ErrorCode::Cancelled && !cancel)
                {
                    first_err = Some(e);
                }
            }
        }
    }
    if let Some(e) = first_err {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        return Err(e);
    }
    if requesting {
        report(&mut flushed);
    }
    let elapsed = all
        .last
        .map_or(Duration::ZERO, |l| l.duration_since(sh.start));
    let [rtt, _] = sh.samples.take();
    Ok((rtt, all, per_flow, elapsed))
}

/// The driving side of a many-flow `tcp_rr` over `conns`: the summary
/// before the peer's count and the socket figures are added.
pub fn client(
    ctx: &TestCtx,
    p: &RrParams,
    conns: Vec<TcpStream>,
    workers: usize,
) -> Result<RrSummary, TestError> {
    let threads = workers.clamp(1, conns.len().max(1));
    let (rtt_ns, all, per_flow, elapsed) = run_side(ctx, p, conns, workers, true)?;
    let out = ClientOut {
        rtt_ns,
        bad: all.bad,
        elapsed,
    };
    let mut sum = rr_loop::client_summary(p, &out)?;
    sum.flows = Some(FlowFigures::of(&per_flow, threads));
    Ok(sum)
}

/// The serving side of a many-flow `tcp_rr` over `conns`.
pub fn server(
    ctx: &TestCtx,
    p: &RrParams,
    conns: Vec<TcpStream>,
    workers: usize,
) -> Result<RrSummary, TestError> {
    let threads = workers.clamp(1, conns.len().max(1));
    let (_, all, per_flow, _) = run_side(ctx, p, conns, workers, false)?;
    let served = Served {
        answered: per_flow.iter().sum(),
        beyond_count: u64::from(all.beyond > 0),
    };
    let mut sum = rr_loop::server_summary(p, served);
    let f = FlowFigures::of(&per_flow, threads);
    sum.line += &format!(" over {}", f.text());
    sum.flows = Some(f);
    Ok(sum)
}
