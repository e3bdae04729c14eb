/* injector/http.h — the HTTP/1.1 request head stockade-injector accepts, parsed strictly from a buffer on
 * common/http1.h's tokenizer: a request line "METHOD SP /path SP HTTP/1.x" (the target visible ASCII),
 * header lines of token names and visible values, an empty line. Only what the API server and the kubelet's
 * probes send is accepted: a body only with one Content-Length (no Transfer-Encoding, no second length), no
 * obsolete line folding, no bare LF or CR. No I/O (server.c reads; this judges what has arrived so far). */
#ifndef SK_INJECTOR_HTTP_H
#define SK_INJECTOR_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define SK_HTTP_MAX_HEAD 8192
#define SK_HTTP_MAX_HEADERS 64

enum sk_http_method { SK_HTTP_GET, SK_HTTP_HEAD, SK_HTTP_POST, SK_HTTP_OTHER };

struct sk_http_req {
	enum sk_http_method method;
	char path[128];          /* the target up to '?' (a longer one is refused: 414) */
	size_t content_length;   /* 0 when absent */
	bool keep_alive;         /* HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive" */
	bool json;               /* Content-Type is application/json (parameters allowed) */
	size_t head_len;         /* bytes of the head, the empty line included */
};

/* Judges buf[0..len): 0 = incomplete (read more; len < SK_HTTP_MAX_HEAD), 1 = complete (req filled), or a
 * negative HTTP status to answer before closing: -400 malformed, -414 target too long, -431 head too long
 * or too many headers, -501 Transfer-Encoding, -505 not HTTP/1.x. */
int sk_http_parse(const char *buf, size_t len, struct sk_http_req *req);

/* The reason phrase of the statuses the injector sends ("OK", "Bad Request"...). */
const char *sk_http_reason(int status);

#endif
