//! `meshperf agent --stamp [ADDR:]PORT`: a STAMP Session-Reflector (RFC
//! 8762 §4.3), off unless asked, so that a router's or another tool's
//! Session-Sender can measure to a meshperf agent. Stateless by default
//! (its sequence number is the sender's), stateful with `--stamp-stateful`
//! (RFC 8972 §4: a sequence number of its own per session, a session being
//! the sender's address, port and SSID). With `--stamp-key` it is in
//! authenticated mode and answers only packets whose HMAC is right.
//!
//! It is a reflector a stranger can reach, so:
//! * it never sends more bytes than it received: an answer is exactly as
//!   long as its packet (no amplification), and a packet shorter than the
//!   base packet is dropped;
//! * it answers the packet's source only, at most `--stamp-rate` packets a
//!   second per source address (a token bucket with a second's burst), so
//!   a forged source gets no more than that from this agent;
//! * its state is bounded: at most [`MAX_SOURCES`] rate buckets and
//!   [`MAX_SESSIONS`] stateful sessions, the idle ones forgotten first; a
//!   packet that finds no room is dropped and counted;
//! * every packet is counted in `/metrics`, by what became of it.

use super::wire::{self, Key, Layout};
use super::ReflectorCounters;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Most source addresses whose rate is tracked at once.
pub const MAX_SOURCES: usize = 4096;
/// Most stateful sessions held at once.
pub const MAX_SESSIONS: usize = 4096;
/// A source or session idle this long may be forgotten.
const IDLE: Duration = Duration::from_secs(30);

/// What `--stamp` and its companions ask.
pub struct Config {
    pub addr: SocketAddr,
    pub key: Option<Key>,
    pub stateful: bool,
    /// Packets a second per source address.
    pub rate: u32,
}

/// A source's token bucket.
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// A stateful session's own sequence number.
struct Session {
    next: u32,
    last: Instant,
}

/// The reflector's state.
struct Reflector {
    cfg: Config,
    lay: Layout,
    sources: HashMap<IpAddr, Bucket>,
    sessions: HashMap<(SocketAddr, u16), Session>,
    counters: ReflectorCounters,
}

/// Binds and starts the reflector on a thread of its own; the line it
/// prints says where and how.
pub fn spawn(cfg: Config, counters: ReflectorCounters) -> io::Result<SocketAddr> {
    let sock = UdpSocket::bind(cfg.addr)?;
    let bound = sock.local_addr()?;
    let fd = sock.as_raw_fd();
    if bound.is_ipv4() {
        setopt(fd, libc::SOL_IP, libc::IP_RECVTTL)?;
        setopt(fd, libc::SOL_IP, libc::IP_RECVTOS)?;
    } else {
        setopt(fd, libc::SOL_IPV6, libc::IPV6_RECVHOPLIMIT)?;
        setopt(fd, libc::SOL_IPV6, libc::IPV6_RECVTCLASS)?;
    }
    let lay = Layout::of(cfg.key.is_some());
    let mut r = Reflector {
        cfg,
        lay,
        sources: HashMap::new(),
        sessions: HashMap::new(),
        counters,
    };
    std::thread::Builder::new()
        .name("stamp-reflector".into())
        .spawn(move || r.serve(&sock))?;
    Ok(bound)
}

fn setopt(fd: i32, level: i32, name: i32) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a plain int option on our own socket.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One received datagram: its length, source, TTL / hop limit and TOS /
/// traffic class as it arrived (when the kernel said).
struct Got {
    len: usize,
    from: SocketAddr,
    ttl: Option<u8>,
    tos: Option<u8>,
}

fn recv(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Got> {
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; its pointers name live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at live buffers.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let from = sockaddr(&from).ok_or_else(|| io::Error::other("unknown address family"))?;
    let (mut ttl, mut tos) = (None, None);
    // SAFETY: the CMSG_* walk stays within msg_control as the kernel filled it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            let int = || i32::from_ne_bytes(std::ptr::read_unaligned(data.cast::<[u8; 4]>()));
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_IP, libc::IP_TTL) => ttl = Some(int() as u8),
                (libc::SOL_IP, libc::IP_TOS) => tos = Some(*data),
                (libc::SOL_IPV6, libc::IPV6_HOPLIMIT) => ttl = Some(int() as u8),
                (libc::SOL_IPV6, libc::IPV6_TCLASS) => tos = Some(int() as u8),
                _ => {}
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Got {
        len: n as usize,
        from,
        ttl,
        tos,
    })
}

fn sockaddr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(s.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::new(
                IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()),
                u16::from_be(a.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::new(
                IpAddr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
            ))
        }
        _ => None,
    }
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

impl Reflector {
    fn serve(&mut self, sock: &UdpSocket) {
        let mut buf = vec![0u8; 65536];
        loop {
            let got = match recv(sock, &mut buf) {
                Ok(g) => g,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An ICMP error for an earlier answer: nothing to do.
                Err(_) => continue,
            };
            let t2 = now_ns();
            self.counters.received.inc();
            self.counters.bytes_in.inc_by(got.len as u64);
            let pkt = &mut buf[..got.len];
            match self.answer(pkt, &got, t2) {
                Ok(()) => {
                    if sock.send_to(pkt, got.from).is_ok() {
                        self.counters.reflected.inc();
                        self.counters.bytes_out.inc_by(got.len as u64);
                    }
                }
                Err(why) => self.counters.dropped.with_label_values(&[why]).inc(),
            }
        }
    }

    /// Whether `ip` may have one more answer now (its token bucket).
    fn admit(&mut self, ip: IpAddr, now: Instant) -> Result<(), &'static str> {
        let rate = f64::from(self.cfg.rate);
        if !self.sources.contains_key(&ip) && self.sources.len() >= MAX_SOURCES {
            self.sources
                .retain(|_, b| now.duration_since(b.last) < IDLE);
            if self.sources.len() >= MAX_SOURCES {
                return Err("state_full");
            }
        }
        let b = self.sources.entry(ip).or_insert(Bucket {
            tokens: rate,
            last: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.last).as_secs_f64() * rate).min(rate);
        b.last = now;
        if b.tokens < 1.0 {
            return Err("rate");
        }
        b.tokens -= 1.0;
        Ok(())
    }

    /// Turns the sender's packet in `pkt` into the answer, in place (the
    /// answer is exactly as long), or says why it is dropped.
    fn answer(&mut self, pkt: &mut [u8], got: &Got, t2: u128) -> Result<(), &'static str> {
        let lay = self.lay;
        if pkt.len() < lay.len {
            return Err("malformed");
        }
        if let Some(k) = &self.cfg.key {
            if !k.verify(pkt) {
                return Err("bad_hmac");
            }
        }
        let now = Instant::now();
        self.admit(got.from.ip(), now)?;
        let s_seq = wire::get32(pkt, lay.seq);
        let s_ts = wire::get64(pkt, lay.ts);
        let s_err = wire::get16(pkt, lay.err);
        let ssid = wire::get16(pkt, lay.ssid);
        let ptp = wire::is_ptp(s_err);
        let seq = if self.cfg.stateful {
            let key = (got.from, ssid);
            if !self.sessions.contains_key(&key) && self.sessions.len() >= MAX_SESSIONS {
                self.sessions
                    .retain(|_, s| now.duration_since(s.last) < IDLE);
                if self.sessions.len() >= MAX_SESSIONS {
                    return Err("state_full");
                }
            }
            let s = self
                .sessions
                .entry(key)
                .or_insert(Session { next: 0, last: now });
            s.last = now;
            s.next = s.next.wrapping_add(1);
            s.next - 1
        } else {
            s_seq
        };
        // The TLVs past the base packet, answered in place: the Class of
        // Service TLV gets what arrived, types this reflector does not
        // know get the U flag; bytes that are no TLVs are padding, kept.
        if let Some(tlvs) = wire::tlvs(pkt, lay.len) {
            for t in tlvs {
                match t.ty {
                    wire::TLV_CLASS_OF_SERVICE if t.value.1 - t.value.0 >= 4 => {
                        let (dscp1, _, _) =
                            wire::cos_read(&pkt[t.value.0..t.value.1]).unwrap_or_default();
                        let tos = got.tos.unwrap_or(0);
                        pkt[t.value.0..t.value.0 + 4].copy_from_slice(&wire::cos_value(
                            dscp1,
                            tos >> 2,
                            tos & 3,
                            0,
                        ));
                    }
                    wire::TLV_EXTRA_PADDING => {}
                    _ => pkt[t.at] |= wire::TLV_U,
                }
            }
        }
        // The base packet: ours over the sender's, MBZ fields zero.
        let mut base = [0u8; wire::AUTH_BASE];
        let b = &mut base[..lay.len];
        wire::put32(b, lay.seq, seq);
        wire::put16(b, lay.err, wire::error_estimate(ptp, false));
        wire::put16(b, lay.ssid, ssid);
        wire::put64(b, lay.rx_ts, wire::ts_of(t2, ptp));
        wire::put32(b, lay.s_seq, s_seq);
        wire::put64(b, lay.s_ts, s_ts);
        wire::put16(b, lay.s_err, s_err);
        b[lay.s_ttl] = got.ttl.unwrap_or(255);
        wire::put64(b, lay.ts, wire::ts_of(now_ns(), ptp));
        pkt[..lay.len].copy_from_slice(b);
        if let Some(k) = &self.cfg.key {
            k.sign(pkt);
        }
        Ok(())
    }
}
