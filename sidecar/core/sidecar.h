/* sidecar/core/sidecar.h — the sidecar process as one object, passed explicitly to every server in it (no
 * globals): the event loop, the policy snapshot in force, metrics, the denials ring, the name↔IP binding
 * table, the audit sink and the servers' settings (config.h). main.c builds it; each server (the proxy, the DNS
 * filter, the admin port, the API gateway, each in its own room) borrows it for its whole life. Its
 * functions are sidecar.c's; it knows no server, and where one server needs another (the proxy asks the
 * DNS filter for bindings and for fallback resolution) it goes through the hooks below, which the
 * serving room fills in.
 *
 * Policy: `policy` is an immutable snapshot. A reload swaps the pointer whole (sk_sidecar_swap_policy)
 * and frees the old one at once: no connection keeps a pointer into a snapshot past the synchronous
 * decision (it copies the rule index and names it needs), so there is nothing to wait for. */
#ifndef SK_SIDECAR_SIDECAR_H
#define SK_SIDECAR_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/addr.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/budget.h"
#include "sidecar/core/config.h"  /* the settings groups: struct sk_proxy_limits, sk_gateway_limits, sk_dns_settings */
#include "sidecar/core/loop.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/core/server.h"

struct sk_policy;
struct sk_metrics;
struct sk_denials;
struct sk_bind_table;
struct sk_proxy;
struct sk_gateway;
struct sk_bridge_env;

/* The name↔IP binding check, filled by the DNS filter (dns/server.c, through sk_sidecar_attach_bindings,
 * with hooks over its struct sk_bind_table). While name_bound is NULL the proxy does not check bindings: a HOST rule's
 * allow then stands on the SNI/Host alone and the audit line says "binding":"unchecked". */
typedef bool (*sk_bind_name_fn)(const char *name, void *arg);
struct sk_bind_hooks {
	void *ctx;
	/* Was `name` handed out by the DNS filter for `addr` (and not expired)? */
	bool (*name_bound)(void *ctx, const struct sk_addr *addr, const char *name);
	/* For plain TCP: calls cb with each name bound to addr, newest first, until cb returns false. */
	void (*names)(void *ctx, const struct sk_addr *addr, sk_bind_name_fn cb, void *arg);
};

/* Fallback resolution (docs/architecture.md#transparent-proxy "or the sidecar's own resolution of it"): when a connection's
 * name is allowed but not bound to its destination (a client that resolved outside the filter: /etc/hosts,
 * curl --resolve, a JVM cache older than the binding), the proxy asks the DNS server to resolve the name
 * itself. Filled by the DNS server (dns/fallback.c, at dns/server.c's start); while start is NULL the proxy denies a miss at once. */
enum sk_resolve_result {
	SK_RESOLVE_MATCH = 0,   /* addr is among the name's A/AAAA answers (now bound in the table) */
	SK_RESOLVE_MISMATCH,    /* the name resolved, but not to addr (or recently did not: negative cache) */
	SK_RESOLVE_FAILED,      /* no usable answer (timeout, SERVFAIL, NXDOMAIN, busy) */
};
struct sk_resolve_req;
typedef void (*sk_resolve_done_fn)(void *arg, enum sk_resolve_result r);
struct sk_resolve_hooks {
	void *ctx;
	/* Resolves `name` (normalised; the caller has checked the policy allows it) for addr's family (A for
	 * IPv4, AAAA for IPv6) through the upstream, binds the answers as the filter would, and calls done
	 * once, never from inside start. The question goes through the DNS filter as the agent's would
	 * (its checks, audit line, cache and `queries` budget). Returns 0 with *req set (a handle for
	 * cancel), or < 0 when it cannot start (too many in flight, the negative cache already knows, the
	 * filter refused the question or its rule's budget is spent: done is then not called, and the
	 * return says which: -EBUSY, -ENOENT for a cached mismatch, -EPERM, -EDQUOT); the caller denies. */
	int (*start)(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
		     void *arg, struct sk_resolve_req **req);
	/* The connection went away first: done is never called for req. */
	void (*cancel)(void *ctx, struct sk_resolve_req *req);
};

struct sk_sidecar {
	struct sk_loop *loop;            /* owned */
	struct sk_policy *policy;        /* owned; the snapshot in force */
	uint64_t policy_gen;             /* bumped by every sk_sidecar_swap_policy (caches key on it) */
	struct sk_metrics *metrics;      /* owned; may be NULL (then nothing is counted) */
	struct sk_denials *denials;      /* owned; may be NULL */
	struct sk_bind_table *bindings;  /* owned by the DNS filter; NULL until it starts */
	struct sk_bind_hooks bind;
	struct sk_resolve_hooks resolve; /* filled by the DNS server; start NULL until then */
	struct sk_audit audit;           /* writes to stdout; pushes denials */
	/* Settings (config.h), copied from the parsed config by main; unit tests fill them with
	 * sk_proxy_limits_default() etc. Strings borrow from the config, which outlives the servers. */
	struct sk_proxy_limits limits;   /* the proxy's */
	struct sk_gateway_limits api_limits;
	struct sk_dns_settings dns_cfg;
	/* Budget counters (budget.h), shared by the proxy and the DNS server; follow the policy in force
	 * (sk_sidecar_swap_policy, sk_sidecar_budgets). A zeroed table is a valid empty one; main frees it at exit. */
	struct sk_budget_table budgets;
	uint64_t budgets_gen;            /* policy_gen the table last followed */
	bool budgets_synced;
	/* The `secrets:` values (secret_store.h), read at start and on each use (a stat per secret: a rotated
	 * file takes effect without a restart; a reload's secrets are followed by index and path). */
	struct sk_secret_store secret_store;
	struct sk_secret_value *secret_values;   /* owned; policy->n_secrets entries after sk_sidecar_secrets */
	size_t secret_values_cap;
	/* The loop time and policy_gen of the last sync: one look at the files per loop turn, however many
	 * calls it makes (an HTTP/2 request calls once per header field). synced false: none yet. */
	uint64_t secret_sync_ms, secret_sync_gen;
	bool secret_synced;
	char secret_err[SK_ERR_MSG_MAX];         /* the last failure logged (logged again only when it changes) */
	struct sk_proxy *proxy;          /* owned; NULL until started */
	/* Its listening fd per family (-1 when not listening), for the admin port's readiness; set by
	 * sk_proxy_new, so the admin room asks without knowing the proxy's. */
	int (*proxy_listen_fd)(const struct sk_proxy *p, int family);
	struct sk_gateway *gateway;      /* owned; the API gateway (gateway.h); NULL until started */
	/* TLS inspection (inspect/): what every bridge shares (main builds it with the CA, the leaf cache
	 * and the upstream context, and frees them after the servers); NULL when it could not be built
	 * (then a connection an inspect rule allows is denied, never passed through). Borrowed here. */
	struct sk_bridge_env *inspect_env;
	const char *inspect_ca_pem;      /* the CA certificate for the admin port's /ca.pem; NULL: none */
	size_t inspect_ca_pem_len;
	/* Readiness inputs the DNS server sets for /readyz (lifecycle.c reads them): its listening
	 * sockets (UDP and TCP, -1 unused) and whether an upstream resolver has answered yet. */
	int dns_fds[4];
	size_t n_dns_fds;
	bool dns_upstream_ok;
	/* The DNS upstreams as text ("10.96.0.10:53,[fd00::a]:53"), for the reason /readyz and the log give
	 * when none answers; main.c fills it from the policy at start ("" when unknown). */
	char dns_upstreams[160];
	/* The running servers (server.h), in start order; owned from sk_sidecar_add_server on. */
	struct sk_server servers[SK_SIDECAR_SERVERS_MAX];
	size_t n_servers;
};

/* Installs the binding hooks (copied; their ctx is the sidecar, so they read sc->bindings) and
 * sc->bindings = t (borrowed). */
void sk_sidecar_attach_bindings(struct sk_sidecar *sc, struct sk_bind_table *t, const struct sk_bind_hooks *hooks);
/* The budget table, following the policy in force (synced by sk_sidecar_swap_policy, or here first for a
 * policy set on the struct directly, as main sets the first; a failed sync is logged and leaves every
 * budgeted rule refused: budget.h). Borrowed. */
struct sk_budget_table *sk_sidecar_budgets(struct sk_sidecar *sc);
/* Makes p the snapshot in force, the audit trail name it and the budget table follow it; returns the
 * previous one (owned by the caller, to free). */
struct sk_policy *sk_sidecar_swap_policy(struct sk_sidecar *sc, struct sk_policy *p);
/* The values of the policy's `secrets:` now, by index (NULL when it has none, or on out of memory: then
 * only placeholders are looked for). Borrowed until the next call. A file that cannot be read is logged
 * (its path, never bytes) and its value is NULL: its placeholder is never swapped. */
const struct sk_secret_value *sk_sidecar_secrets(struct sk_sidecar *sc);
void sk_sidecar_free_secrets(struct sk_sidecar *sc);   /* wipes them (main, at exit) */

/* The server list (sidecar.c). add: sc owns srv from now on (on failure it is freed at once; a NULL srv
 * is a server that is not running and is skipped). */
int sk_sidecar_add_server(struct sk_sidecar *sc, const struct sk_server_ops *ops, void *srv, struct sk_err *err);
void sk_sidecar_stop_accepting(struct sk_sidecar *sc);     /* every server that stops for a drain */
size_t sk_sidecar_active(const struct sk_sidecar *sc);     /* in-flight work the drain waits for */
void sk_sidecar_log_active(const struct sk_sidecar *sc, const char *what);  /* one log line, per server */
void sk_sidecar_free_servers(struct sk_sidecar *sc);       /* reverse start order */

#endif
