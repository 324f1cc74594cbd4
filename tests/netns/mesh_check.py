"""The cells of a `meshperf run --matrix --json` result against the paths
tests/netns/mesh.sh built (hosts numbered from 1 in --agent order; a cell is
row = the driving agent, column = the serving one). Prints the matrix;
exits 1 with every cell that is wrong.

  --shaped H --rate-mbit R   host H's row and column (tcp_stream) at R
                             Mbit/s of Ethernet frames, as TCP payload,
                             within 5%
  --line-mbit L              the others' line rate (printed beside their
                             median; 0: none)
  --delayed A,B --delay-ms D packets from A to B delayed D ms: cells A>B and
  --base-ms B                B>A (tcp_rr) at least 2B + D (a line of B ms
                             each way and D more one way: no round trip is
                             shorter) and under the slowest other cell +
                             1.5 D (nearer once delayed than twice); every
                             other cell at least 2B and under the median +
                             D/2 (nearer the undelayed cells than the
                             delayed ones)
  --killed H --ended-before F  host H's agent killed after the cell lines in
                             F ended: its cells not in F failed
Every other cell: measured; tcp_stream: within 20% of the median of those
cells (each link shaped the same). tcp_rr: as above, not by a share of the
median: the cells pass through user-space delay lines (tests/netns/delay.py)
whose wake-ups on two busy cores spread the cells by a millisecond (2689.9
to 3785.1 us for 2 ms lines once, 21.7% from the median), and a round trip
held D longer wakes later still (the delayed cells 0.1 to 0.46 ms over
median + D here, with the others within 0.05 ms of their median, and once
in CI 0.54 ms over: C>B 7846.3 us with the slowest other cell 2336.7 us,
which a bound of + D + 0.5 ms failed by 10 us); the bounds are the lines'
own floors, the D/2 separation each way (from the undelayed level, and
from a delay applied twice) and the slowest undelayed path, so a delay on
the wrong pair, twice, or none, fails, and jitter under D/2 does not."""
import argparse
import json
import re
import statistics
import sys

MSS, FRAME = 1448, 1514  # TCP payload and Ethernet frame of a full segment

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--hosts", type=int, required=True)
ap.add_argument("--shaped", type=int)
ap.add_argument("--rate-mbit", type=float)
ap.add_argument("--line-mbit", type=float)
ap.add_argument("--delayed")
ap.add_argument("--delay-ms", type=float)
ap.add_argument("--base-ms", type=float)
ap.add_argument("--killed", type=int)
ap.add_argument("--ended-before")
a = ap.parse_args()
if a.delayed and (a.delay_ms is None or a.base_ms is None):
    ap.error("--delayed needs --delay-ms and --base-ms")

with open(a.json) as f:
    result = json.load(f)
kind = result["plan"]["kind"]
n = a.hosts
cells = {}
for s in result["steps"]:
    p = s["pair"]
    key = (p["client"] + 1, p["server"] + 1)
    assert key not in cells, f"pair {key} twice"
    if s.get("error"):
        cells[key] = None
    elif kind == "tcp_stream":
        cells[key] = s["summary"]["bits_per_second"] / 1e6  # Mbit/s
    else:
        cells[key] = s["summary"]["rtt_us"]["median"]  # us
unit = "Mbit/s" if kind == "tcp_stream" else "us RTT p50"

print(f"{kind} matrix, {unit}; rows drive, columns serve")
print("     " + "".join(f"{j:>10}" for j in range(1, n + 1)))
for i in range(1, n + 1):
    row = []
    for j in range(1, n + 1):
        v = cells.get((i, j), "-" if i == j else "missing")
        row.append(v if isinstance(v, str) else "FAILED" if v is None else f"{v:.1f}")
    print(f"{i:>5}" + "".join(f"{c:>10}" for c in row))

errors = []
want = {(i, j) for i in range(1, n + 1) for j in range(1, n + 1) if i != j}
if set(cells) != want:
    errors.append(f"cells {sorted(want - set(cells))} missing, {sorted(set(cells) - want)} unexpected")

special = set()
if a.killed:
    with open(a.ended_before) as f:
        lines = f.read()
    # "[3/20] B -> E (agent ... -> ...): ..." : row letter -> column letter.
    ended = {(ord(r) - 64, ord(c) - 64) for r, c in re.findall(r"^\[\d+/\d+\] ([A-Z]) -> ([A-Z]) ", lines, re.M)}
    mine = {k for k in want if a.killed in k}
    after = mine - ended
    print(f"host {a.killed} killed after {len(ended)} cells had ended ({len(mine & ended)} of its own)")
    if len(after) < 6:
        errors.append(f"only {len(after)} of host {a.killed}'s cells ran after the kill: no test")
    for k in sorted(after):
        if cells.get(k, 0) is not None:
            errors.append(f"cell {k} of the killed host measured {cells.get(k)}, not failed")
    special |= after
if a.delayed:
    x, y = map(int, a.delayed.split(","))
    special |= {(x, y), (y, x)}
if a.shaped:
    special |= {k for k in want if a.shaped in k}

others = {k: v for k, v in cells.items() if k not in special}
failed = sorted(k for k, v in others.items() if v is None)
if failed:
    errors.append(f"cells {failed} failed")
values = [v for v in others.values() if v is not None]
if len(values) < 6:
    errors.append(f"only {len(values)} ordinary cells measured")
else:
    med = statistics.median(values)
    line = f" (tbf {a.line_mbit:.0f} Mbit/s = {a.line_mbit * MSS / FRAME:.1f} of payload)" if a.line_mbit else ""
    print(f"ordinary cells ({len(values)}): median {med:.1f} {unit}{line}, from {min(values):.1f} to {max(values):.1f}")
    if kind == "tcp_stream" or not a.delayed:
        for k, v in sorted(others.items()):
            if v is not None and abs(v - med) > 0.2 * med:
                errors.append(f"cell {k} {v:.1f} {unit} is not the median {med:.1f} within 20%")
    else:
        # Round trips (us) through a B ms line each way and, for the delayed
        # pair, D ms more one way.
        floor, split = 2e3 * a.base_ms, med + 1e3 * a.delay_ms / 2
        ordinary = [v for v in values if floor <= v < split]
        top = max(ordinary) if ordinary else med
        low_d, high_d = floor + 1e3 * a.delay_ms, top + 1.5e3 * a.delay_ms
        print(f"ordinary cells: {min(values) - floor:.1f} to {max(values) - floor:.1f} us above the lines' "
              f"{floor:.0f} us; bound: {floor:.0f} to {split:.1f} us (median + D/2); delayed cells: "
              f"{low_d:.0f} to {high_d:.1f} us (the slowest other + 1.5 D)")
        for k, v in sorted(others.items()):
            if v is not None and v < floor:
                errors.append(f"cell {k} {v:.1f} us is under the {floor:.0f} us its delay lines hold a round trip")
            if v is not None and v >= split:
                errors.append(f"cell {k} {v:.1f} us is nearer the delayed level (median {med:.1f} + "
                              f"{a.delay_ms} ms) than the median: delayed, but not by its path")
        for k in [(x, y), (y, x)]:
            v = cells.get(k)
            added = None if v is None else (v - med) / 1e3
            print(f"delayed cell {k}: {v} us, {added} ms above the median (delay line {a.delay_ms} ms one way)")
            if v is None or not low_d <= v <= high_d:
                errors.append(f"delayed cell {k} {v} us is not {low_d:.0f} to {high_d:.1f} us "
                              f"(its lines' {low_d:.0f}, the slowest other cell + 1.5 x {a.delay_ms} ms)")
if a.shaped:
    expect = a.rate_mbit * MSS / FRAME
    for k in sorted(k for k in want if a.shaped in k):
        v = cells.get(k)
        if v is None or abs(v - expect) > 0.05 * expect:
            errors.append(f"shaped cell {k}: {v} Mbit/s, not {expect:.2f} (tbf {a.rate_mbit} Mbit/s) within 5%")
    got = [cells[k] for k in want if a.shaped in k and cells.get(k)]
    if got:
        print(f"host {a.shaped}'s row and column: {min(got):.2f} to {max(got):.2f} Mbit/s "
              f"(tbf {a.rate_mbit} Mbit/s of frames = {expect:.2f} Mbit/s of payload)")

for e in errors:
    print(f"  wrong: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
