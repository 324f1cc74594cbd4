#!/usr/bin/env bash
# The fuzz targets in fuzz/ (libFuzzer through cargo-fuzz, on nightly): one
# per decoder of outside bytes. See fuzz/README.md.
#
#   scripts/fuzz.sh list                   the targets, one a line
#   scripts/fuzz.sh build                  builds every target
#   scripts/fuzz.sh check TARGET [RUNS]    what npm test runs: replays every
#                                          committed input in fuzz/corpus/TARGET, then
#                                          RUNS executions (default: the target's in
#                                          check_runs below) with a fixed seed from those
#                                          inputs only; exit 1 on a crash, 77 when
#                                          it found none but ran with address
#                                          randomisation (setarch -R refused), so
#                                          not bit for bit
#   scripts/fuzz.sh campaign TARGET SECONDS
#                                          a long random run (seeded from the clock);
#                                          exit 1 on a crash, saved as a regression seed
#   scripts/fuzz.sh run TARGET SECONDS     the same as campaign (its older name)
#   scripts/fuzz.sh replay TARGET FILE...  runs the inputs once each
#   scripts/fuzz.sh seeds                  rewrites fuzz/corpus/ from the repository
#
# `check` is fixed per commit: the same starting corpus (the committed one,
# never what earlier runs kept), the same seed (FUZZ_SEED, default 1) and a
# count of executions rather than a time; what it finds goes to a scratch
# folder emptied first. Bit for bit: the targets' hash keys are fixed
# (fuzz_targets/fixed_keys.rs) and the run has no address randomisation
# (`setarch -R`), so two runs keep the same inputs (fuzz/README.md).
#
# `campaign` is where new inputs are found: it reads the committed seeds and
# keeps what it finds in target/fuzz-corpus/TARGET (git-ignored), so later
# campaigns start from where earlier ones got. A crash is saved in
# target/fuzz-artifacts/TARGET/ and copied to fuzz/corpus/TARGET/regress-HASH,
# a seed to commit with the fix (`check` then replays it on every run).
# FUZZ_ARGS adds libFuzzer flags to a campaign (e.g. FUZZ_ARGS=-jobs=1).
set -euo pipefail
SCRIPT_NAME=fuzz
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ -x "$CARGO_FUZZ_BIN" ] || die "cargo-fuzz $CARGO_FUZZ_VERSION not found at $CARGO_FUZZ_BIN: run scripts/setup.sh --test"
# No sanitizer: the decoders are safe Rust, and without ASan the build and
# every run take about half the time. Debug assertions (-a) turn integer
# overflow into a crash. 16 codegen units: the build takes both cores.
fuzz() { RUSTUP_TOOLCHAIN="$FUZZ_TOOLCHAIN" "$CARGO_FUZZ_BIN" fuzz "$1" --fuzz-dir "$ROOT/fuzz" -s none -a --codegen-units 16 "${@:2}"; }
bin() { echo "$ROOT/fuzz/target/x86_64-unknown-linux-gnu/release/$1"; }

targets() { sed -n 's/^name = "\(.*\)"$/\1/p' "$ROOT/fuzz/Cargo.toml" | grep -v '^meshperf-fuzz$'; }

# Executions per `check`, about 4 s each on a loaded 2-core machine (the
# targets differ 2000-fold in speed: fuzz/README.md). More executions find
# more; these are what every `npm test` pays.
check_runs() {
    case "$1" in
        udp_header) echo 2000000 ;;
        frame | http_head) echo 150000 ;;
        plan | control) echo 100000 ;;
        permalink) echo 6000 ;;
        peer_lines) echo 3000 ;;
        permalink_body) echo 1500 ;;
        *) die "no check_runs for fuzz target '$1' (add it to scripts/fuzz.sh)" ;;
    esac
}

# no_aslr CMD...: CMD without address randomisation where the system allows
# it (code under test that reads pointer values or alignments, such as
# core's byte searches, takes other paths at other addresses); else as is.
no_aslr() {
    if setarch -R true 2>/dev/null; then setarch -R "$@"; else "$@"; fi
}

known() { targets | grep -qx "$1" || die "no fuzz target '$1' (scripts/fuzz.sh list)"; }

# keep_crashes TARGET DIR: every crash-/timeout-/oom- input in DIR becomes
# fuzz/corpus/TARGET/regress-HASH, the seed to commit with its fix.
keep_crashes() {
    local f name
    for f in "$2"/crash-* "$2"/timeout-* "$2"/oom-*; do
        [ -f "$f" ] || continue
        name="regress-$(sha1sum "$f" | cut -c1-16)"
        cp "$f" "$ROOT/fuzz/corpus/$1/$name"
        log "$1: kept $(basename "$f") as fuzz/corpus/$1/$name: commit it with the fix (replay: scripts/fuzz.sh replay $1 fuzz/corpus/$1/$name)"
    done
}

case "${1:-}" in
    list) targets ;;
    build) fuzz build ;;
    check)
        t="${2:?usage: scripts/fuzz.sh check TARGET [RUNS]}"
        known "$t"
        runs="${3:-$(check_runs "$t")}"
        seed="${FUZZ_SEED:-1}"
        seeds="$ROOT/fuzz/corpus/$t"
        scratch="$ROOT/target/fuzz-check/$t"
        art="$ROOT/target/fuzz-artifacts/$t"
        rm -rf "$scratch"
        mkdir -p "$scratch" "$art"
        fuzz build "$t"
        # 1. Every committed input once, the regression seeds among them.
        n=$(find "$seeds" -type f | wc -l)
        if ! "$(bin "$t")" -timeout=10 -artifact_prefix="$art/" "$seeds"/* >"$scratch.replay.log" 2>&1; then
            cat "$scratch.replay.log"
            log "$t: a committed input in fuzz/corpus/$t crashes (replay: scripts/fuzz.sh replay $t FILE)"
            exit 1
        fi
        log "$t: replayed the $n committed inputs, no crash"
        # 2. RUNS executions from them with a fixed seed. The inputs are
        # handed over as a list in name order (-seed_inputs), not as a
        # folder: libFuzzer shuffles them with the seed, and a folder's
        # order is the file system's. New inputs go to the scratch folder.
        LC_ALL=C find "$seeds" -type f | LC_ALL=C sort | paste -sd, - >"$scratch.seeds"
        bitwise=1
        setarch -R true 2>/dev/null || bitwise=0
        if ! no_aslr "$(bin "$t")" "$scratch" -seed_inputs=@"$scratch.seeds" -seed="$seed" -runs="$runs" -reload=0 \
            -timeout=10 -artifact_prefix="$art/" -print_final_stats=1; then
            log "$t: crashed with -seed=$seed -runs=$runs; the input is in target/fuzz-artifacts/$t/ (replay: scripts/fuzz.sh replay $t FILE; then keep it as fuzz/corpus/$t/regress-NAME)"
            exit 1
        fi
        log "$t: no crash in $runs runs from the committed corpus, seed $seed"
        if [ $bitwise -eq 0 ]; then
            # Exit 77: npm test counts it as skipped (scripts/test.sh), with this last line.
            log "$t: not bit for bit: setarch -R (no address randomisation) is refused here, so another run may keep other inputs"
            exit 77
        fi
        ;;
    run | campaign)
        t="${2:?usage: scripts/fuzz.sh campaign TARGET SECONDS}"
        secs="${3:?usage: scripts/fuzz.sh campaign TARGET SECONDS}"
        known "$t"
        work="$ROOT/target/fuzz-corpus/$t"
        art="$ROOT/target/fuzz-artifacts/$t/campaign-$(date -u +%Y%m%dT%H%M%S)"
        mkdir -p "$work" "$art"
        # Up to date after `build` (then it returns at once); the binary is
        # run directly, as `cargo fuzz run` would build twice more.
        fuzz build "$t"
        # -timeout: an input that takes 10 s is a hang, reported as a crash.
        # shellcheck disable=SC2086
        if ! "$(bin "$t")" "$work" "$ROOT/fuzz/corpus/$t" \
            -max_total_time="$secs" -timeout=10 -artifact_prefix="$art/" -print_final_stats=1 ${FUZZ_ARGS:-}; then
            keep_crashes "$t" "$art"
            log "$t: crashed; the input is in ${art#"$ROOT/"}/"
            exit 1
        fi
        log "$t: no crash in $secs s; corpus target/fuzz-corpus/$t: $(find "$work" -type f | wc -l) inputs"
        ;;
    replay)
        t="${2:?usage: scripts/fuzz.sh replay TARGET FILE...}"
        [ $# -ge 3 ] || die "usage: scripts/fuzz.sh replay TARGET FILE..."
        known "$t"
        fuzz build "$t"
        "$(bin "$t")" -timeout=10 "${@:3}"
        ;;
    seeds)
        # A normal (stable) build: the generator uses the real encoders.
        cargo run --manifest-path "$ROOT/fuzz/Cargo.toml" --example seeds
        ;;
    *) die "usage: scripts/fuzz.sh list|build|check TARGET [RUNS]|campaign TARGET SECONDS|replay TARGET FILE...|seeds" ;;
esac
