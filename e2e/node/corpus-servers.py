#!/usr/bin/env python3
"""e2e/node/corpus-servers.py ROOT CERTPREFIX ADDR... — the test internet of the workload corpus
(e2e/node/corpus), run inside the corpus's own network namespace on the node's pod bridge. On every ADDR:
  443   HTTPS (CERTPREFIX.crt/.key, a certificate for *.corpus.test from the run's CA): /git/<repo> is
        git's smart-HTTP backend (git http-backend as a CGI, repositories under ROOT/git, push allowed);
        every other path is a file under ROOT/www (a directory answers its index.html or index.json):
        the pip simple index, the npm registry's packument and tarball, the pages of the HTTP clients
  80    the same over plain HTTP
  3306  a server-first TCP server speaking the start of MySQL's protocol: it greets (handshake v10),
        reads the client's handshake response and answers OK
  2525  a minimal SMTP server (greets first; EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT); each message
        is logged as "smtp message from=... to=... bytes=N subject=..."
Every connection is logged on stdout ("conn KIND ADDR:PORT from SRC ...") so the corpus can tell what
reached a server; keep-alive connections stay open as long as the client keeps them (the pool case).
"""
import http.server
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import urllib.parse

ROOT = ""


def log(*a):
    print(*a, flush=True)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


TYPES = {".json": "application/json", ".html": "text/html", ".txt": "text/plain",
         ".whl": "application/octet-stream", ".tgz": "application/octet-stream",
         ".gz": "application/gzip"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    kind = "http"
    addr = ""

    def log_message(self, fmt, *args):  # noqa: D102 - one line per request in _serve
        pass

    def _serve(self):
        host = self.headers.get("Host", "")
        log(f"conn {self.kind} {self.addr} from {self.client_address[0]}:{self.client_address[1]} "
            f"{self.command} {self.path} host={host} ua={self.headers.get('User-Agent', '')[:60]}")
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/git/"):
            return self._git()
        body = b""
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            body = self.rfile.read(n)
        if path == "/echo":
            return self._send(200, "text/plain", f"echo {self.command} {len(body)} host={host}\n".encode())
        rel = os.path.normpath(urllib.parse.unquote(path)).lstrip("/")
        f = os.path.join(ROOT, "www", rel)
        if rel.startswith("..") or not f.startswith(os.path.join(ROOT, "www")):
            return self._send(404, "text/plain", b"no\n")
        if os.path.isdir(f):
            for idx in ("index.html", "index.json"):
                if os.path.isfile(os.path.join(f, idx)):
                    f = os.path.join(f, idx)
                    break
        if not os.path.isfile(f):
            return self._send(404, "text/plain", b"not found\n")
        with open(f, "rb") as fh:
            data = fh.read()
        self._send(200, TYPES.get(os.path.splitext(f)[1], "application/octet-stream"), data)

    def _send(self, code, ctype, data, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _git(self):
        # git http-backend as a CGI: the request body (gzip or not, it decodes itself) on stdin, the CGI
        # answer's headers turned into an HTTP response with a Content-Length (keep-alive stays possible).
        u = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(n) if n else b""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": os.path.join(ROOT, "git"),
               "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command, "PATH_INFO": u.path[len("/git"):],
               "QUERY_STRING": u.query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "corpus", "REMOTE_ADDR": self.client_address[0],
               "GIT_CONFIG_NOSYSTEM": "1", "HOME": ROOT}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        r = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, data = r.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, data = r.stdout.partition(b"\n\n")
        code, extra, ctype = 200, [], "application/octet-stream"
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            v = v.strip()
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k.lower() == "content-type":
                ctype = v
            elif k:
                extra.append((k, v))
        if r.returncode != 0 and not r.stdout:
            log(f"git http-backend failed: {r.stderr.decode(errors='replace')[:200]}")
            return self._send(500, "text/plain", b"git http-backend failed\n")
        self._send(code, ctype, data, extra)

    do_GET = do_POST = do_HEAD = do_PUT = _serve


class Threaded(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, fam):
        self.address_family = fam
        super().__init__(addr, handler)


def serve_http(kind, addr, port, cert):
    handler = type("H", (Handler,), {"kind": kind, "addr": f"{addr}:{port}"})
    srv = Threaded((addr, port), handler, family(addr))
    if kind == "https":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert + ".crt", cert + ".key")
        ctx.set_alpn_protocols(["http/1.1"])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
        inner = srv.finish_request

        def finish(request, client_address):
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError) as e:
                log(f"conn https {addr}:{port} from {client_address[0]} handshake failed: {e}")
                return
            inner(request, client_address)
        srv.finish_request = finish
    srv.serve_forever()


def mysql_packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def mysql_conn(c, addr, src):
    # Handshake v10: protocol 10, version, connection id, auth data, capabilities, charset, status.
    greet = (b"\x0a" + b"8.0.0-corpus\x00" + struct.pack("<I", 7) + b"abcdefgh\x00" +
             struct.pack("<H", 0xf7ff) + b"\x21" + struct.pack("<H", 2) + struct.pack("<H", 0x81ff) +
             b"\x15" + b"\x00" * 10 + b"ijklmnopqrst\x00" + b"mysql_native_password\x00")
    c.sendall(mysql_packet(0, greet))
    head = c.recv(4)
    if len(head) < 4:
        log(f"mysql {addr} from {src}: no handshake response")
        return
    n = head[0] | head[1] << 8 | head[2] << 16
    body = b""
    while len(body) < n:
        chunk = c.recv(n - len(body))
        if not chunk:
            break
        body += chunk
    user = body[32:].split(b"\x00", 1)[0].decode(errors="replace") if len(body) > 32 else ""
    log(f"mysql {addr} from {src}: handshake response user={user}")
    c.sendall(mysql_packet(head[3] + 1, b"\x00\x00\x00\x02\x00\x00\x00"))


def smtp_conn(c, addr, src):
    f = c.makefile("rb")

    def say(s):
        c.sendall(s.encode() + b"\r\n")
    say("220 smtp.corpus.test ESMTP corpus")
    mail_from, rcpt = "", []
    while True:
        line = f.readline()
        if not line:
            return
        cmd = line.decode(errors="replace").strip()
        verb = cmd.split(" ", 1)[0].upper()
        if verb == "EHLO":
            c.sendall(b"250-smtp.corpus.test\r\n250-8BITMIME\r\n250 SIZE 1000000\r\n")
        elif verb == "HELO":
            say("250 smtp.corpus.test")
        elif verb == "MAIL":
            mail_from, rcpt = cmd.split(":", 1)[1].strip(), []
            say("250 OK")
        elif verb == "RCPT":
            rcpt.append(cmd.split(":", 1)[1].strip())
            say("250 OK")
        elif verb == "DATA":
            say("354 end with <CRLF>.<CRLF>")
            data, subject = b"", ""
            while True:
                ln = f.readline()
                if not ln or ln in (b".\r\n", b".\n"):
                    break
                data += ln
                if ln.lower().startswith(b"subject:"):
                    subject = ln[8:].strip().decode(errors="replace")
            log(f"smtp message from={mail_from} to={','.join(rcpt)} bytes={len(data)} subject={subject}")
            say("250 OK queued")
        elif verb in ("RSET", "NOOP"):
            say("250 OK")
        elif verb == "QUIT":
            say("221 bye")
            return
        else:
            say("502 not implemented")


def serve_tcp(kind, addr, port, fn):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)

    def one(c, src):
        try:
            fn(c, f"{addr}:{port}", src)
        except OSError as e:
            log(f"{kind} {addr}:{port} from {src}: {e}")
        finally:
            c.close()
    while True:
        c, a = s.accept()
        log(f"conn {kind} {addr}:{port} from {a[0]}")
        threading.Thread(target=one, args=(c, a[0]), daemon=True).start()


def main():
    global ROOT
    ROOT, cert, addrs = sys.argv[1], sys.argv[2], sys.argv[3:]
    threads = []
    for addr in addrs:
        for args in ((serve_http, ("https", addr, 443, cert)), (serve_http, ("http", addr, 80, cert)),
                     (serve_tcp, ("mysql", addr, 3306, mysql_conn)), (serve_tcp, ("smtp", addr, 2525, smtp_conn))):
            t = threading.Thread(target=args[0], args=args[1], daemon=True)
            t.start()
            threads.append(t)
    log("servers up")
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
