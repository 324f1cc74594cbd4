//! The lines of `meshperf run --json-stream`: one JSON object per line, as
//! iperf3's `--json-stream` writes them (`{"event": NAME, "data": {...}}`),
//! so a long run can be watched by another program while it runs:
//!
//! ```text
//! {"event":"start","data":{"format":"meshperf-stream","version":1,"plan":{...},"agents":[...],"steps":20,"interval_s":1.0}}
//! {"event":"interval","data":{"step":0,"point":[["msg_bytes",1048576]],"repeat":0,"start_s":0.0,"end_s":1.0,"streams":[{"stream":0,"bytes":...,"bits_per_second":...}],"sum":{"bytes":...,"bits_per_second":...}}}
//! {"event":"step","data":{...one step of the result file, without "samples"...}}
//! {"event":"end","data":{"steps":20,"failed":0,"interrupted":false,"exit":0}}
//! ```
//!
//! `interval` lines come from the receiving side's `interval_bytes` samples
//! of stream steps (`tcp_stream`, `unix_stream`) as they arrive: an interval
//! is written once every stream's samples reach its end, the rest when the
//! step ends (the last one ends when the data did, its rate over that
//! time: `"end_s":10.0412`, not 10.1 with a rate far too low). They are the
//! intervals `meshperf run -i` prints (which joins a last piece shorter
//! than a tenth of an interval to the one before), and their bytes add up
//! to the step's samples in the result file. A `step` line is the result file's step (the same
//! `summary`, `sides`, `error`), without its raw samples.

use crate::frame::SampleKind;
use crate::matrix::Pair;
use crate::params::Kind;
use crate::plan::Plan;
use crate::result::{primary_role, Series, StepResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `format` of the start line.
pub const FORMAT: &str = "meshperf-stream";
/// The version this build writes.
pub const VERSION: u32 = 1;

/// One line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The first line: what runs, between which agents.
    Start(Box<StreamStart>),
    /// One interval of a stream step.
    Interval(IntervalReport),
    /// A step ended: the result file's step without its samples.
    Step(Box<StepResult>),
    /// The last line.
    End(StreamEnd),
}

impl StreamEvent {
    /// The line, without its newline.
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("stream events serialize")
    }
}

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamStart {
    /// [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    pub created_unix: f64,
    pub plan: Plan,
    /// `hello` of each agent, as in the result file.
    pub agents: Vec<Value>,
    /// Steps to run (pairs, in a matrix).
    pub steps: usize,
    /// Length of the `interval` lines' intervals (seconds).
    pub interval_s: f64,
}

/// One interval of a stream step, per stream and summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// The step's `index`.
    pub step: usize,
    /// In a matrix: the agents (as in the result file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<Pair>,
    pub point: Vec<(String, Value)>,
    pub repeat: u32,
    /// From the start of the step's data transfer.
    pub start_s: f64,
    pub end_s: f64,
    pub streams: Vec<IntervalStream>,
    pub sum: IntervalSum,
}

/// One stream's bytes in an interval, as its receiver counted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalStream {
    pub stream: u16,
    pub bytes: u64,
    pub bits_per_second: f64,
}

/// Every stream's bytes in an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSum {
    pub bytes: u64,
    pub bits_per_second: f64,
}

/// The last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEnd {
    /// Steps written (`step` lines), a partial one included.
    pub steps: usize,
    /// Of those, steps with an `error`.
    pub failed: usize,
    /// Stopped by Ctrl-C (or SIGTERM).
    pub interrupted: bool,
    /// The exit status `meshperf run` ends with.
    pub exit: u8,
}

/// Cuts one stream step's `interval_bytes` samples into intervals of
/// `per` sample ticks as they arrive, each interval once.
#[derive(Debug, Clone)]
pub struct IntervalCutter {
    step: usize,
    point: Vec<(String, Value)>,
    repeat: u32,
    pair: Option<Pair>,
    params: Map<String, Value>,
    kind: Kind,
    tick_ms: f64,
    per: usize,
    /// Streams the receiving side reports.
    streams: usize,
    /// The first tick not yet written.
    next: usize,
}

impl IntervalCutter {
    /// For a step of `kind` with `params`, intervals of `secs`; `None` for
    /// kinds without interval samples.
    pub fn new(
        kind: Kind,
        step: usize,
        params: &Map<String, Value>,
        point: Vec<(String, Value)>,
        repeat: u32,
        pair: Option<Pair>,
        secs: f64,
    ) -> Option<IntervalCutter> {
        if !matches!(kind, Kind::TcpStream | Kind::UnixStream) {
            return None;
        }
        let num = |name: &str| {
            params.get(name).and_then(Value::as_f64).or_else(|| {
                let s = kind.params().iter().find(|s| s.name == name)?;
                Some(s.default_num() as f64)
            })
        };
        let tick_ms = num("interval_ms").unwrap_or(10.0).max(1.0);
        let both = params.get("direction").and_then(Value::as_str) == Some("both");
        let streams = num("streams").unwrap_or(1.0) as usize * if both { 2 } else { 1 };
        Some(IntervalCutter {
            step,
            point,
            repeat,
            pair,
            params: params.clone(),
            kind,
            tick_ms,
            per: ((secs * 1000.0 / tick_ms).round() as usize).max(1),
            streams,
            next: 0,
        })
    }

    /// The receiving side's interval series of `samples`, by stream.
    fn series<'a>(&self, samples: &'a [Series]) -> Vec<&'a Series> {
        let role = primary_role(self.kind, &self.params);
        let mut v: Vec<&Series> = samples
            .iter()
            .filter(|x| x.role == role && x.kind == SampleKind::IntervalBytes)
            .collect();
        v.sort_by_key(|x| x.stream);
        v
    }

    /// The intervals every stream's samples now cover that were not given yet.
    pub fn ready(&mut self, samples: &[Series]) -> Vec<IntervalReport> {
        let s = self.series(samples);
        if s.len() < self.streams {
            return Vec::new();
        }
        // A stream's last tick so far may be its final, partial one: the
        // agent sends a tick once the next has begun, and the last tick
        // when the stream ends, alike. So a tick is whole here only when
        // another follows it; the last waits for the step's end
        // ([`Self::rest`]), which ends it when the data did (ending it at
        // the tick's end was a race: whole when the receiver's last byte
        // came after the tick boundary, partial when before).
        let have = s.iter().map(|x| x.values.len()).min().unwrap_or(0);
        self.cut(&s, have.saturating_sub(1), None)
    }

    /// At the step's end (`step`, samples and summaries): the intervals not
    /// given yet, the last one ending when the data did (the receiving
    /// side's last byte, [`crate::intervals::data_end_s`]), its rate over
    /// that time, not over a whole interval.
    pub fn rest(&mut self, step: &StepResult) -> Vec<IntervalReport> {
        let s = self.series(&step.samples);
        let ticks = s.iter().map(|x| x.values.len()).max().unwrap_or(0);
        let ids: Vec<u16> = s.iter().map(|x| x.stream).collect();
        let role = primary_role(self.kind, &self.params);
        let end = crate::intervals::data_end_s(step, role, &ids);
        self.cut(&s, ticks, end)
    }

    /// Intervals up to tick `ticks`; with `end` (the step ended, the data
    /// at `end` s), the last one too, however short, ending at `end`.
    fn cut(&mut self, s: &[&Series], ticks: usize, end: Option<f64>) -> Vec<IntervalReport> {
        let last = end.is_some();
        let mut out = Vec::new();
        let tick = |t: usize| t as f64 * self.tick_ms / 1000.0;
        // The data ended inside the last tick.
        let end = end.map(|e| e.clamp(tick(ticks.saturating_sub(1)), tick(ticks)));
        while self.next < ticks && (last || self.next + self.per <= ticks) {
            let (a, b) = (self.next, (self.next + self.per).min(ticks));
            let secs = |t: usize| match end {
                Some(e) if t == ticks && e > tick(a) => e,
                _ => tick(t),
            };
            let rate = |bytes: u64| bytes as f64 * 8.0 / (secs(b) - secs(a));
            let streams: Vec<IntervalStream> = s
                .iter()
                .map(|x| {
                    let bytes = x.values.iter().skip(a).take(b - a).sum();
                    IntervalStream {
                        stream: x.stream,
                        bytes,
                        bits_per_second: rate(bytes),
                    }
                })
                .collect();
            let bytes = streams.iter().map(|x| x.bytes).sum();
            out.push(IntervalReport {
                step: self.step,
                pair: self.pair,
                point: self.point.clone(),
                repeat: self.repeat,
                start_s: secs(a),
                end_s: secs(b),
                streams,
                sum: IntervalSum {
                    bytes,
                    bits_per_second: rate(bytes),
                },
            });
            self.next = b;
        }
        out
    }
}

/// A step line: `s` without its raw samples.
pub fn step_event(s: &StepResult) -> StreamEvent {
    let mut s = s.clone();
    s.samples = Vec::new();
    s.histograms = Vec::new();
    StreamEvent::Step(Box::new(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::Role;
    use serde_json::json;

    fn iv(stream: u16, values: Vec<u64>) -> Series {
        Series {
            role: Role::Server,
            kind: SampleKind::IntervalBytes,
            stream,
            values,
        }
    }

    /// The agent sends a stream's final, partial tick as it sends whole
    /// ones: the last tick so far waits for the next or for the step's end,
    /// so an interval ending there ends when the data did (0.39 s here),
    /// never at the tick's end (runctl's json_stream test caught 0.5 for
    /// data that ended at 0.4994).
    #[test]
    fn a_streams_last_tick_waits_for_the_next_or_the_end() {
        let params = json!({"streams": 1, "interval_ms": 100})
            .as_object()
            .unwrap()
            .clone();
        let mut c = IntervalCutter::new(Kind::TcpStream, 0, &params, vec![], 0, None, 0.2).unwrap();
        let r = c.ready(&[iv(0, vec![5, 5, 5, 5])]);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].start_s, r[0].end_s), (0.0, 0.2));
        let mut end: StepResult = serde_json::from_value(json!({
            "index": 0, "kind": "tcp_stream", "params": params,
            "sides": {"server": {"streams": [{"index": 0, "dir": "recv", "bytes": 20, "seconds": 0.39}]}},
        }))
        .unwrap();
        end.samples = vec![iv(0, vec![5, 5, 5, 5])];
        let rest = c.rest(&end);
        assert_eq!(rest.len(), 1);
        assert_eq!((rest[0].start_s, rest[0].end_s), (0.2, 0.39));
        assert!((rest[0].sum.bits_per_second - 10.0 * 8.0 / 0.19).abs() < 1e-6);
        // With a tick after it, a tick is whole.
        let mut c = IntervalCutter::new(Kind::TcpStream, 0, &params, vec![], 0, None, 0.2).unwrap();
        assert_eq!(c.ready(&[iv(0, vec![5; 5])]).len(), 2);
    }

    #[test]
    fn intervals_are_given_once_when_every_stream_reaches_them_and_the_rest_at_the_end() {
        let params = json!({"streams": 2, "interval_ms": 100})
            .as_object()
            .unwrap()
            .clone();
        let mut c = IntervalCutter::new(Kind::TcpStream, 3, &params, vec![], 0, None, 0.2).unwrap();
        // One stream so far: nothing.
        assert!(c.ready(&[iv(0, vec![1, 2, 3])]).is_empty());
        let r = c.ready(&[iv(1, vec![10, 20, 30, 40, 50]), iv(0, vec![1, 2, 3])]);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].start_s, r[0].end_s), (0.0, 0.2));
        assert_eq!(r[0].streams[0].bytes, 3);
        assert_eq!(r[0].streams[1].bytes, 30);
        assert_eq!(r[0].sum.bytes, 33);
        assert_eq!(r[0].sum.bits_per_second, 33.0 * 8.0 / 0.2);
        // Nothing new until both reach 4 ticks.
        assert!(c
            .ready(&[iv(0, vec![1, 2, 3]), iv(1, vec![10; 9])])
            .is_empty());
        let mut end: StepResult = serde_json::from_value(json!({
            "index": 3, "kind": "tcp_stream", "params": params,
            "sides": {"server": {"streams": [
                {"index": 0, "dir": "recv", "bytes": 15, "seconds": 0.43},
                {"index": 1, "dir": "recv", "bytes": 150, "seconds": 0.41},
            ]}},
        }))
        .unwrap();
        end.samples = vec![iv(0, vec![1, 2, 3, 4, 5]), iv(1, vec![10, 20, 30, 40, 50])];
        let rest = c.rest(&end);
        assert_eq!(rest.len(), 2);
        // The last interval ends with the data, at 0.43 s (tick 4 of 100 ms
        // holds it), and its rate is over those 30 ms, not over 100.
        assert_eq!((rest[1].start_s, rest[1].end_s), (0.4, 0.43));
        assert_eq!(rest[1].sum.bytes, 55);
        assert!((rest[1].sum.bits_per_second - 55.0 * 8.0 / 0.03).abs() < 1e-6);
        assert!((rest[1].streams[0].bits_per_second - 5.0 * 8.0 / 0.03).abs() < 1e-6);
        assert!(c.rest(&end).is_empty(), "each interval once");
        let line = StreamEvent::Interval(rest[1].clone()).line();
        assert!(
            line.starts_with(r#"{"event":"interval","data":{"step":3,"#),
            "{line}"
        );
        let back: StreamEvent = serde_json::from_str(&line).unwrap();
        assert_eq!(back, StreamEvent::Interval(rest[1].clone()));
        // Other kinds have no intervals.
        assert!(IntervalCutter::new(Kind::TcpRr, 0, &params, vec![], 0, None, 1.0).is_none());
    }
}
