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

/// TCP_INFO figures meshperf reports: the kernel's `struct tcp_info`
/// (include/uapi/linux/tcp.h) read from its raw bytes by its documented
/// layout, not through `libc::tcp_info` (which may lack newer fields).
/// The kernel returns as many bytes as it has fields; a field past them
/// is `None` here, never 0 (see [`FIELDS`] for when each came).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TcpInfo {
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    /// Bytes of `struct tcp_info` the kernel returned.
    pub len: u32,
    pub snd_mss: u32,
    pub unacked: u32,
    pub rcv_space: u32,
    pub notsent_bytes: Option<u32>,
    pub min_rtt_us: Option<u32>,
    /// Bytes per second; `app_limited` is the kernel's mark on it.
    pub delivery_rate: Option<u64>,
    pub app_limited: Option<bool>,
    pub busy_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    pub reord_seen: Option<u32>,
    pub snd_wnd: Option<u32>,
    pub rcv_wnd: Option<u32>,
}

/// The fields read past the ones every Linux has (up to
/// `tcpi_total_retrans`, 104 bytes): name, offset, size, the Linux release
/// that added it.
pub const FIELDS: [(&str, usize, usize, &str); 13] = [
    ("tcpi_notsent_bytes", 144, 4, "4.6"),
    ("tcpi_min_rtt", 148, 4, "4.6"),
    ("tcpi_delivery_rate", 160, 8, "4.9"),
    ("tcpi_busy_time", 168, 8, "4.10"),
    ("tcpi_rwnd_limited", 176, 8, "4.10"),
    ("tcpi_sndbuf_limited", 184, 8, "4.10"),
    ("tcpi_bytes_sent", 200, 8, "4.19"),
    ("tcpi_bytes_retrans", 208, 8, "4.19"),
    ("tcpi_reord_seen", 220, 4, "4.19"),
    ("tcpi_snd_wnd", 228, 4, "5.4"),
    ("tcpi_rcv_wnd", 232, 4, "6.2"),
    // Not read, there to size the buffer: up to tcpi_total_rto_time.
    ("tcpi_rehash", 236, 4, "6.2"),
    ("tcpi_total_rto_time", 244, 4, "6.7"),
];

/// Every field of [`FIELDS`] up to `tcpi_rcv_wnd` a TCP_INFO of `len`
/// bytes lacks, by name.
pub fn missing_fields(len: u32) -> Vec<String> {
    FIELDS[..11]
        .iter()
        .filter(|(_, off, size, _)| off + size > len as usize)
        .map(|(n, ..)| n.to_string())
        .collect()
}

impl TcpInfo {
    /// Parses the first `len` bytes of a `struct tcp_info`; None when even
    /// the fields every Linux has are not there.
    pub fn parse(b: &[u8]) -> Option<TcpInfo> {
        let len = b.len();
        if len < 104 {
            return None;
        }
        let u32_at = |o: usize| {
            (o + 4 <= len).then(|| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes")))
        };
        let u64_at = |o: usize| {
            (o + 8 <= len).then(|| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes")))
        };
        let must = |o: usize| u32_at(o).expect("within the 104 bytes checked");
        let delivery_rate = u64_at(160);
        Some(TcpInfo {
            rtt_us: must(68),
            rttvar_us: must(72),
            snd_cwnd: must(80),
            total_retrans: must(100),
            len: len as u32,
            snd_mss: must(16),
            unacked: must(24),
            rcv_space: must(96),
            notsent_bytes: u32_at(144),
            min_rtt_us: u32_at(148),
            // Bit 0 of byte 7, beside the delivery rate it qualifies (4.9).
            app_limited: delivery_rate.map(|_| b[7] & 1 == 1),
            delivery_rate,
            busy_us: u64_at(168),
            rwnd_limited_us: u64_at(176),
            sndbuf_limited_us: u64_at(184),
            bytes_sent: u64_at(200),
            bytes_retrans: u64_at(208),
            reord_seen: u32_at(220),
            snd_wnd: u32_at(228),
            rcv_wnd: u32_at(232),
        })
    }
}

/// Reads TCP_INFO from a connected socket (Linux's; None elsewhere).
#[cfg(not(target_os = "linux"))]
pub fn tcp_info<S>(_s: &S) -> Option<TcpInfo> {
    None
}

/// Reads TCP_INFO from a connected socket: as many bytes as the kernel
/// has (a buffer larger than any kernel's struct so far), then parsed.
#[cfg(target_os = "linux")]
pub fn tcp_info<S: std::os::fd::AsRawFd>(s: &S) -> Option<TcpInfo> {
    let mut buf = [0u8; 320];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are valid for the call; the kernel writes at most len bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    TcpInfo::parse(&buf[..(len as usize).min(buf.len())])
}

/// Bytes in a socket's receive queue not read yet (SIOCINQ); None off Linux.
#[cfg(target_os = "linux")]
pub fn rcv_queue<S: std::os::fd::AsRawFd>(s: &S) -> Option<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD (SIOCINQ) writes one int.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) };
    (rc == 0 && n >= 0).then_some(n as u32)
}

/// Bytes in a socket's receive queue not read yet (SIOCINQ); None off Linux.
#[cfg(not(target_os = "linux"))]
pub fn rcv_queue<S>(_s: &S) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct tcp_info of `len` bytes with each field read set to a
    /// value of its own, by offset.
    fn raw(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; 256];
        let put32 =
            |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        let put64 =
            |b: &mut Vec<u8>, o: usize, v: u64| b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
        b[7] = 1;
        for (o, v) in [
            (16, 1448),
            (24, 30),
            (68, 20_000),
            (72, 500),
            (80, 44),
            (96, 65_536),
            (100, 3),
            (144, 7),
            (148, 19_000),
            (220, 2),
            (228, 131_072),
            (232, 98_304),
        ] {
            put32(&mut b, o, v);
        }
        for (o, v) in [
            (160, 5_000_000),
            (168, 900_000),
            (176, 400_000),
            (184, 10_000),
            (200, 1 << 30),
            (208, 4096),
        ] {
            put64(&mut b, o, v);
        }
        b.truncate(len);
        b
    }

    #[test]
    fn reads_the_kernel_struct_by_its_layout() {
        let t = TcpInfo::parse(&raw(240)).unwrap();
        assert_eq!(
            (t.rtt_us, t.rttvar_us, t.snd_cwnd, t.total_retrans),
            (20_000, 500, 44, 3)
        );
        assert_eq!((t.snd_mss, t.unacked, t.rcv_space), (1448, 30, 65_536));
        assert_eq!((t.notsent_bytes, t.min_rtt_us), (Some(7), Some(19_000)));
        assert_eq!(
            (t.delivery_rate, t.app_limited),
            (Some(5_000_000), Some(true))
        );
        assert_eq!(
            (t.busy_us, t.rwnd_limited_us, t.sndbuf_limited_us),
            (Some(900_000), Some(400_000), Some(10_000))
        );
        assert_eq!(
            (t.bytes_sent, t.bytes_retrans, t.reord_seen),
            (Some(1 << 30), Some(4096), Some(2))
        );
        assert_eq!((t.snd_wnd, t.rcv_wnd), (Some(131_072), Some(98_304)));
        assert!(missing_fields(240).is_empty());
    }

    #[test]
    fn a_field_past_what_the_kernel_returned_is_none_never_zero() {
        // 4.9's struct ends after tcpi_delivery_rate (168 bytes).
        let t = TcpInfo::parse(&raw(168)).unwrap();
        assert_eq!(t.delivery_rate, Some(5_000_000));
        assert_eq!(
            (t.busy_us, t.bytes_retrans, t.snd_wnd, t.rcv_wnd),
            (None, None, None, None)
        );
        assert_eq!(
            missing_fields(168),
            [
                "tcpi_busy_time",
                "tcpi_rwnd_limited",
                "tcpi_sndbuf_limited",
                "tcpi_bytes_sent",
                "tcpi_bytes_retrans",
                "tcpi_reord_seen",
                "tcpi_snd_wnd",
                "tcpi_rcv_wnd"
            ]
        );
        // 5.4 to 6.1: everything but tcpi_rcv_wnd.
        let t = TcpInfo::parse(&raw(232)).unwrap();
        assert_eq!((t.snd_wnd, t.rcv_wnd), (Some(131_072), None));
        assert_eq!(missing_fields(232), ["tcpi_rcv_wnd"]);
        // Older than 4.6: the old fields only; shorter than those: nothing.
        let t = TcpInfo::parse(&raw(104)).unwrap();
        assert_eq!(
            (t.min_rtt_us, t.delivery_rate, t.app_limited),
            (None, None, None)
        );
        assert!(TcpInfo::parse(&raw(100)).is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_kernel_returns_a_struct_read_whole() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t = tcp_info(&c).unwrap();
        assert!(t.len >= 104 && t.snd_mss > 0, "{t:?}");
        assert_eq!(rcv_queue(&c), Some(0));
    }
}
