/* common/hash_test.c — FNV-1a 64 against its published values and the incremental forms; SipHash-2-4
 * against the reference vectors (key 00..0f, message 00..len-1, every length to 63: every tail length and
 * the word boundary), SipHash-1-3 against the reference's zero-key values, updates cut anywhere equal one
 * shot, and the random key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash.h"

static void test_fnv1a64_known(void **state)
{
	(void)state;
	/* The FNV reference values (isthe.com/chongo/tech/comp/fnv). */
	assert_true(sk_fnv1a64("", 0) == 0xcbf29ce484222325ULL);
	assert_true(sk_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(sk_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_fnv1a64_incremental(void **state)
{
	(void)state;
	const char *s = "www.example.com";
	uint64_t whole = sk_fnv1a64(s, strlen(s));
	for (size_t cut = 0; cut <= strlen(s); cut++) {
		uint64_t h = sk_fnv1a64_add(SK_FNV64_OFFSET, s, cut);
		assert_true(sk_fnv1a64_add(h, s + cut, strlen(s) - cut) == whole);
	}
	assert_true(sk_fnv1a64_add_str(SK_FNV64_OFFSET, s) == whole);
	uint64_t h = SK_FNV64_OFFSET;
	for (const char *p = s; *p; p++)
		h = sk_fnv1a64_byte(h, (uint8_t)*p);
	assert_true(h == whole);
}

static const uint64_t sip24_vectors[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
	0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
	0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
	0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
	0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
	0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
	0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
	0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
	0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
	0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
	0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
};

static const struct sk_hash_key ref_key = { { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL } };

static void test_siphash24_vectors(void **state)
{
	(void)state;
	uint8_t msg[64];
	for (unsigned i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t len = 0; len < 64; len++)
		assert_true(sk_siphash24(&ref_key, msg, len) == sip24_vectors[len]);
}

static void test_siphash13_reference(void **state)
{
	(void)state;
	/* The reference implementation built with cROUNDS=1 dROUNDS=3, key all zero. */
	const struct sk_hash_key zero = { { 0, 0 } };
	uint8_t b = 0;
	assert_true(sk_siphash13(&zero, "", 0) == 0xd1fba762150c532cULL);
	assert_true(sk_siphash13(&zero, &b, 1) == 0x68a914128e01e473ULL);
}

static void test_siphash_updates_equal_one_shot(void **state)
{
	(void)state;
	uint8_t msg[64];
	for (unsigned i = 0; i < 64; i++)
		msg[i] = (uint8_t)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(msg); len++) {
		uint64_t whole = sk_siphash13(&ref_key, msg, len);
		for (size_t cut = 0; cut <= len; cut++) {
			struct sk_siphash st;
			sk_siphash_init(&st, &ref_key);
			sk_siphash_update(&st, msg, cut);
			sk_siphash_update(&st, msg + cut, len - cut);
			assert_true(sk_siphash_final(&st) == whole);
		}
		struct sk_siphash st;
		sk_siphash_init(&st, &ref_key);
		for (size_t i = 0; i < len; i++)
			sk_siphash_u8(&st, msg[i]);
		assert_true(sk_siphash_final(&st) == whole);
		assert_true(sk_siphash_final(&st) == whole);   /* final does not consume the state */
	}
}

static void test_siphash_keyed(void **state)
{
	(void)state;
	struct sk_hash_key a, b;
	assert_int_equal(sk_hash_key_random(&a), 0);
	assert_int_equal(sk_hash_key_random(&b), 0);
	assert_false(a.k[0] == b.k[0] && a.k[1] == b.k[1]);
	const char *s = "attacker.example";
	assert_true(sk_siphash13(&a, s, strlen(s)) != sk_siphash13(&b, s, strlen(s)));
	assert_true(sk_siphash13(&a, s, strlen(s)) == sk_siphash13(&a, s, strlen(s)));
	/* the length is part of the hash: a trailing zero byte changes it */
	assert_true(sk_siphash13(&a, s, strlen(s)) != sk_siphash13(&a, s, strlen(s) + 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a64_known),
		cmocka_unit_test(test_fnv1a64_incremental),
		cmocka_unit_test(test_siphash24_vectors),
		cmocka_unit_test(test_siphash13_reference),
		cmocka_unit_test(test_siphash_updates_equal_one_shot),
		cmocka_unit_test(test_siphash_keyed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
