/* sidecar/core/budget.c — see budget.h. */
#include "sidecar/core/budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

/* The rule's content, as sk_rule_format shows it (host or cidr, ports, protocol, direct), hashed field by
 * field so a rule with thousands of ports needs no text buffer. Stable within the process, which is all
 * a reload needs. */
static uint64_t rule_key(const struct sk_rule *r)
{
	uint64_t h = SK_FNV64_OFFSET;
	uint8_t head[4] = { (uint8_t)r->kind, (uint8_t)r->wildcard, (uint8_t)r->proto, (uint8_t)r->direct };
	h = sk_fnv1a64_add(h, head, sizeof(head));
	if (r->kind == SK_RULE_HOST) {
		h = sk_fnv1a64_add_str(h, r->host ? r->host : "");
		h = sk_fnv1a64_byte(h, 0);
	} else {
		h = sk_fnv1a64_byte(h, r->cidr.net.family);
		h = sk_fnv1a64_add(h, r->cidr.net.bytes, sizeof(r->cidr.net.bytes));
		h = sk_fnv1a64_byte(h, r->cidr.prefix);
	}
	for (size_t i = 0; i < r->n_ports; i++)
		h = sk_fnv1a64_add(h, &r->ports[i], sizeof(r->ports[i]));
	return h;
}

void sk_budget_table_init(struct sk_budget_table *t)
{
	memset(t, 0, sizeof(*t));
}

void sk_budget_table_fini(struct sk_budget_table *t)
{
	struct sk_budget_entry *e = t->head;
	while (e) {
		struct sk_budget_entry *next = e->next;
		free(e);
		e = next;
	}
	free(t->by_rule);
	memset(t, 0, sizeof(*t));
}

static void unlink_entry(struct sk_budget_table *t, struct sk_budget_entry *e)
{
	for (struct sk_budget_entry **pp = &t->head; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			return;
		}
	}
}

static int cmp_entry_key(const void *a, const void *b)
{
	uint64_t x = (*(struct sk_budget_entry *const *)a)->key, y = (*(struct sk_budget_entry *const *)b)->key;
	return x < y ? -1 : x > y;
}

static struct sk_budget_entry *find_key(struct sk_budget_entry **v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid]->key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo]->key == key ? v[lo] : NULL;
}

int sk_budget_table_sync(struct sk_budget_table *t, const struct sk_policy *p, struct sk_err *err)
{
	int rc = 0;
	size_t n_old = t->n_live, n_new = 0, n_fresh = 0;
	struct sk_budget_entry **old = NULL, **by_rule = NULL, **fresh = NULL;
	uint64_t *keys = NULL;
	bool any = false;
	for (size_t i = 0; i < p->n_rules && !any; i++)
		any = p->rules[i].budget.window_ms != 0;
	if (!any && !t->head) {
		/* The common case: no budget anywhere, nothing allocated (nothing to free either). */
		free(t->by_rule);
		t->by_rule = NULL;
		t->n_rules = 0;
		return 0;
	}
	/* Everything that can fail happens before the table changes. */
	by_rule = calloc(p->n_rules ? p->n_rules : 1, sizeof(struct sk_budget_entry *));
	keys = calloc(p->n_rules ? p->n_rules : 1, sizeof(*keys));
	old = calloc(n_old ? n_old : 1, sizeof(struct sk_budget_entry *));
	fresh = calloc(p->n_rules ? p->n_rules : 1, sizeof(struct sk_budget_entry *));
	if (!by_rule || !keys || !old || !fresh) {
		rc = sk_err_set(err, ENOMEM, "budget: table for %zu rules", p->n_rules);
		goto fail;
	}
	size_t k = 0;
	for (struct sk_budget_entry *e = t->head; e; e = e->next)
		if (e->live && k < n_old)
			old[k++] = e;
	n_old = k;
	qsort(old, n_old, sizeof(struct sk_budget_entry *), cmp_entry_key);
	for (size_t i = 0; i < p->n_rules; i++) {
		if (!p->rules[i].budget.window_ms)
			continue;
		if (++n_new > SK_BUDGET_MAX_RULES) {
			rc = sk_err_set(err, E2BIG, "budget: more than %d rules have a budget", SK_BUDGET_MAX_RULES);
			goto fail;
		}
		keys[i] = rule_key(&p->rules[i]);
		if (find_key(old, n_old, keys[i]))
			continue;
		bool dup = false;   /* same content as an earlier new rule: shares its entry */
		for (size_t j = 0; j < n_fresh && !dup; j++)
			dup = fresh[j]->key == keys[i];
		if (dup)
			continue;
		struct sk_budget_entry *e = calloc(1, sizeof(*e));
		if (!e) {
			rc = sk_err_set(err, ENOMEM, "budget: entry for rule %zu", i);
			goto fail;
		}
		e->key = keys[i];
		fresh[n_fresh++] = e;
	}
	/* Commit: every old entry leaves the lookup, then each budgeted rule claims its entry. */
	for (size_t i = 0; i < n_old; i++) {
		old[i]->live = false;
		old[i]->rule = -1;
	}
	for (size_t i = 0; i < n_fresh; i++) {
		fresh[i]->next = t->head;
		t->head = fresh[i];
	}
	qsort(fresh, n_fresh, sizeof(struct sk_budget_entry *), cmp_entry_key);
	t->n_live = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (!r->budget.window_ms)
			continue;
		struct sk_budget_entry *e = find_key(old, n_old, keys[i]);
		if (!e)
			e = find_key(fresh, n_fresh, keys[i]);
		if (!e->live) {
			/* The first rule of that content sets the limits; a changed window takes effect at the
			 * next roll-over, counters as they are. */
			e->live = true;
			e->rule = (int)i;
			e->lim = r->budget;
			sk_rule_format(r, e->label, sizeof(e->label));
			t->n_live++;
		}
		by_rule[i] = e;
	}
	/* Entries the new policy has no rule for: gone, unless a relay still holds one. */
	t->n_held = 0;
	for (struct sk_budget_entry **pp = &t->head; *pp;) {
		struct sk_budget_entry *e = *pp;
		if (!e->live && e->refs == 0) {
			*pp = e->next;
			free(e);
			continue;
		}
		t->n_held += !e->live;
		pp = &e->next;
	}
	free(t->by_rule);
	t->by_rule = by_rule;
	t->n_rules = p->n_rules;
	free(old);
	free(fresh);
	free(keys);
	return 0;
fail:
	for (size_t i = 0; fresh && i < n_fresh; i++)
		free(fresh[i]);
	free(fresh);
	free(old);
	free(keys);
	free(by_rule);
	/* Fail closed: no rule finds an entry, so every budgeted rule is refused until a sync succeeds. */
	free(t->by_rule);
	t->by_rule = NULL;
	t->n_rules = 0;
	return rc;
}

struct sk_budget_entry *sk_budget_for_rule(const struct sk_budget_table *t, int rule)
{
	if (rule < 0 || (size_t)rule >= t->n_rules)
		return NULL;
	return t->by_rule[rule];
}

void sk_budget_ref(struct sk_budget_entry *e)
{
	e->refs++;
}

void sk_budget_unref(struct sk_budget_table *t, struct sk_budget_entry *e)
{
	if (--e->refs > 0 || e->live)
		return;
	unlink_entry(t, e);
	t->n_held--;
	free(e);
}

static uint64_t limit_of(const struct sk_budget_entry *e, enum sk_budget_dim d)
{
	switch (d) {
	case SK_BUDGET_SENT: return e->lim.sent;
	case SK_BUDGET_RECEIVED: return e->lim.received;
	case SK_BUDGET_CONNS: return e->lim.connections;
	case SK_BUDGET_QUERIES: return e->lim.queries;
	case SK_BUDGET_NDIM: break;
	}
	return 0;
}

/* Ends the running window once window_ms has passed since it began; the next charge starts another. */
static void roll(struct sk_budget_entry *e, uint64_t now_ms)
{
	if (e->started && now_ms - e->window_start_ms >= e->lim.window_ms) {
		e->started = false;
		e->spent_seen = false;
		memset(e->used, 0, sizeof(e->used));
	}
}

uint64_t sk_budget_remaining(struct sk_budget_entry *e, enum sk_budget_dim d, uint64_t now_ms)
{
	uint64_t lim = limit_of(e, d);
	if (!lim)
		return SK_BUDGET_UNLIMITED;
	roll(e, now_ms);
	return e->used[d] >= lim ? 0 : lim - e->used[d];
}

static bool reached(const struct sk_budget_entry *e, enum sk_budget_dim d)
{
	uint64_t lim = limit_of(e, d);
	return lim && e->used[d] >= lim;
}

bool sk_budget_charge(struct sk_budget_entry *e, enum sk_budget_dim d, uint64_t n, uint64_t now_ms)
{
	roll(e, now_ms);
	if (!e->started) {
		e->started = true;
		e->window_start_ms = now_ms;
	}
	e->used[d] += n;
	e->total[d] += n;
	if (e->spent_seen || !reached(e, d))
		return false;
	e->spent_seen = true;
	e->exhausted++;
	return true;
}

bool sk_budget_spent(struct sk_budget_entry *e, uint64_t now_ms)
{
	roll(e, now_ms);
	return reached(e, SK_BUDGET_SENT) || reached(e, SK_BUDGET_RECEIVED);
}

bool sk_budget_admits(struct sk_budget_entry *e, uint64_t now_ms)
{
	return !sk_budget_spent(e, now_ms) && !reached(e, SK_BUDGET_CONNS);
}

enum sk_budget_admission sk_budget_admit_conn(struct sk_budget_table *t, const struct sk_policy *p, int rule,
					      bool counted, bool charge_refused, uint64_t now_ms,
					      struct sk_budget_entry **entry)
{
	*entry = NULL;
	if (rule < 0 || (size_t)rule >= p->n_rules || !p->rules[rule].budget.window_ms)
		return SK_BUDGET_FREE;
	struct sk_budget_entry *e = sk_budget_for_rule(t, rule);
	if (!e)
		return SK_BUDGET_UNAVAILABLE;
	*entry = e;
	bool ok = counted ? !sk_budget_spent(e, now_ms) : sk_budget_admits(e, now_ms);
	if (!ok) {
		e->refused++;
		if (!charge_refused)
			return SK_BUDGET_REFUSED;
	}
	if (!counted)
		sk_budget_charge(e, SK_BUDGET_CONNS, 1, now_ms);
	return ok ? SK_BUDGET_ADMITTED : SK_BUDGET_REFUSED;
}

const char *sk_budget_dim_name(enum sk_budget_dim d)
{
	switch (d) {
	case SK_BUDGET_SENT: return "sent";
	case SK_BUDGET_RECEIVED: return "received";
	case SK_BUDGET_CONNS: return "connections";
	case SK_BUDGET_QUERIES: return "queries";
	case SK_BUDGET_NDIM: break;
	}
	return "?";
}

/* ---- /metrics ---- */

/* A rule's text as a label value: sk_rule_format output holds no '"' or '\\' or newline (names are
 * normalised host names, the rest digits and keywords), so it goes in as it is. */
int sk_budget_render(struct sk_budget_table *t, uint64_t now_ms, struct sk_strbuf *out)
{
	static const char *const metric[] = {
		"stockade_budget_used", "stockade_budget_remaining", "stockade_budget_total",
	};
	/* Literal, so scripts/gen-metrics-doc finds them for docs/metrics.md. */
	static const char *const head[] = {
		"# HELP stockade_budget_used Bytes, connections or DNS queries counted against a rule's budget in its "
		"running window.\n# TYPE stockade_budget_used gauge\n",
		"# HELP stockade_budget_remaining What a rule's budget has left in its running window (limited kinds "
		"only).\n# TYPE stockade_budget_remaining gauge\n",
		"# HELP stockade_budget_total Bytes, connections or DNS queries under a budgeted rule since the "
		"sidecar started.\n# TYPE stockade_budget_total counter\n",
	};
	if (!t->n_live)
		return 0;
	for (size_t m = 0; m < 3; m++) {
		sk_strbuf_puts(out, head[m]);
		for (struct sk_budget_entry *e = t->head; e; e = e->next) {
			if (!e->live)
				continue;
			roll(e, now_ms);
			for (int d = 0; d < SK_BUDGET_NDIM; d++) {
				uint64_t lim = limit_of(e, (enum sk_budget_dim)d);
				uint64_t v = m == 0 ? e->used[d] : m == 1 ? (e->used[d] >= lim ? 0 : lim - e->used[d])
							 : e->total[d];
				if (m == 1 && !lim)
					continue;
				sk_strbuf_printf(out, "%s{rule=\"%d\",rule_text=\"%s\",kind=\"%s\"} %" PRIu64 "\n",
					     metric[m], e->rule, e->label, sk_budget_dim_name((enum sk_budget_dim)d), v);
			}
		}
	}
	sk_strbuf_printf(out, "# HELP stockade_budget_exhausted_total Windows in which a rule's budget "
				      "ran out.\n# TYPE stockade_budget_exhausted_total counter\n");
	for (struct sk_budget_entry *e = t->head; e; e = e->next)
		if (e->live)
			sk_strbuf_printf(out, "stockade_budget_exhausted_total{rule=\"%d\",rule_text=\"%s\"} %" PRIu64 "\n",
				     e->rule, e->label, e->exhausted);
	sk_strbuf_printf(out, "# HELP stockade_budget_refused_total Connections cut or refused and DNS "
				      "queries refused because a rule's budget ran out.\n"
				      "# TYPE stockade_budget_refused_total counter\n");
	for (struct sk_budget_entry *e = t->head; e; e = e->next)
		if (e->live)
			sk_strbuf_printf(out, "stockade_budget_refused_total{rule=\"%d\",rule_text=\"%s\"} %" PRIu64 "\n",
				     e->rule, e->label, e->refused);
	return sk_strbuf_ok(out);   /* one check: a failed append refuses the rest (strbuf.h) */
}
