//! Many tests at once (issue 42): which test sides may run beside the ones
//! running here, the FIFO queue of those that must wait, and what each
//! test shared this agent with.
//!
//! A test is admitted when fewer than `--max-tests` run here, when neither
//! it nor a running one runs alone (its kind's default, or the request's
//! `exclusive`), and when the sum of what the running tests take with it
//! stays within the per-test limits (streams, flows, bytes, UDP rate). A
//! side of a test already running here (the other end of a test inside
//! one agent) is admitted at once. Otherwise it waits, in order, up to
//! `--max-queue` of them, told its place; `busy` only when the queue is
//! full or the request said `queue: false`.

use super::{refused, Agent, Session};
use crate::engine::shared::SharedLog;
use crate::log::log;
use meshperf_protocol::msg::{ErrorCode, Event, PeerAddr, Role};
use meshperf_protocol::params::{Kind, Usage};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a waiting request's controller hears where it is.
pub const TELL_EVERY: Duration = Duration::from_secs(1);

/// A `prepare` (`peer` None) or `start`, run now or at its turn.
pub struct Ask {
    pub sid: u64,
    pub id: u64,
    pub test_id: u32,
    pub step: u32,
    pub kind: Kind,
    pub params: serde_json::Value,
    pub peer: Option<PeerAddr>,
    /// What it takes here; None when its parameters do not parse (the
    /// engine refuses them with its own message, at once).
    pub usage: Option<Usage>,
    /// Runs alone here: the request's `exclusive`, else the kind's default.
    pub exclusive: bool,
}

impl Ask {
    pub fn role(&self) -> Role {
        if self.peer.is_some() {
            Role::Client
        } else {
            Role::Server
        }
    }
}

/// A sum the per-test limits bound: what, its flag, a test's share, the limit.
type Sum = (&'static str, &'static str, fn(&Usage) -> f64, Option<f64>);

/// A running test as admission sees it (one per test id, whatever sides).
struct Running {
    kind: Kind,
    usage: Usage,
    exclusive: bool,
    /// Seconds it is likely to run still.
    left_s: f64,
}

impl Agent {
    /// The tests running here, one per test id, but `except`.
    fn running(&self, except: u32) -> HashMap<u32, Running> {
        let mut out: HashMap<u32, Running> = HashMap::new();
        for ((t, _), h) in &self.tests {
            if *t == except {
                continue;
            }
            let left_s = (h.usage.expected_s - h.started.elapsed().as_secs_f64()).max(0.0);
            out.entry(*t)
                .and_modify(|r| r.left_s = r.left_s.max(left_s))
                .or_insert(Running {
                    kind: h.kind,
                    usage: h.usage,
                    exclusive: h.exclusive,
                    left_s,
                });
        }
        out
    }

    /// Whether `a` may start beside the tests running here; else why not,
    /// naming the limit and the sum.
    fn fits(&self, a: &Ask) -> Result<(), String> {
        let Some(u) = a.usage else { return Ok(()) };
        let running = self.running(a.test_id);
        let n = running.len();
        let max = self.limits.max_tests;
        if n >= max as usize {
            return Err(format!(
                "{n} test{} here (--max-tests {max})",
                if n == 1 { " runs" } else { "s run" }
            ));
        }
        if a.exclusive && n > 0 {
            let (id, r) = running.iter().next().expect("n > 0");
            return Err(format!(
                "{} runs alone and test {id} ({}) runs here",
                a.kind.name(),
                r.kind.name()
            ));
        }
        if let Some((id, r)) = running.iter().find(|(_, r)| r.exclusive) {
            return Err(format!("test {id} ({}) runs alone here", r.kind.name()));
        }
        let l = &self.limits;
        let sum = |f: fn(&Usage) -> f64| running.values().map(|r| f(&r.usage)).sum::<f64>();
        let checks: [Sum; 4] = [
            (
                "streams",
                "--max-streams",
                |u| f64::from(u.streams),
                Some(f64::from(l.max_streams)),
            ),
            (
                "flows",
                "--max-flows",
                |u| f64::from(u.flows),
                Some(f64::from(l.max_flows)),
            ),
            (
                "bytes",
                "--max-bytes",
                |u| u.bytes as f64,
                Some(l.max_bytes as f64),
            ),
            (
                "UDP bit/s",
                "--max-udp-rate",
                |u| u.udp_bits_per_second,
                l.max_udp_bits_per_second,
            ),
        ];
        for (what, flag, get, max) in checks {
            let (Some(max), mine) = (max, get(&u)) else {
                continue;
            };
            let others = sum(get);
            if mine > 0.0 && others + mine > max {
                return Err(format!(
                    "{what}: {others} running + {mine} asked = {} is above {flag} {max}",
                    others + mine
                ));
            }
        }
        Ok(())
    }

    /// A `prepare` or `start`: run now, queued (None: its reply comes at
    /// its turn), or refused.
    pub(super) fn ask(&mut self, s: &mut Session, a: Ask, queue: bool) -> Option<Event> {
        let role = a.role();
        if let Err((code, msg)) = self.check_free(a.test_id, role, a.kind) {
            self.counters.test_refused(code);
            return Some(refused(a.sid, a.id, a.test_id, a.kind, code, msg));
        }
        let ours = self.tests.keys().any(|(t, _)| *t == a.test_id);
        // Parameters it cannot use are refused at once, by the engine.
        let why = if ours || a.usage.is_none() {
            None
        } else if let Some(w) = self.waiting.front() {
            Some(format!(
                "{} test{} wait{} ahead (the first: {})",
                self.waiting.len(),
                if self.waiting.len() == 1 { "" } else { "s" },
                if self.waiting.len() == 1 { "s" } else { "" },
                w.why
            ))
        } else {
            self.fits(&a).err()
        };
        let Some(why) = why else {
            return Some(self.run(a));
        };
        let (len, max) = (self.waiting.len(), self.limits.max_queue as usize);
        let refusal = if !queue {
            Some(format!(
                "this agent is busy ({why}) and the request said queue: false; {len} test{} wait{} in its queue",
                if len == 1 { "" } else { "s" },
                if len == 1 { "s" } else { "" },
            ))
        } else if len >= max {
            Some(format!(
                "this agent is busy ({why}) and its queue is full: {len} test{} wait{} (--max-queue {max})",
                if len == 1 { "" } else { "s" },
                if len == 1 { "s" } else { "" },
            ))
        } else {
            None
        };
        if let Some(msg) = refusal {
            self.counters.test_refused(ErrorCode::Busy);
            return Some(refused(
                a.sid,
                a.id,
                a.test_id,
                a.kind,
                ErrorCode::Busy,
                msg,
            ));
        }
        log!(
            "session {} test {} {} {} waits, place {} in the queue: {why}",
            a.sid,
            a.test_id,
            a.kind.name(),
            side(role),
            len + 1
        );
        self.counters.test_waited();
        self.waiting.push_back(Waiting { ask: a, why });
        // The new one's controller hears at once; the others keep theirs.
        self.tell_waiting(Some(s));
        None
    }

    /// Runs `a` now: its reply.
    fn run(&mut self, a: Ask) -> Event {
        let (sid, id, test_id, kind) = (a.sid, a.id, a.test_id, a.kind);
        let usage = a.usage.unwrap_or_default();
        let exclusive = a.exclusive;
        let r = match a.peer {
            None => self
                .prepare(sid, test_id, a.step, kind, &a.params, usage, exclusive)
                .map(|(port, key)| Event::Prepared {
                    id,
                    test_id,
                    port,
                    key,
                }),
            Some(peer) => self
                .start(sid, test_id, a.step, kind, a.params, peer, usage, exclusive)
                .map(|()| Event::Started { id, test_id }),
        };
        r.unwrap_or_else(|(code, msg)| {
            self.counters.test_refused(code);
            refused(sid, id, test_id, kind, code, msg)
        })
    }

    /// Starts the waiting requests whose turn has come (in order: the
    /// first that cannot start holds those behind it), then tells the
    /// others where they are now.
    pub(super) fn admit_waiting(&mut self) {
        let mut moved = false;
        while let Some(w) = self.waiting.front() {
            let ours = self.tests.keys().any(|(t, _)| *t == w.ask.test_id);
            if !ours {
                match self.fits(&w.ask) {
                    Ok(()) => {}
                    Err(why) => {
                        self.waiting[0].why = why;
                        break;
                    }
                }
            }
            let w = self.waiting.pop_front().expect("a front");
            let sid = w.ask.sid;
            let reply = self.run(w.ask);
            self.send_to(sid, &reply);
            moved = true;
        }
        if moved {
            self.tell_waiting(None);
        }
    }

    /// Sends every waiting request's controller its place and wait (`s`:
    /// the session being pumped now, which is not reachable by id).
    pub(super) fn tell_waiting(&mut self, mut s: Option<&mut Session>) {
        self.told = Instant::now();
        let running = self.running(u32::MAX);
        let mut wait_s = running.values().map(|r| r.left_s).fold(0.0, f64::max);
        let n = running.len() as u32;
        let events: Vec<(u64, Event)> = self
            .waiting
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let ev = Event::Queued {
                    test_id: w.ask.test_id,
                    role: w.ask.role(),
                    place: i as u32 + 1,
                    behind: n + i as u32,
                    wait_s: (wait_s * 10.0).ceil() / 10.0,
                };
                wait_s += w.ask.usage.map_or(1.0, |u| u.expected_s);
                (w.ask.sid, ev)
            })
            .collect();
        for (sid, ev) in events {
            match s.as_deref_mut() {
                Some(s) if s.sid == sid => s.send(&ev),
                _ => self.send_to(sid, &ev),
            }
        }
    }

    /// Queues `ev` for session `sid` (another than the one being pumped)
    /// and notes that it has output.
    fn send_to(&mut self, sid: u64, ev: &Event) {
        let text = serde_json::to_string(ev).expect("events serialize");
        if self.queue(sid, tungstenite::Message::text(text)).is_some() {
            self.woken.push(sid);
        }
    }

    /// Sessions with output from another session's request or a test's
    /// end (a waiting request started, places moved): the event loop
    /// pumps them.
    pub fn woken(&mut self) -> Vec<u64> {
        let mut w = std::mem::take(&mut self.woken);
        w.sort_unstable();
        w.dedup();
        w
    }

    /// `cancel` of this session's waiting requests for `test_id`: each is
    /// answered `cancelled` and leaves the queue. How many there were.
    pub(super) fn cancel_waiting(&mut self, s: &mut Session, test_id: u32) -> usize {
        let (gone, kept): (Vec<_>, Vec<_>) = self
            .waiting
            .drain(..)
            .partition(|w| w.ask.sid == s.sid && w.ask.test_id == test_id);
        self.waiting = kept.into();
        for w in &gone {
            log!(
                "session {} test {} {} {} left the queue: cancelled",
                w.ask.sid,
                w.ask.test_id,
                w.ask.kind.name(),
                side(w.ask.role())
            );
            s.send(&Event::error(
                Some(w.ask.id),
                ErrorCode::Cancelled,
                "cancelled while waiting in the agent's queue",
            ));
        }
        if !gone.is_empty() {
            self.admit_waiting();
            self.tell_waiting(Some(s));
        }
        gone.len()
    }

    /// A session closed: its waiting requests leave the queue.
    pub(super) fn leave_queue(&mut self, sid: u64) -> usize {
        let before = self.waiting.len();
        self.waiting.retain(|w| w.ask.sid != sid);
        let n = before - self.waiting.len();
        if n > 0 {
            self.admit_waiting();
            self.tell_waiting(None);
        }
        n
    }

    /// A test side starts: it and every other test running here note
    /// that they overlap from now.
    pub(super) fn note_overlaps(
        &self,
        test_id: u32,
        log: &Arc<SharedLog>,
        kind: Kind,
        moved: &Arc<AtomicU64>,
    ) {
        log.begin();
        for ((t, _), h) in &self.tests {
            if *t != test_id {
                log.beside(*t, h.kind, &h.moved);
                h.shared.beside(test_id, kind, moved);
            }
        }
    }

    /// Test `test_id` no longer runs here: the overlaps with it end.
    pub(super) fn end_overlaps(&self, test_id: u32) {
        if self.tests.keys().any(|(t, _)| *t == test_id) {
            return; // its other side still runs
        }
        for h in self.tests.values() {
            h.shared.ended(test_id);
        }
    }
}

/// A request waiting for its turn, and why it waits.
pub struct Waiting {
    pub ask: Ask,
    pub why: String,
}

pub fn side(role: Role) -> &'static str {
    if role == Role::Server {
        "serving"
    } else {
        "driving"
    }
}
