//! The small HTTP endpoints beside the control port: the agent's `--metrics`
//! and `meshperf monitor`'s (`/metrics`, `/healthz`, `/matrix`). They answer
//! scrapers, so they are simple: one thread accepts, each connection gets a
//! thread of its own, the request head is read, one answer written, the
//! connection closed. They are also reachable by anyone who can reach the
//! port (a DaemonSet serves metrics on 0.0.0.0), so the control port's
//! protections apply here too:
//!
//! * a whole-request deadline ([`Limits::head_deadline`]), not one per read:
//!   a client that sends a byte every few seconds is closed when it runs out;
//! * at most [`Limits::max_per_source`] connections from one address: a new
//!   one past that closes that address's oldest connection still sending its
//!   request (so a slow client cannot hold a scraper from its own address
//!   out, nor one address everybody else);
//! * at most [`Limits::max_connections`] in all: past that the oldest
//!   connection still sending its request, from the address holding the
//!   most, is closed (refused only when every one is being answered);
//! * `Host`, when given, must be an address or one of the names the server
//!   answers to (DNS rebinding: a page from a name that now points here
//!   reads nothing), and only once.
//!
//! Beside the server: [`answer`], the answers every HTTP server of the
//! binary writes (the agent's port too); [`names`], the names a server
//! answers to ([`names::host_key`], the agent's WebSocket checks them too).

pub mod answer;
pub mod names;

pub use answer::{method_refused, ok, ok_with, simple};
use names::host_key;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest request head read.
const MAX_HEAD: usize = 8192;

/// Caps and deadlines of an endpoint.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections held at once.
    pub max_connections: usize,
    /// Connections held at once from one address.
    pub max_per_source: usize,
    /// From accepting a connection to its whole request head.
    pub head_deadline: Duration,
    /// For the answer to be taken.
    pub write_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            max_per_source: 4,
            head_deadline: Duration::from_secs(2),
            write_deadline: Duration::from_secs(5),
        }
    }
}

/// What a request asked, once its head is complete and its `Host` allowed.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The `Host` it was sent to (already allowed), if given.
    pub host: Option<&'a str>,
    /// The `Origin` of the page that sent it (a browser's cross-origin
    /// fetch), if given.
    pub origin: Option<&'a str>,
}

/// One connection the endpoint holds.
struct Open {
    id: u64,
    ip: IpAddr,
    opened: Instant,
    /// A handle on the same socket: shut down to close it from here.
    sock: TcpStream,
    /// Its head is complete: it is being answered and is not closed early.
    answering: Arc<AtomicBool>,
}

#[derive(Default)]
struct Table {
    open: Vec<Open>,
    next: u64,
}

impl Table {
    /// Closes the oldest connection still sending its request among those
    /// `which` picks; false when there is none.
    fn close_oldest_reading(&mut self, which: impl Fn(&Open) -> bool) -> bool {
        let oldest = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, o)| which(o) && !o.answering.load(Ordering::Acquire))
            .min_by_key(|(_, o)| o.opened)
            .map(|(i, _)| i);
        match oldest {
            Some(i) => {
                let o = self.open.swap_remove(i);
                let _ = o.sock.shutdown(std::net::Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// The address holding the most connections.
    fn busiest(&self) -> Option<IpAddr> {
        let mut counts: Vec<(IpAddr, usize)> = Vec::new();
        for o in &self.open {
            match counts.iter_mut().find(|(ip, _)| *ip == o.ip) {
                Some((_, n)) => *n += 1,
                None => counts.push((o.ip, 1)),
            }
        }
        counts.into_iter().max_by_key(|(_, n)| *n).map(|(ip, _)| ip)
    }

    /// Makes room for a connection from `ip`; false when there is none.
    fn admit(&mut self, ip: IpAddr, limits: &Limits) -> bool {
        let here = self.open.iter().filter(|o| o.ip == ip).count();
        if here >= limits.max_per_source && !self.close_oldest_reading(|o| o.ip == ip) {
            return false;
        }
        if self.open.len() >= limits.max_connections {
            let busiest = self.busiest();
            if !self.close_oldest_reading(|o| Some(o.ip) == busiest)
                && !self.close_oldest_reading(|_| true)
            {
                return false;
            }
        }
        true
    }
}

/// Serves `answer`'s responses on `listener` until the process ends: `names`
/// are the host names (as [`host_key`]s) the endpoint answers to besides
/// addresses, `who` names the server in its refusals.
pub fn spawn<A>(
    listener: TcpListener,
    who: &'static str,
    names: Vec<String>,
    limits: Limits,
    answer: A,
) where
    A: Fn(&Request) -> Vec<u8> + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    let names = Arc::new(names);
    let table = Arc::new(Mutex::new(Table::default()));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let conn = match conn {
                Ok(c) => c,
                // Out of descriptors and the like: accepting again at once
                // would spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            let ip = conn
                .peer_addr()
                .map(|a| a.ip().to_canonical())
                .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            let answering = Arc::new(AtomicBool::new(false));
            let id = {
                let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
                if !t.admit(ip, &limits) {
                    let _ = (&conn).write(&simple(
                        503,
                        "Service Unavailable",
                        &format!("{who}: too many connections; try again later\n"),
                    ));
                    continue;
                }
                let Ok(sock) = conn.try_clone() else { continue };
                let id = t.next;
                t.next += 1;
                t.open.push(Open {
                    id,
                    ip,
                    opened: Instant::now(),
                    sock,
                    answering: answering.clone(),
                });
                id
            };
            let (answer, names, table, limits) =
                (answer.clone(), names.clone(), table.clone(), limits.clone());
            std::thread::spawn(move || {
                let _ = serve(conn, who, &names, &limits, &answering, &*answer);
                let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
                t.open.retain(|o| o.id != id);
            });
        }
    });
}

fn serve(
    mut conn: TcpStream,
    who: &str,
    names: &[String],
    limits: &Limits,
    answering: &AtomicBool,
    answer: &dyn Fn(&Request) -> Vec<u8>,
) -> std::io::Result<()> {
    let deadline = Instant::now() + limits.head_deadline;
    conn.set_write_timeout(Some(limits.write_deadline))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return conn.write_all(&simple(
                408,
                "Request Timeout",
                &format!(
                    "{who}: the request took longer than {:?}\n",
                    limits.head_deadline
                ),
            ));
        }
        conn.set_read_timeout(Some(left))?;
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                answering.store(true, Ordering::Release);
                let hosts: Vec<&[u8]> = req
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case("host"))
                    .map(|h| h.value)
                    .collect();
                let origin = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("origin"))
                    .and_then(|h| std::str::from_utf8(h.value).ok());
                let out = match hosts[..] {
                    [] => None,
                    [h] => host_refused(&String::from_utf8_lossy(h), who, names),
                    _ => Some(simple(400, "Bad Request", "more than one Host header\n")),
                }
                .unwrap_or_else(|| {
                    answer(&Request {
                        method: req.method.unwrap_or(""),
                        path: req.path.unwrap_or(""),
                        host: hosts.first().and_then(|h| std::str::from_utf8(h).ok()),
                        origin,
                    })
                });
                return conn.write_all(&out);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => continue,
            _ => return conn.write_all(&simple(400, "Bad Request", "bad request\n")),
        }
    }
}

/// The refusal of a `Host` that is neither an address nor one of `names`.
fn host_refused(host: &str, who: &str, names: &[String]) -> Option<Vec<u8>> {
    let key = host_key(host);
    if key.parse::<IpAddr>().is_ok() || names.contains(&key) {
        return None;
    }
    Some(simple(
        421,
        "Misdirected Request",
        &format!("Host {key:?} is not a name of this {who}; scrape it by address or by a name it was given\n"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(t: &mut Table, ip: [u8; 4], answering: bool) -> TcpStream {
        // A real socket pair on loopback: shutting the table's handle down
        // must reach the other end.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let id = t.next;
        t.next += 1;
        t.open.push(Open {
            id,
            ip: IpAddr::from(ip),
            opened: Instant::now(),
            sock: server,
            answering: Arc::new(AtomicBool::new(answering)),
        });
        std::thread::sleep(Duration::from_millis(2));
        client
    }

    fn closed(mut c: &TcpStream) -> bool {
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        matches!(c.read(&mut [0u8; 1]), Ok(0))
    }

    #[test]
    fn a_full_source_closes_its_own_oldest_reader_not_others() {
        let limits = Limits {
            max_connections: 8,
            max_per_source: 2,
            ..Limits::default()
        };
        let mut t = Table::default();
        let other = open(&mut t, [10, 0, 0, 9], false);
        let first = open(&mut t, [10, 0, 0, 1], false);
        let second = open(&mut t, [10, 0, 0, 1], false);
        assert!(t.admit(IpAddr::from([10, 0, 0, 1]), &limits));
        assert!(closed(&first), "the source's oldest reader is closed");
        assert_eq!(t.open.len(), 2);
        assert!(t.open.iter().any(|o| o.ip == IpAddr::from([10, 0, 0, 9])));
        drop((other, second));
    }

    #[test]
    fn connections_being_answered_are_never_closed_early() {
        let limits = Limits {
            max_connections: 2,
            max_per_source: 2,
            ..Limits::default()
        };
        let mut t = Table::default();
        let _a = open(&mut t, [10, 0, 0, 1], true);
        let _b = open(&mut t, [10, 0, 0, 1], true);
        assert!(!t.admit(IpAddr::from([10, 0, 0, 1]), &limits));
        assert!(!t.admit(IpAddr::from([10, 0, 0, 2]), &limits));
        assert_eq!(t.open.len(), 2);
    }

    #[test]
    fn a_full_endpoint_closes_a_reader_of_the_busiest_address() {
        let limits = Limits {
            max_connections: 3,
            max_per_source: 3,
            ..Limits::default()
        };
        let mut t = Table::default();
        let lone = open(&mut t, [10, 0, 0, 7], false); // the oldest of all
        let busy1 = open(&mut t, [10, 0, 0, 1], false);
        let _busy2 = open(&mut t, [10, 0, 0, 1], false);
        assert!(t.admit(IpAddr::from([10, 0, 0, 3]), &limits));
        assert!(closed(&busy1));
        assert!(t.open.iter().any(|o| o.ip == IpAddr::from([10, 0, 0, 7])));
        drop(lone);
    }

    #[test]
    fn hosts_are_addresses_or_given_names() {
        let names = vec!["node-1".to_string(), "localhost".to_string()];
        assert!(host_refused("10.1.2.3:9465", "meshperf agent", &names).is_none());
        assert!(host_refused("[::1]:9465", "meshperf agent", &names).is_none());
        assert!(host_refused("NODE-1:9465", "meshperf agent", &names).is_none());
        let r = host_refused("evil.example:9465", "meshperf agent", &names).unwrap();
        assert!(String::from_utf8_lossy(&r).starts_with("HTTP/1.1 421"));
        // Nothing but `:PORT` after the `]` (issue 40).
        let r = host_refused("[::1]@evil.example", "meshperf agent", &names).unwrap();
        assert!(String::from_utf8_lossy(&r).starts_with("HTTP/1.1 421"));
    }
}
