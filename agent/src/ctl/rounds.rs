//! Runs a round of steps at once through the step driver
//! (`meshperf_protocol::driver`): each step between its own agents (no agent
//! in two steps of a round), the requests each driver returns sent on its
//! agents' connections, and what each connection brings handed to the
//! driver of the step that agent takes part in. A run between two agents is
//! a round of one step at a time; a matrix runs the circle method's rounds.

use super::client::{self, Ctl, CtlError, Incoming};
use super::progress::Progress;
use super::unix_now;
use meshperf_protocol::driver::{check_step, AgentRef, Outgoing, StepRun, CANCEL_GRACE_S};
use meshperf_protocol::matrix::{Next, Outcome, Pair, Schedule, BUSY_RETRY_S};
use meshperf_protocol::msg::{Event, Request};
use meshperf_protocol::plan::Step;
use meshperf_protocol::result::StepResult;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whoever shows the rounds as they go: `meshperf run`'s output (a
/// progress bar, `--json-stream`, where Ctrl-C stopped it) or the
/// monitor's [`Progress`].
pub trait Watch {
    /// A running step is `fraction` done (0 to 1; a `progress` event).
    fn progress(&mut self, fraction: f64);
    /// Samples of `run` came in.
    fn samples(&mut self, _run: &StepRun) {}
    /// Step `test_id` of a round ended (its pair not set yet).
    fn step_ended(&mut self, _test_id: u32, _result: &StepResult) {}
    /// Ctrl-C stopped the round: the steps still running and how far each
    /// had got (said once).
    fn interrupted(&mut self, _running: &[(&Step, f64)]) {}
    /// A step waits in an agent's queue (a `queued` event; issue 42).
    fn waiting(&mut self, _test_id: u32, _w: &meshperf_protocol::driver::Waiting) {}
}

impl Watch for Progress {
    fn progress(&mut self, fraction: f64) {
        Progress::progress(self, fraction);
    }
}

/// One step of a round and the agents that run it.
pub struct Job<'a> {
    pub step: &'a Step,
    pub pair: Pair,
    pub test_id: u32,
}

/// A running step.
struct Live {
    run: StepRun,
    began: Instant,
    cancelled_at: Option<Instant>,
}

/// The agents' connections; `None` once an agent is gone (unreachable at
/// the start, or its connection failed), with why.
pub struct Agents {
    pub ctls: Vec<Option<Ctl>>,
    pub refs: Vec<AgentRef>,
    pub gone: Vec<Option<String>>,
}

impl Agents {
    fn lost(&mut self, i: usize, e: CtlError) {
        self.ctls[i] = None;
        let why = match e {
            CtlError::Usage(m) | CtlError::Auth(m) | CtlError::Io(m) => m,
        };
        self.gone[i].get_or_insert(why);
    }

    /// Sends a cancel, best effort.
    fn cancel(&mut self, i: usize, test_id: u32) {
        if let Some(c) = self.ctls[i].as_mut() {
            c.cancel(test_id);
        }
    }
}

/// A step of a round as it ended.
pub struct Ended {
    pub result: StepResult,
    /// An agent refused it as busy with another test.
    pub busy: bool,
    /// How far it had got (0 to 1) by the side furthest along.
    pub fraction: f64,
}

/// Runs `jobs` at once and returns their results in the same order. A step
/// whose agent is gone fails without running; an agent lost mid-step fails
/// that step (the other agent is asked to stop) and is gone for the rest.
pub fn run_round(
    agents: &mut Agents,
    jobs: &[Job],
    stop: &AtomicBool,
    out: &mut impl Watch,
) -> Vec<Ended> {
    let mut lives: Vec<Live> = Vec::new();
    // Which running step each agent takes part in.
    let mut owner: Vec<Option<usize>> = vec![None; agents.refs.len()];
    let mut queue: VecDeque<Outgoing> = VecDeque::new();
    for job in jobs {
        let (mut run, first) = match StepRun::new(
            job.step.clone(),
            job.test_id,
            job.pair.server,
            job.pair.client,
            &agents.refs,
            unix_now(),
        ) {
            Ok(x) => x,
            Err(e) => {
                lives.push(Live {
                    run: StepRun::failed(job.step.clone(), job.test_id, unix_now(), e),
                    began: Instant::now(),
                    cancelled_at: None,
                });
                continue;
            }
        };
        let ends = run.placement().agents();
        if let Some(&i) = ends.iter().find(|&&i| agents.ctls[i].is_none()) {
            let why = agents.gone[i].clone().unwrap_or_default();
            run.abandon(&format!(
                "{} is not connected ({why})",
                agents.refs[i].label
            ));
        } else {
            ends.iter().for_each(|&i| owner[i] = Some(lives.len()));
            queue.push_back(first);
        }
        lives.push(Live {
            run,
            began: Instant::now(),
            cancelled_at: None,
        });
    }
    let mut announced = false;
    loop {
        while let Some(o) = queue.pop_front() {
            send(agents, &mut lives, &owner, o, &mut queue, stop, out);
        }
        if lives.iter().all(|l| l.run.is_done()) {
            break;
        }
        let stopping = stop.load(Ordering::Relaxed);
        if stopping && !announced {
            announced = true;
            let running: Vec<(&Step, f64)> = lives
                .iter()
                .zip(jobs)
                .filter(|(l, _)| !l.run.is_done())
                .map(|(l, j)| (j.step, l.run.progress()))
                .collect();
            out.interrupted(&running);
        }
        for l in lives.iter_mut().filter(|l| !l.run.is_done()) {
            if stopping && !l.run.is_cancelling() {
                queue.extend(l.run.cancel());
            }
            if l.run.is_cancelling() {
                let at = *l.cancelled_at.get_or_insert_with(Instant::now);
                if at.elapsed() > Duration::from_secs_f64(CANCEL_GRACE_S) {
                    l.run.abandon(&format!(
                        "the agents did not confirm the cancel within {CANCEL_GRACE_S} s"
                    ));
                }
            }
            if l.began.elapsed().as_secs() > 3600 {
                l.run.abandon("a step ran for over an hour; gave up");
            }
        }
        if !queue.is_empty() {
            continue;
        }
        // Every connection drained, then a wait for any: a result is taken
        // the moment it arrives, whichever agent sends it.
        let active: Vec<usize> = (0..owner.len())
            .filter(|&i| owner[i].is_some_and(|k| !lives[k].run.is_done()))
            .collect();
        for &i in &active {
            while let Some(c) = agents.ctls[i].as_mut() {
                match c.try_poll() {
                    Ok(Some(x)) => feed(&mut lives, &owner, i, x, &mut queue, out),
                    Ok(None) => break,
                    Err(e) => {
                        agents.lost(i, e);
                        if let Some(k) = owner[i] {
                            queue.extend(lives[k].run.on_closed(i));
                        }
                    }
                }
            }
        }
        if !queue.is_empty() || lives.iter().all(|l| l.run.is_done()) {
            continue;
        }
        let waiting: Vec<&Ctl> = active
            .iter()
            .filter_map(|&i| agents.ctls[i].as_ref())
            .collect();
        if waiting.is_empty() {
            continue;
        }
        client::wait_any(&waiting, Duration::from_millis(100));
    }
    lives
        .into_iter()
        .zip(jobs)
        .map(|(mut l, job)| {
            let mut result = l.run.result(l.began.elapsed().as_secs_f64());
            out.step_ended(job.test_id, &result);
            result.pair = Some(job.pair);
            Ended {
                result,
                busy: l.run.refused_busy(),
                fraction: l.run.progress(),
            }
        })
        .collect()
}

/// Runs a matrix of `step`: the rounds `schedule` gives, one after the
/// other, and the pairs an agent refused as busy again later, as it says.
/// Each pair is checked against its agents' limits just before its round
/// (a failed check fails the pair, not the matrix); `each` gets every
/// pair's result as its round ends, except a busy one that will be tried
/// again (`who` names the command in the line that says so).
#[allow(clippy::too_many_arguments)]
pub fn run_matrix<W: Watch>(
    agents: &mut Agents,
    step: &Step,
    mut schedule: Schedule,
    next_id: &mut u32,
    stop: &AtomicBool,
    out: &mut W,
    who: &str,
    mut each: impl FnMut(StepResult, &Agents, &mut W),
) {
    let clock = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let round = match schedule.next(clock.elapsed().as_secs_f64()) {
            Next::Done => break,
            Next::Wait(s) => {
                std::thread::sleep(Duration::from_secs_f64(s.clamp(0.0, 0.1)));
                continue;
            }
            Next::Round(r) => r,
        };
        let mut jobs = Vec::new();
        for pair in round {
            *next_id = next_id.wrapping_add(1).max(1);
            let live = |j: usize| agents.ctls[j].is_some();
            if live(pair.server) && live(pair.client) {
                if let Err(e) = check_step(step, pair.server, pair.client, &agents.refs) {
                    schedule.ended(pair, Outcome::Ended, 0.0);
                    let mut r = StepRun::failed(step.clone(), *next_id, unix_now(), e).result(0.0);
                    r.pair = Some(pair);
                    each(r, agents, out);
                    continue;
                }
            }
            jobs.push(Job {
                step,
                pair,
                test_id: *next_id,
            });
        }
        for e in run_round(agents, &jobs, stop, out) {
            let mut r = e.result;
            let pair = r.pair.expect("a round's results carry their pair");
            let now = clock.elapsed().as_secs_f64();
            let outcome = if e.busy && !stop.load(Ordering::Relaxed) {
                Outcome::Busy
            } else {
                Outcome::Ended
            };
            if let Some(why) = schedule.ended(pair, outcome, now) {
                let last = r.error.take().unwrap_or_default();
                r.error = Some(format!("{last}; {why}"));
            } else if schedule.will_retry(pair) {
                eprintln!(
                    "{who}: {} -> {}: {}; tried again in {BUSY_RETRY_S} s",
                    agents.refs[pair.client].label,
                    agents.refs[pair.server].label,
                    r.error.as_deref().unwrap_or("busy"),
                );
                continue;
            }
            each(r, agents, out);
        }
    }
}

/// Sends one request of a driver; its reply goes back to that driver.
fn send(
    agents: &mut Agents,
    lives: &mut [Live],
    owner: &[Option<usize>],
    o: Outgoing,
    queue: &mut VecDeque<Outgoing>,
    stop: &AtomicBool,
    out: &mut impl Watch,
) {
    let i = o.agent;
    if let Request::Cancel { test_id, .. } = o.request {
        agents.cancel(i, test_id);
        return;
    }
    let Some(k) = owner[i] else { return };
    let Some(c) = agents.ctls[i].as_mut() else {
        queue.extend(lives[k].run.on_closed(i));
        return;
    };
    let req = serde_json::to_value(&o.request).expect("requests serialize");
    let mut other = |x: Incoming| feed(lives, owner, i, x, queue, out);
    match c.request_or_leave(req, stop, &mut other) {
        Ok(reply) => {
            if let Ok(ev) = serde_json::from_value::<Event>(reply) {
                queue.extend(lives[k].run.on_reply(i, &ev));
            }
        }
        Err(e) => {
            agents.lost(i, e);
            queue.extend(lives[k].run.on_closed(i));
        }
    }
}

/// Hands what agent `i` sent to the driver of its step.
fn feed(
    lives: &mut [Live],
    owner: &[Option<usize>],
    i: usize,
    x: Incoming,
    queue: &mut VecDeque<Outgoing>,
    out: &mut impl Watch,
) {
    let Some(k) = owner[i] else { return };
    let run = &mut lives[k].run;
    match x {
        Incoming::Event(v) => {
            if let Ok(ev) = serde_json::from_value::<Event>(v) {
                queue.extend(run.on_event(i, &ev));
                if matches!(ev, Event::Progress { test_id, .. } if test_id == run.test_id()) {
                    out.progress(run.progress());
                }
                if matches!(ev, Event::Queued { test_id, .. } if test_id == run.test_id()) {
                    if let Some(w) = run.waiting() {
                        out.waiting(run.test_id(), w);
                    }
                }
            }
        }
        Incoming::Frame(h, v) => {
            if run.on_samples(&h, v) {
                out.samples(run);
            }
        }
    }
}
