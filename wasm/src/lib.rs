//! meshperf statistics core, shared by the native tools and the browser.
//!
//! Everything the result pages compute from raw samples lives here as plain
//! Rust (tested natively with `cargo test -p meshperf-wasm`): summaries
//! ([`stats`]), histograms and CDFs ([`hist`]), least-squares fits and
//! confidence intervals ([`fit`]), UDP receive analysis ([`udp`]), clock
//! offset, drift and one-way delays from four-timestamp probes ([`clock`])
//! and series helpers for plotting ([`series`]), and, with the default feature `codec`,
//! the permalink codec (`permalink`) and plan expansion and presets
//! (`plans`), which read and write the protocol's serde types. The wasm-bindgen
//! facade in `bindings.rs` is compiled only for `wasm32` and only converts
//! arguments and results; scripts/build.sh builds it twice, without default
//! features (statistics, the web app's first load) and with them (codec).

pub mod clock;
pub mod error;
pub mod fit;
pub mod hist;
pub mod lul;
#[cfg(feature = "codec")]
pub mod permalink;
#[cfg(feature = "codec")]
pub mod plans;
mod select;
pub mod series;
pub mod stats;
pub mod udp;

#[cfg(target_arch = "wasm32")]
mod bindings;

pub use error::StatsError;

/// Crate version, reported to JS by `version()`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
