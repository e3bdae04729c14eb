/* common/http_path.h — an HTTP request target's path as the server will read it, and the path globs of
 * request rules (docs/policy.md "Request rules"). Owns: normalising a request-target once (percent-decoding
 * of unreserved characters, upper-case hex for every other escape, dot-segments resolved as RFC 3986
 * §5.2.4 does, the query split off and not matched), refusing what servers are known to read differently,
 * and matching a normalised path against a glob (`*` one segment or part of one, `**` any number of whole
 * segments). Pure: no I/O, no allocation.
 *
 * Invariants of an SK_PATH_OK output (fuzz_http_path checks them): it starts with '/', holds no "." or ".."
 * segment, no "%2F" or "%5C", no NUL, no backslash, no '?' or '#', only printable ASCII, every '%' starts
 * an upper-case escape of a byte that is not unreserved, and normalising it again gives it back unchanged. */
#ifndef SK_COMMON_HTTP_PATH_H
#define SK_COMMON_HTTP_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* Longest normalised path kept (the output buffer's size should be at least this). */
#define SK_HTTP_PATH_MAX 4096

enum sk_path_result {
	SK_PATH_OK = 0,
	SK_PATH_NOT_ORIGIN,      /* neither origin-form ("/...") nor absolute-form http(s)://; '*', CONNECT's
				  * authority-form and the empty target included */
	SK_PATH_BAD_ESCAPE,      /* '%' not followed by two hex digits */
	SK_PATH_ENCODED_SLASH,   /* %2F: a '/' one server splits on and the next does not */
	SK_PATH_BACKSLASH,       /* '\' or %5C: a separator on some servers */
	SK_PATH_NUL,             /* NUL, raw or %00 */
	SK_PATH_CTL,             /* a raw control byte, space or DEL */
	SK_PATH_BAD_UTF8,        /* invalid UTF-8 in the decoded bytes: overlong, surrogate, cut, > U+10FFFF */
	SK_PATH_ENCODED_DOT,     /* a dot-segment spelled with %2E: servers that do not decode first pass it on */
	SK_PATH_DOT_PARAM,       /* ".;x" or "..;x": a dot-segment to servlet containers */
	SK_PATH_ABOVE_ROOT,      /* a ".." left over: it would climb above the root */
	SK_PATH_EMPTY_DOT,       /* an empty segment ("//") and a dot-segment in one path: servers that merge
				  * slashes resolve the dots differently from those that do not */
	SK_PATH_FRAGMENT,        /* '#': never sent by a client, so a smuggling attempt */
	SK_PATH_AUTHORITY,       /* absolute-form whose authority is not the Host, or has userinfo */
	SK_PATH_TOO_LONG,        /* the normalised path would not fit */
};

/* Normalises the request-target t[0..len) into out (NUL-terminated; cap bytes). host: the request's
 * Host name (lower case, as the head parser gives it) that an absolute-form authority must name; NULL
 * or "" accepts any. On SK_PATH_OK out holds the path without the query; on any other result out's
 * content is unspecified. *out_len (may be NULL) gets the path's length on OK. */
enum sk_path_result sk_http_path_normalize(const char *t, size_t len, const char *host, char *out, size_t cap,
					   size_t *out_len);

/* A stable short token for audit lines and the 403 body: "path_encoded_slash", ... ("ok" for OK). */
const char *sk_path_result_name(enum sk_path_result r);
/* The same as a phrase for messages: "an encoded '/' (%2F)", ... */
const char *sk_path_result_text(enum sk_path_result r);

/* Whether a path glob is well formed: starts with '/', no empty segment but a trailing one, "**" only as a
 * whole segment, and written as the normaliser writes paths (so a literal part can match at all). On
 * false, *why (may be NULL) says what is wrong, as a phrase for messages; want (may be NULL, wantsz bytes)
 * gets the normalised spelling when that is what differs, else "". */
bool sk_http_glob_check(const char *glob, const char **why, char *want, size_t wantsz);

/* Whether the normalised path matches the glob (sk_http_glob_check true). '*' matches any run of
 * characters other than '/' (a whole segment "*" is one non-empty segment); a "**" segment matches zero
 * or more whole segments. Linear in the product of the lengths at worst. */
bool sk_http_glob_match(const char *glob, const char *path);

#endif
