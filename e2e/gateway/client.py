#!/usr/bin/env python3
"""e2e/gateway/client.py — agent-side helpers for e2e/gateway.test.sh.

  sse HOST PORT TARGET      GET TARGET, print one line per SSE event: "<arrival s since request> <server ts>"
  raw HOST PORT BYTES       send BYTES (Python escapes like \\r\\n allowed), print the response status line
  keepalive HOST PORT TARGET SECONDS
                            GET TARGET on a keep-alive connection, print the status line at once, then hold
                            the connection idle up to SECONDS; print "closed <s>" when the gateway closes it
                            (s since the response), or "open" if it never did
"""
import socket
import sys
import time


def sse(host, port, target):
    s = socket.create_connection((host, int(port)), timeout=20)
    t0 = time.time()
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n".encode())
    buf = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        now = time.time()
        buf += b
        # Each "data: <ts>" line is reported with the time its bytes arrived here.
        while b"data: " in buf:
            i = buf.index(b"data: ")
            j = buf.find(b"\n", i)
            if j < 0:
                break
            print(f"{now - t0:.3f} {buf[i + 6:j].decode()}", flush=True)
            buf = buf[j + 1:]
    return 0


def raw(host, port, data):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(data.encode().decode("unicode_escape").encode("latin-1"))
    out = b""
    try:
        while b"\r\n" not in out:
            b = s.recv(4096)
            if not b:
                break
            out += b
    except OSError:
        pass
    print(out.split(b"\r\n")[0].decode(errors="replace"))
    return 0


def keepalive(host, port, target, seconds):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    out = b""
    while b"\r\n\r\n" not in out:
        b = s.recv(4096)
        if not b:
            break
        out += b
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    n = next((int(v) for k, _, v in (ln.partition(":") for ln in lines[1:]) if k.lower() == "content-length"), 0)
    while len(body) < n:
        b = s.recv(4096)
        if not b:
            break
        body += b
    print(lines[0], flush=True)
    t0 = time.time()
    s.settimeout(float(seconds))
    try:
        while s.recv(4096):
            pass
        print(f"closed {time.time() - t0:.2f}", flush=True)
    except socket.timeout:
        print("open", flush=True)
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "keepalive":
        sys.exit(keepalive(*sys.argv[2:6]))
    sys.exit(sse(*sys.argv[2:5]) if cmd == "sse" else raw(*sys.argv[2:5]))
