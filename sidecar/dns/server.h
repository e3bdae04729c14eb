/* sidecar/dns/server.h — the DNS filter as a server on the sidecar's loop (docs/architecture.md#dns-filter): UDP and TCP
 * listeners on the policy's dns port at 127.0.0.1 and ::1 (where the init's nat redirect delivers the
 * agent's port-53 traffic), forwarding through dns_upstream (UDP with retries across servers, TCP after
 * a truncated answer), decisions by dns_filter, bindings into a dns_bind table that it owns and attaches
 * to the sidecar (sk_sidecar_attach_bindings) for the proxy's name↔IP check.
 *
 * Upstream sockets (RFC 5452): every query gets its own UDP socket per server it is sent to, connected to
 * that server from a port the kernel draws at random, and closed when the query ends (answered, given
 * up, or its client gone); an answer counts only if it arrives on that socket (so from that server's
 * address and port, to that port) with the query's random ID and question. There is no shared upstream
 * socket: a spoofer must guess the port and the ID. At most STOCKADE_DNS_UPSTREAM_SOCKETS (default 1024)
 * such sockets are open at once (a file descriptor each); a query that finds the pool exhausted is
 * answered SERVFAIL at once (a fallback resolution gets -EBUSY), a retry that finds it exhausted waits
 * for its deadline. TCP retries (after TC=1) use a fresh connection, so a random port too.
 *
 * Also owns the sidecar's own resolution on a binding miss (docs/architecture.md#transparent-proxy "or the sidecar's own
 * resolution of it"): it fills sc->resolve (struct sk_resolve_hooks, sidecar.h) at start and clears it
 * (start = NULL) at free, dropping what is in flight without calling done. start(name, addr) asks the
 * upstreams for A (IPv4, IPv4-mapped IPv6 included) or AAAA (IPv6) through the same filter as the agent's
 * queries (sk_dns_filter_query on the same question: type list, dns.maxQueryLength, name checks, the rule;
 * a denial is audited as the agent's would be and start returns -EPERM), the same answer cache (a hit binds
 * its addresses again and ends the request from a zero timer, with no query), the same `queries` budget
 * (charged once per upstream query; spent: audited budget_exhausted, start returns -EDQUOT; mode audit
 * charges and goes on), and the same pending table and
 * socket pool (random IDs and ports, rotation and retries, TCP after TC=1), under
 * an overall deadline of SK_RESOLVE_TIMEOUT_MS (2 s). The answer goes through dns_filter exactly as an
 * agent's would (CNAME chain, rebinding refusal, TTL cap) and its A/AAAA are bound to the name; done then
 * gets MATCH when addr is among them, MISMATCH when the name resolved (NOERROR, possibly with no record
 * of that family) without it, FAILED on NXDOMAIN, SERVFAIL, REFUSED (rebinding included), a malformed
 * answer or the deadline. done is only ever called from the loop, never from inside start. start returns
 * 0, or without calling done: -ENOENT when (name, addr) is in the negative cache (a MISMATCH in the last
 * SK_RESOLVE_NEG_TTL_MS = 10 s; SK_RESOLVE_NEG_MAX = 1024 pairs, oldest evicted), -EBUSY beyond
 * SK_RESOLVE_MAX_INFLIGHT = 256 waiting requests (or when the pending table or the socket pool is full),
 * -EINVAL for a bad name or family, -EPERM / -EDQUOT (above), -ENOMEM. Requests for the same (name, family)
 * share one upstream query, each compared with its own addr; cancelling the last one drops the query. A
 * resolution's denials (filter, budget, rebinding) get the agent's dns audit line with src null (the
 * sidecar asked) and proto udp; its queries are counted in the dns metrics as the agent's are; the proxy
 * audits the connection that asked. Its answers go into the answer cache. Limits and the pure parts:
 * dns_resolve.h.
 *
 * Audit: one NDJSON line (event "dns") per local denial, refused type/class/length, rebinding refusal
 * and, in audit mode, per query that enforce mode would have denied; allowed queries are counted in the
 * metrics only (a line per lookup would drown the connection lines that matter).
 * Settings: sc->dns_cfg (struct sk_dns_settings, config.h; flags --resolv-conf, --dns-bindings,
 * --dns-strict-chain (see dns_filter.h), --dns-probe-ms: period of the ". NS" probe that keeps
 * sc->dns_upstream_ok (/readyz) in step with the upstreams' liveness, 0 = off; --dns-upstream-sockets:
 * the socket pool's bound, above; or their STOCKADE_* variables). */
#ifndef SK_SIDECAR_DNS_SERVER_H
#define SK_SIDECAR_DNS_SERVER_H

#include "common/err.h"
#include "sidecar/core/sidecar.h"

struct sk_dns_srv;

/* Binds the listeners and registers them on sc->loop (upstream sockets are opened per query). Returns 0
 * or < 0 with err naming the step (no usable upstream is an error: the pod would resolve nothing). *out
 * owned. */
int sk_dns_server_start(struct sk_sidecar *sc, struct sk_dns_srv **out, struct sk_err *err);
/* Closes the listeners (drain); queries in flight still get their answers. */
void sk_dns_server_stop_accepting(struct sk_dns_srv *s);
void sk_dns_server_free(struct sk_dns_srv *s);

/* The DNS server's entry for the sidecar's server list (core/server.h): srv is a struct sk_dns_srv. */
extern const struct sk_server_ops sk_server_dns;

#endif
