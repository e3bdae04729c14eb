/* injector/http.c — see http.h. The syntax (request line, field lines, CRLF) is common/http1.h's, the
 * tokenizer every HTTP/1 reader shares; what the injector accepts of it (limits, framing) is this file's. */
#include <stdint.h>
#include <string.h>

#include "common/http1.h"
#include "injector/http.h"

const char *sk_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

/* Trims optional whitespace around [*s, *e). */
static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

/* What one field line (its syntax checked by sk_http1_field_line) means to the injector. */
static int header(const struct sk_http1_field *f, struct sk_http_req *req, bool *seen_len, bool *conn_close,
		  bool *conn_keep)
{
	const char *v = f->value, *ve = f->value + f->value_len;
	if (sk_http1_ieq(f->name, f->name_len, "transfer-encoding"))
		return -501;
	if (sk_http1_ieq(f->name, f->name_len, "content-length")) {
		if (*seen_len || v == ve || ve - v > 12)
			return -400;
		size_t n = 0;
		for (const char *p = v; p < ve; p++) {
			if (*p < '0' || *p > '9')
				return -400;
			n = n * 10 + (size_t)(*p - '0');
		}
		*seen_len = true;
		req->content_length = n;
	} else if (sk_http1_ieq(f->name, f->name_len, "content-type")) {
		const char *semi = memchr(v, ';', (size_t)(ve - v));
		const char *te = semi ? semi : ve;
		trim(&v, &te);
		req->json = sk_http1_ieq(v, (size_t)(te - v), "application/json");
	} else if (sk_http1_ieq(f->name, f->name_len, "connection")) {
		/* a list of tokens: close and keep-alive are the ones that matter */
		const char *p = v;
		while (p < ve) {
			const char *comma = memchr(p, ',', (size_t)(ve - p));
			const char *te = comma ? comma : ve, *ts = p;
			trim(&ts, &te);
			*conn_close |= sk_http1_ieq(ts, (size_t)(te - ts), "close");
			*conn_keep |= sk_http1_ieq(ts, (size_t)(te - ts), "keep-alive");
			p = comma ? comma + 1 : ve;
		}
	}
	return 0;
}

int sk_http_parse(const char *buf, size_t len, struct sk_http_req *req)
{
	const char *end = NULL;
	size_t scan = len < SK_HTTP_MAX_HEAD ? len : SK_HTTP_MAX_HEAD;
	for (size_t i = 0; i + 3 < scan && !end; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
			end = buf + i + 4;
	/* a bare LF or a NUL before the end is refused early, so a client cannot hold a worker with junk */
	for (size_t i = 0; i < (end ? (size_t)(end - buf) : scan); i++)
		if (buf[i] == '\0' || (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')))
			return -400;
	if (!end)
		return len >= SK_HTTP_MAX_HEAD ? -431 : 0;

	/* The whole head is here: the tokenizer's NEED_MORE cannot happen, every other result is final. */
	memset(req, 0, sizeof(*req));
	const uint8_t *p = (const uint8_t *)buf;
	const size_t n = (size_t)(end - buf);
	struct sk_http1_request_line rl;
	enum sk_http1_result r = sk_http1_request_line(p, n, SK_HTTP_MAX_HEAD, &rl);
	/* a bad version is answered after the target's own refusals (400, 414): the line is read as far as
	 * the tokenizer got, method and target included */
	if ((r != SK_HTTP1_OK && r != SK_HTTP1_BAD_VERSION) || rl.target[0] != '/')
		return -400;
	req->method = rl.method_len == 3 && !memcmp(buf, "GET", 3)    ? SK_HTTP_GET
		    : rl.method_len == 4 && !memcmp(buf, "HEAD", 4) ? SK_HTTP_HEAD
		    : rl.method_len == 4 && !memcmp(buf, "POST", 4) ? SK_HTTP_POST
								    : SK_HTTP_OTHER;
	const char *q = memchr(rl.target, '?', rl.target_len);
	size_t plen = q ? (size_t)(q - rl.target) : rl.target_len;
	if (plen >= sizeof(req->path))
		return -414;
	memcpy(req->path, rl.target, plen);
	req->path[plen] = '\0';
	if (r == SK_HTTP1_BAD_VERSION)
		return -505;

	bool seen_len = false, conn_close = false, conn_keep = false;
	unsigned count = 0;
	for (size_t off = rl.len;;) {
		if (p[off] == ' ' || p[off] == '\t')
			return -400;   /* obsolete line folding */
		struct sk_http1_field f;
		r = sk_http1_field_line(p + off, n - off, &f);
		if (r == SK_HTTP1_OK && f.end)
			break;
		if (++count > SK_HTTP_MAX_HEADERS)
			return -431;
		if (r != SK_HTTP1_OK)
			return -400;
		int hr = header(&f, req, &seen_len, &conn_close, &conn_keep);
		if (hr < 0)
			return hr;
		off += f.len;
	}
	req->keep_alive = rl.minor == 1 ? !conn_close : conn_keep && !conn_close;
	req->head_len = n;
	return 1;
}
