//! The command line: `meshperf agent|run|monitor`, one clap definition that
//! `main.rs` parses and `examples/meshperf-docs.rs` turns into the man pages
//! and shell completions (scripts/release.sh), so they never drift apart.

use crate::{monitor, run, serve};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "meshperf",
    version,
    about = "Measure the network itself: agents, a web app, raw samples."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Serve the web app and the control WebSocket, and run tests asked for.
    Agent(serve::AgentArgs),
    /// Run a plan headless against one or two agents.
    Run(run::RunArgs),
    /// Run the matrix between agents on a schedule and serve the last
    /// results as Prometheus metrics.
    Monitor(monitor::MonitorArgs),
}
