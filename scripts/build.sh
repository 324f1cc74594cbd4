#!/usr/bin/env bash
# Builds meshperf in dependency order:
#   1. the wasm crate (wasm/: bindings over stats/ and the driver) -> wasm32 -> wasm-bindgen (--target web) -> web/src/lib/wasm-pkg/
#      three times: meshperf_stats (statistics), meshperf_codec (plans, the step driver) and
#      meshperf_view (permalinks, CSV, latency under load's card and lanes)
#   2. the kinds' parameter tables (protocol/src/params/spec.rs)
#      as TypeScript                                 -> web/src/lib/generated/params.ts
#   3. the web app (vite)                                      -> web/dist/
#   4. the agent (profile release, or $MESHPERF_PROFILE), web/dist embedded -> target/release/meshperf
# Expects scripts/setup.sh to have run (npm start / npm test do that first).
set -euo pipefail
SCRIPT_NAME=build
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

t_all=$SECONDS
[ -x "$WBG_BIN" ] || die "wasm-bindgen $WBG_VERSION not found at $WBG_BIN: run scripts/setup.sh first"
[ -d "$ROOT/node_modules" ] || die "node_modules missing: run scripts/setup.sh first"

# 1. wasm: one crate, three modules (wasm/Cargo.toml, one feature each):
#    meshperf_stats  feature `stats`: the statistics, the web app's first load
#    meshperf_codec  feature `codec`: plan expansion, presets, the checks, the
#                    step driver, the matrix's schedule; loaded to run
#    meshperf_view   feature `view`: permalinks, CSV, the matrix's cells,
#                    latency under load's card, verdict and lanes, the link
#                    line; loaded to show a result
#    The last two only when needed, beside meshperf_stats (so without the
#    statistics).
pkg="$ROOT/web/src/lib/wasm-pkg"
wasm_out="$ROOT/target/wasm32-unknown-unknown/wasm-release/meshperf_wasm.wasm"
# wasm-opt only from npm's binaryen package (Debian's is too old for the
# features rustc emits). Not installed means not run, and we say so.
wasm_opt="$ROOT/node_modules/.bin/wasm-opt"
[ -x "$wasm_opt" ] || log "wasm-opt not installed (npm package binaryen): wasm left unoptimised"
rm -rf "$pkg" # generated; also drops modules of older builds (meshperf_wasm.*)

# 2 runs beside 1: a host build in target/debug (its own cargo lock) while
# the wasm builds spend most of their time in one-unit fat LTO on one core
# (about 40 s of npm test on two cores). Its output is shown after them.
params_log="$ROOT/target/params-export.log"
mkdir -p "$ROOT/target"
log "export_params, export_ts -> web/src/lib/generated/ (beside the wasm builds) ..."
t_params=$SECONDS
(cd "$ROOT" && npm run -s params -w web) >"$params_log" 2>&1 &
params_pid=$!
trap 'kill "$params_pid" 2>/dev/null || true' EXIT
build_wasm() { # <out-name> <cargo feature args...>
    local name=$1
    shift
    run_phase "cargo build -p meshperf-wasm $* (wasm32, profile wasm-release)" \
        cargo build -p meshperf-wasm --profile wasm-release --target wasm32-unknown-unknown "$@"
    [ -f "$wasm_out" ] || die "cargo did not produce $wasm_out"
    run_phase "wasm-bindgen --target web -> web/src/lib/wasm-pkg/$name" \
        "$WBG_BIN" "$wasm_out" --target web --out-dir "$pkg" --out-name "$name"
    if [ -x "$wasm_opt" ]; then
        run_phase "wasm-opt -Oz $name" "$wasm_opt" -Oz --strip-debug --strip-producers --enable-bulk-memory --enable-nontrapping-float-to-int \
            --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types \
            "$pkg/${name}_bg.wasm" -o "$pkg/${name}_bg.wasm"
    fi
    log "wasm $name: $(wc -c <"$pkg/${name}_bg.wasm") bytes, $(gzip -9c "$pkg/${name}_bg.wasm" | wc -c) gzip"
}
build_wasm meshperf_stats --no-default-features --features stats
build_wasm meshperf_codec --no-default-features --features codec
build_wasm meshperf_view --no-default-features --features view

# 2. generated from the Rust types: the parameter tables the page's form is
#    built from, and the TypeScript declarations of the wire shapes (web's
#    dev, build, check and test:unit scripts make them too)
params_rc=0
wait "$params_pid" || params_rc=$?
trap - EXIT
cat "$params_log"
[ "$params_rc" -eq 0 ] || die "export_params, export_ts -> web/src/lib/generated/ failed (after $((SECONDS - t_params)) s): npm run -s params -w web"
log "export_params, export_ts -> web/src/lib/generated/ done in $((SECONDS - t_params)) s (beside the wasm builds)"

# 3. web
run_phase "npm run build -w web -> web/dist" npm run build -w web
[ -f "$ROOT/web/dist/index.html" ] || die "web build did not produce web/dist/index.html"

# 4. agent (its build.rs embeds web/dist)
run_phase "cargo build --profile $MESHPERF_PROFILE -p meshperf-agent" cargo build --profile "$MESHPERF_PROFILE" -p meshperf-agent
[ -x "$AGENT_BIN" ] || die "cargo did not produce $AGENT_BIN"
log "agent: $AGENT_BIN ($(wc -c <"$AGENT_BIN") bytes)"
log "built in $((SECONDS - t_all)) s"
