//! The built-in plans, one per seed tool. Their JSON lives in `plans/` at the
//! repository root (documented examples of the plan format) and is compiled in.

use crate::plan::Plan;

/// (name, plan JSON) of every preset.
pub const PRESETS: &[(&str, &str)] = &[
    ("socketsend", include_str!("../../plans/socketsend.json")),
    ("bw_tcp", include_str!("../../plans/bw_tcp.json")),
    (
        "perl_buffers",
        include_str!("../../plans/perl_buffers.json"),
    ),
    ("sockbench", include_str!("../../plans/sockbench.json")),
    ("tcp_req", include_str!("../../plans/tcp_req.json")),
    (
        "tcp_bw_mon_2",
        include_str!("../../plans/tcp_bw_mon_2.json"),
    ),
    (
        "tcp_bw_mon_20",
        include_str!("../../plans/tcp_bw_mon_20.json"),
    ),
    (
        "tcp_bw_nstream",
        include_str!("../../plans/tcp_bw_nstream.json"),
    ),
    (
        "udp_req_timo",
        include_str!("../../plans/udp_req_timo.json"),
    ),
    ("udp_bw_mon", include_str!("../../plans/udp_bw_mon.json")),
    ("bufferbloat", include_str!("../../plans/bufferbloat.json")),
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Plan> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, j)| Plan::from_json(j).expect("presets are valid plans"))
}

/// Names of all presets, for error messages and listings.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_preset_parses_and_expands() {
        for (name, _) in super::PRESETS {
            let p = super::preset(name).unwrap();
            assert_eq!(p.name.as_deref(), Some(*name));
            assert!(!p.expand().unwrap().is_empty(), "{name}");
        }
        assert_eq!(
            super::preset("sockbench").unwrap().expand().unwrap().len(),
            81
        );
        assert_eq!(
            super::preset("tcp_req").unwrap().expand().unwrap().len(),
            180
        );
        assert!(super::preset("nope").is_none());
    }
}
