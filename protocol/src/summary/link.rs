//! `link`: the network interface a test side's traffic left by, in every
//! side's summary of the kinds that run between two agents (not `unix_*`).
//! The agent adds it as it reports, beside `cpu`, from the address its
//! control line to the peer was bound to (the data flows leave by the same
//! route), so a result says what the links allow; results from agents
//! before it have no `link` and still open.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One side's interface.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LinkSummary {
    /// Its name (`eth0`, `lo`).
    pub interface: String,
    /// The speed the interface reports (`/sys/class/net/NAME/speed`, what
    /// ethtool shows), Mbit/s; null where it reports none (loopback, most
    /// virtual and wireless interfaces, a link that is down).
    pub speed_mbps: Option<u64>,
    /// Its MTU, bytes; null where it cannot be read.
    pub mtu: Option<u32>,
}

impl LinkSummary {
    /// The `link` object of a side's summary, if it has one.
    pub fn of(summary: &Value) -> Option<LinkSummary> {
        serde_json::from_value(summary.get("link")?.clone()).ok()
    }

    /// The loopback interface: no link in the path.
    pub fn loopback(&self) -> bool {
        self.interface == "lo"
    }

    /// `eth0, 10 Gbit/s, MTU 1500`.
    pub fn text(&self) -> String {
        let mut parts = vec![self.interface.clone()];
        if let Some(s) = self.speed_mbps {
            parts.push(speed_text(s));
        }
        if let Some(m) = self.mtu {
            parts.push(format!("MTU {m}"));
        }
        parts.join(", ")
    }
}

/// `10 Gbit/s`, `100 Mbit/s`, `2.5 Gbit/s`.
pub fn speed_text(mbps: u64) -> String {
    if mbps >= 1000 {
        let g = mbps as f64 / 1000.0;
        if g.fract() == 0.0 {
            format!("{g:.0} Gbit/s")
        } else {
            format!("{g} Gbit/s")
        }
    } else {
        format!("{mbps} Mbit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn link_is_read_from_a_summary_and_absent_in_old_ones() {
        let s = json!({"bytes": 1, "link": {"interface": "eth0", "speed_mbps": 2500, "mtu": 9000}});
        let l = LinkSummary::of(&s).unwrap();
        assert_eq!(l.text(), "eth0, 2.5 Gbit/s, MTU 9000");
        assert!(!l.loopback());
        assert_eq!(LinkSummary::of(&json!({"bytes": 1})), None);
        let lo = LinkSummary::of(
            &json!({"link": {"interface": "lo", "speed_mbps": null, "mtu": 65536}}),
        );
        assert_eq!(lo.as_ref().map(|l| l.text()), Some("lo, MTU 65536".into()));
        assert!(lo.unwrap().loopback());
        assert_eq!(speed_text(100), "100 Mbit/s");
        assert_eq!(speed_text(10000), "10 Gbit/s");
    }
}
