#!/usr/bin/env python3
"""upstream.py LOG IP:PORT:CERT:KEY... — an HTTPS upstream for e2e/inspect.test.sh: on each address,
TLS with that certificate (ALPN h2 and http/1.1), every method on every path answered 200
"ok METHOD TARGET", connections kept alive; each request it receives ("METHOD TARGET Host", over HTTP/2
"METHOD TARGET :authority h2") is appended to LOG, so the suite can show a denied request never arrived.
With SK_GIT_ROOT set, targets under /git/ are git's smart HTTP, served by `git http-backend` (CGI) over
the repositories there, on both protocols: real clones and pushes for the suite's git case. Targets with
/echo or /gzip reflect the request's Authorization (see Handler.echo): the suite's masking case. Targets
with /ws answer a websocket upgrade (RFC 6455 handshake) and echo every text or binary frame until a
close frame (Handler.websocket): the suite's websocket case."""
import base64
import hashlib
import struct
import gzip
import http.server
import os
import socket
import socketserver
import ssl
import subprocess
import sys
import threading

try:
    import h2.config
    import h2.connection
    import h2.events
except ImportError:  # HTTP/2 is then not offered
    h2 = None


GIT_ROOT = os.environ.get("SK_GIT_ROOT", "")


def git_cgi(method, target, headers, body):
    """One request through git http-backend: (status, [(name, value)], body)."""
    path, _, query = target.partition("?")
    env = {"GIT_PROJECT_ROOT": GIT_ROOT, "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": method,
           "PATH_INFO": path[len("/git"):], "QUERY_STRING": query, "REMOTE_USER": "agent",
           "REMOTE_ADDR": "198.18.0.2", "CONTENT_TYPE": headers.get("content-type", ""),
           "CONTENT_LENGTH": str(len(body)), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": GIT_ROOT, "GIT_CONFIG_NOSYSTEM": "1"}
    if headers.get("content-encoding"):
        env["HTTP_CONTENT_ENCODING"] = headers["content-encoding"]
    if headers.get("git-protocol"):
        env["HTTP_GIT_PROTOCOL"] = headers["git-protocol"]
    out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False).stdout
    sep = out.find(b"\r\n\r\n")
    head, rest = (out[:sep], out[sep + 4:]) if sep >= 0 else out.split(b"\n\n", 1) if b"\n\n" in out else (out, b"")
    status, fields = 200, []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            fields.append((name.strip().lower(), value.strip()))
    return status, fields, rest


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = ""
    lock = threading.Lock()

    def log_message(self, fmt, *args):
        pass

    def handle_any(self):
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write("%s %s %s\n" % (self.command, self.path, self.headers.get("Host", "")))
        if self.headers.get("Authorization"):
            log_auth(self.path, self.headers["Authorization"])
        if "/ws" in self.path and self.headers.get("Upgrade", "").lower() == "websocket":
            self.websocket()
            return
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if GIT_ROOT and self.path.startswith("/git/"):
            status, fields, out = git_cgi(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, data)
            self.send_response(status)
            for k, v in fields:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if "/echo" in self.path or "/gzip" in self.path:
            self.echo(data)
            return
        body = ("ok %s %s\n" % (self.command, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def websocket(self):
        """The server side of RFC 6455: the 101 with the key's accept, then each frame's payload (unmasked)
        echoed back in an unmasked frame of the same opcode; a close frame is answered and ends it."""
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.wfile.flush()
        while True:
            hdr = self.rfile.read(2)
            if len(hdr) < 2:
                break
            op, n = hdr[0] & 0x0F, hdr[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if hdr[1] & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            out = bytes([0x80 | op]) + (bytes([len(payload)]) if len(payload) < 126 else
                                         bytes([126]) + struct.pack("!H", len(payload))) + payload
            self.wfile.write(out)
            self.wfile.flush()
            if op == 8:
                break
        self.close_connection = True

    def echo(self, data):
        """A server that reflects the request's credential (a debug endpoint, an error page): the
        Authorization value in a header and in the body; .../echo-chunked cuts the body into chunks, one
        boundary in the middle of the value; .../gzip sends it gzip-coded whatever was asked."""
        auth = self.headers.get("Authorization", "")
        log_auth(self.path, "accept-encoding=" + self.headers.get("Accept-Encoding", "-"))
        body = ("auth=%s\nagain=%s\nbody=%s\n" % (auth, auth, data.decode("latin-1"))).encode("latin-1")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("X-Echo", auth)
        if "/gzip" in self.path:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        if "/echo-chunked" in self.path:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            cut = body.index(b"auth=") + 5 + len(auth) // 2
            for part in (body[:cut], body[cut:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_any


def log_auth(path, value):
    """The Authorization a request arrived with, into LOG.auth: the suite checks the swap there."""
    with Handler.lock, open(Handler.log_path + ".auth", "a", encoding="utf-8") as f:
        f.write("%s %s\n" % (path, value))


def log_request(line):
    with Handler.lock, open(Handler.log_path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def serve_h2(sock):
    """One HTTP/2 connection (python3-h2): each request answered once its stream ends."""
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    heads, bodies = {}, {}
    while True:
        try:
            data = sock.recv(65536)
        except (ssl.SSLError, OSError):
            return
        if not data:
            return
        try:
            events = conn.receive_data(data)
        except Exception:  # a protocol error: the suite sees the connection end
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                heads[ev.stream_id] = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                hd = heads.pop(ev.stream_id, None)
                if hd is None:
                    continue
                method, path = hd.get(":method", ""), hd.get(":path", "")
                log_request("%s %s %s h2" % (method, path, hd.get(":authority", "")))
                if hd.get("authorization"):
                    log_auth(path, hd["authorization"])
                data = bodies.pop(ev.stream_id, b"")
                if GIT_ROOT and path.startswith("/git/"):
                    status, fields, out = git_cgi(method, path, hd, data)
                    conn.send_headers(ev.stream_id, [(":status", str(status))] + fields +
                                      [("content-length", str(len(out)))])
                    for off in range(0, len(out), 16384):
                        while conn.local_flow_control_window(ev.stream_id) < min(16384, len(out) - off):
                            sock.sendall(conn.data_to_send())
                            more = sock.recv(65536)
                            if not more:
                                return
                            for e2 in conn.receive_data(more):
                                if isinstance(e2, h2.events.DataReceived):
                                    conn.acknowledge_received_data(e2.flow_controlled_length, e2.stream_id)
                        conn.send_data(ev.stream_id, out[off:off + 16384])
                    conn.send_data(ev.stream_id, b"", end_stream=True)
                    continue
                if "/echo" in path:
                    # the credential reflected over HTTP/2: in the body, cut across two DATA frames in
                    # the middle of the value; with /echo-header also in a response header
                    auth = hd.get("authorization", "")
                    log_auth(path, "accept-encoding=" + hd.get("accept-encoding", "-"))
                    body = ("auth=%s\n" % auth).encode("latin-1")
                    fields = [(":status", "200"), ("content-length", str(len(body)))]
                    if "/echo-header" in path:
                        fields.append(("x-echo", auth))
                    conn.send_headers(ev.stream_id, fields)
                    cut = 5 + len(auth) // 2
                    conn.send_data(ev.stream_id, body[:cut])
                    sock.sendall(conn.data_to_send())
                    conn.send_data(ev.stream_id, body[cut:], end_stream=True)
                    continue
                body = ("ok %s %s\n" % (method, path)).encode()
                conn.send_headers(ev.stream_id, [(":status", "200"), ("content-type", "text/plain"),
                                                 ("content-length", str(len(body)))], end_stream=method == "HEAD")
                if method != "HEAD":
                    conn.send_data(ev.stream_id, body, end_stream=True)
        try:
            sock.sendall(conn.data_to_send())
        except (ssl.SSLError, OSError):
            return


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ctx = None

    def get_request(self):
        sock, addr = self.socket.accept()
        try:
            return self.ctx.wrap_socket(sock, server_side=True), addr
        except (ssl.SSLError, OSError):
            sock.close()
            raise

    def finish_request(self, request, client_address):
        if h2 is not None and request.selected_alpn_protocol() == "h2":
            serve_h2(request)
        else:
            super().finish_request(request, client_address)


def main():
    Handler.log_path = sys.argv[1]
    servers = []
    for spec in sys.argv[2:]:
        host, port, cert, key = spec.split(":")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["h2", "http/1.1"] if h2 is not None else ["http/1.1"])
        srv = Server((host, int(port)), Handler)
        srv.ctx = ctx
        servers.append(srv)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
