/* sidecar/gateway/fuzz_gw_head.c — libFuzzer target for the API gateway's pure request-side helpers (gateway.h):
 * the agent's request-head parser, routing, the path check and the path-prefix check, the caller-token
 * lookup, the upstream header filter, the audit path, and the chunked body decoder. Every function is
 * handed an exactly-sized heap copy of what it may read (the head, the target, the path without its
 * query), so ASan reports a read past the length it was given (the earlier strcspn-past-the-buffer bug in
 * process_head was of that kind).
 *
 * Input: byte 0 picks the mode, the rest is the data.
 *   0, 1  a request head: sk_gw_parse_head, then (when complete) what process_head does with it
 *   2     a path ("/v1/...?q"): sk_gw_check_path and sk_gw_path_allowed directly
 *   3     a chunked body: decoded in one call and again in pieces cut by the data (sizes from byte 1)
 *   4     (byte 0 exactly 4) an upstream response's header lines for sk_gw_response_refusal; byte 1: the
 *         status (low 3 bits) and whether the agent's method was HEAD (bit 3)
 *
 * Invariants, judged by an oracle written here:
 *  - head: a complete head reports a length within the input that ends in CRLFCRLF, and the same head cut
 *    to that length parses to the same length while one byte less is never complete; the method is 1..31
 *    token bytes; target and every header name/value lie inside the head; the target has no byte <= 0x20
 *    or >= 0x7f; Content-Length and chunked never both; keep-alive only on HTTP/1.1; a caller token lies
 *    inside a header value; no header the filter keeps is hop-by-hop, Host, Content-Length, Expect,
 *    X-Stockade-Token, the secret header or (when it carried the token) Authorization; the audit path is
 *    NUL-terminated within its buffer and keeps no query value.
 *  - path: a path sk_gw_check_path accepts has no ';', '\', '#', control, space or non-ASCII byte; no
 *    malformed %-escape; no encoded '.', '/', '\', '%', ';' or control; decodes to shortest-form UTF-8
 *    with no surrogate, nothing above U+10FFFF and none of the look-alikes of those characters; has no
 *    segment made of dots (and spaces) and no empty segment but a trailing one. A path a prefix rule
 *    allows passes the check and starts with the prefix on a segment boundary. The query never changes
 *    the verdict on the path.
 *  - chunked: feeding the body in pieces gives the same verdict and the same bytes as one call; progress
 *    reported never exceeds what was given.
 *  - response: no response without a body is refused; one with a body is refused (502) exactly when it is
 *    206/226 (upstream_partial) or a Content-Encoding line names a coding other than identity or a
 *    Transfer-Encoding line one other than chunked and identity (upstream_encoding). The filter keeps no
 *    Accept-Encoding, Range, If-Range, A-IM or Want-*-Digest header.
 * Seeds: sidecar/gateway/fuzz/fuzz_gw_head/. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy.h"
#include "sidecar/gateway/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			(void)fprintf(stderr, "fuzz_gw_head: invariant failed: %s (line %d)\n", #cond, __LINE__); \
			__builtin_trap(); \
		} \
	} while (0)

static char *dup_exact(const void *p, size_t n)
{
	char *c = malloc(n ? n : 1);
	CHECK(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

/* ---- the path oracle ------------------------------------------------------------------------------- */

static int hexv(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (uint8_t)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool look_alike(uint32_t cp)
{
	/* folded into '.', '/', '\', ';' or '%' by NFKC or best-fit conversion */
	static const uint32_t t[] = { 0x037e, 0x2024, 0x2025, 0x2026, 0x2044, 0x2215, 0x29f5, 0x29f8, 0x29f9,
				      0xfe52, 0xfe54, 0xfe68, 0xfe6a, 0xff05, 0xff0e, 0xff0f, 0xff1b, 0xff3c };
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i] == cp)
			return true;
	return false;
}

/* Would this path (no query) be safe to judge on its raw string? The gateway's promise, re-derived. */
static bool oracle_path_ok(const uint8_t *p, size_t len)
{
	uint8_t *d = malloc(len ? len : 1);   /* the path decoded once */
	CHECK(d);
	size_t n = 0;
	bool ok = true;
	for (size_t i = 0; ok && i < len; i++) {
		uint8_t c = p[i];
		if (c <= 0x20 || c >= 0x7f || c == ';' || c == '\\' || c == '#') {
			ok = false;
		} else if (c == '%') {
			int h = i + 2 < len ? hexv(p[i + 1]) : -1, l = i + 2 < len ? hexv(p[i + 2]) : -1;
			if (h < 0 || l < 0) {
				ok = false;
				break;
			}
			uint8_t b = (uint8_t)(h * 16 + l);
			if (b == '.' || b == '/' || b == '\\' || b == '%' || b == ';' || b < 0x20 || b == 0x7f)
				ok = false;
			d[n++] = b;
			i += 2;
		} else {
			d[n++] = c;
		}
	}
	/* shortest-form UTF-8, no surrogates, <= U+10FFFF, no look-alikes */
	for (size_t i = 0; ok && i < n;) {
		uint8_t c = d[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k;
		uint32_t cp, min;
		if ((c & 0xe0) == 0xc0)
			k = 1, cp = c & 0x1fu, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			k = 2, cp = c & 0x0fu, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			k = 3, cp = c & 0x07u, min = 0x10000;
		else {
			ok = false;
			break;
		}
		for (size_t j = 1; ok && j <= k; j++) {
			if (i + j >= n || (d[i + j] & 0xc0) != 0x80)
				ok = false;
			else
				cp = cp << 6 | (d[i + j] & 0x3fu);
		}
		if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || look_alike(cp)))
			ok = false;
		i += k + 1;
	}
	/* segments of the decoded path ('/' can only come from a raw '/': %2f is refused above) */
	size_t seg = 0, dots = 0, sp = 0;
	for (size_t i = 0; ok && i <= n; i++) {
		if (i == n || d[i] == '/') {
			if (seg == 0 && i > 0 && i < n)
				ok = false;   /* empty segment in the middle */
			if (dots && dots + sp == seg)
				ok = false;   /* ".", "..", "...", ". ." */
			seg = dots = sp = 0;
		} else {
			seg++;
			dots += d[i] == '.';
			sp += d[i] == ' ';
		}
	}
	free(d);
	return ok;
}

static char *pfx[] = { "/v1/messages", "/v1/models/", "/v2" };
static char *meth[] = { "GET", "POST" };
static struct sk_api api = {
	.name = "anthropic",
	.upstream = "https://api.example.com",
	.header_name = "x-api-key",
	.methods = meth,
	.n_methods = 2,
	.path_prefixes = pfx,
	.n_path_prefixes = 3,
};

/* path[0..len) may carry a query; each function gets an exact copy of what it is given. */
static void check_path(const char *path, size_t len)
{
	const char *q = memchr(path, '?', len);
	const size_t plen = q ? (size_t)(q - path) : len;
	char *whole = dup_exact(path, len), *only = dup_exact(path, plen);
	const int r = sk_gw_check_path(only, plen);
	CHECK(r == 0 || r < 0);
	CHECK(sk_gw_check_path(whole, len) == r);   /* the query is never judged */
	if (r == 0)
		CHECK(oracle_path_ok((const uint8_t *)only, plen));
	const bool allowed = sk_gw_path_allowed(&api, only, plen);
	if (allowed) {
		CHECK(r == 0);
		bool on_boundary = false;
		for (size_t i = 0; i < api.n_path_prefixes; i++) {
			size_t pl = strlen(pfx[i]);
			if (plen >= pl && !memcmp(only, pfx[i], pl) &&
			    (pfx[i][pl - 1] == '/' || plen == pl || only[pl] == '/'))
				on_boundary = true;
		}
		CHECK(on_boundary);
	}
	free(whole);
	free(only);
}

/* ---- the head -------------------------------------------------------------------------------------- */

static bool name_is(const char *n, size_t len, const char *lit)
{
	return strlen(lit) == len && strncasecmp(n, lit, len) == 0;
}

struct emit_ctx {
	const struct sk_gw_req *req;
	bool drop_auth;
	size_t n;
};

static bool in_list(const char *list, size_t llen, const char *tok, size_t tlen)
{
	size_t i = 0;
	while (i < llen) {
		while (i < llen && (list[i] == ' ' || list[i] == '\t' || list[i] == ','))
			i++;
		size_t s = i;
		while (i < llen && list[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (list[e - 1] == ' ' || list[e - 1] == '\t'))
			e--;
		if (e - s == tlen && tlen && strncasecmp(list + s, tok, tlen) == 0)
			return true;
	}
	return false;
}

static int emit(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct emit_ctx *c = arg;
	(void)value;
	(void)vlen;
	static const char *const never[] = { "connection", "keep-alive", "te", "trailer", "transfer-encoding",
					     "upgrade", "proxy-connection", "host", "content-length", "expect",
					     "x-stockade-token", "x-api-key", "accept-encoding", "range", "if-range",
					     "a-im", "want-digest", "want-content-digest", "want-repr-digest" };
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		CHECK(!name_is(name, nlen, never[i]));
	CHECK(!(nlen >= 6 && strncasecmp(name, "proxy-", 6) == 0));
	CHECK(!(c->drop_auth && name_is(name, nlen, "authorization")));
	/* nor a name a Connection header lists (when they fit the filter's 1 KiB list) */
	size_t total = 0;
	for (size_t i = 0; i < c->req->n_h; i++)
		if (name_is(c->req->h[i].name, c->req->h[i].name_len, "connection"))
			total += c->req->h[i].value_len + 1;
	if (total < 1000)
		for (size_t i = 0; i < c->req->n_h; i++)
			if (name_is(c->req->h[i].name, c->req->h[i].name_len, "connection"))
				CHECK(!in_list(c->req->h[i].value, c->req->h[i].value_len, name, nlen));
	c->n++;
	return 0;
}

static bool inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && (size_t)(p - buf) <= len && n <= len - (size_t)(p - buf);
}

static void check_head(const uint8_t *data, size_t size)
{
	char *buf = dup_exact(data, size);
	static struct sk_gw_req req;   /* large: keep it off the stack */
	const enum sk_gw_head_verdict v = sk_gw_parse_head(buf, size, &req);
	/* a final rejection always has its answer; the two other verdicts never do */
	CHECK((sk_gw_head_answer(v) != NULL) == (v != SK_GW_HEAD_NEED_MORE && v != SK_GW_HEAD_COMPLETE));
	if (v != SK_GW_HEAD_COMPLETE) {
		free(buf);
		return;
	}
	const size_t h = req.head_len;
	CHECK(h >= 4 && h <= size && h <= SK_GW_HEAD_MAX && !memcmp(buf + h - 4, "\r\n\r\n", 4));
	/* the head alone parses the same; one byte less is never complete */
	{
		static struct sk_gw_req r2;
		char *cut = dup_exact(buf, h);
		CHECK(sk_gw_parse_head(cut, h, &r2) == SK_GW_HEAD_COMPLETE && r2.head_len == h);
		CHECK(sk_gw_parse_head(cut, h - 1, &r2) != SK_GW_HEAD_COMPLETE);
		free(cut);
	}
	const size_t ml = strlen(req.method);
	CHECK(ml >= 1 && ml < sizeof(req.method));
	CHECK(req.minor == 0 || req.minor == 1);
	CHECK(inside(req.target, req.target_len, buf, h) && req.target_len >= 1 && req.target_len <= SK_GW_TARGET_MAX);
	for (size_t i = 0; i < req.target_len; i++)
		CHECK((unsigned char)req.target[i] > 0x20 && (unsigned char)req.target[i] < 0x7f);
	CHECK(req.n_h <= SK_GW_MAX_HEADERS);
	for (size_t i = 0; i < req.n_h; i++) {
		CHECK(inside(req.h[i].name, req.h[i].name_len, buf, h) && req.h[i].name_len >= 1);
		CHECK(inside(req.h[i].value, req.h[i].value_len, buf, h));
		for (size_t k = 0; k < req.h[i].value_len; k++) {
			unsigned char c = (unsigned char)req.h[i].value[k];
			CHECK(c != '\r' && c != '\n' && c != 0);
		}
	}
	CHECK(!(req.chunked && req.content_length >= 0));
	CHECK(!req.keep_alive || req.minor == 1);

	const char *tok = NULL;
	size_t tlen = 0;
	bool via_auth = false;
	if (sk_gw_find_token(&req, &tok, &tlen, &via_auth)) {
		bool in_a_value = false;
		for (size_t i = 0; i < req.n_h; i++)
			in_a_value = in_a_value || (tok >= req.h[i].value && tlen <= req.h[i].value_len &&
						    (size_t)(tok - req.h[i].value) <= req.h[i].value_len - tlen);
		CHECK(in_a_value);
	}
	struct emit_ctx ec = { .req = &req, .drop_auth = via_auth };
	CHECK(sk_gw_filter_request_headers(&req, api.header_name, via_auth, emit, &ec) == 0);
	CHECK(ec.n <= req.n_h);

	char *target = dup_exact(req.target, req.target_len);
	char name[64];
	const char *rest = NULL;
	size_t rest_len = 0;
	int rr = sk_gw_route(target, req.target_len, name, &rest, &rest_len);
	CHECK(rr == 0 || rr == -ENOENT || rr == -EINVAL);
	if (rr == 0) {
		size_t nl = strlen(name);
		CHECK(nl >= 1 && nl <= 63 && !memcmp(target + 1, name, nl));
		CHECK(rest == target + 1 + nl && rest_len == req.target_len - 1 - nl);
		CHECK(rest_len == 0 || rest[0] == '/' || rest[0] == '?');
		char audit[256];
		sk_gw_audit_path(rest, rest_len, audit, sizeof(audit));
		const size_t al = strlen(audit);
		CHECK(al < sizeof(audit) && al >= 1);
		const char *qm = strchr(audit, '?');
		if (qm)   /* keys only: every '=' is followed by '&' or the end */
			for (const char *e = strchr(qm, '='); e; e = strchr(e + 1, '='))
				CHECK(e[1] == 0 || e[1] == '&');
		char *r2 = dup_exact(rest, rest_len);
		check_path(r2, rest_len);
		free(r2);
	}
	free(target);
	free(buf);
}

/* ---- chunked bodies -------------------------------------------------------------------------------- */

static void check_chunked(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	const unsigned piece = (data[0] & 0x1f) + 1, ocap = ((data[0] >> 5) & 7) * 3 + 1;
	data++;
	size--;
	uint8_t *in = (uint8_t *)dup_exact(data, size);
	uint8_t *one = malloc(size + 1), *two = malloc(size + 1);
	CHECK(one && two);

	struct sk_gw_chunked c1 = { 0 };
	size_t used1 = 0, made1 = 0;
	const int r1 = sk_gw_chunked_decode(&c1, in, size, &used1, one, size + 1, &made1);
	CHECK(used1 <= size && made1 <= used1 && made1 <= size);
	CHECK(r1 == 1 || r1 == 0 || r1 == -1);
	if (r1 == 0)
		CHECK(used1 == size);   /* out had room for everything: it only stops for more input */

	/* the same bytes in pieces of `piece` bytes, into an out buffer of ocap bytes */
	struct sk_gw_chunked c2 = { 0 };
	size_t off = 0, made2 = 0;
	int r2 = 0;
	unsigned stalls = 0;
	while (off < size && r2 == 0) {
		size_t n = size - off < piece ? size - off : piece;
		uint8_t *p = (uint8_t *)dup_exact(in + off, n);
		uint8_t *o = malloc(ocap);
		CHECK(o);
		size_t u = 0, m = 0;
		r2 = sk_gw_chunked_decode(&c2, p, n, &u, o, ocap, &m);
		CHECK(u <= n && m <= ocap && m <= u);
		memcpy(two + made2, o, m);
		made2 += m;
		off += u;
		stalls = u ? 0 : stalls + 1;
		CHECK(stalls < 3);   /* with room in out, some input is always taken */
		free(p);
		free(o);
	}
	CHECK(r2 == r1);
	if (r1 != -1) {
		CHECK(made2 == made1 && !memcmp(one, two, made1));
		CHECK(off == used1);
	}
	free(in);
	free(one);
	free(two);
}

/* ---- the upstream response's form -------------------------------------------------- */

static bool is_ws(char c)   /* OWS; not strchr(" \t", c), which matches a NUL byte too */
{
	return c == ' ' || c == '\t';
}

/* Does the list v[0..n) (its line end dropped) hold a member (cut at ';', trimmed of OWS) other than "" and
 * ok1/ok2? A CR anywhere else is part of a member: such a coding is another one (refused). */
static bool other_member(const char *v, size_t n, const char *ok1, const char *ok2)
{
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	size_t i = 0;
	while (i <= n) {
		size_t s = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = s;
		while (e < i && v[e] != ';')
			e++;
		while (s < e && is_ws(v[s]))
			s++;
		while (e > s && is_ws(v[e - 1]))
			e--;
		if (e > s && !name_is(v + s, e - s, ok1) && !(ok2 && name_is(v + s, e - s, ok2)))
			return true;
		i++;
	}
	return false;
}

static void check_response(const uint8_t *data, size_t size)
{
	static const int statuses[] = { 200, 206, 226, 204, 304, 101, 404, 500 };
	if (size < 1)
		return;
	const int status = statuses[data[0] & 7];
	const bool head_req = data[0] & 8;
	char *up = dup_exact(data + 1, size - 1);
	size_t len = size - 1;
	const struct sk_gw_answer *a = sk_gw_response_refusal(up, len, status, head_req);
	const bool no_body = head_req || status == 204 || status == 304 || status < 200;
	bool coded = false;   /* the oracle: a line "content-encoding:" or "transfer-encoding:" with another coding */
	for (size_t off = 0; off < len;) {
		const char *line = up + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - line) + 1 : len - off;
		off += ll;
		const char *colon = memchr(line, ':', ll);
		if (!colon)
			continue;
		size_t nlen = (size_t)(colon - line), vl = ll - nlen - 1;
		if (name_is(line, nlen, "content-encoding"))
			coded |= other_member(colon + 1, vl, "identity", NULL);
		else if (name_is(line, nlen, "transfer-encoding"))
			coded |= other_member(colon + 1, vl, "chunked", "identity");
	}
	if (no_body)
		CHECK(!a);
	else if (status == 206 || status == 226)
		CHECK(a && a->status == 502 && !strcmp(a->reason, "upstream_partial"));
	else if (coded)
		CHECK(a && a->status == 502 && !strcmp(a->reason, "upstream_encoding"));
	else
		CHECK(!a);
	free(up);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > SK_GW_HEAD_MAX + 1024)
		return 0;
	if (data[0] == 4) {   /* (no head seed starts with 4: the older modes keep their corpus) */
		check_response(data + 1, size - 1);
		return 0;
	}
	const unsigned mode = data[0] & 3;
	if (mode <= 1)
		check_head(data + 1, size - 1);
	else if (mode == 2)
		check_path((const char *)data + 1, size - 1);
	else
		check_chunked(data + 1, size - 1);
	return 0;
}
