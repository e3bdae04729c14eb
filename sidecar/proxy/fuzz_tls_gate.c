/* sidecar/proxy/fuzz_tls_gate.c — libFuzzer target for what the TLS gate reads after an allowed hello: the walk
 * over the client's records (sk_tls_client_record) as the proxy's gate_tls walks them, hellos that follow
 * a HelloRetryRequest among them, and the look at the server's first records (sk_tls_server_first). It
 * checks their promises besides memory safety: a record's verdict never changes when more bytes come, a
 * judged hello is exactly `used` bytes and says what sk_tls_hello_parse says of them, and every first
 * byte is TLS to the classifier exactly when it is a TLS content type. Seeds: sidecar/proxy/fuzz/fuzz_tls_gate/. */
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

#define CAP 16384

/* An exactly-sized copy, so that a read past n is caught. */
static uint8_t *copy_of(const uint8_t *data, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	CHECK(c);
	if (n)
		memcpy(c, data, n);
	return c;
}

static enum sk_tls_next record_copy(const uint8_t *data, size_t n, size_t *used, enum sk_hello_result *hr,
				    char *sni)
{
	uint8_t *c = copy_of(data, n);
	enum sk_tls_next k = sk_tls_client_record(c, n, CAP, used, hr, sni);
	free(c);
	return k;
}

static void check_record(const uint8_t *data, size_t size)
{
	size_t used = 0;
	enum sk_hello_result hr = SK_HELLO_MALFORMED;
	char sni[SK_DOMAIN_MAX + 1];
	enum sk_tls_next k = record_copy(data, size, &used, &hr, sni);
	switch (k) {
	case SK_TLS_NEXT_MORE:
		return;
	case SK_TLS_NEXT_BAD:
		/* Final: a shorter prefix is MORE or BAD, never a verdict that lets bytes through. */
		for (size_t n = 1; n < size && n < 8; n++) {
			enum sk_tls_next p = record_copy(data, n, &used, &hr, sni);
			CHECK(p == SK_TLS_NEXT_MORE || p == SK_TLS_NEXT_BAD);
		}
		return;
	case SK_TLS_NEXT_PASS: {
		CHECK(used >= 6);
		CHECK(data[0] != 0x16);
		/* The header alone decides (CCS waits for its byte). */
		size_t again = 0;
		enum sk_tls_next p = record_copy(data, data[0] == 0x14 ? 6 : 5, &again, &hr, sni);
		CHECK(p == SK_TLS_NEXT_PASS && again == used);
		return;
	}
	case SK_TLS_NEXT_HELLO: {
		CHECK(data[0] == 0x16);
		CHECK(hr != SK_HELLO_NEED_MORE && hr != SK_HELLO_NOT_TLS);
		CHECK(strnlen(sni, SK_DOMAIN_MAX + 1) <= SK_DOMAIN_MAX);
		if (hr != SK_HELLO_OK && hr != SK_HELLO_ECH)
			return;
		CHECK(used >= 5 + 4 && used <= size);
		/* The hello is exactly those bytes: the same verdict and name from them alone. */
		char sni2[SK_DOMAIN_MAX + 1];
		uint8_t *c = copy_of(data, used);
		enum sk_hello_result r2 = sk_tls_hello_parse(c, used, CAP, sni2);
		free(c);
		CHECK(r2 == hr);
		CHECK(strcmp(sni, sni2) == 0);
		return;
	}
	}
	CHECK(0);
}

/* Walks records the way gate_tls does, each judged at its own offset. */
static void walk(const uint8_t *data, size_t size)
{
	size_t off = 0;
	for (int i = 0; i < 64 && off < size; i++) {
		check_record(data + off, size - off);
		size_t used = 0;
		enum sk_hello_result hr;
		char sni[SK_DOMAIN_MAX + 1];
		enum sk_tls_next k = record_copy(data + off, size - off, &used, &hr, sni);
		if (k == SK_TLS_NEXT_PASS || (k == SK_TLS_NEXT_HELLO && (hr == SK_HELLO_OK || hr == SK_HELLO_ECH)))
			off += used;
		else
			return;
	}
}

static void check_server(const uint8_t *data, size_t size)
{
	uint8_t *c = copy_of(data, size);
	enum sk_server_first k = sk_tls_server_first(c, size);
	free(c);
	if (k == SK_SERVER_FIRST_MORE || size == 0)
		return;
	/* Final: one more byte never changes it. */
	uint8_t *m = malloc(size + 1);
	CHECK(m);
	memcpy(m, data, size);
	m[size] = 0xa5;
	CHECK(sk_tls_server_first(m, size + 1) == k);
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	/* The classifier's first-byte rule: TLS exactly for a TLS content type. */
	char sni[SK_DOMAIN_MAX + 1];
	uint8_t *c = copy_of(data, size);
	enum sk_hello_result r = sk_tls_hello_parse(c, size, CAP, sni);
	free(c);
	CHECK((r == SK_HELLO_NOT_TLS) == !sk_tls_content_type(data[0]));
	walk(data, size);
	check_server(data, size);
	return 0;
}
