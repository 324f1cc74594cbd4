//! `udp_stream`: paced UDP bursts (udp_bw_mon/udp_bw_resp). The seed's
//! exchange runs over the TCP control connection, so it never times out on a
//! lost control datagram: the sender asks `zero`, the receiver answers
//! `zeroed`, the burst follows, then the sender's `stats` (its own figures)
//! is answered by the receiver's `stats` with the whole summary, computed with
//! `meshperf_stats::udp` so the page derives the same numbers from the raw
//! samples. Pacing follows absolute deadlines `start + k * wait_us`; the last
//! [`crate::engine::pace::SPIN`] before a deadline spins because timer wake-ups arrive late, and a
//! sender that fell behind catches up with slightly shorter gaps, never a
//! burst, and after a stall of over 1 ms the schedule slips
//! ([`crate::engine::pace`]).
//!
//! `streams` flows run side by side, each with its own pair of sockets
//! and control line(s) and the exchange above, at its share of `rate`.
//! The first flow is bound as a single one always was; each further one
//! is bound on its own line to the same serving port, where the serving
//! side gives it a socket of its own connected to the flow's peer (a
//! connected socket is the kernel's better match, so it gets that peer's
//! datagrams and the first socket everything else). The flows are spread
//! over worker threads ([`worker`]; `threads`, `cpus`, `server_cpus` as
//! tcp_stream's, [`crate::engine::placement`]).

mod recv;
mod send;
mod worker;

use crate::engine::ctx::TestCtx;
use crate::engine::error::{Refusal, TestError};
use crate::engine::placement;
use crate::engine::udp::batch;
use crate::engine::udp::{self, Flow, Line, UdpTest};
use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{
    Direction, Kind, Limits, LulPhase, ParamError, ProbeParams, UdpGso, UdpSocketParams,
    UdpStreamParams,
};
use meshperf_protocol::summary::{
    PacingError, Timestamps, UdpStreamFigures, UdpStreamReceive, UdpStreamSend, UdpStreamSummary,
    RATE_REACHED,
};
use meshperf_protocol::units::g6;
use serde_json::Value;
use std::net::{SocketAddr, UdpSocket};
use std::time::SystemTime;

/// Datagrams per sendmmsg/recvmmsg call (unpaced sending, and receiving).
const BATCH: usize = 32;

/// One way of one flow on this side: its control line and socket.
pub struct Leg {
    line: Line,
    sock: UdpSocket,
    token: u64,
    /// The peer's UDP address (the only one this leg talks to).
    peer: SocketAddr,
    /// The socket is connected to `peer` (else sources are checked).
    connected: bool,
    /// Datagrams from anyone else.
    foreign: u64,
    /// The samples' stream: flow `i` is `i`, its reverse `streams + i`.
    stream: u16,
    /// This side sends on it (else receives).
    send: bool,
}

/// What a step of a leg did ([`worker`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Moved data or spun: step again at once.
    Busy,
    /// Nothing to do until its socket is readable (or a check is due).
    Idle,
    /// A sender's next datagram is due then.
    Wait(std::time::Instant),
    /// The burst is over: the figures are next.
    Ended,
    /// A sender's `stats` were answered.
    Done,
}

/// A leg's end: its figures, the two halves they came from, and its
/// samples (handed over once every leg of the side has ended: a leg that
/// ends first must not hold up the others' receiving while the controller
/// takes its samples).
pub struct Ended {
    leg: Leg,
    figures: UdpStreamFigures,
    snd: Option<UdpStreamSend>,
    rcv: Option<UdpStreamReceive>,
    note: Option<String>,
    timeouts: u64,
    samples: Vec<(SampleKind, Vec<u64>)>,
}

/// Legs of a side: a flow per stream, and with `both` its reverse.
fn tasks(p: &UdpStreamParams) -> usize {
    p.streams as usize * (1 + usize::from(p.direction == Direction::Both))
}

impl UdpTest for UdpStreamParams {
    const KIND: Kind = Kind::UdpStream;
    fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        UdpStreamParams::parse(v, limits)
    }
    fn sock(&self) -> &UdpSocketParams {
        &self.sock
    }
    type ServeSummary = UdpStreamSummary;
    type DriveSummary = UdpStreamSummary;
    fn lines(&self) -> usize {
        // A line per flow and way: [`legs`].
        self.streams as usize * (1 + usize::from(self.direction == Direction::Both)) - 1
    }
    const SHARED_PORT: bool = true;
    fn check_side(&self, serving: bool) -> Result<(), Refusal> {
        placement::checked(self.threads, self.cpus_of(serving), tasks(self)).map(|_| ())
    }
    fn aside(&self, serving: bool) -> Option<placement::Aside> {
        let place = placement::checked(self.threads, self.cpus_of(serving), tasks(self)).ok()?;
        Some(place.aside())
    }
    fn probe(&self) -> Option<ProbeParams> {
        UdpStreamParams::probe(self)
    }
    fn duration_s(&self) -> Option<f64> {
        self.duration_s
    }
    fn check_kernel(&self, serving: bool) -> Result<(), Refusal> {
        if self.gso != UdpGso::On {
            return Ok(());
        }
        // Which way this side's datagrams go.
        let send = match self.direction {
            Direction::Both => true,
            Direction::Send => !serving,
            Direction::Receive => serving,
        };
        let receive = self.direction == Direction::Both || !send;
        batch::offloads(send, receive).map_err(|e| {
            (
                ErrorCode::BadParams,
                format!("gso: on, but this agent's kernel has {e}; use gso auto or off"),
            )
        })
    }
    fn serve(&self, ctx: &TestCtx, f: Flow) -> Result<UdpStreamSummary, TestError> {
        run_flow(ctx, self, f, self.direction == Direction::Receive, false)
    }
    fn drive(&self, ctx: &TestCtx, f: Flow) -> Result<UdpStreamSummary, TestError> {
        run_flow(ctx, self, f, self.direction == Direction::Send, true)
    }
}

fn run_flow(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    mut f: Flow,
    sending: bool,
    driving: bool,
) -> Result<UdpStreamSummary, TestError> {
    // This side's view: the address its UDP flow is bound to.
    let peer = f.peer.to_string();
    let mut probe = f.probe.take();
    if let Some(pr) = &mut probe {
        pr.load(LulPhase::loaded_by(p.direction));
    }
    let place = placement::checked(p.threads, p.cpus_of(!driving), tasks(p))
        .map_err(|(code, m)| TestError::new(code, m))?;
    // Each flow's figures at its share of the rate.
    let share = UdpStreamParams {
        rate: p.rate.map(|r| r / p.streams as f64),
        ..p.clone()
    };
    let legs = legs(ctx, p, f, sending, driving)?;
    // After `legs` grew the receive buffers: rcvbuf_actual is the real one.
    let socket = udp::applied(&legs[0].sock, &p.sock);
    let mut ended = worker::run(ctx, &share, legs, &place)?;
    ended.sort_by_key(|e| e.leg.stream);
    for e in &mut ended {
        for (kind, v) in std::mem::take(&mut e.samples) {
            ctx.sink
                .samples(kind, ctx.role, ctx.test_id, ctx.step, e.leg.stream, &v);
        }
    }
    let n = p.streams as usize;
    let rev = ended.split_off(n);
    let figures = combine(p, &ended);
    let reverse = (!rev.is_empty()).then(|| Box::new(combine(p, &rev)));
    let each = |v: &[Ended]| (n > 1).then(|| v.iter().map(|e| e.figures.clone()).collect());
    let (streams, reverse_streams) = (each(&ended), each(&rev));
    let probe = match probe {
        Some(mut pr) => {
            pr.unload();
            // Each direction's throughput as its receiver counted it: up
            // is the driving agent's flow (the top-level figures when it
            // sends), down the serving agent's.
            let got = |x: &UdpStreamFigures| {
                (
                    x.received.unwrap_or(0) * p.pkt_bytes,
                    x.recv_seconds.unwrap_or(0.0),
                )
            };
            let none = (0, 0.0);
            let (down, up) = match (p.direction, &reverse) {
                (Direction::Both, Some(r)) => (got(r), got(&figures)),
                (Direction::Send, _) => (none, got(&figures)),
                _ => (got(&figures), none),
            };
            let mut line = ended.swap_remove(0).leg.line;
            pr.finish(ctx, &mut line, 1, down, up)?
        }
        None => None,
    };
    Ok(UdpStreamSummary {
        figures,
        socket,
        peer,
        reverse,
        probe,
        streams,
        reverse_streams,
    })
}

/// This side's legs: flow 0 on `f` as bound, flows 1.. bound now on their
/// own lines, and with `both` a reverse leg per flow on the same sockets.
/// Control lines: `f.line` for flow 0, then `f.extra` = flows 1.., then
/// the reverse of flows 0.. (one flow: the reverse on the one extra line,
/// as before `streams`).
fn legs(
    ctx: &TestCtx,
    p: &UdpStreamParams,
    mut f: Flow,
    sending: bool,
    driving: bool,
) -> Result<Vec<Leg>, TestError> {
    let n = p.streams as usize;
    let both = p.direction == Direction::Both;
    // With `both` the driving agent sends the flows, the serving one
    // their reverse.
    let sending = if both { driving } else { sending };
    let mut extra = std::mem::take(&mut f.extra);
    let rev_lines = extra.split_off((n - 1).min(extra.len()));
    let sock0 = f.sock.try_clone().map_err(udp::io_err)?;
    let mut flows = vec![(f.line, sock0, f.token, f.peer, f.connected)];
    let mut known = vec![f.token];
    for mut line in extra {
        let (sock, token, peer) = if driving {
            let local = line.stream().local_addr().map_err(udp::io_err)?.ip();
            let peer_ip = f.peer.ip();
            let (s, t) = udp::client_bind(ctx, &mut line, local, peer_ip, &p.sock)?;
            let peer = s.peer_addr().map_err(udp::io_err)?;
            (s, t, peer)
        } else {
            let (t, from) =
                udp::serve_bind_also(ctx, &mut line, &f.sock, f.peer.ip(), &mut f.foreign, &known)?;
            let s = udp::twin_for(&f.sock, from, &p.sock).map_err(udp::io_err)?;
            (s, t, from)
        };
        known.push(token);
        flows.push((line, sock, token, peer, true));
    }
    if (both || !sending) && p.sock.rcvbuf.is_none() {
        for (_, s, ..) in &flows {
            udp::grow_rcvbuf(s, 8 << 20);
        }
    }
    let mut legs = Vec::with_capacity(tasks(p));
    let mut backs = Vec::new();
    for (i, (line, sock, token, peer, connected)) in flows.into_iter().enumerate() {
        if both {
            backs.push((
                sock.try_clone().map_err(udp::io_err)?,
                token,
                peer,
                connected,
            ));
        }
        let foreign = if i == 0 { f.foreign } else { 0 };
        legs.push(Leg {
            line,
            sock,
            token,
            peer,
            connected,
            foreign,
            stream: i as u16,
            send: sending,
        });
    }
    for (i, (line, (sock, token, peer, connected))) in rev_lines.into_iter().zip(backs).enumerate()
    {
        legs.push(Leg {
            line,
            sock,
            token,
            peer,
            connected,
            foreign: 0,
            stream: (n + i) as u16,
            send: !sending,
        });
    }
    if legs.len() != tasks(p) {
        return Err(TestError::new(
            ErrorCode::Protocol,
            format!("{} control lines for {} flows", legs.len(), tasks(p)),
        ));
    }
    Ok(legs)
}

/// The figures of a side's flows one way together: one flow's as they
/// are; several flows' counts summed, their times the longest, their
/// rates the totals over those times, `jitter_us` their mean (the gap
/// and arrival statistics, per flow only, are in `streams`).
fn combine(p: &UdpStreamParams, legs: &[Ended]) -> UdpStreamFigures {
    if let [one] = legs {
        return one.figures.clone();
    }
    let snds: Vec<&UdpStreamSend> = legs.iter().filter_map(|e| e.snd.as_ref()).collect();
    let rcvs: Vec<&UdpStreamReceive> = legs.iter().filter_map(|e| e.rcv.as_ref()).collect();
    let all = |n: usize| n == legs.len() && n > 0;
    let snd = all(snds.len()).then(|| UdpStreamSend {
        sent: snds.iter().map(|s| s.sent).sum(),
        send_seconds: snds.iter().map(|s| s.send_seconds).fold(0.0, f64::max),
        send_gap_us: None,
        pacing_error_us: PacingError {
            mean: None,
            p99: None,
        },
        sender_nice: snds.iter().find_map(|s| s.sender_nice),
        schedule_slips: snds.iter().map(|s| s.schedule_slips).sum(),
        schedule_slipped_us: snds.iter().map(|s| s.schedule_slipped_us).sum(),
        from: snds[0].from.clone(),
        to: snds[0].to.clone(),
        omitted: snds.iter().map(|s| s.omitted).sum(),
        gso: Some(snds.iter().all(|s| s.gso == Some(true))),
        send_calls: snds.iter().map(|s| s.send_calls).sum(),
        icmp_errors: snds.iter().map(|s| s.icmp_errors).sum(),
    });
    let jitters: Vec<f64> = rcvs.iter().filter_map(|r| r.jitter_us).collect();
    let rcv = all(rcvs.len()).then(|| UdpStreamReceive {
        received: rcvs.iter().map(|r| r.received).sum(),
        lost: rcvs.iter().map(|r| r.lost).sum(),
        out_of_order: rcvs.iter().map(|r| r.out_of_order).sum(),
        duplicates: rcvs.iter().map(|r| r.duplicates).sum(),
        out_of_range: rcvs.iter().map(|r| r.out_of_range).sum(),
        packets: rcvs.iter().map(|r| r.packets).sum(),
        foreign: rcvs.iter().map(|r| r.foreign).sum(),
        recv_seconds: rcvs.iter().map(|r| r.recv_seconds).fold(0.0, f64::max),
        jitter_us: (!jitters.is_empty())
            .then(|| jitters.iter().sum::<f64>() / jitters.len() as f64),
        interarrival_us: None,
        timestamps: if rcvs.iter().all(|r| r.timestamps == Timestamps::Kernel) {
            Timestamps::Kernel
        } else {
            Timestamps::User
        },
        from: rcvs[0].from.clone(),
        to: rcvs[0].to.clone(),
        gro: Some(rcvs.iter().all(|r| r.gro == Some(true))),
        recv_calls: rcvs.iter().map(|r| r.recv_calls).sum(),
        recv_messages: rcvs.iter().map(|r| r.recv_messages).sum(),
        icmp_errors: rcvs.iter().map(|r| r.icmp_errors).sum(),
    });
    let note = legs.iter().find_map(|e| e.note.clone());
    let timeouts = legs.iter().map(|e| e.timeouts).sum();
    // The count asked for in all.
    let all_p = UdpStreamParams {
        count: p.count * legs.len() as u64,
        ..p.clone()
    };
    summary(&all_p, snd.as_ref(), rcv.as_ref(), note, timeouts)
}

/// Both sides' figures in one summary (docs/design.md keys) with the seed's
/// line; a side whose figures never came (`None`) leaves its keys null.
fn summary(
    p: &UdpStreamParams,
    snd: Option<&UdpStreamSend>,
    rcv: Option<&UdpStreamReceive>,
    note: Option<String>,
    timeouts: u64,
) -> UdpStreamFigures {
    // Datagrams of the warm-up are not in the figures.
    let omitted = snd.and_then(|s| s.omitted);
    let sent_n = snd.map(|s| s.sent - omitted.unwrap_or(0));
    let (sent, send_s) = snd.map_or((0.0, 0.0), |s| (sent_n.unwrap_or(0) as f64, s.send_seconds));
    let (received, recv_s) = rcv.map_or((0.0, 0.0), |r| (r.received as f64, r.recv_seconds));
    let rate = |n: f64, bytes: u64, s: f64| {
        if s > 0.0 {
            n * bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    };
    let send_bps = rate(sent, p.pkt_bytes, send_s);
    let recv_bps = rate(received, p.pkt_bytes, recv_s);
    let wire_bps = rate(received, p.pkt_bytes + p.overhead_bytes, recv_s);
    let per = |s: f64, n: f64| if n > 0.0 { s * 1e6 / n } else { 0.0 };
    let ia = rcv.and_then(|r| r.interarrival_us);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The receiver's view of the addresses, else the sender's.
    let from = rcv
        .map(|r| r.from.as_str())
        .or(snd.and_then(|s| s.from.as_deref()));
    let to = rcv
        .and_then(|r| r.to.as_deref())
        .or(snd.map(|s| s.to.as_str()));
    let rcv_count = |f: fn(&UdpStreamReceive) -> u64| rcv.map_or(0.0, |r| f(r) as f64);
    let mut fields = vec![
        now.to_string(),
        from.unwrap_or("-").to_string(),
        to.unwrap_or("-").to_string(),
        p.pkt_bytes.to_string(),
        format!("{sent}"),
        "0".into(),
        timeouts.to_string(),
        g6(per(send_s, sent)),
        format!("{}", p.wait_us),
        format!("{:.0}", send_s * 1e6),
        g6(send_bps / 1e6),
        format!("{received}"),
        format!("{}", rcv_count(|r| r.lost)),
        format!("{}", rcv_count(|r| r.out_of_order)),
        format!("{:.0}", recv_s * 1e6),
        g6(per(recv_s, received)),
        g6(recv_bps / 1e6),
        g6(wire_bps / 1e6),
    ];
    let ia_fields = ia.map_or([0.0; 8], |s| {
        [
            s.n as f64, s.mean, s.sigma, s.skew, s.kurtosis, s.median, s.iq25, s.iq75,
        ]
    });
    for v in ia_fields {
        fields.push(g6(v));
    }
    UdpStreamFigures {
        sent: sent_n,
        received: rcv.map(|r| r.received),
        lost: rcv.map(|r| r.lost),
        out_of_order: rcv.map(|r| r.out_of_order),
        duplicates: rcv.map(|r| r.duplicates),
        foreign: rcv.map(|r| r.foreign),
        out_of_range: rcv.map(|r| r.out_of_range),
        send_seconds: snd.map(|s| s.send_seconds),
        recv_seconds: rcv.map(|r| r.recv_seconds),
        send_bits_per_second: send_bps,
        recv_bits_per_second: recv_bps,
        wire_bits_per_second: wire_bps,
        jitter_us: rcv.and_then(|r| r.jitter_us),
        send_gap_us: snd.and_then(|s| s.send_gap_us),
        interarrival_us: ia,
        pacing_error_us: snd.map(|s| s.pacing_error_us),
        sender_nice: snd.and_then(|s| s.sender_nice),
        schedule_slips: snd.map(|s| s.schedule_slips),
        schedule_slipped_us: snd.map(|s| s.schedule_slipped_us),
        timestamps: rcv.map(|r| r.timestamps),
        time_per_frame_us: per(send_s, sent),
        recv_time_per_frame_us: per(recv_s, received),
        pkt_bytes: p.pkt_bytes,
        wait_us: p.wait_us,
        count: p.count,
        overhead_bytes: p.overhead_bytes,
        direction: p.direction,
        complete: note.is_none(),
        note,
        line: fields.join("; "),
        rate: p.rate,
        rate_reached: p
            .rate
            .filter(|_| snd.is_some())
            .map(|asked| send_bps >= asked * RATE_REACHED),
        duration_s: p.duration_s,
        omit_s: p.omit_s,
        omitted,
        gso: snd.and_then(|s| s.gso),
        gro: rcv.and_then(|r| r.gro),
        send_calls: snd.and_then(|s| s.send_calls),
        recv_calls: rcv.and_then(|r| r.recv_calls),
        recv_messages: rcv.and_then(|r| r.recv_messages),
        icmp_errors: match (
            snd.and_then(|s| s.icmp_errors),
            rcv.and_then(|r| r.icmp_errors),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        },
    }
}
