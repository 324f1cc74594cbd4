//! The TLS side of `meshperf run`: a rustls client that trusts exactly the
//! certificate whose SHA-256 the agent printed (`fp=` in its URL), or
//! without `fp=` the system's trusted roots, and the stream a controller
//! connection runs over.
//!
//! Pinning replaces the certificate-chain check, not the handshake's: the
//! server must still prove it holds the pinned certificate's key (the
//! TLS 1.3 signature is checked with the provider's algorithms), so a man in
//! the middle that copies the certificate but not the key is refused.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Accepts the one certificate whose SHA-256 is the pinned fingerprint.
#[derive(Debug)]
struct Pinned {
    sha256: [u8; 32],
    provider: Arc<CryptoProvider>,
}

/// Parses 64 hex digits (either case, `:` between bytes allowed, as
/// `openssl x509 -fingerprint` prints them).
pub fn parse_fp(s: &str) -> Option<[u8; 32]> {
    let digits: String = s.chars().filter(|&c| c != ':').collect();
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use sha2::Digest;
        let got: [u8; 32] = sha2::Sha256::digest(end_entity.as_ref()).into();
        if bool::from(got.ct_eq(&self.sha256)) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the agent's certificate has SHA-256 {}, not the fp= of the URL; \
                 use the URL this agent printed (or someone is in between)",
                hex::encode(got)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The client offers TLS 1.3 only (see `client_config`).
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS 1.3 client configuration pinned to `sha256`.
pub fn client_config(sha256: [u8; 32]) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Pinned {
        sha256,
        provider: provider.clone(),
    });
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("the ring provider speaks TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// A client that trusts the system's root certificates (the operating
/// system's store, or `SSL_CERT_FILE` / `SSL_CERT_DIR`): for agents serving
/// a certificate from a CA (`--tls-cert`, e.g. from an ACME client or a
/// cluster's issuer) reached without a pinned `fp=`. The certificate must
/// name the host asked for.
pub fn roots_config() -> Result<Arc<ClientConfig>, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map_or_else(|| "none found".to_string(), ToString::to_string);
        return Err(format!(
            "no trusted root certificates to check the agent's against ({why}); set SSL_CERT_FILE, or pin the certificate with &fp= as the agent prints it"
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("the ring provider speaks TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Completes a TLS handshake on a connected (blocking) socket, so that a
/// wrong certificate is reported as such and not as a WebSocket failure.
pub fn handshake(
    cfg: Arc<ClientConfig>,
    host: &str,
    mut sock: TcpStream,
) -> io::Result<rustls::StreamOwned<ClientConnection, TcpStream>> {
    // Any name will do for a pinned certificate, but it goes out as SNI; a
    // certificate checked against the roots must name it.
    let name = ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::try_from("meshperf-agent").expect("a valid name"));
    let mut conn = ClientConnection::new(cfg, name).map_err(io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    Ok(rustls::StreamOwned::new(conn, sock))
}

/// A controller's connection to an agent: plain or TLS.
pub enum CtlStream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<ClientConnection, TcpStream>>),
}

impl CtlStream {
    /// The socket under it (timeouts, blocking mode, polling).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            CtlStream::Plain(s) => s,
            CtlStream::Tls(t) => &t.sock,
        }
    }
}

impl Read for CtlStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            CtlStream::Plain(s) => s.read(buf),
            CtlStream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for CtlStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            CtlStream::Plain(s) => s.write(buf),
            CtlStream::Tls(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            CtlStream::Plain(s) => s.flush(),
            CtlStream::Tls(t) => t.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_in_both_usual_spellings() {
        let fp = "ab".repeat(32);
        assert_eq!(parse_fp(&fp), Some([0xab; 32]));
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_fp(&colons), Some([0xab; 32]));
        assert_eq!(parse_fp(&"ab".repeat(31)), None);
        assert_eq!(parse_fp(&"zz".repeat(32)), None);
    }
}
