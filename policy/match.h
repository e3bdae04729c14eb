/* policy/match.h — the matcher: decides a connection (or a DNS name) against a loaded policy.
 * Cost does not grow with the number of rules: exact names in a hash table, wildcard suffixes in a hash
 * keyed by suffix (one lookup per label of the name), CIDRs in a binary prefix trie per family; each
 * bucket keeps its rule indexes ascending, so "first match wins" is the smallest matching index. */
#ifndef SK_POLICY_MATCH_H
#define SK_POLICY_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* What is known about one connection attempt. */
struct sk_query {
	const char *host;          /* normalised name (SNI, Host, or DNS binding); NULL if none */
	const struct sk_addr *dst; /* original destination; NULL for name-only questions (DNS) */
	uint16_t port;
	enum sk_proto proto;       /* TLS, HTTP, TCP (other) or UDP as seen on the wire; ANY (unknown) is
	                            * treated as TCP (other): only rules of protocol any or tcp match */
};

enum sk_reason {
	SK_REASON_RULE = 0,         /* allowed by rule `rule` */
	SK_REASON_NO_MATCH,         /* no rule matched (default deny) */
	SK_REASON_PRIVATE,          /* destination in a blockPrivate range and no cidr rule names it */
	SK_REASON_LINK_LOCAL,       /* link-local / metadata and no cidr rule names it */
	SK_REASON_AUDIT,            /* mode audit: would have been denied, allowed */
};

struct sk_decision {
	bool allow;
	int rule;                   /* index into policy->rules of the deciding rule, -1 if none */
	enum sk_reason reason;
};

/* Builds the matcher for p (called by the loader) and stores it in p->matcher (replacing any previous
 * one). The matcher borrows rule->host strings from p. Returns 0, -ENOMEM, or -EINVAL for a rule the
 * loader should not have produced (NULL host, bad family or prefix, ports NULL with n_ports > 0). */
int sk_matcher_build(struct sk_policy *p);
void sk_matcher_free(struct sk_matcher *m);

/* Decision rules, in order:
 * 1. If q->dst is link-local (sk_addr_is_link_local), deny (LINK_LOCAL) unless a CIDR rule matching dst,
 *    port and proto exists that names it (then allow with that rule). "Names" = the rule's block lies
 *    wholly inside the link-local set (sk_cidr_is_link_local): 169.254.169.254/32 names the metadata
 *    address, 0.0.0.0/0 matches it but does not name it.
 * 2. If block_private and q->dst is private, deny (PRIVATE) unless such a CIDR rule exists (naming =
 *    sk_cidr_is_private: 10.0.0.0/8 names 10.1.2.3; 0.0.0.0/0 does not).
 * 3. Otherwise the smallest-index rule that matches: a HOST rule when q->host matches (exact, or a strict
 *    subdomain of a wildcard suffix), a CIDR rule when q->dst is inside it; both also need the port in
 *    the rule's ports (or none listed) and a compatible protocol. No match → deny (NO_MATCH).
 * 4. mode audit turns every deny into allow with reason AUDIT (rule stays -1 or the would-be rule).
 * Embedded IPv4 forms of q->dst (mapped, NAT64, 6to4) are matched against IPv4 CIDR rules too. */
void sk_match(const struct sk_policy *p, const struct sk_query *q, struct sk_decision *out);

/* DNS: is `name` (normalised) allowed by some HOST rule on some port and protocol? Returns the smallest
 * such rule index, or -1. sk_match and sk_match_name re-normalise the name they are given (a trailing
 * dot or upper case is fine); a name that does not normalise matches no HOST rule. */
int sk_match_name(const struct sk_policy *p, const char *name);
/* sk_match_name for a name that already is sk_domain_normalize's output (flags 0), as the DNS filter holds
 * it: the same answer without normalising it a second time (a tenth of a forwarded query's instructions).
 * Normalising is idempotent, so for such a name both give the same rule (fuzz_dns_codec checks it). */
int sk_match_name_normalized(const struct sk_policy *p, const char *norm);

/* Addresses (e.g. DNS answers, rebinding defence): the smallest CIDR rule that matches dst on some port and
 * protocol — and, when dst is link-local (or private under block_private), names it as sk_match requires.
 * Returns the rule index, or -1. Same cost as sk_match: no scan of the rules. */
int sk_match_addr(const struct sk_policy *p, const struct sk_addr *dst);

const char *sk_reason_name(enum sk_reason r);  /* "rule", "no_match", "private", "link_local", "audit" */

#endif
