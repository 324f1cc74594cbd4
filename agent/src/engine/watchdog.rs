//! Waking a thread that blocks in a system call with no timeout on it.
//!
//! A blocking `recv` with SO_RCVTIMEO arms and cancels a kernel timer on
//! every wait, which costs microseconds of each UDP round trip (measured in
//! docs/performance.md, "Figures behind choices in the code"). So udp_rr's
//! two loops block without a timeout, and a watchdog thread beside each one
//! interrupts it when a deadline passes or something else needs it: a no-op
//! signal without SA_RESTART, so the call returns EINTR (netperf ends its
//! loops the same way, with SIGALRM). The watchdog wakes once a period,
//! not once a datagram.

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(target_os = "linux")]
use std::sync::{Arc, Once};
#[cfg(target_os = "linux")]
use std::thread::{self, JoinHandle};
use std::time::Duration;

#[cfg(target_os = "linux")]
/// The signal used: one of the real-time ones, which nothing else here uses.
fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

#[cfg(target_os = "linux")]
extern "C" fn ignore(_: libc::c_int) {}

#[cfg(target_os = "linux")]
/// Installs the no-op handler once per process. Without SA_RESTART, a call
/// the signal interrupts fails with EINTR instead of going back to sleep.
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe
        // (it does nothing).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = ignore as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(signal(), &sa, std::ptr::null_mut());
        }
    });
}

#[cfg(target_os = "linux")]
/// A watchdog for the thread that started it; stopped (and joined) on drop,
/// so it never signals a thread that has gone.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

#[cfg(target_os = "linux")]
impl Watchdog {
    /// Every `period`, asks `wake` whether the calling thread must be
    /// interrupted, and if so interrupts it. It asks again a period later
    /// while `wake` says so, in case the signal came between two calls.
    pub fn start(period: Duration, wake: impl Fn() -> bool + Send + 'static) -> Watchdog {
        install();
        // SAFETY: pthread_self has no preconditions.
        // (as an integer: musl's pthread_t is a pointer, which is not Send)
        let target = unsafe { libc::pthread_self() } as usize;
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let handle = thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || loop {
                thread::park_timeout(period);
                if halt.load(Ordering::Acquire) {
                    break;
                }
                if wake() {
                    // SAFETY: `target` is alive: it joins this thread before
                    // it can exit (Watchdog::drop).
                    unsafe { libc::pthread_kill(target as libc::pthread_t, signal()) };
                }
            })
            .expect("the OS starts a thread");
        Watchdog {
            stop,
            handle: Some(handle),
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// Off Linux no signal interrupts a blocking call: the loops wait with a
/// receive timeout of the watchdog's period instead ([`read_timeout`]),
/// and a timed-out wait is their wake-up ([`woken`]).
#[cfg(not(target_os = "linux"))]
pub struct Watchdog;

#[cfg(not(target_os = "linux"))]
impl Watchdog {
    pub fn start(_period: Duration, _wake: impl Fn() -> bool + Send + 'static) -> Watchdog {
        Watchdog
    }
}

/// The receive timeout a loop with a watchdog of `period` waits with:
/// none on Linux (the signal wakes it), `period` elsewhere.
pub fn read_timeout(period: Duration) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let _ = period;
        None
    }
    #[cfg(not(target_os = "linux"))]
    Some(period)
}

/// Whether a failed wait is the watchdog's wake-up: EINTR on Linux, the
/// receive timeout elsewhere.
pub fn woken(e: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    return e.kind() == std::io::ErrorKind::Interrupted;
    #[cfg(not(target_os = "linux"))]
    return matches!(
        e.kind(),
        std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::WouldBlock
    );
}

/// Whether `fd` has something to read, or its peer hung up (no waiting).
pub fn readable(fd: crate::platform::RawSock) -> bool {
    crate::platform::readable(fd, Duration::ZERO)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Instant;

    #[test]
    fn a_recv_with_no_timeout_is_interrupted_when_asked_and_not_before() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Should the watchdog never fire, a datagram ends the wait after 3 s
        // and the test fails instead of hanging.
        let to = s.local_addr().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(3));
            let _ = UdpSocket::bind("127.0.0.1:0").and_then(|u| u.send_to(b"x", to));
        });
        let t0 = Instant::now();
        let w = Watchdog::start(Duration::from_millis(10), move || {
            t0.elapsed() >= Duration::from_millis(150)
        });
        let mut buf = [0u8; 8];
        let e = s.recv(&mut buf).unwrap_err();
        let waited = t0.elapsed();
        drop(w);
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "{e}");
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
    }
}
