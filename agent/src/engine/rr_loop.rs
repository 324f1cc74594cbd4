//! The request/response loops of `tcp_rr` and `unix_rr`, generic over the
//! stream socket. The client writes `req_bytes`, reads exactly `resp_bytes`
//! and records the round trip in ns (monotonic clock); the server reads
//! exactly `req_bytes` and answers. The first 8 bytes of a request carry its
//! sequence number and the response echoes them, so a desynchronised pair
//! shows up as `bad` transactions, not as a fast lie.
//!
//! Hot path: one write and one read system call per transaction on a
//! blocking socket (the thread sleeps in the kernel's socket wait queue and
//! is woken directly: no epoll round trip), or, with `busy_poll`, spinning on
//! a non-blocking read so the thread never sleeps at all.

use super::buf::PageBuf;
use super::ctx::{done_fraction, TestCtx};
use super::error::TestError;
use super::watchdog::{self, Watchdog};
use crate::platform::AsRawSock;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::RrParams;
use meshperf_protocol::summary::{RrClient, RrSummary, Stats};
use meshperf_stats::stats::Summary;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

/// How often a blocking read is interrupted to check for cancellation.
const SLICE: Duration = Duration::from_millis(200);
/// Busy-poll spins this long on an empty socket, then sleeps in poll(2), so
/// two spinning ends sharing a CPU cannot starve each other.
const SPIN: Duration = Duration::from_micros(50);
/// A peer that answers nothing for this long has stalled.
const STALL: Duration = Duration::from_secs(10);

/// A connected stream socket the loops can drive.
pub trait RrSock: Read + Write + AsRawSock {
    fn set_nonblocking(&self, on: bool) -> io::Result<()>;
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
}

macro_rules! rr_sock {
    ($t:ty) => {
        impl RrSock for $t {
            fn set_nonblocking(&self, on: bool) -> io::Result<()> {
                <$t>::set_nonblocking(self, on)
            }
            fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_read_timeout(self, t)
            }
        }
    };
}
rr_sock!(std::net::TcpStream);
#[cfg(unix)]
rr_sock!(std::os::unix::net::UnixStream);

/// What the client side measured.
pub struct ClientOut {
    pub rtt_ns: Vec<u64>,
    pub bad: u64,
    pub elapsed: Duration,
}

fn io_err(what: &str, e: io::Error) -> TestError {
    TestError::new(ErrorCode::StreamFailed, format!("{what} failed: {e}"))
}

/// Sets blocking mode with no read timeout, or non-blocking for busy-poll.
/// A blocking loop gets a watchdog that interrupts it every [`SLICE`] (to
/// look at cancel and stalls): a read timeout would arm a kernel timer on
/// every wait (see `watchdog`; tcp_rr A/B in its commit).
fn setup<S: RrSock>(s: &S, busy: bool) -> Result<Option<Watchdog>, TestError> {
    let r = if busy {
        s.set_nonblocking(true)
    } else {
        s.set_nonblocking(false)
            .and_then(|_| s.set_read_timeout(watchdog::read_timeout(SLICE)))
    };
    r.map_err(|e| io_err("socket set-up", e))?;
    Ok((!busy).then(|| Watchdog::start(SLICE, || true)))
}

/// Writes all of `buf`, at most `chunk` bytes per call.
fn write_msg<S: RrSock>(s: &mut S, buf: &[u8], chunk: usize) -> Result<(), TestError> {
    for part in buf.chunks(chunk) {
        let mut off = 0;
        while off < part.len() {
            match s.write(&part[off..]) {
                Ok(0) => {
                    return Err(TestError::new(
                        ErrorCode::PeerGone,
                        "the peer closed the connection",
                    ))
                }
                Ok(n) => off += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    std::hint::spin_loop()
                }
                Err(e) => return Err(io_err("send", e)),
            }
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes. Returns false on EOF before the first byte.
fn read_msg<S: RrSock>(s: &mut S, buf: &mut [u8], ctx: &TestCtx) -> Result<bool, TestError> {
    let mut off = 0;
    let mut idle_since: Option<Instant> = None;
    while off < buf.len() {
        match s.read(&mut buf[off..]) {
            Ok(0) if off == 0 => return Ok(false),
            Ok(0) => {
                return Err(TestError::new(
                    ErrorCode::PeerGone,
                    "the peer closed the connection mid-message",
                ))
            }
            Ok(n) => off += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                // Busy-poll lands here on every empty read: keep that path short.
                let since = *idle_since.get_or_insert_with(Instant::now);
                if ctx.cancelled() {
                    return Err(TestError::cancelled());
                }
                let idle = since.elapsed();
                if idle > SPIN {
                    wait_readable(s, SLICE);
                }
                if idle > STALL {
                    return Err(TestError::new(
                        ErrorCode::Stalled,
                        format!("the peer sent nothing for {} s", STALL.as_secs()),
                    ));
                }
            }
            Err(e) => return Err(io_err("receive", e)),
        }
    }
    Ok(true)
}

/// Sleeps until `s` is readable or `t` passes (the busy-poll fallback).
fn wait_readable<S: AsRawSock>(s: &S, t: Duration) {
    crate::platform::readable(crate::platform::raw(s), t);
}

fn chunk(p: &RrParams) -> usize {
    p.write_bytes.map_or(usize::MAX, |w| w as usize)
}

/// Client loop: runs the transactions, streaming RTT samples and progress to
/// the page every `interval_ms`. Ends by half-closing `s`'s write side.
pub fn client<S: RrSock>(ctx: &TestCtx, p: &RrParams, s: &mut S) -> Result<ClientOut, TestError> {
    let _dog = setup(s, p.busy_poll)?;
    let mut req = PageBuf::random(p.req_bytes as usize);
    let mut resp = PageBuf::new(p.resp_bytes as usize, 0);
    let (chunk, echo) = (chunk(p), p.req_bytes >= 8 && p.resp_bytes >= 8);
    let count = p.count.unwrap_or(u64::MAX);
    let interval = Duration::from_millis(p.interval_ms as u64);
    let wait = Duration::from_micros(p.wait_us);
    let mut rtt_ns: Vec<u64> = Vec::with_capacity(count.min(1 << 20) as usize);
    let (mut bad, mut flushed) = (0u64, 0usize);
    let start = Instant::now();
    let end = p.duration_s.map(|d| start + Duration::from_secs_f64(d));
    let mut next_report = start + interval;
    let mut i = 0u64;
    while i < count {
        if !wait.is_zero() {
            super::pace::sleep_until(start + wait * i as u32);
        }
        if req.len() >= 8 {
            req[..8].copy_from_slice(&i.to_le_bytes());
        }
        let t0 = Instant::now();
        write_msg(s, &req, chunk)?;
        if !read_msg(s, &mut resp, ctx)? {
            return Err(TestError::new(
                ErrorCode::PeerGone,
                "the peer closed the connection",
            ));
        }
        let now = Instant::now();
        rtt_ns.push(now.duration_since(t0).as_nanos() as u64);
        bad += (echo && resp[..8] != req[..8]) as u64;
        i += 1;
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        if now >= next_report || end.is_some_and(|e| now >= e) {
            next_report = now + interval;
            flush(ctx, &rtt_ns, &mut flushed);
            let elapsed = now.duration_since(start).as_secs_f64();
            let fraction = done_fraction(p.count.map(|c| (i, c)), elapsed, p.duration_s);
            ctx.progress(elapsed, i * (p.req_bytes + p.resp_bytes), fraction);
            if end.is_some_and(|e| now >= e) {
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    flush(ctx, &rtt_ns, &mut flushed);
    Ok(ClientOut {
        rtt_ns,
        bad,
        elapsed,
    })
}

fn flush(ctx: &TestCtx, rtt_ns: &[u64], flushed: &mut usize) {
    if *flushed < rtt_ns.len() {
        ctx.sink.samples_from(
            SampleKind::RttNs,
            ctx.role,
            ctx.test_id,
            ctx.step,
            0,
            *flushed as u32,
            &rtt_ns[*flushed..],
        );
        *flushed = rtt_ns.len();
    }
}

/// Server loop: answers requests until the client closes; returns the
/// number of transactions served.
/// What a responder did: requests answered, and whether the peer asked
/// past the prepared count.
pub struct Served {
    pub answered: u64,
    pub beyond_count: u64,
}

pub fn server<S: RrSock>(ctx: &TestCtx, p: &RrParams, s: &mut S) -> Result<Served, TestError> {
    let _dog = setup(s, p.busy_poll)?;
    let mut req = PageBuf::new(p.req_bytes as usize, 0);
    let mut resp = PageBuf::random(p.resp_bytes as usize);
    let (chunk, echo) = (chunk(p), p.req_bytes >= 8 && p.resp_bytes >= 8);
    // A count-bounded test answers its count and no more, whatever the
    // peer does; a time-bounded one ends at the agent's duration limit.
    let cap = p.count.unwrap_or(u64::MAX);
    let mut n = 0u64;
    while read_msg(s, &mut req, ctx)? {
        // A peer that keeps asking never leaves read_msg's idle path, where
        // cancel is otherwise seen: look once a transaction (one relaxed
        // load), so the duration limit and cancel stop it too.
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        if n == cap {
            return Ok(Served {
                answered: n,
                beyond_count: 1,
            });
        }
        if echo {
            resp[..8].copy_from_slice(&req[..8]);
        }
        write_msg(s, &resp, chunk)?;
        n += 1;
    }
    Ok(Served {
        answered: n,
        beyond_count: 0,
    })
}

/// The statistics object of docs/design.md (`rtt_us` and friends) from ns samples.
pub fn stats_us(ns: &[u64]) -> Option<Stats> {
    let us: Vec<f64> = ns.iter().map(|&v| v as f64 / 1e3).collect();
    // The same object udp_rr reports.
    Summary::new(&us).ok()
}

/// Client summary: counts, `rtt_us`, rates and tcp_req's quiet-mode line
/// ("resp_bytes; req_bytes; msg_count; loop_count; num_bad; time/frame us;
/// Mbytes/s; ave time; min time; max time; num timeouts").
pub fn client_summary(p: &RrParams, out: &ClientOut) -> Result<RrSummary, TestError> {
    let n = out.rtt_ns.len() as u64;
    if n == 0 {
        return Err(TestError::new(
            ErrorCode::NoSamples,
            "no transaction completed",
        ));
    }
    let secs = out.elapsed.as_secs_f64();
    let frame_us = secs * 1e6 / n as f64;
    let mbs = (p.req_bytes + p.resp_bytes) as f64 / frame_us;
    let us = |v: u64| v as f64 / 1e3;
    let ave = out.rtt_ns.iter().sum::<u64>() as f64 / n as f64 / 1e3;
    let (min, max) = (
        us(*out.rtt_ns.iter().min().unwrap()),
        us(*out.rtt_ns.iter().max().unwrap()),
    );
    let line = format!(
        "{}; {}; 1; {n}; {}; {frame_us:.3}; {mbs:.5}; {ave:.3}; {min:.2}; {max:.2}; 0",
        p.resp_bytes, p.req_bytes, out.bad
    );
    Ok(RrSummary {
        count: n,
        client: Some(RrClient {
            timeouts: 0,
            bad: out.bad,
            rtt_us: stats_us(&out.rtt_ns),
            seconds: secs,
            transactions_per_second: n as f64 / secs,
            time_per_frame_us: frame_us,
            mbytes_per_second: mbs,
        }),
        bytes: n * (p.req_bytes + p.resp_bytes),
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        busy_poll: p.busy_poll,
        line,
        peer_count: None,
        beyond_count: None,
        transport: None,
        tcp: None,
        flows: None,
    })
}

/// Server summary: transactions served and bytes moved.
pub fn server_summary(p: &RrParams, served: Served) -> RrSummary {
    let n = served.answered;
    let beyond = if served.beyond_count > 0 {
        "; the peer asked past the prepared count: stopped"
    } else {
        ""
    };
    RrSummary {
        count: n,
        beyond_count: Some(served.beyond_count),
        client: None,
        bytes: n * (p.req_bytes + p.resp_bytes),
        req_bytes: p.req_bytes,
        resp_bytes: p.resp_bytes,
        busy_poll: p.busy_poll,
        line: format!(
            "answered {n} requests of {} bytes with {} bytes{beyond}",
            p.req_bytes, p.resp_bytes
        ),
        peer_count: None,
        transport: None,
        tcp: None,
        flows: None,
    }
}
