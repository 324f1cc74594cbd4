//! Ctrl-C during `meshperf run`, as udp_req_timo's Control-c: the run says
//! where it stood (which step of how many, what it was running, how far),
//! cancels the running step on its agents (they are left serving), and
//! keeps what was measured: the steps that ended, and the step cut short
//! when its samples came back, marked as partial. A second Ctrl-C exits at
//! once. Either way the exit status is [`EXIT_INTERRUPTED`].

pub use meshperf_protocol::partial::{describe, partial, partial_line};
use meshperf_protocol::plan::Step;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// 128 + SIGINT, as a shell reports a command Ctrl-C stopped (SIGTERM too).
pub const EXIT_INTERRUPTED: u8 = 130;

/// SIGINT and SIGTERM set `stop`; a second one, with `stop` already set,
/// ends the process at once with [`EXIT_INTERRUPTED`] (the agents cancel
/// the tests of a controller whose connection closes).
pub fn install(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for s in [SIGINT, SIGTERM] {
        // The shutdown first: it sees the flag as the previous signal left it.
        signal_hook::flag::register_conditional_shutdown(s, EXIT_INTERRUPTED as i32, stop.clone())?;
        signal_hook::flag::register(s, stop.clone())?;
    }
    Ok(())
}

/// The line said the moment the interrupt is noticed: where the run stood.
/// `done` steps had ended of `total`; `running` are the steps under way with
/// how far each was (0 to 1).
pub fn where_it_stood(done: usize, total: usize, running: &[(&Step, f64)]) -> String {
    let what: Vec<String> = running
        .iter()
        .map(|(s, f)| {
            let d = describe(s);
            format!(
                "step {} of {total} ({}{}{d}) {:.0}% done",
                s.index + 1,
                s.kind.name(),
                if d.is_empty() { "" } else { " " },
                f * 100.0
            )
        })
        .collect();
    let at = if what.is_empty() {
        format!("between steps, {done} of {total} done")
    } else {
        format!("{done} of {total} steps done, {}", what.join(", "))
    };
    format!(
        "meshperf run: interrupted: {at}; cancelling on the agents and keeping what was measured (Ctrl-C again exits at once)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshperf_protocol::params::Kind;
    use serde_json::json;

    #[test]
    fn where_it_stood_names_the_step_and_how_far() {
        let st: Step = Step {
            index: 3,
            kind: Kind::TcpStream,
            params: Default::default(),
            point: vec![("msg_bytes".into(), json!(1024))],
            repeat: 0,
            transport: meshperf_protocol::plan::Transport::Tcp,
        };
        assert_eq!(
            where_it_stood(3, 20, &[(&st, 0.43)]),
            "meshperf run: interrupted: 3 of 20 steps done, step 4 of 20 (tcp_stream msg_bytes=1024) 43% done; cancelling on the agents and keeping what was measured (Ctrl-C again exits at once)"
        );
    }
}
