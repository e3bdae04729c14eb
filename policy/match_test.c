/* policy/match_test.c — the matcher against hand-built policies (no loader): exact and wildcard names,
 * ports, protocols, CIDRs, private/link-local ranges in every embedded form, first-match order, audit
 * mode, a 100k-rule build, and a randomized comparison with a naive linear scan of the same rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/domain.h"
#include "policy/match.h"

/* --- hand-built policies ------------------------------------------------------------------------- */

struct fixture {
	struct sk_policy p;
	size_t cap;
};

static struct fixture *fx_new(size_t cap)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->cap = cap;
	f->p.rules = calloc(cap, sizeof(struct sk_rule));
	assert_non_null(f->p.rules);
	f->p.block_private = true;
	f->p.mode = SK_MODE_ENFORCE;
	return f;
}

static void fx_free(struct fixture *f)
{
	for (size_t i = 0; i < f->p.n_rules; i++) {
		free(f->p.rules[i].host);
		free(f->p.rules[i].ports);
	}
	free(f->p.rules);
	sk_matcher_free(f->p.matcher);
	free(f);
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* ports: a 0-terminated list (0 alone = any port). */
static struct sk_rule *fx_rule(struct fixture *f, const uint16_t *ports, enum sk_proto proto)
{
	assert_true(f->p.n_rules < f->cap);
	struct sk_rule *r = &f->p.rules[f->p.n_rules++];
	memset(r, 0, sizeof(*r));
	size_t n = 0;
	while (ports && ports[n])
		n++;
	if (n) {
		r->ports = malloc(n * sizeof(uint16_t));
		assert_non_null(r->ports);
		memcpy(r->ports, ports, n * sizeof(uint16_t));
		qsort(r->ports, n, sizeof(uint16_t), cmp_u16);
	}
	r->n_ports = n;
	r->proto = proto;
	return r;
}

/* "*.x.y" makes a wildcard rule; the name goes through the real normaliser as the loader's would. */
static void fx_host(struct fixture *f, const char *pattern, const uint16_t *ports, enum sk_proto proto)
{
	char norm[SK_DOMAIN_MAX + 1];
	bool wild = false;
	const char *why = NULL;
	if (sk_domain_normalize(pattern, strlen(pattern), SK_DOMAIN_ALLOW_WILDCARD, norm, &wild, &why) != 0)
		fail_msg("test pattern %s: %s", pattern, why);
	struct sk_rule *r = fx_rule(f, ports, proto);
	r->kind = SK_RULE_HOST;
	r->host = strdup(norm);
	assert_non_null(r->host);
	r->wildcard = wild;
}

static void fx_cidr(struct fixture *f, const char *cidr, const uint16_t *ports, enum sk_proto proto)
{
	struct sk_rule *r = fx_rule(f, ports, proto);
	r->kind = SK_RULE_CIDR;
	const char *why = NULL;
	if (sk_cidr_parse(cidr, &r->cidr, &why) != 0)
		fail_msg("test cidr %s: %s", cidr, why);
}

static void fx_build(struct fixture *f)
{
	assert_int_equal(sk_matcher_build(&f->p), 0);
	assert_non_null(f->p.matcher);
}

/* Local, so the suite does not depend on the loader (load.c). */
static const char *pname(enum sk_proto p)
{
	static const char *const n[] = { "any", "tls", "http", "tcp", "udp" };
	return (unsigned)p < 5 ? n[p] : "?";
}

static const uint16_t ANY_PORT[] = { 0 };
static const uint16_t P443[] = { 443, 0 };
static const uint16_t P80[] = { 80, 0 };

/* Runs one query; host/dst may be NULL. */
static struct sk_decision q(const struct fixture *f, const char *host, const char *dst, uint16_t port,
			    enum sk_proto proto)
{
	struct sk_addr a;
	if (dst && sk_addr_parse(dst, &a) != 0)
		fail_msg("test dst %s", dst);
	struct sk_query qu = { .host = host, .dst = dst ? &a : NULL, .port = port, .proto = proto };
	struct sk_decision d;
	memset(&d, 0x5a, sizeof(d));
	sk_match(&f->p, &qu, &d);
	return d;
}

#define expect_allow(d, idx)                                                                              \
	do {                                                                                              \
		struct sk_decision d_ = (d);                                                              \
		if (!d_.allow || d_.rule != (idx) || d_.reason != SK_REASON_RULE)                         \
			fail_msg("line %d: got allow=%d rule=%d reason=%s, expected allow by rule %d",    \
				 __LINE__, d_.allow, d_.rule, sk_reason_name(d_.reason), (idx));           \
	} while (0)
#define expect_deny(d, why)                                                                               \
	do {                                                                                              \
		struct sk_decision d_ = (d);                                                              \
		if (d_.allow || d_.rule != -1 || d_.reason != (why))                                      \
			fail_msg("line %d: got allow=%d rule=%d reason=%s, expected deny %s", __LINE__,   \
				 d_.allow, d_.rule, sk_reason_name(d_.reason), sk_reason_name(why));       \
	} while (0)

/* --- tests --------------------------------------------------------------------------------------- */

static void test_exact_host_needs_exact_name_and_port(void **state)
{
	(void)state;
	struct fixture *f = fx_new(4);
	fx_host(f, "api.github.com", P443, SK_PROTO_ANY);
	fx_build(f);
	expect_allow(q(f, "api.github.com", "198.18.0.10", 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "api.github.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_deny(q(f, "api.github.com", "198.18.0.10", 80, SK_PROTO_HTTP), SK_REASON_NO_MATCH);
	expect_deny(q(f, "github.com", "198.18.0.10", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "x.api.github.com", "198.18.0.10", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "api.github.com.evil.com", "198.18.0.10", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "pi.github.com", "198.18.0.10", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, NULL, "198.18.0.10", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	fx_free(f);
}

static void test_wildcard_matches_subdomains_never_apex(void **state)
{
	(void)state;
	struct fixture *f = fx_new(4);
	fx_host(f, "*.githubusercontent.com", P443, SK_PROTO_ANY);
	fx_build(f);
	expect_allow(q(f, "raw.githubusercontent.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "a.b.c.githubusercontent.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_deny(q(f, "githubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "evilgithubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "githubusercontent.com.evil.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "raw.githubusercontent.co", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "raw.githubusercontent.com", NULL, 80, SK_PROTO_HTTP), SK_REASON_NO_MATCH);
	/* A name that is not a valid host must not reach the suffix probe. */
	expect_deny(q(f, "a b.githubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "a\n.githubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, ".githubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "*.githubusercontent.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	fx_free(f);

	/* The apex is allowed only when listed on its own. */
	f = fx_new(4);
	fx_host(f, "*.example.com", ANY_PORT, SK_PROTO_ANY);
	fx_host(f, "example.com", ANY_PORT, SK_PROTO_ANY);
	fx_host(f, "*.com", P80, SK_PROTO_ANY);
	fx_build(f);
	expect_allow(q(f, "www.example.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "example.com", NULL, 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, "other.com", NULL, 80, SK_PROTO_HTTP), 2);
	expect_deny(q(f, "com", NULL, 80, SK_PROTO_HTTP), SK_REASON_NO_MATCH);
	expect_deny(q(f, "other.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	fx_free(f);
}

static void test_case_and_trailing_dot(void **state)
{
	(void)state;
	struct fixture *f = fx_new(4);
	fx_host(f, "API.GitHub.com.", P443, SK_PROTO_ANY);    /* loader-normalised to api.github.com */
	fx_host(f, "*.Example.ORG", P443, SK_PROTO_ANY);
	fx_build(f);
	assert_string_equal(f->p.rules[0].host, "api.github.com");
	expect_allow(q(f, "api.github.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "Api.GITHUB.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "api.github.com.", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "WWW.example.org.", NULL, 443, SK_PROTO_TLS), 1);
	expect_deny(q(f, "api.github.com..", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	assert_int_equal(sk_match_name(&f->p, "API.github.COM."), 0);
	fx_free(f);
}

static void test_ports_sorted_list_and_any(void **state)
{
	(void)state;
	static const uint16_t many[] = { 8443, 22, 443, 80, 65535, 1, 0 };
	struct fixture *f = fx_new(4);
	fx_host(f, "a.example", many, SK_PROTO_ANY);
	fx_host(f, "b.example", ANY_PORT, SK_PROTO_ANY);
	fx_build(f);
	for (size_t i = 0; many[i]; i++)
		expect_allow(q(f, "a.example", NULL, many[i], SK_PROTO_TCP), 0);
	static const uint16_t not_listed[] = { 2, 21, 23, 81, 442, 444, 8080, 65534 };
	for (size_t i = 0; i < sizeof(not_listed) / sizeof(not_listed[0]); i++)
		expect_deny(q(f, "a.example", NULL, not_listed[i], SK_PROTO_TCP), SK_REASON_NO_MATCH);
	expect_allow(q(f, "b.example", NULL, 1, SK_PROTO_TCP), 1);
	expect_allow(q(f, "b.example", NULL, 65535, SK_PROTO_UDP), 1);
	fx_free(f);
}

static void test_protocol_matrix(void **state)
{
	(void)state;
	/* rows: rule protocol; columns: seen ANY(unknown), TLS, HTTP, TCP, UDP */
	static const bool ok[5][5] = {
		[SK_PROTO_ANY] = { true, true, true, true, true },
		[SK_PROTO_TLS] = { false, true, false, false, false },
		[SK_PROTO_HTTP] = { false, false, true, false, false },
		[SK_PROTO_TCP] = { true, true, true, true, false },
		[SK_PROTO_UDP] = { false, false, false, false, true },
	};
	for (int rp = SK_PROTO_ANY; rp <= SK_PROTO_UDP; rp++) {
		struct fixture *f = fx_new(2);
		fx_host(f, "svc.example", ANY_PORT, (enum sk_proto)rp);
		fx_cidr(f, "198.18.7.0/24", ANY_PORT, (enum sk_proto)rp);
		fx_build(f);
		for (int sp = SK_PROTO_ANY; sp <= SK_PROTO_UDP; sp++) {
			struct sk_decision dh = q(f, "svc.example", NULL, 53, (enum sk_proto)sp);
			struct sk_decision dc = q(f, NULL, "198.18.7.9", 53, (enum sk_proto)sp);
			if (dh.allow != ok[rp][sp] || dc.allow != ok[rp][sp])
				fail_msg("rule %s seen %s: host %d cidr %d, expected %d",
					 pname((enum sk_proto)rp), pname((enum sk_proto)sp), dh.allow,
					 dc.allow, ok[rp][sp]);
		}
		fx_free(f);
	}
}

static void test_cidr_v4_v6_longest_and_first(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_cidr(f, "198.18.0.0/15", P80, SK_PROTO_ANY);      /* 0 */
	fx_cidr(f, "198.18.1.0/24", ANY_PORT, SK_PROTO_ANY); /* 1 */
	fx_cidr(f, "198.18.1.7", P443, SK_PROTO_ANY);        /* 2: never first for .7:443 (1 is earlier) */
	fx_cidr(f, "2001:db8::/32", P443, SK_PROTO_ANY);     /* 3 */
	fx_cidr(f, "2001:db8:1::/48", ANY_PORT, SK_PROTO_TCP); /* 4 */
	fx_cidr(f, "0.0.0.0/0", P80, SK_PROTO_UDP);         /* 5 */
	fx_build(f);
	expect_allow(q(f, NULL, "198.18.1.5", 80, SK_PROTO_HTTP), 0);
	expect_allow(q(f, NULL, "198.18.1.5", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, NULL, "198.18.1.7", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, NULL, "198.19.255.255", 80, SK_PROTO_HTTP), 0);
	expect_deny(q(f, NULL, "198.19.255.255", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, NULL, "198.20.0.1", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_allow(q(f, NULL, "198.20.0.1", 80, SK_PROTO_UDP), 5);
	expect_allow(q(f, NULL, "2001:db8::1", 443, SK_PROTO_TLS), 3);
	expect_allow(q(f, NULL, "2001:db8:1::1", 22, SK_PROTO_TCP), 4);
	expect_deny(q(f, NULL, "2001:db8:1::1", 22, SK_PROTO_UDP), SK_REASON_NO_MATCH);
	expect_deny(q(f, NULL, "2001:db9::1", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	/* A v4 rule does not match an unrelated v6 address and vice versa. */
	expect_deny(q(f, NULL, "2001:db8:2::1", 80, SK_PROTO_HTTP), SK_REASON_NO_MATCH);
	fx_free(f);
}

static void test_private_ranges_need_a_naming_cidr_rule(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_host(f, "db.internal.example", ANY_PORT, SK_PROTO_ANY); /* 0: host rules never vouch for IPs */
	fx_cidr(f, "0.0.0.0/0", P443, SK_PROTO_ANY);              /* 1: matches, does not name */
	fx_cidr(f, "10.0.0.0/8", ANY_PORT, SK_PROTO_TCP);         /* 2 */
	fx_cidr(f, "::/0", P443, SK_PROTO_ANY);                   /* 3 */
	fx_cidr(f, "fd00::/8", P443, SK_PROTO_ANY);               /* 4 */
	fx_build(f);
	expect_allow(q(f, NULL, "10.1.2.3", 5432, SK_PROTO_TCP), 2);
	expect_allow(q(f, NULL, "10.1.2.3", 443, SK_PROTO_TLS), 2);
	expect_deny(q(f, NULL, "10.1.2.3", 53, SK_PROTO_UDP), SK_REASON_PRIVATE);
	expect_deny(q(f, "db.internal.example", "10.1.2.3", 53, SK_PROTO_UDP), SK_REASON_PRIVATE);
	expect_deny(q(f, "db.internal.example", "192.168.1.1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "127.0.0.1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "172.16.0.1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "100.64.0.1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "::1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "fc00::1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_allow(q(f, NULL, "fd12::1", 443, SK_PROTO_TLS), 4);
	/* Public addresses go through the ordinary first match. */
	expect_allow(q(f, "db.internal.example", "198.18.0.1", 53, SK_PROTO_UDP), 0);
	expect_allow(q(f, NULL, "198.18.0.1", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, NULL, "2001:db8::1", 443, SK_PROTO_TLS), 3);

	/* Without blockPrivate, private (not link-local) addresses are ordinary destinations. */
	f->p.block_private = false;
	expect_allow(q(f, NULL, "192.168.1.1", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, "db.internal.example", "10.1.2.3", 53, SK_PROTO_UDP), 0);
	expect_allow(q(f, NULL, "fc00::1", 443, SK_PROTO_TLS), 3);
	fx_free(f);
}

static void test_embedded_forms_of_private_addresses(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_cidr(f, "0.0.0.0/0", ANY_PORT, SK_PROTO_ANY);   /* 0 */
	fx_cidr(f, "::/0", ANY_PORT, SK_PROTO_ANY);        /* 1 */
	fx_build(f);
	static const char *const priv[] = {
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:192.168.0.1", "::10.0.0.1", "::127.0.0.1",
		"64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::a00:1", "2002:a00:1::1", "2002:7f00:1::",
		"2001:0:4136:e378:8000:63bf:80ff:fffe", "::ffff:100.64.1.1", "::ffff:172.20.0.1",
	};
	for (size_t i = 0; i < sizeof(priv) / sizeof(priv[0]); i++) {
		struct sk_decision d = q(f, NULL, priv[i], 443, SK_PROTO_TLS);
		if (d.allow || d.reason != SK_REASON_PRIVATE)
			fail_msg("%s: allow=%d reason=%s", priv[i], d.allow, sk_reason_name(d.reason));
	}
	static const char *const ll[] = { "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::" };
	for (size_t i = 0; i < sizeof(ll) / sizeof(ll[0]); i++)
		expect_deny(q(f, NULL, ll[i], 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
	/* Public embedded addresses go through: ::/0 is the first rule matching the IPv6 form. */
	expect_allow(q(f, NULL, "::ffff:8.8.8.8", 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, NULL, "2002:808:808::1", 443, SK_PROTO_TLS), 0);
	fx_free(f);

	/* IPv4 rules match translated destinations; a private one is named by the IPv4 rule. */
	f = fx_new(4);
	fx_cidr(f, "10.0.0.0/8", P443, SK_PROTO_ANY);      /* 0 */
	fx_cidr(f, "198.18.0.0/15", P443, SK_PROTO_ANY);   /* 1 */
	fx_cidr(f, "::ffff:192.168.0.0/112", P443, SK_PROTO_ANY); /* 2: mapped form names 192.168/16 */
	fx_build(f);
	expect_allow(q(f, NULL, "::ffff:10.9.8.7", 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, NULL, "64:ff9b::a09:807", 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, NULL, "2002:a09:807::1", 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, NULL, "::ffff:198.18.0.1", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, NULL, "64:ff9b::c612:1", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, NULL, "::ffff:192.168.3.4", 443, SK_PROTO_TLS), 2);
	expect_deny(q(f, NULL, "192.168.3.4", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	/* Teredo and IPv4-compatible forms never borrow an IPv4 rule's allow. */
	expect_deny(q(f, NULL, "2001:0:4136:e378:8000:63bf:39ed:fffe", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, NULL, "::10.9.8.7", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "::ffff:10.9.8.7", 80, SK_PROTO_HTTP), SK_REASON_PRIVATE);
	fx_free(f);
}

static void test_metadata_is_link_local_even_without_block_private(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_host(f, "metadata.google.internal", ANY_PORT, SK_PROTO_ANY);  /* 0 */
	fx_cidr(f, "0.0.0.0/0", ANY_PORT, SK_PROTO_ANY);                 /* 1 */
	fx_cidr(f, "::/0", ANY_PORT, SK_PROTO_ANY);                      /* 2 */
	fx_cidr(f, "169.0.0.0/8", ANY_PORT, SK_PROTO_ANY);               /* 3 */
	fx_cidr(f, "fd00::/8", ANY_PORT, SK_PROTO_ANY);                  /* 4 */
	fx_build(f);
	for (int bp = 0; bp < 2; bp++) {
		f->p.block_private = bp;
		expect_deny(q(f, NULL, "169.254.169.254", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
		expect_deny(q(f, "metadata.google.internal", "169.254.169.254", 80, SK_PROTO_HTTP),
			    SK_REASON_LINK_LOCAL);
		expect_deny(q(f, NULL, "fd00:ec2::254", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
		expect_deny(q(f, NULL, "fe80::1", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
		expect_deny(q(f, NULL, "::ffff:169.254.169.254", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
	}
	/* fd00::/8 names the rest of the ULA block but not the metadata addresses inside it. */
	f->p.block_private = true;
	expect_allow(q(f, NULL, "fd00:ec2::252", 80, SK_PROTO_HTTP), 4);
	expect_deny(q(f, NULL, "fd00:ec2::253", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
	fx_free(f);

	f = fx_new(4);
	fx_cidr(f, "169.254.169.254/32", P80, SK_PROTO_HTTP);  /* 0 */
	fx_cidr(f, "fd00:ec2::254/128", P80, SK_PROTO_ANY);    /* 1 */
	fx_cidr(f, "fe80::/10", ANY_PORT, SK_PROTO_UDP);       /* 2 */
	fx_build(f);
	expect_allow(q(f, NULL, "169.254.169.254", 80, SK_PROTO_HTTP), 0);
	expect_allow(q(f, NULL, "::ffff:169.254.169.254", 80, SK_PROTO_HTTP), 0);
	expect_deny(q(f, NULL, "169.254.169.254", 80, SK_PROTO_TCP), SK_REASON_LINK_LOCAL);
	expect_deny(q(f, NULL, "169.254.169.254", 443, SK_PROTO_TLS), SK_REASON_LINK_LOCAL);
	expect_deny(q(f, NULL, "169.254.169.253", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
	expect_allow(q(f, NULL, "fd00:ec2::254", 80, SK_PROTO_HTTP), 1);
	expect_allow(q(f, NULL, "fe80::1", 547, SK_PROTO_UDP), 2);
	fx_free(f);
}

/* Provider metadata and host-service addresses outside 169.254/16 and fe80::/10 (docs/policy.md): denied
 * as link-local with or without blockPrivate, under 0.0.0.0/0, ::/0 and the private blocks that contain
 * them, in every IPv6 spelling of the IPv4 ones; a cidr rule naming exactly one of them allows it. */
static void test_provider_metadata_addresses(void **state)
{
	(void)state;
	static const char *const meta[] = {
		"168.63.129.16", "::ffff:168.63.129.16", "64:ff9b::a83f:8110", "2002:a83f:8110::1",
		"64:ff9b:1::a83f:8110", "::168.63.129.16",
		"100.100.100.200", "::ffff:100.100.100.200", "64:ff9b::6464:64c8", "2002:6464:64c8::",
		"192.0.0.192", "::ffff:192.0.0.192", "64:ff9b::c000:c0", "2002:c000:c0:1::1",
		"fd00:ec2::254", "fd00:ec2::253", "fd00:ec2::123", "fd00:ec2::23", "fd00:42::42",
	};
	struct fixture *f = fx_new(8);
	fx_cidr(f, "0.0.0.0/0", ANY_PORT, SK_PROTO_ANY);        /* 0 */
	fx_cidr(f, "::/0", ANY_PORT, SK_PROTO_ANY);             /* 1 */
	fx_cidr(f, "100.64.0.0/10", ANY_PORT, SK_PROTO_ANY);    /* 2 */
	fx_cidr(f, "192.0.0.0/24", ANY_PORT, SK_PROTO_ANY);     /* 3 */
	fx_cidr(f, "fd00::/8", ANY_PORT, SK_PROTO_ANY);         /* 4 */
	fx_cidr(f, "168.63.128.0/23", ANY_PORT, SK_PROTO_ANY);  /* 5 */
	fx_host(f, "wireserver.example", ANY_PORT, SK_PROTO_ANY); /* 6 */
	fx_build(f);
	for (int bp = 0; bp < 2; bp++) {
		f->p.block_private = bp;
		for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
			struct sk_decision d = q(f, NULL, meta[i], 80, SK_PROTO_HTTP);
			if (d.allow || d.reason != SK_REASON_LINK_LOCAL)
				fail_msg("%s (blockPrivate %d): allow=%d reason=%s", meta[i], bp, d.allow,
					 sk_reason_name(d.reason));
			d = q(f, "wireserver.example", meta[i], 443, SK_PROTO_TLS);
			if (d.allow || d.reason != SK_REASON_LINK_LOCAL)
				fail_msg("%s via host rule (blockPrivate %d): allow=%d", meta[i], bp, d.allow);
			struct sk_addr a;
			assert_int_equal(sk_addr_parse(meta[i], &a), 0);
			if (sk_match_addr(&f->p, &a) != -1)  /* DNS answers: the rebinding defence refuses it */
				fail_msg("%s (blockPrivate %d): sk_match_addr %d", meta[i], bp,
					 sk_match_addr(&f->p, &a));
		}
	}
	/* Neighbours are not metadata: the private blocks name them. */
	f->p.block_private = true;
	expect_allow(q(f, NULL, "100.100.100.201", 80, SK_PROTO_HTTP), 2);
	expect_allow(q(f, NULL, "192.0.0.193", 80, SK_PROTO_HTTP), 3);
	expect_allow(q(f, NULL, "168.63.129.17", 80, SK_PROTO_HTTP), 0);
	expect_allow(q(f, NULL, "fd00:ec2::1", 80, SK_PROTO_HTTP), 4);
	fx_free(f);

	f = fx_new(8);
	fx_cidr(f, "168.63.129.16/32", P80, SK_PROTO_HTTP);    /* 0 */
	fx_cidr(f, "100.100.100.200", ANY_PORT, SK_PROTO_ANY); /* 1 */
	fx_cidr(f, "192.0.0.192/32", P80, SK_PROTO_TCP);       /* 2 */
	fx_cidr(f, "fd00:ec2::253/128", ANY_PORT, SK_PROTO_UDP); /* 3 */
	fx_cidr(f, "fd00:42::42", P80, SK_PROTO_ANY);          /* 4 */
	fx_cidr(f, "0.0.0.0/0", ANY_PORT, SK_PROTO_ANY);       /* 5 */
	fx_build(f);
	for (int bp = 0; bp < 2; bp++) {
		f->p.block_private = bp;
		expect_allow(q(f, NULL, "168.63.129.16", 80, SK_PROTO_HTTP), 0);
		expect_allow(q(f, NULL, "::ffff:168.63.129.16", 80, SK_PROTO_HTTP), 0);
		expect_allow(q(f, NULL, "64:ff9b::a83f:8110", 80, SK_PROTO_HTTP), 0);
		expect_allow(q(f, NULL, "2002:a83f:8110::1", 80, SK_PROTO_HTTP), 0);
		expect_deny(q(f, NULL, "168.63.129.16", 443, SK_PROTO_TLS), SK_REASON_LINK_LOCAL);
		expect_deny(q(f, NULL, "168.63.129.16", 80, SK_PROTO_TCP), SK_REASON_LINK_LOCAL);
		expect_allow(q(f, NULL, "100.100.100.200", 8080, SK_PROTO_TCP), 1);
		expect_allow(q(f, NULL, "192.0.0.192", 80, SK_PROTO_HTTP), 2);
		expect_deny(q(f, NULL, "192.0.0.192", 443, SK_PROTO_TLS), SK_REASON_LINK_LOCAL);
		expect_allow(q(f, NULL, "fd00:ec2::253", 53, SK_PROTO_UDP), 3);
		expect_deny(q(f, NULL, "fd00:ec2::253", 53, SK_PROTO_TCP), SK_REASON_LINK_LOCAL);
		expect_allow(q(f, NULL, "fd00:42::42", 80, SK_PROTO_HTTP), 4);
		expect_deny(q(f, NULL, "fd00:ec2::254", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
		expect_deny(q(f, NULL, "169.254.169.254", 80, SK_PROTO_HTTP), SK_REASON_LINK_LOCAL);
		struct sk_addr a;
		assert_int_equal(sk_addr_parse("168.63.129.16", &a), 0);
		assert_int_equal(sk_match_addr(&f->p, &a), 0);
		assert_int_equal(sk_addr_parse("fd00:ec2::253", &a), 0);
		assert_int_equal(sk_match_addr(&f->p, &a), 3);
		assert_int_equal(sk_addr_parse("fd00:ec2::123", &a), 0);
		assert_int_equal(sk_match_addr(&f->p, &a), -1);
	}
	fx_free(f);
}

static void test_first_match_is_smallest_index(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_host(f, "*.example.com", P80, SK_PROTO_ANY);     /* 0 */
	fx_cidr(f, "198.18.0.0/24", P443, SK_PROTO_ANY);    /* 1 */
	fx_host(f, "www.example.com", ANY_PORT, SK_PROTO_TLS); /* 2 */
	fx_host(f, "*.www.example.com", ANY_PORT, SK_PROTO_ANY); /* 3 */
	fx_host(f, "www.example.com", ANY_PORT, SK_PROTO_ANY); /* 4: same key as 2, later */
	fx_build(f);
	expect_allow(q(f, "www.example.com", "198.18.0.1", 80, SK_PROTO_HTTP), 0);
	expect_allow(q(f, "www.example.com", "198.18.0.1", 443, SK_PROTO_TLS), 1);
	expect_allow(q(f, "www.example.com", "198.18.9.1", 443, SK_PROTO_TLS), 2);
	expect_allow(q(f, "www.example.com", "198.18.9.1", 443, SK_PROTO_HTTP), 4);
	expect_allow(q(f, "a.www.example.com", "198.18.9.1", 443, SK_PROTO_HTTP), 3);
	expect_allow(q(f, "a.www.example.com", "198.18.9.1", 80, SK_PROTO_HTTP), 0);
	assert_int_equal(sk_match_name(&f->p, "www.example.com"), 0);
	assert_int_equal(sk_match_name(&f->p, "a.www.example.com"), 0);
	assert_int_equal(sk_match_name(&f->p, "example.com"), -1);
	fx_free(f);
}

static void test_audit_mode_allows_and_reports(void **state)
{
	(void)state;
	struct fixture *f = fx_new(4);
	fx_host(f, "ok.example", P443, SK_PROTO_ANY);     /* 0 */
	fx_cidr(f, "0.0.0.0/0", P443, SK_PROTO_ANY);      /* 1 */
	fx_build(f);
	f->p.mode = SK_MODE_AUDIT;
	expect_allow(q(f, "ok.example", "198.18.0.1", 443, SK_PROTO_TLS), 0);

	struct sk_decision d = q(f, "nope.example", "2001:db8::1", 443, SK_PROTO_TLS);
	assert_true(d.allow);
	assert_int_equal(d.reason, SK_REASON_AUDIT);
	assert_int_equal(d.rule, -1);

	/* The would-be rule is reported when only the private check denied. */
	d = q(f, "ok.example", "10.0.0.1", 443, SK_PROTO_TLS);
	assert_true(d.allow);
	assert_int_equal(d.reason, SK_REASON_AUDIT);
	assert_int_equal(d.rule, 0);
	d = q(f, NULL, "169.254.169.254", 443, SK_PROTO_TLS);
	assert_true(d.allow);
	assert_int_equal(d.reason, SK_REASON_AUDIT);
	assert_int_equal(d.rule, 1);
	d = q(f, NULL, "169.254.169.254", 80, SK_PROTO_HTTP);
	assert_true(d.allow);
	assert_int_equal(d.reason, SK_REASON_AUDIT);
	assert_int_equal(d.rule, -1);

	/* Enforce: the same queries deny and never leak the would-be rule. */
	f->p.mode = SK_MODE_ENFORCE;
	expect_deny(q(f, "ok.example", "10.0.0.1", 443, SK_PROTO_TLS), SK_REASON_PRIVATE);
	expect_deny(q(f, NULL, "169.254.169.254", 443, SK_PROTO_TLS), SK_REASON_LINK_LOCAL);
	fx_free(f);
}

static void test_match_name_for_dns(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_cidr(f, "198.18.0.0/15", ANY_PORT, SK_PROTO_ANY);  /* 0: not a name rule */
	fx_host(f, "*.pypi.org", P443, SK_PROTO_TLS);         /* 1 */
	fx_host(f, "pypi.org", P80, SK_PROTO_HTTP);           /* 2 */
	fx_host(f, "files.pypi.org", ANY_PORT, SK_PROTO_UDP); /* 3 */
	fx_build(f);
	assert_int_equal(sk_match_name(&f->p, "pypi.org"), 2);
	assert_int_equal(sk_match_name(&f->p, "files.pypi.org"), 1);
	assert_int_equal(sk_match_name(&f->p, "x.y.pypi.org"), 1);
	assert_int_equal(sk_match_name(&f->p, "PyPI.org."), 2);
	assert_int_equal(sk_match_name(&f->p, "pypi.org.evil"), -1);
	assert_int_equal(sk_match_name(&f->p, "198.18.0.1"), -1);
	/* the DNS filter's entry point for names it normalised itself: the same rules */
	assert_int_equal(sk_match_name_normalized(&f->p, "pypi.org"), 2);
	assert_int_equal(sk_match_name_normalized(&f->p, "files.pypi.org"), 1);
	assert_int_equal(sk_match_name_normalized(&f->p, "x.y.pypi.org"), 1);
	assert_int_equal(sk_match_name_normalized(&f->p, "pypi.org.evil"), -1);
	assert_int_equal(sk_match_name_normalized(&f->p, "198.18.0.1"), -1);
	assert_int_equal(sk_match_name_normalized(&f->p, ""), -1);
	assert_int_equal(sk_match_name_normalized(&f->p, NULL), -1);
	assert_int_equal(sk_match_name(&f->p, ""), -1);
	assert_int_equal(sk_match_name(&f->p, NULL), -1);
	assert_int_equal(sk_match_name(&f->p, "a..pypi.org"), -1);
	fx_free(f);
}

static int addr_rule(const struct fixture *f, const char *dst)
{
	struct sk_addr a;
	if (sk_addr_parse(dst, &a) != 0)
		fail_msg("test dst %s", dst);
	return sk_match_addr(&f->p, &a);
}

static void test_match_addr_for_dns_answers(void **state)
{
	(void)state;
	struct fixture *f = fx_new(8);
	fx_host(f, "x.example", ANY_PORT, SK_PROTO_ANY);        /* 0: names never count */
	fx_cidr(f, "0.0.0.0/0", P443, SK_PROTO_TLS);            /* 1 */
	fx_cidr(f, "10.96.0.0/12", P80, SK_PROTO_UDP);          /* 2 */
	fx_cidr(f, "169.254.169.254", P80, SK_PROTO_HTTP);      /* 3 */
	fx_build(f);
	assert_int_equal(addr_rule(f, "198.18.0.1"), 1);
	assert_int_equal(addr_rule(f, "10.96.0.10"), 2);
	assert_int_equal(addr_rule(f, "::ffff:10.96.0.10"), 2);
	assert_int_equal(addr_rule(f, "10.0.0.1"), -1);
	assert_int_equal(addr_rule(f, "169.254.169.254"), 3);
	assert_int_equal(addr_rule(f, "169.254.169.253"), -1);
	assert_int_equal(addr_rule(f, "2001:db8::1"), -1);
	f->p.block_private = false;
	assert_int_equal(addr_rule(f, "10.0.0.1"), 1);
	assert_int_equal(addr_rule(f, "169.254.1.1"), -1);
	assert_int_equal(sk_match_addr(&f->p, NULL), -1);
	fx_free(f);
}

static void test_build_errors_and_fail_closed(void **state)
{
	(void)state;
	struct fixture *f = fx_new(4);
	struct sk_decision d;
	struct sk_query qu = { .host = "x.example", .port = 443, .proto = SK_PROTO_TLS };

	/* No matcher at all: deny, even in audit mode. */
	f->p.mode = SK_MODE_AUDIT;
	sk_match(&f->p, &qu, &d);
	assert_false(d.allow);
	assert_int_equal(sk_match_name(&f->p, "x.example"), -1);
	f->p.mode = SK_MODE_ENFORCE;

	/* Empty policy: builds, denies. */
	fx_build(f);
	expect_deny(q(f, "x.example", "198.18.0.1", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);

	/* Rebuild replaces the matcher (ASan would report the old one leaking). */
	fx_host(f, "x.example", ANY_PORT, SK_PROTO_ANY);
	fx_build(f);
	expect_allow(q(f, "x.example", NULL, 443, SK_PROTO_TLS), 0);

	/* Rules the loader can never produce are refused; the previous matcher stays. */
	struct sk_matcher *before = f->p.matcher;
	fx_cidr(f, "10.0.0.0/8", ANY_PORT, SK_PROTO_ANY);
	f->p.rules[1].cidr.prefix = 33;
	assert_int_equal(sk_matcher_build(&f->p), -EINVAL);
	assert_ptr_equal(f->p.matcher, before);
	f->p.rules[1].cidr.prefix = 8;
	f->p.rules[1].cidr.net.family = 0;
	assert_int_equal(sk_matcher_build(&f->p), -EINVAL);
	f->p.rules[1].cidr.net.family = AF_INET;
	f->p.rules[1].n_ports = 2;  /* ports NULL */
	assert_int_equal(sk_matcher_build(&f->p), -EINVAL);
	f->p.rules[1].n_ports = 0;
	f->p.rules[1].kind = SK_RULE_HOST;  /* host NULL */
	assert_int_equal(sk_matcher_build(&f->p), -EINVAL);
	f->p.rules[1].kind = SK_RULE_CIDR;
	assert_int_equal(sk_matcher_build(&f->p), 0);
	assert_int_equal(sk_matcher_build(NULL), -EINVAL);
	sk_matcher_free(NULL);
	fx_free(f);
}

static void test_reason_names(void **state)
{
	(void)state;
	assert_string_equal(sk_reason_name(SK_REASON_RULE), "rule");
	assert_string_equal(sk_reason_name(SK_REASON_NO_MATCH), "no_match");
	assert_string_equal(sk_reason_name(SK_REASON_PRIVATE), "private");
	assert_string_equal(sk_reason_name(SK_REASON_LINK_LOCAL), "link_local");
	assert_string_equal(sk_reason_name(SK_REASON_AUDIT), "audit");
}

static void test_100k_rules_build_and_match(void **state)
{
	(void)state;
	enum { N = 100000 };
	struct fixture *f = fx_new(N + 1);
	char buf[64];
	static const uint16_t p[] = { 443, 8443, 0 };
	for (unsigned i = 0; i < N; i++) {
		switch (i % 3) {
		case 0:
			(void)snprintf(buf, sizeof(buf), "host%u.example.com", i);
			fx_host(f, buf, p, SK_PROTO_ANY);
			break;
		case 1:
			(void)snprintf(buf, sizeof(buf), "*.w%u.example.net", i);
			fx_host(f, buf, p, SK_PROTO_TLS);
			break;
		default:
			(void)snprintf(buf, sizeof(buf), "198.%u.%u.%u/32", 18 + (i >> 16 & 1), i >> 8 & 0xff, i & 0xff);
			fx_cidr(f, buf, p, SK_PROTO_ANY);
			break;
		}
	}
	fx_build(f);
	expect_allow(q(f, "host0.example.com", NULL, 443, SK_PROTO_TLS), 0);
	expect_allow(q(f, "host99999.example.com", NULL, 8443, SK_PROTO_TLS), 99999);
	expect_allow(q(f, "a.b.w99997.example.net", NULL, 443, SK_PROTO_TLS), 99997);
	expect_deny(q(f, "w99997.example.net", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_allow(q(f, NULL, "198.19.134.158", 443, SK_PROTO_TLS), 99998);  /* 99998 = 0x1869e */
	expect_allow(q(f, NULL, "198.18.0.2", 443, SK_PROTO_TLS), 2);
	expect_deny(q(f, NULL, "198.18.0.3", 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	expect_deny(q(f, "host1.example.com", NULL, 443, SK_PROTO_TLS), SK_REASON_NO_MATCH);
	/* i % 3: 0 exact host, 1 wildcard, 2 CIDR */
	assert_int_equal(sk_match_name(&f->p, "host50001.example.com"), 50001);
	assert_int_equal(sk_match_name(&f->p, "host50002.example.com"), -1);
	assert_int_equal(sk_match_name(&f->p, "host50003.example.com"), -1);
	assert_int_equal(sk_match_name(&f->p, "x.w50002.example.net"), 50002);
	fx_free(f);
}

/* --- randomized comparison with a linear scan ---------------------------------------------------- */

static bool ref_proto(enum sk_proto rule, enum sk_proto seen)
{
	if (seen == SK_PROTO_ANY)
		seen = SK_PROTO_TCP;
	if (rule == SK_PROTO_ANY)
		return true;
	if (rule == SK_PROTO_TCP)
		return seen != SK_PROTO_UDP;
	return rule == seen;
}

static bool ref_port(const struct sk_rule *r, uint16_t port)
{
	if (r->n_ports == 0)
		return true;
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

static bool ref_host(const struct sk_rule *r, const char *name)
{
	if (!name)
		return false;
	if (!r->wildcard)
		return strcmp(r->host, name) == 0;
	size_t nl = strlen(name), sl = strlen(r->host);
	return nl > sl + 1 && name[nl - sl - 1] == '.' && strcmp(name + nl - sl, r->host) == 0;
}

static bool ref_cidr(const struct sk_rule *r, const struct sk_addr *dst)
{
	if (!dst)
		return false;
	if (sk_cidr_contains(&r->cidr, dst))
		return true;
	/* mapped, NAT64 (well-known; local-use at /96), 6to4 — not compat or Teredo (see match.c) */
	static const char *const translators[] = { "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/96", "2002::/16" };
	for (size_t i = 0; i < sizeof(translators) / sizeof(translators[0]); i++) {
		struct sk_cidr t;
		struct sk_addr v4;
		assert_int_equal(sk_cidr_parse(translators[i], &t, NULL), 0);
		if (sk_cidr_contains(&t, dst) && sk_addr_embedded_v4(dst, &v4) && sk_cidr_contains(&r->cidr, &v4))
			return true;
	}
	return false;
}

static int ref_match(const struct sk_policy *p, const char *host, const struct sk_addr *dst, uint16_t port,
		     enum sk_proto proto, enum sk_reason *why)
{
	int need = 0;  /* 1 link-local, 2 private */
	if (dst && sk_addr_is_link_local(dst))
		need = 1;
	else if (dst && p->block_private && sk_addr_is_private(dst))
		need = 2;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (!ref_port(r, port) || !ref_proto(r->proto, proto))
			continue;
		if (need) {
			if (r->kind == SK_RULE_CIDR && ref_cidr(r, dst) &&
			    (need == 1 ? sk_cidr_is_link_local(&r->cidr) : sk_cidr_is_private(&r->cidr))) {
				*why = SK_REASON_RULE;
				return (int)i;
			}
			continue;
		}
		if (r->kind == SK_RULE_HOST ? ref_host(r, host) : ref_cidr(r, dst)) {
			*why = SK_REASON_RULE;
			return (int)i;
		}
	}
	*why = need == 1 ? SK_REASON_LINK_LOCAL : need == 2 ? SK_REASON_PRIVATE : SK_REASON_NO_MATCH;
	return -1;
}

static void append(char *buf, size_t size, const char *s)
{
	size_t n = strlen(buf);
	(void)snprintf(buf + n, size - n, "%s", s);
}

static void test_random_policies_agree_with_linear_scan(void **state)
{
	(void)state;
	static const char *const labels[] = { "a", "b", "c", "com", "net", "x-y" };
	static const char *const nets4[] = { "198.18.0.0/15", "198.18.0.0/16", "198.18.1.0/24", "198.18.1.1",
					     "10.0.0.0/8", "10.1.0.0/16", "0.0.0.0/0", "169.254.0.0/16",
					     "169.254.169.254", "128.0.0.0/1", "192.168.0.0/16", "127.0.0.0/8",
					     "100.64.0.0/10", "168.63.129.16", "168.63.0.0/16" };
	static const char *const nets6[] = { "2001:db8::/32", "2001:db8:1::/48", "::/0", "fd00::/8",
					     "fd00:ec2::254", "fe80::/10", "::ffff:0:0/96", "2002::/16",
					     "::ffff:10.0.0.0/104", "64:ff9b::/96" };
	static const char *const dsts[] = { "198.18.1.1", "198.18.2.3", "198.19.0.1", "10.1.2.3", "10.2.0.1",
					    "169.254.169.254", "169.254.1.1", "192.168.1.1", "127.0.0.1",
					    "8.8.8.8", "2001:db8::1", "2001:db8:1::5", "fd00:ec2::254", "fd00::1",
					    "fe80::1", "::ffff:10.1.2.3", "::ffff:198.18.1.1", "64:ff9b::c612:101",
					    "2002:c612:101::1", "2002:a01:203::", "::1", "2001:0:1:2:3:4:f5fe:fdfc",
					    "168.63.129.16", "100.100.100.200", "100.100.100.201", "fd00:ec2::253",
					    "::ffff:168.63.129.16" };
	static const uint16_t port_sets[][4] = { { 0 }, { 443, 0 }, { 80, 443, 0 }, { 53, 0 }, { 22, 80, 8443, 0 } };
	static const uint16_t qports[] = { 22, 53, 80, 443, 8443, 9999 };
	unsigned seed = 12345;
#define RND(n) (((seed = seed * 1103515245u + 12345u) >> 16) % (n))
	unsigned mismatches = 0, allows = 0, checks = 0;
	for (int round = 0; round < 60; round++) {
		struct fixture *f = fx_new(40);
		f->p.block_private = RND(2);
		size_t n = 1 + RND(40);
		for (size_t i = 0; i < n; i++) {
			const uint16_t *ps = port_sets[RND(5)];
			enum sk_proto pr = (enum sk_proto)RND(5);
			unsigned kind = RND(4);
			if (kind < 2) {
				char name[64] = "";
				unsigned nl = 1 + RND(3);
				for (unsigned l = 0; l < nl; l++) {
					if (l)
						append(name, sizeof(name), ".");
					append(name, sizeof(name), labels[RND(6)]);
				}
				char pat[70];
				(void)snprintf(pat, sizeof(pat), "%s%s", kind == 1 ? "*." : "", name);
				fx_host(f, pat, ps, pr);
			} else if (kind == 2) {
				fx_cidr(f, nets4[RND(sizeof(nets4) / sizeof(nets4[0]))], ps, pr);
			} else {
				fx_cidr(f, nets6[RND(sizeof(nets6) / sizeof(nets6[0]))], ps, pr);
			}
		}
		fx_build(f);
		for (int k = 0; k < 400; k++) {
			char host[64] = "";
			unsigned nl = RND(5);
			for (unsigned l = 0; l < nl; l++) {
				if (l)
					append(host, sizeof(host), ".");
				append(host, sizeof(host), labels[RND(6)]);
			}
			struct sk_addr dst;
			bool has_dst = RND(4) != 0;
			if (has_dst)
				assert_int_equal(sk_addr_parse(dsts[RND(sizeof(dsts) / sizeof(dsts[0]))], &dst), 0);
			uint16_t port = qports[RND(6)];
			enum sk_proto proto = (enum sk_proto)RND(5);
			struct sk_query qu = { .host = nl ? host : NULL, .dst = has_dst ? &dst : NULL,
					       .port = port, .proto = proto };
			struct sk_decision d;
			sk_match(&f->p, &qu, &d);
			enum sk_reason why;
			int want = ref_match(&f->p, qu.host, qu.dst, port, proto, &why);
			checks++;
			if (d.rule != want || d.reason != why || d.allow != (want >= 0)) {
				char a[SK_ADDR_STRLEN] = "-";
				if (has_dst)
					sk_addr_format(&dst, a);
				print_error("round %d: host=%s dst=%s port=%u proto=%s: got rule %d %s, want %d %s\n",
					    round, nl ? host : "-", a, port, pname(proto), d.rule,
					    sk_reason_name(d.reason), want, sk_reason_name(why));
				mismatches++;
			}
			allows += d.allow;
			int wn = -1;
			for (size_t i = 0; i < f->p.n_rules && wn < 0 && nl; i++)
				if (f->p.rules[i].kind == SK_RULE_HOST && ref_host(&f->p.rules[i], host))
					wn = (int)i;
			assert_int_equal(sk_match_name(&f->p, nl ? host : NULL), wn);
			if (has_dst) {
				bool ll = sk_addr_is_link_local(&dst);
				bool pv = f->p.block_private && sk_addr_is_private(&dst);
				int wa = -1;
				for (size_t i = 0; i < f->p.n_rules && wa < 0; i++) {
					const struct sk_rule *r = &f->p.rules[i];
					if (r->kind == SK_RULE_CIDR && ref_cidr(r, &dst) &&
					    (!ll || sk_cidr_is_link_local(&r->cidr)) &&
					    (ll || !pv || sk_cidr_is_private(&r->cidr)))
						wa = (int)i;
				}
				assert_int_equal(sk_match_addr(&f->p, &dst), wa);
			}
		}
		fx_free(f);
	}
	assert_int_equal(mismatches, 0);
	/* The comparison is only meaningful if both outcomes occur often. */
	assert_true(allows > checks / 10);
	assert_true(allows < checks - checks / 10);
#undef RND
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_host_needs_exact_name_and_port),
		cmocka_unit_test(test_wildcard_matches_subdomains_never_apex),
		cmocka_unit_test(test_case_and_trailing_dot),
		cmocka_unit_test(test_ports_sorted_list_and_any),
		cmocka_unit_test(test_protocol_matrix),
		cmocka_unit_test(test_cidr_v4_v6_longest_and_first),
		cmocka_unit_test(test_private_ranges_need_a_naming_cidr_rule),
		cmocka_unit_test(test_embedded_forms_of_private_addresses),
		cmocka_unit_test(test_metadata_is_link_local_even_without_block_private),
		cmocka_unit_test(test_provider_metadata_addresses),
		cmocka_unit_test(test_first_match_is_smallest_index),
		cmocka_unit_test(test_audit_mode_allows_and_reports),
		cmocka_unit_test(test_match_name_for_dns),
		cmocka_unit_test(test_match_addr_for_dns_answers),
		cmocka_unit_test(test_build_errors_and_fail_closed),
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_100k_rules_build_and_match),
		cmocka_unit_test(test_random_policies_agree_with_linear_scan),
	};
	return cmocka_run_group_tests_name("match", tests, NULL, NULL);
}
