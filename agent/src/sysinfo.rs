//! What an agent tells about its host in `hello`: hostname, addresses,
//! cores and kernel, read from the OS (gethostname, getifaddrs, uname; on
//! Windows the computer name and the OS name, and no interface list).

#[cfg(unix)]
use std::ffi::CStr;
use std::net::IpAddr;

/// The host name (%COMPUTERNAME%), or "unknown".
#[cfg(windows)]
pub fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_else(|_| "unknown".into())
}

/// The OS and architecture: Windows has no uname.
#[cfg(windows)]
pub fn kernel() -> String {
    format!("Windows {}", std::env::consts::ARCH)
}

/// No interface list on Windows (it would take the IP Helper API): the
/// page shows the address the agent was reached at.
#[cfg(windows)]
pub fn addresses() -> Vec<(String, IpAddr)> {
    Vec::new()
}

/// The host name, or "unknown".
#[cfg(unix)]
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    CStr::from_bytes_until_nul(&buf)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// `sysname release machine` from uname.
#[cfg(unix)]
pub fn kernel() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let f = |s: &[libc::c_char]| {
        unsafe { CStr::from_ptr(s.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.machine))
}

/// Number of CPUs this process may run on.
pub fn cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// Interface addresses as `name addr` pairs, IPv4 and IPv6.
#[cfg(unix)]
pub fn addresses() -> Vec<(String, IpAddr)> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we walk read-only and free once.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return out;
    }
    let mut p = ifap;
    while !p.is_null() {
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
        let ip = match family {
            libc::AF_INET => {
                let sa = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes())
            }
            libc::AF_INET6 => {
                let sa = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::from(sa.sin6_addr.s6_addr)
            }
            _ => continue,
        };
        out.push((name, ip));
    }
    unsafe { libc::freeifaddrs(ifap) };
    out
}

/// The interface `ip` belongs to, with the speed and MTU it reports
/// (`/sys/class/net/NAME/{speed,mtu}`); all of 127/8 is `lo` (getifaddrs
/// lists only 127.0.0.1). `None` for an address of no interface here.
pub fn link(ip: IpAddr) -> Option<meshperf_protocol::summary::LinkSummary> {
    let ip = ip.to_canonical();
    let name = if ip.is_loopback() {
        "lo".to_string()
    } else {
        addresses().into_iter().find(|(_, a)| *a == ip)?.0
    };
    // A name from getifaddrs: no path separators in it, but say so.
    if name.contains('/') || name.starts_with('.') {
        return None;
    }
    let read = |what: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{what}"))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
    };
    Some(meshperf_protocol::summary::LinkSummary {
        // Loopback and virtual devices fail the read or say -1 (unknown).
        speed_mbps: read("speed").filter(|&s| s > 0).map(|s| s as u64),
        mtu: read("mtu").filter(|&m| m > 0).map(|m| m as u32),
        interface: name,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_host_facts() {
        assert!(!super::hostname().is_empty());
        assert!(super::cores() >= 1);
        assert!(super::kernel().contains("Linux"));
        assert!(super::addresses().iter().any(|(_, a)| a.is_loopback()));
    }

    #[test]
    fn loopback_is_lo_with_its_mtu_and_no_speed() {
        for ip in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            let l = super::link(ip.parse().unwrap()).unwrap();
            assert_eq!((l.interface.as_str(), l.speed_mbps), ("lo", None), "{ip}");
            let mtu = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap();
            assert_eq!(l.mtu, mtu.trim().parse().ok(), "{ip}");
        }
        assert_eq!(super::link("192.0.2.77".parse().unwrap()), None);
    }
}
