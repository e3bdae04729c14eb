/* common/dlist_test.c — sk_dlist: push at both ends, pop at both ends, unlink from the head, the middle
 * and the tail, the LRU touch, unlink of a link in no list, and the element from a link. Every step is
 * checked against the expected order walked both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/dlist.h"

struct item {
	int v;
	struct sk_dlink link;
};

/* l holds exactly want[0..n-1] in order, consistently linked both ways. */
static void expect(const struct sk_dlist *l, const int *want, size_t n)
{
	size_t i = 0;
	const struct sk_dlink *prev = NULL;
	struct sk_dlink *k = l->head;
	for (; k && i < n; prev = k, k = k->next, i++) {
		assert_ptr_equal(k->prev, prev);
		assert_int_equal(sk_container_of(k, struct item, link)->v, want[i]);
	}
	assert_null(k);             /* no more than n */
	assert_int_equal(i, n);
	assert_ptr_equal(l->tail, prev);
	for (k = l->tail; k && i > 0; k = k->prev)
		assert_int_equal(sk_dlist_entry(k, struct item, link)->v, want[--i]);
	assert_null(k);
	assert_int_equal(sk_dlist_empty(l), n == 0);
}

static const int none[1];

static void test_push_pop(void **state)
{
	(void)state;
	struct item it[4] = { { .v = 0 }, { .v = 1 }, { .v = 2 }, { .v = 3 } };
	struct sk_dlist l = { 0 };
	expect(&l, none, 0);
	assert_null(sk_dlist_pop_back(&l));
	assert_null(sk_dlist_pop_front(&l));
	assert_null(sk_dlist_entry(l.head, struct item, link));

	sk_dlist_push_front(&l, &it[1].link);
	expect(&l, (int[]){ 1 }, 1);
	sk_dlist_push_front(&l, &it[0].link);
	sk_dlist_push_back(&l, &it[2].link);
	sk_dlist_push_back(&l, &it[3].link);
	expect(&l, (int[]){ 0, 1, 2, 3 }, 4);

	assert_ptr_equal(sk_dlist_entry(sk_dlist_pop_back(&l), struct item, link), &it[3]);
	assert_null(it[3].link.prev);
	assert_null(it[3].link.next);
	expect(&l, (int[]){ 0, 1, 2 }, 3);
	assert_ptr_equal(sk_dlist_entry(sk_dlist_pop_front(&l), struct item, link), &it[0]);
	expect(&l, (int[]){ 1, 2 }, 2);
	assert_ptr_equal(sk_dlist_pop_back(&l), &it[2].link);
	assert_ptr_equal(sk_dlist_pop_back(&l), &it[1].link);
	expect(&l, none, 0);
	assert_null(sk_dlist_pop_back(&l));
}

static void test_unlink_anywhere(void **state)
{
	(void)state;
	struct item it[5] = { { .v = 0 }, { .v = 1 }, { .v = 2 }, { .v = 3 }, { .v = 4 } };
	struct sk_dlist l = { 0 };
	for (int i = 0; i < 5; i++)
		sk_dlist_push_back(&l, &it[i].link);
	sk_dlist_unlink(&l, &it[2].link);      /* middle */
	expect(&l, (int[]){ 0, 1, 3, 4 }, 4);
	sk_dlist_unlink(&l, &it[0].link);      /* head */
	expect(&l, (int[]){ 1, 3, 4 }, 3);
	sk_dlist_unlink(&l, &it[4].link);      /* tail */
	expect(&l, (int[]){ 1, 3 }, 2);
	assert_null(it[4].link.prev);
	assert_null(it[4].link.next);
	/* already out: nothing happens, twice */
	sk_dlist_unlink(&l, &it[4].link);
	sk_dlist_unlink(&l, &it[2].link);
	expect(&l, (int[]){ 1, 3 }, 2);
	sk_dlist_unlink(&l, &it[1].link);
	sk_dlist_unlink(&l, &it[3].link);      /* the only one */
	expect(&l, none, 0);
	sk_dlist_unlink(&l, &it[3].link);
	expect(&l, none, 0);
}

static void test_move_front(void **state)
{
	(void)state;
	struct item it[3] = { { .v = 0 }, { .v = 1 }, { .v = 2 } };
	struct sk_dlist l = { 0 };
	for (int i = 0; i < 3; i++)
		sk_dlist_push_front(&l, &it[i].link);
	expect(&l, (int[]){ 2, 1, 0 }, 3);
	sk_dlist_move_front(&l, &it[0].link);  /* the least recent becomes the most recent */
	expect(&l, (int[]){ 0, 2, 1 }, 3);
	sk_dlist_move_front(&l, &it[2].link);
	expect(&l, (int[]){ 2, 0, 1 }, 3);
	sk_dlist_move_front(&l, &it[2].link);  /* already first */
	expect(&l, (int[]){ 2, 0, 1 }, 3);
	/* LRU eviction order: from the tail */
	assert_ptr_equal(sk_dlist_entry(sk_dlist_pop_back(&l), struct item, link), &it[1]);
	assert_ptr_equal(sk_dlist_entry(sk_dlist_pop_back(&l), struct item, link), &it[0]);
	assert_ptr_equal(sk_dlist_entry(sk_dlist_pop_back(&l), struct item, link), &it[2]);
	expect(&l, none, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pop),
		cmocka_unit_test(test_unlink_anywhere),
		cmocka_unit_test(test_move_front),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
