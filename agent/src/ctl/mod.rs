//! The controller library `meshperf run` and `meshperf monitor` share: what
//! drives agents through the control protocol, whatever is done with the
//! results.
//!
//! * [`client`]: one agent's control connection ([`pin`]: its TLS, pinned
//!   by fingerprint or checked against the roots);
//! * [`discover`]: `--agent` arguments (URLs, `dns:` names) to agents;
//! * [`rounds`]: rounds of steps at once through the protocol's step
//!   driver, a matrix's rounds, shown to a [`rounds::Watch`] such as
//!   [`progress`];
//! * [`sample`]: a fleet's pairs (`--peers`, `--shard`);
//! * [`flags`] and [`plan_flags`]: the flags both commands take, declared
//!   once and flattened into each, and the plan they give ([`inline`]).
//!
//! Dependencies run one way: `run` and `monitor` use `ctl`; `ctl` uses
//! neither.

pub mod client;
pub mod discover;
pub mod flags;
pub mod inline;
pub mod pin;
pub mod plan_flags;
pub mod progress;
pub mod rounds;
pub mod sample;

use client::{AgentUrl, Ctl};
use meshperf_protocol::driver::{known_kinds, AgentRef};

/// How the step driver names and reaches each agent (a lost agent keeps
/// its place, with no addresses or limits).
pub fn agent_refs(urls: &[AgentUrl], ctls: &[Option<Ctl>]) -> Vec<AgentRef> {
    urls.iter()
        .zip(ctls)
        .map(|(u, c)| {
            let hello = c.as_ref().map(|c| &c.hello);
            AgentRef {
                label: format!("agent {}", u.hostport()),
                host: u.host.clone(),
                addresses: hello
                    .and_then(|h| serde_json::from_value(h["addresses"].clone()).ok())
                    .unwrap_or_default(),
                limits: hello.and_then(|h| serde_json::from_value(h["limits"].clone()).ok()),
                // Kinds a newer agent runs and this build does not know are
                // left out.
                capabilities: hello.and_then(|h| known_kinds(&h["capabilities"])),
                version: hello
                    .and_then(|h| h["version"].as_str())
                    .map(str::to_string),
                accepts: hello
                    .and_then(|h| serde_json::from_value(h["accepts"].clone()).ok())
                    .filter(|a: &std::collections::BTreeMap<String, Vec<String>>| !a.is_empty()),
                instance: hello
                    .and_then(|h| h["instance"].as_str())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                // Not checked here: the agent's own refusal names its CPUs.
                cores: None,
            }
        })
        .collect()
}

/// Each agent's `hello`, `null` for one that could not be reached.
pub fn hellos(ctls: &[Option<Ctl>]) -> Vec<serde_json::Value> {
    ctls.iter()
        .map(|c| {
            c.as_ref()
                .map_or(serde_json::Value::Null, |c| c.hello.clone())
        })
        .collect()
}

/// A matrix's agents as the page writes them: each `hello` with the
/// `endpoint` (HOST:PORT) it was reached at, by which two matrices' agents
/// are matched (two agents on one host share every other field); an agent
/// that could not be reached stays `null`.
pub fn with_endpoints(hellos: &mut [serde_json::Value], urls: &[AgentUrl]) {
    for (h, u) in hellos.iter_mut().zip(urls) {
        if let Some(o) = h.as_object_mut() {
            o.insert("endpoint".into(), u.hostport().into());
        }
    }
}

/// What `--peers K` does over `n` agents, said once: the round of the
/// rotation and how many measure every pair, or that K is the full mesh.
pub fn peers_line(k: usize, n: usize, round: u64, rotation: u64) -> String {
    let others = n.saturating_sub(1);
    if k >= others {
        format!("--peers {k} with {n} agents: each measures all {others} others, the full mesh")
    } else {
        format!(
            "--peers {k}: each of {n} agents measures {k} of its {others} peers, round {round} of a rotation that measures every ordered pair within {rotation} rounds"
        )
    }
}

/// A random first test id, as the page's: two controllers started in the
/// same second took the same ids, and an agent refused the second as a
/// duplicate.
pub fn first_test_id() -> u32 {
    let mut seed = [0u8; 4];
    getrandom::fill(&mut seed).expect("the OS random source works");
    u32::from_le_bytes(seed)
}

/// Now, in seconds since the Unix epoch (a result's `created`, a step's
/// start).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
