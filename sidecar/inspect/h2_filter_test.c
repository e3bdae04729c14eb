/* sidecar/inspect/h2_filter_test.c — the HTTP/2 request filter between two real HTTP/2 implementations
 * (nghttp2 client and server sessions, bytes through mem_send/mem_recv): an allowed request reaches the
 * server as sent and its answer comes back; a denied one is answered 403/421 with the JSON body and never
 * reaches the server, and a later request on the same connection still works (the agent's HPACK decoder
 * was left alone); a denied upload's window comes back; the forbidden path only in a CONTINUATION frame
 * is seen; everything holds when the bytes come one at a time; the header hook rewrites a credential
 * and the server receives it never-indexed; malformed requests are reset; HPACK garbage ends the
 * connection with GOAWAY; a request cut short at close is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "sidecar/inspect/h2_filter.h"

#define MAXS 16

struct judge_ctx {
	const char *sni;
	int calls;
	int refused;                    /* the refused hook's calls */
	char refused_reasons[256];      /* their reasons, space-separated */
};

/* One end of the connection as the tests read it. */
struct end {
	nghttp2_session *s;
	struct sk_strbuf heads[MAXS];   /* per stream id / 2: "name: value\n" of every field received */
	struct sk_strbuf body[MAXS];
	uint32_t close_code[MAXS];
	bool closed[MAXS];
	bool auth_never_indexed;
	bool goaway;
	uint32_t goaway_code;
	int requests;                   /* server: header blocks received */
};

struct world {
	struct end cli, srv;
	struct judge_ctx jc;
	struct sk_pt_filter *f;
	struct sk_pt_out out;
	size_t chunk;                   /* bytes per filter call; 0: whole */
	bool failed;
	const char *fail_reason;
	struct sk_strbuf to_client_raw; /* what the filter sent toward the agent, for raw-client tests */
	bool raw_client;                /* the agent's bytes are hand-made: no client session */
	int client_passes;              /* from_client calls answered SK_PT_PASS */
};

static void refused(void *ctx, const struct sk_h2_request *rq, const char *reason)
{
	struct judge_ctx *jc = ctx;
	assert_non_null(rq->method);
	assert_non_null(rq->path);
	jc->refused++;
	size_t n = strlen(jc->refused_reasons);
	(void)snprintf(jc->refused_reasons + n, sizeof(jc->refused_reasons) - n, "%s%s", n ? " " : "", reason);
}

static enum sk_h2_decision judge(void *ctx, const struct sk_h2_request *rq, int *status, struct sk_strbuf *body,
				 const char **reason)
{
	struct judge_ctx *jc = ctx;
	jc->calls++;
	if (strcmp(rq->authority, jc->sni) != 0) {
		*status = 421;
		*reason = "host_sni_mismatch";
		sk_h2_denial_body(body, *reason, NULL, rq);
		return SK_H2_DENY;
	}
	if (strncmp(rq->path, "/forbidden", 10) == 0 || strcmp(rq->method, "DELETE") == 0) {
		*status = 403;
		*reason = "no_request_rule";
		sk_h2_denial_body(body, *reason, "2", rq);
		return SK_H2_DENY;
	}
	return SK_H2_ALLOW;
}

static int swap_auth(void *ctx, const struct sk_h2_request *rq, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, struct sk_strbuf *new_value, bool *never_index)
{
	(void)ctx;
	(void)rq;
	if (namelen == 13 && memcmp(name, "authorization", 13) == 0 && valuelen == 18 &&
	    memcmp(value, "Bearer placeholder", 18) == 0) {
		(void)sk_strbuf_puts(new_value, "Bearer real-secret");
		*never_index = true;
		return 1;
	}
	if (namelen == 8 && memcmp(name, "x-refuse", 8) == 0)
		return -EPERM;
	return 0;
}

/* ---- nghttp2 callbacks ---- */

static struct sk_strbuf *slot(struct sk_strbuf *a, int32_t id)
{
	assert_true(id > 0 && id / 2 < MAXS);
	return &a[id / 2];
}

static int on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
	(void)s;
	struct end *e = ud;
	struct sk_strbuf *h = slot(e->heads, fr->hd.stream_id);
	(void)sk_strbuf_put(h, name, namelen);
	(void)sk_strbuf_puts(h, ": ");
	(void)sk_strbuf_put(h, value, valuelen);
	(void)sk_strbuf_puts(h, "\n");
	if (namelen == 13 && memcmp(name, "authorization", 13) == 0)
		e->auth_never_indexed = flags & NGHTTP2_NV_FLAG_NO_INDEX;
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *ud)
{
	(void)s;
	(void)flags;
	struct end *e = ud;
	(void)sk_strbuf_put(slot(e->body, id), data, len);
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud)
{
	(void)s;
	struct end *e = ud;
	if (id > 0 && id / 2 < MAXS) {
		e->closed[id / 2] = true;
		e->close_code[id / 2] = code;
	}
	return 0;
}

static ssize_t ok_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)id;
	(void)src;
	(void)ud;
	assert_true(len >= 2);
	buf[0] = 'o';
	buf[1] = 'k';
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	return 2;
}

static sk_h2_body_fn next_body;   /* the body hook of the next world_init */
static const struct sk_swap_mask *next_mask;   /* and its response mask */
/* the server's answer to the next request, when set: these fields, then resp_body in DATA frames of at
 * most resp_piece bytes each */
static const nghttp2_nv *resp_nv;
static size_t resp_nvn, resp_piece, resp_off;
static const char *resp_body;

static ssize_t piece_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			  nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)id;
	(void)src;
	(void)ud;
	size_t left = strlen(resp_body) - resp_off, n = left < resp_piece ? left : resp_piece;
	if (n > len)
		n = len;
	memcpy(buf, resp_body + resp_off, n);
	resp_off += n;
	if (resp_off == strlen(resp_body))
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static const char *heads(struct end *e, int32_t id);

static int srv_on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
	struct end *e = ud;
	if (fr->hd.type == NGHTTP2_HEADERS && fr->headers.cat == NGHTTP2_HCAT_REQUEST)
		e->requests++;
	if ((fr->hd.type == NGHTTP2_HEADERS || fr->hd.type == NGHTTP2_DATA) && (fr->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
		/* /v1/big: a response header block in HEADERS and CONTINUATION */
		static char big[20000];
		memset(big, 'v', sizeof(big));
		const nghttp2_nv nv[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 },
					  { (uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big), 0 } };
		bool is_big = strstr(heads(e, fr->hd.stream_id), ":path: /v1/big\n") != NULL;
		nghttp2_data_provider dp = { .read_callback = ok_body };
		if (resp_nv) {
			resp_off = 0;
			dp.read_callback = piece_body;
			assert_int_equal(nghttp2_submit_response(s, fr->hd.stream_id, resp_nv, resp_nvn, &dp), 0);
			return 0;
		}
		assert_int_equal(nghttp2_submit_response(s, fr->hd.stream_id, nv, is_big ? 2 : 1, &dp), 0);
	}
	return 0;
}

static int cli_on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
	(void)s;
	struct end *e = ud;
	if (fr->hd.type == NGHTTP2_GOAWAY) {
		e->goaway = true;
		e->goaway_code = fr->goaway.error_code;
	}
	return 0;
}

static void world_init(struct world *w, size_t chunk, bool with_hook)
{
	memset(w, 0, sizeof(*w));
	w->chunk = chunk;
	w->jc.sni = "api.example.com";
	struct sk_h2_filter_cfg cfg = { .judge = judge, .header = with_hook ? swap_auth : NULL, .refused = refused,
					.ctx = &w->jc, .body = next_body, .mask = next_mask };
	next_body = NULL;
	next_mask = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_h2_filter_new(&cfg, &w->f, &err), 0);

	nghttp2_session_callbacks *cb;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, cli_on_frame);
	assert_int_equal(nghttp2_session_client_new(&w->cli.s, cb, &w->cli), 0);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_on_frame);
	assert_int_equal(nghttp2_session_server_new(&w->srv.s, cb, &w->srv), 0);
	nghttp2_session_callbacks_del(cb);
	assert_int_equal(nghttp2_submit_settings(w->cli.s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
	const nghttp2_settings_entry se[] = { { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 } };
	assert_int_equal(nghttp2_submit_settings(w->srv.s, NGHTTP2_FLAG_NONE, se, 1), 0);
}

static void end_free(struct end *e)
{
	nghttp2_session_del(e->s);
	for (int i = 0; i < MAXS; i++) {
		sk_strbuf_free(&e->heads[i]);
		sk_strbuf_free(&e->body[i]);
	}
}

static void world_free(struct world *w)
{
	end_free(&w->cli);
	end_free(&w->srv);
	w->f->ops->free(w->f);
	sk_pt_out_free(&w->out);
	sk_strbuf_free(&w->to_client_raw);
}

static void recv_all(struct world *w, struct end *e, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (e == &w->cli && w->raw_client) {
		(void)sk_strbuf_put(&w->to_client_raw, p, n);
		return;
	}
	ssize_t rv = nghttp2_session_mem_recv(e->s, p, n);
	assert_int_equal(rv, (ssize_t)n);
}

/* One chunk through the filter, its result delivered. */
static void through(struct world *w, bool from_client, const uint8_t *p, size_t n)
{
	struct sk_pt_out *o = &w->out;
	sk_pt_out_reset(o);
	enum sk_pt_verdict v = from_client ? w->f->ops->from_client(w->f, p, n, o) : w->f->ops->from_server(w->f, p, n, o);
	struct end *peer = from_client ? &w->srv : &w->cli, *sender = from_client ? &w->cli : &w->srv;
	switch (v) {
	case SK_PT_PASS:
		if (from_client)
			w->client_passes++;
		assert_int_equal(o->to_peer.len, 0);
		assert_int_equal(o->to_sender.len, 0);
		recv_all(w, peer, p, n);
		break;
	case SK_PT_EMIT:
		recv_all(w, peer, o->to_peer.p, o->to_peer.len);
		recv_all(w, sender, o->to_sender.p, o->to_sender.len);
		break;
	case SK_PT_FAIL:
		assert_non_null(o->reason);
		w->failed = true;
		w->fail_reason = o->reason;
		recv_all(w, sender, o->to_sender.p, o->to_sender.len);
		break;
	}
}

static void feed(struct world *w, bool from_client, const uint8_t *p, size_t n)
{
	size_t step = w->chunk ? w->chunk : n;
	for (size_t off = 0; off < n && !w->failed; off += step)
		through(w, from_client, p + off, n - off < step ? n - off : step);
}

/* Drains one session's output completely, then feeds it through. */
static bool pump_one(struct world *w, bool from_client)
{
	struct end *e = from_client ? &w->cli : &w->srv;
	struct sk_strbuf all = { 0 };
	for (;;) {
		const uint8_t *d;
		ssize_t n = nghttp2_session_mem_send(e->s, &d);
		assert_true(n >= 0);
		if (n == 0)
			break;
		assert_int_equal(sk_strbuf_put(&all, d, (size_t)n), 0);
	}
	bool any = all.len > 0;
	feed(w, from_client, (const uint8_t *)all.p, all.len);
	sk_strbuf_free(&all);
	return any;
}

static void pump(struct world *w)
{
	for (int round = 0; round < 64 && !w->failed; round++) {
		bool a = pump_one(w, true);
		bool b = !w->failed && pump_one(w, false);
		if (!a && !b)
			return;
	}
}

static int32_t request(struct world *w, const char *method, const char *authority, const char *path,
		       const nghttp2_nv *extra, size_t nextra, nghttp2_data_provider *body)
{
	nghttp2_nv nv[12] = {
		{ (uint8_t *)":method", (uint8_t *)method, 7, strlen(method), 0 },
		{ (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0 },
		{ (uint8_t *)":authority", (uint8_t *)authority, 10, strlen(authority), 0 },
		{ (uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0 },
	};
	assert_true(nextra <= 8);
	for (size_t i = 0; i < nextra; i++)
		nv[4 + i] = extra[i];
	int32_t id = nghttp2_submit_request(w->cli.s, NULL, nv, 4 + nextra, body, NULL);
	assert_true(id > 0);
	return id;
}

static const char *heads(struct end *e, int32_t id)
{
	struct sk_strbuf *h = slot(e->heads, id);
	return h->p ? h->p : "";
}

static const char *body_of(struct end *e, int32_t id)
{
	struct sk_strbuf *b = slot(e->body, id);
	return b->p ? b->p : "";
}

/* ---- the cases ---- */

static void allowed_then_denied_then_allowed(size_t chunk)
{
	struct world w;
	world_init(&w, chunk, false);
	const nghttp2_nv ua[] = { { (uint8_t *)"user-agent", (uint8_t *)"agent/1", 10, 7, 0 } };
	int32_t a = request(&w, "GET", "api.example.com", "/v1/things?x=1", ua, 1, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 1);
	assert_string_equal(heads(&w.srv, a), ":method: GET\n:scheme: https\n:authority: api.example.com\n"
					      ":path: /v1/things?x=1\nuser-agent: agent/1\n");
	assert_non_null(strstr(heads(&w.cli, a), ":status: 200\n"));
	assert_string_equal(body_of(&w.cli, a), "ok");

	int32_t d = request(&w, "GET", "api.example.com", "/forbidden/x", ua, 1, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 1);  /* never reached the server */
	assert_string_equal(heads(&w.srv, d), "");
	assert_string_equal(heads(&w.cli, d), ":status: 403\ncontent-type: application/json\ncontent-length: 128\n"
					      "x-stockade-reason: no_request_rule\n");
	assert_string_equal(body_of(&w.cli, d),
			    "{\"error\":\"stockade_denied\",\"reason\":\"no_request_rule\",\"rule\":\"2\",\"method\":"
			    "\"GET\",\"host\":\"api.example.com\",\"path\":\"/forbidden/x\"}\n");
	assert_true(w.cli.closed[d / 2]);
	assert_int_equal(w.cli.close_code[d / 2], NGHTTP2_NO_ERROR);

	/* the agent's decoder is still in step with the server's encoder: its next answer decodes */
	int32_t b = request(&w, "GET", "api.example.com", "/v1/other", ua, 1, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 2);
	assert_non_null(strstr(heads(&w.srv, b), ":path: /v1/other\nuser-agent: agent/1\n"));
	assert_non_null(strstr(heads(&w.cli, b), ":status: 200\n"));
	assert_string_equal(body_of(&w.cli, b), "ok");
	assert_int_equal(w.jc.calls, 3);
	world_free(&w);
}

static void test_allowed_denied_allowed(void **state)
{
	(void)state;
	allowed_then_denied_then_allowed(0);
}

static void test_one_byte_chunks(void **state)
{
	(void)state;
	allowed_then_denied_then_allowed(1);
	allowed_then_denied_then_allowed(7);
}

static void test_authority_mismatch_421(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	int32_t id = request(&w, "GET", "evil.example.net", "/", NULL, 0, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 0);
	assert_non_null(strstr(heads(&w.cli, id), ":status: 421\n"));
	assert_non_null(strstr(heads(&w.cli, id), "x-stockade-reason: host_sni_mismatch\n"));
	assert_non_null(strstr(body_of(&w.cli, id), "\"host\":\"evil.example.net\""));
	world_free(&w);
}

/* An answer of ours made while the server's stream is inside a frame waits for that frame's end. */
static void test_answer_between_server_frames(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	int32_t a = request(&w, "GET", "api.example.com", "/v1/a", NULL, 0, NULL);
	assert_true(pump_one(&w, true));
	struct sk_strbuf srv = { 0 };
	for (;;) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(w.srv.s, &p);
		assert_true(n >= 0);
		if (n == 0)
			break;
		assert_int_equal(sk_strbuf_put(&srv, p, (size_t)n), 0);
	}
	assert_true(srv.len > 5);
	feed(&w, false, (const uint8_t *)srv.p, srv.len - 5);  /* ends inside the DATA frame "ok" */
	int32_t d = request(&w, "GET", "api.example.com", "/forbidden", NULL, 0, NULL);
	assert_true(pump_one(&w, true));
	assert_false(w.failed);
	assert_string_equal(heads(&w.cli, d), "");  /* held back */
	sk_pt_out_reset(&w.out);
	assert_int_equal(w.f->ops->from_server(w.f, (const uint8_t *)srv.p + srv.len - 5, 5, &w.out), SK_PT_EMIT);
	recv_all(&w, &w.cli, w.out.to_peer.p, w.out.to_peer.len);
	assert_string_equal(body_of(&w.cli, a), "ok");
	assert_non_null(strstr(heads(&w.cli, d), ":status: 403\n"));
	assert_non_null(strstr(body_of(&w.cli, d), "\"path\":\"/forbidden\""));
	pump(&w);
	assert_false(w.failed);
	assert_false(w.cli.goaway);
	sk_strbuf_free(&srv);
	world_free(&w);
}

/* Nor inside a header block of the server's: between its HEADERS and CONTINUATION nothing may go. */
static void test_answer_not_inside_server_header_block(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	int32_t a = request(&w, "GET", "api.example.com", "/v1/big", NULL, 0, NULL);
	assert_true(pump_one(&w, true));
	struct sk_strbuf srv = { 0 };
	for (;;) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(w.srv.s, &p);
		assert_true(n >= 0);
		if (n == 0)
			break;
		assert_int_equal(sk_strbuf_put(&srv, p, (size_t)n), 0);
	}
	/* cut right after the response's HEADERS frame, before its CONTINUATION */
	const uint8_t *p = (const uint8_t *)srv.p;
	size_t cut = 0;
	while (cut + 9 <= srv.len) {
		size_t len = (size_t)p[cut] << 16 | (size_t)p[cut + 1] << 8 | p[cut + 2];
		uint8_t type = p[cut + 3], flags = p[cut + 4];
		cut += 9 + len;
		if (type == NGHTTP2_HEADERS) {
			assert_false(flags & NGHTTP2_FLAG_END_HEADERS);
			break;
		}
	}
	if (!p || cut + 9 > srv.len) {
		fail_msg("no CONTINUATION after the response's HEADERS");
		return;
	}
	assert_int_equal(p[cut + 3], NGHTTP2_CONTINUATION);
	feed(&w, false, p, cut);
	int32_t d = request(&w, "GET", "api.example.com", "/forbidden", NULL, 0, NULL);
	assert_true(pump_one(&w, true));
	assert_false(w.failed);
	assert_string_equal(heads(&w.cli, d), "");  /* held back */
	feed(&w, false, p + cut, srv.len - cut);
	assert_false(w.cli.goaway);
	assert_string_equal(body_of(&w.cli, a), "ok");
	assert_non_null(strstr(heads(&w.cli, a), "x-big: vvvv"));
	assert_non_null(strstr(heads(&w.cli, d), ":status: 403\n"));
	pump(&w);
	assert_false(w.failed);
	assert_false(w.cli.goaway);
	sk_strbuf_free(&srv);
	world_free(&w);
}

struct upload {
	size_t left;
};

static ssize_t upload_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			   nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)id;
	(void)ud;
	struct upload *u = src->ptr;
	size_t n = len < u->left ? len : u->left;
	memset(buf, 'u', n);
	u->left -= n;
	if (u->left == 0)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static void test_denied_upload_returns_window(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	pump(&w);  /* settings both ways */
	/* the whole connection window, on a denied stream */
	struct upload u1 = { .left = 65535 };
	nghttp2_data_provider dp1 = { .source.ptr = &u1, .read_callback = upload_body };
	int32_t d = request(&w, "POST", "api.example.com", "/forbidden/upload", NULL, 0, &dp1);
	assert_true(pump_one(&w, true));  /* all of it leaves the agent before anything comes back */
	assert_int_equal(u1.left, 0);
	assert_false(w.failed);
	assert_non_null(strstr(heads(&w.cli, d), ":status: 403\n"));
	assert_int_equal(nghttp2_session_get_remote_window_size(w.cli.s), 65535);
	/* and an allowed upload goes through whole */
	struct upload u2 = { .left = 50000 };
	nghttp2_data_provider dp2 = { .source.ptr = &u2, .read_callback = upload_body };
	int32_t a = request(&w, "POST", "api.example.com", "/v1/upload", NULL, 0, &dp2);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 1);
	assert_string_equal(heads(&w.srv, d), "");
	assert_int_equal(slot(w.srv.body, a)->len, 50000);
	assert_string_equal(body_of(&w.cli, a), "ok");
	world_free(&w);
}

/* ---- the body scan ---- */

#define BODY_PH "stockade-secret-gh"

static int scan_hook(void *ctx, const struct sk_h2_request *rq, struct sk_swap_body *scan, const uint8_t *p, size_t n)
{
	static char *hosts[] = { "api.example.com" }, *in[] = { "authorization" };
	static struct sk_secret sec = { .name = "gh", .placeholder = BODY_PH, .hosts = hosts, .n_hosts = 1, .in = in,
					.n_in = 1 };
	static const struct sk_swap_set set = { &sec, 1, NULL };
	struct judge_ctx *jc = ctx;
	struct sk_swap_misuse m;
	if (!sk_swap_body_scan(scan, &set, p, n, &m))
		return 0;
	size_t l = strlen(jc->refused_reasons);
	(void)snprintf(jc->refused_reasons + l, sizeof(jc->refused_reasons) - l, "%sbody:%s:%s", l ? " " : "", rq->method,
		       rq->path);
	return -1;
}

/* An upload of `left` bytes with the placeholder at `at` (SIZE_MAX: none). */
struct ph_upload {
	size_t left, off, at;
};

static ssize_t ph_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)id;
	(void)ud;
	struct ph_upload *u = src->ptr;
	size_t n = len < u->left ? len : u->left;
	for (size_t i = 0; i < n; i++) {
		size_t k = u->off + i;
		buf[i] = u->at != SIZE_MAX && k >= u->at && k < u->at + sizeof(BODY_PH) - 1 ? (uint8_t)BODY_PH[k - u->at] : 'u';
	}
	u->off += n;
	u->left -= n;
	if (u->left == 0)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* The placeholder in an upload, across the boundary of two DATA frames (nghttp2 cuts them at 16384):
 * the frame that completes it never reaches the server, whose stream is cancelled, the agent's is reset,
 * its window comes back, and the connection goes on; a clean upload and the bytes past the scanned
 * prefix go through whole. Whole chunks and single bytes. */
static void test_body_scan_resets_the_stream(void **state)
{
	(void)state;
	for (size_t chunk = 0; chunk <= 1; chunk++) {
		struct world w;
		next_body = scan_hook;
		world_init(&w, chunk, false);
		pump(&w);
		struct ph_upload u1 = { .left = 20000, .at = 16384 - 7 };
		nghttp2_data_provider dp1 = { .source.ptr = &u1, .read_callback = ph_body };
		int32_t bad = request(&w, "POST", "api.example.com", "/v1/upload", NULL, 0, &dp1);
		pump(&w);
		assert_false(w.failed);
		assert_string_equal(w.jc.refused_reasons, "body:POST:/v1/upload");
		assert_true(slot(w.srv.body, bad)->len <= 16384);
		assert_null(memmem(slot(w.srv.body, bad)->p ? slot(w.srv.body, bad)->p : "", slot(w.srv.body, bad)->len,
				   BODY_PH, sizeof(BODY_PH) - 1));
		assert_true(w.srv.closed[bad / 2]);
		assert_int_equal(w.srv.close_code[bad / 2], NGHTTP2_CANCEL);
		assert_true(w.cli.closed[bad / 2]);
		assert_int_equal(w.cli.close_code[bad / 2], NGHTTP2_INTERNAL_ERROR);
		/* a clean upload, and one with the placeholder past the 64 KiB prefix, go through whole */
		struct ph_upload u2 = { .left = 50000, .at = SIZE_MAX };
		nghttp2_data_provider dp2 = { .source.ptr = &u2, .read_callback = ph_body };
		int32_t ok = request(&w, "POST", "api.example.com", "/v1/clean", NULL, 0, &dp2);
		pump(&w);
		assert_int_equal(slot(w.srv.body, ok)->len, 50000);
		assert_string_equal(body_of(&w.cli, ok), "ok");
		struct ph_upload u3 = { .left = SK_SWAP_BODY_SCAN + 100, .at = SK_SWAP_BODY_SCAN + 10 };
		nghttp2_data_provider dp3 = { .source.ptr = &u3, .read_callback = ph_body };
		int32_t late = request(&w, "POST", "api.example.com", "/v1/late", NULL, 0, &dp3);
		pump(&w);
		assert_false(w.failed);
		assert_int_equal(slot(w.srv.body, late)->len, SK_SWAP_BODY_SCAN + 100);
		assert_string_equal(w.jc.refused_reasons, "body:POST:/v1/upload");
		/* the refused frames' window came back: the agent can send a full window again */
		assert_true(nghttp2_session_get_remote_window_size(w.cli.s) > 0);
		world_free(&w);
	}
}

/* ---- the response mask ---- */

#define RVAL "s3cr3t-VALUE-1234"
#define RSTARS "*****************"

/* A response body echoing the value, cut into DATA frames of every size up to past the value: the agent
 * reads it with each value masked, same length, the frames' flow control intact; byte-at-a-time too. */
static void test_response_data_masked_across_frames(void **state)
{
	(void)state;
	struct sk_swap_mask mk = { 0 };
	assert_int_equal(sk_swap_mask_add(&mk, RVAL, sizeof(RVAL) - 1), 0);
	static const nghttp2_nv nv[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 } };
	resp_nv = nv;
	resp_nvn = 1;
	resp_body = "auth=Bearer " RVAL "\nagain=" RVAL RVAL "\ns3cr3t-VAL end";
	const char *want = "auth=Bearer " RSTARS "\nagain=" RSTARS RSTARS "\ns3cr3t-VAL end";
	for (size_t piece = 1; piece <= 24; piece++) {
		for (size_t chunk = 0; chunk <= (piece == 5 ? 1u : 0u); chunk++) {
			struct world w;
			next_mask = &mk;
			world_init(&w, chunk, false);
			resp_piece = piece;
			int32_t id = request(&w, "GET", "api.example.com", "/v1/echo", NULL, 0, NULL);
			pump(&w);
			assert_false(w.failed);
			if (strcmp(body_of(&w.cli, id), want) != 0)
				fail_msg("piece %zu: %s", piece, body_of(&w.cli, id));
			/* a second stream on the same connection, its own mask state */
			int32_t id2 = request(&w, "GET", "api.example.com", "/v1/echo2", NULL, 0, NULL);
			pump(&w);
			assert_string_equal(body_of(&w.cli, id2), want);
			world_free(&w);
		}
	}
	resp_nv = NULL;
	sk_swap_mask_free(&mk);
}

/* A value in a response header (HPACK-coded: not maskable in place), or a body the mask cannot search
 * (gzip, 206): the connection fails closed before any of that block reaches the agent. Without the value,
 * headers pass. */
static void test_response_header_with_value_fails_closed(void **state)
{
	(void)state;
	struct sk_swap_mask mk = { 0 };
	assert_int_equal(sk_swap_mask_add(&mk, RVAL, sizeof(RVAL) - 1), 0);
	static const nghttp2_nv echo[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 },
					   { (uint8_t *)"x-echo", (uint8_t *)"Bearer " RVAL, 6, 7 + sizeof(RVAL) - 1, 0 } };
	static const nghttp2_nv gz[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 },
					 { (uint8_t *)"content-encoding", (uint8_t *)"gzip", 16, 4, 0 } };
	static const nghttp2_nv part[] = { { (uint8_t *)":status", (uint8_t *)"206", 7, 3, 0 } };
	static const nghttp2_nv fine[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 },
					   { (uint8_t *)"x-echo", (uint8_t *)"Bearer s3cr3t", 6, 13, 0 } };
	const struct { const nghttp2_nv *nv; const char *reason; } cases[] = {
		{ echo, "secret_in_response_header" }, { gz, "upstream_encoding" }, { part, "upstream_encoding" },
		{ fine, NULL },
	};
	resp_body = "body";
	resp_piece = 100;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		next_mask = &mk;
		world_init(&w, 0, false);
		resp_nv = cases[i].nv;
		resp_nvn = 2 - (cases[i].nv == part);
		int32_t id = request(&w, "GET", "api.example.com", "/v1/x", NULL, 0, NULL);
		pump(&w);
		if (cases[i].reason) {
			assert_true(w.failed);
			assert_string_equal(w.fail_reason, cases[i].reason);
			assert_null(strstr(heads(&w.cli, id), RVAL));
			assert_string_equal(heads(&w.cli, id), "");
		} else {
			assert_false(w.failed);
			assert_non_null(strstr(heads(&w.cli, id), "x-echo: Bearer s3cr3t\n"));
			assert_string_equal(body_of(&w.cli, id), "body");
		}
		world_free(&w);
	}
	resp_nv = NULL;
	sk_swap_mask_free(&mk);
}

static ssize_t body_then_trailers(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
				  nghttp2_data_source *src, void *ud)
{
	(void)src;
	(void)ud;
	assert_true(len >= 4);
	static const uint8_t d[4] = { 'd', 'a', 't', 'a' };
	memcpy(buf, d, sizeof(d));
	*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
	const nghttp2_nv tr[] = { { (uint8_t *)"x-checksum", (uint8_t *)"abc", 10, 3, 0 },
				  { (uint8_t *)"authorization", (uint8_t *)"Bearer placeholder", 13, 18, 0 } };
	assert_int_equal(nghttp2_submit_trailer(s, id, tr, 2), 0);
	return 4;
}

/* Trailers are decoded, shown to the hook and re-encoded; a server that wants no dynamic table gets
 * none (its SETTINGS_HEADER_TABLE_SIZE 0 is followed by our encoder). */
static void test_trailers_and_server_table_size(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, true);
	const nghttp2_settings_entry se[] = { { NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0 } };
	assert_int_equal(nghttp2_submit_settings(w.srv.s, NGHTTP2_FLAG_NONE, se, 1), 0);
	pump(&w);
	const nghttp2_nv x[] = { { (uint8_t *)"x-same", (uint8_t *)"value-repeated", 6, 14, 0 } };
	for (int i = 0; i < 3; i++) {
		int32_t id = request(&w, "GET", "api.example.com", "/v1/again", x, 1, NULL);
		pump(&w);
		assert_false(w.failed);
		assert_false(w.cli.goaway);
		assert_non_null(strstr(heads(&w.srv, id), "x-same: value-repeated\n"));
		assert_string_equal(body_of(&w.cli, id), "ok");
	}
	nghttp2_data_provider dp = { .read_callback = body_then_trailers };
	int32_t t = request(&w, "POST", "api.example.com", "/v1/upload", NULL, 0, &dp);
	pump(&w);
	assert_false(w.failed);
	assert_non_null(strstr(heads(&w.srv, t), "x-checksum: abc\nauthorization: Bearer real-secret\n"));
	assert_true(w.srv.auth_never_indexed);
	assert_string_equal(body_of(&w.srv, t), "data");
	assert_string_equal(body_of(&w.cli, t), "ok");
	assert_int_equal(w.srv.requests, 4);
	world_free(&w);
}

/* The agent shrinks its decoder's table: once the server acknowledged that, the agent's decoder wants a
 * size update first in the next header block, which may be an answer of ours. */
static void test_agent_shrinks_its_table(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	int32_t a = request(&w, "GET", "api.example.com", "/v1/a", NULL, 0, NULL);
	pump(&w);  /* the server's encoder has entries in the agent's table now */
	assert_string_equal(body_of(&w.cli, a), "ok");
	const nghttp2_settings_entry se[] = { { NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0 } };
	assert_int_equal(nghttp2_submit_settings(w.cli.s, NGHTTP2_FLAG_NONE, se, 1), 0);
	pump(&w);
	int32_t d = request(&w, "GET", "api.example.com", "/forbidden", NULL, 0, NULL);
	pump(&w);
	assert_false(w.cli.goaway);
	assert_non_null(strstr(heads(&w.cli, d), ":status: 403\n"));
	int32_t b = request(&w, "GET", "api.example.com", "/v1/b", NULL, 0, NULL);
	pump(&w);
	assert_false(w.cli.goaway);
	assert_false(w.failed);
	assert_string_equal(body_of(&w.cli, b), "ok");
	world_free(&w);
}

struct deferred {
	bool ready;
	size_t left;
};

static ssize_t deferred_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			     nghttp2_data_source *src, void *ud)
{
	(void)s;
	(void)id;
	(void)ud;
	struct deferred *d = src->ptr;
	if (!d->ready)
		return NGHTTP2_ERR_DEFERRED;
	size_t n = len < d->left ? len : d->left;
	memset(buf, 'd', n);
	d->left -= n;
	if (d->left == 0)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* The hot path: a chunk of only an allowed stream's DATA, or of control frames, is passed as it is. */
static void test_data_and_control_pass_without_copy(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	struct deferred d = { .left = 40000 };
	nghttp2_data_provider dp = { .source.ptr = &d, .read_callback = deferred_body };
	int32_t id = request(&w, "POST", "api.example.com", "/v1/upload", NULL, 0, &dp);
	pump(&w);
	assert_int_equal(w.srv.requests, 1);
	int before = w.client_passes;
	d.ready = true;
	assert_int_equal(nghttp2_session_resume_data(w.cli.s, id), 0);
	assert_true(pump_one(&w, true));  /* DATA frames only */
	assert_int_equal(w.client_passes, before + 1);
	assert_int_equal(nghttp2_submit_ping(w.cli.s, NGHTTP2_FLAG_NONE, NULL), 0);
	assert_true(pump_one(&w, true));
	assert_int_equal(w.client_passes, before + 2);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(slot(w.srv.body, id)->len, 40000);
	assert_string_equal(body_of(&w.cli, id), "ok");
	world_free(&w);
}

/* Open requests are bounded: one more is refused with REFUSED_STREAM (the agent may retry it). */
static void test_open_streams_bounded(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	w.f->ops->free(w.f);
	struct sk_h2_filter_cfg cfg = { .judge = judge, .ctx = &w.jc, .max_streams = 1 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_h2_filter_new(&cfg, &w.f, &err), 0);
	struct deferred d1 = { .left = 10 }, d2 = { .left = 10 };
	nghttp2_data_provider dp1 = { .source.ptr = &d1, .read_callback = deferred_body };
	nghttp2_data_provider dp2 = { .source.ptr = &d2, .read_callback = deferred_body };
	int32_t a = request(&w, "POST", "api.example.com", "/v1/a", NULL, 0, &dp1);
	int32_t b = request(&w, "POST", "api.example.com", "/v1/b", NULL, 0, &dp2);
	int32_t c = request(&w, "GET", "api.example.com", "/v1/c", NULL, 0, NULL);  /* ends at once: not held */
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 2);
	assert_true(w.cli.closed[b / 2]);
	assert_int_equal(w.cli.close_code[b / 2], NGHTTP2_REFUSED_STREAM);
	assert_string_equal(body_of(&w.cli, c), "ok");
	d1.ready = true;
	assert_int_equal(nghttp2_session_resume_data(w.cli.s, a), 0);
	pump(&w);
	assert_string_equal(body_of(&w.srv, a), "dddddddddd");
	assert_string_equal(body_of(&w.cli, a), "ok");
	world_free(&w);
}

/* DATA the agent sent before it read the server's RST_STREAM is dropped (the server has closed the
 * stream) and its window given back; a request naming its host only in `host` is judged by it. */
static void test_data_after_server_reset_and_host_only(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	struct deferred d = { .left = 30000 };
	nghttp2_data_provider dp = { .source.ptr = &d, .read_callback = deferred_body };
	int32_t id = request(&w, "POST", "api.example.com", "/v1/upload", NULL, 0, &dp);
	pump(&w);
	assert_int_equal(w.srv.requests, 1);
	d.ready = true;
	assert_int_equal(nghttp2_session_resume_data(w.cli.s, id), 0);
	struct sk_strbuf data = { 0 };
	for (;;) {  /* the agent's DATA, still on its way */
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(w.cli.s, &p);
		assert_true(n >= 0);
		if (n == 0)
			break;
		assert_int_equal(sk_strbuf_put(&data, p, (size_t)n), 0);
	}
	assert_int_equal(nghttp2_submit_rst_stream(w.srv.s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL), 0);
	assert_true(pump_one(&w, false));
	feed(&w, true, (const uint8_t *)data.p, data.len);
	assert_false(w.failed);
	assert_int_equal(slot(w.srv.body, id)->len, 0);
	assert_int_equal(nghttp2_session_get_remote_window_size(w.cli.s), 65535);

	nghttp2_nv nv[] = { { (uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0 },
			    { (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0 },
			    { (uint8_t *)":path", (uint8_t *)"/v1/h", 5, 5, 0 },
			    { (uint8_t *)"host", (uint8_t *)"evil.example.net", 4, 16, 0 } };
	int32_t h = nghttp2_submit_request(w.cli.s, NULL, nv, 4, NULL, NULL);
	assert_true(h > 0);
	pump(&w);
	assert_non_null(strstr(heads(&w.cli, h), ":status: 421\n"));
	assert_int_equal(w.srv.requests, 1);
	sk_strbuf_free(&data);
	world_free(&w);
}

static void test_rewrite_hook_never_indexed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, true);
	const nghttp2_nv auth[] = { { (uint8_t *)"authorization", (uint8_t *)"Bearer placeholder", 13, 18, 0 },
				    { (uint8_t *)"accept", (uint8_t *)"*/*", 6, 3, 0 } };
	int32_t a = request(&w, "GET", "api.example.com", "/v1/me", auth, 2, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_non_null(strstr(heads(&w.srv, a), "authorization: Bearer real-secret\naccept: */*\n"));
	assert_null(strstr(heads(&w.srv, a), "placeholder"));
	assert_true(w.srv.auth_never_indexed);
	/* a second one: the encoder's table did not keep the secret to refer to */
	int32_t b = request(&w, "GET", "api.example.com", "/v1/me", auth, 2, NULL);
	pump(&w);
	assert_non_null(strstr(heads(&w.srv, b), "authorization: Bearer real-secret\n"));
	assert_true(w.srv.auth_never_indexed);
	/* the hook refuses: reset, nothing upstream */
	const nghttp2_nv refuse[] = { { (uint8_t *)"x-refuse", (uint8_t *)"1", 8, 1, 0 } };
	int32_t c = request(&w, "GET", "api.example.com", "/v1/me", refuse, 1, NULL);
	pump(&w);
	assert_false(w.failed);
	assert_int_equal(w.srv.requests, 2);
	assert_true(w.cli.closed[c / 2]);
	assert_int_equal(w.cli.close_code[c / 2], NGHTTP2_INTERNAL_ERROR);
	world_free(&w);
}

static void test_malformed_reset(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	/* NO_COPY_NAME: else nghttp2 lower-cases the name it copies */
	const nghttp2_nv upper[] = { { (uint8_t *)"X-Upper", (uint8_t *)"1", 7, 1, NGHTTP2_NV_FLAG_NO_COPY_NAME } };
	const nghttp2_nv conn[] = { { (uint8_t *)"connection", (uint8_t *)"close", 10, 5, 0 } };
	const nghttp2_nv host[] = { { (uint8_t *)"host", (uint8_t *)"other.example.com", 4, 17, 0 } };
	int32_t ids[3];
	ids[0] = request(&w, "GET", "api.example.com", "/", upper, 1, NULL);
	ids[1] = request(&w, "GET", "api.example.com", "/", conn, 1, NULL);
	ids[2] = request(&w, "GET", "api.example.com", "/", host, 1, NULL);
	int32_t ok = request(&w, "GET", "api.example.com", "/fine", NULL, 0, NULL);
	pump(&w);
	assert_false(w.failed);
	for (int i = 0; i < 3; i++) {
		assert_true(w.cli.closed[ids[i] / 2]);
		assert_int_equal(w.cli.close_code[ids[i] / 2], NGHTTP2_PROTOCOL_ERROR);
		assert_string_equal(heads(&w.srv, ids[i]), "");
	}
	assert_int_equal(w.jc.calls, 1);
	/* each reset is told to the owner, for its audit line */
	assert_int_equal(w.jc.refused, 3);
	assert_string_equal(w.jc.refused_reasons, "h2_malformed_request h2_malformed_request h2_malformed_request");
	assert_int_equal(w.srv.requests, 1);
	assert_string_equal(body_of(&w.cli, ok), "ok");
	world_free(&w);
}

/* ---- hand-made agent bytes ---- */

static void raw_frame(struct sk_strbuf *b, uint8_t type, uint8_t flags, int32_t sid, const void *p, size_t n)
{
	uint8_t h[9] = { (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
			 (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid };
	assert_int_equal(sk_strbuf_put(b, h, 9), 0);
	assert_int_equal(sk_strbuf_put(b, p, n), 0);
}

static void deflate(nghttp2_hd_deflater *d, struct sk_strbuf *b, const nghttp2_nv *nv, size_t n)
{
	uint8_t out[4096];
	ssize_t w = nghttp2_hd_deflate_hd(d, out, sizeof(out), nv, n);
	assert_true(w > 0);
	assert_int_equal(sk_strbuf_put(b, out, (size_t)w), 0);
}

static void raw_world(struct world *w)
{
	world_init(w, 0, false);
	w->raw_client = true;
	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_strbuf_puts(&b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0);
	raw_frame(&b, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
	feed(w, true, (const uint8_t *)b.p, b.len);
	sk_strbuf_free(&b);
	pump_one(w, false);  /* the server's SETTINGS and ACK reach the (raw) agent */
}

/* The :status of the first HEADERS to stream sid in the agent's bytes, decoded by a fresh decoder. */
static int status_to_client(struct world *w, int32_t sid)
{
	const uint8_t *p = (const uint8_t *)w->to_client_raw.p;
	size_t n = w->to_client_raw.len;
	nghttp2_hd_inflater *inf;
	assert_int_equal(nghttp2_hd_inflate_new(&inf), 0);
	int status = -1;
	for (size_t off = 0; off + 9 <= n;) {
		size_t len = (size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2];
		int32_t id = (int32_t)((uint32_t)(p[off + 5] & 0x7f) << 24 | (uint32_t)p[off + 6] << 16 |
				       (uint32_t)p[off + 7] << 8 | p[off + 8]);
		if (p[off + 3] == NGHTTP2_HEADERS && id == sid) {
			const uint8_t *in = p + off + 9;
			size_t inlen = len;
			for (;;) {
				nghttp2_nv nv;
				int fl = 0;
				ssize_t rv = nghttp2_hd_inflate_hd2(inf, &nv, &fl, in, inlen, 1);
				assert_true(rv >= 0);
				in += rv;
				inlen -= (size_t)rv;
				if ((fl & NGHTTP2_HD_INFLATE_EMIT) && nv.namelen == 7 && memcmp(nv.name, ":status", 7) == 0)
					status = atoi((const char *)nv.value);
				if (fl & NGHTTP2_HD_INFLATE_FINAL)
					break;
			}
			/* an answer of ours leaves the decoder's table as it was: empty here */
			assert_int_equal(nghttp2_hd_inflate_get_num_table_entries(inf), 61);
			break;
		}
		off += 9 + len;
	}
	nghttp2_hd_inflate_del(inf);
	return status;
}

static void continuation_case(const char *path, bool denied)
{
	struct world w;
	raw_world(&w);
	nghttp2_hd_deflater *d;
	assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
	struct sk_strbuf first = { 0 }, second = { 0 }, b = { 0 };
	const nghttp2_nv a[] = { { (uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0 },
				 { (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0 },
				 { (uint8_t *)":authority", (uint8_t *)"api.example.com", 10, 15, 0 } };
	const nghttp2_nv p[] = { { (uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0 } };
	deflate(d, &first, a, 3);
	deflate(d, &second, p, 1);
	raw_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, first.p, first.len);
	raw_frame(&b, NGHTTP2_CONTINUATION, NGHTTP2_FLAG_END_HEADERS, 1, second.p, second.len);
	feed(&w, true, (const uint8_t *)b.p, b.len);
	pump_one(&w, false);
	assert_false(w.failed);
	assert_int_equal(w.jc.calls, 1);
	if (denied) {
		assert_int_equal(w.srv.requests, 0);
		assert_int_equal(status_to_client(&w, 1), 403);
	} else {
		assert_int_equal(w.srv.requests, 1);
		char want[128];
		(void)snprintf(want, sizeof(want), ":path: %s\n", path);
		assert_non_null(strstr(heads(&w.srv, 1), want));
	}
	nghttp2_hd_deflate_del(d);
	sk_strbuf_free(&first);
	sk_strbuf_free(&second);
	sk_strbuf_free(&b);
	world_free(&w);
}

static void test_path_in_continuation(void **state)
{
	(void)state;
	continuation_case("/forbidden/in-continuation", true);
	continuation_case("/v1/fine", false);
}

static void test_frame_inside_header_block_fails(void **state)
{
	(void)state;
	struct world w;
	raw_world(&w);
	nghttp2_hd_deflater *d;
	assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
	struct sk_strbuf blk = { 0 }, b = { 0 };
	const nghttp2_nv a[] = { { (uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0 } };
	deflate(d, &blk, a, 1);
	raw_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, blk.p, blk.len);
	raw_frame(&b, NGHTTP2_PING, 0, 0, "12345678", 8);
	feed(&w, true, (const uint8_t *)b.p, b.len);
	assert_true(w.failed);
	assert_string_equal(w.fail_reason, "h2_protocol_error");
	assert_int_equal(w.srv.requests, 0);
	nghttp2_hd_deflate_del(d);
	sk_strbuf_free(&blk);
	sk_strbuf_free(&b);
	world_free(&w);
}

/* A header block that never ends (CONTINUATION after CONTINUATION) is cut off at the bound, before it is
 * decoded; a frame larger than the server allows is refused from its header. */
static void test_block_and_frame_bounds(void **state)
{
	(void)state;
	struct world w;
	raw_world(&w);
	struct sk_strbuf b = { 0 };
	static uint8_t junk[16000];
	memset(junk, 0x40, sizeof(junk));
	raw_frame(&b, NGHTTP2_HEADERS, 0, 1, junk, sizeof(junk));
	for (int i = 0; i < 6; i++)
		raw_frame(&b, NGHTTP2_CONTINUATION, 0, 1, junk, sizeof(junk));
	feed(&w, true, (const uint8_t *)b.p, b.len);
	assert_true(w.failed);
	assert_string_equal(w.fail_reason, "h2_header_block_too_large");
	assert_int_equal(w.jc.calls, 0);
	assert_int_equal(w.srv.requests, 0);
	world_free(&w);

	raw_world(&w);
	sk_strbuf_reset(&b);
	const uint8_t big[9] = { 0x00, 0x40, 0x01, NGHTTP2_DATA, 0, 0, 0, 0, 1 };  /* 16385 bytes */
	assert_int_equal(sk_strbuf_put(&b, big, sizeof(big)), 0);
	feed(&w, true, (const uint8_t *)b.p, b.len);
	assert_true(w.failed);
	assert_string_equal(w.fail_reason, "h2_frame_size");
	sk_strbuf_free(&b);
	world_free(&w);
}

static void test_hpack_garbage_goaway(void **state)
{
	(void)state;
	struct world w;
	raw_world(&w);
	struct sk_strbuf b = { 0 };
	const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };  /* index far past any table */
	raw_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1, junk, sizeof(junk));
	size_t before = w.to_client_raw.len;
	feed(&w, true, (const uint8_t *)b.p, b.len);
	assert_true(w.failed);
	assert_string_equal(w.fail_reason, "h2_compression_error");
	assert_int_equal(w.srv.requests, 0);
	/* the last thing the agent got: GOAWAY, COMPRESSION_ERROR */
	const uint8_t *g = (const uint8_t *)w.to_client_raw.p + before;
	assert_int_equal(w.to_client_raw.len - before, 17);
	assert_int_equal(g[3], NGHTTP2_GOAWAY);
	assert_int_equal(g[16], NGHTTP2_COMPRESSION_ERROR);
	/* and it stays failed */
	sk_pt_out_reset(&w.out);
	assert_int_equal(w.f->ops->from_client(w.f, (const uint8_t *)"x", 1, &w.out), SK_PT_FAIL);
	sk_strbuf_free(&b);
	world_free(&w);
}

static void test_truncated_at_close(void **state)
{
	(void)state;
	struct world w;
	raw_world(&w);
	struct sk_strbuf b = { 0 };
	const uint8_t part[] = { 0x00, 0x00, 0x10, NGHTTP2_HEADERS, 0x05, 0, 0, 0, 1, 0x82 };
	assert_int_equal(sk_strbuf_put(&b, part, sizeof(part)), 0);
	feed(&w, true, (const uint8_t *)b.p, b.len);
	assert_false(w.failed);
	sk_pt_out_reset(&w.out);
	assert_int_equal(w.f->ops->closed(w.f, false, &w.out), SK_PT_PASS);
	assert_int_equal(w.f->ops->closed(w.f, true, &w.out), SK_PT_FAIL);
	assert_string_equal(w.out.reason, "h2_truncated");
	sk_strbuf_free(&b);
	world_free(&w);
}

static void test_bad_preface(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, false);
	w.raw_client = true;
	feed(&w, true, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18);
	assert_true(w.failed);
	assert_string_equal(w.fail_reason, "h2_bad_preface");
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed_denied_allowed),
		cmocka_unit_test(test_one_byte_chunks),
		cmocka_unit_test(test_authority_mismatch_421),
		cmocka_unit_test(test_answer_between_server_frames),
		cmocka_unit_test(test_answer_not_inside_server_header_block),
		cmocka_unit_test(test_denied_upload_returns_window),
		cmocka_unit_test(test_rewrite_hook_never_indexed),
		cmocka_unit_test(test_agent_shrinks_its_table),
		cmocka_unit_test(test_data_and_control_pass_without_copy),
		cmocka_unit_test(test_open_streams_bounded),
		cmocka_unit_test(test_data_after_server_reset_and_host_only),
		cmocka_unit_test(test_malformed_reset),
		cmocka_unit_test(test_trailers_and_server_table_size),
		cmocka_unit_test(test_path_in_continuation),
		cmocka_unit_test(test_frame_inside_header_block_fails),
		cmocka_unit_test(test_block_and_frame_bounds),
		cmocka_unit_test(test_hpack_garbage_goaway),
		cmocka_unit_test(test_truncated_at_close),
		cmocka_unit_test(test_bad_preface),
		cmocka_unit_test(test_body_scan_resets_the_stream),
		cmocka_unit_test(test_response_data_masked_across_frames),
		cmocka_unit_test(test_response_header_with_value_fails_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
