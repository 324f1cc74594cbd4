//! What a test side shared its agent with (issue 42): the other tests
//! that ran beside it, filled in by the control loop as tests start and
//! end, and read by the side's engine thread as it reports (the `shared`
//! key [`crate::engine::TestCtx::report`] adds to its summary).

use meshperf_protocol::params::Kind;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One other test that ran beside a test side here.
struct Overlap {
    kind: Kind,
    from: Instant,
    to: Option<Instant>,
    /// The other test's bytes when the overlap began, and its counter.
    bytes_from: u64,
    moved: Arc<AtomicU64>,
    bytes_to: u64,
}

/// What a test side shared this agent with, filled in by the control loop
/// and read by the side's engine thread as it reports (`shared` in its
/// summary).
#[derive(Default)]
pub struct SharedLog {
    started: Mutex<Option<Instant>>,
    others: Mutex<HashMap<u32, Overlap>>,
}

impl SharedLog {
    /// The summary's `shared` key: the other tests (kind, seconds of
    /// overlap, bytes they moved meanwhile), the seconds any other test ran
    /// beside this side and the side's own seconds so far; None when it
    /// ran alone.
    pub fn summary(&self) -> Option<serde_json::Value> {
        let now = Instant::now();
        let start = (*self.started.lock().ok()?)?;
        let others = self.others.lock().ok()?;
        if others.is_empty() {
            return None;
        }
        let mut spans: Vec<(Instant, Instant)> = Vec::new();
        let mut tests: Vec<serde_json::Value> = others
            .iter()
            .map(|(id, o)| {
                let from = o.from.max(start);
                let to = o.to.unwrap_or(now).max(from);
                spans.push((from, to));
                let end = if o.to.is_some() {
                    o.bytes_to
                } else {
                    o.moved.load(Ordering::Relaxed)
                };
                // Unknown (null) when that side sent no progress (a
                // tcp_rr responder sends none).
                let bytes = (end != NO_PROGRESS).then(|| end.saturating_sub(o.bytes_from.min(end)));
                serde_json::json!({
                    "test_id": id,
                    "kind": o.kind.name(),
                    "overlap_s": round3((to - from).as_secs_f64()),
                    "bytes": bytes,
                })
            })
            .collect();
        tests.sort_by(|a, b| a["test_id"].as_u64().cmp(&b["test_id"].as_u64()));
        spans.sort();
        let (mut union, mut end) = (0.0, start);
        for (f, t) in spans {
            let f = f.max(end);
            if t > f {
                union += (t - f).as_secs_f64();
                end = t;
            }
        }
        Some(serde_json::json!({
            "tests": tests,
            "overlap_s": round3(union),
            "of_s": round3((now - start).as_secs_f64()),
        }))
    }
}

/// What a side's `moved` holds until its first progress event.
pub const NO_PROGRESS: u64 = u64::MAX;

/// A side's `moved` counter, before any progress.
pub fn no_progress() -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(NO_PROGRESS))
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl SharedLog {
    /// The side starts now.
    pub fn begin(&self) {
        if let Ok(mut s) = self.started.lock() {
            s.get_or_insert(Instant::now());
        }
    }

    /// Test `test_id` (of `kind`, moving `moved` bytes so far) runs beside
    /// this side from now.
    pub fn beside(&self, test_id: u32, kind: Kind, moved: &Arc<AtomicU64>) {
        if let Ok(mut o) = self.others.lock() {
            o.entry(test_id).or_insert_with(|| Overlap {
                kind,
                from: Instant::now(),
                to: None,
                bytes_from: match moved.load(Ordering::Relaxed) {
                    NO_PROGRESS => 0,
                    b => b,
                },
                moved: moved.clone(),
                bytes_to: 0,
            });
        }
    }

    /// Test `test_id` ended here.
    pub fn ended(&self, test_id: u32) {
        if let Ok(mut o) = self.others.lock() {
            if let Some(o) = o.get_mut(&test_id).filter(|o| o.to.is_none()) {
                o.to = Some(Instant::now());
                o.bytes_to = o.moved.load(Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_alone_has_no_shared_key_and_one_beside_another_names_it() {
        let log = SharedLog::default();
        log.begin();
        assert!(log.summary().is_none());
        let moved = Arc::new(AtomicU64::new(100));
        log.beside(7, Kind::TcpRr, &moved);
        moved.store(1100, Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(20));
        log.ended(7);
        moved.store(5000, Ordering::Relaxed);
        let s = log.summary().unwrap();
        assert_eq!(s["tests"][0]["test_id"], 7);
        assert_eq!(s["tests"][0]["kind"], "tcp_rr");
        assert_eq!(s["tests"][0]["bytes"], 1000);
        // A side that sent no progress moved bytes nobody counted: null.
        let quiet = no_progress();
        log.beside(8, Kind::TcpRr, &quiet);
        let s = log.summary().unwrap();
        assert!(s["tests"][1]["bytes"].is_null(), "{s}");
        let o = s["overlap_s"].as_f64().unwrap();
        assert!(o >= 0.019 && o <= s["of_s"].as_f64().unwrap(), "{s}");
    }
}
