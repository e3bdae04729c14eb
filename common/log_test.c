/* common/log_test.c — sk_log: the level filter, the "<prog>: " prefix and newline, the cut of an over-long
 * line, level names. stderr is redirected to a temporary file for the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"

#include <cjson/cJSON.h>

/* Runs fn with stderr going to a temporary file; returns what was written (malloc'd). */
static char *captured(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	fn();
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	off_t n = lseek(fileno(tmp), 0, SEEK_END);
	assert_true(n >= 0);
	char *buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fileno(tmp), buf, (size_t)n, 0), n);
	(void)fclose(tmp);
	return buf;
}

static void log_each_level(void)
{
	sk_log(SK_LOG_ERROR, "e %d", 1);
	sk_log(SK_LOG_WARN, "w");
	sk_log(SK_LOG_INFO, "i");
	sk_log(SK_LOG_DEBUG, "d");
}

static void test_level_filters(void **state)
{
	(void)state;
	sk_log_init("prog", SK_LOG_WARN);
	char *out = captured(log_each_level);
	assert_string_equal(out, "prog: e 1\nprog: w\n");
	free(out);
	sk_log_init("prog", SK_LOG_DEBUG);
	out = captured(log_each_level);
	assert_string_equal(out, "prog: e 1\nprog: w\nprog: i\nprog: d\n");
	free(out);
	sk_log_init("prog", SK_LOG_ERROR);
	out = captured(log_each_level);
	assert_string_equal(out, "prog: e 1\n");
	free(out);
	assert_true(sk_log_enabled(SK_LOG_ERROR));
	assert_false(sk_log_enabled(SK_LOG_WARN));
	sk_log_init("prog", SK_LOG_INFO);
}

static void log_long(void)
{
	char big[10000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sk_log(SK_LOG_ERROR, "%s", big);
}

static void test_long_line_cut_keeps_newline(void **state)
{
	(void)state;
	sk_log_init("p", SK_LOG_INFO);
	char *out = captured(log_long);
	size_t n = strlen(out);
	assert_true(n > 4000 && n <= 4096);
	assert_int_equal(out[n - 1], '\n');
	assert_int_equal(strncmp(out, "p: xxx", 6), 0);
	assert_ptr_equal(strchr(out, '\n'), out + n - 1);   /* one line */
	free(out);
}

static void test_level_names(void **state)
{
	(void)state;
	static const char *const names[] = { "error", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++) {
		enum sk_log_level l;
		assert_true(sk_log_level_parse(names[i], &l));
		assert_int_equal(l, i);
		assert_string_equal(sk_log_level_name(l), names[i]);
	}
	enum sk_log_level l = SK_LOG_INFO;
	assert_false(sk_log_level_parse("INFO", &l));
	assert_false(sk_log_level_parse("", &l));
	assert_false(sk_log_level_parse("3", &l));
	assert_int_equal(l, SK_LOG_INFO);
	assert_string_equal(sk_log_level_name((enum sk_log_level)7), "?");
}

static void log_json_lines(void)
{
	sk_log(SK_LOG_WARN, "policy %s: %d errors", "/etc/a\"b\\c\n\xff.yaml", 2);
	sk_log(SK_LOG_DEBUG, "filtered out");
	sk_log(SK_LOG_ERROR, "plain");
}

/* JSON lines: one object a line, the level's name, the program, the message escaped so that a quote,
 * a backslash, a newline or a byte that is not UTF-8 can neither break the line nor the JSON. */
static void test_json_format(void **state)
{
	(void)state;
	sk_log_init("stockade-sidecar", SK_LOG_INFO);
	sk_log_set_format(SK_LOG_JSON);
	assert_int_equal(sk_log_get_format(), SK_LOG_JSON);
	char *out = captured(log_json_lines);
	sk_log_set_format(SK_LOG_TEXT);
	char *nl = strchr(out, '\n');
	assert_non_null(nl);
	*nl = '\0';
	for (const char *p = out; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "warn");
	assert_string_equal(cJSON_GetObjectItem(j, "prog")->valuestring, "stockade-sidecar");
	assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, "policy /etc/a\"b\\c\n\xc3\xbf.yaml: 2 errors");
	const char *ts = cJSON_GetObjectItem(j, "ts")->valuestring;
	assert_int_equal(strlen(ts), 24);
	assert_int_equal(ts[10], 'T');
	assert_int_equal(ts[23], 'Z');
	assert_int_equal(cJSON_GetArraySize(j), 4);
	cJSON_Delete(j);
	char *second = nl + 1;
	nl = strchr(second, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, "");   /* two lines: the debug one was filtered */
	*nl = '\0';
	j = cJSON_Parse(second);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "error");
	assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, "plain");
	cJSON_Delete(j);
	free(out);
}

/* A message that fills the buffer with bytes that each need an escape is cut, still valid JSON. */
static void log_long_escaped(void)
{
	char big[6000];
	memset(big, '\x01', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sk_log(SK_LOG_ERROR, "%s", big);
}

static void test_json_long_line_cut_valid(void **state)
{
	(void)state;
	sk_log_init("p", SK_LOG_INFO);
	sk_log_set_format(SK_LOG_JSON);
	char *out = captured(log_long_escaped);
	sk_log_set_format(SK_LOG_TEXT);
	size_t n = strlen(out);
	assert_true(n > 4000 && n <= 8192);
	assert_ptr_equal(strchr(out, '\n'), out + n - 1);
	out[n - 1] = '\0';
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	assert_true(strlen(cJSON_GetObjectItem(j, "msg")->valuestring) > 1000);
	cJSON_Delete(j);
	free(out);
}

static void test_format_names(void **state)
{
	(void)state;
	enum sk_log_format f = SK_LOG_TEXT;
	assert_true(sk_log_format_parse("json", &f));
	assert_int_equal(f, SK_LOG_JSON);
	assert_true(sk_log_format_parse("text", &f));
	assert_int_equal(f, SK_LOG_TEXT);
	assert_false(sk_log_format_parse("JSON", &f));
	assert_false(sk_log_format_parse("", &f));
	assert_int_equal(f, SK_LOG_TEXT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_filters),
		cmocka_unit_test(test_long_line_cut_keeps_newline),
		cmocka_unit_test(test_level_names),
		cmocka_unit_test(test_json_format),
		cmocka_unit_test(test_json_long_line_cut_valid),
		cmocka_unit_test(test_format_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
