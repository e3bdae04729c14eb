/* init/nft.h — loads a struct sk_ruleset into the kernel and reads it back, through libnftnl + libmnl
 * (no nft or iptables binary). Owns the netlink socket, the one batch (NLM_F_ACK on every message,
 * every error routed to the message that caused it) and the read-back comparison. Implemented by concern:
 * nft.c (the socket), nft_expr.c (ruleset as libnftnl objects), nft_batch.c (sk_nft_apply), nft_verify.c
 * (sk_nft_verify); nft_expr.h and nft_internal.h are private to them. */
#ifndef SK_INIT_NFT_H
#define SK_INIT_NFT_H

#include <stddef.h>

#include "common/err.h"
#include "init/ruleset.h"
#include "common/util.h"

/* Returned (negated) by sk_nft_verify when the live table differs from the expected one. */
#define SK_NFT_MISMATCH EUCLEAN

struct sk_nft_stats {
	size_t messages;       /* netlink messages in the batch (begin/end excluded) */
	size_t batch_bytes;
};

/* Replaces table inet stockade with rs in ONE transaction: add table (creates it if missing), delete
 * it, add it again with its counters, sets, elements, chains and rules. Either all of it is committed
 * or nothing changes. st may be NULL. Errors name the message the kernel refused; EPERM is reported as
 * a missing CAP_NET_ADMIN, EOPNOTSUPP/EPROTONOSUPPORT as nf_tables being unavailable. */
SK_MUST_USE int sk_nft_apply(const struct sk_ruleset *rs, struct sk_nft_stats *st, struct sk_err *err);

/* Dumps the live table (chains, rules, sets and their elements, counters) and compares it with rs.
 * 0: identical. -SK_NFT_MISMATCH: differs, err names the first difference. -ENOENT: no table.
 * Other negative errno: netlink failure. */
SK_MUST_USE int sk_nft_verify(const struct sk_ruleset *rs, struct sk_err *err);

#endif
