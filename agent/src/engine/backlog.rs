//! How far a session's sample frames may run ahead of its controller.
//!
//! A test's samples leave as the controller takes them: an engine that
//! hands over the samples of its ended side waits while more than
//! [`BACKLOG_BYTES`] of its session's frames are not yet in the WebSocket.
//! Without it a side ending with 16 M datagrams (8 bytes a value) put all
//! of them in the session's queue at once, past `MAX_QUEUED_BYTES`, and the
//! agent closed a controller that was reading (8 udp_stream flows flat out;
//! one flow with `gso=on` for 10 s on a 2-CPU host).
//!
//! A controller that stops reading is still closed by the session's own
//! rule (over `STALL_BYTES` waiting and nothing taken for `STALL`), which
//! [`Backlog::close`]s the backlog: an engine never waits for a session
//! that is gone, nor past the agent's shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Sample bytes a session may have waiting before an engine handing over
/// an ended side's samples waits for it (above `STALL_BYTES`, so a
/// controller that takes nothing is found out while an engine waits).
pub const BACKLOG_BYTES: usize = 8 << 20;

/// The sample bytes of one session handed over by engines and not yet
/// taken into its WebSocket.
#[derive(Default)]
pub struct Backlog {
    held: Mutex<usize>,
    moved: Condvar,
    closed: AtomicBool,
}

impl Backlog {
    pub fn new() -> Arc<Backlog> {
        Arc::new(Backlog::default())
    }

    /// Counts `n` more bytes handed over. With `wait` (the samples of an
    /// ended side), first waits while the session holds [`BACKLOG_BYTES`]
    /// and more would pass it; without (batches sent while a test runs,
    /// whose loop must not stall) never waits.
    pub fn take(&self, n: usize, wait: bool) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while wait && *held > 0 && *held + n > BACKLOG_BYTES && !self.closed() {
            held = self.moved.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held += n;
    }

    /// `n` bytes went into the WebSocket.
    pub fn release(&self, n: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        *held = held.saturating_sub(n);
        self.moved.notify_all();
    }

    /// The session is gone (or the agent is stopping): nobody waits again.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let _held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        self.moved.notify_all();
    }

    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Bytes handed over and not yet taken.
    pub fn held(&self) -> usize {
        *self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// Runs `take(n, true)` on a thread; its end comes through the channel.
    fn waiter(b: &Arc<Backlog>, n: usize) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        let b = b.clone();
        std::thread::spawn(move || {
            b.take(n, true);
            let _ = tx.send(());
        });
        rx
    }

    #[test]
    fn an_ended_side_waits_for_the_controller_and_a_running_one_never_does() {
        let b = Backlog::new();
        b.take(BACKLOG_BYTES, true); // the first frame never waits
        let t0 = Instant::now();
        b.take(1 << 20, false); // a batch during a test goes past
        assert!(t0.elapsed() < Duration::from_millis(50));
        assert_eq!(b.held(), BACKLOG_BYTES + (1 << 20));
        let done = waiter(&b, 512 << 10);
        assert!(
            done.recv_timeout(Duration::from_millis(200)).is_err(),
            "an ended side waits while the backlog is full"
        );
        b.release(1 << 20); // still over: it goes on waiting
        assert!(done.recv_timeout(Duration::from_millis(100)).is_err());
        b.release(BACKLOG_BYTES);
        done.recv_timeout(Duration::from_secs(5))
            .expect("taken frames wake the waiting side");
        assert_eq!(b.held(), 512 << 10);
    }

    #[test]
    fn a_closed_session_releases_its_waiters_and_nobody_waits_again() {
        let b = Backlog::new();
        b.take(BACKLOG_BYTES, true);
        let done = waiter(&b, 1);
        assert!(done.recv_timeout(Duration::from_millis(100)).is_err());
        b.close();
        done.recv_timeout(Duration::from_secs(5))
            .expect("close wakes the waiting side");
        let t1 = Instant::now();
        b.take(BACKLOG_BYTES, true);
        assert!(t1.elapsed() < Duration::from_millis(50));
    }
}
