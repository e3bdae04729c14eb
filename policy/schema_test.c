/* policy/schema_test.c — the JSON Schema is generated from the same tables the validator checks keys
 * against: every section's emitted properties are exactly the table's keys, every mapping is closed
 * (additionalProperties false), and a key the table lacks is refused by the validator naming the table's
 * list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <regex.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "policy/schema.h"

static void assert_props_match(const cJSON *sch, const struct sk_schema_obj *o)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(sch, "properties");
	assert_non_null(props);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(sch, "additionalProperties")));
	assert_int_equal(cJSON_GetArraySize(props), (int)o->n_fields);
	for (size_t i = 0; i < o->n_fields; i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(props, o->fields[i].key);
		assert_non_null(f);
		if (o->fields[i].type == SK_SCH_OBJ)
			assert_props_match(f, o->fields[i].obj);
		if (o->fields[i].type == SK_SCH_LIST && o->fields[i].item == SK_SCH_OBJ)
			assert_props_match(cJSON_GetObjectItemCaseSensitive(f, "items"), o->fields[i].obj);
	}
}

static void test_schema_is_the_tables(void **state)
{
	(void)state;
	char *s = sk_policy_schema_json();
	assert_non_null(s);
	cJSON *j = cJSON_Parse(s);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "$schema")->valuestring,
			    "https://json-schema.org/draft/2020-12/schema");
	assert_props_match(j, &sk_schema_policy);
	/* The three mistakes of the issue are each refused by the schema's shape. */
	const cJSON *rule = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "properties"), "egress"), "items");
	const cJSON *rp = cJSON_GetObjectItemCaseSensitive(rule, "properties");
	const cJSON *port = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rp, "ports"), "items");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(port, "type")->valuestring, "integer");
	const char *hp = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rp, "host"), "pattern")->valuestring;
	/* The host pattern is plain ERE as well as ECMA-262: run it. */
	regex_t re;
	assert_int_equal(regcomp(&re, hp, REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regexec(&re, "api.example.com", 0, NULL, 0), 0);
	assert_int_equal(regexec(&re, "*.example.com", 0, NULL, 0), 0);
	assert_int_equal(regexec(&re, "example.com.", 0, NULL, 0), 0);
	assert_int_not_equal(regexec(&re, "https://x", 0, NULL, 0), 0);
	assert_int_not_equal(regexec(&re, "api.example.com:443", 0, NULL, 0), 0);
	assert_int_not_equal(regexec(&re, "a.*.example.com", 0, NULL, 0), 0);
	regfree(&re);
	assert_null(cJSON_GetObjectItemCaseSensitive(rp, "hots"));
	cJSON_Delete(j);
	free(s);
}

/* A key added to a table is accepted by the validator; an unknown one is refused with the table's list. */
static void test_validator_uses_the_tables(void **state)
{
	(void)state;
	char expected[256] = "";
	size_t o = 0;
	for (size_t i = 0; i < sk_schema_rule.n_fields; i++)
		o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s", i ? ", " : "", sk_schema_rule.fields[i].key);
	static const char doc[] = "version: 1\negress:\n  - hots: a.com\n";
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_true(sk_policy_load_buffer("t.yaml", doc, strlen(doc), -1, &p, &d) < 0);
	bool found = false;
	for (size_t i = 0; i < d.n; i++)
		found |= strstr(d.v[i].msg, expected) != NULL && strstr(d.v[i].msg, "unknown key 'hots'") != NULL;
	assert_true(found);
	sk_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_is_the_tables),
		cmocka_unit_test(test_validator_uses_the_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
