/* sidecar/core/sidecar_test.c — the server list (server.h, sidecar.c): the drain stops exactly the servers that
 * stop, waits for the sum of their in-flight work, and the teardown frees each server once, last started
 * first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/core/sidecar.h"

struct fake {
	int id;
	int stopped;
	size_t active;
	int *free_log;        /* ids in free order */
	size_t *n_freed;
};

static void fake_stop(void *s) { ((struct fake *)s)->stopped++; }
static size_t fake_active(const void *s) { return ((const struct fake *)s)->active; }
static void fake_free(void *s)
{
	struct fake *f = s;
	f->free_log[(*f->n_freed)++] = f->id;
}

static const struct sk_server_ops drains = { "drains", fake_stop, fake_active, fake_free };
static const struct sk_server_ops keeps_accepting = { "keeps", NULL, NULL, fake_free };

static void test_drain_and_teardown(void **state)
{
	(void)state;
	struct sk_sidecar sc;
	memset(&sc, 0, sizeof(sc));
	int order[16] = { 0 };
	size_t n_freed = 0;
	struct fake a = { 1, 0, 3, order, &n_freed }, b = { 2, 0, 0, order, &n_freed }, c = { 3, 0, 4, order, &n_freed };
	struct sk_err err = { 0 };
	assert_int_equal(sk_sidecar_add_server(&sc, &drains, &a, &err), 0);
	assert_int_equal(sk_sidecar_add_server(&sc, &keeps_accepting, &b, &err), 0);
	assert_int_equal(sk_sidecar_add_server(&sc, &drains, NULL, &err), 0);   /* not running: skipped */
	assert_int_equal(sk_sidecar_add_server(&sc, &drains, &c, &err), 0);
	assert_int_equal(sc.n_servers, 3);

	assert_int_equal(sk_sidecar_active(&sc), 7);
	sk_sidecar_stop_accepting(&sc);
	assert_int_equal(a.stopped, 1);
	assert_int_equal(b.stopped, 0);     /* the admin port keeps answering probes */
	assert_int_equal(c.stopped, 1);
	a.active = 0;
	assert_int_equal(sk_sidecar_active(&sc), 4);
	c.active = 0;
	assert_int_equal(sk_sidecar_active(&sc), 0);

	sk_sidecar_free_servers(&sc);
	assert_int_equal(n_freed, 3);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 1);
	assert_int_equal(sc.n_servers, 0);
	sk_sidecar_free_servers(&sc);       /* twice: nothing more */
	assert_int_equal(n_freed, 3);
}

static void test_full_list_frees_the_newcomer_and_says_so(void **state)
{
	(void)state;
	struct sk_sidecar sc;
	memset(&sc, 0, sizeof(sc));
	int order[SK_SIDECAR_SERVERS_MAX + 1] = { 0 };
	size_t n_freed = 0;
	struct fake f[SK_SIDECAR_SERVERS_MAX + 1];
	struct sk_err err = { 0 };
	for (int i = 0; i <= SK_SIDECAR_SERVERS_MAX; i++)
		f[i] = (struct fake){ i, 0, 0, order, &n_freed };
	for (int i = 0; i < SK_SIDECAR_SERVERS_MAX; i++)
		assert_int_equal(sk_sidecar_add_server(&sc, &drains, &f[i], &err), 0);
	assert_true(sk_sidecar_add_server(&sc, &drains, &f[SK_SIDECAR_SERVERS_MAX], &err) < 0);
	assert_non_null(strstr(err.msg, "drains"));
	assert_int_equal(n_freed, 1);       /* the one that could not be registered is not leaked */
	assert_int_equal(order[0], SK_SIDECAR_SERVERS_MAX);
	sk_sidecar_free_servers(&sc);
	assert_int_equal(n_freed, SK_SIDECAR_SERVERS_MAX + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_and_teardown),
		cmocka_unit_test(test_full_list_frees_the_newcomer_and_says_so),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
