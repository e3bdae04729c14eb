/* sidecar/proxy/inspect_h1.h — the HTTP/1 plaintext filter of an inspected connection (inspect/filter.h):
 * every request the agent sends inside TLS is found (the same framing tracker as plain HTTP, http_track.h:
 * keep-alive, pipelining, heads split over records, Content-Length and chunked bodies, its fail-closed
 * rules) and judged before a byte of it goes to the server:
 *   - its Host must name the TLS server name the connection was decided on (else 421 Misdirected Request,
 *     reason host_sni_mismatch: an inspected rule closes domain fronting);
 *   - the owner's judge (the rule's request rules, requests_gate.h) must allow it (else 403).
 * A refusal is an answer in the agent's own stream, in the order of its requests: the responses to the
 * requests before it are tracked (status line, Content-Length, chunked, no-body statuses and HEAD) so the
 * answer goes out between responses, never inside one. A refused request without a body leaves the
 * connection going; one with a body, a framing error (400) or a refused upgrade ends it (Connection:
 * close). Nothing the filter did not judge reaches the server: a head cut short at the end is dropped.
 *
 * Websockets (docs/policy.md "Websockets"): an upgrade that is exactly RFC 6455's handshake (else
 * http_upgrade_unsupported) on the first request is judged like any GET and forwarded, except on a
 * masked connection (websocket_secret_host: frames are not searched). What the agent sends behind it is
 * held until the server answers. A 101 is held whole and checked (Upgrade, Connection and the
 * Sec-WebSocket-Accept its key asks for; else websocket_bad_accept, SK_PT_FAIL); after it the held bytes
 * go on as the agent's first frames (to_sender of from_server) and every frame both ways is followed and
 * passed unchanged (websocket_bad_frame on a violation). A declined upgrade leaves the connection HTTP:
 * the held bytes are judged then as the next requests (what goes on leaves in from_server's to_sender).
 *
 * Secrets (core/secret_swap.h): the body prefix of every request is shown to the body hook (the misuse
 * scan); a refusal there comes after the head and part of the body went on, so the server holds a partial
 * request: nothing more of the agent's is sent, the agent gets the 403 when nothing is owed before it, and
 * the connection closes. On a connection whose responses may echo a value (sk_h1_filter_mask), every
 * response byte the agent reads — head, body, chunk data and trailers, not the chunk framing — goes
 * through the mask, which keeps lengths (Content-Length and chunk sizes hold) and may hold the end of a
 * record back until the next one shows whether a value straddles them; a response is released whole at
 * its end. Its head is held until complete: a body the mask cannot search (a Content-Encoding or a
 * Transfer-Encoding coding other than chunked, 206 or 226) is refused, 502 upstream_encoding, and the
 * connection closed. A connection without a mask keeps the zero-copy path (SK_PT_PASS).
 *
 * Owns: the framing state both ways, the bytes of an unfinished head, the mask and the bytes it holds.
 * The owner (the proxy's connection) owns the audit lines: judge and refuse write them. Pure (no I/O);
 * single-threaded. */
#ifndef SK_SIDECAR_PROXY_INSPECT_H1_H
#define SK_SIDECAR_PROXY_INSPECT_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/util.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/inspect/filter.h"
#include "sidecar/proxy/http_head.h"
#include "sidecar/proxy/requests_gate.h"

#define SK_H1_HEAD_MAX 65536      /* an unfinished head (or chunk line) held for more than this: refused */
#define SK_H1_PIPELINE_MAX 1024   /* requests awaiting their responses */

struct sk_h1_hooks {
	void *ctx;
	/* Judges request number `request` (head[0..n), parsed as h) by the rule's request rules and writes
	 * the audit line of a denial (a would_deny one in mode audit, and allows). NULL: it may go on. Else
	 * the audit reason, with *d the denial for the answer (borrowed until the next call; NULL when out
	 * of memory). NULL judge: every request passes this check. */
	const char *(*judge)(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
			     const struct sk_req_denial **d);
	/* The filter refuses request number `request` for `reason` (host_sni_mismatch, a framing error such
	 * as http_te_cl, http_upgrade_unsupported); method and path may be NULL. The owner writes the audit
	 * line and says whether to enforce it (false: mode audit, the request goes on; after a framing
	 * error nothing more is judged on the connection). */
	bool (*refuse)(void *ctx, uint32_t request, const char *reason, const char *method, const char *path);
	/* Sees every head the checks above let go on, last (the credential swap, core/secret_swap.h): 0 sends
	 * it as it is, 1 sends out's bytes (a whole head) instead, < 0 refuses the request with *reason
	 * (static; the owner wrote its audit line), answered 403 and the connection closed. NULL: none. */
	int (*rewrite)(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
		       struct sk_strbuf *out, const char **reason);
	/* Sees the body bytes of request `request` (Content-Length bytes or chunk data, not the framing) as
	 * they go on, with the request's scan state (reset for each request): 0 goes on, < 0 refuses it (the
	 * owner wrote its audit line; mode enforce). NULL: none. */
	int (*body)(void *ctx, uint32_t request, const char *method, struct sk_swap_body *scan, const uint8_t *p,
		    size_t n);
};

/* A filter for a connection whose TLS names sni (a DNS name, or the destination address as text when the
 * agent sent none), allowed by the rule labelled rule_label. hooks copied. *out owned: free it with its
 * ops->free. */
SK_MUST_USE int sk_h1_filter_new(const char *sni, const char *rule_label, const struct sk_h1_hooks *hooks,
				 struct sk_pt_filter **out, struct sk_err *err);

/* Turns masking on for the responses of the connection (from the next byte the server sends) and returns
 * the mask, for the owner to add values to (sk_swap_mask_add: each value a secret may send to this
 * host, now and whenever a swap sends a rotated one). */
struct sk_swap_mask *sk_h1_filter_mask(struct sk_pt_filter *f);

/* Requests seen on the connection so far. */
uint32_t sk_h1_filter_requests(const struct sk_pt_filter *f);

#endif
