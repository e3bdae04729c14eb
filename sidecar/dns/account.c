/* sidecar/dns/account.c — the audit lines and metrics of a judged query, and the `queries`
 * budget of wildcard rules (see internal.h). */
#include "sidecar/dns/internal.h"

void dns_account(struct sk_dns_srv *s, enum sk_dns_result r, const struct sk_dns_fquery *q, bool audit,
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

/* The residual DNS channel under a listed wildcard zone: names under "*.example.com" leave the pod as
 * queries, whatever the proxy does. A wildcard rule with a `queries` budget counts every query that would
 * go upstream (a cached answer carries nothing out and is not counted), the agent's own and the sidecar's
 * fallback resolutions of the names it puts in an SNI or Host alike (either is one name carried to the
 * zone's servers); past the budget the query is refused with one audit line (reason budget_exhausted,
 * src/proto those of the asker: NULL for a fallback resolution) and a metric each. Mode audit counts and
 * reports, and forwards. Returns true when the query must not go upstream. */
bool dns_budget_spent(struct sk_dns_srv *s, const struct sk_dns_fquery *q, const struct sk_addr *src,
		      uint16_t sport, bool tcp)
{
	struct sk_sidecar *sc = s->sc;
	const struct sk_policy *p = sc->policy;
	if (q->rule < 0 || (size_t)q->rule >= p->n_rules || !p->rules[q->rule].budget.queries)
		return false;
	struct sk_budget_entry *e = sk_budget_for_rule(sk_sidecar_budgets(sc), q->rule);
	const uint64_t now = dns_now_ms(s);
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
	dns_account(s, e ? SK_DNS_R_BUDGET_EXHAUSTED : SK_DNS_R_BUDGET_UNAVAILABLE, q, audit, src, sport, tcp);
	return !audit;
}
