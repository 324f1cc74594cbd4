//! Waking a thread that blocks in a system call with no timeout on it.
//!
//! A blocking `recv` with SO_RCVTIMEO arms and cancels a kernel timer on
//! every wait, and on these VMs that costs microseconds of each UDP round
//! trip (interleaved A/B of udp_rr on loopback, p50: 70.5 us without the
//! timeouts against 73.2 us with, 10 rounds; with this watchdog 63.2 against
//! 71.7, 10 rounds, netperf 68.5 and sockperf 68.1 in the same rounds). So udp_rr's
//! two loops block without a timeout, and a watchdog thread beside each one
//! interrupts it when a deadline passes or something else needs it: a no-op
//! signal without SA_RESTART, so the call returns EINTR (netperf ends its
//! loops the same way, with SIGALRM). The watchdog wakes once a period,
//! not once a datagram.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The signal used: one of the real-time ones, which nothing else here uses.
fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

extern "C" fn ignore(_: libc::c_int) {}

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

/// A watchdog for the thread that started it; stopped (and joined) on drop,
/// so it never signals a thread that has gone.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

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

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// Whether `fd` has something to read, or its peer hung up (no waiting).
pub fn readable(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

#[cfg(test)]
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
