"""deploy/grafana/*.json: each dashboard parses as JSON, has unique panel
ids, a heatmap panel over meshperf_pair_rtt_seconds, a fleet's view (a
panel over the per-node aggregates, meshperf_node_*, and the pairs of one
node, $node, to drill into), and every metric its
queries name is one `meshperf monitor` exports or an agent's own counter
(`meshperf agent --metrics`): the names in agent/src/monitor/metrics.rs and
agent/src/serve/metrics.rs, so a renamed metric breaks this check rather
than the dashboard. Exit 1 with one line per problem."""
import json
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
exported = {m for src in ("agent/src/monitor/metrics.rs", "agent/src/serve/metrics.rs")
            for m in re.findall(r'"(meshperf_[a-z0-9_]+)"', (root / src).read_text())}
problems = []
dashboards = sorted((root / "deploy/grafana").glob("*.json"))
if not dashboards:
    problems.append("no dashboard in deploy/grafana/")
for path in dashboards:
    name = path.relative_to(root)
    try:
        dash = json.loads(path.read_text())
    except ValueError as e:
        problems.append(f"{name}: not JSON: {e}")
        continue
    panels = dash.get("panels", [])
    ids = [p.get("id") for p in panels]
    if len(ids) != len(set(ids)) or None in ids:
        problems.append(f"{name}: panel ids missing or repeated: {ids}")
    heatmap = False
    nodes = drill = False
    for p in panels:
        exprs = [t.get("expr", "") for t in p.get("targets", [])]
        if not exprs or not all(exprs):
            problems.append(f"{name}: panel {p.get('title')!r} has a target without a query")
        for e in exprs:
            for metric in re.findall(r"\bmeshperf_[a-z0-9_]+", e):
                if metric not in exported:
                    problems.append(f"{name}: panel {p.get('title')!r} queries {metric}, which neither meshperf monitor nor an agent's --metrics exports")
        if p.get("type") == "heatmap" and any("meshperf_pair_rtt_seconds" in e for e in exprs):
            heatmap = True
        nodes |= any("meshperf_node_" in e for e in exprs)
        drill |= any(re.search(r'meshperf_pair_\w+\{[^}]*src=~"\$node"', e) for e in exprs)
    if not heatmap:
        problems.append(f"{name}: no heatmap panel over meshperf_pair_rtt_seconds")
    if not nodes:
        problems.append(f"{name}: no panel over the per-node aggregates (meshperf_node_*): a fleet's dashboard reads those")
    if not drill:
        problems.append(f"{name}: no panel of one node's pairs (src=~\"$node\")")
for line in problems:
    print(f"deploy: grafana: {line}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"deploy: grafana: {', '.join(str(p.relative_to(root)) for p in dashboards)} parse, "
      f"with a pair heatmap, queries naming only exported metrics ({len(exported)} known)")
