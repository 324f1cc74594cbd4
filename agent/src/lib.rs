//! The `meshperf` binary's library, one folder per job:
//! * [`serve`]: `meshperf agent`: the mio server, HTTP, auth, the control
//!   sessions;
//! * [`engine`]: the test engines an agent runs (`tcp/`, `udp/`, `unix/`
//!   and the parts they share);
//! * [`ctl`]: the controller library `run` and `monitor` share (the
//!   control client, `--agent` discovery, rounds of steps through the
//!   protocol's step driver, a fleet's sampling, their flags);
//! * [`run`]: `meshperf run`, the headless controller (the steps or the
//!   matrix, their text, documents and exit status);
//! * [`monitor`]: `meshperf monitor`, the matrix of `run` on a schedule,
//!   served as Prometheus metrics;
//! * [`endpoint`]: the small HTTP server beside the control port (the
//!   agent's `--metrics`, the monitor's `/metrics`), the answers and host
//!   names every server of the binary shares;
//! * [`flags`]: the flags more than one command takes, declared once;
//! * [`log`] (the agent's record), [`sysinfo`] (this host's cores,
//!   addresses, kernel), [`dns`] (names to addresses) and [`token_file`]
//!   (`--token-file`) serve all three.
//!
//! [`cli`] is the command line's definition (clap): `main.rs` only parses
//! it, and `examples/meshperf-docs.rs` renders it as man pages and shell
//! completions. Fuzz targets and tests reach the decoders through here. Dependencies run one way: `serve`
//! and `run` use `engine`; `run` and `monitor` use `ctl`, neither the
//! other; `serve` and `monitor` use `endpoint`; `engine`, `ctl` and
//! `endpoint` use no command.

#[cfg(feature = "full")]
pub mod cli;
#[cfg(feature = "full")]
pub mod ctl;
pub mod dns;
pub mod endpoint;
pub mod engine;
#[cfg(feature = "full")]
pub mod flags;
pub mod iperf3;
pub mod log;
#[cfg(feature = "full")]
pub mod monitor;
pub mod platform;
#[cfg(feature = "full")]
pub mod run;
pub mod serve;
pub mod sysinfo;
pub mod token_file;
