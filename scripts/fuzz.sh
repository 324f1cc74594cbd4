#!/usr/bin/env bash
# The fuzz targets in fuzz/ (libFuzzer through cargo-fuzz, on nightly): one
# per decoder of outside bytes. See fuzz/README.md.
#
#   scripts/fuzz.sh list                  the targets, one a line
#   scripts/fuzz.sh build                 builds every target
#   scripts/fuzz.sh run TARGET SECONDS    runs TARGET for SECONDS; exit 1 on a crash
#   scripts/fuzz.sh seeds                 rewrites fuzz/corpus/ from the repository
#
# `run` reads the seeds in fuzz/corpus/TARGET and keeps what it finds in
# target/fuzz-corpus/TARGET (git-ignored), so the committed seeds stay as
# they are and later runs start from where earlier ones got. A crash is
# saved in target/fuzz-artifacts/TARGET/; the script prints how to replay it.
# FUZZ_ARGS adds libFuzzer flags (e.g. FUZZ_ARGS=-jobs=1).
set -euo pipefail
SCRIPT_NAME=fuzz
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ -x "$CARGO_FUZZ_BIN" ] || die "cargo-fuzz $CARGO_FUZZ_VERSION not found at $CARGO_FUZZ_BIN: run scripts/setup.sh --test"
# No sanitizer: the decoders are safe Rust, and without ASan the build and
# every run take about half the time. Debug assertions (-a) turn integer
# overflow into a crash. 16 codegen units: the build takes both cores.
fuzz() { RUSTUP_TOOLCHAIN=nightly "$CARGO_FUZZ_BIN" fuzz "$1" --fuzz-dir "$ROOT/fuzz" -s none -a --codegen-units 16 "${@:2}"; }
bin() { echo "$ROOT/fuzz/target/x86_64-unknown-linux-gnu/release/$1"; }

targets() { sed -n 's/^name = "\(.*\)"$/\1/p' "$ROOT/fuzz/Cargo.toml" | grep -v '^meshperf-fuzz$'; }

case "${1:-}" in
    list) targets ;;
    build) fuzz build ;;
    run)
        t="${2:?usage: scripts/fuzz.sh run TARGET SECONDS}"
        secs="${3:?usage: scripts/fuzz.sh run TARGET SECONDS}"
        targets | grep -qx "$t" || die "no fuzz target '$t' (scripts/fuzz.sh list)"
        work="$ROOT/target/fuzz-corpus/$t"
        art="$ROOT/target/fuzz-artifacts/$t"
        mkdir -p "$work" "$art"
        # Up to date after `build` (then it returns at once); the binary is
        # run directly, as `cargo fuzz run` would build twice more.
        fuzz build "$t"
        # -timeout: an input that takes 10 s is a hang, reported as a crash.
        # shellcheck disable=SC2086
        if ! "$(bin "$t")" "$work" "$ROOT/fuzz/corpus/$t" \
            -max_total_time="$secs" -timeout=10 -artifact_prefix="$art/" -print_final_stats=1 ${FUZZ_ARGS:-}; then
            log "$t: crashed; the input is in target/fuzz-artifacts/$t/ (replay: scripts/fuzz.sh replay $t FILE)"
            exit 1
        fi
        log "$t: no crash in $secs s; corpus target/fuzz-corpus/$t: $(find "$work" -type f | wc -l) inputs"
        ;;
    replay)
        t="${2:?usage: scripts/fuzz.sh replay TARGET FILE}"
        fuzz build "$t"
        "$(bin "$t")" "${3:?usage: scripts/fuzz.sh replay TARGET FILE}"
        ;;
    seeds)
        # A normal (stable) build: the generator uses the real encoders.
        cargo run --manifest-path "$ROOT/fuzz/Cargo.toml" --example seeds
        ;;
    *) die "usage: scripts/fuzz.sh list|build|run TARGET SECONDS|replay TARGET FILE|seeds" ;;
esac
