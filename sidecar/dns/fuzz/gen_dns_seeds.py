#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_dns_codec (sidecar/dns/fuzz/fuzz_dns_codec/): real-shaped queries and
responses (as dig and glibc/musl stubs send them, and as recursive resolvers answer), plus the hostile
shapes the codec must refuse. Deterministic: re-running gives the same files."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_dns_codec")


def name(n, comp=None):
    if comp is not None:
        return struct.pack(">H", 0xC000 | comp)
    out = b""
    for label in n.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def hdr(id_, flags, qd=1, an=0, ns=0, ar=0):
    return struct.pack(">HHHHHH", id_, flags, qd, an, ns, ar)


def opt(size=1232, do=False, opts=b""):
    return b"\0" + struct.pack(">HHIH", 41, size, 0x8000 if do else 0, len(opts)) + opts


def rr(owner, type_, rdata, ttl=300, cls=1):
    return owner + struct.pack(">HHIH", type_, cls, ttl, len(rdata)) + rdata


def q(n, t=1, cls=1):
    return name(n) + struct.pack(">HH", t, cls)


seeds = {}
# queries: dig (AD + cookie), glibc (no EDNS), musl, TCP-style multi types
cookie = struct.pack(">HH", 10, 8) + bytes(range(8))
seeds["q_dig_a"] = hdr(0x1A2B, 0x0120, ar=1) + q("api.github.com") + opt(1232, False, cookie)
seeds["q_glibc_aaaa"] = hdr(0x5C3D, 0x0100) + q("pypi.org", 28)
seeds["q_musl_a"] = hdr(0x0001, 0x0100) + q("files.pythonhosted.org")
seeds["q_https"] = hdr(0x2222, 0x0100, ar=1) + q("www.example.com", 65) + opt(4096, True)
seeds["q_txt"] = hdr(0x3333, 0x0100) + q("exfil.example.com", 16)
seeds["q_any"] = hdr(0x3334, 0x0100) + q("example.com", 255)
seeds["q_axfr"] = hdr(0x3335, 0x0000) + q("example.com", 252)
seeds["q_chaos"] = hdr(0x3336, 0x0100) + q("version.bind", 16, 3)
seeds["q_two_questions"] = hdr(0x3337, 0x0100, qd=2) + q("pypi.org") + q("evil.example")
seeds["q_badvers"] = hdr(0x3338, 0x0100, ar=1) + q("pypi.org") + b"\0" + struct.pack(">HHIH", 41, 1232, 0x00010000, 0)
seeds["q_long_labels"] = hdr(0x3339, 0x0100) + name(".".join(["a" * 63] * 3) + ".example.com") + b"\0\1\0\1"

# answers
qn = q("pypi.org")
seeds["r_a"] = hdr(0x4242, 0x8180, an=2, ar=1) + qn + rr(name("", 12), 1, bytes([151, 101, 0, 223])) + \
    rr(name("", 12), 1, bytes([151, 101, 64, 223])) + opt()
qn2 = q("raw.githubusercontent.com")
seeds["r_cname_chain"] = hdr(0x4242, 0x8180, an=3) + qn2 + \
    rr(name("", 12), 5, b"\x06github\x03map\x06fastly\x03net\x00") + \
    rr(name("", 12 + len(qn2) + 12), 1, bytes([185, 199, 108, 133])) + \
    rr(name("unrelated.example"), 1, bytes([203, 0, 113, 9]))
seeds["r_rebind"] = hdr(0x4242, 0x8180, an=1) + qn + rr(name("", 12), 1, bytes([169, 254, 169, 254]))
seeds["r_aaaa_mapped"] = hdr(0x4242, 0x8180, an=1) + q("pypi.org", 28) + \
    rr(name("", 12), 28, bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1]))
soa = name("ns1.pypi.org") + name("hostmaster.pypi.org") + struct.pack(">IIIII", 1, 7200, 900, 1209600, 60)
seeds["r_nxdomain_soa"] = hdr(0x4242, 0x8183, ns=1) + qn + rr(name("", 12), 6, soa, 60)
seeds["r_servfail"] = hdr(0x4242, 0x8182) + qn
seeds["r_truncated"] = hdr(0x4242, 0x8380) + qn
https = struct.pack(">HB", 1, 0) + struct.pack(">HH", 1, 3) + b"\x02h2" + struct.pack(">HH", 4, 4) + \
    bytes([151, 101, 0, 223]) + struct.pack(">HH", 6, 16) + bytes.fromhex("2a044e42000000000000000000000223")
seeds["r_https_hints"] = hdr(0x4242, 0x8180, an=1) + q("pypi.org", 65) + rr(name("", 12), 65, https)
ech = struct.pack(">HH", 5, 8) + b"ECHCONF!"
https_ech = struct.pack(">HB", 1, 0) + struct.pack(">HH", 1, 3) + b"\x02h2" + struct.pack(">HH", 4, 4) + \
    bytes([151, 101, 0, 223]) + ech
seeds["r_https_ech"] = hdr(0x4242, 0x8180, an=2, ar=1) + q("pypi.org", 65) + rr(name("", 12), 65, https_ech) + \
    rr(name("", 12), 65, struct.pack(">H", 2) + name("svc.pypi.org") + ech) + rr(name("", 12), 64, https_ech)
seeds["r_https_ech_mandatory"] = hdr(0x4242, 0x8180, an=1) + q("pypi.org", 65) + \
    rr(name("", 12), 65, struct.pack(">HBHHH", 1, 0, 0, 2, 5) + ech)
seeds["r_https_imds_hint"] = hdr(0x4242, 0x8180, an=2) + q("pypi.org", 65) + \
    rr(name("", 12), 65, struct.pack(">HB", 1, 0) + struct.pack(">HH", 1, 3) + b"\x02h2" +
       struct.pack(">HH", 4, 4) + bytes([169, 254, 169, 254]) + ech) + \
    rr(name("", 12), 64, struct.pack(">HBHHH", 1, 0, 0, 2, 4) + struct.pack(">HH", 4, 4) + bytes([169, 254, 169, 254]))
seeds["h_https_keys_unsorted"] = hdr(0x4242, 0x8180, an=1) + q("pypi.org", 65) + \
    rr(name("", 12), 65, struct.pack(">HB", 1, 0) + ech + struct.pack(">HH", 1, 3) + b"\x02h2")
seeds["r_glue"] = hdr(0x4242, 0x8180, an=1, ns=1, ar=1) + qn + rr(name("", 12), 1, bytes([151, 101, 0, 223])) + \
    rr(name("", 17), 2, name("ns1.example.net")) + rr(name("ns1.example.net"), 1, bytes([198, 51, 100, 1]))
seeds["r_mx_srv"] = hdr(0x4242, 0x8180, an=2) + q("example.com", 15) + \
    rr(name("", 12), 15, b"\x00\x0a" + name("", 12)) + \
    rr(name("", 12), 33, b"\x00\x01\x00\x01\x01\xbb" + name("srv.example.com"))

# hostile
seeds["h_ptr_loop"] = hdr(1, 0x0100) + b"\x01a\xc0\x0c\x00\x01\x00\x01"
seeds["h_ptr_forward"] = hdr(1, 0x0100) + b"\xc0\x10\x00\x01\x00\x01\x00"
seeds["h_label64"] = hdr(1, 0x0100) + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01"
seeds["h_counts_lie"] = hdr(1, 0x8180, an=65535) + qn
seeds["h_truncated_rr"] = hdr(1, 0x8180, an=1) + qn + name("", 12) + b"\x00\x01\x00"
seeds["h_a_bad_len"] = hdr(1, 0x8180, an=1) + qn + rr(name("", 12), 1, b"\x01\x02\x03\x04\x05")
seeds["h_opt_in_answer"] = hdr(1, 0x8180, an=1) + qn + opt()
seeds["h_dot_in_label"] = hdr(1, 0x0100) + b"\x0aapi.github\x03com\x00\x00\x01\x00\x01"

os.makedirs(OUT, exist_ok=True)
for k, v in sorted(seeds.items()):
    with open(os.path.join(OUT, k + ".bin"), "wb") as f:
        f.write(v)
print(f"{len(seeds)} seeds in {OUT}")
