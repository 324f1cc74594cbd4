//! Parameters of `stamp`: a STAMP Session-Sender (RFC 8762, with RFC 8972's
//! Session-Sender Identifier and Class of Service TLV) run by one agent
//! toward a reflector that is not a meshperf agent (a router's, another
//! tool's, or a meshperf agent's `--stamp` reflector). The agent sends only
//! inside its `--allow-target` ranges (`agent/src/engine/target.rs`).

use super::spec::stamp::*;
use super::spec::DURATION_S;
use super::{bound, Limits, ParamError, Reader};
use serde::{Deserialize, Serialize};

/// The IANA port of STAMP (RFC 8762 §4.1).
pub const STAMP_PORT: u16 = 862;
/// Base packet of unauthenticated mode, both ways (RFC 8762 §4.2.1, §4.3.1).
pub const STAMP_BASE: u64 = 44;
/// Base packet of authenticated mode, both ways (RFC 8762 §4.2.2, §4.3.2).
pub const STAMP_AUTH_BASE: u64 = 112;

/// Parameters of `stamp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StampParams {
    /// The reflector's host (an address or a name) and UDP port.
    pub host: String,
    pub port: u16,
    /// Test packets to send (null with `duration_s`).
    pub count: Option<u64>,
    pub duration_s: Option<f64>,
    /// Between packets on an absolute schedule; 0: each after the last's
    /// answer or timeout.
    pub wait_us: u64,
    /// A reply later than this after its packet left is late (counted, not
    /// a round trip) and the packet lost.
    pub timeout_ms: u64,
    /// UDP payload of each test packet (base packet plus padding or TLVs).
    pub pkt_bytes: u64,
    /// Authenticated mode (HMAC-SHA-256 with the agent's `--stamp-key`).
    pub auth: bool,
    /// `ptp` (truncated: seconds since 1970 and nanoseconds) or `ntp`
    /// timestamps.
    pub clock: String,
    /// IP TOS byte (DSCP << 2 | ECN).
    pub tos: Option<u8>,
    /// Carry the RFC 8972 Class of Service TLV.
    pub cos: bool,
    /// RFC 8972 Session-Sender Identifier (None: random).
    pub ssid: Option<u16>,
}

impl StampParams {
    /// Parses and validates `stamp` parameters against `limits`.
    pub fn parse(v: &serde_json::Value, limits: &Limits) -> Result<Self, ParamError> {
        let mut r = Reader::new(v, limits)?;
        let target = r
            .string(TARGET.name)?
            .ok_or_else(|| ParamError::new("target", "give the reflector: stamp://HOST[:PORT]"))?;
        let (host, port) = parse_target(&target)?;
        let count = r.opt_int(&COUNT)?;
        let duration_s = r.opt_float(&DURATION_S)?;
        let wait_us = r.int(&WAIT_US)?;
        let timeout_ms = r.int(&TIMEOUT_MS)?;
        let auth = r.flag(&AUTH)?;
        let base = if auth { STAMP_AUTH_BASE } else { STAMP_BASE };
        let cos = r.flag(&COS)?;
        // The Class of Service TLV's 8 bytes past the base packet.
        let pkt_bytes = r
            .opt_int(&PKT_BYTES)?
            .unwrap_or(base + if cos { 8 } else { 0 });
        if pkt_bytes < base {
            return Err(ParamError::new(
                "pkt_bytes",
                format!("an authenticated STAMP packet is at least {base} bytes, got {pkt_bytes}"),
            ));
        }
        let tos = super::tos(&mut r)?;
        if cos && auth {
            return Err(ParamError::new(
                "cos",
                "the Class of Service TLV is sent in unauthenticated mode only (authenticated TLVs need the HMAC TLV, not done here)",
            ));
        }
        if cos && pkt_bytes < base + 8 {
            return Err(ParamError::new(
                "pkt_bytes",
                format!("the Class of Service TLV needs 8 bytes past the base packet: at least {}, got {pkt_bytes}", base + 8),
            ));
        }
        let clock = r.choice(&CLOCK)?.to_string();
        let ssid = r.opt_int(&SSID)?.map(|s| s as u16);
        r.finish()?;
        let (count, duration_s) = bound(
            count,
            duration_s,
            &COUNT,
            (u128::from(pkt_bytes) * 2, "count x pkt_bytes x 2"),
            limits,
        )?;
        Ok(StampParams {
            host,
            port,
            count,
            duration_s,
            wait_us,
            timeout_ms,
            pkt_bytes,
            auth,
            clock,
            tos,
            cos,
            ssid,
        })
    }

    /// PTP timestamps rather than NTP.
    pub fn ptp(&self) -> bool {
        self.clock == "ptp"
    }

    /// `host:port`, an IPv6 literal in brackets.
    pub fn target_text(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// `stamp://HOST[:PORT]` (or `HOST[:PORT]`; IPv6 in brackets): the host
/// (an address or a DNS name) and the port (862 when none).
pub fn parse_target(t: &str) -> Result<(String, u16), ParamError> {
    let bad = |why: &str| {
        ParamError::new(
            "target",
            format!("{t:?}: {why}; give stamp://HOST[:PORT] (IPv6 in brackets)"),
        )
    };
    let rest = t.strip_prefix("stamp://").unwrap_or(t);
    if rest.contains("://") {
        return Err(bad("only stamp:// targets"));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| bad("no closing ]"))?;
        (h, after.strip_prefix(':'))
    } else if rest.matches(':').count() > 1 {
        (rest, None) // a bare IPv6 address
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    let port = match port {
        None => STAMP_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("the port must be 1 to 65535")),
        },
    };
    let named = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if host.parse::<std::net::IpAddr>().is_err() && !named {
        return Err(bad("not an address or a host name"));
    }
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_read_with_and_without_scheme_and_port() {
        assert_eq!(
            parse_target("stamp://192.0.2.1").unwrap(),
            ("192.0.2.1".into(), 862)
        );
        assert_eq!(
            parse_target("stamp://r1.example:8862").unwrap(),
            ("r1.example".into(), 8862)
        );
        assert_eq!(
            parse_target("[2001:db8::1]:9").unwrap(),
            ("2001:db8::1".into(), 9)
        );
        assert_eq!(
            parse_target("2001:db8::1").unwrap(),
            ("2001:db8::1".into(), 862)
        );
        for bad in [
            "iperf3://h",
            "stamp://h:0",
            "stamp://",
            "stamp://a b",
            "[::1",
        ] {
            let e = parse_target(bad).unwrap_err();
            assert!(e.to_string().contains("stamp://HOST"), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_and_modes_are_checked() {
        let l = Limits::default();
        let p = StampParams::parse(&json!({"target": "stamp://127.0.0.1"}), &l).unwrap();
        assert_eq!((p.pkt_bytes, p.count, p.auth), (44, Some(1000), false));
        let p = StampParams::parse(&json!({"target": "h", "auth": true}), &l).unwrap();
        assert_eq!(p.pkt_bytes, 112);
        let e = StampParams::parse(&json!({"target": "h", "auth": true, "pkt_bytes": 60}), &l);
        assert_eq!(e.unwrap_err().param, "pkt_bytes");
        let p = StampParams::parse(&json!({"target": "h", "cos": true}), &l).unwrap();
        assert_eq!(p.pkt_bytes, 52);
        let e = StampParams::parse(&json!({"target": "h", "cos": true, "pkt_bytes": 48}), &l);
        assert_eq!(e.unwrap_err().param, "pkt_bytes");
        assert!(StampParams::parse(&json!({}), &l).is_err());
        let e = StampParams::parse(&json!({"target": "h", "count": 5, "duration_s": 1}), &l);
        assert_eq!(e.unwrap_err().param, "count");
    }
}
