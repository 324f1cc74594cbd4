//! Test kinds and their parameters, with validation against the serving
//! agent's limits. Parameters travel as a JSON object; every field is parsed
//! by name so a bad value gets an error naming the parameter.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

mod stream;
pub use stream::{payload_file_name, Direction, Payload, StreamParams};
mod rr;
pub use rr::{flow_share, RrParams};
mod crr;
pub use crr::CrrParams;
mod spec;
pub use spec::{DefaultValue, Limit, Max, Min, ParamSpec, ParamType};
mod limits;
pub use limits::{LimitSpec, LimitUnit, LIMITS};
mod share;
pub use share::Usage;
mod tcp;
pub use tcp::TcpSocketParams;
mod lul;
pub use lul::{Clocks, LulParams, LulPhase, ProbeParams, GAP_PHASE, PROBE_MAX_LEN, PROBE_MIN_LEN};
mod path;
pub use path::{PathParams, DEFAULT_DSCP, MTU_PROBES_MAX};
mod pace;
pub use pace::MIN_PACED_MESSAGES;
mod rate;
pub use rate::{parse_rate, rate_figure, rate_text};
mod cpus;
pub use cpus::{parse_cpu_list, CPU_LIST_CHARS, CPU_LIST_ITEMS, CPU_SETSIZE};
mod stamp;
pub use stamp::{
    parse_target as parse_stamp_target, StampParams, STAMP_AUTH_BASE, STAMP_BASE, STAMP_PORT,
};
mod udp;
pub use udp::{
    gso_segments, UdpGso, UdpRrParams, UdpSocketParams, UdpStreamParams, UDP_HEADER_LEN,
    UDP_MAX_PAYLOAD, UDP_MIN_LEN,
};

/// The test kinds meshperf runs.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    TcpStream,
    TcpRr,
    TcpCrr,
    UdpStream,
    UdpRr,
    UnixStream,
    UnixRr,
    LatencyUnderLoad,
    Path,
    Stamp,
}

impl Kind {
    /// The snake_case name used on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Kind::TcpStream => "tcp_stream",
            Kind::TcpRr => "tcp_rr",
            Kind::TcpCrr => "tcp_crr",
            Kind::UdpStream => "udp_stream",
            Kind::UdpRr => "udp_rr",
            Kind::UnixStream => "unix_stream",
            Kind::UnixRr => "unix_rr",
            Kind::LatencyUnderLoad => "latency_under_load",
            Kind::Path => "path",
            Kind::Stamp => "stamp",
        }
    }

    /// Kinds whose two ends run inside one agent (Unix sockets): a
    /// controller prepares and starts them on the same agent.
    pub fn inside_one_agent(self) -> bool {
        matches!(self, Kind::UnixStream | Kind::UnixRr)
    }

    /// Kinds one agent runs alone toward an address that is not an agent
    /// (its `target`): a controller starts them without a `prepare`.
    pub fn to_outside_target(self) -> bool {
        matches!(self, Kind::Stamp)
    }

    /// Parses `params` as an agent would for this kind, against `limits`:
    /// what a controller checks before any traffic (the agents check again).
    pub fn check_params(self, params: &Value, limits: &Limits) -> Result<(), ParamError> {
        match self {
            Kind::TcpStream | Kind::UnixStream => StreamParams::parse(params, limits).map(drop),
            Kind::TcpRr | Kind::UnixRr => RrParams::parse(params, limits).map(drop),
            Kind::TcpCrr => CrrParams::parse(params, limits).map(drop),
            Kind::UdpStream => UdpStreamParams::parse(params, limits).map(drop),
            Kind::UdpRr => UdpRrParams::parse(params, limits).map(drop),
            Kind::LatencyUnderLoad => LulParams::parse(params, limits).map(drop),
            Kind::Path => PathParams::parse(params, limits).map(drop),
            Kind::Stamp => StampParams::parse(params, limits).map(drop),
        }
    }

    /// Every kind, in declaration order.
    pub const ALL: [Kind; 10] = [
        Kind::TcpStream,
        Kind::TcpRr,
        Kind::TcpCrr,
        Kind::UdpStream,
        Kind::UdpRr,
        Kind::UnixStream,
        Kind::UnixRr,
        Kind::LatencyUnderLoad,
        Kind::Path,
        Kind::Stamp,
    ];

    /// The kind whose [`Kind::name`] is `name` (what serde reads), for
    /// names that come as plain strings (command-line flags).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A parameter that cannot be used, with the parameter's name.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{param}: {message}")]
pub struct ParamError {
    /// The parameter's name (`msg_bytes`, ...).
    pub param: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ParamError {
    pub fn new(param: &str, message: impl Into<String>) -> Self {
        ParamError {
            param: param.to_string(),
            message: message.into(),
        }
    }
}

/// Limits a serving agent enforces whatever the page asks.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Limits {
    pub max_msg_bytes: u64,
    pub max_duration_s: f64,
    pub max_bytes: u64,
    pub max_streams: u32,
    pub max_count: u64,
    /// Most concurrent connections (`flows`) of one `tcp_rr` or `tcp_crr`
    /// test. Absent from the `hello` of agents before it: their tests had
    /// one flow, and that default is read for them.
    #[serde(default = "default_max_flows")]
    pub max_flows: u32,
    /// Highest paced rate a `udp_stream` may ask for, in bits per second of
    /// UDP payload (UDP has no congestion control); `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_udp_bits_per_second: Option<f64>,
    /// Most tests running here at once (issue 42); the limits above also
    /// bound the sum over them. Absent from the `hello` of agents before
    /// it: they ran one at a time.
    #[serde(default = "one_test")]
    pub max_tests: u32,
    /// Most tests waiting for their turn here; past it (or with `queue:
    /// false`) a test is refused `busy`. Absent before issue 42: none.
    #[serde(default)]
    pub max_queue: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_msg_bytes: 64 << 20,
            max_duration_s: 60.0,
            max_bytes: 64 << 30,
            max_streams: 64,
            max_count: 10_000_000,
            max_flows: DEFAULT_MAX_FLOWS,
            max_udp_bits_per_second: None,
            max_tests: DEFAULT_MAX_TESTS,
            max_queue: DEFAULT_MAX_QUEUE,
        }
    }
}

/// The agent's `--max-tests` unless its operator sets another.
pub const DEFAULT_MAX_TESTS: u32 = 4;
/// The agent's `--max-queue` unless its operator sets another.
pub const DEFAULT_MAX_QUEUE: u32 = 16;

fn one_test() -> u32 {
    1
}

/// The agent's `--max-flows` unless its operator sets another.
pub const DEFAULT_MAX_FLOWS: u32 = 1024;

fn default_max_flows() -> u32 {
    DEFAULT_MAX_FLOWS
}

/// Reads parameters by name from a JSON object, remembering the names asked
/// for; the table-driven readers (`int`, `flag`, ...) are in `spec.rs`.
pub(crate) struct Reader<'a> {
    obj: &'a Map<String, Value>,
    used: Vec<&'static str>,
    /// What [`Max::Limit`] bounds resolve to.
    limits: &'a Limits,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(v: &'a Value, limits: &'a Limits) -> Result<Self, ParamError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let obj = match v {
            Value::Object(obj) => obj,
            Value::Null => EMPTY.get_or_init(Map::new),
            _ => return Err(ParamError::new("params", "must be a JSON object")),
        };
        Ok(Reader {
            obj,
            used: Vec::new(),
            limits,
        })
    }

    pub(crate) fn raw(&mut self, name: &'static str) -> Option<&'a Value> {
        self.used.push(name);
        self.obj.get(name).filter(|v| !v.is_null())
    }

    pub(crate) fn u64(&mut self, name: &'static str) -> Result<Option<u64>, ParamError> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(n)),
                None => match v.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(Some(f as u64)),
                    Some(f) if f < 0.0 => Err(ParamError::new(
                        name,
                        format!("must not be negative, got {f}"),
                    )),
                    Some(f) if f.fract() == 0.0 => Err(ParamError::new(
                        name,
                        format!("too large: at most {}, got {v}", u64::MAX),
                    )),
                    _ => Err(ParamError::new(
                        name,
                        format!("must be a whole number, got {v}"),
                    )),
                },
            },
        }
    }

    pub(crate) fn f64(&mut self, name: &'static str) -> Result<Option<f64>, ParamError> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| ParamError::new(name, format!("must be a number, got {v}"))),
        }
    }

    pub(crate) fn bool(&mut self, name: &'static str) -> Result<Option<bool>, ParamError> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| ParamError::new(name, format!("must be true or false, got {v}"))),
        }
    }

    pub(crate) fn string(&mut self, name: &'static str) -> Result<Option<String>, ParamError> {
        match self.raw(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(ParamError::new(name, format!("must be a string, got {v}"))),
        }
    }

    pub(crate) fn finish(self) -> Result<(), ParamError> {
        #[cfg(test)]
        spec::LAST_USED.with(|u| u.replace(self.used.clone()));
        for k in self.obj.keys() {
            if !self.used.contains(&k.as_str()) {
                return Err(ParamError::new(
                    k,
                    format!("unknown parameter (known: {})", self.used.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// The IPv4 TOS byte / IPv6 traffic class from `tos` (0 to 255) and
/// `precedence` (0 to 7, udpmon's `-P`: the top three bits of the byte). With
/// both, `precedence` fills bits 5 to 7 and `tos` must leave them clear.
pub(crate) fn tos(r: &mut Reader) -> Result<Option<u8>, ParamError> {
    let tos = r.opt_int(&spec::TOS)?.map(|n| n as u8);
    match (tos, r.opt_int(&spec::PRECEDENCE)?.map(|n| n as u8)) {
        (Some(t), Some(_)) if t & 0xe0 != 0 => Err(ParamError::new(
            "precedence",
            format!("tos {t:#04x} already sets the precedence bits; give one or the other"),
        )),
        (t, Some(p)) => Ok(Some(t.unwrap_or(0) | p << 5)),
        (t, None) => Ok(t),
    }
}

/// `mss`: TCP_MAXSEG in the range Linux accepts (TCP_MIN_MSS 88 to 65535).
pub(crate) fn mss(r: &mut Reader) -> Result<Option<u64>, ParamError> {
    r.opt_int(&spec::MSS)
}

/// How a test is bounded: `count` (default: `count_spec`'s) or `duration_s`,
/// never both; each was read within its range (`Reader::opt_int`,
/// `Reader::opt_float`). `bytes_per_count` is what one count moves in total
/// (for the `max_bytes` limit), with its formula named.
pub(crate) fn bound(
    count: Option<u64>,
    duration_s: Option<f64>,
    count_spec: &ParamSpec,
    bytes_per_count: (u128, &str),
    limits: &Limits,
) -> Result<(Option<u64>, Option<f64>), ParamError> {
    let (count, duration_s) = match (count, duration_s) {
        (Some(_), Some(_)) => return Err(both_bounds()),
        (None, None) => (Some(count_spec.default_num()), None),
        bounds => bounds,
    };
    if let Some(c) = count {
        let (per, formula) = bytes_per_count;
        let total = c as u128 * per;
        if total > limits.max_bytes as u128 {
            return Err(ParamError::new(
                "count",
                format!(
                    "{formula} = {total} bytes is above the agent's limit of {} bytes",
                    limits.max_bytes
                ),
            ));
        }
    }
    Ok((count, duration_s))
}

/// `omit_s` (the warm-up left out of the figures) needs a `duration_s`
/// longer than itself: what is left is what the figures are of.
pub(crate) fn omit_within(omit_s: Option<f64>, duration_s: Option<f64>) -> Result<(), ParamError> {
    match (omit_s, duration_s) {
        (Some(o), None) => Err(ParamError::new(
            "omit_s",
            format!("{o} s of warm-up needs duration_s (the test's time, warm-up included)"),
        )),
        (Some(o), Some(d)) if o >= d => Err(ParamError::new(
            "omit_s",
            format!("must be shorter than duration_s ({d} s), got {o}"),
        )),
        _ => Ok(()),
    }
}

/// A plan that gives both `count` and `duration_s`.
pub(crate) fn both_bounds() -> ParamError {
    ParamError::new("count", "give count or duration_s, not both")
}
