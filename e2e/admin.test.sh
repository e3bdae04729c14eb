#!/usr/bin/env bash
# Admin port, readiness, hot reload and drain of stockade-sidecar (issue 7), in a netns pod:
#   every endpoint's status codes and bodies (/metrics checked by prometheus_client's parser), 405/400/431,
#   a slow request cut off, /readyz reaching 200 with everything present (policy, proxy and DNS listening,
#   the init's marker hash equal, the upstream resolver answering) and flipping to 503 naming what is
#   missing when the marker is removed or changed and when the upstream resolver goes silent, and back;
#   the unmet condition's reason ("dns_upstream unreachable ADDR:53") in /readyz's body and logged once;
#   a ConfigMap-style `..data` symlink swap reloading the policy while a proxied transfer stays open, bad
#   and netns-changing reloads refused (old policy kept), SIGHUP, /healthz failing while the loop is
#   blocked, and SIGTERM draining an open transfer before exit 0; `stockade-policy status` summarising the
#   three endpoints (ready or the unmet reason, the policy's hash, the last denials; exit 0/1/5).
# The real stockade-init programs the pod netns (and writes the marker); dnsmasq in the internet netns is
# the pod's resolver, reached by the agent through the init's redirect to the sidecar's DNS filter.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
N=skadmin
PY=/usr/bin/python3   # Debian's python, which has python3-prometheus-client (a pyenv shim may not)
SIDECAR=$SK_BIN/stockade-sidecar
SRV_IP=198.18.1.10
ADMIN=http://127.0.0.1:15000

# get PATH [curl args...] → "STATUS BODY" ; hdr PATH [args] → headers
get() { local p=$1; shift; sk_pod "$N" curl -s -m 5 -w '\n%{http_code}' "$@" "$ADMIN$p"; }
status() { get "$@" | tail -1; }
body() { get "$@" | sed '$d'; }
metric() { # metric NAME{LABELS} → value (exact sample match)
	body /metrics | awk -v k="$1" '$1 == k { print $2 }'
}

# The pod's resolver (pod resolv.conf → 198.18.0.1): stopped and started again to flip readiness.
start_dnsmasq() {
	ip netns exec "$N-net" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces \
		--listen-address="$SK_NET_IP4" --port=53 --host-record=allowed.example,$SRV_IP \
		--host-record=second.example,$SRV_IP >/dev/null 2>&1 &
	DNSMASQ_PID=$!
	sk_wait_port "$N-net" udp 53 5
}

# The policy, as a ConfigMap volume holds it (cm_swap).
policy_v1='version: 1
egress:
  - host: allowed.example
    ports: [80]
'
policy_v2="${policy_v1}  - host: second.example
    ports: [80]
"
policy_bad="${policy_v1}  - host: bad..example
    ports: [80]
"
policy_netns="${policy_v1}ports: { proxy: 16001 }
"

# cm_swap STAMP CONTENT — kubelet's atomic writer: new dir, temp symlink renamed over ..data, old dir gone.
cm_swap() {
	local old
	old=$(readlink "$CM/..data" 2>/dev/null || true)
	mkdir "$CM/$1" && printf '%s' "$2" >"$CM/$1/policy.yaml"
	ln -s "$1" "$CM/..data_tmp" && mv -T "$CM/..data_tmp" "$CM/..data"
	[ -z "$old" ] || rm -rf "${CM:?}/$old"
	chmod -R a+rX "$CM"
}

parse_metrics() {
	body /metrics | "$PY" -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
need = ["stockade_connections", "stockade_connections_active", "stockade_bytes", "stockade_dns_queries",
        "stockade_decision_latency_seconds", "stockade_policy_reloads", "stockade_policy_info", "stockade_build_info",
        "stockade_reload_last_timestamp_seconds", "stockade_reload_last_success",
        "process_cpu_seconds", "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
        "process_max_fds", "process_start_time_seconds"]
missing = [n for n in need if n not in fams]
assert not missing, missing
assert fams["stockade_decision_latency_seconds"].type == "histogram"
assert fams["process_cpu_seconds"].type == "counter"
v = {n: fams[n].samples[0].value for n in need if n.startswith("process_") or n.startswith("stockade_reload_last")}
import time
# the sidecar holds its listeners, epoll, timers, inotify: more than a handful of fds, far under the limit
assert 8 <= v["process_open_fds"] < v["process_max_fds"], v
assert v["process_resident_memory_bytes"] > 1 << 20, v
assert time.time() - 600 < v["process_start_time_seconds"] <= time.time() + 1, v
assert v["stockade_reload_last_success"] == 1, v
assert abs(v["stockade_reload_last_timestamp_seconds"] - v["process_start_time_seconds"]) < 5, v
print(len(fams))'
}

# raw PAYLOAD SECONDS — send PAYLOAD (escapes decoded) to the admin port; prints "STATUS-LINE|SECONDS".
raw() { sk_pod "$N" "$PY" - "$@" <<'EOF'
import socket, sys, time
payload, wait = sys.argv[1].encode().decode("unicode_escape").encode("latin-1"), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", 15000)); t0 = time.time()
s.sendall(payload); s.settimeout(wait)
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        data += b
except socket.timeout: pass
line = data.split(b"\r\n", 1)[0].decode("latin-1")
print("%s|%.1f" % (line, time.time() - t0))
EOF
}

ready_missing() { body /readyz | "$PY" -c 'import json,sys; print(" ".join(m["check"] for m in json.load(sys.stdin).get("missing", [])))'; }
# wait_ready CODE [SECONDS] — poll /readyz until it answers CODE; prints the seconds it took.
wait_ready() {
	local want=$1 deadline=$((SECONDS + ${2:-8})) t0=$SECONDS
	while [ $SECONDS -lt "$deadline" ]; do
		[ "$(status /readyz)" = "$want" ] && { echo $((SECONDS - t0)); return 0; }
		sleep 0.2
	done
	echo "never"; return 1
}

setup() {
	sk_require_root
	sk_tmp skadmin
	OUT=$SK_TMP/out   # the agent's downloads (UID 1000 writes here)
	mkdir -p "$OUT" && chmod 777 "$OUT"
	LOG=$SK_TMP/sidecar.err
	CM=$SK_TMP/cm

	[ -x "$SIDECAR" ] || { sk_fail "sidecar binary at $SIDECAR"; sk_summary; exit 1; }
	sk_net_up "$N" || { sk_fail "netns setup"; sk_summary; exit 1; }
	sk_net_add_ip "$N" "$SRV_IP"

	# --- a slow HTTP server in the internet ns: /slow sends 24 KiB over ~3 s ---------------------------------
	cat >"$SK_TMP/slow.py" <<'EOF'
import http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        n = 24 if self.path == "/slow" else 1
        self.send_response(200)
        self.send_header("Content-Length", str(n * 1024))
        self.end_headers()
        for _ in range(n):
            self.wfile.write(b"x" * 1024); self.wfile.flush()
            if n > 1: time.sleep(0.125)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S((sys.argv[1], 80), H).serve_forever()
EOF
	sk_inet "$N" "$PY" "$SK_TMP/slow.py" "$SRV_IP" 2>"$SK_TMP/slow.err" &
	sk_wait_port "$N-net" tcp 80 || sk_fail "slow server up"

	start_dnsmasq || sk_fail "dnsmasq up"

	# --- policy as a ConfigMap volume: dir/..<stamp>/policy.yaml, dir/..data -> ..<stamp>, policy.yaml -> ..data/
	mkdir -p "$CM"
	cm_swap ..2026_01_01_00_00_01.1 "$policy_v1"
	ln -s ..data/policy.yaml "$CM/policy.yaml"

	# --- the real init programs the pod netns and writes the marker; the sidecar runs as its own UID ---
	sk_pod_up "$N" "$CM/policy.yaml" STOCKADE_DRAIN_SECONDS=4 STOCKADE_DNS_PROBE_MS=1000
	SC_PID=$SK_SIDECAR_PID
	cp "$SK_TMP/marker" "$SK_TMP/marker.init"
}

# --- endpoints ------------------------------------------------------------------------------------------
t_endpoints() {
	sk_check_eq "GET /healthz 200" 200 "$(status /healthz)"
	sk_check_eq "GET /healthz body" ok "$(body /healthz)"
	sk_check_eq "HEAD /healthz 200" 200 "$(sk_pod "$N" curl -s -m 5 -I -o /dev/null -w '%{http_code}' "$ADMIN/healthz")"
	sk_check_eq "HEAD has no body" "" "$(sk_pod "$N" curl -s -m 5 -I "$ADMIN/healthz" | sed -n '/^\r$/,$p' | tail -n +2)"
	sk_check_eq "GET /metrics 200" 200 "$(status /metrics)"
	ctype=$(sk_pod "$N" curl -s -m 5 -o /dev/null -w '%{content_type}' "$ADMIN/metrics")
	sk_check_eq "/metrics content type" "text/plain; version=0.0.4; charset=utf-8" "$ctype"
	if out=$(parse_metrics 2>&1); then sk_pass "/metrics parses with prometheus_client ($out families)"
	else sk_fail "/metrics parses with prometheus_client" "$out"; fi
	# docs/metrics.md is generated from the registrations in the code; this is the other direction: every
	# family a running sidecar serves is documented there.
	undoc=$(body /metrics | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | while read -r fam; do
		grep -qF "| \`$fam\` |" "$SK_ROOT/docs/metrics.md" || echo "$fam"; done)
	sk_check_eq "every family in /metrics is in docs/metrics.md" "" "$undoc"
	sk_check_eq "GET /denials 200" 200 "$(status /denials)"
	sk_check_eq "GET /denials?limit=x 400" 400 "$(status '/denials?limit=x')"
	sk_check_eq "GET /nope 404" 404 "$(status /nope)"
	sk_check_eq "POST /healthz 405" 405 "$(status /healthz -X POST)"
	sk_check_eq "DELETE /denials 405" 405 "$(status /denials -X DELETE)"
	allow=$(sk_pod "$N" curl -s -m 5 -X PUT -D - -o /dev/null "$ADMIN/metrics" | tr -d '\r' | grep -i '^allow:')
	sk_check_eq "405 names the allowed methods" "Allow: GET, HEAD" "$allow"
	r=$(raw 'garbage\r\n\r\n' 3); sk_check_eq "malformed request 400" "HTTP/1.1 400 Bad Request" "${r%|*}"
	r=$(raw 'GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n' 3); sk_check_eq "malformed header 400" "HTTP/1.1 400 Bad Request" "${r%|*}"
	r=$(raw "GET /healthz HTTP/1.1\r\nX: $(head -c 9000 /dev/zero | tr '\0' a)\r\n\r\n" 3)
	sk_check_eq "head over 8 KiB 431" "HTTP/1.1 431 Request Header Fields Too Large" "${r%|*}"
	r=$(raw 'GET /healthz HTTP/1.1\r\nHost: x\r\n' 8)
	secs=${r#*|}
	sk_check_eq "slow request cut off with 408" "HTTP/1.1 408 Request Timeout" "${r%|*}"
	if awk -v s="$secs" 'BEGIN { exit !(s >= 2.5 && s <= 5) }'; then sk_pass "slow request cut at the deadline (${secs}s)"
	else sk_fail "slow request cut at the deadline" "${secs}s"; fi
}

# --- a denial reaches /denials ----------------------------------------------------------------------------
t_denials() {
	sk_pod_as "$N" 1000 curl -s -m 5 -o /dev/null --resolve denied.example:80:$SRV_IP http://denied.example/x
	den=$(body '/denials?limit=1')
	if echo "$den" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); assert len(d)==1 and d[0]["decision"]=="deny" and d[0]["name"]=="denied.example", d' 2>/dev/null
	then sk_pass "/denials?limit=1 holds the denied connection as JSON"
	else sk_fail "/denials holds the denial" "$den"; fi
}

# --- stockade-policy status: the same three endpoints summarised, exit 0 ready / 1 not ready -------------------
t_status() {
	local POL=$SK_BIN/stockade-policy out rc hash
	wait_ready 200 >/dev/null
	for h in status-a status-b status-c status-denied; do
		sk_pod_as "$N" 1000 curl -s -m 5 -o /dev/null --resolve "$h.example:80:$SRV_IP" "http://$h.example/x"
	done
	out=$(sk_pod "$N" "$POL" status --limit 3 "$ADMIN"); rc=$?
	sk_check_eq "status: a ready sidecar exits 0" 0 "$rc"
	hash=$(body /metrics | sed -n 's/^stockade_policy_info{hash="\([0-9a-f]*\)".*/\1/p')
	sk_check "status: ready yes, and the policy's hash as /metrics says ($hash)" \
		grep -qzE "ready     yes
policy    hash $hash, netns [0-9a-f]{16}, mode enforce, 1 rules, from $CM/policy.yaml
" <<<"$out"
	sk_check "status: the last denied connection is the last line" \
		grep -qE '^    [0-9T:.Z-]+ deny/deny status-denied\.example -> 198\.18\.1\.10:80 http \(no_match\)$' <<<"$(tail -1 <<<"$out")"
	sk_check_eq "status --limit 3: the newest 3 of 4 denials, oldest first" "status-b status-c status-denied" \
		"$(grep '^    ' <<<"$out" | awk '{ sub(/\.example$/, "", $3); printf "%s%s", s, $3; s = " " }')"
	sk_check_eq "status -o json: ready, and the denied count as /metrics sums it" \
		"true $(body /metrics | awk '/^stockade_connections_total\{decision="deny"/ { n += $2 } END { print n }')" \
		"$(sk_pod "$N" "$POL" status -o json "$ADMIN" | jq -r '"\(.ready) \(.connections.denied)"')"
	rm -f "$SK_TMP/marker"
	wait_ready 503 >/dev/null
	out=$(sk_pod "$N" "$POL" status "$ADMIN"); rc=$?
	sk_check_eq "status: not ready exits 1, naming the unmet condition" "1 1" \
		"$rc $(grep -c '^ready     NO: marker ' <<<"$out")"
	cp "$SK_TMP/marker.init" "$SK_TMP/marker"
	wait_ready 200 >/dev/null
	sk_check_fails "status: nothing listening exits 5" --status=5 sk_pod "$N" "$POL" status --timeout 2 http://127.0.0.1:1
}

# --- readiness: everything present, then each part missing in turn ----------------------------------------
t_readiness() {
	t=$(wait_ready 200)
	sk_check_eq "/readyz 200 with policy, listeners, init's marker and upstream all present (${t}s)" 200 "$(status /readyz)"
	sk_check_eq "/readyz body says ready" '{"ready":true}' "$(body /readyz)"
	rm -f "$SK_TMP/marker"
	sk_check_eq "/readyz 503 without the marker" 503 "$(status /readyz)"
	sk_check_eq "/readyz names only the missing marker" marker "$(ready_missing)"
	echo "hash=0123456789abcdef" >"$SK_TMP/marker"
	sk_check_eq "/readyz 503 with a marker of another policy" 503 "$(status /readyz)"
	if body /readyz | grep -q "differs from the policy's netns hash"; then sk_pass "/readyz: marker of another policy refused"
	else sk_fail "/readyz wrong marker hash" "$(body /readyz)"; fi
	cp "$SK_TMP/marker.init" "$SK_TMP/marker"
	sk_check_eq "/readyz 200 again with the init's marker" 200 "$(status /readyz)"
	kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null
	t=$(wait_ready 503 10)
	sk_check_eq "/readyz 503 when the upstream resolver goes silent (${t}s)" 503 "$(status /readyz)"
	sk_check_eq "/readyz names only dns_upstream" dns_upstream "$(ready_missing)"
	start_dnsmasq || sk_fail "dnsmasq up again"
	t=$(wait_ready 200 10)
	sk_check_eq "/readyz 200 when the upstream resolver answers again (${t}s)" 200 "$(status /readyz)"
	if grep -q "dns: upstream resolvers not answering" "$LOG" && grep -q "dns: upstream resolvers answering" "$LOG"
	then sk_pass "upstream liveness transitions are logged"; else sk_fail "upstream transitions logged" "$(tail -3 "$LOG")"; fi
}

# --- why not ready, where operators look: /readyz's reason and the sidecar's log line ----------------------
t_not_ready_reason() {
	wait_ready 200 10 >/dev/null
	local want="dns_upstream unreachable $SK_NET_IP4:53 (no answer yet)" t n=0 from
	from=$(($(wc -l <"$LOG") + 1))   # this case's lines only: an earlier case may have logged the same
	since() { tail -n "+$from" "$LOG"; }
	kill "$DNSMASQ_PID"; wait "$DNSMASQ_PID" 2>/dev/null
	t=$(wait_ready 503 10)
	sk_check_eq "/readyz 503 with the upstream resolver unreachable (${t}s)" 503 "$(status /readyz)"
	sk_check_eq "/readyz's reason names the unreachable upstream" "$want" \
		"$(body /readyz | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"
	sk_check_eq "/readyz's dns_upstream entry carries the same reason" "$want" \
		"$(body /readyz | "$PY" -c 'import json,sys; print([m["reason"] for m in json.load(sys.stdin)["missing"] if m["check"] == "dns_upstream"][0])')"
	# the watch looks every second: the line is there within two (five on a loaded machine)
	while ! since | grep -qF "readiness: not ready: $want" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	if since | grep -qF "readiness: not ready: $want"; then sk_pass "the sidecar logs the reason once it changes"
	else sk_fail "reason logged" "$(since | tail -5)"; fi
	sleep 1.2   # another look or more: still one line
	sk_check_eq "logged once, not at every look" 1 "$(since | grep -cF "readiness: not ready: $want")"
	start_dnsmasq || sk_fail "dnsmasq up again"
	t=$(wait_ready 200 10)
	sk_check_eq "/readyz 200 again (${t}s)" 200 "$(status /readyz)"
	n=0
	# the last readiness line, not any: the previous case's "ready" may land in this case's lines (the
	# watch looks once a second), and must not end the wait before the return is logged
	last() { since | grep "readiness: " | tail -1 | sed 's/.*readiness: //'; }
	while [ "$(last)" != ready ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	sk_check_eq "the return to ready is logged too" ready "$(last)"
}

# --- reload through a ConfigMap swap while a transfer is open ---------------------------------------------
t_reload() {
	ok0=$(metric 'stockade_policy_reloads_total{result="ok"}')
	sk_pod_as "$N" 1000 curl -s -m 20 -o "$OUT/t1" http://allowed.example/slow &
	T1=$!
	sleep 0.7
	cm_swap ..2026_01_01_00_00_02.1 "$policy_v2"
	sleep 1
	sk_check_eq "ConfigMap swap reloads (ok counter +1)" $((ok0 + 1)) "$(metric 'stockade_policy_reloads_total{result="ok"}')"
	sk_check_eq "new policy in force (2 rules)" 2 "$(metric stockade_policy_rules)"
	wait "$T1"; rc=$?
	sk_check_eq "transfer open across the reload completes (24576 bytes)" "0 24576" "$rc $(stat -c %s "$OUT/t1" 2>/dev/null)"
	code=$(sk_pod_as "$N" 1000 curl -s -m 5 -o /dev/null -w '%{http_code}' http://second.example/x)
	sk_check_eq "the new rule allows second.example" 200 "$code"

	cm_swap ..2026_01_01_00_00_03.1 "$policy_bad"
	sleep 1
	sk_check_eq "bad reload counted as failed" 1 "$(metric 'stockade_policy_reloads_total{result="failed"}')"
	sk_check_eq "bad reload keeps the old policy" 2 "$(metric stockade_policy_rules)"
	sk_check_eq "stockade_reload_last_success 0 after the bad reload" 0 "$(metric stockade_reload_last_success)"
	if grep -qE "policy.yaml:[0-9]+:[0-9]+: " "$LOG"; then sk_pass "bad reload logs file:line:col"; else sk_fail "bad reload logs file:line:col" "$(tail -3 "$LOG")"; fi
	code=$(sk_pod_as "$N" 1000 curl -s -m 5 -o /dev/null -w '%{http_code}' http://second.example/x)
	sk_check_eq "old policy still serving after a bad reload" 200 "$code"
	cm_swap ..2026_01_01_00_00_04.1 "$policy_netns"
	sleep 1
	sk_check_eq "netns-changing reload refused" 2 "$(metric 'stockade_policy_reloads_total{result="failed"}')"
	if grep -q "netns part changed" "$LOG"; then sk_pass "refusal says the netns part changed"; else sk_fail "netns refusal logged" "$(tail -3 "$LOG")"; fi
	cm_swap ..2026_01_01_00_00_05.1 "$policy_v1"
	sleep 1
	sk_check_eq "a fixed policy reloads" 1 "$(metric stockade_policy_rules)"
	sk_check_eq "stockade_reload_last_success 1 after it" 1 "$(metric stockade_reload_last_success)"
	last=$(metric stockade_reload_last_timestamp_seconds)
	if [ -n "$last" ] && [ $(($(date +%s) - last)) -le 3 ]; then sk_pass "stockade_reload_last_timestamp_seconds is the last reload's time"
	else sk_fail "stockade_reload_last_timestamp_seconds is the last reload's time" "$last vs $(date +%s)"; fi
	ok1=$(metric 'stockade_policy_reloads_total{result="ok"}')
	kill -HUP "$SC_PID"
	sleep 0.5
	sk_check_eq "SIGHUP reloads" $((ok1 + 1)) "$(metric 'stockade_policy_reloads_total{result="ok"}')"
	# One audit line per reload, in order, each naming the policy in force after it and the one before; the
	# hash is the one /metrics shows, and the next connection's line names it too.
	sk_pod_as "$N" 1000 curl -s -m 5 -o /dev/null http://allowed.example/x
	hash=$(body /metrics | sed -n 's/^stockade_policy_info{hash="\([0-9a-f]*\)".*/\1/p')
	if out=$("$PY" - "$SK_TMP/audit.log" "$hash" <<'PYEOF' 2>&1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rel = [(o["trigger"], o["result"], o["reason"]) for o in lines if o["event"] == "reload"]
want = [("file_changed", "ok", "ok"), ("file_changed", "failed", "invalid"),
        ("file_changed", "failed", "netns_changed"), ("file_changed", "ok", "ok"), ("sighup", "ok", "ok")]
assert rel == want, rel
r = [o for o in lines if o["event"] == "reload"]
assert all(a["policy"] == b["previous"] for a, b in zip(r, r[1:])), r
assert r[1]["policy"] == r[1]["previous"] == r[0]["policy"] != r[0]["previous"], r
assert r[-1]["policy"] == sys.argv[2], (r[-1], sys.argv[2])
assert lines[-1]["event"] == "conn" and lines[-1]["policy"] == sys.argv[2], lines[-1]
PYEOF
	); then sk_pass "reload audit lines: ok, invalid, netns_changed, ok, sighup; hashes chain and match /metrics"
	else sk_fail "reload audit lines" "$out"; fi
}

# --- /healthz when the loop is blocked --------------------------------------------------------------------
# The whole process stopped (no hook in the binary): the kubelet's probe times out. A heartbeat timer that
# stops firing while the loop still serves (503 "heartbeat stale") is health_test.c's and admin_test.c's.
t_healthz_blocked() {
	sk_check_eq "control: /healthz answers 200 before the loop is blocked" 200 "$(status /healthz)"
	kill -STOP "$SC_PID"
	# 28: curl's timeout — not a refused connection (7), which a sidecar that is not running gives
	sk_check_fails "/healthz fails (times out) while the loop is blocked" --status=28 sk_pod "$N" curl -sf -m 2 "$ADMIN/healthz"
	kill -CONT "$SC_PID"
	sleep 0.5
	sk_check_eq "/healthz recovers when the loop runs again" 200 "$(status /healthz)"
}

# --- SIGTERM drains an open transfer, then exit 0 ---------------------------------------------------------
t_sigterm() {
	sk_pod_as "$N" 1000 curl -s -m 20 -o "$OUT/t2" http://allowed.example/slow &
	T2=$!
	sleep 0.7
	kill -TERM "$SC_PID"
	sleep 0.3
	sk_check_eq "/readyz 503 while draining" 503 "$(status /readyz)"
	if ready_missing | grep -qw draining; then sk_pass "/readyz says draining"; else sk_fail "/readyz says draining" "$(body /readyz)"; fi
	code=$(sk_pod_as "$N" 1000 curl -s -m 3 -o /dev/null -w '%{http_code}' http://allowed.example/x)
	sk_check_eq "no new connections while draining" 000 "$code"
	wait "$T2"; rc=$?
	sk_check_eq "transfer open at SIGTERM completes (24576 bytes)" "0 24576" "$rc $(stat -c %s "$OUT/t2" 2>/dev/null)"
	wait "$SC_PID"; rc=$?
	sk_check_eq "sidecar exits 0 after draining" 0 "$rc"
}

# --- JSON log lines (--log-format json) --------------------------------------------------------------------
# A second sidecar in the pod: the first one goes (the sigterm case ends it; alone, this case does).
t_json_log() {
	if kill -0 "$SC_PID" 2>/dev/null; then kill -TERM "$SC_PID"; wait "$SC_PID"; fi
	sk_sidecar_start "$N" "$SK_TMP/audit-json.ndjson" "$SK_TMP/json.log" -- \
		--log-format json --policy "$CM/policy.yaml" --marker "$SK_TMP/marker"
	JPID=$SK_SIDECAR_PID
	SK_AUDIT_LOGS+=("$SK_TMP/audit-json.ndjson")
	sk_wait_port "$N-pod" tcp 15000 5
	kill -HUP "$JPID"
	sleep 0.5
	kill -TERM "$JPID"
	wait "$JPID"
	if out=$("$PY" - "$SK_TMP/json.log" <<'PYEOF' 2>&1
import json, sys
lines = open(sys.argv[1], "rb").read().decode("ascii").splitlines()
assert lines, "no log lines"
objs = [json.loads(l) for l in lines]
for o in objs:
    assert set(o) == {"ts", "level", "prog", "msg"}, o
    assert o["level"] in ("error", "warn", "info", "debug") and o["prog"] == "stockade-sidecar", o
msgs = [o["msg"] for o in objs]
assert any(m.startswith("version ") for m in msgs), msgs
assert any(m.startswith("reload (SIGHUP): policy ") and " in force " in m for m in msgs), msgs
assert any(m.startswith("readiness: ") for m in msgs), msgs
print(len(objs))
PYEOF
	); then sk_pass "--log-format json: every stderr line is one JSON object ($out lines, start and reload included)"
	else sk_fail "--log-format json" "$out"; fi
	printf 'version: 1\negress:\n  - hots: a.example\n' >"$SK_TMP/bad.yaml"
	STOCKADE_LOG_FORMAT=json "$SIDECAR" --policy "$SK_TMP/bad.yaml" >/dev/null 2>"$SK_TMP/json-bad.log"; rc=$?
	sk_check_eq "invalid policy at start exits 3" 3 "$rc"
	if out=$("$PY" -c '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
assert all(o["level"] == "error" for o in objs), objs
assert any(":3:5: egress[0]: unknown key" in o["msg"] for o in objs), objs' "$SK_TMP/json-bad.log" 2>&1)
	then sk_pass "STOCKADE_LOG_FORMAT=json: policy errors are JSON lines naming file:line:col"
	else sk_fail "STOCKADE_LOG_FORMAT=json policy errors" "$out"; fi
}

# --- flags -------------------------------------------------------------------------------------------------
t_flags() {
	"$SIDECAR" --log-level loud --policy x >/dev/null 2>"$SK_TMP/err"; rc=$?
	sk_check_eq "bad flag value exits 2" 2 "$rc"
	if grep -q "^stockade-sidecar: --log-level: 'loud' is not one of" "$SK_TMP/err"; then sk_pass "bad flag value named"; else sk_fail "bad flag value named" "$(head -1 "$SK_TMP/err")"; fi
	STOCKADE_DRAIN_SECONDS=abc "$SIDECAR" --policy x >/dev/null 2>&1; rc=$?
	sk_check_eq "bad STOCKADE_DRAIN_SECONDS exits 2" 2 "$rc"
	"$SIDECAR" --bogus --policy x >/dev/null 2>"$SK_TMP/err"; rc=$?
	sk_check_eq "unknown flag exits 2, named once, pointing at --help once" \
		"2 stockade-sidecar: unknown flag '--bogus' (see --help)" "$rc $(head -1 "$SK_TMP/err")"
	sk_check "--version exits 0" "$SIDECAR" --version
	sk_check "--help exits 0" "$SIDECAR" --help
}

SK_CASES=(endpoints denials status readiness not_ready_reason reload healthz_blocked sigterm json_log flags)
sk_main "$@"
