//! Issue 15, "seed options and output still missing", between real agents
//! through `meshperf run`: socketslurp's own buffer count (`recv_count`),
//! the Perl transfer test's figures (socket buffers asked and got, average
//! milliseconds per read, averages over runs of every figure), and
//! sockbench's speeds in bits and bytes with more than 64 parallel streams
//! where the operator allows it.

use crate::run::{run, run_ab, run_ok, text, tmp};
use crate::util::AgentProc;
use meshperf_protocol::result::RunResult;

/// [`run_ok`] whose steps all succeeded.
fn run_json(a: &AgentProc, b: &AgentProc, args: &[&str]) -> (String, RunResult) {
    let (out, r) = run_ok(a, b, args);
    assert!(r.steps.iter().all(|s| s.error.is_none()), "{out}");
    (out, r)
}

/// The lines of `out` that start with `prefix`.
fn lines<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// socketsend 1M x 32 against socketslurp 1M x 8, then x 100: "the side of
/// the connection that has the smaller amount of data determines how much
/// will be transferred", and both seed lines and the figures say so.
#[test]
fn socketslurp_with_fewer_buffers_decides_how_much_moves() {
    let (a, b) = (AgentProc::start(&[]), AgentProc::start(&[]));
    let (out, r) = run_json(
        &a,
        &b,
        &[
            "--preset",
            "socketsend",
            "--set",
            "count=32",
            "--sweep",
            "recv_count=8,100",
        ],
    );
    assert_eq!(r.steps.len(), 2);
    // The receiver's 8 buffers: 8 MiB move, on both ends.
    let (few, many) = (&r.steps[0], &r.steps[1]);
    for side in [&few.sides.client, &few.sides.server] {
        let side = side.as_ref().unwrap();
        assert_eq!(side["bytes"], 8 << 20, "{side}");
        assert_eq!(side["limited_by"], "receiver");
        assert_eq!(side["recv_count"], 8);
    }
    assert!(
        out.contains("received 8388608 bytes in ") && out.contains("sent 8388608 bytes in "),
        "{out}"
    );
    let decided = lines(&out, "buffers: ");
    assert_eq!(
        decided,
        [
            "buffers: the receiver decided: receiver 8 buffers of 1048576 bytes (8388608 bytes), sender 32 buffers of 1048576 bytes (33554432 bytes); 8388608 bytes moved per stream",
            "buffers: the sender decided: receiver 100 buffers of 1048576 bytes (104857600 bytes), sender 32 buffers of 1048576 bytes (33554432 bytes); 33554432 bytes moved per stream",
        ],
        "{out}"
    );
    assert_eq!(many.summary["bytes"], 32 << 20);
    assert_eq!(many.summary["limited_by"], "sender");
    // A time-bounded sender against a receiver with a count: the receiver's
    // buffers end it long before the time does.
    let (out, r) = run_json(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "direction=receive",
            "--set",
            "duration_s=20",
            "--set",
            "recv_count=4",
            "--set",
            "read_bytes=64K",
        ],
    );
    let s = &r.steps[0];
    assert_eq!(s.summary["bytes"], 4 * 65536, "{out}");
    assert_eq!(s.summary["limited_by"], "receiver");
    assert!(s.wall_seconds.unwrap() < 5.0, "{:?}", s.wall_seconds);
}

/// The Perl transfer test's figures in the text: the socket buffer asked
/// and got on each end, average milliseconds per read, and over repeated
/// runs the average of every figure (packet-averages.pl); and its --file,
/// read by the sending agent from the directory its operator allowed.
#[test]
fn perl_figures_buffers_ms_per_read_averages_and_data_from_a_file() {
    let dir = tmp("payload");
    std::fs::create_dir_all(&dir).unwrap();
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(dir.join("testdata.dat"), &data).unwrap();
    // Only `a` allows a directory.
    let a = AgentProc::start(&["--payload-dir", dir.to_str().unwrap()]);
    let b = AgentProc::start(&[]);
    let (out, r) = run_json(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--file",
            "testdata.dat",
            "--set",
            "direction=receive",
            "--set",
            "msg_bytes=64K",
            "--set",
            "count=10",
        ],
    );
    assert_eq!(
        lines(&out, "data: "),
        ["data: file testdata.dat (300000 bytes, read into memory before the test) sent by the server"],
        "{out}"
    );
    let server = r.steps[0].sides.server.as_ref().unwrap();
    assert_eq!(server["payload_file"], "testdata.dat");
    assert_eq!(server["payload_file_bytes"], 300000);
    assert_eq!(r.steps[0].summary["bytes"], 655360);
    // The sending agent reads no files unless its operator allowed it (b
    // sends when the direction is send); a name not in the directory, or a
    // path, is refused before any traffic.
    for (file, dir, status, why) in [
        (
            "testdata.dat",
            "send",
            1,
            "payload_file: \"testdata.dat\" cannot be sent: this agent reads no files",
        ),
        (
            "missing.dat",
            "receive",
            1,
            "payload_file: \"missing.dat\" is not in this agent's --payload-dir",
        ),
        (
            "../testdata.dat",
            "receive",
            2,
            "payload_file: must be a file name in the sending agent's --payload-dir",
        ),
    ] {
        let d = format!("direction={dir}");
        let o = run_ab(
            &a,
            &b,
            &["--kind", "tcp_stream", "--file", file, "--set", &d],
        );
        let all = text(&o.stdout) + &text(&o.stderr);
        assert_eq!(o.status.code(), Some(status), "{all}");
        assert!(all.contains(why), "{all}");
        assert!(!all.contains(" bytes in "), "{all}");
    }

    let (out, r) = run_json(
        &a,
        &b,
        &[
            "--kind",
            "tcp_stream",
            "--set",
            "msg_bytes=4K",
            "--set",
            "count=40",
            "--set",
            "wait_us=1000",
            "--set",
            "sndbuf=64K",
            "--repeat",
            "3",
        ],
    );
    assert_eq!(r.steps.len(), 3);
    for (s, l) in r.steps.iter().zip(lines(&out, "Send Buffer is ")) {
        let (client, server) = (
            s.sides.client.as_ref().unwrap(),
            s.sides.server.as_ref().unwrap(),
        );
        assert_eq!(
            l,
            format!(
                "Send Buffer is {} bytes (asked 65536) at the client; Receive Buffer is {} bytes (not asked) at the server",
                client["sndbuf_actual"], server["rcvbuf_actual"]
            )
        );
    }
    assert_eq!(lines(&out, "Send Buffer is ").len(), 3, "{out}");
    // Average milliseconds per read: the receiver's time over its reads.
    let reads = lines(&out, "reads: ");
    assert_eq!(reads.len(), 3, "{out}");
    for (s, l) in r.steps.iter().zip(&reads) {
        let m = &s.summary;
        let ms = m["recv_seconds"].as_f64().unwrap() * 1e3 / m["reads"].as_f64().unwrap();
        assert!(
            (m["ms_per_read"].as_f64().unwrap() - ms).abs() < 1e-9,
            "{m}"
        );
        // 40 writes 1 ms apart: each read waits for about one of them.
        assert!(ms > 0.2 && ms < 40.0, "{l}");
        assert!(l.contains(&format!(", {ms:.6} ms per read, ")), "{l}");
    }
    // After the third run, every figure averaged.
    let at = out.find("averages over 3 runs:\n").expect(&out);
    let avg = |key: &str| -> f64 {
        let l = out[at..]
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(key))
            .unwrap_or_else(|| panic!("no {key}: {out}"));
        l.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let mean = |key: &str| {
        r.steps
            .iter()
            .map(|s| s.summary[key].as_f64().unwrap())
            .sum::<f64>()
            / 3.0
    };
    assert_eq!(avg("bytes"), 163840.0);
    for key in [
        "seconds",
        "ms_per_read",
        "ms_per_mib",
        "reads",
        "bits_per_second",
    ] {
        assert!(
            (avg(key) - mean(key)).abs() <= 1e-6 * mean(key).max(1.0),
            "{key}: {out}"
        );
    }
    assert_eq!(avg("rcvbuf_actual"), mean("rcvbuf_actual"));
}

/// sockbench's table has both speeds; its crazy mode runs hundreds of pairs
/// at once. 100 streams where both agents allow 128 (`--max-streams`), in
/// bits and bytes per second; 129 is refused before any traffic, and 65 on
/// agents with the default limit of 64.
#[test]
fn sockbench_speeds_in_bits_and_bytes_and_streams_beyond_64_where_allowed() {
    let wide = ["--max-streams", "128"];
    let (a, b) = (AgentProc::start(&wide), AgentProc::start(&wide));
    for kind in ["tcp_stream", "unix_stream"] {
        let (out, r) = run_json(
            &a,
            &b,
            &[
                "--kind",
                kind,
                "--set",
                "streams=100",
                "--set",
                "count=4",
                "--set",
                "msg_bytes=64K",
            ],
        );
        let m = &r.steps[0].summary;
        assert_eq!(m["streams"].as_array().unwrap().len(), 100, "{kind}");
        assert_eq!(m["bytes"], 100 * 4 * 65536, "{kind}");
        let speed = lines(&out, "speed (bits): ");
        assert_eq!(speed.len(), 1, "{out}");
        // Both figures are the receiver's rate, in sockbench's units.
        let bps = m["bits_per_second"].as_f64().unwrap();
        let w: Vec<&str> = speed[0].split_whitespace().collect();
        let scale = |unit: &str| match &unit[..1] {
            "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            _ => 1.0,
        };
        let bits: f64 = w[2].parse::<f64>().unwrap() * scale(w[3]);
        let bytes: f64 = w[6].parse::<f64>().unwrap() * scale(w[7]);
        assert!(
            w[3].ends_with("bit/s;") && w[7].ends_with("Byte/s"),
            "{}",
            speed[0]
        );
        assert!((bits / bps - 1.0).abs() < 0.01, "{} vs {bps}", speed[0]);
        assert!(
            (bytes * 8.0 / bps - 1.0).abs() < 0.01,
            "{} vs {bps}",
            speed[0]
        );
    }
    // Over the agents' limit: a usage error before any traffic.
    let o = run_ab(&a, &b, &["--kind", "tcp_stream", "--set", "streams=129"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("streams: must be between 1 and 128"), "{err}");
    // One agent with the default limit plays both ends.
    let c = AgentProc::start(&[]);
    let uc = format!("http://{}/#token={}", c.addr(), c.token);
    let o = run(&[
        "--agent",
        &uc,
        "--kind",
        "tcp_stream",
        "--set",
        "streams=65",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("streams: must be between 1 and 64"));
}
