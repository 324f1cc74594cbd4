//! Test helpers: real agent processes and a blocking WebSocket controller.

use meshperf_protocol::frame;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// A running `meshperf agent` on an ephemeral loopback port (127.0.0.1,
/// unless `extra` has its own `--listen`, e.g. `[::1]:0`).
pub struct AgentProc {
    pub child: Child,
    pub port: u16,
    pub token: String,
    /// The host of the agent's ready URL.
    pub host: IpAddr,
    /// The ready URL as printed.
    pub url: String,
    /// With TLS: the certificate's SHA-256 from the URL (`fp=`).
    pub fp: Option<String>,
    /// The agent's stderr record, line by line, if started with
    /// [`AgentProc::start_logged`] (others run with `--quiet`).
    log: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

impl AgentProc {
    pub fn start(extra: &[&str]) -> AgentProc {
        Self::start_env(extra, &[])
    }

    /// Like [`AgentProc::start`] with extra environment variables.
    pub fn start_env(extra: &[&str], env: &[(&str, &str)]) -> AgentProc {
        Self::spawn(extra, env, false, None)
    }

    /// Like [`AgentProc::start`], keeping what the agent writes on stderr
    /// (its record of sessions and tests): see [`AgentProc::log`].
    pub fn start_logged(extra: &[&str]) -> AgentProc {
        Self::spawn(extra, &[], true, None)
    }

    /// Like [`AgentProc::start_logged`] with the open-file limit at `nofile`.
    pub fn start_logged_nofile(extra: &[&str], nofile: u32) -> AgentProc {
        Self::spawn(extra, &[], true, Some(nofile))
    }

    /// A memory figure of the agent's in KiB from /proc/PID/status, e.g.
    /// `VmRSS` (resident now) or `VmHWM` (resident at its peak).
    pub fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"))
    }

    /// Open file descriptors of the agent (/proc/PID/fd).
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }

    /// Threads of the agent (/proc/PID/status `Threads`).
    pub fn threads(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("Threads in /proc/PID/status")
    }

    /// The agent's stderr lines so far.
    pub fn log(&self) -> Vec<String> {
        self.log
            .as_ref()
            .expect("started with start_logged")
            .lock()
            .unwrap()
            .clone()
    }

    /// Like [`AgentProc::start`] with no `MESHPERF_TOKEN`: `extra` gives
    /// the token (e.g. `--token-file PATH`), and the ready URL must carry
    /// `token`.
    pub fn start_token(extra: &[&str], token: &str) -> AgentProc {
        Self::spawn_with(extra, &[], false, None, Some(token))
    }

    fn spawn(extra: &[&str], env: &[(&str, &str)], logged: bool, nofile: Option<u32>) -> AgentProc {
        Self::spawn_with(extra, env, logged, nofile, None)
    }

    fn spawn_with(
        extra: &[&str],
        env: &[(&str, &str)],
        logged: bool,
        nofile: Option<u32>,
        given: Option<&str>,
    ) -> AgentProc {
        let token = given.map(str::to_string).unwrap_or_else(random_token);
        let bin = env!("CARGO_BIN_EXE_meshperf");
        let mut cmd = match nofile {
            None => Command::new(bin),
            Some(n) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), bin]);
                c
            }
        };
        match given {
            None => cmd.env("MESHPERF_TOKEN", &token),
            Some(_) => cmd.env_remove("MESHPERF_TOKEN"),
        };
        let mut child = cmd
            .arg("agent")
            .args(if extra.contains(&"--listen") {
                &[][..]
            } else {
                &["--listen", "127.0.0.1:0"][..]
            })
            .args(extra)
            // MESHPERF_TEST_AGENT_LOG=1 shows every agent's record on stderr.
            .args(
                if logged || std::env::var_os("MESHPERF_TEST_AGENT_LOG").is_some() {
                    &[][..]
                } else {
                    &["--quiet"][..]
                },
            )
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(if logged {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("spawn agent");
        let log = child.stderr.take().map(|e| {
            let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let l = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(e).lines().map_while(Result::ok) {
                    l.lock().unwrap().push(line);
                }
            });
            lines
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let printed = line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .expect("ready line has a URL");
        // A token the agent was given is never printed (issue 22): the URL
        // to open is the printed one with the token put in front.
        let (base, frag) = printed.split_once('#').unwrap_or((printed, ""));
        let fp = frag
            .split('&')
            .find_map(|kv| kv.strip_prefix("fp="))
            .map(String::from);
        assert!(
            !line.contains(&token),
            "the given token was printed: {line}"
        );
        assert_eq!(frag.is_empty(), fp.is_none(), "{line}");
        assert_eq!(fp.is_some(), base.starts_with("https://"), "{line}");
        let url = match &fp {
            Some(fp) => format!("{base}#token={token}&fp={fp}"),
            None => format!("{base}#token={token}"),
        };
        let at: SocketAddr = base
            .split("://")
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        AgentProc {
            child,
            port: at.port(),
            token,
            host: at.ip(),
            url,
            fp,
            log,
        }
    }

    pub fn addr(&self) -> String {
        SocketAddr::new(self.host, self.port).to_string()
    }

    pub fn connect(&self) -> Ctl {
        Ctl::connect_at(self.host, self.port, &self.token, None).expect("auth ok")
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token of 128 random bits (the OS's generator), in hex: no two agents
/// of a run share one, as a pid and a clock reading could.
pub fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("random bytes from the OS");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// This test binary's scratch folder, `meshperf-test-PID-RANDOM` in the
/// temp dir, mode 0700 (it holds tokens and TLS keys): made on first use
/// and removed with all it holds when the binary exits, whether its tests
/// passed or panicked (the harness ends with `exit`, which runs `atexit`).
/// Only a killed binary leaves it behind, and a later one never reuses it.
pub fn scratch_root() -> &'static std::path::Path {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove_root() {
        if let Some(root) = ROOT.get() {
            let _ = std::fs::remove_dir_all(root);
        }
    }
    ROOT.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let root = std::env::temp_dir().join(format!(
            "meshperf-test-{}-{}",
            std::process::id(),
            &random_token()[..8]
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&root)
            .expect("scratch folder in the temp dir");
        // SAFETY: registers a plain function with no arguments, once.
        unsafe { libc::atexit(remove_root) };
        root
    })
}

/// A folder of one test's own under [`scratch_root`] (`tag` names it),
/// removed with all it holds when dropped: at the test's end, and on a
/// failed assertion too (the panic unwinds through it). It is the folder's
/// path (`Deref`, `AsRef<Path>`).
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = scratch_root().join(format!("{tag}-{}", &random_token()[..8]));
        std::fs::create_dir(&dir).expect("a test's scratch folder");
        TempDir(dir)
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Says that the calling test could not check all it should here (`why`:
/// no root, say) and went on with what it could: printed, and appended as
/// `TEST: WHY` to the file `$MESHPERF_SKIP_LOG` names, from which `npm test`
/// (scripts/test.sh) counts that test as skipped, not passed. The test's
/// name is its harness thread's.
pub fn skipped(why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string();
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("MESHPERF_SKIP_LOG") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("MESHPERF_SKIP_LOG opens for appending");
        // One write of one line: appends of tests on other threads do not mix.
        f.write_all(format!("{test}: {why}\n").as_bytes())
            .expect("MESHPERF_SKIP_LOG written");
    }
}

/// A decoded sample frame.
pub struct Frame {
    pub header: frame::FrameHeader,
    pub values: Vec<u64>,
}

/// A blocking controller connection.
pub struct Ctl {
    pub ws: WebSocket<TcpStream>,
    /// The agent's info from `auth_ok` (`hello` before auth has only `protocol`).
    pub hello: Value,
    next_id: u64,
    pub events: Vec<Value>,
    pub frames: Vec<Frame>,
}

/// Opens a WebSocket to `/ws` with an optional Origin header.
pub fn open(port: u16, origin: Option<&str>) -> Result<WebSocket<TcpStream>, tungstenite::Error> {
    open_at([127, 0, 0, 1].into(), port, origin)
}

/// Like [`open`] for an agent at `host`.
pub fn open_at(
    host: IpAddr,
    port: u16,
    origin: Option<&str>,
) -> Result<WebSocket<TcpStream>, tungstenite::Error> {
    let at = SocketAddr::new(host, port);
    let stream = TcpStream::connect(at).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut req =
        tungstenite::client::IntoClientRequest::into_client_request(format!("ws://{at}/ws"))
            .unwrap();
    if let Some(o) = origin {
        req.headers_mut().insert("origin", o.parse().unwrap());
    }
    tungstenite::client::client(req, stream)
        .map(|(ws, _)| ws)
        .map_err(|e| match e {
            tungstenite::HandshakeError::Failure(e) => e,
            _ => panic!("blocking handshake interrupted"),
        })
}

impl Ctl {
    pub fn connect(port: u16, token: &str, origin: Option<&str>) -> Result<Ctl, Value> {
        Self::connect_at([127, 0, 0, 1].into(), port, token, origin)
    }

    /// Like [`Ctl::connect`] for an agent at `host`.
    pub fn connect_at(
        host: IpAddr,
        port: u16,
        token: &str,
        origin: Option<&str>,
    ) -> Result<Ctl, Value> {
        let ws = open_at(host, port, origin).expect("websocket");
        let mut c = Ctl {
            ws,
            hello: Value::Null,
            next_id: 1,
            events: Vec::new(),
            frames: Vec::new(),
        };
        let hello = c.next_text();
        assert_eq!(hello["type"], "hello");
        let r = c.request(json!({"type": "auth", "token": token}));
        if r["type"] == "auth_ok" {
            // What the agent tells about itself comes with auth_ok.
            c.hello = r["info"].clone();
            Ok(c)
        } else {
            Err(r)
        }
    }

    /// Next text message; binary frames met on the way are kept.
    pub fn next_text(&mut self) -> Value {
        loop {
            match self.ws.read().expect("read from agent") {
                Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                Message::Binary(b) => {
                    let (header, values) = frame::decode(&b).expect("valid frame");
                    self.frames.push(Frame { header, values });
                }
                _ => {}
            }
        }
    }

    /// Sends a request with a fresh id and waits for the reply with that id.
    pub fn request(&mut self, mut v: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        v["id"] = json!(id);
        self.ws.send(Message::text(v.to_string())).unwrap();
        loop {
            let m = self.next_text();
            if m["id"] == json!(id) {
                return m;
            }
            self.events.push(m);
        }
    }

    /// Waits until this connection got a `result` or an `error` for `test_id`.
    pub fn wait_end(&mut self, test_id: u32) -> Value {
        if let Some(i) = self.events.iter().position(|e| is_end(e, test_id)) {
            return self.events.remove(i);
        }
        loop {
            let m = self.next_text();
            if is_end(&m, test_id) {
                return m;
            }
            self.events.push(m);
        }
    }

    pub fn samples(&self, kind: frame::SampleKind) -> Vec<&Frame> {
        self.frames
            .iter()
            .filter(|f| f.header.kind == kind)
            .collect()
    }
}

fn is_end(m: &Value, test_id: u32) -> bool {
    (m["type"] == "result" || m["type"] == "error") && m["test_id"] == json!(test_id)
}

/// Runs one test: `server` prepares, `client` starts; returns (client end, server end).
pub fn run_pair(
    client: &mut Ctl,
    server: &mut Ctl,
    test_id: u32,
    kind: &str,
    params: Value,
) -> (Value, Value) {
    run_pair_at(client, server, test_id, kind, params, "127.0.0.1")
}

/// [`run_pair`] with the driving agent reaching the server at `host`.
pub fn run_pair_at(
    client: &mut Ctl,
    server: &mut Ctl,
    test_id: u32,
    kind: &str,
    params: Value,
    host: &str,
) -> (Value, Value) {
    let prep = server.request(
        json!({"type": "prepare", "test_id": test_id, "step": 0, "kind": kind, "params": params}),
    );
    assert_eq!(prep["type"], "prepared", "{prep}");
    let start = client.request(json!({
        "type": "start", "test_id": test_id, "step": 0, "kind": kind, "params": params,
        "peer": {"host": host, "port": prep["port"], "key": prep["key"]}
    }));
    assert_eq!(start["type"], "started", "{start}");
    (client.wait_end(test_id), server.wait_end(test_id))
}

/// Polls `a`'s stderr record until a line has every one of `parts`.
pub fn logged(a: &AgentProc, parts: &[&str]) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let log = a.log();
        if let Some(l) = log.iter().find(|l| parts.iter().all(|p| l.contains(p))) {
            return l.clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "no line with {parts:?} in:\n{}",
            log.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The HMAC-SHA256 tag (hex) of `signed` with a session key given in hex,
/// computed here from the crates, not through the agent's code.
pub fn hmac_hex(key_hex: &str, signed: &[u8]) -> String {
    use hmac::Mac;
    let key = meshperf_protocol::peer::parse_key(key_hex).expect("32 hex digits");
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    m.update(signed);
    m.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A driving agent's first line on a data port: `kind` tagged with the
/// session key (docs/protocol.md, "Agent to agent").
pub fn peer_hello(key_hex: &str, kind: &str) -> Value {
    let bare = json!({"kind": kind, "mac": ""});
    let signed = format!("meshperf peer hello\n\n{bare}");
    json!({"kind": kind, "mac": hmac_hex(key_hex, signed.as_bytes())})
}

/// A serving agent's `ok` answer to the hello tagged `hello_mac`, tagged
/// with the session key.
pub fn peer_reply_ok(key_hex: &str, hello_mac: &str) -> Value {
    let bare = json!({"ok": true, "mac": ""});
    let signed = format!("meshperf peer reply\n{hello_mac}\n{bare}");
    json!({"ok": true, "mac": hmac_hex(key_hex, signed.as_bytes())})
}

/// A data connection's preamble for stream `idx` (docs/protocol.md, "Agent
/// to agent"): HMAC-SHA256 with the key over a label and the index, cut to
/// 16 bytes, then the index; computed here from the crates.
pub fn data_preamble(key_hex: &str, idx: u32) -> Vec<u8> {
    let mut signed = b"meshperf data connection\n".to_vec();
    signed.extend_from_slice(&idx.to_le_bytes());
    let mac = hmac_hex(key_hex, &signed);
    let mut p: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&mac[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    p.extend_from_slice(&idx.to_le_bytes());
    p
}

/// A control line after hello and reply: `v`, a tab and its tag (HMAC with
/// the key over the sending side, its number among that side's lines and
/// the JSON), as the `seq`-th line of the driver (`from_driver`) or server.
pub fn sealed(key_hex: &str, from_driver: bool, seq: u64, v: &Value) -> String {
    let who = if from_driver { "driver" } else { "server" };
    let json = v.to_string();
    let signed = format!("meshperf peer line\n{who}\n{seq}\n{json}");
    format!("{json}\t{}", hmac_hex(key_hex, signed.as_bytes()))
}

/// The JSON of a sealed line as read (with or without its newline), its
/// tag checked as the `seq`-th line of the driver (`from_driver`) or server.
pub fn unseal(key_hex: &str, from_driver: bool, seq: u64, line: &str) -> Value {
    let line = line.trim_end_matches('\n');
    let (json, _) = line
        .rsplit_once('\t')
        .unwrap_or_else(|| panic!("no tag: {line:?}"));
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json:?}: {e}"));
    assert_eq!(sealed(key_hex, from_driver, seq, &v), line, "the tag");
    v
}

/// A plain HTTP/1.1 GET of `path` from `hostport`: the response head and
/// body (the server closes the connection after one answer).
pub fn http_get(hostport: &str, path: &str) -> (String, String) {
    http_get_from(hostport, path, None)
}

/// [`http_get`] as a page from `origin` fetches it (its `Origin` header).
pub fn http_get_from(hostport: &str, path: &str, origin: Option<&str>) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(hostport).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\n{origin}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_string(), body.to_string())
}

/// A scraper's view of a small HTTP endpoint (`--metrics`, the monitor's)
/// under slow clients (issue: 16 connections sending a byte every 3 s made
/// every scrape fail): 16 of them from 127.0.0.2 and 16 from 127.0.0.1, the
/// scraper's own address, each trickling a request head a byte every 3 s.
/// Then 5 scrapes of `path` from 127.0.0.1, each answered 200 within 1 s,
/// and every slow client closed by the endpoint (a 408 or the connection
/// ended) within its 2 s request deadline plus 3 s. Also: a `Host` that is
/// a foreign name is refused (421), two `Host`s (400), an address is not.
pub fn scrapes_survive_slow_clients(hostport: &str, path: &str) {
    use std::io::{Read, Write};
    let at: SocketAddr = hostport.parse().unwrap();
    let slow: Vec<_> = (0..32)
        .map(|i| {
            let src = if i % 2 == 0 {
                [127, 0, 0, 2]
            } else {
                [127, 0, 0, 1]
            };
            let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
            std::thread::spawn(move || {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .unwrap();
                s.bind(&SocketAddr::from((src, 0)).into()).unwrap();
                s.connect(&at.into()).unwrap();
                let mut s: TcpStream = s.into();
                let t0 = Instant::now();
                s.set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
                // "GET /metrics HTTP/1.1\r\n..." a byte at a time, 3 s apart,
                // until the endpoint answers or closes.
                for b in req.bytes().take(8) {
                    if s.write_all(&[b]).is_err() {
                        return t0.elapsed();
                    }
                    let until = Instant::now() + Duration::from_secs(3);
                    while Instant::now() < until {
                        match s.read(&mut [0u8; 256]) {
                            Ok(_) => return t0.elapsed(), // 408, or the end
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => return t0.elapsed(), // reset
                        }
                    }
                }
                Duration::MAX // still held after 8 bytes over 24 s
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..5 {
        let t = Instant::now();
        let (head, _) = http_get(hostport, path);
        let took = t.elapsed();
        assert!(
            head.starts_with("HTTP/1.1 200"),
            "scrape {i} under slow clients: {head}"
        );
        assert!(
            took < Duration::from_secs(1),
            "scrape {i} under slow clients took {took:?}"
        );
        std::thread::sleep(Duration::from_millis(400));
    }
    for h in slow {
        let held = h.join().unwrap();
        assert!(
            held < Duration::from_secs(5),
            "a slow client was held {held:?}, past the 2 s request deadline"
        );
    }
    let raw = |req: String| {
        let mut s = TcpStream::connect(hostport).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let r = raw(format!(
        "GET {path} HTTP/1.1\r\nHost: evil.example:{}\r\n\r\n",
        at.port()
    ));
    assert!(
        r.starts_with("HTTP/1.1 421") && r.contains("evil.example"),
        "{r}"
    );
    let r = raw(format!(
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nHost: evil.example\r\n\r\n"
    ));
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    let r = raw(format!("GET {path} HTTP/1.1\r\nHost: 10.9.8.7\r\n\r\n"));
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

/// Waits (at most 15 s, a cancel's wait: a side's thread ends right after its
/// result, ms on an idle host) until
/// `a` holds `want` descriptors; returns what it holds.
pub fn fds_back_to(a: &AgentProc, want: usize) -> usize {
    let t0 = Instant::now();
    loop {
        let n = a.fds();
        if n == want || t0.elapsed() > Duration::from_secs(15) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 21 part 6: a many-flow `kind` (tcp_rr, tcp_crr) of `flows` flows
/// on 2 threads, cancelled 0.4 s in, ends both sides within the 15 s a
/// cancel is waited for (the page's and `run`'s wait; the 20 s test had
/// over 19 s left, so an end before then is the cancel's; 3 s asked a
/// speed of a busy host) (the driving one `cancelled`, the serving one an
/// error) and closes every one of its connections.
pub fn cancelling_many_flows_closes_every_connection(kind: &str, flows: u32) {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let (fa, fb) = (a.fds(), b.fds());
    let p = json!({"duration_s": 20, "flows": flows, "threads": 2});
    let prep =
        ca.request(json!({"type": "prepare", "test_id": 5, "step": 0, "kind": kind, "params": p}));
    cb.request(
        json!({"type": "start", "test_id": 5, "step": 0, "kind": kind,
        "params": p, "peer": {"host": "127.0.0.1", "port": prep["port"], "key": prep["key"]}}),
    );
    std::thread::sleep(Duration::from_millis(400));
    let t0 = Instant::now();
    let r = cb.request(json!({"type": "cancel", "test_id": 5}));
    assert_eq!(r["type"], "cancelled", "{r}");
    let (end_b, end_a) = (cb.wait_end(5), ca.wait_end(5));
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(end_b["code"], "cancelled", "{end_b}");
    assert_eq!(end_a["type"], "error", "{end_a}");
    assert_eq!((fds_back_to(&a, fa), fds_back_to(&b, fb)), (fa, fb));
}

/// The rule a rate-paced `udp_stream` sender keeps, stated once for the
/// tests (`s`: a summary, or one flow of it, asked `rate` bit/s of
/// `pkt_bytes`-byte datagrams for `duration_s`). Its pacer (engine/pace.rs,
/// a token bucket) sends on schedule, never ahead of it; what a stall held
/// up leaves when the sender runs again, up to the bucket's depth (50 ms
/// of datagrams, at most 1 MiB), and the schedule slips by the rest,
/// counted (`schedule_slipped_us`). Under the agent's UDP rate cap it
/// catches up one datagram per floor gap (5 x the rate at 20M of a 100M
/// cap), so stalls that come faster than it catches up leave it behind by
/// up to the bucket's depth (637 of 893 sent once at a load of 12, 95.8 ms
/// slipped, p99 gap 24 ms). A stall that reaches the burst's end (from the
/// last send to the end: `send_seconds` less the send gaps) cuts the burst
/// there. So it sends the schedule (never more), less at most what
/// slipped, the bucket's depth and that last stall, by its own figures.
/// `rate_reached` is what the agent's rule ([`RATE_REACHED`] of the rate
/// over its send time) makes of them. A host that cannot send at the rate
/// falls behind with no slip to show for it and fails here.
///
/// [`RATE_REACHED`]: meshperf_protocol::summary::RATE_REACHED
pub fn paced_at(s: &Value, rate: f64, pkt_bytes: f64, duration_s: f64) {
    let num = |v: &Value| {
        v.as_f64()
            .unwrap_or_else(|| panic!("not a number: {v} in {s}"))
    };
    let sent = num(&s["sent"]);
    let wait_s = pkt_bytes * 8.0 / rate;
    let due = (duration_s / wait_s - 1e-9).ceil();
    let gaps = &s["send_gap_us"];
    let last_s = (num(&s["send_seconds"]) - num(&gaps["mean"]) * num(&gaps["n"]) / 1e6).max(0.0);
    let short = behind_at_most(
        wait_s * 1e9,
        pkt_bytes,
        num(&s["schedule_slipped_us"]),
        last_s * 1e9,
    );
    assert!(sent <= due, "{sent} sent, {due} due: {s}");
    assert!(
        sent >= due - short,
        "{sent} sent of {due} due: short by more than the {short} its slips, bucket and last stall ({} ms) allow: {s}",
        last_s * 1e3
    );
    let bps = num(&s["send_bits_per_second"]);
    assert!(bps <= rate * 1.02, "{bps} b/s, asked {rate}: {s}");
    assert_eq!(
        s["rate_reached"].as_bool(),
        Some(bps >= rate * meshperf_protocol::summary::RATE_REACHED),
        "{s}"
    );
}

/// How many datagrams a paced sender (one every `wait_ns` of `pkt_bytes`)
/// may be behind its schedule by [`paced_at`]'s rule: what its schedule
/// slipped (`slipped_us`), the bucket's depth, and a last stall of
/// `stall_ns` it had no wake-up after, one more for the slot at the end.
pub fn behind_at_most(wait_ns: f64, pkt_bytes: f64, slipped_us: f64, stall_ns: f64) -> f64 {
    let depth = (50e6 / wait_ns)
        .min((1u64 << 20) as f64 / pkt_bytes)
        .ceil()
        .max(1.0);
    (slipped_us * 1e3 / wait_ns).ceil() + depth + (stall_ns / wait_ns).ceil() + 1.0
}

/// The datagrams this host's kernel dropped on their way in, as it counts
/// them: a socket's full receive buffer (`RcvbufErrors` of /proc/net/snmp
/// and `Udp6RcvbufErrors` of /proc/net/snmp6, this network namespace's)
/// and a CPU's full input backlog (`net.core.netdev_max_backlog`, the
/// second column of /proc/net/softnet_stat, any packet, host-wide), where
/// loopback traffic waits for the kernel's receive processing (a host
/// busy with builds held that off for 230 ms once). Unprivileged UDP at a
/// fixed rate may lose datagrams there and only there on loopback: a test
/// takes [`KernelDrops::now`] before its step and holds the loss it
/// measured to [`KernelDrops::since`] of it (0 on a quiet host, so exact
/// there; other tests' drops beside it only add to the allowance).
#[derive(Clone, Copy, Debug)]
pub struct KernelDrops(u64);

impl KernelDrops {
    pub fn now() -> KernelDrops {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let snmp = read("/proc/net/snmp");
        let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
        let rcvbuf = match (udp.next(), udp.next()) {
            (Some(h), Some(v)) => h
                .split_whitespace()
                .zip(v.split_whitespace())
                .find(|(k, _)| *k == "RcvbufErrors")
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0),
            _ => 0,
        };
        let rcvbuf6: u64 = read("/proc/net/snmp6")
            .lines()
            .find_map(|l| l.strip_prefix("Udp6RcvbufErrors"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let backlog: u64 = read("/proc/net/softnet_stat")
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter_map(|d| u64::from_str_radix(d, 16).ok())
            .sum();
        KernelDrops(rcvbuf + rcvbuf6 + backlog)
    }

    /// What the kernel dropped since `self` was taken.
    pub fn since(self) -> u64 {
        KernelDrops::now().0.saturating_sub(self.0)
    }
}

/// A udp_stream summary (or one flow of it) `s` that counted every
/// datagram sent as received or lost, and lost no more than the kernel
/// dropped since `before` (see [`KernelDrops`]).
pub fn lost_to_the_kernel(s: &Value, before: KernelDrops) {
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("no {k} in {s}"));
    assert_eq!(n("received") + n("lost"), n("sent"), "{s}");
    let dropped = before.since();
    assert!(
        n("lost") <= dropped,
        "{} lost, the kernel dropped {dropped} on the way in meanwhile: {s}",
        n("lost")
    );
}

/// The tests that time things (rates, schedules, CPU shares, probe
/// counts) run one at a time, each holding this while it runs: two of
/// them side by side on a 2-CPU host take each other's CPU (a flat-out
/// udp_stream's senders spin at nice -20 for seconds; a paced test beside
/// one missed its rate by 6%). Other tests still run beside them.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fake agent on 127.0.0.1 that sends `hello`, answers `auth` with
/// `auth_ok` and `info` (a real agent's, altered) and refuses every other
/// request with `bad_params` and `message`; every message it was sent is
/// kept, in order, in the list returned with its port.
pub fn fake_agent(
    hello: Value,
    info: Value,
    message: &'static str,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = got.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (hello, info, got) = (hello.clone(), info.clone(), got.clone());
            std::thread::spawn(move || {
                let Ok(mut ws) = tungstenite::accept(s) else {
                    return;
                };
                let _ = ws.send(Message::text(hello.to_string()));
                while let Ok(m) = ws.read() {
                    let Message::Text(t) = m else { continue };
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    got.lock().unwrap().push(v.clone());
                    let reply = if v["type"] == "auth" {
                        json!({"type": "auth_ok", "id": v["id"], "info": info})
                    } else {
                        json!({"type": "error", "id": v["id"], "test_id": v["test_id"],
                               "code": "bad_params", "message": message})
                    };
                    if ws.send(Message::text(reply.to_string())).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, kept)
}
