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

#[cfg(target_os = "linux")]
pub mod batch;
/// Off Linux, `batch`'s names over one datagram per system call.
#[cfg(not(target_os = "linux"))]
#[path = "single.rs"]
pub mod batch;
pub mod dgram;
pub mod probe;
pub mod rr;
/// Linux's tests run the portable path's sends and receives too (its GSO
/// stand-ins go unused there: Linux's own are in use).
#[cfg(all(test, target_os = "linux"))]
#[allow(dead_code)]
mod single;
pub mod stream;

use super::{bind, peer};
use crate::engine::ctx::{EngineEnv, TestCtx};
use crate::engine::error::{Refusal, TestError};
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, Limits, ParamError, ProbeParams, UdpSocketParams};
use probe::beside;
use serde::Serialize;
use serde_json::Value;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::time::Instant;

pub use dgram::{
    applied, drain, enable_timestamps, gone, grow_rcvbuf, icmp_error, io_err, is_timeout, open,
    send_past_icmp, serve_bind_also, serve_sockets, twin, twin_for, Clock, Hdr, Line, DATA, END,
    HELLO, REPLY, REQUEST, UDP_HEADER_LEN,
};
pub use dgram::{client_bind, serve_bind};

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
    ctx.progress(start.elapsed().as_secs_f64(), bytes, fraction);
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
    /// Refuses, before any traffic, what this side's kernel cannot do
    /// (udp_stream's `gso` on); `serving`: the serving side asks.
    fn check_kernel(&self, _serving: bool) -> Result<(), Refusal> {
        Ok(())
    }
    /// Refuses, before any traffic, a placement of this side's data
    /// threads the agent cannot give (udp_stream's `threads`, `cpus`,
    /// `server_cpus`).
    fn check_side(&self, _serving: bool) -> Result<(), Refusal> {
        Ok(())
    }
    /// While the side runs, keeps its other threads and the control loop
    /// off the CPUs its data threads are pinned to
    /// ([`super::placement::Aside`]; `None`: nothing pinned).
    fn aside(&self, _serving: bool) -> Option<super::placement::Aside> {
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
) -> Result<(u16, [u8; 16], super::ctx::Job), Refusal> {
    let p = T::parse(params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    p.check_kernel(true)?;
    p.check_side(true)?;
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
        // Pinned data threads: this thread (and the probe loops it
        // starts) and the control loop keep off their CPUs.
        let _aside = p.aside(true);
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
) -> Result<(u16, [u8; 16], super::ctx::Job), Refusal>
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
) -> Result<super::ctx::Job, Refusal> {
    let p = T::parse(&params, env.limits).map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    bind::check_client(p.sock().client_bind, p.sock().server_bind, &peer_addr)?;
    p.check_kernel(false)?;
    p.check_side(false)?;
    Ok(Box::new(move |ctx| {
        let _aside = p.aside(false);
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

    /// The kernel itself: a connected socket whose peer's port is closed
    /// gets the port unreachable back as ECONNREFUSED on its next send,
    /// which then sends nothing; `send_past_icmp` counts it and sends
    /// again, and the datagram leaves (the closed port answers it with
    /// another ICMP, reported on the receive after).
    #[test]
    fn an_icmp_error_on_a_send_is_counted_and_the_datagram_sent_again() {
        let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = closed.local_addr().unwrap();
        drop(closed);
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect(to).unwrap();
        s.send(b"first").unwrap();
        // The port unreachable comes back through loopback at once.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut icmp = 0;
        let mut calls = 0;
        let n = send_past_icmp(&mut icmp, || {
            calls += 1;
            s.send(b"second")
        })
        .unwrap();
        assert_eq!((n, icmp, calls), (6, 1, 2));
        std::thread::sleep(std::time::Duration::from_millis(50));
        let e = s.recv(&mut [0u8; 16]).unwrap_err();
        assert!(icmp_error(&e), "{e}");
        // A send that fails for itself is not taken for an ICMP's forever.
        let mut tries = 0;
        let e = send_past_icmp(&mut icmp, || {
            tries += 1;
            Err::<usize, _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
        })
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            (tries, icmp),
            (dgram::ICMP_TRIES + 1, 1 + u64::from(dgram::ICMP_TRIES))
        );
        assert!(!icmp_error(&std::io::Error::from(
            std::io::ErrorKind::WouldBlock
        )));
    }
}
