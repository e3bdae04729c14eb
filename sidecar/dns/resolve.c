/* sidecar/dns/resolve.c — see dns_resolve.h. */
#include "sidecar/dns/resolve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hash.h"

void sk_resolve_fold(const struct sk_addr *in, struct sk_addr *out)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (in->family == AF_INET6 && memcmp(in->bytes, mapped, sizeof(mapped)) == 0) {
		memset(out, 0, sizeof(*out));
		out->family = AF_INET;
		memcpy(out->bytes, in->bytes + 12, 4);
		return;
	}
	*out = *in;
	if (out->family == AF_INET)
		memset(out->bytes + 4, 0, sizeof(out->bytes) - 4);
}

/* ---- negative cache ----
 * A ring of cap slots in insertion order (= expiry order: one TTL for all) plus a chained hash index;
 * inserting into a full ring overwrites the oldest slot after unlinking it from its chain. */

#define NIL UINT32_MAX

struct neg_ent {
	char name[SK_DOMAIN_MAX + 1];
	struct sk_addr addr;
	uint64_t expires_ms;
	uint64_t hash;
	uint32_t next;       /* chain within a bucket */
	bool used;
};

struct sk_rneg {
	struct neg_ent *ents;
	uint32_t *buckets;
	size_t cap, n_buckets, head, count;   /* head: the slot the next insert takes (the oldest when full) */
	uint64_t ttl_ms;
	struct sk_hash_key key;
};

int sk_rneg_new(size_t cap, uint64_t ttl_ms, struct sk_rneg **out, struct sk_err *err)
{
	*out = NULL;
	if (cap == 0 || cap >= NIL / 2)
		return sk_err_set(err, EINVAL, "resolution negative cache: capacity %zu", cap);
	struct sk_rneg *c = calloc(1, sizeof(*c));
	if (!c)
		return sk_err_sys(err, ENOMEM, "resolution negative cache: allocate %zu entries", cap);
	size_t nb = 1;
	while (nb < 2 * cap)
		nb <<= 1;
	c->ents = calloc(cap, sizeof(*c->ents));
	c->buckets = malloc(nb * sizeof(*c->buckets));
	if (!c->ents || !c->buckets || sk_hash_key_random(&c->key) < 0) {
		sk_rneg_free(c);
		return sk_err_sys(err, ENOMEM, "resolution negative cache: allocate %zu entries", cap);
	}
	for (size_t i = 0; i < nb; i++)
		c->buckets[i] = NIL;
	c->cap = cap;
	c->n_buckets = nb;
	c->ttl_ms = ttl_ms;
	*out = c;
	return 0;
}

void sk_rneg_free(struct sk_rneg *c)
{
	if (!c)
		return;
	free(c->ents);
	free(c->buckets);
	free(c);
}

static uint64_t neg_hash(const struct sk_rneg *c, const char *name, const struct sk_addr *a)
{
	struct sk_siphash st;
	sk_siphash_init(&st, &c->key);
	sk_siphash_update(&st, name, strlen(name) + 1);   /* with its NUL: the name ends there */
	sk_siphash_u8(&st, (uint8_t)a->family);
	sk_siphash_update(&st, a->bytes, sizeof(a->bytes));
	return sk_siphash_final(&st);
}

static uint32_t *neg_find(struct sk_rneg *c, const char *name, const struct sk_addr *a, uint64_t h)
{
	uint32_t *link = &c->buckets[h & (c->n_buckets - 1)];
	while (*link != NIL) {
		struct neg_ent *e = &c->ents[*link];
		if (e->hash == h && sk_addr_equal(&e->addr, a) && strcmp(e->name, name) == 0)
			return link;
		link = &e->next;
	}
	return NULL;
}

bool sk_rneg_has(struct sk_rneg *c, const char *name, const struct sk_addr *addr, uint64_t now_ms)
{
	struct sk_addr a;
	sk_resolve_fold(addr, &a);
	uint32_t *link = neg_find(c, name, &a, neg_hash(c, name, &a));
	return link && c->ents[*link].expires_ms > now_ms;
}

void sk_rneg_add(struct sk_rneg *c, const char *name, const struct sk_addr *addr, uint64_t now_ms)
{
	if (strlen(name) > SK_DOMAIN_MAX)
		return;
	struct sk_addr a;
	sk_resolve_fold(addr, &a);
	uint64_t h = neg_hash(c, name, &a);
	uint32_t *link = neg_find(c, name, &a, h);
	if (link) {
		struct neg_ent *e = &c->ents[*link];
		if (e->expires_ms > now_ms)
			return;
		/* Expired: drop it from its chain; the pair is inserted afresh at the ring's head. */
		*link = e->next;
		e->used = false;
		c->count--;
	}
	struct neg_ent *e = &c->ents[c->head];
	if (e->used) {
		uint32_t *l = &c->buckets[e->hash & (c->n_buckets - 1)];
		while (*l != (uint32_t)c->head)
			l = &c->ents[*l].next;
		*l = e->next;
		c->count--;
	}
	memset(e, 0, sizeof(*e));
	memcpy(e->name, name, strlen(name) + 1);   /* <= SK_DOMAIN_MAX + 1: checked above */
	e->addr = a;
	e->expires_ms = now_ms + c->ttl_ms;
	e->hash = h;
	e->used = true;
	uint32_t *b = &c->buckets[h & (c->n_buckets - 1)];
	e->next = *b;
	*b = (uint32_t)c->head;
	c->count++;
	c->head = (c->head + 1) % c->cap;
}

size_t sk_rneg_count(const struct sk_rneg *c)
{
	return c->count;
}

/* ---- requests and groups ---- */

void sk_rbook_init(struct sk_rbook *b, size_t max_reqs)
{
	memset(b, 0, sizeof(*b));
	b->max_reqs = max_reqs;
}

static struct sk_resolve_group *group_of(struct sk_dlink *l)
{
	return sk_dlist_entry(l, struct sk_resolve_group, link);
}

static struct sk_resolve_req *req_of(struct sk_dlink *l)
{
	return sk_dlist_entry(l, struct sk_resolve_req, link);
}

/* A group no longer in the list (finishing) is left alone. */
static void group_unlink(struct sk_rbook *b, struct sk_resolve_group *g)
{
	sk_dlist_unlink(&b->groups, &g->link);
}

int sk_rbook_add(struct sk_rbook *b, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
		 void *arg, struct sk_resolve_req **req, struct sk_resolve_group **gout, bool *created)
{
	*req = NULL;
	*gout = NULL;
	*created = false;
	struct sk_addr a;
	sk_resolve_fold(addr, &a);
	size_t nlen = strlen(name);
	if (nlen == 0 || nlen > SK_DOMAIN_MAX || (a.family != AF_INET && a.family != AF_INET6) || !done)
		return -EINVAL;
	if (b->n_reqs >= b->max_reqs)
		return -EBUSY;
	/* Linear over at most max_reqs groups: misses are rare next to bound connections. */
	struct sk_resolve_group *g = group_of(b->groups.head);
	while (g && !(g->family == a.family && strcmp(g->name, name) == 0))
		g = group_of(g->link.next);
	struct sk_resolve_req *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			free(r);
			return -ENOMEM;
		}
		memcpy(g->name, name, nlen + 1);
		g->family = a.family;
		sk_dlist_push_front(&b->groups, &g->link);
		b->n_groups++;
		*created = true;
	}
	r->g = g;
	r->addr = a;
	r->done = done;
	r->arg = arg;
	/* Append: done callbacks run oldest first. */
	sk_dlist_push_back(&g->reqs, &r->link);
	g->n_reqs++;
	b->n_reqs++;
	*req = r;
	*gout = g;
	return 0;
}

static void req_unlink(struct sk_resolve_group *g, struct sk_resolve_req *r)
{
	sk_dlist_unlink(&g->reqs, &r->link);
	g->n_reqs--;
}

/* The oldest request of g, unlinked. */
static struct sk_resolve_req *req_pop(struct sk_resolve_group *g)
{
	struct sk_resolve_req *r = req_of(sk_dlist_pop_front(&g->reqs));
	g->n_reqs--;
	return r;
}

static void group_free(struct sk_rbook *b, struct sk_resolve_group *g)
{
	while (!sk_dlist_empty(&g->reqs)) {
		free(req_pop(g));
		b->n_reqs--;
	}
	free(g);
}

struct sk_resolve_group *sk_rbook_cancel(struct sk_rbook *b, struct sk_resolve_req *req)
{
	struct sk_resolve_group *g = req->g;
	req_unlink(g, req);
	b->n_reqs--;
	free(req);
	return g->n_reqs == 0 && !g->finishing ? g : NULL;
}

void sk_rbook_drop_group(struct sk_rbook *b, struct sk_resolve_group *g)
{
	if (!g->finishing) {
		group_unlink(b, g);
		b->n_groups--;
	}
	group_free(b, g);
}

void sk_rbook_finish(struct sk_rbook *b, struct sk_resolve_group *g, bool answered, const struct sk_addr *addrs,
		     size_t n, struct sk_rneg *neg, uint64_t now_ms)
{
	group_unlink(b, g);
	b->n_groups--;
	g->finishing = true;
	while (!sk_dlist_empty(&g->reqs)) {
		struct sk_resolve_req *r = req_pop(g);
		b->n_reqs--;
		enum sk_resolve_result res = SK_RESOLVE_FAILED;
		if (answered) {
			res = SK_RESOLVE_MISMATCH;
			for (size_t i = 0; i < n; i++) {
				struct sk_addr x;
				sk_resolve_fold(&addrs[i], &x);
				if (sk_addr_equal(&x, &r->addr))
					res = SK_RESOLVE_MATCH;
			}
			if (res == SK_RESOLVE_MISMATCH && neg)
				sk_rneg_add(neg, g->name, &r->addr, now_ms);
		}
		sk_resolve_done_fn done = r->done;
		void *arg = r->arg;
		free(r);
		done(arg, res);
	}
	free(g);
}

void sk_rbook_clear(struct sk_rbook *b)
{
	struct sk_dlink *l;
	while ((l = sk_dlist_pop_front(&b->groups))) {
		struct sk_resolve_group *g = group_of(l);
		b->n_groups--;
		group_free(b, g);
	}
}
