#!/usr/bin/env python3
"""raw.py HOST PORT — sends stdin's bytes (\\n written as CRLF) on one connection in one write, then
prints everything the server answers until it closes (or 10 s pass): pipelined and smuggled requests
on one keep-alive connection, exactly as written."""
import socket
import sys


def main():
    data = sys.stdin.read().replace("\n", "\r\n").encode()
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    sys.stdout.write(out.decode("latin-1"))


if __name__ == "__main__":
    sys.exit(main())
