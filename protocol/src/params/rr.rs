//! Parameters of `tcp_rr` and `unix_rr` (tcp_req/tcp_resp, netperf TCP_RR):
//! the client writes `req_bytes`, the server reads exactly that and answers
//! `resp_bytes`; one round-trip time per transaction.
//!
//! Socket options have the same names and limits as in `tcp_stream`;
//! [`RrParams::socket`] hands them over as a `TcpSocketParams`, so both
//! kinds share one connection set-up.

use super::pace::Pace;
use super::spec::rr::*;
use super::spec::{CLIENT_BIND, CONGESTION, DURATION_S, RCVBUF, SERVER_BIND, SNDBUF};
use super::{bound, Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// Parameters of a request/response test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RrParams {
    /// Request size in bytes (client to server).
    pub req_bytes: u64,
    /// Response size in bytes (server to client).
    pub resp_bytes: u64,
    /// Largest single write; a larger message goes out in several writes (the
    /// header-then-body pattern that makes Nagle and delayed ACK bite).
    pub write_bytes: Option<u64>,
    /// Transactions, if count-bounded.
    pub count: Option<u64>,
    /// Duration in seconds, if time-bounded.
    pub duration_s: Option<f64>,
    /// Wait from the start of one transaction to the start of the next, us.
    pub wait_us: u64,
    /// Spin on non-blocking reads instead of sleeping in the kernel.
    pub busy_poll: bool,
    /// TCP_NODELAY (default on, as in netperf TCP_RR).
    pub nodelay: bool,
    pub sndbuf: Option<u64>,
    pub rcvbuf: Option<u64>,
    pub tos: Option<u8>,
    pub congestion: Option<String>,
    /// TCP_MAXSEG asked for (see `StreamParams::mss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
    pub client_bind: Option<IpAddr>,
    pub server_bind: Option<IpAddr>,
    /// How often samples and progress go to the page, in milliseconds.
    pub interval_ms: u32,
    /// Concurrent connections (neper's flows); `count` is over all of them.
    #[serde(default = "super::rr::one_flow")]
    pub flows: u32,
    /// Worker threads per side for the flows (default: one per flow, up
    /// to the CPUs the agent may use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

/// Reads an optional local address parameter (`client_bind`, `server_bind`).
pub(crate) fn bind_addr(r: &mut Reader, name: &'static str) -> Result<Option<IpAddr>, ParamError> {
    r.string(name)?
        .map(|s| {
            s.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .map_err(|_| ParamError::new(name, format!("not an IP address: {s:?}")))
        })
        .transpose()
}

/// Reads an optional congestion control algorithm name.
pub(crate) fn congestion(r: &mut Reader) -> Result<Option<String>, ParamError> {
    let c = r.string(CONGESTION.name)?;
    if let Some(c) = &c {
        if c.is_empty()
            || c.len() > 15
            || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(ParamError::new(
                "congestion",
                format!("not a congestion control name: {c:?}"),
            ));
        }
    }
    Ok(c)
}

pub(crate) fn one_flow() -> u32 {
    1
}

/// A count-bounded test of several flows shares its `count` out among
/// them: every flow must get at least one transaction.
pub(crate) fn flows_within(flows: u32, count: Option<u64>) -> Result<(), ParamError> {
    match count {
        Some(c) if c < flows as u64 => Err(ParamError::new(
            "flows",
            format!(
                "{flows} flows share count = {c} transactions: give at least one per flow \
                 (count >= {flows}) or fewer flows"
            ),
        )),
        _ => Ok(()),
    }
}

/// Flow `i`'s share of `count` transactions over `flows` flows: the
/// count divided evenly, the first `count % flows` flows one more.
pub fn flow_share(count: u64, flows: u32, i: u32) -> u64 {
    let f = flows.max(1) as u64;
    count / f + u64::from((i as u64) < count % f)
}

impl RrParams {
    /// Parses and validates request/response parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let req_bytes = r.int(&REQ_BYTES)?;
        let resp_bytes = r.int(&RESP_BYTES)?;
        let write_bytes = r.opt_int(&WRITE_BYTES)?;
        let count = r.opt_int(&COUNT)?;
        let duration_s = r.opt_float(&DURATION_S)?;
        let wait_us = r.int(&WAIT_US)?;
        let busy_poll = r.flag(&BUSY_POLL)?;
        let nodelay = r.flag(&NODELAY)?;
        let sndbuf = r.opt_int(&SNDBUF)?;
        let rcvbuf = r.opt_int(&RCVBUF)?;
        let tos = super::tos(&mut r)?;
        let congestion = congestion(&mut r)?;
        let mss = super::mss(&mut r)?;
        let client_bind = bind_addr(&mut r, CLIENT_BIND.name)?;
        let server_bind = bind_addr(&mut r, SERVER_BIND.name)?;
        let interval_ms = r.int(&INTERVAL_MS)? as u32;
        let flows = r.int(&FLOWS)? as u32;
        let threads = r.opt_int(&THREADS)?.map(|t| t as u32);
        r.finish()?;
        let (count, duration_s) = bound(
            count,
            duration_s,
            &COUNT,
            (
                (req_bytes + resp_bytes) as u128,
                "count x (req_bytes + resp_bytes)",
            ),
            limits,
        )?;
        flows_within(flows, count)?;
        // A request/response test of a time holds what it holds: only a
        // count is checked against the agent's time.
        Pace::new("request", req_bytes, 1, wait_us as f64, None).within(count, None, limits)?;
        Ok(RrParams {
            req_bytes,
            resp_bytes,
            write_bytes,
            count,
            duration_s,
            wait_us,
            busy_poll,
            nodelay,
            sndbuf,
            rcvbuf,
            tos,
            congestion,
            mss,
            client_bind,
            server_bind,
            interval_ms,
            flows,
            threads,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<RrParams, ParamError> {
        RrParams::parse(&v, &Limits::default())
    }

    #[test]
    fn defaults_follow_netperf_tcp_rr() {
        let p = parse(json!({})).unwrap();
        assert_eq!((p.req_bytes, p.resp_bytes, p.count), (64, 64, Some(10_000)));
        assert!(p.nodelay && !p.busy_poll);
        let p = parse(json!({"server_bind": "[::1]", "duration_s": 2})).unwrap();
        assert_eq!(p.server_bind, Some("::1".parse().unwrap()));
        assert_eq!(p.count, None);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (v, name) in [
            (json!({"req_bytes": 0}), "req_bytes"),
            (json!({"req_bytes": 1u64 << 40}), "req_bytes"),
            (json!({"resp_bytes": 0}), "resp_bytes"),
            (json!({"count": 0}), "count"),
            (json!({"count": 1, "duration_s": 1}), "count"),
            (json!({"congestion": "no such"}), "congestion"),
            (json!({"client_bind": "localhost"}), "client_bind"),
            (json!({"busy_poll": 1}), "busy_poll"),
            (json!({"streams": 2}), "streams"),
        ] {
            assert_eq!(parse(v.clone()).unwrap_err().param, name, "{v}");
        }
    }
}
