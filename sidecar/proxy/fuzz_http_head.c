/* sidecar/proxy/fuzz_http_head.c — libFuzzer target for sk_http_head_parse. Besides memory safety (ASan) it
 * checks the parser's promises: a verdict on a prefix is final, head_len ends at CRLF CRLF and the
 * body is never looked at, the host is either an address or a name that is already normalised.
 * Seeds: sidecar/proxy/fuzz/fuzz_http_head/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domain.h"
#include "sidecar/proxy/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

static enum sk_http_result parse_copy(const uint8_t *data, size_t n, struct sk_http_head *h)
{
	uint8_t *copy = malloc(n ? n : 1);
	CHECK(copy);
	if (n)
		memcpy(copy, data, n);
	enum sk_http_result r = sk_http_head_parse(copy, n, h);
	free(copy);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sk_http_head h, h2;
	enum sk_http_result r = sk_http_head_parse(data, size, &h);

	CHECK(strnlen(h.method, sizeof(h.method)) < sizeof(h.method));
	CHECK(strnlen(h.host, sizeof(h.host)) < sizeof(h.host));
	if (r == SK_HTTP_OK || r == SK_HTTP_HOST_MISMATCH) {
		CHECK(h.method[0] != '\0');
		if (h.host_is_ip) {
			CHECK(h.host[0] == '\0');
		} else {
			char again[SK_DOMAIN_MAX + 1];
			bool wild;
			const char *why;
			CHECK(sk_domain_normalize(h.host, strlen(h.host), 0, again, &wild, &why) == 0);
			CHECK(strcmp(again, h.host) == 0);
		}
	}
	if (r == SK_HTTP_OK) {
		CHECK(h.head_len >= 4 && h.head_len <= size);
		CHECK(memcmp(data + h.head_len - 4, "\r\n\r\n", 4) == 0);
		/* The head alone gives the same answer: nothing after it was used. */
		CHECK(parse_copy(data, h.head_len, &h2) == SK_HTTP_OK);
		CHECK(strcmp(h.host, h2.host) == 0 && h.port == h2.port && h.host_is_ip == h2.host_is_ip);
	}

	size_t step = size <= 256 ? 1 : size / 64;
	for (size_t n = 0; n < size; n += step) {
		enum sk_http_result p = parse_copy(data, n, &h2);
		CHECK(p == SK_HTTP_NEED_MORE || p == r);
		if (r == SK_HTTP_OK && n < h.head_len)
			CHECK(p == SK_HTTP_NEED_MORE);
	}
	return 0;
}
