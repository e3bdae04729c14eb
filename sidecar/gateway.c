/* sidecar/gateway.c — the credential-injecting API gateway; see gateway.h.
 *
 * Agent connection states (one struct gw_conn per accepted connection):
 *   HEAD    → FORWARD  a complete, allowed request: an easy handle joins the multi
 *   HEAD    → LOCAL    the gateway answers itself (4xx/5xx): written, then LINGER
 *   HEAD    → (freed)  EOF / head timeout with nothing read
 *   FORWARD → FLUSH    curl reports the transfer done: the rest of the response is written
 *   FORWARD → LOCAL    the transfer failed before any response byte was sent (502/504/400)
 *   FORWARD → (freed)  the agent went away, or the transfer failed after the response began
 *   FLUSH   → HEAD     everything written, keep-alive (pipelined bytes are parsed at once)
 *   FLUSH   → (freed)  everything written, close
 *   LOCAL   → LINGER   answer written: write side shut, the unread request is drained for a moment so the
 *                      agent reads the answer instead of a reset
 *   LINGER  → (freed)  EOF, 1 MiB drained, or the linger timer
 *
 * Re-entrancy rule: curl calls read/write/header callbacks from inside curl_multi_socket_action and
 * curl_easy_pause; those callbacks only move bytes and set flags. Connections are freed, and handles
 * removed from the multi, only from loop callbacks after curl has returned. */
#include "sidecar/gateway.h"
#include "sidecar/curl_dl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "policy/policy.h"
#include "sidecar/audit.h"
#include "sidecar/denials.h"
#include "sidecar/metrics.h"
#include "sidecar/net.h"

#define GW_IN_CAP 65536           /* bytes buffered from the agent (head + body in flight) */
#define GW_OUT_HIGH 262144        /* response bytes queued for the agent before curl is paused */
#define GW_OUT_LOW 65536          /* ... and unpaused once the queue is below this */
#define GW_LINGER_MS 2000
#define GW_LINGER_DRAIN (1u << 20)
#define GW_SECRET_MAX 16384       /* a key file larger than this is refused (502), not truncated */

/* ---- pure helpers --------------------------------------------------------------------------------------- */

static bool tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const char *n, size_t len, const char *lit)
{
	return strlen(lit) == len && strncasecmp(n, lit, len) == 0;
}

/* Is `tok` one of the comma-separated tokens of list (case-insensitive, OWS around)? */
static bool list_has(const char *list, const char *tok, size_t tlen)
{
	if (!list)
		return false;
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *s = p;
		while (*p && *p != ',')
			p++;
		const char *e = p;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - s) == tlen && tlen && strncasecmp(s, tok, tlen) == 0)
			return true;
	}
	return false;
}

static int parse_u63(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 18)
		return -1;
	int64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int sk_gw_parse_head(const char *buf, size_t len, struct sk_gw_req *req)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	size_t scan = len < SK_GW_HEAD_MAX ? len : SK_GW_HEAD_MAX;
	const char *end = NULL;
	for (size_t i = 0; i + 3 < scan; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
			end = buf + i;
			break;
		}
	/* The request line alone can be judged early: a long target is 414, not 431. */
	const char *lf = memchr(buf, '\n', scan);
	if (!lf) {
		if (len > SK_GW_TARGET_MAX + 64)
			return -414;
		return len >= SK_GW_HEAD_MAX ? -431 : 0;
	}
	if (!end)
		return len >= SK_GW_HEAD_MAX ? -431 : (memchr(buf, 0, len) ? -400 : 0);
	req->head_len = (size_t)(end - buf) + 4;

	/* request line: METHOD SP target SP HTTP/1.x CRLF */
	const char *p = buf, *le = lf;
	if (le == buf || le[-1] != '\r')
		return -400;
	le--;
	const char *sp = memchr(p, ' ', (size_t)(le - p));
	if (!sp || sp == p || (size_t)(sp - p) >= sizeof(req->method))
		return -400;
	for (const char *m = p; m < sp; m++)
		if (!tchar((unsigned char)*m))
			return -400;
	memcpy(req->method, p, (size_t)(sp - p));
	req->method[sp - p] = 0;
	const char *t = sp + 1;
	const char *sp2 = memchr(t, ' ', (size_t)(le - t));
	if (!sp2 || sp2 == t)
		return -400;
	req->target = t;
	req->target_len = (size_t)(sp2 - t);
	if (req->target_len > SK_GW_TARGET_MAX)
		return -414;
	for (size_t i = 0; i < req->target_len; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return -400;
	const char *v = sp2 + 1;
	if (le - v != 8 || memcmp(v, "HTTP/1.", 7) != 0)
		return (le - v >= 5 && memcmp(v, "HTTP/", 5) == 0) ? -505 : -400;
	if (v[7] != '0' && v[7] != '1')
		return -505;
	req->minor = v[7] - '0';

	/* header lines */
	bool close = false, te_seen = false;
	p = lf + 1;
	while (p < end + 2) {
		const char *nl = memchr(p, '\n', (size_t)(end + 2 - p));
		if (!nl || nl == p || nl[-1] != '\r')
			return -400;
		const char *line_end = nl - 1;   /* at the CR */
		if (*p == ' ' || *p == '\t')
			return -400;                 /* obs-fold */
		const char *colon = memchr(p, ':', (size_t)(line_end - p));
		if (!colon || colon == p)
			return -400;
		for (const char *c = p; c < colon; c++)
			if (!tchar((unsigned char)*c))
				return -400;         /* also: whitespace before ':' */
		const char *vs = colon + 1, *ve = line_end;
		while (vs < ve && (*vs == ' ' || *vs == '\t'))
			vs++;
		while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *c = vs; c < ve; c++) {
			unsigned char ch = (unsigned char)*c;
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return -400;         /* NUL, bare CR, other controls */
		}
		if (req->n_h == SK_GW_MAX_HEADERS)
			return -431;
		struct sk_gw_hdr *h = &req->h[req->n_h++];
		h->name = p;
		h->name_len = (size_t)(colon - p);
		h->value = vs;
		h->value_len = (size_t)(ve - vs);
		if (name_is(h->name, h->name_len, "content-length")) {
			int64_t cl;
			if (parse_u63(h->value, h->value_len, &cl) < 0)
				return -400;
			if (req->content_length >= 0 && req->content_length != cl)
				return -400;
			req->content_length = cl;
		} else if (name_is(h->name, h->name_len, "transfer-encoding")) {
			/* Only "chunked", once: anything else is a smuggling vector or a coding we do not speak. */
			if (te_seen || !(h->value_len == 7 && strncasecmp(h->value, "chunked", 7) == 0))
				return -501;
			te_seen = true;
		} else if (name_is(h->name, h->name_len, "connection")) {
			for (size_t i = 0; i + 5 <= h->value_len; i++)
				if (strncasecmp(h->value + i, "close", 5) == 0 &&
				    (i == 0 || h->value[i - 1] == ',' || h->value[i - 1] == ' ') &&
				    (i + 5 == h->value_len || h->value[i + 5] == ',' || h->value[i + 5] == ' '))
					close = true;
		} else if (name_is(h->name, h->name_len, "expect")) {
			if (!(h->value_len == 12 && strncasecmp(h->value, "100-continue", 12) == 0))
				return -417;
			req->expect_continue = true;
		}
		p = nl + 1;
	}
	if (te_seen && (req->content_length >= 0 || req->minor == 0))
		return -400;
	req->chunked = te_seen;
	req->keep_alive = req->minor == 1 && !close;
	return (int)req->head_len;
}

int sk_gw_route(const char *target, size_t len, char name[64], const char **rest, size_t *rest_len)
{
	if (len == 0 || target[0] != '/')
		return -EINVAL;   /* absolute-form, authority-form and "*" are not for this port */
	size_t i = 1;
	while (i < len && target[i] != '/' && target[i] != '?')
		i++;
	size_t nlen = i - 1;
	if (nlen == 0 || nlen > 63)
		return -ENOENT;
	for (size_t k = 1; k < i; k++) {
		char c = target[k];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return -ENOENT;
	}
	memcpy(name, target + 1, nlen);
	name[nlen] = 0;
	*rest = target + i;
	*rest_len = len - i;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Code points that Unicode compatibility normalisation (NFKC/NFKD, as Java's Normalizer, .NET and some
 * frameworks apply to paths) or "best fit" conversions turn into '.', '/', '\\', ';' or '%': a segment
 * spelled with them becomes a dot segment or a separator after the gateway has judged it. */
static bool cp_confusable(uint32_t cp)
{
	static const uint32_t t[] = {
		0x037e,                    /* GREEK QUESTION MARK → ';' */
		0x2024, 0x2025, 0x2026,    /* ONE / TWO DOT LEADER, HORIZONTAL ELLIPSIS → ".", "..", "..." */
		0x2044, 0x2215, 0x29f8,    /* FRACTION SLASH, DIVISION SLASH, BIG SOLIDUS → '/' */
		0x29f5, 0x29f9,            /* REVERSE SOLIDUS OPERATOR, BIG REVERSE SOLIDUS → '\\' */
		0xfe52, 0xfe54, 0xfe68, 0xfe6a,   /* SMALL FULL STOP, SEMICOLON, REVERSE SOLIDUS, PERCENT SIGN */
		0xff05, 0xff0e, 0xff0f, 0xff1b, 0xff3c,   /* FULLWIDTH % . / ; \ */
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(t); i++)
		if (t[i] == cp)
			return true;
	return false;
}

int sk_gw_check_path(const char *path, size_t len)
{
	/* Only the path is judged; a query ('?' onwards) is the upstream's to read (';' is fine there). */
	const char *q = memchr(path, '?', len);
	if (q)
		len = (size_t)(q - path);
	/* Judge the segments as the most lenient server behind the upstream URL might read them: Tomcat and
	 * Spring strip ";params" from each segment ("..;" is ".."), double decoding turns %252e into '.',
	 * lenient UTF-8 decoders take overlong forms (%c0%ae) for '.', IIS/Windows drop trailing dots and
	 * spaces ("..." and ".. " are ".."), and compatibility normalisation folds U+FF0E into '.'. So:
	 * no ';' in the path, no encoded '.', '/', '\\', '%' or ';', no byte sequence that is not shortest-form
	 * UTF-8 (and no confusable of those characters), no raw '\\', '#', controls or non-ASCII bytes, no
	 * segment made only of dots (and spaces), and no empty segment but the trailing one: "//" is merged by
	 * some servers and kept by others, and a leading "//" reads as an authority to URL resolvers, so the
	 * raw string the path-prefix check sees could name another place than the one the upstream serves. */
	size_t seg_len = 0, seg_dots = 0, seg_sp = 0;
	uint32_t cp = 0, cp_min = 0;
	unsigned need = 0;                 /* UTF-8 continuation bytes still expected */
	for (size_t i = 0; i <= len; i++) {
		int c;
		if (i == len) {
			if (need)
				return -EINVAL;    /* truncated UTF-8 sequence */
			c = '/';
		} else if (path[i] == '%') {
			int h = i + 2 < len ? hexval(path[i + 1]) : -1, l = i + 2 < len ? hexval(path[i + 2]) : -1;
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
			if (c == '.' || c == '/' || c == '\\' || c == '%' || c == ';' || c < 0x20 || c == 0x7f)
				return -EINVAL;
		} else {
			c = (unsigned char)path[i];
			if (c == '\\' || c == '#' || c == ';' || c <= 0x20 || c >= 0x7f)
				return -EINVAL;
		}
		if (need) {
			if ((c & 0xc0) != 0x80)
				return -EINVAL;
			cp = cp << 6 | (uint32_t)(c & 0x3f);
			if (--need == 0 && (cp < cp_min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
					    cp_confusable(cp)))
				return -EINVAL;   /* overlong, out of range, surrogate, or a look-alike */
			seg_len++;
			continue;
		}
		if (c >= 0x80) {
			if (c >= 0xc2 && c <= 0xdf)
				need = 1, cp = (uint32_t)c & 0x1f, cp_min = 0x80;
			else if (c >= 0xe0 && c <= 0xef)
				need = 2, cp = (uint32_t)c & 0x0f, cp_min = 0x800;
			else if (c >= 0xf0 && c <= 0xf4)
				need = 3, cp = (uint32_t)c & 0x07, cp_min = 0x10000;
			else
				return -EINVAL;   /* continuation byte first, C0/C1 (always overlong), F5..FF */
			seg_len++;
			continue;
		}
		if (c == '/') {
			if (seg_len == 0 && i > 0 && i < len)
				return -EINVAL;   /* empty segment ("//"); a trailing '/' is fine */
			if (seg_dots && seg_dots + seg_sp == seg_len)
				return -EINVAL;   /* ".", "..", "...", ". .", "..%20" */
			seg_len = seg_dots = seg_sp = 0;
		} else {
			seg_len++;
			seg_dots += c == '.';
			seg_sp += c == ' ';
		}
	}
	return 0;
}

bool sk_gw_method_allowed(const struct sk_api *api, const char *method)
{
	if (api->n_methods == 0)
		return true;
	for (size_t i = 0; i < api->n_methods; i++)
		if (!strcmp(api->methods[i], method))
			return true;
	return false;
}

bool sk_gw_path_allowed(const struct sk_api *api, const char *path, size_t len)
{
	if (api->n_path_prefixes == 0)
		return true;
	/* Judged on the raw string, so only a path every server reads the same way can match a prefix. */
	if (sk_gw_check_path(path, len) < 0)
		return false;
	for (size_t i = 0; i < api->n_path_prefixes; i++) {
		const char *pre = api->path_prefixes[i];
		size_t pl = strlen(pre);
		if (len < pl || memcmp(path, pre, pl) != 0)
			continue;
		if (pre[pl - 1] == '/' || len == pl || path[pl] == '/')
			return true;
	}
	return false;
}

bool sk_gw_token_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen > blen ? alen : blen;
	volatile unsigned char diff = (unsigned char)(alen != blen);
	for (size_t i = 0; i < n; i++) {
		unsigned char x = i < alen ? (unsigned char)a[i] : 0;
		unsigned char y = i < blen ? (unsigned char)b[i] : 0;
		diff |= (unsigned char)(x ^ y);
	}
	return diff == 0;
}

bool sk_gw_find_token(const struct sk_gw_req *req, const char **tok, size_t *tlen, bool *via_auth)
{
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (name_is(h->name, h->name_len, "x-stockade-token")) {
			*tok = h->value;
			*tlen = h->value_len;
			*via_auth = false;
			return true;
		}
	}
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (name_is(h->name, h->name_len, "authorization") && h->value_len > 7 &&
		    strncasecmp(h->value, "bearer ", 7) == 0) {
			size_t k = 7;
			while (k < h->value_len && h->value[k] == ' ')
				k++;
			*tok = h->value + k;
			*tlen = h->value_len - k;
			*via_auth = true;
			return true;
		}
	}
	return false;
}

bool sk_gw_hop_by_hop(const char *name, size_t len, const char *connection)
{
	static const char *const hop[] = { "connection", "keep-alive", "te", "trailer", "transfer-encoding",
					   "upgrade", "proxy-connection" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(hop); i++)
		if (name_is(name, len, hop[i]))
			return true;
	if (len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return true;   /* Proxy-Authorization, Proxy-Authenticate, ...: meant for a proxy, not the API */
	return list_has(connection, name, len);
}

int sk_gw_filter_request_headers(const struct sk_gw_req *req, const char *secret_header, bool drop_auth,
				 sk_gw_emit_fn emit, void *arg)
{
	char conn[1024];
	size_t cl = 0;
	conn[0] = 0;
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (name_is(h->name, h->name_len, "connection") && cl + h->value_len + 2 < sizeof(conn)) {
			memcpy(conn + cl, h->value, h->value_len);
			cl += h->value_len;
			conn[cl++] = ',';
			conn[cl] = 0;
		}
	}
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (sk_gw_hop_by_hop(h->name, h->name_len, conn))
			continue;
		if (name_is(h->name, h->name_len, "host") || name_is(h->name, h->name_len, "content-length") ||
		    name_is(h->name, h->name_len, "expect") || name_is(h->name, h->name_len, "x-stockade-token"))
			continue;
		/* The agent must not choose (or see by echo) the injected credential. */
		if (secret_header && name_is(h->name, h->name_len, secret_header))
			continue;
		if (drop_auth && name_is(h->name, h->name_len, "authorization"))
			continue;
		int rc = emit(arg, h->name, h->name_len, h->value, h->value_len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

bool sk_gw_bucket_take(struct sk_gw_bucket *b, double rate, double burst, uint64_t now_ms, uint32_t *retry_after_s)
{
	if (rate <= 0)
		return true;
	double cap = burst > 0 ? burst : (rate > 1 ? rate : 1);
	if (!b->primed) {
		b->tokens = cap;
		b->last_ms = now_ms;
		b->primed = true;
	}
	if (now_ms > b->last_ms) {
		b->tokens += (double)(now_ms - b->last_ms) / 1000.0 * rate;
		if (b->tokens > cap)
			b->tokens = cap;
		b->last_ms = now_ms;
	}
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
		return true;
	}
	double wait = (1.0 - b->tokens) / rate;
	double s = ceil(wait);
	*retry_after_s = s < 1 ? 1 : s > 86400 ? 86400 : (uint32_t)s;
	return false;
}

int sk_gw_chunked_decode(struct sk_gw_chunked *c, const uint8_t *in, size_t in_len, size_t *in_used,
			 uint8_t *out, size_t out_cap, size_t *out_made)
{
	size_t i = 0, o = 0;
	while (i < in_len && c->st != SK_GW_CH_DONE) {
		uint8_t ch = in[i];
		switch (c->st) {
		case SK_GW_CH_SIZE: {
			int h = hexval((char)ch);
			if (h >= 0) {
				if (++c->digits > 10)
					goto bad;   /* 2^40: more than any sane body */
				c->left = c->left * 16 + (uint64_t)h;
			} else if (c->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
				c->st = SK_GW_CH_EXT;
			} else if (c->digits && ch == '\r') {
				c->st = SK_GW_CH_SIZE_LF;
			} else {
				goto bad;
			}
			i++;
			break;
		}
		case SK_GW_CH_EXT:
			if (ch == '\r')
				c->st = SK_GW_CH_SIZE_LF;
			else if (ch == '\n' || ++c->ext_len > 1024)
				goto bad;
			i++;
			break;
		case SK_GW_CH_SIZE_LF:
			if (ch != '\n')
				goto bad;
			i++;
			c->digits = c->ext_len = 0;
			c->st = c->left ? SK_GW_CH_DATA : SK_GW_CH_TRAILER;
			break;
		case SK_GW_CH_DATA: {
			size_t n = in_len - i;
			if (n > c->left)
				n = (size_t)c->left;
			if (n > out_cap - o)
				n = out_cap - o;
			if (n == 0)
				goto out;   /* out is full */
			memcpy(out + o, in + i, n);
			o += n;
			i += n;
			c->left -= n;
			if (!c->left)
				c->st = SK_GW_CH_DATA_CR;
			break;
		}
		case SK_GW_CH_DATA_CR:
			if (ch != '\r')
				goto bad;
			i++;
			c->st = SK_GW_CH_DATA_LF;
			break;
		case SK_GW_CH_DATA_LF:
			if (ch != '\n')
				goto bad;
			i++;
			c->st = SK_GW_CH_SIZE;
			break;
		case SK_GW_CH_TRAILER:   /* at the start of a trailer line (or the final CRLF) */
			if (ch == '\r') {
				c->st = SK_GW_CH_END_LF;
			} else {
				c->st = SK_GW_CH_TRAILER_LINE;
				if (++c->trailer_len > 8192)
					goto bad;
			}
			i++;
			break;
		case SK_GW_CH_TRAILER_LINE:
			if (ch == '\r')
				c->st = SK_GW_CH_TRAILER_LF;
			else if (ch == '\n' || ++c->trailer_len > 8192)
				goto bad;
			i++;
			break;
		case SK_GW_CH_TRAILER_LF:
			if (ch != '\n')
				goto bad;
			i++;
			c->st = SK_GW_CH_TRAILER;
			break;
		case SK_GW_CH_END_LF:
			if (ch != '\n')
				goto bad;
			i++;
			c->st = SK_GW_CH_DONE;
			break;
		case SK_GW_CH_DONE:
			break;
		}
	}
out:
	*in_used = i;
	*out_made = o;
	return c->st == SK_GW_CH_DONE ? 1 : 0;
bad:
	*in_used = i;
	*out_made = o;
	return -1;
}

void sk_gw_audit_path(const char *rest, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	bool in_query = false, in_value = false;
	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		char c = rest[i];
		if (!in_query) {
			if (c == '?')
				in_query = true;
			out[o++] = c;
			continue;
		}
		/* Query values can carry anything (prompts, ids, tokens): only the keys are kept. */
		if (c == '&') {
			in_value = false;
			out[o++] = c;
		} else if (c == '=') {
			if (!in_value)
				out[o++] = c;
			in_value = true;
		} else if (!in_value) {
			out[o++] = c;
		}
	}
	if (o == 0 && cap > 1)
		out[o++] = '/';
	if (cap)
		out[o] = 0;
}

int sk_gw_redact_init(struct sk_gw_redact *r, const char *secret, size_t slen)
{
	memset(r, 0, sizeof(*r));
	if (!secret || slen == 0)
		return 0;
	if (slen >= UINT32_MAX || !(r->fail = malloc((slen + 1) * sizeof(*r->fail))))
		return -ENOMEM;
	const uint8_t *s = (const uint8_t *)secret;
	r->fail[0] = r->fail[1] = 0;
	for (size_t i = 1; i < slen; i++) {
		uint32_t k = r->fail[i];
		while (k > 0 && s[k] != s[i])
			k = r->fail[k];
		if (s[k] == s[i])
			k++;
		r->fail[i + 1] = k;
	}
	r->secret = secret;
	r->slen = slen;
	return 0;
}

void sk_gw_redact_free(struct sk_gw_redact *r)
{
	if (!r)
		return;
	if (r->fail) {
		/* The table tells how the secret overlaps itself: wiped like the secret. */
		explicit_bzero(r->fail, (r->slen + 1) * sizeof(*r->fail));
		free(r->fail);
	}
	memset(r, 0, sizeof(*r));
}

/* Releases the first n bytes of the held window secret[0..q) (+ c as byte q): the first m are masked. */
static size_t redact_release(const uint8_t *s, size_t q, size_t m, int c, size_t n, uint8_t *out)
{
	size_t stars = m < n ? m : n, lit = (n < q ? n : q) - stars;
	memset(out, '*', stars);
	memcpy(out + stars, s + stars, lit);
	if (n > q)
		out[q] = (uint8_t)c;
	return n;
}

size_t sk_gw_redact_run(struct sk_gw_redact *r, const uint8_t *in, size_t len, bool final, uint8_t *out)
{
	const uint8_t *s = (const uint8_t *)r->secret;
	size_t sl = r->slen, o = 0;
	if (!s || sl == 0 || !r->fail) {
		if (len)
			memcpy(out, in, len);
		return len;
	}
	size_t q = r->n_hold, m = r->masked;
	for (size_t i = 0; i < len; i++) {
		if (q == 0) {
			/* Nothing held: everything up to the next byte that could start the secret goes as is. */
			const uint8_t *p = memchr(in + i, s[0], len - i);
			size_t n = p ? (size_t)(p - (in + i)) : len - i;
			memcpy(out + o, in + i, n);
			o += n;
			i += n;
			if (!p)
				break;
		}
		uint8_t c = in[i];
		size_t nq = q;
		while (nq > 0 && s[nq] != c)
			nq = r->fail[nq];
		if (s[nq] == c)
			nq++;
		/* The window secret[0..q) + c shrinks to its last nq bytes: the front ones leave. */
		size_t rel = q + 1 - nq;
		o += redact_release(s, q, m, c, rel, out + o);
		m = m > rel ? m - rel : 0;
		q = nq;
		if (q == sl) {
			/* An occurrence: all of it is masked; the part that may start the next one stays held. */
			size_t keep = r->fail[sl];
			memset(out + o, '*', sl - keep);
			o += sl - keep;
			q = m = keep;
		}
	}
	if (final) {
		o += redact_release(s, q, m, 0, q, out + o);
		q = m = 0;
	}
	r->n_hold = q;
	r->masked = m;
	return o;
}

/* ---- gateway state -------------------------------------------------------------------------------------- */

/* A small file cached until its identity or mtime changes (stat per request: rotation needs no restart,
 * and a Kubernetes Secret update swaps the ..data symlink, which changes the inode we stat). */
struct gw_file {
	char *path;
	char *val;        /* owned, wiped before free */
	size_t len;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};

struct gw_api_state {             /* per api name; survives policy reloads (the bucket keeps its tokens) */
	char name[64];
	struct sk_gw_bucket bucket;
	struct gw_file secret, token;
	struct gw_api_state *next;
};

struct gw_sock {                   /* one socket curl asked us to watch */
	struct sk_io io;
	struct sk_gateway *gw;
};

struct gw_buf {
	char *p;
	size_t len, cap;
};

enum gw_state { GW_HEAD, GW_LOCAL, GW_FORWARD, GW_FLUSH, GW_LINGER };

struct gw_conn {
	struct sk_gateway *gw;
	struct sk_io io;
	struct sk_timer timer;
	enum gw_state st;
	uint32_t events;               /* epoll interest now registered */
	uint8_t *in;                   /* GW_IN_CAP bytes from the agent; [in_off, in_len) unconsumed */
	size_t in_off, in_len;
	struct gw_buf out;             /* to the agent, from out_off */
	size_t out_off;
	size_t lingered;
	/* the request in flight */
	CURL *easy;
	struct curl_slist *hdrs;
	char method[32];
	char api[64];
	char path[512];                /* for the audit line: query values dropped */
	uint64_t t0_ms;
	bool keep_alive, client_eof, client_err, audited;
	bool forwarded;                /* the request went upstream (decision allow) */
	bool body_chunked, body_done;
	int64_t body_left;
	struct sk_gw_chunked chunk;
	bool send_paused, recv_paused;
	/* the response */
	int status;
	bool head_sent, in_1xx, resp_chunked, resp_no_body, resp_close;
	struct gw_buf rhead;           /* upstream header lines, until the blank line */
	struct sk_gw_redact redact;
	char *secret_copy;             /* owned copy for redact (the cache may rotate mid-stream) */
	uint64_t bytes_in, bytes_out;  /* to the agent (whole response), to the upstream (body) */
	int fail_status;
	const char *fail_reason;
	struct gw_conn *prev, *next;
};

struct sk_gateway {
	struct sk_sidecar *sc;
	struct sk_gateway_limits lim;
	CURLM *multi;
	struct sk_timer curl_timer;
	struct sk_listener l4, l6;   /* net.h: back off when out of descriptors */
	struct gw_conn *conns;
	size_t n_conns;
	struct gw_api_state *apis;
	bool draining;                  /* sk_gateway_stop_accepting: no keep-alive reuse from now on */
	bool curl_inited;
	struct sk_curl curl;            /* libcurl, dlopen'ed by gw_curl_ready on the first forwarded request */
};

static void buf_free(struct gw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static int buf_put(struct gw_buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

static int buf_printf(struct gw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(struct gw_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	return buf_put(b, tmp, (size_t)n);
}

static void wipe_free(char *p, size_t n)
{
	if (p) {
		explicit_bzero(p, n);
		free(p);
	}
}

static void file_clear(struct gw_file *f)
{
	wipe_free(f->val, f->len);
	f->val = NULL;
	f->len = 0;
	free(f->path);
	f->path = NULL;
}

/* Returns the file's value (trimmed of trailing whitespace; borrowed from the cache), re-reading it when
 * the path, inode, size, mtime or ctime changed. A value with a control byte inside is refused: it would
 * split the header line. */
static int file_get(struct gw_file *f, const char *path, const char **val, size_t *len, struct sk_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return sk_err_sys(err, errno, "stat %s", path);
	if (f->path && f->val && !strcmp(f->path, path) && f->dev == st.st_dev && f->ino == st.st_ino &&
	    f->size == st.st_size && f->mtim.tv_sec == st.st_mtim.tv_sec && f->mtim.tv_nsec == st.st_mtim.tv_nsec &&
	    f->ctim.tv_sec == st.st_ctim.tv_sec && f->ctim.tv_nsec == st.st_ctim.tv_nsec) {
		*val = f->val;
		*len = f->len;
		return 0;
	}
	sk_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sk_err_sys(err, errno, "open %s", path);
	if (fstat(fd, &st) < 0)
		return sk_err_sys(err, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode) || st.st_size > GW_SECRET_MAX)
		return sk_err_set(err, EINVAL, "%s: not a regular file of at most %d bytes", path, GW_SECRET_MAX);
	char *v = malloc((size_t)st.st_size + 1);
	if (!v)
		return sk_err_set(err, ENOMEM, "read %s", path);
	size_t n = 0;
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, v + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	v[n] = 0;
	bool ok = n > 0;
	for (size_t i = 0; i < n && ok; i++)
		ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
	if (!ok) {
		wipe_free(v, (size_t)st.st_size + 1);
		/* The message names the file, never its bytes. */
		return sk_err_set(err, EINVAL, "%s: empty or contains control bytes", path);
	}
	file_clear(f);
	f->path = strdup(path);
	if (!f->path) {
		wipe_free(v, n + 1);
		return sk_err_set(err, ENOMEM, "read %s", path);
	}
	f->val = v;
	f->len = n;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtim = st.st_mtim;
	f->ctim = st.st_ctim;
	*val = v;
	*len = n;
	return 0;
}

static struct gw_api_state *api_state(struct sk_gateway *g, const char *name)
{
	for (struct gw_api_state *s = g->apis; s; s = s->next)
		if (!strcmp(s->name, name))
			return s;
	struct gw_api_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->next = g->apis;
	g->apis = s;
	return s;
}

static const struct sk_api *find_api(const struct sk_policy *p, const char *name)
{
	for (size_t i = 0; p && i < p->n_apis; i++)
		if (p->apis[i].name && !strcmp(p->apis[i].name, name))
			return &p->apis[i];
	return NULL;
}

/* ---- audit and metrics ---------------------------------------------------------------------------------- */

static void json_str(struct gw_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	(void)buf_put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			(void)buf_put(b, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			(void)buf_put(b, e, 6);
		} else {
			(void)buf_put(b, s, 1);
		}
	}
	(void)buf_put(b, "\"", 1);
}

/* One NDJSON line per request, same conventions as audit.c (ts, event, decision, reason, bytes_*,
 * duration_ms) plus api, method, path (query values dropped), status. Never a header value or a body. */
static void req_end(struct gw_conn *c, int status, const char *reason)
{
	if (c->audited)
		return;
	c->audited = true;
	struct sk_gateway *g = c->gw;
	struct sk_audit *a = &g->sc->audit;
	uint64_t dur = sk_monotonic_ms() - c->t0_ms;
	struct timespec wall;
	struct tm tm;
	char ts[64];
	clock_gettime(CLOCK_REALTIME, &wall);
	gmtime_r(&wall.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(wall.tv_nsec / 1000000L) % 1000);
	const char *decision = c->forwarded ? "allow" : "deny";
	struct gw_buf b = { 0 };
	(void)buf_put(&b, "{\"ts\":", 6);
	json_str(&b, ts);
	(void)buf_put(&b, ",\"event\":\"api\",\"api\":", 21);
	json_str(&b, c->api[0] ? c->api : "");
	(void)buf_put(&b, ",\"method\":", 10);
	json_str(&b, c->method);
	(void)buf_put(&b, ",\"path\":", 8);
	json_str(&b, c->path);
	(void)buf_printf(&b, ",\"status\":%d,\"decision\":\"%s\",\"reason\":", status, decision);
	json_str(&b, reason ? reason : "ok");
	(void)buf_printf(&b, ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"duration_ms\":%" PRIu64 "}",
			 c->bytes_in, c->bytes_out, dur);
	if (b.p) {
		if (strcmp(decision, "deny") == 0 && a->denials)
			sk_denials_push(a->denials, b.p, b.len);
		(void)buf_put(&b, "\n", 1);
		/* One write per line, as audit.c does, so lines from the proxy and the gateway never interleave. */
		ssize_t w;
		do
			w = write(a->fd, b.p, b.len);
		while (w < 0 && errno == EINTR);
		if (w == (ssize_t)b.len)
			a->lines++;
		else
			a->write_errors++;
	}
	buf_free(&b);
	if (g->sc->metrics) {
		/* The label is a policy name or "unknown": an agent cannot grow the series set. */
		const char *label = find_api(g->sc->policy, c->api) ? c->api : "unknown";
		sk_metrics_api(g->sc->metrics, label, status, (double)dur / 1000.0);
	}
}

/* ---- agent connection plumbing -------------------------------------------------------------------------- */

static void conn_io(struct sk_loop *l, struct sk_io *io, uint32_t events);
static void conn_timer(struct sk_loop *l, struct sk_timer *t);
static int process_head(struct gw_conn *c);
static void check_multi(struct sk_gateway *g);

static void set_interest(struct gw_conn *c)
{
	uint32_t ev = 0;
	size_t pending = c->out.len - c->out_off;
	if (c->st == GW_HEAD || c->st == GW_LINGER)
		ev |= EPOLLIN;
	if (c->st == GW_FORWARD && !c->body_done && !c->client_eof && c->in_len < GW_IN_CAP)
		ev |= EPOLLIN;
	if (pending)
		ev |= EPOLLOUT;
	if (ev != c->events) {
		c->events = ev;
		(void)sk_loop_mod(c->gw->sc->loop, &c->io, ev, NULL);
	}
}

static void detach_easy(struct gw_conn *c)
{
	if (c->easy) {
		c->gw->curl.multi_remove_handle(c->gw->multi, c->easy);
		c->gw->curl.easy_cleanup(c->easy);
		c->easy = NULL;
	}
	for (struct curl_slist *s = c->hdrs; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));   /* one of them is the secret */
	if (c->hdrs)
		c->gw->curl.slist_free_all(c->hdrs);
	c->hdrs = NULL;
	size_t sl = c->redact.slen;
	sk_gw_redact_free(&c->redact);
	wipe_free(c->secret_copy, sl);
	c->secret_copy = NULL;
	buf_free(&c->rhead);
}

static void conn_free(struct gw_conn *c)
{
	struct sk_gateway *g = c->gw;
	detach_easy(c);
	sk_timer_cancel(g->sc->loop, &c->timer);
	sk_loop_del(g->sc->loop, &c->io);
	close(c->io.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->n_conns--;
	free(c->in);
	buf_free(&c->out);
	free(c);
}

/* Writes queued bytes. Returns 0 (all or some written, or would block) or -1 when the agent is gone. */
static int flush_out(struct gw_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t w = send(c->io.fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			c->client_err = true;
			return -1;
		}
		c->out_off += (size_t)w;
		c->bytes_in += (uint64_t)w;
	}
	if (c->out_off == c->out.len) {
		c->out.len = c->out_off = 0;
	} else if (c->out_off > GW_OUT_LOW) {
		memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	return 0;
}

static const char *reason_phrase(int st)
{
	switch (st) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return st < 300 ? "OK" : st < 400 ? "Redirect" : st < 500 ? "Client Error" : "Server Error";
	}
}

/* The gateway's own answer: JSON error body, Connection: close; then LOCAL → LINGER. */
static void respond_local(struct gw_conn *c, int status, const char *msg, const char *reason, uint32_t retry_after)
{
	detach_easy(c);
	struct gw_buf body = { 0 };
	(void)buf_put(&body, "{\"error\":", 9);
	json_str(&body, msg);
	(void)buf_put(&body, "}\n", 2);
	c->out.len = c->out_off = 0;
	(void)buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\nCache-Control: no-store\r\n", status, reason_phrase(status), body.len);
	if (status == 429)
		(void)buf_printf(&c->out, "Retry-After: %u\r\n", retry_after);
	if (status == 401)
		(void)buf_printf(&c->out, "WWW-Authenticate: Bearer realm=\"stockade\"\r\n");
	(void)buf_put(&c->out, "\r\n", 2);
	if (body.p && strcmp(c->method, "HEAD") != 0)
		(void)buf_put(&c->out, body.p, body.len);
	buf_free(&body);
	c->st = GW_LOCAL;
	c->keep_alive = false;
	req_end(c, status, reason);
	(void)sk_timer_arm(c->gw->sc->loop, &c->timer, GW_LINGER_MS + c->gw->lim.head_timeout_ms);
	if (flush_out(c) < 0) {
		conn_free(c);
		return;
	}
	if (c->out.len == c->out_off) {
		/* Answer written: stop sending and drain what the agent still sends, so it reads our answer
		 * rather than a reset caused by unread bytes. */
		shutdown(c->io.fd, SHUT_WR);
		c->st = GW_LINGER;
		c->in_off = c->in_len = 0;
		(void)sk_timer_arm(c->gw->sc->loop, &c->timer, GW_LINGER_MS);
	}
	set_interest(c);
}

/* After a response is complete and flushed: keep-alive → next request, else close. */
static void request_finished(struct gw_conn *c)
{
	req_end(c, c->status, "ok");
	bool reuse = c->keep_alive && c->body_done && !c->client_eof && !c->resp_close && !c->client_err &&
		     !c->gw->draining;
	detach_easy(c);
	if (!reuse) {
		conn_free(c);
		return;
	}
	c->st = GW_HEAD;
	c->audited = c->forwarded = false;
	c->status = 0;
	c->head_sent = c->in_1xx = c->resp_chunked = c->resp_no_body = c->resp_close = false;
	c->send_paused = c->recv_paused = false;
	c->bytes_in = c->bytes_out = 0;
	c->fail_status = 0;
	c->fail_reason = NULL;
	c->method[0] = c->api[0] = c->path[0] = 0;
	(void)sk_timer_arm(c->gw->sc->loop, &c->timer, c->gw->lim.head_timeout_ms);
	set_interest(c);
	if (c->in_len > c->in_off)
		(void)process_head(c);   /* a pipelined request is already here */
}

/* ---- curl callbacks (flags and bytes only; see the re-entrancy rule at the top) -------------------------- */

/* Moves request body bytes from the agent buffer into curl's buffer. */
static size_t body_take(struct gw_conn *c, char *dst, size_t cap)
{
	size_t avail = c->in_len - c->in_off, made = 0;
	if (c->body_chunked) {
		size_t used = 0;
		int rc = sk_gw_chunked_decode(&c->chunk, c->in + c->in_off, avail, &used, (uint8_t *)dst, cap, &made);
		c->in_off += used;
		if (rc < 0) {
			c->fail_status = 400;
			c->fail_reason = "bad_chunked_body";
			return 0;
		}
		if (rc == 1)
			c->body_done = true;
	} else {
		size_t n = avail < cap ? avail : cap;
		if ((int64_t)n > c->body_left)
			n = (size_t)c->body_left;
		memcpy(dst, c->in + c->in_off, n);
		c->in_off += n;
		c->body_left -= (int64_t)n;
		made = n;
		if (c->body_left == 0)
			c->body_done = true;
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	return made;
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct gw_conn *c = ud;
	if (c->client_err)
		return CURL_READFUNC_ABORT;
	if (c->body_done)
		return 0;
	size_t made = body_take(c, buf, size * nitems);
	if (c->fail_status)
		return CURL_READFUNC_ABORT;
	c->bytes_out += made;
	if (made || c->body_done)
		return made;
	if (c->client_eof) {
		c->fail_status = 400;
		c->fail_reason = "body_truncated";
		return CURL_READFUNC_ABORT;
	}
	/* Nothing from the agent yet: park the upload until its socket is readable again. */
	c->send_paused = true;
	set_interest(c);
	return CURL_READFUNC_PAUSE;
}

/* Queues response body bytes for the agent (redacted, chunk-framed when chunked). */
static int queue_body(struct gw_conn *c, const uint8_t *d, size_t n, bool final)
{
	uint8_t tmp[16384 + GW_SECRET_MAX];   /* room for a chunk + what the redactor holds (< the secret) */
	while (n > 0 || final) {
		size_t take = n > 16384 ? 16384 : n;
		bool last = final && take == n;
		size_t m = sk_gw_redact_run(&c->redact, d, take, last, tmp);
		d += take;
		n -= take;
		if (m && !c->resp_no_body) {
			if (c->resp_chunked && buf_printf(&c->out, "%zx\r\n", m) < 0)
				return -1;
			if (buf_put(&c->out, tmp, m) < 0 || (c->resp_chunked && buf_put(&c->out, "\r\n", 2) < 0))
				return -1;
		}
		if (last)
			break;
	}
	return 0;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct gw_conn *c = ud;
	size_t n = size * nmemb;
	if (c->client_err)
		return 0;
	if (c->out.len - c->out_off >= GW_OUT_HIGH) {
		/* The agent is not reading: stop reading from the upstream (curl keeps these bytes and
		 * hands them again when unpaused). */
		c->recv_paused = true;
		set_interest(c);
		return CURL_WRITEFUNC_PAUSE;
	}
	if (queue_body(c, (const uint8_t *)ptr, n, false) < 0) {
		c->client_err = true;
		return 0;
	}
	if (flush_out(c) < 0)
		return 0;
	set_interest(c);
	return n;
}

/* Builds the agent's response head from the upstream's, once its blank line arrives. */
static int emit_response_head(struct gw_conn *c)
{
	struct gw_buf *h = &c->rhead;
	char connection[1024] = "";
	size_t cl = 0;
	bool has_cl = false, has_te = false;
	/* First pass: what Connection names, and the framing the upstream used. */
	for (size_t off = 0; off < h->len;) {
		char *line = h->p + off;
		char *nl = memchr(line, '\n', h->len - off);
		size_t ll = nl ? (size_t)(nl - line) + 1 : h->len - off;
		off += ll;
		char *colon = memchr(line, ':', ll);
		if (!colon)
			continue;
		size_t nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		size_t vl = (size_t)(line + ll - v);
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (name_is(line, nlen, "connection") && cl + vl + 2 < sizeof(connection)) {
			memcpy(connection + cl, v, vl);
			cl += vl;
			connection[cl++] = ',';
			connection[cl] = 0;
		} else if (name_is(line, nlen, "content-length")) {
			has_cl = true;
		} else if (name_is(line, nlen, "transfer-encoding")) {
			has_te = true;
		}
	}
	bool head = strcmp(c->method, "HEAD") == 0;
	c->resp_no_body = head || c->status == 204 || c->status == 304 || c->status < 200;
	bool keep_cl = has_cl && !has_te;
	c->resp_chunked = !c->resp_no_body && !keep_cl && c->keep_alive;
	if (!c->resp_no_body && !keep_cl && !c->resp_chunked)
		c->resp_close = true;   /* HTTP/1.0 agent: the body ends when we close */
	if (c->gw->draining)
		c->resp_close = true;   /* SIGTERM: this response is the connection's last (framing unchanged) */
	(void)buf_printf(&c->out, "HTTP/1.1 %d %s\r\n", c->status, reason_phrase(c->status));
	size_t head_start = c->out.len;
	for (size_t off = 0; off < h->len;) {
		char *line = h->p + off;
		char *nl = memchr(line, '\n', h->len - off);
		size_t ll = nl ? (size_t)(nl - line) + 1 : h->len - off;
		off += ll;
		char *colon = memchr(line, ':', ll);
		if (!colon || colon == line)
			continue;
		size_t nlen = (size_t)(colon - line);
		if (sk_gw_hop_by_hop(line, nlen, connection))
			continue;
		if (name_is(line, nlen, "content-length") && !keep_cl)
			continue;
		size_t end = ll;
		while (end && (line[end - 1] == '\r' || line[end - 1] == '\n'))
			end--;
		(void)buf_put(&c->out, line, end);
		(void)buf_put(&c->out, "\r\n", 2);
	}
	if (c->resp_chunked)
		(void)buf_printf(&c->out, "Transfer-Encoding: chunked\r\n");
	if (!c->keep_alive || c->resp_close)
		(void)buf_printf(&c->out, "Connection: close\r\n");
	(void)buf_put(&c->out, "\r\n", 2);
	/* A reflected key in a response header is masked too (same length, so nothing else shifts). A fresh
	 * matcher state over the body's table: the head is judged on its own. */
	if (c->redact.secret && c->redact.slen && c->out.p) {
		struct sk_gw_redact r = c->redact;
		r.n_hold = r.masked = 0;
		size_t n = c->out.len - head_start;
		uint8_t *tmp = malloc(n + 1);
		if (!tmp) {
			/* Never send a head that was not searched for the key: drop it and end the request. */
			c->out.len = head_start;
			c->client_err = true;
			buf_free(&c->rhead);
			return -1;
		}
		size_t m = sk_gw_redact_run(&r, (const uint8_t *)c->out.p + head_start, n, true, tmp);
		memcpy(c->out.p + head_start, tmp, m);
		free(tmp);
	}
	c->head_sent = true;
	buf_free(&c->rhead);
	return 0;
}

static size_t header_cb(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct gw_conn *c = ud;
	size_t n = size * nitems;
	if (c->client_err)
		return 0;
	if (c->head_sent)
		return n;   /* trailers: dropped */
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		/* A status line: "HTTP/1.1 200 OK" or "HTTP/2 200". A 1xx head is followed by the real one. */
		const char *sp = memchr(ptr, ' ', n);
		int st = 0;
		for (const char *d = sp ? sp + 1 : NULL; d && d < ptr + n && *d >= '0' && *d <= '9'; d++)
			st = st * 10 + (*d - '0');
		c->status = st;
		c->in_1xx = st >= 100 && st < 200;
		c->rhead.len = 0;
		return n;
	}
	if (n <= 2 && (ptr[0] == '\r' || ptr[0] == '\n')) {
		if (c->in_1xx) {
			c->in_1xx = false;
			c->rhead.len = 0;
			return n;
		}
		if (emit_response_head(c) < 0 || flush_out(c) < 0)
			return 0;
		set_interest(c);
		return n;
	}
	if (c->in_1xx)
		return n;
	if (c->rhead.len + n > 256 * 1024 || buf_put(&c->rhead, ptr, n) < 0)
		return 0;   /* → CURLE_WRITE_ERROR → 502 */
	return n;
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp);
static int timer_cb(CURLM *m, long timeout_ms, void *userp);

static void sock_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct gw_sock *gs = io->ctx;
	struct sk_gateway *g = gs->gw;
	int mask = 0, running = 0;
	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	/* gs may be freed inside this call (CURL_POLL_REMOVE); not touched after. */
	g->curl.multi_socket_action(g->multi, io->fd, mask, &running);
	check_multi(g);
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)e;
	struct sk_gateway *g = userp;
	struct gw_sock *gs = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (gs) {
			sk_loop_del(g->sc->loop, &gs->io);
			g->curl.multi_assign(g->multi, s, NULL);
			free(gs);
		}
		return 0;
	}
	uint32_t ev = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (!gs) {
		gs = calloc(1, sizeof(*gs));
		if (!gs)
			return -1;
		gs->gw = g;
		sk_io_init(&gs->io, s, sock_io, gs);
		if (sk_loop_add(g->sc->loop, &gs->io, ev, NULL) < 0) {
			free(gs);
			return -1;
		}
		g->curl.multi_assign(g->multi, s, gs);
		return 0;
	}
	(void)sk_loop_mod(g->sc->loop, &gs->io, ev, NULL);
	return 0;
}

static void curl_timer_fired(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct sk_gateway *g = t->ctx;
	int running = 0;
	g->curl.multi_socket_action(g->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi(g);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	(void)m;
	struct sk_gateway *g = userp;
	if (timeout_ms < 0)
		sk_timer_cancel(g->sc->loop, &g->curl_timer);
	else if (sk_timer_arm(g->sc->loop, &g->curl_timer, (uint64_t)timeout_ms) < 0)
		return -1;
	return 0;
}

/* Maps a failed transfer to the agent's answer when no response byte was sent yet. */
static void transfer_failed(struct gw_conn *c, CURLcode rc)
{
	if (c->fail_status) {
		respond_local(c, c->fail_status, c->fail_status == 400 ? "bad request body" : "gateway error",
			      c->fail_reason, 0);
		return;
	}
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		respond_local(c, 504, "upstream timed out", "upstream_timeout", 0);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		respond_local(c, 502, "upstream name did not resolve", "upstream_resolve", 0);
		break;
	case CURLE_COULDNT_CONNECT:
		respond_local(c, 502, "upstream connection failed", "upstream_connect", 0);
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
		respond_local(c, 502, "upstream TLS failed", "upstream_tls", 0);
		break;
	default:
		respond_local(c, 502, c->gw->curl.easy_strerror(rc), "upstream_error", 0);
		break;
	}
}

static void transfer_done(struct gw_conn *c, CURLcode rc)
{
	if (c->client_err) {
		req_end(c, c->status ? c->status : 499, "client_gone");
		conn_free(c);
		return;
	}
	if (rc == CURLE_OK && !c->head_sent) {
		/* HEAD-like endings where curl saw no blank line callback (should not happen); be safe. */
		if (c->status == 0) {
			transfer_failed(c, CURLE_RECV_ERROR);
			return;
		}
		if (emit_response_head(c) < 0) {
			req_end(c, 500, "internal_error");
			conn_free(c);
			return;
		}
	}
	if (rc != CURLE_OK) {
		if (!c->head_sent) {
			transfer_failed(c, rc);
			return;
		}
		/* The agent already has part of a response: cut the connection so it cannot take a truncated
		 * body for a whole one (no final chunk, or fewer bytes than Content-Length). */
		req_end(c, c->status, rc == CURLE_OPERATION_TIMEDOUT ? "upstream_timeout" : "upstream_aborted");
		conn_free(c);
		return;
	}
	if (queue_body(c, NULL, 0, true) < 0 ||
	    (c->resp_chunked && buf_put(&c->out, "0\r\n\r\n", 5) < 0)) {
		req_end(c, c->status, "internal_error");
		conn_free(c);
		return;
	}
	detach_easy(c);
	c->st = GW_FLUSH;
	if (flush_out(c) < 0) {
		req_end(c, c->status, "client_gone");
		conn_free(c);
		return;
	}
	if (c->out.len == c->out_off) {
		request_finished(c);
		return;
	}
	set_interest(c);
}

static void check_multi(struct sk_gateway *g)
{
	CURLMsg *msg;
	int left;
	while ((msg = g->curl.multi_info_read(g->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct gw_conn *c = NULL;
		CURL *e = msg->easy_handle;
		CURLcode rc = msg->data.result;
		char *priv = NULL;
		g->curl.easy_getinfo(e, CURLINFO_PRIVATE, &priv);
		c = (struct gw_conn *)priv;
		if (c)
			transfer_done(c, rc);
	}
}

/* ---- starting a transfer -------------------------------------------------------------------------------- */

struct hdr_acc {
	const struct sk_curl *curl;
	struct curl_slist *list;
	int err;
};

static int add_hdr(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct hdr_acc *a = arg;
	char *line = NULL;
	/* "Name;" is curl's spelling of a header with an empty value ("Name:" would remove it). */
	int n = vlen ? asprintf(&line, "%.*s: %.*s", (int)nlen, name, (int)vlen, value)
		     : asprintf(&line, "%.*s;", (int)nlen, name);
	if (n < 0)
		return a->err = -ENOMEM;
	struct curl_slist *s = a->curl->slist_append(a->list, line);
	free(line);
	if (!s)
		return a->err = -ENOMEM;
	a->list = s;
	return 0;
}

/* libcurl (and the TLS library under it) is loaded and set up on the first forwarded request, not at
 * start: a sidecar whose policy has no `apis`, or that never forwards, never maps it (several MiB of
 * RSS). Single-threaded, so the non-thread-safe curl_global_init is safe here. A libcurl that cannot be
 * loaded is logged and fails only this request (502); the next one tries again. */
static int gw_curl_ready(struct sk_gateway *g)
{
	if (g->multi)
		return 0;
	struct sk_err err = { 0 };
	int rc = sk_curl_load(&g->curl, SK_CURL_SONAME, &err);
	if (rc < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		return rc;
	}
	if (!g->curl_inited) {
		if (g->curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -EIO;
		g->curl_inited = true;
	}
	if (!(g->multi = g->curl.multi_init()))
		return -ENOMEM;
	g->curl.multi_setopt(g->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	g->curl.multi_setopt(g->multi, CURLMOPT_SOCKETDATA, g);
	g->curl.multi_setopt(g->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	g->curl.multi_setopt(g->multi, CURLMOPT_TIMERDATA, g);
	return 0;
}

/* Returns 0 with the transfer started, or < 0 when the agent was answered locally (c may be freed). */
static int start_transfer(struct gw_conn *c, const struct sk_gw_req *req, const struct sk_api *api,
			   const char *rest, size_t rest_len, const char *secret, size_t slen, bool drop_auth)
{
	struct sk_gateway *g = c->gw;
	/* First, since even the header list is built with libcurl's functions. */
	if (gw_curl_ready(g) < 0) {
		respond_local(c, 502, "cannot initialise the HTTP client", "curl_setup", 0);
		return -EIO;
	}
	struct hdr_acc acc = { .curl = &g->curl };
	if (sk_gw_filter_request_headers(req, api->header_name, drop_auth, add_hdr, &acc) < 0)
		goto oom;
	/* Headers curl would add on its own that the agent did not ask for. */
	if (!(acc.list = g->curl.slist_append(acc.list, "Expect:")))
		goto oom;
	bool has_accept = false;
	for (size_t i = 0; i < req->n_h; i++)
		has_accept |= name_is(req->h[i].name, req->h[i].name_len, "accept");
	if (!has_accept && !(acc.list = g->curl.slist_append(acc.list, "Accept:")))
		goto oom;
	char *sline = NULL;
	if (asprintf(&sline, "%s: %.*s", api->header_name, (int)slen, secret) < 0)
		goto oom;
	struct curl_slist *s = g->curl.slist_append(acc.list, sline);
	wipe_free(sline, strlen(sline));
	if (!s)
		goto oom;
	acc.list = s;
	c->hdrs = acc.list;
	acc.list = NULL;
	/* Whatever its length, the key is masked if the upstream echoes it: no redactor, no transfer. */
	if (!(c->secret_copy = malloc(slen + 1)))
		goto oom;
	memcpy(c->secret_copy, secret, slen);
	c->secret_copy[slen] = 0;
	if (sk_gw_redact_init(&c->redact, c->secret_copy, slen) < 0)
		goto oom;

	char *url = NULL;
	if (asprintf(&url, "%s%.*s", api->upstream, (int)rest_len, rest) < 0)
		goto oom;
	CURL *e = g->curl.easy_init();
	if (!e) {
		free(url);
		goto oom;
	}
	c->easy = e;
	CURLcode rc = CURLE_OK;
#define SETOPT(o, v) do { if (rc == CURLE_OK) rc = g->curl.easy_setopt(e, o, v); } while (0)
	SETOPT(CURLOPT_URL, url);
	SETOPT(CURLOPT_PRIVATE, c);
	SETOPT(CURLOPT_HTTPHEADER, c->hdrs);
	/* Only https, never a redirect, never a proxy from the environment (it would see the key), never
	 * .netrc or cookies: the upstream in the policy is the only place the key goes. */
	SETOPT(CURLOPT_PROTOCOLS_STR, "https");
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_PROXY, "");
	SETOPT(CURLOPT_NOPROXY, "*");
	SETOPT(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	/* TLS verification is not configurable: a gateway that skipped it would hand keys to anyone on path. */
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (api->ca_file)
		SETOPT(CURLOPT_CAINFO, api->ca_file);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)g->lim.connect_timeout_ms);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)g->lim.total_timeout_ms);
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(CURLOPT_LOW_SPEED_TIME, (long)((g->lim.idle_timeout_ms + 999) / 1000));
	SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(CURLOPT_HEADERDATA, c);
	SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(CURLOPT_WRITEDATA, c);
	SETOPT(CURLOPT_HTTP_TRANSFER_DECODING, 1L);
	SETOPT(CURLOPT_TCP_NODELAY, 1L);
	bool has_body = req->chunked || req->content_length >= 0;
	if (!strcmp(req->method, "HEAD")) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else {
		if (has_body) {
			SETOPT(CURLOPT_UPLOAD, 1L);
			SETOPT(CURLOPT_READFUNCTION, read_cb);
			SETOPT(CURLOPT_READDATA, c);
			SETOPT(CURLOPT_INFILESIZE_LARGE, (curl_off_t)(req->chunked ? -1 : req->content_length));
		}
		if (strcmp(req->method, "GET") != 0 || has_body)
			SETOPT(CURLOPT_CUSTOMREQUEST, req->method);
	}
#undef SETOPT
	free(url);
	if (rc != CURLE_OK) {
		respond_local(c, 502, g->curl.easy_strerror(rc), "curl_setup", 0);
		return -EIO;
	}
	c->body_chunked = req->chunked;
	c->body_left = req->chunked ? 0 : req->content_length > 0 ? req->content_length : 0;
	c->body_done = !has_body || (!req->chunked && req->content_length == 0);
	memset(&c->chunk, 0, sizeof(c->chunk));
	c->st = GW_FORWARD;
	sk_timer_cancel(g->sc->loop, &c->timer);
	if (g->curl.multi_add_handle(g->multi, e) != CURLM_OK) {
		respond_local(c, 502, "cannot start the upstream transfer", "curl_setup", 0);
		return -EIO;
	}
	c->forwarded = true;
	set_interest(c);
	return 0;
oom:
	if (acc.list)
		g->curl.slist_free_all(acc.list);
	respond_local(c, 500, "out of memory", "internal_error", 0);
	return -ENOMEM;
}

/* Judges a complete request head and either answers it or starts the transfer. Returns 1 when the head
 * is still incomplete (c untouched), 0 otherwise (c may have been freed). */
static int process_head(struct gw_conn *c)
{
	struct sk_gateway *g = c->gw;
	struct sk_gw_req req;
	int hl = sk_gw_parse_head((const char *)c->in + c->in_off, c->in_len - c->in_off, &req);
	if (hl == 0) {
		if (c->in_off && c->in_len == GW_IN_CAP) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		return 1;
	}
	c->t0_ms = sk_monotonic_ms();
	c->audited = false;
	if (req.method[0])
		snprintf(c->method, sizeof(c->method), "%s", req.method);
	if (hl < 0) {
		static const struct { int st; const char *msg, *why; } m[] = {
			{ 400, "malformed request", "malformed" },
			{ 414, "request target too long", "target_too_long" },
			{ 417, "unsupported expectation", "bad_expect" },
			{ 431, "request head too large", "head_too_large" },
			{ 501, "unsupported transfer coding", "bad_transfer_encoding" },
			{ 505, "HTTP/1.x only", "bad_version" },
		};
		for (size_t i = 0; i < SK_ARRAY_SIZE(m); i++)
			if (m[i].st == -hl) {
				respond_local(c, m[i].st, m[i].msg, m[i].why, 0);
				return 0;
			}
		respond_local(c, 400, "malformed request", "malformed", 0);
		return 0;
	}
	const char *rest;
	size_t rest_len;
	int rr = sk_gw_route(req.target, req.target_len, c->api, &rest, &rest_len);
	if (rr == 0)
		sk_gw_audit_path(rest, rest_len, c->path, sizeof(c->path));
	else
		snprintf(c->path, sizeof(c->path), "-");
	c->keep_alive = req.keep_alive;
	if (rr == -EINVAL) {
		c->api[0] = 0;
		respond_local(c, 400, "request target must be /<api>/<path>", "bad_target", 0);
		return 0;
	}
	const struct sk_api *api = rr == 0 ? find_api(g->sc->policy, c->api) : NULL;
	if (!api) {
		if (rr != 0)
			c->api[0] = 0;
		respond_local(c, 404, "unknown api", "unknown_api", 0);
		return 0;
	}
	/* rest borrows the agent's buffer, which has no NUL: memchr, never strcspn. */
	const char *qm = memchr(rest, '?', rest_len);
	size_t plen = qm ? (size_t)(qm - rest) : rest_len;
	if (sk_gw_check_path(rest, plen) < 0) {
		respond_local(c, 400, "path not allowed (dot segments, ';', encoded '.', '/', '\\' or '%', "
			      "non-shortest UTF-8, control bytes or bad escapes)", "bad_path", 0);
		return 0;
	}
	struct gw_api_state *as = api_state(g, api->name);
	if (!as) {
		respond_local(c, 500, "out of memory", "internal_error", 0);
		return 0;
	}
	/* TRACE would echo the injected key back; CONNECT would turn the gateway into a tunnel. */
	if (!strcmp(req.method, "TRACE") || !strcmp(req.method, "CONNECT")) {
		respond_local(c, 405, "method not supported by the gateway", "method", 0);
		return 0;
	}
	bool drop_auth = false;
	if (api->caller_token_file) {
		const char *want = NULL, *got = NULL;
		size_t wl = 0, gl = 0;
		bool via_auth = false;
		struct sk_err err = { 0 };
		if (file_get(&as->token, api->caller_token_file, &want, &wl, &err) < 0) {
			sk_log(SK_LOG_ERROR, "gateway: api %s: caller token: %s", api->name, err.msg);
			respond_local(c, 502, "caller token unavailable", "token_unreadable", 0);
			return 0;
		}
		if (!sk_gw_find_token(&req, &got, &gl, &via_auth) || !sk_gw_token_eq(got, gl, want, wl)) {
			respond_local(c, 401, "missing or wrong caller token", "bad_token", 0);
			return 0;
		}
		drop_auth = via_auth;
	}
	if (!sk_gw_method_allowed(api, req.method)) {
		respond_local(c, 403, "method not allowed for this api", "method", 0);
		return 0;
	}
	if (!sk_gw_path_allowed(api, rest, plen)) {
		respond_local(c, 403, "path not allowed for this api", "path_prefix", 0);
		return 0;
	}
	uint32_t retry = 0;
	if (!sk_gw_bucket_take(&as->bucket, api->rate, api->burst, sk_monotonic_ms(), &retry)) {
		respond_local(c, 429, "rate limit", "rate_limit", retry);
		return 0;
	}
	const char *secret = NULL;
	size_t slen = 0;
	struct sk_err err = { 0 };
	if (file_get(&as->secret, api->value_file, &secret, &slen, &err) < 0) {
		sk_log(SK_LOG_ERROR, "gateway: api %s: secret: %s", api->name, err.msg);
		respond_local(c, 502, "api secret unavailable", "secret_unreadable", 0);
		return 0;
	}
	if (req.expect_continue && (req.chunked || req.content_length > 0))
		(void)buf_put(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	/* The head is consumed; body bytes (if any) stay in c->in for read_cb. */
	c->in_off += (size_t)hl;
	if (start_transfer(c, &req, api, rest, rest_len, secret, slen, drop_auth) < 0)
		return 0;
	if (c->out.len > c->out_off) {
		(void)flush_out(c);   /* the 100 Continue; a failure shows as client_err in the next round */
		set_interest(c);
	}
	return 0;
}

static void conn_read(struct gw_conn *c)
{
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	if (c->in_len == GW_IN_CAP && c->in_off) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	while (c->in_len < GW_IN_CAP) {
		ssize_t r = recv(c->io.fd, c->in + c->in_len, GW_IN_CAP - c->in_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r < 0) {
			c->client_err = true;
			return;
		}
		if (r == 0) {
			c->client_eof = true;
			return;
		}
		c->in_len += (size_t)r;
	}
}

static void conn_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct gw_conn *c = io->ctx;
	struct sk_gateway *g = c->gw;
	if (events & (EPOLLERR | EPOLLHUP))
		c->client_err = true;
	if (!c->client_err && (events & EPOLLOUT)) {
		(void)flush_out(c);
		if (!c->client_err && c->out.len == c->out_off) {
			if (c->st == GW_FLUSH) {
				request_finished(c);
				return;
			}
			if (c->st == GW_LOCAL) {
				shutdown(c->io.fd, SHUT_WR);
				c->st = GW_LINGER;
				c->in_off = c->in_len = 0;
				(void)sk_timer_arm(g->sc->loop, &c->timer, GW_LINGER_MS);
			}
		}
	}
	if (!c->client_err && (events & EPOLLIN)) {
		if (c->st == GW_LINGER) {
			char sink[4096];
			ssize_t r;
			while ((r = recv(c->io.fd, sink, sizeof(sink), 0)) > 0)
				c->lingered += (size_t)r;
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) || c->lingered > GW_LINGER_DRAIN)
				conn_free(c);
			return;
		}
		conn_read(c);
	}
	if (c->client_err) {
		if (c->st == GW_FORWARD || c->st == GW_FLUSH)
			req_end(c, c->status ? c->status : 499, "client_gone");
		conn_free(c);
		return;
	}
	switch (c->st) {
	case GW_HEAD:
		if (c->in_len > c->in_off && process_head(c) == 0)
			return;
		if (c->client_eof) {
			conn_free(c);   /* nothing (or half a head) and gone: no request to answer or audit */
			return;
		}
		set_interest(c);
		return;
	case GW_FORWARD: {
		bool unpause = false;
		if (c->send_paused && (c->in_len > c->in_off || c->client_eof)) {
			c->send_paused = false;
			unpause = true;
		}
		if (c->recv_paused && c->out.len - c->out_off < GW_OUT_LOW) {
			c->recv_paused = false;
			unpause = true;
		}
		if (unpause) {
			int bits = (c->send_paused ? CURLPAUSE_SEND : 0) | (c->recv_paused ? CURLPAUSE_RECV : 0);
			g->curl.easy_pause(c->easy, bits);
			if (c->client_err) {
				req_end(c, c->status ? c->status : 499, "client_gone");
				conn_free(c);
				return;
			}
		}
		set_interest(c);
		check_multi(g);   /* may free c */
		return;
	}
	default:
		set_interest(c);
		return;
	}
}

static void conn_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct gw_conn *c = t->ctx;
	if (c->st == GW_HEAD && c->in_len > c->in_off) {
		respond_local(c, 408, "request head not received in time", "head_timeout", 0);
		return;
	}
	conn_free(c);   /* idle keep-alive, or a LOCAL/LINGER agent that does not read */
}

/* ---- listeners and life cycle --------------------------------------------------------------------------- */

static void gw_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *peer)
{
	(void)peer;
	struct sk_gateway *g = ls->ctx;
	struct sk_loop *l = g->sc->loop;
	if (g->n_conns >= g->lim.max_conns) {
		close(fd);
		return;
	}
	struct gw_conn *c = calloc(1, sizeof(*c));
	uint8_t *in = malloc(GW_IN_CAP);
	if (!c || !in) {
		free(c);
		free(in);
		close(fd);
		return;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->gw = g;
	c->in = in;
	c->st = GW_HEAD;
	c->events = EPOLLIN;
	c->t0_ms = sk_monotonic_ms();
	sk_io_init(&c->io, fd, conn_io, c);
	sk_timer_init(&c->timer, conn_timer, c);
	if (sk_loop_add(l, &c->io, EPOLLIN, NULL) < 0) {
		free(in);
		free(c);
		close(fd);
		return;
	}
	(void)sk_timer_arm(l, &c->timer, g->lim.head_timeout_ms);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->n_conns++;
}

static int listen_on(struct sk_gateway *g, struct sk_listener *ls, int family, uint16_t port, struct sk_err *err)
{
	/* Loopback only: the agent shares the pod's loopback; nothing outside the pod may use the keys. */
	struct sk_addr a = { .family = (uint8_t)family };
	if (family == AF_INET) {
		a.bytes[0] = 127;
		a.bytes[3] = 1;
	} else {
		a.bytes[15] = 1;
	}
	return sk_listener_open(ls, g->sc->loop, &a, port, 1024, "gateway", gw_accept, g, err);
}

int sk_gateway_start(struct sk_sidecar *sc, struct sk_gateway **out, struct sk_err *err)
{
	struct sk_gateway *g = calloc(1, sizeof(*g));
	if (!g)
		return sk_err_set(err, ENOMEM, "gateway: allocate");
	g->sc = sc;
	g->l4.io.fd = g->l6.io.fd = -1;
	sk_timer_init(&g->curl_timer, curl_timer_fired, g);
	g->lim = sc->api_limits;
	int rc;
	uint16_t port = sc->policy->ports.api;
	if ((rc = listen_on(g, &g->l4, AF_INET, port, err)) < 0)
		goto fail;
	if ((rc = listen_on(g, &g->l6, AF_INET6, port, err)) < 0)
		goto fail;
	*out = g;
	return 0;
fail:
	sk_gateway_free(g);
	return rc;
}

void sk_gateway_stop_accepting(struct sk_gateway *g)
{
	if (!g)
		return;
	sk_listener_close(&g->l4);
	sk_listener_close(&g->l6);
	g->draining = true;
	/* Idle keep-alive connections (waiting for a head, nothing of one read) hold no work: their timer is
	 * brought forward to the next loop turn, where conn_timer closes them, so that what sk_gateway_active
	 * counts from then on is requests in flight. A half-read head may still become a request and is left
	 * to finish (or time out). */
	for (struct gw_conn *c = g->conns; c; c = c->next)
		if (c->st == GW_HEAD && c->in_len == c->in_off)
			(void)sk_timer_arm(g->sc->loop, &c->timer, 0);
}

size_t sk_gateway_active(const struct sk_gateway *g)
{
	return g ? g->n_conns : 0;
}

void sk_gateway_free(struct sk_gateway *g)
{
	if (!g)
		return;
	sk_gateway_stop_accepting(g);
	for (struct gw_conn *c = g->conns, *next; c; c = next) {
		next = c->next;
		if (c->st == GW_FORWARD || c->st == GW_FLUSH)
			req_end(c, c->status ? c->status : 499, "shutdown");
		conn_free(c);
	}
	if (g->multi)
		g->curl.multi_cleanup(g->multi);
	sk_timer_cancel(g->sc->loop, &g->curl_timer);
	while (g->apis) {
		struct gw_api_state *s = g->apis;
		g->apis = s->next;
		file_clear(&s->secret);
		file_clear(&s->token);
		free(s);
	}
	if (g->curl_inited)
		g->curl.global_cleanup();
	free(g);
}
