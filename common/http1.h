/* common/http1.h — the one HTTP/1.x head tokenizer under every HTTP/1 reader: the proxy's request-head
 * parser (http_head.c), the request-boundary tracker (http_track.c), the admin server, the API gateway
 * and stockade-injector's head (injector/http.c). Owns the syntax they must agree on: token characters
 * (RFC 9110 §5.6.2, ASCII, no locale), the request line, field lines, and CRLF as the only line end — a
 * bare CR, a bare LF, obs-fold, whitespace before ':' and control bytes in a value are malformed
 * everywhere, so no two of our readers (and no upstream we front) can split one head into different lines.
 * What a reader does with the tokens (Host rules, framing, routing, limits) stays in that reader.
 * Incremental: every function judges p[0..n) as far as it goes; NEED_MORE means "valid so far", and
 * every other result is final (more bytes never change it). Pure: no I/O, no allocation. */
#ifndef SK_SIDECAR_HTTP1_H
#define SK_SIDECAR_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sk_http1_result {
	SK_HTTP1_OK = 0,
	SK_HTTP1_NEED_MORE,
	SK_HTTP1_NOT_HTTP,     /* the first bytes cannot start a request line (binary, TLS, "SSH-2.0-") */
	SK_HTTP1_MALFORMED,
	SK_HTTP1_BAD_VERSION,  /* a well-formed line whose version is "HTTP/" but not 1.0 or 1.1 */
};

bool sk_http1_is_tchar(uint8_t c);
/* A hex digit's value, 0..15, either case; -1 for anything else (a chunk size, a %XX escape). */
int sk_http1_hexval(uint8_t c);
/* ASCII case-insensitive equality of p[0..n) with a lower-case literal. */
bool sk_http1_ieq(const char *p, size_t n, const char *lower_lit);

struct sk_http1_request_line {
	size_t method_len;     /* the method is p[0..method_len) */
	const char *target;    /* visible ASCII, non-empty */
	size_t target_len;
	uint8_t minor;         /* HTTP/1.minor: 0 or 1 */
	size_t len;            /* the line with its CRLF */
};

/* method SP request-target SP HTTP/1.(0|1) CRLF. A method longer than method_max is MALFORMED (it is
 * still a token, not another protocol); leading empty lines are MALFORMED; a first byte that is not a
 * token character, or a token followed by something other than whitespace, is NOT_HTTP. */
enum sk_http1_result sk_http1_request_line(const uint8_t *p, size_t n, size_t method_max,
					   struct sk_http1_request_line *rl);

struct sk_http1_field {
	bool end;              /* the blank line that ends the head */
	const char *name;      /* a non-empty token */
	size_t name_len;
	const char *value;     /* without leading or trailing SP/HTAB */
	size_t value_len;
	size_t len;            /* the line with its CRLF */
};

/* field-name ":" OWS field-value OWS CRLF, or the final CRLF. */
enum sk_http1_result sk_http1_field_line(const uint8_t *p, size_t n, struct sk_http1_field *f);

#endif
