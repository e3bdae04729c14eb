/* common/http_path_test.c — the path normaliser (each refusal, the spellings it unifies, idempotence) and
 * the glob matcher (segments, "**", part-segment '*', hostile paths against real rules). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/http_path.h"

struct ncase {
	const char *in;
	enum sk_path_result want;
	const char *out;   /* on OK */
};

static void run_cases(const struct ncase *cs, size_t n, const char *host)
{
	for (size_t i = 0; i < n; i++) {
		char out[SK_HTTP_PATH_MAX];
		size_t ol = 0;
		enum sk_path_result r = sk_http_path_normalize(cs[i].in, strlen(cs[i].in), host, out, sizeof(out), &ol);
		if (r != cs[i].want)
			fail_msg("%s: got %s, want %s", cs[i].in, sk_path_result_name(r), sk_path_result_name(cs[i].want));
		if (r != SK_PATH_OK)
			continue;
		if (strcmp(out, cs[i].out) != 0)
			fail_msg("%s: got %s, want %s", cs[i].in, out, cs[i].out);
		assert_int_equal(ol, strlen(out));
		/* idempotent */
		char again[SK_HTTP_PATH_MAX];
		assert_int_equal(sk_http_path_normalize(out, ol, host, again, sizeof(again), NULL), SK_PATH_OK);
		assert_string_equal(again, out);
	}
}

static void test_plain_paths_unchanged(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "/", SK_PATH_OK, "/" },
		{ "/user", SK_PATH_OK, "/user" },
		{ "/repos/acme/app/pulls", SK_PATH_OK, "/repos/acme/app/pulls" },
		{ "/a/", SK_PATH_OK, "/a/" },
		{ "/a;b=c/d:e@f!$&'()*+,", SK_PATH_OK, "/a;b=c/d:e@f!$&'()*+," },
		{ "/simple/requests/", SK_PATH_OK, "/simple/requests/" },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_query_split_off(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "/search?q=a/../b", SK_PATH_OK, "/search" },
		{ "/a/..?x", SK_PATH_OK, "/" },
		{ "/?", SK_PATH_OK, "/" },
		{ "/a?b#c", SK_PATH_FRAGMENT, NULL },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_escapes_canonical(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "/%75ser", SK_PATH_OK, "/user" },                 /* unreserved: decoded */
		{ "/%7euser/%41%2d", SK_PATH_OK, "/~user/A-" },
		{ "/a%20b", SK_PATH_OK, "/a%20b" },                 /* others: kept, upper-case hex */
		{ "/a%3bb", SK_PATH_OK, "/a%3Bb" },                 /* an escaped sub-delim stays escaped */
		{ "/a%25", SK_PATH_OK, "/a%25" },
		{ "/caf%c3%a9", SK_PATH_OK, "/caf%C3%A9" },
		{ "/caf\xc3\xa9", SK_PATH_OK, "/caf%C3%A9" },        /* raw UTF-8: escaped */
		{ "/a\"b<c>", SK_PATH_OK, "/a%22b%3Cc%3E" },        /* raw bytes outside pchar: escaped */
		{ "/a%2", SK_PATH_BAD_ESCAPE, NULL },
		{ "/a%zz", SK_PATH_BAD_ESCAPE, NULL },
		{ "/a%", SK_PATH_BAD_ESCAPE, NULL },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_dot_segments_resolved(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "/a/./b", SK_PATH_OK, "/a/b" },
		{ "/a/../b", SK_PATH_OK, "/b" },
		{ "/a/b/..", SK_PATH_OK, "/a/" },
		{ "/a/.", SK_PATH_OK, "/a/" },
		{ "/.", SK_PATH_OK, "/" },
		{ "/a/..", SK_PATH_OK, "/" },
		{ "/repos/acme/../../admin", SK_PATH_OK, "/admin" },
		{ "/a/b/c/../../d", SK_PATH_OK, "/a/d" },
		{ "/a/.../b", SK_PATH_OK, "/a/.../b" },             /* three dots: a name */
		{ "/a/.b/..c", SK_PATH_OK, "/a/.b/..c" },
		{ "/..", SK_PATH_ABOVE_ROOT, NULL },
		{ "/../a", SK_PATH_ABOVE_ROOT, NULL },
		{ "/a/../../b", SK_PATH_ABOVE_ROOT, NULL },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_hostile_refused(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "/repos/acme%2F..%2Fother", SK_PATH_ENCODED_SLASH, NULL },
		{ "/a%2fb", SK_PATH_ENCODED_SLASH, NULL },
		{ "/a%5cb", SK_PATH_BACKSLASH, NULL },
		{ "/a\\..\\b", SK_PATH_BACKSLASH, NULL },
		{ "/a%00b", SK_PATH_NUL, NULL },
		{ "/a\tb", SK_PATH_CTL, NULL },
		{ "/a b", SK_PATH_CTL, NULL },
		{ "/a\x7f", SK_PATH_CTL, NULL },
		{ "/a/%2e%2e/b", SK_PATH_ENCODED_DOT, NULL },
		{ "/a/.%2E/b", SK_PATH_ENCODED_DOT, NULL },
		{ "/a/%2e", SK_PATH_ENCODED_DOT, NULL },
		{ "/a/..;/b", SK_PATH_DOT_PARAM, NULL },
		{ "/a/.;x/b", SK_PATH_DOT_PARAM, NULL },
		{ "/a/..%3b/b", SK_PATH_DOT_PARAM, NULL },
		{ "/a//../b", SK_PATH_EMPTY_DOT, NULL },
		{ "/a/x//../../admin", SK_PATH_EMPTY_DOT, NULL },
		{ "//a/./b", SK_PATH_EMPTY_DOT, NULL },
		{ "/a#frag", SK_PATH_FRAGMENT, NULL },
		{ "/%c0%af", SK_PATH_BAD_UTF8, NULL },              /* overlong '/' */
		{ "/%c0%ae%c0%ae/x", SK_PATH_BAD_UTF8, NULL },      /* overlong '.' */
		{ "/%e0%80%af", SK_PATH_BAD_UTF8, NULL },
		{ "/%ed%a0%80", SK_PATH_BAD_UTF8, NULL },           /* a surrogate */
		{ "/%f4%90%80%80", SK_PATH_BAD_UTF8, NULL },        /* > U+10FFFF */
		{ "/%c3", SK_PATH_BAD_UTF8, NULL },                 /* cut */
		{ "/%c3/%a9", SK_PATH_BAD_UTF8, NULL },             /* split by a '/' */
		{ "/\xff", SK_PATH_BAD_UTF8, NULL },
		{ "*", SK_PATH_NOT_ORIGIN, NULL },
		{ "example.com:443", SK_PATH_NOT_ORIGIN, NULL },
		{ "a/b", SK_PATH_NOT_ORIGIN, NULL },
		{ "", SK_PATH_NOT_ORIGIN, NULL },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_empty_segments_kept_without_dots(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "//a", SK_PATH_OK, "//a" },
		{ "/a//b/", SK_PATH_OK, "/a//b/" },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), NULL);
}

static void test_absolute_form(void **state)
{
	(void)state;
	static const struct ncase cs[] = {
		{ "http://api.example.com/a/../b?x", SK_PATH_OK, "/b" },
		{ "HTTP://API.example.com:8080/x", SK_PATH_OK, "/x" },
		{ "http://api.example.com", SK_PATH_OK, "/" },
		{ "http://api.example.com?q", SK_PATH_OK, "/" },
		{ "http://api.example.com./x", SK_PATH_OK, "/x" },
		{ "http://other.example.com/x", SK_PATH_AUTHORITY, NULL },
		{ "http://user@api.example.com/x", SK_PATH_AUTHORITY, NULL },
		{ "http:///x", SK_PATH_AUTHORITY, NULL },
		{ "ftp://api.example.com/x", SK_PATH_NOT_ORIGIN, NULL },
		{ "http://api.example.com#x", SK_PATH_FRAGMENT, NULL },
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]), "api.example.com");
}

static void test_too_long(void **state)
{
	(void)state;
	char in[SK_HTTP_PATH_MAX + 10], out[SK_HTTP_PATH_MAX];
	memset(in, 'a', sizeof(in));
	in[0] = '/';
	assert_int_equal(sk_http_path_normalize(in, sizeof(in), NULL, out, sizeof(out), NULL), SK_PATH_TOO_LONG);
	/* A short buffer: the escape that would overflow is refused, never cut. */
	char small[8];
	assert_int_equal(sk_http_path_normalize("/ab%20cd", 8, NULL, small, sizeof(small), NULL), SK_PATH_TOO_LONG);
	assert_int_equal(sk_http_path_normalize("/abcd\"", 6, NULL, small, sizeof(small), NULL), SK_PATH_TOO_LONG);
	assert_int_equal(sk_http_path_normalize("/ab%20c", 7, NULL, small, sizeof(small), NULL), SK_PATH_OK);
	assert_string_equal(small, "/ab%20c");
}

static void test_target_not_nul_terminated(void **state)
{
	(void)state;
	const char t[] = "/abc/../d EXTRA";
	char out[64];
	assert_int_equal(sk_http_path_normalize(t, 9, NULL, out, sizeof(out), NULL), SK_PATH_OK);
	assert_string_equal(out, "/d");
}

/* ---- globs ---- */

struct mcase {
	const char *glob, *path;
	bool want;
};

static void test_glob_match(void **state)
{
	(void)state;
	static const struct mcase cs[] = {
		{ "/user", "/user", true },
		{ "/user", "/user/", false },
		{ "/user", "/users", false },
		{ "/user/", "/user/", true },
		{ "/repos/acme/**", "/repos/acme", true },
		{ "/repos/acme/**", "/repos/acme/", true },
		{ "/repos/acme/**", "/repos/acme/app/pulls/1", true },
		{ "/repos/acme/**", "/repos/acmex/app", false },
		{ "/repos/acme/**", "/repos/other/app", false },
		{ "/repos/*/pulls", "/repos/acme/pulls", true },
		{ "/repos/*/pulls", "/repos/acme/x/pulls", false },
		{ "/repos/*/pulls", "/repos//pulls", false },           /* '*' is never an empty segment */
		{ "/repos/acme/*/pulls", "/repos/acme/app/pulls", true },
		{ "/**", "/", true },
		{ "/**", "/anything/at/all", true },
		{ "/**/pulls", "/pulls", true },
		{ "/**/pulls", "/a/b/c/pulls", true },
		{ "/**/pulls", "/a/b/c/pulls/x", false },
		{ "/a/**/b/**/c", "/a/x/b/y/z/c", true },
		{ "/a/**/b/**/c", "/a/b/c", true },
		{ "/a/**/b/**/c", "/a/c", false },
		{ "/files/*.whl", "/files/pkg-1.0.whl", true },
		{ "/files/*.whl", "/files/pkg.whl/x", false },
		{ "/files/*.whl", "/files/.whl", true },
		{ "/files/a*b*c", "/files/aXbYc", true },
		{ "/files/a*b*c", "/files/aXbY", false },
		{ "/", "/", true },
		{ "/", "/a", false },
		{ "/a", "/", false },
	};
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		if (sk_http_glob_match(cs[i].glob, cs[i].path) != cs[i].want)
			fail_msg("%s ~ %s: want %d", cs[i].glob, cs[i].path, cs[i].want);
	}
}

/* What a rule allows is decided on the normalised path: hostile spellings of a path outside the glob are
 * either refused or normalised to that outside path. */
static void test_hostile_paths_against_a_rule(void **state)
{
	(void)state;
	static const char *const hostile[] = {
		"/repos/acme/../../admin",      "/repos/acme/%2e%2e/%2e%2e/admin", "/repos/acme%2f..%2f..%2fadmin",
		"/repos/acme/..;/..;/admin",    "/repos/acme/x//../../../admin",   "/repos/acme\\..\\..\\admin",
		"/repos/acme/%c0%ae%c0%ae/admin", "/repos/acme/./../../admin",     "http://evil.example/repos/acme/x",
	};
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		char out[SK_HTTP_PATH_MAX];
		enum sk_path_result r =
			sk_http_path_normalize(hostile[i], strlen(hostile[i]), "api.example.com", out, sizeof(out), NULL);
		if (r == SK_PATH_OK && sk_http_glob_match("/repos/acme/**", out))
			fail_msg("%s normalised to %s, inside the glob", hostile[i], out);
	}
}

static void test_glob_check(void **state)
{
	(void)state;
	const char *why = NULL;
	char want[64];
	assert_true(sk_http_glob_check("/repos/acme/**", &why, want, sizeof(want)));
	assert_true(sk_http_glob_check("/repos/*/pulls", &why, want, sizeof(want)));
	assert_true(sk_http_glob_check("/files/*.whl", &why, want, sizeof(want)));
	assert_true(sk_http_glob_check("/", &why, want, sizeof(want)));
	assert_true(sk_http_glob_check("/**", &why, want, sizeof(want)));
	assert_true(sk_http_glob_check("/a/", &why, want, sizeof(want)));
	assert_false(sk_http_glob_check("repos", &why, want, sizeof(want)));
	assert_non_null(strstr(why, "starts with '/'"));
	assert_false(sk_http_glob_check("/a**", &why, want, sizeof(want)));
	assert_non_null(strstr(why, "whole segment"));
	assert_false(sk_http_glob_check("/**b/c", &why, want, sizeof(want)));
	assert_false(sk_http_glob_check("/a/***", &why, want, sizeof(want)));
	assert_false(sk_http_glob_check("/a//b", &why, want, sizeof(want)));
	assert_non_null(strstr(why, "empty segment"));
	assert_false(sk_http_glob_check("/a/../b", &why, want, sizeof(want)));
	assert_string_equal(want, "/b");
	assert_false(sk_http_glob_check("/%7euser", &why, want, sizeof(want)));
	assert_string_equal(want, "/~user");
	assert_false(sk_http_glob_check("/a%2Fb", &why, want, sizeof(want)));
	assert_non_null(strstr(why, "%2F"));
	assert_false(sk_http_glob_check("/a?x", &why, want, sizeof(want)));
	assert_string_equal(want, "/a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_paths_unchanged),
		cmocka_unit_test(test_query_split_off),
		cmocka_unit_test(test_escapes_canonical),
		cmocka_unit_test(test_dot_segments_resolved),
		cmocka_unit_test(test_hostile_refused),
		cmocka_unit_test(test_empty_segments_kept_without_dots),
		cmocka_unit_test(test_absolute_form),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_target_not_nul_terminated),
		cmocka_unit_test(test_glob_match),
		cmocka_unit_test(test_hostile_paths_against_a_rule),
		cmocka_unit_test(test_glob_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
