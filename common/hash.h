/* common/hash.h — the hashes of stockade: FNV-1a 64 where the key is trusted (or the value must be stable:
 * the netns hash, the policy file's content hash, the matcher's name index), SipHash where a peer chooses
 * the keys (the DNS tables: a hostile zone must not be able to pile names into one bucket).
 *
 * FNV-1a 64 is unkeyed and stable across runs and builds; never use it for a table whose keys come from the
 * network. sk_siphash13 is keyed (sk_hash_key_random fills a key from getrandom), SipHash-1-3 as in the
 * reference (https://github.com/veorq/SipHash) with 1 compression and 3 finalisation rounds: the variant
 * Linux (hsiphash on 64-bit), Python and Rust use for hash tables. */
#ifndef SK_COMMON_HASH_H
#define SK_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SK_FNV64_OFFSET 0xcbf29ce484222325ULL
#define SK_FNV64_PRIME 0x100000001b3ULL

/* One FNV-1a step: the state after byte b. */
static inline uint64_t sk_fnv1a64_byte(uint64_t h, uint8_t b)
{
	return (h ^ b) * SK_FNV64_PRIME;
}

/* Continues h (SK_FNV64_OFFSET to start) over n bytes; chained calls equal one call over the concatenation. */
static inline uint64_t sk_fnv1a64_add(uint64_t h, const void *data, size_t n)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < n; i++)
		h = sk_fnv1a64_byte(h, p[i]);
	return h;
}

/* Continues h over the bytes of a NUL-terminated string (the NUL not included). */
static inline uint64_t sk_fnv1a64_add_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = sk_fnv1a64_byte(h, (uint8_t)*s);
	return h;
}

/* FNV-1a 64 of n bytes. */
static inline uint64_t sk_fnv1a64(const void *data, size_t n)
{
	return sk_fnv1a64_add(SK_FNV64_OFFSET, data, n);
}

/* A SipHash key: 128 bits, k[0] the first 8 key bytes read little-endian, k[1] the last 8. */
struct sk_hash_key {
	uint64_t k[2];
};

/* Fills key from getrandom(2). Returns 0, or a negative errno (nothing is ever left half random). */
int sk_hash_key_random(struct sk_hash_key *key);

/* Incremental SipHash-1-3: init, any number of updates, final. Chained updates equal one update over the
 * concatenation, so a key made of several fields needs no buffer (separate variable-length fields: a NUL,
 * a length). */
struct sk_siphash {
	uint64_t v[4];
	uint64_t tail;              /* the bytes of an unfinished 8-byte word, little-endian */
	uint64_t len;               /* bytes hashed so far */
	unsigned crounds, drounds;
};

void sk_siphash_init(struct sk_siphash *st, const struct sk_hash_key *key);
void sk_siphash_update(struct sk_siphash *st, const void *data, size_t n);
static inline void sk_siphash_u8(struct sk_siphash *st, uint8_t b)
{
	sk_siphash_update(st, &b, 1);
}
uint64_t sk_siphash_final(const struct sk_siphash *st);

/* One-shot SipHash-1-3 (tables) and SipHash-2-4 (the reference PRF; its published vectors test the code
 * both share). */
uint64_t sk_siphash13(const struct sk_hash_key *key, const void *data, size_t n);
uint64_t sk_siphash24(const struct sk_hash_key *key, const void *data, size_t n);

#endif
