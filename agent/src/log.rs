//! The agent's own record of who drove it and what ran: one line on stderr
//! per control session and per test side, UTC time first (seed 000's server
//! "writes some statistics to stdout and continue listening"). A traffic
//! generator on someone's network should leave a trail; `--quiet` turns it
//! off.
//!
//! Lines carry text from outside (a peer host a controller named, parameter
//! values quoted in refusals), so every control character in a line is
//! written escaped (`\n`, `\0`, `\u{1b}`): one record is always one line.

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
            "{} {}",
            humantime::format_rfc3339_millis(SystemTime::now()),
            one_line(&what.to_string())
        );
    }
}

/// `s` with control characters and Unicode line/paragraph separators
/// escaped as Rust writes them in `{:?}` (`\n`, `\r`, `\0`, `\u{2028}`).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// `log!("session {sid} from {ip}")`: one line of the agent's record.
macro_rules! log {
    ($($t:tt)*) => { $crate::log::line(format_args!($($t)*)) };
}
pub(crate) use log;

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_cannot_start_a_line_of_their_own() {
        let s = super::one_line("a\nb\r\0c\u{1b}[31m\u{2028}d ü \\n");
        assert_eq!(s, "a\\nb\\r\\0c\\u{1b}[31m\\u{2028}d ü \\n");
        assert_eq!(s.lines().count(), 1);
    }
}
