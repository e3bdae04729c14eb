/* sidecar/gateway/gateway.h — the credential-injecting API gateway (docs/architecture.md#api-gateway). Owns: the api port
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
 * The component's modules: gateway.c (agent connections), gw_http (request head, routing, header
 * filters, chunked decoder, response text), gw_guard (path, methods, prefixes, caller token),
 * gw_ratelimit, gw_secret (secret files, redaction), gw_curl (the upstream transfer on libcurl's multi).
 * Their pure helpers are included here so gateway_test.c and fuzz_gw_head.c can test them without
 * sockets. */
#ifndef SK_SIDECAR_GATEWAY_H
#define SK_SIDECAR_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sidecar/gateway/guard.h"
#include "sidecar/gateway/http.h"
#include "sidecar/gateway/ratelimit.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/core/sidecar.h"

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

/* The API gateway's entry for the sidecar's server list (core/server.h): srv is a struct sk_gateway. */
extern const struct sk_server_ops sk_server_api;


#endif
