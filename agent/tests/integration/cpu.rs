//! Issue 15, CPU utilisation: every side's summary carries `cpu` (its
//! threads' user and system time, the host's utilisation over the same
//! interval), `meshperf run` prints a `cpu:` line per side and its CSV has
//! each side's columns. Checked on the runs of `run.rs` (no agents of its own).

use meshperf_protocol::result::{RunResult, StepResult};
use meshperf_protocol::summary::CpuSummary;

/// Both sides' `cpu` of a step, within what can be true: thread time
/// between 0 and the interval times the threads, the interval within the
/// step's whole time, host percents between 0 and 100.
pub(crate) fn sides(s: &StepResult) -> [CpuSummary; 2] {
    [&s.sides.client, &s.sides.server].map(|side| {
        let side = side.as_ref().expect("both sides reported");
        let c = CpuSummary::of(side).unwrap_or_else(|| panic!("no cpu in {side}"));
        let used = c.user_seconds + c.system_seconds;
        assert!(c.threads >= 1, "{c:?}");
        assert!(c.user_seconds >= 0.0 && c.system_seconds >= 0.0, "{c:?}");
        // getrusage counts in microseconds: allow one per thread.
        assert!(
            used <= c.seconds * c.threads as f64 + 1e-6 * c.threads as f64,
            "{c:?}"
        );
        assert!((c.percent - used / c.seconds * 100.0).abs() < 1e-6, "{c:?}");
        if let Some(wall) = s.wall_seconds {
            assert!(c.seconds > 0.0 && c.seconds <= wall, "{c:?} in {wall} s");
        }
        assert!(c.host_percent.is_none() || c.host_cpus >= 1, "{c:?}");
        for h in [c.host_percent, c.host_user_percent, c.host_system_percent]
            .into_iter()
            .flatten()
        {
            assert!((0.0..=100.0).contains(&h), "{c:?}");
        }
        if let (Some(b), Some(u), Some(y)) =
            (c.host_percent, c.host_user_percent, c.host_system_percent)
        {
            assert!(u + y <= b + 1e-9, "{c:?}");
        }
        c
    })
}

/// A busy `tcp_stream` run (the driving agent sends): both sides' figures
/// in range, a sender that used CPU and threads beyond its own (the stream
/// workers), the `cpu:` lines printed from the same figures as the JSON
/// (the expected line written out here, not built by the CLI's function),
/// and the CSV's `cpu.client.*` / `cpu.server.*` cells equal to them.
pub(crate) fn check_stream_run(out: &str, file: &RunResult, csv: &str) {
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(';').collect()).collect();
    for (i, s) in file.steps.iter().enumerate() {
        let [client, server] = sides(s);
        assert!(
            client.user_seconds + client.system_seconds > 0.001,
            "a sender moving {} bytes used no CPU: {client:?}",
            s.summary["bytes"]
        );
        assert!(
            client.threads >= 2 && server.threads >= 2,
            "{client:?} {server:?}"
        );
        assert!(client.host_percent.is_some() && server.host_percent.is_some());
        for (role, c) in [("client", client), ("server", server)] {
            // The line as the README shows it, written here from the JSON's
            // figures (not with the function the CLI prints it with).
            let host = c.host_percent.unwrap();
            let line = format!(
                "cpu: {role} {:.1}% of a CPU (user {:.3} s, system {:.3} s, {} threads, {:.3} s); host {host:.1}% of {} CPUs",
                c.percent, c.user_seconds, c.system_seconds, c.threads, c.seconds, c.host_cpus
            );
            assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
            let cell = |k: &str| {
                let name = format!("cpu.{role}.{k}");
                let at = rows[0].iter().position(|h| *h == name);
                rows[i + 1][at.unwrap_or_else(|| panic!("no {name}: {csv}"))]
            };
            let num = |k: &str| cell(k).parse::<f64>().unwrap_or(f64::NAN);
            assert_eq!(num("user_seconds"), c.user_seconds, "{csv}");
            assert_eq!(num("system_seconds"), c.system_seconds, "{csv}");
            assert_eq!(num("percent"), c.percent, "{csv}");
            assert_eq!(num("threads"), c.threads as f64, "{csv}");
            assert_eq!(num("host_percent"), host, "{csv}");
            // Its interface: loopback, with the MTU the kernel gives it.
            let mtu = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap();
            let link = |k: &str| {
                let name = format!("link.{role}.{k}");
                let at = rows[0].iter().position(|h| *h == name);
                rows[i + 1][at.unwrap_or_else(|| panic!("no {name}: {csv}"))]
            };
            assert_eq!(
                (link("interface"), link("mtu")),
                ("lo", mtu.trim()),
                "{csv}"
            );
        }
        let mtu = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap();
        let mtu = mtu.trim();
        let line = format!("link: client lo, MTU {mtu}; server lo, MTU {mtu}");
        assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
        assert!(
            out.lines().any(|l| l == "Over loopback at both agents: no link limits it; this is what the hosts' CPUs and kernels move."),
            "no loopback line in\n{out}"
        );
    }
}
