/* common/sha256_test.c — the FIPS 180-4 / NIST example digests, a message fed in odd-sized pieces equals
 * the one-shot digest, and the lengths around the padding boundary (55, 56, 63, 64 bytes) against
 * digests computed by coreutils sha256sum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/sha256.h"

static void hex_of(const char *s, char *out)
{
	sk_sha256_hex(s, strlen(s), out);
}

static void test_nist_vectors(void **state)
{
	(void)state;
	char h[65];
	hex_of("", h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_million_a_in_pieces(void **state)
{
	(void)state;
	struct sk_sha256 c;
	uint8_t d[SK_SHA256_LEN];
	char a[997];
	memset(a, 'a', sizeof(a));
	sk_sha256_init(&c);
	size_t left = 1000000;
	while (left > 0) {
		size_t n = left < sizeof(a) ? left : sizeof(a);
		sk_sha256_update(&c, a, n);
		left -= n;
	}
	sk_sha256_final(&c, d);
	static const uint8_t want[SK_SHA256_LEN] = {
		0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
		0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0,
	};
	assert_memory_equal(d, want, SK_SHA256_LEN);
}

static void test_padding_boundaries(void **state)
{
	(void)state;
	static const struct { size_t n; const char *want; } v[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
	};
	char s[65], h[65];
	memset(s, 'a', sizeof(s));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sk_sha256_hex(s, v[i].n, h);
		assert_string_equal(h, v[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nist_vectors),
		cmocka_unit_test(test_million_a_in_pieces),
		cmocka_unit_test(test_padding_boundaries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
