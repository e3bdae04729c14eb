/* sidecar/proxy/requests_gate_test.c — one request head against a rule with request rules: allowed, denied
 * with the 403's JSON body and header, a refused path, and which connections such a rule cannot admit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/proxy/http_head.h"
#include "sidecar/proxy/requests_gate.h"

static const char policy_text[] =
	"version: 1\n"
	"egress:\n"
	"  - host: api.example.com\n"
	"    protocol: http\n"
	"    name: gh\n"
	"    requests:\n"
	"      - { methods: [GET, HEAD], paths: [\"/repos/acme/**\", \"/user\"] }\n"
	"      - { methods: [POST], paths: [\"/repos/acme/*/pulls\"] }\n"
	"  - host: plain.example.com\n"
	"  - host: inspected.example.com\n"
	"    inspect: true\n"
	"    access: read-only\n"
	"  - host: fronted.example.com\n"
	"    protocol: tls\n"
	"    inspect: true\n";

static struct sk_policy *pol;

static int setup(void **state)
{
	(void)state;
	struct sk_diags d = { 0 };
	int rc = sk_policy_load_buffer_ex("t.yaml", policy_text, sizeof(policy_text) - 1, -1, SK_LOAD_NO_FILE_CHECKS,
					  &pol, &d);
	sk_diags_free(&d);
	return rc;
}

static int teardown(void **state)
{
	(void)state;
	sk_policy_free(pol);
	return 0;
}

/* Judges a request line (Host api.example.com added) against rule 0. */
static const char *judge(const char *line, struct sk_req_denial **out)
{
	char head[2048];
	int n = snprintf(head, sizeof(head), "%s\r\nHost: api.example.com\r\n\r\n", line);
	assert_true(n > 0 && (size_t)n < sizeof(head));
	struct sk_http_head h;
	assert_int_equal(sk_http_head_parse((const uint8_t *)head, (size_t)n, &h), SK_HTTP_OK);
	return sk_req_gate_judge(&pol->rules[0], "gh", (const uint8_t *)head, (size_t)n, &h, out);
}

static void test_allowed_requests_pass(void **state)
{
	(void)state;
	static const char *const ok[] = {
		"GET /repos/acme/app HTTP/1.1",      "HEAD /user HTTP/1.1",
		"GET /user?token=x HTTP/1.1",        "POST /repos/acme/app/pulls HTTP/1.1",
		"GET /repos/acme/app/../other HTTP/1.1", "GET http://api.example.com/user HTTP/1.1",
		"GET /%75ser HTTP/1.1",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct sk_req_denial *d = (void *)1;
		if (judge(ok[i], &d) != NULL)
			fail_msg("%s: denied", ok[i]);
		assert_null(d);
	}
}

static void test_denied_request_answer(void **state)
{
	(void)state;
	struct sk_req_denial *d = NULL;
	const char *why = judge("POST /repos/acme/app/issues?x=\"1 HTTP/1.1", &d);
	assert_string_equal(why, "request_denied");
	assert_non_null(d);
	assert_string_equal(d->method, "POST");
	assert_string_equal(d->path, "/repos/acme/app/issues");
	assert_string_equal(d->detail, "no_request_rule");
	assert_non_null(d->answer);
	assert_int_equal(d->answer_len, strlen(d->answer));
	assert_true(strncmp(d->answer, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(d->answer, "\r\nx-stockade-reason: no_request_rule\r\n"));
	assert_non_null(strstr(d->answer, "\r\nContent-Type: application/json\r\n"));
	const char *body = strstr(d->answer, "\r\n\r\n");
	assert_non_null(body);
	body += 4;
	char cl[64];
	(void)snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(body));
	assert_non_null(strstr(d->answer, cl));
	cJSON *j = cJSON_Parse(body);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "error")->valuestring, "stockade_denied");
	assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "no_request_rule");
	assert_string_equal(cJSON_GetObjectItem(j, "rule")->valuestring, "gh");
	assert_string_equal(cJSON_GetObjectItem(j, "method")->valuestring, "POST");
	assert_string_equal(cJSON_GetObjectItem(j, "host")->valuestring, "api.example.com");
	assert_string_equal(cJSON_GetObjectItem(j, "path")->valuestring, "/repos/acme/app/issues");
	cJSON_Delete(j);
	sk_req_denial_free(d);
}

static void test_refused_paths(void **state)
{
	(void)state;
	static const struct {
		const char *line, *detail, *path;
	} cs[] = {
		{ "GET /repos/acme%2F..%2F..%2Fadmin HTTP/1.1", "path_encoded_slash", "/repos/acme%2F..%2F..%2Fadmin" },
		{ "GET /repos/acme/%2e%2e/x?q=secret HTTP/1.1", "path_encoded_dot", "/repos/acme/%2e%2e/x" },
		{ "GET /repos/acme/..;/x HTTP/1.1", "path_dot_param", "/repos/acme/..;/x" },
		{ "GET /../user HTTP/1.1", "path_above_root", "/../user" },
		{ "GET /user\\x HTTP/1.1", "path_backslash", "/user\\x" },
		{ "GET /%c0%ae HTTP/1.1", "path_bad_utf8", "/%c0%ae" },
	};
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		struct sk_req_denial *d = NULL;
		const char *why = judge(cs[i].line, &d);
		if (!why)
			fail_msg("%s: allowed", cs[i].line);
		assert_string_equal(why, "request_bad_path");
		assert_non_null(d);
		assert_string_equal(d->detail, cs[i].detail);
		assert_string_equal(d->path, cs[i].path);
		const char *body = strstr(d->answer, "\r\n\r\n") + 4;
		cJSON *j = cJSON_Parse(body);   /* a backslash in the path is escaped */
		assert_non_null(j);
		assert_string_equal(cJSON_GetObjectItem(j, "path")->valuestring, cs[i].path);
		cJSON_Delete(j);
		sk_req_denial_free(d);
	}
}

static void test_methods(void **state)
{
	(void)state;
	struct sk_req_denial *d = NULL;
	assert_string_equal(judge("DELETE /repos/acme/app HTTP/1.1", &d), "request_denied");
	assert_string_equal(d->method, "DELETE");
	sk_req_denial_free(d);
	assert_string_equal(judge("PROPFIND /user HTTP/1.1", &d), "request_denied");
	sk_req_denial_free(d);
}

static void test_which_connections(void **state)
{
	(void)state;
	assert_null(sk_req_gate_conn(&pol->rules[0], SK_PROTO_HTTP));
	assert_string_equal(sk_req_gate_conn(&pol->rules[0], SK_PROTO_TLS), "request_unreadable");
	assert_string_equal(sk_req_gate_conn(&pol->rules[0], SK_PROTO_TCP), "request_unreadable");
	/* A rule without request rules: today's behaviour, whatever the connection. */
	assert_null(sk_req_gate_conn(&pol->rules[1], SK_PROTO_TLS));
	assert_null(sk_req_gate_conn(&pol->rules[1], SK_PROTO_TCP));
	assert_null(sk_req_gate_conn(NULL, SK_PROTO_TCP));
	/* inspect: true: its TLS is terminated and read, plain HTTP judged as ever, anything else unreadable,
	 * with request rules or without (the Host check needs HTTP too) */
	for (size_t r = 2; r <= 3; r++) {
		assert_null(sk_req_gate_conn(&pol->rules[r], SK_PROTO_TLS));
		assert_null(sk_req_gate_conn(&pol->rules[r], SK_PROTO_HTTP));
		assert_string_equal(sk_req_gate_conn(&pol->rules[r], SK_PROTO_TCP), "request_unreadable");
	}
	struct sk_req_denial *d = (void *)1;
	char head[] = "POST /x HTTP/1.1\r\nHost: plain.example.com\r\n\r\n";
	struct sk_http_head h;
	assert_int_equal(sk_http_head_parse((const uint8_t *)head, sizeof(head) - 1, &h), SK_HTTP_OK);
	assert_null(sk_req_gate_judge(&pol->rules[1], "1", (const uint8_t *)head, sizeof(head) - 1, &h, &d));
	assert_null(d);
}

/* An upgrade (a websocket: a channel both ways behind one GET) is never allowed by `access: read-only`,
 * whose plain GET on the same path is; a request rule naming the path with GET allows it. */
static const char *judge_upgrade(size_t rule, const char *host, const char *path, bool upgrade,
				 struct sk_req_denial **d)
{
	static const char ws[] = "Upgrade: websocket\r\nConnection: Upgrade\r\n"
				 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
	char head[512];
	int n = snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, host, upgrade ? ws : "");
	assert_true(n > 0 && (size_t)n < sizeof(head));
	struct sk_http_head h;
	assert_int_equal(sk_http_head_parse((const uint8_t *)head, (size_t)n, &h), SK_HTTP_OK);
	return sk_req_gate_judge(&pol->rules[rule], "r", (const uint8_t *)head, (size_t)n, &h, d);
}

static void test_upgrade_under_read_only(void **state)
{
	(void)state;
	struct sk_req_denial *d = (void *)1;
	assert_null(judge_upgrade(2, "inspected.example.com", "/ws", false, &d));   /* the control: a read */
	assert_null(d);
	assert_string_equal(judge_upgrade(2, "inspected.example.com", "/ws", true, &d), "request_denied");
	assert_non_null(d);
	assert_string_equal(d->detail, "upgrade_read_only");
	sk_req_denial_free(d);
	assert_string_equal(judge_upgrade(0, "api.example.com", "/ws", true, &d), "request_denied");
	assert_string_equal(d->detail, "no_request_rule");
	sk_req_denial_free(d);
	d = (void *)1;
	assert_null(judge_upgrade(0, "api.example.com", "/user", true, &d));   /* GET /user is listed */
	assert_null(d);
}

/* plain HTTP is never a swap target: a placeholder or value anywhere in a head, to any host */
static void test_credentials(void **state)
{
	(void)state;
	char *hosts[] = { "api.github.com" };
	struct sk_secret sec = { .name = "github", .placeholder = "stockade-secret-github", .hosts = hosts, .n_hosts = 1 };
	struct sk_policy p = { .secrets = &sec, .n_secrets = 1 };
	const struct sk_secret_value val = { "ghp_realVALUE0123456789", 23 };
	const char *bad[] = {
		"GET / HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer stockade-secret-github\r\n\r\n",
		"GET /x?t=STOCKADE-SECRET-GITHUB HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Basic eDpzdG9ja2FkZS1zZWNyZXQtZ2l0aHVi\r\n\r\n",
	};
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(sk_req_gate_credentials(&p, NULL, (const uint8_t *)bad[i], strlen(bad[i])),
				    "credential_misuse");
	const char *v = "GET /ghp_realVALUE0123456789 HTTP/1.1\r\nHost: evil.example\r\n\r\n";
	assert_null(sk_req_gate_credentials(&p, NULL, (const uint8_t *)v, strlen(v)));
	assert_string_equal(sk_req_gate_credentials(&p, &val, (const uint8_t *)v, strlen(v)), "credential_misuse");
	const char *ok = "GET /repos HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer other\r\n\r\n";
	assert_null(sk_req_gate_credentials(&p, &val, (const uint8_t *)ok, strlen(ok)));
	p.n_secrets = 0;
	assert_null(sk_req_gate_credentials(&p, NULL, (const uint8_t *)bad[0], strlen(bad[0])));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed_requests_pass),
		cmocka_unit_test(test_denied_request_answer),
		cmocka_unit_test(test_refused_paths),
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_which_connections),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_upgrade_under_read_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
