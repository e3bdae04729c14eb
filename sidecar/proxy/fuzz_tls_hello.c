/* sidecar/proxy/fuzz_tls_hello.c — libFuzzer target for sk_tls_hello_parse. Besides memory safety (ASan) it
 * checks the parser's promises: a verdict on a prefix is final, the cap only ever turns a verdict into
 * TOO_BIG, the SNI is a normalised name, and a hello that parses keeps its verdict and name when its
 * handshake bytes are re-framed into records of another size. Seeds: sidecar/proxy/fuzz/fuzz_tls_hello/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domain.h"
#include "sidecar/proxy/tls_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

/* Parses an exactly-sized copy so that a read past n is caught even for a prefix. */
static enum sk_hello_result parse_copy(const uint8_t *data, size_t n, size_t cap, char *sni)
{
	uint8_t *copy = malloc(n ? n : 1);
	CHECK(copy);
	if (n)
		memcpy(copy, data, n);
	enum sk_hello_result r = sk_tls_hello_parse(copy, n, cap, sni);
	free(copy);
	return r;
}

static void check_sni(enum sk_hello_result r, const char *sni)
{
	size_t n = strnlen(sni, SK_DOMAIN_MAX + 1);
	CHECK(n <= SK_DOMAIN_MAX);
	if (r == SK_HELLO_OK || (r == SK_HELLO_ECH && n > 0)) {
		char again[SK_DOMAIN_MAX + 1];
		bool wild;
		const char *why;
		CHECK(sk_domain_normalize(sni, n, 0, again, &wild, &why) == 0);
		CHECK(strcmp(again, sni) == 0);
	} else if (r != SK_HELLO_SNI_IP) {
		CHECK(n == 0);
	}
}

/* The handshake bytes of the records that carry the hello (data already parsed OK). */
static size_t hello_payload(const uint8_t *data, size_t size, uint8_t *out)
{
	size_t i = 0, n = 0, want = SIZE_MAX;

	while (n < want && i + 5 <= size) {
		size_t len = (size_t)data[i + 3] << 8 | data[i + 4];
		memcpy(out + n, data + i + 5, len);
		n += len;
		i += 5 + len;
		if (want == SIZE_MAX && n >= 4)
			want = 4 + ((size_t)out[1] << 16 | (size_t)out[2] << 8 | out[3]);
	}
	CHECK(n == want);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char sni[SK_DOMAIN_MAX + 1], sni2[SK_DOMAIN_MAX + 1];
	enum sk_hello_result r = sk_tls_hello_parse(data, size, SIZE_MAX, sni);

	check_sni(r, sni);

	/* A decision on a prefix is the decision on the whole. All prefixes of small inputs, spread
	 * samples of large ones. */
	size_t step = size <= 256 ? 1 : size / 64;
	for (size_t n = 0; n < size; n += step) {
		enum sk_hello_result p = parse_copy(data, n, SIZE_MAX, sni2);
		CHECK(p == SK_HELLO_NEED_MORE || p == r);
	}

	/* The cap changes nothing but NEED_MORE/other verdicts into TOO_BIG. */
	size_t cap = size ? size : 1;
	enum sk_hello_result c = parse_copy(data, size, cap, sni2);
	CHECK(c == r || c == SK_HELLO_TOO_BIG);
	if (size > 0) {
		c = parse_copy(data, size, size - 1, sni2);
		CHECK(c == r || c == SK_HELLO_TOO_BIG);
	}

	/* Re-framed into records of another size, a good hello says the same. */
	if (r == SK_HELLO_OK && size > 0) {
		uint8_t *hs = malloc(size), *raw;
		CHECK(hs);
		size_t hs_len = hello_payload(data, size, hs);
		size_t rec = 1 + data[size - 1] % 97, nrec = (hs_len + rec - 1) / rec, off = 0, w = 0;
		raw = malloc(hs_len + 5 * nrec);
		CHECK(raw);
		while (off < hs_len) {
			size_t k = hs_len - off < rec ? hs_len - off : rec;
			raw[w++] = 22, raw[w++] = 3, raw[w++] = 1;
			raw[w++] = (uint8_t)(k >> 8), raw[w++] = (uint8_t)k;
			memcpy(raw + w, hs + off, k);
			w += k;
			off += k;
		}
		CHECK(parse_copy(raw, w, SIZE_MAX, sni2) == SK_HELLO_OK);
		CHECK(strcmp(sni, sni2) == 0);
		free(raw);
		free(hs);
	}
	return 0;
}
