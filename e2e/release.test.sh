#!/usr/bin/env bash
# Release artifacts: `make release` builds, offline, for every image of
# scripts/images.list a multi-arch OCI layout (linux/amd64, linux/arm64 cross-built with Debian's
# toolchain), its SPDX SBOM and the packaged charts, all under build/release/. Checked here:
#   - the layouts are valid OCI image layouts (e2e/release/check_release.py: digests, sizes, media types,
#     platforms, diff_ids), skopeo reads them and copies them with every architecture and the same digests,
#     to another layout and (as docs/install.md says) to a registry (Debian's docker-registry on loopback),
#     from which the pinned index digest pulls the arm64 image;
#   - the SBOMs are SPDX 2.3 documents listing every file of each layer with its digest, every shared
#     library under the Debian package (and version) dpkg has for it, or the built libcurl;
#   - the arm64 binaries and libraries are AArch64 ELF, and run under qemu-user with the image's own
#     loader and libraries (`--version` of each, `stockade-policy check` on an example, the image's
#     libcurl speaks HTTPS through OpenSSL and HTTP/2); the amd64 ones run with theirs;
#   - the version is one: image tag = packaged chart version = appVersion = what `--version` prints;
#   - each SBOM attached to its image as an OCI artifact, the charts pushed as OCI artifacts, every manifest
#     signed (SK_SIGNING_KEY, scripts/release-oci): make verify-release passes with the key, fails with
#     another, and after a changed blob, chart package, moved tag or dropped signature;
#   - a second run pinning digests and a registry gives the same digests (reproducible) and a chart whose
#     images are `REPO/stockade-NAME@sha256:<index digest>`.
# No root needed (no namespaces); run by scripts/run-e2e like the others.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
BUILD=${BUILD:-build}
REL=$BUILD/release
REGISTRY_PID=""
HELM=$(command -v helm || echo /opt/stockade-tools/bin/helm)
VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' helm/stockade/Chart.yaml)
ARCHES=(amd64 arm64)
IMAGES=()
while read -r name _; do
	case $name in '' | '#'*) continue ;; esac
	IMAGES+=("$name")
done <scripts/images.list

# The version the layout's index.json tags, the digest of the image index it names.
index_digest() {
	/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$1/index.json"
}

# setup: the release every case reads (and the digests the reproducibility case compares with).
setup() {
	sk_tmp release
	trap '[ -z "$REGISTRY_PID" ] || kill "$REGISTRY_PID" 2>/dev/null; sk_cleanup_on_exit' EXIT
	local t0=$SECONDS
	# the release key (ECDSA P-256) and a stranger's, for the signature cases
	local k
	for k in key other; do
		if ! { openssl ecparam -name prime256v1 -genkey -noout -out "$SK_TMP/$k.pem" 2>/dev/null &&
			openssl pkey -in "$SK_TMP/$k.pem" -pubout -out "$SK_TMP/$k.pub.pem"; }; then
			sk_fail "signing key $k"
		fi
	done
	if make -s release BUILD="$BUILD" SK_SIGNING_KEY="$SK_TMP/key.pem" >"$SK_TMP/release.log" 2>&1; then
		sk_pass "make release ($((SECONDS - t0)) s)"
	else
		sk_fail "make release" "$(tail -20 "$SK_TMP/release.log")"
		sk_summary
		exit 1
	fi
	cp "$REL/digests.txt" "$SK_TMP/digests.first"
}

t_layouts_and_sboms() {
	local img line
	for img in "${IMAGES[@]}"; do
		while IFS= read -r line; do
			case $line in
			"ok "*) sk_pass "${line#ok }" ;;
			"FAIL "*) sk_fail "${line#FAIL }" ;;
			*) sk_fail "check_release.py stockade-$img: $line" ;;
			esac
		done < <(/usr/bin/python3 e2e/release/check_release.py "$REL/oci/stockade-$img" \
			"$REL/sbom/stockade-$img.spdx.json" "$VERSION" "$SK_TMP/rootfs/$img" "${ARCHES[@]}" 2>&1)
	done
}

t_skopeo() {
	local img layout raw blob arch got
	command -v skopeo >/dev/null || { sk_fail "skopeo installed (scripts/install-deps)"; return; }
	for img in "${IMAGES[@]}"; do
		layout=$REL/oci/stockade-$img
		raw=$(skopeo inspect --raw "oci:$layout:$VERSION" 2>&1)
		blob=$(cat "$layout/blobs/sha256/$(index_digest "$layout" | cut -d: -f2)")
		sk_check_eq "stockade-$img: skopeo reads the tag's image index" "$blob" "$raw"
		for arch in "${ARCHES[@]}"; do
			got=$(skopeo inspect --override-arch "$arch" --format '{{.Architecture}}/{{.Os}}' \
				"oci:$layout:$VERSION" 2>&1)
			sk_check_eq "stockade-$img: skopeo picks linux/$arch" "$arch/linux" "$got"
		done
		# What docs/install.md does to a registry, done to another layout: every architecture, same digest.
		if skopeo copy -q --all --preserve-digests "oci:$layout:$VERSION" "oci:$SK_TMP/copy-$img:$VERSION" \
			>"$SK_TMP/copy.log" 2>&1; then
			sk_check_eq "stockade-$img: skopeo copy --all keeps the index digest" \
				"$(index_digest "$layout")" "$(index_digest "$SK_TMP/copy-$img")"
		else
			sk_fail "stockade-$img: skopeo copy --all" "$(cat "$SK_TMP/copy.log")"
		fi
	done
}

# Prints each ELF file under $1 whose machine is not $2 (readelf's name), and "none" when there is no ELF.
foreign_elves() {
	local root=$1 machine=$2 f n=0 m
	while IFS= read -r f; do
		m=$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p')
		[ -n "$m" ] || continue
		n=$((n + 1))
		[ "$m" = "$machine" ] || echo "${f#"$root"/}: $m"
	done < <(find "$root" -type f)
	[ "$n" -gt 0 ] || echo none
}

# vname IMAGE — the program name its binary's --version prints (the installer is stockade-policy under
# another file name).
vname() { if [ "$1" = installer ]; then echo stockade-policy; else echo "stockade-$1"; fi; }

t_arm64_binaries() {
	local img root out
	for img in "${IMAGES[@]}"; do
		root=$SK_TMP/rootfs/$img/arm64
		sk_check_eq "stockade-$img arm64: every ELF file is AArch64" "" "$(foreign_elves "$root" AArch64)"
		sk_check "stockade-$img arm64: file(1) says ARM aarch64" \
			grep -q 'ELF 64-bit LSB pie executable, ARM aarch64' <<<"$(file "$root/usr/local/bin/stockade-$img")"
		root=$SK_TMP/rootfs/$img/amd64
		sk_check_eq "stockade-$img amd64: every ELF file is x86-64" "" \
			"$(foreign_elves "$root" "Advanced Micro Devices X86-64")"
		out=$("$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/lib/x86_64-linux-gnu" \
			"$root/usr/local/bin/stockade-$img" --version 2>&1)
		sk_check "stockade-$img amd64: --version with the image's loader and libraries ($out)" \
			grep -q "^$(vname "$img") $VERSION " <<<"$out"
	done
}

# Runs an arm64 program of image $1 under qemu-user, its loader and libraries those of the image (-L: the
# emulated program's absolute paths are looked up in the image's rootfs first).
qemu_run() {
	local root=$SK_TMP/rootfs/$1/arm64; shift
	timeout 60 qemu-aarch64 -L "$root" "$@"
}

t_arm64_under_qemu() {
	local img root out probe curl_inc
	if ! command -v qemu-aarch64 >/dev/null; then
		sk_fail "qemu-aarch64 installed (Debian's qemu-user: scripts/install-deps)"
		return
	fi
	for img in "${IMAGES[@]}"; do
		root=$SK_TMP/rootfs/$img/arm64
		out=$(qemu_run "$img" "$root/usr/local/bin/stockade-$img" --version 2>&1)
		sk_check "stockade-$img arm64: --version under qemu-aarch64 ($out)" grep -q "^$(vname "$img") $VERSION " <<<"$out"
	done
	root=$SK_TMP/rootfs/policy/arm64
	out=$(qemu_run policy "$root/usr/local/bin/stockade-policy" check policy/examples/agent.yaml 2>&1)
	sk_check_eq "stockade-policy arm64: check policy/examples/agent.yaml under qemu" \
		"policy/examples/agent.yaml: ok (8 rules, mode enforce)" "$out"
	out=$(qemu_run policy "$root/usr/local/bin/stockade-policy" check helm/tests/values/bad-policy-host-url.yaml 2>&1)
	sk_check_eq "stockade-policy arm64: an invalid policy exits 3 under qemu, as natively" \
		"$(build/bin/stockade-policy check helm/tests/values/bad-policy-host-url.yaml >/dev/null 2>&1; echo $?)" \
		"$(qemu_run policy "$root/usr/local/bin/stockade-policy" check helm/tests/values/bad-policy-host-url.yaml >/dev/null 2>&1; echo $?)"
	# The arm64 sidecar image's libcurl, loaded by dlopen as the sidecar does, under its own loader.
	curl_inc=$(dirname "$(scripts/build-curl --host aarch64-linux-gnu 2>/dev/null)")/include
	probe=$SK_TMP/curl_probe.arm64
	if ! aarch64-linux-gnu-gcc -std=c11 -O1 -Wall -Wextra -Werror -I"$curl_inc" -o "$probe" \
		e2e/images/curl_probe.c >"$SK_TMP/probe.log" 2>&1; then
		sk_fail "arm64 curl probe builds" "$(cat "$SK_TMP/probe.log")"
		return
	fi
	out=$(qemu_run sidecar "$probe" 2>&1)
	echo "arm64 image libcurl: $out"
	sk_check "sidecar arm64: libcurl loads, TLS through OpenSSL" grep -q ' ssl=OpenSSL/' <<<"$out"
	sk_check "sidecar arm64: libcurl HTTP/2 (nghttp2)" grep -Eq ' http2=yes nghttp2=[0-9]' <<<"$out"
	sk_check_eq "sidecar arm64: libcurl protocols http and https only" "http,https" "${out##*protocols=}"
}

# The checks above can fail: an SBOM missing one library of the layer, or naming a wrong digest, is caught;
# gen-sbom refuses a library that no Debian package owns and that is not the built libcurl; the license
# mapping turns Debian's copyright names into SPDX expressions, and an unknown name into NOASSERTION.
t_sbom_negative() {
	local sbom=$REL/sbom/stockade-sidecar.spdx.json out
	/usr/bin/python3 - "$sbom" "$SK_TMP/bad1.spdx.json" "$SK_TMP/bad2.spdx.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
libssl = next(f for f in doc["files"] if f["fileName"].endswith("/libssl.so.3"))
d1 = dict(doc, files=[f for f in doc["files"] if f is not libssl],
          relationships=[r for r in doc["relationships"] if r["relatedSpdxElement"] != libssl["SPDXID"]])
json.dump(d1, open(sys.argv[2], "w"))
for c in libssl["checksums"]:
    if c["algorithm"] == "SHA256":
        c["checksumValue"] = "0" * 64
json.dump(doc, open(sys.argv[3], "w"))
PY
	out=$(/usr/bin/python3 e2e/release/check_release.py "$REL/oci/stockade-sidecar" "$SK_TMP/bad1.spdx.json" \
		"$VERSION" "$SK_TMP/neg1" "${ARCHES[@]}" 2>&1)
	sk_check "an SBOM without libssl.so.3 fails the layer check" grep -q "^FAIL .*listed with its SHA256.*missing \[.*libssl.so.3" <<<"$out"
	out=$(/usr/bin/python3 e2e/release/check_release.py "$REL/oci/stockade-sidecar" "$SK_TMP/bad2.spdx.json" \
		"$VERSION" "$SK_TMP/neg2" "${ARCHES[@]}" 2>&1)
	sk_check "an SBOM with a wrong libssl.so.3 digest fails the layer check" grep -q "^FAIL .*wrong digest \[.*libssl.so.3" <<<"$out"
	# A library no package owns (a copy of libyaml outside dpkg's paths).
	mkdir -p "$SK_TMP/stray"
	cp /usr/lib/x86_64-linux-gnu/libyaml-0.so.2 "$SK_TMP/stray/libyaml-0.so.2"
	/usr/bin/python3 - "$REL/stage/amd64/stockade-policy.sources.json" "$SK_TMP/stray" >"$SK_TMP/stray.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc["files"].values():
    if f["source"].endswith("/libyaml-0.so.2"):
        f["source"] = sys.argv[2] + "/libyaml-0.so.2"
json.dump(doc, sys.stdout)
PY
	out=$(scripts/gen-sbom --name x --version "$VERSION" --index-digest sha256:00 --created 1970-01-01T00:00:00Z \
		-o "$SK_TMP/stray.spdx.json" "$SK_TMP/stray.json" 2>&1)
	sk_check "gen-sbom refuses a library no Debian package owns ($out)" grep -q "stray/libyaml-0.so.2.*no Debian package owns it" <<<"$out"
	out=$(/usr/bin/python3 - <<'PY'
import importlib.machinery, os, tempfile
gen = importlib.machinery.SourceFileLoader("gen_sbom", "scripts/gen-sbom").load_module()
fmt = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
       "Files: debian/*\nLicense: GPL-3+\n\nFiles: *\nCopyright: x\nLicense: %s\n text\n")
for lic in ("GPL-2+ or LGPL-2.1+", "BSD-3-clause and Expat", "Apache-2.0, MIT", "SomethingElse"):
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(fmt % lic)
    print("%s => %s" % (lic, gen.copyright_license(f.name)[0]))
    os.unlink(f.name)
PY
)
	sk_check_eq "gen-sbom maps Debian license names to SPDX expressions" \
		"GPL-2+ or LGPL-2.1+ => GPL-2.0-or-later OR LGPL-2.1-or-later
BSD-3-clause and Expat => BSD-3-Clause AND MIT
Apache-2.0, MIT => Apache-2.0 AND MIT
SomethingElse => NOASSERTION" "$out"
}

# What docs/install.md does: push every layout to a registry with skopeo (Debian's docker-registry, run here
# on a loopback port with its storage in SK_TMP), then read the tag and the pinned digest back from it.
t_registry_push() {
	local reg port img layout digest raw got t0=$SECONDS
	reg=$(command -v docker-registry) || { sk_fail "docker-registry installed (scripts/install-deps)"; return; }
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf 'version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: "127.0.0.1:%s"}\n' \
		"$SK_TMP/registry" "$port" >"$SK_TMP/registry.yml"
	"$reg" serve "$SK_TMP/registry.yml" >"$SK_TMP/registry.log" 2>&1 &
	REGISTRY_PID=$!
	local deadline=$((SECONDS + 20))
	until curl -sf -o /dev/null "http://127.0.0.1:$port/v2/"; do
		if [ $SECONDS -ge "$deadline" ] || ! kill -0 "$REGISTRY_PID" 2>/dev/null; then
			sk_fail "registry on 127.0.0.1:$port" "$(cat "$SK_TMP/registry.log")"
			return
		fi
		sleep 0.2
	done
	for img in "${IMAGES[@]}"; do
		layout=$REL/oci/stockade-$img
		digest=$(index_digest "$layout")
		if ! skopeo copy -q --all --preserve-digests --dest-tls-verify=false "oci:$layout:$VERSION" \
			"docker://127.0.0.1:$port/stockade-$img:$VERSION" >"$SK_TMP/push.log" 2>&1; then
			sk_fail "stockade-$img: skopeo copy --all to a registry" "$(cat "$SK_TMP/push.log")"
			continue
		fi
		raw=$(skopeo inspect --raw --tls-verify=false "docker://127.0.0.1:$port/stockade-$img:$VERSION" 2>&1)
		sk_check_eq "stockade-$img: the registry serves the tag as the layout's index" \
			"$(cat "$layout/blobs/sha256/${digest#sha256:}")" "$raw"
		got=$(skopeo inspect --tls-verify=false --override-arch arm64 --format '{{.Architecture}}' \
			"docker://127.0.0.1:$port/stockade-$img@$digest" 2>&1)
		sk_check_eq "stockade-$img: pulled by the pinned digest, arm64 picked from the index" arm64 "$got"
	done
	kill "$REGISTRY_PID" 2>/dev/null
	wait "$REGISTRY_PID" 2>/dev/null
	REGISTRY_PID=""
	sk_pass "registry push and pull-by-digest done ($((SECONDS - t0)) s)"
}

# The packaged chart's file $2 (Chart.yaml, values.yaml) of chart $1.
chart_file() { tar -xOzf "$REL/charts/$1-$VERSION.tgz" "$1/$2"; }

t_one_version() {
	local chart ver app out
	for chart in helm/*/Chart.yaml; do
		chart=$(basename "$(dirname "$chart")")
		if [ ! -s "$REL/charts/$chart-$VERSION.tgz" ]; then
			sk_fail "chart $chart packaged as $chart-$VERSION.tgz" "$(ls "$REL/charts")"
			continue
		fi
		ver=$(chart_file "$chart" Chart.yaml | sed -n 's/^version: *//p')
		app=$(chart_file "$chart" Chart.yaml | sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}/\1/p')
		sk_check_eq "chart $chart: version and appVersion are the release version" "$VERSION $VERSION" "$ver $app"
	done
	out=$(build/bin/stockade-policy --version)
	sk_check_eq "stockade-policy --version is the release version" "$VERSION" "$(awk '{print $2}' <<<"$out")"
	check_rendered stockade "packaged chart: images tagged with the release version" \
		"localhost/stockade-%s:$VERSION%.0s" init sidecar policy
	[ ! -d helm/stockade-system ] || check_rendered stockade-system \
		"packaged chart: images tagged with the release version" "localhost/stockade-%s:$VERSION%.0s" installer injector
}

# check_rendered CHART NAME FORMAT IMAGE... — every image of ours the packaged CHART renders (default
# values, and stockade-system's optional injector on) is printf FORMAT IMAGE-NAME INDEX-DIGEST (%.0s drops
# the digest), and each IMAGE is among them.
check_rendered() {
	local chart=$1 name=$2 format=$3 out img got want bad="" missing="" n=0 set=()
	shift 3
	[ "$chart" != stockade-system ] || set=(--set injector.enabled=true)
	out=$("$HELM" template t "$REL/charts/$chart-$VERSION.tgz" --kube-version 1.34.0 "${set[@]}" 2>&1 |
		sed -n 's/^ *image: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' | sort -u)
	for img in "${IMAGES[@]}"; do
		got=$(grep -E "/stockade-${img}[@:]" <<<"$out")
		[ -n "$got" ] || continue
		n=$((n + 1))
		# shellcheck disable=SC2059 # the format is the caller's
		want=$(printf "$format" "$img" "$(index_digest "$REL/oci/stockade-$img")")
		[ "$got" = "$want" ] || bad+="$got (expected $want) "
	done
	sk_check_eq "$chart: $name ($n of ours rendered)" "" "$bad"
	for img in "$@"; do grep -qE "/stockade-${img}[@:]" <<<"$out" || missing+="$img "; done
	sk_check_eq "$chart: $name: $* rendered" "" "$missing"
}

# make verify-release: passes with the release's key; fails with another key, and after any change to a
# blob, to the chart package or to what a tag names.
t_signatures() {
	local out copy f
	if out=$(make -s verify-release BUILD="$BUILD" SK_VERIFY_KEY="$SK_TMP/key.pub.pem" 2>&1); then
		sk_pass "verify-release with the release key ($(grep -c '^ok ' <<<"$out") checks)"
	else sk_fail "verify-release with the release key" "$(grep FAIL <<<"$out" | head -5)"; fi
	if make -s verify-release BUILD="$BUILD" SK_VERIFY_KEY= >/dev/null 2>&1; then
		sk_fail "verify-release without a key is a usage error"
	else sk_pass "verify-release without a key is a usage error"; fi
	if make -s verify-release BUILD="$BUILD" SK_VERIFY_KEY="$SK_TMP/other.pub.pem" >/dev/null 2>&1; then
		sk_fail "verify-release accepts another key"
	else sk_pass "verify-release refuses another key"; fi
	sk_check "the chart is an OCI artifact in the layout, tagged $VERSION" /usr/bin/python3 -c '
import json, sys
i = json.load(open(sys.argv[1] + "/index.json"))
assert any(m.get("annotations", {}).get("org.opencontainers.image.ref.name") == sys.argv[2] for m in i["manifests"])' \
		"$REL/oci/charts/stockade" "$VERSION"
	tamper() { # NAME, then a command run in the copy's directory: verify-release must fail
		local name=$1; shift
		copy=$SK_TMP/tampered && rm -rf "$copy" && mkdir -p "$copy" && cp -r "$REL" "$copy/release"
		(cd "$copy/release" && "$@") || { sk_fail "tamper: $name (the change itself failed)"; return; }
		if /usr/bin/python3 scripts/release-oci verify --key "$SK_TMP/key.pub.pem" "$copy/release" >"$SK_TMP/tamper.out" 2>&1
		then sk_fail "verify-release accepts $name"; else sk_pass "verify-release refuses $name: $(grep -m1 FAIL "$SK_TMP/tamper.out" | cut -c1-100)"; fi
	}
	f=$(find "$REL/oci/stockade-sidecar/blobs/sha256" -type f -printf '%f\n' | sort | head -1)
	tamper "a changed blob" sh -c "printf x >>oci/stockade-sidecar/blobs/sha256/$f"
	tamper "a changed chart package" sh -c 'printf x >>charts/stockade-'"$VERSION"'.tgz'
	tamper "a tag moved to an unsigned index" /usr/bin/python3 -c '
import hashlib, json
p = "oci/stockade-policy/index.json"; i = json.load(open(p))
b = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}).encode()
d = hashlib.sha256(b).hexdigest(); open("oci/stockade-policy/blobs/sha256/" + d, "wb").write(b)
i["manifests"][0].update(digest="sha256:" + d, size=len(b)); json.dump(i, open(p, "w"))'
	tamper "a signature dropped" /usr/bin/python3 -c '
import json
p = "oci/charts/stockade/index.json"; i = json.load(open(p))
i["manifests"] = [m for m in i["manifests"] if m.get("artifactType") != "application/vnd.dev.cosign.artifact.sig.v1+json"]
json.dump(i, open(p, "w"))'
	rm -rf "$copy"
}

t_pinned_and_reproducible() {
	local t0=$SECONDS
	if ! RELEASE_REPO=registry.example/acme RELEASE_PIN_DIGESTS=1 make -s release BUILD="$BUILD" \
		>"$SK_TMP/release2.log" 2>&1; then
		sk_fail "make release RELEASE_PIN_DIGESTS=1" "$(tail -20 "$SK_TMP/release2.log")"
		return
	fi
	sk_pass "make release again, pinning digests ($((SECONDS - t0)) s)"
	sk_check "a second build gives the same digests (reproducible)" cmp -s "$SK_TMP/digests.first" "$REL/digests.txt"
	check_rendered stockade "pinned chart: images are REPO/stockade-NAME@<index digest>" \
		"registry.example/acme/stockade-%s@%s" init sidecar policy
	[ ! -d helm/stockade-system ] || check_rendered stockade-system \
		"pinned chart: images are REPO/stockade-NAME@<index digest>" "registry.example/acme/stockade-%s@%s" installer injector
}

SK_CASES=(layouts_and_sboms sbom_negative skopeo registry_push arm64_binaries arm64_under_qemu one_version
	signatures pinned_and_reproducible)
sk_main "$@"
