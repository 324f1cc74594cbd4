//! `stamp`'s text in `meshperf run`: what was sent and what came back, the
//! one-way delays with the clocks' caveat, and what the reflector saw of
//! our packets. The round trip's line is the one every rr kind prints
//! (`rtt us: ...`).

use serde_json::Value;

/// The lines of a `stamp` step's summary.
pub fn lines(s: &Value) -> Vec<String> {
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let mut out = vec![format!(
        "stamp to {} ({}{}): {} sent, {} answered, {} lost, {} out of order, {} duplicates, {} late, {} bad HMAC, {} foreign",
        s["peer"].as_str().unwrap_or("?"),
        s["target"].as_str().unwrap_or("?"),
        if s["auth"] == true { ", authenticated" } else { "" },
        n("sent"),
        n("answered"),
        n("lost"),
        n("out_of_order"),
        n("duplicates"),
        n("late"),
        n("bad_hmac"),
        n("foreign"),
    )];
    let med = |k: &str| s[k]["median"].as_f64();
    if let (Some(f), Some(b)) = (med("forward_us"), med("backward_us")) {
        let clock = match (s["clock_offset_us"].as_f64(), s["clock_uncertainty_us"].as_f64()) {
            (Some(o), Some(u)) => format!(
                "; the reflector's clock is {o:+.1} us from ours (+/- {u:.1} us), which these include"
            ),
            _ => String::new(),
        };
        out.push(format!(
            "one-way us as the two clocks read them: forward median {f:.1}, backward median {b:.1}{clock}"
        ));
    }
    let mut refl = vec![format!(
        "jitter {:.2} us",
        s["jitter_us"].as_f64().unwrap_or(0.0)
    )];
    if let Some(t) = s["reflector_ttl"].as_u64() {
        refl.push(format!("reflector received TTL {t}"));
    }
    if let (Some(d), Some(e)) = (s["reflector_dscp"].as_u64(), s["reflector_ecn"].as_u64()) {
        refl.push(format!("DSCP {d} ECN {e}"));
    }
    if let Some(sync) = s["reflector_synced"].as_bool() {
        refl.push(format!(
            "its clock {} ({})",
            if sync {
                "synchronised"
            } else {
                "not said synchronised"
            },
            if s["reflector_ptp"] == true {
                "PTP"
            } else {
                "NTP"
            }
        ));
    }
    out.push(refl.join(", "));
    out
}
