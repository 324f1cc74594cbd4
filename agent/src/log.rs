//! The agent's own record of who drove it and what ran: one line on stderr
//! per control session and per test side, UTC time first (seed 000's server
//! "writes some statistics to stdout and continue listening"). A traffic
//! generator on someone's network should leave a trail; `--quiet` turns it
//! off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Turns the record off (`meshperf agent --quiet`).
pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// Writes one line: `2026-11-22T14:40:01.123Z <what>`.
pub fn line(what: std::fmt::Arguments) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!(
            "{} {what}",
            humantime::format_rfc3339_millis(SystemTime::now())
        );
    }
}

/// `log!("session {sid} from {ip}")`: one line of the agent's record.
macro_rules! log {
    ($($t:tt)*) => { $crate::log::line(format_args!($($t)*)) };
}
pub(crate) use log;
