/* sidecar/dns/fuzz_dns_codec.c — libFuzzer target for the DNS codec and the filter built on it. Besides
 * memory safety (ASan, on an exactly-sized copy) it checks the codec's promises: a parsed message walks
 * exactly its counted records inside its bounds; re-encoding every record (names decompressed and
 * compressed again) gives a message that parses to the same records; every message the filter or the
 * builders emit parses, carries the right ID, binds only addresses it returns, and holds no HTTPS/SVCB
 * record with an ech, ipv4hint or ipv6hint SvcParam.
 * Seeds: sidecar/dns/fuzz/fuzz_dns_codec/ (made by sidecar/dns/fuzz/gen_dns_seeds.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/match.h"
#include "sidecar/dns/codec.h"
#include "sidecar/dns/filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

static void check_codec(const uint8_t *buf, size_t len)
{
	struct sk_dns_msg m;
	if (sk_dns_parse(buf, len, &m) != SK_DNS_OK)
		return;
	CHECK(m.end <= len && m.qend <= m.end);
	char text[SK_DNS_NAME_TEXT_MAX];
	if (m.has_q && sk_dns_name_text(&m.qname, text) == 0)
		CHECK(strlen(text) <= 253);

	static uint8_t out[SK_DNS_MSG_MAX];
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, sizeof(out));
	struct sk_dns_header h = m.hdr;
	h.qdcount = m.has_q ? 1 : 0;
	h.arcount = (uint16_t)(h.arcount - (m.has_opt ? 1 : 0));
	sk_dns_w_header(&w, &h);
	if (m.has_q) {
		sk_dns_w_name(&w, &m.qname, true);
		sk_dns_w_u16(&w, m.qtype);
		sk_dns_w_u16(&w, m.qclass);
	}
	size_t off = m.sec[SK_DNS_SEC_AN];
	unsigned left = (unsigned)m.hdr.ancount + m.hdr.nscount + m.hdr.arcount, walked = 0;
	struct sk_dns_rr rr;
	bool copied = true;
	while (sk_dns_rr_next(&m, &off, &left, &rr)) {
		CHECK(rr.end <= m.end);
		walked++;
		if (rr.type == SK_DNS_T_OPT)
			continue;
		copied = copied && sk_dns_w_copy_rr(&w, &m, &rr, rr.ttl);
	}
	CHECK(walked == (unsigned)m.hdr.ancount + m.hdr.nscount + m.hdr.arcount);
	CHECK(off == m.end);
	if (copied && !w.overflow) {
		struct sk_dns_msg r;
		CHECK(sk_dns_parse(out, w.len, &r) == SK_DNS_OK);
		CHECK(r.end == w.len);
		CHECK(r.hdr.ancount == m.hdr.ancount);
		if (m.has_q)
			CHECK(sk_dns_name_equal(&r.qname, &m.qname));
	}

	uint8_t resp[1024];
	int n = sk_dns_build_response(&m, SK_DNS_RC_NXDOMAIN, resp, sizeof(resp));
	if (n > 0) {
		struct sk_dns_msg r;
		CHECK(sk_dns_parse(resp, (size_t)n, &r) == SK_DNS_OK);
		CHECK(r.hdr.id == m.hdr.id);
	}
}

/* No HTTPS/SVCB record the filter returns carries an ipv4hint, ech or ipv6hint SvcParam (keys 4, 5, 6),
 * and each one's SvcParams fill its rdata exactly with strictly increasing keys. */
static void check_svcb_stripped(const struct sk_dns_msg *r)
{
	size_t off = r->sec[SK_DNS_SEC_AN];
	unsigned left = (unsigned)r->hdr.ancount + r->hdr.nscount + r->hdr.arcount;
	struct sk_dns_rr rr;
	while (sk_dns_rr_next(r, &off, &left, &rr)) {
		if (rr.type != SK_DNS_T_HTTPS && rr.type != SK_DNS_T_SVCB)
			continue;
		const uint8_t *b = r->buf;
		size_t p = rr.rdata + 2;
		CHECK(p < rr.end);
		while (b[p]) {
			CHECK(b[p] <= 63);
			p += (size_t)b[p] + 1;
			CHECK(p < rr.end);
		}
		p++;
		long prev = -1;
		while (p < rr.end) {
			CHECK(rr.end - p >= 4);
			const unsigned key = (unsigned)(b[p] << 8 | b[p + 1]), vlen = (unsigned)(b[p + 2] << 8 | b[p + 3]);
			CHECK((key < 4 || key > 6) && (long)key > prev && rr.end - p - 4 >= vlen);
			prev = (long)key;
			p += 4 + vlen;
		}
		CHECK(p == rr.end);
	}
}

static void check_filter(const uint8_t *buf, size_t len)
{
	struct sk_rule rules[2];
	uint16_t ports[1] = { 443 };
	uint16_t types[] = { SK_DNS_T_A, SK_DNS_T_CNAME, SK_DNS_T_AAAA, SK_DNS_T_SVCB, SK_DNS_T_HTTPS };
	memset(rules, 0, sizeof(rules));
	rules[0] = (struct sk_rule){ .kind = SK_RULE_HOST, .host = "pypi.org", .ports = ports, .n_ports = 1 };
	rules[1] = (struct sk_rule){ .kind = SK_RULE_HOST, .host = "example.com", .wildcard = true, .ports = ports,
				     .n_ports = 1 };
	struct sk_policy p;
	memset(&p, 0, sizeof(p));
	p.rules = rules;
	p.n_rules = 2;
	p.block_private = true;
	p.dns.max_query_length = 253;
	p.dns.allow_types = types;
	p.dns.n_allow_types = sizeof(types) / sizeof(types[0]);
	CHECK(sk_matcher_build(&p) == 0);

	static uint8_t out[SK_DNS_MSG_MAX];
	struct sk_dns_qverdict qv;
	for (int tcp = 0; tcp < 2; tcp++) {
		sk_dns_filter_query(&p, buf, len, tcp, out, 4096, &qv);
		if (qv.action == SK_DNS_ACT_ANSWER) {
			struct sk_dns_msg r;
			CHECK(sk_dns_parse(out, qv.len, &r) == SK_DNS_OK);
			CHECK(r.hdr.flags & SK_DNS_F_QR);
			CHECK(r.hdr.ancount == 0);
		} else if (qv.action == SK_DNS_ACT_FORWARD) {
			CHECK(qv.q.rule >= 0 && qv.q.name[0]);
			CHECK(sk_match_name(&p, qv.q.name) == qv.q.rule);   /* the filter skips re-normalising */
			int n = sk_dns_filter_upstream_query(&qv.q, 1, out, sizeof(out));
			CHECK(n > 0 && (size_t)n <= 12 + 255 + 4 + 11);
		}
	}

	/* The same bytes as the upstream's answer to "pypi.org A" and to the question they carry. */
	struct sk_dns_fquery q;
	memset(&q, 0, sizeof(q));
	CHECK(sk_dns_name_from_text("pypi.org", &q.qname) == 0);
	q.id = 0x4242;
	q.qtype = SK_DNS_T_A;
	q.qclass = SK_DNS_CLASS_IN;
	q.udp_limit = 512;
	q.edns = true;
	struct sk_dns_msg m;
	if (sk_dns_parse(buf, len, &m) == SK_DNS_OK && m.has_q) {
		q.qname = m.qname;
		q.qtype = m.qtype;
		q.qclass = m.qclass;
	}
	struct sk_dns_filter_opts opts = { .strict_chain = (len & 1) != 0 };
	for (int tcp = 0; tcp < 2; tcp++) {
		struct sk_dns_averdict av;
		sk_dns_filter_answer(&p, &opts, &q, buf, len, tcp, tcp, out, sizeof(out), &av);
		CHECK(av.n_bind <= SK_DNS_MAX_BINDINGS);
		if (av.action != SK_DNS_ACT_ANSWER)
			continue;
		struct sk_dns_msg r;
		CHECK(sk_dns_parse(out, av.len, &r) == SK_DNS_OK);
		CHECK(r.hdr.id == 0x4242);
		CHECK(tcp || av.len <= 512);
		check_svcb_stripped(&r);
		/* every bound address is in the answer returned, and none is private */
		for (size_t i = 0; i < av.n_bind; i++) {
			const struct sk_addr *a = &av.bind[i].addr;
			CHECK(!sk_addr_is_private(a) && !sk_addr_is_link_local(a));
			size_t alen = a->family == AF_INET ? 4 : 16;
			CHECK(memmem(out, av.len, a->bytes, alen) != NULL);
		}
	}
	sk_matcher_free(p.matcher);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > SK_DNS_MSG_MAX)
		return 0;
	uint8_t *copy = malloc(size ? size : 1);
	CHECK(copy);
	if (size)
		memcpy(copy, data, size);
	check_codec(copy, size);
	check_filter(copy, size);
	free(copy);
	return 0;
}
