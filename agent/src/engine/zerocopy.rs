//! Zero-copy sends (`tcp_stream` `zerocopy`, iperf3 `-Z`): Linux
//! MSG_ZEROCOPY. With SO_ZEROCOPY on a TCP socket, `send(..., MSG_ZEROCOPY)`
//! pins the payload's pages and the NIC reads them instead of a copy in the
//! socket buffer; the kernel says when it no longer needs them by a
//! notification on the socket's error queue (`recvmsg(MSG_ERRQUEUE)`, a
//! `sock_extended_err` of origin `SO_EE_ORIGIN_ZEROCOPY` covering the send
//! ids `ee_info..=ee_data`), which also wakes a poller with EPOLLERR.
//!
//! Each send call that queued bytes takes the next id of the socket's 32-bit
//! counter, from 0 (a call that fails with EAGAIN or ENOBUFS takes none);
//! the kernel may merge adjacent ranges into one notification and, rarely
//! (retransmits, teardown), report them out of order. [`Ledger`] keeps the
//! count of sends outstanding and of those completed zero-copy or copied:
//! the kernel copies anyway where it must (`SO_EE_CODE_ZEROCOPY_COPIED`:
//! always for data delivered to a local socket, loopback included, and on a
//! device without scatter-gather) and says so; a merged range carries the
//! first send's flag.
//!
//! The payload buffer must stay as it is while any send that used it is
//! outstanding: the bulk workers write one buffer that never changes and
//! wait for every completion before a stream ends. A stream that ends
//! otherwise (cancelled, failed) with sends still outstanding is aborted
//! (SO_LINGER 0: the kernel drops what it queued) and its buffer freed:
//! buffers are mappings of their own ([`super::buf::PageBuf`]), so the
//! pages a send still holds stay the kernel's until it lets them go and
//! are never the next allocation's, and the kernel never sends memory the
//! agent has used since (docs/security.md). Nothing is kept back: a
//! cancelled 64 MiB test kept its payload for good before (issue 40).

use super::error::Refusal;
#[cfg(target_os = "linux")]
use super::sockopt::set_int;
#[cfg(target_os = "linux")]
use meshperf_protocol::msg::ErrorCode;
#[cfg(target_os = "linux")]
use socket2::SockRef;
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, AsRawFd, RawFd};

/// Off Linux there is no MSG_ZEROCOPY: `zerocopy` is refused before any
/// traffic ([`crate::platform::linux_only`]) and these are never reached.
#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use super::{Ledger, Refusal};
    use crate::platform::{needs_linux, unsupported, RawSock};
    use meshperf_protocol::msg::ErrorCode;
    use std::io;

    pub fn enable<S>(_s: &S) -> io::Result<()> {
        Err(unsupported("zerocopy", "MSG_ZEROCOPY"))
    }

    pub fn check_tcp(_ipv6: bool) -> Result<(), Refusal> {
        Err((
            ErrorCode::BadParams,
            needs_linux("zerocopy", "MSG_ZEROCOPY"),
        ))
    }

    pub fn send<S>(_s: &S, _buf: &[u8]) -> io::Result<usize> {
        Err(unsupported("zerocopy", "MSG_ZEROCOPY"))
    }

    pub fn reap(_fd: RawSock, _ledger: &mut Ledger) -> io::Result<u64> {
        Ok(0)
    }

    pub fn wait(_fd: RawSock, _ms: i32) {}
}
#[cfg(not(target_os = "linux"))]
pub use elsewhere::{check_tcp, enable, reap, send, wait};

#[cfg(target_os = "linux")]
/// SO_ZEROCOPY (asm-generic/socket.h; libc has MSG_ZEROCOPY only).
const SO_ZEROCOPY: libc::c_int = 60;
#[cfg(target_os = "linux")]
/// `sock_extended_err.ee_origin` of a zero-copy completion (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
#[cfg(target_os = "linux")]
/// `ee_code` bit: the kernel copied the data after all.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

#[cfg(target_os = "linux")]
/// Turns SO_ZEROCOPY on; an error is the kernel's refusal (ENOPROTOOPT
/// before Linux 4.14, EOPNOTSUPP on a socket type without it).
pub fn enable(s: &impl AsFd) -> io::Result<()> {
    set_int(&SockRef::from(s), libc::SOL_SOCKET, SO_ZEROCOPY, 1)
}

/// The one line a refused `zerocopy` gets: `what` is the socket
/// (`a TCP socket`, `a Unix socket`).
pub fn refused(what: &str, e: &io::Error) -> String {
    format!(
        "zerocopy: the kernel refuses SO_ZEROCOPY on {what} ({e}); MSG_ZEROCOPY needs Linux 4.14 or later and a TCP socket: run without zerocopy"
    )
}

#[cfg(target_os = "linux")]
/// Before a test is accepted: whether this host's kernel takes SO_ZEROCOPY
/// on a TCP socket (of `ipv6`'s family), so a refusal comes before any
/// connection; the data sockets are enabled (and checked again) later.
pub fn check_tcp(ipv6: bool) -> Result<(), Refusal> {
    use socket2::{Domain, Protocol, Socket, Type};
    let domain = if ipv6 { Domain::IPV6 } else { Domain::IPV4 };
    let sock = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| (ErrorCode::Io, format!("cannot open a TCP socket: {e}")))?;
    enable(&sock).map_err(|e| (ErrorCode::BadParams, refused("a TCP socket", &e)))
}

#[cfg(target_os = "linux")]
/// Sends `buf` with MSG_ZEROCOPY (and MSG_NOSIGNAL, as std's writes).
pub fn send(s: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    let flags = libc::MSG_ZEROCOPY | libc::MSG_NOSIGNAL;
    // SAFETY: buf is valid for buf.len() bytes; the caller keeps it unchanged
    // until the send's completion (see the module docs).
    let n = unsafe { libc::send(s.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Zero-copy sends of one socket (or summed over several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Send calls made with MSG_ZEROCOPY that queued bytes.
    pub sends: u64,
    /// Completed with the payload's pages sent as they were.
    pub zero_copied: u64,
    /// Completed, but the kernel copied the data.
    pub copied: u64,
    /// Send calls the kernel refused for want of option memory (ENOBUFS),
    /// made again after reading completions.
    pub enobufs: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.sends += o.sends;
        self.zero_copied += o.zero_copied;
        self.copied += o.copied;
        self.enobufs += o.enobufs;
    }
}

/// The sends of one socket and their completions.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The id the next send takes (the kernel's counter).
    next: u32,
    outstanding: u64,
    counts: Counts,
}

impl Ledger {
    /// A ledger whose next send takes `id` (a fresh socket: 0).
    pub fn starting_at(id: u32) -> Ledger {
        Ledger {
            next: id,
            ..Default::default()
        }
    }

    /// A send that queued bytes took the next id.
    pub fn sent(&mut self) {
        self.next = self.next.wrapping_add(1);
        self.outstanding += 1;
        self.counts.sends += 1;
    }

    /// The kernel completed the sends `lo..=hi` (wrapping); returns how many.
    /// A range that is not of sends made and outstanding is an error.
    pub fn complete(&mut self, lo: u32, hi: u32, copied: bool) -> Result<u64, String> {
        let n = hi.wrapping_sub(lo) as u64 + 1;
        // How far back from the next id the range starts: it must start at
        // an id already taken (within the sends made) and end before `next`.
        let back = self.next.wrapping_sub(lo) as u64;
        let made = self.counts.sends.min(1 << 32);
        if back == 0 || back > made || n > back || n > self.outstanding {
            return Err(format!(
                "zerocopy: the kernel completed sends {lo}..={hi}, not all outstanding (next {}, {} outstanding)",
                self.next, self.outstanding
            ));
        }
        self.outstanding -= n;
        if copied {
            self.counts.copied += n;
        } else {
            self.counts.zero_copied += n;
        }
        Ok(n)
    }

    /// A send was refused with ENOBUFS (to be made again).
    pub fn refused(&mut self) {
        self.counts.enobufs += 1;
    }

    /// Sends not completed yet.
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }
}

#[cfg(target_os = "linux")]
/// Reads every notification queued on `fd`'s error queue, without waiting,
/// into `ledger`; returns how many sends they completed.
pub fn reap(fd: RawFd, ledger: &mut Ledger) -> io::Result<u64> {
    let mut done = 0;
    loop {
        // u64s: cmsghdr alignment. One zero-copy notification is a cmsghdr
        // and a 16-byte sock_extended_err; room for an offender address too.
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain old data; all-zero is a valid empty one.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at a control buffer of msg_controllen bytes and
        // no data buffers; the call does not keep either.
        let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(done),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
        // SAFETY: msg was filled by recvmsg; CMSG_* walk within msg_controllen.
        let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cm.is_null() {
            // SAFETY: cm is a header within the control buffer.
            let h = unsafe { &*cm };
            let ours = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
            if ours {
                // SAFETY: an IP(V6)_RECVERR message's data is a sock_extended_err.
                let ee: libc::sock_extended_err =
                    unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast()) };
                if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY && ee.ee_errno == 0 {
                    let copied = ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0;
                    done += ledger
                        .complete(ee.ee_info, ee.ee_data, copied)
                        .map_err(io::Error::other)?;
                }
            }
            // SAFETY: as above.
            cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
        }
    }
}

#[cfg(target_os = "linux")]
/// Waits up to `ms` for a notification on `fd`'s error queue (POLLERR,
/// which poll reports whatever it was asked for).
pub fn wait(fd: RawFd, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_complete_the_sends_made_in_and_out_of_order() {
        let mut l = Ledger::default();
        for _ in 0..10 {
            l.sent();
        }
        assert_eq!(l.complete(5, 9, false), Ok(5));
        assert_eq!(l.complete(0, 4, true), Ok(5));
        assert_eq!(l.outstanding(), 0);
        let c = l.counts();
        assert_eq!((c.sends, c.zero_copied, c.copied), (10, 5, 5));
        // Nothing outstanding: a repeat, or an id not taken yet, is refused.
        assert!(l.complete(9, 9, false).is_err());
        assert!(l.complete(10, 10, false).is_err());
        l.sent();
        assert!(l.complete(10, 11, false).is_err(), "11 was never sent");
        assert_eq!(l.complete(10, 10, false), Ok(1));
    }

    #[test]
    fn the_32_bit_counter_wraps() {
        let mut l = Ledger::starting_at(u32::MAX - 2);
        for _ in 0..6 {
            l.sent(); // ids MAX-2, MAX-1, MAX, 0, 1, 2
        }
        assert_eq!(l.complete(u32::MAX - 2, 0, false), Ok(4));
        assert_eq!(l.outstanding(), 2);
        assert!(l.complete(u32::MAX, 1, false).is_err(), "MAX is done");
        assert!(l.complete(1, 3, false).is_err(), "3 was never sent");
        assert_eq!(l.complete(1, 2, true), Ok(2));
        assert_eq!(l.outstanding(), 0);
        let c = l.counts();
        assert_eq!((c.sends, c.zero_copied, c.copied), (6, 4, 2));
    }

    #[test]
    fn a_range_before_the_first_send_is_refused() {
        let mut l = Ledger::starting_at(100);
        l.sent();
        l.sent();
        assert!(
            l.complete(99, 100, false).is_err(),
            "99 is not this socket's"
        );
        assert_eq!(l.complete(100, 101, false), Ok(2));
    }

    /// A real loopback connection: every send's completion comes back, and
    /// the kernel says it copied (delivery to a local socket copies).
    #[test]
    fn loopback_sends_complete_copied() {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        enable(&a).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got.len()
        });
        let buf = crate::engine::buf::PageBuf::random(65536);
        let mut ledger = Ledger::default();
        let mut sent = 0;
        while sent < 64 * 65536 {
            match send(&a, &buf) {
                Ok(n) => {
                    sent += n;
                    ledger.sent();
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    reap(a.as_raw_fd(), &mut ledger).unwrap();
                }
                Err(e) => panic!("send: {e}"),
            }
        }
        a.shutdown(std::net::Shutdown::Write).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ledger.outstanding() > 0 && std::time::Instant::now() < until {
            wait(a.as_raw_fd(), 50);
            reap(a.as_raw_fd(), &mut ledger).unwrap();
        }
        assert_eq!(reader.join().unwrap(), sent);
        let c = ledger.counts();
        assert_eq!(ledger.outstanding(), 0, "{c:?}");
        assert_eq!(c.zero_copied + c.copied, c.sends);
        assert!(c.copied > 0, "loopback delivery copies: {c:?}");
    }

    /// The payload is freed while the kernel still holds sends of it (the
    /// peer reads nothing yet: they wait in the sending socket's queue),
    /// and new buffers of the same size are written with other bytes (a
    /// token, a key) at once. What the peer then reads is the payload and
    /// only that: the queued sends' pages stayed the kernel's. (A buffer
    /// handed back to the allocator instead is its next user's: a 64 KiB
    /// one came back as the next 64 KiB buffer, and its bytes went out.)
    #[test]
    fn a_buffer_freed_with_sends_queued_never_sends_later_bytes() {
        use std::io::Read;
        const LEN: usize = 65536;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        enable(&a).unwrap();
        a.set_nonblocking(true).unwrap();
        let mut payload = crate::engine::buf::PageBuf::new(LEN, 0xaa);
        payload[0] = 0xab; // touched: resident
        let mut ledger = Ledger::default();
        // Byte i of the stream is byte i % LEN of the payload.
        let (mut sent, mut off) = (0usize, 0usize);
        loop {
            match send(&a, &payload[off..]) {
                Ok(n) => {
                    sent += n;
                    off = (off + n) % LEN;
                    ledger.sent();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // Option memory full: the queue is as long as it gets.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    if reap(a.as_raw_fd(), &mut ledger).unwrap() == 0 {
                        break;
                    }
                }
                Err(e) => panic!("send: {e}"),
            }
        }
        reap(a.as_raw_fd(), &mut ledger).unwrap();
        assert!(
            ledger.outstanding() > 0,
            "sends still queued when the buffer is freed: {ledger:?}"
        );
        drop(payload);
        let others: Vec<_> = (0..16)
            .map(|_| crate::engine::buf::PageBuf::new(LEN, 0x55))
            .collect();
        a.shutdown(std::net::Shutdown::Write).unwrap();
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), sent);
        let foreign = got
            .iter()
            .enumerate()
            .filter(|&(i, &x)| x != if i % LEN == 0 { 0xab } else { 0xaa })
            .count();
        assert_eq!(
            foreign, 0,
            "{foreign} of {sent} bytes were not the payload's"
        );
        drop(others);
    }

    #[test]
    fn a_unix_socket_is_refused_by_the_kernel() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = enable(&a).unwrap_err();
        assert!(refused("a Unix socket", &e).starts_with("zerocopy: "));
    }
}
