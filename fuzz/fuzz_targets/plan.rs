//! Plan files (`meshperf run --plan FILE`, the page's plan editor):
//! `protocol::plan::Plan::from_json` and `expand`. A plan that parses
//! writes back to JSON that parses to the same plan, and expands within
//! the documented bound, the same way every time.
#![no_main]

mod fixed_keys;

use libfuzzer_sys::fuzz_target;
use meshperf_protocol::plan::{Plan, MAX_STEPS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = Plan::from_json(text) else {
        return;
    };
    let json = serde_json::to_string(&plan).expect("a plan is JSON");
    let back = Plan::from_json(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(back, plan, "from_json(to_json(plan)) differs");
    if let Ok(steps) = plan.expand() {
        assert!(!steps.is_empty() && steps.len() <= MAX_STEPS);
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(s.index, i);
            assert!(s.repeat < plan.repeat);
        }
        assert_eq!(back.expand().as_ref(), Ok(&steps));
    }
});
