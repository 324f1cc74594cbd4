//! Names to addresses through the system resolver (A and AAAA records; a
//! Kubernetes headless Service lists its pods so): for `--agent dns:NAME`
//! in `meshperf run` and `meshperf monitor`, and for the `resolve` request a
//! page sends through a connected agent (a browser cannot look up records).

use std::net::{IpAddr, ToSocketAddrs};

/// Longest name DNS carries.
pub const MAX_NAME: usize = 253;
/// Most addresses one lookup returns (a Service of more pods is cut here,
/// and the answer says so).
pub const MAX_ADDRESSES: usize = 256;

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

/// Every address `name` has, IPv4 first, each once, at most
/// [`MAX_ADDRESSES`]; an error for a name with none.
pub fn addresses(name: &str) -> Result<Vec<IpAddr>, String> {
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
    ips.truncate(MAX_ADDRESSES);
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
        let a = addresses("localhost").unwrap();
        assert!(a.contains(&IpAddr::from([127, 0, 0, 1])), "{a:?}");
        assert_eq!(
            addresses("127.0.0.9").unwrap(),
            [IpAddr::from([127, 0, 0, 9])]
        );
        assert!(addresses("no-such-host.invalid").is_err());
    }
}
