#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/kubernetes/mthpd-daemonset.yaml holds what docs/kubernetes.md says
it does: every document parses, the pod has the host PID namespace, the
privileges and capabilities of the unit, the mounts (knobs read-write,
cgroups read-only, the restore journal on the host, the configuration),
--no-bus, the liveness probe, the grace period, tolerations and priority;
and every file of its ConfigMap and every policy example of
docs/kubernetes.md passes 'mthpctl check'.

Usage: kubernetes-manifest.py SOURCE_ROOT MTHPCTL
Exit 77 (skip) without python3-yaml; kubectl --dry-run=client is no help
here: it needs an API server, even with --validate=false."""
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (apt-get install python3-yaml)")
    sys.exit(77)

src, mthpctl = sys.argv[1], sys.argv[2]
manifest = os.path.join(src, "deploy", "kubernetes", "mthpd-daemonset.yaml")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


with open(manifest) as f:
    docs = [d for d in yaml.safe_load_all(f) if d is not None]
kinds = {d["kind"]: d for d in docs}
for k in ("Namespace", "ServiceAccount", "ConfigMap", "DaemonSet"):
    check(k in kinds, f"no {k} document")
for d in docs:
    check(d.get("apiVersion") and d.get("metadata", {}).get("name"), f"{d.get('kind')}: apiVersion and name")
    if d["kind"] != "Namespace":
        check(d["metadata"].get("namespace") == "mthpd", f"{d['kind']} not in namespace mthpd")

ds = kinds["DaemonSet"]
pod = ds["spec"]["template"]["spec"]
check(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
      "selector does not select the template's labels")
check(pod.get("hostPID") is True, "hostPID: true (pids for perf, taskstats, process_madvise)")
check(pod.get("priorityClassName") == "system-node-critical", "priorityClassName system-node-critical")
check({"operator": "Exists"} in pod.get("tolerations", []), "a toleration of every taint")
check(pod.get("terminationGracePeriodSeconds", 30) >= 30, "terminationGracePeriodSeconds >= 30")
check(pod.get("automountServiceAccountToken") is False, "no API token: mthpd never calls the API server")

(c,) = [c for c in pod["containers"] if c["name"] == "mthpd"]
cmd = c["command"]
check("--no-bus" in cmd, "--no-bus: there is no system bus in the pod")
check("--root" not in cmd and "-r" not in cmd, "no --root: it would turn off what needs the real host")
sc = c["securityContext"]
check(sc.get("privileged") is True, "privileged: the host cgroup namespace on cgroup v2")
check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem: mthpd writes the knobs and /run/mthpd only")

# the six capabilities of the unit, no more
unit = open(os.path.join(src, "systemd", "mthpd.service.in")).read()
bounding = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
want = sorted(b.removeprefix("CAP_") for b in bounding)
check(len(want) == 6, f"the unit names six capabilities, found {want}")
check(sorted(sc["capabilities"]["add"]) == want, f"capabilities {sc['capabilities']['add']} != unit's {want}")
check(sc["capabilities"].get("drop") == ["ALL"], "capabilities: drop ALL")

volumes = {v["name"]: v for v in pod["volumes"]}
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}


def host_mount(path, host, readonly):
    m = mounts.get(path)
    check(m is not None, f"no mount at {path}")
    if not m:
        return
    v = volumes[m["name"]]
    check(v.get("hostPath", {}).get("path") == host, f"{path}: hostPath {host}")
    check(bool(m.get("readOnly")) == readonly, f"{path}: readOnly should be {readonly}")


host_mount("/sys/kernel/mm/transparent_hugepage", "/sys/kernel/mm/transparent_hugepage", False)
host_mount("/sys/fs/cgroup", "/sys/fs/cgroup", True)
host_mount("/run/mthpd", "/run/mthpd", False)
check(volumes[mounts["/run/mthpd"]["name"]]["hostPath"].get("type") == "DirectoryOrCreate",
      "/run/mthpd: DirectoryOrCreate")
check("/etc/mthpd" in mounts and mounts["/etc/mthpd"].get("readOnly"), "/etc/mthpd mounted read-only")

probe = c.get("livenessProbe", {})
check("/run/mthpd/status" in " ".join(probe.get("exec", {}).get("command", [])),
      "liveness: the age of /run/mthpd/status")
res = c.get("resources", {})
check(res.get("requests", {}).get("cpu") and res.get("limits", {}).get("memory"), "resources set")

# the init container copies the ConfigMap into /etc/mthpd, then checks it
(init,) = pod["initContainers"]
check(any(m["mountPath"] == "/etc/mthpd" for m in init["volumeMounts"]), "init container fills /etc/mthpd")
check(volumes[mounts["/etc/mthpd"]["name"]].get("emptyDir") is not None, "/etc/mthpd is an emptyDir")
cm_vol = [v for v in pod["volumes"] if "configMap" in v]
check(cm_vol and cm_vol[0]["configMap"]["name"] == kinds["ConfigMap"]["metadata"]["name"], "ConfigMap volume")

# every file of the ConfigMap passes 'mthpctl check', as the init
# container runs it
data = kinds["ConfigMap"]["data"]
check("mthpd.conf" in data, "ConfigMap without mthpd.conf")
check(re.search(r"^Bus=no$", data.get("mthpd.conf", ""), re.M), "mthpd.conf: Bus=no")
with tempfile.TemporaryDirectory(prefix="mthpd-test-k8s-") as tmp:
    files = []
    for name, text in data.items():
        check(name == "mthpd.conf" or name.endswith(".policy"), f"ConfigMap key {name}: not read by mthpd")
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(text)
        files.append(p)
    r = subprocess.run([mthpctl, "check"] + sorted(files), capture_output=True, text=True)
    check(r.returncode == 0, f"mthpctl check: {r.stdout}{r.stderr}")

    # the guide's policy examples: indented blocks starting "# NAME.policy"
    guide = open(os.path.join(src, "docs", "kubernetes.md")).read()
    examples = re.findall(r"^    # (\S+\.policy)[^\n]*\n((?:    \S[^\n]*\n)+)", guide, re.M)
    check(len(examples) >= 3, f"docs/kubernetes.md: {len(examples)} policy examples found, expected 3")
    os.mkdir(os.path.join(tmp, "guide"))
    files = []
    for name, block in examples:
        p = os.path.join(tmp, "guide", name)
        with open(p, "w") as f:
            f.write("".join(line[4:] + "\n" for line in block.splitlines()))
        files.append(p)
    r = subprocess.run([mthpctl, "check"] + files, capture_output=True, text=True)
    check(r.returncode == 0, f"docs/kubernetes.md examples: mthpctl check: {r.stdout}{r.stderr}")

for f in failures:
    print(f"{manifest}: {f}")
sys.exit(1 if failures else 0)
