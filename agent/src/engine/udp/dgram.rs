//! The datagram basics both UDP kinds and the probe flow (latency under
//! load, and beside a stream) stand on: the meshperf header, the clock its
//! times are read from, sockets and their options, and the hand-shake that binds a flow to the peer that proved itself
//! on the control line. It imports nothing of `udp/` or `lul/`, so both
//! can use it without a loop.

use crate::engine::bind;
use crate::engine::ctx::{EngineEnv, TestCtx};
use crate::engine::error::{Refusal, TestError};
#[cfg(target_os = "linux")]
use crate::engine::sockopt::set_int;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::UdpSocketParams;
use meshperf_protocol::peer::{UdpBound, UdpSetup};
use meshperf_protocol::summary::UdpSocketReport;
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::time::{Duration, Instant};

pub use crate::engine::peer::{gone, is_timeout, Line};
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
    #[inline(always)]
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
    #[inline(always)]
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
    #[inline(always)]
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

/// The system clock off Linux (no kernel timestamps to place there).
#[cfg(not(target_os = "linux"))]
fn realtime_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(target_os = "linux")]
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
    #[inline(always)]
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }
    pub fn now_ns(&self) -> u64 {
        self.ns(Instant::now())
    }
    /// A CLOCK_REALTIME timestamp as ns since the start (0 if before it).
    #[inline(always)]
    pub fn since_realtime(&self, sec: i64, nsec: i64) -> u64 {
        (sec as i128 * 1_000_000_000 + nsec as i128 - self.rt0_ns).max(0) as u64
    }
}

/// Opens a UDP socket bound to `ip`, with buffers and TOS set. A `shared`
/// port can take a [`twin`] later.
pub fn open(ip: IpAddr, port: u16, o: &UdpSocketParams, shared: bool) -> io::Result<UdpSocket> {
    let a = SocketAddr::new(ip, port);
    let s = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
    options(&s, ip, o)?;
    s.bind(&a.into())?;
    if shared {
        // Only after the bind: a port someone else holds (with
        // SO_REUSEADDR or not) is refused rather than shared, and the
        // `twin` can still join this socket.
        s.set_reuse_address(true)?;
    }
    Ok(s.into())
}

/// Buffers and TOS as `o` asks, on a socket for `ip`.
fn options(s: &Socket, ip: IpAddr, o: &UdpSocketParams) -> io::Result<()> {
    if let Some(n) = o.sndbuf {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = o.rcvbuf {
        s.set_recv_buffer_size(n as usize)?;
    }
    if let Some(t) = o.tos {
        if ip.is_ipv6() {
            crate::platform::set_tclass_v6(&SockRef::from(s), t as u32)?;
            if ip.is_unspecified() {
                // A dual-stack socket also carries IPv4 (mapped) peers.
                let _ = s.set_tos_v4(t as u32);
            }
        } else {
            s.set_tos_v4(t as u32)?;
        }
    }
    Ok(())
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

/// A socket of a further flow on `sock`'s address (opened `shared`), with
/// the options `o` and connected to `peer`: the kernel gives it that
/// peer's datagrams (the better match), `sock` the rest. Blocking, as the
/// flow's receiver reads it with a timeout.
pub fn twin_for(sock: &UdpSocket, peer: SocketAddr, o: &UdpSocketParams) -> io::Result<UdpSocket> {
    let a = sock.local_addr()?;
    let s = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    options(&s, a.ip(), o)?;
    s.bind(&a.into())?;
    s.connect(&peer.into())?;
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
        SocketAddr::V6(_) => crate::platform::tclass_v6(&r).ok(),
        SocketAddr::V4(_) => r.tos_v4().ok(),
    }
}

/// Asks the kernel for SO_TIMESTAMPNS receive timestamps; true if it agreed.
/// (Linux's; none elsewhere: user-space timestamps.)
#[cfg(not(target_os = "linux"))]
pub fn enable_timestamps(_s: &UdpSocket) -> bool {
    false
}

/// Asks the kernel for SO_TIMESTAMPNS receive timestamps; true if it agreed.
#[cfg(target_os = "linux")]
pub fn enable_timestamps(s: &UdpSocket) -> bool {
    set_int(&SockRef::from(s), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

/// Receiver without a requested SO_RCVBUF: asks for `bytes`, so a burst
/// that outruns the reader for a moment is queued rather than dropped. With
/// CAP_NET_ADMIN (root) SO_RCVBUFFORCE gives all of it; without, SO_RCVBUF
/// gives as much as `net.core.rmem_max` allows. The 208 KiB default holds
/// under 2 ms of 1400-byte datagrams 20 us apart (docs/performance.md,
/// "Figures behind choices in the code").
#[cfg(target_os = "linux")]
pub fn grow_rcvbuf(s: &UdpSocket, bytes: libc::c_int) {
    let r = SockRef::from(s);
    if set_int(&r, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes).is_err() {
        // Failure leaves the default, which the summary then reports.
        let _ = set_int(&r, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes);
    }
}

/// Off Linux: SO_RCVBUF, as far as the system allows.
#[cfg(not(target_os = "linux"))]
pub fn grow_rcvbuf(s: &UdpSocket, bytes: libc::c_int) {
    let _ = SockRef::from(s).set_recv_buffer_size(bytes.max(0) as usize);
}

fn random_token() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the OS random source works");
    u64::from_le_bytes(b)
}

/// Serving side: tells the port and token, then waits for the peer's hello.
/// Returns the token and the bound address; `foreign` counts strangers.
pub fn serve_bind(
    ctx: &TestCtx,
    line: &mut Line,
    sock: &UdpSocket,
    peer_ip: IpAddr,
    foreign: &mut u64,
) -> Result<(u64, SocketAddr), TestError> {
    serve_bind_also(ctx, line, sock, peer_ip, foreign, &[])
}

/// [`serve_bind`] of a further flow on the same socket: the late hellos
/// of the flows bound before it (tokens `bound`) are theirs, not foreign.
pub fn serve_bind_also(
    ctx: &TestCtx,
    line: &mut Line,
    sock: &UdpSocket,
    peer_ip: IpAddr,
    foreign: &mut u64,
    bound: &[u64],
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
                Some(h) if h.kind == HELLO && bound.contains(&h.token) => {}
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
pub fn client_bind(
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

/// Whether `e` is the error an ICMP message left on a UDP socket for an
/// earlier datagram, reported once on the socket's next send or receive
/// (which then moved nothing): port unreachable (ECONNREFUSED; Windows:
/// WSAECONNRESET), host or network unreachable or prohibited
/// (EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENONET, EACCES), protocol
/// unreachable or a parameter problem (ENOPROTOOPT, EPROTO), fragmentation
/// needed / packet too big (EMSGSIZE). Anyone who knows or guesses a
/// flow's addresses and ports can send such an ICMP (docs/security.md):
/// the UDP kinds count it and go on ([`send_past_icmp`]), never end on it.
pub fn icmp_error(e: &io::Error) -> bool {
    use io::ErrorKind as K;
    if matches!(e.kind(), K::ConnectionRefused | K::ConnectionReset) {
        return true;
    }
    #[cfg(target_os = "linux")]
    let more = matches!(
        e.raw_os_error(),
        Some(
            libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EACCES
                | libc::ENOPROTOOPT
                | libc::EPROTO
                | libc::EMSGSIZE
        )
    );
    #[cfg(all(unix, not(target_os = "linux")))]
    let more = matches!(
        e.raw_os_error(),
        Some(libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN)
    );
    #[cfg(windows)]
    let more = {
        use windows_sys::Win32::Networking::WinSock::{
            WSAEHOSTUNREACH, WSAENETRESET, WSAENETUNREACH,
        };
        matches!(
            e.raw_os_error(),
            Some(WSAEHOSTUNREACH | WSAENETUNREACH | WSAENETRESET)
        )
    };
    more
}

/// Sends at most this many times over [`icmp_error`]s in a row: each one
/// reports one ICMP that came before, so a send failing this often fails
/// for itself (a datagram this host cannot send), and that is the error.
pub const ICMP_TRIES: u32 = 8;

/// Runs `send` again while it fails with an [`icmp_error`] (the datagram
/// did not leave; the error was an earlier ICMP's, now taken), at most
/// [`ICMP_TRIES`] times, each one added to `icmp`.
pub fn send_past_icmp<T>(icmp: &mut u64, mut send: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut tries = 0;
    loop {
        match send() {
            Err(e) if icmp_error(&e) && tries < ICMP_TRIES => {
                *icmp += 1;
                tries += 1;
            }
            r => return r,
        }
    }
}

pub fn io_err(e: io::Error) -> TestError {
    TestError::new(ErrorCode::Io, format!("udp socket: {e}"))
}
