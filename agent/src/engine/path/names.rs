//! Hop names (`names`): each answering address's name by reverse DNS
//! through the system resolver (getnameinfo with `NI_NAMEREQD`, so /etc/hosts
//! and PTR records as the host's own tools see them), every address looked
//! up at once on a thread of its own and waited for at most [`WAIT`]: a
//! resolver that does not answer costs the test that long and no more, the
//! hop keeps its address alone, and a lookup still running ends on the
//! resolver's own timeouts with its answer dropped.

use meshperf_protocol::summary::PathHop;
use std::collections::{BTreeSet, HashMap};
use std::ffi::CStr;
use std::net::IpAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest a direction waits for its hops' names.
pub const WAIT: Duration = Duration::from_secs(2);

/// Sets each hop's `name` from its address, where the resolver has one
/// within `wait`.
pub fn name_hops(hops: &mut [PathHop], wait: Duration) {
    let addrs: BTreeSet<IpAddr> = hops
        .iter()
        .filter_map(|h| h.addr.as_deref()?.parse().ok())
        .collect();
    let (tx, rx) = mpsc::channel();
    for ip in addrs {
        let tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name("hop-name".into())
            .spawn(move || {
                let _ = tx.send((ip, reverse(ip)));
            });
        if spawned.is_err() {
            break; // out of threads: the hops not asked keep their addresses
        }
    }
    drop(tx);
    let deadline = Instant::now() + wait;
    let mut names = HashMap::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok((ip, Some(name))) => {
                names.insert(ip, name);
            }
            Ok((_, None)) => {}
            Err(_) => break, // all answered, or the time is up
        }
    }
    for h in hops {
        let ip: Option<IpAddr> = h.addr.as_deref().and_then(|a| a.parse().ok());
        h.name = ip.and_then(|ip| names.get(&ip).cloned());
    }
}

/// The name of `ip` (without a trailing dot), or None: no PTR record or
/// hosts entry, a resolver error, or an answer that is no host name.
fn reverse(ip: IpAddr) -> Option<String> {
    // SAFETY: zeroed sockaddr_in / sockaddr_in6 are valid; each is filled
    // for its family and passed with its own size.
    let (storage, len) = unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        let len = match ip {
            IpAddr::V4(v4) => {
                let sin =
                    &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_addr.s_addr = u32::from_ne_bytes(v4.octets());
                std::mem::size_of::<libc::sockaddr_in>()
            }
            IpAddr::V6(v6) => {
                let sin6 =
                    &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_addr.s6_addr = v6.octets();
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (ss, len as libc::socklen_t)
    };
    // NI_MAXHOST bytes, the longest name getnameinfo writes.
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: the address and its length as built above; `host` is a
    // writable buffer of the size given; no service buffer.
    let rc = unsafe {
        libc::getnameinfo(
            (&storage as *const libc::sockaddr_storage).cast(),
            len,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: getnameinfo wrote a NUL-terminated string into `host`.
    let name = unsafe { CStr::from_ptr(host.as_ptr()) }.to_str().ok()?;
    let name = name.trim_end_matches('.');
    // Only a host name goes into the result (a PTR record can hold anything).
    (name.parse::<IpAddr>().is_err() && crate::dns::check_name(name).is_ok())
        .then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(addr: Option<&str>) -> PathHop {
        PathHop {
            addr: addr.map(str::to_string),
            ..PathHop::default()
        }
    }

    /// The host's own files: 127.0.0.1 is localhost; a silent hop stays
    /// nameless. (No address that would ask a name server: tests send
    /// nothing off this host; tests/netns/path.sh names routers through
    /// its own resolver.)
    #[test]
    fn loopback_is_named_from_the_hosts_file_and_a_silent_hop_keeps_none() {
        let mut hops = vec![hop(Some("127.0.0.1")), hop(None)];
        let t = Instant::now();
        name_hops(&mut hops, WAIT);
        assert!(t.elapsed() <= WAIT + Duration::from_millis(500));
        assert_eq!(hops[0].name.as_deref(), Some("localhost"), "{hops:?}");
        assert_eq!(hops[1].name, None);
        assert_eq!(hops[0].addr.as_deref(), Some("127.0.0.1"));
    }
}
