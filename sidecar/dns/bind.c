/* sidecar/dns/bind.c — see dns_bind.h. */
#include "sidecar/dns/bind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dlist.h"
#include "common/hash.h"
#include "policy/domain.h"

struct bind_name {
	struct bind_name *next;     /* most recently bound first */
	uint64_t expires_ms;
	char name[];                /* NUL-terminated */
};

struct bind_addr {
	struct sk_addr key;         /* folded: mapped IPv6 → IPv4, unused bytes zero */
	struct bind_addr *hnext;    /* bucket chain */
	struct sk_dlink lru;        /* in the table's LRU list: head = most recent */
	struct bind_name *names;
	unsigned n_names;
	/* No name expires before this (a lower bound, exact after a prune): a lookup or add before it skips
	 * the prune's walk of the list. */
	uint64_t min_exp;
};

struct bucket {
	struct bind_addr *head;
};

struct sk_bind_table {
	struct bucket *buckets;
	size_t mask;                /* buckets - 1, a power of two minus one */
	struct sk_dlist lru;        /* of struct bind_addr */
	size_t count, max;
	struct sk_hash_key key;
};

static void fold(const struct sk_addr *in, struct sk_addr *out)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	memset(out, 0, sizeof(*out));
	out->family = in->family;
	if (in->family == AF_INET) {
		memcpy(out->bytes, in->bytes, 4);
	} else if (memcmp(in->bytes, mapped, 12) == 0) {
		/* The kernel reports a v4 connection made through a v6 socket as IPv4: key both the same. */
		out->family = AF_INET;
		memcpy(out->bytes, in->bytes + 12, 4);
	} else {
		memcpy(out->bytes, in->bytes, 16);
	}
}

/* Keyed (the names, and so the addresses, come from upstream answers): the family, then all 16 bytes. */
static size_t hash_addr(const struct sk_bind_table *t, const struct sk_addr *a)
{
	struct sk_siphash st;
	sk_siphash_init(&st, &t->key);
	sk_siphash_u8(&st, (uint8_t)a->family);
	sk_siphash_update(&st, a->bytes, 16);
	return (size_t)sk_siphash_final(&st) & t->mask;
}

static struct bind_addr *addr_of(struct sk_dlink *l)
{
	return sk_dlist_entry(l, struct bind_addr, lru);
}

int sk_bind_new(size_t max_bindings, struct sk_bind_table **out, struct sk_err *err)
{
	*out = NULL;
	if (max_bindings == 0 || max_bindings > (1u << 24))
		return sk_err_set(err, EINVAL, "binding table: %zu bindings (1..%u)", max_bindings, 1u << 24);
	struct sk_bind_table *t = calloc(1, sizeof(*t));
	if (!t)
		return sk_err_sys(err, ENOMEM, "binding table: allocate %zu bindings", max_bindings);
	size_t nb = 64;
	while (nb < max_bindings)
		nb <<= 1;
	t->buckets = calloc(nb, sizeof(struct bucket));
	if (!t->buckets) {
		free(t);
		return sk_err_sys(err, ENOMEM, "binding table: allocate %zu bindings", max_bindings);
	}
	t->mask = nb - 1;
	t->max = max_bindings;
	int rc = sk_hash_key_random(&t->key);
	if (rc < 0) {
		free(t->buckets);
		free(t);
		return sk_err_sys(err, -rc, "binding table: random hash key");
	}
	*out = t;
	return 0;
}

static void free_names(struct bind_name *n)
{
	while (n) {
		struct bind_name *next = n->next;
		free(n);
		n = next;
	}
}

static void remove_addr(struct sk_bind_table *t, struct bind_addr *e)
{
	struct bind_addr **pp = &t->buckets[hash_addr(t, &e->key)].head;
	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	sk_dlist_unlink(&t->lru, &e->lru);
	t->count -= e->n_names;
	free_names(e->names);
	free(e);
}

void sk_bind_free(struct sk_bind_table *t)
{
	if (!t)
		return;
	struct sk_dlink *l;
	while ((l = sk_dlist_pop_front(&t->lru))) {
		struct bind_addr *e = addr_of(l);
		free_names(e->names);
		free(e);
	}
	free(t->buckets);
	free(t);
}

static struct bind_addr *find(struct sk_bind_table *t, const struct sk_addr *key)
{
	for (struct bind_addr *e = t->buckets[hash_addr(t, key)].head; e; e = e->hnext)
		if (e->key.family == key->family && memcmp(e->key.bytes, key->bytes, 16) == 0)
			return e;
	return NULL;
}

/* Drops expired names of e; returns the number left. */
static unsigned prune(struct sk_bind_table *t, struct bind_addr *e, uint64_t now_ms)
{
	if (now_ms < e->min_exp)
		return e->n_names;
	uint64_t min = UINT64_MAX;
	struct bind_name **pp = &e->names;
	while (*pp) {
		if ((*pp)->expires_ms <= now_ms) {
			struct bind_name *dead = *pp;
			*pp = dead->next;
			free(dead);
			e->n_names--;
			t->count--;
		} else {
			if ((*pp)->expires_ms < min)
				min = (*pp)->expires_ms;
			pp = &(*pp)->next;
		}
	}
	e->min_exp = min;
	return e->n_names;
}

int sk_bind_add(struct sk_bind_table *t, const struct sk_addr *addr, const char *name, uint32_t ttl_s,
		uint64_t now_ms)
{
	size_t nl = strnlen(name, SK_DOMAIN_MAX + 1);
	if (nl == 0 || nl > SK_DOMAIN_MAX || (addr->family != AF_INET && addr->family != AF_INET6))
		return -EINVAL;
	uint32_t ttl = ttl_s < SK_BIND_TTL_MIN ? SK_BIND_TTL_MIN : ttl_s > SK_BIND_TTL_MAX ? SK_BIND_TTL_MAX : ttl_s;
	uint64_t expires = now_ms + (uint64_t)ttl * 1000u;

	struct sk_addr key;
	fold(addr, &key);
	struct bind_addr *e = find(t, &key);
	struct bind_name **tail = NULL;   /* the link that holds the list's last name */
	if (e) {
		prune(t, e, now_ms);
		struct bind_name **pp = &e->names;
		for (; *pp; tail = pp, pp = &(*pp)->next) {
			if (strcmp((*pp)->name, name) == 0) {
				struct bind_name *n = *pp;
				if (n->expires_ms < expires)
					n->expires_ms = expires;
				*pp = n->next;          /* move to the front: most recently bound */
				n->next = e->names;
				e->names = n;
				sk_dlist_move_front(&t->lru, &e->lru);
				return 0;
			}
		}
	} else {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->key = key;
		e->min_exp = UINT64_MAX;
		size_t b = hash_addr(t, &key);
		e->hnext = t->buckets[b].head;
		t->buckets[b].head = e;
		sk_dlist_push_front(&t->lru, &e->lru);
	}

	struct bind_name *n = malloc(sizeof(*n) + nl + 1);
	if (!n) {
		if (!e->names)
			remove_addr(t, e);
		return -ENOMEM;
	}
	memcpy(n->name, name, nl + 1);
	n->expires_ms = expires;
	n->next = e->names;
	e->names = n;
	e->n_names++;
	t->count++;
	if (expires < e->min_exp)
		e->min_exp = expires;
	if (tail == &e->names)
		tail = &n->next;   /* the old head was the tail: n now links to it */
	if (e->n_names > SK_BIND_NAMES_PER_ADDR && tail) {
		/* The list is most-recent-first: drop the oldest binding (the tail, found by the walk above). */
		free(*tail);
		*tail = NULL;
		e->n_names--;
		t->count--;
	}
	sk_dlist_move_front(&t->lru, &e->lru);
	/* Evict whole least-recently-used addresses; never the one just touched (it is at the head). */
	while (t->count > t->max && t->lru.tail && t->lru.tail != &e->lru)
		remove_addr(t, addr_of(t->lru.tail));
	return 0;
}

bool sk_bind_has(struct sk_bind_table *t, const struct sk_addr *addr, const char *name, uint64_t now_ms)
{
	struct sk_addr key;
	fold(addr, &key);
	struct bind_addr *e = find(t, &key);
	if (!e)
		return false;
	if (prune(t, e, now_ms) == 0) {
		remove_addr(t, e);
		return false;
	}
	sk_dlist_move_front(&t->lru, &e->lru);
	for (const struct bind_name *n = e->names; n; n = n->next)
		if (strcmp(n->name, name) == 0)
			return true;
	return false;
}

size_t sk_bind_names(struct sk_bind_table *t, const struct sk_addr *addr, uint64_t now_ms, sk_bind_name_cb cb,
		     void *arg)
{
	struct sk_addr key;
	fold(addr, &key);
	struct bind_addr *e = find(t, &key);
	if (!e)
		return 0;
	if (prune(t, e, now_ms) == 0) {
		remove_addr(t, e);
		return 0;
	}
	sk_dlist_move_front(&t->lru, &e->lru);
	size_t calls = 0;
	for (const struct bind_name *n = e->names; n; n = n->next) {
		calls++;
		if (!cb(n->name, n->expires_ms, arg))
			break;
	}
	return calls;
}

size_t sk_bind_count(const struct sk_bind_table *t)
{
	return t->count;
}

size_t sk_bind_sweep(struct sk_bind_table *t, uint64_t now_ms, size_t max_work)
{
	size_t before = t->count;
	struct bind_addr *e = addr_of(t->lru.tail);
	while (e && max_work--) {
		struct bind_addr *prev = addr_of(e->lru.prev);
		if (prune(t, e, now_ms) == 0)
			remove_addr(t, e);
		e = prev;
	}
	return before - t->count;
}
