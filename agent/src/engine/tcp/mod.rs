//! The TCP kinds: `tcp_stream` (bulk transfer, [`stream`]), `tcp_rr`
//! (request/response latency, [`rr`]) and `tcp_crr` (a connection per
//! transaction, [`crr`]), each both roles.

pub mod crr;
pub mod rr;
pub mod stream;
