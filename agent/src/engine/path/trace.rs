//! One direction's work, on the tracing agent: the hops (rising TTL), the
//! path MTU (DF probes from the interface's MTU down, by the hops'
//! fragmentation-needed answers, else by halving when big datagrams
//! vanish), and the marks (each TOS byte sent, what the peer saw, and for a
//! changed one the first hop whose ICMP shows the change).

use super::probe::{Answer, IcmpKind, Prober, SMALL};
use meshperf_protocol::params::{PathParams, MTU_PROBES_MAX};
use meshperf_protocol::summary::{
    MarkResult, PathDirection, PathHop, PathMtu, UNVERIFIED_FROM_MAX,
};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Silent hops in a row after which the trace ends (`silence`): past them
/// nothing answers (a hop dropping the ICMP of all behind it, a peer
/// dropping the probes).
pub const SILENT_RUN: u8 = 5;

/// What the direction's work may take (the agent's limits, cancel).
pub struct Budget<'a> {
    pub deadline: Instant,
    pub cancel: &'a AtomicBool,
    /// Told the share of this direction done (0 to 1) as it goes.
    pub progress: &'a dyn Fn(f64),
}

impl Budget<'_> {
    fn out(&self) -> bool {
        Instant::now() >= self.deadline || self.cancel.load(Ordering::Relaxed)
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The whole direction: trace, then MTU and marks when the peer answered.
pub fn direction(
    pr: &mut Prober,
    p: &PathParams,
    from: String,
    to: String,
    b: &Budget,
) -> io::Result<PathDirection> {
    let mut d = PathDirection {
        from,
        to,
        ..PathDirection::default()
    };
    // What came while echoing the peer's probes is not this direction's.
    pr.take_unverified();
    let before = pr.unverified;
    let r = work(pr, p, b, &mut d);
    d.unverified_icmp = pr.unverified - before;
    r.map(|()| d)
}

/// [`direction`]'s probes, filling `d`.
fn work(pr: &mut Prober, p: &PathParams, b: &Budget, d: &mut PathDirection) -> io::Result<()> {
    let wait = Duration::from_millis(p.wait_ms);
    trace(pr, p, wait, b, d)?;
    let Some(peer_hop) = d.peer_hop else {
        return Ok(());
    };
    (b.progress)(0.6);
    if p.mtu && !b.out() {
        d.mtu = Some(mtu(pr, wait, b, &mut d.hops, peer_hop)?);
        (b.progress)(0.8);
    }
    for tos in p.marks() {
        if b.out() {
            break;
        }
        let m = mark(pr, p, wait, b, &d.hops, peer_hop, tos)?;
        d.marks.push(m);
        (b.progress)(0.8 + 0.2 * d.marks.len() as f64 / p.marks().len() as f64);
    }
    if b.out() && d.end == "peer" && Instant::now() >= b.deadline {
        d.end = "time_limit".into();
    }
    Ok(())
}

fn small(pr: &Prober) -> u32 {
    SMALL as u32 + pr.headers()
}

/// The hops, by rising TTL, until the peer echoes, `max_hops`, a run of
/// [`SILENT_RUN`] silent hops, or an unreachable.
fn trace(
    pr: &mut Prober,
    p: &PathParams,
    wait: Duration,
    b: &Budget,
    d: &mut PathDirection,
) -> io::Result<()> {
    let mut silent_run = 0;
    d.end = "max_hops".into();
    for ttl in p.first_ttl as u8..=p.max_hops as u8 {
        if b.out() {
            d.end = "time_limit".into();
            return Ok(());
        }
        let mut hop = PathHop {
            ttl,
            ..PathHop::default()
        };
        let mut unreachable = false;
        for _ in 0..p.probes {
            if b.out() {
                break;
            }
            hop.sent += 1;
            match pr.probe(Some(ttl), 0, small(pr), wait)? {
                Answer::Echo { rtt, .. } => {
                    hop.answered += 1;
                    hop.rtt_us.push(us(rtt));
                    hop.peer = true;
                    seen(&mut hop, d.to.clone());
                }
                Answer::Icmp {
                    rtt, from, kind, ..
                } => {
                    hop.answered += 1;
                    hop.rtt_us.push(us(rtt));
                    seen(&mut hop, from.to_string());
                    match kind {
                        IcmpKind::TimeExceeded => {}
                        IcmpKind::Unreachable(what) => {
                            hop.note = Some(what.into());
                            unreachable = true;
                        }
                        IcmpKind::FragNeeded => hop.note = Some("fragmentation needed".into()),
                        IcmpKind::Other => hop.note = Some("other ICMP".into()),
                    }
                }
                Answer::TooBig { .. } | Answer::Silent => {}
            }
            unverified(&mut hop, pr.take_unverified());
        }
        hop.silent = hop.answered == 0;
        let (peer, silent) = (hop.peer, hop.silent);
        d.hops.push(hop);
        (b.progress)(0.6 * f64::from(ttl) / p.max_hops as f64);
        if peer {
            d.end = "peer".into();
            d.peer_hop = Some(ttl);
            return Ok(());
        }
        if unreachable {
            d.end = "unreachable".into();
            return Ok(());
        }
        silent_run = if silent { silent_run + 1 } else { 0 };
        if silent_run >= SILENT_RUN && ttl < p.max_hops as u8 {
            d.end = "silence".into();
            return Ok(());
        }
    }
    Ok(())
}

/// The unverified ICMP errors that came during a probe of `hop`: counted
/// and their senders listed, never its answer.
fn unverified(hop: &mut PathHop, (n, from): (u32, Vec<std::net::IpAddr>)) {
    hop.unverified = hop.unverified.saturating_add(n);
    for a in from.iter().map(|a| a.to_string()) {
        if hop.unverified_from.len() < UNVERIFIED_FROM_MAX && !hop.unverified_from.contains(&a) {
            hop.unverified_from.push(a);
        }
    }
}

fn seen(hop: &mut PathHop, addr: String) {
    match &hop.addr {
        None => hop.addr = Some(addr),
        Some(a) if *a != addr && !hop.also.contains(&addr) => hop.also.push(addr),
        _ => {}
    }
}

/// The hop whose address is `addr` (the first, by TTL).
fn hop_of(hops: &[PathHop], addr: &str) -> Option<u8> {
    hops.iter()
        .find(|h| h.addr.as_deref() == Some(addr) || h.also.iter().any(|a| a == addr))
        .map(|h| h.ttl)
}

/// The path MTU toward the peer: from the largest datagram the interface
/// takes (`local`), down to each fragmentation-needed's MTU, until the peer confirms
/// one; big datagrams vanishing with no ICMP (a black hole) are searched
/// by halving between what reached it and what did not.
fn mtu(
    pr: &mut Prober,
    wait: Duration,
    b: &Budget,
    hops: &mut [PathHop],
    peer_hop: u8,
) -> io::Result<PathMtu> {
    // From the largest datagram there is: the kernel refuses what the
    // interface cannot send and says its MTU (the route's MTU, `IP_MTU`,
    // may already hold what an earlier trace learnt of the path).
    let mut m = PathMtu::default();
    let mut size = pr.max_datagram();
    // Known to reach the peer (the trace's probes did), and the smallest
    // size known not to, with whether silence (no ICMP) said so.
    let mut good = small(pr);
    let mut bad: Option<(u32, bool)> = None;
    let lower = |bad: &mut Option<(u32, bool)>, to: u32, silent: bool| {
        if !matches!(bad, Some((b, _)) if to >= *b) {
            *bad = Some((to, silent));
        }
    };
    let mut tries = 0;
    while m.probes < MTU_PROBES_MAX as u32 && !b.out() {
        m.probes += 1;
        // A next-hop MTU someone reported: above it nothing passes.
        let mut reported = None;
        match pr.probe(None, 0, size, wait)? {
            Answer::Echo { .. } => {
                good = good.max(size);
                tries = 0;
            }
            Answer::TooBig { mtu } => {
                m.local = mtu;
                reported = Some(mtu);
            }
            Answer::Icmp {
                from,
                kind: IcmpKind::FragNeeded,
                mtu: Some(mtu),
                ..
            } => {
                let addr = from.to_string();
                let at = hop_of(hops, &addr);
                if let Some(h) = hops.iter_mut().find(|h| Some(h.ttl) == at) {
                    h.mtu = Some(h.mtu.map_or(mtu, |x| x.min(mtu)));
                }
                if !matches!(bad, Some((b, _)) if mtu >= b) {
                    m.lowered_at = at;
                    m.lowered_by = Some(addr);
                }
                reported = Some(mtu);
            }
            Answer::Icmp { .. } | Answer::Silent => {
                // One more try before taking silence for a black hole.
                tries += 1;
                if tries < 2 {
                    continue;
                }
                tries = 0;
                lower(&mut bad, size, true);
            }
        }
        if let Some(mtu) = reported {
            lower(&mut bad, (mtu + 1).min(size), false);
            if mtu > good && mtu < size {
                size = mtu;
                continue;
            }
        }
        // Between what reached the peer and what did not.
        match bad {
            None => break, // the first size reached it
            Some((hi, _)) if hi <= good + 1 => break,
            Some((hi, _)) => size = good + (hi - good) / 2,
        }
    }
    m.bytes = Some(good);
    if m.local == 0 {
        // The interface took the largest datagram there is.
        m.local = pr.route_mtu().unwrap_or(size).min(pr.max_datagram());
    }
    if let Some((_, true)) = bad {
        m.black_hole_above = Some(good);
        m.black_hole_after = black_hole_after(pr, wait, b, hops, peer_hop, good + 1)?;
    }
    Ok(m)
}

/// The last hop that still answers datagrams of `size` (the black hole is
/// after it): each answering hop's TTL once at that size.
fn black_hole_after(
    pr: &mut Prober,
    wait: Duration,
    b: &Budget,
    hops: &[PathHop],
    peer_hop: u8,
    size: u32,
) -> io::Result<Option<u8>> {
    let mut last = None;
    for h in hops.iter().filter(|h| !h.silent && h.ttl < peer_hop) {
        if b.out() {
            break;
        }
        if let Answer::Icmp {
            kind: IcmpKind::TimeExceeded,
            ..
        } = pr.probe(Some(h.ttl), 0, size, wait)?
        {
            last = Some(h.ttl);
        }
    }
    Ok(last)
}

/// One mark: `marks_count` datagrams with TOS `tos`, what the peer saw, and
/// for a changed one where (IPv4: the routers' ICMP carries bits of the
/// TOS they quote).
fn mark(
    pr: &mut Prober,
    p: &PathParams,
    wait: Duration,
    b: &Budget,
    hops: &[PathHop],
    peer_hop: u8,
    tos: u8,
) -> io::Result<MarkResult> {
    let mut m = MarkResult {
        dscp: tos >> 2,
        ecn: tos & 3,
        ..MarkResult::default()
    };
    let mut got = None;
    for _ in 0..p.marks_count {
        if b.out() {
            break;
        }
        m.sent += 1;
        if let Answer::Echo { tos: t, .. } = pr.probe(None, tos, small(pr), wait)? {
            m.received += 1;
            got = Some(t);
        }
    }
    m.got_dscp = got.map(|t| t >> 2);
    m.got_ecn = got.map(|t| t & 3);
    m.verdict = MarkResult::verdict_of(tos, got).into();
    if let Some(g) = got.filter(|&g| g != tos && !pr.ipv6) {
        if let Some(at) = changed_at(pr, wait, b, hops, peer_hop, tos, g)? {
            m.changed_at = Some(at);
            m.changed_by = hops
                .iter()
                .find(|h| h.ttl == at)
                .and_then(|h| h.addr.clone());
        }
    }
    Ok(m)
}

/// The first hop whose ICMP shows `sent` already changed to `got`. At each
/// answering hop one probe with each: while the mark is unchanged, the two
/// quotes differ and so (where the router copies the bits that differ) do
/// the ICMPs' TOS bytes; from the hop that sees the changed mark on, both
/// probes arrive alike. `None` when no hop's ICMP told the two apart
/// before (the routers copy too little of the TOS to show it).
#[allow(clippy::too_many_arguments)]
fn changed_at(
    pr: &mut Prober,
    wait: Duration,
    b: &Budget,
    hops: &[PathHop],
    peer_hop: u8,
    sent: u8,
    got: u8,
) -> io::Result<Option<u8>> {
    let mut told_apart = false;
    for h in hops.iter().filter(|h| !h.silent && h.ttl < peer_hop) {
        if b.out() {
            return Ok(None);
        }
        let icmp_tos = |a: Answer| match a {
            Answer::Icmp { tos, .. } => tos,
            _ => None,
        };
        let a = icmp_tos(pr.probe(Some(h.ttl), sent, small(pr), wait)?);
        let c = icmp_tos(pr.probe(Some(h.ttl), got, small(pr), wait)?);
        match (a, c) {
            (Some(a), Some(c)) if a != c => told_apart = true,
            (Some(_), Some(_)) if told_apart => return Ok(Some(h.ttl)),
            _ => {}
        }
    }
    // Unchanged at every router that showed it: changed on the way to the
    // peer after the last one.
    Ok(told_apart.then_some(peer_hop))
}
