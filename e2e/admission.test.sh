#!/usr/bin/env bash
# e2e/admission.test.sh — the stockade-system admission policy's CEL, evaluated without a cluster:
# e2e/admission/vapcheck compiles the rendered ValidatingAdmissionPolicy with
# k8s.io/apiserver's own policy code and judges pods as the API server would. Every pod shape the charts
# and `stockade-policy inject` render is admitted, with default and non-default values; every attack in
# e2e/admission/fixtures is denied with its message; and mutants of the policy (one check weakened each)
# are caught by the fixtures, so a check that cannot fail shows here. Needs helm (scripts/install-tools),
# Go and the harness's modules (downloaded by scripts/install-tools; built offline here) and
# $SK_BIN/stockade-policy; no root, no cluster.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
T=${SK_TOOLS:-/opt/stockade-tools}
HELM=$T/bin/helm
P="$SK_BIN/stockade-policy"
FIX=e2e/admission/fixtures
TAG=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' helm/stockade/Chart.yaml)

# sys_policy OUT [helm args] — the stockade-system chart's admission policy, rendered.
sys_policy() { local out=$1; shift
	"$HELM" template s helm/stockade-system --namespace stockade-system --kube-version 1.34.0 \
		--set admissionPolicy.enabled=true "$@" >"$out"; }
# vapcheck NAME POLICY [vapcheck args] FILE... — one check per line the harness writes; one more failed
# when it judged nothing or did not reach its closing count (a crash, a usage error: printed above).
vapcheck() { local name=$1 policy=$2 line n=0 end=0; shift 2
	while IFS= read -r line; do
		case $line in
		"ok   - "*) sk_pass "$name: ${line#ok   - }"; n=$((n + 1)) ;;
		"FAIL - "*) sk_fail "$name: ${line#FAIL - }"; n=$((n + 1)) ;;
		[0-9]*" passed, "*" failed") end=1 ;;
		*) echo "$line" ;;
		esac
	done < <("$SK_TMP/vapcheck" -policy "$policy" "$@" 2>&1)
	if [ "$n" -eq 0 ] || [ "$end" != 1 ]; then sk_fail "$name: vapcheck judged every pod and ended"; fi
}
# fixture NAME — the fixture file with this chart's image tag, in the scratch dir; prints its path.
fixture() { sed "s/@TAG@/$TAG/g" "$FIX/$1.yaml" >"$SK_TMP/$1.yaml"; echo "$SK_TMP/$1.yaml"; }

setup() {
	sk_tmp stockade-admission
	if [ ! -x "$HELM" ]; then
		sk_fail "helm installed (scripts/install-tools)"; sk_summary; exit 1
	fi
	# Offline: the modules are scripts/install-tools' to download, so a missing one fails here, named.
	if ! (cd e2e/admission && GOFLAGS="-mod=mod -buildvcs=false" GOPROXY=off go build -o "$SK_TMP/vapcheck" .) >"$SK_TMP/build.log" 2>&1; then
		sk_fail "vapcheck builds (run scripts/install-tools)" "$(tail -5 "$SK_TMP/build.log")"; sk_summary; exit 1
	fi
	sys_policy "$SK_TMP/policy.yaml"
}

# --- every attack and every good shape of the fixtures, against the default policy and 1.29's v1beta1
t_fixtures() {
	local a o
	a=$(fixture agent-pods) o=$(fixture own-pods)
	vapcheck "default values" "$SK_TMP/policy.yaml" "$a" "$o"
	"$HELM" template s helm/stockade-system --kube-version 1.29.0 --set admissionPolicy.enabled=true >"$SK_TMP/policy-129.yaml"
	sk_check "1.29 renders admissionregistration.k8s.io/v1beta1" grep -q "^apiVersion: admissionregistration.k8s.io/v1beta1" "$SK_TMP/policy-129.yaml"
	vapcheck "1.29 (v1beta1)" "$SK_TMP/policy-129.yaml" "$a" "$o"
}

# --- the pods helm/stockade renders (agent and helm test pod, each workload kind and sidecar mode), those of
# the example parent chart, and the installer helm/stockade-system renders: admitted, with the defaults and with non-default values given
# to both charts alike (another sidecar UID, images by digest, API secrets, the installer's options).
chart_pods() { # chart_pods NAME "STOCKADE ARGS" "STOCKADE-SYSTEM ARGS"
	local name=$1 sargs=$2 yargs=$3 kind mode extra i=0 files=()
	# shellcheck disable=SC2086  # word-split argument lists
	sys_policy "$SK_TMP/p-$name.yaml" $yargs
	for kind in Pod Job Deployment; do
		for mode in native classic insidecar startupprobe startfirst cni; do
			extra=()
			case $mode in
			cni) extra=(--set cni.enabled=true) ;;
			classic) extra=(--set sidecar.native=false) ;;
			insidecar) extra=(--set init.inSidecar=true) ;;
			startupprobe) extra=(--set sidecar.holdAgentUntilReady=false) ;;
			startfirst) [ "$kind" = Job ] && continue; extra=(--set sidecar.native=false --set sidecar.startFirst=true) ;;
			esac
			i=$((i + 1))
			# shellcheck disable=SC2086
			if ! "$HELM" template "r$i" helm/stockade --namespace agents --kube-version 1.34.0 --set workload.kind="$kind" \
				"${extra[@]}" $sargs >"$SK_TMP/c-$name-$kind-$mode.yaml" 2>"$SK_TMP/err"; then
				sk_fail "$name: helm/stockade renders $kind $mode" "$(cat "$SK_TMP/err")"; continue
			fi
			files+=("$SK_TMP/c-$name-$kind-$mode.yaml")
		done
	done
	# shellcheck disable=SC2086
	"$HELM" template s helm/stockade-system --namespace agents --kube-version 1.34.0 $yargs >"$SK_TMP/c-$name-system.yaml"
	files+=("$SK_TMP/c-$name-system.yaml")
	vapcheck "$name" "$SK_TMP/p-$name.yaml" -expect allow "${files[@]}"
}
t_chart_pods() {
	chart_pods defaults "" ""
	local d=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	chart_pods other-values \
		"--set uids.sidecar=2000 --set images.init.digest=$d --set images.sidecar.digest=$d --set images.policy.digest=$d --set sidecar.apiSecrets[0].name=gh --set sidecar.apiSecrets[0].secretName=gh-token --set workload.imagePullSecrets[0].name=regcred --set workload.nodeSelector.pool=agents --set workload.tolerations[0].operator=Exists --set workload.initContainers[0].name=prep --set workload.initContainers[0].image=registry.example/prep:1 --set workload.podSecurityContext.fsGroup=3000" \
		"--set admissionPolicy.sidecarUid=2000 --set images.init.digest=$d --set images.sidecar.digest=$d --set images.policy.digest=$d --set images.installer.digest=$d --set seccompInstaller.apiServer=https://10.0.0.1:6443 --set seccompInstaller.intervalSeconds=5 --set seccompInstaller.graceSeconds=0 --set seccompInstaller.labelSelector=team=agents --set seccompInstaller.hostPath=/var/lib/kubelet/seccomp-stockade"
	# the example parent chart's own workloads, wrapped through helm/stockade's named templates
	"$HELM" template plat helm/examples/agent-platform --namespace agents --kube-version 1.34.0 >"$SK_TMP/example.yaml" 2>/dev/null
	vapcheck "example parent chart" "$SK_TMP/policy.yaml" -expect allow "$SK_TMP/example.yaml"
	# The installer is admitted only as its own release renders it: the same chart with other options gives
	# a pod this policy holds to the agents' rules (its hostPath first).
	"$HELM" template s helm/stockade-system --namespace agents --kube-version 1.34.0 --set seccompInstaller.graceSeconds=0 >"$SK_TMP/other-installer.yaml"
	vapcheck "installer of other values" "$SK_TMP/policy.yaml" -expect "deny:hostPath volumes seccomp-dir are not allowed" "$SK_TMP/other-installer.yaml"
}

# --- the pods `stockade-policy inject` writes around an application's pod, in each of its modes
t_inject_pods() {
	if [ ! -x "$P" ]; then sk_fail "stockade-policy built ($P)"; return; fi
	cat >"$SK_TMP/app-nojob.yaml" <<-'EOF'
		apiVersion: v1
		kind: Pod
		metadata: {name: app}
		spec:
		  containers:
		  - name: app
		    image: app
		    command: [sleep, infinity]
		    volumeMounts: [{name: tmp, mountPath: /tmp}]
		  volumes: [{name: tmp, emptyDir: {}}]
	EOF
	cat >"$SK_TMP/app-job.yaml" <<-'EOF'
		apiVersion: batch/v1
		kind: Job
		metadata: {name: task}
		spec:
		  template:
		    spec:
		      restartPolicy: Never
		      containers: [{name: task, image: app, command: [true]}]
	EOF
	cat >>"$SK_TMP/app-nojob.yaml" <<-'EOF'
		---
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: web}
		spec:
		  selector: {matchLabels: {app: web}}
		  template:
		    metadata: {labels: {app: web}}
		    spec:
		      containers: [{name: web, image: app, securityContext: {runAsUser: 4000}}]
	EOF
	cat "$SK_TMP/app-nojob.yaml" <(echo ---) "$SK_TMP/app-job.yaml" >"$SK_TMP/app.yaml"
	local mode args i=0 files=()
	for mode in "" "--init-in-sidecar" "--startup-probe" "--api-secret gh=gh-token" "--sidecar-uid 2000" \
		"--guardrails policy/examples/guardrails.yaml" "--cni"; do
		i=$((i + 1))
		args=$mode
		# shellcheck disable=SC2086  # word-split argument list
		if ! "$P" inject -f "$SK_TMP/app.yaml" $args >"$SK_TMP/inject-$i.yaml" 2>"$SK_TMP/err"; then
			sk_fail "inject ${mode:-(defaults)} wraps the app" "$(cat "$SK_TMP/err")"; continue
		fi
		if [ "$mode" = "--sidecar-uid 2000" ]; then
			sys_policy "$SK_TMP/p-uid2000.yaml" --set admissionPolicy.sidecarUid=2000
			vapcheck "inject $mode" "$SK_TMP/p-uid2000.yaml" -expect allow "$SK_TMP/inject-$i.yaml"
		else
			files+=("$SK_TMP/inject-$i.yaml")
		fi
	done
	# classic and sidecar-first sidecars refuse Jobs: the Pod and the Deployment only
	for mode in --classic-sidecar --sidecar-first; do
		if "$P" inject -f "$SK_TMP/app-nojob.yaml" "$mode" >"$SK_TMP/inject$mode.yaml" 2>"$SK_TMP/err"; then
			files+=("$SK_TMP/inject$mode.yaml")
		else
			sk_fail "inject $mode wraps the app" "$(cat "$SK_TMP/err")"
		fi
	done
	vapcheck "inject" "$SK_TMP/policy.yaml" -expect allow "${files[@]}"
	# the control: the application's own pods, unwrapped, are refused
	vapcheck "unwrapped" "$SK_TMP/policy.yaml" -expect "deny:stockade: containers" "$SK_TMP/app.yaml"
}

# --- mutants: each weakens one check of the rendered policy the way a one-line slip would; the fixtures
# must then fail (the named fixture admitted, or denied with another message). A mutant nobody catches
# means a check with no test.
mutant() { # mutant NAME FIXTURE-NAME PYTHON-EXPRESSION-ON-s
	local name=$1 want=$2 expr=$3 out
	python3 -c "
import sys
s = open(sys.argv[1]).read()
t = $expr
if t == s: sys.exit('mutation did not apply')
open(sys.argv[2], 'w').write(t)" "$SK_TMP/policy.yaml" "$SK_TMP/mutant.yaml" 2>"$SK_TMP/err" ||
		{ sk_fail "mutant $name applies" "$(cat "$SK_TMP/err")"; return; }
	out=$("$SK_TMP/vapcheck" -policy "$SK_TMP/mutant.yaml" "$SK_TMP/agent-pods.yaml" "$SK_TMP/own-pods.yaml" 2>&1)
	# a mutant that does not compile, or errs, would fail every fixture: that catches nothing
	if grep -qE "^FAIL - .*(compiles|evaluation failed)" <<<"$out"; then sk_fail "mutant $name is valid CEL" "$(grep '^FAIL' <<<"$out" | head -2)"
	elif grep -q "^FAIL - .* $want: " <<<"$out"; then sk_pass "mutant $name: caught by $want"
	else sk_fail "mutant $name: caught by $want" "$(grep '^FAIL' <<<"$out" | head -3)"; fi
}
t_mutants() {
	fixture agent-pods >/dev/null; fixture own-pods >/dev/null
	# a second container may run as the sidecar's UID
	mutant "sidecar UID allowed" bad-second-container-as-sidecar-uid \
		"s.replace(\"variables.podUid) == 1337\", \"variables.podUid) == -2\", 1)"
	# the own-pod exemption by image and args[0] alone, as before
	mutant "own pods by image and args[0]" bad-check-image-own-command-as-root \
		"s.replace(\"variables.checkPod || variables.installerPod\", \"object.spec.containers.all(c, c.image == 'localhost/stockade-policy:$TAG' && has(c.args) && c.args[0] == 'check')\")"
	mutant "own pods may have a command" bad-check-shape-own-command "s.replace('!has(c.command) && ', '', 1)"
	mutant "own pods may keep ephemeral containers" bad-ephemeral-agent-like-on-check-pod "s.replace('&& size(variables.ephemeral) == 0', '', 1)"
	mutant "installer with any arguments" bad-installer-other-arguments \
		"__import__('re').sub(r'c\.args == \[\"seccomp-install\"[^]]*\]', 'true', s, count=1)"
	# ephemeral containers exempt by the sidecar's name and image, or skipped by the seccomp check
	mutant "ephemeral sidecar exempt" bad-ephemeral-named-like-the-sidecar "s.replace(\" && !(c.name in variables.ephemeralNames)\", '')"
	mutant "seccomp of regular containers only" bad-ephemeral-unconfined \
		"s.replace('name: badSeccomp\\n      expression: >-\\n        variables.all', 'name: badSeccomp\\n      expression: >-\\n        (object.spec.containers + variables.inits)', 1)"
	# unset taken for false
	mutant "escalation only when asked for" bad-escalation-unset \
		"__import__('re').sub(r'!\\(has\\(c.securityContext\\) && has\\(c.securityContext.allowPrivilegeEscalation\\)\\s+&& c.securityContext.allowPrivilegeEscalation == false\\)', '(has(c.securityContext) && has(c.securityContext.allowPrivilegeEscalation) && c.securityContext.allowPrivilegeEscalation)', s, count=1)"
	mutant "pods/ephemeralcontainers unmatched" bad-ephemeral-net-admin "s.replace(', \"pods/ephemeralcontainers\"', '', 1)"
	# CNI mode's validator: its arguments unchecked, its hook allowed, or known by its name alone
	mutant "validator's arguments unchecked" bad-cni-validate-help \
		"s.replace(\"c.command[2] == '--policy' && \", '', 1)"
	mutant "validator may have a hook" bad-cni-validate-with-hook "s.replace('!has(c.args) && !has(c.lifecycle)', '!has(c.args)', 1)"
	mutant "validator by name alone" bad-cni-validate-other-image \
		"s.replace(\"c.name == 'stockade-validate' && c.image == 'localhost/stockade-sidecar:$TAG'\", \"c.name == 'stockade-validate'\")"
}

SK_CASES=(fixtures chart_pods inject_pods mutants)
sk_main "$@"
