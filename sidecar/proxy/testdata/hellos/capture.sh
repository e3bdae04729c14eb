#!/usr/bin/env bash
# sidecar/proxy/testdata/hellos/capture.sh — how the ClientHello fixtures beside this script were made.
#
# A one-shot TCP listener on 127.0.0.1 (python3, stdlib) reads the TLS records a client sends until the
# first handshake message (the ClientHello) is complete, writes exactly those bytes to a file, and closes
# the connection (the client then fails its handshake; that is expected). Each real client is pointed at
# it with SNI "allowed.example". Nothing leaves loopback; no certificates are needed.
#
#   usage: sidecar/proxy/testdata/hellos/capture.sh [OUTDIR]     (default: the script's own directory)
#
# Needs: python3, curl, openssl, go (stdlib only, runs offline). Captures are not reproducible byte for
# byte (random, key shares, GREASE values differ per run); the tests only rely on their structure and
# SNI, so re-capturing is safe.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sni=allowed.example

# listen FILE — starts the one-shot listener in the background; prints its port once it is bound.
cat >"$tmp/listen.py" <<'EOF'
import socket, struct, sys
path = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(20)
c, _ = s.accept()
c.settimeout(10)
def recv_exact(n):
    b = b""
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            raise SystemExit("client closed early after %d bytes" % len(b))
        b += chunk
    return b
raw, hs = b"", b""
while len(hs) < 4 or len(hs) < 4 + int.from_bytes(hs[1:4], "big"):
    hdr = recv_exact(5)
    body = recv_exact(struct.unpack("!H", hdr[3:5])[0])
    if hdr[0] != 22:
        raise SystemExit("not a handshake record")
    raw += hdr + body
    hs += body
open(path, "wb").write(raw)
c.close()
EOF

# capture NAME CMD... — runs CMD with {PORT} replaced by the listener's port, saves NAME.bin.
capture() {
	local name=$1; shift
	local fifo="$tmp/port.$name" args=() a port
	mkfifo "$fifo"
	python3 "$tmp/listen.py" "$out/$name.bin" >"$fifo" &
	local pid=$!
	read -r port <"$fifo"
	for a in "$@"; do args+=("${a//\{PORT\}/$port}"); done
	timeout 20 "${args[@]}" </dev/null >/dev/null 2>&1 || true
	if wait "$pid"; then
		echo "captured $name.bin ($(stat -c %s "$out/$name.bin") bytes)"
	else
		echo "FAILED to capture $name" >&2
		return 1
	fi
}

# curl: default (TLS 1.3 capable, OpenSSL backend).
capture curl curl -sk --max-time 5 --resolve "$sni:{PORT}:127.0.0.1" "https://$sni:{PORT}/"
# openssl s_client: default, TLS 1.2 only, and without server_name.
capture openssl openssl s_client -connect "127.0.0.1:{PORT}" -servername "$sni"
capture openssl-tls12 openssl s_client -tls1_2 -connect "127.0.0.1:{PORT}" -servername "$sni"
capture openssl-nosni openssl s_client -noservername -connect "127.0.0.1:{PORT}"
# openssl sends an IP literal as SNI when told to (curl and browsers do not).
capture openssl-ipsni openssl s_client -connect "127.0.0.1:{PORT}" -servername 198.18.1.1

# python3 ssl: default context, and one with a long ALPN list so the hello is > 4 KiB (a large hello
# that spans two TCP segments and needs more than one read).
cat >"$tmp/py_client.py" <<'EOF'
import socket, ssl, sys
port, big = int(sys.argv[1]), sys.argv[2] == "big"
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
if big:
    ctx.set_alpn_protocols(["proto-%03d-%s" % (i, "x" * 40) for i in range(100)])
s = socket.create_connection(("127.0.0.1", port), timeout=5)
try:
    ctx.wrap_socket(s, server_hostname="allowed.example")
except Exception:
    pass
EOF
capture python3 python3 "$tmp/py_client.py" "{PORT}" small
capture python3-big python3 "$tmp/py_client.py" "{PORT}" big

# Go crypto/tls: default config, and one with an (unusable, locally generated) ECH config so the hello
# carries encrypted_client_hello (0xfe0d) with outer SNI = the ECH public_name.
mkdir -p "$tmp/goclient"
cat >"$tmp/goclient/main.go" <<'EOF'
package main

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"net"
	"os"
	"time"
)

func u16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// echConfigList builds an ECHConfigList (draft-ietf-tls-esni, version 0xfe0d) for a fresh X25519 key.
func echConfigList(publicName string) []byte {
	k, _ := ecdh.X25519().GenerateKey(rand.Reader)
	pub := k.PublicKey().Bytes()
	var c []byte
	c = append(c, 7)          // config_id
	c = u16(c, 0x0020)        // kem: DHKEM(X25519, HKDF-SHA256)
	c = u16(c, len(pub))
	c = append(c, pub...)
	c = u16(c, 4)             // cipher suites
	c = u16(c, 0x0001)        // HKDF-SHA256
	c = u16(c, 0x0001)        // AES-128-GCM
	c = append(c, 0)          // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = u16(c, 0)             // extensions
	var cfg []byte
	cfg = u16(cfg, 0xfe0d)
	cfg = u16(cfg, len(c))
	cfg = append(cfg, c...)
	return append(u16(nil, len(cfg)), cfg...)
}

func main() {
	conf := &tls.Config{ServerName: "allowed.example", InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	if len(os.Args) > 2 && os.Args[2] == "ech" {
		conf.MinVersion = tls.VersionTLS13
		conf.EncryptedClientHelloConfigList = echConfigList("public.example")
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+os.Args[1], 5*time.Second)
	if err != nil {
		os.Exit(1)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	_ = tls.Client(c, conf).Handshake()
}
EOF
(cd "$tmp/goclient" && GOFLAGS=-mod=mod GOPROXY=off go mod init hello >/dev/null 2>&1 && GOPROXY=off go build -o client .)
capture go "$tmp/goclient/client" "{PORT}" plain
capture go-ech "$tmp/goclient/client" "{PORT}" ech

# Derived fixtures: the curl hello re-framed into records of 1, 7 and 100 bytes of handshake payload
# (clients rarely split a hello, but RFC 8446 §5.1 allows it and a middlebox may).
python3 - "$out" <<'EOF'
import sys
out = sys.argv[1]
raw = open(out + "/curl.bin", "rb").read()
hs, i = b"", 0
while i < len(raw):
    n = int.from_bytes(raw[i + 3:i + 5], "big")
    hs += raw[i + 5:i + 5 + n]
    i += 5 + n
for size in (1, 7, 100):
    rec = b""
    for j in range(0, len(hs), size):
        part = hs[j:j + size]
        rec += bytes([22, 3, 1]) + len(part).to_bytes(2, "big") + part
    open("%s/curl-split%d.bin" % (out, size), "wb").write(rec)
    print("derived curl-split%d.bin (%d bytes)" % (size, len(rec)))
EOF
