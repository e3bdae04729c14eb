/* sidecar/proxy/conn_flags_test.c — conn_flags_str, the debug log's names of a connection's flags: none
 * is "-", set bits in bit order comma-separated, every flag at once fits CONN_FLAGS_STR_MAX, a short
 * buffer keeps the names that fit (never a cut name), a zero-sized one is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sidecar/proxy/internal.h"

static void test_none_and_some(void **state)
{
	(void)state;
	char buf[CONN_FLAGS_STR_MAX];
	assert_string_equal(conn_flags_str(0, buf, sizeof(buf)), "-");
	assert_string_equal(conn_flags_str(CF_HAS_NAME, buf, sizeof(buf)), "has_name");
	assert_string_equal(conn_flags_str(CF_BUDGET_OVER | CF_TLS_OPEN | CF_HAS_NAME, buf, sizeof(buf)),
			    "has_name,tls_open,budget_over");
}

static void test_all_fit(void **state)
{
	(void)state;
	char buf[CONN_FLAGS_STR_MAX];
	const uint32_t all = (CF_BUDGET_OVER << 1) - 1;
	conn_flags_str(all, buf, sizeof(buf));
	assert_string_equal(buf, "has_name,rule_named,late,first_done,http_first_ok,upgrade_wait,rule_requests,"
				 "tls_open,tls_ech,resolved,budget_counted,early,early_up,c_rd,u_rd,rule_inspect,"
				 "bridged,budget_over");
	assert_true(strlen(buf) < CONN_FLAGS_STR_MAX);
}

static void test_short_buffer(void **state)
{
	(void)state;
	char none[1] = { 'x' };
	assert_ptr_equal(conn_flags_str(CF_HAS_NAME, none, 0), none);
	assert_int_equal(none[0], 'x');
	char buf[16];
	memset(buf, 'x', sizeof(buf));
	conn_flags_str(CF_HAS_NAME | CF_RULE_NAMED | CF_LATE, buf, sizeof(buf));
	/* the name that does not fit is dropped whole, not left cut ("has_name,rule_n", found by this test) */
	assert_string_equal(buf, "has_name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_and_some),
		cmocka_unit_test(test_all_fit),
		cmocka_unit_test(test_short_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
