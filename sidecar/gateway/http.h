/* sidecar/gateway/http.h — the gateway's HTTP/1.1 text (part of gateway.h's component). Owns: the strict
 * parser of the agent's request head (with its limits), routing `/<api>/<rest>` targets, the hop-by-hop
 * and request-header filters, the streaming chunked-body decoder, the audit form of a path, and the
 * small pieces of response writing (reason phrases; the buffer is common/strbuf.h; JSON strings are audit.h's
 * sk_audit_json_str). Pure: no sockets, no loop, no curl — gateway_test.c and fuzz_gw_head.c test it
 * directly. */
#ifndef SK_SIDECAR_GW_HTTP_H
#define SK_SIDECAR_GW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "common/util.h"

#define SK_GW_HEAD_MAX 32768      /* request head bytes (→ 431) */
#define SK_GW_TARGET_MAX 8192     /* request target bytes (→ 414) */
#define SK_GW_MAX_HEADERS 128     /* header lines (→ 431) */

struct sk_gw_hdr {
	const char *name, *value;  /* borrowed from the parsed buffer; value trimmed of OWS */
	size_t name_len, value_len;
};

struct sk_gw_req {
	char method[32];
	const char *target;        /* borrowed */
	size_t target_len;
	int minor;                 /* HTTP/1.minor: 0 or 1 */
	struct sk_gw_hdr h[SK_GW_MAX_HEADERS];
	size_t n_h;
	size_t head_len;           /* through the blank line */
	int64_t content_length;    /* -1: none */
	bool chunked;              /* Transfer-Encoding: chunked */
	bool keep_alive;           /* HTTP/1.1 without Connection: close */
	bool expect_continue;
};


/* What sk_gw_parse_head made of the bytes so far. NEED_MORE and COMPLETE are the only verdicts that are not
 * final; every other one is the answer to give (sk_gw_head_answer) before closing the connection. */
enum sk_gw_head_verdict {
	SK_GW_HEAD_NEED_MORE = 0,
	SK_GW_HEAD_COMPLETE,           /* req->head_len bytes, through the blank line */
	SK_GW_HEAD_MALFORMED,          /* 400: bare CR or LF, obs-fold, space before ':', control bytes, bad or
	                                * conflicting Content-Length, Content-Length with Transfer-Encoding */
	SK_GW_HEAD_TARGET_TOO_LONG,    /* 414: target over SK_GW_TARGET_MAX */
	SK_GW_HEAD_BAD_EXPECT,         /* 417: an expectation other than 100-continue */
	SK_GW_HEAD_TOO_LARGE,          /* 431: head over SK_GW_HEAD_MAX or too many headers */
	SK_GW_HEAD_BAD_CODING,         /* 501: a transfer coding other than chunked */
	SK_GW_HEAD_BAD_VERSION,        /* 505: not HTTP/1.x */
};

/* The gateway's answer to a rejected head: HTTP status, the message of the JSON error body, the audit
 * line's reason (a docs/audit.schema.json "api" reason). */
struct sk_gw_answer {
	int status;
	const char *msg, *reason;
};

/* Parses an agent request head in buf[0..len). On COMPLETE, req->head_len is the head's length and the
 * pointers in *req borrow buf. Lines end in CRLF only. */
SK_MUST_USE enum sk_gw_head_verdict sk_gw_parse_head(const char *buf, size_t len, struct sk_gw_req *req);

/* The answer for a final verdict; NULL for NEED_MORE and COMPLETE (nothing to answer yet). */
const struct sk_gw_answer *sk_gw_head_answer(enum sk_gw_head_verdict v);

/* Splits an origin-form target "/<name>[/path][?query]" into name (NUL-terminated, [a-z0-9-]{1,63}) and
 * the rest ("" or starting with '/' or '?'), which is what is appended to the upstream URL. Returns 0, or
 * -ENOENT when the target names no valid api (→ 404), -EINVAL when it is not origin-form (→ 400). */
int sk_gw_route(const char *target, size_t len, char name[64], const char **rest, size_t *rest_len);


/* Hop-by-hop (RFC 9110 §7.6.1): Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade,
 * and any name listed in `connection` (the comma-separated tokens of Connection headers; may be NULL). */
bool sk_gw_hop_by_hop(const char *name, size_t len, const char *connection);

/* Which agent headers go upstream: not hop-by-hop, not Host/Content-Length/Expect (curl sets those from
 * the URL and the body), not the secret header's name, not X-Stockade-Token, not Authorization when it
 * carried the caller token, and none that would change the response body's bytes away from the one form
 * the key redaction searches (a key echoed in another form would go out unmasked): Accept-Encoding (the
 * gateway asks for identity itself), Range and If-Range (a part that starts inside an echoed key carries a
 * suffix no matcher recognises), A-IM (RFC 3229 delta or compressed instances), Want-Digest,
 * Want-Content-Digest and Want-Repr-Digest (a digest of a body holding the key; a checksum such as crc32c or
 * adler is no one-way function). TE is hop-by-hop.
 * Calls emit(name, value) for each kept header, in order. */
typedef int (*sk_gw_emit_fn)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
int sk_gw_filter_request_headers(const struct sk_gw_req *req, const char *secret_header, bool drop_auth,
				 sk_gw_emit_fn emit, void *arg);


/* Streaming chunked-body decoder (agent → upstream). Sizes are capped at 2^40; extensions are skipped
 * (bounded); trailers are read and dropped. */
enum sk_gw_chunk_state { SK_GW_CH_SIZE = 0, SK_GW_CH_EXT, SK_GW_CH_SIZE_LF, SK_GW_CH_DATA, SK_GW_CH_DATA_CR,
			 SK_GW_CH_DATA_LF, SK_GW_CH_TRAILER, SK_GW_CH_TRAILER_LINE, SK_GW_CH_TRAILER_LF,
			 SK_GW_CH_END_LF, SK_GW_CH_DONE };
struct sk_gw_chunked {
	enum sk_gw_chunk_state st;
	uint64_t left;             /* data bytes left in this chunk */
	unsigned digits, ext_len, trailer_len;
};
/* Decodes from in[0..in_len) into out[0..out_cap). Returns 1 when the body is complete, 0 when more input
 * is needed (or out is full), -1 on malformed framing. *in_used and *out_made report progress. */
int sk_gw_chunked_decode(struct sk_gw_chunked *c, const uint8_t *in, size_t in_len, size_t *in_used,
			 uint8_t *out, size_t out_cap, size_t *out_made);

/* The path for the audit line: query values dropped ("/v1/x?a=1&b" → "/v1/x?a=&b"), at most cap-1 bytes. */
void sk_gw_audit_path(const char *rest, size_t len, char *out, size_t cap);


/* ---- response writing --------------------------------------------------------------------------------------- */

const char *sk_gw_reason_phrase(int status);   /* "Bad Gateway"; a class phrase for unknown codes */

/* The gateway's own answer, appended to out: status line, Content-Type: application/json, Content-Length,
 * Connection: close, Cache-Control: no-store (+ Retry-After: retry_after for 429, WWW-Authenticate for
 * 401), then the body {"error":"<msg>"} and a newline unless head_only (a HEAD request). */
void sk_gw_error_response(struct sk_strbuf *out, int status, const char *msg, uint32_t retry_after, bool head_only);

/* How the agent's response body is framed (decided by sk_gw_response_head). */
struct sk_gw_resp_framing {
	bool no_body;              /* HEAD, 1xx, 204, 304: no body bytes go to the agent */
	bool chunked;              /* re-framed as chunked (the upstream's length is not passed on) */
	bool close;                /* the response is the connection's last (HTTP/1.0 agent, or draining) */
};
/* Appends the agent's response head built from the upstream's header lines up[0..len) (as curl hands
 * them: "Name: value\r\n" each, no status line, no blank line): "HTTP/1.1 <status> <phrase>", the
 * upstream's lines without hop-by-hop headers (and names its Connection lists), without Content-Length
 * when the body is re-framed (Transfer-Encoding present, or none given), then Transfer-Encoding: chunked
 * and Connection: close as decided into *f, and the blank line. head_req: the agent's method was HEAD;
 * draining: sk_gateway_stop_accepting ran. Returns the offset in out where the header lines start (what
 * the caller searches for a reflected secret). */
size_t sk_gw_response_head(struct sk_strbuf *out, const char *up, size_t len, int status, bool head_req,
			   bool keep_alive, bool draining, struct sk_gw_resp_framing *f);

/* Whether the upstream's response may be relayed, judged on its header lines up[0..len) (as for
 * sk_gw_response_head) before any of it goes to the agent: NULL, or the gateway's answer instead (502).
 * The key redaction searches the body's bytes as they travel, so a body the agent receives in any other
 * form is refused (fail closed; the gateway asks for none of these, so only a misbehaving upstream sends
 * them): a Content-Encoding other than identity (gzip, br, zstd, deflate, compress, or a list), a
 * Transfer-Encoding coding other than chunked (libcurl passes an unrequested "gzip, chunked" on still
 * compressed), 206 Partial Content (a range may start inside the key) and 226 IM Used (a delta). A
 * response without a body to relay (head_req: the agent's method was HEAD; or 1xx, 204, 304) carries no echo
 * in a body and is never refused. */
const struct sk_gw_answer *sk_gw_response_refusal(const char *up, size_t len, int status, bool head_req);

/* ---- small text helpers shared by the gw_* modules ----------------------------------------------------------- */

bool sk_gw_name_is(const char *n, size_t len, const char *lit);   /* case-insensitive, whole name */

#endif
