//! The connection under a WebSocket: the server reads the HTTP request head
//! itself (to route and check it) and then hands the socket to tungstenite,
//! which must see that head again. Its own module so that the event loop
//! (`server`) and the sessions it holds (`control`) both name it without
//! importing each other.

use super::tls::Stream;
use std::io::{self, Read, Write};

/// A socket that first replays bytes already read (the HTTP request head we
/// parsed to route the connection) and then reads from the connection
/// (plain or TLS).
pub struct Replay {
    pub pre: Vec<u8>,
    pub pos: usize,
    pub inner: Stream,
}

impl Read for Replay {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.pre.len() {
            let n = buf.len().min(self.pre.len() - self.pos);
            buf[..n].copy_from_slice(&self.pre[self.pos..self.pos + n]);
            self.pos += n;
            if self.pos == self.pre.len() {
                // Replayed: not held for the connection's life.
                self.pre = Vec::new();
                self.pos = 0;
            }
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl Write for Replay {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
