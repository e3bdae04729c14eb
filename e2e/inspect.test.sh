#!/usr/bin/env bash
# e2e/inspect.test.sh — TLS inspection end to end (docs/policy.md "Inspecting TLS"): the real init and
# sidecar, an agent (UID 1000) trusting the pod CA from the admin port's /ca.pem, HTTPS upstreams in the
# internet netns with certificates from a test CA the sidecar trusts through tls.upstreamCAFile, each
# logging every request line it gets. On inspect rules: GET allowed and POST denied with the JSON 403 and
# its audit line; access: read-only; Host != SNI answered 421 (host_sni_mismatch); a request smuggled
# behind an allowed one on one keep-alive connection denied while the first passes; an upstream whose
# certificate names another host, or is self-signed, refused with upstream_cert_invalid (never passed
# through); the CA key out of UID 1000's reach (the sidecar is not dumpable). A rule without inspect
# still passes TLS untouched: the agent sees the real server's certificate. HTTP/2 streams judged one by
# one; real git (clone, fetch allowed; push refused) over HTTP/1.1 and HTTP/2; a pinning client fails
# closed with its line; a reload turning inspection on and off; the trust files the sidecar writes, which
# the variables a wrapped pod's agent gets make curl, Python, Node and Java trust.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skinsp
HERE=$SK_ROOT/e2e/inspect
PY=/usr/bin/python3
GH4=198.18.8.10 PYPI4=198.18.8.20 OPEN4=198.18.8.30 BAD4=198.18.8.40 SELF4=198.18.8.50 BUD4=198.18.8.60
GIT4=198.18.8.70
TOKEN=ghp_e2eRealTokenNeverSeenByTheAgent0123 PH=stockade-secret-github-e2e

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
aq() { "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/audit.log" "$@"; }
# how many times an upstream got this request line ("METHOD TARGET HOST")
seen() { grep -cxF -- "$1" "$SK_TMP/upstream.log"; }
settle() { sleep 0.3; }
# the refusal body's field K (the body is the last line of curl -i output)
field() { "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1]).get(sys.argv[1]))' "$1"; }

setup() {
	sk_require_root
	sk_tmp skinsp
	sk_ca "stockade e2e upstream CA" github pypi open wrong budget git
	# a self-signed certificate for self.example: no CA the sidecar trusts signed it
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$SK_TMP/self.key" \
		-out "$SK_TMP/self.pem" -days 2 -subj "/CN=self.example" -addext "subjectAltName=DNS:self.example" \
		>>"$SK_TMP/ca.log" 2>&1 || { echo "certificate setup failed"; exit 1; }
	chmod 644 "$SK_TMP"/self.*
	# the real token: the sidecar's alone (mode 0400, its UID), never the agent's
	mkdir -p "$SK_TMP/secret"
	printf '%s' "$TOKEN" >"$SK_TMP/secret/token"
	chown -R "$SK_SIDECAR_UID" "$SK_TMP/secret"
	chmod 700 "$SK_TMP/secret"
	chmod 400 "$SK_TMP/secret/token"
	sk_policy policy.yaml <<POL
egress:
  - host: github.example
    ports: [443]
    name: github
    inspect: true
    requests:
      - { methods: [GET, HEAD], paths: ["/repos/acme/**"] }
  - host: pypi.example
    ports: [443]
    inspect: true
    access: read-only
  - host: open.example
    ports: [443]
  - host: bad.example
    ports: [443]
    inspect: true
  - host: self.example
    ports: [443]
    inspect: true
  - host: budget.example
    ports: [443]
    inspect: true
    budget: { sent: 8Ki, window: 1h }
  - host: git.example
    ports: [443]
    name: git
    inspect: true
    requests:
      - { methods: [GET], paths: ["/git/acme/*/info/refs"] }
      - { methods: [POST], paths: ["/git/acme/*/git-upload-pack"] }
      - { methods: [GET], paths: ["/ws/echo", "/nows/**"] }
secrets:
  - name: github
    valueFile: $SK_TMP/secret/token
    placeholder: stockade-secret-github-e2e
    hosts: [github.example]
    paths: ["/repos/acme/**"]
    in: [authorization]
tls:
  upstreamCAFile: $SK_TMP/ca.pem
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
POL
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	for ip in $GH4 $PYPI4 $OPEN4 $BAD4 $SELF4 $BUD4 $GIT4; do sk_net_add_ip "$NS" "$ip"; done
	# a bare repository with one commit, served by git http-backend (read-only for the agent by policy)
	mkdir -p "$SK_TMP/git/acme" "$SK_TMP/gitwork" "$SK_TMP/agenthome"
	(
		cd "$SK_TMP/gitwork" && git init -q -b main && echo hello >README &&
			git add README && git -c user.name=e2e -c user.email=e2e@example.invalid commit -qm first &&
			git clone -q --bare "$SK_TMP/gitwork" "$SK_TMP/git/acme/app.git"
	) >>"$SK_TMP/ca.log" 2>&1 || { echo "git repository setup failed"; exit 1; }
	chmod 777 "$SK_TMP/agenthome"
	: >"$SK_TMP/upstream.log"
	chmod 666 "$SK_TMP/upstream.log"
	local T=$SK_TMP
	sk_inet "$NS" env SK_GIT_ROOT="$T/git" "$PY" "$HERE/upstream.py" "$T/upstream.log" "$GH4:443:$T/github.pem:$T/github.key" \
		"$PYPI4:443:$T/pypi.pem:$T/pypi.key" "$OPEN4:443:$T/open.pem:$T/open.key" \
		"$BAD4:443:$T/wrong.pem:$T/wrong.key" "$SELF4:443:$T/self.pem:$T/self.key" \
		"$BUD4:443:$T/budget.pem:$T/budget.key" "$GIT4:443:$T/git.pem:$T/git.key" >"$T/upstream.out" 2>&1 &
	sk_inet "$NS" "$PY" "$SK_ROOT/e2e/proxy/servers.py" --files "$T" --dns "$SK_NET_IP4:53" \
		--record "github.example=$GH4" --record "pypi.example=$PYPI4" --record "open.example=$OPEN4" \
		--record "bad.example=$BAD4" --record "self.example=$SELF4" \
		--record "budget.example=$BUD4" --record "git.example=$GIT4" >"$T/dns.log" 2>&1 &
	if ! sk_wait_port "$NS-net" tcp 443 10 || ! sk_wait_port "$NS-net" udp 53 10; then
		echo "test servers did not start"; cat "$T/upstream.out" "$T/dns.log"; exit 1
	fi
	# the trust files' directory, as the pod's emptyDir: the sidecar's to write (t_trust_files)
	mkdir -p "$T/trust" && chown "$SK_SIDECAR_UID:$SK_SIDECAR_UID" "$T/trust" && chmod 755 "$T/trust"
	sk_pod_up "$NS" "$T/policy.yaml" STOCKADE_TRUST_DIR="$T/trust"
	# the agent's trust: the pod CA, as an init container or the agent's image would fetch it
	if sk_pod "$NS" curl -sS --max-time 5 -o "$T/podca.pem" http://127.0.0.1:15000/ca.pem &&
		grep -q 'BEGIN CERTIFICATE' "$T/podca.pem"; then
		chmod 644 "$T/podca.pem"
		sk_pass "the admin port serves the pod CA at /ca.pem"
	else
		sk_fail "the admin port serves the pod CA at /ca.pem"
	fi
	# HTTP/1.1 unless a case asks for HTTP/2 (t_http2): the HTTP/1 filter's cases say what they test
	CURL=(curl -sS --max-time 20 --cacert "$T/podca.pem" --http1.1)
}

t_get_allowed() {
	sk_check_eq "GET under /repos/acme/** passes, inside TLS" "ok GET /repos/acme/app" \
		"$(agent "${CURL[@]}" https://github.example/repos/acme/app 2>&1)"
	sk_check_eq "the query is not matched" "ok GET /repos/acme/app?page=2" \
		"$(agent "${CURL[@]}" 'https://github.example/repos/acme/app?page=2' 2>&1)"
	sk_check_eq "the upstream got it" 1 "$(seen "GET /repos/acme/app github.example")"
	sk_check_eq "an agent offering only http/1.1 is offered to the server as such (HTTP/1.1)" 1.1 \
		"$(agent "${CURL[@]}" --http1.1 -o /dev/null -w '%{http_version}' https://github.example/repos/acme/alpn 2>&1)"
	sk_check_eq "the upstream got that one over HTTP/1.1" 1 "$(seen "GET /repos/acme/alpn github.example")"
	# the agent was shown a leaf of the pod CA, not the server's certificate
	sk_check_fails "the test CA alone does not verify what the agent sees" \
		agent curl -sS --max-time 10 --cacert "$SK_TMP/ca.pem" https://github.example/repos/acme/app
	settle
	sk_check "the connection's audit line says inspected" test "$(aq event=conn decision=allow name=github.example inspected=True)" -ge 2
}

t_post_denied() {
	out=$(agent "${CURL[@]}" -i -X POST -d '{"title":"x"}' 'https://github.example/repos/acme/app/issues?token=s3cret' 2>&1)
	sk_check "POST is answered 403" grep -q '^HTTP/1.1 403' <<<"$out"
	sk_check "the 403 carries x-stockade-reason: no_request_rule" grep -qi '^x-stockade-reason: no_request_rule' <<<"$out"
	sk_check_eq "body: reason" no_request_rule "$(field reason <<<"$out")"
	sk_check_eq "body: rule" github "$(field rule <<<"$out")"
	sk_check_eq "body: method" POST "$(field method <<<"$out")"
	sk_check_eq "body: path (no query)" /repos/acme/app/issues "$(field path <<<"$out")"
	sk_check_eq "the upstream never got the POST" 0 "$(grep -c '^POST /repos/acme/app/issues' "$SK_TMP/upstream.log")"
	settle
	sk_check_eq "one audit line: deny request_denied, inspected, with method and path" 1 \
		"$(aq event=deny decision=deny reason=request_denied proto=tls rule=github inspected=True \
			method=POST path=/repos/acme/app/issues)"
	sk_check_eq "the query is never written to the audit log" 0 "$(grep -c s3cret "$SK_TMP/audit.log")"
	sk_check_eq "the connection's own allow line does not carry the refused request" 0 \
		"$(aq event=conn name=github.example method=POST)"
}

t_read_only() {
	sk_check_eq "read-only: GET passes" "ok GET /simple/requests/" \
		"$(agent "${CURL[@]}" https://pypi.example/simple/requests/ 2>&1)"
	sk_check_eq "read-only: HEAD passes" 200 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' -I https://pypi.example/simple/ 2>&1)"
	sk_check_eq "read-only: an upload is answered 403" 403 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' -X POST -d name=evil https://pypi.example/legacy/ 2>&1)"
	sk_check_eq "read-only: the upstream never got the upload" 0 "$(seen "POST /legacy/ pypi.example")"
}

t_host_not_sni() {
	out=$(agent "${CURL[@]}" -i -H 'Host: pypi.example' https://github.example/repos/acme/app 2>&1)
	sk_check "Host naming another allowed host than the SNI is answered 421" grep -q '^HTTP/1.1 421' <<<"$out"
	sk_check_eq "421 body: reason" host_sni_mismatch "$(field reason <<<"$out")"
	sk_check_eq "421 body: host (the Host asked for)" pypi.example "$(field host <<<"$out")"
	sk_check_eq "no upstream got it" 0 "$(grep -c 'pypi.example$' <(grep '^GET /repos/acme/app ' "$SK_TMP/upstream.log"))"
	settle
	sk_check_eq "audit: deny host_sni_mismatch on the SNI's name" 1 \
		"$(aq event=deny reason=host_sni_mismatch name=github.example method=GET path=/repos/acme/app)"
}

# Two requests in one write on one keep-alive TLS connection: the allowed GET's answer comes back, the
# DELETE behind it never reaches the upstream and is answered 403 after it.
t_smuggled_second_request() {
	out=$(agent "$PY" "$HERE/raw_tls.py" github.example 443 "$SK_TMP/podca.pem" <<'REQ'
GET /repos/acme/smuggle HTTP/1.1
Host: github.example

DELETE /repos/acme/smuggle HTTP/1.1
Host: github.example

REQ
	)
	sk_check "the first (allowed) request is answered by the upstream" grep -q '^ok GET /repos/acme/smuggle' <<<"$out"
	sk_check "the smuggled DELETE is answered 403 by the sidecar" grep -q '"method":"DELETE"' <<<"$out"
	sk_check "the 403 comes after the GET's response" "$PY" -c '
import sys; s=sys.argv[1]; a=s.find("ok GET /repos/acme/smuggle"); b=s.find("403 Forbidden"); sys.exit(0 if 0 <= a < b else 1)' "$out"
	sk_check_eq "the upstream never got the DELETE" 0 "$(seen "DELETE /repos/acme/smuggle github.example")"
	settle
	sk_check_eq "audit: the second request's deny names it (request 2)" 1 \
		"$(aq event=deny reason=request_denied request=2 rule=github method=DELETE)"
}

# HTTP/2 inside inspected TLS: every stream's :method, :path and :authority judged; a refused stream is
# answered by the sidecar and the connection goes on for the next one.
t_http2() {
	sk_check_eq "an agent offering h2 speaks HTTP/2 through the sidecar (the server chose h2)" 2 \
		"$(agent "${CURL[@]}" --http2 -o /dev/null -w '%{http_version}' https://github.example/repos/acme/h2 2>&1)"
	sk_check_eq "the upstream got it over HTTP/2" 1 "$(seen "GET /repos/acme/h2 github.example h2")"
	local h2=(-sS --max-time 20 --cacert "$SK_TMP/podca.pem" --http2)
	out=$(agent curl "${h2[@]}" -v https://github.example/repos/acme/one \
		--next "${h2[@]}" -i -X POST -d '{"t":1}' https://github.example/repos/acme/app/pulls \
		--next "${h2[@]}" https://github.example/repos/acme/three 2>&1)
	sk_check "HTTP/2: the first stream passes" grep -q '^ok GET /repos/acme/one' <<<"$out"
	sk_check "HTTP/2: the POST is answered 403 by the sidecar" grep -q '^HTTP/2 403' <<<"$out"
	sk_check "HTTP/2: the 403 carries x-stockade-reason: no_request_rule" grep -qi '^x-stockade-reason: no_request_rule' <<<"$out"
	sk_check "HTTP/2: the 403 body names the method and the path" grep -q '"method":"POST".*"path":"/repos/acme/app/pulls"' <<<"$out"
	sk_check "HTTP/2: the stream after the refused one passes on the same connection" grep -q '^ok GET /repos/acme/three' <<<"$out"
	sk_check "HTTP/2: one connection for the three" grep -q 'Re-using existing connection' <<<"$out"
	sk_check_eq "HTTP/2: the upstream never got the POST" 0 "$(grep -c '^POST /repos/acme/app/pulls' "$SK_TMP/upstream.log")"
	head -c 300000 /dev/zero >"$SK_TMP/upload.bin"
	chmod 644 "$SK_TMP/upload.bin"
	sk_check_eq "HTTP/2: a refused 300 KB upload still gets its 403 (the rest dropped, the agent not reset)" 403 \
		"$(agent curl "${h2[@]}" -o /dev/null -w '%{http_code}' --data-binary @"$SK_TMP/upload.bin" \
			https://github.example/repos/acme/app/releases 2>&1)"
	out=$(agent "${CURL[@]}" --http2 -i -H 'Host: pypi.example' https://github.example/repos/acme/app 2>&1)
	sk_check "HTTP/2: :authority naming another host than the SNI is answered 421" grep -q '^HTTP/2 421' <<<"$out"
	sk_check "HTTP/2: the 421 says host_sni_mismatch" grep -qi '^x-stockade-reason: host_sni_mismatch' <<<"$out"
	sk_check_eq "HTTP/2: read-only refuses a DELETE" 403 \
		"$(agent "${CURL[@]}" --http2 -o /dev/null -w '%{http_code}' -X DELETE https://pypi.example/simple/x 2>&1)"
	settle
	sk_check_eq "HTTP/2: one audit line for the refused POST" 1 \
		"$(aq event=deny reason=request_denied rule=github inspected=True method=POST path=/repos/acme/app/pulls)"
	sk_check "HTTP/2: one audit line for the 421" test "$(aq event=deny reason=host_sni_mismatch name=github.example)" -ge 1
}

t_upstream_cert_invalid() {
	sk_check_fails "an upstream with a certificate for another name: the agent's TLS fails" \
		agent "${CURL[@]}" https://bad.example/x
	sk_check_fails "a self-signed upstream: the agent's TLS fails" agent "${CURL[@]}" https://self.example/x
	sk_check_eq "neither upstream got a request" 0 "$(grep -c '^GET /x ' "$SK_TMP/upstream.log")"
	settle
	sk_check_eq "audit: deny upstream_cert_invalid for the wrong name" 1 \
		"$(aq event=deny decision=deny reason=upstream_cert_invalid name=bad.example inspected=True)"
	sk_check_eq "audit: deny upstream_cert_invalid for the self-signed one" 1 \
		"$(aq event=deny decision=deny reason=upstream_cert_invalid name=self.example)"
	sk_check_eq "never an allowed line for them (no passthrough)" 0 \
		"$(aq event=conn name@bad.example,self.example)"
}

t_ca_key_out_of_reach() {
	local pid=$SK_SIDECAR_PID
	sk_check "the sidecar runs" test -d "/proc/$pid"
	sk_check_eq "the sidecar is not dumpable: its /proc/PID/environ is root's" 0 "$(stat -c %u "/proc/$pid/environ")"
	sk_check_eq "... and /proc/PID/mem too" 0 "$(stat -c %u "/proc/$pid/mem")"
	sk_check_fails "UID 1000 cannot read /proc/PID/environ" agent cat "/proc/$pid/environ"
	sk_check_fails "UID 1000 cannot open /proc/PID/mem" agent "$PY" -c 'open("/proc/'"$pid"'/mem","rb").read(1)'
	# positive control: UID 1000 reads its own, so the refusals above are about the sidecar
	sk_check "UID 1000 reads its own /proc/self/environ" agent cat /proc/self/environ
	sk_check_eq "the CA key was written to no file of the scratch dir" 0 \
		"$(grep -rl 'PRIVATE KEY' "$SK_TMP" 2>/dev/null | grep -vcE '/(ca|github|pypi|open|wrong|self|budget|git)\.key$')"
}

t_no_inspect_untouched() {
	sk_check_eq "a rule without inspect: the real server's certificate verifies with the test CA" "ok GET /plain" \
		"$(agent curl -sS --max-time 20 --cacert "$SK_TMP/ca.pem" https://open.example/plain 2>&1)"
	sk_check_fails "... and the pod CA does not verify it (nothing terminated)" \
		agent "${CURL[@]}" https://open.example/plain
	settle
	sk_check_eq "its audit line does not say inspected" 0 "$(aq name=open.example inspected=True)"
}

# git itself over inspected HTTPS, on both protocols: the read-only recipe (docs/recipes.md) lets a clone
# and a fetch through and refuses the push's POST to git-receive-pack, which never reaches the server.
t_git_read_only() {
	local v dir
	for v in HTTP/1.1 HTTP/2; do
		dir=$SK_TMP/agenthome/clone-${v//\//}
		sk_check "git over $v: clone through inspection" agent env HOME="$SK_TMP/agenthome" GIT_SSL_CAINFO="$SK_TMP/podca.pem" \
			git -c http.version="$v" clone -q https://git.example/git/acme/app.git "$dir"
		sk_check_eq "git over $v: the clone has the commit's file" hello "$(cat "$dir/README" 2>&1)"
		sk_check "git over $v: fetch" agent env HOME="$SK_TMP/agenthome" GIT_SSL_CAINFO="$SK_TMP/podca.pem" \
			git -C "$dir" -c http.version="$v" fetch -q origin
		agent sh -c "cd '$dir' && echo change >>README && git -c user.name=a -c user.email=a@example.invalid commit -qam change" \
			>/dev/null 2>&1
		out=$(agent env HOME="$SK_TMP/agenthome" GIT_SSL_CAINFO="$SK_TMP/podca.pem" \
			git -C "$dir" -c http.version="$v" push -q origin main 2>&1)
		rc=$?
		sk_check "git over $v: the push fails" test "$rc" -ne 0
		sk_check "git over $v: git shows the 403" grep -q 403 <<<"$out"
	done
	sk_check_eq "the server never got a git-receive-pack POST" 0 "$(grep -c '^POST /git/acme/app.git/git-receive-pack' "$SK_TMP/upstream.log")"
	sk_check "the server got the upload-pack POSTs (clone, fetch)" test "$(grep -c '^POST /git/acme/app.git/git-upload-pack' "$SK_TMP/upstream.log")" -ge 2
	sk_check "git's HTTP/2 run spoke HTTP/2 to the server" grep -q '^POST /git/acme/app.git/git-upload-pack git.example h2$' "$SK_TMP/upstream.log"
	settle
	sk_check "audit: the push's POST denied, request_denied, rule git" \
		test "$(aq event=deny reason=request_denied rule=git method=POST path=/git/acme/app.git/git-receive-pack)" -ge 2
}

# Credentials the agent never holds (secrets:): the placeholder is swapped for the real token toward the
# host and paths the secret lists, in Bearer and in Basic, over HTTP/1.1 and HTTP/2; sent anywhere else it
# is credential_misuse; the agent cannot read the token, and no log line carries it.
t_secret_swap() {
	: >"$SK_TMP/upstream.log.auth"
	chmod 666 "$SK_TMP/upstream.log.auth"
	sk_check_eq "Bearer placeholder: the request passes" "ok GET /repos/acme/app" \
		"$(agent "${CURL[@]}" -H "Authorization: Bearer $PH" https://github.example/repos/acme/app 2>&1)"
	sk_check "... and the server got the real token" grep -qxF "/repos/acme/app Bearer $TOKEN" "$SK_TMP/upstream.log.auth"
	agent "${CURL[@]}" -o /dev/null -u "x-access-token:$PH" https://github.example/repos/acme/basic >/dev/null 2>&1
	sk_check "Basic user:placeholder (git's credential helper): the server got user:token" \
		grep -qxF "/repos/acme/basic Basic $(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)" "$SK_TMP/upstream.log.auth"
	agent "${CURL[@]}" --http2 -o /dev/null -H "Authorization: Bearer $PH" https://github.example/repos/acme/h2auth >/dev/null 2>&1
	sk_check "HTTP/2: the server got the real token" grep -qxF "/repos/acme/h2auth Bearer $TOKEN" "$SK_TMP/upstream.log.auth"
	out=$(agent "${CURL[@]}" -i -H "Authorization: Bearer $PH" https://pypi.example/simple/ 2>&1)
	sk_check "the placeholder toward another (inspected, allowed) host: 403 credential_misuse" \
		grep -qi '^x-stockade-reason: credential_misuse' <<<"$out"
	sk_check_eq "... which never got it" 0 "$(grep -c "$PH\|$TOKEN" <(grep -v '^/repos/acme/' "$SK_TMP/upstream.log.auth"))"
	sk_check_eq "the placeholder in the query: 403" 403 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' "https://github.example/repos/acme/app?t=$PH" 2>&1)"
	sk_check_eq "HTTP/2: the placeholder toward another host: 403" 403 \
		"$(agent "${CURL[@]}" --http2 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PH" https://pypi.example/simple/ 2>&1)"
	sk_check_eq "the placeholder in another header: 403" 403 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' -H "X-Token: $PH" https://github.example/repos/acme/app 2>&1)"
	settle
	sk_check "audit: credential_misuse lines" test "$(aq event=deny reason=credential_misuse)" -ge 4
	sk_check_fails "the agent cannot read the token file" agent cat "$SK_TMP/secret/token"
	sk_check_eq "the token is in no audit line and no sidecar log" 0 \
		"$(cat "$SK_TMP/audit.log" "$SK_TMP/sidecar.err" | grep -c "$TOKEN")"
}

# A server that reflects the credential (upstream.py's /echo): toward a host a secret lists, the agent gets
# every response masked ('*' for each byte of the value, lengths kept), in a header and in a body, whole
# or cut by chunk framing in the middle of the value; it asks for identity, and a gzip body (which the
# mask cannot search) is refused 502; over HTTP/2 the body is masked too, and a header echoing the
# value (HPACK-coded, not maskable) fails the connection. A body carrying the placeholder toward
# another allowed inspected host (git.example's upload-pack) is refused 403 credential_misuse (HTTP/2:
# its stream reset).
t_secret_mask() {
	local stars out
	stars=$(printf '%*s' ${#TOKEN} '' | tr ' ' '*')
	: >"$SK_TMP/upstream.log.auth"
	chmod 666 "$SK_TMP/upstream.log.auth"
	out=$(agent "${CURL[@]}" -i --compressed -H "Authorization: Bearer $PH" https://github.example/repos/acme/echo 2>&1)
	sk_check "the server got the real token (it echoes it)" grep -qxF "/repos/acme/echo Bearer $TOKEN" "$SK_TMP/upstream.log.auth"
	sk_check_eq "... but the agent never sees it" 0 "$(grep -c "$TOKEN" <<<"$out")"
	sk_check "... masked in the body, same length" grep -qxF "auth=Bearer $stars" <<<"$(tr -d '\r' <<<"$out")"
	sk_check "... and in the header" grep -qixF "x-echo: Bearer $stars" <<<"$(tr -d '\r' <<<"$out")"
	sk_check "the request asked for identity (curl --compressed asked for more)" \
		grep -qxF "/repos/acme/echo accept-encoding=identity" "$SK_TMP/upstream.log.auth"
	out=$(agent "${CURL[@]}" -H "Authorization: Bearer $PH" https://github.example/repos/acme/echo-chunked 2>&1)
	sk_check_eq "chunked, the value cut across two chunks: masked" "auth=Bearer $stars" "$(head -n1 <<<"$out")"
	sk_check_eq "... nothing of it left" 0 "$(grep -c "${TOKEN:0:12}" <<<"$out")"
	out=$(agent "${CURL[@]}" --http2 -w '\n%{http_version}' --compressed -H "Authorization: Bearer $PH" \
		https://github.example/repos/acme/echo 2>&1)
	sk_check_eq "HTTP/2: the body masked, the value cut across two DATA frames" "auth=Bearer $stars|2" \
		"$(head -n1 <<<"$out")|$(tail -n1 <<<"$out")"
	sk_check "HTTP/2: the request asked for identity" \
		grep -qxF "/repos/acme/echo accept-encoding=identity" <(tail -n1 "$SK_TMP/upstream.log.auth")
	out=$(agent "${CURL[@]}" --http2 -i -H "Authorization: Bearer $PH" https://github.example/repos/acme/echo-header 2>&1)
	sk_check_eq "HTTP/2: a response header echoing it (HPACK, not maskable) fails the connection closed" 0 \
		"$(grep -c "$TOKEN\|^HTTP/2 200" <<<"$out")"
	out=$(agent "${CURL[@]}" -i -H "Authorization: Bearer $PH" https://github.example/repos/acme/gzip 2>&1)
	sk_check "a gzip body the mask cannot search: 502 upstream_encoding" grep -qi '^x-stockade-reason: upstream_encoding' <<<"$out"
	sk_check_eq "... nothing of it reached the agent" 0 "$(grep -c "Content-Encoding: gzip" <<<"$out")"
	settle
	sk_check "audit: upstream_encoding, rule github" test "$(aq event=deny reason=upstream_encoding rule=github)" -ge 1
	sk_check "audit: secret_in_response_header, rule github" \
		test "$(aq event=deny reason=secret_in_response_header rule=github)" -ge 1
	local before
	before=$(aq event=deny reason=credential_misuse rule=git)
	out=$(agent "${CURL[@]}" -i -X POST --data-binary "{\"token\":\"$PH\"}" \
		https://git.example/git/acme/app.git/git-upload-pack 2>&1)
	sk_check "a body carrying the placeholder to another allowed host: 403 credential_misuse" \
		grep -qi '^x-stockade-reason: credential_misuse' <<<"$out"
	out=$(agent "${CURL[@]}" -i -X POST -H 'Transfer-Encoding: chunked' --data-binary "xx${PH}yy" \
		https://git.example/git/acme/app.git/git-upload-pack 2>&1)
	sk_check "... chunked too" grep -qi '^x-stockade-reason: credential_misuse' <<<"$out"
	sk_check_fails "HTTP/2: the stream carrying it is reset" agent "${CURL[@]}" --http2 -o /dev/null \
		-X POST --data-binary "{\"token\":\"$PH\"}" https://git.example/git/acme/app.git/git-upload-pack
	settle
	sk_check_eq "audit: one credential_misuse line each, rule git, method POST" 3 \
		"$(( $(aq event=deny reason=credential_misuse rule=git method=POST) - before ))"
	local denials
	denials=$(sk_pod "$NS" curl -s --max-time 5 http://127.0.0.1:15000/denials)
	sk_check "/denials shows the body's credential_misuse (rule git)" \
		grep -q '"reason":"credential_misuse".*"rule":"git"\|"rule":"git".*"reason":"credential_misuse"' <<<"$denials"
	sk_check "the misuse counts in the metrics" \
		test "$(sk_pod "$NS" curl -s --max-time 5 http://127.0.0.1:15000/metrics | grep -c 'credential_misuse')" -ge 1
	sk_check_eq "the token is in no audit line, no sidecar log and not in /denials" 0 \
		"$(cat "$SK_TMP/audit.log" "$SK_TMP/sidecar.err" - <<<"$denials" | grep -c "$TOKEN")"
}

# A client that pins the real server's key (as some SDKs and package managers do) meets the pod CA's leaf:
# its own TLS fails, closed, and the audit line says why; nothing reaches the server.
t_pinned_client_fails_closed() {
	local pin
	pin=$(openssl x509 -in "$SK_TMP/github.pem" -pubkey -noout | openssl pkey -pubin -outform der |
		openssl dgst -sha256 -binary | base64)
	sk_check_fails "a client pinning the server's key refuses the pod CA's leaf" \
		agent "${CURL[@]}" --pinnedpubkey "sha256//$pin" https://github.example/repos/acme/pinned
	sk_check_eq "the pinned request never reached the server" 0 "$(seen "GET /repos/acme/pinned github.example")"
	settle
	sk_check_eq "audit: its line says the agent closed without a request after its handshake (client_no_request)" 1 \
		"$(aq event=conn reason=client_no_request name=github.example inspected=True)"
}

metric() { sk_pod "$NS" curl -s --max-time 5 http://127.0.0.1:15000/metrics | awk -v k="$1" '$1 == k { print $2 }'; }
# reloaded N: waits (5 s at most) for the ok-reload counter to read N
# shellcheck disable=SC2317  # invoked through sk_check
reloaded() {
	for _ in $(seq 1 50); do
		[ "$(metric 'stockade_policy_reloads_total{result="ok"}')" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# A reload turns inspection on and off for new connections: open.example gains `inspect: true`, then
# loses it again; each new connection follows the policy in force when it was decided.
t_reload_toggles_inspection() {
	local ok0
	ok0=$(metric 'stockade_policy_reloads_total{result="ok"}')
	cp "$SK_TMP/policy.yaml" "$SK_TMP/policy.orig"
	"$PY" - "$SK_TMP/policy.orig" "$SK_TMP/policy.on" <<'PYEDIT'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  - host: open.example\n    ports: [443]\n", "  - host: open.example\n    ports: [443]\n    inspect: true\n")
open(sys.argv[2], "w").write(s)
PYEDIT
	# whole files, renamed into place (sk_policy would add its header a second time)
	install -m 644 "$SK_TMP/policy.on" "$SK_TMP/policy.new" && mv -f "$SK_TMP/policy.new" "$SK_TMP/policy.yaml"
	sk_check "the policy with open.example inspected is loaded" reloaded $((ok0 + 1))
	sk_check_eq "after the reload a new connection to open.example is inspected (the pod CA verifies it)" \
		"ok GET /toggled-on" "$(agent "${CURL[@]}" https://open.example/toggled-on 2>&1)"
	install -m 644 "$SK_TMP/policy.orig" "$SK_TMP/policy.new" && mv -f "$SK_TMP/policy.new" "$SK_TMP/policy.yaml"
	sk_check "the policy without it is loaded again" reloaded $((ok0 + 2))
	sk_check_eq "after the second reload the real server's certificate is seen again" "ok GET /toggled-off" \
		"$(agent curl -sS --max-time 20 --cacert "$SK_TMP/ca.pem" https://open.example/toggled-off 2>&1)"
	settle
	sk_check_eq "audit: the connection in between says inspected" 1 "$(aq event=conn name=open.example inspected=True)"
}

# A budget counts the plaintext: an upload past `sent` ends the inspected connection (budget_exhausted).
t_budget_counts_plaintext() {
	sk_check_eq "a small request within the budget passes" "ok GET /small" \
		"$(agent "${CURL[@]}" https://budget.example/small 2>&1)"
	head -c 200000 /dev/zero >"$SK_TMP/big-upload"
	chmod 644 "$SK_TMP/big-upload"
	sk_check_fails "an upload past sent: 8Ki is cut" agent "${CURL[@]}" -f -X POST --data-binary "@$SK_TMP/big-upload" \
		https://budget.example/upload
	settle
	sk_check_eq "audit: deny budget_exhausted on the inspected connection" 1 \
		"$(aq event=deny reason=budget_exhausted name=budget.example inspected=True)"
}

# Last: SIGTERM while an inspected connection is open (idle between requests): the drain waits for it, the
# shutdown ends it with its line, the sidecar exits 0 (an ASan build, SK_BIN pointing at one: no report).
t_sigterm_with_a_bridge_open() {
	local before held rc=0
	before=$(aq event=conn name=github.example inspected=True)
	agent "$PY" -c '
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = ctx.wrap_socket(socket.create_connection(("github.example", 443), timeout=10), server_hostname="github.example")
s.sendall(b"GET /repos/acme/held HTTP/1.1\r\nHost: github.example\r\n\r\n")
s.recv(4096)
time.sleep(30)' "$SK_TMP/podca.pem" >/dev/null 2>&1 &
	held=$!
	sleep 1
	sk_check_eq "the held connection's request went through" 1 "$(seen "GET /repos/acme/held github.example")"
	kill -TERM "$SK_SIDECAR_PID"
	wait "$SK_SIDECAR_PID" || rc=$?
	sk_check_eq "SIGTERM with an inspected connection open: exit 0 after the drain" 0 "$rc"
	sk_check_eq "its connection got its line at shutdown" $((before + 1)) "$(aq event=conn name=github.example inspected=True)"
	# grep -c, not a failing grep: a missing file is an error here, not a pass
	sk_check_eq "no sanitizer report or crash in the sidecar's stderr" 0 "$(grep -cE 'Sanitizer|runtime error' "$SK_TMP/sidecar.err")"
	kill "$held" 2>/dev/null
	wait "$held" 2>/dev/null
}

# The trust files as a pod gets them: the sidecar writes them at start (--trust-dir, here through its
# variable STOCKADE_TRUST_DIR), and the variables `stockade-policy inject` (and the chart) give the agent,
# pointed at this suite's directory instead of /run/stockade-trust, make curl, Python, Node and the JVM trust
# the pod CA with no flag of their own; without them curl fails (the control: no system bundle has the pod
# CA).
t_trust_files() {
	local T=$SK_TMP env=() out
	sk_check "the sidecar wrote ca.pem, bundle.pem and truststore.p12 before it listened" \
		test -s "$T/trust/ca.pem" -a -s "$T/trust/bundle.pem" -a -s "$T/trust/truststore.p12"
	sk_check "... ca.pem is the pod CA the admin port serves" cmp -s "$T/trust/ca.pem" "$T/podca.pem"
	mapfile -t env < <(printf 'kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: x}]}\n' |
		"$SK_BIN/stockade-policy" inject -f - | "$PY" -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
for e in d["spec"]["containers"][0]["env"]:
    print("%s=%s" % (e["name"], e["value"].replace("/run/stockade-trust", sys.argv[1])))' "$T/trust")
	sk_check_eq "inject gives the agent the trust variables" \
		"SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT AWS_CA_BUNDLE NODE_EXTRA_CA_CERTS JAVA_TOOL_OPTIONS" \
		"$(printf '%s\n' "${env[@]}" | cut -d= -f1 | xargs)"
	sk_check_eq "curl, no CA flag: through inspection" "ok GET /repos/acme/app" \
		"$(agent env "${env[@]}" curl -sS --max-time 20 --http1.1 https://github.example/repos/acme/app 2>&1)"
	out=$(agent curl -sS --max-time 20 --http1.1 https://github.example/repos/acme/app 2>&1)
	sk_check "... and without the variables curl refuses the pod CA's leaf (the control)" \
		grep -qi 'certificate' <<<"$out"
	sk_check_eq "Python (urllib, SSL_CERT_FILE)" "ok GET /repos/acme/app" \
		"$(agent env "${env[@]}" "$PY" -c 'import urllib.request
print(urllib.request.urlopen("https://github.example/repos/acme/app", timeout=20).read().decode().strip())' 2>&1)"
	if command -v node >/dev/null; then
		sk_check_eq "Node (https, NODE_EXTRA_CA_CERTS)" "ok GET /repos/acme/app" \
			"$(agent env "${env[@]}" node -e 'require("https").get("https://github.example/repos/acme/app", (r) => {
let b = ""; r.on("data", (d) => { b += d; }); r.on("end", () => console.log(b.trim())); })
.on("error", (e) => { console.error(e.message); process.exit(1); })' 2>&1)"
	else
		sk_fail "Node (https, NODE_EXTRA_CA_CERTS)" "node is not installed (scripts/install-deps)"
	fi
	if command -v java >/dev/null; then
		cat >"$T/Get.java" <<'EOF'
public class Get {
    public static void main(String[] a) throws Exception {
        var c = (java.net.HttpURLConnection) new java.net.URL(a[0]).openConnection();
        c.setConnectTimeout(20000);
        c.setReadTimeout(20000);
        System.out.println(new String(c.getInputStream().readAllBytes()).trim());
    }
}
EOF
		chmod 644 "$T/Get.java"
		# the JVM says "Picked up JAVA_TOOL_OPTIONS" on stderr: the answer is stdout's
		sk_check_eq "Java (HttpURLConnection, the PKCS#12 store of JAVA_TOOL_OPTIONS)" "ok GET /repos/acme/app" \
			"$(agent env "${env[@]}" HOME="$T/agenthome" java "$T/Get.java" https://github.example/repos/acme/app 2>"$T/java.err" ||
				tail -3 "$T/java.err")"
	else
		sk_fail "Java (HttpURLConnection, the PKCS#12 store of JAVA_TOOL_OPTIONS)" "java is not installed (scripts/install-deps)"
	fi
}

# A websocket through an inspected HTTP/1.1 connection: the upgrade judged like a GET, the server's 101
# checked, frames echoed both ways; refused by a rule's paths, and toward a host a secret lists.
t_websocket() {
	out=$(agent "$PY" "$HERE/ws_client.py" git.example /ws/echo "$SK_TMP/podca.pem" hello world 2>&1)
	sk_check_eq "an upgrade a GET request rule names switches and frames echo both ways" "status 101
echo hello
echo world" "$out"
	sk_check_eq "the upstream got the upgrade" 1 "$(seen "GET /ws/echo git.example")"
	# access: read-only allows GET /ws/echo as a read, never as an upgrade (a channel both ways)
	out=$(agent "$PY" "$HERE/ws_client.py" pypi.example /ws/echo "$SK_TMP/podca.pem" hello 2>&1)
	sk_check "an upgrade under access: read-only is answered 403" grep -q '^status 403' <<<"$out"
	sk_check "its reason: upgrade_read_only" grep -q '"reason":"upgrade_read_only"' <<<"$out"
	sk_check_eq "the upstream never got it" 0 "$(seen "GET /ws/echo pypi.example")"
	out=$(agent "$PY" "$HERE/ws_client.py" git.example /ws/other "$SK_TMP/podca.pem" hello 2>&1)
	sk_check "an upgrade on a path the rule does not allow is answered 403" grep -q '^status 403' <<<"$out"
	sk_check "its reason: no_request_rule" grep -q '"reason":"no_request_rule"' <<<"$out"
	out=$(agent "$PY" "$HERE/ws_client.py" github.example /repos/acme/ws "$SK_TMP/podca.pem" hello 2>&1)
	sk_check "an upgrade toward a host a secret lists is answered 403" grep -q '^status 403' <<<"$out"
	sk_check "its reason: websocket_secret_host" grep -q '"reason":"websocket_secret_host"' <<<"$out"
	sk_check_eq "the upstreams never got the refused upgrades" 0 \
		"$(grep -c -e '^GET /ws/other git.example' -e '^GET /repos/acme/ws github.example' "$SK_TMP/upstream.log")"
	# requests written behind an upgrade the server declines (200): held, then judged like any other
	out=$(agent "$PY" "$HERE/raw_tls.py" git.example 443 "$SK_TMP/podca.pem" <<'REQ'
GET /nows/up HTTP/1.1
Host: git.example
Upgrade: websocket
Connection: Upgrade
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==
Sec-WebSocket-Version: 13

POST /nows/upload HTTP/1.1
Host: git.example

GET /nows/after HTTP/1.1
Host: git.example

REQ
	)
	sk_check "a declined upgrade is answered by the upstream" grep -q '^ok GET /nows/up' <<<"$out"
	sk_check "the POST written behind it is answered 403 by the sidecar" grep -q '"method":"POST"' <<<"$out"
	sk_check "the GET behind that goes on" grep -q '^ok GET /nows/after' <<<"$out"
	sk_check_eq "the upstream never got the POST" 0 "$(seen "POST /nows/upload git.example")"
	settle
	sk_check_eq "audit: deny websocket_secret_host, inspected" 1 \
		"$(aq event=deny reason=websocket_secret_host name=github.example inspected=True method=GET path=/repos/acme/ws)"
}

SK_CASES=(get_allowed post_denied read_only host_not_sni smuggled_second_request http2 upstream_cert_invalid
	git_read_only secret_swap secret_mask pinned_client_fails_closed ca_key_out_of_reach no_inspect_untouched reload_toggles_inspection budget_counts_plaintext trust_files websocket sigterm_with_a_bridge_open)
sk_main "$@"
