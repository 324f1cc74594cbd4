//! What a test takes of an agent while it runs, and whether it runs alone
//! there (issue 42): an agent runs several tests at once, and the sum of
//! what they take stays within its per-test limits.

use super::{
    CrrParams, Kind, Limits, LulParams, ParamError, PathParams, RrParams, StampParams,
    StreamParams, UdpRrParams, UdpStreamParams,
};
use serde_json::Value;

/// What one test takes of each agent it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Parallel streams (`tcp_stream`, `unix_stream`, `udp_stream`,
    /// `latency_under_load`), bounded together by `max_streams`.
    pub streams: u32,
    /// Concurrent connections of `tcp_rr` and `tcp_crr` (`udp_rr`: 1),
    /// bounded together by `max_flows`.
    pub flows: u32,
    /// Bytes the test may move when a count bounds it (0 when a time
    /// does: the duration limit bounds those), bounded together by
    /// `max_bytes`.
    pub bytes: u64,
    /// The paced UDP rate of a `udp_stream` (bits per second of payload,
    /// all its streams and directions), bounded together by
    /// `max_udp_bits_per_second`.
    pub udp_bits_per_second: f64,
    /// The kind's default: a test that tries to fill a link runs alone on
    /// each of its agents (see [`Kind::usage`]).
    pub exclusive: bool,
    /// Roughly how long it runs, in seconds (its `duration_s`, its phases;
    /// 1 s when a count bounds it), for a queue's estimate of the wait.
    pub expected_s: f64,
}

impl Kind {
    /// What a test of this kind with `params` takes of an agent, parsing
    /// them as the agent does. Link-filling tests run alone by default
    /// (`tcp_stream`, `unix_stream`, an unpaced `udp_stream`,
    /// `latency_under_load`, `tcp_crr`, and `tcp_rr`/`unix_rr` of many
    /// flows); light ones (`tcp_rr`, `unix_rr` and `udp_rr` of one flow, a
    /// paced `udp_stream`, `path`, `stamp`) may run beside others.
    pub fn usage(self, params: &Value, limits: &Limits) -> Result<Usage, ParamError> {
        let span = |d: Option<f64>| d.unwrap_or(1.0);
        Ok(match self {
            Kind::TcpStream | Kind::UnixStream => {
                let p = StreamParams::parse(params, limits)?;
                Usage {
                    streams: p.streams,
                    bytes: p
                        .bytes_per_stream()
                        .map_or(0, |b| b.saturating_mul(u64::from(p.streams))),
                    exclusive: true,
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::TcpRr | Kind::UnixRr => {
                let p = RrParams::parse(params, limits)?;
                Usage {
                    flows: p.flows,
                    bytes: p
                        .count
                        .map_or(0, |c| c.saturating_mul(p.req_bytes + p.resp_bytes)),
                    exclusive: p.flows > 1,
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::TcpCrr => {
                let p = CrrParams::parse(params, limits)?;
                Usage {
                    flows: p.flows,
                    bytes: p
                        .count
                        .map_or(0, |c| c.saturating_mul(p.req_bytes + p.resp_bytes)),
                    exclusive: true,
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::UdpRr => {
                let p = UdpRrParams::parse(params, limits)?;
                Usage {
                    flows: 1,
                    bytes: p.count.saturating_mul(p.req_bytes + p.resp_bytes),
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::UdpStream => {
                let p = UdpStreamParams::parse(params, limits)?;
                let ways = if p.direction == super::Direction::Both {
                    2.0
                } else {
                    1.0
                };
                let paced = p.rate.is_some() || p.wait_us > 0.0;
                let rate = match p.rate {
                    Some(r) => r,
                    None if p.wait_us > 0.0 => {
                        (p.pkt_bytes * 8) as f64 / p.wait_us * 1e6 * f64::from(p.streams)
                    }
                    None => 0.0,
                };
                Usage {
                    streams: p.streams,
                    bytes: p
                        .count
                        .saturating_mul(p.pkt_bytes)
                        .saturating_mul(u64::from(p.streams)),
                    udp_bits_per_second: rate * ways,
                    exclusive: !paced,
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::LatencyUnderLoad => {
                let p = LulParams::parse(params, limits)?;
                Usage {
                    streams: p.streams,
                    exclusive: true,
                    expected_s: p.idle_s + p.download_s + p.upload_s + p.both_s + 4.0 * p.gap_s,
                    ..Usage::default()
                }
            }
            // A STAMP session: one flow of probes, paced, light.
            Kind::Stamp => {
                let p = StampParams::parse(params, limits)?;
                Usage {
                    flows: 1,
                    bytes: p.count.map_or(0, |c| c.saturating_mul(p.pkt_bytes)),
                    expected_s: span(p.duration_s),
                    ..Usage::default()
                }
            }
            Kind::Path => {
                PathParams::parse(params, limits)?;
                Usage {
                    flows: 1,
                    expected_s: 5.0,
                    ..Usage::default()
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn link_filling_kinds_run_alone_and_light_ones_share() {
        let l = Limits::default();
        let ex = |k: Kind, p: Value| k.usage(&p, &l).unwrap().exclusive;
        assert!(ex(Kind::TcpStream, json!({})));
        assert!(ex(Kind::TcpCrr, json!({})));
        assert!(ex(Kind::LatencyUnderLoad, json!({})));
        assert!(ex(Kind::TcpRr, json!({"flows": 4})));
        assert!(!ex(Kind::TcpRr, json!({})));
        assert!(!ex(Kind::UdpRr, json!({})));
        assert!(!ex(Kind::Path, json!({})));
        assert!(!ex(Kind::UdpStream, json!({"rate": 1e6, "duration_s": 1})));
        assert!(ex(Kind::UdpStream, json!({"wait_us": 0})));
        let u = Kind::TcpRr
            .usage(&json!({"count": 10, "req_bytes": 3, "resp_bytes": 5}), &l)
            .unwrap();
        assert_eq!((u.flows, u.bytes), (1, 80));
        assert!(Kind::TcpRr.usage(&json!({"nope": 1}), &l).is_err());
    }
}
