/* policy/guardrails_test.c — cluster guardrails: the loader's messages at their line:col, the check (each
 * violation at the policy's position, naming the guardrail's), and the narrowing (what changes, what the
 * sidecar cannot change, the matcher following the shorter rule list). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/guardrails.h"
#include "policy/match.h"
#include "policy/policy.h"

static const char guardrails_yaml[] =
	"version: 1\n"                                        /* 1 */
	"deniedHosts:\n"                                      /* 2 */
	"  - pastebin.com\n"                                  /* 3 */
	"  - \"*.ngrok.io\"\n"                                /* 4 */
	"deniedCidrs: [169.254.169.254/32, 0.0.0.0/0]\n"      /* 5 */
	"maxBudget: {sent: 1Gi, window: 1h}\n"                /* 6 */
	"blockPrivate: true\n"                                /* 7 */
	"allowedModes: [enforce]\n"                           /* 8 */
	"allowInspect: false\n"                               /* 9 */
	"allowedExemptUids: [2000]\n";                        /* 10 */

static const char policy_yaml[] =
	"version: 1\n"                                        /* 1 */
	"mode: audit\n"                                       /* 2 */
	"exemptUids: [2000, 3000]\n"                          /* 3 */
	"blockPrivate: false\n"                               /* 4 */
	"egress:\n"                                           /* 5 */
	"  - host: pastebin.com\n"                            /* 6 */
	"    ports: [443]\n"                                  /* 7 */
	"  - host: \"*.io\"\n"                                /* 8 */
	"    ports: [443]\n"                                  /* 9 */
	"    budget: {sent: 10Mi, window: 10m}\n"             /* 10 */
	"  - host: pypi.org\n"                                /* 11 */
	"    ports: [443]\n"                                  /* 12 */
	"    budget: {sent: 2Gi, window: 2h}\n"               /* 13 */
	"  - host: api.github.com\n"                          /* 14 */
	"    ports: [443]\n"                                  /* 15 */
	"    inspect: true\n"                                 /* 16 */
	"    access: read-only\n"                             /* 17 */
	"  - cidr: 0.0.0.0/0\n"                               /* 18 */
	"    ports: [443]\n"                                  /* 19 */
	"  - cidr: 10.1.0.0/16\n"                             /* 20 */
	"    ports: [8125]\n"                                 /* 21 */
	"    protocol: udp\n"                                 /* 22 */
	"  - host: files.example.com\n"                       /* 23 */
	"    ports: [443]\n"                                  /* 24 */
	"    budget: {sent: 100Mi, window: 2h}\n";            /* 25 */

static struct sk_guardrails *load_gr(const char *text)
{
	struct sk_diags d = { 0 };
	struct sk_guardrails *g = NULL;
	int r = sk_guardrails_load_buffer("g.yaml", text, strlen(text), &g, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_non_null(g);
	sk_diags_free(&d);
	return g;
}

static struct sk_policy *load_policy(const char *text)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer("p.yaml", text, strlen(text), -1, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	sk_diags_free(&d);
	return p;
}

static void test_load(void **state)
{
	(void)state;
	struct sk_guardrails *g = load_gr(guardrails_yaml);
	assert_int_equal(g->n_denied_hosts, 2);
	assert_string_equal(g->denied_hosts[0].host, "pastebin.com");
	assert_false(g->denied_hosts[0].wildcard);
	assert_string_equal(g->denied_hosts[1].host, "ngrok.io");
	assert_true(g->denied_hosts[1].wildcard);
	assert_int_equal(g->denied_hosts[1].pos.line, 4);
	assert_int_equal(g->n_denied_cidrs, 2);
	assert_int_equal(g->max_budget.sent, 1ull << 30);
	assert_int_equal(g->max_budget.window_ms, 3600 * 1000);
	assert_true(g->block_private);
	assert_int_equal(g->modes, 1u << SK_MODE_ENFORCE);
	assert_true(g->inspect_denied);
	assert_true(g->exempt_limited);
	assert_int_equal(g->n_exempt_uids, 1);
	assert_int_equal(g->exempt_uids[0], 2000);
	assert_int_equal(strlen(g->content_hash), 16);
	sk_guardrails_free(g);

	/* An empty document of guardrails (version only) bounds nothing. */
	g = load_gr("{\"version\": 1}");
	assert_int_equal(g->n_denied_hosts + g->n_denied_cidrs + g->modes, 0);
	assert_false(g->exempt_limited);
	sk_guardrails_free(g);
}

static void expect_bad(const char *text, unsigned line, unsigned col, const char *msg)
{
	struct sk_diags d = { 0 };
	struct sk_guardrails *g = NULL;
	assert_int_equal(sk_guardrails_load_buffer("g.yaml", text, strlen(text), &g, &d), -EINVAL);
	assert_null(g);
	assert_true(d.n >= 1);
	if (d.v[0].line != line || d.v[0].col != col || !strstr(d.v[0].msg, msg)) {
		sk_diags_print(&d, stderr);
		fail_msg("expected %u:%u: %s", line, col, msg);
	}
	sk_diags_free(&d);
}

static void test_load_errors(void **state)
{
	(void)state;
	expect_bad("deniedHosts: [a.com]\n", 1, 1, "guardrails: missing key 'version'");
	expect_bad("version: 1\ndeniedHost: [a.com]\n", 2, 1, "deniedHost");
	expect_bad("version: 1\ndeniedHosts: [1.2.3.4]\n", 2, 15, "deniedHosts[0]: '1.2.3.4' is an IP address");
	expect_bad("version: 1\ndeniedCidrs: [10.0.0.1/8]\n", 2, 15, "deniedCidrs[0]");
	expect_bad("version: 1\nallowedModes: [permissive]\n", 2, 16, "allowedModes[0]");
	expect_bad("version: 1\nallowedModes: []\n", 2, 15, "allowedModes: empty");
	expect_bad("version: 1\nmaxBudget: {sent: 1Gi}\n", 2, 12, "maxBudget: missing key 'window'");
	expect_bad("version: 1\nallowedExemptUids: [0]\n", 2, 21, "allowedExemptUids[0]");
	expect_bad("version: 2\n", 1, 10, "unsupported version 2");
	expect_bad("- a\n", 1, 1, "guardrails: expected a mapping");
}

static bool has(const struct sk_diags *d, unsigned line, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].line == line && strstr(d->v[i].msg, needle) && !strcmp(d->v[i].file, "p.yaml"))
			return true;
	return false;
}

static void test_check(void **state)
{
	(void)state;
	struct sk_guardrails *g = load_gr(guardrails_yaml);
	struct sk_policy *p = load_policy(policy_yaml);
	struct sk_diags d = { 0 };
	size_t n = sk_guardrails_check(p, g, &d);
	for (size_t i = 0; i < d.n; i++)
		(void)fprintf(stderr, "  %s:%u:%u: %s\n", d.v[i].file, d.v[i].line, d.v[i].col, d.v[i].msg);
	assert_int_equal(n, d.n);
	assert_true(has(&d, 6, "egress[0]: host pastebin.com allows pastebin.com, denied by guardrail g.yaml:3:5 deniedHosts[0]"));
	assert_true(has(&d, 8, "egress[1]: host *.io allows *.ngrok.io, denied by guardrail g.yaml:4:5 deniedHosts[1]"));
	assert_true(has(&d, 11, "egress[2]: budget sent 2Gi window 2h exceeds guardrail g.yaml:6:12 maxBudget, at most sent 1Gi window 1h"));
	assert_true(has(&d, 14, "egress[3]: inspect: true is not allowed by guardrail g.yaml:9:15 allowInspect: false"));
	assert_true(has(&d, 18, "egress[4]: cidr 0.0.0.0/0 overlaps 169.254.169.254/32, denied by guardrail g.yaml:5:15 deniedCidrs[0]"));
	assert_true(has(&d, 20, "egress[5]: cidr 10.1.0.0/16 overlaps 0.0.0.0/0, denied by guardrail g.yaml:5:35 deniedCidrs[1]"));
	assert_true(has(&d, 4, "blockPrivate: false is not allowed by guardrail g.yaml:7:15 blockPrivate: true"));
	assert_true(has(&d, 2, "mode: audit is not allowed by guardrail g.yaml:8:15 allowedModes"));
	assert_true(has(&d, 3, "exemptUids: 3000 is not allowed by guardrail g.yaml:10:20 allowedExemptUids"));
	/* 100Mi over 2h is within 1Gi over 1h: no message for egress[6]. */
	assert_int_equal(n, 9);
	sk_diags_free(&d);

	/* A policy within every guardrail passes. */
	sk_policy_free(p);
	p = load_policy("version: 1\nexemptUids: [2000]\negress:\n  - host: pypi.org\n    ports: [443]\n"
			"    budget: {sent: 1Gi, received: 5Gi, window: 1h}\n  - host: pastebin.com.evil.example\n"
			"budgets:\n  default: {sent: 1Mi, window: 24h}\n");
	assert_int_equal(sk_guardrails_check(p, g, &d), 0);
	assert_int_equal(d.n, 0);
	sk_policy_free(p);
	sk_guardrails_free(g);
}

static void test_narrow(void **state)
{
	(void)state;
	struct sk_guardrails *g = load_gr(guardrails_yaml);
	struct sk_policy *p = load_policy(policy_yaml);
	struct sk_gr_changes ch = { 0 };
	assert_int_equal(sk_guardrails_narrow(p, g, &ch), 0);
	assert_int_equal(ch.d.n, 9);
	size_t kept = 0;
	for (size_t i = 0; i < ch.d.n; i++)
		kept += ch.kind[i] == SK_GR_KEPT;
	/* exemptUids 3000 and the udp cidr rule are in the kernel: kept and said so. */
	assert_int_equal(kept, 2);
	/* Left: pypi.org (budget lowered), the udp rule (kept), files.example.com. */
	assert_int_equal(p->n_rules, 3);
	assert_string_equal(p->rules[0].host, "pypi.org");
	assert_int_equal(p->rules[0].budget.sent, 1ull << 30);
	assert_int_equal(p->rules[0].budget.window_ms, 2 * 3600 * 1000);
	assert_int_equal(p->rules[1].kind, SK_RULE_CIDR);
	assert_string_equal(p->rules[2].host, "files.example.com");
	assert_int_equal(p->rules[2].budget.sent, 100ull << 20);
	assert_true(p->block_private);
	assert_int_equal(p->mode, SK_MODE_ENFORCE);
	assert_int_equal(p->n_exempt_uids, 2);
	/* The matcher follows: the removed names are denied, the kept ones still match their new index. */
	assert_true(sk_match_name(p, "pastebin.com") < 0);
	assert_true(sk_match_name(p, "x.ngrok.io") < 0);
	assert_int_equal(sk_match_name(p, "files.example.com"), 2);
	/* Narrowing again changes nothing but what the kernel holds. */
	struct sk_gr_changes again = { 0 };
	assert_int_equal(sk_guardrails_narrow(p, g, &again), 0);
	assert_int_equal(again.d.n, 2);
	assert_int_equal(again.kind[0], SK_GR_KEPT);
	sk_gr_changes_free(&again);
	sk_gr_changes_free(&ch);
	sk_policy_free(p);
	sk_guardrails_free(g);
}

/* A proxied rule with no budget gets the maximum; a queries limit goes to wildcard rules only. */
static void test_narrow_budget_default(void **state)
{
	(void)state;
	struct sk_guardrails *g = load_gr("version: 1\nmaxBudget: {sent: 1Mi, queries: 100, window: 10m}\n");
	struct sk_policy *p = load_policy("version: 1\negress:\n  - host: a.example\n  - host: \"*.b.example\"\n"
					  "  - cidr: 10.0.0.0/8\n    direct: true\n");
	struct sk_gr_changes ch = { 0 };
	assert_int_equal(sk_guardrails_narrow(p, g, &ch), 0);
	assert_int_equal(ch.d.n, 2);
	assert_int_equal(p->rules[0].budget.sent, 1 << 20);
	assert_int_equal(p->rules[0].budget.queries, 0);
	assert_int_equal(p->rules[0].budget.window_ms, 600000);
	assert_int_equal(p->rules[1].budget.queries, 100);
	assert_int_equal(p->rules[2].budget.window_ms, 0);  /* direct: nothing to count with */
	struct sk_diags d = { 0 };
	assert_int_equal(sk_guardrails_check(p, g, &d), 0);
	sk_gr_changes_free(&ch);
	sk_policy_free(p);
	sk_guardrails_free(g);
}

/* maxBudget would give more rules a budget than the sidecar's table counts: refused, not half applied. */
static void test_narrow_budget_cap(void **state)
{
	(void)state;
	struct sk_guardrails *g = load_gr("version: 1\nmaxBudget: {sent: 1Mi, window: 10m}\n");
	size_t n = SK_BUDGET_MAX_RULES + 1, cap = 32 + n * 40, o = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	o += (size_t)snprintf(text + o, cap - o, "version: 1\negress:\n");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(text + o, cap - o, "  - host: h%zu.example\n", i);
	struct sk_policy *p = load_policy(text);
	free(text);
	struct sk_gr_changes ch = { 0 };
	assert_int_equal(sk_guardrails_narrow(p, g, &ch), -E2BIG);
	sk_gr_changes_free(&ch);
	sk_policy_free(p);
	sk_guardrails_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_narrow),
		cmocka_unit_test(test_narrow_budget_default),
		cmocka_unit_test(test_narrow_budget_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
