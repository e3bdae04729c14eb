/* injector/jsonpatch_test.c — the diff, applied, gives the target; pointers escape ~ and /; arrays of
 * another length are replaced whole; integers print exactly; the applier refuses what is not a patch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "injector/jsonpatch.h"

static void round_trip(const char *a_text, const char *b_text, const char *want_patch)
{
	cJSON *a = cJSON_Parse(a_text), *b = cJSON_Parse(b_text);
	assert_non_null(a);
	assert_non_null(b);
	cJSON *p = sk_jsonpatch_diff(a, b);
	assert_non_null(p);
	char *text = sk_jsonpatch_print(p);
	if (want_patch)
		assert_string_equal(text, want_patch);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&a, p, &err), 0);
	assert_true(cJSON_Compare(a, b, 1));
	free(text);
	cJSON_Delete(p);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_diff_applies_to_the_target(void **state)
{
	(void)state;
	round_trip("{\"a\":1}", "{\"a\":1}", "[]");
	round_trip("{\"a\":1,\"b\":2}", "{\"b\":3,\"c\":[1]}",
		   "[{\"op\":\"remove\",\"path\":\"/a\"},{\"op\":\"replace\",\"path\":\"/b\",\"value\":3},"
		   "{\"op\":\"add\",\"path\":\"/c\",\"value\":[1]}]");
	round_trip("{\"l\":[{\"x\":1},{\"y\":true}]}", "{\"l\":[{\"x\":2},{\"y\":false}]}",
		   "[{\"op\":\"replace\",\"path\":\"/l/0/x\",\"value\":2},{\"op\":\"replace\",\"path\":\"/l/1/y\",\"value\":false}]");
	round_trip("{\"l\":[1,2]}", "{\"l\":[0,1,2]}", "[{\"op\":\"replace\",\"path\":\"/l\",\"value\":[0,1,2]}]");
	round_trip("{\"m\":{}}", "{\"m\":{\"stockade.io/wrapped\":\"true\",\"a~b\":null}}",
		   "[{\"op\":\"add\",\"path\":\"/m/stockade.io~1wrapped\",\"value\":\"true\"},"
		   "{\"op\":\"add\",\"path\":\"/m/a~0b\",\"value\":null}]");
	round_trip("{\"x\":\"s\"}", "{\"x\":{\"y\":1}}", "[{\"op\":\"replace\",\"path\":\"/x\",\"value\":{\"y\":1}}]");
	round_trip("[1]", "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"a\":1}}]");
}

static void test_integers_print_exactly(void **state)
{
	(void)state;
	round_trip("{}", "{\"big\":4000000000000000,\"neg\":-3000000000,\"f\":0.5,\"l\":[9007199254740991]}",
		   "[{\"op\":\"add\",\"path\":\"/big\",\"value\":4000000000000000},"
		   "{\"op\":\"add\",\"path\":\"/neg\",\"value\":-3000000000},{\"op\":\"add\",\"path\":\"/f\",\"value\":0.5},"
		   "{\"op\":\"add\",\"path\":\"/l\",\"value\":[9007199254740991]}]");
}

static void expect_apply_error(const char *doc, const char *patch, const char *msg_part)
{
	cJSON *d = cJSON_Parse(doc), *p = cJSON_Parse(patch);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&d, p, &err), -EINVAL);
	if (!strstr(err.msg, msg_part))
		fail_msg("'%s' lacks '%s'", err.msg, msg_part);
	cJSON_Delete(d);
	cJSON_Delete(p);
}

static void test_apply_refuses_what_is_not_a_patch(void **state)
{
	(void)state;
	expect_apply_error("{}", "{}", "expected an array");
	expect_apply_error("{}", "[{\"op\":\"move\",\"path\":\"/a\"}]", "patch[0]: op 'move'");
	expect_apply_error("{}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", "does not exist");
	expect_apply_error("{\"l\":[1]}", "[{\"op\":\"replace\",\"path\":\"/l/01\",\"value\":1}]", "no such index");
	expect_apply_error("{\"l\":[1]}", "[{\"op\":\"replace\",\"path\":\"/l/-\",\"value\":1}]", "no such index");
	expect_apply_error("{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", "not a JSON Pointer");
	expect_apply_error("{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", "not a JSON Pointer");
	cJSON *d = cJSON_Parse("{\"l\":[1]}"), *p = cJSON_Parse("[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":2},"
								   "{\"op\":\"add\",\"path\":\"/l/0\",\"value\":0}]");
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&d, p, &err), 0);
	char *t = cJSON_PrintUnformatted(d);
	assert_string_equal(t, "{\"l\":[0,1,2]}");
	free(t);
	cJSON_Delete(d);
	cJSON_Delete(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_applies_to_the_target),
		cmocka_unit_test(test_integers_print_exactly),
		cmocka_unit_test(test_apply_refuses_what_is_not_a_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
