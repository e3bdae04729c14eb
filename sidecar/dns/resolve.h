/* sidecar/dns/resolve.h — the pure parts of the sidecar's own resolution on a binding miss
 * (docs/architecture.md#transparent-proxy, "or the sidecar's own resolution of it"; the hooks are struct
 * sk_resolve_hooks in sidecar.h, filled by the DNS server (dns/fallback.c), which owns the sockets, the upstream
 * query and the deadline).
 *
 * Owns:
 *  - the negative cache: (name, address) pairs whose resolution recently came back without that address
 *    (MISMATCH). A start for a cached pair returns -ENOENT without any query, for SK_RESOLVE_NEG_TTL_MS;
 *    at most SK_RESOLVE_NEG_MAX pairs, the oldest evicted first (every entry lives the same time, so the
 *    oldest is also the first to expire). Keyed by a hash seeded from getrandom (names come from the
 *    agent's SNI/Host), O(1) on average;
 *  - the request bookkeeping: requests (one per waiting connection, the sk_resolve_req handle) grouped by
 *    (name, address family), so several connections waiting on the same name share one upstream query
 *    (a "group"), each still compared against its own address. At most SK_RESOLVE_MAX_INFLIGHT requests
 *    at once (groups ≤ requests: a group whose last request is cancelled is dropped at once).
 * Time is passed in (monotonic milliseconds) so tests control it. Single-threaded (the event loop). */
#ifndef SK_SIDECAR_DNS_RESOLVE_H
#define SK_SIDECAR_DNS_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlist.h"
#include "common/err.h"
#include "policy/addr.h"
#include "policy/domain.h"
#include "sidecar/core/sidecar.h"

#define SK_RESOLVE_MAX_INFLIGHT 256   /* requests waiting at once; a start beyond it returns -EBUSY */
#define SK_RESOLVE_TIMEOUT_MS 2000u   /* one resolution, all attempts (UDP retries, TCP) included */
#define SK_RESOLVE_NEG_TTL_MS 10000u  /* how long a MISMATCH answers -ENOENT without asking again */
#define SK_RESOLVE_NEG_MAX 1024       /* negative cache entries (oldest evicted) */

/* IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack socket reports) → IPv4; anything else copied. */
void sk_resolve_fold(const struct sk_addr *in, struct sk_addr *out);

/* ---- negative cache ---- */

struct sk_rneg;

/* cap >= 1 entries, each living ttl_ms. Returns 0, or -EINVAL or -ENOMEM (also when getrandom fails) with
 * err saying which. */
int sk_rneg_new(size_t cap, uint64_t ttl_ms, struct sk_rneg **out, struct sk_err *err);
void sk_rneg_free(struct sk_rneg *c);
/* Is (name, addr) cached and unexpired at now? addr is folded first. */
bool sk_rneg_has(struct sk_rneg *c, const char *name, const struct sk_addr *addr, uint64_t now_ms);
/* Caches (name, addr) until now + ttl (an unexpired entry for the pair is left as it is), evicting the
 * oldest entry when full. Names longer than SK_DOMAIN_MAX are ignored. */
void sk_rneg_add(struct sk_rneg *c, const char *name, const struct sk_addr *addr, uint64_t now_ms);
size_t sk_rneg_count(const struct sk_rneg *c);   /* entries held (expired ones until overwritten) */

/* ---- requests and groups ---- */

struct sk_resolve_group;

struct sk_resolve_req {
	struct sk_resolve_group *g;
	struct sk_dlink link;             /* in g->reqs */
	struct sk_addr addr;              /* folded */
	sk_resolve_done_fn done;
	void *arg;
};

struct sk_resolve_group {
	char name[SK_DOMAIN_MAX + 1];
	int family;                       /* AF_INET (A) or AF_INET6 (AAAA) */
	struct sk_dlist reqs;             /* of struct sk_resolve_req: waiting, oldest first */
	size_t n_reqs;
	bool finishing;                   /* done callbacks are running: cancels only unlink */
	void *ctx;                        /* the server's upstream query for this group */
	struct sk_dlink link;             /* in the book's groups (not while finishing) */
};

struct sk_rbook {
	struct sk_dlist groups;           /* of struct sk_resolve_group */
	size_t n_reqs, n_groups, max_reqs;
};

void sk_rbook_init(struct sk_rbook *b, size_t max_reqs);
/* Adds a request for (name, addr's family). Returns 0 with *req and *g set (*created: g is new, with
 * ctx NULL; the caller starts its query, or drops it with sk_rbook_drop_group if it cannot), -EBUSY at
 * max_reqs, -EINVAL (name too long, family neither), -ENOMEM. done is not called. */
int sk_rbook_add(struct sk_rbook *b, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
		 void *arg, struct sk_resolve_req **req, struct sk_resolve_group **g, bool *created);
/* Removes and frees req; done is never called for it. Returns its group when that is now empty and not
 * finishing (the caller tears its query down, then calls sk_rbook_drop_group), else NULL. */
struct sk_resolve_group *sk_rbook_cancel(struct sk_rbook *b, struct sk_resolve_req *req);
/* Frees g and any requests left in it without calling done. */
void sk_rbook_drop_group(struct sk_rbook *b, struct sk_resolve_group *g);
/* Ends g: answered says the name resolved (NOERROR) with addrs[0..n) its addresses of g's family (the
 * ones just bound). Each request gets done once, oldest first: MATCH if its address is among addrs,
 * else MISMATCH (and the pair goes into neg, if not NULL); FAILED when !answered. g is unlinked before
 * the first call (a start from a done callback makes a new group) and freed after the last; a done
 * callback may cancel requests of g not yet called. */
void sk_rbook_finish(struct sk_rbook *b, struct sk_resolve_group *g, bool answered, const struct sk_addr *addrs,
		     size_t n, struct sk_rneg *neg, uint64_t now_ms);
/* Frees every group and request without calling done (server shutdown). */
void sk_rbook_clear(struct sk_rbook *b);

#endif
