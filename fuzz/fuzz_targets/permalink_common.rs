//! What the two permalink targets check on any link text. The codec's crate
//! is named here only (`meshperf_protocol`; it was `meshperf_stats`, and
//! `meshperf_wasm` before that): rename it in this one `use`.

pub use meshperf_protocol::permalink;

/// A link that decodes re-encodes to one that decodes to the same result,
/// through the typed entry point and through the JSON one.
pub fn check_link(text: &str) {
    if let Ok(r) = permalink::decode(text) {
        let again = permalink::encode_exact(&r);
        let back = permalink::decode(&again)
            .unwrap_or_else(|e| panic!("a re-encoded link does not decode: {e}"));
        assert_eq!(back, r, "decode(encode(decode(link))) differs");
        // The link builder proper (it may swap large series for
        // histograms): whatever it makes decodes.
        if r.steps.iter().map(|s| s.samples.len()).sum::<usize>() < 64 {
            if let Ok(link) = permalink::encode(&r) {
                permalink::decode(&link)
                    .unwrap_or_else(|e| panic!("encode's link does not decode: {e}"));
            }
        }
    }
    if let Ok(json) = permalink::decode_json(text) {
        let link = permalink::encode_json(&json)
            .unwrap_or_else(|e| panic!("decode_json's result does not encode: {e}"));
        let back = permalink::decode_json(&link)
            .unwrap_or_else(|e| panic!("encode_json's link does not decode: {e}"));
        assert_eq!(
            back, json,
            "decode_json(encode_json(decode_json(link))) differs"
        );
    }
}
