#!/usr/bin/python3
"""e2e/release.test.sh's structural checks of one image's release artifacts, each printed as one line
"ok <name>" or "FAIL <name>: <why>" (the suite counts them):

  the OCI image layout (image-layout spec): oci-layout, index.json naming the version, every blob's name is
  the sha256 of its bytes, every descriptor's size and media type right, exactly the expected platforms,
  each config's architecture and os those of its platform, each diff_id the sha256 of the ungzipped
  layer, no blob that nothing references; besides the image index only referrers: the SBOM artifact (subject
  the image index) and signatures, each subject a manifest of the layout;
  the SPDX 2.3 document: the fields the spec requires at each level, unique and well-formed SPDXIDs, every
  relationship naming defined elements, SHA1 on every file, purls on Debian packages, every license id in
  SPDX's own list (Debian's node-spdx-license-ids);
  the SBOM against the layout: every regular file of each architecture's layer is a file of the SBOM with
  the same SHA256, every shared library is contained by a package of that architecture (a Debian package
  whose version dpkg reports installed, or scripts/build-curl's libcurl).

usage: check_release.py LAYOUT SBOM VERSION UNPACK_DIR ARCH...  (unpacks each ARCH's rootfs into
UNPACK_DIR/ARCH for the suite's ELF and qemu checks)"""
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
PLATFORMS = {"amd64": {"architecture": "amd64", "os": "linux"},
             "arm64": {"architecture": "arm64", "os": "linux", "variant": "v8"}}
LICENSE_IDS = "/usr/share/nodejs/spdx-license-ids/index.json"
results = []


def check(name, ok, why=""):
    results.append((name, bool(ok), why))
    return bool(ok)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def check_layout(layout, version, arches, unpack):
    """Returns {arch: {path: sha256}} of the regular files of each architecture's layer."""
    blobdir = os.path.join(layout, "blobs", "sha256")
    tag = os.path.basename(layout.rstrip("/"))
    try:
        check("%s: oci-layout" % tag,
              json.load(open(os.path.join(layout, "oci-layout"))) == {"imageLayoutVersion": "1.0.0"})
        top = json.load(open(os.path.join(layout, "index.json")))
    except (OSError, ValueError) as e:
        check("%s: oci-layout and index.json readable" % tag, False, str(e))
        return {}
    names = sorted(os.listdir(blobdir))
    bad = [n for n in names if sha256(open(os.path.join(blobdir, n), "rb").read()) != n]
    check("%s: every blob's name is its sha256 (%d blobs)" % (tag, len(names)), not bad, " ".join(bad))
    referenced = set()

    def blob(desc, media_type):
        digest = desc.get("digest", "")
        if desc.get("mediaType") != media_type or not digest.startswith("sha256:"):
            check("%s: descriptor %s is %s" % (tag, digest, media_type), False, json.dumps(desc))
            return None
        path = os.path.join(blobdir, digest[len("sha256:"):])
        if not os.path.exists(path):
            check("%s: blob %s present" % (tag, digest), False)
            return None
        data = open(path, "rb").read()
        if len(data) != desc.get("size"):
            check("%s: blob %s size" % (tag, digest), False, "%d != %s" % (len(data), desc.get("size")))
            return None
        referenced.add(digest[len("sha256:"):])
        return data

    # One image index, tagged; every other entry is an OCI 1.1 referrer (scripts/release-oci: the SBOM
    # artifact, signatures) whose subject is a manifest of this layout, its blobs present and sized.
    entries = top.get("manifests", [])
    images = [d for d in entries if "artifactType" not in d]
    ok = check("%s: index.json holds one image index" % tag,
               top.get("schemaVersion") == 2 and len(images) == 1 and entries and entries[0] is images[0],
               json.dumps(top))
    if not ok:
        return {}
    desc = top["manifests"][0]
    subjects, referrers = set(), []
    for r in entries[1:]:
        data = blob(r, MT_MANIFEST)
        if data is None:
            continue
        man = json.loads(data)
        referrers.append(man)
        for d in [man.get("config", {})] + man.get("layers", []):
            blob(d, d.get("mediaType"))
        subjects.add(man.get("subject", {}).get("digest"))
    sbom_refs = [m for m in referrers if m.get("artifactType") == "application/spdx+json"]
    check("%s: the SBOM attached as an artifact whose subject is the image index" % tag,
          len(sbom_refs) == 1 and sbom_refs[0].get("subject", {}).get("digest") == desc.get("digest"),
          json.dumps([m.get("subject") for m in sbom_refs]))
    check("%s: tagged %s" % (tag, version),
          desc.get("annotations", {}).get("org.opencontainers.image.ref.name") == version, json.dumps(desc))
    data = blob(desc, MT_INDEX)
    if data is None:
        return {}
    index = json.loads(data)
    plats = [m.get("platform") for m in index.get("manifests", [])]
    want = [PLATFORMS[a] for a in arches]
    check("%s: index platforms %s" % (tag, " ".join(arches)),
          sorted(plats, key=json.dumps) == sorted(want, key=json.dumps), json.dumps(plats))
    out = {}
    for m in index.get("manifests", []):
        arch = m.get("platform", {}).get("architecture")
        data = blob(m, MT_MANIFEST)
        if data is None:
            continue
        man = json.loads(data)
        cdata = blob(man.get("config", {}), MT_CONFIG)
        if cdata is None:
            continue
        config = json.loads(cdata)
        check("%s %s: config platform" % (tag, arch),
              config.get("architecture") == arch and config.get("os") == "linux"
              and config.get("variant") == m["platform"].get("variant"),
              "%s/%s/%s" % (config.get("architecture"), config.get("os"), config.get("variant")))
        layers = [blob(ld, MT_LAYER) for ld in man.get("layers", [])]
        if None in layers or not layers:
            check("%s %s: layers present" % (tag, arch), False)
            continue
        raw = [gzip.decompress(x) for x in layers]
        check("%s %s: diff_ids are the ungzipped layers" % (tag, arch),
              ["sha256:" + sha256(x) for x in raw] == config.get("rootfs", {}).get("diff_ids"))
        files = {}
        root = os.path.join(unpack, arch)
        os.makedirs(root, exist_ok=True)
        for x in raw:
            with tarfile.open(fileobj=io.BytesIO(x)) as t:
                for member in t.getmembers():
                    if member.isfile():
                        files["/" + member.name.lstrip("./")] = sha256(t.extractfile(member).read())
                t.extractall(root)
        out[arch] = files
    known = referenced | {d[len("sha256:"):] for d in subjects if d}
    check("%s: every referrer's subject is a manifest of the layout" % tag, subjects <= {"sha256:" + n for n in referenced},
          " ".join(sorted(str(d) for d in subjects)))
    unref = sorted(set(names) - known)
    check("%s: no unreferenced blob" % tag, not unref, " ".join(unref))
    return out


def license_ids(expr):
    return [t for t in re.split(r"[\s()]+", expr) if t and t not in ("AND", "OR", "WITH")]


def check_sbom(path, version, layer_files):
    name = os.path.basename(path)
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        check("%s: JSON" % name, False, str(e))
        return
    check("%s: spdxVersion SPDX-2.3, dataLicense CC0-1.0, SPDXID SPDXRef-DOCUMENT" % name,
          doc.get("spdxVersion") == "SPDX-2.3" and doc.get("dataLicense") == "CC0-1.0"
          and doc.get("SPDXID") == "SPDXRef-DOCUMENT")
    ns = doc.get("documentNamespace", "")
    check("%s: name and documentNamespace (absolute URI, no #)" % name,
          doc.get("name") and re.match(r"^[a-z][a-z0-9+.-]*://[^#\s]+$", ns), ns)
    ci = doc.get("creationInfo", {})
    check("%s: creationInfo created and creators" % name,
          re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", ci.get("created", ""))
          and ci.get("creators") and all(re.match(r"^(Tool|Organization|Person): \S", c) for c in ci["creators"]),
          json.dumps(ci))
    ids = {}
    known_licenses = set(json.load(open(LICENSE_IDS))) if os.path.exists(LICENSE_IDS) else None
    check("%s: SPDX license list available (%s)" % (name, LICENSE_IDS), known_licenses is not None)
    problems = []
    for p in doc.get("packages", []):
        for field in ("SPDXID", "name", "downloadLocation", "versionInfo", "licenseConcluded", "licenseDeclared",
                      "copyrightText"):
            if not p.get(field):
                problems.append("package %s: no %s" % (p.get("name"), field))
        for field in ("licenseConcluded", "licenseDeclared"):
            for lid in license_ids(p.get(field, "")):
                if lid not in ("NOASSERTION", "NONE") and known_licenses is not None and lid not in known_licenses:
                    problems.append("package %s: %s %s is not an SPDX license id" % (p.get("name"), field, lid))
        for ref in p.get("externalRefs", []):
            if ref.get("referenceType") == "purl" and not re.match(r"^pkg:[a-z]+/\S+@\S+", ref.get("referenceLocator", "")):
                problems.append("package %s: bad purl %s" % (p.get("name"), ref.get("referenceLocator")))
        if p.get("SPDXID") in ids:
            problems.append("duplicate SPDXID %s" % p["SPDXID"])
        ids[p.get("SPDXID")] = p
    files = {}
    for f in doc.get("files", []):
        sums = {c.get("algorithm"): c.get("checksumValue") for c in f.get("checksums", [])}
        if not f.get("SPDXID") or not f.get("fileName", "").startswith("./"):
            problems.append("file %s: no SPDXID or fileName not ./..." % f.get("fileName"))
        if not re.match(r"^[0-9a-f]{40}$", sums.get("SHA1") or ""):
            problems.append("file %s: no SHA1" % f.get("fileName"))
        if f.get("SPDXID") in ids:
            problems.append("duplicate SPDXID %s" % f["SPDXID"])
        ids[f.get("SPDXID")] = f
        files[f.get("SPDXID")] = f
    bad_ids = [i for i in ids if not re.match(r"^SPDXRef-[A-Za-z0-9.-]+$", i or "")]
    if bad_ids:
        problems.append("malformed SPDXIDs: %s" % " ".join(map(str, bad_ids)))
    rels = doc.get("relationships", [])
    for r in rels:
        for end in (r.get("spdxElementId"), r.get("relatedSpdxElement")):
            if end != "SPDXRef-DOCUMENT" and end not in ids:
                problems.append("relationship %s names undefined %s" % (json.dumps(r), end))
    describes = [r for r in rels if r.get("spdxElementId") == "SPDXRef-DOCUMENT" and r.get("relationshipType") == "DESCRIBES"]
    if len(describes) != 1:
        problems.append("%d DESCRIBES relationships, expected 1" % len(describes))
    check("%s: SPDX 2.3 structure (%d packages, %d files, %d relationships)" % (
        name, len(doc.get("packages", [])), len(files), len(rels)), not problems, "; ".join(problems[:10]))

    container = {}   # file SPDXID -> the package that CONTAINS it
    image_of = {}    # package SPDXID -> the per-arch image that CONTAINS it
    for r in rels:
        if r.get("relationshipType") == "CONTAINS":
            if r["relatedSpdxElement"] in files:
                container[r["relatedSpdxElement"]] = r["spdxElementId"]
            else:
                image_of.setdefault(r["relatedSpdxElement"], r["spdxElementId"])
    for arch, layer in layer_files.items():
        # The image of that architecture: CONTAINed by the multi-arch image the document DESCRIBES.
        index_id = describes[0].get("relatedSpdxElement") if describes else None
        image_id = next((r["relatedSpdxElement"] for r in rels if r.get("spdxElementId") == index_id
                         and r.get("relationshipType") == "CONTAINS"
                         and ids.get(r["relatedSpdxElement"], {}).get("name", "").endswith("(linux/%s)" % arch)),
                        None)
        if not check("%s %s: an image package for linux/%s" % (name, arch, arch), image_id):
            continue
        # The files of this architecture: those whose container is the image or a package inside it.
        mine = {}
        for fid, f in files.items():
            owner = container.get(fid)
            if owner == image_id or image_of.get(owner) == image_id:
                mine[f["fileName"][1:]] = (f, owner)
        missing = [p for p in sorted(layer) if p not in mine]
        wrong = [p for p in sorted(layer) if p in mine and {c["algorithm"]: c["checksumValue"]
                 for c in mine[p][0]["checksums"]}.get("SHA256") != layer[p]]
        extra = [p for p in sorted(mine) if p not in layer]
        check("%s %s: every file of the layer listed with its SHA256 (%d files)" % (name, arch, len(layer)),
              not missing and not wrong and not extra,
              "missing %s; wrong digest %s; not in the layer %s" % (missing, wrong, extra))
        libs = [p for p in sorted(layer) if re.search(r"\.so(\.|$)", os.path.basename(p))]
        unowned, stale = [], []
        for p in libs:
            owner = ids.get(mine.get(p, (None, None))[1]) or {}
            purl = next((r["referenceLocator"] for r in owner.get("externalRefs", [])
                         if r.get("referenceType") == "purl"), "")
            m = re.match(r"^pkg:deb/debian/([^@]+)@[^?]+\?arch=([a-z0-9]+)", purl)
            if not m or (m.group(2) != arch and not (m.group(2) == "source" and owner.get("name") == "libcurl")):
                unowned.append("%s (%s)" % (p, purl or "no package"))
                continue
            if m.group(2) == arch:
                # The version dpkg has installed for that package and architecture, asked independently.
                r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "%s:%s" % (m.group(1), arch)],
                                   capture_output=True, text=True)
                if r.stdout != owner.get("versionInfo"):
                    stale.append("%s: %s, dpkg says %s" % (m.group(1), owner.get("versionInfo"), r.stdout))
        check("%s %s: every shared library (%d) in a Debian package of that architecture or the built libcurl" % (
            name, arch, len(libs)), libs and not unowned, "; ".join(unowned))
        check("%s %s: package versions are dpkg's" % (name, arch), not stale, "; ".join(stale))
    # Each Debian package (binary or the built libcurl) names the Debian source package it comes from.
    sources = {r["spdxElementId"]: ids.get(r["relatedSpdxElement"], {}) for r in rels
               if r.get("relationshipType") == "GENERATED_FROM"}
    nosrc = [p.get("name") for i, p in ids.items() if "SPDXRef-Package-" in (i or "")
             and any(r.get("referenceLocator", "").startswith("pkg:deb/") for r in p.get("externalRefs", []))
             and not any(r.get("referenceLocator", "").startswith("pkg:deb/debian/%s@" % sources.get(i, {}).get("name"))
                         and "arch=source" in r.get("referenceLocator", "")
                         for r in sources.get(i, {}).get("externalRefs", []))]
    check("%s: every Debian package GENERATED_FROM its source package" % name, not nosrc, " ".join(nosrc))


def main():
    layout, sbom, version, unpack = sys.argv[1:5]
    arches = sys.argv[5:]
    layer_files = check_layout(layout, version, arches, unpack)
    check_sbom(sbom, version, layer_files)
    for name, ok, why in results:
        print(("ok %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
