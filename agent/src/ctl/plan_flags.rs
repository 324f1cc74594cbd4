//! The plan flags `meshperf run` and `meshperf monitor` share (`--plan`,
//! `--preset`, `--kind`, `--set`), declared once and flattened into both.

use super::inline;
use meshperf_protocol::plan::Plan;
use meshperf_protocol::presets;

#[derive(clap::Args, Debug, Default)]
pub struct PlanFlags {
    /// Plan file (JSON, see plans/). `meshperf monitor` takes a plan of one
    /// step, and runs udp_rr (200 requests) when no plan, preset or kind is
    /// given.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["preset", "kind"])]
    pub plan: Option<String>,
    /// A built-in plan: socketsend, bw_tcp, perl_buffers, sockbench, tcp_req, tcp_bw_mon_2, tcp_bw_mon_20, tcp_bw_nstream, udp_req_timo, udp_bw_mon, bufferbloat.
    #[arg(long, value_name = "NAME", conflicts_with = "kind")]
    pub preset: Option<String>,
    /// A plan of this kind from the flags alone: tcp_stream, tcp_rr,
    /// tcp_crr, udp_stream, udp_rr, unix_stream, unix_rr,
    /// latency_under_load, path (a stream kind measures throughput), stamp
    /// (one agent to a STAMP reflector: --set target=stamp://HOST[:PORT]).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Set a parameter (repeatable), over the plan's or preset's own:
    /// --set msg_bytes=1M --set direction=receive. K/M/G are powers of 1024.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
}

impl PlanFlags {
    /// Whether none of `--plan`, `--preset`, `--kind` was given.
    pub fn none(&self) -> bool {
        self.plan.is_none() && self.preset.is_none() && self.kind.is_none()
    }

    /// The plan the flags give, with `--sweep` axes and `--repeat`.
    pub fn build(&self, sweep: &[String], repeat: Option<u32>) -> Result<Plan, String> {
        let base = base_plan(self.preset.as_deref(), self.plan.as_deref())?;
        inline::build(base, self.kind.as_deref(), &self.set, sweep, repeat)
    }
}

/// The plan of `--preset NAME` or `--plan FILE`, if either was given.
pub fn base_plan(preset: Option<&str>, plan: Option<&str>) -> Result<Option<Plan>, String> {
    Ok(if let Some(name) = preset {
        Some(presets::preset(name).ok_or_else(|| {
            format!(
                "unknown preset {name:?}; known: {}",
                presets::names().join(", ")
            )
        })?)
    } else if let Some(path) = plan {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read plan {path}: {e}"))?;
        Some(Plan::from_json(&text).map_err(|e| format!("plan {path}: {e}"))?)
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use meshperf_protocol::params::Kind;

    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        flags: PlanFlags,
    }

    fn help_of(arg: &str) -> String {
        let cmd = Wrap::command();
        let a = cmd
            .get_arguments()
            .find(|a| a.get_id() == arg)
            .unwrap_or_else(|| panic!("no --{arg}"));
        format!(
            "{} {}",
            a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            a.get_long_help().map(|h| h.to_string()).unwrap_or_default()
        )
    }

    /// `--help` once listed 7 of the 9 kinds (issue 45, item 25): every
    /// kind the protocol knows is named in `--kind`'s help, and every
    /// preset in `--preset`'s.
    #[test]
    fn the_kind_and_preset_help_name_every_kind_and_preset() {
        let words = |h: String| -> Vec<String> {
            h.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(str::to_string)
                .collect()
        };
        let kinds = words(help_of("kind"));
        for k in Kind::ALL {
            assert!(
                kinds.iter().any(|w| w == k.name()),
                "--kind's help lacks {}",
                k.name()
            );
        }
        let presets_help = words(help_of("preset"));
        for p in presets::names() {
            assert!(
                presets_help.iter().any(|w| w == p),
                "--preset's help lacks {p}"
            );
        }
    }
}
