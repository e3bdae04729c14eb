/* sidecar/inspect/fuzz_h2_filter.c — libFuzzer target for the HTTP/2 request filter (h2_filter.h). The
 * input is the agent's byte stream after two steering bytes: byte 0 bit 0 prepends the connection
 * preface (so the fuzzer need not find it), bit 1 has the server ask for a header table of 0, bit 2 for
 * 32 KiB frames; byte 1 seeds the chunk sizes the stream is cut into. Whatever the filter lets through
 * goes to a real nghttp2 server session, whose output goes back through the filter (so the server's
 * SETTINGS are read and answers are put between its frames). Invariants: no crash or sanitizer report;
 * every request header block the server decodes belongs to a stream the judge allowed, with the same
 * :method, :path and :authority the judge saw (a denied, malformed or never-judged request never
 * reaches the server); the header hook's rewrite is what the server sees; a FAIL is final; what the agent
 * receives (the server's frames and the filter's own) is a whole sequence of frames, nothing inside a
 * header block of the server's.
 * Seeds: sidecar/inspect/fuzz/fuzz_h2_filter/. */
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/inspect/h2_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define MAXJ 64

struct judged {
	int32_t id;
	char method[32], path[64], authority[64];
	bool allowed;
};

/* The agent-bound stream's frame boundaries. */
struct framer {
	uint8_t h[9];
	size_t have;     /* header bytes read; 9 while in the payload */
	size_t rem;
	bool in_block;
	uint32_t block_sid;
};

static void frames(struct framer *fr, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (fr->have < 9) {
			fr->h[fr->have++] = p[i++];
			if (fr->have < 9)
				continue;
			size_t len = (size_t)fr->h[0] << 16 | (size_t)fr->h[1] << 8 | fr->h[2];
			uint8_t type = fr->h[3], flags = fr->h[4];
			uint32_t sid = ((uint32_t)fr->h[5] & 0x7f) << 24 | (uint32_t)fr->h[6] << 16 |
				       (uint32_t)fr->h[7] << 8 | fr->h[8];
			if (fr->in_block)
				CHECK(type == 9 && sid == fr->block_sid);
			if (type == 1 || type == 5 || type == 9) {
				fr->in_block = !(flags & 4);
				fr->block_sid = sid;
			}
			fr->rem = len;
			if (len == 0)
				fr->have = 0;
			continue;
		}
		size_t k = n - i < fr->rem ? n - i : fr->rem;
		i += k;
		fr->rem -= k;
		if (fr->rem == 0)
			fr->have = 0;
	}
}

struct run {
	struct framer to_agent;
	struct sk_strbuf backlog;  /* the server's bytes not yet through the filter */
	bool aligned;              /* the backlog begins with a frame (the server's output is whole frames) */
	struct judged j[MAXJ];
	size_t nj;
	bool overflow;            /* more judged than recorded: checks of later streams are skipped */
	nghttp2_session *srv;
	bool srv_dead;
	/* the block the server is decoding */
	char method[32], path[64], authority[64];
	bool have_method, have_path, have_authority, long_field;
	bool auth_seen, auth_bad;
};

static void cpy(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static enum sk_h2_decision judge(void *ctx, const struct sk_h2_request *rq, int *status, struct sk_strbuf *body,
				 const char **reason)
{
	struct run *r = ctx;
	/* allowed: a path with an 'a' right after its first slash, on the one host */
	bool allow = rq->path[0] == '/' && rq->path[1] == 'a' && strcmp(rq->authority, "a.example") == 0;
	if (r->nj < MAXJ) {
		struct judged *j = &r->j[r->nj++];
		j->id = rq->stream_id;
		cpy(j->method, sizeof(j->method), rq->method);
		cpy(j->path, sizeof(j->path), rq->path);
		cpy(j->authority, sizeof(j->authority), rq->authority);
		j->allowed = allow;
	} else {
		r->overflow = true;
	}
	if (allow)
		return SK_H2_ALLOW;
	*status = strcmp(rq->authority, "a.example") == 0 ? 403 : 421;
	*reason = *status == 403 ? "no_request_rule" : "host_sni_mismatch";
	sk_h2_denial_body(body, *reason, NULL, rq);
	return SK_H2_DENY;
}

static int hook(void *ctx, const struct sk_h2_request *rq, const uint8_t *name, size_t namelen,
		const uint8_t *value, size_t valuelen, struct sk_strbuf *new_value, bool *never_index)
{
	(void)ctx;
	(void)rq;
	(void)value;
	(void)valuelen;
	if (namelen == 13 && memcmp(name, "authorization", 13) == 0) {
		(void)sk_strbuf_puts(new_value, "Bearer swapped");
		*never_index = true;
		return 1;
	}
	if (namelen == 8 && memcmp(name, "x-refuse", 8) == 0)
		return -1;
	return 0;
}

static int on_begin(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
	(void)s;
	(void)fr;
	struct run *r = ud;
	r->have_method = r->have_path = r->have_authority = r->long_field = false;
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
	(void)s;
	(void)fr;
	struct run *r = ud;
	char *dst = NULL;
	bool *have = NULL;
	if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
		dst = r->method;
		have = &r->have_method;
	} else if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
		dst = r->path;
		have = &r->have_path;
	} else if (namelen == 10 && memcmp(name, ":authority", 10) == 0) {
		dst = r->authority;
		have = &r->have_authority;
	} else if (namelen == 13 && memcmp(name, "authorization", 13) == 0) {
		r->auth_seen = true;
		if (valuelen != 14 || memcmp(value, "Bearer swapped", 14) != 0 || !(flags & NGHTTP2_NV_FLAG_NO_INDEX))
			r->auth_bad = true;
	}
	if (dst) {
		if (valuelen >= 32)
			r->long_field = true;  /* recorded cut: compared only when short */
		size_t n = valuelen < 31 ? valuelen : 31;
		memcpy(dst, value, n);
		dst[n] = '\0';
		*have = true;
	}
	return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *ud)
{
	struct run *r = ud;
	if (fr->hd.type != NGHTTP2_HEADERS)
		return 0;
	CHECK(!r->auth_bad);
	if (r->overflow)
		return 0;
	const struct judged *j = NULL;
	for (size_t i = 0; i < r->nj; i++)
		if (r->j[i].id == fr->hd.stream_id)
			j = &r->j[i];
	CHECK(j && j->allowed);  /* nothing reaches the server that the judge did not allow */
	if (fr->headers.cat == NGHTTP2_HCAT_REQUEST && !r->long_field) {
		CHECK(r->have_method && r->have_path);
		CHECK(strncmp(r->method, j->method, 31) == 0);
		CHECK(strncmp(r->path, j->path, 31) == 0);
		if (r->have_authority)
			CHECK(strncmp(r->authority, j->authority, 31) == 0);
	}
	if (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) {
		/* answered, sometimes with a header block in CONTINUATION frames, for the filter's own
		 * answers to find their place among */
		static char big[20000];
		memset(big, 'v', sizeof(big));
		const nghttp2_nv nv[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, 0 },
					  { (uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big), 0 } };
		(void)nghttp2_submit_response(s, fr->hd.stream_id, nv, strchr(j->path, 'b') ? 2 : 1, NULL);
	}
	return 0;
}

static void to_server(struct run *r, const uint8_t *p, size_t n)
{
	if (r->srv_dead || n == 0)
		return;
	if (nghttp2_session_mem_recv(r->srv, p, n) < 0)
		r->srv_dead = true;  /* the agent's own protocol errors passed on: the server gives up */
}

static uint32_t next_cut(uint32_t *seed, size_t left)
{
	*seed = *seed * 1103515245u + 12345u;
	size_t n = 1 + (*seed >> 16) % 64;
	if (*seed & 0x80000000u)
		n = left;  /* often all the rest at once */
	return (uint32_t)(n < left ? n : left);
}

/* The server's output through the filter, in pieces, some of it (all when `all`) — the rest waits for
 * the next round, so the agent's next bytes may come while the server is inside a frame or a header
 * block; what reaches the agent is only framed. */
static bool from_server(struct run *r, struct sk_pt_filter *f, struct sk_pt_out *out, uint32_t *seed, bool all)
{
	for (int k = 0; k < 16 && !r->srv_dead; k++) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(r->srv, &p);
		if (n <= 0)
			break;
		CHECK(sk_strbuf_put(&r->backlog, p, (size_t)n) == 0);
	}
	size_t give = r->backlog.len;
	const uint8_t *p = (const uint8_t *)r->backlog.p;
	if (!all && give > 0) {
		*seed = *seed * 1103515245u + 12345u;
		if ((*seed >> 8 & 1) && r->aligned) {
			/* at a frame boundary: between a server HEADERS and its CONTINUATION, say */
			size_t nb = 0;
			for (size_t off = 0; off + 9 <= r->backlog.len;) {
				off += 9 + ((size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2]);
				nb++;
			}
			size_t pick = (*seed >> 9) % (nb + 1), off = 0;
			for (size_t b = 0; b < pick; b++)
				off += 9 + ((size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2]);
			give = off;
		} else {
			give = (*seed >> 9) % (give + 1);  /* anywhere, inside a frame too */
			r->aligned = give == r->backlog.len;
		}
	}
	if (give == r->backlog.len)
		r->aligned = true;
	for (size_t off = 0; off < give;) {
		size_t c = next_cut(seed, give - off);
		sk_pt_out_reset(out);
		enum sk_pt_verdict v = f->ops->from_server(f, p + off, c, out);
		if (v == SK_PT_FAIL)
			return false;
		CHECK(v == SK_PT_EMIT || (out->to_peer.len == 0 && out->to_sender.len == 0));
		if (v == SK_PT_PASS)
			frames(&r->to_agent, p + off, c);
		else
			frames(&r->to_agent, (const uint8_t *)out->to_peer.p, out->to_peer.len);
		off += c;
	}
	if (give > 0) {
		memmove(r->backlog.p, r->backlog.p + give, r->backlog.len - give);
		r->backlog.len -= give;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0];
	uint32_t seed = data[1] | 1u;
	data += 2;
	size -= 2;

	struct run *r = calloc(1, sizeof(*r));
	CHECK(r);
	r->aligned = true;
	struct sk_h2_filter_cfg cfg = { .judge = judge, .header = hook, .ctx = r };
	struct sk_pt_filter *f = NULL;
	struct sk_err err = { 0 };
	CHECK(sk_h2_filter_new(&cfg, &f, &err) == 0);
	nghttp2_session_callbacks *cb;
	CHECK(nghttp2_session_callbacks_new(&cb) == 0);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
	CHECK(nghttp2_session_server_new(&r->srv, cb, r) == 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_settings_entry se[2];
	size_t nse = 0;
	if (mode & 2)
		se[nse++] = (nghttp2_settings_entry){ NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0 };
	if (mode & 4)
		se[nse++] = (nghttp2_settings_entry){ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 32768 };
	CHECK(nghttp2_submit_settings(r->srv, NGHTTP2_FLAG_NONE, se, nse) == 0);

	struct sk_pt_out out = { 0 };
	bool failed = !from_server(r, f, &out, &seed, true);
	struct sk_strbuf in = { 0 };
	if (mode & 1)
		(void)sk_strbuf_puts(&in, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
	(void)sk_strbuf_put(&in, data, size);
	CHECK(sk_strbuf_ok(&in) == 0);

	for (size_t off = 0; off < in.len && !failed;) {
		size_t n = next_cut(&seed, in.len - off);
		const uint8_t *p = (const uint8_t *)in.p + off;
		sk_pt_out_reset(&out);
		enum sk_pt_verdict v = f->ops->from_client(f, p, n, &out);
		if (v == SK_PT_PASS) {
			CHECK(out.to_peer.len == 0 && out.to_sender.len == 0);
			to_server(r, p, n);
		} else if (v == SK_PT_EMIT) {
			to_server(r, (const uint8_t *)out.to_peer.p, out.to_peer.len);
			frames(&r->to_agent, (const uint8_t *)out.to_sender.p, out.to_sender.len);
		} else {
			CHECK(out.reason);
			frames(&r->to_agent, (const uint8_t *)out.to_sender.p, out.to_sender.len);
			failed = true;
			/* a FAIL is final */
			sk_pt_out_reset(&out);
			CHECK(f->ops->from_client(f, p, n, &out) == SK_PT_FAIL);
			break;
		}
		off += n;
		if (!from_server(r, f, &out, &seed, false))
			failed = true;
	}
	if (!failed && !from_server(r, f, &out, &seed, true))
		failed = true;
	if (!failed) {
		sk_pt_out_reset(&out);
		(void)f->ops->closed(f, true, &out);  /* either verdict is right; it must not crash */
	}
	sk_strbuf_free(&in);
	sk_pt_out_free(&out);
	f->ops->free(f);
	nghttp2_session_del(r->srv);
	sk_strbuf_free(&r->backlog);
	free(r);
	return 0;
}
