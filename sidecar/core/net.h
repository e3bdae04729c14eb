/* sidecar/core/net.h — the sidecar's sockets. Owns: opening listening sockets (address, port, backlog,
 * SO_REUSEADDR, the IPv6 rule below), accepting with a back-off when the process is out of descriptors
 * or memory (a listener that stays readable while accept4 fails with EMFILE would make the loop spin at
 * 100 % CPU: it is taken off the loop for SK_ACCEPT_BACKOFF_MS instead, and put back by a timer), and the
 * conversions between struct sockaddr_storage and struct sk_addr + port.
 *
 * IPv6 rule: a listener on an IPv6 address is v6-only when the address is specific (::1 and an IPv4
 * listener on 127.0.0.1 serve the two loopbacks separately, and a mapped address never reaches the v6
 * one); on :: it is dual-stack (one socket serves a probe whichever family the pod IP has). A listener
 * whose family the kernel lacks (no IPv6 in the pod) fails with -EAFNOSUPPORT / -EADDRNOTAVAIL: the
 * caller decides whether that is fatal and says so.
 *
 * Health: a listener that could not be put back on the loop after a back-off keeps trying every
 * SK_ACCEPT_BACKOFF_MS, and sk_listener_ok() is false meanwhile (readiness reports it). */
#ifndef SK_SIDECAR_NET_H
#define SK_SIDECAR_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/err.h"
#include "policy/addr.h"
#include "sidecar/core/loop.h"
#include "common/util.h"

#define SK_ACCEPT_BACKOFF_MS 100
#define SK_ACCEPT_BURST 128   /* most connections taken per readiness event: a flood cannot starve the loop */

struct sk_listener;
/* One accepted connection: fd is non-blocking and close-on-exec, owned by the callee from here on. */
typedef void (*sk_accept_fn)(struct sk_listener *ls, int fd, const struct sockaddr_storage *peer);

struct sk_listener {
	struct sk_io io;           /* io.fd: the listening socket, -1 when closed */
	struct sk_timer retry;     /* re-arms accepting after a back-off */
	struct sk_loop *loop;
	sk_accept_fn on_accept;
	void *ctx;                 /* the owner's */
	const char *what;          /* "proxy", "dns", "admin", "api": for messages */
	bool rearm_failed;         /* the last attempt to resume accepting failed */
	uint64_t backoffs;         /* times accepting was paused for lack of descriptors/memory */
};

/* Opens a TCP listener on a:port and registers it on l. Returns 0 or < 0 with err naming what and the
 * endpoint. On failure ls->io.fd is -1 and nothing is registered. */
SK_MUST_USE int sk_listener_open(struct sk_listener *ls, struct sk_loop *l, const struct sk_addr *a, uint16_t port,
		     int backlog, const char *what, sk_accept_fn on_accept, void *ctx, struct sk_err *err);
/* Deregisters and closes (no-op when closed). */
void sk_listener_close(struct sk_listener *ls);
/* Open and accepting (or backing off on schedule). */
bool sk_listener_ok(const struct sk_listener *ls);

/* Opens a socket of type (SOCK_STREAM or SOCK_DGRAM) bound to a:port, non-blocking, close-on-exec,
 * SO_REUSEADDR, with the IPv6 rule above. Returns the fd or < 0 with err filled. */
SK_MUST_USE int sk_net_bind(int type, const struct sk_addr *a, uint16_t port, const char *what, struct sk_err *err);

/* 127.0.0.1 (AF_INET) or ::1 (AF_INET6): where the sidecar's pod-local listeners live. */
struct sk_addr sk_net_loopback(int family);

void sk_addr_from_sockaddr(const struct sockaddr_storage *ss, struct sk_addr *a, uint16_t *port);
socklen_t sk_sockaddr_from_addr(const struct sk_addr *a, uint16_t port, struct sockaddr_storage *ss);

#endif
