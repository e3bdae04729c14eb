/* common/hash.c — SipHash and the random key. See hash.h. */
#include "common/hash.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

int sk_hash_key_random(struct sk_hash_key *key)
{
	struct sk_hash_key k;
	ssize_t n = getrandom(&k, sizeof(k), 0);
	if (n != (ssize_t)sizeof(k))
		return n < 0 && errno ? -errno : -EIO;
	*key = k;
	return 0;
}

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static void sip_rounds(uint64_t v[4], unsigned n)
{
	while (n--) {
		v[0] += v[1];
		v[1] = rotl(v[1], 13);
		v[1] ^= v[0];
		v[0] = rotl(v[0], 32);
		v[2] += v[3];
		v[3] = rotl(v[3], 16);
		v[3] ^= v[2];
		v[0] += v[3];
		v[3] = rotl(v[3], 21);
		v[3] ^= v[0];
		v[2] += v[1];
		v[1] = rotl(v[1], 17);
		v[1] ^= v[2];
		v[2] = rotl(v[2], 32);
	}
}

static void sip_init(struct sk_siphash *st, const struct sk_hash_key *key, unsigned c, unsigned d)
{
	st->v[0] = key->k[0] ^ 0x736f6d6570736575ULL;
	st->v[1] = key->k[1] ^ 0x646f72616e646f6dULL;
	st->v[2] = key->k[0] ^ 0x6c7967656e657261ULL;
	st->v[3] = key->k[1] ^ 0x7465646279746573ULL;
	st->tail = 0;
	st->len = 0;
	st->crounds = c;
	st->drounds = d;
}

void sk_siphash_init(struct sk_siphash *st, const struct sk_hash_key *key)
{
	sip_init(st, key, 1, 3);
}

static void sip_word(struct sk_siphash *st, uint64_t m)
{
	st->v[3] ^= m;
	sip_rounds(st->v, st->crounds);
	st->v[0] ^= m;
}

void sk_siphash_update(struct sk_siphash *st, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t i = 0;
	/* Finish a partial word byte by byte, then whole words, then keep the rest. */
	while (i < n && (st->len & 7)) {
		st->tail |= (uint64_t)p[i++] << (8 * (st->len & 7));
		if ((++st->len & 7) == 0) {
			sip_word(st, st->tail);
			st->tail = 0;
		}
	}
	for (; n - i >= 8; i += 8, st->len += 8) {
		uint64_t m = 0;
		for (unsigned k = 0; k < 8; k++)
			m |= (uint64_t)p[i + k] << (8 * k);
		sip_word(st, m);
	}
	for (; i < n; i++, st->len++)
		st->tail |= (uint64_t)p[i] << (8 * (st->len & 7));
}

uint64_t sk_siphash_final(const struct sk_siphash *st)
{
	struct sk_siphash s = *st;
	sip_word(&s, s.tail | (s.len & 0xff) << 56);
	s.v[2] ^= 0xff;
	sip_rounds(s.v, s.drounds);
	return s.v[0] ^ s.v[1] ^ s.v[2] ^ s.v[3];
}

uint64_t sk_siphash13(const struct sk_hash_key *key, const void *data, size_t n)
{
	struct sk_siphash st;
	sip_init(&st, key, 1, 3);
	sk_siphash_update(&st, data, n);
	return sk_siphash_final(&st);
}

uint64_t sk_siphash24(const struct sk_hash_key *key, const void *data, size_t n)
{
	struct sk_siphash st;
	sip_init(&st, key, 2, 4);
	sk_siphash_update(&st, data, n);
	return sk_siphash_final(&st);
}
