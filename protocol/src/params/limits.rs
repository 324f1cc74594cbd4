//! The agent's limits, one row each: the one list the agent's flags, its
//! `hello`, the checks before a step, the matrix's strictest-limit lines and
//! the page's agent cards are written from (the page through the generated
//! web/src/lib/generated/params.ts, `LIMITS`). A new limit is a field of
//! [`Limits`], its flag in agent/src/serve/mod.rs, and a row here (a test
//! there checks that each row's flag is the agent's).

use super::Limits;

/// What a limit counts, as the page writes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitUnit {
    /// Bytes (shown in binary units: `64 MiB`).
    Bytes,
    /// Seconds.
    Seconds,
    /// A count of the row's `what` (streams, flows, messages).
    Count,
    /// Bits per second (shown with SI prefixes: `1 Gbit/s`).
    BitsPerSecond,
}

impl LimitUnit {
    /// The name the generated TypeScript uses.
    pub fn name(self) -> &'static str {
        match self {
            LimitUnit::Bytes => "bytes",
            LimitUnit::Seconds => "s",
            LimitUnit::Count => "count",
            LimitUnit::BitsPerSecond => "bit/s",
        }
    }
}

/// One of the agent's limits.
#[derive(Debug, Clone, Copy)]
pub struct LimitSpec {
    /// The field's name in [`Limits`] and in `hello` (`max_streams`).
    pub name: &'static str,
    /// The agent's flag that sets it (`--max-streams`); `None`: fixed.
    pub flag: Option<&'static str>,
    pub unit: LimitUnit,
    /// What it bounds, as the page's agent card says it (`streams`,
    /// `message size`).
    pub what: &'static str,
    /// Its value in `limits`; `None`: no cap.
    pub get: fn(&Limits) -> Option<f64>,
}

/// Every limit, in the order the page lists them ([`super::Limit`] names
/// the rows a parameter may be bounded by, by their index here).
pub const LIMITS: [LimitSpec; 9] = [
    LimitSpec {
        name: "max_msg_bytes",
        flag: None,
        unit: LimitUnit::Bytes,
        what: "message size",
        get: |l| Some(l.max_msg_bytes as f64),
    },
    LimitSpec {
        name: "max_duration_s",
        flag: Some("--max-duration"),
        unit: LimitUnit::Seconds,
        what: "test length",
        get: |l| Some(l.max_duration_s),
    },
    LimitSpec {
        name: "max_bytes",
        flag: Some("--max-bytes"),
        unit: LimitUnit::Bytes,
        what: "bytes per test",
        get: |l| Some(l.max_bytes as f64),
    },
    LimitSpec {
        name: "max_streams",
        flag: Some("--max-streams"),
        unit: LimitUnit::Count,
        what: "streams",
        get: |l| Some(f64::from(l.max_streams)),
    },
    LimitSpec {
        name: "max_count",
        flag: None,
        unit: LimitUnit::Count,
        what: "messages",
        get: |l| Some(l.max_count as f64),
    },
    LimitSpec {
        name: "max_flows",
        flag: Some("--max-flows"),
        unit: LimitUnit::Count,
        what: "flows",
        get: |l| Some(f64::from(l.max_flows)),
    },
    LimitSpec {
        name: "max_udp_bits_per_second",
        flag: Some("--max-udp-rate"),
        unit: LimitUnit::BitsPerSecond,
        what: "UDP rate",
        get: |l| l.max_udp_bits_per_second,
    },
    LimitSpec {
        name: "max_tests",
        flag: Some("--max-tests"),
        unit: LimitUnit::Count,
        what: "tests at once",
        get: |l| Some(f64::from(l.max_tests)),
    },
    LimitSpec {
        name: "max_queue",
        flag: Some("--max-queue"),
        unit: LimitUnit::Count,
        what: "tests waiting",
        get: |l| Some(f64::from(l.max_queue)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_a_parameter_names_is_its_row() {
        use super::super::Limit;
        for (l, name) in [
            (Limit::MaxMsgBytes, "max_msg_bytes"),
            (Limit::MaxDurationS, "max_duration_s"),
            (Limit::MaxStreams, "max_streams"),
            (Limit::MaxCount, "max_count"),
            (Limit::MaxFlows, "max_flows"),
        ] {
            assert_eq!(l.name(), name);
        }
    }

    #[test]
    fn every_limit_of_hello_has_one_row() {
        let hello = serde_json::to_value(Limits {
            max_udp_bits_per_second: Some(1e9),
            ..Limits::default()
        })
        .unwrap();
        let fields: Vec<&String> = hello.as_object().unwrap().keys().collect();
        let rows: Vec<&str> = LIMITS.iter().map(|l| l.name).collect();
        assert_eq!(fields.len(), rows.len(), "{fields:?} {rows:?}");
        for l in LIMITS {
            assert_eq!(
                hello[l.name].as_f64(),
                (l.get)(&serde_json::from_value(hello.clone()).unwrap()),
                "{}",
                l.name
            );
        }
    }
}
