//! STAMP test packets (RFC 8762 §4.2-4.3, the Session-Sender Identifier of
//! RFC 8972 §3, and its TLVs §4: Extra Padding, Class of Service), both
//! ways, unauthenticated and authenticated (HMAC-SHA-256 truncated to 16
//! bytes over the 96 bytes before it, RFC 8762 §4.4), and the timestamps
//! (NTP: seconds since 1900 and a binary fraction; PTP truncated: seconds
//! since 1970 and nanoseconds). Every field is big-endian.
//!
//! Unauthenticated (44 bytes; the reflector's is as long):
//!
//! | sender            | at | reflector                                   |
//! |-------------------|----|---------------------------------------------|
//! | sequence number   | 0  | its sequence number                         |
//! | timestamp         | 4  | its timestamp (t3, as it sent)              |
//! | error estimate    | 12 | its error estimate                          |
//! | SSID              | 14 | SSID (ours, echoed)                         |
//! | MBZ (28)          | 16 | receive timestamp (t2)                      |
//! |                   | 24 | sender's sequence number                    |
//! |                   | 28 | sender's timestamp (t1, echoed)             |
//! |                   | 36 | sender's error estimate                     |
//! |                   | 40 | sender's TTL as received (after 2 MBZ)      |
//!
//! Authenticated (112 bytes): the same fields spread over 16-byte blocks
//! (see [`A`]), the HMAC at 96.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Unauthenticated base packet, both ways.
pub const BASE: usize = 44;
/// Authenticated base packet, both ways.
pub const AUTH_BASE: usize = 112;
/// Where the HMAC sits in an authenticated packet (it covers what is before).
pub const HMAC_AT: usize = 96;
/// RFC 8972 TLV types this agent reads or writes.
pub const TLV_EXTRA_PADDING: u8 = 1;
pub const TLV_CLASS_OF_SERVICE: u8 = 4;
/// The TLV flags' U bit: the reflector does not know the type.
pub const TLV_U: u8 = 0x80;

/// Seconds from 1900 (NTP's era 0) to 1970.
const NTP_UNIX: u64 = 2_208_988_800;

/// Field offsets of one mode.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub seq: usize,
    pub ts: usize,
    pub err: usize,
    pub ssid: usize,
    pub rx_ts: usize,
    pub s_seq: usize,
    pub s_ts: usize,
    pub s_err: usize,
    pub s_ttl: usize,
    pub len: usize,
}

/// Unauthenticated mode.
pub const U: Layout = Layout {
    seq: 0,
    ts: 4,
    err: 12,
    ssid: 14,
    rx_ts: 16,
    s_seq: 24,
    s_ts: 28,
    s_err: 36,
    s_ttl: 40,
    len: BASE,
};
/// Authenticated mode.
pub const A: Layout = Layout {
    seq: 0,
    ts: 16,
    err: 24,
    ssid: 26,
    rx_ts: 32,
    s_seq: 48,
    s_ts: 64,
    s_err: 72,
    s_ttl: 80,
    len: AUTH_BASE,
};

impl Layout {
    pub fn of(auth: bool) -> Layout {
        if auth {
            A
        } else {
            U
        }
    }
}

/// An HMAC key (RFC 8762 §4.4: HMAC-SHA-256).
#[derive(Clone)]
pub struct Key(Vec<u8>);

/// The shortest key taken (as stamp-suite does).
pub const MIN_KEY: usize = 16;

impl Key {
    /// A key file's bytes: hex text when it reads as hex (surrounding
    /// white space dropped), else the raw bytes; at least [`MIN_KEY`] bytes.
    pub fn from_file_bytes(b: &[u8]) -> Result<Key, String> {
        let text = std::str::from_utf8(b).ok().map(str::trim);
        let key = match text.and_then(|t| hex::decode(t).ok()) {
            Some(k) => k,
            None => b.to_vec(),
        };
        if key.len() < MIN_KEY {
            return Err(format!(
                "a STAMP key is at least {MIN_KEY} bytes (or {} hex digits), this one has {}",
                MIN_KEY * 2,
                key.len()
            ));
        }
        Ok(Key(key))
    }

    /// Reads `path` ([`Key::from_file_bytes`]).
    pub fn read(path: &std::path::Path) -> Result<Key, String> {
        let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Key::from_file_bytes(&b).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn mac(&self, covered: &[u8]) -> [u8; 16] {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(covered);
        let full = m.finalize().into_bytes();
        full[..16].try_into().expect("32 bytes")
    }

    /// Writes the HMAC of `pkt[..96]` at 96.
    pub fn sign(&self, pkt: &mut [u8]) {
        let mac = self.mac(&pkt[..HMAC_AT]);
        pkt[HMAC_AT..AUTH_BASE].copy_from_slice(&mac);
    }

    /// Whether `pkt`'s HMAC is right (compared in constant time).
    pub fn verify(&self, pkt: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        pkt.len() >= AUTH_BASE
            && bool::from(self.mac(&pkt[..HMAC_AT]).ct_eq(&pkt[HMAC_AT..AUTH_BASE]))
    }
}

/// A timestamp in the wire's format (`ptp`: PTP truncated, else NTP) from
/// nanoseconds since 1970.
pub fn ts_of(unix_ns: u128, ptp: bool) -> u64 {
    let s = (unix_ns / 1_000_000_000) as u64;
    let ns = (unix_ns % 1_000_000_000) as u64;
    if ptp {
        (s & 0xffff_ffff) << 32 | ns
    } else {
        let frac = (ns << 32) / 1_000_000_000;
        ((s + NTP_UNIX) & 0xffff_ffff) << 32 | frac
    }
}

/// Nanoseconds since 1970 of a wire timestamp (NTP era 0: until 2036).
pub fn ns_of(ts: u64, ptp: bool) -> u128 {
    let (s, low) = (ts >> 32, ts & 0xffff_ffff);
    if ptp {
        u128::from(s) * 1_000_000_000 + u128::from(low.min(999_999_999))
    } else {
        let s = s.saturating_sub(NTP_UNIX);
        u128::from(s) * 1_000_000_000 + ((u128::from(low) * 1_000_000_000) >> 32)
    }
}

/// The error estimate (RFC 8762 §4.2.1, RFC 4656 §4.1.2): S (synchronised),
/// Z (PTP), scale and multiplier. Ours says not synchronised, with an
/// error of 2^-10 s (about 1 ms; multiplier 1, scale 22).
pub fn error_estimate(ptp: bool, synced: bool) -> u16 {
    (u16::from(synced) << 15) | (u16::from(ptp) << 14) | (22 << 8) | 1
}

/// The Z bit of an error estimate: its timestamps are PTP.
pub fn is_ptp(err: u16) -> bool {
    err & 0x4000 != 0
}

/// The S bit: the clock is synchronised to UTC.
pub fn is_synced(err: u16) -> bool {
    err & 0x8000 != 0
}

pub fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
pub fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}
pub fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
pub fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
pub fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// A Class of Service TLV's value (RFC 8972 §4.4): DSCP1 (what the sender
/// asks the reflected packet to carry), DSCP2 and ECN (what the reflector
/// received), RP.
pub fn cos_value(dscp1: u8, dscp2: u8, ecn: u8, rp: u8) -> [u8; 4] {
    let v: u32 = u32::from(dscp1 & 0x3f) << 26
        | u32::from(dscp2 & 0x3f) << 20
        | u32::from(ecn & 3) << 18
        | u32::from(rp & 3) << 16;
    v.to_be_bytes()
}

/// DSCP1, DSCP2, ECN of a Class of Service TLV's value.
pub fn cos_read(v: &[u8]) -> Option<(u8, u8, u8)> {
    let v = u32::from_be_bytes(v.get(..4)?.try_into().ok()?);
    Some((
        (v >> 26) as u8 & 0x3f,
        (v >> 20) as u8 & 0x3f,
        (v >> 18) as u8 & 3,
    ))
}

/// One TLV: where its header starts in the packet, flags, type, value range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv {
    pub at: usize,
    pub flags: u8,
    pub ty: u8,
    pub value: (usize, usize),
}

/// The TLVs after the base packet (`from`), or `None` when they do not
/// parse (a length running past the end): then the bytes are padding.
pub fn tlvs(pkt: &[u8], from: usize) -> Option<Vec<Tlv>> {
    let mut out = Vec::new();
    let mut at = from;
    while at < pkt.len() {
        if pkt.len() - at < 4 {
            return None;
        }
        let len = usize::from(get16(pkt, at + 2));
        let end = at + 4 + len;
        if end > pkt.len() {
            return None;
        }
        out.push(Tlv {
            at,
            flags: pkt[at],
            ty: pkt[at + 1],
            value: (at + 4, end),
        });
        at = end;
    }
    Some(out)
}

/// Writes TLVs into `pkt[from..]`: a Class of Service TLV (when `cos` is
/// DSCP1) and Extra Padding for the rest, when there is room for a TLV
/// header; zeros otherwise.
pub fn write_tlvs(pkt: &mut [u8], from: usize, cos: Option<u8>) {
    pkt[from..].fill(0);
    let mut at = from;
    if let Some(dscp1) = cos {
        pkt[at + 1] = TLV_CLASS_OF_SERVICE;
        put16(pkt, at + 2, 4);
        pkt[at + 4..at + 8].copy_from_slice(&cos_value(dscp1, 0, 0, 0));
        at += 8;
        let rest = pkt.len() - at;
        if rest >= 4 {
            pkt[at + 1] = TLV_EXTRA_PADDING;
            put16(pkt, at + 2, (rest - 4) as u16);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_in_both_formats() {
        let t = 1_764_000_000_123_456_789u128;
        assert_eq!(ns_of(ts_of(t, true), true), t);
        let back = ns_of(ts_of(t, false), false);
        assert!(t - back < 2, "{t} {back}");
        // NTP seconds since 1900.
        assert_eq!(ts_of(0, false) >> 32, NTP_UNIX);
    }

    #[test]
    fn hmac_covers_the_first_96_bytes() {
        let k = Key::from_file_bytes(b"000102030405060708090a0b0c0d0e0f\n").unwrap();
        let mut p = vec![0u8; AUTH_BASE];
        p[0] = 1;
        k.sign(&mut p);
        assert!(k.verify(&p));
        p[95] ^= 1;
        assert!(!k.verify(&p));
        assert!(Key::from_file_bytes(b"short").is_err());
        // Not hex: the raw bytes.
        assert!(Key::from_file_bytes(b"this is a long raw key, not hex").is_ok());
    }

    #[test]
    fn tlvs_write_and_read_back() {
        let mut p = vec![0u8; 64];
        write_tlvs(&mut p, BASE, Some(46));
        let t = tlvs(&p, BASE).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].ty, TLV_CLASS_OF_SERVICE);
        assert_eq!(cos_read(&p[t[0].value.0..]).unwrap(), (46, 0, 0));
        assert_eq!(t[1].ty, TLV_EXTRA_PADDING);
        assert_eq!(t[1].value.1, 64);
        assert!(tlvs(&[0, 1, 0, 9], 0).is_none());
    }
}
