#!/usr/bin/env python3
"""Raw TCP roles for e2e/dns.test.sh (ssh-like traffic that is neither TLS nor HTTP).

  raw.py serve LOG ADDR:PORT...   servers that speak first ("SSH-2.0-stockade-test"), then echo lines;
                                  every accepted connection appends "ADDR:PORT" to LOG
  raw.py ssh NAME PORT            resolve NAME with getaddrinfo (glibc, so through the pod's resolver),
                                  connect, wait for the server's banner, send a line, read its echo
  raw.py ssh-client-first NAME PORT   the same, but the client sends its own banner before reading"""
import socket
import sys
import threading
import time

BANNER = b"SSH-2.0-stockade-test\r\n"


def serve(log, addrs):
    lock = threading.Lock()

    def handle(c, where):
        with lock, open(log, "a", encoding="ascii") as f:
            f.write(where + "\n")
        try:
            c.sendall(BANNER)
            while True:
                b = c.recv(4096)
                if not b:
                    break
                c.sendall(b)
        except OSError:
            pass
        c.close()

    def run(addr):
        host, port = addr.rsplit(":", 1)
        host = host.strip("[]")
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        s.listen(64)
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c, addr), daemon=True).start()

    for a in addrs:
        threading.Thread(target=run, args=(a,), daemon=True).start()
    while True:
        time.sleep(3600)


def recv_until(s, want):
    got = b""
    while not got.endswith(want):
        b = s.recv(4096)
        if not b:
            break
        got += b
    return got


def ssh(name, port, client_first):
    ai = socket.getaddrinfo(name, int(port), socket.AF_INET, socket.SOCK_STREAM)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(ai[0][4])
    if client_first:
        mine = b"SSH-2.0-agent\r\n"
        s.sendall(mine)
        got = recv_until(s, BANNER + mine)   # the server's banner, then our bytes echoed
        ok = got == BANNER + mine
    else:
        got = recv_until(s, BANNER)
        s.sendall(b"ping\n")
        got += recv_until(s, b"ping\n")
        ok = got == BANNER + b"ping\n"
    print("ok" if ok else "bad: %r" % got)
    return 0 if ok else 1


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    try:
        if cmd == "serve":
            serve(args[0], args[1:])
        if cmd == "ssh":
            return ssh(args[0], args[1], False)
        if cmd == "ssh-client-first":
            return ssh(args[0], args[1], True)
    except OSError as e:
        print("error: %s" % e)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
