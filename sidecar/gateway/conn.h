/* sidecar/gateway/conn.h — the gateway's private state, shared by gateway.c (the agent connection state
 * machine) and gw_curl.c (the upstream transfer on libcurl's multi). Not for other components: they use
 * gateway.h. Who may free what is in the re-entrancy rule at the top of gateway.c. */
#ifndef SK_SIDECAR_GW_CONN_H
#define SK_SIDECAR_GW_CONN_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/curl_dl.h"
#include "sidecar/gateway/gateway.h"
#include "sidecar/gateway/http.h"
#include "sidecar/gateway/ratelimit.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/core/loop.h"
#include "sidecar/core/net.h"

#define GW_IN_CAP 65536           /* bytes buffered from the agent (head + body in flight) */
#define GW_OUT_HIGH 262144        /* response bytes queued for the agent before curl is paused */
#define GW_OUT_LOW 65536          /* ... and unpaused once the queue is below this */
#define GW_LINGER_MS 2000
#define GW_LINGER_DRAIN (1u << 20)

struct gw_api_state {             /* per api name; survives policy reloads (the bucket keeps its tokens) */
	char name[64];
	struct sk_gw_bucket bucket;
	struct sk_secret_file secret, token;
	struct gw_api_state *next;
};

struct gw_sock {                   /* one socket curl asked us to watch */
	struct sk_io io;
	struct sk_gateway *gw;
};

enum gw_state { GW_HEAD, GW_LOCAL, GW_FORWARD, GW_FLUSH, GW_LINGER };

struct gw_conn {
	struct sk_gateway *gw;
	struct sk_io io;
	struct sk_timer timer;
	enum gw_state st;
	uint32_t events;               /* epoll interest now registered */
	uint8_t *in;                   /* GW_IN_CAP bytes from the agent; [in_off, in_len) unconsumed */
	size_t in_off, in_len;
	struct sk_strbuf out;          /* to the agent, from out_off */
	size_t out_off;
	size_t lingered;
	/* the request in flight */
	CURL *easy;
	struct curl_slist *hdrs;
	char method[32];
	char api[64];
	char path[512];                /* for the audit line: query values dropped */
	uint64_t t0_ms;
	bool keep_alive, client_eof, client_err, audited;
	bool forwarded;                /* the request went upstream (decision allow) */
	bool body_chunked, body_done;
	int64_t body_left;
	struct sk_gw_chunked chunk;
	bool send_paused, recv_paused;
	/* the response */
	int status;
	bool head_sent, in_1xx, resp_chunked, resp_no_body, resp_close;
	struct sk_strbuf rhead;        /* upstream header lines, until the blank line */
	struct sk_secret_redact redact;
	char *secret_copy;             /* owned copy for redact (the cache may rotate mid-stream) */
	uint64_t bytes_in, bytes_out;  /* to the agent (whole response), to the upstream (body) */
	int fail_status;
	const char *fail_msg;          /* static; NULL: a generic message for fail_status */
	const char *fail_reason;
	struct gw_conn *prev, *next;
};

struct sk_gateway {
	struct sk_sidecar *sc;
	struct sk_gateway_limits lim;
	CURLM *multi;
	struct sk_timer curl_timer;
	struct sk_listener l4, l6;   /* net.h: back off when out of descriptors */
	struct gw_conn *conns;
	size_t n_conns;
	struct gw_api_state *apis;
	bool draining;                  /* sk_gateway_stop_accepting: no keep-alive reuse from now on */
	bool curl_inited;
	struct sk_curl curl;            /* libcurl, dlopen'ed by gw_curl_ready on the first forwarded request */
};

/* ---- gateway.c, for gw_curl.c ------------------------------------------------------------------------------ */

/* Re-registers c's epoll interest from its state and buffers. */
void gw_set_interest(struct gw_conn *c);
/* Closes the agent connection and frees c (its transfer, if any, is detached first). */
void gw_conn_free(struct gw_conn *c);
/* Writes queued bytes. Returns 0 (all or some written, or would block) or -1 when the agent is gone. */
int gw_flush_out(struct gw_conn *c);
/* The gateway's own answer (JSON error body, Connection: close), audited; c may be freed. */
void gw_respond_local(struct gw_conn *c, int status, const char *msg, const char *reason, uint32_t retry_after);
/* The request's audit line and metrics sample; once per request (later calls do nothing). */
void gw_req_end(struct gw_conn *c, int status, const char *reason);
/* After a response is complete and flushed: keep-alive → next request, else close (c may be freed). */
void gw_request_finished(struct gw_conn *c);

#endif
