//! What `udp_rr` and `udp_stream` share: the datagram header, the JSON-line
//! exchange on the TCP control connection, socket set-up, and the binding of
//! the UDP flow to the peer that completed the TCP handshake.
//!
//! Binding: after the control line is accepted the serving side sends
//! `{"udp_port": P, "token": "<16 hex>"}` ([`UdpSetup`]). The driving side opens a UDP socket
//! on the local address of its control connection, `connect()`s it to the
//! serving agent and sends `H` (hello) datagrams carrying the token until the
//! serving side answers `{"bound": "<ip:port>"}` ([`UdpBound`]). The serving side takes the
//! first hello with the right token *from the control peer's IP* and from then
//! on talks only to that address and port. Its socket stays unconnected on
//! purpose: a connected socket would make the kernel drop (and ICMP-answer)
//! other senders, and meshperf could not count them; here every datagram's
//! source is checked and anything else is counted as `foreign` and never
//! answered.
//!
//! Addresses: the serving side's listener and UDP socket are both on
//! `server_bind` (default: the agent's listen address), the driving side's
//! control connection and UDP socket both on `client_bind` (default: what the
//! kernel picks for the control connection), so the UDP socket's family
//! always follows the peer's address (IPv4 or IPv6).

pub mod batch;
pub mod rr;
pub mod stream;

use super::lul::beside;
use super::sockopt::set_int;
use super::{bind, peer, EngineEnv, Refusal, TestCtx, TestError};
use meshperf_protocol::msg::{ErrorCode, Event, PeerAddr};
use meshperf_protocol::params::{Kind, Limits, ParamError, ProbeParams, UdpSocketParams};
use meshperf_protocol::peer::{UdpBound, UdpSetup};
use meshperf_protocol::summary::UdpSocketReport;
use serde::Serialize;
use serde_json::Value;
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::time::{Duration, Instant};

pub use super::peer::{gone, is_timeout, Line};
pub use meshperf_protocol::params::UDP_HEADER_LEN;
const HDR: usize = UDP_HEADER_LEN as usize;
/// How long binding may take.
const BIND_WINDOW: Duration = Duration::from_secs(5);

/// Datagram types (byte 3 of the header).
pub const HELLO: u8 = b'H';
pub const REQUEST: u8 = b'Q';
pub const REPLY: u8 = b'R';
pub const DATA: u8 = b'D';
/// udp_rr: the requester is done, its `done` line is on the control connection.
pub const END: u8 = b'E';

/// A decoded meshperf datagram header (layouts in
/// `meshperf_protocol::params::udp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hdr {
    pub kind: u8,
    /// The test's token; of a compact header, its low 32 bits.
    pub token: u64,
    pub seq: u64,
    pub t_ns: u64,
}

/// The compact header's length.
const SHORT: usize = meshperf_protocol::params::UDP_MIN_LEN as usize;

impl Hdr {
    /// Writes the header at the start of `buf`: the full form when the
    /// datagram has room for it (28 bytes), else the compact one.
    pub fn write(&self, buf: &mut [u8]) {
        if buf.len() >= HDR {
            buf[..3].copy_from_slice(b"MPU");
            buf[3] = self.kind;
            buf[4..12].copy_from_slice(&self.token.to_le_bytes());
            buf[12..20].copy_from_slice(&self.seq.to_le_bytes());
            buf[20..28].copy_from_slice(&self.t_ns.to_le_bytes());
        } else {
            buf[0] = b'm';
            buf[1] = self.kind;
            buf[2..6].copy_from_slice(&(self.token as u32).to_le_bytes());
            buf[6..10].copy_from_slice(&(self.seq as u32).to_le_bytes());
            buf[10..18].copy_from_slice(&self.t_ns.to_le_bytes());
        }
    }

    /// Reads a header; `None` if `buf` is not a meshperf datagram.
    pub fn read(buf: &[u8]) -> Option<Hdr> {
        let u = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().unwrap()) as u64;
        if buf.len() >= HDR && &buf[..3] == b"MPU" {
            Some(Hdr {
                kind: buf[3],
                token: u(4),
                seq: u(12),
                t_ns: u(20),
            })
        } else if (SHORT..HDR).contains(&buf.len()) && buf[0] == b'm' {
            Some(Hdr {
                kind: buf[1],
                token: u32_at(2),
                seq: u32_at(6),
                t_ns: u(10),
            })
        } else {
            None
        }
    }

    /// Whether this is a `kind` datagram of the test with `token` (a
    /// compact header carries the token's low 32 bits).
    pub fn is(&self, kind: u8, token: u64) -> bool {
        self.kind == kind && (self.token == token || self.token == token & 0xffff_ffff)
    }
}

/// Test-relative clock that can also place kernel (CLOCK_REALTIME) timestamps.
#[derive(Clone, Copy)]
pub struct Clock {
    pub start: Instant,
    rt0_ns: i128,
}

fn realtime_ns() -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid for writing.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        let start = Instant::now();
        Clock {
            start,
            rt0_ns: realtime_ns(),
        }
    }
    /// ns since the start.
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }
    pub fn now_ns(&self) -> u64 {
        self.ns(Instant::now())
    }
    /// A CLOCK_REALTIME timestamp as ns since the start (0 if before it).
    pub fn since_realtime(&self, sec: i64, nsec: i64) -> u64 {
        (sec as i128 * 1_000_000_000 + nsec as i128 - self.rt0_ns).max(0) as u64
    }
}

/// Opens a UDP socket bound to `ip`, with buffers and TOS set. A `shared`
/// port can take a [`twin`] later.
pub fn open(ip: IpAddr, port: u16, o: &UdpSocketParams, shared: bool) -> io::Result<UdpSocket> {
    let a = SocketAddr::new(ip, port);
    let s = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(n) = o.sndbuf {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = o.rcvbuf {
        s.set_recv_buffer_size(n as usize)?;
    }
    if let Some(t) = o.tos {
        if ip.is_ipv6() {
            s.set_tclass_v6(t as u32)?;
            if ip.is_unspecified() {
                // A dual-stack socket also carries IPv4 (mapped) peers.
                let _ = s.set_tos_v4(t as u32);
            }
        } else {
            s.set_tos_v4(t as u32)?;
        }
    }
    s.bind(&a.into())?;
    if shared {
        // Only after the bind: a port someone else holds (with
        // SO_REUSEADDR or not) is refused rather than shared, and the
        // `twin` can still join this socket.
        s.set_reuse_address(true)?;
    }
    Ok(s.into())
}

/// The agent's UDP rate cap (`--max-udp-rate`, bits per second of payload)
/// on the datagrams a request/response test sends, both ends: a token
/// bucket refilled at the cap and holding at most 64 KiB, so replies (which
/// a plan may make far larger than their requests) never leave faster than
/// the operator allowed, whatever the plan asked. A paced udp_stream keeps
/// its own floor on the gap between datagrams (`udp_stream::floor_gap_ns`).
pub struct RateCap {
    bytes_per_s: f64,
    tokens: f64,
    last: Instant,
    /// How long sends waited for the cap in all.
    pub waited: Duration,
}

const RATE_CAP_BURST: f64 = 65536.0;

impl RateCap {
    /// The cap of `limits`, if the operator set one.
    pub fn new(limits: &Limits) -> Option<RateCap> {
        let bits = limits.max_udp_bits_per_second?;
        Some(RateCap {
            bytes_per_s: bits / 8.0,
            tokens: RATE_CAP_BURST,
            last: Instant::now(),
            waited: Duration::ZERO,
        })
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let gained = now.duration_since(self.last).as_secs_f64() * self.bytes_per_s;
        self.tokens = (self.tokens + gained).min(RATE_CAP_BURST);
        self.last = now;
    }

    /// Waits until `bytes` more may leave, and takes them.
    pub fn take(&mut self, bytes: usize) {
        self.refill();
        let need = bytes as f64 - self.tokens;
        if need > 0.0 {
            let wait = Duration::from_secs_f64(need / self.bytes_per_s);
            // What the send really waited: a sleep on a busy host ends
            // late, and the tokens that lateness earns shorten the next
            // wait, so a sum of the asked waits would come out short.
            let t0 = Instant::now();
            std::thread::sleep(wait);
            self.waited += t0.elapsed();
            self.refill();
        }
        self.tokens -= bytes as f64;
    }
}

/// Microseconds a [`RateCap`] made sends wait (0 without a cap).
pub fn capped_us(cap: &Option<RateCap>) -> f64 {
    cap.as_ref().map_or(0.0, |c| c.waited.as_secs_f64() * 1e6)
}

/// A second, non-blocking socket on `sock`'s address (opened `shared`).
/// Once `sock` is connected to its peer the kernel gives it only the peer's
/// datagrams (a connected socket is the better match) and the twin
/// everything else: the strangers, counted with [`drain`].
pub fn twin(sock: &UdpSocket) -> io::Result<UdpSocket> {
    let a = sock.local_addr()?;
    let s = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&a.into())?;
    Ok(s.into())
}

/// Reads and drops what is waiting on `s` (non-blocking); how many datagrams.
pub fn drain(s: &UdpSocket) -> u64 {
    let mut buf = [0u8; 64];
    let mut n = 0;
    while s.recv_from(&mut buf).is_ok() {
        n += 1;
    }
    n
}

/// Serving side sockets: the TCP control listener and the UDP socket, both on
/// `server_bind` (checked to be on this host) or else the agent's data address.
pub fn serve_sockets(
    env: &EngineEnv,
    o: &UdpSocketParams,
    shared: bool,
) -> Result<(TcpListener, UdpSocket), Refusal> {
    bind::check_server(o.server_bind)?;
    let ip = o.server_bind.unwrap_or(env.data_ip);
    let what = if o.server_bind.is_some() {
        format!("server_bind {ip}: ")
    } else {
        String::new()
    };
    // With --data-ports both sit on one port of the range: TCP for the
    // control line, UDP for the datagrams.
    let mut udp_err = None;
    let r = bind::on_data_port(env.data_ports, |port| {
        let listener = TcpListener::bind((ip, port))?;
        let port = listener.local_addr()?.port() * u16::from(env.data_ports.is_some());
        match open(ip, port, o, shared) {
            Ok(sock) => Ok((listener, sock)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(e),
            Err(e) => {
                udp_err = Some(e.to_string());
                Err(io::Error::other("udp"))
            }
        }
    });
    match (r, udp_err) {
        (Ok(s), _) => Ok(s),
        (Err(_), Some(e)) => Err((
            ErrorCode::BadParams,
            format!("{what}cannot open the UDP socket: {e}"),
        )),
        (Err(e), None) => Err((
            ErrorCode::Io,
            format!("{what}cannot open a data listener: {e}"),
        )),
    }
}

/// Socket options as asked for and as the kernel reports them.
pub fn applied(s: &UdpSocket, o: &UdpSocketParams) -> UdpSocketReport {
    let r = SockRef::from(s);
    UdpSocketReport {
        sndbuf_requested: o.sndbuf,
        rcvbuf_requested: o.rcvbuf,
        sndbuf_actual: r.send_buffer_size().ok().map(|n| n as u64),
        rcvbuf_actual: r.recv_buffer_size().ok().map(|n| n as u64),
        tos: o.tos.and_then(|_| tos_actual(s)),
    }
}

/// The TOS byte (IPv4) or traffic class (IPv6) the kernel has for `s`.
fn tos_actual(s: &UdpSocket) -> Option<u32> {
    let r = SockRef::from(s);
    match s.local_addr().ok()? {
        SocketAddr::V6(_) => r.tclass_v6().ok(),
        SocketAddr::V4(_) => r.tos_v4().ok(),
    }
}

/// Asks the kernel for SO_TIMESTAMPNS receive timestamps; true if it agreed.
pub fn enable_timestamps(s: &UdpSocket) -> bool {
    set_int(&SockRef::from(s), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

/// Receiver without a requested SO_RCVBUF: asks for `bytes`, so a burst
/// that outruns the reader for a moment is queued rather than dropped. With
/// CAP_NET_ADMIN (root) SO_RCVBUFFORCE gives all of it; without, SO_RCVBUF
/// gives as much as `net.core.rmem_max` allows. An unprivileged receiver
/// left at the 208 KiB default holds 91 datagrams of 1400 bytes, under 2 ms
/// at 20 us: a few ms off the CPU and it lost 23% to 68% of a burst.
pub fn grow_rcvbuf(s: &UdpSocket, bytes: libc::c_int) {
    let r = SockRef::from(s);
    if set_int(&r, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes).is_err() {
        // Failure leaves the default, which the summary then reports.
        let _ = set_int(&r, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes);
    }
}

fn random_token() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the OS random source works");
    u64::from_le_bytes(b)
}

/// Serving side: tells the port and token, then waits for the peer's hello.
/// Returns the token and the bound address; `foreign` counts strangers.
pub(super) fn serve_bind(
    ctx: &TestCtx,
    line: &mut Line,
    sock: &UdpSocket,
    peer_ip: IpAddr,
    foreign: &mut u64,
) -> Result<(u64, SocketAddr), TestError> {
    let token = random_token();
    let port = sock.local_addr().map_err(io_err)?.port();
    line.send(&UdpSetup::new(port, token)).map_err(gone)?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(io_err)?;
    let end = Instant::now() + BIND_WINDOW;
    let mut buf = vec![0u8; 65536];
    while Instant::now() < end && !ctx.cancelled() {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => match Hdr::read(&buf[..n]) {
                Some(h) if h.kind == HELLO && h.token == token && from.ip() == peer_ip => {
                    line.send(&UdpBound { bound: from }).map_err(gone)?;
                    return Ok((token, from));
                }
                _ => *foreign += 1,
            },
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(io_err(e)),
        }
    }
    Err(TestError::new(
        ErrorCode::PeerTimeout,
        format!(
            "the peer agent's UDP hello did not arrive within {} s (is UDP blocked between the agents?)",
            BIND_WINDOW.as_secs()
        ),
    ))
}

/// Driving side: learns port and token, opens and connects its UDP socket on
/// the control connection's local address, and says hello until bound.
pub(super) fn client_bind(
    ctx: &TestCtx,
    line: &mut Line,
    local_ip: IpAddr,
    peer_ip: IpAddr,
    o: &UdpSocketParams,
) -> Result<(UdpSocket, u64), TestError> {
    let setup: UdpSetup = line.expect(BIND_WINDOW, "the peer agent sent no UDP port")?;
    let port = setup.udp_port;
    let token = setup.token().ok_or_else(|| {
        TestError::new(
            ErrorCode::Protocol,
            format!("bad UDP token from the peer agent: {:?}", setup.token),
        )
    })?;
    let sock = open(local_ip, 0, o, false)
        .map_err(|e| TestError::new(ErrorCode::BadParams, format!("udp socket: {e}")))?;
    sock.connect((peer_ip, port)).map_err(io_err)?;
    let mut hello = [0u8; HDR];
    Hdr {
        kind: HELLO,
        token,
        seq: 0,
        t_ns: 0,
    }
    .write(&mut hello);
    let end = Instant::now() + BIND_WINDOW;
    while Instant::now() < end && !ctx.cancelled() {
        let _ = sock.send(&hello);
        // Anything but `bound` fails to parse: a protocol error.
        if let Some(UdpBound { .. }) = line.recv(Duration::from_millis(20)).map_err(gone)? {
            return Ok((sock, token));
        }
    }
    Err(TestError::new(
        ErrorCode::PeerTimeout,
        "the peer agent did not confirm our UDP hello (is UDP blocked between the agents?)",
    ))
}

/// A bound UDP flow: the control line, the socket, the token and the peer.
pub struct Flow {
    pub line: Line,
    pub sock: UdpSocket,
    pub token: u64,
    /// The peer's UDP address (the only one this side talks to).
    pub peer: SocketAddr,
    /// Driving side: the socket is connected to `peer`.
    pub connected: bool,
    /// Datagrams from anyone else (serving side only).
    pub foreign: u64,
    /// More control lines, one per [`UdpTest::lines`] (udp_stream's
    /// reverse flow), each sealed with a key of its own.
    pub extra: Vec<Line>,
    /// The probe flow beside the test ([`UdpTest::probe`]), bound on
    /// `line` after the flow's own hand-shake.
    pub probe: Option<beside::Probe>,
}

/// The label of the key that seals extra line `i` ([`Flow::extra`]).
fn extra_key(key: &[u8; 16], i: usize) -> [u8; 16] {
    peer::derive_key(key, &format!("udp extra line {i}"))
}

/// The data connections of `conn` as sealed lines ([`Flow::extra`]).
fn extra_lines(data: Vec<std::net::TcpStream>, key: &[u8; 16], driver: bool) -> Vec<Line> {
    data.into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut l = Line::new(s);
            l.seal(&extra_key(key, i), driver);
            l
        })
        .collect()
}

/// Serving side set-up: key check on the TCP control connection, then binding.
pub fn serve_flow(
    ctx: &TestCtx,
    listener: TcpListener,
    key: &[u8; 16],
    kind: Kind,
    sock: UdpSocket,
    lines: usize,
) -> Result<Flow, TestError> {
    let conn = peer::accept(ctx, listener, key, kind, lines)?;
    let extra = extra_lines(conn.data, key, false);
    let mut line = conn.control;
    let mut foreign = 0;
    let (token, peer) = serve_bind(ctx, &mut line, &sock, conn.peer_ip, &mut foreign)?;
    Ok(Flow {
        line,
        sock,
        token,
        peer,
        connected: false,
        foreign,
        extra,
        probe: None,
    })
}

/// Driving side set-up: control connection to the prepared peer, then binding.
pub fn drive_flow(
    ctx: &TestCtx,
    peer_addr: &PeerAddr,
    kind: Kind,
    o: &UdpSocketParams,
    lines: usize,
) -> Result<Flow, TestError> {
    let conn = peer::connect(ctx, peer_addr, kind, &o.control(), lines)?;
    let local = conn.control.stream().local_addr().map_err(io_err)?.ip();
    let key = meshperf_protocol::peer::parse_key(&peer_addr.key).unwrap_or_default();
    let extra = extra_lines(conn.data, &key, true);
    let mut line = conn.control;
    let (sock, token) = client_bind(ctx, &mut line, local, conn.peer_ip, o)?;
    let peer = sock.peer_addr().map_err(io_err)?;
    Ok(Flow {
        line,
        sock,
        token,
        peer,
        connected: true,
        foreign: 0,
        extra,
        probe: None,
    })
}

/// A progress event for this side.
pub fn progress(ctx: &TestCtx, start: Instant, bytes: u64, fraction: f64) {
    ctx.sink.event(&Event::Progress {
        test_id: ctx.test_id,
        step: ctx.step,
        role: ctx.role,
        elapsed_s: start.elapsed().as_secs_f64(),
        bytes,
        fraction: fraction.min(1.0),
    });
}

pub fn io_err(e: io::Error) -> TestError {
    TestError::new(ErrorCode::Io, format!("udp socket: {e}"))
}

/// What `udp_rr` and `udp_stream` plug into the set-up they share: the
/// serving side binds the TCP control listener and the UDP socket, the
/// driving side checks its bind address, and both run the flow hand-shake
/// before their own part.
pub trait UdpTest: Sized + Send + 'static {
    const KIND: Kind;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError>;
    /// The test's socket options and addresses.
    fn sock(&self) -> &UdpSocketParams;
    /// The serving side's port may take a [`twin`] (udp_rr's connected replies).
    const SHARED_PORT: bool = false;
    /// Control lines beyond the first ([`Flow::extra`]).
    fn lines(&self) -> usize {
        0
    }
    /// A probe flow beside the test (`probe_ms`; [`Flow::probe`]).
    fn probe(&self) -> Option<ProbeParams> {
        None
    }
    /// How long the test runs, if it is bounded by time (for the probes'
    /// count; otherwise the agent's time limit bounds it).
    fn duration_s(&self) -> Option<f64> {
        None
    }
    /// What the serving side reports.
    type ServeSummary: Serialize;
    /// What the driving side reports.
    type DriveSummary: Serialize;
    /// The serving agent's part, once the flow is up.
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<Self::ServeSummary, TestError>;
    /// The driving agent's part, once the flow is up.
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<Self::DriveSummary, TestError>;
}

/// Serving side set-up of a UDP test (see [`super::prepare`]).
pub fn prepare<T: UdpTest>(
    params: &Value,
    env: &EngineEnv,
) -> Result<(u16, [u8; 16], super::Job), Refusal> {
    let p = T::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    let (listener, sock) = serve_sockets(env, p.sock(), T::SHARED_PORT)?;
    let ip = sock
        .local_addr()
        .map_err(|e| (ErrorCode::Io, e.to_string()))?
        .ip();
    let probe_sock = match p.probe() {
        Some(_) => Some(beside::open(env, ip)?),
        None => None,
    };
    serving_job(listener, sock, move |ctx, listener, sock, key| {
        let mut f = serve_flow(ctx, listener, key, T::KIND, sock, p.lines())?;
        if let (Some(pp), Some(ps)) = (p.probe(), probe_sock) {
            let max = beside::max_probes(&pp, p.duration_s(), ctx);
            let s = beside::serve(ctx, &mut f.line, ps, f.peer.ip(), &pp, max)?;
            f.probe = Some(beside::Probe::Serving(s));
        }
        p.serve(ctx, f)
    })
}

/// A serving side's job over its TCP listener and UDP socket (the UDP kinds
/// and latency_under_load): the port to give the controller, a fresh
/// session key, and the job that runs `serve` and reports what it returns.
pub fn serving_job<S, F>(
    listener: TcpListener,
    sock: UdpSocket,
    serve: F,
) -> Result<(u16, [u8; 16], super::Job), Refusal>
where
    S: Serialize,
    F: FnOnce(&TestCtx, TcpListener, UdpSocket, &[u8; 16]) -> Result<S, TestError> + Send + 'static,
{
    let port = listener
        .local_addr()
        .map_err(|e| (ErrorCode::Io, e.to_string()))?
        .port();
    let key = peer::new_key();
    Ok((
        port,
        key,
        Box::new(move |ctx| {
            let r = serve(&ctx, listener, sock, &key);
            ctx.report(r);
            ctx.finished();
        }),
    ))
}

/// Driving side set-up of a UDP test (see [`super::start`]).
pub fn start<T: UdpTest>(
    params: Value,
    peer_addr: PeerAddr,
    env: &EngineEnv,
) -> Result<super::Job, Refusal> {
    let p = T::parse(&params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    bind::check_client(p.sock().client_bind, p.sock().server_bind, &peer_addr)?;
    Ok(Box::new(move |ctx| {
        let r = drive_flow(&ctx, &peer_addr, T::KIND, p.sock(), p.lines()).and_then(|mut f| {
            if let Some(pp) = p.probe() {
                let max = beside::max_probes(&pp, p.duration_s(), &ctx);
                let d = beside::drive(&ctx, &mut f.line, f.peer.ip(), &pp, max)?;
                f.probe = Some(beside::Probe::Driving(d));
            }
            p.drive(&ctx, f)
        });
        ctx.report(r);
        ctx.finished();
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_rejects_strangers() {
        let h = Hdr {
            kind: DATA,
            token: 7,
            seq: 1 << 40,
            t_ns: 99,
        };
        let mut b = [0u8; 40];
        h.write(&mut b);
        assert_eq!(Hdr::read(&b), Some(h));
        assert_eq!(Hdr::read(&b[..27]), None);
        b[0] = b'X';
        assert_eq!(Hdr::read(&b), None);
    }

    #[test]
    fn short_datagrams_carry_the_compact_header() {
        let token = 0x1234_5678_9abc_def0;
        let h = Hdr {
            kind: DATA,
            token,
            seq: 4_000_000,
            t_ns: 1 << 40,
        };
        for len in [18, 20, 27] {
            let mut b = vec![0u8; len];
            h.write(&mut b);
            assert_eq!(b[0], b'm');
            let r = Hdr::read(&b).unwrap();
            assert_eq!((r.seq, r.t_ns, r.token), (4_000_000, 1 << 40, 0x9abc_def0));
            assert!(r.is(DATA, token));
            assert!(!r.is(DATA, token ^ 1), "another test's token");
            assert!(!r.is(REPLY, token));
        }
        // Too short for either form, or a compact magic on a long datagram.
        assert_eq!(Hdr::read(&[b'm'; 17]), None);
        let mut long = vec![0u8; 28];
        long[0] = b'm';
        assert_eq!(Hdr::read(&long), None);
        // A full header still matches only its whole token.
        let mut b = [0u8; 28];
        h.write(&mut b);
        assert!(Hdr::read(&b).unwrap().is(DATA, token));
        assert!(!Hdr::read(&b)
            .unwrap()
            .is(DATA, token & 0xffff_ffff_0000_0000));
    }
}
