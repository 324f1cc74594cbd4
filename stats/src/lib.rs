//! meshperf's statistics core, shared by the native tools and the browser.
//!
//! Everything a result view computes from raw samples lives here as plain
//! Rust, tested natively (`cargo test -p meshperf-stats`): summaries
//! ([`stats`]), histograms and CDFs ([`hist`]), least-squares fits and
//! confidence intervals ([`fit`]), UDP receive analysis ([`udp`]), clock
//! offset, drift and one-way delays from four-timestamp probes ([`clock`])
//! and series helpers for plotting ([`series`]). A leaf: it depends on no
//! meshperf crate (the permalink codec and plan expansion, which read and
//! write the protocol's serde types, are the protocol's).
//!
//! The agent links it natively; `wasm/` is the thin wasm-bindgen layer that
//! puts it in the web app.

pub mod clock;
pub mod error;
pub mod fit;
pub mod hist;
pub mod lul;
pub mod lul_lanes;
pub mod lul_load;
mod select;
pub mod series;
pub mod stats;
pub mod udp;

pub use error::StatsError;

/// Crate version, reported to JS by `version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
