//! Control messages: WebSocket text frames carrying one JSON object each,
//! `{"type": "...", ...}`, snake_case. Requests carry an `id` that replies echo.
//!
//! Order on a connection: the agent sends [`Event::Hello`] (the protocol
//! version only); the client's first message must be [`Request::Auth`] or the
//! agent closes the socket. What the agent tells about itself ([`AgentInfo`])
//! comes after a successful auth, in [`Event::AuthOk`]: a stranger without
//! the token learns nothing but the protocol version.

use crate::params::{Kind, Limits};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Messages from a controller (page or `meshperf run`) to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Present the token. Must be the first message.
    Auth { id: u64, token: String },
    /// Serving side: open a data listener for a test, bound to a one-time key.
    Prepare {
        id: u64,
        test_id: u32,
        step: u32,
        kind: Kind,
        params: Value,
    },
    /// Driving side: connect to a prepared peer and run the test.
    Start {
        id: u64,
        test_id: u32,
        step: u32,
        kind: Kind,
        params: Value,
        peer: PeerAddr,
    },
    /// Stop a running or prepared test.
    Cancel { id: u64, test_id: u32 },
    /// Liveness check.
    Ping { id: u64 },
}

/// Where the driving agent finds the serving agent's data listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerAddr {
    /// Host name or address of the serving agent, as the controller reached it.
    pub host: String,
    /// The data port from `prepared`.
    pub port: u16,
    /// The one-time session key from `prepared` (32 hex digits).
    pub key: String,
}

/// Which end of a test an agent plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The agent that was asked to `start` (connects).
    Client,
    /// The agent that was asked to `prepare` (accepts).
    Server,
}

impl Role {
    /// The snake_case name used in JSON (as serde writes it).
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
        }
    }

    /// The role whose [`Role::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Role::Client, Role::Server]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// What an agent tells an authenticated controller about itself (`auth_ok`'s `info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub protocol: u32,
    pub version: String,
    pub hostname: String,
    pub addresses: Vec<String>,
    pub cores: u32,
    pub kernel: String,
    pub capabilities: Vec<Kind>,
    pub limits: Limits,
}

/// Messages from an agent to its controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First message on a connection, before auth: only what a client needs
    /// to authenticate.
    Hello {
        protocol: u32,
    },
    /// The token was right; `info` describes the agent.
    AuthOk {
        id: u64,
        info: Box<AgentInfo>,
    },
    Prepared {
        id: u64,
        test_id: u32,
        port: u16,
        key: String,
    },
    Started {
        id: u64,
        test_id: u32,
    },
    Cancelled {
        id: u64,
        test_id: u32,
    },
    Pong {
        id: u64,
    },
    /// Periodic progress of a running test (about 10 per second).
    Progress {
        test_id: u32,
        step: u32,
        role: Role,
        elapsed_s: f64,
        bytes: u64,
        fraction: f64,
    },
    /// Final summary of one side of a test. Samples were sent before it.
    Result {
        test_id: u32,
        step: u32,
        role: Role,
        kind: Kind,
        summary: Value,
    },
    /// A failure: of a request (`id` set) or of a running test (`test_id` set).
    Error {
        #[serde(skip_serializing_if = "Option::is_none", default)]
        id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        test_id: Option<u32>,
        code: String,
        message: String,
    },
}

impl Event {
    /// An error reply to request `id`.
    pub fn error(id: Option<u64>, code: &str, message: impl Into<String>) -> Event {
        Event::Error {
            id,
            test_id: None,
            code: code.to_string(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shape() {
        let r: Request = serde_json::from_value(json!({
            "type": "start", "id": 3, "test_id": 9, "step": 0, "kind": "tcp_stream",
            "params": {"msg_bytes": 1024}, "peer": {"host": "127.0.0.1", "port": 4000, "key": "ab"}
        }))
        .unwrap();
        assert!(matches!(
            r,
            Request::Start {
                id: 3,
                test_id: 9,
                kind: Kind::TcpStream,
                ..
            }
        ));
        let e = serde_json::to_value(Event::error(Some(2), "bad_params", "msg_bytes: too big"))
            .unwrap();
        assert_eq!(
            e,
            json!({"type": "error", "id": 2, "code": "bad_params", "message": "msg_bytes: too big"})
        );
        assert!(
            serde_json::from_value::<Request>(json!({"type": "launch_missiles", "id": 1})).is_err()
        );
    }
}
