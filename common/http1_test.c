/* common/http1_test.c — the shared HTTP/1 tokenizer: CRLF the only line end, token rules without
 * locale, versions, and the incremental contract (every prefix of an input is NEED_MORE or already the
 * input's final verdict). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/http1.h"

static enum sk_http1_result rline(const char *s, struct sk_http1_request_line *rl)
{
	return sk_http1_request_line((const uint8_t *)s, strlen(s), 15, rl);
}

static enum sk_http1_result fline(const char *s, struct sk_http1_field *f)
{
	return sk_http1_field_line((const uint8_t *)s, strlen(s), f);
}

/* The incremental contract: each prefix is NEED_MORE or the whole input's verdict. */
static void assert_prefixes_consistent(const char *s, bool request_line)
{
	size_t n = strlen(s);
	struct sk_http1_request_line rl;
	struct sk_http1_field f;
	enum sk_http1_result whole = request_line ? rline(s, &rl) : fline(s, &f);
	bool decided = false;
	for (size_t cut = 0; cut <= n; cut++) {
		enum sk_http1_result r = request_line ? sk_http1_request_line((const uint8_t *)s, cut, 15, &rl)
						      : sk_http1_field_line((const uint8_t *)s, cut, &f);
		if (r == SK_HTTP1_NEED_MORE) {
			assert_false(decided);   /* once decided, more bytes never undecide */
			continue;
		}
		assert_int_equal(r, whole);
		decided = true;
	}
}

static void test_request_lines(void **state)
{
	(void)state;
	struct sk_http1_request_line rl;
	assert_int_equal(rline("GET /a?b HTTP/1.1\r\n", &rl), SK_HTTP1_OK);
	assert_int_equal(rl.method_len, 3);
	assert_int_equal(rl.target_len, 4);
	assert_memory_equal(rl.target, "/a?b", 4);
	assert_int_equal(rl.minor, 1);
	assert_int_equal(rl.len, 19);
	assert_int_equal(rline("OPTIONS * HTTP/1.0\r\nHost", &rl), SK_HTTP1_OK);
	assert_int_equal(rl.minor, 0);
	assert_int_equal(rl.len, 20);

	static const struct { const char *in; enum sk_http1_result want; } cases[] = {
		{ "GET / HTTP/1.1\n", SK_HTTP1_MALFORMED },          /* bare LF */
		{ "GET / HTTP/1.1\rX", SK_HTTP1_MALFORMED },         /* bare CR */
		{ "\r\nGET / HTTP/1.1\r\n", SK_HTTP1_MALFORMED },    /* leading empty line */
		{ "GET\t/ HTTP/1.1\r\n", SK_HTTP1_MALFORMED },
		{ "GET  / HTTP/1.1\r\n", SK_HTTP1_MALFORMED },       /* empty target */
		{ "GET /\x7f HTTP/1.1\r\n", SK_HTTP1_MALFORMED },
		{ "GET /\xc3\xa9 HTTP/1.1\r\n", SK_HTTP1_MALFORMED },/* bytes >= 0x80 in the target */
		{ "GET / HTTPS/1.1\r\n", SK_HTTP1_MALFORMED },
		{ "GET / http/1.1\r\n", SK_HTTP1_MALFORMED },
		{ "GET / HTTP/2.0\r\n", SK_HTTP1_BAD_VERSION },
		{ "GET / HTTP/1.2\r\n", SK_HTTP1_BAD_VERSION },
		{ "GET / HTTP/1.10\r\n", SK_HTTP1_BAD_VERSION },
		{ "GET / HTTP/0.9\r\n", SK_HTTP1_BAD_VERSION },
		{ "VERYLONGMETHOD16 / HTTP/1.1\r\n", SK_HTTP1_MALFORMED },  /* a token, too long: not another protocol */
		{ "\x16\x03\x01\x02\x00", SK_HTTP1_NOT_HTTP },
		{ "SSH-2.0-x/y\r\n", SK_HTTP1_NOT_HTTP },
		{ "G\xc9T / HTTP/1.1\r\n", SK_HTTP1_NOT_HTTP },      /* no locale makes 0xc9 a letter */
		{ "\xe9GET / HTTP/1.1\r\n", SK_HTTP1_NOT_HTTP },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(rline(cases[i].in, &rl), cases[i].want);
		assert_prefixes_consistent(cases[i].in, true);
	}
	assert_prefixes_consistent("GET /a?b HTTP/1.1\r\n", true);
}

static void test_field_lines(void **state)
{
	(void)state;
	struct sk_http1_field f;
	assert_int_equal(fline("Host: \t example.com \t\r\nX", &f), SK_HTTP1_OK);
	assert_false(f.end);
	assert_int_equal(f.name_len, 4);
	assert_int_equal(f.value_len, 11);
	assert_memory_equal(f.value, "example.com", 11);
	assert_int_equal(f.len, 23);
	assert_int_equal(fline("X:\r\n", &f), SK_HTTP1_OK);
	assert_int_equal(f.value_len, 0);
	assert_int_equal(fline("\r\nbody", &f), SK_HTTP1_OK);
	assert_true(f.end);
	assert_int_equal(f.len, 2);

	static const char *const bad[] = {
		"Host : a\r\n", "Host\t: a\r\n", " Host: a\r\n", "\tfolded\r\n", ": a\r\n", "Host a\r\n",
		"Host: a\nX: b\r\n", "Host: a\rX: b\r\n", "\n", "\rX", "Host: a\x7f\r\n",
		"Ho\xc3\xa9st: a\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fline(bad[i], &f), SK_HTTP1_MALFORMED);
		assert_prefixes_consistent(bad[i], false);
	}
	static const uint8_t nul[] = "Host: a\0b\r\n";
	assert_int_equal(sk_http1_field_line(nul, sizeof(nul) - 1, &f), SK_HTTP1_MALFORMED);
	assert_prefixes_consistent("Host: \t example.com \t\r\n", false);
}

static void test_tokens(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		bool want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    (c != 0 && strchr("!#$%&'*+-.^_`|~", (int)c) != NULL);
		assert_int_equal(sk_http1_is_tchar((uint8_t)c), want);
	}
	assert_true(sk_http1_ieq("Content-LENGTH", 14, "content-length"));
	assert_false(sk_http1_ieq("Content_Length", 14, "content-length"));
	assert_false(sk_http1_ieq("content-lengt", 13, "content-length"));
	assert_false(sk_http1_ieq("\xc3\x89", 2, "\xc3\xa9"));   /* ASCII folding only */
}

static void test_hexval(void **state)
{
	(void)state;
	static const char digits[] = "0123456789abcdef", upper[] = "ABCDEF";
	for (int i = 0; i < 16; i++)
		assert_int_equal(sk_http1_hexval((uint8_t)digits[i]), i);
	for (int i = 0; i < 6; i++)
		assert_int_equal(sk_http1_hexval((uint8_t)upper[i]), 10 + i);
	/* Every other byte, the neighbours of each range and the high half included, is not a digit. */
	int n = 0;
	for (int c = 0; c < 256; c++)
		n += sk_http1_hexval((uint8_t)c) >= 0;
	assert_int_equal(n, 22);
	assert_int_equal(sk_http1_hexval('/'), -1);
	assert_int_equal(sk_http1_hexval(':'), -1);
	assert_int_equal(sk_http1_hexval('@'), -1);
	assert_int_equal(sk_http1_hexval('G'), -1);
	assert_int_equal(sk_http1_hexval('`'), -1);
	assert_int_equal(sk_http1_hexval('g'), -1);
	assert_int_equal(sk_http1_hexval(0xb0), -1);   /* '0' | 0x80 */
	assert_int_equal(sk_http1_hexval(0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_lines),
		cmocka_unit_test(test_field_lines),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_hexval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
