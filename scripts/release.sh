#!/usr/bin/env bash
# npm run release: the static release binaries, their checksums and the OCI
# image, into target/release-artifacts/:
#
#   meshperf-linux-amd64        x86_64-unknown-linux-musl, static, web app embedded
#   meshperf-linux-arm64        aarch64-unknown-linux-musl, static, linked by Debian's
#                               gcc-aarch64-linux-gnu (scripts/lib.sh says why)
#   meshperf-windows-amd64.exe  x86_64-pc-windows-gnu, linked by Debian's mingw-w64
#                               (gcc-mingw-w64-x86-64): the agent and `meshperf run`
#                               on Windows (the kinds it runs: docs/deploy.md)
#   meshperf-oci.tar            OCI image (oci-archive) of the static binary alone
#                               (scripts/image.sh; only when umoci is installed): with
#                               both architectures an image index of the two, one
#                               name for amd64 and arm64 nodes (buildah manifest)
#   meshperf-man-completions.tar.gz
#                               man/meshperf.1, man/meshperf-{agent,run,monitor}.1,
#                               completions/{meshperf.bash,_meshperf,meshperf.fish},
#                               rendered from the clap definitions by
#                               agent/examples/meshperf-docs.rs
#   meshperf_VERSION_ARCH.deb   Debian package of each binary with the systemd unit,
#                               man pages and completions (scripts/deb.sh)
#   SHA256SUMS                  sha256sum -c SHA256SUMS checks them all
#
# The web app and wasm come from scripts/build.sh, run first (it also builds
# the glibc agent, target/release/meshperf); --no-web skips it and embeds the
# web/dist already there (tests/netns/image.sh, after npm test's build).
# --arch amd64|arm64|windows (repeatable) builds only those (default: all
# three; amd64 and arm64 are the Linux binaries, their .debs and image);
# --out DIR writes there instead.
# Names carry the OCI architecture names so deploy/Containerfile's
# TARGETARCH picks the right one.
set -euo pipefail
SCRIPT_NAME=release
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage="usage: scripts/release.sh [--no-web] [--arch amd64|arm64|windows]... [--out DIR]"
web=1
archs=()
windows=0
out="$ROOT/target/release-artifacts"
while [ $# -gt 0 ]; do
    case "$1" in
        --no-web) web=0 ;;
        --arch) [ $# -ge 2 ] || die "$usage"
            if [ "$2" = windows ]; then windows=1; else archs+=("$2"); fi
            shift ;;
        --out) [ $# -ge 2 ] || die "$usage"; out="$(realpath -m "$2")"; shift ;;
        *) die "unknown argument '$1' ($usage)" ;;
    esac
    shift
done
[ ${#archs[@]} -gt 0 ] || [ $windows -eq 1 ] || { archs=(amd64 arm64); windows=1; }
want() { [[ " ${archs[*]} " == *" $1 "* ]]; }

t_all=$SECONDS
if [ $web -eq 1 ]; then
    bash "$ROOT/scripts/build.sh"
else
    [ -f "$ROOT/web/dist/index.html" ] || die "--no-web, but web/dist/index.html is missing: run scripts/build.sh first"
fi

target_installed() { [ -d "$(rustc --print sysroot)/lib/rustlib/$1/lib" ]; }
add_target() {
    target_installed "$1" && return 0
    command -v rustup >/dev/null || { log "Rust target $1 is missing and rustup is not installed"; return 1; }
    run_phase "rustup target add $1" rustup target add "$1"
}

# build_static TARGET ARCH: cargo build for TARGET, checked static, copied to
# $out/meshperf-linux-ARCH. Returns non-zero (with the reason logged) if it
# cannot be built here.
# MESHPERF_RELEASE_PROFILE picks the cargo profile (default release, the fat
# LTO one; npm test's image test builds test-release: the same code without
# LTO's minutes, tests/netns/oci.sh).
build_static() {
    local profile="${MESHPERF_RELEASE_PROFILE:-release}"
    local target=$1 arch=$2 bin="${CARGO_TARGET_DIR:-$ROOT/target}/$1/$profile/meshperf" t0=$SECONDS
    log "cargo build --profile $profile -p meshperf-agent --target $target ..."
    if ! cargo build --profile "$profile" -p meshperf-agent --target "$target"; then
        log "cargo build --target $target failed after $((SECONDS - t0)) s"
        return 1
    fi
    log "cargo build --target $target done in $((SECONDS - t0)) s"
    # Static (rustc makes a static-pie for x86_64 musl): no interpreter, no NEEDED.
    if readelf -lW "$bin" | grep -q 'INTERP' || readelf -dW "$bin" | grep -q '(NEEDED)'; then
        die "$bin is not static: $(readelf -dW "$bin" | grep NEEDED | tr -s ' ' | tr '\n' ' ')"
    fi
    install -m 0755 "$bin" "$out/meshperf-linux-$arch"
    log "meshperf-linux-$arch: $(wc -c <"$out/meshperf-linux-$arch") bytes, static"
}

mkdir -p "$out"
rm -f "$out"/meshperf-linux-* "$out"/meshperf-windows-* "$out/meshperf-oci.tar" "$out"/meshperf_*.deb "$out/meshperf-man-completions.tar.gz" "$out/SHA256SUMS"
for a in "${archs[@]}"; do case "$a" in amd64|arm64) ;; *) die "unknown --arch $a ($usage)" ;; esac; done
if want amd64; then
    add_target x86_64-unknown-linux-musl || die "cannot install the Rust target x86_64-unknown-linux-musl"
    # ring (TLS) compiles C and assembly for the target (scripts/lib.sh).
    amd64_musl_env
    build_static x86_64-unknown-linux-musl amd64 || die "the x86_64 musl build failed (see above)"
    # Its own `--version` from a directory holding nothing else, with an
    # empty environment: no loader, no libc, no files besides itself.
    bare="$(mktemp -d)"
    trap 'rm -rf "$bare"' EXIT
    cp "$out/meshperf-linux-amd64" "$bare/meshperf"
    (cd "$bare" && env -i ./meshperf --version) || die "the static binary does not run from a bare directory"
fi

# aarch64: Rust ships musl's libc and crt objects for it (self-contained);
# Debian's gcc-aarch64-linux-gnu links and compiles ring's C (scripts/lib.sh,
# aarch64_musl_env: it stops here naming the package when it is missing).
if want arm64; then
    aarch64_musl_env
    add_target aarch64-unknown-linux-musl || die "cannot install the Rust target aarch64-unknown-linux-musl"
    build_static aarch64-unknown-linux-musl arm64 || die "the aarch64 musl build failed (see above)"
fi

# Windows: Rust ships the mingw runtime objects for the target; Debian's
# mingw-w64 links and compiles ring's C (scripts/lib.sh, windows_gnu_env:
# it stops here naming the package when it is missing).
if [ $windows -eq 1 ]; then
    windows_gnu_env
    add_target x86_64-pc-windows-gnu || die "cannot install the Rust target x86_64-pc-windows-gnu"
    profile="${MESHPERF_RELEASE_PROFILE:-release}" t0=$SECONDS
    log "cargo build --profile $profile -p meshperf-agent --target x86_64-pc-windows-gnu ..."
    cargo build --profile "$profile" -p meshperf-agent --target x86_64-pc-windows-gnu \
        || die "the x86_64-pc-windows-gnu build failed (see above)"
    exe="${CARGO_TARGET_DIR:-$ROOT/target}/x86_64-pc-windows-gnu/$profile/meshperf.exe"
    x86_64-w64-mingw32-objdump -f "$exe" | grep -q 'file format pei-x86-64' || die "$exe is not a PE32+ x86-64 executable"
    install -m 0755 "$exe" "$out/meshperf-windows-amd64.exe"
    log "meshperf-windows-amd64.exe: $(wc -c <"$out/meshperf-windows-amd64.exe") bytes, in $((SECONDS - t0)) s"
fi

# Man pages and completions, from the same clap definitions as the binary
# (an example, so the release binary carries no renderer), then a .deb per
# binary.
run_phase "cargo build --example meshperf-docs" cargo build -q --profile "$MESHPERF_PROFILE" -p meshperf-agent --example meshperf-docs
docs="$(mktemp -d)"
trap 'rm -rf "${bare:-}" "$docs"' EXIT
gen="${CARGO_TARGET_DIR:-$ROOT/target}/$MESHPERF_PROFILE/examples/meshperf-docs"
"$gen" man "$docs/man" && "$gen" completions "$docs/completions" || die "meshperf-docs failed"
tar -C "$docs" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(git log -1 --format=%ct 2>/dev/null || date +%s)" \
    -cf - man completions | gzip -9n >"$out/meshperf-man-completions.tar.gz"
version=$(awk -F'"' '/^\[workspace.package\]/ { w = 1 } w && /^version = / { print $2; exit }' "$ROOT/Cargo.toml")
for a in "${archs[@]}"; do
    bash "$ROOT/scripts/deb.sh" "$out/meshperf-linux-$a" "$a" "$docs" "$out/meshperf_${version}_$a.deb"
done

# The OCI image: one image per binary (scripts/image.sh, umoci), and with
# both an image index naming the two (buildah manifest, no daemon: its own
# vfs storage in a temporary folder), so one name serves amd64 and arm64
# nodes; `skopeo inspect --raw oci-archive:meshperf-oci.tar` lists both.
if [ ${#archs[@]} -eq 0 ]; then
    log "no Linux binary asked for: no .deb, no OCI image"
elif ! command -v umoci >/dev/null; then
    log "no OCI image: umoci is not installed (apt-get install umoci)"
elif [ ${#archs[@]} -eq 1 ]; then
    bash "$ROOT/scripts/image.sh" "$out/meshperf-linux-${archs[0]}" "$out/meshperf-oci.tar" "${archs[0]}"
elif ! command -v buildah >/dev/null; then
    die "the multi-arch image needs buildah (apt-get install buildah), or give one --arch"
else
    oci="$(mktemp -d)"
    trap 'rm -rf "${bare:-}" "$docs" "$oci"' EXIT
    version_tag="$(awk -F'"' '/^version = / { print $2; exit }' "$ROOT/Cargo.toml")"
    bh=(buildah --root "$oci/root" --runroot "$oci/run" --storage-driver vfs)
    "${bh[@]}" manifest create "meshperf:$version_tag" >/dev/null
    for a in "${archs[@]}"; do
        bash "$ROOT/scripts/image.sh" "$out/meshperf-linux-$a" "$oci/$a.tar" "$a"
        "${bh[@]}" manifest add "meshperf:$version_tag" "oci-archive:$oci/$a.tar" >/dev/null
    done
    "${bh[@]}" manifest push --quiet --all "meshperf:$version_tag" "oci-archive:$out/meshperf-oci.tar:$version_tag" \
        || die "buildah manifest push of the image index failed"
    log "OCI image index meshperf:$version_tag (${archs[*]}) -> $out/meshperf-oci.tar ($(wc -c <"$out/meshperf-oci.tar") bytes)"
fi

(shopt -s nullglob; cd "$out" && sha256sum -- meshperf-* meshperf_*.deb >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
log "$out in $((SECONDS - t_all)) s:"
sed 's/^/    /' "$out/SHA256SUMS" >&2
