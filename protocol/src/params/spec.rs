//! The parameter table of every kind, typed once: name, type, label with its
//! unit, default, range (a number or one of the agent's [`Limits`]), choices,
//! and how the page shows it. The parse functions in `stream.rs`, `rr.rs` and
//! `udp.rs` read their defaults and ranges from here, and the web app's form
//! is generated from it at build time (`examples/export_params.rs` writes
//! `web/src/lib/generated/params.ts`), so a default or a limit is written once.
//!
//! A new parameter is one entry in its kind's table below, one line reading it
//! in the kind's parse function (`r.int(&KIND::NAME)` and the like), and the
//! engine code that uses it.

use super::{Kind, LimitSpec, Limits, ParamError, Reader, LIMITS};
use std::fmt::Display;

/// How a parameter's value is written (and which field the page shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// Bytes, a whole number; the page also reads `64K`, `1M`, `1G` (powers of 1024).
    Size,
    /// A whole number.
    Int,
    /// A number, fractions allowed.
    Float,
    /// `true` or `false`.
    Bool,
    /// One of [`ParamSpec::options`].
    Enum,
    /// Free text, checked by the parse function (an address, an algorithm name).
    Text,
    /// Bits per second, fractions allowed; also read as text with a k, M or
    /// G suffix in powers of 1000 (`20M`), as iperf3's `-b` and the agent's
    /// `--max-udp-rate`.
    Rate,
}

impl ParamType {
    /// The name used in the exported table.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Size => "size",
            ParamType::Int => "int",
            ParamType::Float => "float",
            ParamType::Bool => "bool",
            ParamType::Enum => "enum",
            ParamType::Text => "text",
            ParamType::Rate => "rate",
        }
    }
}

/// What a parameter is when the plan does not give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// Nothing: the option is not set (the kernel's or the path's own value).
    Unset,
    /// This number.
    Num(u64),
    /// This truth value.
    Bool(bool),
    /// This option of an [`ParamType::Enum`].
    Word(&'static str),
    /// Worked out from other parameters or the system, as the text says.
    Derived(&'static str),
}

/// One of the serving agent's [`Limits`] that bounds a parameter: its row
/// in [`LIMITS`] (the discriminant is the row's index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MaxMsgBytes = 0,
    MaxDurationS = 1,
    MaxStreams = 3,
    MaxCount = 4,
    MaxFlows = 5,
}

impl Limit {
    /// Its row in [`LIMITS`].
    pub fn spec(self) -> &'static LimitSpec {
        &LIMITS[self as usize]
    }

    /// The field's name in [`Limits`] (and in `hello`).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Its value in `limits`.
    pub fn of(self, limits: &Limits) -> f64 {
        (self.spec().get)(limits).unwrap_or(f64::INFINITY)
    }
}

/// The smallest value a number may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Min {
    /// This value or more.
    AtLeast(u64),
    /// More than this value.
    Above(u64),
    /// This many thousandths or more (`duration_s` at least 0.001: a
    /// duration of 1e-300 s is no test).
    AtLeastMilli(u64),
}

/// The largest value a number may take (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Max {
    /// This value.
    At(u64),
    /// The serving agent's limit, whatever it is set to.
    Limit(Limit),
}

/// One parameter of a kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// The snake_case name, with its unit (`msg_bytes`, `wait_us`).
    pub name: &'static str,
    pub ty: ParamType,
    /// What the page's field says, with the unit where the name's is not enough.
    pub label: &'static str,
    pub default: DefaultValue,
    /// What the page's form fills in for a new plan (sent unless cleared);
    /// `None`: left empty, the agent's default applies.
    pub initial: Option<&'static str>,
    /// Numbers: the range the parse function accepts (`None`: no bound).
    pub min: Option<Min>,
    pub max: Option<Max>,
    /// [`ParamType::Enum`]: the accepted values.
    pub options: &'static [&'static str],
    /// Shown under "more options" on the page.
    pub advanced: bool,
    /// Means something on IP sockets only: the page hides it for the unix
    /// kinds, whose parsers (the tcp kinds') read it and whose engine
    /// refuses it when set (`agent/src/engine/unix/mod.rs`).
    pub tcp_only: bool,
    /// Another parameter of the same kind this one is given instead of
    /// (udp_stream's `rate` instead of `wait_us`): the parser refuses both,
    /// so the page offers one or the other, never both.
    pub instead_of: Option<&'static str>,
}

/// The fields most entries share; each entry spells out the rest.
const P: ParamSpec = ParamSpec {
    name: "",
    ty: ParamType::Int,
    label: "",
    default: DefaultValue::Unset,
    initial: None,
    min: None,
    max: None,
    options: &[],
    advanced: false,
    tcp_only: false,
    instead_of: None,
};

impl ParamSpec {
    /// The numeric default. The parse functions call this only for entries
    /// whose default is a number (the table test reads every entry).
    pub fn default_num(&self) -> u64 {
        match self.default {
            DefaultValue::Num(n) => n,
            d => panic!("{}: the table's default is {d:?}, not a number", self.name),
        }
    }

    /// The top of the range in `limits`, and what to say about it.
    fn top(&self, limits: &Limits) -> Option<(f64, &'static str)> {
        self.max.map(|m| match m {
            Max::At(hi) => (hi as f64, ""),
            Max::Limit(l) => (l.of(limits), " (the agent's limit)"),
        })
    }

    /// Whether `x` is within this parameter's range in `limits`.
    pub fn contains(&self, x: f64, limits: &Limits) -> bool {
        let lo_ok = match self.min {
            None => true,
            Some(Min::AtLeast(lo)) => x >= lo as f64,
            Some(Min::Above(lo)) => x > lo as f64,
            Some(Min::AtLeastMilli(lo)) => x >= lo as f64 / 1000.0,
        };
        lo_ok && !matches!(self.top(limits), Some((hi, _)) if x > hi)
    }

    /// `v` if it is within this parameter's range in `limits`, else an error
    /// saying the range (and when the top is the agent's limit, that it is).
    pub fn check<T: Into<f64> + Display + Copy>(
        &self,
        v: T,
        limits: &Limits,
    ) -> Result<T, ParamError> {
        if self.contains(v.into(), limits) {
            return Ok(v);
        }
        let message = match (self.min, self.top(limits)) {
            (Some(Min::AtLeast(lo)), Some((hi, what))) => {
                format!("must be between {lo} and {hi}{what}, got {v}")
            }
            (Some(Min::Above(lo)), Some((hi, what))) => {
                format!("must be above {lo} and at most {hi}{what}, got {v}")
            }
            (Some(Min::AtLeastMilli(lo)), Some((hi, what))) => {
                format!(
                    "must be between {} and {hi}{what}, got {v}",
                    lo as f64 / 1000.0
                )
            }
            (Some(Min::AtLeast(lo)), None) => format!("must be at least {lo}, got {v}"),
            (Some(Min::AtLeastMilli(lo)), None) => {
                format!("must be at least {}, got {v}", lo as f64 / 1000.0)
            }
            (Some(Min::Above(lo)), None) => format!("must be above {lo}, got {v}"),
            (None, Some((hi, what))) => format!("must be at most {hi}{what}, got {v}"),
            (None, None) => unreachable!("no range to break"),
        };
        Err(ParamError::new(self.name, message))
    }

    /// `v` if it is one of [`ParamSpec::options`], as the table spells it.
    pub fn choose(&self, v: &str) -> Result<&'static str, ParamError> {
        if let Some(o) = self.options.iter().find(|o| **o == v) {
            return Ok(o);
        }
        let (last, rest) = self.options.split_last().expect("an enum has options");
        let list = if rest.is_empty() {
            last.to_string()
        } else {
            format!("{} or {last}", rest.join(", "))
        };
        Err(ParamError::new(
            self.name,
            format!("must be {list}, got {v:?}"),
        ))
    }
}

impl Reader<'_> {
    /// A whole-number parameter with a default: as given, else the table's
    /// default, within the table's range.
    pub(crate) fn int(&mut self, s: &ParamSpec) -> Result<u64, ParamError> {
        let v = self.u64(s.name)?.unwrap_or_else(|| s.default_num());
        self.in_range(s, v)
    }

    /// A whole-number parameter without a default, within the table's range.
    pub(crate) fn opt_int(&mut self, s: &ParamSpec) -> Result<Option<u64>, ParamError> {
        self.u64(s.name)?.map(|v| self.in_range(s, v)).transpose()
    }

    /// A number with a (whole) default, fractions allowed, within the table's range.
    pub(crate) fn float(&mut self, s: &ParamSpec) -> Result<f64, ParamError> {
        let v = self.f64(s.name)?.unwrap_or_else(|| s.default_num() as f64);
        s.check(v, self.limits)
    }

    /// A number without a default, fractions allowed, within the table's range.
    pub(crate) fn opt_float(&mut self, s: &ParamSpec) -> Result<Option<f64>, ParamError> {
        self.f64(s.name)?
            .map(|v| s.check(v, self.limits))
            .transpose()
    }

    /// A truth value, else the table's default.
    pub(crate) fn flag(&mut self, s: &ParamSpec) -> Result<bool, ParamError> {
        match (self.bool(s.name)?, s.default) {
            (Some(b), _) => Ok(b),
            (None, DefaultValue::Bool(b)) => Ok(b),
            (None, d) => panic!(
                "{}: the table's default is {d:?}, not true or false",
                s.name
            ),
        }
    }

    /// One of the table's options, else the table's default.
    pub(crate) fn choice(&mut self, s: &ParamSpec) -> Result<&'static str, ParamError> {
        match (self.string(s.name)?, s.default) {
            (Some(v), _) => s.choose(&v),
            (None, DefaultValue::Word(w)) => Ok(w),
            (None, d) => panic!("{}: the table's default is {d:?}, not an option", s.name),
        }
    }

    fn in_range(&self, s: &ParamSpec, v: u64) -> Result<u64, ParamError> {
        // Through f64 for the comparison only: every bound is far below 2^53.
        s.check(Whole(v), self.limits).map(|w| w.0)
    }
}

/// A whole number that compares as f64 and prints as itself.
#[derive(Clone, Copy)]
struct Whole(u64);

impl From<Whole> for f64 {
    fn from(w: Whole) -> f64 {
        w.0 as f64
    }
}

impl Display for Whole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Kind {
    /// The kind's parameters: every name its parse function accepts, in the
    /// order the page shows them. The unix kinds share the tcp kinds' table.
    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            Kind::TcpStream | Kind::UnixStream => STREAM,
            Kind::TcpRr | Kind::UnixRr => RR,
            Kind::TcpCrr => CRR,
            Kind::UdpStream => UDP_STREAM,
            Kind::UdpRr => UDP_RR,
            Kind::LatencyUnderLoad => LUL,
            Kind::Path => PATH,
            Kind::Stamp => STAMP,
        }
    }

    /// What the page calls the kind.
    pub fn label(self) -> &'static str {
        match self {
            Kind::TcpStream => "TCP stream (throughput)",
            Kind::TcpRr => "TCP request/response (latency)",
            Kind::TcpCrr => "TCP connect/request/response (connection rate)",
            Kind::UdpStream => "UDP stream (paced, loss)",
            Kind::UdpRr => "UDP request/response (latency)",
            Kind::UnixStream => "Unix socket stream",
            Kind::UnixRr => "Unix socket request/response",
            Kind::LatencyUnderLoad => "Latency under load (bufferbloat)",
            Kind::Path => "Path: hops each way, path MTU, DSCP/ECN kept",
            Kind::Stamp => "STAMP to a reflector (RFC 8762; one agent sends)",
        }
    }
}

// ---- entries shared by several kinds ---------------------------------------

/// Largest SO_SNDBUF / SO_RCVBUF / SO_RCVLOWAT asked for.
const SOCK_BUF_MAX: u64 = 1 << 30;
/// Longest wait between writes, requests or datagrams (10 s).
const WAIT_MAX_US: u64 = 10_000_000;

pub const DURATION_S: ParamSpec = ParamSpec {
    name: "duration_s",
    ty: ParamType::Float,
    label: "seconds",
    min: Some(Min::AtLeastMilli(1)),
    max: Some(Max::Limit(Limit::MaxDurationS)),
    ..P
};
pub const SNDBUF: ParamSpec = ParamSpec {
    name: "sndbuf",
    ty: ParamType::Size,
    label: "SO_SNDBUF (bytes)",
    min: Some(Min::AtLeast(1)),
    max: Some(Max::At(SOCK_BUF_MAX)),
    advanced: true,
    ..P
};
pub const RCVBUF: ParamSpec = ParamSpec {
    name: "rcvbuf",
    label: "SO_RCVBUF (bytes)",
    ..SNDBUF
};
pub const TOS: ParamSpec = ParamSpec {
    name: "tos",
    label: "TOS / DSCP byte",
    min: Some(Min::AtLeast(0)),
    max: Some(Max::At(255)),
    advanced: true,
    tcp_only: true,
    ..P
};
pub const PRECEDENCE: ParamSpec = ParamSpec {
    name: "precedence",
    label: "IP precedence (0-7)",
    max: Some(Max::At(7)),
    ..TOS
};
pub const CONGESTION: ParamSpec = ParamSpec {
    name: "congestion",
    ty: ParamType::Text,
    label: "congestion control",
    advanced: true,
    tcp_only: true,
    ..P
};
/// TCP_MAXSEG in the range Linux accepts (TCP_MIN_MSS 88 to 65535).
pub const MSS: ParamSpec = ParamSpec {
    name: "mss",
    label: "TCP_MAXSEG, segment size (bytes)",
    default: DefaultValue::Derived("path MTU"),
    min: Some(Min::AtLeast(88)),
    max: Some(Max::At(65535)),
    advanced: true,
    tcp_only: true,
    ..P
};
pub const CLIENT_BIND: ParamSpec = ParamSpec {
    name: "client_bind",
    ty: ParamType::Text,
    label: "driving agent local address",
    advanced: true,
    tcp_only: true,
    ..P
};
pub const SERVER_BIND: ParamSpec = ParamSpec {
    name: "server_bind",
    label: "serving agent listen address",
    ..CLIENT_BIND
};
const INTERVAL_MS: ParamSpec = ParamSpec {
    name: "interval_ms",
    label: "progress interval (ms)",
    default: DefaultValue::Num(100),
    min: Some(Min::AtLeast(1)),
    max: Some(Max::At(10_000)),
    advanced: true,
    ..P
};
const COUNT: ParamSpec = ParamSpec {
    name: "count",
    min: Some(Min::AtLeast(1)),
    max: Some(Max::Limit(Limit::MaxCount)),
    ..P
};
/// Highest rate asked for: 1 Tbit/s.
const RATE_MAX: u64 = 1_000_000_000_000;
/// A sender's rate in bits per second of payload (iperf3 `-b`).
pub const RATE: ParamSpec = ParamSpec {
    name: "rate",
    ty: ParamType::Rate,
    label: "rate limit (bit/s; k, M, G = 1000s)",
    min: Some(Min::Above(0)),
    max: Some(Max::At(RATE_MAX)),
    tcp_only: true,
    ..P
};
/// Warm-up left out of the figures (iperf3 `-O`), seconds; needs `duration_s`.
pub const OMIT_S: ParamSpec = ParamSpec {
    name: "omit_s",
    ty: ParamType::Float,
    label: "warm-up left out (s)",
    min: Some(Min::AtLeast(0)),
    max: Some(Max::Limit(Limit::MaxDurationS)),
    advanced: true,
    ..P
};

// ---- tcp_stream, unix_stream -----------------------------------------------

/// `tcp_stream` and `unix_stream` (`StreamParams::parse`).
pub mod stream {
    use super::*;

    pub const MSG_BYTES: ParamSpec = ParamSpec {
        name: "msg_bytes",
        ty: ParamType::Size,
        label: "message size",
        default: DefaultValue::Num(128 * 1024),
        // The default, as the page fills it (it filled 1M: 1 GiB against
        // the CLI's 128 MiB; issue 45 item 21).
        initial: Some("128K"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::Limit(Limit::MaxMsgBytes)),
        ..P
    };
    pub const COUNT: ParamSpec = ParamSpec {
        label: "messages per stream",
        default: DefaultValue::Num(1024),
        initial: Some("1024"),
        ..super::COUNT
    };
    /// socketslurp's count: the receiving end takes this many `read_bytes`
    /// buffers per stream and no more; the end with fewer bytes (this, or
    /// the sender's `count` x `msg_bytes`) decides how much moves.
    pub const RECV_COUNT: ParamSpec = ParamSpec {
        name: "recv_count",
        label: "receiver's buffers (of read size)",
        default: DefaultValue::Derived("as many as the sender sends"),
        initial: None,
        advanced: true,
        ..COUNT
    };
    pub const STREAMS: ParamSpec = ParamSpec {
        name: "streams",
        label: "streams",
        default: DefaultValue::Num(1),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::Limit(Limit::MaxStreams)),
        ..P
    };
    pub const DIRECTION: ParamSpec = ParamSpec {
        name: "direction",
        ty: ParamType::Enum,
        label: "direction",
        default: DefaultValue::Word("send"),
        initial: Some("send"),
        options: &["send", "receive", "both"],
        ..P
    };
    pub const WAIT_US: ParamSpec = ParamSpec {
        name: "wait_us",
        label: "wait between writes (µs)",
        default: DefaultValue::Num(0),
        min: Some(Min::AtLeast(0)),
        max: Some(Max::At(WAIT_MAX_US)),
        ..P
    };
    pub const READ_BYTES: ParamSpec = ParamSpec {
        name: "read_bytes",
        label: "read size",
        default: DefaultValue::Derived("= message size"),
        initial: None,
        advanced: true,
        ..MSG_BYTES
    };
    pub const NODELAY: ParamSpec = ParamSpec {
        name: "nodelay",
        ty: ParamType::Bool,
        label: "TCP_NODELAY",
        default: DefaultValue::Bool(false),
        advanced: true,
        tcp_only: true,
        ..P
    };
    pub const RCVLOWAT: ParamSpec = ParamSpec {
        name: "rcvlowat",
        ty: ParamType::Size,
        label: "SO_RCVLOWAT (bytes)",
        default: DefaultValue::Derived("read size (max 128K) unpaced, else 1"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(SOCK_BUF_MAX)),
        advanced: true,
        tcp_only: true,
        ..P
    };
    pub const PAYLOAD: ParamSpec = ParamSpec {
        name: "payload",
        ty: ParamType::Enum,
        label: "payload (random: no link can compress it)",
        default: DefaultValue::Word("random"),
        options: &["random", "zeros"],
        advanced: true,
        ..P
    };
    /// The Perl seed's `--file`: the writes carry this file's bytes, in
    /// order and from its start again at its end; a file name in the
    /// sending agent's `--payload-dir`, read into memory once before the
    /// test (so the disk is not measured).
    pub const PAYLOAD_FILE: ParamSpec = ParamSpec {
        name: "payload_file",
        ty: ParamType::Text,
        label: "payload file (in the sender's --payload-dir)",
        advanced: true,
        tcp_only: true,
        ..P
    };
    /// iperf3 `-Z`: the sending side writes with MSG_ZEROCOPY (the kernel
    /// sends from the payload buffer's pages instead of copying them) and
    /// reaps the completions; a kernel or socket that refuses SO_ZEROCOPY
    /// refuses the test.
    pub const ZEROCOPY: ParamSpec = ParamSpec {
        name: "zerocopy",
        ty: ParamType::Bool,
        label: "zero-copy send (MSG_ZEROCOPY)",
        default: DefaultValue::Bool(false),
        advanced: true,
        tcp_only: true,
        ..P
    };
    pub const INTERVAL_MS: ParamSpec = ParamSpec {
        label: "sample interval (ms)",
        default: DefaultValue::Num(10),
        ..super::INTERVAL_MS
    };
    /// Worker threads per side, each with its own poll (iperf3 3.16 runs
    /// a thread per stream, neper `-T`); the agent refuses more than the
    /// CPUs it may use.
    pub const THREADS: ParamSpec = ParamSpec {
        name: "threads",
        label: "worker threads per side",
        default: DefaultValue::Derived(
            "one per stream, up to the agent's CPUs (or the CPUs listed)",
        ),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::Limit(Limit::MaxStreams)),
        advanced: true,
        ..P
    };
    /// The driving agent's data threads on these CPUs (iperf3 `-A`, as
    /// `taskset -c` writes them: `1`, `0,2-3`); its control loop and the
    /// side's other threads keep off them where the agent has other CPUs.
    pub const CPUS: ParamSpec = ParamSpec {
        name: "cpus",
        ty: ParamType::Text,
        label: "driving agent's data threads on CPUs (0,2-3)",
        advanced: true,
        ..P
    };
    /// The same for the serving agent.
    pub const SERVER_CPUS: ParamSpec = ParamSpec {
        name: "server_cpus",
        label: "serving agent's data threads on CPUs (0,2-3)",
        ..CPUS
    };
    /// A UDP probe flow beside the streams (latency under their own load).
    pub const PROBE_MS: ParamSpec = ParamSpec {
        label: "latency probe interval (ms; empty: no probes)",
        default: DefaultValue::Unset,
        initial: None,
        advanced: true,
        tcp_only: true,
        ..lul::PROBE_MS
    };
    pub const PROBE_BYTES: ParamSpec = ParamSpec {
        tcp_only: true,
        ..lul::PROBE_BYTES
    };
    pub const CLOCKS: ParamSpec = ParamSpec {
        initial: None,
        advanced: true,
        tcp_only: true,
        ..lul::CLOCKS
    };
}

static STREAM: &[ParamSpec] = {
    use stream::*;
    &[
        MSG_BYTES,
        COUNT,
        DURATION_S,
        RECV_COUNT,
        STREAMS,
        DIRECTION,
        WAIT_US,
        RATE,
        OMIT_S,
        READ_BYTES,
        NODELAY,
        RCVLOWAT,
        PAYLOAD,
        PAYLOAD_FILE,
        ZEROCOPY,
        SNDBUF,
        RCVBUF,
        TOS,
        PRECEDENCE,
        CONGESTION,
        MSS,
        CLIENT_BIND,
        SERVER_BIND,
        INTERVAL_MS,
        THREADS,
        CPUS,
        SERVER_CPUS,
        PROBE_MS,
        PROBE_BYTES,
        CLOCKS,
    ]
};

// ---- tcp_rr, unix_rr -------------------------------------------------------

/// `tcp_rr` and `unix_rr` (`RrParams::parse`).
pub mod rr {
    use super::*;

    pub const REQ_BYTES: ParamSpec = ParamSpec {
        name: "req_bytes",
        ty: ParamType::Size,
        label: "request size",
        default: DefaultValue::Num(64),
        initial: Some("64"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::Limit(Limit::MaxMsgBytes)),
        ..P
    };
    pub const RESP_BYTES: ParamSpec = ParamSpec {
        name: "resp_bytes",
        label: "response size",
        ..REQ_BYTES
    };
    pub const COUNT: ParamSpec = ParamSpec {
        label: "transactions",
        default: DefaultValue::Num(10_000),
        initial: Some("10000"),
        ..super::COUNT
    };
    pub const WAIT_US: ParamSpec = ParamSpec {
        label: "wait between requests (µs)",
        ..stream::WAIT_US
    };
    pub const WRITE_BYTES: ParamSpec = ParamSpec {
        name: "write_bytes",
        label: "largest single write",
        default: DefaultValue::Unset,
        initial: None,
        advanced: true,
        ..REQ_BYTES
    };
    pub const BUSY_POLL: ParamSpec = ParamSpec {
        name: "busy_poll",
        label: "busy poll",
        tcp_only: false,
        ..stream::NODELAY
    };
    /// On by default, as in netperf TCP_RR.
    pub const NODELAY: ParamSpec = ParamSpec {
        default: DefaultValue::Bool(true),
        ..stream::NODELAY
    };
    pub const INTERVAL_MS: ParamSpec = super::INTERVAL_MS;
    /// Concurrent connections, each doing its transactions in lockstep
    /// (neper's flows); `count` is over all of them.
    pub const FLOWS: ParamSpec = ParamSpec {
        name: "flows",
        label: "concurrent connections (flows)",
        default: DefaultValue::Num(1),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::Limit(Limit::MaxFlows)),
        tcp_only: true,
        ..P
    };
    /// Worker threads per side for `flows` (neper `-T`).
    pub const THREADS: ParamSpec = ParamSpec {
        default: DefaultValue::Derived("one per flow, up to the agent's CPUs"),
        max: Some(Max::Limit(Limit::MaxFlows)),
        tcp_only: true,
        ..stream::THREADS
    };
}

static RR: &[ParamSpec] = {
    use rr::*;
    &[
        REQ_BYTES,
        RESP_BYTES,
        COUNT,
        DURATION_S,
        WAIT_US,
        WRITE_BYTES,
        BUSY_POLL,
        NODELAY,
        SNDBUF,
        RCVBUF,
        TOS,
        PRECEDENCE,
        CONGESTION,
        MSS,
        CLIENT_BIND,
        SERVER_BIND,
        INTERVAL_MS,
        FLOWS,
        THREADS,
    ]
};

// ---- tcp_crr ----------------------------------------------------------------

/// `tcp_crr` (`CrrParams::parse`): a fresh connection per transaction.
pub mod crr {
    use super::*;

    /// One byte each way by default, as netperf TCP_CRR (`-r 1,1`).
    pub const REQ_BYTES: ParamSpec = ParamSpec {
        default: DefaultValue::Num(1),
        initial: Some("1"),
        ..rr::REQ_BYTES
    };
    pub const RESP_BYTES: ParamSpec = ParamSpec {
        default: DefaultValue::Num(1),
        initial: Some("1"),
        ..rr::RESP_BYTES
    };
    pub const COUNT: ParamSpec = ParamSpec {
        label: "transactions (connections)",
        default: DefaultValue::Num(1000),
        initial: Some("1000"),
        ..super::COUNT
    };
    /// A connect that has not completed in this time is a failure
    /// (`ETIMEDOUT`), and the next transaction starts.
    pub const CONNECT_TIMEOUT_MS: ParamSpec = ParamSpec {
        name: "connect_timeout_ms",
        label: "connect timeout (ms)",
        default: DefaultValue::Num(1000),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(60_000)),
        advanced: true,
        ..P
    };
    pub const NODELAY: ParamSpec = rr::NODELAY;
    pub const INTERVAL_MS: ParamSpec = super::INTERVAL_MS;
    /// Concurrent connect/request/response/close loops (neper's flows).
    pub const FLOWS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..rr::FLOWS
    };
    pub const THREADS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..rr::THREADS
    };
}

static CRR: &[ParamSpec] = {
    use crr::*;
    &[
        REQ_BYTES,
        RESP_BYTES,
        COUNT,
        DURATION_S,
        CONNECT_TIMEOUT_MS,
        NODELAY,
        SNDBUF,
        RCVBUF,
        TOS,
        PRECEDENCE,
        CONGESTION,
        MSS,
        CLIENT_BIND,
        SERVER_BIND,
        INTERVAL_MS,
        FLOWS,
        THREADS,
    ]
};

// ---- udp_rr, udp_stream ----------------------------------------------------

/// `udp_rr` and `udp_stream` (`UdpRrParams::parse`, `UdpStreamParams::parse`).
pub mod udp {
    use super::super::{UDP_MAX_PAYLOAD, UDP_MIN_LEN};
    use super::*;

    /// A datagram: from the compact meshperf header to the largest UDP payload.
    const DATAGRAM: ParamSpec = ParamSpec {
        ty: ParamType::Size,
        min: Some(Min::AtLeast(UDP_MIN_LEN)),
        max: Some(Max::At(UDP_MAX_PAYLOAD)),
        ..P
    };
    /// As `tcp_rr`'s, in one datagram.
    pub const REQ_BYTES: ParamSpec = ParamSpec {
        min: DATAGRAM.min,
        max: DATAGRAM.max,
        ..rr::REQ_BYTES
    };
    pub const RESP_BYTES: ParamSpec = ParamSpec {
        min: DATAGRAM.min,
        max: DATAGRAM.max,
        ..rr::RESP_BYTES
    };
    pub const RR_COUNT: ParamSpec = ParamSpec {
        label: "requests",
        default: DefaultValue::Num(1000),
        initial: Some("1000"),
        ..super::COUNT
    };
    pub const RR_TIMEOUT_MS: ParamSpec = ParamSpec {
        name: "timeout_ms",
        label: "timeout per request (ms)",
        default: DefaultValue::Num(1000),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(60_000)),
        ..P
    };
    pub const RR_INTERVAL_MS: ParamSpec = super::INTERVAL_MS;
    /// A request every `wait_us` on an absolute schedule (netperf's
    /// `-w`-paced UDP_RR; the probe flow's interval, for comparing them).
    pub const RR_WAIT_US: ParamSpec = ParamSpec {
        label: "time between requests (µs; 0: back to back)",
        ..rr::WAIT_US
    };

    pub const PKT_BYTES: ParamSpec = ParamSpec {
        name: "pkt_bytes",
        label: "packet size",
        default: DefaultValue::Num(1400),
        initial: Some("1400"),
        ..DATAGRAM
    };
    pub const STREAM_COUNT: ParamSpec = ParamSpec {
        label: "packets per flow",
        default: DefaultValue::Num(10_000),
        initial: Some("10000"),
        ..super::COUNT
    };
    pub const WAIT_US: ParamSpec = ParamSpec {
        ty: ParamType::Float,
        label: "wait between packets (µs)",
        initial: Some("20"),
        ..stream::WAIT_US
    };
    pub const DIRECTION: ParamSpec = stream::DIRECTION;
    /// The sender's rate instead of `wait_us`: the wait is worked out from it.
    pub const RATE: ParamSpec = ParamSpec {
        label: "rate (bit/s, instead of the wait; k, M, G = 1000s)",
        instead_of: Some("wait_us"),
        ..super::RATE
    };
    /// Ethernet: IPG 12 + preamble 8 + header 14 + CRC 4 + IPv4 20 + UDP 8.
    pub const OVERHEAD_BYTES: ParamSpec = ParamSpec {
        name: "overhead_bytes",
        label: "wire overhead per frame (bytes)",
        default: DefaultValue::Num(66),
        min: Some(Min::AtLeast(0)),
        max: Some(Max::At(1024)),
        advanced: true,
        ..P
    };
    /// Parallel flows, each on a socket pair (and control line) of its
    /// own; `rate` is shared out among them.
    pub const STREAMS: ParamSpec = ParamSpec {
        label: "streams (UDP flows)",
        ..stream::STREAMS
    };
    /// As tcp_stream's: worker threads per side, and where they run.
    pub const THREADS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::THREADS
    };
    pub const CPUS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::CPUS
    };
    pub const SERVER_CPUS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::SERVER_CPUS
    };
    pub const STREAM_TIMEOUT_MS: ParamSpec = ParamSpec {
        label: "receiver quiet timeout (ms)",
        advanced: true,
        ..RR_TIMEOUT_MS
    };
    /// A UDP probe flow beside the burst (latency under its own load), on
    /// a socket of its own, as tcp_stream's.
    pub const PROBE_MS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::PROBE_MS
    };
    pub const PROBE_BYTES: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::PROBE_BYTES
    };
    pub const CLOCKS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..stream::CLOCKS
    };
    /// UDP segmentation offload on the sender (`UDP_SEGMENT`) and receive
    /// offload on the receiver (`UDP_GRO`). Off by default: a coalesced
    /// read carries one kernel time stamp for all its datagrams, which
    /// changes `interarrival_us` and `jitter_us` from what they mean
    /// without it (`UdpGso`).
    pub const GSO: ParamSpec = ParamSpec {
        name: "gso",
        ty: ParamType::Enum,
        label: "UDP GSO on send, GRO on receive (on: refused where the kernel lacks them)",
        default: DefaultValue::Word("off"),
        options: &["off", "auto", "on"],
        advanced: true,
        ..P
    };
}

static UDP_RR: &[ParamSpec] = {
    use udp::*;
    &[
        REQ_BYTES,
        RESP_BYTES,
        RR_COUNT,
        DURATION_S,
        RR_TIMEOUT_MS,
        RR_WAIT_US,
        SNDBUF,
        RCVBUF,
        TOS,
        PRECEDENCE,
        CLIENT_BIND,
        SERVER_BIND,
        RR_INTERVAL_MS,
    ]
};

static UDP_STREAM: &[ParamSpec] = {
    use udp::*;
    &[
        PKT_BYTES,
        STREAM_COUNT,
        DURATION_S,
        WAIT_US,
        RATE,
        STREAMS,
        DIRECTION,
        OMIT_S,
        SNDBUF,
        RCVBUF,
        TOS,
        PRECEDENCE,
        CLIENT_BIND,
        SERVER_BIND,
        OVERHEAD_BYTES,
        STREAM_TIMEOUT_MS,
        PROBE_MS,
        PROBE_BYTES,
        CLOCKS,
        GSO,
        THREADS,
        CPUS,
        SERVER_CPUS,
    ]
};

// ---- latency_under_load ----------------------------------------------------

/// `latency_under_load` (`LulParams::parse`).
pub mod lul {
    use super::*;

    /// The smallest probe: the header, the phase and the responder's two times.
    pub const PROBE_MIN_LEN: u64 = 48;
    /// The largest probe: one unfragmented datagram on an Ethernet path (1500
    /// - 20 IPv4 - 8 UDP).
    pub const PROBE_MAX_LEN: u64 = 1472;

    /// A phase: above 0 s, within the agent's duration limit.
    const PHASE: ParamSpec = ParamSpec {
        ty: ParamType::Float,
        min: Some(Min::Above(0)),
        max: Some(Max::Limit(Limit::MaxDurationS)),
        ..P
    };
    pub const IDLE_S: ParamSpec = ParamSpec {
        name: "idle_s",
        label: "idle phase (s)",
        default: DefaultValue::Num(5),
        initial: Some("5"),
        ..PHASE
    };
    pub const DOWNLOAD_S: ParamSpec = ParamSpec {
        name: "download_s",
        label: "download phase (s)",
        default: DefaultValue::Num(7),
        initial: Some("7"),
        ..PHASE
    };
    pub const UPLOAD_S: ParamSpec = ParamSpec {
        name: "upload_s",
        label: "upload phase (s)",
        ..DOWNLOAD_S
    };
    pub const BOTH_S: ParamSpec = ParamSpec {
        name: "both_s",
        label: "both directions phase (s)",
        ..DOWNLOAD_S
    };
    /// The phases, in the order they run ([`super::super::lul::LulPhase`]).
    pub const PHASE_SPECS: [ParamSpec; 4] = [IDLE_S, DOWNLOAD_S, UPLOAD_S, BOTH_S];
    pub const GAP_S: ParamSpec = ParamSpec {
        name: "gap_s",
        label: "gap between phases (s)",
        default: DefaultValue::Num(1),
        min: Some(Min::AtLeast(0)),
        advanced: true,
        ..PHASE
    };
    pub const STREAMS: ParamSpec = ParamSpec {
        label: "TCP streams per direction",
        default: DefaultValue::Num(4),
        ..stream::STREAMS
    };
    pub const MSG_BYTES: ParamSpec = ParamSpec {
        initial: None,
        advanced: true,
        ..stream::MSG_BYTES
    };
    pub const PROBE_MS: ParamSpec = ParamSpec {
        name: "probe_ms",
        ty: ParamType::Float,
        label: "probe interval (ms)",
        default: DefaultValue::Num(5),
        initial: Some("5"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(1000)),
        ..P
    };
    pub const PROBE_BYTES: ParamSpec = ParamSpec {
        name: "probe_bytes",
        ty: ParamType::Size,
        label: "probe size (bytes)",
        default: DefaultValue::Num(64),
        min: Some(Min::AtLeast(PROBE_MIN_LEN)),
        max: Some(Max::At(PROBE_MAX_LEN)),
        advanced: true,
        ..P
    };
    pub const CLOCKS: ParamSpec = ParamSpec {
        name: "clocks",
        ty: ParamType::Enum,
        label: "clocks (synced: the agents' clocks agree, e.g. one host or PTP)",
        default: DefaultValue::Word("estimate"),
        initial: Some("estimate"),
        options: &["estimate", "synced"],
        ..P
    };
    pub const INTERVAL_MS: ParamSpec = ParamSpec {
        label: "throughput sample interval (ms)",
        default: DefaultValue::Num(100),
        ..super::INTERVAL_MS
    };
}

static LUL: &[ParamSpec] = {
    use lul::*;
    &[
        IDLE_S,
        DOWNLOAD_S,
        UPLOAD_S,
        BOTH_S,
        GAP_S,
        STREAMS,
        MSG_BYTES,
        PROBE_MS,
        PROBE_BYTES,
        CLOCKS,
        INTERVAL_MS,
        CLIENT_BIND,
        SERVER_BIND,
    ]
};

pub mod path {
    use super::*;

    /// A TTL / hop limit: 1 to 64 (no path meshperf measures is longer).
    const TTL: ParamSpec = ParamSpec {
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(64)),
        ..P
    };
    pub const FIRST_TTL: ParamSpec = ParamSpec {
        name: "first_ttl",
        label: "first TTL / hop limit probed",
        default: DefaultValue::Num(1),
        advanced: true,
        ..TTL
    };
    pub const MAX_HOPS: ParamSpec = ParamSpec {
        name: "max_hops",
        label: "most hops (TTL / hop limit) probed",
        default: DefaultValue::Num(30),
        initial: Some("30"),
        ..TTL
    };
    pub const PROBES: ParamSpec = ParamSpec {
        name: "probes",
        label: "probes per hop",
        default: DefaultValue::Num(3),
        initial: Some("3"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(10)),
        ..P
    };
    pub const WAIT_MS: ParamSpec = ParamSpec {
        name: "wait_ms",
        label: "wait for each probe's answer (ms)",
        default: DefaultValue::Num(500),
        min: Some(Min::AtLeast(10)),
        max: Some(Max::At(5000)),
        ..P
    };
    pub const MTU: ParamSpec = ParamSpec {
        name: "mtu",
        ty: ParamType::Bool,
        label: "probe the path MTU each way",
        default: DefaultValue::Bool(true),
        ..P
    };
    pub const DSCP: ParamSpec = ParamSpec {
        name: "dscp",
        ty: ParamType::Text,
        label: "DSCP values to check (0-63, commas; empty: none)",
        default: DefaultValue::Derived("0,8,10,18,26,34,46 (CS0, CS1, AF11, AF21, AF31, AF41, EF)"),
        ..P
    };
    pub const ECN: ParamSpec = ParamSpec {
        name: "ecn",
        ty: ParamType::Bool,
        label: "each DSCP value with each ECN codepoint",
        default: DefaultValue::Bool(true),
        advanced: true,
        ..P
    };
    pub const NAMES: ParamSpec = ParamSpec {
        name: "names",
        ty: ParamType::Bool,
        label: "look up each hop's name (reverse DNS, on the agent that traced it)",
        default: DefaultValue::Bool(false),
        advanced: true,
        ..P
    };
    pub const MARKS_COUNT: ParamSpec = ParamSpec {
        name: "marks_count",
        label: "datagrams per mark",
        default: DefaultValue::Num(3),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(100)),
        advanced: true,
        ..P
    };
}

static PATH: &[ParamSpec] = {
    use path::*;
    &[
        MAX_HOPS,
        PROBES,
        WAIT_MS,
        FIRST_TTL,
        MTU,
        DSCP,
        ECN,
        MARKS_COUNT,
        NAMES,
        CLIENT_BIND,
        SERVER_BIND,
    ]
};

#[cfg(test)]
thread_local! {
    /// The names the last `Reader::finish` on this thread had been asked for.
    pub(crate) static LAST_USED: std::cell::RefCell<Vec<&'static str>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::super::{
        CrrParams, LulParams, PathParams, RrParams, StampParams, StreamParams, UdpRrParams,
        UdpStreamParams,
    };
    use super::*;
    use serde_json::{json, Value};

    /// `v` through `kind`'s parse function, the result as JSON (its keys are
    /// the parameters' names).
    fn parse(kind: Kind, v: Value) -> Result<Value, ParamError> {
        fn to_json<T: serde::Serialize>(t: T) -> Value {
            serde_json::to_value(t).unwrap()
        }
        let l = Limits::default();
        Ok(match kind {
            Kind::TcpStream | Kind::UnixStream => to_json(StreamParams::parse(&v, &l)?),
            Kind::TcpRr | Kind::UnixRr => to_json(RrParams::parse(&v, &l)?),
            Kind::TcpCrr => to_json(CrrParams::parse(&v, &l)?),
            Kind::UdpStream => to_json(UdpStreamParams::parse(&v, &l)?),
            Kind::UdpRr => to_json(UdpRrParams::parse(&v, &l)?),
            Kind::LatencyUnderLoad => to_json(LulParams::parse(&v, &l)?),
            Kind::Path => to_json(PathParams::parse(&v, &l)?),
            Kind::Stamp => {
                // Its one required parameter, when the test gives none.
                let mut v = v;
                if let Some(o) = v.as_object_mut() {
                    o.entry("target").or_insert(json!("stamp://192.0.2.1"));
                }
                to_json(StampParams::parse(&v, &l)?)
            }
        })
    }

    /// Every (kind, entry) of the tables.
    fn entries() -> impl Iterator<Item = (Kind, &'static ParamSpec)> {
        Kind::ALL
            .into_iter()
            .flat_map(|k| k.params().iter().map(move |s| (k, s)))
    }

    fn refused(kind: Kind, s: &ParamSpec, v: Value) {
        let e = parse(kind, json!({ s.name: v })).expect_err(&format!(
            "{} {}: {v} accepted",
            kind.name(),
            s.name
        ));
        assert_eq!(e.param, s.name, "{}: {e}", kind.name());
    }

    fn accepted(kind: Kind, s: &ParamSpec, v: Value) {
        if let Err(e) = parse(kind, json!({ s.name: v })) {
            panic!("{} {}: {v} refused: {e}", kind.name(), s.name);
        }
    }

    #[test]
    fn parsing_nothing_gives_the_tables_defaults() {
        for kind in Kind::ALL {
            let p = parse(kind, json!({})).unwrap();
            for s in kind.params() {
                let got = p.get(s.name).unwrap_or(&Value::Null);
                let what = format!("{} {}: {got}", kind.name(), s.name);
                match s.default {
                    DefaultValue::Num(n) => assert_eq!(got.as_f64(), Some(n as f64), "{what}"),
                    DefaultValue::Bool(b) => assert_eq!(got, &json!(b), "{what}"),
                    DefaultValue::Word(w) => assert_eq!(got, &json!(w), "{what}"),
                    DefaultValue::Unset => assert!(got.is_null(), "{what}"),
                    // Worked out by the parse function or the engine.
                    DefaultValue::Derived(_) => {}
                }
            }
            if matches!(kind, Kind::TcpStream | Kind::UnixStream) {
                assert_eq!(p["read_bytes"], p["msg_bytes"], "read_bytes = msg_bytes");
            }
        }
    }

    #[test]
    fn values_out_of_the_tables_range_are_refused_naming_the_parameter() {
        let limits = Limits::default();
        let mut ranged = 0;
        for (kind, s) in entries() {
            match s.min {
                Some(Min::AtLeast(0)) => refused(kind, s, json!(-1)),
                Some(Min::AtLeast(lo)) => {
                    refused(kind, s, json!(lo - 1));
                    accepted(kind, s, json!(lo));
                }
                Some(Min::Above(lo)) => {
                    refused(kind, s, json!(lo));
                    if s.ty == ParamType::Rate {
                        // A rate's real floor is worked out from the message
                        // size and the test's time (`pace.rs`): 0.5 bit/s
                        // is under 2 messages of any size in any test.
                        refused(kind, s, json!(lo as f64 + 0.5));
                    } else {
                        accepted(kind, s, json!(lo as f64 + 0.5));
                    }
                }
                Some(Min::AtLeastMilli(lo)) => {
                    refused(kind, s, json!(0));
                    refused(kind, s, json!(1e-300));
                    refused(kind, s, json!((lo as f64 - 0.5) / 1000.0));
                    accepted(kind, s, json!(lo as f64 / 1000.0));
                }
                None => {}
            }
            match s.max {
                Some(Max::At(hi)) => refused(kind, s, json!(hi + 1)),
                Some(Max::Limit(l)) => refused(kind, s, json!(l.of(&limits) + 1.0)),
                None => {}
            }
            if s.ty == ParamType::Float {
                if let Some(Max::At(hi)) = s.max {
                    refused(kind, s, json!(hi as f64 + 0.5));
                }
            }
            let numeric = matches!(
                s.ty,
                ParamType::Size | ParamType::Int | ParamType::Float | ParamType::Rate
            );
            assert_eq!(
                numeric,
                s.min.is_some(),
                "{} {}: a number has a range",
                kind.name(),
                s.name
            );
            ranged += numeric as usize;
        }
        assert!(ranged > 50, "{ranged}");
        // The one the page let through before the table: udp_rr req_bytes under 18.
        let e = parse(Kind::UdpRr, json!({"req_bytes": 17})).unwrap_err();
        assert!(
            e.message
                .contains("between 18 (the compact meshperf header)"),
            "{e}"
        );
        assert_eq!(udp::REQ_BYTES.min, Some(Min::AtLeast(18)));
    }

    #[test]
    fn every_choice_in_the_table_parses_and_no_other() {
        for (kind, s) in entries() {
            match s.ty {
                ParamType::Enum => {
                    assert!(!s.options.is_empty());
                    assert!(
                        matches!(s.default, DefaultValue::Word(w) if s.options.contains(&w)),
                        "{}",
                        s.name
                    );
                    for o in s.options {
                        accepted(kind, s, json!(o));
                    }
                    refused(kind, s, json!("none of them"));
                }
                ParamType::Bool => {
                    assert!(matches!(s.default, DefaultValue::Bool(_)), "{}", s.name);
                    accepted(kind, s, json!(true));
                    accepted(kind, s, json!(false));
                    refused(kind, s, json!(1));
                }
                _ => assert!(s.options.is_empty(), "{}", s.name),
            }
            if let Some(i) = s.initial {
                if s.ty == ParamType::Enum {
                    assert!(s.options.contains(&i), "{}: initial {i}", s.name);
                }
            }
        }
    }

    #[test]
    fn the_page_fills_in_the_default_the_cli_applies() {
        // One default per parameter (issue 45 item 21): where the page's form
        // fills a number in, it is the number the agent applies to a plan
        // that leaves it out. udp_stream's wait is the one exception: the
        // agent's default sends flat out (0), the page's form starts paced
        // (20 µs) and says so in the field.
        let size = |t: &str| {
            let (n, m) = match t.chars().last() {
                Some('K') => (&t[..t.len() - 1], 1 << 10),
                Some('M') => (&t[..t.len() - 1], 1 << 20),
                Some('G') => (&t[..t.len() - 1], 1 << 30),
                _ => (t, 1),
            };
            n.parse::<u64>().unwrap() * m
        };
        let mut checked = 0;
        for (kind, s) in entries() {
            let (Some(i), DefaultValue::Num(d)) = (s.initial, s.default) else {
                continue;
            };
            if (kind, s.name) == (Kind::UdpStream, "wait_us") {
                continue;
            }
            let v = match s.ty {
                ParamType::Size => size(i),
                _ => i.parse::<f64>().unwrap() as u64,
            };
            assert_eq!(v, d, "{} {}: the page fills {i}", kind.name(), s.name);
            checked += 1;
        }
        assert!(checked > 10, "{checked}");
    }

    #[test]
    fn a_parameter_given_instead_of_another_is_refused_beside_it() {
        let mut pairs = 0;
        for (kind, s) in entries() {
            let Some(other) = s.instead_of else { continue };
            let o = kind.params().iter().find(|p| p.name == other);
            let o = o.unwrap_or_else(|| panic!("{}: {other} is not in the table", s.name));
            let value = |p: &ParamSpec| match p.min {
                Some(Min::Above(lo)) => json!(lo + 1_000_000),
                Some(Min::AtLeast(lo)) => json!(lo.max(1)),
                Some(Min::AtLeastMilli(lo)) => json!((lo as f64 / 1000.0).max(1.0)),
                None => panic!("{}: instead_of pairs numbers", p.name),
            };
            let e = parse(kind, json!({ (s.name): value(s), (other): value(o) })).unwrap_err();
            assert_eq!(e.param, s.name, "{} {}: {e}", kind.name(), s.name);
            assert!(e.message.contains(other), "{e}");
            parse(kind, json!({ (s.name): value(s) })).unwrap();
            parse(kind, json!({ (other): value(o) })).unwrap();
            pairs += 1;
        }
        assert_eq!(pairs, 1, "udp_stream's rate instead of wait_us");
    }

    #[test]
    fn the_parser_reads_exactly_the_names_in_the_table() {
        for kind in Kind::ALL {
            parse(kind, json!({})).unwrap();
            let mut used = LAST_USED.with(|u| u.take());
            used.sort_unstable();
            used.dedup();
            let mut table: Vec<_> = kind.params().iter().map(|s| s.name).collect();
            table.sort_unstable();
            let n = table.len();
            table.dedup();
            assert_eq!(n, table.len(), "{}: a name twice in the table", kind.name());
            assert_eq!(
                used,
                table,
                "{}: what the parser reads vs the table",
                kind.name()
            );
        }
    }

    #[test]
    fn unix_kinds_share_the_tcp_tables_and_hide_the_ip_options() {
        assert_eq!(Kind::UnixStream.params(), Kind::TcpStream.params());
        assert_eq!(Kind::UnixRr.params(), Kind::TcpRr.params());
        let hidden: Vec<_> = Kind::TcpRr
            .params()
            .iter()
            .filter(|s| s.tcp_only)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            hidden,
            [
                "nodelay",
                "tos",
                "precedence",
                "congestion",
                "mss",
                "client_bind",
                "server_bind",
                "flows",
                "threads"
            ]
        );
    }
}

// ---- stamp -----------------------------------------------------------------

/// `stamp` (`StampParams::parse`): a STAMP Session-Sender toward a reflector
/// that is not a meshperf agent.
pub mod stamp {
    use super::*;

    pub const TARGET: ParamSpec = ParamSpec {
        name: "target",
        ty: ParamType::Text,
        label: "reflector (stamp://HOST[:PORT], port 862 by default)",
        default: DefaultValue::Derived("none: required"),
        ..P
    };
    pub const COUNT: ParamSpec = ParamSpec {
        label: "test packets",
        default: DefaultValue::Num(1000),
        initial: Some("1000"),
        ..super::COUNT
    };
    /// A packet every `wait_us` on an absolute schedule (several in
    /// flight); 0: the next as soon as the last is answered or timed out.
    pub const WAIT_US: ParamSpec = ParamSpec {
        label: "time between packets (µs; 0: each after the last's answer)",
        default: DefaultValue::Num(10_000),
        initial: Some("10000"),
        ..rr::WAIT_US
    };
    pub const TIMEOUT_MS: ParamSpec = ParamSpec {
        label: "wait for each answer (ms)",
        ..udp::RR_TIMEOUT_MS
    };
    pub const PKT_BYTES: ParamSpec = ParamSpec {
        name: "pkt_bytes",
        ty: ParamType::Size,
        label: "packet size (UDP payload; 44, 112 authenticated, and up with padding)",
        default: DefaultValue::Derived("44, 52 with cos, 112 when authenticated"),
        min: Some(Min::AtLeast(44)),
        max: Some(Max::At(9000)),
        ..P
    };
    pub const AUTH: ParamSpec = ParamSpec {
        name: "auth",
        ty: ParamType::Bool,
        label: "authenticated mode (HMAC-SHA-256 with the agent's --stamp-key)",
        default: DefaultValue::Bool(false),
        ..P
    };
    pub const CLOCK: ParamSpec = ParamSpec {
        name: "clock",
        ty: ParamType::Enum,
        label: "timestamp format",
        default: DefaultValue::Word("ntp"),
        options: &["ntp", "ptp"],
        advanced: true,
        ..P
    };
    /// RFC 8972 Class of Service TLV: the reflector says the DSCP and ECN
    /// it received (unauthenticated mode).
    pub const COS: ParamSpec = ParamSpec {
        name: "cos",
        ty: ParamType::Bool,
        label: "ask the reflector's received DSCP/ECN (RFC 8972 CoS TLV)",
        default: DefaultValue::Bool(false),
        advanced: true,
        ..P
    };
    /// RFC 8972 Session-Sender Identifier.
    pub const SSID: ParamSpec = ParamSpec {
        name: "ssid",
        label: "session-sender identifier (RFC 8972, 1-65535)",
        default: DefaultValue::Derived("random"),
        min: Some(Min::AtLeast(1)),
        max: Some(Max::At(65535)),
        advanced: true,
        ..P
    };
    pub const TOS: ParamSpec = ParamSpec {
        tcp_only: false,
        ..super::TOS
    };
    pub const PRECEDENCE: ParamSpec = ParamSpec {
        tcp_only: false,
        ..super::PRECEDENCE
    };
}

static STAMP: &[ParamSpec] = {
    use stamp::*;
    &[
        TARGET, COUNT, DURATION_S, WAIT_US, TIMEOUT_MS, PKT_BYTES, AUTH, TOS, PRECEDENCE, COS,
        CLOCK, SSID,
    ]
};
