//! The answers the HTTP servers write: plain text with a status, 200s of a
//! page, the refusal of a method. The agent's port (`serve/`) and the
//! endpoints beside it ([`super`]) write the same.

/// The content type of a metrics page (Prometheus text format 0.0.4), the
/// agent's and the monitor's.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A plain-text response with a status line.
pub fn simple(code: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A 200 answer with `body` (the head alone for HEAD).
pub fn ok(method: &str, content_type: &str, body: &str) -> Vec<u8> {
    ok_with(method, content_type, "", body)
}

/// [`ok`] with more header lines (`extra`: each ending in CRLF).
pub fn ok_with(method: &str, content_type: &str, extra: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// GET and HEAD only: the refusal of any other method.
pub fn method_refused(method: &str) -> Option<Vec<u8>> {
    (method != "GET" && method != "HEAD").then(|| {
        simple(
            405,
            "Method Not Allowed",
            "only GET and HEAD are served here\n",
        )
    })
}
