//! Test plans: a kind, base parameters, up to two sweep axes and repetitions,
//! expanded into the ordered list of steps both the web app (through wasm)
//! and `meshperf run` execute. One definition of what a plan means.
//!
//! ```json
//! { "kind": "udp_stream",
//!   "params": { "pkt_bytes": 1400, "count": 10000, "wait_us": 20 },
//!   "sweep": { "wait_us": { "from": 0, "to": 100, "step": 10 } },
//!   "repeat": 1 }
//! ```
//! An axis is a list (`[1, 2, 4]`), a range (`{"from","to","step"}`) or
//! powers of two (`{"pow2": [1, 65536]}`, optionally `"per_octave": 4` for a
//! finer geometric grid). The special axis `transport` takes `unix`, `tcp`
//! (loopback) and `tcp_local` (a local non-loopback address) and switches a
//! `tcp_*` kind to its `unix_*` twin where asked. With two axes the first
//! written is the outer loop. A paired axis moves several parameters
//! together: its name joins them with `+` and each value is a list with one
//! entry per name (`{"client_bind+server_bind": [["10.1.0.1", "10.1.0.2"],
//! ["10.9.0.1", "10.9.0.2"]]}`: one address pair per MTU, as seed 002's
//! packet-driver loops over local/remote host pairs).

use crate::params::Kind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// Most steps a plan may expand to (repetitions included).
pub const MAX_STEPS: usize = 10_000;

/// A plan as written in a plan file or built by the web app.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub kind: Kind,
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Sweep axes in the order written (outer first).
    #[serde(default)]
    pub sweep: Map<String, Value>,
    #[serde(default = "one")]
    pub repeat: u32,
    /// Optional human name (presets have one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The histogram bins the plan's results are first shown with (the web
    /// app's histogram panel, `meshperf run -H`); re-binnable afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<HistSpec>,
    /// Expectations every step must meet (`"bits_per_second >= 9G"`; see
    /// [`crate::expect`]): `meshperf run` exits 3 when one is not met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Vec<String>>,
}

/// Histogram bins of a plan, as udp_req_timo's `-b` (width) and `-m` (low
/// limit), in us; they apply to round-trip and inter-packet times.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HistSpec {
    pub bin_us: f64,
    #[serde(default)]
    pub low_us: f64,
}

fn one() -> u32 {
    1
}

/// Where a step's two ends talk over.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// AF_UNIX inside one agent.
    Unix,
    /// TCP to the serving agent's address as the controller reached it.
    Tcp,
    /// TCP to a local non-loopback address of the serving agent.
    TcpLocal,
}

impl Transport {
    /// The snake_case name used in JSON (as serde writes it).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
            Transport::TcpLocal => "tcp_local",
        }
    }

    /// The transport whose [`Transport::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Transport::Unix, Transport::Tcp, Transport::TcpLocal]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// One step of an expanded plan.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub index: usize,
    pub kind: Kind,
    pub params: Map<String, Value>,
    /// The sweep coordinates of this step (axis name, value), outer first.
    pub point: Vec<(String, Value)>,
    /// Repetition number, 0-based.
    pub repeat: u32,
    pub transport: Transport,
}

/// A plan that cannot be run.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// An axis is not a list, range or pow2 form, or its numbers are unusable.
    #[error("sweep axis {axis}: {message}")]
    Axis { axis: String, message: String },
    /// More than two axes, or too many steps.
    #[error("{0}")]
    Shape(String),
    /// Not a plan at all.
    #[error("not a meshperf plan: {0}")]
    Parse(String),
}

fn axis_err(axis: &str, message: impl Into<String>) -> PlanError {
    PlanError::Axis {
        axis: axis.into(),
        message: message.into(),
    }
}

/// 2^64, the first f64 past every u64.
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// The values of one axis.
pub fn axis_values(name: &str, spec: &Value) -> Result<Vec<Value>, PlanError> {
    let num = |v: &Value, what: &str| {
        v.as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| axis_err(name, format!("{what} must be a number")))
    };
    let vals: Vec<Value> = match spec {
        Value::Array(a) if !a.is_empty() => a.clone(),
        Value::Array(_) => return Err(axis_err(name, "an empty list sweeps nothing")),
        Value::Object(o) if o.contains_key("pow2") => {
            let r = o["pow2"]
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| axis_err(name, "pow2 takes [low, high]"))?;
            let (lo, hi) = (num(&r[0], "pow2 low")?, num(&r[1], "pow2 high")?);
            if lo < 1.0 || hi < lo {
                return Err(axis_err(name, "pow2 needs 1 <= low <= high"));
            }
            // Values are whole numbers of 64 bits (and beyond 2^64 the
            // loop below would not reach `high` in whole steps).
            if hi >= TWO_64 {
                return Err(axis_err(name, "pow2 high must be below 2^64"));
            }
            let per = o
                .get("per_octave")
                .map(|v| num(v, "per_octave"))
                .transpose()?
                .unwrap_or(1.0);
            if !(1.0..=64.0).contains(&per) {
                return Err(axis_err(name, "per_octave must be between 1 and 64"));
            }
            let mut out: Vec<u64> = Vec::new();
            let mut k = 0.0;
            loop {
                let v = (lo * 2f64.powf(k / per)).round();
                if v > hi * (1.0 + 1e-12) || out.len() > MAX_STEPS {
                    break;
                }
                if out.last() != Some(&(v as u64)) {
                    out.push(v as u64);
                }
                k += 1.0;
            }
            if out.is_empty() {
                return Err(axis_err(
                    name,
                    format!("pow2 [{lo}, {hi}] holds no whole number"),
                ));
            }
            out.into_iter().map(Value::from).collect()
        }
        Value::Object(o) if o.contains_key("from") => {
            let from = num(&o["from"], "from")?;
            let to = num(o.get("to").unwrap_or(&Value::Null), "to")?;
            let step = num(o.get("step").unwrap_or(&Value::Null), "step")?;
            if step <= 0.0 {
                return Err(axis_err(name, "step must be above 0"));
            }
            if to < from {
                return Err(axis_err(name, "to must not be below from"));
            }
            // In f64 first: (to - from) / step may pass what a usize holds.
            let n = ((to - from) / step + 1e-9).floor() + 1.0;
            if n.is_nan() || n > MAX_STEPS as f64 {
                return Err(axis_err(
                    name,
                    format!("{n} points is more than {MAX_STEPS}"),
                ));
            }
            let n = n as usize;
            let ints = [from, step].iter().all(|f| f.fract() == 0.0);
            (0..n)
                .map(|i| {
                    let v = from + step * i as f64;
                    if ints {
                        Value::from(v as i64)
                    } else {
                        Value::from(v)
                    }
                })
                .collect()
        }
        _ => {
            return Err(axis_err(
                name,
                "must be a list, {\"from\",\"to\",\"step\"} or {\"pow2\": [low, high]}",
            ))
        }
    };
    Ok(vals)
}

fn twin(kind: Kind, t: Transport) -> Kind {
    match (kind, t) {
        (Kind::TcpStream, Transport::Unix) => Kind::UnixStream,
        (Kind::TcpRr, Transport::Unix) => Kind::UnixRr,
        (Kind::UnixStream, Transport::Tcp | Transport::TcpLocal) => Kind::TcpStream,
        (Kind::UnixRr, Transport::Tcp | Transport::TcpLocal) => Kind::TcpRr,
        (k, _) => k,
    }
}

impl Plan {
    /// Parses a plan from JSON text.
    pub fn from_json(text: &str) -> Result<Plan, PlanError> {
        serde_json::from_str(text).map_err(|e| PlanError::Parse(e.to_string()))
    }

    /// Expands the plan into steps: axes outer to inner, repetitions innermost.
    pub fn expand(&self) -> Result<Vec<Step>, PlanError> {
        if self.sweep.len() > 2 {
            return Err(PlanError::Shape(format!(
                "at most two sweep axes, got {}",
                self.sweep.len()
            )));
        }
        if self.repeat == 0 || self.repeat > 1000 {
            return Err(PlanError::Shape("repeat must be between 1 and 1000".into()));
        }
        if let Some(h) = self.histogram {
            if !(h.bin_us.is_finite() && h.bin_us > 0.0 && h.low_us.is_finite()) {
                return Err(PlanError::Shape(format!(
                    "histogram: bin_us must be above 0 and low_us a number, got {} and {}",
                    h.bin_us, h.low_us
                )));
            }
        }
        let axes: Vec<(String, Vec<Value>)> = self
            .sweep
            .iter()
            .map(|(k, v)| axis_values(k, v).map(|vals| (k.clone(), vals)))
            .collect::<Result<_, _>>()?;
        let mut points: Vec<Vec<(String, Value)>> = vec![vec![]];
        for (name, vals) in &axes {
            points = points
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((name.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        let total = points.len() * self.repeat as usize;
        if total > MAX_STEPS {
            return Err(PlanError::Shape(format!(
                "the plan expands to {total} steps, more than {MAX_STEPS}"
            )));
        }
        let base_transport = if matches!(self.kind, Kind::UnixStream | Kind::UnixRr) {
            Transport::Unix
        } else {
            Transport::Tcp
        };
        let mut steps = Vec::with_capacity(total);
        for point in points {
            let mut params = self.params.clone();
            let mut transport = base_transport;
            for (name, v) in &point {
                if name.contains('+') {
                    let names: Vec<&str> = name.split('+').collect();
                    let vals = v
                        .as_array()
                        .filter(|a| a.len() == names.len())
                        .ok_or_else(|| {
                            axis_err(
                                name,
                                format!(
                                    "a paired axis takes lists of {} values (one per name), got {v}",
                                    names.len()
                                ),
                            )
                        })?;
                    for (n, x) in names.iter().zip(vals) {
                        if n.is_empty() || *n == "transport" {
                            return Err(axis_err(
                                name,
                                "a paired axis names parameters (transport cannot be paired)",
                            ));
                        }
                        params.insert(n.to_string(), x.clone());
                    }
                } else if name == "transport" {
                    // A sweep value is a JSON value: read the transport by name.
                    transport = v.as_str().and_then(Transport::from_name).ok_or_else(|| {
                        axis_err(
                            "transport",
                            format!("{v} is not one of unix, tcp, tcp_local"),
                        )
                    })?;
                } else {
                    params.insert(name.clone(), v.clone());
                }
            }
            for r in 0..self.repeat {
                steps.push(Step {
                    index: steps.len(),
                    kind: twin(self.kind, transport),
                    params: params.clone(),
                    point: point.clone(),
                    repeat: r,
                    transport,
                });
            }
        }
        Ok(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(v: Value) -> Plan {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn paired_axes_move_parameters_together() {
        let p = plan(json!({"kind": "tcp_rr", "params": {"count": 10},
            "sweep": {"client_bind+server_bind": [["127.0.0.1", "127.0.0.1"], ["127.0.0.2", "127.0.0.3"]],
                      "req_bytes": [1, 2]}}));
        let s = p.expand().unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[2].params["client_bind"], "127.0.0.2");
        assert_eq!(s[2].params["server_bind"], "127.0.0.3");
        assert_eq!(s[2].params["req_bytes"], 1);
        assert_eq!(s[2].point[0].1, json!(["127.0.0.2", "127.0.0.3"]));
        for bad in [
            json!({"a+b": [["x"]]}),
            json!({"a+b": [1, 2]}),
            json!({"a+transport": [["x", "unix"]]}),
            json!({"a+": [["x", "y"]]}),
        ] {
            let p = plan(json!({"kind": "tcp_rr", "sweep": bad}));
            assert!(matches!(p.expand(), Err(PlanError::Axis { .. })), "{bad}");
        }
    }

    #[test]
    fn ranges_lists_and_pow2() {
        assert_eq!(
            axis_values("w", &json!({"from": 0, "to": 100, "step": 10}))
                .unwrap()
                .len(),
            11
        );
        assert_eq!(
            axis_values("r", &json!({"from": 64, "to": 1500, "step": 8}))
                .unwrap()
                .last()
                .unwrap(),
            &json!(1496)
        );
        let p = axis_values("m", &json!({"pow2": [1, 65536]})).unwrap();
        assert_eq!(p.len(), 17);
        assert_eq!(p[16], json!(65536));
        let fine = axis_values("m", &json!({"pow2": [1024, 2048], "per_octave": 4})).unwrap();
        assert_eq!(
            fine,
            vec![
                json!(1024),
                json!(1218),
                json!(1448),
                json!(1722),
                json!(2048)
            ]
        );
        assert!(axis_values("m", &json!({"from": 5, "to": 1, "step": 1})).is_err());
        assert!(axis_values("m", &json!({"from": 0, "to": 1, "step": 0})).is_err());
        assert!(axis_values("m", &json!("x")).is_err());
    }

    #[test]
    fn two_axes_outer_first_and_repeats_innermost() {
        let p = plan(json!({"kind": "tcp_stream", "params": {"count": 10},
            "sweep": {"transport": ["unix", "tcp"], "msg_bytes": [1, 2]}, "repeat": 2}));
        let s = p.expand().unwrap();
        assert_eq!(s.len(), 8);
        assert_eq!(s[0].kind, Kind::UnixStream);
        assert_eq!(s[0].params["msg_bytes"], json!(1));
        assert_eq!(
            (s[1].repeat, s[1].params["msg_bytes"].clone()),
            (1, json!(1))
        );
        assert_eq!(s[2].params["msg_bytes"], json!(2));
        assert_eq!(s[4].kind, Kind::TcpStream);
        assert_eq!(s[4].transport, Transport::Tcp);
        assert!(s[4].params.get("transport").is_none());
        assert_eq!(s[7].index, 7);
    }

    #[test]
    fn names_are_what_serde_writes() {
        use crate::frame::SampleKind;
        use crate::msg::Role;
        for k in Kind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.name()));
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        for t in [Transport::Unix, Transport::Tcp, Transport::TcpLocal] {
            assert_eq!(serde_json::to_value(t).unwrap(), json!(t.name()));
            assert_eq!(Transport::from_name(t.name()), Some(t));
        }
        for r in [Role::Client, Role::Server] {
            assert_eq!(serde_json::to_value(r).unwrap(), json!(r.name()));
            assert_eq!(Role::from_name(r.name()), Some(r));
        }
        for k in (0..=255).filter_map(SampleKind::from_u8) {
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.name()));
            assert_eq!(SampleKind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_name("teleport"), None);
        assert_eq!(SampleKind::from_name("rtt"), None);
    }

    #[test]
    fn refuses_bad_plans() {
        let three = plan(json!({"kind": "tcp_rr", "sweep": {"a": [1], "b": [1], "c": [1]}}));
        assert!(matches!(three.expand(), Err(PlanError::Shape(_))));
        let huge = plan(
            json!({"kind": "tcp_rr", "sweep": {"a": {"from": 0, "to": 9999, "step": 1}}, "repeat": 2}),
        );
        assert!(matches!(huge.expand(), Err(PlanError::Shape(_))));
        let bad_t = plan(json!({"kind": "tcp_rr", "sweep": {"transport": ["carrier_pigeon"]}}));
        assert!(bad_t.expand().is_err());
        assert!(Plan::from_json("{\"kind\": \"teleport\"}").is_err());
        let hist = plan(json!({"kind": "udp_rr", "histogram": {"bin_us": 0}}));
        assert!(matches!(hist.expand(), Err(PlanError::Shape(m)) if m.contains("bin_us")));
        let hist = plan(json!({"kind": "udp_rr", "histogram": {"bin_us": 1}}));
        assert_eq!(
            hist.histogram,
            Some(HistSpec {
                bin_us: 1.0,
                low_us: 0.0
            })
        );
        assert_eq!(hist.expand().unwrap().len(), 1);
    }

    /// Found while writing the fuzz target `plan` (inputs made from reading
    /// `axis_values`, confirmed through the target): axes whose numbers are
    /// finite but extreme. A range of more points than a usize holds
    /// overflowed (a panic with overflow checks, else no points and a plan
    /// of no steps), a pow2 axis up to f64::MAX never ended, and one whose
    /// bounds hold no whole number expanded to nothing. Each is refused with
    /// the axis named.
    #[test]
    fn refuses_axes_with_extreme_or_empty_bounds() {
        for (axis, says) in [
            (
                json!({"from": -1e308, "to": 1e308, "step": 1e-300}),
                "points",
            ),
            (json!({"from": 0, "to": 1e300, "step": 1}), "points"),
            (json!({"pow2": [1e308, 1.7976931348623157e308]}), "2^64"),
            (json!({"pow2": [1, 1e30], "per_octave": 64}), "2^64"),
            (json!({"pow2": [1.6, 1.6]}), "whole number"),
        ] {
            let p = plan(json!({"kind": "tcp_rr", "sweep": {"req_bytes": axis.clone()}}));
            // On a thread: before the fix one of them never returned.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(p.expand()));
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("{axis}: expand panicked or ran past 10 s"));
            match r {
                Err(PlanError::Axis { axis: a, message }) => {
                    assert_eq!(a, "req_bytes");
                    assert!(message.contains(says), "{axis}: {message}");
                }
                other => panic!("{axis}: {other:?}"),
            }
        }
        // The largest pow2 axis that fits still expands.
        let p = plan(json!({"kind": "tcp_rr", "sweep": {"req_bytes": {"pow2": [1, 9.2e18]}}}));
        assert_eq!(p.expand().unwrap().len(), 63);
    }
}
