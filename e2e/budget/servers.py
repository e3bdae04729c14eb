#!/usr/bin/env python3
"""Test servers for e2e/budget.test.sh (exfiltration budgets). Run in the "internet" netns;
stdlib only.

  servers.py --log FILE --http IP:PORT [--dns IP:PORT --zone SUFFIX=IP]...

--http: plain HTTP/1.1, one request per connection. POST/PUT with Content-Length: reads the body and
  answers 200 "got N". GET /big?n=N: answers 200 with an N-byte body. Anything else: 200 "ok HOST".
  When a connection ends (complete, reset or cut short) one JSON line goes to FILE:
  {"kind": "http", "host": ..., "method": ..., "path": ..., "received": BYTES, "complete": BOOL} — received
  counts every byte read from the connection, head included, so a check can prove how much got through.
--dns: UDP, answers A for any name ending in a --zone SUFFIX with its IP (TTL 600), NXDOMAIN otherwise;
  logs {"kind": "dns", "name": ...} for every query it receives (what left the pod)."""
import argparse
import json
import socket
import struct
import sys
import threading

LOCK = threading.Lock()
LOGF = None


def log(obj):
    with LOCK:
        with open(LOGF, "a") as f:
            f.write(json.dumps(obj) + "\n")


def serve_http(conn):
    conn.settimeout(30)
    buf = b""
    received = 0
    rec = {"kind": "http", "host": None, "method": None, "path": None, "received": 0, "complete": False}
    try:
        while b"\r\n\r\n" not in buf:
            d = conn.recv(65536)
            if not d:
                return
            received += len(d)
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        hdr = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdr[k.strip().lower()] = v.strip()
        rec.update(host=hdr.get("host"), method=method, path=path)
        if method in ("POST", "PUT"):
            want = int(hdr.get("content-length", "0"))
            got = len(body)
            while got < want:
                d = conn.recv(1 << 20)
                if not d:
                    return
                received += len(d)
                got += len(d)
            out = ("got %d\n" % got).encode()
        elif path.startswith("/big?n="):
            n = int(path.split("=", 1)[1])
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            chunk = b"x" * 65536
            left = n
            while left > 0:
                conn.sendall(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))
            rec["complete"] = True
            return
        else:
            out = ("ok %s\n" % rec["host"]).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(out) + out)
        rec["complete"] = True
    except (OSError, ValueError, IndexError):
        pass
    finally:
        rec["received"] = received
        log(rec)
        try:
            conn.close()
        except OSError:
            pass


def http_listener(addr):
    host, port = addr.rsplit(":", 1)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host.strip("[]"), int(port)))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_http, args=(c,), daemon=True).start()


def qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels).lower(), off
        labels.append(msg[off:off + n].decode("latin-1"))
        off += n


def dns_server(addr, zones):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, int(port)))
    while True:
        msg, peer = s.recvfrom(4096)
        try:
            qid, flags, qd = struct.unpack("!HHH", msg[:6])
            name, off = qname(msg, 12)
            qtype, qclass = struct.unpack("!HH", msg[off:off + 4])
        except (struct.error, IndexError):
            continue
        log({"kind": "dns", "name": name, "qtype": qtype})
        question = msg[12:off + 4]
        ip = None
        for suf, a in zones:
            if name == suf or name.endswith("." + suf):
                ip = a
        rcode = 0 if ip else 3
        an = 1 if (ip and qtype == 1) else 0
        resp = struct.pack("!HHHHHH", qid, 0x8400 | (flags & 0x0100) | rcode, 1, an, 0, 0) + question
        if an:
            resp += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 600, 4) + socket.inet_aton(ip)
        s.sendto(resp, peer)


def main():
    global LOGF
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--http", action="append", default=[])
    ap.add_argument("--dns")
    ap.add_argument("--zone", action="append", default=[])
    a = ap.parse_args()
    LOGF = a.log
    open(LOGF, "a").close()
    for h in a.http:
        threading.Thread(target=http_listener, args=(h,), daemon=True).start()
    if a.dns:
        zones = [tuple(z.split("=", 1)) for z in a.zone]
        threading.Thread(target=dns_server, args=(a.dns, zones), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
