/* sidecar/core/sidecar.c — the sidecar's list of running servers (server.h): registration, the drain's two
 * questions (stop accepting, anything still in flight?) and the teardown, in one place. */
#include "sidecar/core/sidecar.h"

#include <errno.h>
#include <stdio.h>

#include "common/log.h"
#include "sidecar/dns/server.h"
#include "sidecar/gateway/gateway.h"
#include "sidecar/admin/lifecycle.h"
#include "sidecar/proxy/proxy.h"

int sk_sidecar_add_server(struct sk_sidecar *sc, const struct sk_server_ops *ops, void *srv, struct sk_err *err)
{
	if (!srv)
		return 0;   /* a server that did not start (NULL) has nothing to stop or free */
	if (sc->n_servers == SK_SIDECAR_SERVERS_MAX) {
		ops->free(srv);
		return sk_err_set(err, ENOSPC, "sidecar: more than %d servers (%s)", SK_SIDECAR_SERVERS_MAX, ops->name);
	}
	sc->servers[sc->n_servers++] = (struct sk_server){ .ops = ops, .srv = srv };
	return 0;
}

void sk_sidecar_stop_accepting(struct sk_sidecar *sc)
{
	for (size_t i = 0; i < sc->n_servers; i++)
		if (sc->servers[i].ops->stop_accepting)
			sc->servers[i].ops->stop_accepting(sc->servers[i].srv);
}

size_t sk_sidecar_active(const struct sk_sidecar *sc)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->n_servers; i++)
		if (sc->servers[i].ops->active)
			n += sc->servers[i].ops->active(sc->servers[i].srv);
	return n;
}

void sk_sidecar_log_active(const struct sk_sidecar *sc, const char *what)
{
	char buf[256];
	size_t off = 0;
	for (size_t i = 0; i < sc->n_servers && off < sizeof(buf); i++) {
		const struct sk_server *s = &sc->servers[i];
		if (!s->ops->active)
			continue;
		int w = snprintf(buf + off, sizeof(buf) - off, "%s%s %zu", off ? ", " : "", s->ops->name,
				 s->ops->active(s->srv));
		if (w < 0)
			break;
		off += (size_t)w;
	}
	sk_log(SK_LOG_INFO, "%s (in flight: %s)", what, off ? buf : "nothing");
}

void sk_sidecar_free_servers(struct sk_sidecar *sc)
{
	/* last started, first freed: a server may use one started before it (the proxy's fallback
	 * resolution is the DNS server's; the admin reads the proxy's and DNS server's listeners) */
	while (sc->n_servers > 0) {
		struct sk_server *s = &sc->servers[--sc->n_servers];
		s->ops->free(s->srv);
		s->srv = NULL;
	}
}

/* ---- the servers' entries (each module keeps its own start function) ---- */

static void proxy_stop(void *s) { sk_proxy_stop_accepting(s); }
static size_t proxy_active(const void *s) { return sk_proxy_active(s); }
static void proxy_free(void *s) { sk_proxy_free(s); }
const struct sk_server_ops sk_server_proxy = { "proxy", proxy_stop, proxy_active, proxy_free };

static void dns_stop(void *s) { sk_dns_server_stop_accepting(s); }
static void dns_free(void *s) { sk_dns_server_free(s); }
/* active NULL: stop_accepting closes the listeners and the exchanges in flight are answered within the
 * upstream timeout; nothing longer for a drain to wait for */
const struct sk_server_ops sk_server_dns = { "dns", dns_stop, NULL, dns_free };

static void admin_free(void *s) { sk_lifecycle_free(s); }
const struct sk_server_ops sk_server_admin = { "admin", NULL, NULL, admin_free };

static void api_stop(void *s) { sk_gateway_stop_accepting(s); }
static size_t api_active(const void *s) { return sk_gateway_active(s); }
static void api_free(void *s) { sk_gateway_free(s); }
const struct sk_server_ops sk_server_api = { "api", api_stop, api_active, api_free };
