#!/usr/bin/env bash
# The macOS agent compiles: `cargo check -p meshperf-agent` for
# x86_64-apple-darwin and aarch64-apple-darwin (issue 23 part 5). Nothing is
# linked: there is no macOS SDK on Linux, and Apple's licence keeps it off
# machines that are not Macs; build the binary on a Mac.
#
# ring's build script compiles C (and assembly) for the target even for a
# check, and Debian has no C compiler for Apple targets: Zig's clang (PyPI's
# ziglang, pinned, in a venv in .tools/zig-VERSION) compiles them with its
# own libc headers for macOS (`zig cc -target x86_64-macos`), through a
# three-line wrapper per target (cc-rs takes CC_<target> as one program).
#
# In npm test (the issue asks that CI check both targets): about 95 s here
# from nothing for the two targets (ziglang installed; its wheel is about
# 50 MB, 440 MB unpacked), 32 s with a changed CC, in npm test's profile
# for cross builds ($MESHPERF_STATIC_PROFILE, test-cross there; test-release
# when run alone).
set -euo pipefail
SCRIPT_NAME=check-macos
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ZIG_VERSION=0.17.0
zig_venv="$ROOT/.tools/zig-$ZIG_VERSION"
if [ ! -x "$zig_venv/bin/python" ] || ! "$zig_venv/bin/python" -m ziglang version >/dev/null 2>&1; then
    rm -rf "$zig_venv"
    run_phase "python3 -m venv .tools/zig-$ZIG_VERSION" python3 -m venv "$zig_venv"
    run_phase "pip install ziglang==$ZIG_VERSION" \
        "$zig_venv/bin/pip" install -q --disable-pip-version-check "ziglang==$ZIG_VERSION"
fi

# The wrappers live beside zig, at a path that stays the same: CC_<target>
# is part of ring's build fingerprint, a new path would rebuild it.
wrappers="$zig_venv/cc"
mkdir -p "$wrappers"
t0=$SECONDS
for pair in x86_64-apple-darwin:x86_64-macos aarch64-apple-darwin:aarch64-macos; do
    target=${pair%%:*} zig_target=${pair#*:}
    [ -d "$(rustc --print sysroot)/lib/rustlib/$target/lib" ] \
        || die "the Rust target $target is missing (rustup target add $target; scripts/setup.sh --test does)"
    # cc-rs adds --target=x86_64-apple-macosx, which zig's own target
    # parser refuses: the wrapper drops it for zig's -target (as
    # cargo-zigbuild's does).
    printf '#!/bin/sh\nfor a; do shift; case "$a" in --target=*) ;; *) set -- "$@" "$a" ;; esac; done\nexec "%s" -m ziglang cc -target %s "$@"\n' \
        "$zig_venv/bin/python" "$zig_target" >"$wrappers/cc-$target"
    chmod +x "$wrappers/cc-$target"
    env_target=${target//-/_}
    export "CC_$env_target=$wrappers/cc-$target"
done
run_phase "cargo check --target x86_64-apple-darwin --target aarch64-apple-darwin" \
    cargo check -q --profile "${MESHPERF_STATIC_PROFILE:-test-release}" -p meshperf-agent \
    --target x86_64-apple-darwin --target aarch64-apple-darwin
log "ok: the agent checks for x86_64-apple-darwin and aarch64-apple-darwin ($((SECONDS - t0)) s)"
