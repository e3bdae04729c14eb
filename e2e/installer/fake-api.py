#!/usr/bin/python3
"""A Kubernetes API server stand-in for e2e/installer.test.sh: answers GET /api/v1/configmaps over HTTPS like
the real one (ConfigMapList pages chained by metadata.continue, a Status on refusal), from files the test
rewrites between rounds.

usage: fake-api.py DIR CERT KEY TOKEN
  DIR/pages.json   a list of pages, each a list of ConfigMap objects (re-read on every request)
  DIR/status       when present: its first line is the HTTP status to refuse with (e.g. 403)
  DIR/port         written once listening (127.0.0.1, an ephemeral port)
  DIR/requests     one line per request: the path and query
Requests without "Authorization: Bearer TOKEN" get 401; a labelSelector other than
stockade.dev/seccomp-profile=true gets 400 (the installer must ask for the label, not list everything)."""
import json
import os
import ssl
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

DIR, CERT, KEY, TOKEN = sys.argv[1:5]


def status(code, message):
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        with open(os.path.join(DIR, "requests"), "a") as f:
            f.write(self.path + "\n")
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return status(401, "Unauthorized")
        if os.path.exists(os.path.join(DIR, "status")):
            code = int(open(os.path.join(DIR, "status")).readline())
            return status(code, 'configmaps is forbidden: User "system:serviceaccount:stockade-system:x" '
                                'cannot list resource "configmaps" in API group "" at the cluster scope')
        if url.path != "/api/v1/configmaps":
            return status(404, "the server could not find the requested resource")
        if q.get("labelSelector") != ["stockade.dev/seccomp-profile=true"]:
            return status(400, "unexpected labelSelector %r" % q.get("labelSelector"))
        pages = json.load(open(os.path.join(DIR, "pages.json")))
        cont = q.get("continue", ["p0"])[0]
        i = int(cont[1:])
        meta = {"resourceVersion": "7"}
        if i + 1 < len(pages):
            meta["continue"] = "p%d" % (i + 1)
        return 200, {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": pages[i] if pages else []}

    def do_GET(self):
        code, body = self.answer()
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


srv = HTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
srv.serve_forever()
