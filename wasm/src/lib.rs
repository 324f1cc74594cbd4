//! The wasm-bindgen layer over `meshperf-stats` (and, with the feature
//! `codec`, the protocol's step driver): it only converts arguments and
//! results between JS and Rust. Compiled only for `wasm32`; scripts/build.sh
//! builds it twice, with the feature `stats` (`meshperf_stats`: statistics,
//! the web app's first load) and with `codec` (`meshperf_codec`: permalinks,
//! plans, presets, the step driver; the page loads it beside the first).

#[cfg(target_arch = "wasm32")]
mod bindings;
