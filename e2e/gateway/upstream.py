#!/usr/bin/env python3
"""e2e/gateway/upstream.py — the HTTPS "API" behind the gateway in the e2e suite and bench/apigw.

  GET  /echo       JSON: method, path, the request headers as received (raw) and the sha256 of each value;
                   every request's headers are also appended as one JSON line to --log (the test reads
                   what really arrived from there, on the internet side)
  GET  /sse        text/event-stream, chunked: N events (?n=5) INTERVAL ms apart (?ms=300), each carrying
                   the server's send time
  ANY  /slow       sleeps ?s=5 seconds before the head
  POST /upload     reads the body (Content-Length or chunked) and answers {"sha256":..,"bytes":..}
  GET  /reflect    text/plain, chunked: "key=<x-api-key as received>;" written ?piece=7 bytes at a time with a
                   flush and ?ms=2 between pieces (so the key reaches the gateway split over many reads),
                   ?times=2 times; the key is also reflected in the X-Echo-Auth header
  GET  /gzecho     text/plain: "key=<x-api-key as received>;" then the request headers as JSON, served as an
                   HTTP server would: gzip-coded when Accept-Encoding names gzip, and the
                   part asked for by a "Range: bytes=N-[M]" (206, Content-Range); ?force= makes a misbehaving
                   upstream that does it unasked: gzip (Content-Encoding: gzip), te (Transfer-Encoding: gzip,
                   chunked), part (206 bytes 5- of the body, the key's first byte cut off)
  GET  /ok         "ok" (the bench)
  GET  /big        ?mb=N MiB of zero bytes with Content-Length (back-pressure)
Usage: upstream.py --addr IP --port N --cert PEM --key PEM --log FILE
"""
import argparse
import gzip
import hashlib
import json
import re
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the suite reads --log instead
        pass

    def _q(self):
        u = urlsplit(self.path)
        return u.path, {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}

    def _send(self, code, body, ctype="application/json", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    b = self.rfile.read(min(left, 65536))
                    if not b:
                        return
                    left -= len(b)
                    yield b
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        while n:
            b = self.rfile.read(min(n, 65536))
            if not b:
                return
            n -= len(b)
            yield b

    def handle_any(self):
        path, q = self._q()
        hdrs = [[k, v] for k, v in self.headers.items()]
        with LOCK, open(self.server.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "headers": hdrs}) + "\n")
        if path == "/echo" or path.startswith("/base/"):
            for _ in self._body():
                pass
            body = {"method": self.command, "path": self.path, "headers": hdrs,
                    "sha256": {k.lower(): hashlib.sha256(v.encode()).hexdigest() for k, v in hdrs}}
            extra = {"X-Echo-Auth": self.headers.get("x-api-key", "")}  # a reflected key, for redaction
            self._send(200, json.dumps(body).encode(), extra=extra)
        elif path == "/reflect":
            key = self.headers.get("x-api-key", "")
            piece, ms, times = int(q.get("piece", 7)), int(q.get("ms", 2)), int(q.get("times", 2))
            body = ("".join(f"key={key};" for _ in range(times)) + "end\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Echo-Auth", key)
            self.end_headers()
            for i in range(0, len(body), piece):
                b = body[i:i + piece]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.flush()
                if ms:
                    time.sleep(ms / 1000)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/gzecho":
            self._gzecho(q.get("force", ""))
        elif path == "/ok":
            self._send(200, b"ok")
        elif path == "/sse":
            n, ms = int(q.get("n", 5)), int(q.get("ms", 300))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for i in range(n):
                ev = f"id: {i}\ndata: {time.time():.3f}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                if i + 1 < n:
                    time.sleep(ms / 1000)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/slow":
            time.sleep(float(q.get("s", 5)))
            self._send(200, b"late")
        elif path == "/upload":
            h, n = hashlib.sha256(), 0
            for b in self._body():
                h.update(b)
                n += len(b)
            self._send(200, json.dumps({"sha256": h.hexdigest(), "bytes": n}).encode())
        elif path == "/big":
            mb = int(q.get("mb", 8))
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(mb << 20))
            self.end_headers()
            chunk = bytes(1 << 20)
            for _ in range(mb):
                self.wfile.write(chunk)
        else:
            self._send(404, b'{"error":"no such test endpoint"}')

    def _gzecho(self, force):
        key = self.headers.get("x-api-key", "")
        body = (f"key={key};" + json.dumps([[k, v] for k, v in self.headers.items()]) + "\n").encode()
        status, extra = 200, {"Content-Type": "text/plain"}
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "").strip())
        if force == "part":
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", "bytes=5-")
        if m and int(m.group(1)) < len(body):
            first = int(m.group(1))
            last = min(int(m.group(2)), len(body) - 1) if m.group(2) else len(body) - 1
            status, extra["Content-Range"] = 206, f"bytes {first}-{last}/{len(body)}"
            body = body[first:last + 1]
        # Accept-Encoding: does it name gzip with a q-value above 0?
        ae = {t.split(";")[0].strip().lower(): t for t in self.headers.get("Accept-Encoding", "").split(",")}
        if force == "gzip" or ("gzip" in ae and not re.search(r";\s*q=0(\.0*)?\s*$", ae["gzip"])):
            body, extra["Content-Encoding"] = gzip.compress(body), "gzip"
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        if force == "te":
            body = gzip.compress(body)
            self.send_header("Transfer-Encoding", "gzip, chunked")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class S(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, log, ctx):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.log = log
        self.ctx = ctx
        super().__init__(addr, H)

    def get_request(self):
        sock, peer = self.socket.accept()
        # Head and body go out in separate writes: without NODELAY, Nagle + delayed ACK add 40 ms each.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), peer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv = S((a.addr, a.port), a.log, ctx)
    print(f"listening {a.addr}:{a.port}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
