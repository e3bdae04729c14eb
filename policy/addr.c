/* policy/addr.c — see addr.h. Parsing is stricter than inet_pton on purpose: every spelling that some
 * other parser reads differently (octal "010", shorthand "10.1", brackets, zone ids) is refused, so an
 * address in a policy or a query means the same thing to us, to the kernel and to the agent's libc. */
#include "policy/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Strict dotted quad: four decimal octets of 1..3 digits, no leading zeros, each <= 255. */
static int parse_v4(const char *s, size_t len, uint8_t out[4])
{
	size_t i = 0;
	for (int part = 0; part < 4; part++) {
		if (part > 0) {
			if (i >= len || s[i] != '.')
				return -EINVAL;
			i++;
		}
		size_t start = i;
		unsigned v = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 3)
			v = v * 10 + (unsigned)(s[i++] - '0');
		size_t nd = i - start;
		if (nd == 0 || v > 255 || (nd > 1 && s[start] == '0'))
			return -EINVAL;
		out[part] = (uint8_t)v;
	}
	return i == len ? 0 : -EINVAL;
}

static int parse_v6(const char *s, size_t len, uint8_t out[16])
{
	char buf[SK_ADDR_STRLEN];
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	size_t last_colon = 0;
	bool dotted = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == ':')
			last_colon = i;
		else if (c == '.')
			dotted = true;
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return -EINVAL;  /* brackets, '%zone', whitespace, '/' ... */
	}
	/* An embedded dotted tail ("::ffff:10.0.0.1") gets the same octal/shorthand rules as IPv4. */
	uint8_t tail[4];
	if (dotted && parse_v4(s + last_colon + 1, len - last_colon - 1, tail) < 0)
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -EINVAL;
}

static int parse_len(const char *s, size_t len, struct sk_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (memchr(s, ':', len)) {
		out->family = AF_INET6;
		return parse_v6(s, len, out->bytes);
	}
	out->family = AF_INET;
	return parse_v4(s, len, out->bytes);
}

int sk_addr_parse(const char *s, struct sk_addr *out)
{
	if (!s || !out)
		return -EINVAL;
	return parse_len(s, strlen(s), out);
}

static size_t addr_bits(const struct sk_addr *a)
{
	return a->family == AF_INET ? 32 : 128;
}

/* True when the first `prefix` bits of x and y agree. */
static bool prefix_eq(const uint8_t *x, const uint8_t *y, unsigned prefix)
{
	unsigned full = prefix / 8, rem = prefix % 8;
	if (memcmp(x, y, full) != 0)
		return false;
	if (rem == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rem));
	return ((x[full] ^ y[full]) & mask) == 0;
}

/* A refusal: *why (when asked for) says what is wrong with the text. */
static int refuse(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

int sk_cidr_parse(const char *s, struct sk_cidr *out, const char **why)
{
	if (!s || !out)
		return refuse(why, "missing address");
	const size_t len = strlen(s);
	const char *slash = memchr(s, '/', len);
	size_t alen = slash ? (size_t)(slash - s) : len;
	memset(out, 0, sizeof(*out));
	if (parse_len(s, alen, &out->net) < 0)
		return refuse(why, "invalid IP address (strict dotted quad or RFC 4291 text, no brackets, zone or "
				   "leading zeros)");
	unsigned max = (unsigned)addr_bits(&out->net);
	unsigned prefix = max;
	if (slash) {
		const char *p = slash + 1;
		const size_t n = len - alen - 1;
		bool digits = n >= 1 && n <= 3 && !(n > 1 && p[0] == '0');
		prefix = 0;
		for (size_t i = 0; i < n && digits; i++) {
			digits = p[i] >= '0' && p[i] <= '9';
			prefix = prefix * 10 + (unsigned)(p[i] - '0');
		}
		if (!digits)
			return refuse(why, "invalid prefix length (decimal, no leading zeros)");
		if (prefix > max)
			return refuse(why, out->net.family == AF_INET ? "prefix length over 32"
								      : "prefix length over 128");
	}
	out->prefix = (uint8_t)prefix;
	/* Host bits set usually means a typo ("10.0.0.1/8"); silently masking would widen or move the rule. */
	for (unsigned i = prefix / 8; i < max / 8; i++) {
		const uint8_t host = i == prefix / 8 ? (uint8_t)(0xff >> (prefix % 8)) : 0xff;
		if (out->net.bytes[i] & host)
			return refuse(why, "host bits set beyond the prefix length");
	}
	return 0;
}

void sk_addr_format(const struct sk_addr *a, char out[SK_ADDR_STRLEN])
{
	if (!a || (a->family != AF_INET && a->family != AF_INET6) ||
	    !inet_ntop(a->family, a->bytes, out, SK_ADDR_STRLEN))
		(void)snprintf(out, SK_ADDR_STRLEN, "?");
}

void sk_cidr_format(const struct sk_cidr *c, char out[SK_ADDR_STRLEN + 4])
{
	char a[SK_ADDR_STRLEN];
	sk_addr_format(&c->net, a);
	(void)snprintf(out, SK_ADDR_STRLEN + 4, "%s/%u", a, (unsigned)c->prefix);
}

bool sk_addr_equal(const struct sk_addr *a, const struct sk_addr *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, addr_bits(a) / 8) == 0;
}

bool sk_cidr_contains(const struct sk_cidr *c, const struct sk_addr *a)
{
	if (c->net.family != a->family || c->prefix > addr_bits(a))
		return false;
	return prefix_eq(c->net.bytes, a->bytes, c->prefix);
}

/* --- embedded IPv4 ------------------------------------------------------------------------------- */

static const uint8_t zero12[12];

static bool v6_prefix(const struct sk_addr *a, const uint8_t *p, unsigned bits)
{
	return a->family == AF_INET6 && prefix_eq(a->bytes, p, bits);
}

static void make_v4(struct sk_addr *v4, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3)
{
	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	v4->bytes[0] = b0;
	v4->bytes[1] = b1;
	v4->bytes[2] = b2;
	v4->bytes[3] = b3;
}

/* Every IPv4 address an IPv6 address may stand for; at most two (the local-use NAT64 prefix
 * 64:ff9b:1::/48 may carry the address at the /96 or the /48 position of RFC 6052, and a deployment's
 * choice is not visible in the address, so classification checks both). Returns the count. */
static int embedded_all(const struct sk_addr *a, struct sk_addr v4[2])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	static const uint8_t six_to_four[2] = { 0x20, 0x02 };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0, 0 };
	const uint8_t *b = a->bytes;

	if (a->family == AF_INET) {
		v4[0] = *a;
		return 1;
	}
	if (a->family != AF_INET6)
		return 0;
	if (v6_prefix(a, mapped, 96)) {
		make_v4(&v4[0], b[12], b[13], b[14], b[15]);
		return 1;
	}
	if (v6_prefix(a, zero12, 96)) {
		/* IPv4-compatible (deprecated); "::" and "::1" are IPv6's own unspecified and loopback. */
		if (b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1)
			return 0;
		make_v4(&v4[0], b[12], b[13], b[14], b[15]);
		return 1;
	}
	if (v6_prefix(a, nat64, 96)) {
		make_v4(&v4[0], b[12], b[13], b[14], b[15]);
		return 1;
	}
	if (v6_prefix(a, nat64_local, 48)) {
		make_v4(&v4[0], b[12], b[13], b[14], b[15]);
		make_v4(&v4[1], b[6], b[7], b[9], b[10]);
		return 2;
	}
	if (v6_prefix(a, six_to_four, 16)) {
		make_v4(&v4[0], b[2], b[3], b[4], b[5]);
		return 1;
	}
	if (v6_prefix(a, teredo, 32)) {
		/* RFC 4380: the client's public address is stored inverted in the last 32 bits. */
		make_v4(&v4[0], (uint8_t)~b[12], (uint8_t)~b[13], (uint8_t)~b[14], (uint8_t)~b[15]);
		return 1;
	}
	return 0;
}

bool sk_addr_embedded_v4(const struct sk_addr *a, struct sk_addr *v4)
{
	struct sk_addr all[2];
	if (embedded_all(a, all) == 0)
		return false;
	if (v4)
		*v4 = all[0];
	return true;
}

/* --- classification ------------------------------------------------------------------------------ */

struct range {
	uint8_t bytes[16];
	uint8_t prefix;
};

static bool in_table(const struct sk_addr *a, const struct range *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (prefix_eq(a->bytes, t[i].bytes, t[i].prefix))
			return true;
	return false;
}

/* Applies a per-family table check to a and to every IPv4 address embedded in it. */
static bool classify(const struct sk_addr *a, const struct range *t4, size_t n4, const struct range *t6,
		     size_t n6)
{
	if (a->family == AF_INET)
		return in_table(a, t4, n4);
	if (a->family != AF_INET6)
		return false;
	if (in_table(a, t6, n6))
		return true;
	struct sk_addr v4[2];
	int n = embedded_all(a, v4);
	for (int i = 0; i < n; i++)
		if (in_table(&v4[i], t4, n4))
			return true;
	return false;
}

/* The "link-local" class of docs/architecture.md#transparent-proxy: link-local ranges plus provider metadata and host-service
 * addresses that live outside them. Every entry is denied even with blockPrivate: false unless a cidr
 * rule lying wholly inside one entry names it; 0.0.0.0/0, ::/0, 100.64.0.0/10 or fd00::/8 match these
 * addresses but never name them. Sources for each address: docs/policy.md, "Link-local and metadata
 * addresses". Provider endpoints already inside 169.254/16 or fe80::/10 (169.254.169.254 of AWS, Azure
 * IMDS, GCP, OCI, OpenStack...; 169.254.169.253 and .123; 169.254.170.2 and .23; 169.254.42.42;
 * fe80::a9fe:a9fe) need no entry of their own. */
static const struct range link_local4[] = {
	{ { 169, 254 }, 16 },
	{ { 168, 63, 129, 16 }, 32 },    /* Azure WireServer / host virtual IP (agent, DNS, DHCP, health) */
	{ { 100, 100, 100, 200 }, 32 },  /* Alibaba Cloud ECS metadata (inside 100.64/10) */
	{ { 192, 0, 0, 192 }, 32 },      /* Oracle Cloud Infrastructure Classic metadata (inside 192.0.0/24) */
};
/* The AWS Nitro ULAs and Scaleway's are in fc00::/7 (private), but they are host services in the same
 * sense as their IPv4 twins in 169.254/16, so they get the link-local treatment too. */
static const struct range link_local6[] = {
	{ { 0xfe, 0x80 }, 10 },
	{ { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 }, 128 },  /* AWS IMDS */
	{ { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x53 }, 128 },  /* AWS DNS */
	{ { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x23 }, 128 },  /* AWS NTP */
	{ { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x23 }, 128 },  /* EKS Pod Identity */
	{ { 0xfd, 0x00, 0, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x42 }, 128 },     /* Scaleway metadata */
};

/* 198.18.0.0/15 (RFC 2544 benchmarking) is deliberately NOT here: it is not routable on the internet
 * either, but the e2e suites use it as "the public internet" inside their network namespaces, and a
 * policy has no reason to fear it. Likewise the documentation ranges (192.0.2/24, 2001:db8::/32). */
static const struct range private4[] = {
	{ { 0 }, 8 },                /* "this network" */
	{ { 10 }, 8 },
	{ { 100, 64 }, 10 },         /* CGNAT, also used by some clusters for pods */
	{ { 127 }, 8 },
	{ { 169, 254 }, 16 },
	{ { 172, 16 }, 12 },
	{ { 192, 0, 0 }, 24 },       /* IETF protocol assignments */
	{ { 192, 168 }, 16 },
	{ { 224 }, 4 },              /* multicast */
	{ { 240 }, 4 },              /* reserved, includes 255.255.255.255 */
};
static const struct range private6[] = {
	{ { 0 }, 128 },              /* :: */
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128 },  /* ::1 */
	{ { 0xfc }, 7 },             /* unique local */
	{ { 0xfe, 0x80 }, 10 },      /* link-local */
	{ { 0xfe, 0xc0 }, 10 },      /* deprecated site-local: still routed inside some sites */
	{ { 0xff }, 8 },             /* multicast */
};
static const struct range loopback4[] = {
	{ { 127 }, 8 },
};
static const struct range loopback6[] = {
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128 },
};

bool sk_addr_is_link_local(const struct sk_addr *a)
{
	return classify(a, link_local4, sizeof(link_local4) / sizeof(link_local4[0]), link_local6,
			sizeof(link_local6) / sizeof(link_local6[0]));
}

bool sk_addr_is_private(const struct sk_addr *a)
{
	return classify(a, private4, sizeof(private4) / sizeof(private4[0]), private6,
			sizeof(private6) / sizeof(private6[0])) ||
	       sk_addr_is_link_local(a);
}

bool sk_addr_is_loopback(const struct sk_addr *a)
{
	return classify(a, loopback4, sizeof(loopback4) / sizeof(loopback4[0]), loopback6,
			sizeof(loopback6) / sizeof(loopback6[0]));
}

/* --- whole-block classification ------------------------------------------------------------------ */

static bool table_covers(const uint8_t *bytes, unsigned prefix, const struct range *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (prefix >= t[i].prefix && prefix_eq(bytes, t[i].bytes, t[i].prefix))
			return true;
	return false;
}

/* The IPv4 block an IPv6 block stands for, when the whole block sits inside one embedding. */
static bool cidr_embedded_v4(const struct sk_cidr *c, uint8_t v4[4], unsigned *prefix)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t six_to_four[2] = { 0x20, 0x02 };
	const uint8_t *b = c->net.bytes;

	if (c->prefix >= 96 && (prefix_eq(b, mapped, 96) || prefix_eq(b, zero12, 96) || prefix_eq(b, nat64, 96))) {
		memcpy(v4, b + 12, 4);
		*prefix = c->prefix - 96u;
		return true;
	}
	if (c->prefix >= 48 && prefix_eq(b, six_to_four, 16)) {
		memcpy(v4, b + 2, 4);
		*prefix = c->prefix - 16u;
		return true;
	}
	return false;
}

static bool cidr_within(const struct sk_cidr *c, const struct range *t4, size_t n4, const struct range *t6,
			size_t n6)
{
	if (c->net.family == AF_INET)
		return c->prefix <= 32 && table_covers(c->net.bytes, c->prefix, t4, n4);
	if (c->net.family != AF_INET6 || c->prefix > 128)
		return false;
	if (table_covers(c->net.bytes, c->prefix, t6, n6))
		return true;
	uint8_t v4[4];
	unsigned p4;
	return cidr_embedded_v4(c, v4, &p4) && table_covers(v4, p4, t4, n4);
}

bool sk_cidr_is_link_local(const struct sk_cidr *c)
{
	return cidr_within(c, link_local4, sizeof(link_local4) / sizeof(link_local4[0]), link_local6,
			   sizeof(link_local6) / sizeof(link_local6[0]));
}

bool sk_cidr_is_private(const struct sk_cidr *c)
{
	return cidr_within(c, private4, sizeof(private4) / sizeof(private4[0]), private6,
			   sizeof(private6) / sizeof(private6[0])) ||
	       sk_cidr_is_link_local(c);
}

/* --- overlap ------------------------------------------------------------------------------------- */

/* Where an IPv6 address carries an IPv4 one (the forms embedded_all reads): the IPv6 prefix, and the bit
 * positions of the IPv4 address's high and low 16 bits (apart only for the /48 position of the local-use
 * NAT64 prefix, which skips the RFC 6052 u octet), inverted for Teredo. IPv4-compatible excludes :: and
 * ::1; ignoring that here changes no answer, since both are in private6 themselves and no link-local
 * entry holds 0.0.0.0 or 0.0.0.1. */
struct embedding {
	uint8_t prefix[16];
	uint8_t plen;
	uint8_t hi, lo;  /* bit offsets of IPv4 bits 0..15 and 16..31 */
	bool invert;
};

static const struct embedding embeddings[] = {
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }, 96, 96, 112, false },  /* IPv4-mapped */
	{ { 0 }, 96, 96, 112, false },                                        /* IPv4-compatible */
	{ { 0, 0x64, 0xff, 0x9b }, 96, 96, 112, false },                      /* NAT64 well-known */
	{ { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, 96, 112, false },                /* NAT64 local-use, /96 position */
	{ { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, 48, 72, false },                 /* NAT64 local-use, /48 position */
	{ { 0x20, 0x02 }, 16, 16, 32, false },                                /* 6to4 */
	{ { 0x20, 0x01 }, 32, 96, 112, true },                                /* Teredo client */
};

/* A set of addresses given by the bits it fixes: value under mask (16 bytes; IPv4 uses the first 4). */
struct bitset {
	uint8_t v[16], m[16];
};

static void bits_prefix(struct bitset *s, const uint8_t *bytes, unsigned prefix)
{
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < 16 && prefix > i * 8; i++) {
		unsigned bits = prefix - i * 8;
		s->m[i] = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		s->v[i] = bytes[i] & s->m[i];
	}
}

static void bits_set(struct bitset *s, unsigned pos, bool bit)
{
	uint8_t b = (uint8_t)(0x80 >> (pos % 8));
	s->m[pos / 8] |= b;
	if (bit)
		s->v[pos / 8] |= b;
	else
		s->v[pos / 8] &= (uint8_t)~b;
}

/* Two sets share an address when no bit both fix differs. */
static bool bits_meet(const struct bitset *x, const struct bitset *y)
{
	for (size_t i = 0; i < 16; i++)
		if ((x->v[i] ^ y->v[i]) & x->m[i] & y->m[i])
			return false;
	return true;
}

/* The IPv6 image of the IPv4 range r under embedding e. */
static void embed_range(const struct embedding *e, const struct range *r, struct bitset *out)
{
	bits_prefix(out, e->prefix, e->plen);
	for (unsigned i = 0; i < r->prefix && i < 32; i++) {
		bool bit = ((r->bytes[i / 8] >> (7 - i % 8)) & 1) != 0;
		bits_set(out, (i < 16 ? e->hi + i : e->lo + (i - 16)), bit != e->invert);
	}
}

/* Whether block c shares an address with v4 range r (directly, or through an embedding if c is IPv6). */
static bool meets4(const struct sk_cidr *c, const struct bitset *cb, const struct range *r)
{
	struct bitset rb;
	if (c->net.family == AF_INET) {
		bits_prefix(&rb, r->bytes, r->prefix);
		return bits_meet(cb, &rb);
	}
	for (size_t k = 0; k < sizeof(embeddings) / sizeof(embeddings[0]); k++) {
		embed_range(&embeddings[k], r, &rb);
		if (bits_meet(cb, &rb))
			return true;
	}
	return false;
}

struct overlap_list {
	char *out;
	size_t outsz, len;
	size_t count, shown;
	struct range seen4[32], seen6[32];
	size_t n4, n6;
};

enum { OVERLAP_SHOWN_MAX = 4 };

static bool seen(const struct range *v, size_t n, const struct range *r)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].prefix == r->prefix && memcmp(v[i].bytes, r->bytes, sizeof(r->bytes)) == 0)
			return true;
	return false;
}

static void list_add(struct overlap_list *l, const struct range *r, bool v6, bool embedded)
{
	struct range *v = v6 ? l->seen6 : l->seen4;
	size_t *n = v6 ? &l->n6 : &l->n4;
	if (seen(v, *n, r))
		return;
	if (*n < sizeof(l->seen4) / sizeof(l->seen4[0]))
		v[(*n)++] = *r;
	l->count++;
	if (!l->out || l->outsz == 0)
		return;
	const char *sep = l->shown ? ", " : "";
	if (l->shown == OVERLAP_SHOWN_MAX) {
		(void)snprintf(l->out + l->len, l->outsz - l->len, ", ...");
		l->len += strnlen(l->out + l->len, l->outsz - l->len);
		l->shown++;
		return;
	}
	if (l->shown > OVERLAP_SHOWN_MAX)
		return;
	struct sk_addr a = { .family = v6 ? AF_INET6 : AF_INET };
	memcpy(a.bytes, r->bytes, v6 ? 16 : 4);
	char t[SK_ADDR_STRLEN];
	sk_addr_format(&a, t);
	if (r->prefix == (v6 ? 128 : 32))
		(void)snprintf(l->out + l->len, l->outsz - l->len, "%s%s%s", sep, embedded ? "embedded " : "", t);
	else
		(void)snprintf(l->out + l->len, l->outsz - l->len, "%s%s%s/%u", sep, embedded ? "embedded " : "", t,
			 (unsigned)r->prefix);
	l->len += strnlen(l->out + l->len, l->outsz - l->len);
	l->shown++;
}

/* Adds to l every entry of the tables that c shares an address with: IPv6 entries first, then IPv4 ones
 * (for an IPv6 block, through any embedding). */
static void overlap_tables(const struct sk_cidr *c, const struct range *t4, size_t n4, const struct range *t6,
			   size_t n6, struct overlap_list *l)
{
	struct bitset cb, rb;
	if ((c->net.family != AF_INET && c->net.family != AF_INET6) || c->prefix > addr_bits(&c->net))
		return;
	if (c->net.family == AF_INET) {
		/* Two IPv4 prefixes share an address when they agree on the shorter one's bits: bits_meet's
		 * answer in one word (a long policy asks this once per direct or udp rule). */
		const uint32_t cv = (uint32_t)c->net.bytes[0] << 24 | (uint32_t)c->net.bytes[1] << 16 |
				    (uint32_t)c->net.bytes[2] << 8 | c->net.bytes[3];
		for (size_t i = 0; i < n4; i++) {
			const uint8_t *b = t4[i].bytes;
			const uint32_t tv = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
			const unsigned p = c->prefix < t4[i].prefix ? c->prefix : t4[i].prefix;
			const uint32_t mask = p ? ~(uint32_t)0 << (32 - p) : 0;
			if (((cv ^ tv) & mask) == 0)
				list_add(l, &t4[i], false, false);
		}
		return;
	}
	bits_prefix(&cb, c->net.bytes, c->prefix);
	if (c->net.family == AF_INET6) {
		for (size_t i = 0; i < n6; i++) {
			bits_prefix(&rb, t6[i].bytes, t6[i].prefix);
			if (bits_meet(&cb, &rb))
				list_add(l, &t6[i], true, false);
		}
	}
	for (size_t i = 0; i < n4; i++)
		if (meets4(c, &cb, &t4[i]))
			list_add(l, &t4[i], false, c->net.family == AF_INET6);
}

static size_t overlaps(const struct sk_cidr *c, bool priv, char *out, size_t outsz)
{
	/* Only the counters are set: the seen lists (a kilobyte) are read no further than they are
	 * filled, and zeroing them was most of the cost of asking once per direct or udp rule. */
	struct overlap_list l;
	l.out = out;
	l.outsz = outsz;
	l.len = l.count = l.shown = l.n4 = l.n6 = 0;
	if (out && outsz)
		out[0] = '\0';
	if (!c)
		return 0;
	if (priv) {
		overlap_tables(c, NULL, 0, private6, sizeof(private6) / sizeof(private6[0]), &l);
		overlap_tables(c, NULL, 0, link_local6, sizeof(link_local6) / sizeof(link_local6[0]), &l);
		overlap_tables(c, private4, sizeof(private4) / sizeof(private4[0]), NULL, 0, &l);
		overlap_tables(c, link_local4, sizeof(link_local4) / sizeof(link_local4[0]), NULL, 0, &l);
	} else {
		overlap_tables(c, link_local4, sizeof(link_local4) / sizeof(link_local4[0]), link_local6,
			       sizeof(link_local6) / sizeof(link_local6[0]), &l);
	}
	return l.count;
}

size_t sk_cidr_link_local_overlaps(const struct sk_cidr *c, char *out, size_t outsz)
{
	return overlaps(c, false, out, outsz);
}

size_t sk_cidr_private_overlaps(const struct sk_cidr *c, char *out, size_t outsz)
{
	return overlaps(c, true, out, outsz);
}

bool sk_cidr_overlaps_link_local(const struct sk_cidr *c)
{
	return overlaps(c, false, NULL, 0) > 0;
}

bool sk_cidr_overlaps_private(const struct sk_cidr *c)
{
	return overlaps(c, true, NULL, 0) > 0;
}
