/* sidecar/proxy/http_track.h — request boundaries on the client→server direction of a plain-HTTP/1.x
 * connection (docs/architecture.md#transparent-proxy "every request on the connection is checked"). Owns: the framing state
 * machine over the byte stream the agent sends (request head, then a body framed by Content-Length or
 * chunked transfer coding, then the next head...), and its fail-closed rules (RFC 9112 §6.3 and the
 * request-smuggling literature): both Content-Length and Transfer-Encoding, duplicate or malformed
 * Content-Length, a Transfer-Encoding other than a final "chunked", bad or oversized chunk sizes, bare
 * LF / bare CR in chunk lines or trailers, obs-fold, h2c upgrades and unknown upgrades are errors.
 * Pure: no I/O, no allocation; the caller keeps the bytes not yet forwarded and calls again.
 *
 * Use: the relay holds the bytes read from the agent that are not yet sent upstream, buf[0..len), and
 * calls sk_http_track_next() in a loop:
 *   FORWARD n   the first n bytes (body or chunk framing of a request whose head was accepted) may go
 *               upstream as they are; the tracker has advanced past them. Drop them from the front, call
 *               again with the rest.
 *   HEAD n      buf[0..n) is one complete request head, parsed into *head (host, method, framing). The
 *               tracker has advanced past it as if it were forwarded: the caller checks head->host against
 *               the policy and either forwards the n bytes (and calls again) or denies the connection.
 *   NEED_MORE   nothing more can be forwarded until more bytes arrive (an incomplete head or chunk line).
 *               A caller whose buffer is full at NEED_MORE denies (head or chunk line too big).
 *   HOLD        an accepted websocket Upgrade request is waiting for its response: keep the bytes, and
 *               call sk_http_track_upgrade_result() once the server's status line is known. HOLD comes on
 *               the call right after the upgrade's HEAD, with or without bytes left (len 0 is fine): a
 *               caller must call again after every HEAD even when the buffer is empty, or it will not
 *               learn to watch for the 101 before the server sends it.
 *   OPAQUE      the connection switched protocols (101 to a websocket upgrade): every byte from here on,
 *               buffered or not, is forwarded unchecked (the caller may splice from now on).
 *   ERROR       ambiguous or malformed framing: deny; *reason is a short stable token for audit lines
 *               ("http_te_cl", "http_dup_cl", "http_bad_cl", "http_bad_te", "http_bad_chunk",
 *               "http_h2c_upgrade", "http_upgrade_unsupported", "http_upgrade_not_first", "http_connect",
 *               "http_h2c_prior", or a head parse result as "http_malformed", "http_no_host", ...).
 * Any result other than NEED_MORE/HOLD for a given stream position is final: more bytes never change it.
 *
 * Websocket: "Upgrade: websocket" is accepted only on the first request of the connection (so the first
 * response the server sends is the answer to it) and only for GET without a body; after its head the
 * tracker answers HOLD until the caller reports whether the server answered 101. A declined upgrade leaves
 * the connection HTTP: the next bytes are a request head like any other. */
#ifndef SK_SIDECAR_HTTP_TRACK_H
#define SK_SIDECAR_HTTP_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/proxy/http_head.h"

enum sk_track_result {
	SK_TRACK_FORWARD = 0,
	SK_TRACK_HEAD,
	SK_TRACK_NEED_MORE,
	SK_TRACK_HOLD,
	SK_TRACK_OPAQUE,
	SK_TRACK_ERROR,
};

enum sk_track_state {
	SK_TS_HEAD = 0,        /* expecting a request head */
	SK_TS_BODY,            /* remaining Content-Length bytes */
	SK_TS_CHUNK_SIZE,      /* expecting a chunk-size line */
	SK_TS_CHUNK_DATA,      /* remaining bytes of the current chunk */
	SK_TS_CHUNK_CRLF,      /* the CRLF after chunk data */
	SK_TS_TRAILERS,        /* trailer field lines after the last chunk, until the blank line */
	SK_TS_UPGRADE_WAIT,    /* websocket upgrade sent, its response not yet seen */
	SK_TS_OPAQUE,          /* switched protocols */
	SK_TS_FAILED,          /* an ERROR was returned; stays */
};

struct sk_http_track {
	enum sk_track_state st;
	uint64_t remaining;    /* BODY / CHUNK_DATA */
	uint32_t requests;     /* request heads returned so far */
	size_t max_line;       /* longest chunk-size or trailer line accepted, not counting its CRLF
				* (default 4096); a longer one is an ERROR as soon as its byte max_line+1
				* arrives, without waiting for the CRLF */
	const char *reason;    /* after ERROR */
};

void sk_http_track_init(struct sk_http_track *t);

/* See the top comment. *n is set for FORWARD and HEAD (> 0), 0 otherwise; *head only for HEAD (and for
 * an ERROR found in a head, as far as parsed); *reason for ERROR (NULL otherwise). len may be 0; head and
 * reason may be NULL (t->reason keeps the reason). A FORWARD covers one framing element at most (body
 * bytes, one chunk-size line, chunk data, the CRLF after it, one trailer line), so the caller loops.
 * The exact rules (what counts as chunked, chunk-size limits, forbidden trailers, the order in which
 * several problems in one head pick the reason) are listed at the top of http_track.c. */
enum sk_track_result sk_http_track_next(struct sk_http_track *t, const uint8_t *buf, size_t len, size_t *n,
					struct sk_http_head *head, const char **reason);

/* After HOLD: the server's answer to the upgrade request was 101 Switching Protocols (switched) or
 * something else (the connection stays HTTP; the server's response framing is the server's business). */
void sk_http_track_upgrade_result(struct sk_http_track *t, bool switched);

const char *sk_track_result_name(enum sk_track_result r);

#endif
