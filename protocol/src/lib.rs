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

/// Control protocol version; `hello` carries it and clients check it.
pub const PROTOCOL_VERSION: u32 = 1;
