/* policy/validate_budgets.c — exfiltration budgets (docs/policy.md "Budgets"): a budget mapping (sizes,
 * windows, counts), where a rule's budget is meaningful, budgets.default and its copy into every proxied
 * rule without a budget of its own, and the cap on budgeted rules. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

#define SIZE_EXPECTED "a number of bytes, optionally with Ki, Mi, Gi or Ti (e.g. 10Mi)"
#define SIZE_MAX_BYTES (1ull << 50)   /* 1024Ti: far past any window, and no overflow in the counters */

/* Digits then a suffix; *num gets the value. 0 when the text is digits + one of sufs (or no suffix when
 * "" is among them); -1 otherwise. Sets *unit to the index of the suffix. */
static int split_number(const char *t, const char *const *sufs, size_t n_sufs, unsigned long long *num,
			size_t *unit)
{
	const char *p = t;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == t || p - t > 19)
		return -1;
	for (size_t i = 0; i < n_sufs; i++) {
		if (!strcmp(p, sufs[i])) {
			errno = 0;
			*num = strtoull(t, NULL, 10);
			if (errno == ERANGE)
				return -1;
			*unit = i;
			return 0;
		}
	}
	return -1;
}

/* A byte size: a whole number, or a string "<n>Ki|Mi|Gi|Ti" (binary units only: "10M" is refused rather
 * than guessed as 10^7 or 10·2^20). 1 byte .. 1024Ti. */
static int get_size(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint64_t *out)
{
	static const char *const sufs[] = { "", "Ki", "Mi", "Gi", "Ti" };
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || (n->skind != SK_SCALAR_NUM && n->skind != SK_SCALAR_STR)) {
		err_at(c, n, "%s: expected %s, got %s", path, SIZE_EXPECTED, sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	unsigned long long v = 0;
	size_t unit = 0;
	if (split_number(n->text, sufs, SK_ARRAY_SIZE(sufs), &v, &unit) < 0) {
		if (n->text[0] == '-')
			err_at(c, n, "%s: %s is negative, expected %s", path, sk_quote(n->text, q, sizeof(q)),
			       SIZE_EXPECTED);
		else
			err_at(c, n, "%s: %s is not a size, expected %s", path, sk_quote(n->text, q, sizeof(q)),
			       SIZE_EXPECTED);
		return -EINVAL;
	}
	if (v == 0) {
		err_at(c, n, "%s: 0 would allow nothing, expected at least 1 byte (leave the key out for no limit)",
		       path);
		return -EINVAL;
	}
	if (v > SIZE_MAX_BYTES >> (10 * unit)) {
		err_at(c, n, "%s: %s is too large, expected at most 1024Ti", path, sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	*out = (uint64_t)v << (10 * unit);
	return 0;
}

/* A window: "<n>s", "<n>m" or "<n>h", 1s .. 24h. */
static int get_window(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint64_t *out_ms)
{
	static const char *const sufs[] = { "s", "m", "h" };
	static const uint64_t ms[] = { 1000, 60000, 3600000 };
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || (n->skind != SK_SCALAR_NUM && n->skind != SK_SCALAR_STR)) {
		err_at(c, n, "%s: expected a duration like 30s, 10m or 1h, got %s", path,
		       sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	unsigned long long v = 0;
	size_t unit = 0;
	if (split_number(n->text, sufs, SK_ARRAY_SIZE(sufs), &v, &unit) < 0) {
		err_at(c, n, "%s: %s is not a duration, expected a whole number with s, m or h (e.g. 30s, 10m, 1h)",
		       path, sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	if (v == 0) {
		err_at(c, n, "%s: a window of 0 counts nothing, expected 1s to 24h", path);
		return -EINVAL;
	}
	if (v > SK_BUDGET_MAX_WINDOW_MS / ms[unit]) {
		err_at(c, n, "%s: %s is longer than 24h, expected 1s to 24h (counters live in memory)", path,
		       sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	*out_ms = (uint64_t)v * ms[unit];
	return 0;
}

/* A budget mapping: window and at least one of sent, received, connections, queries. Whether it may
 * stand where it is (the rule kind) is the caller's check. */
int sk_get_budget(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_budget *out)
{
	char kpath[PATHSZ];
	struct sk_budget b = { 0 };
	bool bad = false;
	if (!sk_want_map(c, n, path))
		return -EINVAL;
	sk_check_keys(c, n, path, &sk_schema_budget);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "sent"))) {
		sk_path_key(kpath, sizeof(kpath), path, "sent");
		bad |= get_size(c, v, kpath, &b.sent) < 0;
	}
	if ((v = sk_node_get(n, "received"))) {
		sk_path_key(kpath, sizeof(kpath), path, "received");
		bad |= get_size(c, v, kpath, &b.received) < 0;
	}
	unsigned long long u;
	if ((v = sk_node_get(n, "connections"))) {
		sk_path_key(kpath, sizeof(kpath), path, "connections");
		if (sk_get_uint(c, v, kpath, 1, 1ull << 40, "a number of connections >= 1", &u) < 0)
			bad = true;
		else
			b.connections = u;
	}
	if ((v = sk_node_get(n, "queries"))) {
		sk_path_key(kpath, sizeof(kpath), path, "queries");
		if (sk_get_uint(c, v, kpath, 1, 1ull << 40, "a number of DNS queries >= 1", &u) < 0)
			bad = true;
		else
			b.queries = u;
	}
	if ((v = sk_need(c, n, path, "window", "a window like window: 10m (1s to 24h)"))) {
		sk_path_key(kpath, sizeof(kpath), path, "window");
		bad |= get_window(c, v, kpath, &b.window_ms) < 0;
	} else {
		bad = true;
	}
	if (!bad && !b.sent && !b.received && !b.connections && !b.queries) {
		err_at(c, n, "%s: limits nothing, expected at least one of sent, received, connections, queries", path);
		bad = true;
	}
	if (bad)
		return -EINVAL;
	*out = b;
	return 0;
}

/* Where a budget on egress[i] is meaningful: every rule the proxy relays. A direct or udp cidr rule is
 * an nft set in the kernel — no byte of it passes the sidecar, so nothing could count or cut it. queries
 * counts the DNS names under a wildcard zone: only a wildcard host rule has such names. */
bool sk_rule_budget_ok(struct sk_load_ctx *c, const struct sk_node *bn, const char *path, bool host,
		       bool wildcard, bool direct, int proto, const struct sk_budget *b)
{
	if (!host && (direct || proto == SK_PROTO_UDP)) {
		err_at(c, bn, "%s: a %s cidr rule bypasses the proxy, so nothing can count its bytes; expected a "
			      "budget on a host rule or a proxied (non-direct, tcp) cidr rule", path,
		       direct ? "direct" : "udp");
		return false;
	}
	if (b->queries && !(host && wildcard)) {
		const struct sk_node *qn = sk_node_get(bn, "queries");
		char kpath[PATHSZ];
		sk_path_key(kpath, sizeof(kpath), path, "queries");
		err_at(c, qn ? qn : bn, "%s: counts DNS names under a wildcard zone, expected it on a wildcard host "
					"rule (host: \"*.example.com\")", kpath);
		return false;
	}
	return true;
}

void sk_validate_budgets(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!sk_want_map(c, n, "budgets"))
		return;
	sk_check_keys(c, n, "budgets", &sk_schema_budgets);
	const struct sk_node *d = sk_node_get(n, "default");
	struct sk_budget b;
	if (d && sk_get_budget(c, d, "budgets.default", &b) == 0)
		p->budget_default = b;
}

/* budgets.default goes to every proxied rule without a budget of its own (its queries only to wildcard
 * rules); then the count of budgeted rules is held to the sidecar table's cap. Runs once the whole
 * policy is known (budgets may come after egress). */
void sk_apply_default_budget(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p)
{
	const struct sk_budget *def = &p->budget_default;
	size_t n = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct sk_rule *r = &p->rules[i];
		if (def->window_ms && !r->budget.window_ms &&
		    !(r->kind == SK_RULE_CIDR && (r->direct || r->proto == SK_PROTO_UDP))) {
			struct sk_budget b = *def;
			if (!(r->kind == SK_RULE_HOST && r->wildcard))
				b.queries = 0;
			if (b.sent || b.received || b.connections || b.queries) {
				b.from_default = true;
				r->budget = b;
			}
		}
		n += r->budget.window_ms != 0;
	}
	if (n > SK_BUDGET_MAX_RULES) {
		const struct sk_node *at = sk_node_get(root, "budgets");
		if (!at)
			at = sk_node_get(root, "egress");
		err_at(c, at ? at : root, "budgets: %zu rules have a budget, expected at most %d (one counter each "
					  "in the sidecar)", n, SK_BUDGET_MAX_RULES);
	}
}
