//! `meshperf`: the agent (`meshperf agent`) that serves the web app and runs
//! test engines, and (later) the headless runner (`meshperf run`).

use clap::Parser;
use meshperf_agent::cli::{Cli, Cmd};
use meshperf_agent::{monitor, run, serve};
use std::process::ExitCode;

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
