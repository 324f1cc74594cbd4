//! `meshperf run --json-stream FILE`: writes the lines of
//! [`meshperf_protocol::json_stream`] as the run goes, each flushed at once
//! (`tail -f` or a pipe sees it when it happens): intervals of stream steps
//! as their samples arrive, each step as it ends, then the end.

use meshperf_protocol::driver::StepRun;
use meshperf_protocol::json_stream::{
    step_event, IntervalCutter, StreamEnd, StreamEvent, StreamStart, FORMAT, VERSION,
};
use meshperf_protocol::matrix::Pair;
use meshperf_protocol::result::{RunResult, StepResult};
use std::collections::HashMap;
use std::io::Write;

/// Interval length when `-i` is not given (iperf3's default).
pub const DEFAULT_INTERVAL_S: f64 = 1.0;

pub struct JsonStream {
    out: Box<dyn Write>,
    interval_s: f64,
    /// The running stream steps' interval cutters, by test id.
    cutters: HashMap<u32, IntervalCutter>,
    /// A matrix run: interval lines name their pair of agents.
    pub matrix: bool,
    /// The first write error (the run goes on; it is reported at the end).
    pub error: Option<std::io::Error>,
}

impl JsonStream {
    /// Writes to `path` (`-`: stdout) and writes the start line.
    pub fn open(path: &str, interval_s: f64, r: &RunResult, steps: usize) -> anyhow::Result<Self> {
        let out: Box<dyn Write> = if path == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::File::create(path)
                    .map_err(|e| anyhow::anyhow!("cannot write --json-stream {path}: {e}"))?,
            )
        };
        let mut s = JsonStream {
            out,
            interval_s,
            cutters: HashMap::new(),
            matrix: false,
            error: None,
        };
        s.write(&StreamEvent::Start(Box::new(StreamStart {
            format: FORMAT.into(),
            version: VERSION,
            created_unix: r.created_unix,
            plan: r.plan.clone(),
            agents: r.agents.clone(),
            steps,
            interval_s,
        })));
        Ok(s)
    }

    fn write(&mut self, e: &StreamEvent) {
        if self.error.is_some() {
            return;
        }
        let mut line = e.line();
        line.push('\n');
        if let Err(e) = self
            .out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.flush())
        {
            self.error = Some(e);
        }
    }

    /// New samples of a running step: its intervals that are now complete.
    pub fn samples(&mut self, run: &StepRun) {
        let p = run.placement();
        let pair = self.matrix.then_some(Pair {
            server: p.server,
            client: p.client,
        });
        let secs = self.interval_s;
        let Some(c) = self.cutter(run, pair, secs) else {
            return;
        };
        for r in c.ready(run.samples()) {
            self.write(&StreamEvent::Interval(r));
        }
    }

    fn cutter(
        &mut self,
        run: &StepRun,
        pair: Option<Pair>,
        secs: f64,
    ) -> Option<&mut IntervalCutter> {
        let s = run.step();
        if let std::collections::hash_map::Entry::Vacant(e) = self.cutters.entry(run.test_id()) {
            let c = IntervalCutter::new(
                s.kind,
                s.index,
                &s.params,
                s.point.clone(),
                s.repeat,
                pair,
                secs,
            )?;
            e.insert(c);
        }
        self.cutters.get_mut(&run.test_id())
    }

    /// Step `test_id` has ended with `result` (samples and all): the
    /// intervals not written yet.
    pub fn step_ended(&mut self, test_id: u32, result: &StepResult) {
        if let Some(mut c) = self.cutters.remove(&test_id) {
            for r in c.rest(result) {
                self.write(&StreamEvent::Interval(r));
            }
        }
    }

    /// A step as the result file keeps it (without its samples).
    pub fn step(&mut self, s: &StepResult) {
        self.write(&step_event(s));
    }

    /// The last line; the first write error, if any.
    pub fn end(mut self, end: StreamEnd) -> Option<std::io::Error> {
        self.write(&StreamEvent::End(end));
        self.error
    }
}
