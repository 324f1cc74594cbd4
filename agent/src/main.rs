//! `meshperf`: the agent (`meshperf agent`) that serves the web app and runs
//! test engines, and (later) the headless runner (`meshperf run`).

use clap::{Parser, Subcommand};
use meshperf_agent::{monitor, run, serve};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "meshperf",
    version,
    about = "Measure the network itself: agents, a web app, raw samples."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the web app and the control WebSocket, and run tests asked for.
    Agent(serve::AgentArgs),
    /// Run a plan headless against one or two agents.
    Run(run::RunArgs),
    /// Run the matrix between agents on a schedule and serve the last
    /// results as Prometheus metrics.
    Monitor(monitor::MonitorArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let r = match cli.cmd {
        Cmd::Agent(a) => serve::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Monitor(a) => monitor::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("meshperf: {e:#}");
            ExitCode::from(2)
        }
    }
}
