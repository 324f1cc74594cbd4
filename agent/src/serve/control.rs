//! Control sessions: authentication, request handling and the registry of
//! running tests. One [`Agent`] lives in the event loop; each WebSocket is a
//! [`Session`]. Tests run on engine threads and are cancelled when the
//! session that started them goes away (a closed browser stops the traffic).

mod queue;

use super::auth;
use super::metrics::{AuthFailure, Counters};
use super::quiet::Unauthed;
use super::replay::Replay;
use crate::engine::backlog::Backlog;
use crate::engine::{self, Outbound, Refusal, Sink, TestCtx};
use crate::log::log;
use meshperf_protocol::msg::{AgentInfo, ErrorCode, Event, PeerAddr, Request, Role};
use meshperf_protocol::params::{Kind, Limits, Usage};
use meshperf_protocol::peer as wire;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;
use tungstenite::protocol::frame::{coding::CloseCode, CloseFrame};
use tungstenite::{Error as WsError, Message, WebSocket};

/// Most messages waiting for a controller beyond the WebSocket's own write
/// buffer (see `server::WRITE_BUFFER`); past it the controller is not
/// reading and its session is closed (a ping flood ends here).
pub const MAX_QUEUED: usize = 4096;
/// Most bytes waiting so, whatever the controller does. A test's samples
/// arrive at its end at once, so a reading controller may briefly have
/// megabytes waiting here.
pub const MAX_QUEUED_BYTES: usize = 128 << 20;
/// Bytes waiting that a controller must be taking: past them, a controller
/// that took no message for [`STALL`] is not reading and its session is
/// closed (issue 22: one that never read grew the agent by 43 MB a test).
pub const STALL_BYTES: usize = 1 << 20;
/// See [`STALL_BYTES`].
pub const STALL: std::time::Duration = std::time::Duration::from_secs(5);
/// A controller's WebSocket messages and frames, at most, once it has
/// authenticated.
pub const MAX_MESSAGE: usize = 1 << 20;
/// The same before `auth_ok` (issue 40: a stranger announcing 1 MiB
/// frames on 240 connections grew the agent by 268 MiB): `auth` with the
/// longest token allowed ([`auth::MAX_TOKEN_BYTES`]) fits with room.
pub const MAX_MESSAGE_BEFORE_AUTH: usize = 4 << 10;
/// What a WebSocket reads at most per call, and the read buffer every
/// connection holds from its upgrade on (tungstenite's default, 128 KiB,
/// was 31 MiB for 240 strangers). A controller's requests are small; a
/// larger message still comes whole, in more reads.
pub const READ_BUFFER: usize = 4 << 10;

/// One control WebSocket.
pub struct Session {
    ws: WebSocket<Replay>,
    /// Session id (0 until greeted).
    pub sid: u64,
    authed: bool,
    /// Messages waiting for the WebSocket, each with the bytes it counts in
    /// `out_bytes` (a message tungstenite hands back as its write buffer is
    /// full comes back as a frame, whose length includes its header), and
    /// whether it is an engine's sample frame (counted in `backlog`).
    out: VecDeque<(Message, usize, bool)>,
    /// Sample frames engines handed to this session and it has not yet
    /// put into the WebSocket (see [`Backlog`]).
    backlog: Arc<Backlog>,
    /// The bytes of the messages in `out`.
    out_bytes: usize,
    /// When a queued message last went into the WebSocket (the controller
    /// is reading), or the queue was last under [`STALL_BYTES`].
    moved: Instant,
    /// Close after the queued messages are flushed.
    closing: bool,
    /// The controller's address, for the agent's record.
    from: String,
    /// The controller's IP address (failed auths are counted per address).
    pub ip: Option<IpAddr>,
    /// An `auth` waiting for its address's turn (see [`auth::Failures`]).
    held: Option<Held>,
    /// The session ends unless authenticated by then (`--auth-timeout`
    /// after `hello`): a held `auth` is answered before it.
    pub auth_by: Instant,
}

/// An `auth` received from a throttled address, checked at its turn: the
/// token's digest only, not the message.
struct Held {
    id: u64,
    digest: auth::Digest,
    /// Ask for the turn again then.
    at: Instant,
}

impl Session {
    pub fn new(ws: WebSocket<Replay>) -> Self {
        let peer = ws.get_ref().inner.tcp().peer_addr().ok();
        Session {
            from: peer.map_or_else(|| "an unknown address".into(), |a| a.to_string()),
            ip: peer.map(|a| a.ip().to_canonical()),
            ws,
            sid: 0,
            authed: false,
            out: VecDeque::new(),
            out_bytes: 0,
            backlog: Backlog::new(),
            moved: Instant::now(),
            closing: false,
            held: None,
            auth_by: Instant::now(),
        }
    }

    /// When an `auth` waiting for its turn is due to ask again.
    pub fn held_until(&self) -> Option<Instant> {
        self.held.as_ref().map(|h| h.at)
    }

    /// When the session must be looked at again though nothing happens on
    /// its socket: a held `auth`'s turn, or the end of [`STALL`] for a
    /// controller that is not taking what waits for it.
    pub fn wake_at(&self) -> Option<Instant> {
        self.held_until()
            .or((self.out_bytes > STALL_BYTES).then(|| self.moved + STALL))
    }

    fn queue(&mut self, m: Message) {
        // The stall clock starts when the backlog passes STALL_BYTES, not
        // at the last write before it: a test's samples come in one burst
        // at its end, after seconds with little to send (a controller that
        // is reading then gets its STALL to take them).
        if self.out_bytes <= STALL_BYTES && self.out_bytes + m.len() > STALL_BYTES {
            self.moved = Instant::now();
        }
        self.out_bytes += m.len();
        let len = m.len();
        // Binary frames to a controller are engines' sample frames.
        let sample = m.is_binary();
        self.out.push_back((m, len, sample));
    }

    /// Whether the controller presented the right token.
    pub fn authed(&self) -> bool {
        self.authed
    }

    fn send(&mut self, ev: &Event) {
        self.queue(Message::text(
            serde_json::to_string(ev).expect("events serialize"),
        ));
    }
}

struct TestHandle {
    owner: u64,
    serial: u64,
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// "session 2 test 7 step 0 tcp_stream serving", for the agent's record.
    what: String,
    started: std::time::Instant,
    /// When the side must end (`--max-duration`), and whether it was stopped so.
    limit: Arc<engine::Limit>,
    kind: Kind,
    /// What its test takes here, and whether it runs alone (issue 42).
    usage: Usage,
    exclusive: bool,
    /// Its bytes so far, and the tests beside it (see [`TestCtx`]).
    moved: Arc<std::sync::atomic::AtomicU64>,
    shared: Arc<engine::shared::SharedLog>,
}

impl TestHandle {
    fn log_end(&self, outcome: &str) {
        let s = self.started.elapsed().as_secs_f64();
        log!("{} ended after {s:.3} s: {outcome}", self.what);
    }
}

/// Agent-wide state the event loop hands to sessions.
pub struct Agent {
    token: auth::Token,
    failures: auth::Failures,
    info: AgentInfo,
    limits: Limits,
    data_ip: IpAddr,
    /// `--data-ports`: the ports serving sides listen on.
    pub data_ports: Option<(u16, u16)>,
    /// `--payload-dir` and `--max-payload-bytes`.
    pub payload_dir: Option<engine::payload::PayloadDir>,
    /// Most addresses one `resolve` may give (`--max-resolve`).
    pub max_resolve: usize,
    /// `--allow-target`: where tests may send that are not agents.
    pub targets: engine::target::Targets,
    /// `--stamp-key`: the HMAC key of authenticated STAMP.
    pub stamp_key: Option<engine::stamp::wire::Key>,
    tx: Sender<Outbound>,
    waker: Arc<mio::Waker>,
    next_sid: u64,
    /// Registrations of test sides so far (see `Sink::serial`).
    next_serial: u64,
    tests: HashMap<(u32, Role), TestHandle>,
    /// Engine output waiting for its session's next pump.
    pending: HashMap<u64, VecDeque<Message>>,
    live: std::collections::HashSet<u64>,
    /// Threads of tests that sent their final event and are ending.
    ending: Vec<JoinHandle<()>>,
    /// Name lookups running (see [`MAX_LOOKUPS`]).
    lookups: Arc<AtomicUsize>,
    /// Sessions, failed auths, tests and refusals (`--metrics`).
    counters: Arc<Counters>,
    /// Sessions that closed before authenticating, on the record once a
    /// second (a churn of upgrades must not churn the record).
    unauthed: Unauthed,
    /// Each live session's sample backlog, for its tests' sinks.
    backlogs: HashMap<u64, Arc<Backlog>>,
    /// Requests waiting for their turn (`--max-queue`), first first.
    waiting: VecDeque<queue::Waiting>,
    /// Sessions with output the event loop has not pumped yet.
    woken: Vec<u64>,
    /// When the waiting requests' controllers last heard where they are.
    told: Instant,
}

/// Name lookups (`resolve`) an agent runs at once; more are refused.
pub const MAX_LOOKUPS: usize = 4;

impl Agent {
    pub fn new(
        token: String,
        info: AgentInfo,
        data_ip: IpAddr,
        tx: Sender<Outbound>,
        waker: Arc<mio::Waker>,
    ) -> Self {
        let limits = info.limits.clone();
        Agent {
            token: auth::Token::new(&token),
            failures: Default::default(),
            info,
            limits,
            data_ip,
            data_ports: None,
            payload_dir: None,
            max_resolve: crate::dns::DEFAULT_MAX_ADDRESSES,
            targets: engine::target::Targets::none(),
            stamp_key: None,
            tx,
            waker,
            next_sid: 1,
            next_serial: 1,
            tests: HashMap::new(),
            pending: HashMap::new(),
            live: Default::default(),
            ending: Vec::new(),
            lookups: Default::default(),
            counters: Arc::new(Counters::new()),
            unauthed: Unauthed::new(Instant::now()),
            backlogs: HashMap::new(),
            waiting: VecDeque::new(),
            woken: Vec::new(),
            told: Instant::now(),
        }
    }

    /// The agent's counters, for `--metrics` and the event loop.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Gives a new session its id and queues `hello`; it must authenticate
    /// by `auth_by`.
    pub fn greet(&mut self, s: &mut Session, auth_by: Instant) {
        s.auth_by = auth_by;
        s.sid = self.next_sid;
        self.next_sid += 1;
        // On the record when it authenticates; until then only counted.
        self.counters.session_opened();
        self.live.insert(s.sid);
        self.backlogs.insert(s.sid, s.backlog.clone());
        s.send(&Event::Hello {
            protocol: meshperf_protocol::PROTOCOL_VERSION,
            protocol_max: Some(meshperf_protocol::PROTOCOL_MAX),
        });
    }

    /// Routes engine output; returns the session that has new output.
    pub fn route(&mut self, out: Outbound) -> Option<u64> {
        match out {
            Outbound::Text { sid, text } => self.queue(sid, Message::text(text)),
            Outbound::Binary { sid, bytes } => self.queue(sid, Message::binary(bytes)),
            Outbound::Final {
                sid,
                test_id,
                role,
                serial,
                text,
                outcome,
            } => {
                let sid = self.queue(sid, Message::text(text));
                if let Some(h) = self.take(test_id, role, serial) {
                    h.log_end(&outcome);
                    self.ending.extend(h.thread);
                    self.end_overlaps(test_id);
                    self.admit_waiting();
                }
                sid
            }
            Outbound::Finished {
                test_id,
                role,
                serial,
            } => {
                // A side that ended without a final event is freed here.
                if let Some(h) = self.take(test_id, role, serial) {
                    h.log_end(if h.cancel.load(Ordering::Relaxed) {
                        "cancelled"
                    } else {
                        "no result"
                    });
                    self.ending.extend(h.thread);
                    self.end_overlaps(test_id);
                    self.admit_waiting();
                }
                // Threads whose final event went out end right after it.
                let (done, running): (Vec<_>, Vec<_>) =
                    self.ending.drain(..).partition(|t| t.is_finished());
                self.ending = running;
                done.into_iter().for_each(|t| drop(t.join()));
                None
            }
        }
    }

    /// Unregisters side `(test_id, role)` if it is still registration
    /// `serial` (not a newer test that reused the id).
    fn take(&mut self, test_id: u32, role: Role, serial: u64) -> Option<TestHandle> {
        match self.tests.get(&(test_id, role)) {
            Some(h) if h.serial == serial => self.tests.remove(&(test_id, role)),
            _ => None,
        }
    }

    fn queue(&mut self, sid: u64, m: Message) -> Option<u64> {
        if !self.live.contains(&sid) {
            return None; // the session is gone; its tests were cancelled
        }
        self.pending.entry(sid).or_default().push_back(m);
        Some(sid)
    }

    /// Reads and handles everything the client sent, then writes what is
    /// queued. Returns false when the session is over.
    pub fn pump(&mut self, s: &mut Session) -> bool {
        if let Some(q) = self.pending.remove(&s.sid) {
            q.into_iter().for_each(|m| s.queue(m));
        }
        if let Some((id, digest)) = s.held.as_ref().map(|h| (h.id, h.digest)) {
            self.check(s, id, digest);
        }
        loop {
            if s.held.is_some() {
                break; // what follows the auth is read once it is answered
            }
            match s.ws.read() {
                Ok(Message::Text(t)) => self.handle(s, t.as_str()),
                Ok(Message::Binary(_)) => s.send(&Event::error(
                    None,
                    ErrorCode::BadRequest,
                    "binary frames are not accepted from clients",
                )),
                Ok(_) => {} // ping/pong/close are handled by tungstenite
                Err(WsError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(WsError::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(WsError::Capacity(e)) => {
                    s.send(&Event::error(
                        None,
                        ErrorCode::TooLarge,
                        if s.authed {
                            format!("message refused: {e}")
                        } else {
                            format!(
                                "message refused: {e}; before auth_ok a message is at most {} KiB",
                                MAX_MESSAGE_BEFORE_AUTH >> 10
                            )
                        },
                    ));
                    s.closing = true;
                    break;
                }
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => return false,
                Err(_) => return false,
            }
            if s.closing {
                break;
            }
            // Replies go out as requests come in, so the queue holds only
            // what the WebSocket's write buffer has no room for.
            if s.out.len() >= 64 && !(write_queued(s) && within_bounds(s)) {
                return false;
            }
        }
        // Until the socket pushes back: a write buffer that was full and then
        // flushed completely raises no new writable edge, so what is still
        // queued must go now (after a complete flush a message always fits).
        loop {
            if !(write_queued(s) && within_bounds(s)) {
                return false;
            }
            match s.ws.flush() {
                Ok(()) => {}
                Err(WsError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
            if s.out.is_empty() {
                break;
            }
        }
        if s.closing && s.out.is_empty() {
            let _ = s.ws.close(None);
            let _ = s.ws.flush();
            return false;
        }
        true
    }

    /// Stops every test side past its duration limit (whatever its peer
    /// does: a peer holding the key cannot keep a serving side busy), and
    /// says when the next one is due.
    pub fn reap(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for h in self.tests.values() {
            if h.limit.expired() {
                continue;
            }
            let end = h.limit.end();
            if end <= now {
                h.limit.expire();
                h.cancel.store(true, Ordering::Relaxed);
                log!(
                    "{} stopped at the duration limit ({} s)",
                    h.what,
                    h.limit.max().as_secs_f64()
                );
            } else {
                next = Some(next.map_or(end, |n: Instant| n.min(end)));
            }
        }
        if !self.waiting.is_empty() {
            let due = self.told + queue::TELL_EVERY;
            if due <= now {
                self.tell_waiting(None);
            }
            let due = self.told + queue::TELL_EVERY;
            next = Some(next.map_or(due, |n: Instant| n.min(due)));
        }
        next
    }

    /// Puts the sessions closed unauthenticated since the last report on
    /// the record, once a second at most.
    pub fn report(&mut self, now: Instant) {
        self.unauthed.report(now);
    }

    /// A session ended: cancel every test it owns.
    pub fn closed(&mut self, s: &Session) {
        self.pending.remove(&s.sid);
        self.live.remove(&s.sid);
        self.backlogs.remove(&s.sid);
        s.backlog.close();
        if let Some(ip) = s.ip {
            self.failures.gone(ip, s.sid);
        }
        let mut running = 0;
        for h in self.tests.values().filter(|h| h.owner == s.sid) {
            h.cancel.store(true, Ordering::Relaxed);
            running += 1;
        }
        let waited = self.leave_queue(s.sid);
        if s.sid != 0 {
            self.counters.session_closed();
            if !s.authed {
                self.unauthed.note(s.ip, &s.from);
                return;
            }
            match running {
                0 => log!("session {} closed", s.sid),
                n => log!(
                    "session {} closed with {n} test side(s) running: cancelled",
                    s.sid
                ),
            }
            if waited > 0 {
                log!(
                    "session {} closed with {waited} test side(s) waiting: they left the queue",
                    s.sid
                );
            }
        }
    }

    /// SIGINT/SIGTERM: cancel everything and wait briefly for engines.
    pub fn shutdown(&mut self) {
        for h in self.tests.values() {
            h.cancel.store(true, Ordering::Relaxed);
        }
        // No engine waits for a controller past here.
        self.backlogs.values().for_each(|b| b.close());
        for (_, mut h) in self.tests.drain() {
            if let Some(t) = h.thread.take() {
                let _ = t.join();
            }
        }
        self.ending.drain(..).for_each(|t| drop(t.join()));
    }

    fn handle(&mut self, s: &mut Session, text: &str) {
        let req: Request = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                let id = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.get("id").and_then(|i| i.as_u64()));
                s.send(&Event::error(
                    id,
                    ErrorCode::BadRequest,
                    format!("cannot understand the message: {e}"),
                ));
                if !s.authed {
                    s.closing = true;
                }
                return;
            }
        };
        if !s.authed {
            match req {
                Request::Auth {
                    id,
                    token,
                    protocol,
                } => {
                    if let Some(why) = unspoken(protocol) {
                        s.send(&Event::error(Some(id), ErrorCode::BadRequest, why));
                        s.closing = true;
                        return;
                    }
                    self.auth(s, id, &token)
                }
                _ => {
                    s.send(&Event::error(
                        None,
                        ErrorCode::AuthRequired,
                        "authenticate first: send {\"type\":\"auth\",\"token\":...}",
                    ));
                    s.closing = true;
                }
            }
            return;
        }
        let reply = match req {
            Request::Auth { id, .. } => self.auth_ok(id),
            Request::Ping { id } => Event::Pong { id },
            Request::Resolve { id, name } => match self.resolve(s.sid, id, name) {
                Ok(()) => return,
                Err(e) => e,
            },
            Request::Cancel { id, test_id } => {
                let waited = self.cancel_waiting(s, test_id);
                let mine: Vec<_> = self
                    .tests
                    .iter()
                    .filter(|((t, _), h)| *t == test_id && h.owner == s.sid)
                    .collect();
                if mine.is_empty() && waited > 0 {
                    Event::Cancelled { id, test_id }
                } else if mine.is_empty() {
                    Event::error(
                        Some(id),
                        ErrorCode::NotFound,
                        format!("no running test {test_id} of this session"),
                    )
                } else {
                    mine.iter()
                        .for_each(|(_, h)| h.cancel.store(true, Ordering::Relaxed));
                    Event::Cancelled { id, test_id }
                }
            }
            Request::Prepare {
                id,
                test_id,
                step,
                kind,
                params,
                queue,
                exclusive,
            } => {
                let a = self.asked(s.sid, id, test_id, step, kind, params, None, exclusive);
                match self.ask(s, a, queue != Some(false)) {
                    Some(reply) => reply,
                    None => return,
                }
            }
            Request::Start {
                id,
                test_id,
                step,
                kind,
                params,
                peer,
                queue,
                exclusive,
            } => {
                let a = self.asked(
                    s.sid,
                    id,
                    test_id,
                    step,
                    kind,
                    params,
                    Some(peer),
                    exclusive,
                );
                match self.ask(s, a, queue != Some(false)) {
                    Some(reply) => reply,
                    None => return,
                }
            }
        };
        s.send(&reply);
    }

    /// Looks `name` up on a thread of its own (the system resolver blocks,
    /// up to its own timeouts), at most [`MAX_LOOKUPS`] at once per agent;
    /// the answer reaches session `sid` through the engine's channel.
    fn resolve(&mut self, sid: u64, id: u64, name: String) -> Result<(), Event> {
        if let Err(e) = crate::dns::check_name(&name) {
            return Err(Event::error(
                Some(id),
                ErrorCode::BadRequest,
                format!("resolve {name:?}: {e}"),
            ));
        }
        let running = self.lookups.load(Ordering::Relaxed);
        if running >= MAX_LOOKUPS {
            return Err(Event::error(
                Some(id),
                ErrorCode::Busy,
                format!("{running} name lookups are running here already; try again when they end"),
            ));
        }
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let (tx, waker, lookups) = (self.tx.clone(), self.waker.clone(), self.lookups.clone());
        let max = self.max_resolve;
        let spawned = std::thread::Builder::new()
            .name("resolve".into())
            .spawn(move || {
                let reply = match crate::dns::addresses(&name, max) {
                    Ok(ips) => Event::Resolved {
                        id,
                        name,
                        addresses: ips.iter().map(ToString::to_string).collect(),
                    },
                    Err(e) => Event::error(Some(id), ErrorCode::NotFound, e),
                };
                lookups.fetch_sub(1, Ordering::Relaxed);
                let text = serde_json::to_string(&reply).expect("events serialize");
                if tx.send(Outbound::Text { sid, text }).is_ok() {
                    let _ = waker.wake();
                }
            });
        spawned.map(drop).map_err(|e| {
            self.lookups.fetch_sub(1, Ordering::Relaxed);
            Event::error(
                Some(id),
                ErrorCode::Io,
                format!("cannot start a lookup: {e}"),
            )
        })
    }

    fn auth_ok(&self, id: u64) -> Event {
        Event::AuthOk {
            id,
            info: Box::new(self.info.clone()),
        }
    }

    /// The first `auth` of a session: a token longer than any token is
    /// refused at once; else see [`Agent::check`].
    fn auth(&mut self, s: &mut Session, id: u64, token: &str) {
        if token.len() > auth::MAX_TOKEN_BYTES {
            self.counters.auth_failed(AuthFailure::WrongToken);
            log!(
                "session {} from {}: a token of {} bytes (at most {}), closing",
                s.sid,
                s.from,
                token.len(),
                auth::MAX_TOKEN_BYTES
            );
            s.send(&Event::error(
                Some(id),
                ErrorCode::TooLarge,
                format!(
                    "authentication refused: a token is at most {} bytes, this one has {}",
                    auth::MAX_TOKEN_BYTES,
                    token.len()
                ),
            ));
            s.closing = true;
            return;
        }
        self.check(s, id, auth::digest(token));
    }

    /// Checks a token (its digest) now, or, from an address that failed
    /// too often lately, at its turn (the session holds the digest until
    /// then; nothing else it sent is read meanwhile). With no place to
    /// wait (see [`auth::Wait::Full`]) it is answered `auth_blocked` at
    /// once, saying when to try again.
    fn check(&mut self, s: &mut Session, id: u64, digest: auth::Digest) {
        let now = Instant::now();
        let ip = s.ip.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        match self.failures.turn(ip, s.sid, now, s.auth_by) {
            Ok(()) => {}
            Err(auth::Wait::Turn(at)) => {
                if s.held.is_none() {
                    self.counters.auth_failed(AuthFailure::Blocked);
                }
                s.held = Some(Held { id, digest, at });
                return;
            }
            Err(auth::Wait::Full(at)) => {
                // Not on the record line by line: the session closes
                // unauthenticated and is counted in the once-a-second sum.
                self.counters.auth_failed(AuthFailure::Blocked);
                s.held = None;
                let wait = at
                    .saturating_duration_since(now)
                    .as_secs_f64()
                    .ceil()
                    .max(1.0);
                s.send(&Event::error(
                    Some(id),
                    ErrorCode::AuthBlocked,
                    format!(
                        "this address is throttled after repeated wrong tokens and its authentications wait their turn, one per {} s, {} at most, each within --auth-timeout; retry in {wait} s",
                        auth::TURN.as_secs(),
                        auth::MAX_WAITING
                    ),
                ));
                s.closing = true;
                return;
            }
        }
        s.held = None;
        if self.token.matches_digest(&digest) {
            self.counters.authenticated();
            s.authed = true;
            s.ws.set_config(|c| {
                c.max_message_size = Some(MAX_MESSAGE);
                c.max_frame_size = Some(MAX_MESSAGE);
            });
            log!("session {} opened from {}", s.sid, s.from);
            s.send(&self.auth_ok(id));
            return;
        }
        self.counters.auth_failed(AuthFailure::WrongToken);
        let throttled = self.failures.throttled(ip, now);
        let starts = self.failures.fail(ip, now);
        log!(
            "session {} from {}: wrong token, closing{}",
            s.sid,
            s.from,
            if starts {
                format!(
                    "; {} failures from this address: checking its tokens one per {} s until none fails for {} s",
                    auth::MAX_FAILURES,
                    auth::TURN.as_secs(),
                    auth::WINDOW.as_secs()
                )
            } else if throttled {
                format!(
                    " (this address is throttled to one check per {} s)",
                    auth::TURN.as_secs()
                )
            } else {
                String::new()
            }
        );
        s.send(&Event::error(
            Some(id),
            ErrorCode::AuthFailed,
            "authentication failed: wrong token",
        ));
        s.closing = true;
    }

    /// An unauthenticated session outlived its deadline: says so and ends.
    pub fn expire(&mut self, s: &mut Session, after: std::time::Duration) {
        self.counters.auth_failed(AuthFailure::Timeout);
        log!(
            "session {} from {}: no auth within {} s, closing",
            s.sid,
            s.from,
            after.as_secs_f64()
        );
        s.send(&Event::error(
            None,
            ErrorCode::AuthTimeout,
            format!("authenticate within {} s of hello", after.as_secs_f64()),
        ));
        s.closing = true;
        self.pump(s);
    }

    fn check_free(&self, test_id: u32, role: Role, kind: Kind) -> Result<(), Refusal> {
        if !self.info.capabilities.contains(&kind) {
            return Err((
                ErrorCode::UnsupportedKind,
                engine::unavailable(kind).unwrap_or_else(|| {
                    format!("this agent does not run {} tests yet", kind.name())
                }),
            ));
        }
        if self.tests.contains_key(&(test_id, role)) {
            return Err((
                ErrorCode::DuplicateTest,
                format!("test {test_id} is already running here"),
            ));
        }
        if self
            .waiting
            .iter()
            .any(|w| w.ask.test_id == test_id && w.ask.role() == role)
        {
            return Err((
                ErrorCode::DuplicateTest,
                format!("test {test_id} is already waiting in this agent's queue"),
            ));
        }
        Ok(())
    }

    /// A `prepare` (`peer` None) or `start` as asked, with what it takes
    /// here (see [`queue`]).
    #[allow(clippy::too_many_arguments)]
    fn asked(
        &self,
        sid: u64,
        id: u64,
        test_id: u32,
        step: u32,
        kind: Kind,
        params: serde_json::Value,
        peer: Option<PeerAddr>,
        exclusive: Option<bool>,
    ) -> queue::Ask {
        let usage = kind.usage(&params, &self.limits).ok();
        queue::Ask {
            sid,
            id,
            test_id,
            step,
            kind,
            exclusive: exclusive.unwrap_or(usage.is_some_and(|u| u.exclusive)),
            usage,
            params,
            peer,
        }
    }

    fn ctx(&mut self, sid: u64, test_id: u32, step: u32, role: Role, kind: Kind) -> TestCtx {
        self.next_serial += 1;
        TestCtx {
            test_id,
            step,
            role,
            kind,
            cancel: Arc::new(AtomicBool::new(false)),
            limit: Arc::new(engine::Limit::new(std::time::Duration::from_secs_f64(
                self.limits.max_duration_s,
            ))),
            limits: self.limits.clone(),
            local: Default::default(),
            moved: engine::shared::no_progress(),
            shared: Default::default(),
            sink: Sink {
                sid,
                serial: self.next_serial,
                tx: self.tx.clone(),
                waker: self.waker.clone(),
                backlog: self.backlogs.get(&sid).cloned().unwrap_or_else(|| {
                    let gone = Backlog::new();
                    gone.close();
                    gone
                }),
            },
        }
    }

    fn register(
        &mut self,
        ctx: &TestCtx,
        thread: std::io::Result<JoinHandle<()>>,
        detail: String,
        usage: Usage,
        exclusive: bool,
    ) -> Result<(), Refusal> {
        let thread =
            thread.map_err(|e| (ErrorCode::Io, format!("cannot start the test thread: {e}")))?;
        let what = format!(
            "session {} test {} step {} {} {}",
            ctx.sink.sid,
            ctx.test_id,
            ctx.step,
            ctx.kind.name(),
            if ctx.role == Role::Server {
                "serving"
            } else {
                "driving"
            }
        );
        log!("{what} started, {detail}");
        let handle = TestHandle {
            owner: ctx.sink.sid,
            serial: ctx.sink.serial,
            cancel: ctx.cancel.clone(),
            thread: Some(thread),
            what,
            started: std::time::Instant::now(),
            limit: ctx.limit.clone(),
            kind: ctx.kind,
            usage,
            exclusive,
            moved: ctx.moved.clone(),
            shared: ctx.shared.clone(),
        };
        self.note_overlaps(ctx.test_id, &ctx.shared, ctx.kind, &ctx.moved);
        self.tests.insert((ctx.test_id, ctx.role), handle);
        self.counters.test_started(ctx.role, ctx.kind);
        Ok(())
    }

    fn env(&self) -> engine::EngineEnv<'_> {
        engine::EngineEnv {
            limits: &self.limits,
            data_ip: self.data_ip,
            data_ports: self.data_ports,
            payload_dir: self.payload_dir.as_ref(),
            targets: &self.targets,
            stamp_key: self.stamp_key.as_ref(),
        }
    }

    fn spawn(
        &mut self,
        ctx: TestCtx,
        job: engine::Job,
        detail: String,
        (usage, exclusive): (Usage, bool),
    ) -> Result<(), Refusal> {
        let c = ctx.clone();
        let name = format!("test-{}-{:?}", ctx.test_id, ctx.role).to_lowercase();
        let t = std::thread::Builder::new().name(name).spawn(move || {
            engine::cpu::enter();
            job(c)
        });
        self.register(&ctx, t, detail, usage, exclusive)
    }

    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &mut self,
        sid: u64,
        test_id: u32,
        step: u32,
        kind: Kind,
        params: &serde_json::Value,
        usage: Usage,
        exclusive: bool,
    ) -> Result<(u16, String), Refusal> {
        self.check_free(test_id, Role::Server, kind)?;
        let (port, key, job) = engine::prepare(kind, params, &self.env())?;
        let ctx = self.ctx(sid, test_id, step, Role::Server, kind);
        let detail = format!("listening on port {port}");
        self.spawn(ctx, job, detail, (usage, exclusive))?;
        Ok((port, wire::key_hex(&key)))
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        sid: u64,
        test_id: u32,
        step: u32,
        kind: Kind,
        params: serde_json::Value,
        peer: PeerAddr,
        usage: Usage,
        exclusive: bool,
    ) -> Result<(), Refusal> {
        self.check_free(test_id, Role::Client, kind)?;
        // A target that is not an agent has no key; the engine checks it
        // against --allow-target.
        if !kind.to_outside_target() && wire::parse_key(&peer.key).is_none() {
            return Err((
                ErrorCode::BadRequest,
                "peer.key must be the 32 hex digits from prepared".into(),
            ));
        }
        let detail = format!("to {}", peer_text(&peer));
        let job = engine::start(kind, params, peer, &self.env())?;
        let ctx = self.ctx(sid, test_id, step, Role::Client, kind);
        self.spawn(ctx, job, detail, (usage, exclusive))
    }
}

/// Moves queued messages into the WebSocket until its write buffer is full;
/// false when the connection failed.
fn write_queued(s: &mut Session) -> bool {
    while let Some((m, len, sample)) = s.out.pop_front() {
        match s.ws.write(m) {
            Ok(()) => {
                s.out_bytes -= len;
                if sample {
                    s.backlog.release(len);
                }
                s.moved = Instant::now();
            }
            Err(WsError::WriteBufferFull(m)) => {
                // Back as a Message::Frame, a header longer than it went in:
                // it still counts what it counted (counting the frame's
                // length wrapped `out_bytes` below zero once a backlog had
                // waited on a full buffer, and a reading controller was
                // closed as holding 2^64 bytes unread: the 1000G udp_stream
                // test beside others, "disconnected during the test").
                s.out.push_front((*m, len, sample));
                break;
            }
            Err(WsError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // tungstenite took the message into its buffer.
                s.out_bytes -= len;
                if sample {
                    s.backlog.release(len);
                }
                s.moved = Instant::now();
                break;
            }
            Err(_) => return false,
        }
    }
    if s.out_bytes <= STALL_BYTES {
        s.moved = Instant::now();
    }
    true
}

/// False (the session closed, with its reason on the record and, when there
/// is room, in the close frame) when the controller has let more than
/// [`MAX_QUEUED`] messages or [`MAX_QUEUED_BYTES`] pile up unread, or has
/// taken nothing of over [`STALL_BYTES`] for [`STALL`].
fn within_bounds(s: &mut Session) -> bool {
    let (n, bytes) = (s.out.len(), s.out_bytes);
    let stalled = bytes > STALL_BYTES && s.moved.elapsed() >= STALL;
    if n <= MAX_QUEUED && bytes <= MAX_QUEUED_BYTES && !stalled {
        return true;
    }
    let why = format!(
        "the controller does not read its replies ({n} messages, {} KiB waiting{})",
        bytes >> 10,
        if stalled {
            format!(", none taken for {} s", STALL.as_secs())
        } else {
            String::new()
        }
    );
    log!("session {} closed: {why}", s.sid);
    s.out.clear();
    s.out_bytes = 0;
    let _ = s.ws.close(Some(CloseFrame {
        code: CloseCode::Policy,
        reason: why.into(),
    }));
    let _ = s.ws.flush();
    false
}

/// A refused prepare or start: on the agent's record, and the error reply.
fn refused(sid: u64, id: u64, test_id: u32, kind: Kind, code: ErrorCode, msg: String) -> Event {
    log!(
        "session {sid} test {test_id} {} refused: {msg}",
        kind.name()
    );
    Event::error(Some(id), code, msg)
}

/// `host:port` of a serving agent, IPv6 literals in brackets.
fn peer_text(p: &PeerAddr) -> String {
    if p.host.contains(':') && !p.host.starts_with('[') {
        format!("[{}]:{}", p.host, p.port)
    } else {
        format!("{}:{}", p.host, p.port)
    }
}

/// Why an `auth` asking for protocol `v` is refused: a version outside
/// the range this agent's `hello` announced (None: absent, or spoken).
fn unspoken(v: Option<u32>) -> Option<String> {
    let (lo, hi) = (
        meshperf_protocol::PROTOCOL_VERSION,
        meshperf_protocol::PROTOCOL_MAX,
    );
    let v = v?;
    (v < lo || v > hi).then(|| {
        format!("protocol {v} asked for; this agent speaks {lo} to {hi} (its hello said so)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> (Agent, mio::Poll) {
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let info = AgentInfo {
            protocol: 1,
            version: String::new(),
            hostname: String::new(),
            addresses: vec![],
            cores: 1,
            kernel: String::new(),
            capabilities: vec![Kind::TcpRr],
            accepts: Default::default(),
            limits: Limits::default(),
            instance: String::new(),
        };
        let (tx, _rx) = std::sync::mpsc::channel();
        let a = Agent::new("t".repeat(8), info, [127, 0, 0, 1].into(), tx, waker);
        (a, poll)
    }

    fn side(a: &mut Agent, test_id: u32) -> u64 {
        let ctx = a.ctx(1, test_id, 0, Role::Server, Kind::TcpRr);
        let serial = ctx.sink.serial;
        let t = std::thread::spawn(|| {});
        a.register(&ctx, Ok(t), String::new(), Usage::default(), false)
            .unwrap();
        serial
    }

    #[test]
    fn a_late_finished_of_an_old_side_does_not_end_a_new_side_with_its_id() {
        let (mut a, _poll) = agent();
        let old = side(&mut a, 61);
        // The old side's final event frees the id; the controller reuses it.
        a.route(Outbound::Final {
            sid: 1,
            test_id: 61,
            role: Role::Server,
            serial: old,
            text: "{}".into(),
            outcome: String::new(),
        });
        assert!(a.tests.is_empty());
        let new = side(&mut a, 61);
        assert_ne!(new, old);
        // The old thread's Finished arrives after: the new side stays.
        a.route(Outbound::Finished {
            test_id: 61,
            role: Role::Server,
            serial: old,
        });
        assert_eq!(a.tests[&(61, Role::Server)].serial, new);
        a.route(Outbound::Finished {
            test_id: 61,
            role: Role::Server,
            serial: new,
        });
        assert!(a.tests.is_empty());
    }
}
