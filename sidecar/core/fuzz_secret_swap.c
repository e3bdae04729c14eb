/* sidecar/core/fuzz_secret_swap.c — libFuzzer target for the placeholder swap (secret_swap.h). Byte 0
 * picks the host (listed by secret 0, by secret 1, or by neither) and whether the values are known; the
 * rest is a request head in which byte 0x01 stands for secret 0's placeholder, 0x02 for `Basic ` + the
 * base64 of `x:` + that placeholder, 0x03 for secret 1's placeholder. The head goes through
 * sk_swap_h1_head, and each of its header lines through sk_swap_h2_header.
 * Invariants:
 *   - a value reaches the output only toward a host its secret lists (never toward another host);
 *   - out is written only on SWAPPED (a refused head leaves nothing to send);
 *   - an input carrying a value itself (raw) is never SWAPPED or passed: MISUSE or MALFORMED;
 *   - no misuse text carries a value;
 *   - the HTTP/2 call: SWAPPED exactly with never_index, and the same value rule.
 * Seeds: sidecar/core/fuzz/fuzz_secret_swap/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "sidecar/core/secret_swap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define PH0 "stockade-secret-github"
#define PH1 "NPM-PLACEHOLDER-0001"
#define BASIC0 "Basic eDpzdG9ja2FkZS1zZWNyZXQtZ2l0aHVi"   /* x:stockade-secret-github */

static char *h0[] = { "api.github.com" }, *p0[] = { "/acme/**" }, *in0[] = { "authorization", "x-api-key" };
static char *h1[] = { "registry.npmjs.org" }, *in1[] = { "authorization" };
static struct sk_secret secrets[] = {
	{ .name = "github", .placeholder = PH0, .hosts = h0, .n_hosts = 1, .paths = p0, .n_paths = 1, .in = in0, .n_in = 2 },
	{ .name = "npm", .placeholder = PH1, .hosts = h1, .n_hosts = 1, .in = in1, .n_in = 1 },
};
static const struct sk_secret_value values[] = { { "ghp_VALUEzero0123456789", 23 }, { "npm_VALUEone_abcdefgh", 21 } };

static bool has(const char *h, size_t hl, const char *n)
{
	return memmem(h, hl, n, strlen(n)) != NULL;
}

static void value_rule(const char *host, const char *out, size_t len)
{
	for (size_t i = 0; i < 2; i++)
		if (has(out, len, values[i].val))
			CHECK(!strcmp(host, secrets[i].hosts[0]));
}

static void text_rule(const struct sk_swap_set *s, const struct sk_swap_misuse *m)
{
	char t[256];
	sk_swap_misuse_text(s, m, t, sizeof(t));
	for (size_t i = 0; i < 2; i++)
		CHECK(!has(t, strlen(t), values[i].val));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	static const char *const hosts[] = { "api.github.com", "registry.npmjs.org", "evil.example" };
	const char *host = hosts[(data[0] & 3) % 3];
	struct sk_swap_set set = { secrets, 2, (data[0] & 4) ? NULL : values };
	struct sk_strbuf head = { 0 }, out = { 0 };
	for (size_t i = 1; i < size; i++) {
		if (data[i] == 1)
			(void)sk_strbuf_puts(&head, PH0);
		else if (data[i] == 2)
			(void)sk_strbuf_puts(&head, BASIC0);
		else if (data[i] == 3)
			(void)sk_strbuf_puts(&head, PH1);
		else
			(void)sk_strbuf_put(&head, &data[i], 1);
	}
	if (sk_strbuf_ok(&head) < 0 || !head.p)
		goto done;
	bool carries_value = false;
	for (size_t i = 0; i < 2; i++)
		carries_value |= has(head.p, head.len, values[i].val);

	struct sk_swap_misuse m;
	enum sk_swap_result r = sk_swap_h1_head(&set, host, (const uint8_t *)head.p, head.len, &out, &m);
	if (r == SK_SWAP_SWAPPED) {
		CHECK(set.values != NULL);
		value_rule(host, out.p, out.len);
	} else {
		CHECK(out.len == 0);
	}
	if (carries_value && set.values)
		CHECK(r == SK_SWAP_MISUSE || r == SK_SWAP_MALFORMED || r == SK_SWAP_NOMEM);
	if (r == SK_SWAP_MISUSE)
		text_rule(&set, &m);

	/* each line after the first as an HTTP/2 field "name: value" */
	const char *p = memchr(head.p, '\n', head.len), *end = head.p + head.len;
	const char *path = "/acme/x";
	while (p && ++p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *colon = memchr(p, ':', l);
		if (colon && colon > p) {
			const char *v = colon + 1;
			size_t vl = l - (size_t)(v - p);
			bool ni = false;
			struct sk_strbuf o2 = { 0 };
			enum sk_swap_result r2 = sk_swap_h2_header(&set, host, path, strlen(path), p, (size_t)(colon - p), v,
								   vl, &o2, &ni, &m);
			CHECK(ni == (r2 == SK_SWAP_SWAPPED));
			if (r2 == SK_SWAP_SWAPPED)
				value_rule(host, o2.p, o2.len);
			else
				CHECK(o2.len == 0);
			if (r2 == SK_SWAP_MISUSE)
				text_rule(&set, &m);
			sk_strbuf_free(&o2);
		}
		p = nl;
	}
done:
	sk_strbuf_free(&head);
	sk_strbuf_free(&out);
	return 0;
}
