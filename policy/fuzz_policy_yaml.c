/* policy/fuzz_policy_yaml.c — libFuzzer target: the YAML loader and the validator behind it. Any input must
 * either load (and then be freed, hashed and matched against) or fail with at least one diagnostic;
 * sanitizers catch the rest. File readability checks are off: the fuzzer must not probe the disk. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "policy/match.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("fuzz", (const char *)data, size, SK_FORMAT_YAML, SK_LOAD_NO_FILE_CHECKS, &p, &d);
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
	return 0;
}
