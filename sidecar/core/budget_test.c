/* sidecar/core/budget_test.c — budget accounting: charge/remaining/exhaust, the fixed window and its roll-over
 * (clock injected), one exhaustion event per window, audit-style overshoot, reload keeping or dropping an
 * entry by rule content, a held entry outliving its rule, fail-closed sync past the cap, the proxy's
 * admission call, /metrics text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/core/budget.h"

static struct sk_policy *load(const char *text)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	sk_diags_free(&d);
	return p;
}

static const char *const two_rules =
	"version: 1\negress:\n"
	"  - host: a.example.com\n    ports: [443]\n    budget: {sent: 1000, received: 5000, connections: 3, window: 10s}\n"
	"  - host: b.example.com\n";

static void test_charge_remaining_exhaust(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	assert_int_equal(t.n_live, 1);
	assert_null(sk_budget_for_rule(&t, 1));   /* no budget: no entry, the hot path's NULL */
	assert_null(sk_budget_for_rule(&t, 7));
	assert_null(sk_budget_for_rule(&t, -1));
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	assert_non_null(e);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 100), 1000);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_QUERIES, 100), SK_BUDGET_UNLIMITED);
	assert_false(e->started);   /* remaining never starts a window */
	assert_false(sk_budget_charge(e, SK_BUDGET_SENT, 600, 100));
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 200), 400);
	assert_true(sk_budget_admits(e, 200));
	assert_false(sk_budget_spent(e, 200));
	/* exactly to the limit: the event, once */
	assert_true(sk_budget_charge(e, SK_BUDGET_SENT, 400, 300));
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 300), 0);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_RECEIVED, 300), 5000);
	assert_true(sk_budget_spent(e, 300));
	assert_false(sk_budget_admits(e, 300));
	assert_false(sk_budget_charge(e, SK_BUDGET_RECEIVED, 5000, 300));   /* same window: no second event */
	assert_int_equal(e->exhausted, 1);
	/* audit mode overshoots: remaining stays 0, totals keep counting */
	sk_budget_charge(e, SK_BUDGET_SENT, 50, 400);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 400), 0);
	assert_int_equal(e->total[SK_BUDGET_SENT], 1050);
	sk_budget_table_fini(&t);
	sk_policy_free(p);
}

static void test_connections_limit(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	for (int i = 0; i < 3; i++) {
		assert_true(sk_budget_admits(e, 1000));
		assert_int_equal(sk_budget_charge(e, SK_BUDGET_CONNS, 1, 1000), i == 2);
	}
	assert_false(sk_budget_admits(e, 1000));
	assert_false(sk_budget_spent(e, 1000));   /* open relays go on: only new connections wait */
	sk_budget_table_fini(&t);
	sk_policy_free(p);
}

static void test_window_roll_over(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	/* the window starts at the first use (5 s into the clock), not at 0 */
	assert_true(sk_budget_charge(e, SK_BUDGET_SENT, 1000, 5000));
	assert_false(sk_budget_admits(e, 14999));
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 14999), 0);
	/* 10 s after it began, it is over: everything back, and a new event can come */
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 15000), 1000);
	assert_true(sk_budget_admits(e, 15000));
	assert_false(e->started);
	/* the next window begins at its own first use (20 s), so it runs to 30 s */
	assert_false(sk_budget_charge(e, SK_BUDGET_SENT, 10, 20000));
	assert_int_equal(e->window_start_ms, 20000);
	assert_true(sk_budget_charge(e, SK_BUDGET_SENT, 990, 29999));
	assert_int_equal(e->exhausted, 2);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 29999), 0);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 30000), 1000);
	assert_int_equal(e->total[SK_BUDGET_SENT], 2000);
	sk_budget_table_fini(&t);
	sk_policy_free(p);
}

static void test_reload_keeps_and_drops(void **state)
{
	(void)state;
	struct sk_policy *p1 = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	assert_int_equal(sk_budget_table_sync(&t, p1, &err), 0);
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	sk_budget_charge(e, SK_BUDGET_SENT, 700, 100);
	/* the same rule, now second in the list, with a new limit; a new budgeted rule before it */
	struct sk_policy *p2 = load("version: 1\negress:\n"
				    "  - host: c.example.com\n    budget: {sent: 10, window: 1m}\n"
				    "  - host: a.example.com\n    ports: [443]\n    budget: {sent: 2000, window: 10s}\n");
	assert_int_equal(sk_budget_table_sync(&t, p2, &err), 0);
	assert_int_equal(t.n_live, 2);
	assert_ptr_equal(sk_budget_for_rule(&t, 1), e);   /* kept, counters and all */
	assert_int_equal(e->rule, 1);
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_SENT, 200), 1300);   /* the new limit */
	assert_int_equal(sk_budget_remaining(e, SK_BUDGET_RECEIVED, 200), SK_BUDGET_UNLIMITED);
	struct sk_budget_entry *c = sk_budget_for_rule(&t, 0);
	assert_non_null(c);
	assert_int_equal(c->used[SK_BUDGET_SENT], 0);
	/* a different port list is a different rule: a fresh entry */
	struct sk_policy *p3 = load("version: 1\negress:\n"
				    "  - host: a.example.com\n    ports: [443, 8443]\n    budget: {sent: 2000, window: 10s}\n");
	sk_budget_ref(e);   /* a relay still holds the old one */
	assert_int_equal(sk_budget_table_sync(&t, p3, &err), 0);
	struct sk_budget_entry *n = sk_budget_for_rule(&t, 0);
	assert_ptr_not_equal(n, e);
	assert_int_equal(n->used[SK_BUDGET_SENT], 0);
	assert_int_equal(t.n_live, 1);
	assert_int_equal(t.n_held, 1);
	assert_false(e->live);
	sk_budget_charge(e, SK_BUDGET_SENT, 5, 300);   /* the holder may still charge it (ASan: not freed) */
	sk_budget_unref(&t, e);                        /* the last holder: freed now */
	assert_int_equal(t.n_held, 0);
	/* a policy without budgets empties the lookup */
	struct sk_policy *p4 = load("version: 1\negress:\n  - host: a.example.com\n");
	assert_int_equal(sk_budget_table_sync(&t, p4, &err), 0);
	assert_int_equal(t.n_live, 0);
	assert_null(t.head);
	assert_null(sk_budget_for_rule(&t, 0));
	sk_budget_table_fini(&t);
	sk_policy_free(p1);
	sk_policy_free(p2);
	sk_policy_free(p3);
	sk_policy_free(p4);
}

static void test_cap_fails_closed(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	sk_budget_charge(e, SK_BUDGET_SENT, 10, 1);
	/* A policy past the cap (the validator refuses one; build it by hand): refused, nothing found. */
	struct sk_rule *rules = calloc(SK_BUDGET_MAX_RULES + 1, sizeof(*rules));
	char (*names)[32] = calloc(SK_BUDGET_MAX_RULES + 1, sizeof(*names));
	assert_non_null(rules);
	assert_non_null(names);
	for (size_t i = 0; i <= SK_BUDGET_MAX_RULES; i++) {
		(void)snprintf(names[i], sizeof(names[i]), "h%zu.example.com", i);
		rules[i].host = names[i];
		rules[i].budget = (struct sk_budget){ .sent = 1, .window_ms = 1000 };
	}
	struct sk_policy big = { .rules = rules, .n_rules = SK_BUDGET_MAX_RULES + 1 };
	assert_int_equal(sk_budget_table_sync(&t, &big, &err), -E2BIG);
	assert_string_equal(err.msg, "budget: more than 4096 rules have a budget");
	assert_null(sk_budget_for_rule(&t, 0));
	/* the counters are still there for when a good policy comes back */
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	assert_ptr_equal(sk_budget_for_rule(&t, 0), e);
	assert_int_equal(e->used[SK_BUDGET_SENT], 10);
	/* exactly the cap is fine */
	big.n_rules = SK_BUDGET_MAX_RULES;
	assert_int_equal(sk_budget_table_sync(&t, &big, &err), 0);
	assert_int_equal(t.n_live, SK_BUDGET_MAX_RULES);
	sk_budget_table_fini(&t);
	free(rules);
	free(names);
	sk_policy_free(p);
}

/* sk_budget_admit_conn, the one call the proxy makes per decision: FREE for a rule without a budget (or no
 * rule), ADMITTED charging one connection, REFUSED at the connections limit (counted in refused, charged
 * only when mode audit asks it), a connection already counted checked against the bytes only and never
 * charged again, UNAVAILABLE when the table has no entry for a budgeted rule (a failed sync). */
static void test_admit_conn(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	struct sk_budget_entry *e = NULL;
	sk_budget_table_init(&t);
	/* not synced yet: a budgeted rule has no entry, fail closed */
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, false, false, 1000, &e), SK_BUDGET_UNAVAILABLE);
	assert_null(e);
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	assert_int_equal(sk_budget_admit_conn(&t, p, 1, false, false, 1000, &e), SK_BUDGET_FREE);
	assert_null(e);
	assert_int_equal(sk_budget_admit_conn(&t, p, -1, false, false, 1000, &e), SK_BUDGET_FREE);
	assert_int_equal(sk_budget_admit_conn(&t, p, 9, false, false, 1000, &e), SK_BUDGET_FREE);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sk_budget_admit_conn(&t, p, 0, false, false, 1000, &e), SK_BUDGET_ADMITTED);
		assert_ptr_equal(e, sk_budget_for_rule(&t, 0));
	}
	assert_int_equal(e->used[SK_BUDGET_CONNS], 3);
	/* the fourth new connection: refused, not charged; in audit mode refused and charged */
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, false, false, 1000, &e), SK_BUDGET_REFUSED);
	assert_int_equal(e->refused, 1);
	assert_int_equal(e->used[SK_BUDGET_CONNS], 3);
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, false, true, 1000, &e), SK_BUDGET_REFUSED);
	assert_int_equal(e->refused, 2);
	assert_int_equal(e->used[SK_BUDGET_CONNS], 4);
	/* a connection already counted (a later decision on it) is judged by the bytes only */
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, true, false, 1000, &e), SK_BUDGET_ADMITTED);
	assert_int_equal(e->used[SK_BUDGET_CONNS], 4);
	sk_budget_charge(e, SK_BUDGET_SENT, 1000, 1000);
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, true, false, 1000, &e), SK_BUDGET_REFUSED);
	assert_int_equal(e->refused, 3);
	/* the next window admits again */
	assert_int_equal(sk_budget_admit_conn(&t, p, 0, false, false, 12000, &e), SK_BUDGET_ADMITTED);
	sk_budget_table_fini(&t);
	sk_policy_free(p);
}

static void test_render(void **state)
{
	(void)state;
	struct sk_policy *p = load(two_rules);
	struct sk_budget_table t;
	struct sk_err err = { 0 };
	sk_budget_table_init(&t);
	struct sk_strbuf out = { 0 };
	assert_int_equal(sk_budget_render(&t, 0, &out), 0);
	assert_int_equal(out.len, 0);   /* no budgets: not a line */
	assert_int_equal(sk_budget_table_sync(&t, p, &err), 0);
	struct sk_budget_entry *e = sk_budget_for_rule(&t, 0);
	sk_budget_charge(e, SK_BUDGET_SENT, 1000, 10);
	sk_budget_charge(e, SK_BUDGET_RECEIVED, 123, 10);
	assert_int_equal(sk_budget_render(&t, 20, &out), 0);
	const char *buf = out.p;
	assert_int_equal(strlen(buf), out.len);
	assert_non_null(strstr(buf, "stockade_budget_used{rule=\"0\",rule_text=\"host a.example.com ports [443]\",kind=\"sent\"} 1000\n"));
	assert_non_null(strstr(buf, "stockade_budget_remaining{rule=\"0\",rule_text=\"host a.example.com ports [443]\",kind=\"received\"} 4877\n"));
	assert_non_null(strstr(buf, "stockade_budget_remaining{rule=\"0\",rule_text=\"host a.example.com ports [443]\",kind=\"sent\"} 0\n"));
	assert_null(strstr(buf, "stockade_budget_remaining{rule=\"0\",rule_text=\"host a.example.com ports [443]\",kind=\"queries\"}"));
	assert_non_null(strstr(buf, "stockade_budget_exhausted_total{rule=\"0\",rule_text=\"host a.example.com ports [443]\"} 1\n"));
	assert_non_null(strstr(buf, "# TYPE stockade_budget_total counter\n"));
	sk_strbuf_free(&out);
	sk_budget_table_fini(&t);
	sk_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_charge_remaining_exhaust),
		cmocka_unit_test(test_connections_limit),
		cmocka_unit_test(test_window_roll_over),
		cmocka_unit_test(test_reload_keeps_and_drops),
		cmocka_unit_test(test_cap_fails_closed),
		cmocka_unit_test(test_admit_conn),
		cmocka_unit_test(test_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
