/* policy/fuzz-policy.h — the invariant both policy fuzz targets check, kept in one place: any input
 * either loads (and is then hashed, formatted, matched against and freed) or fails with at least one
 * diagnostic and no policy. A loaded budget limits something, within 24h, on a rule the proxy relays
 * (queries only on a wildcard rule), on at most SK_BUDGET_MAX_RULES rules. Request rules are non-empty, with
 * methods and well-formed globs, never on a rule the proxy cannot read requests of, TLS only with inspect. File readability checks are off: a fuzzer must not probe the disk.
 * Header-only on purpose: only fuzz_*.c include it, so it never enters libstockade.a. */
#ifndef SK_POLICY_FUZZ_POLICY_H
#define SK_POLICY_FUZZ_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/http_path.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "policy/requests.h"

static inline void sk_fuzz_policy_load(const uint8_t *data, size_t size, int format)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("fuzz", (const char *)data, size, format, SK_LOAD_NO_FILE_CHECKS, &p, &d);
	if (r == 0) {
		char h[17], text[256];
		if (!p || !p->matcher || d.n)
			abort();  /* success must mean a complete snapshot and no complaints */
		sk_policy_netns_hash(p, h);
		size_t n_budgets = 0;
		for (size_t i = 0; i < p->n_rules; i++) {
			const struct sk_rule *ru = &p->rules[i];
			const struct sk_budget *b = &ru->budget;
			sk_rule_format(ru, text, sizeof(text));
			sk_budget_format(b, text, sizeof(text));
			/* a budget limits something, in a window the counters can hold, on a rule the proxy
			 * relays; queries only under a wildcard */
			if (b->window_ms && (b->window_ms > SK_BUDGET_MAX_WINDOW_MS ||
					     !(b->sent || b->received || b->connections || b->queries) ||
					     (ru->kind == SK_RULE_CIDR && (ru->direct || ru->proto == SK_PROTO_UDP)) ||
					     (b->queries && !(ru->kind == SK_RULE_HOST && ru->wildcard))))
				abort();
			n_budgets += b->window_ms != 0;
			/* request rules: non-empty, each with methods and globs the matcher can use, only on a rule
			 * whose requests the proxy reads, and TLS-capable only with inspect */
			if (ru->requests) {
				const struct sk_requests *rq = ru->requests;
				if (!rq->n || ru->direct || ru->proto == SK_PROTO_TCP || ru->proto == SK_PROTO_UDP ||
				    (ru->proto == SK_PROTO_TLS && !ru->inspect))
					abort();
				for (size_t k = 0; k < rq->n; k++) {
					if (!rq->v[k].methods || !rq->v[k].n_paths)
						abort();
					for (size_t m = 0; m < rq->v[k].n_paths; m++)
						if (!sk_http_glob_check(rq->v[k].paths[m], NULL, NULL, 0))
							abort();
				}
			}
			if (ru->inspect && ru->kind != SK_RULE_HOST)
				abort();
		}
		if (n_budgets > SK_BUDGET_MAX_RULES)
			abort();
		struct sk_query q = { .host = "api.example.com", .port = 443, .proto = SK_PROTO_TLS };
		struct sk_decision dec;
		sk_match(p, &q, &dec);
		sk_policy_free(p);
	} else if (p || d.n == 0) {
		abort();  /* a failure must say why, and must not hand out a policy */
	}
	sk_diags_free(&d);
}

#endif
