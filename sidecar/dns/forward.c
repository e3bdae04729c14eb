/* sidecar/dns/forward.c — the upstream side: a query's life cycle, its own UDP socket per server
 * (RFC 5452), TCP after a truncated answer, the answer judged, bound and cached, the pending table's retries
 * and deadlines (see internal.h). */
#include "sidecar/dns/internal.h"

static void utcp_free(struct sk_dns_srv *s, struct utcp *u)
{
	if (!u)
		return;
	sk_loop_del(s->sc->loop, &u->io);
	close(u->io.fd);
	free(u->rbuf);
	free(u);
}

void dns_arm_timer(struct sk_dns_srv *s)
{
	uint64_t d = sk_dns_pend_next_deadline(s->pt), now = dns_now_ms(s);
	if (d == UINT64_MAX) {
		sk_timer_cancel(s->sc->loop, &s->timer);
		return;
	}
	(void)sk_timer_arm(s->sc->loop, &s->timer, d > now ? d - now : 0);
}

static void usocks_close(struct sk_dns_srv *s, struct dq *d)
{
	for (size_t k = 0; k < SK_DNS_UPSTREAM_MAX; k++) {
		struct usock *u = d->us[k];
		if (!u)
			continue;
		sk_loop_forget(s->sc->loop, &u->io);   /* closed right below, never dup'ed: one epoll_ctl less a query */
		close(u->io.fd);
		free(u);
		d->us[k] = NULL;
		s->n_us--;
	}
}

void dns_query_finish(struct dq *d)
{
	struct sk_dns_srv *s = d->srv;
	utcp_free(s, d->ut);
	usocks_close(s, d);
	if (d->resolve)
		sk_timer_cancel(s->sc->loop, &d->rtimer);
	free(d->hit);
	if (d->p)
		sk_dns_pend_done(s->pt, d->p);
	if (d->tc)
		dns_tcl_release(d->tc);
	free(d);
}

static void on_usock(struct sk_loop *l, struct sk_io *io, uint32_t events);

/* d's UDP socket toward the server of its current attempt: the one it already has for that server (a
 * retry to the same server keeps its port, so a late answer to the first send still counts), or a new
 * one, connected from a random port. NULL when the pool is exhausted or the socket calls fail. */
static struct usock *usock_get(struct sk_dns_srv *s, struct dq *d)
{
	const unsigned k = d->p->server;
	if (d->us[k])
		return d->us[k];
	if (s->n_us >= s->us_max)
		return NULL;
	const struct sk_dns_server *up = &s->ups.v[k];
	int fd = socket(up->addr.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	/* connect() binds an unbound UDP socket to port 0 first, and Linux then draws the port at random
	 * from ip_local_port_range (as an explicit bind to port 0 would); from then on the kernel delivers
	 * only datagrams from the server's address and port. */
	struct sockaddr_storage ss;
	socklen_t sl = sk_sockaddr_from_addr(&up->addr, up->port, &ss);
	struct usock *u = calloc(1, sizeof(*u));
	struct sk_err err;
	if (!u || connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		free(u);
		close(fd);
		return NULL;
	}
	u->dq = d;
	u->server = (uint8_t)k;
	sk_io_init(&u->io, fd, on_usock, u);
	if (sk_loop_add(s->sc->loop, &u->io, EPOLLIN, &err) < 0) {
		free(u);
		close(fd);
		return NULL;
	}
	d->us[k] = u;
	s->n_us++;
	return u;
}

/* Sends d's query (same ID on every attempt) to the server of its current attempt over d's own socket
 * for that server. < 0 when it could not be sent at all (no socket: pool exhausted); a first send that
 * fails is answered SERVFAIL by the caller, a retry that fails is left to its deadline. */
int dns_send_upstream(struct sk_dns_srv *s, struct dq *d)
{
	struct sk_dns_pending *p = d->p;
	int n = sk_dns_filter_upstream_query(&p->q, p->id, s->out, sizeof(s->out));
	if (n < 0)
		return n;
	struct usock *u = usock_get(s, d);
	if (!u)
		return -EAGAIN;
	/* An error here (ECONNREFUSED from an earlier ICMP, ENOBUFS) is the same as a lost datagram. */
	(void)send(u->io.fd, s->out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return 0;
}

static void utcp_start(struct sk_dns_srv *s, struct dq *d);

void dns_handle_answer(struct sk_dns_srv *s, struct dq *d, const uint8_t *ans, size_t len, bool upstream_tcp)
{
	dns_set_upstream_ok(s, true);
	if (d->probe) {
		/* Any well-formed answer to our question (REFUSED included) proves the resolver is there. */
		s->probe_inflight = false;
		dns_query_finish(d);
		dns_arm_timer(s);
		return;
	}
	struct sk_dns_averdict av;
	/* A resolution has no client: answer as to a TCP client, so no UDP size limit truncates it. */
	sk_dns_filter_answer(s->sc->policy, &s->opts, &d->p->q, ans, len, upstream_tcp, d->client_tcp || d->resolve,
			     s->out, SK_DNS_MSG_MAX, &av);
	if (av.action == SK_DNS_ACT_RETRY_TCP) {
		sk_dns_pend_to_tcp(s->pt, d->p, dns_now_ms(s));
		utcp_start(s, d);
		dns_arm_timer(s);
		return;
	}
	uint64_t now = dns_now_ms(s);
	if (d->p->q.name[0])
		for (size_t i = 0; i < av.n_bind; i++)
			(void)sk_bind_add(s->binds, &av.bind[i].addr, d->p->q.name, av.bind[i].ttl, now);
	/* keeps only what is cacheable (dns_cache.h); checked under this policy generation. A fallback
	 * resolution's answer too: its question is the filter's, as an agent's (resolve_filter). */
	(void)sk_dns_cache_put(s->cache, s->sc->policy_gen, &d->p->q, &av, s->out, av.len, now);
	if (d->resolve) {
		/* a rebinding refusal is audited as for the agent's query; src null: the sidecar asked */
		dns_account(s, av.result, &d->p->q, s->sc->policy->mode == SK_MODE_AUDIT, NULL, 0, false);
		dns_resolve_answered(s, d, &av);
		return;
	}
	if (av.action == SK_DNS_ACT_ANSWER)
		dns_reply(d, s->out, av.len);
	struct sk_addr src;
	uint16_t sport;
	dns_peer_of(d, &src, &sport);
	dns_account(s, av.result, &d->p->q, s->sc->policy->mode == SK_MODE_AUDIT, &src, sport, d->client_tcp);
	dns_query_finish(d);
	dns_arm_timer(s);
}

/* ---- upstream TCP (after TC=1) ---- */

static void utcp_fail(struct sk_dns_srv *s, struct dq *d)
{
	/* Leave the pending entry to its deadline (it gives up with SERVFAIL); just drop the socket. */
	utcp_free(s, d->ut);
	d->ut = NULL;
}

static void on_utcp(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct utcp *u = io->ctx;
	struct dq *d = u->dq;
	struct sk_dns_srv *s = d->srv;
	(void)l;
	if (events & EPOLLERR) {
		utcp_fail(s, d);
		return;
	}
	if (u->woff < u->wlen && (events & EPOLLOUT)) {
		ssize_t n = send(io->fd, u->wbuf + u->woff, u->wlen - u->woff, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			utcp_fail(s, d);
			return;
		}
		if (n > 0)
			u->woff += (size_t)n;
		struct sk_err err;
		if (u->woff == u->wlen)
			(void)sk_loop_mod(s->sc->loop, io, EPOLLIN, &err);
	}
	if (!(events & (EPOLLIN | EPOLLHUP)))
		return;
	for (;;) {
		ssize_t n = recv(io->fd, u->rbuf + u->rlen, 2 + SK_DNS_MSG_MAX - u->rlen, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			utcp_fail(s, d);
			return;
		}
		u->rlen += (size_t)n;
		if (u->rlen >= 2) {
			size_t need = ((size_t)u->rbuf[0] << 8 | u->rbuf[1]) + 2;
			if (u->rlen >= need) {
				if (!sk_dns_pend_answers(s->pt, d->p, d->p->server, u->rbuf + 2, need - 2)) {
					utcp_fail(s, d);
					return;
				}
				dns_handle_answer(s, d, u->rbuf + 2, need - 2, true);
				return;
			}
		}
	}
}

static void utcp_start(struct sk_dns_srv *s, struct dq *d)
{
	const struct sk_dns_server *up = &s->ups.v[d->p->server];
	struct utcp *u = calloc(1, sizeof(*u));
	if (!u)
		return;
	u->rbuf = malloc(2 + SK_DNS_MSG_MAX);
	int fd = socket(up->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int n = sk_dns_filter_upstream_query(&d->p->q, d->p->id, u->wbuf + 2, sizeof(u->wbuf) - 2);
	if (!u->rbuf || fd < 0 || n < 0) {
		if (fd >= 0)
			close(fd);
		free(u->rbuf);
		free(u);
		return;
	}
	u->wbuf[0] = (uint8_t)(n >> 8);
	u->wbuf[1] = (uint8_t)n;
	u->wlen = (size_t)n + 2;
	struct sockaddr_storage ss;
	socklen_t sl = sk_sockaddr_from_addr(&up->addr, up->port, &ss);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		close(fd);
		free(u->rbuf);
		free(u);
		return;
	}
	u->dq = d;
	sk_io_init(&u->io, fd, on_utcp, u);
	struct sk_err err;
	if (sk_loop_add(s->sc->loop, &u->io, EPOLLOUT | EPOLLIN, &err) < 0) {
		close(fd);
		free(u->rbuf);
		free(u);
		return;
	}
	d->ut = u;
}

/* An answer on one query's own socket. The socket is connected, so only the server it was opened for can
 * reach it (checked again on the source address); the answer must also carry the query's ID and
 * question. Another query's answer, right ID or not, arriving here is dropped, as is anything after the
 * query moved to TCP. */
static void on_usock(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct usock *u = io->ctx;
	struct dq *d = u->dq;
	struct sk_dns_srv *s = d->srv;
	const struct sk_dns_server *up = &s->ups.v[u->server];
	(void)l;
	(void)events;
	for (int i = 0; i < UDP_BATCH; i++) {
		struct sockaddr_storage ss = { 0 };
		socklen_t sl = sizeof(ss);
		ssize_t n = recvfrom(io->fd, s->in, sizeof(s->in), MSG_DONTWAIT, (struct sockaddr *)&ss, &sl);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			continue;   /* a pending ICMP error (ECONNREFUSED), now consumed: the deadline retries */
		}
		struct sk_addr from;
		uint16_t port;
		sk_addr_from_sockaddr(&ss, &from, &port);
		if (port != up->port || !sk_addr_equal(&from, &up->addr))
			continue;
		if (d->p->tcp || !sk_dns_pend_answers(s->pt, d->p, u->server, s->in, (size_t)n))
			continue;   /* spoofed, duplicate, or already moved to TCP */
		dns_handle_answer(s, d, s->in, (size_t)n, false);   /* may free d, and u with it */
		return;
	}
}

void dns_on_timer(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_dns_srv *s = t->ctx;
	(void)l;
	struct sk_dns_pending *p;
	enum sk_dns_expiry e;
	while ((e = sk_dns_pend_expire(s->pt, dns_now_ms(s), &p)) != SK_DNS_EXP_NONE) {
		if (e == SK_DNS_EXP_RETRY) {
			(void)dns_send_upstream(s, p->ctx);   /* no socket: its deadline gives up in time */
			continue;
		}
		struct dq *d = p->ctx;
		if (d->probe) {
			s->probe_inflight = false;
			dns_set_upstream_ok(s, false);
			dns_query_finish(d);
			continue;
		}
		if (d->resolve) {
			if (s->sc->metrics)   /* counted as the agent's timeouts are */
				sk_metrics_dns(s->sc->metrics, "timeout", sk_dns_type_name(p->q.qtype));
			dns_resolve_end(s, d, false, NULL, 0);
			continue;
		}
		int n = sk_dns_filter_local_answer(&p->q, SK_DNS_RC_SERVFAIL, false, s->out, SK_DNS_MSG_MAX);
		if (n > 0)
			dns_reply(d, s->out, (size_t)n);
		if (s->sc->metrics)
			sk_metrics_dns(s->sc->metrics, "timeout", sk_dns_type_name(p->q.qtype));
		dns_query_finish(d);
	}
	dns_arm_timer(s);
}
