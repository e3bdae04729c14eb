/* common/http_path.c — request-target normalisation and path globs (http_path.h).
 *
 * The rules, and why each refusal is there (a request rule decides on what the sidecar reads; the server
 * must read the same path, or an allowed spelling reaches a path that is not allowed):
 *  - an escape of an unreserved byte (ALPHA DIGIT - . _ ~) is decoded, every other escape keeps its '%'
 *    with upper-case hex, and a raw byte outside pchar is escaped: one spelling per path (RFC 3986 §6.2.2);
 *  - a raw sub-delim, ':' or '@' stays raw and its escape stays an escape: servers give ';', '=' or '+'
 *    meanings of their own, so the two spellings are not the same path;
 *  - %2F, '\' and %5C: one server splits on them and the next does not;
 *  - NUL, control bytes, invalid UTF-8 (overlong forms decode to '/' or '.' on careless servers);
 *  - a dot-segment spelled with %2E (a server that resolves before decoding passes it to an application
 *    that decodes it: a traversal the sidecar would not have seen), and ".;" / "..;" (servlet containers
 *    drop path parameters before resolving);
 *  - "." and ".." are resolved (§5.2.4); a ".." that would climb above the root is refused (servers differ:
 *    some clamp, some refuse), and so is a path with both an empty segment and a dot-segment (merging
 *    "//" before or after resolving gives different paths);
 *  - '#' never leaves a client, and an absolute-form authority other than the Host is another server. */
#include "common/http_path.h"

#include <stdint.h>
#include <string.h>

#include "common/http1.h"

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

/* sub-delims, ':' and '@': what pchar allows raw besides unreserved. */
static bool is_raw_ok(unsigned char c)
{
	return c && strchr("!$&'()*+,;=:@", c) != NULL;
}

/* UTF-8 validation, one decoded byte at a time (RFC 3629: no overlong form, no surrogate, <= U+10FFFF). */
struct utf8 {
	unsigned need;        /* continuation bytes still expected */
	unsigned char lo, hi; /* the range the next continuation byte must be in */
};

static bool utf8_step(struct utf8 *u, unsigned char c)
{
	if (u->need) {
		if (c < u->lo || c > u->hi)
			return false;
		u->need--;
		u->lo = 0x80;
		u->hi = 0xbf;
		return true;
	}
	if (c < 0x80)
		return true;
	u->lo = 0x80;
	u->hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		u->need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		u->need = 2;
		if (c == 0xe0)
			u->lo = 0xa0;   /* overlong below */
		else if (c == 0xed)
			u->hi = 0x9f;   /* surrogates above */
	} else if (c >= 0xf0 && c <= 0xf4) {
		u->need = 3;
		if (c == 0xf0)
			u->lo = 0x90;
		else if (c == 0xf4)
			u->hi = 0x8f;
	} else {
		return false;   /* 0x80..0xc1 (continuation or overlong lead), 0xf5..0xff */
	}
	return true;
}

struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 >= o->cap) {
		o->full = true;
		return;
	}
	o->buf[o->len++] = c;
}

static void put_esc(struct out *o, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	put(o, '%');
	put(o, hex[c >> 4]);
	put(o, hex[c & 15]);
}

static bool ascii_ieq(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x + 32);
		if (y >= 'A' && y <= 'Z')
			y = (unsigned char)(y + 32);
		if (x != y)
			return false;
	}
	return true;
}

/* Absolute-form: skips "http://authority" (or https), checking the authority against host. *off is set
 * to where the path (or '?' or the end) starts. */
static enum sk_path_result skip_authority(const char *t, size_t len, const char *host, size_t *off)
{
	size_t s;
	if (len >= 7 && ascii_ieq(t, 7, "http://"))
		s = 7;
	else if (len >= 8 && ascii_ieq(t, 8, "https://"))
		s = 8;
	else
		return SK_PATH_NOT_ORIGIN;
	size_t e = s;
	while (e < len && t[e] != '/' && t[e] != '?' && t[e] != '#')
		e++;
	if (e == s || memchr(t + s, '@', e - s))
		return SK_PATH_AUTHORITY;
	size_t he;
	if (t[s] == '[') {
		const char *rb = memchr(t + s, ']', e - s);
		if (!rb)
			return SK_PATH_AUTHORITY;
		he = (size_t)(rb - t) + 1;
	} else {
		he = s;
		while (he < e && t[he] != ':')
			he++;
	}
	if (host && host[0]) {
		/* An IPv6 literal is compared without its brackets when the Host was given without them. */
		const char *h = t + s;
		size_t hl = he - s;
		if (hl >= 2 && h[0] == '[' && host[0] != '[') {
			h++;
			hl -= 2;
		}
		if (hl && h[hl - 1] == '.' && host[strlen(host) - 1] != '.')
			hl--;   /* a fully-qualified spelling of the same name */
		if (!ascii_ieq(h, hl, host))
			return SK_PATH_AUTHORITY;
	}
	*off = e;
	return SK_PATH_OK;
}

/* The segment just written at out[seg..len): "." or ".." (dots 1 or 2), else 0. */
static int dots_of(const struct out *o, size_t seg)
{
	size_t n = o->len - seg;
	if (n == 1 && o->buf[seg] == '.')
		return 1;
	if (n == 2 && o->buf[seg] == '.' && o->buf[seg + 1] == '.')
		return 2;
	return 0;
}

/* ".;..." or "..;..." (the ';' raw or as %3B): a dot-segment with a path parameter. */
static bool dot_param(const struct out *o, size_t seg)
{
	const char *s = o->buf + seg;
	size_t n = o->len - seg, d = 0;
	while (d < n && d < 2 && s[d] == '.')
		d++;
	if (d == 0 || d == n)
		return false;
	return s[d] == ';' || (n - d >= 3 && s[d] == '%' && s[d + 1] == '3' && s[d + 2] == 'B');
}

enum sk_path_result sk_http_path_normalize(const char *t, size_t len, const char *host, char *out, size_t cap,
					   size_t *out_len)
{
	if (!out || cap < 2)
		return SK_PATH_TOO_LONG;
	size_t i = 0;
	if (len == 0)
		return SK_PATH_NOT_ORIGIN;
	if (t[0] != '/') {
		enum sk_path_result r = skip_authority(t, len, host, &i);
		if (r != SK_PATH_OK)
			return r;
	}
	struct out o = { .buf = out, .cap = cap, .len = 0, .full = false };
	bool empty_seg = false, dot_seg = false;
	/* One segment per round: i is at a '/' (or, for an absolute-form target with no path, at the end or
	 * '?', which reads as "/"). */
	for (;;) {
		const bool at_slash = i < len && t[i] == '/';
		if (at_slash)
			i++;
		const size_t seg_start = o.len;
		put(&o, '/');
		const size_t seg = o.len;
		bool enc_dot = false;
		struct utf8 u = { 0 };
		while (i < len && t[i] != '/' && t[i] != '?') {
			unsigned char c = (unsigned char)t[i];
			bool escaped = false;
			if (c == '#')
				return SK_PATH_FRAGMENT;
			if (c == '\\')
				return SK_PATH_BACKSLASH;
			if (c == 0)
				return SK_PATH_NUL;
			if (c < 0x20 || c == 0x7f || c == ' ')
				return SK_PATH_CTL;
			if (c == '%') {
				int h1 = i + 1 < len ? sk_http1_hexval((uint8_t)t[i + 1]) : -1;
				int h2 = i + 2 < len ? sk_http1_hexval((uint8_t)t[i + 2]) : -1;
				if (h1 < 0 || h2 < 0)
					return SK_PATH_BAD_ESCAPE;
				c = (unsigned char)(h1 * 16 + h2);
				escaped = true;
				i += 3;
				if (c == '/')
					return SK_PATH_ENCODED_SLASH;
				if (c == '\\')
					return SK_PATH_BACKSLASH;
				if (c == 0)
					return SK_PATH_NUL;
				if (c == '.')
					enc_dot = true;
			} else {
				i++;
			}
			if (!utf8_step(&u, c))
				return SK_PATH_BAD_UTF8;
			if (is_unreserved(c) || (!escaped && is_raw_ok(c)))
				put(&o, (char)c);
			else
				put_esc(&o, c);
		}
		if (u.need)
			return SK_PATH_BAD_UTF8;
		if (o.full)
			return SK_PATH_TOO_LONG;
		const bool last = !(i < len && t[i] == '/');
		const int dots = dots_of(&o, seg);
		if (dots && enc_dot)
			return SK_PATH_ENCODED_DOT;
		if (dot_param(&o, seg))
			return SK_PATH_DOT_PARAM;
		if (o.len == seg && !last)
			empty_seg = true;
		if (dots) {
			dot_seg = true;
			o.len = seg_start;   /* the dot-segment itself goes */
			if (dots == 2) {
				if (o.len == 0)
					return SK_PATH_ABOVE_ROOT;
				while (o.len > 0 && o.buf[o.len - 1] != '/')
					o.len--;
				o.len--;   /* and the '/' before the segment it removes */
			}
			/* A dot-segment at the end leaves the directory: "/a/b/.." is "/a/". */
			if (last)
				put(&o, '/');
		}
		if (empty_seg && dot_seg)
			return SK_PATH_EMPTY_DOT;
		if (last || !at_slash)
			break;
	}
	if (i < len && t[i] == '?' && memchr(t + i, '#', len - i))
		return SK_PATH_FRAGMENT;
	if (o.len == 0)
		put(&o, '/');
	if (o.full)
		return SK_PATH_TOO_LONG;
	o.buf[o.len] = '\0';
	if (out_len)
		*out_len = o.len;
	return SK_PATH_OK;
}

const char *sk_path_result_name(enum sk_path_result r)
{
	switch (r) {
	case SK_PATH_OK: return "ok";
	case SK_PATH_NOT_ORIGIN: return "path_not_origin";
	case SK_PATH_BAD_ESCAPE: return "path_bad_escape";
	case SK_PATH_ENCODED_SLASH: return "path_encoded_slash";
	case SK_PATH_BACKSLASH: return "path_backslash";
	case SK_PATH_NUL: return "path_nul";
	case SK_PATH_CTL: return "path_control";
	case SK_PATH_BAD_UTF8: return "path_bad_utf8";
	case SK_PATH_ENCODED_DOT: return "path_encoded_dot";
	case SK_PATH_DOT_PARAM: return "path_dot_param";
	case SK_PATH_ABOVE_ROOT: return "path_above_root";
	case SK_PATH_EMPTY_DOT: return "path_empty_dot";
	case SK_PATH_FRAGMENT: return "path_fragment";
	case SK_PATH_AUTHORITY: return "path_authority";
	case SK_PATH_TOO_LONG: return "path_too_long";
	}
	return "path_invalid";
}

const char *sk_path_result_text(enum sk_path_result r)
{
	switch (r) {
	case SK_PATH_OK: return "a valid path";
	case SK_PATH_NOT_ORIGIN: return "not a path starting with '/'";
	case SK_PATH_BAD_ESCAPE: return "a '%' not followed by two hex digits";
	case SK_PATH_ENCODED_SLASH: return "an encoded '/' (%2F)";
	case SK_PATH_BACKSLASH: return "a backslash (raw or %5C)";
	case SK_PATH_NUL: return "a NUL byte";
	case SK_PATH_CTL: return "a control byte or space";
	case SK_PATH_BAD_UTF8: return "invalid UTF-8";
	case SK_PATH_ENCODED_DOT: return "a dot-segment spelled with %2E";
	case SK_PATH_DOT_PARAM: return "a dot-segment with a ';' parameter";
	case SK_PATH_ABOVE_ROOT: return "a '..' above the root";
	case SK_PATH_EMPTY_DOT: return "an empty segment together with a dot-segment";
	case SK_PATH_FRAGMENT: return "a fragment ('#')";
	case SK_PATH_AUTHORITY: return "an absolute-form authority other than the Host";
	case SK_PATH_TOO_LONG: return "a path too long";
	}
	return "an invalid path";
}

/* ---- globs ---- */

/* A segment cursor points at a segment's first byte (just after its '/'); NULL: no segment left. */
static const char *seg_next(const char *s)
{
	const char *e = strchr(s, '/');
	return e ? e + 1 : NULL;
}

static size_t seg_len(const char *s)
{
	return strcspn(s, "/");
}

static bool seg_is_globstar(const char *s)
{
	return s[0] == '*' && s[1] == '*' && (s[2] == '/' || s[2] == '\0');
}

/* One glob segment g[0..gl) against one path segment p[0..pl): '*' any run of bytes. */
static bool seg_match(const char *g, size_t gl, const char *p, size_t pl)
{
	if (gl == 1 && g[0] == '*')
		return pl > 0;   /* a whole-segment '*' is one segment, never an empty one */
	size_t gi = 0, pi = 0, star_g = SIZE_MAX, star_p = 0;
	while (pi < pl) {
		if (gi < gl && g[gi] == '*') {
			star_g = gi++;
			star_p = pi;
		} else if (gi < gl && g[gi] == p[pi]) {
			gi++;
			pi++;
		} else if (star_g != SIZE_MAX) {
			gi = star_g + 1;
			pi = ++star_p;
		} else {
			return false;
		}
	}
	while (gi < gl && g[gi] == '*')
		gi++;
	return gi == gl;
}

bool sk_http_glob_match(const char *glob, const char *path)
{
	if (glob[0] != '/' || path[0] != '/')
		return false;
	const char *g = glob + 1, *p = path + 1;
	const char *star_g = NULL, *star_p = NULL;
	bool have_star = false;
	while (p) {
		if (g && seg_is_globstar(g)) {
			star_g = g;
			star_p = p;
			have_star = true;
			g = seg_next(g);
			continue;
		}
		if (g && seg_match(g, seg_len(g), p, seg_len(p))) {
			g = seg_next(g);
			p = seg_next(p);
			continue;
		}
		if (have_star) {
			/* The last "**" takes one more segment. */
			g = seg_next(star_g);
			star_p = seg_next(star_p);
			p = star_p;
			if (!p)
				break;
			continue;
		}
		return false;
	}
	while (g && seg_is_globstar(g))
		g = seg_next(g);
	return g == NULL;
}

bool sk_http_glob_check(const char *glob, const char **why, char *want, size_t wantsz)
{
	const char *w = NULL;
	if (want && wantsz)
		want[0] = '\0';
	if (glob[0] != '/') {
		w = "a path glob starts with '/'";
		goto bad;
	}
	for (const char *s = glob + 1; s; s = seg_next(s)) {
		size_t n = seg_len(s);
		if (n == 0 && s[0] == '/') {
			w = "an empty segment ('//') never matches a path the same way on every server";
			goto bad;
		}
		const char *ss = memchr(s, '*', n) ? strstr(s, "**") : NULL;
		if (ss && ss < s + n && n != 2) {
			w = "'**' must be a whole segment (\"/a/**\", not \"/a**\")";
			goto bad;
		}
	}
	char norm[SK_HTTP_PATH_MAX];
	enum sk_path_result r = sk_http_path_normalize(glob, strlen(glob), NULL, norm, sizeof(norm), NULL);
	if (r != SK_PATH_OK) {
		w = sk_path_result_text(r);
		goto bad;
	}
	if (strcmp(norm, glob) != 0) {
		w = "not written as a normalised path";
		if (want && wantsz) {
			size_t n = strlen(norm);
			if (n >= wantsz)
				n = wantsz - 1;
			memcpy(want, norm, n);
			want[n] = '\0';
		}
		goto bad;
	}
	return true;
bad:
	if (why)
		*why = w;
	return false;
}
