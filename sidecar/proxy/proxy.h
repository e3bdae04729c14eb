/* sidecar/proxy/proxy.h — the transparent proxy (docs/architecture.md#transparent-proxy). Owns: the listeners on the proxy port on
 * 127.0.0.1 and ::1 (where nftables `redirect` delivers the agent's TCP), reading the original
 * destination (SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST), peeking the first bytes under a deadline and a
 * cap into a per-connection buffer (every byte read is kept and replayed upstream before the relay),
 * classification (TLS ClientHello SNI, HTTP/1.x Host, h2c prior knowledge, other TCP), the decision
 * (loop check, policy matcher, name↔IP binding hook, mode audit), deny responses (TLS access_denied
 * alert, HTTP 403, otherwise RST), the upstream connect, connection limits, and one audit line per
 * connection. Its files share sidecar/proxy/internal.h (which says which file holds what); other rooms
 * include this header only.
 *
 * Connection states (one struct per accepted connection, freed on close):
 *   PEEK     → CONNECT  the bytes decided allow (or would_deny in mode audit): upstream connect started
 *   PEEK     → CLOSING  deny with a response to deliver (TLS alert / 403): written, then drain + close
 *   PEEK     → RESOLVE  the name is allowed but not bound to the destination: the sidecar resolves it
 *                       itself (sk_resolve_hooks); the client is not read meanwhile
 *   PEEK     → (freed)  deny by RST, peek deadline, client gone
 *   RESOLVE  → PEEK     the resolution's outcome (bound: allow; mismatch or failure: deny), acted on at
 *                       once as a peek's verdict (→ CONNECT, CLOSING or freed)
 *   RESOLVE  → (freed)  shutdown (audit line: deny, shutdown)
 *   CONNECT  → RELAY    at once (the relay's first send finds out whether the connect is done; a
 *                       server-first connection waits for it): the peeked bytes go first, then splice
 *   CONNECT  → (freed)  upstream refused / timed out (also while the relay waits for it): client reset
 *   RELAY    → (freed)  both sides closed, a reset, or idle timeout: audit line with byte counts (a
 *                       request head judged while relaying may wait on a resolution; the state stays RELAY)
 *   CLOSING  → (freed)  client EOF or linger timer */
#ifndef SK_SIDECAR_PROXY_H
#define SK_SIDECAR_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/addr.h"
#include "sidecar/core/sidecar.h"

/* The TLS alert sent on deny: fatal (2) access_denied (49) in a TLS 1.2-versioned alert record. */
#define SK_TLS_ALERT_ACCESS_DENIED "\x15\x03\x03\x00\x02\x02\x31"

/* Creates the proxy on sc (borrowed for the proxy's life); its limits are sc->limits (config.h). Listens on 127.0.0.1 and ::1 at
 * sc->policy->ports.proxy unless `no_listen` (tests feed connections with sk_proxy_adopt). */
int sk_proxy_new(struct sk_sidecar *sc, bool no_listen, struct sk_proxy **out, struct sk_err *err);
/* Stops accepting (SIGTERM drain); connections in flight go on. */
void sk_proxy_stop_accepting(struct sk_proxy *p);
/* Closes every connection (each gets its audit line) and frees the proxy. */
void sk_proxy_free(struct sk_proxy *p);
size_t sk_proxy_active(const struct sk_proxy *p);
/* The listening fds (-1 when absent), for readiness checks. */
int sk_proxy_listen_fd(const struct sk_proxy *p, int family);

/* The proxy's entry for the sidecar's server list (core/server.h): srv is a struct sk_proxy. */
extern const struct sk_server_ops sk_server_proxy;

/* Takes an accepted, connected socket (ownership passes to the proxy even on failure) whose original
 * destination is already known, and runs it through the state machine. The accept path uses this; unit
 * tests use it with socketpairs. Returns 0 or < 0 when the connection was refused (limits) or failed. */
int sk_proxy_adopt(struct sk_proxy *p, int fd, const struct sk_addr *src, uint16_t src_port,
		   const struct sk_addr *dst, uint16_t dst_port, struct sk_err *err);

#endif
