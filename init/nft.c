/* init/nft.c — renders a struct sk_ruleset as libnftnl objects, sends them as one nfnetlink batch and
 * reads the table back to verify it. See nft.h. */
#include "init/nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "common/util.h"

#define FAMILY NFPROTO_INET
#define ELEMS_PER_MSG 256
#define WHAT_MAX 96
#define RECV_TIMEOUT_S 30
#define DUMP_BUF_SIZE 65536   /* dump replies come in multi-message datagrams up to this size */

/* nft's datatype numbers, stored as set key types so `nft list` shows the sets readably. */
enum { T_IPADDR = 7, T_IP6ADDR = 8, T_INET_PROTO = 12, T_INET_SERVICE = 13, T_UID = 24, T_ICMP6 = 29 };
#define T_CONCAT3(a, b, c) ((((a) << 6 | (b)) << 6) | (c))
enum { BO_HOST = 1, BO_BIG = 2 };  /* nft's byteorder, for the KEYBYTEORDER set userdata */

/* ---- expressions ---- */

struct rule_ctx {
	struct nftnl_rule *r;
	bool oom;
};

static struct nftnl_expr *ex(struct rule_ctx *c, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);
	if (!e) {
		c->oom = true;
		return NULL;
	}
	nftnl_rule_add_expr(c->r, e);
	return e;
}

static void e_meta(struct rule_ctx *c, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = ex(c, "meta");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
}

static void e_cmp(struct rule_ctx *c, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = ex(c, "cmp");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
}

static void e_cmp_u32(struct rule_ctx *c, uint32_t op, uint32_t v) { e_cmp(c, op, &v, sizeof(v)); }
static void e_cmp_u8(struct rule_ctx *c, uint8_t v) { e_cmp(c, NFT_CMP_EQ, &v, sizeof(v)); }

static void e_payload(struct rule_ctx *c, uint32_t base, uint32_t off, uint32_t len, uint32_t dreg)
{
	struct nftnl_expr *e = ex(c, "payload");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
}

static void e_lookup(struct rule_ctx *c, uint32_t sreg, const struct sk_rs_set *s)
{
	struct nftnl_expr *e = ex(c, "lookup");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, sreg);
	nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, s->name);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, (uint32_t)s->id + 1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, 0);  /* the kernel reports it; so must we */
}

/* reg1 = reg1 & mask; reg1 != 0 */
static void e_mask_nonzero(struct rule_ctx *c, uint32_t mask)
{
	uint32_t zero = 0;
	struct nftnl_expr *e = ex(c, "bitwise");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, sizeof(uint32_t));
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask));
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, sizeof(zero));
	e_cmp_u32(c, NFT_CMP_NEQ, 0);
}

static void e_ct(struct rule_ctx *c, uint32_t key)
{
	struct nftnl_expr *e = ex(c, "ct");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
}

/* The n-th 32-bit register, numbered as the kernel dumps it (a 32-bit register that starts a 128-bit
 * one is reported as the 128-bit one), so read-back comparison sees the same number. */
static uint32_t reg32(uint32_t n)
{
	return n % 4 == 0 ? NFT_REG_1 + n / 4 : NFT_REG32_00 + n;
}

static void add_match(struct rule_ctx *c, const struct sk_ruleset *rs, const struct sk_rs_match *m)
{
	const struct sk_rs_set *s = &rs->sets[m->set];
	switch (m->kind) {
	case SK_RS_M_SKUID:
	case SK_RS_M_SKUID_NE:
		e_meta(c, NFT_META_SKUID, NFT_REG_1);
		e_cmp_u32(c, m->kind == SK_RS_M_SKUID ? NFT_CMP_EQ : NFT_CMP_NEQ, m->val);
		break;
	case SK_RS_M_SKUID_ANY:
		/* meta breaks the rule when there is no socket; when there is one, >= 0 always holds */
		e_meta(c, NFT_META_SKUID, NFT_REG_1);
		e_cmp_u32(c, NFT_CMP_GTE, 0);
		break;
	case SK_RS_M_SKUID_SET:
		e_meta(c, NFT_META_SKUID, NFT_REG_1);
		e_lookup(c, NFT_REG_1, s);
		break;
	case SK_RS_M_NFPROTO:
		e_meta(c, NFT_META_NFPROTO, NFT_REG_1);
		e_cmp_u8(c, (uint8_t)m->val);
		break;
	case SK_RS_M_L4PROTO:
		e_meta(c, NFT_META_L4PROTO, NFT_REG_1);
		e_cmp_u8(c, (uint8_t)m->val);
		break;
	case SK_RS_M_DPORT: {
		uint16_t be = htons((uint16_t)m->val);
		e_payload(c, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1);
		e_cmp(c, NFT_CMP_EQ, &be, sizeof(be));
		break;
	}
	case SK_RS_M_DPORT_SET:
		e_payload(c, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1);
		e_lookup(c, NFT_REG_1, s);
		break;
	case SK_RS_M_OIF_LO:
		e_meta(c, NFT_META_OIF, NFT_REG_1);
		e_cmp_u32(c, NFT_CMP_EQ, 1);
		break;
	case SK_RS_M_CT_EST_REL:
		e_ct(c, NFT_CT_STATE);
		e_mask_nonzero(c, NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED));
		break;
	case SK_RS_M_CT_DNAT:
		e_ct(c, NFT_CT_STATUS);
		e_mask_nonzero(c, IPS_DST_NAT);
		break;
	case SK_RS_M_ICMPV6_SET:
		e_payload(c, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1, NFT_REG_1);
		e_lookup(c, NFT_REG_1, s);
		break;
	case SK_RS_M_DIRECT_SET: {
		/* the concatenation lives in consecutive 32-bit registers, each field padded to 4 bytes,
		 * exactly as the set's key is laid out (see elem_key) */
		bool v6 = m->set == SK_RS_SET_DIRECT6;
		uint32_t words = v6 ? 4 : 1;
		e_payload(c, NFT_PAYLOAD_NETWORK_HEADER, v6 ? 24 : 16, v6 ? 16 : 4, reg32(0));
		e_meta(c, NFT_META_L4PROTO, reg32(words));
		e_payload(c, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, reg32(words + 1));
		e_lookup(c, reg32(0), s);
		break;
	}
	}
}

static void e_verdict(struct rule_ctx *c, int verdict)
{
	struct nftnl_expr *e = ex(c, "immediate");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
}

static void e_reject(struct rule_ctx *c, uint32_t type, uint8_t code)
{
	struct nftnl_expr *e = ex(c, "reject");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
}

/* returns owned; NULL on allocation failure */
static struct nftnl_rule *build_rule(const struct sk_ruleset *rs, const struct sk_rs_rule *r)
{
	struct rule_ctx c = { .r = nftnl_rule_alloc() };
	if (!c.r)
		return NULL;
	nftnl_rule_set_u32(c.r, NFTNL_RULE_FAMILY, FAMILY);
	nftnl_rule_set_str(c.r, NFTNL_RULE_TABLE, SK_RS_TABLE);
	nftnl_rule_set_str(c.r, NFTNL_RULE_CHAIN, rs->chains[r->chain].name);

	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(256);
	if (!ud || !nftnl_udata_put_strz(ud, NFTNL_UDATA_RULE_COMMENT, r->name)) {
		nftnl_udata_buf_free(ud);
		nftnl_rule_free(c.r);
		return NULL;
	}
	nftnl_rule_set_data(c.r, NFTNL_RULE_USERDATA, nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud));
	nftnl_udata_buf_free(ud);

	for (size_t i = 0; i < r->n_m; i++)
		add_match(&c, rs, &r->m[i]);
	if (r->counter != SK_RS_CNT_NONE) {
		struct nftnl_expr *e = ex(&c, "objref");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
			nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, sk_rs_counter_name(r->counter));
		}
	}
	switch (r->verdict) {
	case SK_RS_ACCEPT:
		e_verdict(&c, NF_ACCEPT);
		break;
	case SK_RS_RETURN:
		e_verdict(&c, NFT_RETURN);
		break;
	case SK_RS_REDIRECT: {
		uint16_t be = htons(r->redirect_port);
		struct nftnl_expr *e = ex(&c, "immediate");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
			nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &be, sizeof(be));
		}
		e = ex(&c, "redir");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MAX, NFT_REG_1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
		}
		break;
	}
	case SK_RS_REJECT_TCP:
		e_reject(&c, NFT_REJECT_TCP_RST, 0);
		break;
	case SK_RS_REJECT_ADMIN:
		e_reject(&c, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
		break;
	case SK_RS_DROP:
		e_verdict(&c, NF_DROP);
		break;
	}
	if (c.oom) {
		nftnl_rule_free(c.r);
		return NULL;
	}
	return c.r;
}

/* ---- sets ---- */

static bool is_direct(const struct sk_rs_set *s)
{
	return s->id == SK_RS_SET_DIRECT4 || s->id == SK_RS_SET_DIRECT6;
}

static uint32_t set_key_len(const struct sk_rs_set *s)
{
	switch (s->id) {
	case SK_RS_SET_EXEMPT: return 4;
	case SK_RS_SET_LOPORTS: return 2;
	case SK_RS_SET_ND:
	case SK_RS_SET_MLD: return 1;
	case SK_RS_SET_DIRECT4: return 4 + 4 + 4;
	case SK_RS_SET_DIRECT6: return 16 + 4 + 4;
	case SK_RS_N_SETS: break;
	}
	return 0;
}

/* Key bytes of e as the kernel compares them (register layout). hi selects the range end. */
static uint32_t elem_key(const struct sk_rs_set *s, const struct sk_rs_elem *e, bool hi, uint8_t out[24])
{
	memset(out, 0, 24);
	switch (s->id) {
	case SK_RS_SET_EXEMPT:
		memcpy(out, &e->val, 4);  /* meta skuid is host byte order */
		return 4;
	case SK_RS_SET_LOPORTS: {
		uint16_t be = htons((uint16_t)e->val);
		memcpy(out, &be, 2);
		return 2;
	}
	case SK_RS_SET_ND:
	case SK_RS_SET_MLD:
		out[0] = (uint8_t)e->val;
		return 1;
	case SK_RS_SET_DIRECT4:
	case SK_RS_SET_DIRECT6: {
		size_t alen = s->id == SK_RS_SET_DIRECT6 ? 16 : 4;
		uint16_t be = htons(hi ? e->port_hi : e->port_lo);
		memcpy(out, hi ? e->addr_hi : e->addr_lo, alen);
		out[alen] = e->proto;
		memcpy(out + alen + 4, &be, 2);
		return (uint32_t)alen + 8;
	}
	case SK_RS_N_SETS:
		break;
	}
	return 0;
}

/* returns owned; NULL on allocation failure */
static struct nftnl_set *build_set(const struct sk_rs_set *s)
{
	struct nftnl_set *ns = nftnl_set_alloc();
	if (!ns)
		return NULL;
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, FAMILY);
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, SK_RS_TABLE);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, s->name);
	nftnl_set_set_u32(ns, NFTNL_SET_ID, (uint32_t)s->id + 1);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_LEN, set_key_len(s));
	uint32_t type = 0, flags = 0;
	uint32_t bo = BO_BIG;
	switch (s->id) {
	case SK_RS_SET_EXEMPT: type = T_UID; bo = BO_HOST; break;
	case SK_RS_SET_LOPORTS: type = T_INET_SERVICE; break;
	case SK_RS_SET_ND:
	case SK_RS_SET_MLD: type = T_ICMP6; break;
	case SK_RS_SET_DIRECT4:
		type = T_CONCAT3(T_IPADDR, T_INET_PROTO, T_INET_SERVICE);
		flags = NFT_SET_INTERVAL | NFT_SET_CONCAT;
		break;
	case SK_RS_SET_DIRECT6:
		type = T_CONCAT3(T_IP6ADDR, T_INET_PROTO, T_INET_SERVICE);
		flags = NFT_SET_INTERVAL | NFT_SET_CONCAT;
		break;
	case SK_RS_N_SETS: break;
	}
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_TYPE, type);
	nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, flags);
	if (is_direct(s)) {
		uint8_t fields[3] = { s->id == SK_RS_SET_DIRECT6 ? 16 : 4, 1, 2 };
		nftnl_set_set_data(ns, NFTNL_SET_DESC_CONCAT, fields, sizeof(fields));
	}
	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(64);
	if (!ud || !nftnl_udata_put_u32(ud, NFTNL_UDATA_SET_KEYBYTEORDER, bo)) {
		nftnl_udata_buf_free(ud);
		nftnl_set_free(ns);
		return NULL;
	}
	nftnl_set_set_data(ns, NFTNL_SET_USERDATA, nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud));
	nftnl_udata_buf_free(ud);
	return ns;
}

/* A set object carrying elements [from, to) of s, for one NEWSETELEM message. Returns owned. */
static struct nftnl_set *build_elems(const struct sk_rs_set *s, size_t from, size_t to)
{
	struct nftnl_set *ns = nftnl_set_alloc();
	if (!ns)
		return NULL;
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, FAMILY);
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, SK_RS_TABLE);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, s->name);
	nftnl_set_set_u32(ns, NFTNL_SET_ID, (uint32_t)s->id + 1);
	for (size_t i = from; i < to; i++) {
		uint8_t key[24];
		struct nftnl_set_elem *e = nftnl_set_elem_alloc();
		if (!e) {
			nftnl_set_free(ns);
			return NULL;
		}
		uint32_t len = elem_key(s, &s->elems[i], false, key);
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, len);
		if (is_direct(s)) {
			len = elem_key(s, &s->elems[i], true, key);
			nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY_END, key, len);
		}
		nftnl_set_elem_add(ns, e);
	}
	return ns;
}

/* ---- socket ---- */

static int open_socket(struct mnl_socket **out, struct sk_err *err)
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
	int one = 1;
	/* short acks (no echo of our message) with the kernel's own error text where it has one */
	setsockopt(mnl_socket_get_fd(nl), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(mnl_socket_get_fd(nl), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_S };
	setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	*out = nl;
	return 0;
}

static void grow_bufs(struct mnl_socket *nl, size_t bytes)
{
	int fd = mnl_socket_get_fd(nl);
	int v = bytes > (size_t)(1 << 28) ? 1 << 28 : (int)bytes;
	/* FORCE needs CAP_NET_ADMIN, which loading the table needs anyway; the plain option is the
	 * fallback for --check run without it */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

static const char *explain_errno(int e)
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

/* ---- apply ---- */

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
	vsnprintf(bt->what[idx], WHAT_MAX, fmt, ap);
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
		if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
			size_t off = sizeof(*e);  /* NETLINK_CAP_ACK: the echoed message is only its header */
			const struct nlattr *a;
			mnl_attr_for_each(a, nlh, off)
				if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG)
					snprintf(st->ext, sizeof(st->ext), "%s", mnl_attr_get_str(a));
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

	struct nftnl_table *t = nftnl_table_alloc();
	if (!t)
		return -ENOMEM;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, FAMILY);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, SK_RS_TABLE);
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
	if ((nlh = msg_start(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL, "add table"))) {
		nftnl_table_nlmsg_build_payload(nlh, t);
		msg_end(bt);
	}
	nftnl_table_free(t);

	for (int i = 0; i < SK_RS_N_COUNTERS; i++) {
		struct nftnl_obj *o = nftnl_obj_alloc();
		if (!o)
			return -ENOMEM;
		nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, FAMILY);
		nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, SK_RS_TABLE);
		nftnl_obj_set_str(o, NFTNL_OBJ_NAME, sk_rs_counter_name(i));
		nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
		if ((nlh = msg_start(bt, NFT_MSG_NEWOBJ, NLM_F_CREATE, "add counter %s", sk_rs_counter_name(i)))) {
			nftnl_obj_nlmsg_build_payload(nlh, o);
			msg_end(bt);
		}
		nftnl_obj_free(o);
	}

	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		struct nftnl_set *ns = build_set(s);
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
			struct nftnl_set *es = build_elems(s, from, to);
			if (!es)
				return -ENOMEM;
			if ((nlh = msg_start(bt, NFT_MSG_NEWSETELEM, NLM_F_CREATE, "add elements %zu-%zu to set %s (%.40s...)",
					     from + 1, to, s->name, first))) {
				nftnl_set_elems_nlmsg_build_payload(nlh, es);
				msg_end(bt);
			}
			nftnl_set_free(es);
		}
	}

	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		const struct sk_rs_chain *ch = &rs->chains[c];
		struct nftnl_chain *nc = nftnl_chain_alloc();
		if (!nc)
			return -ENOMEM;
		nftnl_chain_set_u32(nc, NFTNL_CHAIN_FAMILY, FAMILY);
		nftnl_chain_set_str(nc, NFTNL_CHAIN_TABLE, SK_RS_TABLE);
		nftnl_chain_set_str(nc, NFTNL_CHAIN_NAME, ch->name);
		nftnl_chain_set_u32(nc, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
		nftnl_chain_set_s32(nc, NFTNL_CHAIN_PRIO, ch->priority);
		nftnl_chain_set_str(nc, NFTNL_CHAIN_TYPE, ch->type);
		nftnl_chain_set_u32(nc, NFTNL_CHAIN_POLICY, NF_ACCEPT);
		if ((nlh = msg_start(bt, NFT_MSG_NEWCHAIN, NLM_F_CREATE, "add chain %s", ch->name))) {
			nftnl_chain_nlmsg_build_payload(nlh, nc);
			msg_end(bt);
		}
		nftnl_chain_free(nc);
	}

	for (size_t i = 0; i < rs->n_rules; i++) {
		const struct sk_rs_rule *r = &rs->rules[i];
		struct nftnl_rule *nr = build_rule(rs, r);
		if (!nr)
			return -ENOMEM;
		if ((nlh = msg_start(bt, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, "add rule %s/%s",
				     rs->chains[r->chain].name, r->name))) {
			nftnl_rule_nlmsg_build_payload(nlh, nr);
			msg_end(bt);
		}
		nftnl_rule_free(nr);
	}

	nftnl_batch_end(mnl_nlmsg_batch_current(bt->b), bt->seq++);
	msg_end(bt);
	return bt->overflow ? -ENOBUFS : 0;
}

int sk_nft_apply(const struct sk_ruleset *rs, struct sk_nft_stats *stats, struct sk_err *err)
{
	struct mnl_socket *nl = NULL;
	struct batch bt = { 0 };
	char *rbuf = NULL;
	int rc = 0;

	size_t n_elems = sk_ruleset_n_elems(rs);
	/* generous upper bounds: a rule message is < 1 KiB, an element < 96 bytes */
	bt.n_what = 16 + SK_RS_N_COUNTERS + 2 * SK_RS_N_SETS + SK_RS_N_CHAINS + rs->n_rules +
		    n_elems / ELEMS_PER_MSG + SK_RS_N_SETS;
	size_t limit = 65536 + rs->n_rules * 1024 + n_elems * 128 + bt.n_what * 256;
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

	rc = open_socket(&nl, err);
	if (rc < 0)
		goto out;
	grow_bufs(nl, len * 2 + n_msgs * 512 + 65536);
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(bt.b), len) < 0) {
		int e = errno;
		rc = sk_err_set(err, e, "nft batch: send %zu bytes: %s%s", len, strerror(e), explain_errno(e));
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
			snprintf(err->msg + ml, sizeof(err->msg) - ml, "%s", explain_errno(st.first_err));
		goto out;
	}
out:
	if (nl)
		mnl_socket_close(nl);
	if (bt.b)
		mnl_nlmsg_batch_stop(bt.b);
	free(bt.buf);
	free(bt.what);
	free(rbuf);
	return rc;
}

/* ---- read back ---- */

typedef int (*dump_cb)(const struct nlmsghdr *nlh, void *data);

/* Sends one dump request (built by the caller into buf) and runs cb on every reply. */
static int dump(struct mnl_socket *nl, char *buf, const struct nlmsghdr *req, dump_cb cb, void *data,
		const char *what, struct sk_err *err)
{
	uint32_t seq = req->nlmsg_seq, portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0)
		return sk_err_sys(err, errno, "nft read back: %s: send", what);
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, DUMP_BUF_SIZE);
		if (n < 0)
			return sk_err_sys(err, errno, "nft read back: %s: receive", what);
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (r == MNL_CB_STOP)
			return 0;
		if (r < 0) {
			int e = errno;
			if (e == ENOENT)
				return sk_err_set(err, ENOENT, "nft read back: %s: table %s %s not found",
						  what, SK_RS_FAMILY_NAME, SK_RS_TABLE);
			return sk_err_set(err, e, "nft read back: %s: %s%s", what, strerror(e), explain_errno(e));
		}
	}
}

struct obj_list {
	void **v;
	size_t n, cap;
	int oom;
};

static int list_push(struct obj_list *l, void *o)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void **nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = o;
	return 0;
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct obj_list *l = data;
	struct nftnl_chain *c = nftnl_chain_alloc();
	if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0 ||
	    strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), SK_RS_TABLE) != 0 || list_push(l, c) < 0) {
		if (!c)
			l->oom = 1;
		nftnl_chain_free(c);
	}
	return MNL_CB_OK;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct obj_list *l = data;
	struct nftnl_rule *r = nftnl_rule_alloc();
	if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0 ||
	    strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), SK_RS_TABLE) != 0 || list_push(l, r) < 0) {
		if (!r)
			l->oom = 1;
		nftnl_rule_free(r);
	}
	return MNL_CB_OK;
}

static int set_cb(const struct nlmsghdr *nlh, void *data)
{
	struct obj_list *l = data;
	struct nftnl_set *s = nftnl_set_alloc();
	if (!s || nftnl_set_nlmsg_parse(nlh, s) < 0 ||
	    strcmp(nftnl_set_get_str(s, NFTNL_SET_TABLE), SK_RS_TABLE) != 0 || list_push(l, s) < 0) {
		if (!s)
			l->oom = 1;
		nftnl_set_free(s);
	}
	return MNL_CB_OK;
}

static int obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct obj_list *l = data;
	struct nftnl_obj *o = nftnl_obj_alloc();
	if (!o || nftnl_obj_nlmsg_parse(nlh, o) < 0 ||
	    strcmp(nftnl_obj_get_str(o, NFTNL_OBJ_TABLE), SK_RS_TABLE) != 0 || list_push(l, o) < 0) {
		if (!o)
			l->oom = 1;
		nftnl_obj_free(o);
	}
	return MNL_CB_OK;
}

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	nftnl_set_elems_nlmsg_parse(nlh, data);
	return MNL_CB_OK;
}

static const char *rule_comment(const struct nftnl_rule *r, char *out, size_t len)
{
	uint32_t dlen = 0;
	const void *d = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &dlen);
	out[0] = '\0';
	if (!d)
		return out;
	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(dlen);
	if (!ud)
		return out;
	nftnl_udata_buf_put(ud, d, dlen);
	const struct nftnl_udata *a;
	nftnl_udata_for_each(ud, a) {
		if (nftnl_udata_type(a) == NFTNL_UDATA_RULE_COMMENT) {
			uint8_t l = nftnl_udata_len(a);
			snprintf(out, len, "%.*s", (int)l, (const char *)nftnl_udata_get(a));
		}
	}
	nftnl_udata_buf_free(ud);
	return out;
}

/* Compares expressions one by one through libnftnl's own printer, so every attribute counts. */
static int compare_rule(const struct nftnl_rule *want, const struct nftnl_rule *got, const char *where,
			struct sk_err *err)
{
	struct nftnl_expr_iter *iw = nftnl_expr_iter_create(want), *ig = nftnl_expr_iter_create(got);
	int rc = 0;
	if (!iw || !ig) {
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	for (size_t k = 1;; k++) {
		struct nftnl_expr *a = nftnl_expr_iter_next(iw), *b = nftnl_expr_iter_next(ig);
		if (!a && !b)
			break;
		char sa[256] = "(none)", sb[256] = "(none)";
		if (a)
			nftnl_expr_snprintf(sa, sizeof(sa), a, NFTNL_OUTPUT_DEFAULT, 0);
		if (b)
			nftnl_expr_snprintf(sb, sizeof(sb), b, NFTNL_OUTPUT_DEFAULT, 0);
		const char *na = a ? nftnl_expr_get_str(a, NFTNL_EXPR_NAME) : "";
		const char *nb = b ? nftnl_expr_get_str(b, NFTNL_EXPR_NAME) : "";
		if (!a || !b || strcmp(na, nb) != 0 || strcmp(sa, sb) != 0) {
			rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: %s: expression %zu is '%s %s', expected '%s %s'",
					where, k, nb, sb, na, sa);
			goto out;
		}
	}
out:
	if (iw)
		nftnl_expr_iter_destroy(iw);
	if (ig)
		nftnl_expr_iter_destroy(ig);
	return rc;
}

struct key_pair {
	uint8_t k[48];
};

static int cmp_key(const void *a, const void *b) { return memcmp(a, b, sizeof(struct key_pair)); }

struct elem_collect {
	struct key_pair *v;    /* NULL: count only */
	size_t n, cap;
	bool direct;
};

static int collect_elem(struct nftnl_set_elem *e, void *data)
{
	struct elem_collect *c = data;
	if (c->v && c->n < c->cap) {
		uint32_t len = 0;
		const void *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
		if (k)
			memcpy(c->v[c->n].k, k, len > 24 ? 24 : len);
		if (c->direct && (k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY_END, &len)))
			memcpy(c->v[c->n].k + 24, k, len > 24 ? 24 : len);
	}
	c->n++;
	return 0;
}

static int compare_elems(const struct sk_rs_set *s, struct nftnl_set *got, struct sk_err *err)
{
	struct elem_collect cnt = { 0 };
	nftnl_set_elem_foreach(got, collect_elem, &cnt);
	size_t n = cnt.n, i;
	if (n != s->n_elems)
		return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: %zu elements, expected %zu", s->name,
				  n, s->n_elems);
	if (n == 0)
		return 0;
	struct key_pair *w = calloc(n, sizeof(*w));
	struct key_pair *g = calloc(n, sizeof(*g));
	int rc = 0;
	if (!w || !g) {
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	for (i = 0; i < n; i++) {
		elem_key(s, &s->elems[i], false, w[i].k);
		if (is_direct(s))
			elem_key(s, &s->elems[i], true, w[i].k + 24);
	}
	struct elem_collect col = { .v = g, .cap = n, .direct = is_direct(s) };
	nftnl_set_elem_foreach(got, collect_elem, &col);
	qsort(w, n, sizeof(*w), cmp_key);
	qsort(g, n, sizeof(*g), cmp_key);
	for (i = 0; i < n && rc == 0; i++) {
		if (memcmp(&w[i], &g[i], sizeof(w[i])) == 0)
			continue;
		rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: elements differ", s->name);
		/* name an expected element that is missing (sorted order matches it up) */
		for (size_t j = 0; j < s->n_elems; j++) {
			struct key_pair kp = { { 0 } };
			elem_key(s, &s->elems[j], false, kp.k);
			if (is_direct(s))
				elem_key(s, &s->elems[j], true, kp.k + 24);
			if (!memcmp(&kp, &w[i], sizeof(kp))) {
				char buf[160];
				sk_rs_elem_format(s, &s->elems[j], buf, sizeof(buf));
				rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: element %s missing or changed",
						s->name, buf);
				break;
			}
		}
	}
out:
	free(w);
	free(g);
	return rc;
}

static void free_list(struct obj_list *l, void (*fr)(void *))
{
	for (size_t i = 0; i < l->n; i++)
		fr(l->v[i]);
	free(l->v);
}

static void fr_chain(void *p) { nftnl_chain_free(p); }
static void fr_rule(void *p) { nftnl_rule_free(p); }
static void fr_set(void *p) { nftnl_set_free(p); }
static void fr_obj(void *p) { nftnl_obj_free(p); }

static int verify_chains(const struct sk_ruleset *rs, struct obj_list *chains, struct sk_err *err)
{
	if (chains->n != SK_RS_N_CHAINS)
		return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: table has %zu chains, expected %d", chains->n,
				  SK_RS_N_CHAINS);
	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		const struct sk_rs_chain *ch = &rs->chains[c];
		const struct nftnl_chain *got = NULL;
		for (size_t i = 0; i < chains->n && !got; i++)
			if (!strcmp(nftnl_chain_get_str(chains->v[i], NFTNL_CHAIN_NAME), ch->name))
				got = chains->v[i];
		if (!got)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s missing", ch->name);
		if (!nftnl_chain_is_set(got, NFTNL_CHAIN_HOOKNUM) ||
		    nftnl_chain_get_u32(got, NFTNL_CHAIN_HOOKNUM) != NF_INET_LOCAL_OUT)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: not on the output hook", ch->name);
		if (nftnl_chain_get_s32(got, NFTNL_CHAIN_PRIO) != ch->priority)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: priority %d, expected %d",
					  ch->name, nftnl_chain_get_s32(got, NFTNL_CHAIN_PRIO), ch->priority);
		const char *type = nftnl_chain_get_str(got, NFTNL_CHAIN_TYPE);
		if (!type || strcmp(type, ch->type) != 0)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: type %s, expected %s", ch->name,
					  type ? type : "(none)", ch->type);
		if (nftnl_chain_get_u32(got, NFTNL_CHAIN_POLICY) != NF_ACCEPT)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: policy is not accept", ch->name);
	}
	return 0;
}

static int verify_rules(const struct sk_ruleset *rs, struct obj_list *rules, struct sk_err *err)
{
	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		const char *cname = rs->chains[c].name;
		size_t want = sk_ruleset_chain_rules(rs, c), got = 0;
		for (size_t i = 0; i < rules->n; i++)
			got += !strcmp(nftnl_rule_get_str(rules->v[i], NFTNL_RULE_CHAIN), cname);
		if (got != want)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: %zu rules, expected %zu", cname,
					  got, want);
		size_t gi = 0;
		for (size_t i = 0; i < rs->n_rules; i++) {
			const struct sk_rs_rule *r = &rs->rules[i];
			if (r->chain != c)
				continue;
			while (strcmp(nftnl_rule_get_str(rules->v[gi], NFTNL_RULE_CHAIN), cname) != 0)
				gi++;
			const struct nftnl_rule *g = rules->v[gi++];
			char comment[160], where[200];
			rule_comment(g, comment, sizeof(comment));
			if (strcmp(comment, r->name) != 0)
				return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: rule '%s' where '%s' was expected",
						  cname, comment, r->name);
			struct nftnl_rule *w = build_rule(rs, r);
			if (!w)
				return sk_err_sys(err, ENOMEM, "nft verify");
			snprintf(where, sizeof(where), "rule %s/%s", cname, r->name);
			int rc = compare_rule(w, g, where, err);
			nftnl_rule_free(w);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int verify_sets(const struct sk_ruleset *rs, struct mnl_socket *nl, char *buf, uint32_t *seq,
		       struct obj_list *sets, struct sk_err *err)
{
	if (sets->n != SK_RS_N_SETS)
		return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: table has %zu sets, expected %d", sets->n,
				  SK_RS_N_SETS);
	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		struct nftnl_set *got = NULL;
		for (size_t k = 0; k < sets->n && !got; k++)
			if (!strcmp(nftnl_set_get_str(sets->v[k], NFTNL_SET_NAME), s->name))
				got = sets->v[k];
		if (!got)
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s missing", s->name);
		uint32_t want_flags = is_direct(s) ? (NFT_SET_INTERVAL | NFT_SET_CONCAT) : 0;
		uint32_t gf = nftnl_set_get_u32(got, NFTNL_SET_FLAGS) & (NFT_SET_INTERVAL | NFT_SET_CONCAT);
		if (gf != want_flags || nftnl_set_get_u32(got, NFTNL_SET_KEY_LEN) != set_key_len(s))
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: key length or flags differ", s->name);

		struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, FAMILY, NLM_F_DUMP, (*seq)++);
		struct nftnl_set *q = nftnl_set_alloc();
		if (!q)
			return sk_err_sys(err, ENOMEM, "nft verify");
		nftnl_set_set_str(q, NFTNL_SET_TABLE, SK_RS_TABLE);
		nftnl_set_set_str(q, NFTNL_SET_NAME, s->name);
		nftnl_set_elems_nlmsg_build_payload(nlh, q);
		char what[64];
		snprintf(what, sizeof(what), "elements of set %s", s->name);
		int rc = dump(nl, buf, nlh, elem_cb, q, what, err);
		if (rc == 0)
			rc = compare_elems(s, q, err);
		nftnl_set_free(q);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int verify_once(const struct sk_ruleset *rs, struct sk_err *err)
{
	struct mnl_socket *nl = NULL;
	struct obj_list chains = { 0 }, rules = { 0 }, sets = { 0 }, objs = { 0 };
	char *buf = malloc(DUMP_BUF_SIZE);
	uint32_t seq = (uint32_t)time(NULL);
	struct nlmsghdr *nlh;
	int rc;

	if (!buf)
		return sk_err_sys(err, ENOMEM, "nft verify");
	rc = open_socket(&nl, err);
	if (rc < 0)
		goto out;

	/* the table itself: its absence is the common case for --check, so say it plainly */
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t) {
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, FAMILY, NLM_F_ACK, seq++);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, SK_RS_TABLE);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	rc = dump(nl, buf, nlh, NULL, NULL, "table", err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETCHAIN, FAMILY, NLM_F_DUMP, seq++);
	rc = dump(nl, buf, nlh, chain_cb, &chains, "chains", err);
	if (rc == 0)
		rc = verify_chains(rs, &chains, err);
	if (rc < 0)
		goto out;

	struct nftnl_rule *rq = nftnl_rule_alloc();
	if (!rq) {
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETRULE, FAMILY, NLM_F_DUMP, seq++);
	nftnl_rule_set_str(rq, NFTNL_RULE_TABLE, SK_RS_TABLE);
	nftnl_rule_nlmsg_build_payload(nlh, rq);
	nftnl_rule_free(rq);
	rc = dump(nl, buf, nlh, rule_cb, &rules, "rules", err);
	if (rc == 0 && rules.oom)
		rc = sk_err_sys(err, ENOMEM, "nft verify");
	if (rc == 0)
		rc = verify_rules(rs, &rules, err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, FAMILY, NLM_F_DUMP, seq++);
	rc = dump(nl, buf, nlh, set_cb, &sets, "sets", err);
	if (rc == 0)
		rc = verify_sets(rs, nl, buf, &seq, &sets, err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETOBJ, FAMILY, NLM_F_DUMP, seq++);
	rc = dump(nl, buf, nlh, obj_cb, &objs, "counters", err);
	if (rc < 0)
		goto out;
	for (int i = 0; i < SK_RS_N_COUNTERS; i++) {
		bool found = false;
		for (size_t k = 0; k < objs.n && !found; k++)
			found = nftnl_obj_get_u32(objs.v[k], NFTNL_OBJ_TYPE) == NFT_OBJECT_COUNTER &&
				!strcmp(nftnl_obj_get_str(objs.v[k], NFTNL_OBJ_NAME), sk_rs_counter_name(i));
		if (!found) {
			rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: counter %s missing", sk_rs_counter_name(i));
			goto out;
		}
	}
out:
	free_list(&chains, fr_chain);
	free_list(&rules, fr_rule);
	free_list(&sets, fr_set);
	free_list(&objs, fr_obj);
	if (nl)
		mnl_socket_close(nl);
	free(buf);
	return rc;
}

/* The read-back is several dumps (chains, rules, sets, elements, counters), not one snapshot: a commit by
 * another init racing us between two of them shows a mix of two generations (a set seen empty), and a
 * commit during one dump ends it with EINTR (NLM_F_DUMP_INTR). Both are transient, so read again a few
 * times; a difference that persists is real and reported. */
int sk_nft_verify(const struct sk_ruleset *rs, struct sk_err *err)
{
	int rc = 0;
	for (int attempt = 0; attempt < 6; attempt++) {
		struct sk_err e = { 0 };
		rc = verify_once(rs, &e);
		if (rc == 0)
			return 0;
		if (rc != -EINTR && rc != -SK_NFT_MISMATCH && rc != -ENOENT && rc != -EBUSY) {
			*err = e;
			return rc;
		}
		if (attempt == 5) {
			*err = e;
			break;
		}
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 * (attempt + 1) };
		nanosleep(&ts, NULL);
	}
	return rc;
}
