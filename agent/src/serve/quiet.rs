//! What a flood would write to the agent's record one line at a time, put
//! there at most once a second instead (issue 22: 20 000 upgrades a second
//! wrote 5 600 lines a second).
//!
//! * [`Refusals`]: refused connections and failed accepts ([`super::server`]).
//! * [`Unauthed`]: control sessions that closed before they authenticated
//!   ([`super::control`]); an authenticated session keeps its own lines.

use crate::log::log;
use std::collections::HashSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How often a tally is put on the record while something is counted.
pub const EVERY: Duration = Duration::from_secs(1);

/// Distinct addresses an [`Unauthed`] tally keeps per report; more are
/// counted as "or more".
pub const MAX_ADDRESSES: usize = 1024;

/// Refused connections and failed accepts.
pub struct Refusals {
    count: u64,
    latest: String,
    reported: Instant,
}

impl Refusals {
    pub fn new(now: Instant) -> Self {
        Refusals {
            count: 0,
            latest: String::new(),
            reported: now,
        }
    }

    pub fn note(&mut self, what: String) {
        self.count += 1;
        self.latest = what;
    }

    pub fn report(&mut self, now: Instant) {
        if self.count > 0 && now.duration_since(self.reported) >= EVERY {
            log!(
                "refused {} connection(s) or accepts since the last report, the latest: {}",
                self.count,
                self.latest
            );
            self.count = 0;
            self.reported = now;
        }
    }
}

/// Control sessions closed before they authenticated: upgrades that never
/// sent a token, or sent a wrong one (that has its own line).
pub struct Unauthed {
    count: u64,
    addresses: HashSet<IpAddr>,
    latest: String,
    reported: Instant,
}

impl Unauthed {
    pub fn new(now: Instant) -> Self {
        Unauthed {
            count: 0,
            addresses: HashSet::new(),
            latest: String::new(),
            reported: now,
        }
    }

    /// A session from `ip` (`from`: address and port) closed unauthenticated.
    pub fn note(&mut self, ip: Option<IpAddr>, from: &str) {
        self.count += 1;
        if let Some(ip) = ip {
            if self.addresses.len() < MAX_ADDRESSES {
                self.addresses.insert(ip);
            }
        }
        self.latest.clear();
        self.latest.push_str(from);
    }

    /// The line for what was counted since the last one, once [`EVERY`]
    /// has passed (and then the tally starts again).
    pub fn take_line(&mut self, now: Instant) -> Option<String> {
        if self.count == 0 || now.duration_since(self.reported) < EVERY {
            return None;
        }
        let n = self.addresses.len();
        let line = format!(
            "{} session(s) closed before authenticating since the last report, from {n}{} address(es), the latest from {}",
            self.count,
            if n >= MAX_ADDRESSES { " or more" } else { "" },
            self.latest
        );
        self.count = 0;
        self.addresses.clear();
        self.reported = now;
        Some(line)
    }

    pub fn report(&mut self, now: Instant) {
        if let Some(line) = self.take_line(now) {
            log!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_is_one_line_a_second_with_its_count_and_addresses() {
        let t0 = Instant::now();
        let mut u = Unauthed::new(t0);
        assert_eq!(u.take_line(t0 + EVERY), None, "nothing counted, no line");
        for i in 0..300u32 {
            let ip = IpAddr::from([127, 0, 0, 2 + (i % 40) as u8]);
            u.note(Some(ip), &format!("{ip}:{}", 40000 + i));
        }
        assert_eq!(u.take_line(t0 + EVERY / 2), None, "not before a second");
        assert_eq!(
            u.take_line(t0 + EVERY).as_deref(),
            Some("300 session(s) closed before authenticating since the last report, from 40 address(es), the latest from 127.0.0.21:40299")
        );
        u.note(None, "an unknown address");
        assert_eq!(
            u.take_line(t0 + EVERY + EVERY / 2),
            None,
            "a second after the last line"
        );
        let line = u.take_line(t0 + EVERY * 2).unwrap();
        assert!(line.starts_with("1 session(s) closed before authenticating since the last report, from 0 address(es)"), "{line}");
    }

    #[test]
    fn the_addresses_kept_are_bounded() {
        let t0 = Instant::now();
        let mut u = Unauthed::new(t0);
        for i in 0..(MAX_ADDRESSES as u32 + 500) {
            u.note(Some(IpAddr::from(i.to_be_bytes())), "x");
        }
        assert_eq!(u.addresses.len(), MAX_ADDRESSES);
        let line = u.take_line(t0 + EVERY).unwrap();
        assert!(
            line.contains(&format!("from {MAX_ADDRESSES} or more address(es)")),
            "{line}"
        );
    }
}
