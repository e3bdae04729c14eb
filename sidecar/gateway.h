/* sidecar/gateway.h — the credential-injecting API gateway (DESIGN.md §5.4). Owns: the api port
 * listeners on 127.0.0.1 and ::1 (loopback only: the agent reaches them, nothing off the pod does); the
 * agent's HTTP/1.1 request head (strict parser below, with limits); routing `METHOD /<name>/<path>?<q>` to
 * `METHOD <upstream>/<path>?<q>`; the checks in front of the upstream (caller token, methods and path
 * prefixes, rate limit, path traversal); the secret header (read from the API's valueFile, re-read when the
 * file changes, never logged); and the libcurl multi transfer driven from the sidecar's loop
 * (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION + curl_multi_socket_action), with both bodies streamed
 * and back-pressured (CURL_READFUNC_PAUSE / CURL_WRITEFUNC_PAUSE). One audit line and one metrics sample
 * per request.
 *
 * Answers the gateway gives itself (JSON body {"error":"..."}, then the connection is closed):
 *   400 malformed head, path traversal, bad chunked body   401 caller token missing or wrong
 *   403 method or path prefix not allowed                   404 unknown api name
 *   408 request head not complete within head_timeout_ms    413/414/431 head limits
 *   429 rate limit (Retry-After: seconds)                   501 a transfer coding other than chunked
 *   502 upstream unreachable / TLS failure / secret unreadable  504 upstream connect / idle / total timeout
 *
 * Timeouts (sc->api_limits, struct sk_gateway_limits in config.h; --api-*-timeout-ms / STOCKADE_API_*):
 *   connect 10 s; idle: fewer than 1 byte/s moving for 300 s (a model "thinking" before its first byte
 *   is normal, so this is long); total 3600 s; agent request head 30 s (also the keep-alive idle time).
 *
 * Pure helpers (parser, routing, header filters, token check, rate limiter, chunked decoder, audit path)
 * are declared here so gateway_test.c can test them without sockets. */
#ifndef SK_SIDECAR_GATEWAY_H
#define SK_SIDECAR_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sidecar/sidecar.h"

struct sk_api;
struct sk_gateway;

/* Starts the gateway on sc (borrowed for the gateway's life): listens on 127.0.0.1 and ::1 at
 * sc->policy->ports.api. Limits from sc->api_limits. *out owned; free with sk_gateway_free. */
int sk_gateway_start(struct sk_sidecar *sc, struct sk_gateway **out, struct sk_err *err);
/* SIGTERM drain: closes the listeners and the idle keep-alive connections; requests in flight go on (a
 * streamed response included), each response is its connection's last (Connection: close). */
void sk_gateway_stop_accepting(struct sk_gateway *g);
void sk_gateway_free(struct sk_gateway *g);              /* aborts transfers, closes everything; NULL ok */
/* Agent connections open. After sk_gateway_stop_accepting that is the gateway's in-flight work (requests
 * forwarded or being answered, heads half read): main.c's drain waits until it is 0 (or the grace ends). */
size_t sk_gateway_active(const struct sk_gateway *g);

/* ---- pure helpers (tested by gateway_test.c) ------------------------------------------------------------ */

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

/* Parses an agent request head in buf[0..len). Returns the head length (> 0) when complete, 0 when more
 * bytes are needed, or -STATUS for the answer to give: -400 malformed (bare CR or LF, obs-fold, space
 * before ':', control bytes, bad or conflicting Content-Length, Content-Length with Transfer-Encoding),
 * -414 target over SK_GW_TARGET_MAX, -431 head over SK_GW_HEAD_MAX or too many headers, -417 an
 * expectation other than 100-continue, -501 a transfer coding other than chunked, -505 not HTTP/1.x.
 * Pointers in *req borrow buf. Lines end in CRLF only. */
int sk_gw_parse_head(const char *buf, size_t len, struct sk_gw_req *req);

/* Splits an origin-form target "/<name>[/path][?query]" into name (NUL-terminated, [a-z0-9-]{1,63}) and
 * the rest ("" or starting with '/' or '?'), which is what is appended to the upstream URL. Returns 0, or
 * -ENOENT when the target names no valid api (→ 404), -EINVAL when it is not origin-form (→ 400). */
int sk_gw_route(const char *target, size_t len, char name[64], const char **rest, size_t *rest_len);

/* The path part of rest (judged up to the first '?'; the query is not judged, so "?x=a;b" is fine): 0 when
 * safe to forward, else -EINVAL (→ 400). Refuses what some server behind the upstream URL could read as a
 * different path than the raw string (issue 16 item 6):
 *   - ';' anywhere in the path (Tomcat/Spring strip ";params": "/v1/..;/admin" is "/v1/../admin");
 *   - percent-encoded '.', '/', '\', '%' and ';' (%2e %2f %5c %25 %3b, either case): double decoding turns
 *     %252e into '.', and no API needs them encoded;
 *   - %-escapes whose bytes are not shortest-form UTF-8 (%c0%ae, %e0%80%ae, lone continuation bytes,
 *     surrogates, > U+10FFFF, truncated sequences), and code points that compatibility normalisation or
 *     best-fit conversion folds into '.', '/', '\', ';' or '%' (U+FF0E, U+2025, U+FF0F, U+2215, U+037E, ...);
 *   - raw '\', '#', controls, space and non-ASCII bytes; encoded control bytes; malformed %-escapes;
 *   - segments made only of dots, or dots and (encoded) spaces: ".", "..", "...", "..%20" (Windows/IIS
 *     drop trailing dots and spaces);
 *   - empty segments ("//" anywhere, including a leading "//"); a trailing '/' is fine. Servers disagree on
 *     "//" (merged by some, kept by others, an authority to URL resolvers when leading), so a prefix check
 *     on the raw string cannot know which path the upstream serves: refusing it costs no real API.
 * Legit paths pass: "/v1/messages", "/v1/a%20b", "/v1/files/%E2%9C%93", "/v1/models/claude-3.5". */
int sk_gw_check_path(const char *path, size_t len);

/* Methods and pathPrefixes of an api. A prefix matches on a segment boundary: "/v1" allows "/v1",
 * "/v1/x" and "/v1?q" but not "/v10"; a prefix ending in '/' is a plain prefix. path = rest's path part.
 * With prefixes, a path sk_gw_check_path refuses matches none (the raw string is only judged when every
 * server reads it the same way). */
bool sk_gw_method_allowed(const struct sk_api *api, const char *method);
bool sk_gw_path_allowed(const struct sk_api *api, const char *path, size_t len);

/* Constant-time equality (time depends only on the lengths' maximum, not on where bytes differ). */
bool sk_gw_token_eq(const char *a, size_t alen, const char *b, size_t blen);

/* The caller token the agent presented: "Authorization: Bearer <t>" or "X-Stockade-Token: <t>".
 * Returns true and sets *tok and *tlen when found; *via_auth tells which header carried it. */
bool sk_gw_find_token(const struct sk_gw_req *req, const char **tok, size_t *tlen, bool *via_auth);

/* Hop-by-hop (RFC 9110 §7.6.1): Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade,
 * and any name listed in `connection` (the comma-separated tokens of Connection headers; may be NULL). */
bool sk_gw_hop_by_hop(const char *name, size_t len, const char *connection);

/* Which agent headers go upstream: not hop-by-hop, not Host/Content-Length/Expect (curl sets those from
 * the URL and the body), not the secret header's name, not X-Stockade-Token, and not Authorization when
 * it carried the caller token. Calls emit(name, value) for each kept header, in order. */
typedef int (*sk_gw_emit_fn)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
int sk_gw_filter_request_headers(const struct sk_gw_req *req, const char *secret_header, bool drop_auth,
				 sk_gw_emit_fn emit, void *arg);

/* Token bucket: rate tokens/s, at most burst (0 → max(1, rate)); rate 0 = unlimited. Takes one token
 * and returns true, or returns false with *retry_after_s = whole seconds until one is there (>= 1). */
struct sk_gw_bucket {
	double tokens;
	uint64_t last_ms;
	bool primed;
};
bool sk_gw_bucket_take(struct sk_gw_bucket *b, double rate, double burst, uint64_t now_ms, uint32_t *retry_after_s);

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

/* Replaces every occurrence of the secret in a stream with '*' bytes of the same length (so
 * Content-Length still holds), across write boundaries, whatever the secret's length (issue 16 item 7:
 * a fixed 256-byte hold window let longer secrets through). A streaming Knuth-Morris-Pratt matcher: the
 * bytes held back are always the longest secret prefix the stream ends with, so they are never copied
 * (they equal secret[0..n_hold)) and each input byte costs O(1) amortised; overlapping occurrences are
 * masked as one run. */
struct sk_gw_redact {
	const char *secret;        /* borrowed; NULL or "" disables */
	size_t slen;
	uint32_t *fail;            /* owned (sk_gw_redact_init): KMP failure function, slen + 1 entries */
	size_t n_hold;             /* stream bytes held back; they are secret[0..n_hold) */
	size_t masked;             /* how many of them, from the front, belong to an occurrence already */
};
/* Sets r up for secret[0..slen) (borrowed: it must outlive r). 0, or -ENOMEM (r then disabled: the caller
 * must not stream a response it cannot redact). slen 0 disables. */
int sk_gw_redact_init(struct sk_gw_redact *r, const char *secret, size_t slen);
void sk_gw_redact_free(struct sk_gw_redact *r);   /* wipes and frees the table; r disabled; NULL-safe */
/* Processes in[0..len): writes released bytes to out (room for len + r->n_hold needed) and returns how
 * many; at the end call with len 0 and final = true to release what is held (a secret prefix that never
 * completed is released as it was). A disabled r copies in to out. */
size_t sk_gw_redact_run(struct sk_gw_redact *r, const uint8_t *in, size_t len, bool final, uint8_t *out);

#endif
