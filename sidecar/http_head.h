/* sidecar/http_head.h — the HTTP/1.x request-head parser: request line and Host header, strict about
 * everything an attacker could use to make us and the upstream disagree on the host.
 * Pure function over a buffer: no I/O, no allocation. */
#ifndef SK_SIDECAR_HTTP_HEAD_H
#define SK_SIDECAR_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/addr.h"
#include "policy/domain.h"

enum sk_http_result {
	SK_HTTP_OK = 0,
	SK_HTTP_NEED_MORE,     /* no complete head (CRLF CRLF) yet */
	SK_HTTP_NOT_HTTP,      /* does not start like an HTTP/1.x request line */
	SK_HTTP_H2C_PRIOR,     /* "PRI * HTTP/2.0" connection preface (h2c prior knowledge) */
	SK_HTTP_MALFORMED,     /* bad request line, bare LF/CR, obs-fold, whitespace before ':', NUL... */
	SK_HTTP_NO_HOST,       /* HTTP/1.1 without Host and without an absolute-form target */
	SK_HTTP_DUP_HOST,      /* more than one Host header */
	SK_HTTP_BAD_HOST,      /* Host / authority not a valid name or IP literal, userinfo, bad port */
	SK_HTTP_HOST_MISMATCH, /* absolute-form authority and Host header name different hosts */
};

struct sk_http_head {
	char method[16];
	char host[SK_DOMAIN_MAX + 1];  /* normalised name; empty when the host is an IP literal */
	bool host_is_ip;
	struct sk_addr ip;             /* when host_is_ip */
	uint16_t port;                 /* port given in the authority, 0 if none */
	size_t head_len;               /* bytes up to and including the blank line */
};

/* Parses buf[0..len). Absolute-form target (http://host[:port]/...) wins over Host, but both present
 * and naming different hosts is HOST_MISMATCH. Any result other than NEED_MORE is final: more bytes
 * never change it. out->method is set once the request line is complete; host/ip/port on OK and on
 * HOST_MISMATCH (then: the target's authority); head_len once the blank line is seen. The strictness
 * choices (what is NOT_HTTP vs MALFORMED, which Host spellings are BAD_HOST) are listed in http_head.c. */
enum sk_http_result sk_http_head_parse(const uint8_t *buf, size_t len, struct sk_http_head *out);

const char *sk_http_result_name(enum sk_http_result r);

#endif
