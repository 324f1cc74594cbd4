//! The agent's single mio event loop: one TCP port serving the embedded web
//! app over HTTP and the control WebSocket (`/ws`). Engine threads report
//! through a channel and a `Waker`; SIGINT/SIGTERM arrive through a pipe.
//!
//! Sockets are registered once for READABLE|WRITABLE (edge-triggered), so a
//! connection never needs re-registration; each handler drains until
//! `WouldBlock`. A failure on one connection closes that connection only.

use crate::control::{Agent, Session};
use crate::engine::Outbound;
use crate::http;
use mio::net::{TcpListener, TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response, ServerHandshake};
use tungstenite::handshake::{HandshakeError, MidHandshake};
use tungstenite::protocol::WebSocketConfig;

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
const SIGNAL: Token = Token(usize::MAX - 3);
/// Longest HTTP request head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// A socket that first replays bytes already read (the HTTP request head we
/// parsed to route the connection) and then reads from the socket.
pub struct Replay {
    pre: Vec<u8>,
    pos: usize,
    pub inner: TcpStream,
}

impl Read for Replay {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.pre.len() {
            let n = buf.len().min(self.pre.len() - self.pos);
            buf[..n].copy_from_slice(&self.pre[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl Write for Replay {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Refuses WebSocket upgrades from foreign origins: a random web page must
/// not drive an agent. Requests without `Origin` (non-browser clients such as
/// `meshperf run`) still need the token.
pub struct OriginCheck {
    allowed: Arc<Vec<String>>,
}

impl Callback for OriginCheck {
    fn on_request(self, req: &Request, resp: Response) -> Result<Response, ErrorResponse> {
        let Some(origin) = req.headers().get("origin") else {
            return Ok(resp);
        };
        let origin = origin.to_str().unwrap_or("");
        let host = req
            .headers()
            .get("host")
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let same = !host.is_empty() && origin == format!("http://{host}");
        if same || self.allowed.iter().any(|a| a == origin) {
            return Ok(resp);
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
        sock: TcpStream,
        head: Vec<u8>,
        out: Vec<u8>,
        sent: usize,
    },
    Handshake(MidHandshake<ServerHandshake<Replay, OriginCheck>>),
    Ws(Session),
    /// Placeholder while a connection is being advanced.
    Gone,
}

/// Runs the agent until SIGINT/SIGTERM.
pub fn serve(
    mut listener: TcpListener,
    mut agent: Agent,
    allowed: Vec<String>,
    rx: mpsc::Receiver<Outbound>,
    poll: Poll,
) -> io::Result<()> {
    let allowed = Arc::new(allowed);
    let (sig_rx, sig_tx) = std::os::unix::net::UnixStream::pair()?;
    sig_rx.set_nonblocking(true)?;
    sig_tx.set_nonblocking(true)?;
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::low_level::pipe::register(s, sig_tx.try_clone()?)?;
    }
    let mut sig_rx = UnixStream::from_std(sig_rx);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    poll.registry()
        .register(&mut sig_rx, SIGNAL, Interest::READABLE)?;
    let mut poll = poll;
    let mut conns: Slab<Conn> = Slab::new();
    let mut by_sid: HashMap<u64, usize> = HashMap::new();
    let mut events = Events::with_capacity(256);
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(1 << 20))
        .max_frame_size(Some(1 << 20))
        .max_write_buffer_size(64 << 20);
    loop {
        match poll.poll(&mut events, Some(Duration::from_secs(1))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // Engine output first (results free their tests before the next
        // request is read), routed to sessions, then the sessions flushed.
        let mut touched = Vec::new();
        while let Ok(out) = rx.try_recv() {
            if let Some(sid) = agent.route(out) {
                if let Some(&key) = by_sid.get(&sid) {
                    touched.push(key);
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for key in touched {
            if conns.contains(key) {
                step(
                    key,
                    &mut conns,
                    &mut by_sid,
                    &mut agent,
                    &allowed,
                    ws_config,
                );
            }
        }
        for ev in events.iter() {
            match ev.token() {
                SIGNAL => {
                    agent.shutdown();
                    return Ok(());
                }
                LISTENER => loop {
                    match listener.accept() {
                        Ok((mut sock, _)) => {
                            // Control messages are small and wanted at once:
                            // with Nagle a test's result waited for the
                            // controller's delayed ACK of the message before
                            // (40 ms per step of a sweep, measured with strace).
                            let _ = sock.set_nodelay(true);
                            let entry = conns.vacant_entry();
                            let key = entry.key();
                            if poll
                                .registry()
                                .register(
                                    &mut sock,
                                    Token(key),
                                    Interest::READABLE | Interest::WRITABLE,
                                )
                                .is_ok()
                            {
                                entry.insert(Conn::Http {
                                    sock,
                                    head: Vec::new(),
                                    out: Vec::new(),
                                    sent: 0,
                                });
                                step(
                                    key,
                                    &mut conns,
                                    &mut by_sid,
                                    &mut agent,
                                    &allowed,
                                    ws_config,
                                );
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            eprintln!("meshperf agent: accept failed: {e}");
                            break;
                        }
                    }
                },
                WAKER => {}
                Token(key) => {
                    if conns.contains(key) {
                        step(
                            key,
                            &mut conns,
                            &mut by_sid,
                            &mut agent,
                            &allowed,
                            ws_config,
                        );
                    }
                }
            }
        }
    }
}

/// Advances one connection as far as it can go; removes it when done.
fn step(
    key: usize,
    conns: &mut Slab<Conn>,
    by_sid: &mut HashMap<u64, usize>,
    agent: &mut Agent,
    allowed: &Arc<Vec<String>>,
    cfg: WebSocketConfig,
) {
    let next = match std::mem::replace(&mut conns[key], Conn::Gone) {
        Conn::Http {
            sock,
            head,
            out,
            sent,
        } => http_step(sock, head, out, sent, allowed, cfg),
        Conn::Handshake(mid) => handshake(mid.handshake()),
        other => Some(other),
    };
    let keep = match next {
        Some(Conn::Ws(mut s)) => {
            if s.sid == 0 {
                agent.greet(&mut s);
                by_sid.insert(s.sid, key);
            }
            if agent.pump(&mut s) {
                Some(Conn::Ws(s))
            } else {
                by_sid.remove(&s.sid);
                agent.closed(&s);
                drop(s);
                give_back_memory();
                None
            }
        }
        other => other,
    };
    match keep {
        Some(c) => conns[key] = c,
        None => {
            conns.remove(key);
        }
    }
}

/// Returns freed heap pages to the OS. A controller's session ends with its
/// tests' sample vectors and socket buffers freed, but glibc keeps the pages
/// in its arenas: an agent that had served a whole `npm run bench` stayed at
/// 13.7 MB RSS without this.
fn give_back_memory() {
    #[cfg(target_env = "gnu")]
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
    mut sock: TcpStream,
    mut head: Vec<u8>,
    mut out: Vec<u8>,
    mut sent: usize,
    allowed: &Arc<Vec<String>>,
    cfg: WebSocketConfig,
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
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&head) {
            Ok(httparse::Status::Partial) if head.len() <= MAX_HEAD => {
                return Some(Conn::Http {
                    sock,
                    head,
                    out,
                    sent,
                });
            }
            Ok(httparse::Status::Partial) => {
                out = http::simple(
                    431,
                    "Request Header Fields Too Large",
                    "request head too large\n",
                )
            }
            Err(_) => out = http::simple(400, "Bad Request", "malformed HTTP request\n"),
            Ok(httparse::Status::Complete(_)) => {
                let header = |name: &str| {
                    req.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                        .unwrap_or_default()
                };
                let path = req.path.unwrap_or("/").to_string();
                let method = req.method.unwrap_or("").to_string();
                if header("upgrade").contains("websocket") {
                    if path.split('?').next() != Some("/ws") {
                        out = http::simple(404, "Not Found", "the control WebSocket is at /ws\n");
                    } else {
                        let replay = Replay {
                            pre: head,
                            pos: 0,
                            inner: sock,
                        };
                        let cb = OriginCheck {
                            allowed: allowed.clone(),
                        };
                        return handshake(tungstenite::accept_hdr_with_config(
                            replay,
                            cb,
                            Some(cfg),
                        ));
                    }
                } else {
                    out = http::respond(&method, &path, header("accept-encoding").contains("gzip"));
                }
            }
        }
    }
    while sent < out.len() {
        match sock.write(&out[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Some(Conn::Http {
                    sock,
                    head,
                    out,
                    sent,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    None
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
