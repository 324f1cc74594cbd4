//! A blocking controller connection to one agent, speaking the same control
//! protocol as the web app. One thread serves two agents: [`Ctl::try_poll`]
//! drains a connection without waiting and [`wait_any`] sleeps until either
//! has more (a request's own reply is read with a short socket timeout).

use super::pin::{self, CtlStream};
use meshperf_protocol::frame::{self, FrameHeader};
use serde_json::{json, Value};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// Why a controller could not use an agent.
#[derive(Debug)]
pub enum CtlError {
    /// The URL is not what an agent prints.
    Usage(String),
    /// The agent refused the token.
    Auth(String),
    /// The agent could not be reached or went away.
    Io(String),
}

/// An agent address as printed by `meshperf agent`.
#[derive(Debug, Clone)]
pub struct AgentUrl {
    pub host: String,
    pub port: u16,
    pub token: String,
    /// For an https URL: the SHA-256 of the agent's certificate (`fp=`),
    /// the one certificate trusted.
    pub fp: Option<[u8; 32]>,
    /// For an https URL without `fp=` (or `dns:NAME#tls`): the certificate
    /// is checked against the system's trusted roots (`SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` honoured) and must name this host.
    pub verify_name: Option<String>,
}

impl AgentUrl {
    /// Parses `http://HOST:PORT/#token=T`, `https://HOST:PORT/#token=T&fp=HEX`
    /// (the certificate pinned) or `https://HOST:PORT/#token=T` (checked
    /// against the system's trusted roots, naming HOST).
    pub fn parse(url: &str) -> Result<AgentUrl, CtlError> {
        let bad = || {
            CtlError::Usage(format!("--agent {url}: expected the URL the agent printed, like http://127.0.0.1:7800/#token=... or https://127.0.0.1:7800/#token=...&fp=..."))
        };
        let (tls, rest) = match url.strip_prefix("https://") {
            Some(rest) => (true, rest),
            None => (false, url.strip_prefix("http://").ok_or_else(bad)?),
        };
        let no_token = || {
            CtlError::Usage(format!("--agent {url}: no token: give the whole URL the agent printed, with its #token=..."))
        };
        let (hostport, frag) = rest.split_once('#').ok_or_else(no_token)?;
        let hostport = hostport.trim_end_matches('/');
        let (host, port) = hostport.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let token = frag
            .split('&')
            .find_map(|kv| kv.strip_prefix("token="))
            .filter(|t| !t.is_empty())
            .ok_or_else(no_token)?
            .to_string();
        let fp = match frag.split('&').find_map(|kv| kv.strip_prefix("fp=")) {
            Some(_) if !tls => {
                return Err(CtlError::Usage(format!(
                    "--agent {url}: fp= pins a certificate, which only an https URL has"
                )))
            }
            None => None,
            Some(f) => Some(pin::parse_fp(f).ok_or_else(|| {
                CtlError::Usage(format!(
                    "--agent {url}: fp={f} is not a SHA-256 fingerprint (64 hex digits)"
                ))
            })?),
        };
        Ok(AgentUrl {
            verify_name: (tls && fp.is_none()).then(|| host.clone()),
            host,
            port,
            token,
            fp,
        })
    }

    /// The agent speaks https and wss.
    pub fn tls(&self) -> bool {
        self.fp.is_some() || self.verify_name.is_some()
    }

    pub fn hostport(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// An event or sample frame received from an agent.
pub enum Incoming {
    Event(Value),
    Frame(FrameHeader, Vec<u64>),
}

/// Bytes a controller's connection reads at most per call: tungstenite's
/// default read buffer.
pub const READ_CHUNK: usize = 128 * 1024;
/// The same for a monitor's connections (see [`Ctl::connect_reading`]).
pub const LEAN_READ_CHUNK: usize = 16 * 1024;

/// How long a controller keeps trying to authenticate while an agent
/// answers `auth_blocked` (its address is throttled and the places to wait
/// are taken): the throttle's window.
pub const AUTH_PATIENCE: Duration = Duration::from_secs(60);
/// How long a controller waits for the answer to its `auth`: a throttled
/// address's is answered at its turn, within the agent's `--auth-timeout`
/// (10 s by default) of `hello`.
const AUTH_REPLY: Duration = Duration::from_secs(15);

/// When to try again after `auth_blocked` with `message` ("... retry in N
/// s"): N seconds (1 to 10), else 2.
fn retry_in(message: &str) -> Duration {
    message
        .rsplit_once("retry in ")
        .and_then(|(_, n)| n.split(' ').next()?.parse::<f64>().ok())
        .filter(|n| n.is_finite())
        .map_or(Duration::from_secs(2), |n| {
            Duration::from_secs_f64(n.clamp(1.0, 10.0))
        })
}

/// An authenticated connection to one agent.
pub struct Ctl {
    ws: WebSocket<CtlStream>,
    /// The agent's info, from `auth_ok` (before auth `hello` has only `protocol`).
    pub hello: Value,
    /// The protocol version spoken with this agent: the highest both speak.
    pub protocol: u32,
    pub addr: AgentUrl,
    next_id: u64,
}

fn io(addr: &AgentUrl, what: impl std::fmt::Display) -> CtlError {
    CtlError::Io(format!("agent {}: {what}", addr.hostport()))
}

impl Ctl {
    /// Connects, reads `hello` (the protocol version), authenticates; `hello`
    /// then holds what `auth_ok` told about the agent (its `info`).
    pub fn connect(addr: &AgentUrl) -> Result<Ctl, CtlError> {
        Ctl::connect_reading(addr, READ_CHUNK)
    }

    /// [`Ctl::connect`] reading at most `chunk` bytes a call: the read
    /// buffer each connection holds from its first message on (a larger
    /// message still comes whole; the buffer grows for it). `meshperf run`
    /// reads [`READ_CHUNK`] (tungstenite's default: sample frames in few
    /// calls); a monitor, holding a connection to each of a fleet's agents
    /// at once, [`LEAN_READ_CHUNK`] (1000 agents: 16 MB of buffers, not 131).
    ///
    /// An agent whose throttled address has no place left for this `auth`
    /// to wait its turn answers `auth_blocked`, saying when to try again
    /// ("retry in N s"): the controller waits that long and tries again,
    /// for up to [`AUTH_PATIENCE`] in all.
    pub fn connect_reading(addr: &AgentUrl, chunk: usize) -> Result<Ctl, CtlError> {
        let give_up = Instant::now() + AUTH_PATIENCE;
        loop {
            match Ctl::connect_once(addr, chunk)? {
                Ok(c) => return Ok(c),
                Err(why) => {
                    let wait = retry_in(&why);
                    if Instant::now() + wait > give_up {
                        return Err(CtlError::Auth(format!(
                            "agent {}: authentication refused for {} s: {}",
                            addr.hostport(),
                            AUTH_PATIENCE.as_secs(),
                            crate::log::one_line(&why)
                        )));
                    }
                    std::thread::sleep(wait);
                }
            }
        }
    }

    /// One try of [`Ctl::connect_reading`]: `Ok(Err(message))` when the
    /// agent answered `auth_blocked`.
    fn connect_once(addr: &AgentUrl, chunk: usize) -> Result<Result<Ctl, String>, CtlError> {
        let sa = (addr.host.as_str(), addr.port)
            .to_socket_addrs()
            .map_err(|e| io(addr, format!("cannot resolve: {e}")))?
            .next()
            .ok_or_else(|| io(addr, "no address"))?;
        let stream = TcpStream::connect_timeout(&sa, Duration::from_secs(5))
            .map_err(|e| io(addr, format!("unreachable ({e})")))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| io(addr, e))?;
        let _ = stream.set_nodelay(true);
        let trust = match (addr.fp, &addr.verify_name) {
            (Some(fp), _) => Some((pin::client_config(fp), addr.host.as_str())),
            (None, Some(name)) => {
                Some((pin::roots_config().map_err(|e| io(addr, e))?, name.as_str()))
            }
            (None, None) => None,
        };
        let (stream, url) = match trust {
            None => (
                CtlStream::Plain(stream),
                format!("ws://{}/ws", addr.hostport()),
            ),
            Some((cfg, name)) => {
                let tls = pin::handshake(cfg, name, stream)
                    .map_err(|e| io(addr, format!("TLS handshake failed: {e}")))?;
                (
                    CtlStream::Tls(Box::new(tls)),
                    format!("wss://{}/ws", addr.hostport()),
                )
            }
        };
        let config = tungstenite::protocol::WebSocketConfig::default().read_buffer_size(chunk);
        let (ws, _) = tungstenite::client::client_with_config(url.as_str(), stream, Some(config))
            .map_err(|e| {
            // The agent says in the body why it refused (e.g. that it
            // speaks TLS only): that is the line worth showing.
            let why = match &e {
                tungstenite::HandshakeError::Failure(tungstenite::Error::Http(r)) => r
                    .body()
                    .as_deref()
                    .map(|b| String::from_utf8_lossy(b).trim().to_string())
                    .filter(|b| !b.is_empty())
                    .map(|b| format!("{}: {b}", r.status())),
                _ => None,
            };
            io(
                addr,
                format!(
                    "WebSocket handshake failed: {}",
                    why.unwrap_or(e.to_string())
                ),
            )
        })?;
        let mut c = Ctl {
            ws,
            hello: Value::Null,
            protocol: 0,
            addr: addr.clone(),
            next_id: 1,
        };
        let hello = c
            .read_event(Duration::from_secs(5))?
            .ok_or_else(|| io(addr, "no hello"))?;
        if hello["type"] != "hello" {
            return Err(io(addr, format!("sent {hello} first, not a hello")));
        }
        // The highest version both speak (an agent before protocol_max
        // speaks one); the agent is told which in auth.
        let lo = hello["protocol"]
            .as_u64()
            .and_then(|v| u32::try_from(v).ok());
        let hi = match &hello["protocol_max"] {
            Value::Null => lo,
            v => v.as_u64().and_then(|v| u32::try_from(v).ok()),
        };
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(io(
                addr,
                format!("sent a hello without a protocol version: {hello}"),
            ));
        };
        let ours = (
            meshperf_protocol::PROTOCOL_VERSION,
            meshperf_protocol::PROTOCOL_MAX,
        );
        let who = format!("agent {}", addr.hostport());
        let protocol =
            meshperf_protocol::common_protocol(ours, (lo, hi), &who).map_err(CtlError::Io)?;
        c.protocol = protocol;
        // A throttled address's auth is answered at its turn, within the
        // agent's --auth-timeout (10 s by default) of hello. Agents before
        // the version in auth speak only theirs (the one common).
        let mut auth = json!({"type": "auth", "token": addr.token});
        if hello["protocol_max"] != Value::Null {
            auth["protocol"] = json!(protocol);
        }
        let r = c.request_within(auth, AUTH_REPLY, None, &mut |_| {})?;
        if r["code"] == "auth_blocked" {
            return Ok(Err(r["message"].as_str().unwrap_or("").to_string()));
        }
        if r["type"] != "auth_ok" {
            let why = if r["code"] == "auth_failed" {
                "authentication failed: it has another token (check #token= in --agent, --token-file or MESHPERF_TOKEN)".to_string()
            } else {
                format!(
                    "authentication refused: {}",
                    r["message"].as_str().unwrap_or("?")
                )
            };
            return Err(CtlError::Auth(format!("agent {}: {why}", addr.hostport())));
        }
        // The agent describes itself only to a controller with the token.
        c.hello = r["info"].clone();
        c.ws.get_ref()
            .tcp()
            .set_read_timeout(Some(Duration::from_millis(10)))
            .map_err(|e| io(addr, e))?;
        Ok(Ok(c))
    }

    /// Sends a request and waits for its reply; other traffic goes to `other`.
    pub fn request(
        &mut self,
        v: Value,
        other: &mut dyn FnMut(Incoming),
    ) -> Result<Value, CtlError> {
        self.request_within(v, Duration::from_secs(10), None, other)
    }

    /// [`Ctl::request`] for a `prepare` or `start`, which may wait in the
    /// agent's queue: once `stop` is set (Ctrl-C) a waiting request is
    /// cancelled, so it leaves the queue and its reply (`cancelled`) comes
    /// at once rather than at its turn.
    pub fn request_or_leave(
        &mut self,
        v: Value,
        stop: &std::sync::atomic::AtomicBool,
        other: &mut dyn FnMut(Incoming),
    ) -> Result<Value, CtlError> {
        self.request_within(v, Duration::from_secs(10), Some(stop), other)
    }

    /// [`Ctl::request`] waiting `within` for the reply.
    fn request_within(
        &mut self,
        mut v: Value,
        within: Duration,
        stop: Option<&std::sync::atomic::AtomicBool>,
        other: &mut dyn FnMut(Incoming),
    ) -> Result<Value, CtlError> {
        let id = self.next_id;
        self.next_id += 1;
        v["id"] = json!(id);
        self.ws
            .send(Message::text(v.to_string()))
            .map_err(|e| io(&self.addr, format!("went away ({e})")))?;
        let mut deadline = Instant::now() + within;
        let test_id = v.get("test_id").cloned();
        let (mut queued, mut left) = (false, false);
        loop {
            let stopping = stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
            if queued && stopping && !left {
                left = true;
                if let Some(t) = test_id.as_ref().and_then(Value::as_u64) {
                    self.cancel(t as u32);
                }
            }
            match self.poll()? {
                Some(Incoming::Event(e)) if e["id"] == json!(id) => return Ok(e),
                Some(Incoming::Event(e))
                    if e["type"] == "queued" && test_id.as_ref() == Some(&e["test_id"]) =>
                {
                    // The request waits in the agent's queue (issue 42): its
                    // reply comes at its turn; the agent says so each second.
                    deadline = Instant::now() + within;
                    queued = true;
                    other(Incoming::Event(e));
                }
                Some(x) => other(x),
                None if Instant::now() > deadline => {
                    return Err(io(
                        &self.addr,
                        format!("no reply within {} s", within.as_secs()),
                    ))
                }
                None => {}
            }
        }
    }

    fn read_event(&mut self, within: Duration) -> Result<Option<Value>, CtlError> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(Incoming::Event(e)) = self.poll()? {
                return Ok(Some(e));
            }
        }
        Ok(None)
    }

    /// One message if one arrives within the socket's read timeout.
    pub fn poll(&mut self) -> Result<Option<Incoming>, CtlError> {
        match self.ws.read() {
            // Whatever an agent says is printed escaped (crate::log): a
            // message cannot add a line, move the cursor or reorder text.
            Ok(Message::Text(t)) => serde_json::from_str(t.as_str())
                .map(|v| Some(Incoming::Event(crate::log::escape_json(v))))
                .map_err(|e| io(&self.addr, format!("bad message: {e}"))),
            Ok(Message::Binary(b)) => {
                let (h, v) = frame::decode(&b).map_err(|e| io(&self.addr, e))?;
                Ok(Some(Incoming::Frame(h, v)))
            }
            // The agent's reason for closing (a limit it enforces, e.g. a
            // result too large to queue) is the line to print, not the
            // "closed normally" of the read after it.
            Ok(Message::Close(Some(f))) if !f.reason.is_empty() => Err(io(
                &self.addr,
                format!("closed the connection: {}", crate::log::one_line(&f.reason)),
            )),
            Ok(_) => Ok(None),
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(io(&self.addr, format!("went away ({e})"))),
        }
    }

    /// One message if one is already here (in the socket or read and
    /// buffered), without waiting.
    pub fn try_poll(&mut self) -> Result<Option<Incoming>, CtlError> {
        self.nonblocking(true)?;
        let r = self.poll();
        self.nonblocking(false)?;
        r
    }

    fn nonblocking(&mut self, on: bool) -> Result<(), CtlError> {
        self.ws
            .get_ref()
            .tcp()
            .set_nonblocking(on)
            .map_err(|e| io(&self.addr, e))
    }

    /// Asks the agent to cancel a test (best effort).
    pub fn cancel(&mut self, test_id: u32) {
        let _ = self.ws.send(Message::text(
            json!({"type": "cancel", "id": 0, "test_id": test_id}).to_string(),
        ));
    }
}

/// Waits until one of `ctls` has something to read, at most `wait`. Drain
/// each with [`Ctl::try_poll`] first: what a connection has already buffered
/// does not wake this.
pub fn wait_any(ctls: &[&Ctl], wait: Duration) {
    let socks: Vec<_> = ctls
        .iter()
        .map(|c| crate::platform::raw(c.ws.get_ref().tcp()))
        .collect();
    crate::platform::wait_any(&socks, wait);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_blocked_says_when_to_try_again() {
        let s = Duration::from_secs;
        assert_eq!(retry_in("… one per 2 s, 4 at most …; retry in 2 s"), s(2));
        assert_eq!(retry_in("retry in 7 s"), s(7));
        // Bounded, and a message without it means the throttle's turn.
        assert_eq!(retry_in("retry in 0 s"), s(1));
        assert_eq!(retry_in("retry in 9999 s"), s(10));
        assert_eq!(retry_in("retry in NaN s"), s(2));
        assert_eq!(retry_in("refused for a while"), s(2));
    }

    #[test]
    fn parses_printed_urls() {
        let a = AgentUrl::parse("http://127.0.0.1:7800/#token=abc123").unwrap();
        assert_eq!(
            (a.host.as_str(), a.port, a.token.as_str()),
            ("127.0.0.1", 7800, "abc123")
        );
        let b = AgentUrl::parse("http://[::1]:9/#token=t&agent2=x").unwrap();
        assert_eq!(
            (b.host.as_str(), b.hostport()),
            ("::1", "[::1]:9".to_string())
        );
        assert!(matches!(
            AgentUrl::parse("127.0.0.1:7800"),
            Err(CtlError::Usage(_))
        ));
        assert!(matches!(
            AgentUrl::parse("http://h:1/#x=1"),
            Err(CtlError::Usage(_))
        ));
    }

    /// A URL without its token says so (issue 45, item 25), rather than
    /// "expected the URL the agent printed" as for a URL of another shape.
    #[test]
    fn a_url_without_a_token_says_no_token() {
        let text = |u: &str| match AgentUrl::parse(u) {
            Err(CtlError::Usage(m)) => m,
            other => panic!("{u}: {other:?}"),
        };
        for u in [
            "http://127.0.0.1:7800/",
            "http://127.0.0.1:7800/#",
            "http://h:1/#x=1",
            "http://h:1/#token=",
        ] {
            assert!(text(u).contains(": no token: "), "{u}: {}", text(u));
        }
        assert!(text("127.0.0.1:7800").contains("expected the URL the agent printed"));
        assert!(text("http://h/#token=a").contains("expected the URL the agent printed"));
    }
}
