/* sidecar/dns_server.h — the DNS filter as a server on the sidecar's loop (DESIGN.md §5.2): UDP and TCP
 * listeners on the policy's dns port at 127.0.0.1 and ::1 (where the init's nat redirect delivers the
 * agent's port-53 traffic), forwarding through dns_upstream (UDP with retries across servers, TCP after
 * a truncated answer), decisions by dns_filter, bindings into a dns_bind table that it owns and attaches
 * to the sidecar (sk_sidecar_attach_bindings) for the proxy's name↔IP check.
 *
 * Audit: one NDJSON line (event "dns") per local denial, refused type/class/length, rebinding refusal
 * and, in audit mode, per query that enforce mode would have denied; allowed queries are counted in the
 * metrics only (a line per lookup would drown the connection lines that matter).
 * Environment: STOCKADE_RESOLV_CONF (default /etc/resolv.conf), STOCKADE_DNS_BINDINGS (default 100000),
 * STOCKADE_DNS_STRICT_CHAIN=1 (see dns_filter.h), STOCKADE_DNS_PROBE_MS (default 5000; 0 = off): period
 * of the ". NS" probe that keeps sc->dns_upstream_ok (/readyz) in step with the upstreams' liveness. */
#ifndef SK_SIDECAR_DNS_SERVER_H
#define SK_SIDECAR_DNS_SERVER_H

#include "common/err.h"
#include "sidecar/sidecar.h"

struct sk_dns_srv;

/* Binds the listeners and the upstream sockets, registers them on sc->loop. Returns 0 or < 0 with err
 * naming the step (no usable upstream is an error: the pod would resolve nothing). *out owned. */
int sk_dns_server_start(struct sk_sidecar *sc, struct sk_dns_srv **out, struct sk_err *err);
/* Closes the listeners (drain); queries in flight still get their answers. */
void sk_dns_server_stop_accepting(struct sk_dns_srv *s);
void sk_dns_server_free(struct sk_dns_srv *s);

#endif
