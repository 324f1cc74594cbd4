//! Test engines. Each test side runs on its own threads and reports to the
//! control loop through a [`Sink`]: JSON events and binary sample frames for
//! the WebSocket session that asked for the test, and a final `Finished`.
//!
//! One folder per transport, each holding its kinds:
//! * [`tcp`]: `tcp_stream` ([`tcp::stream`]), `tcp_rr` ([`tcp::rr`]) and
//!   `tcp_crr` ([`tcp::crr`]), both roles.
//! * [`udp`]: what the UDP kinds share (datagram header, peer binding,
//!   sockets), batched I/O ([`udp::batch`]), the latency probes that
//!   `latency_under_load` and `probe_ms` share ([`udp::probe`]), `udp_rr`
//!   ([`udp::rr`]) and
//!   `udp_stream` ([`udp::stream`]).
//! * [`unix`]: `unix_stream` and `unix_rr` inside one agent.
//! * [`stamp`]: `stamp`, a STAMP Session-Sender toward a reflector that is
//!   not an agent (one side, no prepare; `--allow-target`).
//!
//! And the parts they share:
//! * [`ctx`]: what a side is handed and reports through ([`Sink`],
//!   [`TestCtx`], [`Limit`], [`EngineEnv`]); [`error`]: [`TestError`] and
//!   [`Refusal`]. The kinds stand on these; this file only dispatches to them.
//! * [`peer`]: the agent-to-agent control exchange and data-connection set-up.
//! * [`sockopt`]: socket options requested by a plan, read back from the kernel.
//! * [`bulk`]: the bulk-transfer workers (one mio `Poll` per worker thread),
//!   generic over TCP and AF_UNIX; [`side`]: one stream-test side run with
//!   live progress and samples; [`placement`]: how many workers a side
//!   runs and on which CPUs (`threads`, `cpus`, `server_cpus`); [`pool`]:
//!   the worker threads of a placement (bulk, many flows, `udp_stream`).
//! * [`rr_loop`]: the request/response loops of `tcp_rr` and `unix_rr`;
//!   [`flows`]: many concurrent connections (`flows` of `tcp_rr` and
//!   `tcp_crr`) over worker threads.
//! * [`lul`]: `latency_under_load` (TCP load in phases, UDP probes throughout).
//! * [`path`]: `path` (the hops, path MTU and marks each way, over the UDP flow).
//! * [`backlog`]: how far a session's sample frames may run ahead of its
//!   controller (an ended side's samples wait for it).
//! * [`bind`]: local addresses of data sockets; [`buf`]: page-aligned buffers;
//!   [`watchdog`]: wakes blocked loops at deadlines and on cancel.
//! * [`zerocopy`]: MSG_ZEROCOPY sends and their completions (`tcp_stream` `zerocopy`).
//! * [`target`]: `--allow-target`, the check before a kind sends to an
//!   address that is not an agent, and its counts.
//! * [`cpu`]: the CPU time of a side's threads and the host's, the `cpu`
//!   key [`TestCtx::report`] adds to every summary.

pub mod backlog;
pub mod bind;
pub mod buf;
pub mod bulk;
pub mod cpu;
pub mod ctx;
pub mod error;
pub mod flows;
pub mod lul;
pub mod pace;
#[cfg(target_os = "linux")]
pub mod path;
pub mod payload;
pub mod peer;
pub mod placement;
pub mod pool;
pub mod rr_loop;
pub mod shared;
pub mod side;
pub mod sockopt;
pub mod stamp;
pub mod target;
pub mod tcp;
pub mod tcp_view;
pub mod tcp_view_sum;
pub mod udp;
#[cfg(target_os = "linux")]
pub mod unix;
pub mod warmup;
pub mod watchdog;
pub mod zerocopy;

pub use ctx::{done_fraction, EngineEnv, Job, Limit, Outbound, Sink, TestCtx, LIMIT_GRACE};
pub use error::{Refusal, TestError};

use meshperf_protocol::msg::{ErrorCode, PeerAddr};
use meshperf_protocol::params::{Kind, UdpRrParams, UdpStreamParams};
use serde_json::Value;

/// A kind's serving-side set-up (see [`prepare`]).
type Prepare = fn(&Value, &EngineEnv) -> Result<(u16, [u8; 16], Job), Refusal>;

/// One kind's engine, as neper's `struct neper_fn`: how its serving side
/// is set up and how its driving side starts. In the engine a new kind is
/// its folder and one row of [`ENGINES`].
struct Engine {
    kind: Kind,
    /// Serving side: validates the parameters, opens what the peer will
    /// connect to and returns the data port, the one-time key and the job.
    prepare: Prepare,
    /// Driving side: validates the parameters and returns the job that
    /// connects to the peer.
    start: fn(Value, PeerAddr, &EngineEnv) -> Result<Job, Refusal>,
}

/// The kinds this agent runs and their engines: every kind on Linux;
/// elsewhere the ones built on portable sockets, `udp_stream` and
/// `latency_under_load` on their portable paths (see [`crate::platform`]).
const ENGINES: &[Engine] = &[
    Engine {
        kind: Kind::TcpStream,
        prepare: tcp::stream::prepare,
        start: tcp::stream::start,
    },
    Engine {
        kind: Kind::TcpRr,
        prepare: tcp::rr::prepare,
        start: tcp::rr::start,
    },
    #[cfg(target_os = "linux")]
    Engine {
        kind: Kind::TcpCrr,
        prepare: tcp::crr::prepare,
        start: tcp::crr::start,
    },
    #[cfg(target_os = "linux")]
    Engine {
        kind: Kind::UnixStream,
        prepare: |p, env| unix::prepare(Kind::UnixStream, p, env),
        start: |p, peer, env| unix::start(Kind::UnixStream, p, peer, env),
    },
    #[cfg(target_os = "linux")]
    Engine {
        kind: Kind::UnixRr,
        prepare: |p, env| unix::prepare(Kind::UnixRr, p, env),
        start: |p, peer, env| unix::start(Kind::UnixRr, p, peer, env),
    },
    Engine {
        kind: Kind::UdpRr,
        prepare: udp::prepare::<UdpRrParams>,
        start: udp::start::<UdpRrParams>,
    },
    Engine {
        kind: Kind::UdpStream,
        prepare: udp::prepare::<UdpStreamParams>,
        start: udp::start::<UdpStreamParams>,
    },
    Engine {
        kind: Kind::LatencyUnderLoad,
        prepare: lul::prepare,
        start: lul::start,
    },
    #[cfg(target_os = "linux")]
    Engine {
        kind: Kind::Path,
        prepare: udp::prepare::<path::Path>,
        start: udp::start::<path::Path>,
    },
    // Portable sockets, but run and checked against real reflectors on
    // Linux only (tests/netns/stamp.sh, stamp.rs): elsewhere refused.
    #[cfg(target_os = "linux")]
    Engine {
        kind: Kind::Stamp,
        prepare: stamp::prepare,
        start: stamp::start,
    },
];

/// The kinds this agent runs (the hello's `capabilities`), in the order of
/// [`ENGINES`].
pub const KINDS: &[Kind] = &{
    let mut kinds = [Kind::TcpStream; ENGINES.len()];
    let mut i = 0;
    while i < kinds.len() {
        kinds[i] = ENGINES[i].kind;
        i += 1;
    }
    kinds
};

/// Why `kind` does not run on this platform (None: it does), in the one
/// line an agent refuses it with: `unix_stream needs Linux (unix sockets);
/// this agent runs on windows`.
pub fn unavailable(kind: Kind) -> Option<String> {
    if KINDS.contains(&kind) {
        return None;
    }
    let why = match kind {
        Kind::UnixStream | Kind::UnixRr => "unix sockets",
        Kind::TcpCrr => "non-blocking connects in its event loop",
        Kind::Path => "raw ICMP probing",
        Kind::Stamp => "the STAMP sender, checked on Linux only",
        _ => "its engine",
    };
    Some(crate::platform::needs_linux(kind.name(), why))
}

/// Refuses, before anything is opened, an option only Linux has (off
/// Linux; see [`crate::platform::linux_only`]).
fn linux_only(_kind: Kind, _params: &Value) -> Result<(), Refusal> {
    #[cfg(not(target_os = "linux"))]
    if let Some(m) = crate::platform::linux_only(_kind, _params) {
        return Err((ErrorCode::BadParams, m));
    }
    Ok(())
}

/// The engine of `kind`, or why this agent does not run it.
fn engine(kind: Kind) -> Result<&'static Engine, Refusal> {
    ENGINES.iter().find(|e| e.kind == kind).ok_or_else(|| {
        (
            ErrorCode::UnsupportedKind,
            unavailable(kind).unwrap_or_default(),
        )
    })
}

/// Serving side: validates `params`, opens what the peer will connect to and
/// returns the data port, the one-time key and the job that runs the test.
pub fn prepare(
    kind: Kind,
    params: &Value,
    env: &EngineEnv,
) -> Result<(u16, [u8; 16], Job), Refusal> {
    linux_only(kind, params)?;
    (engine(kind)?.prepare)(params, env)
}

/// Driving side: validates `params` and returns the job that connects to `peer`.
pub fn start(kind: Kind, params: Value, peer: PeerAddr, env: &EngineEnv) -> Result<Job, Refusal> {
    linux_only(kind, &params)?;
    (engine(kind)?.start)(params, peer, env)
}
