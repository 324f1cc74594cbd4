//! Socket options a plan asks for, and what the kernel actually gave (the Perl
//! seed's point: the size you ask for is not the size you get).

use crate::platform::AsSock as AsFd;
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::TcpSocketParams;
use serde::Serialize;
use socket2::SockRef;
use std::io;

/// Options as the kernel reports them after setting.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Applied {
    pub sndbuf_actual: u64,
    pub rcvbuf_actual: u64,
    pub nodelay: bool,
    pub tos: Option<u32>,
    pub congestion: Option<String>,
    pub rcvlowat: u64,
    /// TCP_MAXSEG: on a connected socket, the segment size in use.
    pub mss: Option<u32>,
}

/// Options that must be set before connect/listen (buffer sizes, so the
/// window scale is negotiated for them; the MSS, which the SYN announces and
/// accepted sockets inherit from their listener).
pub fn pre_connect(sock: &socket2::Socket, p: &TcpSocketParams) -> io::Result<()> {
    if let Some(n) = p.sndbuf {
        sock.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = p.rcvbuf {
        sock.set_recv_buffer_size(n as usize)?;
    }
    #[cfg(not(target_os = "linux"))]
    if p.mss.is_some() {
        return Err(crate::platform::unsupported("mss", "TCP_MAXSEG"));
    }
    #[cfg(target_os = "linux")]
    if let Some(m) = p.mss {
        set_int(
            &SockRef::from(sock),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            m as libc::c_int,
        )
        .map_err(|e| io::Error::new(e.kind(), format!("mss: cannot set TCP_MAXSEG {m}: {e}")))?;
    }
    Ok(())
}

/// Refuses a congestion control algorithm this host cannot give the test:
/// not available, or (without root) not in the allowed list.
#[cfg(not(target_os = "linux"))]
pub fn check_congestion(name: Option<&str>) -> Result<(), super::error::Refusal> {
    match name {
        None => Ok(()),
        Some(_) => Err((
            ErrorCode::BadParams,
            crate::platform::needs_linux("congestion", "choosing the TCP congestion control"),
        )),
    }
}

/// Refuses a congestion control algorithm this host cannot give the test:
/// not available, or (without root) not in the allowed list.
#[cfg(target_os = "linux")]
pub fn check_congestion(name: Option<&str>) -> Result<(), super::error::Refusal> {
    let Some(name) = name else { return Ok(()) };
    let read = |f: &str| std::fs::read_to_string(format!("/proc/sys/net/ipv4/{f}"));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let list = if root {
        read("tcp_available_congestion_control")
    } else {
        read("tcp_allowed_congestion_control")
    };
    let Ok(list) = list else { return Ok(()) }; // no procfs: setsockopt will tell
    if list.split_whitespace().any(|c| c == name) {
        return Ok(());
    }
    Err((
        ErrorCode::BadParams,
        format!(
            "congestion: {name:?} is not available on this host (choose one of: {})",
            list.trim()
        ),
    ))
}

/// Sets the per-connection options and reads everything back.
pub fn apply<S: AsFd>(s: &S, p: &TcpSocketParams, ipv6: bool) -> Result<Applied, String> {
    set(s, p, ipv6, true)?;
    read_back(&SockRef::from(s), ipv6).map_err(|e| format!("cannot read socket options: {e}"))
}

/// Sets the per-connection options without reading them back (`tcp_crr`
/// sets them on every connection and reads back the first one's only);
/// SO_RCVLOWAT only where it is not the kernel's 1 unless `lowat_always`.
pub fn set<S: AsFd>(
    s: &S,
    p: &TcpSocketParams,
    ipv6: bool,
    lowat_always: bool,
) -> Result<(), String> {
    let sock = SockRef::from(s);
    sock.set_tcp_nodelay(p.nodelay)
        .map_err(|e| format!("nodelay: cannot set TCP_NODELAY: {e}"))?;
    if let Some(tos) = p.tos {
        let r = if ipv6 {
            crate::platform::set_tclass_v6(&sock, tos as u32)
        } else {
            sock.set_tos_v4(tos as u32)
        };
        r.map_err(|e| format!("tos: cannot set {tos}: {e}"))?;
    }
    #[cfg(not(target_os = "linux"))]
    {
        // No SO_RCVLOWAT here: a `rcvlowat` asked for is refused before
        // any traffic (platform::linux_only), and the one a bulk receiver
        // gets by default (one read buffer) is only a wake-up saving.
        let _ = lowat_always;
        if p.congestion.is_some() {
            return Err(crate::platform::needs_linux("congestion", "TCP_CONGESTION"));
        }
    }
    #[cfg(target_os = "linux")]
    if let Some(cc) = &p.congestion {
        sock.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
            let avail =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                    .unwrap_or_default();
            format!(
                "congestion: {cc:?} is not available here ({e}); allowed: {}",
                avail.trim()
            )
        })?;
    }
    #[cfg(target_os = "linux")]
    if lowat_always || p.rcvlowat != 1 {
        let lowat = p.rcvlowat.min(i32::MAX as u64) as libc::c_int;
        set_int(&sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT, lowat)
            .map_err(|e| format!("rcvlowat: cannot set {lowat}: {e}"))?;
    }
    Ok(())
}

/// An int-valued setsockopt.
#[cfg(target_os = "linux")]
pub(crate) fn set_int(
    sock: &SockRef<'_>,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: v lives across the call and its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(target_os = "linux")]
fn get_int(sock: &SockRef<'_>, level: libc::c_int, name: libc::c_int) -> Option<libc::c_int> {
    use std::os::fd::AsRawFd;
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(v)
}

#[cfg(target_os = "linux")]
fn read_back(sock: &SockRef<'_>, ipv6: bool) -> io::Result<Applied> {
    let tos = if ipv6 {
        tclass_v6(sock)
    } else {
        sock.tos_v4().ok()
    };
    Ok(Applied {
        sndbuf_actual: sock.send_buffer_size()? as u64,
        rcvbuf_actual: sock.recv_buffer_size()? as u64,
        nodelay: sock.tcp_nodelay()?,
        tos,
        rcvlowat: get_int(sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT).unwrap_or(1) as u64,
        mss: get_int(sock, libc::IPPROTO_TCP, libc::TCP_MAXSEG).map(|m| m as u32),
        congestion: sock.tcp_congestion().ok().map(|v| {
            String::from_utf8_lossy(&v)
                .trim_end_matches('\0')
                .to_string()
        }),
    })
}

/// Off Linux: what socket2 reads portably (no SO_RCVLOWAT, TCP_MAXSEG
/// or congestion control to read).
#[cfg(not(target_os = "linux"))]
fn read_back(sock: &SockRef<'_>, ipv6: bool) -> io::Result<Applied> {
    Ok(Applied {
        sndbuf_actual: sock.send_buffer_size()? as u64,
        rcvbuf_actual: sock.recv_buffer_size()? as u64,
        nodelay: sock.tcp_nodelay()?,
        tos: if ipv6 { None } else { sock.tos_v4().ok() },
        rcvlowat: 1,
        mss: None,
        congestion: None,
    })
}

#[cfg(target_os = "linux")]
fn tclass_v6(sock: &SockRef<'_>) -> Option<u32> {
    get_int(sock, libc::IPPROTO_IPV6, libc::IPV6_TCLASS).map(|v| v as u32)
}

/// TCP_INFO figures meshperf reports.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TcpInfo {
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
}

/// Reads TCP_INFO from a connected socket (Linux's; None elsewhere).
#[cfg(not(target_os = "linux"))]
pub fn tcp_info<S>(_s: &S) -> Option<TcpInfo> {
    None
}

/// Reads TCP_INFO from a connected socket.
#[cfg(target_os = "linux")]
pub fn tcp_info<S: std::os::fd::AsRawFd>(s: &S) -> Option<TcpInfo> {
    // SAFETY: tcp_info is plain data; the kernel fills at most len bytes.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(TcpInfo {
        rtt_us: ti.tcpi_rtt,
        rttvar_us: ti.tcpi_rttvar,
        snd_cwnd: ti.tcpi_snd_cwnd,
        total_retrans: ti.tcpi_total_retrans,
    })
}
