#!/usr/bin/env bash
# e2e/requests.test.sh — request rules on plain HTTP end to end (docs/policy.md "Request rules"): the real
# init and sidecar, an agent (UID 1000) against a GitHub-like upstream that logs every request line it
# gets. GET allowed and POST denied with the JSON 403 (reason, rule, method, host, path, x-stockade-reason)
# and one audit line; access: read-only on a package index; a request smuggled behind an allowed one on one
# keep-alive connection denied while the first passes; %2F and dot-segment paths refused or decided as
# normalised; a rule without request rules unchanged; /denials and the metrics; explain's verdicts.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
NS=skreq
HERE=$SK_ROOT/e2e/requests
PY=/usr/bin/python3
GH4=198.18.7.10 PYPI4=198.18.7.20 OPEN4=198.18.7.30

agent() { sk_pod_as "$NS" "$SK_AGENT_UID" "$@"; }
aq() { "$PY" "$SK_ROOT/e2e/proxy/audit_q.py" "$SK_TMP/audit.log" "$@"; }
# how many times the upstream got this request line ("METHOD TARGET HOST")
seen() { grep -cxF -- "$1" "$SK_TMP/upstream.log"; }
settle() { sleep 0.3; }
# the 403 body's field K (the body is the last line of curl -i output)
field() { "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1]).get(sys.argv[1]))' "$1"; }

setup() {
	sk_require_root
	sk_tmp skreq
	CURL=(curl -sS --max-time 20)
	sk_policy policy.yaml <<POL
egress:
  - host: github.example
    ports: [80]
    name: github
    requests:
      - { methods: [GET, HEAD], paths: ["/repos/acme/**", "/user"] }
      - { methods: [POST], paths: ["/repos/acme/*/pulls"] }
  - host: pypi.example
    ports: [80]
    access: read-only
  - host: open.example
    ports: [80]
dns:
  upstream: ["$SK_NET_IP4"]
blockPrivate: true
loopback: allow
POL
	sk_net_up "$NS" || { echo "netns setup failed"; exit 1; }
	for ip in $GH4 $PYPI4 $OPEN4; do sk_net_add_ip "$NS" "$ip"; done
	: >"$SK_TMP/upstream.log"
	chmod 666 "$SK_TMP/upstream.log"
	sk_inet "$NS" "$PY" "$HERE/upstream.py" "$SK_TMP/upstream.log" "$GH4:80" "$PYPI4:80" "$OPEN4:80" \
		>"$SK_TMP/upstream.out" 2>&1 &
	sk_inet "$NS" "$PY" "$SK_ROOT/e2e/proxy/servers.py" --files "$SK_TMP" --dns "$SK_NET_IP4:53" \
		--record "github.example=$GH4" --record "pypi.example=$PYPI4" --record "open.example=$OPEN4" \
		>"$SK_TMP/dns.log" 2>&1 &
	if ! sk_wait_port "$NS-net" tcp 80 10 || ! sk_wait_port "$NS-net" udp 53 10; then
		echo "test servers did not start"; cat "$SK_TMP/upstream.out" "$SK_TMP/dns.log"; exit 1
	fi
	sk_pod_up "$NS" "$SK_TMP/policy.yaml"
}

t_github_get_allowed() {
	sk_check_eq "GET under /repos/acme/** passes" "ok GET /repos/acme/app" \
		"$(agent "${CURL[@]}" http://github.example/repos/acme/app 2>&1)"
	sk_check_eq "GET /user passes, the query not matched" "ok GET /user?page=2" \
		"$(agent "${CURL[@]}" 'http://github.example/user?page=2' 2>&1)"
	sk_check_eq "POST to /repos/acme/*/pulls passes (the second request rule)" "ok POST /repos/acme/app/pulls" \
		"$(agent "${CURL[@]}" -X POST -d x http://github.example/repos/acme/app/pulls 2>&1)"
	sk_check_eq "the upstream got the allowed POST" 1 "$(seen "POST /repos/acme/app/pulls github.example")"
}

t_github_post_denied() {
	out=$(agent "${CURL[@]}" -i -X POST -d '{"title":"x"}' 'http://github.example/repos/acme/app/issues?token=s3cret' 2>&1)
	sk_check "POST to issues is answered 403" grep -q '^HTTP/1.1 403' <<<"$out"
	sk_check "the 403 carries x-stockade-reason: no_request_rule" grep -qi '^x-stockade-reason: no_request_rule' <<<"$out"
	sk_check "the 403 is JSON" grep -qi '^content-type: application/json' <<<"$out"
	sk_check_eq "body: error" stockade_denied "$(field error <<<"$out")"
	sk_check_eq "body: reason" no_request_rule "$(field reason <<<"$out")"
	sk_check_eq "body: rule (its name)" github "$(field rule <<<"$out")"
	sk_check_eq "body: method" POST "$(field method <<<"$out")"
	sk_check_eq "body: host" github.example "$(field host <<<"$out")"
	sk_check_eq "body: path (normalised, no query)" /repos/acme/app/issues "$(field path <<<"$out")"
	sk_check_eq "the upstream never got the denied POST" 0 \
		"$(seen "POST /repos/acme/app/issues?token=s3cret github.example")"
	sk_check_eq "DELETE on an allowed path is denied too" 403 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' -X DELETE http://github.example/repos/acme/app 2>&1)"
	sk_check_eq "GET outside the allowed paths is denied" 403 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' http://github.example/repos/other/app 2>&1)"
	settle
	sk_check_eq "one audit line: deny request_denied with method, path, rule and name" 1 \
		"$(aq event=deny decision=deny reason=request_denied proto=http rule=github name=github.example \
			method=POST path=/repos/acme/app/issues)"
	sk_check_eq "the query is never written to the audit log" 0 "$(grep -c s3cret "$SK_TMP/audit.log")"
}

t_read_only_index() {
	sk_check_eq "read-only: GET passes" "ok GET /simple/requests/" \
		"$(agent "${CURL[@]}" http://pypi.example/simple/requests/ 2>&1)"
	sk_check_eq "read-only: HEAD passes" 200 \
		"$(agent "${CURL[@]}" -o /dev/null -w '%{http_code}' -I http://pypi.example/simple/ 2>&1)"
	out=$(agent "${CURL[@]}" -i -X POST -d 'name=evil' http://pypi.example/legacy/ 2>&1)
	sk_check "read-only: POST (an upload) is answered 403" grep -q '^HTTP/1.1 403' <<<"$out"
	sk_check_eq "read-only: body rule is the index" 1 "$(field rule <<<"$out")"
	sk_check_eq "read-only: the upstream never got the upload" 0 "$(seen "POST /legacy/ pypi.example")"
	settle
	sk_check_eq "read-only: one audit line for the upload" 1 \
		"$(aq event=deny reason=request_denied rule=1 method=POST path=/legacy/)"
}

# Two requests in one write on one keep-alive connection: the allowed GET's answer comes back, the
# DELETE behind it never reaches the upstream and is answered 403.
t_smuggled_second_request() {
	out=$(agent "$PY" "$HERE/raw.py" github.example 80 <<'REQ'
GET /repos/acme/app HTTP/1.1
Host: github.example

DELETE /repos/acme/app HTTP/1.1
Host: github.example

REQ
	)
	sk_check "the first (allowed) request is answered by the upstream" grep -q '^ok GET /repos/acme/app' <<<"$out"
	sk_check "the smuggled DELETE is answered 403 by the sidecar" grep -q '"method":"DELETE"' <<<"$out"
	sk_check_eq "the upstream never got the DELETE" 0 "$(seen "DELETE /repos/acme/app github.example")"
	# behind a body: a POST whose body is an allowed request's, then a denied one
	out=$(agent "$PY" "$HERE/raw.py" github.example 80 <<'REQ'
POST /repos/acme/app/pulls HTTP/1.1
Host: github.example
Content-Length: 41

PUT /repos/acme/app HTTP/1.1
Host: x

PUT /repos/acme/app/hooks HTTP/1.1
Host: github.example

REQ
	)
	sk_check "a body that looks like a request is a body: the POST passes" grep -q '^ok POST /repos/acme/app/pulls' <<<"$out"
	sk_check "the PUT after the body is decided and denied" grep -q '"path":"/repos/acme/app/hooks"' <<<"$out"
	sk_check_eq "the upstream never got the PUT" 0 "$(seen "PUT /repos/acme/app/hooks github.example")"
	settle
	sk_check_eq "audit: the second request's deny names it (request 2)" 2 \
		"$(aq event=deny reason=request_denied request=2 rule=github)"
}

t_encoded_paths() {
	out=$(agent "${CURL[@]}" -i --path-as-is 'http://github.example/repos/acme%2F..%2F..%2Fadmin' 2>&1)
	sk_check "%2F in a path is answered 403" grep -q '^HTTP/1.1 403' <<<"$out"
	sk_check_eq "%2F: body reason" path_encoded_slash "$(field reason <<<"$out")"
	sk_check_eq "%2F: the upstream never got it" 0 "$(grep -c '%2F' "$SK_TMP/upstream.log")"
	out=$(agent "${CURL[@]}" -i --path-as-is 'http://github.example/repos/acme/%2e%2e/%2e%2e/admin' 2>&1)
	sk_check_eq "%2E%2E dot-segment: body reason" path_encoded_dot "$(field reason <<<"$out")"
	# a literal ../ is resolved, then decided: /admin is no allowed path
	out=$(agent "${CURL[@]}" -i --path-as-is 'http://github.example/repos/acme/../../admin' 2>&1)
	sk_check_eq "../ resolved then decided: body path" /admin "$(field path <<<"$out")"
	sk_check_eq "../ resolved: body reason" no_request_rule "$(field reason <<<"$out")"
	# and the positive control: ../ that stays inside the allowed tree passes
	sk_check_eq "../ staying inside /repos/acme passes" "ok GET /repos/acme/x/../y" \
		"$(agent "${CURL[@]}" --path-as-is 'http://github.example/repos/acme/x/../y' 2>&1)"
	settle
	sk_check_eq "audit: the refused path as sent, reason request_bad_path" 1 \
		"$(aq event=deny reason=request_bad_path method=GET 'path=/repos/acme%2F..%2F..%2Fadmin')"
}

t_rule_without_requests() {
	sk_check_eq "a rule without request rules: any method, any path" "ok DELETE /anything/..%2Fx" \
		"$(agent "${CURL[@]}" --path-as-is -X DELETE 'http://open.example/anything/..%2Fx' 2>&1)"
}

t_denials_and_metrics() {
	agent "${CURL[@]}" -o /dev/null -X PATCH http://github.example/user >/dev/null 2>&1
	settle
	den=$(sk_pod "$NS" curl -sS --max-time 5 http://127.0.0.1:15000/denials 2>&1)
	sk_check "/denials lists the denied request with method and path" "$PY" -c '
import json,sys
d=json.loads(sys.argv[1])
sys.exit(0 if any(o.get("reason")=="request_denied" and o.get("method")=="PATCH" and o.get("path")=="/user" for o in d) else 1)' "$den"
	met=$(sk_pod "$NS" curl -sS --max-time 5 http://127.0.0.1:15000/metrics 2>&1)
	sk_check "metrics count request_denied" grep -q 'stockade_connections_total{[^}]*reason="request_denied"' <<<"$met"
}

t_explain() {
	local P=$SK_TMP/policy.yaml out rc
	out=$("$SK_BIN/stockade-policy" explain -o text --policy "$P" github.example 80 \
		--method POST --path /repos/acme/app/pulls 2>&1)
	rc=$?
	sk_check_eq "explain: the allowed POST exits 0" 0 "$rc"
	sk_check "explain: names the request rule that decides, with its position" \
		grep -qF "by requests[1] POST /repos/acme/*/pulls at $P:" <<<"$out"
	out=$("$SK_BIN/stockade-policy" explain --policy "$P" github.example 80 \
		--method POST --path '/repos/acme/app/issues?x=1' 2>&1)
	rc=$?
	sk_check_eq "explain: the denied POST exits 1" 1 "$rc"
	sk_check_eq "explain: the denied POST's reason, as the audit line's" request_denied \
		"$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["reason"])' "$out")"
	sk_check_eq "explain: the path decided without its query" /repos/acme/app/issues \
		"$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["path"])' "$out")"
	out=$("$SK_BIN/stockade-policy" explain -o text --policy "$P" github.example 80 \
		--method GET --path '/repos/acme%2Fx' 2>&1)
	rc=$?
	sk_check_eq "explain: a %2F path exits 1" 1 "$rc"
	sk_check "explain: names the path refusal" grep -qF "request_bad_path, GET /repos/acme%2Fx: an encoded '/' (%2F)" <<<"$out"
	"$SK_BIN/stockade-policy" explain --policy "$P" pypi.example 80 --method GET --path /simple/ >/dev/null 2>&1
	sk_check_eq "explain: read-only allows GET" 0 $?
	"$SK_BIN/stockade-policy" explain --policy "$P" pypi.example 80 --method PUT --path /simple/ >/dev/null 2>&1
	sk_check_eq "explain: read-only denies PUT" 1 $?
}

SK_CASES=(github_get_allowed github_post_denied read_only_index smuggled_second_request encoded_paths
	rule_without_requests denials_and_metrics explain)
sk_main "$@"
