/* sidecar/proxy/http_head.h — the HTTP/1.x request-head parser: request line and Host header, strict about
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

/* Protocols named in Upgrade fields (bits of sk_http_head.upgrade). */
enum sk_http_upgrade {
	SK_HTTP_UPGRADE_WEBSOCKET = 1u << 0,
	SK_HTTP_UPGRADE_H2C = 1u << 1,
	SK_HTTP_UPGRADE_OTHER = 1u << 2,   /* any other protocol, or a value that is not a protocol list */
};

struct sk_http_head {
	char method[16];
	char host[SK_DOMAIN_MAX + 1];  /* normalised name; empty when the host is an IP literal */
	bool host_is_ip;
	struct sk_addr ip;             /* when host_is_ip */
	uint16_t port;                 /* port given in the authority, 0 if none */
	size_t head_len;               /* bytes up to and including the blank line */

	/* What message framing needs (RFC 9112 §6), gathered from the field lines as far as they were
	 * parsed: complete on every result that saw the blank line. The parser only reports; it never
	 * judges them (its result does not depend on them): http_track.c does. */
	uint8_t version_minor;         /* 0 (HTTP/1.0) or 1 (HTTP/1.1), once the request line is complete */
	unsigned cl_count;             /* Content-Length field lines */
	bool cl_bad;                   /* a Content-Length value that is not 1*DIGIT (a list "5, 5", a sign,
					* empty) or overflows 63 bits, or a "Content_Length" spelling */
	uint64_t content_length;       /* the value of the last well-formed Content-Length */
	unsigned te_count;             /* Transfer-Encoding field lines (and "Transfer_Encoding" ones) */
	bool te_chunked;               /* te_count == 1 and its value is exactly the one coding "chunked" */
	unsigned upgrade;              /* enum sk_http_upgrade bits, from every Upgrade field line */
	bool http2_settings;           /* an HTTP2-Settings field (an h2c upgrade whatever Upgrade says) */
};

/* Parses buf[0..len). Absolute-form target (http://host[:port]/...) wins over Host, but both present
 * and naming different hosts is HOST_MISMATCH. Any result other than NEED_MORE is final: more bytes
 * never change it. out->method is set once the request line is complete; host/ip/port on OK and on
 * HOST_MISMATCH (then: the target's authority); head_len once the blank line is seen. The strictness
 * choices (what is NOT_HTTP vs MALFORMED, which Host spellings are BAD_HOST) are listed in http_head.c. */
enum sk_http_result sk_http_head_parse(const uint8_t *buf, size_t len, struct sk_http_head *out);

const char *sk_http_result_name(enum sk_http_result r);

#endif
