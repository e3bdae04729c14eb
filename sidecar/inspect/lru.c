/* sidecar/inspect/lru.c — see lru.h. Chained buckets (a power of two, at least twice the cap) plus one
 * intrusive list in use order: the head is the most recently used, the tail the next to go. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dlist.h"
#include "common/hash.h"
#include "sidecar/inspect/lru.h"

struct lru_entry {
	struct lru_entry *chain;   /* next in the same bucket */
	struct sk_dlink use;       /* in sk_lru.order */
	void *value;               /* owned */
	size_t hash;
	char key[];
};

struct sk_lru {
	struct lru_entry **buckets;
	size_t mask;               /* buckets - 1 */
	size_t cap, len, evictions;
	struct sk_dlist order;
	struct sk_hash_key hkey;
	void (*free_value)(void *);
};

int sk_lru_new(size_t cap, void (*free_value)(void *), struct sk_lru **out, struct sk_err *err)
{
	if (cap == 0)
		return sk_err_set(err, EINVAL, "cache: capacity must be at least 1");
	size_t n = 16;
	while (n < cap * 2)
		n <<= 1;
	struct sk_lru *t = calloc(1, sizeof(*t));
	if (!t || !(t->buckets = calloc(n, sizeof(struct lru_entry *)))) {
		free(t);
		return sk_err_set(err, ENOMEM, "cache: out of memory");
	}
	int r = sk_hash_key_random(&t->hkey);
	if (r < 0) {
		free(t->buckets);
		free(t);
		return sk_err_sys(err, -r, "cache: random hash key");
	}
	t->mask = n - 1;
	t->cap = cap;
	t->free_value = free_value;
	*out = t;
	return 0;
}

static void entry_free(struct sk_lru *t, struct lru_entry *e)
{
	if (t->free_value && e->value)
		t->free_value(e->value);
	free(e);
}

void sk_lru_free(struct sk_lru *t)
{
	if (!t)
		return;
	struct sk_dlink *l;
	while ((l = sk_dlist_pop_front(&t->order)))
		entry_free(t, sk_container_of(l, struct lru_entry, use));
	free(t->buckets);
	free(t);
}

static size_t hash_of(const struct sk_lru *t, const char *key)
{
	return (size_t)sk_siphash13(&t->hkey, key, strlen(key));
}

/* The link that points at key's entry (or at the NULL ending its bucket). */
static struct lru_entry **find(struct sk_lru *t, const char *key, size_t h)
{
	struct lru_entry **p = &t->buckets[h & t->mask];
	while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
		p = &(*p)->chain;
	return p;
}

static void unlink_entry(struct sk_lru *t, struct lru_entry **p)
{
	struct lru_entry *e = *p;
	*p = e->chain;
	sk_dlist_unlink(&t->order, &e->use);
	t->len--;
	entry_free(t, e);
}

void *sk_lru_get(struct sk_lru *t, const char *key)
{
	struct lru_entry *e = *find(t, key, hash_of(t, key));
	if (!e)
		return NULL;
	sk_dlist_unlink(&t->order, &e->use);
	sk_dlist_push_front(&t->order, &e->use);
	return e->value;
}

int sk_lru_put(struct sk_lru *t, const char *key, void *value)
{
	size_t h = hash_of(t, key);
	struct lru_entry **p = find(t, key, h);
	if (*p) {
		unlink_entry(t, p);
	} else if (t->len >= t->cap) {
		struct lru_entry *old = sk_container_of(t->order.tail, struct lru_entry, use);
		unlink_entry(t, find(t, old->key, old->hash));
		t->evictions++;
	}
	size_t klen = strlen(key);
	struct lru_entry *e = calloc(1, sizeof(*e) + klen + 1);
	if (!e) {
		if (t->free_value && value)
			t->free_value(value);
		return -ENOMEM;
	}
	memcpy(e->key, key, klen + 1);
	e->hash = h;
	e->value = value;
	p = &t->buckets[h & t->mask];
	e->chain = *p;
	*p = e;
	sk_dlist_push_front(&t->order, &e->use);
	t->len++;
	return 0;
}

void sk_lru_del(struct sk_lru *t, const char *key)
{
	struct lru_entry **p = find(t, key, hash_of(t, key));
	if (*p)
		unlink_entry(t, p);
}

size_t sk_lru_len(const struct sk_lru *t)
{
	return t->len;
}

size_t sk_lru_evictions(const struct sk_lru *t)
{
	return t->evictions;
}
