#!/usr/bin/env python3
"""Test servers for e2e/proxy.test.sh and bench/proxy (run in the "internet" netns).

  servers.py --files DIR [--tls IP:PORT:CERT:KEY]... [--http IP:PORT]... [--echo IP:PORT]...

HTTP(S): GET /ok -> "ok\n"; GET /<file> -> DIR/<file>; POST /sha -> hex sha256 of the body.
Echo: a raw TCP echo (asyncio, so a thousand connections cost no threads).
The TLS handshake runs in the handler thread, so a stalled client never blocks accept."""
import argparse
import asyncio
import hashlib
import http.server
import os
import socket
import socketserver
import ssl
import sys
import threading


def split_hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    files = "."

    def log_message(self, *a):
        pass

    def _send(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/ok":
            return self._send(200, b"ok\n")
        path = os.path.join(self.files, os.path.basename(self.path))
        if not os.path.isfile(path):
            return self._send(404, b"no\n")
        size = os.path.getsize(path)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        with open(path, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                self.wfile.write(b)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        h = hashlib.sha256()
        while n > 0:
            b = self.rfile.read(min(n, 1 << 20))
            if not b:
                break
            h.update(b)
            n -= len(b)
        self._send(200, (h.hexdigest() + "\n").encode())


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024
    tls = None

    def __init__(self, addr, family, tls):
        self.address_family = family
        self.tls = tls
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        if self.tls:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


async def echo(reader, writer):
    try:
        while True:
            b = await reader.read(65536)
            if not b:
                break
            writer.write(b)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def echo_main(addrs):
    servers = []
    for host, port in addrs:
        servers.append(await asyncio.start_server(echo, host, port, backlog=4096, reuse_address=True))
    await asyncio.gather(*(s.serve_forever() for s in servers))


def dns_answer(q, records):
    """A tiny authoritative answer: A/AAAA from records {name: [ip...]}, NXDOMAIN for unknown names."""
    qid, qd = q[:2], q[12:]
    labels, i = [], 0
    while qd[i]:
        labels.append(qd[i + 1:i + 1 + qd[i]].decode().lower())
        i += 1 + qd[i]
    qname_wire = qd[:i + 1]
    qtype = int.from_bytes(qd[i + 1:i + 3], "big")
    name = ".".join(labels)
    want = socket.AF_INET if qtype == 1 else socket.AF_INET6 if qtype == 28 else None
    ips = records.get(name)
    answers = []
    for ip in ips or []:
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        if fam == want:
            rd = socket.inet_pton(fam, ip)
            answers.append(b"\xc0\x0c" + qtype.to_bytes(2, "big") + b"\x00\x01" + (60).to_bytes(4, "big")
                           + len(rd).to_bytes(2, "big") + rd)
    rcode = 0 if ips is not None else 3
    hdr = qid + bytes([0x84 | (q[2] & 1), 0x80 | rcode]) + b"\x00\x01" + len(answers).to_bytes(2, "big") + b"\x00\x00\x00\x00"
    return hdr + qname_wire + qd[i + 1:i + 5] + b"".join(answers)


def dns_serve(host, port, records):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((host, port))
    while True:
        q, peer = s.recvfrom(4096)
        try:
            s.sendto(dns_answer(q, records), peer)
        except (IndexError, ValueError):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default=".")
    ap.add_argument("--tls", action="append", default=[])
    ap.add_argument("--http", action="append", default=[])
    ap.add_argument("--echo", action="append", default=[])
    ap.add_argument("--dns", action="append", default=[], help="IP:PORT (UDP), answering --record")
    ap.add_argument("--record", action="append", default=[], help="NAME=IP")
    a = ap.parse_args()
    Handler.files = a.files
    threads = []
    for spec in a.tls:
        hp, cert, key = spec.rsplit(":", 2)
        host, port = split_hostport(hp)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        threads.append(Server((host, port), fam, ctx))
    for spec in a.http:
        host, port = split_hostport(spec)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        threads.append(Server((host, port), fam, None))
    for s in threads:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    records = {}
    for r in a.record:
        n, ip = r.split("=", 1)
        records.setdefault(n.lower(), []).append(ip)
    for spec in a.dns:
        host, port = split_hostport(spec)
        threading.Thread(target=dns_serve, args=(host, port, records), daemon=True).start()
    print("ready", flush=True)
    if a.echo:
        asyncio.run(echo_main([split_hostport(e) for e in a.echo]))
    else:
        threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
