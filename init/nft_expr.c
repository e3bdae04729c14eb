/* init/nft_expr.c — a struct sk_ruleset as libnftnl objects (table, counters, chains, sets and elements,
 * rule expressions). See nft_expr.h. */
#include "init/nft_expr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#define FAMILY SK_NFT_FAMILY

/* nft's datatype numbers, stored as set key types so `nft list` shows the sets readably. */
enum { T_IPADDR = 7, T_IP6ADDR = 8, T_INET_PROTO = 12, T_INET_SERVICE = 13, T_UID = 24, T_ICMP6 = 29 };
#define T_CONCAT3(a, b, c) ((((a) << 6 | (b)) << 6) | (c))
enum { BO_HOST = 1, BO_BIG = 2 };  /* nft's byteorder, for the KEYBYTEORDER set userdata */

/* ---- table, counters, chains ---- */

struct nftnl_table *sk_nft_build_table(void)
{
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t)
		return NULL;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, FAMILY);
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, SK_RS_TABLE) < 0) {
		nftnl_table_free(t);
		return NULL;
	}
	return t;
}

/* libnftnl 1.2's nftnl_obj_set_str returns void and leaves the attribute NULL when strdup fails: read it
 * back, so a failed copy is an allocation failure here rather than a NULL handed to the message builder */
static bool obj_set_str(struct nftnl_obj *o, uint16_t attr, const char *s)
{
	nftnl_obj_set_str(o, attr, s);
	return nftnl_obj_get_str(o, attr) != NULL;
}

struct nftnl_obj *sk_nft_build_counter(int counter)
{
	struct nftnl_obj *o = nftnl_obj_alloc();
	if (!o)
		return NULL;
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, FAMILY);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	if (!obj_set_str(o, NFTNL_OBJ_TABLE, SK_RS_TABLE) || !obj_set_str(o, NFTNL_OBJ_NAME, sk_rs_counter_name(counter))) {
		nftnl_obj_free(o);
		return NULL;
	}
	return o;
}

struct nftnl_chain *sk_nft_build_chain(const struct sk_rs_chain *ch)
{
	struct nftnl_chain *nc = nftnl_chain_alloc();
	if (!nc)
		return NULL;
	nftnl_chain_set_u32(nc, NFTNL_CHAIN_FAMILY, FAMILY);
	nftnl_chain_set_u32(nc, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(nc, NFTNL_CHAIN_PRIO, ch->priority);
	nftnl_chain_set_u32(nc, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	if (nftnl_chain_set_str(nc, NFTNL_CHAIN_TABLE, SK_RS_TABLE) < 0 ||
	    nftnl_chain_set_str(nc, NFTNL_CHAIN_NAME, ch->name) < 0 ||
	    nftnl_chain_set_str(nc, NFTNL_CHAIN_TYPE, ch->type) < 0) {
		nftnl_chain_free(nc);
		return NULL;
	}
	return nc;
}

/* ---- expressions ---- */

struct rule_ctx {
	struct nftnl_rule *r;
	bool oom;              /* an allocation failed: the rule is incomplete and is discarded */
};

/* a failed nftnl_*_set_* leaves the attribute unset, which would build a different rule: never send it */
static void chk(struct rule_ctx *c, int rc)
{
	if (rc < 0)
		c->oom = true;
}

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
	chk(c, nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len));
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

static void e_lookup(struct rule_ctx *c, uint32_t sreg, const struct sk_rs_set *s, uint32_t flags)
{
	struct nftnl_expr *e = ex(c, "lookup");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, sreg);
	chk(c, nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, s->name));
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, (uint32_t)s->id + 1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, flags);  /* the kernel reports it; so must we */
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
	chk(c, nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask)));
	chk(c, nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, sizeof(zero)));
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
		e_lookup(c, NFT_REG_1, s, 0);
		break;
	case SK_RS_M_SKUID_NOT_SET:
		e_meta(c, NFT_META_SKUID, NFT_REG_1);
		e_lookup(c, NFT_REG_1, s, NFT_LOOKUP_F_INV);
		break;
	case SK_RS_M_SADDR_NOT_LOCAL: {
		/* what nft encodes for `fib saddr type != local`: the route type of the packet's source
		 * address, looked up in this netns's tables (a u32 in host order) */
		struct nftnl_expr *e = ex(c, "fib");
		if (!e)
			break;
		nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_FLAGS, NFTA_FIB_F_SADDR);
		nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
		nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_DREG, NFT_REG_1);
		e_cmp_u32(c, NFT_CMP_NEQ, RTN_LOCAL);
		break;
	}
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
		e_lookup(c, NFT_REG_1, s, 0);
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
		e_lookup(c, NFT_REG_1, s, 0);
		break;
	case SK_RS_M_DIRECT_SET: {
		/* the concatenation lives in consecutive 32-bit registers, each field padded to 4 bytes,
		 * exactly as the set's key is laid out (see sk_nft_elem_key) */
		bool v6 = m->set == SK_RS_SET_DIRECT6;
		uint32_t words = v6 ? 4 : 1;
		e_payload(c, NFT_PAYLOAD_NETWORK_HEADER, v6 ? 24 : 16, v6 ? 16 : 4, reg32(0));
		e_meta(c, NFT_META_L4PROTO, reg32(words));
		e_payload(c, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, reg32(words + 1));
		e_lookup(c, reg32(0), s, 0);
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

struct nftnl_rule *sk_nft_build_rule(const struct sk_ruleset *rs, const struct sk_rs_rule *r)
{
	struct rule_ctx c = { .r = nftnl_rule_alloc() };
	if (!c.r)
		return NULL;
	nftnl_rule_set_u32(c.r, NFTNL_RULE_FAMILY, FAMILY);
	chk(&c, nftnl_rule_set_str(c.r, NFTNL_RULE_TABLE, SK_RS_TABLE));
	chk(&c, nftnl_rule_set_str(c.r, NFTNL_RULE_CHAIN, rs->chains[r->chain].name));

	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(256);
	if (!ud || !nftnl_udata_put_strz(ud, NFTNL_UDATA_RULE_COMMENT, r->name)) {
		nftnl_udata_buf_free(ud);
		nftnl_rule_free(c.r);
		return NULL;
	}
	chk(&c, nftnl_rule_set_data(c.r, NFTNL_RULE_USERDATA, nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud)));
	nftnl_udata_buf_free(ud);

	for (size_t i = 0; i < r->n_m; i++)
		add_match(&c, rs, &r->m[i]);
	if (r->counter != SK_RS_CNT_NONE) {
		struct nftnl_expr *e = ex(&c, "objref");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
			chk(&c, nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, sk_rs_counter_name(r->counter)));
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
			chk(&c, nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &be, sizeof(be)));
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

bool sk_nft_set_is_direct(const struct sk_rs_set *s)
{
	return s->id == SK_RS_SET_DIRECT4 || s->id == SK_RS_SET_DIRECT6;
}

uint32_t sk_nft_set_key_len(const struct sk_rs_set *s)
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

uint32_t sk_nft_elem_key(const struct sk_rs_set *s, const struct sk_rs_elem *e, bool hi, uint8_t out[SK_NFT_KEY_MAX])
{
	memset(out, 0, SK_NFT_KEY_MAX);
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

/* a set object naming s in the table: the head of both the NEWSET and the NEWSETELEM messages */
static struct nftnl_set *set_head(const struct sk_rs_set *s)
{
	struct nftnl_set *ns = nftnl_set_alloc();
	if (!ns)
		return NULL;
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, FAMILY);
	if (nftnl_set_set_str(ns, NFTNL_SET_TABLE, SK_RS_TABLE) < 0 || nftnl_set_set_str(ns, NFTNL_SET_NAME, s->name) < 0) {
		nftnl_set_free(ns);
		return NULL;
	}
	nftnl_set_set_u32(ns, NFTNL_SET_ID, (uint32_t)s->id + 1);
	return ns;
}

struct nftnl_set *sk_nft_build_set(const struct sk_rs_set *s)
{
	struct nftnl_set *ns = set_head(s);
	if (!ns)
		return NULL;
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_LEN, sk_nft_set_key_len(s));
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
	bool ok = true;
	if (sk_nft_set_is_direct(s)) {
		uint8_t fields[3] = { s->id == SK_RS_SET_DIRECT6 ? 16 : 4, 1, 2 };
		ok = nftnl_set_set_data(ns, NFTNL_SET_DESC_CONCAT, fields, sizeof(fields)) >= 0;
	}
	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(64);
	if (!ok || !ud || !nftnl_udata_put_u32(ud, NFTNL_UDATA_SET_KEYBYTEORDER, bo) ||
	    nftnl_set_set_data(ns, NFTNL_SET_USERDATA, nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud)) < 0) {
		nftnl_udata_buf_free(ud);
		nftnl_set_free(ns);
		return NULL;
	}
	nftnl_udata_buf_free(ud);
	return ns;
}

struct nftnl_set *sk_nft_build_elems(const struct sk_rs_set *s, size_t from, size_t to)
{
	struct nftnl_set *ns = set_head(s);
	if (!ns)
		return NULL;
	for (size_t i = from; i < to; i++) {
		uint8_t key[SK_NFT_KEY_MAX];
		struct nftnl_set_elem *e = nftnl_set_elem_alloc();
		if (!e) {
			nftnl_set_free(ns);
			return NULL;
		}
		uint32_t len = sk_nft_elem_key(s, &s->elems[i], false, key);
		bool ok = nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, len) >= 0;
		if (ok && sk_nft_set_is_direct(s)) {
			len = sk_nft_elem_key(s, &s->elems[i], true, key);
			ok = nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY_END, key, len) >= 0;
		}
		if (!ok) {
			nftnl_set_elem_free(e);
			nftnl_set_free(ns);
			return NULL;
		}
		nftnl_set_elem_add(ns, e);
	}
	return ns;
}

/* The order and nesting of nftnl_set_elems_nlmsg_build_payload (libnftnl src/set_elem.c): the list's set
 * name, set id and table, then one nest per element holding the key (and range end) as NFTA_DATA_VALUE. */
static void put_key(struct nlmsghdr *nlh, uint16_t type, const uint8_t *key, uint32_t len)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, type);
	mnl_attr_put(nlh, NFTA_DATA_VALUE, len, key);
	mnl_attr_nest_end(nlh, nest);
}

void sk_nft_put_elems(struct nlmsghdr *nlh, const struct sk_rs_set *s, size_t from, size_t to)
{
	mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_SET, s->name);
	mnl_attr_put_u32(nlh, NFTA_SET_ELEM_LIST_SET_ID, htonl((uint32_t)s->id + 1));
	mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, SK_RS_TABLE);
	if (from >= to)
		return;
	const bool direct = sk_nft_set_is_direct(s);
	struct nlattr *list = mnl_attr_nest_start(nlh, NFTA_SET_ELEM_LIST_ELEMENTS);
	for (size_t i = from; i < to; i++) {
		uint8_t key[SK_NFT_KEY_MAX];
		/* libnftnl numbers the element nests 1, 2, ... (the kernel reads any type) */
		struct nlattr *el = mnl_attr_nest_start(nlh, (uint16_t)(i - from + 1));
		uint32_t len = sk_nft_elem_key(s, &s->elems[i], false, key);
		put_key(nlh, NFTA_SET_ELEM_KEY, key, len);
		if (direct) {
			len = sk_nft_elem_key(s, &s->elems[i], true, key);
			put_key(nlh, NFTA_SET_ELEM_KEY_END, key, len);
		}
		mnl_attr_nest_end(nlh, el);
	}
	mnl_attr_nest_end(nlh, list);
}

/* A data attribute (NFTA_SET_ELEM_KEY / _KEY_END): one NFTA_DATA_VALUE of exactly len bytes into out.
 * false when it has another shape. */
static bool get_key(const struct nlattr *a, uint32_t len, uint8_t *out)
{
	const struct nlattr *v = NULL;
	const struct nlattr *in;
	if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
		return false;
	mnl_attr_for_each_nested(in, a) {
		if (mnl_attr_get_type(in) != NFTA_DATA_VALUE || v)
			return false;
		v = in;
	}
	if (!v || mnl_attr_get_payload_len(v) != len)
		return false;
	memcpy(out, mnl_attr_get_payload(v), len);
	return true;
}

/* A string attribute equal to want (NUL-terminated inside its payload). */
static bool attr_str_is(const struct nlattr *a, const char *want)
{
	size_t wl = strlen(want), pl = mnl_attr_get_payload_len(a);
	const char *p = mnl_attr_get_payload(a);
	return pl >= wl + 1 && memcmp(p, want, wl) == 0 && p[wl] == 0;
}

int sk_nft_parse_elems(const struct nlmsghdr *nlh, const struct sk_rs_set *s, struct sk_nft_key *keys, size_t cap,
		       size_t *n, size_t *odd)
{
	const uint32_t klen = sk_nft_set_key_len(s);
	const bool direct = sk_nft_set_is_direct(s);
	const struct nlattr *a;
	bool table = false, set = false;
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct nfgenmsg)))
		return -EBADMSG;
	/* mnl_attr_for_each stops at the first attribute that does not fit: check the walk reached the end */
	size_t seen = mnl_nlmsg_size(sizeof(struct nfgenmsg));
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		seen = (size_t)((const char *)mnl_attr_next(a) - (const char *)nlh);
		switch (mnl_attr_get_type(a)) {
		case NFTA_SET_ELEM_LIST_TABLE:
			if (!attr_str_is(a, SK_RS_TABLE))
				return -EBADMSG;
			table = true;
			break;
		case NFTA_SET_ELEM_LIST_SET:
			if (!attr_str_is(a, s->name))
				return -EBADMSG;
			set = true;
			break;
		case NFTA_SET_ELEM_LIST_ELEMENTS: {
			const struct nlattr *el;
			if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
				return -EBADMSG;
			mnl_attr_for_each_nested(el, a) {
				const struct nlattr *f;
				const struct nlattr *key = NULL, *end = NULL;
				if (mnl_attr_validate(el, MNL_TYPE_NESTED) < 0)
					return -EBADMSG;
				mnl_attr_for_each_nested(f, el) {
					if (mnl_attr_get_type(f) == NFTA_SET_ELEM_KEY)
						key = f;
					else if (mnl_attr_get_type(f) == NFTA_SET_ELEM_KEY_END)
						end = f;
				}
				/* past cap the element is only counted: its key goes to a scratch slot */
				struct sk_nft_key scratch = { { 0 } };
				struct sk_nft_key *k = *n < cap ? &keys[*n] : &scratch;
				if (k != &scratch)
					memset(k, 0, sizeof(*k));
				if (!key || !get_key(key, klen, k->k) || (end != NULL) != direct ||
				    (end && !get_key(end, klen, k->k + SK_NFT_KEY_MAX)))
					(*odd)++;
				else
					(*n)++;
			}
			break;
		}
		default:
			break;
		}
	}
	if (seen != NLMSG_ALIGN(nlh->nlmsg_len) && seen != nlh->nlmsg_len)
		return -EBADMSG;
	return table && set ? 0 : -EBADMSG;
}
