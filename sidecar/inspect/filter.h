/* sidecar/inspect/filter.h — the contract between the TLS bridge (bridge.h), which owns the sockets and
 * the TLS of an inspected connection, and a plaintext filter, which owns the application protocol on it:
 * the HTTP/1 request checker (h1_filter), the HTTP/2 frame checker (h2_filter), and the credential swap
 * that both call (secrets). The bridge hands every chunk of plaintext, in each direction, to the filter
 * before anything of it is sent on, and sends what the filter says.
 *
 * Why this shape: a check made once where the protocol gives the client a second chance is the hole we
 * keep finding (a second request on a keep-alive connection, a header block continued in CONTINUATION
 * frames, a head split over two TLS records). The filter sees every byte, in order, in both directions,
 * and nothing reaches the other side that the filter did not pass or emit.
 *
 * No copy on the hot path: a filter that lets a chunk through unchanged answers SK_PT_PASS and the bridge
 * writes the chunk straight from its read buffer. Only what a filter rewrites, holds back or makes up (a
 * head split over records, a re-encoded HTTP/2 header block, a 403) goes through its out buffers. */
#ifndef SK_SIDECAR_INSPECT_FILTER_H
#define SK_SIDECAR_INSPECT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

enum sk_pt_verdict {
	SK_PT_PASS,  /* send the chunk on unchanged; out's buffers stay empty */
	SK_PT_EMIT,  /* send out->to_peer instead of the chunk (possibly nothing: the filter holds bytes back)
	              * and out->to_sender back toward the side the chunk came from */
	SK_PT_FAIL,  /* the stream cannot go on (malformed, a denial the protocol cannot answer in-band, out
	              * of memory): out->reason set; the bridge sends out->to_sender if any (e.g. a 403
	              * with Connection: close), then closes both sides */
};

/* Filled by one call; the bridge empties the buffers after each call (their allocation is kept). */
struct sk_pt_out {
	struct sk_strbuf to_peer;    /* toward the other side: from_client → the server; from_server → agent */
	struct sk_strbuf to_sender;  /* back toward the side that sent the chunk (a 403 or 421 to the agent,
	                              * a WINDOW_UPDATE or RST_STREAM to either) */
	bool close_after;            /* once everything queued is written: close_notify both ways */
	const char *reason;          /* static; an audit reason for the event the filter reports through
	                              * its own hooks (denials are audited by the filter's owner, not here) */
};

struct sk_pt_filter;

struct sk_pt_filter_ops {
	const char *name;  /* "http1", "h2" */
	/* The agent's plaintext (buf borrowed for the call). */
	enum sk_pt_verdict (*from_client)(struct sk_pt_filter *f, const uint8_t *buf, size_t len,
					  struct sk_pt_out *out);
	/* The server's plaintext. */
	enum sk_pt_verdict (*from_server)(struct sk_pt_filter *f, const uint8_t *buf, size_t len,
					  struct sk_pt_out *out);
	/* The side closed (clean close_notify or TCP close): a filter holding an unfinished head refuses to
	 * let it be cut short silently; it may emit a last answer. */
	enum sk_pt_verdict (*closed)(struct sk_pt_filter *f, bool client_side, struct sk_pt_out *out);
	void (*free)(struct sk_pt_filter *f);
};

/* A filter is an ops table plus the implementation's state behind it (embed this first). */
struct sk_pt_filter {
	const struct sk_pt_filter_ops *ops;
};

static inline void sk_pt_out_reset(struct sk_pt_out *o)
{
	sk_strbuf_reset(&o->to_peer);
	sk_strbuf_reset(&o->to_sender);
	o->close_after = false;
	o->reason = NULL;
}

static inline void sk_pt_out_free(struct sk_pt_out *o)
{
	sk_strbuf_free(&o->to_peer);
	sk_strbuf_free(&o->to_sender);
}

#endif
