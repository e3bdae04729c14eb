#!/usr/bin/python3
"""Reads a rendered chart (multi-document YAML) on stdin and checks the wrapped pod's security settings.

usage: check_pod_security.py KIND native|classic|insidecar AGENT_UID SIDECAR_UID
(insidecar: init.inSidecar, a native sidecar whose entry is stockade-init --exec-as, no init container)
Prints one line per failed expectation and exits 1 if any failed."""
import sys

import yaml

kind, mode, agent_uid, sidecar_uid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
fails = []


def expect(cond, what):
    if not cond:
        fails.append(what)


workloads = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith("-agent")]
expect(len(workloads) == 1, "exactly one %s named *-agent" % kind)
if not workloads:
    print("\n".join(fails))
    sys.exit(1)
w = workloads[0]
spec = w["spec"] if kind == "Pod" else w["spec"]["template"]["spec"]
inits = spec.get("initContainers", [])
conts = spec["containers"]
expect(spec.get("automountServiceAccountToken") is False, "no service account token in the pod")
if mode == "insidecar":
    # the sidecar container's entry programs the netns: it is the init, as far as privileges go
    expect(not any(c["name"] == "stockade-init" for c in inits + conts), "no stockade-init container")
    expect(inits and inits[0]["name"] == "stockade-sidecar", "the native sidecar is the first init container")
    init = inits[0] if inits else {"securityContext": {"capabilities": {}}, "volumeMounts": []}
    want_caps = ["NET_ADMIN", "SETUID", "SETGID", "SETPCAP"]
else:
    expect(inits and inits[0]["name"] == "stockade-init", "stockade-init is the first init container")
    init = inits[0]
    want_caps = ["NET_ADMIN"]
isc = init["securityContext"]
expect(isc["capabilities"].get("add") == want_caps, "init adds only %s" % ", ".join(want_caps))
expect(isc["capabilities"].get("drop") == ["ALL"], "init drops ALL")
expect(isc.get("readOnlyRootFilesystem") is True, "init readOnlyRootFilesystem")
expect(isc.get("allowPrivilegeEscalation") is False, "init allowPrivilegeEscalation false")
expect(any(m["mountPath"] == "/run/stockade" and not m.get("readOnly") for m in init["volumeMounts"]),
       "init writes the marker into the shared emptyDir")

if mode == "insidecar":
    sidecars = [c for c in inits if c["name"] == "stockade-sidecar"]
    expect(len(sidecars) == 1 and not any(c["name"] == "stockade-sidecar" for c in conts), "one native sidecar")
    if sidecars:
        s = sidecars[0]
        cmd = s.get("command", [])
        expect(cmd[:1] == ["/usr/local/bin/stockade-init"], "the sidecar's entry is stockade-init")
        expect(cmd[-4:] == ["--exec-as", "%d:%d" % (sidecar_uid, sidecar_uid), "--", "/usr/local/bin/stockade-sidecar"],
               "the entry execs stockade-sidecar as the sidecar UID:GID")
        expect(s.get("restartPolicy") == "Always", "native sidecar restartPolicy Always")
        expect(s["securityContext"]["runAsUser"] == 0, "the entry starts as root (nftables needs uid 0)")
        hook = s.get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command", [])
        expect(hook[:2] == ["/usr/local/bin/stockade-sidecar", "wait-ready"] and
               "--as=%d:%d" % (sidecar_uid, sidecar_uid) in hook, "the wait-ready hook drops to the sidecar UID (--as)")
        expect(s["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz")
        expect(s["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")
    sidecars = []   # the non-root sidecar checks below are the entry's job here (e2e/init, e2e/node)
elif mode == "native":
    sidecars = [c for c in inits if c["name"] == "stockade-sidecar"]
    expect(len(sidecars) == 1 and inits.index(sidecars[0]) == 1, "native sidecar is the second init container")
    expect(not any(c["name"] == "stockade-sidecar" for c in conts), "no classic sidecar in containers")
    if sidecars:
        expect(sidecars[0].get("restartPolicy") == "Always", "native sidecar restartPolicy Always")
        # The agent waits for the sidecar's /readyz: a postStart `wait-ready` hook (default), or a startupProbe.
        hook = sidecars[0].get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command", [])
        probe = sidecars[0].get("startupProbe", {}).get("httpGet", {}).get("path")
        expect((hook[:2] == ["/usr/local/bin/stockade-sidecar", "wait-ready"]) != (probe == "/readyz"),
               "agent held by a postStart wait-ready hook or a startupProbe on /readyz (one of them)")
else:
    sidecars = [c for c in conts if c["name"] == "stockade-sidecar"]
    expect(len(sidecars) == 1, "classic sidecar in containers")
    expect(not any(c["name"] == "stockade-sidecar" for c in inits), "no native sidecar in initContainers")
    if sidecars:
        expect("restartPolicy" not in sidecars[0], "classic sidecar has no restartPolicy")
if sidecars:
    s = sidecars[0]
    ssc = s["securityContext"]
    expect(ssc["runAsUser"] == sidecar_uid and ssc["runAsNonRoot"] is True, "sidecar runs as the sidecar UID, non-root")
    expect(ssc["capabilities"] == {"drop": ["ALL"]}, "sidecar has no capabilities")
    expect(ssc["readOnlyRootFilesystem"] is True and ssc["allowPrivilegeEscalation"] is False, "sidecar hardened")
    expect(s["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz")
    expect(s["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")

psc = spec.get("securityContext", {})
expect(psc.get("seccompProfile") == {"type": "RuntimeDefault"}, "pod seccompProfile RuntimeDefault")
for k in ("runAsUser", "runAsGroup", "fsGroup"):
    expect(psc.get(k) not in (0, sidecar_uid), "pod %s neither root nor the sidecar UID" % k)
expect(not {0, sidecar_uid} & set(psc.get("supplementalGroups", [])), "pod supplementalGroups neither root nor the sidecar GID")

# The workload's own init containers (workload.initContainers): after stockade-init, and after a native
# sidecar so that the kubelet starts them once it is ready; hardened like the agent, whose traffic theirs is.
own_inits = [c for c in inits if not c["name"].startswith("stockade-")]
stockade_inits = [i for i, c in enumerate(inits) if c["name"].startswith("stockade-")]
for c in own_inits:
    expect(inits.index(c) > max(stockade_inits, default=-1), "init container %s after stockade's" % c["name"])

agents = [c for c in conts if c["name"] != "stockade-sidecar"]
expect(len(agents) == 1, "one agent container")
for a in agents + own_inits:
    sc = a["securityContext"]
    n = a["name"]
    expect(sc["runAsUser"] == agent_uid and sc["runAsGroup"] == agent_uid, "%s runs as the agent UID/GID" % n)
    expect(sc["runAsNonRoot"] is True, "%s runAsNonRoot" % n)
    expect(sc["allowPrivilegeEscalation"] is False, "%s allowPrivilegeEscalation false" % n)
    expect(sc["capabilities"] == {"drop": ["ALL"]}, "%s drops ALL capabilities" % n)
    expect(sc["readOnlyRootFilesystem"] is True, "%s readOnlyRootFilesystem" % n)
    # the default section's content-hashed name (policy/seccomp/name.h; stockade-policy seccomp --print-name)
    expect(sc["seccompProfile"] == {"type": "Localhost", "localhostProfile": "stockade-4696b6ca6e2d4b5e.json"},
           "%s seccomp Localhost stockade-4696b6ca6e2d4b5e.json" % n)
    expect(not any(m["name"].startswith("stockade-") and m["name"] != "stockade-trust" for m in a.get("volumeMounts", [])), "no stockade volume (policy, marker, API secrets) mounted in %s" % n)
    # the sidecar's trust files (trust.enabled, the default): the whole directory, read-only, and the
    # variables the runtimes read pointing into it
    trust = [m for m in a.get("volumeMounts", []) if m["name"] == "stockade-trust"]
    expect(trust == [{"name": "stockade-trust", "mountPath": "/run/stockade-trust", "readOnly": True}],
           "%s mounts the trust files read-only, a directory (no subPath)" % n)
    env = {e["name"]: e.get("value") for e in a.get("env", [])}
    expect(env.get("SSL_CERT_FILE") == "/run/stockade-trust/bundle.pem" and
           env.get("NODE_EXTRA_CA_CERTS") == "/run/stockade-trust/ca.pem" and
           "/run/stockade-trust/truststore.p12" in (env.get("JAVA_TOOL_OPTIONS") or ""),
           "%s has the trust variables" % n)
# the sidecar writes them (the insidecar entry's args are the sidecar's too)
side = [c for c in inits + conts if c["name"] == "stockade-sidecar"]
expect(side and "--trust-dir=/run/stockade-trust" in side[0].get("args", []) and
       any(m["name"] == "stockade-trust" and not m.get("readOnly") for m in side[0].get("volumeMounts", [])),
       "the sidecar writes the trust files (--trust-dir, its mount writable)")
expect([v.get("emptyDir", {}).get("medium") for v in spec.get("volumes", []) if v["name"] == "stockade-trust"] == ["Memory"],
       "the trust volume is one in-memory emptyDir")
# no container but the sidecar mounts a Secret of stockade's (API secrets, the swapped credentials)
for c in inits + conts:
    if c["name"] != "stockade-sidecar":
        expect(not any(m["name"].startswith("stockade-secret-") for m in c.get("volumeMounts", [])),
               "%s mounts no stockade Secret" % c["name"])
for c in inits + conts:
    expect(not c.get("securityContext", {}).get("privileged"), "%s not privileged" % c["name"])
    uid = c.get("securityContext", {}).get("runAsUser")
    expect(uid is not None, "%s sets runAsUser" % c["name"])
    if c["name"] != "stockade-sidecar":
        expect(uid != sidecar_uid, "%s does not run as the sidecar UID" % c["name"])
for d in docs:
    expect("app.kubernetes.io/name" in d["metadata"].get("labels", {}), "%s %s has app.kubernetes.io/name" % (d["kind"], d["metadata"]["name"]))

print("\n".join(fails))
sys.exit(1 if fails else 0)
