/* sidecar/dns/filter_test.c — cmocka suite for the DNS filter's decisions against a hand-built policy:
 * a table of client queries with the expected action/result/rcode (allowed, denied, TXT/NULL/ANY/AXFR,
 * wrong class, several questions, long labels, broken messages), and upstream answers with the expected
 * rewrite and bindings (CNAME chains, injected records, rebinding, truncation, spoofed questions), and
 * the ech, ipv4hint and ipv6hint SvcParams stripped from HTTPS/SVCB records (lengths, pointers,
 * malformed SvcParams). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "common/util.h"
#include "policy/match.h"
#include "sidecar/dns/filter.h"

/* --- a hand-built policy ------------------------------------------------------------------------ */

static const uint16_t default_types[] = { SK_DNS_T_A, SK_DNS_T_CNAME, SK_DNS_T_AAAA, SK_DNS_T_SVCB,
					  SK_DNS_T_HTTPS };

struct pol {
	struct sk_policy p;
	struct sk_rule rules[8];
	uint16_t ports[8][2];
	uint16_t types[8];
};

static void add_host(struct pol *f, const char *host, bool wildcard, uint16_t port)
{
	struct sk_rule *r = &f->rules[f->p.n_rules];
	memset(r, 0, sizeof(*r));
	r->kind = SK_RULE_HOST;
	r->host = strdup(host);
	r->wildcard = wildcard;
	f->ports[f->p.n_rules][0] = port;
	r->ports = f->ports[f->p.n_rules];
	r->n_ports = 1;
	f->p.n_rules++;
}

static void add_cidr(struct pol *f, const char *cidr, uint16_t port)
{
	struct sk_rule *r = &f->rules[f->p.n_rules];
	memset(r, 0, sizeof(*r));
	r->kind = SK_RULE_CIDR;
	assert_int_equal(sk_cidr_parse(cidr, &r->cidr, NULL), 0);
	f->ports[f->p.n_rules][0] = port;
	r->ports = f->ports[f->p.n_rules];
	r->n_ports = 1;
	f->p.n_rules++;
}

static struct pol *pol_new(void)
{
	struct pol *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->p.rules = f->rules;
	f->p.mode = SK_MODE_ENFORCE;
	f->p.block_private = true;
	f->p.dns.deny = SK_DNS_DENY_NXDOMAIN;
	f->p.dns.max_query_length = 253;
	memcpy(f->types, default_types, sizeof(default_types));
	f->p.dns.allow_types = f->types;
	f->p.dns.n_allow_types = SK_ARRAY_SIZE(default_types);
	add_host(f, "api.github.com", false, 443);
	add_host(f, "githubusercontent.com", true, 443);
	add_host(f, "pypi.org", false, 443);
	add_host(f, "db.internal.example", false, 5432);
	add_cidr(f, "10.0.0.0/8", 5432);
	return f;
}

static void pol_build(struct pol *f)
{
	if (f->p.matcher)
		sk_matcher_free(f->p.matcher);
	f->p.matcher = NULL;
	assert_int_equal(sk_matcher_build(&f->p), 0);
}

static void pol_free(struct pol *f)
{
	for (size_t i = 0; i < f->p.n_rules; i++)
		free(f->rules[i].host);
	sk_matcher_free(f->p.matcher);
	free(f);
}

static int setup(void **state)
{
	struct pol *f = pol_new();
	pol_build(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	pol_free(*state);
	return 0;
}

/* --- message builders ---------------------------------------------------------------------------- */

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		unsigned v;
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		assert_true(n < cap);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* A query for name/type/class; edns_size 0 = no OPT. */
static size_t query(uint8_t *buf, size_t cap, uint16_t id, const char *name, uint16_t type, uint16_t cls,
		    uint16_t edns_size)
{
	struct sk_dns_writer w;
	sk_dns_w_init(&w, buf, cap);
	struct sk_dns_header h = { .id = id, .flags = SK_DNS_F_RD, .qdcount = 1, .arcount = edns_size ? 1 : 0 };
	sk_dns_w_header(&w, &h);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(name, &n), 0);
	sk_dns_w_name(&w, &n, false);
	sk_dns_w_u16(&w, type);
	sk_dns_w_u16(&w, cls);
	if (edns_size)
		sk_dns_w_opt(&w, edns_size, false, 0);
	assert_false(w.overflow);
	return w.len;
}

/* Upstream answer builder: begin with the question, then add records into the answer section (or
 * authority / additional with the section argument). */
struct ans {
	uint8_t buf[8192];
	struct sk_dns_writer w;
	uint16_t counts[3];
};

static void ans_begin(struct ans *a, uint16_t id, uint16_t flags, const char *qname, uint16_t qtype)
{
	sk_dns_w_init(&a->w, a->buf, sizeof(a->buf));
	memset(a->counts, 0, sizeof(a->counts));
	struct sk_dns_header h = { .id = id, .flags = (uint16_t)(SK_DNS_F_QR | SK_DNS_F_RD | SK_DNS_F_RA | flags),
				   .qdcount = 1 };
	sk_dns_w_header(&a->w, &h);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(qname, &n), 0);
	sk_dns_w_name(&a->w, &n, true);
	sk_dns_w_u16(&a->w, qtype);
	sk_dns_w_u16(&a->w, SK_DNS_CLASS_IN);
}

static void ans_rr(struct ans *a, int sec, const char *owner, uint16_t type, uint32_t ttl, const void *rdata,
		   uint16_t rdlen)
{
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(owner, &n), 0);
	sk_dns_w_name(&a->w, &n, true);
	sk_dns_w_u16(&a->w, type);
	sk_dns_w_u16(&a->w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(&a->w, ttl);
	sk_dns_w_u16(&a->w, rdlen);
	sk_dns_w_bytes(&a->w, rdata, rdlen);
	a->counts[sec]++;
	sk_dns_w_set_u16(&a->w, 6 + 2 * (size_t)sec, a->counts[sec]);
}

static void ans_addr(struct ans *a, int sec, const char *owner, const char *ip, uint32_t ttl)
{
	struct sk_addr ad;
	assert_int_equal(sk_addr_parse(ip, &ad), 0);
	ans_rr(a, sec, owner, ad.family == AF_INET ? SK_DNS_T_A : SK_DNS_T_AAAA, ttl, ad.bytes,
	       ad.family == AF_INET ? 4 : 16);
}

static void ans_cname(struct ans *a, const char *owner, const char *target, uint32_t ttl)
{
	struct sk_dns_name n, t;
	assert_int_equal(sk_dns_name_from_text(owner, &n), 0);
	assert_int_equal(sk_dns_name_from_text(target, &t), 0);
	sk_dns_w_name(&a->w, &n, true);
	sk_dns_w_u16(&a->w, SK_DNS_T_CNAME);
	sk_dns_w_u16(&a->w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(&a->w, ttl);
	size_t at = a->w.len;
	sk_dns_w_u16(&a->w, 0);
	size_t start = a->w.len;
	sk_dns_w_name(&a->w, &t, true);   /* compressed, as real servers do */
	sk_dns_w_set_u16(&a->w, at, (uint16_t)(a->w.len - start));
	a->counts[0]++;
	sk_dns_w_set_u16(&a->w, 6, a->counts[0]);
}

/* --- query side ----------------------------------------------------------------------------------- */

struct qcase {
	const char *name;
	const char *qname;             /* built with query(); NULL = use hex */
	const char *hex;
	enum sk_dns_action action;
	enum sk_dns_result result;
	int rcode;
	uint16_t qtype, qclass;
};

#define Q(n, name, type, act, res, rc) { n, name, NULL, act, res, rc, type, SK_DNS_CLASS_IN }
#define H(n, hex, act, res, rc) { n, NULL, hex, act, res, rc, 0, 0 }
#define QNAME_EX "07 6578616d706c65 03 636f6d 00 "
static const struct qcase qcases[] = {
	Q("allowed exact A", "api.github.com", SK_DNS_T_A, SK_DNS_ACT_FORWARD, SK_DNS_R_FORWARDED, 0),
	Q("allowed, mixed case", "API.GitHub.Com", SK_DNS_T_AAAA, SK_DNS_ACT_FORWARD, SK_DNS_R_FORWARDED, 0),
	Q("allowed wildcard subdomain", "raw.githubusercontent.com", SK_DNS_T_A, SK_DNS_ACT_FORWARD,
	  SK_DNS_R_FORWARDED, 0),
	Q("allowed HTTPS", "pypi.org", SK_DNS_T_HTTPS, SK_DNS_ACT_FORWARD, SK_DNS_R_FORWARDED, 0),
	Q("wildcard apex denied", "githubusercontent.com", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_DENIED,
	  SK_DNS_RC_NXDOMAIN),
	Q("subdomain of exact rule denied", "x.api.github.com", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_DENIED,
	  SK_DNS_RC_NXDOMAIN),
	Q("unlisted name denied", "evil.example", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_DENIED,
	  SK_DNS_RC_NXDOMAIN),
	Q("exfil label on a denied name", "c2VjcmV0.evil.example", SK_DNS_T_A, SK_DNS_ACT_ANSWER,
	  SK_DNS_R_DENIED, SK_DNS_RC_NXDOMAIN),
	Q("TXT refused", "api.github.com", SK_DNS_T_TXT, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("NULL refused", "api.github.com", SK_DNS_T_NULL, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("ANY refused", "api.github.com", SK_DNS_T_ANY, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("AXFR refused", "api.github.com", SK_DNS_T_AXFR, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("IXFR refused", "api.github.com", SK_DNS_T_IXFR, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("MX refused", "api.github.com", SK_DNS_T_MX, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("OPT as qtype refused", "api.github.com", SK_DNS_T_OPT, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_TYPE,
	  SK_DNS_RC_REFUSED),
	Q("TXT on a denied name refused (type first)", "evil.example", SK_DNS_T_TXT, SK_DNS_ACT_ANSWER,
	  SK_DNS_R_REFUSED_TYPE, SK_DNS_RC_REFUSED),
	{ "class CH refused", "version.bind", NULL, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_CLASS, SK_DNS_RC_REFUSED,
	  SK_DNS_T_TXT, 3 },
	{ "class ANY refused", "api.github.com", NULL, SK_DNS_ACT_ANSWER, SK_DNS_R_REFUSED_CLASS,
	  SK_DNS_RC_REFUSED, SK_DNS_T_A, 255 },
	Q("numeric last label", "1.2.3.4", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_BAD_NAME, SK_DNS_RC_NXDOMAIN),
	Q("underscore label", "_dmarc.api.github.com", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_BAD_NAME,
	  SK_DNS_RC_NXDOMAIN),
	Q("root name", "", SK_DNS_T_A, SK_DNS_ACT_ANSWER, SK_DNS_R_BAD_NAME, SK_DNS_RC_NXDOMAIN),
	/* "api.github" as ONE label, then "com": reads as api.github.com in naive text */
	H("dot inside a label", "1234 0100 0001 0000 0000 0000 0a 6170692e676974687562 03 636f6d 00 0001 0001",
	  SK_DNS_ACT_ANSWER, SK_DNS_R_BAD_NAME, SK_DNS_RC_NXDOMAIN),
	H("NUL inside a label", "1234 0100 0001 0000 0000 0000 04 70797069 04 6f726700 00 0001 0001",
	  SK_DNS_ACT_ANSWER, SK_DNS_R_BAD_NAME, SK_DNS_RC_NXDOMAIN),
	H("two questions", "1234 0100 0002 0000 0000 0000 " QNAME_EX "0001 0001 " QNAME_EX "0001 0001",
	  SK_DNS_ACT_ANSWER, SK_DNS_R_QDCOUNT, SK_DNS_RC_FORMERR),
	H("no question", "1234 0100 0000 0000 0000 0000", SK_DNS_ACT_ANSWER, SK_DNS_R_QDCOUNT, SK_DNS_RC_FORMERR),
	H("pointer loop", "1234 0100 0001 0000 0000 0000 01 61 c00c 0001 0001", SK_DNS_ACT_ANSWER,
	  SK_DNS_R_MALFORMED, SK_DNS_RC_FORMERR),
	H("count lies", "1234 0100 0001 0005 0000 0000 " QNAME_EX "0001 0001", SK_DNS_ACT_ANSWER,
	  SK_DNS_R_MALFORMED, SK_DNS_RC_FORMERR),
	H("label type 0x40", "1234 0100 0001 0000 0000 0000 41 00 0001 0001", SK_DNS_ACT_ANSWER,
	  SK_DNS_R_MALFORMED, SK_DNS_RC_FORMERR),
	H("five bytes", "1234 0100 00", SK_DNS_ACT_DROP, SK_DNS_R_MALFORMED, 0),
	H("a response (QR set)", "1234 8180 0001 0000 0000 0000 " QNAME_EX "0001 0001", SK_DNS_ACT_DROP,
	  SK_DNS_R_NOT_QUERY, 0),
	H("opcode STATUS", "1234 1100 0001 0000 0000 0000 " QNAME_EX "0001 0001", SK_DNS_ACT_ANSWER,
	  SK_DNS_R_NOTIMP, SK_DNS_RC_NOTIMP),
	H("opcode UPDATE", "1234 2800 0001 0000 0000 0000 " QNAME_EX "0006 0001", SK_DNS_ACT_ANSWER,
	  SK_DNS_R_NOTIMP, SK_DNS_RC_NOTIMP),
	H("EDNS version 1", "1234 0100 0001 0000 0000 0001 08 6170692d74657374 03 636f6d 00 0001 0001 "
	  "00 0029 1000 0001 0000 0000", SK_DNS_ACT_ANSWER, SK_DNS_R_BADVERS, 16),
};

static void test_query_table(void **state)
{
	struct pol *f = *state;
	assert_true(SK_ARRAY_SIZE(qcases) >= 30);
	uint8_t msg[1024], out[1024];
	for (size_t i = 0; i < SK_ARRAY_SIZE(qcases); i++) {
		const struct qcase *c = &qcases[i];
		size_t n = c->qname ? query(msg, sizeof(msg), 0x1234, c->qname, c->qtype, c->qclass, 0)
				    : unhex(c->hex, msg, sizeof(msg));
		struct sk_dns_qverdict v;
		sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
		if (v.action != c->action || v.result != c->result || (c->action == SK_DNS_ACT_ANSWER && v.rcode != c->rcode))
			fail_msg("case '%s': got action %d result %s rcode %d", c->name, v.action,
				 sk_dns_result_name(v.result), v.rcode);
		if (v.action == SK_DNS_ACT_ANSWER) {
			struct sk_dns_msg r;
			assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
			assert_int_equal(r.hdr.id, 0x1234);
			assert_true(r.hdr.flags & SK_DNS_F_QR);
			assert_true(r.hdr.flags & SK_DNS_F_RA);
			assert_int_equal(SK_DNS_RCODE(r.hdr.flags), (unsigned)c->rcode & 0xfu);
			assert_int_equal(r.hdr.ancount, 0);
			/* anything past parsing echoes the question (glibc/musl match answers by it) */
			if (c->result != SK_DNS_R_MALFORMED && c->result != SK_DNS_R_QDCOUNT) {
				assert_int_equal(r.hdr.qdcount, 1);
				struct sk_dns_msg qm;
				assert_int_equal(sk_dns_parse(msg, n, &qm), SK_DNS_OK);
				assert_true(sk_dns_name_equal(&r.qname, &qm.qname));
				assert_int_equal(r.qtype, qm.qtype);
			}
		}
	}
}

static void test_forward_carries_normalised_name_and_rule(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512], up[512];
	size_t n = query(msg, sizeof(msg), 0x7777, "RAW.githubusercontent.COM", SK_DNS_T_A, SK_DNS_CLASS_IN, 1232);
	struct sk_dns_qverdict v;
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	assert_string_equal(v.q.name, "raw.githubusercontent.com");
	assert_int_equal(v.q.rule, 1);
	assert_int_equal(v.q.id, 0x7777);
	assert_true(v.q.edns);
	assert_int_equal(v.q.udp_limit, 1232);
	assert_false(v.q.audit);

	int ul = sk_dns_filter_upstream_query(&v.q, 0xabcd, up, sizeof(up));
	assert_true(ul > 0);
	struct sk_dns_msg um;
	assert_int_equal(sk_dns_parse(up, (size_t)ul, &um), SK_DNS_OK);
	assert_int_equal(um.hdr.id, 0xabcd);
	assert_true(um.hdr.flags & SK_DNS_F_RD);
	assert_int_equal(um.hdr.arcount, 1);   /* our OPT only */
	assert_int_equal(um.end, (size_t)ul);
	char text[SK_DNS_NAME_TEXT_MAX];
	assert_int_equal(sk_dns_name_text(&um.qname, text), 0);
	assert_string_equal(text, "raw.githubusercontent.com");
}

/* Whatever the client appends (extra records, options, trailing bytes) never reaches the upstream. */
static void test_upstream_query_drops_client_extras(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512], up[512];
	/* api.github.com with an authority TXT record carrying data, an OPT with an option, and
	 * trailing bytes */
	size_t n = query(msg, sizeof(msg), 0x4242, "api.github.com", SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
	msg[9] = 1;   /* nscount */
	msg[11] = 1;  /* arcount */
	n += unhex("c00c 0010 0001 00000000 0007 06 736563726574 "
		   "00 0029 1000 00000000 000c fde9 0008 6578666c74726174 "
		   "6d6f726564617461", msg + n, sizeof(msg) - n);
	struct sk_dns_qverdict v;
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	int ul = sk_dns_filter_upstream_query(&v.q, 1, up, sizeof(up));
	assert_true(ul > 0);
	assert_null(memmem(up, (size_t)ul, "secret", 6));
	assert_null(memmem(up, (size_t)ul, "exfltrat", 8));
	assert_null(memmem(up, (size_t)ul, "moredata", 8));
	assert_int_equal(ul, 12 + 16 + 4 + 11);
}

/* Side channels: the name's case, the header bits and the client's EDNS (DO, size,
 * options) never reach upstream. Queries for the same question that differ only in those forward the
 * same bytes (same upstream ID given), and the client still gets its own spelling back. */
static size_t query_raw(uint8_t *buf, size_t cap, uint16_t id, uint16_t flags, const char *name, const char *opt_hex)
{
	struct sk_dns_writer w;
	sk_dns_w_init(&w, buf, cap);
	struct sk_dns_header h = { .id = id, .flags = flags, .qdcount = 1, .arcount = opt_hex ? 1 : 0 };
	sk_dns_w_header(&w, &h);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(name, &n), 0);
	sk_dns_w_name(&w, &n, false);
	sk_dns_w_u16(&w, SK_DNS_T_A);
	sk_dns_w_u16(&w, SK_DNS_CLASS_IN);
	assert_false(w.overflow);
	if (opt_hex)
		w.len += unhex(opt_hex, buf + w.len, cap - w.len);
	return w.len;
}

static void test_upstream_query_canonical(void **state)
{
	struct pol *f = *state;
	static const struct {
		uint16_t flags;
		const char *name, *opt;
	} variants[] = {
		{ SK_DNS_F_RD, "api.github.com", NULL },
		{ SK_DNS_F_RD, "API.GitHub.COM", NULL },
		{ 0, "aPi.gItHuB.cOm", NULL },                                        /* RD clear */
		{ SK_DNS_F_RD | SK_DNS_F_CD | SK_DNS_F_AD | 0x0040u, "api.github.com", NULL },   /* CD, AD, Z */
		{ SK_DNS_F_RD | SK_DNS_F_AA | SK_DNS_F_TC | SK_DNS_F_RA | 0x000fu, "api.github.com", NULL },
		/* OPT: size 4096, DO=1, a cookie option */
		{ SK_DNS_F_RD, "api.github.com", "00 0029 1000 00008000 000c 000a 0008 0102030405060708" },
		/* OPT: size 512, DO=0, Z bits, padding option */
		{ SK_DNS_F_RD | SK_DNS_F_CD, "Api.github.com", "00 0029 0200 00007fff 0006 000c 0002 abcd" },
		/* OPT: size 65535, no options */
		{ SK_DNS_F_AD, "api.github.COM", "00 0029 ffff 00000000 0000" },
	};
	uint8_t first[512];
	int first_len = -1;
	for (size_t i = 0; i < SK_ARRAY_SIZE(variants); i++) {
		uint8_t msg[512], out[512], up[512];
		size_t n = query_raw(msg, sizeof(msg), (uint16_t)(0x1000 + i), variants[i].flags, variants[i].name,
				     variants[i].opt);
		struct sk_dns_qverdict v;
		sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
		assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
		int ul = sk_dns_filter_upstream_query(&v.q, 0x7777, up, sizeof(up));
		assert_true(ul > 0);
		if (first_len < 0) {
			memcpy(first, up, (size_t)ul);
			first_len = ul;
		}
		if (ul != first_len || memcmp(up, first, (size_t)ul) != 0) {
			(void)fprintf(stderr, "variant %zu (%s) forwards different bytes\n", i, variants[i].name);
			fail();
		}
	}
	/* and those bytes are: ID, RD alone, the lower-case name, our OPT (1232, DO=0, no options) */
	struct sk_dns_msg m;
	assert_int_equal(sk_dns_parse(first, (size_t)first_len, &m), SK_DNS_OK);
	assert_int_equal(m.hdr.id, 0x7777);
	assert_int_equal(m.hdr.flags, SK_DNS_F_RD);
	assert_non_null(memmem(first, (size_t)first_len, "\x03" "api" "\x06" "github" "\x03" "com", 15));
	assert_true(m.has_opt);
	assert_int_equal(m.udp_size, SK_DNS_EDNS_SIZE);
	assert_false(m.do_bit);
	assert_int_equal(m.edns_version, 0);
	assert_int_equal(first_len, 12 + 16 + 4 + 11);   /* OPT with RDLENGTH 0 */

	/* The answer (upstream answers the lower-case question) echoes the client's spelling and flags. */
	uint8_t msg[512], out[2048], qout[512];
	size_t n = query_raw(msg, sizeof(msg), 0x2468, SK_DNS_F_RD | SK_DNS_F_CD, "API.GitHub.COM",
			     "00 0029 1000 00008000 0000");
	struct sk_dns_qverdict qv;
	sk_dns_filter_query(&f->p, msg, n, false, qout, sizeof(qout), &qv);
	assert_int_equal(qv.action, SK_DNS_ACT_FORWARD);
	struct ans a;
	ans_begin(&a, 0x7777, 0, "api.github.com", SK_DNS_T_A);
	ans_addr(&a, 0, "api.github.com", "140.82.112.5", 60);
	struct sk_dns_averdict av;
	sk_dns_filter_answer(&f->p, NULL, &qv.q, a.buf, a.w.len, false, false, out, sizeof(out), &av);
	assert_int_equal(av.result, SK_DNS_R_ANSWERED);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, av.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.id, 0x2468);
	assert_memory_equal(out + 12, msg + 12, 16 + 4);   /* the question, byte for byte */
	assert_true(r.hdr.flags & SK_DNS_F_CD);
	assert_true(r.has_opt);
	assert_true(r.do_bit);
	assert_int_equal(r.hdr.ancount, 1);
}

static void test_deny_refused_mode_and_long_names(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	f->p.dns.deny = SK_DNS_DENY_REFUSED;
	size_t n = query(msg, sizeof(msg), 1, "evil.example", SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_DENIED);
	assert_int_equal(v.rcode, SK_DNS_RC_REFUSED);
	f->p.dns.deny = SK_DNS_DENY_NXDOMAIN;

	/* exfiltration through long labels under an allowed wildcard suffix */
	char name[300];
	(void)snprintf(name, sizeof(name), "%.60s.%.60s.x.githubusercontent.com",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	n = query(msg, sizeof(msg), 1, name, SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);   /* 145 bytes, under 253 */
	f->p.dns.max_query_length = 100;
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.result, SK_DNS_R_TOO_LONG);
	assert_int_equal(v.rcode, SK_DNS_RC_REFUSED);
	f->p.dns.max_query_length = 253;

	/* a label of 64 cannot even be encoded: the parser refuses it → FORMERR */
	uint8_t big[400];
	size_t bn = unhex("0001 0100 0001 0000 0000 0000 40", big, sizeof(big));
	memset(big + bn, 'a', 64);
	bn += 64;
	bn += unhex("03 636f6d 00 0001 0001", big + bn, sizeof(big) - bn);
	sk_dns_filter_query(&f->p, big, bn, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_MALFORMED);
	assert_int_equal(v.rcode, SK_DNS_RC_FORMERR);
}

static void test_allow_types_from_policy(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	size_t n = query(msg, sizeof(msg), 1, "api.github.com", SK_DNS_T_TXT, SK_DNS_CLASS_IN, 0);
	f->types[f->p.dns.n_allow_types++] = SK_DNS_T_TXT;
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	/* AXFR stays refused even if listed */
	f->types[f->p.dns.n_allow_types++] = SK_DNS_T_AXFR;
	n = query(msg, sizeof(msg), 1, "api.github.com", SK_DNS_T_AXFR, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query(&f->p, msg, n, true, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_REFUSED_TYPE);
	f->p.dns.n_allow_types = SK_ARRAY_SIZE(default_types);
}

static void test_audit_mode_forwards_denials(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	f->p.mode = SK_MODE_AUDIT;
	size_t n = query(msg, sizeof(msg), 1, "evil.example", SK_DNS_T_TXT, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	assert_true(v.q.audit);
	assert_int_equal(v.q.would, SK_DNS_R_REFUSED_TYPE);
	/* protocol errors are still answered locally */
	n = unhex("1234 0100 0000 0000 0000 0000", msg, sizeof(msg));
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	f->p.mode = SK_MODE_ENFORCE;
}

/* a placeholder or value of a secret in a name is credential_misuse, REFUSED in every mode, and
 * the name the audit line would write is replaced */
static void test_credential_misuse(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	char *hosts[] = { "api.github.com" };
	struct sk_secret sec = { .name = "github", .placeholder = "stockade-secret-github", .hosts = hosts, .n_hosts = 1 };
	f->p.secrets = &sec;
	f->p.n_secrets = 1;
	const struct sk_secret_value val = { "ghp_realVALUE0123456789", 23 };
	const char *bad[] = { "stockade-secret-github.api.github.com", "x.STOCKADE-SECRET-GITHUB.evil.example",
			      "stockade-secret.github.evil.example" /* not it: placeholder with a dot */ };
	for (int audit = 0; audit < 2; audit++) {
		f->p.mode = audit ? SK_MODE_AUDIT : SK_MODE_ENFORCE;
		for (size_t i = 0; i < 2; i++) {
			size_t n = query(msg, sizeof(msg), 1, bad[i], SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
			sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
			assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
			assert_int_equal(v.result, SK_DNS_R_CREDENTIAL_MISUSE);
			assert_int_equal(v.rcode, SK_DNS_RC_REFUSED);
			assert_string_equal(v.q.name, SK_DNS_MISUSE_NAME);
			assert_string_equal(sk_dns_result_name(v.result), "credential_misuse");
		}
	}
	f->p.mode = SK_MODE_ENFORCE;
	size_t n = query(msg, sizeof(msg), 1, bad[2], SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_DENIED);
	/* the value, split across labels and in hex, is found only when the values are given */
	const char *vnames[] = { "ghp_realvalue0.123456789.evil.example",
				 "676870.5f7265616c56414c5545303132333435363738.39.evil.example" };
	for (size_t i = 0; i < 2; i++) {
		n = query(msg, sizeof(msg), 1, vnames[i], SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
		sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
		assert_int_not_equal(v.result, SK_DNS_R_CREDENTIAL_MISUSE);
		sk_dns_filter_query_ex(&f->p, &val, msg, n, false, out, sizeof(out), &v);
		assert_int_equal(v.result, SK_DNS_R_CREDENTIAL_MISUSE);
		assert_null(strstr(v.q.name, "123456789"));
	}
	/* an allowed name is untouched by the check */
	n = query(msg, sizeof(msg), 1, "api.github.com", SK_DNS_T_A, SK_DNS_CLASS_IN, 0);
	sk_dns_filter_query_ex(&f->p, &val, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	f->p.secrets = NULL;
	f->p.n_secrets = 0;
}

static void test_udp_limit(void **state)
{
	struct pol *f = *state;
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	static const struct { uint16_t edns; bool tcp; uint16_t want; } cases[] = {
		{ 0, false, 512 }, { 100, false, 512 }, { 1232, false, 1232 }, { 65000, false, 4096 }, { 0, true, 4096 },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		size_t n = query(msg, sizeof(msg), 1, "pypi.org", SK_DNS_T_A, SK_DNS_CLASS_IN, cases[i].edns);
		sk_dns_filter_query(&f->p, msg, n, cases[i].tcp, out, sizeof(out), &v);
		assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
		assert_int_equal(v.q.udp_limit, cases[i].want);
	}
}

/* --- answer side ------------------------------------------------------------------------------------ */

/* Runs the query through the filter (must be forwarded) and returns its fquery. */
static struct sk_dns_fquery fq(struct pol *f, const char *name, uint16_t type, uint16_t edns)
{
	uint8_t msg[512], out[512];
	struct sk_dns_qverdict v;
	size_t n = query(msg, sizeof(msg), 0x5151, name, type, SK_DNS_CLASS_IN, edns);
	sk_dns_filter_query(&f->p, msg, n, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	return v.q;
}

static void run_answer(struct pol *f, const struct sk_dns_filter_opts *o, const struct sk_dns_fquery *q,
		       struct ans *a, bool client_tcp, uint8_t *out, size_t cap, struct sk_dns_averdict *v)
{
	assert_false(a->w.overflow);
	sk_dns_filter_answer(&f->p, o, q, a->buf, a->w.len, false, client_tcp, out, cap, v);
}

static bool has_addr(const struct sk_dns_averdict *v, const char *ip)
{
	struct sk_addr a;
	assert_int_equal(sk_addr_parse(ip, &a), 0);
	for (size_t i = 0; i < v->n_bind; i++)
		if (sk_addr_equal(&v->bind[i].addr, &a))
			return true;
	return false;
}

static void test_answer_simple_binds_and_caps_ttl(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "Api.GitHub.com", SK_DNS_T_A, 1232);
	struct ans a;
	ans_begin(&a, 0x9999, 0, "api.github.com", SK_DNS_T_A);
	ans_addr(&a, 0, "api.github.com", "140.82.112.5", 86400);
	ans_addr(&a, 0, "api.github.com", "140.82.112.6", 20);
	ans_rr(&a, 1, "github.com", SK_DNS_T_NS, 3600, "\x02ns\x00", 4);
	ans_addr(&a, 2, "ns.github.com", "192.0.2.53", 3600);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, 2);
	assert_true(has_addr(&v, "140.82.112.5"));
	assert_int_equal(v.bind[0].ttl, 3600);
	assert_int_equal(v.bind[1].ttl, 20);
	assert_int_equal(v.stripped, 2);   /* the NS and the glue */
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.id, 0x5151);               /* client's ID, not upstream's */
	assert_int_equal(r.qname.wire[1], 'A');           /* the client's spelling is echoed */
	assert_int_equal(r.hdr.ancount, 2);
	assert_int_equal(r.hdr.nscount, 0);
	assert_int_equal(r.hdr.arcount, 1);
	assert_true(r.has_opt);
	size_t off = r.sec[0];
	unsigned left = 2;
	struct sk_dns_rr rr;
	assert_true(sk_dns_rr_next(&r, &off, &left, &rr));
	assert_int_equal(rr.ttl, 3600);
}

static void test_answer_cname_chain(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "raw.githubusercontent.com", SK_DNS_T_A, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "raw.githubusercontent.com", SK_DNS_T_A);
	ans_cname(&a, "raw.githubusercontent.com", "github.map.fastly.net", 300);
	ans_cname(&a, "github.map.fastly.net", "edge.fastly.net", 300);
	ans_addr(&a, 0, "edge.fastly.net", "185.199.108.133", 60);
	ans_addr(&a, 0, "edge.fastly.net", "2606:50c0:8000::154", 60);
	ans_addr(&a, 0, "unrelated.example", "203.0.113.9", 60);     /* injected, off the chain */
	ans_cname(&a, "other.example", "raw.githubusercontent.com", 60); /* points INTO the chain: off it */
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, 2);
	assert_true(has_addr(&v, "185.199.108.133"));
	assert_true(has_addr(&v, "2606:50c0:8000::154"));
	assert_false(has_addr(&v, "203.0.113.9"));
	assert_int_equal(v.stripped, 2);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 4);
	assert_null(memmem(out, v.len, "unrelated", 9));

	/* strict mode: the chain left the allowed set, so its addresses go */
	struct sk_dns_filter_opts strict = { .strict_chain = true };
	run_answer(f, &strict, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.n_bind, 0);
	assert_int_equal(v.stripped, 4);
}

static void test_answer_cname_loop_terminates(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	ans_cname(&a, "pypi.org", "a.example", 60);
	ans_cname(&a, "a.example", "b.example", 60);
	ans_cname(&a, "b.example", "pypi.org", 60);
	ans_addr(&a, 0, "b.example", "151.101.0.223", 60);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.n_bind, 1);
}

static void test_answer_long_chain_capped(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 1232);
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	char prev[32] = "pypi.org", next[32];
	for (int i = 0; i < 20; i++) {
		(void)snprintf(next, sizeof(next), "c%d.example", i);
		ans_cname(&a, prev, next, 60);
		memcpy(prev, next, sizeof(prev));
	}
	ans_addr(&a, 0, prev, "151.101.0.223", 60);
	uint8_t out[4096];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.n_bind, 0);   /* 20 hops > SK_DNS_CHAIN_MAX: the address is not reached */
}

static void test_answer_rebinding_refused(void **state)
{
	struct pol *f = *state;
	static const char *bad[] = { "172.16.5.4", "127.0.0.1", "192.168.1.10", "169.254.169.254", "100.64.0.1",
				     "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "64:ff9b::c0a8:101",
				     "2002:c0a8:0101::1" };
	uint8_t out[2048];
	struct sk_dns_averdict v;
	for (size_t i = 0; i < SK_ARRAY_SIZE(bad); i++) {
		uint16_t t = strchr(bad[i], ':') ? SK_DNS_T_AAAA : SK_DNS_T_A;
		struct sk_dns_fquery q = fq(f, "pypi.org", t, 0);
		struct ans a;
		ans_begin(&a, 1, 0, "pypi.org", t);
		ans_addr(&a, 0, "pypi.org", t == SK_DNS_T_A ? "151.101.0.223" : "2a04:4e42::223", 60);
		ans_addr(&a, 0, "pypi.org", bad[i], 60);
		run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
		if (v.result != SK_DNS_R_REBINDING || v.rcode != SK_DNS_RC_REFUSED || v.n_bind != 0)
			fail_msg("%s: result %s rcode %d", bad[i], sk_dns_result_name(v.result), v.rcode);
		struct sk_dns_msg r;
		assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
		assert_int_equal(r.hdr.ancount, 0);
	}
}

/* Found by fuzz_dns_filter (2026-11-24): an A/AAAA record on the chain whose class is not IN (here CH,
 * carrying the metadata address) is copied to the client as it came: not checked for rebinding, not bound
 * (musl's stub does not look at the class). The filter now strips records of any class but IN. */
static void test_answer_address_of_other_class(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	ans_addr(&a, 0, "pypi.org", "151.101.0.223", 60);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text("pypi.org", &n), 0);
	sk_dns_w_name(&a.w, &n, true);
	sk_dns_w_u16(&a.w, SK_DNS_T_A);
	sk_dns_w_u16(&a.w, 3 /* CH */);
	sk_dns_w_u32(&a.w, 60);
	sk_dns_w_u16(&a.w, 4);
	sk_dns_w_bytes(&a.w, "\xa9\xfe\xa9\xfe", 4);   /* 169.254.169.254 */
	sk_dns_w_set_u16(&a.w, 6, ++a.counts[0]);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	size_t off = r.sec[0], n_addr = 0;
	unsigned left = r.hdr.ancount;
	struct sk_dns_rr rr;
	while (sk_dns_rr_next(&r, &off, &left, &rr)) {
		if (rr.type != SK_DNS_T_A && rr.type != SK_DNS_T_AAAA)
			continue;
		assert_int_equal(rr.rclass, SK_DNS_CLASS_IN);   /* every address returned is one the filter judged */
		n_addr++;
	}
	assert_int_equal(n_addr, v.n_bind);                 /* ... and bound */
}

static void test_answer_private_vouched_by_cidr_rule(void **state)
{
	struct pol *f = *state;
	/* db.internal.example → 10.3.4.5 is covered by the 10.0.0.0/8 rule */
	struct sk_dns_fquery q = fq(f, "db.internal.example", SK_DNS_T_A, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "db.internal.example", SK_DNS_T_A);
	ans_addr(&a, 0, "db.internal.example", "10.3.4.5", 60);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, 1);
	/* 192.168.x is not covered */
	ans_begin(&a, 1, 0, "db.internal.example", SK_DNS_T_A);
	ans_addr(&a, 0, "db.internal.example", "192.168.3.4", 60);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_REBINDING);
}

static void test_answer_block_private_off(void **state)
{
	struct pol *f = *state;
	f->p.block_private = false;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	ans_addr(&a, 0, "pypi.org", "192.168.1.10", 60);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, 1);
	/* link-local stays refused */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	ans_addr(&a, 0, "pypi.org", "169.254.169.254", 60);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_REBINDING);
	f->p.block_private = true;

	/* audit mode: returned and bound, but reported */
	f->p.mode = SK_MODE_AUDIT;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.result, SK_DNS_R_REBINDING);
	assert_int_equal(v.rcode, SK_DNS_RC_NOERROR);
	assert_int_equal(v.n_bind, 1);
	f->p.mode = SK_MODE_ENFORCE;
}

static void test_answer_truncation(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 0);   /* no EDNS: 512 bytes over UDP */
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	char ip[32];
	for (int i = 0; i < 40; i++) {
		(void)snprintf(ip, sizeof(ip), "151.101.%d.%d", i / 200, i % 200 + 1);
		ans_addr(&a, 0, "pypi.org", ip, 60);
	}
	uint8_t out[8192];
	struct sk_dns_averdict v;
	/* upstream said TC over UDP: ask again over TCP */
	a.buf[2] |= SK_DNS_F_TC >> 8;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_RETRY_TCP);
	a.buf[2] &= (uint8_t)~(SK_DNS_F_TC >> 8);
	/* 40 × 16 bytes > 512: the UDP client gets TC=1 and nothing is bound */
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_TRUNCATED);
	assert_int_equal(v.n_bind, 0);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_true(r.hdr.flags & SK_DNS_F_TC);
	assert_int_equal(r.hdr.ancount, 0);
	assert_int_equal(r.hdr.qdcount, 1);
	/* over TCP: the first SK_DNS_MAX_BINDINGS addresses, the rest stripped */
	run_answer(f, NULL, &q, &a, true, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, SK_DNS_MAX_BINDINGS);
	assert_int_equal(v.stripped, 40 - SK_DNS_MAX_BINDINGS);
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, SK_DNS_MAX_BINDINGS);
}

static void test_answer_spoofed_or_broken(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_A, 0);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	struct ans a;
	/* answer for another name */
	ans_begin(&a, 1, 0, "evil.example", SK_DNS_T_A);
	ans_addr(&a, 0, "evil.example", "203.0.113.1", 60);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	assert_int_equal(v.rcode, SK_DNS_RC_SERVFAIL);
	assert_int_equal(v.n_bind, 0);
	/* answer for another type */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_AAAA);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	/* not a response */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	a.buf[2] &= 0x7f;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	/* malformed: count lies */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	a.buf[7] = 3;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	/* CNAME with broken rdata on the chain */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_A);
	ans_rr(&a, 0, "pypi.org", SK_DNS_T_CNAME, 60, "\x05" "ab", 3);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.id, 0x5151);
	assert_int_equal(r.hdr.ancount, 0);
}

static void test_answer_negative_and_errors(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_AAAA, 1232);
	uint8_t out[2048];
	struct sk_dns_averdict v;
	struct ans a;
	/* NODATA with SOA: SOA kept for negative caching */
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_AAAA);
	static const uint8_t soa[] = { 2, 'n', 's', 0, 2, 'h', 'm', 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,
				       4, 0, 0, 0, 60 };
	ans_rr(&a, 1, "pypi.org", SK_DNS_T_SOA, 86400, soa, sizeof(soa));
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.rcode, SK_DNS_RC_NOERROR);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 0);
	assert_int_equal(r.hdr.nscount, 1);
	/* NXDOMAIN passes as NXDOMAIN */
	ans_begin(&a, 1, SK_DNS_RC_NXDOMAIN, "pypi.org", SK_DNS_T_AAAA);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.rcode, SK_DNS_RC_NXDOMAIN);
	/* SERVFAIL and REFUSED pass on without records */
	ans_begin(&a, 1, SK_DNS_RC_SERVFAIL, "pypi.org", SK_DNS_T_AAAA);
	ans_addr(&a, 0, "pypi.org", "2a04:4e42::223", 60);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.rcode, SK_DNS_RC_SERVFAIL);
	assert_int_equal(v.n_bind, 0);
	assert_int_equal(v.result, SK_DNS_R_UPSTREAM_ERROR);
	ans_begin(&a, 1, SK_DNS_RC_REFUSED, "pypi.org", SK_DNS_T_AAAA);
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.rcode, SK_DNS_RC_REFUSED);
	/* a local SERVFAIL for a timeout */
	int n = sk_dns_filter_local_answer(&q, SK_DNS_RC_SERVFAIL, false, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(sk_dns_parse(out, (size_t)n, &r), SK_DNS_OK);
	assert_int_equal(SK_DNS_RCODE(r.hdr.flags), SK_DNS_RC_SERVFAIL);
	assert_true(r.has_opt);
}

static void test_answer_https_hints_never_bind(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_HTTPS, 1232);
	/* priority 1, target ".", alpn h2, ipv4hint 151.101.0.223, ipv6hint 2a04:4e42::223 */
	static const uint8_t https[] = { 0, 1, 0, 0, 1, 0, 3, 2, 'h', '2', 0, 4, 0, 4, 151, 101, 0, 223, 0, 6, 0, 16,
					 0x2a, 0x04, 0x4e, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x23 };
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_HTTPS);
	ans_rr(&a, 0, "pypi.org", SK_DNS_T_HTTPS, 300, https, sizeof(https));
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.n_bind, 0);
	/* ... nor reach the client: priority, target and alpn are left */
	static const uint8_t v4[] = { 151, 101, 0, 223 };
	assert_null(memmem(out, v.len, v4, sizeof(v4)));
	assert_non_null(memmem(out, v.len, https, 11));
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 1);
}

/* --- HTTPS/SVCB: the ech, ipv4hint and ipv6hint SvcParams never reach the client ------------------- */

#define ECH_MARK 'E', 'C', 'H', 'C', 'O', 'N', 'F', '!'
static const uint8_t ech_mark[] = { ECH_MARK };
#define P_ALPN_H2 0, 1, 0, 3, 2, 'h', '2'
#define P_V4HINT 0, 4, 0, 4, 151, 101, 0, 223
#define P_ECH 0, 5, 0, 8, ECH_MARK
#define P_V6HINT 0, 6, 0, 16, 0x2a, 0x04, 0x4e, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x23

/* The n-th answer record of out (a parsed client answer) and its rdata. */
static struct sk_dns_rr nth_answer(const struct sk_dns_msg *r, unsigned n)
{
	size_t off = r->sec[SK_DNS_SEC_AN];
	unsigned left = r->hdr.ancount;
	struct sk_dns_rr rr;
	for (unsigned i = 0; i <= n; i++)
		assert_true(sk_dns_rr_next(r, &off, &left, &rr));
	return rr;
}

static void assert_rdata(const struct sk_dns_msg *r, const struct sk_dns_rr *rr, const uint8_t *want, size_t n)
{
	assert_int_equal(rr->rdlen, n);
	assert_int_equal(rr->end - rr->rdata, n);
	assert_memory_equal(r->buf + rr->rdata, want, n);
}

static void test_answer_https_ech_stripped(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_HTTPS, 1232);
	static const uint8_t https[] = { 0, 1, 0, P_ALPN_H2, P_V4HINT, P_ECH, P_V6HINT };
	static const uint8_t want[] = { 0, 1, 0, P_ALPN_H2 };
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_HTTPS);
	ans_rr(&a, 0, "pypi.org", SK_DNS_T_HTTPS, 300, https, sizeof(https));
	ans_addr(&a, 0, "pypi.org", "151.101.0.223", 60);   /* a record after the rewritten one */
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.stripped, 0);
	assert_int_equal(v.n_bind, 1);
	assert_null(memmem(out, v.len, ech_mark, sizeof(ech_mark)));
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 2);
	struct sk_dns_rr rr = nth_answer(&r, 0);
	assert_int_equal(rr.type, SK_DNS_T_HTTPS);
	assert_int_equal(rr.ttl, 300);
	assert_rdata(&r, &rr, want, sizeof(want));
	assert_int_equal(sizeof(https) - sizeof(want), 12 + 8 + 20);
	rr = nth_answer(&r, 1);
	assert_int_equal(rr.type, SK_DNS_T_A);
	char text[SK_DNS_NAME_TEXT_MAX];
	assert_int_equal(sk_dns_name_text(&rr.name, text), 0);
	assert_string_equal(text, "pypi.org");
	static const uint8_t v4[] = { 151, 101, 0, 223 };
	assert_rdata(&r, &rr, v4, 4);
	assert_int_equal(r.end, v.len);   /* nothing left over past the last record */
}

static void test_answer_https_only_ech(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_HTTPS, 0);
	static const uint8_t https[] = { 0, 1, 0, P_ECH };
	static const uint8_t want[] = { 0, 1, 0 };
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_HTTPS);
	ans_rr(&a, 0, "pypi.org", SK_DNS_T_HTTPS, 300, https, sizeof(https));
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 1);
	struct sk_dns_rr rr = nth_answer(&r, 0);
	assert_rdata(&r, &rr, want, sizeof(want));
	assert_int_equal(r.end, v.len);
	assert_null(memmem(out, v.len, ech_mark, sizeof(ech_mark)));
}

/* SVCB (type 64) in the answer is rewritten like HTTPS; SVCB in authority and additional never reaches
 * the client at all (only SOA is kept there, and additional is dropped). */
static void test_answer_svcb_all_sections(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_SVCB, 1232);
	/* priority 1, target "pypi.org" (uncompressed, as RFC 9460 requires), alpn, ech */
	static const uint8_t svcb[] = { 0, 1, 4, 'p', 'y', 'p', 'i', 3, 'o', 'r', 'g', 0, P_ALPN_H2, P_ECH };
	static const uint8_t want[] = { 0, 1, 4, 'p', 'y', 'p', 'i', 3, 'o', 'r', 'g', 0, P_ALPN_H2 };
	struct ans a;
	ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_SVCB);
	ans_rr(&a, 0, "pypi.org", SK_DNS_T_SVCB, 300, svcb, sizeof(svcb));
	ans_rr(&a, 1, "pypi.org", SK_DNS_T_SVCB, 300, svcb, sizeof(svcb));
	ans_rr(&a, 2, "pypi.org", SK_DNS_T_SVCB, 300, svcb, sizeof(svcb));
	ans_rr(&a, 2, "pypi.org", SK_DNS_T_HTTPS, 300, svcb, sizeof(svcb));
	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.stripped, 3);
	assert_null(memmem(out, v.len, ech_mark, sizeof(ech_mark)));
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 1);
	assert_int_equal(r.hdr.nscount, 0);
	assert_int_equal(r.hdr.arcount, 1);   /* our OPT */
	assert_true(r.has_opt);
	struct sk_dns_rr rr = nth_answer(&r, 0);
	assert_int_equal(rr.type, SK_DNS_T_SVCB);
	assert_rdata(&r, &rr, want, sizeof(want));
}

/* Upstream writes owner names as pointers, some of them to offsets after an HTTPS record that shrinks
 * (and to a pointer that is itself a pointer): every name must still decode right in what the client
 * gets, because the answer is rebuilt from decoded names rather than patched in place. */
static void test_answer_https_ech_pointers_after(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "raw.githubusercontent.com", SK_DNS_T_HTTPS, 0);
	struct ans a;
	ans_begin(&a, 1, 0, "raw.githubusercontent.com", SK_DNS_T_HTTPS);
	struct sk_dns_writer *w = &a.w;
	/* raw.githubusercontent.com CNAME edge.<ptr to githubusercontent.com in the question> */
	sk_dns_w_u16(w, 0xc000 | 12);
	sk_dns_w_u16(w, SK_DNS_T_CNAME);
	sk_dns_w_u16(w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(w, 60);
	sk_dns_w_u16(w, 7);
	const size_t edge = w->len;
	sk_dns_w_bytes(w, "\x04" "edge", 5);
	sk_dns_w_u16(w, 0xc000 | 16);
	/* edge... HTTPS 1 . alpn ipv4hint ech  (owner: pointer into the CNAME's rdata) */
	static const uint8_t h1[] = { 0, 1, 0, P_ALPN_H2, P_V4HINT, P_ECH };
	static const uint8_t h1_want[] = { 0, 1, 0, P_ALPN_H2 };
	const size_t rec2 = w->len;
	sk_dns_w_u16(w, (uint16_t)(0xc000 | edge));
	sk_dns_w_u16(w, SK_DNS_T_HTTPS);
	sk_dns_w_u16(w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(w, 60);
	sk_dns_w_u16(w, sizeof(h1));
	sk_dns_w_bytes(w, h1, sizeof(h1));
	/* edge... HTTPS 2 svc.example. alpn ech ipv6hint  (owner: pointer to rec2's owner, a pointer) */
	static const uint8_t h2[] = { 0, 2, 3, 's', 'v', 'c', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0,
				      P_ALPN_H2, P_ECH, P_V6HINT };
	static const uint8_t h2_want[] = { 0, 2, 3, 's', 'v', 'c', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0,
					   P_ALPN_H2 };
	sk_dns_w_u16(w, (uint16_t)(0xc000 | rec2));
	sk_dns_w_u16(w, SK_DNS_T_HTTPS);
	sk_dns_w_u16(w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(w, 60);
	sk_dns_w_u16(w, sizeof(h2));
	const size_t svc = w->len + 2;
	sk_dns_w_bytes(w, h2, sizeof(h2));
	/* additional: glue whose owner points into rec3's TargetName (dropped, but must not confuse) */
	sk_dns_w_u16(w, (uint16_t)(0xc000 | svc));
	sk_dns_w_u16(w, SK_DNS_T_A);
	sk_dns_w_u16(w, SK_DNS_CLASS_IN);
	sk_dns_w_u32(w, 60);
	sk_dns_w_u16(w, 4);
	sk_dns_w_bytes(w, "\xcb\x00\x71\x07", 4);
	sk_dns_w_set_u16(w, 6, 3);
	sk_dns_w_set_u16(w, 10, 1);
	struct sk_dns_msg up;
	assert_int_equal(sk_dns_parse(a.buf, w->len, &up), SK_DNS_OK);   /* the test input is well formed */

	uint8_t out[2048];
	struct sk_dns_averdict v;
	run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
	assert_int_equal(v.result, SK_DNS_R_ANSWERED);
	assert_int_equal(v.stripped, 1);
	assert_null(memmem(out, v.len, ech_mark, sizeof(ech_mark)));
	struct sk_dns_msg r;
	assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
	assert_int_equal(r.hdr.ancount, 3);
	assert_int_equal(r.end, v.len);
	char text[SK_DNS_NAME_TEXT_MAX];
	struct sk_dns_rr rr = nth_answer(&r, 0);
	assert_int_equal(rr.type, SK_DNS_T_CNAME);
	assert_int_equal(sk_dns_name_text(&rr.name, text), 0);
	assert_string_equal(text, "raw.githubusercontent.com");
	struct sk_dns_name t;
	assert_true(sk_dns_rr_target(&r, &rr, &t));
	assert_int_equal(sk_dns_name_text(&t, text), 0);
	assert_string_equal(text, "edge.githubusercontent.com");
	rr = nth_answer(&r, 1);
	assert_int_equal(rr.type, SK_DNS_T_HTTPS);
	assert_int_equal(sk_dns_name_text(&rr.name, text), 0);
	assert_string_equal(text, "edge.githubusercontent.com");
	assert_rdata(&r, &rr, h1_want, sizeof(h1_want));
	rr = nth_answer(&r, 2);
	assert_int_equal(rr.type, SK_DNS_T_HTTPS);
	assert_int_equal(sk_dns_name_text(&rr.name, text), 0);
	assert_string_equal(text, "edge.githubusercontent.com");
	assert_rdata(&r, &rr, h2_want, sizeof(h2_want));
}

/* The case: ipv4hint=169.254.169.254 (the metadata service) + ech + alpn comes out with alpn
 * only, for HTTPS and SVCB alike; the A answer next to it still binds. */
static void test_answer_https_metadata_hint_stripped(void **state)
{
	struct pol *f = *state;
	static const uint8_t imds[] = { 169, 254, 169, 254 };
	static const uint8_t rdata[] = { 0, 1, 0, P_ALPN_H2, 0, 4, 0, 4, 169, 254, 169, 254, P_ECH };
	static const uint8_t want[] = { 0, 1, 0, P_ALPN_H2 };
	const uint16_t types[] = { SK_DNS_T_HTTPS, SK_DNS_T_SVCB };
	for (size_t i = 0; i < SK_ARRAY_SIZE(types); i++) {
		struct sk_dns_fquery q = fq(f, "pypi.org", types[i], 1232);
		struct ans a;
		ans_begin(&a, 1, 0, "pypi.org", types[i]);
		ans_rr(&a, 0, "pypi.org", types[i], 300, rdata, sizeof(rdata));
		ans_addr(&a, 0, "pypi.org", "151.101.0.223", 60);
		uint8_t out[2048];
		struct sk_dns_averdict v;
		run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
		assert_int_equal(v.action, SK_DNS_ACT_ANSWER);
		assert_int_equal(v.result, SK_DNS_R_ANSWERED);
		assert_int_equal(v.n_bind, 1);
		assert_null(memmem(out, v.len, imds, sizeof(imds)));
		assert_null(memmem(out, v.len, ech_mark, sizeof(ech_mark)));
		struct sk_dns_msg r;
		assert_int_equal(sk_dns_parse(out, v.len, &r), SK_DNS_OK);
		assert_int_equal(r.hdr.ancount, 2);
		struct sk_dns_rr rr = nth_answer(&r, 0);
		assert_int_equal(rr.type, types[i]);
		assert_rdata(&r, &rr, want, sizeof(want));
		assert_int_equal(r.end, v.len);
	}
}

struct svcb_case {
	const char *name;
	uint8_t rdata[64];
	uint16_t rdlen;
	int16_t expect;    /* -1 SERVFAIL, 0 record left out, 1 kept without ech and hints */
	uint16_t kept;     /* expect 1: its rdlen as returned */
};

static const struct svcb_case svcb_cases[] = {
	{ "keys not increasing", { 0, 1, 0, P_V4HINT, P_ALPN_H2 }, 18, -1, 0 },
	{ "duplicate key", { 0, 1, 0, P_ECH, P_ECH }, 27, -1, 0 },
	{ "ech after ipv6hint", { 0, 1, 0, 0, 6, 0, 0, P_ECH }, 19, -1, 0 },
	{ "value past rdata", { 0, 1, 0, 0, 1, 0, 9, 2, 'h', '2' }, 10, -1, 0 },
	{ "ech value past rdata", { 0, 1, 0, 0, 5, 0, 0xff, 'x' }, 8, -1, 0 },
	{ "truncated key header", { 0, 1, 0, 0, 1, 0 }, 6, -1, 0 },
	{ "no target", { 0, 1 }, 2, -1, 0 },
	{ "one byte", { 0 }, 1, -1, 0 },
	{ "empty rdata", { 0 }, 0, -1, 0 },
	{ "target runs past rdata", { 0, 1, 5, 'a', 'b' }, 5, -1, 0 },
	{ "compressed target", { 0, 1, 0xc0, 12, P_ECH }, 16, -1, 0 },
	{ "extended label type", { 0, 1, 0x41, 0, P_ECH }, 16, -1, 0 },
	{ "mandatory odd length", { 0, 1, 0, 0, 0, 0, 1, 5, P_ECH }, 20, -1, 0 },
	{ "mandatory empty", { 0, 1, 0, 0, 0, 0, 0, P_ECH }, 19, -1, 0 },
	{ "mandatory names ech", { 0, 1, 0, 0, 0, 0, 4, 0, 1, 0, 5, P_ALPN_H2, P_ECH }, 30, 0, 0 },
	{ "mandatory names ipv4hint", { 0, 1, 0, 0, 0, 0, 4, 0, 1, 0, 4, P_ALPN_H2, P_V4HINT }, 26, 0, 0 },
	{ "mandatory names ipv6hint", { 0, 1, 0, 0, 0, 0, 2, 0, 6, P_V6HINT }, 29, 0, 0 },
	{ "mandatory names alpn", { 0, 1, 0, 0, 0, 0, 2, 0, 1, P_ALPN_H2, P_ECH }, 28, 1, 16 },
	{ "alias mode with ech", { 0, 0, 3, 'c', 'd', 'n', 0, P_ECH }, 19, 1, 7 },
	{ "only hints", { 0, 1, 0, P_V4HINT, P_V6HINT }, 31, 1, 3 },
	{ "hints and an unknown key", { 0, 1, 0, P_V4HINT, P_V6HINT, 0, 7, 0, 1, 'k' }, 36, 1, 8 },
	{ "no params", { 0, 1, 0 }, 3, 1, 3 },
};

static void test_answer_svcb_malformed(void **state)
{
	struct pol *f = *state;
	struct sk_dns_fquery q = fq(f, "pypi.org", SK_DNS_T_HTTPS, 0);
	size_t failures = 0;
	for (size_t i = 0; i < SK_ARRAY_SIZE(svcb_cases); i++) {
		const struct svcb_case *c = &svcb_cases[i];
		struct ans a;
		ans_begin(&a, 1, 0, "pypi.org", SK_DNS_T_HTTPS);
		ans_rr(&a, 0, "pypi.org", SK_DNS_T_HTTPS, 300, c->rdata, c->rdlen);
		ans_addr(&a, 0, "pypi.org", "151.101.0.223", 60);
		uint8_t out[2048];
		struct sk_dns_averdict v;
		run_answer(f, NULL, &q, &a, false, out, sizeof(out), &v);
		struct sk_dns_msg r;
		bool ok = sk_dns_parse(out, v.len, &r) == SK_DNS_OK && !memmem(out, v.len, ech_mark, sizeof(ech_mark));
		if (ok && c->expect < 0)
			ok = v.result == SK_DNS_R_UPSTREAM_ERROR && v.rcode == SK_DNS_RC_SERVFAIL && r.hdr.ancount == 0 &&
			     v.n_bind == 0;
		else if (ok && c->expect == 0)
			ok = v.result == SK_DNS_R_ANSWERED && r.hdr.ancount == 1 && v.stripped == 1 &&
			     nth_answer(&r, 0).type == SK_DNS_T_A;
		else if (ok)
			ok = v.result == SK_DNS_R_ANSWERED && r.hdr.ancount == 2 && v.stripped == 0 &&
			     nth_answer(&r, 0).rdlen == c->kept;
		if (!ok) {
			failures++;
			(void)fprintf(stderr, "case %s: result %s rcode %d stripped %u\n", c->name, sk_dns_result_name(v.result),
				v.rcode, v.stripped);
		}
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_query_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forward_carries_normalised_name_and_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_query_drops_client_extras, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_query_canonical, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deny_refused_mode_and_long_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allow_types_from_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_mode_forwards_denials, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credential_misuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_simple_binds_and_caps_ttl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_cname_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_cname_loop_terminates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_long_chain_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_rebinding_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_address_of_other_class, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_private_vouched_by_cidr_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_block_private_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_truncation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_spoofed_or_broken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_negative_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_https_hints_never_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_https_ech_stripped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_https_only_ech, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_svcb_all_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_https_ech_pointers_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_svcb_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_https_metadata_hint_stripped, setup, teardown),
	};
	return cmocka_run_group_tests_name("dns_filter", tests, NULL, NULL);
}
