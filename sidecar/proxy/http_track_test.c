/* sidecar/proxy/http_track_test.c — the request-boundary tracker driven the way the relay drives it: bytes
 * arrive in pieces, the caller drops what HEAD/FORWARD consumed and calls again. Every stream is fed
 * whole, cut at every point, and byte by byte; the trace of what the tracker said (heads with their
 * host, forwarded bytes merged into runs, holds, the final verdict) must be the same each time. Every
 * call gets an exactly-sized heap copy, so ASan catches a read past len. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/proxy/http_track.h"

#define TRACE_MAX 4096

struct trace {
	char s[TRACE_MAX];
	size_t used;
	size_t fwd_run;        /* FORWARD bytes not yet written into s (merged run) */
	size_t forwarded;      /* HEAD + FORWARD + (after OPAQUE) every later byte */
	unsigned heads;
	const char *reason;    /* last ERROR's */
	enum sk_track_result last;
};

struct opts {
	bool switched;         /* the answer to a websocket upgrade */
	size_t max_line;       /* 0: the default */
};

static void emit(struct trace *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct trace *tr, const char *fmt, ...)
{
	va_list ap;
	if (tr->fwd_run) {
		size_t run = tr->fwd_run;
		tr->fwd_run = 0;
		emit(tr, "F%zu ", run);
	}
	va_start(ap, fmt);
	int w = vsnprintf(tr->s + tr->used, sizeof(tr->s) - tr->used, fmt, ap);
	va_end(ap);
	assert_true(w >= 0 && (size_t)w < sizeof(tr->s) - tr->used);
	tr->used += (size_t)w;
}

static enum sk_track_result call(struct sk_http_track *t, const uint8_t *p, size_t len, size_t *n,
				 struct sk_http_head *h, const char **why)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, p, len);
	enum sk_track_result r = sk_http_track_next(t, len ? copy : copy + 1, len, n, h, why);
	free(copy);
	if (r == SK_TRACK_FORWARD || r == SK_TRACK_HEAD) {
		if (*n == 0 || *n > len)
			fail_msg("%s with n=%zu of %zu", sk_track_result_name(r), *n, len);
	} else {
		assert_int_equal(*n, 0);
	}
	assert_true((r == SK_TRACK_ERROR) == (*why != NULL));
	return r;
}

/* Feeds s[0..len) in pieces ending at cuts[0] < cuts[1] < ... (then the rest), as the relay would. */
static void run(const char *s, size_t len, const size_t *cuts, size_t ncuts, const struct opts *o,
		struct trace *tr)
{
	struct sk_http_track t;
	struct sk_http_head h;
	const uint8_t *b = (const uint8_t *)s;
	size_t off = 0, avail = 0, n;
	const char *why;
	bool done = false;

	memset(tr, 0, sizeof(*tr));
	sk_http_track_init(&t);
	if (o && o->max_line)
		t.max_line = o->max_line;
	for (size_t piece = 0; piece <= ncuts && !done; piece++) {
		avail = piece < ncuts ? cuts[piece] : len;
		for (;;) {
			enum sk_track_result r = call(&t, b + off, avail - off, &n, &h, &why);
			tr->last = r;
			if (r == SK_TRACK_HEAD) {
				tr->heads++;
				emit(tr, "H%zu:%s ", n, h.host_is_ip ? "ip" : h.host);
			} else if (r == SK_TRACK_FORWARD) {
				tr->fwd_run += n;
			} else if (r == SK_TRACK_HOLD) {
				emit(tr, "W ");
				sk_http_track_upgrade_result(&t, o && o->switched);
				continue;
			} else if (r == SK_TRACK_OPAQUE) {
				emit(tr, "O ");
				tr->forwarded += len - off;
				done = true;
				break;
			} else if (r == SK_TRACK_ERROR) {
				emit(tr, "E:%s ", why);
				tr->reason = why;
				/* Failed stays failed, whatever comes next. */
				const char *again;
				assert_int_equal(call(&t, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, &n, &h, &again),
						 SK_TRACK_ERROR);
				assert_string_equal(again, why);
				done = true;
				break;
			} else {
				break;   /* NEED_MORE: wait for the next piece */
			}
			off += n;
			tr->forwarded += n;
		}
	}
	emit(tr, "end:%s", sk_track_result_name(tr->last));
}

static void run_whole(const char *s, size_t len, const struct opts *o, struct trace *tr)
{
	run(s, len, NULL, 0, o, tr);
}

/* The same trace whether fed whole, cut once anywhere, cut in three at a few places, or byte by byte. */
static void check_split_independent(const char *name, const char *s, size_t len, const struct opts *o,
				    struct trace *whole)
{
	struct trace tr;
	size_t cuts[3];

	run_whole(s, len, o, whole);
	for (size_t k = 0; k <= len; k++) {
		cuts[0] = k;
		run(s, len, cuts, 1, o, &tr);
		if (strcmp(tr.s, whole->s) != 0)
			fail_msg("%s: cut at %zu:\n  %s\nwhole:\n  %s", name, k, tr.s, whole->s);
	}
	for (size_t i = 1; i < len; i += 7)
		for (size_t j = i; j < len; j += 3) {
			cuts[0] = i;
			cuts[1] = j;
			run(s, len, cuts, 2, o, &tr);
			if (strcmp(tr.s, whole->s) != 0)
				fail_msg("%s: cuts at %zu,%zu:\n  %s\nwhole:\n  %s", name, i, j, tr.s, whole->s);
		}
	size_t *every = malloc((len ? len : 1) * sizeof(*every));
	assert_non_null(every);
	for (size_t k = 0; k < len; k++)
		every[k] = k + 1;
	run(s, len, every, len, o, &tr);
	free(every);
	if (strcmp(tr.s, whole->s) != 0)
		fail_msg("%s: byte by byte:\n  %s\nwhole:\n  %s", name, tr.s, whole->s);
}

#define H11 " HTTP/1.1\r\n"
#define HOST "Host: a.example\r\n"
#define POST "POST /" H11 HOST
#define GET2 "GET /next" H11 "Host: b.example\r\n\r\n"
#define TE "Transfer-Encoding: chunked\r\n"

struct shape {
	const char *name;
	const char *raw;
	size_t len;
	unsigned heads;        /* HEAD results before the end or the error */
	const char *reason;    /* NULL: no error, and every byte is forwarded */
};

#define S(n, s, h, w) { .name = (n), .raw = (s), .len = sizeof(s) - 1, .heads = (h), .reason = (w) }

static const struct shape shapes[] = {
	/* Well-framed streams. */
	S("get", "GET /" H11 HOST "\r\n", 1, NULL),
	S("pipelined gets", "GET /" H11 HOST "\r\n" GET2, 2, NULL),
	S("content-length body then get", POST "Content-Length: 5\r\n\r\nhello" GET2, 2, NULL),
	S("content-length 0", POST "Content-Length: 0\r\n\r\n" GET2, 2, NULL),
	S("content-length leading zeros", POST "Content-Length: 005\r\n\r\nhello" GET2, 2, NULL),
	S("content-length with ows", POST "Content-Length: \t5 \r\n\r\nhello" GET2, 2, NULL),
	S("a request inside a body is data", POST "Content-Length: 39\r\n\r\n" GET2 GET2, 2, NULL),
	S("chunked", POST TE "\r\n5\r\nhello\r\n0\r\n\r\n" GET2, 2, NULL),
	S("chunked upper hex and zero padding", POST TE "\r\n000A\r\n0123456789\r\n00\r\n\r\n" GET2, 2, NULL),
	S("chunked te value case-insensitive", POST "Transfer-Encoding: ChUnKeD\r\n\r\n0\r\n\r\n" GET2, 2, NULL),
	S("chunked te tab ows (valid)", POST "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n" GET2, 2, NULL),
	S("chunked te trailing ows", POST "Transfer-Encoding: chunked \t\r\n\r\n0\r\n\r\n" GET2, 2, NULL),
	S("chunk extension", POST TE "\r\n5;name=value\r\nhello\r\n0;last\r\n\r\n" GET2, 2, NULL),
	S("chunk extension quoted with space", POST TE "\r\n5;a=\"b c\";d\t=e\r\nhello\r\n0\r\n\r\n" GET2, 2, NULL),
	S("a request inside chunk data is data", POST TE "\r\n27\r\n" GET2 "\r\n0\r\n\r\n" GET2, 2, NULL),
	S("trailers", POST TE "\r\n1\r\nx\r\n0\r\nX-Sum: abc\r\nX-Empty:\r\nHosts: x\r\n\r\n" GET2, 2, NULL),
	S("largest chunk size", POST TE "\r\n7fffffffffffffff\r\nsome", 1, NULL),
	S("largest content-length", POST "Content-Length: 9223372036854775807\r\n\r\nsome", 1, NULL),
	S("http/1.0 with content-length", "POST / HTTP/1.0\r\n" HOST "Content-Length: 2\r\n\r\nhi" GET2, 2, NULL),

	/* CL.TE and TE.CL: both framings present. */
	S("CL.TE", POST "Content-Length: 13\r\n" TE "\r\n0\r\n\r\nSMUGGLED", 0, "http_te_cl"),
	S("TE.CL", POST TE "Content-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", 0, "http_te_cl"),
	S("TE.CL with odd te", POST "Transfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\n", 0, "http_te_cl"),
	S("CL.TE on a second request", "GET /" H11 HOST "\r\n" POST "Content-Length: 6\r\n" TE "\r\n0\r\n\r\nX", 1,
	  "http_te_cl"),

	/* TE.TE: spellings one side reads as chunked and the other not. */
	S("te xchunked", POST "Transfer-Encoding: xchunked\r\n\r\n", 0, "http_bad_te"),
	S("te chunkedx", POST "Transfer-Encoding: chunkedx\r\n\r\n", 0, "http_bad_te"),
	S("te space before colon", POST "Transfer-Encoding : chunked\r\n\r\n", 0, "http_malformed"),
	S("te leading space in name", POST " Transfer-Encoding: chunked\r\n\r\n", 0, "http_malformed"),
	S("te vertical tab", POST "Transfer-Encoding:\x0b" "chunked\r\n\r\n", 0, "http_malformed"),
	S("te chunked, identity", POST "Transfer-Encoding: chunked, identity\r\n\r\n", 0, "http_bad_te"),
	S("te identity", POST "Transfer-Encoding: identity\r\n\r\n", 0, "http_bad_te"),
	S("te gzip, chunked", POST "Transfer-Encoding: gzip, chunked\r\n\r\n", 0, "http_bad_te"),
	S("te chunked, chunked", POST "Transfer-Encoding: chunked, chunked\r\n\r\n", 0, "http_bad_te"),
	S("te quoted", POST "Transfer-Encoding: \"chunked\"\r\n\r\n", 0, "http_bad_te"),
	S("te with parameter", POST "Transfer-Encoding: chunked;q=1\r\n\r\n", 0, "http_bad_te"),
	S("te empty", POST "Transfer-Encoding:\r\n\r\n", 0, "http_bad_te"),
	S("te duplicate", POST TE TE "\r\n0\r\n\r\n", 0, "http_bad_te"),
	S("te duplicate with junk", POST TE "Transfer-Encoding: x\r\n\r\n0\r\n\r\n", 0, "http_bad_te"),
	S("te underscore", POST "Transfer_Encoding: chunked\r\n\r\n0\r\n\r\n", 0, "http_bad_te"),
	S("te obs-fold", POST "Transfer-Encoding:\r\n chunked\r\n\r\n", 0, "http_malformed"),
	S("te obs-fold after value", POST TE " identity\r\n\r\n", 0, "http_malformed"),
	S("te in http/1.0", "POST / HTTP/1.0\r\n" HOST TE "\r\n0\r\n\r\n", 0, "http_bad_te"),
	S("te bare lf", POST "X: 1\nTransfer-Encoding: chunked\r\n\r\n", 0, "http_malformed"),
	S("te nul", POST "Transfer-Encoding: chunked\0\r\n\r\n", 0, "http_malformed"),

	/* Content-Length spellings. */
	S("cl plus sign", POST "Content-Length: +5\r\n\r\nhello", 0, "http_bad_cl"),
	S("cl list", POST "Content-Length: 5, 5\r\n\r\nhello", 0, "http_bad_cl"),
	S("cl space inside", POST "Content-Length: 5 5\r\n\r\nhello", 0, "http_bad_cl"),
	S("cl negative", POST "Content-Length: -1\r\n\r\n", 0, "http_bad_cl"),
	S("cl hex", POST "Content-Length: 0x5\r\n\r\nhello", 0, "http_bad_cl"),
	S("cl empty", POST "Content-Length:\r\n\r\n", 0, "http_bad_cl"),
	S("cl 2^63", POST "Content-Length: 9223372036854775808\r\n\r\n", 0, "http_bad_cl"),
	S("cl huge", POST "Content-Length: 99999999999999999999999\r\n\r\n", 0, "http_bad_cl"),
	S("cl underscore", POST "Content_Length: 5\r\n\r\nhello", 0, "http_bad_cl"),
	S("cl duplicate equal", POST "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 0, "http_dup_cl"),
	S("cl duplicate different", POST "Content-Length: 5\r\ncontent-length: 6\r\n\r\nhello!", 0, "http_dup_cl"),
	S("cl space before colon", POST "Content-Length : 5\r\n\r\nhello", 0, "http_malformed"),
	S("cl obs-fold", POST "Content-Length:\r\n 5\r\n\r\nhello", 0, "http_malformed"),

	/* Chunk-size lines. */
	S("chunk size 17 hex digits", POST TE "\r\n00000000000000005\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size 2^63", POST TE "\r\n8000000000000000\r\n", 1, "http_bad_chunk"),
	S("chunk size ffffffffffffffff", POST TE "\r\nffffffffffffffff\r\n", 1, "http_bad_chunk"),
	S("chunk size 0x prefix", POST TE "\r\n0x5\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size negative", POST TE "\r\n-5\r\n", 1, "http_bad_chunk"),
	S("chunk size empty", POST TE "\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size space before ext", POST TE "\r\n5 ;x\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size trailing space", POST TE "\r\n5 \r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size leading space", POST TE "\r\n 5\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size bare lf", POST TE "\r\n5\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk size bare cr", POST TE "\r\n5\rhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk ext bare lf", POST TE "\r\n5;x\nGET /x HTTP/1.1\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk ext bare cr", POST TE "\r\n5;x\rhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk ext nul", POST TE "\r\n5;x\0y\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk ext obs-text", POST TE "\r\n5;x=\xff\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("last chunk bare lf", POST TE "\r\n0\n\r\n", 1, "http_bad_chunk"),
	S("chunk data then junk", POST TE "\r\n5\r\nhelloX\r\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk data then bare lf", POST TE "\r\n5\r\nhello\n0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk data then bare cr", POST TE "\r\n5\r\nhello\r0\r\n\r\n", 1, "http_bad_chunk"),
	S("chunk data shorter than size", POST TE "\r\n3\r\nhello\r\n0\r\n\r\n", 1, "http_bad_chunk"),

	/* Trailers. */
	S("trailer obs-fold", POST TE "\r\n0\r\nX: a\r\n b\r\n\r\n", 1, "http_bad_chunk"),
	S("trailer bare lf", POST TE "\r\n0\r\nX: a\n\r\n", 1, "http_bad_chunk"),
	S("trailer end bare lf", POST TE "\r\n0\r\n\n", 1, "http_bad_chunk"),
	S("trailer end bare cr", POST TE "\r\n0\r\n\rGET", 1, "http_bad_chunk"),
	S("trailer space before colon", POST TE "\r\n0\r\nX : a\r\n\r\n", 1, "http_bad_chunk"),
	S("trailer no colon", POST TE "\r\n0\r\nGET / HTTP/1.1\r\n\r\n", 1, "http_bad_chunk"),
	S("trailer ctl", POST TE "\r\n0\r\nX: a\x01\r\n\r\n", 1, "http_bad_chunk"),
	S("trailer content-length", POST TE "\r\n0\r\nContent-Length: 5\r\n\r\nhello", 1, "http_bad_chunk"),
	S("trailer transfer-encoding", POST TE "\r\n0\r\ntransfer-encoding: chunked\r\n\r\n", 1, "http_bad_chunk"),
	S("trailer host", POST TE "\r\n0\r\nHost: evil.example\r\n\r\n", 1, "http_bad_chunk"),

	/* Heads after the first. */
	S("second head bare lf", "GET /" H11 HOST "\r\nGET / HTTP/1.1\nHost: b\n\n", 1, "http_malformed"),
	S("second head not http", "GET /" H11 HOST "\r\n\x16\x03\x01\x00\x05hello", 1, "http_malformed"),
	S("empty line between requests", "GET /" H11 HOST "\r\n\r\n" GET2, 1, "http_malformed"),
	S("second head no host", "GET /" H11 HOST "\r\nGET / HTTP/1.1\r\n\r\n", 1, "http_no_host"),
	S("second head dup host", "GET /" H11 HOST "\r\nGET /" H11 HOST HOST "\r\n", 1, "http_dup_host"),
	S("second head bad host", "GET /" H11 HOST "\r\nGET /" H11 "Host: a@b\r\n\r\n", 1, "http_bad_host"),
	S("second head host mismatch", "GET /" H11 HOST "\r\nGET http://b.example/" H11 HOST "\r\n", 1,
	  "http_host_mismatch"),

	/* Tunnels and protocol switches. */
	S("connect", "CONNECT a.example:443" H11 "Host: a.example:443\r\n\r\n", 0, "http_connect"),
	S("connect after a get", "GET /" H11 HOST "\r\nCONNECT b.example:443" H11 "\r\n", 1, "http_connect"),
	S("connect without port", "CONNECT a.example" H11 HOST "\r\n", 0, "http_connect"),
	S("h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0", 0, "http_h2c_prior"),
	S("h2c preface after a get", "GET /" H11 HOST "\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1, "http_h2c_prior"),
	S("upgrade h2c", "GET /" H11 HOST "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
	  "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", 0, "http_h2c_upgrade"),
	S("upgrade h2c alone", "GET /" H11 HOST "Upgrade: H2C\r\n\r\n", 0, "http_h2c_upgrade"),
	S("http2-settings alone", "GET /" H11 HOST "HTTP2-Settings: AAMAAABkAAQ\r\n\r\n", 0, "http_h2c_upgrade"),
	S("upgrade websocket and h2c", "GET /" H11 HOST "Upgrade: websocket, h2c\r\n\r\n", 0, "http_h2c_upgrade"),
	S("upgrade other", "GET /" H11 HOST "Upgrade: TLS/1.0\r\n\r\n", 0, "http_upgrade_unsupported"),
	S("upgrade websocket and other", "GET /" H11 HOST "Upgrade: websocket, foo\r\n\r\n", 0,
	  "http_upgrade_unsupported"),
	S("upgrade websocket versioned", "GET /" H11 HOST "Upgrade: websocket/13\r\n\r\n", 0,
	  "http_upgrade_unsupported"),
	S("upgrade empty", "GET /" H11 HOST "Upgrade:\r\n\r\n", 0, "http_upgrade_unsupported"),
	S("upgrade websocket post", POST "Upgrade: websocket\r\nContent-Length: 0\r\n\r\n", 0,
	  "http_upgrade_unsupported"),
	S("upgrade websocket with body", "GET /" H11 HOST "Upgrade: websocket\r\nContent-Length: 5\r\n\r\nhello", 0,
	  "http_upgrade_unsupported"),
	S("upgrade websocket chunked", "GET /" H11 HOST "Upgrade: websocket\r\n" TE "\r\n0\r\n\r\n", 0,
	  "http_upgrade_unsupported"),
	S("upgrade websocket not first", "GET /" H11 HOST "\r\nGET /ws" H11 HOST "Upgrade: websocket\r\n\r\n", 1,
	  "http_upgrade_not_first"),
};

static void test_smuggling_shapes_fail_closed_whatever_the_split(void **state)
{
	(void)state;
	struct trace whole;
	assert_true(sizeof(shapes) / sizeof(shapes[0]) >= 60);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *sh = &shapes[i];
		check_split_independent(sh->name, sh->raw, sh->len, NULL, &whole);
		if (whole.heads != sh->heads)
			fail_msg("%s: %u heads, want %u (%s)", sh->name, whole.heads, sh->heads, whole.s);
		if (!sh->reason) {
			if (whole.reason || whole.forwarded != sh->len)
				fail_msg("%s: %s, forwarded %zu of %zu", sh->name, whole.s, whole.forwarded, sh->len);
		} else if (!whole.reason || strcmp(whole.reason, sh->reason) != 0) {
			fail_msg("%s: got %s, want %s", sh->name, whole.s, sh->reason);
		}
	}
}

static void test_pipelined_heads_each_report_their_host(void **state)
{
	(void)state;
	static const char s[] = "GET /" H11 HOST "\r\n" "GET /" H11 "Host: evil.example\r\n\r\n";
	struct trace tr;
	run_whole(s, sizeof(s) - 1, NULL, &tr);
	assert_string_equal(tr.s, "H35:a.example H38:evil.example end:need_more");
}

static void test_body_is_forwarded_in_pieces_as_it_arrives(void **state)
{
	(void)state;
	static const char head[] = POST "Content-Length: 10\r\n\r\n";
	struct sk_http_track t;
	struct sk_http_head h;
	const char *why;
	size_t n;

	sk_http_track_init(&t);
	assert_int_equal(call(&t, (const uint8_t *)head, sizeof(head) - 1, &n, &h, &why), SK_TRACK_HEAD);
	assert_int_equal(n, sizeof(head) - 1);
	assert_int_equal(h.content_length, 10);
	assert_int_equal(t.st, SK_TS_BODY);
	assert_int_equal(call(&t, (const uint8_t *)"abc", 0, &n, &h, &why), SK_TRACK_NEED_MORE);
	assert_int_equal(call(&t, (const uint8_t *)"abc", 3, &n, &h, &why), SK_TRACK_FORWARD);
	assert_int_equal(n, 3);
	assert_int_equal(t.remaining, 7);
	/* More than the body: only the body is forwarded, the rest is the next head. */
	assert_int_equal(call(&t, (const uint8_t *)"defghijGET", 10, &n, &h, &why), SK_TRACK_FORWARD);
	assert_int_equal(n, 7);
	assert_int_equal(t.st, SK_TS_HEAD);
	assert_int_equal(call(&t, (const uint8_t *)"GET", 3, &n, &h, &why), SK_TRACK_NEED_MORE);
	assert_int_equal(t.requests, 1);
}

static void test_chunked_body_forwards_lines_and_data_separately(void **state)
{
	(void)state;
	static const char s[] = POST TE "\r\n5;e=1\r\nhello\r\n0\r\nX: y\r\n\r\n";
	struct sk_http_track t;
	struct sk_http_head h;
	const char *why;
	size_t n, off = 0;
	static const struct { size_t n; enum sk_track_result r; enum sk_track_state after; } want[] = {
		{ sizeof(POST TE "\r\n") - 1, SK_TRACK_HEAD, SK_TS_CHUNK_SIZE },
		{ 7, SK_TRACK_FORWARD, SK_TS_CHUNK_DATA },
		{ 5, SK_TRACK_FORWARD, SK_TS_CHUNK_CRLF },
		{ 2, SK_TRACK_FORWARD, SK_TS_CHUNK_SIZE },
		{ 3, SK_TRACK_FORWARD, SK_TS_TRAILERS },
		{ 6, SK_TRACK_FORWARD, SK_TS_TRAILERS },
		{ 2, SK_TRACK_FORWARD, SK_TS_HEAD },
		{ 0, SK_TRACK_NEED_MORE, SK_TS_HEAD },
	};

	sk_http_track_init(&t);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		enum sk_track_result r = call(&t, (const uint8_t *)s + off, sizeof(s) - 1 - off, &n, &h, &why);
		if (r != want[i].r || n != want[i].n || t.st != want[i].after)
			fail_msg("step %zu: %s %zu state %d", i, sk_track_result_name(r), n, (int)t.st);
		off += n;
	}
	assert_int_equal(off, sizeof(s) - 1);
}

/* The lines the tracker must see whole are bounded: past max_line it fails at once, without waiting for
 * a CRLF that may never come. */
static void test_long_chunk_and_trailer_lines_fail_at_max_line(void **state)
{
	(void)state;
	struct opts o = { .max_line = 8 };
	struct trace tr;
	static const char ok[] = POST TE "\r\n1;abcdef\r\nx\r\n0\r\nX: 3456\r\n\r\n";
	static const char long_ext[] = POST TE "\r\n1;abcdefg\r\nx\r\n0\r\n\r\n";
	static const char long_trailer[] = POST TE "\r\n0\r\nX: 345678\r\n\r\n";
	static const char long_name[] = POST TE "\r\n0\r\nXXXXXXXXX";

	check_split_independent("8 bytes", ok, sizeof(ok) - 1, &o, &tr);
	assert_null(tr.reason);
	assert_int_equal(tr.forwarded, sizeof(ok) - 1);
	check_split_independent("9 bytes ext", long_ext, sizeof(long_ext) - 1, &o, &tr);
	assert_string_equal(tr.reason, "http_bad_chunk");
	check_split_independent("9 bytes trailer", long_trailer, sizeof(long_trailer) - 1, &o, &tr);
	assert_string_equal(tr.reason, "http_bad_chunk");
	check_split_independent("9 bytes name", long_name, sizeof(long_name) - 1, &o, &tr);
	assert_string_equal(tr.reason, "http_bad_chunk");

	/* The default: a chunk extension that never ends is refused once past 4096 bytes. */
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += (size_t)snprintf(buf, cap, POST TE "\r\n1;");
	size_t ext_start = n;
	while (n < cap)
		buf[n++] = 'a';
	/* "1;" and 4094 more: 4096 bytes of line so far, still acceptable; one more is not. */
	run_whole(buf, ext_start + 4094, NULL, &tr);
	assert_null(tr.reason);
	assert_int_equal(tr.last, SK_TRACK_NEED_MORE);
	run_whole(buf, ext_start + 4095, NULL, &tr);
	assert_string_equal(tr.reason, "http_bad_chunk");
	run_whole(buf, cap, NULL, &tr);
	assert_string_equal(tr.reason, "http_bad_chunk");
	free(buf);
}

#define WS_REQ "GET /chat" H11 HOST "Upgrade: websocket\r\nConnection: Upgrade\r\n" \
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

static void test_websocket_accepted_becomes_opaque(void **state)
{
	(void)state;
	/* After the switch, frames (binary, with what looks like requests and bare LFs) are not parsed. */
	static const char s[] = WS_REQ "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58" "CONNECT x:1 HTTP/1.1\n\n";
	struct opts o = { .switched = true };
	struct trace tr;

	check_split_independent("websocket accepted", s, sizeof(s) - 1, &o, &tr);
	assert_string_equal(tr.s, "H152:a.example W O end:opaque");
	assert_int_equal(tr.forwarded, sizeof(s) - 1);
	assert_int_equal(sizeof(WS_REQ) - 1, 152);
}

static void test_websocket_declined_stays_http(void **state)
{
	(void)state;
	static const char s[] = WS_REQ GET2;
	static const char bad[] = WS_REQ "GET / HTTP/1.1\nHost: b\n\n";
	struct opts o = { .switched = false };
	struct trace tr;

	check_split_independent("websocket declined", s, sizeof(s) - 1, &o, &tr);
	assert_string_equal(tr.s, "H152:a.example W H39:b.example end:need_more");
	assert_int_equal(tr.forwarded, sizeof(s) - 1);
	check_split_independent("websocket declined then junk", bad, sizeof(bad) - 1, &o, &tr);
	assert_string_equal(tr.reason, "http_malformed");
}

static void test_websocket_holds_until_the_answer(void **state)
{
	(void)state;
	static const char s[] = WS_REQ "\x81\x00";
	struct sk_http_track t;
	struct sk_http_head h;
	const char *why;
	size_t n;

	sk_http_track_init(&t);
	assert_int_equal(call(&t, (const uint8_t *)s, sizeof(s) - 1, &n, &h, &why), SK_TRACK_HEAD);
	assert_int_equal(n, sizeof(WS_REQ) - 1);
	assert_int_equal(h.upgrade, SK_HTTP_UPGRADE_WEBSOCKET);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(call(&t, (const uint8_t *)s + n, 2, &n, &h, &why), SK_TRACK_HOLD);
		assert_int_equal(call(&t, (const uint8_t *)s, 0, &n, &h, &why), SK_TRACK_HOLD);
	}
	sk_http_track_upgrade_result(&t, true);
	assert_int_equal(call(&t, (const uint8_t *)"\x81\x00", 2, &n, &h, &why), SK_TRACK_OPAQUE);
	assert_int_equal(call(&t, (const uint8_t *)"", 0, &n, &h, &why), SK_TRACK_OPAQUE);
	/* A late or repeated answer changes nothing. */
	sk_http_track_upgrade_result(&t, false);
	assert_int_equal(call(&t, (const uint8_t *)"x", 1, &n, &h, &why), SK_TRACK_OPAQUE);
}

static void test_upgrade_result_outside_a_hold_is_ignored(void **state)
{
	(void)state;
	struct sk_http_track t;
	struct sk_http_head h;
	const char *why;
	size_t n;

	sk_http_track_init(&t);
	sk_http_track_upgrade_result(&t, true);
	assert_int_equal(t.st, SK_TS_HEAD);
	assert_int_equal(call(&t, (const uint8_t *)"\x16\x03", 2, &n, &h, &why), SK_TRACK_ERROR);
	sk_http_track_upgrade_result(&t, true);
	assert_int_equal(call(&t, (const uint8_t *)"x", 1, &n, &h, &why), SK_TRACK_ERROR);
	assert_string_equal(why, "http_malformed");
}

/* The error carries the head as far as parsed (the proxy logs the host it named). */
static void test_error_in_a_head_reports_the_head(void **state)
{
	(void)state;
	static const char s[] = POST "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx";
	struct sk_http_track t;
	struct sk_http_head h;
	const char *why;
	size_t n;

	sk_http_track_init(&t);
	assert_int_equal(call(&t, (const uint8_t *)s, sizeof(s) - 1, &n, &h, &why), SK_TRACK_ERROR);
	assert_string_equal(why, "http_dup_cl");
	assert_string_equal(h.host, "a.example");
	assert_string_equal(h.method, "POST");
	assert_int_equal(h.cl_count, 2);
	assert_int_equal(t.st, SK_TS_FAILED);
	assert_string_equal(t.reason, "http_dup_cl");
}

/* NULL head and reason pointers are allowed. */
static void test_head_and_reason_are_optional(void **state)
{
	(void)state;
	static const char s[] = "GET /" H11 HOST "\r\nGET /" H11 HOST "Content-Length: x\r\n\r\n";
	struct sk_http_track t;
	size_t n;

	sk_http_track_init(&t);
	assert_int_equal(sk_http_track_next(&t, (const uint8_t *)s, sizeof(s) - 1, &n, NULL, NULL), SK_TRACK_HEAD);
	assert_int_equal(sk_http_track_next(&t, (const uint8_t *)s + n, sizeof(s) - 1 - n, &n, NULL, NULL),
			 SK_TRACK_ERROR);
	assert_string_equal(t.reason, "http_bad_cl");
}

#define STREAM \
	"GET /a" H11 HOST "\r\n" \
	POST "Content-Length: 11\r\n\r\nhello world" \
	POST TE "\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n" \
	"PUT /c HTTP/1.0\r\n" HOST "Content-Length: 3\r\n\r\nabc" \
	POST "Transfer-Encoding:\tCHUNKED\r\n\r\n0\r\n\r\n" \
	"GET http://a.example/d" H11 HOST "\r\n"

/* Wherever the stream is cut, the tracker forwards all of it and sees the same six requests. */
static void test_every_split_of_a_request_stream_forwards_every_byte(void **state)
{
	(void)state;
	static const char s[] = STREAM;
	size_t len = sizeof(s) - 1;
	struct trace whole, tr;
	size_t cuts[2];

	check_split_independent("stream", s, len, NULL, &whole);
	assert_null(whole.reason);
	assert_int_equal(whole.heads, 6);
	assert_int_equal(whole.forwarded, len);
	for (size_t k = 0; k <= len; k++) {
		cuts[0] = k;
		run(s, len, cuts, 1, NULL, &tr);
		assert_int_equal(tr.forwarded, len);
		assert_int_equal(tr.heads, 6);
	}
	/* Every pair of cuts too. */
	for (size_t i = 0; i <= len; i++)
		for (size_t j = i; j <= len; j++) {
			cuts[0] = i;
			cuts[1] = j;
			run(s, len, cuts, 2, NULL, &tr);
			if (tr.forwarded != len || strcmp(tr.s, whole.s) != 0)
				fail_msg("cuts %zu,%zu: %s", i, j, tr.s);
		}
}

/* A stream cut anywhere forwards exactly the bytes up to the last boundary it could judge: never a byte of
 * an unfinished head or chunk line. */
static void test_prefixes_forward_only_judged_bytes(void **state)
{
	(void)state;
	static const char s[] = STREAM;
	size_t len = sizeof(s) - 1, last = 0;
	struct trace tr;

	for (size_t k = 0; k <= len; k++) {
		run_whole(s, k, NULL, &tr);
		assert_null(tr.reason);
		assert_true(tr.forwarded <= k);
		assert_true(tr.forwarded >= last);   /* more bytes never take anything back */
		last = tr.forwarded;
	}
	assert_int_equal(last, len);
}

static void test_result_names(void **state)
{
	(void)state;
	assert_string_equal(sk_track_result_name(SK_TRACK_FORWARD), "forward");
	assert_string_equal(sk_track_result_name(SK_TRACK_HEAD), "head");
	assert_string_equal(sk_track_result_name(SK_TRACK_NEED_MORE), "need_more");
	assert_string_equal(sk_track_result_name(SK_TRACK_HOLD), "hold");
	assert_string_equal(sk_track_result_name(SK_TRACK_OPAQUE), "opaque");
	assert_string_equal(sk_track_result_name(SK_TRACK_ERROR), "error");
	assert_string_equal(sk_track_result_name((enum sk_track_result)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_smuggling_shapes_fail_closed_whatever_the_split),
		cmocka_unit_test(test_pipelined_heads_each_report_their_host),
		cmocka_unit_test(test_body_is_forwarded_in_pieces_as_it_arrives),
		cmocka_unit_test(test_chunked_body_forwards_lines_and_data_separately),
		cmocka_unit_test(test_long_chunk_and_trailer_lines_fail_at_max_line),
		cmocka_unit_test(test_websocket_accepted_becomes_opaque),
		cmocka_unit_test(test_websocket_declined_stays_http),
		cmocka_unit_test(test_websocket_holds_until_the_answer),
		cmocka_unit_test(test_upgrade_result_outside_a_hold_is_ignored),
		cmocka_unit_test(test_error_in_a_head_reports_the_head),
		cmocka_unit_test(test_head_and_reason_are_optional),
		cmocka_unit_test(test_every_split_of_a_request_stream_forwards_every_byte),
		cmocka_unit_test(test_prefixes_forward_only_judged_bytes),
		cmocka_unit_test(test_result_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
