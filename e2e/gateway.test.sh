#!/usr/bin/env bash
# e2e/gateway.test.sh — the credential-injecting API gateway end to end: a real HTTPS upstream
# (e2e/gateway/upstream.py, certificate from a CA made here) in the internet netns, the real init programs
# the pod netns, the real sidecar runs there as UID 1337 with the key file readable only by it, and the
# agent (UID 1000) calls http://127.0.0.1:15080/<api>/... with curl. Checks: the key arrives upstream and
# never reaches the agent (not even when the upstream reflects it), the agent's own key header is
# replaced, hop-by-hop headers stop at the gateway, SSE arrives event by event, caller token (401, never
# forwarded), 429 + Retry-After, 403 method/prefix, 404, 400 traversal, 502 down, 504 slow, a 20 MB
# upload (Content-Length and chunked) hashes the same upstream, back-pressured download, key rotation
# without restart, the audit lines (no query values, no key) and metrics, and that the agent cannot reach
# the upstream directly. Paths an upstream normalises out of a prefix (";", double encoding,
# overlong UTF-8, "...", "//") → 400; a 1000-byte key echoed in 7-byte pieces is masked; an echo
# asked for gzip-coded or in part (Range) comes back whole and identity-coded, masked, and an upstream that
# compresses or cuts unasked is refused (502); SIGTERM lets an
# SSE stream in flight complete, then exits 0 within the drain time, and exits at once with nothing in flight;
# the sidecar built with ASan + UBSan serves the gateway's paths and exits 0 with no report.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skgw
HERE=$SK_ROOT/e2e/gateway
PY=/usr/bin/python3
UP4=198.18.1.60 DOWN4=198.18.1.61
GW=http://127.0.0.1:15080
# The sidecar: a short idle timeout for the 504 case; drain time 8 s (the SIGTERM checks measure against it).
SIDECAR_ENV=(STOCKADE_API_IDLE_TIMEOUT_MS=2000 STOCKADE_API_CONNECT_TIMEOUT_MS=3000 STOCKADE_DRAIN_SECONDS=8)
# SK_SIDECAR_ROOT=<an unpacked sidecar image> (e2e/images.test.sh): the image's binary, run by the image's
# loader with the image's library dir first, so libc and the dlopen'ed libcurl are the image's too.
if [ -n "${SK_SIDECAR_ROOT:-}" ]; then
	SK_SIDECAR=("$SK_SIDECAR_ROOT/lib64/ld-linux-x86-64.so.2" --library-path "$SK_SIDECAR_ROOT/lib/x86_64-linux-gnu"
		--argv0 stockade-sidecar "$SK_SIDECAR_ROOT/usr/local/bin/stockade-sidecar")
fi

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
C=(curl -sS --max-time 30)
up_last() { tail -1 "$SK_TMP/upstream.log"; }
# up_hdr NAME: values of header NAME in the last request the upstream received, one per line
up_hdr() { up_last | "$PY" -c 'import json,sys; [print(v) for k,v in json.load(sys.stdin)["headers"] if k.lower()==sys.argv[1]]' "$1"; }
code() { agent "${C[@]}" -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }

real_pid() { sk_pod "$NS" ss -Htlnp 'sport = :15080' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
# term_sidecar — SIGTERM to the sidecar listening on the gateway port (else the last one started); never
# `kill -TERM 0`, which is this suite's own process group (a case run alone had no REAL_PID).
term_sidecar() { local p; p=$(real_pid); kill -TERM "${p:-$SK_SIDECAR_PID}"; }
metrics() { sk_pod "$NS" curl -sS --max-time 5 http://127.0.0.1:15000/metrics; }
since() { "$PY" -c "import sys; print(round($(date +%s.%N) - $1, 2))"; }
# aq KEY=VALUE... — how many api lines of the audit log have all these fields
aq() { "$PY" - "$SK_TMP/audit.log" "$@" <<'PYEOF'
import json,sys
ls=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
api=[o for o in ls if o.get("event")=="api"]
want=dict(a.split("=",1) for a in sys.argv[2:])
print(sum(1 for o in api if all(str(o.get(k))==v for k,v in want.items())))
PYEOF
}

api() { # name upstream [extra yaml lines...]
	local n=$1 u=$2; shift 2
	printf '  - name: %s\n    upstream: %s\n    caFile: %s\n    header: { name: x-api-key, valueFile: %s }\n' \
		"$n" "$u" "$SK_TMP/ca.pem" "$SK_TMP/secrets/llm-key"
	local l; for l in "$@"; do printf '    %s\n' "$l"; done
}

setup() {
	sk_require_root
	sk_tmp skgw
	# --- CA, upstream certificate, secrets (readable by the sidecar UID only) ---
	(
		cd "$SK_TMP" || exit 1
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
			-days 2 -subj /CN=stockade-gw-test-ca
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=llm.example
		printf 'subjectAltName=DNS:llm.example,DNS:down.example\n' >up.ext
		openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 2 -extfile up.ext
		head -c 20M /dev/urandom >big
	) >"$SK_TMP/setup.log" 2>&1 || { echo "certificate setup failed"; cat "$SK_TMP/setup.log"; exit 1; }
	chmod 644 "$SK_TMP"/*.pem "$SK_TMP/big"
	BIG_SHA=$(sha256sum <"$SK_TMP/big" | cut -d' ' -f1)
	KEY="sk-test-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	KEY2="sk-rotated-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	TOKEN="tok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	# A 1000-byte key: keys over 256 bytes were once not masked when echoed.
	LONGKEY="sk-long-$(head -c 2000 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 992)"
	mkdir -p "$SK_TMP/secrets"
	printf '%s\n' "$KEY" >"$SK_TMP/secrets/llm-key"
	printf '%s\n' "$LONGKEY" >"$SK_TMP/secrets/long-key"
	printf '%s\n' "$TOKEN" >"$SK_TMP/secrets/caller-token"
	chown -R "$SK_SIDECAR_UID:$SK_SIDECAR_UID" "$SK_TMP/secrets"
	chmod 700 "$SK_TMP/secrets"; chmod 400 "$SK_TMP/secrets"/*

	{
		cat <<POL
egress:
  - host: allowed.example
    ports: [443]
blockPrivate: true
loopback: allow
apis:
POL
		api llm https://llm.example
		api base https://llm.example/base
		api tok https://llm.example "callerToken: $SK_TMP/secrets/caller-token"
		api lim https://llm.example "rateLimit: { rps: 0.2, burst: 2 }"
		api ro https://llm.example "methods: [GET, HEAD]" "pathPrefixes: [/echo]"
		api down https://down.example
		printf '  - name: long\n    upstream: https://llm.example\n    caFile: %s\n    header: { name: x-api-key, valueFile: %s }\n' \
			"$SK_TMP/ca.pem" "$SK_TMP/secrets/long-key"
	} | sk_policy policy.yaml

	# --- namespaces, name resolution for the sidecar, the upstream ---
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	sk_net_add_ip "$NS" "$UP4"
	sk_net_add_ip "$NS" "$DOWN4"
	# `ip netns exec` bind-mounts this over /etc/hosts for everything started in the pod netns.
	printf '127.0.0.1 localhost\n::1 localhost\n%s llm.example\n%s down.example\n' "$UP4" "$DOWN4" \
		>"/etc/netns/$NS-pod/hosts"
	: >"$SK_TMP/upstream.log"
	sk_inet "$NS" "$PY" "$HERE/upstream.py" --addr "$UP4" --port 443 --cert "$SK_TMP/up.pem" --key "$SK_TMP/up.key" \
		--log "$SK_TMP/upstream.log" >"$SK_TMP/upstream.out" 2>&1 &
	sk_wait_port "$NS-net" tcp 443 10 || { echo "upstream did not start"; cat "$SK_TMP/upstream.out"; exit 1; }

	# --- the real init programs the pod netns, the sidecar runs as its own UID ---
	sk_pod_up "$NS" "$SK_TMP/policy.yaml" "${SIDECAR_ENV[@]}"
	sk_check_eq "gateway listens on loopback only (127.0.0.1 and ::1)" "127.0.0.1:15080 [::1]:15080" \
		"$(sk_pod "$NS" ss -Htln 'sport = :15080' | awk '{print $4}' | sort | tr '\n' ' ' | sed 's/ $//')"
}

# --- the key arrives upstream; the agent never sees it ---
t_key() {
	sk_check "control: the sidecar UID reads the key file" sk_pod_as "$NS" "$SK_SIDECAR_UID" grep -qF "$KEY" "$SK_TMP/secrets/llm-key"
	sk_check_fails "the agent cannot read the key file" sk_pod_as "$NS" "$SK_AGENT_UID" cat "$SK_TMP/secrets/llm-key"
	resp=$(agent "${C[@]}" -i "$GW/llm/echo?x=1" 2>&1)
	sk_check "GET /llm/echo → 200" grep -q '^HTTP/1.1 200' <<<"$resp"
	sk_check_eq "the upstream received the key from the valueFile" "$KEY" "$(up_hdr x-api-key)"
	sk_check_eq "the upstream saw Host llm.example (set from the upstream URL)" "llm.example" "$(up_hdr host)"
	sk_check_eq "the upstream got the path and query" "/echo?x=1" "$(up_last | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["path"])')"
	if [ -n "${SK_SIDECAR_ROOT:-}" ]; then
		# After the first forwarded request the sidecar has dlopen'ed libcurl: the image's, not the host's.
		gw_pid=$(sk_pod "$NS" ss -Htlnp 'sport = :15080' | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1)
		sk_check_eq "the sidecar mapped the image's libcurl (and no other)" \
			"$(readlink -f "$SK_SIDECAR_ROOT/lib/x86_64-linux-gnu/libcurl.so.4")" \
			"$(awk '$6 ~ /libcurl/ { print $6 }' "/proc/${gw_pid:-0}/maps" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//')"
	fi
	want=$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1)
	sk_check "the echoed sha256 of the key matches (the key made the round trip)" grep -q "$want" <<<"$resp"
	sk_check_fails "the key itself is nowhere in the agent's response (headers + body)" grep -qF "$KEY" <<<"$resp"
	sk_check "a reflected key is masked in place (X-Echo-Auth: ****)" grep -qiE '^x-echo-auth: \*{10,}' <<<"$resp"
	resp=$(agent "${C[@]}" -i -H "x-api-key: agent-chosen" -H "X-API-KEY: again" "$GW/llm/echo" 2>&1)
	sk_check_eq "the agent's own x-api-key headers are replaced by the secret (one value upstream)" "$KEY" "$(up_hdr x-api-key)"
	sk_check "…that request was answered (200), the control for the next check" grep -q '^HTTP/1.1 200' <<<"$resp"
	sk_check_fails "…and the key still never reaches the agent" grep -qF "$KEY" <<<"$resp"
	agent "${C[@]}" -o /dev/null -H 'Connection: keep-alive, X-Hop' -H 'X-Hop: 1' -H 'Keep-Alive: timeout=5' \
		-H 'Proxy-Authorization: Basic Zm9vOmJhcg==' -H 'TE: trailers' -H 'X-Keep: yes' "$GW/llm/echo"
	sk_check_eq "hop-by-hop headers (and those named in Connection) are not forwarded" "" \
		"$(for h in x-hop keep-alive proxy-authorization te connection upgrade; do up_hdr $h; done)"
	sk_check_eq "end-to-end headers are forwarded" "yes" "$(up_hdr x-keep)"
	sk_check_eq "IPv6 loopback works too" 200 "$(code 'http://[::1]:15080/llm/ok')"
	sk_check_eq "a base path in the upstream URL is kept (/base/…)" "/base/echo" \
		"$(agent "${C[@]}" "$GW/base/echo" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["path"])')"
	sk_check_eq "HEAD is forwarded as HEAD" "200 HEAD" \
		"$(code -I "$GW/llm/echo") $(up_last | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["method"])')"
	out=$(agent "${C[@]}" -v "$GW/llm/ok" "$GW/llm/ok" 2>&1)
	sk_check "keep-alive: two requests on one agent connection" grep -q 'Re-using existing connection' <<<"$out"
	sleep 0.3   # (audit lines are written as requests end)
	sk_check_eq "audit: the first echo is logged with api, method, path (query values dropped), status" 1 \
		"$(aq api=llm method=GET 'path=/echo?x=' status=200 decision=allow)"
	sk_check "metrics: stockade_api_requests_total by api and status" \
		grep -q 'stockade_api_requests_total{api="llm",status="200"}' <<<"$(metrics)"
}

# --- a 1000-byte key echoed back in 7-byte pieces (many reads) is masked wherever it lands ---
t_long_key() {
	resp=$(agent "${C[@]}" -i "$GW/long/reflect?piece=7&ms=1&times=3" 2>&1)
	sk_check "1000-byte key: GET /long/reflect → 200" grep -q '^HTTP/1.1 200' <<<"$resp"
	sk_check_eq "1000-byte key: the upstream received it" "$LONGKEY" "$(up_hdr x-api-key)"
	sk_check_fails "1000-byte key echoed in 7-byte pieces never reaches the agent (headers + body)" grep -qF "$LONGKEY" <<<"$resp"
	sk_check_eq "…masked in place at full length: 3 times in the body, once in X-Echo-Auth" 4 \
		"$(grep -oE 'key=\*{1000};|^[Xx]-[Ee]cho-[Aa]uth: \*{1000}' <<<"$resp" | wc -l)"
	sk_check "…and the body around it is intact" grep -q '^key=\*\{1000\};key=\*\{1000\};key=\*\{1000\};end' <<<"$resp"
}

# --- compressed and partial echoes: the redaction searches the body as it travels, so the
# upstream is asked for the whole body, identity-coded, and one that answers otherwise is refused ---
# gz_get ARGS... — the agent's GET through the gateway: prints the status, then the response head and the
# body gunzipped when it is gzip (Content-Encoding, or bare gzip bytes under the gateway's own chunking)
gz_get() {
	agent "${C[@]}" -i "$@" >"$SK_TMP/gz.out" 2>/dev/null
	"$PY" - "$SK_TMP/gz.out" <<'PYEOF'
import gzip,sys
head, _, body = open(sys.argv[1], "rb").read().partition(b"\r\n\r\n")
sys.stdout.buffer.write(head.split(b" ")[1] + b"\n" if head else b"000\n")
sys.stdout.buffer.write(head + b"\r\n\r\n" + (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body))
PYEOF
}
t_compressed() {
	local suffix=${KEY:1}   # a range from the key's second byte on: what a partial echo would carry
	resp=$(gz_get --compressed "$GW/llm/gzecho")
	sk_check_eq "curl --compressed: the upstream is asked for identity only" "identity" "$(up_hdr accept-encoding)"
	sk_check "…the echo arrives (200), the key masked in place" grep -qE "^key=\*{${#KEY}};" <<<"$resp"
	sk_check_fails "…and neither the key nor a part of it reaches the agent" grep -qF "$suffix" <<<"$resp"
	resp=$(gz_get -H 'Accept-Encoding: gzip;q=1.0, identity;q=0' -H 'accept-encoding: br, GZIP' "$GW/llm/gzecho")
	sk_check_eq "Accept-Encoding with q-values, twice, any case: only identity goes upstream" "identity" "$(up_hdr accept-encoding)"
	sk_check_fails "…and the key does not reach the agent" grep -qF "$suffix" <<<"$resp"
	resp=$(gz_get -H 'Range: bytes=5-' -H 'If-Range: "x"' -H 'A-IM: gzip' -H 'Want-Digest: crc32c' -H 'TE: gzip' "$GW/llm/gzecho")
	sk_check_eq "Range, If-Range, A-IM, Want-Digest, TE are not forwarded" "" \
		"$(for h in range if-range a-im want-digest te; do up_hdr $h; done)"
	sk_check_eq "…the whole body comes back (200, not 206)" 200 "$(head -1 <<<"$resp")"
	sk_check "…the key masked in place" grep -qE "^key=\*{${#KEY}};" <<<"$resp"
	sk_check_fails "…and no part of the key that starts inside it (Range: bytes=5-) reaches the agent" grep -qF "$suffix" <<<"$resp"
	# An upstream that does it unasked: nothing of its body is relayed.
	for f in gzip te part; do
		resp=$(gz_get --compressed "$GW/llm/gzecho?force=$f")
		sk_check_eq "upstream sends $f unasked → 502" 502 "$(head -1 <<<"$resp")"
		sk_check_fails "…and no part of the key reaches the agent ($f)" grep -qF "$suffix" <<<"$resp"
	done
	sk_check_eq "HEAD of a gzip-coded resource is relayed (no body)" 200 "$(code -I --compressed "$GW/llm/gzecho?force=gzip")"
	sleep 0.3
	sk_check_eq "audit: the compressed answers are logged as upstream_encoding" 2 \
		"$(aq api=llm status=502 decision=allow reason=upstream_encoding)"
	sk_check_eq "audit: the partial answer is logged as upstream_partial" 1 "$(aq api=llm status=502 decision=allow reason=upstream_partial)"
}

# --- streaming: events arrive as they are sent, not all at the end ---
t_sse() {
	mapfile -t ev < <(agent "$PY" "$HERE/client.py" sse 127.0.0.1 15080 '/llm/sse?n=5&ms=300')
	sk_check_eq "SSE: 5 events arrive" 5 "${#ev[@]}"
	sk_check "SSE: client arrival gaps track the server's 300 ms spacing (${ev[*]:-none})" "$PY" -c '
import sys
a=[float(x.split()[0]) for x in sys.argv[1:]]; s=[float(x.split()[1]) for x in sys.argv[1:]]
ga=[y-x for x,y in zip(a,a[1:])]; gs=[y-x for x,y in zip(s,s[1:])]
ok=len(a)==5 and all(0.2<=g<=0.6 for g in ga) and all(abs(p-q)<0.15 for p,q in zip(ga,gs)) and a[0]<0.5
sys.exit(0 if ok else 1)' "${ev[@]}"
	agent timeout 0.5 "$PY" "$HERE/client.py" sse 127.0.0.1 15080 '/llm/sse?n=6&ms=300&gone=1' >/dev/null 2>&1
	sleep 1.8
	sk_check_eq "SSE: an agent that hangs up mid-stream ends the transfer (audited client_gone)" 1 \
		"$(grep -c '"path":"/sse?n=&ms=&gone=".*"reason":"client_gone"' "$SK_TMP/audit.log")"
}

# --- caller token ---
t_caller_token() {
	sk_check_eq "callerToken: missing → 401" 401 "$(code "$GW/tok/echo")"
	sk_check_eq "callerToken: wrong → 401" 401 "$(code -H 'Authorization: Bearer nope' "$GW/tok/echo")"
	sk_check_eq "callerToken: right prefix only → 401" 401 "$(code -H "Authorization: Bearer ${TOKEN%?}" "$GW/tok/echo")"
	sk_check_eq "callerToken: Authorization: Bearer → 200" 200 "$(code -H "Authorization: Bearer $TOKEN" "$GW/tok/echo")"
	sk_check_eq "callerToken: not forwarded upstream (Authorization)" "" "$(up_hdr authorization)"
	sk_check_eq "callerToken: X-Stockade-Token → 200" 200 "$(code -H "X-Stockade-Token: $TOKEN" "$GW/tok/echo")"
	sk_check_eq "callerToken: not forwarded upstream (X-Stockade-Token)" "" "$(up_hdr x-stockade-token)"
	sleep 0.3
	sk_check_eq "audit: 401s are logged as deny/bad_token" 3 "$(aq api=tok status=401 decision=deny reason=bad_token)"
}

# --- rate limit, method/prefix, unknown api, traversal ---
t_guards() {
	codes=$(for _ in 1 2 3; do code "$GW/lim/ok"; echo -n ' '; done)
	sk_check_eq "rate limit (burst 2): third request → 429" "200 200 429 " "$codes"
	ra=$(agent "${C[@]}" -D - -o /dev/null "$GW/lim/ok" | tr -d '\r' | awk -F': ' 'tolower($1)=="retry-after"{print $2}')
	sk_check "429 carries Retry-After in whole seconds (got '${ra:-}')" test "${ra:-0}" -ge 1 -a "${ra:-0}" -le 5
	sk_check_eq "methods: POST to a GET-only api → 403" 403 "$(code -X POST -d x "$GW/ro/echo")"
	sk_check_eq "pathPrefixes: /ok outside [/echo] → 403" 403 "$(code "$GW/ro/ok")"
	sk_check_eq "pathPrefixes: /echo inside → 200" 200 "$(code "$GW/ro/echo")"
	sk_check_eq "pathPrefixes: /echoes is not /echo → 403" 403 "$(code "$GW/ro/echoes")"
	sk_check_eq "unknown api → 404" 404 "$(code "$GW/nope/echo")"
	body=$(agent "${C[@]}" "$GW/nope/echo")
	sk_check "404 has a JSON error body" "$PY" -c 'import json,sys; sys.exit(0 if "error" in json.loads(sys.argv[1]) else 1)' "$body"
	sk_check_eq "traversal /../ → 400" 400 "$(code --path-as-is "$GW/ro/echo/../ok")"
	sk_check_eq "traversal %2e%2e → 400" 400 "$(code "$GW/ro/echo/%2e%2E/ok")"
	sk_check_eq "traversal ..%2f → 400" 400 "$(code "$GW/llm/a/..%2fb")"
	sk_check_eq "encoded NUL in the path → 400" 400 "$(code "$GW/llm/a%00b")"
	# spellings an upstream normalises out of a prefix (Tomcat ";", double decoding, overlong UTF-8)
	for p in '/ro/echo/..;/ok' '/ro/echo/%2e%2e;/ok' '/ro/echo/%252e%252e/ok' '/ro/echo/%c0%ae%c0%ae/ok' \
		'/ro/echo/.../ok' '/ro/echo//ok' '/ro/echo/%ef%bc%8e%ef%bc%8e/ok'; do
		sk_check_eq "traversal $p → 400" 400 "$(code --path-as-is "$GW$p")"
	done
	sk_check_eq "';' in the query is fine → 200" 200 "$(code "$GW/ro/echo?x=a;b")"
	sk_check_eq "%20 and a valid UTF-8 escape in the path are fine (upstream's 404)" "404 404" \
		"$(code "$GW/llm/a%20b") $(code "$GW/llm/files/%E2%9C%93")"
	sk_check_eq "raw CR/LF in the request line → 400" "HTTP/1.1 400 Bad Request" \
		"$(agent "$PY" "$HERE/client.py" raw 127.0.0.1 15080 'GET /llm/a\rb HTTP/1.1\r\nHost: x\r\n\r\n')"
	sk_check_eq "TRACE is refused (it would echo the key) → 405" 405 "$(code -X TRACE "$GW/llm/echo")"
	sleep 0.3
	sk_check_eq "audit: 429 logged" 2 "$(aq api=lim status=429 reason=rate_limit)"
	sk_check "metrics: unknown api names share one label" grep -q 'stockade_api_requests_total{api="unknown",status="404"}' <<<"$(metrics)"
}

# --- upstream failures ---
t_upstream_failures() {
	resp=$(agent "${C[@]}" -w '\n%{http_code}' "$GW/down/echo")
	sk_check_eq "upstream down → 502" 502 "${resp##*$'\n'}"
	sk_check "502 body is JSON {\"error\":...}" "$PY" -c 'import json,sys; sys.exit(0 if "error" in json.loads(sys.argv[1]) else 1)' "${resp%$'\n'*}"
	t0=$(date +%s.%N)
	sk_check_eq "slow upstream (idle timeout 2 s) → 504" 504 "$(code "$GW/llm/slow?s=8")"
	took=$("$PY" -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
	sk_check "504 came from the idle timeout, not the client (took ${took}s)" "$PY" -c "import sys; sys.exit(0 if 1.5 <= $took <= 5 else 1)"
	sleep 0.3
	sk_check_eq "audit: 504 logged as upstream_timeout" 1 "$(aq api=llm status=504 reason=upstream_timeout)"
}

# --- bodies: 20 MB upload with Content-Length and chunked; back-pressured download ---
t_bodies() {
	got=$(agent "${C[@]}" -H 'Content-Type: application/octet-stream' --data-binary @"$SK_TMP/big" "$GW/llm/upload")
	sk_check_eq "20 MB upload (Content-Length) streams and hashes the same upstream" "$BIG_SHA" \
		"$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["sha256"])' "$got" 2>/dev/null)"
	got=$(agent "${C[@]}" -X POST -H 'Content-Type: application/octet-stream' -T - "$GW/llm/upload" <"$SK_TMP/big")
	sk_check_eq "20 MB upload (chunked from the agent) streams and hashes the same upstream" "$BIG_SHA" \
		"$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["sha256"])' "$got" 2>/dev/null)"
	zero=$(head -c 16M /dev/zero | sha256sum | cut -d' ' -f1)
	sk_check_eq "16 MB download to a slow reader (back-pressure) is intact" "$zero" \
		"$(agent "${C[@]}" --limit-rate 8M "$GW/llm/big?mb=16" | sha256sum | cut -d' ' -f1)"
	sleep 0.3
	sk_check "audit: the 20 MB uploads are logged with bytes_out" "$PY" -c '
import json,sys
n=sum(1 for l in open(sys.argv[1]) if (o:=json.loads(l)).get("event")=="api" and o.get("bytes_out",0)>=20*2**20)
sys.exit(0 if n==2 else 1)' "$SK_TMP/audit.log"
}

# --- key rotation: rewrite the valueFile (atomic rename, as a Secret update does) ---
t_rotation() {
	printf '%s\n' "$KEY2" >"$SK_TMP/secrets/.new" && chown "$SK_SIDECAR_UID" "$SK_TMP/secrets/.new" &&
		mv -f "$SK_TMP/secrets/.new" "$SK_TMP/secrets/llm-key"
	agent "${C[@]}" -o /dev/null "$GW/llm/echo"
	sk_check_eq "rotation: the next request carries the new key (no restart)" "$KEY2" "$(up_hdr x-api-key)"
	printf '%s\n' "$KEY" >"$SK_TMP/secrets/llm-key"   # in place this time
	agent "${C[@]}" -o /dev/null "$GW/llm/echo"
	sk_check_eq "rotation: an in-place rewrite is picked up too" "$KEY" "$(up_hdr x-api-key)"
}

# --- the agent cannot go around the gateway ---
t_no_bypass() {
	sk_check "control: the sidecar UID reaches the upstream directly (it is up, the URL is right)" \
		sk_pod_as "$NS" "$SK_SIDECAR_UID" curl -sSf --max-time 5 --cacert "$SK_TMP/ca.pem" \
		--resolve "llm.example:443:$UP4" https://llm.example/echo
	sk_check_fails "the agent cannot reach the upstream directly (no egress rule)" \
		agent curl -sS --max-time 5 --cacert "$SK_TMP/ca.pem" --resolve "llm.example:443:$UP4" https://llm.example/echo
}

# --- the audit log as a whole; the sidecar still up ---
t_audit_log() {
	# control: a request in this case whose upstream echoes the key, audited, so the logs checked below
	# hold at least one keyed request (the case run alone included)
	sk_check "control: a keyed request through the gateway (GET /llm/echo)" agent "${C[@]}" -f -o /dev/null "$GW/llm/echo?case=audit_log"
	sleep 0.3
	sk_check "control: the audit log records it" grep -qF '"path":"/echo?case="' "$SK_TMP/audit.log"
	sk_check "every audit line is one JSON object" "$PY" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$SK_TMP/audit.log"
	sk_check_fails "the key appears in no audit or log line" grep -qF -e "$KEY" -e "$KEY2" -e "$TOKEN" -e "$LONGKEY" \
		"$SK_TMP/audit.log" "$SK_TMP/sidecar.err"
	REAL_PID=$(real_pid)
	sk_check "the sidecar is still running" kill -0 "${REAL_PID:-0}"
}

# --- SIGTERM drain: an API stream in flight keeps the sidecar up until it completes,
# though no proxied connection is open; an idle keep-alive connection does not. ---
t_sigterm() {
	agent "$PY" "$HERE/client.py" keepalive 127.0.0.1 15080 /llm/ok 20 >"$SK_TMP/ka1.out" 2>&1 &
	KA=$!
	agent "$PY" "$HERE/client.py" sse 127.0.0.1 15080 '/llm/sse?n=10&ms=300' >"$SK_TMP/drain-sse.out" 2>&1 &
	SSE=$!
	sleep 1   # a few events in
	t0=$(date +%s.%N)
	term_sidecar
	sleep 0.3
	sk_check_eq "drain: no new API connection is accepted" 000 "$(code --max-time 2 "$GW/llm/ok")"
	wait "$SSE"
	sk_check_eq "drain: the SSE stream running across SIGTERM completes (all 10 events)" 10 \
		"$(grep -c . "$SK_TMP/drain-sse.out")"
	# The status comes back through the background job that started it (the sanitizers case runs an ASan build).
	rc=0; wait "$SK_SIDECAR_PID" || rc=$?
	took=$(since "$t0")
	sk_check_eq "SIGTERM: the sidecar exits 0" 0 "$rc"
	sk_check "SIGTERM: it exits after the stream (2.1 s left) and within the drain time (8 s): took ${took}s" \
		"$PY" -c "import sys; sys.exit(0 if 1.2 <= $took <= 7.5 else 1)"
	wait "$KA"
	sk_check "drain: the idle keep-alive connection got its answer, then was closed, not waited for ($(tr '\n' ' ' <"$SK_TMP/ka1.out"))" \
		grep -qE '^closed ' "$SK_TMP/ka1.out"

	# --- nothing in flight (only an idle keep-alive connection): SIGTERM exits promptly ---
	sk_sidecar_start "$NS" "$SK_TMP/audit2.log" "$SK_TMP/sidecar2.err" "${SIDECAR_ENV[@]}" -- \
		--policy "$SK_TMP/policy.yaml" --marker "$SK_TMP/marker"
	SK_AUDIT_LOGS+=("$SK_TMP/audit2.log")
	sk_wait_port "$NS-pod" tcp 15080 10 || { echo "sidecar did not restart"; cat "$SK_TMP/sidecar2.err"; }
	agent "$PY" "$HERE/client.py" keepalive 127.0.0.1 15080 /llm/ok 20 >"$SK_TMP/ka2.out" 2>&1 &
	KA=$!
	for _ in $(seq 50); do grep -q 'HTTP/1.1 200' "$SK_TMP/ka2.out" && break; sleep 0.1; done
	t0=$(date +%s.%N)
	term_sidecar
	rc=0; wait "$SK_SIDECAR_PID" || rc=$?
	took=$(since "$t0")
	sk_check_eq "SIGTERM with nothing in flight: exits 0" 0 "$rc"
	sk_check "SIGTERM with nothing in flight (an idle keep-alive open): exits promptly (took ${took}s)" \
		"$PY" -c "import sys; sys.exit(0 if $took <= 1.0 else 1)"
	wait "$KA"
	sk_check "…and the idle agent connection is closed ($(tr '\n' ' ' <"$SK_TMP/ka2.out"))" grep -qE '^closed ' "$SK_TMP/ka2.out"
}

# --- the sidecar under ASan + UBSan (this suite grepped the release binary's stderr for
# sanitizer reports, which it cannot write). The sanitized build (make build/san/bin/stockade-sidecar; make e2e
# builds it) serves the gateway's paths — an echo masked in the head and body, a long key in pieces, a refused
# gzip and partial answer, a chunked upload, an SSE stream the agent leaves, a keep-alive pair, 401, 404,
# 502 — then SIGTERM: it must exit 0 (a leak or a memory error exits 1) and write no report. Its positive
# control: the same binary, started the same way, writes its runtime's flag list into the stderr file read. ---
SK_SAN_SIDECAR=${SK_SAN_SIDECAR:-$SK_BIN/../san/bin/stockade-sidecar}
t_sanitizers() {
	sk_check "the ASan+UBSan sidecar is built ($SK_SAN_SIDECAR: make build/san/bin/stockade-sidecar)" \
		test -x "$SK_SAN_SIDECAR" || return 0
	# The suite's own sidecar (still up when the sigterm case did not run) gives up the ports first.
	if [ -n "$(real_pid)" ]; then term_sidecar; wait "$SK_SIDECAR_PID" 2>/dev/null; fi
	local -a SK_SIDECAR=("$SK_SAN_SIDECAR")   # what sk_sidecar_start runs
	local err=$SK_TMP/sidecar-san.err ctl=$SK_TMP/sidecar-san-control.err
	: >"$ctl"
	sk_sidecar_start "$NS" /dev/null "$ctl" ASAN_OPTIONS=help=1 -- --version
	wait "$SK_SIDECAR_PID"
	sk_check "positive control: the runtime's output (ASAN_OPTIONS=help=1) reaches the stderr file read below" \
		grep -q 'Available flags for AddressSanitizer' "$ctl"
	: >"$err"
	sk_sidecar_start "$NS" "$SK_TMP/audit-san.log" "$err" "${SIDECAR_ENV[@]}" -- \
		--policy "$SK_TMP/policy.yaml" --marker "$SK_TMP/marker"
	SK_AUDIT_LOGS+=("$SK_TMP/audit-san.log")
	sk_sidecar_wait "$NS" 20 || { sk_fail "the ASan sidecar listens" "$(tail -5 "$err")"; return 0; }
	local got
	got=$(for u in llm/echo 'long/reflect?piece=7&ms=0&times=2' llm/gzecho 'llm/gzecho?force=gzip' \
		'llm/gzecho?force=part' tok/echo nope/x down/echo; do code --compressed "$GW/$u"; echo -n ' '; done)
	sk_check_eq "ASan sidecar: echo, long key, gzecho, refused gzip and part, 401, 404, 502" \
		"200 200 200 502 502 401 404 502 " "$got"
	sk_check_fails "ASan sidecar: the key never reaches the agent" grep -qF "$KEY" <<<"$(agent "${C[@]}" -i "$GW/llm/echo")"
	head -c 1M /dev/urandom >"$SK_TMP/san-up"; chmod 644 "$SK_TMP/san-up"
	sk_check_eq "ASan sidecar: a chunked upload arrives whole" "$(sha256sum <"$SK_TMP/san-up" | cut -d' ' -f1)" \
		"$(agent "${C[@]}" -X POST -T - "$GW/llm/upload" <"$SK_TMP/san-up" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha256"])' 2>/dev/null)"
	agent timeout 0.5 "$PY" "$HERE/client.py" sse 127.0.0.1 15080 '/llm/sse?n=4&ms=300&gone=1' >/dev/null 2>&1
	out=$(agent "${C[@]}" -v "$GW/llm/ok" "$GW/llm/ok" 2>&1)
	sk_check "ASan sidecar: keep-alive pair" grep -q 'Re-using existing connection' <<<"$out"
	sleep 1
	term_sidecar
	local rc=0; wait "$SK_SIDECAR_PID" || rc=$?
	sk_check_eq "ASan sidecar: SIGTERM → exit 0 (a leak or a memory error exits non-zero)" 0 "$rc"
	# grep -c, not a failing grep: a missing file is an error here, not a pass.
	sk_check_eq "no ASan/LSan/UBSan report in the ASan sidecar's stderr" 0 "$(grep -cE 'Sanitizer|runtime error' "$err")"
}

SK_CASES=(key long_key compressed sse caller_token guards upstream_failures bodies rotation no_bypass audit_log sigterm sanitizers)
sk_main "$@"
