//! What differs between the platforms the agent builds for: Linux (the
//! product: every kind and option), Windows (`x86_64-pc-windows-gnu`) and
//! macOS (checked, not linked here). The Linux engines use Linux directly;
//! this module holds the few portable names the shared code needs (a
//! socket's raw handle, waiting until one is readable or writable) and what
//! a non-Linux agent says when asked for what only Linux has.
//!
//! Off Linux the agent runs the kinds in [`crate::engine::KINDS`] for its
//! platform: `tcp_stream`, `tcp_rr`, `udp_rr`, and `udp_stream` and
//! `latency_under_load` on their portable paths (one datagram per send or
//! receive call where Linux batches them with sendmmsg/recvmmsg, and
//! receive times taken in user space where Linux has the kernel's: their
//! summaries say `timestamps: "user"`). The Unix-socket kinds, `tcp_crr`
//! and `path` are built on Linux system calls (raw ICMP, raw descriptors
//! in the event loop) and are refused before any traffic ([`needs_linux`]);
//! so are the Linux-only options of the kinds it runs ([`LINUX_ONLY`]:
//! busy-poll, CPU pinning, zerocopy, pacing by the kernel, TCP_MAXSEG,
//! SO_RCVLOWAT, congestion control, UDP GSO/GRO, the probe flow beside a
//! stream).

use meshperf_protocol::params::Kind;
use std::io;
use std::time::Duration;

/// The platform, as `std::env::consts::OS` names it ("linux", "windows",
/// "macos"): what refusals name.
pub const OS: &str = std::env::consts::OS;

/// The one line a non-Linux agent answers for a Linux-only kind or option:
/// `unix_stream needs Linux (unix sockets); this agent runs on windows`.
pub fn needs_linux(what: &str, why: &str) -> String {
    format!("{what} needs Linux ({why}); this agent runs on {OS}")
}

/// An `io::Error` of [`needs_linux`], for the helpers that return one.
pub fn unsupported(what: &str, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, needs_linux(what, why))
}

/// The options of the kinds a non-Linux agent runs that only Linux has, by
/// parameter name, with what they need (a kind that does one of them its
/// own portable way is in [`PORTABLE`]).
pub const LINUX_ONLY: &[(&str, &str)] = &[
    ("busy_poll", "busy-polling a non-blocking socket"),
    ("cpus", "CPU pinning"),
    ("server_cpus", "CPU pinning"),
    ("zerocopy", "MSG_ZEROCOPY"),
    ("probe_ms", "the probe flow beside a stream"),
    ("mss", "TCP_MAXSEG"),
    ("rcvlowat", "SO_RCVLOWAT"),
    ("congestion", "choosing the TCP congestion control"),
    ("rate", "kernel pacing, SO_MAX_PACING_RATE"),
    ("payload_file", "--payload-dir's no-symlink open"),
    // Windows takes IP_TOS and marks nothing (DSCP comes from QoS policy).
    ("tos", "IP_TOS and IPV6_TCLASS"),
    ("gso", "UDP GSO and GRO"),
];

/// The options of [`LINUX_ONLY`] a kind does its own way, which runs
/// everywhere: udp_stream's `rate` is its sender's own pacing (not the
/// kernel's, as tcp_stream's is), and latency_under_load's `probe_ms` is
/// its probe flow, timed in user space off Linux.
const PORTABLE: &[(Kind, &str)] = &[
    (Kind::UdpStream, "rate"),
    (Kind::LatencyUnderLoad, "probe_ms"),
];

/// The first Linux-only option a `kind` step's `params` ask for, as the
/// line that refuses it (`zerocopy needs Linux (MSG_ZEROCOPY); this agent
/// runs on windows`). An option at its default (false, null, `rcvlowat` 1,
/// `tos` 0) asks for nothing, and so does `gso` other than `on` (`auto`
/// goes without where the system has none).
pub fn linux_only(kind: Kind, params: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    LINUX_ONLY.iter().find_map(|&(name, why)| {
        if PORTABLE.contains(&(kind, name)) {
            return None;
        }
        let asked = match (name, params.get(name)?) {
            (_, Value::Null | Value::Bool(false)) => false,
            ("rcvlowat", v) => v.as_f64() != Some(1.0),
            ("tos", v) => v.as_f64() != Some(0.0),
            ("gso", v) => v.as_str() == Some("on"),
            _ => true,
        };
        asked.then(|| needs_linux(name, why))
    })
}

#[cfg(unix)]
pub use std::os::fd::{AsFd as AsSock, AsRawFd as AsRawSock, RawFd as RawSock};
#[cfg(windows)]
pub use std::os::windows::io::{
    AsRawSocket as AsRawSock, AsSocket as AsSock, RawSocket as RawSock,
};

/// A socket's raw handle (a descriptor on Unix, a SOCKET on Windows).
pub fn raw<S: AsRawSock + ?Sized>(s: &S) -> RawSock {
    #[cfg(unix)]
    return s.as_raw_fd();
    #[cfg(windows)]
    return s.as_raw_socket();
}

/// Waits until `sock` has something to read (or its peer hung up), at
/// most `wait`; `Duration::ZERO` only looks. Returns whether it has.
pub fn readable(sock: RawSock, wait: Duration) -> bool {
    poll(&mut [pollfd(sock, false)], wait)
}

/// Whether `sock` has room to send now (no waiting).
pub fn writable(sock: RawSock) -> bool {
    poll(&mut [pollfd(sock, true)], Duration::ZERO)
}

/// Waits until one of `socks` has something to read, at most `wait`.
pub fn wait_any(socks: &[RawSock], wait: Duration) -> bool {
    let mut fds: Vec<_> = socks.iter().map(|&s| pollfd(s, false)).collect();
    poll(&mut fds, wait)
}

/// A poll entry for `fd`, waiting to read (or, `out`, to write).
#[cfg(unix)]
fn pollfd(fd: RawSock, out: bool) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: if out { libc::POLLOUT } else { libc::POLLIN },
        revents: 0,
    }
}

/// poll(2).
#[cfg(unix)]
fn poll(fds: &mut [libc::pollfd], wait: Duration) -> bool {
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of pollfd for the length given.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) > 0 }
}

#[cfg(windows)]
fn pollfd(s: RawSock, out: bool) -> windows_sys::Win32::Networking::WinSock::WSAPOLLFD {
    use windows_sys::Win32::Networking::WinSock::{POLLRDNORM, POLLWRNORM, SOCKET, WSAPOLLFD};
    WSAPOLLFD {
        fd: s as SOCKET,
        events: if out { POLLWRNORM } else { POLLRDNORM },
        revents: 0,
    }
}

/// WSAPoll, Windows' poll(2).
#[cfg(windows)]
fn poll(fds: &mut [windows_sys::Win32::Networking::WinSock::WSAPOLLFD], wait: Duration) -> bool {
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `fds` is a valid array of WSAPOLLFD for the length given.
    unsafe {
        windows_sys::Win32::Networking::WinSock::WSAPoll(fds.as_mut_ptr(), fds.len() as u32, ms) > 0
    }
}

/// A socket a mio `Poll` watches while the std socket stays where it is
/// (the data-port accept loop reads its connections as std sockets): on
/// Unix its descriptor (`SourceFd`); on Windows, where mio watches only its
/// own sockets, a clone of it as one, re-armed after each wake-up
/// ([`Watch::rearm`]: mio re-arms a Windows socket only when an operation
/// through it would block, and the reads go through the original).
pub struct Watch {
    #[cfg(unix)]
    fd: RawSock,
    #[cfg(windows)]
    sock: WatchedSock,
    #[cfg(windows)]
    token: Option<(mio::Token, mio::Interest)>,
}

#[cfg(windows)]
enum WatchedSock {
    Stream(mio::net::TcpStream),
    Listener(mio::net::TcpListener),
}

impl Watch {
    pub fn stream(s: &std::net::TcpStream) -> io::Result<Watch> {
        #[cfg(unix)]
        return Ok(Watch { fd: raw(s) });
        #[cfg(windows)]
        return Ok(Watch {
            sock: WatchedSock::Stream(mio::net::TcpStream::from_std(s.try_clone()?)),
            token: None,
        });
    }

    pub fn listener(l: &std::net::TcpListener) -> io::Result<Watch> {
        #[cfg(unix)]
        return Ok(Watch { fd: raw(l) });
        #[cfg(windows)]
        return Ok(Watch {
            sock: WatchedSock::Listener(mio::net::TcpListener::from_std(l.try_clone()?)),
            token: None,
        });
    }

    /// After a wake-up: watch again (nothing to do on Unix).
    pub fn rearm(&mut self, _registry: &mio::Registry) {
        #[cfg(windows)]
        if let Some((t, i)) = self.token {
            let _ = mio::event::Source::reregister(self, _registry, t, i);
        }
    }
}

impl mio::event::Source for Watch {
    fn register(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        #[cfg(unix)]
        return mio::unix::SourceFd(&self.fd).register(registry, token, interests);
        #[cfg(windows)]
        {
            self.token = Some((token, interests));
            match &mut self.sock {
                WatchedSock::Stream(s) => s.register(registry, token, interests),
                WatchedSock::Listener(l) => l.register(registry, token, interests),
            }
        }
    }

    fn reregister(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        #[cfg(unix)]
        return mio::unix::SourceFd(&self.fd).reregister(registry, token, interests);
        #[cfg(windows)]
        {
            self.token = Some((token, interests));
            match &mut self.sock {
                WatchedSock::Stream(s) => s.reregister(registry, token, interests),
                WatchedSock::Listener(l) => l.reregister(registry, token, interests),
            }
        }
    }

    fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        #[cfg(unix)]
        return mio::unix::SourceFd(&self.fd).deregister(registry);
        #[cfg(windows)]
        match &mut self.sock {
            WatchedSock::Stream(s) => s.deregister(registry),
            WatchedSock::Listener(l) => l.deregister(registry),
        }
    }
}

/// IPV6_TCLASS (`tos` on IPv6): socket2 has it on Unix only.
pub fn set_tclass_v6(s: &socket2::SockRef<'_>, tclass: u32) -> io::Result<()> {
    #[cfg(unix)]
    return s.set_tclass_v6(tclass);
    #[cfg(windows)]
    {
        let _ = (s, tclass);
        Err(unsupported("tos on IPv6", "IPV6_TCLASS"))
    }
}

/// The IPV6_TCLASS in use (see [`set_tclass_v6`]).
pub fn tclass_v6(s: &socket2::SockRef<'_>) -> io::Result<u32> {
    #[cfg(unix)]
    return s.tclass_v6();
    #[cfg(windows)]
    {
        let _ = s;
        Err(unsupported("tos on IPv6", "IPV6_TCLASS"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_linux_only_option_is_refused_naming_it_and_the_platform_and_defaults_are_not() {
        // What the page sends for a plain step: defaults, spelled out.
        let plain = json!({"msg_bytes": 65536, "busy_poll": false, "rcvlowat": 1, "flows": 4, "tos": 0,
                           "congestion": null, "cpus": null, "zerocopy": false});
        assert_eq!(linux_only(Kind::TcpStream, &plain), None);
        assert_eq!(
            linux_only(Kind::TcpStream, &json!({"count": 10, "zerocopy": true})).unwrap(),
            format!("zerocopy needs Linux (MSG_ZEROCOPY); this agent runs on {OS}")
        );
        assert!(linux_only(Kind::TcpStream, &json!({"cpus": [0, 1]}))
            .unwrap()
            .starts_with("cpus needs Linux (CPU pinning)"));
        assert!(linux_only(Kind::UdpRr, &json!({"tos": 184}))
            .unwrap()
            .starts_with("tos needs Linux"));
        assert!(linux_only(Kind::TcpStream, &json!({"rcvlowat": 4096}))
            .unwrap()
            .starts_with("rcvlowat needs Linux"));
    }

    #[test]
    fn an_option_a_kind_does_its_own_way_is_not_refused_for_that_kind() {
        // udp_stream paces by `rate` itself; tcp_stream's is the kernel's.
        let rate = json!({"rate": "20M", "gso": "auto"});
        assert_eq!(linux_only(Kind::UdpStream, &rate), None);
        assert!(linux_only(Kind::TcpStream, &rate)
            .unwrap()
            .starts_with("rate needs Linux (kernel pacing"));
        // latency_under_load's probes are its own flow; beside a stream
        // they are not.
        let probe = json!({"probe_ms": 10});
        assert_eq!(linux_only(Kind::LatencyUnderLoad, &probe), None);
        assert!(linux_only(Kind::UdpStream, &probe)
            .unwrap()
            .starts_with("probe_ms needs Linux"));
        // UDP GSO: `on` is refused, `auto` and `off` go without.
        assert_eq!(
            linux_only(Kind::UdpStream, &json!({"gso": "on"})).unwrap(),
            format!("gso needs Linux (UDP GSO and GRO); this agent runs on {OS}")
        );
        assert_eq!(linux_only(Kind::UdpStream, &json!({"gso": "off"})), None);
    }

    #[test]
    fn readable_says_whether_a_socket_has_data_without_waiting() {
        let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(writable(raw(&a)), "an idle UDP socket has room to send");
        assert!(!readable(raw(&a), Duration::ZERO));
        b.send_to(b"x", a.local_addr().unwrap()).unwrap();
        assert!(readable(raw(&a), Duration::from_secs(5)));
        assert!(wait_any(&[raw(&b), raw(&a)], Duration::ZERO));
    }
}
