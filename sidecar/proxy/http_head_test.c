/* sidecar/proxy/http_head_test.c — the request-head parser on a table of tricky requests (expected verdict,
 * host, address, port), each also parsed at every prefix from an exactly-sized heap copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sidecar/proxy/http_head.h"

static enum sk_http_result parse(const char *buf, size_t len, struct sk_http_head *out)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len) {
		if (!buf)
			abort();
		memcpy(copy, buf, len);
	}
	enum sk_http_result r = sk_http_head_parse(len ? copy : copy + 1, len, out);
	free(copy);
	return r;
}

#define assert_result(got, want) \
	assert_string_equal(sk_http_result_name(got), sk_http_result_name(want))

#define H11 " HTTP/1.1\r\n"
#define END "\r\n"

struct req {
	const char *raw;
	size_t len;
	const char *host;      /* expected normalised name, or the address text when an IP, or NULL */
	enum sk_http_result want;
	uint16_t port;
};

#define R(s, w, h, p) { .raw = (s), .len = sizeof(s) - 1, .want = (w), .host = (h), .port = (p) }

static const struct req table[] = {
	/* Plain requests and the spellings of Host we accept. */
	R("GET /" H11 "Host: example.com\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET /" H11 "Host: example.com:8080\r\n" END, SK_HTTP_OK, "example.com", 8080),
	R("GET /" H11 "Host: Example.COM.\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET /" H11 "Host:   example.com \t\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET /" H11 "Host:example.com\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET /" H11 "hOsT: example.com\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET /" H11 "Host: a.example.:80\r\n" END, SK_HTTP_OK, "a.example", 80),
	R("GET /" H11 "Host: example.com:65535\r\n" END, SK_HTTP_OK, "example.com", 65535),
	R("get /x?y=1" H11 "Host: example.com\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("POST /" " HTTP/1.0\r\n" "Host: example.com\r\nContent-Length: 3\r\n" END "abc", SK_HTTP_OK,
	  "example.com", 0),
	R("GET /" H11 "X-Forwarded-Host: evil.example\r\nHost: good.example\r\n" END, SK_HTTP_OK,
	  "good.example", 0),
	R("GET /" H11 "X-Name: caf\xc3\xa9\r\nHost: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("GET /" H11 "X-Empty:\r\nHost: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("ABCDEFGHIJKLMNO /" H11 "Host: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	/* IP literals. */
	R("GET /" H11 "Host: [::1]:80\r\n" END, SK_HTTP_OK, "::1", 80),
	R("GET /" H11 "Host: [2001:db8::1]\r\n" END, SK_HTTP_OK, "2001:db8::1", 0),
	R("GET /" H11 "Host: 198.18.1.1:8080\r\n" END, SK_HTTP_OK, "198.18.1.1", 8080),
	R("GET /" H11 "Host: ::1\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: [::1\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: [::1]x\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: [fe80::1%25eth0]\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: [198.18.1.1]\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: [v1.fe]\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: []:80\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: 127.1\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: 010.0.0.1\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: 0x7f.0.0.1\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	/* Host values that are not one authority. */
	R("GET /" H11 "Host: user@example.com\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: good.example@evil.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:0\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:65536\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:80a\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:080\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: example.com:80:80\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: a.example, b.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: a.example/path\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: ex ample.com\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: caf\xc3\xa9.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: bad_name.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: *.example.com\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host: \r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET /" H11 "Host:\t \r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET / HTTP/1.0\r\nHost:\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	/* Missing and duplicate Host. */
	R("GET /" H11 END, SK_HTTP_NO_HOST, NULL, 0),
	R("GET /" H11 "X-Host: a.example\r\n" END, SK_HTTP_NO_HOST, NULL, 0),
	R("GET / HTTP/1.0\r\n" END, SK_HTTP_NO_HOST, NULL, 0),
	R("GET /" H11 "Host: a.example\r\nHost: b.example\r\n" END, SK_HTTP_DUP_HOST, NULL, 0),
	R("GET /" H11 "Host: a.example\r\nX: 1\r\nhost: a.example\r\n" END, SK_HTTP_DUP_HOST, NULL, 0),
	R("GET /" H11 "Host: a.example\r\nHost: \r\n" END, SK_HTTP_DUP_HOST, NULL, 0),
	/* Whitespace and line-ending tricks. */
	R("GET /" H11 "Host : example.com\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host\t: example.com\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 " Host: example.com\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: good.example\r\n evil.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "X-A: 1\r\n\t2\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 ": empty-name\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Ho(st: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET / HTTP/1.1\nHost: a.example\n\n", SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: a.example\nX: 1\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: a.example\rX: 1\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: a.example\r\n\n", SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "X: 1\n\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: a.example\r\n\r\r\n", SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: exa\0mple.com\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "Host: a.example\0\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "X: \x01\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /" H11 "X: \x7f\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	/* Request-line shape. */
	R("GET  /" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /  HTTP/1.1\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET\t/" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET/ HTTP/1.1\r\n" END, SK_HTTP_NOT_HTTP, NULL, 0),
	R("GET /\tHTTP/1.1\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET / HTTP/1.1 \r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET / HTTP/1.2\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET / HTTP/2.0\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET / http/1.1\r\nHost: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /caf\xc3\xa9" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET /a\0b" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("\r\nGET /" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("ABCDEFGHIJKLMNOP /" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", SK_HTTP_MALFORMED, NULL, 0),
	R("SSH-2.0/x\r\n", SK_HTTP_NOT_HTTP, NULL, 0),
	R("key:value\r\n", SK_HTTP_NOT_HTTP, NULL, 0),
	R("\x16\x03\x01\x02\x00\x01", SK_HTTP_NOT_HTTP, NULL, 0),
	R("HELO a.example\r\n", SK_HTTP_MALFORMED, NULL, 0),
	/* Target forms. */
	R("GET http://example.com/path" H11 "Host: example.com\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET http://example.com/path HTTP/1.0\r\n" END, SK_HTTP_OK, "example.com", 0),
	R("GET HTTP://Example.COM:80/" H11 "Host: example.com\r\n" END, SK_HTTP_OK, "example.com", 80),
	R("GET https://a.example/" H11 "Host: a.example:443\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("GET http://a.example?x=1" H11 "Host: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("GET http://a.example#frag" H11 "Host: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("GET http://[2001:db8::1]:8080/" H11 "Host: [2001:db8::1]:8080\r\n" END, SK_HTTP_OK, "2001:db8::1",
	  8080),
	R("GET http://good.example/" H11 "Host: evil.example\r\n" END, SK_HTTP_HOST_MISMATCH, "good.example", 0),
	R("GET http://a.example:8080/" H11 "Host: a.example\r\n" END, SK_HTTP_HOST_MISMATCH, "a.example", 8080),
	R("GET http://a.example/" H11 "Host: a.example:8080\r\n" END, SK_HTTP_HOST_MISMATCH, "a.example", 0),
	R("GET http://198.18.1.1/" H11 "Host: a.example\r\n" END, SK_HTTP_HOST_MISMATCH, "198.18.1.1", 0),
	R("GET http://a.example/" H11 "Host: \r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET http://user:pw@a.example/" H11 "Host: a.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET http://evil.example\\@good.example/" H11 END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET http:///x" H11 "Host: a.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET http://a.example%2f/" H11 END, SK_HTTP_BAD_HOST, NULL, 0),
	R("GET http://good.example/" H11 "Host: a\r\nHost: b\r\n" END, SK_HTTP_DUP_HOST, NULL, 0),
	R("GET ftp://a.example/" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET http:/a.example/" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("GET a.example:80" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	R("CONNECT a.example:443" H11 "Host: a.example:443\r\n" END, SK_HTTP_OK, "a.example", 443),
	R("CONNECT a.example:443" H11 "Host: a.example\r\n" END, SK_HTTP_OK, "a.example", 443),
	R("CONNECT [2001:db8::1]:443" H11 END, SK_HTTP_OK, "2001:db8::1", 443),
	R("CONNECT a.example:443" H11 "Host: a.example:8443\r\n" END, SK_HTTP_HOST_MISMATCH, "a.example", 443),
	R("CONNECT a.example:443" H11 "Host: b.example:443\r\n" END, SK_HTTP_HOST_MISMATCH, "a.example", 443),
	R("CONNECT a.example" H11 "Host: a.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("CONNECT http://a.example/" H11 "Host: a.example\r\n" END, SK_HTTP_BAD_HOST, NULL, 0),
	R("OPTIONS *" H11 "Host: a.example\r\n" END, SK_HTTP_OK, "a.example", 0),
	R("GET *" H11 "Host: a.example\r\n" END, SK_HTTP_MALFORMED, NULL, 0),
	/* h2c prior knowledge. */
	R("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", SK_HTTP_H2C_PRIOR, NULL, 0),
	R("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04\x00\x00\x00\x00\x00", SK_HTTP_H2C_PRIOR, NULL, 0),
	R("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", SK_HTTP_MALFORMED, NULL, 0),
};

static bool is_ip_text(const char *s)
{
	return strchr(s, ':') || (s[0] >= '0' && s[0] <= '9');
}

static void check_req(size_t i, const struct req *t, enum sk_http_result r, const struct sk_http_head *h)
{
	if (r != t->want)
		fail_msg("table[%zu] \"%.40s\": got %s, want %s", i, t->raw, sk_http_result_name(r),
			 sk_http_result_name(t->want));
	if (!t->host)
		return;
	if (is_ip_text(t->host)) {
		struct sk_addr want;
		assert_true(h->host_is_ip);
		assert_string_equal(h->host, "");
		assert_int_equal(sk_addr_parse(t->host, &want), 0);
		assert_true(sk_addr_equal(&h->ip, &want));
	} else {
		assert_false(h->host_is_ip);
		assert_string_equal(h->host, t->host);
	}
	assert_int_equal(h->port, t->port);
}

static void test_table_of_tricky_requests(void **state)
{
	(void)state;
	struct sk_http_head h;
	assert_true(sizeof(table) / sizeof(table[0]) >= 40);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		check_req(i, &table[i], parse(table[i].raw, table[i].len, &h), &h);
}

/* A verdict taken on a prefix (what arrived in the first segments) never changes with more bytes, and
 * a complete valid request needs all of its head. */
static void test_every_prefix_is_need_more_or_the_final_verdict(void **state)
{
	(void)state;
	struct sk_http_head h;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct req *t = &table[i];
		enum sk_http_result full = parse(t->raw, t->len, &h);
		size_t head_len = full == SK_HTTP_OK ? h.head_len : 0;
		for (size_t n = 0; n < t->len; n++) {
			enum sk_http_result r = parse(t->raw, n, &h);
			if (r != SK_HTTP_NEED_MORE && r != full)
				fail_msg("table[%zu] prefix %zu: %s, whole: %s", i, n, sk_http_result_name(r),
					 sk_http_result_name(full));
			if (full == SK_HTTP_OK && n < head_len && r != SK_HTTP_NEED_MORE)
				fail_msg("table[%zu]: proper prefix %zu of the head decided %s", i, n,
					 sk_http_result_name(r));
		}
	}
}

static void test_head_len_and_method(void **state)
{
	(void)state;
	struct sk_http_head h;
	static const char req[] = "POST /upload HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello";
	assert_result(parse(req, sizeof(req) - 1, &h), SK_HTTP_OK);
	assert_string_equal(h.method, "POST");
	assert_int_equal(h.head_len, sizeof(req) - 1 - 5);
	/* The body is not looked at, whatever it holds. */
	static const char req2[] = "GET / HTTP/1.1\r\nHost: a.example\r\n\r\nHost: b.example\r\n\r\n\0\n\r";
	assert_result(parse(req2, sizeof(req2) - 1, &h), SK_HTTP_OK);
	assert_int_equal(h.head_len, 35);
	assert_string_equal(h.host, "a.example");
	/* Only the head counts: a complete request line and headers without the blank line wait. */
	assert_result(parse(req2, 33, &h), SK_HTTP_NEED_MORE);
	assert_result(parse(req2, 34, &h), SK_HTTP_NEED_MORE);
	assert_result(parse("", 0, &h), SK_HTTP_NEED_MORE);
	assert_result(parse("P", 1, &h), SK_HTTP_NEED_MORE);
	assert_result(parse("PRI * HTTP/2.0\r\n\r\n", 18, &h), SK_HTTP_NEED_MORE);
}

/* A 16 KiB head of many short headers parses in one pass (linear, no per-line rescans). */
static void test_large_head_with_many_headers(void **state)
{
	(void)state;
	struct sk_http_head h;
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += (size_t)snprintf(buf + n, cap - n, "GET / HTTP/1.1\r\n");
	while (n + 64 < cap)
		n += (size_t)snprintf(buf + n, cap - n, "X-H%zu: v\r\n", n);
	n += (size_t)snprintf(buf + n, cap - n, "Host: last.example\r\n\r\n");
	assert_result(parse(buf, n, &h), SK_HTTP_OK);
	assert_string_equal(h.host, "last.example");
	assert_int_equal(h.head_len, n);
	free(buf);
}

/* What the parser records for framing (judged by http_track.c, never by the parser's own verdict). */
struct framing {
	const char *raw;
	size_t len;
	uint64_t cl;
	enum sk_http_result want;
	unsigned cl_count;
	unsigned te_count;
	unsigned upgrade;
	uint8_t minor;
	bool cl_bad;
	bool te_chunked;
	bool h2s;
};

#define F(s, w, ...) { .raw = (s), .len = sizeof(s) - 1, .want = (w), __VA_ARGS__ }
#define HA "Host: a.example\r\n"
#define WS SK_HTTP_UPGRADE_WEBSOCKET
#define H2C SK_HTTP_UPGRADE_H2C
#define OTHER SK_HTTP_UPGRADE_OTHER

static const struct framing framings[] = {
	F("GET /" H11 HA END, SK_HTTP_OK, .minor = 1),
	F("GET / HTTP/1.0\r\n" HA END, SK_HTTP_OK, .minor = 0),
	/* Content-Length: 1*DIGIT below 2^63, nothing else. */
	F("POST /" H11 HA "Content-Length: 42\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl = 42),
	F("POST /" H11 HA "content-LENGTH:\t007 \r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl = 7),
	F("POST /" H11 HA "Content-Length: 0\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl = 0),
	F("POST /" H11 HA "Content-Length: 9223372036854775807\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1,
	  .cl = UINT64_C(9223372036854775807)),
	F("POST /" H11 HA "Content-Length: 9223372036854775808\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1,
	  .cl_bad = true),
	F("POST /" H11 HA "Content-Length: 18446744073709551616\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1,
	  .cl_bad = true),
	F("POST /" H11 HA "Content-Length: +5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: -5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: 5, 5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: 5 5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: 5.0\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: \xd9\xa5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1,
	  .cl_bad = true),
	F("POST /" H11 HA "Content-Length:\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content_Length: 5\r\n" END, SK_HTTP_OK, .minor = 1, .cl_count = 1, .cl_bad = true),
	F("POST /" H11 HA "Content-Length: 5\r\nContent-Length: 5\r\n" END, SK_HTTP_OK, .minor = 1,
	  .cl_count = 2, .cl = 5),
	F("POST /" H11 HA "Content-Lengthx: 5\r\nX-Content-Length: 5\r\n" END, SK_HTTP_OK, .minor = 1),
	/* Transfer-Encoding: chunked only when the whole value of the only TE line is that one coding. */
	F("POST /" H11 HA "Transfer-Encoding: chunked\r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1,
	  .te_chunked = true),
	F("POST /" H11 HA "transfer-encoding:\tCHUNKED\t \r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1,
	  .te_chunked = true),
	F("POST /" H11 HA "Transfer-Encoding: xchunked\r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1),
	F("POST /" H11 HA "Transfer-Encoding: chunked, identity\r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1),
	F("POST /" H11 HA "Transfer-Encoding: gzip, chunked\r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1),
	F("POST /" H11 HA "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n" END, SK_HTTP_OK,
	  .minor = 1, .te_count = 2),
	F("POST /" H11 HA "Transfer_Encoding: chunked\r\n" END, SK_HTTP_OK, .minor = 1, .te_count = 1),
	F("POST / HTTP/1.0\r\n" HA "Transfer-Encoding: chunked\r\n" END, SK_HTTP_OK, .minor = 0, .te_count = 1,
	  .te_chunked = true),
	F("POST /" H11 HA "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n" END, SK_HTTP_OK, .minor = 1,
	  .te_count = 1, .te_chunked = true, .cl_count = 1, .cl = 3),
	/* Upgrade tokens and HTTP2-Settings. */
	F("GET /" H11 HA "Upgrade: websocket\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = WS),
	F("GET /" H11 HA "upgrade: WebSocket\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = WS),
	F("GET /" H11 HA "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n" END, SK_HTTP_OK, .minor = 1,
	  .upgrade = H2C, .h2s = true),
	F("GET /" H11 HA "http2-settings: x\r\n" END, SK_HTTP_OK, .minor = 1, .h2s = true),
	F("GET /" H11 HA "Upgrade: websocket ,\th2c\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = WS | H2C),
	F("GET /" H11 HA "Upgrade: websocket\r\nUpgrade: foo\r\n" END, SK_HTTP_OK, .minor = 1,
	  .upgrade = WS | OTHER),
	F("GET /" H11 HA "Upgrade: websocket/13\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = OTHER),
	F("GET /" H11 HA "Upgrade: websocket,\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = WS | OTHER),
	F("GET /" H11 HA "Upgrade: websocket;x\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = WS | OTHER),
	F("GET /" H11 HA "Upgrade:\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = OTHER),
	F("GET /" H11 HA "Upgrade: TLS/1.0, HTTP/1.1\r\n" END, SK_HTTP_OK, .minor = 1, .upgrade = OTHER),
	/* Recorded as far as parsed, whatever the verdict. */
	F("POST /" H11 "Content-Length: 5\r\n" END, SK_HTTP_NO_HOST, .minor = 1, .cl_count = 1, .cl = 5),
	F("POST /" H11 HA HA "Transfer-Encoding: chunked\r\n" END, SK_HTTP_DUP_HOST, .minor = 1, .te_count = 1,
	  .te_chunked = true),
	F("POST /" H11 HA "Content-Length: 5\r\nTransfer-Encoding : chunked\r\n" END, SK_HTTP_MALFORMED,
	  .minor = 1, .cl_count = 1, .cl = 5),
};

static void test_framing_fields_are_recorded_strictly(void **state)
{
	(void)state;
	struct sk_http_head h;
	for (size_t i = 0; i < sizeof(framings) / sizeof(framings[0]); i++) {
		const struct framing *f = &framings[i];
		enum sk_http_result r = parse(f->raw, f->len, &h);
		if (r != f->want || h.version_minor != f->minor || h.cl_count != f->cl_count ||
		    h.cl_bad != f->cl_bad || (!f->cl_bad && h.content_length != f->cl) ||
		    h.te_count != f->te_count || h.te_chunked != f->te_chunked || h.upgrade != f->upgrade ||
		    h.http2_settings != f->h2s)
			fail_msg("framings[%zu] \"%.60s\": %s minor %u cl %u/%d/%llu te %u/%d upgrade %#x h2s %d", i,
				 f->raw, sk_http_result_name(r), h.version_minor, h.cl_count, h.cl_bad,
				 (unsigned long long)h.content_length, h.te_count, h.te_chunked, h.upgrade,
				 h.http2_settings);
	}
}

static void test_result_names(void **state)
{
	(void)state;
	assert_string_equal(sk_http_result_name(SK_HTTP_OK), "ok");
	assert_string_equal(sk_http_result_name(SK_HTTP_H2C_PRIOR), "h2c_prior");
	assert_string_equal(sk_http_result_name(SK_HTTP_HOST_MISMATCH), "host_mismatch");
	assert_string_equal(sk_http_result_name((enum sk_http_result)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_of_tricky_requests),
		cmocka_unit_test(test_every_prefix_is_need_more_or_the_final_verdict),
		cmocka_unit_test(test_head_len_and_method),
		cmocka_unit_test(test_large_head_with_many_headers),
		cmocka_unit_test(test_framing_fields_are_recorded_strictly),
		cmocka_unit_test(test_result_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
