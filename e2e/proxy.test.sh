#!/usr/bin/env bash
# e2e/proxy.test.sh — the transparent proxy end to end (issue 5): the real stockade-init programs the pod
# netns, the real sidecar runs there as UID 1337, agent commands run as UID 1000 against TLS, HTTP and
# raw TCP servers in the internet netns, over IPv4 and IPv6. Checks bytes intact (sha256 of 50 MB both
# ways), deny answers (TLS alert, 403, RST) with exactly one audit line each, SNI spoofing denied (sni_ip_mismatch),
# the loop check, the peek deadline (slowloris) and 1 000 concurrent connections.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skproxy
HERE=$SK_ROOT/e2e/proxy
PY=/usr/bin/python3
A4=198.18.1.10 D4=198.18.1.20 T4=198.18.1.30
A6=2001:db8:19::10 D6=2001:db8:19::20 T6=2001:db8:19::30
PEEK_MS=1500

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
aq() { "$PY" "$HERE/audit_q.py" "$SK_TMP/audit.log" "$@"; }
# audit lines are written when a connection ends; give the loop a moment after the client returns
settle() { sleep 0.3; }

setup() {
	sk_require_root
	sk_tmp skproxy
	CURL=(curl -sS --max-time 30 --cacert "$SK_TMP/ca.pem")
	# --- certificates (a throwaway CA and one leaf per name) and payload ---
	sk_ca stockade-test-ca allowed denied
	if ! { mkdir -p "$SK_TMP/files" && head -c 50M /dev/urandom >"$SK_TMP/files/big" && chmod 644 "$SK_TMP/files/big"; }; then
		echo "payload setup failed"; echo "0 passed, 1 failed"; exit 1
	fi
	BIG_SHA=$(sha256sum <"$SK_TMP/files/big" | cut -d' ' -f1)

	sk_policy policy.yaml <<POL
egress:
  - host: allowed.example
    ports: [443, 80, 8443]
  - cidr: $T4/32
    ports: [7000]
  - cidr: $T6/128
    ports: [7000]
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
loopback: allow
POL

	# --- namespaces and servers ---
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	for ip in $A4 $D4 $T4 $A6 $D6 $T6; do sk_net_add_ip "$NS" "$ip"; done
	srv=()
	for n in allowed denied; do
		if [ $n = allowed ]; then i4=$A4 i6=$A6; else i4=$D4 i6=$D6; fi
		srv+=(--tls "$i4:443:$SK_TMP/$n.pem:$SK_TMP/$n.key" --http "$i4:80")
		srv+=(--tls "[$i6]:443:$SK_TMP/$n.pem:$SK_TMP/$n.key" --http "[$i6]:80")
	done
	srv+=(--dns "$SK_NET_IP4:53" --record "allowed.example=$A4" --record "allowed.example=$A6")
	srv+=(--record "denied.example=$D4" --record "denied.example=$D6")
	srv+=(--echo "$T4:7000" --echo "$T4:7001" --echo "[$T6]:7000" --echo "[$T6]:7001")
	sk_inet "$NS" "$PY" "$HERE/servers.py" --files "$SK_TMP/files" "${srv[@]}" >"$SK_TMP/servers.log" 2>&1 &
	sk_wait_port "$NS-net" tcp 7001 10 || { echo "test servers did not start"; cat "$SK_TMP/servers.log"; exit 1; }

	# --- the real init programs the pod netns, the sidecar runs as its own UID ---
	sk_pod_up "$NS" "$SK_TMP/policy.yaml" STOCKADE_PEEK_TIMEOUT_MS=$PEEK_MS
}

# --- allowed TLS, both families, bytes intact both ways ---
t_tls_allowed() {
	for fam in 4 6; do
		# the name is resolved through the DNS filter (pod resolv.conf → redirected to the sidecar), which
		# binds it to the address the proxy then sees
		if [ $fam = 4 ]; then a=$A4; r=-4; else a=$A6; r=-6; fi
		sk_check_eq "v$fam: allowed TLS name works" "ok" \
			"$(agent "${CURL[@]}" "$r" https://allowed.example/ok 2>&1)"
		sk_check_eq "v$fam: 50 MB download through the proxy is intact" "$BIG_SHA" \
			"$(agent "${CURL[@]}" "$r" https://allowed.example/big | sha256sum | cut -d' ' -f1)"
		sk_check_eq "v$fam: 50 MB upload through the proxy is intact" "$BIG_SHA" \
			"$(agent "${CURL[@]}" "$r" -H 'Content-Type: application/octet-stream' \
				--data-binary @"$SK_TMP/files/big" https://allowed.example/sha 2>&1)"
		settle
		[ $fam = 4 ] && d="$a:443" || d="[$a]:443"
		sk_check_eq "v$fam: allowed connections audited with rule, name, dst and binding" 3 \
			"$(aq event=conn decision=allow reason=rule rule=0 proto=tls name=allowed.example "dst=$d" binding@ok,unchecked)"
	done
	# bytes_in is the whole response (headers + body), so match it loosely instead: at least 50 MB
	big_in=$("$PY" -c '
import json,sys
print(sum(1 for l in open(sys.argv[1]) if (o:=json.loads(l)).get("event")=="conn" and o.get("bytes_in",0) > 50*2**20))' \
		"$SK_TMP/audit.log")
	sk_check_eq "audit: both downloads logged with bytes_in > 50 MiB" 2 "$big_in"
	big_out=$("$PY" -c '
import json,sys
print(sum(1 for l in open(sys.argv[1]) if (o:=json.loads(l)).get("event")=="conn" and o.get("bytes_out",0) > 50*2**20))' \
		"$SK_TMP/audit.log")
	sk_check_eq "audit: both uploads logged with bytes_out > 50 MiB" 2 "$big_out"
}

# --- allowed plain HTTP ---
t_http_allowed() {
	sk_check_eq "v4: allowed HTTP Host works" "ok" \
		"$(agent "${CURL[@]}" -4 http://allowed.example/ok 2>&1)"
	sk_check_eq "v6: allowed HTTP Host works" "ok" \
		"$(agent "${CURL[@]}" -6 http://allowed.example/ok 2>&1)"
}

# --- denied TLS: fatal access_denied alert and exactly one audit line ---
t_tls_denied() {
	out=$(agent "${CURL[@]}" --resolve "denied.example:443:$D4" https://denied.example/ok 2>&1)
	sk_check "v4: denied TLS name gets the access_denied alert" grep -qi "alert access denied" <<<"$out"
	out=$(agent "${CURL[@]}" --resolve "denied.example:443:[$D6]" https://denied.example/ok 2>&1)
	sk_check "v6: denied TLS name gets the access_denied alert" grep -qi "alert access denied" <<<"$out"
	settle
	sk_check_eq "v4: one audit line for the denied TLS name, exact fields" 1 \
		"$(aq event=deny decision=deny reason=no_match proto=tls name=denied.example dst=$D4:443 \
			"src~$SK_POD_IP4:" rule=None bytes_in=0 bytes_out=0)"
	sk_check_eq "v6: one audit line for the denied TLS name" 1 \
		"$(aq event=deny decision=deny reason=no_match proto=tls name=denied.example "dst=[$D6]:443" "src~[$SK_POD_IP6]:")"
	sk_check "audit: ts is RFC 3339 UTC with milliseconds" "$PY" -c '
import json,re,sys
ls=[json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if ls and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]) for o in ls) else 1)' \
		"$SK_TMP/audit.log"
}

# --- denied HTTP: 403 with a reason ---
t_http_denied() {
	out=$(agent curl -sS --max-time 10 -w '\n%{http_code}' --resolve "denied.example:80:$D4" \
		http://denied.example/ok 2>/dev/null)
	sk_check_eq "v4: denied HTTP Host gets 403" 403 "${out##*$'\n'}"
	sk_check "v4: the 403 body gives the reason" grep -q "egress denied (no_match)" <<<"$out"
	settle
	sk_check_eq "v4: one audit line for the denied HTTP Host" 1 \
		"$(aq event=deny decision=deny reason=no_match proto=http name=denied.example dst=$D4:80)"
}

# --- SNI spoofing: an allowed name sent to a denied server's address ---
t_sni_spoofing() {
	# allowed.example resolved through the filter binds it to A4/A6 only.
	agent getent ahosts allowed.example >/dev/null
	agent "${CURL[@]}" --resolve "allowed.example:443:$D4" https://allowed.example/ok >/dev/null 2>&1
	settle
	sk_check_eq "SNI spoofing is denied (sni_ip_mismatch) with the real destination" 1 \
		"$(aq event=deny decision=deny reason=sni_ip_mismatch binding=mismatch proto=tls name=allowed.example dst=$D4:443)"
	sk_check_eq "SNI spoofing is never allowed" 0 \
		"$(aq proto=tls name=allowed.example dst=$D4:443 decision@allow,would_deny)"
}

# --- TLS 1.3 HelloRetryRequest: a real server (openssl s_server, P-256 only) answers curl's X25519 share with
# an HRR. The second hello with the same name passes (no false denial); one naming another host is refused
# by the sidecar (access_denied, tls_second_hello) and never reaches the server ---
t_tls_hrr() {
	local log=$SK_TMP/hrr-server.log
	sk_inet "$NS" openssl s_server -accept "$A4:8443" -cert "$SK_TMP/allowed.pem" -key "$SK_TMP/allowed.key" \
		-groups P-256 -tls1_3 -msg -www >"$log" 2>&1 &
	local hrr_srv=$!
	if ! sk_wait_port "$NS-net" tcp 8443 10; then
		sk_fail "HRR: openssl s_server did not start ($(tail -3 "$log" | tr '\n' ' '))"
		kill "$hrr_srv" 2>/dev/null; return
	fi
	agent getent ahosts allowed.example >/dev/null
	out=$(agent "${CURL[@]}" -4 https://allowed.example:8443/ 2>&1 | head -c 200)
	sk_check "HRR: curl through the proxy to a server that asks for another group works ($(head -c 80 <<<"$out"))" \
		grep -q "s_server" <<<"$out"
	# the positive control: the server did see two hellos on that connection (the HRR happened)
	sk_check_eq "HRR: the server got the hello twice (a HelloRetryRequest happened)" 2 \
		"$(grep -c 'Handshake \[length [0-9a-f]*\], ClientHello' "$log")"
	before=$(grep -c 'ClientHello' "$log")
	out=$(agent "$PY" "$HERE/client.py" hrrswitch "$A4" 8443 "$SK_ROOT/sidecar/proxy/testdata/hellos/curl.bin" denied0.example 2>&1)
	sk_check_eq "HRR: a second hello naming another host gets the sidecar's access_denied alert" \
		"$(printf 'hrr\nalert:49')" "$out"
	sleep 0.3
	sk_check_eq "HRR: the server never saw the second hello" "$((before + 1))" "$(grep -c 'ClientHello' "$log")"
	sk_check_eq "HRR: the refusal is audited as tls_second_hello with the name asked for" 1 \
		"$(aq event=deny decision=deny reason=tls_second_hello proto=tls name=denied0.example dst=$A4:8443)"
	kill "$hrr_srv" 2>/dev/null; wait "$hrr_srv" 2>/dev/null
}

# --- raw TCP ---
t_raw_tcp() {
	sk_check "v4: raw TCP to an allowed address/port is relayed" agent "$PY" "$HERE/client.py" echo "$T4" 7000
	sk_check "v6: raw TCP to an allowed address/port is relayed" agent "$PY" "$HERE/client.py" echo "$T6" 7000
	sk_check "v4: raw TCP to a denied port is reset" agent "$PY" "$HERE/client.py" rst "$T4" 7001
	sk_check "v6: raw TCP to a denied port is reset" agent "$PY" "$HERE/client.py" rst "$T6" 7001
	settle
	sk_check_eq "v4: the reset raw TCP connection has one audit line" 1 \
		"$(aq event=deny decision=deny reason=no_match proto=tcp dst=$T4:7001 name=None)"
}

# --- loop: the agent connecting to the proxy port itself ---
t_loop() {
	out=$(agent "$PY" "$HERE/client.py" rst 127.0.0.1 15001 2>&1)
	sk_check "v4: direct connect to the proxy port is denied ($out)" grep -qx reset <<<"$out"
	out=$(agent "$PY" "$HERE/client.py" rst ::1 15001 2>&1)
	sk_check "v6: direct connect to the proxy port is denied ($out)" grep -qx reset <<<"$out"
	settle
	sk_check_eq "the loop denials are audited" 2 "$(aq event=deny decision=deny reason@loop,no_original_dst)"
}

# --- slowloris: 3 bytes of a hello, then nothing ---
t_slowloris() {
	read -r took how < <(agent "$PY" "$HERE/client.py" slowloris "$A4" 443 160301)
	sk_check "slowloris is closed at the peek deadline (${PEEK_MS} ms; took ${took:-?} s, $how)" \
		"$PY" -c "import sys; t=float(sys.argv[1]); sys.exit(0 if $PEEK_MS/1000-0.2 <= t <= $PEEK_MS/1000+1.5 else 1)" "${took:-99}"
	sk_check_eq "slowloris gets a reset" reset "$how"
	settle
	sk_check_eq "slowloris is audited as peek_timeout" 1 "$(aq event=deny reason=peek_timeout dst=$A4:443)"
}

# --- 1 000 concurrent connections ---
t_concurrent() {
	n=$(agent "$PY" "$HERE/client.py" many "$T4" 7000 1000 2>"$SK_TMP/many.err")
	sk_check_eq "v4: 1000 concurrent connections all relayed" 1000 "$n"
	n=$(agent "$PY" "$HERE/client.py" many "$T6" 7000 1000 2>>"$SK_TMP/many.err")
	sk_check_eq "v6: 1000 concurrent connections all relayed" 1000 "$n"
}

# --- the whole audit log is NDJSON, and the sidecar is still up ---
t_end_state() {
	sleep 0.5
	sk_check "every audit line is one JSON object" aq
	sk_check "the sidecar survived everything" kill -0 "$SK_SIDECAR_PID"
	out=$(sk_pod "$NS" "$SK_BIN/stockade-init" --policy "$SK_TMP/policy.yaml" --check 2>&1); rc=$?
	sk_check "the init's table is still intact after the run ($(tail -1 <<<"$out"))" [ $rc -eq 0 ]
	# expected: the listeners, the drain, the upstream resolvers answering, and the readiness watch's
	# start (a first "not ready" while the resolver probe has no answer yet, then "ready")
	sk_check_eq "the sidecar wrote no unexpected errors" "" "$(grep -vi 'proxy on\|draining\|dns: upstream resolvers answering' "$SK_TMP/sidecar.err" |
		grep -v 'readiness: ready$\|readiness: not ready: dns_upstream unreachable .* (no answer yet)$')"
}

SK_CASES=(tls_allowed http_allowed tls_denied http_denied sni_spoofing tls_hrr raw_tcp loop slowloris concurrent end_state)
sk_main "$@"
