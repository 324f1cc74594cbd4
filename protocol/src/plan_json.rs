//! Plans for the web app: expansion into steps and the preset list, as JSON
//! strings for the wasm facade. The definitions live in [`crate::plan`] and
//! [`crate::presets`] (one meaning of a plan for the page and `meshperf
//! run`); this only converts, through their serde types.

use crate::plan::{Plan, PlanError};
use crate::presets;
use serde_json::{json, Value};

/// `text` as a [`Plan`], read as a `Value` first as results are
/// (`result::load`): the wasm module then carries one deserialiser per type,
/// and a repeated key counts once, the last, as the page always read plans.
fn plan(text: &str) -> Result<Plan, PlanError> {
    serde_json::from_str(text)
        .and_then(serde_json::from_value)
        .map_err(|e| PlanError::Parse(e.to_string()))
}

/// The steps `plan_json` expands to, as a JSON array; the error is one line.
pub fn expand_json(plan_json: &str) -> Result<String, String> {
    let steps = plan(plan_json)
        .and_then(|p| p.expand())
        .map_err(|e| e.to_string())?;
    // Through a Value (same text as `to_string`): the wasm module then
    // writes JSON with one serialiser per type.
    Ok(serde_json::to_value(steps)
        .expect("steps are always JSON")
        .to_string())
}

/// `[{"name": ..., "plan": {...}}]` for every preset, in the protocol's order.
pub fn presets_json() -> String {
    let list: Vec<Value> = presets::PRESETS
        .iter()
        .map(|&(name, text)| {
            let plan = plan(text).expect("presets are valid plans");
            json!({"name": name, "plan": plan})
        })
        .collect();
    Value::Array(list).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_json_as_the_typed_plan_code() {
        let typed = |text: &str| -> Result<String, String> {
            let steps = Plan::from_json(text)
                .and_then(|p| p.expand())
                .map_err(|e| e.to_string())?;
            Ok(serde_json::to_string(&steps).unwrap())
        };
        for text in [
            r#"{"kind":"tcp_rr","params":{"req_bytes":64},"sweep":{"resp_bytes":[1,2]},"repeat":2}"#,
            r#"{"kind":"tcp_stream","sweep":{"transport":["unix","tcp_local"],"msg_bytes":{"pow2":[1,8]}}}"#,
            r#"{"kind":"udp_stream","params":{"wait_us":1.5},"sweep":{"wait_us":{"from":0,"to":1,"step":0.25}},"name":"x","extra":1}"#,
        ] {
            assert_eq!(expand_json(text), typed(text), "{text}");
        }
        for text in presets::PRESETS.iter().map(|(_, t)| *t) {
            assert_eq!(expand_json(text), typed(text));
        }
        for bad in [
            r#"{"kind":"tcp_rr","sweep":{"transport":["pigeon"]}}"#,
            r#"{"kind":"teleport"}"#,
            "[]",
            "{}",
        ] {
            assert!(expand_json(bad).is_err() && typed(bad).is_err(), "{bad}");
        }
        let typed_presets: Vec<Value> = presets::names()
            .into_iter()
            .map(|n| json!({"name": n, "plan": presets::preset(n).unwrap()}))
            .collect();
        assert_eq!(presets_json(), Value::Array(typed_presets).to_string());
    }

    #[test]
    fn expand_gives_the_steps_the_page_reads() {
        let steps: Value = serde_json::from_str(
            &expand_json(r#"{"kind":"tcp_rr","params":{"req_bytes":64},"sweep":{"resp_bytes":[1,2]},"repeat":2}"#)
                .unwrap(),
        )
        .unwrap();
        let a = steps.as_array().unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a[3]["index"], 3);
        assert_eq!(a[3]["point"], json!([["resp_bytes", 2]]));
        assert_eq!(a[3]["repeat"], 1);
        assert_eq!(a[3]["transport"], "tcp");
        assert_eq!(a[3]["params"]["req_bytes"], 64);
        let e = expand_json(r#"{"kind":"tcp_rr","sweep":{"x":[]}}"#).unwrap_err();
        assert!(e.contains("sweep axis x"), "{e}");
        assert!(expand_json("nope").is_err());
    }

    #[test]
    fn a_repeated_key_counts_once_the_last() {
        let steps: Value = serde_json::from_str(
            &expand_json(r#"{"kind":"tcp_rr","repeat":5,"kind":"udp_rr","repeat":1}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(steps.as_array().unwrap().len(), 1);
        assert_eq!(steps[0]["kind"], "udp_rr");
    }

    #[test]
    fn presets_are_name_and_plan_objects() {
        let v: Value = serde_json::from_str(&presets_json()).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), presets::names().len());
        assert_eq!(a[0]["name"], "socketsend");
        assert_eq!(a[0]["plan"]["kind"], "tcp_stream");
        assert_eq!(a[0]["plan"]["name"], "socketsend");
    }
}
