/* common/json_str_test.c — the escaper's output is valid JSON and ASCII for any bytes (cJSON reads it
 * back), and the cut/length contract of sk_json_str. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/json_str.h"

static void test_escapes(void **state)
{
	(void)state;
	char buf[128];
	assert_int_equal(sk_json_str(buf, sizeof(buf), "a\"b\\c\n"), 15);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\u000a\"");
	/* UTF-8 "é", a lone continuation byte, DEL and 0xff: each byte escaped, none passed raw. */
	sk_json_str(buf, sizeof(buf), "\xc3\xa9\x80\x7f\xff");
	assert_string_equal(buf, "\"\\u00c3\\u00a9\\u0080\\u007f\\u00ff\"");
}

/* Every byte value 1..255 in one string: the output is ASCII, cJSON parses it, and each byte comes back
 * as the code point of the same value. */
static void test_every_byte_is_valid_json(void **state)
{
	(void)state;
	char in[256], out[SK_JSON_STR_SIZE(255)];
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = 0;
	size_t n = sk_json_str(out, sizeof(out), in);
	assert_true(n < sizeof(out));
	for (size_t i = 0; i < n; i++)
		assert_true((unsigned char)out[i] >= 0x20 && (unsigned char)out[i] < 0x7f);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	assert_true(cJSON_IsString(j));
	const unsigned char *s = (const unsigned char *)j->valuestring;
	/* cJSON decodes \u00XX to the UTF-8 of U+00XX: one byte below 0x80, two from 0x80 on. */
	for (int i = 1; i < 256; i++) {
		if (i < 0x80) {
			assert_int_equal(*s++, i);
		} else {
			assert_int_equal(s[0], 0xc0 | (i >> 6));
			assert_int_equal(s[1], 0x80 | (i & 0x3f));
			s += 2;
		}
	}
	assert_int_equal(*s, 0);
	cJSON_Delete(j);
}

static void test_cut(void **state)
{
	(void)state;
	char buf[5];
	assert_int_equal(sk_json_str(buf, sizeof(buf), "abcdef"), 8);
	assert_string_equal(buf, "\"abc");
	assert_int_equal(sk_json_str(NULL, 0, "ab"), 4);
}

static void test_fputs_matches(void **state)
{
	(void)state;
	char *mem = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&mem, &len);
	assert_non_null(f);
	assert_int_equal(sk_json_fputs(f, "p\xe9/\"x\"\t"), 0);
	assert_int_equal(fclose(f), 0);   /* flushes the stream into mem */
	char buf[64];
	sk_json_str(buf, sizeof(buf), "p\xe9/\"x\"\t");
	assert_string_equal(mem, buf);
	free(mem);
}

/* The strbuf form writes what the buffer form writes, for every byte, appended after what was there. */
static void test_strbuf_matches(void **state)
{
	(void)state;
	char in[256], want[SK_JSON_STR_SIZE(255)];
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = 0;
	size_t n = sk_json_str(want, sizeof(want), in);
	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_strbuf_puts(&b, "x:"), 0);
	assert_int_equal(sk_json_str_buf(&b, in), 0);
	assert_int_equal(b.len, n + 2);
	assert_memory_equal(b.p, "x:", 2);
	assert_memory_equal(b.p + 2, want, n + 1);
	assert_int_equal(sk_json_str_buf(&b, ""), 0);
	assert_string_equal(b.p + b.len - 2, "\"\"");
	sk_strbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_every_byte_is_valid_json),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_fputs_matches),
		cmocka_unit_test(test_strbuf_matches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
