//! `path`: the hops each way, the path MTU each way and what the network did
//! to DSCP and ECN marks. The driving agent's summary ([`PathSummary`])
//! holds both directions: its own trace (`forth`, toward the serving agent)
//! and the serving agent's (`back`), which that agent sends over the
//! control connection when it is done; the serving agent reports its own
//! direction alone ([`PathServerSummary`]).

use super::Stats;
use serde::{Deserialize, Serialize};

/// The driving agent's summary: both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathSummary {
    /// Hops from the driving agent to the serving agent.
    pub forth: PathDirection,
    /// Hops from the serving agent back (its own trace).
    pub back: PathDirection,
    /// The two directions differ in hop count (routes are often asymmetric;
    /// the routers' addresses differ each way even on one route, as each
    /// answers from the interface it sends on, so hop count is what says).
    pub asymmetric: bool,
    /// Round trip to the serving agent, us, from the probes that reached it
    /// (forth): what the matrix's RTT metrics read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<Stats>,
}

/// The serving agent's summary: its trace back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathServerSummary {
    pub back: PathDirection,
}

/// One direction's trace, path MTU and marks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PathDirection {
    /// The tracing agent's address.
    pub from: String,
    /// The peer agent's address.
    pub to: String,
    /// Hops in TTL order, from `first_ttl`; the last is the peer when
    /// `end` is `peer`.
    pub hops: Vec<PathHop>,
    /// How the trace ended: `peer` (the peer agent answered), `max_hops`
    /// (the TTL reached `max_hops` first: a result, not an error),
    /// `silence` (the last hops answered nothing: past a hop that drops
    /// ICMP, or a peer that drops the probes), `unreachable` (a hop said
    /// the peer is unreachable), `time_limit` (the agent's duration limit).
    pub end: String,
    /// The peer agent's hop (TTL), when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_hop: Option<u8>,
    /// The path MTU search (`mtu` on, peer reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<PathMtu>,
    /// One entry per mark sent (DSCP x ECN).
    #[serde(default)]
    pub marks: Vec<MarkResult>,
    /// How long the tracing agent's sends (its probes, and its echoes of
    /// the other's where they came first) waited for its `--max-udp-rate`
    /// up to the end of this trace, us (0: none, left out).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate_capped_us: u64,
    /// ICMP errors that came back to the tracing agent's socket while it
    /// traced and whose quote did not show one of its probes (its header
    /// and token): quoting only the 8 bytes of UDP header RFC 792 asks
    /// for, or someone else's datagram. Never taken as a hop's answer, an
    /// end or an MTU, whoever sent them (docs/security.md); counted here
    /// and per hop (`unverified`). 0: none, left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unverified_icmp: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PathDirection {
    /// The route as the trace saw it: per hop in TTL order, the addresses
    /// that answered (empty for a silent hop), the peer's hop last when it
    /// answered. What [`route_changed`] compares between runs.
    pub fn route(&self) -> Vec<Vec<String>> {
        self.hops
            .iter()
            .map(|h| {
                let mut who: Vec<String> = h.addr.iter().chain(&h.also).cloned().collect();
                who.sort();
                who.dedup();
                who
            })
            .collect()
    }
}

/// Whether the list of responding hops changed from `before` to `now`
/// (both [`PathDirection::route`]): a different hop count, or a hop that
/// answered both times from addresses with none in common. A hop silent in
/// either run (ICMP rate-limited, lost) says nothing either way, and a hop
/// load-balanced over several routers has changed only when none of this
/// run's responders answered before.
pub fn route_changed(before: &[Vec<String>], now: &[Vec<String>]) -> bool {
    before.len() != now.len()
        || before
            .iter()
            .zip(now)
            .any(|(b, n)| !b.is_empty() && !n.is_empty() && !b.iter().any(|a| n.contains(a)))
}

/// One hop: its TTL, who answered and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PathHop {
    pub ttl: u8,
    /// The address that answered (the first, if several did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// The answering address's name (reverse DNS), when the test asked
    /// for names (`names`) and the agent's resolver had one in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Other addresses that answered at this TTL (load balancing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// Probes sent and answered at this TTL.
    pub sent: u32,
    pub answered: u32,
    /// Round trip of each answered probe, us.
    pub rtt_us: Vec<f64>,
    /// No probe was answered: the hop is there but does not say so (drops
    /// or rate-limits ICMP). Not loss of the path: later hops may answer.
    pub silent: bool,
    /// This hop is the peer agent (it echoed the probe).
    pub peer: bool,
    /// What the hop answered besides "time exceeded": `port unreachable`,
    /// `host unreachable`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The next-hop MTU this hop reported (ICMP fragmentation needed /
    /// packet too big) during the MTU search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// ICMP errors that came while this hop's probes were out and whose
    /// quote did not show the probe (too short, or not ours): not
    /// answers, so a hop with only these is `silent` (0: none, left out).
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub unverified: u32,
    /// Their senders, the first few (at most [`UNVERIFIED_FROM_MAX`]):
    /// a router that quotes too little to be checked shows here, as may
    /// anyone forging ICMP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unverified_from: Vec<String>,
}

/// The most senders of unverified ICMP a hop lists.
pub const UNVERIFIED_FROM_MAX: usize = 4;

fn is_zero32(n: &u32) -> bool {
    *n == 0
}

/// The path MTU one way: the largest IP datagram (headers included) that
/// reached the peer agent with DF set, confirmed by it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PathMtu {
    /// The largest datagram that reached the peer, bytes (IP header
    /// included, as an interface's MTU counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u32>,
    /// The sending interface's MTU (where the search starts).
    pub local: u32,
    /// The hop that reported the smallest next-hop MTU (the one lowering
    /// the path's), its TTL and address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowered_at: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowered_by: Option<String>,
    /// Datagrams above this size vanished with no ICMP on the way: a black
    /// hole, after the hop `black_hole_after` (the last that answered at
    /// that size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub black_hole_above: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub black_hole_after: Option<u8>,
    /// Datagrams sent by the search.
    pub probes: u32,
}

/// What arrived of one mark (TOS / traffic class byte) sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MarkResult {
    /// DSCP (0 to 63) and ECN codepoint (0 Not-ECT, 1 ECT(1), 2 ECT(0),
    /// 3 CE) sent.
    pub dscp: u8,
    pub ecn: u8,
    pub sent: u32,
    /// Datagrams the peer agent received.
    pub received: u32,
    /// The DSCP and ECN that arrived (the last datagram's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub got_dscp: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub got_ecn: Option<u8>,
    /// `kept`, `rewritten` (DSCP to `got_dscp`), `zeroed` (DSCP to 0),
    /// `ce_marked` (ECT to CE), `ecn_bleached` (ECT to Not-ECT),
    /// `ecn_changed`, `lost` (none arrived); a changed DSCP and a changed
    /// ECN both: `rewritten`.
    pub verdict: String,
    /// The first hop whose ICMP time-exceeded shows the changed mark (the
    /// change is at that hop or on the link before it), TTL and address;
    /// absent when nothing changed or the ICMP replies do not show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<String>,
}

impl MarkResult {
    /// The verdict for `sent` arriving as `got` (TOS bytes).
    pub fn verdict_of(sent: u8, got: Option<u8>) -> &'static str {
        let Some(got) = got else { return "lost" };
        let (sd, se, gd, ge) = (sent >> 2, sent & 3, got >> 2, got & 3);
        match () {
            _ if got == sent => "kept",
            _ if sd != gd && gd == 0 => "zeroed",
            _ if sd != gd => "rewritten",
            _ if ge == 3 && (se == 1 || se == 2) => "ce_marked",
            _ if ge == 0 => "ecn_bleached",
            _ => "ecn_changed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{route_changed, MarkResult, PathDirection, PathHop};

    fn hop(ttl: u8, addr: Option<&str>, also: &[&str]) -> PathHop {
        PathHop {
            ttl,
            addr: addr.map(str::to_string),
            also: also.iter().map(|a| a.to_string()).collect(),
            silent: addr.is_none(),
            ..PathHop::default()
        }
    }

    fn route(hops: &[(Option<&str>, &[&str])]) -> Vec<Vec<String>> {
        let d = PathDirection {
            hops: hops
                .iter()
                .enumerate()
                .map(|(i, (a, also))| hop(i as u8 + 1, *a, also))
                .collect(),
            ..PathDirection::default()
        };
        d.route()
    }

    #[test]
    fn a_route_changes_with_its_hop_count_or_a_hop_answering_from_elsewhere() {
        let r = route(&[
            (Some("10.0.1.1"), &[]),
            (Some("10.0.2.1"), &[]),
            (Some("10.0.9.2"), &[]),
        ]);
        assert!(!route_changed(&r, &r.clone()));
        // Another router at hop 2.
        let moved = route(&[
            (Some("10.0.1.1"), &[]),
            (Some("10.0.3.1"), &[]),
            (Some("10.0.9.2"), &[]),
        ]);
        assert!(route_changed(&r, &moved) && route_changed(&moved, &r));
        // One hop more (a longer way round), or the trace ends earlier.
        let longer = route(&[
            (Some("10.0.1.1"), &[]),
            (Some("10.0.2.1"), &[]),
            (Some("10.0.4.1"), &[]),
            (Some("10.0.9.2"), &[]),
        ]);
        assert!(route_changed(&r, &longer));
        assert!(route_changed(&r, &r[..2]));
        // A hop silent this time (ICMP rate-limited): not a change.
        let quiet = route(&[
            (Some("10.0.1.1"), &[]),
            (None, &[]),
            (Some("10.0.9.2"), &[]),
        ]);
        assert_eq!(quiet[1], Vec::<String>::new());
        assert!(!route_changed(&r, &quiet) && !route_changed(&quiet, &r));
        // Load balancing: the other responder this time, one in common.
        let lb = route(&[
            (Some("10.0.1.1"), &[]),
            (Some("10.0.3.1"), &["10.0.2.1"]),
            (Some("10.0.9.2"), &[]),
        ]);
        assert_eq!(lb[1], ["10.0.2.1", "10.0.3.1"]);
        assert!(!route_changed(&r, &lb));
        assert!(route_changed(
            &moved,
            &route(&[
                (Some("10.0.1.1"), &[]),
                (Some("10.0.2.1"), &["10.0.5.1"]),
                (Some("10.0.9.2"), &[])
            ])
        ));
        assert!(!route_changed(&[], &[]));
    }

    #[test]
    fn verdicts_name_what_happened_to_the_mark() {
        assert_eq!(MarkResult::verdict_of(46 << 2, Some(46 << 2)), "kept");
        assert_eq!(MarkResult::verdict_of(46 << 2, Some(10 << 2)), "rewritten");
        assert_eq!(MarkResult::verdict_of(46 << 2 | 2, Some(2)), "zeroed");
        assert_eq!(MarkResult::verdict_of(2, Some(3)), "ce_marked");
        assert_eq!(MarkResult::verdict_of(1, Some(0)), "ecn_bleached");
        assert_eq!(MarkResult::verdict_of(3, Some(3)), "kept");
        assert_eq!(MarkResult::verdict_of(3, Some(2)), "ecn_changed");
        assert_eq!(MarkResult::verdict_of(3, None), "lost");
    }
}
