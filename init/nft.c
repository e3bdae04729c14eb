/* init/nft.c — the netlink socket shared by the batch (nft_batch.c) and the read-back (nft_verify.c), and
 * the hints appended to their errors. The loader is split by concern, each file's header saying what it
 * owns: nft_expr (ruleset as libnftnl objects), nft_batch (sk_nft_apply: one batch, send, ack routing),
 * nft_verify (sk_nft_verify: dumps and comparison). See nft.h for the API, nft_internal.h for this file. */
#include "init/nft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <libmnl/libmnl.h>

#include "init/nft_internal.h"

int sk_nft_open_socket(struct mnl_socket **out, struct sk_err *err)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!nl) {
		int e = errno;
		if (e == EPROTONOSUPPORT || e == EAFNOSUPPORT)
			return sk_err_set(err, e, "nft: netlink socket: nf_tables is unavailable in this kernel "
					  "(no nfnetlink): %s", strerror(e));
		return sk_err_sys(err, e, "nft: open netlink socket");
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(nl);
		return sk_err_sys(err, e, "nft: bind netlink socket");
	}
	int one = 1, fd = mnl_socket_get_fd(nl);
	/* short acks (no echo of our message) with the kernel's own error text where it has one; both are
	 * optional (a kernel without them only costs the kernel's text: the ack parser checks NLM_F_CAPPED) */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	/* not optional: without it a lost ack or dump reply blocks recvfrom, and the init, forever */
	struct timeval tv = { .tv_sec = SK_NFT_RECV_TIMEOUT_S };
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		int e = errno;
		mnl_socket_close(nl);
		return sk_err_sys(err, e, "nft: set netlink receive timeout");
	}
	*out = nl;
	return 0;
}

int sk_nft_open(struct sk_nft **out, struct sk_err *err)
{
	*out = NULL;
	struct sk_nft *nft = calloc(1, sizeof(*nft));
	if (!nft)
		return sk_err_sys(err, ENOMEM, "nft: open netlink socket");
	int rc = sk_nft_open_socket(&nft->nl, err);
	if (rc < 0) {
		free(nft);
		return rc;
	}
	*out = nft;
	return 0;
}

void sk_nft_close(struct sk_nft *nft)
{
	if (!nft)
		return;
	mnl_socket_close(nft->nl);
	free(nft);
}

void sk_nft_grow_bufs(struct mnl_socket *nl, size_t bytes)
{
	int fd = mnl_socket_get_fd(nl);
	int v = bytes > (size_t)(1 << 28) ? 1 << 28 : (int)bytes;
	/* FORCE needs CAP_NET_ADMIN, which loading the table needs anyway; the plain option is the
	 * fallback for --check run without it; a buffer left small shows as ENOBUFS/EMSGSIZE on the send or
	 * the acks, reported there */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

const char *sk_nft_explain_errno(int e)
{
	switch (e) {
	case EPERM:
		return " (stockade-init needs CAP_NET_ADMIN in the pod's network namespace)";
	case EOPNOTSUPP:
	case EPROTONOSUPPORT:
		return " (nf_tables is unavailable in this kernel)";
	case ENOENT:
		return " (a kernel module this ruleset needs may be missing: nft_chain_nat, nft_redir, "
		       "nft_reject_inet, nft_ct, nft_objref, nft_set_pipapo)";
	default:
		return "";
	}
}
