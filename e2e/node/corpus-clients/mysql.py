"""python3 mysql.py HOST PORT — the start of a MySQL client session (server-first): read the server's
handshake v10 greeting, send a handshake response, read the OK packet. Prints "mysql <version> ok"."""
import socket
import struct
import sys

s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)


def read_packet():
    head = b""
    while len(head) < 4:
        b = s.recv(4 - len(head))
        if not b:
            raise SystemExit("mysql: connection closed")
        head += b
    n = head[0] | head[1] << 8 | head[2] << 16
    body = b""
    while len(body) < n:
        b = s.recv(n - len(body))
        if not b:
            raise SystemExit("mysql: connection closed")
        body += b
    return head[3], body


seq, greet = read_packet()
if greet[0] != 10:
    raise SystemExit(f"mysql: not a v10 handshake: {greet[:8]!r}")
version = greet[1:greet.index(b"\0", 1)].decode()
resp = struct.pack("<IIB", 0x000fa685, 1 << 24, 33) + b"\0" * 23 + b"agent\0" + b"\0"
s.sendall(struct.pack("<I", len(resp))[:3] + bytes([seq + 1]) + resp)
_, ok = read_packet()
if ok[0] != 0:
    raise SystemExit(f"mysql: no OK packet: {ok[:8]!r}")
print(f"mysql {version} ok")
