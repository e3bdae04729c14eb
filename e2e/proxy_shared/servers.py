#!/usr/bin/env python3
"""Test servers for e2e/proxy_shared.test.sh (two names on one address). Run in the "internet"
netns; stdlib only.

  servers.py --log DIR [--cert NAME:CERT:KEY]... [--tls IP:PORT]... [--http IP:PORT]...
             [--greet IP:PORT]... [--echo IP:PORT]... [--dns IP:PORT] [--record NAME=IP]...

Every listener logs EVERY byte it receives, as it arrives and before it is parsed:
  DIR/conn-PORT-N.bin   the raw bytes of connection N (1-based, per port) on that port
  DIR/vhost-NAME.bin    the same bytes attributed to a name: for TLS every byte of the connection goes to
                        the SNI of its ClientHello (_nosni without one, _partial when the hello never
                        completed); for plain HTTP each request's head and body go to its Host (_partial:
                        bytes that never formed a complete head)
  DIR/requests.log      one JSON object per request served (port, conn, sni, host, method, path, n, len, sha)

--tls: a virtual-host TLS server choosing the certificate by SNI among the --cert names (the first one
without SNI), then HTTP/1.1 inside. The TLS runs on a MemoryBIO, so the raw bytes are seen; an
encrypted_client_hello extension (0xfe0d, what ECH GREASE adds) is removed from the hello before OpenSSL
reads it, so a client that added it to the hello it put on the wire still completes the handshake.
--http: plain HTTP/1.1 routing by Host, keep-alive, pipelining, chunked and Content-Length bodies.
  GET P -> 200 "ok HOST P\\n"; POST -> 200 hex sha256 of the body; Upgrade: websocket (path not /ws-decline)
  -> 101 and a websocket echo (every data frame sent back unmasked); any other Upgrade -> 400, keep-alive.
--greet: server first: sends "220 greet\\r\\n" on accept, then echoes.  --echo: a plain TCP echo.
--dns: a tiny authoritative UDP server answering A/AAAA from --record (TTL 600), NXDOMAIN otherwise."""
import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import sys
import threading

LOG = "."
LOCK = threading.Lock()
COUNT = {}
TIMEOUT = 30
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def append(path, data):
    if data:
        with LOCK, open(path, "ab") as f:
            f.write(data)


class ConnLog:
    """The raw bytes of one connection, and their attribution to a name."""

    def __init__(self, port):
        with LOCK:
            COUNT[port] = n = COUNT.get(port, 0) + 1
        self.port, self.n = port, n
        self.path = os.path.join(LOG, "conn-%d-%d.bin" % (port, n))
        open(self.path, "wb").close()

    def raw(self, data):
        append(self.path, data)

    @staticmethod
    def name(name, data):
        safe = "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in name)[:80] or "_empty"
        append(os.path.join(LOG, "vhost-%s.bin" % safe), data)

    def request(self, **kw):
        kw.update(port=self.port, conn=self.n)
        line = (json.dumps(kw, sort_keys=True) + "\n").encode()
        append(os.path.join(LOG, "requests.log"), line)


# ---- TLS ClientHello helpers (the first record only; enough for the hellos the suite sends) ----

def hello_body(buf):
    """The ClientHello message of the first handshake message, reassembled across records; None while
    incomplete, b"" when buf is not a TLS handshake."""
    if not buf:
        return None
    if buf[0] != 22:
        return b""
    hs, i = b"", 0
    while i + 5 <= len(buf):
        if buf[i] != 22:
            return b""
        n = int.from_bytes(buf[i + 3:i + 5], "big")
        if i + 5 + n > len(buf):
            break
        hs += buf[i + 5:i + 5 + n]
        i += 5 + n
        if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
            return hs[:4 + int.from_bytes(hs[1:4], "big")]
    return None


def hello_exts(hs):
    """(offset of the extensions block in hs, list of (type, start, end)) or None."""
    try:
        if hs[0] != 1:
            return None
        i = 4 + 2 + 32
        i += 1 + hs[i]
        i += 2 + int.from_bytes(hs[i:i + 2], "big")
        i += 1 + hs[i]
        if i + 2 > len(hs):
            return (i, [])
        end = i + 2 + int.from_bytes(hs[i:i + 2], "big")
        out, j = [], i + 2
        while j + 4 <= end:
            t, n = int.from_bytes(hs[j:j + 2], "big"), int.from_bytes(hs[j + 2:j + 4], "big")
            out.append((t, j, j + 4 + n))
            j += 4 + n
        return (i, out)
    except IndexError:
        return None


def hello_sni(hs):
    ex = hello_exts(hs)
    if not ex:
        return "_nosni"
    for t, s, e in ex[1]:
        if t == 0:
            d = hs[s + 4:e]
            # server_name_list: len(2) type(1) len(2) name
            try:
                n = int.from_bytes(d[3:5], "big")
                return d[5:5 + n].decode("ascii", "replace").lower()
            except IndexError:
                return "_badsni"
    return "_nosni"


def strip_ech(rec):
    """rec: the first TLS record. If it holds a whole ClientHello with an encrypted_client_hello
    extension, return it without that extension (lengths fixed); otherwise rec unchanged."""
    if len(rec) < 9 or rec[0] != 22:
        return rec
    rlen = int.from_bytes(rec[3:5], "big")
    hs = rec[5:5 + rlen]
    if len(hs) < 4 or hs[0] != 1 or 4 + int.from_bytes(hs[1:4], "big") != len(hs):
        return rec
    ex = hello_exts(hs)
    if not ex or not any(t == 0xFE0D for t, _, _ in ex[1]):
        return rec
    off, exts = ex
    body = b"".join(hs[s:e] for t, s, e in exts if t != 0xFE0D)
    hs2 = hs[:off] + len(body).to_bytes(2, "big") + body
    hs2 = hs2[:1] + (len(hs2) - 4).to_bytes(3, "big") + hs2[4:]
    return rec[:3] + len(hs2).to_bytes(2, "big") + hs2 + rec[5 + rlen:]


# ---- streams: recv() -> bytes (b"" at EOF), send(bytes) ----

class RawStream:
    def __init__(self, sock, log):
        self.sock, self.log = sock, log

    def recv(self):
        try:
            d = self.sock.recv(65536)
        except (OSError, socket.timeout):
            return b""
        self.log.raw(d)
        return d

    def send(self, data):
        self.sock.sendall(data)


class TLSStream:
    def __init__(self, sock, log, ctx):
        self.sock, self.log = sock, log
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_side=True)
        self.hbuf = b""        # raw bytes until the SNI is known
        self.sni = None
        self.fed_first = False

    def _flush(self):
        d = self.out.read()
        if d:
            self.sock.sendall(d)

    def _fill(self):
        try:
            d = self.sock.recv(65536)
        except (OSError, socket.timeout):
            d = b""
        if not d:
            return False
        self.log.raw(d)
        if self.sni is None:
            self.hbuf += d
            hs = hello_body(self.hbuf)
            if hs is None:
                return True
            self.sni = hello_sni(hs) if hs else "_nottls"
            self.log.name(self.sni, self.hbuf)
            n = 5 + int.from_bytes(self.hbuf[3:5], "big") if len(self.hbuf) >= 5 else 0
            self.inc.write(strip_ech(self.hbuf[:n]) + self.hbuf[n:])
            self.hbuf = b""
        else:
            self.log.name(self.sni, d)
            self.inc.write(d)
        return True

    def close_log(self):
        if self.sni is None and self.hbuf:
            self.log.name("_partial", self.hbuf)

    def handshake(self):
        while True:
            try:
                self.obj.do_handshake()
                self._flush()
                return True
            except ssl.SSLWantReadError:
                self._flush()
                if not self._fill():
                    return False
            except (ssl.SSLError, OSError):
                try:
                    self._flush()
                except OSError:
                    pass
                return False

    def recv(self):
        while True:
            try:
                return self.obj.read(65536)
            except ssl.SSLWantReadError:
                self._flush()
                if not self._fill():
                    return b""
            except (ssl.SSLError, OSError):
                return b""

    def send(self, data):
        self.obj.write(data)
        self._flush()


class Reader:
    """Buffered reads over a stream; every byte consumed is reported to `sink` (attribution)."""

    def __init__(self, stream):
        self.s, self.buf = stream, b""
        self.sink = None

    def _fill(self):
        d = self.s.recv()
        if not d:
            raise EOFError
        self.buf += d

    def _take(self, n):
        out, self.buf = self.buf[:n], self.buf[n:]
        if self.sink:
            self.sink(out)
        return out

    def until(self, delim, cap=65536):
        while delim not in self.buf:
            if len(self.buf) > cap:
                raise ValueError("line too long")
            self._fill()
        return self._take(self.buf.index(delim) + len(delim))

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        return self._take(n)


# ---- HTTP/1.1 ----

def parse_head(raw):
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError("bad request line")
    hdrs = {}
    for ln in lines[1:]:
        if not ln:
            continue
        k, _, v = ln.partition(":")
        hdrs.setdefault(k.strip().lower(), []).append(v.strip())
    return parts[0], parts[1], parts[2], hdrs


def respond(stream, code, reason, body, extra=(), close=False):
    h = ["HTTP/1.1 %d %s" % (code, reason), "Content-Type: text/plain", "Content-Length: %d" % len(body)]
    h += list(extra)
    if close:
        h.append("Connection: close")
    stream.send(("\r\n".join(h) + "\r\n\r\n").encode() + body)


def ws_echo(rd, stream):
    """Echo websocket data frames (client frames are masked; ours are not) until close or EOF."""
    while True:
        b0, b1 = rd.exact(2)
        op, masked, n = b0 & 0x0F, b1 & 0x80, b1 & 0x7F
        if n == 126:
            n = int.from_bytes(rd.exact(2), "big")
        elif n == 127:
            n = int.from_bytes(rd.exact(8), "big")
        key = rd.exact(4) if masked else b"\0\0\0\0"
        data = bytes(c ^ key[i % 4] for i, c in enumerate(rd.exact(n)))
        if n < 126:
            hdr = bytes([0x80 | op, n])
        elif n < 65536:
            hdr = bytes([0x80 | op, 126]) + n.to_bytes(2, "big")
        else:
            hdr = bytes([0x80 | op, 127]) + n.to_bytes(8, "big")
        stream.send(hdr + data)
        if op == 8:
            return


def http_loop(stream, log, sni=None):
    """Serve requests until EOF; plain HTTP (sni None) attributes each request's bytes to its Host."""
    rd = Reader(stream)
    pending = []

    def sink(b):
        pending.append(b)

    rd.sink = sink if sni is None else None
    n = 0
    try:
        while True:
            head = rd.until(b"\r\n\r\n")
            n += 1
            method, path, _ver, hdrs = parse_head(head)
            host = (hdrs.get("host") or ["_nohost"])[0].lower()
            if host.startswith("["):
                host = host.split("]")[0] + "]"
            else:
                host = host.split(":")[0]
            if sni is None:
                log.name(host, b"".join(pending))
                pending.clear()
                rd.sink = lambda b, h=host: log.name(h, b)
            if method == "PRI":
                log.request(sni=sni, host=host, method=method, path=path, n=n, len=0, sha="")
                return
            body = b""
            te = ",".join(hdrs.get("transfer-encoding", [])).lower()
            if "chunked" in te:
                while True:
                    size = int(rd.until(b"\r\n").split(b";")[0].strip(), 16)
                    if size == 0:
                        while rd.until(b"\r\n") != b"\r\n":
                            pass
                        break
                    body += rd.exact(size)
                    rd.exact(2)
            elif "content-length" in hdrs:
                body = rd.exact(int(hdrs["content-length"][0]))
            sha = hashlib.sha256(body).hexdigest()
            log.request(sni=sni, host=host, method=method, path=path, n=n, len=len(body), sha=sha)
            if sni is None:
                rd.sink = sink
            close = "close" in ",".join(hdrs.get("connection", [])).lower()
            upgrade = ",".join(hdrs.get("upgrade", [])).lower()
            if upgrade:
                wskey = (hdrs.get("sec-websocket-key") or [""])[0]
                if "websocket" in upgrade and wskey and path != "/ws-decline":
                    acc = base64.b64encode(hashlib.sha1(wskey.encode() + WS_GUID).digest()).decode()
                    stream.send(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % acc).encode())
                    if sni is None:
                        rd.sink = lambda b, h=host: log.name(h, b)
                    ws_echo(rd, stream)
                    return
                respond(stream, 400, "Bad Request", b"upgrade declined\n", close=close)
            elif method == "POST":
                respond(stream, 200, "OK", (sha + "\n").encode(), close=close)
            else:
                respond(stream, 200, "OK", ("ok %s %s\n" % (host, path)).encode(), close=close)
            if close:
                return
    except (EOFError, ValueError, OSError, IndexError):
        return
    finally:
        leftover = b"".join(pending) + (rd.buf if sni is None else b"")
        if leftover:
            log.name("_partial", leftover)


# ---- listeners ----

def listen(spec):
    host, _, port = spec.rpartition(":")
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(256)
    return s, int(port)


def serve(spec, handler):
    s, port = listen(spec)

    def accept_loop():
        while True:
            c, _ = s.accept()
            c.settimeout(TIMEOUT)
            threading.Thread(target=run, args=(c,), daemon=True).start()

    def run(c):
        try:
            handler(c, ConnLog(port))
        except (OSError, ValueError):
            pass
        finally:
            c.close()

    threading.Thread(target=accept_loop, daemon=True).start()


def make_tls_handler(certs):
    ctxs = {}
    for name, cert, key in certs:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctxs[name] = ctx
    default = ctxs[certs[0][0]]

    def pick(obj, name, _ctx):
        if name and name.lower() in ctxs:
            obj.context = ctxs[name.lower()]

    for ctx in ctxs.values():
        ctx.sni_callback = pick

    def handler(c, log):
        st = TLSStream(c, log, default)
        try:
            if st.handshake():
                http_loop(st, log, sni=st.sni)
        finally:
            st.close_log()

    return handler


def http_handler(c, log):
    http_loop(RawStream(c, log), log)


def echo_handler(c, log, greet=b""):
    if greet:
        c.sendall(greet)
    while True:
        try:
            d = c.recv(65536)
        except (OSError, socket.timeout):
            return
        if not d:
            return
        log.raw(d)
        c.sendall(d)


def dns_answer(q, records):
    qid, qd = q[:2], q[12:]
    labels, i = [], 0
    while qd[i]:
        labels.append(qd[i + 1:i + 1 + qd[i]].decode().lower())
        i += 1 + qd[i]
    qname_wire = qd[:i + 1]
    qtype = int.from_bytes(qd[i + 1:i + 3], "big")
    want = socket.AF_INET if qtype == 1 else socket.AF_INET6 if qtype == 28 else None
    ips = records.get(".".join(labels))
    answers = []
    for ip in ips or []:
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        if fam == want:
            rd = socket.inet_pton(fam, ip)
            answers.append(b"\xc0\x0c" + qtype.to_bytes(2, "big") + b"\x00\x01" + (600).to_bytes(4, "big")
                           + len(rd).to_bytes(2, "big") + rd)
    rcode = 0 if ips is not None else 3
    hdr = qid + bytes([0x84 | (q[2] & 1), 0x80 | rcode]) + b"\x00\x01" + len(answers).to_bytes(2, "big") \
        + b"\x00\x00\x00\x00"
    return hdr + qname_wire + qd[i + 1:i + 5] + b"".join(answers)


def dns_serve(spec, records):
    host, _, port = spec.rpartition(":")
    host = host.strip("[]")
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, int(port)))
    while True:
        q, peer = s.recvfrom(4096)
        try:
            s.sendto(dns_answer(q, records), peer)
        except (IndexError, ValueError, UnicodeDecodeError):
            pass


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--cert", action="append", default=[], help="NAME:CERT:KEY")
    for k in ("tls", "http", "greet", "echo", "dns", "record"):
        ap.add_argument("--" + k, action="append", default=[])
    a = ap.parse_args()
    LOG = a.log
    os.makedirs(LOG, exist_ok=True)
    open(os.path.join(LOG, "requests.log"), "ab").close()
    if a.tls:
        tls = make_tls_handler([tuple(c.split(":", 2)) for c in a.cert])
        for spec in a.tls:
            serve(spec, tls)
    for spec in a.http:
        serve(spec, http_handler)
    for spec in a.greet:
        serve(spec, lambda c, log: echo_handler(c, log, b"220 greet\r\n"))
    for spec in a.echo:
        serve(spec, echo_handler)
    records = {}
    for r in a.record:
        n, ip = r.split("=", 1)
        records.setdefault(n.lower(), []).append(ip)
    for spec in a.dns:
        threading.Thread(target=dns_serve, args=(spec, records), daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
