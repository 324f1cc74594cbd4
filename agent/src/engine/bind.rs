//! Local addresses of data sockets (`client_bind`, `server_bind`: the Perl
//! seed's `--local-host`, to test one interface or MTU against another).
//! Checked before any traffic: the address must be on this host and of the
//! same family as the peer, or the request is refused naming the parameter.

use super::error::Refusal;
use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the next search of the `--data-ports` range starts: tests take
/// the ports in turn, so a test does not reuse the port the one before it
/// just closed (a late datagram of the old test then meets nobody).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Opens a serving side's sockets with `open(port)`: on port 0 (the
/// kernel's choice) without `--data-ports`, else on the first port of the
/// range that is free, so a firewall need only let that range through.
pub fn on_data_port<T>(
    ports: Option<(u16, u16)>,
    mut open: impl FnMut(u16) -> io::Result<T>,
) -> io::Result<T> {
    let Some((lo, hi)) = ports else {
        return open(0);
    };
    let n = u32::from(hi - lo) + 1;
    let first = NEXT.fetch_add(1, Ordering::Relaxed) % n;
    for i in 0..n {
        let port = lo + ((first + i) % n) as u16;
        match open(port) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            r => return r,
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("every data port in {lo}-{hi} (--data-ports) is in use"),
    ))
}

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
        ErrorCode::BadParams,
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
pub fn check_server(server_bind: Option<IpAddr>) -> Result<(), Refusal> {
    server_bind.map_or(Ok(()), |ip| check_local("server_bind", ip))
}

/// The address the driving side connects to: `server_bind` when the plan
/// names it, else the host the controller reached the serving agent at.
pub fn target_host(server_bind: Option<IpAddr>, peer: &PeerAddr) -> String {
    server_bind.map(|ip| ip.to_string()).unwrap_or_else(|| {
        peer.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    })
}

/// Driving side: `client_bind`, if given, is on this host and of the same
/// family as the peer address (when the peer is given as an address).
pub fn check_client(
    client_bind: Option<IpAddr>,
    server_bind: Option<IpAddr>,
    peer: &PeerAddr,
) -> Result<(), Refusal> {
    let Some(ip) = client_bind else {
        return Ok(());
    };
    check_local("client_bind", ip)?;
    if let Ok(dst) = target_host(server_bind, peer).parse::<IpAddr>() {
        if dst.is_ipv4() != ip.is_ipv4() {
            return Err((
                ErrorCode::BadParams,
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
    fn data_ports_are_taken_in_turn_and_busy_ones_skipped() {
        assert_eq!(on_data_port(None, Ok).unwrap(), 0);
        let busy = |p: u16| {
            if p == 5202 {
                Err(io::Error::from(io::ErrorKind::AddrInUse))
            } else {
                Ok(p)
            }
        };
        let got: Vec<u16> = (0..6)
            .map(|_| on_data_port(Some((5201, 5203)), busy).unwrap())
            .collect();
        assert!(got.iter().all(|p| *p == 5201 || *p == 5203), "{got:?}");
        assert!(got.contains(&5201) && got.contains(&5203), "{got:?}");
        let all_busy = on_data_port(Some((7000, 7001)), |_| {
            Err::<u16, _>(io::Error::from(io::ErrorKind::AddrInUse))
        })
        .unwrap_err();
        assert_eq!(
            all_busy.to_string(),
            "every data port in 7000-7001 (--data-ports) is in use"
        );
        let other = on_data_port(Some((7000, 7001)), |_| {
            Err::<u16, _>(io::Error::from(io::ErrorKind::PermissionDenied))
        });
        assert_eq!(other.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn loopback_range_is_local_and_test_net_is_not() {
        assert!(is_local("127.0.0.2".parse().unwrap()));
        assert!(is_local("::1".parse().unwrap()));
        assert!(!is_local("203.0.113.9".parse().unwrap()));
    }
}
