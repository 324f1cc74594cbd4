# Shared helpers for scripts/*.sh. Sourced, not run.
# Every script works from the repository root, whatever the caller's cwd.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# wasm-bindgen-cli must match the wasm-bindgen crate exactly: read the version
# from Cargo.lock (the crate pins it with "=x.y.z" in wasm/Cargo.toml).
WBG_VERSION="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock 2>/dev/null || true)"
WBG_VERSION="${WBG_VERSION:-0.2.130}"
WBG_ROOT="$ROOT/.tools/wasm-bindgen-$WBG_VERSION"
WBG_BIN="$WBG_ROOT/bin/wasm-bindgen"

# The agent's cargo profile: release (fat LTO: what npm start, releases and
# the bench run) unless MESHPERF_PROFILE names another. npm test builds
# test-release, the profile its cargo test uses (no cross-crate LTO, parallel codegen),
# so one build of the agent and its crates serves every phase of the suite.
MESHPERF_PROFILE="${MESHPERF_PROFILE:-release}"
AGENT_BIN="${MESHPERF_BIN:-$ROOT/target/$MESHPERF_PROFILE/meshperf}"

# Debian's chromium is the only browser the tests use (no browser downloads).
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

log() { printf '%s: %s\n' "${SCRIPT_NAME:-meshperf}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${SCRIPT_NAME:-meshperf}" "$*" >&2; exit 1; }

# run_phase NAME CMD...: runs CMD, logs how long it took, fails loudly.
run_phase() {
    local name="$1"; shift
    local t0=$SECONDS
    log "$name ..."
    if ! "$@"; then
        die "$name failed (after $((SECONDS - t0)) s): $*"
    fi
    log "$name done in $((SECONDS - t0)) s"
}

# 128 random bits as 32 hex digits.
random_token() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }

# kernel_drops [NS...]: what the kernel dropped of the packets on their way
# in, as it counts them, one figure a line: UDP RcvbufErrors (a socket's
# full receive buffer; Udp6RcvbufErrors added) in each network namespace
# NS (in this one with none), then the CPUs' full input backlogs
# (softnet_stat's second column, host-wide, any packet). A test takes it
# before and after a run and holds the loss it measured to the growth.
kernel_drops() {
    local ns s=0 _ d rest
    for ns in "${@:-}"; do
        ${ns:+ip netns exec "$ns"} awk '
            /^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else n += $c["RcvbufErrors"] }
            /^Udp6RcvbufErrors/ { n += $2 }
            END { print n + 0 }' /proc/net/snmp /proc/net/snmp6 2>/dev/null
    done
    while read -r _ d rest; do s=$((s + 16#$d)); done </proc/net/softnet_stat
    echo "$s"
}

# cargo-fuzz (the fuzz targets in fuzz/, on nightly), pinned, in .tools/,
# and the dated nightly it builds them with (fuzz/rust-toolchain.toml).
FUZZ_TOOLCHAIN="$(sed -n 's/^channel = "\(.*\)"$/\1/p' "$ROOT/fuzz/rust-toolchain.toml")"
CARGO_FUZZ_VERSION=0.13.2
CARGO_FUZZ_ROOT="$ROOT/.tools/cargo-fuzz-$CARGO_FUZZ_VERSION"
CARGO_FUZZ_BIN="$CARGO_FUZZ_ROOT/bin/cargo-fuzz"
# stamp-suite, the STAMP peer nobody here wrote (agent/tests/integration/stamp.rs).
STAMP_SUITE_VERSION=1.0.0
STAMP_SUITE_ROOT="$ROOT/.tools/stamp-suite-$STAMP_SUITE_VERSION"
STAMP_SUITE_BIN="$STAMP_SUITE_ROOT/bin/stamp-suite"

# kustomize (tests/deploy/validate.sh builds deploy/kubernetes with it),
# pinned, built by `go install` into .tools/ (v5.8.2 and later need Go 1.27).
KUSTOMIZE_VERSION=v5.8.1
KUSTOMIZE_BIN="$ROOT/.tools/kustomize-$KUSTOMIZE_VERSION/kustomize"

# amd64_musl_env: a C compiler for ring's C in x86_64-unknown-linux-musl builds:
# cc looks for x86_64-linux-musl-gcc, which Debian's musl-tools names
# musl-gcc. scripts/release.sh and npm test's early build of the same binary
# (scripts/test.sh) both call it, so the second finds the first's fresh.
amd64_musl_env() {
    if ! command -v x86_64-linux-musl-gcc >/dev/null && [ -z "${CC_x86_64_unknown_linux_musl:-}" ]; then
        command -v musl-gcc >/dev/null || die "no C compiler for x86_64-unknown-linux-musl (ring needs one): install musl-tools (apt-get install musl-tools), then re-run"
        export CC_x86_64_unknown_linux_musl=musl-gcc
    fi
}

# aarch64-unknown-linux-musl (the arm64 release binary, tests/platforms/arm64.sh):
# Debian's gcc-aarch64-linux-gnu links it (rustc brings musl's crt objects
# and libc.a for the target, self-contained, so a glibc cross gcc serves as
# the linker driver) and compiles ring's C and assembly. Chosen over zig and
# cargo-zigbuild: one apt package, no tool to download and build, and the
# same linker rustc's own CI uses for this target. Dies naming the package
# when it is missing.
aarch64_musl_env() {
    command -v aarch64-linux-gnu-gcc >/dev/null \
        || die "no linker for aarch64-unknown-linux-musl: install gcc-aarch64-linux-gnu (apt-get install gcc-aarch64-linux-gnu), then re-run"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER:-aarch64-linux-gnu-gcc}"
    export CC_aarch64_unknown_linux_musl="${CC_aarch64_unknown_linux_musl:-aarch64-linux-gnu-gcc}"
    export AR_aarch64_unknown_linux_musl="${AR_aarch64_unknown_linux_musl:-aarch64-linux-gnu-ar}"
}

# x86_64-pc-windows-gnu (the Windows agent, tests/platforms/windows.sh):
# Debian's gcc-mingw-w64-x86-64 links it and compiles ring's C (rustc
# brings the target's own mingw runtime objects). Dies naming the package
# when it is missing.
windows_gnu_env() {
    command -v x86_64-w64-mingw32-gcc >/dev/null \
        || die "no linker for x86_64-pc-windows-gnu: install gcc-mingw-w64-x86-64 (apt-get install gcc-mingw-w64-x86-64), then re-run"
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="${CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER:-x86_64-w64-mingw32-gcc}"
    export CC_x86_64_pc_windows_gnu="${CC_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-gcc}"
    export AR_x86_64_pc_windows_gnu="${AR_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-ar}"
}

# Wine's loader: Debian's wine64 package installs it as /usr/lib/wine/wine64
# (the `wine` wrapper on PATH comes with the `wine` package, not needed here).
wine64_bin() {
    command -v wine64 2>/dev/null || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || true
}
