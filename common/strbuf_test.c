/* common/strbuf_test.c — appends of bytes and formatted text of every size through several growths stay
 * NUL-terminated and equal to the same text built in one piece; a failed growth (a size no allocator can
 * give) is sticky: nothing appended, later appends refused, ok/steal report it, reset recovers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

static void test_empty(void **state)
{
	(void)state;
	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_strbuf_ok(&b), 0);
	size_t len = 99;
	char *s = sk_strbuf_steal(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	assert_null(b.p);
	sk_strbuf_free(&b);   /* freeing an empty buffer is fine, twice too */
	sk_strbuf_free(&b);
}

static void test_growth_keeps_content(void **state)
{
	(void)state;
	struct sk_strbuf b = { 0 };
	char want[20000];
	size_t n = 0;
	for (int i = 0; n + 40 < sizeof(want); i++) {
		if (i % 3 == 0) {
			assert_int_equal(sk_strbuf_printf(&b, "%d:%s;", i, "x"), 0);
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%d:%s;", i, "x");
		} else if (i % 3 == 1) {
			assert_int_equal(sk_strbuf_puts(&b, "abc"), 0);
			for (const char *c = "abc"; *c; c++)
				want[n++] = *c;
		} else {
			assert_int_equal(sk_strbuf_put(&b, "\0z", 2), 0);   /* bytes, NUL included */
			want[n++] = '\0';
			want[n++] = 'z';
		}
		assert_int_equal(b.len, n);
		assert_true(b.cap > b.len);
		assert_int_equal(b.p[b.len], '\0');
		assert_memory_equal(b.p, want, n);
	}
	assert_int_equal(sk_strbuf_ok(&b), 0);
	sk_strbuf_free(&b);
}

static void test_printf_longer_than_any_stack_buffer(void **state)
{
	(void)state;
	struct sk_strbuf b = { 0 };
	char *big = malloc(100001);
	assert_non_null(big);
	memset(big, 'q', 100000);
	big[100000] = 0;
	assert_int_equal(sk_strbuf_puts(&b, "<"), 0);
	assert_int_equal(sk_strbuf_printf(&b, "%s>%d", big, 7), 0);
	assert_int_equal(b.len, 100003);
	assert_memory_equal(b.p + 1, big, 100000);
	assert_string_equal(b.p + 100001, ">7");
	free(big);
	size_t len = 0;
	char *s = sk_strbuf_steal(&b, &len);
	assert_non_null(s);
	assert_int_equal(len, 100003);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(s);
}

static void test_failed_growth_is_sticky(void **state)
{
	(void)state;
	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_strbuf_puts(&b, "kept"), 0);
	/* no allocator gives this much: the growth fails before a byte is read from the source */
	assert_int_equal(sk_strbuf_put(&b, "", SIZE_MAX - 8), -ENOMEM);
	assert_true(b.oom);
	assert_string_equal(b.p, "kept");
	assert_int_equal(b.len, 4);
	assert_int_equal(sk_strbuf_puts(&b, "x"), -ENOMEM);
	assert_int_equal(sk_strbuf_printf(&b, "%d", 1), -ENOMEM);
	assert_string_equal(b.p, "kept");
	assert_int_equal(sk_strbuf_ok(&b), -ENOMEM);
	sk_strbuf_reset(&b);
	assert_int_equal(sk_strbuf_ok(&b), 0);
	assert_int_equal(sk_strbuf_puts(&b, "again"), 0);
	assert_string_equal(b.p, "again");
	assert_int_equal(sk_strbuf_put(&b, "", SIZE_MAX / 2), -ENOMEM);
	size_t len = 5;
	assert_null(sk_strbuf_steal(&b, &len));
	assert_null(b.p);   /* steal freed it */
	assert_false(b.oom);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_growth_keeps_content),
		cmocka_unit_test(test_printf_longer_than_any_stack_buffer),
		cmocka_unit_test(test_failed_growth_is_sticky),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
