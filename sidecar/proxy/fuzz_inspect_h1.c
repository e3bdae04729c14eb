/* sidecar/proxy/fuzz_inspect_h1.c — libFuzzer target for the HTTP/1 filter of inspected connections
 * (inspect_h1.h). Byte 0 seeds how the rest, the agent's plaintext, is cut into chunks; it is fed once
 * whole and once cut. The judge allows GET and HEAD and refuses everything else (with a 403 whose answer
 * the filter makes keep-alive where framing allows); the SNI is api.example.com. After each chunk the
 * server answers every request that reached it (200 with a 2-byte body; none for HEAD), cut the same way.
 * Invariants:
 *   - nothing unjudged reaches the server: the bytes the filter lets on, read again by a fresh request
 *     tracker, are only heads the judge allowed with a Host equal to the SNI (and their bodies), never a
 *     framing error;
 *   - a PASS leaves the out buffers empty;
 *   - what the agent gets is whole responses one after another: the server's and the filter's answers,
 *     never an answer inside a response;
 *   - how the stream is cut changes nothing: the same bytes go on and the same answers come back (also
 *     for what the agent sends behind a websocket upgrade, which this server declines: held, then judged);
 *   - an upgrade reaches the server only as a websocket GET on the first request.
 * Seeds: sidecar/proxy/fuzz/fuzz_inspect_h1/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "sidecar/proxy/http_track.h"
#include "sidecar/proxy/inspect_h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define SNI "api.example.com"

static struct sk_req_denial denial = {
	.method = "X", .path = "/", .detail = "no_request_rule",
	.answer = (char *)"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	.answer_len = sizeof("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n") - 1,
};

static bool allowed_method(const char *m)
{
	return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

static const char *judge(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
			 const struct sk_req_denial **d)
{
	(void)ctx;
	(void)request;
	(void)head;
	(void)n;
	if (allowed_method(h->method))
		return NULL;
	*d = &denial;
	return "request_denied";
}

static bool refuse(void *ctx, uint32_t request, const char *reason, const char *method, const char *path)
{
	(void)ctx;
	(void)request;
	(void)reason;
	(void)method;
	(void)path;
	return true;
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

#define RESP_HEAD "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"

/* The server: reads the requests that reached it (a tracker over up from *off) and answers each. */
struct server {
	struct sk_http_track t;
	size_t off;
	struct sk_strbuf owed;   /* responses not yet fed to the filter */
};

static void server_read(struct server *sv, const struct sk_strbuf *up)
{
	while (sv->off < up->len) {
		size_t n = 0;
		struct sk_http_head h;
		enum sk_track_result r = sk_http_track_next(&sv->t, (const uint8_t *)up->p + sv->off, up->len - sv->off,
							    &n, &h, NULL);
		if (r == SK_TRACK_HOLD) {
			/* a websocket upgrade: this server declines it (the 200 queued at its head) */
			sk_http_track_upgrade_result(&sv->t, false);
			continue;
		}
		if (r != SK_TRACK_FORWARD && r != SK_TRACK_HEAD)
			return;
		if (r == SK_TRACK_HEAD)
			(void)sk_strbuf_puts(&sv->owed, strcmp(h.method, "HEAD") == 0 ? RESP_HEAD : RESP_HEAD "ok");
		sv->off += n;
	}
}

/* Feeds the owed responses to the filter in pieces; what reaches the agent into back, what the filter
 * sends the server meanwhile (the agent's bytes held behind a declined upgrade) into up, read and answered
 * in turn. false: the filter ended the connection. */
static bool server_answer(struct sk_pt_filter *f, struct server *sv, uint32_t *seed, struct sk_strbuf *back,
			  struct sk_pt_out *out, struct sk_strbuf *up)
{
	size_t off = 0;
	bool open = true;
	while (off < sv->owed.len && open) {
		size_t n = sv->owed.len - off;
		if (*seed) {
			n = 1 + xorshift(seed) % 48;
			if (n > sv->owed.len - off)
				n = sv->owed.len - off;
		}
		sk_pt_out_reset(out);
		const uint8_t *p = (const uint8_t *)sv->owed.p + off;
		enum sk_pt_verdict v = f->ops->from_server(f, p, n, out);
		CHECK(v != SK_PT_FAIL);
		CHECK(v != SK_PT_PASS || out->to_sender.len == 0);
		if (out->to_sender.len) {
			(void)sk_strbuf_put(up, out->to_sender.p, out->to_sender.len);
			server_read(sv, up);
		}
		if (v == SK_PT_PASS)
			(void)sk_strbuf_put(back, p, n);
		else
			(void)sk_strbuf_put(back, out->to_peer.p, out->to_peer.len);
		open = !out->close_after;
		off += n;
	}
	sk_strbuf_reset(&sv->owed);
	return open;
}

/* The agent's stream is whole responses, one after another. */
static void check_agent(const struct sk_strbuf *back)
{
	static const char head[] = RESP_HEAD;
	const char *p = back->p;
	size_t off = 0, len = back->len;
	while (off < len) {
		if (len - off >= sizeof(head) - 1 && memcmp(p + off, head, sizeof(head) - 1) == 0) {
			off += sizeof(head) - 1;
			if (len - off >= 2 && memcmp(p + off, "ok", 2) == 0)
				off += 2;
			continue;
		}
		/* one of the filter's answers: "HTTP/1.1 4xx", a Content-Length, its body */
		CHECK(len - off >= 12 && memcmp(p + off, "HTTP/1.1 4", 10) == 0);
		const char *end = memmem(p + off, len - off, "\r\n\r\n", 4);
		CHECK(end != NULL);
		const char *cl = memmem(p + off, (size_t)(end - (p + off)), "Content-Length: ", 16);
		CHECK(cl != NULL);
		size_t body = (size_t)strtoul(cl + 16, NULL, 10);
		off = (size_t)(end + 4 - p);
		CHECK(len - off >= body);
		off += body;
	}
}

/* Feeds buf in pieces (seed 0: whole); what went on into up, what came back into back. */
static void run(const uint8_t *buf, size_t len, uint32_t seed, struct sk_strbuf *up, struct sk_strbuf *back)
{
	struct server sv = { .off = 0 };
	sk_http_track_init(&sv.t);
	bool open = true;
	struct sk_h1_hooks hooks = { .judge = judge, .refuse = refuse };
	struct sk_pt_filter *f = NULL;
	struct sk_err err = { 0 };
	CHECK(sk_h1_filter_new(SNI, "0", &hooks, &f, &err) == 0);
	struct sk_pt_out out = { 0 };
	size_t off = 0;
	while (off < len && open) {
		size_t n = len - off;
		if (seed) {
			n = 1 + xorshift(&seed) % 64;
			if (n > len - off)
				n = len - off;
		}
		sk_pt_out_reset(&out);
		enum sk_pt_verdict v = f->ops->from_client(f, buf + off, n, &out);
		CHECK(v != SK_PT_FAIL);   /* no allocation fails here */
		if (v == SK_PT_PASS) {
			CHECK(out.to_peer.len == 0 && out.to_sender.len == 0 && !out.close_after);
			(void)sk_strbuf_put(up, buf + off, n);
		} else {
			(void)sk_strbuf_put(up, out.to_peer.p, out.to_peer.len);
		}
		(void)sk_strbuf_put(back, out.to_sender.p, out.to_sender.len);
		open = !out.close_after;
		off += n;
		server_read(&sv, up);
		if (open)
			open = server_answer(f, &sv, &seed, back, &out, up);
	}
	sk_strbuf_free(&sv.owed);
	sk_pt_out_reset(&out);
	(void)f->ops->closed(f, true, &out);
	CHECK(out.to_peer.len == 0);
	sk_pt_out_free(&out);
	f->ops->free(f);
	CHECK(sk_strbuf_ok(up) == 0 && sk_strbuf_ok(back) == 0);
}

/* The server's view: every head in what went on was allowed, for the SNI. */
static void check_upstream(const struct sk_strbuf *up)
{
	struct sk_http_track t;
	sk_http_track_init(&t);
	const uint8_t *p = (const uint8_t *)up->p;
	size_t off = 0;
	while (off < up->len) {
		size_t n = 0;
		struct sk_http_head h;
		enum sk_track_result r = sk_http_track_next(&t, p + off, up->len - off, &n, &h, NULL);
		if (r == SK_TRACK_NEED_MORE)
			return;   /* a body or head the agent had not finished */
		if (r == SK_TRACK_HOLD) {
			sk_http_track_upgrade_result(&t, false);   /* as the server declined it */
			continue;
		}
		CHECK(r == SK_TRACK_FORWARD || r == SK_TRACK_HEAD);
		if (r == SK_TRACK_HEAD) {
			CHECK(allowed_method(h.method));
			CHECK(!h.host_is_ip && strcasecmp(h.host, SNI) == 0);
			/* an upgrade only as a websocket GET on the first request */
			CHECK(!h.upgrade || (h.upgrade == SK_HTTP_UPGRADE_WEBSOCKET && strcmp(h.method, "GET") == 0 &&
					     t.requests == 1));
		}
		off += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	uint32_t seed = data[0] | 0x100u;
	struct sk_strbuf up1 = { 0 }, back1 = { 0 }, up2 = { 0 }, back2 = { 0 };
	run(data + 1, size - 1, 0, &up1, &back1);
	run(data + 1, size - 1, seed, &up2, &back2);
	check_upstream(&up1);
	check_agent(&back1);
	check_agent(&back2);
	CHECK(up1.len == up2.len && (up1.len == 0 || memcmp(up1.p, up2.p, up1.len) == 0));
	CHECK(back1.len == back2.len && (back1.len == 0 || memcmp(back1.p, back2.p, back1.len) == 0));
	sk_strbuf_free(&up1);
	sk_strbuf_free(&up2);
	sk_strbuf_free(&back1);
	sk_strbuf_free(&back2);
	return 0;
}
