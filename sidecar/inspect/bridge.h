/* sidecar/inspect/bridge.h — the TLS bridge of one inspected connection: terminates the agent's TLS with
 * a leaf for its SNI (leaf.h), opens TLS to the real server (upstream.h), and moves the plaintext between
 * them through a plaintext filter (filter.h): every chunk, both ways, is shown to it before anything of it
 * goes on, and the bridge sends what it says (PASS: the chunk, written straight from the read buffer;
 * EMIT: its out buffers; FAIL: its answer to the sender, then both sides closed).
 *
 * Order, so nothing is decided on an unverified server and no leaf is shown for one:
 *   1. upstream handshake (SSL_connect, SNI = the agent's, the server's chain and name verified);
 *   2. the agent's handshake (SSL_accept on the client fd; the bytes of its hello the caller already
 *      read are given as client_prefix and read first), with the leaf for the SNI; ALPN answered with the protocol the
 *      server chose, and only if the agent offered it (else no_application_protocol: the two ends would
 *      speak different protocols); a ClientHello naming another host than `sni` is refused;
 *   3. relay: 16 KiB reads, each judged by the filter and written out before the next read on that side
 *      (one buffer per direction, nothing copied beyond OpenSSL's own for a PASS; what a filter emits
 *      queues behind what that side already owes, so answers never overtake bytes before them),
 *      close_notify passed on as close_notify, a bare TCP close as a bare close (a truncated stream stays
 *      visibly truncated). A filter's close_after stops reading both ways; once everything queued is
 *      written both sides get close_notify. Which filter: cfg's, or the one select_filter picks once
 *      the protocol is agreed (sk_bridge_alpn), so HTTP/1 and HTTP/2 each get theirs.
 * A failure fails closed, never falls back to passthrough: an upstream failure answers the agent with a
 * fatal handshake_failure alert before its hello is read; sk_bridge_reason says what failed, for the audit
 * line (upstream_cert_invalid, upstream_tls, client_tls, client_sni_mismatch, alpn_mismatch,
 * or the filter's FAIL reason, client_data_refused when it gave none).
 *
 * A pure state machine over two non-blocking fds: the caller's loop calls sk_bridge_step when either fd is
 * ready and registers the epoll interest it returns for each (0: none now); timeouts are the caller's (a
 * timer on the loop). It owns its SSL objects, not the fds. Single-threaded; the process must ignore
 * SIGPIPE, as stockade-sidecar does (a write to a closed peer is then an error, not a death). */
#ifndef SK_SIDECAR_INSPECT_BRIDGE_H
#define SK_SIDECAR_INSPECT_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/util.h"

struct sk_leaf_cache;
struct sk_upstream;
struct sk_bridge_env;
struct sk_bridge;

#define SK_BRIDGE_BUF 16384
/* Reads per direction in one step: a fast pair of peers cannot hold the loop; a step that stops there asks
 * for EPOLLOUT on the receiving fd, which is writable, so the loop comes back at once. */
#define SK_BRIDGE_STEP_READS 16

/* What every bridge shares: the agent-facing SSL_CTX, the leaves, the upstream context (both borrowed;
 * they must outlive the env). *out owned. */
SK_MUST_USE int sk_bridge_env_new(struct sk_leaf_cache *leaves, struct sk_upstream *upstream,
				  struct sk_bridge_env **out, struct sk_err *err);
void sk_bridge_env_free(struct sk_bridge_env *env);

struct sk_pt_filter;

struct sk_bridge_cfg {
	const char *sni;                   /* the agent's SNI, or the destination address as text (copied) */
	bool client_alpn_known;            /* the caller read the agent's ALPN offer from its hello: the
	                                    * server is offered only what the agent offered (of the configured
	                                    * list); false: the configured list is offered */
	const unsigned char *client_alpn;  /* that offer (wire format), NULL/0 when the hello had none */
	size_t client_alpn_len;
	/* The bytes of the agent's TLS the caller already read off client_fd (its peek consumed the
	 * ClientHello): the agent's handshake reads them first (copied). */
	const unsigned char *client_prefix;
	size_t client_prefix_len;
	/* The plaintext filter (filter.h, borrowed: it must outlive the bridge); NULL: everything passes. */
	struct sk_pt_filter *filter;
	/* When set, called once both handshakes are done with the protocol the ends agreed on
	 * (sk_bridge_alpn, "" for none); what it returns replaces filter (borrowed likewise), and NULL fails
	 * the bridge with alpn_mismatch (a protocol nobody can check). */
	struct sk_pt_filter *(*select_filter)(void *ctx, const char *alpn);
	void *ctx;
};

/* The epoll interest (EPOLLIN, EPOLLOUT) the bridge wants on each fd until the next step. */
struct sk_bridge_want {
	uint32_t client;
	uint32_t upstream;
};

struct sk_bridge_stats {
	uint64_t to_upstream;    /* plaintext bytes written to the server (the agent's that went on, and
	                          * what the filter emitted toward it) */
	uint64_t to_client;      /* plaintext bytes written to the agent (the server's, and the filter's
	                          * answers) */
};

/* A bridge for the two connected non-blocking fds (borrowed: the caller closes them after
 * sk_bridge_free). Nothing is sent before the first step. *out owned. */
SK_MUST_USE int sk_bridge_new(struct sk_bridge_env *env, const struct sk_bridge_cfg *cfg, int client_fd,
			      int upstream_fd, struct sk_bridge **out, struct sk_err *err);
void sk_bridge_free(struct sk_bridge *b);

/* Advances everything that can advance without blocking (fd and events: what fired, -1 and 0 for the
 * first call; a spurious call is harmless) and fills want. Returns 1 while running, 0 when both
 * directions are closed, < 0 (err, and sk_bridge_reason) when the bridge failed: the caller closes both
 * fds. After 0 or < 0, further steps return the same. */
SK_MUST_USE int sk_bridge_step(struct sk_bridge *b, int fd, uint32_t events, struct sk_bridge_want *want,
			       struct sk_err *err);

/* The failure's audit reason (static), NULL while none. */
const char *sk_bridge_reason(const struct sk_bridge *b);
/* The protocol both ends agreed on ("" when none), valid once the agent's handshake is done. */
const char *sk_bridge_alpn(const struct sk_bridge *b);
struct sk_bridge_stats sk_bridge_stats(const struct sk_bridge *b);

#endif
