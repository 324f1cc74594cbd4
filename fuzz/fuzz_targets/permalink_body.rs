//! The inside of a permalink: the binary JSON and the sample series, after
//! the base64 text, the zlib checksum and the version byte that random text
//! rarely gets past. The first byte picks the link format (1 or 2), the
//! rest is the body; the target wraps it as a link (zlib, base64url) and
//! checks it as `permalink` does.
#![no_main]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
mod fixed_keys;

use libfuzzer_sys::fuzz_target;

mod permalink_common;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let version = 1 + (first & 1);
    let mut bytes = vec![version];
    // Level 1: the body is what is fuzzed, not the compressor.
    bytes.extend(miniz_oxide::deflate::compress_to_vec_zlib(body, 1));
    let link = format!(
        "{}{}",
        permalink_common::permalink::TAG,
        URL_SAFE_NO_PAD.encode(&bytes)
    );
    permalink_common::check_link(&link);
});
