//! A plan from the command line, as the seeds' tools take their tests:
//! `--kind tcp_rr --set req_bytes=64 --sweep resp_bytes=64:1500:8`, or a
//! preset or plan file with some values changed (`--preset socketsend --set
//! count=100`). The result is an ordinary [`Plan`], validated like any other.

use meshperf_protocol::params::{parse_rate, Kind, ParamType};
use meshperf_protocol::plan::Plan;
use serde_json::{json, Map, Value};

/// One value as typed: JSON when it reads as JSON (`64`, `0.5`, `true`,
/// `"x"`), hexadecimal (`0x10`), a size with a K/M/G suffix in powers of
/// 1024 (`1M` is 1048576),
/// else the text itself (`receive`, `bbr`, `127.0.0.2`).
pub fn value(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if !v.is_object() && !v.is_array() {
            return v;
        }
    }
    // Hexadecimal, as udpmon takes its TOS (-T10 is 0x10).
    if let Some(h) = text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        if let Ok(n) = u64::from_str_radix(h, 16) {
            return Value::from(n);
        }
    }
    let mult = match text.chars().last() {
        Some('k' | 'K') => 1u64 << 10,
        Some('m' | 'M') => 1 << 20,
        Some('g' | 'G') => 1 << 30,
        _ => return Value::from(text),
    };
    match text[..text.len() - 1].parse::<u64>() {
        Ok(n) if n.checked_mul(mult).is_some() => Value::from(n * mult),
        _ => Value::from(text),
    }
}

/// A rate parameter's values (`rate=20M`, `rate=10M,20M`) with their
/// k/M/G suffixes read in powers of 1000, as iperf3's `-b` and the agent's
/// `--max-udp-rate` read them; any other parameter's text as it is.
fn rates(kind: Kind, name: &str, text: &str) -> String {
    if !kind
        .params()
        .iter()
        .any(|s| s.name == name && s.ty == ParamType::Rate)
    {
        return text.to_string();
    }
    let one = |t: &str| parse_rate(t).map_or(t.to_string(), |r| r.to_string());
    text.split(',')
        .map(|item| item.split(':').map(one).collect::<Vec<_>>().join(":"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `NAME=VALUE`.
fn pair<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.is_empty() => Ok((k.trim(), v)),
        _ => Err(format!("{flag} takes NAME=VALUE, got {s:?}")),
    }
}

/// A sweep axis as typed: `a,b,c` (a list), `FROM:TO:STEP` (a range) or
/// `pow2:LOW:HIGH` (powers of two), in the plan file's forms; for a paired
/// axis (`NAME+NAME`) a list of `/`-joined tuples, `10.1.0.1/10.1.0.2,...`.
pub fn axis_for(name: &str, spec: &str) -> Result<Value, String> {
    if !name.contains('+') {
        return axis(spec);
    }
    Ok(Value::Array(
        spec.split(',')
            .map(|t| Value::Array(t.split('/').map(value).collect()))
            .collect(),
    ))
}

/// A single parameter's axis (see [`axis_for`]).
pub fn axis(spec: &str) -> Result<Value, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let nums = |p: &[&str]| -> Result<Vec<Value>, String> {
        p.iter()
            .map(|x| match value(x) {
                v @ Value::Number(_) => Ok(v),
                _ => Err(format!("{x:?} in {spec:?} is not a number")),
            })
            .collect()
    };
    match parts.as_slice() {
        [one] => Ok(Value::Array(one.split(',').map(value).collect())),
        ["pow2", lo, hi] => Ok(json!({ "pow2": nums(&[lo, hi])? })),
        [from, to, step] => {
            let n = nums(&[from, to, step])?;
            Ok(json!({"from": n[0], "to": n[1], "step": n[2]}))
        }
        _ => Err(format!(
            "a sweep is a,b,c or FROM:TO:STEP or pow2:LOW:HIGH, got {spec:?}"
        )),
    }
}

/// The plan: `base` (a preset or plan file) or a bare `kind`, with `sets`
/// applied to its parameters, `sweeps` (if any) replacing its axes, and
/// `repeat` its repetitions.
pub fn build(
    base: Option<Plan>,
    kind: Option<&str>,
    sets: &[String],
    sweeps: &[String],
    repeat: Option<u32>,
) -> Result<Plan, String> {
    let mut plan = match (base, kind) {
        (Some(p), _) => p,
        (None, Some(k)) => Plan {
            kind: Kind::from_name(k).ok_or_else(|| {
                let all: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown kind {k:?}; known: {}", all.join(", "))
            })?,
            params: Map::new(),
            sweep: Map::new(),
            repeat: 1,
            name: None,
            description: None,
            histogram: None,
            expect: None,
        },
        (None, None) => return Err("give --plan, --preset or --kind".into()),
    };
    for s in sets {
        let (k, v) = pair("--set", s)?;
        let v = rates(plan.kind, k, v);
        plan.params.insert(k.to_string(), value(&v));
    }
    if !sweeps.is_empty() {
        plan.sweep = Map::new();
        for s in sweeps {
            let (k, v) = pair("--sweep", s)?;
            plan.sweep
                .insert(k.to_string(), axis_for(k, &rates(plan.kind, k, v))?);
        }
    }
    if let Some(r) = repeat {
        plan.repeat = r;
    }
    // Checked now, before any agent is asked for anything.
    plan.expand().map_err(|e| e.to_string())?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_json_sizes_or_text() {
        assert_eq!(value("64"), json!(64));
        assert_eq!(value("0.5"), json!(0.5));
        assert_eq!(value("true"), json!(true));
        assert_eq!(value("1M"), json!(1048576));
        assert_eq!(value("128k"), json!(131072));
        assert_eq!(value("receive"), json!("receive"));
        assert_eq!(value("127.0.0.2"), json!("127.0.0.2"));
        assert_eq!(value("\"64\""), json!("64"));
        assert_eq!(value("1.5M"), json!("1.5M"), "left for the agent to refuse");
        assert_eq!(value("0x10"), json!(16));
        assert_eq!(value("0xB8"), json!(184));
        assert_eq!(value("0xZ"), json!("0xZ"));
    }

    #[test]
    fn axes_in_the_plan_file_forms() {
        assert_eq!(axis("1,2,4").unwrap(), json!([1, 2, 4]));
        assert_eq!(axis("tcp,unix").unwrap(), json!(["tcp", "unix"]));
        assert_eq!(
            axis("64:1500:8").unwrap(),
            json!({"from": 64, "to": 1500, "step": 8})
        );
        assert_eq!(axis("pow2:1:64K").unwrap(), json!({"pow2": [1, 65536]}));
        assert!(axis("1:2").unwrap_err().contains("FROM:TO:STEP"));
        assert_eq!(
            axis_for("mss+client_bind", "1460/10.0.0.1,8960/10.0.1.1").unwrap(),
            json!([[1460, "10.0.0.1"], [8960, "10.0.1.1"]])
        );
        assert_eq!(
            axis_for("client_bind+server_bind", "::1/::1").unwrap(),
            json!([["::1", "::1"]])
        );
        assert!(axis("1:x:2").unwrap_err().contains("\"x\""));
    }

    #[test]
    fn rates_read_in_powers_of_1000() {
        let p = build(
            None,
            Some("udp_stream"),
            &["rate=20M".into(), "duration_s=1".into()],
            &["pkt_bytes=1000,1400".into()],
            None,
        )
        .unwrap();
        assert_eq!(p.params["rate"], json!(20000000));
        assert_eq!(p.params["duration_s"], json!(1));
        let p = build(
            None,
            Some("tcp_stream"),
            &[],
            &["rate=10M:30M:10M".into()],
            None,
        )
        .unwrap();
        assert_eq!(
            p.sweep["rate"],
            json!({"from": 10000000, "to": 30000000, "step": 10000000})
        );
        // Sizes keep their powers of 1024.
        let p = build(
            None,
            Some("tcp_stream"),
            &["msg_bytes=1M".into()],
            &[],
            None,
        )
        .unwrap();
        assert_eq!(p.params["msg_bytes"], json!(1048576));
    }

    #[test]
    fn sets_override_sweeps_replace_and_the_plan_is_checked() {
        let p = build(
            None,
            Some("tcp_rr"),
            &["req_bytes=64".into(), "count=200".into()],
            &["resp_bytes=64:192:64".into()],
            Some(2),
        )
        .unwrap();
        assert_eq!(p.kind, Kind::TcpRr);
        assert_eq!(p.params["count"], 200);
        assert_eq!(p.expand().unwrap().len(), 6);
        let base = meshperf_protocol::presets::preset("udp_bw_mon").unwrap();
        let p = build(
            Some(base),
            None,
            &["count=100".into()],
            &["wait_us=5,50".into()],
            None,
        )
        .unwrap();
        assert_eq!(p.kind, Kind::UdpStream);
        assert_eq!(p.params["count"], 100);
        assert_eq!(p.sweep["wait_us"], json!([5, 50]));
        assert!(build(None, Some("tcp_xx"), &[], &[], None)
            .unwrap_err()
            .starts_with("unknown kind \"tcp_xx\"; known: tcp_stream"));
        assert!(build(None, Some("tcp_rr"), &["count".into()], &[], None)
            .unwrap_err()
            .contains("--set takes NAME=VALUE"));
        assert!(build(None, None, &[], &[], None).is_err());
        let e = build(
            None,
            Some("tcp_rr"),
            &[],
            &["a=1,2".into(), "b=1,2".into(), "c=1,2".into()],
            None,
        )
        .unwrap_err();
        assert!(e.contains("axes") || e.contains("axis"), "{e}");
    }
}
