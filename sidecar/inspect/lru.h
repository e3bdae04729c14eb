/* sidecar/inspect/lru.h — a bounded string-keyed table with least-recently-used eviction, shared by the
 * leaf-certificate cache (SNI → leaf) and the upstream session cache (host → session).
 *
 * What it owns: its entries and their keys; each value is handed in owned and released with the table's
 * free_value when its entry is replaced, evicted, removed or the table freed. Lookups hash with a keyed
 * SipHash (the key random per table), so names an agent picks cannot pile into one bucket. Single-threaded;
 * nothing allocates on a hit. */
#ifndef SK_SIDECAR_INSPECT_LRU_H
#define SK_SIDECAR_INSPECT_LRU_H

#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

struct sk_lru;

/* cap >= 1 entries. free_value may be NULL (values not owned). *out owned; free with sk_lru_free. */
SK_MUST_USE int sk_lru_new(size_t cap, void (*free_value)(void *), struct sk_lru **out, struct sk_err *err);
void sk_lru_free(struct sk_lru *t);

/* The value for key (borrowed), marked most recently used; NULL when absent. */
void *sk_lru_get(struct sk_lru *t, const char *key);
/* Inserts or replaces key → value (value owned by the table from here on, even on failure: it is released).
 * At the cap the least recently used entry is evicted first. 0 or -ENOMEM. */
SK_MUST_USE int sk_lru_put(struct sk_lru *t, const char *key, void *value);
/* Removes key if present (its value released). */
void sk_lru_del(struct sk_lru *t, const char *key);
size_t sk_lru_len(const struct sk_lru *t);
/* Entries evicted at the cap since creation (for tests and metrics). */
size_t sk_lru_evictions(const struct sk_lru *t);

#endif
