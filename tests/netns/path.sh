#!/usr/bin/env bash
# `path` against a known network (root only): two agents A (serving) and B
# (driving) joined by a chain of three routers, R1 - R2 - R3, with a fourth,
# R4, on the way back only:
#
#   A 10.N.1.2 - R1 - R2 ==1400== R3 - B 10.N.4.2      forth, B to A: R3 R2 R1 A
#                      \          /                    back,  A to B: R1 R2 R4 R3 B
#                       `-- R4 --'
#
# - an asymmetric route: R2 sends what is for B through R4 (one more hop
#   back than forth);
# - MTU 1400 on the middle link R2 - R3, which only forth crosses: the path
#   MTU is 1400 forth (R3, hop 1, lowers it) and 1500 back;
# - R2 rewrites DSCP 46 (EF) to 10 (AF11) on UDP coming in from R3 (iptables
#   mangle PREROUTING): forth marks EF arrive as AF11, changed at hop 2 (R2),
#   back every mark is kept;
# - R1 drops the ICMP it sends (iptables OUTPUT): a silent hop each way
#   (hop 3 forth, hop 1 back), the trace going on past it;
# - the same path in IPv6 (addresses fd00:0:N:K::, the same routes, the
#   same silent R1 and EF rewrite): the same hops, MTU and marks;
# - hop names (`names=true`), each direction's from its tracing agent's
#   resolver (a hosts file per namespace);
# - a trace shorter than the path ends with max hops reached;
# - a matrix of path (the cells by hops: 5 where A drives, 4 where B does),
#   and a monitor that finds the way back changed when R2 is made to skip R4;
# - then R3 stops sending fragmentation-needed: a black hole forth;
# - then R1 drops all ICMP it forwards too: the hops behind it back silent,
#   the peer still reached.
# The routers answer from the interface the probe came in on
# (icmp_errors_use_inbound_ifaddr, as traceroute users expect) with no ICMP
# rate limit (Linux's default of one a second per host after a burst of 6
# would make the answers depend on timing).
#
# meshperf must name the hops each way in order, the MTU each way and the
# hop lowering it, the rewritten DSCP and the hop rewriting it, and the
# silent hop as silent; `tracepath -n` over the same path (B to A) must find
# the same hops and the same path MTU.
#
# Names are unique per run; everything is removed on exit, whether the checks
# pass or not; every run is bounded by `timeout`. Exit 0 on success or when
# skipped.
set -euo pipefail

name="path"
. "$(dirname "$0")/agents.sh"
netns_begin ip iptables python3 tracepath
id=mpp$$
A=${id}a B=${id}b R1=${id}r1 R2=${id}r2 R3=${id}r3 R4=${id}r4
net=$((16 + $$ % 200))
n=10.$net
n6=fd00:0:$net
dir=/tmp/$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in "$A" "$B" "$R1" "$R2" "$R3" "$R4"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$dir" "/etc/netns/$A" "/etc/netns/$B"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir"

for ns in "$A" "$B" "$R1" "$R2" "$R3" "$R4"; do
  ip netns add "$ns"; ip -n "$ns" link set lo up
done
link() { # ns1 addr1 ns2 addr2 subnet-number [mtu]: a veth pair between them
  local i1="${id}l$5x" i2="${id}l$5y"
  ip link add "$i1" type veth peer name "$i2"
  ip link set "$i1" netns "$1"; ip link set "$i2" netns "$3"
  ip -n "$1" addr add "$n.$5.$2/24" dev "$i1"; ip -n "$3" addr add "$n.$5.$4/24" dev "$i2"
  # The same plan in IPv6 (no duplicate address detection: usable at once).
  ip -n "$1" addr add "$n6:$5::$2/64" dev "$i1" nodad; ip -n "$3" addr add "$n6:$5::$4/64" dev "$i2" nodad
  if [ -n "${6:-}" ]; then ip -n "$1" link set "$i1" mtu "$6"; ip -n "$3" link set "$i2" mtu "$6"; fi
  ip -n "$1" link set "$i1" up; ip -n "$3" link set "$i2" up
}
link "$A" 2 "$R1" 1 1
link "$R1" 1 "$R2" 2 2
link "$R2" 1 "$R3" 2 3 1400
link "$R3" 1 "$B" 2 4
link "$R2" 1 "$R4" 2 5
link "$R4" 1 "$R3" 2 6
ip -n "$A" route add default via "$n.1.1"
ip -n "$B" route add default via "$n.4.1"
ip -n "$R1" route add default via "$n.2.2"
ip -n "$R2" route add "$n.1.0/24" via "$n.2.1"
ip -n "$R2" route add "$n.4.0/24" via "$n.5.2"   # back to B: through R4
ip -n "$R2" route add "$n.6.0/24" via "$n.5.2"
ip -n "$R3" route add default via "$n.3.1"      # forth to A: straight to R2
ip -n "$R4" route add "$n.4.0/24" via "$n.6.2"
ip -n "$R4" route add default via "$n.5.1"
for r in "$R1" "$R2" "$R3" "$R4"; do
  ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.icmp_ratelimit=0 \
    net.ipv4.icmp_errors_use_inbound_ifaddr=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
    net.ipv6.conf.all.forwarding=1 net.ipv6.icmp.ratelimit=0
done
# The IPv6 routes, as the IPv4 ones.
ip -n "$A" -6 route add default via "$n6:1::1"
ip -n "$B" -6 route add default via "$n6:4::1"
ip -n "$R1" -6 route add default via "$n6:2::2"
ip -n "$R2" -6 route add "$n6:1::/64" via "$n6:2::1"
ip -n "$R2" -6 route add "$n6:4::/64" via "$n6:5::2"
ip -n "$R2" -6 route add "$n6:6::/64" via "$n6:5::2"
ip -n "$R3" -6 route add default via "$n6:3::1"
ip -n "$R4" -6 route add "$n6:4::/64" via "$n6:6::2"
ip -n "$R4" -6 route add default via "$n6:5::1"
# R2's EF rewrite and R1's silence in IPv6 (R1 keeps neighbour discovery,
# which is ICMPv6 too: only its time-exceeded is dropped).
ip netns exec "$R2" ip6tables -t mangle -A PREROUTING -i "${id}l3x" -p udp -m dscp --dscp 46 -j DSCP --set-dscp 10
ip netns exec "$R1" ip6tables -A OUTPUT -p icmpv6 --icmpv6-type time-exceeded -j DROP
# R2: EF to AF11 on UDP coming in from R3 (forth only).
ip netns exec "$R2" iptables -t mangle -A PREROUTING -i "${id}l3x" -p udp -m dscp --dscp 46 -j DSCP --set-dscp 10
# R1: sends no ICMP at all.
ip netns exec "$R1" iptables -A OUTPUT -p icmp -j DROP

# Hop names (`names`): each agent's own hosts file (`ip netns exec` mounts
# /etc/netns/NS/hosts over /etc/hosts; getnameinfo reads it before any name
# server), each naming the routers as seen from its side, so each
# direction's names show whose resolver gave them. R1 (silent) is named
# too: a silent hop has no address to name.
mkdir -p "/etc/netns/$A" "/etc/netns/$B"
printf '127.0.0.1 localhost\n%s\n' "$n.1.1 r1.seen-by-a.test" "$n.2.2 r2.seen-by-a.test" \
  "$n.5.2 r4.seen-by-a.test" "$n.6.2 r3.seen-by-a.test" "$n.4.2 b.seen-by-a.test" >"/etc/netns/$A/hosts"
printf '127.0.0.1 localhost\n%s\n' "$n.4.1 r3.seen-by-b.test" "$n.3.1 r2.seen-by-b.test" \
  "$n.2.1 r1.seen-by-b.test" "$n.1.2 a.seen-by-b.test" >"/etc/netns/$B/hosts"

start_agent "$A" "$n.1.2" url_a "" 120
start_agent "$B" "$n.4.2" url_b "" 120
# path_run NAME SERVE DRIVE FLAGS...: `meshperf run` from R2 with the agents
# at the URLs SERVE and DRIVE (the second drives), its result file to
# $out ($dir/NAME.json), its text to $out.txt, shown when it fails.
path_run() {
  out=$dir/$1.json
  local serve=$2 drive=$3 rc=0
  shift 3
  ip netns exec "$R2" timeout 60 "$bin" run --agent "$serve" --agent "$drive" "$@" --json "$out" >"$out.txt" 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat "$out.txt" >&2; fail "meshperf run $* exited $rc"; }
}

# tracepath first (B to A): the path's own answer, before meshperf's probes.
ip netns exec "$B" timeout 30 tracepath -n -m 8 "$n.1.2" >"$dir/tracepath.txt" 2>&1 || true

path_run path "$url_a" "$url_b" --kind path --set max_hops=8 --set probes=2 --set wait_ms=200 --set dscp=0,46 \
  --set marks_count=2

python3 - "$out" "$out.txt" "$dir/tracepath.txt" "$n" <<'PY' || { cat "$out.txt" "$dir/tracepath.txt" >&2; fail "see above"; }
import json, re, sys
result, text, tp, n = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read(), sys.argv[4]
s = json.load(open(result))["steps"][0]["summary"]
errors = []
def check(ok, what):
    if not ok:
        errors.append(what)
def hops(d):
    return [(h["addr"] if not h["silent"] else "silent") for h in d["hops"]]
f, b = s["forth"], s["back"]
want_f = [f"{n}.4.1", f"{n}.3.1", "silent", f"{n}.1.2"]
want_b = ["silent", f"{n}.2.2", f"{n}.5.2", f"{n}.6.2", f"{n}.4.2"]
check(hops(f) == want_f, f"forth hops {hops(f)}, want {want_f}")
check(hops(b) == want_b, f"back hops {hops(b)}, want {want_b}")
check(f["end"] == "peer" and f["peer_hop"] == 4, f"forth end {f['end']} at {f.get('peer_hop')}")
check(b["end"] == "peer" and b["peer_hop"] == 5, f"back end {b['end']} at {b.get('peer_hop')}")
check(s["asymmetric"] is True, "not marked asymmetric")
for d, ttl in ((f, 3), (b, 1)):
    h = d["hops"][ttl - 1]
    check(h["silent"] and h["answered"] == 0 and h["sent"] == 2 and not h["peer"], f"hop {ttl} of {d['from']}: {h}")
fm, bm = f["mtu"], b["mtu"]
check(fm["bytes"] == 1400 and fm["local"] == 1500, f"forth MTU {fm}")
check(fm.get("lowered_at") == 1 and fm.get("lowered_by") == f"{n}.4.1", f"forth MTU lowered at {fm}")
check(f["hops"][0].get("mtu") == 1400, f"hop 1's MTU {f['hops'][0]}")
check("black_hole_above" not in fm, f"forth black hole {fm}")
check(bm["bytes"] == 1500 and "lowered_by" not in bm, f"back MTU {bm}")
for m in f["marks"]:
    if m["dscp"] == 46:
        check(m["verdict"] == "rewritten" and m["got_dscp"] == 10 and m["got_ecn"] == m["ecn"], f"forth EF mark {m}")
        check(m.get("changed_at") == 2 and m.get("changed_by") == f"{n}.3.1", f"forth EF changed at {m}")
    else:
        check(m["verdict"] == "kept", f"forth mark {m}")
check(len(f["marks"]) == 8 and len(b["marks"]) == 8, "8 marks each way")
check(all(m["verdict"] == "kept" for m in b["marks"]), f"back marks {b['marks']}")
# The text says the same.
check(re.search(rf"^forth {n}\.4\.2 -> {n}\.1\.2: peer at hop 4$", text, re.M), "forth line")
check(re.search(rf"^back  {n}\.1\.2 -> {n}\.4\.2: peer at hop 5$", text, re.M), "back line")
check("ASYMMETRIC: 4 hops forth, 5 back" in text, "asymmetry line")
check(f"path MTU forth: 1400 bytes (interface 1500), lowered at hop 1 ({n}.4.1)" in text, "MTU line")
check(re.search(rf"DSCP 46 ECN 0 -> DSCP 10 ECN 0: rewritten \(2/2 arrived\), changed at hop 2 \({n}\.3\.1\)", text), "mark line")
# tracepath over the same path: the same hops (its "no reply" is our silent
# hop) and the same path MTU.
tp_hops = {}
for line in tp.splitlines():
    m = re.match(r"\s*(\d+):\s+(\S+)", line)
    # Not its own host (1?:), nor an answer to a big probe (pmtu N: the hop
    # lowering the MTU answers whatever the TTL).
    if m and not line.lstrip().startswith(m.group(1) + "?") and "pmtu" not in line:
        tp_hops.setdefault(int(m.group(1)), m.group(2) if m.group(2) != "no" else "silent")
want_tp = {i + 1: a for i, a in enumerate(want_f)}
check(tp_hops == want_tp, f"tracepath hops {tp_hops}, want {want_tp}")
pm = re.search(r"Resume: pmtu (\d+) hops (\d+) back (\d+)", tp)
check(pm and int(pm.group(1)) == fm["bytes"], f"tracepath's pmtu {pm and pm.group(1)} vs meshperf's {fm['bytes']}")
# tracepath's "back" is the hops its last answer came back over (from its
# TTL): meshperf's back trace is the same route, traced.
check(pm and (int(pm.group(2)), int(pm.group(3))) == (f["peer_hop"], b["peer_hop"]),
      f"tracepath's hops/back {pm and pm.groups()[1:]} vs meshperf's {f['peer_hop']}/{b['peer_hop']}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY
grep -v '^http' "$dir/path.json.txt"   # what meshperf said, for the log

# The same path in IPv6 (hop limit, ICMPv6 from the error queue, packet too
# big, the traffic class): a second pair of agents on A's and B's IPv6
# addresses. The same hops each way (a router's ICMPv6 comes from the
# address source selection picks, so each hop is checked against its
# router's addresses), the silent R1, 1400 forth lowered at hop 1, EF
# rewritten forth (with no hop named: IPv6 routers quote nothing of it).
start_agent "$A" "$n6:1::2" url_a6 "" 120
start_agent "$B" "$n6:4::2" url_b6 "" 120
path_run v6 "$url_a6" "$url_b6" --kind path --set max_hops=8 --set probes=2 --set wait_ms=200 --set dscp=0,46 \
  --set ecn=false --set marks_count=2
python3 - "$out" "$n6" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import ipaddress, json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
n6 = sys.argv[2]
ip = lambda a: ipaddress.ip_address(a)
routers = {name: {ip(f"{n6}:{k}") for k in ks} for name, ks in {
    "R1": ["1::1", "2::1"], "R2": ["2::2", "3::1", "5::1"], "R3": ["3::2", "4::1", "6::2"], "R4": ["5::2", "6::1"]}.items()}
def who(h):
    if h["silent"]:
        return "silent"
    if h["peer"]:
        return "peer " + str(ip(h["addr"]))
    return next((r for r, a in routers.items() if ip(h["addr"]) in a), "stranger " + h["addr"])
f, b = s["forth"], s["back"]
errors = []
want_f = ["R3", "R2", "silent", f"peer {ip(n6 + ':1::2')}"]
want_b = ["silent", "R2", "R4", "R3", f"peer {ip(n6 + ':4::2')}"]
if [who(h) for h in f["hops"]] != want_f:
    errors.append(f"forth hops {[who(h) for h in f['hops']]}, want {want_f}")
if [who(h) for h in b["hops"]] != want_b:
    errors.append(f"back hops {[who(h) for h in b['hops']]}, want {want_b}")
if not s["asymmetric"] or ip(f["to"]) != ip(n6 + ":1::2"):
    errors.append(f"asymmetric {s['asymmetric']}, forth to {f['to']}")
fm, bm = f.get("mtu", {}), b.get("mtu", {})
if fm.get("bytes") != 1400 or fm.get("local") != 1500 or fm.get("lowered_at") != 1 or ip(fm.get("lowered_by", "::")) not in routers["R3"]:
    errors.append(f"forth MTU {fm}")
if bm.get("bytes") != 1500 or "lowered_by" in bm:
    errors.append(f"back MTU {bm}")
for m in f["marks"]:
    want = ("rewritten", 10) if m["dscp"] == 46 else ("kept", 0)
    if (m["verdict"], m.get("got_dscp")) != want or m["received"] != 2:
        errors.append(f"forth mark {m}, want {want}")
if not all(m["verdict"] == "kept" for m in b["marks"]) or len(b["marks"]) != 2:
    errors.append(f"back marks {b['marks']}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY
grep -E '^(forth|back|ASYMMETRIC|path MTU|  [0-9] )' "$dir/v6.json.txt"   # IPv6, for the log

# The same path with names: B (driving) names the hops forth from its
# hosts file, A the hops back from its own; the silent hop has none; the
# text shows each name with its address. (The run above, without names,
# has none: checked below.)
path_run names "$url_a" "$url_b" --kind path --set max_hops=8 --set probes=1 --set wait_ms=200 --set mtu=false \
  --set dscp=0 --set ecn=false --set marks_count=1 --set names=true
python3 - "$out" "$out.txt" "$n" "$dir/path.json" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
text, n = open(sys.argv[2]).read(), sys.argv[3]
names = lambda d: [h.get("name") for h in d["hops"]]
want_f = ["r3.seen-by-b.test", "r2.seen-by-b.test", None, "a.seen-by-b.test"]
want_b = [None, "r2.seen-by-a.test", "r4.seen-by-a.test", "r3.seen-by-a.test", "b.seen-by-a.test"]
errors = []
if names(s["forth"]) != want_f:
    errors.append(f"forth names {names(s['forth'])}, want {want_f}")
if names(s["back"]) != want_b:
    errors.append(f"back names {names(s['back'])}, want {want_b}")
if f"r3.seen-by-b.test ({n}.4.1)" not in text or f"b.seen-by-a.test ({n}.4.2) (peer)" not in text:
    errors.append("the text does not show the names with their addresses")
plain = json.load(open(sys.argv[4]))["steps"][0]["summary"]
if any("name" in h for d in (plain["forth"], plain["back"]) for h in d["hops"]):
    errors.append("names without names=true")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY

# Fewer hops than the path: max hops reached is a result (no MTU, no marks:
# the peer never answered), not an error.
path_run short "$url_a" "$url_b" --kind path --set max_hops=2 --set probes=2 --set wait_ms=200
python3 - "$out" "$out.txt" "$n" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
text, n = open(sys.argv[2]).read(), sys.argv[3]
f, b = s["forth"], s["back"]
hops = lambda d: [h.get("addr", "silent") for h in d["hops"]]
ok = (f["end"] == "max_hops" and b["end"] == "max_hops" and hops(f) == [f"{n}.4.1", f"{n}.3.1"]
      and hops(b) == ["silent", f"{n}.2.2"] and "peer_hop" not in f and "mtu" not in f
      and f["marks"] == [] and not s["asymmetric"]
      and "max hops reached (2) before the peer" in text)
if not ok:
    print(f"max_hops=2: forth {f}, back {b}", file=sys.stderr)
    sys.exit(1)
PY

# A matrix of path (issue 24 part 4): every ordered pair, the cells by hops
# to the peer: A drives the 5 hops back, B the 4 forth; the file's cells by
# path MTU (1400 where B drives) and by marks changed (EF with each ECN
# codepoint, rewritten where B drives).
path_run matrix "$url_a" "$url_b" --matrix --kind path --metric hops --set max_hops=8 --set probes=1 --set wait_ms=200 \
  --set dscp=46 --set marks_count=1
python3 - "$out" "$out.txt" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, re, sys
steps, text = json.load(open(sys.argv[1]))["steps"], open(sys.argv[2]).read()
errors = []
rows = [l.split() for l in text.splitlines() if re.match(r"^ {3}[AB] ", l)]
if rows != [["A", "-", "5"], ["B", "4", "-"]]:
    errors.append(f"hops table {rows}")
if "matrix: path hops to the peer, hops; rows drive, columns serve" not in text:
    errors.append("no matrix heading")
for s in steps:
    f, client = s["summary"]["forth"], s["pair"]["client"]
    changed = sum(m["verdict"] not in ("kept", "lost") for m in f["marks"])
    want = (1500, 0) if client == 0 else (1400, 4)
    if (f["mtu"]["bytes"], changed) != want:
        errors.append(f"agent {client} driving: MTU {f['mtu']}, {changed} marks changed, want {want}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY

# The monitor (issue 24 part 4): hops and path MTU each way per pair, and a
# route change counted: after its first run R2 sends what is for B straight
# to R3 (no R4 on the way back: 4 hops, and through the 1400 link), so the
# second run finds the A-to-B route changed, in each pair's direction that
# goes that way, once. The change is made between runs (--every 4s, no
# jitter, runs of about a second), never under a trace.
ip netns exec "$R2" timeout 60 "$bin" monitor --agent "$url_a" --agent "$url_b" --kind path \
  --set max_hops=8 --set probes=1 --set wait_ms=200 --set dscp=0 --set ecn=false --set marks_count=1 \
  --every 4s --jitter 0s \
  --listen 127.0.0.1:0 >"$dir/monitor.out" 2>&1 &
pids+=($!)
seen() { # seen TEXT SECONDS: waits for TEXT in the monitor's output
  for _ in $(seq $(($2 * 10))); do grep -q "$1" "$dir/monitor.out" && return; sleep 0.1; done
  cat "$dir/monitor.out" >&2; fail "the monitor did not say '$1' within $2 s"
}
seen "run 1: 2 agents, 2 of 2 pairs measured" 20
ip -n "$R2" route replace "$n.4.0/24" via "$n.3.2"
seen "run 2: 2 agents, 2 of 2 pairs measured" 20
metrics=$(grep -o 'metrics on http://[^ ]*' "$dir/monitor.out" | head -1)
ip netns exec "$R2" python3 - "${metrics#metrics on }" "$url_a" "$url_b" <<'PY' || { cat "$dir/monitor.out" >&2; fail "see above"; }
import re, sys, urllib.request
page = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
a, b = (re.match(r"https?://([^/]+)/", u).group(1) for u in sys.argv[2:4])
def val(name, src, dst, direction):
    m = re.search(rf'^{name}{{direction="{direction}",dst="{dst}",src="{src}"}} (\S+)$', page, re.M)
    return m and float(m.group(1))
errors = []
# (src, dst, direction): hops, MTU, changes. A to B is 4 hops now, through 1400.
want = {(a, b, "forth"): (4, 1400, 1), (a, b, "back"): (4, 1400, 0),
        (b, a, "forth"): (4, 1400, 0), (b, a, "back"): (4, 1400, 1)}
for (src, dst, d), w in want.items():
    got = tuple(val(f"meshperf_pair_path_{k}", src, dst, d) for k in ("hops", "mtu_bytes", "changes_total"))
    if got != w:
        errors.append(f"{src} -> {dst} {d}: hops, MTU, changes {got}, want {w}")
for agent in (a, b):
    for role in ("src", "dst"):
        m = re.search(rf'^meshperf_node_pairs_path_changed{{agent="{agent}",role="{role}"}} (\S+)$', page, re.M)
        if not m or float(m.group(1)) != 1:
            errors.append(f"{agent} {role}: pairs whose route changed {m and m.group(1)}, want 1")
if errors:
    print("\n".join(errors) + "\n" + "\n".join(l for l in page.splitlines() if "path" in l), file=sys.stderr)
    sys.exit(1)
PY
kill "${pids[-1]}" 2>/dev/null || true
ip -n "$R2" route replace "$n.4.0/24" via "$n.5.2"
ip -n "$A" route flush cache   # A learnt 1400 to B over R3: forget it

# A black hole: R3 stops sending fragmentation-needed, so datagrams over
# 1400 bytes vanish past it with no ICMP. meshperf must still find 1400 by
# halving, and name the black hole after hop 1 (R3: the last hop that
# answers at full size; its TTL check comes before its MTU check).
ip netns exec "$R3" iptables -A OUTPUT -p icmp --icmp-type fragmentation-needed -j DROP
path_run hole "$url_a" "$url_b" --kind path --set max_hops=8 --set probes=1 --set wait_ms=200 --set dscp=0 \
  --set ecn=false --set marks_count=1
python3 - "$out" "$out.txt" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
m, text = s["forth"]["mtu"], open(sys.argv[2]).read()
ok = (m["bytes"] == 1400 and m.get("black_hole_above") == 1400 and m.get("black_hole_after") == 1
      and "lowered_by" not in m and "black_hole_above" not in s["back"]["mtu"]
      and "BLACK HOLE: datagrams above 1400 bytes vanish with no ICMP after hop 1" in text)
if not ok:
    print(f"black hole: forth {m}, back {s['back']['mtu']}", file=sys.stderr)
    sys.exit(1)
PY
# A hop that drops all ICMP, its own and what it forwards: R1 now also
# drops the routers' answers to A passing through it, so A's trace back
# hears nothing from R2, R4 and R3 behind R1 (silent, not lost: the trace
# goes on), and still reaches B, which answers the probes themselves; the
# way forth, whose answers never cross R1, is as before.
ip netns exec "$R1" iptables -A FORWARD -p icmp -j DROP
path_run noicmp "$url_a" "$url_b" --kind path --set max_hops=8 --set probes=1 --set wait_ms=200 --set mtu=false \
  --set dscp=0 --set ecn=false --set marks_count=1
python3 - "$out" "$out.txt" "$n" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, re, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
text, n = open(sys.argv[2]).read(), sys.argv[3]
hops = lambda d: [h.get("addr", "silent") for h in d["hops"]]
f, b = s["forth"], s["back"]
ok = (hops(b) == ["silent"] * 4 + [f"{n}.4.2"] and b["end"] == "peer" and b["peer_hop"] == 5
      and all(h["silent"] and h["answered"] == 0 for h in b["hops"][:4])
      and hops(f) == [f"{n}.4.1", f"{n}.3.1", "silent", f"{n}.1.2"]
      and re.search(rf"^back  {n}\.1\.2 -> {n}\.4\.2: peer at hop 5$", text, re.M))
if not ok:
    print(f"behind a hop dropping all ICMP: forth {hops(f)}, back {hops(b)} ({b['end']})", file=sys.stderr)
    sys.exit(1)
PY
# ... and when R1 drops the trace's probes too (UDP it forwards with a TTL
# under 60, as a filter against traceroute does; the agents' UDP hello and
# their TCP lines pass): nothing past R1 answers, so each trace ends in
# silence after 5 silent hops in a row, said so, not as an error: forth
# after R2 (hop 2), back after nothing (R1 is hop 1). (With every UDP
# datagram dropped the test does not start: the agents' UDP hello fails in
# one line, as it says.)
ip netns exec "$R1" iptables -A FORWARD -p udp -m ttl --ttl-lt 60 -j DROP
path_run silence "$url_a" "$url_b" --kind path --set max_hops=12 --set probes=1 --set wait_ms=200 --set mtu=false \
  --set dscp=0 --set ecn=false --set marks_count=1
python3 - "$out" "$out.txt" "$n" <<'PY' || { cat "$out.txt" >&2; fail "see above"; }
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["summary"]
text, n = open(sys.argv[2]).read(), sys.argv[3]
hops = lambda d: [h.get("addr", "silent") for h in d["hops"]]
f, b = s["forth"], s["back"]
ok = (f["end"] == "silence" and hops(f) == [f"{n}.4.1", f"{n}.3.1"] + ["silent"] * 5
      and b["end"] == "silence" and hops(b) == ["silent"] * 5
      and "peer_hop" not in f and "peer_hop" not in b
      and "ended in silence after hop 2: nothing past it answered" in text
      and "ended in silence after hop 0: nothing past it answered" in text)
if not ok:
    print(f"behind a hop dropping all ICMP and the probes: forth {hops(f)} ({f['end']}), back {hops(b)} ({b['end']})", file=sys.stderr)
    sys.exit(1)
PY

echo "$name: ok (hops, MTU, marks and the silent hop each way; tracepath agrees; hop names from each side's resolver; max hops reached; a path matrix by hops; the monitor's hops, MTU and route change; the black hole named; the hops behind one dropping all ICMP silent, the peer reached, or the trace ended in silence where the probes die too; the same in IPv6)"
