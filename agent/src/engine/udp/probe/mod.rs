//! The latency probes: the probe flow of `latency_under_load`, and the
//! same flow beside a bulk test ([`beside`], `probe_ms` of `tcp_stream` and
//! `udp_stream`), with the summary of its phases ([`summary`]). Here, under
//! the UDP kinds, because both `lul` and `udp` use it.
//!
//! The probe flow of `latency_under_load` (datagram layout in
//! `meshperf_protocol::params::lul`): the driving agent sends a probe every
//! `probe_ms` on an absolute schedule, tagged with the phase it is in; the
//! serving agent stamps when it received it (t2) and when it answers (t3)
//! and sends it back, to the bound peer only, once per probe, no larger
//! than the probe, within its `--max-udp-rate`; the driving agent stamps the
//! answer's arrival (t4). Both receive times are the kernel's
//! (SO_TIMESTAMPNS) where it gives them: the datagram's arrival, not the
//! wake-up of the thread that reads it, which on a busy host comes
//! milliseconds later (the threads wait behind the load's) and would be
//! counted as delay. Off Linux there are none: the times are taken in user
//! space right as each read returns (one datagram a call,
//! [`super::batch`]), and the summary's `timestamps` says
//! `user`.

pub mod beside;
pub mod summary;

use super::batch::RecvBatch;
use super::dgram::{self as udp, Clock, Hdr};
use crate::engine::error::TestError;
use crate::engine::pace::{self, RateCap};
use crate::engine::peer::{self, Line};
use meshperf_protocol::params::{Limits, GAP_PHASE};
use meshperf_protocol::peer::LulTally;
use meshperf_protocol::peer::{LulDriverLine, LulServerLine};
use meshperf_protocol::summary::Timestamps;
use std::collections::HashSet;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a side waits for the peer agent's next control line (an end
/// line, the listen line, the probe counts).
pub const LINE_WAIT: Duration = Duration::from_secs(5);

/// Datagram types (byte 3 of the header).
pub const PROBE: u8 = b'P';
pub const ANSWER: u8 = b'A';
/// Phase codes: the four phases and "between phases".
pub const CODES: usize = GAP_PHASE as usize + 1;

const PHASE_AT: usize = 28;
const T2_AT: usize = 32;
const T3_AT: usize = 40;

/// The phase the probes are tagged with, set by the thread that runs the
/// load, and when each phase began, so that slots the prober missed (a
/// wake-up over 100 ms late) are counted against the phase they fell in,
/// not the one it woke up in.
pub struct Phases {
    now: AtomicU8,
    began: Mutex<Vec<(Instant, u8)>>,
}

impl Phases {
    pub fn new(code: u8) -> Phases {
        Phases {
            now: AtomicU8::new(code),
            began: Mutex::new(vec![(Instant::now(), code)]),
        }
    }

    /// From now on the phase is `code`.
    pub fn set(&self, code: u8) {
        let mut began = self.began.lock().unwrap_or_else(|e| e.into_inner());
        began.push((Instant::now(), code));
        self.now.store(code, Ordering::Relaxed);
    }

    /// The phase now (the probes' tag).
    pub fn code(&self) -> u8 {
        self.now.load(Ordering::Relaxed).min(GAP_PHASE)
    }

    /// The phase at `t`: the last one begun by then (the first for times
    /// before it).
    pub fn at(&self, t: Instant) -> u8 {
        let began = self.began.lock().unwrap_or_else(|e| e.into_inner());
        let i = began.partition_point(|&(at, _)| at <= t);
        began[i.saturating_sub(1)].1.min(GAP_PHASE)
    }
}

/// The system clock (CLOCK_REALTIME) in ns since 1970.
fn realtime_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A test clock and the system time it started at, so that the two
/// agents' times can be compared when their system clocks agree.
pub struct ProbeClock {
    pub clock: Clock,
    pub base_ns: u64,
}

impl Default for ProbeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ProbeClock {
    pub fn new() -> ProbeClock {
        let base_ns = realtime_ns();
        ProbeClock {
            clock: Clock::new(),
            base_ns,
        }
    }
}

/// Waits up to `d` for `sock` to be readable (ppoll: ns resolution, where
/// SO_RCVTIMEO rounds to the kernel's tick, several ms).
#[cfg(target_os = "linux")]
fn wait_readable(sock: &UdpSocket, d: Duration) {
    let mut pfd = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(sock),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: d.as_secs() as _,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec; no signal mask.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}

/// Waits up to `d` for `sock` to be readable (whole ms: the last one
/// before a probe is due is spent spinning, so none is sent late for it).
#[cfg(not(target_os = "linux"))]
fn wait_readable(sock: &UdpSocket, d: Duration) {
    crate::platform::readable(crate::platform::raw(sock), d);
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// Where receive times came from, by whether all were the kernel's.
pub fn stamps(kernel: bool) -> Timestamps {
    if kernel {
        Timestamps::Kernel
    } else {
        Timestamps::User
    }
}

/// Datagrams taken per receive call.
const BATCH: usize = 8;

/// Receive buffers for datagrams of `bytes` (one byte more, so a longer
/// datagram shows as one, truncated), with kernel timestamps asked for.
fn receiver(sock: &UdpSocket, bytes: usize) -> (RecvBatch, bool) {
    (
        RecvBatch::new(BATCH, bytes + 1),
        udp::enable_timestamps(sock),
    )
}

/// Datagram `i` of the last receive and when it arrived on `clock`: the
/// kernel's time if it gave one (and `true`), else now.
fn arrived<'a>(rb: &'a RecvBatch, i: usize, clock: &Clock) -> (&'a [u8], u64, bool) {
    let (data, _, ts) = rb.get(i);
    match ts {
        Some((s, ns)) => (data, clock.since_realtime(s, ns), true),
        None => (data, clock.now_ns(), false),
    }
}

/// What the responder counted.
pub struct Responded {
    /// Per phase code.
    pub tally: Vec<LulTally>,
    pub bad: u64,
    pub foreign: u64,
    pub capped_us: f64,
    /// Every probe's receive time was the kernel's.
    pub kernel_stamps: bool,
}

/// Serving side: answers the bound peer's probes until `stop`. At most
/// `max_probes` distinct probes are answered (the count the parameters
/// allow), whatever the peer sends.
#[allow(clippy::too_many_arguments)]
pub fn respond(
    sock: UdpSocket,
    token: u64,
    peer: SocketAddr,
    probe_bytes: usize,
    max_probes: u64,
    limits: &Limits,
    clock: &ProbeClock,
    stop: &AtomicBool,
) -> io::Result<Responded> {
    // As udp_rr's responder: answers leave through a socket connected to
    // the peer, and its twin on the same port, opened after the connect,
    // takes (and counts) everyone else's datagrams.
    sock.connect(peer)?;
    let strangers = udp::twin(&sock)?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let (mut rb, mut kernel_stamps) = receiver(&sock, probe_bytes);
    let mut answer = vec![0u8; probe_bytes];
    let mut cap = RateCap::new(limits);
    let mut seqs = Vec::new();
    let mut phases = Vec::new();
    let mut answered = [0u64; CODES];
    let mut seen = HashSet::new();
    let (mut bad, mut foreign) = (0u64, 0u64);
    let mut checked = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match rb.recv(&sock) {
            Ok(got) => {
                for i in 0..got {
                    let (buf, t2, kernel) = arrived(&rb, i, &clock.clock);
                    let n = buf.len();
                    match Hdr::read(buf) {
                        Some(h)
                            if h.is(PROBE, token)
                                && n == probe_bytes
                                && (buf[PHASE_AT] as usize) < CODES
                                && h.seq < max_probes =>
                        {
                            kernel_stamps &= kernel;
                            let phase = buf[PHASE_AT];
                            seqs.push(h.seq);
                            phases.push(phase);
                            if !seen.insert(h.seq) {
                                continue; // a copy: counted, not answered
                            }
                            answer.copy_from_slice(buf);
                            Hdr {
                                kind: ANSWER,
                                token,
                                ..h
                            }
                            .write(&mut answer);
                            answer[T2_AT..T2_AT + 8].copy_from_slice(&t2.to_le_bytes());
                            if let Some(c) = cap.as_mut() {
                                c.take(answer.len());
                            }
                            let t3 = clock.clock.now_ns();
                            answer[T3_AT..T3_AT + 8].copy_from_slice(&t3.to_le_bytes());
                            // Past an ICMP error an earlier datagram left.
                            if udp::send_past_icmp(&mut 0, || sock.send(&answer)).is_ok() {
                                answered[phase as usize] += 1;
                            }
                        }
                        Some(h) if h.is(udp::HELLO, token) => {}
                        _ => bad += 1,
                    }
                }
            }
            Err(e) if udp::is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            // An ICMP error (the peer gone, or forged): keep listening until stopped.
            Err(e) if udp::icmp_error(&e) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e),
        }
        if checked.elapsed() >= Duration::from_millis(20) {
            checked = Instant::now();
            foreign += udp::drain(&strangers);
        }
    }
    foreign += udp::drain(&strangers);
    let counted = meshperf_stats::lul::tally(&seqs, &phases).expect("parallel arrays");
    let tally = counted
        .iter()
        .zip(answered)
        .map(|(t, a)| LulTally {
            received: t.received,
            duplicates: t.duplicates,
            reordered: t.reordered,
            answered: a,
        })
        .collect();
    Ok(Responded {
        tally,
        bad,
        foreign,
        capped_us: pace::capped_us(&cap),
        kernel_stamps,
    })
}

/// One answered probe as the requester recorded it (ns; t1, t4 on its
/// clock, t2, t3 on the responder's).
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub seq: u64,
    pub phase: u8,
    pub t1: u64,
    pub t2: u64,
    pub t3: u64,
    pub t4: u64,
}

/// What the requester sent and got back.
pub struct Requested {
    /// Probes sent per phase code.
    pub sent: Vec<u64>,
    /// Slots of the schedule left out per phase code: the prober woke
    /// more than 100 ms late (a busy machine) and resumed at the next slot.
    pub skipped: Vec<u64>,
    /// Every arrival of an answer, in arrival order (copies included).
    pub arrivals: Vec<Answer>,
    /// Why it stopped before being told to, if it did.
    pub silent: Option<String>,
    pub capped_us: f64,
    /// From the first probe to the last answer awaited.
    pub seconds: f64,
    /// Every answer's arrival time was the kernel's.
    pub kernel_stamps: bool,
}

/// How long without any answer before the peer is taken to be gone.
pub fn silence_limit(probe_ms: f64) -> Duration {
    Duration::from_secs(2).max(Duration::from_secs_f64(probe_ms * 10.0 / 1e3))
}

/// Driving side: a probe every `probe_ms` tagged with `phase`'s current
/// value, until `stop`; then answers are awaited for up to 1 s more. Ends
/// early, setting `silent`, when no answer came for [`silence_limit`].
#[allow(clippy::too_many_arguments)]
pub fn request(
    sock: UdpSocket,
    token: u64,
    probe_ms: f64,
    probe_bytes: usize,
    max_probes: u64,
    limits: &Limits,
    clock: &ProbeClock,
    phase: &Phases,
    stop: &AtomicBool,
    silent: &Arc<AtomicBool>,
) -> io::Result<Requested> {
    let interval = Duration::from_secs_f64(probe_ms / 1e3);
    sock.set_nonblocking(true)?;
    let quiet = silence_limit(probe_ms);
    let mut probe = vec![0u8; probe_bytes];
    let (mut rb, mut kernel_stamps) = receiver(&sock, probe_bytes);
    let mut cap = RateCap::new(limits);
    let mut sent = vec![0u64; CODES];
    let mut skipped = vec![0u64; CODES];
    let mut arrivals = Vec::new();
    let start = Instant::now();
    let mut last_answer = start;
    let mut seq = 0u64;
    let mut next = start;
    let mut stopped_at: Option<Instant> = None;
    let mut why = None;
    let mut unique = HashSet::new();
    // Send times by sequence number: an answer's own copy is not trusted.
    let mut t1s: Vec<u64> = Vec::new();
    loop {
        let now = Instant::now();
        if stopped_at.is_none() && stop.load(Ordering::Relaxed) {
            stopped_at = Some(now);
        }
        if let Some(at) = stopped_at {
            if unique.len() as u64 >= seq || now - at >= Duration::from_secs(1) {
                break;
            }
        } else if now >= next && seq < max_probes {
            let code = phase.code();
            if let Some(c) = cap.as_mut() {
                c.take(probe.len());
            }
            let t1 = clock.clock.now_ns();
            Hdr {
                kind: PROBE,
                token,
                seq,
                t_ns: t1,
            }
            .write(&mut probe);
            probe[PHASE_AT] = code;
            match sock.send(&probe) {
                Ok(_) => {
                    sent[code as usize] += 1;
                    t1s.push(t1);
                    seq += 1;
                }
                // An ICMP error came back (the peer's port is gone, or going;
                // or someone forged one, docs/security.md): this probe did
                // not leave, the next goes at its time.
                Err(e) if udp::icmp_error(&e) => {}
                Err(e) => return Err(e),
            }
            // The next slot of the schedule: a wake-up a little late
            // catches up (the count stays duration / probe_ms); one more
            // than 100 ms late skips the slots it missed rather than
            // sending them as a burst.
            next += interval;
            if now.saturating_duration_since(next) > Duration::from_millis(100) {
                let slots = (now - start).as_secs_f64() / interval.as_secs_f64();
                let resume = start + interval.mul_f64(slots.floor() + 1.0);
                // Each missed slot counts in the phase it fell in (a stall
                // can span a phase's end).
                while resume.saturating_duration_since(next) > interval / 2 {
                    skipped[phase.at(next) as usize] += 1;
                    next += interval;
                }
                next = resume;
            }
            if now - last_answer > quiet && seq > 1 {
                why = Some(format!(
                    "the peer stopped answering probes: none for {:.1} s",
                    (now - last_answer).as_secs_f64()
                ));
                silent.store(true, Ordering::Relaxed);
                break;
            }
        }
        let wake = match stopped_at {
            Some(at) => at + Duration::from_secs(1),
            None => next,
        };
        wait_readable(&sock, wake.saturating_duration_since(Instant::now()));
        match rb.recv_now(&sock) {
            Ok(got) => {
                for i in 0..got {
                    let (buf, t4, kernel) = arrived(&rb, i, &clock.clock);
                    match Hdr::read(buf) {
                        Some(h)
                            if h.is(ANSWER, token) && buf.len() == probe_bytes && h.seq < seq =>
                        {
                            kernel_stamps &= kernel;
                            last_answer = Instant::now();
                            unique.insert(h.seq);
                            arrivals.push(Answer {
                                seq: h.seq,
                                phase: buf[PHASE_AT],
                                t1: t1s[h.seq as usize],
                                t2: u64_at(buf, T2_AT),
                                t3: u64_at(buf, T3_AT),
                                t4,
                            });
                        }
                        _ => {}
                    }
                }
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted
                    || udp::icmp_error(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Requested {
        sent,
        skipped,
        arrivals,
        silent: why,
        capped_us: pace::capped_us(&cap),
        seconds: start.elapsed().as_secs_f64(),
        kernel_stamps,
    })
}

/// The driving side's end of the probe flow: its counts of probes sent,
/// answered by the serving side's (probes received, its phases, its clock).
pub fn end_counts(line: &mut Line, sent: &[u64]) -> Result<summary::Server, TestError> {
    line.send(&LulDriverLine::Done {
        sent: sent.to_vec(),
    })
    .map_err(peer::gone)?;
    let LulServerLine::Done {
        probes,
        phases,
        base_ns,
        foreign,
        bad: _,
        timestamps,
    } = line.expect(LINE_WAIT, "the serving agent sent no end line")?;
    Ok(summary::Server {
        probes,
        phases,
        base_ns,
        foreign,
        timestamps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missed slot is the phase's it fell in: before the first change the
    /// first phase, at and after a change the new one; codes past the gap
    /// read as the gap.
    #[test]
    fn a_slot_belongs_to_the_phase_begun_by_its_time() {
        let before = Instant::now();
        let p = Phases::new(0);
        std::thread::sleep(Duration::from_millis(2));
        let t1 = Instant::now();
        p.set(2);
        let in_2 = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let t2 = Instant::now();
        p.set(GAP_PHASE + 3);
        assert_eq!(p.at(before), 0);
        assert_eq!(p.at(t1), 0);
        assert_eq!(p.at(in_2), 2);
        assert_eq!(p.at(t2), 2);
        assert_eq!(p.at(Instant::now()), GAP_PHASE);
        assert_eq!(p.code(), GAP_PHASE);
    }
}
