//! HTTP request heads, as the agent reads them from anyone who connects to
//! its port: `server::parse_head` (httparse, the size limit, routing, the
//! `Host` check) and, for an upgrade it lets through, the WebSocket
//! handshake with the agent's origin check (tungstenite over an in-memory
//! stream). Every answer is a well-formed HTTP response, and an upgrade is
//! accepted only from the agent's own origin or an allowed one.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_agent::endpoint::names::host_key;
use meshperf_agent::serve::server::{parse_head, Guard, Head, OriginCheck};
use std::io::{self, Cursor, Read, Write};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const MAX_HEAD: usize = 16 * 1024;

/// The request bytes in, the response out.
struct Mem {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Mem {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Mem {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn guard() -> Arc<Guard> {
    static G: OnceLock<Arc<Guard>> = OnceLock::new();
    G.get_or_init(|| {
        Arc::new(Guard {
            max_connections: 256,
            max_per_source: 32,
            head_timeout: Duration::from_secs(10),
            auth_timeout: Duration::from_secs(10),
            hosts: ["127.0.0.1", "localhost", "::1", "node1.example.net"]
                .map(host_key)
                .to_vec(),
            origins: vec!["http://127.0.0.1:7801".into()],
            // Plain HTTP: the TLS layer is rustls's, fuzzed upstream; the
            // head parsing behind it is the same code.
            tls: None,
        })
    })
    .clone()
}

/// The status code of a complete response head.
fn status(resp: &[u8]) -> u16 {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(resp) {
        Ok(httparse::Status::Complete(_)) => r.code.expect("a parsed response has a code"),
        other => panic!(
            "not a whole HTTP response ({other:?}): {:?}",
            String::from_utf8_lossy(resp)
        ),
    }
}

/// The request's first header `name`, as text.
fn header(data: &[u8], name: &str) -> Option<String> {
    let mut headers = [httparse::EMPTY_HEADER; 48];
    let mut r = httparse::Request::new(&mut headers);
    r.parse(data).ok()?;
    let h = r
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))?;
    Some(String::from_utf8_lossy(h.value).into_owned())
}

fuzz_target!(|data: &[u8]| {
    let g = guard();
    match parse_head(data, &g.hosts) {
        Head::Partial => assert!(data.len() <= MAX_HEAD, "{} bytes still partial", data.len()),
        Head::Respond(resp) => {
            let code = status(&resp);
            assert!(
                [200, 400, 404, 405, 421, 431].contains(&code),
                "status {code}"
            );
        }
        Head::Upgrade => {
            let host = header(data, "host").expect("an upgrade has a Host");
            assert!(
                g.hosts.contains(&host_key(&host)),
                "Host {host:?} let through"
            );
            let origin = header(data, "origin");
            let mem = Mem {
                input: Cursor::new(data.to_vec()),
                output: Vec::new(),
            };
            if let Ok(ws) = tungstenite::accept_hdr(mem, OriginCheck::new(g.clone())) {
                if let Some(o) = origin {
                    let own = format!("http://{}", host.trim());
                    assert!(
                        o == own || g.origins.contains(&o),
                        "origin {o:?} accepted for Host {host:?}"
                    );
                }
                assert_eq!(status(&ws.get_ref().output), 101);
            }
        }
    }
});
