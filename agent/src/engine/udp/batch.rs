//! Batched datagram I/O for `udp_stream`: `recvmmsg` with SO_TIMESTAMPNS
//! kernel receive timestamps read from each message's control data, and
//! `sendmmsg` of equal-sized datagrams. One system call moves up to `n`
//! datagrams, which is what lets one core keep up with a 1 Gbit/s burst of
//! small packets.
//!
//! With UDP GSO (`gso`) each message of a `sendmmsg` is a run of datagrams
//! the kernel segments (UDP_SEGMENT set on the socket to the datagram
//! size), and with UDP GRO a message read may hold several datagrams of
//! the segment size its UDP_GRO control message gives ([`segments`]).

use crate::engine::sockopt::set_int;
use socket2::SockRef;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// recvmmsg flag: block for the first datagram only (not in `libc` for gnu).
const MSG_WAITFORONE: libc::c_int = 0x10000;
/// Room for a timestamp (32 bytes) and a UDP_GRO segment size (24).
const CTRL_WORDS: usize = 12;
/// The UDP socket options (linux/udp.h), written out: not in `libc` for
/// every target the agent builds for.
pub const UDP_SEGMENT: libc::c_int = 103;
pub const UDP_GRO: libc::c_int = 104;
/// A GRO read's buffer: the largest coalesced datagram.
pub const GRO_BUF: usize = 65536;

/// Reusable `recvmmsg` buffers. The raw pointers in `hdrs` point into the
/// heap buffers owned here, which never reallocate after `new`.
pub struct RecvBatch {
    size: usize,
    /// Calls that returned datagrams, and the messages they returned.
    pub calls: u64,
    pub messages: u64,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    ctrl: Vec<[u64; CTRL_WORDS]>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers only ever point into this struct's own buffers.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    pub fn new(n: usize, size: usize) -> RecvBatch {
        // SAFETY: all-zero is a valid value of these plain C structs.
        let zero_ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut b = RecvBatch {
            size,
            calls: 0,
            messages: 0,
            bufs: vec![0; n * size],
            iovs: Vec::with_capacity(n),
            names: vec![zero_ss; n],
            ctrl: vec![[0; CTRL_WORDS]; n],
            hdrs: Vec::with_capacity(n),
        };
        for i in 0..n {
            b.iovs.push(libc::iovec {
                iov_base: b.bufs[i * size..].as_mut_ptr().cast(),
                iov_len: size,
            });
        }
        for i in 0..n {
            // SAFETY: zeroed mmsghdr is valid; pointers are set below.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut b.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_name = (&mut b.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_control = b.ctrl[i].as_mut_ptr().cast();
            b.hdrs.push(h);
        }
        b
    }

    /// Receives up to `n` datagrams; blocks (per SO_RCVTIMEO) for the first.
    pub fn recv(&mut self, s: &UdpSocket) -> io::Result<usize> {
        self.recv_flags(s.as_raw_fd(), MSG_WAITFORONE)
    }

    /// Receives what is queued, up to `n` datagrams, without blocking
    /// (`WouldBlock` when nothing is).
    pub fn recv_now(&mut self, s: &UdpSocket) -> io::Result<usize> {
        self.recv_flags(s.as_raw_fd(), libc::MSG_DONTWAIT)
    }

    fn recv_flags(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<usize> {
        for h in &mut self.hdrs {
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            h.msg_hdr.msg_controllen = (CTRL_WORDS * 8) as _;
            h.msg_len = 0;
        }
        loop {
            // SAFETY: hdrs describe valid buffers owned by self.
            let rc = unsafe {
                libc::recvmmsg(
                    fd,
                    self.hdrs.as_mut_ptr(),
                    self.hdrs.len() as u32,
                    flags as _,
                    std::ptr::null_mut(),
                )
            };
            if rc >= 0 {
                if rc > 0 {
                    self.calls += 1;
                    self.messages += rc as u64;
                }
                return Ok(rc as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Message `i` of the last `recv`: payload, source, kernel timestamp.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>, Option<(i64, i64)>) {
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(self.size);
        let data = &self.bufs[i * self.size..i * self.size + len];
        (data, sockaddr(&self.names[i]), timestamp(&h.msg_hdr))
    }

    /// Message `i`'s datagrams: one, or those a coalesced (GRO) read holds.
    pub fn datagrams(&self, i: usize) -> Segments<'_> {
        let h = &self.hdrs[i].msg_hdr;
        let truncated = h.msg_flags & libc::MSG_TRUNC != 0;
        segments(self.get(i).0, gro_size(h), truncated)
    }
}

/// The datagrams of one message read: `data` whole, or with a UDP_GRO
/// segment size `seg` its pieces of `seg` bytes, the last one possibly
/// shorter (the kernel coalesces equal datagrams and at most one shorter
/// one at the end). A message cut short by its buffer (`truncated`,
/// MSG_TRUNC) loses its cut piece: a datagram whose end is missing is not
/// counted as received (it could pass for a shorter one). A message
/// without a segment size is one datagram, as without GRO.
pub fn segments(data: &[u8], seg: Option<usize>, truncated: bool) -> Segments<'_> {
    let Some(seg) = seg.filter(|&s| s > 0) else {
        // One datagram, as without GRO (a longer one than the buffer is
        // read as far as it goes, as before).
        return Segments {
            data,
            seg: data.len().max(1),
        };
    };
    let data = if truncated {
        &data[..data.len() / seg * seg]
    } else {
        data
    };
    Segments { data, seg }
}

/// Iterator over the datagrams of one message ([`segments`]).
pub struct Segments<'a> {
    data: &'a [u8],
    seg: usize,
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a [u8];
    #[inline(always)]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.data.is_empty() {
            return None;
        }
        let n = self.seg.min(self.data.len());
        let (d, rest) = self.data.split_at(n);
        self.data = rest;
        Some(d)
    }
}

fn sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddrV4::new(ip, u16::from_be(a.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(
                SocketAddrV6::new(
                    ip,
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )
                .into(),
            )
        }
        _ => None,
    }
}

/// The segment size of a coalesced read (its UDP_GRO control message).
fn gro_size(m: &libc::msghdr) -> Option<usize> {
    // SAFETY: walking the control data the kernel wrote, with the libc macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(m);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let n: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return usize::try_from(n).ok();
            }
            c = libc::CMSG_NXTHDR(m, c);
        }
    }
    None
}

fn timestamp(m: &libc::msghdr) -> Option<(i64, i64)> {
    // SAFETY: walking the control data the kernel wrote, with the libc macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(m);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return Some((ts.tv_sec as i64, ts.tv_nsec as i64));
            }
            c = libc::CMSG_NXTHDR(m, c);
        }
    }
    None
}

/// Reusable `sendmmsg` buffers of `n` messages of `segs` datagrams each, of
/// `size` bytes, to one destination (`None`: the socket is connected). With
/// `segs` above 1 the socket must have UDP_SEGMENT set to `size` ([`gso`]):
/// a message of several datagrams is then one segmented send.
pub struct SendBatch {
    size: usize,
    segs: usize,
    /// Calls that sent datagrams.
    pub calls: u64,
    /// `sendmmsg` flags ([`SendBatch::dont_wait`]).
    flags: libc::c_int,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    _dest: Option<Box<socket2::SockAddr>>,
}

// SAFETY: the raw pointers only ever point into this struct's own buffers.
unsafe impl Send for SendBatch {}

impl SendBatch {
    pub fn new(n: usize, segs: usize, size: usize, dest: Option<SocketAddr>) -> SendBatch {
        let dest = dest.map(|d| Box::new(socket2::SockAddr::from(d)));
        let segs = segs.max(1);
        let mut b = SendBatch {
            size,
            segs,
            calls: 0,
            flags: 0,
            bufs: vec![0; n * segs * size],
            iovs: Vec::with_capacity(n),
            hdrs: Vec::with_capacity(n),
            _dest: None,
        };
        // Random payload behind each datagram's header: nothing for a
        // compressing link to shrink.
        getrandom::fill(&mut b.bufs).expect("the OS random source works");
        for i in 0..n {
            b.iovs.push(libc::iovec {
                iov_base: b.bufs[i * segs * size..].as_mut_ptr().cast(),
                iov_len: segs * size,
            });
        }
        for i in 0..n {
            // SAFETY: zeroed mmsghdr is valid; pointers are set below.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut b.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            if let Some(d) = &dest {
                h.msg_hdr.msg_name = d.as_ptr() as *mut libc::c_void;
                h.msg_hdr.msg_namelen = d.len();
            }
            b.hdrs.push(h);
        }
        b._dest = dest;
        b
    }

    /// Datagrams one call may send.
    pub fn capacity(&self) -> usize {
        self.hdrs.len() * self.segs
    }

    /// The payload buffer of datagram `i`.
    #[inline(always)]
    pub fn buf(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.size..(i + 1) * self.size]
    }

    /// From now on a send that would wait for room sends nothing
    /// (`WouldBlock`) instead (`MSG_DONTWAIT`): a thread that serves
    /// several flows must not hold up the others.
    pub fn dont_wait(&mut self) {
        self.flags = libc::MSG_DONTWAIT;
    }

    /// Sends datagrams `0..count` in as few messages as their segments
    /// allow; returns how many datagrams the kernel took (whole messages).
    pub fn send(&mut self, s: &UdpSocket, count: usize) -> io::Result<usize> {
        let fd = s.as_raw_fd();
        let count = count.min(self.capacity());
        let msgs = count.div_ceil(self.segs);
        for (i, iov) in self.iovs[..msgs].iter_mut().enumerate() {
            iov.iov_len = (count - i * self.segs).min(self.segs) * self.size;
        }
        loop {
            // SAFETY: hdrs describe valid buffers owned by self.
            let rc =
                unsafe { libc::sendmmsg(fd, self.hdrs.as_mut_ptr(), msgs as u32, self.flags as _) };
            if rc >= 0 {
                if rc > 0 {
                    self.calls += 1;
                }
                return Ok((rc as usize * self.segs).min(count));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Whether a send failed for want of buffer room (ENOBUFS): the datagrams
/// did not leave and may be sent again.
pub fn no_room(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Sets UDP_SEGMENT on `s`: every send longer than `size` is cut by the
/// kernel into datagrams of `size` bytes (0: off). Linux 4.18.
pub fn set_gso(s: &std::net::UdpSocket, size: usize) -> io::Result<()> {
    let size = libc::c_int::try_from(size).map_err(|_| io::ErrorKind::InvalidInput)?;
    set_int(&SockRef::from(s), libc::SOL_UDP, UDP_SEGMENT, size)
}

/// Turns UDP_GRO on for `s`: the kernel may hand over several datagrams
/// of one flow as one message, with their size in a control message.
/// Linux 5.0.
pub fn set_gro(s: &std::net::UdpSocket) -> io::Result<()> {
    set_int(&SockRef::from(s), libc::SOL_UDP, UDP_GRO, 1)
}

/// Whether this kernel has the UDP offloads a side will use (`send`: GSO,
/// `receive`: GRO), tried on a socket of its own: the error of the first
/// it refuses, with the option's name.
pub fn offloads(send: bool, receive: bool) -> Result<(), String> {
    // Unbound: the options need no address (a namespace whose loopback
    // is down has none to bind).
    let open = |d| socket2::Socket::new(d, socket2::Type::DGRAM, Some(socket2::Protocol::UDP));
    let s: std::net::UdpSocket = open(socket2::Domain::IPV4)
        .or_else(|_| open(socket2::Domain::IPV6))
        .map_err(|e| format!("cannot open a UDP socket to try it: {e}"))?
        .into();
    if send {
        set_gso(&s, 1400).map_err(|e| format!("no UDP GSO (UDP_SEGMENT: {e})"))?;
    }
    if receive {
        set_gro(&s).map_err(|e| format!("no UDP GRO (UDP_GRO: {e})"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(data: &[u8], seg: Option<usize>, truncated: bool) -> Vec<usize> {
        segments(data, seg, truncated).map(<[u8]>::len).collect()
    }

    #[test]
    fn a_gro_read_splits_at_its_segment_size_and_keeps_a_short_last_one() {
        let data = vec![7u8; 1400 * 3 + 600];
        assert_eq!(split(&data, Some(1400), false), [1400, 1400, 1400, 600]);
        assert_eq!(split(&data[..2800], Some(1400), false), [1400, 1400]);
        // One datagram of the segment size or less: itself.
        assert_eq!(split(&data[..64], Some(64), false), [64]);
        assert_eq!(split(&data[..40], Some(64), false), [40]);
        // Without a segment size (no GRO, or a read the kernel did not
        // coalesce): the message is one datagram, whatever its length.
        assert_eq!(split(&data, None, false), [4800]);
        assert_eq!(split(&data, Some(0), false), [4800]);
        assert_eq!(split(&data[..0], Some(64), false), Vec::<usize>::new());
        // The pieces are the bytes in order.
        let seq: Vec<u8> = (0..=255).collect();
        let parts: Vec<&[u8]> = segments(&seq, Some(100), false).collect();
        assert_eq!(parts.concat(), seq);
        assert_eq!(parts[2], &seq[200..]);
    }

    #[test]
    fn a_truncated_gro_read_drops_only_its_cut_datagram() {
        // A buffer that held 2.5 datagrams of a longer coalesced read.
        let data = vec![0u8; 1000 * 2 + 500];
        assert_eq!(split(&data, Some(1000), true), [1000, 1000]);
        // Cut on a boundary: every piece read is whole.
        assert_eq!(split(&data[..2000], Some(1000), true), [1000, 1000]);
        // Cut within the first: nothing whole.
        assert_eq!(split(&data[..999], Some(1000), true), Vec::<usize>::new());
        // A truncated read without GRO is read as far as it goes, as before.
        assert_eq!(split(&data, None, true), [2500]);
    }

    /// The kernel itself: 300 datagrams of 64 bytes sent in segmented
    /// messages (UDP_SEGMENT) and read with UDP_GRO come out as 300
    /// datagrams in order, in fewer calls than datagrams, with a short
    /// last message in each direction.
    #[test]
    fn gso_sends_and_gro_reads_move_every_datagram_over_loopback() {
        if offloads(true, true).is_err() {
            eprintln!("this kernel has no UDP GSO or GRO: nothing to test");
            return;
        }
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        set_gro(&rx).unwrap();
        set_int(
            &SockRef::from(&rx),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            4 << 20,
        )
        .unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let size = 64;
        set_gso(&tx, size).unwrap();
        let mut out = SendBatch::new(4, 64, size, None);
        assert_eq!(out.capacity(), 256);
        let total = 300u32;
        let mut sent = 0u32;
        while sent < total {
            let n = (total - sent).min(out.capacity() as u32) as usize;
            for i in 0..n {
                out.buf(i)[..4].copy_from_slice(&(sent + i as u32).to_le_bytes());
            }
            assert_eq!(out.send(&tx, n).unwrap(), n);
            sent += n as u32;
        }
        assert_eq!(out.calls, 2, "256 then 44 datagrams");
        let mut inb = RecvBatch::new(8, GRO_BUF);
        let mut got = Vec::new();
        while got.len() < total as usize {
            let n = inb.recv(&rx).unwrap();
            for i in 0..n {
                for d in inb.datagrams(i) {
                    assert_eq!(d.len(), size);
                    got.push(u32::from_le_bytes(d[..4].try_into().unwrap()));
                }
            }
        }
        assert_eq!(got, (0..total).collect::<Vec<_>>());
        assert!(
            inb.messages < total as u64,
            "{} messages for {total} datagrams: nothing coalesced",
            inb.messages
        );
    }
}
