#!/usr/bin/env bash
# e2e/proxy_shared.test.sh — an attacker's view of the transparent proxy when two names share one address.
# allowed.example and denied.example are served from ONE address (S4 / S6): a TLS server
# choosing its certificate by SNI and an HTTP server routing by Host, both logging every byte they receive
# per connection and per name (e2e/proxy_shared/servers.py), so a check can prove the denied name received
# nothing. The agent resolves allowed.example through the DNS filter first, so S is bound to
# allowed.example; every trick below tries to reach denied.example on S anyway:
#   1 a ClientHello withheld past the peek deadline (late first flight), SNI denied / none / allowed
#   2 an HTTP head withheld past the deadline, Host denied / allowed
#   3 pipelined and kept-alive requests for another Host, CL.TE framing, chunked and CL bodies intact
#   4 h2c (Upgrade and prior knowledge) denied; websocket works; a declined upgrade stays checked
#   5 server-first protocols: greeting at once under a `tcp` rule, within the deadline under `any`; the
#     first flight after a greeting (STARTTLS shape, HTTP) still decided
#   6 one client byte that cannot begin TLS/HTTP is relayed at once
#   7 ECH GREASE: denied by default (ech), allowed with tls.echGrease: allow (reload)
#   8 fallback resolution: a name never looked up through the filter (curl --resolve) works when the
#     sidecar's own resolution agrees (binding resolved), is denied toward another address (mismatch)
#   9 first flights and later heads split across writes; framings a lenient server reads differently
#  10 no Host; a late first flight of pipelined requests
#  11 early connect (the upstream handshake started at accept, for an address bound to an allowed name):
#     a denied SNI / Host on S — where the early connect does happen — sends S not one byte; X, bound to
#     no name, never sees a SYN from the sidecar (nft counters in the internet netns)
# Only the test addresses below (in the internet netns) and loopback are ever contacted.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skshared
HERE=$SK_ROOT/e2e/proxy_shared
PY=/usr/bin/python3
# S: allowed.example, denied.example, allowed2/3.example (one address); G: greet.example; X: another
# address serving valid certificates for every name, which no name resolves to.
S4=198.18.1.150 G4=198.18.1.151 X4=198.18.1.152
S6=2001:db8:19::150 G6=2001:db8:19::151 X6=2001:db8:19::152
PEEK_MS=1500
WAIT=2.0   # a silent client waits this long (past the peek deadline) before its first flight
WS='Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n'   # a websocket upgrade's headers

NAMES="allowed denied allowed2 allowed3"

# write_policy FILE [EXTRA] — allowed.example under `any` on 443/80 plus a server-first port (2526) and an
# echo port (7101); greet.example under `tcp` on a server-first port (2525) and an echo port (7100).
write_policy() {
	sk_policy "$1" <<POL
egress:
  - host: allowed.example
    ports: [443, 80, 2526, 7101]
  - host: allowed2.example
    ports: [443]
  - host: allowed3.example
    ports: [443]
  - host: greet.example
    ports: [2525, 7100]
    protocol: tcp
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
loopback: allow
${2:-}
POL
}

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
cl() { agent timeout 30 "$PY" "$HERE/client.py" "$@" 2>>"$SK_TMP/client.err"; }
# audit lines are written when a connection ends: mark before a case, settle, then query what came after
MARK=0
mark() { MARK=$(wc -l <"$SK_TMP/audit.log"); }
settle() { sleep 0.15; }
aq() { tail -n +$((MARK + 1)) "$SK_TMP/audit.log" >"$SK_TMP/slice.ndjson"; "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/slice.ndjson" "$@"; }
aq_all() { "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/audit.log" "$@"; }
# server-side evidence
rq() { "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$LOGD/requests.log" "$@"; }
vhost_bytes() { local f="$LOGD/vhost-$1.bin"; if [ -f "$f" ]; then stat -c %s "$f"; else echo 0; fi; }
total_bytes() { cat "$LOGD"/conn-*.bin 2>/dev/null | wc -c; }
# never_seen STRING — no server connection ever received STRING (exit 0 when absent): the servers logged
# connections (a suite whose servers log nothing cannot pass this) and grep read them all and found nothing
never_seen() {
	local f=("$LOGD"/conn-*.bin)
	[ -e "${f[0]}" ] || return 1
	grep -qaF -- "$1" "${f[@]}" 2>/dev/null
	[ $? -eq 1 ]
}
hp() { case $1 in *:*) echo "[$1]:$2" ;; *) echo "$1:$2" ;; esac; }
fam_addrs() { if [ "$1" = 4 ]; then s=$S4 g=$G4 x=$X4; else s=$S6 g=$G6 x=$X6; fi; }
s='' g='' x=''
# within MS LIMIT HOW — MS < LIMIT and the probe said ok
within() { [ "$3" = ok ] && "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$1" "$2"; }
# prompt CASE OUT — the 403 for a denied later request came well before the proxy's 2 s drain bound: the
# upstream was told (shutdown) that no more requests come, so it closed once it had answered the ones before
prompt() {
	local ms=${2##*ms=} st=${2% ms=*} ok=no
	[ "${st##* }" = 403 ] && ok=ok
	sk_check "$1: the 403 came in ${ms} ms (< 1000)" within "$ms" 1000 $ok
}
last_reload_ok() { grep 'reload (' "$SK_TMP/sidecar.err" | tail -1 | grep -v rejected | grep -q ': policy .* in force'; }
reloads() { grep -c 'reload (.*): \(policy .* in force\|rejected\)' "$SK_TMP/sidecar.err"; }

setup() {
	sk_require_root
	# One run at a time on this machine: a second run's sk_net_up would delete this run's namespaces (and kill
	# its sidecar) halfway through. Wait (bounded) for an earlier run to finish instead.
	exec 9>"/tmp/$NS.lock"
	flock -w 240 9 || { echo "another $NS run holds /tmp/$NS.lock"; echo "0 passed, 1 failed"; exit 1; }
	sk_tmp skshared
	T_START=$SECONDS
	LOGD=$SK_TMP/srvlog
	CURL=(timeout 30 curl -sS --max-time 20 --cacert "$SK_TMP/ca.pem")
	# --- certificates: a throwaway CA and one leaf per name ---
	# shellcheck disable=SC2086  # one argument per name
	sk_ca stockade-shared-test-ca $NAMES
	POLICY=$SK_TMP/policy.yaml
	write_policy "$POLICY"

	# --- namespaces and servers ---
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	for ip in $S4 $G4 $X4 $S6 $G6 $X6; do sk_net_add_ip "$NS" "$ip"; done
	srv=(--log "$LOGD")
	for n in $NAMES; do srv+=(--cert "$n.example:$SK_TMP/$n.pem:$SK_TMP/$n.key"); done
	for a in "$S4" "[$S6]"; do
		srv+=(--tls "$a:443" --http "$a:80" --greet "$a:2526" --echo "$a:7101")
	done
	for a in "$G4" "[$G6]"; do srv+=(--greet "$a:2525" --echo "$a:7100"); done
	srv+=(--tls "$X4:443" --tls "[$X6]:443")
	srv+=(--dns "$SK_NET_IP4:53")
	for n in allowed denied allowed2 allowed3; do srv+=(--record "$n.example=$S4" --record "$n.example=$S6"); done
	srv+=(--record "greet.example=$G4" --record "greet.example=$G6")
	sk_inet "$NS" "$PY" "$HERE/servers.py" "${srv[@]}" >"$SK_TMP/servers.log" 2>&1 &
	disown $!
	for p in 443 80 2525 2526 7100 7101; do
		sk_wait_port "$NS-net" tcp "$p" 10 || { echo "test servers did not start"; cat "$SK_TMP/servers.log"; exit 1; }
	done

	# --- the real init programs the pod netns; the sidecar, as its own UID, with a short peek deadline ---
	sk_pod_up "$NS" "$POLICY" STOCKADE_PEEK_TIMEOUT_MS=$PEEK_MS
	disown "$SK_SIDECAR_PID"   # the EXIT trap kills it; no job notice for that

	# --- the agent resolves through the DNS filter: S bound to allowed.example, G to greet.example ---
	sk_check_eq "the filter answers allowed.example with S (v4 and v6)" "$S4 $S6" "$(cl resolve allowed.example)"
	sk_check_eq "the filter answers greet.example with G (v4 and v6)" "$G4 $G6" "$(cl resolve greet.example)"
	sk_check_eq "the filter refuses denied.example although it shares S" "" "$(cl resolve denied.example)"
}

# --- 1. a ClientHello withheld past the peek deadline ---
t_late_hello() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; b0=$(vhost_bytes denied.example)
		out=$(cl tls "$s" 443 denied.example $WAIT "$SK_TMP/ca.pem" /c1-denied)
		settle
		sk_check "v$fam 1a: late hello with SNI denied.example is refused ($out)" \
			grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		sk_check_eq "v$fam 1a: the denied vhost received 0 bytes" "$b0" "$(vhost_bytes denied.example)"
		sk_check_eq "v$fam 1a: one deny audit line, late:true" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=tls late=True "dst=$(hp "$s" 443)")"

		mark; t0=$(total_bytes)
		out=$(cl tls "$s" 443 - $WAIT "$SK_TMP/ca.pem" /c1-nosni)
		settle
		sk_check "v$fam 1b: late hello without SNI is refused ($out)" \
			grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		sk_check_eq "v$fam 1b: the server received 0 bytes" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 1b: one deny audit line (no_sni), late:true" 1 \
			"$(aq event=deny decision=deny reason=no_sni proto=tls late=True "dst=$(hp "$s" 443)")"

		mark
		out=$(cl tls "$s" 443 allowed.example $WAIT "$SK_TMP/ca.pem" "/c1-allowed-v$fam")
		settle
		sk_check_eq "v$fam 1c: late hello with SNI allowed.example: handshake and HTTP inside work" \
			"ok 200 ok allowed.example /c1-allowed-v$fam" "$out"
		sk_check_eq "v$fam 1c: allowed, audited late:true" 1 \
			"$(aq event=conn decision=allow name=allowed.example proto=tls late=True "dst=$(hp "$s" 443)")"
	done
}

# --- 2. an HTTP head withheld past the peek deadline ---
t_late_head() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; b0=$(vhost_bytes denied.example)
		out=$(cl http "$s" 80 $WAIT denied.example "/c2-denied-v$fam")
		settle
		sk_check "v$fam 2a: late GET with Host denied.example gets 403 ($out)" grep -q '^403' <<<"$out"
		sk_check_eq "v$fam 2a: the denied vhost received 0 bytes" "$b0" "$(vhost_bytes denied.example)"
		sk_check "v$fam 2a: no server saw the request" never_seen "/c2-denied-v$fam"
		sk_check_eq "v$fam 2a: one deny audit line, late:true" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http late=True "dst=$(hp "$s" 80)")"
		mark
		out=$(cl http "$s" 80 $WAIT allowed.example "/c2-allowed-v$fam")
		settle
		sk_check_eq "v$fam 2b: late GET with Host allowed.example gets 200" "200 ok allowed.example /c2-allowed-v$fam" "$out"
		sk_check_eq "v$fam 2b: allowed, audited late:true" 1 \
			"$(aq event=conn decision=allow name=allowed.example proto=http late=True "dst=$(hp "$s" 80)")"
	done
}

# --- 3. pipelined, kept-alive, smuggling shapes, bodies ---
t_pipelining() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; b0=$(vhost_bytes denied.example)
		out=$(cl pipeline "$s" 80 allowed.example "/c3-pipe-1-v$fam" denied.example "/c3-pipe-2-v$fam")
		settle
		sk_check_eq "v$fam 3a: pipelined allowed+denied: first answered, second 403" "200 403" "${out% ms=*}"
		prompt "v$fam 3a" "$out"
		sk_check_eq "v$fam 3a: the server saw only the first request" "1 0" \
			"$(rq "path=/c3-pipe-1-v$fam") $(rq "path=/c3-pipe-2-v$fam")"
		sk_check "v$fam 3a: not a byte of the second request reached a server" never_seen "/c3-pipe-2-v$fam"
		sk_check_eq "v$fam 3a: the denied vhost received 0 bytes" "$b0" "$(vhost_bytes denied.example)"
		sk_check_eq "v$fam 3a: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http request=2 "dst=$(hp "$s" 80)")"

		mark
		out=$(cl keepalive "$s" 80 allowed.example "/c3-ka-1-v$fam" denied.example "/c3-ka-2-v$fam")
		settle
		sk_check_eq "v$fam 3b: kept-alive allowed then denied: 200 then 403" "200 403" "${out% ms=*}"
		prompt "v$fam 3b" "$out"
		sk_check_eq "v$fam 3b: the server saw only the first request" "1 0" \
			"$(rq "path=/c3-ka-1-v$fam") $(rq "path=/c3-ka-2-v$fam")"
		sk_check "v$fam 3b: not a byte of the second request reached a server" never_seen "/c3-ka-2-v$fam"
		sk_check_eq "v$fam 3b: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http request=2 "dst=$(hp "$s" 80)")"

		mark; t0=$(total_bytes)
		out=$(cl send "$s" 80 "POST /c3-clte-v$fam HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG")
		settle
		sk_check "v$fam 3c: CL.TE request gets 403 ($out)" grep -q '^403' <<<"$out"
		sk_check_eq "v$fam 3c: nothing reached the server" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 3c: audited http_te_cl" 1 "$(aq event=deny decision=deny reason=http_te_cl "dst=$(hp "$s" 80)")"

		mark
		out=$(cl clte2 "$s" 80 allowed.example "/c3-clte2-v$fam")
		settle
		sk_check_eq "v$fam 3d: a GET then a CL.TE POST on one connection: 200 then 403" "200 403" "${out% ms=*}"
		prompt "v$fam 3d" "$out"
		sk_check "v$fam 3d: not a byte of the CL.TE request reached a server" never_seen "/c3-clte2-v$fam-2"
		sk_check_eq "v$fam 3d: audited http_te_cl, request 2" 1 \
			"$(aq event=deny decision=deny reason=http_te_cl request=2 "dst=$(hp "$s" 80)")"

		sk_check_eq "v$fam 3e: chunked POST, Content-Length POST, then a GET on one connection, bodies intact" \
			"ok ok 200" "$(cl posts "$s" 80 allowed.example)"
	done
}

# --- 4. h2c denied, websocket works, a declined upgrade stays checked ---
t_upgrades() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; t0=$(total_bytes)
		out=$(cl send "$s" 80 "GET /c4-h2c HTTP/1.1\r\nHost: allowed.example\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
		out2=$(cl send "$s" 80 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00')
		settle
		sk_check "v$fam 4a: Upgrade: h2c gets 403 ($out)" grep -q '^403' <<<"$out"
		sk_check "v$fam 4b: h2c prior knowledge is refused ($out2)" grep -qE '^(403|closed|reset)' <<<"$out2"
		sk_check_eq "v$fam 4ab: nothing reached the server" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 4a: audited http_h2c_upgrade" 1 "$(aq event=deny decision=deny reason=http_h2c_upgrade "dst=$(hp "$s" 80)")"
		sk_check_eq "v$fam 4b: audited http_h2c_prior" 1 "$(aq event=deny decision=deny reason=http_h2c_prior "dst=$(hp "$s" 80)")"

		sk_check_eq "v$fam 4c: websocket to allowed.example: 101, binary frames round-trip" "101 ok" \
			"$(cl ws "$s" 80 allowed.example)"

		mark; b0=$(vhost_bytes denied.example)
		out=$(cl wsdecline "$s" 80 allowed.example denied.example "/c4-wsd-2-v$fam")
		settle
		sk_check_eq "v$fam 4d: declined websocket (400), then Host denied.example: 403" "400 403" "${out% ms=*}"
		prompt "v$fam 4d" "$out"
		sk_check "v$fam 4d: the second request never reached a server" never_seen "/c4-wsd-2-v$fam"
		sk_check_eq "v$fam 4d: the denied vhost received 0 bytes" "$b0" "$(vhost_bytes denied.example)"
		sk_check_eq "v$fam 4d: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http request=2 "dst=$(hp "$s" 80)")"

		mark
		out=$(cl sendall "$s" 80 "GET /ws-decline HTTP/1.1\r\nHost: allowed.example\r\n$WS\r\nGET /c4e-2-v$fam HTTP/1.1\r\nHost: denied.example\r\n\r\n")
		settle
		sk_check_eq "v$fam 4e: declined websocket and a request for denied.example in one write: 400 then 403" "400 403" "$out"
		sk_check "v$fam 4e: the second request never reached a server" never_seen "/c4e-2-v$fam"
		sk_check_eq "v$fam 4e: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http request=2 "dst=$(hp "$s" 80)")"

		mark
		out=$(cl script "$s" 80 'w:GET /c4f-1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n' r \
			"w:GET /c4f-2-v$fam HTTP/1.1\r\nHost: allowed.example\r\n$WS\r\n" r)
		settle
		sk_check_eq "v$fam 4f: a websocket upgrade as the second request: 200 then 403" "200 403" "$out"
		sk_check "v$fam 4f: the upgrade never reached a server" never_seen "/c4f-2-v$fam"
		sk_check_eq "v$fam 4f: audited http_upgrade_not_first, request 2" 1 \
			"$(aq event=deny decision=deny reason=http_upgrade_not_first request=2 "dst=$(hp "$s" 80)")"
	done
}

# --- 10. no Host (the server's default vhost could be any name on the address); late and pipelined ---
t_no_host() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; t0=$(total_bytes)
		out=$(cl sendall "$s" 80 'GET /c10-nohost HTTP/1.0\r\n\r\n')
		settle
		sk_check_eq "v$fam 10a: an HTTP/1.0 request without Host: 403" 403 "$out"
		sk_check_eq "v$fam 10a: nothing reached the server" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 10a: audited http_no_host" 1 "$(aq event=deny decision=deny reason=http_no_host "dst=$(hp "$s" 80)")"

		mark
		out=$(cl script "$s" 80 'w:GET /c10b-1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n' r "w:GET /c10b-2-v$fam HTTP/1.0\r\n\r\n" r)
		settle
		sk_check_eq "v$fam 10b: kept-alive second request without Host: 200 then 403" "200 403" "$out"
		sk_check "v$fam 10b: the second request never reached a server" never_seen "/c10b-2-v$fam"
		sk_check_eq "v$fam 10b: audited http_no_host, request 2" 1 \
			"$(aq event=deny decision=deny reason=http_no_host request=2 "dst=$(hp "$s" 80)")"

		mark
		out=$(cl script "$s" 80 "s:$WAIT" \
			"w:GET /c10c-1 HTTP/1.1\r\nHost: allowed.example\r\n\r\nGET /c10c-2-v$fam HTTP/1.1\r\nHost: denied.example\r\n\r\n" r r)
		settle
		sk_check_eq "v$fam 10c: late first flight of two pipelined requests (allowed, denied): 200 then 403" "200 403" "$out"
		sk_check "v$fam 10c: the second request never reached a server" never_seen "/c10c-2-v$fam"
		sk_check_eq "v$fam 10c: one deny audit line, late:true, request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example late=True request=2 "dst=$(hp "$s" 80)")"
	done
}

# --- 9. first flights and later heads split across writes; framing a lenient server reads differently ---
t_split_writes() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; t0=$(total_bytes)
		out=$(cl script "$s" 80 "s:$WAIT" 'w:GET /c9a HTTP/1.1\r\n' s:0.3 'w:Host: denied.example\r\n\r\n' r)
		settle
		sk_check_eq "v$fam 9a: late head split across writes, Host denied.example in the second: 403" 403 "$out"
		sk_check_eq "v$fam 9a: nothing reached the server" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 9a: one deny audit line, late:true" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http late=True "dst=$(hp "$s" 80)")"

		mark
		out=$(cl script "$s" 80 'w:GET /c9b-1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n' r \
			'w:GET /c9b-2 HTTP/1.1\r\nHo' s:0.3 'w:st: denied.example\r\n\r\n' r)
		settle
		sk_check_eq "v$fam 9b: kept-alive second head split inside its Host line: 200 then 403" "200 403" "$out"
		sk_check "v$fam 9b: not a byte of the second request reached a server" never_seen /c9b-2
		sk_check_eq "v$fam 9b: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http request=2 "dst=$(hp "$s" 80)")"

		mark
		out=$(cl script "$s" 80 'w:GET /c9c-1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n' r \
			'w:GET http://denied.example/c9c-2 HTTP/1.1\r\nHost: allowed.example\r\n\r\n' r)
		settle
		sk_check_eq "v$fam 9c: kept-alive second request in absolute form for denied.example: 200 then 403" "200 403" "$out"
		sk_check "v$fam 9c: not a byte of the second request reached a server" never_seen /c9c-2
		sk_check_eq "v$fam 9c: one deny audit line for request 2" 1 \
			"$(aq event=deny decision=deny request=2 "dst=$(hp "$s" 80)")"

		for sni in denied.example allowed.example; do
			mark; t0=$(total_bytes)
			out=$(cl hellosplit "$s" 443 $sni $WAIT 7 "$SK_TMP/ca.pem")
			settle
			if [ $sni = denied.example ]; then
				sk_check "v$fam 9d: late hello for $sni, 7 bytes a write, refused ($out)" \
					grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
				sk_check_eq "v$fam 9d: nothing reached the server" "$t0" "$(total_bytes)"
				sk_check_eq "v$fam 9d: one deny audit line, late:true" 1 \
					"$(aq event=deny decision=deny reason=no_match name=$sni proto=tls late=True "dst=$(hp "$s" 443)")"
			else
				sk_check_eq "v$fam 9d: late hello for $sni, 7 bytes a write, completes" ok "$out"
			fi
		done

		if [ $fam = 4 ]; then
			# the late first flight has a deadline of its own: 3 bytes of a hello, then nothing
			mark; t0=$(total_bytes); ts=$(date +%s%N)
			out=$(cl script "$s" 443 "s:$WAIT" 'w:\x16\x03\x01' r)
			ms=$((($(date +%s%N) - ts) / 1000000))
			settle
			sk_check "v$fam 9f: a late hello that stalls is closed by a deadline ($out, ${ms} ms < $((${WAIT%.*} * 1000 + PEEK_MS + 1500)))" \
				within "$ms" $((${WAIT%.*} * 1000 + PEEK_MS + 1500)) "$([ "$out" = - ] && echo ok)"
			sk_check_eq "v$fam 9f: nothing reached the server" "$t0" "$(total_bytes)"
			sk_check_eq "v$fam 9f: audited peek_timeout, late:true" 1 \
				"$(aq event=deny decision=deny reason=peek_timeout late=True "dst=$(hp "$s" 443)")"
		fi

		# Each framing below is refused by the proxy or read as the tracker reads it; a lenient server (ours:
		# Python int() takes +0, 0x0, 1_0) would otherwise see the request for denied.example behind it.
		for v in 'cl_plus|Content-Length: +0' 'cl_dup|Content-Length: 0\r\nContent-Length: 62' \
			'chunk_0x|Transfer-Encoding: chunked\r\n\r\n0x0' 'chunk_plus|Transfer-Encoding: chunked\r\n\r\n+0' \
			'chunk_under|Transfer-Encoding: chunked\r\n\r\n0_0' 'te_list|Transfer-Encoding: chunked, identity\r\n\r\n0' \
			'te_space|Transfer-Encoding : chunked\r\n\r\n0' 'te_upper|Transfer-Encoding: Chunked\r\n\r\n0'; do
			name=${v%%|*} frame="${v#*|}\r\n"   # + CRLF: the head's end (CL) or the last chunk's empty trailer
			out=$(cl sendall "$s" 80 "POST /c9e-$name HTTP/1.1\r\nHost: allowed.example\r\n$frame\r\nGET /c9e-smuggled-$name-v$fam HTTP/1.1\r\nHost: denied.example\r\n\r\n")
			settle
			sk_check "v$fam 9e: $name framing, then a request for denied.example: a 403 ($out)" grep -qw 403 <<<"$out"
			sk_check "v$fam 9e: $name: the request behind it never reached the server" never_seen "/c9e-smuggled-$name-v$fam"
		done
	done
}

# --- 5. server-first protocols ---
t_server_first() {
	for fam in 4 6; do
		fam_addrs $fam
		read -r ms how < <(cl greet "$g" 2525)
		sk_check "v$fam 5a: tcp rule: greeting in ${ms:-?} ms (< 50), reply echoed ($how)" \
			within "${ms:-99999}" 50 "${how:-}"
		mark
		read -r ms how < <(cl greet "$s" 2526)
		settle
		sk_check "v$fam 5b: any rule: greeting in ${ms:-?} ms (< $((PEEK_MS + 1000))), reply echoed ($how)" \
			within "${ms:-99999}" $((PEEK_MS + 1000)) "${how:-}"
		sk_check_eq "v$fam 5b: allowed as tcp by the binding, the late first flight decided (late:true)" 1 \
			"$(aq event=conn decision=allow name=allowed.example proto=tcp late=True "dst=$(hp "$s" 2526)")"

		# after the greeting flowed (server first), the client's first flight is still classified and decided
		mark; t0=$(total_bytes)
		out=$(cl greethello "$s" 2526 denied.example "$SK_TMP/ca.pem")
		settle
		sk_check "v$fam 5c: greeting, then a TLS hello for denied.example (STARTTLS shape): refused ($out)" \
			grep -qE '^220_greet (alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		sk_check_eq "v$fam 5c: the server received nothing" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 5c: one deny audit line, late:true" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=tls late=True "dst=$(hp "$s" 2526)")"
		mark; t0=$(total_bytes)
		out=$(cl script "$s" 2526 l 'w:GET /c5d HTTP/1.1\r\nHost: denied.example\r\n\r\n' r)
		settle
		sk_check_eq "v$fam 5d: greeting, then an HTTP request for denied.example: 403" "220_greet 403" "$out"
		sk_check_eq "v$fam 5d: the server received nothing" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 5d: one deny audit line, late:true" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=http late=True "dst=$(hp "$s" 2526)")"
	done
}

# --- 6. one client byte that cannot begin TLS or an HTTP request line ---
t_one_byte() {
	for fam in 4 6; do
		fam_addrs $fam
		for b in 00 7b; do
			read -r ms how < <(cl onebyte "$s" 7101 $b)
			sk_check "v$fam 6a: any rule: 1 byte 0x$b echoed in ${ms:-?} ms (< 500) ($how)" \
				within "${ms:-99999}" 500 "${how:-}"
		done
		read -r ms how < <(cl onebyte "$g" 7100 78)
		sk_check "v$fam 6b: tcp rule: 1 byte 'x' echoed in ${ms:-?} ms (< 500) ($how)" \
			within "${ms:-99999}" 500 "${how:-}"
	done
}

# --- 8. fallback resolution (names never looked up through the filter) ---
t_fallback_resolution() {
	for fam in 4 6; do
		fam_addrs $fam
		mark
		if [ $fam = 4 ]; then r=$s; else r="[$s]"; fi
		out=$(agent "${CURL[@]}" --resolve "allowed2.example:443:$r" "https://allowed2.example/c8-v$fam" 2>&1)
		settle
		sk_check_eq "v$fam 8a: --resolve allowed2.example to S (never resolved through the filter) works" \
			"ok allowed2.example /c8-v$fam" "$out"
		sk_check_eq "v$fam 8a: audited allowed, binding resolved" 1 \
			"$(aq event=conn decision=allow name=allowed2.example binding=resolved "dst=$(hp "$s" 443)")"
		for n in allowed2 allowed3; do
			mark; t0=$(total_bytes)
			if [ $fam = 4 ]; then r=$x; else r="[$x]"; fi
			out=$(agent "${CURL[@]}" --resolve "$n.example:443:$r" "https://$n.example/c8-x" 2>&1)
			settle
			sk_check "v$fam 8b: --resolve $n.example to X (valid cert there) is denied" \
				grep -qi "alert access denied" <<<"$out"
			sk_check_eq "v$fam 8b: X received nothing" "$t0" "$(total_bytes)"
			sk_check_eq "v$fam 8b: audited sni_ip_mismatch, binding mismatch" 1 \
				"$(aq event=deny decision=deny reason=sni_ip_mismatch binding=mismatch name=$n.example "dst=$(hp "$x" 443)")"
		done
	done
}

# --- 7. ECH GREASE: denied by default, allowed after a reload with tls.echGrease: allow ---
t_ech_grease() {
	for fam in 4 6; do
		fam_addrs $fam
		mark; t0=$(total_bytes)
		out=$(cl ech "$s" 443 allowed.example "$SK_TMP/ca.pem" /c7-default)
		settle
		sk_check "v$fam 7a: ECH hello (outer SNI allowed.example) refused by default ($out)" \
			grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		sk_check_eq "v$fam 7a: nothing reached the server" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 7a: audited ech" 1 "$(aq event=deny decision=deny reason=ech "dst=$(hp "$s" 443)")"
	done
	r0=$(reloads)
	write_policy "$POLICY" "tls: { echGrease: allow }"
	kill -HUP "$SK_SIDECAR_PID"
	for _ in $(seq 50); do [ "$(reloads)" -gt "$r0" ] && break; sleep 0.1; done
	sleep 0.3
	sk_check "7: the policy with tls.echGrease: allow is in force ($(grep 'reload' "$SK_TMP/sidecar.err" | tail -1))" \
		last_reload_ok
	for fam in 4 6; do
		fam_addrs $fam
		mark
		out=$(cl ech "$s" 443 allowed.example "$SK_TMP/ca.pem" "/c7-grease-v$fam")
		settle
		sk_check_eq "v$fam 7b: ECH GREASE hello allowed on its outer SNI with echGrease: allow" \
			"ok 200 ok allowed.example /c7-grease-v$fam" "$out"
		sk_check_eq "v$fam 7b: audited allow" 1 "$(aq event=conn decision=allow name=allowed.example proto=tls "dst=$(hp "$s" 443)")"
	done
}

# --- 11. early connect ---
# syns NAME — SYNs (without ACK) counted so far by the internet netns's counter NAME
syns() { ip netns exec "$NS-net" nft list counter inet skearly "$1" | grep -o 'packets [0-9]*' | cut -d' ' -f2; }
t_early_connect() {
	ip netns exec "$NS-net" nft -f - <<NFT
table inet skearly {
	counter s4 {}
	counter s6 {}
	counter x4 {}
	counter x6 {}
	chain in {
		type filter hook input priority 0; policy accept;
		tcp flags & (syn | ack) == syn ip daddr $S4 counter name s4
		tcp flags & (syn | ack) == syn ip6 daddr $S6 counter name s6
		tcp flags & (syn | ack) == syn ip daddr $X4 counter name x4
		tcp flags & (syn | ack) == syn ip6 daddr $X6 counter name x6
	}
}
NFT
	sk_check_eq "11: SYN counters in place" "0 0 0 0" "$(syns s4) $(syns s6) $(syns x4) $(syns x6)"
	for fam in 4 6; do
		fam_addrs $fam
		# S is bound to allowed.example, allowed on 443 and 80: the proxy connects to S at accept.
		mark; t0=$(total_bytes); n0=$(syns s$fam)
		out=$(cl tls "$s" 443 denied.example 0 "$SK_TMP/ca.pem" /c11-denied)
		settle
		sk_check "v$fam 11a: a prompt hello with SNI denied.example on S is refused ($out)" \
			grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		sk_check "v$fam 11a: S was connected to early ($n0 -> $(syns s$fam) SYNs)" test "$(syns s$fam)" -gt "$n0"
		sk_check_eq "v$fam 11a: and received not one byte" "$t0" "$(total_bytes)"
		sk_check_eq "v$fam 11a: one deny audit line (no_match), not late" 1 \
			"$(aq event=deny decision=deny reason=no_match name=denied.example proto=tls late@None,False "dst=$(hp "$s" 443)")"
		mark; t0=$(total_bytes)
		out=$(cl http "$s" 80 0 denied.example "/c11-denied-v$fam")
		settle
		sk_check "v$fam 11b: a prompt GET with Host denied.example on S gets 403 ($out)" grep -q '^403' <<<"$out"
		sk_check_eq "v$fam 11b: S received not one byte" "$t0" "$(total_bytes)"
		mark
		out=$(cl tls "$s" 443 allowed.example 0 "$SK_TMP/ca.pem" "/c11-allowed-v$fam")
		settle
		sk_check_eq "v$fam 11c: a prompt hello with SNI allowed.example on S works" \
			"ok 200 ok allowed.example /c11-allowed-v$fam" "$out"
		# X is bound to no name: no early connect, and the hello's name does not bind it either.
		for n in allowed denied; do
			mark
			out=$(cl tls "$x" 443 $n.example 0 "$SK_TMP/ca.pem" "/c11-x-$n")
			settle
			sk_check "v$fam 11d: a hello with SNI $n.example toward unbound X is refused ($out)" \
				grep -qE '^(alert:.*ACCESS_DENIED|closed|reset)' <<<"$out"
		done
		sk_check_eq "v$fam 11d: X never saw a SYN" 0 "$(syns x$fam)"
	done
	ip netns exec "$NS-net" nft delete table inet skearly
}

# --- over the whole run ---
t_whole_run() {
	sleep 0.3
	sk_check_eq "denied.example received 0 bytes over the whole run (vhost log)" 0 "$(vhost_bytes denied.example)"
	sk_check "the string denied.example never reached any server (raw byte logs)" never_seen denied.example
	sk_check_eq "the servers never parsed a request or a hello for denied.example" "0 0" \
		"$(rq host=denied.example) $(rq sni=denied.example)"
	sk_check_eq "no deny was ever late-allowed for denied.example" 0 \
		"$(aq_all decision=allow name=denied.example)"
	sk_check "every audit line is one JSON object" aq_all
	sk_check "the sidecar survived everything" kill -0 "$SK_SIDECAR_PID"
	echo "# runtime $((SECONDS - T_START)) s"
	# SK_KEEP=DIR keeps the evidence (audit log, server byte logs) for a look after the run
	[ -z "${SK_KEEP:-}" ] || cp -r "$SK_TMP/." "$SK_KEEP/"
}

SK_CASES=(late_hello late_head pipelining upgrades no_host split_writes server_first one_byte fallback_resolution ech_grease early_connect whole_run)
sk_main "$@"
