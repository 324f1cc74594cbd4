#!/usr/bin/env bash
# deploy/: every Kubernetes manifest validated against the API schemas of a
# current release (PyPI's kubernetes-validate, strict: unknown fields are
# errors), on the files and on what kustomize builds of each variant (the
# default, each component alone, overlays/node: the pinned kustomize that
# scripts/setup.sh --test installs, else kustomize or kubectl on PATH; with
# none the test fails as not run); then tests/deploy/check.py on the built objects (restricted
# profile, probes, Secret, ports); then the systemd unit (deploy/systemd/)
# checked for what docs/deploy.md says it has; then the alerting and
# recording rules (promtool's check and its unit tests, and
# tests/deploy/rules.py: the ConfigMap and the PrometheusRule hold the rules
# file, every alert fires and stays quiet in a test) and the Grafana
# dashboard (tests/deploy/grafana.py).
# Exit 0 when all passed, 1 on a failure, 77 (skipped, for scripts/test.sh)
# when all else passed but systemd-analyze was missing, so the unit was
# checked for its keys only (Debian's systemd package, which setup.sh
# --test installs, has it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/lib.sh   # KUSTOMIZE_BIN
k8s_version=1.37.0
kv_dir=.tools/kv
fail() { echo "deploy: FAILED: $*" >&2; exit 1; }
[ -x "$kv_dir/bin/kubernetes-validate" ] || fail "$kv_dir/bin/kubernetes-validate is missing: run scripts/setup.sh --test"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
validate() { "$kv_dir/bin/kubernetes-validate" --strict --quiet -k "$k8s_version" "$@" || fail "schema validation (Kubernetes $k8s_version): $*"; }

# The API objects as files (kustomization and component files are not API
# objects; kustomize itself reads those, below). The PrometheusRule is the
# Prometheus operator's kind, not the API's: kubernetes-validate has no
# schema for it (it would only warn); tests/deploy/rules.py checks it.
mapfile -t files < <(find deploy/kubernetes -name '*.yaml' ! -name kustomization.yaml ! -name prometheusrule.yaml | sort)
validate "${files[@]}"
echo "deploy: ${#files[@]} files valid against Kubernetes $k8s_version: ${files[*]}"

# The example Secret must not hold a token an agent would take (>= 8 characters).
"$kv_dir/bin/python" -c 'import sys, yaml
t = yaml.safe_load(open(sys.argv[1]))["stringData"]["token"]
sys.exit(f"a usable token ({len(t)} characters) in {sys.argv[1]}" if len(t) >= 8 else 0)' deploy/kubernetes/secret.example.yaml \
  || fail "deploy/kubernetes/secret.example.yaml must keep an unusable placeholder"

kustomize=()
if [ -x "$KUSTOMIZE_BIN" ]; then kustomize=("$KUSTOMIZE_BIN" build)
elif command -v kustomize >/dev/null; then kustomize=(kustomize build)
elif command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then kustomize=(kubectl kustomize)
fi
[ ${#kustomize[@]} -gt 0 ] || fail "NOT RUN: no kustomize ($KUSTOMIZE_BIN, kustomize or kubectl), so the kustomizations were not built: run scripts/setup.sh --test (it needs go) or install kubectl"
k=$root/deploy/kubernetes
build() { # NAME DIR
  "${kustomize[@]}" "$2" >"$tmp/$1.yaml" || fail "${kustomize[*]} $2"
  # The API's kinds to kubernetes-validate; the operator's PrometheusRule to
  # tests/deploy/rules.py (below); any other kind is an error.
  "$kv_dir/bin/python" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
other = [d["kind"] for d in docs if d["apiVersion"].startswith("monitoring.coreos.com/") and d["kind"] != "PrometheusRule"]
if other: sys.exit(f"unexpected kinds {other}")
yaml.safe_dump_all([d for d in docs if not d["apiVersion"].startswith("monitoring.coreos.com/")], open(sys.argv[2], "w"))' \
    "$tmp/$1.yaml" "$tmp/$1.api.yaml" || fail "$2: see above"
  validate "$tmp/$1.api.yaml"
}
build default "$k"
build node "$k/overlays/node"
for c in "$k"/components/*/; do
  name=$(basename "$c")
  mkdir "$tmp/$name"
  # (kustomize takes relative paths only)
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n' \
    "$(realpath --relative-to="$tmp/$name" "$k/base")" "$(realpath --relative-to="$tmp/$name" "$c")" >"$tmp/$name/kustomization.yaml"
  build "component-$name" "$tmp/$name"
done
echo "deploy: built with ${kustomize[*]} and valid: default, overlays/node, components $(cd "$k/components" && echo *)"
"$kv_dir/bin/python" tests/deploy/check.py base "$tmp/default.yaml"
"$kv_dir/bin/python" tests/deploy/check.py node "$tmp/node.yaml"
"$kv_dir/bin/python" tests/deploy/check.py sharded "$tmp/component-sharded-monitor.yaml"

# The systemd unit: the deploy guide points to it; it must say what the guide says.
unit=deploy/systemd/meshperf-agent.service
for line in 'EnvironmentFile=/etc/meshperf/agent.env' 'DynamicUser=yes' 'NoNewPrivileges=yes' \
    'AmbientCapabilities=CAP_SYS_NICE CAP_NET_ADMIN' 'CapabilityBoundingSet=CAP_SYS_NICE CAP_NET_ADMIN'; do
  grep -qxF "$line" "$unit" || fail "$unit lacks '$line'"
done
grep -qE '^ExecStart=/usr/local/bin/meshperf agent --listen 0\.0\.0\.0:7800 --data-ports 5201-5204( |$)' "$unit" || fail "$unit: ExecStart is not the agent on 7800 with --data-ports 5201-5204"
grep -qF "(../$unit)" docs/deploy.md || fail "docs/deploy.md does not point to $unit"
partly=
if command -v systemd-analyze >/dev/null; then
  # Every key known to this systemd (it warns, exit 0, on unknown ones); the
  # binary is not installed here, so /bin/true stands in for it.
  sed 's#^ExecStart=/usr/local/bin/meshperf #ExecStart=/bin/true #' "$unit" >"$tmp/meshperf-agent.service"
  out=$(systemd-analyze verify "$tmp/meshperf-agent.service" 2>&1) || fail "systemd-analyze verify $unit: $out"
  # Only what it says of this unit: it also loads the host's own units and
  # warns of theirs (e.g. "/lib/systemd/system/irtt.service:9: Special user
  # nobody configured", from a package a benchmark installed).
  out=$(printf '%s\n' "$out" | grep -v '^/\(lib\|usr/lib\|etc\|run\)/systemd/' || true)
  [ -z "$out" ] || fail "systemd-analyze verify $unit: $out"
  echo "deploy: $unit: systemd-analyze verify clean"
else
  partly="systemd-analyze not installed (Debian's systemd; scripts/setup.sh --test installs it): $unit checked for its keys only, not verified"
  echo "deploy: $partly"
fi
# The alerting and recording rules: promtool's own check and its unit tests
# (promtool comes with Debian's prometheus package): the shards
# (rules.test.yml) and each pair against its baseline, the node rule against
# N pair alerts, agents and monitors that stop (alerts.test.yml). Then the
# PrometheusRule is what scripts/prometheus-rule.sh generates from the file,
# and rules.py checks what kustomize built of both.
command -v promtool >/dev/null || fail "NOT RUN: no promtool (Debian's prometheus package; scripts/setup.sh --test installs it), so deploy/prometheus/meshperf-rules.yml was not checked"
promtool check rules deploy/prometheus/meshperf-rules.yml >/dev/null || fail "promtool check rules deploy/prometheus/meshperf-rules.yml"
for t in tests/deploy/rules.test.yml tests/deploy/alerts.test.yml; do
  promtool test rules "$t" >/dev/null || fail "promtool test rules $t: run it to see which alert"
done
bash scripts/prometheus-rule.sh --check || fail "deploy/kubernetes/components/prometheus-rule/prometheusrule.yaml: see above"
"$kv_dir/bin/python" tests/deploy/rules.py "$tmp/default.yaml" "$tmp/component-prometheus-rule.yaml" || fail "the shipped rules: see above"
echo "deploy: deploy/prometheus/meshperf-rules.yml: promtool check and unit tests pass"
# The Grafana dashboard: parses, has the pair heatmap, and queries only the
# metrics meshperf monitor exports.
python3 tests/deploy/grafana.py || fail "deploy/grafana: see above"
if [ -n "$partly" ]; then
  echo "deploy: all else passed; skipped: $partly"
  exit 77
fi
echo "deploy: ok"
