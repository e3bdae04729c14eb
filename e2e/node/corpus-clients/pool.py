"""python3 pool.py HOST PATH SECONDS — a long-lived client: one keep-alive HTTPS connection used, left
idle SECONDS (past the sidecar's binding TTL), used again; then a new connection to the address resolved
at the start (a pool that caches addresses, as many HTTP libraries do). Prints one line:
"kept=<yes|no> first=<body> again=<body> fresh=<body>"; exit 1 on any failure."""
import http.client
import socket
import ssl
import sys
import time

host, path, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context()
c = http.client.HTTPSConnection(host, 443, context=ctx, timeout=20)
c.request("GET", path)
first = c.getresponse().read().decode().strip()
port1, addr = c.sock.getsockname()[1], c.sock.getpeername()[0]
time.sleep(secs)
c.request("GET", path)
again = c.getresponse().read().decode().strip()
port2 = c.sock.getsockname()[1]
s = ctx.wrap_socket(socket.create_connection((addr, 443), timeout=20), server_hostname=host)
s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
fresh = data.split(b"\r\n\r\n", 1)[-1].decode().strip()
print(f"kept={'yes' if port1 == port2 else 'no'} first={first} again={again} fresh={fresh}")
