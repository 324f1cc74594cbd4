//! One probe at a time on the test's UDP socket, as tracepath sends them:
//! the TTL / hop limit and the TOS / traffic class set per datagram, DF set
//! whatever the kernel has learnt of the path (`IP_PMTUDISC_PROBE`), and
//! the answer read either from the peer agent (its echo, saying what TOS
//! and length arrived) or from the socket's error queue (`IP_RECVERR`: the
//! ICMP time-exceeded, unreachable or fragmentation-needed a hop sent back,
//! with that hop's address). No raw socket, no privilege.
//!
//! An ICMP error is a hop's answer only when its quote shows the probe it
//! answers: the meshperf header with this test's token and the probe's
//! sequence. One quoting less (the 8 bytes of UDP header RFC 792 asks for)
//! or another datagram is counted as unverified, with its sender, and
//! never taken for an answer: anyone who knows the flow's addresses and
//! ports can send ICMP quoting them, and before this a made-up router
//! became a hop, an `unreachable` end or a path MTU (issue 40). The error
//! such an ICMP leaves on the socket's next send or receive is passed over
//! the same way (the send made again).
//!
//! Echo layout: the meshperf header ([`Hdr`], kind [`PROBE`] out,
//! [`ECHO`] back, sequence and send time kept), then in the echo the TOS
//! byte that arrived (byte 28) and the datagram's length (bytes 29 to 32,
//! little-endian). Echoes are small whatever the probe's size, so a path
//! MTU search one way never depends on the other way's MTU.

use crate::engine::pace::RateCap;
use crate::engine::udp::{self, Hdr};
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// A trace probe (header kind).
pub const PROBE: u8 = b'T';
/// The peer agent's echo of a probe.
pub const ECHO: u8 = b't';
/// A probe's size in the trace and the mark check: the header, room for
/// the echo's fields, and padding to a round 64 bytes of payload.
pub const SMALL: usize = 64;
const ECHO_LEN: usize = 40;
/// The largest UDP payload an IPv4 datagram carries (65535 - 20 - 8).
const MAX_PAYLOAD_V4: usize = 65507;
/// And an IPv6 one without jumbograms (65535 - 8).
const MAX_PAYLOAD_V6: usize = 65527;

const SO_EE_ORIGIN_LOCAL: u8 = 1;
const SO_EE_ORIGIN_ICMP: u8 = 2;
const SO_EE_ORIGIN_ICMP6: u8 = 3;

/// What came back for one probe.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The peer agent echoed it: what TOS and length arrived.
    Echo { rtt: Duration, tos: u8, len: u32 },
    /// A hop answered with ICMP: `kind` says what, `mtu` the next-hop MTU
    /// of a fragmentation-needed / packet-too-big, `tos` the ICMP's own TOS
    /// byte (IPv4: a Linux router copies bits 1 to 4 of the quoted one).
    Icmp {
        rtt: Duration,
        from: IpAddr,
        kind: IcmpKind,
        mtu: Option<u32>,
        tos: Option<u8>,
    },
    /// This host refused to send it: larger than the interface's MTU (given).
    TooBig { mtu: u32 },
    /// Nothing within the wait.
    Silent,
}

/// What an ICMP error said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpKind {
    TimeExceeded,
    FragNeeded,
    /// Destination unreachable, with its code's words.
    Unreachable(&'static str),
    Other,
}

/// The test socket set up for probing, and the probe sequence.
pub struct Prober {
    pub sock: UdpSocket,
    pub ipv6: bool,
    pub token: u64,
    seq: u64,
    t0: Instant,
    ttl: i32,
    tos: i32,
    buf: Vec<u8>,
    /// Datagrams sent in all.
    pub sent: u64,
    /// The agent's `--max-udp-rate` over every datagram this side sends
    /// (probes and echoes), if its operator set one.
    pub cap: Option<RateCap>,
    /// ICMP errors whose quote did not show a probe of this test, in all.
    pub unverified: u64,
    /// Those since the last [`Prober::take_unverified`]: how many, and
    /// their first few senders.
    fresh: (u32, Vec<IpAddr>),
}

fn setopt(fd: RawFd, level: i32, name: i32, v: i32) -> io::Result<()> {
    // SAFETY: a plain int option on a socket we own.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const i32 as *const libc::c_void,
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getopt(fd: RawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut v: i32 = 0;
    let mut len = size_of::<i32>() as libc::socklen_t;
    // SAFETY: v and len are valid for writing.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            &mut v as *mut i32 as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Prober {
    /// `sock` must be connected to the peer agent.
    pub fn new(sock: UdpSocket, token: u64) -> io::Result<Prober> {
        let ipv6 = sock.peer_addr()?.is_ipv6();
        let fd = sock.as_raw_fd();
        if ipv6 {
            setopt(fd, libc::SOL_IPV6, libc::IPV6_RECVERR, 1)?;
            setopt(fd, libc::SOL_IPV6, libc::IPV6_RECVTCLASS, 1)?;
            setopt(
                fd,
                libc::SOL_IPV6,
                libc::IPV6_MTU_DISCOVER,
                libc::IPV6_PMTUDISC_PROBE,
            )?;
        } else {
            setopt(fd, libc::SOL_IP, libc::IP_RECVERR, 1)?;
            setopt(fd, libc::SOL_IP, libc::IP_RECVTOS, 1)?;
            setopt(
                fd,
                libc::SOL_IP,
                libc::IP_MTU_DISCOVER,
                libc::IP_PMTUDISC_PROBE,
            )?;
        }
        sock.set_nonblocking(true)?;
        let mut p = Prober {
            sock,
            ipv6,
            token,
            seq: 0,
            t0: Instant::now(),
            ttl: 0,
            tos: -2,
            buf: vec![0; 65536],
            sent: 0,
            cap: None,
            unverified: 0,
            fresh: (0, Vec::new()),
        };
        p.set_ttl(None)?;
        p.set_tos(0)?;
        Ok(p)
    }

    /// The unverified ICMP errors since the last call: how many, and
    /// their first few senders (distinct).
    pub fn take_unverified(&mut self) -> (u32, Vec<IpAddr>) {
        std::mem::take(&mut self.fresh)
    }

    fn unverified_from(&mut self, from: Option<IpAddr>) {
        use meshperf_protocol::summary::UNVERIFIED_FROM_MAX;
        self.unverified += 1;
        self.fresh.0 = self.fresh.0.saturating_add(1);
        let who = &mut self.fresh.1;
        if let Some(a) = from.filter(|a| !who.contains(a)) {
            if who.len() < UNVERIFIED_FROM_MAX {
                who.push(a);
            }
        }
    }

    /// The TTL / hop limit of the next datagrams; `None`: the default.
    pub fn set_ttl(&mut self, ttl: Option<u8>) -> io::Result<()> {
        let v = ttl.map_or(-1, i32::from);
        if v != self.ttl {
            let fd = self.sock.as_raw_fd();
            if self.ipv6 {
                setopt(fd, libc::SOL_IPV6, libc::IPV6_UNICAST_HOPS, v)?;
            } else {
                setopt(fd, libc::SOL_IP, libc::IP_TTL, v)?;
            }
            self.ttl = v;
        }
        Ok(())
    }

    /// The TOS / traffic class byte of the next datagrams.
    pub fn set_tos(&mut self, tos: u8) -> io::Result<()> {
        if i32::from(tos) != self.tos {
            let fd = self.sock.as_raw_fd();
            if self.ipv6 {
                setopt(fd, libc::SOL_IPV6, libc::IPV6_TCLASS, tos.into())?;
            } else {
                setopt(fd, libc::SOL_IP, libc::IP_TOS, tos.into())?;
            }
            self.tos = tos.into();
        }
        Ok(())
    }

    /// The MTU of the route to the peer as the kernel knows it (`IP_MTU`).
    pub fn route_mtu(&self) -> Option<u32> {
        let fd = self.sock.as_raw_fd();
        let r = if self.ipv6 {
            getopt(fd, libc::SOL_IPV6, libc::IPV6_MTU)
        } else {
            getopt(fd, libc::SOL_IP, libc::IP_MTU)
        };
        r.ok().map(|v| v as u32)
    }

    /// IP and UDP header bytes on a datagram of this family.
    pub fn headers(&self) -> u32 {
        if self.ipv6 {
            48
        } else {
            28
        }
    }

    /// The largest datagram (IP header included) this family carries.
    pub fn max_datagram(&self) -> u32 {
        let max = if self.ipv6 {
            MAX_PAYLOAD_V6
        } else {
            MAX_PAYLOAD_V4
        };
        max as u32 + self.headers()
    }

    /// Sends one probe of `datagram` bytes (IP header included) and waits
    /// up to `wait` for its answer; meanwhile echoes the peer's probes.
    pub fn probe(
        &mut self,
        ttl: Option<u8>,
        tos: u8,
        datagram: u32,
        wait: Duration,
    ) -> io::Result<Answer> {
        self.set_ttl(ttl)?;
        self.set_tos(tos)?;
        // What came before (a late answer to an earlier probe) is not this one's.
        self.drain_errors();
        let payload = (datagram.saturating_sub(self.headers()) as usize).max(28);
        self.seq += 1;
        let seq = self.seq;
        let sent_at = Instant::now();
        let mut out = vec![0u8; payload];
        Hdr {
            kind: PROBE,
            token: self.token,
            seq,
            t_ns: sent_at.duration_since(self.t0).as_nanos() as u64,
        }
        .write(&mut out);
        self.sent += 1;
        self.take(out.len());
        // A send fails with the error an ICMP that came before left (a
        // late or unverified one): it then sent nothing, so it is made
        // again; one failing for itself fails every time.
        let mut tries = 0;
        while let Err(e) = self.sock.send(&out) {
            let too_big = e.raw_os_error() == Some(libc::EMSGSIZE);
            if too_big {
                // This host refused it (the kernel says so in the error
                // queue), or an ICMP's fragmentation needed did.
                if let Some(mtu) = self.local_mtu_error() {
                    return Ok(Answer::TooBig { mtu });
                }
            } else {
                self.drain_errors();
            }
            if !is_soft(&e) || tries >= udp::dgram::ICMP_TRIES {
                if too_big {
                    let mtu = self.route_mtu().unwrap_or(0);
                    return Ok(Answer::TooBig { mtu });
                }
                return Err(e);
            }
            tries += 1;
        }
        let end = sent_at + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Answer::Silent);
            }
            let ev = poll(self.sock.as_raw_fd(), left)?;
            if ev & libc::POLLERR != 0 {
                while let Some(e) = self.read_error()? {
                    let rtt = sent_at.elapsed();
                    match e.origin {
                        SO_EE_ORIGIN_LOCAL
                            if e.errno == libc::EMSGSIZE && e.seq.map_or(true, |s| s == seq) =>
                        {
                            return Ok(Answer::TooBig { mtu: e.info })
                        }
                        // Only an ICMP quoting this very probe answers it
                        // (the rest: a late answer to an earlier probe, or
                        // unverified, counted by `read_error`).
                        SO_EE_ORIGIN_ICMP | SO_EE_ORIGIN_ICMP6 if e.seq == Some(seq) => {
                            let Some(from) = e.from else { continue };
                            let kind = icmp_kind(e.origin, e.ty, e.code);
                            let mtu = (kind == IcmpKind::FragNeeded).then_some(e.info);
                            return Ok(Answer::Icmp {
                                rtt,
                                from,
                                kind,
                                mtu,
                                tos: e.tos,
                            });
                        }
                        _ => {}
                    }
                }
            }
            if ev & libc::POLLIN != 0 {
                while let Some((n, tos)) = self.recv()? {
                    let Some(h) = Hdr::read(&self.buf[..n]) else {
                        continue;
                    };
                    if h.is(PROBE, self.token) {
                        self.echo(h, tos, n)?;
                    } else if h.is(ECHO, self.token) && h.seq == seq && n >= 33 {
                        let len = u32::from_le_bytes(self.buf[29..33].try_into().unwrap());
                        return Ok(Answer::Echo {
                            rtt: sent_at.elapsed(),
                            tos: self.buf[28],
                            len,
                        });
                    }
                }
            }
        }
    }

    /// Echoes the peer's probes for up to `wait` (the answering side's
    /// loop, between looks at the control line).
    pub fn answer(&mut self, wait: Duration) -> io::Result<u64> {
        self.set_ttl(None)?;
        self.set_tos(0)?;
        let mut echoed = 0;
        let ev = poll(self.sock.as_raw_fd(), wait)?;
        if ev & libc::POLLERR != 0 {
            self.drain_errors();
        }
        if ev & libc::POLLIN != 0 {
            while let Some((n, tos)) = self.recv()? {
                if let Some(h) = Hdr::read(&self.buf[..n]).filter(|h| h.is(PROBE, self.token)) {
                    self.echo(h, tos, n)?;
                    echoed += 1;
                }
            }
        }
        Ok(echoed)
    }

    fn echo(&mut self, h: Hdr, tos: Option<u8>, n: usize) -> io::Result<()> {
        let (ttl, ptos) = (self.ttl, self.tos);
        // The echo leaves with the defaults, whatever this side probes with.
        self.set_ttl(None)?;
        self.set_tos(0)?;
        let mut out = [0u8; ECHO_LEN];
        Hdr { kind: ECHO, ..h }.write(&mut out);
        out[28] = tos.unwrap_or(0);
        out[29..33].copy_from_slice(&(n as u32 + self.headers()).to_le_bytes());
        self.take(out.len());
        // Past the errors ICMP left (each also in the error queue, counted there).
        let r = udp::send_past_icmp(&mut 0, || self.sock.send(&out));
        self.set_ttl(u8::try_from(ttl).ok())?;
        if let Ok(t) = u8::try_from(ptos) {
            self.set_tos(t)?;
        }
        match r {
            Ok(_) => Ok(()),
            Err(e) if is_soft(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Waits until `payload` more bytes (and their headers) may leave
    /// under the agent's UDP rate cap.
    fn take(&mut self, payload: usize) {
        let h = self.headers() as usize;
        if let Some(c) = &mut self.cap {
            c.take(payload + h);
        }
    }

    /// How long sends waited for the rate cap, us.
    pub fn capped_us(&self) -> u64 {
        self.cap.as_ref().map_or(0, |c| c.waited.as_micros() as u64)
    }

    /// One datagram with the TOS it arrived with; `None` once none is left.
    fn recv(&mut self) -> io::Result<Option<(usize, Option<u8>)>> {
        let mut cbuf = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: self.buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: self.buf.len(),
        };
        // SAFETY: zeroed msghdr is valid; pointers below outlive the call.
        let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        loop {
            // SAFETY: msg points at live buffers.
            let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n >= 0 {
                let mut tos = None;
                for (level, ty, data) in cmsgs(&msg) {
                    if (level, ty) == (libc::SOL_IP, libc::IP_TOS) && !data.is_empty() {
                        tos = Some(data[0]);
                    } else if (level, ty) == (libc::SOL_IPV6, libc::IPV6_TCLASS) && data.len() >= 4
                    {
                        tos = Some(i32::from_ne_bytes(data[..4].try_into().unwrap()) as u8);
                    }
                }
                return Ok(Some((n as usize, tos)));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(None),
                io::ErrorKind::Interrupted => {}
                // A pending ICMP error surfaces here once too: its entry
                // is in the error queue, read there.
                _ if is_soft(&e) => {}
                _ => return Err(e),
            }
        }
    }

    fn drain_errors(&mut self) {
        while let Ok(Some(_)) = self.read_error() {}
    }

    /// The device MTU a local EMSGSIZE left in the error queue.
    fn local_mtu_error(&mut self) -> Option<u32> {
        let mut mtu = None;
        while let Ok(Some(e)) = self.read_error() {
            if e.origin == SO_EE_ORIGIN_LOCAL && e.errno == libc::EMSGSIZE {
                mtu = Some(e.info);
            }
        }
        mtu
    }

    /// One entry of the error queue.
    fn read_error(&mut self) -> io::Result<Option<QueuedError>> {
        let mut data = [0u8; 64];
        let mut cbuf = [0u64; 32];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        // SAFETY: as in `recv`.
        let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 32]>() as _;
        // SAFETY: msg points at live buffers.
        let n = unsafe {
            libc::recvmsg(
                self.sock.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        // The quoted payload: our header when the hop quoted enough of it
        // (RFC 792 asks only for 8 bytes past the IP header) and the
        // datagram was one of this test's probes.
        let seq = Hdr::read(&data[..n as usize])
            .filter(|h| h.kind == PROBE && h.token == self.token)
            .map(|h| h.seq);
        let mut out = QueuedError {
            seq,
            ..QueuedError::default()
        };
        for (level, ty, d) in cmsgs(&msg) {
            let recverr = (level, ty) == (libc::SOL_IP, libc::IP_RECVERR)
                || (level, ty) == (libc::SOL_IPV6, libc::IPV6_RECVERR);
            if recverr && d.len() >= 16 {
                out.errno = u32::from_ne_bytes(d[0..4].try_into().unwrap()) as i32;
                out.origin = d[4];
                out.ty = d[5];
                out.code = d[6];
                out.info = u32::from_ne_bytes(d[8..12].try_into().unwrap());
                out.from = offender(&d[16..]);
            } else if (level, ty) == (libc::SOL_IP, libc::IP_TOS) && !d.is_empty() {
                out.tos = Some(d[0]);
            }
        }
        if seq.is_none() && matches!(out.origin, SO_EE_ORIGIN_ICMP | SO_EE_ORIGIN_ICMP6) {
            self.unverified_from(out.from);
        }
        Ok(Some(out))
    }
}

#[derive(Debug, Default)]
struct QueuedError {
    seq: Option<u64>,
    errno: i32,
    origin: u8,
    ty: u8,
    code: u8,
    info: u32,
    from: Option<IpAddr>,
    tos: Option<u8>,
}

/// The offender's address after a `sock_extended_err` (`SO_EE_OFFENDER`).
fn offender(d: &[u8]) -> Option<IpAddr> {
    let family = u16::from_ne_bytes(d.get(0..2)?.try_into().ok()?) as i32;
    match family {
        libc::AF_INET => {
            let a: [u8; 4] = d.get(4..8)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(a)))
        }
        libc::AF_INET6 => {
            let a: [u8; 16] = d.get(8..24)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => None,
    }
}

fn icmp_kind(origin: u8, ty: u8, code: u8) -> IcmpKind {
    if origin == SO_EE_ORIGIN_ICMP {
        match (ty, code) {
            (11, _) => IcmpKind::TimeExceeded,
            (3, 4) => IcmpKind::FragNeeded,
            (3, 0) => IcmpKind::Unreachable("network unreachable"),
            (3, 1) => IcmpKind::Unreachable("host unreachable"),
            (3, 3) => IcmpKind::Unreachable("port unreachable"),
            (3, 9 | 10 | 13) => IcmpKind::Unreachable("administratively prohibited"),
            (3, _) => IcmpKind::Unreachable("unreachable"),
            _ => IcmpKind::Other,
        }
    } else {
        match (ty, code) {
            (3, _) => IcmpKind::TimeExceeded,
            (2, _) => IcmpKind::FragNeeded,
            (1, 0) => IcmpKind::Unreachable("no route"),
            (1, 1) => IcmpKind::Unreachable("administratively prohibited"),
            (1, 3) => IcmpKind::Unreachable("address unreachable"),
            (1, 4) => IcmpKind::Unreachable("port unreachable"),
            (1, _) => IcmpKind::Unreachable("unreachable"),
            _ => IcmpKind::Other,
        }
    }
}

/// Errors an ICMP answer leaves on the socket (read from the queue
/// instead, [`udp::icmp_error`]), and a local firewall's refusal (EPERM).
fn is_soft(e: &io::Error) -> bool {
    udp::icmp_error(e) || e.raw_os_error() == Some(libc::EPERM)
}

/// Waits up to `wait` for the socket to be readable or to have an error.
fn poll(fd: RawFd, wait: Duration) -> io::Result<i16> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    match r {
        0 => Ok(0),
        r if r > 0 => Ok(p.revents),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            }
        }
    }
}

/// The control messages of a received `msg`: level, type, data.
fn cmsgs(msg: &libc::msghdr) -> Vec<(i32, i32, Vec<u8>)> {
    let mut out = Vec::new();
    // SAFETY: the CMSG_* walk stays within msg_control as the kernel filled it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            let data = std::slice::from_raw_parts(libc::CMSG_DATA(c), len).to_vec();
            out.push(((*c).cmsg_level, (*c).cmsg_type, data));
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    out
}
