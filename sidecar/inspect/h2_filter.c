/* sidecar/inspect/h2_filter.c — the HTTP/2 request filter (h2_filter.h). */
#include "sidecar/inspect/h2_filter.h"

#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json_str.h"

enum {
	FT_DATA = 0, FT_HEADERS = 1, FT_PRIORITY = 2, FT_RST_STREAM = 3, FT_SETTINGS = 4, FT_PUSH_PROMISE = 5,
	FT_PING = 6, FT_GOAWAY = 7, FT_WINDOW_UPDATE = 8, FT_CONTINUATION = 9,
};
enum { FL_END_STREAM = 0x1, FL_ACK = 0x1, FL_END_HEADERS = 0x4, FL_PADDED = 0x8, FL_PRIORITY = 0x20 };
enum {
	E_NO_ERROR = 0x0, E_PROTOCOL = 0x1, E_INTERNAL = 0x2, E_STREAM_CLOSED = 0x5, E_FRAME_SIZE = 0x6,
	E_REFUSED_STREAM = 0x7, E_CANCEL = 0x8, E_COMPRESSION = 0x9, E_CALM = 0xb,
};
enum { SET_HEADER_TABLE_SIZE = 0x1, SET_MAX_FRAME_SIZE = 0x5 };

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN 24
#define FRAME_HDR 9
#define DEFAULT_FRAME 16384u
#define MAX_FRAME 16777215u
#define HPACK_DEFAULT_TABLE 4096u
#define PENDING_SETTINGS 8
#define NO_HTS UINT32_MAX
#define MAX_HELD_ANSWERS (1u << 20)

/* One open request the server has: allowed, its client side not ended. Its fields are kept for the
 * header hook of its trailers. */
struct stream {
	int32_t id;
	char *method, *authority, *path, *scheme;
	struct sk_swap_body scan;   /* its body prefix, for the body hook */
};

/* What happens to the payload of the client frame being read. */
/* C_SCAN: a DATA frame within its stream's scanned prefix (the body hook), collected whole and sent on
 * only once the hook saw it. */
enum cmode { C_PASS, C_DROP, C_COLLECT, C_SCAN };

/* A stream's DATA frames the response mask has not released all of (masked connections): the frames as
 * the server sent them, in q; for each, where its data is and how much of it the mask gave back (written
 * over the raw bytes). Frames keep their length and flags: a value is replaced by '*' of its length. */
struct qframe {
	size_t end, dstart, dlen, filled;
};
struct sq {
	int32_t id;
	struct sk_swap_mask m;
	struct sk_strbuf q;
	struct qframe *fr;
	size_t nfr, capfr;
};

/* One decoded header field: offsets into the arena (name NUL value NUL). */
struct field {
	size_t name, namelen, value, valuelen;
	bool never_index;
};

/* Ordered by size (no padding), grouped by direction within that. */
struct h2f {
	struct sk_pt_filter base;
	nghttp2_hd_inflater *inf;   /* the agent's encoder's peer */
	nghttp2_hd_deflater *def;   /* ours, toward the server */

	/* client → server */
	size_t preface_have;
	size_t hdr_have;
	uint64_t window_back;       /* DATA bytes dropped, not yet given back */
	struct stream *streams;
	size_t nstreams, capstreams;
	/* server → client */
	size_t shdr_have;
	size_t sparam_have;
	size_t pend_head, pend_n;
	/* the agent's own SETTINGS_HEADER_TABLE_SIZE (its decoder's), for the answers we put before it */
	size_t c_sparam_have;
	size_t c_pend_head, c_pend_n;

	/* response masking (cfg.mask): the server's frame being read, whole; its header blocks' frames held
	 * until the block is judged; per stream, the DATA frames waiting for the mask */
	nghttp2_hd_inflater *sinf;  /* the server's encoder's peer, to read its header blocks */
	struct sk_strbuf sframe, sblk, sblock;
	struct sq *sq;
	size_t nsq, capsq;

	struct sk_strbuf payload;   /* the HEADERS or CONTINUATION frame being collected */
	struct sk_strbuf block;     /* the header block so far */
	struct sk_strbuf to_client; /* our frames, waiting for a boundary between the server's */
	struct sk_h2_filter_cfg cfg;

	/* client → server */
	int32_t sid;
	uint32_t flen, frem;
	enum cmode mode;
	int32_t block_sid;
	int32_t client_max_id;      /* highest stream id the agent opened */
	int32_t server_max_id;      /* highest stream id sent to the server */
	uint32_t client_max_frame;  /* the largest SETTINGS_MAX_FRAME_SIZE the server announced */
	/* server → client */
	uint32_t srem;
	uint32_t s_hts;             /* the SETTINGS being read: its HEADER_TABLE_SIZE, NO_HTS when absent */
	uint32_t srv_max_frame;     /* the server's SETTINGS_MAX_FRAME_SIZE: our HEADERS are cut to it */
	uint32_t inf_hts;           /* the inflater's setting */
	uint32_t pend_hts[PENDING_SETTINGS];  /* each server SETTINGS the agent has not acknowledged */
	uint32_t c_hts;             /* the agent's SETTINGS being read: its HEADER_TABLE_SIZE or NO_HTS */
	uint32_t c_acked;           /* the agent's table size the server acknowledged last */
	uint32_t c_pend[PENDING_SETTINGS];    /* each agent SETTINGS the server has not acknowledged */

	bool failed;
	/* client → server */
	bool in_frame;              /* a header was read, its payload (frem bytes) not all */
	uint8_t type, flags;
	bool remove_at_end;         /* DATA with END_STREAM of an open stream */
	bool in_block;
	uint8_t block_flags;        /* END_STREAM, PRIORITY of its HEADERS */
	/* server → client */
	bool s_in_frame;
	bool s_started;             /* the server's first frame (its SETTINGS, RFC 9113 §3.4) went by */
	bool s_settings;            /* a SETTINGS (not ACK) is being read */
	bool s_in_block;            /* inside a header block of the server's (no END_HEADERS yet) */
	bool c_settings;            /* an agent SETTINGS (not ACK) is being read */
	bool c_expect;              /* the agent's decoder wants a size update before the next block */
	uint8_t c_sparam[6];
	uint8_t block_prio[5];
	uint8_t sparam[6];
	uint8_t hdr[FRAME_HDR];
	uint8_t shdr[FRAME_HDR];
};

static void sq_remove(struct h2f *f, int32_t id);

/* ---------------------------------------------------------------------------------------------------- */
/* Frames */

static void frame_hdr(uint8_t h[FRAME_HDR], uint32_t len, uint8_t type, uint8_t flags, int32_t sid)
{
	h[0] = (uint8_t)(len >> 16);
	h[1] = (uint8_t)(len >> 8);
	h[2] = (uint8_t)len;
	h[3] = type;
	h[4] = flags;
	h[5] = (uint8_t)((uint32_t)sid >> 24 & 0x7f);
	h[6] = (uint8_t)((uint32_t)sid >> 16);
	h[7] = (uint8_t)((uint32_t)sid >> 8);
	h[8] = (uint8_t)sid;
}

static void put_frame_hdr(struct sk_strbuf *b, uint32_t len, uint8_t type, uint8_t flags, int32_t sid)
{
	uint8_t h[FRAME_HDR];
	frame_hdr(h, len, type, flags, sid);
	(void)sk_strbuf_put(b, h, sizeof(h));  /* oom sticks: checked by the caller */
}

static void put_u32(struct sk_strbuf *b, uint32_t v)
{
	uint8_t p[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	(void)sk_strbuf_put(b, p, sizeof(p));
}

static void put_rst(struct sk_strbuf *b, int32_t sid, uint32_t code)
{
	put_frame_hdr(b, 4, FT_RST_STREAM, 0, sid);
	put_u32(b, code);
}

static void put_window_update(struct sk_strbuf *b, int32_t sid, uint64_t n)
{
	while (n > 0) {
		uint32_t step = n > 0x7fffffff ? 0x7fffffff : (uint32_t)n;
		put_frame_hdr(b, 4, FT_WINDOW_UPDATE, 0, sid);
		put_u32(b, step);
		n -= step;
	}
}

static void put_goaway(struct sk_strbuf *b, int32_t last, uint32_t code)
{
	put_frame_hdr(b, 8, FT_GOAWAY, 0, 0);
	put_u32(b, (uint32_t)last);
	put_u32(b, code);
}

/* HPACK integer with an n-bit prefix (RFC 7541 §5.1); first carries the pattern bits above the prefix. */
static void hpack_int(struct sk_strbuf *b, uint8_t first, unsigned bits, size_t v)
{
	size_t max = ((size_t)1 << bits) - 1;
	if (v < max) {
		uint8_t c = (uint8_t)(first | v);
		(void)sk_strbuf_put(b, &c, 1);
		return;
	}
	uint8_t c = (uint8_t)(first | max);
	(void)sk_strbuf_put(b, &c, 1);
	v -= max;
	while (v >= 128) {
		c = (uint8_t)(0x80 | (v & 0x7f));
		(void)sk_strbuf_put(b, &c, 1);
		v >>= 7;
	}
	c = (uint8_t)v;
	(void)sk_strbuf_put(b, &c, 1);
}

static void hpack_str(struct sk_strbuf *b, const char *s, size_t n)
{
	hpack_int(b, 0x00, 7, n);  /* H = 0: no Huffman */
	(void)sk_strbuf_put(b, s, n);
}

/* A literal field without indexing (RFC 7541 §6.2.2), name from the static table (idx) or literal. */
static void hpack_literal(struct sk_strbuf *b, size_t idx, const char *name, const char *value)
{
	hpack_int(b, 0x00, 4, idx);
	if (idx == 0)
		hpack_str(b, name, strlen(name));
	hpack_str(b, value, strlen(value));
}

/* The answer to a denied stream, toward the agent. Its header block is written by hand, not by an
 * nghttp2_hd_deflater: the agent's HPACK decoder belongs to the server's encoder, and a block of ours
 * must leave it as it was — static-table names and literals without indexing only, no dynamic table
 * size update; a deflater indexes and may emit a size update, and has no setting to stop either. */
static void put_answer(struct sk_strbuf *b, int32_t sid, int status, const char *reason,
		       const struct sk_strbuf *body, bool request_ended)
{
	char st[16], cl[24], why[64];
	(void)snprintf(st, sizeof(st), "%d", status);  /* fits: 100..999 */
	(void)snprintf(cl, sizeof(cl), "%zu", body->len);
	size_t w = 0;
	/* the header carries our own token; anything else in it is replaced, so the field stays valid */
	for (const char *r = reason ? reason : "denied"; *r && w < sizeof(why) - 1; r++)
		why[w++] = ((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '_' || *r == '-') ? *r : '_';
	why[w] = '\0';

	struct sk_strbuf hb = { 0 };
	hpack_literal(&hb, 8, NULL, st);                    /* :status */
	hpack_literal(&hb, 31, NULL, "application/json");   /* content-type */
	hpack_literal(&hb, 28, NULL, cl);                   /* content-length */
	hpack_literal(&hb, 0, "x-stockade-reason", why);
	if (sk_strbuf_ok(&hb) < 0) {
		b->oom = true;
		sk_strbuf_free(&hb);
		return;
	}
	/* the block is < 200 bytes: one HEADERS frame, under any peer's maximum frame size */
	put_frame_hdr(b, (uint32_t)hb.len, FT_HEADERS, (uint8_t)(FL_END_HEADERS | (body->len ? 0 : FL_END_STREAM)),
		      sid);
	(void)sk_strbuf_put(b, hb.p, hb.len);
	sk_strbuf_free(&hb);
	for (size_t off = 0; off < body->len;) {
		size_t n = body->len - off > DEFAULT_FRAME ? DEFAULT_FRAME : body->len - off;
		put_frame_hdr(b, (uint32_t)n, FT_DATA, off + n == body->len ? FL_END_STREAM : 0, sid);
		(void)sk_strbuf_put(b, body->p + off, n);
		off += n;
	}
	/* An answer before the request ended is not followed by RST_STREAM NO_ERROR, which RFC 9113 §8.1
	 * allows: curl (7.88) then fails the transfer while it still uploads ("Stream error in the HTTP/2
	 * framing layer"), and the agent would never read its 403. The rest of the upload is dropped here
	 * instead, its window given back (drop_data). */
	(void)request_ended;
}

void sk_h2_denial_body(struct sk_strbuf *body, const char *reason, const char *rule,
		       const struct sk_h2_request *rq)
{
	(void)sk_strbuf_puts(body, "{\"error\":\"stockade_denied\",\"reason\":");
	(void)sk_json_str_buf(body, reason ? reason : "");
	(void)sk_strbuf_puts(body, ",\"rule\":");
	(void)sk_json_str_buf(body, rule ? rule : "");
	(void)sk_strbuf_puts(body, ",\"method\":");
	(void)sk_json_str_buf(body, rq->method);
	(void)sk_strbuf_puts(body, ",\"host\":");
	(void)sk_json_str_buf(body, rq->authority);
	(void)sk_strbuf_puts(body, ",\"path\":");
	(void)sk_json_str_buf(body, rq->path);
	(void)sk_strbuf_puts(body, "}\n");
}

/* ---------------------------------------------------------------------------------------------------- */
/* The output of one from_client call: the chunk's bytes that pass, in order, without a copy as long as
 * they are the chunk itself; the first difference (a byte held, dropped or made up) copies what passed
 * so far into to_peer, and from then on everything goes there. */
struct emit {
	const uint8_t *buf;
	size_t len;
	size_t passed;    /* buf[0..passed) passes unchanged, nothing else so far */
	bool copying;     /* to_peer holds the output */
	struct sk_strbuf *out;
};

static void em_copy(struct emit *e)
{
	if (!e->copying) {
		e->copying = true;
		(void)sk_strbuf_put(e->out, e->buf, e->passed);
	}
}

static void em_pass(struct emit *e, size_t off, size_t n)
{
	if (!e->copying && off == e->passed) {
		e->passed += n;
		return;
	}
	em_copy(e);
	(void)sk_strbuf_put(e->out, e->buf + off, n);
}

static void em_bytes(struct emit *e, const void *p, size_t n)
{
	em_copy(e);
	(void)sk_strbuf_put(e->out, p, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Streams */

static struct stream *stream_find(struct h2f *f, int32_t id)
{
	for (size_t i = 0; i < f->nstreams; i++)
		if (f->streams[i].id == id)
			return &f->streams[i];
	return NULL;
}

static void stream_clear(struct stream *s)
{
	sk_swap_body_reset(&s->scan);
	free(s->method);
	free(s->authority);
	free(s->path);
	free(s->scheme);
}

static void stream_remove(struct h2f *f, int32_t id)
{
	struct stream *s = stream_find(f, id);
	if (!s)
		return;
	stream_clear(s);
	*s = f->streams[--f->nstreams];
}

static int stream_add(struct h2f *f, const struct sk_h2_request *rq)
{
	if (f->nstreams == f->capstreams) {
		size_t cap = f->capstreams ? f->capstreams * 2 : 8;
		struct stream *n = realloc(f->streams, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		f->streams = n;
		f->capstreams = cap;
	}
	struct stream s = {
		.id = rq->stream_id, .method = strdup(rq->method), .authority = strdup(rq->authority),
		.path = strdup(rq->path), .scheme = strdup(rq->scheme),
	};
	if (!s.method || !s.authority || !s.path || !s.scheme) {
		stream_clear(&s);
		return -ENOMEM;
	}
	f->streams[f->nstreams++] = s;
	return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Toward the agent */

/* Where a frame of ours may go into the server→client stream: between two of the server's frames, not
 * inside one of its header blocks (HEADERS and its CONTINUATION frames admit nothing in between), and
 * after its first frame (the agent must read the server's SETTINGS first). */
static bool server_at_boundary(const struct h2f *f)
{
	return f->s_started && f->shdr_have == 0 && !f->s_in_frame && !f->s_in_block;
}

/* Moves our frames for the agent to dst, at the place in the server's stream where they go. Once the
 * server acknowledged an agent's smaller header table, the agent's decoder wants the next header block
 * to begin with a dynamic table size update (RFC 7541 §4.2); if that block is an answer of ours, it
 * carries one, to the acknowledged size: the server's encoder already uses no more than that (it applied
 * the setting before acknowledging it), so the agent's table stays a superset of the encoder's and every
 * index the server sends still means the same. */
static void take_to_client(struct h2f *f, struct sk_strbuf *dst)
{
	const uint8_t *p = (const uint8_t *)f->to_client.p;
	size_t n = f->to_client.len;
	for (size_t off = 0; f->c_expect && off + FRAME_HDR <= n;) {
		size_t len = (size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2];
		if (p[off + 3] != FT_HEADERS) {
			off += FRAME_HDR + len;
			continue;
		}
		struct sk_strbuf upd = { 0 };
		hpack_int(&upd, 0x20, 5, f->c_acked);
		(void)sk_strbuf_put(dst, p, off);
		if (sk_strbuf_ok(&upd) < 0) {
			dst->oom = true;
		} else {
			/* our HEADERS are one frame with END_HEADERS, a few hundred bytes */
			put_frame_hdr(dst, (uint32_t)(len + upd.len), FT_HEADERS, p[off + 4],
				      (int32_t)(((uint32_t)p[off + 5] & 0x7f) << 24 | (uint32_t)p[off + 6] << 16 |
						(uint32_t)p[off + 7] << 8 | p[off + 8]));
			(void)sk_strbuf_put(dst, upd.p, upd.len);
		}
		sk_strbuf_free(&upd);
		(void)sk_strbuf_put(dst, p + off + FRAME_HDR, n - off - FRAME_HDR);
		f->c_expect = false;
		sk_strbuf_reset(&f->to_client);
		return;
	}
	(void)sk_strbuf_put(dst, p, n);
	sk_strbuf_reset(&f->to_client);
}

/* Our frames go to the agent now if the server's stream is between frames, else from_server puts them
 * in at its next boundary. */
static void flush_to_client(struct h2f *f, struct sk_pt_out *out)
{
	if (f->to_client.len == 0 || !server_at_boundary(f))
		return;
	take_to_client(f, &out->to_sender);
}

/* A connection error (RFC 9113 §5.4.1): GOAWAY to the agent, nothing more to the server. */
static enum sk_pt_verdict conn_error(struct h2f *f, struct sk_pt_out *out, uint32_t code, const char *reason)
{
	f->failed = true;
	sk_strbuf_reset(&out->to_peer);
	sk_strbuf_reset(&out->to_sender);
	/* inside a server frame, a GOAWAY would be garbage to the agent: it sees the close alone */
	if (server_at_boundary(f)) {
		take_to_client(f, &out->to_sender);
		put_goaway(&out->to_sender, f->client_max_id, code);
		if (sk_strbuf_ok(&out->to_sender) < 0)
			sk_strbuf_reset(&out->to_sender);
	}
	sk_strbuf_reset(&f->to_client);
	out->reason = reason;
	return SK_PT_FAIL;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Header blocks */

struct fields {
	struct sk_strbuf arena;
	struct field *v;
	size_t n, cap;
	size_t list_size;     /* RFC 9113 §6.5.2's measure */
	bool too_large;
};

static void fields_free(struct fields *fl)
{
	sk_strbuf_free(&fl->arena);
	free(fl->v);
}

static const char *fname(const struct fields *fl, size_t i) { return fl->arena.p + fl->v[i].name; }
static const char *fvalue(const struct fields *fl, size_t i) { return fl->arena.p + fl->v[i].value; }

static int fields_add(struct fields *fl, const nghttp2_nv *nv)
{
	fl->list_size += nv->namelen + nv->valuelen + 32;
	if (fl->too_large)
		return 0;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 16;
		struct field *n = realloc(fl->v, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		fl->v = n;
		fl->cap = cap;
	}
	struct field *d = &fl->v[fl->n];
	d->name = fl->arena.len;
	d->namelen = nv->namelen;
	(void)sk_strbuf_put(&fl->arena, nv->name, nv->namelen);
	(void)sk_strbuf_put(&fl->arena, "", 1);
	d->value = fl->arena.len;
	d->valuelen = nv->valuelen;
	(void)sk_strbuf_put(&fl->arena, nv->value, nv->valuelen);
	(void)sk_strbuf_put(&fl->arena, "", 1);
	d->never_index = nv->flags & NGHTTP2_NV_FLAG_NO_INDEX;
	if (sk_strbuf_ok(&fl->arena) < 0)
		return -ENOMEM;
	fl->n++;
	return 0;
}

/* Decodes the whole block. 0, -EPROTO (an HPACK error: the decoder's state is lost), -ENOMEM. */
static int decode_block(struct h2f *f, struct fields *fl, size_t max_list)
{
	const uint8_t *in = (const uint8_t *)f->block.p;
	size_t inlen = f->block.len;
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t rv = nghttp2_hd_inflate_hd2(f->inf, &nv, &flags, in, inlen, 1);
		if (rv < 0)
			return rv == NGHTTP2_ERR_NOMEM ? -ENOMEM : -EPROTO;
		in += rv;
		inlen -= (size_t)rv;
		if (flags & NGHTTP2_HD_INFLATE_EMIT) {
			/* decoding goes on past the bound (the table must follow the block), storing stops */
			if (fields_add(fl, &nv) < 0)
				return -ENOMEM;
			if (fl->list_size > max_list)
				fl->too_large = true;
		}
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(f->inf);
			return 0;
		}
		if (rv == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT))
			return -EPROTO;  /* no progress: never expected with in_final, refused rather than spun */
	}
}

static bool is_conn_specific(const char *n)
{
	static const char *const bad[] = { "connection", "keep-alive", "proxy-connection", "transfer-encoding",
					   "upgrade" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(bad); i++)
		if (strcmp(n, bad[i]) == 0)
			return true;
	return false;
}

/* A regular field as RFC 9113 §8.2 allows it in a request or trailers. */
static bool regular_ok(const struct fields *fl, size_t i)
{
	const char *n = fname(fl, i), *v = fvalue(fl, i);
	if (!nghttp2_check_header_name((const uint8_t *)n, fl->v[i].namelen) || n[0] == ':')
		return false;
	if (!nghttp2_check_header_value_rfc9113((const uint8_t *)v, fl->v[i].valuelen))
		return false;
	if (is_conn_specific(n))
		return false;
	if (strcmp(n, "te") == 0 && strcmp(v, "trailers") != 0)
		return false;
	return true;
}

enum req_check { RQ_OK, RQ_MALFORMED, RQ_TUNNEL };

/* RFC 9113 §8.1.1, §8.3.1 for a request's fields; fills rq (borrowing the arena). */
static enum req_check check_request(const struct fields *fl, struct sk_h2_request *rq)
{
	const char *method = NULL, *scheme = NULL, *authority = NULL, *path = NULL, *host = NULL;
	bool regular = false, tunnel = false;
	for (size_t i = 0; i < fl->n; i++) {
		const char *n = fname(fl, i), *v = fvalue(fl, i);
		if (n[0] != ':') {
			regular = true;
			if (!regular_ok(fl, i))
				return RQ_MALFORMED;
			if (strcmp(n, "host") == 0) {
				if (host)
					return RQ_MALFORMED;
				host = v;
			}
			continue;
		}
		if (regular || !nghttp2_check_header_value_rfc9113((const uint8_t *)v, fl->v[i].valuelen))
			return RQ_MALFORMED;
		const char **slot = strcmp(n, ":method") == 0      ? &method
				    : strcmp(n, ":scheme") == 0    ? &scheme
				    : strcmp(n, ":authority") == 0 ? &authority
				    : strcmp(n, ":path") == 0      ? &path
								   : NULL;
		if (strcmp(n, ":protocol") == 0) {
			tunnel = true;
			continue;
		}
		if (!slot || *slot)
			return RQ_MALFORMED;
		*slot = v;
	}
	if (!method)
		return RQ_MALFORMED;
	if (tunnel || strcmp(method, "CONNECT") == 0)
		return RQ_TUNNEL;
	if (!scheme || !path || !path[0])
		return RQ_MALFORMED;
	if (path[0] != '/' && !(strcmp(path, "*") == 0 && strcmp(method, "OPTIONS") == 0))
		return RQ_MALFORMED;
	/* two names for the host, read differently by different servers: refused */
	if (authority && host && strcmp(authority, host) != 0)
		return RQ_MALFORMED;
	rq->method = method;
	rq->scheme = scheme;
	rq->path = path;
	rq->authority = authority ? authority : host ? host : "";
	return RQ_OK;
}

static bool check_trailers(const struct fields *fl)
{
	for (size_t i = 0; i < fl->n; i++)
		if (!regular_ok(fl, i))
			return false;
	return true;
}

/* The fields re-encoded for the server, the hook asked about each regular one. 0, 1 (the hook refused),
 * -ENOMEM, -EPROTO (the deflater failed: its table is lost). */
static int encode_block(struct h2f *f, const struct fields *fl, const struct sk_h2_request *rq,
			struct sk_strbuf *enc)
{
	int rc = 0;
	struct sk_strbuf repl = { 0 }, nv_new = { 0 };
	size_t *roff = calloc(fl->n ? fl->n : 1, sizeof(*roff) * 2);  /* [2i]: offset, [2i+1]: len + 1 */
	nghttp2_nv *nva = calloc(fl->n ? fl->n : 1, sizeof(*nva));
	bool *noidx = calloc(fl->n ? fl->n : 1, sizeof(*noidx));
	if (!roff || !nva || !noidx) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < fl->n; i++) {
		noidx[i] = fl->v[i].never_index;
		if (!f->cfg.header || fname(fl, i)[0] == ':')
			continue;
		sk_strbuf_reset(&nv_new);
		int h = f->cfg.header(f->cfg.ctx, rq, (const uint8_t *)fname(fl, i), fl->v[i].namelen,
				      (const uint8_t *)fvalue(fl, i), fl->v[i].valuelen, &nv_new, &noidx[i]);
		if (h < 0) {
			rc = 1;
			goto out;
		}
		if (h == 2) {
			roff[2 * i + 1] = SIZE_MAX;   /* dropped */
			continue;
		}
		if (h == 1) {
			if (sk_strbuf_ok(&nv_new) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			roff[2 * i] = repl.len;
			roff[2 * i + 1] = nv_new.len + 1;
			(void)sk_strbuf_put(&repl, nv_new.p ? nv_new.p : "", nv_new.len);
		}
	}
	if (sk_strbuf_ok(&repl) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	size_t nn = 0;
	for (size_t i = 0; i < fl->n; i++) {
		if (roff[2 * i + 1] == SIZE_MAX)
			continue;
		nghttp2_nv *o = &nva[nn++];
		o->name = (uint8_t *)(fl->arena.p + fl->v[i].name);
		o->namelen = fl->v[i].namelen;
		if (roff[2 * i + 1]) {
			o->value = (uint8_t *)(repl.p ? repl.p + roff[2 * i] : "");
			o->valuelen = roff[2 * i + 1] - 1;
		} else {
			o->value = (uint8_t *)(fl->arena.p + fl->v[i].value);
			o->valuelen = fl->v[i].valuelen;
		}
		o->flags = noidx[i] ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
	}
	size_t bound = nghttp2_hd_deflate_bound(f->def, nva, nn);
	sk_strbuf_reset(enc);
	/* the deflater writes into room for its bound; enc takes what it wrote */
	void *room = calloc(1, bound ? bound : 1);
	if (!room) {
		rc = -ENOMEM;
		goto out;
	}
	ssize_t w = nghttp2_hd_deflate_hd(f->def, room, bound, nva, nn);
	if (w < 0)
		rc = w == NGHTTP2_ERR_NOMEM ? -ENOMEM : -EPROTO;
	else if (sk_strbuf_put(enc, room, (size_t)w) < 0)
		rc = -ENOMEM;
	free(room);
out:
	sk_strbuf_free(&repl);
	sk_strbuf_free(&nv_new);
	free(roff);
	free(nva);
	free(noidx);
	return rc;
}

/* HEADERS (+ CONTINUATION) toward the server, cut at its maximum frame size. */
static void emit_headers(struct h2f *f, struct emit *e, int32_t sid, const struct sk_strbuf *enc, bool end_stream,
			 const uint8_t *prio)
{
	size_t max = f->srv_max_frame, off = 0;
	bool first = true;
	do {
		size_t head = first && prio ? 5 : 0;
		size_t n = enc->len - off > max - head ? max - head : enc->len - off;
		bool last = off + n == enc->len;
		uint8_t fl = (uint8_t)(last ? FL_END_HEADERS : 0);
		uint8_t hdr[FRAME_HDR + 5];
		if (first)
			fl = (uint8_t)(fl | (end_stream ? FL_END_STREAM : 0) | (prio ? FL_PRIORITY : 0));
		frame_hdr(hdr, (uint32_t)(n + head), first ? FT_HEADERS : FT_CONTINUATION, fl, sid);
		if (head)
			memcpy(hdr + FRAME_HDR, prio, 5);
		em_bytes(e, hdr, FRAME_HDR + head);
		if (n)
			em_bytes(e, enc->p + off, n);
		off += n;
		first = false;
	} while (off < enc->len);
}

static void tell_refused(struct h2f *f, const struct sk_h2_request *rq, const char *reason)
{
	if (!f->cfg.refused)
		return;
	struct sk_h2_request shown = *rq;
	shown.method = rq->method ? rq->method : "";
	shown.authority = rq->authority ? rq->authority : "";
	shown.path = rq->path ? rq->path : "";
	shown.scheme = rq->scheme ? rq->scheme : "";
	f->cfg.refused(f->cfg.ctx, &shown, reason);
}

/* Judges, answers or sends on one whole header block. false after a connection error (its verdict in *v). */
static bool process_block(struct h2f *f, struct emit *e, struct sk_pt_out *out, enum sk_pt_verdict *v)
{
	int32_t sid = f->block_sid;
	bool end_stream = f->block_flags & FL_END_STREAM;
	const uint8_t *prio = (f->block_flags & FL_PRIORITY) ? f->block_prio : NULL;
	struct fields fl = { 0 };
	struct sk_strbuf enc = { 0 }, body = { 0 };
	bool ok = true;
	f->in_block = false;

	int rc = decode_block(f, &fl, f->cfg.max_list);
	sk_strbuf_reset(&f->block);
	if (rc < 0) {
		*v = rc == -ENOMEM ? conn_error(f, out, E_INTERNAL, "h2_out_of_memory")
				   : conn_error(f, out, E_COMPRESSION, "h2_compression_error");
		ok = false;
		goto out;
	}

	struct stream *s = stream_find(f, sid);
	if (s) {  /* trailers of an open request */
		struct sk_h2_request rq = { .method = s->method, .authority = s->authority, .path = s->path,
					    .scheme = s->scheme, .stream_id = sid };
		if (fl.too_large || !end_stream || !check_trailers(&fl)) {
			tell_refused(f, &rq, "h2_malformed_trailers");
			put_rst(&f->to_client, sid, E_PROTOCOL);
			em_copy(e);
			put_rst(e->out, sid, E_CANCEL);
			stream_remove(f, sid);
			goto out;
		}
		rc = encode_block(f, &fl, &rq, &enc);
		if (rc == 1) {
			tell_refused(f, &rq, "h2_header_refused");
			put_rst(&f->to_client, sid, E_INTERNAL);
			em_copy(e);
			put_rst(e->out, sid, E_CANCEL);
		} else if (rc < 0) {
			*v = conn_error(f, out, E_INTERNAL, rc == -ENOMEM ? "h2_out_of_memory" : "h2_encode_error");
			ok = false;
			goto out;
		} else {
			emit_headers(f, e, sid, &enc, true, prio);
		}
		stream_remove(f, sid);
		goto out;
	}
	if (sid <= f->client_max_id) {  /* a closed stream: ours refused it, or it ended */
		put_rst(&f->to_client, sid, E_STREAM_CLOSED);
		goto out;
	}
	f->client_max_id = sid;

	struct sk_h2_request rq = { .stream_id = sid };
	enum req_check chk = fl.too_large ? RQ_MALFORMED : check_request(&fl, &rq);
	if (chk != RQ_OK) {
		tell_refused(f, &rq, chk == RQ_TUNNEL ? "h2_tunnel" : "h2_malformed_request");
		put_rst(&f->to_client, sid, E_PROTOCOL);
		goto out;
	}
	if (!end_stream && f->nstreams >= f->cfg.max_streams) {
		put_rst(&f->to_client, sid, E_REFUSED_STREAM);
		goto out;
	}
	int status = 0;
	const char *reason = NULL;
	if (f->cfg.judge(f->cfg.ctx, &rq, &status, &body, &reason) != SK_H2_ALLOW) {
		if (status < 100 || status > 999)
			status = 403;
		if (!reason)
			reason = "denied";
		if (body.len == 0 && !body.oom)
			sk_h2_denial_body(&body, reason, NULL, &rq);
		if (sk_strbuf_ok(&body) < 0) {
			*v = conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
			ok = false;
			goto out;
		}
		put_answer(&f->to_client, sid, status, reason, &body, end_stream);
		goto out;
	}
	rc = encode_block(f, &fl, &rq, &enc);
	if (rc == 1) {
		tell_refused(f, &rq, "h2_header_refused");
		if (f->cfg.header_refusal_status) {
			sk_h2_denial_body(&body, f->cfg.header_refusal_reason, NULL, &rq);
			if (sk_strbuf_ok(&body) < 0) {
				*v = conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
				ok = false;
				goto out;
			}
			put_answer(&f->to_client, sid, f->cfg.header_refusal_status, f->cfg.header_refusal_reason, &body,
				   end_stream);
		} else {
			put_rst(&f->to_client, sid, E_INTERNAL);
		}
		goto out;
	}
	if (rc < 0 || (!end_stream && stream_add(f, &rq) < 0)) {
		*v = conn_error(f, out, E_INTERNAL, rc == -EPROTO ? "h2_encode_error" : "h2_out_of_memory");
		ok = false;
		goto out;
	}
	emit_headers(f, e, sid, &enc, end_stream, prio);
	f->server_max_id = sid;
out:
	fields_free(&fl);
	sk_strbuf_free(&enc);
	sk_strbuf_free(&body);
	return ok;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Client → server */

static void apply_acked_settings(struct h2f *f)
{
	if (f->pend_n == 0)
		return;  /* an ACK of nothing: the server's business */
	uint32_t hts = f->pend_hts[f->pend_head];
	f->pend_head = (f->pend_head + 1) % PENDING_SETTINGS;
	f->pend_n--;
	/* a smaller table holds from the agent's acknowledgement on (RFC 9113 §6.5.3); a larger one was
	 * taken at once (from_server) */
	if (hts != NO_HTS && hts < f->inf_hts && nghttp2_hd_inflate_change_table_size(f->inf, hts) == 0)
		f->inf_hts = hts;
}

/* A frame header was read: decide what its payload does. */
static bool start_frame(struct h2f *f, struct emit *e, const uint8_t *hdr_in_chunk, struct sk_pt_out *out,
			enum sk_pt_verdict *v)
{
	f->flen = (uint32_t)f->hdr[0] << 16 | (uint32_t)f->hdr[1] << 8 | f->hdr[2];
	f->type = f->hdr[3];
	f->flags = f->hdr[4];
	f->sid = (int32_t)(((uint32_t)f->hdr[5] & 0x7f) << 24 | (uint32_t)f->hdr[6] << 16 | (uint32_t)f->hdr[7] << 8 |
			   f->hdr[8]);
	f->frem = f->flen;
	f->in_frame = true;
	f->remove_at_end = false;
	if (f->flen > f->client_max_frame) {
		*v = conn_error(f, out, E_FRAME_SIZE, "h2_frame_size");
		return false;
	}
	if (f->in_block && (f->type != FT_CONTINUATION || f->sid != f->block_sid)) {
		*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
		return false;
	}
	switch (f->type) {
	case FT_DATA:
		if (f->sid == 0) {
			*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
			return false;
		}
		if (stream_find(f, f->sid)) {
			struct stream *st = stream_find(f, f->sid);
			f->mode = f->cfg.body && !st->scan.done ? C_SCAN : C_PASS;
			f->remove_at_end = f->flags & FL_END_STREAM;
		} else {
			f->mode = C_DROP;  /* a refused or closed stream: the window it took comes back */
			f->window_back += f->flen;
		}
		break;
	case FT_HEADERS:
		if (f->sid == 0 || (f->sid & 1) == 0) {
			*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
			return false;
		}
		f->mode = C_COLLECT;
		break;
	case FT_CONTINUATION:
		if (!f->in_block) {
			*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
			return false;
		}
		f->mode = C_COLLECT;
		break;
	case FT_PUSH_PROMISE:  /* never from a client (RFC 9113 §8.4) */
		*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
		return false;
	case FT_RST_STREAM:
	case FT_WINDOW_UPDATE:
		/* about a stream of the agent's that the server never saw (idle to it: a connection error
		 * there): dropped; even ids are the server's pushed streams, its business */
		f->mode = (f->sid & 1) && f->sid > f->server_max_id ? C_DROP : C_PASS;
		if (f->type == FT_RST_STREAM && f->mode == C_PASS) {
			stream_remove(f, f->sid);
			sq_remove(f, f->sid);   /* the agent wants no more of its response */
		}
		break;
	case FT_SETTINGS:
		if ((f->flags & FL_ACK) && f->sid == 0)
			apply_acked_settings(f);
		f->c_settings = !(f->flags & FL_ACK) && f->sid == 0;
		f->c_sparam_have = 0;
		f->c_hts = NO_HTS;
		f->mode = C_PASS;
		break;
	case FT_PRIORITY:
	case FT_PING:
	case FT_GOAWAY:
		f->mode = C_PASS;
		break;
	default:
		f->mode = C_DROP;  /* an unknown type is ignored (RFC 9113 §5.5): the server would too */
		break;
	}
	if (f->mode == C_PASS) {
		if (hdr_in_chunk)
			em_pass(e, (size_t)(hdr_in_chunk - e->buf), FRAME_HDR);
		else
			em_bytes(e, f->hdr, FRAME_HDR);
	}
	if (f->mode == C_SCAN)
		sk_strbuf_reset(&f->payload);   /* a DATA frame, at most client_max_frame: held for the scan */
	if (f->mode == C_COLLECT) {
		/* refused before it is collected: a frame may be as large as the server allows (16 MiB);
		 * the slack is a HEADERS frame's padding and priority */
		size_t have = f->type == FT_CONTINUATION ? f->block.len : 0;
		if (have + f->flen > f->cfg.max_block + 1 + 5 + 255) {
			*v = conn_error(f, out, E_CALM, "h2_header_block_too_large");
			return false;
		}
		sk_strbuf_reset(&f->payload);
	}
	return true;
}

/* A whole DATA frame of an open stream within its scanned prefix (C_SCAN): its data (padding aside) shown
 * to the body hook, then sent on as it came; or, refused, dropped with the stream reset both ways (the
 * server has its headers and maybe part of its body: it must not take the rest as a whole request) and
 * its window given back to the agent. */
static bool scan_data(struct h2f *f, struct emit *e, struct sk_pt_out *out, enum sk_pt_verdict *v)
{
	const uint8_t *p = (const uint8_t *)f->payload.p;
	size_t n = f->payload.len, pad = 0;
	if (f->flags & FL_PADDED) {
		if (n < 1 || (size_t)p[0] > n - 1) {
			*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
			return false;
		}
		pad = p[0];
		p++;
		n--;
	}
	struct stream *st = stream_find(f, f->sid);
	if (st && n - pad > 0) {
		struct sk_h2_request rq = { .method = st->method, .authority = st->authority, .path = st->path,
					    .scheme = st->scheme, .stream_id = st->id };
		if (f->cfg.body(f->cfg.ctx, &rq, &st->scan, p, n - pad) < 0) {
			put_rst(&f->to_client, f->sid, E_INTERNAL);
			em_copy(e);
			put_rst(e->out, f->sid, E_CANCEL);
			f->window_back += f->flen;
			stream_remove(f, f->sid);
			sk_strbuf_reset(&f->payload);
			return true;
		}
	}
	em_bytes(e, f->hdr, FRAME_HDR);
	if (f->payload.len)
		em_bytes(e, f->payload.p, f->payload.len);
	sk_strbuf_reset(&f->payload);
	return true;
}

/* A frame's payload is all read. */
static bool end_frame(struct h2f *f, struct emit *e, struct sk_pt_out *out, enum sk_pt_verdict *v)
{
	f->in_frame = false;
	if (f->mode == C_SCAN && !scan_data(f, e, out, v))
		return false;
	if (f->remove_at_end)
		stream_remove(f, f->sid);
	if (f->c_settings) {
		f->c_settings = false;
		if (f->c_pend_n == PENDING_SETTINGS) {
			*v = conn_error(f, out, E_CALM, "h2_settings_flood");
			return false;
		}
		f->c_pend[(f->c_pend_head + f->c_pend_n) % PENDING_SETTINGS] = f->c_hts;
		f->c_pend_n++;
	}
	if (f->mode != C_COLLECT)
		return true;
	const uint8_t *p = (const uint8_t *)f->payload.p;
	size_t n = f->payload.len;
	if (f->type == FT_HEADERS) {
		size_t pad = 0;
		if (f->flags & FL_PADDED) {
			if (n < 1) {
				*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
				return false;
			}
			pad = p[0];
			p++;
			n--;
		}
		if (f->flags & FL_PRIORITY) {
			if (n < 5) {
				*v = conn_error(f, out, E_FRAME_SIZE, "h2_frame_size");
				return false;
			}
			memcpy(f->block_prio, p, 5);
			p += 5;
			n -= 5;
		}
		if (pad > n) {
			*v = conn_error(f, out, E_PROTOCOL, "h2_protocol_error");
			return false;
		}
		n -= pad;
		f->in_block = true;
		f->block_sid = f->sid;
		f->block_flags = (uint8_t)(f->flags & (FL_END_STREAM | FL_PRIORITY));
		sk_strbuf_reset(&f->block);
	}
	if (f->block.len + n > f->cfg.max_block) {
		*v = conn_error(f, out, E_CALM, "h2_header_block_too_large");
		return false;
	}
	if (sk_strbuf_put(&f->block, p, n) < 0) {
		*v = conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
		return false;
	}
	sk_strbuf_reset(&f->payload);
	if (f->flags & FL_END_HEADERS)
		return process_block(f, e, out, v);
	return true;
}

static enum sk_pt_verdict h2_from_client(struct sk_pt_filter *pf, const uint8_t *buf, size_t len,
					 struct sk_pt_out *out)
{
	struct h2f *f = (struct h2f *)pf;
	if (f->failed) {
		out->reason = "h2_protocol_error";
		return SK_PT_FAIL;
	}
	struct emit e = { .buf = buf, .len = len, .out = &out->to_peer };
	enum sk_pt_verdict v = SK_PT_FAIL;
	size_t i = 0;
	while (i < len) {
		if (f->preface_have < PREFACE_LEN) {
			size_t n = len - i < PREFACE_LEN - f->preface_have ? len - i : PREFACE_LEN - f->preface_have;
			if (memcmp(buf + i, &preface[f->preface_have], n) != 0)
				return conn_error(f, out, E_PROTOCOL, "h2_bad_preface");
			em_pass(&e, i, n);
			f->preface_have += n;
			i += n;
			continue;
		}
		if (!f->in_frame) {
			size_t n = len - i < FRAME_HDR - f->hdr_have ? len - i : FRAME_HDR - f->hdr_have;
			const uint8_t *start = f->hdr_have == 0 ? buf + i : NULL;
			memcpy(f->hdr + f->hdr_have, buf + i, n);
			f->hdr_have += n;
			i += n;
			if (f->hdr_have < FRAME_HDR)
				break;
			f->hdr_have = 0;
			if (!start_frame(f, &e, start, out, &v))
				return v;
			if (f->frem == 0 && !end_frame(f, &e, out, &v))
				return v;
			continue;
		}
		size_t n = len - i < f->frem ? len - i : f->frem;
		for (size_t k = 0; f->c_settings && k < n; k++) {
			f->c_sparam[f->c_sparam_have++] = buf[i + k];
			if (f->c_sparam_have == 6) {
				f->c_sparam_have = 0;
				if (f->c_sparam[0] == 0 && f->c_sparam[1] == SET_HEADER_TABLE_SIZE)
					f->c_hts = (uint32_t)f->c_sparam[2] << 24 | (uint32_t)f->c_sparam[3] << 16 |
						   (uint32_t)f->c_sparam[4] << 8 | f->c_sparam[5];
			}
		}
		if (f->mode == C_PASS)
			em_pass(&e, i, n);
		else if ((f->mode == C_COLLECT || f->mode == C_SCAN) && sk_strbuf_put(&f->payload, buf + i, n) < 0)
			return conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
		f->frem -= (uint32_t)n;
		i += n;
		if (f->frem == 0 && !end_frame(f, &e, out, &v))
			return v;
	}
	if (f->window_back) {
		put_window_update(&f->to_client, 0, f->window_back);
		f->window_back = 0;
	}
	flush_to_client(f, out);
	/* answers wait while the server is inside a frame; an agent that piles up more than this many
	 * while it does is not answered but cut off */
	if (f->to_client.len > MAX_HELD_ANSWERS)
		return conn_error(f, out, E_CALM, "h2_answers_backlog");
	if (sk_strbuf_ok(&f->to_client) < 0 || sk_strbuf_ok(&out->to_sender) < 0 || sk_strbuf_ok(&out->to_peer) < 0)
		return conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
	if (!e.copying && e.passed == len && out->to_sender.len == 0)
		return SK_PT_PASS;
	em_copy(&e);
	if (sk_strbuf_ok(&out->to_peer) < 0)
		return conn_error(f, out, E_INTERNAL, "h2_out_of_memory");
	return SK_PT_EMIT;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Server → client: boundaries and SETTINGS only */

static void server_param(struct h2f *f)
{
	uint16_t id = (uint16_t)(f->sparam[0] << 8 | f->sparam[1]);
	uint32_t val = (uint32_t)f->sparam[2] << 24 | (uint32_t)f->sparam[3] << 16 | (uint32_t)f->sparam[4] << 8 |
		       f->sparam[5];
	if (id == SET_HEADER_TABLE_SIZE) {
		f->s_hts = val;
		/* our encoder may follow the server's decoder at once; the deflater caps it at its own 4096 */
		(void)nghttp2_hd_deflate_change_table_size(f->def, val);  /* fails only on allocation: the
		                                                             * old size is kept, which is allowed
		                                                             * when smaller, and it cannot be larger */
		/* a larger table for the agent's encoder is accepted from now on: the agent may use it as
		 * soon as it reads these SETTINGS, maybe before its ACK reaches us */
		if (val > f->inf_hts && nghttp2_hd_inflate_change_table_size(f->inf, val) == 0)
			f->inf_hts = val;
	} else if (id == SET_MAX_FRAME_SIZE && val >= DEFAULT_FRAME && val <= MAX_FRAME) {
		f->srv_max_frame = val;
		if (val > f->client_max_frame)
			f->client_max_frame = val;
	}
}

/* The server acknowledged the agent's oldest SETTINGS: the agent's decoder now uses its table size. */
static void client_settings_acked(struct h2f *f)
{
	if (f->c_pend_n == 0)
		return;
	uint32_t hts = f->c_pend[f->c_pend_head];
	f->c_pend_head = (f->c_pend_head + 1) % PENDING_SETTINGS;
	f->c_pend_n--;
	if (hts == NO_HTS)
		return;
	if (hts < f->c_acked)
		f->c_expect = true;
	f->c_acked = hts;
	/* the server's encoder may use this size from now on: our reader of its blocks follows */
	if (f->sinf)
		(void)nghttp2_hd_inflate_change_table_size(f->sinf, hts);   /* fails only on allocation: a
		                                                                  * block then fails to decode,
		                                                                  * closed */
}

static bool server_frame_end(struct h2f *f)
{
	f->s_in_frame = false;
	f->s_started = true;
	if (!f->s_settings)
		return true;
	f->s_settings = false;
	if (f->pend_n == PENDING_SETTINGS)
		return false;  /* settings the agent does not acknowledge: flooding */
	f->pend_hts[(f->pend_head + f->pend_n) % PENDING_SETTINGS] = f->s_hts;
	f->pend_n++;
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Server → client on a masked connection (cfg.mask): a host a secret lists may echo its value. Each of the
 * server's frames is read whole before anything of it goes on. DATA: its data (padding aside) through the
 * stream's own copy of the mask, which may hold the end of a frame back until the next frame of the
 * stream shows whether a value straddles the two; the frame then goes whole, same length, values '*'.
 * Header blocks (HEADERS, PUSH_PROMISE, CONTINUATION) are HPACK-coded: a value in one cannot be replaced
 * in place (Huffman strings, indexes into a table the agent's decoder shares with the server's encoder),
 * so each block is held until whole, decoded with our copy of the server's table, and a value in any
 * field fails the connection closed (secret_in_response_header), as does a body the mask cannot search
 * (content-encoding other than identity, :status 206 or 226: upstream_encoding). Everything else goes
 * on at once, in order; a stream's frames after held DATA (its trailers, its RST_STREAM) release what
 * the mask held first. What is held waits for the server's next frame on that stream: the agent has
 * not got it, so a client that gives back window only when it has read everything could stall on the
 * last bytes of a window — the common ones give it back at half. */

static struct sq *sq_find(struct h2f *f, int32_t id)
{
	for (size_t i = 0; i < f->nsq; i++)
		if (f->sq[i].id == id)
			return &f->sq[i];
	return NULL;
}

static void sq_clear(struct sq *q)
{
	sk_swap_mask_free(&q->m);
	if (q->q.p)
		explicit_bzero(q->q.p, q->q.cap);
	sk_strbuf_free(&q->q);
	free(q->fr);
}

static void sq_remove(struct h2f *f, int32_t id)
{
	struct sq *q = sq_find(f, id);
	if (!q)
		return;
	sq_clear(q);
	*q = f->sq[--f->nsq];
}

#define MAX_MASKED_STREAMS 4096

static struct sq *sq_get(struct h2f *f, int32_t id)
{
	struct sq *q = sq_find(f, id);
	if (q)
		return q;
	if (f->nsq >= MAX_MASKED_STREAMS)
		return NULL;
	if (f->nsq == f->capsq) {
		size_t cap = f->capsq ? f->capsq * 2 : 8;
		struct sq *n = realloc(f->sq, cap * sizeof(*n));
		if (!n)
			return NULL;
		f->sq = n;
		f->capsq = cap;
	}
	q = &f->sq[f->nsq];
	*q = (struct sq){ .id = id };
	const struct sk_swap_mask *m = f->cfg.mask;
	for (size_t i = 0; i < m->n; i++)
		if (sk_swap_mask_add(&q->m, m->val[i], m->r[i].slen) < 0) {
			sq_clear(q);
			return NULL;
		}
	f->nsq++;
	return q;
}

/* What the mask released, over the oldest data not yet released; then the frames that are whole go. */
static void sq_fill_emit(struct sq *q, const uint8_t *r, size_t k, struct sk_strbuf *dst)
{
	for (size_t i = 0; i < q->nfr && k; i++) {
		struct qframe *fr = &q->fr[i];
		size_t take = fr->dlen - fr->filled < k ? fr->dlen - fr->filled : k;
		memcpy(q->q.p + fr->dstart + fr->filled, r, take);
		fr->filled += take;
		r += take;
		k -= take;
	}
	size_t n = 0, done = 0;
	while (done < q->nfr && q->fr[done].filled == q->fr[done].dlen)
		n = q->fr[done++].end;
	if (!done)
		return;
	(void)sk_strbuf_put(dst, q->q.p, n);
	memmove(q->q.p, q->q.p + n, q->q.len - n);
	explicit_bzero(q->q.p + q->q.len - n, n);
	q->q.len -= n;
	memmove(q->fr, q->fr + done, (q->nfr - done) * sizeof(*q->fr));
	q->nfr -= done;
	for (size_t i = 0; i < q->nfr; i++) {
		q->fr[i].end -= n;
		q->fr[i].dstart -= n;
	}
}

/* Runs data (or, final, nothing) through the stream's mask and emits what is whole. -ENOMEM. */
static int sq_run(struct sq *q, const uint8_t *d, size_t n, bool final, struct sk_strbuf *dst)
{
	struct sk_strbuf rel = { 0 };
	int rc = sk_swap_mask_run(&q->m, d, n, final, &rel);
	if (rc == 0 && sk_strbuf_ok(&rel) == 0)
		sq_fill_emit(q, (const uint8_t *)rel.p, rel.len, dst);
	else
		rc = -ENOMEM;
	if (rel.p)
		explicit_bzero(rel.p, rel.cap);
	sk_strbuf_free(&rel);
	return rc;
}

/* One whole DATA frame of the server's (f->sframe). */
static int masked_data(struct h2f *f, int32_t sid, uint8_t flags, struct sk_strbuf *dst)
{
	const uint8_t *p = (const uint8_t *)f->sframe.p;
	size_t n = f->sframe.len - FRAME_HDR, ds = FRAME_HDR, pad = 0;
	if (flags & FL_PADDED) {
		if (n < 1 || (size_t)p[FRAME_HDR] > n - 1)
			return -EPROTO;
		pad = p[FRAME_HDR];
		ds++;
		n--;
	}
	n -= pad;
	struct sq *q = sq_get(f, sid);
	if (!q)
		return -ENOMEM;
	if (q->nfr == q->capfr) {
		size_t cap = q->capfr ? q->capfr * 2 : 4;
		struct qframe *nf = realloc(q->fr, cap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		q->fr = nf;
		q->capfr = cap;
	}
	size_t at = q->q.len;
	q->fr[q->nfr++] = (struct qframe){ .end = at + f->sframe.len, .dstart = at + ds, .dlen = n };
	if (sk_strbuf_put(&q->q, f->sframe.p, f->sframe.len) < 0)
		return -ENOMEM;
	bool end = flags & FL_END_STREAM;
	int rc = sq_run(q, p + ds, n, end, dst);
	if (end)
		sq_remove(f, sid);
	return rc;
}

/* Frames of a stream after its held DATA (trailers, RST_STREAM): what the mask held goes first. */
static int release_stream(struct h2f *f, int32_t sid, struct sk_strbuf *dst)
{
	struct sq *q = sq_find(f, sid);
	if (!q || !q->nfr)
		return 0;
	return sq_run(q, NULL, 0, true, dst);
}

/* A response field saying its body is not in the one form the mask searches: a part (206) or a delta (226)
 * may begin inside a value; a coded body carries none of it as it is. */
static bool unsearchable_body(const nghttp2_nv *nv)
{
	if (nv->namelen == 7 && !memcmp(nv->name, ":status", 7))
		return nv->valuelen == 3 && (!memcmp(nv->value, "206", 3) || !memcmp(nv->value, "226", 3));
	return nv->namelen == 16 && !memcmp(nv->name, "content-encoding", 16) &&
	       !(nv->valuelen == 8 && !strncasecmp((const char *)nv->value, "identity", 8));
}

/* A whole header block of the server's (its frames in f->sblk, the block in f->sblock): NULL to let it
 * go, else the reason the connection fails. */
static const char *judge_server_block(struct h2f *f)
{
	const uint8_t *in = (const uint8_t *)f->sblock.p;
	size_t inlen = f->sblock.len;
	const char *bad = NULL;
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t rv = nghttp2_hd_inflate_hd2(f->sinf, &nv, &flags, in, inlen, 1);
		if (rv < 0)
			return rv == NGHTTP2_ERR_NOMEM ? "h2_out_of_memory" : "h2_compression_error";
		in += rv;
		inlen -= (size_t)rv;
		if ((flags & NGHTTP2_HD_INFLATE_EMIT) && !bad) {
			if (sk_swap_mask_finds(f->cfg.mask, nv.value, nv.valuelen) ||
			    sk_swap_mask_finds(f->cfg.mask, nv.name, nv.namelen))
				bad = "secret_in_response_header";
			else if (unsearchable_body(&nv))
				bad = "upstream_encoding";
		}
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(f->sinf);
			return bad;
		}
		if (rv == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT))
			return "h2_compression_error";
	}
}

/* The block fragment of a whole HEADERS, PUSH_PROMISE or CONTINUATION frame (f->sframe) onto f->sblock. */
static bool block_fragment(struct h2f *f, uint8_t type, uint8_t flags)
{
	const uint8_t *p = (const uint8_t *)f->sframe.p + FRAME_HDR;
	size_t n = f->sframe.len - FRAME_HDR, pad = 0;
	if (type != FT_CONTINUATION && (flags & FL_PADDED)) {
		if (n < 1)
			return false;
		pad = p[0];
		p++;
		n--;
	}
	size_t skip = type == FT_PUSH_PROMISE ? 4 : type == FT_HEADERS && (flags & FL_PRIORITY) ? 5 : 0;
	if (n < skip + pad)
		return false;
	return sk_strbuf_put(&f->sblock, p + skip, n - skip - pad) == 0;
}

/* One whole frame of the server's (f->sframe, its header in f->shdr): routed into dst. NULL, or the
 * reason the connection fails. */
static const char *masked_frame(struct h2f *f, struct sk_strbuf *dst)
{
	uint8_t type = f->shdr[3], flags = f->shdr[4];
	int32_t sid = (int32_t)(((uint32_t)f->shdr[5] & 0x7f) << 24 | (uint32_t)f->shdr[6] << 16 |
				(uint32_t)f->shdr[7] << 8 | f->shdr[8]);
	int rc = 0;
	switch (type) {
	case FT_DATA:
		rc = sid ? masked_data(f, sid, flags, dst) : -EPROTO;
		break;
	case FT_HEADERS:
	case FT_PUSH_PROMISE:
	case FT_CONTINUATION:
		if (type != FT_CONTINUATION)
			sk_strbuf_reset(&f->sblock);
		if (!block_fragment(f, type, flags) || sk_strbuf_put(&f->sblk, f->sframe.p, f->sframe.len) < 0)
			return "h2_out_of_memory";
		if (f->sblk.len > (size_t)f->cfg.max_block + MAX_FRAME)
			return "h2_header_block_too_large";
		if (!(flags & FL_END_HEADERS))
			return NULL;
		{
			const char *bad = judge_server_block(f);
			if (bad)
				return bad;
		}
		/* the block's stream: its held DATA first (trailers end it) */
		{
			const uint8_t *h = (const uint8_t *)f->sblk.p;
			int32_t bsid = (int32_t)(((uint32_t)h[5] & 0x7f) << 24 | (uint32_t)h[6] << 16 |
						 (uint32_t)h[7] << 8 | h[8]);
			rc = release_stream(f, bsid, dst);
			if (h[4] & FL_END_STREAM)
				sq_remove(f, bsid);
		}
		(void)sk_strbuf_put(dst, f->sblk.p, f->sblk.len);
		sk_strbuf_reset(&f->sblk);
		sk_strbuf_reset(&f->sblock);
		break;
	case FT_RST_STREAM:
		rc = release_stream(f, sid, dst);
		sq_remove(f, sid);
		(void)sk_strbuf_put(dst, f->sframe.p, f->sframe.len);
		break;
	default:
		(void)sk_strbuf_put(dst, f->sframe.p, f->sframe.len);
		break;
	}
	if (rc == -EPROTO)
		return "h2_protocol_error";
	if (rc < 0 || sk_strbuf_ok(dst) < 0)
		return "h2_out_of_memory";
	return NULL;
}

/* The server's next frame header, taken from buf[*i..len) as far as it goes (*i advanced): false while it
 * is incomplete; true once it is whole, the frame begun and the connection's bookkeeping of it done (the
 * SETTINGS it carries, header blocks, the ack of ours, a reset stream). Both from_server paths start a
 * frame here. */
static bool server_frame_header(struct h2f *f, const uint8_t *buf, size_t len, size_t *i)
{
	size_t n = len - *i < FRAME_HDR - f->shdr_have ? len - *i : FRAME_HDR - f->shdr_have;
	memcpy(f->shdr + f->shdr_have, buf + *i, n);
	f->shdr_have += n;
	*i += n;
	if (f->shdr_have < FRAME_HDR)
		return false;
	f->shdr_have = 0;
	f->s_in_frame = true;
	f->srem = (uint32_t)f->shdr[0] << 16 | (uint32_t)f->shdr[1] << 8 | f->shdr[2];
	uint32_t sid = ((uint32_t)f->shdr[5] & 0x7f) << 24 | (uint32_t)f->shdr[6] << 16 | (uint32_t)f->shdr[7] << 8 |
		       f->shdr[8];
	uint8_t type = f->shdr[3];
	f->s_settings = type == FT_SETTINGS && !(f->shdr[4] & FL_ACK) && sid == 0;
	f->sparam_have = 0;
	f->s_hts = NO_HTS;
	if (type == FT_HEADERS || type == FT_PUSH_PROMISE || type == FT_CONTINUATION)
		f->s_in_block = !(f->shdr[4] & FL_END_HEADERS);
	if (type == FT_HEADERS || type == FT_PUSH_PROMISE)
		f->c_expect = false;  /* the server's block carries the update itself */
	if (type == FT_SETTINGS && (f->shdr[4] & FL_ACK) && sid == 0)
		client_settings_acked(f);
	/* the server reset a stream: the agent's DATA for it is dropped from now on */
	if (type == FT_RST_STREAM)
		stream_remove(f, (int32_t)sid);
	return true;
}

/* The current server frame's payload in buf[i..len): the part of it there (returned, at most what the
 * frame has left), its SETTINGS parameters read. */
static size_t server_frame_payload(struct h2f *f, const uint8_t *buf, size_t len, size_t i)
{
	size_t n = len - i < f->srem ? len - i : f->srem;
	for (size_t k = 0; f->s_settings && k < n; k++) {
		f->sparam[f->sparam_have++] = buf[i + k];
		if (f->sparam_have == 6) {
			server_param(f);
			f->sparam_have = 0;
		}
	}
	f->srem -= (uint32_t)n;
	return n;
}

static enum sk_pt_verdict from_server_masked(struct h2f *f, const uint8_t *buf, size_t len, struct sk_pt_out *out);

static enum sk_pt_verdict h2_from_server(struct sk_pt_filter *pf, const uint8_t *buf, size_t len,
					 struct sk_pt_out *out)
{
	struct h2f *f = (struct h2f *)pf;
	if (f->failed) {
		out->reason = "h2_protocol_error";
		return SK_PT_FAIL;
	}
	if (f->cfg.mask)
		return from_server_masked(f, buf, len, out);
	size_t i = 0, cut = 0;
	struct sk_strbuf ins = { 0 };  /* ours, taken where they go: the state there decides their shape */
	bool insert = f->to_client.len > 0 && server_at_boundary(f);
	if (insert)
		take_to_client(f, &ins);
	while (i < len) {
		if (!f->s_in_frame) {
			if (!server_frame_header(f, buf, len, &i))
				break;
		} else {
			i += server_frame_payload(f, buf, len, i);
		}
		if (f->s_in_frame && f->srem == 0) {
			if (!server_frame_end(f)) {
				sk_strbuf_free(&ins);
				f->failed = true;
				out->reason = "h2_settings_flood";
				return SK_PT_FAIL;
			}
			if (f->to_client.len > 0 && !insert && server_at_boundary(f)) {
				insert = true;
				cut = i;
				take_to_client(f, &ins);
			}
		}
	}
	if (!insert)
		return SK_PT_PASS;
	(void)sk_strbuf_put(&out->to_peer, buf, cut);
	(void)sk_strbuf_put(&out->to_peer, ins.p, ins.len);
	(void)sk_strbuf_put(&out->to_peer, buf + cut, len - cut);
	bool oom = sk_strbuf_ok(&ins) < 0;
	sk_strbuf_free(&ins);
	if (oom || sk_strbuf_ok(&out->to_peer) < 0) {
		f->failed = true;
		out->reason = "h2_out_of_memory";
		return SK_PT_FAIL;
	}
	return SK_PT_EMIT;
}

/* h2_from_server's bookkeeping, frame by frame, with every frame read whole and routed (masked_frame);
 * our frames for the agent go in after any of the server's that leaves the stream at a boundary. */
static enum sk_pt_verdict from_server_masked(struct h2f *f, const uint8_t *buf, size_t len, struct sk_pt_out *out)
{
	size_t i = 0;
	const char *bad = NULL;
	if (f->to_client.len > 0 && server_at_boundary(f))
		take_to_client(f, &out->to_peer);
	while (i < len && !bad) {
		if (!f->s_in_frame) {
			if (!server_frame_header(f, buf, len, &i))
				break;
			/* read whole, so held whole: at most 16 MiB, the 24-bit length (RFC 9113 §4.2) */
			sk_strbuf_reset(&f->sframe);
			(void)sk_strbuf_put(&f->sframe, f->shdr, FRAME_HDR);
		} else {
			size_t n = server_frame_payload(f, buf, len, i);
			(void)sk_strbuf_put(&f->sframe, buf + i, n);
			i += n;
		}
		if (f->s_in_frame && f->srem == 0) {
			if (!server_frame_end(f)) {
				bad = "h2_settings_flood";
				break;
			}
			if (sk_strbuf_ok(&f->sframe) < 0) {
				bad = "h2_out_of_memory";
				break;
			}
			bad = masked_frame(f, &out->to_peer);
			if (!bad && f->to_client.len > 0 && server_at_boundary(f))
				take_to_client(f, &out->to_peer);
		}
	}
	if (!bad && sk_strbuf_ok(&out->to_peer) < 0)
		bad = "h2_out_of_memory";
	if (bad) {
		f->failed = true;
		sk_strbuf_reset(&out->to_peer);
		out->reason = bad;
		return SK_PT_FAIL;
	}
	return SK_PT_EMIT;
}

static enum sk_pt_verdict h2_closed(struct sk_pt_filter *pf, bool client_side, struct sk_pt_out *out)
{
	struct h2f *f = (struct h2f *)pf;
	if (!client_side)
		return SK_PT_PASS;  /* a response cut short is visible to the agent as it is */
	/* a request cut in the middle of a frame or a header block must not be taken as complete */
	bool mid = (f->preface_have > 0 && f->preface_have < PREFACE_LEN) || f->hdr_have > 0 || f->in_frame ||
		   f->in_block;
	if (!mid && !f->failed)
		return SK_PT_PASS;
	f->failed = true;
	out->reason = "h2_truncated";
	return SK_PT_FAIL;
}

static void h2_free(struct sk_pt_filter *pf)
{
	struct h2f *f = (struct h2f *)pf;
	if (!f)
		return;
	if (f->inf)
		nghttp2_hd_inflate_del(f->inf);
	if (f->def)
		nghttp2_hd_deflate_del(f->def);
	if (f->sinf)
		nghttp2_hd_inflate_del(f->sinf);
	for (size_t i = 0; i < f->nsq; i++)
		sq_clear(&f->sq[i]);
	free(f->sq);
	sk_strbuf_free(&f->sblock);
	sk_strbuf_free(&f->sblk);
	if (f->sframe.p)
		explicit_bzero(f->sframe.p, f->sframe.cap);
	sk_strbuf_free(&f->sframe);
	for (size_t i = 0; i < f->nstreams; i++)
		stream_clear(&f->streams[i]);
	free(f->streams);
	sk_strbuf_free(&f->payload);
	sk_strbuf_free(&f->block);
	sk_strbuf_free(&f->to_client);
	free(f);
}

static const struct sk_pt_filter_ops h2_ops = {
	.name = "h2",
	.from_client = h2_from_client,
	.from_server = h2_from_server,
	.closed = h2_closed,
	.free = h2_free,
};

int sk_h2_filter_new(const struct sk_h2_filter_cfg *cfg, struct sk_pt_filter **out, struct sk_err *err)
{
	*out = NULL;
	if (!cfg->judge)
		return sk_err_set(err, EINVAL, "h2 filter: no judge");
	struct h2f *f = calloc(1, sizeof(*f));
	if (!f)
		return sk_err_sys(err, ENOMEM, "h2 filter");
	f->base.ops = &h2_ops;
	f->cfg = *cfg;
	if (!f->cfg.max_block)
		f->cfg.max_block = SK_H2_MAX_BLOCK_DEFAULT;
	if (!f->cfg.max_list)
		f->cfg.max_list = SK_H2_MAX_LIST_DEFAULT;
	if (!f->cfg.max_streams)
		f->cfg.max_streams = SK_H2_MAX_STREAMS_DEFAULT;
	f->client_max_frame = DEFAULT_FRAME;
	f->srv_max_frame = DEFAULT_FRAME;
	f->inf_hts = HPACK_DEFAULT_TABLE;
	f->c_acked = HPACK_DEFAULT_TABLE;
	if (nghttp2_hd_inflate_new(&f->inf) != 0 || nghttp2_hd_deflate_new(&f->def, HPACK_DEFAULT_TABLE) != 0 ||
	    (cfg->mask && nghttp2_hd_inflate_new(&f->sinf) != 0)) {
		h2_free(&f->base);
		return sk_err_sys(err, ENOMEM, "h2 filter: hpack");
	}
	*out = &f->base;
	return 0;
}
