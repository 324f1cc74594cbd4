//! An iperf3 client's parameters (the JSON it sends after PARAM_EXCHANGE),
//! checked against what this agent does and its limits: a test it takes,
//! or the one-line refusal naming the option and the iperf3 error number
//! its client prints for it.

use meshperf_protocol::params::Limits;
use serde_json::Value;

/// iperf3's error numbers (`i_errno`, iperf_api.h of 3.x) the refusals use:
/// the client prints its own text for each ("iperf3: error - ...").
pub mod errno {
    /// "test duration too long"
    pub const DURATION: i32 = 5;
    /// "number of parallel streams too large"
    pub const STREAMS: i32 = 6;
    /// "block size too large"
    pub const BLOCK: i32 = 7;
    /// "bogus value for --omit"
    pub const OMIT: i32 = 12;
    /// "an option you are trying to set is not implemented yet"
    pub const UNIMP: i32 = 13;
    /// "no SCTP support available"
    pub const SCTP: i32 = 18;
    /// "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"
    pub const UDP_BLOCK: i32 = 20;
    /// "total required bandwidth is larger than server limit"
    pub const RATE: i32 = 27;
    /// "unable to set TCP_CONGESTION: ..."
    pub const CONGESTION: i32 = 134;
}

/// The smallest UDP block iperf3 takes: its header (sec, usec, a 64-bit
/// counter).
pub const UDP_MIN_BLOCK: u64 = 16;
/// The largest UDP payload over IPv4.
pub const UDP_MAX_BLOCK: u64 = 65_507;

/// A test the agent takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    pub udp: bool,
    /// The agent sends (iperf3 `-R`).
    pub reverse: bool,
    pub streams: u32,
    /// Seconds (`-t`); 0 with `-n`.
    pub time_s: f64,
    /// Bytes of the whole test, all streams (`-n`); 0: timed.
    pub bytes: u64,
    /// Bytes per write or datagram (`-l`).
    pub len: u64,
    /// Bits per second (`-b`, UDP).
    pub rate: f64,
    /// UDP: the 64-bit packet counter (`--udp-counters-64bit`).
    pub counters_64: bool,
    pub nodelay: bool,
    /// Socket buffer (`-w`).
    pub window: Option<u64>,
    pub tos: Option<u8>,
    pub congestion: Option<String>,
    /// What the client says it is (`client_version`), for the record.
    pub client_version: String,
}

/// Why the test is refused: the record's line and iperf3's error number.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub line: String,
    pub errno: i32,
}

fn no(errno: i32, line: impl Into<String>) -> Refusal {
    Refusal {
        line: line.into(),
        errno,
    }
}

/// The options meshperf's iperf3 side does not do: the parameter's key,
/// the client's option, the error number.
const NOT_DONE: &[(&str, &str, i32)] = &[
    ("bidirectional", "--bidir", errno::UNIMP),
    ("sctp", "--sctp", errno::SCTP),
    ("blockcount", "-k/--blockcount", errno::UNIMP),
    ("MSS", "-M/--set-mss", errno::UNIMP),
    ("fqrate", "--fq-rate", errno::UNIMP),
    ("flowlabel", "-L/--flowlabel", errno::UNIMP),
    ("burst", "-b RATE/BURST", errno::UNIMP),
    ("authtoken", "--username (authentication)", errno::UNIMP),
    ("dont_fragment", "--dont-fragment", errno::UNIMP),
];

/// Checks `p` against what is done and `limits`.
pub fn check(p: &Value, limits: &Limits) -> Result<Test, Refusal> {
    let Some(o) = p.as_object() else {
        return Err(no(errno::UNIMP, "parameters are not a JSON object"));
    };
    let set = |k: &str| match o.get(k) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(_) => true,
    };
    for (key, option, e) in NOT_DONE {
        if set(key) {
            return Err(no(*e, format!("{option} is not supported")));
        }
    }
    let num = |k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    if num("omit") > 0.0 {
        return Err(no(errno::OMIT, "-O/--omit is not supported"));
    }
    let udp = set("udp");
    if !udp && !set("tcp") {
        return Err(no(errno::UNIMP, "a protocol other than TCP or UDP"));
    }
    let streams = num("parallel").max(1.0);
    if streams > f64::from(limits.max_streams) {
        return Err(no(
            errno::STREAMS,
            format!(
                "-P {streams}: more streams than this agent's --max-streams {}",
                limits.max_streams
            ),
        ));
    }
    let time_s = num("time");
    let bytes = num("num");
    if time_s > limits.max_duration_s {
        return Err(no(
            errno::DURATION,
            format!(
                "-t {time_s}: longer than this agent's --max-duration {}",
                limits.max_duration_s
            ),
        ));
    }
    if bytes > limits.max_bytes as f64 {
        return Err(no(
            errno::UNIMP,
            format!(
                "-n {bytes}: more bytes than this agent's --max-bytes {}",
                limits.max_bytes
            ),
        ));
    }
    let len = num("len") as u64;
    if udp && !(UDP_MIN_BLOCK..=UDP_MAX_BLOCK).contains(&len) {
        return Err(no(
            errno::UDP_BLOCK,
            format!("-l {len}: a UDP block from {UDP_MIN_BLOCK} to {UDP_MAX_BLOCK} bytes"),
        ));
    }
    if len == 0 || len > limits.max_msg_bytes {
        return Err(no(
            errno::BLOCK,
            format!(
                "-l {len}: a block from 1 byte to this agent's limit {}",
                limits.max_msg_bytes
            ),
        ));
    }
    let rate = num("bandwidth");
    if !udp && rate > 0.0 {
        return Err(no(errno::UNIMP, "-b with TCP (paced TCP) is not supported"));
    }
    if udp {
        if rate <= 0.0 {
            return Err(no(errno::RATE, "-u without a rate (-b 0, unlimited UDP)"));
        }
        if let Some(max) = limits.max_udp_bits_per_second {
            if rate * streams > max {
                return Err(no(
                    errno::RATE,
                    format!(
                        "-b {rate} x {streams} streams: above this agent's --max-udp-rate {max}"
                    ),
                ));
            }
        }
    }
    let congestion = o
        .get("congestion")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Err((_, why)) = crate::engine::sockopt::check_congestion(congestion.as_deref()) {
        return Err(no(errno::CONGESTION, format!("-C: {why}")));
    }
    Ok(Test {
        udp,
        reverse: set("reverse"),
        streams: streams as u32,
        time_s,
        bytes: bytes as u64,
        len,
        rate,
        counters_64: set("udp_counters_64bit"),
        nodelay: set("nodelay"),
        window: o.get("window").and_then(Value::as_u64).filter(|&w| w > 0),
        tos: o
            .get("TOS")
            .and_then(Value::as_u64)
            .filter(|&t| t > 0)
            .map(|t| t.min(255) as u8),
        congestion,
        client_version: o
            .get("client_version")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .chars()
            .take(32)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_test_is_taken_and_each_option_not_done_is_named() {
        let l = Limits::default();
        let t = check(
            &json!({"tcp": true, "time": 10, "parallel": 2, "len": 131072, "client_version": "3.12"}),
            &l,
        )
        .unwrap();
        assert_eq!(
            (t.streams, t.time_s, t.udp, t.reverse),
            (2, 10.0, false, false)
        );
        let r = check(
            &json!({"tcp": true, "time": 1, "len": 1000, "bidirectional": true}),
            &l,
        );
        assert_eq!(r.unwrap_err().line, "--bidir is not supported");
        let r = check(&json!({"sctp": true, "time": 1, "len": 1000}), &l);
        assert_eq!(r.unwrap_err().errno, errno::SCTP);
        let r = check(&json!({"tcp": true, "time": 1e6, "len": 1000}), &l);
        assert!(r.unwrap_err().line.starts_with("-t 1000000: longer than"));
        let r = check(
            &json!({"tcp": true, "time": 1, "parallel": 1000, "len": 1000}),
            &l,
        );
        assert_eq!(r.unwrap_err().errno, errno::STREAMS);
        let r = check(&json!({"tcp": true, "num": 1e15, "len": 1000}), &l);
        assert!(r.unwrap_err().line.contains("--max-bytes"));
        let r = check(
            &json!({"udp": true, "time": 1, "len": 70000, "bandwidth": 1e6}),
            &l,
        );
        assert_eq!(r.unwrap_err().errno, errno::UDP_BLOCK);
    }
}
