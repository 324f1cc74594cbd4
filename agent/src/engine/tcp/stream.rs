//! `tcp_stream`: bulk TCP throughput between two agents (socketsend/socketslurp,
//! bw_tcp, netperf TCP_STREAM, iperf3). Both roles share [`run_side`]; they
//! differ only in how the connections are set up.

use crate::engine::bulk::{Flow, Outcome};
use crate::engine::ctx::TestCtx;
use crate::engine::error::TestError;
use crate::engine::pace;
use crate::engine::payload;
use crate::engine::peer::{self, Connected};
use crate::engine::placement;
use crate::engine::side::{figures, layout, limited_by, ms_per_read};
use crate::engine::sockopt::{self, Applied};
use crate::engine::udp::probe::beside;
use crate::engine::warmup;
use crate::engine::zerocopy;
use meshperf_protocol::msg::{ErrorCode, PeerAddr, Role};
use meshperf_protocol::params::{Kind, LulPhase, StreamParams};
use meshperf_protocol::summary::{StreamSummary, TcpStreamSocket};
use serde_json::Value;
use std::net::{IpAddr, TcpListener, UdpSocket};
use std::sync::Arc;

/// Serving side set-up (see [`crate::engine::prepare`]).
pub fn prepare(
    params: &Value,
    env: &crate::engine::ctx::EngineEnv,
) -> Result<(u16, [u8; 16], crate::engine::ctx::Job), crate::engine::error::Refusal> {
    let p = StreamParams::parse(params, env.limits)
        .map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    crate::engine::bind::check_server(p.server_bind)?;
    crate::engine::sockopt::check_congestion(p.congestion.as_deref())?;
    placement::plan(&p, Role::Server, layout(&p, Role::Server).len())?;
    let file = open_payload(&p, Role::Server, env)?;
    let ip = p.server_bind.unwrap_or(env.data_ip);
    check_zerocopy(&p, Role::Server, ip.is_ipv6())?;
    let (listener, port) = peer::data_listener(ip, env.data_ports, &p.socket())?;
    let probe = match p.probe_ms {
        Some(_) => Some(beside::open(env, ip)?),
        None => None,
    };
    let key = peer::new_key();
    Ok((
        port,
        key,
        Box::new(move |ctx| serve(ctx, p, listener, key, file, probe)),
    ))
}

/// Driving side set-up (see [`crate::engine::start`]).
pub fn start(
    params: Value,
    peer_addr: PeerAddr,
    env: &crate::engine::ctx::EngineEnv,
) -> Result<crate::engine::ctx::Job, crate::engine::error::Refusal> {
    let p = StreamParams::parse(&params, env.limits)
        .map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    crate::engine::bind::check_client(p.client_bind, p.server_bind, &peer_addr)?;
    crate::engine::sockopt::check_congestion(p.congestion.as_deref())?;
    placement::plan(&p, Role::Client, layout(&p, Role::Client).len())?;
    let file = open_payload(&p, Role::Client, env)?;
    let v6 = p
        .server_bind
        .map_or(peer_addr.host.contains(':'), |a| a.is_ipv6());
    check_zerocopy(&p, Role::Client, v6)?;
    Ok(Box::new(move |ctx| drive(ctx, p, peer_addr, file)))
}

/// `zerocopy` on a side that sends: refused now, before any connection,
/// where this kernel refuses SO_ZEROCOPY on a TCP socket (a side that only
/// receives has nothing to send zero-copy and ignores it).
fn check_zerocopy(
    p: &StreamParams,
    role: Role,
    ipv6: bool,
) -> Result<(), crate::engine::error::Refusal> {
    if p.zerocopy && layout(p, role).contains(&Flow::Send) {
        zerocopy::check_tcp(ipv6)?;
    }
    Ok(())
}

/// The payload file of a side that sends (`payload_file`), opened and
/// checked now, before the test is accepted; `None` for a side that only
/// receives or a test without one.
fn open_payload(
    p: &StreamParams,
    role: Role,
    env: &crate::engine::ctx::EngineEnv,
) -> Result<Option<payload::Opened>, crate::engine::error::Refusal> {
    match &p.payload_file {
        Some(name) if layout(p, role).contains(&Flow::Send) => {
            payload::open(env.payload_dir, name).map(Some)
        }
        _ => Ok(None),
    }
}

/// Reads the opened payload file into memory before any data connection
/// (the disk is not part of the test); on failure the side fails.
fn load_payload(
    ctx: &TestCtx,
    p: &StreamParams,
    file: Option<payload::Opened>,
) -> Result<Option<Arc<payload::FileData>>, ()> {
    // A count-bounded stream sends `count` writes at most: no more of the
    // file is read than that.
    let need = match p.duration_s {
        None => p.count.map(|c| c.saturating_mul(p.msg_bytes)),
        Some(_) => None,
    };
    match file.map(|f| f.read(p.msg_bytes as usize, need)).transpose() {
        Ok(f) => Ok(f.map(Arc::new)),
        Err(e) => {
            ctx.fail(ErrorCode::Io, e.to_string());
            ctx.finished();
            Err(())
        }
    }
}

/// Serving side: accept the peer on `listener`, then run.
fn serve(
    ctx: TestCtx,
    p: StreamParams,
    listener: TcpListener,
    key: [u8; 16],
    file: Option<payload::Opened>,
    probe: Option<UdpSocket>,
) {
    let Ok(file) = load_payload(&ctx, &p, file) else {
        return;
    };
    let dirs = layout(&p, Role::Server);
    // Pinned data threads: this thread (and the probe loops it starts)
    // and the control loop keep off their CPUs.
    let _aside = placement::aside_for(&p, Role::Server, dirs.len());
    let r = peer::accept(&ctx, listener, &key, Kind::TcpStream, dirs.len()).and_then(|mut conn| {
        let probe = match (probe, p.probe()) {
            (Some(sock), Some(pp)) => {
                let max = beside::max_probes(&pp, p.duration_s, &ctx);
                let s = beside::serve(&ctx, &mut conn.control, sock, conn.peer_ip, &pp, max)?;
                Some(beside::Probe::Serving(s))
            }
            _ => None,
        };
        run_side(&ctx, &p, conn, &dirs, file, probe)
    });
    ctx.report(r);
    ctx.finished();
}

/// Driving side: connect to the prepared peer, then run.
fn drive(ctx: TestCtx, p: StreamParams, peer_addr: PeerAddr, file: Option<payload::Opened>) {
    let Ok(file) = load_payload(&ctx, &p, file) else {
        return;
    };
    let dirs = layout(&p, Role::Client);
    let _aside = placement::aside_for(&p, Role::Client, dirs.len());
    let r = peer::connect(&ctx, &peer_addr, Kind::TcpStream, &p.socket(), dirs.len()).and_then(
        |mut conn| {
            let probe = match p.probe() {
                Some(pp) => {
                    let max = beside::max_probes(&pp, p.duration_s, &ctx);
                    let d = beside::drive(&ctx, &mut conn.control, conn.peer_ip, &pp, max)?;
                    Some(beside::Probe::Driving(d))
                }
                None => None,
            };
            run_side(&ctx, &p, conn, &dirs, file, probe)
        },
    );
    ctx.report(r);
    ctx.finished();
}

fn run_side(
    ctx: &TestCtx,
    p: &StreamParams,
    mut conn: Connected,
    dirs: &[Flow],
    file: Option<Arc<payload::FileData>>,
    mut probe: Option<beside::Probe>,
) -> Result<StreamSummary, TestError> {
    let from_file = file.as_ref().map(|f| (f.name.clone(), f.file_bytes));
    let ipv6 = conn.peer_ip.is_ipv6();
    let mut applied: Option<Applied> = None;
    let sock = p.socket();
    for s in &conn.data {
        let a =
            sockopt::apply(s, &sock, ipv6).map_err(|m| TestError::new(ErrorCode::BadParams, m))?;
        applied.get_or_insert(a);
    }
    let streams: Vec<_> = std::mem::take(&mut conn.data)
        .into_iter()
        .zip(dirs.iter().copied())
        .collect();
    let pacing_rate = pace_senders(p, &streams)?;
    if p.zerocopy {
        // Before the go: a refusal comes before any byte moves.
        for (s, _) in streams.iter().filter(|(_, d)| *d == Flow::Send) {
            zerocopy::enable(s).map_err(|e| {
                TestError::new(ErrorCode::BadParams, zerocopy::refused("a TCP socket", &e))
            })?;
        }
    }
    // A side that receives counts from when its go left (the peer cannot
    // have sent anything before: a late wake-up of this thread cannot make
    // its transfer look faster than it was); one that only sends counts
    // from when it may start.
    let go_sent = peer::exchange_go(&mut conn.control)?;
    let start = if dirs.contains(&Flow::Recv) {
        go_sent
    } else {
        std::time::Instant::now()
    };
    if let Some(pr) = &mut probe {
        pr.load(LulPhase::loaded_by(p.direction));
    }
    let mut outcomes = crate::engine::side::run_streams_with(ctx, p, streams, start, file)?;
    if let Some(pr) = &mut probe {
        pr.unload();
    }
    let moved: u64 = outcomes.iter().map(|o| o.bytes).sum();
    let done = peer::exchange_done(&mut conn.control, moved)?;
    let probe = match probe {
        Some(pr) => {
            let (sent, recvd, send_s, recv_s) = figures_each_way(&outcomes);
            pr.finish(
                ctx,
                &mut conn.control,
                p.streams,
                (recvd, recv_s),
                (sent, send_s),
            )?
        }
        None => None,
    };
    // Count-bounded, every receiving stream gets exactly its share; a
    // time-bounded sender may stop before a receiver's recv_count is full.
    if let Some(per) = p.count.and(p.bytes_per_stream()) {
        for o in outcomes.iter().filter(|o| !o.send) {
            if o.bytes != per {
                return Err(TestError::new(
                    ErrorCode::ShortTransfer,
                    format!(
                        "stream {} received {} of {} bytes: the peer closed early",
                        o.index, o.bytes, per
                    ),
                ));
            }
        }
    }
    let omitted = p.omit_s.map(|o| {
        let iv = std::time::Duration::from_millis(p.interval_ms as u64);
        warmup::omit(&mut outcomes, o, iv)
    });
    let mut s = summary(
        p,
        &outcomes,
        applied.unwrap_or_default(),
        conn.peer_ip,
        done.bytes,
    );
    s.probe = probe;
    (s.payload_file, s.payload_file_bytes) = from_file.unzip();
    s.rate = p.rate;
    s.pacing_rate = pacing_rate;
    warmup::note(&mut s, omitted);
    Ok(s)
}

/// Bytes sent and received, and the sending and receiving times (the
/// longest stream's each way).
fn figures_each_way(outs: &[Outcome]) -> (u64, u64, f64, f64) {
    let secs_of = |send: bool| {
        outs.iter()
            .filter(|o| o.send == send)
            .map(|o| o.last.as_secs_f64())
            .fold(0.0, f64::max)
    };
    let bytes_of = |send: bool| {
        outs.iter()
            .filter(|o| o.send == send)
            .map(|o| o.bytes)
            .sum()
    };
    (
        bytes_of(true),
        bytes_of(false),
        secs_of(true),
        secs_of(false),
    )
}

/// `rate`: each connection this side sends on paced by the kernel at its
/// share of the rate (the rate is per direction, all streams together),
/// with [`pace::PACING_HEADROOM`].
/// Returns the rate the kernel holds for one connection.
fn pace_senders(
    p: &StreamParams,
    streams: &[(std::net::TcpStream, Flow)],
) -> Result<Option<f64>, TestError> {
    let Some(rate) = p.rate else {
        return Ok(None);
    };
    let mut held = None;
    for (s, _) in streams.iter().filter(|(_, d)| *d == Flow::Send) {
        let share = rate / p.streams as f64 * pace::PACING_HEADROOM;
        let r = pace::socket_rate(s, share).map_err(|e| {
            TestError::new(
                ErrorCode::BadParams,
                format!("rate: SO_MAX_PACING_RATE: {e}"),
            )
        })?;
        held = Some(r);
    }
    Ok(held)
}

fn side_line(verb: &str, prep: &str, bytes: u64, secs: f64, peer: IpAddr) -> String {
    let mbs = mbyte_per_s(bytes, secs);
    format!("{verb} {bytes} bytes in {secs:.6} seconds {prep} {peer}, {mbs} MByte/s")
}

/// The seed lines' rate, 10^6 bytes per second, with at least three
/// significant digits (whole numbers from 100 up, as socketsend prints its
/// large rates): 894, 44.7, 0.195. A slow paced test no longer prints 0.
pub fn mbyte_per_s(bytes: u64, secs: f64) -> String {
    let v = if secs > 0.0 {
        bytes as f64 / secs / 1e6
    } else {
        0.0
    };
    if v >= 100.0 || v <= 0.0 {
        return format!("{v:.0}");
    }
    let decimals = (2 - v.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// The summary of one side (keys per docs/design.md, more may be added).
fn summary(
    p: &StreamParams,
    outs: &[Outcome],
    applied: Applied,
    peer: IpAddr,
    peer_bytes: u64,
) -> StreamSummary {
    let sum = |send: bool, f: fn(&Outcome) -> u64| {
        outs.iter().filter(|o| o.send == send).map(f).sum::<u64>()
    };
    let (sent, recvd, send_s, recv_s) = figures_each_way(outs);
    let (writes, reads) = (sum(true, |o| o.ops), sum(false, |o| o.ops));
    let bytes = sent + recvd;
    let seconds = send_s.max(recv_s);
    let mut lines = Vec::new();
    if outs.iter().any(|o| o.send) {
        lines.push(side_line("sent", "to", sent, send_s, peer));
    }
    if outs.iter().any(|o| !o.send) {
        lines.push(side_line("received", "from", recvd, recv_s, peer));
    }
    let retransmits: u64 = outs
        .iter()
        .filter_map(|o| o.info)
        .map(|i| i.total_retrans as u64)
        .sum();
    let streams = outs.iter().map(|o| figures(o, true)).collect();
    let zc = outs.iter().filter_map(|o| o.zerocopy).reduce(|mut a, b| {
        a += b;
        a
    });
    StreamSummary {
        bytes,
        seconds,
        bits_per_second: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        },
        sent_bytes: sent,
        received_bytes: recvd,
        send_seconds: Some(send_s),
        recv_seconds: Some(recv_s),
        writes: Some(writes),
        reads,
        avg_read_bytes: if reads > 0 {
            recvd as f64 / reads as f64
        } else {
            0.0
        },
        ms_per_mib: Some(if recvd > 0 {
            recv_s * 1e3 / (recvd as f64 / 1048576.0)
        } else {
            0.0
        }),
        ms_per_read: ms_per_read(recv_s, reads),
        recv_count: p.recv_count,
        limited_by: limited_by(p, outs),
        payload_file: None,
        payload_file_bytes: None,
        streams,
        retransmits: Some(retransmits),
        interval_ms: Some(p.interval_ms),
        msg_bytes: p.msg_bytes,
        transport: None,
        tcp: Some(TcpStreamSocket {
            read_bytes: p.read_bytes,
            direction: p.direction,
            peer: peer.to_string(),
            peer_bytes,
            sndbuf_requested: p.sndbuf,
            rcvbuf_requested: p.rcvbuf,
            sndbuf_actual: applied.sndbuf_actual,
            rcvbuf_actual: applied.rcvbuf_actual,
            nodelay: applied.nodelay,
            tos: applied.tos,
            congestion: applied.congestion,
            rcvlowat: applied.rcvlowat,
            mss_requested: p.mss,
            mss: applied.mss,
        }),
        probe: None,
        line: lines.join("; "),
        zerocopy_sends: zc.map(|c| c.sends),
        zerocopy_zero_copied: zc.map(|c| c.zero_copied),
        zerocopy_copied: zc.map(|c| c.copied),
        zerocopy_enobufs: zc.map(|c| c.enobufs),
        tcp_info: crate::engine::tcp_view_sum::summary(outs),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::mbyte_per_s;

    #[test]
    fn seed_line_rates_keep_three_significant_digits() {
        assert_eq!(mbyte_per_s(1_073_741_824, 1.2), "895");
        assert_eq!(mbyte_per_s(44_700_000, 1.0), "44.7");
        assert_eq!(mbyte_per_s(20_480, 0.105), "0.195");
        assert_eq!(mbyte_per_s(1_000, 1.0), "0.00100");
        assert_eq!(mbyte_per_s(5, 0.0), "0");
    }
}
