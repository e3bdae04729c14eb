/* sidecar/admin/wait_ready.h — `stockade-sidecar wait-ready`: the sidecar container's postStart hook.
 *
 * For a native sidecar the kubelet starts the next container only once the sidecar's postStart hook has
 * returned (and its startupProbe, if any, has succeeded). The hook polls the sidecar's own /readyz on the
 * admin port every few milliseconds — the same check the kubelet's probes make — and returns 0 the moment
 * it answers 200, so the agent starts without waiting for a 1 s probe period. Bounded: after the timeout
 * it exits non-zero with a message naming what is still missing (the last /readyz body, or why the admin
 * port did not answer); the kubelet then kills and restarts the sidecar (FailedPostStartHook event). */
#ifndef SK_SIDECAR_WAIT_READY_H
#define SK_SIDECAR_WAIT_READY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/err.h"

#define SK_WAIT_READY_TIMEOUT_MS 30000u
#define SK_WAIT_READY_INTERVAL_MS 5u

/* A readiness source: returns 1 when ready, 0 when not (why gets what is missing, NUL-terminated). */
typedef int (*sk_ready_source)(void *ctx, char *why, size_t why_len);

/* Calls src every interval_ms until it says ready (returns 0) or timeout_ms have passed since the call
 * (returns -ETIMEDOUT with err "not ready after N ms (P polls): <why of the last poll>"). src is called at
 * least once, and once more at the deadline. *polls (may be NULL) gets the number of calls. */
int sk_wait_ready_poll(sk_ready_source src, void *ctx, uint32_t timeout_ms, uint32_t interval_ms,
		       unsigned *polls, struct sk_err *err);

/* The real source: ctx is a struct sk_wait_http. One GET /readyz (Connection: close) with io_timeout_ms
 * for connect, send and receive; ready on status 200. why: "127.0.0.1:15000: Connection refused", or the
 * status line and body of a non-200 answer ({"ready":false,"missing":[...]}), led by the body's "reason"
 * when it has one: "dns_upstream unreachable 10.96.0.10:53 (no answer yet) (/readyz answered ...)". */
struct sk_wait_http {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char name[64];            /* the address as text, for messages */
	uint32_t io_timeout_ms;
};
int sk_wait_ready_http(void *ctx, char *why, size_t why_len);

/* The subcommand: argv[0] is "wait-ready". Options: --admin-addr ADDR (as the sidecar's; a missing or
 * wildcard host means 127.0.0.1; default port 15000), --timeout-ms N, --interval-ms N, --as UID:GID (when
 * root, drop to it first: common/handoff.h), --help. Returns an
 * exit code (enum sk_exit): 0 ready, 1 timed out, 2 bad usage; messages go to stderr. */
int sk_wait_ready_main(int argc, char **argv);

#endif
