//! Test traffic to an address that is not a meshperf agent (a STAMP
//! reflector, later an iperf3 server): sent only where the agent's operator
//! allowed it with `--allow-target CIDR[,CIDR...]` (none by default).
//!
//! Until such kinds, an agent sent test traffic only to a peer that proved
//! the one-time session key of a test it prepared. A target that is not an
//! agent proves nothing: without this check, whoever holds a token could aim
//! many agents at a third party. Every kind that sends to such a target
//! calls [`Targets::admit`] before its first datagram; the refusal is one
//! line naming the flag. What was sent is on the agent's record (the
//! address) and in its `/metrics`, counted by the allowed range it fell in
//! (a fixed set of labels: the operator's list).

use super::error::Refusal;
use meshperf_protocol::msg::ErrorCode;
use prometheus::IntCounterVec;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// One allowed range: an address and a prefix length (`10.0.0.0/8`,
/// `2001:db8::/32`; a bare address is the one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// `ADDR[/PREFIX]`; host bits set below the prefix are refused
    /// (`10.1.2.3/8` is most likely a typo for a host or for `10.0.0.0/8`).
    pub fn parse(s: &str) -> Result<Net, String> {
        let s = s.trim();
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| {
            format!("{s:?} is not an address or a CIDR range (10.0.0.0/8, 2001:db8::/32)")
        })?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => bits,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= bits => n,
                _ => return Err(format!("{s:?}: the prefix length must be 0 to {bits}")),
            },
        };
        let net = Net { addr, prefix };
        if net.masked(addr) != bits_of(addr) {
            return Err(format!(
                "{s:?}: address bits are set past the /{prefix} prefix; give the range's first address"
            ));
        }
        Ok(net)
    }

    /// `ip` masked to this range's prefix (as a 128-bit number).
    fn masked(&self, ip: IpAddr) -> u128 {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let keep = u32::from(self.prefix);
        let mask = if keep == 0 {
            0
        } else {
            (u128::MAX << (128 - keep)) >> (128 - bits)
        };
        bits_of(ip) & mask
    }

    /// Whether `ip` lies in this range (an IPv4-mapped IPv6 address is
    /// taken as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_ipv4() == self.addr.is_ipv4() && self.masked(ip) == bits_of(self.addr)
    }
}

fn bits_of(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// `CIDR[,CIDR...]`, as `--allow-target` takes it (the flag may also be
/// repeated).
pub fn parse_list(s: &str) -> Result<Vec<Net>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(Net::parse)
        .collect()
}

/// The counters of sends to targets that are not agents (registered by
/// [`crate::serve::metrics::Counters`]).
#[derive(Clone)]
pub struct TargetCounters {
    /// Tests started toward a target, by kind and the allowed range it is in.
    pub tests: IntCounterVec,
    /// Datagrams sent to such targets, by kind and range.
    pub packets: IntCounterVec,
    /// Bytes of UDP payload sent to them, by kind and range.
    pub bytes: IntCounterVec,
    /// Targets refused (outside every allowed range), by kind.
    pub refused: IntCounterVec,
}

/// The operator's allowed ranges and what was sent into them.
#[derive(Clone)]
pub struct Targets {
    nets: Vec<Net>,
    counters: Option<TargetCounters>,
}

/// Where one test sends: its target, the range that allowed it and the
/// counters to count its traffic in.
#[derive(Clone)]
pub struct Admitted {
    pub to: SocketAddr,
    pub net: Net,
    kind: &'static str,
    counters: Option<TargetCounters>,
}

impl Admitted {
    /// `packets` datagrams of `bytes` payload in all went to the target.
    pub fn sent(&self, packets: u64, bytes: u64) {
        if let Some(c) = &self.counters {
            let net = self.net.to_string();
            c.packets
                .with_label_values(&[self.kind, &net])
                .inc_by(packets);
            c.bytes.with_label_values(&[self.kind, &net]).inc_by(bytes);
        }
    }
}

impl Targets {
    /// No target allowed (the default), and nothing counted.
    pub fn none() -> Targets {
        Targets {
            nets: Vec::new(),
            counters: None,
        }
    }

    pub fn new(nets: Vec<Net>, counters: Option<TargetCounters>) -> Targets {
        if let Some(c) = &counters {
            // Every series of the fixed label set is there from the start.
            for n in &nets {
                let net = n.to_string();
                for kind in TARGET_KINDS {
                    c.tests.with_label_values(&[kind, net.as_str()]);
                    c.packets.with_label_values(&[kind, net.as_str()]);
                    c.bytes.with_label_values(&[kind, net.as_str()]);
                }
            }
            for kind in TARGET_KINDS {
                c.refused.with_label_values(&[kind]);
            }
        }
        Targets { nets, counters }
    }

    /// The allowed ranges.
    pub fn nets(&self) -> &[Net] {
        &self.nets
    }

    /// Whether `kind` may send test traffic to `to`, an address that is
    /// not a meshperf agent (`what`: the target as the plan gave it, for
    /// the message): the range that allows it, else a refusal naming
    /// `--allow-target`. On the record either way.
    pub fn admit(
        &self,
        kind: &'static str,
        what: &str,
        to: SocketAddr,
    ) -> Result<Admitted, Refusal> {
        let ip = to.ip().to_canonical();
        let Some(net) = self.nets.iter().find(|n| n.contains(ip)).copied() else {
            if let Some(c) = &self.counters {
                c.refused.with_label_values(&[kind]).inc();
            }
            let allowed = if self.nets.is_empty() {
                "none".to_string()
            } else {
                self.nets
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let msg = format!(
                "{what} ({ip}) is not a meshperf agent and this agent sends test traffic to such an address only inside its --allow-target ranges (now: {allowed}); its operator may add one with --allow-target CIDR"
            );
            crate::log::log!("{kind} to {to} refused: not inside --allow-target ({allowed})");
            return Err((ErrorCode::BadParams, msg));
        };
        if let Some(c) = &self.counters {
            c.tests.with_label_values(&[kind, &net.to_string()]).inc();
        }
        crate::log::log!(
            "{kind} sends test traffic to {to} ({what}), allowed by --allow-target {net}"
        );
        Ok(Admitted {
            to,
            net,
            kind,
            counters: self.counters.clone(),
        })
    }
}

/// The kinds that send to targets that are not agents (the label values
/// shown from the start).
pub const TARGET_KINDS: &[&str] = &["stamp"];

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_hold_their_addresses_and_no_others() {
        let n = Net::parse("10.1.0.0/16").unwrap();
        assert!(n.contains(ip("10.1.255.7")));
        assert!(!n.contains(ip("10.2.0.1")));
        assert!(!n.contains(ip("::ffff:10.2.0.1")));
        assert!(n.contains(ip("::ffff:10.1.0.1")));
        assert!(!n.contains(ip("2001:db8::1")));
        let host = Net::parse("127.0.0.1").unwrap();
        assert!(host.contains(ip("127.0.0.1")) && !host.contains(ip("127.0.0.2")));
        let all = Net::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("192.0.2.1")) && !all.contains(ip("::1")));
        let v6 = Net::parse("2001:db8::/32").unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")) && !v6.contains(ip("2001:db9::1")));
        assert_eq!(v6.to_string(), "2001:db8::/32");
    }

    #[test]
    fn a_bad_range_is_refused_with_what_to_give() {
        assert!(Net::parse("10.1.2.3/8")
            .unwrap_err()
            .contains("first address"));
        assert!(Net::parse("10.0.0.0/33").unwrap_err().contains("0 to 32"));
        assert!(Net::parse("example.org").unwrap_err().contains("CIDR"));
        assert_eq!(parse_list("10.0.0.0/8, 192.0.2.0/24").unwrap().len(), 2);
    }

    #[test]
    fn a_target_outside_every_range_is_refused_naming_the_flag() {
        let t = Targets::new(parse_list("192.0.2.0/24").unwrap(), None);
        let to: SocketAddr = "198.51.100.1:862".parse().unwrap();
        let (code, msg) = t.admit("stamp", "stamp://198.51.100.1", to).err().unwrap();
        assert_eq!(code, ErrorCode::BadParams);
        assert!(
            msg.contains("--allow-target") && !msg.contains('\n'),
            "{msg}"
        );
        let ok: SocketAddr = "192.0.2.9:862".parse().unwrap();
        assert_eq!(
            t.admit("stamp", "x", ok).unwrap().net.to_string(),
            "192.0.2.0/24"
        );
        assert!(Targets::none().admit("stamp", "x", ok).is_err());
    }
}
