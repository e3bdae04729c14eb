#!/usr/bin/env bash
# Image checks (issue 10): each FROM-scratch image built by `make images` holds only our binary, the
# libraries it loads, passwd/group (and the CA bundle for the sidecar), no shell; its size is printed;
# and its binary runs `--version` as the image's own user under runc on the unpacked rootfs, read-only,
# with every capability dropped. Needs root (runc).
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
sk_require_root
cd "$SK_ROOT" || exit 1
BUILD=${BUILD:-build}
SK_TMP=$(mktemp -d)
trap sk_cleanup_on_exit EXIT

if ! make -s images BUILD="$BUILD" >"$SK_TMP/images.log" 2>&1; then
	cat "$SK_TMP/images.log"; sk_fail "make images"; sk_summary; exit 1
fi
sk_pass "make images"
cat "$SK_TMP/images.log"

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

for img in init sidecar policy; do
	tarball="$BUILD/images/stockade-$img.tar"
	dir="$SK_TMP/$img"
	mkdir -p "$dir/rootfs"
	tar -xf "$tarball" -C "$dir"
	layer=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' "$dir/manifest.json")
	cfg=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Config"])' "$dir/manifest.json")
	tar -xf "$dir/$layer" -C "$dir/rootfs"
	# The target (<= 10 MiB) is the image as pulled: its gzip-compressed layer plus config. The sidecar's
	# uncompressed size is larger because Debian's libcurl brings its whole dependency closure.
	size=$(( $(gzip -9 -n -c "$dir/$layer" | wc -c) + $(stat -c %s "$dir/$cfg") ))
	if [ "$size" -le $((10 * 1024 * 1024)) ]; then sk_pass "$img image <= 10 MiB as pulled ($((size / 1024)) KiB compressed, $(( $(stat -c %s "$tarball") / 1024 )) KiB tarball)"
	else sk_fail "$img image <= 10 MiB as pulled" "$size bytes compressed"; fi
	if find "$dir/rootfs" -name sh -o -name bash -o -name busybox -o -name apt -o -name dpkg | grep -q .; then
		sk_fail "$img image has no shell or package manager"
	else sk_pass "$img image has no shell or package manager"; fi
	user=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["User"])' "$dir/$cfg")
	uid=${user%%:*} gid=${user##*:}
	case $img in
	init) sk_check_eq "init image runs as root (NET_ADMIN in its own netns)" 0 "$uid" ;;
	sidecar) sk_check_eq "sidecar image user is 1337" 1337 "$uid"
		sk_check "sidecar image has the CA bundle" test -s "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
		# libcurl is dlopen'ed on the first API request (not a NEEDED entry): it and every library it
		# needs must be in the image, found where the loader looks.
		missing=$(curl_closure_missing "$dir/rootfs")
		sk_check_eq "sidecar image has libcurl.so.4 and all it needs" "" "$missing" ;;
	policy) sk_check_eq "policy image user is nobody" 65534 "$uid" ;;
	esac
	# An OCI bundle for runc: read-only root, the image's user, no capabilities, its own namespaces.
	/usr/bin/python3 - "$dir" "$uid" "$gid" "stockade-$img" <<'PY'
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
	if grep -q "^stockade-$img " <<<"$out"; then sk_pass "$img image runs --version under runc ($out)"
	else sk_fail "$img image runs --version under runc" "$out"; fi
	runc delete -f "sk-img-$img-$$" >/dev/null 2>&1 || true
done
sk_summary
