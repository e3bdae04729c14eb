/* sidecar/core/denials_test.c — the denial ring: order, eviction, limits, over-long entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/core/denials.h"

static char *render(struct sk_denials *d, size_t limit)
{
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(sk_denials_render(d, limit, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	return out;
}

static void push_n(struct sk_denials *d, int from, int to)
{
	for (int i = from; i <= to; i++) {
		char obj[64];
		int n = snprintf(obj, sizeof(obj), "{\"n\":%d}", i);
		sk_denials_push(d, obj, (size_t)n);
	}
}

static void test_empty_renders_empty_array(void **state)
{
	(void)state;
	struct sk_denials *d = NULL;
	assert_int_equal(sk_denials_new(4, &d, NULL), 0);
	char *s = render(d, 256);
	assert_string_equal(s, "[]\n");
	free(s);
	sk_denials_free(d);
}

static void test_newest_last_and_oldest_evicted(void **state)
{
	(void)state;
	struct sk_denials *d = NULL;
	assert_int_equal(sk_denials_new(3, &d, NULL), 0);
	push_n(d, 1, 2);
	char *s = render(d, 10);
	assert_string_equal(s, "[{\"n\":1},{\"n\":2}]\n");
	free(s);
	push_n(d, 3, 5);  /* wraps: 1 and 2 are dropped */
	s = render(d, 10);
	assert_string_equal(s, "[{\"n\":3},{\"n\":4},{\"n\":5}]\n");
	free(s);
	sk_denials_free(d);
}

static void test_limit_takes_newest(void **state)
{
	(void)state;
	struct sk_denials *d = NULL;
	assert_int_equal(sk_denials_new(0, &d, NULL), 0);  /* 0 = default 256 */
	push_n(d, 1, 300);
	char *s = render(d, 2);
	assert_string_equal(s, "[{\"n\":299},{\"n\":300}]\n");
	free(s);
	s = render(d, 1000);
	assert_non_null(strstr(s, "[{\"n\":45},"));  /* 300 - 256 + 1 */
	assert_null(strstr(s, "{\"n\":44}"));
	free(s);
	s = render(d, 0);
	assert_string_equal(s, "[]\n");
	free(s);
	sk_denials_free(d);
}

static void test_overlong_entry_replaced_by_marker(void **state)
{
	(void)state;
	struct sk_denials *d = NULL;
	assert_int_equal(sk_denials_new(2, &d, NULL), 0);
	size_t big = 5000;
	char *obj = malloc(big);
	assert_non_null(obj);
	memset(obj, 'x', big);
	sk_denials_push(d, obj, big);
	free(obj);
	char *s = render(d, 5);
	assert_string_equal(s, "[{\"event\":\"deny\",\"truncated\":true}]\n");
	free(s);
	sk_denials_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_renders_empty_array),
		cmocka_unit_test(test_newest_last_and_oldest_evicted),
		cmocka_unit_test(test_limit_takes_newest),
		cmocka_unit_test(test_overlong_entry_replaced_by_marker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
