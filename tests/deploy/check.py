"""What deploy/kubernetes/ promises, checked on kustomize's output (or on the
base files when kustomize is not there): the restricted Pod Security profile,
probes on /healthz, the token from the Secret as a mounted file
(--token-file), and the same data ports in the agent's --data-ports, the
container and the Service; the agent's --metrics port annotated for
Prometheus; the monitor (a Deployment of one, or with
components/sharded-monitor a StatefulSet of shards, --shard=ordinal/N with
N its replicas) on the agents' headless Service by DNS, restricted too, its
/metrics behind an annotated Service.
Schemas are kubernetes-validate's job (tests/deploy/validate.sh); this is
the rest.

    python check.py base|node|sharded FILE...   (YAML documents, several per file)
"""
import sys

import yaml


def fail(msg):
    sys.exit(f"deploy check: FAILED: {msg}")


def token_file(pod, c, want, who):
    """--token-file=PATH names a file of a read-only mount of the Secret
    meshperf-token, key token, never world-readable; no token in the
    environment or on the command line."""
    (path,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--token-file=")] or [None]
    want(path, f"{who}: --token-file=PATH in its args")
    want(all(not a.startswith("--token=") and a != "--token" for a in c["args"]), f"{who}: no --token on the command line")
    want("MESHPERF_TOKEN" not in {e["name"] for e in c.get("env", [])}, f"{who}: the token as a file, not in the environment")
    mounts = [m for m in c.get("volumeMounts", []) if path.startswith(m["mountPath"].rstrip("/") + "/")]
    want(len(mounts) == 1 and mounts[0].get("readOnly") is True, f"{who}: {path} on one read-only mount")
    (vol,) = [v for v in pod["volumes"] if v["name"] == mounts[0]["name"]]
    sec = vol.get("secret", {})
    rel = path[len(mounts[0]["mountPath"].rstrip("/")) + 1:]
    want(sec.get("secretName") == "meshperf-token" and {"key": "token", "path": rel} in sec.get("items", []),
         f"{who}: {path} is key token of secret meshperf-token")
    mode = sec.get("defaultMode", 0o644)
    want(mode & 0o007 == 0, f"{who}: the token file's mode {mode:o} lets every user read it")
    want(pod.get("securityContext", {}).get("fsGroup") == 65534 or pod["securityContext"].get("runAsUser") == 0,
         f"{who}: fsGroup 65534, so that user 65534 reads the 0440 token file")


def restricted(pod, c, want, who):
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    want(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{who}: seccompProfile RuntimeDefault")
    want(csc.get("allowPrivilegeEscalation") is False, f"{who}: allowPrivilegeEscalation false")
    want(csc.get("readOnlyRootFilesystem") is True, f"{who}: readOnlyRootFilesystem true")
    want(csc.get("capabilities", {}).get("drop") == ["ALL"], f"{who}: capabilities drop ALL")
    for r in ("requests", "limits"):
        want({"cpu", "memory"} <= set(c.get("resources", {}).get(r, {})), f"{who}: cpu and memory {r}")
    return psc, csc


def arg(c, name):
    return [a.split("=", 1)[1] for a in c["args"] if a.startswith(f"--{name}=")]


def scraped(meta, port, want, who):
    a = meta.get("annotations", {})
    want(a.get("prometheus.io/scrape") == "true" and a.get("prometheus.io/port") == str(port)
         and a.get("prometheus.io/path") == "/metrics", f"{who}: prometheus.io annotations for :{port}/metrics, got {a}")


def main():
    variant, files = sys.argv[1], sys.argv[2:]
    docs = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
    named = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    by_kind = {d["kind"]: d for d in docs}
    ds, svc = named.get(("DaemonSet", "meshperf-agent")), named.get(("Service", "meshperf"))
    if not ds or not svc:
        fail(f"expected the DaemonSet meshperf-agent and the Service meshperf, got {sorted(named)}")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    want = lambda cond, what: cond or fail(f"{variant}: {what}")
    psc, csc = restricted(pod, c, want, "agent")
    added = sorted(csc.get("capabilities", {}).get("add", []))
    if variant in ("base", "sharded"):
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
    token_file(pod, c, want, "agent")
    # Ports: --data-ports LO-HI, --metrics, the container's and the
    # Service's agree.
    (dp,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--data-ports=")]
    lo, hi = map(int, dp.split("-"))
    data = {(p, proto) for p in range(lo, hi + 1) for proto in ("TCP", "UDP")}
    cports = {(p["containerPort"], p.get("protocol", "TCP")) for p in c["ports"]}
    sports = {(p["port"], p.get("protocol", "TCP")) for p in svc["spec"]["ports"]}
    listen = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--listen=")]
    want(listen == ["0.0.0.0:7800"], f"--listen=0.0.0.0:7800, got {listen}")
    (metrics,) = arg(c, "metrics") or [None]
    want(metrics == "0.0.0.0:9465", f"agent: --metrics=0.0.0.0:9465, got {metrics}")
    scraped(ds["spec"]["template"]["metadata"], 9465, want, "agent pods")
    want(cports == data | {(7800, "TCP"), (9465, "TCP")},
         f"container ports {sorted(cports)} are not 7800, 9465 and {dp} TCP+UDP")
    want(sports == cports, f"Service ports {sorted(sports)} differ from the container's")
    want(svc["spec"].get("clusterIP") == "None", "the Service is headless")
    sel = svc["spec"]["selector"]
    want(sel.items() <= ds["spec"]["template"]["metadata"]["labels"].items(), "the Service selects the agent pods")

    # The monitor: one (a Deployment), or shards (a StatefulSet whose
    # replicas are the N of --shard=ordinal/N), on the agents' Service by
    # name, restricted.
    msvc = named.get(("Service", "meshperf-monitor"))
    if variant == "sharded":
        dep = named.get(("StatefulSet", "meshperf-monitor"))
        want(dep and ("Deployment", "meshperf-monitor") not in named,
             f"the StatefulSet meshperf-monitor in place of the Deployment, got {sorted(named)}")
        (m,) = dep["spec"]["template"]["spec"]["containers"]
        n = dep["spec"].get("replicas")
        want(arg(m, "shard") == [f"ordinal/{n}"], f"monitor: --shard=ordinal/{n} for {n} replicas, got {arg(m, 'shard')}")
        gov = named.get(("Service", dep["spec"]["serviceName"]))
        want(gov and gov["spec"].get("clusterIP") == "None", "the StatefulSet's serviceName is a headless Service")
        want("prometheus.io/scrape" not in gov["metadata"].get("annotations", {}), "its pods scraped once, through meshperf-monitor")
    else:
        dep = named.get(("Deployment", "meshperf-monitor"))
        want(dep and msvc, f"the Deployment and Service meshperf-monitor, got {sorted(named)}")
        want(dep["spec"].get("replicas") == 1, "one monitor (two would run every test twice)")
    want(msvc, "the Service meshperf-monitor")
    mpod = dep["spec"]["template"]["spec"]
    (m,) = mpod["containers"]
    mpsc, mcsc = restricted(mpod, m, want, "monitor")
    want(mpsc.get("runAsNonRoot") is True and mpsc.get("runAsUser") == 65534, "monitor: runAsNonRoot, runAsUser 65534")
    want(not mcsc.get("capabilities", {}).get("add") and not mpod.get("hostNetwork"), "monitor: no capabilities, pod network")
    want(m.get("command") == ["/meshperf", "monitor"], f"monitor: command /meshperf monitor, got {m.get('command')}")
    want(m["image"] == c["image"], f"monitor: the agents' image {c['image']}, got {m['image']}")
    ns = svc["metadata"].get("namespace", "meshperf")
    want(arg(m, "agent") == [f"dns:{svc['metadata']['name']}.{ns}.svc.cluster.local"],
         f"monitor: --agent=dns:<the headless Service>.{ns}.svc.cluster.local, got {arg(m, 'agent')}")
    token_file(mpod, m, want, "monitor")
    want(arg(m, "listen") == ["0.0.0.0:9464"], f"monitor: --listen=0.0.0.0:9464, got {arg(m, 'listen')}")
    for probe in ("livenessProbe", "readinessProbe"):
        g = m.get(probe, {}).get("httpGet", {})
        want(g.get("path") == "/healthz" and g.get("port") == "metrics", f"monitor: {probe} GET /healthz on port metrics")
    want({(p["containerPort"], p.get("protocol", "TCP")) for p in m["ports"]} == {(9464, "TCP")}, "monitor: port 9464 only")
    want([(p["port"], p["targetPort"]) for p in msvc["spec"]["ports"]] == [(9464, "metrics")], "monitor Service: 9464 -> metrics")
    want(msvc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(),
         "the monitor Service selects the monitor pod")
    want(not (svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()),
         "the agents' headless Service must not list the monitor")
    scraped(msvc["metadata"], 9464, want, "monitor Service")
    print(f"deploy check: {variant}: ok ({len(docs)} objects)")


main()
