/* sidecar/dns/server.c — see dns_server.h.
 *
 * Objects and ownership:
 *  - struct dq: one client query in flight toward upstream; owned by the pending table entry whose ctx it
 *    is (freed by query_finish together with the entry); holds its client (UDP peer, or a TCP client it
 *    keeps a reference on) and its upstream TCP connection, if the answer was truncated.
 *  - struct tcl: a TCP client connection. Freed when the peer is gone AND no dq refers to it, so a late
 *    answer never touches freed memory.
 *  - struct utcp: the TCP connection of one query to its upstream, owned by that dq.
 *  - struct usock: a UDP socket of one query toward one upstream server, owned by that dq (us[server]),
 *    connected to that server from a port the kernel picks at random (RFC 5452: a spoofer must guess the
 *    port as well as the ID), closed with the dq. At most s->us_max open at once (the pool); a query that
 *    cannot get one is answered SERVFAIL, never sent from a shared or fixed port.
 *  - fallback resolutions (sc->resolve, dns_resolve.h): a group of requests for one (name, family) owns one
 *    dq (resolve = true, no client) and its overall deadline timer; the group (dq->rg, group->ctx == dq)
 *    and its requests belong to s->rbook. The dq is freed before the group's done callbacks run, so a
 *    callback may start or cancel resolutions freely. */
#include "sidecar/dns/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "sidecar/core/budget.h"
#include "sidecar/dns/bind.h"
#include "sidecar/dns/cache.h"
#include "sidecar/dns/filter.h"
#include "sidecar/dns/resolve.h"
#include "sidecar/dns/upstream.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/net.h"

#define TCP_QUERY_MAX 4096          /* a client's TCP query larger than this is not a query */
#define TCP_CLIENTS_MAX 256
#define TCP_CLIENT_OUTSTANDING 32
#define TCP_WBUF_MAX (256u * 1024u)
#define TCP_IDLE_MS 10000u
#define PENDING_MAX 4096
#define UDP_BATCH 64

struct sk_dns_srv;

struct tcl {
	struct sk_dns_srv *srv;
	struct sk_io io;
	struct sk_timer idle;
	struct sk_addr peer;
	uint16_t peer_port;
	uint8_t rbuf[2 + TCP_QUERY_MAX];
	size_t rlen;
	uint8_t *wbuf;
	size_t wlen, woff;
	unsigned refs;               /* dq pointing here */
	bool closed;
};

struct utcp {
	struct sk_io io;
	struct dq *dq;
	uint8_t wbuf[2 + 512];
	size_t wlen, woff;
	uint8_t *rbuf;               /* 2 + 65535 */
	size_t rlen;
};

struct usock {
	struct sk_io io;
	struct dq *dq;
	uint8_t server;              /* index into srv->ups: the peer this socket is connected to */
};

struct dq {
	struct sk_dns_srv *srv;
	struct usock *us[SK_DNS_UPSTREAM_MAX];   /* UDP toward each server it was sent to, opened on first send */
	struct sk_dns_pending *p;
	bool client_tcp;
	int lfd;                     /* UDP: the listener it came in on */
	struct sockaddr_storage peer;
	socklen_t peerlen;
	struct tcl *tc;
	struct utcp *ut;
	bool probe;                  /* the server's own liveness probe: no client, answers only set readiness */
	bool resolve;                /* a fallback resolution (rg): no client, answers go to its requests */
	struct sk_resolve_group *rg;
	struct sk_timer rtimer;      /* resolve: the overall deadline (SK_RESOLVE_TIMEOUT_MS), or 0 for a hit */
	struct sk_addr *hit;         /* resolve answered from the cache (no p): its addresses, owned */
	size_t n_hit;
	bool hit_answered;           /* the cached answer was NOERROR */
};

struct sk_dns_srv {
	struct sk_sidecar *sc;
	struct sk_dns_upstreams ups;
	struct sk_dns_ptable *pt;
	struct sk_bind_table *binds;
	struct sk_dns_filter_opts opts;
	struct sk_io udp[2];           /* [0] IPv4, [1] IPv6; fd -1 when unused */
	struct sk_listener tcp[2];     /* net.h: back off when out of descriptors; io.fd -1 when unused */
	size_t n_us, us_max;           /* upstream UDP sockets open (struct usock), and the pool's bound */
	struct sk_timer timer;
	struct sk_timer probe;       /* periodic upstream probe for /readyz's dns_upstream check */
	uint64_t probe_ms;           /* 0: no probe (readiness then follows real answers only) */
	bool probe_inflight;
	size_t n_tcl;
	struct sk_rbook rbook;       /* fallback resolutions in flight */
	struct sk_rneg *neg;         /* their recent mismatches */
	struct sk_dns_cache *cache;  /* filtered answers (dns_cache.h); flushed when policy_gen moves */
	uint8_t in[SK_DNS_MSG_MAX + 2];
	uint8_t out[SK_DNS_MSG_MAX + 2];
};

static uint64_t now_ms(const struct sk_dns_srv *s) { return sk_loop_now_ms(s->sc->loop); }

/* ---- audit and metrics ---- */

static void account(struct sk_dns_srv *s, enum sk_dns_result r, const struct sk_dns_fquery *q, bool audit,
		    const struct sk_addr *src, uint16_t src_port, bool tcp)
{
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, sk_dns_result_name(r), sk_dns_type_name(q->qtype));
	bool denial = r == SK_DNS_R_DENIED || r == SK_DNS_R_BAD_NAME || r == SK_DNS_R_TOO_LONG ||
		      r == SK_DNS_R_REFUSED_TYPE || r == SK_DNS_R_REFUSED_CLASS || r == SK_DNS_R_REBINDING ||
		      r == SK_DNS_R_BUDGET_EXHAUSTED || r == SK_DNS_R_BUDGET_UNAVAILABLE || r == SK_DNS_R_CREDENTIAL_MISUSE;
	if (!denial)
		return;
	char text[SK_DNS_NAME_TEXT_MAX];
	const char *name = q->name[0] ? q->name : (sk_dns_name_text(&q->qname, text) == 0 ? text : "(binary)");
	/* The name comes from the policy in force now, as the index always has: a reload between a query
	 * and its upstream answer (a rebinding denial) can make both name an edited rule. */
	const struct sk_policy *pol = s->sc->policy;
	/* the type tells an A from an AAAA denial and shows a tunnel's TXT or NULL queries; a type without a
	 * name is written as RFC 3597 does */
	char qtype[16];
	const char *tn = sk_dns_type_name(q->qtype);
	if (strcmp(tn, "other") != 0)
		(void)snprintf(qtype, sizeof(qtype), "%s", tn);
	else
		(void)snprintf(qtype, sizeof(qtype), "TYPE%u", (unsigned)q->qtype);
	struct sk_audit_rec rec = {
		.event = "dns",
		.src = src,
		.src_port = src_port,
		.name = name,
		.proto = tcp ? "tcp" : "udp",
		.qtype = qtype,
		.rule = q->rule,
		.rule_name = pol && q->rule >= 0 && (size_t)q->rule < pol->n_rules ? pol->rules[q->rule].name : NULL,
		.decision = audit ? "would_deny" : "deny",
		.reason = sk_dns_result_name(r),
	};
	sk_audit_emit(&s->sc->audit, &rec);
}

/* ---- TCP clients ---- */

static void tcl_free_if_done(struct tcl *c)
{
	if (c->closed && c->refs == 0) {
		free(c->wbuf);
		free(c);
	}
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

/* ---- replies and query life cycle ---- */

static void reply(struct dq *d, const uint8_t *msg, size_t len)
{
	if (d->client_tcp) {
		tcl_send(d->tc, msg, len);
		return;
	}
	(void)sendto(d->lfd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&d->peer, d->peerlen);
}

static void utcp_free(struct sk_dns_srv *s, struct utcp *u)
{
	if (!u)
		return;
	sk_loop_del(s->sc->loop, &u->io);
	close(u->io.fd);
	free(u->rbuf);
	free(u);
}

static void arm_timer(struct sk_dns_srv *s)
{
	uint64_t d = sk_dns_pend_next_deadline(s->pt), now = now_ms(s);
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

static void query_finish(struct dq *d)
{
	struct sk_dns_srv *s = d->srv;
	utcp_free(s, d->ut);
	usocks_close(s, d);
	if (d->resolve)
		sk_timer_cancel(s->sc->loop, &d->rtimer);
	free(d->hit);
	if (d->p)
		sk_dns_pend_done(s->pt, d->p);
	if (d->tc) {
		/* tc is alive: this dq's reference kept it so (the analyzer cannot follow refcounts) */
		d->tc->refs--; /* NOLINT(clang-analyzer-unix.Malloc) */
		tcl_free_if_done(d->tc);
	}
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
static int send_upstream(struct sk_dns_srv *s, struct dq *d)
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

static void peer_of(const struct dq *d, struct sk_addr *a, uint16_t *port)
{
	if (d->client_tcp) {
		*a = d->tc->peer;
		*port = d->tc->peer_port;
	} else {
		sk_addr_from_sockaddr(&d->peer, a, port);
	}
}

static void utcp_start(struct sk_dns_srv *s, struct dq *d);

/* ---- fallback resolution (sc->resolve) ---- */

static bool budget_spent(struct sk_dns_srv *s, const struct sk_dns_fquery *q, const struct sk_addr *src,
			 uint16_t sport, bool tcp);

/* Ends d's group: frees d (and its upstream query), then runs the requests' done callbacks. answered:
 * the name resolved, with addrs[0..n) its (now bound) addresses; addrs must not point into d. */
static void resolve_end(struct sk_dns_srv *s, struct dq *d, bool answered, const struct sk_addr *addrs, size_t n)
{
	struct sk_resolve_group *g = d->rg;
	query_finish(d);
	sk_rbook_finish(&s->rbook, g, answered, addrs, n, s->neg, now_ms(s));
	arm_timer(s);
}

/* The answer was checked (and bound) exactly as for an agent's query: CNAME chain, rebinding defence
 * (a private address refuses the whole answer in enforce mode: FAILED, nothing bound). NOERROR with
 * addresses, or without (NODATA), is "resolved"; any other outcome (NXDOMAIN, SERVFAIL, REFUSED,
 * malformed) is FAILED. */
static void resolve_answered(struct sk_dns_srv *s, struct dq *d, const struct sk_dns_averdict *av)
{
	bool answered = av->action == SK_DNS_ACT_ANSWER && av->rcode == SK_DNS_RC_NOERROR &&
			(av->result == SK_DNS_R_ANSWERED || av->result == SK_DNS_R_REBINDING);
	struct sk_addr addrs[SK_DNS_MAX_BINDINGS];
	size_t n = 0;
	for (size_t i = 0; answered && i < av->n_bind; i++)
		addrs[n++] = av->bind[i].addr;
	resolve_end(s, d, answered, addrs, n);
}

/* The overall deadline, or (d->hit) the deferred end of a group answered from the cache: done is never
 * called from inside start. */
static void on_resolve_deadline(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct dq *d = t->ctx;
	struct sk_addr addrs[SK_DNS_MAX_BINDINGS];
	size_t n = 0;
	bool answered = false;
	if (d->hit) {
		answered = d->hit_answered;
		n = d->n_hit;
		memcpy(addrs, d->hit, n * sizeof(addrs[0]));   /* d goes first */
	} else if (d->srv->sc->metrics) {
		sk_metrics_dns(d->srv->sc->metrics, "timeout", sk_dns_type_name(d->p->q.qtype));
	}
	resolve_end(d->srv, d, answered, addrs, n);
}

/* The fallback's question through the filter exactly as an agent's: the same message shape (one
 * question, class IN, A or AAAA), so the same type list, dns.maxQueryLength, label and name checks and
 * the same rule (whose `queries` budget it is charged to). Without this the resolution was a side door:
 * every name the agent can put in an SNI or a Host reached the zone's servers, one per connection, past
 * the length limit and the budget, unaudited. A denial is audited as the agent's query would be (src
 * null: the sidecar asked; proto udp: how it leaves) and returns -EPERM; mode audit writes the would_deny
 * line and goes on. *q is the filter's forward query (id 0). */
static int resolve_filter(struct sk_dns_srv *s, const char *name, int family, struct sk_dns_fquery *q)
{
	struct sk_dns_name qn;
	if (sk_dns_name_from_text(name, &qn) < 0)
		return -EINVAL;
	uint8_t msg[SK_DNS_HDR_LEN + SK_DNS_NAME_WIRE_MAX + 4];
	int len = sk_dns_build_query(0, SK_DNS_F_RD, &qn, family == AF_INET ? SK_DNS_T_A : SK_DNS_T_AAAA,
				     SK_DNS_CLASS_IN, false, false, msg, sizeof(msg));
	if (len < 0)
		return -EINVAL;
	struct sk_dns_qverdict v;
	/* tcp: no UDP size limit (the resolution has no client to truncate for); out is scratch here */
	sk_dns_filter_query_ex(s->sc->policy, sk_sidecar_secrets(s->sc), msg, (size_t)len, true, s->out,
			       SK_DNS_MSG_MAX, &v);
	if (v.action == SK_DNS_ACT_ANSWER) {
		account(s, v.result, &v.q, false, NULL, 0, false);
		return -EPERM;
	}
	if (v.action != SK_DNS_ACT_FORWARD)
		return -EINVAL;
	if (v.q.audit)
		account(s, v.q.would, &v.q, true, NULL, 0, false);
	*q = v.q;
	return 0;
}

/* A group answered from the answer cache, as an agent's repeated question is: its addresses bound again,
 * no upstream query, no budget charge; done runs from a zero timer. Returns 0, or < 0 (nothing started). */
static int resolve_from_cache(struct sk_dns_srv *s, struct dq *d, const struct sk_dns_fquery *q,
			      const struct sk_dns_cache_hit *h, uint64_t now)
{
	if (q->name[0])
		for (size_t i = 0; i < h->n_bind; i++)
			(void)sk_bind_add(s->binds, &h->bind[i].addr, q->name, h->bind[i].ttl, now);
	d->hit_answered = h->rcode == SK_DNS_RC_NOERROR && !h->truncated;
	d->hit = calloc(h->n_bind ? h->n_bind : 1, sizeof(*d->hit));
	if (!d->hit)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_bind; i++)
		d->hit[i] = h->bind[i].addr;
	d->n_hit = h->n_bind;
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "cached", sk_dns_type_name(q->qtype));
	return sk_timer_arm(s->sc->loop, &d->rtimer, 0);
}

static int resolve_start(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
			 void *arg, struct sk_resolve_req **req)
{
	struct sk_dns_srv *s = ctx;
	*req = NULL;
	struct sk_addr a;
	sk_resolve_fold(addr, &a);
	uint64_t now = now_ms(s);
	if (a.family != AF_INET && a.family != AF_INET6)
		return -EINVAL;
	if (sk_rneg_has(s->neg, name, &a, now))
		return -ENOENT;
	struct sk_dns_fquery q;
	int rc = resolve_filter(s, name, a.family, &q);
	if (rc < 0)
		return rc;
	struct sk_resolve_req *r;
	struct sk_resolve_group *g;
	bool created;
	rc = sk_rbook_add(&s->rbook, name, &a, done, arg, &r, &g, &created);
	if (rc < 0)
		return rc;
	if (!created) {
		*req = r;   /* coalesced: the group's query (charged once) answers for it too */
		return 0;
	}
	struct dq *d = calloc(1, sizeof(*d));
	if (!d) {
		sk_rbook_drop_group(&s->rbook, g);
		return -ENOMEM;
	}
	d->srv = s;
	d->lfd = -1;
	d->resolve = true;
	d->rg = g;
	sk_timer_init(&d->rtimer, on_resolve_deadline, d);
	struct sk_dns_cache_hit h;
	if (sk_dns_cache_get(s->cache, s->sc->policy_gen, &q, true, now, s->out, SK_DNS_MSG_MAX, &h)) {
		if ((rc = resolve_from_cache(s, d, &q, &h, now)) < 0) {
			query_finish(d);
			sk_rbook_drop_group(&s->rbook, g);
			return rc;
		}
		g->ctx = d;
		*req = r;
		return 0;
	}
	if (budget_spent(s, &q, NULL, 0, false)) {
		free(d);
		sk_rbook_drop_group(&s->rbook, g);
		return -EDQUOT;   /* the caller denies the connection: its name may not leave as a query now */
	}
	d->p = sk_dns_pend_start(s->pt, &q, d, now);
	if (!d->p) {
		free(d);
		sk_rbook_drop_group(&s->rbook, g);
		return -EBUSY;   /* the pending table is full of the agent's queries */
	}
	if ((rc = sk_timer_arm(s->sc->loop, &d->rtimer, SK_RESOLVE_TIMEOUT_MS)) < 0) {
		query_finish(d);
		sk_rbook_drop_group(&s->rbook, g);
		arm_timer(s);
		return rc;
	}
	if (send_upstream(s, d) < 0) {
		query_finish(d);
		sk_rbook_drop_group(&s->rbook, g);
		arm_timer(s);
		return -EBUSY;   /* no upstream socket left in the pool */
	}
	g->ctx = d;
	arm_timer(s);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "forwarded", sk_dns_type_name(q.qtype));
	*req = r;
	return 0;
}

static void resolve_cancel(void *ctx, struct sk_resolve_req *req)
{
	struct sk_dns_srv *s = ctx;
	struct sk_resolve_group *g = sk_rbook_cancel(&s->rbook, req);
	if (!g)
		return;
	/* Nobody waits any more: drop the upstream query too (a late answer is then unmatched). */
	query_finish(g->ctx);
	sk_rbook_drop_group(&s->rbook, g);
	arm_timer(s);
}

/* /readyz's "an upstream resolver answered": true on any matched answer, false when a probe got no
 * answer from any upstream within all its attempts. Transitions are logged: they explain a pod going
 * unready. */
static void set_upstream_ok(struct sk_dns_srv *s, bool ok)
{
	if (s->sc->dns_upstream_ok == ok)
		return;
	s->sc->dns_upstream_ok = ok;
	sk_log(ok ? SK_LOG_INFO : SK_LOG_WARN, "dns: upstream resolvers %s",
	       ok ? "answering" : "not answering (probe timed out)");
}

static void handle_answer(struct sk_dns_srv *s, struct dq *d, const uint8_t *ans, size_t len, bool upstream_tcp)
{
	set_upstream_ok(s, true);
	if (d->probe) {
		/* Any well-formed answer to our question (REFUSED included) proves the resolver is there. */
		s->probe_inflight = false;
		query_finish(d);
		arm_timer(s);
		return;
	}
	struct sk_dns_averdict av;
	/* A resolution has no client: answer as to a TCP client, so no UDP size limit truncates it. */
	sk_dns_filter_answer(s->sc->policy, &s->opts, &d->p->q, ans, len, upstream_tcp, d->client_tcp || d->resolve,
			     s->out, SK_DNS_MSG_MAX, &av);
	if (av.action == SK_DNS_ACT_RETRY_TCP) {
		sk_dns_pend_to_tcp(s->pt, d->p, now_ms(s));
		utcp_start(s, d);
		arm_timer(s);
		return;
	}
	uint64_t now = now_ms(s);
	if (d->p->q.name[0])
		for (size_t i = 0; i < av.n_bind; i++)
			(void)sk_bind_add(s->binds, &av.bind[i].addr, d->p->q.name, av.bind[i].ttl, now);
	/* keeps only what is cacheable (dns_cache.h); checked under this policy generation. A fallback
	 * resolution's answer too: its question is the filter's, as an agent's (resolve_filter). */
	(void)sk_dns_cache_put(s->cache, s->sc->policy_gen, &d->p->q, &av, s->out, av.len, now);
	if (d->resolve) {
		/* a rebinding refusal is audited as for the agent's query; src null: the sidecar asked */
		account(s, av.result, &d->p->q, s->sc->policy->mode == SK_MODE_AUDIT, NULL, 0, false);
		resolve_answered(s, d, &av);
		return;
	}
	if (av.action == SK_DNS_ACT_ANSWER)
		reply(d, s->out, av.len);
	struct sk_addr src;
	uint16_t sport;
	peer_of(d, &src, &sport);
	account(s, av.result, &d->p->q, s->sc->policy->mode == SK_MODE_AUDIT, &src, sport, d->client_tcp);
	query_finish(d);
	arm_timer(s);
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
				handle_answer(s, d, u->rbuf + 2, need - 2, true);
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

/* ---- queries from clients ---- */

/* An allowed query answered from the cache: its addresses bound again exactly as a fresh answer's are
 * (same name, same (address, TTL) pairs, the TTLs as returned), so the proxy keeps allowing them. */
static bool serve_cached(struct sk_dns_srv *s, const struct sk_dns_fquery *q, struct dq *proto,
			 const struct sk_addr *src, uint16_t sport)
{
	struct sk_dns_cache_hit h;
	const uint64_t now = now_ms(s);
	if (!sk_dns_cache_get(s->cache, s->sc->policy_gen, q, proto->client_tcp, now, s->out, SK_DNS_MSG_MAX, &h))
		return false;
	if (q->name[0])
		for (size_t i = 0; i < h.n_bind; i++)
			(void)sk_bind_add(s->binds, &h.bind[i].addr, q->name, h.bind[i].ttl, now);
	reply(proto, s->out, h.len);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "cached", sk_dns_type_name(q->qtype));
	account(s, h.truncated ? SK_DNS_R_TRUNCATED : SK_DNS_R_ANSWERED, q, s->sc->policy->mode == SK_MODE_AUDIT, src,
		sport, proto->client_tcp);
	return true;
}

/* The residual DNS channel under a listed wildcard zone: names under "*.example.com" leave the pod as
 * queries, whatever the proxy does. A wildcard rule with a `queries` budget counts every query that would
 * go upstream (a cached answer carries nothing out and is not counted), the agent's own and the sidecar's
 * fallback resolutions of the names it puts in an SNI or Host alike (either is one name carried to the
 * zone's servers); past the budget the query is refused with one audit line (reason budget_exhausted,
 * src/proto those of the asker: NULL for a fallback resolution) and a metric each. Mode audit counts and
 * reports, and forwards. Returns true when the query must not go upstream. */
static bool budget_spent(struct sk_dns_srv *s, const struct sk_dns_fquery *q, const struct sk_addr *src,
			 uint16_t sport, bool tcp)
{
	struct sk_sidecar *sc = s->sc;
	const struct sk_policy *p = sc->policy;
	if (q->rule < 0 || (size_t)q->rule >= p->n_rules || !p->rules[q->rule].budget.queries)
		return false;
	struct sk_budget_entry *e = sk_budget_for_rule(sk_sidecar_budgets(sc), q->rule);
	const uint64_t now = now_ms(s);
	if (e && sk_budget_remaining(e, SK_BUDGET_QUERIES, now) > 0) {
		sk_budget_charge(e, SK_BUDGET_QUERIES, 1, now);
		return false;
	}
	/* Spent, or no entry (the table could not follow the policy): refused, fail closed. */
	const bool audit = p->mode == SK_MODE_AUDIT;
	if (e) {
		e->refused++;
		if (audit)
			sk_budget_charge(e, SK_BUDGET_QUERIES, 1, now);
	}
	account(s, e ? SK_DNS_R_BUDGET_EXHAUSTED : SK_DNS_R_BUDGET_UNAVAILABLE, q, audit, src, sport, tcp);
	return !audit;
}

/* An agent's query past its budget is answered REFUSED — not NXDOMAIN, which would claim the name does
 * not exist and be cached negatively by the agent's resolver past the window. Returns true when the
 * query was answered here. */
static bool dns_budget_refused(struct sk_dns_srv *s, const struct sk_dns_fquery *q, struct dq *proto,
			       const struct sk_addr *src, uint16_t sport)
{
	if (!budget_spent(s, q, src, sport, proto->client_tcp))
		return false;
	int n = sk_dns_filter_local_answer(q, SK_DNS_RC_REFUSED, false, s->out, SK_DNS_MSG_MAX);
	if (n > 0)
		reply(proto, s->out, (size_t)n);
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
	peer_of(proto, &src, &sport);
	if (v.action == SK_DNS_ACT_DROP) {
		if (s->sc->metrics)
			sk_metrics_dns(s->sc->metrics, sk_dns_result_name(v.result), "other");
		return;
	}
	if (v.action == SK_DNS_ACT_ANSWER) {
		reply(proto, s->out, v.len);
		account(s, v.result, &v.q, false, &src, sport, proto->client_tcp);
		return;
	}
	if (v.q.audit)
		account(s, v.q.would, &v.q, true, &src, sport, proto->client_tcp);
	if (serve_cached(s, &v.q, proto, &src, sport))
		return;
	if (dns_budget_refused(s, &v.q, proto, &src, sport))
		return;
	struct dq *d = malloc(sizeof(*d));
	if (!d)
		goto servfail;
	*d = *proto;
	d->srv = s;
	d->ut = NULL;
	memset(d->us, 0, sizeof(d->us));
	d->p = sk_dns_pend_start(s->pt, &v.q, d, now_ms(s));
	if (!d->p) {
		free(d);
		goto servfail;
	}
	if (d->tc)
		d->tc->refs++;
	if (send_upstream(s, d) < 0) {
		query_finish(d);   /* the pool is exhausted: never fall back to a shared port */
		arm_timer(s);
		goto servfail;
	}
	arm_timer(s);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "forwarded", sk_dns_type_name(v.q.qtype));
	return;
servfail:;
	int n = sk_dns_filter_local_answer(&v.q, SK_DNS_RC_SERVFAIL, false, s->out, SK_DNS_MSG_MAX);
	if (n > 0)
		reply(proto, s->out, (size_t)n);
}

static void on_udp(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct sk_dns_srv *s = io->ctx;
	(void)l;
	(void)events;
	for (int i = 0; i < UDP_BATCH; i++) {
		struct dq proto = { .lfd = io->fd, .peerlen = sizeof(proto.peer) };
		ssize_t n = recvfrom(io->fd, s->in, sizeof(s->in), MSG_DONTWAIT, (struct sockaddr *)&proto.peer,
				     &proto.peerlen);
		if (n < 0)
			return;
		handle_query(s, s->in, (size_t)n, &proto);
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
		if (c->closed)
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
		struct dq proto = { .client_tcp = true, .tc = c, .lfd = -1 };
		handle_query(s, c->rbuf + 2, qlen, &proto);
		if (c->closed)
			return;
		memmove(c->rbuf, c->rbuf + 2 + qlen, c->rlen - 2 - qlen);
		c->rlen -= 2 + qlen;
	}
}

static void dns_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *ss)
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
		handle_answer(s, d, s->in, (size_t)n, false);   /* may free d, and u with it */
		return;
	}
}

static void on_timer(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_dns_srv *s = t->ctx;
	(void)l;
	struct sk_dns_pending *p;
	enum sk_dns_expiry e;
	while ((e = sk_dns_pend_expire(s->pt, now_ms(s), &p)) != SK_DNS_EXP_NONE) {
		if (e == SK_DNS_EXP_RETRY) {
			(void)send_upstream(s, p->ctx);   /* no socket: its deadline gives up in time */
			continue;
		}
		struct dq *d = p->ctx;
		if (d->probe) {
			s->probe_inflight = false;
			set_upstream_ok(s, false);
			query_finish(d);
			continue;
		}
		if (d->resolve) {
			if (s->sc->metrics)   /* counted as the agent's timeouts are */
				sk_metrics_dns(s->sc->metrics, "timeout", sk_dns_type_name(p->q.qtype));
			resolve_end(s, d, false, NULL, 0);
			continue;
		}
		int n = sk_dns_filter_local_answer(&p->q, SK_DNS_RC_SERVFAIL, false, s->out, SK_DNS_MSG_MAX);
		if (n > 0)
			reply(d, s->out, (size_t)n);
		if (s->sc->metrics)
			sk_metrics_dns(s->sc->metrics, "timeout", sk_dns_type_name(p->q.qtype));
		query_finish(d);
	}
	arm_timer(s);
}

/* ---- upstream liveness probe ---- */

/* Every probe_ms, unless the last probe is still in flight: ". IN NS" through the same pending table as
 * client queries (same IDs, source checks, retries across servers and deadline), so "answered" means
 * exactly what it means for the agent's queries. Real answers set readiness too; only a probe that
 * gives up clears it, since one name's slow delegation says nothing about the resolver. */
static void on_probe(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_dns_srv *s = t->ctx;
	if (!s->probe_inflight) {
		struct sk_dns_fquery q = { .flags = SK_DNS_F_RD, .qtype = SK_DNS_T_NS, .qclass = SK_DNS_CLASS_IN,
					   .rule = -1, .udp_limit = 512 };
		q.qname.wire[0] = 0;   /* the root */
		q.qname.len = 1;
		struct dq *d = calloc(1, sizeof(*d));
		if (d) {
			d->srv = s;
			d->probe = true;
			d->lfd = -1;
			d->p = sk_dns_pend_start(s->pt, &q, d, now_ms(s));
			if (d->p && send_upstream(s, d) == 0) {
				s->probe_inflight = true;
				arm_timer(s);
			} else if (d->p) {
				query_finish(d);   /* no socket left: client queries hold them, and will tell */
			} else {
				free(d);   /* table full of client queries: they will tell soon enough */
			}
		}
	}
	(void)sk_timer_arm(l, t, s->probe_ms);
}

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
		sk_io_init(&s->udp[i], -1, on_udp, s);
		s->tcp[i].io.fd = -1;
	}
	sk_timer_init(&s->timer, on_timer, s);
	sk_timer_init(&s->probe, on_probe, s);
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
	if ((r = sk_bind_new(set->bindings, &s->binds)) < 0) {
		r = sk_err_set(err, -r, "dns: binding table");
		goto fail;
	}
	if ((r = sk_rneg_new(SK_RESOLVE_NEG_MAX, SK_RESOLVE_NEG_TTL_MS, &s->neg)) < 0) {
		r = sk_err_set(err, -r, "dns: resolution negative cache");
		goto fail;
	}
	if ((r = sk_dns_cache_new(SK_DNS_CACHE_ENTRIES, SK_DNS_CACHE_BYTES, &s->cache)) < 0) {
		r = sk_err_set(err, -r, "dns: answer cache");
		goto fail;
	}
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
	sc->n_dns_fds = 0;
	for (int i = 0; i < 2; i++) {
		if (s->udp[i].fd >= 0)
			sc->dns_fds[sc->n_dns_fds++] = s->udp[i].fd;
		if (s->tcp[i].io.fd >= 0)
			sc->dns_fds[sc->n_dns_fds++] = s->tcp[i].io.fd;
	}
	sk_sidecar_attach_bindings(sc, s->binds, &(struct sk_bind_hooks){ sc, table_name_bound, table_names });
	sc->resolve.ctx = s;
	sc->resolve.start = resolve_start;
	sc->resolve.cancel = resolve_cancel;
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
	if (s->sc->resolve.ctx == s)
		memset(&s->sc->resolve, 0, sizeof(s->sc->resolve));
	/* Fallback resolutions answered from the cache have no pending entry: their dq waits on its zero
	 * timer, owned by the group. Before the pending loop below, which frees the other groups' dq. */
	for (struct sk_dlink *l = s->rbook.groups.head; l; l = l->next) {
		struct sk_resolve_group *g = sk_container_of(l, struct sk_resolve_group, link);
		struct dq *d = g->ctx;
		if (d && d->hit) {
			sk_timer_cancel(s->sc->loop, &d->rtimer);
			free(d->hit);
			free(d);
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
		utcp_free(s, d->ut);
		d->ut = NULL;
		usocks_close(s, d);
		if (d->resolve)
			sk_timer_cancel(s->sc->loop, &d->rtimer);
		if (d->tc) {
			d->tc->refs--;
			tcl_free_if_done(d->tc);
		}
		sk_dns_pend_done(s->pt, p);
		free(d);
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
