#!/usr/bin/env bash
# e2e/dns.test.sh — the DNS filter inside the real sidecar, in a "pod" netns, forwarding to dnsmasq as
# the authoritative upstream in the "internet" netns (pod resolv.conf → 198.18.0.1). Queries go straight
# to the filter's port (UDP and TCP, 127.0.0.1 and ::1); the nft redirect of port 53 belongs to the init
# suite. Checks: allowed names resolve over UDP and TCP and through getent (glibc), denied names get
# NXDOMAIN fast, TXT/ANY/long-label exfiltration is REFUSED and never reaches the upstream, rebinding
# answers are refused, big answers truncate to TCP, audit lines name the denial.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
sk_require_root
N=skdns
SK_TMP=$(mktemp -d)
trap sk_cleanup_on_exit EXIT
sk_net_up "$N" || { echo "netns setup failed"; exit 1; }

cat >"$SK_TMP/policy.yaml" <<'YAML'
version: 1
mode: enforce
agent: { uid: 1000 }
sidecar: { uid: 1337 }
ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }
egress:
  - host: allowed.example
    ports: [443]
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
YAML

# dnsmasq as an authoritative-ish server for the test names, logging every query it gets.
big=()
for i in $(seq 1 60); do big+=("--host-record=big.example,198.18.2.$i"); done
sk_inet "$N" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces --listen-address=198.18.0.1 \
	--port=53 --log-queries --log-facility="$SK_TMP/dnsmasq.log" \
	--host-record=allowed.example,198.18.1.10,2001:db8:19::10 \
	--host-record=www.cdn.example,198.18.1.11 \
	--host-record=denied.example,198.18.1.12 \
	--host-record=rebind.example,10.0.0.5 \
	--cname=chain.example,edge.other.example --host-record=edge.other.example,198.18.1.13 \
	--txt-record=allowed.example,"hello" \
	"${big[@]}" >/dev/null 2>&1 &
sk_wait_port "$N-net" udp 53 || { echo "dnsmasq did not start"; exit 1; }

sk_pod "$N" "$SK_BIN/stockade-sidecar" --policy "$SK_TMP/policy.yaml" --marker "$SK_TMP/none" \
	--admin-addr 127.0.0.1:15000 >"$SK_TMP/audit.log" 2>"$SK_TMP/sidecar.err" &
sk_wait_port "$N-pod" udp 15053 || { echo "sidecar did not start"; cat "$SK_TMP/sidecar.err"; exit 1; }

d4() { sk_pod_as "$N" "$SK_AGENT_UID" dig +time=2 +tries=1 @127.0.0.1 -p 15053 "$@"; }
d6() { sk_pod_as "$N" "$SK_AGENT_UID" dig +time=2 +tries=1 @::1 -p 15053 "$@"; }
status() { "$@" 2>/dev/null | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -1; }

sk_check_eq "allowed A over UDP" "198.18.1.10" "$(d4 +short allowed.example A)"
sk_check_eq "allowed AAAA over UDP (::1)" "2001:db8:19::10" "$(d6 +short allowed.example AAAA)"
sk_check_eq "allowed A over TCP" "198.18.1.10" "$(d4 +tcp +short allowed.example A)"
sk_check_eq "wildcard subdomain" "198.18.1.11" "$(d4 +short www.cdn.example A)"
sk_check_eq "CNAME chain out of the allowed set still answers" "198.18.1.13" "$(d4 +short chain.example A | tail -1)"
sk_check_eq "denied name: NXDOMAIN" "NXDOMAIN" "$(status d4 denied.example A)"
sk_check_eq "denied name over TCP: NXDOMAIN" "NXDOMAIN" "$(status d4 +tcp denied.example A)"
sk_check_eq "TXT refused" "REFUSED" "$(status d4 allowed.example TXT)"
sk_check_eq "ANY refused" "REFUSED" "$(status d4 allowed.example ANY)"
long="$(printf 'a%.0s' $(seq 1 60)).$(printf 'b%.0s' $(seq 1 60)).www.cdn.example"
sk_check_eq "long-label exfiltration refused" "REFUSED" "$(status d4 "$long" A)"
sk_check_eq "rebinding to 10/8 refused" "REFUSED" "$(status d4 rebind.example A)"
sk_check_eq "CHAOS class refused" "REFUSED" "$(status d4 version.bind TXT CH)"
# glibc talks to port 53 only: point it at the filter through a resolv.conf of our own in a mount ns.
res="$SK_TMP/resolv.conf"; echo "nameserver 127.0.0.1" >"$res"
getent_via() { sk_pod "$N" unshare -m sh -c "mount --bind '$res' /etc/resolv.conf && \
	setpriv --reuid=$SK_AGENT_UID --regid=$SK_AGENT_UID --clear-groups getent ${2:-ahostsv4} $1"; }
# (port 53 → 15053 is the init's nat rule; here a socat stands in for it, as root in the pod)
sk_pod "$N" socat UDP4-LISTEN:53,bind=127.0.0.1,fork,reuseaddr UDP4:127.0.0.1:15053 >/dev/null 2>&1 &
sk_wait_port "$N-pod" udp 53 2 || true
sk_check_eq "getent hosts allowed.example (glibc)" "198.18.1.10" "$(getent_via allowed.example | awk '{print $1}' | head -1)"
t0=$(date +%s%N); getent_via denied.example hosts >/dev/null 2>&1; rc=$?; t1=$(date +%s%N)
sk_check_eq "getent hosts denied.example fails" "2" "$rc"
ms=$(( (t1 - t0) / 1000000 ))
if [ "$ms" -lt 1500 ]; then sk_pass "denied name fails fast for glibc (${ms} ms, no retry storm)"; else sk_fail "denied name fails fast" "${ms} ms"; fi

# 60 A records do not fit 512 bytes: TC over UDP, full answer over TCP (the filter retries upstream on TCP).
tc=$(d4 +noedns +ignore big.example A 2>/dev/null | grep -c 'flags:.* tc')
sk_check_eq "big answer sets TC over UDP without EDNS" "1" "$tc"
n=$(d4 +tcp +short big.example A | grep -c '^198\.18\.2\.')
sk_check_eq "big answer over TCP: capped at 32 bound addresses" "32" "$n"

# Exfiltration attempts never reached the upstream.
sleep 0.2
sk_check_fails "denied name never forwarded" grep -q 'query\[A\] denied.example' "$SK_TMP/dnsmasq.log"
sk_check_fails "TXT never forwarded" grep -q 'query\[TXT\]' "$SK_TMP/dnsmasq.log"
sk_check_fails "long label never forwarded" grep -q 'aaaaaaaaaa' "$SK_TMP/dnsmasq.log"
sk_check "allowed name was forwarded" grep -q 'query\[A\] allowed.example' "$SK_TMP/dnsmasq.log"

# Audit lines.
sk_check "audit: denied name" grep -q '"event":"dns".*"name":"denied.example".*"decision":"deny","reason":"denied"' "$SK_TMP/audit.log"
sk_check "audit: refused type" grep -q '"reason":"refused_type"' "$SK_TMP/audit.log"
sk_check "audit: rebinding" grep -q '"name":"rebind.example".*"reason":"rebinding"' "$SK_TMP/audit.log"

# Malformed input does not kill the filter.
sk_pod "$N" sh -c 'head -c 300 /dev/urandom >/dev/udp/127.0.0.1/15053; printf "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01\x61\xc0\x0c\x00\x01\x00\x01" >/dev/udp/127.0.0.1/15053' 2>/dev/null
sk_check_eq "still answering after garbage" "198.18.1.10" "$(d4 +short allowed.example A)"
sk_check "sidecar still running" sk_pod "$N" pgrep -f "stockade-sidecar --policy $SK_TMP/policy.yaml"

sk_summary
