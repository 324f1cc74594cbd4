//! `tcp_crr` with `flows` above 1 (neper tcp_crr's flows): the driving
//! side runs that many connect/request/response/close loops at once,
//! spread over its worker threads ([`crate::engine::flows`]), each worker
//! one edge-triggered mio `Poll` over its flows' current connections. A
//! flow starts its next transaction as soon as one ends; a count-bounded
//! test hands out its `count` of transactions as tickets, one per
//! connect tried, so exactly `count` are tried over all flows. Failed
//! connects and broken connections are counted by errno as with one flow;
//! ports or descriptors running out stop every flow, with the same line.
//!
//! The serving side needs nothing of its own: it already holds its
//! connections at once on one poll (`crr::Server`), up to `flows` +
//! [`super::crr::SPARE_CONNS`].

use super::conn::{errno_name, exhausted, progress, Driven, Tally};
use crate::engine::buf::PageBuf;
use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use crate::engine::flows::Collected;
use crate::engine::placement::Placement;
use crate::engine::pool;
use crate::engine::sockopt;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{CrrParams, TcpSocketParams};
use meshperf_protocol::summary::FlowFigures;
use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a worker looks at cancel when nothing happens.
const SLICE: Duration = Duration::from_millis(200);
/// A connected peer that sends or takes nothing for this long has stalled.
const STALL: Duration = Duration::from_secs(10);
/// How often a worker hands its samples over.
const HAND_OVER: Duration = Duration::from_millis(50);

struct Shared<'a> {
    p: &'a CrrParams,
    sp: TcpSocketParams,
    addr: SocketAddr,
    end: Option<Instant>,
    cancel: &'a AtomicBool,
    /// Ports or descriptors ran out, or a worker failed: no more tickets.
    stop: AtomicBool,
    /// Connects tried (tickets handed out).
    attempts: AtomicU64,
    note: Mutex<Option<String>>,
    /// Series 0: transaction times; 1: connect times.
    samples: Collected,
}

impl Shared<'_> {
    /// Whether a flow may try one more transaction (and counts it).
    fn ticket(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed) {
            return false;
        }
        if self.end.is_some_and(|e| Instant::now() >= e) {
            return false;
        }
        let cap = self.p.count.unwrap_or(u64::MAX);
        self.attempts
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
                (a < cap).then_some(a + 1)
            })
            .is_ok()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    /// Between transactions.
    Free,
    Connecting,
    Writing,
    /// The response, then the peer's close.
    Reading,
    /// No more tickets.
    Done,
}

struct Conn {
    s: Option<MioStream>,
    st: St,
    t0: Instant,
    connected: Duration,
    off: usize,
    last_move: Instant,
}

enum Fail {
    Connect(io::Error),
    Txn(io::Error),
}

/// What one worker did.
struct WorkerOut {
    tally: Tally,
    per_flow: Vec<(usize, u64)>,
    applied: Option<sockopt::Applied>,
    ended: Instant,
}

/// A fresh non-blocking socket for flow token `k`, registered and connecting.
fn open(sh: &Shared, poll: &Poll, k: usize) -> io::Result<MioStream> {
    let sock = Socket::new(
        Domain::for_address(sh.addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    sockopt::pre_connect(&sock, &sh.sp)?;
    if let Some(ip) = sh.sp.client_bind {
        sock.bind(&SocketAddr::new(ip, 0).into())?;
    }
    let mut s = MioStream::from_std(sock.into());
    poll.registry()
        .register(&mut s, Token(k), Interest::READABLE | Interest::WRITABLE)?;
    match socket2::SockRef::from(&s).connect(&sh.addr.into()) {
        Ok(()) => Ok(s),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(s),
        Err(e) => Err(e),
    }
}

/// Moves flow `c` as far as its socket lets it. `Ok(true)`: the
/// transaction is complete.
fn advance(
    c: &mut Conn,
    sh: &Shared,
    req: &[u8],
    resp: &mut [u8],
    want: usize,
    applied: &mut Option<sockopt::Applied>,
) -> Result<bool, Fail> {
    let s = c.s.as_mut().expect("a connection in flight");
    loop {
        match c.st {
            St::Connecting => {
                match s.take_error() {
                    Ok(Some(e)) | Err(e) => return Err(Fail::Connect(e)),
                    Ok(None) => {}
                }
                if s.peer_addr().is_err() {
                    return Ok(false); // still connecting
                }
                c.connected = c.t0.elapsed();
                let ipv6 = sh.addr.is_ipv6();
                let r = match applied {
                    None => sockopt::apply(s, &sh.sp, ipv6).map(|a| *applied = Some(a)),
                    Some(_) => sockopt::set(s, &sh.sp, ipv6, false),
                };
                r.map_err(|m| Fail::Txn(io::Error::other(m)))?;
                c.st = St::Writing;
                c.off = 0;
                c.last_move = Instant::now();
            }
            St::Writing => match s.write(&req[c.off..]) {
                Ok(n) => {
                    c.off += n;
                    c.last_move = Instant::now();
                    if c.off == req.len() {
                        c.st = St::Reading;
                        c.off = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fail::Txn(e)),
            },
            St::Reading => {
                // The response, then end of stream: one byte more is a protocol error.
                let room = resp.len();
                let to = if c.off < want {
                    &mut resp[..(want - c.off).min(room)]
                } else {
                    &mut resp[..1]
                };
                match s.read(to) {
                    Ok(0) if c.off < want => {
                        return Err(Fail::Txn(io::ErrorKind::UnexpectedEof.into()))
                    }
                    Ok(0) => return Ok(true),
                    Ok(_) if c.off >= want => {
                        return Err(Fail::Txn(io::Error::other("more than resp_bytes")))
                    }
                    Ok(n) => {
                        c.off += n;
                        c.last_move = Instant::now();
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Fail::Txn(e)),
                }
            }
            St::Free | St::Done => return Ok(false),
        }
    }
}

/// One worker: its flows' transactions until the tickets or the time run out.
fn worker(sh: &Shared, flows: Vec<usize>) -> Result<WorkerOut, TestError> {
    let p = sh.p;
    let mut poll =
        Poll::new().map_err(|e| TestError::new(ErrorCode::Io, format!("tcp_crr: poll: {e}")))?;
    let mut events = Events::with_capacity(1024);
    let now = Instant::now();
    let mut conns: Vec<Conn> = flows
        .iter()
        .map(|_| Conn {
            s: None,
            st: St::Free,
            t0: now,
            connected: Duration::ZERO,
            off: 0,
            last_move: now,
        })
        .collect();
    let mut done = vec![0u64; flows.len()];
    let mut tally = Tally::default();
    let mut applied = None;
    let req = PageBuf::random(p.req_bytes as usize);
    let want = p.resp_bytes as usize;
    let mut resp = vec![0u8; want.clamp(1, 256 << 10)];
    let connect_timeout = Duration::from_millis(p.connect_timeout_ms);
    // Deadlines are looked at this often (a connect timeout of 1 ms fires
    // within about 2 ms).
    let scan = (connect_timeout / 2).clamp(Duration::from_millis(1), Duration::from_millis(5));
    let mut free: Vec<usize> = (0..flows.len()).collect();
    let mut ready: Vec<usize> = Vec::new();
    let (mut txn, mut conn_ns) = (Vec::new(), Vec::new());
    let (mut handed, mut scanned) = (now, now);
    let mut live = flows.len();
    // A failed transaction: counted, its connection closed, the flow freed.
    let fail = |c: &mut Conn, f: Fail, tally: &mut Tally, done_so_far: u64| {
        c.s = None;
        c.st = St::Free;
        match f {
            Fail::Connect(e) => {
                *tally.connect_failures.entry(errno_name(&e)).or_default() += 1;
                if let Some(n) = exhausted(&e, done_so_far) {
                    sh.stop.store(true, Ordering::Relaxed);
                    sh.note.lock().expect("note lock").get_or_insert(n);
                }
            }
            Fail::Txn(e) => *tally.txn_failures.entry(errno_name(&e)).or_default() += 1,
        }
    };
    while live > 0 {
        if sh.cancel.load(Ordering::Relaxed) {
            return Err(TestError::cancelled());
        }
        while let Some(k) = free.pop() {
            if !sh.ticket() {
                conns[k].st = St::Done;
                live -= 1;
                continue;
            }
            tally.attempts += 1;
            let c = &mut conns[k];
            c.t0 = Instant::now();
            match open(sh, &poll, k) {
                Ok(s) => {
                    c.s = Some(s);
                    c.st = St::Connecting;
                    ready.push(k);
                }
                Err(e) => {
                    let n = sh.samples.len() as u64 + txn.len() as u64;
                    fail(c, Fail::Connect(e), &mut tally, n);
                    free.push(k);
                }
            }
        }
        while let Some(k) = ready.pop() {
            let c = &mut conns[k];
            if c.s.is_none() {
                continue; // a stale event of a closed connection
            }
            match advance(c, sh, &req, &mut resp, want, &mut applied) {
                Ok(false) => {}
                Ok(true) => {
                    let t = c.t0.elapsed();
                    c.s = None; // this side closes second: the peer's FIN came
                    c.st = St::Free;
                    txn.push(t.as_nanos() as u64);
                    conn_ns.push(c.connected.as_nanos() as u64);
                    done[k] += 1;
                    free.push(k);
                }
                Err(f) => {
                    let n = sh.samples.len() as u64 + txn.len() as u64;
                    fail(c, f, &mut tally, n);
                    free.push(k);
                }
            }
        }
        let now = Instant::now();
        if now >= handed + HAND_OVER {
            sh.samples.hand_over(&mut txn, &mut conn_ns);
            handed = now;
        }
        if now >= scanned + scan {
            scanned = now;
            for (k, c) in conns.iter_mut().enumerate() {
                let f = match c.st {
                    St::Connecting if now - c.t0 > connect_timeout => {
                        Fail::Connect(io::ErrorKind::TimedOut.into())
                    }
                    St::Writing | St::Reading if now - c.last_move > STALL => {
                        Fail::Txn(io::ErrorKind::TimedOut.into())
                    }
                    _ => continue,
                };
                let n = sh.samples.len() as u64 + txn.len() as u64;
                fail(c, f, &mut tally, n);
                free.push(k);
            }
        }
        if !free.is_empty() || live == 0 {
            continue;
        }
        let timeout = SLICE.min(scan);
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TestError::new(ErrorCode::Io, format!("tcp_crr: poll: {e}"))),
        }
        ready.extend(events.iter().map(|e| e.token().0));
    }
    sh.samples.hand_over(&mut txn, &mut conn_ns);
    Ok(WorkerOut {
        tally,
        per_flow: flows.into_iter().zip(done).collect(),
        applied,
        ended: Instant::now(),
    })
}

/// The driving side of a many-flow `tcp_crr` against `addr`, on `workers`
/// threads; the side's thread sends samples and progress meanwhile.
pub fn drive(
    ctx: &TestCtx,
    p: &CrrParams,
    addr: SocketAddr,
    workers: usize,
) -> Result<Driven, TestError> {
    let n = p.flows as usize;
    let threads = workers.clamp(1, n.max(1));
    let start = Instant::now();
    let sh = Shared {
        p,
        sp: p.socket(),
        addr,
        end: p.duration_s.map(|d| start + Duration::from_secs_f64(d)),
        cancel: &ctx.cancel,
        stop: AtomicBool::new(false),
        attempts: AtomicU64::new(0),
        note: Mutex::new(None),
        samples: Collected::default(),
    };
    let interval = Duration::from_millis(p.interval_ms as u64);
    let mut flushed = 0usize;
    let mut next_report = start + interval;
    let results = pool::run(
        "flow",
        &Placement::unpinned(workers),
        (0..n).collect(),
        |_, g, _| {
            let r = worker(&sh, g);
            if r.is_err() {
                sh.stop.store(true, Ordering::Relaxed);
            }
            r
        },
        || {
            if Instant::now() < next_report {
                return;
            }
            next_report = Instant::now() + interval;
            sh.samples.drain(&mut flushed, |from, txn, conn| {
                for (kind, v) in [(SampleKind::ConnectNs, conn), (SampleKind::RttNs, txn)] {
                    ctx.sink
                        .samples_from(kind, ctx.role, ctx.test_id, ctx.step, 0, from as u32, v);
                }
            });
            let attempts = sh.attempts.load(Ordering::Relaxed);
            progress(ctx, p, start, attempts, flushed as u64);
        },
    )
    .expect("the OS starts a thread")
    .into_iter()
    .map(|r| r.expect("flow worker panicked"));
    if ctx.cancelled() {
        return Err(TestError::cancelled());
    }
    let mut tally = Tally::default();
    let mut per_flow = vec![0u64; n];
    let (mut applied, mut ended) = (None, start);
    for r in results {
        let w = r?;
        tally.attempts += w.tally.attempts;
        for (into, from) in [
            (&mut tally.connect_failures, w.tally.connect_failures),
            (&mut tally.txn_failures, w.tally.txn_failures),
        ] {
            for (k, v) in from {
                *into.entry(k).or_default() += v;
            }
        }
        for (i, c) in w.per_flow {
            per_flow[i] = c;
        }
        applied = applied.or(w.applied);
        ended = ended.max(w.ended);
    }
    let [txn, conn] = sh.samples.take();
    tally.txn_ns = txn;
    tally.connect_ns = conn;
    tally.flushed = flushed;
    Ok(Driven {
        tally,
        seconds: ended.duration_since(start).as_secs_f64(),
        note: sh.note.into_inner().expect("note lock"),
        applied,
        flows: Some(FlowFigures::of(&per_flow, threads)),
    })
}
