"""The alerting rules as they ship, checked (tests/deploy/validate.sh):

- the ConfigMap meshperf-prometheus-rules of the default kustomize build
  holds deploy/prometheus/meshperf-rules.yml byte for byte;
- the PrometheusRule of components/prometheus-rule (kustomize's build of
  it) holds exactly the file's groups, and only the fields the Prometheus
  operator's PrometheusRule (monitoring.coreos.com/v1) knows;
- every alert of the file has a promtool test where it fires and one where
  it stays quiet (tests/deploy/*.test.yml), and every recorded series is
  read by a rule, an annotation or a test.

    python rules.py DEFAULT_BUILD.yaml PROMETHEUS_RULE_BUILD.yaml
"""
import glob
import re
import sys

import yaml

RULES = "deploy/prometheus/meshperf-rules.yml"
# What the operator's CRD has for a group and a rule (its openAPIV3Schema).
GROUP_KEYS = {"name", "interval", "rules", "limit", "partial_response_strategy", "query_offset", "labels"}
RULE_KEYS = {"record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")


def fail(msg):
    sys.exit(f"deploy rules: FAILED: {msg}")


def docs(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def crd_shape(groups):
    """The groups as the PrometheusRule CRD takes them."""
    names = [g.get("name") for g in groups]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        fail(f"group names must be unique, non-empty strings (the CRD's list-map key): {names}")
    for g in groups:
        if set(g) - GROUP_KEYS:
            fail(f"group {g['name']}: fields the PrometheusRule CRD does not know: {sorted(set(g) - GROUP_KEYS)}")
        if "interval" in g and not DURATION.match(str(g["interval"])):
            fail(f"group {g['name']}: interval {g['interval']!r} is no duration")
        for r in g["rules"]:
            who = r.get("alert") or r.get("record")
            if set(r) - RULE_KEYS:
                fail(f"rule {who}: fields the PrometheusRule CRD does not know: {sorted(set(r) - RULE_KEYS)}")
            if ("alert" in r) == ("record" in r) or not isinstance(r.get("expr"), (str, int)):
                fail(f"rule {who}: exactly one of alert and record, and an expr")
            for k in ("for", "keep_firing_for"):
                if k in r and not DURATION.match(str(r[k])):
                    fail(f"rule {who}: {k} {r[k]!r} is no duration")
            for k in ("labels", "annotations"):
                if not all(isinstance(v, str) for v in r.get(k, {}).values()):
                    fail(f"rule {who}: {k} values must be strings")


def main():
    default, operator = sys.argv[1], sys.argv[2]
    text = open(RULES).read()
    groups = yaml.safe_load(text)["groups"]

    cms = [d for d in docs(default) if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "meshperf-prometheus-rules"]
    if len(cms) != 1:
        fail(f"the default build has no ConfigMap meshperf-prometheus-rules ({len(cms)})")
    if cms[0]["data"] != {"meshperf-rules.yml": text}:
        fail(f"ConfigMap meshperf-prometheus-rules does not hold {RULES} as it is (key meshperf-rules.yml)")

    prs = [d for d in docs(operator) if d["kind"] == "PrometheusRule"]
    if len(prs) != 1:
        fail(f"components/prometheus-rule builds {len(prs)} PrometheusRules, not one")
    pr = prs[0]
    if pr["apiVersion"] != "monitoring.coreos.com/v1" or pr["metadata"].get("namespace") != "meshperf":
        fail(f"the PrometheusRule is {pr['apiVersion']} in {pr['metadata'].get('namespace')}, not monitoring.coreos.com/v1 in meshperf")
    if set(pr["spec"]) != {"groups"}:
        fail(f"the PrometheusRule's spec has {sorted(pr['spec'])}, not groups alone")
    if pr["spec"]["groups"] != groups:
        ours = [g["name"] for g in groups]
        theirs = [g["name"] for g in pr["spec"]["groups"]]
        fail(f"the PrometheusRule's groups ({theirs}) differ from {RULES}'s ({ours}): run scripts/prometheus-rule.sh")
    crd_shape(groups)

    # Every alert fires in a test and stays quiet in one.
    alerts = [r["alert"] for g in groups for r in g["rules"] if "alert" in r]
    records = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    fires, quiet, exprs = set(), set(), []
    for path in sorted(glob.glob("tests/deploy/*.test.yml")):
        t = yaml.safe_load(open(path))
        for case in t["tests"]:
            for a in case.get("alert_rule_test", []):
                (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
            exprs += [p["expr"] for p in case.get("promql_expr_test", [])]
    missing = [f"{a} ({'no firing case' if a not in fires else 'no quiet case'})" for a in alerts if a not in fires or a not in quiet]
    if missing:
        fail(f"alerts not tested both ways by tests/deploy/*.test.yml: {', '.join(missing)}")
    # Every recorded series is read somewhere: by a rule, in an annotation
    # (a query), or in a test's expression.
    reads = "\n".join([yaml.safe_dump(r) for g in groups for r in g["rules"] if r.get("record") is None] + exprs
                      + [r["expr"] for g in groups for r in g["rules"] if "record" in r])
    unread = sorted(n for n in records if not re.search(re.escape(n) + r"(?![a-z0-9_:])", reads))
    if unread:
        fail(f"recorded series nothing reads (no rule, annotation or test): {unread}")
    print(f"deploy rules: ok ({len(alerts)} alerts, each firing and quiet in a promtool test; {len(records)} recorded series; "
          f"the ConfigMap holds {RULES}, the PrometheusRule its {len(groups)} groups)")


main()
