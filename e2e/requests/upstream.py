#!/usr/bin/env python3
"""upstream.py LOG IP:PORT... — a GitHub-like plain-HTTP/1.1 upstream for e2e/requests.test.sh: answers
every method on every path with 200 "ok METHOD TARGET", keeps connections alive, and appends each request
line it receives ("METHOD TARGET Host") to LOG, so a suite can show a denied request never arrived."""
import http.server
import socket
import socketserver
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


def main():
    Handler.log_path = sys.argv[1]
    servers = []
    for spec in sys.argv[2:]:
        host, port = spec.rsplit(":", 1)
        Server.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        servers.append(Server((host.strip("[]"), int(port)), Handler))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
