/* sidecar/inspect/leaf.h — the leaf certificates the sidecar presents to the agent, one per server name,
 * signed by the pod's inspection CA (ca.h) and kept in a bounded cache so a name seen again costs no
 * signature.
 *
 * A leaf carries subjectAltName DNS:<name> (IP:<address> when the name is an IPv4 or IPv6 literal), CN the
 * name when it fits (64 bytes; none for an address), EKU serverAuth, keyUsage digitalSignature, CA:FALSE,
 * and is valid from an hour ago (clocks of the agent's container may lag) for SK_LEAF_LIFETIME_S, never
 * past the CA's notAfter.
 *
 * One P-256 key per cache, generated with it, is the key of every leaf: a leaf's key protects connections
 * between the agent and the sidecar inside one pod, both ends in the same process for the sidecar; a
 * per-name key would give nothing a per-process key does not (anyone who could read one could read all,
 * from the same memory) and would cost a keygen per name. The key never leaves memory, like the CA's.
 *
 * Cache: at most `cap` names (SK_LEAF_CACHE_CAP by default), least recently used evicted first; an entry
 * within SK_LEAF_RENEW_S of its notAfter is minted again. Names are cached lower-cased. Single-threaded. */
#ifndef SK_SIDECAR_INSPECT_LEAF_H
#define SK_SIDECAR_INSPECT_LEAF_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/err.h"
#include "common/util.h"

struct x509_st;
struct evp_pkey_st;
struct sk_ca;
struct sk_leaf_cache;

#define SK_LEAF_CACHE_CAP 1024
#define SK_LEAF_LIFETIME_S (24L * 3600)
#define SK_LEAF_BACKDATE_S 3600L
#define SK_LEAF_RENEW_S 3600L   /* re-mint an hour before the end: a long connection's leaf stays valid */

struct sk_leaf_stats {
	uint64_t signed_;     /* leaves signed (cache misses and renewals) */
	uint64_t hits;
	uint64_t evictions;   /* names dropped at the cap */
	uint64_t uncached;    /* leaves handed out but not cached (the table's allocation failed) */
};

/* ca is borrowed and must outlive the cache. cap 0: SK_LEAF_CACHE_CAP. *out owned. */
SK_MUST_USE int sk_leaf_cache_new(const struct sk_ca *ca, size_t cap, struct sk_leaf_cache **out,
				  struct sk_err *err);
void sk_leaf_cache_free(struct sk_leaf_cache *c);

/* The leaf for name at time now (0: time(NULL)): a new reference in *out (X509_free it), so an eviction
 * never pulls a certificate from under a handshake. name: a DNS name (letters, digits, '-', '_', '.', an
 * optional leading "*.") or an IP literal, at most 253 bytes; anything else is -EINVAL. */
SK_MUST_USE int sk_leaf_get(struct sk_leaf_cache *c, const char *name, time_t now, struct x509_st **out,
			    struct sk_err *err);
/* The key of every leaf (borrowed). */
struct evp_pkey_st *sk_leaf_key(const struct sk_leaf_cache *c);
/* The issuing CA's certificate (borrowed), for the chain a handshake sends. */
struct x509_st *sk_leaf_issuer(const struct sk_leaf_cache *c);
struct sk_leaf_stats sk_leaf_stats(const struct sk_leaf_cache *c);

#endif
