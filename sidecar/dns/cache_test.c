/* sidecar/dns/cache_test.c — cmocka suite for the DNS answer cache: answers are made by the real filter
 * (sk_dns_filter_answer) from hand-built upstream answers, then stored and served: hit/miss, a hit equal
 * byte for byte to the fresh answer for the same client, TTLs decremented by age and expiry at the
 * smallest TTL (explicit time), negative caching for the SOA minimum and its cap, what is never cached,
 * LRU eviction at the entry and byte caps, the client's case, ID, flags and EDNS restored, a policy
 * generation change flushing, bindings handed back on a hit (and bound again), the UDP size limit. */
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
#include "sidecar/dns/bind.h"
#include "sidecar/dns/cache.h"
#include "sidecar/dns/filter.h"

/* --- a hand-built policy: api.github.com and *.example.org, port 443 ------------------------------- */

static const uint16_t types[] = { SK_DNS_T_A, SK_DNS_T_CNAME, SK_DNS_T_AAAA, SK_DNS_T_HTTPS };

struct pol {
	struct sk_policy p;
	struct sk_rule rules[4];
	uint16_t ports[4][1];
	uint16_t types[4];
};

static void add_host(struct pol *f, const char *host, bool wildcard)
{
	struct sk_rule *r = &f->rules[f->p.n_rules];
	memset(r, 0, sizeof(*r));
	r->kind = SK_RULE_HOST;
	r->host = strdup(host);
	r->wildcard = wildcard;
	f->ports[f->p.n_rules][0] = 443;
	r->ports = f->ports[f->p.n_rules];
	r->n_ports = 1;
	f->p.n_rules++;
}

static int setup(void **state)
{
	struct pol *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->p.rules = f->rules;
	f->p.mode = SK_MODE_ENFORCE;
	f->p.block_private = true;
	f->p.dns.deny = SK_DNS_DENY_NXDOMAIN;
	f->p.dns.max_query_length = 253;
	memcpy(f->types, types, sizeof(types));
	f->p.dns.allow_types = f->types;
	f->p.dns.n_allow_types = SK_ARRAY_SIZE(types);
	add_host(f, "api.github.com", false);
	add_host(f, "example.org", true);
	assert_int_equal(sk_matcher_build(&f->p), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct pol *f = *state;
	for (size_t i = 0; i < f->p.n_rules; i++)
		free(f->rules[i].host);
	sk_matcher_free(f->p.matcher);
	free(f);
	return 0;
}

/* --- messages ------------------------------------------------------------------------------------- */

/* The filter's view of a client query: id, flags (RD/CD), name as spelled, edns 0 = no OPT. */
static struct sk_dns_fquery fq(struct pol *f, uint16_t id, uint16_t flags, const char *name, uint16_t type,
			       uint16_t edns, bool do_bit)
{
	uint8_t msg[512], out[512];
	struct sk_dns_writer w;
	sk_dns_w_init(&w, msg, sizeof(msg));
	struct sk_dns_header h = { .id = id, .flags = flags, .qdcount = 1, .arcount = edns ? 1 : 0 };
	sk_dns_w_header(&w, &h);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(name, &n), 0);
	sk_dns_w_name(&w, &n, false);
	sk_dns_w_u16(&w, type);
	sk_dns_w_u16(&w, SK_DNS_CLASS_IN);
	if (edns)
		sk_dns_w_opt(&w, edns, do_bit, 0);
	assert_false(w.overflow);
	struct sk_dns_qverdict v;
	sk_dns_filter_query(&f->p, msg, w.len, false, out, sizeof(out), &v);
	assert_int_equal(v.action, SK_DNS_ACT_FORWARD);
	return v.q;
}

struct ans {
	uint8_t buf[8192];
	struct sk_dns_writer w;
	uint16_t counts[3];
};

static void ans_begin(struct ans *a, uint16_t rcode, const char *qname, uint16_t qtype)
{
	sk_dns_w_init(&a->w, a->buf, sizeof(a->buf));
	memset(a->counts, 0, sizeof(a->counts));
	struct sk_dns_header h = { .id = 7, .flags = (uint16_t)(SK_DNS_F_QR | SK_DNS_F_RD | SK_DNS_F_RA | rcode),
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

static void ans_addr(struct ans *a, const char *owner, const char *ip, uint32_t ttl)
{
	struct sk_addr ad;
	assert_int_equal(sk_addr_parse(ip, &ad), 0);
	ans_rr(a, 0, owner, ad.family == AF_INET ? SK_DNS_T_A : SK_DNS_T_AAAA, ttl, ad.bytes,
	       ad.family == AF_INET ? 4 : 16);
}

static void ans_cname(struct ans *a, const char *owner, const char *target, uint32_t ttl)
{
	struct sk_dns_name t;
	assert_int_equal(sk_dns_name_from_text(target, &t), 0);
	ans_rr(a, 0, owner, SK_DNS_T_CNAME, ttl, t.wire, t.len);
}

/* An SOA in authority with the given TTL and MINIMUM. */
static void ans_soa(struct ans *a, const char *owner, uint32_t ttl, uint32_t minimum)
{
	uint8_t soa[] = { 2, 'n', 's', 0, 2, 'h', 'm', 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0 };
	soa[24] = (uint8_t)(minimum >> 24);
	soa[25] = (uint8_t)(minimum >> 16);
	soa[26] = (uint8_t)(minimum >> 8);
	soa[27] = (uint8_t)minimum;
	ans_rr(a, 1, owner, SK_DNS_T_SOA, ttl, soa, sizeof(soa));
}

/* The filtered answer for q (a UDP client unless tcp). */
static size_t filtered(struct pol *f, const struct sk_dns_fquery *q, struct ans *a, bool tcp, uint8_t *out,
		       size_t cap, struct sk_dns_averdict *v)
{
	assert_false(a->w.overflow);
	sk_dns_filter_answer(&f->p, NULL, q, a->buf, a->w.len, false, tcp, out, cap, v);
	return v->len;
}

/* Filters a and stores the result; returns put's verdict. */
static int put(struct pol *f, struct sk_dns_cache *c, uint64_t gen, const struct sk_dns_fquery *q, struct ans *a,
	       uint64_t now)
{
	uint8_t out[4096];
	struct sk_dns_averdict v;
	size_t n = filtered(f, q, a, false, out, sizeof(out), &v);
	return sk_dns_cache_put(c, gen, q, &v, out, n, now);
}

/* TTL of the i-th record across answer and authority. */
static uint32_t ttl_of(const uint8_t *msg, size_t len, unsigned i)
{
	struct sk_dns_msg m;
	assert_int_equal(sk_dns_parse(msg, len, &m), SK_DNS_OK);
	struct sk_dns_rr rr;
	for (int s = 0; s < 2; s++) {
		size_t off = m.sec[s];
		unsigned left = s == 0 ? m.hdr.ancount : m.hdr.nscount;
		while (sk_dns_rr_next(&m, &off, &left, &rr))
			if (i-- == 0)
				return rr.ttl;
	}
	fail_msg("no record %u", i);
	return 0;
}

static struct sk_dns_cache *cache(size_t entries, size_t bytes)
{
	struct sk_dns_cache *c;
	assert_int_equal(sk_dns_cache_new(entries, bytes, &c, NULL), 0);
	return c;
}

static void github_a(struct ans *a, uint32_t ttl1, uint32_t ttl2)
{
	ans_begin(a, 0, "api.github.com", SK_DNS_T_A);
	ans_addr(a, "api.github.com", "140.82.112.5", ttl1);
	ans_addr(a, "api.github.com", "140.82.112.6", ttl2);
}

/* --- tests ---------------------------------------------------------------------------------------- */

static void test_hit_miss_and_same_bytes(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	struct sk_dns_fquery q = fq(f, 0x1111, SK_DNS_F_RD, "api.github.com", SK_DNS_T_A, 1232, false);
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	assert_false(sk_dns_cache_get(c, 1, &q, false, 1000, out, sizeof(out), &h));
	struct ans a;
	github_a(&a, 300, 300);
	assert_int_equal(put(f, c, 1, &q, &a, 1000), 1);
	/* other clients, other spellings, with and without EDNS: each gets at age 0 exactly the bytes the
	 * filter would have built for it from the same upstream answer */
	const struct sk_dns_fquery qs[] = {
		q,
		fq(f, 0x2222, SK_DNS_F_RD, "API.GitHub.COM", SK_DNS_T_A, 0, false),
		fq(f, 0x3333, SK_DNS_F_RD | SK_DNS_F_CD, "api.GITHUB.com", SK_DNS_T_A, 4096, true),
		fq(f, 0x4444, 0, "api.github.com", SK_DNS_T_A, 512, false),
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(qs); i++) {
		uint8_t fresh[4096];
		struct sk_dns_averdict v;
		size_t n = filtered(f, &qs[i], &a, false, fresh, sizeof(fresh), &v);
		assert_true(sk_dns_cache_get(c, 1, &qs[i], false, 1000, out, sizeof(out), &h));
		assert_int_equal(h.len, n);
		assert_memory_equal(out, fresh, n);
		assert_false(h.truncated);
		assert_int_equal(h.rcode, SK_DNS_RC_NOERROR);
	}
	/* another type, another name: misses */
	struct sk_dns_fquery q6 = fq(f, 1, SK_DNS_F_RD, "api.github.com", SK_DNS_T_AAAA, 0, false);
	assert_false(sk_dns_cache_get(c, 1, &q6, false, 1000, out, sizeof(out), &h));
	struct sk_dns_fquery qo = fq(f, 1, SK_DNS_F_RD, "www.example.org", SK_DNS_T_A, 0, false);
	assert_false(sk_dns_cache_get(c, 1, &qo, false, 1000, out, sizeof(out), &h));
	struct sk_dns_cache_stats st;
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.hits, 4);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes > 0);
	sk_dns_cache_free(c);
}

static void test_ttl_decrement_and_expiry(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	struct sk_dns_fquery q = fq(f, 9, SK_DNS_F_RD, "www.example.org", SK_DNS_T_A, 0, false);
	struct ans a;
	ans_begin(&a, 0, "www.example.org", SK_DNS_T_A);
	ans_cname(&a, "www.example.org", "cdn.example.org", 600);
	ans_addr(&a, "cdn.example.org", "198.51.100.7", 60);
	assert_int_equal(put(f, c, 1, &q, &a, 50000), 1);
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	assert_true(sk_dns_cache_get(c, 1, &q, false, 50000 + 10500, out, sizeof(out), &h));
	assert_int_equal(ttl_of(out, h.len, 0), 590);   /* whole seconds of age: 10 */
	assert_int_equal(ttl_of(out, h.len, 1), 50);
	assert_true(sk_dns_cache_get(c, 1, &q, false, 50000 + 59999, out, sizeof(out), &h));
	assert_int_equal(ttl_of(out, h.len, 0), 541);
	assert_int_equal(ttl_of(out, h.len, 1), 1);
	/* the smallest TTL (60 s) ends the entry */
	assert_false(sk_dns_cache_get(c, 1, &q, false, 50000 + 60000, out, sizeof(out), &h));
	struct sk_dns_cache_stats st;
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.entries, 0);
	/* TTLs above an hour were capped by the filter: the entry lives an hour */
	github_a(&a, 86400, 86400);
	struct sk_dns_fquery qg = fq(f, 9, SK_DNS_F_RD, "api.github.com", SK_DNS_T_A, 0, false);
	assert_int_equal(put(f, c, 1, &qg, &a, 0), 1);
	assert_true(sk_dns_cache_get(c, 1, &qg, false, 3599999, out, sizeof(out), &h));
	assert_false(sk_dns_cache_get(c, 1, &qg, false, 3600000, out, sizeof(out), &h));
	/* TTL 0: not cached */
	github_a(&a, 0, 300);
	assert_int_equal(put(f, c, 1, &qg, &a, 0), 0);
	assert_false(sk_dns_cache_get(c, 1, &qg, false, 0, out, sizeof(out), &h));
	sk_dns_cache_free(c);
}

static void test_negative_soa_minimum_and_cap(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	struct ans a;
	/* NXDOMAIN, SOA TTL 3600, MINIMUM 60: cached 60 s; the SOA served with min(TTL, MINIMUM) - age */
	struct sk_dns_fquery q = fq(f, 1, SK_DNS_F_RD, "nx.example.org", SK_DNS_T_A, 0, false);
	ans_begin(&a, SK_DNS_RC_NXDOMAIN, "nx.example.org", SK_DNS_T_A);
	ans_soa(&a, "example.org", 3600, 60);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 1);
	assert_true(sk_dns_cache_get(c, 1, &q, false, 20000, out, sizeof(out), &h));
	assert_int_equal(h.rcode, SK_DNS_RC_NXDOMAIN);
	assert_int_equal(h.n_bind, 0);
	assert_int_equal(ttl_of(out, h.len, 0), 40);
	assert_false(sk_dns_cache_get(c, 1, &q, false, 60000, out, sizeof(out), &h));
	/* NODATA, MINIMUM a day: capped at SK_DNS_CACHE_NEG_TTL_MAX */
	struct sk_dns_fquery q6 = fq(f, 1, SK_DNS_F_RD, "v4only.example.org", SK_DNS_T_AAAA, 0, false);
	ans_begin(&a, 0, "v4only.example.org", SK_DNS_T_AAAA);
	ans_soa(&a, "example.org", 86400, 86400);
	assert_int_equal(put(f, c, 1, &q6, &a, 0), 1);
	assert_true(sk_dns_cache_get(c, 1, &q6, false, SK_DNS_CACHE_NEG_TTL_MAX * 1000 - 1, out, sizeof(out), &h));
	assert_int_equal(h.rcode, SK_DNS_RC_NOERROR);
	assert_false(sk_dns_cache_get(c, 1, &q6, false, SK_DNS_CACHE_NEG_TTL_MAX * 1000, out, sizeof(out), &h));
	/* NODATA behind a CNAME: the CNAME's TTL bounds it too */
	ans_begin(&a, 0, "v4only.example.org", SK_DNS_T_AAAA);
	ans_cname(&a, "v4only.example.org", "edge.example.org", 10);
	ans_soa(&a, "example.org", 600, 600);
	assert_int_equal(put(f, c, 1, &q6, &a, 0), 1);
	assert_true(sk_dns_cache_get(c, 1, &q6, false, 9999, out, sizeof(out), &h));
	assert_false(sk_dns_cache_get(c, 1, &q6, false, 10000, out, sizeof(out), &h));
	/* no SOA: not cached (RFC 2308 §5) */
	ans_begin(&a, SK_DNS_RC_NXDOMAIN, "nx.example.org", SK_DNS_T_A);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	ans_begin(&a, 0, "nx.example.org", SK_DNS_T_A);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	assert_false(sk_dns_cache_get(c, 1, &q, false, 0, out, sizeof(out), &h));
	sk_dns_cache_free(c);
}

static void test_never_cached(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	struct sk_dns_fquery q = fq(f, 1, SK_DNS_F_RD, "api.github.com", SK_DNS_T_A, 0, false);
	struct ans a;
	static const uint16_t rcodes[] = { SK_DNS_RC_SERVFAIL, SK_DNS_RC_REFUSED, SK_DNS_RC_NOTIMP };
	for (size_t i = 0; i < SK_ARRAY_SIZE(rcodes); i++) {
		ans_begin(&a, rcodes[i], "api.github.com", SK_DNS_T_A);
		ans_addr(&a, "api.github.com", "140.82.112.5", 300);
		assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	}
	/* a rebinding answer: REFUSED in enforce mode, passed but flagged in audit mode; neither cached */
	ans_begin(&a, 0, "api.github.com", SK_DNS_T_A);
	ans_addr(&a, "api.github.com", "10.1.2.3", 300);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	f->p.mode = SK_MODE_AUDIT;
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	f->p.mode = SK_MODE_ENFORCE;
	/* too big for a 512-byte UDP client: the filter sends TC=1, never cached */
	ans_begin(&a, 0, "api.github.com", SK_DNS_T_A);
	for (int i = 0; i < 32; i++) {
		char ip[32];
		(void)snprintf(ip, sizeof(ip), "140.82.113.%d", i + 1);
		ans_addr(&a, "api.github.com", ip, 300);
	}
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	/* a spoofed question: SERVFAIL from the filter */
	ans_begin(&a, 0, "www.example.org", SK_DNS_T_A);
	ans_addr(&a, "www.example.org", "140.82.112.5", 300);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 0);
	/* a verdict that does not match the message is refused too */
	struct sk_dns_averdict v = { .action = SK_DNS_ACT_ANSWER, .result = SK_DNS_R_ANSWERED };
	uint8_t junk[40] = { 0 };
	assert_int_equal(sk_dns_cache_put(c, 1, &q, &v, junk, sizeof(junk), 0), 0);
	struct sk_dns_cache_stats st;
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.inserts, 0);
	sk_dns_cache_free(c);
}

static struct sk_dns_fquery name_q(struct pol *f, int i)
{
	char name[64];
	(void)snprintf(name, sizeof(name), "n%d.example.org", i);
	return fq(f, (uint16_t)i, SK_DNS_F_RD, name, SK_DNS_T_A, 0, false);
}

static int put_name(struct pol *f, struct sk_dns_cache *c, int i, uint64_t now)
{
	char name[64], ip[32];
	(void)snprintf(name, sizeof(name), "n%d.example.org", i);
	(void)snprintf(ip, sizeof(ip), "198.51.100.%d", i % 250 + 1);
	struct sk_dns_fquery q = name_q(f, i);
	struct ans a;
	ans_begin(&a, 0, name, SK_DNS_T_A);
	ans_addr(&a, name, ip, 300);
	return put(f, c, 1, &q, &a, now);
}

static bool has(struct sk_dns_cache *c, struct pol *f, int i)
{
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	struct sk_dns_fquery q = name_q(f, i);
	return sk_dns_cache_get(c, 1, &q, false, 1000, out, sizeof(out), &h);
}

static void test_lru_eviction_at_caps(void **state)
{
	struct pol *f = *state;
	/* entry cap */
	struct sk_dns_cache *c = cache(3, 1 << 20);
	for (int i = 0; i < 3; i++)
		assert_int_equal(put_name(f, c, i, 0), 1);
	assert_true(has(c, f, 0));                    /* 0 is now the most recently used; 1 the least */
	assert_int_equal(put_name(f, c, 3, 0), 1);
	assert_false(has(c, f, 1));
	assert_true(has(c, f, 0));
	assert_true(has(c, f, 2));
	assert_true(has(c, f, 3));
	struct sk_dns_cache_stats st;
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.evictions, 1);
	/* replacing an entry does not grow the cache */
	assert_int_equal(put_name(f, c, 3, 0), 1);
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.entries, 3);
	sk_dns_cache_free(c);

	/* byte cap: as many entries as fit, the oldest go first */
	c = cache(1000, 4096);
	assert_int_equal(put_name(f, c, 0, 0), 1);
	sk_dns_cache_stats(c, &st);
	const size_t one = st.bytes;
	assert_true(one > 0 && one <= 4096 / 8);
	for (int i = 1; i < 100; i++)
		assert_int_equal(put_name(f, c, i, 0), 1);
	sk_dns_cache_stats(c, &st);
	assert_true(st.bytes <= 4096);
	assert_true(st.entries >= 4096 / one - 1);
	assert_true(st.entries < 100);
	assert_true(has(c, f, 99));
	assert_false(has(c, f, 0));
	sk_dns_cache_free(c);
	assert_int_equal(sk_dns_cache_new(0, 4096, &c, NULL), -EINVAL);
	assert_int_equal(sk_dns_cache_new(10, 100, &c, NULL), -EINVAL);
}

static void test_case_id_flags_edns_restored(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	struct sk_dns_fquery q = fq(f, 0xabcd, SK_DNS_F_RD, "API.GitHub.com", SK_DNS_T_A, 1232, true);
	struct ans a;
	github_a(&a, 300, 300);
	assert_int_equal(put(f, c, 1, &q, &a, 0), 1);
	struct sk_dns_fquery q2 = fq(f, 0x0102, SK_DNS_F_CD, "api.gitHUB.cOm", SK_DNS_T_A, 0, false);
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	assert_true(sk_dns_cache_get(c, 1, &q2, false, 0, out, sizeof(out), &h));
	struct sk_dns_msg m;
	assert_int_equal(sk_dns_parse(out, h.len, &m), SK_DNS_OK);
	assert_int_equal(m.hdr.id, 0x0102);
	assert_int_equal(m.hdr.flags, SK_DNS_F_QR | SK_DNS_F_RA | SK_DNS_F_CD);
	assert_memory_equal(m.qname.wire, q2.qname.wire, q2.qname.len);   /* "api.gitHUB.cOm", bytes as asked */
	assert_false(m.has_opt);
	assert_int_equal(m.hdr.arcount, 0);
	assert_int_equal(m.hdr.ancount, 2);
	/* the first client again: its ID, its case, its OPT with DO */
	assert_true(sk_dns_cache_get(c, 1, &q, false, 0, out, sizeof(out), &h));
	assert_int_equal(sk_dns_parse(out, h.len, &m), SK_DNS_OK);
	assert_int_equal(m.hdr.id, 0xabcd);
	assert_int_equal(m.qname.wire[1], 'A');
	assert_int_equal(m.qname.wire[5], 'G');
	assert_true(m.has_opt);
	assert_true(m.do_bit);
	assert_int_equal(m.udp_size, SK_DNS_EDNS_SIZE);
	sk_dns_cache_free(c);
}

static void test_policy_generation_flushes(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	for (int i = 0; i < 5; i++)
		assert_int_equal(put_name(f, c, i, 0), 1);
	assert_true(has(c, f, 2));
	uint8_t out[4096];
	struct sk_dns_cache_hit h;
	struct sk_dns_fquery q = name_q(f, 2);
	/* a reload bumped the generation: everything made under the old policy is gone */
	assert_false(sk_dns_cache_get(c, 2, &q, false, 1000, out, sizeof(out), &h));
	struct sk_dns_cache_stats st;
	sk_dns_cache_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.flushes, 1);
	/* a put under a newer generation flushes too, then stores */
	assert_int_equal(put_name(f, c, 1, 0), 1);   /* generation 1 again: flushes generation 2's (none) */
	struct sk_dns_fquery q1 = name_q(f, 1);
	struct ans a;
	ans_begin(&a, 0, "n1.example.org", SK_DNS_T_A);
	ans_addr(&a, "n1.example.org", "198.51.100.9", 300);
	assert_int_equal(put(f, c, 3, &q1, &a, 0), 1);
	assert_false(sk_dns_cache_get(c, 1, &q1, false, 0, out, sizeof(out), &h));
	sk_dns_cache_free(c);
}

static void test_bindings_on_hit(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	struct sk_dns_fquery q = fq(f, 1, SK_DNS_F_RD, "www.example.org", SK_DNS_T_A, 0, false);
	struct ans a;
	ans_begin(&a, 0, "www.example.org", SK_DNS_T_A);
	ans_cname(&a, "www.example.org", "cdn.example.org", 600);
	ans_addr(&a, "cdn.example.org", "198.51.100.7", 120);
	ans_addr(&a, "cdn.example.org", "2001:db8::7", 90);
	uint8_t fresh[4096], out[4096];
	struct sk_dns_averdict v;
	size_t n = filtered(f, &q, &a, false, fresh, sizeof(fresh), &v);
	assert_int_equal(sk_dns_cache_put(c, 1, &q, &v, fresh, n, 0), 1);
	struct sk_dns_cache_hit h;
	/* at age 0, the same pairs as the fresh verdict */
	assert_true(sk_dns_cache_get(c, 1, &q, false, 0, out, sizeof(out), &h));
	assert_int_equal(h.n_bind, v.n_bind);
	for (size_t i = 0; i < v.n_bind; i++) {
		assert_true(sk_addr_equal(&h.bind[i].addr, &v.bind[i].addr));
		assert_int_equal(h.bind[i].ttl, v.bind[i].ttl);
	}
	/* later, with remaining TTLs; binding them (as the server does) makes the proxy's check pass
	 * even when the first binding is gone (a table that evicted it, here a fresh one) */
	assert_true(sk_dns_cache_get(c, 1, &q, false, 80000, out, sizeof(out), &h));
	assert_int_equal(h.n_bind, 2);
	assert_int_equal(h.bind[0].ttl, 40);
	assert_int_equal(h.bind[1].ttl, 10);
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(16, &t, NULL), 0);
	assert_false(sk_bind_has(t, &v.bind[0].addr, q.name, 80000));
	for (size_t i = 0; i < h.n_bind; i++)
		assert_int_equal(sk_bind_add(t, &h.bind[i].addr, q.name, h.bind[i].ttl, 80000), 0);
	assert_true(sk_bind_has(t, &v.bind[0].addr, "www.example.org", 80000));
	assert_true(sk_bind_has(t, &v.bind[1].addr, "www.example.org", 80000));
	sk_bind_free(t);
	sk_dns_cache_free(c);
}

static void test_udp_limit_on_hit(void **state)
{
	struct pol *f = *state;
	struct sk_dns_cache *c = cache(100, 1 << 20);
	/* stored from a TCP client (no size limit): 32 addresses, 544 bytes */
	struct sk_dns_fquery qt = fq(f, 1, SK_DNS_F_RD, "api.github.com", SK_DNS_T_A, 0, false);
	struct ans a;
	ans_begin(&a, 0, "api.github.com", SK_DNS_T_A);
	for (int i = 0; i < 32; i++) {
		char ip[32];
		(void)snprintf(ip, sizeof(ip), "140.82.113.%d", i + 1);
		ans_addr(&a, "api.github.com", ip, 300);
	}
	uint8_t fresh[4096], out[4096];
	struct sk_dns_averdict v;
	size_t n = filtered(f, &qt, &a, true, fresh, sizeof(fresh), &v);
	assert_true(n > 512);
	assert_int_equal(sk_dns_cache_put(c, 1, &qt, &v, fresh, n, 0), 1);
	struct sk_dns_cache_hit h;
	/* a 512-byte UDP client: the empty TC=1 answer, nothing to bind (as for a fresh one) */
	assert_true(sk_dns_cache_get(c, 1, &qt, false, 0, out, sizeof(out), &h));
	assert_true(h.truncated);
	assert_int_equal(h.n_bind, 0);
	uint8_t tc[512];
	struct sk_dns_averdict vt;
	size_t nt = filtered(f, &qt, &a, false, tc, sizeof(tc), &vt);
	assert_int_equal(vt.result, SK_DNS_R_TRUNCATED);
	assert_int_equal(h.len, nt);
	assert_memory_equal(out, tc, nt);
	/* over TCP, or with a big enough EDNS size: the whole answer */
	assert_true(sk_dns_cache_get(c, 1, &qt, true, 0, out, sizeof(out), &h));
	assert_false(h.truncated);
	assert_int_equal(h.n_bind, 32);
	struct sk_dns_fquery qe = fq(f, 1, SK_DNS_F_RD, "api.github.com", SK_DNS_T_A, 1232, false);
	assert_true(sk_dns_cache_get(c, 1, &qe, false, 0, out, sizeof(out), &h));
	assert_false(h.truncated);
	assert_int_equal(h.len, n + 11);
	sk_dns_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hit_miss_and_same_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ttl_decrement_and_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_soa_minimum_and_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_cached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lru_eviction_at_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_case_id_flags_edns_restored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_generation_flushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bindings_on_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_limit_on_hit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
