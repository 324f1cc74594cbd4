//! The agents a controller reaches: `--agent`, `--max-resolve` and
//! `--token-file`, declared once for `meshperf run` and `meshperf monitor`
//! (the monitor says in its own words that it resolves them again before
//! every run).

use super::client::{AgentUrl, CtlError};
use super::discover;
use crate::flags::{MaxResolve, TokenFile};

#[derive(clap::Args, Debug)]
pub struct AgentFlags {
    /// Agent URL as the agent printed it (http://HOST:PORT/#token=T, or
    /// https://HOST:PORT/#token=T&fp=HEX with TLS: the certificate is pinned), or
    /// dns:NAME[:PORT][#token=T] for an agent at every address of NAME (port
    /// 7800 and --token-file's or $MESHPERF_TOKEN's token by default). The first serves, the second
    /// drives; one agent plays both ends; with --matrix, any number.
    #[arg(long, value_name = "URL", required = true)]
    pub agent: Vec<String>,
    #[command(flatten)]
    pub max_resolve: MaxResolve,
    #[command(flatten)]
    pub token_file: TokenFile,
}

impl AgentFlags {
    /// `--token-file`'s token, if given; `who` names the command in a
    /// warning.
    pub fn token(&self, who: &str) -> Result<Option<String>, String> {
        self.token_file.read(who)
    }

    /// Each `--agent` argument and the agents it names (a `dns:` name one
    /// per address, within `--max-resolve`), `token` for those given
    /// without one.
    pub fn resolve<'a>(
        &'a self,
        token: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a str, Result<Vec<AgentUrl>, CtlError>)> + 'a {
        self.agent.iter().map(move |arg| {
            (
                arg.as_str(),
                discover::agents_within(arg, token, self.max_resolve.get()),
            )
        })
    }
}
