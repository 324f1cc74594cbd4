//! `cpu`: the CPU a test side used, in every side's summary of every kind
//! (netperf's `-c -C`, iperf3's local/remote CPU utilisation). The agent
//! adds it to the summary as it reports (`engine::cpu`), so it sits last,
//! after `line`; results from agents before it have no `cpu` and still open.
//!
//! Interval: from the moment the side is connected to its peer (the side's
//! start when it has no peer connection, the driving side of `unix_*`) to
//! its report, wall clock.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One side's CPU use over the test's interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuSummary {
    /// The interval measured over (wall clock).
    pub seconds: f64,
    /// User time of the side's threads (the test thread and the worker
    /// threads it started; getrusage RUSAGE_THREAD of each).
    pub user_seconds: f64,
    /// System (kernel) time of those threads.
    pub system_seconds: f64,
    /// How many threads were counted.
    pub threads: u32,
    /// (`user_seconds` + `system_seconds`) / `seconds` * 100: percent of one
    /// CPU (above 100 when the threads ran on several CPUs at once).
    pub percent: f64,
    /// The whole host over the same interval (/proc/stat): busy time of
    /// all CPUs as a percent of their time (0 to 100); null when /proc/stat
    /// cannot be read or no clock tick passed.
    pub host_percent: Option<f64>,
    /// The host's user time (user + nice), percent of all CPUs' time.
    pub host_user_percent: Option<f64>,
    /// The host's system time (system + irq + softirq), percent of all CPUs' time.
    pub host_system_percent: Option<f64>,
    /// CPUs /proc/stat counts (the `cpuN` lines); 0 when not known.
    pub host_cpus: u32,
}

impl CpuSummary {
    /// The `cpu` object of a side's summary, if it has one.
    pub fn of(summary: &Value) -> Option<CpuSummary> {
        serde_json::from_value(summary.get("cpu")?.clone()).ok()
    }

    /// One short line: `12.3% of a CPU (user 0.041 s, system 0.082 s,
    /// 3 threads, 1.001 s); host 48.1% of 2 CPUs`.
    pub fn text(&self) -> String {
        let host = match self.host_percent {
            Some(h) => format!("; host {h:.1}% of {} CPUs", self.host_cpus),
            None => String::new(),
        };
        format!(
            "{:.1}% of a CPU (user {:.3} s, system {:.3} s, {} thread{}, {:.3} s){host}",
            self.percent,
            self.user_seconds,
            self.system_seconds,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cpu_is_read_from_a_summary_and_absent_in_old_ones() {
        assert_eq!(CpuSummary::of(&json!({"bytes": 5, "line": "x"})), None);
        let c = CpuSummary {
            seconds: 1.0006,
            user_seconds: 0.041,
            system_seconds: 0.0824,
            threads: 3,
            percent: 12.34,
            host_percent: Some(48.06),
            host_user_percent: Some(10.0),
            host_system_percent: Some(38.06),
            host_cpus: 2,
        };
        let s = json!({"bytes": 5, "cpu": c});
        assert_eq!(CpuSummary::of(&s), Some(c));
        assert_eq!(
            c.text(),
            "12.3% of a CPU (user 0.041 s, system 0.082 s, 3 threads, 1.001 s); host 48.1% of 2 CPUs"
        );
        let none = CpuSummary {
            threads: 1,
            host_percent: None,
            ..c
        };
        assert!(
            none.text().ends_with("1 thread, 1.001 s)"),
            "{}",
            none.text()
        );
    }
}
