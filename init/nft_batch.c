/* init/nft_batch.c — sk_nft_apply: the whole ruleset as one nfnetlink batch (NLM_F_ACK on every message),
 * sent once, and every NLMSG_ERROR reply routed back to the message that caused it (each message's name
 * is kept by sequence number). Objects come from nft_expr.c, the socket from nft.c. See nft.h. */
#include "init/nft.h"

#include <errno.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "common/util.h"
#include "init/nft_expr.h"
#include "init/nft_internal.h"

#define FAMILY SK_NFT_FAMILY
#define ELEMS_PER_MSG 256
#define WHAT_MAX 96

struct batch {
	char *buf;
	size_t cap;
	struct mnl_nlmsg_batch *b;
	uint32_t seq0, seq;        /* seq0: the begin message; replies carry seq0+1 .. seq-1 */
	char (*what)[WHAT_MAX];    /* what[seq - seq0]: names the message for errors */
	size_t n_what;
	bool overflow;
};

static struct nlmsghdr *msg_start(struct batch *bt, uint16_t type, uint16_t flags, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct nlmsghdr *msg_start(struct batch *bt, uint16_t type, uint16_t flags, const char *fmt, ...)
{
	size_t idx = bt->seq - bt->seq0;
	if (idx >= bt->n_what) {
		bt->overflow = true;
		return NULL;
	}
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(bt->what[idx], WHAT_MAX, fmt, ap);
	va_end(ap);
	return nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(bt->b), type, FAMILY, flags | NLM_F_ACK, bt->seq++);
}

static void msg_end(struct batch *bt)
{
	if (!mnl_nlmsg_batch_next(bt->b))
		bt->overflow = true;
}

struct ack_state {
	const struct batch *bt;
	size_t acked;
	int first_err;             /* positive errno of the first failed message, 0 none */
	uint32_t first_seq;
	char ext[160];             /* kernel's extack text, if any */
	bool begin_failed;         /* refused before the batch ran: no other replies will come */
};

static int ack_cb(const struct nlmsghdr *nlh, void *data)
{
	struct ack_state *st = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
		return MNL_CB_OK;
	uint32_t seq = e->msg.nlmsg_seq;
	st->acked++;
	if (e->error != 0 && st->first_err == 0) {
		st->first_err = -e->error;
		st->first_seq = seq;
		/* the TLVs follow the echoed message, which is only its header when NETLINK_CAP_ACK took */
		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) && (nlh->nlmsg_flags & NLM_F_CAPPED)) {
			size_t off = sizeof(*e);
			const struct nlattr *a;
			mnl_attr_for_each(a, nlh, off)
				if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG)
					(void)snprintf(st->ext, sizeof(st->ext), "%s", mnl_attr_get_str(a));
		}
	}
	if (seq == st->bt->seq0)
		st->begin_failed = true;
	return MNL_CB_OK;
}

static int build_batch(const struct sk_ruleset *rs, struct batch *bt)
{
	struct nlmsghdr *nlh;

	nftnl_batch_begin(mnl_nlmsg_batch_current(bt->b), bt->seq++);
	msg_end(bt);

	struct nftnl_table *t = sk_nft_build_table();
	if (!t)
		return -ENOMEM;
	/* add (creates it when missing, so the delete cannot fail) + delete + add: one transaction, so
	 * there is never a moment without the table, and racing inits serialise on the commit mutex */
	if ((nlh = msg_start(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE, "add table (ensure it exists)"))) {
		nftnl_table_nlmsg_build_payload(nlh, t);
		msg_end(bt);
	}
	if ((nlh = msg_start(bt, NFT_MSG_DELTABLE, 0, "delete table (old ruleset)"))) {
		nftnl_table_nlmsg_build_payload(nlh, t);
		msg_end(bt);
	}
	if (!rs) {
		/* removal only (sk_nft_remove): the add above makes the delete succeed on a netns without it */
		nftnl_table_free(t);
		goto end;
	}
	if ((nlh = msg_start(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL, "add table"))) {
		nftnl_table_nlmsg_build_payload(nlh, t);
		msg_end(bt);
	}
	nftnl_table_free(t);

	for (int i = 0; i < SK_RS_N_COUNTERS; i++) {
		struct nftnl_obj *o = sk_nft_build_counter(i);
		if (!o)
			return -ENOMEM;
		if ((nlh = msg_start(bt, NFT_MSG_NEWOBJ, NLM_F_CREATE, "add counter %s", sk_rs_counter_name(i)))) {
			nftnl_obj_nlmsg_build_payload(nlh, o);
			msg_end(bt);
		}
		nftnl_obj_free(o);
	}

	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		struct nftnl_set *ns = sk_nft_build_set(s);
		if (!ns)
			return -ENOMEM;
		if ((nlh = msg_start(bt, NFT_MSG_NEWSET, NLM_F_CREATE, "add set %s", s->name))) {
			nftnl_set_nlmsg_build_payload(nlh, ns);
			msg_end(bt);
		}
		nftnl_set_free(ns);
		for (size_t from = 0; from < s->n_elems; from += ELEMS_PER_MSG) {
			size_t to = from + ELEMS_PER_MSG < s->n_elems ? from + ELEMS_PER_MSG : s->n_elems;
			char first[160];
			sk_rs_elem_format(s, &s->elems[from], first, sizeof(first));
			if ((nlh = msg_start(bt, NFT_MSG_NEWSETELEM, NLM_F_CREATE, "add elements %zu-%zu to set %s (%.40s...)",
					     from + 1, to, s->name, first))) {
				sk_nft_put_elems(nlh, s, from, to);
				msg_end(bt);
			}
		}
	}

	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		const struct sk_rs_chain *ch = &rs->chains[c];
		struct nftnl_chain *nc = sk_nft_build_chain(ch);
		if (!nc)
			return -ENOMEM;
		if ((nlh = msg_start(bt, NFT_MSG_NEWCHAIN, NLM_F_CREATE, "add chain %s", ch->name))) {
			nftnl_chain_nlmsg_build_payload(nlh, nc);
			msg_end(bt);
		}
		nftnl_chain_free(nc);
	}

	for (size_t i = 0; i < rs->n_rules; i++) {
		const struct sk_rs_rule *r = &rs->rules[i];
		struct nftnl_rule *nr = sk_nft_build_rule(rs, r);
		if (!nr)
			return -ENOMEM;
		if ((nlh = msg_start(bt, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, "add rule %s/%s",
				     rs->chains[r->chain].name, r->name))) {
			nftnl_rule_nlmsg_build_payload(nlh, nr);
			msg_end(bt);
		}
		nftnl_rule_free(nr);
	}

end:
	nftnl_batch_end(mnl_nlmsg_batch_current(bt->b), bt->seq++);
	msg_end(bt);
	return bt->overflow ? -ENOBUFS : 0;
}

/* rs NULL: the removal batch (begin, add table, delete table, end) */
static int run_batch(struct sk_nft *nft, const struct sk_ruleset *rs, struct sk_nft_stats *stats, struct sk_err *err)
{
	struct mnl_socket *own = NULL, *nl = nft ? nft->nl : NULL;
	struct batch bt = { 0 };
	char *rbuf = NULL;
	int rc = 0;

	size_t n_elems = rs ? sk_ruleset_n_elems(rs) : 0, n_rules = rs ? rs->n_rules : 0;
	/* generous upper bounds: a rule message is < 1 KiB, an element < 96 bytes */
	bt.n_what = 16 + SK_RS_N_COUNTERS + 2 * SK_RS_N_SETS + SK_RS_N_CHAINS + n_rules +
		    n_elems / ELEMS_PER_MSG + SK_RS_N_SETS;
	size_t limit = 65536 + n_rules * 1024 + n_elems * 128 + bt.n_what * 256;
	bt.cap = limit + 2 * MNL_SOCKET_BUFFER_SIZE + 65536;
	bt.buf = calloc(1, bt.cap);
	bt.what = calloc(bt.n_what, sizeof(*bt.what));
	if (!bt.buf || !bt.what) {
		rc = sk_err_sys(err, ENOMEM, "nft batch: allocate");
		goto out;
	}
	bt.b = mnl_nlmsg_batch_start(bt.buf, limit);
	if (!bt.b) {
		rc = sk_err_sys(err, ENOMEM, "nft batch: allocate");
		goto out;
	}
	bt.seq0 = bt.seq = (uint32_t)time(NULL);
	rc = build_batch(rs, &bt);
	if (rc < 0) {
		rc = sk_err_sys(err, -rc, "nft batch: build");
		goto out;
	}
	size_t n_msgs = bt.seq - bt.seq0 - 2;
	size_t len = mnl_nlmsg_batch_size(bt.b);
	if (stats) {
		stats->messages = n_msgs;
		stats->batch_bytes = len;
	}

	if (!nl) {
		rc = sk_nft_open_socket(&own, err);
		if (rc < 0)
			goto out;
		nl = own;
	}
	sk_nft_grow_bufs(nl, len * 2 + n_msgs * 512 + 65536);
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(bt.b), len) < 0) {
		int e = errno;
		rc = sk_err_set(err, e, "nft batch: send %zu bytes: %s%s", len, strerror(e), sk_nft_explain_errno(e));
		goto out;
	}

	struct ack_state st = { .bt = &bt };
	mnl_cb_t ctl[NLMSG_MIN_TYPE] = { [NLMSG_ERROR] = ack_cb };
	rbuf = malloc(65536);
	if (!rbuf) {
		rc = sk_err_sys(err, ENOMEM, "nft batch: allocate");
		goto out;
	}
	uint32_t portid = mnl_socket_get_portid(nl);
	while (st.acked < n_msgs && !st.begin_failed) {
		ssize_t n = mnl_socket_recvfrom(nl, rbuf, 65536);
		if (n < 0) {
			int e = errno;
			rc = sk_err_set(err, e, "nft batch: read acks (%zu of %zu received): %s", st.acked, n_msgs,
					e == EAGAIN ? "timed out" : strerror(e));
			goto out;
		}
		if (mnl_cb_run2(rbuf, (size_t)n, 0, portid, NULL, &st, ctl, SK_ARRAY_SIZE(ctl)) < 0 &&
		    errno != 0 && st.first_err == 0) {
			int e = errno;
			rc = sk_err_sys(err, e, "nft batch: parse acks");
			goto out;
		}
	}
	if (st.first_err) {
		size_t idx = st.first_seq - bt.seq0;
		const char *what = idx < bt.n_what ? bt.what[idx] : "unknown message";
		if (idx == 0)
			what = "begin transaction";
		rc = sk_err_set(err, st.first_err, "nft batch: %s: %s%s%s%s", what, strerror(st.first_err),
				st.ext[0] ? " (kernel: " : "", st.ext, st.ext[0] ? ")" : "");
		/* explanation appended separately so the kernel text stays first */
		size_t ml = strlen(err ? err->msg : "");
		if (err && ml < sizeof(err->msg))
			(void)snprintf(err->msg + ml, sizeof(err->msg) - ml, "%s", sk_nft_explain_errno(st.first_err));
		goto out;
	}
out:
	if (own)
		mnl_socket_close(own);
	if (bt.b)
		mnl_nlmsg_batch_stop(bt.b);
	free(bt.buf);
	free(bt.what);
	free(rbuf);
	return rc;
}

int sk_nft_apply(struct sk_nft *nft, const struct sk_ruleset *rs, struct sk_nft_stats *stats, struct sk_err *err)
{
	return run_batch(nft, rs, stats, err);
}

int sk_nft_remove(struct sk_nft *nft, struct sk_err *err)
{
	return run_batch(nft, NULL, NULL, err);
}
