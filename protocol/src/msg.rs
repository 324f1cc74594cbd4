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
use std::collections::BTreeMap;

/// Messages from a controller (page or `meshperf run`) to an agent.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Present the token. Must be the first message. `protocol`: the
    /// version the controller chose from the agent's range (the highest
    /// both speak; absent: `hello`'s `protocol`, as controllers before it
    /// sent); the agent refuses one outside its range.
    Auth {
        id: u64,
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        protocol: Option<u32>,
    },
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
    /// The addresses a DNS name has (A and AAAA, through the agent's
    /// resolver): a page cannot look up records, and in a cluster the
    /// agents' headless Service names every agent. Answered with
    /// [`Event::Resolved`], or an error (`bad_request` for a name DNS cannot
    /// carry, `not_found` for a name with no address, `busy` when lookups
    /// of this agent are already at their limit).
    Resolve { id: u64, name: String },
}

/// Where the driving agent finds the serving agent's data listener.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub protocol: u32,
    pub version: String,
    pub hostname: String,
    pub addresses: Vec<String>,
    pub cores: u32,
    pub kernel: String,
    pub capabilities: Vec<Kind>,
    /// Each kind this agent runs and the parameters it takes for it (every
    /// name its parser accepts): what a controller checks a step against
    /// before any traffic. Empty from agents before it (a controller then
    /// knows their kinds, and their own refusal names a parameter).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(
        feature = "ts",
        ts(as = "Option<BTreeMap<String, Vec<String>>>", optional)
    )]
    pub accepts: BTreeMap<String, Vec<String>>,
    pub limits: Limits,
    /// Random per agent process (16 hex digits): tells one agent reached
    /// under two names from two agents. Empty from agents before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance: String,
}

/// Messages from an agent to its controller.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First message on a connection, before auth: only what a client needs
    /// to authenticate.
    Hello {
        /// The lowest version the agent speaks (its one version, from
        /// agents before `protocol_max`).
        protocol: u32,
        /// The highest (absent: `protocol`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        protocol_max: Option<u32>,
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
    /// The answer to [`Request::Resolve`]: every address of `name`, IPv4
    /// first (a name with more than the agent's `--max-resolve` is refused
    /// with an error naming the count).
    Resolved {
        id: u64,
        name: String,
        addresses: Vec<String>,
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
        code: ErrorCode,
        message: String,
    },
}

impl Event {
    /// An error reply to request `id`.
    pub fn error(id: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Event {
        Event::Error {
            id,
            test_id: None,
            code,
            message: message.into(),
        }
    }

    /// The events a step's driver reads ([`crate::driver::StepRun`]:
    /// `prepared`, `started`, `cancelled`, `progress`, `result` and
    /// `error`) from a JSON object, as the derived `Deserialize` reads them
    /// (extra keys ignored, `error`'s `id` and `test_id` optional, an
    /// unknown error code [`ErrorCode::Unknown`]); `None` for another event
    /// or a malformed one. Written out for the page's codec module, which
    /// reads nothing else from agents: the derive's reader of every event
    /// (the agent's whole `AgentInfo` among them) was a tenth of the module
    /// (64 KB of 690 before optimisation). The unit tests hold both readers
    /// to the same answers.
    pub fn for_step(v: &Value) -> Option<Event> {
        let field = |k: &str| v.get(k).filter(|x| !x.is_null());
        let u64_of = |k: &str| v.get(k)?.as_u64();
        let u32_of = |k: &str| u32::try_from(u64_of(k)?).ok();
        let f64_of = |k: &str| v.get(k)?.as_f64();
        let string = |k: &str| Some(v.get(k)?.as_str()?.to_owned());
        let role = || Role::from_name(v.get("role")?.as_str()?);
        // An optional number: absent or null is `Some(None)`, another type
        // or an out-of-range number fails the event (`None`).
        let optional = |k: &str| match field(k) {
            None => Some(None),
            Some(x) => x.as_u64().map(Some),
        };
        Some(match v.get("type")?.as_str()? {
            "prepared" => Event::Prepared {
                id: u64_of("id")?,
                test_id: u32_of("test_id")?,
                port: u16::try_from(u64_of("port")?).ok()?,
                key: string("key")?,
            },
            "started" => Event::Started {
                id: u64_of("id")?,
                test_id: u32_of("test_id")?,
            },
            "cancelled" => Event::Cancelled {
                id: u64_of("id")?,
                test_id: u32_of("test_id")?,
            },
            "progress" => Event::Progress {
                test_id: u32_of("test_id")?,
                step: u32_of("step")?,
                role: role()?,
                elapsed_s: f64_of("elapsed_s")?,
                bytes: u64_of("bytes")?,
                fraction: f64_of("fraction")?,
            },
            "result" => Event::Result {
                test_id: u32_of("test_id")?,
                step: u32_of("step")?,
                role: role()?,
                kind: Kind::from_name(v.get("kind")?.as_str()?)?,
                summary: v.get("summary")?.clone(),
            },
            "error" => Event::Error {
                id: optional("id")?,
                test_id: match optional("test_id")? {
                    Some(t) => Some(u32::try_from(t).ok()?),
                    None => None,
                },
                code: ErrorCode::from_name(v.get("code")?.as_str()?),
                message: string("message")?,
            },
            _ => return None,
        })
    }
}

/// What went wrong, as the `code` of an [`Event::Error`] (and of a refused
/// agent-to-agent control line, [`crate::peer::PeerReply`]). The wire
/// strings are a public interface (the page and scripts match on them):
/// snake_case of the variant, listed in docs/protocol.md.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The token in `auth` is wrong; the agent closes the socket.
    AuthFailed,
    /// Too many wrong tokens from this address lately; it is refused for a
    /// while (the message says how long).
    AuthBlocked,
    /// No `auth` within the deadline after `hello`; the socket closes.
    AuthTimeout,
    /// A request came before `auth`; the agent closes the socket.
    AuthRequired,
    /// The message is not a request this agent understands (bad JSON, an
    /// unknown `type`, a malformed field such as `peer.key`).
    BadRequest,
    /// A test parameter cannot be used here (out of range, above the
    /// agent's limits, an address not on this host, a socket option the
    /// kernel refused).
    BadParams,
    /// This agent does not run tests of that kind.
    UnsupportedKind,
    /// Another test is running here; one test runs at a time.
    Busy,
    /// A test with this id is already running here.
    DuplicateTest,
    /// `cancel` named no test of this session.
    NotFound,
    /// A message larger than the agent accepts.
    TooLarge,
    /// A system call failed (a listener, a socket, a thread).
    Io,
    /// The driving agent cannot reach the serving agent.
    Unreachable,
    /// The serving agent refused the driving agent's control line.
    PeerRefused,
    /// The other agent did not do its part in time.
    PeerTimeout,
    /// The other agent went away before the end of the test.
    PeerGone,
    /// The other agent sent something that does not follow the protocol.
    Protocol,
    /// A data connection failed mid-test.
    StreamFailed,
    /// A receiver got fewer bytes than the test's count.
    ShortTransfer,
    /// The peer sent nothing for too long mid-test.
    Stalled,
    /// A test ended without a single sample.
    NoSamples,
    /// The test was cancelled (by its controller or because it went away).
    Cancelled,
    /// The test ran past this agent's `--max-duration` (counted from the
    /// moment its peer connected) and the agent stopped it, whatever the
    /// peer did.
    DurationLimit,
    /// The session key belongs to a test of another kind.
    KindMismatch,
    /// Agent to agent: the session key is unknown or already spent.
    BadKey,
    /// A bug in the agent: the message says where.
    Internal,
    /// A code this build does not know (from a newer agent, or a
    /// controller's own transport error): read, never sent by this agent.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 26] = [
        ErrorCode::AuthFailed,
        ErrorCode::AuthBlocked,
        ErrorCode::AuthTimeout,
        ErrorCode::AuthRequired,
        ErrorCode::BadRequest,
        ErrorCode::BadParams,
        ErrorCode::UnsupportedKind,
        ErrorCode::Busy,
        ErrorCode::DuplicateTest,
        ErrorCode::NotFound,
        ErrorCode::TooLarge,
        ErrorCode::Io,
        ErrorCode::Unreachable,
        ErrorCode::PeerRefused,
        ErrorCode::PeerTimeout,
        ErrorCode::PeerGone,
        ErrorCode::Protocol,
        ErrorCode::StreamFailed,
        ErrorCode::ShortTransfer,
        ErrorCode::Stalled,
        ErrorCode::NoSamples,
        ErrorCode::Cancelled,
        ErrorCode::DurationLimit,
        ErrorCode::KindMismatch,
        ErrorCode::BadKey,
        ErrorCode::Internal,
    ];

    /// The snake_case string on the wire (as serde writes it).
    pub fn name(self) -> &'static str {
        use ErrorCode::*;
        match self {
            AuthFailed => "auth_failed",
            AuthBlocked => "auth_blocked",
            AuthTimeout => "auth_timeout",
            AuthRequired => "auth_required",
            BadRequest => "bad_request",
            BadParams => "bad_params",
            UnsupportedKind => "unsupported_kind",
            Busy => "busy",
            DuplicateTest => "duplicate_test",
            NotFound => "not_found",
            TooLarge => "too_large",
            Io => "io",
            Unreachable => "unreachable",
            PeerRefused => "peer_refused",
            PeerTimeout => "peer_timeout",
            PeerGone => "peer_gone",
            Protocol => "protocol",
            StreamFailed => "stream_failed",
            ShortTransfer => "short_transfer",
            Stalled => "stalled",
            NoSamples => "no_samples",
            Cancelled => "cancelled",
            DurationLimit => "duration_limit",
            KindMismatch => "kind_mismatch",
            BadKey => "bad_key",
            Internal => "internal",
            Unknown => "unknown",
        }
    }

    /// The code whose [`ErrorCode::name`] is `name`; [`ErrorCode::Unknown`]
    /// for any other string, as serde reads one (`#[serde(other)]`).
    pub fn from_name(name: &str) -> ErrorCode {
        ErrorCode::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .unwrap_or(ErrorCode::Unknown)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
        let e = serde_json::to_value(Event::error(
            Some(2),
            ErrorCode::BadParams,
            "msg_bytes: too big",
        ))
        .unwrap();
        assert_eq!(
            e,
            json!({"type": "error", "id": 2, "code": "bad_params", "message": "msg_bytes: too big"})
        );
        assert!(
            serde_json::from_value::<Request>(json!({"type": "launch_missiles", "id": 1})).is_err()
        );
    }

    /// `Event::for_step` reads every event the step driver takes as the
    /// derived reader does, and nothing else: well-formed events of each
    /// kind, the optional fields absent and null, an unknown error code,
    /// extra keys; and the malformed ones (a missing or mistyped field, an
    /// out-of-range number, an unknown role or kind) that the derived
    /// reader refuses too.
    #[test]
    fn for_step_reads_what_the_derive_reads() {
        let summary = json!({"bits_per_second": 1.5e9, "streams": [1, 2]});
        let good = [
            json!({"type": "prepared", "id": 1, "test_id": 7, "port": 40000, "key": "ab12"}),
            json!({"type": "started", "id": 2, "test_id": 7, "extra": [1]}),
            json!({"type": "cancelled", "id": 3, "test_id": 7}),
            json!({"type": "progress", "test_id": 7, "step": 2, "role": "server",
                   "elapsed_s": 1.25, "bytes": 123456789012u64, "fraction": 0.5}),
            json!({"type": "progress", "test_id": 7, "step": 2, "role": "client",
                   "elapsed_s": 3, "bytes": 0, "fraction": 1}),
            json!({"type": "result", "test_id": 7, "step": 0, "role": "client",
                   "kind": "latency_under_load", "summary": summary}),
            json!({"type": "error", "id": 4, "code": "busy", "message": "a test runs"}),
            json!({"type": "error", "test_id": 7, "code": "peer_gone", "message": "gone"}),
            json!({"type": "error", "id": null, "test_id": null, "code": "from_the_future",
                   "message": "?"}),
        ];
        for v in good {
            let derived: Event = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(Event::for_step(&v), Some(derived), "{v}");
        }
        let bad = [
            json!({"type": "prepared", "id": 1, "test_id": 7, "port": 70000, "key": "ab"}),
            json!({"type": "prepared", "id": 1, "test_id": 7, "key": "ab"}),
            json!({"type": "started", "id": -1, "test_id": 7}),
            json!({"type": "started", "id": 1.5, "test_id": 7}),
            json!({"type": "cancelled", "id": 1, "test_id": 4294967296u64}),
            json!({"type": "progress", "test_id": 7, "step": 2, "role": "observer",
                   "elapsed_s": 1, "bytes": 1, "fraction": 0.5}),
            json!({"type": "progress", "test_id": 7, "step": 2, "role": "client",
                   "elapsed_s": "1", "bytes": 1, "fraction": 0.5}),
            json!({"type": "result", "test_id": 7, "step": 0, "role": "client",
                   "kind": "carrier_pigeon", "summary": {}}),
            json!({"type": "result", "test_id": 7, "step": 0, "role": "client", "kind": "tcp_rr"}),
            json!({"type": "error", "id": "4", "code": "busy", "message": "x"}),
            json!({"type": "error", "test_id": 4294967296u64, "code": "busy", "message": "x"}),
            json!({"type": "error", "code": 3, "message": "x"}),
            json!({"type": 5}),
            json!([1, 2]),
        ];
        for v in bad {
            assert!(serde_json::from_value::<Event>(v.clone()).is_err(), "{v}");
            assert_eq!(Event::for_step(&v), None, "{v}");
        }
        // The events the driver never reads are left to the derive.
        for v in [
            json!({"type": "hello", "protocol": 1}),
            json!({"type": "pong", "id": 1}),
            json!({"type": "resolved", "id": 1, "name": "a", "addresses": []}),
        ] {
            assert!(serde_json::from_value::<Event>(v.clone()).is_ok(), "{v}");
            assert_eq!(Event::for_step(&v), None, "{v}");
        }
    }

    /// Every code is written as its documented string and read back; the
    /// list in docs/protocol.md names every one of them.
    #[test]
    fn error_codes_round_trip_to_their_documented_strings() {
        let documented = [
            "auth_failed",
            "auth_blocked",
            "auth_timeout",
            "auth_required",
            "bad_request",
            "bad_params",
            "unsupported_kind",
            "busy",
            "duplicate_test",
            "not_found",
            "too_large",
            "io",
            "unreachable",
            "peer_refused",
            "peer_timeout",
            "peer_gone",
            "protocol",
            "stream_failed",
            "short_transfer",
            "stalled",
            "no_samples",
            "cancelled",
            "duration_limit",
            "kind_mismatch",
            "bad_key",
            "internal",
        ];
        assert_eq!(documented.len(), ErrorCode::ALL.len());
        let doc = include_str!("../../docs/protocol.md");
        for (code, name) in ErrorCode::ALL.into_iter().zip(documented) {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(name));
            assert_eq!(code.name(), name);
            assert_eq!(code.to_string(), name);
            let back: ErrorCode = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(back, code);
            assert!(
                doc.contains(&format!("`{name}`")),
                "docs/protocol.md lacks {name}"
            );
        }
        // Codes are case-sensitive; one this build does not know (from a
        // newer agent) is read as Unknown, so a controller still sees the
        // error and its message instead of dropping the event.
        for other in ["Busy", "brand_new_code"] {
            let back: ErrorCode = serde_json::from_value(json!(other)).unwrap();
            assert_eq!(back, ErrorCode::Unknown);
        }
    }
}
