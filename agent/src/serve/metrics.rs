//! The agent's own counters: control sessions, failed authentications,
//! test sides started and refusals, served as Prometheus metrics when the
//! operator asks (`meshperf agent --metrics ADDR:PORT`, served by
//! [`super::endpoint`], as the monitor's page is).
//!
//! Counts only: no addresses, host names, tokens or versions, so that a
//! scrape tells what the record on stderr tells in totals and nothing a
//! stranger could use against the agent. Labels come from fixed sets (the
//! test kinds, the two roles, the protocol's error codes), so the series
//! stay bounded whatever the controllers send.
//!
//! The event loop increments (atomics, no lock); each scrape renders the
//! page from the same counters.

use meshperf_protocol::msg::{ErrorCode, Role};

use meshperf_protocol::params::Kind;
use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

/// Why an authentication failed (`reason` label).
#[derive(Clone, Copy)]
pub enum AuthFailure {
    /// The token sent was not the agent's.
    WrongToken,
    /// The address failed too often lately and was refused unheard.
    Blocked,
    /// No `auth` within `--auth-timeout`.
    Timeout,
}

/// The counters; one per agent, shared with the metrics endpoint.
pub struct Counters {
    registry: Registry,
    sessions: IntCounter,
    authenticated: IntCounter,
    open: IntGauge,
    auth_failures: IntCounterVec,
    tests: IntCounterVec,
    refusals: IntCounterVec,
    waits: IntCounter,
    /// Sends to targets that are not agents (`--allow-target`).
    targets: crate::engine::target::TargetCounters,
    /// The `--stamp` reflector's.
    stamp: crate::engine::stamp::ReflectorCounters,
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}

impl Counters {
    pub fn new() -> Counters {
        let registry = Registry::new();
        fn reg<T: prometheus::core::Collector + Clone + 'static>(r: &Registry, m: T) -> T {
            r.register(Box::new(m.clone())).expect("registered once");
            m
        }
        let vec = |name: &str, help: &str, labels: &[&str]| {
            reg(
                &registry,
                IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric"),
            )
        };
        let c = Counters {
            sessions: reg(
                &registry,
                IntCounter::new(
                    "meshperf_agent_sessions_total",
                    "Control sessions (WebSockets) opened.",
                )
                .expect("valid metric"),
            ),
            authenticated: reg(
                &registry,
                IntCounter::new(
                    "meshperf_agent_sessions_authenticated_total",
                    "Control sessions that presented the token.",
                )
                .expect("valid metric"),
            ),
            open: reg(
                &registry,
                IntGauge::new("meshperf_agent_sessions_open", "Control sessions open now.")
                    .expect("valid metric"),
            ),
            auth_failures: vec(
                "meshperf_agent_auth_failures_total",
                "Failed authentications: wrong_token, blocked (from an address that failed too often lately: its token waited for its turn, one per 2 s), timeout (no auth in time).",
                &["reason"],
            ),
            tests: vec(
                "meshperf_agent_tests_total",
                "Test sides started, by role (serve: this agent accepted the data connections; drive: it connected) and kind.",
                &["role", "kind"],
            ),
            refusals: vec(
                "meshperf_agent_refusals_total",
                "Tests refused (reason: the error code, e.g. busy, bad_params) and connections refused at the caps (max_connections, max_per_source).",
                &["reason"],
            ),
            waits: reg(
                &registry,
                IntCounter::new(
                    "meshperf_agent_waits_total",
                    "Test sides that waited in the agent's queue for their turn (--max-queue) instead of starting at once.",
                )
                .expect("valid metric"),
            ),
            targets: crate::engine::target::TargetCounters {
                tests: vec(
                    "meshperf_agent_target_tests_total",
                    "Tests that sent to an address that is not a meshperf agent (a STAMP reflector), by kind and the --allow-target range it lies in (the address itself is on the agent's record).",
                    &["kind", "allowed"],
                ),
                packets: vec(
                    "meshperf_agent_target_packets_total",
                    "Datagrams sent to such targets, by kind and --allow-target range.",
                    &["kind", "allowed"],
                ),
                bytes: vec(
                    "meshperf_agent_target_bytes_total",
                    "UDP payload bytes sent to such targets, by kind and --allow-target range.",
                    &["kind", "allowed"],
                ),
                refused: vec(
                    "meshperf_agent_target_refusals_total",
                    "Targets refused as outside every --allow-target range, by kind.",
                    &["kind"],
                ),
            },
            stamp: crate::engine::stamp::ReflectorCounters {
                received: reg(
                    &registry,
                    IntCounter::new(
                        "meshperf_agent_stamp_received_total",
                        "Datagrams the --stamp reflector received.",
                    )
                    .expect("valid metric"),
                ),
                reflected: reg(
                    &registry,
                    IntCounter::new(
                        "meshperf_agent_stamp_reflected_total",
                        "Answers the --stamp reflector sent.",
                    )
                    .expect("valid metric"),
                ),
                dropped: vec(
                    "meshperf_agent_stamp_dropped_total",
                    "Datagrams the --stamp reflector did not answer: malformed (shorter than a base packet), bad_hmac, rate (over --stamp-rate from one source), state_full (no room for another source or session).",
                    &["reason"],
                ),
                bytes_in: reg(
                    &registry,
                    IntCounter::new(
                        "meshperf_agent_stamp_received_bytes_total",
                        "UDP payload bytes the --stamp reflector received.",
                    )
                    .expect("valid metric"),
                ),
                bytes_out: reg(
                    &registry,
                    IntCounter::new(
                        "meshperf_agent_stamp_reflected_bytes_total",
                        "UDP payload bytes the --stamp reflector sent (never more than it received).",
                    )
                    .expect("valid metric"),
                ),
            },
            registry,
        };
        for r in crate::engine::stamp::DROP_REASONS {
            c.stamp.dropped.with_label_values(&[r]);
        }
        // Every series of a fixed label set is there from the start, at 0.
        for r in ["wrong_token", "blocked", "timeout"] {
            c.auth_failures.with_label_values(&[r]);
        }
        for k in crate::engine::KINDS {
            for role in ["serve", "drive"] {
                c.tests.with_label_values(&[role, k.name()]);
            }
        }
        for r in ["busy", "bad_params", "max_connections", "max_per_source"] {
            c.refusals.with_label_values(&[r]);
        }
        c
    }

    /// The counters of sends to targets that are not agents.
    pub fn targets(&self) -> crate::engine::target::TargetCounters {
        self.targets.clone()
    }

    /// The `--stamp` reflector's counters.
    pub fn stamp(&self) -> crate::engine::stamp::ReflectorCounters {
        self.stamp.clone()
    }

    /// A control session opened (`hello` sent).
    pub fn session_opened(&self) {
        self.sessions.inc();
        self.open.inc();
    }

    /// A greeted session closed.
    pub fn session_closed(&self) {
        self.open.dec();
    }

    pub fn authenticated(&self) {
        self.authenticated.inc();
    }

    pub fn auth_failed(&self, why: AuthFailure) {
        let reason = match why {
            AuthFailure::WrongToken => "wrong_token",
            AuthFailure::Blocked => "blocked",
            AuthFailure::Timeout => "timeout",
        };
        self.auth_failures.with_label_values(&[reason]).inc();
    }

    /// A test side started.
    pub fn test_started(&self, role: Role, kind: Kind) {
        let role = match role {
            Role::Server => "serve",
            Role::Client => "drive",
        };
        self.tests.with_label_values(&[role, kind.name()]).inc();
    }

    /// A `prepare` or `start` refused with `code`.
    pub fn test_refused(&self, code: ErrorCode) {
        let reason = serde_json::to_value(code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into());
        self.refusals.with_label_values(&[&reason]).inc();
    }

    /// A `prepare` or `start` waits in the queue.
    pub fn test_waited(&self) {
        self.waits.inc();
    }

    /// A connection refused at `--max-connections` (`per_source`: at
    /// `--max-per-source`).
    pub fn connection_refused(&self, per_source: bool) {
        let reason = if per_source {
            "max_per_source"
        } else {
            "max_connections"
        };
        self.refusals.with_label_values(&[reason]).inc();
    }

    /// The page in the Prometheus text format 0.0.4.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encoding to memory");
        String::from_utf8(out).expect("the encoder writes UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_fixed_labels() {
        let c = Counters::new();
        c.session_opened();
        c.session_opened();
        c.session_closed();
        c.auth_failed(AuthFailure::WrongToken);
        c.test_started(Role::Server, Kind::TcpRr);
        c.test_refused(ErrorCode::Busy);
        c.test_refused(ErrorCode::BadParams);
        c.connection_refused(true);
        c.test_waited();
        let page = c.render();
        for line in [
            "meshperf_agent_sessions_total 2",
            "meshperf_agent_sessions_open 1",
            "meshperf_agent_sessions_authenticated_total 0",
            "meshperf_agent_auth_failures_total{reason=\"wrong_token\"} 1",
            "meshperf_agent_auth_failures_total{reason=\"timeout\"} 0",
            "meshperf_agent_tests_total{kind=\"tcp_rr\",role=\"serve\"} 1",
            "meshperf_agent_tests_total{kind=\"tcp_rr\",role=\"drive\"} 0",
            "meshperf_agent_refusals_total{reason=\"busy\"} 1",
            "meshperf_agent_refusals_total{reason=\"bad_params\"} 1",
            "meshperf_agent_refusals_total{reason=\"max_per_source\"} 1",
            "meshperf_agent_waits_total 1",
        ] {
            assert!(page.lines().any(|l| l == line), "{line} not in\n{page}");
        }
    }
}
