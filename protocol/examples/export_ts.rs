//! Writes TypeScript declarations of the wire shapes (control messages,
//! agent info and limits, plans, results, the step driver's agent list)
//! from the Rust types, with ts-rs, one file per type:
//!
//! ```text
//! cargo run -q -p meshperf-protocol --features ts --example export_ts -- web/src/lib/generated/wire
//! ```
//!
//! JSON numbers are `number` in TypeScript, u64 included (bytes, ns and
//! counts stay below 2^53). scripts/build.sh and web/package.json's `wire`
//! script run it before anything reads the files; they are generated,
//! never committed.

use meshperf_protocol::driver::{AgentRef, Outgoing};
use meshperf_protocol::matrix::Metric;
use meshperf_protocol::msg::{Event, Request};
use meshperf_protocol::result::RunResult;
use ts_rs::{Config, TS};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: export_ts OUT_DIR (e.g. web/src/lib/generated/wire)");
    let cfg = Config::new()
        .with_large_int("number")
        .with_out_dir(&dir)
        .with_import_extension(Some("ts"));
    let written = [
        Request::export_all(&cfg),
        Event::export_all(&cfg),
        RunResult::export_all(&cfg),
        AgentRef::export_all(&cfg),
        Outgoing::export_all(&cfg),
        Metric::export_all(&cfg),
    ];
    for r in written {
        if let Err(e) = r {
            eprintln!("export_ts: cannot write {dir}: {e}");
            std::process::exit(1);
        }
    }
}
