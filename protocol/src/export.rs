//! Exports of a result: the `;`-separated CSV of `meshperf run --csv` and
//! the web app's CSV export (through the wasm codec module), one row per
//! step: `step;kind;<axes>;repeat;started_unix;wall_seconds;<figures>;error`,
//! nested figures flattened to dotted names (`rtt_us.p99`, `streams.1.bytes`);
//! a matrix run has `client;server` (the agents' indices) after `kind`.
//! Each side's `cpu` comes last among the figures, as `cpu.client.percent`,
//! `cpu.server.user_seconds`, ... (the summary's own `cpu` is not repeated).

use crate::result::{RunResult, StepResult};
use serde_json::Value;

/// A summary's figures as `(name, value)` columns, in the order the summary
/// gives them: nested statistics flattened to dotted names (`rtt_us.median`,
/// `interarrival_us.p99`) and, with `arrays`, list entries by index
/// (`streams.1.bytes`). The web app's CSV export names them the same way.
pub fn scalars(summary: &Value, arrays: bool) -> Vec<(String, String)> {
    fn walk(v: &Value, name: String, arrays: bool, out: &mut Vec<(String, String)>) {
        match v {
            Value::Number(n) => out.push((name, n.to_string())),
            Value::Bool(b) => out.push((name, b.to_string())),
            Value::String(s) if !s.contains(';') => out.push((name, s.clone())),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, v)| walk(v, format!("{name}.{k}"), arrays, out)),
            Value::Array(a) if arrays => a
                .iter()
                .enumerate()
                .for_each(|(i, v)| walk(v, format!("{name}.{i}"), arrays, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(o) = summary.as_object() {
        // `cpu` and `link` are each side's, and named so (see `step_scalars`).
        for (k, v) in o
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "line" | "cpu" | "link"))
        {
            walk(v, k.clone(), arrays, &mut out);
        }
    }
    out
}

/// A step's figures for its CSV row: its summary's [`scalars`], then
/// each side's `cpu` as `cpu.client.*` and `cpu.server.*`, then its
/// `link` as `link.client.*` and `link.server.*`.
fn step_scalars(s: &StepResult) -> Vec<(String, String)> {
    let mut out = scalars(&s.summary, true);
    for key in ["cpu", "link"] {
        for (role, side) in [("client", &s.sides.client), ("server", &s.sides.server)] {
            if let Some(v) = side.as_ref().and_then(|v| v.get(key)) {
                let one = serde_json::json!({ role: v });
                out.extend(
                    scalars(&one, true)
                        .into_iter()
                        .map(|(k, v)| (format!("{key}.{k}"), v)),
                );
            }
        }
    }
    out
}

/// The whole run as `;`-separated CSV (Excel friendly, as udpmon).
pub fn csv(r: &RunResult) -> String {
    let mut cols: Vec<String> = Vec::new();
    for s in &r.steps {
        for (k, _) in step_scalars(s) {
            if !cols.contains(&k) {
                cols.push(k);
            }
        }
    }
    let axes: Vec<String> = r
        .steps
        .first()
        .map(|s| s.point.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    // A matrix run names each step's agents (indices into `agents`).
    let pairs = r.steps.iter().any(|s| s.pair.is_some());
    let pair_cols: &[&str] = if pairs { &["client", "server"] } else { &[] };
    let mut out = String::new();
    let head: Vec<String> = ["step", "kind"]
        .iter()
        .chain(pair_cols)
        .map(|s| s.to_string())
        .chain(axes.iter().cloned())
        .chain([
            "repeat".into(),
            "started_unix".into(),
            "wall_seconds".into(),
        ])
        .chain(cols.iter().cloned())
        .chain(["error".into()])
        .collect();
    out.push_str(&head.join(";"));
    out.push('\n');
    for s in &r.steps {
        let vals = step_scalars(s);
        let mut row = vec![s.index.to_string(), s.kind.name().to_string()];
        if pairs {
            let at = |f: fn(&crate::matrix::Pair) -> usize| {
                s.pair.as_ref().map_or(String::new(), |p| f(p).to_string())
            };
            row.extend([at(|p| p.client), at(|p| p.server)]);
        }
        row.extend(
            s.point
                .iter()
                .map(|(_, v)| v.to_string().trim_matches('"').to_string()),
        );
        row.push(s.repeat.to_string());
        for t in [s.started_unix, s.wall_seconds] {
            row.push(t.map_or(String::new(), |t| t.to_string()));
        }
        for c in &cols {
            row.push(
                vals.iter()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            );
        }
        row.push(s.error.clone().unwrap_or_default().replace(';', ","));
        out.push_str(&row.join(";"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_sides_cpu_gets_its_own_columns_and_records_keep_theirs() {
        let cpu = |p: f64| json!({"seconds": 1.0, "user_seconds": 0.25, "percent": p});
        let mut server = json!({"bytes": 10, "line": "x"});
        server["cpu"] = cpu(40.0);
        let step = json!({"index": 0, "kind": "tcp_stream", "summary": server,
            "sides": {"client": {"bytes": 10, "cpu": cpu(90.0)}, "server": server}});
        let r: RunResult = serde_json::from_value(json!({"format": "meshperf-result",
            "version": 1, "plan": {"kind": "tcp_stream"}, "steps": [step]}))
        .unwrap();
        // A quiet record (the summary's scalars) is as before `cpu`.
        assert_eq!(
            scalars(&r.steps[0].summary, true),
            [("bytes".into(), "10".into())]
        );
        let text = csv(&r);
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(';').collect()).collect();
        let cell = |name: &str| rows[1][rows[0].iter().position(|c| *c == name).unwrap()];
        assert_eq!(cell("cpu.client.percent"), "90.0", "{text}");
        assert_eq!(cell("cpu.server.percent"), "40.0", "{text}");
        assert_eq!(cell("cpu.server.user_seconds"), "0.25", "{text}");
        assert!(!rows[0].contains(&"cpu.percent"), "{text}");
    }
}
