//! The monitor's HTTP endpoint: `GET /metrics` (the latest snapshot),
//! `GET /healthz`, and `/matrix`, `/matrix.json`: the routes. Connections,
//! caps, deadlines and `Host` are the agent's endpoint's ([`endpoint`]).

use super::metrics::CONTENT_TYPE;
use crate::serve::endpoint::{self, method_refused, ok, Limits, Request};
use crate::serve::http::simple;
use std::net::TcpListener;
use std::sync::Arc;

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
/// server in its 404; `names` are the host names it answers to besides
/// addresses.
pub fn spawn<P>(
    listener: TcpListener,
    who: &'static str,
    names: Vec<String>,
    page: P,
    latest: Option<LatestMatrix>,
) where
    P: Fn() -> Arc<String> + Send + Sync + 'static,
{
    endpoint::spawn(
        listener,
        who,
        names,
        Limits::default(),
        move |r: &Request| respond(r.method, r.path, who, &page, latest.as_ref()),
    );
}

/// The answer to one request.
fn respond(
    method: &str,
    path: &str,
    who: &str,
    page: &dyn Fn() -> Arc<String>,
    latest: Option<&LatestMatrix>,
) -> Vec<u8> {
    if let Some(refused) = method_refused(method) {
        return refused;
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
