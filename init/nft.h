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

/* One NETLINK_NETFILTER socket for a load and its read-back. The release of a netfilter netlink socket
 * after a commit waits for nf_tables' destroy work, i.e. an RCU grace period (5-15 ms, most of a default
 * policy's init; `nft -f` pays it too). Closing the committing socket before reading back put that wait
 * in front of the read-back; reading back on the same socket and closing it last runs the read-back
 * inside the wait. */
struct sk_nft;

/* Opens the socket (errors say when nf_tables is unavailable). *out is the caller's (sk_nft_close). */
SK_MUST_USE int sk_nft_open(struct sk_nft **out, struct sk_err *err);
void sk_nft_close(struct sk_nft *nft);

struct sk_nft_stats {
	size_t messages;       /* netlink messages in the batch (begin/end excluded) */
	size_t batch_bytes;
};

/* Replaces table inet stockade with rs in ONE transaction, on nft's socket (NULL: a socket of its own): add table (creates it if missing), delete
 * it, add it again with its counters, sets, elements, chains and rules. Either all of it is committed
 * or nothing changes. st may be NULL. Errors name the message the kernel refused; EPERM is reported as
 * a missing CAP_NET_ADMIN, EOPNOTSUPP/EPROTONOSUPPORT as nf_tables being unavailable. */
SK_MUST_USE int sk_nft_apply(struct sk_nft *nft, const struct sk_ruleset *rs, struct sk_nft_stats *st, struct sk_err *err);

/* Removes table inet stockade in one transaction (add table, delete table: 0 whether or not it existed,
 * so a repeated removal succeeds). For stockade-cni's DEL. */
SK_MUST_USE int sk_nft_remove(struct sk_nft *nft, struct sk_err *err);

/* Dumps the live table (chains, rules, sets and their elements, counters) and compares it with rs, on
 * nft's socket (NULL: a socket of its own; a retry after a transient difference always opens a fresh one,
 * since an interrupted dump can leave replies behind).
 * 0: identical. -SK_NFT_MISMATCH: differs, err names the first difference. -ENOENT: no table.
 * Other negative errno: netlink failure. */
SK_MUST_USE int sk_nft_verify(struct sk_nft *nft, const struct sk_ruleset *rs, struct sk_err *err);

#endif
