#!/usr/bin/env bash
# Installs what building (and with --test, testing) meshperf needs. Idempotent:
# when everything is in place it only checks and returns within a second or two.
#
#   scripts/setup.sh           Rust wasm target, wasm-bindgen-cli, npm packages
#   scripts/setup.sh --test    the same plus Debian's chromium for Playwright,
#                              kubernetes-validate (PyPI) in .tools/kv,
#                              kustomize (Go modules, if go is installed) in
#                              .tools/kustomize-VERSION, as root
#                              NetfilterQueue (PyPI) in .tools/nfq, and as
#                              root the netns tests' Debian packages (dnsmasq,
#                              umoci, buildah, tracepath, ethtool) and Rust's x86_64-unknown-linux-musl target,
#                              prometheus (and promtool) and systemd (systemd-analyze),
#                              and for tests/platforms/ gcc-aarch64-linux-gnu, qemu-user-static,
#                              lintian, groff and Rust's aarch64-unknown-linux-musl target,
#                              gcc-mingw-w64-x86-64 and wine64 (without their recommends)
#                              and Rust's x86_64-pc-windows-gnu, x86_64-apple-darwin and
#                              aarch64-apple-darwin targets (the Windows agent, the macOS check),
#                              and for the fuzz targets the nightly toolchain
#                              fuzz/rust-toolchain.toml names (rustup) and
#                              cargo-fuzz in .tools/cargo-fuzz-VERSION,
#                              and the STAMP peers: stamp-suite (crates.io,
#                              pinned) in .tools/stamp-suite-VERSION and
#                              Debian's tshark (its TWAMP-test dissector)
#
# Works as root without a terminal (CI=true, no stdin) and as a normal user
# (apt-get then goes through sudo).
set -euo pipefail
SCRIPT_NAME=setup
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Of wasm-bindgen-cli only the `wasm-bindgen` binary, without its default
# feature (rustls for ureq, which only its test runner uses to fetch
# webdrivers): no TLS stack to compile for a tool that never goes online.
# Tools this project only runs (wasm-bindgen-cli, cargo-fuzz), not the
# product: built unoptimised, in half the time on a fresh machine
# (wasm-bindgen-cli 82 s against 172 s here); wasm-bindgen then takes 0.5 s
# instead of 0.1 s per module, and its output is byte for byte the same.
TOOL_PROFILE=(env CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_LTO=off
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_DEBUG=0)

want_test=0
for arg in "$@"; do
    case "$arg" in
        --test) want_test=1 ;;
        *) die "unknown argument '$arg' (usage: scripts/setup.sh [--test])" ;;
    esac
done

# --- prerequisites we do not install ----------------------------------------
command -v cargo >/dev/null || die "cargo not found: install Rust with rustup (https://rustup.rs), then re-run"
command -v node >/dev/null || die "node not found: install Node.js 20.19 or later (with npm), then re-run"
command -v npm >/dev/null || die "npm not found: install npm (it comes with Node.js), then re-run"
command -v flock >/dev/null || die "flock not found: install util-linux, then re-run"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: meshperf needs Node.js 20.19 or later"

# --- Rust target for the wasm crate -------------------------------------------
wasm_target_installed() {
    local sysroot
    sysroot="$(rustc --print sysroot)" || return 1
    [ -d "$sysroot/lib/rustlib/wasm32-unknown-unknown/lib" ]
}
if ! wasm_target_installed; then
    command -v rustup >/dev/null || die "Rust target wasm32-unknown-unknown is missing and rustup is not installed: install it for your toolchain, then re-run"
    run_phase "rustup target add wasm32-unknown-unknown" rustup target add wasm32-unknown-unknown
fi

# --- wasm-bindgen-cli, pinned to the crate's version, in .tools/ -------------
wbg_ok() { [ -x "$WBG_BIN" ] && [ "$("$WBG_BIN" --version 2>/dev/null)" = "wasm-bindgen $WBG_VERSION" ]; }
if ! wbg_ok; then
    mkdir -p "$ROOT/.tools"
    # The same version already installed elsewhere (PATH, ~/.cargo/bin) is
    # copied instead of compiled again.
    for cand in "$(command -v wasm-bindgen || true)" "$HOME/.cargo/bin/wasm-bindgen"; do
        if [ -n "$cand" ] && [ -x "$cand" ] && [ "$("$cand" --version 2>/dev/null)" = "wasm-bindgen $WBG_VERSION" ]; then
            mkdir -p "$WBG_ROOT/bin" && cp "$cand" "$WBG_BIN" && log "using $cand (wasm-bindgen $WBG_VERSION)" && break
        fi
    done
fi
# Compiled in the background while the downloads below (npm, Debian, PyPI,
# Go, rustup) run, and waited for at the end: on a fresh machine the
# compile is the longest step and the downloads mostly wait on the network.
install_wbg() {
    # One install at a time into this folder: scripts serialise on a lock, and
    # an install started by hand into this same folder (cargo install ...
    # --root .tools/wasm-bindgen-VERSION) is waited for rather than raced.
    # Installs into other checkouts are none of our business.
    install_running_here() {
        local pid root
        for pid in $(pgrep -f 'cargo install wasm-bindgen-cli' || true); do
            root="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n '/^--root$/{n;p;q}')"
            [ -n "$root" ] || continue
            case "$root" in /*) ;; *) root="$(readlink "/proc/$pid/cwd" 2>/dev/null)/$root" ;; esac
            [ "$(realpath -m "$root")" = "$(realpath -m "$WBG_ROOT")" ] && return 0
        done
        return 1
    }
    exec 9>"$ROOT/.tools/wasm-bindgen.lock"
    flock 9
    waited=0
    while install_running_here; do
        [ $waited -eq 0 ] && log "another install of wasm-bindgen-cli $WBG_VERSION into .tools/ is running (see .tools/wbg.log); waiting for it"
        waited=$((waited + 5))
        [ $waited -le 1800 ] || die "waited 30 min for the other wasm-bindgen-cli install; stop it or let it finish, then re-run"
        sleep 5
    done
    if ! wbg_ok; then
        log "installing wasm-bindgen-cli $WBG_VERSION into .tools/ (a few minutes, once)"
        run_phase "cargo install wasm-bindgen-cli $WBG_VERSION" \
            "${TOOL_PROFILE[@]}" cargo install wasm-bindgen-cli --version "$WBG_VERSION" --root "$WBG_ROOT" \
                --no-default-features --bin wasm-bindgen
        wbg_ok || die "wasm-bindgen-cli was installed but '$WBG_BIN --version' does not print $WBG_VERSION"
    fi
    flock -u 9
    exec 9>&-
}
wbg_pid=
if ! wbg_ok; then
    install_wbg &
    wbg_pid=$!
fi

# --- npm packages (workspaces web and e2e) -----------------------------------
# npm ci replaces node_modules wholesale; run it when node_modules is missing
# or older than the lock file. The lock serialises with other npm runs in this
# checkout.
npm_marker="$ROOT/node_modules/.package-lock.json"
if [ ! -f "$npm_marker" ] || [ "$ROOT/package-lock.json" -nt "$npm_marker" ]; then
    run_phase "npm ci" flock "$ROOT/.npm.lock" npm ci --no-audit --no-fund
    touch "$npm_marker"
fi

# --- Debian packages for the tests: chromium (Playwright), python3-venv, and
# as root the netns harness's iproute2, iptables, dnsmasq, umoci, buildah ----
missing=()
if [ $want_test -eq 1 ]; then
    [ -x /usr/bin/chromium ] || missing+=(chromium)
    if [ "$(id -u)" -eq 0 ]; then
        command -v ip >/dev/null || missing+=(iproute2)
        command -v tc >/dev/null || missing+=(iproute2)
        command -v iptables >/dev/null || missing+=(iptables)
        # A real DNS server for the discovery test (tests/netns/dns.sh).
        command -v dnsmasq >/dev/null || missing+=(dnsmasq-base)
        # tracepath, which tests/netns/path.sh compares the path kind with.
        command -v tracepath >/dev/null || missing+=(iputils-tracepath)
        # The OCI image test (tests/netns/image.sh): umoci builds and unpacks
        # it; buildah builds deploy/Containerfile to compare (no daemon).
        command -v umoci >/dev/null || missing+=(umoci)
        command -v buildah >/dev/null || missing+=(buildah)
        # ... and skopeo copies one platform out of its image index.
        command -v skopeo >/dev/null || missing+=(skopeo)
        # The static build's C compiler: ring (TLS) builds its C and
        # assembly with musl-gcc for x86_64-unknown-linux-musl.
        command -v musl-gcc >/dev/null || missing+=(musl-tools)
        # The delay line of tests/netns/lul.sh: NetfilterQueue (PyPI, into
        # .tools/nfq below) builds against libnetfilter_queue and Python.
        [ -e /usr/include/libnetfilter_queue/libnetfilter_queue.h ] || missing+=(libnetfilter-queue-dev)
        python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null || missing+=(python3-dev)
        command -v cc >/dev/null || missing+=(gcc)
        # tests/netns/lul.sh turns the veths' segmentation offloads off.
        command -v ethtool >/dev/null || missing+=(ethtool)
    fi
    # A real Prometheus scraping `meshperf monitor` (tests/monitor/prometheus.sh,
    # no root needed), and its promtool for tests/deploy/validate.sh.
    command -v prometheus >/dev/null || missing+=(prometheus)
    # systemd-analyze verify of the unit (tests/deploy/validate.sh, and
    # tests/platforms/deb.sh on the installed package).
    command -v systemd-analyze >/dev/null || missing+=(systemd)
    # tests/platforms/: the arm64 agent (Debian's cross gcc links the static
    # aarch64-unknown-linux-musl binary, qemu-user-static runs it), the .deb
    # (lintian), the man pages (groff renders them).
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
    command -v lintian >/dev/null || missing+=(lintian)
    command -v groff >/dev/null || missing+=(groff-base)
    # agent/tests/integration/stamp.rs: Wireshark's dissector reads our packets.
    command -v tshark >/dev/null || missing+=(tshark)
    # agent/tests/integration/iperf3.rs: the real iperf3 client and server
    # against the agent's --iperf3 listener and --json-format iperf3.
    [ -x /usr/bin/iperf3 ] || missing+=(iperf3)
    # The venv of tests/deploy/validate.sh (Debian splits venv out of python3).
    command -v python3 >/dev/null || missing+=(python3)
    python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
fi
# debian_install [--no-install-recommends] PACKAGE...: apt-get install (as
# root, or through sudo), with one apt-get update and a second try when the
# first fails (a stale package list); dies with the command to run.
debian_install() {
    local opts=() what="installing from Debian"
    if [ "$1" = --no-install-recommends ]; then opts=("$1"); what="$what (no recommends)"; shift; fi
    command -v apt-get >/dev/null || die "missing $* and apt-get is not available: install them, then re-run"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || die "missing $* and installing needs root: run 'apt-get install ${opts[*]:+${opts[*]} }$*' as root, then re-run"
        sudo=(sudo)
    fi
    log "$what: $*"
    if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${opts[@]}" "$@" </dev/null; then
        log "apt-get install failed; running apt-get update and trying again"
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q </dev/null || die "apt-get update failed: check network access to the Debian mirrors"
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${opts[@]}" "$@" </dev/null \
            || die "apt-get install $* failed: see the apt output above"
    fi
}
if [ ${#missing[@]} -gt 0 ]; then
    debian_install "${missing[@]}"
    [ $want_test -eq 0 ] || [ -x /usr/bin/chromium ] || die "chromium was installed but /usr/bin/chromium is missing"
fi

# tests/platforms/windows.sh: mingw-w64 links the Windows agent, Wine runs
# it. Without their recommends: wine64's would add fonts, GStreamer, CUPS
# and a desktop's worth of libraries a console agent never loads.
norec=()
if [ $want_test -eq 1 ]; then
    command -v x86_64-w64-mingw32-gcc >/dev/null || norec+=(gcc-mingw-w64-x86-64)
    [ -n "$(wine64_bin)" ] || norec+=(wine64)
fi
[ ${#norec[@]} -eq 0 ] || debian_install --no-install-recommends "${norec[@]}"

if [ $want_test -eq 1 ]; then
    # --- kubernetes-validate (API schemas) for tests/deploy/validate.sh, in a
    # venv in .tools/kv, pinned by tests/deploy/requirements.txt -------------
    kv="$ROOT/.tools/kv"
    kv_stamp="$kv/requirements.txt"
    if [ ! -x "$kv/bin/kubernetes-validate" ] || ! cmp -s "$ROOT/tests/deploy/requirements.txt" "$kv_stamp"; then
        rm -rf "$kv"
        run_phase "python3 -m venv .tools/kv" python3 -m venv "$kv"
        run_phase "pip install kubernetes-validate into .tools/kv" \
            "$kv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/deploy/requirements.txt"
        cp "$ROOT/tests/deploy/requirements.txt" "$kv_stamp"
    fi
    # --- kustomize for tests/deploy/validate.sh, pinned, from the Go module
    # proxy into .tools/kustomize-VERSION (about 90 s once) ------------------
    if [ ! -x "$KUSTOMIZE_BIN" ]; then
        if command -v go >/dev/null; then
            run_phase "go install kustomize $KUSTOMIZE_VERSION into .tools/" \
                env GOBIN="$(dirname "$KUSTOMIZE_BIN")" GOFLAGS=-buildvcs=false \
                go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
            [ -x "$KUSTOMIZE_BIN" ] || die "go install kustomize did not leave $KUSTOMIZE_BIN"
        else
            log "go not found: kustomize $KUSTOMIZE_VERSION not installed, so tests/deploy/validate.sh fails (not run) unless kustomize or kubectl is on PATH"
        fi
    fi
    # --- as root, NetfilterQueue for the delay line of tests/netns/lul.sh, in
    # a venv in .tools/nfq, pinned by tests/netns/requirements-nfq.txt -------
    nfq="$ROOT/.tools/nfq"
    if [ "$(id -u)" -eq 0 ] && { [ ! -x "$nfq/bin/python" ] || ! cmp -s "$ROOT/tests/netns/requirements-nfq.txt" "$nfq/requirements.txt"; }; then
        rm -rf "$nfq"
        run_phase "python3 -m venv .tools/nfq" python3 -m venv "$nfq"
        run_phase "pip install NetfilterQueue into .tools/nfq" \
            "$nfq/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/netns/requirements-nfq.txt"
        cp "$ROOT/tests/netns/requirements-nfq.txt" "$nfq/requirements.txt"
    fi
    # --- the fuzz targets (fuzz/): a nightly toolchain and cargo-fuzz, pinned,
    # into .tools/cargo-fuzz-VERSION (git-ignored) -----------------------------
    if command -v rustup >/dev/null; then
        # The dated nightly of fuzz/rust-toolchain.toml (lib.sh: FUZZ_TOOLCHAIN).
        if ! rustup run "$FUZZ_TOOLCHAIN" rustc --version >/dev/null 2>&1; then
            run_phase "rustup toolchain install $FUZZ_TOOLCHAIN (fuzz targets)" \
                rustup toolchain install "$FUZZ_TOOLCHAIN" --profile minimal
        fi
        fuzz_ok() { [ -x "$CARGO_FUZZ_BIN" ] && [ "$("$CARGO_FUZZ_BIN" fuzz --version 2>/dev/null)" = "cargo-fuzz $CARGO_FUZZ_VERSION" ]; }
        if ! fuzz_ok; then
            mkdir -p "$ROOT/.tools"
            exec 8>"$ROOT/.tools/cargo-fuzz.lock"
            flock 8
            if ! fuzz_ok; then
                log "installing cargo-fuzz $CARGO_FUZZ_VERSION into .tools/ (a minute or two, once)"
                run_phase "cargo install cargo-fuzz $CARGO_FUZZ_VERSION" \
                    "${TOOL_PROFILE[@]}" cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$CARGO_FUZZ_ROOT"
                fuzz_ok || die "cargo-fuzz was installed but '$CARGO_FUZZ_BIN fuzz --version' does not print $CARGO_FUZZ_VERSION"
            fi
            flock -u 8
            exec 8>&-
        fi
    else
        log "rustup not found: no nightly toolchain for the fuzz targets, so npm test counts them as failed (install rustup, then re-run)"
    fi
    # --- stamp-suite, pinned, into .tools/stamp-suite-VERSION (git-ignored):
    # the STAMP sender and reflector agent/tests/integration/stamp.rs runs --
    suite_ok() { [ -x "$STAMP_SUITE_BIN" ] && "$STAMP_SUITE_BIN" --version 2>/dev/null | grep -qx "stamp-suite $STAMP_SUITE_VERSION"; }
    if ! suite_ok; then
        mkdir -p "$ROOT/.tools"
        exec 8>"$ROOT/.tools/stamp-suite.lock"
        flock 8
        if ! suite_ok; then
            log "installing stamp-suite $STAMP_SUITE_VERSION into .tools/ (a few minutes, once)"
            # Optimised (not TOOL_PROFILE): its round trips are compared with ours.
            run_phase "cargo install stamp-suite $STAMP_SUITE_VERSION" \
                cargo install stamp-suite --version "$STAMP_SUITE_VERSION" --locked --root "$STAMP_SUITE_ROOT"
            suite_ok || die "stamp-suite was installed but '$STAMP_SUITE_BIN --version' does not print stamp-suite $STAMP_SUITE_VERSION"
        fi
        flock -u 8
        exec 8>&-
    fi
    # --- the arm64 agent's Rust target (tests/platforms/arm64.sh) ------------
    if [ ! -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-musl/lib" ]; then
        command -v rustup >/dev/null || die "Rust target aarch64-unknown-linux-musl is missing and rustup is not installed: install it for your toolchain, then re-run"
        run_phase "rustup target add aarch64-unknown-linux-musl" rustup target add aarch64-unknown-linux-musl
    fi
    # --- the Windows agent's and the macOS check's Rust targets -------------
    # (tests/platforms/windows.sh, scripts/check-macos.sh)
    for t in x86_64-pc-windows-gnu x86_64-apple-darwin aarch64-apple-darwin; do
        if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$t/lib" ]; then
            command -v rustup >/dev/null || die "Rust target $t is missing and rustup is not installed: install it for your toolchain, then re-run"
            run_phase "rustup target add $t" rustup target add "$t"
        fi
    done
    # --- as root, the static (musl) target for the OCI image test ------------
    if [ "$(id -u)" -eq 0 ] && [ ! -d "$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-musl/lib" ]; then
        command -v rustup >/dev/null || die "Rust target x86_64-unknown-linux-musl is missing and rustup is not installed: install it for your toolchain, then re-run"
        run_phase "rustup target add x86_64-unknown-linux-musl" rustup target add x86_64-unknown-linux-musl
    fi
fi

if [ -n "$wbg_pid" ]; then
    wait "$wbg_pid" || die "wasm-bindgen-cli $WBG_VERSION was not installed (see its lines above)"
fi
log "ok (wasm32 target, wasm-bindgen $WBG_VERSION, node_modules$([ $want_test -eq 1 ] && echo ', chromium, kubernetes-validate, kustomize, nightly + cargo-fuzz, stamp-suite'))"
