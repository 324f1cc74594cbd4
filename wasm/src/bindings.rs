//! wasm-bindgen facade (wasm32 only): converts typed arrays in and small JS
//! objects or typed arrays out, and nothing else. Every function is one call
//! per batch; long-lived samples live in a [`SampleSet`] handle so they are
//! copied into wasm memory once. Errors throw a JS `Error` whose message is
//! the [`StatsError`] text. Object keys are the JS contract (snake_case, the
//! docs/design.md summary keys) and never change meaning. Only what JS calls is
//! bound (the page through web/src/lib/wasm.ts; `SampleSet` also by the
//! wasm benchmark, bench/wasm/): UDP analysis, rate series, x/y decimation
//! and `check_times` serve native callers and tests, and every binding is
//! code each page load pays for.

#[cfg(any(feature = "stats", feature = "view"))]
use js_sys::{Float64Array, Object, Reflect};
use wasm_bindgen::prelude::*;

#[cfg(any(feature = "stats", feature = "view"))]
use meshperf_stats::error::StatsError;
#[cfg(feature = "stats")]
use meshperf_stats::stats::Summary;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Statistics of one sample set (times in the caller's unit). */
export interface Summary { n: number; min: number; max: number; mean: number; sigma: number;
  skew: number; kurtosis: number; median: number; iq25: number; iq75: number; p90: number;
  p99: number; p999: number; p9999: number; mad: number; }
/** Fixed-width histogram; bin i covers [low + i*bin_width, low + (i+1)*bin_width). */
export interface HistogramResult { low: number; bin_width: number; high: number;
  counts: Uint32Array; underflow: number; overflow: number; }
/** Default bins that cover the data (stats/src/hist.rs `default_bins`). */
export interface BinsResult { low: number; bin_width: number; bins: number; }
export interface CdfResult { x: Float64Array; fraction: Float64Array; }
export interface MinMaxResult { x: Float64Array; min: Float64Array; max: Float64Array; }
/** Latency under load's load, one direction: interval end (s), bits/s, phase code, 1 on a phase's last interval. */
export interface LulRates { t_s: Float64Array; bps: Float64Array; phase: Float64Array; last: Float64Array; }
export interface LineFitResult { n: number; slope: number; intercept: number; r2: number; }
export interface ConfidenceResult { n: number; mean: number; sd: number; half_width: number;
  low: number; high: number; }
/** Latency under load probe by probe (s, ms), unanswered probes' times, phase spans. */
export interface LulLanes { t_s: Float64Array; rtt_ms: Float64Array; up_ms: Float64Array;
  down_ms: Float64Array; lost_t_s: Float64Array; start_s: Float64Array; end_s: Float64Array; }
"#;

// The statistics and the view halves' helpers (the codec half returns
// strings and handles only).
#[cfg(any(feature = "stats", feature = "view"))]
fn js_err(e: StatsError) -> JsError {
    JsError::new(&e.to_string())
}

#[cfg(any(feature = "stats", feature = "view"))]
fn set(o: &Object, key: &str, value: JsValue) {
    // Reflect.set on a fresh plain object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(key), &value);
}

#[cfg(feature = "stats")]
fn summary_obj(s: &Summary) -> Object {
    let o = Object::new();
    for (k, v) in s.fields() {
        set(&o, k, v.into());
    }
    o
}

#[cfg(any(feature = "stats", feature = "view"))]
fn columns(cols: &[(&str, &[f64])]) -> Object {
    let o = Object::new();
    for (k, v) in cols {
        set(&o, k, Float64Array::from(*v).into());
    }
    o
}

/// The statistics half (feature `stats`, scripts/build.sh's `meshperf_stats`
/// build): the web app's first load. The codec build leaves it out: the page
/// loads the codec beside it, never instead.
#[cfg(feature = "stats")]
mod stats {
    use js_sys::Uint32Array;
    use meshperf_stats::error::check_finite;
    use meshperf_stats::fit::{self, Confidence, LineFit};
    use meshperf_stats::hist::{self, Histogram, Upper};
    use meshperf_stats::series::{self, MinMax};

    use super::*;

    fn histogram_obj(h: &Histogram) -> Object {
        let o = Object::new();
        set(&o, "low", h.low.into());
        set(&o, "bin_width", h.bin_width.into());
        set(&o, "high", h.high().into());
        set(&o, "counts", Uint32Array::from(&h.counts[..]).into());
        set(&o, "underflow", (h.underflow as f64).into());
        set(&o, "overflow", (h.overflow as f64).into());
        o
    }

    fn minmax_obj(m: &MinMax) -> Object {
        columns(&[("x", &m.x), ("min", &m.min), ("max", &m.max)])
    }

    fn upper(high: Option<f64>) -> Upper {
        high.map_or(Upper::Auto, Upper::High)
    }

    /// Crate version of the statistics core, e.g. "0.1.0".
    #[wasm_bindgen]
    pub fn version() -> String {
        meshperf_stats::VERSION.to_string()
    }

    /// Bits per second per interval from bytes per `interval_ms` interval, the
    /// last one scaled to the time it covered when the side's `seconds` is given
    /// (`series::rate_series`); a Float64Array.
    #[wasm_bindgen]
    pub fn rate_series(
        bytes: &[f64],
        interval_ms: f64,
        seconds: Option<f64>,
    ) -> Result<Vec<f64>, JsError> {
        series::rate_series(bytes, interval_ms, seconds).map_err(js_err)
    }

    /// `series::whole_ticks` (the intervals every stream spent whole) as
    /// two numbers, `from` and `to`.
    #[wasm_bindgen]
    pub fn whole_ticks(
        ends: &[f64],
        starts: &[f64],
        omitted_s: f64,
        tick_s: f64,
        n: usize,
    ) -> Vec<u32> {
        let (from, to) = series::whole_ticks(ends, starts, omitted_s, tick_s, n);
        vec![from as u32, to as u32]
    }

    /// Latency under load's TCP load against time, one direction (`up`) from
    /// the receiving side's `interval_bytes` series (`meshperf_stats::lul_load`):
    /// the series' `streams` numbers and lengths `lens`, their values one after
    /// another in `bytes`; `n` streams per direction; `phase_s` (4: how long
    /// idle, download, upload and both ran), `gap_s`, `recv_s` (4: the
    /// receiver's time to each phase's last byte, NaN unknown). Returns
    /// Float64Arrays `t_s`, `bps`, `phase`, `last`, each phase's streams summed
    /// and its intervals at their own time.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(unchecked_return_type = "LulRates")]
    pub fn lul_rates(
        streams: &[u16],
        lens: &[u32],
        bytes: &[f64],
        n: u16,
        up: bool,
        phase_s: &[f64],
        gap_s: f64,
        recv_s: &[f64],
        interval_ms: f64,
    ) -> Result<Object, JsError> {
        let four = |v: &[f64], what: &str| -> Result<[f64; 4], JsError> {
            v.try_into().map_err(|_| {
                JsError::new(&format!(
                    "{what}: 4 values (one per phase), got {}",
                    v.len()
                ))
            })
        };
        if streams.len() != lens.len()
            || lens.iter().map(|&l| l as usize).sum::<usize>() != bytes.len()
        {
            return Err(JsError::new(
                "lul_rates: streams, lens and bytes do not match",
            ));
        }
        let mut at = 0;
        let list: Vec<(u16, &[f64])> = streams
            .iter()
            .zip(lens)
            .map(|(&s, &l)| {
                let v = &bytes[at..at + l as usize];
                at += l as usize;
                (s, v)
            })
            .collect();
        let r = meshperf_stats::lul_load::phase_rates(
            &list,
            n,
            up,
            &four(phase_s, "phase_s")?,
            gap_s,
            &four(recv_s, "recv_s")?,
            interval_ms,
        )
        .map_err(js_err)?;
        let f = |v: &[u8]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        Ok(columns(&[
            ("t_s", &r.t_s),
            ("bps", &r.bps),
            ("phase", &f(&r.phase)),
            ("last", &f(&r.last)),
        ]))
    }

    /// When each latency_under_load load stream's phase started, s since the
    /// test's start (NaN outside the `4n` streams): its intervals count from
    /// there (stats/src/lul_load.rs `stream_starts`).
    #[wasm_bindgen]
    pub fn lul_stream_starts(
        streams: &[u16],
        n: u16,
        phase_s: &[f64],
        gap_s: f64,
    ) -> Result<Vec<f64>, JsError> {
        let phase_s: [f64; 4] = phase_s.try_into().map_err(|_| {
            JsError::new(&format!(
                "phase_s: 4 values (one per phase), got {}",
                phase_s.len()
            ))
        })?;
        Ok(meshperf_stats::lul_load::stream_starts(
            streams, n, &phase_s, gap_s,
        ))
    }

    /// Least-squares line y = intercept + slope * x: {n, slope, intercept, r2}.
    /// Throws on length mismatch, fewer than 2 points, or all x equal.
    #[wasm_bindgen(unchecked_return_type = "LineFitResult")]
    pub fn linfit(x: &[f64], y: &[f64]) -> Result<Object, JsError> {
        let LineFit {
            n,
            slope,
            intercept,
            r2,
        } = fit::linfit(x, y).map_err(js_err)?;
        let o = Object::new();
        set(&o, "n", (n as f64).into());
        set(&o, "slope", slope.into());
        set(&o, "intercept", intercept.into());
        set(&o, "r2", r2.into());
        Ok(o)
    }

    /// Mean of repetitions with a Student-t 95% interval:
    /// {n, mean, sd (n-1), half_width, low, high}. Throws with fewer than 2 values.
    #[wasm_bindgen(unchecked_return_type = "ConfidenceResult")]
    pub fn confidence(values: &[f64]) -> Result<Object, JsError> {
        let Confidence {
            n,
            mean,
            sd,
            half_width,
            low,
            high,
        } = fit::confidence(values).map_err(js_err)?;
        let o = Object::new();
        for (k, v) in [
            ("n", n as f64),
            ("mean", mean),
            ("sd", sd),
            ("half_width", half_width),
            ("low", low),
            ("high", high),
        ] {
            set(&o, k, v.into());
        }
        Ok(o)
    }

    /// Samples kept in wasm memory across calls (one per plotted stream), so a
    /// large set is copied in once and then summarised, binned and plotted
    /// repeatedly. Call `free()` when done.
    #[wasm_bindgen]
    #[derive(Default)]
    pub struct SampleSet {
        values: Vec<f64>,
        /// Cached result of `summary()` until the next change.
        summary: Option<Summary>,
    }

    #[wasm_bindgen]
    impl SampleSet {
        /// An empty set.
        #[wasm_bindgen(constructor)]
        pub fn new() -> SampleSet {
            SampleSet::default()
        }

        /// Append a batch (Float64Array). Throws, adding nothing, if any value is
        /// NaN or infinite.
        pub fn push(&mut self, values: &[f64]) -> Result<(), JsError> {
            check_finite(values).map_err(js_err)?;
            self.values.extend_from_slice(values);
            self.summary = None;
            Ok(())
        }

        /// Number of samples held.
        pub fn len(&self) -> usize {
            self.values.len()
        }

        /// True when no samples are held.
        pub fn is_empty(&self) -> bool {
            self.values.is_empty()
        }

        /// Summary object (same keys as the free `summary`); throws when empty.
        #[wasm_bindgen(unchecked_return_type = "Summary")]
        pub fn summary(&mut self) -> Result<Object, JsError> {
            if self.summary.is_none() {
                self.summary = Some(Summary::new(&self.values).map_err(js_err)?);
            }
            Ok(summary_obj(self.summary.as_ref().expect("just set")))
        }

        /// Histogram (same arguments and result as the free `histogram`).
        #[wasm_bindgen(unchecked_return_type = "HistogramResult")]
        pub fn histogram(
            &self,
            bin_width: f64,
            low: f64,
            high: Option<f64>,
        ) -> Result<Object, JsError> {
            Histogram::new(&self.values, bin_width, low, upper(high))
                .map(|h| histogram_obj(&h))
                .map_err(js_err)
        }

        /// Histogram with `bins` bins (same result as the free `histogram_bins`).
        #[wasm_bindgen(unchecked_return_type = "HistogramResult")]
        pub fn histogram_bins(
            &self,
            bin_width: f64,
            low: f64,
            bins: u32,
        ) -> Result<Object, JsError> {
            Histogram::new(&self.values, bin_width, low, Upper::Bins(bins as usize))
                .map(|h| histogram_obj(&h))
                .map_err(js_err)
        }

        /// Bins that cover the data, for a histogram nobody has set up yet:
        /// {low, bin_width, bins} (`meshperf_stats::hist::default_bins`).
        #[wasm_bindgen(unchecked_return_type = "BinsResult")]
        pub fn default_bins(&self) -> Result<Object, JsError> {
            let b = hist::default_bins(&self.values).map_err(js_err)?;
            let o = Object::new();
            set(&o, "low", b.low.into());
            set(&o, "bin_width", b.width.into());
            set(&o, "bins", (b.bins as f64).into());
            Ok(o)
        }

        /// CDF, at most `max_points` (2..=65534) points: {x, fraction}.
        #[wasm_bindgen(unchecked_return_type = "CdfResult")]
        pub fn cdf(&self, max_points: usize) -> Result<Object, JsError> {
            let (x, f) = hist::cdf_unsorted(&self.values, max_points).map_err(js_err)?;
            Ok(columns(&[("x", &x), ("fraction", &f)]))
        }

        /// Min/max decimation of the samples in push order: {x, min, max}.
        #[wasm_bindgen(unchecked_return_type = "MinMaxResult")]
        pub fn decimate(&self, max_points: usize) -> Result<Object, JsError> {
            series::decimate_minmax(None, &self.values, max_points)
                .map(|m| minmax_obj(&m))
                .map_err(js_err)
        }

        /// Drop all samples (keeps the allocation for reuse).
        pub fn clear(&mut self) {
            self.values.clear();
            self.summary = None;
        }
    }
}

/// The run half (feature `codec`; scripts/build.sh's `meshperf_codec`
/// build): what the page needs to run a plan or a matrix (plan expansion,
/// presets, the checks before traffic, the step driver, the matrix's
/// schedule), loaded when a run is asked for. Reading results is the
/// `view` half's; the statistics build (`meshperf_stats`) leaves both out,
/// and with them serde_json, the protocol's serde types and zlib.
#[cfg(feature = "codec")]
mod codec {
    use wasm_bindgen::prelude::*;

    /// The steps (JSON array of {index, kind, params, point, repeat, transport})
    /// a plan (JSON) expands to, in run order. Throws on an invalid plan.
    #[wasm_bindgen]
    pub fn expand_plan(plan_json: &str) -> Result<String, JsError> {
        meshperf_protocol::plan_json::expand_json(plan_json).map_err(|e| JsError::new(&e))
    }

    /// The built-in plans as JSON: `[{name, plan}]`, `plan` an object.
    #[wasm_bindgen]
    pub fn presets() -> String {
        meshperf_protocol::plan_json::presets_json()
    }

    /// Checks every step (JSON array from `expand_plan`) against the agents
    /// (`[{label, host, addresses, limits}]`, agent 0 serving, agent 1
    /// driving) before anything runs; throws with the first refusal.
    #[wasm_bindgen]
    pub fn check_steps(steps_json: &str, agents_json: &str) -> Result<(), JsError> {
        let steps: Vec<meshperf_protocol::plan::Step> = serde_json::from_str(steps_json)
            .and_then(serde_json::from_value)
            .map_err(|e| JsError::new(&format!("not a list of plan steps: {e}")))?;
        let agents = agent_refs(agents_json)?;
        for s in &steps {
            meshperf_protocol::driver::check_step(s, 0, agents.len().saturating_sub(1), &agents)
                .map_err(|e| {
                    let at = if steps.len() > 1 {
                        format!("step {}: ", s.index + 1)
                    } else {
                        String::new()
                    };
                    JsError::new(&format!("{at}{e}"))
                })?;
        }
        Ok(())
    }

    /// One step run between agents: `meshperf_protocol::driver::StepRun`
    /// (the step driver `meshperf run` uses natively) for the page. The page
    /// owns the WebSockets: it sends the requests the driver returns (JSON
    /// arrays of `{agent, request}`, `request.id` 0 for the connection to
    /// number) and hands it every reply, event, sample frame and closed
    /// socket of the agents taking part. Samples stay here until `result`.
    #[wasm_bindgen]
    pub struct StepDriver {
        run: meshperf_protocol::driver::StepRun,
        first: Option<meshperf_protocol::driver::Outgoing>,
        samples: Vec<meshperf_protocol::result::Series>,
    }

    // JSON is written through a `Value` here as in permalink.rs and plans.rs
    // (the same text as `to_string`): one serialiser per type in the module.
    // It is read as a `Value` first, as `result::load` reads results and
    // plans.rs plans: one deserialiser per type (a key written twice then
    // counts once, the last, instead of being refused).
    fn outgoing(list: Vec<meshperf_protocol::driver::Outgoing>) -> String {
        serde_json::to_value(list).map_or_else(|_| "[]".into(), |v| v.to_string())
    }

    fn event(json: &str) -> Option<meshperf_protocol::msg::Event> {
        serde_json::from_str(json)
            .ok()
            .and_then(|v| meshperf_protocol::msg::Event::for_step(&v))
    }

    #[wasm_bindgen]
    impl StepDriver {
        /// `step_json`: one step of `expand_plan`; `server`/`client`: indices
        /// into `agents_json` (`[{label, host, addresses}]`); Unix kinds run
        /// both ends on `server`. Throws when the step cannot run there.
        #[wasm_bindgen(constructor)]
        pub fn new(
            step_json: &str,
            test_id: u32,
            server: usize,
            client: usize,
            agents_json: &str,
            started_unix: f64,
        ) -> Result<StepDriver, JsError> {
            let step = serde_json::from_str(step_json)
                .and_then(serde_json::from_value)
                .map_err(|e| JsError::new(&format!("not a plan step: {e}")))?;
            let agents = agent_refs(agents_json)?;
            let (run, first) = meshperf_protocol::driver::StepRun::new(
                step,
                test_id,
                server,
                client,
                &agents,
                started_unix,
            )
            .map_err(|e| JsError::new(&e))?;
            Ok(StepDriver {
                run,
                first: Some(first),
                samples: Vec::new(),
            })
        }

        /// The first requests (the `prepare`), once.
        pub fn begin(&mut self) -> String {
            outgoing(self.first.take().into_iter().collect())
        }

        /// The reply of `agent` to the last request sent to it.
        pub fn reply(&mut self, agent: usize, msg_json: &str) -> String {
            match event(msg_json) {
                Some(e) => outgoing(self.run.on_reply(agent, &e)),
                None => "[]".into(),
            }
        }

        /// An event (a text message without a request id) from `agent`.
        pub fn event(&mut self, agent: usize, msg_json: &str) -> String {
            match event(msg_json) {
                Some(e) => outgoing(self.run.on_event(agent, &e)),
                None => "[]".into(),
            }
        }

        /// A binary sample frame; false if it is another test's. Throws on a
        /// damaged frame.
        pub fn frame(&mut self, bytes: &[u8]) -> Result<bool, JsError> {
            self.run
                .on_frame(bytes)
                .map_err(|e| JsError::new(&e.to_string()))
        }

        /// `agent`'s socket closed.
        pub fn closed(&mut self, agent: usize) -> String {
            outgoing(self.run.on_closed(agent))
        }

        /// Stops the step (the user asked).
        pub fn cancel(&mut self) -> String {
            outgoing(self.run.cancel())
        }

        /// Ends a step whose agents did not confirm a cancel in time.
        pub fn abandon(&mut self, why: &str) {
            self.run.abandon(why)
        }

        pub fn done(&self) -> bool {
            self.run.is_done()
        }

        pub fn cancelling(&self) -> bool {
            self.run.is_cancelling()
        }

        /// Where the step waits in an agent's queue (`waiting behind 2
        /// tests on agent B, about 12 s`), while it does.
        pub fn waiting(&self) -> Option<String> {
            self.run.waiting().map(|w| w.text())
        }

        /// An agent refused the step as busy with another test.
        pub fn refused_busy(&self) -> bool {
            self.run.refused_busy()
        }

        pub fn progress(&self) -> f64 {
            self.run.progress()
        }

        /// The step's result JSON; each series' `values` is empty here and
        /// comes from `series_values(i)` (in the same order).
        pub fn result(&mut self, wall_seconds: f64) -> String {
            let r = self.run.result(wall_seconds);
            self.split(r)
        }

        /// As `result`, for a step the user cancelled while it ran: kept
        /// as partial when its samples came back (the summary they give,
        /// `"partial": true`, the error saying how far it got), as
        /// `meshperf run` keeps a step Ctrl-C cut short
        /// (`meshperf_protocol::partial`); else as `result` has it.
        pub fn cut_short(&mut self, wall_seconds: f64) -> String {
            let r = self.run.result(wall_seconds);
            let fraction = self.run.progress();
            let r = match r.error {
                Some(_) => {
                    meshperf_protocol::partial::partial(r.clone(), fraction, "Cancel pressed")
                        .unwrap_or(r)
                }
                None => r,
            };
            self.split(r)
        }

        fn split(&mut self, mut r: meshperf_protocol::result::StepResult) -> String {
            self.samples = std::mem::take(&mut r.samples);
            r.samples = self
                .samples
                .iter()
                .map(|s| meshperf_protocol::result::Series {
                    role: s.role,
                    kind: s.kind,
                    stream: s.stream,
                    values: Vec::new(),
                })
                .collect();
            serde_json::to_value(r).map_or_else(|_| "null".into(), |v| v.to_string())
        }

        /// The values of series `i` of the last `result`, as doubles (exact
        /// below 2^53: bytes, ns and counts).
        pub fn series_values(&self, i: usize) -> Vec<f64> {
            self.samples
                .get(i)
                .map(|s| s.values.iter().map(|&v| v as f64).collect())
                .unwrap_or_default()
        }
    }

    /// The matrix's schedule (`meshperf_protocol::matrix::Schedule`, the one
    /// `meshperf run --matrix` follows): `next(now_s)` gives JSON
    /// `{"round": [{server, client}]}` (run these at once), `{"wait": s}`
    /// or `"done"`; `ended(server, client, busy, now_s)` after each pair,
    /// which returns why the pair fails when an agent stayed busy over every
    /// try (else undefined); `will_retry` says a busy pair comes again.
    /// Times: seconds on one monotonic clock (performance.now() / 1000).
    #[wasm_bindgen]
    pub struct MatrixSchedule {
        inner: meshperf_protocol::matrix::Schedule,
    }

    #[wasm_bindgen]
    impl MatrixSchedule {
        /// `n` agents; `serial`: one pair at a time; `both_ways`: one test
        /// per unordered pair (see `matrix_both_ways`).
        #[wasm_bindgen(constructor)]
        pub fn new(n: usize, serial: bool, both_ways: bool) -> MatrixSchedule {
            MatrixSchedule {
                inner: meshperf_protocol::matrix::Schedule::new(n, serial, both_ways),
            }
        }

        pub fn pairs(&self) -> usize {
            self.inner.pairs()
        }

        pub fn planned_rounds(&self) -> usize {
            self.inner.planned_rounds()
        }

        pub fn next(&mut self, now_s: f64) -> String {
            serde_json::to_value(self.inner.next(now_s))
                .map_or_else(|_| "\"done\"".into(), |v| v.to_string())
        }

        pub fn ended(
            &mut self,
            server: usize,
            client: usize,
            busy: bool,
            now_s: f64,
        ) -> Option<String> {
            use meshperf_protocol::matrix::{Outcome, Pair};
            let outcome = if busy { Outcome::Busy } else { Outcome::Ended };
            self.inner.ended(Pair { server, client }, outcome, now_s)
        }

        pub fn will_retry(&self, server: usize, client: usize) -> bool {
            self.inner
                .will_retry(meshperf_protocol::matrix::Pair { server, client })
        }
    }

    fn agent_refs(agents_json: &str) -> Result<Vec<meshperf_protocol::driver::AgentRef>, JsError> {
        serde_json::from_str(agents_json)
            .and_then(serde_json::from_value)
            .map_err(|e| JsError::new(&format!("not an agent list: {e}")))
    }

    /// A matrix's agents checked before any traffic (two or more, none
    /// listed twice or reached under two names, each runs `kind`): throws
    /// the reason (`meshperf_protocol::matrix::check_agents`).
    #[wasm_bindgen]
    pub fn matrix_check_agents(agents_json: &str, kind: &str) -> Result<(), JsError> {
        let k = meshperf_protocol::params::Kind::from_name(kind)
            .ok_or_else(|| JsError::new(&format!("unknown test kind {kind:?}")))?;
        meshperf_protocol::matrix::check_agents(&agent_refs(agents_json)?, k)
            .map_err(|e| JsError::new(&e))
    }

    /// The limits that differ between the agents, strictest first: a JSON
    /// array of lines (`meshperf_protocol::matrix::strictest`).
    #[wasm_bindgen]
    pub fn matrix_strictest(agents_json: &str) -> Result<String, JsError> {
        let lines = meshperf_protocol::matrix::strictest(&agent_refs(agents_json)?);
        Ok(serde_json::Value::from(lines).to_string())
    }

    /// One test per unordered pair fills both cells: the step (JSON of a
    /// plan step) measures both ways at once.
    #[wasm_bindgen]
    pub fn matrix_both_ways(step_json: &str) -> Result<bool, JsError> {
        let v: serde_json::Value = serde_json::from_str(step_json)
            .map_err(|e| JsError::new(&format!("not a plan step: {e}")))?;
        let kind = v["kind"]
            .as_str()
            .and_then(meshperf_protocol::params::Kind::from_name)
            .ok_or_else(|| JsError::new("a plan step without a known kind"))?;
        let params = v["params"].as_object().cloned().unwrap_or_default();
        Ok(meshperf_protocol::matrix::both_ways(kind, &params))
    }
}

/// The reading half (feature `view`; scripts/build.sh's `meshperf_view`
/// build): what a result view, a link and an export need (permalinks, CSV,
/// the matrix's cells, and below latency under load's card, verdict and
/// lanes and the link line), loaded when a result is shown. Apart from the
/// run half so that neither carries the other's serde types: each of the
/// two is under the 150 KB gzip the page keeps to (docs/performance.md).
#[cfg(feature = "view")]
mod view {
    use wasm_bindgen::prelude::*;

    /// The result JSON `result_json` (any result version) as permalink text, to
    /// go after `#r=`. Raw samples when the link stays under 60 000 characters,
    /// else histograms of the large series (the decoded result then says
    /// `samples_replaced: true`). Throws with a one-line message.
    #[wasm_bindgen]
    pub fn permalink_encode(result_json: &str) -> Result<String, JsError> {
        meshperf_protocol::permalink::encode_json(result_json)
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// The result JSON (current version) carried by permalink text (what follows
    /// `#r=`; a whole URL is accepted too). Throws with a one-line message on a
    /// truncated, damaged or newer link.
    #[wasm_bindgen]
    pub fn permalink_decode(text: &str) -> Result<String, JsError> {
        meshperf_protocol::permalink::decode_json(text).map_err(|e| JsError::new(&e.to_string()))
    }

    /// The whole run as `;`-separated CSV, one row per step (the columns of
    /// `meshperf run --csv`).
    #[wasm_bindgen]
    pub fn result_csv(result_json: &str) -> Result<String, JsError> {
        let r = meshperf_protocol::result::load(result_json)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(meshperf_protocol::export::csv(&r))
    }

    /// The cells a matrix step fills (`Metric::cells`): JSON
    /// `[[row, column, value or null]]`, row the sending agent.
    #[wasm_bindgen]
    pub fn matrix_cells(step_json: &str, metric_name: &str) -> Result<String, JsError> {
        let metric = metric_named(metric_name)?;
        let step: meshperf_protocol::result::StepResult = serde_json::from_str(step_json)
            .and_then(serde_json::from_value)
            .map_err(|e| JsError::new(&format!("not a step result: {e}")))?;
        Ok(serde_json::to_value(metric.cells(&step))
            .map_or_else(|_| "[]".into(), |v| v.to_string()))
    }

    /// The headline figure `metric_name` (gbps, rtt_p50, rtt_p99, loss_pct, added_rtt, tps, hops, path_mtu, marks_changed)
    /// of one step result (JSON; `samples` may be empty): undefined when the
    /// step failed or has no such figure. Throws on an unknown metric or a
    /// step that is not a step result.
    #[wasm_bindgen]
    pub fn matrix_metric(step_json: &str, metric_name: &str) -> Result<Option<f64>, JsError> {
        let metric = metric_named(metric_name)?;
        let step: meshperf_protocol::result::StepResult = serde_json::from_str(step_json)
            .and_then(serde_json::from_value)
            .map_err(|e| JsError::new(&format!("not a step result: {e}")))?;
        Ok(metric.of(&step))
    }

    /// The metric a `kind`'s matrix shows unless asked for another.
    #[wasm_bindgen]
    pub fn matrix_default_metric(kind: &str) -> Result<String, JsError> {
        let k = meshperf_protocol::params::Kind::from_name(kind)
            .ok_or_else(|| JsError::new(&format!("unknown test kind {kind:?}")))?;
        Ok(meshperf_protocol::matrix::Metric::default_for(k)
            .name()
            .into())
    }

    /// Every metric as JSON `[{name, label}]` (label: what it is, with its unit).
    #[wasm_bindgen]
    pub fn matrix_metrics() -> String {
        let list: Vec<serde_json::Value> = meshperf_protocol::matrix::Metric::ALL
            .iter()
            .map(|m| serde_json::json!({"name": m.name(), "label": m.label()}))
            .collect();
        serde_json::Value::from(list).to_string()
    }

    fn metric_named(name: &str) -> Result<meshperf_protocol::matrix::Metric, JsError> {
        use meshperf_protocol::matrix::Metric;
        Metric::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            JsError::new(&format!(
                "unknown metric {name:?}: known: {}",
                known.join(", ")
            ))
        })
    }
}

/// The answered probes of `lul_lanes`.
#[cfg(feature = "view")]
fn probes<'a>(
    phase: &'a [u8],
    t1: &'a [f64],
    t2: &'a [f64],
    t3: &'a [f64],
    t4: &'a [f64],
) -> meshperf_stats::lul::Probes<'a> {
    meshperf_stats::lul::Probes {
        phase,
        t1,
        t2,
        t3,
        t4,
    }
}

/// The summary card of a `latency_under_load` driving side's summary (JSON
/// in, JSON out: protocol/src/lul_card.rs, the rules `meshperf run`'s table
/// follows): `{verdict, sections: [{title, figures: [{key, label, from, scale, value,
/// unit, text, basis, uncertain}]}], clock, complete, note}`. Throws on
/// another kind's summary.
#[cfg(feature = "view")]
#[wasm_bindgen]
pub fn lul_card(summary_json: &str) -> Result<String, JsError> {
    meshperf_protocol::lul_card::card_json(summary_json).map_err(|e| JsError::new(&e))
}

/// The verdict of a `latency_under_load` driving side's summary (JSON in,
/// JSON out: protocol/src/verdict.rs, the sentence `meshperf run` prints):
/// `{grade, sentence, phases: [{phase, added_ms, uncertainty_ms, none,
/// up_ms, down_ms, grade}]}`, for the matrix's tooltip. Throws on another
/// kind's summary.
#[cfg(feature = "view")]
#[wasm_bindgen]
pub fn lul_verdict(summary_json: &str) -> Result<String, JsError> {
    meshperf_protocol::verdict::lul_json(summary_json).map_err(|e| JsError::new(&e))
}

/// What limited a `tcp_stream` step (JSON in, JSON out:
/// protocol/src/verdict/tcp.rs, the sentence `meshperf run` prints):
/// `{limit, share, sentence}`, or `null` for a step without TCP_INFO or
/// of another kind; for the step's card and the matrix's tooltip.
#[cfg(feature = "view")]
#[wasm_bindgen]
pub fn tcp_verdict(step_json: &str) -> Result<String, JsError> {
    meshperf_protocol::verdict::tcp::step_json(step_json).map_err(|e| JsError::new(&e))
}

/// What a throughput or request/response step measured against what its
/// agents' links allow (protocol/src/link.rs, the line `meshperf run`
/// prints): the step as JSON in, a JSON string or `null` out.
#[cfg(feature = "view")]
#[wasm_bindgen]
pub fn link_line(step_json: &str) -> Result<String, JsError> {
    meshperf_protocol::link::line_json(step_json).map_err(|e| JsError::new(&e))
}

/// What a step's sides shared their agents with (protocol/src/result.rs,
/// the lines `meshperf run` prints: `shared agent B with 1 other test
/// (tcp_rr) for 2.3 of 3.0 s`): the step as JSON and the two agents' names
/// in, a JSON list of lines out (empty when it ran alone).
#[cfg(feature = "view")]
#[wasm_bindgen]
pub fn shared_marks(step_json: &str, server: &str, client: &str) -> Result<String, JsError> {
    let step: meshperf_protocol::result::StepResult =
        serde_json::from_str(step_json).map_err(|e| JsError::new(&format!("not a step: {e}")))?;
    let marks = meshperf_protocol::result::shared_marks(&step, server, client);
    Ok(serde_json::to_string(&marks).expect("strings serialize"))
}

/// The latency lanes of the answered probes (`meshperf_stats::lul_lanes`):
/// arguments as `lul_analyze`, plus the sequence numbers `seq`, the probes
/// `sent` and `probe_ms`. Returns Float64Arrays `t_s`, `rtt_ms`, `up_ms`,
/// `down_ms`, `lost_t_s` and four-element `start_s`, `end_s` (per phase;
/// NaN without probes).
#[cfg(feature = "view")]
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(unchecked_return_type = "LulLanes")]
pub fn lul_lanes(
    phase: &[u8],
    seq: &[f64],
    t1: &[f64],
    t2: &[f64],
    t3: &[f64],
    t4: &[f64],
    synced: bool,
    sent: f64,
    probe_ms: f64,
) -> Result<Object, JsError> {
    let p = probes(phase, t1, t2, t3, t4);
    let l =
        meshperf_stats::lul_lanes::lanes(&p, seq, synced, sent as u64, probe_ms).map_err(js_err)?;
    Ok(columns(&[
        ("t_s", &l.t_s),
        ("rtt_ms", &l.rtt_ms),
        ("up_ms", &l.up_ms),
        ("down_ms", &l.down_ms),
        ("lost_t_s", &l.lost_t_s),
        ("start_s", &l.start_s),
        ("end_s", &l.end_s),
    ]))
}
