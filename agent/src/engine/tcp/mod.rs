//! The TCP kinds: `tcp_stream` (bulk transfer, [`stream`]) and `tcp_rr`
//! (request/response latency, [`rr`]), each both roles.

pub mod rr;
pub mod stream;
