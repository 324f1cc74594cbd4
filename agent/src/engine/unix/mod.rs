//! `unix_stream` and `unix_rr` (sockbench): the TCP tests over AF_UNIX
//! stream sockets inside one agent, to set Unix sockets beside TCP loopback
//! and TCP on a local address.
//!
//! `prepare` binds a socket in a fresh private directory (mode 0700, removed
//! when the test ends) and files it under the one-time key in a
//! process-global registry; `start` on the same agent takes the entry out
//! (so a key works once) and connects. `peer.host`/`peer.port` are ignored.
//! Every data connection still opens with the key preamble, checked in
//! constant time, so nothing else that can reach the path gets in.
//!
//! A `unix_stream`'s two sides time their streams from one instant, the
//! serving side's [`Go`] once it holds every connection: neither side's
//! clock can start after bytes have queued for it (a receiver that started
//! its own clock late reported transfers faster than its sender made them).

use super::bulk::Flow;
use super::peer::{preamble, preamble_index};
use super::placement;
use super::rr_loop::{client_summary, server_summary};
use super::{peer, rr_loop};
use crate::engine::ctx::{EngineEnv, Job, TestCtx};
use crate::engine::error::{Refusal, TestError};
use meshperf_protocol::msg::{ErrorCode, PeerAddr, Role};
use meshperf_protocol::params::{Kind, RrParams, StreamParams};
use meshperf_protocol::peer::{parse_key, KEY_LEN, PREAMBLE_LEN};
use meshperf_protocol::plan::Transport;
use meshperf_protocol::summary::{RrSummary, StreamSummary};
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Parsed parameters of either kind.
#[derive(Clone)]
enum Params {
    Stream(StreamParams),
    Rr(RrParams),
}

struct Entry {
    key: [u8; KEY_LEN],
    kind: Kind,
    path: PathBuf,
    go: Arc<Go>,
}

/// The start both sides of one test time their streams from: set by the
/// serving side when it has accepted every connection (or failed to),
/// waited for by the driving side before it moves a byte.
#[derive(Default)]
struct Go {
    at: Mutex<Option<Result<Instant, ()>>>,
    cv: Condvar,
}

impl Go {
    fn set(&self, v: Result<Instant, ()>) {
        *self.at.lock().unwrap() = Some(v);
        self.cv.notify_all();
    }

    /// The serving side's start, once it has one.
    fn wait(&self, ctx: &TestCtx) -> Result<Instant, TestError> {
        let deadline = Instant::now() + super::ctx::ACCEPT_WINDOW + Duration::from_secs(5);
        let mut at = self.at.lock().unwrap();
        loop {
            match *at {
                Some(Ok(t)) => return Ok(t),
                Some(Err(())) => {
                    return Err(TestError::new(
                        ErrorCode::Io,
                        "the serving side could not accept the connections",
                    ))
                }
                None => {}
            }
            if ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            if Instant::now() > deadline {
                return Err(TestError::new(
                    ErrorCode::PeerTimeout,
                    "the serving side did not start the transfer",
                ));
            }
            at = self
                .cv
                .wait_timeout(at, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }
}

static PREPARED: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Removes the private directory and the registry entry when the serving side ends.
struct DirGuard {
    dir: PathBuf,
    key: [u8; KEY_LEN],
}

impl Drop for DirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        PREPARED
            .lock()
            .unwrap()
            .retain(|e| !bool::from(e.key.ct_eq(&self.key)));
    }
}

/// Parses and checks the parameters of `role`'s side (its placement
/// included); also returns the number of data connections.
fn parse(
    kind: Kind,
    params: &Value,
    env: &EngineEnv,
    role: Role,
) -> Result<(Params, usize), Refusal> {
    let bad = |e: meshperf_protocol::params::ParamError| (ErrorCode::BadParams, e.to_string());
    let not_unix = |name: &str| {
        (
            ErrorCode::BadParams,
            format!("{name}: not meaningful for {} (no IP socket)", kind.name()),
        )
    };
    if kind == Kind::UnixRr {
        let p = RrParams::parse(params, env.limits).map_err(bad)?;
        for (name, set) in [
            ("tos", p.tos.is_some()),
            ("congestion", p.congestion.is_some()),
            ("mss", p.mss.is_some()),
            ("client_bind", p.client_bind.is_some()),
            ("server_bind", p.server_bind.is_some()),
            ("flows", p.flows > 1),
            ("threads", p.threads.is_some()),
        ] {
            if set {
                return Err(not_unix(name));
            }
        }
        return Ok((Params::Rr(p), 1));
    }
    let p = StreamParams::parse(params, env.limits).map_err(bad)?;
    for (name, set) in [
        ("tos", p.tos.is_some()),
        ("congestion", p.congestion.is_some()),
        ("mss", p.mss.is_some()),
        ("nodelay", p.nodelay),
        ("rcvlowat", p.rcvlowat.is_some()),
        ("rate", p.rate.is_some()),
        ("client_bind", p.client_bind.is_some()),
        ("server_bind", p.server_bind.is_some()),
        ("probe_ms", p.probe_ms.is_some()),
    ] {
        if set {
            return Err(not_unix(name));
        }
    }
    if p.payload_file.is_some() {
        return Err((
            ErrorCode::BadParams,
            format!("payload_file: tcp_stream only, not {}", kind.name()),
        ));
    }
    if p.zerocopy {
        // Asked of the kernel, not assumed: it refuses SO_ZEROCOPY on
        // AF_UNIX sockets (EOPNOTSUPP), and MSG_ZEROCOPY is TCP's here.
        let (a, _b) = UnixStream::pair()
            .map_err(|e| (ErrorCode::Io, format!("cannot open a Unix socket: {e}")))?;
        let why = match super::zerocopy::enable(&a) {
            Err(e) => super::zerocopy::refused("a Unix socket", &e),
            Ok(()) => format!("zerocopy: tcp_stream only, not {}", kind.name()),
        };
        return Err((ErrorCode::BadParams, why));
    }
    let n = super::side::layout(&p, Role::Client).len();
    placement::plan(&p, role, n)?;
    Ok((Params::Stream(p), n))
}

/// Serving side: a listener in a private directory, filed under a new key.
pub fn prepare(
    kind: Kind,
    params: &Value,
    env: &EngineEnv,
) -> Result<(u16, [u8; 16], Job), Refusal> {
    let (p, n) = parse(kind, params, env, Role::Server)?;
    let key = peer::new_key();
    let io = |e: io::Error| (ErrorCode::Io, format!("cannot open a Unix socket: {e}"));
    let dir = std::env::temp_dir().join(format!(
        "meshperf-{}",
        meshperf_protocol::peer::key_hex(&peer::new_key())
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(io)?;
    let guard = DirGuard {
        dir: dir.clone(),
        key,
    };
    let path = dir.join("s");
    let listener = UnixListener::bind(&path).map_err(io)?;
    let go = Arc::new(Go::default());
    PREPARED.lock().unwrap().push(Entry {
        key,
        kind,
        path,
        go: go.clone(),
    });
    Ok((
        0,
        key,
        Box::new(move |ctx| {
            let _aside = aside(&p, Role::Server, n);
            let socks = accept(&ctx, &listener, &key, n);
            let start = Instant::now();
            go.set(socks.as_ref().map(|_| start).map_err(|_| ()));
            let r = socks.and_then(|socks| run_sockets(&ctx, &p, socks, start));
            drop(guard);
            ctx.report(r);
            ctx.finished();
        }),
    ))
}

/// Driving side: takes the prepared entry for `peer.key` out of the registry.
pub fn start(
    kind: Kind,
    params: Value,
    peer_addr: PeerAddr,
    env: &EngineEnv,
) -> Result<Job, Refusal> {
    let (p, n) = parse(kind, &params, env, Role::Client)?;
    let key = parse_key(&peer_addr.key).ok_or((
        ErrorCode::BadRequest,
        "peer.key must be 32 hex digits".to_string(),
    ))?;
    let entry = {
        let mut reg = PREPARED.lock().unwrap();
        let i = reg.iter().position(|e| bool::from(e.key.ct_eq(&key))).ok_or((
            ErrorCode::BadKey,
            format!("peer.key: unknown or spent session key ({} runs inside one agent: prepare and start on the same agent)", kind.name()),
        ))?;
        reg.remove(i)
    };
    if entry.kind != kind {
        return Err((
            ErrorCode::KindMismatch,
            format!(
                "this test was prepared as {}, not {}",
                entry.kind.name(),
                kind.name()
            ),
        ));
    }
    Ok(Box::new(move |ctx| {
        let _aside = aside(&p, Role::Client, n);
        let r = connect(&entry.path, &key, n).map_err(|e| {
            TestError::new(
                ErrorCode::Io,
                format!("cannot connect the Unix socket: {e}"),
            )
        });
        let r = r.and_then(|socks| Ok((entry.go.wait(&ctx)?, socks)));
        ctx.report(r.and_then(|(start, socks)| run_sockets(&ctx, &p, socks, start)));
        ctx.finished();
    }))
}

/// A `unix_stream` side with pinned data threads keeps this thread and the
/// control loop off their CPUs ([`placement::Aside`]).
fn aside(p: &Params, role: Role, n: usize) -> Option<placement::Aside> {
    match p {
        Params::Stream(p) => Some(placement::aside_for(p, role, n)),
        Params::Rr(_) => None,
    }
}

fn connect(path: &PathBuf, key: &[u8; KEY_LEN], n: usize) -> io::Result<Vec<UnixStream>> {
    (0..n)
        .map(|i| {
            let mut s = UnixStream::connect(path)?;
            s.write_all(&preamble(key, i as u32))?;
            Ok(s)
        })
        .collect()
}

fn accept(
    ctx: &TestCtx,
    l: &UnixListener,
    key: &[u8; KEY_LEN],
    n: usize,
) -> Result<Vec<UnixStream>, TestError> {
    let socks = accept_peer(ctx, l, key, n)?;
    ctx.limit.begin();
    Ok(socks)
}

fn accept_peer(
    ctx: &TestCtx,
    l: &UnixListener,
    key: &[u8; KEY_LEN],
    n: usize,
) -> Result<Vec<UnixStream>, TestError> {
    l.set_nonblocking(true)
        .map_err(|e| TestError::new(ErrorCode::Io, e.to_string()))?;
    let deadline = Instant::now() + super::ctx::ACCEPT_WINDOW;
    let mut socks: Vec<Option<UnixStream>> = (0..n).map(|_| None).collect();
    while socks.iter().any(Option::is_none) {
        if ctx.cancelled() {
            return Err(TestError::cancelled());
        }
        if Instant::now() > deadline {
            return Err(TestError::new(
                ErrorCode::PeerTimeout,
                format!(
                    "nobody started this test within {} s",
                    super::ctx::ACCEPT_WINDOW.as_secs()
                ),
            ));
        }
        let mut s = match l.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => return Err(TestError::new(ErrorCode::Io, format!("accept failed: {e}"))),
        };
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut pre = [0u8; PREAMBLE_LEN];
        if s.read_exact(&mut pre).is_err() {
            continue;
        }
        let Some(idx) = preamble_index(key, &pre).map(|i| i as usize) else {
            continue;
        };
        if idx < n && socks[idx].is_none() {
            let _ = s.set_read_timeout(None);
            socks[idx] = Some(s);
        }
    }
    Ok(socks.into_iter().map(Option::unwrap).collect())
}

/// The summary of either kind (one per test, moved once: its size does not
/// matter).
#[allow(clippy::large_enum_variant)]
#[derive(Serialize)]
#[serde(untagged)]
enum Summary {
    Stream(StreamSummary),
    Rr(RrSummary),
}

fn run_sockets(
    ctx: &TestCtx,
    p: &Params,
    mut socks: Vec<UnixStream>,
    start: Instant,
) -> Result<Summary, TestError> {
    match p {
        Params::Rr(p) => {
            let s = &mut socks[0];
            let mut sum = if ctx.role == Role::Client {
                let out = rr_loop::client(ctx, p, s)?;
                let _ = s.shutdown(std::net::Shutdown::Write);
                client_summary(p, &out)?
            } else {
                server_summary(p, rr_loop::server(ctx, p, s)?)
            };
            sum.transport = Some(Transport::Unix);
            Ok(Summary::Rr(sum))
        }
        Params::Stream(p) => run_stream(ctx, p, socks, start).map(Summary::Stream),
    }
}

fn run_stream(
    ctx: &TestCtx,
    p: &StreamParams,
    socks: Vec<UnixStream>,
    start: Instant,
) -> Result<StreamSummary, TestError> {
    for s in &socks {
        let r = socket2::SockRef::from(s);
        let set = p
            .sndbuf
            .map_or(Ok(()), |n| r.set_send_buffer_size(n as usize))
            .and_then(|_| {
                p.rcvbuf
                    .map_or(Ok(()), |n| r.set_recv_buffer_size(n as usize))
            });
        set.map_err(|e| TestError::new(ErrorCode::BadParams, format!("sndbuf/rcvbuf: {e}")))?;
    }
    let dirs = super::side::layout(p, ctx.role);
    let streams: Vec<(UnixStream, Flow)> = socks.into_iter().zip(dirs).collect();
    let mut outs = super::side::run_streams(ctx, p, streams, start)?;
    let omitted = p.omit_s.map(|o| {
        let iv = std::time::Duration::from_millis(p.interval_ms as u64);
        super::warmup::omit(&mut outs, o, iv)
    });
    let total = |send: bool| {
        outs.iter()
            .filter(|o| o.send == send)
            .map(|o| o.bytes)
            .sum::<u64>()
    };
    let (sent, recvd) = (total(true), total(false));
    let reads: u64 = outs.iter().filter(|o| !o.send).map(|o| o.ops).sum();
    let seconds = outs
        .iter()
        .map(|o| o.last.as_secs_f64())
        .fold(0.0, f64::max);
    let bytes = sent + recvd;
    let bps = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    };
    let streams = outs
        .iter()
        .map(|o| super::side::figures(o, false))
        .collect();
    let line = format!(
        "{} {bytes} bytes in {seconds:.6} seconds over a Unix socket, {} MByte/s",
        if sent > 0 { "sent" } else { "received" },
        super::tcp::stream::mbyte_per_s(bytes, seconds)
    );
    let mut s = StreamSummary {
        bytes,
        seconds,
        bits_per_second: bps,
        sent_bytes: sent,
        received_bytes: recvd,
        reads,
        avg_read_bytes: if reads > 0 {
            recvd as f64 / reads as f64
        } else {
            0.0
        },
        ms_per_read: super::side::ms_per_read(seconds, reads),
        recv_count: p.recv_count,
        limited_by: super::side::limited_by(p, &outs),
        streams,
        msg_bytes: p.msg_bytes,
        transport: Some(Transport::Unix),
        line,
        ..Default::default()
    };
    super::warmup::note(&mut s, omitted);
    Ok(s)
}
