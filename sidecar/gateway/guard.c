/* sidecar/gateway/guard.c — path, method, path-prefix and caller-token checks; see gw_guard.h. */
#include "sidecar/gateway/guard.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "policy/policy.h"
#include "common/http1.h"

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
			int h = i + 2 < len ? sk_http1_hexval((uint8_t)path[i + 1]) : -1, l = i + 2 < len ? sk_http1_hexval((uint8_t)path[i + 2]) : -1;
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
		if (sk_gw_name_is(h->name, h->name_len, "x-stockade-token")) {
			*tok = h->value;
			*tlen = h->value_len;
			*via_auth = false;
			return true;
		}
	}
	for (size_t i = 0; i < req->n_h; i++) {
		const struct sk_gw_hdr *h = &req->h[i];
		if (sk_gw_name_is(h->name, h->name_len, "authorization") && h->value_len > 7 &&
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
