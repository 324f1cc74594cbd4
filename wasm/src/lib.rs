//! The wasm-bindgen layer over `meshperf-stats` (and, with the feature
//! `codec`, the protocol's step driver): it only converts arguments and
//! results between JS and Rust. Compiled only for `wasm32`; scripts/build.sh
//! builds it twice, without default features (`meshperf_stats`: statistics,
//! the web app's first load) and with them (`meshperf_codec`: + permalinks,
//! plans, presets, the step driver).

#[cfg(target_arch = "wasm32")]
mod bindings;
