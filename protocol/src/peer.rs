//! The agent-to-agent exchange on a serving agent's data port.
//!
//! 1. The driving agent opens a TCP *control* connection and sends one JSON
//!    line, [`PeerHello`]: the test kind and a tag proving it holds the
//!    one-time session key (the key itself does not travel in this line).
//! 2. The serving agent answers one JSON line, [`PeerReply`], tagged with
//!    the same key; on `ok` it accepts data connections for this test until
//!    the test ends.
//! 3. Each data connection starts with a 20-byte preamble: a 16-byte tag
//!    (HMAC-SHA256 with the key over a label and the stream index, cut to
//!    16 bytes) and the stream index (u32 LE); the key itself never travels.
//!    Anything else is dropped.
//!    A `tcp_stream` side then sends [`PeerGo`] and starts its streams when
//!    the other side's arrives.
//! 4. When the driving side is done it sends [`PeerDone`] on the control
//!    connection; the serving side answers its own `PeerDone` after its side
//!    has finished, then both close.
//!
//! The UDP tests use the control connection instead of data connections:
//! the serving agent sends [`UdpSetup`], the driving agent says hello over
//! UDP until [`UdpBound`] comes back, then each kind exchanges its own
//! lines ([`UdpStreamSenderLine`] and [`UdpStreamReceiverLine`],
//! [`UdpRrRequesterLine`] and [`UdpRrResponderLine`], [`LulDriverLine`]
//! and [`LulServerLine`]). Every line is one
//! JSON object and a newline, at most [`MAX_LINE`] bytes; every line after
//! the hello and its reply carries a tag between the JSON and the newline
//! (a tab, then HMAC-SHA256 with the key over the sending side, the line's
//! number among that side's and the JSON, 64 hex digits).

use crate::msg::ErrorCode;
use crate::params::{Kind, LulPhase};
/// What the responding agent of a `udp_rr` counted: the `done` line carries
/// it, and the responder's summary holds it (defined there).
pub use crate::summary::UdpRrServerCounts;
use crate::summary::{
    LulServerPhase, Timestamps, UdpStreamFigures, UdpStreamReceive, UdpStreamSend,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Key length in bytes (128 bits).
pub const KEY_LEN: usize = 16;
/// Data connection preamble length.
pub const PREAMBLE_LEN: usize = KEY_LEN + 4;
/// Longest control line accepted.
pub const MAX_LINE: usize = 64 * 1024;

/// First line on the control connection, driving agent to serving agent.
/// It carries no parameters: the serving agent runs the test with those it
/// validated in `prepare`, whatever the driving agent thinks they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerHello {
    /// The kind the driving agent was asked to start (must be the prepared one).
    pub kind: Kind,
    /// HMAC-SHA256 with the one-time session key over [`PeerHello::signed`],
    /// 64 hex digits. The key never travels beside it: whoever reads the
    /// line cannot make a tag for an altered one. Missing (a peer of an
    /// older release) is refused like a wrong tag.
    #[serde(default)]
    pub mac: String,
}

impl PeerHello {
    /// The bytes the tag covers: a label, then the line without its tag.
    pub fn signed(&self) -> Vec<u8> {
        let bare = PeerHello {
            mac: String::new(),
            ..self.clone()
        };
        signed("meshperf peer hello", "", &bare)
    }
}

/// The serving agent's answer to [`PeerHello`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerReply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HMAC-SHA256 with the session key over [`PeerReply::signed`] (the
    /// hello's tag included, so a reply answers exactly one hello).
    #[serde(default)]
    pub mac: String,
}

impl PeerReply {
    /// The bytes the tag covers: a label, the tag of the hello answered,
    /// then the line without its own tag.
    pub fn signed(&self, hello_mac: &str) -> Vec<u8> {
        let bare = PeerReply {
            mac: String::new(),
            ..self.clone()
        };
        signed("meshperf peer reply", hello_mac, &bare)
    }
}

fn signed<T: Serialize>(label: &str, bound_to: &str, bare: &T) -> Vec<u8> {
    let mut b = format!("{label}\n{bound_to}\n").into_bytes();
    b.extend(serde_json::to_vec(bare).expect("a peer line serializes"));
    b
}

/// `tcp_stream`: each side sends it once its data connections are set up,
/// and starts its clock and its streams when the other's arrives. A sender
/// therefore writes nothing before the receiver's clock runs, so a receiver
/// can never report a transfer faster than the sender made it (without
/// it the serving side started its clock after data had already queued in
/// its socket buffers, and reported 505 MByte/s for a 16 ms send of 6 MB).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PeerGo {
    pub go: bool,
}

/// End-of-test line; `bytes` is what this side moved in total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerDone {
    pub done: bool,
    pub bytes: u64,
}

/// UDP tests, serving agent to driving agent, right after an `ok`
/// [`PeerReply`]: the UDP port to say hello to and the token the hello
/// carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpSetup {
    pub udp_port: u16,
    /// The test's 64-bit token, 16 hex digits.
    pub token: String,
}

impl UdpSetup {
    pub fn new(udp_port: u16, token: u64) -> UdpSetup {
        UdpSetup {
            udp_port,
            token: format!("{token:016x}"),
        }
    }

    /// The token as a number; `None` if it is not hex.
    pub fn token(&self) -> Option<u64> {
        let mut b = [0u8; 8];
        hex::decode_to_slice(&self.token, &mut b).ok()?;
        Some(u64::from_be_bytes(b))
    }
}

/// UDP tests, serving agent to driving agent: the hello arrived, and from
/// now on the serving agent talks only to `bound` (the driving agent's UDP
/// address as the serving agent sees it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpBound {
    pub bound: SocketAddr,
}

/// `udp_stream`: lines from the sending agent to the receiving agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
// One `stats` line per test: a large variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
pub enum UdpStreamSenderLine {
    /// The burst is about to start: the receiver starts its clock and
    /// answers [`UdpStreamReceiverLine::Zeroed`].
    Zero,
    /// The burst is over: the sender's figures (`sent` and the send-side
    /// summary keys).
    Stats { send: UdpStreamSend },
}

/// `udp_stream`: lines from the receiving agent to the sending agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
// One `stats` line per test: a large variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
pub enum UdpStreamReceiverLine {
    /// The receiver's clock runs; send.
    Zeroed,
    /// The receiver's figures and the summary it built from both sides'.
    Stats {
        summary: UdpStreamFigures,
        receive: UdpStreamReceive,
    },
}

/// `udp_rr`: the requesting (driving) agent is done; `sent` requests went out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum UdpRrRequesterLine {
    Done { sent: u64 },
}

/// `udp_rr`: the responding agent's answer to `done`, with its counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum UdpRrResponderLine {
    Done { server: UdpRrServerCounts },
}

/// `path`: lines between the two agents. The driving agent traces first
/// while the serving agent echoes its probes; `back` hands the turn over,
/// and the serving agent's `traced` (its direction) ends the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PathLine {
    /// Driving agent: my trace is done, trace back now.
    Back,
    /// Serving agent: my trace back, done.
    Traced {
        back: Box<crate::summary::PathDirection>,
    },
}

/// `latency_under_load`: lines from the driving agent to the serving agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum LulDriverLine {
    /// The driving agent listens on `port` for the serving agent's
    /// download streams (each stream is opened by the agent that sends on
    /// it), which say hello and open data connections as any driving agent
    /// does, with a key both agents derive from the session key (HMAC over
    /// a label; it never travels).
    Listen { port: u16 },
    /// Start `phase`'s load now (its streams run for the phase's duration).
    Phase { phase: LulPhase },
    /// The probes are over; `sent` probes per phase code (0 idle, 1
    /// download, 2 upload, 3 both, 4 between phases).
    Done { sent: Vec<u64> },
}

/// `latency_under_load`: what the serving agent counted of one phase
/// code's probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LulTally {
    /// Distinct probes received.
    pub received: u64,
    /// Further copies (not answered).
    pub duplicates: u64,
    /// First copies after a later probe.
    pub reordered: u64,
    /// Answers sent.
    pub answered: u64,
}

/// `latency_under_load`: the serving agent's answer to `done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum LulServerLine {
    Done {
        /// Per phase code, as in [`LulDriverLine::Done`].
        probes: Vec<LulTally>,
        /// The serving side's phases (upload bytes received).
        phases: Vec<LulServerPhase>,
        /// Its system clock (CLOCK_REALTIME, ns since 1970) when its probe
        /// clock started: `t2`/`t3` are ns since then.
        base_ns: u64,
        foreign: u64,
        bad: u64,
        /// Where its receive times (`t2`) came from (absent from agents
        /// before kernel timestamps: `user`).
        #[serde(default)]
        timestamps: Timestamps,
    },
}

/// Lower-case hex of a key.
pub fn key_hex(key: &[u8; KEY_LEN]) -> String {
    hex::encode(key)
}

/// Parses 32 hex digits into a key.
pub fn parse_key(s: &str) -> Option<[u8; KEY_LEN]> {
    let mut out = [0u8; KEY_LEN];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_round_trip() {
        let k = [0xab; KEY_LEN];
        assert_eq!(parse_key(&key_hex(&k)), Some(k));
        assert_eq!(parse_key("zz"), None);
        assert_eq!(parse_key(&"g".repeat(32)), None);
        // Only hex digits: u8::from_str_radix would read "+a" as 10, so a
        // key spelled with a sign in a byte would pass (the fuzzer found
        // it in a hello's tag).
        let plus = format!("+a{}", "ab".repeat(15));
        assert_eq!(plus.len(), 32);
        assert_eq!(parse_key(&plus), None);
        let token = |t: &str| {
            UdpSetup {
                udp_port: 1,
                token: t.into(),
            }
            .token()
        };
        assert_eq!(token("+123456789abcdef"), None);
        assert_eq!(token("00000000000000ff"), Some(255));
        assert_eq!(token("ff"), None);
    }

    /// The lines keep the bytes agents of the previous version sent.
    #[test]
    fn agent_to_agent_lines_keep_their_wire_shape() {
        use serde_json::{json, to_value};
        let hello = PeerHello {
            kind: Kind::UdpRr,
            mac: "cd".repeat(32),
        };
        assert_eq!(
            to_value(&hello).unwrap(),
            json!({"kind": "udp_rr", "mac": "cd".repeat(32)})
        );
        // The tag covers the line without the tag, after a label.
        assert_eq!(
            hello.signed(),
            b"meshperf peer hello\n\n{\"kind\":\"udp_rr\",\"mac\":\"\"}".to_vec()
        );
        // An older driving agent sends its key and no tag: it parses with
        // an empty tag, which the serving agent refuses.
        let old: PeerHello = serde_json::from_value(
            json!({"key": "ab".repeat(16), "kind": "udp_rr", "params": {"count": 5}}),
        )
        .unwrap();
        assert_eq!(old.mac, "");
        let setup = UdpSetup::new(5201, 0x0123_4567_89ab_cdef);
        assert_eq!(
            to_value(&setup).unwrap(),
            json!({"udp_port": 5201, "token": "0123456789abcdef"})
        );
        assert_eq!(setup.token(), Some(0x0123_4567_89ab_cdef));
        let bound = UdpBound {
            bound: "[::1]:4000".parse().unwrap(),
        };
        assert_eq!(to_value(&bound).unwrap(), json!({"bound": "[::1]:4000"}));
        assert_eq!(
            to_value(UdpStreamSenderLine::Zero).unwrap(),
            json!({"op": "zero"})
        );
        assert_eq!(
            to_value(UdpStreamReceiverLine::Zeroed).unwrap(),
            json!({"op": "zeroed"})
        );
        let send = crate::summary::UdpStreamSend {
            sent: 10,
            send_seconds: 0.5,
            sender_nice: Some(-20),
            to: "::1".into(),
            ..Default::default()
        };
        let line = to_value(UdpStreamSenderLine::Stats { send: send.clone() }).unwrap();
        assert_eq!(
            line.to_string(),
            json!({"op": "stats", "send": {
                "sent": 10, "send_seconds": 0.5, "send_gap_us": null,
                "pacing_error_us": {"mean": null, "p99": null}, "sender_nice": -20,
                "schedule_slips": 0, "schedule_slipped_us": 0.0, "from": null, "to": "::1"}})
            .to_string(),
            "keys, their order and number types as before"
        );
        assert_eq!(
            serde_json::from_value::<UdpStreamSenderLine>(line).unwrap(),
            UdpStreamSenderLine::Stats { send }
        );
        assert_eq!(
            to_value(UdpRrRequesterLine::Done { sent: 7 }).unwrap(),
            json!({"op": "done", "sent": 7})
        );
        let server = UdpRrServerCounts {
            received: 7,
            replied: 7,
            bad: 0,
            foreign: 1,
        };
        assert_eq!(
            to_value(UdpRrResponderLine::Done { server }).unwrap(),
            json!({"op": "done", "server": {"received": 7, "replied": 7, "bad": 0, "foreign": 1}})
        );
        let reply = PeerReply {
            ok: false,
            code: Some(ErrorCode::BadKey),
            message: Some("unknown or spent session key".into()),
            mac: "ef".repeat(32),
        };
        assert_eq!(
            to_value(&reply).unwrap(),
            json!({"ok": false, "code": "bad_key", "message": "unknown or spent session key",
                   "mac": "ef".repeat(32)})
        );
        // A reply's tag is bound to the hello it answers.
        assert_ne!(reply.signed("aa"), reply.signed("bb"));
        assert!(reply
            .signed("aa")
            .starts_with(b"meshperf peer reply\naa\n{"));
    }
}
