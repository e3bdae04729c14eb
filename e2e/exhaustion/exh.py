#!/usr/bin/env python3
"""Helpers for e2e/exhaustion.test.sh (a sidecar out of file descriptors). Every mode is bounded.

  exh.py server ADDR PORT
      echo server (internet netns): accepts every connection, echoes what arrives, holds it until the
      peer closes.
  exh.py hold ADDR PORT N RELEASE SECS
      (agent) open N connections at once, send one line on each, hold them all; prints
      "connected C/N" once the connects have settled (all done, or 5 s), then closes everything when the
      file RELEASE exists or after SECS seconds, and prints "released".
  exh.py probe ADDR PORT KIND COUNT SECS
      open COUNT connections to a sidecar port and send one request on each: KIND admin (GET /healthz),
      gateway (GET /nope/x) or dns (a TCP DNS query for held.example A). Waits up to SECS seconds for the
      answers; prints one line per connection: "<answer> <seconds> <epoch>" (seconds after the start, and the
      wall-clock time of the answer), answer being the HTTP status, "dns:<rcode>" or "none" (no answer in
      time) / "closed" (closed unanswered) / "connect-error".
  exh.py echo ADDR PORT
      one connection, one line; exit 0 when it comes back (5 s)."""
import os
import selectors
import socket
import struct
import sys
import time


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def cmd_server(addr, port):
    sel = selectors.DefaultSelector()
    ls = socket.socket(family(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(4096)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s is ls:
                try:
                    c, _ = ls.accept()
                except OSError:
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                b = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                b = b""
            if not b:
                sel.unregister(s)
                s.close()
                continue
            try:
                s.send(b)
            except OSError:
                pass


def cmd_hold(addr, port, n, release, secs):
    n, deadline = int(n), time.monotonic() + float(secs)
    sel = selectors.DefaultSelector()
    socks, pending, connected = [], 0, 0
    for _ in range(n):
        s = socket.socket(family(addr), socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((addr, int(port)))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        socks.append(s)
        sel.register(s, selectors.EVENT_WRITE)
        pending += 1
    settle = time.monotonic() + 5
    reported = False
    while time.monotonic() < deadline and not os.path.exists(release):
        if not reported and (pending == 0 or time.monotonic() >= settle):
            print("connected %d/%d" % (connected, n), flush=True)
            reported = True
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            sel.unregister(s)
            pending -= 1
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected += 1
                try:
                    s.send(b"hold\n")
                except OSError:
                    pass
    if not reported:
        print("connected %d/%d" % (connected, n), flush=True)
    for s in socks:
        s.close()
    print("released", flush=True)
    return 0


def dns_query():
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    for label in b"held.example".split(b"."):
        q += bytes([len(label)]) + label
    q += b"\x00" + struct.pack(">HH", 1, 1)
    return struct.pack(">H", len(q)) + q


REQUESTS = {
    "admin": b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n",
    "gateway": b"GET /nope/x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
}


def answer(kind, data):
    if kind == "dns":
        if len(data) < 6:
            return None
        return "dns:%d" % (data[5] & 0x0F)   # data[2:] is the message; flags at [4:6], RCODE low 4 bits
    if b"\r\n" not in data:
        return None
    parts = data.split(b"\r\n", 1)[0].split()
    return parts[1].decode("ascii", "replace") if len(parts) > 1 else "garbled"


def cmd_probe(addr, port, kind, count, secs):
    req = dns_query() if kind == "dns" else REQUESTS[kind]
    t0, t0_wall = time.monotonic(), time.time()
    deadline = t0 + float(secs)
    sel = selectors.DefaultSelector()
    results, bufs = {}, {}
    socks = []
    for i in range(int(count)):
        s = socket.socket(family(addr), socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((addr, int(port)))
        except BlockingIOError:
            pass
        socks.append(s)
        bufs[s] = b""
        sel.register(s, selectors.EVENT_WRITE, i)
    while len(results) < len(socks) and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=0.05):
            s, i = key.fileobj, key.data
            if ev & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    results[i] = ("connect-error", time.monotonic() - t0)
                    sel.unregister(s)
                    continue
                try:
                    s.send(req)   # small: fits the socket buffer in one go
                except OSError:
                    results[i] = ("closed", time.monotonic() - t0)
                    sel.unregister(s)
                    continue
                sel.modify(s, selectors.EVENT_READ, i)
                continue
            try:
                b = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                b = b""
            if b:
                bufs[s] += b
            a = answer(kind, bufs[s])
            if a is not None or not b:
                results[i] = (a or "closed", time.monotonic() - t0)
                sel.unregister(s)
    for i, s in enumerate(socks):
        r = results.get(i, ("none", time.monotonic() - t0))
        print("%s %.2f %.3f" % (r[0], r[1], t0_wall + r[1]))
        s.close()
    return 0


def cmd_echo(addr, port):
    s = socket.create_connection((addr, int(port)), timeout=5)
    s.sendall(b"echo me\n")
    got = b""
    while len(got) < 8:
        b = s.recv(100)
        if not b:
            break
        got += b
    return 0 if got == b"echo me\n" else 1


def main(argv):
    cmds = {"server": cmd_server, "hold": cmd_hold, "probe": cmd_probe, "echo": cmd_echo}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return cmds[argv[1]](*argv[2:])
    except (OSError, socket.timeout) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
