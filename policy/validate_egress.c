/* policy/validate_egress.c — the egress rules: each rule's keys (host or cidr, ports, protocol, direct,
 * budget, name) into a model rule, the quiet checks its hot path tries first, and, once the whole policy
 * is known, the check of the rules that go around the proxy. The rule validator is validate_rule. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/addr.h"
#include "policy/domain.h"
#include "policy/internal.h"
#include "policy/requests.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

#define protos sk_schema_protos  /* enum sk_proto order */
#define PROTO_EXPECTED "tls, http, tcp, udp or any"

/* egress[i].name: optional, unique among the rules; the stable `rule` label of metrics and audit lines
 * (the list position changes whenever a rule is inserted above). Returns an owned copy, NULL when absent
 * or invalid (*bad set). */
static char *get_rule_name(struct sk_load_ctx *c, const struct sk_node *nn, const char *path,
			   const struct sk_policy *p, bool *bad)
{
	char q[SK_QUOTE_MAX];
	const char *s = sk_get_str(c, nn, path, "a name [a-z0-9-]{1,63}");
	if (!s) {
		*bad = true;
		return NULL;
	}
	if (!sk_name_ok(s)) {
		err_at(c, nn, "%s: %s is not a valid rule name, expected [a-z0-9-]{1,63}", path,
		       sk_quote(s, q, sizeof(q)));
		*bad = true;
		return NULL;
	}
	for (size_t j = 0; j < p->n_rules; j++)
		if (p->rules[j].name && !strcmp(p->rules[j].name, s)) {
			err_at(c, nn, "%s: %s is already the name of the rule at %u:%u, expected unique names", path,
			       sk_quote(s, q, sizeof(q)), p->rules[j].pos.line, p->rules[j].pos.col);
			*bad = true;
			return NULL;
		}
	char *copy = strdup(s);
	if (!copy) {
		err_at(c, nn, "%s: out of memory", path);
		*bad = true;
	}
	return copy;
}

/* Where each egress rule key sits in sk_schema_rule.fields, looked up once per egress list. */
enum { RK_HOST, RK_CIDR, RK_PORTS, RK_PROTOCOL, RK_DIRECT, RK_BUDGET, RK_NAME, RK_N };
static const char *const rule_keys[RK_N] = { "host", "cidr", "ports", "protocol", "direct", "budget", "name" };

struct rule_fields {
	size_t field[RK_N];
	size_t n_protos;
};

/* kpath = the rule's path + "." + key; only for a message now, so no faster than sk_path_key. */
static void rule_kpath(char kpath[PATHSZ], struct sk_lazy_path *lp, const char *key)
{
	sk_path_key(kpath, PATHSZ, sk_lazy_path(lp), key);
}

/* Each key of a rule is first tried without its path: the quiet checks below accept only what the
 * general one (sk_get_port_list, sk_get_enum, sk_get_bool, sk_parse_cidr_at) accepts without a message, and give
 * the same value; anything else goes to the general one, with its path, for the message. */
static bool port_list_quiet(const struct sk_node *n, uint16_t **out, size_t *n_out)
{
	if (n->kind != SK_NODE_SEQ || n->n == 0)
		return false;
	uint16_t *v = malloc(n->n * sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < n->n; i++) {
		if (!sk_port_quiet(n->items[i], &v[i])) {
			free(v);
			return false;
		}
	}
	*n_out = sk_sort_unique_u16(v, n->n);
	*out = v;
	return true;
}

static void validate_rule(struct sk_load_ctx *c, const struct sk_node *n, size_t idx, struct sk_policy *p,
			  const struct rule_fields *rf)
{
	char kpath[PATHSZ];
	struct sk_lazy_path lp;  /* not zeroed: s is written before it is read */
	lp.base = "egress";
	lp.idx = idx;
	lp.done = false;
	const size_t n_before = p->n_rules;  /* the rule this item adds, if any, is the next one */
	if (n->kind != SK_NODE_MAP) {
		sk_want_map(c, n, sk_lazy_path(&lp));
		return;
	}
	const struct sk_node *vals[32] = { 0 };
	_Static_assert(RK_N <= SK_ARRAY_SIZE(vals), "vals holds every rule key");
	sk_gather_keys_at(c, n, &lp, &sk_schema_rule, vals);
	const size_t *field = rf->field;
	const struct sk_node *host = vals[field[RK_HOST]], *cidr = vals[field[RK_CIDR]];
	const struct sk_node *pn = vals[field[RK_PORTS]], *prn = vals[field[RK_PROTOCOL]];
	const struct sk_node *dn = vals[field[RK_DIRECT]], *bn = vals[field[RK_BUDGET]];
	const struct sk_node *nn = vals[field[RK_NAME]];
	const bool quiet = !(c->flags & SK_LOAD_GENERAL_PATHS);
	bool bad = false, direct = false;
	int proto = SK_PROTO_ANY;
	uint16_t *ports = NULL;
	size_t n_ports = 0;
	struct sk_budget budget = { 0 };
	char *name = NULL;

	if (host && cidr) {
		err_at(c, n, "%s: has both host and cidr, expected exactly one of them", sk_lazy_path(&lp));
		bad = true;
	} else if (!host && !cidr) {
		err_at(c, n, "%s: has neither host nor cidr, expected exactly one of them", sk_lazy_path(&lp));
		bad = true;
	}
	if (pn && !(quiet && port_list_quiet(pn, &ports, &n_ports))) {
		rule_kpath(kpath, &lp, "ports");
		if (sk_get_port_list(c, pn, kpath, &ports, &n_ports) < 0)
			bad = true;
	}
	if (prn) {
		proto = quiet && prn->kind == SK_NODE_SCALAR && prn->skind == SK_SCALAR_STR ?
				sk_enum_index(prn->text, protos, rf->n_protos) : -1;
		if (proto < 0) {
			rule_kpath(kpath, &lp, "protocol");
			proto = sk_get_enum(c, prn, kpath, "protocol", protos, rf->n_protos, PROTO_EXPECTED);
			if (proto < 0)
				bad = true;
		}
	}
	if (dn) {
		if (quiet && dn->kind == SK_NODE_SCALAR && dn->skind == SK_SCALAR_BOOL) {
			direct = dn->text[0] == 't' || dn->text[0] == 'T';  /* as sk_get_bool reads it */
		} else {
			rule_kpath(kpath, &lp, "direct");
			if (sk_get_bool(c, dn, kpath, &direct) < 0)
				bad = true;
		}
	}
	if (bn) {
		rule_kpath(kpath, &lp, "budget");
		const char *h = host && host->kind == SK_NODE_SCALAR ? host->text : "";
		if (sk_get_budget(c, bn, kpath, &budget) < 0 ||
		    !sk_rule_budget_ok(c, bn, kpath, host && !cidr, h[0] == '*', direct, proto, &budget))
			bad = true;
	}
	if (nn) {
		rule_kpath(kpath, &lp, "name");
		name = get_rule_name(c, nn, kpath, p, &bad);
	}
	if (host && !cidr) {
		/* The proxy decides host rules by the name it sees in a TCP stream; UDP never reaches it. */
		if (proto == SK_PROTO_UDP) {
			rule_kpath(kpath, &lp, "protocol");
			err_at(c, prn, "%s: UDP cannot be proxied by name, expected a cidr rule for udp traffic", kpath);
			bad = true;
		}
		if (direct) {
			rule_kpath(kpath, &lp, "direct");
			err_at(c, dn, "%s: only cidr rules can be direct, expected direct on a cidr rule "
				      "(a host rule is decided by name in the proxy)", kpath);
			bad = true;
		}
		rule_kpath(kpath, &lp, "host");
		if (bad) {
			char norm[SK_DOMAIN_MAX + 1];
			bool wc;
			sk_check_host_name(c, host, kpath, norm, &wc);  /* for its messages only */
		} else if (sk_add_host_rule(c, p, host, kpath, ports, n_ports) == 0) {
			struct sk_rule *r = &p->rules[p->n_rules - 1];
			r->proto = (enum sk_proto)proto;
			r->pos = (struct sk_pos){ n->line, n->col };
			r->budget = budget;
			r->name = sk_steal_pointer(&name);
		}
	} else if (cidr && !host) {
		struct sk_cidr net;
		if (!(quiet && cidr->kind == SK_NODE_SCALAR && cidr->skind == SK_SCALAR_STR &&
		      sk_cidr_parse(cidr->text, &net, NULL) == 0)) {
			rule_kpath(kpath, &lp, "cidr");
			if (sk_parse_cidr_at(c, cidr, kpath, &net) < 0)
				bad = true;
		}
		/* A direct rule is an nft set match in the kernel: it sees ports, never a TLS or HTTP header. */
		if (direct && (proto == SK_PROTO_TLS || proto == SK_PROTO_HTTP)) {
			rule_kpath(kpath, &lp, "direct");
			err_at(c, dn, "%s: a direct rule bypasses the proxy and cannot check protocol %s, "
				      "expected protocol tcp, udp or any", kpath, protos[proto]);
			bad = true;
		}
		if (!bad) {
			struct sk_rule *r = sk_policy_add_rule(c, p);
			if (r) {
				r->kind = SK_RULE_CIDR;
				r->cidr = net;
				r->pos = (struct sk_pos){ n->line, n->col };
				r->ports = sk_steal_pointer(&ports);
				r->n_ports = n_ports;
				r->direct = direct;
				r->proto = (enum sk_proto)proto;
				r->budget = budget;
				r->name = sk_steal_pointer(&name);
			}
		}
	}
	free(ports);
	free(name);
	sk_requests_validate(c, n, sk_lazy_path(&lp), p->n_rules > n_before ? &p->rules[p->n_rules - 1] : NULL);
}

void sk_validate_egress(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!sk_want_seq(c, n, "egress", "rules"))
		return;
	struct rule_fields rf = { .n_protos = sk_schema_count(protos) };
	for (size_t k = 0; k < RK_N; k++) {
		const struct sk_schema_field *f = sk_schema_field(&sk_schema_rule, rule_keys[k]);
		if (!f) {  /* schema.c and this file disagree: a bug, refused rather than a key ignored */
			err_at(c, n, "egress: internal error: no schema field for '%s'", rule_keys[k]);
			return;
		}
		rf.field[k] = (size_t)(f - sk_schema_rule.fields);
	}
	for (size_t i = 0; i < n->n; i++)
		validate_rule(c, n->items[i], i, p, &rf);
}

/* A direct or udp cidr rule becomes an nft set in the kernel: the proxy's "only a rule lying wholly inside
 * the class names a link-local (or, with blockPrivate, private) destination" never runs for it. So such a
 * rule may not overlap a class without lying wholly inside it: 0.0.0.0/0, ::/0, 2002::/16 (6to4 images
 * of 169.254.169.254) or 100.64.0.0/10 (holds 100.100.100.200) are refused; 169.254.169.254/32,
 * 10.96.0.0/12 and 198.18.1.20/32 are not. Runs once the whole policy is known (blockPrivate may come
 * after egress). Rules are matched to their egress items by position, in order. */
void sk_check_bypass_rules(struct sk_load_ctx *c, const struct sk_node *egress, const struct sk_policy *p)
{
	if (!egress || egress->kind != SK_NODE_SEQ)
		return;
	size_t j = 0;
	for (size_t i = 0; i < egress->n && j < p->n_rules; i++) {
		const struct sk_node *item = egress->items[i];
		const struct sk_rule *r = &p->rules[j];
		if (r->pos.line != item->line || r->pos.col != item->col)
			continue;
		j++;
		if (r->kind != SK_RULE_CIDR || !(r->direct || r->proto == SK_PROTO_UDP))
			continue;
		const char *kind = r->direct && r->proto == SK_PROTO_UDP ? "direct udp" : r->direct ? "direct" : "udp";
		char net[SK_ADDR_STRLEN + 4], list[256];
		const struct sk_node *cn = NULL;
		if (!sk_cidr_is_link_local(&r->cidr) && sk_cidr_link_local_overlaps(&r->cidr, list, sizeof(list))) {
			cn = sk_node_get(item, "cidr");  /* where the message points */
			sk_cidr_format(&r->cidr, net);  /* for the message only */
			err_at(c, cn ? cn : item, "egress[%zu].cidr: %s is a %s rule, which goes around the proxy, and "
				"contains link-local/metadata addresses (%s); expected a block that lies wholly inside "
				"one of them or contains none", i, net, kind, list);
		} else if (p->block_private && !sk_cidr_is_private(&r->cidr) &&
			   sk_cidr_private_overlaps(&r->cidr, list, sizeof(list))) {
			cn = sk_node_get(item, "cidr");
			sk_cidr_format(&r->cidr, net);
			err_at(c, cn ? cn : item, "egress[%zu].cidr: %s is a %s rule, which goes around the proxy, and "
				"contains private addresses (%s) while blockPrivate is true; expected a block that lies "
				"wholly inside one private range or contains none", i, net, kind, list);
		}
	}
}
