"""What deploy/kubernetes/ promises, checked on kustomize's output (or on the
base files when kustomize is not there): the restricted Pod Security profile,
probes on /healthz, the token from the Secret, and the same data ports in the
agent's --data-ports, the container and the Service. Schemas are
kubernetes-validate's job (tests/deploy/validate.sh); this is the rest.

    python check.py base|node FILE...   (YAML documents, several per file)
"""
import sys

import yaml


def fail(msg):
    sys.exit(f"deploy check: FAILED: {msg}")


def main():
    variant, files = sys.argv[1], sys.argv[2:]
    docs = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
    by_kind = {d["kind"]: d for d in docs}
    ds, svc = by_kind.get("DaemonSet"), by_kind.get("Service")
    if not ds or not svc:
        fail(f"expected a DaemonSet and a Service, got {sorted(by_kind)}")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    want = lambda cond, what: cond or fail(f"{variant}: {what}")
    want(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccompProfile RuntimeDefault")
    want(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation false")
    want(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem true")
    want(csc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities drop ALL")
    added = sorted(csc.get("capabilities", {}).get("add", []))
    if variant == "base":
        want(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == 65534, "runAsNonRoot, runAsUser 65534")
        want(added == [], f"no capabilities added, got {added}")
        want(not pod.get("hostNetwork"), "pod network")
        ns = by_kind.get("Namespace")
        want(ns and ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted",
             "namespace enforces the restricted profile")
    else:
        want(added == ["NET_ADMIN", "SYS_NICE"], f"NET_ADMIN and SYS_NICE added, got {added}")
        want(pod.get("hostNetwork") is True, "hostNetwork")
    for probe in ("livenessProbe", "readinessProbe"):
        g = c.get(probe, {}).get("httpGet", {})
        want(g.get("path") == "/healthz" and g.get("port") == "control", f"{probe} GET /healthz on port control")
    env = {e["name"]: e for e in c.get("env", [])}
    ref = env.get("MESHPERF_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
    want(ref == {"name": "meshperf-token", "key": "token"}, "MESHPERF_TOKEN from secret meshperf-token, key token")
    want(all("--token" not in a for a in c.get("args", [])), "no --token on the command line")
    for r in ("requests", "limits"):
        want({"cpu", "memory"} <= set(c.get("resources", {}).get(r, {})), f"cpu and memory {r}")
    # Ports: --data-ports LO-HI, the container's and the Service's agree.
    (dp,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--data-ports=")]
    lo, hi = map(int, dp.split("-"))
    data = {(p, proto) for p in range(lo, hi + 1) for proto in ("TCP", "UDP")}
    cports = {(p["containerPort"], p.get("protocol", "TCP")) for p in c["ports"]}
    sports = {(p["port"], p.get("protocol", "TCP")) for p in svc["spec"]["ports"]}
    listen = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--listen=")]
    want(listen == ["0.0.0.0:7800"], f"--listen=0.0.0.0:7800, got {listen}")
    want(cports == data | {(7800, "TCP")}, f"container ports {sorted(cports)} are not 7800 and {dp} TCP+UDP")
    want(sports == cports, f"Service ports {sorted(sports)} differ from the container's")
    want(svc["spec"].get("clusterIP") == "None", "the Service is headless")
    sel = svc["spec"]["selector"]
    want(sel.items() <= ds["spec"]["template"]["metadata"]["labels"].items(), "the Service selects the agent pods")
    print(f"deploy check: {variant}: ok ({len(docs)} objects)")


main()
