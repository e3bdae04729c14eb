#!/usr/bin/env bash
# e2e/init.test.sh — the real stockade-init programming a pod netns (namespaces "skinit-pod"/"skinit-net"
# from lib.sh), then sockets opened as the agent, the sidecar, an exempt UID, a third UID and root prove
# what the kernel does: agent TCP lands on the proxy port with the right SO_ORIGINAL_DST (IPv4, IPv6),
# agent DNS on the DNS port, direct sets pass, everything else is blocked; re-runs leave no gap;
# --check catches a deleted rule; --dry-run and the guard change nothing; IGMP/MLD reports of a multicast join
# by the agent never leave the pod while IPv6 ND still works, and the agent cannot reach the admin port on
# loopback; no socket but the sidecar's and the exempt UIDs' sends from a source
# address that is not the pod's (the agent forging the upstream resolver's DNS answer over IPv6, found in
# review); --exec-as applies the rules, then runs a program as the sidecar UID with
# no capability and no_new_privs, and never runs it when something failed. Needs root.
# UIDs, ports and test addresses below are fixed tokens without spaces; quoting each would bury the checks.
# shellcheck disable=SC2086
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
N=skinit
POD=$N-pod
INIT=$SK_BIN/stockade-init
A=$SK_AGENT_UID S=$SK_SIDECAR_UID X=1500 O=2000   # agent, sidecar, exempt, other
PY=/usr/bin/python3
SRV4=198.18.1.10 SRV6=2001:db8:19::10          # test servers (TCP 80/443, UDP echo 7001)
UDP4=198.18.1.20 UDP6=2001:db8:19::20          # udp rule targets (UDP echo 7000)
DIR4=198.18.1.30                               # direct tcp rule target (TCP 7100)

as() { local uid=$1; shift; sk_pod_as "$N" "$uid" "$PY" "$H" "$@" 2>/dev/null; }

policy() {  # policy FILE LOOPBACK-YAML
	sk_policy "$1" <<EOF
exemptUids: [$X]
egress:
  - host: example.com
    ports: [443]
  - cidr: $UDP4/32
    ports: [7000]
    protocol: udp
  - cidr: $UDP6/128
    ports: [7000]
    protocol: udp
  - cidr: $DIR4/32
    ports: [7100]
    protocol: tcp
    direct: true
loopback: $2
EOF
}

# sniff_join LABEL — captures IGMP/MLD on the peer's veth while the agent joins 239.83.69.67 and
# ff0e:5345:4352:4554:2d45:5846:494c:2121 on the pod's; the capture is left in $SK_TMP/sniff.LABEL. Then
# root sends a report for CTL_GROUP through a packet socket on the pod's veth, which no nftables hook sees:
# the capture's positive control (it must show up whatever the rules).
sniff_join() {
	local out=$SK_TMP/sniff.$1
	sk_inet "$N" "$PY" "$H" sniff skn0 3 "$out" &
	local sp=$!
	for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.05; done
	as $A join skp0 1.5 >/dev/null
	sk_pod "$N" "$PY" "$H" rawreport skp0 "$SK_POD_IP4" "$CTL_GROUP" >/dev/null 2>&1
	wait $sp
}
GROUP4=239.83.69.67 GROUP6=ff0e:5345:4352:4554:2d45:5846:494c:2121 CTL_GROUP=239.83.69.99

adm() { sk_pod_as "$N" "$1" curl -sS -m 3 "http://$2:15000/metrics" 2>&1; }

# spoof_try UID UPSTREAM — the sidecar UID holds a UDP socket connected to [UPSTREAM]:53, as its DNS
# forwarder does; UID sends that socket's address and port a datagram from [UPSTREAM]:53. Prints what the
# sender saw ("sent" or an errno name) and what the socket received ("got forged" or "nothing").
spoof_try() {
	local out=$SK_TMP/spoof.recv dst r
	: >"$out"
	as $S spoofrecv "$2" 53 1.5 >"$out" &
	local rp=$!
	for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.05; done
	dst=$(head -1 "$out")
	r=$(as "$1" forge "$2" 53 $dst)
	wait $rp
	echo "$r $(sed -n 2p "$out")"
}
spoof_count() { sk_pod "$N" nft list counter inet stockade spoofed_source_drop | grep -oE 'packets [0-9]+' | awk '{print $2}'; }

# need_table — the cases after `load` run against the init's table: load it when it is not there (a run
# of --only without the load case).
need_table() { sk_pod "$N" "$INIT" --policy "$P" --check >/dev/null 2>&1 || sk_pod "$N" "$INIT" --policy "$P" >/dev/null 2>&1; }

setup() {
	sk_require_root
	sk_tmp skinit
	for b in "$INIT" "$SK_BIN/stockade-policy"; do
		[ -x "$b" ] || { echo "missing $b (run make first)"; echo "0 passed, 1 failed"; exit 1; }
	done

	# ---- helpers: one python script, many roles ----
	H=$SK_TMP/h.py
	cat >"$H" <<'EOF'
import socket, struct, sys, threading, time

def origdst(c, fam):
    if fam == socket.AF_INET:
        raw = c.getsockopt(socket.SOL_IP, 80, 16)                 # SO_ORIGINAL_DST
        return socket.inet_ntop(socket.AF_INET, raw[4:8]), struct.unpack('!H', raw[2:4])[0]
    raw = c.getsockopt(socket.IPPROTO_IPV6, 80, 28)               # IP6T_SO_ORIGINAL_DST
    return socket.inet_ntop(socket.AF_INET6, raw[8:24]), struct.unpack('!H', raw[2:4])[0]

def tcp_server(addrs, port, reply, log=None):
    def run(addr):
        fam = socket.AF_INET6 if ':' in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port)); s.listen(64)
        while True:
            c, _ = s.accept()
            try:
                if log:
                    ip, p = origdst(c, fam)
                    with open(log, 'a') as f:
                        f.write('%s %d\n' % (ip, p))
                c.sendall(reply.encode() + b'\n')
            except OSError:
                pass
            c.close()
    for a in addrs:
        threading.Thread(target=run, args=(a,), daemon=True).start()

def udp_server(addrs, port, reply):
    def run(addr):
        fam = socket.AF_INET6 if ':' in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((addr, port))
        while True:
            d, peer = s.recvfrom(2048)
            s.sendto((reply + ' ' + d.decode(errors='replace')).encode(), peer)
    for a in addrs:
        threading.Thread(target=run, args=(a,), daemon=True).start()

def fam_of(h):
    return socket.AF_INET6 if ':' in h else socket.AF_INET

def tcp(host, port):
    s = socket.socket(fam_of(host), socket.SOCK_STREAM); s.settimeout(2)
    s.connect((host, int(port)))
    print(s.recv(64).decode().strip())

def udp(host, port):
    s = socket.socket(fam_of(host), socket.SOCK_DGRAM); s.settimeout(1.5)
    s.connect((host, int(port))); s.send(b'hi')
    print(s.recv(2048).decode().split(' ')[0])

def udpfrom(sport, host, port):
    s = socket.socket(fam_of(host), socket.SOCK_DGRAM); s.settimeout(1.5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('::' if ':' in host else '0.0.0.0', int(sport)))
    s.connect((host, int(port))); s.send(b'hi')
    print(s.recv(2048).decode().split(' ')[0])

def ping(host):
    v6 = ':' in host
    s = socket.socket(fam_of(host), socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
    s.settimeout(1.5)
    s.sendto(struct.pack('!BBHHH', 128 if v6 else 8, 0, 0, 0, 1) + b'stockade', (host, 0))
    s.recv(2048)
    print('pong')

def flood(host, port, count, gap):
    # one new socket (so one new conntrack flow) per datagram: each must pass the rules afresh
    got = 0
    for i in range(int(count)):
        s = socket.socket(fam_of(host), socket.SOCK_DGRAM); s.settimeout(0.2)
        try:
            s.connect((host, int(port))); s.send(b'%d' % i); s.recv(64); got += 1
        except OSError:
            pass
        s.close(); time.sleep(float(gap))
    print(got)

def join(ifname, hold):
    # multicast joins as the calling UID: the kernel then reports the groups on ifname
    idx = socket.if_nametoindex(ifname)
    s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s4.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,  # struct ip_mreqn
                  struct.pack('=4s4si', socket.inet_aton('239.83.69.67'), b'\0' * 4, idx))
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                  socket.inet_pton(socket.AF_INET6, 'ff0e:5345:4352:4554:2d45:5846:494c:2121') + struct.pack('=I', idx))
    time.sleep(float(hold))
    print('joined')

def spoofrecv(peer, port, secs):
    # the sidecar's upstream DNS socket: connected to [peer]:port; prints its own address and port, then
    # "got DATA" or "nothing" after secs seconds
    s = socket.socket(fam_of(peer), socket.SOCK_DGRAM)
    s.connect((peer, int(port)))
    print('%s %d' % s.getsockname()[:2], flush=True)
    s.settimeout(float(secs))
    try:
        print('got %s' % s.recv(512).decode(errors='replace'), flush=True)
    except socket.timeout:
        print('nothing', flush=True)

def forge(src, sport, dst, dport):
    # a datagram from a source address that is not the pod's: IP(V6)_FREEBIND needs no capability;
    # prints "sent" or the errno's name of the step that failed
    import errno
    fam = fam_of(src)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, 78, 1)              # IPV6_FREEBIND
        else:
            s.setsockopt(socket.IPPROTO_IP, 15, 1)                # IP_FREEBIND
        s.bind((src, int(sport)))
    except OSError as e:
        print('bind-%s' % errno.errorcode.get(e.errno, e.errno)); return
    try:
        s.sendto(b'forged', (dst, int(dport)))
        print('sent')
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))

def rawreport(ifname, src, group):
    # an IGMPv2 membership report for group, written as a whole frame to a packet socket on ifname, so
    # no nftables hook sees it: the capture's positive control
    def csum(b):
        n = sum(struct.unpack('!%dH' % (len(b) // 2), b))
        n = (n >> 16) + (n & 0xffff)
        return ~(n + (n >> 16)) & 0xffff
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    g = socket.inet_aton(group)
    igmp = struct.pack('!BBH4s', 0x16, 0, 0, g)
    igmp = igmp[:2] + struct.pack('!H', csum(igmp)) + igmp[4:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(igmp), 0, 0, 1, 2, 0, socket.inet_aton(src), g)
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    s.send(b'\x01\x00\x5e' + bytes([g[1] & 0x7f, g[2], g[3]]) + s.getsockname()[4] + b'\x08\x00' + ip + igmp)
    print('sent')

def sniff(ifname, secs, out):
    # AF_PACKET capture of IGMP and MLD arriving on ifname (the peer's own reports are skipped) for secs
    # seconds: one line per packet, "igmp|mld TYPE GROUPS"
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((ifname, 0)); s.settimeout(0.2)
    end = time.time() + float(secs)
    with open(out, 'w') as f:
        f.write('ready\n'); f.flush()
        while time.time() < end:
            try:
                p, sll = s.recvfrom(65535)
            except socket.timeout:
                continue
            if sll[2] == socket.PACKET_OUTGOING:
                continue
            et = struct.unpack('!H', p[12:14])[0]; ip = p[14:]
            if et == 0x0800 and ip[9] == 2:
                l4 = ip[(ip[0] & 15) * 4:]
                if l4[0] == 0x22:  # IGMPv3 report: records at 8, group at +4
                    n = struct.unpack('!H', l4[6:8])[0]; off = 8; groups = []
                    for _ in range(n):
                        groups.append(socket.inet_ntop(socket.AF_INET, l4[off + 4:off + 8]))
                        off += 8 + l4[off + 1] * 4 + struct.unpack('!H', l4[off + 2:off + 4])[0] * 4
                else:
                    groups = [socket.inet_ntop(socket.AF_INET, l4[4:8])]
                f.write('igmp %d %s\n' % (l4[0], ' '.join(groups))); f.flush()
            elif et == 0x86dd:
                nh, off = ip[6], 40
                while nh in (0, 43, 60):  # hop-by-hop (router alert), routing, destination options
                    nh, off = ip[off], off + (ip[off + 1] + 1) * 8
                l4 = ip[off:]
                if nh != 58 or l4[0] not in (130, 131, 132, 143):
                    continue
                if l4[0] == 143:  # MLDv2 report: records at 8, group at +4
                    n = struct.unpack('!H', l4[6:8])[0]; o = 8; groups = []
                    for _ in range(n):
                        groups.append(socket.inet_ntop(socket.AF_INET6, l4[o + 4:o + 20]))
                        o += 20 + l4[o + 1] * 4 + struct.unpack('!H', l4[o + 2:o + 4])[0] * 16
                else:
                    groups = [socket.inet_ntop(socket.AF_INET6, l4[8:24])]
                f.write('mld %d %s\n' % (l4[0], ' '.join(groups))); f.flush()

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == 'serve':
    # serve tcp|udp PORT REPLY [LOG] ADDR...
    kind, port, reply, log = args[0], int(args[1]), args[2], args[3]
    if kind == 'tcp':
        tcp_server(args[4:], port, reply, None if log == '-' else log)
    else:
        udp_server(args[4:], port, reply)
    while True:
        time.sleep(3600)
try:
    {'tcp': tcp, 'udp': udp, 'udpfrom': udpfrom, 'ping': ping, 'flood': flood, 'join': join,
     'sniff': sniff, 'spoofrecv': spoofrecv, 'forge': forge, 'rawreport': rawreport}[cmd](*args)
except OSError as e:
    print('error: %s' % e, file=sys.stderr); sys.exit(1)
EOF

	# ---- namespaces and servers ----
	sk_net_up "$N" || { echo "0 passed, 1 failed"; exit 1; }
	for ip in $SRV4 $SRV6 $UDP4 $UDP6 $DIR4; do sk_net_add_ip "$N" "$ip"; done
	sk_pod "$N" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
	# containerd 2.x's pod default (and a Kubernetes "safe" sysctl): any UID may bind port 53
	sk_pod "$N" sysctl -qw net.ipv4.ip_unprivileged_port_start=0
	sk_inet "$N" "$PY" "$H" serve tcp 80 inet - $SRV4 $SRV6 &
	sk_inet "$N" "$PY" "$H" serve tcp 443 inet - $SRV4 $SRV6 &
	sk_inet "$N" "$PY" "$H" serve tcp 7100 inet - $DIR4 &
	sk_inet "$N" "$PY" "$H" serve udp 7000 echo - $UDP4 $UDP6 &
	sk_inet "$N" "$PY" "$H" serve udp 7001 echo - $SRV4 $SRV6 $UDP4 $UDP6 &
	PROXY_LOG=$SK_TMP/proxy.log
	touch "$PROXY_LOG"
	sk_pod "$N" "$PY" "$H" serve tcp 15001 proxy "$PROXY_LOG" 127.0.0.1 ::1 &
	sk_pod "$N" "$PY" "$H" serve tcp 15053 dns - 127.0.0.1 ::1 &
	sk_pod "$N" "$PY" "$H" serve udp 15053 dns - 127.0.0.1 ::1 &
	sk_pod "$N" "$PY" "$H" serve tcp 8080 local - 127.0.0.1 ::1 &
	sk_pod "$N" "$PY" "$H" serve udp 9999 local - 127.0.0.1 &
	sk_pod "$N" "$PY" "$H" serve udp 9998 local - ::1 $SK_POD_IP6 $SK_POD_IP4 &
	sk_wait_port "$N-net" tcp 80 && sk_wait_port "$N-net" udp 7001 && sk_wait_port "$N-net" tcp 7100
	sk_wait_port "$POD" tcp 15001 && sk_wait_port "$POD" udp 15053 && sk_wait_port "$POD" tcp 8080

	# a stand-in admin on all addresses, run as the sidecar UID like the real one
	ADM=$SK_TMP/admin
	mkdir -p "$ADM" && echo "stockade_up 1" >"$ADM/metrics" && chmod -R a+rX "$ADM"
	(cd "$ADM" && sk_pod_as "$N" $S "$PY" -m http.server 15000 --bind :: >/dev/null 2>&1) &
	sk_wait_port "$POD" tcp 15000
	P=$SK_TMP/policy.yaml
	policy "$P" allow
}

# ---- before: sanity of the harness itself (no rules yet, so everything flows) ----
t_before() {
	sk_check_eq "harness: agent reaches the test server before init" inet "$(as $A tcp $SRV4 80)"

	sniff_join before
	sk_check "harness: before init the agent's join sends an IGMP report naming $GROUP4" grep -q "^igmp .*$GROUP4" "$SK_TMP/sniff.before"
	sk_check "harness: before init the agent's join sends an MLD report naming $GROUP6" grep -q "^mld .*$GROUP6" "$SK_TMP/sniff.before"
	sk_check_eq "harness: before init the agent forges an IPv6 answer from [$SRV6]:53 to the sidecar's socket" \
		"sent got forged" "$(spoof_try $A $SRV6)"
	sk_check_eq "harness: IPv4 refuses the forged source without any rule (ENETUNREACH)" \
		"ENETUNREACH nothing" "$(spoof_try $A $SRV4)"
}

# ---- dry run and rules ----
t_dry_run() {
	out=$(sk_pod "$N" "$INIT" --policy "$P" --dry-run)
	sk_check "dry-run prints the table" grep -q '^table inet stockade {' <<<"$out"
	sk_check_eq "dry-run changes nothing" "" "$(sk_pod "$N" nft list tables)"
	sk_check_eq "stockade-policy rules prints the same text as --dry-run" "$out" "$("$SK_BIN/stockade-policy" rules "$P")"
	sk_check "dry-run text loads with nft -f in a scratch netns" bash -c "
	ip netns add $N-scratch && ip netns exec $N-scratch nft -f - <<<\"\$1\"; rc=\$?; ip netns del $N-scratch; exit \$rc" _ "$out"
}

# ---- guard: the root netns is refused and left untouched ----
t_guard() {
	before=$(nft list ruleset 2>/dev/null | sha256sum)
	msg=$("$INIT" --policy "$P" 2>&1); rc=$?
	sk_check_eq "guard: refuses the host netns (exit 1)" 1 "$rc"
	sk_check "guard: says why" grep -q "refusing: this network namespace looks like a node's" <<<"$msg"
	sk_check_eq "guard: host ruleset unchanged" "$before" "$(nft list ruleset 2>/dev/null | sha256sum)"
}

# ---- errors ----
t_errors() {
	msg=$(sk_pod_as "$N" $O "$INIT" --policy "$P" 2>&1); rc=$?
	sk_check_eq "no CAP_NET_ADMIN: exit 4" 4 "$rc"
	sk_check "no CAP_NET_ADMIN: says so" grep -q "needs CAP_NET_ADMIN in the pod's network namespace" <<<"$msg"
	printf 'version: 1\nagent: { uid: 1337 }\nbogus: 1\n' >"$SK_TMP/bad.yaml"
	msg=$(sk_pod "$N" "$INIT" --policy "$SK_TMP/bad.yaml" 2>&1); rc=$?
	sk_check_eq "invalid policy: exit 3" 3 "$rc"
	sk_check "invalid policy: file:line:col diagnostics" grep -qE "bad.yaml:[0-9]+:[0-9]+:" <<<"$msg"
	sk_check_eq "invalid policy: nothing loaded" "" "$(sk_pod "$N" nft list tables)"
	# the agent's seccomp profile (inject, the chart and the injector pass it) must be the policy's section's
	want=$("$SK_BIN/stockade-policy" seccomp --policy "$P" --print-name)
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --seccomp-profile stockade-0123456789abcdef.json 2>&1); rc=$?
	sk_check_eq "another section's seccomp profile: exit 3, nothing loaded" "3 " "$rc $(sk_pod "$N" nft list tables)"
	sk_check "... naming the policy's profile and the annotation that gives it" \
		grep -qF "but this policy's seccomp section is '$want'" <<<"$msg"
	sk_check "the policy's own profile passes (--dry-run)" sk_pod "$N" "$INIT" --policy "$P" --seccomp-profile "$want" --dry-run
	sk_check "a profile name not of the installer's shape is the operator's: not checked (--dry-run)" \
		sk_pod "$N" "$INIT" --policy "$P" --seccomp-profile mine.json --dry-run
}

# ---- load ----
t_load() {
	M=$SK_TMP/marker
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --marker "$M" 2>&1); rc=$?
	sk_check_eq "init loads and verifies (exit 0)" 0 "$rc"
	[ "$rc" -eq 0 ] || echo "$msg"
	sk_check "marker: hash line first" grep -qE '^hash=[0-9a-f]{16}$' <(head -1 "$M")
	sk_check "marker: counts" grep -qE '^rules=[0-9]+$' "$M"
	sk_check "--check passes on the fresh table" sk_pod "$N" "$INIT" --policy "$P" --check
	sk_pod "$N" ip neigh flush all   # IPv6 must re-resolve its gateway through the new rules (ND)
}

# ---- agent ----
t_agent() {
	need_table
	: >"$PROXY_LOG"
	sk_check_eq "agent tcp v4 :80 lands on the proxy" proxy "$(as $A tcp $SRV4 80)"
	sk_check_eq "agent tcp v4: SO_ORIGINAL_DST is the intended destination" "$SRV4 80" "$(tail -1 "$PROXY_LOG")"
	sk_check_eq "agent tcp v4 :443 lands on the proxy" proxy "$(as $A tcp $SRV4 443)"
	sk_check_eq "agent tcp v4 :443 original dst" "$SRV4 443" "$(tail -1 "$PROXY_LOG")"
	sk_check_eq "agent tcp v4 to an unused port lands on the proxy" proxy "$(as $A tcp 198.18.1.99 5555)"
	sk_check_eq "agent tcp v4 unused port original dst" "198.18.1.99 5555" "$(tail -1 "$PROXY_LOG")"
	sk_check_eq "agent tcp v6 lands on the proxy" proxy "$(as $A tcp $SRV6 443)"
	sk_check_eq "agent tcp v6: IP6T_SO_ORIGINAL_DST is the intended destination" "$SRV6 443" "$(tail -1 "$PROXY_LOG")"
	sk_check_eq "agent udp v4 :53 lands on the DNS port" dns "$(as $A udp $SRV4 53)"
	sk_check_eq "agent udp v6 :53 lands on the DNS port" dns "$(as $A udp $SRV6 53)"
	sk_check_eq "agent tcp v4 :53 lands on the DNS port" dns "$(as $A tcp $SRV4 53)"
	sk_check_eq "agent tcp v6 :53 lands on the DNS port" dns "$(as $A tcp $SRV6 53)"
	# each blocked probe's control: the same probe as the sidecar UID is answered (the server is up)
	sk_check_eq "control: sidecar udp v4 to $SRV4:7001 is answered" echo "$(as $S udp $SRV4 7001)"
	sk_check_fails "agent udp v4 to another port is blocked" as $A udp $SRV4 7001
	sk_check_eq "control: sidecar udp v6 to [$SRV6]:7001 is answered" echo "$(as $S udp $SRV6 7001)"
	sk_check_fails "agent udp v6 to another port is blocked" as $A udp $SRV6 7001
	sk_check_eq "agent udp v4 to a udp rule passes directly" echo "$(as $A udp $UDP4 7000)"
	sk_check_eq "agent udp v6 to a udp rule passes directly" echo "$(as $A udp $UDP6 7000)"
	sk_check_eq "control: sidecar udp to the udp rule's address, port 7001, is answered" echo "$(as $S udp $UDP4 7001)"
	sk_check_fails "agent udp to a udp rule's address, other port, is blocked" as $A udp $UDP4 7001
	sk_check_eq "agent tcp to a direct rule bypasses the proxy" inet "$(as $A tcp $DIR4 7100)"
	sk_check_eq "control: sidecar icmp echo v4 is answered" pong "$(as $S ping $SRV4)"
	sk_check_fails "agent icmp echo v4 is blocked" as $A ping $SRV4
	sk_check_eq "control: sidecar icmpv6 echo is answered" pong "$(as $S ping $SRV6)"
	sk_check_fails "agent icmpv6 echo is blocked" as $A ping $SRV6
	sk_check_eq "agent loopback tcp allowed (loopback: allow)" local "$(as $A tcp 127.0.0.1 8080)"
	sk_check_eq "agent loopback udp allowed (loopback: allow)" local "$(as $A udp 127.0.0.1 9999)"
}

# ---- admin port: kubelet's, not the agent's ----
t_admin_port() {
	need_table
	for h in 127.0.0.1 "[::1]" $SK_POD_IP4 "[$SK_POD_IP6]"; do
		out=$(adm $A "$h"); rc=$?
		# exit 7 at once: the SYN was answered with a reset (a timeout would be 28)
		sk_check_eq "agent curl http://$h:15000/metrics is refused (loopback: allow)" 7 "$rc"
		sk_check "agent curl $h:15000: could not connect" grep -qE "Couldn't connect|refused|reset" <<<"$out"
		sk_check_eq "sidecar curl http://$h:15000/metrics works" "stockade_up 1" "$(adm $S "$h")"
	done
	sk_check_eq "third uid on loopback still reaches the admin port" "stockade_up 1" "$(adm $O 127.0.0.1)"
	sk_check_eq "kubelet-style probe from outside the pod reaches the admin port" "stockade_up 1" \
		"$(sk_inet "$N" curl -sS -m 3 "http://$SK_POD_IP4:15000/metrics")"
	sk_check_eq "agent loopback to other ports still allowed" local "$(as $A tcp 127.0.0.1 8080)"
}

# ---- multicast reports never leave; ND still works ----
t_multicast() {
	need_table
	sniff_join after
	sk_check "control: a report sent past the rules (packet socket) is captured" grep -q "^igmp 22 $CTL_GROUP$" "$SK_TMP/sniff.after"
	sk_check_eq "agent join after init: no IGMP/MLD packet reaches the peer" "" \
		"$(grep -v -e '^ready' -e " $CTL_GROUP$" "$SK_TMP/sniff.after")"
	sk_check_fails "agent join after init: nothing names $GROUP4 or $GROUP6" grep -qE "$GROUP4|$GROUP6" "$SK_TMP/sniff.after"
	cnt=$(sk_pod "$N" nft list counter inet stockade mcast_report_drop | grep -oE 'packets [0-9]+' | awk '{print $2}')
	sk_check "named counter mcast_report_drop counted the reports" test "${cnt:-0}" -gt 0
	# A new address makes the kernel join its solicited-node group (ff02::1:ff00:77) and report it: that
	# report is dropped too, yet the peer's neighbour solicitation to that group still reaches the pod over the
	# veth and is answered, so ND does not need MLD here.
	sk_inet "$N" "$PY" "$H" sniff skn0 2.5 "$SK_TMP/sniff.nd" &
	snp=$!
	sleep 0.3
	sk_pod "$N" ip -6 addr add 2001:db8:18::77/64 dev skp0 nodad
	sk_inet "$N" ip -6 neigh flush dev skn0
	sk_inet "$N" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
	sk_check_eq "peer pings a fresh pod address (ND through the rules, its MLD dropped)" pong \
		"$(sk_inet "$N" "$PY" "$H" ping 2001:db8:18::77 2>&1)"
	wait $snp
	sk_check "control: that capture ran (its ready line)" grep -qx ready "$SK_TMP/sniff.nd"
	sk_check_eq "no MLD report for the fresh address's solicited-node group left the pod" "" \
		"$(grep -v '^ready' "$SK_TMP/sniff.nd")"
	sk_check "peer's neighbour entry for the pod address resolved" grep -qE "lladdr .*(REACHABLE|STALE|DELAY)" \
		<<<"$(sk_inet "$N" ip -6 neigh show 2001:db8:18::77)"
	sk_pod "$N" ip -6 addr del 2001:db8:18::77/64 dev skp0
	sk_pod "$N" ip -6 neigh flush dev skp0
	sk_check_eq "pod re-resolves its IPv6 gateway (sidecar ping6)" pong "$(as $S ping $SRV6)"
	sk_check "pod's neighbour entry for the gateway resolved" grep -qE "lladdr .*(REACHABLE|STALE|DELAY)" \
		<<<"$(sk_pod "$N" ip -6 neigh show $SK_NET_IP6)"
}

# ---- sidecar, exempt, others ----
t_other_uids() {
	need_table
	sk_check_eq "sidecar tcp v4 reaches the server directly" inet "$(as $S tcp $SRV4 80)"
	sk_check_eq "sidecar tcp v6 reaches the server directly (ND works)" inet "$(as $S tcp $SRV6 80)"
	sk_check_eq "sidecar udp v4 reaches the server" echo "$(as $S udp $SRV4 7001)"
	sk_check_eq "sidecar udp v6 reaches the server" echo "$(as $S udp $SRV6 7001)"
	sk_check_eq "sidecar icmp echo works (control for the agent's)" pong "$(as $S ping $SRV4)"
	sk_check_eq "sidecar icmpv6 echo works" pong "$(as $S ping $SRV6)"
	sk_check_eq "exempt uid reaches the server" inet "$(as $X tcp $SRV4 80)"
	sk_check_eq "exempt uid v6 reaches the server" inet "$(as $X tcp $SRV6 80)"
	sk_check_fails "third uid tcp v4 blocked" as $O tcp $SRV4 80
	sk_check_fails "third uid tcp v6 blocked" as $O tcp $SRV6 80
	sk_check_fails "third uid udp blocked" as $O udp $SRV4 7001
	sk_check_fails "third uid ping blocked" as $O ping $SRV4
	sk_check_fails "root tcp v4 blocked" as 0 tcp $SRV4 80
	sk_check_fails "root tcp v6 blocked" as 0 tcp $SRV6 80
	sk_check_fails "root udp blocked" as 0 udp $SRV4 7001
	# conntrack knows no sockets: the agent reusing the 5-tuple of the sidecar's live flow must not ride it
	sk_check_eq "sidecar udp from a fixed source port (opens a conntrack flow)" echo "$(as $S udpfrom 41234 $SRV4 7001)"
	sk_check_fails "agent reusing that 5-tuple is still blocked" as $A udpfrom 41234 $SRV4 7001
	sk_check_eq "sidecar udp v6 from a fixed source port" echo "$(as $S udpfrom 41235 $SRV6 7001)"
	sk_check_fails "agent reusing that v6 5-tuple is still blocked" as $A udpfrom 41235 $SRV6 7001
	sk_check_eq "third uid loopback allowed" local "$(as $O tcp 127.0.0.1 8080)"
	cnt=$(sk_pod "$N" nft list counter inet stockade other_uid_reject_tcp | grep -oE 'packets [0-9]+' | awk '{print $2}')
	sk_check "named counter other_uid_reject_tcp counted the rejects" test "${cnt:-0}" -gt 0
	cnt=$(sk_pod "$N" nft list counter inet stockade agent_reject_other | grep -oE 'packets [0-9]+' | awk '{print $2}')
	sk_check "named counter agent_reject_other counted the rejects" test "${cnt:-0}" -gt 0
}

# ---- a forged source address never leaves a socket (found in review) ----
# The sidecar forwards each DNS query from a socket connected to the upstream resolver, whose port the
# agent reads in /proc/net/udp. Without the spoofed-source rule the agent binds [upstream]:53 with
# IPV6_FREEBIND and its datagram, sent via lo, is received as the resolver's answer.
t_spoofed_source() {
	need_table
	c0=$(spoof_count)
	sk_check_eq "agent forging [$SRV6]:53 to the sidecar's upstream socket: send refused (EPERM), nothing received" \
		"EPERM nothing" "$(spoof_try $A $SRV6)"
	c1=$(spoof_count)
	sk_check "named counter spoofed_source_drop counted it" test "${c1:-0}" -gt "${c0:-0}"
	sk_check_eq "... and over IPv4 still (the kernel's own source check)" "ENETUNREACH nothing" "$(spoof_try $A $SRV4)"
	sk_check_eq "a third uid forging it: refused too" "EPERM nothing" "$(spoof_try $O $SRV6)"
	sk_check_eq "root forging it: refused too" "EPERM nothing" "$(spoof_try 0 $SRV6)"
	sk_check_eq "an exempt uid (a transparent proxy's) may send from a foreign source" "sent got forged" \
		"$(spoof_try $X $SRV6)"
	# the pod's own addresses stay usable as sources
	sk_check_eq "agent udp v6 from its own address to the pod's address (loopback) still allowed" local \
		"$(as $A udp $SK_POD_IP6 9998)"
	sk_check_eq "agent udp to ::1 still allowed" local "$(as $A udp ::1 9998)"
	sk_check_eq "agent udp v4 to the pod's address still allowed" local "$(as $A udp $SK_POD_IP4 9998)"
	sk_check_eq "sidecar udp v6 to the internet still works" echo "$(as $S udp $SRV6 7001)"
	sk_check_eq "agent DNS v6 still redirected" dns "$(as $A udp $SRV6 53)"

	# the check can fail: without the rule the same forgery is received
	h=$(sk_pod "$N" nft -a list chain inet stockade filter_output | sed -n 's/.*comment "spoofed-source" # handle \([0-9]*\)/\1/p')
	sk_pod "$N" nft delete rule inet stockade filter_output handle "$h"
	sk_check_eq "with the rule deleted the agent's forgery is received" "sent got forged" "$(spoof_try $A $SRV6)"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check detects the deleted spoofed-source rule (exit 1)" 1 "$rc"
	sk_check "... naming the chain" grep -q "chain filter_output" <<<"$msg"
	# a rule of that name without the source test (or matching more) is not the rule either
	sk_pod "$N" "$INIT" --policy "$P" >/dev/null 2>&1
	h=$(sk_pod "$N" nft -a list chain inet stockade filter_output | sed -n 's/.*comment "spoofed-source" # handle \([0-9]*\)/\1/p')
	sk_pod "$N" nft replace rule inet stockade filter_output handle "$h" meta skuid != $S meta skuid != @exempt_uids \
		fib daddr type != local counter name spoofed_source_drop drop comment '"spoofed-source"'
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check detects the rule testing daddr instead of saddr (exit 1)" 1 "$rc"
	sk_check "... naming the rule and the fib expression" grep -q "rule filter_output/spoofed-source: expression 5 is 'fib daddr" <<<"$msg"
	sk_pod "$N" nft replace rule inet stockade filter_output handle "$h" meta skuid != $S meta skuid @exempt_uids \
		fib saddr type != local counter name spoofed_source_drop drop comment '"spoofed-source"'
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check detects the exempt_uids lookup not inverted (exit 1)" 1 "$rc"
	sk_check "... naming the lookup" grep -q "rule filter_output/spoofed-source: expression 4 is 'lookup" <<<"$msg"
	sk_pod "$N" "$INIT" --policy "$P" >/dev/null 2>&1
	sk_check "re-run restores the rule" sk_pod "$N" "$INIT" --policy "$P" --check
	sk_check_eq "... and the forgery is refused again" "EPERM nothing" "$(spoof_try $A $SRV6)"
}

# ---- re-runs: no gap, nothing lost, nothing leaks ----
t_reruns() {
	need_table
	sfile=$SK_TMP/sidecar.count afile=$SK_TMP/agent.count
	as $S flood $SRV4 7001 300 0.005 >"$sfile" &
	sp=$!
	as $A flood $SRV4 7001 300 0.005 >"$afile" &
	ap=$!
	reruns_ok=0
	for _ in 1 2 3 4 5 6 7 8; do
		sk_pod "$N" "$INIT" --policy "$P" 2>/dev/null && reruns_ok=$((reruns_ok + 1))
		sleep 0.1
	done
	wait $sp $ap
	sk_check_eq "8 re-runs while senders run all succeed" 8 "$reruns_ok"
	sk_check_eq "sidecar sender lost nothing across re-runs (300 new flows)" 300 "$(cat "$sfile")"
	sk_check_eq "agent sender got nothing through across re-runs (no gap)" 0 "$(cat "$afile")"
}

# ---- two inits at once ----
t_racing_inits() {
	need_table
	race_ok=0
	for _ in 1 2 3 4 5; do
		sk_pod "$N" "$INIT" --policy "$P" 2>/dev/null & p1=$!
		sk_pod "$N" "$INIT" --policy "$P" 2>/dev/null & p2=$!
		wait $p1 && wait $p2 && race_ok=$((race_ok + 1))
	done
	sk_check_eq "racing inits: both succeed (5 rounds)" 5 "$race_ok"
	sk_check_eq "racing inits: exactly one table" "table inet stockade" "$(sk_pod "$N" nft list tables)"
	sk_check "racing inits: the table is correct" sk_pod "$N" "$INIT" --policy "$P" --check
}

# ---- --check catches tampering ----
t_tamper() {
	need_table
	h=$(sk_pod "$N" nft -a list chain inet stockade filter_output | sed -n 's/.*comment "sidecar" # handle \([0-9]*\)/\1/p')
	sk_pod "$N" nft delete rule inet stockade filter_output handle "$h"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check detects a deleted rule (exit 1)" 1 "$rc"
	sk_check "--check names the chain" grep -q "chain filter_output" <<<"$msg"
	sk_pod "$N" nft add element inet stockade exempt_uids "{ 4242 }"
	sk_pod "$N" "$INIT" --policy "$P" 2>/dev/null
	sk_check "re-run repairs the table" sk_pod "$N" "$INIT" --policy "$P" --check
	sk_pod "$N" nft add element inet stockade exempt_uids "{ 4242 }"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check detects an added set element" 1 "$rc"
	sk_check "--check names the set" grep -q "set exempt_uids" <<<"$msg"
	sk_pod "$N" nft delete table inet stockade
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check on a missing table exits 1" 1 "$rc"
	sk_check "--check says the table is missing" grep -q "not found" <<<"$msg"
}

# ---- loopback: deny, then ports ----
t_loopback() {
	policy "$SK_TMP/deny.yaml" deny
	sk_check "init with loopback: deny" sk_pod "$N" "$INIT" --policy "$SK_TMP/deny.yaml"
	: >"$PROXY_LOG"
	sk_check_eq "loopback deny: agent tcp to 127.0.0.1:8080 goes to the proxy" proxy "$(as $A tcp 127.0.0.1 8080)"
	sk_check_eq "loopback deny: proxy sees the loopback destination" "127.0.0.1 8080" "$(tail -1 "$PROXY_LOG")"
	sk_check_eq "control: loopback deny: sidecar udp to 127.0.0.1:9999 is answered" local "$(as $S udp 127.0.0.1 9999)"
	sk_check_fails "loopback deny: agent udp to loopback blocked" as $A udp 127.0.0.1 9999
	sk_check_eq "loopback deny: sidecar loopback allowed" local "$(as $S tcp 127.0.0.1 8080)"
	sk_check_eq "loopback deny: agent DNS still redirected" dns "$(as $A udp $SRV4 53)"
	sk_check_eq "loopback deny: agent tcp still proxied" proxy "$(as $A tcp $SRV4 80)"
	sk_check_eq "loopback deny: agent tcp to the admin port goes to the proxy, not the admin" proxy \
		"$(as $A tcp 127.0.0.1 15000)"
	policy "$SK_TMP/ports.yaml" "[8080]"
	sk_check "init with loopback: [8080]" sk_pod "$N" "$INIT" --policy "$SK_TMP/ports.yaml"
	sk_check_eq "loopback ports: agent tcp to a listed port allowed" local "$(as $A tcp 127.0.0.1 8080)"
	sk_check_eq "loopback ports: agent tcp v6 to a listed port allowed" local "$(as $A tcp ::1 8080)"
	sk_check_eq "control: loopback ports: sidecar udp to 127.0.0.1:9999 is answered" local "$(as $S udp 127.0.0.1 9999)"
	sk_check_fails "loopback ports: agent udp to an unlisted port blocked" as $A udp 127.0.0.1 9999
	sk_check "loopback ports: --check passes" sk_pod "$N" "$INIT" --policy "$SK_TMP/ports.yaml" --check
	sk_check_eq "loopback ports: sidecar still reaches the admin port" "stockade_up 1" "$(adm $S 127.0.0.1)"
	sk_check_eq "loopback ports: agent tcp to the admin port goes to the proxy" proxy "$(as $A tcp 127.0.0.1 15000)"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --check 2>&1); rc=$?
	sk_check_eq "--check against another policy fails" 1 "$rc"
}

# ---- --exec-as: the native sidecar's entry when the chart applies the rules in the sidecar container ----
# STATUS prints what the node's operator would read in /proc/PID/status of the exec'd program.
STATUS_PROG=(/bin/sh -c 'grep -E "^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status | tr -s "\t" " "')
field() { sed -n "s/^$1: *//p" <<<"$2" | sed 's/ *$//'; }
t_exec_as() {
	need_table   # a restarted sidecar runs its entry again on a netns that already holds the table
	M=$SK_TMP/exec-as.marker
	rm -f "$M"
	out=$(sk_pod "$N" "$INIT" --policy "$P" --marker "$M" --exec-as $S:$S -- "${STATUS_PROG[@]}" 2>"$SK_TMP/exec-as.err"); rc=$?
	sk_check_eq "exec-as over an existing table: the program ran and exited 0" 0 "$rc"
	sk_check "exec-as: the init's success line came first" grep -q "loaded and verified table inet stockade" "$SK_TMP/exec-as.err"
	sk_check "exec-as: marker written before the program ran" grep -qE '^hash=[0-9a-f]{16}$' "$M"
	sk_check "exec-as: the table matches the policy (--check)" sk_pod "$N" "$INIT" --policy "$P" --check
	sk_check_eq "exec-as: program's uids (real, effective, saved, fs)" "$S $S $S $S" "$(field Uid "$out")"
	sk_check_eq "exec-as: program's gids" "$S $S $S $S" "$(field Gid "$out")"
	sk_check_eq "exec-as: no supplementary groups" "" "$(field Groups "$out")"
	for k in CapEff CapPrm CapInh CapAmb; do
		sk_check_eq "exec-as: $k empty" 0000000000000000 "$(field $k "$out")"
	done
	sk_check_eq "exec-as: root had CAP_SETPCAP, so the bounding set is empty too" 0000000000000000 "$(field CapBnd "$out")"
	sk_check_eq "exec-as: NoNewPrivs" 1 "$(field NoNewPrivs "$out")"

	# The chart's container: root with only NET_ADMIN, SETUID and SETGID (no SETPCAP), on a fresh netns
	# state (no table): rules applied, then the same drop; the bounding set stays the container's.
	sk_pod "$N" nft delete table inet stockade
	out=$(sk_pod "$N" setpriv --bounding-set=-all,+net_admin,+setuid,+setgid --inh-caps=-all -- \
		"$INIT" --policy "$P" --marker "$M" --exec-as $S:$S -- "${STATUS_PROG[@]}" 2>"$SK_TMP/exec-as.err"); rc=$?
	sk_check_eq "exec-as with NET_ADMIN+SETUID+SETGID only, fresh netns: program ran" 0 "$rc"
	[ "$rc" -eq 0 ] || cat "$SK_TMP/exec-as.err"
	sk_check "exec-as with the chart's capabilities: the table matches the policy" sk_pod "$N" "$INIT" --policy "$P" --check
	sk_check_eq "exec-as with the chart's capabilities: uid" "$S $S $S $S" "$(field Uid "$out")"
	sk_check_eq "exec-as with the chart's capabilities: CapEff/CapPrm/CapInh/CapAmb empty" \
		"0000000000000000 0000000000000000 0000000000000000 0000000000000000" \
		"$(field CapEff "$out") $(field CapPrm "$out") $(field CapInh "$out") $(field CapAmb "$out")"
	sk_check_eq "exec-as without SETPCAP: the bounding set stays the container's (NET_ADMIN, SETUID, SETGID)" \
		00000000000010c0 "$(field CapBnd "$out")"
	sk_check_eq "exec-as with the chart's capabilities: NoNewPrivs" 1 "$(field NoNewPrivs "$out")"
}

# ---- --exec-as never runs the program when the init fails ----
t_exec_as_fails() {
	need_table
	ran=$SK_TMP/exec-as.ran
	prog=(/bin/sh -c "touch $ran")
	rm -f "$ran"
	printf 'version: 1\nagent: { uid: 1337 }\nbogus: 1\n' >"$SK_TMP/bad.yaml"
	msg=$(sk_pod "$N" "$INIT" --policy "$SK_TMP/bad.yaml" --exec-as $S:$S -- "${prog[@]}" 2>&1); rc=$?
	sk_check_eq "exec-as, invalid policy: exit 3 and the program did not run" "3 no" "$rc $([ -e "$ran" ] && echo ran || echo no)"
	sk_check "exec-as, invalid policy: the diagnostics say why" grep -qE "bad.yaml:[0-9]+:[0-9]+:" <<<"$msg"
	msg=$(sk_pod "$N" setpriv --bounding-set=-all,+setuid,+setgid --inh-caps=-all -- \
		"$INIT" --policy "$P" --exec-as $S:$S -- "${prog[@]}" 2>&1); rc=$?
	sk_check_eq "exec-as, no NET_ADMIN (apply refused): exit 4 and the program did not run" "4 no" "$rc $([ -e "$ran" ] && echo ran || echo no)"
	sk_check "exec-as, no NET_ADMIN: says so" grep -q "needs CAP_NET_ADMIN" <<<"$msg"
	msg=$(sk_pod "$N" setpriv --bounding-set=-all,+net_admin,+setgid --inh-caps=-all -- \
		"$INIT" --policy "$P" --exec-as $S:$S -- "${prog[@]}" 2>&1); rc=$?
	sk_check_eq "exec-as, no SETUID (drop refused): exit 5 and the program did not run" "5 no" "$rc $([ -e "$ran" ] && echo ran || echo no)"
	sk_check "exec-as, no SETUID: names the step and errno" grep -qF "hand-off: setresuid $S: Operation not permitted (not run)" <<<"$msg"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --exec-as 0:0 -- "${prog[@]}" 2>&1); rc=$?
	sk_check_eq "exec-as 0:0: usage error (exit 2), nothing run" "2 no" "$rc $([ -e "$ran" ] && echo ran || echo no)"
	sk_check "exec-as 0:0: refused by name" grep -q "refusing uid 0" <<<"$msg"
	msg=$(sk_pod "$N" "$INIT" --policy "$P" --exec-as $S:$S "${prog[@]}" 2>&1); rc=$?
	sk_check_eq "exec-as without --: usage error (exit 2), nothing run" "2 no" "$rc $([ -e "$ran" ] && echo ran || echo no)"
	sk_check "exec-as without --: says what is missing" grep -q "needs -- PROGRAM" <<<"$msg"
	sk_check "exec-as failures left the table in place" sk_pod "$N" "$INIT" --policy "$P" --check
}

SK_CASES=(before dry_run guard errors load agent admin_port multicast other_uids spoofed_source reruns racing_inits tamper loopback exec_as exec_as_fails)
sk_main "$@"
