/* injector/http_test.c — the request head: complete, incomplete, and each refusal with its status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/http.h"

static int parse(const char *s, struct sk_http_req *req)
{
	return sk_http_parse(s, strlen(s), req);
}

static void test_api_server_request_is_read(void **state)
{
	(void)state;
	struct sk_http_req req;
	const char *s = "POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; charset=utf-8\r\n"
			"Content-Length: 1234\r\nAccept-Encoding: gzip\r\n\r\n{";
	assert_int_equal(parse(s, &req), 1);
	assert_int_equal(req.method, SK_HTTP_POST);
	assert_string_equal(req.path, "/mutate");
	assert_int_equal(req.content_length, 1234);
	assert_true(req.json);
	assert_true(req.keep_alive);
	assert_int_equal(req.head_len, strlen(s) - 1);
	assert_int_equal(parse("GET /healthz HTTP/1.0\r\n\r\n", &req), 1);
	assert_false(req.keep_alive);
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\nConnection: foo, Close\r\n\r\n", &req), 1);
	assert_false(req.keep_alive);
	assert_false(req.json);
}

static void test_incomplete_head_asks_for_more(void **state)
{
	(void)state;
	struct sk_http_req req;
	assert_int_equal(parse("", &req), 0);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nHost: x\r\n", &req), 0);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nHost: x\r\n\r", &req), 0);
}

static void test_refusals_carry_their_status(void **state)
{
	(void)state;
	struct sk_http_req req;
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &req), -501);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nContent-Length : 1\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/1.1\nX: a\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/2.0\r\n\r\n", &req), -505);
	assert_int_equal(parse("POST mutate HTTP/1.1\r\n\r\n", &req), -400);
	assert_int_equal(parse("POST /mutate HTTP/1.1\r\nX: a\x01\r\n\r\n", &req), -400);
	char *big = malloc(SK_HTTP_MAX_HEAD + 64);
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', 200);
	(void)snprintf(big + 205, 64, " HTTP/1.1\r\n\r\n");
	assert_int_equal(parse(big, &req), -414);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', SK_HTTP_MAX_HEAD);
	big[19 + SK_HTTP_MAX_HEAD] = '\0';
	assert_int_equal(parse(big, &req), -431);
	size_t off = (size_t)snprintf(big, 32, "GET / HTTP/1.1\r\n");
	for (int i = 0; i <= SK_HTTP_MAX_HEADERS; i++)
		off += (size_t)snprintf(big + off, 16, "X: y\r\n");
	(void)snprintf(big + off, 8, "\r\n");
	assert_int_equal(parse(big, &req), -431);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_server_request_is_read),
		cmocka_unit_test(test_incomplete_head_asks_for_more),
		cmocka_unit_test(test_refusals_carry_their_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
