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

/// Serves the page `page` returns on `listener` until the process ends;
/// `who` (`meshperf monitor`) names the server in its 404.
pub fn spawn<P>(listener: TcpListener, who: &'static str, page: P)
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
            let (page, busy) = (page.clone(), busy.clone());
            std::thread::spawn(move || {
                let _ = serve(conn, who, &*page);
                busy.fetch_sub(1, Ordering::AcqRel);
            });
        }
    });
}

fn serve(mut conn: TcpStream, who: &str, page: &dyn Fn() -> Arc<String>) -> std::io::Result<()> {
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
    conn.write_all(&respond(&method, &path, who, page))
}

/// The answer to one request.
fn respond(method: &str, path: &str, who: &str, page: &dyn Fn() -> Arc<String>) -> Vec<u8> {
    if method != "GET" && method != "HEAD" {
        return simple(
            405,
            "Method Not Allowed",
            "only GET and HEAD are served here\n",
        );
    }
    match path.split('?').next() {
        Some("/healthz") => simple(200, "OK", "ok\n"),
        Some("/metrics") => {
            let page = page();
            let mut out = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\n\
                 Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                page.len()
            )
            .into_bytes();
            if method == "GET" {
                out.extend_from_slice(page.as_bytes());
            }
            out
        }
        _ => simple(
            404,
            "Not Found",
            &format!("not found: this is {who} (/metrics, /healthz)\n"),
        ),
    }
}
