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
//!
//! What waits costs little and not long (issue 40): a waiting session keeps
//! its token's digest only, at most [`MAX_WAITING`] wait per address, and
//! none past its session's auth deadline. A session that would wait beyond
//! either is answered at once, told when a place frees ([`Wait::Full`]);
//! the controller tries again then. A neighbour guessing without pause from
//! the same address can so keep the places taken: a controller there gets
//! one when it asks as one frees, so it is slowed, and can be kept waiting
//! for as long as the guessing goes on; no other address is affected.

use sha2::{Digest as _, Sha256};
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
/// Sessions of one throttled address whose `auth` waits for its turn, at
/// most; with [`TURN`] the last is answered within `TURN * MAX_WAITING`.
pub const MAX_WAITING: usize = 4;
/// The longest token an `auth` may carry (a longer one cannot be the
/// agent's: `meshperf agent` refuses to start with one).
pub const MAX_TOKEN_BYTES: usize = 1024;

/// A token as kept and compared: its SHA-256.
pub type Digest = [u8; 32];

/// The agent's token, kept as its digest.
pub struct Token(Digest);

impl Token {
    pub fn new(token: &str) -> Self {
        Token(digest(token))
    }

    /// Whether `given` is the token; the time taken does not depend on
    /// where it differs or on its length.
    pub fn matches(&self, given: &str) -> bool {
        self.matches_digest(&digest(given))
    }

    /// Whether a token whose digest is `d` is the token (constant time).
    pub fn matches_digest(&self, d: &Digest) -> bool {
        bool::from(d.ct_eq(&self.0))
    }
}

/// The digest of a token given.
pub fn digest(token: &str) -> Digest {
    Sha256::digest(token.as_bytes()).into()
}

/// Why a session's token is not checked now.
#[derive(Debug, PartialEq, Eq)]
pub enum Wait {
    /// It waits for its turn, due then.
    Turn(Instant),
    /// No place for it: [`MAX_WAITING`] wait already, or its turn would
    /// come after its deadline. A place frees then (at the earliest).
    Full(Instant),
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
    /// (which it then uses up), else when to ask again, or that it has no
    /// place (the queue is full, or its turn would come after `deadline`).
    pub fn turn(
        &mut self,
        ip: IpAddr,
        sid: u64,
        now: Instant,
        deadline: Instant,
    ) -> Result<(), Wait> {
        let Some(r) = self.by_ip.get_mut(&ip) else {
            return Ok(());
        };
        if !r.throttled_until.is_some_and(|t| t > now) {
            r.throttled_until = None;
            r.waiting.clear();
            return Ok(());
        }
        let next = r.next_turn.max(now);
        let due = |place: usize| next + TURN * place as u32;
        let place = match r.waiting.iter().position(|&w| w == sid) {
            Some(p) => p,
            None => {
                let place = r.waiting.len();
                if place >= MAX_WAITING || due(place) > deadline {
                    // The first place frees at the next turn.
                    return Err(Wait::Full(next));
                }
                r.waiting.push_back(sid);
                place
            }
        };
        if place == 0 && r.next_turn <= now {
            r.waiting.pop_front();
            r.next_turn = now + TURN;
            return Ok(());
        }
        Err(Wait::Turn(due(place)))
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
        let far = t0 + s(1000);
        for i in 0..4 {
            assert_eq!(f.turn(ip, 1, t0 + s(i), far), Ok(()));
            assert!(!f.fail(ip, t0 + s(i)));
        }
        assert!(f.fail(ip, t0 + s(4)));
        assert!(f.throttled(ip, t0 + s(4)));
        // Sessions 7 and 8 wait in order; 9 on another address does not.
        assert_eq!(
            f.turn(ip, 7, t0 + s(5), far),
            Err(Wait::Turn(t0 + s(4) + TURN))
        );
        assert_eq!(
            f.turn(ip, 8, t0 + s(5), far),
            Err(Wait::Turn(t0 + s(4) + TURN * 2))
        );
        assert_eq!(f.turn(other, 9, t0 + s(5), far), Ok(()));
        // 8 cannot jump the queue; 7 takes its turn, then 8 a turn later.
        assert!(f.turn(ip, 8, t0 + s(6), far).is_err());
        assert_eq!(f.turn(ip, 7, t0 + s(6), far), Ok(()));
        assert!(!f.fail(ip, t0 + s(6)));
        assert_eq!(
            f.turn(ip, 8, t0 + s(7), far),
            Err(Wait::Turn(t0 + s(6) + TURN))
        );
        // A session that went away gives its place up.
        assert!(f.turn(ip, 10, t0 + s(7), far).is_err());
        f.gone(ip, 8);
        assert_eq!(f.turn(ip, 10, t0 + s(8), far), Ok(()));
        // The throttle ends a window after the last failure.
        assert!(f.throttled(ip, t0 + s(65)));
        assert!(!f.throttled(ip, t0 + s(66)));
        assert_eq!(f.turn(ip, 11, t0 + s(66), far), Ok(()));
        // Failures spread wider than the window never throttle.
        let mut f = Failures::default();
        for i in 0..10 {
            assert!(!f.fail(ip, t0 + s(i * 20)));
        }
    }

    #[test]
    fn at_most_max_waiting_wait_and_none_past_its_deadline() {
        let (mut f, t0) = (Failures::default(), Instant::now());
        let ip: IpAddr = [10, 0, 0, 3].into();
        let s = Duration::from_secs;
        let far = t0 + s(1000);
        for _ in 0..MAX_FAILURES {
            f.fail(ip, t0);
        }
        // The first turn comes at t0 + TURN; four wait, the fifth is told
        // when the first place frees, and nothing of it is kept.
        for sid in 0..MAX_WAITING as u64 {
            assert_eq!(
                f.turn(ip, sid, t0, far),
                Err(Wait::Turn(t0 + TURN * (sid as u32 + 1)))
            );
        }
        assert_eq!(f.turn(ip, 99, t0, far), Err(Wait::Full(t0 + TURN)));
        assert_eq!(f.by_ip[&ip].waiting.len(), MAX_WAITING);
        // Once the first had its turn, there is room again.
        assert_eq!(f.turn(ip, 0, t0 + TURN, far), Ok(()));
        assert_eq!(
            f.turn(ip, 99, t0 + TURN, far),
            Err(Wait::Turn(t0 + TURN * 5))
        );
        // A session whose turn would come after its deadline gets no place.
        let ip2: IpAddr = [10, 0, 0, 4].into();
        for _ in 0..MAX_FAILURES {
            f.fail(ip2, t0);
        }
        assert_eq!(f.turn(ip2, 1, t0, t0 + s(3)), Err(Wait::Turn(t0 + TURN)));
        assert_eq!(f.turn(ip2, 2, t0, t0 + s(3)), Err(Wait::Full(t0 + TURN)));
        assert_eq!(f.by_ip[&ip2].waiting.len(), 1);
        // Digests, not tokens, are what a waiting auth keeps and compares.
        let t = Token::new("0123456789abcdef");
        assert!(t.matches_digest(&digest("0123456789abcdef")));
        assert!(!t.matches_digest(&digest("0123456789abcdeF")));
    }
}
