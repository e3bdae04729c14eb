#!/usr/bin/env bash
# e2e/lib.sh — shared by the netns end-to-end suites (source it). Builds a "pod" and an "internet"
# network namespace joined by a veth pair, on the project's own test addresses only:
#
#   pod  ns  <name>-pod  veth skp0  198.18.0.2/24  2001:db8:18::2/64   default routes via the internet ns
#   inet ns  <name>-net  veth skn0  198.18.0.1/24  2001:db8:18::1/64
#   test servers: extra addresses on the internet ns loopback, 198.18.1.0/24 and 2001:db8:19::/64
#     (sk_net_add_ip), so each test server can have a distinct "public" IP.
#
# Nothing here routes to any address outside these ranges; both namespaces are deleted by sk_net_down
# (also on EXIT through sk_cleanup_on_exit). Test bookkeeping: sk_pass/sk_fail/sk_check and sk_summary,
# which prints the "N passed, M failed" line the runners read.

SK_ROOT=${SK_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SK_BIN=${SK_BIN:-$SK_ROOT/build/bin}
SK_AGENT_UID=${SK_AGENT_UID:-1000}
SK_SIDECAR_UID=${SK_SIDECAR_UID:-1337}
SK_POD_IP4=198.18.0.2 SK_NET_IP4=198.18.0.1
SK_POD_IP6=2001:db8:18::2 SK_NET_IP6=2001:db8:18::1
SK_PASSED=0 SK_FAILED=0 SK_FAILED_NAMES=()
SK_NETS=()

# sk_net_up NAME — create NAME-pod and NAME-net (deleting leftovers of an earlier run first).
sk_net_up() {
	local n=$1 pod="$1-pod" net="$1-net"
	sk_net_down "$n" 2>/dev/null || true
	ip netns add "$pod" && ip netns add "$net" || return 1
	ip link add skp0 netns "$pod" type veth peer name skn0 netns "$net" || return 1
	ip -n "$pod" link set lo up; ip -n "$net" link set lo up
	ip -n "$pod" addr add "$SK_POD_IP4/24" dev skp0
	ip -n "$net" addr add "$SK_NET_IP4/24" dev skn0
	ip -n "$pod" -6 addr add "$SK_POD_IP6/64" dev skp0 nodad
	ip -n "$net" -6 addr add "$SK_NET_IP6/64" dev skn0 nodad
	ip -n "$pod" link set skp0 up; ip -n "$net" link set skn0 up
	ip -n "$pod" route add default via "$SK_NET_IP4"
	ip -n "$pod" -6 route add default via "$SK_NET_IP6"
	ip -n "$net" route add 198.18.0.0/24 dev skn0 2>/dev/null || true
	# The internet ns answers for every test server address it holds on lo; it forwards nothing.
	ip netns exec "$net" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	mkdir -p "/etc/netns/$pod"
	echo "nameserver $SK_NET_IP4" >"/etc/netns/$pod/resolv.conf"
	SK_NETS+=("$n")
}

# sk_net_add_ip NAME ADDR — a test server address (198.18.1.x or 2001:db8:19::x) in NAME-net.
sk_net_add_ip() {
	local n=$1 a=$2
	case $a in
	*:*) ip -n "$n-net" -6 addr add "$a/128" dev lo nodad ;;
	*) ip -n "$n-net" addr add "$a/32" dev lo ;;
	esac
}

# sk_net_down NAME — kill everything running in both namespaces and delete them.
sk_net_down() {
	local n=$1 ns pids
	for ns in "$n-pod" "$n-net"; do
		if ip netns list | grep -qw "$ns"; then
			pids=$(ip netns pids "$ns" 2>/dev/null)
			# shellcheck disable=SC2086
			[ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
			ip netns del "$ns"
		fi
		rm -rf "/etc/netns/$ns"
	done
}

sk_cleanup_on_exit() {
	local n
	for n in "${SK_NETS[@]}"; do sk_net_down "$n" 2>/dev/null || true; done
	[ -z "${SK_TMP:-}" ] || rm -rf "$SK_TMP"
}

# sk_tmp NAME — a fresh scratch directory as SK_TMP (mode 755: the suites' non-root UIDs read it), removed
# with the namespaces by sk_cleanup_on_exit, which it installs as the EXIT trap.
sk_tmp() {
	SK_TMP=$(mktemp -d "/tmp/$1.XXXXXX") || { echo "sk_tmp: mktemp failed"; echo "0 passed, 1 failed"; exit 1; }
	chmod 755 "$SK_TMP"
	trap sk_cleanup_on_exit EXIT
}

# sk_ca CN NAME... — in $SK_TMP: a throwaway CA (ca.pem, ca.key, subject CN) and, for each NAME, a leaf
# NAME.pem / NAME.key for DNS:NAME.example signed by it, all readable by the suites' servers (other UIDs).
# Ends the suite (as a failure) when openssl fails.
sk_ca() {
	local cn=$1; shift
	(
		cd "$SK_TMP" || exit 1
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
			-days 2 -subj "/CN=$cn"
		for n in "$@"; do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$n.key" -out "$n.csr" \
				-subj "/CN=$n.example"
			printf 'subjectAltName=DNS:%s.example\n' "$n" >"$n.ext"
			openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$n.pem" -days 2 \
				-extfile "$n.ext"
		done
	) >"$SK_TMP/ca.log" 2>&1 || { echo "certificate setup failed"; cat "$SK_TMP/ca.log"; echo "0 passed, 1 failed"; exit 1; }
	chmod 644 "$SK_TMP"/*.pem "$SK_TMP"/*.key
}

# sk_policy FILE [MODE] — write the policy FILE (a name without a slash lands in $SK_TMP) from the header
# every suite's policy starts with (version 1, mode MODE (enforce), the agent and sidecar UIDs, the sidecar's
# four ports) followed by stdin (egress, dns, apis, ...). Written beside FILE and renamed over it, so a
# sidecar watching FILE never reads half a policy; mode 644 (the sidecar UID reads it).
sk_policy() {
	local f=$1 mode=${2:-enforce}
	case $f in */*) ;; *) f=$SK_TMP/$f ;; esac
	{
		printf 'version: 1\nmode: %s\n' "$mode"
		printf 'agent: { uid: %s }\nsidecar: { uid: %s }\n' "$SK_AGENT_UID" "$SK_SIDECAR_UID"
		printf 'ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n'
		cat
	} >"$f.tmp" && chmod 644 "$f.tmp" && mv -f "$f.tmp" "$f"
}

# sk_sidecar_start NAME AUDIT ERR [VAR=VALUE...] -- ARGS... — the sidecar in NAME-pod as SK_SIDECAR_UID
# with no capabilities, environment VAR=VALUE, arguments ARGS, stdout (the audit log) to AUDIT, stderr
# appended to ERR. The binary is SK_SIDECAR (an array: a suite may run an image's loader). Every step execs
# the next (subshell, ip netns exec, env, setpriv), so SK_SIDECAR_PID ($!) is the sidecar itself: signals
# reach it and `wait` returns its status. SK_SIDECAR_NOFILE=N: soft and hard descriptor limit N.
SK_SIDECAR=("$SK_BIN/stockade-sidecar")
sk_sidecar_start() {
	local n=$1 audit=$2 err=$3 env=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
	[ $# -eq 0 ] || shift
	(
		if [ -n "${SK_SIDECAR_NOFILE:-}" ]; then
			ulimit -Sn "$SK_SIDECAR_NOFILE" && ulimit -Hn "$SK_SIDECAR_NOFILE" || exit 1
		fi
		exec ip netns exec "$n-pod" env "${env[@]}" setpriv --reuid="$SK_SIDECAR_UID" --regid="$SK_SIDECAR_UID" \
			--clear-groups --inh-caps=-all --bounding-set=-all -- "${SK_SIDECAR[@]}" "$@"
	) >"$audit" 2>>"$err" &
	# shellcheck disable=SC2034 # the suites read it
	SK_SIDECAR_PID=$!
}

# sk_sidecar_wait NAME [SECONDS] — until the sidecar in NAME-pod listens on all four ports of sk_policy.
sk_sidecar_wait() {
	local n=$1 s=${2:-10} p
	for p in 15001 15000 15080; do sk_wait_port "$n-pod" tcp $p "$s" || return 1; done
	sk_wait_port "$n-pod" udp 15053 "$s"
}

# sk_pod_up NAME POLICY [VAR=VALUE...] — the pod as the kubelet starts it, each step a check: the real
# stockade-init programs NAME-pod and writes $SK_TMP/marker (log $SK_TMP/init.log), `stockade-init --check`
# verifies the live table, then the sidecar (sk_sidecar_start, environment VAR=VALUE) with POLICY and the
# marker, audit log $SK_TMP/audit.log (added to SK_AUDIT_LOGS), stderr $SK_TMP/sidecar.err, listens on its
# four ports. No stand-in: when a step fails the suite ends there, as a failure.
sk_pod_up() {
	local n=$1 policy=$2 out
	shift 2
	if ! sk_pod "$n" "$SK_BIN/stockade-init" --policy "$policy" --marker "$SK_TMP/marker" >"$SK_TMP/init.log" 2>&1; then
		sk_fail "stockade-init programs the pod netns" "$(tail -3 "$SK_TMP/init.log")"
		sk_summary; exit 1
	fi
	sk_pass "stockade-init programs the pod netns"
	if ! out=$(sk_pod "$n" "$SK_BIN/stockade-init" --policy "$policy" --check 2>&1); then
		sk_fail "stockade-init --check verifies the live table" "$(tail -3 <<<"$out")"
		sk_summary; exit 1
	fi
	sk_pass "stockade-init --check verifies the live table ($(tail -1 <<<"$out"))"
	: >"$SK_TMP/sidecar.err"
	sk_sidecar_start "$n" "$SK_TMP/audit.log" "$SK_TMP/sidecar.err" "$@" -- \
		--policy "$policy" --marker "$SK_TMP/marker"
	SK_AUDIT_LOGS+=("$SK_TMP/audit.log")   # validated against the audit schema by sk_summary
	if ! sk_sidecar_wait "$n"; then
		sk_fail "the sidecar listens on the proxy, DNS, admin and gateway ports" "$(tail -5 "$SK_TMP/sidecar.err")"
		sk_summary; exit 1
	fi
	sk_pass "the sidecar listens on the proxy, DNS, admin and gateway ports"
}

# sk_as UID CMD... — run CMD as UID/GID with no supplementary groups and no capabilities.
sk_as() {
	local uid=$1; shift
	setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all -- "$@"
}
# sk_pod NAME CMD... — run CMD as root in the pod ns; sk_pod_as NAME UID CMD... as UID there.
sk_pod() { local n=$1; shift; ip netns exec "$n-pod" "$@"; }
sk_pod_as() { local n=$1 uid=$2; shift 2; ip netns exec "$n-pod" setpriv --reuid="$uid" --regid="$uid" \
	--clear-groups --inh-caps=-all --bounding-set=-all -- "$@"; }
sk_inet() { local n=$1; shift; ip netns exec "$n-net" "$@"; }

# sk_wait_port NS PROTO PORT [SECONDS] — wait until something listens on PORT (tcp|udp) in netns NS.
sk_wait_port() {
	local ns=$1 proto=$2 port=$3 deadline=$((SECONDS + ${4:-5}))
	local flag=-tln; [ "$proto" = udp ] && flag=-uln
	while [ $SECONDS -lt "$deadline" ]; do
		ip netns exec "$ns" ss -H "$flag" "sport = :$port" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# Bookkeeping. sk_check NAME CMD... passes when CMD exits 0.
# sk_check_fails NAME [--status=N] CMD... passes when CMD fails the way the check expects, not when it
# merely exits non-zero: with --status=N only status N counts; a grep only with 1 (no line selected: its 2
# is an error, such as a log that does not exist); anything else with 1..125 (126/127: the command could
# not be run; above 128: killed by a signal). A failure proves nothing by itself: a probe that cannot
# succeed (its server never started, its log never written) fails too, so give each such check its
# positive control in the same case — the same probe succeeding against something allowed, the log
# shown to record what it should — so that the case run alone (--only) cannot pass vacuously.
sk_pass() { SK_PASSED=$((SK_PASSED + 1)); echo "ok   - $1"; }
sk_fail() { SK_FAILED=$((SK_FAILED + 1)); SK_FAILED_NAMES+=("$1"); echo "FAIL - $1${2:+: $2}"; }
sk_check() { local name=$1; shift; if "$@" >/dev/null 2>&1; then sk_pass "$name"; else sk_fail "$name"; fi; }
sk_check_fails() {
	local name=$1 want='' rc
	shift
	case ${1:-} in --status=*) want=${1#--status=}; shift ;; esac
	"$@" >/dev/null 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then sk_fail "$name" "unexpectedly succeeded"; return; fi
	if [ -z "$want" ]; then
		case $1 in grep | */grep) want=1 ;; esac
	fi
	if [ -n "$want" ]; then
		if [ "$rc" -eq "$want" ]; then sk_pass "$name"; else sk_fail "$name" "exit $rc, not the expected failure $want"; fi
	elif [ "$rc" -ge 126 ]; then
		sk_fail "$name" "exit $rc: could not run (or killed), not a refusal"
	else
		sk_pass "$name"
	fi
}
# sk_check_eq NAME EXPECTED ACTUAL
sk_check_eq() { if [ "$2" = "$3" ]; then sk_pass "$1"; else sk_fail "$1" "expected '$2', got '$3'"; fi; }
# Audit logs the suite collected (SK_AUDIT_LOGS+=(FILE)): sk_summary validates every line of each against
# docs/audit.schema.json (Debian's python3-jsonschema) before the count: one check per log, and one failed
# check per invalid line (the first 20 are named).
SK_AUDIT_LOGS=()
sk_audit_schema_check() {
	local f out rc line n=0
	for f in "$@"; do
		[ -f "$f" ] || { sk_fail "audit schema: $(basename "$f") exists"; continue; }
		out=$(/usr/bin/python3 "$SK_ROOT/e2e/audit_validate.py" "$SK_ROOT/docs/audit.schema.json" "$f" 2>&1)
		rc=$?
		if [ $rc -eq 0 ]; then
			sk_pass "audit schema: every line of $(basename "$f") valid ($(tail -1 <<<"$out"))"
			continue
		fi
		while IFS= read -r line; do
			case $line in
			*" lines, "*" invalid") ;;
			*)
				n=$((n + 1))
				if [ $n -le 20 ]; then sk_fail "audit schema: ${line#"$SK_TMP"/}"; else SK_FAILED=$((SK_FAILED + 1)); fi ;;
			esac
		done <<<"$out"
		[ $n -gt 0 ] || sk_fail "audit schema: $(basename "$f")" "$out"
	done
}
sk_summary() {
	if [ "${#SK_AUDIT_LOGS[@]}" -gt 0 ]; then
		local logs=("${SK_AUDIT_LOGS[@]}")
		SK_AUDIT_LOGS=()   # once: a suite may call sk_summary on an early exit and again at the end
		sk_audit_schema_check "${logs[@]}"
	fi
	[ "$SK_FAILED" -eq 0 ] || printf 'failed: %s\n' "${SK_FAILED_NAMES[@]}"
	echo "$SK_PASSED passed, $SK_FAILED failed"
	[ "$SK_FAILED" -eq 0 ]
}

# The runner (the shape of e2e/node/test). A suite defines one function t_<case> per case, lists the
# cases in order in SK_CASES, and ends with `sk_main "$@"`, which takes
#   --only CASE[,CASE]  run just these cases (repeatable), still in SK_CASES order
#   --list              print the cases, one a line
#   -h, --help          print the suite's header comment
# then runs the suite's `setup` function when it has one (scratch dir, namespaces, servers, the pod: what
# every case needs; it may record checks), each selected case under a "== CASE" line, and sk_summary,
# whose status is the script's. A case relies on setup, never on an earlier case having run.
SK_CASES=()
sk_main() {
	# (underscored locals: the cases run inside this function and see its locals through dynamic scope)
	local _sk_only=() _sk_c _sk_list=0 _sk_want
	while [ $# -gt 0 ]; do
		case $1 in
		--only) [ $# -ge 2 ] || { echo "$0: --only needs CASE[,CASE]" >&2; exit 2; }
			IFS=, read -ra _sk_want <<<"$2"; _sk_only+=("${_sk_want[@]}"); shift 2 ;;
		--only=*) IFS=, read -ra _sk_want <<<"${1#--only=}"; _sk_only+=("${_sk_want[@]}"); shift ;;
		--list) _sk_list=1; shift ;;
		-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
		*) echo "$0: unknown argument $1 (--only CASE[,CASE], --list, --help)" >&2; exit 2 ;;
		esac
	done
	for _sk_c in "${SK_CASES[@]}"; do
		declare -F "t_$_sk_c" >/dev/null || { echo "$0: case $_sk_c has no function t_$_sk_c" >&2; exit 2; }
	done
	if [ $_sk_list = 1 ]; then printf '%s\n' "${SK_CASES[@]}"; exit 0; fi
	for _sk_c in "${_sk_only[@]}"; do
		printf '%s\n' "${SK_CASES[@]}" | grep -qxF -- "$_sk_c" ||
			{ echo "$0: no case $_sk_c (cases: ${SK_CASES[*]})" >&2; exit 2; }
	done
	if declare -F setup >/dev/null; then setup; fi
	for _sk_c in "${SK_CASES[@]}"; do
		if [ ${#_sk_only[@]} -gt 0 ] && ! printf '%s\n' "${_sk_only[@]}" | grep -qxF -- "$_sk_c"; then continue; fi
		echo "== $_sk_c"
		"t_$_sk_c"
	done
	sk_summary
}

sk_require_root() {
	if [ "$(id -u)" -ne 0 ]; then echo "this suite needs root (network namespaces)" >&2; exit 1; fi
}
