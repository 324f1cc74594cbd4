# The OCI image as the netns tests use it (sourced by tests/netns/image.sh
# and tests/monitor/cluster.sh; root only). Needs $root (the checkout) and
# fail().
#
#   oci_unpack DIR [ARCH...]
#                     scripts/release.sh --no-web --arch ARCH... --out DIR/art
#                     (amd64 by default; with two, the image is an index)
#                     (in $MESHPERF_STATIC_PROFILE, test-cross under npm test)
#                     (the static binary and the image; cargo rebuilds the
#                     musl binary only when a source changed, so the second
#                     test of a run pays a few seconds), the first ARCH's
#                     image unpacked with umoci into DIR/bundle. Sets oci_tag, oci_rootfs
#                     and oci_args (the image's entrypoint and command).
#   oci_agent NETNS TOKEN ARGS...
#                     runs the image's agent as a container runtime would:
#                     in its own PID namespace (PID 1) and mount namespace,
#                     the rootfs bind-mounted read-only, chrooted there, as
#                     user 65534, with nothing in its environment but
#                     MESHPERF_TOKEN, in network namespace NETNS; ARGS are
#                     appended to the image's. It execs: run it in the
#                     background and $! is the unshare process, whose child
#                     is the agent (killing unshare kills it).
#   oci_kill PID...   stops such unshare processes and their agents: SIGKILL,
#                     since unshare --fork blocks SIGTERM and SIGINT while it
#                     waits for its child.

oci_unpack() {
  local dir=$1 t0=$SECONDS arch
  local archs=("${@:2}")
  [ ${#archs[@]} -gt 0 ] || archs=(amd64)
  # The static binary in npm test's profile for static builds (test-cross,
  # unoptimised: the release profile's fat LTO adds minutes and changes no
  # code path; `npm run release` builds that one), in release when run alone.
  MESHPERF_RELEASE_PROFILE=${MESHPERF_RELEASE_PROFILE:-${MESHPERF_STATIC_PROFILE:-${MESHPERF_PROFILE:-release}}} \
    timeout 900 bash "$root/scripts/release.sh" --no-web $(for arch in "${archs[@]}"; do echo --arch "$arch"; done) --out "$dir/art" \
    || fail "scripts/release.sh failed"
  (cd "$dir/art" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the artifacts"
  mkdir -p "$dir/layout"
  tar -C "$dir/layout" -xf "$dir/art/meshperf-oci.tar"
  oci_tag=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).manifests[0].annotations["org.opencontainers.image.ref.name"]' "$dir/layout/index.json")
  oci_platform "$dir" "${archs[0]}" "$dir/bundle"
  oci_rootfs=$dir/bundle/rootfs
  mapfile -t oci_args < <(node -e '
    for (const a of JSON.parse(require("fs").readFileSync(process.argv[1])).process.args) console.log(a)' "$dir/bundle/config.json")
  [ "${oci_args[0]:-}" = /meshperf ] || fail "the image's config does not run /meshperf: ${oci_args[*]}"
  oci_seconds=$((SECONDS - t0))
}

# oci_platform DIR ARCH BUNDLE: the image for ARCH (an image index's entry,
# or the single image) copied out of DIR/art/meshperf-oci.tar by skopeo, as a
# node of that architecture pulls it, and unpacked with umoci into BUNDLE.
oci_platform() {
  skopeo copy -q --override-os linux --override-arch "$2" "oci-archive:$1/art/meshperf-oci.tar" "oci:$1/layout-$2:$2" \
    || fail "skopeo could not copy the $2 image out of meshperf-oci.tar"
  umoci unpack --image "$1/layout-$2:$2" "$3" >/dev/null || fail "umoci unpack of the $2 image failed"
}

oci_agent() {
  local ns=$1 token=$2
  shift 2
  exec env -i MESHPERF_TOKEN="$token" ip netns exec "$ns" unshare --pid --fork --kill-child --mount -- \
    /bin/sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec chroot --userspec=65534:65534 "$0" "$@"' \
    "$oci_rootfs" "${oci_args[@]}" "$@"
}

oci_kill() {
  local p
  # The agent first (unshare's child, PID 1 of its PID namespace): the
  # parent-death signal --kill-child sets is cleared when chroot --userspec
  # changes the uid, so killing unshare alone left the agents running in
  # their (deleted) network namespaces.
  for p in "$@"; do pkill -KILL -P "$p" 2>/dev/null || true; done
  for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done
}
