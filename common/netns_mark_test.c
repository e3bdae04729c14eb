/* common/netns_mark_test.c — lo's alias as stockade-cni writes it and stockade-sidecar validate reads it:
 * the round trip, and the aliases that are not ours (another format, a short or upper-case hash, trailing
 * text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/netns_mark.h"

static void test_round_trip(void **state)
{
	(void)state;
	struct sk_marker m = { .hash = "0123456789abcdef", .rules = 28, .sets = 6, .elements = 13 }, back;
	char buf[256];
	sk_netns_mark_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "stockade hash=0123456789abcdef rules=28 sets=6 elements=13");
	assert_int_equal(sk_netns_mark_parse(buf, &back), 0);
	assert_string_equal(back.hash, m.hash);
	assert_int_equal(back.rules, 28);
	assert_int_equal(back.sets, 6);
	assert_int_equal(back.elements, 13);
}

static void test_not_ours(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "eth0 uplink", "stockade hash=0123456789abcde rules=1 sets=6 elements=0",
		"stockade hash=0123456789ABCDEF rules=1 sets=6 elements=0",
		"stockade hash=0123456789abcdef rules=1 sets=6 elements=0 extra",
		"stockade hash=0123456789abcdef rules=1 sets=6", "stockade hash=0123456789abcdef0 rules=1 sets=6 elements=0",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sk_marker m;
		assert_int_equal(sk_netns_mark_parse(bad[i], &m), -EINVAL);
		assert_string_equal(m.hash, "");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_not_ours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
