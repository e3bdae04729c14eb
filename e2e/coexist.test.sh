#!/usr/bin/env bash
# e2e/coexist.test.sh — stockade beside a service mesh in one pod (docs/compatibility.md, "With a service
# mesh"): a mesh's redirect is installed as istio-iptables or linkerd's proxy-init installs it (a nat
# OUTPUT chain at priority -100 sending every TCP connection but its own proxy's UID to its proxy port),
# before stockade-init runs, so the registration order is the worst one. stockade's nat chain sits one
# below (-101): the agent's connections still come to the sidecar first, the sidecar's own connections
# out go through the mesh's proxy (the mesh keeps its mTLS and telemetry for them), and nothing the
# policy denies ever reaches the mesh. Needs root.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skcoex
PY=/usr/bin/python3
# linkerd's numbers (proxy UID 2102, outbound port 4140): Istio's (1337, 15001, 15000) are stockade's
# defaults, which an Istio pod must move (docs/compatibility.md)
MESH_UID=2102 MESH_PORT=4140
OK4=198.18.1.10 NO4=198.18.1.20

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
mesh_seen() { grep -cxF -- "$1" "$SK_TMP/mesh.log"; }

setup() {
	sk_require_root
	sk_tmp skcoex
	# the mesh's proxy is exempt: its connections out are the agent's, already decided by the sidecar;
	# loopback denied to the agent: the mesh's listeners (Envoy's admin, its outbound port) are not its
	sk_policy policy.yaml <<POL
exemptUids: [$MESH_UID]
loopback: deny
egress:
  - host: allowed.example
    ports: [80]
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
POL
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	sk_net_add_ip "$NS" "$OK4"
	sk_net_add_ip "$NS" "$NO4"
	mkdir -p "$SK_TMP/www"
	echo ok >"$SK_TMP/www/ok"
	sk_inet "$NS" "$PY" "$SK_ROOT/e2e/proxy/servers.py" --files "$SK_TMP/www" --http "$OK4:80" --http "$NO4:80" \
		--dns "$SK_NET_IP4:53" --record "allowed.example=$OK4" --record "denied.example=$NO4" >"$SK_TMP/servers.log" 2>&1 &
	sk_wait_port "$NS-net" udp 53 10 || { echo "test servers did not start"; exit 1; }
	# the mesh, first: its redirect (what istio-iptables writes through iptables-nft) and its proxy
	sk_pod "$NS" nft -f - <<NFT || { echo "mesh table setup failed"; exit 1; }
table ip mesh {
	chain output {
		type nat hook output priority -100; policy accept;
		meta skuid $MESH_UID return
		ip daddr 127.0.0.0/8 return
		meta l4proto tcp redirect to :$MESH_PORT
	}
}
NFT
	: >"$SK_TMP/mesh.log"
	chmod 666 "$SK_TMP/mesh.log"
	sk_pod_as "$NS" "$MESH_UID" "$PY" "$SK_ROOT/e2e/coexist/mesh_proxy.py" "$MESH_PORT" "$SK_TMP/mesh.log" \
		>"$SK_TMP/mesh.out" 2>&1 &
	sk_wait_port "$NS-pod" tcp "$MESH_PORT" 10 || { echo "mesh proxy did not start"; cat "$SK_TMP/mesh.out"; exit 1; }
	sk_pod_up "$NS" "$SK_TMP/policy.yaml"
}

t_both_chains() {
	local rs
	rs=$(sk_pod "$NS" nft list ruleset)
	sk_check "the mesh's nat chain is in place at -100" grep -q 'type nat hook output priority -100; policy accept;' <<<"$rs"
	sk_check "stockade's nat chain is at -101, before it" grep -q 'type nat hook output priority -101; policy accept;' <<<"$rs"
}

t_agent_through_sidecar_then_mesh() {
	sk_check_eq "an allowed request passes" ok "$(agent curl -fsS --max-time 10 http://allowed.example/ok 2>&1)"
	sk_check_eq "the sidecar's connection out went through the mesh's proxy" 1 "$(mesh_seen "$OK4:80")"
	sk_check "the sidecar decided it (its allow line)" grep -q '"name":"allowed.example".*"decision":"allow"' "$SK_TMP/audit.log"
}

t_denied_never_reaches_mesh() {
	sk_check_fails "a name the policy does not allow is refused" agent curl -fsS --max-time 10 http://denied.example/ok
	sk_check_fails "so is its address, asked directly" agent curl -fsS --max-time 10 "http://$NO4/ok"
	sk_check_eq "the mesh's proxy never saw a connection to it" 0 "$(mesh_seen "$NO4:80")"
	sk_check "the sidecar's deny line for it" grep -q '"decision":"deny"' "$SK_TMP/audit.log"
}

t_agent_cannot_use_mesh_port() {
	local before
	before=$(grep -c . "$SK_TMP/mesh.log")
	agent "$PY" -c "
import socket
s = socket.create_connection(('127.0.0.1', $MESH_PORT), timeout=3)
s.sendall(b'GET /ok HTTP/1.0\\r\\nHost: allowed.example\\r\\n\\r\\n')
print(s.recv(100))" >"$SK_TMP/loop.out" 2>&1
	sleep 0.3
	sk_check_eq "with loopback: deny the agent's connection to the mesh's port never reaches the mesh's proxy" \
		"$before" "$(grep -c . "$SK_TMP/mesh.log")"
	sk_check "... it went to the sidecar, which denied it (its line names 127.0.0.1:$MESH_PORT)" \
		grep -q '"dst":"127.0.0.1:'"$MESH_PORT"'".*"decision":"deny"' "$SK_TMP/audit.log"
}

t_mesh_uid_untouched() {
	sk_check_eq "the mesh's own UID (exempt) is neither redirected nor filtered by stockade" ok \
		"$(sk_pod_as "$NS" "$MESH_UID" curl -sS --max-time 10 "http://$OK4/ok" 2>&1)"
}

SK_CASES=(both_chains agent_through_sidecar_then_mesh denied_never_reaches_mesh agent_cannot_use_mesh_port mesh_uid_untouched)
sk_main "$@"
