//! `meshperf agent --iperf3 [ADDR:]PORT` (off by default): the agent
//! answers unmodified iperf3 clients (`iperf3 -c HOST -p PORT`), as
//! `iperf3 -s` does, within the agent's limits.
//!
//! iperf3's control protocol on a TCP connection: the client's 37-byte
//! cookie; the server's state bytes PARAM_EXCHANGE (then the client's
//! parameters, a 4-byte big-endian length and JSON), CREATE_STREAMS (the
//! client opens its data connections, each starting with the cookie; for
//! UDP it sends a datagram to the same port and the server answers it),
//! TEST_START, TEST_RUNNING; the client's TEST_END; EXCHANGE_RESULTS (the
//! client's results, then the server's, both length-prefixed JSON),
//! DISPLAY_RESULTS; the client's IPERF_DONE. A refused test gets
//! SERVER_ERROR and iperf3's error number, which the client prints
//! ("iperf3: error - ..."); the agent's record says what was refused in
//! one line naming the option ([`params`]).
//!
//! One test at a time, as `iperf3 -s`: a client arriving during another's
//! test gets ACCESS_DENIED ("the server is busy running a test"). Plain
//! threads: the listener's, one per connection while its cookie is read
//! (at most [`MAX_HANDSHAKES`]), the test's, and one per data stream.

pub mod params;
mod test;

use crate::log::log;
use meshperf_protocol::params::Limits;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// iperf3's cookie: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// Connections whose cookie is being read (or that wait [`BUSY_WAIT`])
/// at once; more are closed.
pub const MAX_HANDSHAKES: usize = 64;
/// Time a connection has to send its cookie, and a client to answer.
pub const HANDSHAKE: Duration = Duration::from_secs(10);

/// How long a new client waits for the test under way to end before it
/// is told the agent is busy.
pub const BUSY_WAIT: Duration = Duration::from_secs(1);

/// iperf3's state bytes.
pub mod state {
    pub const TEST_START: i8 = 1;
    pub const TEST_RUNNING: i8 = 2;
    pub const TEST_END: i8 = 4;
    pub const PARAM_EXCHANGE: i8 = 9;
    pub const CREATE_STREAMS: i8 = 10;
    pub const CLIENT_TERMINATE: i8 = 12;
    pub const EXCHANGE_RESULTS: i8 = 13;
    pub const DISPLAY_RESULTS: i8 = 14;
    pub const IPERF_DONE: i8 = 16;
    pub const ACCESS_DENIED: i8 = -1;
    pub const SERVER_ERROR: i8 = -2;
}

/// The test under way: its cookie, and where its data connections go.
struct Current {
    cookie: [u8; COOKIE_LEN],
    streams: Sender<TcpStream>,
}

/// What the listener's threads share.
struct Shared {
    limits: Limits,
    current: Mutex<Option<Current>>,
    handshakes: AtomicUsize,
    port: u16,
}

/// `[ADDR:]PORT` (a bare port listens on every IPv4 address; `[::]:PORT`
/// or `[::1]:PORT` for IPv6).
pub fn listen_arg(s: &str) -> Result<SocketAddr, String> {
    if let Ok(p) = s.parse::<u16>() {
        if p == 0 {
            return Err("port 0: give a port (iperf3's is 5201)".into());
        }
        return Ok(SocketAddr::from(([0, 0, 0, 0], p)));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not PORT or ADDR:PORT (e.g. 5201 or 127.0.0.1:5201)"))
}

/// Binds `at` and serves iperf3 clients on a thread of its own; the bound
/// address.
pub fn spawn(at: SocketAddr, limits: Limits) -> anyhow::Result<SocketAddr> {
    let l = TcpListener::bind(at)
        .map_err(|e| anyhow::anyhow!("--iperf3 {at}: {e}; choose another address or port"))?;
    let bound = l.local_addr()?;
    let shared = Arc::new(Shared {
        limits,
        current: Mutex::new(None),
        handshakes: AtomicUsize::new(0),
        port: bound.port(),
    });
    std::thread::Builder::new()
        .name("iperf3".into())
        .spawn(move || {
            for c in l.incoming() {
                match c {
                    Ok(c) => accepted(&shared, c),
                    Err(e) => {
                        log!("iperf3: accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        })?;
    Ok(bound)
}

/// A connection: its cookie read on a thread of its own (bounded), then
/// a data connection of the test under way, a new test, or refused.
fn accepted(shared: &Arc<Shared>, c: TcpStream) {
    if shared.handshakes.fetch_add(1, Ordering::Relaxed) >= MAX_HANDSHAKES {
        shared.handshakes.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let counted = shared.clone();
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("iperf3-conn".into())
        .spawn(move || {
            let peer = c.peer_addr().ok();
            let cookie = read_cookie(&c);
            let Some(cookie) = cookie else {
                shared.handshakes.fetch_sub(1, Ordering::Relaxed);
                return;
            };
            let lock = || shared.current.lock().unwrap_or_else(|e| e.into_inner());
            let mut cur = lock();
            // A client that comes as the last one sends IPERF_DONE waits
            // for its test to be let go (as iperf3 -s takes the next
            // connection once the last test is over).
            let until = std::time::Instant::now() + BUSY_WAIT;
            while cur.as_ref().is_some_and(|t| t.cookie != cookie)
                && std::time::Instant::now() < until
            {
                drop(cur);
                std::thread::sleep(Duration::from_millis(20));
                cur = lock();
            }
            // Counted until here: the cookie and the wait.
            shared.handshakes.fetch_sub(1, Ordering::Relaxed);
            match cur.as_ref() {
                Some(t) if t.cookie == cookie => {
                    let _ = t.streams.send(c);
                }
                Some(_) => {
                    drop(cur);
                    let mut c = c;
                    let _ = c.write_all(&[state::ACCESS_DENIED as u8]);
                    if let Some(p) = peer {
                        log!("iperf3: client {p} refused: busy with another client's test");
                    }
                }
                None => {
                    let (tx, rx) = std::sync::mpsc::channel();
                    *cur = Some(Current {
                        cookie,
                        streams: tx,
                    });
                    drop(cur);
                    test::run(c, peer, cookie, rx, &shared.limits, shared.port);
                    *lock() = None;
                }
            }
        });
    if spawned.is_err() {
        // The count was taken for a thread that never ran (the connection
        // went with its closure).
        counted.handshakes.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The 37 bytes a connection starts with, within [`HANDSHAKE`].
fn read_cookie(mut c: &TcpStream) -> Option<[u8; COOKIE_LEN]> {
    c.set_read_timeout(Some(HANDSHAKE)).ok()?;
    let mut b = [0u8; COOKIE_LEN];
    c.read_exact(&mut b).ok()?;
    Some(b)
}
