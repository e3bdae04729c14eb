#!/usr/bin/env bash
# e2e/seccomp.test.sh — the agent's seccomp profile against real code (issue 8, docs/architecture.md#the-agents-seccomp-profile):
#   1. the generator's CLI (errors, --arch, --policy, --diff against a RuntimeDefault-like profile);
#   2. the blocked suite: each probe of e2e/seccomp-probes/ run under `stockade-policy exec` fails with
#      EPERM (clone3: ENOSYS; i386 int 0x80 and x32 entry: the thread is killed by the filter's
#      bad-architecture action, SIGSYS), and the same probe without the profile does not (so the filter,
#      not something else, stopped it);
#   2b. refusals visible: `seccomp --log-denials` makes the profile with SECCOMP_FILTER_FLAG_LOG, a refused
#      call leaves the kernel's record, and `stockade-policy seccomp-log` prints it as one NDJSON line (from
#      /dev/kmsg, following; from dmesg's text and auditd's form in a file), naming the pod and container of
#      a process in a kubepods cgroup; skipped, saying why, where the kernel does not log errno actions;
#   3. the workload corpus: python, node, git, gcc/make, curl, bash, tar/gzip, pip, npm, each run without
#      and with the profile in a fresh directory; outputs (stdout+stderr+exit code) must be identical;
#   4. the blocked suite and part of the corpus again under runc with the JSON in config.json.
# The corpus runs inside this suite's own network namespace (loopback only is used).
set -uo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "$0")/lib.sh"

NS=skseccomp
POL=$SK_BIN/stockade-policy
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CLEAN_ENV=(env -i PATH="$PATH" LANG=C.UTF-8 TERM=dumb)

# "probe [arg]|expected": errno=N printed by the probe, or killed=SIG when the filter killed it.
BLOCKED=(
	"unshare_user|errno=1" "clone_ns user|errno=1" "clone_ns mnt|errno=1" "clone_ns net|errno=1"
	"clone_ns pid|errno=1" "clone_ns uts|errno=1" "clone_ns ipc|errno=1" "clone_ns cgroup|errno=1"
	"clone3|errno=38" "socket_packet raw|errno=1" "socket_packet dgram|errno=1" "socket_raw 4|errno=1"
	"socket_raw 6|errno=1" "socket_netlink 9|errno=1" "io_uring|errno=1" "bpf|errno=1"
	"ptrace_traceme|errno=1" "mount|errno=1" "personality|errno=1" "tiocsti|errno=1" "tiocsti high|errno=1"
	"int80|killed=31" "x32|killed=31"
	"rawsys keyctl|errno=1" "rawsys add_key|errno=1" "rawsys request_key|errno=1" "rawsys userfaultfd|errno=1"
	"rawsys perf_event_open|errno=1" "rawsys setns|errno=1" "rawsys process_vm_readv|errno=1"
	"rawsys process_vm_writev|errno=1" "rawsys open_by_handle_at|errno=1" "rawsys name_to_handle_at|errno=1"
	"rawsys kexec_load|errno=1" "rawsys init_module|errno=1" "rawsys finit_module|errno=1"
	"rawsys delete_module|errno=1" "rawsys swapon|errno=1" "rawsys swapoff|errno=1" "rawsys acct|errno=1"
	"rawsys quotactl|errno=1" "rawsys settimeofday|errno=1" "rawsys clock_settime|errno=1"
	"rawsys adjtimex|errno=1" "rawsys syslog|errno=1" "rawsys pivot_root|errno=1" "rawsys chroot|errno=1"
	"rawsys umount2|errno=1" "rawsys io_uring_enter|errno=1" "rawsys io_uring_register|errno=1"
	"rawsys reboot|errno=1" "rawsys lookup_dcookie|errno=1" "rawsys fsopen|errno=1" "rawsys open_tree|errno=1"
	"rawsys kcmp|errno=1" "rawsys pidfd_getfd|errno=1"
	# multicast membership; on lo, so the unfiltered baseline sends nothing off the host
	"mcast_join ip4 lo|errno=1" "mcast_join ip4-high lo|errno=1" "mcast_join ip4-on6 lo|errno=1"
	"mcast_join src4 lo|errno=1" "mcast_join mcast4 lo|errno=1" "mcast_join ip6 lo|errno=1"
	"mcast_join mcast6 lo|errno=1" "mcast_join anycast6 lo|errno=1"
)

# probe_result CMD... — runs a probe, prints errno=N or killed=SIG.
probe_result() {
	local out rc
	out=$("$@" 2>/dev/null); rc=$?
	if [ $rc -gt 128 ]; then echo "killed=$((rc - 128))"; else echo "${out:-rc=$rc}"; fi
}

read -r -d '' W_PYTHON <<'EOS'
cat > t.py <<'PY'
import hashlib, json, multiprocessing, os, socket, sqlite3, ssl, subprocess, sys, threading, venv

def sq(x):
    return x * x

if __name__ == "__main__":
    out = {}
    def work(i):
        out[i] = hashlib.sha256(str(i).encode() * 1000).hexdigest()[:8]
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print("threads", json.dumps(out, sort_keys=True))
    print("subprocess", subprocess.run(["sh", "-c", "echo hi; exit 3"], capture_output=True, text=True).stdout.strip())
    for m in ("fork", "spawn", "forkserver"):
        with multiprocessing.get_context(m).Pool(3) as p:
            print("pool", m, p.map(sq, range(6)))
    q = multiprocessing.Queue(); q.put({"a": 1}); print("queue", q.get())
    lock = multiprocessing.Lock(); lock.acquire(); lock.release(); print("semlock ok")
    ctx = ssl.create_default_context(); print("ssl", ctx.verify_mode, ctx.check_hostname, ctx.minimum_version)
    db = sqlite3.connect("t.db"); db.execute("create table t(a)"); db.executemany("insert into t values(?)", [(i,) for i in range(100)])
    db.commit(); print("sqlite", db.execute("select count(*), sum(a) from t").fetchone(), sqlite3.sqlite_version_info >= (3, 0))
    venv.create("v", with_pip=False); print("venv", sorted(os.listdir("v/bin")))
    print("in venv", subprocess.run(["v/bin/python", "-c", "import sys; print(sys.prefix != sys.base_prefix)"], capture_output=True, text=True).stdout.strip())
    print("getaddrinfo", sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80, proto=socket.IPPROTO_TCP)}))
    print("ifaces", sorted(n for _, n in socket.if_nameindex()))
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept()
    c.sendall(b"ping"); print("tcp", a.recv(4)); [x.close() for x in (a, c, s)]
    print("urandom", len(os.urandom(16)))
PY
python3 t.py
EOS

read -r -d '' W_NODE <<'EOS'
cat > t.js <<'JS'
const fs = require('fs'), cp = require('child_process'), http = require('http'), os = require('os');
const { Worker } = require('worker_threads');
fs.mkdirSync('d'); fs.writeFileSync('d/a.txt', 'hello');
console.log('fs', fs.readFileSync('d/a.txt', 'utf8'), fs.readdirSync('d').join(','), fs.statSync('d/a.txt').size);
console.log('execSync', cp.execSync('echo child').toString().trim());
console.log('spawnSync', cp.spawnSync('sh', ['-c', 'exit 3']).status);
const w = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
w.on('message', (m) => {
  console.log('worker', m);
  const srv = http.createServer((q, s) => s.end('pong ' + q.url)).listen(0, '127.0.0.1', () => {
    http.get({ host: '127.0.0.1', port: srv.address().port, path: '/x' }, (res) => {
      let b = ''; res.on('data', (d) => (b += d));
      res.on('end', () => {
        console.log('http', res.statusCode, b);
        srv.close();
        console.log('ifaces', Object.keys(os.networkInterfaces()).sort().join(','));
        console.log('crypto', require('crypto').randomBytes(8).length);
        cp.exec('echo async-child', (e, so) => console.log('exec', so.trim()));
      });
    });
  });
});
JS
node t.js
EOS

read -r -d '' W_GIT <<'EOS'
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z
git init -q -b main src && cd src || exit 1
for i in 1 2 3; do seq 1 $((i * 100)) > f$i; git add f$i; git commit -q -m "c$i"; done
git log --format='%H %s'
cd .. && git clone -q src dst && git -C dst log --oneline | wc -l
git -C dst gc -q && git -C dst count-objects -v | grep -E '^(count|in-pack|packs)'
git -C dst fsck --no-progress && echo fsck ok
git -C dst status --short | wc -l
EOS

read -r -d '' W_GCC <<'EOS'
cat > m.c <<'C'
#include <pthread.h>
#include <stdio.h>
static long acc[4];
static void *run(void *p) { long i = (long)p; for (long k = 0; k < 100000; k++) acc[i] += k % (i + 2); return NULL; }
int main(void) {
	pthread_t t[4];
	for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
	printf("%ld %ld %ld %ld\n", acc[0], acc[1], acc[2], acc[3]);
	return 0;
}
C
printf 'all: m\nm: m.c\n\t$(CC) -O2 -pthread -o $@ $<\nclean:\n\trm -f m\n' > Makefile
make -s && ./m && make -s clean && make -s -j2 && ./m
echo 'int main(void){return 7;}' | gcc -x c -o m2 - && ./m2; echo "rc=$?"
gcc -E -dM -x c /dev/null | grep -c __x86_64__
EOS

read -r -d '' W_CURL <<'EOS'
mkdir www && echo hello-from-server > www/index.txt
python3 -m http.server 18080 --bind 127.0.0.1 --directory www >/dev/null 2>&1 &
srv=$!
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18080/ && break; sleep 0.05; done
curl -s http://127.0.0.1:18080/index.txt
curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:18080/missing
curl -s -o /dev/null -w '%{http_code}\n' 'http://localhost:18080/index.txt'
kill $srv; wait $srv 2>/dev/null; echo done
EOS

read -r -d '' W_BASH <<'EOS'
seq 1 20000 | sort -rn | head -3
yes | head -2
echo "a b c" | awk '{print $2}'
printf 'x\ny\n' | sed 's/x/z/' | tr a-z A-Z
mkdir -p d/e && touch d/e/f d/g && find d | sort | xargs -n1 basename | tr '\n' ' '; echo
mkfifo ff; (echo via-fifo > ff &); cat ff
ln d/g d/h && stat -c %h d/g; ln -s g d/s && readlink d/s
cp -a d d2 && mv d2 d3 && rm -rf d3 && chmod 600 d/g && stat -c %a d/g
sleep 0.1 & wait; echo $((6 * 7)); echo "$(echo sub)$(id -u)"
date -u -d @0 +%Y; echo abc | sha256sum | cut -c1-16; head -c 1000 /dev/urandom | wc -c
ulimit -n >/dev/null && echo ulimit ok; trap 'echo trapped' USR1; kill -USR1 $$
(exit 4); echo "sub rc=$?"; timeout 5 true && echo timeout ok; nice -n 5 true && echo nice ok
EOS

read -r -d '' W_TAR <<'EOS'
mkdir t && for i in $(seq 1 50); do seq 1 $i > t/f$i; done
tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - t | gzip -n > t.tgz && sha256sum t.tgz | cut -c1-16
tar tzf t.tgz | head -3; mkdir x && tar xzf t.tgz -C x && diff -r t x/t && echo same
gzip -c t/f50 | gunzip | wc -l; gzip -9 t/f49 && ls t | grep -c 'gz$'
tar cf - t | tar tf - | wc -l
EOS

read -r -d '' W_PIP <<'EOS'
python3 - <<'PY'
import base64, hashlib, zipfile
files = {"tiny/__init__.py": "def hello():\n    return 'hello from tiny'\n",
         "tiny-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n",
         "tiny-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: stockade-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = []
with zipfile.ZipFile("tiny-0.1-py3-none-any.whl", "w") as z:
    for n, c in files.items():
        b = c.encode(); z.writestr(n, b)
        rec.append("%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(), len(b)))
    rec.append("tiny-0.1.dist-info/RECORD,,")
    z.writestr("tiny-0.1.dist-info/RECORD", "\n".join(rec) + "\n")
PY
python3 -m venv venv && echo venv ok
venv/bin/pip install -q --no-index --disable-pip-version-check ./tiny-0.1-py3-none-any.whl; echo "pip rc=$?"
venv/bin/python -c 'import tiny; print(tiny.hello())'
venv/bin/pip list --disable-pip-version-check --format=freeze 2>/dev/null | grep -c '^tiny=='
EOS

read -r -d '' W_NPM <<'EOS'
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
mkdir tinypkg app && cd tinypkg || exit 1
printf '{"name":"tiny-sk","version":"1.0.0","main":"index.js"}\n' > package.json
echo 'module.exports = () => "hello from tiny-sk";' > index.js
npm pack --silent >/dev/null 2>&1; echo "pack rc=$?"; ls ./*.tgz
cd ../app && printf '{"name":"app","version":"1.0.0"}\n' > package.json
npm install --offline --silent ../tinypkg/tiny-sk-1.0.0.tgz >/dev/null 2>&1; echo "install rc=$?"
node -e 'console.log(require("tiny-sk")())'
jq -r '.dependencies["tiny-sk"]' package.json
EOS

# corpus_run NAME MODE SCRIPT — MODE plain|exec; runs in a fresh $SK_TMP/w/NAME (same path both times, so
# outputs can be compared byte for byte), as root in the suite's pod netns, output+rc in $SK_TMP/out.
corpus_run() {
	local name=$1 mode=$2 script=$3 d=$SK_TMP/w/$1 rc
	rm -rf "$d"; mkdir -p "$d/home"
	local pre=()
	[ "$mode" = exec ] && pre=("$POL" exec --seccomp "$PROF" --)
	(cd "$d" && ip netns exec "$NS-pod" "${CLEAN_ENV[@]}" HOME="$d/home" timeout 120 "${pre[@]}" bash -c "$script") \
		>"$SK_TMP/out.$name.$mode" 2>&1
	rc=$?
	echo "exit=$rc" >>"$SK_TMP/out.$name.$mode"
	return $rc
}

CORPUS=(python node git gcc curl bash tar pip npm)
declare -A SCRIPTS=([python]=$W_PYTHON [node]=$W_NODE [git]=$W_GIT [gcc]=$W_GCC [curl]=$W_CURL
	[bash]=$W_BASH [tar]=$W_TAR [pip]=$W_PIP [npm]=$W_NPM)
# runc_cfg SECCOMP(true|false) CWD ARGS... — writes config.json for one run.
runc_cfg() {
	local sec=$1 cwd=$2; shift 2
	jq --argjson args "$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@")" --argjson sec "$sec" \
		--slurpfile prof "$PROF" --arg probes "$PROBES" --arg work "$SK_TMP/rwork" --arg cwd "$cwd" '
		.process.terminal = false | .process.args = $args | .process.cwd = $cwd
		| .process.env = ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/work/home", "LANG=C.UTF-8", "TERM=dumb"]
		| .root.readonly = true
		| .mounts += [
			{destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro"]},
			{destination: "/etc", type: "bind", source: "/etc", options: ["rbind", "ro"]},
			{destination: "/probes", type: "bind", source: $probes, options: ["rbind", "ro"]},
			{destination: "/work", type: "bind", source: $work, options: ["rbind", "rw"]},
			{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]}]
		| if $sec then .linux.seccomp = $prof[0] else del(.linux.seccomp) end' \
		"$RB/config.json.orig" >"$RB/config.json"
}
RUNC_N=0
runc_run() {
	RUNC_N=$((RUNC_N + 1))
	runc --root "$RSTATE" run --bundle "$RB" "sk-seccomp-$$-$RUNC_N" </dev/null
}

setup() {
	sk_require_root
	sk_tmp sk-seccomp
	PROF=$SK_TMP/agent.json
	PROBES=$SK_TMP/probes
	RB=$SK_TMP/bundle RSTATE=$SK_TMP/runc-state
	if [ ! -x "$POL" ]; then
		echo "missing $POL (make first, or set SK_BIN)" >&2
		exit 1
	fi
	sk_check "generate default profile" "$POL" seccomp -o "$PROF"
	mkdir -p "$PROBES"
	for src in "$SK_ROOT"/e2e/seccomp-probes/*.c; do
		gcc -O2 -Wall -o "$PROBES/$(basename "$src" .c)" "$src" || sk_fail "compile $(basename "$src")"
	done
	sk_net_up "$NS" || { sk_fail "netns setup"; sk_summary; exit 1; }
	# the runc bundle
	mkdir -p "$RB/rootfs"/{usr,etc,tmp,proc,dev,sys,probes,work} "$RSTATE"
	for l in bin lib lib64 sbin; do ln -s "usr/$l" "$RB/rootfs/$l"; done
	(cd "$RB" && runc spec) || sk_fail "runc spec"
	cp "$RB/config.json" "$RB/config.json.orig"
}

# ---- 1. generator CLI ----
t_generator() {
	sk_check_eq "profile: defaultAction/defaultErrnoRet" "SCMP_ACT_ERRNO 1" \
		"$(jq -r '"\(.defaultAction) \(.defaultErrnoRet)"' "$PROF")"
	sk_check_eq "profile: architectures x86_64 (no x86, no x32) + aarch64" "SCMP_ARCH_X86_64,SCMP_ARCH_AARCH64" \
		"$(jq -r '.architectures | join(",")' "$PROF")"
	sk_check_eq "profile: clone3 answers ENOSYS" "SCMP_ACT_ERRNO 38" \
		"$(jq -r '.syscalls[] | select(.names == ["clone3"]) | "\(.action) \(.errnoRet)"' "$PROF")"
	sk_check_eq "profile: every conditional entry has one arg per index" "" \
		"$(jq -r '.syscalls[] | select(.args) | select((.args | map(.index) | unique | length) != (.args | length)) | .names[0]' "$PROF")"
	out=$("$POL" seccomp --allow mount 2>&1); rc=$?
	sk_check_eq "--allow mount refused (exit 2)" "2 stockade-policy seccomp: allow mount: never allowed" "$rc ${out%% for the agent*}"
	out=$("$POL" seccomp --allow no_such_call 2>&1); rc=$?
	sk_check_eq "--allow unknown name is an error" "2 stockade-policy seccomp: allow no_such_call: unknown syscall" "$rc $out"
	out=$("$POL" seccomp --arch aarch64 --allow open 2>&1); rc=$?
	sk_check_eq "--allow a name missing on the selected arch" \
		"2 stockade-policy seccomp: allow open: not a syscall on any selected architecture" "$rc $out"
	"$POL" seccomp --arch aarch64 -o "$SK_TMP/a64.json"
	sk_check_eq "--arch aarch64: x86-only names dropped" "SCMP_ARCH_AARCH64 false true" \
		"$(jq -r '[.architectures[0], ([.syscalls[].names[]] | index("open") != null), ([.syscalls[].names[]] | index("openat") != null)] | join(" ")' "$SK_TMP/a64.json")"
	cat >"$SK_TMP/pol.yaml" <<'EOF'
version: 1
seccomp:
  allow: [fanotify_mark]
  deny: [link]
EOF
	if "$POL" seccomp --policy "$SK_TMP/pol.yaml" -o "$SK_TMP/pol.json" 2>"$SK_TMP/pol.err"; then
		sk_check_eq "--policy seccomp: allow/deny applied" "true false" \
			"$(jq -r '[([.syscalls[].names[]] | index("fanotify_mark") != null), ([.syscalls[].names[]] | index("link") != null)] | join(" ")' "$SK_TMP/pol.json")"
		dout=$("$POL" seccomp --diff "$PROF" "$SK_TMP/pol.json"); rc=$?
		sk_check_eq "--diff ours vs policy-tuned" "1 only B: fanotify_mark: allow|only A: link: allow" \
			"$rc $(echo "$dout" | grep -v '^#' | paste -sd'|')"
	else
		sk_fail "--policy seccomp" "$(cat "$SK_TMP/pol.err")"
	fi
	python3 "$SK_ROOT/bench/seccomp/runtime_default.py" >"$SK_TMP/rd.json"
	dout=$("$POL" seccomp --diff "$PROF" "$SK_TMP/rd.json")
	for want in "only B: name_to_handle_at: allow" "only B: modify_ldt: allow" \
		"differs: ioctl: A allow when (arg1 & 0xffffffff != 0x5412); else errno 1 | B allow"; do
		if grep -qF -- "$want" <<<"$dout"; then sk_pass "--diff vs RuntimeDefault: $want"; else sk_fail "--diff vs RuntimeDefault: $want"; fi
	done
	sk_check_eq "--diff same file: exit 0, no lines" "0" "$("$POL" seccomp --diff "$PROF" "$PROF" | grep -vc '^#')"
}

# ---- 2. blocked suite under exec ----
t_exec_blocked() {
	for entry in "${BLOCKED[@]}"; do
		spec=${entry%|*} want=${entry#*|}
		read -r -a pa <<<"$spec"
		pa[0]=$PROBES/${pa[0]}
		got=$(probe_result "${CLEAN_ENV[@]}" "$POL" exec --seccomp "$PROF" -- "${pa[@]}")
		sk_check_eq "exec blocks: $spec" "$want" "$got"
		base=$(probe_result "${CLEAN_ENV[@]}" "${pa[@]}")
		if [ "$base" != "$want" ]; then sk_pass "without profile $spec gets through to the kernel ($base)"
		else sk_fail "without profile $spec already gives $base: the probe proves nothing"; fi
	done
	# the agent's own UID under the profile: the same answers
	for spec in "unshare_user" "socket_raw 4" "clone3" "mcast_join ip4 lo" "mcast_join ip6 lo"; do
		read -r -a pa <<<"$spec"; pa[0]=$PROBES/${pa[0]}
		want=errno=1; [ "$spec" = clone3 ] && want=errno=38
		sk_check_eq "exec as uid $SK_AGENT_UID blocks: $spec" "$want" \
			"$(probe_result sk_as "$SK_AGENT_UID" "$POL" exec --seccomp "$PROF" -- "${pa[@]}")"
	done
	# Refusals are logged (SECCOMP_FILTER_FLAG_LOG): the kernel writes an audit line (type=1326) per refused
	# call, naming the command and the syscall, which the operator reads on the node; the control is the
	# same profile without the flag, which refuses as well but logs nothing.
	# The generator leaves the flag out (runc 1.1, Debian 12's, refuses to start a container whose profile
	# has "flags"): the profile with it added by hand is what a runtime that takes it would load.
	local n0 n1 n2
	jq '. + {flags: ["SECCOMP_FILTER_FLAG_LOG"]}' "$PROF" >"$SK_TMP/prof-log.json"
	n0=$(seccomp_log_lines unshare_user 272)
	probe_result "$POL" exec --seccomp "$SK_TMP/prof-log.json" -- "$PROBES/unshare_user" >/dev/null
	n1=$(seccomp_log_lines unshare_user 272)
	sk_check_eq "control: without the log flag the call is refused too" "errno=1" \
		"$(probe_result "$POL" exec --seccomp "$PROF" -- "$PROBES/unshare_user")"
	n2=$(seccomp_log_lines unshare_user 272)
	sk_check_eq "a refused unshare(2) leaves one kernel audit line (comm, syscall 272, errno action); without the flag none" \
		"1 0" "$((n1 - n0)) $((n2 - n1))"
	# allowed neighbours of the blocked calls still work
	sk_check_eq "exec allows NETLINK_ROUTE (getifaddrs)" "errno=0" \
		"$(probe_result "$POL" exec --seccomp "$PROF" -- "$PROBES/socket_netlink" 0)"
	sk_check_eq "exec allows SO_REUSEADDR, TCP_NODELAY, IP_TTL, IPV6_V6ONLY, IP_MULTICAST_TTL, IPV6_MULTICAST_HOPS" \
		"errno=0" "$(probe_result "$POL" exec --seccomp "$PROF" -- "$PROBES/mcast_join" opts)"
	sk_check_eq "profile: setsockopt only with arguments (no unconditional entry)" "0" \
		"$(jq '[.syscalls[] | select(.names | index("setsockopt")) | select((.args // []) | length == 0)] | length' "$PROF")"
	sk_check_eq "describe setsockopt" \
		"setsockopt: allow when !(arg1 & 0xffffffff == 0 && arg2 & 0xffffffff in {35-48}) && !(arg1 & 0xffffffff == 41 && arg2 & 0xffffffff in {20-21,27-28,42-48}); else errno 1" \
		"$("$POL" seccomp --describe "$PROF" setsockopt)"
}

# seccomp_log_lines COMM NR — how many kernel audit lines (type=1326, errno action 0x50000) name COMM and NR
seccomp_log_lines() {
	dmesg 2>/dev/null | grep -c "type=1326 .*comm=\"$1\" .* syscall=$2 .*code=0x50000" || true
}

# ---- 2b. refusals the operator can read: seccomp --log-denials, the kernel's record, stockade-policy seccomp-log ----
t_seccomp_log() {
	local logged
	logged=$(cat /proc/sys/kernel/seccomp/actions_logged 2>&1)
	if ! grep -qw errno <<<"$logged"; then
		echo "skip - seccomp_log: errno is not in /proc/sys/kernel/seccomp/actions_logged ('$logged'): this kernel logs no refused syscall"
		return
	fi
	"$POL" seccomp --log-denials -o "$SK_TMP/prof-gen-log.json"
	sk_check_eq "seccomp --log-denials: the log flag, and the same rules as the default profile" \
		'["SECCOMP_FILTER_FLAG_LOG"] 0' \
		"$(jq -c .flags "$SK_TMP/prof-gen-log.json") $("$POL" seccomp --diff "$PROF" "$SK_TMP/prof-gen-log.json" | grep -vc '^#')"
	# the reader follows /dev/kmsg from its end; the control (the profile without the flag) refuses the same
	# call first and must leave no line
	"$POL" seccomp-log --follow --from-end --node e2e-node >"$SK_TMP/slog.out" 2>"$SK_TMP/slog.err" &
	local rpid=$! f opened=""
	for _ in $(seq 100); do
		for f in "/proc/$rpid/fd"/*; do [ "$(readlink "$f")" = /dev/kmsg ] && opened=1; done
		[ -n "$opened" ] && break
		sleep 0.02
	done
	sk_check_eq "control: the profile without the flag refuses unshare(2)" "errno=1" \
		"$(probe_result "$POL" exec --seccomp "$PROF" -- "$PROBES/unshare_user")"
	sk_check_eq "the generated --log-denials profile refuses unshare(2)" "errno=1" \
		"$(probe_result "$POL" exec --seccomp "$SK_TMP/prof-gen-log.json" -- "$PROBES/unshare_user")"
	# a process that stays alive in a kubepods-shaped cgroup (under a parent of the suite's own, so no
	# kubelet on this machine sees it): the reader names its pod and container
	local uid cid cg="" top=""
	uid=$(printf '%08x-e2e0-4000-8000-%012x' $$ "$RANDOM")
	cid=$(printf '%064x' $$)
	for root in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
		if [ -f "$root/cgroup.procs" ] && mkdir -p "$root/sk-e2e-$$/kubepods/pod$uid/$cid" 2>/dev/null; then
			top=$root/sk-e2e-$$ cg=$top/kubepods/pod$uid/$cid
			break
		fi
	done
	if [ -n "$cg" ]; then
		sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$POL" exec --seccomp "$SK_TMP/prof-gen-log.json" -- \
			python3 -c 'import ctypes, time; r = ctypes.CDLL(None, use_errno=True).unshare(0x10000000); print(r, ctypes.get_errno()); time.sleep(2)' \
			>"$SK_TMP/py.out" 2>&1 &
		local ppid=$!
	else
		echo "skip - seccomp_log pod attribution: no writable cgroup hierarchy to make a kubepods cgroup in"
	fi
	for _ in $(seq 150); do
		[ "$(grep -c '"comm":"unshare_user"' "$SK_TMP/slog.out")" -ge 1 ] &&
			{ [ -z "$cg" ] || grep -q '"comm":"python3"' "$SK_TMP/slog.out"; } && break
		sleep 0.02
	done
	if [ -n "$cg" ]; then
		wait "$ppid"
		sk_check_eq "python3's unshare(2) under the profile: EPERM" "-1 1" "$(cat "$SK_TMP/py.out")"
		sk_check_eq "the reader names the refused process's pod UID and container id (from its cgroup)" "$uid $cid" \
			"$(jq -r 'select(.comm == "python3") | "\(.pod_uid) \(.container_id)"' "$SK_TMP/slog.out")"
		rmdir "$cg" "$top/kubepods/pod$uid" "$top/kubepods" "$top"
	fi
	kill "$rpid"; wait "$rpid"
	sk_check_eq "seccomp-log --follow stops on SIGTERM, exit 0" "0" "$?"
	sk_check_eq "one NDJSON line for the logged refusal, none for the control" \
		"1 unshare 272 errno x86_64 $PROBES/unshare_user e2e-node" \
		"$(jq -rs 'map(select(.comm == "unshare_user")) | "\(length) \(.[0].syscall) \(.[0].syscall_nr) \(.[0].action) \(.[0].arch) \(.[0].exe) \(.[0].node)"' "$SK_TMP/slog.out")"
	sk_check_eq "no unreadable record reported" "" "$(cat "$SK_TMP/slog.err")"
	# the same record from a file: dmesg's text, and auditd's form of it
	dmesg -t 2>/dev/null | grep '^audit: type=1326 .*comm="unshare_user"' | tail -1 >"$SK_TMP/dmesg.txt"
	sed 's/^audit: type=1326 audit(/type=SECCOMP msg=audit(/' "$SK_TMP/dmesg.txt" >"$SK_TMP/audit.log"
	local want
	want=$(jq -c 'select(.comm == "unshare_user") | del(.node)' "$SK_TMP/slog.out")
	sk_check_eq "seccomp-log --source FILE (dmesg's text): the same line" "$want" \
		"$("$POL" seccomp-log --source "$SK_TMP/dmesg.txt" | jq -c .)"
	sk_check_eq "seccomp-log --source FILE (auditd's log): the same line" "$want" \
		"$("$POL" seccomp-log --source "$SK_TMP/audit.log" | jq -c .)"
	sk_check_fails "seccomp-log: a source that cannot be opened exits 5" --status=5 "$POL" seccomp-log --source "$SK_TMP/none"
	# suggest reads the lines: unshare is never allowed, so a comment with the generator's reason, no entry
	sk_check "suggest over the lines: unshare named as never allowed, not suggested" \
		grep -qE '^# seccomp: not suggested, unshare \([0-9]+ refusals?\): seccomp: allow unshare: never allowed' \
		<<<"$("$POL" suggest "$SK_TMP/slog.out")"
}

# ---- 3. workload corpus ----
t_corpus() {
	for w in "${CORPUS[@]}"; do
		corpus_run "$w" plain "${SCRIPTS[$w]}"; prc=$?
		corpus_run "$w" exec "${SCRIPTS[$w]}"
		if [ $prc -ne 0 ]; then
			sk_fail "corpus $w: fails even without the profile" "$(tail -5 "$SK_TMP/out.$w.plain" | tr '\n' ' ')"
		elif cmp -s "$SK_TMP/out.$w.plain" "$SK_TMP/out.$w.exec"; then
			sk_pass "corpus $w: identical output under the profile ($(wc -l <"$SK_TMP/out.$w.plain") lines)"
		else
			sk_fail "corpus $w: output differs under the profile" \
				"$(diff "$SK_TMP/out.$w.plain" "$SK_TMP/out.$w.exec" | head -10 | tr '\n' ' ')"
		fi
	done
}

# ---- 4. runc with the JSON profile in config.json ----
t_runc_blocked() {
	mkdir -p "$SK_TMP/rwork/home"
	runc_cfg true / /probes/clone3
	if out=$(runc_run 2>&1); then sk_pass "runc runs a container with the profile ($out)"; else
		sk_fail "runc run with the profile" "$out"; fi
	for entry in "${BLOCKED[@]}"; do
		spec=${entry%|*} want=${entry#*|}
		read -r -a pa <<<"$spec"; pa[0]=/probes/${pa[0]}
		runc_cfg true / "${pa[@]}"
		sk_check_eq "runc blocks: $spec" "$want" "$(probe_result runc_run)"
	done
	runc_cfg false / /probes/clone3
	sk_check_eq "runc without the profile: clone3 reaches the kernel" "errno=0" "$(probe_result runc_run)"
	runc_cfg true / /probes/socket_netlink 0
	sk_check_eq "runc allows NETLINK_ROUTE" "errno=0" "$(probe_result runc_run)"
	runc_cfg true / /probes/mcast_join opts
	sk_check_eq "runc allows SO_REUSEADDR, TCP_NODELAY, IP_TTL and the other non-membership options" "errno=0" \
		"$(probe_result runc_run)"
}

# ---- 5. the corpus under runc: compare with the plain run on the host (same scripts, cwd /work) ----
t_runc_corpus() {
	for w in python gcc git bash tar; do
		# (the corpus case made the plain run; alone, this case makes it)
		[ -f "$SK_TMP/out.$w.plain" ] || corpus_run "$w" plain "${SCRIPTS[$w]}"
		rm -rf "$SK_TMP/rwork"; mkdir -p "$SK_TMP/rwork/home"
		runc_cfg true /work bash -c "${SCRIPTS[$w]}"
		runc_run >"$SK_TMP/out.$w.runc" 2>&1
		echo "exit=$?" >>"$SK_TMP/out.$w.runc"
		# the host run saw the pod netns interfaces (lo, skp0); the container has only lo
		if cmp -s <(grep -v '^ifaces' "$SK_TMP/out.$w.plain") <(grep -v '^ifaces' "$SK_TMP/out.$w.runc"); then
			sk_pass "runc corpus $w: identical output under the profile"
		else
			sk_fail "runc corpus $w: output differs" \
				"$(diff "$SK_TMP/out.$w.plain" "$SK_TMP/out.$w.runc" | head -10 | tr '\n' ' ')"
		fi
	done
}

SK_CASES=(generator exec_blocked seccomp_log corpus runc_blocked runc_corpus)
sk_main "$@"
