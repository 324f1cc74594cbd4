//! meshperf wire types, shared by the agent, the headless runner and (through
//! wasm/, the wasm-bindgen layer) the web app. Pure data: serde types and codecs, no I/O.
//!
//! * [`msg`]: control messages carried as WebSocket text frames (JSON).
//! * [`params`]: test kinds, their parameters, validation against limits.
//! * [`frame`]: the binary sample frame (WebSocket binary frames).
//! * [`peer`]: the agent-to-agent control exchange on the data port.
//! * [`plan`]: plans and their expansion into steps; [`presets`]: the built-in plans.
//! * [`result`]: the versioned result format (files, exports, permalinks).
//! * [`driver`]: running one step between agents (the CLI's and the page's).
//! * [`summary`]: the typed summary of each kind (the result's `summary` keys).
//! * [`lul_card`]: a `latency_under_load` step's card; [`verdict`]: its grade
//!   and sentence in plain words (the CLI's, the page's, the matrix's).
//! * [`export`]: the CSV export of a result (the CLI's and the page's).
//! * [`expect`]: pass/fail expectations on a run's figures (`--expect`, a plan's `expect`).
//! * [`matrix`]: rounds of agent pairs and the headline figure of each cell.
//! * [`json_stream`]: the lines of `meshperf run --json-stream`.
//! * [`intervals`]: which of a stream step's intervals are whole, and when its data ended.
//! * [`permalink`]: the permalink codec (a whole result in a URL fragment);
//!   [`plan_json`]: plans and presets as JSON for the page.
//! * [`partial`]: a step cut short by Ctrl-C or Cancel, kept with its partial figures.
//! * [`units`]: the SI-prefix table (rates' k, M, G) and C's `%g`.

pub mod driver;
pub mod expect;
pub mod export;
pub mod frame;
pub mod intervals;
pub mod iperf3_json;
pub mod json_stream;
pub mod link;
pub mod lul_card;
pub mod matrix;
pub mod msg;
pub mod params;
pub mod partial;
pub mod peer;
pub mod permalink;
pub mod plan;
pub mod plan_json;
pub mod presets;
pub mod result;
pub mod seedline;
pub mod summary;
pub mod units;
pub mod verdict;

/// The lowest control protocol version this build speaks: `hello`'s
/// `protocol` (what agents before `protocol_max` sent as their one version,
/// and what every controller before it checks for equality).
pub const PROTOCOL_VERSION: u32 = 1;
/// The highest version this build speaks (`hello`'s `protocol_max`). A
/// change a build of the lowest cannot read raises it; the lowest is raised
/// only when a release stops speaking a version (docs/deploy.md, "Upgrading
/// a fleet").
pub const PROTOCOL_MAX: u32 = 1;

/// The version a controller speaking `ours` (lowest, highest) uses with an
/// agent speaking `theirs`: the highest both speak, or why there is none in
/// one line, naming who must be upgraded (`who` names the agent).
pub fn common_protocol(ours: (u32, u32), theirs: (u32, u32), who: &str) -> Result<u32, String> {
    let v = ours.1.min(theirs.1);
    if v >= ours.0.max(theirs.0) {
        return Ok(v);
    }
    let range = |(lo, hi): (u32, u32)| {
        if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo} to {hi}")
        }
    };
    let fix = if theirs.0 > ours.1 {
        "it is newer than this meshperf: upgrade this meshperf (or the page) to one that speaks it"
    } else {
        "it is older than this meshperf speaks: upgrade the agent"
    };
    Err(format!(
        "{who} speaks protocol {}, this meshperf {}: {fix}",
        range(theirs),
        range(ours)
    ))
}

#[cfg(test)]
mod tests {
    use super::common_protocol;

    #[test]
    fn the_highest_version_both_speak_or_one_line_naming_who_to_upgrade() {
        assert_eq!(common_protocol((1, 1), (1, 1), "agent A"), Ok(1));
        assert_eq!(common_protocol((1, 3), (2, 5), "agent A"), Ok(3));
        assert_eq!(common_protocol((2, 4), (1, 2), "agent A"), Ok(2));
        assert_eq!(
            common_protocol((1, 1), (2, 3), "agent A"),
            Err("agent A speaks protocol 2 to 3, this meshperf 1: it is newer than this meshperf: upgrade this meshperf (or the page) to one that speaks it".into())
        );
        assert_eq!(
            common_protocol((2, 3), (1, 1), "agent A"),
            Err("agent A speaks protocol 1, this meshperf 2 to 3: it is older than this meshperf speaks: upgrade the agent".into())
        );
    }
}
