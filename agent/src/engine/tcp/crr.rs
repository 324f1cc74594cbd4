//! `tcp_crr`: TCP connection rate between two agents (netperf TCP_CRR,
//! neper tcp_crr). Each transaction is a fresh connection: the driving
//! side connects, writes `req_bytes`, reads `resp_bytes`, sees the serving
//! side close and closes; the serving side accepts, reads the request,
//! answers and closes first. Closing first on the serving side leaves the
//! TIME_WAIT there, on the serving port's 4-tuples, so the driving side's
//! ephemeral ports are free again at once (as with HTTP/1.0); where they
//! still run out, the test ends with one line saying so.
//!
//! Set-up is the other TCP kinds' one (one-time key, control line) with no
//! keyed data connections: the transactions' connections are taken only
//! from the address that proved the key on the control line (the UDP
//! kinds' rule), and every other one is closed unanswered and counted.
//!
//! Both sides are one mio `Poll` on the test's thread: the driving side
//! runs one connection at a time (the transaction is the unit measured, as
//! netperf's), the serving side holds its open connections at once, the
//! listener and the control line. Failed connects are counted by errno, a
//! connection that breaks mid-transaction by errno too; neither stops the
//! test. Every connection is closed when its transaction ends, and the
//! listener with the test.
//!
//! The serving side holds at most `flows` + [`SPARE_CONNS`] connections:
//! the driving agent has at most `flows` open at once (each of its flows
//! opens the next only once the last was closed), so more are idle ones
//! from its address (a host behind the same NAT, another user of that
//! host). Taking one more closes the one held longest without a byte of
//! request (else the one held longest), unanswered, counted with the
//! strangers: 1 100 idle connections held every descriptor of an agent
//! limited to 1 024 before, and a controller's login waited 9.5 s.

use super::conn::{errno_name, exhausted, progress, Driven, Tally};
use super::{crr_flows, setup};
use crate::engine::buf::PageBuf;
use crate::engine::ctx::{EngineEnv, Job, TestCtx};
use crate::engine::error::{Refusal, TestError};
use crate::engine::peer::{self, Connected, Line};
use crate::engine::rr_loop::stats_us;
use crate::engine::{bind, sockopt};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{CrrParams, Kind, TcpSocketParams};
use meshperf_protocol::peer::PeerDone;
use meshperf_protocol::summary::{CrrClient, CrrSummary, TcpRrSocket};
use mio::net::TcpStream as MioStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::Value;
use slab::Slab;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How often a wait looks at cancel.
const SLICE: Duration = Duration::from_millis(200);
/// A connected peer that sends or takes nothing for this long has stalled.
const STALL: Duration = Duration::from_secs(10);
/// The driving side's one connection.
const CONN: Token = Token(0);
const LISTENER: Token = Token(usize::MAX);
/// Connections the serving side may hold beyond `flows` (within the
/// descriptors [`flows::workers`] keeps spare beside the flows').
pub const SPARE_CONNS: usize = 16;
const CONTROL: Token = Token(usize::MAX - 1);

/// The parameters, and this side's worker threads for its flows (1 for
/// one flow), checked before any traffic: the serving side holds up to
/// `flows` connections at once too, so it checks its descriptors as well.
fn parse(params: &Value, env: &EngineEnv) -> Result<(CrrParams, usize), Refusal> {
    let p =
        CrrParams::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    let workers = setup::workers(p.congestion.as_deref(), p.flows, p.threads)?;
    Ok((p, workers))
}

/// Serving side set-up (see [`crate::engine::prepare`]).
pub fn prepare(params: &Value, env: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    let (p, _) = parse(params, env)?;
    let (listener, port, key) = setup::listen(&p.socket(), env)?;
    Ok((port, key, Box::new(move |ctx| serve(ctx, p, listener, key))))
}

/// Driving side set-up (see [`crate::engine::start`]).
pub fn start(params: Value, peer_addr: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let (p, workers) = parse(&params, env)?;
    bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| drive(ctx, p, peer_addr, workers)))
}

fn serve(ctx: TestCtx, p: CrrParams, listener: TcpListener, key: [u8; 16]) {
    // The acceptor takes the listener for the control line; the test keeps
    // a second descriptor of it for the transactions (both closed at the end).
    let r = listener
        .try_clone()
        .map_err(|e| TestError::new(ErrorCode::Io, format!("data port: {e}")))
        .and_then(|own| {
            let c = peer::accept(&ctx, own, &key, Kind::TcpCrr, 0)?;
            Server::run(&ctx, &p, listener, c)
        });
    ctx.report(r);
    ctx.finished();
}

fn drive(ctx: TestCtx, p: CrrParams, peer_addr: PeerAddr, workers: usize) {
    let r = peer::connect(&ctx, &peer_addr, Kind::TcpCrr, &p.socket(), 0)
        .and_then(|c| client(&ctx, &p, c, workers));
    ctx.report(r);
    ctx.finished();
}

/// Why a connection's transaction did not complete.
enum Fail {
    /// `connect()` failed (or did not finish in time).
    Connect(io::Error),
    /// The connection broke after it was made.
    Txn(io::Error),
    Cancelled,
}

/// The driving side's connection maker: one poll, the request buffer, the
/// options, and the first connection's options as the kernel has them.
struct Dialer<'a> {
    ctx: &'a TestCtx,
    poll: Poll,
    events: Events,
    addr: SocketAddr,
    sp: TcpSocketParams,
    req: PageBuf,
    resp: PageBuf,
    connect_timeout: Duration,
    applied: Option<sockopt::Applied>,
}

impl Dialer<'_> {
    /// Waits for the next readiness event of the connection, until
    /// `deadline` (then `TimedOut`); looks at cancel every [`SLICE`].
    fn wait(&mut self, deadline: Instant) -> Result<(), Fail> {
        loop {
            if self.ctx.cancelled() {
                return Err(Fail::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Fail::Txn(io::ErrorKind::TimedOut.into()));
            }
            match self.poll.poll(&mut self.events, Some(left.min(SLICE))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fail::Txn(e)),
            }
            if self.events.iter().any(|e| e.token() == CONN) {
                return Ok(());
            }
        }
    }

    /// One transaction: connect, request, response, the peer's close, ours.
    /// Returns the connect time and the whole time.
    fn transaction(&mut self) -> Result<(Duration, Duration), Fail> {
        let t0 = Instant::now();
        let sock = Socket::new(
            Domain::for_address(self.addr),
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )
        .map_err(Fail::Connect)?;
        sockopt::pre_connect(&sock, &self.sp).map_err(Fail::Connect)?;
        if let Some(ip) = self.sp.client_bind {
            sock.bind(&SocketAddr::new(ip, 0).into())
                .map_err(Fail::Connect)?;
        }
        // Registered before connect, edge-triggered: every wait below
        // follows an operation that would block. Closing the socket takes
        // it out of the poll.
        self.poll
            .registry()
            .register(
                &mut SourceFd(&sock.as_raw_fd()),
                CONN,
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(Fail::Connect)?;
        match sock.connect(&self.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                let deadline = t0 + self.connect_timeout;
                loop {
                    match self.wait(deadline) {
                        Ok(()) => {}
                        Err(Fail::Txn(e)) => return Err(Fail::Connect(e)),
                        Err(f) => return Err(f),
                    }
                    if let Some(e) = sock.take_error().map_err(Fail::Connect)? {
                        return Err(Fail::Connect(e));
                    }
                    // Writable and connected, or a spurious wake-up.
                    if sock.peer_addr().is_ok() {
                        break;
                    }
                }
            }
            Err(e) => return Err(Fail::Connect(e)),
        }
        let connected = t0.elapsed();
        let ipv6 = self.addr.is_ipv6();
        if self.applied.is_none() {
            let a = sockopt::apply(&sock, &self.sp, ipv6)
                .map_err(|m| Fail::Txn(io::Error::other(m)))?;
            self.applied = Some(a);
        } else {
            sockopt::set(&sock, &self.sp, ipv6, false)
                .map_err(|m| Fail::Txn(io::Error::other(m)))?;
        }
        let mut s: std::net::TcpStream = sock.into();
        self.exchange(&mut s)?;
        drop(s);
        Ok((connected, t0.elapsed()))
    }

    /// Writes the request, reads the whole response, then the peer's close.
    fn exchange(&mut self, s: &mut std::net::TcpStream) -> Result<(), Fail> {
        let mut off = 0;
        while off < self.req.len() {
            match s.write(&self.req[off..]) {
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait(Instant::now() + STALL)?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fail::Txn(e)),
            }
        }
        let want = self.resp.len();
        let mut got = 0;
        // The response, then end of stream: one byte more is a protocol error.
        loop {
            let buf = &mut self.resp;
            let to = if got < want {
                &mut buf[got..]
            } else {
                &mut buf[..1]
            };
            match s.read(to) {
                Ok(0) if got < want => return Err(Fail::Txn(io::ErrorKind::UnexpectedEof.into())),
                Ok(0) => return Ok(()),
                Ok(_) if got >= want => {
                    return Err(Fail::Txn(io::Error::other("more than resp_bytes")))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait(Instant::now() + STALL)?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fail::Txn(e)),
            }
        }
    }
}

fn io_failed(e: io::Error) -> TestError {
    TestError::new(ErrorCode::Io, format!("tcp_crr: {e}"))
}

/// The driving side: transactions until the count is tried or the time is
/// up (one flow here, several on worker threads in [`crr_flows`]), then
/// the counts over the control line.
fn client(
    ctx: &TestCtx,
    p: &CrrParams,
    mut conn: Connected,
    workers: usize,
) -> Result<CrrSummary, TestError> {
    let addr = conn.control.stream().peer_addr().map_err(io_failed)?;
    let start = Instant::now();
    let mut d = match p.flows {
        1 => one_flow(ctx, p, addr, start)?,
        _ => crr_flows::drive(ctx, p, addr, workers)?,
    };
    d.tally.flush(ctx);
    progress(ctx, p, start, d.tally.attempts, d.tally.txn_ns.len() as u64);
    finish(p, &mut conn, addr, d)
}

/// One flow: one connection at a time on this thread.
fn one_flow(
    ctx: &TestCtx,
    p: &CrrParams,
    addr: SocketAddr,
    start: Instant,
) -> Result<Driven, TestError> {
    let mut d = Dialer {
        ctx,
        poll: Poll::new().map_err(io_failed)?,
        events: Events::with_capacity(8),
        addr,
        sp: p.socket(),
        req: PageBuf::random(p.req_bytes as usize),
        resp: PageBuf::new(p.resp_bytes as usize, 0),
        connect_timeout: Duration::from_millis(p.connect_timeout_ms),
        applied: None,
    };
    let mut t = Tally::default();
    let count = p.count.unwrap_or(u64::MAX);
    let interval = Duration::from_millis(p.interval_ms as u64);
    let end = p.duration_s.map(|s| start + Duration::from_secs_f64(s));
    let mut next_report = start + interval;
    let mut note = None;
    while t.attempts < count {
        t.attempts += 1;
        match d.transaction() {
            Ok((c, all)) => {
                t.connect_ns.push(c.as_nanos() as u64);
                t.txn_ns.push(all.as_nanos() as u64);
            }
            Err(Fail::Cancelled) => return Err(TestError::cancelled()),
            Err(Fail::Connect(e)) => {
                *t.connect_failures.entry(errno_name(&e)).or_default() += 1;
                if let Some(n) = exhausted(&e, t.txn_ns.len() as u64) {
                    note = Some(n);
                    break;
                }
            }
            Err(Fail::Txn(e)) => *t.txn_failures.entry(errno_name(&e)).or_default() += 1,
        }
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        let now = Instant::now();
        if now >= next_report {
            next_report = now + interval;
            t.flush(ctx);
            progress(ctx, p, start, t.attempts, t.txn_ns.len() as u64);
        }
        if end.is_some_and(|e| now >= e) {
            break;
        }
    }
    Ok(Driven {
        tally: t,
        seconds: start.elapsed().as_secs_f64(),
        note,
        applied: d.applied,
        flows: None,
    })
}

/// The counts over the control line, and the driving side's summary.
fn finish(
    p: &CrrParams,
    conn: &mut Connected,
    addr: SocketAddr,
    d: Driven,
) -> Result<CrrSummary, TestError> {
    let Driven {
        tally: t,
        seconds,
        mut note,
        applied,
        flows,
    } = d;
    let n = t.txn_ns.len() as u64;
    let peer_transactions = match peer::exchange_done(&mut conn.control, n) {
        Ok(done) => Some(done.bytes),
        Err(e) => {
            note.get_or_insert(format!(
                "the serving agent did not confirm its count: {}",
                e.message
            ));
            None
        }
    };
    if n == 0 && note.is_none() {
        note = Some("no transaction completed".into());
    }
    let failures = |m: &BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tps = if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    };
    let mut line = format!(
        "{n} transactions of {} + {} bytes in {seconds:.3} s: {tps:.1} transactions/s",
        p.req_bytes, p.resp_bytes
    );
    if !t.connect_failures.is_empty() {
        line += &format!("; failed connects: {}", failures(&t.connect_failures));
    }
    if !t.txn_failures.is_empty() {
        line += &format!("; broken connections: {}", failures(&t.txn_failures));
    }
    if let Some(f) = &flows {
        line += &format!("; {}", f.text());
    }
    Ok(CrrSummary {
        transactions: n,
        client: Some(CrrClient {
            attempts: t.attempts,
            seconds,
            transactions_per_second: tps,
            connect_us: stats_us(&t.connect_ns),
            txn_us: stats_us(&t.txn_ns),
        }),
        connect_failures: t.connect_failures,
        transaction_failures: t.txn_failures,
        bytes: n * (p.req_bytes + p.resp_bytes),
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        line,
        note,
        peer_transactions,
        strangers: None,
        tcp: applied.map(|a| socket_figures(addr.ip(), p, a)),
        flows,
    })
}

fn socket_figures(peer: IpAddr, p: &CrrParams, a: sockopt::Applied) -> TcpRrSocket {
    TcpRrSocket {
        peer: peer.to_string(),
        nodelay: a.nodelay,
        tos: a.tos,
        congestion: a.congestion,
        mss_requested: p.mss,
        mss: a.mss,
        sndbuf_actual: a.sndbuf_actual,
        rcvbuf_actual: a.rcvbuf_actual,
    }
}

/// One connection the serving side holds: request bytes read, response
/// bytes written.
struct Held {
    s: MioStream,
    got: usize,
    sent: usize,
    /// When it last moved a byte (or was accepted).
    last: Instant,
}

/// The serving side: every connection at once, the listener and the
/// control line, on one poll.
struct Server<'a> {
    ctx: &'a TestCtx,
    p: &'a CrrParams,
    sp: TcpSocketParams,
    poll: Poll,
    held: Slab<Held>,
    peer_ip: IpAddr,
    /// Transactions answered.
    answered: u64,
    /// Connections taken (a count-bounded test takes its count, no more).
    taken: u64,
    strangers: u64,
    beyond: u64,
    /// Connections held at most (`flows` + [`SPARE_CONNS`]).
    room: usize,
    /// Idle connections closed to keep within `room`.
    crowded: u64,
    failures: BTreeMap<String, u64>,
    resp: PageBuf,
    scratch: Vec<u8>,
    applied: Option<sockopt::Applied>,
}

impl Server<'_> {
    fn run(
        ctx: &TestCtx,
        p: &CrrParams,
        listener: TcpListener,
        mut conn: Connected,
    ) -> Result<CrrSummary, TestError> {
        listener.set_nonblocking(true).map_err(io_failed)?;
        let mut srv = Server {
            ctx,
            p,
            sp: p.socket(),
            poll: Poll::new().map_err(io_failed)?,
            held: Slab::new(),
            peer_ip: conn.peer_ip,
            answered: 0,
            taken: 0,
            strangers: 0,
            beyond: 0,
            room: p.flows as usize + SPARE_CONNS,
            crowded: 0,
            failures: BTreeMap::new(),
            resp: PageBuf::random(p.resp_bytes as usize),
            scratch: vec![0; (p.req_bytes as usize).min(1 << 20)],
            applied: None,
        };
        let control_fd = conn.control.fd();
        let reg = srv.poll.registry();
        reg.register(
            &mut SourceFd(&listener.as_raw_fd()),
            LISTENER,
            Interest::READABLE,
        )
        .and_then(|_| reg.register(&mut SourceFd(&control_fd), CONTROL, Interest::READABLE))
        .map_err(io_failed)?;
        let r = srv.serve(&listener, &mut conn.control);
        // Every connection still held is closed with the test (dropped
        // with the slab), and so is the listener.
        let _ = srv.poll.registry().deregister(&mut SourceFd(&control_fd));
        let client_count = r?;
        let failed = !srv.failures.is_empty();
        let mut failures = std::mem::take(&mut srv.failures);
        if !srv.held.is_empty() {
            *failures.entry("open at the end".into()).or_default() += srv.held.len() as u64;
        }
        let n = srv.answered;
        let mut line = format!(
            "answered {n} connections of {} bytes with {} bytes",
            p.req_bytes, p.resp_bytes
        );
        if srv.strangers > 0 {
            line += &format!("; closed {} from other addresses", srv.strangers);
        }
        if srv.crowded > 0 {
            line += &format!(
                "; closed {} idle past the {} held at once",
                srv.crowded, srv.room
            );
        }
        if srv.beyond > 0 {
            line += &format!("; closed {} past the prepared count", srv.beyond);
        }
        // A mismatch between the two counts is news only when nothing
        // failed (a failure explains it already).
        let note = (client_count != n).then(|| {
            format!("the driving agent counted {client_count} transactions, this side answered {n}")
        });
        Ok(CrrSummary {
            transactions: n,
            client: None,
            connect_failures: BTreeMap::new(),
            transaction_failures: failures,
            bytes: n * (p.req_bytes + p.resp_bytes),
            req_bytes: p.req_bytes,
            resp_bytes: p.resp_bytes,
            line,
            note: note.filter(|_| !failed),
            peer_transactions: Some(client_count),
            strangers: Some(srv.strangers + srv.crowded),
            tcp: srv
                .applied
                .take()
                .map(|a| socket_figures(conn.peer_ip, p, a)),
            flows: None,
        })
    }

    /// Serves until the driving side's end line; returns its count.
    fn serve(&mut self, listener: &TcpListener, control: &mut Line) -> Result<u64, TestError> {
        let mut events = Events::with_capacity(1024);
        let cap = self.p.count.unwrap_or(u64::MAX);
        // Stalled connections are looked for this often, not on every
        // wake-up: with many flows the serving side holds many at once.
        let mut looked = Instant::now();
        loop {
            if self.ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            match self.poll.poll(&mut events, Some(SLICE)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_failed(e)),
            }
            let mut control_ready = false;
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept_all(listener, cap)?,
                    CONTROL => control_ready = true,
                    Token(i) => self.advance(i),
                }
            }
            if control_ready {
                match control.recv::<PeerDone>(Duration::ZERO) {
                    Ok(Some(done)) => {
                        control
                            .send(&PeerDone {
                                done: true,
                                bytes: self.answered,
                            })
                            .map_err(peer::gone)?;
                        return Ok(done.bytes);
                    }
                    Ok(None) => {}
                    Err(e) => return Err(peer::gone(e)),
                }
            }
            if looked.elapsed() >= SLICE {
                looked = Instant::now();
                self.drop_stalled();
            }
        }
    }

    /// Takes every connection waiting on the listener.
    fn accept_all(&mut self, listener: &TcpListener, cap: u64) -> Result<(), TestError> {
        loop {
            let (s, from) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    // Out of descriptors or memory: the connection waits in
                    // the backlog and the driving side times out on it.
                    *self.failures.entry(errno_name(&e)).or_default() += 1;
                    return Ok(());
                }
            };
            if from.ip() != self.peer_ip {
                self.strangers += 1;
                continue;
            }
            if self.taken == cap {
                self.beyond += 1;
                continue;
            }
            if self.held.len() >= self.room {
                self.make_room();
            }
            self.taken += 1;
            let ipv6 = from.is_ipv6();
            let set = if self.applied.is_none() {
                sockopt::apply(&s, &self.sp, ipv6).map(|a| self.applied = Some(a))
            } else {
                sockopt::set(&s, &self.sp, ipv6, false)
            };
            if let Err(m) = set {
                *self.failures.entry(m).or_default() += 1;
                continue;
            }
            if let Err(e) = s.set_nonblocking(true) {
                *self.failures.entry(errno_name(&e)).or_default() += 1;
                continue;
            }
            let mut s = MioStream::from_std(s);
            let entry = self.held.vacant_entry();
            let i = entry.key();
            if let Err(e) = self.poll.registry().register(
                &mut s,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            ) {
                *self.failures.entry(errno_name(&e)).or_default() += 1;
                continue;
            }
            entry.insert(Held {
                s,
                got: 0,
                sent: 0,
                last: Instant::now(),
            });
            // The request may be there already (edge-triggered: no event
            // would say so again).
            self.advance(i);
        }
    }

    /// Moves connection `i` as far as it goes: the request in, the
    /// response out, then closes it.
    fn advance(&mut self, i: usize) {
        let (want, resp_len) = (self.p.req_bytes as usize, self.resp.len());
        let Some(h) = self.held.get_mut(i) else {
            return; // closed already: a stale event
        };
        let r: io::Result<bool> = (|| {
            while h.got < want {
                let n = (want - h.got).min(self.scratch.len());
                match h.s.read(&mut self.scratch[..n]) {
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => {
                        h.got += n;
                        h.last = Instant::now();
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            while h.sent < resp_len {
                match h.s.write(&self.resp[h.sent..]) {
                    Ok(n) => {
                        h.sent += n;
                        h.last = Instant::now();
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(true)
        })();
        match r {
            Ok(false) => return,
            Ok(true) => self.answered += 1,
            Err(e) => *self.failures.entry(errno_name(&e)).or_default() += 1,
        }
        // Closing takes the socket out of the poll; this side closes first.
        let h = self.held.remove(i);
        drop(h);
    }

    /// Closes the connection held longest that has sent no byte of its
    /// request (else the one held longest of all), unanswered, to take a
    /// new one: the driving agent's newest connection is the one it waits
    /// on, an idle one is nobody's. Its place in a count-bounded test's
    /// count is given back.
    fn make_room(&mut self) {
        let victim = self
            .held
            .iter()
            .min_by_key(|(_, h)| (h.got > 0 || h.sent > 0, h.last))
            .map(|(i, _)| i);
        if let Some(i) = victim {
            self.held.remove(i);
            self.crowded += 1;
            self.taken -= 1;
        }
    }

    /// Closes connections that moved nothing for [`STALL`] (a peer that
    /// connected and went away without a reset).
    fn drop_stalled(&mut self) {
        let now = Instant::now();
        let stale: Vec<usize> = self
            .held
            .iter()
            .filter(|(_, h)| now.duration_since(h.last) > STALL)
            .map(|(i, _)| i)
            .collect();
        for i in stale {
            self.held.remove(i);
            *self.failures.entry("stalled".into()).or_default() += 1;
        }
    }
}
