//! `meshperf agent`: parses its flags, prints the ready-to-open URL and runs
//! the event loop.

use crate::control::Agent;
use crate::{server, sysinfo};
use anyhow::{bail, Context};
use meshperf_protocol::msg::AgentInfo;
use meshperf_protocol::params::Limits;
use meshperf_protocol::PROTOCOL_VERSION;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct AgentArgs {
    /// Address and port to serve the web app and control WebSocket on.
    #[arg(long, default_value = "127.0.0.1:7800", value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// Control token (default: $MESHPERF_TOKEN, else 128 random bits).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// Another web origin allowed to drive this agent (repeatable), e.g. http://127.0.0.1:7800.
    #[arg(long = "allow-origin", value_name = "URL")]
    allow_origin: Vec<String>,
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source works");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn run(a: AgentArgs) -> anyhow::Result<ExitCode> {
    let token = match a.token.or_else(|| std::env::var("MESHPERF_TOKEN").ok()) {
        Some(t) if t.len() < 8 => {
            bail!("the token must be at least 8 characters (--token or MESHPERF_TOKEN)")
        }
        Some(t)
            if !t
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'&' && b != b'#') =>
        {
            bail!("the token may contain printable ASCII except '&' and '#' (it travels in a URL fragment)")
        }
        Some(t) => t,
        None => random_token(),
    };
    for o in &a.allow_origin {
        if !(o.starts_with("http://") || o.starts_with("https://")) || o.ends_with('/') {
            bail!("--allow-origin {o}: give an origin like http://host:port (scheme, host, port; no path)");
        }
    }
    let listener = server::bind(a.listen)?;
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
        limits: Limits::default(),
    };
    let agent = Agent::new(token.clone(), info, local.ip(), tx, waker);
    let shown: IpAddr = if local.ip().is_unspecified() {
        sysinfo::addresses()
            .into_iter()
            .map(|(_, ip)| ip)
            .find(|ip| ip.is_ipv4() && !ip.is_loopback())
            .unwrap_or([127, 0, 0, 1].into())
    } else {
        local.ip()
    };
    let host = SocketAddr::new(shown, local.port());
    println!(
        "meshperf agent {} ready: http://{host}/#token={token}",
        env!("CARGO_PKG_VERSION")
    );
    std::io::stdout().flush().ok();
    server::serve(listener, agent, a.allow_origin, rx, poll).context("event loop failed")?;
    eprintln!("meshperf agent: stopped");
    Ok(ExitCode::SUCCESS)
}
