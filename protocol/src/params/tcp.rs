//! The socket options and addresses of a TCP test's connections, in one
//! shape for the connection set-up that `tcp_stream` and `tcp_rr` share
//! (and the control connection of the UDP tests), as [`UdpSocketParams`]
//! is for UDP. Each kind's parameters convert to it; nothing parses it.

use super::{CrrParams, RrParams, StreamParams, UdpSocketParams};
use std::net::IpAddr;

/// What a TCP test sets on its sockets, and where they bind.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSocketParams {
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// Requested SO_SNDBUF, bytes (set before connect/listen).
    pub sndbuf: Option<u64>,
    /// Requested SO_RCVBUF, bytes (set before connect/listen).
    pub rcvbuf: Option<u64>,
    /// IP TOS / traffic class byte.
    pub tos: Option<u8>,
    /// TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// TCP_MAXSEG asked for, bytes (announced in the SYN).
    pub mss: Option<u64>,
    /// SO_RCVLOWAT of a receiving socket, bytes.
    pub rcvlowat: u64,
    /// Local address of the driving agent's sockets.
    pub client_bind: Option<IpAddr>,
    /// Address the serving agent listens on; the driving agent connects to it.
    pub server_bind: Option<IpAddr>,
}

impl Default for TcpSocketParams {
    /// The kernel's defaults; a read returns as soon as a byte is there.
    fn default() -> Self {
        TcpSocketParams {
            nodelay: false,
            sndbuf: None,
            rcvbuf: None,
            tos: None,
            congestion: None,
            mss: None,
            rcvlowat: 1,
            client_bind: None,
            server_bind: None,
        }
    }
}

/// A kind's parameters as [`TcpSocketParams`]: `tcp_stream` and `tcp_rr`
/// name their socket options alike; only SO_RCVLOWAT differs.
macro_rules! socket_of {
    ($p:expr, $rcvlowat:expr) => {
        TcpSocketParams {
            nodelay: $p.nodelay,
            sndbuf: $p.sndbuf,
            rcvbuf: $p.rcvbuf,
            tos: $p.tos,
            congestion: $p.congestion.clone(),
            mss: $p.mss,
            rcvlowat: $rcvlowat,
            client_bind: $p.client_bind,
            server_bind: $p.server_bind,
        }
    };
}

impl StreamParams {
    /// The socket options of every data connection of a stream test.
    pub fn socket(&self) -> TcpSocketParams {
        socket_of!(self, self.rcvlowat())
    }
}

impl RrParams {
    /// The socket options of the request/response connection: every
    /// response is awaited as it arrives (SO_RCVLOWAT 1).
    pub fn socket(&self) -> TcpSocketParams {
        socket_of!(self, 1)
    }
}

impl CrrParams {
    /// The socket options of every connection of a connection-rate test:
    /// each response is awaited as it arrives (SO_RCVLOWAT 1).
    pub fn socket(&self) -> TcpSocketParams {
        socket_of!(self, 1)
    }
}

impl UdpSocketParams {
    /// The UDP test's TCP control connection: the kernel's options, on the
    /// test's addresses (so the UDP flow follows the same path).
    pub fn control(&self) -> TcpSocketParams {
        TcpSocketParams {
            client_bind: self.client_bind,
            server_bind: self.server_bind,
            ..TcpSocketParams::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Limits;
    use serde_json::json;

    #[test]
    fn each_kind_hands_over_its_own_options() {
        let l = Limits::default();
        let rr = RrParams::parse(
            &json!({"tos": 16, "mss": 1000, "client_bind": "127.0.0.1"}),
            &l,
        )
        .unwrap()
        .socket();
        assert!(rr.nodelay, "tcp_rr defaults to TCP_NODELAY");
        assert_eq!((rr.tos, rr.mss, rr.rcvlowat), (Some(16), Some(1000), 1));
        assert_eq!(rr.client_bind, Some("127.0.0.1".parse().unwrap()));
        let st = StreamParams::parse(&json!({"msg_bytes": 4096, "congestion": "reno"}), &l)
            .unwrap()
            .socket();
        assert!(!st.nodelay);
        assert_eq!(
            st.rcvlowat, 4096,
            "an unpaced receiver wakes per read buffer"
        );
        assert_eq!(st.congestion.as_deref(), Some("reno"));
        let udp = UdpSocketParams {
            tos: Some(8),
            server_bind: Some("::1".parse().unwrap()),
            ..Default::default()
        }
        .control();
        assert_eq!(
            udp,
            TcpSocketParams {
                server_bind: Some("::1".parse().unwrap()),
                ..Default::default()
            }
        );
    }
}
