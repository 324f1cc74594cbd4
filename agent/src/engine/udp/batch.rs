//! Batched datagram I/O for `udp_stream`: `recvmmsg` with SO_TIMESTAMPNS
//! kernel receive timestamps read from each message's control data, and
//! `sendmmsg` of equal-sized datagrams. One system call moves up to `n`
//! datagrams, which is what lets one core keep up with a 1 Gbit/s burst of
//! small packets.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// recvmmsg flag: block for the first datagram only (not in `libc` for gnu).
const MSG_WAITFORONE: libc::c_int = 0x10000;
const CTRL_WORDS: usize = 8;

/// Reusable `recvmmsg` buffers. The raw pointers in `hdrs` point into the
/// heap buffers owned here, which never reallocate after `new`.
pub struct RecvBatch {
    size: usize,
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
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, MSG_WAITFORONE)
    }

    /// Receives what is queued, up to `n` datagrams, without blocking
    /// (`WouldBlock` when nothing is).
    pub fn recv_now(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_DONTWAIT)
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

/// Reusable `sendmmsg` buffers of `n` datagrams of `size` bytes to one
/// destination (`None`: the socket is connected).
pub struct SendBatch {
    size: usize,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    _dest: Option<Box<socket2::SockAddr>>,
}

// SAFETY: the raw pointers only ever point into this struct's own buffers.
unsafe impl Send for SendBatch {}

impl SendBatch {
    pub fn new(n: usize, size: usize, dest: Option<SocketAddr>) -> SendBatch {
        let dest = dest.map(|d| Box::new(socket2::SockAddr::from(d)));
        let mut b = SendBatch {
            size,
            bufs: vec![0; n * size],
            iovs: Vec::with_capacity(n),
            hdrs: Vec::with_capacity(n),
            _dest: None,
        };
        // Random payload behind each datagram's header: nothing for a
        // compressing link to shrink.
        getrandom::fill(&mut b.bufs).expect("the OS random source works");
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
            if let Some(d) = &dest {
                h.msg_hdr.msg_name = d.as_ptr() as *mut libc::c_void;
                h.msg_hdr.msg_namelen = d.len();
            }
            b.hdrs.push(h);
        }
        b._dest = dest;
        b
    }

    /// The payload buffer of message `i`.
    pub fn buf(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.size..(i + 1) * self.size]
    }

    /// Sends messages `0..count`; returns how many the kernel took.
    pub fn send(&mut self, fd: RawFd, count: usize) -> io::Result<usize> {
        let count = count.min(self.hdrs.len());
        loop {
            // SAFETY: hdrs describe valid buffers owned by self.
            let rc = unsafe { libc::sendmmsg(fd, self.hdrs.as_mut_ptr(), count as u32, 0) };
            if rc >= 0 {
                return Ok(rc as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
