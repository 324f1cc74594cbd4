//! The man pages and shell completions of `meshperf`, rendered from the
//! clap definitions the binary parses (`meshperf_agent::cli`):
//!
//!   meshperf-docs man DIR          meshperf.1 and meshperf-SUBCOMMAND.1
//!   meshperf-docs completions DIR  meshperf.bash, _meshperf (zsh), meshperf.fish
//!
//! An example, not a subcommand of `meshperf`: clap_mangen and
//! clap_complete are dev-dependencies, so the release binary carries none of
//! it (scripts/release.sh runs this; docs/deploy.md says where they go).

use clap::CommandFactory;
use clap_complete::Shell;
use meshperf_agent::cli::Cli;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: meshperf-docs man|completions DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [what, dir] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    let r = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut cmd = Cli::command();
        match what.as_str() {
            "man" => clap_mangen::generate_to(cmd, &dir),
            "completions" => [Shell::Bash, Shell::Zsh, Shell::Fish]
                .into_iter()
                .try_for_each(|sh| {
                    clap_complete::generate_to(sh, &mut cmd, "meshperf", &dir).map(drop)
                }),
            _ => Err(std::io::Error::other(format!(
                "unknown output '{what}' ({USAGE})"
            ))),
        }
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meshperf-docs: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
