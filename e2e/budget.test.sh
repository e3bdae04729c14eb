#!/usr/bin/env bash
# e2e/budget.test.sh — exfiltration budgets through the real init and sidecar. One test
# address S serves every name below (plain HTTP on :80, e2e/budget/servers.py, which counts every byte
# each connection brought it), and a DNS server answers for the names and for a wildcard zone:
#   1 sent: 10Mi per 4 s on up.example: an 11 MiB upload is cut at <= 10 MiB (and > 9 MiB: not early), the
#     next connection gets 403 budget_exhausted, other.example is unaffected, after the window up.example
#     works again; /denials and /metrics show it
#   2 received: 1Mi on down.example: a 5 MiB download is cut at 1 MiB, then 403
#   3 connections: 2 on conn.example: the third connection gets 403
#   4 queries: 5 under *.zone.example: the sixth new name gets REFUSED and never reaches the upstream
#   5 mode audit (reload): an upload past the budget goes through whole, one would_deny line says so
#   6 the sidecar's own resolution (curl --resolve: a name the agent never asked the filter for) under
#     *.side.example (queries: 2): charged to the same budget (two connections pass, the third gets 403
#     and its name never reaches the upstream), held to dns.maxQueryLength (40), each refusal audited
#     with the agent's dns line (src null); the agent's own query is then REFUSED too
# Only the test addresses below (in the internet netns) and loopback are ever contacted.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skbudget
HERE=$SK_ROOT/e2e/budget
PY=/usr/bin/python3
S4=198.18.1.160
MI=1048576

# write_policy FILE MODE
write_policy() {
	sk_policy "$1" "$2" <<POL
egress:
  - host: up.example
    ports: [80]
    budget: { sent: 10Mi, window: 4s }
  - host: other.example
    ports: [80]
  - host: down.example
    ports: [80]
    budget: { received: 1Mi, window: 1m }
  - host: conn.example
    ports: [80]
    budget: { connections: 2, window: 1m }
  - host: "*.zone.example"
    ports: [80]
    budget: { queries: 5, window: 1m }
  - host: audit.example
    ports: [80]
    budget: { sent: 1Mi, window: 1m }
  - host: "*.side.example"
    ports: [80]
    budget: { queries: 2, window: 1m }
dns:
  upstream: ["$SK_NET_IP4"]
  maxQueryLength: 40
blockPrivate: true
loopback: allow
POL
}

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
MARK=0 SMARK=0
mark() { MARK=$(wc -l <"$SK_TMP/audit.log"); SMARK=$(wc -l <"$SRVLOG"); }
settle() { sleep 0.3; }
aq() { tail -n +$((MARK + 1)) "$SK_TMP/audit.log" >"$SK_TMP/slice.ndjson"; "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/slice.ndjson" "$@"; }
sq() { tail -n +$((SMARK + 1)) "$SRVLOG" >"$SK_TMP/sslice.ndjson"; "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/sslice.ndjson" "$@"; }
# srv_received HOST — bytes the server got on the connections for HOST since the mark, one per line
srv_received() {
	tail -n +$((SMARK + 1)) "$SRVLOG" | "$PY" -c 'import json,sys
for l in sys.stdin:
    o = json.loads(l)
    if o.get("kind") == "http" and o.get("host") == sys.argv[1]: print(o["received"])' "$1"
}
# upload HOST FILE — prints the HTTP status curl saw (000 when the connection broke)
upload() { agent timeout 30 curl -sS --max-time 20 -H 'Expect:' -o /dev/null -w '%{http_code}' --data-binary "@$2" "http://$1/up" 2>>"$SK_TMP/curl.err"; }
get() { agent timeout 30 curl -sS --max-time 20 -o "${2:-/dev/null}" -w '%{http_code}' "http://$1${3:-/}" 2>>"$SK_TMP/curl.err"; }
admin() { sk_pod "$NS" curl -sS --max-time 5 "http://127.0.0.1:15000$1"; }
dig_status() { agent dig +tries=1 +time=5 "$1" A @"$SK_NET_IP4" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }
between() { [ "$2" -le "$1" ] && [ "$1" -le "$3" ]; }
no_other() { ! grep -q 'other\.example' <<<"$metrics"; }   # in the last /metrics read
last_reload_ok() { grep 'reload (' "$SK_TMP/sidecar.err" | tail -1 | grep -v rejected | grep -q ': policy .* in force'; }
reloads() { grep -c 'reload (.*): \(policy .* in force\|rejected\)' "$SK_TMP/sidecar.err"; }

setup() {
	sk_require_root
	exec 9>"/tmp/$NS.lock"
	flock -w 240 9 || { echo "another $NS run holds /tmp/$NS.lock"; echo "0 passed, 1 failed"; exit 1; }
	sk_tmp skbudget
	SRVLOG=$SK_TMP/servers.ndjson
	POLICY=$SK_TMP/policy.yaml
	write_policy "$POLICY" enforce

	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	sk_net_add_ip "$NS" "$S4"
	srv=(--log "$SRVLOG" --http "$S4:80" --dns "$SK_NET_IP4:53")
	for n in up.example other.example down.example conn.example audit.example zone.example side.example; do srv+=(--zone "$n=$S4"); done
	sk_inet "$NS" "$PY" "$HERE/servers.py" "${srv[@]}" >"$SK_TMP/servers.log" 2>&1 &
	disown $!
	sk_wait_port "$NS-net" tcp 80 10 || { echo "test servers did not start"; cat "$SK_TMP/servers.log"; exit 1; }

	sk_pod_up "$NS" "$POLICY"
	disown "$SK_SIDECAR_PID"   # the EXIT trap kills it; no job notice for that

	head -c $((11 * MI)) /dev/urandom >"$SK_TMP/11m"
	head -c $((3 * MI)) /dev/urandom >"$SK_TMP/3m"
	head -c $((1 * MI)) /dev/urandom >"$SK_TMP/1m"
	chmod 644 "$SK_TMP"/11m "$SK_TMP"/3m "$SK_TMP"/1m
	AGENT_DIR=$SK_TMP/agent   # where the agent may write
	mkdir -p "$AGENT_DIR" && chown "$SK_AGENT_UID:$SK_AGENT_UID" "$AGENT_DIR"
}

# --- 1. sent ---
t_sent() {
	mark
	T0=$SECONDS
	code=$(upload up.example "$SK_TMP/11m")
	settle
	got=$(srv_received up.example)
	sk_check "1: the 11 MiB upload is cut (curl: $code)" test "$code" != 200
	sk_check "1: the server got at most 10 MiB and more than 9 MiB ($got bytes)" between "${got:-0}" $((9 * MI + 1)) $((10 * MI))
	sk_check_eq "1: one deny line budget_exhausted for the cut relay" 1 \
		"$(aq event=deny decision=deny reason=budget_exhausted name=up.example proto=http)"
	mark
	code=$(get up.example)
	settle
	sk_check_eq "1: the next connection to up.example is refused with 403" 403 "$code"
	sk_check_eq "1: ... audited budget_exhausted" 1 "$(aq event=deny decision=deny reason=budget_exhausted name=up.example)"
	sk_check_eq "1: ... and never reached the server" 0 "$(sq kind=http host=up.example)"
	mark
	code=$(upload other.example "$SK_TMP/11m")
	settle
	sk_check_eq "1: another host takes a whole 11 MiB upload" 200 "$code"
	sk_check_eq "1: ... the server got all of it" 1 "$(sq kind=http host=other.example complete=True)"
	sk_check "1: /denials lists the budget_exhausted denial" grep -q '"reason":"budget_exhausted"' <<<"$(admin /denials)"
	metrics=$(admin /metrics)
	sk_check "1: /metrics shows the bytes sent under up.example's rule" \
		grep -qE '^stockade_budget_used\{rule="0",rule_text="host up.example ports \[80\]",kind="sent"\} 10485760$' <<<"$metrics"
	sk_check "1: /metrics shows nothing left" \
		grep -qE '^stockade_budget_remaining\{rule="0",rule_text="host up.example ports \[80\]",kind="sent"\} 0$' <<<"$metrics"
	sk_check "1: /metrics has no series for a rule without a budget" no_other
	# the window (4 s) began with the first connection
	left=$((T0 + 5 - SECONDS))
	[ "$left" -le 0 ] || sleep "$left"
	mark
	code=$(upload up.example "$SK_TMP/1m")
	settle
	sk_check_eq "1: after the window up.example takes an upload again" 200 "$code"
	sk_check_eq "1: ... whole" 1 "$(sq kind=http host=up.example complete=True)"
}

# --- 2. received ---
t_received() {
	mark
	code=$(get down.example "$AGENT_DIR/down.out" "/big?n=$((5 * MI))")
	settle
	size=$(stat -c %s "$AGENT_DIR/down.out" 2>/dev/null || echo 0)
	sk_check "2: the 5 MiB download is cut (curl: $code)" test "$code" != 200 -o "$size" -lt $((5 * MI))
	# the server's head is 63 bytes ("HTTP/1.1 200 OK", Content-Length: 5242880, Connection: close)
	sk_check_eq "2: the agent got exactly 1 MiB, head included" $((MI - 63)) "$size"
	sk_check_eq "2: one deny line budget_exhausted" 1 "$(aq event=deny decision=deny reason=budget_exhausted name=down.example)"
	mark
	sk_check_eq "2: the next connection to down.example is refused with 403" 403 "$(get down.example)"
}

# --- 3. connections ---
t_connections() {
	mark
	c1=$(get conn.example) c2=$(get conn.example) c3=$(get conn.example)
	settle
	sk_check_eq "3: two connections pass, the third gets 403" "200 200 403" "$c1 $c2 $c3"
	sk_check_eq "3: the third is audited budget_exhausted" 1 "$(aq event=deny decision=deny reason=budget_exhausted name=conn.example)"
	sk_check_eq "3: the server saw two" 2 "$(sq kind=http host=conn.example)"
}

# --- 4. DNS queries under a wildcard ---
t_dns_queries() {
	mark
	st=""
	for i in 1 2 3 4 5 6; do st="$st $(dig_status "q$i.zone.example")"; done
	settle
	sk_check_eq "4: five new names resolve, the sixth is REFUSED" " NOERROR NOERROR NOERROR NOERROR NOERROR REFUSED" "$st"
	sk_check_eq "4: the sixth never reached the upstream" 0 "$(sq kind=dns name=q6.zone.example)"
	sk_check_eq "4: the first five did" 5 "$(sq kind=dns name~q)"
	sk_check_eq "4: one dns deny line budget_exhausted" 1 "$(aq event=dns decision=deny reason=budget_exhausted name=q6.zone.example)"
	sk_check_eq "4: a name outside the budget's rule still resolves" NOERROR "$(dig_status other.example)"
}

# --- 6. the sidecar's own resolution goes through the same filter ---
# fget NAME — an HTTP GET to NAME at S4 that the agent resolved itself: the name is not bound to S4, so the
# sidecar resolves it
fget() { agent timeout 30 curl -sS --max-time 20 --resolve "$1:80:$S4" -o /dev/null -w '%{http_code}' "http://$1/" 2>>"$SK_TMP/curl.err"; }
t_fallback_queries() {
	mark
	long=$(printf 'x%.0s' $(seq 30)).side.example   # 43 characters: over maxQueryLength 40
	code=$(fget "$long")
	settle
	sk_check_eq "6: a name over dns.maxQueryLength, resolved by the sidecar: 403" 403 "$code"
	sk_check_eq "6: ... its question never reached the upstream" 0 "$(sq kind=dns name="$long")"
	sk_check_eq "6: ... one dns line too_long, src null" 1 "$(aq event=dns decision=deny reason=too_long name="$long" src=None)"
	sk_check_eq "6: ... and the connection's deny, binding unresolved" 1 \
		"$(aq event=deny decision=deny reason=sni_ip_mismatch binding=unresolved name="$long")"
	mark
	c1=$(fget f1.side.example) c2=$(fget f2.side.example) c3=$(fget f3.side.example)
	settle
	sk_check_eq "6: two names resolved by the sidecar pass, the third (past queries: 2) gets 403" "200 200 403" "$c1 $c2 $c3"
	sk_check_eq "6: ... the first two were asked upstream (the sidecar resolved them)" 2 \
		"$(sq kind=dns name@f1.side.example,f2.side.example)"
	sk_check_eq "6: ... the third never reached the upstream" 0 "$(sq kind=dns name=f3.side.example)"
	sk_check_eq "6: ... one dns line budget_exhausted, src null" 1 \
		"$(aq event=dns decision=deny reason=budget_exhausted name=f3.side.example src=None)"
	sk_check_eq "6: ... the connection's deny, binding unresolved" 1 \
		"$(aq event=deny decision=deny binding=unresolved name=f3.side.example)"
	sk_check_eq "6: the agent's own query under the same rule is REFUSED: one budget" REFUSED "$(dig_status f4.side.example)"
}

# --- 5. mode audit: reported, never cut ---
t_audit_mode() {
	# down.example's received budget spent before the reload (case 2 spends it too; a second spend is refused)
	get down.example /dev/null "/big?n=$((2 * MI))" >/dev/null
	r0=$(reloads)
	write_policy "$POLICY" audit
	mark
	kill -HUP "$SK_SIDECAR_PID"
	for _ in $(seq 50); do [ "$(reloads)" -gt "$r0" ] && break; sleep 0.1; done
	sleep 0.3
	sk_check "5: the sidecar reloaded into mode audit" last_reload_ok
	code=$(upload audit.example "$SK_TMP/3m")
	settle
	sk_check_eq "5: an upload past the 1 MiB budget goes through whole" 200 "$code"
	sk_check_eq "5: ... the server got all of it" 1 "$(sq kind=http host=audit.example complete=True)"
	sk_check_eq "5: one would_deny line budget_exhausted" 1 "$(aq event=deny decision=would_deny reason=budget_exhausted name=audit.example)"
	sk_check_eq "5: no deny line" 0 "$(aq decision=deny name=audit.example)"
	# counters survive the reload: down.example is still spent, so audit mode reports the next connection
	code=$(get down.example)
	settle
	sk_check_eq "5: a spent budget kept across the reload: down.example passes in audit mode" 200 "$code"
	sk_check "5: ... as would_deny budget_exhausted" test "$(aq decision=would_deny reason=budget_exhausted name=down.example)" -ge 1
}

SK_CASES=(sent received connections dns_queries fallback_queries audit_mode)
sk_main "$@"
