//! Prints how long the statistics core takes on 10 M samples (native).
//! Run: `cargo run -p meshperf-stats --release --example bench_summary`.
//! A benchmark, not a test: it prints figures and never fails.

use std::time::Instant;

use meshperf_stats::hist::{Histogram, Upper};
use meshperf_stats::series::decimate_minmax;
use meshperf_stats::stats::Summary;

fn main() {
    let n = 10_000_000;
    let mut s: u64 = 12345;
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            20.0 + 1000.0 * u * u * u
        })
        .collect();
    for _ in 0..3 {
        let t = Instant::now();
        let sum = Summary::new(&v).unwrap();
        println!(
            "summary of {n}: {:.1} ms (p99 {:.3})",
            t.elapsed().as_secs_f64() * 1e3,
            sum.p99
        );
    }
    let t = Instant::now();
    let mut sorted = v.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    println!(
        "full sort_unstable_by(total_cmp): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    let h = Histogram::new(&v, 1.0, 0.0, Upper::High(1100.0)).unwrap();
    println!(
        "histogram 1100 bins: {:.1} ms ({} bins)",
        t.elapsed().as_secs_f64() * 1e3,
        h.counts.len()
    );
    let t = Instant::now();
    let d = decimate_minmax(None, &v, 2000).unwrap();
    println!(
        "min/max decimate to 2000: {:.1} ms ({} points)",
        t.elapsed().as_secs_f64() * 1e3,
        d.x.len()
    );
}
