#!/usr/bin/env python3
"""upstream.py LOG IP:PORT:CERT:KEY... — an HTTPS/1.1 upstream for e2e/inspect.test.sh: on each address,
TLS with that certificate (ALPN http/1.1), every method on every path answered 200 "ok METHOD TARGET",
connections kept alive; each request line it receives ("METHOD TARGET Host") is appended to LOG, so the
suite can show a denied request never arrived."""
import http.server
import socket
import socketserver
import ssl
import sys
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = ""
    lock = threading.Lock()

    def log_message(self, fmt, *args):
        pass

    def handle_any(self):
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write("%s %s %s\n" % (self.command, self.path, self.headers.get("Host", "")))
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = ("ok %s %s\n" % (self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ctx = None

    def get_request(self):
        sock, addr = self.socket.accept()
        try:
            return self.ctx.wrap_socket(sock, server_side=True), addr
        except (ssl.SSLError, OSError):
            sock.close()
            raise


def main():
    Handler.log_path = sys.argv[1]
    servers = []
    for spec in sys.argv[2:]:
        host, port, cert, key = spec.split(":")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["http/1.1"])
        srv = Server((host, int(port)), Handler)
        srv.ctx = ctx
        servers.append(srv)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
