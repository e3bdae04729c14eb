/* sidecar/inspect/h2_filter.h — the HTTP/2 request filter of an inspected connection (filter.h): every
 * request the agent sends over HTTP/2 is decided before anything of it reaches the server. Owns: the
 * client→server frame parser (preface, frame sizes, header blocks with their CONTINUATION frames), the
 * client's HPACK decoder (nghttp2_hd_inflater, fed every block, denied or not, so it stays in step with
 * the agent's encoder), its own HPACK encoder toward the server (nghttp2_hd_deflater: the server-side
 * dynamic table is ours), the table of open streams, the answers it makes up (403/421, RST_STREAM,
 * WINDOW_UPDATE, GOAWAY) and where they go into the server→client stream (only between the server's
 * frames). Not owned: what a request may do (the judge in the config decides, see sk_h2_judge_fn) and
 * the credential swap (the header hook). It includes nothing of the proxy: its owner wires those in.
 *
 * Frame level, not a pair of nghttp2 sessions: responses go through untouched (SK_PT_PASS, no copy;
 * their boundaries are parsed, and the server's SETTINGS read), and so do the client's control frames
 * and the DATA of allowed streams. Only header blocks are re-encoded. Two exceptions, both for
 * `secrets:`: with a body hook, an allowed stream's DATA frames are held whole while its body prefix is
 * scanned; with a mask (a host a secret lists), every server frame is read whole, DATA masked and header
 * blocks checked (h2_filter.c, from_server_masked).
 *
 * A request is refused three ways:
 *   - the judge denies it: the agent gets HEADERS (:status from the judge, content-type
 *     application/json, x-stockade-reason) and the judge's body in DATA with END_STREAM (no RST_STREAM:
 *     the rest of an unfinished upload is dropped, see put_answer()), encoded so the agent's HPACK decoder, which belongs to
 *     the server's encoder, is not changed; the server never sees the stream id (RFC 9113 §5.1.1);
 *   - it is malformed (RFC 9113 §8.1.1: pseudo-headers missing, repeated, unknown or after a regular
 *     field, upper-case or invalid names, invalid values, connection-specific fields, te other than
 *     trailers, :authority and host disagreeing) or a tunnel (CONNECT, :protocol; tunnels are not
 *     inspected): RST_STREAM PROTOCOL_ERROR to the agent, nothing upstream;
 *   - the connection cannot go on (bad preface, a frame larger than allowed, a frame inside a header
 *     block, a client PUSH_PROMISE, an HPACK error, a block over the bound): GOAWAY to the agent and
 *     SK_PT_FAIL.
 * DATA of a refused stream is dropped and the connection window it took is given back to the agent
 * (WINDOW_UPDATE on stream 0), so a refused upload cannot stall the connection.
 *
 * The one exception to "not changed": an agent that shrank its own SETTINGS_HEADER_TABLE_SIZE wants the
 * next block after the server's acknowledgement to begin with a size update (RFC 7541 §4.2); when that
 * block is ours it carries one, to the acknowledged size (see take_to_client for why that is safe).
 *
 * What it needs of the bridge: every server chunk goes through from_server (the filter puts its held
 * answers in there), and a call's to_sender reaches the agent after everything passed before it and
 * before the server's next chunk (the filter places its frames by that order).
 *
 * Single-threaded, one per connection; the judge and the hook are called from the filter's calls. */
#ifndef SK_SIDECAR_INSPECT_H2_FILTER_H
#define SK_SIDECAR_INSPECT_H2_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/inspect/filter.h"

/* One request as the judge sees it: NUL-terminated copies, valid for the call ("" when absent;
 * authority is the host field when :authority is absent). */
struct sk_h2_request {
	const char *method, *authority, *path, *scheme;
	int32_t stream_id;
};

enum sk_h2_decision {
	SK_H2_ALLOW,
	SK_H2_DENY,   /* answered with *status (403 when left 0) and body (sk_h2_denial_body's shape) */
};

/* Decides one request. On SK_H2_DENY: *status (e.g. 403, or 421 for host_sni_mismatch), body (the JSON
 * answer; may be left empty) and *reason (static; the x-stockade-reason header, [a-z_] only). */
typedef enum sk_h2_decision (*sk_h2_judge_fn)(void *ctx, const struct sk_h2_request *rq, int *status,
					      struct sk_strbuf *body, const char **reason);

/* Sees every regular header field of an allowed request (and of its trailers) on its way out. Returns 0
 * to keep the value, 1 to send new_value instead (empty at the call), 2 to leave the field out (a Range
 * toward a masked host), < 0 to refuse the stream
 * (RST_STREAM INTERNAL_ERROR to the agent; the server side, if it has the stream, gets RST_STREAM
 * CANCEL). *never_index (false at the call, or true when the agent sent it never-indexed) set true
 * sends the field as never-indexed (RFC 7541 §7.1.3: a credential). */
typedef int (*sk_h2_header_fn)(void *ctx, const struct sk_h2_request *rq, const uint8_t *name,
			       size_t namelen, const uint8_t *value, size_t valuelen,
			       struct sk_strbuf *new_value, bool *never_index);

#define SK_H2_MAX_BLOCK_DEFAULT 65536u   /* compressed header block, with its CONTINUATION frames */
#define SK_H2_MAX_LIST_DEFAULT 65536u    /* decoded: names and values plus 32 per field (RFC 9113 §6.5.2) */
#define SK_H2_MAX_STREAMS_DEFAULT 256u   /* open requests; more are refused with REFUSED_STREAM */

/* A stream the filter itself refused (reset, never judged, nothing sent upstream), so the owner can write
 * its audit line: reason h2_malformed_request (RFC 9113 §8.1.1), h2_tunnel (CONNECT, extended CONNECT),
 * h2_malformed_trailers, h2_header_refused (the header hook said no). rq's fields are "" when unknown. */
typedef void (*sk_h2_refused_fn)(void *ctx, const struct sk_h2_request *rq, const char *reason);

/* Sees the data of an allowed request's DATA frames (padding aside), whole frames in order, with the
 * stream's scan state, while the state is not done (sk_swap_body_scan stops after its prefix): 0 sends
 * the frame on, < 0 refuses the stream (the owner wrote its audit line): RST_STREAM to the agent
 * (INTERNAL_ERROR) and to the server (CANCEL), which already has its headers. Each frame is held until
 * it is whole while the hook looks; after that, DATA passes as it comes. */
typedef int (*sk_h2_body_fn)(void *ctx, const struct sk_h2_request *rq, struct sk_swap_body *scan,
			     const uint8_t *p, size_t n);

struct sk_h2_filter_cfg {
	sk_h2_judge_fn judge;        /* required */
	sk_h2_body_fn body;          /* NULL: DATA passes as it comes, unseen */
	/* Responses masked (a host a secret lists; the values, borrowed, may grow while the filter lives):
	 * see from_server_masked in h2_filter.c. NULL: the server's frames pass untouched (SK_PT_PASS). */
	const struct sk_swap_mask *mask;
	sk_h2_header_fn header;      /* NULL: headers go out as they came */
	sk_h2_refused_fn refused;    /* NULL: not told */
	/* A request whose header the hook refused: answered with this status and reason (the judge's answer
	 * shape) instead of RST_STREAM INTERNAL_ERROR when set (the credential swap's 403
	 * credential_misuse, which the agent can read). Trailers refused are reset either way. */
	int header_refusal_status;
	const char *header_refusal_reason;
	void *ctx;                   /* for all three */
	size_t max_block;            /* 0: the defaults above */
	size_t max_list;
	size_t max_streams;
};

/* *out owned (its ops->free). -EINVAL without a judge, -ENOMEM. */
SK_MUST_USE int sk_h2_filter_new(const struct sk_h2_filter_cfg *cfg, struct sk_pt_filter **out,
				 struct sk_err *err);

/* The denial body every inspected protocol answers with (the HTTP/1 one's shape, see
 * sidecar/proxy/requests_gate.c): {"error":"stockade_denied","reason":…,"rule":…,"method":…,"host":…,
 * "path":…} and a newline, every string escaped. rule may be NULL (""). Appends to body; its oom sticks. */
void sk_h2_denial_body(struct sk_strbuf *body, const char *reason, const char *rule,
		       const struct sk_h2_request *rq);

#endif
