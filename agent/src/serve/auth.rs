//! The token check and the limiter of failed attempts. The token is compared
//! as SHA-256 digests in constant time, so neither its bytes nor its length
//! show in the time a wrong guess takes; a source address that failed
//! [`MAX_FAILURES`] times within [`WINDOW`] is refused for [`WINDOW`] without
//! the token being looked at (sshd's MaxAuthTries with fail2ban's ban, in one).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Failed attempts from one address that start a refusal.
pub const MAX_FAILURES: u32 = 5;
/// The window the failures are counted in, and how long the refusal lasts.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (one entry each); expired ones go first.
const MAX_SOURCES: usize = 4096;

/// The agent's token, kept as its digest.
pub struct Token([u8; 32]);

impl Token {
    pub fn new(token: &str) -> Self {
        Token(Sha256::digest(token.as_bytes()).into())
    }

    /// Whether `given` is the token; the time taken does not depend on
    /// where it differs or on its length.
    pub fn matches(&self, given: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        bool::from(d.ct_eq(&self.0))
    }
}

struct Record {
    /// Start of the current counting window.
    since: Instant,
    failures: u32,
    /// Refused until then.
    blocked_until: Option<Instant>,
}

/// Failed authentications per source address.
#[derive(Default)]
pub struct Failures {
    by_ip: HashMap<IpAddr, Record>,
}

impl Failures {
    /// How long `ip` is still refused, if it is.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let until = self.by_ip.get(&ip)?.blocked_until?;
        (until > now).then(|| until - now)
    }

    /// Counts a failure; returns true when it starts a refusal.
    pub fn fail(&mut self, ip: IpAddr, now: Instant) -> bool {
        if self.by_ip.len() >= MAX_SOURCES && !self.by_ip.contains_key(&ip) {
            self.by_ip
                .retain(|_, r| now.duration_since(r.since) < WINDOW * 2);
            if self.by_ip.len() >= MAX_SOURCES {
                return false; // a flood from that many addresses: still 1 guess per connection
            }
        }
        let r = self.by_ip.entry(ip).or_insert(Record {
            since: now,
            failures: 0,
            blocked_until: None,
        });
        if now.duration_since(r.since) >= WINDOW {
            r.since = now;
            r.failures = 0;
        }
        r.failures += 1;
        if r.failures >= MAX_FAILURES {
            r.blocked_until = Some(now + WINDOW);
            r.since = now;
            r.failures = 0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_matches_only_itself_whatever_its_length() {
        let t = Token::new("0123456789abcdef");
        assert!(t.matches("0123456789abcdef"));
        for wrong in [
            "",
            "0",
            "0123456789abcde",
            "0123456789abcdef0",
            "1123456789abcdef",
        ] {
            assert!(!t.matches(wrong), "{wrong}");
        }
    }

    #[test]
    fn five_failures_in_a_minute_block_that_address_for_a_minute() {
        let (mut f, t0) = (Failures::default(), Instant::now());
        let ip: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        for i in 0..4 {
            assert!(!f.fail(ip, t0 + Duration::from_secs(i)));
            assert_eq!(f.blocked(ip, t0), None);
        }
        assert!(f.fail(ip, t0 + Duration::from_secs(4)));
        let left = f.blocked(ip, t0 + Duration::from_secs(10)).unwrap();
        assert_eq!(left, Duration::from_secs(54));
        assert_eq!(f.blocked(other, t0), None);
        assert_eq!(f.blocked(ip, t0 + Duration::from_secs(64)), None);
        // Failures spread wider than the window never block.
        let mut f = Failures::default();
        for i in 0..10 {
            assert!(!f.fail(ip, t0 + Duration::from_secs(i * 20)));
        }
    }
}
