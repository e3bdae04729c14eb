/* sidecar/proxy/fuzz_http_track.c — libFuzzer target for the request-boundary tracker. The input's first three
 * bytes steer the run (bit 0: whether a websocket upgrade is answered 101; bits 1-3: a small max_line
 * instead of the default, to reach the line limits; the next two bytes: the seed of the read sizes), the
 * rest is the client→server stream. It is fed as the relay would, once whole and once in pseudo-random
 * pieces (and byte by byte when short), and the tracker's promises are checked: n within the bytes
 * given, n > 0 exactly on FORWARD/HEAD, a HEAD's n is its head's length, never more forwarded than
 * arrived, an ERROR stays the same ERROR, and the trace (heads, merged forwarded runs, holds, the final
 * verdict) does not depend on how the stream was cut. Seeds: sidecar/proxy/fuzz/fuzz_http_track/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "sidecar/proxy/http_track.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

enum ev_kind { EV_HEAD = 1, EV_FORWARD, EV_HOLD, EV_OPAQUE, EV_ERROR, EV_END };

struct ev {
	enum ev_kind kind;
	size_t val;            /* HEAD: n; FORWARD: merged run; END: the last result */
	const char *reason;    /* ERROR */
	uint32_t host_hash;    /* HEAD */
};

struct trace {
	struct ev *ev;
	size_t n, cap;
	size_t forwarded;
};

static void push(struct trace *tr, enum ev_kind kind, size_t val, const char *reason, uint32_t host_hash)
{
	if (kind == EV_FORWARD && tr->n > 0 && tr->ev[tr->n - 1].kind == EV_FORWARD) {
		tr->ev[tr->n - 1].val += val;
		return;
	}
	CHECK(tr->n < tr->cap);
	tr->ev[tr->n++] = (struct ev){ .kind = kind, .val = val, .reason = reason, .host_hash = host_hash };
}

static uint32_t hash(const char *s)
{
	return (uint32_t)sk_fnv1a64_add_str(SK_FNV64_OFFSET, s);
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

struct cfg {
	bool switched;
	size_t max_line;
	uint32_t seed;
	int mode;              /* 0: whole, 1: random pieces, 2: byte by byte */
};

static enum sk_track_result call(struct sk_http_track *t, const uint8_t *p, size_t len, size_t *n,
				 struct sk_http_head *h, const char **why)
{
	/* An exactly-sized copy: ASan sees a read past len. */
	uint8_t *copy = malloc(len ? len : 1);
	CHECK(copy);
	if (len)
		memcpy(copy, p, len);
	enum sk_track_result r = sk_http_track_next(t, len ? copy : copy + 1, len, n, h, why);
	free(copy);
	if (r == SK_TRACK_FORWARD || r == SK_TRACK_HEAD)
		CHECK(*n > 0 && *n <= len);
	else
		CHECK(*n == 0);
	CHECK((r == SK_TRACK_ERROR) == (*why != NULL));
	if (r == SK_TRACK_ERROR)
		CHECK(strncmp(*why, "http_", 5) == 0);
	if (r == SK_TRACK_HEAD) {
		CHECK(h->head_len == *n && *n >= 4);
		CHECK(memcmp(p + *n - 4, "\r\n\r\n", 4) == 0);
	}
	return r;
}

static void run(const uint8_t *s, size_t len, const struct cfg *c, struct trace *tr)
{
	struct sk_http_track t;
	struct sk_http_head h;
	enum sk_track_result r = SK_TRACK_NEED_MORE;
	uint32_t rng = c->seed | 1;
	size_t off = 0, avail = 0, n;
	const char *why;

	tr->n = 0;
	tr->forwarded = 0;
	sk_http_track_init(&t);
	if (c->max_line)
		t.max_line = c->max_line;
	while (avail < len || avail == 0) {
		if (c->mode == 0)
			avail = len;
		else if (c->mode == 2)
			avail++;
		else
			avail += 1 + xorshift(&rng) % (1 + (c->seed >> 8) % 96);
		if (avail > len)
			avail = len;
		for (;;) {
			r = call(&t, s + off, avail - off, &n, &h, &why);
			if (r == SK_TRACK_HEAD) {
				push(tr, EV_HEAD, n, NULL, h.host_is_ip ? 1 : hash(h.host));
			} else if (r == SK_TRACK_FORWARD) {
				push(tr, EV_FORWARD, n, NULL, 0);
			} else if (r == SK_TRACK_HOLD) {
				push(tr, EV_HOLD, 0, NULL, 0);
				sk_http_track_upgrade_result(&t, c->switched);
				continue;
			} else if (r == SK_TRACK_OPAQUE) {
				push(tr, EV_OPAQUE, 0, NULL, 0);
				CHECK(call(&t, s + off, avail - off, &n, &h, &why) == SK_TRACK_OPAQUE);
				tr->forwarded += len - off;
				goto out;
			} else if (r == SK_TRACK_ERROR) {
				const char *again;
				push(tr, EV_ERROR, 0, why, 0);
				CHECK(t.st == SK_TS_FAILED);
				/* Failed stays failed, with the same reason, whatever is passed next. */
				CHECK(call(&t, s + off, len - off, &n, &h, &again) == SK_TRACK_ERROR);
				CHECK(strcmp(again, why) == 0);
				CHECK(call(&t, s, 0, &n, &h, &again) == SK_TRACK_ERROR);
				goto out;
			} else {
				CHECK(r == SK_TRACK_NEED_MORE);
				break;
			}
			off += n;
			tr->forwarded += n;
			CHECK(off <= avail);
		}
		if (len == 0)
			break;
	}
out:
	CHECK(tr->forwarded <= len);
	push(tr, EV_END, (size_t)r, NULL, 0);
}

static bool same(const struct trace *a, const struct trace *b)
{
	if (a->n != b->n || a->forwarded != b->forwarded)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct ev *x = &a->ev[i], *y = &b->ev[i];
		if (x->kind != y->kind || x->val != y->val || x->host_hash != y->host_hash)
			return false;
		if ((x->reason == NULL) != (y->reason == NULL) || (x->reason && strcmp(x->reason, y->reason) != 0))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg c = { 0 };
	struct trace whole, piece;

	if (size < 3)
		return 0;
	c.switched = data[0] & 1;
	c.max_line = (data[0] >> 1) & 7 ? (size_t)((data[0] >> 1) & 7) * 6 : 0;
	c.seed = (uint32_t)data[1] << 8 | data[2];
	data += 3;
	size -= 3;

	/* Each HEAD and FORWARD consumes a byte at least; a HOLD follows a HEAD; plus OPAQUE/ERROR and END. */
	size_t cap = 3 * size + 8;
	whole = (struct trace){ .ev = calloc(cap, sizeof(struct ev)), .cap = cap };
	piece = (struct trace){ .ev = calloc(cap, sizeof(struct ev)), .cap = cap };
	CHECK(whole.ev && piece.ev);

	c.mode = 0;
	run(data, size, &c, &whole);
	c.mode = 1;
	run(data, size, &c, &piece);
	CHECK(same(&whole, &piece));
	if (size <= 512) {
		c.mode = 2;
		run(data, size, &c, &piece);
		CHECK(same(&whole, &piece));
	}
	free(whole.ev);
	free(piece.ev);
	return 0;
}
