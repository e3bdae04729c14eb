/* policy/forge.c — imports forge-supervisor's egress_allowlist.json into the stockade model, faithfully
 * and loudly: every field it maps (or deliberately ignores) leaves one import note, which `check`
 * prints, so nobody has to guess what the old file now means. forge-supervisor's proxy only ever saw
 * ports 80 and 443, so those are the ports of every rule it produces.
 *
 *   mode deny-all   → no egress rules (the domain lists and private CIDRs are ignored, and said so)
 *   mode allowlist  → one host rule per name in allowed_domains ∪ tool_domains ∪ all_domains, 80/443
 *   mode dev-open   → mode audit (nothing denied) with the same rules, so audit lines say what enforce
 *                     would have denied
 *   allow_private_ips     → blockPrivate = !allow_private_ips (absent: blockPrivate true)
 *   allowed_private_cidrs → cidr rules on 80/443, after the host rules
 *   profile               → kept as a note only: the mode and lists already say what it selected */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/internal.h"

static const char *const forge_keys[] = { "profile", "mode", "allowed_domains", "tool_domains", "all_domains",
					  "allow_private_ips", "allowed_private_cidrs" };
static const uint16_t forge_ports[] = { 80, 443 };
#define PL(n) ((n) == 1 ? "" : "s")

bool sk_forge_detect(const struct sk_node *root)
{
	static const char *const marks[] = { "profile", "allowed_domains", "all_domains", "tool_domains",
					     "allow_private_ips" };
	if (!root || root->kind != SK_NODE_MAP)
		return false;
	for (size_t i = 0; i < SK_ARRAY_SIZE(marks); i++)
		if (sk_node_get(root, marks[i]))
			return true;
	return false;
}

static void forge_error_kind(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *expected)
{
	char d[SK_QUOTE_MAX + 16];
	sk_ctx_error(c, n->line, n->col, "%s: expected %s, got %s", path, expected, sk_node_describe(n, d, sizeof(d)));
}

/* Adds host rules for one domain list, skipping names an earlier list already had. Returns the number
 * of entries in the list (valid or not) and counts duplicates in *dups. */
static size_t add_list(struct sk_load_ctx *c, struct sk_policy *p, const struct sk_node *list, const char *key,
		       bool add, size_t *dups)
{
	char path[96];
	if (!list)
		return 0;
	if (list->kind != SK_NODE_SEQ) {
		forge_error_kind(c, list, key, "a list of domain names");
		return 0;
	}
	for (size_t i = 0; i < list->n; i++) {
		(void)snprintf(path, sizeof(path), "%s[%zu]", key, i);
		size_t before = p->n_rules;
		if (sk_add_host_rule(c, p, list->items[i], path, forge_ports, SK_ARRAY_SIZE(forge_ports)) < 0)
			continue;
		struct sk_rule *r = &p->rules[before];
		bool dup = false;
		for (size_t j = 0; j < before && !dup; j++)
			dup = p->rules[j].kind == SK_RULE_HOST && p->rules[j].wildcard == r->wildcard &&
			      !strcmp(p->rules[j].host, r->host);
		/* deny-all validates the names (a typo is still a typo) but keeps no rule. */
		if (dup || !add) {
			free(r->host);
			free(r->ports);
			p->n_rules--;
			*dups += dup;
		}
	}
	return list->n;
}

void sk_forge_import(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p)
{
	static const char *const profiles[] = { "strict", "standard", "permissive" };
	static const char *const modes[] = { "deny-all", "allowlist", "dev-open" };
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16], expected[160];
	if (root->kind != SK_NODE_MAP) {
		sk_ctx_error(c, root->line, root->col, "forge allowlist: expected a JSON object, got %s",
			     sk_node_describe(root, d, sizeof(d)));
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < SK_ARRAY_SIZE(forge_keys); i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s", i ? ", " : "", forge_keys[i]);
	for (size_t i = 0; i + 1 < root->n; i += 2) {
		const struct sk_node *k = root->items[i];
		bool known = false;
		for (size_t j = 0; j < SK_ARRAY_SIZE(forge_keys) && !known; j++)
			known = !strcmp(k->text, forge_keys[j]);
		if (!known) {
			sk_ctx_error(c, k->line, k->col, "forge allowlist: unknown key %s, expected one of %s",
				     sk_quote(k->text, q, sizeof(q)), expected);
			continue;
		}
		for (size_t j = 0; j < i; j += 2)
			if (!strcmp(root->items[j]->text, k->text)) {
				sk_ctx_error(c, k->line, k->col,
					     "forge allowlist: duplicate key %s (first at %u:%u), expected each key once",
					     sk_quote(k->text, q, sizeof(q)), root->items[j]->line, root->items[j]->col);
				break;
			}
	}

	const char *profile = NULL;
	int private_note = -1;  /* -1 absent, else the allow_private_ips value */
	const struct sk_node *v = sk_node_get(root, "profile");
	if (v) {
		size_t i = 0;
		if (v->kind == SK_NODE_SCALAR && v->skind == SK_SCALAR_STR)
			while (i < SK_ARRAY_SIZE(profiles) && strcmp(v->text, profiles[i]) != 0)
				i++;
		if (v->kind != SK_NODE_SCALAR || v->skind != SK_SCALAR_STR || i == SK_ARRAY_SIZE(profiles))
			sk_ctx_error(c, v->line, v->col, "profile: %s is not a forge profile, expected strict, "
							 "standard or permissive",
				     v->kind == SK_NODE_SCALAR ? sk_quote(v->text, q, sizeof(q)) : "value");
		else
			profile = profiles[i];
	}

	int mode = -1;
	v = sk_node_get(root, "mode");
	if (!v) {
		sk_ctx_error(c, root->line, root->col,
			     "forge allowlist: missing key 'mode', expected mode: deny-all, allowlist or dev-open");
	} else if (v->kind == SK_NODE_SCALAR && v->skind == SK_SCALAR_STR) {
		for (size_t i = 0; i < SK_ARRAY_SIZE(modes) && mode < 0; i++)
			if (!strcmp(v->text, modes[i]))
				mode = (int)i;
		if (mode < 0)
			sk_ctx_error(c, v->line, v->col, "mode: %s is not a forge mode, expected deny-all, allowlist or "
							 "dev-open", sk_quote(v->text, q, sizeof(q)));
	} else {
		forge_error_kind(c, v, "mode", "deny-all, allowlist or dev-open");
	}
	const bool keep_rules = mode != 0;  /* deny-all allows nothing */

	static const char *const lists[] = { "allowed_domains", "tool_domains", "all_domains" };
	size_t counts[3], dups = 0;
	for (size_t i = 0; i < 3; i++)
		counts[i] = add_list(c, p, sk_node_get(root, lists[i]), lists[i], keep_rules, &dups);
	const size_t n_host = p->n_rules;

	v = sk_node_get(root, "allow_private_ips");
	if (v) {
		if (v->kind != SK_NODE_SCALAR || v->skind != SK_SCALAR_BOOL) {
			forge_error_kind(c, v, "allow_private_ips", "true or false");
		} else {
			const bool allow = v->text[0] == 't';
			p->block_private = !allow;
			private_note = allow;
		}
	}

	size_t n_cidr_listed = 0;
	v = sk_node_get(root, "allowed_private_cidrs");
	if (v && v->kind != SK_NODE_SEQ) {
		forge_error_kind(c, v, "allowed_private_cidrs", "a list of CIDRs");
	} else if (v) {
		n_cidr_listed = v->n;
		for (size_t i = 0; i < v->n; i++) {
			char path[64];
			struct sk_cidr net;
			(void)snprintf(path, sizeof(path), "allowed_private_cidrs[%zu]", i);
			if (sk_parse_cidr_at(c, v->items[i], path, &net) < 0 || !keep_rules)
				continue;
			struct sk_rule *r = sk_policy_add_rule(c, p);
			if (!r)
				return;
			r->kind = SK_RULE_CIDR;
			r->cidr = net;
			r->pos = (struct sk_pos){ v->items[i]->line, v->items[i]->col };
			r->ports = malloc(sizeof(forge_ports));
			if (!r->ports) {
				sk_ctx_error(c, 0, 0, "out of memory");
				return;
			}
			memcpy(r->ports, forge_ports, sizeof(forge_ports));
			r->n_ports = SK_ARRAY_SIZE(forge_ports);
		}
	}

	switch (mode) {
	case 0:
		sk_policy_add_note(p, "mapped: mode deny-all -> no egress rules (everything denied)");
		for (size_t i = 0; i < 3; i++)
			if (counts[i])
				sk_policy_add_note(p, "ignored: %s (%zu name%s): mode deny-all allows nothing", lists[i],
						   counts[i], PL(counts[i]));
		if (n_cidr_listed)
			sk_policy_add_note(p, "ignored: allowed_private_cidrs (%zu entr%s): mode deny-all allows nothing",
					   n_cidr_listed, n_cidr_listed == 1 ? "y" : "ies");
		break;
	case 1:
		sk_policy_add_note(p, "mapped: mode allowlist -> %zu host rule%s on ports 80,443", n_host, PL(n_host));
		break;
	case 2:
		p->mode = SK_MODE_AUDIT;
		sk_policy_add_note(p, "mapped: mode dev-open -> mode audit (nothing denied, would-be denials logged) "
				      "with %zu host rule%s on ports 80,443", n_host, PL(n_host));
		break;
	default:
		break;
	}
	if (mode > 0) {
		sk_policy_add_note(p, "mapped: domains from allowed_domains %zu + tool_domains %zu + all_domains %zu, "
				      "%zu duplicate%s dropped", counts[0], counts[1], counts[2], dups, PL(dups));
		if (n_cidr_listed)
			sk_policy_add_note(p, "mapped: allowed_private_cidrs -> %zu cidr rule%s on ports 80,443",
					   p->n_rules - n_host, PL(p->n_rules - n_host));
	}
	if (private_note < 0)
		sk_policy_add_note(p, "default: allow_private_ips absent -> blockPrivate true");
	else
		sk_policy_add_note(p, "mapped: allow_private_ips %s -> blockPrivate %s", private_note ? "true" : "false",
				   private_note ? "false" : "true");
	if (profile)
		sk_policy_add_note(p, "kept: profile %s (informational; the mode and domain lists decide)", profile);
	if (sk_policy_dns_defaults(p) < 0)
		sk_ctx_error(c, 0, 0, "out of memory");
}
