/* injector/server.h — stockade-injector's HTTPS server: one listening socket, an acceptor thread and a
 * fixed pool of worker threads, each serving one connection at a time (TLS handshake, then HTTP/1.1
 * requests, kept alive while nobody waits) with non-blocking sockets polled against a deadline.
 *
 * What it owns: the bounds. At most `threads` connections are served at once and `max_queue` wait; beyond
 * that a connection is closed at accept. The handshake and every request (head and body) must arrive
 * within request_timeout_ms of their start, and a kept-alive connection is closed after idle_timeout_ms
 * without a request or as soon as another connection is waiting: a slow or idle client holds one worker
 * for a bounded time and never the others. Routes: POST /mutate (review.h), GET /healthz (the process
 * answers), GET /readyz (the serving certificate is loaded and within its validity). The certificate files
 * are checked every reload_ms by the acceptor (tls.h). */
#ifndef SK_INJECTOR_SERVER_H
#define SK_INJECTOR_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct sk_err;
struct sk_tls;
struct sk_review_cfg;

struct sk_server_cfg {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	uint32_t threads, max_queue;
	uint32_t request_timeout_ms, idle_timeout_ms, max_requests, reload_ms;
	struct sk_tls *tls;                    /* borrows */
	const struct sk_review_cfg *review;    /* borrows */
};

/* Parses "PORT", ":PORT", "HOST:PORT", "[V6]:PORT" (numeric hosts; no host: all interfaces, dual stack). */
int sk_server_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, struct sk_err *err);

/* Binds, serves until stop_fd becomes readable (main's signalfd), then stops accepting, lets every
 * worker finish its connection and returns 0; or -errno when it cannot start (err filled). */
int sk_server_run(const struct sk_server_cfg *cfg, int stop_fd, struct sk_err *err);

#endif
