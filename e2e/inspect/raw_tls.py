#!/usr/bin/env python3
"""raw_tls.py HOST PORT CAFILE — sends stdin's bytes (\\n written as CRLF) in one write on one TLS
connection (verified against CAFILE, ALPN http/1.1), then prints everything the server answers until it
closes or 3 s pass quietly: pipelined and smuggled requests on one keep-alive connection, as written."""
import socket
import ssl
import sys


def main():
    data = sys.stdin.read().replace("\n", "\r\n").encode()
    ctx = ssl.create_default_context(cafile=sys.argv[3])
    ctx.set_alpn_protocols(["http/1.1"])
    raw = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname=sys.argv[1])
    s.settimeout(3)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    sys.stdout.write(out.decode("latin-1"))


if __name__ == "__main__":
    sys.exit(main())
