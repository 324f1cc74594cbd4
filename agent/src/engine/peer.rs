//! Agent-to-agent set-up on the serving agent's data port (see
//! `meshperf_protocol::peer` for the exchange). The serving side accepts only
//! connections that present the one-time session key of the test it prepared,
//! within a short window; the key is spent once the control line is accepted.
//!
//! The serving side's accept loop holds every pending connection at once
//! (non-blocking, one mio `Poll`), each with its own partial line or
//! preamble, so a stranger that connects and dribbles bytes holds nothing
//! but its own slot: the right key wins whatever strangers do, the window
//! is a hard bound and cancel is seen within [`TICK`].

use super::ctx::{TestCtx, ACCEPT_WINDOW};
use super::error::TestError;
use crate::platform::{RawSock, Watch};
use hmac::{Hmac, Mac};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, TcpSocketParams};
use meshperf_protocol::peer::{
    self as wire, PeerDone, PeerHello, PeerReply, KEY_LEN, PREAMBLE_LEN,
};
use mio::{Events, Interest, Poll, Token};
use serde::de::DeserializeOwned;
use serde::Serialize;
use slab::Slab;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<sha2::Sha256>;

/// The HMAC-SHA256 tag of `signed` with a session key, in hex (the `mac`
/// of [`PeerHello`] and [`PeerReply`]).
pub fn tag(key: &[u8; KEY_LEN], signed: &[u8]) -> String {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(signed);
    hex::encode(m.finalize().into_bytes())
}

/// Whether `mac` (hex) is the tag of `signed` with `key`, compared in
/// constant time.
pub fn tag_ok(key: &[u8; KEY_LEN], signed: &[u8], mac: &str) -> bool {
    let mut bytes = [0u8; 32];
    if hex::decode_to_slice(mac, &mut bytes).is_err() {
        return false;
    }
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(signed);
    m.verify_slice(&bytes).is_ok()
}

/// The data-connection preamble of stream `idx`: a 16-byte tag (HMAC-SHA256
/// with the session key over a label and the index, cut to 16 bytes) and the
/// index (u32 LE). It proves the key without sending it: whoever watches the
/// wire learns no key, and a copy of it names the same stream, which the
/// serving side takes once.
pub fn preamble(key: &[u8; KEY_LEN], idx: u32) -> [u8; PREAMBLE_LEN] {
    let mut p = [0u8; PREAMBLE_LEN];
    p[..KEY_LEN].copy_from_slice(&preamble_tag(key, idx));
    p[KEY_LEN..].copy_from_slice(&idx.to_le_bytes());
    p
}

fn preamble_tag(key: &[u8; KEY_LEN], idx: u32) -> [u8; KEY_LEN] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(b"meshperf data connection\n");
    m.update(&idx.to_le_bytes());
    let full = m.finalize().into_bytes();
    full[..KEY_LEN]
        .try_into()
        .expect("SHA-256 is longer than a key")
}

/// The stream index a preamble names, if its tag is right (compared in
/// constant time).
pub fn preamble_index(key: &[u8; KEY_LEN], pre: &[u8; PREAMBLE_LEN]) -> Option<u32> {
    let idx = u32::from_le_bytes(pre[KEY_LEN..].try_into().expect("4 bytes"));
    bool::from(pre[..KEY_LEN].ct_eq(&preamble_tag(key, idx))).then_some(idx)
}

/// A key for a second exchange of the same test (latency_under_load's
/// download streams, opened the other way): HMAC-SHA256 with the session key
/// over `label`, cut to a key's length. Both agents derive it; it never
/// travels.
pub fn derive_key(key: &[u8; KEY_LEN], label: &str) -> [u8; KEY_LEN] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(label.as_bytes());
    m.finalize().into_bytes()[..KEY_LEN]
        .try_into()
        .expect("SHA-256 is longer than a key")
}

/// What a sealed control line's tag covers: a label, who sent it, its
/// place among that side's sealed lines, and the line.
fn line_signed(from_driver: bool, seq: u64, json: &[u8]) -> Vec<u8> {
    let who = if from_driver { "driver" } else { "server" };
    let mut v = format!("meshperf peer line\n{who}\n{seq}\n").into_bytes();
    v.extend_from_slice(json);
    v
}

/// The tags of a control connection after hello and reply: every line
/// after them carries one (see [`Line::seal`]).
struct Seal {
    key: [u8; KEY_LEN],
    driver: bool,
    sent: u64,
    got: u64,
}

const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the accept loop looks at cancel when nothing happens.
const TICK: Duration = Duration::from_millis(50);
/// Connections the accept loop holds at once; past it the oldest goes.
const MAX_PENDING: usize = 64;

/// The connections of one test side once set-up is done.
pub struct Connected {
    pub control: Line,
    /// Data connections, index = stream index.
    pub data: Vec<TcpStream>,
    pub peer_ip: IpAddr,
}

/// The agent-to-agent control connection: JSON lines of at most
/// [`wire::MAX_LINE`] bytes, read through a buffer, so what follows a
/// line stays buffered for the next read.
pub struct Line {
    r: BufReader<TcpStream>,
    /// The start of a line not complete yet.
    partial: Vec<u8>,
    seal: Option<Seal>,
}

impl Line {
    pub fn new(s: TcpStream) -> Line {
        Line {
            r: BufReader::new(s),
            partial: Vec::new(),
            seal: None,
        }
    }

    /// From now on every line sent carries a tag and every line read must:
    /// `JSON TAB HEX NEWLINE`, the tag an HMAC-SHA256 with the session key
    /// over the sender's side, the line's number among that side's sealed
    /// lines and the JSON. Whoever sits between the agents can neither alter,
    /// drop, reorder, replay nor reflect a line unnoticed. Both sides seal
    /// after the hello and its reply (themselves tagged), `driver` on the
    /// driving agent.
    pub fn seal(&mut self, key: &[u8; KEY_LEN], driver: bool) {
        self.seal = Some(Seal {
            key: *key,
            driver,
            sent: 0,
            got: 0,
        });
    }

    fn encode<T: Serialize>(&mut self, v: &T) -> Vec<u8> {
        let mut line = serde_json::to_vec(v).expect("serializes");
        if let Some(seal) = &mut self.seal {
            let mac = tag(&seal.key, &line_signed(seal.driver, seal.sent, &line));
            seal.sent += 1;
            line.push(b'\t');
            line.extend_from_slice(mac.as_bytes());
        }
        line.push(b'\n');
        line
    }

    /// A line as read, its tag checked and taken off when sealed.
    fn open<'a>(&mut self, line: &'a [u8]) -> io::Result<&'a [u8]> {
        let Some(seal) = &mut self.seal else {
            return Ok(line);
        };
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a control line without its right tag (HMAC-SHA256 with the session key): altered, dropped or replayed on the way, or from another release",
            )
        };
        let tab = line.iter().rposition(|&b| b == b'\t').ok_or_else(bad)?;
        let (json, mac) = (&line[..tab], &line[tab + 1..]);
        let mac = std::str::from_utf8(mac).map_err(|_| bad())?;
        if !tag_ok(&seal.key, &line_signed(!seal.driver, seal.got, json), mac) {
            return Err(bad());
        }
        seal.got += 1;
        Ok(json)
    }

    /// The connection (its addresses, its options).
    pub fn stream(&self) -> &TcpStream {
        self.r.get_ref()
    }

    /// Whether the peer has sent something or closed its end, without
    /// waiting. Mid-test, when a side sends nothing on the line until the
    /// test's end, that means the peer ended (a limit, a failure, a
    /// cancel); an ICMP error on the test's UDP flow, which anyone who
    /// knows its addresses can forge, does not (issue 40).
    pub fn peer_spoke(&self) -> bool {
        if !self.r.buffer().is_empty() || !self.partial.is_empty() {
            return true;
        }
        let s = self.stream();
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let r = s.peek(&mut [0u8; 1]);
        let _ = s.set_nonblocking(false);
        match r {
            Ok(_) => true,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
        }
    }

    /// The connection's descriptor, to watch it from another thread (what
    /// is already buffered here does not make it readable).
    pub fn fd(&self) -> RawSock {
        crate::platform::raw(self.stream())
    }

    /// Sends one line (blocking, at most [`IO_TIMEOUT`]).
    pub fn send<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        let s = self.stream();
        s.set_nonblocking(false)?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        let line = self.encode(v);
        (&mut self.stream()).write_all(&line)
    }

    /// Sends one line if the socket takes it at once (a few dozen bytes
    /// into a fresh connection always fit); never waits.
    fn send_now<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        let line = self.encode(v);
        match self.stream().write(&line)? {
            n if n == line.len() => Ok(()),
            _ => Err(io::ErrorKind::WriteZero.into()),
        }
    }

    /// Reads until a line is complete (`Some`, without its newline), or
    /// until the socket would block or its read timeout passes (`None`;
    /// what came so far is kept). End of stream and a line longer than
    /// [`wire::MAX_LINE`] are errors.
    fn read_some(&mut self) -> io::Result<Option<Vec<u8>>> {
        read_line(&mut self.r, &mut self.partial)
    }

    /// Waits up to `wait` for a line (zero: only what is there already);
    /// `Ok(None)` if none came. End of stream and bad JSON are errors (bad
    /// JSON as `InvalidData`).
    pub fn recv<T: DeserializeOwned>(&mut self, wait: Duration) -> io::Result<Option<T>> {
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let s = self.stream();
            if left.is_zero() {
                s.set_nonblocking(true)?;
            } else {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(left))?;
            }
            match self.read_some()? {
                Some(line) => {
                    return serde_json::from_slice(self.open(&line)?)
                        .map(Some)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
                }
                None if Instant::now() >= end => return Ok(None),
                None => {}
            }
        }
    }

    /// Waits up to `wait` for a line of type `T`, failing with `what` as a
    /// `peer_timeout` if none comes.
    pub fn expect<T: DeserializeOwned>(
        &mut self,
        wait: Duration,
        what: &str,
    ) -> Result<T, TestError> {
        match self.recv(wait) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(TestError::new(ErrorCode::PeerTimeout, what)),
            Err(e) => Err(gone(e)),
        }
    }
}

/// [`Line`]'s framing on any buffered reader: reads until a line is
/// complete (`Some`, without its newline) or until the reader would block
/// or time out (`None`; what came so far stays in `partial` for the next
/// call). End of stream and a line longer than [`wire::MAX_LINE`] are
/// errors. Pure on an in-memory reader: the fuzz target `peer_lines` feeds it.
pub fn read_line<R: BufRead>(r: &mut R, partial: &mut Vec<u8>) -> io::Result<Option<Vec<u8>>> {
    loop {
        let room = (wire::MAX_LINE + 1 - partial.len()) as u64;
        match r.by_ref().take(room).read_until(b'\n', partial) {
            Ok(_) if partial.last() == Some(&b'\n') => {
                let mut line = std::mem::take(partial);
                line.pop();
                return Ok(Some(line));
            }
            Ok(_) if partial.len() > wire::MAX_LINE => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("control line longer than {} bytes", wire::MAX_LINE),
                ))
            }
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed",
                ))
            }
            Ok(_) => {} // end of stream: the next read says so
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The peer agent's control connection failed: it went away, or (bad
/// JSON, an unexpected line) it does not follow the protocol.
pub fn gone(e: io::Error) -> TestError {
    if e.kind() == io::ErrorKind::InvalidData {
        return TestError::new(
            ErrorCode::Protocol,
            format!("the peer agent sent a bad control line: {e}"),
        );
    }
    TestError::new(
        ErrorCode::PeerGone,
        format!("the peer agent went away before the end of the test ({e})"),
    )
}

/// A line that is not the one the protocol expects next.
pub fn unexpected<T: std::fmt::Debug>(expected: &str, got: &T) -> TestError {
    TestError::new(
        ErrorCode::Protocol,
        format!("expected {expected} from the peer agent, got {got:?}"),
    )
}

/// The serving side's TCP data listener on `ip` (within `--data-ports` when
/// given) with the test's socket options, and its port: what every TCP
/// kind's `prepare` opens.
pub fn data_listener(
    ip: IpAddr,
    ports: Option<(u16, u16)>,
    p: &TcpSocketParams,
) -> Result<(TcpListener, u16), super::error::Refusal> {
    let listener = super::bind::on_data_port(ports, |port| listen(ip, port, p))
        .map_err(|e| (ErrorCode::Io, format!("cannot open a data listener: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| (ErrorCode::Io, e.to_string()))?
        .port();
    Ok((listener, port))
}

/// Opens the data listener of a prepared test, with buffer sizes set before
/// `listen` so accepted sockets inherit them.
pub fn listen(ip: IpAddr, port: u16, p: &TcpSocketParams) -> io::Result<TcpListener> {
    let sock = Socket::new(
        Domain::for_address(SocketAddr::new(ip, port)),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    sock.set_reuse_address(true)?;
    super::sockopt::pre_connect(&sock, p)?;
    sock.bind(&SocketAddr::new(ip, port).into())?;
    // Room for a tcp_crr's flows connecting at once (the kernel caps it at
    // net.core.somaxconn); a full backlog drops SYNs, which then wait a
    // second to be sent again.
    sock.listen(4096)?;
    Ok(sock.into())
}

/// A fresh one-time session key.
pub fn new_key() -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    getrandom::fill(&mut k).expect("the OS random source works");
    k
}

/// A connection the accept loop holds until it has said who it is.
struct Pending {
    from: IpAddr,
    /// Arrival order (the oldest goes first when the loop is full).
    seq: u64,
    what: Awaiting,
    /// The connection as the accept loop's poll watches it.
    watch: Watch,
}

enum Awaiting {
    /// Before the control connection: the hello line.
    Hello(Line),
    /// After it: the 20-byte data preamble.
    Preamble {
        s: TcpStream,
        pre: [u8; PREAMBLE_LEN],
        got: usize,
    },
}

/// Connections per source address that came to nothing, for the error.
#[derive(Default)]
struct Strangers(BTreeMap<IpAddr, u32>);

impl Strangers {
    fn add(&mut self, ip: IpAddr) {
        *self.0.entry(ip).or_default() += 1;
    }

    /// "; 1 connection from 127.0.0.1 {what}", or nothing.
    fn describe(&self, what: &str) -> String {
        const SHOWN: usize = 3;
        let mut parts: Vec<String> = self
            .0
            .iter()
            .take(SHOWN)
            .enumerate()
            .map(|(i, (ip, n))| match (i, n) {
                (0, 1) => format!("1 connection from {ip}"),
                (0, n) => format!("{n} connections from {ip}"),
                (_, n) => format!("{n} from {ip}"),
            })
            .collect();
        if parts.is_empty() {
            return String::new();
        }
        if self.0.len() > SHOWN {
            let rest: u32 = self.0.values().skip(SHOWN).sum();
            parts.push(format!(
                "{rest} from {} other addresses",
                self.0.len() - SHOWN
            ));
        }
        format!("; {} {what}", parts.join(", "))
    }
}

/// The serving side's accept loop (see the module docs).
struct Acceptor<'a> {
    key: &'a [u8; KEY_LEN],
    kind: Kind,
    poll: Poll,
    pending: Slab<Pending>,
    next_seq: u64,
    control: Option<(Line, IpAddr)>,
    data: Vec<Option<TcpStream>>,
    bad_hello: Strangers,
    bad_data: Strangers,
}

const LISTENER: Token = Token(usize::MAX);

fn io_failed(e: io::Error) -> TestError {
    TestError::new(ErrorCode::Io, format!("data port: {e}"))
}

/// Serving side: waits for the peer's control line, then its data
/// connections. From then on the side has `--max-duration` to finish.
pub fn accept(
    ctx: &TestCtx,
    listener: TcpListener,
    key: &[u8; KEY_LEN],
    kind: Kind,
    streams: usize,
) -> Result<Connected, TestError> {
    let c = accept_peer(ctx, listener, key, kind, streams)?;
    ctx.limit.begin();
    noted(ctx, &c);
    Ok(c)
}

fn accept_peer(
    ctx: &TestCtx,
    listener: TcpListener,
    key: &[u8; KEY_LEN],
    kind: Kind,
    streams: usize,
) -> Result<Connected, TestError> {
    let deadline = Instant::now() + ACCEPT_WINDOW;
    listener.set_nonblocking(true).map_err(io_failed)?;
    let mut a = Acceptor {
        key,
        kind,
        poll: Poll::new().map_err(io_failed)?,
        pending: Slab::new(),
        next_seq: 0,
        control: None,
        data: (0..streams).map(|_| None).collect(),
        bad_hello: Strangers::default(),
        bad_data: Strangers::default(),
    };
    let mut watch = Watch::listener(&listener).map_err(io_failed)?;
    a.poll
        .registry()
        .register(&mut watch, LISTENER, Interest::READABLE)
        .map_err(io_failed)?;
    let mut events = Events::with_capacity(64);
    loop {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(a.timed_out());
        }
        match a.poll.poll(&mut events, Some(TICK.min(deadline - now))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_failed(e)),
        }
        // The listener first, every time: a backlog left by a full loop
        // is taken as soon as there is room.
        if let Some(done) = a.accept_all(&listener)? {
            return Ok(done);
        }
        watch.rearm(a.poll.registry());
        for ev in events.iter() {
            if ev.token() != LISTENER {
                if let Some(done) = a.ready(ev.token().0) {
                    return Ok(done);
                }
                if let Some(p) = a.pending.get_mut(ev.token().0) {
                    p.watch.rearm(a.poll.registry());
                }
            }
        }
    }
}

impl Acceptor<'_> {
    /// Takes every connection waiting on the listener and reads what each
    /// has sent already.
    fn accept_all(&mut self, listener: &TcpListener) -> Result<Option<Connected>, TestError> {
        loop {
            let (s, addr) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                // Out of descriptors: free the oldest slot, try again next round.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    self.drop_oldest();
                    return Ok(None);
                }
                Err(e) => return Err(TestError::new(ErrorCode::Io, format!("accept failed: {e}"))),
            };
            let from = addr.ip();
            if let Some((_, peer)) = &self.control {
                if from != *peer {
                    self.bad_data.add(from); // data only from the control peer
                    continue;
                }
            }
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            if self.pending.len() >= MAX_PENDING {
                self.drop_oldest();
            }
            let what = match self.control {
                None => Awaiting::Hello(Line::new(s)),
                Some(_) => Awaiting::Preamble {
                    s,
                    pre: [0; PREAMBLE_LEN],
                    got: 0,
                },
            };
            let watch = match &what {
                Awaiting::Hello(l) => Watch::stream(l.stream()),
                Awaiting::Preamble { s, .. } => Watch::stream(s),
            };
            let Ok(watch) = watch else { continue };
            self.next_seq += 1;
            let p = Pending {
                from,
                seq: self.next_seq,
                what,
                watch,
            };
            let entry = self.pending.vacant_entry();
            let i = entry.key();
            entry.insert(p);
            if self
                .poll
                .registry()
                .register(&mut self.pending[i].watch, Token(i), Interest::READABLE)
                .is_err()
            {
                self.pending.remove(i);
                continue;
            }
            // What came with the connection is read now.
            if let Some(done) = self.ready(i) {
                return Ok(Some(done));
            }
        }
    }

    /// Closes pending connection `i`, counting it as a stranger's.
    fn reject(&mut self, i: usize) {
        let p = self.remove(i);
        match p.what {
            Awaiting::Hello(_) => self.bad_hello.add(p.from),
            Awaiting::Preamble { .. } => self.bad_data.add(p.from),
        }
    }

    fn remove(&mut self, i: usize) -> Pending {
        let mut p = self.pending.remove(i);
        let _ = self.poll.registry().deregister(&mut p.watch);
        p
    }

    fn drop_oldest(&mut self) {
        if let Some(i) = self
            .pending
            .iter()
            .min_by_key(|(_, p)| p.seq)
            .map(|(i, _)| i)
        {
            self.reject(i);
        }
    }

    /// Reads what pending connection `i` has; returns the connections once
    /// the set-up is complete.
    fn ready(&mut self, i: usize) -> Option<Connected> {
        let Some(p) = self.pending.get_mut(i) else {
            return None; // a stale event
        };
        match &mut p.what {
            Awaiting::Hello(line) => match line.read_some() {
                Ok(None) => None,
                Ok(Some(bytes)) => self.hello(i, &bytes),
                Err(_) => {
                    self.reject(i);
                    None
                }
            },
            Awaiting::Preamble { s, pre, got } => {
                while *got < PREAMBLE_LEN {
                    match s.read(&mut pre[*got..]) {
                        Ok(0) => break,
                        Ok(n) => *got += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                        Err(_) => break,
                    }
                }
                self.preamble(i)
            }
        }
    }

    /// A whole hello line arrived on pending connection `i`.
    fn hello(&mut self, i: usize, bytes: &[u8]) -> Option<Connected> {
        let reply = answer_hello(bytes, self.key, self.kind);
        let p = self.remove(i);
        let Awaiting::Hello(mut line) = p.what else {
            unreachable!("hello lines come only from connections awaiting one")
        };
        if line.send_now(&reply).is_err()
            || !reply.ok
            || line.stream().set_nonblocking(false).is_err()
        {
            self.bad_hello.add(p.from);
            return None;
        }
        line.seal(self.key, false);
        if self.data.is_empty() {
            // UDP tests: the control connection is all there is.
            return Some(Connected {
                control: line,
                data: Vec::new(),
                peer_ip: p.from,
            });
        }
        // The key is spent: whoever else is waiting with a hello goes.
        let waiting: Vec<usize> = self.pending.iter().map(|(j, _)| j).collect();
        for j in waiting {
            self.reject(j);
        }
        self.control = Some((line, p.from));
        None
    }

    /// Pending data connection `i` has sent its preamble (or gave up).
    fn preamble(&mut self, i: usize) -> Option<Connected> {
        let Awaiting::Preamble { pre, got, .. } = &self.pending[i].what else {
            unreachable!("preambles come only from data connections")
        };
        let idx = preamble_index(self.key, pre).map_or(usize::MAX, |i| i as usize);
        if *got < PREAMBLE_LEN || idx >= self.data.len() || self.data[idx].is_some() {
            self.reject(i);
            return None;
        }
        let Awaiting::Preamble { s, .. } = self.remove(i).what else {
            unreachable!()
        };
        if s.set_nonblocking(false).is_err() {
            return None;
        }
        self.data[idx] = Some(s);
        if !self.data.iter().all(Option::is_some) {
            return None;
        }
        let (control, peer_ip) = self.control.take().expect("data follow the control line");
        Some(Connected {
            control,
            data: std::mem::take(&mut self.data)
                .into_iter()
                .map(Option::unwrap)
                .collect(),
            peer_ip,
        })
    }

    /// The error at the end of the window: what arrived and what did not.
    fn timed_out(mut self) -> TestError {
        let waiting: Vec<usize> = self.pending.iter().map(|(j, _)| j).collect();
        for j in waiting {
            self.reject(j);
        }
        let secs = ACCEPT_WINDOW.as_secs();
        let message = match &self.control {
            None => format!(
                "no peer presented the test's key within {secs} s{}",
                self.bad_hello.describe("sent no valid hello")
            ),
            Some(_) => format!(
                "the peer agent opened {} of {} data connections within {secs} s{}",
                self.data.iter().filter(|d| d.is_some()).count(),
                self.data.len(),
                self.bad_data.describe("sent no valid preamble")
            ),
        };
        TestError::new(ErrorCode::PeerTimeout, message)
    }
}

/// The serving side's answer to a hello line (`bytes`, without its
/// newline) for the test prepared with `key` as `kind`: `ok` only for the
/// right tag (HMAC with `key`) and kind; the reply is tagged too. Pure:
/// the fuzz target `peer_lines` calls it.
pub fn answer_hello(bytes: &[u8], key: &[u8; KEY_LEN], kind: Kind) -> PeerReply {
    let hello: Result<PeerHello, _> = serde_json::from_slice(bytes);
    let good_key = hello
        .as_ref()
        .is_ok_and(|h| tag_ok(key, &h.signed(), &h.mac));
    let refusal = |code: ErrorCode, message: String| PeerReply {
        ok: false,
        code: Some(code),
        message: Some(message),
        mac: String::new(),
    };
    let mut reply = match &hello {
        Ok(h) if good_key && h.kind == kind => PeerReply {
            ok: true,
            code: None,
            message: None,
            mac: String::new(),
        },
        Ok(h) if good_key => refusal(
            ErrorCode::KindMismatch,
            format!(
                "this test was prepared as {}, not {}",
                kind.name(),
                h.kind.name()
            ),
        ),
        Ok(h) if h.mac.is_empty() => refusal(
            ErrorCode::BadKey,
            "the hello has no tag (mac): the peer agent is of an older release; run the same meshperf on both".into(),
        ),
        Ok(_) => refusal(
            ErrorCode::BadKey,
            "the hello's tag (HMAC-SHA256 with the session key) is wrong: another test's or a spent key, or a line altered on the way".into(),
        ),
        Err(e) => refusal(ErrorCode::BadKey, format!("not a hello line: {e}")),
    };
    let hello_mac = hello.as_ref().map(|h| h.mac.as_str()).unwrap_or("");
    reply.mac = tag(key, &reply.signed(hello_mac));
    reply
}

/// Driving side: sends the control line, then opens the data connections.
/// From then on the side has `--max-duration` to finish.
pub fn connect(
    ctx: &TestCtx,
    peer: &PeerAddr,
    kind: Kind,
    p: &TcpSocketParams,
    streams: usize,
) -> Result<Connected, TestError> {
    let c = connect_peer(ctx, peer, kind, p, streams)?;
    ctx.limit.begin();
    noted(ctx, &c);
    Ok(c)
}

/// The side's own address toward its peer, for its summary's `link`.
fn noted(ctx: &TestCtx, c: &Connected) {
    if let Ok(a) = c.control.stream().local_addr() {
        let _ = ctx.local.set(a.ip());
    }
}

fn connect_peer(
    ctx: &TestCtx,
    peer: &PeerAddr,
    kind: Kind,
    p: &TcpSocketParams,
    streams: usize,
) -> Result<Connected, TestError> {
    let key = wire::parse_key(&peer.key)
        .ok_or_else(|| TestError::new(ErrorCode::BadRequest, "peer.key must be 32 hex digits"))?;
    let host = super::bind::target_host(p.server_bind, peer);
    let addrs = (host.as_str(), peer.port).to_socket_addrs().map_err(|e| {
        TestError::new(
            ErrorCode::Unreachable,
            format!("cannot resolve peer {host}: {e}"),
        )
    })?;
    let addr = super::bind::pick(addrs, p.client_bind).ok_or_else(|| {
        TestError::new(
            ErrorCode::Unreachable,
            format!("peer {host} has no address"),
        )
    })?;
    let unreachable = |e: io::Error| {
        TestError::new(
            ErrorCode::Unreachable,
            format!("cannot reach peer agent at {addr}: {e}"),
        )
    };
    let mut control = Line::new(dial(addr, p, false).map_err(unreachable)?);
    let mut hello = PeerHello {
        kind,
        mac: String::new(),
    };
    hello.mac = tag(&key, &hello.signed());
    control.send(&hello).map_err(unreachable)?;
    let reply: PeerReply = match control.recv(IO_TIMEOUT) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(unreachable(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {} s", IO_TIMEOUT.as_secs()),
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return Err(TestError::new(
                ErrorCode::Protocol,
                format!("bad reply from peer agent: {e}"),
            ))
        }
        Err(e) => return Err(unreachable(e)),
    };
    if !reply.ok {
        // A refusal is reported as told (untagged or not: whoever can
        // forge one could as well cut the connection).
        return Err(TestError::new(
            ErrorCode::PeerRefused,
            format!(
                "peer agent refused the test: {}",
                reply.message.unwrap_or_else(|| "no reason given".into())
            ),
        ));
    }
    if !tag_ok(&key, &reply.signed(&hello.mac), &reply.mac) {
        return Err(TestError::new(
            ErrorCode::Protocol,
            "the peer agent's reply has a wrong tag (HMAC-SHA256 with the session key):              it was altered on the way or comes from another release",
        ));
    }
    control.seal(&key, true);
    let mut data = Vec::with_capacity(streams);
    for i in 0..streams {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        let mut s = dial(addr, p, true).map_err(unreachable)?;
        s.write_all(&preamble(&key, i as u32))
            .map_err(unreachable)?;
        data.push(s);
    }
    Ok(Connected {
        control,
        data,
        peer_ip: addr.ip(),
    })
}

/// Opens a connection to `addr` from `client_bind` (if set); data sockets
/// get their buffer sizes before connecting.
fn dial(addr: SocketAddr, p: &TcpSocketParams, data: bool) -> io::Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if data {
        super::sockopt::pre_connect(&sock, p)?;
    }
    if let Some(ip) = p.client_bind {
        sock.bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| io::Error::new(e.kind(), format!("client_bind {ip}: {e}")))?;
    }
    sock.connect_timeout(&addr.into(), IO_TIMEOUT)?;
    Ok(sock.into())
}

/// End-of-test exchange: tells the peer how many bytes this side moved and
/// reads the same from it.
/// The start of a stream test's transfer, both sides at once: sends
/// [`wire::PeerGo`], then waits for the peer's (see there why). Returns
/// when ours left: no byte of the peer's can have been sent before that,
/// so a receiver's clock started then can only run long, never short.
pub fn exchange_go(control: &mut Line) -> Result<Instant, TestError> {
    let sent = Instant::now();
    control.send(&wire::PeerGo { go: true }).map_err(gone)?;
    let go: wire::PeerGo = control.expect(
        IO_TIMEOUT,
        "the peer agent did not start the transfer within 5 s",
    )?;
    if !go.go {
        return Err(TestError::new(
            ErrorCode::Protocol,
            "the peer agent would not start the transfer",
        ));
    }
    Ok(sent)
}

pub fn exchange_done(control: &mut Line, bytes: u64) -> Result<PeerDone, TestError> {
    control
        .send(&PeerDone { done: true, bytes })
        .map_err(gone)?;
    control.expect(
        Duration::from_secs(15),
        "the peer agent sent no end line within 15 s",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (a, l.accept().unwrap().0)
    }

    #[test]
    fn lines_read_ahead_are_kept_for_the_next_read() {
        let (mut w, r) = pair();
        // Two lines and the start of a third in one write: the buffer reads
        // past the first, and nothing after it may be lost.
        w.write_all(b"{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        let mut line = Line::new(r);
        let wait = Duration::from_secs(2);
        assert_eq!(line.recv::<Value>(wait).unwrap(), Some(json!({"a": 1})));
        assert_eq!(line.recv::<Value>(wait).unwrap(), Some(json!({"b": 2})));
        assert_eq!(line.recv::<Value>(Duration::ZERO).unwrap(), None);
        w.write_all(b"3}\n").unwrap();
        assert_eq!(line.recv::<Value>(wait).unwrap(), Some(json!({"c": 3})));
        drop(w);
        let e = line.recv::<Value>(wait).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    /// The preamble proves the key without carrying it; the old form (the
    /// key in clear) and another key's are refused; a copy names the same
    /// stream (which the serving side takes once).
    #[test]
    fn a_preamble_proves_the_key_without_sending_it() {
        let key = [0x5a; KEY_LEN];
        let p = preamble(&key, 3);
        assert!(!p.windows(4).any(|w| w == &key[..4]), "no part of the key");
        assert_eq!(preamble_index(&key, &p), Some(3));
        assert_eq!(preamble_index(&[0x5b; KEY_LEN], &p), None);
        let mut clear = [0u8; PREAMBLE_LEN];
        clear[..KEY_LEN].copy_from_slice(&key);
        assert_eq!(preamble_index(&key, &clear), None, "the old form");
        let mut other = p;
        other[KEY_LEN] = 4; // the tag of 3 with the index 4
        assert_eq!(preamble_index(&key, &other), None);
    }

    /// A tag is its 64 hex digits and nothing else: the fuzzer's hello had
    /// the right tag with one byte spelled "+2" (u8::from_str_radix reads a
    /// sign), and was accepted.
    #[test]
    fn a_tag_with_a_sign_in_a_byte_is_refused() {
        let key = [9u8; KEY_LEN];
        // A message whose tag has a byte below 0x10 ("0x" spelled "+x").
        let (msg, good, i) = (0..)
            .find_map(|n| {
                let msg = format!("signed {n}");
                let good = tag(&key, msg.as_bytes());
                let i = (0..64).step_by(2).find(|&i| &good[i..i + 1] == "0")?;
                Some((msg, good, i))
            })
            .unwrap();
        let msg = msg.as_bytes();
        assert!(tag_ok(&key, msg, &good));
        assert!(tag_ok(&key, msg, &good.to_uppercase()));
        let signed = format!("{}+{}", &good[..i], &good[i + 1..]);
        assert_eq!(signed.len(), 64);
        assert!(!tag_ok(&key, msg, &signed));
        assert!(!tag_ok(&key, msg, &good[..62]));
    }

    /// After `seal`, lines carry tags: a line that arrives altered, twice,
    /// out of order, or reflected back to its sender is refused.
    #[test]
    fn sealed_lines_cannot_be_altered_replayed_reordered_or_reflected() {
        let key = [7u8; KEY_LEN];
        let wait = Duration::from_secs(2);
        let sealed = |driver: bool| {
            let (a, b) = pair();
            let mut tx = Line::new(a);
            tx.seal(&key, driver);
            let mut rx = Line::new(b);
            rx.seal(&key, !driver);
            (tx, rx)
        };
        let raw = |tx: &mut Line, v: Value| tx.encode(&v);
        // Right lines pass, in order.
        let (mut tx, mut rx) = sealed(true);
        tx.send(&json!({"op": "go"})).unwrap();
        tx.send(&json!({"op": "done", "sent": 5})).unwrap();
        assert_eq!(rx.recv::<Value>(wait).unwrap(), Some(json!({"op": "go"})));
        assert_eq!(
            rx.recv::<Value>(wait).unwrap(),
            Some(json!({"op": "done", "sent": 5}))
        );
        // Bytes as a man in the middle would pass them on, to a fresh receiver.
        let feed = |driver: bool, lines: Vec<Vec<u8>>| {
            let (a, b) = pair();
            let mut rx = Line::new(b);
            rx.seal(&key, !driver);
            let mut w = a;
            for l in &lines {
                w.write_all(l).unwrap();
            }
            (0..lines.len())
                .map(|_| rx.recv::<Value>(wait).map_err(|e| e.kind()))
                .collect::<Vec<_>>()
        };
        let mut src = Line::new(pair().0);
        src.seal(&key, true);
        let first = raw(&mut src, json!({"sent": 5}));
        let second = raw(&mut src, json!({"sent": 6}));
        let bad: Result<Option<Value>, io::ErrorKind> = Err(io::ErrorKind::InvalidData);
        // Altered: one digit of the JSON changed.
        let mut altered = first.clone();
        let at = altered.iter().position(|&b| b == b'5').unwrap();
        altered[at] = b'9';
        assert_eq!(feed(true, vec![altered]), std::slice::from_ref(&bad));
        // Replayed: the first line twice.
        assert_eq!(
            feed(true, vec![first.clone(), first.clone()]),
            [Ok(Some(json!({"sent": 5}))), bad.clone()]
        );
        // Reordered, and the first dropped.
        assert_eq!(feed(true, vec![second.clone()]), std::slice::from_ref(&bad));
        // Reflected: the driver's own line back to the driver.
        assert_eq!(feed(false, vec![first.clone()]), std::slice::from_ref(&bad));
        // Untagged, as a peer of the release before sends it.
        assert_eq!(
            feed(true, vec![b"{\"sent\":5}\n".to_vec()]),
            std::slice::from_ref(&bad)
        );
    }

    #[test]
    fn a_line_longer_than_the_cap_is_refused() {
        let (mut w, r) = pair();
        let mut line = Line::new(r);
        std::thread::spawn(move || {
            let _ = w.write_all(&vec![b'x'; wire::MAX_LINE + 10]);
            std::thread::sleep(Duration::from_secs(1));
        });
        let e = line.recv::<Value>(Duration::from_secs(2)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        // A whole line of exactly the cap is fine; bad JSON is InvalidData.
        let (mut w, r) = pair();
        let mut line = Line::new(r);
        let mut max = vec![b' '; wire::MAX_LINE];
        max[..2].copy_from_slice(b"{}");
        max.push(b'\n');
        w.write_all(&max).unwrap();
        w.write_all(b"{oops\n").unwrap();
        let wait = Duration::from_secs(2);
        assert_eq!(line.recv::<Value>(wait).unwrap(), Some(json!({})));
        let e = line.recv::<Value>(wait).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(gone(e).code, ErrorCode::Protocol);
    }

    #[test]
    fn strangers_are_named_by_address_with_their_counts() {
        let mut s = Strangers::default();
        assert_eq!(s.describe("sent no valid hello"), "");
        s.add("127.0.0.1".parse().unwrap());
        assert_eq!(
            s.describe("sent no valid hello"),
            "; 1 connection from 127.0.0.1 sent no valid hello"
        );
        for ip in ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3", "::1"] {
            s.add(ip.parse().unwrap());
        }
        assert_eq!(
            s.describe("sent no valid preamble"),
            "; 2 connections from 10.0.0.1, 1 from 10.0.0.2, 1 from 10.0.0.3, \
             2 from 2 other addresses sent no valid preamble"
        );
    }
}
