#!/usr/bin/env bash
# The seccomp installer (`stockade-policy seccomp-install`, the stockade-system DaemonSet's process).
# --policy mode: writes the profile the generator makes for the policy under its content-hashed name, leaves
# a current file alone, repairs a modified or deleted one, follows policy edits (to a new name), refuses
# nested names, reports a broken policy without touching the file. --from-cluster mode, against a
# stand-in API server over TLS (e2e/installer/fake-api.py): every labelled ConfigMap's profile, across pages,
# each equal to `stockade-policy seccomp` output; the chart's own ConfigMap; bad ones skipped and named; a
# profile nobody asks for kept until the grace period, others' files never touched; the default profile
# (what stockade-injector gives by default) always served; a refused or
# untrusted listing deletes nothing; the token must be the pod's.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
P=$SK_BIN/stockade-policy

setup() {
	sk_tmp skinstaller
	d=$SK_TMP/seccomp
	# a policy that does not parse (a round that must fail and keep the last profile)
	echo 'egress: [' >"$SK_TMP/broken.yaml"
	trap 'kill "${api_pid:-}" 2>/dev/null; sk_cleanup_on_exit' EXIT
}

# --- install, leave alone, repair, follow edits, keep the last profile on a broken policy ---
t_lifecycle() {
	mkdir -p "$d"
	cp policy/examples/agent.yaml "$SK_TMP/policy.yaml"
	name=$("$P" seccomp --policy "$SK_TMP/policy.yaml" --print-name)
	case $name in stockade-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].json)
		sk_pass "the profile is named stockade-<16 hex>.json ($name)" ;;
	*) sk_fail "the profile is named stockade-<16 hex>.json" "$name" ;; esac
	sk_check "first run installs the profile" "$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once
	"$P" seccomp --policy "$SK_TMP/policy.yaml" -o "$SK_TMP/ref.json"
	sk_check "installed profile equals 'stockade-policy seccomp' output" cmp "$SK_TMP/ref.json" "$d/$name"
	before=$(stat -c %Y.%i "$d/$name")
	sleep 1
	out=$("$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once)
	sk_check_eq "a current profile is left alone (no write, no log line)" "$before|" "$(stat -c %Y.%i "$d/$name")|$out"
	echo '{"defaultAction":"SCMP_ACT_ALLOW"}' >"$d/$name"
	"$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once >/dev/null
	sk_check "a tampered profile is restored" cmp "$SK_TMP/ref.json" "$d/$name"
	printf 'seccomp:\n  deny: [getrandom]\n' >>"$SK_TMP/policy.yaml"
	"$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once >/dev/null
	name2=$("$P" seccomp --policy "$SK_TMP/policy.yaml" --print-name)
	"$P" seccomp --policy "$SK_TMP/policy.yaml" -o "$SK_TMP/ref2.json"
	sk_check "a policy edit reaches the node as a profile of its own name" cmp "$SK_TMP/ref2.json" "$d/$name2"
	sk_check "... and the earlier profile is not overwritten (a running pod may use it)" cmp "$SK_TMP/ref.json" "$d/$name"
	cp "$d/$name2" "$SK_TMP/edited.json"
	cp "$SK_TMP/broken.yaml" "$SK_TMP/policy.yaml"
	out=$("$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once 2>&1); rc=$?
	sk_check_eq "a broken policy fails the round (exit 3, the policy exit code)" 3 "$rc"
	sk_check "a broken policy is reported with its position" grep -q '"event":"seccomp_install_failed".*policy.yaml:' <<<"$out"
	sk_check "a broken policy leaves the last profile in place" cmp "$SK_TMP/edited.json" "$d/$name2"
	# (policy.yaml is the broken one now: these use the example, so only the name can be refused)
	sk_check "control: a flat --name is installed under that name" \
		"$P" seccomp-install --policy=policy/examples/agent.yaml --dir="$d" --name=flat.json --once
	sk_check "... that file is there" test -s "$d/flat.json"
	out=$("$P" seccomp-install --policy=policy/examples/agent.yaml --dir="$d" --name=a/b.json --once 2>&1); rc=$?
	sk_check_eq "nested profile names are refused (exit 2, usage)" 2 "$rc"
	sk_check "... saying why" grep -q -- "--name must be a plain file name" <<<"$out"
	sk_check "... and nothing is written" test ! -e "$d/a"
	rm -f "$d/flat.json"
	sk_check "no temporary file is left behind" test -z "$(find "$d" -name '*.tmp*')"
}

# --- API secret files are the sidecar's, not the installer's ---
t_api_secrets() {
	cat >"$SK_TMP/apis.yaml" <<'EOT'
version: 1
apis:
  - name: gw
    upstream: https://api.example
    header: { name: x-api-key, valueFile: /nonexistent/secret }
    caFile: /nonexistent/ca.pem
EOT
	mkdir -p "$SK_TMP/seccomp-apis"
	sk_check "a policy whose API secret files are not mounted here still installs (they live in the sidecar)" \
		"$P" seccomp-install --policy="$SK_TMP/apis.yaml" --dir="$SK_TMP/seccomp-apis" --once
	sk_check "'stockade-policy seccomp --policy' renders the same policy without its secret files" \
		"$P" seccomp --policy "$SK_TMP/apis.yaml" -o "$SK_TMP/apis.json"
	sk_check "... to the same profile the installer wrote" cmp "$SK_TMP/apis.json" "$SK_TMP/seccomp-apis/$("$P" seccomp --policy "$SK_TMP/apis.yaml" --print-name)"
}

# --- log lines stay JSON whatever the path holds (a broken policy's round: its error line too) ---
t_log_json() {
	q="$SK_TMP/we\"ird dir"
	mkdir -p "$q"
	out=$("$P" seccomp-install --policy="$SK_TMP/broken.yaml" --dir="$q" --once 2>&1)
	sk_check "log lines stay valid JSON with quotes in paths and errors" /usr/bin/python3 -c \
		'import json,sys; [json.loads(l) for l in sys.argv[1].splitlines()]' "$out"
	# A directory name that is not UTF-8 (a byte 0xff): the line must still be valid UTF-8 JSON, the byte
	# escaped (the policy is broken, so no profile name: the failure is logged against the directory).
	q8="$SK_TMP/bad"$'\xff'"dir"
	mkdir -p "$q8"
	"$P" seccomp-install --policy="$SK_TMP/broken.yaml" --dir="$q8" --once >"$SK_TMP/u8.out" 2>&1
	sk_check "log lines stay valid UTF-8 JSON with a non-UTF-8 byte in the path" /usr/bin/python3 -c \
		'import json,sys; ls=[json.loads(l) for l in open(sys.argv[1],"rb").read().decode("utf-8").splitlines()]; assert ls and ls[0]["path"].endswith("bad\u00ffdir"), ls' "$SK_TMP/u8.out"
}

# --- --from-cluster: the stockade-system installer against a stand-in API server ---
t_from_cluster() {
	c=$SK_TMP/cluster api=$SK_TMP/api
	mkdir -p "$c" "$api"
	# The API server's certificate names 127.0.0.1 (an IP SAN, as the in-cluster kubernetes Service's does).
	if ! (cd "$api" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		-out ca.pem -days 2 -subj /CN=fake-kube-ca && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout srv.key -out srv.csr -subj /CN=kube && printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
		-extfile srv.ext && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key \
		-out other.pem -days 2 -subj /CN=another-ca) >"$api/ca.log" 2>&1; then
		sk_fail "certificates for the stand-in API server" "$(cat "$api/ca.log")"; return
	fi
	printf 'sa-token-1\n' >"$api/token"
	echo '[]' >"$api/pages.json"
	/usr/bin/python3 e2e/installer/fake-api.py "$api" "$api/srv.pem" "$api/srv.key" sa-token-1 &
	api_pid=$!
	for _ in $(seq 100); do [ -s "$api/port" ] && break; sleep 0.05; done
	url=https://127.0.0.1:$(cat "$api/port" 2>/dev/null)
	inst() { # inst [ARGS...] — one cluster round into $c; output in $out, exit code in $rc
		out=$("$P" seccomp-install --from-cluster --dir="$c" --api-server="$url" --token-file="$api/token" \
			--ca-file="$api/ca.pem" --once "$@" 2>&1); rc=$?; }
	# cm NS NAME POLICY-YAML [PROFILE] — one labelled ConfigMap as the API returns it
	cm() { /usr/bin/python3 -c '
import json, sys
ns, name, pol = sys.argv[1:4]
data = {"policy.yaml": pol}
if len(sys.argv) > 4: data["profile"] = sys.argv[4]
print(json.dumps({"metadata": {"namespace": ns, "name": name, "labels": {"stockade.dev/seccomp-profile": "true"}}, "data": data}))' "$@"; }
	printf 'version: 1\nseccomp: {deny: [getrandom]}\n' >"$SK_TMP/a.yaml"
	printf 'version: 1\nseccomp:\n  allow: [mlock]\n  deny: [uname, ptrace]\n' >"$SK_TMP/b.yaml"
	pa=$("$P" seccomp --policy "$SK_TMP/a.yaml" --print-name); "$P" seccomp --policy "$SK_TMP/a.yaml" -o "$SK_TMP/a.json"
	pb=$("$P" seccomp --policy "$SK_TMP/b.yaml" --print-name); "$P" seccomp --policy "$SK_TMP/b.yaml" -o "$SK_TMP/b.json"
	printf 'version: 1\n' >"$SK_TMP/d.yaml"
	pd=$("$P" seccomp --policy "$SK_TMP/d.yaml" --print-name); "$P" seccomp --policy "$SK_TMP/d.yaml" -o "$SK_TMP/d.json"
	# The chart's own ConfigMap for a third section, as helm renders it.
	HELM=${SK_TOOLS:-/opt/stockade-tools}/bin/helm
	"$HELM" template rel-c helm/stockade --namespace team-c --kube-version 1.34.0 -s templates/configmap-seccomp.yaml \
		--set 'policy.spec.seccomp.deny={ptrace,kexec_load,bpf}' 2>&1 | /usr/bin/python3 -c '
import json, sys, yaml
d = yaml.safe_load(sys.stdin); d["metadata"]["namespace"] = "team-c"; print(json.dumps(d))' >"$SK_TMP/chart-cm.json"
	pc=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["profile"])' "$SK_TMP/chart-cm.json")
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["policy.yaml"], end="")' \
		"$SK_TMP/chart-cm.json" >"$SK_TMP/c.yaml"
	"$P" seccomp --policy "$SK_TMP/c.yaml" -o "$SK_TMP/c.json"
	{
		echo '[['
		cm team-a rel-a-seccomp "$(cat "$SK_TMP/a.yaml")" "$pa"; echo ,
		cm team-b rel-b-seccomp "$(cat "$SK_TMP/b.yaml")"; echo ,
		cm team-x broken $'version: 1\nseccomp:\n  allow: [ptrace]\n'
		echo '],['
		cat "$SK_TMP/chart-cm.json"; echo ,
		cm team-a2 same-as-a $'version: 1\nseccomp:\n  deny: [getrandom, getrandom]\n'; echo ,
		cm team-y liar $'version: 1\n' stockade-0000000000000000.json
		echo ']]'
	} >"$api/pages.json"
	echo '{}' >"$c/stockade-agent.json"   # a 0.1 release's profile: not ours to delete
	echo '{}' >"$c/other.json"
	inst --grace=0
	sk_check_eq "a round with bad ConfigMaps exits 3 (the good ones are still served)" 3 "$rc"
	sk_check_eq "every labelled ConfigMap's profile, across two pages, one file per distinct section, and the default" \
		"$(printf '%s\n' "$pa" "$pb" "$pc" "$pd" other.json stockade-agent.json | sort)" "$(find "$c" -mindepth 1 -printf '%f\n' | sort)"
	sk_check "the default profile (a policy without a seccomp section: what the injector gives by default) is served" \
		cmp "$SK_TMP/d.json" "$c/$pd"
	sk_check "the first release's profile is what stockade-policy seccomp generates" cmp "$SK_TMP/a.json" "$c/$pa"
	sk_check "the second release's (different section) too, under its own name" cmp "$SK_TMP/b.json" "$c/$pb"
	sk_check "the chart's rendered ConfigMap is served under the name its pods use" cmp "$SK_TMP/c.json" "$c/$pc"
	sk_check "a refused section is skipped, naming the ConfigMap and the policy's line:col" grep -q \
		'"event":"seccomp_profile_skipped","configmap":"team-x/broken","error":"team-x/broken:policy.yaml:3:11: seccomp.allow\[0\]' <<<"$out"
	sk_check "a ConfigMap whose declared name is not its section's hash is skipped" grep -q \
		'"configmap":"team-y/liar","error":"data.profile is .stockade-0000000000000000.json. but' <<<"$out"
	sk_check "the installer asked for the label, with the pod's token, 100 a page" grep -q \
		'^/api/v1/configmaps?labelSelector=stockade.dev%2Fseccomp-profile%3Dtrue&limit=100&continue=p1$' "$api/requests"
	sk_check "log lines are JSON" /usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in sys.argv[1].splitlines()]' "$out"
	before=$(stat -c %Y.%i "$c/$pa" "$c/$pb")
	sleep 1
	sk_check "the first round logged its installs (the control for the second's)" grep -q '"event":"seccomp_installed"' <<<"$out"
	inst --grace=0
	sk_check "control: the second round read the listing (exit 3 and the skips again)" \
		grep -q "^3 .*seccomp_profile_skipped" <<<"$rc $(tr '\n' ' ' <<<"$out")"
	sk_check_eq "a second round rewrites nothing" "$before" "$(stat -c %Y.%i "$c/$pa" "$c/$pb")"
	sk_check_fails "... and logs no install" grep -q seccomp_installed <<<"$out"

	# Release b is uninstalled: its file stays through the grace period, goes after it; others' files stay.
	{ echo '[['; cm team-a rel-a-seccomp "$(cat "$SK_TMP/a.yaml")" "$pa"; echo ,; cat "$SK_TMP/chart-cm.json"; echo ']]'; } >"$api/pages.json"
	inst --grace=3600
	sk_check_eq "an unneeded profile is kept within the grace period (exit 0)" "0 yes" "$rc $([ -f "$c/$pb" ] && echo yes)"
	echo 403 >"$api/status"
	inst --grace=0
	sk_check_eq "a refused listing fails the round (exit 5) ..." 5 "$rc"
	sk_check "... says why, from the API's Status" grep -q '"event":"seccomp_list_failed".*HTTP 403: configmaps is forbidden' <<<"$out"
	sk_check "... and deletes nothing" test -f "$c/$pb"
	rm -f "$api/status"
	printf 'stolen\n' >"$SK_TMP/other-token"
	out=$("$P" seccomp-install --from-cluster --dir="$c" --api-server="$url" --token-file="$SK_TMP/other-token" \
		--ca-file="$api/ca.pem" --once --grace=0 2>&1); rc=$?
	sk_check_eq "a token the API refuses (401): exit 5, nothing deleted" "5 yes" "$rc $([ -f "$c/$pb" ] && echo yes)"
	out=$("$P" seccomp-install --from-cluster --dir="$c" --api-server="$url" --token-file="$api/token" \
		--ca-file="$api/other.pem" --once --grace=0 2>&1); rc=$?
	sk_check_eq "an API server the CA file does not vouch for: exit 5, nothing deleted" "5 yes yes" \
		"$rc $([ -f "$c/$pb" ] && echo yes) $(grep -qi 'certificate' <<<"$out" && echo yes)"
	inst --grace=0
	sk_check_eq "past the grace period the unneeded profile goes; the others and foreign files stay" \
		"$(printf '%s\n' "$pa" "$pc" "$pd" other.json stockade-agent.json | sort)" "$(find "$c" -mindepth 1 -printf '%f\n' | sort)"
	sk_check "... logged" grep -q "\"event\":\"seccomp_removed\",\"path\":\"$c/$pb\"" <<<"$out"
	echo '[[]]' >"$api/pages.json"
	inst --grace=0
	sk_check_eq "a cluster with no labelled ConfigMap: only the default profile (and foreign files) stay" \
		"$(printf '%s\n' "$pd" other.json stockade-agent.json | sort)" "$(find "$c" -mindepth 1 -printf '%f\n' | sort)"
	out=$("$P" seccomp-install --from-cluster --dir="$c" --api-server=http://10.96.0.1 --once 2>&1); rc=$?
	sk_check_eq "the token is never sent in clear beyond loopback (http:// to another host: usage error)" 2 "$rc"
	out=$("$P" seccomp-install --from-cluster --policy "$SK_TMP/a.yaml" --dir="$c" --once 2>&1); rc=$?
	sk_check_eq "--from-cluster and --policy together: usage error" 2 "$rc"
	kill "$api_pid" 2>/dev/null; wait "$api_pid" 2>/dev/null; api_pid=
}

SK_CASES=(lifecycle api_secrets log_json from_cluster)
sk_main "$@"
