//! Agent-to-agent set-up on the serving agent's data port (see
//! `meshperf_protocol::peer` for the exchange). The serving side accepts only
//! connections that present the one-time session key of the test it prepared,
//! within a short window; the key is spent once the control line is accepted.

use super::{sockopt, TestCtx, TestError};
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::msg::PeerAddr;
use meshperf_protocol::params::{Kind, StreamParams};
use meshperf_protocol::peer::{
    self as wire, PeerDone, PeerHello, PeerReply, KEY_LEN, PREAMBLE_LEN,
};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a prepared test waits for its peer.
pub const ACCEPT_WINDOW: Duration = Duration::from_secs(10);
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The connections of one test side once set-up is done.
pub struct Connected {
    pub control: TcpStream,
    /// Data connections, index = stream index.
    pub data: Vec<TcpStream>,
    pub peer_ip: IpAddr,
}

/// Opens the data listener of a prepared test, with buffer sizes set before
/// `listen` so accepted sockets inherit them.
pub fn listen(ip: IpAddr, port: u16, p: &StreamParams) -> io::Result<TcpListener> {
    let sock = Socket::new(
        Domain::for_address(SocketAddr::new(ip, port)),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    sock.set_reuse_address(true)?;
    sockopt::pre_connect(&sock, p)?;
    sock.bind(&SocketAddr::new(ip, port).into())?;
    sock.listen(128)?;
    Ok(sock.into())
}

/// A fresh one-time session key.
pub fn new_key() -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    getrandom::fill(&mut k).expect("the OS random source works");
    k
}

fn write_line<T: Serialize>(s: &mut TcpStream, v: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(v).expect("serializes");
    line.push(b'\n');
    s.write_all(&line)
}

fn read_line(s: &mut TcpStream) -> io::Result<String> {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b)? {
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed",
                ))
            }
            _ if b[0] == b'\n' => break,
            _ => out.push(b[0]),
        }
        if out.len() > wire::MAX_LINE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "control line too long",
            ));
        }
    }
    String::from_utf8(out)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "control line is not UTF-8"))
}

/// Serving side: waits for the peer's control line, then its data connections.
pub fn accept(
    ctx: &TestCtx,
    listener: TcpListener,
    key: &[u8; KEY_LEN],
    kind: Kind,
    streams: usize,
) -> Result<Connected, TestError> {
    listener
        .set_nonblocking(true)
        .map_err(|e| TestError::new(ErrorCode::Io, e.to_string()))?;
    let deadline = Instant::now() + ACCEPT_WINDOW;
    let mut control: Option<(TcpStream, IpAddr)> = None;
    let mut data: Vec<Option<TcpStream>> = (0..streams).map(|_| None).collect();
    loop {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        if Instant::now() > deadline {
            let what = if control.is_none() {
                "no peer agent connected"
            } else {
                "the peer agent did not open all data connections"
            };
            return Err(TestError::new(
                ErrorCode::PeerTimeout,
                format!("{what} within {} s", ACCEPT_WINDOW.as_secs()),
            ));
        }
        let (mut s, addr) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => return Err(TestError::new(ErrorCode::Io, format!("accept failed: {e}"))),
        };
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.set_write_timeout(Some(IO_TIMEOUT));
        let mut first = [0u8; 1];
        if s.peek(&mut first).unwrap_or(0) == 0 {
            continue;
        }
        if control.is_none() {
            if first[0] != b'{' {
                continue; // data before control: not our peer
            }
            let Ok(line) = read_line(&mut s) else {
                continue;
            };
            let hello: Result<PeerHello, _> = serde_json::from_str(&line);
            let good_key = hello
                .as_ref()
                .ok()
                .and_then(|h| wire::parse_key(&h.key))
                .is_some_and(|k| bool::from(k.ct_eq(key)));
            let reply = match &hello {
                Ok(h) if good_key && h.kind == kind => PeerReply {
                    ok: true,
                    code: None,
                    message: None,
                },
                Ok(h) if good_key => PeerReply {
                    ok: false,
                    code: Some(ErrorCode::KindMismatch),
                    message: Some(format!(
                        "this test was prepared as {}, not {}",
                        kind.name(),
                        h.kind.name()
                    )),
                },
                _ => PeerReply {
                    ok: false,
                    code: Some(ErrorCode::BadKey),
                    message: Some("unknown or spent session key".into()),
                },
            };
            let ok = reply.ok;
            let _ = write_line(&mut s, &reply);
            if ok {
                let _ = s.set_read_timeout(None);
                if streams == 0 {
                    // UDP tests: the control connection is all there is.
                    return Ok(Connected {
                        control: s,
                        data: Vec::new(),
                        peer_ip: addr.ip(),
                    });
                }
                control = Some((s, addr.ip()));
            }
            continue;
        }
        let mut pre = [0u8; PREAMBLE_LEN];
        if s.read_exact(&mut pre).is_err()
            || !bool::from(pre[..KEY_LEN].ct_eq(key))
            || addr.ip() != control.as_ref().unwrap().1
        {
            continue;
        }
        let idx = u32::from_le_bytes(pre[KEY_LEN..].try_into().unwrap()) as usize;
        if idx >= streams || data[idx].is_some() {
            continue;
        }
        let _ = s.set_read_timeout(None);
        let _ = s.set_write_timeout(None);
        data[idx] = Some(s);
        if data.iter().all(Option::is_some) {
            let (control, peer_ip) = control.unwrap();
            return Ok(Connected {
                control,
                data: data.into_iter().map(Option::unwrap).collect(),
                peer_ip,
            });
        }
    }
}

/// Driving side: sends the control line, then opens the data connections.
pub fn connect(
    ctx: &TestCtx,
    peer: &PeerAddr,
    kind: Kind,
    params: &serde_json::Value,
    p: &StreamParams,
    streams: usize,
) -> Result<Connected, TestError> {
    let key = wire::parse_key(&peer.key)
        .ok_or_else(|| TestError::new(ErrorCode::BadRequest, "peer.key must be 32 hex digits"))?;
    let host = super::bind::target_host(p, peer);
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
    let mut control = dial(addr, p, false).map_err(unreachable)?;
    control
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(unreachable)?;
    control
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(unreachable)?;
    write_line(
        &mut control,
        &PeerHello {
            key: peer.key.clone(),
            kind,
            params: params.clone(),
        },
    )
    .map_err(unreachable)?;
    let line = read_line(&mut control).map_err(unreachable)?;
    let reply: PeerReply = serde_json::from_str(&line).map_err(|e| {
        TestError::new(
            ErrorCode::Protocol,
            format!("bad reply from peer agent: {e}"),
        )
    })?;
    if !reply.ok {
        return Err(TestError::new(
            ErrorCode::PeerRefused,
            format!(
                "peer agent refused the test: {}",
                reply.message.unwrap_or_else(|| "no reason given".into())
            ),
        ));
    }
    control.set_read_timeout(None).map_err(unreachable)?;
    let mut data = Vec::with_capacity(streams);
    for i in 0..streams {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        let mut s = dial(addr, p, true).map_err(unreachable)?;
        s.write_all(&wire::preamble(&key, i as u32))
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
fn dial(addr: SocketAddr, p: &StreamParams, data: bool) -> io::Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if data {
        sockopt::pre_connect(&sock, p)?;
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
pub fn exchange_done(control: &mut TcpStream, bytes: u64) -> Result<PeerDone, TestError> {
    let gone = |e: io::Error| {
        TestError::new(
            ErrorCode::PeerGone,
            format!("the peer agent went away before the end of the test ({e})"),
        )
    };
    control
        .set_read_timeout(Some(Duration::from_secs(15)))
        .map_err(gone)?;
    write_line(control, &PeerDone { done: true, bytes }).map_err(gone)?;
    let line = read_line(control).map_err(gone)?;
    serde_json::from_str(&line).map_err(|e| {
        TestError::new(
            ErrorCode::Protocol,
            format!("bad end line from peer agent: {e}"),
        )
    })
}
