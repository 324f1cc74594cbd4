//! Bulk-transfer workers. Streams are spread over the worker threads of a
//! [`Placement`] (round robin; each worker pinned to its CPU when the
//! placement lists CPUs), each with its own mio `Poll`; a sender writes
//! `msg_bytes` buffers (one after another, or on an absolute schedule every
//! `wait_us`), a receiver
//! reads `read_bytes` at a time until EOF. Every stream records bytes per
//! interval and, at each interval boundary, TCP_INFO. The workers are
//! generic over the socket type ([`DataStream`]: TCP or AF_UNIX), so each
//! transport gets its own monomorphised hot path with no dispatch.
//!
//! A worker that owns a single unpaced stream skips the readiness round trip:
//! its socket is put in blocking mode with a 50 ms timeout and each call
//! moves data or sleeps in the kernel until it can (netperf's way). That
//! saves an `EAGAIN` read/write and an `epoll_wait` per wake-up, which is a
//! measurable share of a loopback transfer. Several streams, or a `wait_us`
//! schedule, multiplex on the worker's mio `Poll`.
//!
//! With `zerocopy` a TCP sender writes with MSG_ZEROCOPY ([`super::zerocopy`])
//! and reaps the completions in the same loop, each time it is woken (the
//! error queue raises EPOLLERR) and whenever the kernel has no option memory
//! for another (ENOBUFS: reap, then retry; no byte is dropped); a stream
//! ends only once every send has completed, or is aborted (cancelled,
//! failed: SO_LINGER 0, a reset) with its payload freed.

use super::buf::PageBuf;
use super::placement::Placement;
use super::pool;
use super::sockopt::{self, TcpInfo};
use super::zerocopy::{self, Counts, Ledger};
use crate::platform::{AsRawSock, AsSock};
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A connected std stream socket the workers can drive through mio.
pub trait DataStream: Send + 'static {
    /// The mio socket type.
    type Mio: Read + Write + mio::event::Source + AsRawSock + AsSock;
    /// Whether TCP_INFO is available.
    const TCP: bool;
    /// Sets non-blocking mode and wraps the socket for mio.
    fn into_mio(self) -> Self::Mio;
    /// Half-closes the sending direction.
    fn shutdown_write(s: &Self::Mio) -> io::Result<()>;
}

impl DataStream for std::net::TcpStream {
    type Mio = mio::net::TcpStream;
    const TCP: bool = true;
    fn into_mio(self) -> Self::Mio {
        let _ = self.set_nonblocking(true);
        mio::net::TcpStream::from_std(self)
    }
    fn shutdown_write(s: &Self::Mio) -> io::Result<()> {
        s.shutdown(Shutdown::Write)
    }
}

#[cfg(unix)]
impl DataStream for std::os::unix::net::UnixStream {
    type Mio = mio::net::UnixStream;
    const TCP: bool = false;
    fn into_mio(self) -> Self::Mio {
        let _ = self.set_nonblocking(true);
        mio::net::UnixStream::from_std(self)
    }
    fn shutdown_write(s: &Self::Mio) -> io::Result<()> {
        s.shutdown(Shutdown::Write)
    }
}

/// What a running stream shares with the thread that reports it: bytes so
/// far and the intervals completed since the last report.
#[derive(Default)]
pub struct LiveStream {
    pub bytes: AtomicU64,
    pub intervals: std::sync::Mutex<Vec<u64>>,
}

/// Which way a stream moves data, from this side's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Send,
    Recv,
}

/// How the streams of one side run.
#[derive(Debug, Clone)]
pub struct Workload {
    pub msg_bytes: usize,
    pub read_bytes: usize,
    /// Bytes each sender writes (count-bounded tests).
    pub bytes_per_stream: Option<u64>,
    /// Senders stop at this offset from `start` (time-bounded tests).
    pub duration: Option<Duration>,
    pub wait: Duration,
    pub interval: Duration,
    /// A stream that moves nothing for this long fails.
    pub stall: Duration,
    /// Random bytes in the writes (else zeros).
    pub random: bool,
    /// The writes carry this file's bytes in order, over and over
    /// (`payload_file`); overrides `random`.
    pub file: Option<std::sync::Arc<super::payload::FileData>>,
    /// TCP senders write with MSG_ZEROCOPY (SO_ZEROCOPY already on).
    pub zerocopy: bool,
}

/// What one stream did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub index: usize,
    pub send: bool,
    pub bytes: u64,
    /// Read or write calls that moved data.
    pub ops: u64,
    /// Offsets from `start` of the first and last data movement (EOF for receivers).
    pub first: Duration,
    pub last: Duration,
    /// Bytes per interval.
    pub intervals: Vec<u64>,
    /// TCP_INFO at each interval boundary: rtt (us), cwnd (segments), total retransmits.
    pub rtt_us: Vec<u64>,
    pub cwnd: Vec<u64>,
    pub retrans: Vec<u64>,
    /// TCP_INFO at the end.
    pub info: Option<TcpInfo>,
    /// The rest of TCP_INFO per interval ([`super::tcp_view`]).
    pub tcp: super::tcp_view::Sampler,
    pub error: Option<String>,
    /// A zero-copy sender's sends and their completions.
    pub zerocopy: Option<Counts>,
}

struct Slot<S: DataStream> {
    sock: S::Mio,
    dir: Flow,
    out: Outcome,
    ready: bool,
    done: bool,
    /// Offset into the current message (senders).
    msg_off: usize,
    /// Messages written (senders); the schedule is `k * wait`.
    msgs: u64,
    last_move: Instant,
    /// Intervals already handed to the reporter.
    flushed: usize,
    /// A zero-copy sender's sends not completed yet.
    zc: Option<Ledger>,
    /// Sending is over (half-closed); waiting for the last completions.
    draining: bool,
    /// The stream gave up its turn with more to move ([`TURN`]): the
    /// worker comes back to it without waiting for an event.
    yielded: bool,
}

/// Reads or writes a stream makes in one turn of its worker before the
/// worker turns to its other streams. On Linux no bound: a call says
/// EAGAIN soon enough (one end of a loopback pair always outruns the
/// other). Off Linux one may not: under Wine a loopback receiver kept up
/// with its sender for a whole phase, so neither ever said WouldBlock and
/// the worker's other streams starved (latency_under_load's load: half its
/// streams stuck at their first 4 MiB).
#[cfg(target_os = "linux")]
const TURN: u32 = u32::MAX;
#[cfg(not(target_os = "linux"))]
const TURN: u32 = 64;

impl<S: DataStream> Slot<S> {
    fn record(
        &mut self,
        n: usize,
        now: Instant,
        start: Instant,
        interval: Duration,
        live: &LiveStream,
    ) {
        live.bytes.fetch_add(n as u64, Ordering::Relaxed);
        let at = now.saturating_duration_since(start);
        if self.out.bytes == 0 {
            self.out.first = at;
        }
        self.out.last = at;
        self.out.bytes += n as u64;
        self.out.ops += 1;
        self.last_move = now;
        let idx = (at.as_nanos() / interval.as_nanos()) as usize;
        if idx >= self.out.intervals.len() {
            self.out.intervals.resize(idx + 1, 0);
            if idx > self.flushed {
                if let Ok(mut q) = live.intervals.lock() {
                    q.extend_from_slice(&self.out.intervals[self.flushed..idx]);
                }
                self.flushed = idx;
            }
            if let Some(ti) = S::TCP.then(|| sockopt::tcp_info(&self.sock)).flatten() {
                let fill = |v: &mut Vec<u64>, x: u64| v.resize(idx + 1, x);
                fill(&mut self.out.rtt_us, ti.rtt_us as u64);
                fill(&mut self.out.cwnd, ti.snd_cwnd as u64);
                fill(&mut self.out.retrans, ti.total_retrans as u64);
                let send = self.dir == Flow::Send;
                let q = if send {
                    None
                } else {
                    sockopt::rcv_queue(&self.sock)
                };
                self.out.tcp.sample(ti, q, idx, now, send);
            }
        }
        self.out.intervals[idx] += n as u64;
    }

    fn finish(&mut self, error: Option<String>) {
        self.done = true;
        self.out.zerocopy = self.zc.as_ref().map(Ledger::counts);
        self.out.info = S::TCP.then(|| sockopt::tcp_info(&self.sock)).flatten();
        let n = self.out.intervals.len();
        self.out
            .tcp
            .finish(self.out.info, n, self.dir == Flow::Send);
        if self.dir == Flow::Send && error.is_none() {
            let _ = S::shutdown_write(&self.sock);
        }
        self.out.error = error;
    }
}

/// Runs `streams` (socket, direction) to completion and returns one outcome
/// per stream, in input order. `live[i]` is updated as stream `i` moves bytes;
/// `tick` is called about every 20 ms from this thread while workers run.
pub fn run_workers<S: DataStream>(
    streams: Vec<(S, Flow)>,
    plan: &Workload,
    start: Instant,
    cancel: &AtomicBool,
    live: &[LiveStream],
    place: &Placement,
    tick: impl FnMut(),
) -> Vec<Outcome> {
    let items: Vec<(usize, S, Flow)> = streams
        .into_iter()
        .enumerate()
        .map(|(i, (s, d))| (i, s, d))
        .collect();
    let mut all: Vec<Outcome> = pool::run(
        "stream",
        place,
        items,
        |_, g, pinned| match pinned {
            Ok(()) => worker(g, plan, start, cancel, live),
            Err(e) => failed(g, e),
        },
        tick,
    )
    .expect("the OS starts a thread")
    .into_iter()
    .flat_map(|r| r.expect("stream worker panicked"))
    .collect();
    all.sort_by_key(|o| o.index);
    all
}

/// The outcomes of a worker's streams that could not run.
fn failed<S: DataStream>(group: Vec<(usize, S, Flow)>, error: String) -> Vec<Outcome> {
    group
        .into_iter()
        .map(|(i, _, d)| Outcome {
            index: i,
            send: d == Flow::Send,
            error: Some(error.clone()),
            ..Default::default()
        })
        .collect()
}

/// The worker's streams as slots, each registered with its `poll` (a
/// stream that cannot be is finished with the error).
fn slots_of<S: DataStream>(
    poll: &Poll,
    group: Vec<(usize, S, Flow)>,
    plan: &Workload,
) -> Vec<Slot<S>> {
    let mut slots: Vec<Slot<S>> = Vec::with_capacity(group.len());
    let now = Instant::now();
    for (i, s, dir) in group {
        let mut sock = s.into_mio();
        let interest = if dir == Flow::Send {
            Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        let reg = poll
            .registry()
            .register(&mut sock, Token(slots.len()), interest);
        let mut slot = Slot {
            sock,
            dir,
            out: Outcome {
                index: i,
                send: dir == Flow::Send,
                ..Default::default()
            },
            ready: true,
            done: false,
            msg_off: 0,
            msgs: 0,
            last_move: now,
            flushed: 0,
            zc: (plan.zerocopy && S::TCP && dir == Flow::Send).then(Ledger::default),
            draining: false,
            yielded: false,
        };
        if let Err(e) = reg {
            slot.finish(Some(format!("register: {e}")));
        }
        slots.push(slot);
    }
    slots
}

fn worker<S: DataStream>(
    group: Vec<(usize, S, Flow)>,
    plan: &Workload,
    start: Instant,
    cancel: &AtomicBool,
    live: &[LiveStream],
) -> Vec<Outcome> {
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => return failed(group, format!("poll: {e}")),
    };
    let mut slots = slots_of(&poll, group, plan);
    let blocking = slots.len() == 1 && plan.wait.is_zero();
    if blocking {
        let sock = socket2::SockRef::from(&slots[0].sock);
        let t = Some(Duration::from_millis(50));
        if let Err(e) = sock
            .set_nonblocking(false)
            .and_then(|_| sock.set_read_timeout(t))
            .and_then(|_| sock.set_write_timeout(t))
        {
            slots[0].finish(Some(format!("socket mode: {e}")));
        }
    }
    // The payload: written as it is, never changed while the test runs
    // (zero-copy sends read it after the call returns).
    let own = match &plan.file {
        Some(_) => None,
        None if plan.random && slots.iter().any(|s| s.dir == Flow::Send) => {
            Some(PageBuf::random(plan.msg_bytes))
        }
        None => Some(PageBuf::new(plan.msg_bytes, 0)),
    };
    let (wbuf, cycle): (&[u8], usize) = match (&plan.file, &own) {
        (Some(f), _) => (&f.buf, f.len),
        (None, Some(b)) => (b, 0),
        (None, None) => unreachable!("a payload without a file is this worker's"),
    };
    let mut rbuf = PageBuf::new(plan.read_bytes, 0);
    let mut events = Events::with_capacity(64);
    let limit = plan.bytes_per_stream;
    loop {
        if cancel.load(Ordering::Relaxed) {
            for s in slots.iter_mut().filter(|s| !s.done) {
                s.finish(Some("cancelled".into()));
            }
            break;
        }
        let mut next_due: Option<Instant> = None;
        for s in slots.iter_mut().filter(|s| !s.done) {
            let now = Instant::now();
            if s.ready {
                s.yielded = false;
                match s.dir {
                    Flow::Send => send(
                        s,
                        plan,
                        start,
                        limit,
                        (wbuf, cycle),
                        &mut next_due,
                        &live[s.out.index],
                        blocking,
                    ),
                    Flow::Recv => recv(s, plan, start, &mut rbuf, &live[s.out.index], blocking),
                }
            }
            if !s.done && now.duration_since(s.last_move) > plan.stall {
                let what = if s.draining {
                    "had zero-copy sends the kernel did not complete"
                } else if s.dir == Flow::Send {
                    "could not send"
                } else {
                    "received nothing"
                };
                s.finish(Some(format!(
                    "stream {} {what} for {} s: the peer stalled",
                    s.out.index,
                    plan.stall.as_secs()
                )));
            }
        }
        if slots.iter().all(|s| s.done) {
            break;
        }
        if blocking {
            // The socket timed out (or a deadline check is due): try again.
            slots[0].ready = true;
            continue;
        }
        let mut timeout = Duration::from_millis(50);
        if slots.iter().any(|s| s.yielded && !s.done) {
            // Only the others' events to gather: no waiting.
            timeout = Duration::ZERO;
        }
        if let Some(due) = next_due {
            // Timer wake-ups arrive late: spin the last stretch.
            timeout = super::pace::poll_timeout(due, timeout);
        }
        if let Some(d) = plan.duration {
            timeout = timeout.min((start + d).saturating_duration_since(Instant::now()));
        }
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                for s in slots.iter_mut().filter(|s| !s.done) {
                    s.finish(Some(format!("poll: {e}")));
                }
                break;
            }
        }
        for ev in events.iter() {
            if let Some(s) = slots.get_mut(ev.token().0) {
                s.ready = true;
            }
        }
    }
    for s in slots
        .iter()
        .filter(|s| s.zc.as_ref().is_some_and(|z| z.outstanding() > 0))
    {
        // A stream that ended (cancelled, failed) with zero-copy sends
        // outstanding: aborted (a reset when it closes below), so the
        // kernel drops what it still queued, and the payload's pages with
        // it, at once rather than send it on after the test. The payload
        // is freed either way: its own mapping, whose pages the kernel
        // keeps while it holds them (super::buf), never the allocator's.
        let _ = socket2::SockRef::from(&s.sock).set_linger(Some(Duration::ZERO));
    }
    slots.into_iter().map(|s| s.out).collect()
}

#[allow(clippy::too_many_arguments)]
fn send<S: DataStream>(
    s: &mut Slot<S>,
    plan: &Workload,
    start: Instant,
    limit: Option<u64>,
    (buf, cycle): (&[u8], usize),
    next_due: &mut Option<Instant>,
    live: &LiveStream,
    once: bool,
) {
    if s.zc.is_some() && !reap(s) {
        return;
    }
    if s.draining {
        return drain(s, once);
    }
    let mut moves = 0;
    loop {
        let now = Instant::now();
        if s.msg_off == 0 {
            if limit.is_some_and(|l| s.out.bytes >= l)
                || plan.duration.is_some_and(|d| now >= start + d)
            {
                if s.zc.is_some() {
                    // Half-close now, so the peer reads to EOF and
                    // acknowledges the rest; the completions follow.
                    s.draining = true;
                    let _ = S::shutdown_write(&s.sock);
                    return drain(s, once);
                }
                s.finish(None);
                return;
            }
            if !plan.wait.is_zero() {
                let due = start + plan.wait * s.msgs as u32;
                if now < due {
                    *next_due = Some(next_due.map_or(due, |d| d.min(due)));
                    return;
                }
            }
        }
        let mut end = plan.msg_bytes;
        if let Some(l) = limit {
            end = end.min((l - (s.out.bytes - s.msg_off as u64)) as usize);
        }
        // A payload file goes on where the last write ended (`cycle`, its
        // length; `buf` has its start again after its end); else every
        // write is the same buffer.
        let origin = match cycle {
            0 => 0,
            n => ((s.out.bytes - s.msg_off as u64) % n as u64) as usize,
        };
        let chunk = &buf[origin + s.msg_off..origin + end];
        let wrote = match &mut s.zc {
            Some(z) => zerocopy::send(&s.sock, chunk).inspect(|&n| {
                if n > 0 {
                    z.sent();
                }
            }),
            None => s.sock.write(chunk),
        };
        match wrote {
            Ok(0) => return s.finish(Some("the peer closed the connection".into())),
            Ok(n) => {
                s.record(n, Instant::now(), start, plan.interval, live);
                let short = s.msg_off + n < end;
                s.msg_off += n;
                if s.msg_off >= end {
                    s.msg_off = 0;
                    s.msgs += 1;
                }
                if once {
                    return; // blocking socket: back to the loop to check cancel
                }
                // A short write means the send buffer is full; the
                // kernel flagged it and signals the edge when space
                // frees, so skip the write that would only say EAGAIN.
                // Not on Windows: mio watches a socket there again only
                // once a call through it said WouldBlock (skipped, the
                // stream waited for an event that never came).
                if short && cfg!(not(windows)) {
                    s.ready = false;
                    return;
                }
                moves += 1;
                if moves == TURN {
                    s.yielded = true;
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                s.ready = false;
                return;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) && s.zc.is_some() => {
                // The socket's option memory (net.core.optmem_max) is held
                // by the completions not read yet: read them, then retry.
                if let Some(z) = &mut s.zc {
                    z.refused();
                }
                let before = s.zc.as_ref().map_or(0, Ledger::outstanding);
                if !reap(s) {
                    return;
                }
                let after = s.zc.as_ref().map_or(0, Ledger::outstanding);
                if after == before {
                    if after == 0 {
                        return s.finish(Some(
                            "zerocopy: the kernel has no option memory for a zero-copy send with none outstanding (ENOBUFS): raise net.core.optmem_max or run without zerocopy".into(),
                        ));
                    }
                    // None came back yet: wait for one (EPOLLERR).
                    if once {
                        zerocopy::wait(crate::platform::raw(&s.sock), 50);
                    } else {
                        s.ready = false;
                    }
                    return;
                }
            }
            Err(e) => return s.finish(Some(format!("send failed: {e}"))),
        }
    }
}

/// Reads a zero-copy sender's completions; false (the stream failed) when
/// the error queue cannot be read or says something impossible.
fn reap<S: DataStream>(s: &mut Slot<S>) -> bool {
    let fd = crate::platform::raw(&s.sock);
    let Some(z) = &mut s.zc else { return true };
    match zerocopy::reap(fd, z) {
        Ok(0) => true,
        Ok(_) => {
            if s.draining {
                s.last_move = Instant::now();
            }
            true
        }
        Err(e) => {
            s.finish(Some(format!(
                "zerocopy: cannot read the completions of stream {}: {e}",
                s.out.index
            )));
            false
        }
    }
}

/// The last bytes are written: the stream ends once every zero-copy send
/// has completed (the payload is the kernel's until then).
fn drain<S: DataStream>(s: &mut Slot<S>, once: bool) {
    if s.zc.as_ref().map_or(true, |z| z.outstanding() == 0) {
        return s.finish(None);
    }
    if once {
        zerocopy::wait(crate::platform::raw(&s.sock), 50);
    } else {
        s.ready = false;
    }
}

fn recv<S: DataStream>(
    s: &mut Slot<S>,
    plan: &Workload,
    start: Instant,
    buf: &mut [u8],
    live: &LiveStream,
    once: bool,
) {
    let mut moves = 0;
    loop {
        match s.sock.read(buf) {
            Ok(0) => {
                // The data ended with its last byte, not with the end of
                // file: the sender's close can come later (its thread
                // descheduled between its last write and the close), and
                // the last interval ends when the data did.
                if s.out.bytes == 0 {
                    s.out.last = Instant::now().saturating_duration_since(start);
                }
                return s.finish(None);
            }
            Ok(n) => {
                s.record(n, Instant::now(), start, plan.interval, live);
                if once {
                    return; // blocking socket: back to the loop to check cancel
                }
                moves += 1;
                if moves == TURN {
                    s.yielded = true;
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                s.ready = false;
                return;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return s.finish(Some(format!("receive failed: {e}"))),
        }
    }
}
