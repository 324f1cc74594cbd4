#!/usr/bin/env bash
# The OCI image, built without a container engine (umoci, from Debian):
#
#   scripts/image.sh BINARY OUT.tar [ARCH]
#
# BINARY (a static meshperf, scripts/release.sh) becomes /meshperf, root-owned
# and 0755, on an empty base: no shell, no libc, no other file. The agent
# runs as user 65534 (nobody), is PID 1 (it stops on SIGTERM), writes
# nothing to the root file system (read-only is fine; only the unix_* kinds
# want a writable $TMPDIR, /tmp: an emptyDir in deploy/kubernetes/) and
# listens on 0.0.0.0:7800 unless the arguments say otherwise:
# ENTRYPOINT ["/meshperf", "agent"], CMD ["--listen", "0.0.0.0:7800"].
# deploy/Containerfile builds the same image with Docker or Podman.
#
# OUT.tar is an oci-archive (a tar of the OCI image layout), tagged with the
# agent's version: `podman load -i OUT.tar`, `skopeo copy oci-archive:OUT.tar
# docker://REGISTRY/meshperf:VERSION`, or `umoci unpack` it.
set -euo pipefail
SCRIPT_NAME=image
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 2 ] && [ $# -le 3 ] || die "usage: scripts/image.sh BINARY OUT.tar [ARCH (OCI name, default amd64)]"
bin="$(realpath "$1")" out="$(realpath -m "$2")" arch="${3:-amd64}"
[ -x "$bin" ] || die "$bin is not an executable file"
command -v umoci >/dev/null || die "umoci not found: apt-get install umoci (Debian), then re-run"
version="$(awk -F'"' '/^version = / { print $2; exit }' "$ROOT/Cargo.toml")"
[ -n "$version" ] || die "no version in Cargo.toml's [workspace.package]"

t0=$SECONDS
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
layout="$work/layout" img="$work/layout:$version"
# umoci takes the inserted file's owner and mode: root 0755, so user 65534
# may run it but not change it.
install -m 0755 -o 0 -g 0 "$bin" "$work/meshperf"
umoci init --layout "$layout"
umoci new --image "$img"
umoci insert --image "$img" "$work/meshperf" /meshperf
umoci config --image "$img" --architecture "$arch" --os linux \
    --config.user 65534:65534 --config.workingdir / \
    --config.entrypoint /meshperf --config.entrypoint agent \
    --config.cmd --listen --config.cmd 0.0.0.0:7800 \
    --config.exposedports 7800/tcp --config.stopsignal SIGTERM \
    --config.label org.opencontainers.image.title=meshperf \
    --config.label org.opencontainers.image.version="$version" \
    --config.label org.opencontainers.image.description="meshperf agent: network measurement (static binary alone)"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
log "OCI image meshperf:$version ($arch) -> $out ($(wc -c <"$out") bytes) in $((SECONDS - t0)) s"
