#!/usr/bin/env bash
# The OCI image, run as a container runtime would and tested for real (root
# only): scripts/release.sh --no-web --arch amd64 --arch arm64 builds the
# static binaries, an image of each (umoci) and the image index naming both
# (buildah manifest); skopeo copies the amd64 image out as an amd64 node
# pulls it and umoci unpacks it; its rootfs (the binary alone) is
# mounted read-only and the agent started from it with the image's own
# arguments, chrooted there, as user 65534, as PID 1 of a new PID namespace,
# in network namespace A with nothing but MESHPERF_TOKEN in its environment.
# An agent from the plain build ($MESHPERF_BIN, else target/release/meshperf) runs in namespace B,
# joined to A by a veth pair. Checked: the image's contents and config,
# deploy/Containerfile built with buildah to the same rootfs and config,
# GET /healthz from B as a kubelet probes, a tcp_stream and a tcp_rr matrix
# (both directions: the image's agent serves and drives) by `meshperf run`
# from B, the index's arm64 image's agent under qemu serving a tcp_rr, and
# `kill -TERM 1` inside the agent's PID namespace stopping it
# cleanly. Everything is removed on exit, whether the checks pass or not.
# Exit 0 on success or when skipped.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "oci image: skipped (needs root for network namespaces and chroot; CI runs it as root)"
  exit 0
fi
fail() { echo "oci image: FAILED: $*" >&2; exit 1; }
for tool in umoci buildah skopeo ip unshare nsenter chroot node; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh --test installs umoci and buildah as root)"
done

root=$(cd "$(dirname "$0")/../.." && pwd)
plain="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/meshperf}"
[ -x "$plain" ] || fail "$plain is missing: run scripts/build.sh"
id=mpi$$
A=${id}a B=${id}b
net=$((16 + $$ % 200))
ipa=10.$net.9.1 ipb=10.$net.9.2
dir=/tmp/$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  [ -n "${upid:-}" ] && oci_kill "$upid"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir"
source "$root/tests/netns/oci.sh"

# 1. The image, built as a release builds it (web/dist from the build before):
#    an image index of the amd64 and the arm64 image, its amd64 one unpacked.
oci_unpack "$dir" amd64 arm64
echo "oci image: static binaries and image index built, amd64 unpacked in $oci_seconds s"
tag=$oci_tag rootfs=$oci_rootfs
platforms=$(skopeo inspect --raw "oci-archive:$dir/art/meshperf-oci.tar" | node -e '
  const i = JSON.parse(require("fs").readFileSync(0, "utf8"));
  if (i.mediaType !== "application/vnd.oci.image.index.v1+json") throw new Error(`not an image index: ${i.mediaType}`);
  console.log(i.manifests.map((m) => `${m.platform.os}/${m.platform.architecture}`).sort().join(" "));') \
  || fail "meshperf-oci.tar is not an image index"
[ "$platforms" = "linux/amd64 linux/arm64" ] || fail "the image index lists $platforms, not linux/amd64 and linux/arm64"
echo "oci image: $tag is an image index of $platforms (skopeo inspect --raw)"

# 2. What is in it: /meshperf alone, root-owned 0755, static; the config.
[ "$(cd "$rootfs" && find . -mindepth 1 | sort | tr '\n' ' ')" = "./meshperf " ] \
  || fail "the rootfs holds more than /meshperf: $(cd "$rootfs" && find . -mindepth 1 | tr '\n' ' ')"
[ "$(stat -c '%u:%g %a' "$rootfs/meshperf")" = "0:0 755" ] || fail "/meshperf is $(stat -c '%u:%g %a' "$rootfs/meshperf"), not 0:0 755"
ldd "$rootfs/meshperf" 2>&1 | grep -Eq 'not a dynamic executable|statically linked' || fail "ldd: $(ldd "$rootfs/meshperf" 2>&1)"
node -e '
  const c = JSON.parse(require("fs").readFileSync(process.argv[1])).process;
  if (c.user.uid !== 65534 || c.user.gid !== 65534) throw new Error(`user ${JSON.stringify(c.user)}`);
  if (c.args[0] !== "/meshperf" || c.args[1] !== "agent") throw new Error(`args ${c.args}`);' \
  "$dir/bundle/config.json" || fail "the image config is not user 65534, /meshperf agent"
args=("${oci_args[@]}")
# deploy/Containerfile builds the same image: built here with buildah (no
# daemon; vfs storage and chroot isolation in $dir), unpacked, compared.
mkdir -p "$dir/ctx/target/release-artifacts"
cp "$dir/art/meshperf-linux-amd64" "$dir/ctx/target/release-artifacts/"
buildah=(buildah --root "$dir/buildah/root" --runroot "$dir/buildah/run" --storage-driver vfs)
"${buildah[@]}" bud --quiet --isolation chroot -f "$root/deploy/Containerfile" -t meshperf:containerfile "$dir/ctx" >/dev/null \
  || fail "buildah could not build deploy/Containerfile"
"${buildah[@]}" push --quiet meshperf:containerfile "oci:$dir/cf:cf" >/dev/null || fail "buildah push to an OCI layout failed"
umoci unpack --image "$dir/cf:cf" "$dir/cf-bundle" >/dev/null || fail "umoci could not unpack the Containerfile's image"
"${buildah[@]}" rmi -a -f >/dev/null 2>&1 || true
[ "$(cd "$dir/cf-bundle/rootfs" && find . -mindepth 1 -printf '%p %U:%G %m\n' | sort)" = "./meshperf 0:0 755" ] \
  || fail "the Containerfile's rootfs is not /meshperf alone, 0:0 755: $(cd "$dir/cf-bundle/rootfs" && find . -mindepth 1 -printf '%p %U:%G %m ')"
cmp -s "$dir/cf-bundle/rootfs/meshperf" "$rootfs/meshperf" || fail "the Containerfile's /meshperf differs from the image's"
node -e '
  const p = (f) => { const c = JSON.parse(require("fs").readFileSync(f)).process; return JSON.stringify([c.user, c.args, c.cwd]); };
  const [a, b] = [p(process.argv[1]), p(process.argv[2])];
  if (a !== b) throw new Error(`Containerfile: ${a}; umoci: ${b}`);' "$dir/cf-bundle/config.json" "$dir/bundle/config.json" \
  || fail "deploy/Containerfile and the umoci image run differently"
echo "oci image: $tag, rootfs = /meshperf only ($(stat -c %s "$rootfs/meshperf") bytes, static), runs ${args[*]} as 65534"

# 3. Two namespaces and a veth pair.
ip netns add "$A"; ip netns add "$B"
ip -n "$A" link set lo up; ip -n "$B" link set lo up
ip link add "${id}0" netns "$A" type veth peer name "${id}1" netns "$B"
ip -n "$A" addr add "$ipa/24" dev "${id}0"; ip -n "$A" link set "${id}0" up
ip -n "$B" addr add "$ipb/24" dev "${id}1"; ip -n "$B" link set "${id}1" up

# 4. The image's agent: rootfs read-only, chroot, uid 65534, PID 1, empty
#    environment but the token; the image's arguments plus a data-port range.
#    The read-only bind mount lives in the agent's own mount namespace.
oci_agent "$A" "$token" --data-ports 5201-5204 >"$dir/image-agent.out" 2>&1 &
upid=$!
pids+=("$upid")
MESHPERF_TOKEN=$token ip netns exec "$B" timeout 300 "$plain" agent --listen "$ipb:7800" >"$dir/plain-agent.out" 2>&1 &
pids+=($!)
for f in image-agent plain-agent; do
  for _ in $(seq 100); do grep -q ' ready: ' "$dir/$f.out" 2>/dev/null && break; sleep 0.1; done
  grep -q ' ready: ' "$dir/$f.out" || { cat "$dir/$f.out" >&2; fail "$f did not start"; }
done
apid=$(pgrep -P "$upid" | head -1)
[ -n "$apid" ] || fail "no agent process under unshare $upid"
grep -Eq '^NSpid:\s+[0-9]+\s+1$' "/proc/$apid/status" || fail "the agent is not PID 1 in its namespace: $(grep NSpid "/proc/$apid/status")"
grep -Eq '^Uid:\s+65534\s+65534\s+65534\s+65534$' "/proc/$apid/status" || fail "the agent does not run as 65534: $(grep Uid "/proc/$apid/status")"
[ "$(readlink "/proc/$apid/root")" = "$rootfs" ] || fail "the agent's root is $(readlink "/proc/$apid/root")"
# mountinfo is relative to the agent's root: its "/" must be mounted ro.
awk '$5 == "/" { print $6 }' "/proc/$apid/mountinfo" | tail -1 | grep -Eq '^ro(,|$)' \
  || fail "the agent's root is not read-only: $(awk '$5 == "/"' "/proc/$apid/mountinfo")"
echo "oci image: agent from the image on $ipa:7800 (pid $apid, PID 1 in its namespace, uid 65534, read-only root), plain agent on $ipb:7800"

# 5. /healthz as a kubelet asks: no token, Host = the pod's address.
health=$(ip netns exec "$B" timeout 10 bash -c "exec 3<>/dev/tcp/$ipa/7800
  printf 'GET /healthz HTTP/1.1\r\nHost: $ipa:7800\r\nUser-Agent: kube-probe/1.32\r\n\r\n' >&3; cat <&3" | tr -d '\r')
[ "$(head -1 <<<"$health")" = "HTTP/1.1 200 OK" ] && [ "$(tail -1 <<<"$health")" = "ok" ] || fail "GET /healthz: $health"

# 6. Real tests between the two, both directions.
run() { # KIND ARGS...: a two-agent matrix (both directions) from namespace B
  local kind=$1 rc=0; shift
  ip netns exec "$B" timeout 120 "$plain" run --matrix --agent "http://$ipa:7800/#token=$token" --agent "http://$ipb:7800/#token=$token" \
    --kind "$kind" "$@" --json "$dir/$kind.json" >"$dir/$kind.out" 2>"$dir/$kind.err" || rc=$?
  grep -v '#r=' "$dir/$kind.err" "$dir/$kind.out" || true
  [ $rc -eq 0 ] || fail "meshperf run --kind $kind exited $rc"
}
run tcp_stream --set msg_bytes=64K --set count=1024
run tcp_rr --set count=1000
node -e '
  const fs = require("fs");
  for (const kind of ["tcp_stream", "tcp_rr"]) {
    const r = JSON.parse(fs.readFileSync(`${process.argv[1]}/${kind}.json`, "utf8"));
    if (r.steps.length !== 2) throw new Error(`${kind}: ${r.steps.length} pairs, not 2`);
    for (const s of r.steps) {
      if (s.error) throw new Error(`${kind} ${JSON.stringify(s.pair)}: ${s.error}`);
      if (kind === "tcp_stream" && s.summary.bytes !== 64 * 1024 * 1024) throw new Error(`tcp_stream moved ${s.summary.bytes} bytes`);
      if (kind === "tcp_rr" && !(s.summary.count === 1000 && s.summary.rtt_us.median > 0)) throw new Error(`tcp_rr: ${JSON.stringify(s.summary)}`);
    }
  }' "$dir" || fail "the results are not two clean pairs each"
grep -q 'serving started' "$dir/image-agent.out" || fail "the image's agent never served"

# 7. The index's arm64 image as an arm64 node pulls it (skopeo picks the
#    platform), unpacked; its /meshperf runs under qemu-aarch64-static (a
#    host program, so outside the chroot) in namespace A, and serves one
#    tcp_rr step driven from B.
command -v qemu-aarch64-static >/dev/null || fail "qemu-aarch64-static is not installed (apt-get install qemu-user-static; scripts/setup.sh --test does)"
oci_platform "$dir" arm64 "$dir/bundle-arm64"
arm=$dir/bundle-arm64/rootfs/meshperf
readelf -hW "$arm" | grep -Eq 'Machine:\s+AArch64' || fail "the arm64 image's /meshperf is $(readelf -hW "$arm" | grep Machine)"
MESHPERF_TOKEN=$token ip netns exec "$A" timeout 120 qemu-aarch64-static "$arm" agent --listen "$ipa:7801" >"$dir/arm-agent.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q ' ready: ' "$dir/arm-agent.out" 2>/dev/null && break; sleep 0.1; done
grep -q ' ready: ' "$dir/arm-agent.out" || { cat "$dir/arm-agent.out" >&2; fail "the arm64 image's agent did not start under qemu"; }
rc=0
ip netns exec "$B" timeout 120 "$plain" run --agent "http://$ipa:7801/#token=$token" --agent "http://$ipb:7800/#token=$token" \
  --kind tcp_rr --set count=200 --json "$dir/arm.json" >"$dir/arm.out" 2>"$dir/arm.err" || rc=$?
grep -v '#r=' "$dir/arm.err" "$dir/arm.out" || true
[ $rc -eq 0 ] || fail "meshperf run against the arm64 image's agent exited $rc"
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const s = r.steps[0], arch = r.agents[0].kernel.split(" ").pop();
  if (arch !== "aarch64") throw new Error(`the serving agent reports ${r.agents[0].kernel}, not aarch64`);
  if (s.error || s.summary.count !== 200) throw new Error(`tcp_rr: ${s.error ?? JSON.stringify(s.summary)}`);' "$dir/arm.json" \
  || fail "the arm64 image's agent did not serve a clean tcp_rr"
echo "oci image: the arm64 image's agent (qemu, $ipa:7801) served 200 tcp_rr transactions"

# 8. SIGTERM to PID 1 from inside its PID namespace: the agent stops itself.
# (The sh is killed with the namespace when PID 1 exits, so its status says
# nothing; whether the agent stopped, and how, is checked next.)
nsenter --target "$apid" --pid -- sh -c 'kill -TERM 1; sleep 5' 2>/dev/null &
{ wait $!; } 2>/dev/null || true
rc=0
timeout 10 tail --pid="$upid" -f /dev/null || fail "the agent (PID 1) did not stop within 10 s of SIGTERM"
wait "$upid" || rc=$?
upid=  # reaped: its number may belong to another process now
grep -q 'meshperf agent: stopped' "$dir/image-agent.out" || fail "no 'stopped' line after SIGTERM: $(tail -3 "$dir/image-agent.out")"
[ $rc -eq 0 ] || fail "the agent exited $rc after SIGTERM"
echo "oci image: ok (image index of amd64 and arm64 built and unpacked, the Containerfile builds the same, tcp_stream and tcp_rr both ways against the plain build, /healthz, the arm64 image under qemu, SIGTERM as PID 1)"
