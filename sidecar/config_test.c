/* sidecar/config_test.c — flags, environment, precedence, and the errors a bad value produces. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "sidecar/config.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_defaults_and_required_policy(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *argv[] = { "sidecar", "--policy", "/p.yaml" };
	assert_int_equal(sk_config_parse(ARGC(argv), argv, NULL, &c, &err), 0);
	assert_string_equal(c.policy_path, "/p.yaml");
	assert_string_equal(c.marker_path, SK_DEFAULT_MARKER);
	assert_int_equal(c.log_level, SK_LOG_INFO);
	assert_null(c.admin_addr);
	assert_int_equal(c.drain_seconds, 10);
	sk_config_free(&c);

	char *none[] = { "sidecar" };
	assert_int_equal(sk_config_parse(1, none, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "--policy FILE (or STOCKADE_POLICY) is required");
}

static void test_env_then_flags_win(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *env[] = { "PATH=/bin", "STOCKADE_POLICY=/env.yaml", "STOCKADE_MARKER=/m", "STOCKADE_LOG_LEVEL=debug",
			"STOCKADE_ADMIN_ADDR=127.0.0.1:9000", "STOCKADE_DRAIN_SECONDS=3", "STOCKADE_POLICYX=/no", NULL };
	char *argv[] = { "sidecar", "--log-level=warn", "--admin-addr", "[::1]:9100" };
	assert_int_equal(sk_config_parse(ARGC(argv), argv, env, &c, &err), 0);
	assert_string_equal(c.policy_path, "/env.yaml");
	assert_string_equal(c.marker_path, "/m");
	assert_int_equal(c.log_level, SK_LOG_WARN);
	assert_string_equal(c.admin_addr, "[::1]:9100");
	assert_int_equal(c.drain_seconds, 3);
	sk_config_free(&c);
}

static void test_empty_env_is_unset(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *env[] = { "STOCKADE_LOG_LEVEL=", "STOCKADE_POLICY=/p", NULL };
	char *argv[] = { "sidecar" };
	assert_int_equal(sk_config_parse(1, argv, env, &c, &err), 0);
	assert_int_equal(c.log_level, SK_LOG_INFO);
	sk_config_free(&c);
}

static void expect_error(char **argv, int argc, char **env, const char *msg)
{
	struct sk_config c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_config_parse(argc, argv, env, &c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_null(c.policy_path);  /* freed on error */
}

static void test_bad_values_named(void **state)
{
	(void)state;
	char *a1[] = { "s", "--policy", "/p", "--log-level", "loud" };
	expect_error(a1, ARGC(a1), NULL, "--log-level: 'loud' is not one of error, warn, info, debug");
	char *a2[] = { "s", "--policy" };
	expect_error(a2, ARGC(a2), NULL, "--policy: missing value");
	char *a3[] = { "s", "--polic", "/p" };
	expect_error(a3, ARGC(a3), NULL, "unknown flag '--polic' (see --help)");
	char *a4[] = { "s", "/p" };
	expect_error(a4, ARGC(a4), NULL, "unexpected argument '/p' (see --help)");
	char *e5[] = { "STOCKADE_DRAIN_SECONDS=-1", NULL };
	char *a5[] = { "s", "--policy", "/p" };
	expect_error(a5, ARGC(a5), e5, "STOCKADE_DRAIN_SECONDS: '-1' is not a number of seconds in 0..3600");
	char *a6[] = { "s", "--policy", "/p", "--admin-addr", "1.2.3.4:70000" };
	expect_error(a6, ARGC(a6), NULL, "--admin-addr: admin address '1.2.3.4:70000': port must be 1..65535");
	char *a7[] = { "s", "--drain-seconds", "5" };  /* environment only */
	expect_error(a7, ARGC(a7), NULL, "unknown flag '--drain-seconds' (see --help)");
	char *a8[] = { "s", "--policy=" };
	expect_error(a8, ARGC(a8), NULL, "--policy: empty value");
}

static void test_help_version_need_no_policy(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *argv[] = { "s", "--version" };
	assert_int_equal(sk_config_parse(2, argv, NULL, &c, &err), 0);
	assert_true(c.version);
	sk_config_free(&c);
	char *argv2[] = { "s", "--help" };
	assert_int_equal(sk_config_parse(2, argv2, NULL, &c, &err), 0);
	assert_true(c.help);
	sk_config_free(&c);
}

static void test_admin_sockaddr_forms(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	socklen_t len;
	struct sk_err err = { 0 };
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	char txt[INET6_ADDRSTRLEN];

	assert_int_equal(sk_config_admin_sockaddr("15000", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 15000);
	assert_memory_equal(&s6->sin6_addr, &in6addr_any, sizeof(in6addr_any));

	assert_int_equal(sk_config_admin_sockaddr("0.0.0.0", 15000, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 15000);
	assert_int_equal(len, sizeof(struct sockaddr_in));

	assert_int_equal(sk_config_admin_sockaddr("[::1]:99", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	inet_ntop(AF_INET6, &s6->sin6_addr, txt, sizeof(txt));
	assert_string_equal(txt, "::1");
	assert_int_equal(ntohs(s6->sin6_port), 99);

	assert_int_equal(sk_config_admin_sockaddr(":8080", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 8080);

	assert_int_equal(sk_config_admin_sockaddr("::1", 1, &ss, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "admin address '::1': IPv6 needs brackets, e.g. [::1]:15000");
	assert_int_equal(sk_config_admin_sockaddr("localhost:1", 1, &ss, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "admin address 'localhost:1': 'localhost' is not a numeric IP address");
	assert_int_equal(sk_config_admin_sockaddr("[::1]x", 1, &ss, &len, &err), -EINVAL);
	assert_int_equal(sk_config_admin_sockaddr("1.2.3.4:", 1, &ss, &len, &err), -EINVAL);
	assert_int_equal(sk_config_admin_sockaddr("0", 1, &ss, &len, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_required_policy),
		cmocka_unit_test(test_env_then_flags_win),
		cmocka_unit_test(test_empty_env_is_unset),
		cmocka_unit_test(test_bad_values_named),
		cmocka_unit_test(test_help_version_need_no_policy),
		cmocka_unit_test(test_admin_sockaddr_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
