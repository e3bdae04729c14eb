/* sidecar/dns/bind.h — the name↔IP binding table (docs/architecture.md#transparent-proxy, #dns-filter): which names the DNS filter
 * returned each address for, so the proxy can require that a connection's original destination was
 * handed out for the SNI/Host name it claims, and find the name of a plain TCP connection.
 *
 * Owns: entries keyed by address (IPv4-mapped IPv6 folded to IPv4), each with up to
 * SK_BIND_NAMES_PER_ADDR names and an expiry per name = now + TTL clamped to [SK_BIND_TTL_MIN,
 * SK_BIND_TTL_MAX]; a bound on the total number of (address, name) bindings enforced by evicting the
 * least recently used address. Lookups and inserts are O(1) on average: a keyed hash table (seeded from
 * getrandom, so answers crafted by a hostile zone cannot pile into one bucket) plus an intrusive LRU list.
 * Time is passed in (monotonic milliseconds) so tests control it. Single-threaded (the event loop). */
#ifndef SK_SIDECAR_DNS_BIND_H
#define SK_SIDECAR_DNS_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/addr.h"

#define SK_BIND_TTL_MIN 30u        /* seconds: a TTL-0 answer still binds for the connect that follows */
#define SK_BIND_TTL_MAX 3600u      /* seconds: the filter also caps the TTL it returns to this */
#define SK_BIND_NAMES_PER_ADDR 16  /* a shared CDN address keeps its 16 most recently bound names */

struct sk_bind_table;

/* max_bindings: most (address, name) pairs held at once (>= 1). Returns 0, or -EINVAL, -ENOMEM or
 * getrandom's error with err saying which; *out is owned by the caller (sk_bind_free). */
int sk_bind_new(size_t max_bindings, struct sk_bind_table **out, struct sk_err *err);
void sk_bind_free(struct sk_bind_table *t);

/* Binds name (normalised, NUL-terminated, <= 253 bytes) to addr until now + clamp(ttl) seconds; a
 * rebinding of the same pair only extends. Returns 0, -EINVAL (bad name/family) or -ENOMEM. */
int sk_bind_add(struct sk_bind_table *t, const struct sk_addr *addr, const char *name, uint32_t ttl_s,
		uint64_t now_ms);
/* Is name bound to addr and unexpired at now? Counts as a use for LRU. */
bool sk_bind_has(struct sk_bind_table *t, const struct sk_addr *addr, const char *name, uint64_t now_ms);

/* Calls cb for every unexpired name bound to addr, most recently bound first, until cb returns false.
 * Returns the number of calls. For plain TCP, where the connection itself names nothing. */
typedef bool (*sk_bind_name_cb)(const char *name, uint64_t expires_ms, void *arg);
size_t sk_bind_names(struct sk_bind_table *t, const struct sk_addr *addr, uint64_t now_ms, sk_bind_name_cb cb,
		     void *arg);

/* Number of (address, name) pairs held (expired ones count until touched or evicted). */
size_t sk_bind_count(const struct sk_bind_table *t);
/* Drops up to max_work expired pairs from the least recently used end; returns how many were dropped.
 * For an idle-time sweep; correctness never depends on it. */
size_t sk_bind_sweep(struct sk_bind_table *t, uint64_t now_ms, size_t max_work);

#endif
