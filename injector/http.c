/* injector/http.c — see http.h. */
#include <string.h>
#include <strings.h>

#include "injector/http.h"

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

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

static bool value_is(const char *s, const char *e, const char *want)
{
	return (size_t)(e - s) == strlen(want) && !strncasecmp(s, want, (size_t)(e - s));
}

/* One header line [s, e) (no CRLF). */
static int header(const char *s, const char *e, struct sk_http_req *req, bool *seen_len, bool *conn_close,
		  bool *conn_keep)
{
	const char *colon = memchr(s, ':', (size_t)(e - s));
	if (!colon || colon == s)
		return -400;
	for (const char *p = s; p < colon; p++)
		if (!tchar(*p))
			return -400;   /* also refuses whitespace before the colon (RFC 9112 5.1) */
	const char *v = colon + 1, *ve = e;
	for (const char *p = v; p < ve; p++)
		if ((unsigned char)*p < 0x20 ? *p != '\t' : *p == 0x7f)
			return -400;
	trim(&v, &ve);
	size_t nlen = (size_t)(colon - s);
	if (nlen == 17 && !strncasecmp(s, "transfer-encoding", 17))
		return -501;
	if (nlen == 14 && !strncasecmp(s, "content-length", 14)) {
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
	} else if (nlen == 12 && !strncasecmp(s, "content-type", 12)) {
		const char *semi = memchr(v, ';', (size_t)(ve - v));
		const char *te = semi ? semi : ve;
		trim(&v, &te);
		req->json = value_is(v, te, "application/json");
	} else if (nlen == 10 && !strncasecmp(s, "connection", 10)) {
		/* a list of tokens: close and keep-alive are the ones that matter */
		const char *p = v;
		while (p < ve) {
			const char *comma = memchr(p, ',', (size_t)(ve - p));
			const char *te = comma ? comma : ve, *ts = p;
			trim(&ts, &te);
			*conn_close |= value_is(ts, te, "close");
			*conn_keep |= value_is(ts, te, "keep-alive");
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

	memset(req, 0, sizeof(*req));
	const char *line_end = memmem(buf, (size_t)(end - buf), "\r\n", 2);
	const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp1 || sp1 == buf)
		return -400;
	const char *target = sp1 + 1;
	const char *sp2 = memchr(target, ' ', (size_t)(line_end - target));
	if (!sp2 || sp2 == target || *target != '/')
		return -400;
	for (const char *p = buf; p < sp1; p++)
		if (!tchar(*p))
			return -400;
	for (const char *p = target; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return -400;
	size_t mlen = (size_t)(sp1 - buf);
	req->method = mlen == 3 && !memcmp(buf, "GET", 3)    ? SK_HTTP_GET
		    : mlen == 4 && !memcmp(buf, "HEAD", 4) ? SK_HTTP_HEAD
		    : mlen == 4 && !memcmp(buf, "POST", 4) ? SK_HTTP_POST
							   : SK_HTTP_OTHER;
	const char *q = memchr(target, '?', (size_t)(sp2 - target));
	size_t plen = (size_t)((q ? q : sp2) - target);
	if (plen >= sizeof(req->path))
		return -414;
	memcpy(req->path, target, plen);
	req->path[plen] = '\0';
	const char *ver = sp2 + 1;
	bool v11;
	if ((size_t)(line_end - ver) == 8 && !memcmp(ver, "HTTP/1.1", 8))
		v11 = true;
	else if ((size_t)(line_end - ver) == 8 && !memcmp(ver, "HTTP/1.0", 8))
		v11 = false;
	else
		return (size_t)(line_end - ver) >= 5 && !memcmp(ver, "HTTP/", 5) ? -505 : -400;

	bool seen_len = false, conn_close = false, conn_keep = false;
	unsigned n = 0;
	const char *s = line_end + 2;
	while (s < end - 2) {
		const char *e = memmem(s, (size_t)(end - s), "\r\n", 2);
		if (*s == ' ' || *s == '\t')
			return -400;   /* obsolete line folding */
		if (++n > SK_HTTP_MAX_HEADERS)
			return -431;
		int r = header(s, e, req, &seen_len, &conn_close, &conn_keep);
		if (r < 0)
			return r;
		s = e + 2;
	}
	req->keep_alive = v11 ? !conn_close : conn_keep && !conn_close;
	req->head_len = (size_t)(end - buf);
	return 1;
}
