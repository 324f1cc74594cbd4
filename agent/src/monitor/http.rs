//! The monitor's HTTP endpoint: `GET /metrics` (the latest snapshot) and
//! `GET /healthz`, nothing else. One thread accepts; each connection gets a
//! thread of its own, at most [`MAX_CONNS`] at once (the rest are closed),
//! with a 5 s budget to send its request and take the answer. The agent's
//! `--metrics` endpoint is this one too, its page rendered per scrape.

use super::metrics::CONTENT_TYPE;
use crate::serve::http::simple;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once.
const MAX_CONNS: usize = 16;
/// The largest request head read.
const MAX_HEAD: usize = 8192;

/// The latest matrix a monitor measured: its result file (as `meshperf run
/// --json` writes it) and the web app's address with the whole result in
/// the fragment (as `meshperf run` prints it).
pub struct Latest {
    pub json: String,
    pub link: String,
}

/// Where the monitor keeps its [`Latest`] (none before its first run).
pub type LatestMatrix = Arc<std::sync::Mutex<Option<Arc<Latest>>>>;

/// Serves the page `page` returns on `listener` until the process ends, and
/// with `latest` (the monitor) `/matrix` (a redirect to the page showing the
/// latest matrix) and `/matrix.json`; `who` (`meshperf monitor`) names the
/// server in its 404.
pub fn spawn<P>(listener: TcpListener, who: &'static str, page: P, latest: Option<LatestMatrix>)
where
    P: Fn() -> Arc<String> + Send + Sync + 'static,
{
    let page = Arc::new(page);
    let busy = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            if busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
                busy.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let (page, busy, latest) = (page.clone(), busy.clone(), latest.clone());
            std::thread::spawn(move || {
                let _ = serve(conn, who, &*page, latest.as_ref());
                busy.fetch_sub(1, Ordering::AcqRel);
            });
        }
    });
}

fn serve(
    mut conn: TcpStream,
    who: &str,
    page: &dyn Fn() -> Arc<String>,
    latest: Option<&LatestMatrix>,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let (method, path) = loop {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                break (
                    req.method.unwrap_or("").to_string(),
                    req.path.unwrap_or("").to_string(),
                )
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => continue,
            _ => {
                return conn.write_all(&simple(400, "Bad Request", "bad request\n"));
            }
        }
    };
    conn.write_all(&respond(&method, &path, who, page, latest))
}

/// A 200 answer with `body` (the head alone for HEAD).
fn ok(method: &str, content_type: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// The answer to one request.
fn respond(
    method: &str,
    path: &str,
    who: &str,
    page: &dyn Fn() -> Arc<String>,
    latest: Option<&LatestMatrix>,
) -> Vec<u8> {
    if method != "GET" && method != "HEAD" {
        return simple(
            405,
            "Method Not Allowed",
            "only GET and HEAD are served here\n",
        );
    }
    match path.split('?').next() {
        Some("/healthz") => simple(200, "OK", "ok\n"),
        Some("/metrics") => ok(method, CONTENT_TYPE, &page()),
        Some(p @ ("/matrix" | "/matrix.json")) if latest.is_some() => {
            let now = latest.and_then(|l| l.lock().ok()?.clone());
            match (now, p) {
                (None, _) => simple(
                    404,
                    "Not Found",
                    "no run has ended yet: /matrix answers after the first\n",
                ),
                (Some(l), "/matrix.json") => ok(method, "application/json", &l.json),
                (Some(l), _) => format!(
                    "HTTP/1.1 303 See Other\r\nLocation: {}\r\nContent-Type: text/plain\r\n\
                     Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{}\n",
                    l.link,
                    l.link.len() + 1,
                    l.link
                )
                .into_bytes(),
            }
        }
        _ => simple(
            404,
            "Not Found",
            &format!(
                "not found: this is {who} (/metrics, /healthz{})\n",
                if latest.is_some() {
                    ", /matrix, /matrix.json"
                } else {
                    ""
                }
            ),
        ),
    }
}
