#!/usr/bin/env bash
# e2e/cni.test.sh — stockade-cni run as containerd runs a chained plugin (CNI_* variables, the network
# configuration with its prevResult on stdin) against a fake API server on 127.0.0.1 (HTTPS, the suite's
# CA in the kubeconfig, a bearer token; e2e/cni_apiserver.py) serving pod JSON: ADD of a wrapped pod loads
# into the pod's netns ("skcni-pod") exactly the ruleset stockade-init loads from the same policy (compared
# with `nft list ruleset` of a netns the real init programmed) and prints prevResult unchanged; a second ADD;
# CHECK passes, and fails with the error object once the table is tampered with; DEL twice, and DEL with the
# netns gone; an unwrapped and a hostNetwork pod are left untouched; a wrapped pod with no policy at all,
# and an unreachable API server, fail ADD with the error object (fail closed); VERSION, STATUS; a wrapped
# pod without the annotation programmed from its policy volume's ConfigMap; and
# `stockade-cni install` against a scratch node root (chained, re-chained after the primary CNI rewrites
# its file, removed on SIGTERM); `stockade-sidecar validate` (CNI mode's init container) as the agent UID:
# fails with one line before the plugin's ADD, passes after it and writes stockade-init's marker. Needs root.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
N=skcni
REF=skcniref   # the reference netns stockade-init programs ($REF-pod)
CNI=$SK_BIN/stockade-cni
INIT=$SK_BIN/stockade-init
NETNS=/var/run/netns/$N-pod
TOKEN=e2e-token-0123456789
PREV='{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/skcni-pod"}],"ips":[{"address":"198.18.0.2/24","gateway":"198.18.0.1","interface":0}],"dns":{}}'

# conf KUBECONFIG — the network configuration on stdin of every command
conf() { printf '{"cniVersion":"1.0.0","name":"k8s-pod-network","type":"stockade-cni","kubeconfig":"%s","prevResult":%s}' "$1" "$PREV"; }

# cni COMMAND POD [NETNS] [KUBECONFIG] — runs the plugin for pod agents/POD; stdout is the plugin's
cni() {
	local cmd=$1 pod=$2 netns=${3-$NETNS} kc=${4:-$SK_TMP/kubeconfig}
	conf "$kc" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$cmd" CNI_CONTAINERID="c-$pod" \
		CNI_NETNS="$netns" CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=agents;K8S_POD_NAME=$pod;K8S_POD_UID=uid-$pod" \
		"$CNI" 2>>"$SK_TMP/cni.err"
}

ruleset() { ip netns exec "$1" nft list ruleset; }
table_absent() { ! ip netns exec "$N-pod" nft list table inet stockade >/dev/null 2>&1; }
code_of() { python3 -c 'import json,sys; o=json.load(sys.stdin); print(sorted(o), o["code"])'; }

# pod NAME LABELS-JSON ANNOTATIONS-JSON [hostNetwork] [CONFIGMAP] — writes the pod the API server serves;
# CONFIGMAP: a volume stockade-policy mounting that ConfigMap, as the injector's pods have
pod() {
	python3 - "$SK_TMP/pods/agents/$1.json" "$1" "$2" "$3" "${4:-false}" "${5:-}" <<'PY'
import json, sys
path, name, labels, ann, hostnet, cm = sys.argv[1:7]
spec = {"hostNetwork": hostnet == "true", "containers": [{"name": "agent", "image": "x"}]}
if cm:
    spec["volumes"] = [{"name": "stockade-run", "emptyDir": {}}, {"name": "stockade-policy", "configMap": {"name": cm}}]
json.dump({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "agents", "uid": "uid-" + name,
                        "labels": json.loads(labels), "annotations": json.loads(ann)},
           "spec": spec},
          open(path, "w"))
PY
}

setup() {
	sk_require_root
	sk_tmp skcni
	sk_net_up "$N" || { echo "namespace setup failed"; echo "0 passed, 1 failed"; exit 1; }
	ip netns del "$REF-pod" 2>/dev/null
	ip netns add "$REF-pod" && SK_NETS+=("$REF")
	ip -n "$REF-pod" link set lo up
	sk_ca "skcni CA"
	# the API server's leaf for IP:127.0.0.1
	(
		cd "$SK_TMP" || exit 1
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout api.key -out api.csr -subj /CN=api
		printf 'subjectAltName=IP:127.0.0.1\n' >api.ext
		openssl x509 -req -in api.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out api.pem -days 2 -extfile api.ext
	) >>"$SK_TMP/ca.log" 2>&1 || { echo "leaf setup failed"; echo "0 passed, 1 failed"; exit 1; }
	mkdir -p "$SK_TMP/pods/agents"
	python3 "$SK_ROOT/e2e/cni_apiserver.py" "$SK_TMP/api.pem" "$SK_TMP/api.key" "$TOKEN" "$SK_TMP/pods" \
		"$SK_TMP/port" 2>"$SK_TMP/api.log" &
	API_PID=$!
	for _ in $(seq 100); do [ -s "$SK_TMP/port" ] && break; sleep 0.05; done
	PORT=$(cat "$SK_TMP/port" 2>/dev/null)
	[ -n "$PORT" ] || { echo "API server did not start"; cat "$SK_TMP/api.log"; echo "0 passed, 1 failed"; exit 1; }
	trap 'kill "$API_PID" 2>/dev/null; sk_cleanup_on_exit' EXIT
	kubeconfig "$SK_TMP/kubeconfig" "https://127.0.0.1:$PORT"
	kubeconfig "$SK_TMP/kubeconfig.down" "https://127.0.0.1:1"   # nothing listens on port 1
	sk_policy policy.yaml <<'EOF2'
exemptUids: [1500]
egress:
  - host: example.com
    ports: [443]
  - cidr: 198.18.1.20/32
    ports: [7000]
    protocol: udp
  - cidr: 198.18.1.30/32
    ports: [7100]
    protocol: tcp
    direct: true
loopback: [8080]
EOF2
	local pol
	pol=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$SK_TMP/policy.yaml")
	pod wrapped '{"stockade.io/wrapped":"true"}' "{\"stockade.io/netns-policy\":$pol}"
	pod plain '{"app":"web"}' '{}'
	pod hostnet '{"stockade.io/wrapped":"true"}' "{\"stockade.io/netns-policy\":$pol}" true
	pod noannotation '{"stockade.io/wrapped":"true"}' '{}'
	# the injector's pods: no annotation, the policy in the ConfigMap their stockade-policy volume mounts
	pod injected '{"stockade.io/wrapped":"true"}' '{}' false agent-policy
	pod injected-nocm '{"stockade.io/wrapped":"true"}' '{}' false missing-policy
	pod injected-badcm '{"stockade.io/wrapped":"true"}' '{}' false empty-policy
	mkdir -p "$SK_TMP/pods/agents/configmaps"
	python3 -c 'import json, sys
json.dump({"kind": "ConfigMap", "metadata": {"name": "agent-policy"}, "data": {"policy.yaml": open(sys.argv[1]).read()}}, open(sys.argv[2], "w"))
json.dump({"kind": "ConfigMap", "metadata": {"name": "empty-policy"}, "data": {"other": "x"}}, open(sys.argv[3], "w"))' \
		"$SK_TMP/policy.yaml" "$SK_TMP/pods/agents/configmaps/agent-policy.json" "$SK_TMP/pods/agents/configmaps/empty-policy.json"
	# the reference: what stockade-init loads from the same policy
	ip netns exec "$REF-pod" "$INIT" --policy "$SK_TMP/policy.yaml" --force 2>>"$SK_TMP/init.err" ||
		sk_fail "setup: stockade-init loads the reference table" "$(cat "$SK_TMP/init.err")"
	ruleset "$REF-pod" >"$SK_TMP/ref.nft"
	sk_check "setup: the reference ruleset has table inet stockade" grep -q 'table inet stockade' "$SK_TMP/ref.nft"
}

# kubeconfig FILE SERVER — mode 0600, the CA as data, the token inline
kubeconfig() {
	cat >"$1" <<EOF2
apiVersion: v1
kind: Config
current-context: cni
clusters:
- name: c
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 "$SK_TMP/ca.pem")
users:
- name: stockade-cni
  user:
    token: $TOKEN
contexts:
- name: cni
  context: { cluster: c, user: stockade-cni }
EOF2
	chmod 600 "$1"
}

t_add() {
	cni DEL wrapped >/dev/null
	local out rc
	out=$(cni ADD wrapped); rc=$?
	sk_check_eq "ADD wrapped pod: exit 0" 0 "$rc"
	sk_check_eq "ADD prints prevResult unchanged" "$PREV" "$out"
	ruleset "$N-pod" >"$SK_TMP/cni.nft"
	sk_check "ADD: the pod's netns holds table inet stockade" grep -q 'table inet stockade' "$SK_TMP/cni.nft"
	sk_check "ADD: nft list ruleset in the pod's netns equals stockade-init's for the same policy" \
		diff -u "$SK_TMP/ref.nft" "$SK_TMP/cni.nft"
	sk_check "ADD: stockade-init --check agrees" ip netns exec "$N-pod" "$INIT" --policy "$SK_TMP/policy.yaml" --check
	sk_check "ADD: the node's own netns has no table inet stockade" bash -c '! nft list table inet stockade'
}

t_add_again() {
	cni ADD wrapped >/dev/null
	local out rc
	out=$(cni ADD wrapped); rc=$?
	sk_check_eq "second ADD: exit 0, prevResult" "0 $PREV" "$rc $out"
	ruleset "$N-pod" >"$SK_TMP/cni2.nft"
	sk_check "second ADD: still the same ruleset (one table)" diff -u "$SK_TMP/ref.nft" "$SK_TMP/cni2.nft"
}

t_check() {
	cni ADD wrapped >/dev/null
	local out rc
	out=$(cni CHECK wrapped); rc=$?
	sk_check_eq "CHECK after ADD: exit 0, no output" "0 " "$rc $out"
	ip netns exec "$N-pod" nft flush chain inet stockade nat_output
	out=$(cni CHECK wrapped); rc=$?
	sk_check_eq "CHECK after a chain was flushed: exit 1" 1 "$rc"
	sk_check_eq "CHECK after tampering: the error object" "['cniVersion', 'code', 'msg'] 5" "$(code_of <<<"$out")"
	ip netns exec "$N-pod" nft delete table inet stockade
	out=$(cni CHECK wrapped); rc=$?
	sk_check_eq "CHECK without the table: exit 1" 1 "$rc"
	sk_check "CHECK without the table: says it is missing" grep -q 'is missing' <<<"$out"
	cni ADD wrapped >/dev/null
	sk_check "ADD repairs: CHECK passes again" cni CHECK wrapped
}

t_del() {
	cni ADD wrapped >/dev/null
	local rc1 rc2 rc3
	cni DEL wrapped >/dev/null; rc1=$?
	sk_check_eq "DEL: exit 0" 0 "$rc1"
	sk_check "DEL: the table is gone" table_absent
	cni DEL wrapped >/dev/null; rc2=$?
	sk_check_eq "DEL again: exit 0" 0 "$rc2"
	cni DEL wrapped /var/run/netns/skcni-gone >/dev/null; rc3=$?
	sk_check_eq "DEL with the netns gone: exit 0" 0 "$rc3"
	cni DEL wrapped "" >/dev/null
	sk_check_eq "DEL without CNI_NETNS: exit 0" 0 "$?"
}

t_untouched() {
	cni DEL wrapped >/dev/null
	local out rc p
	for p in plain hostnet; do
		out=$(cni ADD $p); rc=$?
		sk_check_eq "ADD $p pod: exit 0, prevResult" "0 $PREV" "$rc $out"
		sk_check "ADD $p pod: the netns is left untouched" bash -c "[ -z \"\$(ip netns exec $N-pod nft list ruleset)\" ]"
	done
	# stockade's own namespace: not even asked about
	out=$(conf "$SK_TMP/kubeconfig.down" | env -i CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS="$NETNS" CNI_IFNAME=eth0 \
		CNI_ARGS="K8S_POD_NAMESPACE=stockade-system;K8S_POD_NAME=x" "$CNI" 2>/dev/null); rc=$?
	sk_check_eq "ADD in stockade-system: exit 0 without the API server" "0 $PREV" "$rc $out"
}

t_fail_closed() {
	cni DEL wrapped >/dev/null
	local out rc
	out=$(cni ADD wrapped "$NETNS" "$SK_TMP/kubeconfig.down"); rc=$?
	sk_check_eq "API server unreachable: ADD exits 1" 1 "$rc"
	sk_check_eq "API server unreachable: error object, code 11 (try again later)" "['cniVersion', 'code', 'msg'] 11" "$(code_of <<<"$out")"
	sk_check "API server unreachable: nothing loaded" table_absent
	out=$(cni ADD noannotation); rc=$?
	sk_check_eq "wrapped pod without the annotation: ADD exits 1, code 6" "1 ['cniVersion', 'code', 'msg'] 6" "$rc $(code_of <<<"$out")"
	out=$(cni ADD nosuchpod); rc=$?
	sk_check_eq "unknown pod (404): ADD exits 1, code 3" "1 ['cniVersion', 'code', 'msg'] 3" "$rc $(code_of <<<"$out")"
	sed "s/$TOKEN/wrong-token/" "$SK_TMP/kubeconfig" >"$SK_TMP/kubeconfig.badtoken"
	out=$(cni ADD wrapped "$NETNS" "$SK_TMP/kubeconfig.badtoken"); rc=$?
	sk_check_eq "wrong token (401): ADD exits 1" 1 "$rc"
	sk_check "wrong token: the message names HTTP 401" grep -q 'HTTP 401' <<<"$out"
	sk_check "none of these loaded a table" table_absent
}

t_version_status() {
	local out
	out=$(echo '{"cniVersion":"1.0.0"}' | env -i CNI_COMMAND=VERSION "$CNI")
	sk_check_eq "VERSION lists the supported versions" \
		'{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0","1.1.0"]}' "$out"
	sk_check "STATUS with a readable kubeconfig: exit 0" bash -c "$(declare -f conf); PREV='$PREV'; conf $SK_TMP/kubeconfig | env -i CNI_COMMAND=STATUS $CNI"
	out=$(conf /nonexistent | env -i CNI_COMMAND=STATUS "$CNI" 2>/dev/null)
	sk_check_eq "STATUS without the kubeconfig: code 50" "['cniVersion', 'code', 'msg'] 50" "$(code_of <<<"$out")"
	sk_check "GC: exit 0" bash -c "echo '{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"stockade-cni\"}' | env -i CNI_COMMAND=GC $CNI"
}

# entries FILE — how many stockade-cni entries the conflist holds (-1: not readable JSON)
entries() {
	python3 -c 'import json,sys
try: print(sum(p.get("type") == "stockade-cni" for p in json.load(open(sys.argv[1]))["plugins"]))
except Exception: print(-1)' "$1"
}

# wait_entries FILE N — up to 5 s for the conflist to hold N entries
wait_entries() {
	for _ in $(seq 100); do [ "$(entries "$1")" = "$2" ] && return 0; sleep 0.05; done
	return 1
}

# The installer as the DaemonSet runs it, against a scratch node root: the binary copied, the kubeconfig
# (0600) that the plugin then uses against the API server, the entry chained into the first conflist, a
# primary CNI's rewrite undone, one entry after a second installer run, and the entry removed on SIGTERM.
t_install() {
	local H=$SK_TMP/host C=$SK_TMP/host/etc/cni/net.d rc
	rm -rf "$H"
	mkdir -p "$C" "$H/opt/cni/bin" "$SK_TMP/sa"
	printf '%s\n' "$TOKEN" >"$SK_TMP/sa/token"
	cp "$SK_TMP/ca.pem" "$SK_TMP/sa/ca.crt"
	primary() {
		printf '{"cniVersion":"0.4.0","name":"k8s","plugins":[{"type":"bridge","bridge":"cni0"},{"type":"portmap","capabilities":{"portMappings":true}},{"type":"loopback"}]}\n' >"$C/.10-k8s.tmp"
		mv "$C/.10-k8s.tmp" "$C/10-k8s.conflist"
	}
	primary
	echo '{"cniVersion":"0.4.0","name":"later","type":"ptp"}' >"$C/20-later.conf"
	local args=(install --host-root "$H" --server "https://127.0.0.1:$PORT" --ca-file "$SK_TMP/sa/ca.crt"
		--token-file "$SK_TMP/sa/token" --binary "$CNI")
	"$CNI" "${args[@]}" --uninstall 2>"$SK_TMP/install.err" &
	local pid=$!
	sk_check "install: the entry is chained into the first conflist" wait_entries "$C/10-k8s.conflist" 1
	sk_check "install: last in the chain, after loopback" python3 -c 'import json,sys
p=json.load(open(sys.argv[1]))["plugins"]; sys.exit(not (p[-2]["type"] == "loopback" and p[-1] == {"type":"stockade-cni","kubeconfig":"/var/lib/stockade/cni.kubeconfig"}))' "$C/10-k8s.conflist"
	sk_check_eq "install: the later .conf is left alone" '{"cniVersion":"0.4.0","name":"later","type":"ptp"}' "$(cat "$C/20-later.conf")"
	sk_check "install: the plugin binary is copied" cmp "$CNI" "$H/opt/cni/bin/stockade-cni"
	sk_check_eq "install: kubeconfig mode 600, outside the conf dir" 600 "$(stat -c %a "$H/var/lib/stockade/cni.kubeconfig")"
	# the plugin works with what the installer wrote: ADD of a wrapped pod through the API server
	cni DEL wrapped >/dev/null
	local out
	out=$(cni ADD wrapped "$NETNS" "$H/var/lib/stockade/cni.kubeconfig"); rc=$?
	sk_check_eq "install: ADD with the installer's kubeconfig loads the table" "0 $PREV" "$rc $out"
	cni DEL wrapped >/dev/null
	# the primary CNI rewrites its file (write temp + rename): the entry comes back, once
	primary
	sk_check "install: re-inserted after the primary's rewrite" wait_entries "$C/10-k8s.conflist" 1
	primary
	sk_check "install: re-inserted after a second rewrite" wait_entries "$C/10-k8s.conflist" 1
	"$CNI" "${args[@]}" --once 2>>"$SK_TMP/install.err"
	sk_check_eq "install --once again: exit 0, still one entry" "0 1" "$? $(entries "$C/10-k8s.conflist")"
	kill -TERM "$pid"
	wait "$pid"; rc=$?
	sk_check_eq "install: SIGTERM ends the watch, exit 0" 0 "$rc"
	sk_check_eq "install --uninstall: the entry is removed on SIGTERM" 0 "$(entries "$C/10-k8s.conflist")"
	# a primary that writes a single-plugin .conf: made a .conflist, the .conf removed
	rm -f "$C"/*
	echo '{"cniVersion":"0.4.0","name":"net","type":"ptp","ipam":{"type":"host-local"}}' >"$C/05-ptp.conf"
	"$CNI" "${args[@]}" --once 2>>"$SK_TMP/install.err"
	sk_check_eq "install --once on a .conf: exit 0, one entry in 05-ptp.conflist" "0 1" "$? $(entries "$C/05-ptp.conflist")"
	sk_check "install: the .conf is gone" test ! -e "$C/05-ptp.conf"
	# no configuration at all: --once fails with a reason
	rm -f "$C"/*
	"$CNI" "${args[@]}" --once 2>"$SK_TMP/install1.err"; rc=$?
	sk_check_eq "install --once without a configuration: exit 1" 1 "$rc"
	sk_check "install: the reason names the directory" grep -q 'holds no .conf, .conflist or .json file yet' "$SK_TMP/install1.err"
}

# validate [UID] — stockade-sidecar validate in the pod's netns as UID (the agent's), no capability, the
# marker to $SK_TMP/v.marker; stdout+stderr is its output
validate() {
	ip netns exec "$N-pod" setpriv --reuid="${1:-$SK_AGENT_UID}" --regid="${1:-$SK_AGENT_UID}" --clear-groups \
		--inh-caps=-all "$SK_BIN/stockade-sidecar" validate --policy "$SK_TMP/policy.yaml" \
		--marker "$SK_TMP/vm/v.marker" --timeout-ms 2000 2>&1
}

# CNI mode's stockade-validate init container: as the agent UID without a capability it proves the
# redirect by behaviour (TCP and DNS probes to TEST-NET-1 arriving at its own listeners with their original
# destination) and the plugin's lo marker carries the policy's netns hash; fails with one line when the
# plugin did not run, when another UID runs it, when the table is not the plugin's, when the hash differs.
t_validate() {
	local out rc
	cni DEL wrapped >/dev/null
	# the pod's emptyDir the validator writes the marker into (the agent's, as its securityContext.fsGroup)
	rm -rf "$SK_TMP/vm"
	install -d -o "$SK_AGENT_UID" -m 700 "$SK_TMP/vm"
	out=$(validate); rc=$?
	sk_check_eq "validate without the plugin's ADD: exit 1" 1 "$rc"
	sk_check_eq "validate without the plugin's ADD: one line" 1 "$(wc -l <<<"$out")"
	sk_check "validate without the plugin's ADD: says the redirect is missing" \
		grep -Eq '^stockade-validate: FAIL: TCP to 192.0.2.1:[0-9]+ did not arrive at 127.0.0.1:15001 within 2000 ms: no stockade redirect in this netns$' <<<"$out"
	sk_check "validate without the plugin's ADD: no marker written" test ! -e "$SK_TMP/vm/v.marker"
	cni ADD wrapped >/dev/null
	out=$(validate); rc=$?
	sk_check_eq "validate after the plugin's ADD: exit 0" 0 "$rc"; [ "$rc" = 0 ] || echo "$out"
	sk_check "validate after ADD: says what it proved" grep -q '^stockade-validate: ok: TCP and DNS redirected' <<<"$out"
	# the marker the sidecar's /readyz reads: the hash stockade-init writes for the same policy
	ip netns exec "$REF-pod" "$INIT" --policy "$SK_TMP/policy.yaml" --marker "$SK_TMP/ref.marker" --force 2>>"$SK_TMP/init.err"
	sk_check_eq "validate: its marker's hash and rule count are stockade-init's" \
		"$(grep -E '^(hash|rules|sets|elements)=' "$SK_TMP/ref.marker")" "$(grep -E '^(hash|rules|sets|elements)=' "$SK_TMP/vm/v.marker")"
	# the sidecar binds its ports right after: nothing of the validator's is left on them (no SO_REUSEADDR here)
	sk_check "validate: ports 15001, 15080 (TCP) and 15053 (UDP) free right after" ip netns exec "$N-pod" python3 -c '
import socket
t = socket.socket(); t.bind(("127.0.0.1", 15001)); t.listen()
a = socket.socket(); a.bind(("0.0.0.0", 15080)); a.listen()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 15053))'
	out=$(validate "$SK_SIDECAR_UID"); rc=$?
	sk_check_eq "validate as another UID: exit 1" 1 "$rc"
	sk_check "validate as another UID: names the agent uid" grep -q "runs as uid $SK_SIDECAR_UID, not the policy's agent uid $SK_AGENT_UID" <<<"$out"
	ip -n "$N-pod" link set lo alias "stockade hash=0123456789abcdef rules=1 sets=6 elements=0"
	out=$(validate); rc=$?
	sk_check_eq "validate with another policy's marker: exit 1" 1 "$rc"
	sk_check "validate with another policy's marker: says so" grep -q 'the node loaded another policy' <<<"$out"; grep -q "the node loaded another policy" <<<"$out" || echo "$out"
	out=$(cni CHECK wrapped); rc=$?
	sk_check "CHECK with another policy's marker: fails" grep -q "lo's marker says netns hash 0123456789abcdef" <<<"$out"
	# a table loaded by someone other than the plugin (no marker): the redirect works, the marker is missing
	cni DEL wrapped >/dev/null
	sk_check_eq "DEL clears lo's marker" "" "$(ip -n "$N-pod" -o link show lo | grep -o 'alias.*')"
	ip netns exec "$N-pod" "$INIT" --policy "$SK_TMP/policy.yaml" --force 2>>"$SK_TMP/init.err"
	out=$(validate); rc=$?
	sk_check_eq "validate with stockade-init's table but no plugin marker: exit 1" 1 "$rc"
	sk_check "validate without the marker: says lo has no alias" grep -q 'lo has no alias' <<<"$out"
	cni DEL wrapped >/dev/null
}

# A wrapped pod without the annotation (stockade-injector's): the policy of the ConfigMap its stockade-policy
# volume mounts, GET from the API server, gives the same table; a missing ConfigMap or one without
# policy.yaml fails ADD with the error object and loads nothing.
t_configmap() {
	cni DEL wrapped >/dev/null
	local out rc
	out=$(cni ADD injected); rc=$?
	sk_check_eq "ADD of a pod with the policy in its volume's ConfigMap: exit 0, prevResult" "0 $PREV" "$rc $out"
	ruleset "$N-pod" >"$SK_TMP/cm.nft"
	sk_check "ADD via the ConfigMap: nft list ruleset equals stockade-init's for the same policy" \
		diff -u "$SK_TMP/ref.nft" "$SK_TMP/cm.nft"
	sk_check "ADD via the ConfigMap: CHECK passes" cni CHECK injected
	cni DEL injected >/dev/null
	out=$(cni ADD injected-nocm); rc=$?
	sk_check_eq "ConfigMap missing: ADD exits 1, code 3" "1 ['cniVersion', 'code', 'msg'] 3" "$rc $(code_of <<<"$out")"
	sk_check "ConfigMap missing: the message names it" grep -q 'configmaps/missing-policy: HTTP 404' <<<"$out"
	out=$(cni ADD injected-badcm); rc=$?
	sk_check_eq "ConfigMap without policy.yaml: ADD exits 1, code 6" "1 ['cniVersion', 'code', 'msg'] 6" "$rc $(code_of <<<"$out")"
	sk_check "none of these loaded a table" table_absent
}

SK_CASES=(add add_again check del untouched fail_closed version_status configmap install validate)
sk_main "$@"
