/* sidecar/proxy/fuzz_inspect_h1_mask.c — libFuzzer target for the `secrets:` paths of the HTTP/1 filter of
 * inspected connections (inspect_h1.h): the request body scan (hooks.body → sk_swap_body_scan, Content-Length
 * and chunked bodies), the head swap check (hooks.rewrite → sk_swap_h1_head) and the response mask
 * (sk_h1_filter_mask: heads, bodies, chunk data, trailers, values straddling records).
 * Input: byte 0 seeds the cuts, byte 1 picks the secret's value (see values[]), the rest is the agent's
 * plaintext, then SEP, then the server's bytes. One secret, placeholder PH, listed for another host than the
 * SNI: every placeholder or value the agent sends is misuse. Fed once whole and once cut (agent's stream
 * first, then the server's; each cut at pseudo-random points), and a third time with the server's bytes
 * one at a time.
 * Invariants:
 *   - what goes on toward the server (read again by a fresh request tracker) never holds the placeholder
 *     or the value, in any case, in a head or in a body's data: a body carrying one is always refused;
 *   - what the agent receives never holds the raw value (unless the agent sent it, in any case: the
 *     filter's answers echo its host, lower-cased, and path), whatever the cut, but straddling the end of a
 *     response as the server framed it (each response is released whole; a third run, the server's
 *     stream a byte at a time, shows where the filter released a value's head before its last byte);
 *   - masking keeps lengths: with no refusal on the connection, the agent receives the server's bytes
 *     (all but a chunk line the close cut short), each the server's byte or '*';
 *   - how both streams are cut changes nothing: the same refusals, the same bytes toward the agent (unless
 *     the connection failed: how much went before is the cut's) and (with no body refused, where the cut
 *     decides how much of the body went before) the same bytes on.
 * Seeds: sidecar/proxy/fuzz/fuzz_inspect_h1_mask/. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/proxy/http_track.h"
#include "sidecar/proxy/inspect_h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

#define SNI "api.example.com"
#define PH "stockade-secret-gh"
#define SEP "\n~~srv~~\n"

/* a long value, a short one (raw only), self-overlapping ones (the matcher's fall-backs) */
static const char *const values[] = { "ghp_S3cretV4lue0123", "k3y", "abab", "aXaXaY", "zzzzzzzz" };

static char *hosts[] = { (char *)"other.example.com" };
static char *in_hdrs[] = { (char *)"authorization" };

struct ctx {
	struct sk_swap_set set;
	unsigned body_refused, head_refused, refused, encoding_refused;
};

static bool refuse(void *c, uint32_t request, const char *reason, const char *method, const char *path)
{
	struct ctx *x = c;
	(void)request;
	(void)method;
	(void)path;
	x->refused++;
	if (strcmp(reason, "upstream_encoding") == 0)
		x->encoding_refused++;
	return true;
}

static int rewrite(void *c, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
		   struct sk_strbuf *out, const char **reason)
{
	struct ctx *x = c;
	(void)request;
	(void)h;
	struct sk_swap_misuse m;
	enum sk_swap_result r = sk_swap_h1_head(&x->set, SNI, head, n, out, &m);
	CHECK(r != SK_SWAP_SWAPPED);   /* the SNI is not the secret's host */
	if (r == SK_SWAP_NONE)
		return 0;
	x->head_refused++;
	*reason = "credential_misuse";
	return -1;
}

static int body(void *c, uint32_t request, const char *method, struct sk_swap_body *scan, const uint8_t *p, size_t n)
{
	struct ctx *x = c;
	(void)request;
	(void)method;
	struct sk_swap_misuse m;
	if (!sk_swap_body_scan(scan, &x->set, p, n, &m))
		return 0;
	CHECK(m.where == SK_SWAP_AT_BODY);
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

struct result {
	struct sk_strbuf up, back;
	bool failed;   /* from_server said FAIL (a response it cannot mask: not relayed) */
	struct ctx x;
};

static size_t piece(uint32_t *seed, size_t left, unsigned max)
{
	if (!*seed)
		return left;
	size_t n = 1 + xorshift(seed) % max;
	return n < left ? n : left;
}

/* rel (when set): the agent's byte count after each server byte, the server's stream fed a byte at a time */
static void run(const uint8_t *agent, size_t alen, const uint8_t *srv, size_t slen, const char *val, uint32_t seed,
		struct result *res, size_t *rel)
{
	static const struct sk_secret secret = {
		.name = (char *)"gh", .placeholder = (char *)PH, .hosts = hosts, .n_hosts = 1, .in = in_hdrs, .n_in = 1,
	};
	struct sk_secret_value v = { .val = val, .len = strlen(val) };
	res->x = (struct ctx){ .set = { .secrets = &secret, .n = 1, .values = &v } };
	struct sk_h1_hooks hooks = { .ctx = &res->x, .refuse = refuse, .rewrite = rewrite, .body = body };
	struct sk_pt_filter *f = NULL;
	struct sk_err err = { 0 };
	CHECK(sk_h1_filter_new(SNI, "0", &hooks, &f, &err) == 0);
	struct sk_swap_mask *m = sk_h1_filter_mask(f);
	CHECK(m && sk_swap_mask_add(m, val, strlen(val)) == 0);
	struct sk_pt_out out = { 0 };
	bool open = true;
	for (size_t off = 0, n; off < alen && open; off += n) {
		n = piece(&seed, alen - off, 64);
		sk_pt_out_reset(&out);
		enum sk_pt_verdict vd = f->ops->from_client(f, agent + off, n, &out);
		CHECK(vd != SK_PT_FAIL);
		if (vd == SK_PT_PASS) {
			CHECK(out.to_peer.len == 0 && out.to_sender.len == 0 && !out.close_after);
			(void)sk_strbuf_put(&res->up, agent + off, n);
		} else {
			(void)sk_strbuf_put(&res->up, out.to_peer.p, out.to_peer.len);
		}
		(void)sk_strbuf_put(&res->back, out.to_sender.p, out.to_sender.len);
		open = !out.close_after;
	}
	if (open) {
		sk_pt_out_reset(&out);
		(void)f->ops->closed(f, true, &out);
	}
	for (size_t off = 0, n; off < slen && open; off += n) {
		n = rel ? 1 : piece(&seed, slen - off, 48);
		sk_pt_out_reset(&out);
		enum sk_pt_verdict vd = f->ops->from_server(f, srv + off, n, &out);
		CHECK(out.to_sender.len == 0);
		if (vd == SK_PT_FAIL) {
			CHECK(out.to_peer.len == 0);
			res->failed = true;
			open = false;
			break;
		}
		if (vd == SK_PT_PASS)
			(void)sk_strbuf_put(&res->back, srv + off, n);
		else
			(void)sk_strbuf_put(&res->back, out.to_peer.p, out.to_peer.len);
		open = !out.close_after;
		if (rel)
			rel[off] = res->back.len;
	}
	if (open) {
		sk_pt_out_reset(&out);
		enum sk_pt_verdict vd = f->ops->closed(f, false, &out);
		CHECK(vd != SK_PT_FAIL);
		if (vd == SK_PT_EMIT)
			(void)sk_strbuf_put(&res->back, out.to_peer.p, out.to_peer.len);
	}
	sk_pt_out_free(&out);
	f->ops->free(f);
	CHECK(sk_strbuf_ok(&res->up) == 0 && sk_strbuf_ok(&res->back) == 0);
}

/* The server's view: no head and no body data carries the placeholder or the value. */
static void check_upstream(const struct sk_strbuf *up, const char *val)
{
	struct sk_http_track t;
	sk_http_track_init(&t);
	const uint8_t *p = (const uint8_t *)up->p;
	struct sk_strbuf b = { 0 };   /* the current request's body data */
	size_t off = 0;
	while (off < up->len) {
		size_t n = 0;
		struct sk_http_head h;
		enum sk_track_state st = t.st;
		enum sk_track_result r = sk_http_track_next(&t, p + off, up->len - off, &n, &h, NULL);
		if (r != SK_TRACK_FORWARD && r != SK_TRACK_HEAD)
			break;   /* unfinished, or bytes the filter let go after a refusal in audit mode (none here) */
		if (r == SK_TRACK_HEAD) {
			CHECK(!has_ci(p + off, n, PH) && !has_ci(p + off, n, val));
			sk_strbuf_reset(&b);
		} else if (st == SK_TS_BODY || st == SK_TS_CHUNK_DATA) {
			(void)sk_strbuf_put(&b, p + off, n);
			CHECK(sk_strbuf_ok(&b) == 0);
			CHECK(!has_ci((const uint8_t *)b.p, b.len, PH) && !has_ci((const uint8_t *)b.p, b.len, val));
		}
		off += n;
	}
	sk_strbuf_free(&b);
}

/* What the agent got never holds the value, but where the filter released a proper head of it before the
 * rest (rel, the byte-at-a-time run, in the agent's stream's offsets): only at the end of a response as
 * the server framed it, where each response is released whole (a value straddling two responses is the
 * server's framing, not an echo the mask can hold back). Masking keeps lengths. */
static void check_back(const struct result *r, const uint8_t *srv, size_t slen, const char *val, const size_t *rel,
		       bool agent_has)
{
	size_t vlen = strlen(val);
	bool same_len = !(r->x.refused || r->x.head_refused || r->x.body_refused || r->failed);
	/* (the filter's answers may echo the agent's own bytes: the value there is the agent's) */
	for (const char *at = r->back.len >= vlen && !agent_has ? memmem(r->back.p, r->back.len, val, vlen) : NULL; at;
	     at = memmem(at + 1, r->back.len - (size_t)(at + 1 - r->back.p), val, vlen)) {
		size_t i = (size_t)(at - r->back.p);
		/* some proper head of the occurrence was released before the rest came: a response's end (within
		 * one, the mask holds a partial match back) */
		CHECK(rel != NULL);
		bool released = false;
		for (size_t k = 0; k < slen && !released; k++)
			released = rel[k] > i && rel[k] < i + vlen;
		CHECK(released);
	}
	if (!same_len)
		return;
	/* nothing of the filter's in the agent's stream: the server's bytes, masked in place */
	/* (a chunk line the close cut short is dropped: then a prefix) */
	CHECK(r->back.len <= slen);
	for (size_t i = 0; i < r->back.len; i++)
		CHECK((uint8_t)r->back.p[i] == srv[i] || r->back.p[i] == '*');
}

static bool same(const struct sk_strbuf *a, const struct sk_strbuf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > 65536)
		return 0;
	uint32_t seed = data[0] | 0x100u;
	const char *val = values[data[1] % (sizeof(values) / sizeof(values[0]))];
	const uint8_t *agent = data + 2, *srv = NULL;
	size_t alen = size - 2, slen = 0;
	const uint8_t *sep = memmem(agent, alen, SEP, sizeof(SEP) - 1);
	if (sep) {
		srv = sep + sizeof(SEP) - 1;
		slen = (size_t)(data + size - srv);
		alen = (size_t)(sep - agent);
	}
	struct result whole = { 0 }, cut = { 0 }, bytes = { 0 };
	size_t *rel = calloc(slen + 1, sizeof(*rel));
	CHECK(rel != NULL);
	run(agent, alen, srv, slen, val, 0, &whole, NULL);
	run(agent, alen, srv, slen, val, seed, &cut, NULL);
	run(agent, alen, srv, slen, val, 0, &bytes, rel);
	bool agent_has = has_ci(agent, alen, val);   /* (the answers name the host lower-cased) */
	check_back(&bytes, srv, slen, val, rel, agent_has);
	check_upstream(&whole.up, val);
	check_upstream(&cut.up, val);
	check_back(&whole, srv, slen, val, bytes.failed || !same(&whole.back, &bytes.back) ? NULL : rel, agent_has);
	check_back(&cut, srv, slen, val, bytes.failed || !same(&cut.back, &bytes.back) ? NULL : rel, agent_has);
	CHECK(whole.x.body_refused == cut.x.body_refused && whole.x.head_refused == cut.x.head_refused);
	CHECK(whole.x.refused == cut.x.refused && whole.failed == cut.failed);
	if (!whole.x.body_refused)
		CHECK(same(&whole.up, &cut.up));
	if (!whole.failed)   /* a failed connection: how much went before the failure is the cut's */
		CHECK(same(&whole.back, &cut.back));
	sk_strbuf_free(&whole.up);
	sk_strbuf_free(&whole.back);
	sk_strbuf_free(&cut.up);
	sk_strbuf_free(&cut.back);
	sk_strbuf_free(&bytes.up);
	sk_strbuf_free(&bytes.back);
	free(rel);
	return 0;
}
