//! Names to addresses through the system resolver (A and AAAA records; a
//! Kubernetes headless Service lists its pods so): for `--agent dns:NAME`
//! in `meshperf run` and `meshperf monitor`, and for the `resolve` request a
//! page sends through a connected agent (a browser cannot look up records).

use std::net::{IpAddr, ToSocketAddrs};

/// Longest name DNS carries.
pub const MAX_NAME: usize = 253;
/// Most addresses one lookup may give unless `--max-resolve` says
/// otherwise (`meshperf agent`, `run`, `monitor`): a name with more is
/// refused with the count, never cut to a silent subset.
pub const DEFAULT_MAX_ADDRESSES: usize = 1024;

/// A host name or an address literal, as DNS allows it: letters, digits,
/// `-`, `_` and `.`, at most [`MAX_NAME`] characters (an IPv6 literal may
/// have `:`).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!(
            "a name of 1 to {MAX_NAME} characters is needed, got {}",
            name.len()
        ));
    }
    if name.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Some(c) => Err(format!("{c:?} cannot be in a host name")),
        None => Ok(()),
    }
}

/// Every address `name` has, IPv4 first, each once; an error for a name
/// with none, or with more than `max` (the system resolver asks again over
/// TCP when an answer is too large for a datagram, so a large headless
/// Service comes back whole).
pub fn addresses(name: &str, max: usize) -> Result<Vec<IpAddr>, String> {
    check_name(name)?;
    let mut ips: Vec<IpAddr> = (name, 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {name}: {e}"))?
        .map(|a| a.ip())
        .collect();
    ips.sort_by_key(|ip| (ip.is_ipv6(), *ip));
    ips.dedup();
    if ips.is_empty() {
        return Err(format!("{name} has no addresses"));
    }
    if ips.len() > max {
        return Err(format!(
            "{name} has {} addresses, more than the {max} --max-resolve allows here; raise --max-resolve, or measure a sample of them",
            ips.len()
        ));
    }
    Ok(ips)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_literals() {
        assert!(check_name("meshperf.monitoring.svc.cluster.local").is_ok());
        assert!(check_name("::1").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(&"a".repeat(254)).is_err());
        assert!(check_name("a b").unwrap_err().contains("' '"));
        assert!(check_name("x/../y").is_err());
        let a = addresses("localhost", DEFAULT_MAX_ADDRESSES).unwrap();
        assert!(a.contains(&IpAddr::from([127, 0, 0, 1])), "{a:?}");
        assert_eq!(
            addresses("127.0.0.9", 1).unwrap(),
            [IpAddr::from([127, 0, 0, 9])]
        );
        assert!(addresses("no-such-host.invalid", 1).is_err());
    }
}
