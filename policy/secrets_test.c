/* policy/secrets_test.c — the secrets section: a valid entry and its defaults, and each refusal
 * at its file:line:col. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

#define HEAD                                                                                                  \
	"version: 1\n"                                                                                       \
	"egress:\n"                                                                                          \
	"  - host: api.github.com\n"                                                                         \
	"    inspect: true\n"                                                                                \
	"  - host: '*.github.com'\n"                                                                         \
	"    inspect: true\n"                                                                                \
	"  - host: plain.example\n"                                                                          \
	"secrets:\n"
/* line 9 is the first line after HEAD */

static struct sk_policy *load(const char *text, struct sk_diags *d, int *r)
{
	struct sk_policy *p = NULL;
	*r = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &p, d);
	return p;
}

static void expect_error(const char *text, unsigned line, unsigned col, const char *want)
{
	struct sk_diags d = { 0 };
	int r;
	struct sk_policy *p = load(text, &d, &r);
	assert_int_equal(r, -22);
	assert_null(p);
	bool found = false;
	for (size_t i = 0; i < d.n; i++)
		found |= d.v[i].line == line && d.v[i].col == col && strstr(d.v[i].msg, want) != NULL;
	if (!found) {
		for (size_t i = 0; i < d.n; i++)
			(void)fprintf(stderr, "%u:%u: %s\n", d.v[i].line, d.v[i].col, d.v[i].msg);
		sk_diags_free(&d);
		fail_msg("no diagnostic at %u:%u containing \"%s\"", line, col, want);
	}
	sk_diags_free(&d);
}

static void test_valid_and_defaults(void **state)
{
	(void)state;
	struct sk_diags d = { 0 };
	int r;
	struct sk_policy *p = load(HEAD
				   "  - name: github\n"
				   "    valueFile: /var/run/stockade/secrets/github/token\n"
				   "    hosts: [API.github.com., codeload.github.com, api.github.com]\n"
				   "    paths: [\"/acme/**\", \"/repos/acme/**\"]\n"
				   "    in: [authorization, x-api-key]\n"
				   "  - name: npm\n"
				   "    valueFile: /s/npm\n"
				   "    placeholder: NPM_TOKEN_PLACEHOLDER_0001\n"
				   "    hosts: [api.github.com]\n",
				   &d, &r);
	if (r)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(p->n_secrets, 2);
	const struct sk_secret *s = &p->secrets[0];
	assert_string_equal(s->name, "github");
	assert_string_equal(s->placeholder, "stockade-secret-github");
	assert_int_equal(s->n_hosts, 2);   /* normalised, the repeat dropped */
	assert_string_equal(s->hosts[0], "api.github.com");
	assert_string_equal(s->hosts[1], "codeload.github.com");
	assert_int_equal(s->n_paths, 2);
	assert_int_equal(s->n_in, 2);
	assert_string_equal(s->in[1], "x-api-key");
	s = &p->secrets[1];
	assert_string_equal(s->placeholder, "NPM_TOKEN_PLACEHOLDER_0001");
	assert_int_equal(s->n_paths, 0);
	assert_int_equal(s->n_in, 1);
	assert_string_equal(s->in[0], "authorization");
	sk_policy_free(p);
	sk_diags_free(&d);
}

static void test_refusals(void **state)
{
	(void)state;
	expect_error(HEAD "  - name: Git Hub\n    valueFile: /f\n    hosts: [api.github.com]\n", 9, 11,
		     "is not a valid secret name");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n"
			  "  - name: a\n    valueFile: /g\n    hosts: [api.github.com]\n",
		     12, 11, "already the name of secrets[0]");
	expect_error(HEAD "  - name: a\n    hosts: [api.github.com]\n", 9, 5, "missing key 'valueFile'");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n", 9, 5, "missing key 'hosts'");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    bogus: 1\n", 12, 5,
		     "bogus");
	/* placeholder: too short, bad bytes, duplicate (case folded), one inside another */
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    placeholder: short\n    hosts: [api.github.com]\n",
		     11, 18, "not a usable placeholder");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    placeholder: 'with space inside it'\n"
			  "    hosts: [api.github.com]\n",
		     11, 18, "not a usable placeholder");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    placeholder: SAME-PLACEHOLDER-X\n    hosts: [api.github.com]\n"
			  "  - name: b\n    valueFile: /f\n    placeholder: same-placeholder-x\n    hosts: [api.github.com]\n",
		     15, 18, "is already the placeholder of secrets[0]");
	expect_error(HEAD "  - name: ab\n    valueFile: /f\n    hosts: [api.github.com]\n"
			  "  - name: b\n    valueFile: /f\n    placeholder: stockade-secret-abc\n    hosts: [api.github.com]\n",
		     14, 18, "overlaps the placeholder of secrets[0]");
	/* the default placeholder clashes too, reported at the entry */
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    placeholder: stockade-secret-bb\n    hosts: [api.github.com]\n"
			  "  - name: b\n    valueFile: /f\n    hosts: [api.github.com]\n",
		     13, 5, "overlaps the placeholder of secrets[0]");
	/* hosts: not inspected, not allowed, wildcard, empty */
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [plain.example]\n", 11, 13,
		     "decided by a rule without inspect: true");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com, evil.example]\n", 11, 29,
		     "not allowed by any egress rule");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: ['*.github.com']\n", 11, 13, "is a wildcard");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: []\n", 11, 12, "empty list");
	/* paths as request-rule globs */
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    paths: [repos]\n", 12, 13,
		     "expected a path glob");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    paths: ['/a/**x']\n", 12,
		     13, "/a/**x");
	/* in: lower-case tokens, never a routing header */
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    in: [Authorization]\n", 12,
		     10, "not a lower-case header name");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    in: [host]\n", 12, 10,
		     "decides where or how the request goes");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    in: []\n", 12, 9, "empty list");
	expect_error(HEAD "  - name: a\n    valueFile: /f\n    hosts: [api.github.com]\n    paths: []\n", 12, 12,
		     "empty list");
	expect_error(HEAD "  - 3\n", 9, 5, "secrets[0]");
	expect_error(HEAD "  name: a\n", 9, 3, "secrets");
}

/* Without SK_LOAD_NO_FILE_CHECKS the value file must be readable now (the message names the file only). */
static void test_value_file_checked(void **state)
{
	(void)state;
	const char *text = HEAD "  - name: a\n    valueFile: /nonexistent/stockade/token\n    hosts: [api.github.com]\n";
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, 0, &p, &d), -22);
	assert_null(p);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 10);
	assert_int_equal(d.v[0].col, 16);
	assert_non_null(strstr(d.v[0].msg, "cannot read '/nonexistent/stockade/token'"));
	sk_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_and_defaults),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_value_file_checked),
	};
	return cmocka_run_group_tests_name("policy_secrets", tests, NULL, NULL);
}
