//! `stamp`: this agent as a STAMP Session-Sender (RFC 8762) toward a
//! reflector that is not a meshperf agent: a router's, another tool's
//! (stamp-suite), or another meshperf agent's `--stamp` reflector, [`reflector`]). One side only: there is nothing to prepare, the
//! controller starts it with the target in the parameters, and the target
//! must lie inside this agent's `--allow-target` ranges
//! ([`super::target`]).
//!
//! Packets leave on an absolute schedule (`wait_us`; 0: each after the
//! last's answer), several in flight; each answer is matched to its packet
//! by the sequence number and timestamp it echoes (and our SSID, when the
//! reflector echoes one), so another sender's packets, a late answer or a
//! repeated one are counted, never taken for a round trip. In
//! authenticated mode an answer with a wrong HMAC is counted and dropped.
//! [`wire`] is the packet format both roles share.

#[cfg(target_os = "linux")]
pub mod reflector;
pub mod wire;

use super::ctx::{EngineEnv, Job, TestCtx};
use super::error::{Refusal, TestError};
use super::target::{Admitted, Targets};
use super::udp;
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::StampParams;
use meshperf_protocol::summary::{StampSummary, Stats};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wire::Layout;

/// Packets in a row past their timeout, with no answer between, after
/// which the reflector is taken to have stopped answering (as udp_rr's).
const GIVE_UP: u64 = 10;
/// How often the loop looks at a cancel and sends progress.
const LOOK: Duration = Duration::from_millis(20);

/// The `--stamp` reflector's counters (registered by
/// [`crate::serve::metrics::Counters`]).
#[derive(Clone)]
pub struct ReflectorCounters {
    /// Datagrams received on the reflector's port.
    pub received: prometheus::IntCounter,
    /// Answers sent.
    pub reflected: prometheus::IntCounter,
    /// Datagrams not answered, by reason (malformed, bad_hmac, rate,
    /// state_full).
    pub dropped: prometheus::IntCounterVec,
    /// Bytes received and sent (sent is never more).
    pub bytes_in: prometheus::IntCounter,
    pub bytes_out: prometheus::IntCounter,
}

/// Why the reflector drops a datagram (the `reason` label).
pub const DROP_REASONS: &[&str] = &["malformed", "bad_hmac", "rate", "state_full"];

/// `stamp` has no serving agent.
pub fn prepare(_: &Value, _: &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal> {
    Err((
        ErrorCode::BadParams,
        "stamp has no serving agent: one agent sends to the reflector its target names (start it, no prepare)".into(),
    ))
}

/// Checks the parameters, the key and (for an address) `--allow-target`
/// before any traffic; a host name is resolved and checked on the test's
/// thread (the system resolver blocks).
pub fn start(params: Value, _peer: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    let p = StampParams::parse(&params, env.limits)
        .map_err(|e| (ErrorCode::BadParams, e.to_string()))?;
    let key =
        match (p.auth, env.stamp_key) {
            (false, _) => None,
            (true, Some(k)) => Some(k.clone()),
            (true, None) => return Err((
                ErrorCode::BadParams,
                "auth: this agent has no STAMP key; its operator gives one with --stamp-key FILE"
                    .into(),
            )),
        };
    let what = format!("stamp://{}", p.target_text());
    let admitted = match p.host.parse::<IpAddr>() {
        Ok(ip) => Some(
            env.targets
                .admit("stamp", &what, SocketAddr::new(ip, p.port))?,
        ),
        Err(_) => None,
    };
    let targets = env.targets.clone();
    Ok(Box::new(move |ctx| {
        let r = admitted
            .map_or_else(|| resolve(&targets, &p, &what), Ok)
            .and_then(|a| send(&ctx, &p, key.as_ref(), &a, what));
        ctx.report(r);
        ctx.finished();
    }))
}

/// The target's first address, admitted by `--allow-target`.
fn resolve(targets: &Targets, p: &StampParams, what: &str) -> Result<Admitted, TestError> {
    let ips = crate::dns::addresses(&p.host, 64)
        .map_err(|e| TestError::new(ErrorCode::Unreachable, format!("{what}: {e}")))?;
    let ip = ips
        .first()
        .ok_or_else(|| TestError::new(ErrorCode::Unreachable, format!("{what}: no address")))?;
    targets
        .admit("stamp", what, SocketAddr::new(*ip, p.port))
        .map_err(|(code, m)| TestError::new(code, m))
}

/// A socket connected to `to`, with the plan's TOS byte.
fn socket(to: SocketAddr, tos: Option<u8>) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(to), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(t) = tos {
        if to.is_ipv4() {
            s.set_tos_v4(u32::from(t))?;
        } else {
            #[cfg(not(windows))]
            s.set_tclass_v6(u32::from(t))?;
        }
    }
    s.connect(&to.into())?;
    Ok(s.into())
}

/// What came back for one packet answered in time.
struct Answer {
    seq: u64,
    /// Our send and receive times, ns since the test's start.
    t1: u64,
    t4: u64,
    /// The reflector's receive and send times, ns since 1970 on its clock.
    t2: u128,
    t3: u128,
}

/// The sender's counts as it goes.
#[derive(Default)]
struct Counts {
    out_of_order: u64,
    duplicates: u64,
    late: u64,
    bad_hmac: u64,
    foreign: u64,
    icmp: u64,
}

/// What the reflector said of itself and of our packets, last seen.
#[derive(Default)]
struct Reflected {
    synced: Option<bool>,
    ptp: Option<bool>,
    ttl: Option<u8>,
    dscp: Option<u8>,
    ecn: Option<u8>,
}

/// The test: sends, matches answers, sums up.
fn send(
    ctx: &TestCtx,
    p: &StampParams,
    key: Option<&wire::Key>,
    a: &Admitted,
    what: String,
) -> Result<StampSummary, TestError> {
    let sock = socket(a.to, p.tos).map_err(udp::io_err)?;
    // The interface toward the reflector, for the summary's `link`.
    if let Ok(l) = sock.local_addr() {
        let _ = ctx.local.set(l.ip());
    }
    let lay = Layout::of(p.auth);
    let ssid = p.ssid.unwrap_or_else(|| {
        let mut b = [0u8; 2];
        getrandom::fill(&mut b).expect("the OS random source works");
        u16::from_be_bytes(b).max(1)
    });
    let wall0 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mono0 = Instant::now();
    let ns = |t: Instant| t.duration_since(mono0).as_nanos() as u64;
    let timeout = Duration::from_millis(p.timeout_ms);
    let wait = Duration::from_micros(p.wait_us);
    let count = p.count.unwrap_or(u64::MAX);
    let until = p.duration_s.map(|d| mono0 + Duration::from_secs_f64(d));
    let err_est = wire::error_estimate(p.ptp(), false);
    let mut pkt = vec![0u8; p.pkt_bytes as usize];
    let cos = p.cos.then(|| p.tos.unwrap_or(0) >> 2);
    wire::write_tlvs(&mut pkt, lay.len, cos);
    let mut buf = vec![0u8; 65536];
    // Per packet sent: its send time (ns since mono0) and wire timestamp;
    // answered or not.
    let mut t1s: Vec<u64> = Vec::new();
    let mut stamps: Vec<u64> = Vec::new();
    let mut answered: Vec<bool> = Vec::new();
    let mut got: Vec<Answer> = Vec::new();
    let mut n = Counts::default();
    let mut seen = Reflected::default();
    let mut highest: Option<u64> = None;
    // Packets whose timeout has passed, looked at in order.
    let (mut checked, mut in_a_row) = (0usize, 0u64);
    let mut note = None;
    let mut cap = crate::engine::pace::RateCap::new(&ctx.limits);
    let (mut look, mut tick) = (Instant::now(), Instant::now());
    loop {
        let now = Instant::now();
        let sent = t1s.len() as u64;
        let more = sent < count && until.map_or(true, |u| now < u);
        let last = t1s.last().map(|&t| mono0 + Duration::from_nanos(t));
        let due = if !more {
            None
        } else if !wait.is_zero() {
            Some(mono0 + wait * u32::try_from(sent).unwrap_or(u32::MAX))
        } else {
            // Back to back: after the last's answer or its timeout.
            match last {
                Some(l) if !answered[answered.len() - 1] => Some(l + timeout),
                _ => Some(now),
            }
        };
        if let Some(d) = due.filter(|d| *d <= now) {
            let _ = d;
            if let Some(c) = cap.as_mut() {
                c.take(pkt.len());
            }
            let t1 = Instant::now();
            let ts = wire::ts_of(wall0 + u128::from(ns(t1)), p.ptp());
            wire::put32(&mut pkt, lay.seq, sent as u32);
            wire::put64(&mut pkt, lay.ts, ts);
            wire::put16(&mut pkt, lay.err, err_est);
            wire::put16(&mut pkt, lay.ssid, ssid);
            if let Some(k) = key {
                k.sign(&mut pkt);
            }
            match udp::send_past_icmp(&mut n.icmp, || sock.send(&pkt)) {
                Ok(_) => {}
                Err(e) => {
                    note = Some(format!("sending packet {sent} to {} failed: {e}", a.to));
                    break;
                }
            }
            t1s.push(ns(t1));
            stamps.push(ts);
            answered.push(false);
            continue;
        }
        // Packets past their timeout, in order: the give-up rule.
        while checked < t1s.len() && mono0 + Duration::from_nanos(t1s[checked]) + timeout <= now {
            if answered[checked] {
                in_a_row = 0;
            } else {
                in_a_row += 1;
            }
            checked += 1;
        }
        if in_a_row >= GIVE_UP {
            note = Some(format!(
                "the reflector stopped answering: {GIVE_UP} packets in a row had no answer within {} ms",
                p.timeout_ms
            ));
            break;
        }
        // Done when nothing is left to send and every packet is answered
        // or past its timeout.
        let open_until = last.map(|l| l + timeout);
        if !more && (answered.iter().all(|&x| x) || open_until.map_or(true, |u| now >= u)) {
            break;
        }
        if now.duration_since(look) >= LOOK {
            look = now;
            if ctx.cancelled() {
                return Err(TestError::cancelled());
            }
            if now.duration_since(tick) >= Duration::from_secs(1) {
                tick = now;
                let done = match (p.duration_s, p.count) {
                    (Some(d), _) => now.duration_since(mono0).as_secs_f64() / d,
                    (None, Some(c)) => sent as f64 / c as f64,
                    _ => 0.0,
                };
                udp::progress(ctx, mono0, sent * p.pkt_bytes, done);
            }
        }
        // Wait for an answer until the next send, the last timeout or the
        // next look, whichever is first.
        let mut until_t = now + LOOK;
        if let Some(d) = due {
            until_t = until_t.min(d);
        }
        if let Some(u) = open_until.filter(|_| !more) {
            until_t = until_t.min(u);
        }
        let left = until_t.saturating_duration_since(now);
        if left.is_zero() {
            continue;
        }
        sock.set_read_timeout(Some(left.max(Duration::from_micros(1))))
            .map_err(udp::io_err)?;
        let len = match sock.recv(&mut buf) {
            Ok(len) => len,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if udp::icmp_error(&e) => {
                n.icmp += 1;
                continue;
            }
            Err(e) => return Err(udp::io_err(e)),
        };
        let t4 = Instant::now();
        let r = &buf[..len];
        if len < lay.len {
            n.foreign += 1;
            continue;
        }
        if let Some(k) = key {
            if !k.verify(r) {
                n.bad_hmac += 1;
                continue;
            }
        }
        let s_seq = u64::from(wire::get32(r, lay.s_seq));
        let their_ssid = wire::get16(r, lay.ssid);
        let ours = (s_seq as usize) < stamps.len()
            && stamps[s_seq as usize] == wire::get64(r, lay.s_ts)
            && (their_ssid == ssid || their_ssid == 0);
        if !ours {
            // Another sender's packet, or one altered on the way.
            n.foreign += 1;
            continue;
        }
        let i = s_seq as usize;
        if answered[i] {
            n.duplicates += 1;
            continue;
        }
        if t4.duration_since(mono0 + Duration::from_nanos(t1s[i])) > timeout {
            n.late += 1;
            continue;
        }
        answered[i] = true;
        match highest {
            Some(h) if s_seq < h => n.out_of_order += 1,
            _ => highest = Some(s_seq),
        }
        let err = wire::get16(r, lay.err);
        let ptp = wire::is_ptp(err);
        seen.synced = Some(wire::is_synced(err));
        seen.ptp = Some(ptp);
        seen.ttl = Some(r[lay.s_ttl]);
        if p.cos {
            if let Some(c) = wire::tlvs(r, lay.len).and_then(|t| {
                t.into_iter()
                    .find(|t| t.ty == wire::TLV_CLASS_OF_SERVICE && t.flags & wire::TLV_U == 0)
            }) {
                if let Some((_, dscp2, ecn)) = wire::cos_read(&r[c.value.0..c.value.1]) {
                    seen.dscp = Some(dscp2);
                    seen.ecn = Some(ecn);
                }
            }
        }
        got.push(Answer {
            seq: s_seq,
            t1: t1s[i],
            t4: ns(t4),
            t2: wire::ns_of(wire::get64(r, lay.rx_ts), ptp),
            t3: wire::ns_of(wire::get64(r, lay.ts), ptp),
        });
    }
    let seconds = mono0.elapsed().as_secs_f64();
    let sent = t1s.len() as u64;
    a.sent(sent, sent * p.pkt_bytes);
    crate::log::log!(
        "stamp to {}: {sent} packets, {} bytes sent, {} answered",
        a.to,
        sent * p.pkt_bytes,
        got.len()
    );
    Ok(summarize(
        ctx, p, a, what, ssid, wall0, sent, &got, &n, &seen, seconds, cap, note,
    ))
}

/// The summary and the samples of the answered packets.
#[allow(clippy::too_many_arguments)]
fn summarize(
    ctx: &TestCtx,
    p: &StampParams,
    a: &Admitted,
    target: String,
    ssid: u16,
    wall0: u128,
    sent: u64,
    got: &[Answer],
    n: &Counts,
    seen: &Reflected,
    seconds: f64,
    cap: Option<crate::engine::pace::RateCap>,
    note: Option<String>,
) -> StampSummary {
    // The reflector's own time is taken out of each round trip; a
    // reflector whose send time is before its receive time (a clock step)
    // is taken to have spent none.
    let rtt: Vec<u64> = got
        .iter()
        .map(|g| {
            let held = g.t3.saturating_sub(g.t2).min(u128::from(u64::MAX)) as u64;
            (g.t4 - g.t1).saturating_sub(held)
        })
        .collect();
    let rel = |t: u128| t as f64 - wall0 as f64;
    let t1: Vec<f64> = got.iter().map(|g| g.t1 as f64).collect();
    let t2: Vec<f64> = got.iter().map(|g| rel(g.t2)).collect();
    let t3: Vec<f64> = got.iter().map(|g| rel(g.t3)).collect();
    let t4: Vec<f64> = got.iter().map(|g| g.t4 as f64).collect();
    let us = |v: Vec<f64>| Stats::new(&v).ok();
    let forward = us(t1.iter().zip(&t2).map(|(a, b)| (b - a) / 1e3).collect());
    let backward = us(t3.iter().zip(&t4).map(|(c, d)| (d - c) / 1e3).collect());
    let fit =
        meshperf_stats::clock::clock_fit(&t1, &t2, &t3, &t4, (got.len() / 4).clamp(1, 5000)).ok();
    // Jitter over the round trips in the order they arrived.
    let mut jitter = 0.0;
    for w in rtt.windows(2) {
        let d = (w[1] as f64 - w[0] as f64).abs() / 1e3;
        jitter += (d - jitter) / 16.0;
    }
    let samples = |kind: SampleKind, v: &[u64]| {
        ctx.sink
            .samples(kind, ctx.role, ctx.test_id, ctx.step, 0, v)
    };
    samples(SampleKind::RttNs, &rtt);
    samples(
        SampleKind::Sequence,
        &got.iter().map(|g| g.seq).collect::<Vec<_>>(),
    );
    samples(
        SampleKind::SendTimeNs,
        &got.iter().map(|g| g.t1).collect::<Vec<_>>(),
    );
    samples(
        SampleKind::ArrivalNs,
        &got.iter().map(|g| g.t4).collect::<Vec<_>>(),
    );
    let clamp = |t: u128| t.min(u128::from(u64::MAX)) as u64;
    samples(
        SampleKind::PeerRecvNs,
        &got.iter().map(|g| clamp(g.t2)).collect::<Vec<_>>(),
    );
    samples(
        SampleKind::PeerSendNs,
        &got.iter().map(|g| clamp(g.t3)).collect::<Vec<_>>(),
    );
    let answered = got.len() as u64;
    let note = note.or_else(|| {
        (answered == 0 && sent > 0)
            .then(|| format!("the reflector at {} answered none of {sent} packets", a.to))
    });
    StampSummary {
        target,
        peer: a.to.to_string(),
        auth: p.auth,
        clock: if p.ptp() { "ptp" } else { "ntp" }.into(),
        pkt_bytes: p.pkt_bytes,
        ssid,
        sent,
        answered,
        lost: sent - answered,
        out_of_order: n.out_of_order,
        duplicates: n.duplicates,
        late: n.late,
        bad_hmac: n.bad_hmac,
        foreign: n.foreign,
        icmp_errors: n.icmp,
        rtt_us: us(rtt.iter().map(|&r| r as f64 / 1e3).collect()),
        jitter_us: jitter,
        forward_us: forward,
        backward_us: backward,
        clock_offset_us: fit.map(|f| f.offset / 1e3),
        clock_uncertainty_us: fit.map(|f| f.uncertainty / 1e3),
        reflector_synced: seen.synced,
        reflector_ptp: seen.ptp,
        reflector_ttl: seen.ttl,
        reflector_dscp: seen.dscp,
        reflector_ecn: seen.ecn,
        seconds,
        rate_capped_us: crate::engine::pace::capped_us(&cap),
        complete: note.is_none(),
        note,
    }
}
