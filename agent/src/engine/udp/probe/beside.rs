//! A probe flow beside a bulk test (`probe_ms` on `tcp_stream` and
//! `udp_stream`), so the
//! stream reports the latency under its own load: the probes, answers and
//! end exchange of `latency_under_load` ([`super`]) over a UDP
//! socket of their own, bound on the stream test's control line before its
//! go (as `udp_rr` binds: the serving side answers only the address that
//! proved itself). The driving agent probes the idle path for
//! [`ProbeParams::lead_s`] before the go (the `idle` phase, the baseline of
//! the added latency), then tags its probes with the loaded phase (`upload`,
//! `download` or `both` by the stream's direction) until the streams end.
//! Its summary is a `latency_under_load` summary of those two phases
//! (`StreamSummary::probe`, `UdpStreamSummary::probe`), worked out by the
//! same code ([`super::summary`]); its raw probes are stream
//! [`BESIDE_STREAM`] of the driving side, apart from the test's own series.

use super::summary::{self, Ran};
use crate::engine::bind;
use crate::engine::ctx::{EngineEnv, TestCtx};
use crate::engine::error::{Refusal, TestError};
use crate::engine::peer::{self, Line};
use crate::engine::udp::dgram as udp;
use crate::engine::udp::probe::{self, ProbeClock, Requested, Responded, LINE_WAIT};
use meshperf_protocol::msg::ErrorCode;
use meshperf_protocol::params::{LulPhase, ProbeParams, UdpSocketParams, GAP_PHASE};
use meshperf_protocol::peer::{LulDriverLine, LulServerLine};
use meshperf_protocol::summary::{LulSummary, BESIDE_STREAM};
use std::io;
use std::net::{IpAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Serving side set-up: the probe socket, on the stream's listening
/// address (a port of `--data-ports` when the agent has a range).
pub fn open(env: &EngineEnv, ip: IpAddr) -> Result<UdpSocket, Refusal> {
    bind::on_data_port(env.data_ports, |port| {
        udp::open(ip, port, &UdpSocketParams::default(), true)
    })
    .map_err(|e| (ErrorCode::Io, format!("cannot open the probe socket: {e}")))
}

/// The most probes the flow may send: over the lead and the test's
/// duration (a count-bounded test: the agent's time limit), and one more.
pub fn max_probes(pp: &ProbeParams, duration_s: Option<f64>, ctx: &TestCtx) -> u64 {
    pp.probes(pp.lead_s() + duration_s.unwrap_or(ctx.limits.max_duration_s)) + 1
}

fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<JoinHandle<io::Result<T>>, TestError> {
    // The thread's CPU time counts toward the test's (`cpu` in the summary).
    let meter = crate::engine::cpu::current();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _cpu = crate::engine::cpu::Worker::count(meter.as_deref());
            f()
        })
        .map_err(|e| TestError::new(ErrorCode::Io, format!("cannot start the {name}: {e}")))
}

/// The probe flow beside a test, by role.
pub enum Probe {
    Serving(Serving),
    Driving(Driving),
}

impl Probe {
    /// The load starts now (driving side; the serving side only answers).
    pub fn load(&mut self, phase: LulPhase) {
        if let Probe::Driving(d) = self {
            d.load(phase);
        }
    }

    /// The load is over.
    pub fn unload(&mut self) {
        if let Probe::Driving(d) = self {
            d.unload();
        }
    }

    /// After the test's own end exchange on `line`: the serving side
    /// answers the counts; the driving side works the flow out (see
    /// [`Driving::finish`]) and returns its summary.
    pub fn finish(
        self,
        ctx: &TestCtx,
        line: &mut Line,
        streams: u32,
        down: (u64, f64),
        up: (u64, f64),
    ) -> Result<Option<LulSummary>, TestError> {
        match self {
            Probe::Serving(s) => s.finish(line).map(|_| None),
            Probe::Driving(d) => d.finish(ctx, line, streams, down, up).map(Some),
        }
    }
}

/// The serving side's answering thread.
pub struct Serving {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<Responded>>>,
    base_ns: u64,
    foreign: u64,
}

/// Serving side, on the stream test's control line once the peer is
/// accepted: binds the flow and answers until [`Serving::finish`] (or
/// until dropped, when the stream test failed).
pub fn serve(
    ctx: &TestCtx,
    line: &mut Line,
    sock: UdpSocket,
    peer_ip: IpAddr,
    pp: &ProbeParams,
    max_probes: u64,
) -> Result<Serving, TestError> {
    let mut foreign = 0;
    let (token, peer_udp) = udp::serve_bind(ctx, line, &sock, peer_ip, &mut foreign)?;
    let clock = ProbeClock::new();
    let base_ns = clock.base_ns;
    let stop = Arc::new(AtomicBool::new(false));
    let (limits, bytes, halt) = (ctx.limits.clone(), pp.probe_bytes as usize, stop.clone());
    let thread = spawn("probe responder", move || {
        probe::respond(
            sock, token, peer_udp, bytes, max_probes, &limits, &clock, &halt,
        )
    })?;
    Ok(Serving {
        stop,
        thread: Some(thread),
        base_ns,
        foreign,
    })
}

impl Serving {
    /// After the streams' end exchange: the driving side's probe counts,
    /// answered by this side's.
    pub fn finish(mut self, line: &mut Line) -> Result<(), TestError> {
        let got = line.expect::<LulDriverLine>(LINE_WAIT, "the driving agent sent no probe counts");
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("joined once");
        let r = thread
            .join()
            .expect("probe responder panicked")
            .map_err(udp::io_err)?;
        match got? {
            LulDriverLine::Done { .. } => line
                .send(&LulServerLine::Done {
                    probes: r.tally,
                    phases: Vec::new(),
                    base_ns: self.base_ns,
                    foreign: self.foreign + r.foreign,
                    bad: r.bad,
                    timestamps: probe::stamps(r.kernel_stamps),
                })
                .map_err(peer::gone),
            other => Err(peer::unexpected("done", &other)),
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The driving side's probing thread.
pub struct Driving {
    pp: ProbeParams,
    stop: Arc<AtomicBool>,
    phase: Arc<probe::Phases>,
    thread: Option<JoinHandle<io::Result<Requested>>>,
    base_ns: u64,
    peer_udp: String,
    lead: f64,
    /// The loaded phase, its start and (once over) its length.
    loaded: Option<(LulPhase, Instant, Option<f64>)>,
}

/// Driving side, on the stream test's control line once connected: binds
/// the flow, starts probing and probes the idle path for the lead time.
pub fn drive(
    ctx: &TestCtx,
    line: &mut Line,
    peer_ip: IpAddr,
    pp: &ProbeParams,
    max_probes: u64,
) -> Result<Driving, TestError> {
    let local = line.stream().local_addr().map_err(udp::io_err)?.ip();
    let (sock, token) = udp::client_bind(ctx, line, local, peer_ip, &UdpSocketParams::default())?;
    let peer_udp = sock.peer_addr().map_err(udp::io_err)?.to_string();
    let clock = ProbeClock::new();
    let base_ns = clock.base_ns;
    let stop = Arc::new(AtomicBool::new(false));
    let phase = Arc::new(probe::Phases::new(LulPhase::Idle.code()));
    let silent = Arc::new(AtomicBool::new(false));
    let (limits, pp2) = (ctx.limits.clone(), *pp);
    let (halt, tag) = (stop.clone(), phase.clone());
    let thread = spawn("probe requester", move || {
        probe::request(
            sock,
            token,
            pp2.probe_ms,
            pp2.probe_bytes as usize,
            max_probes,
            &limits,
            &clock,
            &tag,
            &halt,
            &silent,
        )
    })?;
    let t0 = Instant::now();
    let lead = Duration::from_secs_f64(pp.lead_s());
    while t0.elapsed() < lead && !ctx.cancelled() {
        std::thread::sleep((lead - t0.elapsed().min(lead)).min(Duration::from_millis(20)));
    }
    Ok(Driving {
        pp: *pp,
        stop,
        phase,
        thread: Some(thread),
        base_ns,
        peer_udp,
        lead: t0.elapsed().as_secs_f64(),
        loaded: None,
    })
}

impl Driving {
    /// The load starts now.
    pub fn load(&mut self, phase: LulPhase) {
        self.phase.set(phase.code());
        self.loaded = Some((phase, Instant::now(), None));
    }

    /// The load is over (probes from now on are between phases).
    pub fn unload(&mut self) {
        self.phase.set(GAP_PHASE);
        if let Some((_, t, end)) = &mut self.loaded {
            end.get_or_insert(t.elapsed().as_secs_f64());
        }
    }

    /// After the streams' end exchange: stops probing, exchanges the
    /// counts and works the flow out. `down` and `up` are the streams'
    /// bytes and seconds each way as this side measured them (received
    /// over its receiving time, sent over its sending time).
    pub fn finish(
        mut self,
        ctx: &TestCtx,
        line: &mut Line,
        streams: u32,
        down: (u64, f64),
        up: (u64, f64),
    ) -> Result<LulSummary, TestError> {
        self.unload();
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("joined once");
        let r = thread
            .join()
            .expect("probe requester panicked")
            .map_err(udp::io_err)?;
        let mut note = r.silent.clone();
        let server = match probe::end_counts(line, &r.sent) {
            Ok(s) => Some(s),
            Err(e) => {
                note.get_or_insert(e.message);
                None
            }
        };
        let mut ran = vec![Ran {
            phase: LulPhase::Idle,
            seconds: self.lead,
            down_bytes: 0,
            down_seconds: 0.0,
            up: Some((0, 0.0)),
        }];
        if let Some((phase, _, Some(secs))) = self.loaded {
            ran.push(Ran {
                phase,
                seconds: secs,
                down_bytes: down.0,
                down_seconds: down.1,
                up: Some(up),
            });
        }
        Ok(summary::build(
            ctx,
            &self.pp,
            streams,
            &ran,
            &r,
            server.as_ref(),
            self.base_ns,
            std::mem::take(&mut self.peer_udp),
            note,
            BESIDE_STREAM,
        ))
    }
}

impl Drop for Driving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
