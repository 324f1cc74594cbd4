//! TLS on the agent's port (`--tls-cert`/`--tls-key`, `--tls-self-signed`):
//! the server's rustls configuration, and [`Stream`], the connection under
//! the HTTP head reader and the WebSocket, plain or TLS.
//!
//! rustls with its `ring` provider: pure Rust and C built by `cc`, no
//! CMake or Go as aws-lc-rs needs, and the smaller binary. TLS 1.3 only:
//! every browser and `meshperf run` speak it, and 1.2 would add code and
//! choices to review for no client we have.
//!
//! The TLS stream follows rustls' own mio server example: bytes from the
//! socket go into the session (`read_tls`, `process_new_packets`), records
//! out of it go to the socket (`write_tls`) whenever the socket takes them;
//! [`Stream`] turns that into the non-blocking `Read`/`Write` the server
//! loop and tungstenite already use, so the TLS handshake happens while
//! the loop waits for the HTTP request head, under the same deadline.

use crate::endpoint::simple;
use anyhow::{bail, Context};
use mio::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

/// The connection under a control session or an HTTP exchange. An enum,
/// not a trait object: the plain path stays a direct call.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Stream {
    /// The socket under it (its addresses).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }

    /// Half-closes after a response: TLS says `close_notify` first.
    pub fn shutdown_write(&mut self) {
        match self {
            Stream::Plain(s) => {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
            Stream::Tls(t) => {
                t.conn.send_close_notify();
                let _ = t.flush();
                let _ = t.sock.shutdown(std::net::Shutdown::Write);
            }
        }
    }

    /// Whether bytes written now reach the peer as they are (no TLS), for
    /// the answers the server writes before a connection is taken in.
    pub fn is_plain(&self) -> bool {
        matches!(self, Stream::Plain(_))
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

/// A server-side TLS session over a non-blocking socket.
pub struct TlsStream {
    conn: ServerConnection,
    sock: TcpStream,
    /// Whether the first byte was looked at (a TLS client starts with a
    /// handshake record, 0x16; a plain HTTP client with a letter).
    checked: bool,
}

impl TlsStream {
    pub fn new(cfg: &Arc<ServerConfig>, sock: TcpStream) -> io::Result<TlsStream> {
        let conn = ServerConnection::new(cfg.clone()).map_err(io::Error::other)?;
        Ok(TlsStream {
            conn,
            sock,
            checked: false,
        })
    }

    /// Sends what the session has for the socket, until it would block.
    fn send_tls(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A plain HTTP client on the TLS port gets a plain one-line answer
    /// (what it can read) instead of a TLS alert it cannot.
    fn refuse_plain(&mut self) -> io::Result<()> {
        let mut first = [0u8; 1];
        match self.sock.peek(&mut first) {
            Ok(1) if first[0] != 0x16 && first[0].is_ascii_alphabetic() => {
                let _ = self.sock.write(&simple(
                    400,
                    "Bad Request",
                    "this agent serves https and wss only; use the https:// URL it printed\n",
                ));
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "plain HTTP on the TLS port",
                ))
            }
            Ok(_) => {
                self.checked = true;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // Plaintext already decrypted first: it makes no readable edge.
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // Handshake messages (and alerts) owed to the peer go out before
            // more is read; a full socket keeps them for its writable edge.
            match self.send_tls() {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
            if !self.checked {
                self.refuse_plain()?;
            }
            match self.conn.read_tls(&mut self.sock) {
                // End of stream: the reader says whether it was clean.
                Ok(0) => match self.conn.reader().read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                    r => return r,
                },
                Ok(_) => {
                    if let Err(e) = self.conn.process_new_packets() {
                        let _ = self.send_tls(); // the alert, best effort
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.send_tls() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
        // The session buffers at most its limit (64 KiB); past it the
        // caller sees the socket push back, as with a plain socket.
        let n = self.conn.writer().write(buf)?;
        match self.send_tls() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.conn.writer().flush()?;
        self.send_tls()
    }
}

/// The certificate the agent serves, and what the printed URL says of it.
pub struct Identity {
    pub config: Arc<ServerConfig>,
    /// SHA-256 of the leaf certificate, lower-case hex (`fp=` in the URL).
    pub fingerprint: String,
}

/// SHA-256 of a certificate's DER bytes, as 64 lower-case hex digits.
pub fn fingerprint(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<Identity> {
    let fingerprint = fingerprint(chain.first().context("no certificate")?);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("setting up TLS 1.3")?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity {
        config: Arc::new(config),
        fingerprint,
    })
}

/// Loads a PEM certificate chain and its private key (what an ACME client
/// writes: fullchain.pem and privkey.pem).
pub fn from_pem(cert: &Path, key: &Path) -> anyhow::Result<Identity> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| anyhow::anyhow!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        bail!(
            "--tls-cert {}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)",
            cert.display()
        );
    }
    let pk = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        anyhow::anyhow!(
            "--tls-key {}: {e} (expected a PEM private key: PKCS#8, RSA or EC)",
            key.display()
        )
    })?;
    config(chain, pk).map_err(|e| {
        anyhow::anyhow!(
            "--tls-cert {} with --tls-key {}: {e}; give the key that belongs to the certificate",
            cert.display(),
            key.display()
        )
    })
}

/// A fresh self-signed certificate for `names` (host names and addresses),
/// made at start and never written anywhere.
pub fn self_signed(names: Vec<String>) -> anyhow::Result<Identity> {
    let ck = rcgen::generate_simple_self_signed(names).context("making a certificate")?;
    let key = PrivateKeyDer::try_from(ck.signing_key.serialize_der())
        .map_err(|e| anyhow::anyhow!("the new key: {e}"))?;
    config(vec![ck.cert.der().clone()], key)
}
