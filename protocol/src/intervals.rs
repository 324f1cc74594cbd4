//! Which of a stream step's intervals are whole, and when its data ended.
//!
//! A stream's `interval_bytes` samples count its bytes in `interval_ms`
//! ticks from its side's start: the tick its first byte came in and the one
//! its last byte came in are partial (a 10 s test's last 10 ms tick may hold
//! a few bytes, and reads as a rate near 0 over a whole tick). One rule for
//! every reader of those ticks outside the agent: `meshperf run -i` and
//! `--json-stream` give the last interval its real end ([`data_end_s`]), and
//! a permalink's histogram of bytes per interval counts only the ticks
//! [`whole_intervals`] keeps, as the page's statistics do (the same rule,
//! `meshperf_stats::series::whole_ticks`, reached through wasm).

use crate::msg::Role;
use crate::result::StepResult;
use serde_json::Value;

/// The step's sample tick in seconds: the summaries' `interval_ms`, the
/// parameters', else the kind's default.
pub fn tick_s(step: &StepResult) -> f64 {
    let ms = [
        step.summary.get("interval_ms"),
        step.sides
            .server
            .as_ref()
            .and_then(|s| s.get("interval_ms")),
        step.sides
            .client
            .as_ref()
            .and_then(|s| s.get("interval_ms")),
        step.params.get("interval_ms"),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_f64)
    .or_else(|| {
        let p = step
            .kind
            .params()
            .iter()
            .find(|p| p.name == "interval_ms")?;
        Some(p.default_num() as f64)
    })
    .unwrap_or(10.0);
    ms.max(1.0) / 1000.0
}

/// Each of `streams`' first and last byte times (seconds on the samples'
/// clock: the warm-up, which the summary's times leave out, added back) as
/// `role`'s summary gives them; `None` for a stream it does not list.
fn times(step: &StepResult, role: Role, streams: &[u16]) -> Vec<Option<(Option<f64>, f64)>> {
    let side = match role {
        Role::Client => step.sides.client.as_ref(),
        Role::Server => step.sides.server.as_ref(),
    };
    let omitted = side
        .and_then(|s| s.get("omitted_s"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let listed = side
        .and_then(|s| s.get("streams"))
        .and_then(Value::as_array);
    streams
        .iter()
        .map(|&i| {
            let x = listed?
                .iter()
                .find(|x| x.get("index").and_then(Value::as_u64) == Some(i as u64))?;
            let last = x.get("seconds")?.as_f64()? + omitted;
            let first = x
                .get("first_seconds")
                .and_then(Value::as_f64)
                .map(|f| f + omitted);
            Some((first, last))
        })
        .collect()
}

/// When the last of `streams` (of `role`) moved its last byte, in seconds
/// on the samples' clock; `None` when the summary does not say for each.
pub fn data_end_s(step: &StepResult, role: Role, streams: &[u16]) -> Option<f64> {
    let t = times(step, role, streams);
    if t.is_empty() {
        return None;
    }
    t.into_iter()
        .map(|x| x.map(|(_, last)| last))
        .collect::<Option<Vec<f64>>>()
        .map(|v| v.into_iter().fold(f64::MIN, f64::max))
}

/// The ticks `[from, to)` of `role`'s interval series (`streams`, summed
/// `n` ticks long) that every stream spent whole inside its own data
/// movement: from the tick where the last stream to start had started
/// (`first_seconds`, TCP) to the one before the first stream to stop had
/// stopped (`seconds`), the warm-up (`omitted_s`) out. Without a stream's
/// times (older results) every tick but the last. At least one tick.
pub fn whole_intervals(step: &StepResult, role: Role, streams: &[u16], n: usize) -> (usize, usize) {
    let t = times(step, role, streams);
    let Some(t) = t.into_iter().collect::<Option<Vec<_>>>() else {
        return meshperf_stats::series::whole_ticks(&[], &[], 0.0, 1.0, n);
    };
    let omitted = match role {
        Role::Client => step.sides.client.as_ref(),
        Role::Server => step.sides.server.as_ref(),
    }
    .and_then(|s| s.get("omitted_s"))
    .and_then(Value::as_f64)
    .unwrap_or(0.0);
    let ends: Vec<f64> = t.iter().map(|x| x.1).collect();
    let starts: Vec<f64> = t
        .iter()
        .map(|x| x.0)
        .collect::<Option<_>>()
        .unwrap_or_default();
    meshperf_stats::series::whole_ticks(&ends, &starts, omitted, tick_s(step), n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tcp_stream step whose server received two streams with these
    /// summary times (seconds, first_seconds), 10 ms ticks.
    fn step(streams: Value, omitted: Option<f64>) -> StepResult {
        let mut side = json!({"interval_ms": 10, "streams": streams});
        if let Some(o) = omitted {
            side["omitted_s"] = json!(o);
        }
        serde_json::from_value(json!({
            "index": 0, "kind": "tcp_stream", "params": {},
            "summary": side, "sides": {"server": side},
        }))
        .unwrap()
    }

    #[test]
    fn whole_intervals_follow_the_stream_that_starts_last_and_the_one_that_ends_first() {
        // The page's case (web/test/result.test.mjs): one stream starts at
        // 5.1 ms, the other ends at 50.1 ms: ticks 1 to 4 are whole.
        let s = step(
            json!([
                {"index": 0, "dir": "recv", "bytes": 0, "seconds": 0.0501, "first_seconds": 0.0002},
                {"index": 1, "dir": "recv", "bytes": 0, "seconds": 0.0602, "first_seconds": 0.0051},
            ]),
            None,
        );
        assert_eq!(whole_intervals(&s, Role::Server, &[0, 1], 7), (1, 5));
        assert_eq!(data_end_s(&s, Role::Server, &[0, 1]), Some(0.0602));
        // A stream the summary does not list: every tick but the last.
        assert_eq!(whole_intervals(&s, Role::Server, &[0, 2], 7), (0, 6));
        assert_eq!(data_end_s(&s, Role::Server, &[0, 2]), None);
        // A tick that ends where the stream ended is whole.
        let s = step(
            json!([{"index": 0, "dir": "recv", "bytes": 0, "seconds": 0.05, "first_seconds": 0.0}]),
            None,
        );
        assert_eq!(whole_intervals(&s, Role::Server, &[0], 6), (0, 5));
    }

    #[test]
    fn the_warm_up_is_out_of_the_whole_intervals_and_back_in_the_data_end() {
        // 20 ms of warm-up: the summary's times start after it.
        let s = step(
            json!([{"index": 0, "dir": "recv", "bytes": 0, "seconds": 0.0405, "first_seconds": 0.0}]),
            Some(0.02),
        );
        assert_eq!(whole_intervals(&s, Role::Server, &[0], 7), (2, 6));
        assert!((data_end_s(&s, Role::Server, &[0]).unwrap() - 0.0605).abs() < 1e-12);
        // unix_stream: no first_seconds, so from the warm-up's end.
        let s = step(
            json!([{"index": 0, "dir": "recv", "bytes": 0, "seconds": 0.0405}]),
            None,
        );
        assert_eq!(whole_intervals(&s, Role::Server, &[0], 5), (0, 4));
    }
}
