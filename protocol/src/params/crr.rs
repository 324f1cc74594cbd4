//! Parameters of `tcp_crr` (netperf TCP_CRR, neper tcp_crr): each
//! transaction opens a fresh TCP connection, writes `req_bytes`, reads
//! `resp_bytes` and the connection is closed; the figure is transactions
//! (connections) per second, with the connect time and the whole
//! transaction's time per transaction.
//!
//! Socket options have `tcp_rr`'s names and limits and are set on every
//! connection; [`CrrParams::socket`] hands them over as a `TcpSocketParams`.

use super::rr::{bind_addr, congestion, flows_within};
use super::spec::crr::*;
use super::spec::{CLIENT_BIND, DURATION_S, RCVBUF, SERVER_BIND, SNDBUF};
use super::{bound, Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// Parameters of a connect/request/response test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrrParams {
    /// Request size in bytes (client to server).
    pub req_bytes: u64,
    /// Response size in bytes (server to client).
    pub resp_bytes: u64,
    /// Transactions (connections) tried, if count-bounded: a failed
    /// connect counts as one tried.
    pub count: Option<u64>,
    /// Duration in seconds, if time-bounded.
    pub duration_s: Option<f64>,
    /// How long one connect may take before it counts as failed, ms.
    pub connect_timeout_ms: u64,
    /// TCP_NODELAY (default on, as in netperf TCP_CRR).
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

impl CrrParams {
    /// Parses and validates connect/request/response parameters against `limits`.
    pub fn parse(v: &Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let req_bytes = r.int(&REQ_BYTES)?;
        let resp_bytes = r.int(&RESP_BYTES)?;
        let count = r.opt_int(&COUNT)?;
        let duration_s = r.opt_float(&DURATION_S)?;
        let connect_timeout_ms = r.int(&CONNECT_TIMEOUT_MS)?;
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
        Ok(CrrParams {
            req_bytes,
            resp_bytes,
            count,
            duration_s,
            connect_timeout_ms,
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

    fn parse(v: Value) -> Result<CrrParams, ParamError> {
        CrrParams::parse(&v, &Limits::default())
    }

    #[test]
    fn defaults_follow_netperf_tcp_crr() {
        let p = parse(json!({})).unwrap();
        assert_eq!((p.req_bytes, p.resp_bytes, p.count), (1, 1, Some(1000)));
        assert!(p.nodelay);
        assert_eq!(p.connect_timeout_ms, 1000);
        let p = parse(json!({"duration_s": 2})).unwrap();
        assert_eq!((p.count, p.duration_s), (None, Some(2.0)));
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (v, name) in [
            (json!({"req_bytes": 0}), "req_bytes"),
            (json!({"resp_bytes": 1u64 << 40}), "resp_bytes"),
            (json!({"count": 0}), "count"),
            (json!({"count": 1, "duration_s": 1}), "count"),
            (json!({"duration_s": 61}), "duration_s"),
            (json!({"connect_timeout_ms": 0}), "connect_timeout_ms"),
            (json!({"client_bind": "localhost"}), "client_bind"),
            (json!({"wait_us": 5}), "wait_us"),
            (json!({"streams": 2}), "streams"),
        ] {
            assert_eq!(parse(v.clone()).unwrap_err().param, name, "{v}");
        }
    }
}
