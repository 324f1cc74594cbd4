//! Local addresses of data sockets (`client_bind`, `server_bind`: the Perl
//! seed's `--local-host`, to test one interface or MTU against another).
//! Checked before any traffic: the address must be on this host and of the
//! same family as the peer, or the request is refused naming the parameter.

use super::Refusal;
use meshperf_protocol::msg::PeerAddr;
use meshperf_protocol::params::StreamParams;
use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is one of this host's addresses. The whole loopback range
/// counts (Linux answers for all of 127/8 on `lo`, though getifaddrs lists
/// only 127.0.0.1), and so does the unspecified address (any interface).
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback()
        || ip.is_unspecified()
        || crate::sysinfo::addresses().iter().any(|(_, a)| *a == ip)
}

fn check_local(name: &str, ip: IpAddr) -> Result<(), Refusal> {
    if is_local(ip) {
        return Ok(());
    }
    let mine: Vec<String> = crate::sysinfo::addresses()
        .iter()
        .map(|(_, a)| a.to_string())
        .collect();
    Err((
        "bad_params",
        format!(
            "{name}: {ip} is not an address of this host (its addresses: {})",
            mine.join(", ")
        ),
    ))
}

fn family(ip: IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "IPv4"
    } else {
        "IPv6"
    }
}

/// Serving side: `server_bind`, if given, is on this host.
pub fn check_server(p: &StreamParams) -> Result<(), Refusal> {
    p.server_bind
        .map_or(Ok(()), |ip| check_local("server_bind", ip))
}

/// The address the driving side connects to: `server_bind` when the plan
/// names it, else the host the controller reached the serving agent at.
pub fn target_host(p: &StreamParams, peer: &PeerAddr) -> String {
    p.server_bind.map(|ip| ip.to_string()).unwrap_or_else(|| {
        peer.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    })
}

/// Driving side: `client_bind`, if given, is on this host and of the same
/// family as the peer address (when the peer is given as an address).
pub fn check_client(p: &StreamParams, peer: &PeerAddr) -> Result<(), Refusal> {
    let Some(ip) = p.client_bind else {
        return Ok(());
    };
    check_local("client_bind", ip)?;
    if let Ok(dst) = target_host(p, peer).parse::<IpAddr>() {
        if dst.is_ipv4() != ip.is_ipv4() {
            return Err((
                "bad_params",
                format!(
                    "client_bind: {ip} is {} but the peer {dst} is {}; bind an {} address or reach the peer over {}",
                    family(ip),
                    family(dst),
                    family(dst),
                    family(ip)
                ),
            ));
        }
    }
    Ok(())
}

/// Picks the peer address matching `client_bind`'s family, if any.
pub fn pick(addrs: impl Iterator<Item = SocketAddr>, bind: Option<IpAddr>) -> Option<SocketAddr> {
    let all: Vec<SocketAddr> = addrs.collect();
    let same = |a: &&SocketAddr| bind.map_or(true, |b| b.is_ipv4() == a.is_ipv4());
    all.iter().find(same).or(all.first()).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_range_is_local_and_test_net_is_not() {
        assert!(is_local("127.0.0.2".parse().unwrap()));
        assert!(is_local("::1".parse().unwrap()));
        assert!(!is_local("203.0.113.9".parse().unwrap()));
    }
}
