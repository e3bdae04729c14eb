#!/usr/bin/env python3
"""Agent-side probes for e2e/proxy_shared.test.sh (run as the agent UID in the pod netns; stdlib only).
Each prints one line saying what happened; the suite compares it. Every socket op has a timeout.

  client.py resolve NAME                      addresses getaddrinfo gives (A then AAAA), through the filter
  client.py tls HOST PORT SNI|- WAIT CA PATH  connect, stay silent WAIT s, TLS handshake (no SNI for -),
                                              GET PATH: "ok STATUS BODY" | "alert:REASON" | "closed" | "reset"
  client.py ech HOST PORT SNI CA PATH         the same at once, with an encrypted_client_hello extension
                                              (ECH GREASE shape) added to the hello put on the wire
  client.py http HOST PORT WAIT HOSTHDR PATH  silent WAIT s, then one GET: "STATUS BODY" | "closed" | "reset"
  client.py send HOST PORT BYTES              send BYTES (Python escapes, e.g. '\\r\\n'): first response status
  client.py sendall HOST PORT BYTES           the same, every response's status until the connection ends
  client.py script HOST PORT STEP...          w:BYTES write, s:SECS stay silent, r read a response, l read
                                              a raw line: "S..."
  client.py hellosplit HOST PORT SNI WAIT N CA  silent WAIT s, then a real hello N bytes a write: "ok" | ...
  client.py greethello HOST PORT SNI CA       read a greeting line, then TLS for SNI: "GREETING ok 200" | ...
  client.py pipeline HOST PORT H1 P1 H2 P2    two GETs in one write: "S1 S2 ms=T" (- for no response;
                                              T: ms from the second request's write to its answer)
  client.py keepalive HOST PORT H1 P1 H2 P2   the second GET after the first response: "S1 S2 ms=T"
  client.py clte2 HOST PORT H P               a GET, then a CL.TE-shaped POST on the same connection: "S1 S2 ms=T"
  client.py posts HOST PORT H                 chunked POST, Content-Length POST, GET on one connection,
                                              bodies checked against the sha256 the server answers: "ok ok 200"
  client.py ws HOST PORT H                    websocket upgrade, binary frames echoed: "101 ok"
  client.py wsdecline HOST PORT H1 H2 P2      upgrade the server declines (400), then GET Host H2: "400 S2 ms=T"
  client.py greet HOST PORT                   ms to the server's greeting, then a '{...}' line echoed: "MS ok"
  client.py onebyte HOST PORT HEX             send one byte: ms until its echo: "MS ok" """
import base64
import codecs
import hashlib
import os
import socket
import ssl
import sys
import time

TIMEOUT = 10


def conn(host, port, timeout=TIMEOUT):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect((host, int(port)))
    return s


class Resp:
    """Reads HTTP/1.1 responses (Content-Length bodies, or none for 101/204/304) from a socket."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def read(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n\r\n") + 4
        head, self.buf = self.buf[:i].decode("latin-1"), self.buf[i:]
        lines = head.split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            if k:
                hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0")) if status != 101 else 0
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, body


def outcome(fn):
    """Runs fn() -> str; connection-level failures become one word."""
    try:
        return fn()
    except ssl.SSLError as e:
        return "alert:%s" % (e.reason or e)
    except EOFError:
        return "closed"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "timeout"


def get(host, path, close=True):
    return ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: stockade-e2e\r\n%s\r\n"
            % (path, host, "Connection: close\r\n" if close else "")).encode()


def ms_since(t0):
    return "ms=%.0f" % ((time.monotonic() - t0) * 1000)


def status_or(r):
    try:
        return str(r.read()[0])
    except EOFError:
        return "-"
    except (ConnectionResetError, BrokenPipeError):
        return "-"
    except socket.timeout:
        return "timeout"


def cmd_resolve(name):
    out = []
    for fam in (socket.AF_INET, socket.AF_INET6):
        try:
            out += sorted({ai[4][0] for ai in socket.getaddrinfo(name, 443, fam, socket.SOCK_STREAM)})
        except socket.gaierror:
            pass
    print(" ".join(out))
    return 0


def tls_ctx(sni, ca):
    ctx = ssl.create_default_context(cafile=ca)
    if sni is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def cmd_tls(host, port, sni, wait, ca, path):
    sni = None if sni == "-" else sni

    def run():
        s = conn(host, port)
        time.sleep(float(wait))
        t = tls_ctx(sni, ca).wrap_socket(s, server_hostname=sni)
        t.sendall(get(sni or "allowed.example", path))
        st, _, body = Resp(t).read()
        return "ok %d %s" % (st, body.decode("latin-1").strip())

    print(outcome(run))
    return 0


def add_ech(rec):
    """Insert an encrypted_client_hello extension (outer type, HPKE X25519/HKDF-SHA256/AES-128-GCM, random
    enc and payload: the shape of ECH GREASE) first in the ClientHello in this one TLS record."""
    assert rec[0] == 22 and rec[5] == 1
    hs = rec[5:]
    i = 4 + 2 + 32
    i += 1 + hs[i]
    i += 2 + int.from_bytes(hs[i:i + 2], "big")
    i += 1 + hs[i]
    elen = int.from_bytes(hs[i:i + 2], "big")
    body = b"\x00" + b"\x00\x01\x00\x01" + b"\x42" + (32).to_bytes(2, "big") + os.urandom(32) \
        + (144).to_bytes(2, "big") + os.urandom(144)
    ext = b"\xfe\x0d" + len(body).to_bytes(2, "big") + body
    hs2 = hs[:i] + (elen + len(ext)).to_bytes(2, "big") + ext + hs[i + 2:]
    hs2 = hs2[:1] + (len(hs2) - 4).to_bytes(3, "big") + hs2[4:]
    return rec[:3] + len(hs2).to_bytes(2, "big") + hs2


def cmd_ech(host, port, sni, ca, path):
    def run():
        s = conn(host, port)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = tls_ctx(sni, ca).wrap_bio(inc, out, server_hostname=sni)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        s.sendall(add_ech(out.read()))

        def pump():
            d = out.read()
            if d:
                s.sendall(d)
            d = s.recv(65536)
            if not d:
                raise EOFError
            inc.write(d)

        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pump()
        obj.write(get(sni, path))
        s.sendall(out.read())
        data = b""
        while True:
            try:
                d = obj.read(65536)
                if not d:
                    break
                data += d
            except ssl.SSLWantReadError:
                try:
                    pump()
                except EOFError:
                    break
            except ssl.SSLZeroReturnError:
                break
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        return "ok %s %s" % (line.split(" ")[1] if " " in line else "?",
                             data.split(b"\r\n\r\n", 1)[-1].decode("latin-1").strip())

    print(outcome(run))
    return 0


def cmd_http(host, port, wait, hosthdr, path):
    def run():
        s = conn(host, port)
        time.sleep(float(wait))
        s.sendall(get(hosthdr, path))
        st, _, body = Resp(s).read()
        return "%d %s" % (st, body.decode("latin-1").strip())

    print(outcome(run))
    return 0


def cmd_send(host, port, data):
    def run():
        s = conn(host, port)
        s.sendall(codecs.escape_decode(data.encode())[0])
        st, _, body = Resp(s).read()
        return "%d %s" % (st, body.decode("latin-1").strip())

    print(outcome(run))
    return 0


def cmd_sendall(host, port, data):
    """Like send, but reads every response until the connection ends: their statuses, space-separated."""
    def run():
        s = conn(host, port)
        s.sendall(codecs.escape_decode(data.encode())[0])
        r, out = Resp(s), []
        for _ in range(4):
            st = status_or(r)
            if st == "-":
                break
            out.append(st)
        return " ".join(out) or "closed"

    print(outcome(run))
    return 0


def cmd_script(host, port, *steps):
    """Steps: w:BYTES (write, Python escapes), s:SECS (stay silent), r (read one response), l (read one raw
    line, e.g. a greeting). Prints the statuses and lines read (spaces as _), space-separated (- for a
    connection that ended instead)."""
    def run():
        s = conn(host, port)
        r, out = Resp(s), []
        for st in steps:
            if st.startswith("w:"):
                try:
                    s.sendall(codecs.escape_decode(st[2:].encode())[0])
                except (BrokenPipeError, ConnectionResetError):
                    pass
            elif st.startswith("s:"):
                time.sleep(float(st[2:]))
            elif st == "r":
                out.append(status_or(r))
            elif st == "l":
                try:
                    while b"\n" not in r.buf:
                        r._fill()
                    line, r.buf = r.buf.split(b"\n", 1)
                    out.append(line.decode("latin-1").strip().replace(" ", "_"))
                except (EOFError, ConnectionResetError):
                    out.append("-")
        return " ".join(out)

    print(outcome(run))
    return 0


def cmd_greethello(host, port, sni, ca):
    """Read a server-first greeting line, then start TLS (a real hello for SNI, as after STARTTLS):
    "GREETING ok" | "GREETING alert:REASON" | ..."""
    s = conn(host, port)
    got = b""
    try:
        while not got.endswith(b"\n"):
            d = s.recv(100)
            if not d:
                break
            got += d
    except (OSError, socket.timeout):
        pass
    greeting = got.decode("latin-1").strip().replace(" ", "_") or "-"

    def run():
        t = tls_ctx(sni, ca).wrap_socket(s, server_hostname=sni)
        t.sendall(get(sni, "/c5-starttls"))
        st, _, _ = Resp(t).read()
        return "ok %d" % st

    print(greeting, outcome(run))
    return 0


def cmd_hellosplit(host, port, sni, wait, chunk, ca):
    """Stay silent WAIT s, then put a real ClientHello for SNI on the wire CHUNK bytes at a time (5 ms
    apart); then finish the handshake: "ok" | "alert:REASON" | "closed" | "reset"."""
    def run():
        s = conn(host, port)
        time.sleep(float(wait))
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = tls_ctx(sni, ca).wrap_bio(inc, out, server_hostname=sni)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello, n = out.read(), int(chunk)
        for i in range(0, len(hello), n):
            s.sendall(hello[i:i + n])
            time.sleep(0.005)   # the whole hello well inside the late flight's own deadline
        while True:
            try:
                obj.do_handshake()
                return "ok"
            except ssl.SSLWantReadError:
                d = out.read()
                if d:
                    s.sendall(d)
                d = s.recv(65536)
                if not d:
                    raise EOFError
                inc.write(d)

    print(outcome(run))
    return 0


def cmd_pipeline(host, port, h1, p1, h2, p2):
    def run():
        s = conn(host, port)
        t0 = time.monotonic()
        s.sendall(get(h1, p1, close=False) + get(h2, p2))
        r = Resp(s)
        a = status_or(r)
        return "%s %s %s" % (a, status_or(r), ms_since(t0))

    print(outcome(run))
    return 0


def cmd_keepalive(host, port, h1, p1, h2, p2):
    def run():
        s = conn(host, port)
        r = Resp(s)
        s.sendall(get(h1, p1, close=False))
        a = status_or(r)
        t0 = time.monotonic()
        s.sendall(get(h2, p2))
        return "%s %s %s" % (a, status_or(r), ms_since(t0))

    print(outcome(run))
    return 0


def cmd_clte2(host, port, h, p):
    def run():
        s = conn(host, port)
        r = Resp(s)
        s.sendall(get(h, p + "-1", close=False))
        a = status_or(r)
        t0 = time.monotonic()
        s.sendall(("POST %s-2 HTTP/1.1\r\nHost: %s\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "0\r\n\r\nG" % (p, h)).encode())
        return "%s %s %s" % (a, status_or(r), ms_since(t0))

    print(outcome(run))
    return 0


def cmd_posts(host, port, h):
    def run():
        s = conn(host, port)
        r = Resp(s)
        res = []
        body = os.urandom(100000)
        chunks, i, k = [], 0, 1
        while i < len(body):
            chunks.append(body[i:i + k * 997])
            i += k * 997
            k = k % 13 + 1
        data = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        s.sendall(("POST /c3-chunked HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n" % h).encode()
                  + data)
        st, _, got = r.read()
        res.append("ok" if st == 200 and got.strip().decode() == hashlib.sha256(body).hexdigest() else "bad%d" % st)
        body = os.urandom(200000)
        s.sendall(("POST /c3-cl HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (h, len(body))).encode()
                  + body)
        st, _, got = r.read()
        res.append("ok" if st == 200 and got.strip().decode() == hashlib.sha256(body).hexdigest() else "bad%d" % st)
        s.sendall(get(h, "/c3-after-posts"))
        res.append(status_or(r))
        return " ".join(res)

    print(outcome(run))
    return 0


def ws_frame(op, data):
    key = os.urandom(4)
    n = len(data)
    if n < 126:
        hdr = bytes([0x80 | op, 0x80 | n])
    elif n < 65536:
        hdr = bytes([0x80 | op, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        hdr = bytes([0x80 | op, 0x80 | 127]) + n.to_bytes(8, "big")
    return hdr + key + bytes(c ^ key[i % 4] for i, c in enumerate(data))


def ws_read(r):
    while len(r.buf) < 2:
        r._fill()
    b0, b1 = r.buf[0], r.buf[1]
    n, i = b1 & 0x7F, 2
    if n == 126:
        i = 4
    elif n == 127:
        i = 10
    while len(r.buf) < i:
        r._fill()
    if i > 2:
        n = int.from_bytes(r.buf[2:i], "big")
    while len(r.buf) < i + n:
        r._fill()
    data, r.buf = r.buf[i:i + n], r.buf[i + n:]
    return b0 & 0x0F, data


def ws_upgrade(h, path):
    key = base64.b64encode(os.urandom(16)).decode()
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, h, key)).encode()
    return key, req


def cmd_ws(host, port, h):
    def run():
        s = conn(host, port)
        r = Resp(s)
        key, req = ws_upgrade(h, "/c4-ws")
        s.sendall(req)
        st, hdrs, _ = r.read()
        want = base64.b64encode(hashlib.sha1(key.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
        if st != 101 or hdrs.get("sec-websocket-accept", "").encode() != want:
            return "%d bad-accept" % st
        ok = True
        # binary frames, one of which looks like an HTTP request for another name: opaque after the 101
        for msg in (b"\x00\x01\x02", os.urandom(300), b"GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n",
                    os.urandom(70000)):
            s.sendall(ws_frame(2, msg))
            op, got = ws_read(r)
            ok = ok and op == 2 and got == msg
        s.sendall(ws_frame(8, b"\x03\xe8"))
        op, _ = ws_read(r)
        return "101 %s" % ("ok" if ok and op == 8 else "bad")

    print(outcome(run))
    return 0


def cmd_wsdecline(host, port, h1, h2, p2):
    def run():
        s = conn(host, port)
        r = Resp(s)
        _, req = ws_upgrade(h1, "/ws-decline")
        s.sendall(req)
        a = status_or(r)
        t0 = time.monotonic()
        s.sendall(get(h2, p2))
        return "%s %s %s" % (a, status_or(r), ms_since(t0))

    print(outcome(run))
    return 0


def cmd_greet(host, port):
    def run():
        t0 = time.monotonic()
        s = conn(host, port)
        got = b""
        while not got.endswith(b"\n"):
            d = s.recv(100)
            if not d:
                raise EOFError
            got += d
        ms = (time.monotonic() - t0) * 1000
        if got != b"220 greet\r\n":
            return "%.0f bad-greeting %r" % (ms, got)
        line = b"{\"hello\":\"from the agent\"}\n"
        s.sendall(line)
        echo = b""
        while len(echo) < len(line):
            d = s.recv(100)
            if not d:
                break
            echo += d
        return "%.0f %s" % (ms, "ok" if echo == line else "bad-echo %r" % echo)

    out = outcome(run)
    print(out if out[:1].isdigit() else "- " + out)
    return 0


def cmd_onebyte(host, port, hexbyte):
    def run():
        s = conn(host, port)
        b = bytes.fromhex(hexbyte)
        t0 = time.monotonic()
        s.sendall(b)
        d = s.recv(10)
        ms = (time.monotonic() - t0) * 1000
        if not d:
            raise EOFError
        return "%.0f %s" % (ms, "ok" if d == b else "bad %r" % d)

    out = outcome(run)
    print(out if out[:1].isdigit() else "- " + out)
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    return globals()["cmd_" + cmd](*args)


if __name__ == "__main__":
    sys.exit(main())
