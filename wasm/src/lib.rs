//! The wasm-bindgen layer over `meshperf-stats` (and, with the features
//! `codec` and `view`, the protocol's step driver and result readers): it
//! only converts arguments and results between JS and Rust. Compiled only
//! for `wasm32`; scripts/build.sh builds it three times, with the feature
//! `stats` (`meshperf_stats`: statistics, the web app's first load), with
//! `codec` (`meshperf_codec`: plans, presets, the step driver, the matrix's
//! schedule; loaded to run) and with `view` (`meshperf_view`: permalinks,
//! CSV, latency under load's card, verdict and lanes, the link line, the
//! matrix's cells; loaded to show a result), each beside the first.

#[cfg(target_arch = "wasm32")]
mod bindings;
