#!/usr/bin/env bash
# e2e/dns.test.sh — the DNS filter inside the real sidecar behind the real init: stockade-init
# programs the "pod" netns, the sidecar runs there as UID 1337, dnsmasq is the authoritative upstream in
# the "internet" netns (pod resolv.conf → 198.18.0.1), and every query is made as the agent UID to the
# resolver's own address on port 53, so the init's nat redirect must deliver it to the filter.
# Checks: allowed names resolve over UDP and TCP (dig, glibc getent), answered by the filter (a denied
# name that dnsmasq knows gets NXDOMAIN and never reaches dnsmasq; an IPv6 resolver address nobody listens
# on still answers; the forwarded counter moves); TXT/ANY/long-label exfiltration REFUSED; rebinding
# refused; big answers truncate to TCP; forwarded queries leave from distinct random source ports (RFC
# 5452) with the name in lower case while the agent gets its own spelling back; DoT (TCP 853) to the
# resolver blocked; DoH to a server not in the
# policy blocked by the proxy; SNI and Host spoofing denied with reason sni_ip_mismatch; ssh-like raw TCP
# (server first, or client first with non-TLS/HTTP bytes) to an allowed name's IP works via the binding.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
N=skdns
PY=/usr/bin/python3
HERE=$SK_ROOT/e2e
A4=198.18.1.10 A6=2001:db8:19::10   # allowed.example
D4=198.18.1.12                      # denied.example, and the SNI/Host spoofing target
H4=198.18.1.40                      # doh.example (not in the policy)
RES4=$SK_NET_IP4 RES6=$SK_NET_IP6   # the "internet" resolver (dnsmasq listens on RES4 only)
PEEK_MS=1500
SECRET_VALUE=ghp_e2eREALvalue0123456789abcdef   # secrets: gh (placeholder stockade-secret-gh)

agent() { sk_pod_as "$N" "$SK_AGENT_UID" "$@"; }
dg() { agent dig +time=2 +tries=1 "$@"; }
status() { "$@" 2>/dev/null | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -1; }
aq() { "$PY" "$HERE/proxy/audit_q.py" "$SK_TMP/audit.log" "$@"; }
forwarded() {
	sk_pod "$N" curl -s -m 5 http://127.0.0.1:15000/metrics |
		awk '/^stockade_dns_queries_total\{/ && /result="forwarded"/ { n += $2 } END { print n + 0 }'
}
settle() { sleep 0.3; }

setup() {
	sk_require_root
	sk_tmp skdns
	for b in stockade-init stockade-sidecar; do
		[ -x "$SK_BIN/$b" ] || { echo "missing $SK_BIN/$b (run make first)"; echo "0 passed, 1 failed"; exit 1; }
	done

	# --- certificates: the spoofing target presents a valid allowed.example certificate, so only the
	# proxy's binding check can stop the connection ---
	sk_ca stockade-test-ca allowed doh

	# secrets: a value file only the sidecar reads in a pod (here: world-readable scratch)
	printf '%s\n' "$SECRET_VALUE" >"$SK_TMP/secret-token" && chmod 644 "$SK_TMP/secret-token"

	sk_policy policy.yaml <<YAML
egress:
  - host: allowed.example
    ports: [443, 80, 22]
  - host: secret.example
    ports: [443]
    inspect: true
  - host: "*.cdn.example"
    ports: [443]
  - host: rebind.example
    ports: [443]
  - host: big.example
    ports: [443]
  - host: chain.example
    ports: [443]
dns:
  upstream: [resolv.conf]
  deny: nxdomain
  maxQueryLength: 100
  allowTypes: [A, AAAA, CNAME, HTTPS, SVCB]
blockPrivate: true
loopback: allow
secrets:
  - name: gh
    valueFile: $SK_TMP/secret-token
    hosts: [secret.example]
YAML

	sk_net_up "$N" || { echo "netns setup failed"; exit 1; }
	for ip in $A4 $A6 $D4 $H4; do sk_net_add_ip "$N" "$ip"; done

	# dnsmasq as the authoritative upstream for the test names, logging every query it gets.
	big=()
	for i in $(seq 1 60); do big+=("--host-record=big.example,198.18.2.$i"); done
	sk_inet "$N" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces --listen-address="$RES4" \
		--port=53 --log-queries=extra --log-facility="$SK_TMP/dnsmasq.log" \
		--host-record=allowed.example,$A4,$A6 \
		--host-record=www.cdn.example,198.18.1.11 \
		--host-record=denied.example,$D4 \
		--host-record=doh.example,$H4 \
		--host-record=rebind.example,10.0.0.5 \
		--cname=chain.example,edge.other.example --host-record=edge.other.example,198.18.1.13 \
		--txt-record=allowed.example,"hello" \
		"${big[@]}" >/dev/null 2>&1 &
	sk_wait_port "$N-net" udp 53 || { echo "dnsmasq did not start"; exit 1; }

	# TLS/HTTP on the allowed and the spoofing target addresses, a DoH-like HTTPS server, ssh-like servers,
	# and a DoT listener on the resolver's address that records every connection reaching it.
	sk_inet "$N" "$PY" "$HERE/proxy/servers.py" \
		--tls "$A4:443:$SK_TMP/allowed.pem:$SK_TMP/allowed.key" --http "$A4:80" \
		--tls "$D4:443:$SK_TMP/allowed.pem:$SK_TMP/allowed.key" --http "$D4:80" \
		--tls "$H4:443:$SK_TMP/doh.pem:$SK_TMP/doh.key" >"$SK_TMP/servers.log" 2>&1 &
	RAW_LOG=$SK_TMP/raw.log
	touch "$RAW_LOG"
	sk_inet "$N" "$PY" "$HERE/dns/raw.py" serve "$RAW_LOG" "$A4:22" "$D4:22" "$RES4:853" >/dev/null 2>&1 &
	if ! sk_wait_port "$N-net" tcp 443 10 || ! sk_wait_port "$N-net" tcp 853 10; then
		echo "test servers did not start"; cat "$SK_TMP/servers.log"; exit 1
	fi

	# --- the real init programs the pod netns, the sidecar runs as its own UID ---
	sk_pod_up "$N" "$SK_TMP/policy.yaml" STOCKADE_PEEK_TIMEOUT_MS=$PEEK_MS
}

# --- answered by the filter through the redirect ---
t_answered() {
	f0=$(forwarded)
	sk_check_eq "agent: dig @resolver allowed A over UDP" "$A4" "$(dg @$RES4 +short allowed.example A)"
	sk_check_eq "agent: dig @resolver allowed AAAA over UDP" "$A6" "$(dg @$RES4 +short allowed.example AAAA)"
	sk_check_eq "agent: dig @resolver allowed A over TCP" "$A4" "$(dg @$RES4 +tcp +short allowed.example A)"
	sk_check_eq "agent: dig to an IPv6 resolver address nobody listens on is answered (redirect)" "$A4" \
		"$(dg @$RES6 +short allowed.example A)"
	sk_check_eq "agent: ... and over TCP" "$A4" "$(dg @$RES6 +tcp +short allowed.example A)"
	f1=$(forwarded)
	if [ "$f1" -ge $((f0 + 5)) ]; then sk_pass "the sidecar forwarded those queries ($f0 -> $f1)"
	else sk_fail "the sidecar forwarded those queries" "$f0 -> $f1"; fi
	sk_check_eq "agent: getent hosts allowed.example (glibc, pod resolv.conf)" "$A4" \
		"$(agent getent ahostsv4 allowed.example | awk '{print $1}' | head -1)"
	sk_check_eq "agent: wildcard subdomain" "198.18.1.11" "$(dg @$RES4 +short www.cdn.example A)"
	sk_check_eq "agent: CNAME chain out of the allowed set still answers" "198.18.1.13" \
		"$(dg @$RES4 +short chain.example A | tail -1)"
	sleep 0.2
	sk_check "allowed name reached dnsmasq from the pod (the sidecar's forward)" \
		grep -q "query\[A\] allowed.example from $SK_POD_IP4" "$SK_TMP/dnsmasq.log"
}

# --- denials: answered locally, never forwarded ---
t_denials() {
	sk_check_eq "denied name: NXDOMAIN over UDP (dnsmasq has a record for it)" "NXDOMAIN" \
		"$(status dg @$RES4 denied.example A)"
	sk_check_eq "denied name: NXDOMAIN over TCP" "NXDOMAIN" "$(status dg @$RES4 +tcp denied.example A)"
	sk_check_eq "denied name, AAAA: NXDOMAIN" "NXDOMAIN" "$(status dg @$RES4 denied.example AAAA)"
	t0=$(date +%s%N); agent getent hosts denied.example >/dev/null 2>&1; rc=$?; t1=$(date +%s%N)
	sk_check_eq "getent hosts denied.example fails (not found)" "2" "$rc"
	ms=$(((t1 - t0) / 1000000))
	if [ "$ms" -lt 1500 ]; then sk_pass "denied name fails fast for glibc (${ms} ms, no retry storm)"
	else sk_fail "denied name fails fast" "${ms} ms"; fi
	sk_check_eq "TXT refused" "REFUSED" "$(status dg @$RES4 allowed.example TXT)"
	sk_check_eq "TXT over TCP refused" "REFUSED" "$(status dg @$RES4 +tcp allowed.example TXT)"
	sk_check_eq "ANY refused" "REFUSED" "$(status dg @$RES4 allowed.example ANY)"
	long="$(printf 'a%.0s' $(seq 1 60)).$(printf 'b%.0s' $(seq 1 60)).www.cdn.example"
	sk_check_eq "long-label exfiltration refused" "REFUSED" "$(status dg @$RES4 "$long" A)"
	sk_check_eq "rebinding to 10/8 refused" "REFUSED" "$(status dg @$RES4 rebind.example A)"
	sk_check_eq "CHAOS class refused" "REFUSED" "$(status dg @$RES4 version.bind TXT CH)"

	# 60 A records do not fit 512 bytes: TC over UDP, full answer over TCP (the filter retries upstream on TCP).
	tc=$(dg @$RES4 +noedns +ignore big.example A 2>/dev/null | grep -c 'flags:.* tc')
	sk_check_eq "big answer sets TC over UDP without EDNS" "1" "$tc"
	n=$(dg @$RES4 +tcp +short big.example A | grep -c '^198\.18\.2\.')
	sk_check_eq "big answer over TCP: capped at 32 bound addresses" "32" "$n"

	# control: an allowed name asked after all of those reaches dnsmasq, so its log is written and the
	# filter forwards — the three "never reached" below cannot pass on an empty or missing log
	dg @$RES4 ctl-denials.cdn.example A >/dev/null 2>&1
	sleep 0.2
	sk_check "control: an allowed name asked last reached dnsmasq (its log records the pod's queries)" \
		grep -q "query\[A\] ctl-denials.cdn.example from $SK_POD_IP4" "$SK_TMP/dnsmasq.log"
	sk_check_fails "denied name never reached dnsmasq" grep -q 'query\[A\] denied.example' "$SK_TMP/dnsmasq.log"
	sk_check_fails "TXT never reached dnsmasq" grep -q 'query\[TXT\]' "$SK_TMP/dnsmasq.log"
	sk_check_fails "long label never reached dnsmasq" grep -q 'aaaaaaaaaa' "$SK_TMP/dnsmasq.log"
	sk_check "audit: denied name" grep -q '"event":"dns".*"name":"denied.example".*"decision":"deny","reason":"denied"' "$SK_TMP/audit.log"
	sk_check "audit: refused type" grep -q '"reason":"refused_type"' "$SK_TMP/audit.log"
	sk_check_eq "audit: the refused type is named (qtype TXT)" 1 "$([ "$(aq event=dns reason=refused_type qtype=TXT)" -ge 1 ] && echo 1)"
	sk_check_eq "audit: denied A and AAAA of one name are told apart by qtype" "1 1" \
		"$([ "$(aq event=dns name=denied.example qtype=A)" -ge 1 ] && echo 1) $([ "$(aq event=dns name=denied.example qtype=AAAA)" -ge 1 ] && echo 1)"
	sk_check "audit: rebinding" grep -q '"name":"rebind.example".*"reason":"rebinding"' "$SK_TMP/audit.log"
}

# --- upstream side: a fresh random source port per query (RFC 5452), the filter's own spelling ---
# dnsmasq's extra log names each query's source as ADDR/PORT. Four concurrent queries: with one shared
# upstream socket they all came from one port; now each has its own (>= 3 distinct leaves room for a
# random collision between queries that happened not to overlap).
t_upstream() {
	pids=()
	# +tries=2: on a loaded 2-core runner a dig can time out; a retry is a new query (its own port),
	# so below each name's first forward is what counts
	for i in 1 2 3 4; do agent dig +time=2 +tries=2 @$RES4 "p$i.cdn.example" A >"$SK_TMP/p$i.dig" 2>&1 & pids+=($!); done
	wait "${pids[@]}"
	local ports="" nq=0 nd=0 _
	for _ in $(seq 30); do
		ports=$(for i in 1 2 3 4; do
			sed -n "s|.* $SK_POD_IP4/\([0-9]*\) query\[A\] p$i\.cdn\.example from .*|\1|p" "$SK_TMP/dnsmasq.log" | head -1
		done)
		nq=$(grep -c . <<<"$ports")
		[ "$nq" -eq 4 ] && break
		sleep 0.1
	done
	nd=$(sort -u <<<"$ports" | grep -c .)
	if [ "$nq" -eq 4 ] && [ "$nd" -ge 3 ]; then sk_pass "4 concurrent forwarded queries left from $nd distinct source ports"
	else sk_fail "concurrent forwarded queries leave from distinct source ports" \
		"$nq of 4 names forwarded, ports: $(tr '\n' ' ' <<<"$ports"); dig status: $(for i in 1 2 3 4; do status cat "$SK_TMP/p$i.dig"; done | tr '\n' ' ')"; fi
	n0=$(wc -l <"$SK_TMP/dnsmasq.log")
	out=$(dg @$RES4 +noedns +nocookie +adflag +cdflag ALLOWED.Example A)
	sk_check "mixed-case query: the agent's spelling is echoed in the answer" grep -q '^;ALLOWED\.Example\.' <<<"$out"
	sk_check_eq "... and it is answered" "$A4" "$(awk '$4 == "A" { print $5 }' <<<"$out" | head -1)"
	sleep 0.2
	new=$(tail -n +$((n0 + 1)) "$SK_TMP/dnsmasq.log")
	sk_check "... upstream got that query (the control for the next check)" \
		grep -qi "query\[A\] allowed\.example from $SK_POD_IP4" <<<"$new"
	sk_check_fails "... but upstream saw no upper case (name sent lower-cased)" \
		grep -q "query\[A\] .*\(ALLOWED\|Example\).* from $SK_POD_IP4" <<<"$new"
}

# --- DoT and DoH ---
t_dot_doh() {
	out=$(dg @$RES4 +tls +short allowed.example A 2>&1)
	sk_check_fails "DoT (TCP 853) to the resolver gets no answer ($(tr '\n' ' ' <<<"$out" | cut -c1-60))" \
		grep -qx "$A4" <<<"$out"
	q=$("$PY" -c 'import sys; sys.stdout.buffer.write(bytes.fromhex("abcd01000001000000000000") + b"\x07allowed\x07example\x00\x00\x01\x00\x01")' | base64)
	out=$(agent sh -c "echo '$q' | base64 -d | curl -sS --max-time 10 --cacert '$SK_TMP/ca.pem' \
	--resolve doh.example:443:$H4 -H 'content-type: application/dns-message' --data-binary @- \
	https://doh.example/dns-query" 2>&1)
	sk_check "DoH POST to a server not in the policy gets the access_denied alert" grep -qi "alert access denied" <<<"$out"
	sk_check_eq "getent hosts doh.example: not resolvable either" "2" "$(agent getent hosts doh.example >/dev/null 2>&1; echo $?)"
	settle
	sk_check_eq "DoT attempt audited as a denial to the resolver's port 853" 1 \
		"$(aq event=deny decision=deny "dst=$RES4:853")"
	sk_check_fails "no DoT connection reached the resolver's port 853" grep -q ":853" "$RAW_LOG"
	sk_check_eq "control: the sidecar UID's own connection to the resolver's port 853 is logged there" "ok 1" \
		"$(sk_pod_as "$N" "$SK_SIDECAR_UID" "$PY" "$HERE/dns/raw.py" ssh "$RES4" 853) $(grep -c ":853" "$RAW_LOG")"
	sk_check_eq "DoH attempt audited (no_match, doh.example)" 1 \
		"$(aq event=deny decision=deny reason=no_match proto=tls name=doh.example "dst=$H4:443")"
}

# --- SNI and Host spoofing: an allowed name toward an address it does not resolve to ---
t_spoofing() {
	sk_check_eq "control: allowed.example over TLS via the filter's binding works" "ok" \
		"$(agent curl -sS --max-time 10 --cacert "$SK_TMP/ca.pem" -4 https://allowed.example/ok 2>&1)"
	out=$(agent curl -sS --max-time 10 --cacert "$SK_TMP/ca.pem" --resolve "allowed.example:443:$D4" \
		https://allowed.example/ok 2>&1)
	sk_check "SNI spoofing (allowed name, other IP) is refused with access_denied" grep -qi "alert access denied" <<<"$out"
	out=$(agent curl -sS --max-time 10 -w '\n%{http_code}' --resolve "allowed.example:80:$D4" \
		http://allowed.example/ok 2>/dev/null)
	sk_check_eq "Host spoofing gets 403" 403 "${out##*$'\n'}"
	sk_check "the 403 names sni_ip_mismatch" grep -q "sni_ip_mismatch" <<<"$out"
	settle
	sk_check_eq "SNI spoofing audited: deny, reason sni_ip_mismatch, binding mismatch" 1 \
		"$(aq event=deny decision=deny reason=sni_ip_mismatch binding=mismatch proto=tls name=allowed.example "dst=$D4:443")"
	sk_check_eq "Host spoofing audited: deny, reason sni_ip_mismatch" 1 \
		"$(aq event=deny decision=deny reason=sni_ip_mismatch proto=http name=allowed.example "dst=$D4:80")"
}

# --- HTTP with an IP-literal Host is connect-by-IP: a bound name is never lent to it ---
t_ip_literal_host() {
	sk_check_eq "control: http://allowed.example/ok through the binding works" "ok" \
		"$(agent curl -sS --max-time 10 -4 http://allowed.example/ok 2>&1)"
	out=$(agent curl -sS --max-time 10 -w '\n%{http_code}' "http://$A4/ok" 2>/dev/null)
	sk_check_eq "HTTP to the same (bound) address with Host: <IP> gets 403" 403 "${out##*$'\n'}"
}

# --- ssh-like raw TCP through the binding ---
t_raw_tcp() {
	t0=$(date +%s%N)
	sk_check_eq "ssh-like, server speaks first, to allowed.example:22 works" ok "$(agent "$PY" "$HERE/dns/raw.py" ssh allowed.example 22)"
	ms=$((($(date +%s%N) - t0) / 1000000))
	sk_check_eq "ssh-like, client sends its banner first, works" ok \
		"$(agent "$PY" "$HERE/dns/raw.py" ssh-client-first allowed.example 22)"
	out=$(agent "$PY" "$HERE/proxy/client.py" rst "$D4" 22 2>&1)
	sk_check "raw TCP to an unbound address (denied.example:22) is reset ($out)" grep -qx "reset\|eof" <<<"$out"
	settle
	sk_check_eq "raw TCP allowed through the binding: audit names allowed.example, binding ok" 2 \
		"$(aq event=conn decision=allow proto=tcp name=allowed.example binding=ok "dst=$A4:22")"
	sk_check_eq "server-first connection waited for the peek deadline (${ms} ms >= ${PEEK_MS})" 1 \
		"$([ "$ms" -ge "$PEEK_MS" ] && echo 1 || echo 0)"
	sk_check_fails "nothing reached denied.example:22" grep -q "^$D4:22" "$RAW_LOG"
	sk_check_eq "control: the sidecar UID's own connection to denied.example:22 is logged there" "ok 1" \
		"$(sk_pod_as "$N" "$SK_SIDECAR_UID" "$PY" "$HERE/dns/raw.py" ssh "$D4" 22) $(grep -c "^$D4:22" "$RAW_LOG")"
}

# --- a secret's placeholder or value in a DNS name or a plain-HTTP request is credential_misuse ---
t_credentials() {
	local hex
	hex=$(printf '%s' "$SECRET_VALUE" | od -An -tx1 | tr -d ' \n')
	sk_check_eq "placeholder in a name under an allowed wildcard: REFUSED" "REFUSED" \
		"$(status dg @$RES4 stockade-secret-gh.cdn.example A)"
	sk_check_eq "placeholder, upper case, over TCP: REFUSED" "REFUSED" \
		"$(status dg @$RES4 +tcp x.STOCKADE-SECRET-GH.cdn.example A)"
	local out
	out=$(dg @$RES4 "$SECRET_VALUE.cdn.example" A 2>&1)
	if [ "$(status cat <<<"$out")" = REFUSED ]; then sk_pass "the value in a label: REFUSED"
	else
		# once seen lost on a loaded CI runner (no answer, no audit line): say what dig and the sidecar saw
		sk_fail "the value in a label: REFUSED" "dig: $(tr '\n' ' ' <<<"$out" | cut -c1-400); sidecar DNS counters: $(sk_pod "$N" curl -s -m 5 http://127.0.0.1:15000/metrics | grep '^stockade_dns_queries_total' | tr '\n' ' ')"
	fi
	sk_check_eq "the value in hex, cut across two labels: REFUSED" "REFUSED" \
		"$(status dg @$RES4 "${hex:0:32}.${hex:32}.cdn.example" A)"
	sk_check_eq "control: an allowed name still answers" "198.18.1.11" "$(dg @$RES4 +short www.cdn.example A)"
	# plain HTTP is never a swap target, whatever the host
	local url=http://allowed.example/ok
	sk_check_eq "control: plain HTTP without a secret passes" 200 \
		"$(agent curl -4 -s -o /dev/null -m 5 -w '%{http_code}' "$url")"
	local code
	code=$(agent curl -4 -s -o /dev/null -m 5 -w '%{http_code}' -H 'Authorization: Bearer stockade-secret-gh' "$url")
	sk_check "plain HTTP with the placeholder in Authorization is denied (got $code)" test "$code" != 200
	code=$(agent curl -4 -s -o /dev/null -m 5 -w '%{http_code}' "${url}?t=$SECRET_VALUE")
	sk_check "plain HTTP with the value in the query is denied (got $code)" test "$code" != 200
	sleep 0.3
	sk_check_fails "no misuse name reached dnsmasq" grep -qiE "stockade-secret|$SECRET_VALUE|${hex:0:32}" "$SK_TMP/dnsmasq.log"
	sk_check_eq "audit: four DNS lines, credential_misuse, the name replaced" 4 \
		"$(grep -c '"event":"dns".*"name":"(credential)".*"decision":"deny","reason":"credential_misuse"' "$SK_TMP/audit.log")"
	sk_check_eq "audit: two plain-HTTP denials, credential_misuse" 2 \
		"$(grep -v '"event":"dns"' "$SK_TMP/audit.log" | grep -c '"decision":"deny","reason":"credential_misuse"')"
	local metric
	metric=$(sk_pod "$N" curl -s -m 5 http://127.0.0.1:15000/metrics |
		awk '/^stockade_dns_queries_total\{/ && /result="credential_misuse"/ { n += $2 } END { print n + 0 }')
	sk_check_eq "metric: stockade_dns_queries_total{result=credential_misuse}" 4 "$metric"
	sk_pod "$N" curl -s -m 5 http://127.0.0.1:15000/denials >"$SK_TMP/denials.json"
	sk_check "/denials lists credential_misuse" grep -q credential_misuse "$SK_TMP/denials.json"
	sk_check_fails "the value is in no audit line, log line or /denials entry" \
		grep -qiF -e "$SECRET_VALUE" -e "${hex:0:32}" "$SK_TMP/audit.log" "$SK_TMP/sidecar.err" "$SK_TMP/denials.json"
}

# --- malformed input does not kill the filter ---
t_end_state() {
	sk_pod "$N" sh -c 'head -c 300 /dev/urandom >/dev/udp/127.0.0.1/15053; printf "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01\x61\xc0\x0c\x00\x01\x00\x01" >/dev/udp/127.0.0.1/15053' 2>/dev/null
	sk_check_eq "still answering after garbage" "$A4" "$(dg @$RES4 +short allowed.example A)"
	sk_check "the sidecar survived everything" kill -0 "$SK_SIDECAR_PID"
	sk_check "every audit line is one JSON object" aq
	sk_check "the init's table is still intact" sk_pod "$N" "$SK_BIN/stockade-init" --policy "$SK_TMP/policy.yaml" --check
}

SK_CASES=(answered denials upstream dot_doh spoofing ip_literal_host raw_tcp credentials end_state)
sk_main "$@"
