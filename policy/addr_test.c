/* policy/addr_test.c — strict address/CIDR parsing, formatting, containment, and the private /
 * link-local / loopback classification including every embedded-IPv4 form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/addr.h"

static struct sk_addr A(const char *s)
{
	struct sk_addr a;
	if (sk_addr_parse(s, &a) != 0)
		fail_msg("test address %s does not parse", s);
	return a;
}

static void test_addr_parse_accepts_canonical_forms(void **state)
{
	(void)state;
	static const struct {
		const char *in, *fmt;
		int family;
	} ok[] = {
		{ "0.0.0.0", "0.0.0.0", AF_INET },
		{ "10.1.2.3", "10.1.2.3", AF_INET },
		{ "255.255.255.255", "255.255.255.255", AF_INET },
		{ "198.18.0.1", "198.18.0.1", AF_INET },
		{ "::", "::", AF_INET6 },
		{ "::1", "::1", AF_INET6 },
		{ "2001:DB8::1", "2001:db8::1", AF_INET6 },
		{ "2001:db8:0:0:0:0:0:1", "2001:db8::1", AF_INET6 },
		{ "::ffff:10.0.0.1", "::ffff:10.0.0.1", AF_INET6 },
		{ "64:ff9b::192.168.1.1", "64:ff9b::c0a8:101", AF_INET6 },
		{ "fe80::1", "fe80::1", AF_INET6 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct sk_addr a;
		char out[SK_ADDR_STRLEN];
		if (sk_addr_parse(ok[i].in, &a) != 0)
			fail_msg("%s rejected", ok[i].in);
		assert_int_equal(a.family, ok[i].family);
		sk_addr_format(&a, out);
		assert_string_equal(out, ok[i].fmt);
	}
	struct sk_addr a = A("1.2.3.4");
	for (int i = 4; i < 16; i++)
		assert_int_equal(a.bytes[i], 0);
}

static void test_addr_parse_rejects_ambiguous_spellings(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "010.1.1.1", "10.01.1.1", "10.1.1.01", "00.1.1.1", "10.1", "10.1.1", "10.1.1.1.1",
		"256.1.1.1", "1.2.3.256", "1.2.3.", ".1.2.3", "1..2.3", "0x7f.0.0.1", "2130706433",
		"1.2.3.4 ", " 1.2.3.4", "1.2.3.4\n", "+1.2.3.4", "1.2.3.-4", "1234.1.1.1",
		"[::1]", "::1%eth0", "fe80::1%1", "[::1]:443", ":::", "1:2:3:4:5:6:7:8:9", "12345::",
		"::ffff:010.0.0.1", "::ffff:10.0.1", "::1 ", "g::1", "::ffff:1.2.3.4:5", "1.2.3.4::",
		"localhost", "1.2.3.4/32",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sk_addr a;
		if (sk_addr_parse(bad[i], &a) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
	}
	struct sk_addr a;
	assert_int_equal(sk_addr_parse(NULL, &a), -EINVAL);
}

static void test_cidr_parse_and_format(void **state)
{
	(void)state;
	static const struct {
		const char *in, *fmt;
	} ok[] = {
		{ "10.0.0.0/8", "10.0.0.0/8" },   { "0.0.0.0/0", "0.0.0.0/0" },
		{ "1.2.3.4", "1.2.3.4/32" },      { "1.2.3.4/32", "1.2.3.4/32" },
		{ "::/0", "::/0" },               { "2001:db8::/32", "2001:db8::/32" },
		{ "fd00:ec2::254", "fd00:ec2::254/128" }, { "::ffff:0:0/96", "::ffff:0.0.0.0/96" },
		{ "169.254.169.254/32", "169.254.169.254/32" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct sk_cidr c;
		const char *why = NULL;
		char out[SK_ADDR_STRLEN + 4];
		if (sk_cidr_parse(ok[i].in, &c, &why) != 0)
			fail_msg("%s rejected: %s", ok[i].in, why);
		sk_cidr_format(&c, out);
		assert_string_equal(out, ok[i].fmt);
	}
}

static void test_cidr_parse_rejections_have_reasons(void **state)
{
	(void)state;
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "10.0.0.1/8", "host bits set beyond the prefix length" },
		{ "2001:db8::1/32", "host bits set beyond the prefix length" },
		{ "10.0.0.0/33", "prefix length over 32" },
		{ "::/129", "prefix length over 128" },
		{ "10.0.0.0/", "invalid prefix length (decimal, no leading zeros)" },
		{ "10.0.0.0/08", "invalid prefix length (decimal, no leading zeros)" },
		{ "10.0.0.0/-1", "invalid prefix length (decimal, no leading zeros)" },
		{ "10.0.0.0/8/8", "invalid prefix length (decimal, no leading zeros)" },
		{ "10.0.0.0/ 8", "invalid prefix length (decimal, no leading zeros)" },
		{ "10.0.0.0/1000", "invalid prefix length (decimal, no leading zeros)" },
		{ "010.0.0.0/8", "invalid IP address (strict dotted quad or RFC 4291 text, no brackets, zone or "
				 "leading zeros)" },
		{ "[::]/0", "invalid IP address (strict dotted quad or RFC 4291 text, no brackets, zone or "
			    "leading zeros)" },
		{ "/8", "invalid IP address (strict dotted quad or RFC 4291 text, no brackets, zone or "
			"leading zeros)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sk_cidr c;
		const char *why = NULL;
		int r = sk_cidr_parse(bad[i].in, &c, &why);
		if (r != -EINVAL || !why || strcmp(why, bad[i].why) != 0)
			fail_msg("%s: r=%d why=%s", bad[i].in, r, why ? why : "(null)");
	}
	struct sk_cidr c;
	assert_int_equal(sk_cidr_parse("10.0.0.1/8", &c, NULL), -EINVAL);
}

static void test_cidr_contains_and_equal(void **state)
{
	(void)state;
	struct sk_cidr c;
	assert_int_equal(sk_cidr_parse("172.16.0.0/12", &c, NULL), 0);
	struct sk_addr in = A("172.31.255.255"), out = A("172.32.0.0"), v6 = A("::ffff:172.16.0.1");
	assert_true(sk_cidr_contains(&c, &in));
	assert_false(sk_cidr_contains(&c, &out));
	assert_false(sk_cidr_contains(&c, &v6));  /* family must agree; embedding is the matcher's job */
	assert_int_equal(sk_cidr_parse("0.0.0.0/0", &c, NULL), 0);
	assert_true(sk_cidr_contains(&c, &out));
	assert_int_equal(sk_cidr_parse("2001:db8::/33", &c, NULL), 0);
	struct sk_addr a6 = A("2001:db8:7fff::1"), b6 = A("2001:db8:8000::1");
	assert_true(sk_cidr_contains(&c, &a6));
	assert_false(sk_cidr_contains(&c, &b6));

	struct sk_addr x = A("2001:db8::1"), y = A("2001:0db8:0::1");
	assert_true(sk_addr_equal(&x, &y));
	assert_false(sk_addr_equal(&x, &a6));
	struct sk_addr p = A("1.2.3.4"), q = A("::ffff:1.2.3.4");
	assert_false(sk_addr_equal(&p, &q));
}

static void test_embedded_v4_forms(void **state)
{
	(void)state;
	static const struct {
		const char *in, *v4;  /* v4 NULL: nothing embedded */
	} cases[] = {
		{ "10.1.2.3", "10.1.2.3" },
		{ "::ffff:10.1.2.3", "10.1.2.3" },
		{ "::ffff:a01:203", "10.1.2.3" },
		{ "::10.1.2.3", "10.1.2.3" },                 /* IPv4-compatible */
		{ "64:ff9b::a01:203", "10.1.2.3" },           /* NAT64 well-known */
		{ "64:ff9b:1::a01:203", "10.1.2.3" },         /* NAT64 local-use, /96 position */
		{ "2002:a01:203::1", "10.1.2.3" },            /* 6to4 */
		{ "2001:0:4136:e378:8000:63bf:f5fe:fdfc", "10.1.2.3" },  /* Teredo: ~f5fefdfc */
		{ "::", NULL },
		{ "::1", NULL },
		{ "2001:db8::1", NULL },
		{ "fe80::1", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_addr a = A(cases[i].in), v4;
		bool got = sk_addr_embedded_v4(&a, &v4);
		if (got != (cases[i].v4 != NULL))
			fail_msg("%s: embedded=%d", cases[i].in, got);
		if (!got)
			continue;
		char out[SK_ADDR_STRLEN];
		sk_addr_format(&v4, out);
		if (strcmp(out, cases[i].v4) != 0)
			fail_msg("%s: embedded %s, expected %s", cases[i].in, out, cases[i].v4);
		assert_int_equal(v4.family, AF_INET);
	}
}

static void test_classification_table(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool priv, link, loop;
	} cases[] = {
		/* IPv4 blockPrivate set */
		{ "0.1.2.3", true, false, false },
		{ "10.0.0.1", true, false, false },
		{ "100.64.0.1", true, false, false },
		{ "100.127.255.255", true, false, false },
		{ "100.128.0.0", false, false, false },
		{ "127.0.0.1", true, false, true },
		{ "127.255.0.9", true, false, true },
		{ "169.254.169.254", true, true, false },
		{ "172.16.0.1", true, false, false },
		{ "172.31.255.255", true, false, false },
		{ "172.32.0.1", false, false, false },
		{ "192.0.0.8", true, false, false },
		{ "192.168.1.1", true, false, false },
		{ "224.0.0.1", true, false, false },
		{ "239.255.255.250", true, false, false },
		{ "240.0.0.1", true, false, false },
		{ "255.255.255.255", true, false, false },
		/* public, including the test range 198.18/15 (kept public on purpose) */
		{ "198.18.0.1", false, false, false },
		{ "198.19.255.255", false, false, false },
		{ "8.8.8.8", false, false, false },
		{ "1.1.1.1", false, false, false },
		/* IPv6 */
		{ "::", true, false, false },
		{ "::1", true, false, true },
		{ "fc00::1", true, false, false },
		{ "fd12:3456::1", true, false, false },
		{ "fe80::1", true, true, false },
		{ "febf::1", true, true, false },
		{ "fec0::1", true, false, false },
		{ "ff02::1", true, false, false },
		{ "fd00:ec2::254", true, true, false },        /* AWS IPv6 metadata */
		{ "fd00:ec2::253", true, true, false },        /* AWS IPv6 DNS resolver */
		{ "fd00:ec2::123", true, true, false },        /* AWS IPv6 time sync */
		{ "fd00:ec2::23", true, true, false },         /* EKS Pod Identity Agent */
		{ "fd00:ec2::252", true, false, false },
		{ "fd00:ec2::1:254", true, false, false },
		{ "fd00:42::42", true, true, false },          /* Scaleway IPv6 metadata */
		{ "fd00:42::43", true, false, false },
		/* provider metadata outside 169.254/16: the link-local class, private too */
		{ "168.63.129.16", true, true, false },        /* Azure WireServer */
		{ "168.63.129.15", false, false, false },
		{ "168.63.129.17", false, false, false },
		{ "100.100.100.200", true, true, false },      /* Alibaba Cloud metadata */
		{ "100.100.100.201", true, false, false },
		{ "192.0.0.192", true, true, false },          /* Oracle Cloud Classic metadata */
		{ "192.0.0.193", true, false, false },
		{ "2001:db8::1", false, false, false },
		{ "2606:4700::1111", false, false, false },
		/* embedded forms of private addresses */
		{ "::ffff:127.0.0.1", true, false, true },
		{ "::ffff:10.0.0.1", true, false, false },
		{ "::ffff:169.254.169.254", true, true, false },
		{ "::ffff:8.8.8.8", false, false, false },
		{ "::127.0.0.1", true, false, true },
		{ "::10.0.0.1", true, false, false },
		{ "64:ff9b::7f00:1", true, false, true },
		{ "64:ff9b::a9fe:a9fe", true, true, false },
		{ "64:ff9b::808:808", false, false, false },
		{ "64:ff9b:1::c0a8:101", true, false, false },   /* /96 position */
		{ "64:ff9b:1:c0a8:1:100::", true, false, false }, /* /48 position: 192.168.1.1 */
		{ "2002:7f00:1::", true, false, true },
		{ "2002:a9fe:a9fe::1", true, true, false },
		{ "2002:808:808::1", false, false, false },
		{ "2001:0:4136:e378:8000:63bf:80ff:fffe", true, false, true },  /* Teredo client 127.0.0.1 */
		{ "2001:0:4136:e378:8000:63bf:f7f7:f7f7", false, false, false }, /* Teredo client 8.8.8.8 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_addr a = A(cases[i].in);
		bool p = sk_addr_is_private(&a), l = sk_addr_is_link_local(&a), lo = sk_addr_is_loopback(&a);
		if (p != cases[i].priv || l != cases[i].link || lo != cases[i].loop)
			fail_msg("%s: private=%d link_local=%d loopback=%d, expected %d %d %d", cases[i].in, p,
				 l, lo, cases[i].priv, cases[i].link, cases[i].loop);
	}
}

/* The IPv4 provider-metadata addresses outside 169.254/16, and every IPv6 spelling that classify()
 * maps back to them. */
static const uint8_t metadata_v4[][4] = {
	{ 168, 63, 129, 16 },    /* Azure WireServer */
	{ 100, 100, 100, 200 },  /* Alibaba Cloud metadata */
	{ 192, 0, 0, 192 },      /* Oracle Cloud Classic metadata */
};

enum { N_FORMS = 7 };

static void v6_forms(const uint8_t v4[4], struct sk_addr out[N_FORMS], unsigned embed_prefix[N_FORMS])
{
	memset(out, 0, sizeof(struct sk_addr) * N_FORMS);
	for (int i = 0; i < N_FORMS; i++)
		out[i].family = AF_INET6;
	uint8_t *b;
	b = out[0].bytes;  /* ::ffff:a.b.c.d */
	b[10] = b[11] = 0xff;
	memcpy(b + 12, v4, 4);
	embed_prefix[0] = 128;
	b = out[1].bytes;  /* ::a.b.c.d (IPv4-compatible) */
	memcpy(b + 12, v4, 4);
	embed_prefix[1] = 128;
	b = out[2].bytes;  /* 64:ff9b::a.b.c.d */
	b[1] = 0x64, b[2] = 0xff, b[3] = 0x9b;
	memcpy(b + 12, v4, 4);
	embed_prefix[2] = 128;
	b = out[3].bytes;  /* 64:ff9b:1::a.b.c.d (local-use, /96 position) */
	b[1] = 0x64, b[2] = 0xff, b[3] = 0x9b, b[5] = 1;
	memcpy(b + 12, v4, 4);
	embed_prefix[3] = 0;  /* no cidr naming through the local-use prefix */
	b = out[4].bytes;  /* 64:ff9b:1:ab:0cd:: (local-use, /48 position, RFC 6052 u octet skipped) */
	b[1] = 0x64, b[2] = 0xff, b[3] = 0x9b, b[5] = 1;
	b[6] = v4[0], b[7] = v4[1], b[9] = v4[2], b[10] = v4[3];
	embed_prefix[4] = 0;
	b = out[5].bytes;  /* 2002:abcd::1 (6to4) */
	b[0] = 0x20, b[1] = 0x02;
	memcpy(b + 2, v4, 4);
	b[15] = 1;
	embed_prefix[5] = 48;
	b = out[6].bytes;  /* Teredo: 2001:0:server:flags:port:~v4 */
	b[0] = 0x20, b[1] = 0x01, b[4] = 0x41, b[5] = 0x36, b[6] = 0xe3, b[7] = 0x78, b[8] = 0x80;
	for (int i = 0; i < 4; i++)
		b[12 + i] = (uint8_t)~v4[i];
	embed_prefix[6] = 0;
}

static void test_metadata_v4_in_every_embedded_form(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(metadata_v4) / sizeof(metadata_v4[0]); i++) {
		struct sk_addr v4 = { .family = AF_INET };
		memcpy(v4.bytes, metadata_v4[i], 4);
		char txt[SK_ADDR_STRLEN];
		sk_addr_format(&v4, txt);
		if (!sk_addr_is_link_local(&v4) || !sk_addr_is_private(&v4) || sk_addr_is_loopback(&v4))
			fail_msg("%s: not classified link-local + private", txt);
		struct sk_addr forms[N_FORMS];
		unsigned pfx[N_FORMS];
		v6_forms(metadata_v4[i], forms, pfx);
		for (int k = 0; k < N_FORMS; k++) {
			char f6[SK_ADDR_STRLEN];
			sk_addr_format(&forms[k], f6);
			if (!sk_addr_is_link_local(&forms[k]) || !sk_addr_is_private(&forms[k]))
				fail_msg("%s (form of %s): not classified link-local + private", f6, txt);
		}
		/* A neighbour is not metadata: the entries are single addresses, not their blocks. */
		v4.bytes[3] ^= 1;
		sk_addr_format(&v4, txt);
		if (sk_addr_is_link_local(&v4))
			fail_msg("%s: neighbour of a metadata address classified link-local", txt);
		v6_forms(v4.bytes, forms, pfx);
		for (int k = 0; k < N_FORMS; k++)
			if (sk_addr_is_link_local(&forms[k]))
				fail_msg("form %d of %s classified link-local", k, txt);
	}
}

static bool cidr_ll(const char *s)
{
	struct sk_cidr c;
	const char *why = NULL;
	if (sk_cidr_parse(s, &c, &why) != 0)
		fail_msg("test cidr %s: %s", s, why ? why : "?");
	return sk_cidr_is_link_local(&c);
}

static void test_cidr_naming_of_metadata_addresses(void **state)
{
	(void)state;
	/* A cidr rule names a metadata address only when its whole block is that address (or a
	 * link-local range): these do. */
	static const char *const names[] = {
		"168.63.129.16", "168.63.129.16/32", "100.100.100.200/32", "192.0.0.192",
		"fd00:ec2::254/128", "fd00:ec2::253", "fd00:ec2::123", "fd00:ec2::23", "fd00:42::42/128",
		"::ffff:168.63.129.16/128", "64:ff9b::6464:64c8/128", "2002:c000:c0::/48",
		"169.254.169.254/32", "169.254.0.0/16", "fe80::/10",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!cidr_ll(names[i]))
			fail_msg("%s should name the link-local class", names[i]);
	/* Blocks that contain a metadata address but are wider do not name it. */
	static const char *const wide[] = {
		"0.0.0.0/0", "::/0", "168.63.129.0/24", "168.63.0.0/16", "100.64.0.0/10", "100.100.100.0/24",
		"192.0.0.0/24", "192.0.0.192/31", "fd00::/8", "fc00::/7", "fd00:ec2::/32", "fd00:ec2::/120",
		"fd00:42::/32", "::ffff:0:0/96", "64:ff9b::/96", "2002::/16", "2002:a83f:8110::/47",
		"128.0.0.0/1",
	};
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
		if (cidr_ll(wide[i]))
			fail_msg("%s should not name the link-local class", wide[i]);
	/* ...and each embedded form at full length names its IPv4 address. */
	for (size_t i = 0; i < sizeof(metadata_v4) / sizeof(metadata_v4[0]); i++) {
		struct sk_addr forms[N_FORMS];
		unsigned pfx[N_FORMS];
		v6_forms(metadata_v4[i], forms, pfx);
		for (int k = 0; k < N_FORMS; k++) {
			if (!pfx[k])
				continue;
			struct sk_cidr c = { .net = forms[k], .prefix = (uint8_t)pfx[k] };
			memset(c.net.bytes + pfx[k] / 8, 0, 16 - pfx[k] / 8);  /* host bits zero */
			char t[SK_ADDR_STRLEN + 4];
			sk_cidr_format(&c, t);
			if (!sk_cidr_is_link_local(&c) || !sk_cidr_is_private(&c))
				fail_msg("%s should name a metadata address", t);
		}
	}
}

/* The host-bit check, bit by bit: for every prefix length of both families, each single bit of the
 * address is refused exactly when it lies beyond the prefix (and the refusal says so). */
static void test_cidr_host_bits_every_position(void **state)
{
	(void)state;
	for (int v6 = 0; v6 <= 1; v6++) {
		const unsigned max = v6 ? 128 : 32;
		for (unsigned prefix = 0; prefix <= max; prefix++) {
			for (unsigned bit = 0; bit < max; bit++) {
				struct sk_addr a = { .family = v6 ? AF_INET6 : AF_INET };
				a.bytes[bit / 8] = (uint8_t)(0x80 >> (bit % 8));
				char t[SK_ADDR_STRLEN], in[SK_ADDR_STRLEN + 8];
				sk_addr_format(&a, t);
				(void)snprintf(in, sizeof(in), "%s/%u", t, prefix);
				struct sk_cidr c;
				const char *why = NULL;
				const int r = sk_cidr_parse(in, &c, &why);
				if (bit < prefix) {
					if (r != 0)
						fail_msg("%s: refused (%s), expected accepted", in, why ? why : "?");
					assert_int_equal(c.prefix, prefix);
					assert_memory_equal(c.net.bytes, a.bytes, 16);
				} else if (r != -EINVAL || !why || strcmp(why, "host bits set beyond the prefix length")) {
					fail_msg("%s: %d (%s), expected host bits refused", in, r, why ? why : "no reason");
				}
			}
		}
	}
}

static struct sk_cidr C(const char *s)
{
	struct sk_cidr c;
	const char *why = NULL;
	if (sk_cidr_parse(s, &c, &why) != 0)
		fail_msg("test cidr %s: %s", s, why ? why : "?");
	return c;
}

/* Overlap: the block shares an address with the class (contains one of its addresses, or lies inside
 * one of its ranges), directly or through an embedded form. */
static void test_cidr_overlap_table(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool link, priv;
	} cases[] = {
		/* wide blocks that contain metadata addresses */
		{ "0.0.0.0/0", true, true },
		{ "128.0.0.0/1", true, true },
		{ "168.0.0.0/6", true, true },           /* 168.63.129.16 and 169.254/16 */
		{ "168.63.129.0/24", true, true },
		{ "100.64.0.0/10", true, true },         /* 100.100.100.200 */
		{ "100.100.100.0/24", true, true },
		{ "192.0.0.0/24", true, true },          /* 192.0.0.192 */
		{ "::/0", true, true },
		{ "2000::/3", true, true },              /* holds 2002::/16 */
		{ "::ffff:0:0/96", true, true },
		{ "::/96", true, true },                 /* IPv4-compatible */
		{ "64:ff9b::/96", true, true },
		{ "64:ff9b::/32", true, true },
		{ "64:ff9b:1::/48", true, true },
		{ "2002::/16", true, true },
		{ "2002:a9fe::/32", true, true },        /* 6to4 of 169.254/16, shorter than /48 */
		{ "2002:a800::/22", true, true },        /* 6to4 of 168/6 */
		{ "2001::/32", true, true },             /* Teredo */
		{ "2001::/16", true, true },
		{ "fc00::/7", true, true },
		{ "fd00::/8", true, true },
		{ "fd00:ec2::/32", true, true },
		{ "fd00:ec2::200/119", true, true },
		{ "fd00:42::/32", true, true },
		/* blocks inside a link-local range or equal to a metadata address also overlap */
		{ "169.254.169.254/32", true, true },
		{ "169.254.0.0/16", true, true },
		{ "168.63.129.16/32", true, true },
		{ "100.100.100.200/32", true, true },
		{ "fe80::/10", true, true },
		{ "fe80::1/128", true, true },
		{ "fd00:ec2::254/128", true, true },
		{ "::ffff:169.254.169.254/128", true, true },
		{ "::a9fe:0/112", true, true },
		{ "64:ff9b::a83f:8110/128", true, true },
		{ "64:ff9b:1::a9fe:a9fe/128", true, true },
		{ "64:ff9b:1:a9fe:a9:fe00::/128", true, true },  /* /48 position: 169.254.169.254 */
		{ "2002:a9fe:a9fe::/48", true, true },
		{ "2001:0:4136:e378:8000:63bf:5601:5601/128", true, true },  /* Teredo 169.254.169.254 */
		/* private, not link-local */
		{ "10.0.0.0/8", false, true },
		{ "10.96.0.0/12", false, true },
		{ "8.0.0.0/5", false, true },            /* 8..15: holds 10/8 */
		{ "172.0.0.0/8", false, true },          /* holds 172.16/12 */
		{ "100.100.100.201/32", false, true },
		{ "192.0.0.193/32", false, true },
		{ "127.0.0.0/8", false, true },
		{ "224.0.0.0/4", false, true },
		{ "fd00:ec2::255/128", false, true },
		{ "fd00:ec2::1:0/112", false, true },
		{ "fc00::/8", false, true },
		{ "ff00::/8", false, true },
		{ "::/127", false, true },               /* :: and ::1 */
		{ "::2/128", false, true },              /* IPv4-compatible 0.0.0.2 */
		{ "::ffff:10.0.0.0/104", false, true },
		{ "2002:800::/21", false, true },        /* 6to4 of 8/5 */
		{ "2002:a00::/24", false, true },        /* 6to4 of 10/8 */
		{ "2001:0:4136:e378:8000:63bf:80ff:fffe/128", false, true },  /* Teredo 127.0.0.1 */
		/* neither */
		{ "198.18.0.0/15", false, false },       /* benchmarking: public on purpose (e2e "internet") */
		{ "198.18.1.20/32", false, false },
		{ "8.8.8.8/32", false, false },
		{ "1.0.0.0/8", false, false },
		{ "168.63.129.15/32", false, false },
		{ "168.63.129.17/32", false, false },
		{ "168.63.128.0/24", false, false },
		{ "2001:db8::/32", false, false },
		{ "2001:db8:19::20/128", false, false },
		{ "2606:4700::/32", false, false },
		{ "::ffff:8.8.8.8/128", false, false },
		{ "::ffff:808:0/112", false, false },
		{ "64:ff9b::808:808/128", false, false },
		{ "64:ff9b:1:808:8:800::/128", false, true },  /* /48 position 8.8.8.8, /96 position 0.0.0.0 */
		{ "2002:808:808::/48", false, false },
		{ "2001:0:4136:e378:8000:63bf:f7f7:f7f7/128", false, false },  /* Teredo 8.8.8.8 */
		{ "fd00:ec2::2:0/112", false, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_cidr c = C(cases[i].in);
		bool l = sk_cidr_overlaps_link_local(&c), p = sk_cidr_overlaps_private(&c);
		if (l != cases[i].link || p != cases[i].priv)
			fail_msg("%s: overlaps link-local=%d private=%d, expected %d %d", cases[i].in, l, p,
				 cases[i].link, cases[i].priv);
		/* A block lying wholly inside a class overlaps it. */
		if ((sk_cidr_is_link_local(&c) && !l) || (sk_cidr_is_private(&c) && !p))
			fail_msg("%s: lies inside a class it does not overlap", cases[i].in);
		char list[256];
		if (sk_cidr_link_local_overlaps(&c, list, sizeof(list)) != 0 ? !l || !list[0] : l || list[0])
			fail_msg("%s: link-local list '%s' disagrees", cases[i].in, list);
		if (sk_cidr_private_overlaps(&c, list, sizeof(list)) != 0 ? !p || !list[0] : p || list[0])
			fail_msg("%s: private list '%s' disagrees", cases[i].in, list);
	}
}

static void test_cidr_overlap_lists(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool priv;
		size_t n;
		const char *list;
	} cases[] = {
		{ "0.0.0.0/0", false, 4, "169.254.0.0/16, 168.63.129.16, 100.100.100.200, 192.0.0.192" },
		{ "168.0.0.0/6", false, 2, "169.254.0.0/16, 168.63.129.16" },
		{ "100.64.0.0/10", false, 1, "100.100.100.200" },
		{ "::/0", false, 10, "fe80::/10, fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, ..." },
		{ "2002::/16", false, 4, "embedded 169.254.0.0/16, embedded 168.63.129.16, embedded 100.100.100.200, "
					 "embedded 192.0.0.192" },
		{ "fd00:ec2::/32", false, 4, "fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, fd00:ec2::23" },
		{ "10.96.0.0/12", false, 0, "" },
		{ "10.96.0.0/12", true, 1, "10.0.0.0/8" },
		{ "8.0.0.0/5", true, 1, "10.0.0.0/8" },
		{ "0.0.0.0/0", true, 13, "0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, ..." },
		{ "::ffff:0:0/96", true, 13, "embedded 0.0.0.0/8, embedded 10.0.0.0/8, embedded 100.64.0.0/10, "
					     "embedded 127.0.0.0/8, ..." },
		{ "::/0", true, 24, "::, ::1, fc00::/7, fe80::/10, ..." },  /* fe80::/10 and 169.254/16 once */
		{ "198.18.0.0/15", true, 0, "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_cidr c = C(cases[i].in);
		char list[256];
		size_t n = cases[i].priv ? sk_cidr_private_overlaps(&c, list, sizeof(list))
					 : sk_cidr_link_local_overlaps(&c, list, sizeof(list));
		if (n != cases[i].n || strcmp(list, cases[i].list) != 0)
			fail_msg("%s (%s): %zu '%s', expected %zu '%s'", cases[i].in, cases[i].priv ? "private" : "link-local",
				 n, list, cases[i].n, cases[i].list);
	}
	/* A short buffer truncates, never overflows. */
	struct sk_cidr c = C("::/0");
	char small[8];
	assert_int_equal(sk_cidr_private_overlaps(&c, small, sizeof(small)), 24);
	assert_string_equal(small, "::, ::1");
	assert_int_equal(sk_cidr_private_overlaps(&c, NULL, 0), 24);
}

/* The overlap of a small block agrees with classifying each of its addresses: blocks of 1..256 addresses
 * around every table entry in every embedded form, and random ones. */
static uint32_t rnd_state = 0x12345678u;
static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static size_t n_enum_ll, n_enum_priv;

static void check_block_by_enumeration(const struct sk_cidr *c)
{
	const unsigned max = c->net.family == AF_INET ? 32 : 128;
	const unsigned host = max - c->prefix;  /* <= 8 */
	bool any_ll = false, any_priv = false;
	for (unsigned k = 0; k < (1u << host); k++) {
		struct sk_addr a = c->net;
		a.bytes[max / 8 - 1] |= (uint8_t)k;
		any_ll = any_ll || sk_addr_is_link_local(&a);
		any_priv = any_priv || sk_addr_is_private(&a);
	}
	char t[SK_ADDR_STRLEN + 4];
	sk_cidr_format(c, t);
	if (sk_cidr_overlaps_link_local(c) != any_ll || sk_cidr_overlaps_private(c) != any_priv)
		fail_msg("%s: overlaps link-local=%d private=%d, its addresses say %d %d", t,
			 sk_cidr_overlaps_link_local(c), sk_cidr_overlaps_private(c), any_ll, any_priv);
	n_enum_ll += any_ll;
	n_enum_priv += any_priv;
}

static void test_cidr_overlap_agrees_with_addresses(void **state)
{
	(void)state;
	static const uint8_t points4[][4] = {
		{ 169, 254, 169, 254 }, { 169, 254, 0, 0 }, { 169, 255, 0, 0 }, { 168, 63, 129, 16 },
		{ 100, 100, 100, 200 }, { 192, 0, 0, 192 }, { 10, 1, 2, 3 }, { 127, 0, 0, 1 }, { 8, 8, 8, 8 },
		{ 198, 18, 1, 20 }, { 172, 16, 0, 1 }, { 0, 0, 0, 2 }, { 224, 0, 0, 1 }, { 100, 64, 0, 0 },
	};
	static const char *const points6[] = {
		"fd00:ec2::254", "fd00:ec2::23", "fd00:42::42", "fe80::1", "::1", "::", "fc00::1",
		"2001:db8::1", "ff02::1", "fec0::1", "2606:4700::1111",
	};
	size_t checked = 0;
	for (size_t i = 0; i < sizeof(points4) / sizeof(points4[0]); i++) {
		struct sk_addr forms[N_FORMS + 1];
		unsigned pfx[N_FORMS];
		v6_forms(points4[i], forms, pfx);
		forms[N_FORMS] = (struct sk_addr){ .family = AF_INET };
		memcpy(forms[N_FORMS].bytes, points4[i], 4);
		for (int k = 0; k <= N_FORMS; k++) {
			for (int round = 0; round < 24; round++) {
				struct sk_cidr c = { .net = forms[k] };
				const unsigned max = c.net.family == AF_INET ? 32 : 128;
				if (round > 0) {  /* flip one bit, sometimes */
					unsigned bit = rnd() % max;
					if (rnd() % 2)
						c.net.bytes[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
				}
				c.prefix = (uint8_t)(max - rnd() % 9);
				for (unsigned b = c.prefix; b < max; b++)
					c.net.bytes[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
				check_block_by_enumeration(&c);
				checked++;
			}
		}
	}
	for (size_t i = 0; i < sizeof(points6) / sizeof(points6[0]); i++) {
		for (int round = 0; round < 24; round++) {
			struct sk_cidr c = { .net = A(points6[i]) };
			if (round > 0 && rnd() % 2) {
				unsigned bit = rnd() % 128;
				c.net.bytes[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
			}
			c.prefix = (uint8_t)(128 - rnd() % 9);
			for (unsigned b = c.prefix; b < 128; b++)
				c.net.bytes[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
			check_block_by_enumeration(&c);
			checked++;
		}
	}
	for (int round = 0; round < 2000; round++) {
		struct sk_cidr c = { .net = { .family = (rnd() % 2) ? AF_INET : AF_INET6 } };
		const unsigned max = c.net.family == AF_INET ? 32 : 128;
		for (unsigned b = 0; b < max / 8; b++)
			c.net.bytes[b] = (uint8_t)rnd();
		c.prefix = (uint8_t)(max - rnd() % 9);
		for (unsigned b = c.prefix; b < max; b++)
			c.net.bytes[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
		check_block_by_enumeration(&c);
		checked++;
	}
	assert_true(checked > 3000);
	/* both answers come up often (the embedded forms of the table's points) */
	if (n_enum_ll < 200 || n_enum_priv < 400 || n_enum_priv > checked - 400)
		fail_msg("%zu blocks: %zu link-local, %zu private", checked, n_enum_ll, n_enum_priv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_parse_accepts_canonical_forms),
		cmocka_unit_test(test_addr_parse_rejects_ambiguous_spellings),
		cmocka_unit_test(test_cidr_parse_and_format),
		cmocka_unit_test(test_cidr_parse_rejections_have_reasons),
		cmocka_unit_test(test_cidr_host_bits_every_position),
		cmocka_unit_test(test_cidr_contains_and_equal),
		cmocka_unit_test(test_embedded_v4_forms),
		cmocka_unit_test(test_classification_table),
		cmocka_unit_test(test_metadata_v4_in_every_embedded_form),
		cmocka_unit_test(test_cidr_naming_of_metadata_addresses),
		cmocka_unit_test(test_cidr_overlap_table),
		cmocka_unit_test(test_cidr_overlap_lists),
		cmocka_unit_test(test_cidr_overlap_agrees_with_addresses),
	};
	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
