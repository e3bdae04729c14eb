/* injector/test_base64.h — for the injector's tests only (review_test.c, fuzz_review.c): decodes the
 * base64 of an AdmissionReview response's `patch`. Production only encodes (review.c); a strict decoder
 * here checks that encoding: canonical base64 only, so a malformed patch fails the test rather than
 * decoding to something close. Not linked into any program. */
#ifndef SK_INJECTOR_TEST_BASE64_H
#define SK_INJECTOR_TEST_BASE64_H

#include <stddef.h>

/* The decoded bytes, NUL-terminated (owned; *len without the NUL, len may be NULL), or NULL when s is not
 * canonical base64 (RFC 4648 alphabet, length a multiple of 4, '=' only as the last one or two characters,
 * unused bits zero) or memory ran out. */
char *sk_test_base64_decode(const char *s, size_t *len);

#endif
