/* sidecar/inspect/lru_test.c — the bounded LRU table: hits refresh, the least recently used goes at the
 * cap, replacing and removing release the old value exactly once, many keys stay findable. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/inspect/lru.h"

static int freed;

static void count_free(void *v)
{
	freed++;
	free(v);
}

static char *val(const char *s)
{
	char *v = strdup(s);
	assert_non_null(v);
	return v;
}

static void test_least_recently_used_goes_at_the_cap(void **state)
{
	(void)state;
	struct sk_lru *t = NULL;
	struct sk_err err = { 0 };
	freed = 0;
	assert_int_equal(sk_lru_new(3, count_free, &t, &err), 0);
	assert_int_equal(sk_lru_put(t, "a", val("1")), 0);
	assert_int_equal(sk_lru_put(t, "b", val("2")), 0);
	assert_int_equal(sk_lru_put(t, "c", val("3")), 0);
	assert_string_equal(sk_lru_get(t, "a"), "1");   /* a is now the most recent: b is next to go */
	assert_int_equal(sk_lru_put(t, "d", val("4")), 0);
	assert_int_equal(sk_lru_len(t), 3);
	assert_int_equal(sk_lru_evictions(t), 1);
	assert_int_equal(freed, 1);
	assert_null(sk_lru_get(t, "b"));
	assert_string_equal(sk_lru_get(t, "a"), "1");
	assert_string_equal(sk_lru_get(t, "c"), "3");
	assert_string_equal(sk_lru_get(t, "d"), "4");
	sk_lru_free(t);
	assert_int_equal(freed, 4);
}

static void test_replace_and_delete_release_once(void **state)
{
	(void)state;
	struct sk_lru *t = NULL;
	struct sk_err err = { 0 };
	freed = 0;
	assert_int_equal(sk_lru_new(2, count_free, &t, &err), 0);
	assert_int_equal(sk_lru_put(t, "k", val("old")), 0);
	assert_int_equal(sk_lru_put(t, "k", val("new")), 0);
	assert_int_equal(freed, 1);
	assert_int_equal(sk_lru_len(t), 1);
	assert_int_equal(sk_lru_evictions(t), 0);   /* a replacement is no eviction */
	assert_string_equal(sk_lru_get(t, "k"), "new");
	sk_lru_del(t, "k");
	sk_lru_del(t, "k");
	sk_lru_del(t, "never");
	assert_int_equal(freed, 2);
	assert_int_equal(sk_lru_len(t), 0);
	assert_null(sk_lru_get(t, "k"));
	sk_lru_free(t);
	assert_int_equal(freed, 2);
}

static void test_many_keys(void **state)
{
	(void)state;
	struct sk_lru *t = NULL;
	struct sk_err err = { 0 };
	freed = 0;
	assert_int_equal(sk_lru_new(1024, count_free, &t, &err), 0);
	char key[32];
	for (int i = 0; i < 3000; i++) {
		(void)snprintf(key, sizeof(key), "host-%d.example", i);
		assert_int_equal(sk_lru_put(t, key, val(key)), 0);
	}
	assert_int_equal(sk_lru_len(t), 1024);
	assert_int_equal(sk_lru_evictions(t), 3000 - 1024);
	for (int i = 0; i < 3000; i++) {
		(void)snprintf(key, sizeof(key), "host-%d.example", i);
		const char *v = sk_lru_get(t, key);
		if (i < 3000 - 1024)
			assert_null(v);
		else
			assert_string_equal(v, key);
	}
	sk_lru_free(t);
	assert_int_equal(freed, 3000);
	assert_int_equal(sk_lru_new(0, NULL, &t, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_least_recently_used_goes_at_the_cap),
		cmocka_unit_test(test_replace_and_delete_release_once),
		cmocka_unit_test(test_many_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
