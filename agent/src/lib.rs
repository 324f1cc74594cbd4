//! The `meshperf` binary's library: `serve` is `meshperf agent` (the mio
//! server, HTTP, auth, control sessions), `engine` the test engines it runs,
//! `run` the headless controller (`meshperf run`). `main.rs` only parses the
//! command line; fuzz targets and tests reach the decoders through here.

pub mod agent_cmd;
pub mod auth;
pub mod control;
pub mod engine;
pub mod http;
pub mod log;
pub mod run;
pub mod server;
pub mod sysinfo;
