#!/usr/bin/env bash
# npm run bench: meshperf side by side with iperf3, netperf and sockperf on
# loopback (bench/bench.mjs prints medians and ratios; docs/design.md has the
# targets). Installs the peer tools from Debian when missing; netperf lives in
# Debian's non-free component, enabled for that one install only.
set -euo pipefail
SCRIPT_NAME=bench
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

install_peers() {
    local missing=()
    command -v iperf3 >/dev/null || missing+=(iperf3)
    command -v iperf >/dev/null || missing+=(iperf)
    command -v sockperf >/dev/null || missing+=(sockperf)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]} from Debian"
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y "${missing[@]}" >/dev/null ||
        { as_root apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y "${missing[@]}" >/dev/null; }
}

install_netperf() {
    command -v netperf >/dev/null && return 0
    log "installing netperf from Debian non-free"
    local src=/etc/apt/sources.list.d/meshperf-nonfree.sources
    local codename; codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    # The machine's own archive (a local mirror where it has one): the URI
    # of the source that serves this release's main, deb822 or one-line.
    local uri
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v cn="$codename" '
        /^[ \t]*$/ { if (u != "" && s && m) { print u; exit } u = ""; s = 0; m = 0; next }
        /^URIs:/ { u = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == cn) s = 1 }
        /^Components:/ { for (i = 2; i <= NF; i++) if ($i == "main") m = 1 }
        END { if (u != "" && s && m) print u }' | head -n 1)"
    [ -n "$uri" ] || uri="$(cat /etc/apt/sources.list 2>/dev/null | awk -v cn="$codename" '
        $1 == "deb" { i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /^\[/ || $i ~ /\]$/) i++
                      if ($(i + 1) == cn) { print $i; exit } }')"
    [ -n "$uri" ] || { log "no apt source serves $codename main here: netperf not installed; its rows will fail"; return 0; }
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$uri" "$codename" | as_root tee "$src" >/dev/null
    as_root apt-get update -o Dir::Etc::sourcelist="$src" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >/dev/null || true
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y netperf >/dev/null || log "netperf could not be installed; its rows will fail"
    as_root rm -f "$src"
}

# flent (with irtt for its UDP pings and fping for its ICMP ones) for the lul
# section's side-by-side case, from Debian main; bounded in time, and a
# failed install only skips that case (the section says so).
install_flent() {
    command -v flent >/dev/null && command -v irtt >/dev/null && command -v fping >/dev/null && return 0
    log "installing flent, irtt and fping from Debian"
    local pkgs=(flent irtt fping)
    DEBIAN_FRONTEND=noninteractive as_root timeout 300 apt-get install -y --no-install-recommends "${pkgs[@]}" >/dev/null ||
        { as_root timeout 120 apt-get update >/dev/null &&
            DEBIAN_FRONTEND=noninteractive as_root timeout 300 apt-get install -y --no-install-recommends "${pkgs[@]}" >/dev/null; } ||
        log "flent could not be installed; the lul section skips flent side by side"
}

bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/build.sh"
install_peers
install_netperf
install_flent
exec node "$ROOT/bench/bench.mjs" "$@"
