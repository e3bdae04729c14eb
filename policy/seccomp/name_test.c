/* policy/seccomp/name_test.c — the canonical text and the name (digests computed by coreutils sha256sum of
 * the same text, which is what the chart's sha256sum gives), order and repeats not mattering, allow and
 * deny not interchangeable, and the shape check the installer deletes by. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "policy/seccomp/name.h"

static void test_default_section(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	char name[SK_SCMP_NAME_SIZE];
	char *t = sk_seccomp_canonical(NULL, 0, NULL, 0, &err);
	assert_string_equal(t, "stockade-seccomp/1\nallow=\ndeny=\n");
	free(t);
	assert_int_equal(sk_seccomp_profile_name(NULL, 0, NULL, 0, name, &err), 0);
	/* printf 'stockade-seccomp/1\nallow=\ndeny=\n' | sha256sum */
	assert_string_equal(name, "stockade-4696b6ca6e2d4b5e.json");
	assert_string_equal(name, SK_SCMP_DEFAULT_NAME);
}

static void test_sorted_and_unique(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	const char *deny1[] = { "ptrace", "getrandom", "ptrace" };
	const char *deny2[] = { "getrandom", "ptrace" };
	char a[SK_SCMP_NAME_SIZE], b[SK_SCMP_NAME_SIZE];
	char *t = sk_seccomp_canonical(NULL, 0, deny1, 3, &err);
	assert_string_equal(t, "stockade-seccomp/1\nallow=\ndeny=getrandom,ptrace\n");
	free(t);
	assert_int_equal(sk_seccomp_profile_name(NULL, 0, deny1, 3, a, &err), 0);
	assert_int_equal(sk_seccomp_profile_name(NULL, 0, deny2, 2, b, &err), 0);
	assert_string_equal(a, b);
	assert_string_equal(a, "stockade-b22f410551713c70.json");
}

static void test_allow_is_not_deny(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	const char *l[] = { "getrandom" };
	char a[SK_SCMP_NAME_SIZE], d[SK_SCMP_NAME_SIZE];
	assert_int_equal(sk_seccomp_profile_name(l, 1, NULL, 0, a, &err), 0);
	assert_int_equal(sk_seccomp_profile_name(NULL, 0, l, 1, d, &err), 0);
	assert_string_not_equal(a, d);
}

static void test_shape(void **state)
{
	(void)state;
	assert_true(sk_seccomp_is_profile_name("stockade-4696b6ca6e2d4b5e.json"));
	assert_false(sk_seccomp_is_profile_name("stockade-agent.json"));
	assert_false(sk_seccomp_is_profile_name("stockade-4696B6CA6E2D4B5E.json"));
	assert_false(sk_seccomp_is_profile_name("stockade-4696b6ca6e2d4b5e.json.tmp"));
	assert_false(sk_seccomp_is_profile_name("stockade-4696b6ca6e2d4b5.json"));
	assert_false(sk_seccomp_is_profile_name("other-4696b6ca6e2d4b5e.json"));
	assert_false(sk_seccomp_is_profile_name(""));
}

static struct sk_policy *load(const char *yaml)
{
	struct sk_policy *p = NULL;
	struct sk_diags d = { 0 };
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", yaml, strlen(yaml), -1, SK_LOAD_NO_FILE_CHECKS, &p, &d), 0);
	sk_diags_free(&d);
	return p;
}

/* stockade-init's check: the section's own name passes, another section's is refused naming both and the
 * annotation that fixes it, a name not of the installer's shape cannot be checked and passes. */
static void test_check_profile(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_policy *def = load("version: 1\n");
	struct sk_policy *own = load("version: 1\nseccomp:\n  deny: [getrandom, ptrace]\n");
	assert_int_equal(sk_seccomp_check_profile(def, SK_SCMP_DEFAULT_NAME, &err), 0);
	assert_int_equal(sk_seccomp_check_profile(own, "stockade-b22f410551713c70.json", &err), 0);
	assert_int_equal(sk_seccomp_check_profile(own, SK_SCMP_DEFAULT_NAME, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "the agent runs under seccomp profile 'stockade-4696b6ca6e2d4b5e.json' but "
				       "this policy's seccomp section is 'stockade-b22f410551713c70.json'"));
	assert_non_null(strstr(err.msg, "stockade.io/seccomp-profile: stockade-b22f410551713c70.json"));
	struct sk_err e2 = { 0 };
	assert_int_equal(sk_seccomp_check_profile(def, "stockade-b22f410551713c70.json", &e2), -EINVAL);
	assert_int_equal(sk_seccomp_check_profile(own, "mine.json", &err), 0);
	sk_policy_free(def);
	sk_policy_free(own);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_section),
		cmocka_unit_test(test_sorted_and_unique),
		cmocka_unit_test(test_allow_is_not_deny),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_check_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
