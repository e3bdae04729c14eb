/* sidecar/admin/health.h — liveness and readiness for the admin port.
 *
 * Liveness: a loop timer beats every SK_HEALTH_BEAT_MS; /healthz fails once the last beat is older than
 * SK_HEALTH_STALE_MS. A fully blocked loop cannot answer /healthz at all (the kubelet's probe times out,
 * which is the failure we want); the heartbeat catches the partial case where the loop still serves
 * sockets but its timers no longer fire.
 * Readiness: pure checks over values the caller gathers (policy, listener fds, marker file, DNS upstream),
 * rendered as the JSON body of /readyz, and each unmet condition as one short reason ("dns_upstream
 * unreachable 10.96.0.10:53", "marker hash differs ...") — the same text in /readyz's body, the sidecar's
 * log line when readiness changes (lifecycle.c) and the wait-ready hook's message (the pod's event), so an
 * operator finds the cause wherever they look first. */
#ifndef SK_SIDECAR_HEALTH_H
#define SK_SIDECAR_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/util.h"
#include "sidecar/core/loop.h"

struct sk_policy;

#define SK_HEALTH_BEAT_MS 1000u
#define SK_HEALTH_STALE_MS 5000u

struct sk_health {
	uint64_t last_beat_ms;     /* monotonic */
	struct sk_timer timer;
};

/* Starts the heartbeat timer on l. (No test hook in here: e2e/admin.test.sh stops the whole process to
 * block the loop; health_test.c and admin_test.c drive a heartbeat that stops firing.) */
SK_MUST_USE int sk_health_start(struct sk_health *h, struct sk_loop *l, struct sk_err *err);
void sk_health_stop(struct sk_health *h, struct sk_loop *l);
void sk_health_beat(struct sk_health *h, uint64_t now_ms);
/* True while the last beat is at most SK_HEALTH_STALE_MS old; *age_ms (may be NULL) gets its age. */
bool sk_health_alive(const struct sk_health *h, uint64_t now_ms, uint64_t *age_ms);

/* What the readiness check looks at; gathered by the caller at request time. */
struct sk_ready_input {
	const struct sk_policy *policy;   /* NULL: no policy loaded */
	const int *proxy_fds;             /* listener fds of the proxy port (stream) */
	size_t n_proxy_fds;
	const int *dns_fds;               /* listener fds of the DNS port (datagram and stream) */
	size_t n_dns_fds;
	const char *marker_path;          /* the init's marker file */
	bool dns_upstream_ok;             /* an upstream resolver has answered */
	const char *dns_upstreams;        /* the upstreams as text ("10.96.0.10:53,[fd00::a]:53"); NULL: unknown */
	bool draining;                    /* SIGTERM received: not ready, on purpose */
};

/* Runs every check; returns true when ready. *json (owned, malloc'd) gets {"ready":true} or
 * {"ready":false,"reason":"<every unmet condition's reason, joined by "; ">",
 *  "missing":[{"check":"marker","reason":"marker hash differs ...","detail":"..."},...]}.
 * -ENOMEM → false with *json NULL. */
bool sk_ready_check(const struct sk_ready_input *in, char **json, size_t *json_len);

/* The same checks, only the reason: returns true when ready (reason ""), else false with reason the
 * unmet conditions' reasons joined by "; " (cut to len, always NUL-terminated). One reason a condition:
 *   draining (SIGTERM received)                  policy not loaded
 *   proxy_listener not listening on port P       dns_listener port P not bound for udp|tcp|udp and tcp
 *   marker not configured                        marker absent PATH (the init has not written it)
 *   marker unreadable: <why>                     marker hash differs: marker H1, policy H2
 *   dns_upstream unreachable ADDR[,ADDR...] (no answer yet) */
bool sk_ready_reason(const struct sk_ready_input *in, char *reason, size_t len);

/* Asks the kernel whether fd is a socket of `type` (SOCK_STREAM/SOCK_DGRAM) bound to `port` and, for a
 * stream socket, listening. */
bool sk_fd_listening(int fd, int type, uint16_t port);

#endif
