//! The token check and the throttle on guessing. The token is compared as
//! SHA-256 digests in constant time, so neither its bytes nor its length
//! show in the time a wrong guess takes. A source address that failed
//! [`MAX_FAILURES`] times within [`WINDOW`] is throttled until [`WINDOW`]
//! passes without a failure: its tokens are still checked, every one, but
//! one at a time and at most one per [`TURN`], in the order they came
//! (sessions waiting for their turn queue per address). A controller behind
//! the same NAT as a guesser is thus slowed, never refused: it waits behind
//! at most the guesser's other connections (`--max-per-source`), and the
//! guesser gets one answer per [`TURN`] however many it asks for. (Before
//! issue 22 such an address was refused for a minute unheard, so five
//! guesses a minute kept a controller at the same address out for good.)

use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Failed attempts from one address that start the throttle.
pub const MAX_FAILURES: u32 = 5;
/// The window the failures are counted in, and how long the throttle lasts
/// after the last failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// While throttled, an address has one token checked per this.
pub const TURN: Duration = Duration::from_secs(2);
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
    /// Throttled until then.
    throttled_until: Option<Instant>,
    /// While throttled, the next check happens no earlier than this.
    next_turn: Instant,
    /// Sessions whose token waits for its turn, first come first.
    waiting: VecDeque<u64>,
}

/// Failed authentications, and the throttle, per source address.
#[derive(Default)]
pub struct Failures {
    by_ip: HashMap<IpAddr, Record>,
}

impl Failures {
    /// Whether session `sid` from `ip` may have its token checked now: `Ok`
    /// when the address is not throttled or it is this session's turn
    /// (which it then uses up), else when to ask again.
    pub fn turn(&mut self, ip: IpAddr, sid: u64, now: Instant) -> Result<(), Instant> {
        let Some(r) = self.by_ip.get_mut(&ip) else {
            return Ok(());
        };
        if !r.throttled_until.is_some_and(|t| t > now) {
            r.throttled_until = None;
            r.waiting.clear();
            return Ok(());
        }
        let place = match r.waiting.iter().position(|&w| w == sid) {
            Some(p) => p,
            None => {
                r.waiting.push_back(sid);
                r.waiting.len() - 1
            }
        };
        if place == 0 && r.next_turn <= now {
            r.waiting.pop_front();
            r.next_turn = now + TURN;
            return Ok(());
        }
        Err(r.next_turn.max(now) + TURN * place as u32)
    }

    /// Session `sid` from `ip` ended: it no longer waits for a turn.
    pub fn gone(&mut self, ip: IpAddr, sid: u64) {
        if let Some(r) = self.by_ip.get_mut(&ip) {
            r.waiting.retain(|&w| w != sid);
        }
    }

    /// Whether `ip` is throttled now.
    pub fn throttled(&self, ip: IpAddr, now: Instant) -> bool {
        self.by_ip
            .get(&ip)
            .and_then(|r| r.throttled_until)
            .is_some_and(|t| t > now)
    }

    /// Counts a failure; returns true when it starts the throttle.
    pub fn fail(&mut self, ip: IpAddr, now: Instant) -> bool {
        if self.by_ip.len() >= MAX_SOURCES && !self.by_ip.contains_key(&ip) {
            self.by_ip.retain(|_, r| {
                !r.waiting.is_empty()
                    || r.throttled_until.is_some_and(|t| t > now)
                    || now.duration_since(r.since) < WINDOW
            });
            if self.by_ip.len() >= MAX_SOURCES {
                return false; // a flood from that many addresses: still 1 guess per connection
            }
        }
        let r = self.by_ip.entry(ip).or_insert(Record {
            since: now,
            failures: 0,
            throttled_until: None,
            next_turn: now,
            waiting: VecDeque::new(),
        });
        if r.throttled_until.is_some_and(|t| t > now) {
            r.throttled_until = Some(now + WINDOW);
            return false;
        }
        if now.duration_since(r.since) >= WINDOW {
            r.since = now;
            r.failures = 0;
        }
        r.failures += 1;
        if r.failures >= MAX_FAILURES {
            r.throttled_until = Some(now + WINDOW);
            r.next_turn = now + TURN;
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
    fn five_failures_throttle_that_address_to_one_check_per_turn_in_order() {
        let (mut f, t0) = (Failures::default(), Instant::now());
        let ip: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        let s = Duration::from_secs;
        for i in 0..4 {
            assert_eq!(f.turn(ip, 1, t0 + s(i)), Ok(()));
            assert!(!f.fail(ip, t0 + s(i)));
        }
        assert!(f.fail(ip, t0 + s(4)));
        assert!(f.throttled(ip, t0 + s(4)));
        // Sessions 7 and 8 wait in order; 9 on another address does not.
        assert_eq!(f.turn(ip, 7, t0 + s(5)), Err(t0 + s(4) + TURN));
        assert_eq!(f.turn(ip, 8, t0 + s(5)), Err(t0 + s(4) + TURN * 2));
        assert_eq!(f.turn(other, 9, t0 + s(5)), Ok(()));
        // 8 cannot jump the queue; 7 takes its turn, then 8 a turn later.
        assert!(f.turn(ip, 8, t0 + s(6)).is_err());
        assert_eq!(f.turn(ip, 7, t0 + s(6)), Ok(()));
        assert!(!f.fail(ip, t0 + s(6)));
        assert_eq!(f.turn(ip, 8, t0 + s(7)), Err(t0 + s(6) + TURN));
        // A session that went away gives its place up.
        assert!(f.turn(ip, 10, t0 + s(7)).is_err());
        f.gone(ip, 8);
        assert_eq!(f.turn(ip, 10, t0 + s(8)), Ok(()));
        // The throttle ends a window after the last failure.
        assert!(f.throttled(ip, t0 + s(65)));
        assert!(!f.throttled(ip, t0 + s(66)));
        assert_eq!(f.turn(ip, 11, t0 + s(66)), Ok(()));
        // Failures spread wider than the window never throttle.
        let mut f = Failures::default();
        for i in 0..10 {
            assert!(!f.fail(ip, t0 + s(i * 20)));
        }
    }
}
