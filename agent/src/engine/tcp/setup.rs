//! The set-up `tcp_rr` and `tcp_crr` share: the checks before any traffic
//! and the serving side's data listener and one-time key.

use crate::engine::ctx::EngineEnv;
use crate::engine::error::Refusal;
use crate::engine::{bind, flows, peer, sockopt};
use meshperf_protocol::params::TcpSocketParams;
use std::net::TcpListener;

/// This side's worker threads for `flows` flows (1 for one flow), with
/// the congestion control asked for, checked before any traffic.
pub fn workers(
    congestion: Option<&str>,
    flows: u32,
    threads: Option<u32>,
) -> Result<usize, Refusal> {
    sockopt::check_congestion(congestion)?;
    Ok(match (flows, threads) {
        (1, None) => 1,
        (f, t) => flows::workers(f, t)?,
    })
}

/// Serving side: the data listener on `server_bind` (else the agent's
/// listen address), its port, and the test's one-time key.
pub fn listen(
    sp: &TcpSocketParams,
    env: &EngineEnv,
) -> Result<(TcpListener, u16, [u8; 16]), Refusal> {
    bind::check_server(sp.server_bind)?;
    let ip = sp.server_bind.unwrap_or(env.data_ip);
    let (listener, port) = peer::data_listener(ip, env.data_ports, sp)?;
    Ok((listener, port, peer::new_key()))
}
