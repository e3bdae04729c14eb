/* sidecar/dns/fallback.c — the sidecar's own resolutions on a binding miss (sc->resolve): filtered,
 * cached, budgeted and forwarded as an agent's query is (see internal.h and server.h). */
#include "sidecar/dns/internal.h"

/* Ends d's group: frees d (and its upstream query), then runs the requests' done callbacks. answered:
 * the name resolved, with addrs[0..n) its (now bound) addresses; addrs must not point into d. */
void dns_resolve_end(struct sk_dns_srv *s, struct dq *d, bool answered, const struct sk_addr *addrs, size_t n)
{
	struct sk_resolve_group *g = d->rg;
	dns_query_finish(d);
	sk_rbook_finish(&s->rbook, g, answered, addrs, n, s->neg, dns_now_ms(s));
	dns_arm_timer(s);
}

/* The answer was checked (and bound) exactly as for an agent's query: CNAME chain, rebinding defence
 * (a private address refuses the whole answer in enforce mode: FAILED, nothing bound). NOERROR with
 * addresses, or without (NODATA), is "resolved"; any other outcome (NXDOMAIN, SERVFAIL, REFUSED,
 * malformed) is FAILED. */
void dns_resolve_answered(struct sk_dns_srv *s, struct dq *d, const struct sk_dns_averdict *av)
{
	bool answered = av->action == SK_DNS_ACT_ANSWER && av->rcode == SK_DNS_RC_NOERROR &&
			(av->result == SK_DNS_R_ANSWERED || av->result == SK_DNS_R_REBINDING);
	struct sk_addr addrs[SK_DNS_MAX_BINDINGS];
	size_t n = 0;
	for (size_t i = 0; answered && i < av->n_bind; i++)
		addrs[n++] = av->bind[i].addr;
	dns_resolve_end(s, d, answered, addrs, n);
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
	dns_resolve_end(d->srv, d, answered, addrs, n);
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
		dns_account(s, v.result, &v.q, false, NULL, 0, false);
		return -EPERM;
	}
	if (v.action != SK_DNS_ACT_FORWARD)
		return -EINVAL;
	if (v.q.audit)
		dns_account(s, v.q.would, &v.q, true, NULL, 0, false);
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

int dns_resolve_start(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
		      void *arg, struct sk_resolve_req **req)
{
	struct sk_dns_srv *s = ctx;
	*req = NULL;
	struct sk_addr a;
	sk_resolve_fold(addr, &a);
	uint64_t now = dns_now_ms(s);
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
			dns_query_finish(d);
			sk_rbook_drop_group(&s->rbook, g);
			return rc;
		}
		g->ctx = d;
		*req = r;
		return 0;
	}
	if (dns_budget_spent(s, &q, NULL, 0, false)) {
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
		dns_query_finish(d);
		sk_rbook_drop_group(&s->rbook, g);
		dns_arm_timer(s);
		return rc;
	}
	if (dns_send_upstream(s, d) < 0) {
		dns_query_finish(d);
		sk_rbook_drop_group(&s->rbook, g);
		dns_arm_timer(s);
		return -EBUSY;   /* no upstream socket left in the pool */
	}
	g->ctx = d;
	dns_arm_timer(s);
	if (s->sc->metrics)
		sk_metrics_dns(s->sc->metrics, "forwarded", sk_dns_type_name(q.qtype));
	*req = r;
	return 0;
}

void dns_resolve_cancel(void *ctx, struct sk_resolve_req *req)
{
	struct sk_dns_srv *s = ctx;
	struct sk_resolve_group *g = sk_rbook_cancel(&s->rbook, req);
	if (!g)
		return;
	/* Nobody waits any more: drop the upstream query too (a late answer is then unmatched). */
	dns_query_finish(g->ctx);
	sk_rbook_drop_group(&s->rbook, g);
	dns_arm_timer(s);
}
