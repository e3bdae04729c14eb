#!/usr/bin/env python3
"""e2e/node/servers.py SPEC... — the test servers of e2e/node/test, run inside the test's own network
namespace on the node's pod bridge. Each SPEC is KIND:ADDR:PORT[:CERTPREFIX]:
  http    HTTP/1.1; answers "<ADDR> http <path>" (the test checks which server a pod reached)
  https   the same over TLS with CERTPREFIX.crt/.key (SNI is ignored: one name per address)
  echo    HTTPS for the API gateway case: 200 "authorized <method> <path>" when the x-api-key header
          equals the content of CERTPREFIX.key-expected, 401 otherwise; never echoes the header itself
  tcp     raw TCP: writes "<ADDR> tcp" and closes
  udp     logs every datagram's source, answers "<ADDR> udp"
Every connection and datagram is logged on stdout as "conn KIND ADDR:PORT from SRC" so the test can tell
whether anything at all reached a server that must be unreachable.
"""
import http.server
import socket
import socketserver
import ssl
import sys
import threading


def log(*a):
    print(*a, flush=True)


class Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    kind = "http"
    addr = ""
    expected_key = None

    def log_message(self, fmt, *args):  # noqa: D102 - logged by handle_one_request below
        pass

    def _answer(self):
        log(f"conn {self.kind} {self.addr} from {self.client_address[0]} {self.command} {self.path} "
            f"host={self.headers.get('Host', '')}")
        if self.kind == "echo":
            got = self.headers.get("x-api-key")
            if got is not None and got == self.expected_key:
                code, body = 200, f"authorized {self.command} {self.path}\n"
            else:
                code, body = 401, "missing or wrong key\n"
        else:
            code, body = 200, f"{self.addr} {self.kind} {self.path}\n"
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_PUT = _answer


class Threaded(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, family):
        self.address_family = family
        super().__init__(addr, handler)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve_http(kind, addr, port, cert):
    handler = type("H", (Quiet,), {"kind": kind, "addr": addr})
    if kind == "echo":
        with open(cert + ".key-expected", encoding="ascii") as f:
            handler.expected_key = f.read().strip()
    srv = Threaded((addr, port), handler, family(addr))
    if kind in ("https", "echo"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert + ".crt", cert + ".key")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
        inner = srv.finish_request

        def finish(request, client_address):
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError) as e:
                log(f"conn {kind} {addr}:{port} from {client_address[0]} handshake failed: {e}")
                return
            inner(request, client_address)
        srv.finish_request = finish
        orig_get = srv.get_request

        def get_request():
            s, a = orig_get()
            log(f"conn {kind} {addr}:{port} from {a[0]} accepted")
            return s, a
        srv.get_request = get_request
    srv.serve_forever()


def serve_tcp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    while True:
        c, a = s.accept()
        log(f"conn tcp {addr}:{port} from {a[0]}")
        try:
            c.sendall(f"{addr} tcp\n".encode())
        except OSError:
            pass
        c.close()


def serve_udp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        _, a = s.recvfrom(65535)
        log(f"conn udp {addr}:{port} from {a[0]}")
        s.sendto(f"{addr} udp\n".encode(), a)


def main():
    threads = []
    for spec in sys.argv[1:]:
        # An IPv6 address holds colons: KIND:[ADDR]:PORT[:CERT].
        kind, rest = spec.split(":", 1)
        if rest.startswith("["):
            addr, rest = rest[1:].split("]:", 1)
        else:
            addr, rest = rest.split(":", 1)
        port, _, cert = rest.partition(":")
        port = int(port)
        if kind in ("http", "https", "echo"):
            t = threading.Thread(target=serve_http, args=(kind, addr, port, cert), daemon=True)
        elif kind == "tcp":
            t = threading.Thread(target=serve_tcp, args=(addr, port), daemon=True)
        elif kind == "udp":
            t = threading.Thread(target=serve_udp, args=(addr, port), daemon=True)
        else:
            sys.exit(f"servers.py: unknown kind {kind}")
        t.start()
        threads.append(t)
    log("servers up")
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
