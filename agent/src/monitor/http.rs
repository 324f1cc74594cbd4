//! The monitor's HTTP endpoint: `GET /metrics` (the latest snapshot),
//! `GET /healthz`, and `/matrix`, `/matrix.json` (`?form=compact`): the
//! routes, besides those every metrics endpoint answers
//! ([`metrics_page`]). Connections, caps, deadlines and `Host` are the
//! agent's endpoint's ([`endpoint`]).
//!
//! Cross-origin reads (CORS): everything here is read-only figures, served
//! to anyone who can reach the port; what a CORS header adds is that a
//! page from another origin, in a browser that can reach the monitor (on
//! the cluster's network, through a port-forward), may read them too. So
//! `/matrix.json` names the page's origin in `Access-Control-Allow-Origin`
//! only for the pages that show a matrix: the agents' own pages (the
//! origins of the last run's agents and of `--web`), a page on this
//! machine's loopback (a port-forward), and each `--allow-origin`
//! (`*`: any). Another site the browser visits reads nothing. No
//! credentials are allowed (there are none), GET and HEAD only: no
//! preflight.

use crate::endpoint::answer::metrics_page;
use crate::endpoint::{self, ok_with, simple, Limits, Request};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

/// Where `/matrix` sends a browser.
pub enum Link {
    /// The web app's address with the whole result in the fragment (as
    /// `meshperf run` prints it).
    Permalink(String),
    /// A fleet's matrix (more than a link carries): the web app's address
    /// (`page`), which opens this monitor's `/matrix.json?form=compact` by
    /// URL (`#matrix=URL`).
    Fleet { page: String },
}

/// The latest matrix a monitor measured: its result file (as `meshperf run
/// --json` writes it), where `/matrix` goes, the compact form of the pairs
/// kept (`compact`), and the origins whose pages may read them.
pub struct Latest {
    pub json: String,
    pub link: Link,
    pub compact: String,
    /// Lower case, without a trailing slash; `*` allows any.
    pub origins: Vec<String>,
}

/// `origin` (`scheme://host[:port]`) is a page on this machine's loopback.
fn loopback(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The CORS header line for a page from `origin`, if it may read `l`.
fn cors(origin: Option<&str>, l: &Latest) -> String {
    let Some(origin) = origin else {
        return String::new();
    };
    let o = origin.trim_end_matches('/').to_ascii_lowercase();
    if l.origins.iter().any(|x| x == "*") {
        return "Access-Control-Allow-Origin: *\r\n".into();
    }
    if loopback(&o) || l.origins.contains(&o) {
        // The origin itself (never a pattern), and caches told it varies.
        return format!("Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n");
    }
    "Vary: Origin\r\n".into()
}

/// `s` percent-encoded for a URL's fragment value.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
    let own = listener.local_addr().ok();
    endpoint::spawn(
        listener,
        who,
        names,
        Limits::default(),
        move |r: &Request| respond(r, own, who, &page, latest.as_ref()),
    );
}

/// The answer to one request: the metrics page's routes
/// ([`endpoint::answer::metrics_page`]) and, with `latest`, the matrix's.
fn respond(
    r: &Request,
    own: Option<SocketAddr>,
    who: &str,
    page: &dyn Fn() -> Arc<String>,
    latest: Option<&LatestMatrix>,
) -> Vec<u8> {
    let more = if latest.is_some() {
        ", /matrix, /matrix.json"
    } else {
        ""
    };
    metrics_page(r, page, who, more, |route, query| match (route, latest) {
        ("/matrix" | "/matrix.json", Some(latest)) => Some(matrix(r, route, query, own, latest)),
        _ => None,
    })
}

/// `/matrix` (a redirect to the page showing the latest matrix) or
/// `/matrix.json` (`?form=compact`).
fn matrix(
    r: &Request,
    route: &str,
    query: &str,
    own: Option<SocketAddr>,
    latest: &LatestMatrix,
) -> Vec<u8> {
    let compact = query.split('&').any(|kv| kv == "form=compact");
    let now = latest.lock().ok().and_then(|l| l.clone());
    match (now, route) {
        (None, _) => simple(
            404,
            "Not Found",
            "no run has ended yet: /matrix answers after the first\n",
        ),
        (Some(l), "/matrix.json") => ok_with(
            r.method,
            "application/json",
            &cors(r.origin, &l),
            if compact { &l.compact } else { &l.json },
        ),
        (Some(l), _) => {
            let link = match &l.link {
                Link::Permalink(link) => link.clone(),
                Link::Fleet { page } => {
                    let host = r
                        .host
                        .map(str::to_string)
                        .or_else(|| own.map(|a| a.to_string()))
                        .unwrap_or_default();
                    format!(
                        "{page}#matrix={}",
                        encoded(&format!("http://{host}/matrix.json?form=compact"))
                    )
                }
            };
            format!(
                "HTTP/1.1 303 See Other\r\nLocation: {link}\r\nContent-Type: text/plain\r\n\
                 Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{link}\n",
                link.len() + 1,
            )
            .into_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latest(origins: &[&str]) -> Latest {
        Latest {
            json: String::new(),
            link: Link::Fleet {
                page: String::new(),
            },
            compact: String::new(),
            origins: origins.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// The origins a page may read from: an agent's (listed), loopback
    /// ones (a port-forward), none else; `*` any; never a header without
    /// an `Origin`.
    #[test]
    fn cors_names_only_the_pages_that_show_a_matrix() {
        let l = latest(&["http://10.0.0.7:7800", "https://page.example"]);
        let allowed = |o: &str| cors(Some(o), &l).contains("Access-Control-Allow-Origin");
        assert!(allowed("http://10.0.0.7:7800"));
        assert!(allowed("https://page.example"));
        assert!(allowed("http://localhost:7800"));
        assert!(allowed("http://127.0.0.1:9"));
        assert!(allowed("http://[::1]:7800"));
        assert!(!allowed("http://10.0.0.8:7800"));
        assert!(!allowed("http://localhost.evil.example"));
        assert!(!allowed("null"));
        assert_eq!(cors(None, &l), "");
        assert_eq!(
            cors(Some("http://10.0.0.7:7800"), &l),
            "Access-Control-Allow-Origin: http://10.0.0.7:7800\r\nVary: Origin\r\n"
        );
        let any = latest(&["*"]);
        assert_eq!(
            cors(Some("https://x.example"), &any),
            "Access-Control-Allow-Origin: *\r\n"
        );
        assert_eq!(
            encoded("http://h:1/matrix.json?form=compact"),
            "http%3A%2F%2Fh%3A1%2Fmatrix.json%3Fform%3Dcompact"
        );
    }
}
