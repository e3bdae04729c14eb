/* sidecar/inspect/fuzz_h2_mask.c — libFuzzer target for the `secrets:` paths of the HTTP/2 request filter
 * (h2_filter.h): the DATA body scan (cfg.body → sk_swap_body_scan) and the response mask (cfg.mask: DATA
 * masked in place, header blocks checked for a value, secret_in_response_header).
 * Input: byte 0 seeds the cuts, byte 1 picks the secret's value (values[]), then ops of (op, len, bytes):
 *   op % 5 = 0 agent DATA, 1 agent DATA with END_STREAM (the agent's last), 2 server DATA, 3 a server
 *   field x-echo: the bytes (in the response head when none was sent yet, else trailers ending the
 *   response), 4 the same split over HEADERS + CONTINUATION at a byte the input picks; op bit 7 pads a
 *   DATA frame. The server's header blocks are HPACK-coded by nghttp2's deflater (indexing, Huffman).
 * One request (stream 1, POST /a to the SNI), one response; the secret lists another host, so any
 * placeholder or value in the agent's body is misuse. Fed whole, cut at pseudo-random points, agent first.
 * Invariants:
 *   - the server's DATA for stream 1 never holds the placeholder or the value, in any case: a body
 *     carrying one is always refused;
 *   - a response header block carrying the value always ends the connection (FAIL), and no header block
 *     the agent gets carries it (decoded with an inflater of the agent's);
 *   - with the connection going on and the stream not refused, the agent's DATA payload for stream 1 is
 *     the server's (all of it once the response ended, else a prefix: the rest may be held), each byte
 *     the server's or '*', and no value;
 *   - the cut changes nothing: the same refusals, failures and (when not failed) the same DATA to the
 *     agent, and (when not refused) the same DATA to the server.
 * Seeds: sidecar/inspect/fuzz/fuzz_h2_mask/. */
#include <ctype.h>
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/inspect/h2_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define SNI "api.example.com"
#define PH "stockade-secret-gh"
#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

static const char *const values[] = { "ghp_S3cretV4lue0123", "k3y", "abab", "aXaXaY", "zzzzzzzz" };
static char *hosts[] = { (char *)"other.example.com" };
static char *in_hdrs[] = { (char *)"authorization" };

struct ctx {
	struct sk_swap_set set;
	unsigned body_refused, judged;
};

static enum sk_h2_decision judge(void *c, const struct sk_h2_request *rq, int *status, struct sk_strbuf *body,
				 const char **reason)
{
	struct ctx *x = c;
	(void)rq;
	(void)status;
	(void)body;
	(void)reason;
	x->judged++;
	return SK_H2_ALLOW;
}

static int body_hook(void *c, const struct sk_h2_request *rq, struct sk_swap_body *scan, const uint8_t *p, size_t n)
{
	struct ctx *x = c;
	(void)rq;
	struct sk_swap_misuse m;
	if (!sk_swap_body_scan(scan, &x->set, p, n, &m))
		return 0;
	x->body_refused++;
	return -1;
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static bool has_ci(const uint8_t *p, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++) {
		size_t j = 0;
		while (j < k && tolower(p[i + j]) == tolower((unsigned char)needle[j]))
			j++;
		if (j == k)
			return true;
	}
	return false;
}

static void frame(struct sk_strbuf *b, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n)
{
	uint8_t h[9] = { (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
			 (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid };
	(void)sk_strbuf_put(b, h, 9);
	if (n)
		(void)sk_strbuf_put(b, p, n);
}

static void data_frame(struct sk_strbuf *b, bool end, bool pad, const uint8_t *p, size_t n)
{
	if (!pad) {
		frame(b, 0, end ? 1 : 0, 1, p, n);
		return;
	}
	uint8_t buf[1 + 255 + 3] = { 3 };
	memcpy(buf + 1, p, n);
	memset(buf + 1 + n, 0, 3);
	frame(b, 0, (end ? 1 : 0) | 8, 1, buf, n + 4);
}

/* A literal field, no indexing, new name, both strings raw (< 127 bytes). */
static void lit(struct sk_strbuf *b, const char *name, const char *value)
{
	uint8_t z = 0, nl = (uint8_t)strlen(name), vl = (uint8_t)strlen(value);
	(void)sk_strbuf_put(b, &z, 1);
	(void)sk_strbuf_put(b, &nl, 1);
	(void)sk_strbuf_puts(b, name);
	(void)sk_strbuf_put(b, &vl, 1);
	(void)sk_strbuf_puts(b, value);
}

struct streams {
	struct sk_strbuf agent, srv;
	struct sk_strbuf srv_data;   /* the server's DATA payload for stream 1, in order */
	bool value_in_header;       /* a server header block carries the value */
	bool ended;                 /* the response ended (trailers with END_STREAM) */
};

/* The server's header block: status (when head) and one x-echo field, split at `split` (0: one frame). */
static void srv_block(struct streams *s, nghttp2_hd_deflater *d, bool head, bool end, const uint8_t *v, size_t n,
		      size_t split, const char *val)
{
	nghttp2_nv nv[2];
	size_t k = 0;
	if (head)
		nv[k++] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE };
	nv[k++] = (nghttp2_nv){ (uint8_t *)"x-echo", (uint8_t *)v, 6, n, NGHTTP2_NV_FLAG_NONE };
	uint8_t out[1024];
	ssize_t len = nghttp2_hd_deflate_hd(d, out, sizeof(out), nv, k);
	CHECK(len > 0);
	if (memmem(v, n, val, strlen(val)))
		s->value_in_header = true;
	uint8_t fl = end ? 1 : 0;
	if (split == 0 || split >= (size_t)len) {
		frame(&s->srv, 1, fl | 4, 1, out, (size_t)len);
		return;
	}
	frame(&s->srv, 1, fl, 1, out, split);
	frame(&s->srv, 9, 4, 1, out + split, (size_t)len - split);
}

static void build(const uint8_t *p, size_t n, const char *val, struct streams *s)
{
	nghttp2_hd_deflater *d = NULL;
	CHECK(nghttp2_hd_deflate_new(&d, 4096) == 0);
	(void)sk_strbuf_puts(&s->agent, PREFACE);
	frame(&s->agent, 4, 0, 0, NULL, 0);
	struct sk_strbuf blk = { 0 };
	lit(&blk, ":method", "POST");
	lit(&blk, ":scheme", "https");
	lit(&blk, ":path", "/a");
	lit(&blk, ":authority", SNI);
	CHECK(sk_strbuf_ok(&blk) == 0);
	frame(&s->agent, 1, 4, 1, (const uint8_t *)blk.p, blk.len);
	sk_strbuf_free(&blk);
	frame(&s->srv, 4, 0, 0, NULL, 0);
	frame(&s->srv, 4, 1, 0, NULL, 0);
	bool agent_done = false, head_sent = false, srv_done = false;
	size_t off = 0;
	while (off + 2 <= n) {
		uint8_t op = p[off], len = p[off + 1];
		off += 2;
		size_t k = len < n - off ? len : n - off;
		const uint8_t *b = p + off;
		off += k;
		bool pad = op & 0x80;
		switch (op % 5) {
		case 0:
		case 1:
			if (!agent_done)
				data_frame(&s->agent, op % 5 == 1, pad, b, k);
			agent_done = agent_done || op % 5 == 1;
			break;
		case 2:
			if (srv_done)
				break;
			if (!head_sent) {
				srv_block(s, d, true, false, (const uint8_t *)"-", 1, 0, val);
				head_sent = true;
			}
			data_frame(&s->srv, false, pad, b, k);
			(void)sk_strbuf_put(&s->srv_data, b, k);
			break;
		default:
			if (srv_done || k > 120)
				break;
			srv_block(s, d, !head_sent, head_sent, b, k, op % 5 == 4 ? 1 + (op >> 3) % 16 : 0, val);
			srv_done = head_sent;
			head_sent = true;
			break;
		}
	}
	s->ended = srv_done;
	nghttp2_hd_deflate_del(d);
	CHECK(sk_strbuf_ok(&s->agent) == 0 && sk_strbuf_ok(&s->srv) == 0 && sk_strbuf_ok(&s->srv_data) == 0);
}

/* The DATA payloads of stream 1 in a frame sequence (after skip bytes), padding left out; with val, the
 * header blocks are decoded (a fresh inflater: the sequence is one HPACK context) and none may carry it.
 * true when the frames were whole. */
static bool data_of(const struct sk_strbuf *b, size_t skip, struct sk_strbuf *out, const char *val)
{
	const uint8_t *p = (const uint8_t *)b->p;
	size_t off = skip;
	nghttp2_hd_inflater *inf = NULL;
	struct sk_strbuf blk = { 0 };
	CHECK(!val || nghttp2_hd_inflate_new(&inf) == 0);
	while (off + 9 <= b->len) {
		size_t len = (size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2];
		uint8_t type = p[off + 3], fl = p[off + 4];
		uint32_t sid = ((uint32_t)p[off + 5] & 0x7f) << 24 | (uint32_t)p[off + 6] << 16 |
			       (uint32_t)p[off + 7] << 8 | p[off + 8];
		if (off + 9 + len > b->len)
			break;
		const uint8_t *q = p + off + 9;
		if (type == 0 && sid == 1) {
			size_t dl = len, start = 0;
			if (fl & 8) {
				CHECK(len >= 1 && q[0] < len);
				start = 1;
				dl = len - 1 - q[0];
			}
			(void)sk_strbuf_put(out, q + start, dl);
		}
		if (inf && (type == 1 || type == 9)) {   /* the server's blocks: no padding, no priority */
			(void)sk_strbuf_put(&blk, q, len);
			CHECK(sk_strbuf_ok(&blk) == 0);
			for (const uint8_t *in = (const uint8_t *)blk.p, *end = in + blk.len; (fl & 4);) {
				nghttp2_nv nv;
				int flags = 0;
				ssize_t rv = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, (size_t)(end - in), 1);
				CHECK(rv >= 0);
				in += rv;
				if (flags & NGHTTP2_HD_INFLATE_EMIT)
					CHECK(!memmem(nv.value, nv.valuelen, val, strlen(val)));
				if (flags & NGHTTP2_HD_INFLATE_FINAL) {
					nghttp2_hd_inflate_end_headers(inf);
					sk_strbuf_reset(&blk);
					break;
				}
			}
		}
		off += 9 + len;
	}
	if (inf)
		nghttp2_hd_inflate_del(inf);
	sk_strbuf_free(&blk);
	CHECK(sk_strbuf_ok(out) == 0);
	return off == b->len;
}

struct result {
	struct sk_strbuf up, back;
	bool failed;
	struct ctx x;
};

static size_t piece(uint32_t *seed, size_t left, unsigned max)
{
	if (!*seed)
		return left;
	size_t n = 1 + xorshift(seed) % max;
	return n < left ? n : left;
}

static void run(const struct streams *s, const char *val, uint32_t seed, struct result *res)
{
	static const struct sk_secret secret = {
		.name = (char *)"gh", .placeholder = (char *)PH, .hosts = hosts, .n_hosts = 1, .in = in_hdrs, .n_in = 1,
	};
	struct sk_secret_value v = { .val = val, .len = strlen(val) };
	res->x = (struct ctx){ .set = { .secrets = &secret, .n = 1, .values = &v } };
	struct sk_swap_mask mask;
	CHECK(sk_swap_mask_init(&mask, &res->x.set) == 0);
	struct sk_h2_filter_cfg cfg = { .judge = judge, .body = body_hook, .mask = &mask, .ctx = &res->x };
	struct sk_pt_filter *f = NULL;
	struct sk_err err = { 0 };
	CHECK(sk_h2_filter_new(&cfg, &f, &err) == 0);
	struct sk_pt_out out = { 0 };
	const uint8_t *a = (const uint8_t *)s->agent.p, *sv = (const uint8_t *)s->srv.p;
	for (size_t off = 0, n; off < s->agent.len && !res->failed; off += n) {
		n = piece(&seed, s->agent.len - off, 64);
		sk_pt_out_reset(&out);
		enum sk_pt_verdict vd = f->ops->from_client(f, a + off, n, &out);
		if (vd == SK_PT_FAIL) {
			res->failed = true;
			break;
		}
		if (vd == SK_PT_PASS)
			(void)sk_strbuf_put(&res->up, a + off, n);
		else
			(void)sk_strbuf_put(&res->up, out.to_peer.p, out.to_peer.len);
	}
	for (size_t off = 0, n; off < s->srv.len && !res->failed; off += n) {
		n = piece(&seed, s->srv.len - off, 48);
		sk_pt_out_reset(&out);
		enum sk_pt_verdict vd = f->ops->from_server(f, sv + off, n, &out);
		if (vd == SK_PT_FAIL) {
			res->failed = true;
			(void)sk_strbuf_put(&res->back, out.to_peer.p, out.to_peer.len);   /* a GOAWAY, perhaps */
			break;
		}
		if (vd == SK_PT_PASS)
			(void)sk_strbuf_put(&res->back, sv + off, n);
		else
			(void)sk_strbuf_put(&res->back, out.to_peer.p, out.to_peer.len);
	}
	sk_pt_out_free(&out);
	f->ops->free(f);
	sk_swap_mask_free(&mask);
	CHECK(sk_strbuf_ok(&res->up) == 0 && sk_strbuf_ok(&res->back) == 0);
}

static bool same(const struct sk_strbuf *a, const struct sk_strbuf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static void check(const struct result *r, const struct streams *s, const char *val, struct sk_strbuf *up_data,
		  struct sk_strbuf *back_data)
{
	size_t vlen = strlen(val);
	(void)data_of(&r->up, sizeof(PREFACE) - 1, up_data, NULL);
	CHECK(!has_ci((const uint8_t *)up_data->p, up_data->len, PH));
	CHECK(!has_ci((const uint8_t *)up_data->p, up_data->len, val));
	if (s->value_in_header)
		CHECK(r->failed);
	bool whole = data_of(&r->back, 0, back_data, val);
	CHECK(back_data->len < vlen || !memmem(back_data->p, back_data->len, val, vlen));
	if (r->failed || r->x.body_refused)   /* a stream refused: what the agent still gets of it is not ours to say */
		return;
	CHECK(whole);
	/* the DATA of a response not ended may be held still (a server's close drops it) */
	CHECK(s->ended ? back_data->len == s->srv_data.len : back_data->len <= s->srv_data.len);
	for (size_t i = 0; i < back_data->len; i++)
		CHECK(back_data->p[i] == s->srv_data.p[i] || back_data->p[i] == '*');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > 16384)
		return 0;
	uint32_t seed = data[0] | 0x100u;
	const char *val = values[data[1] % (sizeof(values) / sizeof(values[0]))];
	struct streams s = { 0 };
	build(data + 2, size - 2, val, &s);
	struct result whole = { 0 }, cut = { 0 };
	run(&s, val, 0, &whole);
	run(&s, val, seed, &cut);
	struct sk_strbuf wu = { 0 }, wb = { 0 }, cu = { 0 }, cb = { 0 };
	check(&whole, &s, val, &wu, &wb);
	check(&cut, &s, val, &cu, &cb);
	CHECK(whole.failed == cut.failed && whole.x.body_refused == cut.x.body_refused);
	if (!whole.x.body_refused)
		CHECK(same(&wu, &cu));
	if (!whole.failed)
		CHECK(same(&wb, &cb));
	sk_strbuf_free(&wu);
	sk_strbuf_free(&wb);
	sk_strbuf_free(&cu);
	sk_strbuf_free(&cb);
	sk_strbuf_free(&whole.up);
	sk_strbuf_free(&whole.back);
	sk_strbuf_free(&cut.up);
	sk_strbuf_free(&cut.back);
	sk_strbuf_free(&s.agent);
	sk_strbuf_free(&s.srv);
	sk_strbuf_free(&s.srv_data);
	return 0;
}
