/* sidecar/gateway/http.c — request-head parsing, routing, header filters, chunked decoding, response text;
 * see gw_http.h. */
#include "sidecar/gateway/http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "sidecar/core/audit.h"
#include "common/http1.h"

bool sk_gw_name_is(const char *n, size_t len, const char *lit)
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

enum sk_gw_head_verdict sk_gw_parse_head(const char *buf, size_t len, struct sk_gw_req *req)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	const uint8_t *p = (const uint8_t *)buf;
	size_t scan = len < SK_GW_HEAD_MAX ? len : SK_GW_HEAD_MAX;

	/* request line: METHOD SP target SP HTTP/1.x CRLF (the sidecar's one tokenizer, http1.h), judged as
	 * soon as it is visibly wrong; a long target is 414, not 431 */
	struct sk_http1_request_line rl;
	switch (sk_http1_request_line(p, scan, sizeof(req->method) - 1, &rl)) {
	case SK_HTTP1_OK:
		break;
	case SK_HTTP1_NEED_MORE:
		if (len > SK_GW_TARGET_MAX + 64)
			return SK_GW_HEAD_TARGET_TOO_LONG;
		return len >= SK_GW_HEAD_MAX ? SK_GW_HEAD_TOO_LARGE : SK_GW_HEAD_NEED_MORE;
	case SK_HTTP1_BAD_VERSION:
		return SK_GW_HEAD_BAD_VERSION;
	default:
		return SK_GW_HEAD_MALFORMED;
	}
	memcpy(req->method, buf, rl.method_len);
	req->method[rl.method_len] = 0;
	req->target = rl.target;
	req->target_len = rl.target_len;
	if (req->target_len > SK_GW_TARGET_MAX)
		return SK_GW_HEAD_TARGET_TOO_LONG;
	req->minor = rl.minor;

	/* field lines */
	bool close = false, te_seen = false;
	size_t pos = rl.len;
	for (;;) {
		struct sk_http1_field f;
		enum sk_http1_result r = sk_http1_field_line(p + pos, scan - pos, &f);
		if (r == SK_HTTP1_NEED_MORE)
			return len >= SK_GW_HEAD_MAX ? SK_GW_HEAD_TOO_LARGE : SK_GW_HEAD_NEED_MORE;
		if (r != SK_HTTP1_OK)
			return SK_GW_HEAD_MALFORMED;                 /* bare CR or LF, obs-fold, space before ':', controls */
		pos += f.len;
		if (f.end)
			break;
		if (req->n_h == SK_GW_MAX_HEADERS)
			return SK_GW_HEAD_TOO_LARGE;
		struct sk_gw_hdr *h = &req->h[req->n_h++];
		h->name = f.name;
		h->name_len = f.name_len;
		h->value = f.value;
		h->value_len = f.value_len;
		if (sk_gw_name_is(h->name, h->name_len, "content-length")) {
			int64_t cl;
			if (parse_u63(h->value, h->value_len, &cl) < 0)
				return SK_GW_HEAD_MALFORMED;
			if (req->content_length >= 0 && req->content_length != cl)
				return SK_GW_HEAD_MALFORMED;
			req->content_length = cl;
		} else if (sk_gw_name_is(h->name, h->name_len, "transfer-encoding")) {
			/* Only "chunked", once: anything else is a smuggling vector or a coding we do not speak. */
			if (te_seen || !(h->value_len == 7 && strncasecmp(h->value, "chunked", 7) == 0))
				return SK_GW_HEAD_BAD_CODING;
			te_seen = true;
		} else if (sk_gw_name_is(h->name, h->name_len, "connection")) {
			for (size_t i = 0; i + 5 <= h->value_len; i++)
				if (strncasecmp(h->value + i, "close", 5) == 0 &&
				    (i == 0 || h->value[i - 1] == ',' || h->value[i - 1] == ' ') &&
				    (i + 5 == h->value_len || h->value[i + 5] == ',' || h->value[i + 5] == ' '))
					close = true;
		} else if (sk_gw_name_is(h->name, h->name_len, "expect")) {
			if (!(h->value_len == 12 && strncasecmp(h->value, "100-continue", 12) == 0))
				return SK_GW_HEAD_BAD_EXPECT;
			req->expect_continue = true;
		}
	}
	req->head_len = pos;
	if (te_seen && (req->content_length >= 0 || req->minor == 0))
		return SK_GW_HEAD_MALFORMED;
	req->chunked = te_seen;
	req->keep_alive = req->minor == 1 && !close;
	return SK_GW_HEAD_COMPLETE;
}

const struct sk_gw_answer *sk_gw_head_answer(enum sk_gw_head_verdict v)
{
	static const struct sk_gw_answer a[] = {
		[SK_GW_HEAD_MALFORMED] = { 400, "malformed request", "malformed" },
		[SK_GW_HEAD_TARGET_TOO_LONG] = { 414, "request target too long", "target_too_long" },
		[SK_GW_HEAD_BAD_EXPECT] = { 417, "unsupported expectation", "bad_expect" },
		[SK_GW_HEAD_TOO_LARGE] = { 431, "request head too large", "head_too_large" },
		[SK_GW_HEAD_BAD_CODING] = { 501, "unsupported transfer coding", "bad_transfer_encoding" },
		[SK_GW_HEAD_BAD_VERSION] = { 505, "HTTP/1.x only", "bad_version" },
	};
	if ((size_t)v >= SK_ARRAY_SIZE(a) || a[v].status == 0)
		return NULL;
	return &a[v];
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


bool sk_gw_hop_by_hop(const char *name, size_t len, const char *connection)
{
	static const char *const hop[] = { "connection", "keep-alive", "te", "trailer", "transfer-encoding",
					   "upgrade", "proxy-connection" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(hop); i++)
		if (sk_gw_name_is(name, len, hop[i]))
			return true;
	if (len >= 6 && strncasecmp(name, "proxy-", 6) == 0)
		return true;   /* Proxy-Authorization, Proxy-Authenticate, ...: meant for a proxy, not the API */
	return list_has(connection, name, len);
}

/* Request headers that ask the upstream for the body in another form than whole and identity-coded (see
 * sk_gw_filter_request_headers). Accept-Encoding is replaced by the gateway's own "identity". */
static bool changes_body_form(const char *name, size_t len)
{
	static const char *const h[] = { "accept-encoding", "range", "if-range", "a-im", "want-digest",
					 "want-content-digest", "want-repr-digest" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(h); i++)
		if (sk_gw_name_is(name, len, h[i]))
			return true;
	return false;
}

/* Appends a Connection value to the list conn[0..*cl) (cap bytes), ','-terminated; a value that does not fit
 * is left out (its tokens then stay unnamed: hop-by-hop headers are dropped by their fixed names anyway). */
static void connection_add(char *conn, size_t cap, size_t *cl, const char *v, size_t vl)
{
	if (*cl + vl + 2 >= cap)
		return;
	memcpy(conn + *cl, v, vl);
	*cl += vl;
	conn[(*cl)++] = ',';
	conn[*cl] = 0;
}

int sk_gw_filter_request_headers(const struct sk_gw_req *req, const char *secret_header, bool drop_auth,
				 sk_gw_emit_fn emit, void *arg)
{
	char conn[1024];
	size_t cl = 0;
	conn[0] = 0;
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (sk_gw_name_is(h->name, h->name_len, "connection"))
			connection_add(conn, sizeof(conn), &cl, h->value, h->value_len);
	}
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (sk_gw_hop_by_hop(h->name, h->name_len, conn))
			continue;
		if (sk_gw_name_is(h->name, h->name_len, "host") || sk_gw_name_is(h->name, h->name_len, "content-length") ||
		    sk_gw_name_is(h->name, h->name_len, "expect") || sk_gw_name_is(h->name, h->name_len, "x-stockade-token"))
			continue;
		/* The agent must not choose (or see by echo) the injected credential. */
		if (secret_header && sk_gw_name_is(h->name, h->name_len, secret_header))
			continue;
		if (drop_auth && sk_gw_name_is(h->name, h->name_len, "authorization"))
			continue;
		/* The response body must come back in the one form the key redaction searches: identity, whole. */
		if (changes_body_form(h->name, h->name_len))
			continue;
		int rc = emit(arg, h->name, h->name_len, h->value, h->value_len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sk_gw_chunked_decode(struct sk_gw_chunked *c, const uint8_t *in, size_t in_len, size_t *in_used,
			 uint8_t *out, size_t out_cap, size_t *out_made)
{
	size_t i = 0, o = 0;
	while (i < in_len && c->st != SK_GW_CH_DONE) {
		uint8_t ch = in[i];
		switch (c->st) {
		case SK_GW_CH_SIZE: {
			int h = sk_http1_hexval(ch);
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

const char *sk_gw_reason_phrase(int st)
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

void sk_gw_error_response(struct sk_strbuf *out, int status, const char *msg, uint32_t retry_after, bool head_only)
{
	struct sk_strbuf body = { 0 };
	char esc[SK_AUDIT_JSON_STR_MAX];
	(void)sk_strbuf_put(&body, "{\"error\":", 9);
	size_t elen = sk_audit_json_str(esc, sizeof(esc), msg);
	(void)sk_strbuf_put(&body, esc, elen);
	(void)sk_strbuf_put(&body, "}\n", 2);
	(void)sk_strbuf_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			       "Connection: close\r\nCache-Control: no-store\r\n", status, sk_gw_reason_phrase(status),
			       body.len);
	if (status == 429)
		(void)sk_strbuf_printf(out, "Retry-After: %u\r\n", retry_after);
	if (status == 401)
		(void)sk_strbuf_printf(out, "WWW-Authenticate: Bearer realm=\"stockade\"\r\n");
	(void)sk_strbuf_put(out, "\r\n", 2);
	if (body.p && !head_only)
		(void)sk_strbuf_put(out, body.p, body.len);
	sk_strbuf_free(&body);
}

/* A header line of the upstream's head (as libcurl hands it over, status line and CRLFs included). */
struct up_hdr {
	const char *line;      /* without its line end */
	size_t line_len;
	size_t name_len;       /* line[0..name_len) up to the first ':' (0: an empty name) */
	const char *value;     /* after the OWS that follows ':', up to the line end (each reader trims its end) */
	size_t value_len;
};

/* The one walk over up[0..len): steps *off to the next line that has a ':' (lines without one, the status
 * line among them, are passed over) and fills h; false at the end. */
static bool next_up_hdr(const char *up, size_t len, size_t *off, struct up_hdr *h)
{
	while (*off < len) {
		const char *line = up + *off;
		const char *nl = memchr(line, '\n', len - *off);
		size_t ll = nl ? (size_t)(nl - line) + 1 : len - *off;
		*off += ll;
		const char *colon = memchr(line, ':', ll);
		if (!colon)
			continue;
		while (ll && (line[ll - 1] == '\r' || line[ll - 1] == '\n'))
			ll--;
		h->line = line;
		h->line_len = ll;
		h->name_len = (size_t)(colon - line);
		const char *v = colon + 1;
		size_t vl = (size_t)(line + ll - v);
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		h->value = v;
		h->value_len = vl;
		return true;
	}
	return false;
}

/* HEAD, 1xx, 204, 304: no body bytes go to the agent. */
static bool response_has_no_body(int status, bool head_req)
{
	return head_req || status == 204 || status == 304 || status < 200;
}

size_t sk_gw_response_head(struct sk_strbuf *out, const char *up, size_t len, int status, bool head_req,
			   bool keep_alive, bool draining, struct sk_gw_resp_framing *f)
{
	char connection[1024] = "";
	size_t cl = 0;
	bool has_cl = false, has_te = false;
	/* First pass: what Connection names, and the framing the upstream used. */
	struct up_hdr h;
	for (size_t off = 0; next_up_hdr(up, len, &off, &h);) {
		if (sk_gw_name_is(h.line, h.name_len, "connection")) {
			size_t vl = h.value_len;
			while (vl && (h.value[vl - 1] == '\r' || h.value[vl - 1] == '\n' || h.value[vl - 1] == ' '))
				vl--;
			connection_add(connection, sizeof(connection), &cl, h.value, vl);
		}
		else if (sk_gw_name_is(h.line, h.name_len, "content-length"))
			has_cl = true;
		else if (sk_gw_name_is(h.line, h.name_len, "transfer-encoding"))
			has_te = true;
	}
	f->no_body = response_has_no_body(status, head_req);
	bool keep_cl = has_cl && !has_te;
	f->chunked = !f->no_body && !keep_cl && keep_alive;
	/* HTTP/1.0 agent: the body ends when we close. SIGTERM: this response is the connection's last
	 * (framing unchanged). */
	f->close = (!f->no_body && !keep_cl && !f->chunked) || draining;
	(void)sk_strbuf_printf(out, "HTTP/1.1 %d %s\r\n", status, sk_gw_reason_phrase(status));
	size_t head_start = out->len;
	for (size_t off = 0; next_up_hdr(up, len, &off, &h);) {
		if (h.name_len == 0 || sk_gw_hop_by_hop(h.line, h.name_len, connection))
			continue;
		if (sk_gw_name_is(h.line, h.name_len, "content-length") && !keep_cl)
			continue;
		(void)sk_strbuf_put(out, h.line, h.line_len);
		(void)sk_strbuf_put(out, "\r\n", 2);
	}
	if (f->chunked)
		(void)sk_strbuf_printf(out, "Transfer-Encoding: chunked\r\n");
	if (!keep_alive || f->close)
		(void)sk_strbuf_printf(out, "Connection: close\r\n");
	(void)sk_strbuf_put(out, "\r\n", 2);
	return head_start;
}

/* Does the coding list v[0..vl) ("gzip, chunked") name a coding other than the allowed ones? Parameters
 * after ';' are ignored; empty list members are skipped (RFC 9110 §5.6.1). */
static bool codings_other_than(const char *v, size_t vl, const char *ok1, const char *ok2)
{
	size_t i = 0;
	while (i < vl) {
		while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < vl && v[i] != ',' && v[i] != ';')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		while (i < vl && v[i] != ',')
			i++;   /* parameters */
		if (e == s)
			continue;
		if (!sk_gw_name_is(v + s, e - s, ok1) && !(ok2 && sk_gw_name_is(v + s, e - s, ok2)))
			return true;
	}
	return false;
}

const struct sk_gw_answer *sk_gw_response_refusal(const char *up, size_t len, int status, bool head_req)
{
	static const struct sk_gw_answer encoded = { 502, "upstream sent an encoded body", "upstream_encoding" };
	static const struct sk_gw_answer partial = { 502, "upstream sent a partial body", "upstream_partial" };
	if (response_has_no_body(status, head_req))
		return NULL;   /* no body bytes reach the agent; the head alone is redacted as it is */
	if (status == 206 || status == 226)
		return &partial;
	struct up_hdr h;
	for (size_t off = 0; next_up_hdr(up, len, &off, &h);) {
		if (sk_gw_name_is(h.line, h.name_len, "content-encoding") &&
		    codings_other_than(h.value, h.value_len, "identity", NULL))
			return &encoded;
		if (sk_gw_name_is(h.line, h.name_len, "transfer-encoding") &&
		    codings_other_than(h.value, h.value_len, "chunked", "identity"))
			return &encoded;
	}
	return NULL;
}
