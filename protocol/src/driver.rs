//! The step driver: what a controller does to run one plan step between
//! agents, written once. `meshperf run` uses it natively and the web app
//! through the wasm codec module (`StepDriver`), so both place the ends the
//! same way, pick the same data address, cancel the same way on failure and
//! build the same [`StepResult`].
//!
//! It does no I/O (the caller owns the sockets): feed it the replies,
//! events, sample frames and closed connections of the agents taking part,
//! and send the [`Outgoing`] requests it returns. Agents are indices into the
//! caller's list of [`AgentRef`]s, so a scheduler can run several steps at
//! once over many agents (one [`StepRun`] per running step).
//!
//! A step goes: `prepare` to the serving agent; on `prepared`, `start` to the
//! driving agent with the serving agent's port and key; then both sides
//! report progress, sample frames and one final `result` or `error` each.
//! A refused `start` cancels the prepared side at once (it would otherwise
//! hold the serving agent busy for its accept window), and an error on one
//! side cancels the other; the step ends when both sides have ended.

use crate::frame::{self, FrameError, FrameHeader};
use crate::msg::{ErrorCode, Event, PeerAddr, Request, Role};
use crate::params::{Kind, Limits};
use crate::plan::{Step, Transport};
use crate::result::{primary_role, Series, Sides, StepResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

/// How many values past those received the series of a step may hold.
/// Frames of a series may arrive out of order and land at their sequence
/// numbers, leaving gaps for the frames still on their way; but a frame of a
/// few bytes must not make the controller allocate gigabytes of zeros.
pub const MAX_GAP: usize = 1 << 20;

/// What the driver needs to know of an agent.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRef {
    /// How messages name the agent: "agent 127.0.0.1:7800".
    pub label: String,
    /// The host the controller reached the agent at; a driving agent
    /// connects to a serving agent there (its data ports are on that host).
    pub host: String,
    /// The `addresses` of the agent's info (`"IP (iface)"`).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// The limits the agent announced, to check steps before they run.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// The kinds the agent runs (its info's `capabilities`; absent: not
    /// known). Kinds this build does not know (a newer agent's) are left out.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_known_kinds"
    )]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub capabilities: Option<Vec<crate::params::Kind>>,
    /// The agent's release (its info's `version`), for refusals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub version: Option<String>,
    /// Each kind's parameters the agent takes (its info's `accepts`;
    /// absent or empty: not known, an agent before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub accepts: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The agent process's random `instance` (its info's): one agent listed
    /// under two names shows the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub instance: Option<String>,
    /// The CPUs the agent may use (its info's `cores`; absent: not
    /// known): a step asking more `threads` is refused before it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cores: Option<u32>,
}

/// How long a cancelled step waits for its agents to confirm before it is
/// given up (they answer within a fraction of a second when alive):
/// `meshperf run`'s and the page's (web/src/lib/run/drive.ts, through the
/// generated tables).
pub const CANCEL_GRACE_S: f64 = 15.0;

/// An agent's `capabilities` (a list of kind names) without the kinds this
/// build does not know: a newer agent's list still tells which known kinds
/// it runs. None when it is not a list.
pub fn known_kinds(names: &Value) -> Option<Vec<Kind>> {
    let v = names.as_array()?;
    Some(
        v.iter()
            .filter_map(|n| Kind::from_name(n.as_str()?))
            .collect(),
    )
}

fn read_known_kinds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<Kind>>, D::Error> {
    let names: Option<Value> = Option::deserialize(d)?;
    Ok(names.as_ref().and_then(known_kinds))
}

impl AgentRef {
    /// How a refusal names the agent: its label and, when known, its
    /// release ("agent 10.0.0.3:7800 (meshperf 0.1.0)"; the page's
    /// "agent B (10.0.0.3:7800, meshperf 0.1.0)").
    pub fn named(&self) -> String {
        match (&self.version, self.label.strip_suffix(')')) {
            (Some(v), Some(open)) => format!("{open}, meshperf {v})"),
            (Some(v), None) => format!("{} (meshperf {v})", self.label),
            (None, _) => self.label.clone(),
        }
    }

    /// Why this agent's release cannot run `kind` with parameters named
    /// `params`, in one line naming it, its release and the missing kind or
    /// parameter (None: it can, or it did not say). An agent with `accepts`
    /// lists every kind its release knows there, and those it runs here in
    /// `capabilities`: a kind it knows but does not run on its platform
    /// (unix sockets on Windows) is left to its own refusal, which says why.
    /// An agent before `accepts` tells only the kinds it runs; it refuses
    /// an unknown parameter itself, naming it.
    pub fn cannot_run<'a>(
        &self,
        kind: Kind,
        mut params: impl Iterator<Item = &'a String>,
    ) -> Option<String> {
        let Some(known) = self.accepts.as_ref().filter(|a| !a.is_empty()) else {
            let caps = self.capabilities.as_ref()?;
            if caps.contains(&kind) {
                return None;
            }
            let names: Vec<&str> = caps.iter().map(|k| k.name()).collect();
            // A release that says what it is can be upgraded to one that
            // runs the kind.
            let fix = if self.version.is_some() {
                ": upgrade it"
            } else {
                ""
            };
            return Some(format!(
                "{} does not run {} (it runs {}){fix}",
                self.named(),
                kind.name(),
                names.join(", ")
            ));
        };
        let Some(takes) = known.get(kind.name()) else {
            return Some(format!(
                "{} does not run {} (a release before it): upgrade it",
                self.named(),
                kind.name()
            ));
        };
        let p = params.find(|p| !takes.contains(p))?;
        Some(format!(
            "{} does not take {}'s parameter {p} (a release before it): upgrade it, or leave {p} out",
            self.named(),
            kind.name()
        ))
    }

    /// The agent's first local non-loopback IPv4 address (transport `tcp_local`).
    pub fn local_ipv4(&self) -> Option<IpAddr> {
        self.ips().find(|ip| ip.is_ipv4() && !ip.is_loopback())
    }

    /// The addresses of [`AgentRef::addresses`], without their interfaces.
    pub fn ips(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.addresses
            .iter()
            .filter_map(|a| a.split([' ', '/']).next()?.parse::<IpAddr>().ok())
    }
}

/// Which agents play the two ends of a step (indices into the agent list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Asked to `prepare`: accepts the data connections.
    pub server: usize,
    /// Asked to `start`: connects to the server.
    pub client: usize,
}

impl Placement {
    /// The ends of a `kind` step for the ordered pair (serving, driving):
    /// kinds that run inside one agent (Unix sockets) get both ends on the
    /// serving agent, whichever agents were given; so do kinds one agent
    /// runs alone toward a target that is not an agent (`stamp`).
    pub fn for_kind(kind: Kind, server: usize, client: usize) -> Placement {
        let client = if kind.inside_one_agent() || kind.to_outside_target() {
            server
        } else {
            client
        };
        Placement { server, client }
    }

    /// The agents taking part, each once.
    pub fn agents(self) -> Vec<usize> {
        if self.server == self.client {
            vec![self.server]
        } else {
            vec![self.server, self.client]
        }
    }
}

/// A request for one agent. `id` is 0: the connection numbers its requests.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outgoing {
    pub agent: usize,
    pub request: Request,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Preparing,
    Starting,
    Running,
    Done,
}

/// The parameters both ends of `step` get (the step's, plus `server_bind`
/// for transport `tcp_local`) and the host the driving agent connects to.
fn step_params(
    step: &Step,
    place: Placement,
    agents: &[AgentRef],
) -> Result<(Value, String), String> {
    for i in [place.server, place.client] {
        if i >= agents.len() {
            return Err(format!("no agent {i} (there are {})", agents.len()));
        }
    }
    let server = &agents[place.server];
    let mut params = step.params.clone();
    // How the step shares its agents (issue 42) travels beside the
    // parameters, which an agent would refuse as unknown.
    for k in SHARE_KEYS {
        if params.get(k).is_some_and(|v| !v.is_boolean()) {
            return Err(format!("{k}: must be true or false"));
        }
        params.remove(k);
    }
    let mut peer_host = server.host.clone();
    if step.transport == Transport::TcpLocal {
        // Data over a local interface address: the serving agent binds its
        // data listener there and the driving agent connects to it.
        let ip = server.local_ipv4().ok_or_else(|| {
            format!(
                "{} has no non-loopback IPv4 address for transport tcp_local",
                server.label
            )
        })?;
        params
            .entry("server_bind")
            .or_insert(Value::from(ip.to_string()));
        peer_host = ip.to_string();
    }
    Ok((Value::Object(params), peer_host))
}

/// Step fields that say how a test shares its agents (issue 42), sent as
/// the `prepare`'s and `start`'s own fields, not as parameters: `queue`
/// (false: refused `busy` rather than waiting) and `exclusive` (run alone,
/// or beside others, whatever the kind's default).
pub const SHARE_KEYS: [&str; 2] = ["queue", "exclusive"];

/// Where a step waits in an agent's queue (a `queued` event).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    /// The agent's label.
    pub agent: String,
    /// Its place in that agent's queue, from 1.
    pub place: u32,
    /// The tests it waits behind there (running and ahead in the queue).
    pub behind: u32,
    /// About how long until it starts, in seconds.
    pub wait_s: f64,
}

impl Waiting {
    /// `waiting behind 2 tests on agent B, about 12 s`.
    pub fn text(&self) -> String {
        format!(
            "waiting behind {} test{} on {}, about {:.0} s",
            self.behind,
            if self.behind == 1 { "" } else { "s" },
            self.agent,
            self.wait_s.ceil()
        )
    }
}

/// Checks, before any traffic, that the agents `server` and `client` would
/// take `step`: that it can be placed there and that its parameters are
/// within both agents' limits (the agents' own parsing; an agent without
/// announced limits is checked against the defaults).
pub fn check_step(
    step: &Step,
    server: usize,
    client: usize,
    agents: &[AgentRef],
) -> Result<(), String> {
    let place = Placement::for_kind(step.kind, server, client);
    let (params, _) = step_params(step, place, agents)?;
    for i in place.agents() {
        let names = params.as_object().into_iter().flat_map(|o| o.keys());
        if let Some(why) = agents[i].cannot_run(step.kind, names) {
            return Err(why);
        }
    }
    for i in place.agents() {
        let a = &agents[i];
        let limits = a.limits.clone().unwrap_or_default();
        step.kind
            .check_params(&params, &limits)
            .map_err(|e| format!("{} would refuse it: {e}", a.label))?;
    }
    for i in place.agents() {
        check_threads(&params, &agents[i])?;
    }
    check_bind(&params, "client_bind", &agents[place.client])?;
    check_bind(&params, "server_bind", &agents[place.server])
}

/// `params`' `threads` (per side) is within the CPUs the agent said it
/// may use (its info's `cores`; the agent refuses more, with the list,
/// agent/src/engine/placement.rs); not checked when it did not say.
fn check_threads(params: &Value, agent: &AgentRef) -> Result<(), String> {
    let (Some(t), Some(cores)) = (params["threads"].as_u64(), agent.cores) else {
        return Ok(());
    };
    if t <= u64::from(cores) {
        return Ok(());
    }
    Err(format!(
        "{} would refuse it: threads: {t} is more than the {cores} CPUs this agent may use; give at most {cores}",
        agent.label
    ))
}

/// `params[name]`, an address the agent must bind to, is one of the
/// addresses its hello listed (loopback and the unspecified address always
/// are: the agent checks the same, `agent/src/engine/bind.rs`); not checked
/// when the agent listed none.
fn check_bind(params: &Value, name: &str, agent: &AgentRef) -> Result<(), String> {
    let Some(ip) = params[name].as_str().and_then(|t| t.parse::<IpAddr>().ok()) else {
        return Ok(());
    };
    let mine: Vec<IpAddr> = agent.ips().collect();
    if ip.is_loopback() || ip.is_unspecified() || mine.is_empty() || mine.contains(&ip) {
        return Ok(());
    }
    let list: Vec<String> = mine.iter().map(ToString::to_string).collect();
    Err(format!(
        "{} would refuse it: {name}: {ip} is not an address of that host (its addresses: {})",
        agent.label,
        list.join(", ")
    ))
}

/// The `peer` of a step toward a target that is not an agent: the
/// target's host and port from the parameters, and no key (there is no
/// prepared side); the agent reads the target from the parameters again.
fn outside_peer(kind: Kind, params: &Value) -> Result<PeerAddr, String> {
    let target = params["target"].as_str().unwrap_or_default();
    let (host, port) = crate::params::parse_stamp_target(target)
        .map_err(|e| format!("{} step: {e}", kind.name()))?;
    Ok(PeerAddr {
        host,
        port,
        key: String::new(),
    })
}

/// One step being run: a state machine fed with what the agents say.
#[derive(Debug)]
pub struct StepRun {
    step: Step,
    test_id: u32,
    place: Placement,
    labels: [String; 2],
    /// The parameters both ends get (the step's, plus `server_bind` for tcp_local).
    params: Value,
    peer_host: String,
    phase: Phase,
    /// Final summaries by role.
    ends: Vec<(Role, Value)>,
    /// Sides set up at the agents (1 once prepared, 2 once started); each
    /// ends with one final event, a result or an error.
    registered: usize,
    /// Final events seen.
    finals: usize,
    /// Why the step failed, in order, without repeats.
    errors: Vec<String>,
    samples: Vec<Series>,
    /// Values received in frames, and held in `samples` (gaps included).
    received: usize,
    held: usize,
    fraction: [f64; 2],
    /// Cancel was sent (or is owed once the pending reply arrives).
    cancelling: bool,
    /// An agent refused the prepare or start as busy with another test.
    busy: bool,
    started_unix: f64,
    /// The step's `queue` and `exclusive` (see [`SHARE_KEYS`]).
    queue: Option<bool>,
    exclusive: Option<bool>,
    /// The agent whose queue holds the pending request, and where.
    waiting: Option<(usize, Waiting)>,
}

impl StepRun {
    /// A step with agent `server` of `agents` serving and `client` driving
    /// (placed by [`Placement::for_kind`]), and its first request (`prepare`
    /// to the serving agent). Fails when the step cannot run there
    /// (transport `tcp_local` on an agent without such an address).
    pub fn new(
        step: Step,
        test_id: u32,
        server: usize,
        client: usize,
        agents: &[AgentRef],
        started_unix: f64,
    ) -> Result<(StepRun, Outgoing), String> {
        let place = Placement::for_kind(step.kind, server, client);
        let (params, peer_host) = step_params(&step, place, agents)?;
        let server = &agents[place.server];
        let client = &agents[place.client];
        let flag = |k: &str| step.params.get(k).and_then(Value::as_bool);
        let (queue, exclusive) = (flag("queue"), flag("exclusive"));
        let run = StepRun {
            queue,
            exclusive,
            waiting: None,
            labels: [server.label.clone(), client.label.clone()],
            params,
            peer_host,
            test_id,
            place,
            phase: Phase::Preparing,
            ends: Vec::new(),
            registered: 0,
            finals: 0,
            errors: Vec::new(),
            samples: Vec::new(),
            received: 0,
            held: 0,
            fraction: [0.0; 2],
            cancelling: false,
            busy: false,
            started_unix,
            step,
        };
        if run.step.kind.to_outside_target() {
            // One side, at the agent that sends: no prepare; the target
            // is in the parameters (the agent checks it is allowed).
            let mut run = run;
            run.phase = Phase::Starting;
            let first = run.start_request(outside_peer(run.step.kind, &run.params)?);
            return Ok((run, first));
        }
        let first = Outgoing {
            agent: place.server,
            request: Request::Prepare {
                id: 0,
                test_id,
                step: run.step.index as u32,
                kind: run.step.kind,
                params: run.params.clone(),
                queue: run.queue,
                exclusive: run.exclusive,
            },
        };
        Ok((run, first))
    }

    /// A step that could not be set up at all (see [`StepRun::new`]'s
    /// errors), as a finished run failed with `why`: it involves no agent.
    pub fn failed(step: Step, test_id: u32, started_unix: f64, why: String) -> StepRun {
        StepRun {
            step,
            test_id,
            place: Placement {
                server: usize::MAX,
                client: usize::MAX,
            },
            labels: Default::default(),
            params: Value::Null,
            peer_host: String::new(),
            phase: Phase::Done,
            ends: Vec::new(),
            registered: 0,
            finals: 0,
            errors: vec![why],
            samples: Vec::new(),
            received: 0,
            held: 0,
            fraction: [0.0; 2],
            cancelling: false,
            busy: false,
            started_unix,
            queue: None,
            exclusive: None,
            waiting: None,
        }
    }

    pub fn test_id(&self) -> u32 {
        self.test_id
    }

    /// The step being run.
    pub fn step(&self) -> &Step {
        &self.step
    }

    /// The samples gathered so far.
    pub fn samples(&self) -> &[Series] {
        &self.samples
    }

    pub fn placement(&self) -> Placement {
        self.place
    }

    /// The step has ended: every side set up at an agent has reported (so
    /// the agents are free for the next step), or it failed before any was.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// An agent refused the step as busy with another test (a scheduler
    /// may try the step again later).
    pub fn refused_busy(&self) -> bool {
        self.busy
    }

    /// A cancel has gone out (on the user's request or after a failure).
    pub fn is_cancelling(&self) -> bool {
        self.cancelling
    }

    /// Fraction of the step done, by the side furthest along (0 to 1).
    pub fn progress(&self) -> f64 {
        self.fraction[0].max(self.fraction[1])
    }

    fn label(&self, agent: usize) -> &str {
        &self.labels[usize::from(agent != self.place.server)]
    }

    fn fail(&mut self, message: String) {
        if !self.errors.contains(&message) {
            self.errors.push(message);
        }
    }

    /// `start` to the driving agent, toward `peer`.
    fn start_request(&self, peer: PeerAddr) -> Outgoing {
        Outgoing {
            agent: self.place.client,
            request: Request::Start {
                id: 0,
                test_id: self.test_id,
                step: self.step.index as u32,
                kind: self.step.kind,
                params: self.params.clone(),
                peer,
                queue: self.queue,
                exclusive: self.exclusive,
            },
        }
    }

    fn cancel_to(&self, agents: Vec<usize>) -> Vec<Outgoing> {
        agents
            .into_iter()
            .map(|agent| Outgoing {
                agent,
                request: Request::Cancel {
                    id: 0,
                    test_id: self.test_id,
                },
            })
            .collect()
    }

    /// Where the step waits in an agent's queue, while it does.
    pub fn waiting(&self) -> Option<&Waiting> {
        self.waiting.as_ref().map(|(_, w)| w)
    }

    /// The reply of `agent` to the last request the driver gave it.
    pub fn on_reply(&mut self, agent: usize, reply: &Event) -> Vec<Outgoing> {
        if self.waiting.as_ref().is_some_and(|(a, _)| *a == agent) {
            self.waiting = None;
        }
        let out = match (self.phase, reply) {
            (Phase::Preparing, Event::Prepared { port, key, .. }) if agent == self.place.server => {
                self.registered = 1;
                if self.cancelling {
                    // Cancelled while the prepare was on its way.
                    self.phase = Phase::Running;
                    self.fail("cancelled".into());
                    self.cancel_to(vec![self.place.server])
                } else {
                    self.phase = Phase::Starting;
                    vec![self.start_request(PeerAddr {
                        host: self.peer_host.clone(),
                        port: *port,
                        key: key.clone(),
                    })]
                }
            }
            (Phase::Starting, Event::Started { .. }) if agent == self.place.client => {
                // A step toward an outside target has its one side only.
                self.registered = if self.step.kind.to_outside_target() {
                    1
                } else {
                    2
                };
                self.phase = Phase::Running;
                if self.cancelling {
                    self.cancel_to(self.place.agents())
                } else {
                    Vec::new()
                }
            }
            (Phase::Preparing, Event::Error { message, code, .. }) => {
                // Nothing was set up: the step ends here.
                self.busy |= *code == ErrorCode::Busy;
                self.fail(format!("{}: {message}", self.label(agent)));
                self.phase = Phase::Done;
                Vec::new()
            }
            (Phase::Starting, Event::Error { message, code, .. })
                if self.step.kind.to_outside_target() =>
            {
                // Nothing was prepared: the step ends here.
                self.busy |= *code == ErrorCode::Busy;
                self.fail(format!("{}: {message}", self.label(agent)));
                self.phase = Phase::Done;
                Vec::new()
            }
            (Phase::Starting, Event::Error { message, code, .. }) => {
                self.busy |= *code == ErrorCode::Busy;
                // A refused start leaves the serving side prepared: it is
                // cancelled at once, and the step ends when it has reported
                // (the serving agent is free for the next step by then).
                self.fail(format!("{}: {message}", self.label(agent)));
                self.phase = Phase::Running;
                self.cancelling = true;
                self.cancel_to(vec![self.place.server])
            }
            _ => Vec::new(),
        };
        self.check_done();
        out
    }

    /// An event of `agent` (events of other tests are ignored).
    pub fn on_event(&mut self, agent: usize, event: &Event) -> Vec<Outgoing> {
        match event {
            Event::Queued {
                test_id,
                place,
                behind,
                wait_s,
                ..
            } if *test_id == self.test_id
                && matches!(self.phase, Phase::Preparing | Phase::Starting) =>
            {
                let first = self.waiting.is_none();
                self.waiting = Some((
                    agent,
                    Waiting {
                        agent: self.label(agent).to_string(),
                        place: *place,
                        behind: *behind,
                        wait_s: *wait_s,
                    },
                ));
                if first && self.cancelling {
                    // Cancelled before the agent said it queued the request.
                    return self.cancel_to(vec![agent]);
                }
                Vec::new()
            }
            Event::Progress {
                test_id,
                role,
                fraction,
                ..
            } if *test_id == self.test_id => {
                self.fraction[usize::from(*role == Role::Client)] = fraction.clamp(0.0, 1.0);
                Vec::new()
            }
            Event::Result {
                test_id,
                role,
                summary,
                ..
            } if *test_id == self.test_id => {
                self.fraction[usize::from(*role == Role::Client)] = 1.0;
                self.finals += 1;
                self.ends.retain(|(r, _)| r != role);
                self.ends.push((*role, summary.clone()));
                self.check_done();
                Vec::new()
            }
            Event::Error {
                test_id: Some(t),
                message,
                ..
            } if *t == self.test_id => {
                self.finals += 1;
                let text = format!("{}: {message}", self.label(agent));
                self.fail(text);
                let out = if self.cancelling {
                    Vec::new()
                } else {
                    // The other side cannot finish well without this one.
                    self.cancelling = true;
                    let others: Vec<usize> = self
                        .place
                        .agents()
                        .into_iter()
                        .filter(|&a| a != agent || self.place.server == self.place.client)
                        .collect();
                    self.cancel_to(others)
                };
                self.check_done();
                out
            }
            _ => Vec::new(),
        }
    }

    fn check_done(&mut self) {
        if self.phase == Phase::Running && self.finals >= self.registered {
            self.phase = Phase::Done;
        }
    }

    /// A sample frame from `agent`; `Ok(false)` if it belongs to another test.
    pub fn on_frame(&mut self, bytes: &[u8]) -> Result<bool, FrameError> {
        let (h, values) = frame::decode(bytes)?;
        Ok(self.on_samples(&h, values))
    }

    /// Decoded samples; `false` if they belong to another test.
    pub fn on_samples(&mut self, h: &FrameHeader, values: Vec<u64>) -> bool {
        if h.test_id != self.test_id {
            return false;
        }
        let i = match self
            .samples
            .iter()
            .position(|s| s.role == h.role && s.kind == h.kind && s.stream == h.stream)
        {
            Some(i) => i,
            None => {
                self.samples.push(Series {
                    role: h.role,
                    kind: h.kind,
                    stream: h.stream,
                    values: Vec::new(),
                });
                self.samples.len() - 1
            }
        };
        let at = h.first_seq as usize;
        let have = self.samples[i].values.len();
        let grow = (at + values.len()).saturating_sub(have);
        self.received += values.len();
        if self.held + grow > self.received + MAX_GAP {
            let who = &self.labels[usize::from(h.role == Role::Client)];
            self.fail(format!(
                "{who} sent a sample frame far out of sequence ({} values at {at} of a {} series \
                 holding {have}): ignored",
                values.len(),
                h.kind.name()
            ));
            return true;
        }
        self.held += grow;
        let s = &mut self.samples[i];
        if at == s.values.len() {
            s.values.extend(values);
        } else {
            if s.values.len() < at + values.len() {
                s.values.resize(at + values.len(), 0);
            }
            s.values[at..at + values.len()].copy_from_slice(&values);
        }
        true
    }

    /// `agent`'s connection closed: the step fails, and the other agent is
    /// asked to stop.
    pub fn on_closed(&mut self, agent: usize) -> Vec<Outgoing> {
        if self.phase == Phase::Done || !self.place.agents().contains(&agent) {
            return Vec::new();
        }
        self.fail(format!(
            "{} disconnected during the test",
            self.label(agent)
        ));
        self.phase = Phase::Done;
        let others: Vec<usize> = self
            .place
            .agents()
            .into_iter()
            .filter(|&a| a != agent)
            .collect();
        self.cancelling = true;
        self.cancel_to(others)
    }

    /// Stops the step on the user's request: both sides are cancelled and
    /// the step ends once they have reported.
    pub fn cancel(&mut self) -> Vec<Outgoing> {
        if self.cancelling || self.phase == Phase::Done {
            return Vec::new();
        }
        self.cancelling = true;
        match self.phase {
            // A request waiting in an agent's queue leaves it: the agent
            // answers it with `cancelled` (and on_reply goes on from there).
            Phase::Preparing | Phase::Starting if self.waiting.is_some() => {
                let agent = self.waiting.as_ref().map_or(0, |(a, _)| *a);
                self.cancel_to(vec![agent])
            }
            // The reply in flight decides what to cancel (see on_reply).
            Phase::Preparing | Phase::Starting => Vec::new(),
            _ => self.cancel_to(self.place.agents()),
        }
    }

    /// Ends a step whose agents did not report after a cancel (the caller's
    /// grace period ran out).
    pub fn abandon(&mut self, why: &str) {
        if self.phase != Phase::Done {
            self.fail(why.to_string());
            self.phase = Phase::Done;
        }
    }

    /// Takes the samples gathered so far out of the driver.
    pub fn take_samples(&mut self) -> Vec<Series> {
        std::mem::take(&mut self.samples)
    }

    /// The step's result: the primary side's summary, both sides', the
    /// samples, and why it failed if it did. `wall_seconds`: how long the
    /// step took in all, set-up included.
    pub fn result(&mut self, wall_seconds: f64) -> StepResult {
        let primary = primary_role(self.step.kind, &self.step.params);
        let end = |role: Role| {
            self.ends
                .iter()
                .find(|(r, _)| *r == role)
                .map(|(_, v)| v.clone())
        };
        StepResult {
            index: self.step.index,
            kind: self.step.kind,
            params: self.step.params.clone(),
            point: self.step.point.clone(),
            repeat: self.step.repeat,
            transport: self.step.transport,
            summary: end(primary).unwrap_or(Value::Null),
            sides: Sides {
                client: end(Role::Client),
                server: end(Role::Server),
            },
            samples: self.take_samples(),
            histograms: Vec::new(),
            error: (!self.errors.is_empty()).then(|| self.errors.join("; ")),
            started_unix: Some(self.started_unix),
            wall_seconds: Some(wall_seconds),
            pair: None,
        }
    }
}

#[cfg(test)]
mod tests;
