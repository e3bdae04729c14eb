#!/usr/bin/env python3
"""e2e/gateway/client.py — agent-side helpers for e2e/gateway.test.sh.

  sse HOST PORT TARGET      GET TARGET, print one line per SSE event: "<arrival s since request> <server ts>"
  raw HOST PORT BYTES       send BYTES (Python escapes like \\r\\n allowed), print the response status line
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


if __name__ == "__main__":
    cmd = sys.argv[1]
    sys.exit(sse(*sys.argv[2:5]) if cmd == "sse" else raw(*sys.argv[2:5]))
