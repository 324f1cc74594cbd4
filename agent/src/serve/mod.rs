//! `meshperf agent`: parses its flags, prints the ready-to-open URL and runs
//! the event loop.
//!
//! * [`server`]: the mio event loop: listener, connection caps and
//!   deadlines, HTTP heads, WebSocket handshakes ([`replay`]), `/healthz`
//!   and the web app ([`http`]).
//! * [`tls`]: https and wss on the same port, with the operator's
//!   certificate or one made at start.
//! * [`control`]: the control sessions (auth through [`auth`], requests,
//!   replies, the tests this agent runs or serves).
//! * [`metrics`]: the agent's own counters, on `--metrics ADDR:PORT`,
//!   served by [`crate::endpoint`]: the small hardened HTTP server the
//!   monitor's `/metrics` uses too.
//! * [`quiet`]: what a flood would write to the record line by line, put
//!   there once a second instead.
//!
//! Dependencies run one way: `server` holds `control` sessions; `control`
//! never reaches back into `server`.

pub mod auth;
pub mod control;
pub mod http;
pub mod metrics;
pub mod quiet;
pub mod replay;
pub mod server;
pub mod tls;

#[cfg(feature = "full")]
use crate::endpoint;
#[cfg(feature = "full")]
use crate::flags::{AllowHost, FlagText, Listen, MaxResolve, TokenFile};
#[cfg(feature = "full")]
use crate::sysinfo;
#[cfg(feature = "full")]
use anyhow::{bail, Context};
#[cfg(feature = "full")]
use control::Agent;
#[cfg(feature = "full")]
use meshperf_protocol::msg::AgentInfo;
#[cfg(feature = "full")]
use meshperf_protocol::params::{Kind, Limits};
#[cfg(feature = "full")]
use meshperf_protocol::PROTOCOL_VERSION;
#[cfg(feature = "full")]
use std::io::Write;
#[cfg(feature = "full")]
use std::net::{IpAddr, SocketAddr};
#[cfg(feature = "full")]
use std::process::ExitCode;
#[cfg(feature = "full")]
use std::time::Duration;

#[cfg(feature = "full")]
#[derive(clap::Args)]
#[command(
    flag("token_file", |a| a
        .help("Read the control token from this file instead (e.g. a mounted Kubernetes Secret); one trailing newline is dropped")
        .conflicts_with("token")),
    flag("max_resolve", |a| a.help(
        "Most addresses the page's `dns:` lookups through this agent may give; a name with more is refused with its count (a sampled fleet needs no more than it measures)")),
)]
pub struct AgentArgs {
    #[command(flatten)]
    listen: Listen,
    /// Control token (default: $MESHPERF_TOKEN, else 128 random bits).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    #[command(flatten)]
    token_file: TokenFile,
    /// Another web origin allowed to drive this agent (repeatable), e.g. http://127.0.0.1:7800.
    #[arg(long = "allow-origin", value_name = "URL")]
    allow_origin: Vec<String>,
    #[command(flatten)]
    allow_host: AllowHost,
    /// Most connections held at once (web app, WebSocket, control sessions).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(2..=65536))]
    max_connections: u32,
    /// Most connections held at once from one IP address.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_per_source: u32,
    /// Seconds a client has to send its HTTP request head and complete the
    /// WebSocket handshake.
    #[arg(long, value_name = "S", default_value_t = 10.0, value_parser = timeout_arg)]
    head_timeout: f64,
    /// Seconds a controller has to authenticate after hello.
    #[arg(long, value_name = "S", default_value_t = 10.0, value_parser = timeout_arg)]
    auth_timeout: f64,
    /// Longest test this agent takes part in, in seconds.
    #[arg(long, value_name = "S", default_value_t = Limits::default().max_duration_s, value_parser = positive)]
    max_duration: f64,
    /// Most bytes one test may move (suffixes K, M, G: powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = bytes_arg)]
    max_bytes: Option<u64>,
    /// Most parallel streams in one test.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_streams: u32,
    /// Most concurrent connections (flows) of one tcp_rr or tcp_crr test;
    /// each is a descriptor on both agents, within their RLIMIT_NOFILE.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_flows, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_flows: u32,
    /// Most tests running here at once; the per-test limits also bound
    /// what they take together (a link-filling kind runs alone).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tests, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_tests: u32,
    /// Most tests waiting for their turn here (first come, first served);
    /// past it a test is refused busy.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_queue, value_parser = clap::value_parser!(u32).range(0..=1024))]
    max_queue: u32,
    #[command(flatten)]
    max_resolve: MaxResolve,
    /// Highest UDP burst rate, in bits per second of payload (suffixes k, M,
    /// G: powers of 1000); a udp_stream asking for more is refused.
    #[arg(long, value_name = "BITS", value_parser = rate_arg)]
    max_udp_rate: Option<f64>,
    /// Ports this agent's tests listen on when it serves, e.g. 5201-5210
    /// (default: any the kernel picks); the peer then needs only these and
    /// the control port let through a firewall. Each running test holds
    /// one (--max-tests), so a few ports are enough.
    #[arg(long, value_name = "LO-HI", value_parser = port_range)]
    data_ports: Option<(u16, u16)>,
    /// Directory whose files a tcp_stream may send as its data
    /// (payload_file, the Perl seed's --file), each read into memory once
    /// before the test; only regular files directly in it, no links
    /// (default: none, the agent reads no files)
    #[arg(long, value_name = "DIR")]
    payload_dir: Option<std::path::PathBuf>,
    /// Largest payload file one test may read into memory (suffixes K, M,
    /// G: powers of 1024)
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = bytes_arg)]
    max_payload_bytes: u64,
    /// Let tests send to addresses that are not meshperf agents (a STAMP
    /// reflector) inside these ranges only, e.g. 10.0.0.0/8,192.0.2.1
    /// (repeatable; default: none, such a test is refused). Each is on the
    /// record and counted in --metrics by range.
    #[arg(long = "allow-target", value_name = "CIDR[,CIDR...]", value_parser = allow_target_arg)]
    allow_target: Vec<AllowTarget>,
    /// The HMAC key of authenticated STAMP (stamp tests with auth, and the
    /// --stamp reflector): a file of hex digits or raw bytes, 16 bytes at
    /// least.
    #[arg(long, value_name = "FILE")]
    stamp_key: Option<std::path::PathBuf>,
    /// Answer STAMP test packets (RFC 8762) on this UDP port, e.g. 862 or
    /// 0.0.0.0:862 (default: off): a reflector for routers' and other
    /// tools' senders. Authenticated with --stamp-key; answers are never
    /// longer than their packets, at most --stamp-rate a second per source.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = stamp_addr)]
    stamp: Option<StampAddr>,
    /// The --stamp reflector keeps a sequence number of its own per
    /// session (RFC 8972 stateful mode) instead of echoing the sender's.
    #[arg(long, requires = "stamp")]
    stamp_stateful: bool,
    /// Most STAMP packets the --stamp reflector answers per second from
    /// one source address.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "stamp", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    stamp_rate: u32,
    /// Serve https and wss with this PEM certificate chain (e.g. an ACME
    /// client's fullchain.pem); needs --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert (e.g. privkey.pem).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Serve https and wss with a certificate made at start (never stored);
    /// its SHA-256 goes into the printed URL (fp=) for meshperf run to pin.
    #[arg(long)]
    tls_self_signed: bool,
    /// Serve this agent's own counters (sessions, failed authentications,
    /// tests started, refusals; counts only) as Prometheus metrics on
    /// http://ADDR:PORT/metrics, e.g. 0.0.0.0:9465 (default: not served).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<SocketAddr>,
    /// Answer unmodified iperf3 clients (iperf3 -c HOST -p PORT: TCP with
    /// -P, -R, -n, -t; UDP with -u -b) on this TCP and UDP port, within
    /// this agent's limits, one test at a time (default: not served).
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = crate::iperf3::listen_arg)]
    iperf3: Option<SocketAddr>,
    /// Print no record of sessions and tests on stderr (by default one
    /// timestamped line each: who connected, what ran, how it ended).
    #[arg(long, short)]
    quiet: bool,
}

/// `5201-5210` or `5201`.
#[cfg(feature = "full")]
fn port_range(s: &str) -> Result<(u16, u16), String> {
    let port = |p: &str| match p.trim().parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{p:?} is not a port (1 to 65535)")),
    };
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?),
        None => (port(s)?, port(s)?),
    };
    if lo > hi {
        return Err(format!("{s:?}: the first port must not be above the last"));
    }
    Ok((lo, hi))
}

#[cfg(feature = "full")]
/// One `--allow-target` value: its ranges.
#[derive(Clone)]
struct AllowTarget(Vec<crate::engine::target::Net>);

#[cfg(feature = "full")]
fn allow_target_arg(s: &str) -> Result<AllowTarget, String> {
    crate::engine::target::parse_list(s).map(AllowTarget)
}

#[cfg(feature = "full")]
/// `--stamp`: a port (on the agent's listen address) or an address and port.
#[derive(Clone, Copy)]
enum StampAddr {
    Port(u16),
    At(SocketAddr),
}

#[cfg(feature = "full")]
fn stamp_addr(s: &str) -> Result<StampAddr, String> {
    match s.parse::<u16>() {
        Ok(p) => Ok(StampAddr::Port(p)),
        Err(_) => s
            .parse::<SocketAddr>()
            .map(StampAddr::At)
            .map_err(|_| format!("{s:?} is not a port or ADDR:PORT (862, 0.0.0.0:862, [::]:862)")),
    }
}

#[cfg(feature = "full")]
/// Starts the `--stamp` reflector.
fn spawn_stamp(a: &AgentArgs, agent: &Agent, listen_ip: IpAddr) -> anyhow::Result<()> {
    let Some(at) = a.stamp else {
        return Ok(());
    };
    let addr = match at {
        StampAddr::Port(p) => SocketAddr::new(listen_ip, p),
        StampAddr::At(s) => s,
    };
    #[cfg(target_os = "linux")]
    {
        let cfg = crate::engine::stamp::reflector::Config {
            addr,
            key: agent.stamp_key.clone(),
            stateful: a.stamp_stateful,
            rate: a.stamp_rate,
        };
        let (auth, stateful) = (cfg.key.is_some(), cfg.stateful);
        let bound = crate::engine::stamp::reflector::spawn(cfg, agent.counters().stamp())
            .map_err(|e| anyhow::anyhow!("--stamp {addr}: {e}; choose another address or port"))?;
        eprintln!(
            "meshperf agent: STAMP reflector on {bound} ({}, {}, at most {} packets/s per source)",
            if auth { "authenticated" } else { "open" },
            if stateful { "stateful" } else { "stateless" },
            a.stamp_rate
        );
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = agent;
        bail!("--stamp {addr}: the STAMP reflector needs Linux (its packets' TTL and TOS)")
    }
}

#[cfg(feature = "full")]
fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// Seconds of a connection deadline: positive, at most a day.
#[cfg(feature = "full")]
fn timeout_arg(s: &str) -> Result<f64, String> {
    match positive(s)? {
        v if v <= 86400.0 => Ok(v),
        _ => Err(format!("{s:?}: at most 86400 seconds")),
    }
}

/// `n[k|M|G]` with the given base for the suffixes.
#[cfg(feature = "full")]
fn suffixed(s: &str, base: f64) -> Result<f64, String> {
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], base),
        Some((i, 'm' | 'M')) => (&s[..i], base * base),
        Some((i, 'g' | 'G')) => (&s[..i], base * base * base),
        _ => (s, 1.0),
    };
    positive(num).map(|v| v * mult)
}

#[cfg(feature = "full")]
fn bytes_arg(s: &str) -> Result<u64, String> {
    suffixed(s, 1024.0).map(|v| v as u64)
}

#[cfg(feature = "full")]
fn rate_arg(s: &str) -> Result<f64, String> {
    suffixed(s, 1000.0)
}

#[cfg(feature = "full")]
fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source works");
    hex::encode(b)
}

/// Tokens shorter than this are refused unless the agent listens on loopback.
#[cfg(feature = "full")]
const MIN_TOKEN: usize = 16;

/// The address the ready URL shows for an agent bound to any address: the
/// first non-loopback IPv4 one, else 127.0.0.1; `None` when bound to one.
#[cfg(feature = "full")]
fn shown_ip(bound: IpAddr) -> Option<IpAddr> {
    bound.is_unspecified().then(|| {
        sysinfo::addresses()
            .into_iter()
            .map(|(_, ip)| ip)
            .find(|ip| ip.is_ipv4() && !ip.is_loopback())
            .unwrap_or([127, 0, 0, 1].into())
    })
}

/// The URL of the ready line: with `#token=` only for a token the agent
/// made (`token`), else followed by where the token is (`source`, which
/// holds no colon: scripts take the port from the last one); `fp=` with TLS.
#[cfg(feature = "full")]
fn ready_url(host: SocketAddr, token: Option<&str>, fp: Option<&str>, source: &str) -> String {
    let scheme = if fp.is_some() { "https" } else { "http" };
    let frag: Vec<String> = token
        .map(|t| format!("token={t}"))
        .into_iter()
        .chain(fp.map(|f| format!("fp={f}")))
        .collect();
    let url = match frag.is_empty() {
        true => format!("{scheme}://{host}/"),
        false => format!("{scheme}://{host}/#{}", frag.join("&")),
    };
    match token {
        Some(_) => url,
        None => format!("{url} ({source}, not shown here)"),
    }
}

/// The token (given, or random when none was), whether the agent made it,
/// and where a given one came from, for the ready line (which shows only a
/// token the agent made: a given one is the operator's secret, and stdout is
/// often a log others read, e.g. `kubectl logs`). A weak token is refused.
#[cfg(feature = "full")]
fn token_of(a: &AgentArgs) -> anyhow::Result<(String, bool, String)> {
    let (given, source) = match &a.token_file.token_file {
        Some(path) => (
            Some(crate::token_file::read(path, "meshperf agent").map_err(anyhow::Error::msg)?),
            format!("the token is in {}", path.display()),
        ),
        None => match &a.token {
            Some(t) => (
                Some(t.clone()),
                "the token is the one given with --token".to_string(),
            ),
            None => (
                std::env::var("MESHPERF_TOKEN").ok(),
                "the token is the one in $MESHPERF_TOKEN".to_string(),
            ),
        },
    };
    let made = given.is_none();
    let token = match given {
        Some(t) if t.len() < 8 => {
            bail!(
                "the token must be at least 8 characters (--token, --token-file or MESHPERF_TOKEN)"
            )
        }
        Some(t) if t.len() > auth::MAX_TOKEN_BYTES => {
            bail!(
                "the token may be at most {} characters (--token, --token-file or MESHPERF_TOKEN)",
                auth::MAX_TOKEN_BYTES
            )
        }
        Some(t) if t.len() < MIN_TOKEN && !a.listen.listen.ip().is_loopback() => {
            bail!("the token must be at least {MIN_TOKEN} characters when the agent listens beyond loopback ({}); leave --token, --token-file and MESHPERF_TOKEN unset for a random one", a.listen.listen.ip())
        }
        Some(t)
            if !t
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'&' && b != b'#') =>
        {
            bail!("the token may contain printable ASCII except '&' and '#' (it travels in a URL fragment)")
        }
        Some(t) => {
            if t.len() < MIN_TOKEN {
                eprintln!("meshperf agent: warning: a token under {MIN_TOKEN} characters is easy to guess; it is accepted only because this agent listens on loopback");
            }
            t
        }
        None => random_token(),
    };
    Ok((token, made, source))
}

/// The agent's own `--metrics` endpoint (/metrics, /healthz) on its thread.
#[cfg(feature = "full")]
fn spawn_metrics(
    at: SocketAddr,
    allow_host: &AllowHost,
    counters: std::sync::Arc<metrics::Counters>,
) -> anyhow::Result<()> {
    let l = std::net::TcpListener::bind(at)
        .map_err(|e| anyhow::anyhow!("--metrics {at}: {e}; choose another address or port"))?;
    let bound = l.local_addr().context("reading the --metrics address")?;
    eprintln!("meshperf agent: metrics on http://{bound}/metrics");
    endpoint::spawn(
        l,
        "meshperf agent",
        allow_host.names(bound.ip()),
        endpoint::Limits::default(),
        move |r: &endpoint::Request| {
            let page = || std::sync::Arc::new(counters.render());
            endpoint::answer::metrics_page(r, page, "meshperf agent's --metrics", "", |_, _| None)
        },
    );
    Ok(())
}

#[cfg(feature = "full")]
pub fn run(a: AgentArgs) -> anyhow::Result<ExitCode> {
    crate::log::set_quiet(a.quiet);
    // The CPUs this agent may use, and that this thread is the control
    // loop's (a side that pins its data threads moves it off their CPUs).
    crate::engine::placement::init();
    let (token, made, source) = token_of(&a)?;
    for o in &a.allow_origin {
        if !(o.starts_with("http://") || o.starts_with("https://")) || o.ends_with('/') {
            bail!("--allow-origin {o}: give an origin like http://host:port (scheme, host, port; no path)");
        }
    }
    let listener = server::bind(a.listen.listen)?;
    let local_ip = listener
        .local_addr()
        .context("reading the bound address")?
        .ip();
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(tls::from_pem(cert, key)?),
        _ if a.tls_self_signed => {
            let mut names = a.allow_host.names(local_ip);
            names.extend(shown_ip(local_ip).map(|ip| ip.to_string()));
            // A certificate names hosts in ASCII (IDNs as punycode).
            names.retain(|n| n.is_ascii() && !n.is_empty());
            names.sort();
            names.dedup();
            Some(tls::self_signed(names)?)
        }
        _ => None,
    };
    let local = listener.local_addr().context("reading the bound address")?;
    let (poll, waker) = server::poll_and_waker().context("creating the event loop")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let info = AgentInfo {
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        hostname: sysinfo::hostname(),
        addresses: sysinfo::addresses()
            .into_iter()
            .map(|(n, ip)| format!("{ip} ({n})"))
            .collect(),
        cores: sysinfo::cores(),
        kernel: sysinfo::kernel(),
        capabilities: crate::engine::KINDS.to_vec(),
        // Every kind this release knows (those it runs here: capabilities).
        accepts: Kind::ALL
            .iter()
            .map(|k| {
                let names = k.params().iter().map(|p| p.name.to_string());
                (k.name().to_string(), names.collect())
            })
            .collect(),
        limits: limits_of(&a),
        instance: {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).context("reading the OS random source")?;
            hex::encode(b)
        },
    };
    let mut agent = Agent::new(token.clone(), info, local.ip(), tx, waker);
    agent.data_ports = a.data_ports;
    agent.max_resolve = a.max_resolve.get();
    if let Some(dir) = &a.payload_dir {
        if !dir.is_dir() {
            anyhow::bail!("--payload-dir {}: not a directory", dir.display());
        }
        agent.payload_dir = Some(crate::engine::payload::PayloadDir {
            dir: dir.clone(),
            max_bytes: a.max_payload_bytes,
        });
    }
    agent.targets = crate::engine::target::Targets::new(
        a.allow_target
            .iter()
            .flat_map(|t| t.0.iter().copied())
            .collect(),
        Some(agent.counters().targets()),
    );
    if let Some(path) = &a.stamp_key {
        agent.stamp_key = Some(
            crate::engine::stamp::wire::Key::read(path)
                .map_err(|e| anyhow::anyhow!("--stamp-key {e}"))?,
        );
    }
    spawn_stamp(&a, &agent, local_ip)?;
    if let Some(at) = a.metrics {
        spawn_metrics(at, &a.allow_host, agent.counters().clone())?;
    }
    if let Some(at) = a.iperf3 {
        let bound = crate::iperf3::spawn(at, limits_of(&a))?;
        eprintln!(
            "meshperf agent: iperf3 clients on {bound} (iperf3 -c HOST -p {})",
            bound.port()
        );
    }
    let host = SocketAddr::new(shown_ip(local.ip()).unwrap_or(local.ip()), local.port());
    println!(
        "meshperf agent {} ready: {}",
        env!("CARGO_PKG_VERSION"),
        ready_url(
            host,
            made.then_some(&*token),
            tls.as_ref().map(|id| &*id.fingerprint),
            &source
        )
    );
    std::io::stdout().flush().ok();
    let guard = server::Guard {
        max_connections: a.max_connections as usize,
        max_per_source: a.max_per_source as usize,
        head_timeout: Duration::from_secs_f64(a.head_timeout),
        auth_timeout: Duration::from_secs_f64(a.auth_timeout),
        hosts: a.allow_host.names(local.ip()),
        origins: a.allow_origin,
        tls: tls.map(|id| id.config),
    };
    server::serve(listener, agent, guard, rx, poll).context("event loop failed")?;
    eprintln!("meshperf agent: stopped");
    Ok(ExitCode::SUCCESS)
}

/// The limits `hello` announces, from their flags (the rows of
/// `meshperf_protocol::params::LIMITS` name them; a test below checks each).
#[cfg(feature = "full")]
fn limits_of(a: &AgentArgs) -> Limits {
    Limits {
        max_duration_s: a.max_duration,
        max_bytes: a.max_bytes.unwrap_or(Limits::default().max_bytes),
        max_streams: a.max_streams,
        max_flows: a.max_flows,
        max_udp_bits_per_second: a.max_udp_rate,
        max_tests: a.max_tests,
        max_queue: a.max_queue,
        ..Limits::default()
    }
}

#[cfg(all(test, feature = "full"))]
mod limit_flags {
    use super::*;
    use clap::Parser;
    use meshperf_protocol::params::LIMITS;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        agent: AgentArgs,
    }

    /// Each limit the protocol's table gives a flag is set by that flag and
    /// by no other; the ones without a flag are the defaults.
    #[test]
    fn every_limit_row_s_flag_sets_that_limit() {
        let plain = limits_of(&Wrap::parse_from(["agent"]).agent);
        assert_eq!(plain, Limits::default());
        for row in LIMITS {
            let Some(flag) = row.flag else {
                continue;
            };
            let set = limits_of(&Wrap::parse_from(["agent", flag, "7"]).agent);
            for other in LIMITS {
                let want = if other.name == row.name {
                    Some(7.0)
                } else {
                    (other.get)(&plain)
                };
                assert_eq!((other.get)(&set), want, "{flag}: {}", other.name);
            }
        }
    }
}
