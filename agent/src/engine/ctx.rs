//! What every test side is handed and reports through: the [`Sink`] back
//! to the session that asked for the test, the side's [`TestCtx`], the
//! [`Limit`] it must end by, and the [`EngineEnv`] a kind is set up in.
//! The kinds stand on it; the dispatch in [`crate::engine`] above them.

use super::error::TestError;
use super::{backlog, cpu, payload};
use meshperf_protocol::frame::{self, FrameHeader, SampleKind};
use meshperf_protocol::msg::{ErrorCode, Event, Role};
use meshperf_protocol::params::{Kind, Limits};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What engine threads hand to the control loop.
pub enum Outbound {
    /// A JSON text frame for session `sid`.
    Text { sid: u64, text: String },
    /// A binary sample frame for session `sid`.
    Binary { sid: u64, bytes: Vec<u8> },
    /// The last event of a test side (its `result` or `error`). The control
    /// loop frees the test as it routes this, so a controller that reacts to
    /// the event by preparing the next step never finds the agent busy.
    Final {
        sid: u64,
        test_id: u32,
        role: Role,
        /// The side's registration (see [`Sink::serial`]).
        serial: u64,
        text: String,
        /// How the side ended, for the agent's record ("25.3 Gbit/s").
        outcome: String,
    },
    /// The side `role` of test `test_id` has ended (successfully or not).
    Finished {
        test_id: u32,
        role: Role,
        serial: u64,
    },
}

/// The way back from an engine thread to the session that owns the test.
#[derive(Clone)]
pub struct Sink {
    pub sid: u64,
    /// Which registration of `(test_id, role)` this side is: a controller
    /// may reuse a test id as soon as the side's final event reaches it, and
    /// the old side's `Finished` must not end the new one.
    pub serial: u64,
    pub tx: Sender<Outbound>,
    pub waker: Arc<mio::Waker>,
    /// The session's sample frames not yet in its WebSocket.
    pub backlog: Arc<backlog::Backlog>,
}

impl Sink {
    /// Queues a JSON event.
    pub fn event(&self, ev: &Event) {
        let text = serde_json::to_string(ev).expect("events serialize");
        let out = match ev {
            // A result is its side's last event: the control loop frees the
            // test as it routes it (see `Outbound::Final`).
            Event::Result {
                test_id,
                role,
                kind,
                summary,
                ..
            } => Outbound::Final {
                sid: self.sid,
                test_id: *test_id,
                role: *role,
                serial: self.serial,
                text,
                outcome: match (
                    summary["note"].as_str(),
                    meshperf_protocol::matrix::headline(*kind, summary),
                ) {
                    (Some(n), _) => format!("ended early: {n}"),
                    (None, Some((name, v, unit))) => format!("{name} {v:.3} {unit}"),
                    (None, None) => "done".into(),
                },
            },
            _ => Outbound::Text {
                sid: self.sid,
                text,
            },
        };
        let _ = self.tx.send(out);
        let _ = self.waker.wake();
    }

    /// Queues sample frames for `values`, split into frames of at most
    /// 65536 values: the samples of an ended side, which go out as the
    /// controller takes them (see [`backlog`]).
    pub fn samples(
        &self,
        kind: SampleKind,
        role: Role,
        test_id: u32,
        step: u32,
        stream: u16,
        values: &[u64],
    ) {
        self.frames(kind, role, test_id, step, stream, 0, values, true);
    }

    /// Like [`Sink::samples`] for a batch whose first value has sequence
    /// number `first_seq` (samples sent in batches while a test runs: they
    /// never wait for the controller, the test's loop must not stall).
    #[allow(clippy::too_many_arguments)]
    pub fn samples_from(
        &self,
        kind: SampleKind,
        role: Role,
        test_id: u32,
        step: u32,
        stream: u16,
        first_seq: u32,
        values: &[u64],
    ) {
        self.frames(kind, role, test_id, step, stream, first_seq, values, false);
    }

    #[allow(clippy::too_many_arguments)]
    fn frames(
        &self,
        kind: SampleKind,
        role: Role,
        test_id: u32,
        step: u32,
        stream: u16,
        first_seq: u32,
        values: &[u64],
        wait: bool,
    ) {
        const CHUNK: usize = 65536;
        for (i, chunk) in values.chunks(CHUNK).enumerate() {
            let h = FrameHeader {
                kind,
                role,
                stream,
                test_id,
                step,
                first_seq: first_seq.wrapping_add((i * CHUNK) as u32),
                count: chunk.len() as u32,
            };
            let mut bytes = Vec::new();
            frame::encode(&h, chunk, &mut bytes);
            self.backlog.take(bytes.len(), wait);
            let _ = self.tx.send(Outbound::Binary {
                sid: self.sid,
                bytes,
            });
            // Each frame at once: the next may wait for this one to go.
            let _ = self.waker.wake();
        }
    }
}

/// How long a prepared test waits for its peer.
pub const ACCEPT_WINDOW: Duration = Duration::from_secs(10);

/// Time allowed past `--max-duration` for a test's last exchange (the
/// final lines, a receiver draining), before the agent stops it.
pub const LIMIT_GRACE: Duration = Duration::from_secs(2);

/// When a test side must end, whatever its peer does: `--max-duration` (plus
/// [`LIMIT_GRACE`]) from the moment the side is connected to its peer
/// ([`Limit::begin`]), or from its set-up plus the accept window until then.
/// The control loop checks every running side's [`Limit::end`] and, once it
/// has passed, marks it expired and cancels it; every engine loop already
/// ends on cancel, and the side's failure then says it was the limit
/// ([`TestCtx::fail`]).
pub struct Limit {
    base: Instant,
    max: Duration,
    /// `end` as nanoseconds after `base`.
    end_ns: AtomicU64,
    expired: AtomicBool,
}

impl Limit {
    pub fn new(max: Duration) -> Limit {
        let base = Instant::now();
        let end = ACCEPT_WINDOW + max + LIMIT_GRACE;
        Limit {
            base,
            max,
            end_ns: AtomicU64::new(end.as_nanos() as u64),
            expired: AtomicBool::new(false),
        }
    }

    /// The side is connected to its peer: it may run `max` from now.
    pub fn begin(&self) {
        cpu::begin();
        let end = self.base.elapsed() + self.max + LIMIT_GRACE;
        self.end_ns.store(end.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn end(&self) -> Instant {
        self.base + Duration::from_nanos(self.end_ns.load(Ordering::Relaxed))
    }

    /// Marks the side stopped by the limit (the control loop, then cancels it).
    pub fn expire(&self) {
        self.expired.store(true, Ordering::Relaxed);
    }

    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::Relaxed)
    }

    pub fn max(&self) -> Duration {
        self.max
    }
}

/// Everything an engine thread needs to know about its test.
#[derive(Clone)]
pub struct TestCtx {
    pub test_id: u32,
    pub step: u32,
    pub role: Role,
    pub kind: Kind,
    pub cancel: Arc<AtomicBool>,
    pub sink: Sink,
    /// The agent's limits (a paced sender catching up stays under its UDP
    /// rate limit).
    pub limits: Limits,
    /// When this side must end at the latest (`--max-duration`).
    pub limit: Arc<Limit>,
    /// The local address of the side's control line to its peer (set as
    /// it connects): the interface [`TestCtx::report`] names as `link`.
    pub local: Arc<std::sync::OnceLock<IpAddr>>,
    /// The bytes of its last progress event (what other tests' `shared`
    /// say it moved beside them).
    pub moved: Arc<std::sync::atomic::AtomicU64>,
    /// The other tests that ran beside it here (`shared` in its summary).
    pub shared: Arc<super::shared::SharedLog>,
}

/// How much of a test is done: `done` of `total` when a count bounds it
/// (a total of 0 counts as none), else `elapsed_s` of its duration; 0
/// without either. The progress events' `fraction` (capped at 1 there).
pub fn done_fraction(done_of: Option<(u64, u64)>, elapsed_s: f64, duration_s: Option<f64>) -> f64 {
    match (done_of, duration_s) {
        (Some((done, total)), _) if total > 0 => done as f64 / total as f64,
        (_, Some(d)) => elapsed_s / d,
        _ => 0.0,
    }
}

impl TestCtx {
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// A progress event of this side: `bytes` moved in `elapsed_s`, and
    /// the share of the test done (see [`done_fraction`]).
    pub fn progress(&self, elapsed_s: f64, bytes: u64, fraction: f64) {
        self.moved.store(bytes, Ordering::Relaxed);
        self.sink.event(&Event::Progress {
            test_id: self.test_id,
            step: self.step,
            role: self.role,
            elapsed_s,
            bytes,
            fraction: fraction.min(1.0),
        });
    }

    /// Reports a failure of this test side to its session (its final event).
    pub fn fail(&self, code: ErrorCode, message: impl Into<String>) {
        let mut message = message.into();
        let mut code = code;
        if self.limit.expired() {
            // Whatever the loop saw when it was stopped (cancel, a peer
            // that went quiet), the reason is the limit.
            message = format!(
                "stopped at this agent's duration limit, {} s after the peer connected (--max-duration; {}s grace): {message}",
                self.limit.max().as_secs_f64(),
                LIMIT_GRACE.as_secs()
            );
            code = ErrorCode::DurationLimit;
        }
        let outcome = format!("failed ({code}): {message}");
        let ev = Event::Error {
            id: None,
            test_id: Some(self.test_id),
            code,
            message,
        };
        let text = serde_json::to_string(&ev).expect("events serialize");
        let _ = self.sink.tx.send(Outbound::Final {
            sid: self.sink.sid,
            test_id: self.test_id,
            role: self.role,
            serial: self.sink.serial,
            text,
            outcome,
        });
        let _ = self.sink.waker.wake();
    }

    /// Reports the outcome of this side: its summary (one of the typed
    /// summaries of `meshperf_protocol::summary`, with the side's `cpu`
    /// added) or its failure.
    pub fn report<S: serde::Serialize>(&self, r: Result<S, TestError>) {
        match r.and_then(|s| {
            serde_json::to_value(&s)
                .map_err(|e| TestError::new(ErrorCode::Internal, format!("summary: {e}")))
        }) {
            Ok(mut summary) => {
                if let (Some(o), Some(c)) = (summary.as_object_mut(), cpu::finish()) {
                    o.insert(
                        "cpu".into(),
                        serde_json::to_value(c).expect("cpu serializes"),
                    );
                }
                if let (Some(o), Some(sh)) = (summary.as_object_mut(), self.shared.summary()) {
                    o.insert("shared".into(), sh);
                }
                let link = self.local.get().and_then(|ip| crate::sysinfo::link(*ip));
                if let (Some(o), Some(l)) = (summary.as_object_mut(), link) {
                    o.insert(
                        "link".into(),
                        serde_json::to_value(l).expect("link serializes"),
                    );
                }
                self.sink.event(&Event::Result {
                    test_id: self.test_id,
                    step: self.step,
                    role: self.role,
                    kind: self.kind,
                    summary,
                })
            }
            Err(e) => self.fail(e.code, e.message),
        }
    }

    /// Reports the end of this side to the control loop (always last).
    pub fn finished(&self) {
        let _ = self.sink.tx.send(Outbound::Finished {
            test_id: self.test_id,
            role: self.role,
            serial: self.sink.serial,
        });
        let _ = self.sink.waker.wake();
    }
}
/// The body of one test side, run on its own thread. It must report through
/// the context and end with `ctx.finished()`.
pub type Job = Box<dyn FnOnce(TestCtx) + Send>;

/// What engines need from the agent.
pub struct EngineEnv<'a> {
    pub limits: &'a Limits,
    /// Address data listeners bind to (the agent's listen address).
    pub data_ip: IpAddr,
    /// Ports a serving side may listen on (`--data-ports`); `None`: any
    /// port the kernel picks.
    pub data_ports: Option<(u16, u16)>,
    /// Where stream tests may read payload files (`--payload-dir`); `None`:
    /// the agent reads no files.
    pub payload_dir: Option<&'a payload::PayloadDir>,
    /// Where a kind may send to an address that is not an agent
    /// (`--allow-target`).
    pub targets: &'a super::target::Targets,
    /// `--stamp-key`: the HMAC key of authenticated STAMP.
    pub stamp_key: Option<&'a super::stamp::wire::Key>,
}

#[cfg(test)]
mod tests {
    use super::done_fraction;

    #[test]
    fn the_share_done_is_by_count_when_a_count_bounds_the_test_else_by_time() {
        assert_eq!(done_fraction(Some((250, 1000)), 9.0, Some(10.0)), 0.25);
        assert_eq!(done_fraction(None, 2.5, Some(10.0)), 0.25);
        // A count of 0 (nothing to count) falls back on the time.
        assert_eq!(done_fraction(Some((0, 0)), 5.0, Some(10.0)), 0.5);
        assert_eq!(done_fraction(None, 5.0, None), 0.0);
    }
}
