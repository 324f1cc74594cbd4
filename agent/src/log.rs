//! The agent's own record of who drove it and what ran: one line on stderr
//! per control session and per test side, UTC time first (seed 000's server
//! "writes some statistics to stdout and continue listening"). A traffic
//! generator on someone's network should leave a trail; `--quiet` turns it
//! off.
//!
//! Lines carry text from outside (a peer host a controller named, parameter
//! values quoted in refusals), so every control character in a line is
//! written escaped (`\n`, `\0`, `\u{1b}`): one record is always one line.
//! [`one_line`] is the one escaping function: `meshperf run` and `meshperf
//! monitor` pass every string an agent sends them through it too.

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

/// `s` with control characters, Unicode line/paragraph separators and the
/// bidirectional overrides, embeddings, isolates and marks (which reorder
/// what a terminal shows, e.g. U+202E) escaped as Rust writes them in
/// `{:?}` (`\n`, `\r`, `\0`, `\u{2028}`, `\u{202e}`).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_debug());
        } else if bidi(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The characters that change the display order of text around them.
fn bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `v` with every string in it (keys too) passed through [`one_line`]:
/// what a controller prints of an agent's message is then one line each
/// and shows in the order it was sent.
pub fn escape_json(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(one_line(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(escape_json).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (one_line(&k), escape_json(v)))
                .collect(),
        ),
        v => v,
    }
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
        let s = super::one_line("a\nb\r\0c\u{1b}[31m\u{2028}d ü \\n\u{202e}e\u{2066}");
        assert_eq!(
            s,
            "a\\nb\\r\\0c\\u{1b}[31m\\u{2028}d ü \\n\\u{202e}e\\u{2066}"
        );
        assert_eq!(s.lines().count(), 1);
        let v = super::escape_json(serde_json::json!({"m\n": ["x\r\u{202e}", 1]}));
        assert_eq!(v, serde_json::json!({"m\\n": ["x\\r\\u{202e}", 1]}));
    }
}
