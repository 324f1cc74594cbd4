//! Compares the statistics core with independently computed values in
//! `fixtures/reference.json` (written by `reference.py`: exact fractions,
//! numpy, scipy). Regenerate with `python3 stats/tests/reference.py`.

use meshperf_stats::fit::{confidence, linfit};
use meshperf_stats::hist::{cdf, cdf_unsorted, Histogram, Upper};
use meshperf_stats::stats::Summary;
use meshperf_stats::udp::analyze;
use serde_json::Value;

/// Relative tolerance for everything computed in floating point.
const REL: f64 = 1e-12;

/// 64-bit MMIX LCG, top 53 bits as a double in [0, 1); same as `lcg` in
/// reference.py.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn generate(spec: &Value) -> Vec<f64> {
    let mut g = Lcg(spec["seed"].as_u64().unwrap());
    let n = spec["n"].as_u64().unwrap() as usize;
    let kind = spec["kind"].as_str().unwrap();
    (0..n)
        .map(|_| {
            let u = g.next();
            match kind {
                "cube" => 20.0 + 1000.0 * u * u * u,
                "large" => 1e12 + 1000.0 * u,
                "uniform" => 10.0 + u,
                k => panic!("unknown kind {k}"),
            }
        })
        .collect()
}

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read fixture"))
        .expect("parse fixture")
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn dataset(fx: &Value, name: &str) -> Vec<f64> {
    let d = &fx["datasets"][name];
    if d["values"].is_array() {
        f64s(&d["values"])
    } else {
        generate(&d["lcg"])
    }
}

#[track_caller]
fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
    let ok = got == want || (got - want).abs() <= rel * want.abs();
    assert!(
        ok,
        "{what}: got {got:e}, want {want:e} (rel err {:e})",
        (got - want).abs() / want.abs()
    );
}

/// skew and kurtosis can be near 0, so they get an absolute floor.
fn check_summary(ctx: &str, s: &Summary, want: &Value) {
    for (key, got) in s.fields() {
        let w = want[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{ctx}: fixture lacks {key}"));
        if key == "skew" || key == "kurtosis" {
            assert!(
                (got - w).abs() <= 1e-10 * w.abs().max(1.0),
                "{ctx} {key}: got {got:e}, want {w:e}"
            );
        } else {
            assert_close(&format!("{ctx} {key}"), got, w, REL);
        }
    }
}

#[test]
fn generator_matches_python() {
    let fx = fixture();
    for (name, d) in fx["datasets"].as_object().unwrap() {
        let xs = dataset(&fx, name);
        assert_eq!(
            xs[..xs.len().min(3)],
            f64s(&d["check"]["first"])[..],
            "{name} first values"
        );
        let sum: f64 = xs.iter().sum();
        assert_close(
            &format!("{name} sum"),
            sum,
            d["check"]["sum"].as_f64().unwrap(),
            1e-13,
        );
    }
}

#[test]
fn summaries_match_reference() {
    let fx = fixture();
    for name in ["n1", "all_equal", "small_skewed", "large_1e12", "lcg_10k"] {
        let xs = dataset(&fx, name);
        let want = &fx["datasets"][name]["summary"];
        check_summary(name, &Summary::new(&xs).unwrap(), want);
        let mut sorted = xs.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        check_summary(
            &format!("{name} (sorted)"),
            &Summary::from_sorted(&sorted).unwrap(),
            want,
        );
    }
}

#[test]
fn histograms_match_reference() {
    let fx = fixture();
    for h in fx["histograms"].as_array().unwrap() {
        let xs = dataset(&fx, h["dataset"].as_str().unwrap());
        let upper = match h["high"].as_f64() {
            Some(high) => Upper::High(high),
            None => Upper::Bins(h["bins"].as_u64().unwrap() as usize),
        };
        let got = Histogram::new(
            &xs,
            h["bin_width"].as_f64().unwrap(),
            h["low"].as_f64().unwrap(),
            upper,
        )
        .unwrap();
        let want = &h["expected"];
        let counts: Vec<u32> = u64s(&want["counts"])
            .into_iter()
            .map(|c| c as u32)
            .collect();
        assert_eq!(got.counts, counts, "{h}");
        assert_eq!(got.underflow, want["underflow"].as_u64().unwrap());
        assert_eq!(got.overflow, want["overflow"].as_u64().unwrap());
        assert_eq!(got.total(), xs.len() as u64);
    }
}

#[test]
fn cdf_matches_reference() {
    let fx = fixture();
    let c = &fx["cdf"];
    let xs = dataset(&fx, c["dataset"].as_str().unwrap());
    let max_points = c["max_points"].as_u64().unwrap() as usize;
    let (x, f) = cdf_unsorted(&xs, max_points).unwrap();
    assert_eq!(x, f64s(&c["x"]));
    assert_eq!(f, f64s(&c["fraction"]));
    let mut sorted = xs.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    assert_eq!(cdf(&sorted, max_points).unwrap(), (x, f));
}

#[test]
fn linfit_matches_numpy_polyfit() {
    let fx = fixture();
    for (i, c) in fx["linfit"].as_array().unwrap().iter().enumerate() {
        let f = linfit(&f64s(&c["x"]), &f64s(&c["y"])).unwrap();
        for (key, got) in [("slope", f.slope), ("intercept", f.intercept), ("r2", f.r2)] {
            assert_close(
                &format!("linfit {i} {key}"),
                got,
                c[key].as_f64().unwrap(),
                1e-10,
            );
        }
    }
}

#[test]
fn confidence_matches_scipy_t() {
    let fx = fixture();
    for (i, c) in fx["confidence"].as_array().unwrap().iter().enumerate() {
        let got = confidence(&f64s(&c["values"])).unwrap();
        assert_close(
            &format!("conf {i} mean"),
            got.mean,
            c["mean"].as_f64().unwrap(),
            REL,
        );
        assert_close(
            &format!("conf {i} sd"),
            got.sd,
            c["sd"].as_f64().unwrap(),
            1e-11,
        );
        // df 4 is an exact table entry; df 39 is interpolated in 1/df.
        assert_close(
            &format!("conf {i} half_width"),
            got.half_width,
            c["half_width"].as_f64().unwrap(),
            1e-4,
        );
    }
}

#[test]
fn udp_analysis_matches_reference() {
    let fx = fixture();
    for c in fx["udp"].as_array().unwrap() {
        let send = u64s(&c["send_ns"]);
        let a = analyze(
            &u64s(&c["seq"]),
            &u64s(&c["arrival_ns"]),
            c["sent"].as_u64(),
            Some(&send),
        )
        .unwrap();
        let w = &c["expected"];
        let counts = [
            ("packets", a.packets),
            ("expected", a.expected),
            ("received", a.received),
            ("lost", a.lost),
            ("out_of_order", a.out_of_order),
            ("duplicates", a.duplicates),
        ];
        for (key, got) in counts {
            assert_eq!(got, w[key].as_u64().unwrap(), "udp {key}");
        }
        assert_close(
            "udp recv_seconds",
            a.recv_seconds,
            w["recv_seconds"].as_f64().unwrap(),
            REL,
        );
        assert_close(
            "udp jitter_us",
            a.jitter_us.unwrap(),
            w["jitter_us"].as_f64().unwrap(),
            1e-12,
        );
        check_summary(
            "udp interarrival",
            &a.interarrival_us.unwrap(),
            &w["interarrival_us"],
        );
    }
}
