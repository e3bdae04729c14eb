/* policy/domain_test.c — sk_domain_normalize: accepted spellings and each rejection with its reason;
 * sk_dns_label: the Kubernetes DNS-1123 label, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "policy/domain.h"

static int norm(const char *in, unsigned flags, char *out, bool *wild, const char **why)
{
	return sk_domain_normalize(in, strlen(in), flags, out, wild, why);
}

static void test_domain_accepts_and_normalises(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "example.com", "example.com" },
		{ "Example.COM", "example.com" },
		{ "example.com.", "example.com" },
		{ "localhost", "localhost" },
		{ "a-b.c0.io", "a-b.c0.io" },
		{ "xn--bcher-kva.example", "xn--bcher-kva.example" },
		{ "123.example.com", "123.example.com" },
		{ "1.2.3.com", "1.2.3.com" },
		{ "com4", "com4" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char out[SK_DOMAIN_MAX + 1];
		bool wild = true;
		const char *why = NULL;
		assert_int_equal(norm(ok[i].in, 0, out, &wild, &why), 0);
		assert_string_equal(out, ok[i].out);
		assert_false(wild);
		assert_null(why);
	}
}

static void test_domain_wildcard_needs_flag_and_strips_prefix(void **state)
{
	(void)state;
	char out[SK_DOMAIN_MAX + 1];
	bool wild = false;
	const char *why = NULL;
	assert_int_equal(norm("*.GitHubUserContent.com.", SK_DOMAIN_ALLOW_WILDCARD, out, &wild, &why), 0);
	assert_true(wild);
	assert_string_equal(out, "githubusercontent.com");

	assert_int_equal(norm("*.com", SK_DOMAIN_ALLOW_WILDCARD, out, &wild, &why), 0);
	assert_true(wild);
	assert_string_equal(out, "com");

	assert_int_equal(norm("plain.org", SK_DOMAIN_ALLOW_WILDCARD, out, &wild, &why), 0);
	assert_false(wild);

	assert_int_equal(norm("*.example.com", 0, out, &wild, &why), -EINVAL);
	assert_string_equal(why, "wildcard not allowed here");
}

static void test_domain_rejections_name_the_problem(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *why;
	} bad[] = {
		{ "", "empty name" },
		{ " example.com", "whitespace in name" },
		{ "example.com ", "whitespace in name" },
		{ "exa mple.com", "whitespace in name" },
		{ "example.com\nx-injected: 1", "whitespace in name" },
		{ "exa\tmple.com", "whitespace in name" },
		{ "exa\x01mple.com", "control byte in name" },
		{ "exa\x7fmple.com", "control byte in name" },
		{ "b\xc3\xbc" "cher.example", "non-ASCII byte (use the IDNA A-label, xn--...)" },
		{ "_dmarc.example.com", "underscore in name (not a valid hostname character)" },
		{ "a..b", "empty label" },
		{ ".example.com", "empty label" },
		{ "example.com..", "empty label" },
		{ ".", "empty label" },
		{ "-a.com", "label starts or ends with '-'" },
		{ "a-.com", "label starts or ends with '-'" },
		{ "a.b-", "label starts or ends with '-'" },
		{ "a*.com", "'*' is only allowed as a whole leading label (\"*.suffix\")" },
		{ "a.*.com", "'*' is only allowed as a whole leading label (\"*.suffix\")" },
		{ "*.*.com", "'*' is only allowed as a whole leading label (\"*.suffix\")" },
		{ "*com", "'*' is only allowed as a whole leading label (\"*.suffix\")" },
		{ "**.com", "'*' is only allowed as a whole leading label (\"*.suffix\")" },
		{ "*", "bare wildcard with no suffix" },
		{ "*.", "bare wildcard with no suffix" },
		{ "*..", "empty label" },
		{ "10.0.0.1", "all-numeric last label (an IP address is not a domain name)" },
		{ "example.123", "all-numeric last label (an IP address is not a domain name)" },
		{ "*.1", "all-numeric last label (an IP address is not a domain name)" },
		{ "[::1]", "invalid character in name (allowed: a-z, 0-9, '-', '.')" },
		{ "example.com:443", "invalid character in name (allowed: a-z, 0-9, '-', '.')" },
		{ "user@example.com", "invalid character in name (allowed: a-z, 0-9, '-', '.')" },
		{ "a/b.com", "invalid character in name (allowed: a-z, 0-9, '-', '.')" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char out[SK_DOMAIN_MAX + 1];
		bool wild = true;
		const char *why = NULL;
		int r = norm(bad[i].in, SK_DOMAIN_ALLOW_WILDCARD, out, &wild, &why);
		if (r != -EINVAL || !why || strcmp(why, bad[i].why) != 0)
			fail_msg("case %zu \"%s\": r=%d why=%s (expected %s)", i, bad[i].in, r,
				 why ? why : "(null)", bad[i].why);
		assert_false(wild);
	}
}

static void test_domain_embedded_nul_is_a_control_byte(void **state)
{
	(void)state;
	char out[SK_DOMAIN_MAX + 1];
	const char *why = NULL;
	static const char in[] = "evil.com\0.good.com";
	assert_int_equal(sk_domain_normalize(in, sizeof(in) - 1, 0, out, NULL, &why), -EINVAL);
	assert_string_equal(why, "control byte in name");
	/* The length bounds the input: the same bytes cut before the NUL are fine. */
	assert_int_equal(sk_domain_normalize(in, 8, 0, out, NULL, NULL), 0);
	assert_string_equal(out, "evil.com");
}

static void test_domain_length_limits(void **state)
{
	(void)state;
	char in[300], out[SK_DOMAIN_MAX + 1];
	const char *why = NULL;

	/* 63-byte label ok, 64 not. */
	memset(in, 'a', 63);
	memcpy(in + 63, ".com", 5);
	assert_int_equal(norm(in, 0, out, NULL, &why), 0);
	memset(in, 'a', 64);
	memcpy(in + 64, ".com", 5);
	assert_int_equal(norm(in, 0, out, NULL, &why), -EINVAL);
	assert_string_equal(why, "label longer than 63 bytes");

	/* 253 bytes total ok (plus a trailing dot), 254 not: 4 labels of 63 + 3 dots = 255, trim. */
	size_t n = 0;
	for (int l = 0; l < 4; l++) {
		if (l)
			in[n++] = '.';
		memset(in + n, 'b', 63);
		n += 63;
	}
	in[n] = '\0';
	in[253] = '\0';  /* "...b" ends in a 61-byte label */
	assert_int_equal(norm(in, 0, out, NULL, &why), 0);
	assert_int_equal(strlen(out), 253);
	in[253] = '.';
	in[254] = '\0';
	assert_int_equal(norm(in, 0, out, NULL, &why), 0);
	assert_int_equal(strlen(out), 253);
	in[253] = 'b';
	assert_int_equal(norm(in, 0, out, NULL, &why), -EINVAL);
	assert_string_equal(why, "name longer than 253 bytes");

	/* A pattern counts its "*.": "*." + 252 bytes is over. */
	char pat[300] = "*.";
	memcpy(pat + 2, in + 2, 252);
	pat[254] = '\0';
	assert_int_equal(norm(pat, SK_DOMAIN_ALLOW_WILDCARD, out, NULL, &why), -EINVAL);
	assert_string_equal(why, "name longer than 253 bytes");
	pat[253] = '\0';
	assert_int_equal(norm(pat, SK_DOMAIN_ALLOW_WILDCARD, out, NULL, &why), 0);
}

static void test_domain_null_outputs_are_optional(void **state)
{
	(void)state;
	char out[SK_DOMAIN_MAX + 1];
	assert_int_equal(sk_domain_normalize("x..y", 4, 0, out, NULL, NULL), -EINVAL);
	assert_int_equal(sk_domain_normalize(NULL, 0, 0, out, NULL, NULL), -EINVAL);
}

static bool label(const char *s)
{
	return sk_dns_label(s, strlen(s));
}

static void test_dns_label_is_the_dns1123_label(void **state)
{
	(void)state;
	char l[65];
	memset(l, 'a', 64);
	l[64] = '\0';
	assert_false(label(l));           /* 64 bytes */
	l[63] = '\0';
	assert_true(label(l));            /* 63 */
	assert_true(label("a"));
	assert_true(label("kube-system"));
	assert_true(label("123"));        /* all digits: a valid namespace, unlike a domain's last label */
	assert_true(label("0a-b9"));
	assert_true(label("a--b"));
	assert_false(label(""));
	assert_false(label("-a"));
	assert_false(label("a-"));
	assert_false(label("-"));
	assert_false(label("Default"));   /* not normalised: the API server refuses upper case */
	assert_false(label("a.b"));       /* one label, no dots */
	assert_false(label("a_b"));
	assert_false(label("a b"));
	assert_false(label("é"));
	/* Only s[0..n) is read: a prefix of a longer string is judged alone. */
	assert_true(sk_dns_label("ab,-c", 2));
	assert_false(sk_dns_label("ab-,c", 3));
	assert_false(sk_dns_label("abc", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_accepts_and_normalises),
		cmocka_unit_test(test_domain_wildcard_needs_flag_and_strips_prefix),
		cmocka_unit_test(test_domain_rejections_name_the_problem),
		cmocka_unit_test(test_domain_embedded_nul_is_a_control_byte),
		cmocka_unit_test(test_domain_length_limits),
		cmocka_unit_test(test_domain_null_outputs_are_optional),
		cmocka_unit_test(test_dns_label_is_the_dns1123_label),
	};
	return cmocka_run_group_tests_name("domain", tests, NULL, NULL);
}
