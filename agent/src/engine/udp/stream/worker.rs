//! A side's flows over worker threads: the legs go to the threads of a
//! [`Placement`] in turn (each pinned to its CPU when the placement lists
//! CPUs), and each thread steps its legs until every one has its figures.
//! A thread with one leg lets it block (a sender sleeps to its next
//! datagram, a receiver in the kernel until one comes), as a single flow
//! always ran; a thread with several never blocks on one: it sleeps on
//! its receivers' sockets ([`Readers`]) until one is readable, a sender's
//! datagram is nearly due, or 10 ms pass (the receivers' checks of their
//! control lines).
//!
//! Set-up order keeps two agents with different thread counts from
//! waiting on each other: every thread first says `zero` for all its
//! senders, then answers `zero` for its receivers, then waits for its
//! senders' `zeroed`.

use super::recv::Receiver;
use super::send::{Sender, Urgent};
use super::{Ended, Leg, Step};
use crate::engine::ctx::{done_fraction, TestCtx};
use crate::engine::error::TestError;
use crate::engine::pace;
use crate::engine::placement::Placement;
use crate::engine::pool;
use crate::platform;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::UdpStreamParams;
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A leg as a thread steps it (boxed: a sender's state is twice a
/// receiver's).
enum Task<'a> {
    Send(Box<Sender<'a>>),
    Recv(Box<Receiver<'a>>),
}

/// Runs `legs` on the worker threads of `place` and reports this side's
/// progress (bytes sent) while they run; every leg's end, or the first
/// error (the other threads then stop too).
pub fn run(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    legs: Vec<Leg>,
    place: &Placement,
) -> Result<Vec<Ended>, TestError> {
    let n = legs.len();
    let sends = legs.iter().filter(|l| l.send).count() as u64;
    let live: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    // The first error in time is the side's (the other threads then stop,
    // or fail waiting for what the failed one never said).
    let first: Mutex<Option<TestError>> = Mutex::new(None);
    let start = Instant::now();
    let mut tick = Instant::now();
    let joined = pool::run(
        "udp",
        place,
        legs.into_iter().zip(&live).collect(),
        |_, g, pinned| {
            let r = match pinned {
                Err(e) => Err(TestError::new(ErrorCode::Io, e)),
                Ok(()) => worker(ctx, p, g, &stop),
            };
            if let Err(e) = &r {
                let mut f = first.lock().unwrap_or_else(|e| e.into_inner());
                if f.is_none() {
                    *f = Some(e.clone());
                }
                stop.store(true, Ordering::Relaxed);
            }
            r
        },
        || {
            if sends > 0 && tick.elapsed() >= Duration::from_millis(100) {
                tick = Instant::now();
                let bytes: u64 = live.iter().map(|b| b.load(Ordering::Relaxed)).sum();
                let elapsed = start.elapsed().as_secs_f64();
                let all = sends * p.count * p.pkt_bytes;
                let expected = p.duration_s.is_none().then_some((bytes, all));
                let fraction = done_fraction(expected, elapsed, p.duration_s);
                ctx.progress(elapsed, bytes, fraction);
            }
        },
    )
    .map_err(|e| TestError::new(ErrorCode::Internal, format!("worker thread: {e}")))?;
    let mut ended = Vec::with_capacity(n);
    for h in joined {
        match h {
            Ok(Ok(v)) => ended.extend(v),
            Ok(Err(_)) => {}
            Err(_) => {
                return Err(TestError::new(ErrorCode::Internal, "a flow panicked"));
            }
        }
    }
    let first = first.lock().unwrap_or_else(|e| e.into_inner()).take();
    match first {
        Some(_) if ctx.cancelled() => Err(TestError::cancelled()),
        Some(e) => Err(e),
        None => Ok(ended),
    }
}

/// One thread's legs, from set-up to their ends.
fn worker<'a>(
    ctx: &'a TestCtx,
    p: &'a UdpStreamParams,
    group: Vec<(Leg, &'a AtomicU64)>,
    stop: &AtomicBool,
) -> Result<Vec<Ended>, TestError> {
    let solo = group.len() == 1;
    let (sends, recvs): (Vec<_>, Vec<_>) = group.into_iter().partition(|(l, _)| l.send);
    let mut senders = Vec::with_capacity(sends.len());
    for (leg, live) in sends {
        let mut s = Sender::open(ctx, p, leg, live)?;
        if !solo {
            s.shared();
        }
        senders.push(s);
    }
    let mut tasks: Vec<Option<Task>> = Vec::new();
    for (leg, _) in recvs {
        tasks.push(Some(Task::Recv(Box::new(Receiver::open(ctx, p, leg)?))));
    }
    for mut s in senders {
        s.zeroed()?;
        tasks.push(Some(Task::Send(Box::new(s))));
    }
    let urgent = tasks
        .iter()
        .any(|t| matches!(t, Some(Task::Send(s)) if s.paced()))
        .then(Urgent::raise);
    let nice = urgent.as_ref().and_then(|u| u.raised);
    let mut readers = (!solo).then(Readers::new).transpose().map_err(io)?;
    if let Some(readers) = &mut readers {
        for (i, t) in tasks.iter().enumerate() {
            if let Some(Task::Recv(r)) = t {
                readers.add(i, r.sock()).map_err(io)?;
            }
        }
    }
    let mut out = Vec::with_capacity(tasks.len());
    loop {
        if ctx.cancelled() || stop.load(Ordering::Relaxed) {
            return Err(TestError::cancelled());
        }
        let (mut busy, mut wake) = (false, None::<Instant>);
        for (i, slot) in tasks.iter_mut().enumerate() {
            let step = match slot {
                Some(Task::Send(s)) => s.step(solo)?,
                Some(Task::Recv(r)) => r.step(solo)?,
                None => continue,
            };
            match step {
                Step::Busy => busy = true,
                Step::Idle => {}
                Step::Wait(at) => wake = Some(wake.map_or(at, |w| w.min(at))),
                Step::Ended => match slot {
                    Some(Task::Send(s)) => {
                        s.report(nice)?;
                        busy = true;
                    }
                    _ => {
                        let Some(Task::Recv(r)) = slot.take() else {
                            unreachable!()
                        };
                        if let Some(readers) = &mut readers {
                            readers.remove(i, r.sock());
                        }
                        out.push((*r).finish()?);
                    }
                },
                Step::Done => {
                    let Some(Task::Send(s)) = slot.take() else {
                        unreachable!()
                    };
                    out.push((*s).finish()?);
                }
            }
        }
        if tasks.iter().all(Option::is_none) {
            break;
        }
        if solo || busy {
            continue;
        }
        let most = Duration::from_millis(10);
        let timeout = wake.map_or(most, |at| pace::poll_timeout(at, most));
        if timeout.is_zero() {
            // A datagram is nearly due: spin to it.
            std::hint::spin_loop();
            continue;
        }
        match &mut readers {
            Some(readers) => readers.wait(timeout).map_err(io)?,
            None => std::thread::sleep(timeout),
        }
    }
    // `urgent` gives the thread's priority back as it goes out of scope.
    Ok(out)
}

/// The receivers' sockets a thread with several legs sleeps on, by the
/// index of their task: a mio `Poll` on Linux; elsewhere poll(2) or
/// WSAPoll over their handles ([`platform::wait_any`]: mio on Windows
/// watches only sockets it owns, and these are the legs' std sockets).
struct Readers {
    #[cfg(target_os = "linux")]
    poll: mio::Poll,
    #[cfg(target_os = "linux")]
    events: mio::Events,
    #[cfg(not(target_os = "linux"))]
    socks: Vec<(usize, platform::RawSock)>,
}

#[cfg(target_os = "linux")]
impl Readers {
    fn new() -> io::Result<Readers> {
        Ok(Readers {
            poll: mio::Poll::new()?,
            events: mio::Events::with_capacity(16),
        })
    }

    fn add(&mut self, i: usize, s: &UdpSocket) -> io::Result<()> {
        let fd = platform::raw(s);
        self.poll.registry().register(
            &mut mio::unix::SourceFd(&fd),
            mio::Token(i),
            mio::Interest::READABLE,
        )
    }

    fn remove(&mut self, _i: usize, s: &UdpSocket) {
        let fd = platform::raw(s);
        let _ = self
            .poll
            .registry()
            .deregister(&mut mio::unix::SourceFd(&fd));
    }

    /// Sleeps until a socket is readable, at most `timeout`.
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Readers {
    fn new() -> io::Result<Readers> {
        Ok(Readers { socks: Vec::new() })
    }

    fn add(&mut self, i: usize, s: &UdpSocket) -> io::Result<()> {
        self.socks.push((i, platform::raw(s)));
        Ok(())
    }

    fn remove(&mut self, i: usize, _s: &UdpSocket) {
        self.socks.retain(|&(j, _)| j != i);
    }

    /// Sleeps until a socket is readable, at most `timeout` (a sleep when
    /// none is left: WSAPoll refuses an empty set at once).
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        let socks: Vec<_> = self.socks.iter().map(|&(_, s)| s).collect();
        if socks.is_empty() {
            std::thread::sleep(timeout);
        } else {
            platform::wait_any(&socks, timeout);
        }
        Ok(())
    }
}

fn io(e: io::Error) -> TestError {
    TestError::new(ErrorCode::Io, format!("poll: {e}"))
}
