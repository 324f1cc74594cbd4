use super::*;
use crate::plan::{Plan, Transport};
use crate::result::{Sides, StepResult};
use serde_json::json;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Roughly normal (sum of four uniforms).
    fn normal(&mut self) -> f64 {
        (0..4).map(|_| self.unit()).sum::<f64>() - 2.0
    }
}

/// Loopback RTTs in ns as this machine shows them: a body around 17 us when
/// both ends share a CPU, a second mode around 70 us (idle wake-ups), and a
/// sparse tail to a few hundred us.
fn loopback_rtts(n: usize, seed: u64) -> Vec<u64> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let p = r.unit();
            let us = if p < 0.62 {
                17.0 + 2.5 * r.normal()
            } else if p < 0.97 {
                70.0 + 6.0 * r.normal()
            } else {
                80.0 + 250.0 * r.unit() * r.unit()
            };
            (us.max(12.0) * 1000.0) as u64 + r.next() % 1000
        })
        .collect()
}

fn hello(host: &str) -> Value {
    json!({"type": "hello", "protocol": 1, "version": "0.1.0", "hostname": host,
        "addresses": ["127.0.0.1", "10.0.2.15 eth0", "fe80::5054:ff:fe12:3456 eth0"],
        "cores": 2, "kernel": "Linux 6.1.0-28-amd64 x86_64",
        "capabilities": ["tcp_stream", "tcp_rr", "udp_stream", "udp_rr", "unix_stream", "unix_rr"]})
}

fn rtt_summary(v: &[u64]) -> Value {
    let us: Vec<f64> = v.iter().map(|&x| x as f64 / 1e3).collect();
    let mut o = Map::new();
    for (k, x) in
        meshperf_stats::stats::Summary::new(&us).map_or([].into(), |s| s.fields().to_vec())
    {
        o.insert(k.into(), json!(x));
    }
    json!({"count": v.len(), "timeouts": 0, "bad": 0, "rtt_us": o})
}

/// A tcp_rr run of `n` RTTs, as `meshperf run --json` writes it.
fn rr_result(n: usize) -> RunResult {
    let plan = Plan::from_json(
        r#"{"kind":"tcp_rr","params":{"req_bytes":64,"resp_bytes":64,"count":10000}}"#,
    )
    .unwrap();
    let mut r = RunResult::new(plan, vec![hello("alpha"), hello("beta")], 1_795_000_123.25);
    let rtts = loopback_rtts(n, 42);
    let params = r.plan.params.clone();
    r.steps.push(StepResult {
        index: 0,
        kind: r.plan.kind,
        params,
        point: vec![],
        repeat: 0,
        transport: Transport::Tcp,
        summary: rtt_summary(&rtts),
        sides: Sides {
            client: Some(rtt_summary(&rtts)),
            server: Some(json!({"count": n, "bytes": n * 64})),
        },
        samples: vec![Series {
            role: Role::Client,
            kind: SampleKind::RttNs,
            stream: 0,
            values: rtts,
        }],
        histograms: vec![],
        error: None,
        started_unix: Some(1_763_800_000.125),
        wall_seconds: Some(0.0375),
        pair: None,
    });
    r
}

/// A two-step tcp_stream sweep with interval bytes, read sizes and TCP_INFO.
fn stream_result() -> RunResult {
    let plan = Plan::from_json(
        r#"{"kind":"tcp_stream","params":{"duration_s":1,"streams":2},"sweep":{"msg_bytes":[1024,65536]}}"#,
    )
    .unwrap();
    let mut r = RunResult::new(plan.clone(), vec![hello("a"), hello("b")], 1.5);
    let mut rng = Rng(7);
    for st in plan.expand().unwrap() {
        let mut samples = Vec::new();
        for stream in 0..2u16 {
            samples.push(Series {
                role: Role::Server,
                kind: SampleKind::IntervalBytes,
                stream,
                values: (0..10)
                    .map(|_| 1_000_000_000 + rng.next() % 50_000_000)
                    .collect(),
            });
            samples.push(Series {
                role: Role::Server,
                kind: SampleKind::ReadBytes,
                stream,
                values: (0..500)
                    .map(|_| [1024, 65536, 131072][rng.next() as usize % 3])
                    .collect(),
            });
        }
        samples.push(Series {
            role: Role::Client,
            kind: SampleKind::TcpRttUs,
            stream: 0,
            values: (0..10).map(|_| 20 + rng.next() % 10).collect(),
        });
        let mut t = 0;
        samples.push(Series {
            role: Role::Server,
            kind: SampleKind::ArrivalNs,
            stream: 0,
            values: (0..300)
                .map(|_| {
                    t += 20_000 + rng.next() % 3_000;
                    t
                })
                .collect(),
        });
        r.steps.push(StepResult {
            index: st.index,
            kind: st.kind,
            params: st.params,
            point: st.point,
            repeat: st.repeat,
            transport: st.transport,
            summary: json!({"bytes": 20_000_000_000u64, "seconds": 1.000_123, "bits_per_second": 1.6e11 / 1.000_123,
                "reads": 1000, "avg_read_bytes": 2e7, "streams": [{"bytes": 1, "reads": 2}], "retransmits": 0,
                "neg": -5, "none": null, "ok": true, "name": "grüße \u{1F600}"}),
            sides: Sides::default(),
            samples,
            histograms: vec![],
            error: if st.index == 1 { Some("agent b: refused".into()) } else { None },
            // As the link format 1 fixture was made (before step times).
            started_unix: None,
            wall_seconds: None,
            pair: None,
        });
    }
    r
}

/// `r` as a link gives it back: times rounded to 100 ns.
fn rounded(r: &RunResult) -> RunResult {
    let mut r = r.clone();
    for s in r.steps.iter_mut().flat_map(|s| &mut s.samples) {
        if is_time(s.kind) {
            s.values.iter_mut().for_each(|v| *v = round_time(*v));
        }
    }
    r
}

#[test]
fn round_trip_gives_equal_numbers() {
    for r in [
        rr_result(10_000),
        stream_result(),
        rr_result(0),
        rr_result(1),
    ] {
        let text = encode(&r).unwrap();
        assert!(text.starts_with("mp"));
        let back = decode(&text).unwrap();
        assert_eq!(back, rounded(&r));
        assert!(!back.samples_replaced);
        // Through the JSON entry points too (what the bindings call).
        let json = serde_json::to_string(&r).unwrap();
        let back = result::load(&decode_json(&encode_json(&json).unwrap()).unwrap()).unwrap();
        assert_eq!(back, rounded(&r));
    }
}

#[test]
fn times_round_to_100_ns_and_other_series_are_exact() {
    assert_eq!(round_time(149), 100);
    assert_eq!(round_time(150), 200);
    assert_eq!(round_time(u64::MAX), u64::MAX / 100 * 100);
    let r = stream_result();
    let back = decode(&encode(&r).unwrap()).unwrap();
    let (a, b) = (&r.steps[0].samples, &back.steps[0].samples);
    assert_eq!(a[0], b[0], "interval bytes are lossless");
    assert_eq!(a[1], b[1], "read sizes are lossless");
    let arrival = a.iter().find(|s| s.kind == SampleKind::ArrivalNs).unwrap();
    let back_arrival = b.iter().find(|s| s.kind == SampleKind::ArrivalNs).unwrap();
    assert_ne!(
        arrival.values, back_arrival.values,
        "the fixture has ns digits"
    );
    for (x, y) in arrival.values.iter().zip(&back_arrival.values) {
        assert!(x.abs_diff(*y) <= 50);
    }
    // Extreme values survive both series modes.
    let mut r = rr_result(3);
    r.steps[0].samples[0].values = vec![u64::MAX, 0, u64::MAX / 2];
    r.steps[0].samples.push(Series {
        role: Role::Server,
        kind: SampleKind::Sequence,
        stream: u16::MAX,
        values: vec![u64::MAX, 0, 1, u64::MAX - 1],
    });
    assert_eq!(decode(&encode(&r).unwrap()).unwrap(), rounded(&r));
}

#[test]
fn ten_thousand_rtts_fit_in_24_kb_of_url() {
    let text = encode(&rr_result(10_000)).unwrap();
    let url = format!("http://127.0.0.1:38917/#r={text}");
    eprintln!("10 000 RTT samples: {} bytes of URL", url.len());
    assert!(url.len() <= 24 * 1024, "{} bytes", url.len());
}

#[test]
fn beyond_the_hard_limit_histograms_replace_large_series() {
    let mut r = rr_result(200_000);
    // A short series stays raw.
    r.steps[0].samples.push(Series {
        role: Role::Server,
        kind: SampleKind::ReadBytes,
        stream: 0,
        values: vec![64; 100],
    });
    let text = encode(&r).unwrap();
    assert!(text.len() <= HARD_LIMIT, "{}", text.len());
    let back = decode(&text).unwrap();
    assert!(back.samples_replaced);
    let step = &back.steps[0];
    assert_eq!(step.summary, r.steps[0].summary);
    assert_eq!(step.samples, vec![r.steps[0].samples[1].clone()]);
    let h = &step.histograms[0];
    assert_eq!(
        (h.kind, h.role, h.n),
        (SampleKind::RttNs, Role::Client, 200_000)
    );
    assert_eq!(h.bin_width, 1_000, "1 us bins");
    assert_eq!(h.counts.iter().sum::<u64>(), 200_000);
    let min = *r.steps[0].samples[0].values.iter().min().unwrap();
    assert!(h.low <= min && min < h.low + h.bin_width);
    // The JSON the page gets says so plainly.
    let json: Value = serde_json::from_str(&decode_json(&text).unwrap()).unwrap();
    assert_eq!(json["samples_replaced"], json!(true));
    // A decoded histogram link encodes again as it is.
    assert_eq!(decode(&encode(&back).unwrap()).unwrap(), back);
}

#[test]
fn histogram_bins_widen_on_1_2_5_steps() {
    let s = |values: Vec<u64>| Series {
        role: Role::Client,
        kind: SampleKind::RttNs,
        stream: 0,
        values,
    };
    assert_eq!(histogram_of(&s(vec![15_000, 80_000])).bin_width, 1_000);
    assert_eq!(histogram_of(&s(vec![0, 3_000_000])).bin_width, 2_000);
    assert_eq!(histogram_of(&s(vec![0, 9_000_000])).bin_width, 5_000);
    assert!(histogram_of(&s(vec![0, u64::MAX])).counts.len() as u64 <= HIST_MAX_BINS);
    assert!(histogram_of(&s(vec![])).counts.is_empty());
}

#[test]
fn truncated_links_are_refused_with_one_line() {
    let text = encode(&stream_result()).unwrap();
    for cut in [
        0,
        1,
        2,
        3,
        5,
        10,
        text.len() / 3,
        text.len() / 2,
        text.len() - 7,
        text.len() - 2,
        text.len() - 1,
    ] {
        let e = decode(&text[..cut]).unwrap_err();
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m}");
        if cut >= 2 {
            assert!(matches!(e, PermalinkError::Corrupt(_)), "cut {cut}: {m}");
        }
    }
    assert!(decode(&text[..text.len() / 2])
        .unwrap_err()
        .to_string()
        .contains("cut short"));
}

#[test]
fn every_flipped_character_is_refused_or_harmless() {
    let r = stream_result();
    let text = encode(&r).unwrap();
    let alphabet = std::str::from_utf8(B64).unwrap();
    let mut refused = 0;
    for i in 2..text.len() {
        let c = text.as_bytes()[i] as char;
        let other = alphabet
            .chars()
            .cycle()
            .skip_while(|&x| x != c)
            .nth(17)
            .unwrap();
        let bad = format!("{}{}{}", &text[..i], other, &text[i + 1..]);
        match decode(&bad) {
            Err(e) => {
                assert!(!e.to_string().contains('\n'));
                refused += 1;
            }
            // A change the checksum cannot see must not change the result.
            Ok(back) => assert_eq!(back, rounded(&r), "flip at {i}"),
        }
    }
    assert!(refused >= text.len() - 3, "{refused} of {}", text.len());
    let m = decode(&format!("{}!{}", &text[..9], &text[10..]))
        .unwrap_err()
        .to_string();
    assert!(m.contains("character '!' at 9"), "{m}");
}

#[test]
fn wrong_tag_and_newer_version_are_named() {
    let text = encode(&rr_result(5)).unwrap();
    assert_eq!(
        decode(&format!("xx{}", &text[2..])),
        Err(PermalinkError::Tag)
    );
    assert_eq!(decode("{\"format\":1}"), Err(PermalinkError::Tag));
    // The next version: the first byte after the tag.
    let mut bytes = base64url_decode(&text[2..]).unwrap();
    bytes[0] = LINK_VERSION + 1;
    let mut newer = String::from(TAG);
    base64url_encode(&bytes, &mut newer);
    let e = decode(&newer).unwrap_err();
    assert_eq!(e, PermalinkError::TooNew(LINK_VERSION + 1));
    assert!(e.to_string().contains("newer meshperf"));
    // A whole URL works as well as the fragment text.
    assert!(decode(&format!("http://h:1/#r={text}\n")).is_ok());
}

#[test]
fn a_result_written_by_a_newer_meshperf_is_refused_on_encode() {
    let e = encode_json(r#"{"format":"meshperf-result","version":9,"plan":{"kind":"tcp_rr"}}"#)
        .unwrap_err();
    assert!(e.to_string().contains("upgrade meshperf"), "{e}");
    assert!(encode_json("[1]").is_err());
}

/// A udp_req_timo-sized scan: 180 steps of 2000 RTTs; each step's summary
/// is its requester's side, as the agents report it.
fn scan_result() -> RunResult {
    let mut r = rr_result(2000);
    let step = r.steps[0].clone();
    r.steps.clear();
    for i in 0..180u64 {
        let mut s = step.clone();
        s.index = i as usize;
        s.point = vec![("resp_bytes".into(), json!(64 + 8 * i))];
        s.samples[0].values = loopback_rtts(2000, i);
        let mut side = rtt_summary(&s.samples[0].values);
        let f = i as f64;
        for (k, x) in [
            ("seconds", 0.2 + f / 7.0),
            ("time_per_frame_us", 100.0 / (f + 1.0)),
            ("mbytes_per_second", 1.0 / (f + 3.0)),
        ] {
            side[k] = json!(x);
        }
        side["line"] = json!(format!(
            "{}; 64; 1; 2000; 0; 120.5; 1.04; 120.0; 110.3; 180.2; 0",
            64 + 8 * i
        ));
        s.summary = side.clone();
        s.sides.client = Some(side);
        r.steps.push(s);
    }
    r
}

#[test]
fn a_summary_equal_to_its_side_is_carried_once() {
    let r = scan_result();
    let text = encode(&r).unwrap();
    // The same result where no summary equals its side: format 1's size.
    let mut twice = r.clone();
    for s in &mut twice.steps {
        s.summary["marked"] = json!(true);
    }
    let back = decode(&text).unwrap();
    assert!(back.samples_replaced);
    // Carried twice (as format 1 did) it fits only with coarse histograms.
    let coarse = decode(&encode(&twice).unwrap()).unwrap();
    let bins = |r: &RunResult| {
        r.steps
            .iter()
            .map(|s| s.histograms[0].counts.len())
            .max()
            .unwrap()
    };
    eprintln!(
        "180 x 2000 RTTs: {} characters of link; most bins {} once, {} twice",
        text.len(),
        bins(&back),
        bins(&coarse)
    );
    assert!(bins(&back) as u64 > HIST_COARSE_BINS);
    assert!(bins(&coarse) as u64 <= HIST_COARSE_BINS);
    for s in &coarse.steps {
        assert_eq!(s.histograms[0].counts.iter().sum::<u64>(), 2000);
    }
    for (b, s) in back.steps.iter().zip(&r.steps) {
        assert_eq!((&b.summary, &b.sides), (&s.summary, &s.sides));
    }
    // One step whose summary is not its side's keeps its own.
    let mut one = r.clone();
    one.steps[3].summary = json!({"other": 1});
    let back = decode(&encode(&one).unwrap()).unwrap();
    assert_eq!(back.steps[3].summary, json!({"other": 1}));
    assert_eq!(back.steps[4].summary, r.steps[4].summary);
}

/// The link format 1 fixture: made by the first version of this codec, it
/// must open in every later one.
const FIXTURE_V1: &str = include_str!("../../tests/fixtures/permalink-v1.txt");

#[test]
fn link_format_1_fixture_still_decodes() {
    let expected = rounded(&stream_result());
    if std::env::var_os("MESHPERF_WRITE_FIXTURE").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/permalink-v1.txt"
        );
        std::fs::write(path, encode(&stream_result()).unwrap() + "\n").unwrap();
    }
    let back = decode(FIXTURE_V1).unwrap();
    assert_eq!(back, expected);
    assert_eq!(back.steps[1].error.as_deref(), Some("agent b: refused"));
    assert_eq!(back.steps[0].summary["name"], json!("grüße \u{1F600}"));
}

/// The old typed histogram replacement, kept as the reference the value
/// code must match byte for byte.
fn typed_replace(r: &mut RunResult, min: usize) {
    for s in &mut r.steps {
        let (big, keep): (Vec<Series>, Vec<Series>) = std::mem::take(&mut s.samples)
            .into_iter()
            .partition(|x| x.values.len() > min);
        s.samples = keep;
        for x in big {
            r.samples_replaced = true;
            s.histograms.push(histogram_of(&x));
        }
    }
}

#[test]
fn json_entry_points_write_and_read_what_the_typed_ones_do() {
    let mut big = rr_result(200_000);
    big.steps[0].error = Some("late".into());
    big.steps[0].samples.push(Series {
        role: Role::Server,
        kind: SampleKind::ReadBytes,
        stream: 3,
        values: vec![64; 100],
    });
    for r in [
        rr_result(10_000),
        stream_result(),
        rr_result(0),
        big.clone(),
    ] {
        let json = serde_json::to_string(&r).unwrap();
        let link = encode_json(&json).unwrap();
        assert_eq!(link, encode(&r).unwrap());
        let typed = serde_json::to_string(&decode(&link).unwrap()).unwrap();
        assert_eq!(decode_json(&link).unwrap(), typed);
    }
    // The histogram link is the one the typed code made.
    let mut small = big.clone();
    typed_replace(&mut small, HIST_MIN_VALUES);
    assert_eq!(encode(&big).unwrap(), encode_exact(&small));
    // The fixture was written by the first codec (format 1): it opens as
    // what this one writes opens.
    assert_eq!(
        decode(FIXTURE_V1).unwrap(),
        decode(&encode(&stream_result()).unwrap()).unwrap()
    );
    // The fixture decodes to the same JSON both ways.
    let typed = serde_json::to_string(&decode(FIXTURE_V1).unwrap()).unwrap();
    assert_eq!(decode_json(FIXTURE_V1).unwrap(), typed);
    assert_eq!(
        encode_json(&typed).unwrap(),
        encode(&decode(FIXTURE_V1).unwrap()).unwrap()
    );
}

/// Link format 2 fixtures, written by the last build that shaped JSON by hand
/// (wasm/src/json.rs and shape.rs, before the codec read results with
/// serde): a request/response step whose summary is carried once (its
/// client side's) with step times, and a link whose 200 000 RTTs became a
/// histogram. Both must open in every later build.
const FIXTURE_V2: &str = include_str!("../../tests/fixtures/permalink-v2.txt");

#[test]
fn link_format_2_fixtures_still_decode() {
    let big = rr_result(200_000);
    if std::env::var_os("MESHPERF_WRITE_FIXTURE").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/permalink-v2.txt"
        );
        let text = format!(
            "{}\n{}\n",
            encode(&rr_result(2000)).unwrap(),
            encode(&big).unwrap()
        );
        std::fs::write(path, text).unwrap();
        return;
    }
    let links: Vec<&str> = FIXTURE_V2.lines().collect();
    assert_eq!(links.len(), 2);
    let rr = decode(links[0]).unwrap();
    assert_eq!(rr, rounded(&rr_result(2000)));
    assert_eq!(rr.steps[0].started_unix, Some(1_763_800_000.125));
    assert_eq!(
        Some(&rr.steps[0].summary),
        rr.steps[0].sides.client.as_ref()
    );
    let h = decode(links[1]).unwrap();
    assert!(h.samples_replaced);
    assert_eq!(h.steps[0].histograms[0].n, 200_000);
    assert_eq!(h, decode(&encode(&big).unwrap()).unwrap());
    // The JSON the page gets is what the typed result writes.
    for link in links {
        let typed = serde_json::to_string(&decode(link).unwrap()).unwrap();
        assert_eq!(decode_json(link).unwrap(), typed);
    }
}

/// The result `full_value` edits: every field set, fields the types do not
/// know, and keys out of order.
fn full_value() -> Value {
    json!({"extra": 1, "steps": [
        {"error": "boom", "histograms": [{"counts": [1, 2], "bin_width": 1000, "low": 5000,
            "n": 3, "kind": "rtt_ns", "role": "client", "x": 0}],
         "samples": [{"values": [1, 2, 3], "kind": "interval_bytes", "role": "server", "stream": 2}],
         "sides": {"server": {"a": 1}, "client": null, "other": 3},
         "summary": {"z": 1, "a": [1.5, null]}, "transport": "tcp_local", "repeat": 3,
         "point": [["msg_bytes", 1024], ["transport", "tcp_local"]],
         "params": {"b": 1, "a": 2}, "kind": "unix_rr", "index": 7,
         "started_unix": 1795000000, "wall_seconds": 0.25},
        {"index": 0, "kind": "tcp_rr", "error": null, "histograms": []}],
      "agents": [{"hostname": "a"}], "plan": {"description": null, "name": "n", "repeat": 2,
        "sweep": {"x": [1]}, "params": {}, "kind": "udp_stream", "y": 1,
        "histogram": {"low_us": 100, "bin_us": 2.5, "x": 1}},
      "created_unix": 1795000000, "version": 1, "format": "meshperf-result",
      "samples_replaced": true})
}

/// `encode_json` takes what `result::load` takes (defaults filled in,
/// unknown fields dropped, whole numbers read as floats where a float is
/// due) and refuses what it refuses; what it takes comes back from
/// `decode_json` as the typed result writes it, keys in struct order. (The
/// cases the hand shaping of earlier builds was checked with.)
fn same_as_load(v: &Value) {
    let text = v.to_string();
    match (result::load(&text), encode_json(&text)) {
        (Ok(r), Ok(link)) => {
            assert_eq!(
                decode_json(&link).unwrap(),
                serde_json::to_string(&r).unwrap(),
                "{v}"
            );
        }
        (Err(_), Err(e)) => assert!(!e.to_string().contains('\n'), "{e}"),
        (a, b) => panic!("{v}: load {a:?}, encode_json {b:?}"),
    }
}

#[test]
fn json_entry_points_take_and_refuse_what_load_does() {
    same_as_load(&full_value());
    same_as_load(&json!({"format": "meshperf-result", "version": 1, "plan": {"kind": "tcp_rr"}}));
    same_as_load(
        &json!({"format": "meshperf-result", "version": 1, "created_unix": 2.5,
        "plan": {"kind": "tcp_rr", "name": "x"}, "samples_replaced": false, "steps": []}),
    );
    let edits: Vec<(&str, Value)> = vec![
        ("/format", json!(1)),
        ("/version", json!(-1)),
        ("/version", json!(1.0)),
        ("/version", json!(1u64 << 33)),
        ("/created_unix", json!("x")),
        ("/created_unix", json!(null)),
        ("/plan/kind", json!("teleport")),
        ("/plan/repeat", json!(null)),
        ("/plan/params", json!(null)),
        ("/plan/sweep", json!([])),
        ("/plan/name", json!(3)),
        ("/plan/histogram", json!(3)),
        ("/plan/histogram", json!({"low_us": 1})),
        ("/plan/histogram", json!({"bin_us": "1"})),
        ("/plan/histogram", json!({"bin_us": 1, "low_us": null})),
        ("/agents", json!({})),
        ("/steps", json!(null)),
        ("/samples_replaced", json!(1)),
        ("/steps/0/index", json!(-1)),
        ("/steps/0/kind", json!(null)),
        ("/steps/0/point", json!([["a"]])),
        ("/steps/0/point", json!([["a", 1, 2]])),
        ("/steps/0/point", json!([[1, 1]])),
        ("/steps/0/point/0", json!(["a", null])),
        ("/steps/0/repeat", json!(4294967296u64)),
        ("/steps/0/transport", json!("carrier")),
        ("/steps/0/transport", json!(null)),
        ("/steps/0/summary", json!(null)),
        ("/steps/0/sides", json!(null)),
        ("/steps/0/sides", json!({})),
        ("/steps/0/sides/client", json!(7)),
        ("/steps/0/samples/0/role", json!("both")),
        ("/steps/0/samples/0/kind", json!("rtt")),
        ("/steps/0/samples/0/stream", json!(65536)),
        ("/steps/0/samples/0/stream", json!(null)),
        ("/steps/0/samples/0/values", json!([1, -2])),
        ("/steps/0/samples/0/values", json!([1.5])),
        ("/steps/0/samples/0/values", json!(null)),
        ("/steps/0/histograms/0/n", json!(null)),
        ("/steps/0/histograms/0/counts", json!([0.5])),
        ("/steps/0/error", json!(false)),
        ("/steps/1", json!([])),
    ];
    for (ptr, x) in edits {
        let mut v = full_value();
        *v.pointer_mut(ptr).unwrap_or_else(|| panic!("{ptr}")) = x;
        same_as_load(&v);
    }
    let removed = |path: &str, keys: &[&str]| {
        for key in keys {
            let mut v = full_value();
            v.pointer_mut(path)
                .and_then(Value::as_object_mut)
                .unwrap()
                .remove(*key);
            same_as_load(&v);
        }
    };
    removed(
        "",
        &[
            "format",
            "version",
            "plan",
            "created_unix",
            "agents",
            "steps",
        ],
    );
    removed(
        "/steps/0",
        &[
            "index",
            "kind",
            "params",
            "point",
            "repeat",
            "transport",
            "summary",
            "sides",
            "samples",
            "histograms",
            "error",
            "started_unix",
            "wall_seconds",
        ],
    );
    removed("/steps/0/samples/0", &["role", "kind", "stream", "values"]);
    removed(
        "/steps/0/histograms/0",
        &["role", "kind", "stream", "n", "low", "bin_width", "counts"],
    );
    removed(
        "/plan",
        &["kind", "params", "sweep", "repeat", "name", "description"],
    );
    // Defaults, and whole numbers where floats are due, as the types write them.
    let mut v = full_value();
    v["steps"][0].as_object_mut().unwrap().remove("transport");
    let back: Value =
        serde_json::from_str(&decode_json(&encode_json(&v.to_string()).unwrap()).unwrap()).unwrap();
    assert_eq!(back["steps"][0]["transport"], json!("tcp"));
    assert_eq!(back["steps"][1]["repeat"], json!(0));
    assert!(back["created_unix"].is_f64() && back["steps"][0]["started_unix"].is_f64());
    assert_eq!(
        back["plan"]["histogram"],
        json!({"bin_us": 2.5, "low_us": 100.0})
    );
    assert!(back.get("extra").is_none() && back["plan"].get("y").is_none());
}

/// Issue 29 item 9: a link's histogram of bytes per interval counts the
/// intervals the page's statistics count (every stream whole inside its
/// data movement), not a partial first or last one.
#[test]
fn a_link_s_histogram_of_bytes_per_interval_counts_only_whole_intervals() {
    let plan =
        Plan::from_json(r#"{"kind":"tcp_stream","params":{"duration_s":10,"streams":2}}"#).unwrap();
    let mut r = RunResult::new(plan.clone(), vec![hello("a"), hello("b")], 1.5);
    let st = plan.expand().unwrap().remove(0);
    let mut rng = Rng(11);
    // Stream 0 from 0.2 ms to 9.9951 s, stream 1 from 5.1 ms to 10.0005 s,
    // 10 ms ticks: each one's first and last tick partial (a few bytes).
    let mut series = |stream: u16, ticks: usize| {
        let mut v: Vec<u64> = (0..ticks)
            .map(|_| 1_000_000 + rng.next() % 100_000)
            .collect();
        v[0] = 300 + stream as u64;
        v[ticks - 1] = 500;
        Series {
            role: Role::Server,
            kind: SampleKind::IntervalBytes,
            stream,
            values: v,
        }
    };
    let samples = vec![series(0, 1000), series(1, 1001)];
    let side = json!({"bytes": 2_000_000_000u64, "seconds": 10.0005, "interval_ms": 10, "streams": [
        {"index": 0, "dir": "recv", "bytes": 1, "reads": 1, "seconds": 9.9951, "first_seconds": 0.0002},
        {"index": 1, "dir": "recv", "bytes": 1, "reads": 1, "seconds": 10.0005, "first_seconds": 0.0051},
    ]});
    r.steps.push(StepResult {
        index: 0,
        kind: st.kind,
        params: st.params,
        point: st.point,
        repeat: 0,
        transport: st.transport,
        summary: side.clone(),
        sides: Sides {
            client: None,
            server: Some(side),
        },
        samples: samples.clone(),
        histograms: vec![],
        error: None,
        started_unix: None,
        wall_seconds: None,
        pair: None,
    });
    let back = decode(&encode_exact(&replace_samples(&r, 0, HIST_MAX_BINS))).unwrap();
    let hs = &back.steps[0].histograms;
    assert_eq!(hs.len(), 2);
    for (h, x) in hs.iter().zip(&samples) {
        // Ticks 1 to 998: the last stream started in tick 0, the first
        // ended in tick 999.
        let whole = &x.values[1..999];
        assert_eq!(h.n, 998, "stream {}", h.stream);
        assert_eq!(h.left_out, Some(x.values.len() as u64 - 998));
        assert_eq!(h.counts.iter().sum::<u64>(), 998);
        let min = *whole.iter().min().unwrap();
        assert!(h.low <= min && min < h.low + h.bin_width, "{} {min}", h.low);
        assert!(h.low > 900_000, "no partial interval: low {}", h.low);
    }
    // Other series are counted whole, and say nothing of intervals.
    let rtt = Series {
        role: Role::Client,
        kind: SampleKind::TcpRttUs,
        stream: 0,
        values: vec![20; 300],
    };
    r.steps[0].samples.push(rtt);
    let h = replace_samples(&r, 0, HIST_MAX_BINS).steps[0].histograms[2].clone();
    assert_eq!((h.kind, h.n, h.left_out), (SampleKind::TcpRttUs, 300, None));
}

/// A long tcp_stream whose TCP_INFO view series (kinds from 40) make the
/// link too long: they give way to histograms first, the bytes per
/// interval and the older TCP_INFO series stay raw.
#[test]
fn the_tcp_info_view_gives_way_first() {
    let mut r = stream_result();
    r.steps.truncate(1);
    let mut rng = Rng(11);
    let n = 5000;
    let s = &mut r.steps[0];
    s.samples.push(Series {
        role: Role::Client,
        kind: SampleKind::TcpCwnd,
        stream: 0,
        values: (0..n).map(|_| 40 + rng.next() % 4).collect(),
    });
    for kind in [
        SampleKind::TcpDeliveryRate,
        SampleKind::TcpUnackedBytes,
        SampleKind::TcpSndWnd,
    ] {
        s.samples.push(Series {
            role: Role::Client,
            kind,
            stream: 0,
            values: (0..n).map(|_| rng.next() % 1_000_000_000).collect(),
        });
    }
    assert!(encode_exact(&r).len() > HARD_LIMIT);
    let (text, replaced) = encode_reporting(&r).unwrap();
    assert!(replaced && text.len() <= HARD_LIMIT);
    let back = decode(&text).unwrap();
    let kinds = |v: Vec<SampleKind>| v.into_iter().map(|k| k as u8).collect::<Vec<_>>();
    let raw = kinds(back.steps[0].samples.iter().map(|x| x.kind).collect());
    let hist = kinds(back.steps[0].histograms.iter().map(|x| x.kind).collect());
    assert!(
        raw.iter().all(|&k| k < 40) && raw.contains(&(SampleKind::TcpCwnd as u8)),
        "{raw:?}"
    );
    assert!(raw.contains(&(SampleKind::IntervalBytes as u8)), "{raw:?}");
    assert_eq!(hist, [41, 43, 50]);
    assert!(back.samples_replaced);
}
