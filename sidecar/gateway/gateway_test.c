/* sidecar/gateway/gateway_test.c — the gateway's pure parts: request-head parsing and limits, routing, path
 * traversal checks, method/prefix rules, the caller-token check, header filtering (hop-by-hop, secret
 * name, token headers), the rate limiter, the chunked decoder, audit paths, key redaction, env limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "sidecar/gateway/gateway.h"

/* Parses from an exactly-sized heap copy, so ASan catches any read past the end. The copy lives until
 * the next parse (req borrows it), and the group teardown frees the last one. */
static char *last_copy;
static enum sk_gw_head_verdict parse(const char *s, size_t len, struct sk_gw_req *req)
{
	free(last_copy);
	last_copy = malloc(len ? len : 1);
	assert_non_null(last_copy);
	memcpy(last_copy, s, len);
	return sk_gw_parse_head(last_copy, len, req);
}

static int teardown(void **state)
{
	(void)state;
	free(last_copy);
	last_copy = NULL;
	return 0;
}

static enum sk_gw_head_verdict parse_str(const char *s, struct sk_gw_req *req) { return parse(s, strlen(s), req); }

/* The status a head is answered with: 0 while it needs more, 200 when complete (judged further on),
 * else the answer's status. */
static int status_of(enum sk_gw_head_verdict v)
{
	if (v == SK_GW_HEAD_NEED_MORE)
		return 0;
	if (v == SK_GW_HEAD_COMPLETE) {
		assert_null(sk_gw_head_answer(v));
		return 200;
	}
	const struct sk_gw_answer *a = sk_gw_head_answer(v);
	assert_non_null(a);
	return a->status;
}

static void test_parse_simple_request(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	const char *s = "POST /llm/v1/messages?beta=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12\r\n"
			"X-Thing:   padded value \t\r\n\r\nhello body..";
	assert_int_equal(parse_str(s, &r), SK_GW_HEAD_COMPLETE);
	assert_int_equal(r.head_len, (size_t)(strstr(s, "\r\n\r\n") - s) + 4);
	assert_string_equal(r.method, "POST");
	assert_int_equal(r.target_len, strlen("/llm/v1/messages?beta=1"));
	assert_int_equal(r.minor, 1);
	assert_int_equal(r.n_h, 3);
	assert_int_equal(r.content_length, 12);
	assert_false(r.chunked);
	assert_true(r.keep_alive);
	assert_int_equal(r.h[2].value_len, strlen("padded value"));
}

static void test_parse_every_prefix_needs_more(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	const char *s = "GET /llm/x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(parse(s, i, &r), SK_GW_HEAD_NEED_MORE);
	assert_int_equal(parse(s, n, &r), SK_GW_HEAD_COMPLETE);
	assert_int_equal(r.head_len, n);
}

static void test_parse_flags(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	assert_int_equal(parse_str("GET / HTTP/1.0\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_false(r.keep_alive);
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_false(r.keep_alive);
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_true(r.keep_alive);
	assert_int_equal(parse_str("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-continue\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_true(r.chunked);
	assert_true(r.expect_continue);
	assert_int_equal(r.content_length, -1);
	assert_int_equal(parse_str("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_int_equal(r.content_length, 5);
}

static void test_parse_rejects(void **state)
{
	(void)state;
	static const struct { const char *req; int want; } t[] = {
		{ "GET / HTTP/1.1\nHost: a\r\n\r\n", 400 },                       /* bare LF ends the line */
		{ "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400 },                  /* bare CR in a value */
		{ "GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400 },             /* obs-fold */
		{ "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400 },                    /* space before ':' */
		{ "GET / HTTP/1.1\r\n: a\r\n\r\n", 400 },                         /* empty name */
		{ "GET / HTTP/1.1\r\nX-A: a\x01\r\n\r\n", 400 },                  /* control byte */
		{ "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400 },
		{ "GET  / HTTP/1.1\r\n\r\n", 400 },                               /* empty target */
		{ "GET /a b HTTP/1.1\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\n\r\n", 400 },                                /* method not a token */
		{ "GET /\x80 HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501 },
		{ "GET / HTTP/1.1\r\nExpect: something\r\n\r\n", 417 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\n\r\n", 505 },
		{ "GET / FTP/1.1\r\n\r\n", 400 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		static struct sk_gw_req r;
		int st = status_of(parse_str(t[i].req, &r));
		if (st != t[i].want)
			fail_msg("case %zu: got %d, want %d", i, st, t[i].want);
	}
}

static void test_parse_limits(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	/* A target over the limit is 414 even before the head is complete. */
	size_t n = SK_GW_TARGET_MAX + 200;
	char *b = malloc(n);
	assert_non_null(b);
	memset(b, 'a', n);
	b[0] = 'G', b[1] = 'E', b[2] = 'T', b[3] = ' ', b[4] = '/';
	assert_int_equal(status_of(parse(b, n, &r)), 414);
	free(b);
	/* Too many header lines. */
	size_t cap = 64 + (SK_GW_MAX_HEADERS + 1) * 8;
	char *h = malloc(cap);
	assert_non_null(h);
	size_t o = (size_t)sprintf(h, "GET / HTTP/1.1\r\n");
	for (int i = 0; i <= SK_GW_MAX_HEADERS; i++)
		o += (size_t)sprintf(h + o, "X%03d:\r\n", i % 1000);
	o += (size_t)sprintf(h + o, "\r\n");
	assert_int_equal(status_of(parse(h, o, &r)), 431);
	free(h);
	/* A head that never ends within the cap. */
	n = SK_GW_HEAD_MAX + 10;
	b = malloc(n);
	assert_non_null(b);
	/* well-formed field lines all the way (a malformed one would be 400 at once, before the cap) */
	size_t at = (size_t)snprintf(b, n, "GET / HTTP/1.1\r\n");
	for (size_t i = 0; at < n; i++, at++) {
		size_t col = i % 100;
		b[at] = col == 0 ? 'X' : col == 1 ? ':' : col == 98 ? '\r' : col == 99 ? '\n' : 'x';
	}
	assert_int_equal(status_of(parse(b, n, &r)), 431);
	/* the same, malformed: judged at its first bad line, however long the rest */
	b[16 + 1] = ' ';
	assert_int_equal(status_of(parse(b, n, &r)), 400);
	free(b);
}

/* Every final verdict has its own answer (an error status, a message, an audit reason); the two verdicts
 * that are not final have none. */
static void test_head_answers(void **state)
{
	(void)state;
	assert_null(sk_gw_head_answer(SK_GW_HEAD_NEED_MORE));
	assert_null(sk_gw_head_answer(SK_GW_HEAD_COMPLETE));
	assert_null(sk_gw_head_answer((enum sk_gw_head_verdict)(SK_GW_HEAD_BAD_VERSION + 1)));
	int seen[SK_GW_HEAD_BAD_VERSION + 1] = { 0 };
	for (int v = SK_GW_HEAD_MALFORMED; v <= SK_GW_HEAD_BAD_VERSION; v++) {
		const struct sk_gw_answer *a = sk_gw_head_answer((enum sk_gw_head_verdict)v);
		assert_non_null(a);
		assert_true(a->status >= 400 && a->status < 600);
		assert_true(a->msg && a->msg[0] && a->reason && a->reason[0]);
		for (int w = SK_GW_HEAD_MALFORMED; w < v; w++)
			assert_int_not_equal(seen[w], a->status);
		seen[v] = a->status;
	}
}

static void test_route(void **state)
{
	(void)state;
	char name[64];
	const char *rest;
	size_t rl;
	const char *t = "/llm/v1/messages?x=1";
	assert_int_equal(sk_gw_route(t, strlen(t), name, &rest, &rl), 0);
	assert_string_equal(name, "llm");
	assert_int_equal(rl, strlen("/v1/messages?x=1"));
	assert_memory_equal(rest, "/v1/messages?x=1", rl);
	t = "/llm";
	assert_int_equal(sk_gw_route(t, strlen(t), name, &rest, &rl), 0);
	assert_int_equal(rl, 0);
	t = "/my-api2?q";
	assert_int_equal(sk_gw_route(t, strlen(t), name, &rest, &rl), 0);
	assert_string_equal(name, "my-api2");
	assert_memory_equal(rest, "?q", 2);
	/* Names the policy can never hold → 404; targets that are not origin-form → 400. */
	static const char *const nf[] = { "/", "//x", "/LLM/x", "/ll_m/x", "/%6cl/x", "/a.b/x",
		"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x" };
	for (size_t i = 0; i < sizeof(nf) / sizeof(nf[0]); i++)
		assert_int_equal(sk_gw_route(nf[i], strlen(nf[i]), name, &rest, &rl), -ENOENT);
	static const char *const bad[] = { "*", "http://llm/x", "llm/x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sk_gw_route(bad[i], strlen(bad[i]), name, &rest, &rl), -EINVAL);
}

static void test_check_path(void **state)
{
	(void)state;
	static const char *const ok[] = { "", "/", "/v1/messages", "/a/.b/c", "/a/..b", "/a/b..",
		"/a%20b", "/v1/%E2%9C%93", "/a/b/", "/x.json" };
	static const char *const bad[] = { "/..", "/../x", "/a/../b", "/a/..", "/.", "/./x", "/a/%2e%2e/b",
		"/a/%2E%2e", "/a/.%2e/b", "/a/%2e./b", "/a/%2e", "/a/..%2fb", "/a/..%2Fb", "/a/..%5cb",
		"/a\\..\\b", "/a%00b", "/a%0d%0ab", "/a%0Ab", "/a%7f", "/a%zz", "/a%2", "/a%", "/a#frag", "/a/%2e%2e%2f" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (sk_gw_check_path(ok[i], strlen(ok[i])) != 0)
			fail_msg("should pass: %s", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sk_gw_check_path(bad[i], strlen(bad[i])) != -EINVAL)
			fail_msg("should be refused: %s", bad[i]);
}

/* Spellings that escape a path prefix on an upstream that normalises them (Tomcat/Spring
 * ";" path parameters, double decoding, lenient UTF-8, IIS trailing dots, Unicode compatibility forms),
 * from the path-traversal literature. The first group passed sk_gw_check_path before the fix. */
static const char *const traversal[] = {
	/* passed before */
	"/v1/..;/admin", "/v1/%2e%2e;/admin", "/v1/%252e%252e/admin", "/v1/%c0%ae%c0%ae/admin", "/v1/.../admin",
	"/v1/;/admin", "/v1/admin;jsessionid=x", "/v1/messages;/../admin", "/v1/..;x=y/admin", "/v1/.;/admin",
	"/v1/%252e%252e%252fadmin", "/v1/%25252e%25252e/admin", "/v1/%252f..%252fadmin", "/v1/..%255cadmin",
	"/v1/%25", "/v1/a%25b", "/v1/%2e.json", "/v1/%2Ejson", "/v1/a%2Fb", "/v1/a%2fb", "/v1/a%5cb", "/v1/a%5Cb",
	"/v1/%3b/admin", "/v1/..%3B/admin", "/v1/%c0%ae%c0%ae%c0%afadmin", "/v1/%e0%80%ae%e0%80%ae/admin",
	"/v1/%f0%80%80%ae%f0%80%80%ae/admin", "/v1/%c0%af", "/v1/%c1%9c", "/v1/%c0%80", "/v1/%80", "/v1/%bf",
	"/v1/%fe", "/v1/%ff", "/v1/%f5%80%80%80", "/v1/%f4%90%80%80", "/v1/%ed%a0%80", "/v1/%ed%bf%bf",
	"/v1/%e2%9c", "/v1/%c3", "/v1/%c3/x", "/v1/%c3%28", "/v1/%e2%28%a1", "/v1/%ef%bc%8e%ef%bc%8e/admin",
	"/v1/..%ef%bc%8fadmin", "/v1/..%ef%bc%bcadmin", "/v1/%e2%80%a5/admin", "/v1/%e2%80%a6/admin",
	"/v1/%e2%80%a4%e2%80%a4/admin", "/v1/%fe%52", "/v1/%ef%b9%92%ef%b9%92/admin", "/v1/..%e2%88%95admin",
	"/v1/%cd%be/admin", "/v1/..%ef%bc%9b/admin", "/v1/..../admin", "/v1/.....", "/v1/...", "/v1/..%20/admin",
	"/v1/.%20/admin", "/v1/%20../admin", "/v1/. ./x", "/v1//admin", "//v1/admin", "//evil.example/x",
	"/v1///", "/v1/\xc0\xae\xc0\xae/admin", "/v1/\xe2\x9c\x93", "/v1/%e2%9c%93%80",
	/* refused before too (kept here so the table is the whole list) */
	"/v1/../admin", "/v1/%2e%2e/admin", "/v1/%2E%2E/admin", "/v1/.%2e/admin", "/v1/%2e./admin",
	"/v1/..%2fadmin", "/v1/..%2Fadmin", "/v1/..%5cadmin", "/v1/..\\admin", "/v1\\..\\admin", "/v1/%u002e%u002e/a",
	"/v1/%%32%65%%32%65/admin", "/v1/..%00/admin", "/v1/..%0d/admin", "/v1/..%09/admin", "/v1/a#/../admin",
	"/v1/./admin", "/v1/..", "/v1/.",
};
static const char *const legit[] = {
	"/v1/messages", "/v1/models/claude-3.5?x=a;b", "/v1/models/claude-3.5", "/v1/a%20b", "/v1/files/%E2%9C%93",
	"/v1/files/%e2%9c%93", "/v1/files/%F0%9F%98%80", "/v1/files/%C3%A9t%C3%A9", "/v1/files/%c2%80", "/v1/x?a=..;/b",
	"/v1/x?p=%2e%2e%2f%25%c0%ae", "/v1/x?;", "/v1/.well-known/x", "/v1/a..b", "/v1/...a", "/v1/a.../b", "/v1/",
	"/v1", "/", "", "?q=1", "/v1/files/file-abc_DEF~1.json", "/v1/%41%42", "/v1/a:b@c!$&'()*+,=",
	"/v1/%e0%a0%80", "/v1/%ef%bf%bd", "/v1/%f4%8f%bf%bf", "/v1/%ed%9f%bf", "/v1/%ee%80%80",
};

static void test_check_path_traversal_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(traversal) / sizeof(traversal[0]); i++) {
		/* From an exactly-sized heap copy: ASan sees any read past the end. */
		size_t n = strlen(traversal[i]);
		char *p = malloc(n ? n : 1);
		assert_non_null(p);
		memcpy(p, traversal[i], n);
		int rc = sk_gw_check_path(p, n);
		free(p);
		if (rc != -EINVAL)
			fail_msg("should be refused: %s", traversal[i]);
	}
	for (size_t i = 0; i < sizeof(legit) / sizeof(legit[0]); i++) {
		size_t n = strlen(legit[i]);
		char *p = malloc(n ? n : 1);
		assert_non_null(p);
		memcpy(p, legit[i], n);
		int rc = sk_gw_check_path(p, n);
		free(p);
		if (rc != 0)
			fail_msg("should pass: %s", legit[i]);
	}
}

/* The prefix check refuses the same spellings on its own: "/v1/" and "/v1/messages" cannot be left by a
 * path an upstream normalises. */
static void test_prefix_not_fooled(void **state)
{
	(void)state;
	char *prefixes[] = { "/v1/", "/v2/messages" };
	struct sk_api a = { .name = "x", .path_prefixes = prefixes, .n_path_prefixes = 2 };
	for (size_t i = 0; i < sizeof(traversal) / sizeof(traversal[0]); i++) {
		const char *t = traversal[i];
		if (sk_gw_path_allowed(&a, t, strcspn(t, "?")))
			fail_msg("prefix /v1/ should refuse: %s", t);
		char v2[256];
		(void)snprintf(v2, sizeof(v2), "/v2/messages%s", t + 3);   /* "/v1/..;/admin" → "/v2/messages/..;/admin" */
		if (sk_gw_path_allowed(&a, v2, strcspn(v2, "?")))
			fail_msg("prefix /v2/messages should refuse: %s", v2);
	}
	static const char *const yes[] = { "/v1/messages", "/v1/models/claude-3.5", "/v1/a%20b",
		"/v1/files/%E2%9C%93", "/v2/messages", "/v2/messages/batches" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!sk_gw_path_allowed(&a, yes[i], strlen(yes[i])))
			fail_msg("should be allowed: %s", yes[i]);
}

static void test_methods_and_prefixes(void **state)
{
	(void)state;
	char *methods[] = { "GET", "POST" };
	char *prefixes[] = { "/v1/messages", "/files/" };
	struct sk_api a = { .name = "x", .methods = methods, .n_methods = 2, .path_prefixes = prefixes,
			    .n_path_prefixes = 2 };
	assert_true(sk_gw_method_allowed(&a, "GET"));
	assert_true(sk_gw_method_allowed(&a, "POST"));
	assert_false(sk_gw_method_allowed(&a, "DELETE"));
	assert_false(sk_gw_method_allowed(&a, "get"));
	static const char *const yes[] = { "/v1/messages", "/v1/messages/batches", "/files/", "/files/abc" };
	static const char *const no[] = { "/v1/messagesX", "/v1/message", "/files", "/v2/messages", "", "/" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!sk_gw_path_allowed(&a, yes[i], strlen(yes[i])))
			fail_msg("should be allowed: %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (sk_gw_path_allowed(&a, no[i], strlen(no[i])))
			fail_msg("should be refused: %s", no[i]);
	struct sk_api any = { .name = "y" };
	assert_true(sk_gw_method_allowed(&any, "PATCH"));
	assert_true(sk_gw_path_allowed(&any, "/anything", 9));
}

static void test_token_eq_and_find(void **state)
{
	(void)state;
	assert_true(sk_gw_token_eq("secret", 6, "secret", 6));
	assert_false(sk_gw_token_eq("secret", 6, "secreT", 6));
	assert_false(sk_gw_token_eq("secret", 6, "secret1", 7));
	assert_false(sk_gw_token_eq("secre", 5, "secret", 6));
	assert_false(sk_gw_token_eq("", 0, "x", 1));
	assert_true(sk_gw_token_eq("", 0, "", 0));
	/* A NUL byte inside does not end the comparison. */
	assert_false(sk_gw_token_eq("ab\0c", 4, "ab\0d", 4));

	static struct sk_gw_req r;
	const char *tok;
	size_t tl;
	bool via;
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nAuthorization: Bearer  abc\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_true(sk_gw_find_token(&r, &tok, &tl, &via));
	assert_true(via);
	assert_int_equal(tl, 3);
	assert_memory_equal(tok, "abc", 3);
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nAuthorization: Bearer x\r\nX-Stockade-Token: t2\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_true(sk_gw_find_token(&r, &tok, &tl, &via));
	assert_false(via);
	assert_memory_equal(tok, "t2", 2);
	assert_int_equal(parse_str("GET / HTTP/1.1\r\nAuthorization: Basic abc\r\n\r\n", &r), SK_GW_HEAD_COMPLETE);
	assert_false(sk_gw_find_token(&r, &tok, &tl, &via));
}

struct seen {
	char names[32][64];
	char values[32][64];
	size_t n;
};

static int collect(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct seen *s = arg;
	assert_true(s->n < 32);
	(void)snprintf(s->names[s->n], 64, "%.*s", (int)nlen, name);
	(void)snprintf(s->values[s->n], 64, "%.*s", (int)vlen, value);
	s->n++;
	return 0;
}

static void test_hop_by_hop(void **state)
{
	(void)state;
	static const char *const hop[] = { "Connection", "keep-alive", "TE", "Trailer", "Transfer-Encoding",
					   "Upgrade", "Proxy-Authorization", "proxy-connection", "Proxy-Foo" };
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		assert_true(sk_gw_hop_by_hop(hop[i], strlen(hop[i]), NULL));
	assert_false(sk_gw_hop_by_hop("Content-Type", 12, NULL));
	assert_false(sk_gw_hop_by_hop("Trailers", 8, NULL));
	assert_true(sk_gw_hop_by_hop("X-Hop", 5, "keep-alive, x-hop"));
	assert_false(sk_gw_hop_by_hop("X-Ho", 4, "keep-alive, x-hop"));
	assert_true(sk_gw_hop_by_hop("x-b", 3, " x-a ,x-b,"));
}

static void test_filter_request_headers(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	const char *s = "POST /llm/x HTTP/1.1\r\nHost: 127.0.0.1:15080\r\nConnection: keep-alive, X-Hop\r\n"
			"X-Hop: 1\r\nKeep-Alive: 5\r\nUpgrade: h2c\r\nTE: trailers\r\nProxy-Authorization: x\r\n"
			"Content-Length: 3\r\nExpect: 100-continue\r\nX-API-Key: agent-chosen\r\n"
			"Authorization: Bearer tok\r\nX-Stockade-Token: tok\r\nContent-Type: application/json\r\n"
			"Anthropic-Version: 2023-06-01\r\nX-Empty:\r\n\r\n";
	assert_int_equal(parse_str(s, &r), SK_GW_HEAD_COMPLETE);
	static struct seen seen;
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sk_gw_filter_request_headers(&r, "x-api-key", true, collect, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_string_equal(seen.names[0], "Content-Type");
	assert_string_equal(seen.names[1], "Anthropic-Version");
	assert_string_equal(seen.values[1], "2023-06-01");
	assert_string_equal(seen.names[2], "X-Empty");
	assert_string_equal(seen.values[2], "");
	/* Without a caller token the agent's Authorization is its own business and goes through. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sk_gw_filter_request_headers(&r, "x-api-key", false, collect, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.names[0], "Authorization");
	/* ...unless Authorization is the secret header itself. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sk_gw_filter_request_headers(&r, "authorization", false, collect, &seen), 0);
	for (size_t i = 0; i < seen.n; i++)
		assert_string_not_equal(seen.names[i], "Authorization");
}

/* The agent must not choose a body form the key redaction cannot search — compressed
 * (every Accept-Encoding spelling, q-values or not), a range that starts inside an echoed key, a delta, or
 * a digest of a body holding the key. TE (transfer-coding compression) stops as hop-by-hop. */
static void test_filter_drops_body_form_headers(void **state)
{
	(void)state;
	static struct sk_gw_req r;
	const char *s = "GET /llm/echo HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br;q=1.0, zstd, identity;q=0\r\n"
			"accept-encoding: deflate\r\nRange: bytes=7-\r\nIf-Range: \"e1\"\r\nA-IM: gzip, vcdiff\r\n"
			"Want-Digest: crc32c\r\nWant-Content-Digest: sha-256=1\r\nWant-Repr-Digest: adler=1\r\n"
			"TE: gzip, trailers\r\nAccept: application/json\r\nIf-None-Match: \"e1\"\r\n\r\n";
	assert_int_equal(parse_str(s, &r), SK_GW_HEAD_COMPLETE);
	static struct seen seen;
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(sk_gw_filter_request_headers(&r, "x-api-key", false, collect, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.names[0], "Accept");
	assert_string_equal(seen.names[1], "If-None-Match");
}

/* ...and a response that comes back in such a form anyway is refused before any of it is relayed. */
static void test_response_refusal(void **state)
{
	(void)state;
	static const char *const refused[] = {
		"Content-Encoding: gzip\r\n", "content-encoding: br\r\n", "Content-Encoding: zstd\r\n",
		"Content-Encoding: deflate\r\n", "Content-Encoding: x-gzip\r\n", "Content-Encoding: compress\r\n",
		"Content-Encoding: identity, gzip\r\n", "Content-Encoding: ,gzip\r\n", "Content-Encoding:gzip\r\n",
		"Content-Type: text/plain\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n",
		"Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: chunked, gzip\r\n",
		"Transfer-Encoding: deflate\r\n", "Transfer-Encoding: x-compress; q=1, chunked\r\n",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const struct sk_gw_answer *a = sk_gw_response_refusal(refused[i], strlen(refused[i]), 200, false);
		if (!a) {
			fail_msg("not refused: %s", refused[i]);
			return;
		}
		assert_int_equal(a->status, 502);
		assert_string_equal(a->reason, "upstream_encoding");
		/* No body to relay (HEAD, 204, 304, 1xx): nothing to refuse. */
		assert_null(sk_gw_response_refusal(refused[i], strlen(refused[i]), 200, true));
		assert_null(sk_gw_response_refusal(refused[i], strlen(refused[i]), 304, false));
		assert_null(sk_gw_response_refusal(refused[i], strlen(refused[i]), 204, false));
	}
	static const char *const relayed[] = {
		"", "Content-Type: text/plain\r\n", "Content-Encoding: identity\r\n", "Content-Encoding:\r\n",
		"Transfer-Encoding: chunked\r\n", "transfer-encoding: Chunked\r\nContent-Encoding: IDENTITY\r\n",
		"X-Content-Encoding: gzip\r\nContent-Type: application/gzip\r\n",   /* a gzip file as such is data */
	};
	for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++)
		if (sk_gw_response_refusal(relayed[i], strlen(relayed[i]), 200, false))
			fail_msg("refused: %s", relayed[i]);
	/* A part of a body (206, or a 226 delta) was never asked for: the gateway strips Range and A-IM. */
	static const char cr[] = "Content-Range: bytes 7-99/100\r\n";
	const struct sk_gw_answer *a = sk_gw_response_refusal(cr, strlen(cr), 206, false);
	assert_non_null(a);
	assert_int_equal(a->status, 502);
	assert_string_equal(a->reason, "upstream_partial");
	assert_non_null(sk_gw_response_refusal("", 0, 226, false));
	assert_null(sk_gw_response_refusal(cr, strlen(cr), 206, true));
	assert_null(sk_gw_response_refusal(cr, strlen(cr), 416, false));   /* a 416 carries no part of the body */
}

static void test_bucket(void **state)
{
	(void)state;
	struct sk_gw_bucket b = { 0 };
	uint32_t ra = 0;
	assert_true(sk_gw_bucket_take(&b, 1, 2, 1000, &ra));
	assert_true(sk_gw_bucket_take(&b, 1, 2, 1000, &ra));
	assert_false(sk_gw_bucket_take(&b, 1, 2, 1000, &ra));
	assert_int_equal(ra, 1);
	assert_false(sk_gw_bucket_take(&b, 1, 2, 1500, &ra));   /* half a token */
	assert_int_equal(ra, 1);
	assert_true(sk_gw_bucket_take(&b, 1, 2, 2000, &ra));
	assert_true(sk_gw_bucket_take(&b, 1, 2, 100000, &ra));   /* refills to burst, not beyond */
	assert_true(sk_gw_bucket_take(&b, 1, 2, 100000, &ra));
	assert_false(sk_gw_bucket_take(&b, 1, 2, 100000, &ra));
	/* Slow rate: Retry-After is rounded up to whole seconds. */
	struct sk_gw_bucket s = { 0 };
	assert_true(sk_gw_bucket_take(&s, 0.2, 1, 0, &ra));
	assert_false(sk_gw_bucket_take(&s, 0.2, 1, 100, &ra));
	assert_int_equal(ra, 5);
	/* burst 0 = max(1, rate); rate 0 = unlimited. */
	struct sk_gw_bucket d = { 0 };
	for (int i = 0; i < 10; i++)
		assert_true(sk_gw_bucket_take(&d, 10, 0, 0, &ra));
	assert_false(sk_gw_bucket_take(&d, 10, 0, 0, &ra));
	struct sk_gw_bucket u = { 0 };
	for (int i = 0; i < 1000; i++)
		assert_true(sk_gw_bucket_take(&u, 0, 0, 0, &ra));
	/* A clock that does not move (or goes back) never adds tokens. */
	struct sk_gw_bucket k = { 0 };
	assert_true(sk_gw_bucket_take(&k, 1, 1, 5000, &ra));
	assert_false(sk_gw_bucket_take(&k, 1, 1, 4000, &ra));
}

static int decode_all(const char *in, size_t len, size_t step, char *out, size_t *out_len)
{
	struct sk_gw_chunked c = { 0 };
	size_t off = 0, o = 0;
	int rc = 0;
	while (off < len && rc == 0) {
		size_t n = len - off < step ? len - off : step, used = 0, made = 0;
		rc = sk_gw_chunked_decode(&c, (const uint8_t *)in + off, n, &used, (uint8_t *)out + o, 3, &made);
		o += made;
		off += used;
		if (rc == 0 && used == 0 && made == 0 && n > 0)
			continue;   /* never: the out cap is 3, progress is always made */
	}
	*out_len = o;
	return rc;
}

static void test_chunked_decode(void **state)
{
	(void)state;
	const char *body = "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
	char out[64];
	size_t ol;
	for (size_t step = 1; step <= strlen(body); step++) {
		assert_int_equal(decode_all(body, strlen(body), step, out, &ol), 1);
		assert_int_equal(ol, 16);
		assert_memory_equal(out, "hello 0123456789", 16);
	}
	/* Bytes after the last chunk are left for the next request. */
	struct sk_gw_chunked c = { 0 };
	size_t used, made;
	const char *two = "0\r\n\r\nGET /next";
	assert_int_equal(sk_gw_chunked_decode(&c, (const uint8_t *)two, strlen(two), &used, (uint8_t *)out, 64, &made), 1);
	assert_int_equal(used, 5);
	assert_int_equal(made, 0);
	static const char *const bad[] = { "x\r\n", "\r\n", "5\nhello\r\n", "5\r\nhelloX\r\n", "5\r\nhello\r\r",
		"FFFFFFFFFFF\r\n", "0\r\nbad\n", "0\r\n\r\r" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sk_gw_chunked b = { 0 };
		int rc = sk_gw_chunked_decode(&b, (const uint8_t *)bad[i], strlen(bad[i]), &used, (uint8_t *)out, 64, &made);
		if (rc != -1)
			fail_msg("should be malformed: case %zu (rc %d)", i, rc);
	}
}

static void test_audit_path(void **state)
{
	(void)state;
	char out[64];
	static const struct { const char *in, *want; } t[] = {
		{ "/v1/messages", "/v1/messages" },
		{ "/v1/x?key=secret&b=2", "/v1/x?key=&b=" },
		{ "/x?flag&a=1=2", "/x?flag&a=" },
		{ "", "/" },
		{ "?q=1", "?q=" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		sk_gw_audit_path(t[i].in, strlen(t[i].in), out, sizeof(out));
		assert_string_equal(out, t[i].want);
	}
	char small[6];
	sk_gw_audit_path("/abcdefgh", 9, small, sizeof(small));
	assert_string_equal(small, "/abcd");
}

/* Runs in through a redactor in pieces of `step` bytes; out gets the whole output, NUL-terminated. */
static void redact_stream(const char *secret, const char *in, size_t step, char *out, size_t *olen)
{
	struct sk_secret_redact r;
	size_t sl = strlen(secret);
	assert_int_equal(sk_secret_redact_init(&r, secret, sl), 0);
	size_t len = strlen(in);
	uint8_t *buf = malloc(step + sl + 1);   /* exactly the room the contract asks: len + n_hold */
	assert_non_null(buf);
	size_t o = 0;
	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;
		assert_true(r.n_hold < (sl ? sl : 1));
		size_t m = sk_secret_redact_run(&r, (const uint8_t *)in + off, n, false, buf);
		memcpy(out + o, buf, m);
		o += m;
	}
	size_t m = sk_secret_redact_run(&r, NULL, 0, true, buf);
	memcpy(out + o, buf, m);
	o += m;
	out[o] = 0;
	*olen = o;
	free(buf);
	sk_secret_redact_free(&r);
	assert_null(r.fail);
}

/* The same by brute force: mark every byte covered by an occurrence. */
static void redact_naive(const char *secret, const char *in, char *out)
{
	size_t sl = strlen(secret), n = strlen(in);
	memcpy(out, in, n + 1);
	for (size_t i = 0; sl && i + sl <= n; i++)
		if (memcmp(in + i, secret, sl) == 0)
			memset(out + i, '*', sl);
}

static void test_redact_across_boundaries(void **state)
{
	(void)state;
	const char *in = "key=sk-abc123 and sk-abc12 and sk-abc123sk-abc123, end sk-abc1";
	const char *want = "key=********* and sk-abc12 and ******************, end sk-abc1";
	char out[256];
	size_t ol;
	for (size_t step = 1; step <= strlen(in); step++) {
		redact_stream("sk-abc123", in, step, out, &ol);
		assert_int_equal(ol, strlen(in));   /* same length: Content-Length still holds */
		assert_string_equal(out, want);
	}
	/* Overlapping self-similar secret. */
	redact_stream("aab", "aaab aab", 1, out, &ol);
	assert_string_equal(out, "a*** ***");
	/* Disabled: passes through. */
	redact_stream("", "anything", 3, out, &ol);
	assert_string_equal(out, "anything");
}

/* A secret longer than 256 bytes went out unmasked. A 1000-byte secret echoed in a body
 * (three times: alone, twice back to back, and a near miss), fed in every kind of piece size, so the
 * occurrences straddle reads; a long self-similar secret; and agreement with brute force. */
static void test_redact_long_secret(void **state)
{
	(void)state;
	enum { SL = 1000 };
	char *secret = malloc(SL + 1);
	assert_non_null(secret);
	for (size_t i = 0; i < SL; i++)
		secret[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_"[(i * 7 + i / 13) % 38];
	secret[SL] = 0;
	size_t cap = 8 * SL + 256;
	char *in = malloc(cap), *want = malloc(cap), *out = malloc(cap);
	assert_non_null(in);
	assert_non_null(want);
	assert_non_null(out);
	char *near = strdup(secret);
	assert_non_null(near);
	near[SL - 1] = near[SL - 1] == 'x' ? 'y' : 'x';
	(void)snprintf(in, cap, "data: {\"echo\":\"%s\"}\n\ndata: %s%s|%s|%.*s end", secret, secret, secret, near,
		 SL / 2, secret);
	redact_naive(secret, in, want);
	assert_null(strstr(want, secret));
	assert_non_null(strstr(want, near));                    /* a near miss is not masked */
	static const size_t steps[] = { 1, 2, 3, 7, 64, 255, 256, 257, 999, 1000, 1001, 1500, 4096, 100000 };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		size_t ol;
		redact_stream(secret, in, steps[k], out, &ol);
		assert_int_equal(ol, strlen(in));   /* same length: Content-Length still holds */
		if (strcmp(out, want) != 0 || strstr(out, secret))
			fail_msg("step %zu: the 1000-byte secret is not masked as it should be", steps[k]);
	}
	/* Self-similar: "aaa…ab" (1000 bytes) after a long run of 'a': one occurrence at the very end. */
	memset(secret, 'a', SL - 1);
	secret[SL - 1] = 'b';
	memset(in, 'a', 5000);
	memcpy(in + 5000, secret, SL + 1);
	redact_naive(secret, in, want);
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		size_t ol;
		redact_stream(secret, in, steps[k], out, &ol);
		assert_int_equal(ol, 5000 + SL);
		assert_string_equal(out, want);
	}
	free(near);
	free(secret);
	free(in);
	free(want);
	free(out);
}

/* Random secrets over a small alphabet (many overlaps and near misses) against brute force. */
static void test_redact_random_agrees(void **state)
{
	(void)state;
	unsigned seed = 12345;
	char secret[40], in[600], want[600], out[700];
	for (int round = 0; round < 3000; round++) {
		seed = seed * 1103515245u + 12345u;
		size_t sl = 1 + (seed >> 16) % 12, n = (seed >> 8) % 500;
		for (size_t i = 0; i < sl; i++) {
			seed = seed * 1103515245u + 12345u;
			secret[i] = (char)('a' + (seed >> 16) % 2);
		}
		secret[sl] = 0;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = (char)('a' + (seed >> 16) % 3);
		}
		in[n] = 0;
		redact_naive(secret, in, want);
		size_t ol, step = 1 + (size_t)round % 17;
		redact_stream(secret, in, step, out, &ol);
		if (strcmp(out, want) != 0)
			fail_msg("secret %s step %zu:\n in   %s\n got  %s\n want %s", secret, step, in, out, want);
	}
}

/* The response head the agent gets: hop-by-hop headers (and what Connection names) dropped, the length
 * kept only when the upstream framed by it, chunked re-framing for a keep-alive agent, close otherwise. */
static void test_response_head_framing(void **state)
{
	(void)state;
	static const char up[] = "Content-Type: text/plain\r\nConnection: x-hop\r\nX-Hop: 1\r\nKeep-Alive: t=5\r\n"
				 "Content-Length: 5\r\nX-Keep: 2\r\n";
	struct sk_strbuf out = { 0 };
	struct sk_gw_resp_framing f;
	size_t hs = sk_gw_response_head(&out, up, strlen(up), 200, false, true, false, &f);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-Keep: 2\r\n\r\n");
	assert_int_equal(hs, strlen("HTTP/1.1 200 OK\r\n"));
	assert_false(f.no_body || f.chunked || f.close);
	/* Transfer-Encoding from the upstream: the length goes, the body is re-chunked for a keep-alive agent. */
	static const char te[] = "Transfer-Encoding: chunked\r\nContent-Length: 9\r\n";
	out.len = 0;
	sk_gw_response_head(&out, te, strlen(te), 201, false, true, false, &f);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_true(f.chunked && !f.close && !f.no_body);
	/* ... and for an HTTP/1.0 agent the body ends at close. */
	out.len = 0;
	sk_gw_response_head(&out, te, strlen(te), 200, false, false, false, &f);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
	assert_true(f.close && !f.chunked);
	/* HEAD and 304 have no body; draining makes any response the last. */
	out.len = 0;
	sk_gw_response_head(&out, NULL, 0, 304, false, true, true, &f);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n");
	assert_true(f.no_body && f.close && !f.chunked);
	sk_strbuf_free(&out);
}

static void test_error_response(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	sk_gw_error_response(&out, 429, "rate \"limit\"\xff", 7, false);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 33\r\n"
			    "Connection: close\r\nCache-Control: no-store\r\nRetry-After: 7\r\n\r\n"
			    "{\"error\":\"rate \\\"limit\\\"\\u00ff\"}\n");
	out.len = 0;
	sk_gw_error_response(&out, 401, "no", 0, true);
	assert_true(sk_strbuf_put(&out, "", 1) == 0);
	assert_string_equal(out.p, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 15\r\n"
			    "Connection: close\r\nCache-Control: no-store\r\n"
			    "WWW-Authenticate: Bearer realm=\"stockade\"\r\n\r\n");
	sk_strbuf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_simple_request),
		cmocka_unit_test(test_parse_every_prefix_needs_more),
		cmocka_unit_test(test_parse_flags),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_head_answers),
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_check_path),
		cmocka_unit_test(test_check_path_traversal_table),
		cmocka_unit_test(test_prefix_not_fooled),
		cmocka_unit_test(test_methods_and_prefixes),
		cmocka_unit_test(test_token_eq_and_find),
		cmocka_unit_test(test_hop_by_hop),
		cmocka_unit_test(test_filter_request_headers),
		cmocka_unit_test(test_filter_drops_body_form_headers),
		cmocka_unit_test(test_response_refusal),
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_chunked_decode),
		cmocka_unit_test(test_audit_path),
		cmocka_unit_test(test_redact_across_boundaries),
		cmocka_unit_test(test_redact_long_secret),
		cmocka_unit_test(test_redact_random_agrees),
		cmocka_unit_test(test_response_head_framing),
		cmocka_unit_test(test_error_response),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
