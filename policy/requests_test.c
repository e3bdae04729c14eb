/* policy/requests_test.c — request rules: the model the loader builds (YAML and JSON alike), the decision
 * (first match wins, methods case-sensitive, access shorthands), and every validation message with its
 * position. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "policy/requests.h"

static struct sk_policy *load(const char *text)
{
	struct sk_policy *p = NULL;
	struct sk_diags d = { 0 };
	int rc = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &p, &d);
	if (rc != 0) {
		for (size_t i = 0; i < d.n; i++)
			(void)fprintf(stderr, "%u:%u: %s\n", d.v[i].line, d.v[i].col, d.v[i].msg);
		fail_msg("load failed");
	}
	sk_diags_free(&d);
	return p;
}

/* Loads text expecting failure; asserts some diagnostic at line:col contains want. */
static void expect_error(const char *text, unsigned line, unsigned col, const char *want)
{
	struct sk_policy *p = NULL;
	struct sk_diags d = { 0 };
	int rc = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &p, &d);
	assert_int_not_equal(rc, 0);
	assert_null(p);
	bool found = false;
	for (size_t i = 0; i < d.n; i++)
		found |= d.v[i].line == line && d.v[i].col == col && strstr(d.v[i].msg, want) != NULL;
	if (!found) {
		for (size_t i = 0; i < d.n; i++)
			(void)fprintf(stderr, "%u:%u: %s\n", d.v[i].line, d.v[i].col, d.v[i].msg);
		sk_diags_free(&d);
		fail_msg("no diagnostic at %u:%u containing \"%s\"", line, col, want);
	}
	sk_diags_free(&d);
}

static const char github[] =
	"version: 1\n"
	"egress:\n"
	"  - host: api.github.com\n"
	"    ports: [443]\n"
	"    inspect: true\n"
	"    requests:\n"
	"      - { methods: [GET, HEAD], paths: [\"/repos/acme/**\", \"/user\"] }\n"
	"      - { methods: [POST], paths: [\"/repos/acme/*/pulls\"] }\n"
	"  - host: pypi.org\n"
	"    inspect: true\n"
	"    access: read-only\n"
	"  - host: plain.example\n"
	"    ports: [80]\n"
	"    access: read-write\n"
	"  - host: other.example\n";

static bool allows(const struct sk_requests *rq, const char *m, const char *path, int *idx)
{
	struct sk_req_decision d;
	sk_requests_decide(rq, m, path, &d);
	if (idx)
		*idx = d.index;
	return d.allow;
}

static void test_model_and_decisions(void **state)
{
	(void)state;
	struct sk_policy *p = load(github);
	assert_int_equal(p->n_rules, 4);
	const struct sk_rule *gh = &p->rules[0];
	assert_true(gh->inspect);
	assert_non_null(gh->requests);
	assert_int_equal(gh->requests->n, 2);
	assert_int_equal(gh->requests->access, SK_ACCESS_NONE);
	assert_int_equal(gh->requests->v[0].pos.line, 7);
	int idx = -2;
	assert_true(allows(gh->requests, "GET", "/repos/acme/app/issues", &idx));
	assert_int_equal(idx, 0);
	assert_true(allows(gh->requests, "HEAD", "/user", &idx));
	assert_true(allows(gh->requests, "POST", "/repos/acme/app/pulls", &idx));
	assert_int_equal(idx, 1);
	assert_false(allows(gh->requests, "POST", "/repos/acme/app/issues", &idx));
	assert_int_equal(idx, -1);
	assert_false(allows(gh->requests, "DELETE", "/repos/acme/app", NULL));
	assert_false(allows(gh->requests, "GET", "/repos/other/app", NULL));
	assert_false(allows(gh->requests, "get", "/user", NULL));      /* methods are case-sensitive */
	assert_false(allows(gh->requests, "PROPFIND", "/user", NULL)); /* no rule can name it */

	const struct sk_rule *pypi = &p->rules[1];
	assert_int_equal(pypi->requests->access, SK_ACCESS_READ_ONLY);
	assert_true(allows(pypi->requests, "GET", "/simple/requests/", NULL));
	assert_true(allows(pypi->requests, "HEAD", "/", NULL));
	assert_true(allows(pypi->requests, "OPTIONS", "/x", NULL));
	assert_false(allows(pypi->requests, "POST", "/legacy/", NULL));
	assert_false(allows(pypi->requests, "PUT", "/x", NULL));

	const struct sk_rule *rw = &p->rules[2];
	assert_false(rw->inspect);
	assert_int_equal(rw->requests->access, SK_ACCESS_READ_WRITE);
	assert_true(allows(rw->requests, "DELETE", "/a/b", NULL));
	assert_true(allows(rw->requests, "TRACE", "/", NULL));

	/* A rule without request keys keeps today's model. */
	assert_false(p->rules[3].inspect);
	assert_null(p->rules[3].requests);

	char buf[256];
	assert_string_equal(sk_req_rule_format(gh->requests, 0, buf, sizeof(buf)), "GET,HEAD /repos/acme/** /user");
	assert_string_equal(sk_req_rule_format(pypi->requests, 0, buf, sizeof(buf)), "access read-only");
	assert_string_equal(sk_rule_format(gh, buf, sizeof(buf)), "host api.github.com ports [443] inspect requests 2");
	assert_string_equal(sk_rule_format(&p->rules[3], buf, sizeof(buf)), "host other.example ports any");
	sk_policy_free(p);
}

static void test_json_same_model(void **state)
{
	(void)state;
	struct sk_policy *p = load("{\"version\":1,\"egress\":[{\"host\":\"a.example\",\"protocol\":\"http\","
				   "\"requests\":[{\"methods\":[\"GET\"],\"paths\":[\"/x/*\"]}]}]}");
	assert_non_null(p->rules[0].requests);
	assert_true(allows(p->rules[0].requests, "GET", "/x/y", NULL));
	assert_false(allows(p->rules[0].requests, "GET", "/x/y/z", NULL));
	sk_policy_free(p);
}

static void test_plain_http_without_inspect(void **state)
{
	(void)state;
	/* Port 80 only, or protocol http: no TLS to terminate, so no inspect needed. */
	struct sk_policy *p = load("version: 1\n"
				   "egress:\n"
				   "  - host: a.example\n"
				   "    ports: [80, 8080]\n"
				   "    access: read-only\n"
				   "  - host: b.example\n"
				   "    protocol: http\n"
				   "    access: read-only\n");
	assert_non_null(p->rules[0].requests);
	assert_non_null(p->rules[1].requests);
	sk_policy_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	const char *head = "version: 1\negress:\n  - host: a.example\n    protocol: http\n";
	char t[1024];
#define T(body, line, col, want) \
	do { \
		(void)snprintf(t, sizeof(t), "%s%s", head, body); \
		expect_error(t, line, col, want); \
	} while (0)
	T("    requests:\n      - { methods: [get], paths: [\"/\"] }\n", 6, 21, "'get' is not a method (methods are case-sensitive), expected GET");
	T("    requests:\n      - { methods: [FOO], paths: [\"/\"] }\n", 6, 21, "'FOO' is not a method a request rule can name");
	T("    requests:\n      - { methods: [CONNECT], paths: [\"/\"] }\n", 6, 21, "CONNECT cannot be allowed");
	T("    requests:\n      - { methods: [GET], paths: [\"repos\"] }\n", 6, 35, "a path glob starts with '/'");
	T("    requests:\n      - { methods: [GET], paths: [\"/a**\"] }\n", 6, 35, "'**' must be a whole segment");
	T("    requests:\n      - { methods: [GET], paths: [\"/a/../b\"] }\n", 6, 35, "expected '/b'");
	T("    requests:\n      - { methods: [GET], paths: [\"/a%2Fb\"] }\n", 6, 35, "an encoded '/' (%2F)");
	T("    requests:\n      - { methods: [GET], paths: [\"/a//b\"] }\n", 6, 35, "empty segment");
	T("    requests:\n      - { methods: [], paths: [\"/\"] }\n", 6, 20, "expected a non-empty list of HTTP methods");
	T("    requests:\n      - { methods: [GET], paths: [] }\n", 6, 34, "expected a non-empty list of path globs");
	T("    requests: []\n", 5, 15, "expected a non-empty list of {methods, paths}, got an empty list");
	T("    requests:\n      - { methods: [GET] }\n", 6, 9, "missing key 'paths'");
	T("    requests:\n      - { paths: [\"/\"] }\n", 6, 9, "missing key 'methods'");
	T("    requests:\n      - { methods: [GET], paths: [\"/\"], host: x }\n", 6, 41, "unknown key 'host'");
	T("    requests:\n      - GET /x\n", 6, 9, "expected a mapping {methods: [...], paths: [...]}");
	T("    access: read-only\n    requests:\n      - { methods: [GET], paths: [\"/\"] }\n", 5, 13,
	  "has both access and requests");
	T("    access: write\n", 5, 13, "'write' is not an access, expected read-only or read-write");
	T("    inspect: 1\n", 5, 14, "expected true or false");
#undef T
	/* TLS without inspect. */
	expect_error("version: 1\negress:\n  - host: a.example\n    access: read-only\n", 4, 13,
		     "the rule allows TLS (any port), whose requests the sidecar can only see by terminating it; "
		     "expected inspect: true, or protocol: http");
	expect_error("version: 1\negress:\n  - host: a.example\n    ports: [80, 443]\n    access: read-only\n", 5, 13,
		     "the rule allows TLS (port 443)");
	expect_error("version: 1\negress:\n  - host: a.example\n    protocol: tls\n    requests:\n"
		     "      - { methods: [GET], paths: [\"/\"] }\n", 6, 7, "the rule allows TLS (protocol tls)");
	/* Rules whose requests are never read. */
	expect_error("version: 1\negress:\n  - host: a.example\n    protocol: tcp\n    access: read-only\n", 5, 13,
		     "a tcp rule is relayed as bytes");
	expect_error("version: 1\negress:\n  - cidr: 10.1.0.0/16\n    direct: true\n    access: read-only\n", 5, 13,
		     "a direct rule is relayed as bytes");
	expect_error("version: 1\negress:\n  - cidr: 10.1.0.0/16\n    inspect: true\n    protocol: http\n", 4, 14,
		     "needs a host rule");
	expect_error("version: 1\negress:\n  - host: a.example\n    inspect: true\n    protocol: tcp\n", 4, 14,
		     "a tcp rule carries no HTTP to inspect");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_and_decisions),
		cmocka_unit_test(test_json_same_model),
		cmocka_unit_test(test_plain_http_without_inspect),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
