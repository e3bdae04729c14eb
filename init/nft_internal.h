/* init/nft_internal.h — private to the nft loader (nft.c, nft_batch.c, nft_verify.c): the netlink socket
 * they share, defined in nft.c. Nothing outside init/nft*.c includes it; the API is nft.h. */
#ifndef SK_INIT_NFT_INTERNAL_H
#define SK_INIT_NFT_INTERNAL_H

#include <stddef.h>

#include "common/err.h"

struct mnl_socket;

#define SK_NFT_RECV_TIMEOUT_S 30

struct sk_nft {
	struct mnl_socket *nl;
};
#define SK_NFT_DUMP_BUF_SIZE 65536   /* dump replies come in multi-message datagrams up to this size */

/* Opens and binds a NETLINK_NETFILTER socket with short extended acks and a receive timeout of
 * SK_NFT_RECV_TIMEOUT_S (a lost reply fails with EAGAIN instead of hanging the init). *out is owned by the
 * caller (mnl_socket_close). */
int sk_nft_open_socket(struct mnl_socket **out, struct sk_err *err);
/* Best effort: raises both socket buffers towards bytes, so a large batch and its acks fit. */
void sk_nft_grow_bufs(struct mnl_socket *nl, size_t bytes);
/* A parenthesised hint for errno e ("" when none), appended to netlink error messages. Static storage. */
const char *sk_nft_explain_errno(int e);

#endif
