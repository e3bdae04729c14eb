/* policy/fuzz-policy.h — the invariant both policy fuzz targets check, kept in one place: any input
 * either loads (and is then hashed, formatted, matched against and freed) or fails with at least one
 * diagnostic and no policy. File readability checks are off: a fuzzer must not probe the disk.
 * Header-only on purpose: only fuzz_*.c include it, so it never enters libstockade.a. */
#ifndef SK_POLICY_FUZZ_POLICY_H
#define SK_POLICY_FUZZ_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy/match.h"
#include "policy/policy.h"

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
		for (size_t i = 0; i < p->n_rules; i++)
			sk_rule_format(&p->rules[i], text, sizeof(text));
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
