#!/usr/bin/env python3
"""mesh_proxy.py PORT LOG — a stand-in for a mesh's outbound proxy (Envoy behind istio-iptables' REDIRECT,
linkerd-proxy behind proxy-init): accepts what the mesh's nat redirect sends to PORT, reads the original
destination (SO_ORIGINAL_DST), appends "DST_IP:DST_PORT" to LOG and relays both ways to
that destination. It runs as the mesh's UID, which the mesh's redirect skips, so its own connection out is
not redirected again."""
import socket
import struct
import sys
import threading

SO_ORIGINAL_DST = 80


def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def handle(c, log):
    try:
        raw = c.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        port = struct.unpack_from("!H", raw, 2)[0]
        ip = socket.inet_ntoa(raw[4:8])
        with open(log, "a", encoding="utf-8") as f:
            f.write("%s:%d\n" % (ip, port))
        u = socket.create_connection((ip, port), timeout=5)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pipe, args=(u, c), daemon=True)
    t.start()
    pipe(c, u)
    t.join()
    c.close()
    u.close()


def main():
    port, log = int(sys.argv[1]), sys.argv[2]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, log), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
