/* sidecar/dns/probe.c — the upstream liveness probe behind /readyz's dns_upstream_ok (see internal.h). */
#include "sidecar/dns/internal.h"

/* /readyz's "an upstream resolver answered": true on any matched answer, false when a probe got no
 * answer from any upstream within all its attempts. Transitions are logged: they explain a pod going
 * unready. */
void dns_set_upstream_ok(struct sk_dns_srv *s, bool ok)
{
	if (s->sc->dns_upstream_ok == ok)
		return;
	s->sc->dns_upstream_ok = ok;
	sk_log(ok ? SK_LOG_INFO : SK_LOG_WARN, "dns: upstream resolvers %s",
	       ok ? "answering" : "not answering (probe timed out)");
}

/* Every probe_ms, unless the last probe is still in flight: ". IN NS" through the same pending table as
 * client queries (same IDs, source checks, retries across servers and deadline), so "answered" means
 * exactly what it means for the agent's queries. Real answers set readiness too; only a probe that
 * gives up clears it, since one name's slow delegation says nothing about the resolver. */
void dns_on_probe(struct sk_loop *l, struct sk_timer *t)
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
			d->p = sk_dns_pend_start(s->pt, &q, d, dns_now_ms(s));
			if (d->p && dns_send_upstream(s, d) == 0) {
				s->probe_inflight = true;
				dns_arm_timer(s);
			} else if (d->p) {
				dns_query_finish(d);   /* no socket left: client queries hold them, and will tell */
			} else {
				free(d);   /* table full of client queries: they will tell soon enough */
			}
		}
	}
	(void)sk_timer_arm(l, t, s->probe_ms);
}
