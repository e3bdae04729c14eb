#!/usr/bin/env bash
# Image checks: each FROM-scratch image built by `make images` holds only our binary, the
# libraries it loads, passwd/group (and the CA bundle for the sidecar), no shell; and its binary runs
# `--version` as the image's own user under runc on the unpacked rootfs, read-only, with every capability
# dropped. The sidecar image is at most 10 MiB uncompressed (the injector and the installer
# too: they carry OpenSSL), init and policy at most 4 MiB (sizes printed, compressed too); the sidecar's and
# the installer's libcurl is the one scripts/build-curl makes (HTTPS over OpenSSL and HTTP/2, needing
# nothing else), and the whole gateway suite (e2e/gateway.test.sh) passes with the image's own
# sidecar binary, loader, libc and libcurl. Needs root (runc, the gateway suite's namespaces).
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
BUILD=${BUILD:-build}

setup() {
	sk_require_root
	sk_tmp skimages
	if ! make -s images BUILD="$BUILD" >"$SK_TMP/images.log" 2>&1; then
		cat "$SK_TMP/images.log"; sk_fail "make images"; sk_summary; exit 1
	fi
	sk_pass "make images"
	cat "$SK_TMP/images.log"
}

# Prints each library that libcurl.so.4 needs, directly or not, and that the loader would not find in
# the rootfs $1 (its own multiarch dirs only: there is no ld.so.cache in the image); nothing when complete.
curl_closure_missing() {
	local root=$1 todo=(libcurl.so.4) seen=" " lib d f n
	while [ ${#todo[@]} -gt 0 ]; do
		lib=${todo[0]} todo=("${todo[@]:1}")
		case $seen in *" $lib "*) continue ;; esac
		seen+="$lib "
		f=""
		for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib64; do
			if [ -e "$root/$d/$lib" ]; then f=$(readlink -f "$root/$d/$lib"); break; fi
		done
		# A link that leaves the rootfs would find the host's copy, not the image's.
		if [ -z "$f" ] || [ "${f#"$root"/}" = "$f" ] || [ ! -s "$f" ]; then echo "$lib"; continue; fi
		for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do todo+=("$n"); done
	done
}

# The libraries the image's libcurl.so.4 needs, directly or not, one line, sorted (after
# curl_closure_missing found them all).
curl_closure() {
	local root=$1 todo=(libcurl.so.4) seen=" " lib d
	while [ ${#todo[@]} -gt 0 ]; do
		lib=${todo[0]} todo=("${todo[@]:1}")
		case $seen in *" $lib "*) continue ;; esac
		seen+="$lib "
		for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib64; do
			[ -e "$root/$d/$lib" ] || continue
			for n in $(readelf -d "$root/$d/$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do todo+=("$n"); done
			break
		done
	done
	tr ' ' '\n' <<<"$seen" | grep -v -e '^$' -e '^libcurl\.so\.4$' | sort | tr '\n' ' ' | sed 's/ $//'
}

# The sidecar image's libcurl (scripts/build-curl): only OpenSSL, nghttp2 and libc below it; what the
# image's own loader finds for "libcurl.so.4" (a probe that dlopens it as the sidecar does) speaks HTTPS
# through OpenSSL and HTTP/2 with the threaded resolver, and nothing else; and the gateway suite passes
# against the image's binary and libraries.
check_image_curl() {
	local root=$1 probe=$SK_TMP/curl_probe out
	sk_check_eq "sidecar image's libcurl needs only OpenSSL, nghttp2, libc (and its loader)" \
		"ld-linux-x86-64.so.2 libc.so.6 libcrypto.so.3 libnghttp2.so.14 libssl.so.3" "$(curl_closure "$root")"
	if ! cc -std=c11 -O1 -Wall -Wextra -Werror -o "$probe" e2e/images/curl_probe.c >"$SK_TMP/probe.log" 2>&1; then
		sk_fail "curl probe builds" "$(cat "$SK_TMP/probe.log")"
		return
	fi
	out=$("$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/lib/x86_64-linux-gnu" "$probe" 2>&1)
	echo "image libcurl: $out"
	sk_check "image libcurl: TLS through OpenSSL" grep -q ' ssl=OpenSSL/' <<<"$out"
	sk_check "image libcurl: HTTP/2 (nghttp2)" grep -Eq ' http2=yes nghttp2=[0-9]' <<<"$out"
	sk_check "image libcurl: threaded resolver" grep -q ' threaded_resolver=yes' <<<"$out"
	sk_check "image libcurl: no zlib, IDN, brotli, zstd, SSH, SASL, GSSAPI or PSL" grep -q \
		' libz=- idn=- brotli=- zstd=- libssh=- gsasl=- gssapi=no psl=no ' <<<"$out"
	sk_check_eq "image libcurl: protocols http and https only" "http,https" "${out##*protocols=}"
	# The gateway suite, its sidecar run by the image's loader from the image's files (SK_SIDECAR_ROOT).
	chmod 755 "$SK_TMP"
	SK_SIDECAR_ROOT=$root bash e2e/gateway.test.sh >"$SK_TMP/gateway.log" 2>&1
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$SK_TMP/gateway.log" | tail -1)
	if [ -n "$line" ] && [ "${line#* passed, }" = "0 failed" ]; then
		sk_pass "gateway suite with the image's sidecar and libcurl ($line)"
	else
		grep '^FAIL' "$SK_TMP/gateway.log" | head -20
		sk_fail "gateway suite with the image's sidecar and libcurl" "${line:-no summary line}; $(tail -3 "$SK_TMP/gateway.log")"
	fi
}

# check_image IMG — the image stockade-IMG: size, contents, user, and its binary under runc.
check_image() {
	img=$1
	tarball="$BUILD/images/stockade-$img.tar"
	dir="$SK_TMP/$img"
	mkdir -p "$dir/rootfs"
	tar -xf "$tarball" -C "$dir"
	layer=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' "$dir/manifest.json")
	cfg=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Config"])' "$dir/manifest.json")
	tar -xf "$dir/$layer" -C "$dir/rootfs"
	# Uncompressed: the layer as unpacked on the node plus the config (what `crictl images` and
	# `docker images` show); compressed: the gzip layer a registry stores and a node pulls.
	size=$(( $(stat -c %s "$dir/$layer") + $(stat -c %s "$dir/$cfg") ))
	gz=$(( $(gzip -9 -n -c "$dir/$layer" | wc -c) + $(stat -c %s "$dir/$cfg") ))
	# the sidecar, the injector, the installer and the CNI plugin carry libssl/libcrypto (4.6 MiB of it libcrypto)
	case $img in sidecar | injector | installer | cni) limit_mib=10 ;; *) limit_mib=4 ;; esac
	sizes="$((size / 1024)) KiB uncompressed, $((gz / 1024)) KiB compressed"
	if [ "$size" -le $((limit_mib * 1024 * 1024)) ]; then sk_pass "$img image <= $limit_mib MiB uncompressed ($sizes)"
	else sk_fail "$img image <= $limit_mib MiB uncompressed" "$sizes"; fi
	if find "$dir/rootfs" -name sh -o -name bash -o -name busybox -o -name apt -o -name dpkg | grep -q .; then
		sk_fail "$img image has no shell or package manager"
	else sk_pass "$img image has no shell or package manager"; fi
	user=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["User"])' "$dir/$cfg")
	# A review goes from the image to its source: where, which commit, when, under which licence.
	sk_check_eq "$img image: OCI labels name the source, the commit, its time and the licence" \
		"$(sed -n 's/^home: *//p' helm/stockade/Chart.yaml) $(git rev-parse HEAD) Apache-2.0 1" \
		"$(/usr/bin/python3 -c '
import json, re, sys
l = json.load(open(sys.argv[1]))["config"]["Labels"]
p = "org.opencontainers.image."
print(l.get(p + "source"), l.get(p + "revision"), l.get(p + "licenses"),
      int(bool(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", l.get(p + "created", "")))))' "$dir/$cfg")"
	uid=${user%%:*} gid=${user##*:}
	case $img in
	init) sk_check_eq "init image runs as root (NET_ADMIN in its own netns)" 0 "$uid" ;;
	sidecar) sk_check_eq "sidecar image user is 1337" 1337 "$uid"
		sk_check "sidecar image has the CA bundle" test -s "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
		# libcurl is dlopen'ed on the first API request (not a NEEDED entry): it and every library it
		# needs must be in the image, found where the loader looks.
		missing=$(curl_closure_missing "$dir/rootfs")
		sk_check_eq "sidecar image has libcurl.so.4 and all it needs" "" "$missing"
		check_image_curl "$dir/rootfs" ;;
	policy) sk_check_eq "policy image user is nobody" 65534 "$uid" ;;
	injector) sk_check_eq "injector image user is nobody" 65534 "$uid" ;;
	installer) sk_check_eq "installer image runs as root (the kubelet's seccomp directory)" 0 "$uid"
		sk_check_eq "installer image has libcurl.so.4 and all it needs" "" "$(curl_closure_missing "$dir/rootfs")" ;;
	esac
	# the installer is stockade-policy under another file name (its seccomp-install subcommand)
	local want=stockade-$img; [ "$img" = installer ] && want=stockade-policy
	runc_version "$img" "$dir" "$uid" "$gid" "stockade-$img" "$want"
	# The sidecar image's stockade-init (the chart's init.inSidecar entry) runs from the image's own files.
	if [ "$img" = sidecar ]; then runc_version "$img" "$dir" "$uid" "$gid" stockade-init stockade-init; fi
}

# runc_version IMG DIR UID GID BINARY WANT — BINARY --version under runc from the unpacked image in DIR:
# read-only root, the image's user, no capabilities, its own namespaces; its output starts with WANT.
runc_version() {
	local img=$1 dir=$2 uid=$3 gid=$4 binary=$5 want=$6 out
	/usr/bin/python3 - "$dir" "$uid" "$gid" "$binary" <<'PY'
import json, sys
d, uid, gid, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spec = {
    "ociVersion": "1.0.2",
    "process": {"terminal": False, "user": {"uid": uid, "gid": gid}, "args": ["/usr/local/bin/" + binary, "--version"],
                "env": ["PATH=/usr/local/bin"], "cwd": "/", "noNewPrivileges": True,
                "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []}},
    "root": {"path": "rootfs", "readonly": True},
    "hostname": "stockade-image-test",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}],
    "linux": {"namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
              "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"]},
}
json.dump(spec, open(d + "/config.json", "w"))
PY
	out=$(cd "$dir" && timeout 30 runc run "sk-img-$img-$$" 2>&1)
	if grep -q "^$want " <<<"$out"; then sk_pass "$img image runs $binary --version under runc ($out)"
	else sk_fail "$img image runs $binary --version under runc" "$out"; fi
	runc delete -f "sk-img-$img-$$" >/dev/null 2>&1 || true
}

# One case per image of scripts/images.list (the list `make images` builds).
while read -r name _; do
	case $name in '' | '#'*) continue ;; esac
	SK_CASES+=("$name")
	eval "t_$name() { check_image $name; }"
done <scripts/images.list
sk_main "$@"
