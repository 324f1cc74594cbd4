//! The answers the HTTP servers write: plain text with a status, 200s of a
//! page, the refusal of a method. The agent's port (`serve/`) and the
//! endpoints beside it ([`super`]) write the same; [`metrics_page`] is what
//! both metrics endpoints (the agent's `--metrics`, the monitor's) answer.

use super::Request;
use std::sync::Arc;

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

/// The answer of a metrics endpoint to `r`: GET or HEAD only, `/metrics`
/// is the page `page` renders, `/healthz` says ok, and `more` answers the
/// endpoint's own routes (given the route and the query; `None` for none
/// of them); else a 404 that says what this is (`what`) and its routes
/// (`/metrics`, `/healthz` and `more_routes`, e.g. `, /matrix`).
pub fn metrics_page(
    r: &Request,
    page: impl FnOnce() -> Arc<String>,
    what: &str,
    more_routes: &str,
    more: impl FnOnce(&str, &str) -> Option<Vec<u8>>,
) -> Vec<u8> {
    if let Some(refused) = method_refused(r.method) {
        return refused;
    }
    let (route, query) = r.path.split_once('?').unwrap_or((r.path, ""));
    match route {
        "/healthz" => simple(200, "OK", "ok\n"),
        "/metrics" => ok(r.method, METRICS_CONTENT_TYPE, &page()),
        _ => more(route, query).unwrap_or_else(|| {
            simple(
                404,
                "Not Found",
                &format!("not found: this is {what} (/metrics, /healthz{more_routes})\n"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Request<'_> {
        Request {
            method: "GET",
            path,
            host: None,
            origin: None,
        }
    }

    fn answer(r: &Request, more_routes: &str) -> String {
        let page = || Arc::new("m 1\n".to_string());
        let more = |route: &str, query: &str| {
            (route == "/more").then(|| simple(200, "OK", &format!("more {query}\n")))
        };
        String::from_utf8(metrics_page(r, page, "this test", more_routes, more)).unwrap()
    }

    /// The agent's `--metrics` and the monitor's answer the same routes the
    /// same way; a 404 names what answered and its routes.
    #[test]
    fn a_metrics_page_answers_its_routes_and_names_them_in_its_404() {
        let page = answer(&get("/metrics?x=1"), "");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4"));
        assert!(page.ends_with("\r\n\r\nm 1\n"), "{page}");
        assert!(answer(&get("/healthz"), "").ends_with("\r\n\r\nok\n"));
        assert!(answer(&get("/more?form=x"), ", /more").ends_with("more form=x\n"));
        let none = answer(&get("/nope"), ", /more");
        assert!(none.starts_with("HTTP/1.1 404 Not Found"), "{none}");
        assert!(
            none.ends_with("not found: this is this test (/metrics, /healthz, /more)\n"),
            "{none}"
        );
        let head = Request {
            method: "HEAD",
            ..get("/metrics")
        };
        assert!(answer(&head, "").ends_with("\r\n\r\n"));
        let post = Request {
            method: "POST",
            ..get("/metrics")
        };
        assert!(answer(&post, "").starts_with("HTTP/1.1 405"));
    }
}
