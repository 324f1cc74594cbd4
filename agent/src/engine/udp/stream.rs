//! `udp_stream`: paced UDP bursts (udp_bw_mon/udp_bw_resp). The seed's
//! exchange runs over the TCP control connection, so it never times out on a
//! lost control datagram: the sender asks `zero`, the receiver answers
//! `zeroed`, the burst follows, then the sender's `stats` (its own figures)
//! is answered by the receiver's `stats` with the whole summary, computed with
//! `meshperf_stats::udp` so the page derives the same numbers from the raw
//! samples. Pacing follows absolute deadlines `start + k * wait_us`; the last
//! [`SPIN`] before a deadline spins because timer wake-ups arrive late, and a
//! sender that fell behind catches up with slightly shorter gaps, never a
//! burst, and after a stall of over 1 ms the schedule slips ([`Pacer`]).

use crate::engine::lul::beside;
use crate::engine::peer::unexpected;
use crate::engine::seedfmt::g6;
use crate::engine::udp::batch::{self, RecvBatch, SendBatch, GRO_BUF};
use crate::engine::udp::{self, Clock, Flow, Hdr, UdpTest, DATA, HELLO};
use crate::engine::{watchdog, Refusal, TestCtx, TestError};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{
    gso_segments, Direction, Kind, Limits, ParamError, ProbeParams, UdpGso, UdpSocketParams,
    UdpStreamParams,
};
use meshperf_protocol::peer::{
    UdpStreamReceiverLine as ReceiverLine, UdpStreamSenderLine as SenderLine,
};
use meshperf_protocol::summary::{
    PacingError, Timestamps, UdpStreamFigures, UdpStreamReceive, UdpStreamSend, UdpStreamSummary,
    RATE_REACHED,
};
use meshperf_stats::stats::Summary;
use serde_json::Value;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

/// Time before a send deadline that is spun rather than slept.
const SPIN: Duration = Duration::from_micros(250);
/// Datagrams per sendmmsg/recvmmsg call (unpaced sending, and receiving).
const BATCH: usize = 32;
/// A late sender catches up by shortening each gap by at most this share of
/// the wait (and at most 4 us): see [`Pacer`].
const CATCH_UP: f64 = 0.2;
/// Schedule debt (ns) a late sender pays back; beyond it the schedule slips.
const DEBT_LIMIT: f64 = 1e6;

impl UdpTest for UdpStreamParams {
    const KIND: Kind = Kind::UdpStream;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        UdpStreamParams::parse(v, limits)
    }
    fn sock(&self) -> &UdpSocketParams {
        &self.sock
    }
    type ServeSummary = UdpStreamSummary;
    type DriveSummary = UdpStreamSummary;
    fn lines(&self) -> usize {
        usize::from(self.direction == Direction::Both)
    }
    fn probe(&self) -> Option<ProbeParams> {
        UdpStreamParams::probe(self)
    }
    fn duration_s(&self) -> Option<f64> {
        self.duration_s
    }
    fn check_kernel(&self, serving: bool) -> Result<(), Refusal> {
        if self.gso != UdpGso::On {
            return Ok(());
        }
        // Which way this side's datagrams go.
        let send = match self.direction {
            Direction::Both => true,
            Direction::Send => !serving,
            Direction::Receive => serving,
        };
        let receive = self.direction == Direction::Both || !send;
        batch::offloads(send, receive).map_err(|e| {
            (
                ErrorCode::BadParams,
                format!("gso: on, but this agent's kernel has {e}; use gso auto or off"),
            )
        })
    }
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<UdpStreamSummary, TestError> {
        run_flow(ctx, self, f, self.direction == Direction::Receive, false)
    }
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<UdpStreamSummary, TestError> {
        run_flow(ctx, self, f, self.direction == Direction::Send, true)
    }
}

fn run_flow(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    mut f: Flow,
    sending: bool,
    driving: bool,
) -> Result<UdpStreamSummary, TestError> {
    let both = p.direction == Direction::Both;
    if (both || !sending) && p.sock.rcvbuf.is_none() {
        // Before `applied`, so the summary's rcvbuf_actual is the real one.
        udp::grow_rcvbuf(&f.sock, 8 << 20);
    }
    let socket = udp::applied(&f.sock, &p.sock);
    // This side's view: the address its UDP flow is bound to.
    let peer = f.peer.to_string();
    let mut probe = f.probe.take();
    if let Some(pr) = &mut probe {
        pr.load(beside::loaded_phase(p.direction));
    }
    let (figures, reverse) = if both {
        // Two flows on the one pair of sockets, as tcp_stream's both has
        // two sets of connections: the driving agent's to the serving one
        // on the first control line (stream 0 of the samples), the serving
        // agent's to the driving one on the second (stream 1); each side
        // sends one and receives the other at once.
        let line = f.extra.pop().ok_or_else(|| {
            TestError::new(
                ErrorCode::Protocol,
                "direction both: no second control line",
            )
        })?;
        let mut back = Flow {
            line,
            sock: f.sock.try_clone().map_err(udp::io_err)?,
            token: f.token,
            peer: f.peer,
            connected: f.connected,
            foreign: 0,
            extra: Vec::new(),
            probe: None,
        };
        let (fwd, rev) = std::thread::scope(|sc| {
            if driving {
                let r = sc.spawn(|| receive(ctx, p, &mut back, 1));
                (send(ctx, p, &mut f, 0), r.join())
            } else {
                let r = sc.spawn(|| send(ctx, p, &mut back, 1));
                (receive(ctx, p, &mut f, 0), r.join())
            }
        });
        let rev = rev.map_err(|_| TestError::new(ErrorCode::Internal, "reverse flow panicked"))?;
        (fwd?, Some(Box::new(rev?)))
    } else if sending {
        (send(ctx, p, &mut f, 0)?, None)
    } else {
        (receive(ctx, p, &mut f, 0)?, None)
    };
    let probe = match probe {
        Some(mut pr) => {
            pr.unload();
            // Each direction's throughput as its receiver counted it: up
            // is the driving agent's flow (the top-level figures when it
            // sends), down the serving agent's.
            let got = |x: &UdpStreamFigures| {
                (
                    x.received.unwrap_or(0) * p.pkt_bytes,
                    x.recv_seconds.unwrap_or(0.0),
                )
            };
            let none = (0, 0.0);
            let (down, up) = match (p.direction, &reverse) {
                (Direction::Both, Some(r)) => (got(r), got(&figures)),
                (Direction::Send, _) => (none, got(&figures)),
                _ => (got(&figures), none),
            };
            pr.finish(ctx, &mut f.line, 1, down, up)?
        }
        None => None,
    };
    Ok(UdpStreamSummary {
        figures,
        socket,
        peer,
        reverse,
        probe,
    })
}

/// The sender: zero, paced burst, stats; its samples are stream `stream`.
fn send(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    f: &mut Flow,
    stream: u16,
) -> Result<UdpStreamFigures, TestError> {
    let fd = f.sock.as_raw_fd();
    let dest = (!f.connected).then_some(f.peer);
    // Before `zero`, so a refusal comes before the burst.
    let gso = gso_send(p, &f.sock, f.token, f.peer, dest)?;
    f.line.send(&SenderLine::Zero).map_err(udp::gone)?;
    match f.line.expect(
        Duration::from_secs(5),
        "the receiving agent did not answer zero",
    )? {
        ReceiverLine::Zeroed => {}
        other => return Err(unexpected("zeroed", &other)),
    }
    let segs = if gso {
        gso_segments(p.pkt_bytes) as usize
    } else {
        1
    };
    let mut batch = SendBatch::new(BATCH, segs, p.pkt_bytes as usize, dest);
    // Datagrams one call may carry: with GSO, BATCH segmented messages.
    let most = batch.capacity() as u64;
    let wait_ns = p.wait_us * 1e3;
    let floor_ns = floor_gap_ns(p, ctx.limits.max_udp_bits_per_second);
    let mut pacer = Pacer::new(wait_ns, floor_ns);
    // By `rate`: what is due leaves at once ([`Bucket`]).
    let mut bucket = p
        .rate
        .filter(|_| wait_ns > 0.0)
        .map(|_| Bucket::new(wait_ns, floor_ns, p.pkt_bytes));
    let mut times: Vec<u64> = Vec::with_capacity(p.count as usize);
    let mut note = None;
    let urgent = (wait_ns > 0.0).then(Urgent::raise);
    let clock = Clock::new();
    let mut tick = clock.start;
    let mut k = 0u64;
    // Earliest time (ns from the clock's start) the next datagram may leave.
    let mut next_ns = 0.0f64;
    // A time-bounded burst ends here (ns from the clock's start).
    let end_ns = p.duration_s.map_or(u64::MAX, |d| (d * 1e9) as u64);
    while k < p.count {
        let now = Instant::now();
        let t = clock.ns(now);
        // At its time the burst ends, whatever the rate: what fell due and
        // has not left is not sent (at a rate the host cannot reach, that
        // is always a bucket's worth), so no datagram leaves stamped past
        // `duration_s` and the summary shows the rate the sender managed.
        if t >= end_ns {
            break;
        }
        let mut due_now = 1;
        if let Some(b) = bucket.as_mut() {
            match b.due(t as f64, k) {
                Ok(n) => {
                    due_now = n.min(p.count - k).min(most) as usize;
                    next_ns = 0.0;
                }
                Err(at) => next_ns = at,
            }
        }
        let due = if wait_ns <= 0.0 {
            (p.count - k).min(most) as usize
        } else if (t as f64) < next_ns {
            // Never asleep past the end: a datagram due after it never leaves.
            let gap = Duration::from_nanos((next_ns.min(end_ns as f64) - t as f64) as u64);
            if gap > SPIN {
                // Long waits sleep in slices so a cancel is seen promptly.
                std::thread::sleep((gap - SPIN).min(Duration::from_millis(50)));
                if ctx.cancelled() {
                    return Err(TestError::cancelled());
                }
            } else {
                std::hint::spin_loop();
            }
            continue;
        } else {
            // By wait_us: one datagram per call, each with its own send time.
            due_now
        };
        for i in 0..due {
            let h = Hdr {
                kind: DATA,
                token: f.token,
                seq: k + i as u64,
                t_ns: t,
            };
            h.write(batch.buf(i));
        }
        match batch.send(fd, due) {
            Ok(n) => {
                times.extend(std::iter::repeat(t).take(n));
                k += n as u64;
                match bucket.as_mut() {
                    Some(b) => b.last_ns = t as f64,
                    None if wait_ns > 0.0 => next_ns = pacer.next(t as f64, k),
                    None => {}
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || udp::is_timeout(&e) => {}
            Err(e) => {
                note = Some(format!("sending stopped after {k} datagrams: {e}"));
                break;
            }
        }
        if now.duration_since(tick) >= Duration::from_millis(100) {
            tick = now;
            if ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            // The receiving agent says nothing until our stats line: the
            // control connection turning readable means it went away (its
            // limit, a crash), and nobody is counting what we send.
            if watchdog::readable(f.line.fd()) {
                note = Some(format!(
                    "sending stopped after {k} datagrams: the receiving agent closed the test's control connection"
                ));
                break;
            }
            let done = match p.duration_s {
                Some(d) => t as f64 / 1e9 / d,
                None => k as f64 / p.count as f64,
            };
            udp::progress(ctx, clock.start, k * p.pkt_bytes, done);
        }
    }
    // The burst ends here, read before the thread's priority drops: on a
    // busy host the thread can wait for a CPU after that (200 ms once, at
    // a load of 24 on 2 CPUs), which is not sending time.
    let ended_ns = clock.now_ns();
    let sender_nice = urgent.as_ref().and_then(|u| u.raised);
    drop(urgent);
    // The warm-up's datagrams stay in the samples, not in the figures.
    let omit_ns = p.omit_s.map_or(0, |o| (o * 1e9) as u64);
    let omitted = times.partition_point(|&t| t < omit_ns);
    let kept = &times[omitted..];
    let send_seconds = kept.first().map_or(0.0, |&t0| (ended_ns - t0) as f64 / 1e9);
    let gaps: Vec<f64> = kept
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e3)
        .collect();
    let gap = Summary::new(&gaps).ok();
    let errs: Vec<f64> = gaps.iter().map(|g| (g - p.wait_us).abs()).collect();
    let snd = UdpStreamSend {
        sent: k,
        send_seconds,
        send_gap_us: gap,
        pacing_error_us: PacingError {
            mean: gap.map(|g| g.mean - p.wait_us),
            p99: Summary::new(&errs).ok().map(|s| s.p99),
        },
        sender_nice,
        schedule_slips: bucket.as_ref().map_or(pacer.slips, |b| b.slips),
        schedule_slipped_us: bucket.as_ref().map_or(pacer.slip_ns, |b| b.slip_ns) / 1e3,
        from: f.sock.local_addr().map(|a| a.ip().to_string()).ok(),
        to: f.peer.ip().to_string(),
        omitted: p.omit_s.map(|_| omitted as u64),
        gso: Some(gso),
        send_calls: Some(batch.calls),
    };
    ctx.sink.samples(
        SampleKind::SendTimeNs,
        ctx.role,
        ctx.test_id,
        ctx.step,
        stream,
        &times,
    );
    let wait = Duration::from_millis(p.timeout_ms) + Duration::from_secs(5);
    let reply = f
        .line
        .send(&SenderLine::Stats { send: snd.clone() })
        .map_err(udp::gone)
        .and_then(|_| {
            match f
                .line
                .expect(wait, "the receiving agent did not report its statistics")?
            {
                ReceiverLine::Stats { summary, receive } => Ok((summary, receive)),
                other => Err(unexpected("stats", &other)),
            }
        });
    match reply {
        Ok((summary, _)) if note.is_none() => Ok(summary),
        Ok((_, receive)) => Ok(summary(p, Some(&snd), Some(&receive), note, 0)),
        Err(e) => Ok(summary(p, Some(&snd), None, note.or(Some(e.message)), 1)),
    }
}

/// Sets the sender up for UDP GSO as `gso` asks; whether it is on. The
/// kernel may have the option (checked before the test, `check_kernel`)
/// and still refuse a segmented send on this path (a device without
/// checksum offload: EIO; a datagram over the path's MTU: EINVAL), so two
/// hello datagrams (which the receiver skips, as the binding's) go first as
/// one segmented send: `on` is refused on its error in one line before the
/// burst, `auto` then sends without.
fn gso_send(
    p: &UdpStreamParams,
    sock: &std::net::UdpSocket,
    token: u64,
    peer: std::net::SocketAddr,
    dest: Option<std::net::SocketAddr>,
) -> Result<bool, TestError> {
    // By wait_us a call carries one datagram: nothing to segment (`on`
    // is refused with it at parse).
    let one_a_call = p.rate.is_none() && p.wait_us > 0.0;
    if p.gso == UdpGso::Off || gso_segments(p.pkt_bytes) < 2 || one_a_call {
        return Ok(false);
    }
    let size = p.pkt_bytes as usize;
    let tried = batch::set_gso(sock, size).and_then(|_| {
        let mut hello = SendBatch::new(1, 2, size, dest);
        for i in 0..2 {
            Hdr {
                kind: HELLO,
                token,
                seq: 0,
                t_ns: 0,
            }
            .write(hello.buf(i));
        }
        hello.send(sock.as_raw_fd(), 2).map(|_| ())
    });
    match tried {
        Ok(()) => Ok(true),
        // A full buffer or a timeout is not a refusal.
        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || udp::is_timeout(&e) => Ok(true),
        Err(e) if p.gso == UdpGso::On => Err(TestError::new(
            ErrorCode::BadParams,
            format!(
                "gso: on, but the kernel refused a segmented send of {size}-byte datagrams to {} ({e}); use gso auto or off",
                peer.ip()
            ),
        )),
        Err(_) => {
            // Off again, so the burst's sends are plain ones.
            let _ = batch::set_gso(sock, 0);
            Ok(false)
        }
    }
}

/// The sending thread's scheduling priority raised to nice -20 for a paced
/// burst: the sender spins between datagrams, and on a busy host a task woken
/// on its CPU would otherwise preempt it for a slice and break the schedule
/// (A/B on loopback at wait_us 20, interleaved runs, median p99 gap error
/// raised against not: 4.0 against 15.1 us over 8 runs on a quiet host; 10.9
/// against 11.3 and 14.0 against 15.7 over 10 when the host was stealing
/// time, where its own preemption dominates). Needs CAP_SYS_NICE; without it the burst runs
/// at the thread's priority and `sender_nice` in the summary is null. The old
/// priority comes back on drop.
struct Urgent {
    old: libc::c_int,
    raised: Option<i32>,
}

impl Urgent {
    const NICE: libc::c_int = -20;

    fn raise() -> Urgent {
        // SAFETY: plain system calls on the calling thread (who = 0); errno
        // is cleared first because -1 is a valid priority.
        unsafe {
            *libc::__errno_location() = 0;
            let old = libc::getpriority(libc::PRIO_PROCESS, 0);
            let ok = *libc::__errno_location() == 0
                && libc::setpriority(libc::PRIO_PROCESS, 0, Self::NICE) == 0;
            Urgent {
                old,
                raised: ok.then_some(Self::NICE),
            }
        }
    }
}

impl Drop for Urgent {
    fn drop(&mut self) {
        if self.raised.is_some() {
            // SAFETY: as in `raise`.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, self.old) };
        }
    }
}

/// The paced sender's schedule: datagram `k` is due at `k * wait` (plus
/// any slip), an absolute deadline, so late wake-ups never accumulate. A
/// sender that fell behind (preempted, or a late timer) does not burst the
/// missed datagrams out back to back: each gap shrinks by at most
/// [`CATCH_UP`] of the wait (at most 4 us), so up to [`DEBT_LIMIT`] of debt
/// is paid back over the following datagrams and every gap but the stall
/// itself stays close to `wait`. A longer stall (a CI host once held the
/// sender for 28 ms) is not paid back: the schedule slips by the excess,
/// counted in `schedule_slips` and `schedule_slipped_us`, so what follows
/// keeps the asked spacing instead of a burst at a rate the test did not
/// ask for, and the lower send rate shows it.
struct Pacer {
    wait_ns: f64,
    /// No gap is shorter ([`floor_gap_ns`]).
    floor_ns: f64,
    slip_ns: f64,
    /// Stalls the schedule slipped for (a slip that goes on over several
    /// datagrams, while the sender gets back to speed, counts once).
    slips: u64,
    slipping: bool,
}

impl Pacer {
    fn new(wait_ns: f64, floor_ns: f64) -> Self {
        Pacer {
            wait_ns,
            floor_ns,
            slip_ns: 0.0,
            slips: 0,
            slipping: false,
        }
    }

    /// When datagram `k` (0-based) may leave, given that datagram `k - 1`
    /// left at `sent_ns`.
    fn next(&mut self, sent_ns: f64, k: u64) -> f64 {
        let mut deadline = k as f64 * self.wait_ns + self.slip_ns;
        let excess = sent_ns + self.wait_ns - deadline - DEBT_LIMIT;
        if excess > 0.0 {
            self.slip_ns += excess;
            deadline += excess;
            self.slips += u64::from(!self.slipping);
        }
        self.slipping = excess > 0.0;
        let shrink = (self.wait_ns * CATCH_UP).min(4_000.0);
        deadline.max(sent_ns + (self.wait_ns - shrink).max(self.floor_ns))
    }
}

/// Longest stall a sender by `rate` makes up for: what fell due while it
/// was held up leaves at once when it runs again, up to this much (and
/// [`BUCKET_BYTES`]); the rest slips (counted in `schedule_slips`,
/// `schedule_slipped_us`).
const BUCKET_DEPTH_NS: f64 = 50e6;

/// Most payload a sender by `rate` holds due at once: a small burst, an
/// eighth of the 8 MiB receive buffer a receiver asks for. By time alone a
/// rate the host cannot reach holds far more (50 ms at 1000G is 4.5
/// billion 1400-byte datagrams, which the sender once went on sending
/// after its `duration_s`, 21 s more until the agent's count limit), and
/// after a stall at a high rate it can reach, tens of megabytes would
/// leave back to back, more than a receive buffer holds.
const BUCKET_BYTES: f64 = (1 << 20) as f64;

/// The schedule of a sender by `rate` (iperf3 `-b`): a token bucket. The
/// `k`-th datagram falls due at `k * wait` (plus any slip) and every call
/// sends all that are due, so a wake-up that comes late (up to ~200 us on
/// these VMs, milliseconds on a loaded host) costs no rate: the datagrams
/// it held up leave together. What a stall longer than
/// [`BUCKET_DEPTH_NS`] (or [`BUCKET_BYTES`] of datagrams) held up is not
/// sent, nor at a rate the host cannot reach what falls due faster than it
/// sends. Under the agent's UDP rate cap nothing leaves faster than the
/// cap: one datagram per `floor` instead.
struct Bucket {
    wait_ns: f64,
    floor_ns: f64,
    /// Datagrams the bucket holds.
    depth: u64,
    slip_ns: f64,
    slips: u64,
    slipping: bool,
    /// When the last datagram left (ns from the start).
    last_ns: f64,
}

impl Bucket {
    fn new(wait_ns: f64, floor_ns: f64, pkt_bytes: u64) -> Self {
        let most = (BUCKET_DEPTH_NS / wait_ns).min(BUCKET_BYTES / pkt_bytes as f64);
        Bucket {
            wait_ns,
            floor_ns,
            depth: most.ceil().max(1.0) as u64,
            slip_ns: 0.0,
            slips: 0,
            slipping: false,
            last_ns: f64::NEG_INFINITY,
        }
    }

    /// How many datagrams may leave at `t` (ns from the start) when `k`
    /// have left, or when the next one falls due.
    fn due(&mut self, t: f64, k: u64) -> Result<u64, f64> {
        let capped = self.floor_ns > 0.0;
        if capped && t < self.last_ns + self.floor_ns {
            return Err(self.last_ns + self.floor_ns);
        }
        let owed = ((t - self.slip_ns) / self.wait_ns).floor() as u64 + 1;
        if owed <= k {
            return Err(k as f64 * self.wait_ns + self.slip_ns);
        }
        let mut n = owed - k;
        let over = n > self.depth;
        if over {
            self.slip_ns += (n - self.depth) as f64 * self.wait_ns;
            self.slips += u64::from(!self.slipping);
            n = self.depth;
        }
        self.slipping = over;
        Ok(if capped { 1 } else { n })
    }
}

/// The shortest gap a late sender may use: never so short that the payload
/// outruns the agent's UDP rate limit (which the wait itself respects).
fn floor_gap_ns(p: &UdpStreamParams, max_bits_per_second: Option<f64>) -> f64 {
    max_bits_per_second.map_or(0.0, |max| p.pkt_bytes as f64 * 8.0 / max * 1e9)
}

/// How long after a datagram the receiver keeps polling instead of sleeping
/// in the kernel: two gaps, at least 200 us, at most 500 us. On loopback the
/// sender's own system call delivers the datagram and, when the receiving
/// thread sleeps, pays for waking it (an IPI to an idle CPU, a VM exit here):
/// several microseconds that would show up as the sender missing its
/// schedule. Arrival times come from the kernel, so polling does not change
/// them; with waits above 250 us the receiver sleeps between datagrams.
fn rx_spin(wait_us: f64) -> Duration {
    Duration::from_secs_f64((2.0 * wait_us).clamp(200.0, 500.0) / 1e6)
}

/// The receiver: records every datagram until the burst is over; its
/// samples are stream `stream`.
fn receive(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    f: &mut Flow,
    stream: u16,
) -> Result<UdpStreamFigures, TestError> {
    let kernel = udp::enable_timestamps(&f.sock);
    match f
        .line
        .expect(Duration::from_secs(10), "the sending agent did not start")?
    {
        SenderLine::Zero => {}
        other => return Err(unexpected("zero", &other)),
    }
    f.sock
        .set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(udp::io_err)?;
    let fd = f.sock.as_raw_fd();
    // GRO before `zeroed`: `on` refused is refused before the burst. A
    // coalesced read holds up to 64 KiB.
    let gro = match p.gso {
        UdpGso::Off => false,
        _ => match batch::set_gro(&f.sock) {
            Ok(()) => true,
            Err(e) if p.gso == UdpGso::On => {
                return Err(TestError::new(
                    ErrorCode::BadParams,
                    format!("gso: on, but the kernel refused UDP GRO ({e}); use gso auto or off"),
                ))
            }
            Err(_) => false,
        },
    };
    let size = if gro {
        GRO_BUF
    } else {
        p.pkt_bytes.max(2048) as usize
    };
    let mut batch = RecvBatch::new(BATCH, size);
    let cap = p.count.min(1 << 22) as usize;
    let (mut seq, mut arr, mut snt) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    let (mut user_ts, mut prev) = (0u64, 0u64);
    let timeout = Duration::from_millis(p.timeout_ms);
    let quiet = timeout + Duration::from_secs_f64(2.0 * p.wait_us / 1e6);
    let mut stats: Option<(UdpStreamSend, Instant)> = None;
    let mut note = None;
    let clock = Clock::new();
    // A burst has not ended before its time, even if nothing arrives for a
    // while (on a busy host, a loopback sender flat out at nice -20 starves
    // the kernel's packet processing, deferred to ksoftirqd at nice 0, so
    // that none reached the socket for over 1 s: udp_bw_mon's e2e test, 3
    // runs in 12 at a load of 8, the sender then refused by the closed
    // socket after 8173 of 10000): the quiet is counted from its time at
    // the earliest, `duration_s`, or for a counted burst `count` gaps of
    // `wait_us`, so the wait stays within that plus `timeout_ms`.
    let nominal_s = p
        .duration_s
        .unwrap_or(p.count as f64 * p.wait_us.max(0.0) / 1e6);
    let time_end = clock.start + Duration::from_secs_f64(nominal_s.min(1e6));
    f.line.send(&ReceiverLine::Zeroed).map_err(udp::gone)?;
    let (mut last, mut checked) = (Instant::now(), Instant::now());
    let spin = rx_spin(p.wait_us);
    let mut started = false;
    loop {
        // Within a burst, poll without sleeping (see `rx_spin`).
        let r = if started && last.elapsed() < spin {
            batch.recv_now(fd)
        } else {
            batch.recv(fd)
        };
        match r {
            Ok(n) => {
                let now = Instant::now();
                for i in 0..n {
                    let (_, from, ts) = batch.get(i);
                    if !f.connected && from != Some(f.peer) {
                        f.foreign += batch.datagrams(i).count() as u64;
                        continue;
                    }
                    // One datagram, or the datagrams of a coalesced read
                    // (GRO), which share its kernel time stamp.
                    for data in batch.datagrams(i) {
                        match Hdr::read(data) {
                            Some(h) if h.is(DATA, f.token) => {
                                let a = match ts {
                                    Some((s, ns)) => clock.since_realtime(s, ns),
                                    None => {
                                        user_ts += 1;
                                        clock.ns(now)
                                    }
                                };
                                prev = prev.max(a);
                                seq.push(h.seq);
                                arr.push(prev);
                                snt.push(h.t_ns);
                            }
                            Some(h) if h.is(HELLO, f.token) => {}
                            _ => f.foreign += 1,
                        }
                    }
                }
                last = now;
                started = true;
            }
            Err(e) if udp::is_timeout(&e) => std::hint::spin_loop(),
            Err(e) => return Err(udp::io_err(e)),
        }
        let now = Instant::now();
        if stats.is_none()
            && (now - checked >= Duration::from_millis(10) || seq.len() as u64 >= p.count)
        {
            checked = now;
            if ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            match f.line.recv(Duration::ZERO) {
                Ok(Some(SenderLine::Stats { send })) => stats = Some((send, now)),
                Ok(_) => {}
                Err(e) => {
                    note = Some(format!("the sending agent went away mid-burst ({e})"));
                    break;
                }
            }
        }
        match &stats {
            Some((v, at)) => {
                let sent = v.sent;
                let idle = now - last.max(*at);
                if seq.len() as u64 >= sent || idle > timeout.min(Duration::from_millis(250)) {
                    break;
                }
            }
            // The sender works out the statistics of its send times before
            // it sends them (sorts: about 0.3 s per million datagrams on a
            // busy 2-CPU host), so the quiet after a burst grows by 1 us per
            // datagram received: 5 million 64-byte datagrams in 2 s (GSO)
            // once took it past `timeout_ms`. A sender that went away is
            // seen at once on the control line instead.
            None if now.saturating_duration_since(last.max(time_end))
                > quiet + Duration::from_micros(seq.len() as u64) =>
            {
                note = Some(format!(
                    "no datagram for {} ms and no end of burst: the sender stopped mid-burst",
                    quiet.as_millis()
                ));
                break;
            }
            None => {}
        }
    }
    let snd = stats.map(|(v, _)| v);
    let a = match snd.as_ref().and_then(|s| s.omitted.map(|o| (o, s.sent))) {
        // The figures of the datagrams sent after the warm-up, numbered
        // from 0 as if the burst had started there.
        Some((o, sent)) => {
            let keep: Vec<usize> = (0..seq.len()).filter(|&i| seq[i] >= o).collect();
            let pick = |v: &[u64], d: u64| keep.iter().map(|&i| v[i] - d).collect::<Vec<_>>();
            let (s, a, t) = (pick(&seq, o), pick(&arr, 0), pick(&snt, 0));
            meshperf_stats::udp::analyze(&s, &a, Some(sent - o), Some(&t))
        }
        None => meshperf_stats::udp::analyze(&seq, &arr, snd.as_ref().map(|s| s.sent), Some(&snt)),
    }
    .map_err(|e| TestError::new(ErrorCode::Internal, format!("udp analysis: {e}")))?;
    let rcv = UdpStreamReceive {
        received: a.received,
        lost: a.lost,
        out_of_order: a.out_of_order,
        duplicates: a.duplicates,
        out_of_range: a.out_of_range,
        packets: a.packets,
        foreign: f.foreign,
        recv_seconds: a.recv_seconds,
        jitter_us: a.jitter_us,
        interarrival_us: a.interarrival_us,
        timestamps: if kernel && user_ts == 0 {
            Timestamps::Kernel
        } else {
            Timestamps::User
        },
        from: f.peer.ip().to_string(),
        to: f.sock.local_addr().map(|a| a.ip().to_string()).ok(),
        gro: Some(gro),
        recv_calls: Some(batch.calls),
        recv_messages: Some(batch.messages),
    };
    ctx.sink.samples(
        SampleKind::Sequence,
        ctx.role,
        ctx.test_id,
        ctx.step,
        stream,
        &seq,
    );
    ctx.sink.samples(
        SampleKind::ArrivalNs,
        ctx.role,
        ctx.test_id,
        ctx.step,
        stream,
        &arr,
    );
    let timeouts = u64::from(snd.is_none());
    let out = summary(p, snd.as_ref(), Some(&rcv), note.clone(), timeouts);
    if note.is_none() {
        let _ = f.line.send(&ReceiverLine::Stats {
            summary: out.clone(),
            receive: rcv,
        });
    }
    Ok(out)
}

/// Both sides' figures in one summary (docs/design.md keys) with the seed's
/// line; a side whose figures never came (`None`) leaves its keys null.
fn summary(
    p: &UdpStreamParams,
    snd: Option<&UdpStreamSend>,
    rcv: Option<&UdpStreamReceive>,
    note: Option<String>,
    timeouts: u64,
) -> UdpStreamFigures {
    // Datagrams of the warm-up are not in the figures.
    let omitted = snd.and_then(|s| s.omitted);
    let sent_n = snd.map(|s| s.sent - omitted.unwrap_or(0));
    let (sent, send_s) = snd.map_or((0.0, 0.0), |s| (sent_n.unwrap_or(0) as f64, s.send_seconds));
    let (received, recv_s) = rcv.map_or((0.0, 0.0), |r| (r.received as f64, r.recv_seconds));
    let rate = |n: f64, bytes: u64, s: f64| {
        if s > 0.0 {
            n * bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    };
    let send_bps = rate(sent, p.pkt_bytes, send_s);
    let recv_bps = rate(received, p.pkt_bytes, recv_s);
    let wire_bps = rate(received, p.pkt_bytes + p.overhead_bytes, recv_s);
    let per = |s: f64, n: f64| if n > 0.0 { s * 1e6 / n } else { 0.0 };
    let ia = rcv.and_then(|r| r.interarrival_us);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The receiver's view of the addresses, else the sender's.
    let from = rcv
        .map(|r| r.from.as_str())
        .or(snd.and_then(|s| s.from.as_deref()));
    let to = rcv
        .and_then(|r| r.to.as_deref())
        .or(snd.map(|s| s.to.as_str()));
    let rcv_count = |f: fn(&UdpStreamReceive) -> u64| rcv.map_or(0.0, |r| f(r) as f64);
    let mut fields = vec![
        now.to_string(),
        from.unwrap_or("-").to_string(),
        to.unwrap_or("-").to_string(),
        p.pkt_bytes.to_string(),
        format!("{sent}"),
        "0".into(),
        timeouts.to_string(),
        g6(per(send_s, sent)),
        format!("{}", p.wait_us),
        format!("{:.0}", send_s * 1e6),
        g6(send_bps / 1e6),
        format!("{received}"),
        format!("{}", rcv_count(|r| r.lost)),
        format!("{}", rcv_count(|r| r.out_of_order)),
        format!("{:.0}", recv_s * 1e6),
        g6(per(recv_s, received)),
        g6(recv_bps / 1e6),
        g6(wire_bps / 1e6),
    ];
    let ia_fields = ia.map_or([0.0; 8], |s| {
        [
            s.n as f64, s.mean, s.sigma, s.skew, s.kurtosis, s.median, s.iq25, s.iq75,
        ]
    });
    for v in ia_fields {
        fields.push(g6(v));
    }
    UdpStreamFigures {
        sent: sent_n,
        received: rcv.map(|r| r.received),
        lost: rcv.map(|r| r.lost),
        out_of_order: rcv.map(|r| r.out_of_order),
        duplicates: rcv.map(|r| r.duplicates),
        foreign: rcv.map(|r| r.foreign),
        out_of_range: rcv.map(|r| r.out_of_range),
        send_seconds: snd.map(|s| s.send_seconds),
        recv_seconds: rcv.map(|r| r.recv_seconds),
        send_bits_per_second: send_bps,
        recv_bits_per_second: recv_bps,
        wire_bits_per_second: wire_bps,
        jitter_us: rcv.and_then(|r| r.jitter_us),
        send_gap_us: snd.and_then(|s| s.send_gap_us),
        interarrival_us: ia,
        pacing_error_us: snd.map(|s| s.pacing_error_us),
        sender_nice: snd.and_then(|s| s.sender_nice),
        schedule_slips: snd.map(|s| s.schedule_slips),
        schedule_slipped_us: snd.map(|s| s.schedule_slipped_us),
        timestamps: rcv.map(|r| r.timestamps),
        time_per_frame_us: per(send_s, sent),
        recv_time_per_frame_us: per(recv_s, received),
        pkt_bytes: p.pkt_bytes,
        wait_us: p.wait_us,
        count: p.count,
        overhead_bytes: p.overhead_bytes,
        direction: p.direction,
        complete: note.is_none(),
        note,
        line: fields.join("; "),
        rate: p.rate,
        rate_reached: p
            .rate
            .filter(|_| snd.is_some())
            .map(|asked| send_bps >= asked * RATE_REACHED),
        duration_s: p.duration_s,
        omit_s: p.omit_s,
        omitted,
        gso: snd.and_then(|s| s.gso),
        gro: rcv.and_then(|r| r.gro),
        send_calls: snd.and_then(|s| s.send_calls),
        recv_calls: rcv.and_then(|r| r.recv_calls),
        recv_messages: rcv.and_then(|r| r.recv_messages),
    }
}

#[cfg(test)]
mod tests {
    use super::{floor_gap_ns, gso_send, Bucket, Pacer};
    use meshperf_protocol::params::{Limits, UdpStreamParams};
    use serde_json::json;

    /// Simulates a sender whose datagram 10 is stalled by `stall_ns`;
    /// returns the gaps between send times and the pacer.
    fn gaps_floor(wait_ns: f64, stall_ns: f64, n: u64, floor_ns: f64) -> (Vec<f64>, Pacer) {
        let mut p = Pacer::new(wait_ns, floor_ns);
        let (mut t, mut next, mut out) = (0.0f64, 0.0f64, Vec::new());
        for k in 0..n {
            let sent = next.max(t) + if k == 10 { stall_ns } else { 0.0 };
            if k > 0 {
                out.push(sent - t);
            }
            t = sent;
            next = p.next(sent, k + 1);
        }
        (out, p)
    }

    fn gaps(wait_ns: f64, stall_ns: f64, n: u64) -> Vec<f64> {
        gaps_floor(wait_ns, stall_ns, n, 0.0).0
    }

    /// A sender by rate that wakes `late_ns` after each due time, `n` calls.
    fn bucket_run(wait_ns: f64, floor_ns: f64, late_ns: f64, until_ns: f64) -> (Vec<f64>, Bucket) {
        let mut b = Bucket::new(wait_ns, floor_ns, 1400);
        let (mut t, mut k, mut sent) = (0.0f64, 0u64, Vec::new());
        while t < until_ns {
            match b.due(t, k) {
                Ok(n) => {
                    sent.extend(std::iter::repeat(t).take(n as usize));
                    k += n;
                    b.last_ns = t;
                }
                Err(at) => t = at + late_ns,
            }
        }
        (sent, b)
    }

    #[test]
    fn late_wake_ups_cost_a_sender_by_rate_no_datagrams() {
        // Every wake-up 1.5 ms late at one datagram per 560 us (20 Mbit/s
        // of 1400 B): the rate holds, in bursts of what fell due.
        let (sent, b) = bucket_run(560e3, 0.0, 1.5e6, 1e9);
        let on_time = (1e9f64 / 560e3).ceil();
        assert!(
            (sent.len() as f64 - on_time).abs() <= 3.0,
            "{} of {on_time}",
            sent.len()
        );
        assert_eq!(b.slips, 0);
        // A stall past the bucket's depth slips.
        let mut b = Bucket::new(560e3, 0.0, 1400);
        assert_eq!(b.due(0.0, 0), Ok(1));
        let n = b.due(100e6, 1).unwrap();
        assert_eq!(n, (50e6f64 / 560e3).ceil() as u64);
        assert_eq!(b.slips, 1);
        assert!(b.slip_ns > 49e6, "{}", b.slip_ns);
    }

    #[test]
    fn at_a_rate_the_host_cannot_reach_the_bucket_holds_one_small_burst() {
        // 1000G of 1400 B (a datagram due every 0.0112 ns), sent 32 per
        // 40 us for 1 s: what is due stays one burst of at most 1 MiB.
        let wait = 1400.0 * 8.0 / 1e12 * 1e9;
        let mut b = Bucket::new(wait, 0.0, 1400);
        let most = (1u64 << 20).div_ceil(1400);
        let (mut t, mut k, mut calls) = (0.0f64, 0u64, 0);
        while t < 1e9 {
            let n = b.due(t, k).unwrap();
            assert!(n <= most, "{n} due at {t} ns");
            k += n.min(32);
            b.last_ns = t;
            t += 40e3;
            calls += 1;
        }
        assert!(b.due(t, k).unwrap() <= most);
        // All but the first call (one due at 0) sent a full batch.
        assert_eq!(k, 1 + (calls - 1) * 32);
        // One slip that went on the whole time, by nearly all of it.
        assert_eq!(b.slips, 1);
        assert!(b.slip_ns > 0.99e9, "{}", b.slip_ns);
        // At 1 Gbit/s a stall is made up to 1 MiB, not 50 ms (6.25 MB).
        let mut b = Bucket::new(11.2e3, 0.0, 1400);
        assert_eq!(b.due(0.0, 0), Ok(1));
        assert_eq!(b.due(100e6, 1), Ok(most));
    }

    #[test]
    fn a_sender_by_rate_catches_up_no_faster_than_the_agent_cap() {
        // Due every 560 us, the cap allows one per 112 us.
        let (sent, _) = bucket_run(560e3, 112e3, 1.5e6, 0.5e9);
        let gaps: Vec<f64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g >= 112e3 - 1e-6), "{:?}", &gaps[..10]);
    }

    #[test]
    fn on_schedule_the_gaps_are_the_wait() {
        assert!(gaps(20e3, 0.0, 100).iter().all(|&g| g == 20e3));
    }

    #[test]
    fn a_stall_is_paid_back_with_gaps_at_most_4_us_short() {
        let g = gaps(20e3, 200e3, 400);
        assert_eq!(g[9], 220e3, "the stall itself");
        // 200 us of debt, 4 us per datagram: 50 gaps of 16 us, then on time.
        assert!(
            g[10..60].iter().all(|&x| (x - 16e3).abs() < 1e-6),
            "{:?}",
            &g[10..60]
        );
        assert!(g[60..].iter().all(|&x| x == 20e3), "{:?}", &g[58..64]);
        let total: f64 = g.iter().sum();
        assert!((total - 399.0 * 20e3).abs() < 1e-6, "the mean rate holds");
    }

    #[test]
    fn a_stall_over_1_ms_slips_the_schedule_and_never_bursts() {
        // 28 ms behind: 1 ms is paid back at 4 us a datagram, the rest slips.
        let (g, p) = gaps_floor(20e3, 28e6, 2000, 0.0);
        assert!(
            g[10..].iter().all(|&x| x >= 16e3 - 1e-6),
            "{:?}",
            &g[10..20]
        );
        assert_eq!(p.slips, 1);
        assert!((p.slip_ns - 27e6).abs() < 1.0, "{}", p.slip_ns);
        // 250 short gaps pay back the 1 ms; then the asked spacing.
        assert!(g[10..260].iter().all(|&x| (x - 16e3).abs() < 1e-6));
        assert!(g[260..].iter().all(|&x| x == 20e3));
        let late = g.iter().sum::<f64>() - 1999.0 * 20e3;
        assert!(
            (late - 27e6).abs() < 1.0,
            "the send time shows the slip: {late}"
        );
    }

    #[test]
    fn a_slip_that_goes_on_for_a_few_datagrams_counts_once() {
        // 5 ms stall before datagram 10, then datagram 11 leaves 10 us past
        // its time as the thread gets back to speed: one stall, one slip.
        let mut p = Pacer::new(20e3, 0.0);
        let mut next = 0.0;
        for k in 0..100u64 {
            let late = match k {
                10 => 5e6,
                11 => 10e3,
                _ => 0.0,
            };
            next = p.next(next + late, k + 1);
        }
        assert_eq!(p.slips, 1);
        assert!(p.slip_ns > 4e6, "{}", p.slip_ns);
    }

    #[test]
    fn the_catch_up_floor_respects_the_agent_udp_rate_limit() {
        let limits = Limits {
            max_udp_bits_per_second: Some(100e6),
            ..Limits::default()
        };
        // 1400 B every 114 us is 98 Mbit/s; a gap 4 us short would pass 100.
        let p =
            UdpStreamParams::parse(&json!({"pkt_bytes": 1400, "wait_us": 114}), &limits).unwrap();
        let floor = floor_gap_ns(&p, limits.max_udp_bits_per_second);
        assert!((floor - 112e3).abs() < 1e-6, "{floor}");
        assert_eq!(floor_gap_ns(&p, None), 0.0);
        let (g, _) = gaps_floor(114e3, 500e3, 1000, floor);
        assert!(g.iter().all(|&x| x >= 112e3 - 1e-6));
        let fastest = g.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            (fastest - 112e3).abs() < 1e-3,
            "catches up at the limit: {fastest}"
        );
    }

    /// A path that refuses segmented sends: SO_NO_CHECK (no UDP checksum)
    /// makes the kernel answer every GSO send with EINVAL, as a device
    /// without checksum offload answers EIO. `on` is refused in one line
    /// naming `gso`; `auto` takes UDP_SEGMENT off again and sends plain.
    #[test]
    fn a_path_that_refuses_segmented_sends_refuses_gso_on_and_auto_goes_without() {
        use crate::engine::sockopt::set_int;
        use crate::engine::udp::batch::{offloads, UDP_SEGMENT};
        use meshperf_protocol::msg::ErrorCode;
        use socket2::SockRef;
        use std::net::UdpSocket;
        if offloads(true, false).is_err() {
            eprintln!("this kernel has no UDP GSO: nothing to test");
            return;
        }
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = rx.local_addr().unwrap();
        let p = |gso: &str| {
            UdpStreamParams::parse(
                &json!({"gso": gso, "wait_us": 0, "pkt_bytes": 1400}),
                &Limits::default(),
            )
            .unwrap()
        };
        // A path that takes them: on, and the receiver gets two hellos.
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(
            gso_send(&p("on"), &tx, 7, peer, Some(peer)).ok(),
            Some(true)
        );
        let mut buf = [0u8; 2048];
        for _ in 0..2 {
            assert_eq!(rx.recv(&mut buf).unwrap(), 1400);
        }
        for (mode, want) in [("on", None), ("auto", Some(false))] {
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            const SO_NO_CHECK: libc::c_int = 11;
            set_int(&SockRef::from(&tx), libc::SOL_SOCKET, SO_NO_CHECK, 1).unwrap();
            let r = gso_send(&p(mode), &tx, 7, peer, Some(peer));
            match want {
                None => {
                    let e = r.unwrap_err();
                    assert_eq!(e.code, ErrorCode::BadParams);
                    assert!(
                        e.message.starts_with(
                            "gso: on, but the kernel refused a segmented send of 1400-byte datagrams to 127.0.0.1"
                        ),
                        "{}",
                        e.message
                    );
                }
                Some(used) => {
                    assert_eq!(r.ok(), Some(used));
                    let mut v: libc::c_int = -1;
                    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                    // SAFETY: v and len are valid for the call.
                    let rc = unsafe {
                        libc::getsockopt(
                            std::os::fd::AsRawFd::as_raw_fd(&tx),
                            libc::SOL_UDP,
                            UDP_SEGMENT,
                            (&mut v as *mut libc::c_int).cast(),
                            &mut len,
                        )
                    };
                    assert_eq!((rc, v), (0, 0), "UDP_SEGMENT off again");
                    assert_eq!(tx.send_to(&[0u8; 1400], peer).unwrap(), 1400);
                }
            }
        }
        // `off`, or wait_us pacing under auto: never tried.
        let off = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(
            gso_send(&p("off"), &off, 7, peer, Some(peer)).ok(),
            Some(false)
        );
        let paced =
            UdpStreamParams::parse(&json!({"gso": "auto", "wait_us": 20}), &Limits::default())
                .unwrap();
        assert_eq!(
            gso_send(&paced, &off, 7, peer, Some(peer)).ok(),
            Some(false)
        );
    }
}
