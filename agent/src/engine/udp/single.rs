//! Off Linux, [`super::batch`]'s names over one datagram per system call:
//! `udp_stream` and the probe flow of `latency_under_load` send with
//! `send`/`send_to` and receive with `recv_from`, where Linux moves up to
//! a batch of datagrams per `sendmmsg`/`recvmmsg`. There are no kernel
//! receive timestamps here (every arrival is timed in user space, and the
//! summaries say so) and no UDP GSO or GRO (`gso` `on` is refused before
//! any traffic, [`crate::platform::linux_only`]; `auto` goes without).
//! The counts are the same: each datagram is read, checked and counted on
//! its own.

use crate::platform;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// A read's buffer when GRO could coalesce (never here: kept for the
/// receiver's buffer size, which asks for it only with GRO on).
pub const GRO_BUF: usize = 65536;

/// The last datagram read, and the counts the summaries report.
pub struct RecvBatch {
    /// Calls that returned a datagram, and the datagrams they returned
    /// (the same number here).
    pub calls: u64,
    pub messages: u64,
    buf: Vec<u8>,
    len: usize,
    from: Option<SocketAddr>,
}

impl RecvBatch {
    /// Room for one datagram of `size` bytes (a longer one is cut to it,
    /// as Linux's batch cuts it); `_n`, Linux's batch size, is always 1
    /// here.
    pub fn new(_n: usize, size: usize) -> RecvBatch {
        RecvBatch {
            calls: 0,
            messages: 0,
            buf: vec![0; size],
            len: 0,
            from: None,
        }
    }

    /// Receives one datagram; blocks (per the socket's read timeout, or
    /// not at all on a non-blocking socket) until it comes.
    pub fn recv(&mut self, s: &UdpSocket) -> io::Result<usize> {
        let (len, from) = match s.recv_from(&mut self.buf) {
            Ok((len, from)) => (len, Some(from)),
            // Windows reads a datagram longer than the buffer as far as it
            // goes and says so with an error that loses its source: it is
            // one datagram, cut (Linux's batch flags it MSG_TRUNC), from
            // nobody this side knows.
            Err(e) if too_long(&e) => (self.buf.len(), None),
            // Windows reports an ICMP error for an earlier send (the peer's
            // port closed, or a forged one) on the next receive
            // (WSAECONNRESET): no datagram came; the caller counts it
            // ([`super::dgram::icmp_error`]) and reads on, as on Linux.
            Err(e) => return Err(e),
        };
        self.len = len;
        self.from = from;
        self.calls += 1;
        self.messages += 1;
        Ok(1)
    }

    /// Receives a datagram if one is queued, without blocking
    /// (`WouldBlock` when none is).
    pub fn recv_now(&mut self, s: &UdpSocket) -> io::Result<usize> {
        if !platform::readable(platform::raw(s), Duration::ZERO) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.recv(s)
    }

    /// The datagram of the last `recv` (`_i` is always 0): payload,
    /// source, and no kernel timestamp.
    pub fn get(&self, _i: usize) -> (&[u8], Option<SocketAddr>, Option<(i64, i64)>) {
        (&self.buf[..self.len], self.from, None)
    }

    /// The datagrams of the last `recv`: the one.
    pub fn datagrams(&self, i: usize) -> std::iter::Once<&[u8]> {
        std::iter::once(self.get(i).0)
    }
}

/// WSAEMSGSIZE: a datagram longer than the receive buffer.
#[cfg(windows)]
fn too_long(e: &io::Error) -> bool {
    e.raw_os_error() == Some(windows_sys::Win32::Networking::WinSock::WSAEMSGSIZE)
}

/// Unix cuts a long datagram silently (no error to tell).
#[cfg(not(windows))]
fn too_long(_e: &io::Error) -> bool {
    false
}

/// Datagrams of `size` bytes to one destination (`None`: the socket is
/// connected), sent one per call.
pub struct SendBatch {
    size: usize,
    /// Calls that sent a datagram.
    pub calls: u64,
    /// Sends only when the socket has room (several flows on one thread).
    dont_wait: bool,
    bufs: Vec<u8>,
    dest: Option<SocketAddr>,
}

impl SendBatch {
    /// `n` datagrams' buffers; `_segs` (Linux's GSO segments a message)
    /// is always 1 here.
    pub fn new(n: usize, _segs: usize, size: usize, dest: Option<SocketAddr>) -> SendBatch {
        let mut bufs = vec![0; n * size];
        // Random payload behind each datagram's header: nothing for a
        // compressing link to shrink.
        getrandom::fill(&mut bufs).expect("the OS random source works");
        SendBatch {
            size,
            calls: 0,
            dont_wait: false,
            bufs,
            dest,
        }
    }

    /// Datagrams one [`SendBatch::send`] may send.
    pub fn capacity(&self) -> usize {
        self.bufs.len() / self.size.max(1)
    }

    /// The payload buffer of datagram `i`.
    pub fn buf(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.size..(i + 1) * self.size]
    }

    /// From now on a send that would wait for room sends nothing
    /// (`WouldBlock`) instead: a thread that serves several flows must not
    /// hold up the others.
    pub fn dont_wait(&mut self) {
        self.dont_wait = true;
    }

    /// Sends datagrams `0..count`, one call each; returns how many the
    /// system took (an error only if it took none).
    pub fn send(&mut self, s: &UdpSocket, count: usize) -> io::Result<usize> {
        let count = count.min(self.capacity());
        for i in 0..count {
            let room = !self.dont_wait || platform::writable(platform::raw(s));
            let buf = &self.bufs[i * self.size..(i + 1) * self.size];
            let r = match (room, self.dest) {
                (false, _) => Err(io::ErrorKind::WouldBlock.into()),
                (true, Some(d)) => s.send_to(buf, d),
                (true, None) => s.send(buf),
            };
            match r {
                Ok(_) => self.calls += 1,
                Err(e) if i == 0 => return Err(e),
                Err(_) => return Ok(i),
            }
        }
        Ok(count)
    }
}

/// Whether a send failed for want of buffer room (WSAENOBUFS): the
/// datagram did not leave and may be sent again.
#[cfg(windows)]
pub fn no_room(e: &io::Error) -> bool {
    e.raw_os_error() == Some(windows_sys::Win32::Networking::WinSock::WSAENOBUFS)
}

/// Whether a send failed for want of buffer room (ENOBUFS).
#[cfg(not(windows))]
pub fn no_room(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOBUFS)
}

/// UDP GSO: none here.
pub fn set_gso(_s: &UdpSocket, _size: usize) -> io::Result<()> {
    Err(platform::unsupported("gso", "UDP GSO and GRO"))
}

/// UDP GRO: none here.
pub fn set_gro(_s: &UdpSocket) -> io::Result<()> {
    Err(platform::unsupported("gso", "UDP GSO and GRO"))
}

/// The UDP offloads: none here (`gso` `on` never gets this far off Linux).
pub fn offloads(_send: bool, _receive: bool) -> Result<(), String> {
    Err(platform::needs_linux("gso", "UDP GSO and GRO"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Datagrams sent one per call arrive one per read, in order, with
    /// their source; a datagram longer than the buffer is read cut to it;
    /// a read with nothing queued says `WouldBlock` at once.
    #[test]
    fn one_datagram_a_call_each_way_with_its_source() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut out = SendBatch::new(4, 1, 64, Some(rx.local_addr().unwrap()));
        out.dont_wait();
        assert_eq!(out.capacity(), 4);
        for i in 0..4u8 {
            out.buf(usize::from(i))[0] = i;
        }
        assert_eq!(out.send(&tx, 3).unwrap(), 3);
        assert_eq!(out.calls, 3);
        let mut inb = RecvBatch::new(8, 64);
        for i in 0..3u8 {
            assert_eq!(inb.recv(&rx).unwrap(), 1);
            let (data, from, ts) = inb.get(0);
            assert_eq!(
                (data.len(), data[0], from, ts),
                (64, i, tx.local_addr().ok(), None)
            );
            assert_eq!(inb.datagrams(0).count(), 1);
        }
        assert_eq!((inb.calls, inb.messages), (3, 3));
        assert_eq!(
            inb.recv_now(&rx).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        let mut short = RecvBatch::new(1, 16);
        tx.send_to(&[7u8; 64], rx.local_addr().unwrap()).unwrap();
        assert!(platform::readable(
            platform::raw(&rx),
            Duration::from_secs(2)
        ));
        assert_eq!(short.recv_now(&rx).unwrap(), 1);
        assert_eq!(short.get(0).0, &[7u8; 16]);
    }
}
