/* init/nft_verify.c — sk_nft_verify: dumps the live table (table, chains, rules, sets and their elements,
 * counters) and compares it with the ruleset, rebuilding each expected object with nft_expr.c so both
 * sides go through libnftnl's own printer. The four object dumps share one table-driven callback (struct
 * dump_kind); a reply libnftnl cannot parse is reported as such, never as a later mismatch. See nft.h. */
#include "init/nft.h"

#include <errno.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "init/nft_expr.h"
#include "init/nft_internal.h"

#define FAMILY SK_NFT_FAMILY
#define DUMP_BUF_SIZE SK_NFT_DUMP_BUF_SIZE

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
		if (n < 0) {
			int e = errno;
			/* SO_RCVTIMEO (nft.c) expired: say so rather than "Resource temporarily unavailable" */
			if (e == EAGAIN)
				return sk_err_set(err, e, "nft read back: %s: receive: timed out after %d s", what,
						  SK_NFT_RECV_TIMEOUT_S);
			return sk_err_sys(err, e, "nft read back: %s: receive", what);
		}
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (r == MNL_CB_STOP)
			return 0;
		if (r < 0) {
			int e = errno;
			if (e == ENOENT)
				return sk_err_set(err, ENOENT, "nft read back: %s: table %s %s not found",
						  what, SK_RS_FAMILY_NAME, SK_RS_TABLE);
			return sk_err_set(err, e, "nft read back: %s: %s%s", what, strerror(e), sk_nft_explain_errno(e));
		}
	}
}

/* ---- object dumps: one callback, driven by a table of kinds ---- */

struct obj_list {
	void **v;              /* owned objects of one kind, in dump order */
	size_t n, cap;
};

/* How libnftnl handles one kind of object. The wrappers exist because calling nftnl_chain_alloc and its
 * siblings through a void * signature would be undefined behaviour. */
struct dump_kind {
	const char *what;      /* for messages: "chains" */
	uint16_t msg;          /* NFT_MSG_GET* */
	void *(*alloc)(void);
	int (*parse)(const struct nlmsghdr *nlh, void *o);
	const char *(*table)(void *o);
	void (*free)(void *o);
};

#define DUMP_KIND_FNS(kind, table_attr)                                                                     \
	static void *kind##_alloc(void) { return nftnl_##kind##_alloc(); }                                  \
	static int kind##_parse(const struct nlmsghdr *nlh, void *o) { return nftnl_##kind##_nlmsg_parse(nlh, o); } \
	static const char *kind##_table(void *o) { return nftnl_##kind##_get_str(o, table_attr); }    \
	static void kind##_free(void *o) { nftnl_##kind##_free(o); }

DUMP_KIND_FNS(chain, NFTNL_CHAIN_TABLE)
DUMP_KIND_FNS(rule, NFTNL_RULE_TABLE)
DUMP_KIND_FNS(set, NFTNL_SET_TABLE)
DUMP_KIND_FNS(obj, NFTNL_OBJ_TABLE)

enum { K_CHAIN, K_RULE, K_SET, K_OBJ, K_N };

static const struct dump_kind kinds[K_N] = {
	[K_CHAIN] = { "chains", NFT_MSG_GETCHAIN, chain_alloc, chain_parse, chain_table, chain_free },
	[K_RULE] = { "rules", NFT_MSG_GETRULE, rule_alloc, rule_parse, rule_table, rule_free },
	[K_SET] = { "sets", NFT_MSG_GETSET, set_alloc, set_parse, set_table, set_free },
	[K_OBJ] = { "counters", NFT_MSG_GETOBJ, obj_alloc, obj_parse, obj_table, obj_free },
};

struct obj_dump {
	const struct dump_kind *k;
	struct obj_list *l;
	int err;               /* positive errno of the first object that could not be kept; 0 none */
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

static void free_list(struct obj_list *l, const struct dump_kind *k)
{
	for (size_t i = 0; i < l->n; i++)
		k->free(l->v[i]);
	free(l->v);
}

/* Keeps every object of our table. An object lost to allocation or parsing is recorded, not skipped:
 * skipping it would show up later as a "missing" object, a mismatch that hides the real cause. Once one
 * failed, the rest of the dump is still read (so the socket stays in step) but not kept. */
static int obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct obj_dump *d = data;
	if (d->err)
		return MNL_CB_OK;
	void *o = d->k->alloc();
	if (!o) {
		d->err = ENOMEM;
		return MNL_CB_OK;
	}
	errno = 0;
	if (d->k->parse(nlh, o) < 0) {
		d->err = errno ? errno : EINVAL;
		d->k->free(o);
		return MNL_CB_OK;
	}
	const char *table = d->k->table(o);
	if (!table || strcmp(table, SK_RS_TABLE) != 0) {
		d->k->free(o);  /* another table of the family: not ours to compare */
		return MNL_CB_OK;
	}
	if (list_push(d->l, o) < 0) {
		d->err = ENOMEM;
		d->k->free(o);
	}
	return MNL_CB_OK;
}

/* Dumps every object of kind k (the request, built by the caller into buf, may carry a filter) into l. */
static int dump_objs(struct mnl_socket *nl, char *buf, const struct nlmsghdr *req, const struct dump_kind *k,
		     struct obj_list *l, struct sk_err *err)
{
	struct obj_dump d = { .k = k, .l = l };
	int rc = dump(nl, buf, req, obj_cb, &d, k->what, err);
	if (rc == 0 && d.err)
		rc = sk_err_set(err, d.err, "nft read back: %s: parse reply: %s", k->what, strerror(d.err));
	return rc;
}

struct elem_dump {
	const struct sk_rs_set *s;
	struct sk_nft_key *v;  /* borrowed: room for the expected number of elements */
	size_t cap, n, odd;
	int err;               /* positive errno of the first reply that failed to parse; 0 none */
};

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	struct elem_dump *d = data;
	/* a reply that fails to parse loses its elements: remember it, so it is not reported as a mismatch */
	if (!d->err) {
		int r = sk_nft_parse_elems(nlh, d->s, d->v, d->cap, &d->n, &d->odd);
		if (r < 0)
			d->err = -r;
	}
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
			(void)snprintf(out, len, "%.*s", (int)l, (const char *)nftnl_udata_get(a));
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

static int cmp_key(const void *a, const void *b) { return memcmp(a, b, sizeof(struct sk_nft_key)); }

/* got: the n elements read back (n == s->n_elems), in the kernel's order. The kernel lists a direct set's
 * elements in the order they were added, which is the ruleset's, so one walk in step compares them;
 * only when that walk meets a difference (a hash set's own order, or a real difference) are both sides
 * sorted and compared again, so the verdict never depends on the kernel's order. */
static int compare_elems(const struct sk_rs_set *s, struct sk_nft_key *got, size_t n, struct sk_err *err)
{
	if (n == 0)
		return 0;
	struct sk_nft_key *w = calloc(n, sizeof(*w));
	if (!w)
		return sk_err_sys(err, ENOMEM, "nft verify");
	const bool direct = sk_nft_set_is_direct(s);
	size_t i, same = 0;
	for (i = 0; i < n; i++) {
		sk_nft_elem_key(s, &s->elems[i], false, w[i].k);
		if (direct)
			sk_nft_elem_key(s, &s->elems[i], true, w[i].k + SK_NFT_KEY_MAX);
		if (same == i && memcmp(&w[i], &got[i], sizeof(w[i])) == 0)
			same++;
	}
	int rc = 0;
	if (same == n)
		goto out;
	qsort(w, n, sizeof(*w), cmp_key);
	qsort(got, n, sizeof(*got), cmp_key);
	for (i = 0; i < n && rc == 0; i++) {
		if (memcmp(&w[i], &got[i], sizeof(w[i])) == 0)
			continue;
		rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: elements differ", s->name);
		/* name an expected element that is missing (sorted order matches it up) */
		for (size_t j = 0; j < s->n_elems; j++) {
			struct sk_nft_key kp = { { 0 } };
			sk_nft_elem_key(s, &s->elems[j], false, kp.k);
			if (direct)
				sk_nft_elem_key(s, &s->elems[j], true, kp.k + SK_NFT_KEY_MAX);
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
	return rc;
}

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
			/* a kernel comment cut to 159 bytes still differs from every rule name (all short) */
			char comment[160], where[200];
			rule_comment(g, comment, sizeof(comment));
			if (strcmp(comment, r->name) != 0)
				return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: chain %s: rule '%s' where '%s' was expected",
						  cname, comment, r->name);
			struct nftnl_rule *w = sk_nft_build_rule(rs, r);
			if (!w)
				return sk_err_sys(err, ENOMEM, "nft verify");
			(void)snprintf(where, sizeof(where), "rule %s/%s", cname, r->name);
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
		uint32_t want_flags = sk_nft_set_is_direct(s) ? (NFT_SET_INTERVAL | NFT_SET_CONCAT) : 0;
		uint32_t gf = nftnl_set_get_u32(got, NFTNL_SET_FLAGS) & (NFT_SET_INTERVAL | NFT_SET_CONCAT);
		if (gf != want_flags || nftnl_set_get_u32(got, NFTNL_SET_KEY_LEN) != sk_nft_set_key_len(s))
			return sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: key length or flags differ", s->name);

		struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, FAMILY, NLM_F_DUMP, (*seq)++);
		struct nftnl_set *q = nftnl_set_alloc();
		if (!q)
			return sk_err_sys(err, ENOMEM, "nft verify");
		if (nftnl_set_set_str(q, NFTNL_SET_TABLE, SK_RS_TABLE) < 0 || nftnl_set_set_str(q, NFTNL_SET_NAME, s->name) < 0) {
			nftnl_set_free(q);
			return sk_err_sys(err, ENOMEM, "nft verify");
		}
		nftnl_set_elems_nlmsg_build_payload(nlh, q);
		char what[64];
		(void)snprintf(what, sizeof(what), "elements of set %s", s->name);
		nftnl_set_free(q);
		/* one slot more than expected, so that an extra element is seen as one */
		struct elem_dump ed = { .s = s, .cap = s->n_elems + 1 };
		ed.v = malloc(ed.cap * sizeof(*ed.v));
		if (!ed.v)
			return sk_err_sys(err, ENOMEM, "nft verify");
		int rc = dump(nl, buf, nlh, elem_cb, &ed, what, err);
		if (rc == 0 && ed.err)
			rc = sk_err_set(err, ed.err, "nft read back: %s: parse reply: %s", what, strerror(ed.err));
		if (rc == 0 && ed.odd)
			rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: %zu element%s of another shape (key "
					"length or range end), expected %u-byte keys%s", s->name, ed.odd,
					ed.odd == 1 ? "" : "s", sk_nft_set_key_len(s),
					sk_nft_set_is_direct(s) ? " with range ends" : "");
		if (rc == 0 && ed.n != s->n_elems)
			rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: set %s: %zu elements, expected %zu", s->name,
					ed.n, s->n_elems);
		if (rc == 0)
			rc = compare_elems(s, ed.v, ed.n, err);
		free(ed.v);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int verify_once(struct mnl_socket *given, const struct sk_ruleset *rs, struct sk_err *err)
{
	struct mnl_socket *own = NULL, *nl = given;
	struct obj_list lists[K_N] = { { 0 } };
	struct obj_list *chains = &lists[K_CHAIN], *rules = &lists[K_RULE], *sets = &lists[K_SET], *objs = &lists[K_OBJ];
	char *buf = malloc(DUMP_BUF_SIZE);
	uint32_t seq = (uint32_t)time(NULL);
	struct nlmsghdr *nlh;
	int rc;

	if (!buf)
		return sk_err_sys(err, ENOMEM, "nft verify");
	if (!nl) {
		rc = sk_nft_open_socket(&own, err);
		if (rc < 0)
			goto out;
		nl = own;
	}

	/* the table itself: its absence is the common case for --check, so say it plainly */
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t || nftnl_table_set_str(t, NFTNL_TABLE_NAME, SK_RS_TABLE) < 0) {
		if (t)
			nftnl_table_free(t);
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, FAMILY, NLM_F_ACK, seq++);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	rc = dump(nl, buf, nlh, NULL, NULL, "table", err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, kinds[K_CHAIN].msg, FAMILY, NLM_F_DUMP, seq++);
	rc = dump_objs(nl, buf, nlh, &kinds[K_CHAIN], chains, err);
	if (rc == 0)
		rc = verify_chains(rs, chains, err);
	if (rc < 0)
		goto out;

	struct nftnl_rule *rq = nftnl_rule_alloc();
	if (!rq || nftnl_rule_set_str(rq, NFTNL_RULE_TABLE, SK_RS_TABLE) < 0) {
		if (rq)
			nftnl_rule_free(rq);
		rc = sk_err_sys(err, ENOMEM, "nft verify");
		goto out;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, kinds[K_RULE].msg, FAMILY, NLM_F_DUMP, seq++);
	nftnl_rule_nlmsg_build_payload(nlh, rq);
	nftnl_rule_free(rq);
	rc = dump_objs(nl, buf, nlh, &kinds[K_RULE], rules, err);
	if (rc == 0)
		rc = verify_rules(rs, rules, err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, kinds[K_SET].msg, FAMILY, NLM_F_DUMP, seq++);
	rc = dump_objs(nl, buf, nlh, &kinds[K_SET], sets, err);
	if (rc == 0)
		rc = verify_sets(rs, nl, buf, &seq, sets, err);
	if (rc < 0)
		goto out;

	nlh = nftnl_nlmsg_build_hdr(buf, kinds[K_OBJ].msg, FAMILY, NLM_F_DUMP, seq++);
	rc = dump_objs(nl, buf, nlh, &kinds[K_OBJ], objs, err);
	if (rc < 0)
		goto out;
	for (int i = 0; i < SK_RS_N_COUNTERS; i++) {
		bool found = false;
		for (size_t k = 0; k < objs->n && !found; k++)
			found = nftnl_obj_get_u32(objs->v[k], NFTNL_OBJ_TYPE) == NFT_OBJECT_COUNTER &&
				!strcmp(nftnl_obj_get_str(objs->v[k], NFTNL_OBJ_NAME), sk_rs_counter_name(i));
		if (!found) {
			rc = sk_err_set(err, SK_NFT_MISMATCH, "nft verify: counter %s missing", sk_rs_counter_name(i));
			goto out;
		}
	}
out:
	for (int k = 0; k < K_N; k++)
		free_list(&lists[k], &kinds[k]);
	if (own)
		mnl_socket_close(own);
	free(buf);
	return rc;
}

/* The read-back is several dumps (chains, rules, sets, elements, counters), not one snapshot: a commit by
 * another init racing us between two of them shows a mix of two generations (a set seen empty), and a
 * commit during one dump ends it with EINTR (NLM_F_DUMP_INTR). Both are transient, so read again a few
 * times; a difference that persists is real and reported. */
int sk_nft_verify(struct sk_nft *nft, const struct sk_ruleset *rs, struct sk_err *err)
{
	int rc = 0;
	for (int attempt = 0; attempt < 6; attempt++) {
		struct sk_err e = { 0 };
		rc = verify_once(attempt == 0 && nft ? nft->nl : NULL, rs, &e);
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
