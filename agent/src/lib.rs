//! The `meshperf` binary's library, one folder per job:
//! * [`serve`]: `meshperf agent`: the mio server, HTTP, auth, the control
//!   sessions;
//! * [`engine`]: the test engines an agent runs (`tcp/`, `udp/`, `unix/`
//!   and the parts they share);
//! * [`run`]: `meshperf run`, the headless controller (rounds of steps
//!   through the protocol's step driver, the matrix, output);
//! * [`monitor`]: `meshperf monitor`, the matrix of `run` on a schedule,
//!   served as Prometheus metrics;
//! * [`log`] (the agent's record), [`sysinfo`] (this host's cores,
//!   addresses, kernel), [`dns`] (names to addresses) and [`token_file`]
//!   (`--token-file`) serve all three.
//!
//! [`cli`] is the command line's definition (clap): `main.rs` only parses
//! it, and `examples/meshperf-docs.rs` renders it as man pages and shell
//! completions. Fuzz targets and tests reach the decoders through here. Dependencies run one way: `serve` and `run` use
//! `engine`; `engine` uses neither.

pub mod cli;
pub mod dns;
pub mod engine;
pub mod log;
pub mod monitor;
pub mod platform;
pub mod run;
pub mod serve;
pub mod sysinfo;
pub mod token_file;
