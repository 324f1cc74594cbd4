//! Static file serving of the embedded web app. Requests are looked up in a
//! table built at compile time (see `build.rs`); there is no file system
//! access, so no path can escape it.

use crate::endpoint::simple;
use std::io::Read;

/// One embedded file, stored gzip-compressed.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub gzip: &'static [u8],
    pub len: usize,
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// Headers of every served asset. The page loads only its own scripts,
/// styles and WebAssembly (`'wasm-unsafe-eval'` lets it compile the wasm
/// modules, nothing lets it eval JavaScript), talks to agents over `ws:`/`wss:`
/// anywhere (the agents it pairs are on other hosts) and reads a monitor's
/// matrix over `http:`/`https:` (`#matrix=URL`; that adds no reach: a
/// WebSocket could go anywhere already, and the monitor's CORS header
/// decides what the page may read), and may not be framed (clickjacking) or
/// leak its URL, whose fragment holds tokens, in a Referer.
const SECURITY_HEADERS: &str = "Content-Security-Policy: default-src 'none'; \
     script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self' ws: wss: http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n\
     X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n";

/// Finds the asset for a request path (`/` is `/index.html`; the query is ignored).
pub fn lookup(path: &str) -> Option<&'static Asset> {
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let path = if path == "/" { "/index.html" } else { path };
    ASSETS.iter().find(|a| a.path == path)
}

/// Builds the full HTTP/1.1 response for a parsed request.
pub fn respond(method: &str, path: &str, accepts_gzip: bool) -> Vec<u8> {
    if method != "GET" && method != "HEAD" {
        return simple(
            405,
            "Method Not Allowed",
            "only GET and HEAD are served here\n",
        );
    }
    // For liveness/readiness probes (Kubernetes): no token, and says nothing.
    if path.split('?').next() == Some("/healthz") {
        return simple(200, "OK", "ok\n");
    }
    let Some(asset) = lookup(path) else {
        return simple(404, "Not Found", "not found\n");
    };
    let (body, encoding): (Vec<u8>, &str) = if accepts_gzip {
        (asset.gzip.to_vec(), "Content-Encoding: gzip\r\n")
    } else {
        let mut raw = Vec::with_capacity(asset.len);
        flate2::read::GzDecoder::new(asset.gzip)
            .read_to_end(&mut raw)
            .expect("embedded asset is valid gzip");
        (raw, "")
    };
    let cache = if asset.path == "/index.html" {
        "no-cache"
    } else {
        "public, max-age=31536000, immutable"
    };
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n{encoding}Cache-Control: {cache}\r\n\
         {SECURITY_HEADERS}Connection: close\r\n\r\n",
        asset.content_type,
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        out.extend_from_slice(&body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_served_and_traversal_is_not() {
        assert!(lookup("/").is_some());
        assert!(lookup("/index.html?x=1").is_some());
        assert!(lookup("/../Cargo.toml").is_none());
        assert!(lookup("/%2e%2e/etc/passwd").is_none());
        let r = respond("GET", "/nope", true);
        assert!(r.starts_with(b"HTTP/1.1 404"));
        let r = respond("POST", "/", true);
        assert!(r.starts_with(b"HTTP/1.1 405"));
        let r = String::from_utf8_lossy(&respond("GET", "/", false)).to_string();
        assert!(
            r.starts_with("HTTP/1.1 200") && r.contains("text/html") && r.contains("<"),
            "{r}"
        );
    }
}
