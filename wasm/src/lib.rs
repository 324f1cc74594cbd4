//! meshperf statistics core, shared by the native tools and the browser.
//!
//! Everything the result pages compute from raw samples lives here as plain
//! Rust (tested natively with `cargo test -p meshperf-wasm`): summaries
//! ([`stats`]), histograms and CDFs ([`hist`]), least-squares fits and
//! confidence intervals ([`fit`]), UDP receive analysis ([`udp`]) and series
//! helpers for plotting ([`series`]), and the permalink codec ([`permalink`]). The wasm-bindgen facade in `bindings.rs`
//! is compiled only for `wasm32` and only converts arguments and results.

pub mod error;
pub mod fit;
pub mod hist;
pub mod json;
pub mod permalink;
pub mod plans;
mod select;
pub mod shape;
pub mod series;
pub mod stats;
pub mod udp;

#[cfg(target_arch = "wasm32")]
mod bindings;

pub use error::StatsError;

/// Crate version, reported to JS by `version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
