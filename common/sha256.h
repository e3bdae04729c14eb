/* common/sha256.h — SHA-256 (FIPS 180-4), for names that must equal what Helm's `sha256sum` computes (the
 * seccomp profile's content-hashed file name, policy/seccomp/name.h). Not for secrets: no constant-time
 * claims, no key material goes through it. */
#ifndef SK_COMMON_SHA256_H
#define SK_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SK_SHA256_LEN 32

struct sk_sha256 {
	uint32_t h[8];
	uint64_t len;          /* bytes hashed so far */
	uint8_t buf[64];
	size_t n;              /* bytes waiting in buf */
};

void sk_sha256_init(struct sk_sha256 *c);
void sk_sha256_update(struct sk_sha256 *c, const void *data, size_t n);
void sk_sha256_final(struct sk_sha256 *c, uint8_t out[SK_SHA256_LEN]);
/* The digest of data as 64 lowercase hex digits + NUL. */
void sk_sha256_hex(const void *data, size_t n, char out[2 * SK_SHA256_LEN + 1]);

#endif
