#!/usr/bin/env bash
# e2e/node/lib.sh — shared by e2e/node/up, down, agent-image, test and bench/pod-start (source it).
# Owns the single-node cluster's layout: where state, logs, PID files and cached binaries live, the
# loopback ports, the pod bridge and its addresses, and the helpers that start and stop the daemons.
#
#   state    $SKN_STATE  (/var/lib/stockade-node)   pki, etcd data, configs, logs/, containerd root
#   run      $SKN_RUN    (/run/stockade-node)       pid/, containerd socket and state
#   cache    $SKN_CACHE  (/var/cache/stockade-node) k8s-<ver>/ binaries, agent rootfs, pause image
#   network  bridge $SKN_BRIDGE 198.19.0.1/24 + 2001:db8:2a::1/64 in the host namespace, no NAT, no
#            route out: pods get .10-.199 (::10-::ff), e2e/bench test servers .200-.239 (::100-::13f),
#            make demo's test servers .240-.254 (::140-::1ff): a demo left running never shares an
#            address with a test run.
#   owner    $SKN_STATE/owner: who brought the node up (SKN_OWNER of up: demo, node-e2e, or e2e/node/up).
# Every listener is on 127.0.0.1; nothing here adds a firewall rule or a default route.
# shellcheck disable=SC2034 # the layout variables are used by the scripts that source this

SKN_ROOT=${SKN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SKN_DIR=$SKN_ROOT/e2e/node
SKN_STATE=${SKN_STATE:-/var/lib/stockade-node}
SKN_RUN=${SKN_RUN:-/run/stockade-node}
SKN_CACHE=${SKN_CACHE:-/var/cache/stockade-node}
SKN_TOOLS=${SK_TOOLS:-/opt/stockade-tools}
# Unset: the version the running node was brought up with, else the pinned default.
K8S_VERSION=${K8S_VERSION:-$(cat "$SKN_STATE/k8s-version" 2>/dev/null || echo 1.34.4)}
K8S_VERSION=${K8S_VERSION#v}
SKN_K8S_BIN=$SKN_CACHE/k8s-$K8S_VERSION
SKN_PKI=$SKN_STATE/pki
SKN_LOGS=$SKN_STATE/logs
SKN_PIDS=$SKN_RUN/pid
SKN_KUBECONFIG=$SKN_STATE/admin.kubeconfig
SKN_CNI_BIN=${SKN_CNI_BIN:-/usr/lib/cni}
# containerd's bin_dir: a directory of symlinks to $SKN_CNI_BIN's plugins (made by up), where stockade-cni's
# installer may add its plugin without writing into the package's directory.
SKN_CNI_LINKS=$SKN_STATE/cni/bin

SKN_BRIDGE=skbr0
SKN_BR_IP4=198.19.0.1 SKN_BR_IP6=2001:db8:2a::1
SKN_POD_CIDR4=198.19.0.0/24 SKN_POD_CIDR6=2001:db8:2a::/64
SKN_POD_START4=198.19.0.10 SKN_POD_END4=198.19.0.199
SKN_POD_START6=2001:db8:2a::10 SKN_POD_END6=2001:db8:2a::ff
SKN_SERVICE_CIDR=198.19.128.0/24
SKN_PAUSE_IMAGE=localhost/stockade-pause:1
SKN_AGENT_IMAGE=localhost/stockade-e2e-agent:latest
SKN_CORPUS_IMAGE=localhost/stockade-e2e-corpus:latest

SKN_ETCD_PORT=2379 SKN_ETCD_PEER_PORT=2380 SKN_APISERVER_PORT=6443

skn_log() { printf '[node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
skn_die() { printf 'node: error: %s\n' "$*" >&2; exit 1; }

skn_require_root() { [ "$(id -u)" -eq 0 ] || skn_die "must run as root"; }

# skn_node_name — the kubelet registers under the hostname, and the apiserver reaches it by that name
# (--kubelet-preferred-address-types=Hostname), so it must resolve to loopback.
skn_node_name() { hostname | tr '[:upper:]' '[:lower:]'; }

# skn_render TEMPLATE OUT VAR... — copy TEMPLATE to OUT replacing each @VAR@ by the value of $VAR.
skn_render() {
	local in=$1 out=$2 v val script=()
	shift 2
	for v in "$@"; do
		val=${!v}
		val=${val//\\/\\\\}; val=${val//|/\\|}; val=${val//&/\\&}
		script+=(-e "s|@$v@|$val|g")
	done
	sed "${script[@]}" "$in" >"$out.tmp" && mv "$out.tmp" "$out"
	if grep -q '@[A-Z0-9_]*@' "$out"; then skn_die "$out: unfilled placeholder $(grep -o '@[A-Z0-9_]*@' "$out" | head -1)"; fi
}

# skn_pid NAME — the PID recorded for daemon NAME if that process still runs, else nothing (status 1).
skn_pid() {
	local f=$SKN_PIDS/$1.pid pid
	[ -r "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# A recycled PID must not be mistaken for ours: the recorded command line must match.
	[ -r "$SKN_PIDS/$1.cmd" ] && [ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" = "$(cat "$SKN_PIDS/$1.cmd")" ] || return 1
	echo "$pid"
}

# skn_start NAME CMD... — start CMD in the background with its log in $SKN_LOGS/NAME.log and its PID
# in $SKN_PIDS/NAME.pid; a no-op when NAME already runs (up is idempotent).
skn_start() {
	local name=$1 pid
	shift
	if pid=$(skn_pid "$name"); then
		skn_log "$name already running (pid $pid)"
		return 0
	fi
	mkdir -p "$SKN_LOGS" "$SKN_PIDS"
	# setsid: the daemon outlives `up` and gets no terminal signals meant for it.
	# 9>&-: the daemon must not inherit skn_lock's descriptor (it would hold the lock for its lifetime).
	setsid "$@" >>"$SKN_LOGS/$name.log" 2>&1 </dev/null 9>&- &
	pid=$!
	echo "$pid" >"$SKN_PIDS/$name.pid"
	# /proc/PID/cmdline is read once the exec happened; until then it is setsid's own command line.
	local _
	for _ in $(seq 50); do
		[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" = "$(printf '%s ' "$@")" ] && break
		sleep 0.02
	done
	printf '%s ' "$@" >"$SKN_PIDS/$name.cmd"
	skn_log "started $name (pid $pid, log $SKN_LOGS/$name.log)"
}

# skn_stop NAME [SECONDS] — SIGTERM the recorded PID, SIGKILL after SECONDS (default 20), forget it.
skn_stop() {
	local name=$1 wait=${2:-20} pid deadline
	if pid=$(skn_pid "$name"); then
		kill -TERM "$pid" 2>/dev/null || true
		deadline=$((SECONDS + wait))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then
			skn_log "$name did not stop in ${wait}s, killing it"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
		fi
		skn_log "stopped $name (pid $pid)"
	fi
	rm -f "$SKN_PIDS/$name.pid" "$SKN_PIDS/$name.cmd"
}

# skn_wait_for DESC SECONDS CMD... — poll CMD (quietly) until it succeeds; fail with DESC after SECONDS.
skn_wait_for() {
	local desc=$1 secs=$2 deadline
	shift 2
	deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $deadline ]; then
			skn_log "timed out after ${secs}s waiting for $desc"
			return 1
		fi
		sleep 0.5
	done
}

# skn_node_traces — what of a node is on this machine, one line ("; "-separated: running daemons, state
# directory, bridge, test-server namespaces); empty when there is nothing.
skn_node_traces() {
	local d running=() t=() ns
	for d in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet; do
		skn_pid "$d" >/dev/null && running+=("$d")
	done
	[ "${#running[@]}" -eq 0 ] || t+=("running: ${running[*]}")
	[ ! -d "$SKN_STATE" ] || t+=("state in $SKN_STATE")
	! ip link show "$SKN_BRIDGE" >/dev/null 2>&1 || t+=("bridge $SKN_BRIDGE")
	ns=$(ip netns list 2>/dev/null | awk '$1 ~ /^skn-/ { print $1 }' | paste -sd' ')
	[ -z "$ns" ] || t+=("netns $ns")
	local out=''
	for d in "${t[@]}"; do out+=${out:+; }$d; done
	[ -z "$out" ] || echo "$out"
}

# skn_node_owner — who brought the node up (up's SKN_OWNER) and when; "unknown" without a record.
skn_node_owner() {
	[ -s "$SKN_STATE/owner" ] || { echo unknown; return 0; }
	echo "$(cat "$SKN_STATE/owner") at $(date -r "$SKN_STATE/owner" '+%F %T')"
}

# skn_lock WHO — hold the machine's node lock for the rest of the calling script (fd 9): make demo and
# scripts/node-e2e take it, so one never tears down or reuses a node the other is working on. Waits,
# saying who holds it. Callers start children with 9>&- so only their own shell holds it.
skn_lock() {
	local lock=/run/lock/stockade-node.lock
	mkdir -p /run/lock
	exec 9>>"$lock"
	if ! flock -n 9; then
		echo "$1: waiting for the node lock $lock, taken by $(cat "$lock.holder" 2>/dev/null || echo '?');" \
			"open in pids:$(fuser "$lock" 2>/dev/null)" >&2
		flock 9
	fi
	echo "$1 (pid $$, since $(date '+%F %T'))" >"$lock.holder"
}

skn_kubectl() { "$SKN_K8S_BIN/kubectl" --kubeconfig "$SKN_KUBECONFIG" "$@"; }
skn_ctr() { ctr --address "$SKN_RUN/containerd/containerd.sock" -n k8s.io "$@"; }

# Test servers: a network namespace with a veth on the pod bridge holding addresses at the top of the
# bridge subnet (outside the pods' IPAM range), so pods reach them directly, without NAT, and nothing
# leaves the machine. Used by e2e/node/test and bench/pod-start; scripts/demo sets SKN_SRV_IPS4/6 to
# SKN_DEMO_IPS4/6 before skn_srv_up, so its servers never clash with a test run's.
SKN_SRV_IPS4=(198.19.0.200 198.19.0.201 198.19.0.202 198.19.0.203)
SKN_SRV_IPS6=(2001:db8:2a::100 2001:db8:2a::101)
SKN_DEMO_IPS4=(198.19.0.240 198.19.0.241)
SKN_DEMO_IPS6=(2001:db8:2a::140 2001:db8:2a::141)

# skn_srv_holder ADDR — the network namespace (or "host") that holds ADDR, if any.
skn_srv_holder() {
	local ns
	if ip -o addr show 2>/dev/null | awk '{ print $4 }' | grep -qx "$1/[0-9]*"; then echo host; return 0; fi
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		ip -n "$ns" -o addr show 2>/dev/null | awk '{ print $4 }' | grep -qx "$1/[0-9]*" && { echo "$ns"; return 0; }
	done
	return 1
}

# skn_srv_stale NETNS — true when NETNS is a test-server namespace of a run that is gone: the names end in
# the PID of the run (skn-srv-<pid> of e2e/node/test, skn-bench-srv-<pid> of bench/pod-start), which no
# longer exists.
skn_srv_stale() {
	local pid=${1##*-}
	case $1 in skn-srv-* | skn-bench-srv-*) ;; *) return 1 ;; esac
	case $pid in '' | *[!0-9]*) return 1 ;; esac
	# A live PID counts as the run's own (a recycled one only makes us stop and name it).
	[ ! -d "/proc/$pid" ]
}

# skn_srv_clear NETNS — make this run's addresses free on the bridge: a namespace a killed run left
# holding one is removed (logged); one of a live run, of make demo or of anyone else stops us with what
# holds the address and how to free it.
skn_srv_clear() {
	local me=$1 a holder
	for a in "${SKN_SRV_IPS4[@]}" "${SKN_SRV_IPS6[@]}"; do
		holder=$(skn_srv_holder "$a") || continue
		[ "$holder" != "$me" ] || continue
		if skn_srv_stale "$holder"; then
			skn_log "removing netns $holder (test servers of a run that is gone; it held $a)"
			skn_srv_down "$holder"
			continue
		fi
		case $holder in
		skn-demo) skn_die "test address $a is held by netns skn-demo (make demo's servers of an older demo): run e2e/node/down or make demo again" ;;
		skn-srv-* | skn-bench-srv-*) skn_die "test address $a is held by netns $holder of a running node test (pid ${holder##*-}: $(tr '\0' ' ' <"/proc/${holder##*-}/cmdline" 2>/dev/null)): one node test at a time" ;;
		*) skn_die "test address $a is held by ${holder} (not ours): free it, or run e2e/node/down" ;;
		esac
	done
}

# skn_srv_up NETNS — create NETNS on the bridge with the SKN_SRV_IPS4/6 addresses (status 1 when there is
# no bridge: not our node). Dies, saying what is in the way, when another live namespace holds one.
skn_srv_up() {
	local ns=$1 a host_if
	ip link show "$SKN_BRIDGE" >/dev/null 2>&1 || return 1
	skn_srv_clear "$ns"
	ip netns list 2>/dev/null | grep -qw "$ns" && return 0
	# Interface names are at most 15 bytes: a hash of the namespace name keeps them unique.
	host_if=skh$(printf '%s' "$ns" | sha256sum | cut -c1-8)
	ip netns add "$ns" || return 1
	ip link add "$host_if" type veth peer name eth0 netns "$ns" || { ip netns del "$ns"; return 1; }
	ip link set "$host_if" master "$SKN_BRIDGE" up
	ip -n "$ns" link set lo up
	for a in "${SKN_SRV_IPS4[@]}"; do ip -n "$ns" addr add "$a/24" dev eth0; done
	for a in "${SKN_SRV_IPS6[@]}"; do ip -n "$ns" -6 addr add "$a/64" dev eth0 nodad; done
	ip -n "$ns" link set eth0 up
	# The servers answer pods on the bridge subnet only: no default route, no forwarding.
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
}

# skn_srv_down NETNS — kill what runs in NETNS and delete it (its veth goes with it).
skn_srv_down() {
	local ns=$1 pids
	ip netns list 2>/dev/null | grep -qw "$ns" || return 0
	pids=$(ip netns pids "$ns" 2>/dev/null)
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null
	ip netns del "$ns"
}

# skn_srv_dns NETNS LOG [dnsmasq options...] — an authoritative-only DNS server on the first test address,
# port 53: every name under .test answers the second test address (more with --address=/name/ip);
# anything else is refused, never forwarded. Prints its PID.
skn_srv_dns() {
	local ns=$1 log=$2
	shift 2
	ip netns exec "$ns" dnsmasq --keep-in-foreground --no-resolv --no-hosts --no-poll --pid-file= \
		--bind-interfaces --listen-address="${SKN_SRV_IPS4[0]}" --listen-address="${SKN_SRV_IPS6[0]}" \
		--port=53 --user=root --log-queries --log-facility=- \
		--address="/test/${SKN_SRV_IPS4[1]}" --address="/test/${SKN_SRV_IPS6[1]}" "$@" >"$log" 2>&1 9>&- &
	echo $!
	# Killed by skn_srv_down on purpose: no "Killed" job report from the shell.
	disown $!
}
