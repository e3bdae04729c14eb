#!/usr/bin/env python3
"""ws_client.py HOST PATH CAFILE MSG... — a websocket client over TLS (verified against CAFILE, ALPN
http/1.1), written with the standard library alone: the RFC 6455 handshake (it checks the server's
Sec-WebSocket-Accept), then each MSG sent as a masked text frame and its echo read back, then a close.
Prints "status CODE" and one "echo TEXT" line per frame received; exit 1 when the handshake fails."""
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise EOFError("closed")
        out += b
    return out


def main():
    host, path, cafile, msgs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=10), server_hostname=host)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, host, key)).encode())
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            b = s.recv(1)
            if not b:
                break
            head += b
    except (OSError, ssl.SSLError):
        pass
    status = head.split(b" ", 2)[1].decode() if head.count(b" ") >= 2 else "none"
    print("status", status)
    if status != "101":
        sys.stdout.write(head.decode("latin-1"))
        try:
            sys.stdout.write(s.recv(65536).decode("latin-1"))
        except (OSError, ssl.SSLError):
            pass
        return 1
    want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    if b"sec-websocket-accept: " + want.lower() not in head.lower():
        print("bad accept")
        return 1
    for m in msgs + [None]:
        data, op = (m.encode(), 1) if m is not None else (struct.pack("!H", 1000), 8)
        mask = os.urandom(4)
        s.sendall(bytes([0x80 | op, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        hdr = recv_exact(s, 2)
        payload = recv_exact(s, hdr[1] & 0x7F)
        if hdr[0] & 0x0F == 1:
            print("echo", payload.decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
