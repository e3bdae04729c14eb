/* sidecar/gateway/curl.h — the gateway's upstream side (part of gateway.h's component). Owns: libcurl's multi
 * handle on the sidecar's loop (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION driving
 * curl_multi_socket_action; libcurl itself dlopen'ed on the first forwarded request, see curl_dl.h), one
 * easy handle per forwarded request (only https, no redirects, no proxy, verified TLS, the secret header
 * added), the request body streamed from the agent (chunked decoded) and the response streamed back to it
 * (head built by gw_http's sk_gw_response_head and searched for the secret, body re-framed and redacted),
 * both back-pressured with CURL_READFUNC_PAUSE / CURL_WRITEFUNC_PAUSE, and the mapping of a failed
 * transfer to 502/504.
 * The curl callbacks only move bytes and set flags (gateway.c's re-entrancy rule). */
#ifndef SK_SIDECAR_GW_CURL_H
#define SK_SIDECAR_GW_CURL_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/gateway/conn.h"

struct sk_api;

/* Starts forwarding c's request (head already consumed from c->in) to api's upstream with the secret
 * header. Returns 0 with the transfer started (c is FORWARD), or < 0 when the agent was answered locally
 * (c may be freed). secret is copied. */
int gw_start_transfer(struct gw_conn *c, const struct sk_gw_req *req, const struct sk_api *api,
		      const char *rest, size_t rest_len, const char *secret, size_t slen, bool drop_auth);
/* Removes c's easy handle from the multi and frees it, its header list (wiped: it holds the secret) and
 * the redactor; NULL-safe on each part. */
void gw_detach_easy(struct gw_conn *c);
/* Hands every finished transfer to its connection (which may be freed). From loop callbacks only. */
void gw_check_multi(struct sk_gateway *g);
/* The loop timer libcurl asked for (g->curl_timer's callback). */
void gw_curl_timer_fired(struct sk_loop *l, struct sk_timer *t);
/* Frees the multi handle and the global libcurl state (at sk_gateway_free, after every connection). */
void gw_curl_close(struct sk_gateway *g);

#endif
