/* policy/guardrails.c — cluster guardrails (guardrails.h): the loader (the policy loaders' tree and typed
 * reads, with a key table of its own), the check a policy must pass at admission, and the narrowing the
 * sidecar applies at every load. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/read_file.h"
#include "common/util.h"
#include "policy/domain.h"
#include "policy/guardrails.h"
#include "policy/internal.h"
#include "policy/match.h"
#include "policy/requests.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

#define UID_MAX_GR 4294967294LL

/* The guardrails document's keys: `check` refuses any other, as the policy's table does for policies. */
static const struct sk_schema_obj gr_schema = {
	"guardrails",
	(const struct sk_schema_field[]){
		{ .key = "version", .type = SK_SCH_INT, .min = 1, .max = 1, .required = true, .desc = "1" },
		{ .key = "deniedHosts", .type = SK_SCH_LIST, .item = SK_SCH_STR,
		  .desc = "names no rule may allow (name or *.suffix)" },
		{ .key = "deniedCidrs", .type = SK_SCH_LIST, .item = SK_SCH_STR,
		  .desc = "networks no cidr rule may overlap" },
		{ .key = "maxBudget", .type = SK_SCH_OBJ, .obj = &sk_schema_budget,
		  .desc = "every proxied rule carries a budget at most this" },
		{ .key = "blockPrivate", .type = SK_SCH_BOOL, .desc = "true: blockPrivate is forced on" },
		{ .key = "allowedModes", .type = SK_SCH_LIST, .item = SK_SCH_ENUM, .values = sk_schema_modes,
		  .desc = "the modes a policy may use" },
		{ .key = "allowInspect", .type = SK_SCH_BOOL, .desc = "false: no rule may set inspect: true" },
		{ .key = "allowedExemptUids", .type = SK_SCH_LIST, .item = SK_SCH_INT, .item_min = 1,
		  .item_max = UID_MAX_GR, .desc = "the only uids a policy may exempt" },
	},
	8, NULL, "cluster guardrails: rules no pod policy may widen (docs/governance.md)",
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static struct sk_pos pos_of(const struct sk_node *n)
{
	return (struct sk_pos){ n->line, n->col };
}

static void load_hosts(struct sk_load_ctx *c, const struct sk_node *n, struct sk_guardrails *g)
{
	char path[PATHSZ], norm[SK_DOMAIN_MAX + 1];
	if (!sk_want_seq(c, n, "deniedHosts", "host names") || !n->n)
		return;
	if (!(g->denied_hosts = calloc(n->n, sizeof(*g->denied_hosts)))) {
		err_at(c, n, "deniedHosts: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		bool wild = false;
		sk_path_idx(path, sizeof(path), "deniedHosts", i);
		if (sk_check_host_name(c, n->items[i], path, norm, &wild) < 0)
			continue;
		struct sk_guardrail_host *h = &g->denied_hosts[g->n_denied_hosts];
		if (!(h->host = strdup(norm))) {
			err_at(c, n->items[i], "%s: out of memory", path);
			return;
		}
		h->wildcard = wild;
		h->pos = pos_of(n->items[i]);
		g->n_denied_hosts++;
	}
}

static void load_cidrs(struct sk_load_ctx *c, const struct sk_node *n, struct sk_guardrails *g)
{
	char path[PATHSZ];
	if (!sk_want_seq(c, n, "deniedCidrs", "networks") || !n->n)
		return;
	if (!(g->denied_cidrs = calloc(n->n, sizeof(*g->denied_cidrs)))) {
		err_at(c, n, "deniedCidrs: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		sk_path_idx(path, sizeof(path), "deniedCidrs", i);
		struct sk_guardrail_cidr *d = &g->denied_cidrs[g->n_denied_cidrs];
		if (sk_parse_cidr_at(c, n->items[i], path, &d->cidr) < 0)
			continue;
		d->pos = pos_of(n->items[i]);
		g->n_denied_cidrs++;
	}
}

static void load_modes(struct sk_load_ctx *c, const struct sk_node *n, struct sk_guardrails *g)
{
	char path[PATHSZ];
	const char *const *modes = sk_schema_modes;
	if (!sk_want_seq(c, n, "allowedModes", "modes"))
		return;
	if (!n->n) {
		err_at(c, n, "allowedModes: empty, expected at least one of enforce, audit");
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		sk_path_idx(path, sizeof(path), "allowedModes", i);
		int m = sk_get_enum(c, n->items[i], path, "mode", modes, sk_schema_count(modes), "enforce or audit");
		if (m >= 0)
			g->modes |= 1u << m;
	}
	g->modes_pos = pos_of(n);
}

static void load_exempt(struct sk_load_ctx *c, const struct sk_node *n, struct sk_guardrails *g)
{
	char path[PATHSZ];
	if (!sk_want_seq(c, n, "allowedExemptUids", "uids"))
		return;
	g->exempt_limited = true;
	g->exempt_pos = pos_of(n);
	if (!n->n)
		return;
	if (!(g->exempt_uids = calloc(n->n, sizeof(*g->exempt_uids)))) {
		err_at(c, n, "allowedExemptUids: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		unsigned long long u;
		sk_path_idx(path, sizeof(path), "allowedExemptUids", i);
		if (sk_get_uint(c, n->items[i], path, 1, UID_MAX_GR, "a uid 1..4294967294", &u) == 0)
			g->exempt_uids[g->n_exempt_uids++] = (uint32_t)u;
	}
	qsort(g->exempt_uids, g->n_exempt_uids, sizeof(uint32_t), cmp_u32);
	size_t o = 0;
	for (size_t i = 0; i < g->n_exempt_uids; i++)
		if (!o || g->exempt_uids[i] != g->exempt_uids[o - 1])
			g->exempt_uids[o++] = g->exempt_uids[i];
	g->n_exempt_uids = o;
}

static void validate(struct sk_load_ctx *c, const struct sk_node *root, struct sk_guardrails *g)
{
	char d[SK_QUOTE_MAX + 16];
	if (root->kind != SK_NODE_MAP) {
		err_at(c, root, "guardrails: expected a mapping starting with version: 1, got %s",
		       sk_node_describe(root, d, sizeof(d)));
		return;
	}
	sk_check_keys(c, root, "guardrails", &gr_schema);
	const struct sk_node *v;
	if ((v = sk_need(c, root, "guardrails", "version", "version: 1"))) {
		unsigned long long ver;
		if (sk_get_uint(c, v, "version", 0, 1ULL << 31, "1", &ver) == 0 && ver != 1)
			err_at(c, v, "version: unsupported version %llu, expected 1", ver);
	}
	if ((v = sk_node_get(root, "deniedHosts")))
		load_hosts(c, v, g);
	if ((v = sk_node_get(root, "deniedCidrs")))
		load_cidrs(c, v, g);
	if ((v = sk_node_get(root, "maxBudget"))) {
		struct sk_budget b;
		if (sk_get_budget(c, v, "maxBudget", &b) == 0) {
			g->max_budget = b;
			g->max_budget_pos = pos_of(v);
		}
	}
	if ((v = sk_node_get(root, "blockPrivate")) && sk_get_bool(c, v, "blockPrivate", &g->block_private) == 0)
		g->block_private_pos = pos_of(v);
	if ((v = sk_node_get(root, "allowedModes")))
		load_modes(c, v, g);
	bool inspect = true;
	if ((v = sk_node_get(root, "allowInspect")) && sk_get_bool(c, v, "allowInspect", &inspect) == 0) {
		g->inspect_denied = !inspect;
		g->inspect_pos = pos_of(v);
	}
	if ((v = sk_node_get(root, "allowedExemptUids")))
		load_exempt(c, v, g);
}

void sk_guardrails_free(struct sk_guardrails *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_denied_hosts; i++)
		free(g->denied_hosts[i].host);
	free(g->denied_hosts);
	free(g->denied_cidrs);
	free(g->exempt_uids);
	free(g->source);
	free(g);
}

int sk_guardrails_load_buffer(const char *name, const char *buf, size_t len, struct sk_guardrails **out,
			      struct sk_diags *diags)
{
	struct sk_load_ctx c = { .file = name ? name : "<buffer>", .diags = diags };
	const size_t first_diag = diags->n;
	struct sk_guardrails *g = NULL;
	int ret = -EINVAL;
	*out = NULL;
	size_t o = 0;
	while (o < len && (buf[o] == ' ' || buf[o] == '\t' || buf[o] == '\n' || buf[o] == '\r'))
		o++;
	struct sk_node *tree = (o < len && buf[o] == '{') ? sk_json_parse(&c, buf, len) : sk_yaml_parse(&c, buf, len);
	if (!tree)
		goto out;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->source = strdup(c.file))) {
		sk_ctx_error(&c, 0, 0, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	(void)snprintf(g->content_hash, sizeof(g->content_hash), "%016llx", (unsigned long long)sk_fnv1a64(buf, len));
	validate(&c, tree, g);
	if (c.n_errors)
		goto out;
	*out = sk_steal_pointer(&g);
	ret = 0;
out:
	sk_diags_sort_from(diags, first_diag);
	sk_node_free(tree);
	sk_guardrails_free(g);
	return ret;
}

int sk_guardrails_load_file(const char *path, struct sk_guardrails **out, struct sk_diags *diags)
{
	size_t len = 0;
	struct sk_err err = { 0 };
	*out = NULL;
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	sk_autofree char *buf = sk_read_file(path, SK_POLICY_MAX_BYTES, &len, &err);
	if (!buf) {
		sk_diags_add(diags, name, 0, 0, "cannot read: %s", strerror(err.code));
		return -err.code;
	}
	return sk_guardrails_load_buffer(name, buf, len, out, diags);
}

/* ---- the comparisons ----------------------------------------------------------------------------------- */

/* h is a strict subdomain of suffix (what "*.suffix" matches). */
static bool under(const char *h, const char *suffix)
{
	size_t hl = strlen(h), sl = strlen(suffix);
	return hl > sl + 1 && h[hl - sl - 1] == '.' && !strcmp(h + hl - sl, suffix);
}

/* Does the rule's pattern allow some name the denied pattern names? */
static bool host_overlaps(const struct sk_rule *r, const struct sk_guardrail_host *d)
{
	if (!r->wildcard && !d->wildcard)
		return !strcmp(r->host, d->host);
	if (!r->wildcard)
		return under(r->host, d->host);
	if (!d->wildcard)
		return under(d->host, r->host);
	return !strcmp(r->host, d->host) || under(r->host, d->host) || under(d->host, r->host);
}

static bool cidr_overlaps(const struct sk_cidr *a, const struct sk_cidr *b)
{
	if (a->net.family != b->net.family)
		return false;
	unsigned p = a->prefix < b->prefix ? a->prefix : b->prefix;
	for (unsigned i = 0; i < p; i++) {
		unsigned byte = i / 8, bit = 7 - i % 8;
		if (((a->net.bytes[byte] >> bit) & 1) != ((b->net.bytes[byte] >> bit) & 1))
			return false;
	}
	return true;
}

/* Rules whose bytes the sidecar sees (a budget can count them, removing them takes effect at reload). */
static bool proxied(const struct sk_rule *r)
{
	return r->kind == SK_RULE_HOST || (!r->direct && r->proto != SK_PROTO_UDP);
}

/* The budget dimensions that apply to r: sent, received, connections, and queries on wildcard host rules. */
static bool dim_applies(const struct sk_rule *r, int i)
{
	return i < 3 || (r->kind == SK_RULE_HOST && r->wildcard);
}

static uint64_t *dim(struct sk_budget *b, int i)
{
	uint64_t *v[] = { &b->sent, &b->received, &b->connections, &b->queries };
	return v[i];
}

/* r's budget is within max: every limit max sets that applies to r is set on r and not larger, over a
 * window at least as long (a longer window with a limit no larger is stricter). */
static bool budget_within(const struct sk_rule *r, const struct sk_budget *max)
{
	struct sk_budget rb = r->budget, mb = *max;
	bool any = false;
	for (int i = 0; i < 4; i++)
		any |= dim_applies(r, i) && *dim(&mb, i);
	if (!any)
		return true;
	if (!rb.window_ms || rb.window_ms < mb.window_ms)
		return false;
	for (int i = 0; i < 4; i++)
		if (dim_applies(r, i) && *dim(&mb, i) && (!*dim(&rb, i) || *dim(&rb, i) > *dim(&mb, i)))
			return false;
	return true;
}

static bool uid_allowed(const struct sk_guardrails *g, uint32_t u)
{
	for (size_t i = 0; i < g->n_exempt_uids; i++)
		if (g->exempt_uids[i] == u)
			return true;
	return false;
}

/* "guardrail FILE:LINE:COL KEY" */
static const char *gr_at(const struct sk_guardrails *g, struct sk_pos pos, const char *key, char *buf, size_t sz)
{
	(void)snprintf(buf, sz, "guardrail %.200s:%u:%u %s", g->source, pos.line, pos.col, key);
	return buf;
}

static void host_text(const char *host, bool wildcard, char *out, size_t sz)
{
	(void)snprintf(out, sz, "%s%s", wildcard ? "*." : "", host);
}

/* The walk both check and narrow make: each violation handed to `fn` with the rule index (-1: a top-level
 * key), the policy position, whether the sidecar can undo it, and the message. */
struct violation {
	size_t rule;               /* SIZE_MAX: not a rule */
	struct sk_pos pos;
	bool kept;                 /* in the kernel: the sidecar cannot narrow it */
	enum { V_REMOVE, V_BUDGET, V_BLOCK_PRIVATE, V_MODE, V_EXEMPT } what;
	char msg[1024];
};
typedef int (*violation_fn)(void *ctx, const struct violation *v);

static int walk(const struct sk_policy *p, const struct sk_guardrails *g, violation_fn fn, void *ctx)
{
	char gbuf[320], hb[SK_DOMAIN_MAX + 3], cb[SK_ADDR_STRLEN + 4], budget[128], mbudget[128];
	struct violation v;
	int r;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *rule = &p->rules[i];
		bool removed = false;
		for (size_t j = 0; j < g->n_denied_hosts && rule->kind == SK_RULE_HOST && !removed; j++) {
			const struct sk_guardrail_host *d = &g->denied_hosts[j];
			if (!host_overlaps(rule, d))
				continue;
			char key[48], dh[SK_DOMAIN_MAX + 3];
			(void)snprintf(key, sizeof(key), "deniedHosts[%zu]", j);
			host_text(rule->host, rule->wildcard, hb, sizeof(hb));
			host_text(d->host, d->wildcard, dh, sizeof(dh));
			v = (struct violation){ .rule = i, .pos = rule->pos, .what = V_REMOVE };
			(void)snprintf(v.msg, sizeof(v.msg), "egress[%zu]: host %s allows %s, denied by %s", i, hb, dh,
				       gr_at(g, d->pos, key, gbuf, sizeof(gbuf)));
			removed = true;
			if ((r = fn(ctx, &v)) < 0)
				return r;
		}
		for (size_t j = 0; j < g->n_denied_cidrs && rule->kind == SK_RULE_CIDR && !removed; j++) {
			const struct sk_guardrail_cidr *d = &g->denied_cidrs[j];
			if (!cidr_overlaps(&rule->cidr, &d->cidr))
				continue;
			char key[48], dc[SK_ADDR_STRLEN + 4];
			(void)snprintf(key, sizeof(key), "deniedCidrs[%zu]", j);
			sk_cidr_format(&rule->cidr, cb);
			sk_cidr_format(&d->cidr, dc);
			v = (struct violation){ .rule = i, .pos = rule->pos, .what = V_REMOVE, .kept = !proxied(rule) };
			(void)snprintf(v.msg, sizeof(v.msg), "egress[%zu]: cidr %s overlaps %s, denied by %s", i, cb, dc,
				       gr_at(g, d->pos, key, gbuf, sizeof(gbuf)));
			removed = true;
			if ((r = fn(ctx, &v)) < 0)
				return r;
		}
		if (!removed && g->inspect_denied && rule->inspect) {
			v = (struct violation){ .rule = i, .pos = rule->pos, .what = V_REMOVE };
			(void)snprintf(v.msg, sizeof(v.msg), "egress[%zu]: inspect: true is not allowed by %s", i,
				       gr_at(g, g->inspect_pos, "allowInspect: false", gbuf, sizeof(gbuf)));
			removed = true;
			if ((r = fn(ctx, &v)) < 0)
				return r;
		}
		if (!removed && g->max_budget.window_ms && proxied(rule) && !budget_within(rule, &g->max_budget)) {
			v = (struct violation){ .rule = i, .pos = rule->pos, .what = V_BUDGET };
			if (rule->budget.window_ms)
				sk_budget_format(&rule->budget, budget, sizeof(budget));
			else
				(void)snprintf(budget, sizeof(budget), "none (unlimited)");
			sk_budget_format(&g->max_budget, mbudget, sizeof(mbudget));
			(void)snprintf(v.msg, sizeof(v.msg), "egress[%zu]: budget %s%s exceeds %s, at most %s", i, budget,
				       rule->budget.from_default ? " (budgets.default)" : "",
				       gr_at(g, g->max_budget_pos, "maxBudget", gbuf, sizeof(gbuf)), mbudget);
			if ((r = fn(ctx, &v)) < 0)
				return r;
		}
	}
	if (g->block_private && !p->block_private) {
		v = (struct violation){ .rule = SIZE_MAX, .pos = p->block_private_pos, .what = V_BLOCK_PRIVATE };
		(void)snprintf(v.msg, sizeof(v.msg), "blockPrivate: false is not allowed by %s",
			       gr_at(g, g->block_private_pos, "blockPrivate: true", gbuf, sizeof(gbuf)));
		if ((r = fn(ctx, &v)) < 0)
			return r;
	}
	if (g->modes && !(g->modes & (1u << p->mode))) {
		v = (struct violation){ .rule = SIZE_MAX, .pos = p->mode_pos, .what = V_MODE };
		(void)snprintf(v.msg, sizeof(v.msg), "mode: %s is not allowed by %s", sk_mode_name(p->mode),
			       gr_at(g, g->modes_pos, "allowedModes", gbuf, sizeof(gbuf)));
		if ((r = fn(ctx, &v)) < 0)
			return r;
	}
	for (size_t i = 0; g->exempt_limited && i < p->n_exempt_uids; i++) {
		if (uid_allowed(g, p->exempt_uids[i]))
			continue;
		v = (struct violation){ .rule = SIZE_MAX, .pos = p->exempt_pos, .what = V_EXEMPT, .kept = true };
		(void)snprintf(v.msg, sizeof(v.msg), "exemptUids: %u is not allowed by %s", p->exempt_uids[i],
			       gr_at(g, g->exempt_pos, "allowedExemptUids", gbuf, sizeof(gbuf)));
		if ((r = fn(ctx, &v)) < 0)
			return r;
	}
	return 0;
}

struct check_ctx {
	const struct sk_policy *p;
	struct sk_diags *diags;
	size_t n;
};

static int check_one(void *ctx, const struct violation *v)
{
	struct check_ctx *c = ctx;
	sk_diags_add(c->diags, c->p->source, v->pos.line, v->pos.col, "%s", v->msg);
	c->n++;
	return 0;
}

size_t sk_guardrails_check(const struct sk_policy *p, const struct sk_guardrails *g, struct sk_diags *diags)
{
	struct check_ctx c = { .p = p, .diags = diags };
	const size_t first = diags->n;
	(void)walk(p, g, check_one, &c);  /* check_one never fails: sk_diags_add keeps its own count */
	sk_diags_sort_from(diags, first);
	return c.n;
}

/* ---- narrowing ------------------------------------------------------------------------------------------- */

void sk_gr_changes_free(struct sk_gr_changes *c)
{
	sk_diags_free(&c->d);
	free(c->kind);
	c->kind = NULL;
	c->cap = 0;
}

struct narrow_ctx {
	struct sk_policy *p;
	const struct sk_guardrails *g;
	struct sk_gr_changes *out;
	bool *drop;                /* per rule */
};

static int record(struct narrow_ctx *c, const struct violation *v, enum sk_gr_change kind, const char *what)
{
	struct sk_gr_changes *o = c->out;
	const size_t before = o->d.n;
	sk_diags_add(&o->d, c->p->source, v->pos.line, v->pos.col, "%s: %s", v->msg, what);
	if (o->d.n == before)
		return -ENOMEM;
	if (o->d.n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 8;
		while (cap < o->d.n)
			cap *= 2;
		enum sk_gr_change *k = realloc(o->kind, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		o->kind = k;
		o->cap = cap;
	}
	o->kind[o->d.n - 1] = kind;
	return 0;
}

static int narrow_one(void *ctx, const struct violation *v)
{
	struct narrow_ctx *c = ctx;
	struct sk_policy *p = c->p;
	const struct sk_guardrails *g = c->g;
	if (v->kept)
		return record(c, v, SK_GR_KEPT, "kept: the pod's kernel rules hold it until the pod restarts");
	switch (v->what) {
	case V_REMOVE:
		c->drop[v->rule] = true;
		return record(c, v, SK_GR_NARROWED, "rule removed");
	case V_BUDGET: {
		struct sk_rule *r = &p->rules[v->rule];
		struct sk_budget nb = r->budget.window_ms ? r->budget : (struct sk_budget){ 0 };
		struct sk_budget mb = g->max_budget;
		if (nb.window_ms < mb.window_ms)
			nb.window_ms = mb.window_ms;
		for (int i = 0; i < 4; i++)
			if (dim_applies(r, i) && *dim(&mb, i) && (!*dim(&nb, i) || *dim(&nb, i) > *dim(&mb, i)))
				*dim(&nb, i) = *dim(&mb, i);
		nb.from_default = false;
		r->budget = nb;
		char b[128], what[160];
		(void)snprintf(what, sizeof(what), "budget now %s", sk_budget_format(&nb, b, sizeof(b)));
		return record(c, v, SK_GR_NARROWED, what);
	}
	case V_BLOCK_PRIVATE:
		p->block_private = true;
		return record(c, v, SK_GR_NARROWED, "blockPrivate now true");
	case V_MODE: {
		enum sk_mode m = (g->modes & (1u << SK_MODE_ENFORCE)) ? SK_MODE_ENFORCE : SK_MODE_AUDIT;
		p->mode = m;
		char what[64];
		(void)snprintf(what, sizeof(what), "mode now %s", sk_mode_name(m));
		return record(c, v, SK_GR_NARROWED, what);
	}
	case V_EXEMPT:
		break;
	}
	return record(c, v, SK_GR_KEPT, "kept");
}

/* Drops the rules flagged in drop (freeing what they own), keeping the others in order; rebuilds the
 * matcher when one went. 0 or -ENOMEM. */
static int drop_rules(struct sk_policy *p, const bool *drop)
{
	size_t o = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct sk_rule *rule = &p->rules[i];
		if (!drop[i]) {
			if (o != i)
				p->rules[o] = *rule;
			o++;
			continue;
		}
		free(rule->host);
		free(rule->ports);
		free(rule->name);
		sk_requests_free(rule->requests);
	}
	if (o == p->n_rules)
		return 0;
	p->n_rules = o;
	/* The matcher indexes rules by position and borrows their names: it must follow the new list. */
	return p->matcher ? sk_matcher_build(p) : 0;
}

int sk_guardrails_narrow(struct sk_policy *p, const struct sk_guardrails *g, struct sk_gr_changes *out)
{
	/* one flag per rule (at least one, so an empty policy needs no special case) */
	bool *drop = calloc(p->n_rules ? p->n_rules : 1, sizeof(bool));
	if (!drop)
		return -ENOMEM;
	struct narrow_ctx c = { .p = p, .g = g, .out = out, .drop = drop };
	int r = walk(p, g, narrow_one, &c);
	if (r == 0)
		r = drop_rules(p, drop);
	free(drop);
	/* maxBudget gives a budget to every proxied rule: the sidecar counts at most SK_BUDGET_MAX_RULES */
	size_t budgeted = 0;
	for (size_t i = 0; r == 0 && i < p->n_rules; i++)
		budgeted += p->rules[i].budget.window_ms != 0;
	return r == 0 && budgeted > SK_BUDGET_MAX_RULES ? -E2BIG : r;
}
