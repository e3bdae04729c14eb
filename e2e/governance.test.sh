#!/usr/bin/env bash
# e2e/governance.test.sh — cluster guardrails through the real init and sidecar: a policy in
# force before a guardrail changed is narrowed at the reload the guardrails file's change causes (the name
# the guardrail denies answered NXDOMAIN and its connections denied, the others untouched, one guardrail
# audit line), and guardrails that do not load are refused with the narrowed policy kept. One test address
# S serves every name (e2e/budget/servers.py: plain HTTP on :80 and DNS). Root (network namespaces).
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skgov
PY=/usr/bin/python3
S4=198.18.1.170

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
# get HOST — the HTTP status the agent's curl saw (000: no connection); --resolve: not through the filter
get() { agent timeout 20 curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://$1/" 2>>"$SK_TMP/curl.err"; }
get_direct() { agent timeout 20 curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --resolve "$1:80:$S4" "http://$1/" 2>>"$SK_TMP/curl.err"; }
dig_status() { agent dig +tries=1 +time=5 "$1" A @"$SK_NET_IP4" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }
# put_guardrails TEXT — replaces the guardrails file in one rename, as the kubelet's atomic writer does
put_guardrails() { printf '%s' "$1" >"$GDIR/g.tmp" && chmod 644 "$GDIR/g.tmp" && mv -f "$GDIR/g.tmp" "$GDIR/guardrails.yaml"; }
# wait_reloads N — until the sidecar has logged N reload outcomes (in force or rejected), at most 10 s
reloads() { grep -c 'reload ([^)]*)\(: policy .* in force\| rejected\)' "$SK_TMP/sidecar.err"; }
wait_reloads() { local _; for _ in $(seq 100); do [ "$(reloads)" -ge "$1" ] && return 0; sleep 0.1; done; return 1; }
aq() { "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/audit.log" "$@"; }

setup() {
	sk_require_root
	exec 9>"/tmp/$NS.lock"
	flock -w 240 9 || { echo "another $NS run holds /tmp/$NS.lock"; echo "0 passed, 1 failed"; exit 1; }
	sk_tmp skgov
	GDIR=$SK_TMP/guardrails
	mkdir -p "$GDIR" && chmod 755 "$GDIR"
	put_guardrails $'version: 1\n'
	sk_policy "$SK_TMP/policy.yaml" enforce <<POL
egress:
  - host: paste.example
    ports: [80]
  - host: ok.example
    ports: [80]
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
POL
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	sk_net_add_ip "$NS" "$S4"
	sk_inet "$NS" "$PY" "$SK_ROOT/e2e/budget/servers.py" --log "$SK_TMP/servers.ndjson" --http "$S4:80" \
		--dns "$SK_NET_IP4:53" --zone "paste.example=$S4" --zone "ok.example=$S4" >"$SK_TMP/servers.log" 2>&1 &
	disown $!
	sk_wait_port "$NS-net" tcp 80 10 || { echo "test servers did not start"; cat "$SK_TMP/servers.log"; exit 1; }
	sk_pod_up "$NS" "$SK_TMP/policy.yaml" "STOCKADE_GUARDRAILS=$GDIR/guardrails.yaml"
	disown "$SK_SIDECAR_PID"
}

t_narrow_on_reload() {
	sk_check_eq "before: paste.example is allowed" 200 "$(get paste.example)"
	local n
	n=$(reloads)
	put_guardrails $'version: 1\ndeniedHosts: [paste.example]\n'
	sk_check "a change of the guardrails file alone reloads the policy" wait_reloads $((n + 1))
	sk_check "... and it is in force" grep -q 'reload (file changed): policy .* in force (1 rules' "$SK_TMP/sidecar.err"
	sk_check "the narrowing is logged with the guardrail" grep -q "narrowed: $SK_TMP/policy.yaml:[0-9]*:[0-9]*: egress\[0\]: host paste.example allows paste.example, denied by guardrail $GDIR/guardrails.yaml:2:15 deniedHosts\[0\]: rule removed" "$SK_TMP/sidecar.err"
	sk_check_eq "one guardrail audit line, reason narrowed" 1 "$(aq event=guardrail reason=narrowed)"
	sk_check_eq "after: the filter answers NXDOMAIN for paste.example" NXDOMAIN "$(dig_status paste.example)"
	sk_check_eq "after: a connection to paste.example is denied (403)" 403 "$(get_direct paste.example)"
	sk_check_eq "... audited no_match" 1 "$(aq event=deny name=paste.example reason=no_match)"
	sk_check_eq "ok.example is untouched" 200 "$(get ok.example)"
}

t_invalid_guardrails_keep_the_narrowed_policy() {
	put_guardrails $'version: 1\ndeniedHosts: [paste.example]\n'
	sleep 0.6   # run alone, that is a change: let its reload land before counting
	local n
	n=$(reloads)
	put_guardrails $'version: 1\ndeniedHost: [ok.example]\n'
	sk_check "guardrails that do not load: the reload is rejected" wait_reloads $((n + 1))
	sk_check "... saying why" grep -q "rejected: guardrails $GDIR/guardrails.yaml: invalid" "$SK_TMP/sidecar.err"
	sk_check_eq "... audited guardrails_invalid" 1 "$(aq event=reload reason=guardrails_invalid)"
	sk_check_eq "the narrowed policy stays: paste.example still denied" 403 "$(get_direct paste.example)"
	sk_check_eq "and ok.example allowed" 200 "$(get ok.example)"
}

SK_CASES=(narrow_on_reload invalid_guardrails_keep_the_narrowed_policy)
sk_main "$@"
