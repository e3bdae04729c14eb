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

# Bookkeeping. sk_check NAME CMD... passes when CMD exits 0; sk_check_fails NAME CMD... when it does not.
sk_pass() { SK_PASSED=$((SK_PASSED + 1)); echo "ok   - $1"; }
sk_fail() { SK_FAILED=$((SK_FAILED + 1)); SK_FAILED_NAMES+=("$1"); echo "FAIL - $1${2:+: $2}"; }
sk_check() { local name=$1; shift; if "$@" >/dev/null 2>&1; then sk_pass "$name"; else sk_fail "$name"; fi; }
sk_check_fails() { local name=$1; shift; if "$@" >/dev/null 2>&1; then sk_fail "$name" "unexpectedly succeeded"; else sk_pass "$name"; fi; }
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

sk_require_root() {
	if [ "$(id -u)" -ne 0 ]; then echo "this suite needs root (network namespaces)" >&2; exit 1; fi
}
