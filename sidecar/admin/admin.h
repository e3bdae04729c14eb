/* sidecar/admin/admin.h — the admin port (docs/architecture.md#admin-port): a small HTTP/1.1 server in the sidecar's loop serving
 * /healthz, /readyz, /metrics, /denials and /ca.pem (the TLS-inspection CA, when one is configured). Read-only: nothing here changes state.
 *
 * Two layers, so the protocol is unit-testable without sockets:
 *   - sk_admin_parse_head() and sk_admin_handle() are pure: bytes → request line, request → response;
 *   - sk_admin_start() runs the socket side on a struct sk_loop: one request per connection
 *     (Connection: close), request head capped at SK_ADMIN_HEAD_MAX, whole request under a deadline of
 *     SK_ADMIN_DEADLINE_MS, at most SK_ADMIN_MAX_CONNS connections at once. */
#ifndef SK_SIDECAR_ADMIN_H
#define SK_SIDECAR_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/err.h"
#include "sidecar/admin/health.h"
#include "sidecar/core/loop.h"

struct sk_metrics;
struct sk_denials;
struct sk_policy;

#define SK_ADMIN_HEAD_MAX 8192
#define SK_ADMIN_DEADLINE_MS 3000
#define SK_ADMIN_MAX_CONNS 32
#define SK_ADMIN_DENIALS_DEFAULT 256

/* Everything a request may look at, gathered at request time (all borrowed). */
struct sk_budget_table;

struct sk_admin_view {
	const struct sk_metrics *metrics;
	const struct sk_denials *denials;
	const struct sk_policy *policy;       /* the snapshot in force, NULL if none */
	const struct sk_health *health;
	struct sk_budget_table *budgets;      /* budget counters for /metrics (budget.h); may be NULL */
	uint64_t now_ms;                      /* monotonic, same clock as the heartbeat */
	struct sk_ready_input ready;          /* ready.policy is set from `policy` by the handler */
	const char *ca_pem;                   /* the inspection CA's certificate PEM; NULL: none (404) */
	size_t ca_pem_len;
};

struct sk_admin_response {
	int status;
	const char *reason;         /* "OK", "Service Unavailable", ... (static) */
	const char *content_type;   /* static */
	char *body;                 /* owned, malloc'd */
	size_t body_len;
	bool allow_header;          /* 405: add "Allow: GET, HEAD" */
};

struct sk_admin_request {
	char method[16];
	char target[1024];
};

/* Parses a request head from buf. Returns the head length (> 0, through the blank line) when complete,
 * 0 when more bytes are needed, -EINVAL when malformed (400), -E2BIG when the method or target is over
 * its limit (414/400). Accepts CRLF or bare LF line ends; HTTP/1.0 and HTTP/1.1 only. */
int sk_admin_parse_head(const char *buf, size_t len, struct sk_admin_request *req);

/* Routes one request. Returns 0 or -ENOMEM; resp->body must be freed by the caller. HEAD is answered
 * like GET (the caller drops the body); any other method is 405. */
int sk_admin_handle(const struct sk_admin_view *v, const char *method, const char *target,
		    struct sk_admin_response *resp);

/* Fills a canned error response (400, 405, 408, 413, 414, 431, 503). */
void sk_admin_error_response(int status, struct sk_admin_response *resp);

/* Serialises status line, headers and (unless head_only) body into one malloc'd buffer. */
int sk_admin_serialize(const struct sk_admin_response *resp, bool head_only, char **out, size_t *len);

/* The socket side. `gather` fills the view for each request (so a reloaded policy or a changed flag is
 * seen at once); ctx is handed back to it. */
typedef void (*sk_admin_gather_fn)(void *ctx, struct sk_admin_view *out);
struct sk_admin;

int sk_admin_start(struct sk_loop *l, const struct sockaddr *addr, socklen_t addrlen, sk_admin_gather_fn gather,
		   void *ctx, struct sk_admin **out, struct sk_err *err);
/* Closes the listener and every connection. */
void sk_admin_free(struct sk_admin *a);
/* The listening fd (for tests and readiness). */
int sk_admin_fd(const struct sk_admin *a);

#endif
