/* sidecar/dns/cache.h — the DNS filter's answer cache (docs/architecture.md#dns-filter).
 *
 * What is cached: the *filtered* answer (what sk_dns_filter_answer built for the agent: CNAME chain
 * only, SOA only in authority, ech and address hints stripped, TTLs capped at SK_BIND_TTL_MAX), keyed by
 * (question name in lower case, qtype, qclass) — exactly what the upstream query is built from, so one
 * entry stands for one upstream question. Stored without the client's OPT record, with the question in
 * lower case; a hit rebuilds the client's message: its ID, its RD/CD bits, its spelling of the question
 * (case), an OPT when it sent one (with its DO bit), every TTL decremented by the entry's age (whole
 * seconds). A cached body larger than the client's UDP limit is served as the empty TC=1 answer the
 * filter sends for a fresh one (binding nothing), so the client retries over TCP.
 *
 * Only NOERROR and NXDOMAIN answers whose result was "answered" are stored (never SERVFAIL, REFUSED,
 * TC=1, a rebinding verdict, or a local answer to a denied name: those are never forwarded, so they never
 * reach the cache, and every query still goes through sk_dns_filter_query first). Lifetime:
 *  - positive (NOERROR with answer records, no SOA): the smallest TTL of its records (the filter caps
 *    them at SK_BIND_TTL_MAX, an hour); a TTL of 0 is not cached;
 *  - negative (NXDOMAIN, or NOERROR without the asked type — NODATA, CNAME chain included): RFC 2308,
 *    min(SOA TTL, SOA MINIMUM, the TTLs of the other records, SK_DNS_CACHE_NEG_TTL_MAX); the SOA's TTL is
 *    stored as min(SOA TTL, MINIMUM) (RFC 2308 §3); a negative answer without an SOA is not cached.
 *
 * Bindings: a hit hands back the (address, remaining TTL) pairs of its A/AAAA answer records, the same
 * pairs sk_dns_filter_answer puts in its verdict for a fresh answer; the server binds them to the query's
 * name exactly as it does for a fresh one, so the proxy keeps allowing connections to cached addresses.
 *
 * Invalidation: every call passes the policy generation (sk_sidecar.policy_gen); when it differs from
 * the one the entries were made under, the whole cache is flushed first (a reload can change which names
 * are allowed, blockPrivate, CIDR rules that vouch for private answers, strict chains: flushing is the
 * one rule that cannot be wrong).
 *
 * Bounds: at most max_entries entries and max_bytes bytes (entry headers, record tables and messages
 * counted); the least recently used entry is evicted to make room; an answer over max_bytes / 8 is not
 * cached. Lookups and inserts are O(1) on average: a hash table seeded from getrandom (a hostile zone
 * cannot pile names into one bucket) plus an intrusive LRU list. Expired entries are dropped when looked
 * up or evicted. Time is passed in (monotonic milliseconds). Single-threaded (the event loop). */
#ifndef SK_SIDECAR_DNS_CACHE_H
#define SK_SIDECAR_DNS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sidecar/dns/filter.h"

#define SK_DNS_CACHE_ENTRIES 8192u            /* default entry cap */
#define SK_DNS_CACHE_BYTES (8u * 1024u * 1024u) /* default byte cap: 8 MiB */
#define SK_DNS_CACHE_NEG_TTL_MAX 300u         /* seconds: cap on negative caching (RFC 2308 §5 suggests 1-3 h) */

struct sk_dns_cache;

struct sk_dns_cache_stats {
	uint64_t hits, misses, inserts, evictions, expired, flushes;
	size_t entries, bytes;
};

/* max_entries >= 1, max_bytes >= 4096. Returns 0, or -EINVAL, -ENOMEM or getrandom's error with err saying
 * which. */
int sk_dns_cache_new(size_t max_entries, size_t max_bytes, struct sk_dns_cache **out, struct sk_err *err);
void sk_dns_cache_free(struct sk_dns_cache *c);

/* Stores msg[0..len), the answer sk_dns_filter_answer built for q with verdict v (the client's OPT, if q
 * had one, is taken off; a verdict that is not cacheable is ignored). gen: the policy generation the
 * answer was checked under. Returns 1 stored, 0 not cacheable, -ENOMEM. */
int sk_dns_cache_put(struct sk_dns_cache *c, uint64_t gen, const struct sk_dns_fquery *q,
		     const struct sk_dns_averdict *v, const uint8_t *msg, size_t len, uint64_t now_ms);

struct sk_dns_cache_hit {
	size_t len;                /* bytes of the answer in out */
	int rcode;
	bool truncated;            /* too big for the client's UDP limit: an empty TC=1 answer, nothing to bind */
	size_t n_bind;
	struct sk_dns_binding bind[SK_DNS_MAX_BINDINGS];   /* remaining TTLs, as returned to the client */
};

/* Looks q up under policy generation gen; on a hit builds the client's answer into out[0..cap) and
 * fills h. client_tcp: no UDP size limit. Returns true on a hit. */
bool sk_dns_cache_get(struct sk_dns_cache *c, uint64_t gen, const struct sk_dns_fquery *q, bool client_tcp,
		      uint64_t now_ms, uint8_t *out, size_t cap, struct sk_dns_cache_hit *h);

void sk_dns_cache_flush(struct sk_dns_cache *c);
void sk_dns_cache_stats(const struct sk_dns_cache *c, struct sk_dns_cache_stats *st);

#endif
