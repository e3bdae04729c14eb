/* sidecar/core/secret_swap.c — the placeholder swap and the misuse scan; see secret_swap.h. */
#include "sidecar/core/secret_swap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/http_path.h"
#include "common/util.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Case-insensitive search; naive, but heads are bounded and needles short. */
static bool find_ci(const uint8_t *h, size_t hl, const uint8_t *n, size_t nl)
{
	if (nl == 0 || nl > hl)
		return false;
	int f = lc(n[0]);
	for (size_t i = 0; i + nl <= hl; i++) {
		if (lc(h[i]) != f)
			continue;
		size_t k = 1;
		while (k < nl && lc(h[i + k]) == lc(n[k]))
			k++;
		if (k == nl)
			return true;
	}
	return false;
}

/* base64 of in[0..n) with padding into out (4 * ceil(n / 3) + 1 bytes); returns the length. */
static size_t b64_encode(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0, i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = B64[v >> 18];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = B64[(v >> 6) & 63];
		out[o++] = B64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = B64[v >> 18];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return o;
}

static int b64_val(int c)
{
	const char *p = c ? strchr(B64, c) : NULL;
	return p ? (int)(p - B64) : -1;
}

/* Strict base64 (standard alphabet, padding optional) of in[0..n) into out (3 * n / 4 + 3 bytes); the
 * decoded length, or -1. */
static long b64_decode(const char *in, size_t n, uint8_t *out)
{
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -1;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val((unsigned char)in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	return (long)o;
}

/* The haystack and, when it has a '%', its percent-decoded copy (made on first need). */
struct hay {
	const uint8_t *p;
	size_t len;
	uint8_t *dec;
	size_t dlen;
	bool tried, nomem;
};

static int hexv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : (c = lc(c)) >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void hay_decode(struct hay *h)
{
	if (h->tried)
		return;
	h->tried = true;
	if (!memchr(h->p, '%', h->len))
		return;
	if (!(h->dec = calloc(1, h->len + 1))) {
		h->nomem = true;
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < h->len; i++) {
		int a, b;
		if (h->p[i] == '%' && i + 2 < h->len && (a = hexv(h->p[i + 1])) >= 0 && (b = hexv(h->p[i + 2])) >= 0) {
			h->dec[o++] = (uint8_t)(a << 4 | b);
			i += 2;
		} else {
			h->dec[o++] = h->p[i];
		}
	}
	h->dlen = o;
}

static void hay_free(struct hay *h)
{
	if (h->dec) {
		/* a decoded value would be the secret itself */
		explicit_bzero(h->dec, h->len + 1);
		free(h->dec);
	}
	h->dec = NULL;
}

/* Whether the haystack carries x[0..n): raw, percent-decoded, and with `encoded` also in hex and base64 /
 * base64url at each alignment. -ENOMEM counts as found (fail closed). */
static bool carries(struct hay *h, const char *x, size_t n, bool encoded)
{
	const uint8_t *ux = (const uint8_t *)x;
	if (find_ci(h->p, h->len, ux, n))
		return true;
	hay_decode(h);
	if (h->nomem)
		return true;
	if (h->dec && find_ci(h->dec, h->dlen, ux, n))
		return true;
	if (!encoded)
		return false;
	size_t cap = 2 * n + 8 > 4 * ((n + 2) / 3 + 1) + 8 ? 2 * n + 8 : 4 * ((n + 2) / 3 + 1) + 8;
	char *buf = calloc(1, cap);
	uint8_t *pre = calloc(1, n + 2);
	bool found = false;
	if (!buf || !pre) {
		found = true;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = "0123456789abcdef"[ux[i] >> 4];
		buf[2 * i + 1] = "0123456789abcdef"[ux[i] & 15];
	}
	if (find_ci(h->p, h->len, (const uint8_t *)buf, 2 * n) ||
	    (h->dec && find_ci(h->dec, h->dlen, (const uint8_t *)buf, 2 * n))) {
		found = true;
		goto out;
	}
	for (size_t k = 0; k < 3 && !found; k++) {
		/* with k bytes before it, the characters that depend on x alone */
		memset(pre, 0, k);
		memcpy(pre + k, x, n);
		(void)b64_encode(pre, k + n, buf);
		size_t from = (8 * k + 5) / 6, to = 8 * (k + n) / 6;
		if (to <= from)
			continue;
		const uint8_t *core = (const uint8_t *)buf + from;
		found = find_ci(h->p, h->len, core, to - from) || (h->dec && find_ci(h->dec, h->dlen, core, to - from));
		for (size_t i = from; i < to && !found; i++)
			buf[i] = buf[i] == '+' ? '-' : buf[i] == '/' ? '_' : buf[i];
		found = found || find_ci(h->p, h->len, core, to - from) ||
			(h->dec && find_ci(h->dec, h->dlen, core, to - from));
	}
out:
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
	if (pre) {
		explicit_bzero(pre, n + 2);
		free(pre);
	}
	return found;
}

static const struct sk_secret_value *value_of(const struct sk_swap_set *s, size_t i)
{
	return s->values && s->values[i].val && s->values[i].len ? &s->values[i] : NULL;
}

/* Any secret's value, then placeholder, in h: the first found fills m. */
static bool scan_hay(const struct sk_swap_set *s, struct hay *h, bool values, bool placeholders,
		     enum sk_swap_where where, struct sk_swap_misuse *m)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct sk_secret_value *v = value_of(s, i);
		const char *ph = s->secrets[i].placeholder;
		bool val = values && v && carries(h, v->val, v->len, v->len >= SK_SWAP_ENCODED_MIN);
		if (val || (placeholders && ph && carries(h, ph, strlen(ph), true))) {
			memset(m, 0, sizeof(*m));
			m->secret = i;
			m->where = where;
			m->value = val;
			return true;
		}
	}
	return false;
}

bool sk_swap_scan(const struct sk_swap_set *s, const uint8_t *buf, size_t len, enum sk_swap_where where,
		  struct sk_swap_misuse *m)
{
	struct hay h = { .p = buf, .len = len };
	bool r = scan_hay(s, &h, true, true, where, m);
	hay_free(&h);
	return r;
}

/* The header's name for the audit line, cut to fit (names are the agent's, but never a value: a value in a
 * name is misuse found before this is written). */
static void set_header(struct sk_swap_misuse *m, const char *lname)
{
	size_t n = strlen(lname);
	if (n >= sizeof(m->header))
		n = sizeof(m->header) - 1;
	memcpy(m->header, lname, n);
	m->header[n] = 0;
}

static bool host_listed(const struct sk_secret *sec, const char *host)
{
	size_t hl = host ? strlen(host) : 0;
	while (hl > 0 && host[hl - 1] == '.')
		hl--;
	for (size_t i = 0; i < sec->n_hosts && hl; i++)
		if (strlen(sec->hosts[i]) == hl && !strncasecmp(sec->hosts[i], host, hl))
			return true;
	return false;
}

static bool path_listed(const struct sk_secret *sec, bool norm_ok, const char *norm)
{
	if (sec->n_paths == 0)
		return true;
	for (size_t i = 0; i < sec->n_paths && norm_ok; i++)
		if (sk_http_glob_match(sec->paths[i], norm))
			return true;
	return false;
}

static bool header_listed(const struct sk_secret *sec, const char *lname)
{
	for (size_t i = 0; i < sec->n_in; i++)
		if (!strcmp(sec->in[i], lname))
			return true;
	return false;
}

/* Every exact occurrence of ph in v[0..vl) replaced by val, into out (reset first). */
static void replace_all(struct sk_strbuf *out, const char *v, size_t vl, const char *ph, size_t pl,
			const char *val, size_t vall)
{
	sk_strbuf_reset(out);
	size_t i = 0, from = 0;
	while (i + pl <= vl) {
		if (!memcmp(v + i, ph, pl)) {
			(void)sk_strbuf_put(out, v + from, i - from);
			(void)sk_strbuf_put(out, val, vall);
			i += pl;
			from = i;
		} else {
			i++;
		}
	}
	(void)sk_strbuf_put(out, v + from, vl - from);
}

static void wipe_buf(struct sk_strbuf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);
	sk_strbuf_free(b);
}

/* `Basic <base64 of user:pass>` with the placeholder inside: decoded, swapped, encoded again, into out.
 * false when v is not such a value (out untouched). */
static bool basic_swap(struct sk_strbuf *out, const char *v, size_t vl, const char *ph, size_t pl,
		       const char *val, size_t vall, bool *nomem)
{
	if (vl < 7 || strncasecmp(v, "basic", 5) || (v[5] != ' ' && v[5] != '\t'))
		return false;
	size_t a = 5;
	while (a < vl && (v[a] == ' ' || v[a] == '\t'))
		a++;
	size_t b = a;
	while (b < vl && v[b] != ' ' && v[b] != '\t')
		b++;
	if (b == a)
		return false;
	uint8_t *dec = calloc(1, 3 * (b - a) / 4 + 3);
	struct sk_strbuf sw = { 0 };
	char *enc = NULL;
	bool done = false;
	long dl = dec ? b64_decode(v + a, b - a, dec) : -1;
	if (!dec) {
		*nomem = true;
		goto out;
	}
	if (dl < 0 || !find_ci(dec, (size_t)dl, (const uint8_t *)ph, pl))
		goto out;
	replace_all(&sw, (const char *)dec, (size_t)dl, ph, pl, val, vall);
	if (sk_strbuf_ok(&sw) < 0 || !(enc = calloc(1, 4 * (sw.len / 3 + 1) + 1))) {
		*nomem = true;
		goto out;
	}
	size_t el = b64_encode((const uint8_t *)sw.p, sw.len, enc);
	sk_strbuf_reset(out);
	(void)sk_strbuf_put(out, v, a);
	(void)sk_strbuf_put(out, enc, el);
	(void)sk_strbuf_put(out, v + b, vl - b);
	explicit_bzero(enc, el);
	done = true;
out:
	if (dec) {
		explicit_bzero(dec, 3 * (b - a) / 4 + 3);
		free(dec);
	}
	free(enc);
	wipe_buf(&sw);
	return done;
}

/* One header: misuse, or the value with every allowed placeholder swapped (*changed, out), per the
 * rules of the top comment. lname is the name in lower case. */
static enum sk_swap_result judge_header(const struct sk_swap_set *s, const char *host, bool norm_ok,
					const char *norm, const char *lname, const char *value, size_t vlen,
					struct sk_strbuf *out, bool *changed, struct sk_swap_misuse *m)
{
	*changed = false;
	struct hay hn = { .p = (const uint8_t *)lname, .len = strlen(lname) };
	struct hay hv = { .p = (const uint8_t *)value, .len = vlen };
	/* The agent never holds a value, and a name is never a place for a placeholder. */
	bool bad = scan_hay(s, &hn, true, true, SK_SWAP_AT_HEADER, m) || scan_hay(s, &hv, true, false, SK_SWAP_AT_HEADER, m);
	hay_free(&hn);
	hay_free(&hv);
	if (bad)
		return SK_SWAP_MISUSE;
	struct sk_strbuf cur = { 0 }, next = { 0 };
	(void)sk_strbuf_put(&cur, value, vlen);
	enum sk_swap_result res = SK_SWAP_NONE;
	for (size_t i = 0; i < s->n && res == SK_SWAP_NONE; i++) {
		const struct sk_secret *sec = &s->secrets[i];
		if (!sec->placeholder)
			continue;
		size_t pl = strlen(sec->placeholder);
		struct hay hc = { .p = (const uint8_t *)cur.p, .len = cur.len };
		bool has = carries(&hc, sec->placeholder, pl, true);
		hay_free(&hc);
		if (!has)
			continue;
		memset(m, 0, sizeof(*m));
		m->secret = i;
		set_header(m, lname);
		if (!header_listed(sec, lname)) {
			m->where = SK_SWAP_AT_HEADER;
			res = SK_SWAP_MISUSE;
			break;
		}
		if (!host_listed(sec, host)) {
			m->where = SK_SWAP_AT_HOST;
			res = SK_SWAP_MISUSE;
			break;
		}
		if (!path_listed(sec, norm_ok, norm)) {
			m->where = SK_SWAP_AT_PATH_RULE;
			res = SK_SWAP_MISUSE;
			break;
		}
		const struct sk_secret_value *v = value_of(s, i);
		if (!v)
			continue;   /* unreadable now (logged by the store's sync): the placeholder goes as is */
		bool nomem = false;
		replace_all(&next, cur.p, cur.len, sec->placeholder, pl, v->val, v->len);
		struct sk_strbuf t = cur;
		cur = next;
		next = t;
		if (basic_swap(&next, cur.p, cur.len, sec->placeholder, pl, v->val, v->len, &nomem)) {
			t = cur;
			cur = next;
			next = t;
		}
		if (nomem || sk_strbuf_ok(&cur) < 0 || sk_strbuf_ok(&next) < 0) {
			res = SK_SWAP_NOMEM;
			break;
		}
		/* another spelling of the placeholder left over: not a swap target, so not sent */
		hc = (struct hay){ .p = (const uint8_t *)cur.p, .len = cur.len };
		has = carries(&hc, sec->placeholder, pl, true);
		hay_free(&hc);
		if (has) {
			m->where = SK_SWAP_AT_HEADER;
			res = SK_SWAP_MISUSE;
			break;
		}
		*changed = true;
	}
	if (res == SK_SWAP_NONE && *changed) {
		sk_strbuf_reset(out);
		(void)sk_strbuf_put(out, cur.p ? cur.p : "", cur.len);
		if (sk_strbuf_ok(out) < 0 || sk_strbuf_ok(&cur) < 0)
			res = SK_SWAP_NOMEM;
	}
	wipe_buf(&cur);
	wipe_buf(&next);
	if (res != SK_SWAP_NONE)
		*changed = false;
	return res;
}

/* The request target t[0..tl): placeholder or value in its path or query is misuse; normalised into
 * norm for the secrets' path globs. */
static bool judge_target(const struct sk_swap_set *s, const char *host, const char *t, size_t tl, char *norm,
			 bool *norm_ok, struct sk_swap_misuse *m)
{
	const char *q = memchr(t, '?', tl);
	size_t pl = q ? (size_t)(q - t) : tl;
	if (sk_swap_scan(s, (const uint8_t *)t, pl, SK_SWAP_AT_PATH, m))
		return true;
	if (q && sk_swap_scan(s, (const uint8_t *)q, tl - pl, SK_SWAP_AT_QUERY, m))
		return true;
	*norm_ok = sk_http_path_normalize(t, tl, host, norm, SK_HTTP_PATH_MAX, NULL) == SK_PATH_OK;
	return false;
}

static void lower_name(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)lc((unsigned char)src[i]);
	dst[n] = 0;
}

enum sk_swap_result sk_swap_h1_head(const struct sk_swap_set *s, const char *host, const uint8_t *head,
				    size_t len, struct sk_strbuf *out, struct sk_swap_misuse *m)
{
	const char *h = (const char *)head;
	/* a bare CR: one server ends a line there, the next does not */
	for (size_t i = 0; i < len; i++)
		if (h[i] == '\r' && (i + 1 >= len || h[i + 1] != '\n'))
			return SK_SWAP_MALFORMED;
	const char *eol = memchr(h, '\n', len);
	if (!eol)
		return SK_SWAP_MALFORMED;
	size_t ll = (size_t)(eol - h);
	if (ll && h[ll - 1] == '\r')
		ll--;
	const char *sp1 = memchr(h, ' ', ll);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', ll - (size_t)(sp1 + 1 - h)) : NULL;
	if (!sp1 || !sp2)
		return SK_SWAP_MALFORMED;
	/* the method and version: never a place for a credential either */
	if (sk_swap_scan(s, head, (size_t)(sp1 - h), SK_SWAP_AT_PATH, m) ||
	    sk_swap_scan(s, (const uint8_t *)sp2, ll - (size_t)(sp2 - h), SK_SWAP_AT_PATH, m))
		return SK_SWAP_MISUSE;
	char *norm = malloc(SK_HTTP_PATH_MAX);
	if (!norm)
		return SK_SWAP_NOMEM;
	bool norm_ok = false;
	enum sk_swap_result res = SK_SWAP_NONE;
	struct sk_strbuf val = { 0 };
	size_t copied = 0;   /* head bytes already in out */
	bool any = false, ended = false;
	if (judge_target(s, host, sp1 + 1, (size_t)(sp2 - sp1 - 1), norm, &norm_ok, m)) {
		res = SK_SWAP_MISUSE;
		goto out;
	}
	const char *p = eol + 1, *end = h + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			res = SK_SWAP_MALFORMED;
			goto out;
		}
		size_t l = (size_t)(nl - p);
		if (l && p[l - 1] == '\r')
			l--;
		if (l == 0) {
			ended = nl + 1 == end;
			if (!ended)
				res = SK_SWAP_MALFORMED;   /* bytes after the head: not ours to judge here */
			break;
		}
		if (p[0] == ' ' || p[0] == '\t') {
			res = SK_SWAP_MALFORMED;       /* obsolete line folding */
			goto out;
		}
		const char *colon = memchr(p, ':', l);
		if (!colon || colon == p || colon[-1] == ' ' || colon[-1] == '\t') {
			res = SK_SWAP_MALFORMED;
			goto out;
		}
		char lname[256] = "";
		lower_name(lname, sizeof(lname), p, (size_t)(colon - p));
		const char *vs = colon + 1, *ve = p + l;
		while (vs < ve && (*vs == ' ' || *vs == '\t'))
			vs++;
		while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		bool changed = false;
		res = judge_header(s, host, norm_ok, norm, lname, vs, (size_t)(ve - vs), &val, &changed, m);
		if (res != SK_SWAP_NONE)
			goto out;
		if (changed) {
			if (!any)
				sk_strbuf_reset(out);
			any = true;
			(void)sk_strbuf_put(out, h + copied, (size_t)(vs - (h + copied)));
			(void)sk_strbuf_put(out, val.p, val.len);
			copied = (size_t)(ve - h);
		}
		p = nl + 1;
	}
	if (!ended) {
		res = SK_SWAP_MALFORMED;
		goto out;
	}
	if (any) {
		(void)sk_strbuf_put(out, h + copied, len - copied);
		res = sk_strbuf_ok(out) < 0 ? SK_SWAP_NOMEM : SK_SWAP_SWAPPED;
	}
out:
	if (any && res != SK_SWAP_SWAPPED && out->p) {
		/* a half-built head holds values: never left for the caller to send */
		explicit_bzero(out->p, out->cap);
		sk_strbuf_reset(out);
	}
	wipe_buf(&val);
	free(norm);
	return res;
}

enum sk_swap_result sk_swap_h2_header(const struct sk_swap_set *s, const char *host, const char *path,
				      size_t plen, const char *name, size_t nlen, const char *value, size_t vlen,
				      struct sk_strbuf *out, bool *never_index, struct sk_swap_misuse *m)
{
	*never_index = false;
	char lname[256] = "";
	lower_name(lname, sizeof(lname), name, nlen);
	char *norm = malloc(SK_HTTP_PATH_MAX);
	if (!norm)
		return SK_SWAP_NOMEM;
	bool norm_ok = false;
	enum sk_swap_result res = SK_SWAP_NONE;
	if (!strcmp(lname, ":path")) {
		if (judge_target(s, host, value, vlen, norm, &norm_ok, m))
			res = SK_SWAP_MISUSE;
		goto out;
	}
	if (lname[0] == ':') {
		if (sk_swap_scan(s, (const uint8_t *)value, vlen, SK_SWAP_AT_HEADER, m)) {
			set_header(m, lname);
			res = SK_SWAP_MISUSE;
		}
		goto out;
	}
	norm_ok = path && sk_http_path_normalize(path, plen, host, norm, SK_HTTP_PATH_MAX, NULL) == SK_PATH_OK;
	bool changed = false;
	res = judge_header(s, host, norm_ok, norm, lname, value, vlen, out, &changed, m);
	if (res == SK_SWAP_NONE && changed) {
		res = SK_SWAP_SWAPPED;
		*never_index = true;
	}
out:
	free(norm);
	return res;
}

const char *sk_swap_where_name(enum sk_swap_where w)
{
	switch (w) {
	case SK_SWAP_AT_HEADER: return "header";
	case SK_SWAP_AT_PATH: return "path";
	case SK_SWAP_AT_QUERY: return "query";
	case SK_SWAP_AT_HOST: return "host";
	case SK_SWAP_AT_PATH_RULE: return "path_rule";
	case SK_SWAP_AT_BODY: return "body";
	case SK_SWAP_AT_DNS: return "dns";
	case SK_SWAP_AT_PLAIN_HTTP: return "plain_http";
	}
	return "unknown";
}

const char *sk_swap_misuse_text(const struct sk_swap_set *s, const struct sk_swap_misuse *m, char *out,
				size_t cap)
{
	const char *name = m->secret < s->n && s->secrets[m->secret].name ? s->secrets[m->secret].name : "?";
	const char *what = m->value ? "value" : "placeholder";
	switch (m->where) {
	case SK_SWAP_AT_HEADER:
		(void)snprintf(out, cap, "%s of secret %s in header %s", what, name, m->header[0] ? m->header : "?");
		break;
	case SK_SWAP_AT_HOST:
		(void)snprintf(out, cap, "%s of secret %s in header %s toward a host it does not list", what, name,
			       m->header);
		break;
	case SK_SWAP_AT_PATH_RULE:
		(void)snprintf(out, cap, "%s of secret %s in header %s on a path it does not list", what, name,
			       m->header);
		break;
	default:
		(void)snprintf(out, cap, "%s of secret %s in the %s", what, name,
			       m->where == SK_SWAP_AT_PATH ? "request line" : m->where == SK_SWAP_AT_QUERY ? "query"
			       : m->where == SK_SWAP_AT_BODY ? "body" : m->where == SK_SWAP_AT_DNS ? "DNS query name"
			       : "plain-HTTP request");
		break;
	}
	return out;
}

int sk_swap_mask_add(struct sk_swap_mask *m, const char *val, size_t len)
{
	if (!val || !len)
		return 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->r[i].slen == len && !memcmp(m->val[i], val, len))
			return 0;
	struct sk_secret_redact *r = realloc(m->r, (m->n + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	m->r = r;
	char **v = realloc(m->val, (m->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->val = v;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, val, len);
	copy[len] = 0;
	if (sk_secret_redact_init(&m->r[m->n], copy, len) < 0) {
		sk_secret_wipe_free(copy, len + 1);
		return -ENOMEM;
	}
	m->val[m->n++] = copy;
	return 0;
}

int sk_swap_mask_init(struct sk_swap_mask *m, const struct sk_swap_set *s)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < s->n; i++) {
		const struct sk_secret_value *v = value_of(s, i);
		if (v && sk_swap_mask_add(m, v->val, v->len) < 0) {
			sk_swap_mask_free(m);
			return -ENOMEM;
		}
	}
	return 0;
}

bool sk_swap_mask_finds(const struct sk_swap_mask *m, const uint8_t *p, size_t n)
{
	if (!m->n || !n)
		return false;
	uint8_t *tmp = malloc(n);
	if (!tmp)
		return true;
	bool found = false;
	for (size_t i = 0; i < m->n && !found; i++) {
		/* a copy of the matcher with nothing held: its table is shared, read only */
		struct sk_secret_redact r = m->r[i];
		r.n_hold = r.masked = 0;
		size_t k = sk_secret_redact_run(&r, p, n, true, tmp);
		found = k != n || memcmp(tmp, p, n) != 0;
	}
	explicit_bzero(tmp, n);
	free(tmp);
	return found;
}

size_t sk_swap_mask_held(const struct sk_swap_mask *m)
{
	size_t h = 0;
	for (size_t i = 0; i < m->n; i++)
		h += m->r[i].n_hold;
	return h;
}

int sk_swap_mask_run(struct sk_swap_mask *m, const uint8_t *in, size_t len, bool final, struct sk_strbuf *out)
{
	if (!m->n)
		return len ? sk_strbuf_put(out, in, len) : 0;
	/* each stage releases at most what it is given plus what it held */
	size_t cap = len;
	for (size_t i = 0; i < m->n; i++)
		cap += m->r[i].n_hold;
	uint8_t *a = calloc(1, cap + 1), *b = calloc(1, cap + 1);
	int r = 0;
	if (!a || !b) {
		r = -ENOMEM;
		goto out;
	}
	const uint8_t *cur = in;
	size_t cl = len;
	for (size_t i = 0; i < m->n; i++) {
		uint8_t *dst = i % 2 ? b : a;
		cl = sk_secret_redact_run(&m->r[i], cur, cl, final, dst);
		cur = dst;
	}
	r = cl ? sk_strbuf_put(out, cur, cl) : 0;
out:
	if (a) {
		explicit_bzero(a, cap + 1);
		free(a);
	}
	if (b) {
		explicit_bzero(b, cap + 1);
		free(b);
	}
	return r;
}

void sk_swap_mask_free(struct sk_swap_mask *m)
{
	for (size_t i = 0; i < m->n; i++) {
		sk_secret_redact_free(&m->r[i]);
		sk_secret_wipe_free(m->val[i], m->r[i].slen + 1);
	}
	free(m->r);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

bool sk_swap_host_listed(const struct sk_swap_set *s, const char *host)
{
	for (size_t i = 0; i < s->n; i++)
		if (host_listed(&s->secrets[i], host))
			return true;
	return false;
}

int sk_swap_h2_body_form(const char *name, size_t nlen)
{
	static const char *const drop[] = { "range", "if-range", "a-im", "want-digest", "want-content-digest",
					    "want-repr-digest" };
	if (nlen == 15 && !strncasecmp(name, "accept-encoding", 15))
		return 1;
	for (size_t i = 0; i < SK_ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == nlen && !strncasecmp(name, drop[i], nlen))
			return 2;
	return 0;
}

enum sk_swap_result sk_swap_h1_body_form(const uint8_t *head, size_t len, struct sk_strbuf *out)
{
	const char *h = (const char *)head, *end = h + len;
	const char *p = memchr(h, '\n', len);
	if (!p)
		return SK_SWAP_MALFORMED;
	p++;
	size_t copied = 0;
	bool any = false;
	struct sk_strbuf o = { 0 };
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			sk_strbuf_free(&o);
			return SK_SWAP_MALFORMED;
		}
		const char *colon = memchr(p, ':', (size_t)(nl - p));
		int act = colon ? sk_swap_h2_body_form(p, (size_t)(colon - p)) : 0;
		if (act) {
			any = true;
			(void)sk_strbuf_put(&o, h + copied, (size_t)(p - (h + copied)));
			if (act == 1) {
				(void)sk_strbuf_put(&o, p, (size_t)(colon + 1 - p));
				(void)sk_strbuf_puts(&o, " identity\r\n");
			}
			copied = (size_t)(nl + 1 - h);
		}
		p = nl + 1;
	}
	if (!any)
		return SK_SWAP_NONE;
	(void)sk_strbuf_put(&o, h + copied, len - copied);
	if (sk_strbuf_ok(&o) < 0) {
		wipe_buf(&o);
		return SK_SWAP_NOMEM;
	}
	sk_strbuf_reset(out);
	(void)sk_strbuf_put(out, o.p, o.len);
	wipe_buf(&o);   /* the head may carry a swapped value */
	return sk_strbuf_ok(out) < 0 ? SK_SWAP_NOMEM : SK_SWAP_SWAPPED;
}

/* The longest spelling scan_hay looks for, of any secret: percent-encoding triples a byte. */
static size_t longest_spelling(const struct sk_swap_set *s)
{
	size_t l = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct sk_secret_value *v = value_of(s, i);
		size_t pl = s->secrets[i].placeholder ? strlen(s->secrets[i].placeholder) : 0;
		if (pl > l)
			l = pl;
		if (v && v->len > l)
			l = v->len;
	}
	return 3 * l + 4;
}

bool sk_swap_body_scan(struct sk_swap_body *b, const struct sk_swap_set *s, const uint8_t *p, size_t n,
		       struct sk_swap_misuse *m)
{
	if (b->done || !n || !s->n)
		return false;
	if (b->seen + n > SK_SWAP_BODY_SCAN) {
		n = (size_t)(SK_SWAP_BODY_SCAN - b->seen);
		b->done = true;   /* the documented prefix: past it, nothing is looked at */
	}
	b->seen += n;
	size_t keep = longest_spelling(s) - 1;
	size_t need = b->tlen + n;
	if (need > b->tcap) {
		uint8_t *t = malloc(need);
		if (!t) {
			b->done = true;
			memset(m, 0, sizeof(*m));
			m->where = SK_SWAP_AT_BODY;
			return true;   /* fail closed */
		}
		if (b->tlen)
			memcpy(t, b->tail, b->tlen);
		if (b->tail) {
			explicit_bzero(b->tail, b->tcap);
			free(b->tail);
		}
		b->tail = t;
		b->tcap = need;
	}
	memcpy(b->tail + b->tlen, p, n);
	b->tlen = need;
	if (sk_swap_scan(s, b->tail, b->tlen, SK_SWAP_AT_BODY, m)) {
		b->done = true;
		return true;
	}
	if (b->tlen > keep) {
		memmove(b->tail, b->tail + b->tlen - keep, keep);
		explicit_bzero(b->tail + keep, b->tlen - keep);
		b->tlen = keep;
	}
	return false;
}

void sk_swap_body_reset(struct sk_swap_body *b)
{
	if (b->tail) {
		explicit_bzero(b->tail, b->tcap);
		free(b->tail);
	}
	memset(b, 0, sizeof(*b));
}
