/* sidecar/proxy/http_track.c — request boundaries on the client→server stream (see http_track.h).
 *
 * Each call looks only at buf[0..len) from the tracker's current position: a request head is handed to
 * sk_http_head_parse whole, a chunk-size or trailer line is judged byte by byte as far as it has arrived,
 * and body / chunk data is counted off. Nothing of a partial line is remembered between calls (the caller
 * keeps those bytes and passes them again), so a verdict depends only on the bytes before it, in order:
 * it is the same however the stream was cut into reads, and once given it is final.
 *
 * Choices (RFC 9112 §6.3, §7.1 and the request-smuggling literature; an upstream may be lenient where we
 * are strict, so wherever two readings are possible we refuse):
 *   - framing: Content-Length and Transfer-Encoding together, two Content-Length lines (even equal), a
 *     Content-Length that is not 1*DIGIT, more than one Transfer-Encoding line, one whose value is not
 *     exactly "chunked" (also "gzip, chunked": no client we serve sends another coding, and each coding
 *     parsed is one more place to disagree), Transfer-Encoding in HTTP/1.0: ERROR.
 *   - chunk-size line: 1*16HEXDIG with a value below 2^63, then optionally ';' and visible characters,
 *     SP or HTAB (no whitespace before the ';', no CTL, no obs-text), then CRLF; the CRLF after chunk
 *     data exactly; trailer lines are field lines (no obs-fold, no whitespace before ':', no CTL) and may
 *     not be Content-Length, Transfer-Encoding or Host. Bare CR or LF anywhere: ERROR.
 *   - a chunk-size or trailer line longer than max_line bytes (not counting its CRLF): ERROR.
 *   - CONNECT (any case) is a tunnel we did not decide: ERROR. h2c, by Upgrade, HTTP2-Settings or the
 *     prior-knowledge preface: ERROR. A websocket Upgrade is accepted on the first request only, for GET
 *     without a body (Content-Length 0 is no body), and with no other protocol offered next to it.
 *   - verdict order for a complete head: CONNECT, then the Host verdicts of the head parser, then
 *     framing (te_cl, dup_cl, bad_cl, bad_te), then upgrades. Any of them denies, the order only picks
 *     the reason. */
#include "sidecar/proxy/http_track.h"

#include <string.h>

#include "common/http1.h"

#define DEFAULT_MAX_LINE 4096
#define CHUNK_SIZE_DIGITS_MAX 16
#define CHUNK_SIZE_MAX UINT64_C(0x7fffffffffffffff)

static bool ieq(const uint8_t *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = a[i];
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		if (c != (uint8_t)b[i])
			return false;
	}
	return true;
}

enum line_verdict { LINE_MORE, LINE_BAD, LINE_OK };

/* The CRLF ending a line whose content is b[0..i). */
static enum line_verdict line_end(const uint8_t *b, size_t len, size_t i, size_t *line_len)
{
	if (i == len)
		return LINE_MORE;
	if (b[i] != '\r')
		return LINE_BAD;        /* bare LF, a CTL, or a byte the line's grammar does not allow */
	if (i + 1 == len)
		return LINE_MORE;
	if (b[i + 1] != '\n')
		return LINE_BAD;        /* bare CR */
	*line_len = i + 2;
	return LINE_OK;
}

/* chunk-size [ ";" ext ] CRLF. Every content byte is checked against max as it is reached, so a line
 * that is too long is refused as soon as it is, whatever follows. */
static enum line_verdict chunk_size_line(const uint8_t *b, size_t len, size_t max, uint64_t *size,
					 size_t *line_len)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < len && sk_http1_hexval(b[i]) >= 0; i++) {
		if (i >= max || i == CHUNK_SIZE_DIGITS_MAX)
			return LINE_BAD;
		v = v << 4 | (uint64_t)sk_http1_hexval(b[i]);
	}
	if (i == len)
		return LINE_MORE;
	if (i == 0 || v > CHUNK_SIZE_MAX)
		return LINE_BAD;
	if (b[i] == ';') {
		for (; i < len && (b[i] == ' ' || b[i] == '\t' || (b[i] > 0x20 && b[i] < 0x7f)); i++)
			if (i >= max)
				return LINE_BAD;
	}
	*size = v;
	return line_end(b, len, i, line_len);
}

/* Trailer names that must not reach an upstream which might merge trailers into the head: framing and
 * routing (RFC 9110 §6.5.1). */
static bool forbidden_trailer(const uint8_t *name, size_t n)
{
	return ieq(name, n, "content-length") || ieq(name, n, "transfer-encoding") || ieq(name, n, "host");
}

/* One trailer field line, or the blank line ending the trailer section (*end). */
static enum line_verdict trailer_line(const uint8_t *b, size_t len, size_t max, bool *end, size_t *line_len)
{
	size_t i;

	*end = false;
	if (len == 0)
		return LINE_MORE;
	if (b[0] == '\r') {
		*end = true;
		return line_end(b, len, 0, line_len);
	}
	/* A leading SP/HTAB is obs-fold; a bare LF, whitespace before ':' or an empty name fail too. */
	for (i = 0; i < len && sk_http1_is_tchar(b[i]); i++)
		if (i >= max)
			return LINE_BAD;
	if (i == len)
		return LINE_MORE;
	if (i == 0 || b[i] != ':' || forbidden_trailer(b, i))
		return LINE_BAD;
	for (; i < len && b[i] != '\r'; i++) {
		if (i >= max)
			return LINE_BAD;
		if ((b[i] < 0x20 && b[i] != '\t') || b[i] == 0x7f)   /* bare LF, NUL, other CTLs */
			return LINE_BAD;
	}
	return line_end(b, len, i, line_len);
}

static enum sk_track_result fail(struct sk_http_track *t, const char *why)
{
	t->st = SK_TS_FAILED;
	t->reason = why;
	t->remaining = 0;
	return SK_TRACK_ERROR;
}

static const char *head_reason(enum sk_http_result r)
{
	switch (r) {
	case SK_HTTP_NO_HOST: return "http_no_host";
	case SK_HTTP_DUP_HOST: return "http_dup_host";
	case SK_HTTP_BAD_HOST: return "http_bad_host";
	case SK_HTTP_HOST_MISMATCH: return "http_host_mismatch";
	case SK_HTTP_H2C_PRIOR: return "http_h2c_prior";
	default: return "http_malformed";
	}
}

/* The framing and upgrade rules for a head the parser read to its blank line; NULL when it is fine. */
static const char *judge_head(const struct sk_http_track *t, enum sk_http_result r, const struct sk_http_head *h)
{
	if (ieq((const uint8_t *)h->method, strlen(h->method), "connect"))
		return "http_connect";
	if (r != SK_HTTP_OK)
		return head_reason(r);
	if (h->cl_count > 0 && h->te_count > 0)
		return "http_te_cl";
	if (h->cl_count > 1)
		return "http_dup_cl";
	if (h->cl_bad)
		return "http_bad_cl";
	if (h->te_count > 0 && (!h->te_chunked || h->version_minor == 0))
		return "http_bad_te";
	if (h->http2_settings || (h->upgrade & SK_HTTP_UPGRADE_H2C))
		return "http_h2c_upgrade";
	if (h->upgrade & SK_HTTP_UPGRADE_OTHER)
		return "http_upgrade_unsupported";
	if (h->upgrade & SK_HTTP_UPGRADE_WEBSOCKET) {
		/* Later requests: the server's next response would not be the answer to this one, so we
		 * could not tell whether it switched. */
		if (t->requests > 0)
			return "http_upgrade_not_first";
		if (strcmp(h->method, "GET") != 0 || h->te_count > 0 || h->content_length > 0)
			return "http_upgrade_unsupported";
	}
	return NULL;
}

static enum sk_track_result next_head(struct sk_http_track *t, const uint8_t *buf, size_t len, size_t *n,
				      struct sk_http_head *h)
{
	enum sk_http_result r;
	const char *why;

	if (len == 0)
		return SK_TRACK_NEED_MORE;
	r = sk_http_head_parse(buf, len, h);
	switch (r) {
	case SK_HTTP_NEED_MORE:
		return SK_TRACK_NEED_MORE;
	case SK_HTTP_NOT_HTTP:
	case SK_HTTP_MALFORMED:
	case SK_HTTP_H2C_PRIOR:
		return fail(t, head_reason(r));
	default:
		break;
	}
	why = judge_head(t, r, h);
	if (why)
		return fail(t, why);

	if (h->upgrade & SK_HTTP_UPGRADE_WEBSOCKET) {
		t->st = SK_TS_UPGRADE_WAIT;
	} else if (h->te_count > 0) {
		t->st = SK_TS_CHUNK_SIZE;
	} else if (h->content_length > 0) {
		t->st = SK_TS_BODY;
		t->remaining = h->content_length;
	} else {
		t->st = SK_TS_HEAD;
	}
	if (t->requests < UINT32_MAX)
		t->requests++;
	*n = h->head_len;
	return SK_TRACK_HEAD;
}

/* Counts off body or chunk data; the state after the last byte is given. */
static enum sk_track_result next_data(struct sk_http_track *t, size_t len, size_t *n, enum sk_track_state after)
{
	if (t->remaining == 0)   /* no code path enters a data state with nothing to count */
		return fail(t, "http_track_state");
	if (len == 0)
		return SK_TRACK_NEED_MORE;
	*n = (uint64_t)len < t->remaining ? len : (size_t)t->remaining;
	t->remaining -= *n;
	if (t->remaining == 0)
		t->st = after;
	return SK_TRACK_FORWARD;
}

static enum sk_track_result next_line(struct sk_http_track *t, const uint8_t *buf, size_t len, size_t *n)
{
	enum line_verdict v;
	uint64_t size = 0;
	size_t line_len = 0;
	bool end = false;

	switch (t->st) {
	case SK_TS_CHUNK_SIZE:
		v = chunk_size_line(buf, len, t->max_line, &size, &line_len);
		break;
	case SK_TS_CHUNK_CRLF:
		v = line_end(buf, len, 0, &line_len);
		break;
	default:
		v = trailer_line(buf, len, t->max_line, &end, &line_len);
		break;
	}
	if (v == LINE_MORE)
		return SK_TRACK_NEED_MORE;
	if (v == LINE_BAD)
		return fail(t, "http_bad_chunk");

	if (t->st == SK_TS_CHUNK_SIZE) {
		t->remaining = size;
		t->st = size > 0 ? SK_TS_CHUNK_DATA : SK_TS_TRAILERS;
	} else if (t->st == SK_TS_CHUNK_CRLF) {
		t->st = SK_TS_CHUNK_SIZE;
	} else if (end) {
		t->st = SK_TS_HEAD;
	}
	*n = line_len;
	return SK_TRACK_FORWARD;
}

void sk_http_track_init(struct sk_http_track *t)
{
	memset(t, 0, sizeof(*t));
	t->st = SK_TS_HEAD;
	t->max_line = DEFAULT_MAX_LINE;
}

enum sk_track_result sk_http_track_next(struct sk_http_track *t, const uint8_t *buf, size_t len, size_t *n,
					struct sk_http_head *head, const char **reason)
{
	struct sk_http_head scratch;
	enum sk_track_result r;

	*n = 0;
	if (!head)
		head = &scratch;
	switch (t->st) {
	case SK_TS_HEAD:
		r = next_head(t, buf, len, n, head);
		break;
	case SK_TS_BODY:
		r = next_data(t, len, n, SK_TS_HEAD);
		break;
	case SK_TS_CHUNK_DATA:
		r = next_data(t, len, n, SK_TS_CHUNK_CRLF);
		break;
	case SK_TS_CHUNK_SIZE:
	case SK_TS_CHUNK_CRLF:
	case SK_TS_TRAILERS:
		r = next_line(t, buf, len, n);
		break;
	case SK_TS_UPGRADE_WAIT:
		r = SK_TRACK_HOLD;
		break;
	case SK_TS_OPAQUE:
		r = SK_TRACK_OPAQUE;
		break;
	default:
		/* FAILED, or a state no code path sets: fail closed. */
		if (t->st != SK_TS_FAILED || !t->reason)
			(void)fail(t, "http_track_state");
		r = SK_TRACK_ERROR;
		break;
	}
	if (reason)
		*reason = r == SK_TRACK_ERROR ? t->reason : NULL;
	return r;
}

void sk_http_track_upgrade_result(struct sk_http_track *t, bool switched)
{
	/* Anywhere else (a failed tracker above all) there is no upgrade to resolve. */
	if (t->st == SK_TS_UPGRADE_WAIT)
		t->st = switched ? SK_TS_OPAQUE : SK_TS_HEAD;
}

const char *sk_track_result_name(enum sk_track_result r)
{
	switch (r) {
	case SK_TRACK_FORWARD: return "forward";
	case SK_TRACK_HEAD: return "head";
	case SK_TRACK_NEED_MORE: return "need_more";
	case SK_TRACK_HOLD: return "hold";
	case SK_TRACK_OPAQUE: return "opaque";
	case SK_TRACK_ERROR: return "error";
	}
	return "unknown";
}
