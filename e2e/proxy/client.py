#!/usr/bin/env python3
"""Agent-side probes for e2e/proxy.test.sh and bench/proxy (run as the agent UID in the pod netns).

  client.py rst HOST PORT            send a line; exit 0 if the connection is reset (or closed unanswered)
  client.py echo HOST PORT           send a line; exit 0 if it comes back
  client.py slowloris HOST PORT HEX  send HEX bytes and stall; print seconds until the proxy closed
  client.py many HOST PORT N         N concurrent echo connections held open together; print how many worked
  client.py hold HOST PORT N SECS    open N connections (one echo each) and hold them SECS seconds
  client.py tlslat HOST PORT NAME CA N   N sequential TLS connect+request+first-byte times; print p50/p99 us
  client.py hrrswitch HOST PORT HELLO NAME   send the ClientHello in file HELLO (SNI allowed.example, an
                                     X25519 key share only); on the server's HelloRetryRequest send a CCS and
                                     the same hello naming NAME (15 characters); print "hrr" or "no-hrr",
                                     then what came back: "alert:N" (the first alert's description), "eof",
                                     "reset" or "data" """
import asyncio
import socket
import ssl
import sys
import time


def conn(host, port, timeout=5):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect((host, int(port)))
    return s


def cmd_rst(host, port):
    try:
        s = conn(host, port)
        s.sendall(b"hi there\n")
        b = s.recv(100)
        print("eof" if not b else "data:%r" % b)
        return 0 if not b else 1
    except (ConnectionResetError, BrokenPipeError):
        print("reset")
        return 0
    except socket.timeout:
        print("timeout")
        return 1


def cmd_echo(host, port):
    s = conn(host, port)
    s.sendall(b"hello stockade\n")
    got = b""
    while len(got) < 15:
        b = s.recv(100)
        if not b:
            break
        got += b
    print(got)
    return 0 if got == b"hello stockade\n" else 1


def cmd_slowloris(host, port, hexbytes):
    s = conn(host, port, timeout=30)
    s.sendall(bytes.fromhex(hexbytes))
    t0 = time.monotonic()
    try:
        b = s.recv(100)
        how = "eof" if not b else "data"
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "timeout"
    print("%.3f %s" % (time.monotonic() - t0, how))
    return 0


async def one(host, port, i, barrier, results):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 20)
        msg = b"conn %d\n" % i
        w.write(msg)
        got = await asyncio.wait_for(r.readexactly(len(msg)), 20)
        ok = got == msg
        results.append(ok)
        await barrier.wait()
        w.close()
    except Exception as e:  # noqa: BLE001 - any failure counts as a failed connection
        results.append(False)
        print("conn %d: %r" % (i, e), file=sys.stderr)
        barrier.abort()


async def many(host, port, n):
    barrier = asyncio.Barrier(n)
    results = []
    await asyncio.gather(*(one(host, port, i, barrier, results) for i in range(n)), return_exceptions=True)
    return sum(1 for r in results if r)


def cmd_many(host, port, n):
    ok = asyncio.run(asyncio.wait_for(many(host, port, int(n)), 60))
    print(ok)
    return 0 if ok == int(n) else 1


def cmd_hold(host, port, n, secs):
    socks = []
    for i in range(int(n)):
        s = conn(host, port)
        # a leading NUL is no HTTP method prefix, so the proxy classifies it as plain TCP at once
        s.sendall(b"\x00x\n")
        got = b""
        while len(got) < 3:
            got += s.recv(3 - len(got))
        socks.append(s)
    print("holding %d" % len(socks), flush=True)
    time.sleep(float(secs))
    return 0


def cmd_tlslat(host, port, name, ca, n):
    ctx = ssl.create_default_context(cafile=ca)
    req = ("GET /ok HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name).encode()
    lat = []
    for _ in range(int(n)):
        t0 = time.perf_counter()
        s = conn(host, port)
        t = ctx.wrap_socket(s, server_hostname=name)
        t.sendall(req)
        t.recv(1)
        lat.append(time.perf_counter() - t0)
        t.close()
    lat.sort()
    p50 = lat[len(lat) // 2] * 1e6
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e6
    print("%.0f %.0f" % (p50, p99))
    return 0


HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def read_record(s):
    hdr = b""
    while len(hdr) < 5:
        b = s.recv(5 - len(hdr))
        if not b:
            return None
        hdr += b
    n = int.from_bytes(hdr[3:5], "big")
    body = b""
    while len(body) < n:
        b = s.recv(n - len(body))
        if not b:
            return None
        body += b
    return hdr[0], body


def cmd_hrrswitch(host, port, hello_file, name):
    hello = open(hello_file, "rb").read()
    assert len(name) == 15 and hello.count(b"allowed.example") == 1
    second = hello.replace(b"allowed.example", name.encode())
    s = conn(host, port)
    s.sendall(hello)
    rec = read_record(s)
    hrr = rec is not None and rec[0] == 0x16 and rec[1][:1] == b"\x02" and rec[1][6:38] == HRR_RANDOM
    print("hrr" if hrr else "no-hrr")
    try:
        s.sendall(b"\x14\x03\x03\x00\x01\x01" + second)
        while True:
            rec = read_record(s)
            if rec is None:
                print("eof")
                return 0
            if rec[0] == 0x15:
                print("alert:%d" % rec[1][1])
                return 0
            if rec[0] != 0x14:
                print("data")
                return 0
    except (ConnectionResetError, BrokenPipeError):
        print("reset")
    except socket.timeout:
        print("timeout")
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    return globals()["cmd_" + cmd](*args)


if __name__ == "__main__":
    sys.exit(main())
