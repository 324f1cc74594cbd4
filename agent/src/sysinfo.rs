//! What an agent tells about its host in `hello`: hostname, addresses,
//! cores and kernel, read from the OS (gethostname, getifaddrs, uname).

use std::ffi::CStr;
use std::net::IpAddr;

/// The host name, or "unknown".
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

#[cfg(test)]
mod tests {
    #[test]
    fn reads_host_facts() {
        assert!(!super::hostname().is_empty());
        assert!(super::cores() >= 1);
        assert!(super::kernel().contains("Linux"));
        assert!(super::addresses().iter().any(|(_, a)| a.is_loopback()));
    }
}
