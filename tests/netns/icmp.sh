#!/usr/bin/env bash
# Forged ICMP errors against the UDP kinds (issue 40, finding 2; root only).
# Two agents, A (serving, its data port fixed) and B (driving), joined
# through a router namespace R (topology.sh). In R a made-up router
# (tests/netns/forge_icmp.py, raw sockets) watches the UDP flows to and
# from A's data port and sends each flow's sender an ICMP error every 5 ms
# from 10.N.9.66, an address on no link, quoting the datagram's IP header
# and only its 8-byte UDP header: in turn port unreachable, host
# unreachable, administratively prohibited, network unknown, fragmentation
# needed (MTU 1280) and time exceeded. R itself sends no time-exceeded, so
# hop 1 of each trace is silent and its probes wait out `wait_ms`: the
# forger's errors arrive while a probe waits for its answer.
#
# Before the fix one forged port unreachable ended a udp_rr ("sending
# request N failed: Connection refused") and a udp_stream ("sending stopped
# after N datagrams"), and a path trace took the forger for hop 1 and ended
# there ("unreachable"). Now:
# - udp_rr (600 requests, one every 5 ms): all 600 sent, the test
#   complete, both sides' `icmp_errors` counting the errors;
# - udp_stream both ways (2000 datagrams each way, one every ms): every
#   datagram sent each way, complete, `icmp_errors` counted;
# - path each way: hop 1 silent with the forger's errors as `unverified`
#   (its address in `unverified_from` only), the peer at hop 2, path MTU
#   1500 lowered by nobody, the forger's address in no hop.
#
# Names are unique per run; everything is removed on exit, whether the checks
# pass or not; every run is bounded by `timeout`. Exit 0 on success or when
# skipped.
set -euo pipefail

name="icmp"
. "$(dirname "$0")/agents.sh"
netns_begin ip iptables python3
id=mpi$$
A=${id}a B=${id}b R=${id}r
net=$((16 + $$ % 200))
ipa=10.$net.1.2 ipb=10.$net.2.2
fake=10.$net.9.66
port=5311                        # the serving agent's data port (TCP and UDP)
dir=/tmp/$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$A" "$B" "$R"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir"

# A - R - B (topology.sh); R's own time-exceeded dropped (a silent hop 1),
# not the forger's.
. "$root/tests/netns/topology.sh"
ip netns exec "$R" iptables -A OUTPUT -p icmp --icmp-type time-exceeded ! -s "$fake" -j DROP

start_agent "$A" "$ipa" url_a "--data-ports $port-$port" 120
start_agent "$B" "$ipb" url_b "" 120

# The forger watches R's links for 90 s at most.
ip netns exec "$R" timeout 100 python3 "$root/tests/netns/forge_icmp.py" "$port" "$fake" 5 90 \
  >"$dir/forger.out" 2>&1 &
pids+=($!)

# run NAME FLAGS...: `meshperf run` from R, its result in $dir/NAME.json,
# its text in $dir/NAME.json.txt; a step that failed is in the result too,
# and the checks below say what went wrong with each.
run() {
  out=$dir/$1.json
  local rc=0
  shift
  ip netns exec "$R" timeout 60 "$bin" run --agent "$url_a" --agent "$url_b" "$@" --json "$out" >"$out.txt" 2>&1 || rc=$?
  [ $rc -eq 0 ] || echo "meshperf run $* exited $rc" >>"$out.txt"
}

run rr --kind udp_rr --set count=600 --set wait_us=5000
run stream --kind udp_stream --set direction=both --set pkt_bytes=512 --set count=2000 --set wait_us=1000
run path --kind path --set max_hops=4 --set probes=2 --set wait_ms=200 --set dscp=0 --set ecn=false \
  --set marks_count=1
kill "${pids[-1]}" 2>/dev/null || true
wait "${pids[-1]}" 2>/dev/null || true

python3 - "$dir" "$ipa" "$ipb" "$fake" <<'PY' || { grep -hv '^http' "$dir"/*.txt >&2; cat "$dir/forger.out" >&2; fail "see above"; }
import json, sys
d, ipa, ipb, fake = sys.argv[1:]
step = lambda n: json.load(open(f"{d}/{n}.json"))["steps"][0]
errors = []
def check(ok, what):
    if not ok:
        errors.append(what)

# udp_rr: every request sent, complete, the errors counted on both sides.
s = step("rr")
c, srv = s.get("summary") or {}, (s.get("sides") or {}).get("server") or {}
check(s.get("error") is None and c.get("complete") and c.get("note") is None, f"udp_rr not complete: {s.get('error')} {c.get('note')}")
check(c.get("count") == 600, f"udp_rr sent {c.get('count')} of 600 requests")
check(c.get("icmp_errors", 0) > 0, f"udp_rr's requester counted no ICMP errors: {c.get('icmp_errors')}")
check(srv.get("icmp_errors", 0) > 0, f"udp_rr's responder counted no ICMP errors: {srv.get('icmp_errors')}")
check(srv.get("complete"), f"udp_rr's responder not complete: {srv.get('note')}")
print(f"udp_rr: {c.get('count')} sent, {c.get('answered')} answered, {c.get('timeouts')} timeouts; "
      f"ICMP errors: requester {c.get('icmp_errors')}, responder {srv.get('icmp_errors')}")

# udp_stream both ways: every datagram sent each way, the errors counted.
s = step("stream")
f = s.get("summary") or {}
r = f.get("reverse") or {}
check(s.get("error") is None and f.get("complete") and r.get("complete"), f"udp_stream not complete: {s.get('error')} {f.get('note')} {r.get('note')}")
check(f.get("sent") == 2000 and r.get("sent") == 2000, f"udp_stream sent {f.get('sent')} and {r.get('sent')} of 2000 each way")
check((f.get("icmp_errors") or 0) + (r.get("icmp_errors") or 0) > 0, f"udp_stream counted no ICMP errors: {f.get('icmp_errors')} {r.get('icmp_errors')}")
print(f"udp_stream: sent {f.get('sent')} / {r.get('sent')}, received {f.get('received')} / {r.get('received')}; "
      f"ICMP errors {f.get('icmp_errors')} / {r.get('icmp_errors')}")

# path: the forger is no hop, no end, no MTU; its errors are unverified.
s = step("path")
p = s.get("summary") or {}
check(s.get("error") is None, f"path failed: {s.get('error')}")
for name, dr, peer in (("forth", p.get("forth"), ipa), ("back", p.get("back"), ipb)):
    hops = (dr or {}).get("hops") or []
    who = [h.get("addr", "silent") for h in hops]
    check(dr and dr["end"] == "peer" and dr.get("peer_hop") == 2 and who == ["silent", peer], f"{name}: hops {who}, end {(dr or {}).get('end')}")
    if not hops:
        continue
    check(all(h.get("addr") != fake and fake not in h.get("also", []) and "note" not in h for h in hops), f"{name}: the forger is a hop: {hops}")
    check(hops[0]["silent"] and hops[0]["answered"] == 0 and hops[0].get("unverified", 0) > 0
          and hops[0].get("unverified_from") == [fake], f"{name}: hop 1 {hops[0]}")
    check(dr.get("unverified_icmp", 0) >= hops[0].get("unverified", 0) > 0, f"{name}: unverified {dr.get('unverified_icmp')}")
    m = dr.get("mtu") or {}
    check(m.get("bytes") == 1500 and "lowered_by" not in m and "black_hole_above" not in m, f"{name}: MTU {m}")
    print(f"path {name}: hops {who}, end {dr['end']}, hop 1: {hops[0].get('unverified')} unverified ICMP "
          f"from {hops[0].get('unverified_from')}, {dr.get('unverified_icmp')} in the direction; MTU {m.get('bytes')}")
# The text says so.
text = lambda n: open(f"{d}/{n}.json.txt").read()
check("icmp: " in text("rr") and "ICMP errors" in text("rr"), "udp_rr's text has no icmp line")
for name in ("forth", "back"):
    check(f"unverified ICMP {name}: " in text("path"), f"path's text has no unverified ICMP {name} line")
check(f"* (silent) (" in text("path") and f"unverified ICMP from {fake})" in text("path"), "path's text shows no unverified hop")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY
grep -E '^(forged|flow)' "$dir/forger.out" | tail -3
grep -E '^(icmp|unverified)' "$dir"/*.json.txt || true

echo "$name: ok (forged ICMP errors: udp_rr and udp_stream ran to their ends counting them, a path trace took none for a hop, an end or an MTU)"
