//! The result format: what `meshperf run --json` writes, what the web app
//! exports, imports and packs into permalinks. Versioned: [`load`] upgrades
//! older versions, and fields added later default when absent.
//!
//! ```json
//! {"format": "meshperf-result", "version": 1, "created_unix": 1795000000.5,
//!  "plan": {...}, "agents": [{hello of agent A}, {hello of agent B}],
//!  "steps": [{"index": 0, "kind": "tcp_stream", "params": {...}, "point": [["msg_bytes", 1024]],
//!             "repeat": 0, "transport": "tcp", "summary": {...},
//!             "sides": {"client": {...}, "server": {...}},
//!             "samples": [{"role": "server", "kind": "interval_bytes", "stream": 0, "values": [...]}],
//!             "error": null}]}
//! ```
//! `summary` is the side that measured what the step is about: the receiver
//! of a stream test, the requester of a request/response test.

use crate::frame::SampleKind;
use crate::msg::Role;
use crate::params::Kind;
use crate::plan::{Plan, Transport};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// One test of a matrix round (see [`crate::matrix`]): agent `server` serves, agent `client` drives.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pair {
    pub server: usize,
    pub client: usize,
}

/// The `format` field of every result file.
pub const FORMAT: &str = "meshperf-result";
/// The version this build writes.
pub const VERSION: u32 = 1;

/// A whole run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub format: String,
    pub version: u32,
    #[serde(default)]
    pub created_unix: f64,
    pub plan: Plan,
    /// `hello` of each agent, serving agent first.
    #[serde(default)]
    pub agents: Vec<Value>,
    #[serde(default)]
    pub steps: Vec<StepResult>,
    /// Set by a permalink too long for every raw sample: the large series of
    /// some steps were replaced by [`StepResult::histograms`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub samples_replaced: bool,
}

/// The outcome of one step.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub index: usize,
    pub kind: Kind,
    #[serde(default)]
    pub params: Map<String, Value>,
    #[serde(default)]
    pub point: Vec<(String, Value)>,
    #[serde(default)]
    pub repeat: u32,
    #[serde(default = "tcp")]
    pub transport: Transport,
    /// The primary side's summary (see the module docs).
    #[serde(default)]
    pub summary: Value,
    #[serde(default)]
    pub sides: Sides,
    #[serde(default)]
    pub samples: Vec<Series>,
    /// Histograms standing in for raw series a permalink could not carry
    /// (see [`RunResult::samples_replaced`]); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<SeriesHistogram>,
    /// Why the step failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the controller asked for the step (Unix seconds), and how long
    /// it took in all, set-up included: the Perl seed's start time and
    /// total elapsed seconds (the sides' `seconds` are the network time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// In a matrix run: the agents (indices into `agents`) that served and
    /// drove this step; absent in a run between two agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<Pair>,
}

fn tcp() -> Transport {
    Transport::Tcp
}

/// Both sides' own summaries.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Value>,
}

/// One raw sample series.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub role: Role,
    pub kind: SampleKind,
    #[serde(default)]
    pub stream: u16,
    pub values: Vec<u64>,
}

/// A fixed-width histogram of one raw series, in the series' own unit (ns
/// for `*_ns` kinds): bin `i` covers `[low + i*bin_width, low + (i+1)*bin_width)`
/// and the bins span every value (no underflow or overflow).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesHistogram {
    pub role: Role,
    pub kind: SampleKind,
    #[serde(default)]
    pub stream: u16,
    /// How many values the histogram counts (the sum of `counts`).
    pub n: u64,
    pub low: u64,
    pub bin_width: u64,
    pub counts: Vec<u64>,
    /// Bytes per interval of a stream step: how many of the series' values
    /// are left out, the intervals not every stream spent whole inside its
    /// data movement (the warm-up's too; `crate::intervals`). Absent in
    /// links made before, whose histograms count every interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub left_out: Option<u64>,
}

/// A result that cannot be loaded.
#[derive(Debug, Error, PartialEq)]
pub enum ResultError {
    /// Not JSON, or not shaped like a result.
    #[error("not a meshperf result: {0}")]
    Parse(String),
    /// The `format` field is something else.
    #[error("not a meshperf result (format is {0:?})")]
    Format(String),
    /// Written by a newer meshperf.
    #[error("this result has format version {0}; this meshperf reads up to version {VERSION}: upgrade meshperf")]
    TooNew(u32),
}

impl RunResult {
    /// An empty result for `plan`.
    pub fn new(plan: Plan, agents: Vec<Value>, created_unix: f64) -> Self {
        RunResult {
            format: FORMAT.into(),
            version: VERSION,
            created_unix,
            plan,
            agents,
            steps: Vec::new(),
            samples_replaced: false,
        }
    }
}

/// Which side's summary is primary for a step.
pub fn primary_role(kind: Kind, params: &Map<String, Value>) -> Role {
    match kind {
        Kind::TcpStream | Kind::UnixStream | Kind::UdpStream => {
            match params.get("direction").and_then(Value::as_str) {
                Some("receive") | Some("both") => Role::Client,
                _ => Role::Server,
            }
        }
        Kind::TcpRr
        | Kind::TcpCrr
        | Kind::UdpRr
        | Kind::UnixRr
        | Kind::LatencyUnderLoad
        | Kind::Path
        | Kind::Stamp => Role::Client,
    }
}

/// What a step's sides shared their agents with (the `shared` key each
/// side's summary has when other tests ran beside it; issue 42), one line
/// per side: `shared agent 10.0.0.2:7800 with 1 other test (tcp_rr) for
/// 2.3 of 3.0 s`. `server` and `client` name the agents (the same agent for
/// a test inside one agent); none when the step ran alone.
pub fn shared_marks(step: &StepResult, server: &str, client: &str) -> Vec<String> {
    let sides = [
        (step.sides.server.as_ref(), server),
        (step.sides.client.as_ref(), client),
    ];
    sides
        .into_iter()
        .filter_map(|(summary, label)| {
            let sh = summary?.get("shared")?;
            let tests = sh.get("tests")?.as_array()?;
            let mut kinds: Vec<&str> = tests.iter().filter_map(|t| t["kind"].as_str()).collect();
            kinds.sort_unstable();
            kinds.dedup();
            Some(format!(
                "shared {label} with {} other test{} ({}) for {:.1} of {:.1} s",
                tests.len(),
                if tests.len() == 1 { "" } else { "s" },
                kinds.join(", "),
                sh.get("overlap_s")?.as_f64()?,
                sh.get("of_s")?.as_f64()?,
            ))
        })
        .collect()
}

/// Parses a result of any known version, upgrading it to the current one.
pub fn load(text: &str) -> Result<RunResult, ResultError> {
    let mut v: Value = serde_json::from_str(text).map_err(|e| ResultError::Parse(e.to_string()))?;
    upgrade(&mut v)?;
    serde_json::from_value(v).map_err(|e| ResultError::Parse(e.to_string()))
}

/// Brings a result value of an older version up to [`VERSION`] in place.
pub fn upgrade(v: &mut Value) -> Result<(), ResultError> {
    let format = v.get("format").and_then(Value::as_str).unwrap_or("");
    if format != FORMAT {
        return Err(ResultError::Format(format.into()));
    }
    let version = v.get("version").and_then(Value::as_u64).unwrap_or(0) as u32;
    if version > VERSION {
        return Err(ResultError::TooNew(version));
    }
    // Version 1 is the first; later versions add their steps here, oldest first.
    v["version"] = Value::from(VERSION);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_defaults() {
        let plan = crate::presets::preset("socketsend").unwrap();
        let mut r = RunResult::new(plan, vec![json!({"hostname": "a"})], 1.5);
        r.steps.push(StepResult {
            index: 0,
            kind: Kind::TcpStream,
            params: Map::new(),
            point: vec![("msg_bytes".into(), json!(1))],
            repeat: 0,
            transport: Transport::Tcp,
            summary: json!({"bytes": 5}),
            sides: Sides::default(),
            samples: vec![Series {
                role: Role::Server,
                kind: SampleKind::IntervalBytes,
                stream: 0,
                values: vec![1, 2],
            }],
            histograms: Vec::new(),
            error: None,
            started_unix: Some(1.7e9),
            wall_seconds: Some(0.25),
            pair: Some(Pair {
                server: 0,
                client: 0,
            }),
        });
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"interval_bytes\""));
        assert_eq!(load(&text).unwrap(), r);
        // Fields added later default when absent.
        let minimal = json!({"format": FORMAT, "version": 1, "plan": {"kind": "tcp_rr"},
            "steps": [{"index": 0, "kind": "tcp_rr"}]});
        let m = load(&minimal.to_string()).unwrap();
        assert_eq!(m.steps[0].transport, Transport::Tcp);
        assert!(m.steps[0].samples.is_empty());
    }

    #[test]
    fn refuses_foreign_and_newer() {
        assert!(matches!(load("{"), Err(ResultError::Parse(_))));
        assert!(matches!(
            load(r#"{"format":"iperf3"}"#),
            Err(ResultError::Format(_))
        ));
        let newer = json!({"format": FORMAT, "version": 99, "plan": {"kind": "tcp_rr"}});
        assert_eq!(load(&newer.to_string()), Err(ResultError::TooNew(99)));
    }
}
