//! The agent-to-agent exchange on a serving agent's data port.
//!
//! 1. The driving agent opens a TCP *control* connection and sends one JSON
//!    line, [`PeerHello`], with the one-time session key and the parameters.
//! 2. The serving agent answers one JSON line, [`PeerReply`]; on `ok` it
//!    accepts data connections for this test until the test ends.
//! 3. Each data connection starts with a 20-byte preamble: the 16-byte key
//!    followed by the stream index (u32 LE). Anything else is dropped.
//! 4. When the driving side is done it sends [`PeerDone`] on the control
//!    connection; the serving side answers its own `PeerDone` after its side
//!    has finished, then both close.

use crate::msg::ErrorCode;
use crate::params::Kind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Key length in bytes (128 bits).
pub const KEY_LEN: usize = 16;
/// Data connection preamble length.
pub const PREAMBLE_LEN: usize = KEY_LEN + 4;
/// Longest control line accepted.
pub const MAX_LINE: usize = 64 * 1024;

/// First line on the control connection, driving agent to serving agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerHello {
    pub key: String,
    pub kind: Kind,
    pub params: Value,
}

/// The serving agent's answer to [`PeerHello`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerReply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// End-of-test line; `bytes` is what this side moved in total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerDone {
    pub done: bool,
    pub bytes: u64,
}

/// Lower-case hex of a key.
pub fn key_hex(key: &[u8; KEY_LEN]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses 32 hex digits into a key.
pub fn parse_key(s: &str) -> Option<[u8; KEY_LEN]> {
    if s.len() != KEY_LEN * 2 {
        return None;
    }
    let mut out = [0u8; KEY_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Builds a data-connection preamble.
pub fn preamble(key: &[u8; KEY_LEN], stream: u32) -> [u8; PREAMBLE_LEN] {
    let mut p = [0u8; PREAMBLE_LEN];
    p[..KEY_LEN].copy_from_slice(key);
    p[KEY_LEN..].copy_from_slice(&stream.to_le_bytes());
    p
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
    }
}
