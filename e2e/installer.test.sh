#!/usr/bin/env bash
# The seccomp installer (`stockade-policy seccomp-install`, the DaemonSet's process): writes the profile
# the generator makes for the policy, leaves a current file alone, repairs a modified or deleted one,
# follows policy edits, refuses nested names, and reports a broken policy without touching the file.
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
}

# --- install, leave alone, repair, follow edits, keep the last profile on a broken policy ---
t_lifecycle() {
	mkdir -p "$d"
	cp policy/examples/agent.yaml "$SK_TMP/policy.yaml"
	sk_check "first run installs the profile" "$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once
	"$P" seccomp --policy "$SK_TMP/policy.yaml" -o "$SK_TMP/ref.json"
	sk_check "installed profile equals 'stockade-policy seccomp' output" cmp "$SK_TMP/ref.json" "$d/stockade-agent.json"
	before=$(stat -c %Y.%i "$d/stockade-agent.json")
	sleep 1
	out=$("$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once)
	sk_check_eq "a current profile is left alone (no write, no log line)" "$before|" "$(stat -c %Y.%i "$d/stockade-agent.json")|$out"
	echo '{"defaultAction":"SCMP_ACT_ALLOW"}' >"$d/stockade-agent.json"
	"$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once >/dev/null
	sk_check "a tampered profile is restored" cmp "$SK_TMP/ref.json" "$d/stockade-agent.json"
	printf 'seccomp:\n  deny: [getrandom]\n' >>"$SK_TMP/policy.yaml"
	"$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once >/dev/null
	sk_check_fails "a policy edit reaches the node's profile" cmp "$SK_TMP/ref.json" "$d/stockade-agent.json"
	cp "$d/stockade-agent.json" "$SK_TMP/edited.json"
	cp "$SK_TMP/broken.yaml" "$SK_TMP/policy.yaml"
	out=$("$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --once 2>&1); rc=$?
	sk_check_eq "a broken policy fails the round (exit 3, the policy exit code)" 3 "$rc"
	sk_check "a broken policy is reported with its position" grep -q '"event":"seccomp_install_failed".*policy.yaml:' <<<"$out"
	sk_check "a broken policy leaves the last profile in place" cmp "$SK_TMP/edited.json" "$d/stockade-agent.json"
	sk_check_fails "nested profile names are refused" "$P" seccomp-install --policy="$SK_TMP/policy.yaml" --dir="$d" --name=a/b.json --once
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
	sk_check "... to the same profile the installer wrote" cmp "$SK_TMP/apis.json" "$SK_TMP/seccomp-apis/stockade-agent.json"
}

# --- log lines stay JSON whatever the path holds (a broken policy's round: its error line too) ---
t_log_json() {
	q="$SK_TMP/we\"ird dir"
	mkdir -p "$q"
	out=$("$P" seccomp-install --policy="$SK_TMP/broken.yaml" --dir="$q" --once 2>&1)
	sk_check "log lines stay valid JSON with quotes in paths and errors" /usr/bin/python3 -c \
		'import json,sys; [json.loads(l) for l in sys.argv[1].splitlines()]' "$out"
	# A directory name that is not UTF-8 (a byte 0xff): the line must still be valid UTF-8 JSON, the byte escaped.
	q8="$SK_TMP/bad"$'\xff'"dir"
	mkdir -p "$q8"
	"$P" seccomp-install --policy="$SK_TMP/broken.yaml" --dir="$q8" --once >"$SK_TMP/u8.out" 2>&1
	sk_check "log lines stay valid UTF-8 JSON with a non-UTF-8 byte in the path" /usr/bin/python3 -c \
		'import json,sys; ls=[json.loads(l) for l in open(sys.argv[1],"rb").read().decode("utf-8").splitlines()]; assert ls and ls[0]["path"].endswith("bad\u00ffdir/stockade-agent.json"), ls' "$SK_TMP/u8.out"
}

SK_CASES=(lifecycle api_secrets log_json)
sk_main "$@"
