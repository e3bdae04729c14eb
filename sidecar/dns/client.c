/* sidecar/dns/client.c — the agent's side: UDP and TCP listeners, TCP clients and their write
 * buffers, a query judged and answered locally, from the answer cache, refused by its budget, or sent upstream
 * (see internal.h). */
#include "sidecar/dns/internal.h"

static void tcl_free_if_done(struct tcl *c)
{
	if (c->closed && c->refs == 0) {
		free(c->wbuf);
		free(c);
	}
}

/* A query's reference on its TCP client dropped (the query ended): the client is freed if it was the last
 * and the peer is gone. */
void dns_tcl_release(struct tcl *c)
{
	/* c is alive: the query's reference kept it so (the analyzer cannot follow refcounts) */
	c->refs--; /* NOLINT(clang-analyzer-unix.Malloc) */
	tcl_free_if_done(c);
}

static void tcl_close(struct tcl *c)
{
	if (c->closed)
		return;
	struct sk_loop *l = c->srv->sc->loop;
	sk_loop_del(l, &c->io);
	sk_timer_cancel(l, &c->idle);
	close(c->io.fd);
	c->io.fd = -1;
	c->closed = true;
	c->srv->n_tcl--;
	tcl_free_if_done(c);
}

static void tcl_flush(struct tcl *c)
{
	while (c->woff < c->wlen) {
		ssize_t n = send(c->io.fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			tcl_close(c);
			return;
		}
		c->woff += (size_t)n;
	}
	if (c->woff == c->wlen)
		c->woff = c->wlen = 0;
	struct sk_err err;
	(void)sk_loop_mod(c->srv->sc->loop, &c->io, EPOLLIN | (c->wlen ? EPOLLOUT : 0), &err);
}

static void tcl_send(struct tcl *c, const uint8_t *msg, size_t len)
{
	if (c->closed)
		return;
	if (c->wlen + 2 + len > TCP_WBUF_MAX) {   /* a client that does not read its answers */
		tcl_close(c);
		return;
	}
	uint8_t *nb = realloc(c->wbuf, c->wlen + 2 + len);
	if (!nb) {
		tcl_close(c);
		return;
	}
	c->wbuf = nb;
	c->wbuf[c->wlen] = (uint8_t)(len >> 8);
	c->wbuf[c->wlen + 1] = (uint8_t)len;
	memcpy(c->wbuf + c->wlen + 2, msg, len);
	c->wlen += 2 + len;
	tcl_flush(c);
}

void dns_flush_replies(void *ctx)
{
	struct sk_dns_srv *s = ctx;
	struct mmsghdr mh[UDP_MMSG];
	struct iovec iov[UDP_MMSG];
	size_t n = s->n_rq;
	s->n_rq = 0;
	memset(mh, 0, sizeof(mh));
	for (size_t i = 0; i < n; i++) {
		iov[i] = (struct iovec){ .iov_base = s->rbuf[i], .iov_len = s->rq[i].len };
		mh[i].msg_hdr.msg_iov = &iov[i];
		mh[i].msg_hdr.msg_iovlen = 1;
		mh[i].msg_hdr.msg_name = &s->rq[i].peer;
		mh[i].msg_hdr.msg_namelen = s->rq[i].peerlen;
	}
	/* One sendmmsg per run of replies through the same listener. A datagram that fails (ENOBUFS, a full
	 * socket buffer) is lost as a lone sendto's would be: skipped, and the rest still go. */
	for (size_t off = 0; off < n;) {
		size_t end = off + 1;
		while (end < n && s->rq[end].lfd == s->rq[off].lfd)
			end++;
		int r = sendmmsg(s->rq[off].lfd, mh + off, (unsigned)(end - off), MSG_DONTWAIT | MSG_NOSIGNAL);
		off += r > 0 ? (size_t)r : 1;
	}
}

void dns_reply(struct dq *d, const uint8_t *msg, size_t len)
{
	if (d->client_tcp) {
		tcl_send(d->tc, msg, len);
		return;
	}
	struct sk_dns_srv *s = d->srv;
	if (len > sizeof(s->rbuf[0]) || d->peerlen > sizeof(s->rq[0].peer))
		return;   /* cannot happen: a UDP answer is at most SK_DNS_MSG_MAX, a peer a sockaddr_storage */
	if (d->lfd < 0 || (d->lfd != s->udp[0].fd && d->lfd != s->udp[1].fd))
		return;   /* its listener closed (drain): the number may be another socket's by now */
	if (!s->flush_added) {
		/* No flush at the round's end (there is no loop slot left): send at once, as always. */
		(void)sendto(d->lfd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&d->peer,
			     d->peerlen);
		return;
	}
	if (s->n_rq == UDP_MMSG)
		dns_flush_replies(s);
	struct udp_reply *q = &s->rq[s->n_rq];
	q->lfd = d->lfd;
	q->peer = d->peer;
	q->peerlen = d->peerlen;
	q->len = len;
	memcpy(s->rbuf[s->n_rq], msg, len);
	s->n_rq++;
}

void dns_peer_of(const struct dq *d, struct sk_addr *a, uint16_t *port)
{
	if (d->client_tcp) {
		*a = d->tc->peer;
		*port = d->tc->peer_port;
	} else {
		sk_addr_from_sockaddr(&d->peer, a, port);
	}
}

/* An allowed query answered from the cache: its addresses bound again exactly as a fresh answer's are
 * (same name, same (address, TTL) pairs, the TTLs as returned), so the proxy keeps allowing them. */
static bool serve_cached(struct sk_dns_srv *s, const struct sk_dns_fquery *q, struct dq *proto,
			 const struct sk_addr *src, uint16_t sport)
{
	struct sk_dns_cache_hit h;
	const uint64_t now = dns_now_ms(s);
	if (!sk_dns_cache_get(s->cache, s->sc->policy_gen, q, proto->client_tcp, now, s->out, SK_DNS_MSG_MAX, &h))
		return false;
	if (q->name[0])
		for (size_t i = 0; i < h.n_bind; i++)
			(void)sk_bind_add(s->binds, &h.bind[i].addr, q->name, h.bind[i].ttl, now);
	dns_reply(proto, s->out, h.len);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "cached", sk_dns_type_name(q->qtype));
	dns_account(s, h.truncated ? SK_DNS_R_TRUNCATED : SK_DNS_R_ANSWERED, q, s->sc->policy->mode == SK_MODE_AUDIT, src,
		sport, proto->client_tcp);
	return true;
}

/* An agent's query past its budget is answered REFUSED — not NXDOMAIN, which would claim the name does
 * not exist and be cached negatively by the agent's resolver past the window. Returns true when the
 * query was answered here. */
static bool budget_refused(struct sk_dns_srv *s, const struct sk_dns_fquery *q, struct dq *proto,
			   const struct sk_addr *src, uint16_t sport)
{
	if (!dns_budget_spent(s, q, src, sport, proto->client_tcp))
		return false;
	int n = sk_dns_filter_local_answer(q, SK_DNS_RC_REFUSED, false, s->out, SK_DNS_MSG_MAX);
	if (n > 0)
		dns_reply(proto, s->out, (size_t)n);
	return true;
}

static void handle_query(struct sk_dns_srv *s, const uint8_t *msg, size_t len, struct dq *proto)
{
	struct sk_dns_qverdict v;
	const struct sk_policy *p = s->sc->policy;
	/* the secrets' values too (the store stats each file: a rotated one counts at once) */
	sk_dns_filter_query_ex(p, sk_sidecar_secrets(s->sc), msg, len, proto->client_tcp, s->out,
			       proto->client_tcp ? SK_DNS_MSG_MAX : 4096, &v);
	struct sk_addr src;
	uint16_t sport;
	dns_peer_of(proto, &src, &sport);
	if (v.action == SK_DNS_ACT_DROP) {
		if (s->sc->metrics)
			sk_metrics_dns(s->sc->metrics, sk_dns_result_name(v.result), "other");
		return;
	}
	if (v.action == SK_DNS_ACT_ANSWER) {
		dns_reply(proto, s->out, v.len);
		dns_account(s, v.result, &v.q, false, &src, sport, proto->client_tcp);
		return;
	}
	if (v.q.audit)
		dns_account(s, v.q.would, &v.q, true, &src, sport, proto->client_tcp);
	if (serve_cached(s, &v.q, proto, &src, sport))
		return;
	if (budget_refused(s, &v.q, proto, &src, sport))
		return;
	struct dq *d = malloc(sizeof(*d));
	if (!d)
		goto servfail;
	*d = *proto;
	d->srv = s;
	d->ut = NULL;
	memset(d->us, 0, sizeof(d->us));
	d->p = sk_dns_pend_start(s->pt, &v.q, d, dns_now_ms(s));
	if (!d->p) {
		free(d);
		goto servfail;
	}
	if (d->tc)
		d->tc->refs++;
	if (dns_send_upstream(s, d) < 0) {
		dns_query_finish(d);   /* the pool is exhausted: never fall back to a shared port */
		dns_arm_timer(s);
		goto servfail;
	}
	dns_arm_timer(s);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "forwarded", sk_dns_type_name(v.q.qtype));
	return;
servfail:;
	int n = sk_dns_filter_local_answer(&v.q, SK_DNS_RC_SERVFAIL, false, s->out, SK_DNS_MSG_MAX);
	if (n > 0)
		dns_reply(proto, s->out, (size_t)n);
}

void dns_on_udp(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct sk_dns_srv *s = io->ctx;
	(void)l;
	(void)events;
	/* A batch per syscall, and none that can only say EAGAIN: a batch that comes back short emptied the
	 * queue (the registration is level-triggered, so anything left or new is reported again). */
	for (int got = 0; got < UDP_BATCH;) {
		struct mmsghdr mh[UDP_MMSG];
		struct iovec iov[UDP_MMSG];
		struct sockaddr_storage peer[UDP_MMSG] = { 0 };
		memset(mh, 0, sizeof(mh));
		for (int i = 0; i < UDP_MMSG; i++) {
			iov[i] = (struct iovec){ .iov_base = s->qbuf[i], .iov_len = sizeof(s->qbuf[i]) };
			mh[i].msg_hdr.msg_iov = &iov[i];
			mh[i].msg_hdr.msg_iovlen = 1;
			mh[i].msg_hdr.msg_name = &peer[i];
			mh[i].msg_hdr.msg_namelen = sizeof(peer[i]);
		}
		int n = recvmmsg(io->fd, mh, UDP_MMSG, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			struct dq proto = { .srv = s, .lfd = io->fd, .peer = peer[i],
					    .peerlen = mh[i].msg_hdr.msg_namelen };
			handle_query(s, s->qbuf[i], mh[i].msg_len, &proto);
		}
		if (n < UDP_MMSG)
			return;
		got += n;
	}
}

static void on_tcl_idle(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct tcl *c = t->ctx;
	tcl_close(c);
}

static void tcl_read(struct sk_loop *l, struct tcl *c, uint32_t events);

static void on_tcl(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct tcl *c = io->ctx;
	/* Any send below may close c; the reference keeps it allocated until we are done looking at it. */
	c->refs++;
	tcl_read(l, c, events);
	c->refs--; /* NOLINT(clang-analyzer-unix.Malloc): our reference kept c allocated */
	tcl_free_if_done(c);
}

static void tcl_read(struct sk_loop *l, struct tcl *c, uint32_t events)
{
	struct sk_dns_srv *s = c->srv;
	struct sk_io *io = &c->io;
	if (events & EPOLLOUT) {
		tcl_flush(c);
		/* on_tcl's reference keeps c allocated even when the flush closed it */
		if (c->closed) /* NOLINT(clang-analyzer-unix.Malloc) */
			return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	ssize_t n = recv(io->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		tcl_close(c);
		return;
	}
	c->rlen += (size_t)n;
	(void)sk_timer_arm(l, &c->idle, TCP_IDLE_MS);
	while (c->rlen >= 2) {
		size_t qlen = (size_t)c->rbuf[0] << 8 | c->rbuf[1];
		if (qlen > TCP_QUERY_MAX) {
			tcl_close(c);
			return;
		}
		if (c->rlen < 2 + qlen)
			break;
		if (c->refs > TCP_CLIENT_OUTSTANDING) {
			tcl_close(c);
			return;
		}
		struct dq proto = { .srv = s, .client_tcp = true, .tc = c, .lfd = -1 };
		handle_query(s, c->rbuf + 2, qlen, &proto);
		if (c->closed)
			return;
		memmove(c->rbuf, c->rbuf + 2 + qlen, c->rlen - 2 - qlen);
		c->rlen -= 2 + qlen;
	}
}

void dns_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *ss)
{
	struct sk_dns_srv *s = ls->ctx;
	struct sk_loop *l = s->sc->loop;
	if (s->n_tcl >= TCP_CLIENTS_MAX) {
		close(fd);
		return;
	}
	struct tcl *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	sk_addr_from_sockaddr(ss, &c->peer, &c->peer_port);
	sk_io_init(&c->io, fd, on_tcl, c);
	sk_timer_init(&c->idle, on_tcl_idle, c);
	struct sk_err err;
	if (sk_loop_add(l, &c->io, EPOLLIN, &err) < 0) {
		close(fd);
		free(c);
		return;
	}
	s->n_tcl++;
	(void)sk_timer_arm(l, &c->idle, TCP_IDLE_MS);
}
