#!/usr/bin/env bash
# e2e/inject.test.sh — `stockade-policy inject`: the pod spec it writes around an agent
# container is the one the chart renders around the same container (helm template, compared with keys
# sorted, lists in order), in native, classic, sidecar-first, init-in-sidecar, startupProbe, no-seccomp and
# other-UID modes and for Pod, Job and Deployment; every workload kind it writes passes kubeconform;
# refusals, --check (and switching shape), --policy, Lists, JSON and pass-through. Needs helm, kubeconform
# and the schemas (scripts/install-tools); no root.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
P="$SK_BIN/stockade-policy"
T=${SK_TOOLS:-/opt/stockade-tools}
HELM=$T/bin/helm KUBECONFORM=$T/bin/kubeconform
schema_dirs=("$T"/schemas/*/kubernetes-json-schema)
SCHEMAS=""; [ -d "${schema_dirs[-1]}" ] && SCHEMAS=${schema_dirs[-1]}

run() { out=$("$@" 2>"$SK_TMP/err"); rc=$?; err=$(cat "$SK_TMP/err"); }

# podspec KIND — reads manifests on stdin, prints the pod spec of the first KIND as JSON, keys sorted.
podspec() {
	python3 -c '
import sys, json, yaml
kind = sys.argv[1]
for d in yaml.safe_load_all(sys.stdin):
    if d and d.get("kind") == kind:
        s = d["spec"] if kind == "Pod" else d["spec"]["template"]["spec"]
        print(json.dumps(s, sort_keys=True, indent=1))
        break' "$1"
}

# app_pod KIND [AGENT_UID] — the workload an application would write: the chart's default agent container
# (values.yaml agent.*) and the pod fields the chart sets from workload.*, nothing of stockade's; APP_INIT
# (flow YAML) its own initContainers, APP_PSC its pod securityContext (the chart's workload.initContainers,
# workload.podSecurityContext).
app_pod() {
	local kind=$1 head
	case $kind in
	Pod) head='apiVersion: v1
kind: Pod
metadata: {name: app}
spec:' ;;
	Job) head='apiVersion: batch/v1
kind: Job
metadata: {name: app}
spec:
  template:
    spec:' ;;
	Deployment) head='apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec:' ;;
	esac
	local ind="  "; [ "$kind" = Pod ] || ind="      "
	echo "$head"
	sed "s/^/$ind/" <<EOF
$( [ "$kind" = Deployment ] || echo "restartPolicy: Never")
terminationGracePeriodSeconds: 30
$( [ -z "${APP_PSC:-}" ] || echo "securityContext: $APP_PSC")
$( [ -z "${APP_INIT:-}" ] || echo "initContainers: $APP_INIT")
containers:
  - name: agent
    image: localhost/stockade-e2e-agent:latest
    imagePullPolicy: IfNotPresent
    command: [sleep, infinity]
    env:
      - {name: HOME, value: /home/agent}
    volumeMounts:
      - {name: agent-writable-0, mountPath: /tmp}
      - {name: agent-writable-1, mountPath: /home/agent}
volumes:
  - {name: agent-writable-0, emptyDir: {}}
  - {name: agent-writable-1, emptyDir: {}}
EOF
}

# same NAME KIND "HELM ARGS" "INJECT ARGS" — the chart's pod spec equals inject's for the same agent.
same() {
	local name=$1 kind=$2 hargs=$3 iargs=$4
	# shellcheck disable=SC2086  # word-split argument lists
	"$HELM" template stockade helm/stockade --namespace default --kube-version 1.34.0 \
		--set workload.kind="$kind" $hargs | podspec "$kind" >"$SK_TMP/chart.json"
	# shellcheck disable=SC2086
	app_pod "$kind" | "$P" inject -f - $iargs | podspec "$kind" >"$SK_TMP/inject.json"
	if [ -s "$SK_TMP/chart.json" ] && diff -u "$SK_TMP/chart.json" "$SK_TMP/inject.json" >"$SK_TMP/diff"; then
		sk_pass "same pod as the chart: $name"
	else
		sk_fail "same pod as the chart: $name" "$(head -40 "$SK_TMP/diff")"
	fi
}
# wrap_kinds — inject over kinds.yaml (run's out/rc), the output in kinds.out.yaml.
wrap_kinds() { run "$P" inject -f "$SK_TMP/kinds.yaml"; printf '%s\n' "$out" >"$SK_TMP/kinds.out.yaml"; }

setup() {
	sk_tmp skinject
	if [ ! -x "$HELM" ] || [ ! -x "$KUBECONFORM" ] || [ -z "$SCHEMAS" ]; then
		echo "helm/kubeconform/schemas missing: run scripts/install-tools" >&2
		sk_fail "tools installed"; sk_summary; exit 1
	fi
	# the workloads the cases wrap: every kind (as kubectl would receive it), a Job, a Pod running as root
	cat >"$SK_TMP/kinds.yaml" <<'EOF'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  serviceName: s
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec: {containers: [{name: app, image: busybox}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: app, image: busybox}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: r}
spec:
  selector: {matchLabels: {app: r}}
  template:
    metadata: {labels: {app: r}}
    spec: {containers: [{name: app, image: busybox}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          initContainers: [{name: setup, image: busybox, securityContext: {runAsUser: 1000}}]
          containers: [{name: app, image: busybox}]
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec:
  ports: [{port: 80}]
EOF
	printf 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: a, image: x}]}}}\n' >"$SK_TMP/job.yaml"
	printf 'kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, securityContext: {runAsUser: 0}}]}\n' >"$SK_TMP/root.yaml"
}

# --- the key proof: chart and inject agree ----------------------------------------------------------------
t_same_as_chart() {
	same "Pod, native, defaults" Pod "" ""
	same "Job, native" Job "" ""
	same "Deployment, native" Deployment "" ""
	same "Pod, classic sidecar" Pod "--set sidecar.native=false" "--classic-sidecar"
	same "Deployment, classic sidecar" Deployment "--set sidecar.native=false" "--classic-sidecar"
	same "Pod, startupProbe gate" Pod "--set sidecar.holdAgentUntilReady=false" "--startup-probe"
	same "Pod, classic sidecar started first" Pod "--set sidecar.startFirst=true" "--sidecar-first"
	same "Deployment, classic sidecar started first" Deployment "--set sidecar.startFirst=true" "--sidecar-first"
	same "Pod, init in sidecar" Pod "--set init.inSidecar=true" "--init-in-sidecar"
	same "Deployment, init in sidecar" Deployment "--set init.inSidecar=true" "--init-in-sidecar"
	same "Job, init in sidecar" Job "--set init.inSidecar=true" "--init-in-sidecar"
	same "Pod, init in sidecar, startupProbe gate, other sidecar UID, seccomp off" Pod \
		"--set init.inSidecar=true --set sidecar.holdAgentUntilReady=false --set uids.sidecar=2001 --set seccomp.enabled=false" \
		"--init-in-sidecar --startup-probe --sidecar-uid 2001 --no-seccomp"
	same "Pod, seccomp off" Pod "--set seccomp.enabled=false" "--no-seccomp"
	same "Pod, other UIDs, admin port, images, configmap, log level, ready timeout" Pod \
		"--set uids.agent=2000 --set uids.sidecar=2001 --set ports.admin=16000 --set images.init.repository=r/i --set images.init.tag=t1 --set images.sidecar.repository=r/s --set images.sidecar.tag=t2 --set images.init.pullPolicy=Always --set images.sidecar.pullPolicy=Always --set policy.existingConfigMap=my-policy --set seccomp.profileName=stockade-0123456789abcdef.json --set sidecar.logLevel=debug --set sidecar.readyTimeoutSeconds=7" \
		"--agent-uid 2000 --sidecar-uid 2001 --admin-port 16000 --init-image r/i:t1 --sidecar-image r/s:t2 --pull-policy Always --policy-configmap my-policy --seccomp-profile stockade-0123456789abcdef.json --log-level debug --ready-timeout 7"
	# the workload's own init containers (after stockade's, as the agent) and pod securityContext
	local ic="--set workload.initContainers[0].name=prep --set workload.initContainers[0].image=busybox --set workload.initContainers[0].command[0]=make --set workload.podSecurityContext.fsGroup=3000"
	local mode name hset iset
	for mode in "native|" "classic sidecar|--set sidecar.native=false|--classic-sidecar" "init in sidecar|--set init.inSidecar=true|--init-in-sidecar"; do
		IFS='|' read -r name hset iset <<<"$mode"
		APP_INIT='[{name: prep, image: busybox, command: [make]}]' APP_PSC='{fsGroup: 3000}' \
			same "Deployment, $name, own init container and pod securityContext" Deployment "$ic $hset" "$iset"
	done
	same "Deployment, API secrets and sidecar settings" Deployment \
		"--set sidecar.apiSecrets[0].name=gh --set sidecar.apiSecrets[0].secretName=gh-token --set sidecar.apiSecrets[1].name=pypi --set sidecar.apiSecrets[1].secretName=pypi-token --set sidecar.settings.peek-timeout-ms=2000 --set sidecar.settings.dns-upstream-sockets=64" \
		"--api-secret gh=gh-token --api-secret pypi=pypi-token --sidecar-setting peek-timeout-ms=2000 --sidecar-setting dns-upstream-sockets=64"
}

# --- A seccomp section: both name the profile after its content hash, the chart from values,
# inject from the policy file the chart renders; the seccomp ConfigMaps they publish for the installer agree.
sc_field() { # sc_field FILE — "<profile> <localhostProfile of the first agent container>"
	python3 -c '
import sys, yaml
cm, prof = "-", "-"
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d: continue
    if d["kind"] == "ConfigMap" and d["metadata"].get("labels", {}).get("stockade.dev/seccomp-profile") == "true":
        cm = d["data"]["profile"]
    for c in d["spec"].get("containers", []) if d["kind"] == "Pod" else []:
        if c["name"] == "agent": prof = c["securityContext"]["seccompProfile"]["localhostProfile"]
print(cm, prof)' "$1"; }
t_seccomp_hashed() {
	local sc_set="--set policy.spec.seccomp.deny={ptrace,getrandom} --set policy.spec.seccomp.allow={mlock}"
	# shellcheck disable=SC2086
	"$HELM" template stockade helm/stockade --namespace default --kube-version 1.34.0 $sc_set >"$SK_TMP/sc-chart.yaml"
	python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "stockade-policy": print(d["data"]["policy.yaml"], end="")' \
		"$SK_TMP/sc-chart.yaml" >"$SK_TMP/sc-policy.yaml"
	same "Pod, a seccomp section (content-hashed profile name)" Pod "$sc_set" "--policy $SK_TMP/sc-policy.yaml"
	app_pod Pod | "$P" inject -f - --policy "$SK_TMP/sc-policy.yaml" >"$SK_TMP/sc-inject.yaml"
	chart_sc=$(sc_field "$SK_TMP/sc-chart.yaml")
	sk_check_eq "seccomp ConfigMap: chart and inject publish the same profile name, the one their pods use" \
		"$chart_sc" "$(sc_field "$SK_TMP/sc-inject.yaml")"
	sk_check_eq "... which is stockade-policy seccomp --print-name of that policy" \
		"$("$P" seccomp --policy "$SK_TMP/sc-policy.yaml" --print-name) $("$P" seccomp --policy "$SK_TMP/sc-policy.yaml" --print-name)" "$chart_sc"
	run "$P" inject -f "$SK_TMP/sc-inject.yaml" --policy "$SK_TMP/sc-policy.yaml" --seccomp-profile stockade-agent.json
	sk_check_eq "inject --policy refuses a --seccomp-profile the policy does not hash to (exit 2)" 2 "$rc"
	# A pod naming its policy's profile by annotation (what stockade-injector, blind to the policy, reads):
	# its agent and stockade-init get that one; under --policy it must be the policy's own.
	local name
	name=$("$P" seccomp --policy "$SK_TMP/sc-policy.yaml" --print-name)
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: a, annotations: {stockade.io/seccomp-profile: %s}}\nspec: {containers: [{name: c, image: x}]}\n' \
		"$name" >"$SK_TMP/ann.yaml"
	run "$P" inject -f "$SK_TMP/ann.yaml"
	sk_check_eq "the annotation names the agent's profile and init's --seccomp-profile" "$name $name" "$(python3 -c '
import sys, yaml
s = yaml.safe_load(sys.stdin)["spec"]
print(s["containers"][0]["securityContext"]["seccompProfile"]["localhostProfile"], s["initContainers"][0]["args"][5])' <<<"$out")"
	run "$P" inject -f "$SK_TMP/ann.yaml" --policy "$SK_TMP/sc-policy.yaml"
	sk_check_eq "... accepted by inject --policy of that policy" 0 "$rc"
	printf 'version: 1\n' >"$SK_TMP/sc-default.yaml"
	run "$P" inject -f "$SK_TMP/ann.yaml" --policy "$SK_TMP/sc-default.yaml"
	sk_check_eq "... refused by inject --policy of another, naming the annotation" \
		"1:$SK_TMP/ann.yaml: document 1 (Pod/a): metadata.annotations[stockade.io/seccomp-profile]: '$name' is not the policy's seccomp profile 'stockade-4696b6ca6e2d4b5e.json'" "$rc:$err"
	printf 'version: 1\nseccomp:\n  allow: [ptrace]\n' >"$SK_TMP/sc-bad.yaml"
	run "$P" inject -f "$SK_TMP/sc-inject.yaml" --policy "$SK_TMP/sc-bad.yaml"
	sk_check_eq "inject --policy refuses a seccomp section the generator refuses, at its line:col (exit 3)" \
		"3 yes" "$rc $(grep -q "sc-bad.yaml:3:11: seccomp.allow\[0\]: 'ptrace'" <<<"$err" && echo yes)"
}

# --- every workload kind, as kubectl would receive it ------------------------------------------------------
t_kinds() {
	wrap_kinds
	sk_check_eq "inject every kind exits 0" 0 "$rc"
	cf=$("$KUBECONFORM" -strict -summary -kubernetes-version 1.37.0 \
		-schema-location "$SCHEMAS/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
		"$SK_TMP/kinds.out.yaml" 2>&1)
	if grep -q 'Valid: 5, Invalid: 0, Errors: 0' <<<"$cf"; then sk_pass "kubeconform: every kind inject wrote"
	else sk_fail "kubeconform: every kind inject wrote" "$cf"; fi
	wrapped=$(python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    k = d["kind"]
    s = {"Pod": lambda: d["spec"], "CronJob": lambda: d["spec"]["jobTemplate"]["spec"]["template"]["spec"]}.get(
        k, lambda: d["spec"].get("template", {}).get("spec"))()
    names = [c["name"] for c in (s or {}).get("initContainers", [])] if s else []
    print(k, ",".join(names) or "-")' "$SK_TMP/kinds.out.yaml")
	sk_check_eq "each kind wrapped, the pod's own init container after stockade's, the Service untouched" \
		"StatefulSet stockade-init,stockade-sidecar
DaemonSet stockade-init,stockade-sidecar
ReplicaSet stockade-init,stockade-sidecar
CronJob stockade-init,stockade-sidecar,setup
Service -" "$wrapped"
	sk_check_eq "the Service passes unchanged" "$(python3 -c 'import sys,yaml,json; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))[4], sort_keys=True))' "$SK_TMP/kinds.yaml")" \
		"$(python3 -c 'import sys,yaml,json; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))[4], sort_keys=True))' "$SK_TMP/kinds.out.yaml")"
}

# --- idempotence and --check ----------------------------------------------------------------------------
t_idempotence() {
	[ -s "$SK_TMP/kinds.out.yaml" ] || wrap_kinds   # (the kinds case wrote it; alone, this case does)
	run "$P" inject -f "$SK_TMP/kinds.out.yaml"
	sk_check_eq "wrapping the output again gives the same text" "$(cat "$SK_TMP/kinds.out.yaml")" "$out"
	run "$P" inject --check -f "$SK_TMP/kinds.out.yaml"
	sk_check_eq "--check passes on wrapped output (exit 0, silent)" "0:" "$rc:$out$err"
	run "$P" inject --check -f "$SK_TMP/kinds.yaml"
	sk_check_eq "--check fails on the unwrapped file" 1 "$rc"
	sk_check_eq "--check names each unwrapped workload" "$SK_TMP/kinds.yaml: document 1 (StatefulSet/s): not wrapped by stockade (run stockade-policy inject)
$SK_TMP/kinds.yaml: document 2 (DaemonSet/d): not wrapped by stockade (run stockade-policy inject)
$SK_TMP/kinds.yaml: document 3 (ReplicaSet/r): not wrapped by stockade (run stockade-policy inject)
$SK_TMP/kinds.yaml: document 4 (CronJob/c): not wrapped by stockade (run stockade-policy inject)" "$err"
	run "$P" inject --check --classic-sidecar -f "$SK_TMP/kinds.out.yaml"
	sk_check_eq "--check fails when the options differ (classic vs native)" 1 "$rc"
	# switching shape on wrapped output: init in the sidecar and back, nothing left of the other shape
	run "$P" inject --init-in-sidecar -f "$SK_TMP/kinds.out.yaml"
	printf '%s\n' "$out" >"$SK_TMP/kinds.insidecar.yaml"
	sk_check_eq "--init-in-sidecar on wrapped output: no stockade-init container left, the sidecar first" \
		"StatefulSet stockade-sidecar
DaemonSet stockade-sidecar
ReplicaSet stockade-sidecar
CronJob stockade-sidecar,setup" "$(python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    k = d["kind"]
    if k == "Service": continue
    s = d["spec"]["jobTemplate"]["spec"]["template"]["spec"] if k == "CronJob" else d["spec"]["template"]["spec"]
    print(k, ",".join(c["name"] for c in s.get("initContainers", [])))' "$SK_TMP/kinds.insidecar.yaml")"
	run "$P" inject --check --init-in-sidecar -f "$SK_TMP/kinds.insidecar.yaml"
	sk_check_eq "--check --init-in-sidecar passes on it" "0:" "$rc:$out$err"
	run "$P" inject --check -f "$SK_TMP/kinds.insidecar.yaml"
	sk_check_eq "--check (an init container) fails on it" 1 "$rc"
	run "$P" inject --check --init-in-sidecar -f "$SK_TMP/kinds.out.yaml"
	sk_check_eq "--check --init-in-sidecar fails on the default shape" 1 "$rc"
	run "$P" inject -f "$SK_TMP/kinds.insidecar.yaml"
	sk_check_eq "wrapping it again without the flag gives the default shape's text back" "$(cat "$SK_TMP/kinds.out.yaml")" "$out"
}

# --- refusals: nothing on stdout, the field named --------------------------------------------------------
t_refusals() {
	printf 'apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      hostNetwork: true\n      containers: [{name: app, image: x}]\n' >"$SK_TMP/hostnet.yaml"
	run "$P" inject -f "$SK_TMP/hostnet.yaml"
	sk_check_eq "hostNetwork refused: exit 1, nothing written" "1:" "$rc:$out"
	sk_check_eq "hostNetwork refused: field path named" "$SK_TMP/hostnet.yaml: document 2 (Deployment/web): spec.template.spec.hostNetwork: the pod shares the node's network namespace, which stockade's nftables cannot confine" "$err"
	run "$P" inject --classic-sidecar -f "$SK_TMP/job.yaml"
	sk_check_eq "Job with a classic sidecar refused" "1:$SK_TMP/job.yaml: document 1 (Job/j): spec.template.spec: a Job's pod cannot have a classic sidecar: it would keep running and the Job would never complete (use a native sidecar, Kubernetes >= 1.29)" "$rc:$err"
	run "$P" inject --sidecar-first -f "$SK_TMP/job.yaml"
	sk_check_eq "Job with the sidecar started first refused" "1:$SK_TMP/job.yaml: document 1 (Job/j): spec.template.spec: a Job's pod cannot have a classic sidecar: it would keep running and the Job would never complete (use a native sidecar, Kubernetes >= 1.29)" "$rc:$err"
	local why="--init-in-sidecar needs the native sidecar (not --classic-sidecar, not --sidecar-first): a classic sidecar's failed postStart hook does not stop the kubelet from starting the agent, so the agent could run with no rules (fail open)"
	run "$P" inject --init-in-sidecar --sidecar-first -f "$SK_TMP/hostnet.yaml"
	sk_check_eq "--init-in-sidecar with --sidecar-first refused as the chart refuses it: exit 2, nothing written, why" \
		"2::stockade-policy inject: $why" "$rc:$out:$err"
	run "$P" inject --check --init-in-sidecar --classic-sidecar -f "$SK_TMP/job.yaml"
	sk_check_eq "--init-in-sidecar with --classic-sidecar refused, --check too" "2:stockade-policy inject: $why" "$rc:$err"
	run "$P" inject -f "$SK_TMP/root.yaml"
	sk_check_eq "root agent refused" "1:$SK_TMP/root.yaml: document 1 (Pod/p): spec.containers[0].securityContext.runAsUser: container 'a' runs as root; an agent container cannot (its traffic would not be redirected, and root may change the pod's nftables)" "$rc:$err"
	printf 'kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a}]\n  x: [1\n' >"$SK_TMP/syntax.yaml"
	run "$P" inject -f "$SK_TMP/syntax.yaml"
	sk_check_eq "YAML syntax error names file:line:col" "1:$SK_TMP/syntax.yaml:6:1: YAML syntax error: did not find expected ',' or ']', expected valid YAML" "$rc:$err"
}

# --- Lists, JSON, stdin, --policy ------------------------------------------------------------------------
t_lists_json_policy() {
	printf '{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}]}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}]}' >"$SK_TMP/list.json"
	run "$P" inject -f - <"$SK_TMP/list.json"
	sk_check_eq "a JSON List from stdin: JSON out, the Pod item wrapped, the ConfigMap not" "List Pod:stockade-init,stockade-sidecar ConfigMap:-" \
		"$(python3 -c 'import sys,json; d=json.loads(sys.stdin.read()); print(d["kind"], " ".join(i["kind"]+":"+(",".join(c["name"] for c in i.get("spec",{}).get("initContainers",[])) or "-") for i in d["items"]))' <<<"$out")"
	run "$P" inject --check -f "$SK_TMP/list.json"
	sk_check_eq "--check names the List item" "1:$SK_TMP/list.json: document 1 items[0] (Pod/p): not wrapped by stockade (run stockade-policy inject)" "$rc:$err"

	printf 'version: 1\nagent: {uid: 4000}\nsidecar: {uid: 4001}\nports: {admin: 17000}\negress:\n  - host: api.github.com\n    ports: [443]\n' >"$SK_TMP/policy.yaml"
	run "$P" inject --policy "$SK_TMP/policy.yaml" --policy-configmap agent-policy -f "$SK_TMP/root.yaml"
	sk_check_eq "--policy: the policy's UIDs are used (root still refused)" 1 "$rc"
	run "$P" inject --policy "$SK_TMP/policy.yaml" --policy-configmap agent-policy -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy: ConfigMaps first (the file; the seccomp section for the installer); the pod takes the policy's UIDs and admin port" \
		"ConfigMap agent-policy True | ConfigMap agent-policy-seccomp true stockade-4696b6ca6e2d4b5e.json | Job 4000 4001 --admin-addr=0.0.0.0:17000 agent-policy" \
		"$(python3 -c '
import sys, yaml
ds = list(yaml.safe_load_all(sys.stdin))
cm, scm, job = ds
s = job["spec"]["template"]["spec"]
side = s["initContainers"][1]
print(cm["kind"], cm["metadata"]["name"], cm["data"]["policy.yaml"] == open(sys.argv[1]).read(), "|",
      scm["kind"], scm["metadata"]["name"], scm["metadata"]["labels"]["stockade.dev/seccomp-profile"], scm["data"]["profile"], "|", job["kind"],
      s["containers"][0]["securityContext"]["runAsUser"], side["securityContext"]["runAsUser"], side["args"][2],
      s["volumes"][0]["configMap"]["name"])' "$SK_TMP/policy.yaml" <<<"$out")"
	run "$P" inject --policy "$SK_TMP/policy.yaml" --agent-uid 1000 -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy with a disagreeing --agent-uid is a usage error" 2 "$rc"
	printf 'version: 1\nagent: {uid: 0}\n' >"$SK_TMP/bad-policy.yaml"
	run "$P" inject --policy "$SK_TMP/bad-policy.yaml" -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy with an invalid policy exits 3" 3 "$rc"

	run "$P" inject --init-image "a b" -f "$SK_TMP/job.yaml"
	sk_check_eq "an image with a space is a usage error" "2:stockade-policy inject: --init-image: expected a non-empty name of printable ASCII, no spaces" "$rc:$err"
}

# --- Real workloads: ConfigMaps where the pods are, a directory, wrapping twice, a live object read back ----
t_real_workloads() {
	mkdir -p "$SK_TMP/dir"
	printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: team-a}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: app, image: python:3}]\n' >"$SK_TMP/dir/a.yaml"
	printf '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"team-b"},"spec":{"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"app","image":"node"}]}}}}\n' >"$SK_TMP/dir/b.json"
	echo 'not a manifest' >"$SK_TMP/dir/README.md"
	printf 'version: 1\negress:\n  - host: api.github.com\n    ports: [443]\n' >"$SK_TMP/rw-policy.yaml"
	# shellcheck disable=SC2016  # python, not shell
	local kinds='import sys, yaml
print(" ".join("%s/%s@%s" % (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", "-")) for d in yaml.safe_load_all(sys.stdin) if d))'
	run "$P" inject -f "$SK_TMP/dir" --policy "$SK_TMP/rw-policy.yaml"
	sk_check_eq "-f DIR reads its manifests by name (not README.md); the policy's ConfigMaps go into each workload's namespace, first" \
		"0 ConfigMap/stockade-policy@team-a ConfigMap/stockade-policy-seccomp@team-a ConfigMap/stockade-policy@team-b ConfigMap/stockade-policy-seccomp@team-b Deployment/web@team-a Deployment/api@team-b" \
		"$rc $(python3 -c "$kinds" <<<"$out")"
	printf '%s\n' "$out" >"$SK_TMP/rw-once.yaml"
	sk_check_eq "the agent's read-only root gets a writable /tmp (an emptyDir of the pod's own), then the trust files" \
		"agent-tmp:/tmp stockade-trust:/run/stockade-trust emptyDir" \
		"$(python3 -c '
import sys, yaml
d = [x for x in yaml.safe_load_all(sys.stdin) if x and x["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
m = d["containers"][0]["volumeMounts"]
v = [x for x in d["volumes"] if x["name"] == "agent-tmp"]
print(" ".join(x["name"] + ":" + x["mountPath"] for x in m), " ".join(k for x in v for k in x if k != "name"))' <<<"$out")"
	run "$P" inject -f "$SK_TMP/rw-once.yaml" --policy "$SK_TMP/rw-policy.yaml"
	sk_check_eq "wrapping inject's own output again with --policy gives the same stream (ConfigMaps replaced, not doubled)" \
		"0 $(cat "$SK_TMP/rw-once.yaml")" "$rc $out"
	run "$P" inject -f "$SK_TMP/dir/a.yaml" --policy "$SK_TMP/rw-policy.yaml" --policy-configmap other
	sk_check_eq "a workload without the ConfigMap in the input still gets it in its namespace" \
		"0 ConfigMap/other@team-a ConfigMap/other-seccomp@team-a Deployment/web@team-a" "$rc $(python3 -c "$kinds" <<<"$out")"
	mkdir -p "$SK_TMP/empty"
	run "$P" inject -f "$SK_TMP/empty"
	sk_check_eq "-f of a directory with no manifests is a usage error, saying so" \
		"2:stockade-policy inject: $SK_TMP/empty: no manifests in this directory (*.yaml, *.yml, *.json)" "$rc:$err"
	# What the API server hands back: its defaults on every container, probe, port and volume.
	python3 -c '
import sys, yaml
out = []
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Deployment":
        d["metadata"].update({"uid": "0d8a", "resourceVersion": "7", "generation": 1})
        d["spec"].update({"revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "replicas": 1,
                          "strategy": {"type": "RollingUpdate"}})
        s = d["spec"]["template"]["spec"]
        s.update({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                  "terminationGracePeriodSeconds": 30})
        for c in s.get("initContainers", []) + s["containers"]:
            c.update({"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
            c.setdefault("resources", {})
            for p in ("livenessProbe", "readinessProbe", "startupProbe"):
                if p in c:
                    c[p].setdefault("timeoutSeconds", 1); c[p]["successThreshold"] = 1
                    if "httpGet" in c[p]: c[p]["httpGet"]["scheme"] = "HTTP"
            for port in c.get("ports", []): port["protocol"] = "TCP"
        for v in s.get("volumes", []):
            if "configMap" in v: v["configMap"].setdefault("defaultMode", 420)
        out.append(d)
yaml.safe_dump_all(out, sys.stdout)' "$SK_TMP/rw-once.yaml" >"$SK_TMP/rw-live.yaml"
	run "$P" inject --check -f "$SK_TMP/rw-live.yaml" --policy "$SK_TMP/rw-policy.yaml"
	sk_check_eq "--check of live Deployments (the API server's defaults added) says wrapped" "0:" "$rc:$err"
	run "$P" inject --check -f "$SK_TMP/rw-live.yaml" --policy "$SK_TMP/rw-policy.yaml" --log-level debug
	sk_check_eq "... and not wrapped when a stockade flag differs (the control)" 1 "$rc"
}

# --- Governance: the guardrails into the pod as the injector puts them, held against --policy;
# a pod's own policy ConfigMap by annotation.
t_governance() {
	local G=policy/examples/guardrails.yaml
	printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n      labels: {app: web}\n      annotations: {stockade.io/policy: web-policy}\n    spec:\n      containers: [{name: web, image: app}]\n' >"$SK_TMP/gov.yaml"
	run "$P" inject -f "$SK_TMP/gov.yaml" --guardrails "$G"
	sk_check_eq "inject --guardrails exits 0" 0 "$rc"
	sk_check_eq "the pod carries the guardrails' bytes, the sidecar reads them, the annotated policy is mounted" \
		"True --guardrails=/etc/stockade-guardrails/guardrails.yaml metadata.annotations['stockade.io/guardrails'] web-policy" \
		"$(python3 -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
t = d["spec"]["template"]
side = [c for c in t["spec"]["initContainers"] if c["name"] == "stockade-sidecar"][0]
vols = {v["name"]: v for v in t["spec"]["volumes"]}
print(t["metadata"]["annotations"]["stockade.io/guardrails"] == open(sys.argv[1]).read(),
      [a for a in side["args"] if a.startswith("--guardrails")][0],
      vols["stockade-guardrails"]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
      vols["stockade-policy"]["configMap"]["name"])' "$G" <<<"$out")"
	run "$P" inject -f "$SK_TMP/gov.yaml" --guardrails "$G" --policy policy/testdata/guardrails-violated.yaml
	sk_check_eq "inject --policy beyond the guardrails exits 3" 3 "$rc"
	sk_check "and says where, as check --guardrails" grep -q "guardrails-violated.yaml:4:5: egress\[0\]: host pastebin.com allows pastebin.com, denied by guardrail $G:5:5 deniedHosts\[0\]" <<<"$err"
	run "$P" inject -f "$SK_TMP/gov.yaml" --guardrails policy/testdata/guardrails-violated.yaml
	sk_check_eq "inject --guardrails with a file that is not guardrails exits 2" 2 "$rc"
}

# --- CNI mode: inject --cni gives the chart's cni.enabled pod (stockade-validate first, no NET_ADMIN
# container) and the same stockade.io/netns-policy annotation, the policy the node's plugin reads.
# nsann KIND — the netns-policy annotation of the first KIND on stdin ("-" when there is none)
nsann() { python3 -c '
import sys, yaml
kind = sys.argv[1]
for d in yaml.safe_load_all(sys.stdin):
    if d and d.get("kind") == kind:
        m = d["metadata"] if kind == "Pod" else d["spec"]["template"]["metadata"]
        print((m.get("annotations") or {}).get("stockade.io/netns-policy", "-"), end="")
        break' "$1"; }
t_cni() {
	"$HELM" template stockade helm/stockade --namespace default --kube-version 1.34.0 >"$SK_TMP/cni-chart.yaml"
	python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "stockade-policy": print(d["data"]["policy.yaml"], end="")' \
		"$SK_TMP/cni-chart.yaml" >"$SK_TMP/cni-policy.yaml"
	local k
	for k in Pod Deployment Job; do
		same "$k, CNI mode" $k "--set cni.enabled=true" "--cni --policy $SK_TMP/cni-policy.yaml"
		sk_check_eq "$k, CNI mode: inject's netns-policy annotation is the chart's" \
			"$("$HELM" template stockade helm/stockade --namespace default --kube-version 1.34.0 --set cni.enabled=true --set workload.kind=$k | nsann $k)" \
			"$(app_pod $k | "$P" inject -f - --cni --policy "$SK_TMP/cni-policy.yaml" | nsann $k)"
	done
	app_pod Pod | "$P" inject -f - --cni --policy "$SK_TMP/cni-policy.yaml" >"$SK_TMP/cni-once.yaml"
	"$P" inject -f "$SK_TMP/cni-once.yaml" --cni --policy "$SK_TMP/cni-policy.yaml" >"$SK_TMP/cni-twice.yaml"
	sk_check "CNI mode: wrapping twice changes nothing" diff -u "$SK_TMP/cni-once.yaml" "$SK_TMP/cni-twice.yaml"
	sk_check "CNI mode: --check accepts the wrapped pod" "$P" inject --check -f "$SK_TMP/cni-once.yaml" --cni --policy "$SK_TMP/cni-policy.yaml"
	# re-wrapped without --cni: stockade-init back, the validator and the annotation gone
	"$P" inject -f "$SK_TMP/cni-once.yaml" >"$SK_TMP/cni-off.yaml"
	sk_check_eq "CNI-wrapped pod re-wrapped without --cni: stockade-init first, no annotation" \
		"stockade-init -" "$(python3 -c 'import sys, yaml
d = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Pod")
print(d["spec"]["initContainers"][0]["name"], end=" ")' "$SK_TMP/cni-off.yaml")$(nsann Pod <"$SK_TMP/cni-off.yaml")"
	sk_check "CNI mode: the default pod is not wrapped as --check --cni wants" bash -c \
		"! \"$P\" inject --check -f \"$SK_TMP/cni-off.yaml\" --cni --policy \"$SK_TMP/cni-policy.yaml\" 2>/dev/null"
	# without --policy (as stockade-injector): no annotation, the node's plugin reads the policy ConfigMap
	app_pod Pod | "$P" inject -f - --cni >"$SK_TMP/cni-bare.yaml"
	sk_check_eq "--cni without --policy: stockade-validate first, no annotation" "stockade-validate -" \
		"$(python3 -c 'import sys, yaml
d = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Pod")
print(d["spec"]["initContainers"][0]["name"], end=" ")' "$SK_TMP/cni-bare.yaml")$(nsann Pod <"$SK_TMP/cni-bare.yaml")"
	run "$P" inject --cni --init-in-sidecar --policy "$SK_TMP/cni-policy.yaml" -f "$SK_TMP/root.yaml"
	sk_check_eq "--cni with --init-in-sidecar: exit 2, why" "2 1" "$rc $(grep -c -- '--cni and --init-in-sidecar' <<<"$err")"
}


# --- The trust files and credential placeholders: the chart's trust.enabled, sidecar.apiSecrets and
# agent.secretEnv are inject's --no-trust, --api-secret and --secret-env (the same pod); the Secret is
# mounted into the sidecar and no other container, the agent gets the placeholder, the read-only trust mount
# and the variables; what would put a value where it does not belong is refused, saying why.
t_trust_and_secrets() {
	cat >"$SK_TMP/secrets-values.yaml" <<'EOF'
policy:
  spec:
    egress:
      - {host: api.github.com, ports: [443], inspect: true}
    secrets:
      - {name: github, valueFile: /var/run/stockade/secrets/github/token, hosts: [api.github.com]}
sidecar:
  apiSecrets: [{name: github, secretName: gh-token}]
agent:
  secretEnv: {GITHUB_TOKEN: stockade-secret-github, A_TOKEN: stockade-secret-github}
EOF
	local sec="--api-secret github=gh-token --secret-env GITHUB_TOKEN=stockade-secret-github --secret-env A_TOKEN=stockade-secret-github"
	same "Pod, no trust files" Pod "--set trust.enabled=false" "--no-trust"
	same "Deployment, secrets and placeholders" Deployment "-f $SK_TMP/secrets-values.yaml" "$sec"
	local ic="--set workload.initContainers[0].name=prep --set workload.initContainers[0].image=busybox --set workload.initContainers[0].command[0]=make"
	APP_INIT='[{name: prep, image: busybox, command: [make]}]' \
		same "Deployment, secrets and placeholders, own init container" Deployment "-f $SK_TMP/secrets-values.yaml $ic" "$sec"
	APP_INIT='[{name: prep, image: busybox, command: [make]}]' \
		same "Deployment, classic sidecar, secrets and placeholders, own init container" Deployment \
		"-f $SK_TMP/secrets-values.yaml $ic --set sidecar.native=false" "$sec --classic-sidecar"

	# shellcheck disable=SC2086  # word-split argument list
	APP_INIT='[{name: prep, image: busybox, command: [make]}]' app_pod Deployment | "$P" inject -f - $sec >"$SK_TMP/sec.yaml"
	sk_check_eq "the Secret in the sidecar alone (read-only); the placeholder, the read-only trust directory and the trust variables in the pod's own containers; the sidecar writes the trust files" \
		"stockade-init: - - - - - | stockade-sidecar: ro - rw - --trust-dir=/run/stockade-trust | prep: - stockade-secret-github ro /run/stockade-trust/bundle.pem /run/stockade-trust/ca.pem | agent: - stockade-secret-github ro /run/stockade-trust/bundle.pem /run/stockade-trust/ca.pem" \
		"$(python3 -c '
import sys, yaml
d = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x and x["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
out = []
for c in d["initContainers"] + d["containers"]:
    m = {v["name"]: v for v in c.get("volumeMounts", [])}
    e = {v["name"]: v.get("value") for v in c.get("env", [])}
    mode = lambda n: "-" if n not in m else ("ro" if m[n].get("readOnly") and "subPath" not in m[n] else "rw")
    f = [mode("stockade-secret-github"), e.get("GITHUB_TOKEN", "-"), mode("stockade-trust"), e.get("SSL_CERT_FILE", "-")]
    if c["name"] == "stockade-sidecar":
        f.append(" ".join(a for a in c["args"] if a.startswith("--trust-dir")) or "-")
    else:
        f.append(e.get("NODE_EXTRA_CA_CERTS", "-"))
    out.append(c["name"] + ": " + " ".join(f))
print(" | ".join(out))' "$SK_TMP/sec.yaml")"
	# shellcheck disable=SC2086
	sk_check "... and wrapping that again changes nothing" "$P" inject --check -f "$SK_TMP/sec.yaml" $sec

	printf 'kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: x, env: [{name: GITHUB_TOKEN, value: ghp_x}, {name: SSL_CERT_FILE, value: /mine.pem}]}]}\n' >"$SK_TMP/own-token.yaml"
	run "$P" inject -f "$SK_TMP/own-token.yaml" --secret-env GITHUB_TOKEN=stockade-secret-github
	sk_check_eq "a container that sets the placeholder's variable itself is refused, named" \
		"1:$SK_TMP/own-token.yaml: document 1 (Pod/p): spec.containers[0].env: container 'a' sets GITHUB_TOKEN, which gets the credential placeholder stockade-secret-github (--secret-env): remove it there" "$rc:$err"
	run "$P" inject -f "$SK_TMP/own-token.yaml"
	sk_check_eq "without --secret-env: the container's own SSL_CERT_FILE kept, once" "0 /mine.pem" "$rc $(python3 -c '
import sys, yaml
c = yaml.safe_load(sys.stdin)["spec"]["containers"][0]
print(" ".join(e["value"] for e in c["env"] if e["name"] == "SSL_CERT_FILE"))' <<<"$out")"
	run "$P" inject -f "$SK_TMP/job.yaml" --secret-env "GIT-HUB=stockade-secret-github"
	sk_check_eq "a --secret-env name that is no variable name: exit 2" \
		"2:stockade-policy inject: --secret-env GIT-HUB: expected NAME=PLACEHOLDER, NAME a variable name ([A-Za-z_][A-Za-z0-9_]*)" "$rc:$err"

	printf 'version: 1\negress:\n  - {host: api.github.com, ports: [443], inspect: true}\nsecrets:\n  - {name: github, valueFile: /var/run/stockade/secrets/github/token, hosts: [api.github.com]}\n' >"$SK_TMP/sec-policy.yaml"
	run "$P" inject --policy "$SK_TMP/sec-policy.yaml" -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy: a secret's valueFile in no --api-secret mount is a usage error, saying how" \
		"2:stockade-policy inject: $SK_TMP/sec-policy.yaml: secrets[0] (github): valueFile /var/run/stockade/secrets/github/token is in no Secret mounted into the sidecar: add --api-secret NAME=SECRET and point valueFile at /var/run/stockade/secrets/NAME/<key>" "$rc:$err"
	run "$P" inject --policy "$SK_TMP/sec-policy.yaml" --api-secret github=gh-token --secret-env GITHUB_TOKEN=stockade-secret-gitlab -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy: a placeholder the policy lacks is a usage error" \
		"2:stockade-policy inject: --secret-env GITHUB_TOKEN=stockade-secret-gitlab: no secret of $SK_TMP/sec-policy.yaml has that placeholder" "$rc:$err"
	run "$P" inject --policy "$SK_TMP/sec-policy.yaml" --api-secret github=gh-token --secret-env GITHUB_TOKEN=stockade-secret-github -f "$SK_TMP/job.yaml"
	sk_check_eq "--policy with the Secret mounted and its placeholder: wrapped" "0" "$rc"
}

SK_CASES=(same_as_chart seccomp_hashed kinds idempotence refusals lists_json_policy real_workloads governance trust_and_secrets cni)
sk_main "$@"
