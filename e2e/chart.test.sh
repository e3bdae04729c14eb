#!/usr/bin/env bash
# Chart checks: helm lint, schema validation of every rendering against the Kubernetes 1.29
# and 1.34-1.37 JSON schemas (from a package, see scripts/install-tools), the values schema's good and
# bad files, the security settings of each workload kind in native and classic mode, and drift of
# deploy/ and of the generated values table. Needs no root and no cluster.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
T=${SK_TOOLS:-/opt/stockade-tools}
HELM=$T/bin/helm KUBECONFORM=$T/bin/kubeconform
# The newest schema set: a glob sorts like ls did; an unmatched glob stays literal and fails -d.
schema_dirs=("$T"/schemas/*/kubernetes-json-schema)
SCHEMAS=""; [ -d "${schema_dirs[-1]}" ] && SCHEMAS=${schema_dirs[-1]}
CHART=helm/stockade

render() { "$HELM" template stockade "$CHART" --namespace default "$@"; }
conform() { # conform K8S_VERSION < manifests
	"$KUBECONFORM" -strict -summary -kubernetes-version "$1" \
		-schema-location "$SCHEMAS/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" -
}

SYS=helm/stockade-system
sys_render() { "$HELM" template stockade-system "$SYS" --namespace stockade-system "$@"; }
# refused NAME WANT CMD... — CMD fails saying WANT (a fixed string): a render that fails for another reason
# (helm missing, a template error) is not the refusal the check is about
refused() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1); rc=$?
	if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out"; then sk_pass "$name"
	else sk_fail "$name" "rc=$rc, want '$want', got: $(head -3 <<<"$out")"; fi
}
# gate K8S_VERSION [helm args] — the sidecar's postStart command, startupProbe or -, readiness path.
gate() { render --kube-version "$1" "${@:2}" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"):
        s = d["spec"]
        c = next(c for c in s.get("initContainers", []) + s["containers"] if c["name"] == "stockade-sidecar")
        print(" ".join(c.get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command", [])[1:]),
              "startupProbe" if "startupProbe" in c else "-", c["readinessProbe"]["httpGet"]["path"])'; }
# cks [helm args] — the Deployment pod template's policy checksum.
cks() { render --kube-version 1.34.0 --set workload.kind=Deployment "$@" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment": print(d["spec"]["template"]["metadata"]["annotations"]["checksum/policy"])'; }
pol() { # pol EGRESS-JSON [more --set...] — the chart's policy.spec with this egress list
	local f=$SK_TMP_CHART/pol-$RANDOM.yaml
	printf 'policy:\n  spec:\n    egress: %s\n' "$1" >"$f"; shift
	cks -f "$f" "$@"
}

setup() {
	if [ ! -x "$HELM" ] || [ ! -x "$KUBECONFORM" ] || [ -z "$SCHEMAS" ]; then
		echo "helm/kubeconform/schemas missing: run scripts/install-tools" >&2
		sk_fail "tools installed"; sk_summary; exit 1
	fi
}

# --- helm lint ---
t_lint() {

	sk_check "helm lint --strict (1.34)" "$HELM" lint --strict "$CHART" --kube-version 1.34.0
	sk_check "helm lint --strict (1.28, classic sidecar)" "$HELM" lint --strict "$CHART" --kube-version 1.28.0
}

# --- every rendering valid on each Kubernetes version ---
t_kubeconform() {
	all=(--set networkPolicy.enabled=true)
	for v in 1.29.0 1.34.0 1.35.0 1.36.0 1.37.0; do
		for kind in Pod Job Deployment; do
			for mode in native classic insidecar; do
				extra=(); [ "$mode" = classic ] && extra=(--set sidecar.native=false)
				[ "$mode" = insidecar ] && extra=(--set init.inSidecar=true)
				out=$(render --kube-version "$v" --set workload.kind="$kind" "${all[@]}" "${extra[@]}" | conform "$v" 2>&1)
				if echo "$out" | grep -qE 'Invalid: 0, Errors: 0'; then sk_pass "kubeconform $v $kind $mode"
				else sk_fail "kubeconform $v $kind $mode" "$out"; fi
			done
		done
	done
}

# --- The once-per-cluster chart: lint, every object valid on each version, and the installer's
# RBAC is read-only on ConfigMaps and nothing else.
t_system_chart() {
	sk_check "stockade-system: helm lint --strict (1.34)" "$HELM" lint --strict "$SYS" --kube-version 1.34.0
	sk_check "stockade-system: helm lint --strict (1.28)" "$HELM" lint --strict "$SYS" --kube-version 1.28.0
	for v in 1.29.0 1.34.0 1.35.0 1.36.0 1.37.0; do
		out=$(sys_render --kube-version "$v" --set admissionPolicy.enabled=true --set injector.enabled=true | conform "$v" 2>&1)
		if echo "$out" | grep -qE 'Invalid: 0, Errors: 0'; then sk_pass "stockade-system: kubeconform $v"
		else sk_fail "stockade-system: kubeconform $v" "$out"; fi
	done
	sk_check_eq "stockade-system: the installer may only list/watch ConfigMaps" \
		'[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}]' \
		"$(sys_render --kube-version 1.34.0 | python3 -c '
import sys, yaml, json
print(json.dumps([r for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]))')"
	sk_check_eq "stockade-system: one installer DaemonSet and one admission policy" "DaemonSet ValidatingAdmissionPolicy" \
		"$(sys_render --kube-version 1.34.0 --set admissionPolicy.enabled=true | python3 -c '
import sys, yaml
print(" ".join(sorted(d["kind"] for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] in ("DaemonSet", "ValidatingAdmissionPolicy"))))')"
	refused "stockade-system: unknown values refused" "at '/seccompInstaller': additional properties 'bogus' not allowed" \
		sys_render --kube-version 1.34.0 --set seccompInstaller.bogus=1
	# The injector: fail closed, both scopes, kube-system and its own namespace excluded, a
	# caBundle that verifies the served certificate for the Service's name, two replicas under a PDB.
	injtmp=$(mktemp -d)
	sys_render --kube-version 1.34.0 --set injector.enabled=true --set 'injector.excludeNamespaces={ops}' \
		>"$injtmp/inj.yaml"
	sk_check_eq "stockade-system: the policy review webhook: ConfigMaps labelled stockade.io/policy, CREATE and UPDATE, fail closed, /validate-policy, same exclusions" \
		"policy.validate.stockade.io Fail /validate-policy configmaps CREATE,UPDATE true kube-system,stockade-system,ops DoesNotExist" \
		"$(python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ValidatingWebhookConfiguration":
        for w in d["webhooks"]:
            r = w["rules"][0]
            e = {x["key"]: x for x in w["namespaceSelector"]["matchExpressions"]}
            print(w["name"], w["failurePolicy"], w["clientConfig"]["service"]["path"], ",".join(r["resources"]),
                  ",".join(r["operations"]), w["objectSelector"]["matchLabels"]["stockade.io/policy"],
                  ",".join(e["kubernetes.io/metadata.name"]["values"]), e["stockade.io/rev"]["operator"])' "$injtmp/inj.yaml")"
	sk_check_eq "stockade-system: injector.validatePolicies=false: no policy review webhook" "" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set injector.validatePolicies=false |
			grep -c '^kind: ValidatingWebhookConfiguration' | grep -v '^0$')"
	sk_check_eq "helm/stockade: the policy ConfigMap carries the label the review selects" "true" \
		"$(render --kube-version 1.34.0 | python3 -c '
import sys, yaml
print(" ".join(d["metadata"]["labels"].get("stockade.io/policy", "-") for d in yaml.safe_load_all(sys.stdin)
               if d and d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("app.kubernetes.io/component") == "policy"))')"
	# the namespace scope leaves namespaces labelled stockade.io/rev to their revision and those
	# enforcing Pod Security baseline/restricted to the two webhooks that refuse there, naming the level.
	sk_check_eq "stockade-system: injector webhooks fail closed, pods CREATE, both scopes, exclusions" \
		"namespace Fail None [CREATE] In [kube-system,stockade-system,ops] - rev:DoesNotExist ps:NotIn[baseline,restricted] /mutate|pod Fail None [CREATE] NotIn [kube-system,stockade-system,ops] In[enabled],rev:DoesNotExist rev:- ps:- /mutate|baseline Fail None [CREATE] In [kube-system,stockade-system,ops] - rev:DoesNotExist ps:In[baseline] /mutate/pod-security/baseline|restricted Fail None [CREATE] In [kube-system,stockade-system,ops] - rev:DoesNotExist ps:In[restricted] /mutate/pod-security/restricted|" \
		"$(python3 -c '
import sys, yaml
def ex(e, k):
    return "%s%s" % (e[k]["operator"], "[%s]" % ",".join(e[k]["values"]) if "values" in e[k] else "") if k in e else "-"
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "MutatingWebhookConfiguration":
        for w in d["webhooks"]:
            e = {x["key"]: x for x in w["namespaceSelector"]["matchExpressions"]}
            o = {x["key"]: x for x in w.get("objectSelector", {}).get("matchExpressions", [])}
            print(w["name"].split(".")[0], w["failurePolicy"], w["sideEffects"], "[%s]" % ",".join(w["rules"][0]["operations"]),
                  e["stockade.io/inject"]["operator"], "[%s]" % ",".join(e["kubernetes.io/metadata.name"]["values"]),
                  ",".join("%s" % (ex(o, "stockade.io/inject") if k == "stockade.io/inject" else "rev:" + ex(o, k)) for k in o) or "-",
                  "rev:" + ex(e, "stockade.io/rev"), "ps:" + ex(e, "pod-security.kubernetes.io/enforce"),
                  w["clientConfig"]["service"]["path"], end="|")' "$injtmp/inj.yaml")"
	python3 -c '
import base64, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "MutatingWebhookConfiguration":
        open(sys.argv[2] + "/inj-ca.pem", "wb").write(base64.b64decode(d["webhooks"][0]["clientConfig"]["caBundle"]))
    if d and d["kind"] == "Secret" and d["metadata"]["name"].endswith("-injector-tls"):
        open(sys.argv[2] + "/inj-leaf.pem", "wb").write(base64.b64decode(d["data"]["tls.crt"]))' "$injtmp/inj.yaml" "$injtmp"
	sk_check "stockade-system: the caBundle verifies the injector's certificate for its Service name" \
		openssl verify -CAfile "$injtmp/inj-ca.pem" -verify_hostname stockade-system-injector.stockade-system.svc "$injtmp/inj-leaf.pem"
	sk_check_eq "stockade-system: injector Deployment of 2, a PDB, no API token" "2 1 False" "$(python3 -c '
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
dep = [d for d in ds if d["kind"] == "Deployment"][0]
pdb = [d for d in ds if d["kind"] == "PodDisruptionBudget"][0]
print(dep["spec"]["replicas"], pdb["spec"]["minAvailable"], dep["spec"]["template"]["spec"]["automountServiceAccountToken"])' "$injtmp/inj.yaml")"
	sk_check "stockade-system: injector on 1.28 puts a classic sidecar" grep -q -- "--classic-sidecar" \
		<(sys_render --kube-version 1.28.0 --set injector.enabled=true)
	# The wrapped pods' seccomp profile: by default none named, so the injector's own default, the
	# profile every installer serves; a name the installer would never serve is refused by the schema.
	inj_seccomp() { sys_render --kube-version 1.34.0 --set injector.enabled=true "$@" 2>&1 | grep -oE -- '--(no-seccomp|seccomp-profile=[^ ]*)' | paste -sd' '; }
	sk_check_eq "stockade-system: the injector gets no profile flag by default (its default: the installer's)" "" "$(inj_seccomp)"
	sk_check_eq "stockade-system: injector.wrap.seccomp=false gives RuntimeDefault" "--no-seccomp" \
		"$(inj_seccomp --set injector.wrap.seccomp=false)"
	sk_check_eq "stockade-system: a hashed injector.wrap.seccompProfile is passed" "--seccomp-profile=stockade-0123456789abcdef.json" \
		"$(inj_seccomp --set injector.wrap.seccompProfile=stockade-0123456789abcdef.json)"
	sk_check_eq "stockade-system: the injector's sidecar settings, API secrets and sidecar-first (inject's flags)" \
		"--sidecar-first|--sidecar-settings=dns-upstream-sockets=64 peek-timeout-ms=2000|--api-secrets=gh=gh-token pypi=pypi-token" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set injector.wrap.sidecarFirst=true \
			--set injector.wrap.sidecarSettings.peek-timeout-ms=2000 --set injector.wrap.sidecarSettings.dns-upstream-sockets=64 \
			--set 'injector.wrap.apiSecrets[0].name=gh' --set 'injector.wrap.apiSecrets[0].secretName=gh-token' \
			--set 'injector.wrap.apiSecrets[1].name=pypi' --set 'injector.wrap.apiSecrets[1].secretName=pypi-token' |
			sed -n 's/^ *- \(--sidecar-first\|--sidecar-settings=.*\|--api-secrets=.*\)$/\1/p' | paste -sd'|')"
	inj_in_sidecar() { sys_render --set injector.enabled=true "$@" | sed -n 's/^ *- \(--init-in-sidecar\)$/\1/p'; }
	sk_check_eq "stockade-system: no --init-in-sidecar by default" "" "$(inj_in_sidecar --kube-version 1.34.0)"
	sk_check_eq "stockade-system: injector.wrap.initInSidecar gives the injector --init-in-sidecar (inject's flag)" \
		"--init-in-sidecar" "$(inj_in_sidecar --kube-version 1.34.0 --set injector.wrap.initInSidecar=true)"
	for bad in "--kube-version 1.28.0" "--kube-version 1.34.0 --set injector.wrap.sidecarFirst=true"; do
		# shellcheck disable=SC2086  # word-split argument list
		if out=$(sys_render $bad --set injector.enabled=true --set injector.wrap.initInSidecar=true 2>&1); then
			sk_fail "stockade-system: injector.wrap.initInSidecar refused with $bad" "it rendered"
		else
			sk_check "stockade-system: injector.wrap.initInSidecar refused with $bad, saying why (fail open)" \
				grep -q "injector.wrap.initInSidecar needs the native sidecar.*so the agent could run with no rules (fail open)" <<<"$out"
		fi
	done
	refused "stockade-system: a malformed API secret name is refused" \
		"at '/injector/wrap/apiSecrets/0/name': 'Bad' does not match pattern" \
		sys_render --kube-version 1.34.0 --set injector.enabled=true --set 'injector.wrap.apiSecrets[0].name=Bad' \
		--set 'injector.wrap.apiSecrets[0].secretName=x'
	refused "stockade-system: a profile name the installer never serves is refused" \
		"at '/injector/wrap/seccompProfile': 'stockade-agent.json' does not match pattern" \
		sys_render --kube-version 1.34.0 --set injector.enabled=true --set injector.wrap.seccompProfile=stockade-agent.json
	rm -rf "$injtmp"
}

# --- The seccomp refusal reader (seccompLog) and the installer's log flag: off by default; kmsg privileged
# with the device and the host's /proc read-only; auditd's log with no privilege and its directory; valid on
# every version; the installer's --log-denials in its arguments and so in the admission policy's.
# slog [helm args] — the seccomp-log DaemonSet's args | privileged | capabilities dropped | volumes (name:path)
slog() { sys_render --kube-version 1.34.0 "$@" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-seccomp-log"):
        s = d["spec"]["template"]["spec"]; c = s["containers"][0]; sc = c["securityContext"]
        print(" ".join(c["args"]), sc.get("privileged", False), sc.get("capabilities", {}).get("drop"),
              s["automountServiceAccountToken"], " ".join("%s:%s" % (v["name"], v["hostPath"]["path"]) for v in s["volumes"]),
              all(m.get("readOnly") for m in c["volumeMounts"]), sc["readOnlyRootFilesystem"])'; }
t_seccomp_log() {
	sk_check_eq "seccompLog: off by default" "" "$(slog)"
	sk_check_eq "seccompLog: kmsg, privileged, the device and the host's /proc read-only, no token" \
		"seccomp-log --follow --from-end --proc=/host/proc --node=\$(NODE_NAME) --source=kmsg --pods-only True None False host-proc:/proc kmsg:/dev/kmsg True True" \
		"$(slog --set seccompLog.enabled=true)"
	sk_check_eq "seccompLog: auditd's log read from its directory, no privilege, every capability dropped" \
		"seccomp-log --follow --from-end --proc=/host/proc --node=\$(NODE_NAME) --source=/host/audit/audit.log False ['ALL'] False host-proc:/proc audit:/var/log/audit True True" \
		"$(slog --set seccompLog.enabled=true --set seccompLog.source=/var/log/audit/audit.log --set seccompLog.podsOnly=false)"
	refused "seccompLog: a source neither kmsg nor a file path is refused" \
		"at '/seccompLog/source': '/var/log/audit/' does not match pattern" \
		sys_render --kube-version 1.34.0 --set seccompLog.source=/var/log/audit/
	for v in 1.29.0 1.37.0; do
		out=$(sys_render --kube-version "$v" --set seccompLog.enabled=true | conform "$v" 2>&1)
		if echo "$out" | grep -qE 'Invalid: 0, Errors: 0'; then sk_pass "seccompLog: kubeconform $v"
		else sk_fail "seccompLog: kubeconform $v" "$out"; fi
	done
	local args
	args=$(sys_render --kube-version 1.34.0 --set seccompInstaller.logDenials=true --set admissionPolicy.enabled=true | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-seccomp-installer"):
        print(d["spec"]["template"]["spec"]["containers"][0]["args"][-1])
    if d and d["kind"] == "ValidatingAdmissionPolicy":
        print([v for v in d["spec"]["variables"] if v["name"] == "installerPod"][0]["expression"].count("\"--log-denials\""))')
	sk_check_eq "seccompInstaller.logDenials: the installer's --log-denials, in the admission policy's argument list too" \
		"--log-denials 1" "$(tr '\n' ' ' <<<"$args" | sed 's/ $//')"
}

# --- the security settings of each workload kind, native and classic ---
t_security() {
	for kind in Pod Job Deployment; do
		for mode in native classic; do
			extra=(); [ "$mode" = classic ] && extra=(--set sidecar.native=false)
			if out=$(render --kube-version 1.34.0 --set workload.kind="$kind" "${extra[@]}" | helm/tests/check_pod_security.py "$kind" "$mode" 1000 1337 2>&1); then sk_pass "security settings $kind $mode"; else sk_fail "security settings $kind $mode" "$out"; fi
		done
	done
	for kind in Pod Job Deployment; do
		if out=$(render --kube-version 1.34.0 --set workload.kind="$kind" --set init.inSidecar=true | helm/tests/check_pod_security.py "$kind" insidecar 1000 1337 2>&1); then sk_pass "security settings $kind init.inSidecar"; else sk_fail "security settings $kind init.inSidecar" "$out"; fi
	done
	if out=$(render --kube-version 1.28.0 | helm/tests/check_pod_security.py Pod classic 1000 1337 2>&1); then sk_pass "auto mode picks a classic sidecar before 1.29"; else sk_fail "auto mode before 1.29" "$out"; fi
	if out=$(render --kube-version 1.29.0 | helm/tests/check_pod_security.py Pod native 1000 1337 2>&1); then sk_pass "auto mode picks a native sidecar from 1.29"; else sk_fail "auto mode from 1.29" "$out"; fi
}

# --- The agent's start gate: a postStart wait-ready hook by default, the startupProbe when asked, neither
# for a classic sidecar (a postStart there would not hold the agent). ---
t_start_gate() {
	sk_check_eq "gate: native holds the agent with postStart wait-ready, no startupProbe" \
		"wait-ready --admin-addr=127.0.0.1:15000 --timeout-ms=30000 - /readyz" "$(gate 1.34.0)"
	sk_check_eq "gate: holdAgentUntilReady=false uses the startupProbe" " startupProbe /readyz" \
		"$(gate 1.34.0 --set sidecar.holdAgentUntilReady=false)"
	sk_check_eq "gate: classic sidecar has neither" " - /readyz" "$(gate 1.28.0)"
	sk_check_eq "gate: startFirst holds the agent with postStart wait-ready, no startupProbe" \
		"wait-ready --admin-addr=127.0.0.1:15000 --timeout-ms=30000 - /readyz" \
		"$(gate 1.34.0 --set sidecar.startFirst=true)"
	sk_check_eq "gate: startFirst puts a classic sidecar first in containers, before the agent" \
		"stockade-init|stockade-sidecar agent|-" "$(render --kube-version 1.34.0 --set sidecar.startFirst=true |
		python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"):
        s = d["spec"]
        print(" ".join(c["name"] for c in s["initContainers"]), " ".join(c["name"] for c in s["containers"]),
              s["containers"][0].get("restartPolicy", "-"), sep="|")')"
	if out=$(render --kube-version 1.34.0 --set sidecar.startFirst=true --set workload.kind=Job 2>&1); then
		sk_fail "gate: startFirst refuses a Job, saying why" "it rendered"
	else
		sk_check "gate: startFirst refuses a Job, saying why" \
			grep -q "sidecar.startFirst: a Job's pod would never complete" <<<"$out"
	fi
	sk_check_eq "gate: readyTimeoutSeconds bounds wait-ready" \
		"wait-ready --admin-addr=127.0.0.1:15000 --timeout-ms=5000 - /readyz" \
		"$(gate 1.34.0 --set sidecar.readyTimeoutSeconds=5)"
}

# --- `helm template` without --kube-version: no Chart.yaml kubeVersion constraint refuses
# helm's default version any more; the sidecar's shape follows the version the render is for (said in a
# comment on the workload), and a shape that version cannot run fails naming it instead of rendering wrong.
t_kube_version() {
	local out
	if out=$("$HELM" template stockade "$CHART" --namespace default 2>&1); then
		sk_pass "stockade renders without --kube-version"
		sk_check_eq "without --kube-version: the shape follows helm's default version, said in a comment" "ok" \
			"$(python3 -c '
import re, sys, yaml
text = sys.stdin.read()
m = re.search(r"^# stockade: (native sidecar|classic sidecar) \(sidecar.native=auto\), rendered for Kubernetes v(\d+)\.(\d+)", text, re.M)
pod = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"))
native = any(c["name"] == "stockade-sidecar" for c in pod["spec"]["initContainers"])
want_native = m and (int(m.group(2)), int(m.group(3))) >= (1, 29)
print("ok" if m and native == want_native and (m.group(1) == "native sidecar") == native else "comment %r native %s" % (m and m.group(0), native))' <<<"$out")"
	else
		sk_fail "stockade renders without --kube-version" "$(head -3 <<<"$out")"
	fi
	sk_check "stockade-system renders without --kube-version" sys_render
	sk_check_eq "the comment names the version given" "# stockade: native sidecar (sidecar.native=auto), rendered for Kubernetes v1.34.0" \
		"$(render --kube-version 1.34.0 | grep '^# stockade: ')"
	sk_check_eq "1.28: a classic sidecar, said so" "# stockade: classic sidecar (sidecar.native=auto), rendered for Kubernetes v1.28.0" \
		"$(render --kube-version 1.28.0 | grep '^# stockade: ')"
	refused "sidecar.native=true refused below 1.29, naming the version and --kube-version" \
		"sidecar.native=true needs Kubernetes >= 1.29 (a native sidecar is an init container with restartPolicy: Always), and this render is for Kubernetes v1.28.0: pass the cluster's version to \`helm template --kube-version\`" \
		render --kube-version 1.28.0 --set sidecar.native=true
	sk_check "sidecar.native=true renders from 1.29" render --kube-version 1.29.0 --set sidecar.native=true
	refused "stockade-system: admissionPolicy.enabled refused below 1.29, naming the version" \
		"admissionPolicy.enabled needs Kubernetes >= 1.30 (ValidatingAdmissionPolicy v1; 1.29: v1beta1 behind its feature gate), and this render is for Kubernetes v1.28.0" \
		sys_render --kube-version 1.28.0 --set admissionPolicy.enabled=true
	sk_check_eq "stockade-system: the injector's classic sidecars say for which version" \
		"# classic sidecars: this render is for Kubernetes v1.28.0 (\`helm template\` needs --kube-version)" \
		"$(sys_render --kube-version 1.28.0 --set injector.enabled=true | grep -o '# classic sidecars: .*')"
}

# --- workload.initContainers and workload.podSecurityContext: the workload's own init
# containers come after stockade-init and after a native sidecar (the kubelet starts them once it is ready,
# so their traffic is filtered as the agent's is), hardened as the agent; the pod-level securityContext is
# the user's merged with RuntimeDefault, a weakening value refused (the bad-pod-* and bad-init-container-*
# values files of values_schema); `stockade-policy inject --check` calls the pod sandboxed.
t_workload_extras() {
	local ex=helm/tests/values/good-workload-init-containers.yaml kind mode extra out
	for kind in Pod Deployment; do
		for mode in native classic insidecar; do
			extra=(); [ "$mode" = classic ] && extra=(--set sidecar.native=false)
			[ "$mode" = insidecar ] && extra=(--set init.inSidecar=true)
			if out=$(render --kube-version 1.34.0 --set workload.kind="$kind" -f "$ex" "${extra[@]}" |
				helm/tests/check_pod_security.py "$kind" "$mode" 1000 1337 2>&1); then
				sk_pass "init containers: security settings $kind $mode"
			else sk_fail "init containers: security settings $kind $mode" "$out"; fi
		done
	done
	inits() { render --kube-version "$@" -f "$ex" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"):
        print(" ".join(c["name"] for c in d["spec"]["initContainers"]))'; }
	sk_check_eq "init containers: after stockade-init and the native sidecar" "stockade-init stockade-sidecar fetch unpack" "$(inits 1.34.0)"
	sk_check_eq "init containers: after the native sidecar whose entry is stockade-init" "stockade-sidecar fetch unpack" \
		"$(inits 1.34.0 --set init.inSidecar=true)"
	sk_check_eq "init containers: after stockade-init with a classic sidecar (before it: no egress)" "stockade-init fetch unpack" "$(inits 1.28.0)"
	sk_check_eq "init containers: their own command, mounts and extra securityContext fields kept (the trust files' added); the pod's securityContext merged" \
		'sh|work,agent-tmp,stockade-trust,work|{"type": "spc_t"}|None|{"fsGroup": 2000, "seLinuxOptions": {"level": "s0:c123,c456"}, "seccompProfile": {"type": "RuntimeDefault"}, "supplementalGroups": [3000], "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}' \
		"$(render --kube-version 1.34.0 --set workload.kind=Deployment -f "$ex" | python3 -c '
import json, sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment":
        s = d["spec"]["template"]["spec"]
        f, u = s["initContainers"][2], s["initContainers"][3]
        print(f["command"][0], ",".join(m["name"] for m in f["volumeMounts"] + u["volumeMounts"][:1]),
              json.dumps(f["securityContext"]["seLinuxOptions"]), f["securityContext"]["capabilities"].get("add"),
              json.dumps(s["securityContext"], sort_keys=True), sep="|")')"
	# a read-only root and no /tmp of its own: the pod's emptyDir agent-tmp at /tmp, as inject's give_tmp
	sk_check_eq "init containers: one without /tmp gets the emptyDir agent-tmp there, one with its own /tmp none" \
		"fetch:/tmp unpack: volume:1" \
		"$(render --kube-version 1.34.0 --set workload.kind=Deployment -f "$ex" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment":
        s = d["spec"]["template"]["spec"]
        out = ["%s:%s" % (c["name"], ",".join(m["mountPath"] for m in c["volumeMounts"] if m["name"] == "agent-tmp")) for c in s["initContainers"][2:]]
        out.append("volume:%d" % sum(1 for v in s["volumes"] if v["name"] == "agent-tmp" and v.get("emptyDir") == {}))
        print(*out)')"
	sk_check_eq "the pod's securityContext by default: RuntimeDefault alone" '{"seccompProfile": {"type": "RuntimeDefault"}}' \
		"$(render --kube-version 1.34.0 | python3 -c '
import json, sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"): print(json.dumps(d["spec"]["securityContext"]))')"
	for v in 1.29.0 1.34.0; do
		out=$(render --kube-version "$v" --set workload.kind=Deployment -f "$ex" | conform "$v" 2>&1)
		if echo "$out" | grep -qE 'Invalid: 0, Errors: 0'; then sk_pass "init containers: kubeconform $v"
		else sk_fail "init containers: kubeconform $v" "$out"; fi
	done
	if [ -x "$SK_BIN/stockade-policy" ]; then
		for mode in native classic; do
			extra=(); [ "$mode" = classic ] && extra=(--set sidecar.native=false)
			out=$(render --kube-version 1.34.0 --set workload.kind=Deployment -f "$ex" "${extra[@]}" -s templates/workload.yaml |
				"$SK_BIN/stockade-policy" inject --check --policy-configmap stockade-policy ${extra:+--classic-sidecar} -f - 2>&1)
			sk_check_eq "init containers: stockade-policy inject --check calls the $mode pod sandboxed" "0:" "$?:$out"
		done
	fi
}

# --- the values schema's good and bad files ---
t_values_schema() {
	for f in helm/tests/values/good-*.yaml; do
		sk_check "values accepted: $(basename "$f")" render --kube-version 1.34.0 -f "$f"
	done
	for f in helm/tests/values/bad-*.yaml; do
		want=$(sed -n 's/^# expect: //p' "$f" | head -1)
		out=$(render --kube-version 1.34.0 -f "$f" 2>&1)
		rc=$?
		if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out"; then sk_pass "values rejected: $(basename "$f")"
		else sk_fail "values rejected: $(basename "$f")" "rc=$rc, want '$want', got: $(head -3 <<<"$out")"; fi
	done
}

# --- The policy the chart renders must be one stockade-policy accepts.
t_rendered_policy() {
	if [ -x "$SK_BIN/stockade-policy" ]; then
		tmp=$(mktemp -d)
		render --kube-version 1.34.0 -s templates/configmap-policy.yaml |
			/usr/bin/python3 -c 'import sys,yaml; print(yaml.safe_load(sys.stdin)["data"]["policy.yaml"], end="")' >"$tmp/policy.yaml"
		sk_check "rendered policy passes stockade-policy check" "$SK_BIN/stockade-policy" check "$tmp/policy.yaml"
		rm -rf "$tmp"
	fi
}

# --- Cluster-wide pieces once per cluster: the per-workload chart renders no installer and no
# admission policy; each release publishes its seccomp section in a labelled ConfigMap whose policy.yaml
# stockade-policy accepts and whose profile name is the one the CLI computes; the agent's localhostProfile
# is that name; two different sections give two names, the same section in another order one.
# seccomp_cm OUT ARGS... — "PROFILE LOCALHOST-PROFILE" of a rendering, the section's policy.yaml into OUT
seccomp_cm() { local out=$1; shift; render --kube-version 1.34.0 --set workload.kind=Deployment "$@" | python3 -c '
import sys, yaml
cm, prof = None, None
for d in yaml.safe_load_all(sys.stdin):
    if not d: continue
    if d["kind"] == "ConfigMap" and d["metadata"].get("labels", {}).get("stockade.dev/seccomp-profile") == "true":
        cm = d
    if d["kind"] == "Deployment":
        prof = next(c for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == "agent")["securityContext"]["seccompProfile"]["localhostProfile"]
open(sys.argv[1], "w").write(cm["data"]["policy.yaml"])
print(cm["data"]["profile"], prof)' "$out"; }
t_seccomp_profiles() {
	kinds=$(render --kube-version 1.34.0 --set networkPolicy.enabled=true | python3 -c '
import sys, yaml
print(" ".join(sorted({d["kind"] for d in yaml.safe_load_all(sys.stdin) if d})))')
	case " $kinds " in *" DaemonSet "*|*" ValidatingAdmissionPolicy"*|*ClusterRole*) sk_fail "stockade: no cluster-wide object" "$kinds" ;;
	*) sk_pass "stockade: no cluster-wide object ($kinds)" ;; esac
	if [ -x "$SK_BIN/stockade-policy" ]; then
		sc=$(mktemp -d)
		for sec in "" "--set policy.spec.seccomp.deny={ptrace,getrandom}" \
			"--set policy.spec.seccomp.deny={getrandom,ptrace,getrandom}" \
			"--set policy.spec.seccomp.allow={mlock} --set policy.spec.seccomp.deny={uname}"; do
			# shellcheck disable=SC2086  # word-split argument list
			got=$(seccomp_cm "$sc/p.yaml" $sec)
			want=$("$SK_BIN/stockade-policy" seccomp --policy "$sc/p.yaml" --print-name 2>&1)
			sk_check_eq "seccomp ConfigMap and agent name the CLI's hash (${sec:-default section})" "$want $want" "$got"
			sk_check "seccomp ConfigMap's policy.yaml passes stockade-policy check (${sec:-default section})" \
				"$SK_BIN/stockade-policy" check "$sc/p.yaml"
			echo "${got%% *}" >>"$sc/names"
		done
		sk_check_eq "two sections, two names; the same section reordered, one name" 3 "$(sort -u "$sc/names" | wc -l)"
		rm -rf "$sc"
	fi
	sk_check_eq "seccomp.profileName given: no seccomp ConfigMap, the agent uses that name" "0 mine.json" \
		"$(render --kube-version 1.34.0 --set workload.kind=Deployment --set seccomp.profileName=mine.json | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
n = sum(1 for d in docs if d["kind"] == "ConfigMap" and "stockade.dev/seccomp-profile" in d["metadata"].get("labels", {}))
dep = next(d for d in docs if d["kind"] == "Deployment")
print(n, dep["spec"]["template"]["spec"]["containers"][0]["securityContext"]["seccompProfile"]["localhostProfile"])')"
}

# --- The chart as a dependency: workload.enabled=false renders no agent workload; the example
# parent chart wraps its own Deployment and CronJob through the named templates with
# (dict "root" . "values" .Values.stockade), validates, and its pods are wrapped exactly as
# `stockade-policy inject` would wrap them.
t_as_dependency() {
	agents=$(render --kube-version 1.34.0 --set workload.enabled=false | python3 -c '
import sys, yaml
print(sum(1 for d in yaml.safe_load_all(sys.stdin) if d and d["metadata"]["name"].endswith("-agent")))')
	sk_check_eq "workload.enabled=false renders no agent workload" 0 "$agents"
	EX=helm/examples/agent-platform
	sk_check "helm lint --strict example parent chart" "$HELM" lint --strict "$EX" --kube-version 1.34.0
	for v in 1.34.0 1.37.0; do
		out=$("$HELM" template plat "$EX" --namespace default --kube-version "$v" 2>/dev/null | conform "$v" 2>&1)
		if echo "$out" | grep -qE 'Valid: 5, Invalid: 0, Errors: 0'; then sk_pass "kubeconform $v example parent chart"
		else sk_fail "kubeconform $v example parent chart" "$out"; fi
	done
	ex_kinds=$("$HELM" template plat "$EX" --namespace default --kube-version 1.34.0 2>/dev/null | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] in ("Deployment", "CronJob"):
        s = d["spec"]["template"]["spec"] if d["kind"] == "Deployment" else d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        print(d["kind"], d["metadata"]["name"], ",".join(c["name"] for c in s["initContainers"]),
              s["containers"][0]["securityContext"]["seccompProfile"]["type"], s["volumes"][0]["configMap"]["name"])')
	sk_check_eq "example: the parent's own pods wrapped, no agent workload from the subchart" \
		"CronJob plat-nightly stockade-init,stockade-sidecar Localhost plat-stockade-policy
Deployment plat-worker stockade-init,stockade-sidecar Localhost plat-stockade-policy" "$(sort <<<"$ex_kinds")"
	if [ -x "$SK_BIN/stockade-policy" ]; then
		out=$("$HELM" template plat "$EX" --namespace default --kube-version 1.34.0 -s templates/worker.yaml \
			-s templates/nightly.yaml 2>/dev/null | "$SK_BIN/stockade-policy" inject --check \
			--policy-configmap plat-stockade-policy -f - 2>&1)
		sk_check_eq "example: named templates and stockade-policy inject wrap alike (inject --check)" "0:" "$?:$out"
	fi
}

# --- init.inSidecar: off by default (the init container stays); on, the native sidecar's
# entry is stockade-init, which applies the rules and execs the sidecar as its UID with the sidecar's usual
# arguments; refused where a failed entry would not hold the agent (startFirst, a classic sidecar).
# entry [helm args] — the agent pod's init container names | the sidecar's command | args | hook | run mount
entry() { render "$@" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"):
        s = d["spec"]
        c = next(c for c in s.get("initContainers", []) + s["containers"] if c["name"] == "stockade-sidecar")
        run = next(m for m in c["volumeMounts"] if m["mountPath"] == "/run/stockade")
        print(" ".join(x["name"] for x in s.get("initContainers", [])), " ".join(c.get("command", ["-"])),
              " ".join(c["args"]), " ".join(c.get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command", [])[1:]),
              "ro" if run.get("readOnly") else "rw", sep="|")'; }
t_init_in_sidecar() {
	off=$(entry --kube-version 1.34.0)
	sk_check_eq "init.inSidecar off (default): the init container, the sidecar's image entry, read-only marker dir" \
		"stockade-init stockade-sidecar|-|ro" "$(cut -d'|' -f1,2,5 <<<"$off")"
	on=$(entry --kube-version 1.34.0 --set init.inSidecar=true)
	sk_check_eq "init.inSidecar: no init container, the native sidecar's entry applies the rules and execs it as 1337" \
		"stockade-sidecar|/usr/local/bin/stockade-init --policy /etc/stockade/policy.yaml --marker /run/stockade/init.marker --seccomp-profile stockade-4696b6ca6e2d4b5e.json --exec-as 1337:1337 -- /usr/local/bin/stockade-sidecar|rw" \
		"$(cut -d'|' -f1,2,5 <<<"$on")"
	sk_check_eq "init.inSidecar: the sidecar's own arguments unchanged" "$(cut -d'|' -f3 <<<"$off")" "$(cut -d'|' -f3 <<<"$on")"
	sk_check_eq "init.inSidecar: the wait-ready hook drops to the sidecar UID first (--as)" \
		"wait-ready --admin-addr=127.0.0.1:15000 --timeout-ms=30000 --as=1337:1337" "$(cut -d'|' -f4 <<<"$on")"
	sk_check_eq "init.inSidecar follows uids.sidecar and seccomp.enabled" \
		"/usr/local/bin/stockade-init --policy /etc/stockade/policy.yaml --marker /run/stockade/init.marker --exec-as 2000:2000 -- /usr/local/bin/stockade-sidecar|wait-ready --admin-addr=127.0.0.1:15000 --timeout-ms=30000 --as=2000:2000" \
		"$(entry --kube-version 1.34.0 --set init.inSidecar=true --set uids.sidecar=2000 --set seccomp.enabled=false | cut -d'|' -f2,4)"
	sk_check_eq "init.inSidecar with the startupProbe gate (holdAgentUntilReady=false): no hook, still the entry" \
		"stockade-sidecar||rw" "$(entry --kube-version 1.34.0 --set init.inSidecar=true --set sidecar.holdAgentUntilReady=false | cut -d'|' -f1,4,5)"
	for bad in "--kube-version 1.34.0 --set sidecar.startFirst=true" "--kube-version 1.34.0 --set sidecar.native=false" \
		"--kube-version 1.28.0"; do
		# shellcheck disable=SC2086  # word-split argument list
		if out=$(render $bad --set init.inSidecar=true 2>&1); then
			sk_fail "init.inSidecar refused with $bad" "it rendered"
		else
			sk_check "init.inSidecar refused with $bad, saying why (fail open)" \
				grep -q "init.inSidecar needs the native sidecar.*so the agent could run with no rules (fail open)" <<<"$out"
		fi
	done
	ex=$("$HELM" template plat helm/examples/agent-platform --namespace default --kube-version 1.34.0 \
		--set stockade.init.inSidecar=true 2>/dev/null | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment":
        s = d["spec"]["template"]["spec"]
        print(",".join(c["name"] for c in s["initContainers"]), s["initContainers"][0]["command"][0])')
	sk_check_eq "init.inSidecar through the named templates of a parent chart" "stockade-sidecar /usr/local/bin/stockade-init" "$ex"
}

# --- drift of deploy/ and of the generated values table ---
t_drift() {
	fresh=$(mktemp -d)
	scripts/render-manifests "$fresh" >/dev/null 2>&1
	if diff -ru deploy "$fresh" >/dev/null 2>&1; then sk_pass "deploy/ matches a fresh render (make manifests)"
	else sk_fail "deploy/ drift" "run make manifests: $(diff -ru deploy "$fresh" | head -5)"; fi
	rm -rf "$fresh"
	sk_check "values table up to date (scripts/gen-values-doc)" scripts/gen-values-doc --check
}

# --- Upgrades: the pod template's checksum covers only what a new pod alone can apply (UIDs, ports, loopback,
# exempt UIDs, direct/udp cidr rules, seccomp); an egress host edit reloads live and rolls nothing; no chart
# or app version label in a pod template (each upgrade would roll every pod).
t_upgrades() {
	SK_TMP_CHART=$(mktemp -d)
	base=$(pol '[{"host": "api.github.com", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]')
	# (a direct rule's position is part of the netns hash the sidecar's reload compares, so these edits keep it)
	sk_check_eq "checksum: an egress host edit keeps the pod template (live reload)" "$base" \
		"$(pol '[{"host": "pypi.org", "ports": [443, 80]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}, {"host": "files.pythonhosted.org", "ports": [443]}]')"
	sk_check_eq "checksum: a proxied (non-direct) cidr edit keeps it too" "$base" \
		"$(pol '[{"cidr": "203.0.113.0/24", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]')"
	for change in "direct rule ports" "direct rule position" "agent uid" "loopback" "seccomp"; do
		case $change in
		"direct rule ports") new=$(pol '[{"host": "api.github.com", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8126], "protocol": "udp", "direct": true}]') ;;
		"direct rule position") new=$(pol '[{"host": "api.github.com", "ports": [443]}, {"host": "pypi.org", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]') ;;
		"agent uid") new=$(pol '[{"host": "api.github.com", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]' --set uids.agent=2000) ;;
		loopback) new=$(pol '[{"host": "api.github.com", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]' --set policy.spec.loopback=deny) ;;
		seccomp) new=$(pol '[{"host": "api.github.com", "ports": [443]}, {"cidr": "10.96.0.0/12", "ports": [8125], "protocol": "udp", "direct": true}]' --set 'policy.spec.seccomp.deny[0]=ptrace') ;;
		esac
		if [ -n "$new" ] && [ "$new" != "$base" ]; then sk_pass "checksum: a $change change rolls the pods"
		else sk_fail "checksum: a $change change rolls the pods" "base $base new $new"; fi
	done
	rm -rf "$SK_TMP_CHART"
	labels=$({ render --kube-version 1.34.0 --set workload.kind=Deployment; echo ---; sys_render --kube-version 1.34.0; } | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] in ("Deployment", "DaemonSet"): print(" ".join(sorted(d["spec"]["template"]["metadata"]["labels"])))')
	case $labels in *helm.sh/chart*|*app.kubernetes.io/version*) sk_fail "pod templates carry no chart or app version label" "$labels" ;;
	*) sk_pass "pod templates carry no chart or app version label" ;; esac
}

# --- Standard chart settings (helm/tests/standard-settings.yaml sets every one): each lands where Kubernetes
# reads it, the sandbox's own securityContext fields win over agent.securityContext, a digest pins the image,
# and the manifests stay valid.
t_standard_settings() {
	std=helm/tests/standard-settings.yaml
	if out=$(render --kube-version 1.34.0 -f "$std" --set podMonitor.enabled=false | conform 1.34.0 2>&1) &&
		echo "$out" | grep -qE 'Invalid: 0, Errors: 0'; then sk_pass "kubeconform with every standard setting"
	else sk_fail "kubeconform with every standard setting" "$out"; fi
	if out=$(render --kube-version 1.34.0 -f "$std" --api-versions monitoring.coreos.com/v1 | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
ps = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
want = {"imagePullSecrets": [{"name": "regcred"}], "nodeSelector": {"pool": "agents"}, "serviceAccountName": "agent-sa",
        "runtimeClassName": "gvisor", "priorityClassName": "agents", "automountServiceAccountToken": False}
bad = [k for k, v in want.items() if ps.get(k) != v]
bad += [k for k in ("tolerations", "affinity") if not ps.get(k)]
ag = next(c for c in ps["containers"] if c["name"] == "agent")
bad += [k for k in ("envFrom", "ports", "livenessProbe", "readinessProbe", "startupProbe") if not ag.get(k)]
sc = ag["securityContext"]
if sc.get("seLinuxOptions") != {"type": "spc_t"}: bad.append("seLinuxOptions not passed")
if (sc["runAsUser"], sc["readOnlyRootFilesystem"], sc["capabilities"], "privileged" in sc) != (1000, True, {"drop": ["ALL"]}, False):
    bad.append("agent.securityContext overrode the sandbox: %r" % sc)
side = next(c for c in ps["initContainers"] + ps["containers"] if c["name"] == "stockade-sidecar")
if not side["image"].endswith("stockade-sidecar@sha256:" + "0123456789abcdef" * 4): bad.append("digest: " + side["image"])
if {"name": "STOCKADE_PEEK_TIMEOUT_MS", "value": "2000"} not in side["env"]: bad.append("sidecar.extraEnv")
tp = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"].endswith("-test-policy"))["spec"]
for k in ("imagePullSecrets", "nodeSelector", "tolerations"):
    if not ps.get(k) or tp.get(k) != ps.get(k): bad.append("helm test pod %s: %r" % (k, tp.get(k)))
pm = [d for d in docs if d["kind"] == "PodMonitor"]
if not pm or pm[0]["spec"]["podMetricsEndpoints"][0]["port"] != "admin" or pm[0]["metadata"]["labels"].get("release") != "prom":
    bad.append("PodMonitor")
print(", ".join(bad)); sys.exit(1 if bad else 0)' 2>&1); then sk_pass "standard settings land where Kubernetes reads them; the sandbox's fields win"
	else sk_fail "standard settings land where Kubernetes reads them; the sandbox's fields win" "$out"; fi
	sk_check_eq "the helm test pod is pulled and scheduled like the agent's (imagePullSecrets, nodeSelector, tolerations)" \
		'[{"name": "regcred"}] {"pool": "agents"} [{"effect": "NoSchedule", "key": "agents", "operator": "Exists"}]' \
		"$(render --kube-version 1.34.0 -f "$std" | python3 -c '
import json, sys, yaml
t = next(d for d in yaml.safe_load_all(sys.stdin) if d and d["metadata"]["name"].endswith("-test-policy"))["spec"]
print(*(json.dumps(t.get(k), sort_keys=True) for k in ("imagePullSecrets", "nodeSelector", "tolerations")))')"
	sk_check_eq "the helm test pod without them by default" "null null null" "$(render --kube-version 1.34.0 | python3 -c '
import json, sys, yaml
t = next(d for d in yaml.safe_load_all(sys.stdin) if d and d["metadata"]["name"].endswith("-test-policy"))["spec"]
print(*(json.dumps(t.get(k)) for k in ("imagePullSecrets", "nodeSelector", "tolerations")))')"
	refused "a malformed digest is refused by the schema" "at '/images/init/digest': 'sha256:abc' does not match pattern" \
		render --kube-version 1.34.0 --set images.init.digest=sha256:abc
}

# --- Observability: the PodMonitors and the PrometheusRule render only where the cluster
# serves monitoring.coreos.com/v1, so an install without the Prometheus Operator's CRDs does not fail; with
# it, every metric the alerts and the dashboard name is one docs/metrics.md lists, each alert has a summary,
# a description and a runbook_url whose anchor is a docs/troubleshooting.md heading.
t_monitoring() {
	local mon=(--set monitoring.podMonitor.enabled=true --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true)
	if out=$({ sys_render --kube-version 1.34.0 "${mon[@]}" --api-versions monitoring.coreos.com/v1; echo ---;
		render --kube-version 1.34.0 --set podMonitor.enabled=true --api-versions monitoring.coreos.com/v1; } | python3 -c '
import json, re, sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
known = set(re.findall(r"^\| \x60([a-z_]+)\x60 \|", open("docs/metrics.md").read(), re.M))
anchors = set()
for h in re.findall(r"^#+ (.+)", open("docs/troubleshooting.md").read(), re.M):
    anchors.add(re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-"))
bad = []
kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
pms = [d for d in docs if d["kind"] == "PodMonitor"]
if len(pms) != 2: bad.append("want 2 PodMonitors (system and release): %r" % kinds)
for pm in pms:
    ep = pm["spec"]["podMetricsEndpoints"][0]
    if (ep["port"], ep["path"]) != ("admin", "/metrics") or pm["spec"]["selector"]["matchLabels"].get("stockade.io/wrapped") != "true":
        bad.append("PodMonitor %s: %r" % (pm["metadata"]["name"], pm["spec"]))
sysm = [p for p in pms if p["metadata"]["name"].endswith("-sidecars")]
if not sysm or sysm[0]["spec"].get("namespaceSelector") != {"any": True}: bad.append("system PodMonitor selects every namespace")
def metrics(expr):
    names = set(re.findall(r"\b((?:stockade|process)_[a-z_]+)", expr))
    return {re.sub(r"_(bucket|sum|count)\Z", "", n) if re.sub(r"_(bucket|sum|count)\Z", "", n) in known else n for n in names}
rules = [d for d in docs if d["kind"] == "PrometheusRule"]
alerts = {r["alert"]: r for d in rules for g in d["spec"]["groups"] for r in g["rules"]}
want = {"StockadeSidecarNotReady", "StockadePolicyReloadFailed", "StockadeDenialRateHigh", "StockadeBudgetExhausted"}
if set(alerts) != want: bad.append("alerts %r" % sorted(alerts))
if "stockade_policy_reloads_total{result=\"failed\"}" not in alerts.get("StockadePolicyReloadFailed", {}).get("expr", ""): bad.append("reload alert does not read result=failed")
used = set()
for name, r in alerts.items():
    ms = metrics(r["expr"]); used |= ms
    if not ms: bad.append(name + ": no metric")
    a = r.get("annotations", {})
    if not a.get("summary") or not a.get("description"): bad.append(name + ": summary/description")
    url = a.get("runbook_url", "")
    if "/docs/troubleshooting.md#" not in url or url.split("#")[1] not in anchors: bad.append(name + ": runbook " + url)
cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
if len(cms) != 1: bad.append("one dashboard ConfigMap labelled grafana_dashboard=1")
else:
    dash = json.loads(next(iter(cms[0]["data"].values())))
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    for e in exprs:
        ms = metrics(e); used |= ms
        if not ms: bad.append("dashboard panel without a metric: " + e)
    for m in ("stockade_connections_total", "stockade_dns_queries_total", "stockade_budget_used", "stockade_policy_reloads_total",
              "process_cpu_seconds_total", "process_resident_memory_bytes"):
        if not any(m in e for e in exprs): bad.append("dashboard lacks " + m)
unknown = sorted(used - known)
if unknown: bad.append("metrics not in docs/metrics.md: %r" % unknown)
print("; ".join(bad) or "%d alerts, %d metrics" % (len(alerts), len(used))); sys.exit(1 if bad else 0)' 2>&1); then
		sk_pass "with monitoring.coreos.com/v1: PodMonitors, alerts and dashboard render with documented metrics and runbooks ($out)"
	else sk_fail "with monitoring.coreos.com/v1: PodMonitors, alerts and dashboard render with documented metrics and runbooks" "$out"; fi
	if out=$({ sys_render --kube-version 1.34.0 "${mon[@]}" && echo --- && render --kube-version 1.34.0 --set podMonitor.enabled=true; } 2>&1) &&
		! echo "$out" | grep -qE '^kind: (PodMonitor|PrometheusRule)$'; then
		sk_pass "without monitoring.coreos.com/v1 the render succeeds with no PodMonitor or PrometheusRule"
	else sk_fail "without monitoring.coreos.com/v1 the render succeeds with no PodMonitor or PrometheusRule" "$(echo "$out" | grep -E '^kind:|rror' | head -20)"; fi
	if out=$(sys_render --kube-version 1.34.0 "${mon[@]}" --api-versions monitoring.coreos.com/v1 --set monitoring.podMonitor.enabled=false \
		--set monitoring.prometheusRule.enabled=false --set monitoring.dashboard.enabled=false 2>&1) &&
		! echo "$out" | grep -qE '^kind: (PodMonitor|PrometheusRule)$|grafana_dashboard'; then
		sk_pass "monitoring values off: no PodMonitor, PrometheusRule or dashboard even with the CRDs"
	else sk_fail "monitoring values off: no PodMonitor, PrometheusRule or dashboard even with the CRDs" "$out"; fi
}

# --- nameOverride and fullnameOverride (both charts, the usual semantics): fullnameOverride is the base of
# every object's name, nameOverride replaces the chart name in names and in the app.kubernetes.io/name label
# (selectors included), and a name the schema's DNS-label pattern refuses fails the render.
t_name_overrides() {
	local all=(--kube-version 1.34.0 --set workload.kind=Deployment --set networkPolicy.enabled=true)
	local sys=(--kube-version 1.34.0 --set admissionPolicy.enabled=true --set injector.enabled=true)
	local chk='
import sys, yaml
prefix, name = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
bad = []
def walk(o, at):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "app.kubernetes.io/name" and v != name: bad.append("%s: %s" % (at, v))
            walk(v, at + "." + str(k))
    elif isinstance(o, list):
        for i, v in enumerate(o): walk(v, "%s[%d]" % (at, i))
for d in docs:
    n = d["metadata"]["name"]
    if not n.startswith(prefix): bad.append("%s %s" % (d["kind"], n))
    walk(d, d["kind"])
print("; ".join(bad) or "%d objects" % len(docs)); sys.exit(1 if bad else 0)'
	local c what
	for c in "render;stockade" "sys_render;stockade-system"; do
		local r=${c%%;*} chart=${c#*;} args=("${all[@]}")
		[ "$r" = sys_render ] && args=("${sys[@]}")
		what="$chart: fullnameOverride names every object, nameOverride the name label"
		if out=$($r "${args[@]}" --set fullnameOverride=box --set nameOverride=agentbox | python3 -c "$chk" box- agentbox 2>&1); then
			sk_pass "$what ($out)"
		else sk_fail "$what" "$out"; fi
		what="$chart: nameOverride gives <release>-<name>"
		if out=$($r "${args[@]}" --set nameOverride=agentbox | python3 -c "$chk" "$([ "$r" = render ] && echo stockade || echo stockade-system)-agentbox-" agentbox 2>&1); then
			sk_pass "$what ($out)"
		else sk_fail "$what" "$out"; fi
		refused "$chart: a fullnameOverride that is no DNS label is refused" "/fullnameOverride" "$r" "${args[@]}" --set fullnameOverride=Bad_Name
	done
}

# --- Chart metadata: both charts name the project's real home and sources (no placeholder), in the
# `home: URL` line scripts/oci-labels reads for the images' source and url labels.
t_chart_metadata() {
	local c out
	for c in "$CHART" "$SYS"; do
		if out=$("$HELM" show chart "$c" | python3 -c '
import sys, yaml
m = yaml.safe_load(sys.stdin)
want = "https://github.com/stockade-dev/stockade"
bad = [k for k, v in (("home", m.get("home")), ("sources", m.get("sources"))) if v not in (want, [want])]
print(", ".join(bad)); sys.exit(1 if bad else 0)' 2>&1) && [ "$(sed -n 's/^home: *//p' "$c/Chart.yaml")" = https://github.com/stockade-dev/stockade ]; then
			sk_pass "$c: home and sources are the project's repository, home on its own line"
		else sk_fail "$c: home and sources are the project's repository, home on its own line" "$out"; fi
	done
}

# --- Governance: guardrails from values into the injector, a canary revision's selectors, one
# namespace label binding the admission policy too.
t_governance() {
	local g
	g=$(mktemp -d)
	sys_render --kube-version 1.34.0 --set injector.enabled=true \
		--set-json 'guardrails={"deniedHosts":["pastebin.com"],"blockPrivate":true,"maxBudget":{"sent":"1Gi","window":"1h"}}' >"$g/r.yaml"
	python3 -c '
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cm = [d for d in ds if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-injector-guardrails")][0]
open(sys.argv[2], "w").write(cm["data"]["guardrails.yaml"])
dep = [d for d in ds if d["kind"] == "Deployment"][0]
t = dep["spec"]["template"]
c = t["spec"]["containers"][0]
print([a for a in c["args"] if a.startswith("--guardrails")][0],
      [m["mountPath"] for m in c["volumeMounts"] if m["name"] == "guardrails"][0],
      [v["configMap"]["name"] for v in t["spec"]["volumes"] if v["name"] == "guardrails"][0],
      "checksum/guardrails" in t["metadata"].get("annotations", {}))' "$g/r.yaml" "$g/guardrails.yaml" >"$g/out" 2>&1
	sk_check_eq "guardrails: the injector reads them from the ConfigMap the values render, rolled on change" \
		"--guardrails=/etc/stockade-injector/guardrails/guardrails.yaml /etc/stockade-injector/guardrails stockade-system-injector-guardrails True" \
		"$(cat "$g/out")"
	sk_check "guardrails: the rendered file is valid guardrails (version 1 added) and agent.yaml within them but for budgets" \
		bash -c "'$SK_BIN/stockade-policy' check --guardrails '$g/guardrails.yaml' policy/examples/agent.yaml 2>&1 | grep -q 'exceeds guardrail $g/guardrails.yaml:[0-9]*:[0-9]* maxBudget'"
	sk_check_eq "guardrails: none by default (no ConfigMap, no flag)" "0" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true | grep -c -- 'guardrails' )"
	refused "guardrails: an unknown key is refused by the schema" "additional properties 'deniedHost' not allowed" \
		sys_render --kube-version 1.34.0 --set injector.enabled=true --set-json 'guardrails={"deniedHost":["a"]}'
	# a canary revision: only namespaces and pods labelled stockade.io/rev=canary, its own policy review
	sk_check_eq "revision canary: webhooks select stockade.io/rev=canary" \
		"namespace rev:In[canary] obj:- /mutate|pod rev:NotIn[canary] obj:In[canary] /mutate|baseline rev:In[canary] obj:- /mutate/pod-security/baseline|restricted rev:In[canary] obj:- /mutate/pod-security/restricted|policy rev:In[canary] obj:- /validate-policy|" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set revision=canary | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for w in d["webhooks"]:
            e = {x["key"]: x for x in w["namespaceSelector"]["matchExpressions"]}
            o = {x["key"]: x for x in w.get("objectSelector", {}).get("matchExpressions", [])}
            assert "stockade.io/inject" not in e, w["name"]
            r = e["stockade.io/rev"]
            print(w["name"].split(".")[0], "rev:%s%s" % (r["operator"], "[%s]" % ",".join(r["values"])),
                  "obj:" + ("%s[%s]" % (o["stockade.io/rev"]["operator"], ",".join(o["stockade.io/rev"]["values"])) if o else "-"),
                  w["clientConfig"]["service"]["path"], end="|")')"
	refused "revision: not a DNS label refused" "at '/revision': 'Canary_1' does not match pattern" \
		sys_render --kube-version 1.34.0 --set injector.enabled=true --set revision=Canary_1
	# one namespace label: the admission policy is bound where the injector wraps, unless told not to
	sk_check_eq "admissionPolicy.bindInjected: bindings for the enforce label, the inject label and any revision" \
		"stockade.io/enforce=true stockade.io/inject:In[enabled] stockade.io/rev:Exists" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set admissionPolicy.enabled=true | python3 -c '
import sys, yaml
out = []
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "ValidatingAdmissionPolicyBinding":
        s = d["spec"]["matchResources"]["namespaceSelector"]
        for k, v in s.get("matchLabels", {}).items(): out.append("%s=%s" % (k, v))
        for x in s.get("matchExpressions", []): out.append("%s:%s%s" % (x["key"], x["operator"], "[%s]" % ",".join(x["values"]) if "values" in x else ""))
print(" ".join(out))')"
	sk_check_eq "admissionPolicy.bindInjected=false: the enforce label's binding only" "1" \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set admissionPolicy.enabled=true \
			--set admissionPolicy.bindInjected=false | grep -c '^kind: ValidatingAdmissionPolicyBinding')"
	rm -rf "$g"
}

# restricted [helm args] — every agent pod the chart renders, judged by Pod Security "restricted" (the
# checks of k8s.io/pod-security-admission's restricted level that a pod spec can fail): one line per pod,
# "NAME ok" or "NAME <what fails>".
restricted() { render --kube-version 1.34.0 "$@" | python3 -c '
import sys, yaml
OK_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
for d in yaml.safe_load_all(sys.stdin):
    if not d or d["kind"] not in ("Pod", "Deployment", "Job") or not d["metadata"]["name"].endswith("-agent"):
        continue
    s = d["spec"] if d["kind"] == "Pod" else d["spec"]["template"]["spec"]
    psc, bad = s.get("securityContext") or {}, []
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if s.get(k): bad.append(k)
    for v in s.get("volumes", []):
        if not set(v) - {"name"} <= OK_VOLUMES: bad.append("volume " + v["name"])
    for c in s.get("initContainers", []) + s["containers"]:
        sc, n = c.get("securityContext") or {}, c["name"]
        caps = sc.get("capabilities") or {}
        if sc.get("privileged"): bad.append(n + " privileged")
        if sc.get("allowPrivilegeEscalation") is not False: bad.append(n + " allowPrivilegeEscalation")
        if "ALL" not in (caps.get("drop") or []): bad.append(n + " drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}: bad.append(n + " adds " + ",".join(caps["add"]))
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")): bad.append(n + " runAsNonRoot")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0: bad.append(n + " runAsUser 0")
        if (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(n + " seccompProfile")
        if any(p.get("hostPort") for p in c.get("ports", [])): bad.append(n + " hostPort")
    print(d["kind"], " ".join(bad) or "ok")'; }

# CNI mode: no NET_ADMIN container, the validator first as the agent UID, the policy annotation the node's
# plugin reads (the ConfigMap's policy, so both hash alike), and Pod Security "restricted" passes for every
# workload kind, where the default (stockade-init's NET_ADMIN) fails it: the check can fail.
t_cni() {
	local k
	for k in Pod Deployment Job; do
		sk_check_eq "cni.enabled, $k: Pod Security restricted passes" "$k ok" "$(restricted --set cni.enabled=true --set workload.kind=$k)"
	done
	sk_check_eq "default (stockade-init): restricted fails on its NET_ADMIN and root" \
		"Pod stockade-init adds NET_ADMIN stockade-init runAsNonRoot stockade-init runAsUser 0" "$(restricted)"
	sk_check_eq "init.inSidecar: restricted fails too" \
		"Pod stockade-sidecar adds NET_ADMIN,SETUID,SETGID,SETPCAP stockade-sidecar runAsNonRoot stockade-sidecar runAsUser 0" \
		"$(restricted --set init.inSidecar=true)"
	local got
	got=$(render --kube-version 1.34.0 --set cni.enabled=true --set cni.validateTimeoutMs=1500 --set uids.agent=4242 | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
pod = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"))
cm = next(d for d in docs if d["kind"] == "ConfigMap" and "policy.yaml" in d.get("data", {}))
s = pod["spec"]; v = s["initContainers"][0]
print(v["name"], " ".join(v["command"]), v["securityContext"]["runAsUser"], v["image"].split(":")[0],
      pod["metadata"]["labels"]["stockade.io/wrapped"],
      pod["metadata"]["annotations"]["stockade.io/netns-policy"] == cm["data"]["policy.yaml"],
      [c["name"] for c in s["initContainers"]])')
	sk_check_eq "cni.enabled: stockade-validate first, as the agent UID, the sidecar image; the annotation is the ConfigMap's policy" \
		"stockade-validate /usr/local/bin/stockade-sidecar validate --policy /etc/stockade/policy.yaml --marker /run/stockade/init.marker --timeout-ms 1500 4242 localhost/stockade-sidecar true True ['stockade-validate', 'stockade-sidecar']" "$got"
	sk_check_eq "cni.enabled, Deployment: the pod template carries the annotation" "True" \
		"$(render --kube-version 1.34.0 --set cni.enabled=true --set workload.kind=Deployment | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment": print("stockade.io/netns-policy" in d["spec"]["template"]["metadata"]["annotations"])')"
	sk_check_eq "cni off: no annotation" "False" "$(render --kube-version 1.34.0 | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"): print("stockade.io/netns-policy" in (d["metadata"].get("annotations") or {}))')"
	refused "cni.enabled with init.inSidecar is refused" "cni.enabled and init.inSidecar" \
		render --kube-version 1.34.0 --set cni.enabled=true --set init.inSidecar=true
	refused "cni.enabled with policy.existingConfigMap is refused" "cni.enabled needs the chart's own policy" \
		render --kube-version 1.34.0 --set cni.enabled=true --set policy.existingConfigMap=mine --set seccomp.enabled=false
	# stockade-system: the installer DaemonSet
	sk_check "stockade-system cni.enabled: every object passes the 1.34 schemas" \
		bash -c "$(declare -f sys_render conform); HELM=$HELM KUBECONFORM=$KUBECONFORM SCHEMAS=$SCHEMAS SYS=$SYS; sys_render --set cni.enabled=true | conform 1.34.0"
	got=$(sys_render --set cni.enabled=true --set cni.apiServer=https://10.0.0.1:6443 | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
ds = next(d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-cni"))
role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("-cni"))
c = ds["spec"]["template"]["spec"]["containers"][0]
print(ds["metadata"]["namespace"], " ".join(c["args"]), c["securityContext"]["capabilities"],
      sorted(v["hostPath"]["path"] for v in ds["spec"]["template"]["spec"]["volumes"]), role["rules"])')
	sk_check_eq "stockade-system cni.enabled: the installer's arguments, no capability, three hostPaths, RBAC get pods and configmaps only" \
		"stockade-system install --host-root=/host --conf-dir=/etc/cni/net.d --bin-dir=/opt/cni/bin --kubeconfig=/var/lib/stockade/cni.kubeconfig --binary=/usr/local/bin/stockade-cni --system-namespace=stockade-system --refresh-seconds=60 --server=https://10.0.0.1:6443 {'drop': ['ALL']} ['/etc/cni/net.d', '/opt/cni/bin', '/var/lib/stockade'] [{'apiGroups': [''], 'resources': ['pods', 'configmaps'], 'verbs': ['get']}]" "$got"
	sk_check_eq "stockade-system: no CNI installer by default" "" "$(sys_render | grep -- '-cni$')"
	refused "stockade-system: a kubeconfig inside the CNI conf dir is refused" "is inside cni.confDir" \
		sys_render --set cni.enabled=true --set cni.kubeconfigPath=/etc/cni/net.d/stockade/kc
	sk_check_eq "stockade-system injector.wrap.cni: the injector gets --cni" 1 \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true --set injector.wrap.cni=true | grep -c -- '- --cni$')"
	sk_check_eq "stockade-system: no --cni by default" 0 \
		"$(sys_render --kube-version 1.34.0 --set injector.enabled=true | grep -c -- '- --cni$')"
	refused "stockade-system injector.wrap.cni with initInSidecar is refused" "injector.wrap.cni and injector.wrap.initInSidecar" \
		sys_render --kube-version 1.34.0 --set injector.enabled=true --set injector.wrap.cni=true --set injector.wrap.initInSidecar=true
}


# --- The trust files and credentials: the sidecar writes the trust files (--trust-dir) on
# an in-memory emptyDir the agent mounts read-only, the agent gets the trust variables it does not set
# itself and the placeholders of agent.secretEnv, the Secrets of sidecar.apiSecrets are mounted into the
# sidecar and no other container; the same with no --kube-version (a classic sidecar) and in a Job;
# trust.enabled=false leaves none of it.
# trust_shape [helm args] — per container: Secret mounts, trust mount, SSL_CERT_FILE, GITHUB_TOKEN, NPM_TOKEN,
# --trust-dir
trust_shape() { render "$@" -f helm/tests/values/good-trust-secrets.yaml | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] in ("Pod", "Job") and d["metadata"]["name"].endswith("-agent"):
        s = d["spec"] if d["kind"] == "Pod" else d["spec"]["template"]["spec"]
        out = []
        for c in s.get("initContainers", []) + s["containers"]:
            m = {v["name"]: v for v in c.get("volumeMounts", [])}
            e = [(v["name"], v.get("value")) for v in c.get("env", [])]
            env = dict(e)
            sec = ",".join(sorted(n + (":ro" if v.get("readOnly") else ":rw") for n, v in m.items() if n.startswith("stockade-secret-"))) or "-"
            t = m.get("stockade-trust")
            trust = "-" if not t else t["mountPath"] + (":ro" if t.get("readOnly") else ":rw") + (":subPath" if "subPath" in t else "")
            n_ssl = sum(1 for k, _ in e if k == "SSL_CERT_FILE")
            out.append("%s %s %s %s%s %s %s %s" % (c["name"], sec, trust, env.get("SSL_CERT_FILE", "-"),
                       "" if n_ssl < 2 else "(twice)", env.get("GITHUB_TOKEN", "-"), env.get("NPM_TOKEN", "-"),
                       " ".join(a for a in c.get("args", []) if a.startswith("--trust-dir")) or "-"))
        print(" | ".join(out))'; }
t_trust_and_secrets() {
	local side="stockade-sidecar stockade-secret-github:ro,stockade-secret-npm:ro /run/stockade-trust:rw - - - --trust-dir=/run/stockade-trust"
	local agent="agent - /run/stockade-trust:ro /etc/ssl/mine.pem stockade-secret-github npm-placeholder-0123456789 -"
	sk_check_eq "native: the Secrets in the sidecar alone, the trust files read-only and the placeholders in the agent (its own SSL_CERT_FILE kept)" \
		"stockade-init - - - - - - | $side | $agent" "$(trust_shape --kube-version 1.34.0)"
	sk_check_eq "no --kube-version (classic sidecar): the same" "stockade-init - - - - - - | $agent | $side" "$(trust_shape)"
	sk_check_eq "a Job: the same" "stockade-init - - - - - - | $side | $agent" "$(trust_shape --kube-version 1.34.0 --set workload.kind=Job)"
	local env
	env=$(render --kube-version 1.34.0 | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Pod" and d["metadata"]["name"].endswith("-agent"):
        print(" ".join("%s=%s" % (e["name"], e["value"]) for e in d["spec"]["containers"][0]["env"]))')
	sk_check_eq "the trust variables, after the agent's own" \
		"HOME=/home/agent SSL_CERT_FILE=/run/stockade-trust/bundle.pem REQUESTS_CA_BUNDLE=/run/stockade-trust/bundle.pem CURL_CA_BUNDLE=/run/stockade-trust/bundle.pem GIT_SSL_CAINFO=/run/stockade-trust/bundle.pem PIP_CERT=/run/stockade-trust/bundle.pem AWS_CA_BUNDLE=/run/stockade-trust/bundle.pem NODE_EXTRA_CA_CERTS=/run/stockade-trust/ca.pem JAVA_TOOL_OPTIONS=-Djavax.net.ssl.trustStore=/run/stockade-trust/truststore.p12 -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit" \
		"$env"
	sk_check_eq "trust.enabled=false: no trust files anywhere" "0" \
		"$(render --kube-version 1.34.0 --set trust.enabled=false | grep -c 'stockade-trust\|SSL_CERT_FILE\|JAVA_TOOL_OPTIONS')"
	local out
	out=$(render --kube-version 1.34.0 -f helm/tests/values/good-trust-secrets.yaml | conform 1.34.0 2>&1)
	if grep -qE 'Invalid: 0, Errors: 0' <<<"$out"; then sk_pass "kubeconform 1.34 with trust files and secrets"
	else sk_fail "kubeconform 1.34 with trust files and secrets" "$out"; fi
}

SK_CASES=(lint kubeconform system_chart seccomp_log governance security start_gate init_in_sidecar cni kube_version workload_extras values_schema rendered_policy seccomp_profiles as_dependency drift upgrades standard_settings monitoring name_overrides chart_metadata trust_and_secrets)

sk_main "$@"
