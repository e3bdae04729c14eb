/* common/http1.c — see http1.h. */
#include "common/http1.h"

#include <string.h>

bool sk_http1_is_tchar(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int sk_http1_hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool sk_http1_ieq(const char *p, size_t n, const char *lower_lit)
{
	if (strlen(lower_lit) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lower_lit[i])
			return false;
	}
	return true;
}

enum sk_http1_result sk_http1_request_line(const uint8_t *p, size_t n, size_t method_max,
					   struct sk_http1_request_line *rl)
{
	static const char version[] = "HTTP/";
	size_t i = 0, j, k;

	memset(rl, 0, sizeof(*rl));
	if (n == 0)
		return SK_HTTP1_NEED_MORE;
	while (i < n && i <= method_max && sk_http1_is_tchar(p[i]))
		i++;
	if (i == 0)
		/* Leading empty lines are tolerated by some servers (RFC 9112 §2.2) but not by us. */
		return (p[0] == '\r' || p[0] == '\n') ? SK_HTTP1_MALFORMED : SK_HTTP1_NOT_HTTP;
	/* A longer method is still a token a server may accept (and route by Host): not "another
	 * protocol", so that a caller that lets NOT_HTTP through as plain TCP cannot be steered there. */
	if (i > method_max)
		return SK_HTTP1_MALFORMED;
	if (i == n)
		return SK_HTTP1_NEED_MORE;
	/* Other whitespace after a method is a request line with a separator trick, not another protocol. */
	if (p[i] == '\t' || p[i] == '\r' || p[i] == '\n' || p[i] == '\v' || p[i] == '\f')
		return SK_HTTP1_MALFORMED;
	if (p[i] != ' ')
		return SK_HTTP1_NOT_HTTP;
	rl->method_len = i;

	/* request-target: visible ASCII only; a second SP ends it, so "GET  /" has an empty target. */
	for (j = i + 1; j < n && p[j] > 0x20 && p[j] < 0x7f; j++)
		;
	if (j == n)
		return SK_HTTP1_NEED_MORE;
	if (j == i + 1 || p[j] != ' ')
		return SK_HTTP1_MALFORMED;
	rl->target = (const char *)p + i + 1;
	rl->target_len = j - i - 1;

	for (k = 0; k < sizeof(version) - 1; k++) {
		if (j + 1 + k == n)
			return SK_HTTP1_NEED_MORE;
		if (p[j + 1 + k] != (uint8_t)version[k])
			return SK_HTTP1_MALFORMED;
	}
	/* then exactly "1.0" or "1.1" and CRLF; any other version is BAD_VERSION at its first wrong byte
	 * (a server answers 505 rather than 400), a bare LF or CR MALFORMED */
	k = j + 1 + k;
	static const char one_dot[] = "1.";
	for (size_t d = 0; d < 2; d++, k++) {
		if (k == n)
			return SK_HTTP1_NEED_MORE;
		if (p[k] != (uint8_t)one_dot[d])
			return SK_HTTP1_BAD_VERSION;
	}
	if (k == n)
		return SK_HTTP1_NEED_MORE;
	if (p[k] != '0' && p[k] != '1')
		return SK_HTTP1_BAD_VERSION;
	k++;
	if (k == n)
		return SK_HTTP1_NEED_MORE;
	if (p[k] == '\n')
		return SK_HTTP1_MALFORMED;                   /* bare LF */
	if (p[k] != '\r')
		return SK_HTTP1_BAD_VERSION;                 /* "HTTP/1.10", "HTTP/1.1x" */
	if (k + 1 == n)
		return SK_HTTP1_NEED_MORE;
	if (p[k + 1] != '\n')
		return SK_HTTP1_MALFORMED;                   /* bare CR */
	rl->minor = (uint8_t)(p[k - 1] - '0');
	rl->len = k + 2;
	return SK_HTTP1_OK;
}

enum sk_http1_result sk_http1_field_line(const uint8_t *p, size_t n, struct sk_http1_field *f)
{
	size_t i = 0, v, e;

	memset(f, 0, sizeof(*f));
	if (n == 0)
		return SK_HTTP1_NEED_MORE;
	if (p[0] == '\r') {
		if (n == 1)
			return SK_HTTP1_NEED_MORE;
		if (p[1] != '\n')
			return SK_HTTP1_MALFORMED;
		f->end = true;
		f->len = 2;
		return SK_HTTP1_OK;
	}
	/* obs-fold (a continuation line) and whitespace after the start line: RFC 9112 §5.2 lets a server
	 * unfold, an upstream may not; either way the two could see different values. */
	while (i < n && sk_http1_is_tchar(p[i]))
		i++;
	if (i == n)
		return SK_HTTP1_NEED_MORE;
	if (i == 0 || p[i] != ':')   /* also "Host : x", "Host\t:", a bare LF, a folded line */
		return SK_HTTP1_MALFORMED;
	f->name = (const char *)p;
	f->name_len = i;

	for (v = i + 1; v < n && (p[v] == ' ' || p[v] == '\t'); v++)
		;
	for (e = v; e < n; e++) {
		uint8_t c = p[e];
		if (c == '\r' || c == '\n')
			break;
		if ((c < 0x20 && c != '\t') || c == 0x7f)   /* NUL and other CTLs */
			return SK_HTTP1_MALFORMED;
	}
	if (e == n)
		return SK_HTTP1_NEED_MORE;
	if (p[e] == '\n')
		return SK_HTTP1_MALFORMED;                   /* bare LF */
	if (e + 1 == n)
		return SK_HTTP1_NEED_MORE;
	if (p[e + 1] != '\n')
		return SK_HTTP1_MALFORMED;                   /* bare CR */
	f->len = e + 2;
	while (e > v && (p[e - 1] == ' ' || p[e - 1] == '\t'))
		e--;
	f->value = (const char *)p + v;
	f->value_len = e - v;
	return SK_HTTP1_OK;
}
