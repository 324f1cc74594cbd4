//! Parameters of `path`: where in the path, each way. Each agent traces
//! toward the other over the test's UDP flow with rising TTL / hop limit
//! (the ICMP errors read from the socket's error queue, as tracepath does),
//! probes the path MTU with DF set, and sends datagrams with a set of DSCP
//! values and each ECN codepoint for the other agent to report what arrived.

use super::rr::bind_addr;
use super::spec::path::*;
use super::spec::{CLIENT_BIND, SERVER_BIND};
use super::{Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The DSCP values sent when the plan names none: CS0, CS1, AF11, AF21,
/// AF31, AF41 and EF.
pub const DEFAULT_DSCP: &[u8] = &[0, 8, 10, 18, 26, 34, 46];

/// Parameters of `path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathParams {
    /// The first TTL / hop limit probed (1: from the first router).
    pub first_ttl: u64,
    /// The last TTL / hop limit probed: a peer further away ends the trace
    /// with `max_hops` reached (a result, not an error).
    pub max_hops: u64,
    /// Probes per hop.
    pub probes: u64,
    /// How long to wait for each probe's answer (ICMP or the peer's), ms.
    pub wait_ms: u64,
    /// Probe the path MTU each way.
    pub mtu: bool,
    /// DSCP values (0 to 63) sent for the other agent to report; empty:
    /// no mark check.
    pub dscp: Vec<u8>,
    /// Each DSCP value with each ECN codepoint (Not-ECT, ECT(1), ECT(0),
    /// CE) rather than Not-ECT alone.
    pub ecn: bool,
    /// Datagrams per mark.
    pub marks_count: u64,
    /// Look up each answering hop's name (reverse DNS) on the agent that
    /// traced it; off by default (the lookups leave the test's path, and a
    /// slow resolver would hold the test up to its bound).
    #[serde(default)]
    pub names: bool,
    /// Local address of the driving agent's control and UDP sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_bind: Option<IpAddr>,
    /// Local address of the serving agent's listener and UDP socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_bind: Option<IpAddr>,
}

/// The MTU search's probes at most, each way (a binary search over 68 to
/// 65535 bytes takes 16; frag-needed steps and the black hole's hops the rest).
pub const MTU_PROBES_MAX: u64 = 96;

impl PathParams {
    /// Parses and validates `path` parameters against `limits`.
    pub fn parse(v: &serde_json::Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let first_ttl = r.int(&FIRST_TTL)?;
        let max_hops = r.int(&MAX_HOPS)?;
        let probes = r.int(&PROBES)?;
        let wait_ms = r.int(&WAIT_MS)?;
        let mtu = r.flag(&MTU)?;
        // A string of values, or one value as a number (`--set dscp=46`).
        let dscp = match r.raw(DSCP.name) {
            None => DEFAULT_DSCP.to_vec(),
            Some(serde_json::Value::String(s)) => parse_dscp(s)?,
            Some(v @ serde_json::Value::Number(_)) => parse_dscp(&v.to_string())?,
            Some(v) => {
                return Err(ParamError::new(
                    "dscp",
                    format!(
                        "must be DSCP values 0 to 63 separated by commas (\"0,10,46\"), got {v}"
                    ),
                ))
            }
        };
        let ecn = r.flag(&ECN)?;
        let marks_count = r.int(&MARKS_COUNT)?;
        let names = r.flag(&NAMES)?;
        let client_bind = bind_addr(&mut r, CLIENT_BIND.name)?;
        let server_bind = bind_addr(&mut r, SERVER_BIND.name)?;
        r.finish()?;
        if first_ttl > max_hops {
            return Err(ParamError::new(
                "first_ttl",
                format!("must be at most max_hops ({max_hops}), got {first_ttl}"),
            ));
        }
        let p = PathParams {
            first_ttl,
            max_hops,
            probes,
            wait_ms,
            mtu,
            dscp,
            ecn,
            marks_count,
            names,
            client_bind,
            server_bind,
        };
        let n = p.datagrams_each_way();
        if 2 * n > limits.max_count {
            return Err(ParamError::new(
                "max_hops",
                format!(
                    "hops x probes + MTU and mark probes = {n} datagrams each way, {} in all, is above the agent's count limit of {}",
                    2 * n,
                    limits.max_count
                ),
            ));
        }
        // One hop's probes, all unanswered, each way: the least a trace
        // must be able to wait within the agent's duration limit.
        let hop_s = 2.0 * probes as f64 * wait_ms as f64 / 1000.0;
        if hop_s > limits.max_duration_s {
            return Err(ParamError::new(
                "wait_ms",
                format!(
                    "probes x wait_ms x 2 ways = {hop_s} s for one silent hop is above the agent's duration limit of {} s",
                    limits.max_duration_s
                ),
            ));
        }
        Ok(p)
    }

    /// The TOS / traffic class bytes of the mark check, in order.
    pub fn marks(&self) -> Vec<u8> {
        let ecns: &[u8] = if self.ecn { &[0, 1, 2, 3] } else { &[0] };
        self.dscp
            .iter()
            .flat_map(|d| ecns.iter().map(move |e| d << 2 | e))
            .collect()
    }

    /// The most datagrams one direction sends: the trace, the MTU search,
    /// and the marks (each, and for a changed one a probe per hop to find
    /// where).
    pub fn datagrams_each_way(&self) -> u64 {
        let hops = self.max_hops - self.first_ttl + 1;
        let marks = self.marks().len() as u64;
        hops * self.probes
            + if self.mtu { MTU_PROBES_MAX } else { 0 }
            + marks * (self.marks_count + 2 * hops)
    }
}

/// `dscp`: values 0 to 63, separated by commas or spaces (`"0,10,46"`).
fn parse_dscp(s: &str) -> Result<Vec<u8>, ParamError> {
    let mut out = Vec::new();
    for w in s.split([',', ' ']).filter(|w| !w.is_empty()) {
        let bad = || {
            ParamError::new(
                "dscp",
                format!("DSCP values are 0 to 63 (6 bits), separated by commas; got {w:?}"),
            )
        };
        let v: u64 = w.parse().map_err(|_| bad())?;
        if v > 63 {
            return Err(bad());
        }
        if !out.contains(&(v as u8)) {
            out.push(v as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<PathParams, ParamError> {
        PathParams::parse(&v, &Limits::default())
    }

    #[test]
    fn bad_ttl_hops_and_dscp_are_refused_naming_the_parameter() {
        assert_eq!(
            parse(json!({"first_ttl": 0})).unwrap_err().param,
            "first_ttl"
        );
        assert_eq!(
            parse(json!({"max_hops": 65})).unwrap_err().param,
            "max_hops"
        );
        assert_eq!(parse(json!({"max_hops": 0})).unwrap_err().param, "max_hops");
        let e = parse(json!({"dscp": "0,64"})).unwrap_err();
        assert_eq!(e.param, "dscp");
        assert!(e.message.contains("\"64\""), "{e}");
        assert_eq!(parse(json!({"dscp": "ef"})).unwrap_err().param, "dscp");
        assert_eq!(parse(json!({"dscp": 46})).unwrap().dscp, vec![46]);
        assert_eq!(parse(json!({"dscp": 64})).unwrap_err().param, "dscp");
        assert_eq!(parse(json!({"dscp": -1})).unwrap_err().param, "dscp");
        assert_eq!(parse(json!({"dscp": [46]})).unwrap_err().param, "dscp");
        let e = parse(json!({"first_ttl": 5, "max_hops": 4})).unwrap_err();
        assert_eq!(e.param, "first_ttl");
    }

    #[test]
    fn marks_are_each_dscp_with_each_ecn_codepoint() {
        let p = parse(json!({"dscp": "46, 0 46"})).unwrap();
        assert_eq!(p.dscp, vec![46, 0]);
        assert_eq!(p.marks(), vec![0xb8, 0xb9, 0xba, 0xbb, 0, 1, 2, 3]);
        let p = parse(json!({"dscp": "", "ecn": false})).unwrap();
        assert!(p.marks().is_empty());
        let p = parse(json!({"dscp": "10", "ecn": false})).unwrap();
        assert_eq!(p.marks(), vec![40]);
    }

    #[test]
    fn the_agents_limits_bound_the_probes() {
        let limits = Limits {
            max_count: 100,
            ..Limits::default()
        };
        let e = PathParams::parse(&json!({}), &limits).unwrap_err();
        assert_eq!(e.param, "max_hops");
        let limits = Limits {
            max_duration_s: 2.0,
            ..Limits::default()
        };
        let e = PathParams::parse(&json!({"probes": 3, "wait_ms": 500}), &limits).unwrap_err();
        assert_eq!(e.param, "wait_ms");
    }
}
