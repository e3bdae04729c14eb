#!/usr/bin/env python3
"""e2e/cni_apiserver.py — the fake Kubernetes API server of e2e/cni.test.sh: HTTPS on 127.0.0.1 with the
suite's test CA, answering GET /api/v1/namespaces/NS/pods/NAME from DIR/NS/NAME.json and
/api/v1/namespaces/NS/configmaps/NAME from DIR/NS/configmaps/NAME.json for the bearer token TOKEN (401
otherwise, 404 for an unknown object). Writes the port it listens on to PORTFILE.

usage: cni_apiserver.py CERT KEY TOKEN DIR PORTFILE"""
import http.server
import os
import re
import ssl
import sys

CERT, KEY, TOKEN, DIR, PORTFILE = sys.argv[1:6]
PATH_RE = re.compile(r"^/api/v1/namespaces/([a-z0-9.-]+)/(pods|configmaps)/([a-z0-9.-]+)$")


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.answer(401, '{"kind":"Status","message":"Unauthorized"}')
            return
        m = PATH_RE.match(self.path)
        sub = "" if m and m.group(2) == "pods" else "configmaps"
        f = os.path.join(DIR, m.group(1), sub, m.group(3) + ".json") if m else None
        if not f or not os.path.exists(f):
            self.answer(404, '{"kind":"Status","message":"%s \\"%s\\" not found"}' % (m.group(2), m.group(3)) if m else "{}")
            return
        with open(f, encoding="utf-8") as fh:
            self.answer(200, fh.read())

    def log_message(self, fmt, *args):
        sys.stderr.write("apiserver: " + (fmt % args) + "\n")


srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(PORTFILE + ".tmp", "w", encoding="utf-8") as fh:
    fh.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
