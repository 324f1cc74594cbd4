//! One flow's receiver: records every datagram until the burst is over,
//! then works out the figures and answers the sender's `stats`. A
//! [`Receiver`] is a state machine a worker thread steps ([`super::worker`]);
//! a thread with one flow blocks in the kernel between datagrams, as the
//! single-flow receiver always did.

use super::{summary, Ended, Leg, Step, BATCH};
use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use crate::engine::peer::unexpected;
use crate::engine::udp::batch::{self, RecvBatch, GRO_BUF};
use crate::engine::udp::{self, Clock, Hdr, DATA, HELLO};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{UdpGso, UdpStreamParams};
use meshperf_protocol::peer::{
    UdpStreamReceiverLine as ReceiverLine, UdpStreamSenderLine as SenderLine,
};
use meshperf_protocol::summary::{Timestamps, UdpStreamReceive, UdpStreamSend};
use std::time::{Duration, Instant};

/// How long after a datagram the receiver keeps polling instead of sleeping
/// in the kernel: two gaps, at least 200 us, at most 500 us. On loopback the
/// sender's own system call delivers the datagram and, when the receiving
/// thread sleeps, pays for waking it (an IPI to an idle CPU, a VM exit here):
/// several microseconds that would show up as the sender missing its
/// schedule. Arrival times come from the kernel, so polling does not change
/// them (off Linux, where they are taken as each read returns, it brings
/// them closer to the arrival); with waits above 250 us the receiver
/// sleeps between datagrams.
fn rx_spin(wait_us: f64) -> Duration {
    Duration::from_secs_f64((2.0 * wait_us).clamp(200.0, 500.0) / 1e6)
}

/// What arrived: per datagram its sequence number, arrival and send time.
#[derive(Default)]
struct Got {
    seq: Vec<u64>,
    arr: Vec<u64>,
    snt: Vec<u64>,
    /// Arrivals timed in user space (no kernel time stamp).
    user_ts: u64,
    /// The latest arrival so far (arrival times never go back).
    prev: u64,
}

/// A flow's receiving end, from `zero` to its `stats` answer.
pub struct Receiver<'a> {
    ctx: &'a TestCtx,
    p: &'a UdpStreamParams,
    leg: Leg,
    kernel: bool,
    gro: bool,
    batch: RecvBatch,
    got: Got,
    timeout: Duration,
    quiet: Duration,
    stats: Option<(UdpStreamSend, Instant)>,
    note: Option<String>,
    clock: Clock,
    /// The burst's nominal end (see [`Receiver::open`]).
    time_end: Instant,
    last: Instant,
    checked: Instant,
    spin: Duration,
    started: bool,
    /// ICMP errors the socket reported (the receive goes on).
    icmp: u64,
}

impl<'a> Receiver<'a> {
    /// Waits for the sender's `zero`, sets the socket up and answers
    /// `zeroed`: the burst may come from then on.
    pub fn open(
        ctx: &'a TestCtx,
        p: &'a UdpStreamParams,
        mut leg: Leg,
    ) -> Result<Receiver<'a>, TestError> {
        let kernel = udp::enable_timestamps(&leg.sock);
        match leg
            .line
            .expect(Duration::from_secs(10), "the sending agent did not start")?
        {
            SenderLine::Zero => {}
            other => return Err(unexpected("zero", &other)),
        }
        leg.sock
            .set_read_timeout(Some(Duration::from_millis(10)))
            .map_err(udp::io_err)?;
        let gro = gro(p, &leg.sock)?;
        // A coalesced read holds up to 64 KiB.
        let size = if gro {
            GRO_BUF
        } else {
            p.pkt_bytes.max(2048) as usize
        };
        let cap = p.count.min(1 << 22) as usize;
        let got = Got {
            seq: Vec::with_capacity(cap),
            arr: Vec::with_capacity(cap),
            snt: Vec::with_capacity(cap),
            ..Got::default()
        };
        let timeout = Duration::from_millis(p.timeout_ms);
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
        leg.line.send(&ReceiverLine::Zeroed).map_err(udp::gone)?;
        let now = Instant::now();
        Ok(Receiver {
            ctx,
            p,
            leg,
            kernel,
            gro,
            batch: RecvBatch::new(BATCH, size),
            got,
            timeout,
            quiet: timeout + Duration::from_secs_f64(2.0 * p.wait_us / 1e6),
            stats: None,
            note: None,
            clock,
            time_end: clock.start + Duration::from_secs_f64(nominal_s.min(1e6)),
            last: now,
            checked: now,
            spin: rx_spin(p.wait_us),
            started: false,
            icmp: 0,
        })
    }

    /// The socket a worker's poll watches.
    pub fn sock(&self) -> &std::net::UdpSocket {
        &self.leg.sock
    }

    /// One turn: a read (`solo`: blocking in the kernel unless within a
    /// burst), then whether the burst is over.
    pub fn step(&mut self, solo: bool) -> Result<Step, TestError> {
        // Within a burst, poll without sleeping (see `rx_spin`).
        let spinning = self.started && self.last.elapsed() < self.spin;
        let r = if solo && !spinning {
            self.batch.recv(&self.leg.sock)
        } else {
            self.batch.recv_now(&self.leg.sock)
        };
        let mut step = Step::Busy;
        match r {
            Ok(n) => self.take(n),
            Err(e) if udp::is_timeout(&e) => {
                std::hint::spin_loop();
                if !spinning {
                    step = Step::Idle;
                }
            }
            // An ICMP error for a datagram this socket sent (the hello,
            // the reverse flow's), or forged: counted, never the end.
            Err(e) if udp::icmp_error(&e) => self.icmp += 1,
            Err(e) => return Err(udp::io_err(e)),
        }
        let now = Instant::now();
        let n = self.got.seq.len() as u64;
        if self.stats.is_none()
            && (now - self.checked >= Duration::from_millis(10) || n >= self.p.count)
        {
            self.checked = now;
            if self.ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            match self.leg.line.recv(Duration::ZERO) {
                Ok(Some(SenderLine::Stats { send })) => self.stats = Some((send, now)),
                Ok(_) => {}
                Err(e) => {
                    self.note = Some(format!("the sending agent went away mid-burst ({e})"));
                    return Ok(Step::Ended);
                }
            }
        }
        match &self.stats {
            Some((v, at)) => {
                let idle = now - self.last.max(*at);
                if n >= v.sent || idle > self.timeout.min(Duration::from_millis(250)) {
                    return Ok(Step::Ended);
                }
            }
            // The sender works out the statistics of its send times before
            // it sends them (sorts: about 0.3 s per million datagrams on a
            // busy 2-CPU host), so the quiet after a burst grows by 1 us per
            // datagram received: 5 million 64-byte datagrams in 2 s (GSO)
            // once took it past `timeout_ms`. A sender that went away is
            // seen at once on the control line instead.
            None if now.saturating_duration_since(self.last.max(self.time_end))
                > self.quiet + Duration::from_micros(n) =>
            {
                self.note = Some(format!(
                    "no datagram for {} ms and no end of burst: the sender stopped mid-burst",
                    self.quiet.as_millis()
                ));
                return Ok(Step::Ended);
            }
            None => {}
        }
        Ok(step)
    }

    /// Records the `n` messages of the last read.
    fn take(&mut self, n: usize) {
        let now = Instant::now();
        let (leg, g, clock) = (&mut self.leg, &mut self.got, &self.clock);
        for i in 0..n {
            let (_, from, ts) = self.batch.get(i);
            if !leg.connected && from != Some(leg.peer) {
                leg.foreign += self.batch.datagrams(i).count() as u64;
                continue;
            }
            // One datagram, or the datagrams of a coalesced read (GRO),
            // which share its kernel time stamp: one arrival time for all
            // of them, filled in once after the loop.
            let a = match ts {
                Some((s, ns)) => clock.since_realtime(s, ns),
                None => clock.ns(now),
            };
            let before = g.seq.len();
            for data in self.batch.datagrams(i) {
                match Hdr::read(data) {
                    Some(h) if h.is(DATA, leg.token) => {
                        g.seq.push(h.seq);
                        g.snt.push(h.t_ns);
                    }
                    Some(h) if h.is(HELLO, leg.token) => {}
                    _ => leg.foreign += 1,
                }
            }
            let data = (g.seq.len() - before) as u64;
            if data > 0 {
                g.prev = g.prev.max(a);
                g.arr.resize(g.seq.len(), g.prev);
                if ts.is_none() {
                    g.user_ts += data;
                }
            }
        }
        self.last = now;
        self.started = true;
    }

    /// The figures of the burst, its samples, and the answer to `stats`.
    pub fn finish(mut self) -> Result<Ended, TestError> {
        let (p, g) = (self.p, std::mem::take(&mut self.got));
        let snd = self.stats.take().map(|(v, _)| v);
        let a = match snd.as_ref().and_then(|s| s.omitted.map(|o| (o, s.sent))) {
            // The figures of the datagrams sent after the warm-up, numbered
            // from 0 as if the burst had started there.
            Some((o, sent)) => {
                let keep: Vec<usize> = (0..g.seq.len()).filter(|&i| g.seq[i] >= o).collect();
                let pick = |v: &[u64], d: u64| keep.iter().map(|&i| v[i] - d).collect::<Vec<_>>();
                let (s, a, t) = (pick(&g.seq, o), pick(&g.arr, 0), pick(&g.snt, 0));
                meshperf_stats::udp::analyze(&s, &a, Some(sent - o), Some(&t))
            }
            None => meshperf_stats::udp::analyze(
                &g.seq,
                &g.arr,
                snd.as_ref().map(|s| s.sent),
                Some(&g.snt),
            ),
        }
        .map_err(|e| TestError::new(ErrorCode::Internal, format!("udp analysis: {e}")))?;
        let rcv = UdpStreamReceive {
            received: a.received,
            lost: a.lost,
            out_of_order: a.out_of_order,
            duplicates: a.duplicates,
            out_of_range: a.out_of_range,
            packets: a.packets,
            foreign: self.leg.foreign,
            recv_seconds: a.recv_seconds,
            jitter_us: a.jitter_us,
            interarrival_us: a.interarrival_us,
            timestamps: if self.kernel && g.user_ts == 0 {
                Timestamps::Kernel
            } else {
                Timestamps::User
            },
            from: self.leg.peer.ip().to_string(),
            to: self.leg.sock.local_addr().map(|a| a.ip().to_string()).ok(),
            gro: Some(self.gro),
            recv_calls: Some(self.batch.calls),
            recv_messages: Some(self.batch.messages),
            icmp_errors: Some(self.icmp),
        };
        let timeouts = u64::from(snd.is_none());
        let note = self.note.take();
        let out = summary(p, snd.as_ref(), Some(&rcv), note.clone(), timeouts);
        if note.is_none() {
            let _ = self.leg.line.send(&ReceiverLine::Stats {
                summary: out.clone(),
                receive: rcv.clone(),
            });
        }
        Ok(Ended {
            leg: self.leg,
            figures: out,
            snd,
            rcv: Some(rcv),
            note,
            timeouts,
            samples: vec![
                (SampleKind::Sequence, g.seq),
                (SampleKind::ArrivalNs, g.arr),
            ],
        })
    }
}

/// UDP GRO as `gso` asks, set before `zeroed`: `on` refused is refused
/// before the burst; whether it is on.
fn gro(p: &UdpStreamParams, sock: &std::net::UdpSocket) -> Result<bool, TestError> {
    match p.gso {
        UdpGso::Off => Ok(false),
        _ => match batch::set_gro(sock) {
            Ok(()) => Ok(true),
            Err(e) if p.gso == UdpGso::On => Err(TestError::new(
                ErrorCode::BadParams,
                format!("gso: on, but the kernel refused UDP GRO ({e}); use gso auto or off"),
            )),
            Err(_) => Ok(false),
        },
    }
}
