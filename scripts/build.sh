#!/usr/bin/env bash
# Builds meshperf in dependency order:
#   1. the wasm crate -> wasm32 -> wasm-bindgen (--target web) -> web/src/lib/wasm-pkg/
#   2. the web app (vite)                                      -> web/dist/
#   3. the agent in release mode, web/dist embedded            -> target/release/meshperf
# Expects scripts/setup.sh to have run (npm start / npm test do that first).
set -euo pipefail
SCRIPT_NAME=build
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

t_all=$SECONDS
[ -x "$WBG_BIN" ] || die "wasm-bindgen $WBG_VERSION not found at $WBG_BIN: run scripts/setup.sh first"
[ -d "$ROOT/node_modules" ] || die "node_modules missing: run scripts/setup.sh first"

# 1. wasm
run_phase "cargo build -p meshperf-wasm (wasm32, profile wasm-release)" \
    cargo build -p meshperf-wasm --profile wasm-release --target wasm32-unknown-unknown
wasm_in="$ROOT/target/wasm32-unknown-unknown/wasm-release/meshperf_wasm.wasm"
[ -f "$wasm_in" ] || die "cargo did not produce $wasm_in"
pkg="$ROOT/web/src/lib/wasm-pkg"
run_phase "wasm-bindgen --target web -> web/src/lib/wasm-pkg" \
    "$WBG_BIN" "$wasm_in" --target web --out-dir "$pkg" --out-name meshperf_wasm
# wasm-opt only from npm's binaryen package (Debian's is too old for the
# features rustc emits). Not installed means not run, and we say so.
wasm_opt="$ROOT/node_modules/.bin/wasm-opt"
if [ -x "$wasm_opt" ]; then
    run_phase "wasm-opt -Oz" "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
        --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types \
        "$pkg/meshperf_wasm_bg.wasm" -o "$pkg/meshperf_wasm_bg.wasm"
else
    log "wasm-opt not installed (npm package binaryen): wasm left unoptimised"
fi
log "wasm: $(wc -c <"$pkg/meshperf_wasm_bg.wasm") bytes"

# 2. web
run_phase "npm run build -w web -> web/dist" npm run build -w web
[ -f "$ROOT/web/dist/index.html" ] || die "web build did not produce web/dist/index.html"

# 3. agent (its build.rs embeds web/dist)
run_phase "cargo build --release -p meshperf-agent" cargo build --release -p meshperf-agent
[ -x "$AGENT_BIN" ] || die "cargo did not produce $AGENT_BIN"
log "agent: $AGENT_BIN ($(wc -c <"$AGENT_BIN") bytes)"
log "built in $((SECONDS - t_all)) s"
