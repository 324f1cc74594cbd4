//! Plans and results as `serde_json::Value`s shaped exactly as the
//! protocol's types ([`Plan`], [`RunResult`]) serialise: checked field by
//! field, defaults filled in, unknown fields dropped, keys in struct order.
//! This is what a round trip through the typed structs gives, without their
//! serde `Deserialize` code: deserialising into typed structs is most of the
//! wasm module (about 190 KB of generic code), while these checks are a few
//! KB. The tests compare both ways on the same inputs, so a field added to
//! the protocol's types and not here fails them.
//!
//! [`RunResult`]: meshperf_protocol::result::RunResult

use meshperf_protocol::frame::SampleKind;
use meshperf_protocol::msg::Role;
use meshperf_protocol::params::Kind;
use meshperf_protocol::plan::{HistSpec, Plan, Transport};
use serde_json::{Map, Value};

type Obj = Map<String, Value>;

/// What is wrong with a field, as one line.
fn bad(field: &str, what: &str) -> String {
    format!("invalid `{field}`: expected {what}")
}

fn missing(field: &str) -> String {
    format!("missing field `{field}`")
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Obj, String> {
    v.as_object()
        .ok_or_else(|| format!("invalid type: expected {what} (an object)"))
}

/// Field `k` of `o`, `None` when absent (and, with `null_absent`, when null).
fn field<'a>(o: &'a Obj, k: &str, null_absent: bool) -> Option<&'a Value> {
    o.get(k).filter(|v| !(null_absent && v.is_null()))
}

fn required<'a>(o: &'a Obj, k: &str) -> Result<&'a Value, String> {
    o.get(k).ok_or_else(|| missing(k))
}

fn uint(v: &Value, k: &str, max: u64, what: &str) -> Result<Value, String> {
    match v.as_u64() {
        Some(n) if n <= max => Ok(Value::from(n)),
        _ => Err(bad(k, what)),
    }
}

fn uint_or(o: &Obj, k: &str, max: u64, what: &str, default: u64) -> Result<Value, String> {
    field(o, k, false).map_or(Ok(Value::from(default)), |v| uint(v, k, max, what))
}

fn name_of<T>(v: &Value, k: &str, from: fn(&str) -> Option<T>, what: &str) -> Result<T, String> {
    v.as_str().and_then(from).ok_or_else(|| bad(k, what))
}

fn map_or_empty(o: &Obj, k: &str) -> Result<Value, String> {
    match field(o, k, false) {
        None => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(_) => Err(bad(k, "an object")),
    }
}

fn array_or_empty<'a>(o: &'a Obj, k: &str) -> Result<&'a [Value], String> {
    match field(o, k, false) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(bad(k, "an array")),
    }
}

/// An optional string field: absent and null both drop it.
fn opt_string(o: &Obj, k: &str, out: &mut Obj) -> Result<(), String> {
    match field(o, k, true) {
        None => Ok(()),
        Some(v @ Value::String(_)) => {
            out.insert(k.into(), v.clone());
            Ok(())
        }
        Some(_) => Err(bad(k, "a string or null")),
    }
}

fn u64s(v: &Value, k: &str) -> Result<Value, String> {
    let a = v
        .as_array()
        .ok_or_else(|| bad(k, "an array of whole numbers"))?;
    if a.iter().all(|x| x.as_u64().is_some()) {
        Ok(v.clone())
    } else {
        Err(bad(k, "an array of whole numbers >= 0"))
    }
}

const KINDS: &str = "one of tcp_stream, tcp_rr, udp_stream, udp_rr, unix_stream, unix_rr";

/// A plan value as [`Plan`] serialises it.
pub fn plan(v: &Value) -> Result<Obj, String> {
    let o = object(v, "a plan")?;
    let mut out = Map::new();
    let kind = name_of(required(o, "kind")?, "kind", Kind::from_name, KINDS)?;
    out.insert("kind".into(), kind.name().into());
    out.insert("params".into(), map_or_empty(o, "params")?);
    out.insert("sweep".into(), map_or_empty(o, "sweep")?);
    out.insert(
        "repeat".into(),
        uint_or(o, "repeat", u32::MAX.into(), "a whole number", 1)?,
    );
    opt_string(o, "name", &mut out)?;
    opt_string(o, "description", &mut out)?;
    if let Some(h) = field(o, "histogram", true) {
        out.insert("histogram".into(), hist_spec(h)?);
    }
    Ok(out)
}

/// A plan's `histogram` as [`HistSpec`] serialises it.
fn hist_spec(v: &Value) -> Result<Value, String> {
    let o = object(v, "histogram")?;
    let num = |k: &str, v: &Value| {
        v.as_f64()
            .map(Value::from)
            .ok_or_else(|| bad(k, "a number"))
    };
    let mut out = Map::new();
    out.insert("bin_us".into(), num("bin_us", required(o, "bin_us")?)?);
    let low = field(o, "low_us", false).map_or(Ok(Value::from(0.0)), |v| num("low_us", v))?;
    out.insert("low_us".into(), low);
    Ok(Value::Object(out))
}

/// A shaped plan (from [`plan`]) as the protocol's [`Plan`], built by hand.
pub fn to_plan(o: &Obj) -> Plan {
    let map = |k: &str| o[k].as_object().cloned().unwrap_or_default();
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(String::from);
    Plan {
        kind: o["kind"]
            .as_str()
            .and_then(Kind::from_name)
            .expect("shaped"),
        params: map("params"),
        sweep: map("sweep"),
        repeat: o["repeat"].as_u64().expect("shaped") as u32,
        name: text("name"),
        description: text("description"),
        histogram: o.get("histogram").map(|h| HistSpec {
            bin_us: h["bin_us"].as_f64().expect("shaped"),
            low_us: h["low_us"].as_f64().expect("shaped"),
        }),
    }
}

fn role_kind_stream(o: &Obj, out: &mut Obj) -> Result<(), String> {
    let role = name_of(
        required(o, "role")?,
        "role",
        Role::from_name,
        "client or server",
    )?;
    let kind = name_of(
        required(o, "kind")?,
        "kind",
        SampleKind::from_name,
        "a sample kind",
    )?;
    out.insert("role".into(), role.name().into());
    out.insert("kind".into(), kind.name().into());
    out.insert(
        "stream".into(),
        uint_or(o, "stream", u16::MAX.into(), "a stream number", 0)?,
    );
    Ok(())
}

fn series(v: &Value) -> Result<Value, String> {
    let o = object(v, "a sample series")?;
    let mut out = Map::new();
    role_kind_stream(o, &mut out)?;
    out.insert("values".into(), u64s(required(o, "values")?, "values")?);
    Ok(Value::Object(out))
}

fn histogram(v: &Value) -> Result<Value, String> {
    let o = object(v, "a series histogram")?;
    let mut out = Map::new();
    role_kind_stream(o, &mut out)?;
    for k in ["n", "low", "bin_width"] {
        out.insert(
            k.into(),
            uint(required(o, k)?, k, u64::MAX, "a whole number")?,
        );
    }
    out.insert("counts".into(), u64s(required(o, "counts")?, "counts")?);
    Ok(Value::Object(out))
}

fn step(v: &Value) -> Result<Value, String> {
    let o = object(v, "a step")?;
    let mut out = Map::new();
    out.insert(
        "index".into(),
        uint(
            required(o, "index")?,
            "index",
            usize::MAX as u64,
            "a whole number",
        )?,
    );
    let kind = name_of(required(o, "kind")?, "kind", Kind::from_name, KINDS)?;
    out.insert("kind".into(), kind.name().into());
    out.insert("params".into(), map_or_empty(o, "params")?);
    let point = array_or_empty(o, "point")?
        .iter()
        .map(|p| match p.as_array().map(Vec::as_slice) {
            Some([Value::String(_), _]) => Ok(p.clone()),
            _ => Err(bad("point", "[[axis name, value], ...]")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("point".into(), point.into());
    out.insert(
        "repeat".into(),
        uint_or(o, "repeat", u32::MAX.into(), "a whole number", 0)?,
    );
    let transport = match field(o, "transport", false) {
        None => Transport::Tcp,
        Some(t) => name_of(
            t,
            "transport",
            Transport::from_name,
            "unix, tcp or tcp_local",
        )?,
    };
    out.insert("transport".into(), transport.name().into());
    out.insert(
        "summary".into(),
        field(o, "summary", false).cloned().unwrap_or(Value::Null),
    );
    let mut sides = Map::new();
    if let Some(s) = field(o, "sides", false) {
        let s = s.as_object().ok_or_else(|| bad("sides", "an object"))?;
        for k in ["client", "server"] {
            if let Some(x) = field(s, k, true) {
                sides.insert(k.into(), x.clone());
            }
        }
    }
    out.insert("sides".into(), sides.into());
    let samples = array_or_empty(o, "samples")?
        .iter()
        .map(series)
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("samples".into(), samples.into());
    let hists = array_or_empty(o, "histograms")?
        .iter()
        .map(histogram)
        .collect::<Result<Vec<_>, _>>()?;
    if !hists.is_empty() {
        out.insert("histograms".into(), hists.into());
    }
    opt_string(o, "error", &mut out)?;
    for k in ["started_unix", "wall_seconds"] {
        if let Some(v) = field(o, k, true) {
            // As `Option<f64>` writes it: a float, whole or not.
            let f = v.as_f64().ok_or_else(|| bad(k, "a number or null"))?;
            out.insert(k.into(), Value::from(f));
        }
    }
    // A matrix step's agents: `{"server": i, "client": j}`.
    if let Some(p) = field(o, "pair", true) {
        let p = p.as_object().ok_or_else(|| bad("pair", "an object"))?;
        let mut pair = Map::new();
        for k in ["server", "client"] {
            let i = p.get(k).and_then(Value::as_u64);
            pair.insert(k.into(), i.ok_or_else(|| bad("pair", "{server, client} agent indices"))?.into());
        }
        out.insert("pair".into(), pair.into());
    }
    Ok(Value::Object(out))
}

/// A result value (already through `result::upgrade`) as `RunResult`
/// serialises it.
pub fn result(v: &Value) -> Result<Value, String> {
    let o = object(v, "a result")?;
    let mut out = Map::new();
    let format = required(o, "format")?;
    if !format.is_string() {
        return Err(bad("format", "a string"));
    }
    out.insert("format".into(), format.clone());
    out.insert(
        "version".into(),
        uint(
            required(o, "version")?,
            "version",
            u32::MAX.into(),
            "a whole number",
        )?,
    );
    let created = match field(o, "created_unix", false) {
        None => 0.0,
        Some(t) => t.as_f64().ok_or_else(|| bad("created_unix", "a number"))?,
    };
    out.insert("created_unix".into(), Value::from(created));
    out.insert("plan".into(), plan(required(o, "plan")?)?.into());
    out.insert(
        "agents".into(),
        array_or_empty(o, "agents")?.to_vec().into(),
    );
    let steps = array_or_empty(o, "steps")?
        .iter()
        .map(step)
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("steps".into(), steps.into());
    match field(o, "samples_replaced", false) {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            out.insert("samples_replaced".into(), true.into());
        }
        Some(_) => return Err(bad("samples_replaced", "true or false")),
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshperf_protocol::result::RunResult;
    use serde_json::json;

    /// Both ways agree: same value when the typed path accepts, an error
    /// when it refuses.
    fn same_as_typed(v: Value) {
        let typed = serde_json::from_value::<RunResult>(v.clone())
            .map(|r| serde_json::to_value(r).unwrap());
        match (typed, result(&v)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{v}");
                // Key order too (it decides the link bytes).
                assert_eq!(a.to_string(), b.to_string());
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{v}: typed {a:?}, shaped {b:?}"),
        }
        let p = &v["plan"];
        let typed = serde_json::from_value::<Plan>(p.clone());
        match (typed, plan(p)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(
                    serde_json::to_string(&a).unwrap(),
                    Value::from(b.clone()).to_string()
                );
                assert_eq!(to_plan(&b), a);
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{p}: typed {a:?}, shaped {b:?}"),
        }
    }

    fn full() -> Value {
        json!({"extra": 1, "steps": [
            {"error": "boom", "histograms": [{"counts": [1, 2], "bin_width": 1000, "low": 5000,
                "n": 3, "kind": "rtt_ns", "role": "client", "x": 0}],
             "samples": [{"values": [1, 2, 3], "kind": "interval_bytes", "role": "server", "stream": 2}],
             "sides": {"server": {"a": 1}, "client": null, "other": 3},
             "summary": {"z": 1, "a": [1.5, null]}, "transport": "tcp_local", "repeat": 3,
             "point": [["msg_bytes", 1024], ["transport", "tcp_local"]],
             "params": {"b": 1, "a": 2}, "kind": "unix_rr", "index": 7,
             "started_unix": 1795000000, "wall_seconds": 0.25},
            {"index": 0, "kind": "tcp_rr", "error": null, "histograms": []}],
          "agents": [{"hostname": "a"}], "plan": {"description": null, "name": "n", "repeat": 2,
            "sweep": {"x": [1]}, "params": {}, "kind": "udp_stream", "y": 1,
            "histogram": {"low_us": 100, "bin_us": 2.5, "x": 1}},
          "created_unix": 1795000000, "version": 1, "format": "meshperf-result",
          "samples_replaced": true})
    }

    #[test]
    fn shapes_like_the_typed_round_trip() {
        same_as_typed(full());
        same_as_typed(
            json!({"format": "meshperf-result", "version": 1, "plan": {"kind": "tcp_rr"}}),
        );
        same_as_typed(
            json!({"format": "meshperf-result", "version": 1, "created_unix": 2.5,
            "plan": {"kind": "tcp_rr", "name": "x"}, "samples_replaced": false, "steps": []}),
        );
    }

    #[test]
    fn refuses_what_the_typed_path_refuses() {
        let edits: Vec<(&str, Value)> = vec![
            ("/format", json!(1)),
            ("/version", json!(-1)),
            ("/version", json!(1.0)),
            ("/version", json!(1u64 << 33)),
            ("/created_unix", json!("x")),
            ("/created_unix", json!(null)),
            ("/plan/kind", json!("teleport")),
            ("/plan/repeat", json!(null)),
            ("/plan/params", json!(null)),
            ("/plan/sweep", json!([])),
            ("/plan/name", json!(3)),
            ("/plan/histogram", json!(3)),
            ("/plan/histogram", json!({"low_us": 1})),
            ("/plan/histogram", json!({"bin_us": "1"})),
            ("/plan/histogram", json!({"bin_us": 1, "low_us": null})),
            ("/agents", json!({})),
            ("/steps", json!(null)),
            ("/samples_replaced", json!(1)),
            ("/steps/0/index", json!(-1)),
            ("/steps/0/kind", json!(null)),
            ("/steps/0/point", json!([["a"]])),
            ("/steps/0/point", json!([["a", 1, 2]])),
            ("/steps/0/point", json!([[1, 1]])),
            ("/steps/0/point/0", json!(["a", null])),
            ("/steps/0/repeat", json!(4294967296u64)),
            ("/steps/0/transport", json!("carrier")),
            ("/steps/0/transport", json!(null)),
            ("/steps/0/summary", json!(null)),
            ("/steps/0/sides", json!(null)),
            ("/steps/0/sides", json!({})),
            ("/steps/0/sides/client", json!(7)),
            ("/steps/0/samples/0/role", json!("both")),
            ("/steps/0/samples/0/kind", json!("rtt")),
            ("/steps/0/samples/0/stream", json!(65536)),
            ("/steps/0/samples/0/stream", json!(null)),
            ("/steps/0/samples/0/values", json!([1, -2])),
            ("/steps/0/samples/0/values", json!([1.5])),
            ("/steps/0/samples/0/values", json!(null)),
            ("/steps/0/histograms/0/n", json!(null)),
            ("/steps/0/histograms/0/counts", json!([0.5])),
            ("/steps/0/error", json!(false)),
            ("/steps/1", json!([])),
        ];
        for (ptr, x) in edits {
            let mut v = full();
            *v.pointer_mut(ptr).unwrap_or_else(|| panic!("{ptr}")) = x;
            same_as_typed(v);
        }
        for key in [
            "format",
            "version",
            "plan",
            "created_unix",
            "agents",
            "steps",
        ] {
            let mut v = full();
            v.as_object_mut().unwrap().remove(key);
            same_as_typed(v);
        }
        for key in [
            "index",
            "kind",
            "params",
            "point",
            "repeat",
            "transport",
            "summary",
            "sides",
            "samples",
            "histograms",
            "error",
            "started_unix",
            "wall_seconds",
        ] {
            let mut v = full();
            v["steps"][0].as_object_mut().unwrap().remove(key);
            same_as_typed(v);
        }
        for key in ["role", "kind", "stream", "values"] {
            let mut v = full();
            v["steps"][0]["samples"][0]
                .as_object_mut()
                .unwrap()
                .remove(key);
            same_as_typed(v);
        }
        for key in ["role", "kind", "stream", "n", "low", "bin_width", "counts"] {
            let mut v = full();
            v["steps"][0]["histograms"][0]
                .as_object_mut()
                .unwrap()
                .remove(key);
            same_as_typed(v);
        }
        for key in ["kind", "params", "sweep", "repeat", "name", "description"] {
            let mut v = full();
            v["plan"].as_object_mut().unwrap().remove(key);
            same_as_typed(v);
        }
    }
}
