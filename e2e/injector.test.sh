#!/usr/bin/env bash
# e2e/injector.test.sh — stockade-injector as the API server and the kubelet see it:
# real TLS from a throwaway CA on the loopback of a network namespace of its own, AdmissionReviews POSTed
# with curl. The patch it answers with, applied to the pod, is what `stockade-policy inject` writes for that
# pod; a wrapped pod gets no patch; an unsandboxable one is refused with the field; malformed requests get
# their HTTP status; the serving certificate rotates without a restart (and a broken one is not taken); one
# slow client holds one worker, never the others, and is cut at its deadline; the accept queue is bounded;
# SIGTERM stops it cleanly. Root (network namespace). Unlike the other netns suites this is one sequence of
# sections, not SK_CASES: the injector is started with the flags a run of sections checks, and those sections
# share it (serving, policy review, malformed and rotation run against one).
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
sk_require_root
cd "$SK_ROOT" || exit 1
INJ="$SK_BIN/stockade-injector" P="$SK_BIN/stockade-policy"
N=skinj
sk_tmp injector
SK_NETS+=("$N")
sk_net_up "$N" || { sk_fail "netns"; sk_summary; exit 1; }
sk_ca "stockade-injector test CA" inj1 inj2
T=$SK_TMP
PORT=18443
PIDS=()
cleanup() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; sk_cleanup_on_exit; }
trap cleanup EXIT

# start NAME ARGS... — an injector in the pod ns on 127.0.0.1:$PORT serving $T/tls.pem, log in $T/NAME.log
start() {
	local name=$1; shift
	# ip netns exec execs the injector: $! is its pid, for stop's SIGTERM
	ip netns exec "$N-pod" "$INJ" --listen "127.0.0.1:$PORT" --tls-cert "$T/tls.pem" --tls-key "$T/tls.key" \
		--log-level debug "$@" >"$T/$name.log" 2>&1 &
	INJ_PID=$!
	PIDS+=("$INJ_PID")
	sk_wait_port "$N-pod" tcp "$PORT" 5
}
stop() { kill "$INJ_PID" 2>/dev/null; wait "$INJ_PID" 2>/dev/null; }
# c ARGS... — curl in the pod ns trusting the test CA, the injector known as inj1.example
c() { sk_pod "$N" curl -sS --max-time 20 --cacert "$T/ca.pem" --resolve "inj1.example:$PORT:127.0.0.1" "$@"; }
post() { c -o "$T/resp" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$1" \
	"https://inj1.example:$PORT/mutate"; }
# review POD_JSON_FILE NS > review — a v1 AdmissionReview for CREATE of that pod in NS
review() {
	python3 - "$1" "$2" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "e2e-0001", "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
    "namespace": sys.argv[2], "userInfo": {"username": "e2e"}, "object": pod, "oldObject": None,
    "dryRun": False, "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}))
PY
}
# patched POD_JSON_FILE < response — prints the pod with the response's JSON Patch applied (RFC 6902
# add/remove/replace, written here independently of the C applier), or "allowed=..., no patch"
cat >"$T/patched.py" <<'PY'
import base64, json, sys
resp = json.load(sys.stdin)["response"]
if "patch" not in resp:
    print("allowed=%s, no patch" % resp["allowed"]); sys.exit(0)
assert resp["patchType"] == "JSONPatch"
doc = json.load(open(sys.argv[1]))
def tokens(p):
    return [t.replace("~1", "/").replace("~0", "~") for t in p.split("/")[1:]]
for op in json.loads(base64.b64decode(resp["patch"])):
    *parents, last = tokens(op["path"])
    tgt = doc
    for t in parents:
        tgt = tgt[int(t)] if isinstance(tgt, list) else tgt[t]
    if isinstance(tgt, list):
        i = len(tgt) if last == "-" else int(last)
        if op["op"] == "add": tgt.insert(i, op["value"])
        elif op["op"] == "remove": del tgt[i]
        else: tgt[i] = op["value"]
    else:
        if op["op"] == "remove": del tgt[last]
        else:
            assert (op["op"] == "add") == (last not in tgt) or op["op"] == "add"
            tgt[last] = op["value"]
print(json.dumps(doc, sort_keys=True))
PY
sorted() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))'; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)["response"]; print(eval(sys.argv[1]))' "$1" <"$T/resp"; }

cp "$T/inj1.pem" "$T/tls.pem"; cp "$T/inj1.key" "$T/tls.key"

# ---- settings ----
out=$("$INJ" --help 2>&1); rc=$?
sk_check_eq "--help exits 0" 0 "$rc"
sk_check "--help lists the wrap settings and their variables" grep -q -- "--seccomp-profile NAME *env STOCKADE_SECCOMP_PROFILE" <<<"$out"
out=$("$INJ" 2>&1); rc=$?
sk_check_eq "no certificate: exit 2" 2 "$rc"
sk_check "no certificate: says which flags" grep -q -- "--tls-cert FILE and --tls-key FILE" <<<"$out"
out=$("$INJ" --tls-cert "$T/inj1.pem" --tls-key "$T/inj2.key" 2>&1); rc=$?
sk_check_eq "mismatched key: exit 2" 2 "$rc"
sk_check "mismatched key: named" grep -q "key '$T/inj2.key': .*key values mismatch" <<<"$out"
out=$(STOCKADE_THREADS=0 "$INJ" --tls-cert x --tls-key y 2>&1); rc=$?
sk_check_eq "bad variable: exit 2" 2 "$rc"
sk_check "bad variable: named" grep -q "STOCKADE_THREADS: '0' is not an integer in 1..256" <<<"$out"

# ---- serving ----
start main --exclude-namespaces kube-system,stockade-system --cert-check-ms 200 || sk_fail "injector listens"
sk_check_eq "/healthz 200 over verified TLS" "200" "$(c -o /dev/null -w '%{http_code}' "https://inj1.example:$PORT/healthz")"
sk_check_eq "/readyz 200" "200" "$(c -o /dev/null -w '%{http_code}' "https://inj1.example:$PORT/readyz")"
sk_check "TLS 1.2 accepted" c --tls-max 1.2 -o /dev/null "https://inj1.example:$PORT/healthz"
# TLS 1.1 needs security level 0 on the client (OpenSSL 3 refuses it by default, whatever the server):
# the control shows these client flags negotiate TLS 1.1 with a server that takes it, so the refusal below
# is the injector's (its protocol_version alert), not the client's.
T11=18444
ip netns exec "$N-pod" openssl s_server -accept "127.0.0.1:$T11" -cert "$T/inj1.pem" -key "$T/inj1.key" -tls1_1 \
	-cipher 'DEFAULT@SECLEVEL=0' -www >/dev/null 2>&1 &
PIDS+=("$!")
sk_wait_port "$N-pod" tcp "$T11" 5
c11=(--tlsv1.1 --tls-max 1.1 --ciphers 'DEFAULT@SECLEVEL=0' --resolve "inj1.example:$T11:127.0.0.1")
sk_check "control: the TLS 1.1 client reaches a TLS 1.1 server" c "${c11[@]}" -o /dev/null "https://inj1.example:$T11/"
out=$(c -v "${c11[@]}" -o /dev/null "https://inj1.example:$PORT/healthz" 2>&1); rc=$?
sk_check_eq "TLS 1.1 refused (curl 35, a handshake failure)" 35 "$rc"
sk_check "... by the injector: a protocol_version alert" grep -q "TLS alert, protocol version" <<<"$out"

cat >"$T/pod.json" <<'JSON'
{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "namespace": "agents",
 "labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "localhost/app:1",
 "args": ["serve"], "resources": {"limits": {"memory": "64Mi"}}}], "initContainers": [{"name": "setup",
 "image": "localhost/app:1"}], "terminationGracePeriodSeconds": 30, "restartPolicy": "Always"}}
JSON
review "$T/pod.json" agents >"$T/r-pod.json"
sk_check_eq "pod in scope: 200" 200 "$(post "$T/r-pod.json")"
sk_check_eq "pod in scope: uid echoed, allowed" "e2e-0001 True" "$(field 'd["uid"], d["allowed"]' | tr -d "(),'")"
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted.json"
"$P" inject -f "$T/pod.json" | sorted >"$T/cli.json"
sk_check "admission's patch gives the pod stockade-policy inject writes" cmp -s "$T/admitted.json" "$T/cli.json"
sk_check "the admitted pod starts with stockade-init" grep -q '"initContainers": \[{.*"name": "stockade-init"' "$T/admitted.json"
sk_check "the CLI accepts the admitted pod as wrapped" "$P" inject --check -f "$T/admitted.json"

review "$T/cli.json" agents >"$T/r-wrapped.json"
post "$T/r-wrapped.json" >/dev/null
sk_check_eq "wrapped pod: allowed, no patch (idempotent)" "allowed=True, no patch" "$(python3 "$T/patched.py" "$T/cli.json" <"$T/resp")"

python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["spec"]["hostNetwork"]=True; print(json.dumps(d))' \
	"$T/pod.json" >"$T/hostnet.json"
review "$T/hostnet.json" agents >"$T/r-hostnet.json"
sk_check_eq "hostNetwork pod: 200" 200 "$(post "$T/r-hostnet.json")"
sk_check_eq "hostNetwork pod: refused (fail closed)" "False 403" "$(field 'd["allowed"], d["status"]["code"]' | tr -d "(),'")"
sk_check "hostNetwork pod: the message names the field" grep -q \
	'stockade: this pod cannot be sandboxed: spec.hostNetwork: the pod shares the node' <"$T/resp"
sk_check "hostNetwork pod: logged" grep -q "refused: spec.hostNetwork" "$T/main.log"
review "$T/hostnet.json" stockade-system >"$T/r-excluded.json"
post "$T/r-excluded.json" >/dev/null
sk_check_eq "excluded namespace: allowed as it is" "allowed=True, no patch" "$(python3 "$T/patched.py" "$T/hostnet.json" <"$T/resp")"

python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
d["spec"]["volumes"]=[{"name":"kube-api-access-q7x2v","projected":{"sources":[{"serviceAccountToken":{"path":"token","expirationSeconds":3607}}]}}]
d["spec"]["containers"][0]["volumeMounts"]=[{"name":"kube-api-access-q7x2v","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":True}]
print(json.dumps(d))' "$T/pod.json" >"$T/sa.json"
review "$T/sa.json" agents >"$T/r-sa.json"
post "$T/r-sa.json" >/dev/null
python3 "$T/patched.py" "$T/sa.json" <"$T/resp" >"$T/sa-admitted.json"
sk_check "ServiceAccount token the pod did not ask for: removed, as inject gives" cmp -s "$T/sa-admitted.json" "$T/cli.json"

# ---- the policy review: an invalid policy never enters the cluster ----
# cm_review FILE OP — an AdmissionReview of ConfigMap agent-policy (labelled stockade.io/policy) holding FILE
cm_review() {
	python3 - "$1" "$2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "e2e-0002", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
    "resource": {"group": "", "version": "v1", "resource": "configmaps"}, "operation": sys.argv[2],
    "namespace": "agents", "userInfo": {"username": "dev"},
    "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "agent-policy", "namespace": "agents",
               "labels": {"stockade.io/policy": "true"}}, "data": {"policy.yaml": text}}}}))
PY
}
post_policy() { c -o "$T/resp" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$1" \
	"https://inj1.example:$PORT/validate-policy"; }
printf 'version: 1\negress:\n  - host: api.github.com\n    ports: [443]\n' >"$T/good-policy.yaml"
printf 'version: 1\negress:\n  - host: 1.2.3.4\n    ports: [443]\n' >"$T/bad-policy.yaml"
cm_review "$T/good-policy.yaml" CREATE >"$T/r-cm-good.json"
cm_review "$T/bad-policy.yaml" UPDATE >"$T/r-cm-bad.json"
sk_check_eq "valid policy ConfigMap: 200, allowed" "200 True" "$(post_policy "$T/r-cm-good.json") $(field 'd["allowed"]')"
sk_check_eq "invalid policy ConfigMap (UPDATE): 200, refused 403" "200 False 403" \
	"$(post_policy "$T/r-cm-bad.json") $(field 'd["allowed"], d["status"]["code"]' | tr -d "(),'")"
msg=$(field 'd["status"]["message"]')
check_out=$("$P" check "$T/bad-policy.yaml" 2>&1 | grep -o ':3:[0-9]*: .*' | head -1)
sk_check_eq "the refusal carries stockade-policy check's message, at NAME/policy.yaml:LINE:COL" \
	"agent-policy/policy.yaml$check_out" "$(grep -o 'agent-policy/policy.yaml:3:[0-9]*: .*' <<<"$msg" | head -1)"
sk_check "the refusal is logged with the object" grep -q "admission e2e-0002: policy agents/agent-policy refused: agent-policy/policy.yaml:3:" "$T/main.log"

# ---- malformed ----
printf 'not json' >"$T/bad1"
sk_check_eq "not JSON: 400" 400 "$(post "$T/bad1")"
sk_check "not JSON: says where" grep -q "request body:1:1: not JSON" "$T/resp"
sed 's#admission.k8s.io/v1#admission.k8s.io/v1beta1#' "$T/r-pod.json" >"$T/bad2"
sk_check_eq "v1beta1 review: 400" 400 "$(post "$T/bad2")"
sk_check "v1beta1 review: named" grep -q "apiVersion 'admission.k8s.io/v1beta1' is not admission.k8s.io/v1" "$T/resp"
sed 's#"uid": "e2e-0001"#"uid": 1#' "$T/r-pod.json" >"$T/bad3"
sk_check_eq "uid of the wrong type: 400" 400 "$(post "$T/bad3")"
sk_check "uid of the wrong type: named" grep -q "request.uid: expected a string" "$T/resp"
sk_check_eq "text/plain: 415" 415 "$(c -o /dev/null -w '%{http_code}' -H 'Content-Type: text/plain' --data-binary "@$T/r-pod.json" "https://inj1.example:$PORT/mutate")"
sk_check_eq "GET /mutate: 405" 405 "$(c -o /dev/null -w '%{http_code}' "https://inj1.example:$PORT/mutate")"
sk_check_eq "unknown path: 404" 404 "$(c -o /dev/null -w '%{http_code}' "https://inj1.example:$PORT/x")"
sk_check_eq "chunked body: 501" 501 "$(c -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$T/r-pod.json" "https://inj1.example:$PORT/mutate")"
sk_check "the injector still serves after all that" c -o /dev/null "https://inj1.example:$PORT/healthz"

# ---- rotation ----
serial() { sk_pod "$N" openssl s_client -connect "127.0.0.1:$PORT" -servername inj1.example </dev/null 2>/dev/null |
	openssl x509 -noout -serial 2>/dev/null; }
before=$(serial)
want=$(openssl x509 -noout -serial -in "$T/inj2.pem")
# a half-done rotation (new certificate, old key) is not taken: the old pair keeps serving
cp "$T/inj2.pem" "$T/tls.pem.new" && mv "$T/tls.pem.new" "$T/tls.pem"
for _ in $(seq 50); do grep -q "changed but does not load" "$T/main.log" && break; sleep 0.1; done
sk_check "half-rotated pair: reported, not taken" grep -q "changed but does not load (still serving the previous one)" "$T/main.log"
sk_check_eq "half-rotated pair: the old certificate still served" "$before" "$(serial)"
cp "$T/inj2.key" "$T/tls.key.new" && mv "$T/tls.key.new" "$T/tls.key"
for _ in $(seq 50); do [ "$(serial)" = "$want" ] && break; sleep 0.1; done
sk_check_eq "rotated pair served without a restart" "$want" "$(serial)"
sk_check "rotation logged" grep -q "serving certificate reloaded: /CN=inj2.example" "$T/main.log"
sk_check "same process" kill -0 "$INJ_PID"
sk_check_eq "admission works on the new certificate" 200 "$(c -o /dev/null -w '%{http_code}' --resolve "inj2.example:$PORT:127.0.0.1" -H 'Content-Type: application/json' --data-binary "@$T/r-pod.json" "https://inj2.example:$PORT/mutate")"
stop
sk_check "SIGTERM: stopped cleanly" grep -q "stockade-injector: stopped" "$T/main.log"
cp "$T/inj1.pem" "$T/tls.pem"; cp "$T/inj1.key" "$T/tls.key"

# ---- cluster guardrails: refused at admission naming the guardrail, carried into the pod ----
printf 'version: 1\ndeniedHosts: [api.github.com]\nblockPrivate: true\n' >"$T/guardrails.yaml"
start guardrails --guardrails "$T/guardrails.yaml"
sk_check "guardrails: loaded at start, named with their hash" grep -q "guardrails $T/guardrails.yaml ([0-9a-f]\{16\})" "$T/guardrails.log"
sk_check_eq "guardrails: a valid policy exceeding them is refused (403)" "200 False 403" \
	"$(post_policy "$T/r-cm-good.json") $(field 'd["allowed"], d["status"]["code"]' | tr -d "(),'")"
msg=$(field 'd["status"]["message"]')
sk_check_eq "guardrails: the refusal names the policy position and the guardrail, as check --guardrails does" \
	"$("$P" check --guardrails "$T/guardrails.yaml" "$T/good-policy.yaml" 2>&1 | sed "s#^$T/good-policy.yaml#agent-policy/policy.yaml#")" \
	"$(grep '^agent-policy/policy.yaml:' <<<"$msg")"
sk_check_eq "guardrails: the wrapped pod carries them for its sidecar" "True --guardrails=/etc/stockade-guardrails/guardrails.yaml" \
	"$(post "$T/r-pod.json" >/dev/null; python3 "$T/patched.py" "$T/pod.json" <"$T/resp" | python3 -c '
import json, sys
p = json.load(sys.stdin)
side = [c for c in p["spec"]["initContainers"] if c["name"] == "stockade-sidecar"][0]
print(p["metadata"]["annotations"]["stockade.io/guardrails"] == open(sys.argv[1]).read(),
      [a for a in side["args"] if a.startswith("--guardrails")][0])' "$T/guardrails.yaml")"
stop
printf 'version: 1\ndeniedHost: [a.example]\n' >"$T/bad-guardrails.yaml"
ip netns exec "$N-pod" "$INJ" --listen "127.0.0.1:$PORT" --tls-cert "$T/tls.pem" --tls-key "$T/tls.key" \
	--guardrails "$T/bad-guardrails.yaml" >"$T/badg.log" 2>&1
sk_check_eq "guardrails that do not load: exit 2" 2 "$?"
sk_check "and the error says where" grep -q "guardrails: $T/bad-guardrails.yaml:2:1: guardrails: unknown key 'deniedHost'" "$T/badg.log"

# ---- bounds ----
# slow CLIENTS: opens CLIENTS TCP connections that send nothing and prints, for each, "closed" when the
# server closed it or "open" when it was still open after 15 s; `hold FILE` keeps waiting until FILE exists.
cat >"$T/slow.py" <<'PY'
import os, socket, sys, time
n, hold = int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None
socks = [socket.create_connection(("127.0.0.1", int(os.environ["PORT"]))) for _ in range(n)]
open(os.environ["T"] + "/slow.ready", "w").close()
for s in socks:
    s.settimeout(15)
    try:
        print("closed" if s.recv(1) == b"" else "data")
    except socket.timeout:
        print("open")
    except ConnectionResetError:
        print("closed")
PY
start bound --threads 2 --request-timeout-ms 4000 || sk_fail "injector (2 threads) listens"
rm -f "$T/slow.ready"
sk_pod "$N" env PORT=$PORT T="$T" python3 "$T/slow.py" 1 >"$T/slow.out" &
slow=$!
for _ in $(seq 50); do [ -e "$T/slow.ready" ] && break; sleep 0.1; done
ok=0
for _ in 1 2 3 4 5; do [ "$(post "$T/r-pod.json")" = 200 ] && ok=$((ok + 1)); done
sk_check_eq "one silent client holds one worker: 5 requests served meanwhile" 5 "$ok"
held=$(sk_pod "$N" ss -Htn state established "( sport = :$PORT )" | wc -l)
sk_check "... while the silent connection is still open" test "$held" -ge 1
wait "$slow"
sk_check_eq "the silent client is cut at the request deadline" "closed" "$(cat "$T/slow.out")"
sk_check "... before its own 15 s wait" grep -q "TLS handshake: timed out" "$T/bound.log"
stop

start queue --threads 1 --max-queue 1 --request-timeout-ms 8000 || sk_fail "injector (1 thread, queue 1) listens"
rm -f "$T/slow.ready"
# 3 silent clients: one served (held 8 s), one queued, the third closed at once
sk_pod "$N" env PORT=$PORT T="$T" python3 "$T/slow.py" 3 >"$T/queue.out"
sk_check_eq "queue bound: the connection beyond threads + queue is closed at accept" "closed" "$(sed -n 3p "$T/queue.out")"
sk_check "queue bound: logged" grep -q "1 connections waiting already; closing a new one" "$T/queue.log"
sk_check_eq "queue bound: the served one was cut at its deadline" "closed" "$(sed -n 1p "$T/queue.out")"
sk_check "served again once the queue drains" c -o /dev/null "https://inj1.example:$PORT/healthz"
stop

# ---- the sidecar's settings (what inject takes as --sidecar-setting, --api-secret, --sidecar-first) ----
start extras --sidecar-settings "peek-timeout-ms=2000 dns-upstream-sockets=64" \
	--api-secrets "gh=gh-token pypi=pypi-token" || sk_fail "injector (sidecar settings) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-extras.json"
"$P" inject -f "$T/pod.json" --sidecar-setting peek-timeout-ms=2000 --sidecar-setting dns-upstream-sockets=64 \
	--api-secret gh=gh-token --api-secret pypi=pypi-token | sorted >"$T/cli-extras.json"
sk_check "sidecar settings and API secrets: the patch gives the pod inject writes with the same flags" \
	cmp -s "$T/admitted-extras.json" "$T/cli-extras.json"
sk_check "... which carries them (the flag, the Secret volume)" grep -q \
	'"--peek-timeout-ms=2000".*"secretName": "pypi-token"' "$T/admitted-extras.json"
stop
# ---- credentials and the trust files (inject's --api-secret, --secret-env, --no-trust) ----
start secrets --api-secrets "github=gh-token" --secret-env "GITHUB_TOKEN=stockade-secret-github" ||
	sk_fail "injector (secrets) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-secrets.json"
"$P" inject -f "$T/pod.json" --api-secret github=gh-token --secret-env GITHUB_TOKEN=stockade-secret-github |
	sorted >"$T/cli-secrets.json"
sk_check "secrets: the patch gives the pod inject writes with the same flags" \
	cmp -s "$T/admitted-secrets.json" "$T/cli-secrets.json"
# NAME: "secret-mount env-value trust-mount SSL_CERT_FILE" of each container, sidecar: its --trust-dir too
sk_check_eq "secrets: the Secret in the sidecar alone; the placeholder, the read-only trust files and their variables in the pod's own containers" \
	"stockade-init: - - - - | stockade-sidecar: ro - rw - --trust-dir=/run/stockade-trust | setup: - stockade-secret-github ro /run/stockade-trust/bundle.pem | app: - stockade-secret-github ro /run/stockade-trust/bundle.pem" \
	"$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["spec"]
out = []
for c in s["initContainers"] + s["containers"]:
    m = {v["name"]: v for v in c.get("volumeMounts", [])}
    e = {v["name"]: v.get("value") for v in c.get("env", [])}
    mode = lambda n: "-" if n not in m else ("ro" if m[n].get("readOnly") else "rw")
    f = [mode("stockade-secret-github"), e.get("GITHUB_TOKEN", "-"), mode("stockade-trust"), e.get("SSL_CERT_FILE", "-")]
    if c["name"] == "stockade-sidecar":
        f.append(" ".join(a for a in c["args"] if a.startswith("--trust-dir")) or "-")
    out.append(c["name"] + ": " + " ".join(f))
print(" | ".join(out))' "$T/admitted-secrets.json")"
sed 's/"name": "app", /"name": "app", "env": [{"name": "GITHUB_TOKEN", "value": "ghp_real"}], /' "$T/pod.json" >"$T/pod-token.json"
review "$T/pod-token.json" agents >"$T/r-pod-token.json"
post "$T/r-pod-token.json" >/dev/null
sk_check_eq "secrets: a pod that sets the placeholder's variable itself is refused, named" "False yes" \
	"$(field 'd["allowed"]') $(grep -q "spec.containers\[0\].env: container 'app' sets GITHUB_TOKEN" "$T/resp" && echo yes)"
# a pod's own Secret and placeholder (annotations), next to the injector's
sed 's/"labels": {"app": "web"}/"labels": {"app": "web"}, "annotations": {"stockade.io\/api-secrets": "npm=npm-token", "stockade.io\/secret-env": "NPM_TOKEN=stockade-secret-npmjs1"}/' \
	"$T/pod.json" >"$T/pod-ann.json"
review "$T/pod-ann.json" agents >"$T/r-pod-ann.json"
post "$T/r-pod-ann.json" >/dev/null
python3 "$T/patched.py" "$T/pod-ann.json" <"$T/resp" >"$T/admitted-ann.json"
"$P" inject -f "$T/pod-ann.json" --api-secret github=gh-token --secret-env GITHUB_TOKEN=stockade-secret-github |
	sorted >"$T/cli-ann.json"
sk_check "secrets: a pod's annotations add its own Secret and placeholder, as inject reads them" \
	cmp -s "$T/admitted-ann.json" "$T/cli-ann.json"
sk_check_eq "... the sidecar mounts both Secrets, the agent has both placeholders" \
	"stockade-secret-github stockade-secret-npm | stockade-secret-github stockade-secret-npmjs1" "$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["spec"]
side = next(c for c in s["initContainers"] if c["name"] == "stockade-sidecar")
app = next(c for c in s["containers"] if c["name"] == "app")
print(" ".join(m["name"] for m in side["volumeMounts"] if m["name"].startswith("stockade-secret-")), "|",
      " ".join(e["value"] for e in app["env"] if e["name"].endswith("_TOKEN")))' "$T/admitted-ann.json")"
stop
start notrust --no-trust || sk_fail "injector (no trust files) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-notrust.json"
"$P" inject -f "$T/pod.json" --no-trust | sorted >"$T/cli-notrust.json"
sk_check "--no-trust: the patch gives the pod inject --no-trust writes" cmp -s "$T/admitted-notrust.json" "$T/cli-notrust.json"
sk_check "... with no trust files anywhere" sh -c "! grep -q 'stockade-trust\|SSL_CERT_FILE' '$T/admitted-notrust.json'"
stop
start first --sidecar-first || sk_fail "injector (sidecar first) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-first.json"
"$P" inject -f "$T/pod.json" --sidecar-first | sorted >"$T/cli-first.json"
sk_check "--sidecar-first: the patch gives the pod inject --sidecar-first writes" cmp -s "$T/admitted-first.json" "$T/cli-first.json"
stop
start insidecar --init-in-sidecar || sk_fail "injector (init in the sidecar) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-insidecar.json"
"$P" inject -f "$T/pod.json" --init-in-sidecar | sorted >"$T/cli-insidecar.json"
sk_check "--init-in-sidecar: the patch gives the pod inject --init-in-sidecar writes" \
	cmp -s "$T/admitted-insidecar.json" "$T/cli-insidecar.json"
sk_check_eq "... no stockade-init container (the sidecar, then the pod's own), the sidecar's entry stockade-init --exec-as" \
	"stockade-sidecar setup /usr/local/bin/stockade-init --exec-as" "$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["spec"]
names = [c["name"] for c in s["initContainers"]]
cmd = s["initContainers"][0]["command"]
print(" ".join(names), cmd[0], cmd[-4])' "$T/admitted-insidecar.json")"
stop
start cni --cni || sk_fail "injector (CNI mode) listens"
post "$T/r-pod.json" >/dev/null
python3 "$T/patched.py" "$T/pod.json" <"$T/resp" >"$T/admitted-cni.json"
"$P" inject -f "$T/pod.json" --cni | sorted >"$T/cli-cni.json"
sk_check "--cni: the patch gives the pod inject --cni writes" cmp -s "$T/admitted-cni.json" "$T/cli-cni.json"
sk_check_eq "... stockade-validate first, no container adds a capability, no netns-policy annotation (the plugin reads the ConfigMap)" \
	"stockade-validate [] False" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); s = d["spec"]
adds = [c["name"] for c in s["initContainers"] + s["containers"] if (c.get("securityContext") or {}).get("capabilities", {}).get("add")]
print(s["initContainers"][0]["name"], adds, "stockade.io/netns-policy" in (d["metadata"].get("annotations") or {}))' "$T/admitted-cni.json")"
stop
out=$("$INJ" --tls-cert x --tls-key y --init-in-sidecar --sidecar-first 2>&1); rc=$?
sk_check_eq "--init-in-sidecar with --sidecar-first: exit 2, saying why (fail open)" "2 yes" \
	"$rc $(grep -q -- "--init-in-sidecar needs the native sidecar .*so the agent could run with no rules (fail open)" <<<"$out" && echo yes)"
out=$("$INJ" --tls-cert x --tls-key y --api-secrets "gh=Bad_Secret" 2>&1); rc=$?
sk_check_eq "a malformed API secret list: exit 2, named" "2 yes" "$rc $(grep -q -- "--api-secrets: 'gh=Bad_Secret': expected" <<<"$out" && echo yes)"

sk_summary
