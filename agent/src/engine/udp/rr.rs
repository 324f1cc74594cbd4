//! `udp_rr`: UDP request/response latency (udp_req_timo/udp_resp, netperf
//! UDP_RR, sockperf ping-pong). One request in flight at a time; each reply
//! is matched to its request by sequence number and token, so a late reply
//! is counted as `bad` and never taken for the answer to a later request.
//! The serving side answers only the address bound during set-up (see
//! [`crate::engine::udp`]); everything else is counted as `foreign` and dropped.
//! An ICMP error for an earlier datagram (which anyone knowing the flow's
//! addresses and ports can send) is counted (`icmp_errors`) on either
//! side and never ends the test: a send it failed is made again
//! ([`udp::send_past_icmp`]), a receive it failed waits on.

use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use crate::engine::udp::{self, Clock, Flow, Hdr, UdpTest, END, REPLY, REQUEST};
use crate::engine::watchdog::{self, Watchdog};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{Kind, Limits, ParamError, UdpRrParams, UdpSocketParams};
use meshperf_protocol::peer::{
    UdpRrRequesterLine as RequesterLine, UdpRrResponderLine as ResponderLine, UdpRrServerCounts,
};
use meshperf_protocol::summary::{UdpRrServerSummary, UdpRrSummary};
use meshperf_stats::stats::Summary;
use serde_json::Value;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Consecutive timeouts after which the peer is taken to have stopped answering.
const GIVE_UP: u64 = 10;
/// A responder ends when its requester has sent nothing for this long
/// (plus the test's per-request timeout), as a TCP responder does.
const STALL: Duration = Duration::from_secs(10);

impl UdpTest for UdpRrParams {
    const KIND: Kind = Kind::UdpRr;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        UdpRrParams::parse(v, limits)
    }
    fn sock(&self) -> &UdpSocketParams {
        &self.sock
    }
    const SHARED_PORT: bool = true;
    type ServeSummary = UdpRrServerSummary;
    type DriveSummary = UdpRrSummary;
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<UdpRrServerSummary, TestError> {
        respond(ctx, self, f)
    }
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<UdpRrSummary, TestError> {
        drive(ctx, self, f)
    }
}

/// What the responding side counted.
#[derive(Default)]
struct Tally {
    received: u64,
    replied: u64,
    bad: u64,
    icmp: u64,
    /// Requests past the prepared count, left unanswered.
    beyond: u64,
}

/// A requester that goes quiet with its control connection still open
/// (frozen, or a hostile peer holding the key) must not hold the serving
/// side until the duration limit: no request for `quiet` ends it. The loop
/// stamps each request (one clock read); the watchdog wakes it once the
/// quiet time has passed.
#[derive(Clone)]
struct Quiet {
    base: Instant,
    last: Arc<AtomicU64>,
    quiet: Duration,
}

impl Quiet {
    fn new(p: &UdpRrParams) -> Quiet {
        Quiet {
            base: Instant::now(),
            last: Arc::new(AtomicU64::new(0)),
            quiet: STALL + Duration::from_millis(p.timeout_ms) + Duration::from_micros(p.wait_us),
        }
    }

    fn stamp(&self) {
        let now = self.base.elapsed().as_nanos() as u64;
        self.last.store(now, Ordering::Relaxed);
    }

    fn silent(&self) -> bool {
        let now = self.base.elapsed().as_nanos() as u64;
        now.saturating_sub(self.last.load(Ordering::Relaxed)) > self.quiet.as_nanos() as u64
    }
}

/// Serving side: answers each request of the peer's with a reply of
/// `resp_bytes`, until the requester's `done`, a cancel, the requester's
/// silence or its control line going away.
fn respond(ctx: &TestCtx, p: &UdpRrParams, mut f: Flow) -> Result<UdpRrServerSummary, TestError> {
    // No receive timeout (see `watchdog`): the watchdog interrupts the wait
    // every 20 ms while the control line has something for us (`done`, or
    // the peer gone), the requester fell silent or the test is cancelled;
    // END ends it at once.
    let period = Duration::from_millis(20);
    f.sock
        .set_read_timeout(watchdog::read_timeout(period))
        .map_err(udp::io_err)?;
    let (line, cancel) = (f.line.fd(), ctx.cancel.clone());
    let quiet = Quiet::new(p);
    let dog_quiet = quiet.clone();
    let _dog = Watchdog::start(period, move || {
        cancel.load(Ordering::Relaxed) || watchdog::readable(line) || dog_quiet.silent()
    });
    // Replies leave through a socket connected to the peer, so the kernel
    // keeps their route instead of looking it up per datagram (a small
    // gain: docs/performance.md; the timer above is the larger part). Its twin on
    // the same port gets everyone else's datagrams, counted as foreign. The
    // twin is opened after the connect: opened before, a request that came
    // in between (the peer sends its first one the moment it is bound) went
    // to the twin and was lost (1 test run in many timed one request out).
    f.sock.connect(f.peer).map_err(udp::io_err)?;
    let strangers = udp::twin(&f.sock).map_err(udp::io_err)?;
    let mut buf = vec![0u8; 65536];
    let mut reply = vec![0u8; p.resp_bytes as usize];
    getrandom::fill(&mut reply).expect("the OS random source works");
    let mut t = Tally::default();
    let mut cap = crate::engine::pace::RateCap::new(&ctx.limits);
    let mut checked = Instant::now();
    // Look at the control line now rather than at the next 20 ms check.
    let mut look = false;
    let note = loop {
        match f.sock.recv_from(&mut buf) {
            Ok((n, from)) if from == f.peer => match Hdr::read(&buf[..n]) {
                // Past the prepared count: whatever the peer does, this side
                // answers no more than the test it prepared.
                Some(h) if h.is(REQUEST, f.token) && t.replied >= p.count => {
                    t.received += 1;
                    t.beyond += 1;
                }
                Some(h) if h.is(REQUEST, f.token) => {
                    t.received += 1;
                    quiet.stamp();
                    // The whole token: a compact request may get a full reply.
                    Hdr {
                        kind: REPLY,
                        token: f.token,
                        ..h
                    }
                    .write(&mut reply);
                    if let Some(c) = cap.as_mut() {
                        c.take(reply.len());
                    }
                    if udp::send_past_icmp(&mut t.icmp, || f.sock.send(&reply)).is_ok() {
                        t.replied += 1;
                    }
                }
                Some(h) if h.is(udp::HELLO, f.token) => {}
                // The requester's `done` is on its way (or here): look now
                // rather than at the next 20 ms check.
                Some(h) if h.is(END, f.token) => look = true,
                _ => t.bad += 1,
            },
            Ok(_) => f.foreign += 1,
            Err(e) if watchdog::woken(&e) => look = true,
            Err(e) if udp::icmp_error(&e) => t.icmp += 1,
            Err(e) => return Err(udp::io_err(e)),
        }
        if look || checked.elapsed() >= Duration::from_millis(20) {
            checked = Instant::now();
            f.foreign += udp::drain(&strangers);
            if let Some(end) = look_around(ctx, p, &mut f, &quiet, look, &mut buf, &mut t)? {
                break end;
            }
            look = false;
        }
    };
    f.foreign += udp::drain(&strangers);
    let counts = UdpRrServerCounts {
        received: t.received,
        replied: t.replied,
        bad: t.bad,
        foreign: f.foreign,
    };
    if note.is_none() {
        let _ = f.line.send(&ResponderLine::Done { server: counts });
    }
    Ok(UdpRrServerSummary {
        counts,
        complete: note.is_none(),
        note,
        peer: f.peer.to_string(),
        rate_capped_us: crate::engine::pace::capped_us(&cap),
        beyond_count: t.beyond,
        icmp_errors: t.icmp,
        socket: udp::applied(&f.sock, &p.sock),
    })
}

/// The serving side's look at the test's state between datagrams (every
/// 20 ms, or at once after END or a watchdog wake, `look`): `Some(None)`
/// when the requester said `done`, `Some(note)` when the test ended early
/// (the requester silent, its control line gone), `None` to go on.
fn look_around(
    ctx: &TestCtx,
    p: &UdpRrParams,
    f: &mut Flow,
    quiet: &Quiet,
    look: bool,
    buf: &mut [u8],
    t: &mut Tally,
) -> Result<Option<Option<String>>, TestError> {
    if ctx.cancelled() {
        return Err(TestError::cancelled());
    }
    if quiet.silent() {
        let why = format!(
            "the requester sent nothing for {} s",
            quiet.quiet.as_secs_f64()
        );
        return Ok(Some(Some(why)));
    }
    // After END the line was sent first; on a network it may still be on
    // its way. After a watchdog wake it is already here.
    let wait = if look {
        Duration::from_millis(50)
    } else {
        Duration::ZERO
    };
    match f.line.recv(wait) {
        Ok(Some(RequesterLine::Done { .. })) => {
            // Requests the requester sent before its `done` may still be
            // queued here (this side ran late on a busy host): count them,
            // answer none (it stopped waiting).
            let _ = f.sock.set_nonblocking(true);
            while let Ok((n, from)) = f.sock.recv_from(buf) {
                match Hdr::read(&buf[..n]) {
                    Some(h) if from == f.peer && h.is(REQUEST, f.token) => {
                        t.received += 1;
                        t.beyond += u64::from(t.replied >= p.count);
                    }
                    _ if from == f.peer => {}
                    _ => f.foreign += 1,
                }
            }
            Ok(Some(None))
        }
        Ok(None) => Ok(None),
        // An altered, replayed or untagged line: the test fails
        // (`protocol`), as every sealed line does (docs/protocol.md).
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(udp::gone(e)),
        Err(e) => Ok(Some(Some(format!("the driving agent went away ({e})")))),
    }
}

/// Driving side: `count` requests (or as many as `duration_s` allows), one
/// at a time, each with its own timeout.
/// A progress event: `sent` requests and `answered` replies so far.
fn progress(ctx: &TestCtx, p: &UdpRrParams, start: Instant, sent: u64, answered: u64) {
    let bytes = sent * p.req_bytes + answered * p.resp_bytes;
    let done = match p.duration_s {
        Some(d) => start.elapsed().as_secs_f64() / d,
        None => sent as f64 / p.count as f64,
    };
    udp::progress(ctx, start, bytes, done);
}

/// Waits until request `due` may leave (`wait_us`); false when it would
/// leave at or past the end of a time-bounded run.
fn turn(ctx: &TestCtx, due: Instant, until: Option<Instant>) -> Result<bool, TestError> {
    if until.is_some_and(|u| due >= u) {
        return Ok(false);
    }
    if !crate::engine::pace::sleep_until_or_cancel(due, &ctx.cancel) {
        return Err(TestError::cancelled());
    }
    Ok(true)
}

/// What the requester counts besides round trips.
#[derive(Default)]
struct Counts {
    /// Datagrams that were not the awaited reply, or came too late.
    bad: u64,
    /// ICMP errors reported on the socket ([`udp::icmp_error`]).
    icmp: u64,
}

/// Waits for the reply to request `seq` sent at `t0`: `Ok(true)` when it
/// came in time (its round trip recorded), `Ok(false)` at its timeout,
/// `Err(note)` when the socket failed; mismatched datagrams count as `bad`.
fn reply(
    ctx: &TestCtx,
    p: &UdpRrParams,
    f: &Flow,
    buf: &mut [u8],
    (seq, t0): (u64, Instant),
    rtt: &mut Vec<u64>,
    counts: &mut Counts,
) -> Result<Result<bool, String>, TestError> {
    let timeout = Duration::from_millis(p.timeout_ms);
    loop {
        match f.sock.recv(buf) {
            Ok(n) => {
                let t1 = Instant::now();
                let late = t1 - t0 >= timeout;
                match Hdr::read(&buf[..n]) {
                    Some(h)
                        if h.is(REPLY, f.token)
                            && h.seq == seq
                            && n as u64 == p.resp_bytes
                            && !late =>
                    {
                        rtt.push((t1 - t0).as_nanos() as u64);
                        return Ok(Ok(true));
                    }
                    // Mismatched, or this request's reply past its timeout.
                    _ => counts.bad += 1,
                }
                if late {
                    return Ok(Ok(false));
                }
            }
            Err(e) if watchdog::woken(&e) => {
                if ctx.cancelled() {
                    return Err(TestError::cancelled());
                }
                if t0.elapsed() >= timeout {
                    return Ok(Ok(false));
                }
            }
            // An ICMP error (a closed port, an unreachable): counted; the
            // reply may still come, or the request times out. Only the
            // peer's line says the responder ended (its duration limit,
            // say): an ICMP error alone may be forged.
            Err(e) if udp::icmp_error(&e) => {
                counts.icmp += 1;
                if f.line.peer_spoke() {
                    return Ok(Err(format!(
                        "the peer stopped answering: it ended its side (its UDP port: {e})"
                    )));
                }
                if t0.elapsed() >= timeout {
                    return Ok(Ok(false));
                }
            }
            Err(e) => return Ok(Err(format!("the peer's UDP port stopped answering ({e})"))),
        }
    }
}

/// The end of the requests: `done` on the line (with an `E` datagram as a
/// hint on the UDP path, which the responder is reading: it then reads the
/// line at once; if the datagram is lost it finds the line within 20 ms
/// anyway), and the responder's counts.
fn end(f: &mut Flow, sent: u64, clock: &Clock) -> Result<UdpRrServerCounts, TestError> {
    f.line
        .send(&RequesterLine::Done { sent })
        .map_err(udp::gone)?;
    let mut end = [0u8; udp::UDP_HEADER_LEN as usize];
    Hdr {
        kind: END,
        token: f.token,
        seq: sent,
        t_ns: clock.ns(Instant::now()),
    }
    .write(&mut end);
    let _ = f.sock.send(&end);
    match f
        .line
        .expect(Duration::from_secs(5), "no end line from the peer")?
    {
        ResponderLine::Done { server } => Ok(server),
    }
}

/// The driving side's watchdog (no receive timeout: see `watchdog`): it
/// interrupts the wait once the request in flight is `timeout` old, or on
/// cancel, looking every tenth of the timeout (1 to 10 ms), so a lost reply
/// is given up within that much past its timeout. The returned cell holds
/// the send time (ns from the clock's start, plus 1) of the request waiting
/// for its reply; 0 when none is.
fn reply_dog(
    ctx: &TestCtx,
    f: &Flow,
    timeout: Duration,
    clock: &Clock,
) -> Result<(Arc<AtomicU64>, Watchdog), TestError> {
    let period = (timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(10));
    f.sock
        .set_read_timeout(watchdog::read_timeout(period))
        .map_err(udp::io_err)?;
    let waiting = Arc::new(AtomicU64::new(0));
    let (w, cancel, start) = (waiting.clone(), ctx.cancel.clone(), clock.start);
    let limit = timeout.as_nanos() as u64;
    let dog = Watchdog::start(period, move || {
        let since = w.load(Ordering::Relaxed);
        cancel.load(Ordering::Relaxed)
            || (since != 0 && start.elapsed().as_nanos() as u64 + 1 >= since + limit)
    });
    Ok((waiting, dog))
}

fn drive(ctx: &TestCtx, p: &UdpRrParams, mut f: Flow) -> Result<UdpRrSummary, TestError> {
    let clock = Clock::new();
    let (waiting, _dog) = reply_dog(ctx, &f, Duration::from_millis(p.timeout_ms), &clock)?;
    let applied = udp::applied(&f.sock, &p.sock);
    let mut req = vec![0u8; p.req_bytes as usize];
    getrandom::fill(&mut req).expect("the OS random source works");
    let mut buf = vec![0u8; 65536];
    let mut rtt: Vec<u64> = Vec::with_capacity(p.count.min(1 << 20) as usize);
    let until = p
        .duration_s
        .map(|d| clock.start + Duration::from_secs_f64(d));
    let (mut sent, mut timeouts, mut in_a_row) = (0u64, 0u64, 0u64);
    let mut n = Counts::default();
    let mut note: Option<String> = None;
    let mut tick = Instant::now();
    let interval = Duration::from_millis(p.interval_ms);
    let mut cap = crate::engine::pace::RateCap::new(&ctx.limits);
    let wait_ns = p.wait_us.saturating_mul(1000);
    for seq in 0..p.count {
        if wait_ns > 0
            && !turn(
                ctx,
                clock.start + Duration::from_nanos(wait_ns.saturating_mul(seq)),
                until,
            )?
        {
            break;
        }
        // Before the send time is taken: the cap's wait is not round trip.
        if let Some(c) = cap.as_mut() {
            c.take(req.len());
        }
        let t0 = Instant::now();
        if until.is_some_and(|u| t0 >= u) {
            break;
        }
        Hdr {
            kind: REQUEST,
            token: f.token,
            seq,
            t_ns: clock.ns(t0),
        }
        .write(&mut req);
        waiting.store(clock.ns(t0) + 1, Ordering::Relaxed);
        if let Err(e) = udp::send_past_icmp(&mut n.icmp, || f.sock.send(&req)) {
            note = Some(format!("sending request {seq} failed: {e}"));
            break;
        }
        sent += 1;
        let answered = match reply(ctx, p, &f, &mut buf, (seq, t0), &mut rtt, &mut n)? {
            Ok(answered) => answered,
            Err(n) => {
                note = Some(n);
                false
            }
        };
        waiting.store(0, Ordering::Relaxed);
        if answered {
            in_a_row = 0;
        } else {
            timeouts += 1;
            in_a_row += 1;
        }
        if note.is_some() {
            break;
        }
        if in_a_row >= GIVE_UP {
            note = Some(format!(
                "the peer stopped answering: {GIVE_UP} requests in a row timed out after {} ms each",
                p.timeout_ms
            ));
            break;
        }
        if tick.elapsed() >= interval {
            tick = Instant::now();
            if ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            progress(ctx, p, clock.start, sent, rtt.len() as u64);
        }
    }
    let seconds = clock.start.elapsed().as_secs_f64();
    let server = match end(&mut f, sent, &clock) {
        Ok(server) => Some(server),
        // An altered end line fails the test; a peer gone leaves a partial one.
        Err(e) if e.code == ErrorCode::Protocol => return Err(e),
        Err(e) => {
            note.get_or_insert(e.message);
            None
        }
    };
    ctx.sink
        .samples(SampleKind::RttNs, ctx.role, ctx.test_id, ctx.step, 0, &rtt);
    let us: Vec<f64> = rtt.iter().map(|&n| n as f64 / 1e3).collect();
    let stats = Summary::new(&us).ok();
    let tpf = if sent > 0 {
        seconds * 1e6 / sent as f64
    } else {
        0.0
    };
    let mbs = if tpf > 0.0 {
        (p.req_bytes + p.resp_bytes) as f64 / tpf
    } else {
        0.0
    };
    let (ave, min, max) = stats.map_or((0.0, 0.0, 0.0), |s| (s.mean, s.min, s.max));
    let line = format!(
        "{}; {}; 1; {}; {}; {:.3}; {:.5}; {:.3}; {:.3}; {:.3}; {}",
        p.resp_bytes, p.req_bytes, sent, n.bad, tpf, mbs, ave, min, max, timeouts
    );
    Ok(UdpRrSummary {
        count: sent,
        answered: rtt.len() as u64,
        timeouts,
        bad: n.bad,
        foreign: server.map(|s| s.foreign),
        server_bad: server.map(|s| s.bad),
        server_received: server.map(|s| s.received),
        rtt_us: stats,
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        timeout_ms: p.timeout_ms,
        seconds,
        time_per_frame_us: tpf,
        mbytes_per_second: mbs,
        peer: f.peer.to_string(),
        complete: note.is_none(),
        note,
        rate_capped_us: crate::engine::pace::capped_us(&cap),
        icmp_errors: n.icmp,
        line,
        socket: applied,
    })
}
