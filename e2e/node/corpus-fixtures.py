#!/usr/bin/env python3
"""e2e/node/corpus-fixtures.py ROOT TAG — what the corpus's servers serve, made at test time under ROOT:
  www/simple/corpus-pkg/         a PEP 503 simple index naming a wheel built here (pure Python, zipfile)
  www/simple/corpus-sdist/       ... and an sdist whose build backend is in-tree (no build requirement
                                 to fetch), for `pip download --no-binary :all:`
  www/npm/corpus-npm-pkg/        an npm registry packument (index.json) and its tarball under -/
  www/hello.txt, www/page.html   pages for the HTTP clients and the browser
  git/corpus.git                 a bare repository with one commit, push allowed (http.receivepack)
TAG goes into every payload so a client's output proves it got this run's file."""
import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def wheel(root, tag):
    name, ver = "corpus_pkg", "1.0.0"
    files = {
        f"{name}/__init__.py": f'VALUE = "wheel-{tag}"\n',
        f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: corpus-pkg\nVersion: {ver}\n",
        f"{name}-{ver}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: corpus-fixtures\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for p, d in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(d.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{p},sha256={h},{len(d.encode())}")
    record.append(f"{name}-{ver}.dist-info/RECORD,,")
    files[f"{name}-{ver}.dist-info/RECORD"] = "\n".join(record) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            z.writestr(zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0)), d)
    fn = f"{name}-{ver}-py3-none-any.whl"
    return fn, buf.getvalue()


BACKEND = '''"""In-tree PEP 517 backend: metadata only (pip download needs no more), no build requirement."""
import os


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = "corpus_sdist-1.0.0.dist-info"
    os.makedirs(os.path.join(metadata_directory, d), exist_ok=True)
    with open(os.path.join(metadata_directory, d, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: corpus-sdist\\nVersion: 1.0.0\\n")
    return d


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("corpus-sdist: download only")
'''


def sdist(tag):
    top = "corpus_sdist-1.0.0"
    files = {
        "PKG-INFO": "Metadata-Version: 2.1\nName: corpus-sdist\nVersion: 1.0.0\n",
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": BACKEND,
        "corpus_sdist.py": f'VALUE = "sdist-{tag}"\n',
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p, d in files.items():
            info = tarfile.TarInfo(f"{top}/{p}")
            info.size, info.mtime, info.mode = len(d.encode()), 0, 0o644
            t.addfile(info, io.BytesIO(d.encode()))
    return f"{top}.tar.gz", buf.getvalue()


def simple_index(root, project, fn, data):
    sha = hashlib.sha256(data).hexdigest()
    write(f"{root}/www/packages/{fn}", data)
    write(f"{root}/www/simple/{project}/index.html",
          f'<!DOCTYPE html><html><body><a href="/packages/{fn}#sha256={sha}">{fn}</a></body></html>\n')


def npm(root, tag):
    name, ver = "corpus-npm-pkg", "1.0.0"
    files = {
        "package/package.json": json.dumps({"name": name, "version": ver, "main": "index.js"}),
        "package/index.js": f'module.exports = "npm-{tag}";\n',
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p, d in files.items():
            info = tarfile.TarInfo(p)
            info.size, info.mtime, info.mode = len(d.encode()), 0, 0o644
            t.addfile(info, io.BytesIO(d.encode()))
    tgz = buf.getvalue()
    fn = f"{name}-{ver}.tgz"
    write(f"{root}/www/npm/{name}/-/{fn}", tgz)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    doc = {"name": name, "dist-tags": {"latest": ver},
           "versions": {ver: {"name": name, "version": ver, "main": "index.js",
                              "dist": {"tarball": f"https://npm.corpus.test/npm/{name}/-/{fn}",
                                       "shasum": hashlib.sha1(tgz).hexdigest(), "integrity": integrity}}}}
    write(f"{root}/www/npm/{name}/index.json", json.dumps(doc))


def git(root, tag):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=root, GIT_AUTHOR_NAME="corpus",
               GIT_AUTHOR_EMAIL="corpus@corpus.test", GIT_COMMITTER_NAME="corpus",
               GIT_COMMITTER_EMAIL="corpus@corpus.test")
    bare, work = f"{root}/git/corpus.git", f"{root}/git-work"

    def run(*a):
        subprocess.run(a, env=env, check=True, capture_output=True)
    run("git", "init", "-q", "--bare", "-b", "main", bare)
    run("git", "-C", bare, "config", "http.receivepack", "true")
    run("git", "init", "-q", "-b", "main", work)
    write(f"{work}/README", f"git-{tag}\n")
    run("git", "-C", work, "add", "README")
    run("git", "-C", work, "commit", "-qm", "first")
    run("git", "-C", work, "push", "-q", bare, "main")


def main():
    root, tag = sys.argv[1], sys.argv[2]
    simple_index(root, "corpus-pkg", *wheel(root, tag))
    simple_index(root, "corpus-sdist", *sdist(tag))
    write(f"{root}/www/simple/index.html",
          '<!DOCTYPE html><html><body><a href="corpus-pkg/">corpus-pkg</a> <a href="corpus-sdist/">corpus-sdist</a></body></html>\n')
    npm(root, tag)
    write(f"{root}/www/hello.txt", f"hello-{tag}\n")
    write(f"{root}/www/page.html", f"<!DOCTYPE html><html><head><title>corpus</title></head>"
          f"<body><p id=m>page-{tag}</p></body></html>\n")
    git(root, tag)


if __name__ == "__main__":
    main()
