//! Permalink text as a page or `meshperf run` user pastes it (`#r=mp...`,
//! or a whole URL), every link format: `permalink::decode` and
//! `decode_json`, and round trips through their encoders.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;

mod permalink_common;

fuzz_target!(|data: &[u8]| {
    // The page and the CLI hand the codec strings.
    if let Ok(text) = std::str::from_utf8(data) {
        permalink_common::check_link(text);
    }
});
