/* policy/match.c — see match.h. Three indexes built once per policy snapshot, all keyed so a lookup
 * touches a number of entries bounded by the query (labels in the name, bits in the address), never by
 * the number of rules:
 *   exact   hash: normalised host → ascending rule indexes
 *   wild    hash: wildcard suffix → ascending rule indexes; a query probes each of its proper suffixes
 *   t4, t6  binary prefix tries; a node at depth n holds the rules whose prefix ends there
 * Rule indexes are appended in file order, so every list is ascending and the first entry of a list that
 * passes the port/protocol filter is that list's best; the answer is the minimum over the lists probed.
 * The matcher borrows rule->host strings from the policy, which owns both and frees the matcher first. */
#include "policy/match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hash.h"
#include "policy/domain.h"

#define NO_RULE UINT32_MAX

struct idx_list {
	uint32_t *v;
	uint32_t n, cap;
};

struct name_slot {
	const char *key;    /* borrowed from the policy; NULL = empty slot */
	uint64_t hash;
	uint32_t list;      /* index into sk_matcher.lists */
};

struct name_table {
	struct name_slot *slots;
	size_t mask;        /* capacity - 1; capacity is a power of two, at least twice the entries */
};

struct trie_node {
	uint32_t child[2];  /* 0 = none (the root is node 0 and never anyone's child) */
	uint32_t list;      /* 0 = none, else index + 1 into sk_matcher.lists */
};

struct trie {
	struct trie_node *nodes;
	size_t n, cap;
};

/* Per-rule facts computed once, so the per-connection filter is a few loads. */
enum rule_flag {
	RULE_NAMES_PRIVATE = 1 << 0,     /* CIDR wholly inside the blockPrivate set */
	RULE_NAMES_LINK_LOCAL = 1 << 1,  /* CIDR wholly inside link-local / metadata */
};

struct sk_matcher {
	struct name_table exact, wild;
	struct trie t4, t6;
	struct idx_list *lists;
	size_t n_lists, cap_lists;
	uint8_t *flags;     /* one per rule */
};

/* --- building blocks ----------------------------------------------------------------------------- */

/* FNV-1a over the bytes in reverse order: the hash of every suffix of a name falls out of one
 * right-to-left pass, which is what the wildcard probe needs. */
static uint64_t hash_rev_step(uint64_t h, char c)
{
	return sk_fnv1a64_byte(h, (uint8_t)c);
}
#define HASH_INIT SK_FNV64_OFFSET

static uint64_t hash_name(const char *s, size_t len)
{
	uint64_t h = HASH_INIT;
	while (len > 0)
		h = hash_rev_step(h, s[--len]);
	return h;
}

static int list_push(struct idx_list *l, uint32_t v)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 2;
		uint32_t *nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return 0;
}

/* Returns the index of a new empty list in m->lists, or -ENOMEM. */
static long new_list(struct sk_matcher *m)
{
	if (m->n_lists == m->cap_lists) {
		size_t cap = m->cap_lists ? m->cap_lists * 2 : 16;
		struct idx_list *nl = realloc(m->lists, cap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		m->lists = nl;
		m->cap_lists = cap;
	}
	memset(&m->lists[m->n_lists], 0, sizeof(m->lists[0]));
	return (long)m->n_lists++;
}

static int table_init(struct name_table *t, size_t entries)
{
	size_t cap = 16;
	while (cap < entries * 2)
		cap *= 2;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->mask = cap - 1;
	return 0;
}

static const struct name_slot *table_find(const struct name_table *t, const char *key, size_t len,
					  uint64_t h)
{
	for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
		const struct name_slot *s = &t->slots[i];
		if (!s->key)
			return NULL;
		if (s->hash == h && strncmp(s->key, key, len) == 0 && s->key[len] == '\0')
			return s;
	}
}

static int table_add(struct sk_matcher *m, struct name_table *t, const char *key, uint32_t rule)
{
	size_t len = strlen(key);
	uint64_t h = hash_name(key, len);
	size_t i = (size_t)h & t->mask;
	for (; t->slots[i].key; i = (i + 1) & t->mask)
		if (t->slots[i].hash == h && strcmp(t->slots[i].key, key) == 0)
			return list_push(&m->lists[t->slots[i].list], rule);
	long l = new_list(m);
	if (l < 0)
		return (int)l;
	t->slots[i] = (struct name_slot){ .key = key, .hash = h, .list = (uint32_t)l };
	return list_push(&m->lists[l], rule);
}

static long trie_node_new(struct trie *t)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		if (cap > UINT32_MAX)
			return -ENOMEM;
		struct trie_node *nn = realloc(t->nodes, cap * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		t->cap = cap;
	}
	memset(&t->nodes[t->n], 0, sizeof(t->nodes[0]));
	return (long)t->n++;
}

static unsigned bit_at(const uint8_t *bytes, unsigned i)
{
	return (bytes[i / 8] >> (7 - i % 8)) & 1u;
}

static int trie_add(struct sk_matcher *m, struct trie *t, const struct sk_cidr *c, uint32_t rule)
{
	if (t->n == 0 && trie_node_new(t) < 0)
		return -ENOMEM;
	uint32_t cur = 0;
	for (unsigned d = 0; d < c->prefix; d++) {
		unsigned b = bit_at(c->net.bytes, d);
		if (!t->nodes[cur].child[b]) {
			long nn = trie_node_new(t);  /* may move t->nodes */
			if (nn < 0)
				return -ENOMEM;
			t->nodes[cur].child[b] = (uint32_t)nn;
		}
		cur = t->nodes[cur].child[b];
	}
	uint32_t li = t->nodes[cur].list;
	if (!li) {
		long l = new_list(m);
		if (l < 0)
			return (int)l;
		li = (uint32_t)l + 1;
		t->nodes[cur].list = li;
	}
	if (li > m->n_lists)  /* invariant: node lists index m->lists */
		return -EINVAL;
	return list_push(&m->lists[li - 1], rule);
}

/* --- build / free -------------------------------------------------------------------------------- */

void sk_matcher_free(struct sk_matcher *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_lists; i++)
		free(m->lists[i].v);
	free(m->lists);
	free(m->exact.slots);
	free(m->wild.slots);
	free(m->t4.nodes);
	free(m->t6.nodes);
	free(m->flags);
	free(m);
}

static bool rule_valid(const struct sk_rule *r)
{
	if (r->n_ports > 0 && !r->ports)
		return false;
	if (r->proto > SK_PROTO_UDP)
		return false;
	if (r->kind == SK_RULE_HOST)
		return r->host && r->host[0] && strlen(r->host) <= SK_DOMAIN_MAX;
	if (r->kind == SK_RULE_CIDR)
		return (r->cidr.net.family == AF_INET && r->cidr.prefix <= 32) ||
		       (r->cidr.net.family == AF_INET6 && r->cidr.prefix <= 128);
	return false;
}

/* Returns 0, -ENOMEM, or -EINVAL for a rule the loader should never have produced (the matcher
 * refuses rather than silently skipping: a skipped rule is a policy nobody wrote). */
int sk_matcher_build(struct sk_policy *p)
{
	if (!p || (p->n_rules > 0 && !p->rules) || p->n_rules >= NO_RULE)
		return -EINVAL;
	struct sk_matcher *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	int r = -ENOMEM;
	size_t n_exact = 0, n_wild = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *ru = &p->rules[i];
		if (!rule_valid(ru)) {
			r = -EINVAL;
			goto fail;
		}
		if (ru->kind == SK_RULE_HOST)
			*(ru->wildcard ? &n_wild : &n_exact) += 1;
	}
	m->flags = calloc(p->n_rules ? p->n_rules : 1, 1);
	if (!m->flags || table_init(&m->exact, n_exact) < 0 || table_init(&m->wild, n_wild) < 0)
		goto fail;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *ru = &p->rules[i];
		if (ru->kind == SK_RULE_HOST) {
			r = table_add(m, ru->wildcard ? &m->wild : &m->exact, ru->host, (uint32_t)i);
		} else {
			r = trie_add(m, ru->cidr.net.family == AF_INET ? &m->t4 : &m->t6, &ru->cidr, (uint32_t)i);
			if (sk_cidr_is_private(&ru->cidr))
				m->flags[i] |= RULE_NAMES_PRIVATE;
			if (sk_cidr_is_link_local(&ru->cidr))
				m->flags[i] |= RULE_NAMES_LINK_LOCAL;
		}
		if (r < 0)
			goto fail;
	}
	sk_matcher_free(p->matcher);
	p->matcher = m;
	return 0;
fail:
	sk_matcher_free(m);
	return r;
}

/* --- lookup -------------------------------------------------------------------------------------- */

/* A query's protocol is what the sidecar saw; SK_PROTO_ANY in a query means "not known", treated as
 * plain TCP so that an unset field can only match rules that allow any TCP. */
static bool proto_ok(enum sk_proto rule, enum sk_proto seen)
{
	if (seen == SK_PROTO_ANY)
		seen = SK_PROTO_TCP;
	switch (rule) {
	case SK_PROTO_ANY:
		return true;
	case SK_PROTO_TCP:
		return seen == SK_PROTO_TCP || seen == SK_PROTO_TLS || seen == SK_PROTO_HTTP;
	case SK_PROTO_TLS:
	case SK_PROTO_HTTP:
	case SK_PROTO_UDP:
		return seen == rule;
	}
	return false;
}

static bool port_ok(const struct sk_rule *r, uint16_t port)
{
	size_t lo = 0, hi = r->n_ports;
	if (hi == 0)
		return true;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->ports[mid] == port)
			return true;
		if (r->ports[mid] < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* What a candidate rule must satisfy. any_port: the DNS question ("on some port and protocol"). */
struct filter {
	const struct sk_policy *p;
	uint16_t port;
	enum sk_proto proto;
	bool any_port;
	uint8_t need;       /* rule_flag bits the rule must carry */
};

static bool passes(const struct filter *f, uint32_t i)
{
	const struct sk_rule *r = &f->p->rules[i];
	if ((f->p->matcher->flags[i] & f->need) != f->need)
		return false;
	return f->any_port || (port_ok(r, f->port) && proto_ok(r->proto, f->proto));
}

/* Lowers *best to the first entry of l that passes f. */
static void scan_list(const struct filter *f, const struct idx_list *l, uint32_t *best)
{
	for (uint32_t k = 0; k < l->n && l->v[k] < *best; k++) {
		if (passes(f, l->v[k])) {
			*best = l->v[k];
			return;
		}
	}
}

static void match_host(const struct filter *f, const char *name, uint32_t *best)
{
	const struct sk_matcher *m = f->p->matcher;
	size_t len = strlen(name);
	const struct name_slot *s = table_find(&m->exact, name, len, hash_name(name, len));
	if (s)
		scan_list(f, &m->lists[s->list], best);
	/* Right to left: at each '.', h is the hash of the suffix after it — a strict subdomain's parent,
	 * never the name itself, so "*.example.com" does not match "example.com". */
	uint64_t h = HASH_INIT;
	for (size_t i = len; i-- > 0;) {
		if (name[i] == '.') {
			const char *suf = name + i + 1;
			s = table_find(&m->wild, suf, len - i - 1, h);
			if (s)
				scan_list(f, &m->lists[s->list], best);
		}
		h = hash_rev_step(h, name[i]);
	}
}

static void match_trie(const struct filter *f, const struct trie *t, const uint8_t *bytes, unsigned bits,
		       uint32_t *best)
{
	if (t->n == 0)
		return;
	uint32_t cur = 0;
	for (unsigned d = 0;; d++) {
		const struct trie_node *nd = &t->nodes[cur];
		if (nd->list)
			scan_list(f, &f->p->matcher->lists[nd->list - 1], best);
		if (d == bits || !nd->child[bit_at(bytes, d)])
			return;
		cur = nd->child[bit_at(bytes, d)];
	}
}

/* The IPv4 address a destination reaches through a translator or tunnel, for matching IPv4 CIDR
 * rules: mapped, NAT64 (well-known and local-use at the /96 position), 6to4. The deprecated
 * IPv4-compatible form and Teredo are classified private by their embedded address (addr.c) but never
 * grant an allow through an IPv4 rule: their IPv4 part is not where the packet goes. */
static bool dst_v4_image(const struct sk_addr *a, struct sk_addr *v4)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	const uint8_t *b = a->bytes;
	if (a->family != AF_INET6)
		return false;
	if (memcmp(b, mapped, 12) != 0 && memcmp(b, nat64, 12) != 0 && memcmp(b, nat64_local, 6) != 0 &&
	    !(b[0] == 0x20 && b[1] == 0x02))
		return false;
	return sk_addr_embedded_v4(a, v4);
}

static void match_addr(const struct filter *f, const struct sk_addr *dst, uint32_t *best)
{
	const struct sk_matcher *m = f->p->matcher;
	if (dst->family == AF_INET) {
		match_trie(f, &m->t4, dst->bytes, 32, best);
		return;
	}
	if (dst->family != AF_INET6)
		return;
	match_trie(f, &m->t6, dst->bytes, 128, best);
	struct sk_addr v4;
	if (dst_v4_image(dst, &v4))
		match_trie(f, &m->t4, v4.bytes, 32, best);
}

/* Normalises defensively: the sidecar passes SNI/Host bytes it has already validated, but a name that
 * fails here must not reach the wildcard probe ("a b.example.com" would otherwise match
 * "*.example.com"). Returns false when there is no usable name. */
static bool usable_name(const char *in, char out[SK_DOMAIN_MAX + 1])
{
	bool wild;
	return in && sk_domain_normalize(in, strnlen(in, SK_DOMAIN_MAX + 2), 0, out, &wild, NULL) == 0;
}

void sk_match(const struct sk_policy *p, const struct sk_query *q, struct sk_decision *out)
{
	*out = (struct sk_decision){ .allow = false, .rule = -1, .reason = SK_REASON_NO_MATCH };
	if (!p || !p->matcher || !q)
		return;  /* fail closed: no matcher, no allow (and no audit override either) */

	struct filter f = { .p = p, .port = q->port, .proto = q->proto };
	uint32_t best = NO_RULE;
	enum sk_reason deny = SK_REASON_NO_MATCH;

	/* A private or link-local destination is reachable only through a CIDR rule that names it, i.e. lies
	 * wholly inside the special ranges; a host rule cannot vouch for where its name resolves to. */
	if (q->dst && sk_addr_is_link_local(q->dst)) {
		f.need = RULE_NAMES_LINK_LOCAL;
		deny = SK_REASON_LINK_LOCAL;
	} else if (q->dst && p->block_private && sk_addr_is_private(q->dst)) {
		f.need = RULE_NAMES_PRIVATE;
		deny = SK_REASON_PRIVATE;
	}
	if (f.need) {
		match_addr(&f, q->dst, &best);
		if (best != NO_RULE) {
			*out = (struct sk_decision){ .allow = true, .rule = (int)best, .reason = SK_REASON_RULE };
			return;
		}
		if (p->mode != SK_MODE_AUDIT) {
			out->reason = deny;
			return;
		}
		f.need = 0;  /* audit: report the rule that would have allowed it without the range check */
	}

	char name[SK_DOMAIN_MAX + 1];
	if (usable_name(q->host, name))
		match_host(&f, name, &best);
	if (q->dst)
		match_addr(&f, q->dst, &best);

	if (deny == SK_REASON_NO_MATCH && best != NO_RULE) {
		*out = (struct sk_decision){ .allow = true, .rule = (int)best, .reason = SK_REASON_RULE };
		return;
	}
	out->rule = best == NO_RULE ? -1 : (int)best;
	out->reason = deny;
	if (p->mode == SK_MODE_AUDIT) {
		out->allow = true;
		out->reason = SK_REASON_AUDIT;
	} else {
		out->rule = -1;
	}
}

int sk_match_name(const struct sk_policy *p, const char *name)
{
	char norm[SK_DOMAIN_MAX + 1];
	if (!p || !p->matcher || !usable_name(name, norm))
		return -1;
	struct filter f = { .p = p, .any_port = true };
	uint32_t best = NO_RULE;
	match_host(&f, norm, &best);
	return best == NO_RULE ? -1 : (int)best;
}

int sk_match_name_normalized(const struct sk_policy *p, const char *norm)
{
	if (!p || !p->matcher || !norm || !norm[0] || strnlen(norm, SK_DOMAIN_MAX + 1) > SK_DOMAIN_MAX)
		return -1;
	struct filter f = { .p = p, .any_port = true };
	uint32_t best = NO_RULE;
	match_host(&f, norm, &best);
	return best == NO_RULE ? -1 : (int)best;
}

int sk_match_addr(const struct sk_policy *p, const struct sk_addr *dst)
{
	if (!p || !p->matcher || !dst)
		return -1;
	struct filter f = { .p = p, .any_port = true };
	if (sk_addr_is_link_local(dst))
		f.need = RULE_NAMES_LINK_LOCAL;
	else if (p->block_private && sk_addr_is_private(dst))
		f.need = RULE_NAMES_PRIVATE;
	uint32_t best = NO_RULE;
	match_addr(&f, dst, &best);
	return best == NO_RULE ? -1 : (int)best;
}

const char *sk_reason_name(enum sk_reason r)
{
	switch (r) {
	case SK_REASON_RULE:
		return "rule";
	case SK_REASON_NO_MATCH:
		return "no_match";
	case SK_REASON_PRIVATE:
		return "private";
	case SK_REASON_LINK_LOCAL:
		return "link_local";
	case SK_REASON_AUDIT:
		return "audit";
	}
	return "unknown";
}
