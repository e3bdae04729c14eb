/* common/settings_test.c — the table reader over a table of its own: every argv form (--f V, --f=V, --f=,
 * a bare and a valued boolean, a flag given twice, an unknown flag, a value missing at the end, stray
 * arguments, switches), the environment under the flags, each kind's values and refusals, a text kind's own
 * check, the owned copies (replaced, bounded, freed: ASan), defaults kept static, the texts --help and
 * the markdown table are made of, and a table taking positional arguments after its options (as getopt's
 * "+": the first non-option or "--" ends them; stockade-init's `-- PROGRAM`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/settings.h"

#define MAX_STRINGS 3

struct cfg {
	const char *path, *name, *other;
	uint16_t port;
	uint32_t count;
	uint64_t big;
	bool flag_b;
	bool hook;
	enum sk_log_level level;
	enum sk_log_format format;
	bool help, version;
	int rest;
	char *owned[MAX_STRINGS];
};

/* A text kind with a check of its own: lower-case letters only. */
static int check_name(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	(void)s;
	for (const char *p = value; *p; p++)
		if (*p < 'a' || *p > 'z')
			return sk_err_set(err, EINVAL, "%s: '%s': expected lower-case letters", what, value);
	return 0;
}

static const struct sk_setting_kind name_kind = { "NAME", "lower-case letters", NULL, NULL, check_name };

#define F(field) offsetof(struct cfg, field), sizeof(((struct cfg *)0)->field)
static const struct sk_setting rows[] = {
	{ "path", "STOCKADE_T_PATH", SK_SET_PATH, 0, 0, "/default", "a path", F(path), false },
	{ "name", "STOCKADE_T_NAME", &name_kind, 0, 0, NULL, "a name", F(name), false },
	{ "other", "STOCKADE_T_OTHER", SK_SET_PATH, 0, 0, NULL, "another path", F(other), false },
	{ "port", "STOCKADE_T_PORT", SK_SET_UINT, 1, 65535, "80", "a port", F(port), false },
	{ "count", "STOCKADE_T_COUNT", SK_SET_UINT, 0, 100, "7", "a count", F(count), false },
	{ "big", "STOCKADE_T_BIG", SK_SET_UINT, 0, UINT64_MAX - 1, NULL, "a big one", F(big), false },
	{ "flag-b", "STOCKADE_T_FLAG_B", SK_SET_BOOL, 0, 0, "false", "a boolean", F(flag_b), false },
	{ NULL, "STOCKADE_T_HOOK", SK_SET_BOOL, 0, 0, NULL, "a test hook", F(hook), true },
	{ "level", "STOCKADE_T_LEVEL", SK_SET_LEVEL, 0, 0, "info", "a level", F(level), false },
	{ "format", "STOCKADE_T_FORMAT", SK_SET_LOGFMT, 0, 0, "text", "a format", F(format), false },
};
#undef F

static const struct sk_settings_switch switches[] = {
	{ "--help", offsetof(struct cfg, help) },
	{ "-h", offsetof(struct cfg, help) },
	{ "--version", offsetof(struct cfg, version) },
};

static const struct sk_settings table = {
	.rows = rows, .n = sizeof(rows) / sizeof(rows[0]), .switches = switches,
	.n_switches = sizeof(switches) / sizeof(switches[0]), .owned_off = offsetof(struct cfg, owned),
	.max_strings = MAX_STRINGS, .terse_empty = false,
};

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void cfg_free(const struct sk_settings *t, struct cfg *c)
{
	sk_settings_free(t, c);
	for (size_t k = 0; k < MAX_STRINGS; k++)
		assert_null(c->owned[k]);
	memset(c, 0, sizeof(*c));
}

/* Defaults, then envp and argv; returns parse's result (err filled on error). */
static int parse_t(const struct sk_settings *t, int argc, char **argv, char **envp, struct cfg *c,
		   struct sk_err *err)
{
	memset(c, 0, sizeof(*c));
	sk_settings_defaults(t, c);
	return sk_settings_parse(t, argc, argv, envp, c, err);
}

static int parse(int argc, char **argv, char **envp, struct cfg *c, struct sk_err *err)
{
	return parse_t(&table, argc, argv, envp, c, err);
}

static void expect_error(int argc, char **argv, char **envp, int code, const char *msg)
{
	struct cfg c;
	struct sk_err err = { 0 };
	assert_int_equal(parse(argc, argv, envp, &c, &err), -code);
	assert_int_equal(err.code, code);
	assert_string_equal(err.msg, msg);
	cfg_free(&table, &c);
}

/* Positional arguments: the first non-option (or "-") ends the options, "--" too and is consumed; a flag
 * after them is the program's, not ours; a row without a variable reads no environment. */
static void test_positional(void **state)
{
	(void)state;
	static const struct sk_setting prow[] = {
		{ "path", NULL, SK_SET_PATH, 0, 0, NULL, "a path", offsetof(struct cfg, path),
		  sizeof(((struct cfg *)0)->path), false },
		{ "flag-b", NULL, SK_SET_BOOL, 0, 0, "false", "a boolean", offsetof(struct cfg, flag_b),
		  sizeof(((struct cfg *)0)->flag_b), false },
	};
	static const struct sk_settings pt = {
		.rows = prow, .n = 2, .switches = switches, .n_switches = sizeof(switches) / sizeof(switches[0]),
		.owned_off = offsetof(struct cfg, owned), .max_strings = MAX_STRINGS, .positional = true,
		.rest_off = offsetof(struct cfg, rest),
	};
	struct cfg c;
	struct sk_err err = { 0 };
	char *env[] = { "STOCKADE_T_PATH=/env", NULL };
	char *a1[] = { "prog", "--path", "/p", "--", "run", "--flag-b" };
	assert_int_equal(parse_t(&pt, ARGC(a1), a1, env, &c, &err), 0);
	assert_string_equal(c.path, "/p");
	assert_false(c.flag_b);
	assert_int_equal(c.rest, 4);
	cfg_free(&pt, &c);
	char *a2[] = { "prog", "--flag-b", "run", "--path", "/p" };
	assert_int_equal(parse_t(&pt, ARGC(a2), a2, env, &c, &err), 0);
	assert_null(c.path);
	assert_true(c.flag_b);
	assert_int_equal(c.rest, 2);
	cfg_free(&pt, &c);
	char *a3[] = { "prog", "--path=/q", "-" };
	assert_int_equal(parse_t(&pt, ARGC(a3), a3, env, &c, &err), 0);
	assert_int_equal(c.rest, 2);
	cfg_free(&pt, &c);
	char *a4[] = { "prog", "--path=/q" };
	assert_int_equal(parse_t(&pt, ARGC(a4), a4, env, &c, &err), 0);
	assert_int_equal(c.rest, 2);   /* argc: none */
	cfg_free(&pt, &c);
	char *a5[] = { "prog", "--bogus", "--", "x" };
	assert_int_equal(parse_t(&pt, ARGC(a5), a5, env, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "unknown flag '--bogus' (see --help)");
	cfg_free(&pt, &c);
}

static void test_defaults_are_static(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	char *argv[] = { "t" };
	assert_int_equal(parse(ARGC(argv), argv, NULL, &c, &err), 0);
	assert_string_equal(c.path, "/default");
	assert_ptr_equal(c.path, rows[0].def);   /* the row's text itself, not a copy */
	assert_null(c.name);
	assert_int_equal(c.port, 80);
	assert_int_equal(c.count, 7);
	assert_int_equal(c.big, 0);
	assert_false(c.flag_b);
	assert_int_equal(c.level, SK_LOG_INFO);
	assert_int_equal(c.format, SK_LOG_TEXT);
	assert_false(c.help);
	for (size_t k = 0; k < MAX_STRINGS; k++)
		assert_null(c.owned[k]);
	cfg_free(&table, &c);
}

static void test_value_forms(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	/* --f V and --f=V alike; a value may itself start with "--" or hold '=' */
	char *argv[] = { "t", "--path", "/a", "--name=abc", "--port=443", "--count", "0", "--other", "--x=y",
			 "--level=debug", "--format", "json", "--big", "18446744073709551614" };
	assert_int_equal(parse(ARGC(argv), argv, NULL, &c, &err), 0);
	assert_string_equal(c.path, "/a");
	assert_string_equal(c.name, "abc");
	assert_string_equal(c.other, "--x=y");
	assert_int_equal(c.port, 443);
	assert_int_equal(c.count, 0);
	assert_true(c.big == UINT64_MAX - 1);
	assert_int_equal(c.level, SK_LOG_DEBUG);
	assert_int_equal(c.format, SK_LOG_JSON);
	/* the text values are copies owned by the config */
	assert_ptr_not_equal(c.path, argv[2]);
	cfg_free(&table, &c);
}

static void test_empty_values(void **state)
{
	(void)state;
	char *a1[] = { "t", "--path=" };
	expect_error(ARGC(a1), a1, NULL, EINVAL, "--path: empty value (expected a path)");
	char *a2[] = { "t", "--port", "" };
	expect_error(ARGC(a2), a2, NULL, EINVAL, "--port: empty value (expected an integer in 1..65535)");
	char *a3[] = { "t", "--flag-b=" };
	expect_error(ARGC(a3), a3, NULL, EINVAL,
		     "--flag-b: empty value (expected true or false (also 1/0, yes/no, on/off))");
	char *a4[] = { "t", "--name=" };
	expect_error(ARGC(a4), a4, NULL, EINVAL, "--name: empty value (expected lower-case letters)");

	/* the terse wording leaves out what was expected */
	struct sk_settings terse = table;
	terse.terse_empty = true;
	struct cfg c;
	struct sk_err err = { 0 };
	assert_int_equal(parse_t(&terse, ARGC(a2), a2, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "--port: empty value");
	cfg_free(&terse, &c);

	/* an empty variable is unset: the default (or the earlier value) stays */
	char *env[] = { "STOCKADE_T_PATH=", "STOCKADE_T_PORT=", "STOCKADE_T_FLAG_B=", NULL };
	char *a5[] = { "t" };
	assert_int_equal(parse(ARGC(a5), a5, env, &c, &err), 0);
	assert_string_equal(c.path, "/default");
	assert_int_equal(c.port, 80);
	assert_false(c.flag_b);
	cfg_free(&table, &c);
}

static void test_repeated_flags_keep_the_last(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	/* each text setting uses one owned slot however often it is given (three slots, three settings) */
	char *argv[] = { "t", "--path=/1", "--path", "/2", "--name=a", "--name=b", "--other=/o", "--path=/3",
			 "--port=1", "--port=2", "--flag-b", "--flag-b=false" };
	assert_int_equal(parse(ARGC(argv), argv, NULL, &c, &err), 0);
	assert_string_equal(c.path, "/3");
	assert_string_equal(c.name, "b");
	assert_string_equal(c.other, "/o");
	assert_int_equal(c.port, 2);
	assert_false(c.flag_b);
	size_t used = 0;
	for (size_t k = 0; k < MAX_STRINGS; k++)
		used += c.owned[k] != NULL;
	assert_int_equal(used, 3);
	cfg_free(&table, &c);

	/* a fourth text setting has no slot */
	struct sk_settings two = table;
	two.max_strings = 2;
	char *a2[] = { "t", "--path=/1", "--name=a", "--other=/o" };
	assert_int_equal(parse_t(&two, ARGC(a2), a2, NULL, &c, &err), -ENOMEM);
	assert_string_equal(err.msg, "--other: too many string settings");
	cfg_free(&two, &c);
}

static void test_booleans(void **state)
{
	(void)state;
	static const char *const t[] = { "true", "1", "yes", "on" }, *const f[] = { "false", "0", "no", "off" };
	struct cfg c;
	struct sk_err err = { 0 };
	for (size_t i = 0; i < 4; i++) {
		char yes[32], no[32];
		(void)snprintf(yes, sizeof(yes), "--flag-b=%s", t[i]);
		(void)snprintf(no, sizeof(no), "--flag-b=%s", f[i]);
		char *a1[] = { "t", yes };
		assert_int_equal(parse(ARGC(a1), a1, NULL, &c, &err), 0);
		assert_true(c.flag_b);
		cfg_free(&table, &c);
		char *a2[] = { "t", "--flag-b", no };   /* the bare flag, then the valued one: the last wins */
		assert_int_equal(parse(ARGC(a2), a2, NULL, &c, &err), 0);
		assert_false(c.flag_b);
		cfg_free(&table, &c);
	}
	/* a bare boolean is true and does not take the next argument, even one that reads as a boolean */
	char *a3[] = { "t", "--flag-b", "false" };
	expect_error(ARGC(a3), a3, NULL, EINVAL, "unexpected argument 'false' (see --help)");
	char *a4[] = { "t", "--flag-b", "--port=9" };
	assert_int_equal(parse(ARGC(a4), a4, NULL, &c, &err), 0);
	assert_true(c.flag_b);
	assert_int_equal(c.port, 9);
	cfg_free(&table, &c);
	/* a bare boolean at the end of argv is not "missing value" */
	char *a5[] = { "t", "--flag-b" };
	assert_int_equal(parse(ARGC(a5), a5, NULL, &c, &err), 0);
	assert_true(c.flag_b);
	cfg_free(&table, &c);

	char *a6[] = { "t", "--flag-b=2" };
	expect_error(ARGC(a6), a6, NULL, EINVAL, "--flag-b: '2' is not true or false (also 1/0, yes/no, on/off)");
	char *a7[] = { "t", "--flag-b=TRUE" };
	expect_error(ARGC(a7), a7, NULL, EINVAL, "--flag-b: 'TRUE' is not true or false (also 1/0, yes/no, on/off)");
	char *e8[] = { "STOCKADE_T_FLAG_B=maybe", NULL };
	char *a8[] = { "t" };
	expect_error(ARGC(a8), a8, e8, EINVAL,
		     "STOCKADE_T_FLAG_B: 'maybe' is not true or false (also 1/0, yes/no, on/off)");
}

static void test_unknown_and_stray_arguments(void **state)
{
	(void)state;
	char *a1[] = { "t", "--frob" };
	expect_error(ARGC(a1), a1, NULL, EINVAL, "unknown flag '--frob' (see --help)");
	char *a2[] = { "t", "--frob=1" };   /* named without its value */
	expect_error(ARGC(a2), a2, NULL, EINVAL, "unknown flag '--frob' (see --help)");
	char *a3[] = { "t", "--pat", "/p" };   /* no prefix matching */
	expect_error(ARGC(a3), a3, NULL, EINVAL, "unknown flag '--pat' (see --help)");
	char *a4[] = { "t", "--paths=/p" };
	expect_error(ARGC(a4), a4, NULL, EINVAL, "unknown flag '--paths' (see --help)");
	char *a5[] = { "t", "--=x" };
	expect_error(ARGC(a5), a5, NULL, EINVAL, "unknown flag '--' (see --help)");
	/* an environment-only row has no flag */
	char *a6[] = { "t", "--hook" };
	expect_error(ARGC(a6), a6, NULL, EINVAL, "unknown flag '--hook' (see --help)");
	char *a7[] = { "t", "/p" };
	expect_error(ARGC(a7), a7, NULL, EINVAL, "unexpected argument '/p' (see --help)");
	char *a8[] = { "t", "--" };
	expect_error(ARGC(a8), a8, NULL, EINVAL, "unexpected argument '--' (see --help)");
	char *a9[] = { "t", "-p" };
	expect_error(ARGC(a9), a9, NULL, EINVAL, "unexpected argument '-p' (see --help)");
	char *a10[] = { "t", "-" };
	expect_error(ARGC(a10), a10, NULL, EINVAL, "unexpected argument '-' (see --help)");
}

static void test_missing_value_at_the_end(void **state)
{
	(void)state;
	char *a1[] = { "t", "--path" };
	expect_error(ARGC(a1), a1, NULL, EINVAL, "--path: missing value");
	char *a2[] = { "t", "--path=/p", "--port" };
	expect_error(ARGC(a2), a2, NULL, EINVAL, "--port: missing value");
	/* argc bounds argv: what lies beyond it is not read */
	char *a3[] = { "t", "--name", "abc" };
	expect_error(2, a3, NULL, EINVAL, "--name: missing value");
}

static void test_switches(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	char *a1[] = { "t", "-h", "--version" };
	assert_int_equal(parse(ARGC(a1), a1, NULL, &c, &err), 0);
	assert_true(c.help);
	assert_true(c.version);
	cfg_free(&table, &c);
	char *a2[] = { "t", "--help" };
	assert_int_equal(parse(ARGC(a2), a2, NULL, &c, &err), 0);
	assert_true(c.help);
	assert_false(c.version);
	cfg_free(&table, &c);
	/* a switch takes no value */
	char *a3[] = { "t", "--help=yes" };
	expect_error(ARGC(a3), a3, NULL, EINVAL, "unknown flag '--help' (see --help)");
	/* a bad value is still an error alongside --help: the program decides what help means */
	char *a4[] = { "t", "--help", "--port=0" };
	expect_error(ARGC(a4), a4, NULL, EINVAL, "--port: '0' is not an integer in 1..65535");
}

static void test_environment_under_flags(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	/* the variable applies without its flag; the flag wins, before or after it in the table; a variable
	 * of another name sharing the prefix is not it; the first of two equal names is read */
	char *env[] = { "STOCKADE_T_PATHS=/no", "STOCKADE_T_PATH=/env", "STOCKADE_T_PORT=8080", "STOCKADE_T_COUNT=5",
			"STOCKADE_T_NAME=env", "STOCKADE_T_HOOK=1", "STOCKADE_T_LEVEL=warn", "STOCKADE_T_COUNT=6",
			"STOCKADE_T_FLAG_B=yes", NULL };
	char *argv[] = { "t", "--port", "9090", "--name=flag" };
	assert_int_equal(parse(ARGC(argv), argv, env, &c, &err), 0);
	assert_string_equal(c.path, "/env");
	assert_int_equal(c.port, 9090);
	assert_int_equal(c.count, 5);
	assert_string_equal(c.name, "flag");
	assert_true(c.hook);
	assert_true(c.flag_b);
	assert_int_equal(c.level, SK_LOG_WARN);
	cfg_free(&table, &c);

	/* a bare boolean flag over a false variable */
	char *e2[] = { "STOCKADE_T_FLAG_B=off", NULL };
	char *a2[] = { "t", "--flag-b" };
	assert_int_equal(parse(ARGC(a2), a2, e2, &c, &err), 0);
	assert_true(c.flag_b);
	cfg_free(&table, &c);

	/* a bad variable is an error even when its flag would replace it: the environment is read first */
	char *e3[] = { "STOCKADE_T_PORT=http", NULL };
	char *a3[] = { "t", "--port=1" };
	expect_error(ARGC(a3), a3, e3, EINVAL, "STOCKADE_T_PORT: 'http' is not an integer in 1..65535");
	char *e4[] = { "STOCKADE_T_NAME=Bad", NULL };
	expect_error(1, a3, e4, EINVAL, "STOCKADE_T_NAME: 'Bad': expected lower-case letters");
}

static void test_integers(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	char *a1[] = { "t", "--port=65535", "--count=100", "--big=0" };
	assert_int_equal(parse(ARGC(a1), a1, NULL, &c, &err), 0);
	assert_int_equal(c.port, 65535);   /* a 2-byte field */
	assert_int_equal(c.count, 100);
	assert_true(c.big == 0);
	cfg_free(&table, &c);
	static const char *const junk[] = { "junk", "12x", "5s", "0x10", " 5", "5 ", "+5", "-1", "-0", "1.5", "1e3",
					    "65536", "0", "18446744073709551616", "99999999999999999999999999" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		char arg[64], msg[128];
		(void)snprintf(arg, sizeof(arg), "--port=%s", junk[i]);
		(void)snprintf(msg, sizeof(msg), "--port: '%s' is not an integer in 1..65535", junk[i]);
		char *a[] = { "t", arg };
		expect_error(ARGC(a), a, NULL, EINVAL, msg);
	}
	char *a2[] = { "t", "--count=101" };
	expect_error(ARGC(a2), a2, NULL, EINVAL, "--count: '101' is not an integer in 0..100");
	char *a3[] = { "t", "--big=18446744073709551615" };
	expect_error(ARGC(a3), a3, NULL, EINVAL, "--big: '18446744073709551615' is not an integer in "
		     "0..18446744073709551614");
}

static void test_log_kinds(void **state)
{
	(void)state;
	char *a1[] = { "t", "--level=loud" };
	expect_error(ARGC(a1), a1, NULL, EINVAL, "--level: 'loud' is not one of error, warn, info, debug");
	char *a2[] = { "t", "--format", "JSON" };
	expect_error(ARGC(a2), a2, NULL, EINVAL, "--format: 'JSON' is not one of text, json");
	char *e3[] = { "STOCKADE_T_LEVEL=3", NULL };
	expect_error(1, a1, e3, EINVAL, "STOCKADE_T_LEVEL: '3' is not one of error, warn, info, debug");
}

/* A text kind's check runs before the copy: a refused value leaves the field as it was. */
static void test_text_check(void **state)
{
	(void)state;
	struct cfg c;
	struct sk_err err = { 0 };
	char *a1[] = { "t", "--name=ok", "--name=NOT" };
	assert_int_equal(parse(ARGC(a1), a1, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "--name: 'NOT': expected lower-case letters");
	assert_string_equal(c.name, "ok");
	cfg_free(&table, &c);
}

static void test_texts(void **state)
{
	(void)state;
	char buf[128];
	assert_string_equal(sk_setting_metavar(&rows[0]), "PATH");
	assert_string_equal(sk_setting_metavar(&rows[1]), "NAME");
	assert_string_equal(sk_setting_metavar(&rows[3]), "N");
	assert_string_equal(sk_setting_metavar(&rows[6]), "BOOL");
	sk_setting_expected(&rows[3], buf, sizeof(buf));
	assert_string_equal(buf, "an integer in 1..65535");
	sk_setting_accepts(&rows[3], buf, sizeof(buf));
	assert_string_equal(buf, "1..65535");
	sk_setting_accepts(&rows[0], buf, sizeof(buf));
	assert_string_equal(buf, "a path");
	sk_setting_accepts(&rows[6], buf, sizeof(buf));
	assert_string_equal(buf, "true, false");
	sk_setting_accepts(&rows[9], buf, sizeof(buf));
	assert_string_equal(buf, "text, json");
	struct sk_err err = { 0 };
	assert_int_equal(sk_setting_refuse(&rows[8], "x", "--level", &err), -EINVAL);
	assert_string_equal(err.msg, "--level: 'x' is not one of error, warn, info, debug");

	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	assert_non_null(f);
	struct sk_settings two = table;
	two.rows = &rows[6];
	two.n = 2;
	sk_settings_md(f, &two);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(md, "| flag | environment | accepts | default | meaning |\n|---|---|---|---|---|\n"
				"| `--flag-b` | `STOCKADE_T_FLAG_B` | true, false | `false` | a boolean |\n"
				"| (test only) | `STOCKADE_T_HOOK` | true, false | unset | a test hook |\n");
	free(md);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_static),
		cmocka_unit_test(test_value_forms),
		cmocka_unit_test(test_empty_values),
		cmocka_unit_test(test_repeated_flags_keep_the_last),
		cmocka_unit_test(test_booleans),
		cmocka_unit_test(test_unknown_and_stray_arguments),
		cmocka_unit_test(test_missing_value_at_the_end),
		cmocka_unit_test(test_switches),
		cmocka_unit_test(test_environment_under_flags),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_log_kinds),
		cmocka_unit_test(test_text_check),
		cmocka_unit_test(test_texts),
		cmocka_unit_test(test_positional),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
