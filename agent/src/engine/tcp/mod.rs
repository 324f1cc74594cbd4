//! The TCP kinds: `tcp_stream` (bulk transfer, [`stream`]), `tcp_rr`
//! (request/response latency, [`rr`]) and `tcp_crr` (a connection per
//! transaction, [`crr`]), each both roles; with `flows` above 1, many
//! connections at once on worker threads ([`rr_flows`], `crr_flows`).

#[cfg(target_os = "linux")]
mod conn;
#[cfg(target_os = "linux")]
pub mod crr;
#[cfg(target_os = "linux")]
mod crr_flows;
pub mod rr;
pub mod rr_flows;
mod setup;
pub mod stream;
