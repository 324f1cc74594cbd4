#!/usr/bin/env bash
# The Debian package (issue 23 part 3), built by scripts/deb.sh as
# scripts/release.sh builds it, from the static arm64 agent of
# tests/platforms/arm64.sh (test-cross profile: cargo only checks it is
# built) and the man pages and completions of agent/examples/meshperf-docs.rs.
# Checked: its file list; lintian finds no error and no warning; dpkg
# installs it into a throwaway root (dpkg --root, maintainer scripts run
# chrootless against $DPKG_ROOT), where postinst wrote a fresh 32-hex-digit
# token to /etc/meshperf/agent.env (0600), `systemd-analyze verify --root`
# passes on the installed unit (and fails once its binary is gone), and the
# agent, started as the unit starts it (its ExecStart, its EnvironmentFile
# as the whole environment, loopback instead of 0.0.0.0:7800), prints its
# ready line and answers /healthz; purge removes the package and the token.
set -euo pipefail
SCRIPT_NAME=deb
# The profile npm test builds in (lib.sh would default to release).
profile=${MESHPERF_PROFILE:-test-release}
# The arm64 build's (npm test's test-cross: unoptimised, scripts/test.sh).
static_profile=${MESHPERF_STATIC_PROFILE:-$profile}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
fail() { echo "deb: FAILED: $*" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-$ROOT/target}
for tool in dpkg dpkg-deb lintian systemd-analyze qemu-aarch64-static; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh --test installs lintian and qemu-user-static)"
done
aarch64_musl_env
t0=$SECONDS
cargo build -q --profile "$static_profile" -p meshperf-agent --target aarch64-unknown-linux-musl || fail "the aarch64-unknown-linux-musl build failed"
cargo build -q --profile "$profile" -p meshperf-agent --example meshperf-docs || fail "cannot build the example meshperf-docs"
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
"$target_dir/$profile/examples/meshperf-docs" man "$tmp/docs/man"
"$target_dir/$profile/examples/meshperf-docs" completions "$tmp/docs/completions"
deb=$tmp/meshperf_arm64.deb
bash "$ROOT/scripts/deb.sh" "$target_dir/aarch64-unknown-linux-musl/$static_profile/meshperf" arm64 "$tmp/docs" "$deb" || fail "scripts/deb.sh failed"

# 1. What it holds.
want='./lib/systemd/system/meshperf-agent.service
./usr/bin/meshperf
./usr/share/bash-completion/completions/meshperf
./usr/share/doc/meshperf/changelog.gz
./usr/share/doc/meshperf/copyright
./usr/share/fish/vendor_completions.d/meshperf.fish
./usr/share/lintian/overrides/meshperf
./usr/share/man/man1/meshperf-agent.1.gz
./usr/share/man/man1/meshperf-monitor.1.gz
./usr/share/man/man1/meshperf-run.1.gz
./usr/share/man/man1/meshperf.1.gz
./usr/share/zsh/vendor-completions/_meshperf'
have=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | sort)
[ "$have" = "$want" ] || fail "the package holds: $(tr '\n' ' ' <<<"$have")"
[ "$(dpkg-deb -f "$deb" Package Architecture | tr '\n' ' ')" = "Package: meshperf Architecture: arm64 " ] || fail "control: $(dpkg-deb -f "$deb")"

# 2. lintian: no errors, no warnings (--allow-root: it refuses root otherwise).
#    One override, shipped in the package: the binary is static on purpose.
t1=$SECONDS
lint=$(lintian --allow-root --fail-on error,warning --tag-display-limit 0 "$deb" 2>&1) || fail "lintian: $lint"
echo "deb: lintian clean in $((SECONDS - t1)) s${lint:+ (${lint//$'\n'/; })}"

# 3. Installed into a throwaway root: postinst runs chrootless with DPKG_ROOT.
R=$tmp/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
dpkg=(dpkg --root="$R" --log=/dev/null --force-script-chrootless)
"${dpkg[@]}" --add-architecture arm64
"${dpkg[@]}" -i "$deb" >"$tmp/dpkg.out" 2>&1 || { cat "$tmp/dpkg.out" >&2; fail "dpkg -i into $R failed"; }
[ "$("${dpkg[@]}" -s meshperf | sed -n 's/^Status: //p')" = "install ok installed" ] || fail "dpkg -s: $("${dpkg[@]}" -s meshperf)"
env_file=$R/etc/meshperf/agent.env
[ "$(stat -c '%a %U' "$env_file")" = "600 root" ] || fail "agent.env is $(stat -c '%a %U' "$env_file"), not 600 root"
grep -Eqx 'MESHPERF_TOKEN=[0-9a-f]{32}' "$env_file" || fail "agent.env has no 32-hex-digit token"

# 4. The unit verifies there, against that root's binary (systemd's own
#    units copied in, as a system with systemd has them).
cp -an /lib/systemd/system/. "$R/lib/systemd/system/"
out=$(systemd-analyze verify --root="$R" meshperf-agent.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"
mv "$R/usr/bin/meshperf" "$tmp/meshperf.moved"
out=$(systemd-analyze verify --root="$R" meshperf-agent.service 2>&1) && fail "systemd-analyze verify passed with no /usr/bin/meshperf"
grep -q '/usr/bin/meshperf is not executable' <<<"$out" || fail "verify without the binary: $out"
mv "$tmp/meshperf.moved" "$R/usr/bin/meshperf"
echo "deb: installed into a throwaway root; systemd-analyze verify clean"

# 5. The agent as the unit starts it: ExecStart's arguments (loopback, port
#    0 instead of 0.0.0.0:7800), the EnvironmentFile alone as environment.
unit=$R/lib/systemd/system/meshperf-agent.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$(sed -n 's/^EnvironmentFile=//p' "$unit")" = /etc/meshperf/agent.env ] || fail "the unit's EnvironmentFile is not /etc/meshperf/agent.env"
read -ra argv <<<"${exec_start/--listen 0.0.0.0:7800/--listen 127.0.0.1:0}"
[ "${argv[0]}" = /usr/bin/meshperf ] && [ "${argv[*]}" != "$exec_start" ] || fail "ExecStart is not /usr/bin/meshperf agent --listen 0.0.0.0:7800 ...: $exec_start"
env -i "$(grep '^MESHPERF_TOKEN=' "$env_file")" timeout 120 qemu-aarch64-static "$R${argv[0]}" "${argv[@]:1}" >"$tmp/agent.out" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -qs ' ready: ' "$tmp/agent.out" && break; sleep 0.1; done
# The unit gives the token through agent.env: the ready line says where it
# is and never shows it (journald is a log others read).
grep -qx 'meshperf agent [0-9.]* ready: http://127.0.0.1:[0-9]*/ (the token is the one in $MESHPERF_TOKEN, not shown here)' "$tmp/agent.out" \
  || { cat "$tmp/agent.out" >&2; fail "the installed agent printed no ready line saying its token is in \$MESHPERF_TOKEN"; }
! grep -qF "$(sed -n 's/^MESHPERF_TOKEN=//p' "$env_file")" "$tmp/agent.out" \
  || { cat "$tmp/agent.out" >&2; fail "the installed agent printed agent.env's token"; }
port=$(grep -o 'ready: http://127.0.0.1:[0-9]*' "$tmp/agent.out" | grep -o '[0-9]*$')
health=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
  printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n\r\n' >&3; cat <&3" | tr -d '\r')
[ "$(tail -1 <<<"$health")" = ok ] || fail "GET /healthz: $health"
echo "deb: $(grep ' ready: ' "$tmp/agent.out"); /healthz ok"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

# 6. Purge: the package and the token gone.
"${dpkg[@]}" --purge meshperf >"$tmp/dpkg.out" 2>&1 || { cat "$tmp/dpkg.out" >&2; fail "dpkg --purge failed"; }
[ ! -e "$R/usr/bin/meshperf" ] && [ ! -e "$R/etc/meshperf" ] || fail "purge left $(ls -d "$R/usr/bin/meshperf" "$R/etc/meshperf" 2>/dev/null)"
echo "deb: ok (package built, lintian clean, installed, unit verified, agent ready, purged; $((SECONDS - t0)) s)"
