//! One flow's sender: `zero`, the paced burst, `stats`. A [`Sender`] is a
//! state machine a worker thread steps ([`super::worker`]), so one thread
//! can carry several flows; a thread with one flow sleeps in [`Sender::step`]
//! itself, as the single-flow sender always did.

use super::{summary, Ended, Leg, Step, BATCH};
use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use crate::engine::pace::{self, floor_gap_ns, Bucket, Pacer};
use crate::engine::peer::unexpected;
use crate::engine::udp::batch::{self, SendBatch};
use crate::engine::udp::{self, Clock, Hdr, DATA, HELLO};
use crate::engine::watchdog;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{gso_segments, UdpGso, UdpStreamParams};
use meshperf_protocol::peer::{
    UdpStreamReceiverLine as ReceiverLine, UdpStreamSenderLine as SenderLine,
};
use meshperf_protocol::summary::{PacingError, UdpStreamFigures, UdpStreamReceive, UdpStreamSend};
use meshperf_stats::stats::Summary;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A flow's sending end, from `zero` to the receiver's `stats`.
pub struct Sender<'a> {
    ctx: &'a TestCtx,
    p: &'a UdpStreamParams,
    leg: Leg,
    live: &'a AtomicU64,
    gso: bool,
    batch: SendBatch,
    /// Datagrams one call may carry: with GSO, BATCH segmented messages.
    most: u64,
    wait_ns: f64,
    pacer: Pacer,
    /// By `rate`: what is due leaves at once ([`Bucket`]).
    bucket: Option<Bucket>,
    times: Vec<u64>,
    note: Option<String>,
    clock: Clock,
    tick: Instant,
    k: u64,
    /// Earliest time (ns from the clock's start) the next datagram may leave.
    next_ns: f64,
    /// A time-bounded burst ends here (ns from the clock's start).
    end_ns: u64,
    /// When the burst ended (ns from the clock's start).
    ended_ns: Option<u64>,
    /// After `stats`: its figures, and when the receiver's answer is due.
    sent: Option<(UdpStreamSend, Instant)>,
    /// The receiver's answer: the figures it worked out, and its own.
    reply: Option<Result<(UdpStreamFigures, UdpStreamReceive), TestError>>,
    /// ICMP errors the socket reported (sends made again).
    icmp: u64,
}

impl<'a> Sender<'a> {
    /// Sets the flow up (GSO, refused before any datagram) and says `zero`.
    pub fn open(
        ctx: &'a TestCtx,
        p: &'a UdpStreamParams,
        mut leg: Leg,
        live: &'a AtomicU64,
    ) -> Result<Sender<'a>, TestError> {
        let dest = (!leg.connected).then_some(leg.peer);
        // Before `zero`, so a refusal comes before the burst.
        let gso = gso_send(p, &leg.sock, leg.token, leg.peer, dest)?;
        leg.line.send(&SenderLine::Zero).map_err(udp::gone)?;
        let segs = if gso {
            gso_segments(p.pkt_bytes) as usize
        } else {
            1
        };
        let batch = SendBatch::new(BATCH, segs, p.pkt_bytes as usize, dest);
        let wait_ns = p.wait_us * 1e3;
        let floor_ns = floor_gap_ns(p.pkt_bytes, p.streams, ctx.limits.max_udp_bits_per_second);
        let clock = Clock::new();
        Ok(Sender {
            ctx,
            p,
            leg,
            live,
            gso,
            most: batch.capacity() as u64,
            batch,
            wait_ns,
            pacer: Pacer::new(wait_ns, floor_ns),
            bucket: p
                .rate
                .filter(|_| wait_ns > 0.0)
                .map(|_| Bucket::new(wait_ns, floor_ns, p.pkt_bytes)),
            times: Vec::with_capacity(p.count.min(1 << 22) as usize),
            note: None,
            clock,
            tick: clock.start,
            k: 0,
            next_ns: 0.0,
            end_ns: p.duration_s.map_or(u64::MAX, |d| (d * 1e9) as u64),
            ended_ns: None,
            sent: None,
            reply: None,
            icmp: 0,
        })
    }

    /// Whether this sender spaces its datagrams (and wants the thread urgent).
    pub fn paced(&self) -> bool {
        self.wait_ns > 0.0
    }

    /// Sends without waiting for room (several flows on one thread).
    pub fn shared(&mut self) {
        self.batch.dont_wait();
    }

    /// Waits for the receiver's `zeroed`; the burst's clock starts here.
    pub fn zeroed(&mut self) -> Result<(), TestError> {
        match self.leg.line.expect(
            Duration::from_secs(5),
            "the receiving agent did not answer zero",
        )? {
            ReceiverLine::Zeroed => {}
            other => return Err(unexpected("zeroed", &other)),
        }
        self.clock = Clock::new();
        self.tick = self.clock.start;
        Ok(())
    }

    /// One turn: a send when one is due, else how long to wait (`solo`: a
    /// thread of its own sleeps here). `Done` once the burst is over.
    pub fn step(&mut self, solo: bool) -> Result<Step, TestError> {
        if self.ended_ns.is_some() {
            return self.answer(solo);
        }
        let now = Instant::now();
        let t = self.clock.ns(now);
        // At its time the burst ends, whatever the rate: what fell due and
        // has not left is not sent (at a rate the host cannot reach, that
        // is always a bucket's worth), so no datagram leaves stamped past
        // `duration_s` and the summary shows the rate the sender managed.
        if t >= self.end_ns || self.k >= self.p.count {
            return self.end();
        }
        let left = self.p.count - self.k;
        let mut due_now = 1;
        if let Some(b) = self.bucket.as_mut() {
            match b.due(t as f64, self.k) {
                Ok(n) => {
                    due_now = n.min(left).min(self.most) as usize;
                    self.next_ns = 0.0;
                }
                Err(at) => self.next_ns = at,
            }
        }
        let due = if self.wait_ns <= 0.0 {
            left.min(self.most) as usize
        } else if (t as f64) < self.next_ns {
            // Never asleep past the end: a datagram due after it never leaves.
            let at = self.next_ns.min(self.end_ns as f64);
            let due = self.clock.start + Duration::from_nanos(at as u64);
            if !solo {
                return Ok(Step::Wait(due));
            }
            // Long waits sleep in slices so a cancel is seen promptly.
            pace::nap(due, Duration::from_millis(50));
            if self.ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            return Ok(Step::Busy);
        } else {
            // By wait_us: one datagram per call, each with its own send time.
            due_now
        };
        self.send(t, due);
        if self.note.is_some() {
            return self.end();
        }
        if now.duration_since(self.tick) >= Duration::from_millis(100) {
            self.tick = now;
            if self.ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            // The receiving agent says nothing until our stats line: the
            // control connection turning readable means it went away (its
            // limit, a crash), and nobody is counting what we send.
            if watchdog::readable(self.leg.line.fd()) {
                self.note = Some(format!(
                    "sending stopped after {} datagrams: the receiving agent closed the test's control connection",
                    self.k
                ));
                return self.end();
            }
        }
        Ok(Step::Busy)
    }

    /// Sends `due` datagrams stamped `t`.
    fn send(&mut self, t: u64, due: usize) {
        for i in 0..due {
            let h = Hdr {
                kind: DATA,
                token: self.leg.token,
                seq: self.k + i as u64,
                t_ns: t,
            };
            h.write(self.batch.buf(i));
        }
        // Past the errors ICMP for earlier datagrams left on the socket:
        // the datagrams did not leave, and are sent again.
        let (batch, sock) = (&mut self.batch, &self.leg.sock);
        match udp::send_past_icmp(&mut self.icmp, || batch.send(sock, due)) {
            Ok(n) => {
                self.times.resize(self.times.len() + n, t);
                self.k += n as u64;
                self.live
                    .fetch_add(n as u64 * self.p.pkt_bytes, Ordering::Relaxed);
                match self.bucket.as_mut() {
                    Some(b) => b.last_ns = t as f64,
                    None if self.wait_ns > 0.0 => self.next_ns = self.pacer.next(t as f64, self.k),
                    None => {}
                }
            }
            Err(e) if batch::no_room(&e) || udp::is_timeout(&e) => {}
            Err(e) => {
                self.note = Some(format!("sending stopped after {} datagrams: {e}", self.k));
            }
        }
    }

    /// The burst is over: notes when (before the thread's priority drops:
    /// on a busy host the thread can wait for a CPU after that, 200 ms once
    /// at a load of 24 on 2 CPUs, which is not sending time).
    fn end(&mut self) -> Result<Step, TestError> {
        self.ended_ns = Some(self.clock.now_ns());
        Ok(Step::Ended)
    }

    /// The figures of the burst, its samples, and `stats` to the receiver;
    /// `nice`: the thread's raised priority, if it was.
    pub fn report(&mut self, nice: Option<i32>) -> Result<(), TestError> {
        let (p, ended_ns) = (self.p, self.ended_ns.unwrap_or(0));
        // The warm-up's datagrams stay in the samples, not in the figures.
        let omit_ns = p.omit_s.map_or(0, |o| (o * 1e9) as u64);
        let omitted = self.times.partition_point(|&t| t < omit_ns);
        let kept = &self.times[omitted..];
        let send_seconds = kept
            .first()
            .map_or(0.0, |&t0| ended_ns.saturating_sub(t0) as f64 / 1e9);
        let gaps: Vec<f64> = kept
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e3)
            .collect();
        let gap = Summary::new(&gaps).ok();
        let errs: Vec<f64> = gaps.iter().map(|g| (g - p.wait_us).abs()).collect();
        let b = self.bucket.as_ref();
        let snd = UdpStreamSend {
            sent: self.k,
            send_seconds,
            send_gap_us: gap,
            pacing_error_us: PacingError {
                mean: gap.map(|g| g.mean - p.wait_us),
                p99: Summary::new(&errs).ok().map(|s| s.p99),
            },
            sender_nice: nice,
            schedule_slips: b.map_or(self.pacer.slips, |b| b.slips),
            schedule_slipped_us: b.map_or(self.pacer.slip_ns, |b| b.slip_ns) / 1e3,
            from: self.leg.sock.local_addr().map(|a| a.ip().to_string()).ok(),
            to: self.leg.peer.ip().to_string(),
            omitted: p.omit_s.map(|_| omitted as u64),
            gso: Some(self.gso),
            send_calls: Some(self.batch.calls),
            icmp_errors: Some(self.icmp),
        };
        let wait = Duration::from_millis(p.timeout_ms) + Duration::from_secs(5);
        let r = self.leg.line.send(&SenderLine::Stats { send: snd.clone() });
        self.sent = Some((snd, Instant::now() + wait));
        r.map_err(udp::gone)
    }

    /// After `stats`: the receiver's answer (`Done` when it came, or
    /// will not).
    fn answer(&mut self, solo: bool) -> Result<Step, TestError> {
        let wait = if solo {
            Duration::from_millis(10)
        } else {
            Duration::ZERO
        };
        self.reply = match self.leg.line.recv::<ReceiverLine>(wait) {
            Ok(Some(ReceiverLine::Stats { summary, receive })) => Some(Ok((summary, receive))),
            Ok(Some(other)) => Some(Err(unexpected("stats", &other))),
            Ok(None)
                if self
                    .sent
                    .as_ref()
                    .is_some_and(|(_, by)| Instant::now() < *by) =>
            {
                return Ok(Step::Idle)
            }
            Ok(None) => Some(Err(TestError::new(
                ErrorCode::PeerTimeout,
                "the receiving agent did not report its statistics",
            ))),
            Err(e) => Some(Err(udp::gone(e))),
        };
        Ok(Step::Done)
    }

    /// The flow's figures once the answer came (or did not).
    pub fn finish(mut self) -> Result<Ended, TestError> {
        let p = self.p;
        let (snd, _) = self.sent.take().expect("finish follows report");
        let reply = self.reply.take().expect("finish follows the answer");
        let note = self.note.take();
        let (figures, rcv, note, timeouts) = match reply {
            Ok((figures, receive)) if note.is_none() => (figures, Some(receive), None, 0),
            Ok((_, receive)) => {
                let f = summary(p, Some(&snd), Some(&receive), note.clone(), 0);
                (f, Some(receive), note, 0)
            }
            Err(e) => {
                let note = note.or(Some(e.message));
                (summary(p, Some(&snd), None, note.clone(), 1), None, note, 1)
            }
        };
        Ok(Ended {
            leg: self.leg,
            figures,
            snd: Some(snd),
            rcv,
            note,
            timeouts,
            samples: vec![(SampleKind::SendTimeNs, self.times)],
        })
    }
}

/// Sets the sender up for UDP GSO as `gso` asks; whether it is on. The
/// kernel may have the option (checked before the test, `check_kernel`)
/// and still refuse a segmented send on this path (a device without
/// checksum offload: EIO; a datagram over the path's MTU: EINVAL), so two
/// hello datagrams (which the receiver skips, as the binding's) go first as
/// one segmented send: `on` is refused on its error in one line before the
/// burst, `auto` then sends without.
pub(super) fn gso_send(
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
        hello.send(sock, 2).map(|_| ())
    });
    match tried {
        Ok(()) => Ok(true),
        // A full buffer or a timeout is not a refusal.
        Err(e) if batch::no_room(&e) || udp::is_timeout(&e) => Ok(true),
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
/// time, where its own preemption dominates). Needs CAP_SYS_NICE; without
/// it (and off Linux) the burst runs at the thread's priority and
/// `sender_nice` in the summary is null. The old priority comes back on drop.
#[cfg(target_os = "linux")]
pub struct Urgent {
    old: libc::c_int,
    pub raised: Option<i32>,
}

#[cfg(target_os = "linux")]
impl Urgent {
    const NICE: libc::c_int = -20;

    pub fn raise() -> Urgent {
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

#[cfg(target_os = "linux")]
impl Drop for Urgent {
    fn drop(&mut self) {
        if self.raised.is_some() {
            // SAFETY: as in `raise`.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, self.old) };
        }
    }
}

/// Off Linux there is no nice value to raise (Windows ranks threads by
/// priority classes): the burst runs at the thread's priority.
#[cfg(not(target_os = "linux"))]
pub struct Urgent {
    pub raised: Option<i32>,
}

#[cfg(not(target_os = "linux"))]
impl Urgent {
    pub fn raise() -> Urgent {
        Urgent { raised: None }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::gso_send;
    use meshperf_protocol::params::{Limits, UdpStreamParams};
    use serde_json::json;

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
