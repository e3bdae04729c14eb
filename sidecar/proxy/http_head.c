/* sidecar/proxy/http_head.c — the HTTP/1.x request-head parser (see http_head.h).
 *
 * One left-to-right pass over the head, line by line; each line is judged byte by byte as far as it has
 * arrived, so NEED_MORE means "valid so far" and NOT_HTTP / MALFORMED are final. The verdicts that need
 * the whole head (DUP_HOST, BAD_HOST, NO_HOST, HOST_MISMATCH) are given once the blank line is seen.
 *
 * Choices (RFC 9112 lets a server be lenient in places; we are not, because the upstream and we must
 * agree on the host, and "reject" is always safe for a proxy that denies by default):
 *   - NOT_HTTP only when the first bytes cannot start any request line: the first byte is not a token
 *     character (binary data, TLS), or the leading token is followed by a byte that is neither a token
 *     character nor whitespace ("SSH-2.0-x/y", "a:b"); anything else that goes wrong is MALFORMED,
 *     including methods longer than 15 bytes, including versions other than
 *     HTTP/1.0 and HTTP/1.1 (HTTP/0.9, HTTP/1.2, HTTP/2.0 except the h2c preface) and leading CRLFs.
 *   - bare CR, bare LF, obs-fold, whitespace before ':', empty field names, CTLs other than HTAB in
 *     field values: MALFORMED.
 *   - Host: empty (any version), userinfo, a port outside 1..65535 or with leading zeros, an unbracketed
 *     IPv6 address, a bracketed non-IPv6 or zone id, or an IPv4 address in a non-canonical spelling:
 *     BAD_HOST.
 *   - absolute-form: schemes http and https only (any case); its authority wins, and a Host header that
 *     names another host or port (an absent port meaning the scheme's default) is HOST_MISMATCH.
 *
 * Framing fields (Content-Length, Transfer-Encoding, Upgrade, HTTP2-Settings) are only recorded in
 * struct sk_http_head, never judged here, so the verdicts above stay what they were; http_track.c turns
 * them into its fail-closed rules. Recording is strict on purpose: a Content-Length is 1*DIGIT and
 * nothing else (no sign, no list, no spaces inside), Transfer-Encoding counts as chunked only when its
 * whole value is the one coding "chunked", and the names are also matched with '_' for '-' because
 * CGI-style gateways fold both to the same variable ("Content_Length" could frame the body upstream). */
#include "sidecar/proxy/http_head.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "common/http1.h"

#define METHOD_MAX 15
#define H2C_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2C_PREFACE_LEN (sizeof(H2C_PREFACE) - 1)

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* A host as we compare it: a normalised name or an address, and a port (0 = not given). */
struct authority {
	char name[SK_DOMAIN_MAX + 1];
	bool is_ip;
	struct sk_addr ip;
	uint16_t port;
};

/* "1".."65535", digits only, no leading zero. */
static bool parse_port(const char *p, size_t n, uint16_t *port)
{
	unsigned v = 0;

	if (n == 0 || n > 5 || p[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* Digits and dots only: an IPv4 address in some spelling sk_addr_parse refused ("127.1", "010.0.0.1"),
 * which resolvers and HTTP libraries may still read as an address. */
static bool all_numeric(const char *p, size_t n)
{
	bool digit = false;

	for (size_t i = 0; i < n; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			digit = true;
		else if (p[i] != '.')
			return false;
	}
	return digit;
}

/* uri-host [ ":" port ] (RFC 3986 authority without userinfo). Returns false on anything else. */
static bool parse_authority(const char *p, size_t n, bool need_port, struct authority *a)
{
	char tmp[SK_ADDR_STRLEN + 1];
	const char *host, *colon;
	size_t host_len;
	bool wild;
	const char *why;

	memset(a, 0, sizeof(*a));
	/* userinfo is never legitimate in a request and is how "good.com@evil.com" tricks start. */
	if (n == 0 || memchr(p, '@', n))
		return false;
	if (p[0] == '[') {
		const char *close = memchr(p, ']', n);
		if (!close)
			return false;
		host = p + 1;
		host_len = (size_t)(close - host);
		colon = close + 1 < p + n ? close + 1 : NULL;
		if (colon && *colon != ':')
			return false;
		/* Strict RFC 4291 text only; sk_addr_parse refuses zone ids ("%25eth0"). IPvFuture is refused. */
		if (host_len == 0 || host_len >= sizeof(tmp))
			return false;
		memcpy(tmp, host, host_len);
		tmp[host_len] = '\0';
		if (sk_addr_parse(tmp, &a->ip) != 0 || a->ip.family != AF_INET6)
			return false;
		a->is_ip = true;
	} else {
		colon = memchr(p, ':', n);
		host = p;
		host_len = colon ? (size_t)(colon - p) : n;
		/* A second ':' means an unbracketed IPv6 address or garbage. */
		if (colon && memchr(colon + 1, ':', n - host_len - 1))
			return false;
		if (host_len == 0)
			return false;
		if (host_len < sizeof(tmp) && !memchr(host, '\0', host_len)) {
			memcpy(tmp, host, host_len);
			tmp[host_len] = '\0';
			if (sk_addr_parse(tmp, &a->ip) == 0) {
				if (a->ip.family != AF_INET)   /* cannot happen without ':' in the text */
					return false;
				a->is_ip = true;
			}
		}
		if (!a->is_ip) {
			if (all_numeric(host, host_len))
				return false;
			if (sk_domain_normalize(host, host_len, 0, a->name, &wild, &why) != 0)
				return false;
		}
	}
	if (colon) {
		if (!parse_port(colon + 1, (size_t)(p + n - colon - 1), &a->port))
			return false;
	} else if (need_port) {
		return false;
	}
	return true;
}

static bool same_authority(const struct authority *a, const struct authority *b, uint16_t default_port)
{
	uint16_t pa = a->port ? a->port : default_port, pb = b->port ? b->port : default_port;

	if (pa != pb || a->is_ip != b->is_ip)
		return false;
	if (a->is_ip)
		return sk_addr_equal(&a->ip, &b->ip);
	return strcmp(a->name, b->name) == 0;
}

enum target_form { FORM_ORIGIN, FORM_ABSOLUTE, FORM_AUTHORITY, FORM_ASTERISK };

/* The shared tokenizer's verdicts in this parser's terms: another HTTP version is MALFORMED here (the
 * proxy answers every malformed head the same way). */
static enum sk_http_result from_http1(enum sk_http1_result r)
{
	switch (r) {
	case SK_HTTP1_OK: return SK_HTTP_OK;
	case SK_HTTP1_NEED_MORE: return SK_HTTP_NEED_MORE;
	case SK_HTTP1_NOT_HTTP: return SK_HTTP_NOT_HTTP;
	case SK_HTTP1_MALFORMED:
	case SK_HTTP1_BAD_VERSION: break;
	}
	return SK_HTTP_MALFORMED;
}

/* Sorts the request-target into its form (RFC 9112 §3.2). For absolute- and authority-form, *auth
 * and *auth_len delimit the authority it names and *default_port is what an absent port means. Only
 * the form is judged here (MALFORMED at once); the authority is judged with the Host header. */
static enum sk_http_result classify_target(const struct sk_http1_request_line *rl, const char *method,
					   enum target_form *form, const char **auth, size_t *auth_len,
					   uint16_t *default_port)
{
	const char *t = rl->target;
	size_t n = rl->target_len, s;

	*default_port = 0;
	*auth = NULL;
	*auth_len = 0;
	if (strcmp(method, "CONNECT") == 0) {
		/* authority-form; RFC 9110 §9.3.6 shows a Host without the port, so an absent Host port
		 * means the target's (filled in by the caller). */
		*form = FORM_AUTHORITY;
		*auth = t;
		*auth_len = n;
		return SK_HTTP_OK;
	}
	if (t[0] == '/') {
		*form = FORM_ORIGIN;
		return SK_HTTP_OK;
	}
	if (n == 1 && t[0] == '*') {
		*form = FORM_ASTERISK;
		return strcmp(method, "OPTIONS") == 0 ? SK_HTTP_OK : SK_HTTP_MALFORMED;
	}
	/* absolute-form: scheme "://" authority path-abempty [ "?" query ] */
	for (s = 0; s < n && t[s] != ':'; s++)
		;
	if (s == n || n - s < 3 || t[s + 1] != '/' || t[s + 2] != '/')
		return SK_HTTP_MALFORMED;
	if (sk_http1_ieq(t, s, "http"))
		*default_port = 80;
	else if (sk_http1_ieq(t, s, "https"))
		*default_port = 443;
	else
		return SK_HTTP_MALFORMED;
	*form = FORM_ABSOLUTE;
	*auth = t + s + 3;
	while (s + 3 + *auth_len < n && !strchr("/?#", (*auth)[*auth_len]))
		(*auth_len)++;
	return SK_HTTP_OK;
}

/* Case-insensitive field-name match where a '-' of want also matches '_'; *alias says whether one did. */
static bool name_is(const char *name, size_t n, const char *want, bool *alias)
{
	*alias = false;
	if (strlen(want) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (want[i] == '-' && name[i] == '_')
			*alias = true;
		else if (lower(name[i]) != want[i])
			return false;
	}
	return true;
}

/* Content-Length = 1*DIGIT (RFC 9110 §8.6), at most 2^63 - 1 so that it fits every upstream's integer.
 * A list ("5, 5"), which RFC 9110 lets a recipient collapse when all members agree, is refused: some
 * upstreams do not collapse it. */
static bool parse_content_length(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		unsigned d = (unsigned)(v[i] - '0');
		if (x > (UINT64_C(0x7fffffffffffffff) - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

/* Upgrade = #protocol, protocol = protocol-name ["/" protocol-version] (RFC 9110 §7.8). Only a bare
 * "websocket" and "h2c" are told apart; a versioned name, an empty element or anything that is not a
 * list of protocols is OTHER, so that a value we read one way cannot name something else upstream. */
static unsigned upgrade_protocols(const char *v, size_t n)
{
	unsigned bits = 0;
	size_t i = 0, start;

	for (;;) {
		for (start = i; i < n && sk_http1_is_tchar((uint8_t)v[i]); i++)
			;
		if (i == start || (i < n && v[i] == '/'))
			return bits | SK_HTTP_UPGRADE_OTHER;
		if (sk_http1_ieq(v + start, i - start, "websocket"))
			bits |= SK_HTTP_UPGRADE_WEBSOCKET;
		else if (sk_http1_ieq(v + start, i - start, "h2c"))
			bits |= SK_HTTP_UPGRADE_H2C;
		else
			bits |= SK_HTTP_UPGRADE_OTHER;
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i == n)
			return bits;
		if (v[i] != ',')
			return bits | SK_HTTP_UPGRADE_OTHER;
		for (i++; i < n && (v[i] == ' ' || v[i] == '\t'); i++)
			;
	}
}

static unsigned saturating_inc(unsigned x)
{
	return x == UINT32_MAX ? x : x + 1;
}

/* Records what one field line says about framing (see the top comment). */
static void note_framing(const struct sk_http1_field *f, struct sk_http_head *out)
{
	bool alias;
	uint64_t cl;

	if (name_is(f->name, f->name_len, "content-length", &alias)) {
		out->cl_count = saturating_inc(out->cl_count);
		if (alias || !parse_content_length(f->value, f->value_len, &cl))
			out->cl_bad = true;
		else
			out->content_length = cl;
	} else if (name_is(f->name, f->name_len, "transfer-encoding", &alias)) {
		out->te_count = saturating_inc(out->te_count);
		out->te_chunked = out->te_count == 1 && !alias && sk_http1_ieq(f->value, f->value_len, "chunked");
	} else if (name_is(f->name, f->name_len, "upgrade", &alias)) {
		out->upgrade |= upgrade_protocols(f->value, f->value_len);
	} else if (name_is(f->name, f->name_len, "http2-settings", &alias)) {
		out->http2_settings = true;
	}
}

static void set_host(struct sk_http_head *out, const struct authority *a)
{
	out->host_is_ip = a->is_ip;
	if (a->is_ip) {
		out->ip = a->ip;
		out->host[0] = '\0';
	} else {
		memcpy(out->host, a->name, sizeof(out->host));
	}
	out->port = a->port;
}

enum sk_http_result sk_http_head_parse(const uint8_t *buf, size_t len, struct sk_http_head *out)
{
	struct sk_http1_request_line rl;
	struct sk_http1_field f;
	struct authority target_auth, host_auth;
	enum target_form form;
	enum sk_http_result r;
	const char *host_value = NULL, *auth;
	size_t host_value_len = 0, host_count = 0, pos, auth_len;
	uint16_t default_port;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return SK_HTTP_NEED_MORE;
	/* The h2c preface is itself a valid-looking head up to its blank line: decide on it first. */
	if (memcmp(buf, H2C_PREFACE, len < H2C_PREFACE_LEN ? len : H2C_PREFACE_LEN) == 0)
		return len < H2C_PREFACE_LEN ? SK_HTTP_NEED_MORE : SK_HTTP_H2C_PRIOR;

	r = from_http1(sk_http1_request_line(buf, len, METHOD_MAX, &rl));
	if (r != SK_HTTP_OK)
		return r;
	memcpy(out->method, buf, rl.method_len);
	out->method[rl.method_len] = '\0';
	out->version_minor = rl.minor;
	r = classify_target(&rl, out->method, &form, &auth, &auth_len, &default_port);
	if (r != SK_HTTP_OK)
		return r;

	for (pos = rl.len;; pos += f.len) {
		r = from_http1(sk_http1_field_line(buf + pos, len - pos, &f));
		if (r != SK_HTTP_OK)
			return r;
		if (f.end)
			break;
		note_framing(&f, out);
		if (sk_http1_ieq(f.name, f.name_len, "host")) {
			host_count++;
			host_value = f.value;
			host_value_len = f.value_len;
		}
	}
	out->head_len = pos + f.len;

	/* The whole head is well-formed; now what it says about the host. */
	if (host_count > 1)
		return SK_HTTP_DUP_HOST;
	if (auth) {
		if (!parse_authority(auth, auth_len, form == FORM_AUTHORITY, &target_auth))
			return SK_HTTP_BAD_HOST;
		if (form == FORM_AUTHORITY)
			default_port = target_auth.port;
	}
	if (host_count == 1 && !parse_authority(host_value, host_value_len, false, &host_auth))
		return SK_HTTP_BAD_HOST;
	if (auth) {
		set_host(out, &target_auth);
		if (host_count == 1 && !same_authority(&target_auth, &host_auth, default_port))
			return SK_HTTP_HOST_MISMATCH;
		return SK_HTTP_OK;
	}
	if (host_count == 0)
		return SK_HTTP_NO_HOST;   /* HTTP/1.0 too: without a name we cannot decide */
	set_host(out, &host_auth);
	return SK_HTTP_OK;
}

const char *sk_http_result_name(enum sk_http_result r)
{
	switch (r) {
	case SK_HTTP_OK: return "ok";
	case SK_HTTP_NEED_MORE: return "need_more";
	case SK_HTTP_NOT_HTTP: return "not_http";
	case SK_HTTP_H2C_PRIOR: return "h2c_prior";
	case SK_HTTP_MALFORMED: return "malformed";
	case SK_HTTP_NO_HOST: return "no_host";
	case SK_HTTP_DUP_HOST: return "dup_host";
	case SK_HTTP_BAD_HOST: return "bad_host";
	case SK_HTTP_HOST_MISMATCH: return "host_mismatch";
	}
	return "unknown";
}
