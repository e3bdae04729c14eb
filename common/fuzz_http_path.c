/* common/fuzz_http_path.c — libFuzzer target for sk_http_path_normalize and the glob matcher. Besides
 * memory safety (ASan) it checks the normaliser's promises (http_path.h): an OK output starts with '/',
 * holds no "." or ".." segment, no %2F or %5C, no NUL or backslash, no '?' or '#', only printable ASCII
 * with upper-case escapes, and normalising it again gives it back unchanged; and that the matcher
 * agrees with itself: the glob of every path (a root globstar) matches, and so does the path as its own
 * glob when it has no star; byte 0 of the input: bit 0 = pass a Host ("example.com") for absolute-form targets.
 * Seeds: common/fuzz/fuzz_http_path/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

static void check_output(const char *p, size_t n)
{
	CHECK(n > 0 && p[0] == '/');
	CHECK(strlen(p) == n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		CHECK(c > 0x20 && c < 0x7f && c != '\\' && c != '?' && c != '#');
		if (c == '%') {
			CHECK(i + 2 < n);
			const char a = p[i + 1], b = p[i + 2];
			CHECK(((a >= '0' && a <= '9') || (a >= 'A' && a <= 'F')) &&
			      ((b >= '0' && b <= '9') || (b >= 'A' && b <= 'F')));
			CHECK(!(a == '2' && b == 'F') && !(a == '5' && b == 'C') && !(a == '0' && b == '0'));
		}
	}
	/* no "." or ".." segment */
	for (const char *s = p + 1;;) {
		size_t l = strcspn(s, "/");
		CHECK(!(l == 1 && s[0] == '.') && !(l == 2 && s[0] == '.' && s[1] == '.'));
		if (!s[l])
			break;
		s += l + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *host = (data[0] & 1) ? "example.com" : NULL;
	const char *t = (const char *)data + 1;
	size_t len = size - 1;
	char *copy = malloc(len ? len : 1);   /* exactly len bytes: ASan sees a read past the target */
	CHECK(copy);
	if (len)
		memcpy(copy, t, len);
	char out[SK_HTTP_PATH_MAX], again[SK_HTTP_PATH_MAX];
	size_t n = 0, n2 = 0;
	enum sk_path_result r = sk_http_path_normalize(copy, len, host, out, sizeof(out), &n);
	free(copy);
	if (r != SK_PATH_OK)
		return 0;
	check_output(out, n);
	CHECK(sk_http_path_normalize(out, n, host, again, sizeof(again), &n2) == SK_PATH_OK);
	CHECK(n2 == n && memcmp(out, again, n) == 0);
	CHECK(sk_http_glob_match("/**", out));
	if (!strchr(out, '*') && !strstr(out, "//"))
		CHECK(sk_http_glob_match(out, out));
	return 0;
}
