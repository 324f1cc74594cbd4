//! One iperf3 client's test, from PARAM_EXCHANGE to IPERF_DONE (see the
//! module above): its data streams on threads of their own, the test
//! thread on the control connection.

use super::params::{self, Test};
use super::{state, COOKIE_LEN, HANDSHAKE};
use crate::engine::{cpu, sockopt};
use crate::log::log;
use meshperf_protocol::params::{Limits, TcpSocketParams};
use serde_json::{json, Value};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Largest parameters or results a client may send.
const MAX_JSON: u32 = 1 << 20;
/// A stream thread looks at the stop flag this often.
const POLL: Duration = Duration::from_millis(50);
/// After TEST_END a receiving stream reads on until nothing came for this
/// long (what was in flight when the client stopped), or, with `-n`, until
/// every byte came or nothing did for [`DRAIN_BYTES`].
const DRAIN_IDLE: Duration = Duration::from_millis(250);
const DRAIN_BYTES: Duration = Duration::from_secs(2);
/// Past the test's own length (or the agent's --max-duration with `-n`),
/// how long the client has to say TEST_END before the agent ends it.
const GRACE: Duration = Duration::from_secs(10);
/// iperf3's reply to a UDP stream's first datagram (host byte order, as
/// iperf3 writes it).
const UDP_CONNECT_REPLY: u32 = 0x3938_3736;
/// Largest buffer a sending TCP stream writes its blocks from.
const SEND_BUF: usize = 1 << 20;

/// One stream's figures, as iperf3's results carry them.
#[derive(Debug, Default, Clone)]
struct Figures {
    bytes: u64,
    /// Seconds from the test's start to the stream's last byte.
    end_s: f64,
    /// UDP: the highest packet number (iperf3's `packets`).
    packets: u64,
    /// UDP: packets missing below it (iperf3's `errors`).
    errors: u64,
    /// UDP: RFC 1889 jitter, seconds.
    jitter_s: f64,
    out_of_order: u64,
    /// TCP sender: TCP_INFO's total retransmits.
    retransmits: Option<u32>,
}

/// What the stream threads share.
struct Run {
    t: Test,
    start: Instant,
    /// TEST_END came (or the test is over): senders stop, receivers drain.
    stop: AtomicBool,
    /// The client left: everyone stops at once.
    abort: AtomicBool,
    /// Bytes the agent may still send (`-n`, else --max-bytes).
    budget: AtomicU64,
    /// Bytes received so far, all streams.
    received: AtomicU64,
}

impl Run {
    /// Up to `want` bytes of the send budget; 0 when spent.
    fn take(&self, want: u64) -> u64 {
        let mut have = self.budget.load(Ordering::Relaxed);
        loop {
            let n = have.min(want);
            if n == 0 {
                return 0;
            }
            match self.budget.compare_exchange_weak(
                have,
                have - n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return n,
                Err(h) => have = h,
            }
        }
    }
}

fn who(peer: Option<SocketAddr>) -> String {
    peer.map_or("?".into(), |p| p.to_string())
}

/// Serves one client's test on `ctrl`.
pub fn run(
    ctrl: TcpStream,
    peer: Option<SocketAddr>,
    _cookie: [u8; COOKIE_LEN],
    streams: Receiver<TcpStream>,
    limits: &Limits,
    port: u16,
) {
    let from = who(peer);
    match serve(&ctrl, &streams, limits, port) {
        Ok(line) => log!("iperf3: client {from}: {line}"),
        Err(why) => log!("iperf3: client {from}: {why}"),
    }
}

fn send_state(mut c: &TcpStream, s: i8) -> Result<(), String> {
    c.write_all(&[s as u8])
        .map_err(|e| format!("control connection lost: {e}"))
}

fn read_state(mut c: &TcpStream) -> std::io::Result<i8> {
    let mut b = [0u8; 1];
    c.read_exact(&mut b)?;
    Ok(b[0] as i8)
}

fn read_json(mut c: &TcpStream) -> Result<Value, String> {
    let mut n = [0u8; 4];
    c.read_exact(&mut n)
        .map_err(|e| format!("control connection lost: {e}"))?;
    let n = u32::from_be_bytes(n);
    if n > MAX_JSON {
        return Err(format!("sent {n} bytes of JSON, above {MAX_JSON}"));
    }
    let mut b = vec![0u8; n as usize];
    c.read_exact(&mut b)
        .map_err(|e| format!("control connection lost: {e}"))?;
    serde_json::from_slice(&b).map_err(|e| format!("sent JSON that does not parse: {e}"))
}

fn write_json(mut c: &TcpStream, v: &Value) -> Result<(), String> {
    let b = serde_json::to_vec(v).expect("results serialize");
    let mut m = (b.len() as u32).to_be_bytes().to_vec();
    m.extend_from_slice(&b);
    c.write_all(&m)
        .map_err(|e| format!("control connection lost: {e}"))
}

/// The test; the record's line of how it went.
fn serve(
    ctrl: &TcpStream,
    streams: &Receiver<TcpStream>,
    limits: &Limits,
    port: u16,
) -> Result<String, String> {
    ctrl.set_read_timeout(Some(HANDSHAKE)).ok();
    ctrl.set_nodelay(true).ok();
    send_state(ctrl, state::PARAM_EXCHANGE)?;
    let p = read_json(ctrl)?;
    let t = match params::check(&p, limits) {
        Ok(t) => t,
        Err(r) => {
            let mut m = vec![state::SERVER_ERROR as u8];
            m.extend_from_slice(&r.errno.to_be_bytes());
            m.extend_from_slice(&0i32.to_be_bytes());
            let mut c = ctrl;
            let _ = c.write_all(&m);
            return Err(format!("refused: {}", r.line));
        }
    };
    cpu::enter();
    let local = ctrl
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let mut congestion = None;
    let data = if t.udp {
        Data::Udp(udp_streams(ctrl, &t, SocketAddr::new(local.ip(), port))?)
    } else {
        send_state(ctrl, state::CREATE_STREAMS)?;
        Data::Tcp(tcp_streams(streams, &t, &mut congestion)?)
    };
    let budget = if t.reverse && t.bytes > 0 {
        t.bytes
    } else {
        limits.max_bytes
    };
    let run = Arc::new(Run {
        t: t.clone(),
        start: Instant::now(),
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        budget: AtomicU64::new(budget),
        received: AtomicU64::new(0),
    });
    send_state(ctrl, state::TEST_START)?;
    cpu::begin();
    let meter = cpu::current();
    let handles = match data {
        Data::Tcp(v) => spawn_streams(v, &run, &meter, tcp_send, tcp_recv),
        Data::Udp(v) => spawn_streams(v, &run, &meter, udp_send, udp_recv),
    };
    let ended = send_state(ctrl, state::TEST_RUNNING).and_then(|_| wait_end(ctrl, &t, limits));
    run.stop.store(true, Ordering::Relaxed);
    if ended.is_err() {
        run.abort.store(true, Ordering::Relaxed);
    }
    let figs: Vec<Figures> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect();
    ended?;
    let cpu = cpu::finish();
    send_state(ctrl, state::EXCHANGE_RESULTS)?;
    let _theirs = read_json(ctrl)?;
    let mut ours = results(&t, &figs, cpu.as_ref());
    if let Some(c) = congestion {
        ours["congestion_used"] = json!(c);
    }
    write_json(ctrl, &ours)?;
    send_state(ctrl, state::DISPLAY_RESULTS)?;
    match read_state(ctrl) {
        Ok(state::IPERF_DONE) => {}
        Ok(s) => return Err(format!("sent state {s} instead of IPERF_DONE")),
        Err(e) => return Err(format!("left before IPERF_DONE: {e}")),
    }
    let bytes: u64 = figs.iter().map(|f| f.bytes).sum();
    let secs = figs.iter().map(|f| f.end_s).fold(0.0, f64::max);
    Ok(format!(
        "{} {}, {} stream{}, {} {bytes} bytes in {secs:.3} s (iperf3 {})",
        if t.udp { "udp" } else { "tcp" },
        if t.reverse { "reverse" } else { "normal" },
        t.streams,
        if t.streams == 1 { "" } else { "s" },
        if t.reverse { "sent" } else { "received" },
        t.client_version
    ))
}

enum Data {
    Tcp(Vec<TcpStream>),
    Udp(Vec<UdpSocket>),
}

/// The client's data connections (each sent the cookie), with the
/// options it asked for, meshperf's own socket options code.
fn tcp_streams(
    streams: &Receiver<TcpStream>,
    t: &Test,
    congestion: &mut Option<String>,
) -> Result<Vec<TcpStream>, String> {
    let opts = TcpSocketParams {
        nodelay: t.nodelay,
        sndbuf: t.window,
        rcvbuf: t.window,
        tos: t.tos,
        congestion: t.congestion.clone(),
        ..TcpSocketParams::default()
    };
    let mut v = Vec::new();
    for i in 0..t.streams {
        let s = streams
            .recv_timeout(HANDSHAKE)
            .map_err(|_| format!("stream {} of {} never connected", i + 1, t.streams))?;
        let ipv6 = s.local_addr().map(|a| a.is_ipv6()).unwrap_or(false);
        let applied =
            sockopt::apply(&s, &opts, ipv6).map_err(|e| format!("stream {}: {e}", i + 1))?;
        if congestion.is_none() {
            *congestion = applied.congestion;
        }
        v.push(s);
    }
    Ok(v)
}

/// A UDP socket on the test's port, beside the others (iperf3's server
/// binds one per stream, each connected to its client's).
fn udp_bound(at: SocketAddr) -> Result<UdpSocket, String> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(at),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )
    .map_err(|e| format!("UDP socket: {e}"))?;
    s.set_reuse_address(true).ok();
    #[cfg(all(unix, not(any(target_os = "solaris", target_os = "illumos"))))]
    s.set_reuse_port(true).ok();
    s.bind(&at.into())
        .map_err(|e| format!("UDP port {at}: {e}"))?;
    Ok(s.into())
}

/// UDP streams: for each, the client's first datagram on the port, the
/// socket connected to it and iperf3's reply.
fn udp_streams(ctrl: &TcpStream, t: &Test, at: SocketAddr) -> Result<Vec<UdpSocket>, String> {
    let client = ctrl
        .peer_addr()
        .map_err(|e| format!("no peer address: {e}"))?
        .ip();
    let mut listening = udp_bound(at)?;
    send_state(ctrl, state::CREATE_STREAMS)?;
    let mut v = Vec::new();
    for i in 0..t.streams {
        let deadline = Instant::now() + HANDSHAKE;
        // Only from the client's own address: a datagram with another
        // source (forged, or someone else's) would aim the test's UDP at
        // a third party.
        let from = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("UDP stream {} of {} never came", i + 1, t.streams));
            }
            listening.set_read_timeout(Some(left)).ok();
            let mut b = [0u8; 64];
            match listening.recv_from(&mut b) {
                Ok((_, from)) if from.ip() == client => break from,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(format!("UDP stream {}: {e}", i + 1)),
            }
        };
        listening
            .connect(from)
            .map_err(|e| format!("UDP stream {}: {e}", i + 1))?;
        if let Some(tos) = t.tos {
            let _ = socket2::SockRef::from(&listening).set_tos_v4(u32::from(tos));
        }
        if let Some(w) = t.window {
            let r = socket2::SockRef::from(&listening);
            let _ = r.set_recv_buffer_size(w as usize);
            let _ = r.set_send_buffer_size(w as usize);
        }
        let next = if i + 1 < t.streams {
            Some(udp_bound(at)?)
        } else {
            None
        };
        listening
            .send(&UDP_CONNECT_REPLY.to_ne_bytes())
            .map_err(|e| format!("UDP stream {}: {e}", i + 1))?;
        v.push(listening);
        match next {
            Some(n) => listening = n,
            None => break,
        }
    }
    Ok(v)
}

/// Waits for the client's TEST_END until the test's length (or the
/// agent's --max-duration) and [`GRACE`]; an error when the client left
/// or never said it.
fn wait_end(ctrl: &TcpStream, t: &Test, limits: &Limits) -> Result<(), String> {
    let longest = if t.time_s > 0.0 {
        t.time_s.min(limits.max_duration_s)
    } else {
        limits.max_duration_s
    };
    let deadline = Instant::now() + Duration::from_secs_f64(longest) + GRACE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no TEST_END within {longest} s and {} s: ended by the agent",
                GRACE.as_secs()
            ));
        }
        ctrl.set_read_timeout(Some(left.min(Duration::from_secs(1))))
            .ok();
        match read_state(ctrl) {
            Ok(state::TEST_END) => {
                ctrl.set_read_timeout(Some(HANDSHAKE)).ok();
                return Ok(());
            }
            Ok(state::CLIENT_TERMINATE) => {
                return Err("the client ended the test (interrupted)".into())
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                return Err("the client closed its control connection mid-test".into())
            }
            Err(e) => return Err(format!("control connection lost mid-test: {e}")),
        }
    }
}

/// Whether a receiving stream is done: aborted, or after TEST_END nothing
/// came for a while (or, with `-n`, every byte came).
fn drained(r: &Run, drain_from: &mut Option<Instant>, last: Option<Instant>) -> bool {
    if r.abort.load(Ordering::Relaxed) {
        return true;
    }
    if !r.stop.load(Ordering::Relaxed) {
        return false;
    }
    let now = Instant::now();
    let from = *drain_from.get_or_insert(now);
    let quiet = last.map_or(from, |l| l.max(from));
    if r.t.bytes > 0 && !r.t.udp {
        r.received.load(Ordering::Relaxed) >= r.t.bytes || now - quiet >= DRAIN_BYTES
    } else {
        now - quiet >= DRAIN_IDLE
    }
}

/// One thread per stream, counted in the test's CPU meter: each sends
/// (`-R`, the client receives) or receives.
fn spawn_streams<S: Send + 'static>(
    streams: Vec<S>,
    run: &Arc<Run>,
    meter: &Option<Arc<cpu::Meter>>,
    send: fn(&Run, S) -> Figures,
    recv: fn(&Run, S) -> Figures,
) -> Vec<std::thread::JoinHandle<Figures>> {
    streams
        .into_iter()
        .map(|s| {
            let (r, m) = (run.clone(), meter.clone());
            std::thread::spawn(move || {
                let _w = cpu::Worker::count(m.as_deref());
                if r.t.reverse {
                    send(&r, s)
                } else {
                    recv(&r, s)
                }
            })
        })
        .collect()
}

fn tcp_recv(r: &Run, mut s: TcpStream) -> Figures {
    s.set_read_timeout(Some(POLL)).ok();
    let mut buf = vec![0u8; (r.t.len as usize).clamp(64 * 1024, 4 << 20)];
    let mut f = Figures::default();
    let (mut last, mut drain) = (None, None);
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                f.bytes += n as u64;
                r.received.fetch_add(n as u64, Ordering::Relaxed);
                last = Some(Instant::now());
                if r.abort.load(Ordering::Relaxed) {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        if drained(r, &mut drain, last) {
            break;
        }
    }
    f.end_s = last.map_or(0.0, |l| (l - r.start).as_secs_f64());
    f
}

fn tcp_send(r: &Run, mut s: TcpStream) -> Figures {
    s.set_write_timeout(Some(POLL)).ok();
    // A block is written from a buffer of at most SEND_BUF (a 64 MiB -l
    // on 64 streams would otherwise hold 4 GiB).
    let buf = vec![0u8; (r.t.len as usize).min(SEND_BUF)];
    let mut f = Figures::default();
    'blocks: while !r.stop.load(Ordering::Relaxed) {
        let n = r.take(r.t.len) as usize;
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            match s.write(&buf[..(n - off).min(buf.len())]) {
                Ok(0) => break 'blocks,
                Ok(k) => {
                    off += k;
                    f.bytes += k as u64;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    if r.stop.load(Ordering::Relaxed) {
                        break 'blocks;
                    }
                }
                Err(_) => break 'blocks,
            }
        }
    }
    f.end_s = r.start.elapsed().as_secs_f64();
    f.retransmits = sockopt::tcp_info(&s).map(|i| i.total_retrans);
    f
}

/// iperf3's UDP header: seconds and microseconds of the send time, the
/// packet number (32 or 64 bits), all big-endian; its length.
fn header_len(t: &Test) -> usize {
    if t.counters_64 {
        16
    } else {
        12
    }
}

fn udp_recv(r: &Run, s: UdpSocket) -> Figures {
    s.set_read_timeout(Some(POLL)).ok();
    let mut buf = vec![0u8; 65_536];
    let mut f = Figures::default();
    let hl = header_len(&r.t);
    let (mut last, mut drain) = (None, None);
    let mut prev_transit: Option<f64> = None;
    loop {
        match s.recv(&mut buf) {
            Ok(n) if n >= hl => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64();
                f.bytes += n as u64;
                r.received.fetch_add(n as u64, Ordering::Relaxed);
                last = Some(Instant::now());
                let sec = u32::from_be_bytes(buf[0..4].try_into().unwrap());
                let usec = u32::from_be_bytes(buf[4..8].try_into().unwrap());
                let pcount = if r.t.counters_64 {
                    u64::from_be_bytes(buf[8..16].try_into().unwrap())
                } else {
                    u64::from(u32::from_be_bytes(buf[8..12].try_into().unwrap()))
                };
                // iperf3's accounting (iperf_udp_recv).
                if pcount > f.packets {
                    if pcount > f.packets + 1 {
                        f.errors += pcount - 1 - f.packets;
                    }
                    f.packets = pcount;
                } else {
                    f.out_of_order += 1;
                    f.errors = f.errors.saturating_sub(1);
                }
                let transit = now - (f64::from(sec) + f64::from(usec) / 1e6);
                if let Some(p) = prev_transit {
                    let d = (transit - p).abs();
                    f.jitter_s += (d - f.jitter_s) / 16.0;
                }
                prev_transit = Some(transit);
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // ICMP port unreachable and the like: the client is gone or
            // not yet there; the control connection says which.
            Err(_) => {}
        }
        if drained(r, &mut drain, last) {
            break;
        }
    }
    f.end_s = last.map_or(0.0, |l| (l - r.start).as_secs_f64());
    f
}

fn udp_send(r: &Run, s: UdpSocket) -> Figures {
    let mut buf = vec![0u8; r.t.len as usize];
    let mut f = Figures::default();
    let per_byte = 8.0 / r.t.rate;
    let start = Instant::now();
    let mut sent_bits_time = 0.0f64;
    while !r.stop.load(Ordering::Relaxed) {
        let n = r.take(r.t.len) as usize;
        if n < header_len(&r.t) {
            break;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        f.packets += 1;
        buf[0..4].copy_from_slice(&(now.as_secs() as u32).to_be_bytes());
        buf[4..8].copy_from_slice(&now.subsec_micros().to_be_bytes());
        if r.t.counters_64 {
            buf[8..16].copy_from_slice(&f.packets.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(f.packets as u32).to_be_bytes());
        }
        if s.send(&buf[..n]).is_ok() {
            f.bytes += n as u64;
        }
        sent_bits_time += n as f64 * per_byte;
        // On schedule: the next datagram when the rate allows it.
        loop {
            let ahead = sent_bits_time - start.elapsed().as_secs_f64();
            if ahead <= 0.0 || r.stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_secs_f64(ahead.min(POLL.as_secs_f64())));
        }
    }
    f.end_s = r.start.elapsed().as_secs_f64();
    f
}

/// The server's results as iperf3 sends them (send_results in
/// iperf_api.c): CPU, whether the sender counted retransmits, per stream.
fn results(
    t: &Test,
    figs: &[Figures],
    cpu: Option<&meshperf_protocol::summary::CpuSummary>,
) -> Value {
    let pct = |x: f64| {
        cpu.filter(|c| c.seconds > 0.0)
            .map_or(0.0, |c| x / c.seconds * 100.0)
    };
    let retrans = t.reverse && !t.udp && figs.iter().any(|f| f.retransmits.is_some());
    let streams: Vec<Value> = figs
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({
                // iperf3 numbers its streams 1, 3, 4, 5, ... (iperf_add_stream
                // counts the list from 2 and then each stream in it).
                "id": if i == 0 { 1 } else { i + 2 },
                "bytes": f.bytes,
                "retransmits": if retrans { i64::from(f.retransmits.unwrap_or(0)) } else { -1 },
                "jitter": f.jitter_s,
                "errors": f.errors,
                "omitted_errors": 0,
                "packets": f.packets,
                "omitted_packets": 0,
                "start_time": 0,
                "end_time": f.end_s,
            })
        })
        .collect();
    json!({
        "cpu_util_total": cpu.map_or(0.0, |c| c.percent),
        "cpu_util_user": pct(cpu.map_or(0.0, |c| c.user_seconds)),
        "cpu_util_system": pct(cpu.map_or(0.0, |c| c.system_seconds)),
        "sender_has_retransmits": if !t.reverse { -1 } else { i32::from(retrans) },
        "streams": streams,
    })
}
