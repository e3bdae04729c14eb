/* sidecar/dns/server.c — setup, drain and teardown of the DNS server, and the binding hooks the
 * proxy checks (see server.h; its files: internal.h). */
#include "sidecar/dns/internal.h"

/* ---- setup ---- */

static int open_sock(int family, int type, const struct sk_addr *a, uint16_t port, struct sk_err *err)
{
	int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sk_err_sys(err, errno, "dns: socket");
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (a) {
		struct sockaddr_storage ss;
		socklen_t sl = sk_sockaddr_from_addr(a, port, &ss);
		char txt[SK_ADDR_STRLEN];
		sk_addr_format(a, txt);
		if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
			int e = errno;
			close(fd);
			return sk_err_sys(err, e, "dns: bind %s %s:%u", type == SOCK_STREAM ? "tcp" : "udp", txt, port);
		}
		if (type == SOCK_STREAM && listen(fd, 128) < 0) {
			int e = errno;
			close(fd);
			return sk_err_sys(err, e, "dns: listen tcp %s:%u", txt, port);
		}
	}
	return fd;
}

/* ---- the binding hooks the proxy checks (sidecar.h), over this server's table, on the loop's clock ---- */

static bool table_name_bound(void *ctx, const struct sk_addr *addr, const char *name)
{
	struct sk_sidecar *sc = ctx;
	return sc->bindings && sk_bind_has(sc->bindings, addr, name, sk_loop_now_ms(sc->loop));
}

struct names_adapter {
	sk_bind_name_fn cb;
	void *arg;
};

static bool names_adapter_cb(const char *name, uint64_t expires_ms, void *arg)
{
	(void)expires_ms;
	struct names_adapter *a = arg;
	return a->cb(name, a->arg);
}

static void table_names(void *ctx, const struct sk_addr *addr, sk_bind_name_fn cb, void *arg)
{
	struct sk_sidecar *sc = ctx;
	struct names_adapter a = { cb, arg };
	if (sc->bindings)
		sk_bind_names(sc->bindings, addr, sk_loop_now_ms(sc->loop), names_adapter_cb, &a);
}

int sk_dns_server_start(struct sk_sidecar *sc, struct sk_dns_srv **out, struct sk_err *err)
{
	*out = NULL;
	struct sk_dns_srv *s = calloc(1, sizeof(*s));
	if (!s)
		return sk_err_set(err, ENOMEM, "dns: out of memory");
	s->sc = sc;
	for (int i = 0; i < 2; i++) {
		sk_io_init(&s->udp[i], -1, dns_on_udp, s);
		s->tcp[i].io.fd = -1;
	}
	sk_timer_init(&s->timer, dns_on_timer, s);
	sk_timer_init(&s->probe, dns_on_probe, s);
	sk_rbook_init(&s->rbook, SK_RESOLVE_MAX_INFLIGHT);
	const struct sk_dns_settings *set = &sc->dns_cfg;   /* config.h */
	s->probe_ms = set->probe_ms;
	s->us_max = set->upstream_sockets;
	s->opts.strict_chain = set->strict_chain;
	int r = sk_dns_upstreams_from_policy(sc->policy, set->resolv_conf, &s->ups, err);
	if (r < 0)
		goto fail;
	struct sk_dns_pt_cfg cfg = { .servers = s->ups };
	if ((r = sk_dns_ptable_new(PENDING_MAX, &cfg, &s->pt, err)) < 0)
		goto fail;
	if ((r = sk_bind_new(set->bindings, &s->binds, err)) < 0 ||
	    (r = sk_rneg_new(SK_RESOLVE_NEG_MAX, SK_RESOLVE_NEG_TTL_MS, &s->neg, err)) < 0 ||
	    (r = sk_dns_cache_new(SK_DNS_CACHE_ENTRIES, SK_DNS_CACHE_BYTES, &s->cache, err)) < 0)
		goto fail;
	struct sk_addr lo4 = sk_net_loopback(AF_INET), lo6 = sk_net_loopback(AF_INET6);
	uint16_t port = sc->policy->ports.dns;
	for (int i = 0; i < 2; i++) {
		const struct sk_addr *a = i == 0 ? &lo4 : &lo6;
		int fam = i == 0 ? AF_INET : AF_INET6;
		struct sk_err e6 = { 0 };
		struct sk_err *e = i == 0 ? err : &e6;   /* no IPv6 loopback is survivable; no IPv4 is not */
		int fd = open_sock(fam, SOCK_DGRAM, a, port, e);
		if (fd < 0) {
			if (i == 0) {
				r = fd;
				goto fail;
			}
			sk_log(SK_LOG_WARN, "%s (IPv6 DNS listener skipped)", e6.msg);
			continue;
		}
		s->udp[i].fd = fd;
		if ((r = sk_listener_open(&s->tcp[i], sc->loop, a, port, 128, "dns tcp", dns_accept, s, e)) < 0) {
			if (i == 0)
				goto fail;
			/* The IPv6 UDP socket exists but TCP does not: say so, as for UDP above. */
			sk_log(SK_LOG_WARN, "%s (IPv6 DNS-over-TCP listener skipped)", e6.msg);
			continue;
		}
	}
	for (int i = 0; i < 2; i++)
		if (s->udp[i].fd >= 0 && (r = sk_loop_add(sc->loop, &s->udp[i], EPOLLIN, err)) < 0)
			goto fail;
	/* Without a slot the replies go out one sendto each, as before (dns_reply). */
	s->flush_added = sk_loop_add_flush(sc->loop, dns_flush_replies, s) == 0;
	sc->n_dns_fds = 0;
	for (int i = 0; i < 2; i++) {
		if (s->udp[i].fd >= 0)
			sc->dns_fds[sc->n_dns_fds++] = s->udp[i].fd;
		if (s->tcp[i].io.fd >= 0)
			sc->dns_fds[sc->n_dns_fds++] = s->tcp[i].io.fd;
	}
	sk_sidecar_attach_bindings(sc, s->binds, &(struct sk_bind_hooks){ sc, table_name_bound, table_names });
	sc->resolve.ctx = s;
	sc->resolve.start = dns_resolve_start;
	sc->resolve.cancel = dns_resolve_cancel;
	if (s->probe_ms && (r = sk_timer_arm(sc->loop, &s->probe, 0)) < 0) {
		r = sk_err_set(err, -r, "dns: arm the upstream probe timer");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sk_dns_server_free(s);
	return r;
}

void sk_dns_server_stop_accepting(struct sk_dns_srv *s)
{
	if (!s)
		return;
	dns_flush_replies(s);   /* what this round answered leaves before its listener closes */
	for (int i = 0; i < 2; i++) {
		sk_listener_close(&s->tcp[i]);
		if (s->udp[i].fd < 0)
			continue;
		sk_loop_del(s->sc->loop, &s->udp[i]);
		close(s->udp[i].fd);
		s->udp[i].fd = -1;
	}
	s->sc->n_dns_fds = 0;
}

void sk_dns_server_free(struct sk_dns_srv *s)
{
	if (!s)
		return;
	sk_dns_server_stop_accepting(s);
	if (s->flush_added)
		sk_loop_del_flush(s->sc->loop, dns_flush_replies, s);
	if (s->sc->resolve.ctx == s)
		memset(&s->sc->resolve, 0, sizeof(s->sc->resolve));
	/* Fallback resolutions answered from the cache have no pending entry: their dq waits on its zero
	 * timer, owned by the group. Before the pending loop below, which frees the other groups' dq. */
	for (struct sk_dlink *l = s->rbook.groups.head; l; l = l->next) {
		struct sk_resolve_group *g = sk_container_of(l, struct sk_resolve_group, link);
		struct dq *d = g->ctx;
		if (d && d->hit) {
			dns_query_finish(d);   /* its timer and addresses; it has nothing else */
			g->ctx = NULL;
		}
	}
	/* Queries in flight: their dq and upstream sockets go with them (fallback resolutions' requests are
	 * dropped without done, below). TCP clients still open are closed by process exit (the server is
	 * freed only then). */
	struct sk_dns_pending *p;
	while (s->pt && sk_dns_pend_next_deadline(s->pt) != UINT64_MAX &&
	       sk_dns_pend_expire(s->pt, UINT64_MAX, &p) != SK_DNS_EXP_NONE) {
		struct dq *d = p->ctx;
		dns_query_finish(d);   /* d->p is p */
	}
	sk_timer_cancel(s->sc->loop, &s->timer);
	sk_timer_cancel(s->sc->loop, &s->probe);
	if (s->sc->bindings == s->binds) {
		s->sc->bindings = NULL;
		memset(&s->sc->bind, 0, sizeof(s->sc->bind));
	}
	sk_rbook_clear(&s->rbook);
	sk_rneg_free(s->neg);
	sk_dns_cache_free(s->cache);
	sk_bind_free(s->binds);
	sk_dns_ptable_free(s->pt);
	free(s);
}

/* The DNS server's entry in the sidecar's server list (core/server.h); main.c registers it. active NULL:
 * stop_accepting closes the listeners and the exchanges in flight are answered within the upstream
 * timeout; nothing longer for a drain to wait for. */
static void server_stop(void *s) { sk_dns_server_stop_accepting(s); }
static void server_free(void *s) { sk_dns_server_free(s); }
const struct sk_server_ops sk_server_dns = { "dns", server_stop, NULL, server_free };

