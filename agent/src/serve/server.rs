//! The agent's single mio event loop: one TCP port serving the embedded web
//! app over HTTP and the control WebSocket (`/ws`). Engine threads report
//! through a channel and a `Waker`; SIGINT/SIGTERM arrive through a pipe.
//!
//! Sockets are registered once for READABLE|WRITABLE (edge-triggered), so a
//! connection never needs re-registration; each handler drains until
//! `WouldBlock`. A failure on one connection closes that connection only.
//!
//! Every stage a stranger can hold has a deadline and a cap ([`Guard`]):
//! the HTTP request head and the WebSocket handshake must arrive within
//! `head_timeout`, `auth` within `auth_timeout` of `hello`; connections are
//! capped in total and per source address. At the total cap the oldest
//! connection that has not authenticated, from the address holding the
//! most, makes room (sshd's MaxStartups
//! idea), so flooding the port cannot lock out a controller with the token,
//! and authenticated sessions are never the ones closed. An accept that
//! fails (out of file descriptors) closes the oldest unauthenticated
//! connection and pauses accepting for [`ACCEPT_PAUSE`] instead of spinning.

use super::control::{self, Agent, Session};
use super::http;
use super::quiet::Refusals;
use super::replay::Replay;
use super::tls::{Stream, TlsStream};
use crate::endpoint::names::host_key;
use crate::endpoint::simple;
use crate::engine::Outbound;
#[cfg(unix)]
use mio::net::UnixStream;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use rustls::ServerConfig;
use slab::Slab;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response, ServerHandshake};
use tungstenite::handshake::{HandshakeError, MidHandshake};
use tungstenite::protocol::WebSocketConfig;

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
const SIGNAL: Token = Token(usize::MAX - 3);
/// Longest HTTP request head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// The operator's caps and deadlines on connections (`meshperf agent` flags).
#[derive(Clone, Debug)]
pub struct Guard {
    /// Connections held at once, of every kind.
    pub max_connections: usize,
    /// Connections held at once from one IP address.
    pub max_per_source: usize,
    /// For the HTTP request head and the WebSocket handshake (and, between
    /// bytes, for sending a response).
    pub head_timeout: Duration,
    /// For `auth` after `hello`: an unauthenticated session ends then.
    pub auth_timeout: Duration,
    /// What the `Host` of a WebSocket upgrade may name, as [`host_key`]s.
    pub hosts: Vec<String>,
    /// Web origins besides the agent's own that may open the WebSocket.
    pub origins: Vec<String>,
    /// TLS on the port (`--tls-cert`, `--tls-self-signed`): https and wss
    /// only, and the handshake within `head_timeout` like the head.
    pub tls: Option<Arc<ServerConfig>>,
}

/// How long accepting pauses after an accept failed (EMFILE and the like).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// The WebSocket's write buffer; past it messages wait in the session's
/// queue (bounded by `control::MAX_QUEUED`).
const WRITE_BUFFER: usize = 1 << 20;

/// Refuses WebSocket upgrades from foreign origins: a random web page must
/// not drive an agent. Requests without `Origin` (non-browser clients such as
/// `meshperf run`) still need the token. `Host` was checked before (see
/// [`Guard::hosts`]), so "the agent's own origin" cannot be a rebound name.
pub struct OriginCheck {
    guard: Arc<Guard>,
    /// Where a refusal is told, for the agent's record ([`Refusals`]: at
    /// most one line a second, the latest origin named, escaped).
    refused: Option<mpsc::Sender<String>>,
}

/// The most of a refused `Origin` the record keeps.
const ORIGIN_LOGGED: usize = 200;

impl OriginCheck {
    pub fn new(guard: Arc<Guard>) -> OriginCheck {
        OriginCheck {
            guard,
            refused: None,
        }
    }

    /// Tells each refused origin to `tx` (the server's record).
    pub fn telling(mut self, tx: mpsc::Sender<String>) -> OriginCheck {
        self.refused = Some(tx);
        self
    }
}

impl Callback for OriginCheck {
    fn on_request(self, req: &Request, resp: Response) -> Result<Response, ErrorResponse> {
        let Some(origin) = req.headers().get("origin") else {
            return Ok(resp);
        };
        let raw = String::from_utf8_lossy(origin.as_bytes());
        let origin = origin.to_str().unwrap_or("");
        let host = req
            .headers()
            .get("host")
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let scheme = if self.guard.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let same = !host.is_empty() && origin == format!("{scheme}://{host}");
        if same || self.guard.origins.iter().any(|a| a == origin) {
            return Ok(resp);
        }
        if let Some(tx) = &self.refused {
            // Escaped ({:?}, and the record's own escaping) and cut: the
            // header is the stranger's text.
            let shown: String = raw.chars().take(ORIGIN_LOGGED).collect();
            let cut = if raw.chars().count() > ORIGIN_LOGGED {
                " (cut)"
            } else {
                ""
            };
            let _ = tx.send(format!(
                "a WebSocket upgrade from a page at origin {shown:?}{cut} (Host {host:?}): \
                 that origin is not allowed; start the agent with --allow-origin ORIGIN to allow a page"
            ));
        }
        let mut r = ErrorResponse::new(Some(format!(
            "origin {origin} is not allowed; start the agent with --allow-origin {origin} to allow it\n"
        )));
        *r.status_mut() = tungstenite::http::StatusCode::FORBIDDEN;
        Err(r)
    }
}

enum Conn {
    Http {
        sock: Stream,
        head: Vec<u8>,
        out: Vec<u8>,
        sent: usize,
    },
    Handshake(MidHandshake<ServerHandshake<Replay, OriginCheck>>),
    Ws(Session),
    /// Placeholder while a connection is being advanced.
    Gone,
}

/// A connection with what the caps and deadlines need.
struct Slot {
    conn: Conn,
    ip: IpAddr,
    opened: Instant,
    /// Closed then unless it moved on; none once authenticated.
    deadline: Option<Instant>,
}

impl Slot {
    fn authed(&self) -> bool {
        matches!(&self.conn, Conn::Ws(s) if s.authed())
    }
}

struct Server {
    conns: Slab<Slot>,
    by_sid: HashMap<u64, usize>,
    per_source: HashMap<IpAddr, usize>,
    agent: Agent,
    guard: Arc<Guard>,
    cfg: WebSocketConfig,
    refusals: Refusals,
    /// Origins the [`OriginCheck`]s refused, for `refusals`.
    origin_tx: mpsc::Sender<String>,
    origin_rx: mpsc::Receiver<String>,
}

/// Runs the agent until SIGINT/SIGTERM.
pub fn serve(
    mut listener: TcpListener,
    agent: Agent,
    guard: Guard,
    rx: mpsc::Receiver<Outbound>,
    poll: Poll,
) -> io::Result<()> {
    #[cfg(unix)]
    let (sig_rx, sig_tx) = std::os::unix::net::UnixStream::pair()?;
    #[cfg(unix)]
    {
        sig_rx.set_nonblocking(true)?;
        sig_tx.set_nonblocking(true)?;
        for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::low_level::pipe::register(s, sig_tx.try_clone()?)?;
        }
    }
    // Windows has no pipe to wake the loop from a signal handler: Ctrl-C
    // sets a flag the loop reads after every wait (at most a second).
    #[cfg(windows)]
    let stop = {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(s, stop.clone())?;
        }
        stop
    };
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    #[cfg(unix)]
    let mut sig_rx = UnixStream::from_std(sig_rx);
    #[cfg(unix)]
    poll.registry()
        .register(&mut sig_rx, SIGNAL, Interest::READABLE)?;
    let mut poll = poll;
    let mut events = Events::with_capacity(256);
    let (origin_tx, origin_rx) = mpsc::channel();
    let mut srv = Server {
        conns: Slab::new(),
        by_sid: HashMap::new(),
        per_source: HashMap::new(),
        agent,
        guard: Arc::new(guard),
        // Until `auth_ok` (which raises the message limits to
        // control::MAX_MESSAGE): a stranger's WebSocket costs a few KiB.
        cfg: WebSocketConfig::default()
            .read_buffer_size(control::READ_BUFFER)
            .max_message_size(Some(control::MAX_MESSAGE_BEFORE_AUTH))
            .max_frame_size(Some(control::MAX_MESSAGE_BEFORE_AUTH))
            .max_write_buffer_size(WRITE_BUFFER),
        refusals: Refusals::new(Instant::now()),
        origin_tx,
        origin_rx,
    };
    // Accepting pauses until then after a failed accept.
    let mut paused: Option<Instant> = None;
    let mut next_deadline: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let timeout = [next_deadline, paused]
            .into_iter()
            .flatten()
            .map(|t| t.saturating_duration_since(now))
            .fold(Duration::from_secs(1), Duration::min);
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        #[cfg(windows)]
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            srv.agent.shutdown();
            return Ok(());
        }
        // Engine output first (results free their tests before the next
        // request is read), routed to sessions, then the sessions flushed.
        let mut touched = Vec::new();
        while let Ok(out) = rx.try_recv() {
            if let Some(sid) = srv.agent.route(out) {
                if let Some(&key) = srv.by_sid.get(&sid) {
                    touched.push(key);
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for key in touched {
            if srv.conns.contains(key) {
                srv.step(key);
            }
        }
        srv.step_woken();
        let mut accept = false;
        for ev in events.iter() {
            match ev.token() {
                SIGNAL => {
                    srv.agent.shutdown();
                    return Ok(());
                }
                LISTENER => accept = true,
                WAKER => {}
                Token(key) => {
                    if srv.conns.contains(key) {
                        srv.step(key);
                    }
                }
            }
        }
        let now = Instant::now();
        if paused.is_some_and(|p| p <= now) {
            // Connections may be waiting: the edge that announced them is gone.
            paused = None;
            accept = true;
        }
        if accept && paused.is_none() {
            paused = srv.accept(&listener, poll.registry());
        }
        srv.step_woken();
        next_deadline = srv.expire(Instant::now());
        srv.step_woken();
        let now = Instant::now();
        while let Ok(why) = srv.origin_rx.try_recv() {
            srv.refusals.note(why);
        }
        srv.refusals.report(now);
        srv.agent.report(now);
    }
}

impl Server {
    /// Accepts until `WouldBlock`; returns when to try again after a failure.
    fn accept(&mut self, listener: &TcpListener, registry: &Registry) -> Option<Instant> {
        let mut failures = 0;
        loop {
            match listener.accept() {
                Ok((sock, addr)) => self.admit(sock, addr.ip().to_canonical(), registry),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // Out of file descriptors or memory: the oldest stranger
                    // makes room (a backlog of strangers is worked through
                    // at once); with none to close, accepting pauses while
                    // the loop serves what it holds.
                    failures += 1;
                    let freed = self.evict_oldest();
                    self.refusals.note(format!(
                        "accept failed: {e}{}",
                        if freed {
                            "; closed the oldest unauthenticated connection"
                        } else {
                            "; pausing accepts"
                        }
                    ));
                    if !freed || failures > 256 {
                        return Some(Instant::now() + ACCEPT_PAUSE);
                    }
                }
            }
        }
    }

    /// Takes a new connection in, within the caps.
    fn admit(&mut self, mut sock: TcpStream, ip: IpAddr, registry: &Registry) {
        let here = self.per_source.get(&ip).copied().unwrap_or(0);
        if here >= self.guard.max_per_source {
            let why = format!(
                "{ip} holds {here} connections, the most one address may (--max-per-source)"
            );
            self.agent.counters().connection_refused(true);
            return self.refuse(sock, why);
        }
        if self.conns.len() >= self.guard.max_connections && !self.evict_oldest() {
            let why = format!(
                "from {ip}: {} authenticated connections, the most this agent holds (--max-connections)",
                self.conns.len()
            );
            self.agent.counters().connection_refused(false);
            return self.refuse(sock, why);
        }
        // Control messages are small and wanted at once: with Nagle a
        // test's result waited for the controller's delayed ACK of the
        // message before (40 ms per step of a sweep, measured with strace).
        let _ = sock.set_nodelay(true);
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        if registry
            .register(
                &mut sock,
                Token(key),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            return;
        }
        let sock = match &self.guard.tls {
            None => Stream::Plain(sock),
            Some(cfg) => match TlsStream::new(cfg, sock) {
                Ok(t) => Stream::Tls(Box::new(t)),
                Err(_) => return,
            },
        };
        let now = Instant::now();
        entry.insert(Slot {
            conn: Conn::Http {
                sock,
                head: Vec::new(),
                out: Vec::new(),
                sent: 0,
            },
            ip,
            opened: now,
            deadline: Some(now + self.guard.head_timeout),
        });
        *self.per_source.entry(ip).or_default() += 1;
        self.step(key);
    }

    /// Answers 503 (as far as the socket takes it at once) and closes.
    fn refuse(&mut self, mut sock: TcpStream, why: String) {
        // On a TLS port the client could not read a plain answer: it sees
        // the connection closed.
        if self.guard.tls.is_none() {
            let _ = sock.write(&simple(
                503,
                "Service Unavailable",
                "this agent holds too many connections (from your address); try again later\n",
            ));
        }
        self.refusals.note(why);
    }

    /// Closes the oldest connection that has not authenticated, from the
    /// address holding the most connections; false when every connection
    /// is authenticated. A churn of upgrades from many addresses so closes
    /// its own, not a controller's from an address of its own that is
    /// between its upgrade and its `auth` (it was closed as the oldest).
    fn evict_oldest(&mut self) -> bool {
        let held = |ip: &IpAddr| self.per_source.get(ip).copied().unwrap_or(0);
        let oldest = self
            .conns
            .iter()
            .filter(|(_, s)| !s.authed())
            .min_by_key(|(_, s)| (std::cmp::Reverse(held(&s.ip)), s.opened))
            .map(|(k, _)| k);
        oldest.is_some_and(|k| {
            self.remove(k);
            true
        })
    }

    /// Pumps the sessions that have output from another session's request
    /// or a test's end (a waiting test started; the queue moved).
    fn step_woken(&mut self) {
        loop {
            let woken = self.agent.woken();
            if woken.is_empty() {
                return;
            }
            for sid in woken {
                if let Some(&key) = self.by_sid.get(&sid) {
                    if self.conns.contains(key) {
                        self.step(key);
                    }
                }
            }
        }
    }

    /// Closes the connections whose deadline passed; returns the next deadline.
    fn expire(&mut self, now: Instant) -> Option<Instant> {
        let due: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, s)| s.deadline.is_some_and(|d| d <= now))
            .map(|(k, _)| k)
            .collect();
        for key in due {
            if matches!(&self.conns[key].conn, Conn::Ws(s) if s.wake_at().is_some()
                && (s.authed() || s.auth_by > now))
            {
                // Not a deadline: the held auth's turn may have come, or a
                // controller's time to take its messages ran out.
                self.step(key);
                continue;
            }
            match &mut self.conns[key].conn {
                Conn::Ws(s) => self.agent.expire(s, self.guard.auth_timeout),
                Conn::Http { sock, out, .. } if out.is_empty() => {
                    let _ = sock.write(&simple(
                        408,
                        "Request Timeout",
                        "the request head did not arrive in time\n",
                    ));
                }
                _ => {}
            }
            self.remove(key);
        }
        let tests = self.agent.reap(now);
        self.conns
            .iter()
            .filter_map(|(_, s)| s.deadline)
            .chain(tests)
            .min()
    }

    /// Forgets a connection (a session's tests are cancelled) and closes it.
    fn remove(&mut self, key: usize) {
        let slot = self.conns.remove(key);
        if let Some(n) = self.per_source.get_mut(&slot.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&slot.ip);
            }
        }
        if let Conn::Ws(s) = slot.conn {
            if s.sid != 0 {
                self.by_sid.remove(&s.sid);
            }
            self.agent.closed(&s);
            drop(s);
            give_back_memory();
        }
    }

    /// Advances one connection as far as it can go; removes it when done.
    fn step(&mut self, key: usize) {
        let conn = std::mem::replace(&mut self.conns[key].conn, Conn::Gone);
        let now = Instant::now();
        let next = match conn {
            Conn::Http {
                sock,
                head,
                out,
                sent,
            } => {
                let next = http_step(
                    sock,
                    head,
                    out,
                    sent,
                    &self.guard,
                    self.cfg,
                    &self.origin_tx,
                );
                if matches!(&next, Some(Conn::Http { sent: s, .. }) if *s > sent) {
                    // Sending a response: the deadline is between bytes.
                    self.conns[key].deadline = Some(now + self.guard.head_timeout);
                }
                next
            }
            Conn::Handshake(mid) => handshake(mid.handshake()),
            Conn::Ws(mut s) => {
                if s.sid == 0 {
                    self.agent.greet(&mut s, now + self.guard.auth_timeout);
                    self.by_sid.insert(s.sid, key);
                    self.conns[key].deadline = Some(s.auth_by);
                }
                let held = s.held_until().is_some();
                let open = self.agent.pump(&mut s);
                if let Some(t) = s.wake_at() {
                    // A throttled address's auth, answered at its turn
                    // (and the session ended at its auth deadline all the
                    // same), or a controller not taking what waits for it.
                    self.conns[key].deadline = Some(if s.authed() { t } else { t.min(s.auth_by) });
                } else if s.authed() {
                    self.conns[key].deadline = None;
                } else if held {
                    // Answered (wrong): time to send that and close.
                    self.conns[key].deadline = Some(now + self.guard.auth_timeout);
                }
                self.conns[key].conn = Conn::Ws(s);
                if !open {
                    self.remove(key);
                }
                return;
            }
            Conn::Gone => None,
        };
        match next {
            Some(c @ Conn::Ws(_)) => {
                self.conns[key].conn = c;
                self.step(key); // greet at once
            }
            Some(c) => self.conns[key].conn = c,
            None => self.remove(key),
        }
    }
}

/// Returns freed heap pages to the OS. A controller's session ends with its
/// tests' sample vectors and socket buffers freed, but glibc keeps the pages
/// in its arenas: an agent that had served a whole `npm run bench` stayed at
/// 13.7 MB RSS without this.
fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory that is free.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn handshake(
    r: Result<tungstenite::WebSocket<Replay>, HandshakeError<ServerHandshake<Replay, OriginCheck>>>,
) -> Option<Conn> {
    match r {
        Ok(ws) => Some(Conn::Ws(Session::new(ws))),
        Err(HandshakeError::Interrupted(mid)) => Some(Conn::Handshake(mid)),
        Err(HandshakeError::Failure(_)) => None,
    }
}

fn http_step(
    mut sock: Stream,
    mut head: Vec<u8>,
    mut out: Vec<u8>,
    mut sent: usize,
    guard: &Arc<Guard>,
    cfg: WebSocketConfig,
    refused: &mpsc::Sender<String>,
) -> Option<Conn> {
    if out.is_empty() {
        let mut buf = [0u8; 4096];
        loop {
            match sock.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => head.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
            if head.len() > MAX_HEAD {
                break;
            }
        }
        match parse_head(&head, &guard.hosts) {
            Head::Partial => {
                return Some(Conn::Http {
                    sock,
                    head,
                    out,
                    sent,
                });
            }
            Head::Respond(o) => out = o,
            Head::Upgrade => {
                let replay = Replay {
                    pre: head,
                    pos: 0,
                    inner: sock,
                };
                let cb = OriginCheck::new(guard.clone()).telling(refused.clone());
                return handshake(tungstenite::accept_hdr_with_config(replay, cb, Some(cfg)));
            }
        }
    }
    match send(&mut sock, &out, &mut sent) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(Conn::Http {
            sock,
            head,
            out,
            sent,
        }),
        Err(_) => None,
        Ok(()) => {
            sock.shutdown_write();
            None
        }
    }
}

/// Writes what is left of a response, then flushes: TLS records of it may
/// still wait in the session.
fn send(sock: &mut Stream, out: &[u8], sent: &mut usize) -> io::Result<()> {
    while *sent < out.len() {
        match sock.write(&out[*sent..]) {
            Ok(n) => *sent += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    sock.flush()
}

/// What a request head asks for, decided from its bytes alone.
#[derive(Debug)]
pub enum Head {
    /// Not complete yet, and within [`MAX_HEAD`]: read more.
    Partial,
    /// Send this response and close.
    Respond(Vec<u8>),
    /// A WebSocket upgrade to `/ws` with a `Host` in `hosts`: the
    /// handshake (and its origin check) takes the connection over.
    Upgrade,
}

/// Decodes an HTTP request head (every byte read so far) against the names
/// the agent answers to ([`Guard::hosts`]). Pure: the fuzz target
/// `http_head` calls it with whatever bytes it makes.
pub fn parse_head(head: &[u8], hosts: &[String]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; 48];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Partial) if head.len() <= MAX_HEAD => Head::Partial,
        // A head over the limit is refused whether or not its end
        // arrived in the same read.
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => Head::Respond(too_large()),
        Ok(httparse::Status::Partial) => Head::Respond(too_large()),
        Err(_) => Head::Respond(simple(400, "Bad Request", "malformed HTTP request\n")),
        Ok(httparse::Status::Complete(_)) => {
            let header = |name: &str| {
                req.headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                    .unwrap_or_default()
            };
            let path = req.path.unwrap_or("/");
            let method = req.method.unwrap_or("");
            let hosts_given = req
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("host"))
                .count();
            if hosts_given > 1 {
                // Only one would be checked, another maybe believed.
                return Head::Respond(simple(400, "Bad Request", "more than one Host header\n"));
            }
            if !header("upgrade").contains("websocket") {
                return Head::Respond(http::respond(
                    method,
                    path,
                    header("accept-encoding").contains("gzip"),
                ));
            }
            let host = header("host");
            if path.split('?').next() != Some("/ws") {
                Head::Respond(simple(
                    404,
                    "Not Found",
                    "the control WebSocket is at /ws\n",
                ))
            } else if !hosts.contains(&host_key(&host)) {
                // DNS rebinding: a page from evil.example whose name
                // now points here would pass the origin check.
                Head::Respond(simple(
                    421,
                    "Misdirected Request",
                    &format!(
                        "Host {:?} is not a name of this agent; start it with --allow-host NAME to allow another name\n",
                        host_key(&host)
                    ),
                ))
            } else {
                Head::Upgrade
            }
        }
    }
}

fn too_large() -> Vec<u8> {
    simple(
        431,
        "Request Header Fields Too Large",
        "request head too large (16 KiB at most)\n",
    )
}

/// Binds the agent's port, with a one-line error when it is taken.
pub fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            anyhow::anyhow!(
                "port {} on {} is already in use; choose another with --listen ADDR:PORT",
                addr.port(),
                addr.ip()
            )
        } else {
            anyhow::anyhow!(
                "cannot listen on {addr}: {e}; choose another address with --listen ADDR:PORT"
            )
        }
    })
}

/// Creates the poll and the waker engine threads use.
pub fn poll_and_waker() -> io::Result<(Poll, Arc<Waker>)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    Ok((poll, waker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_key_takes_a_bracketed_address_only_alone_or_with_a_port() {
        assert_eq!(host_key("[::1]"), "::1");
        assert_eq!(host_key("[::1]:7800"), "::1");
        assert_eq!(host_key("[::FFFF:127.0.0.1]:80"), "127.0.0.1");
        assert_eq!(host_key("127.0.0.1:80"), "127.0.0.1");
        assert_eq!(host_key("LocalHost.:80"), "localhost");
        let hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(host_key).to_vec();
        for bad in [
            "[::1]@evil.example",
            "[::1]evil.example",
            "[::1]:",
            "[::1]:80x",
            "[::1]:80@evil.example",
            "[::1]]",
            "[::1",
        ] {
            let k = host_key(bad);
            assert!(
                k.parse::<IpAddr>().is_err() && !hosts.contains(&k),
                "{bad}: {k}"
            );
            let head = format!(
                "GET /ws HTTP/1.1\r\nHost: {bad}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
            );
            match parse_head(head.as_bytes(), &hosts) {
                Head::Respond(r) => assert!(r.starts_with(b"HTTP/1.1 421"), "{bad}"),
                h => panic!("{bad}: {h:?}"),
            }
        }
    }
}
