//! The flags more than one command takes, each declared once here and
//! flattened where it is used (`--agent`, which only the controllers take,
//! with them in `ctl::flags`; the plan flags in `ctl::plan_flags`). A
//! command says what a flag means for it in its own words with
//! [`FlagText::flag`] (`#[command(flag("max_resolve", |a| a.help("...")))]`);
//! the doc comments here are one command's words (`meshperf agent`'s for
//! `--listen` and `--allow-host`, `meshperf run`'s for the others).

use crate::endpoint::names::own_names;
use crate::token_file;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// A flattened flag changed by the command that takes it (its help text,
/// a default of its own), in its place: clap's `mut_arg` moves the flag
/// last, which reorders the shell completions.
pub trait FlagText {
    /// The flag `id` as `f` makes it; a panic when the command has none
    /// (every `--help` and the man pages build the command).
    fn flag(self, id: &str, f: impl FnOnce(clap::Arg) -> clap::Arg) -> Self;
}

impl FlagText for clap::Command {
    fn flag(self, id: &str, f: impl FnOnce(clap::Arg) -> clap::Arg) -> Self {
        let mut f = Some(f);
        let cmd = self.mut_args(|a| match f.take_if(|_| a.get_id() == id) {
            Some(f) => f(a),
            None => a,
        });
        assert!(f.is_none(), "no flag {id} to change");
        cmd
    }
}

/// `--token-file PATH` (`meshperf agent` adds that it conflicts with
/// `--token`).
#[derive(clap::Args, Debug, Default)]
pub struct TokenFile {
    /// Read the token of every --agent given without one (a dns: name, or
    /// a URL with no #token=) from this file, e.g. a mounted Kubernetes
    /// Secret, instead of $MESHPERF_TOKEN; one trailing newline is dropped.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

impl TokenFile {
    /// The token in the file, if one was given ([`token_file::read`]).
    pub fn read(&self, who: &str) -> Result<Option<String>, String> {
        self.token_file
            .as_deref()
            .map(|p| token_file::read(p, who))
            .transpose()
    }
}

/// `--max-resolve N`.
#[derive(clap::Args, Debug)]
pub struct MaxResolve {
    /// Most addresses a dns: name may give: a name with more is refused
    /// with its count, never cut to a subset.
    #[arg(long, value_name = "N", default_value_t = crate::dns::DEFAULT_MAX_ADDRESSES as u32, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_resolve: u32,
}

impl MaxResolve {
    /// The most addresses a name may give.
    pub fn get(&self) -> usize {
        self.max_resolve as usize
    }
}

/// `--listen ADDR:PORT` (the monitor's default port is its own).
#[derive(clap::Args, Debug)]
pub struct Listen {
    /// Address and port to serve the web app and control WebSocket on.
    #[arg(long, default_value = "127.0.0.1:7800", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
}

/// `--allow-host NAME`.
#[derive(clap::Args, Debug, Default)]
pub struct AllowHost {
    /// Another name the control WebSocket (and --metrics) may be reached by
    /// (repeatable), e.g. node1.example.net; the listen address, the host
    /// name and, bound to loopback or any, localhost and the interface
    /// addresses need none.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
}

impl AllowHost {
    /// The names a server bound to `bound` answers to ([`own_names`]).
    pub fn names(&self, bound: IpAddr) -> Vec<String> {
        own_names(bound, &self.allow_host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, Command};

    /// clap's own `mut_arg` moved the flag last, and the bash, zsh and fish
    /// completions listed the flags in another order than before.
    #[test]
    fn a_flag_its_command_changes_keeps_its_place_and_a_missing_one_panics() {
        let cmd = MaxResolve::augment_args(TokenFile::augment_args(Command::new("t")))
            .flag("token_file", |a| a.help("mine"));
        let ids: Vec<&str> = cmd.get_arguments().map(|a| a.get_id().as_str()).collect();
        assert_eq!(ids, ["token_file", "max_resolve"]);
        let help = cmd.get_arguments().next().and_then(|a| a.get_help());
        assert_eq!(help.map(|h| h.to_string()).as_deref(), Some("mine"));
        let missing = std::panic::catch_unwind(|| Command::new("t").flag("nope", |a| a));
        assert!(missing.is_err());
    }
}
