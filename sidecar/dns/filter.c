/* sidecar/dns/filter.c — see dns_filter.h. */
#include "sidecar/dns/filter.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/match.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/dns/bind.h"

#define UDP_LIMIT_MAX 4096u

static int deny_rcode(const struct sk_policy *p)
{
	return p->dns.deny == SK_DNS_DENY_REFUSED ? SK_DNS_RC_REFUSED : SK_DNS_RC_NXDOMAIN;
}

static bool type_allowed(const struct sk_policy *p, uint16_t t)
{
	/* Zone transfers and OPT are never questions a workload needs to ask, whatever the list says. */
	if (t == SK_DNS_T_OPT || t == SK_DNS_T_AXFR || t == SK_DNS_T_IXFR)
		return false;
	for (size_t i = 0; i < p->dns.n_allow_types; i++)
		if (p->dns.allow_types[i] == t)
			return true;
	return false;
}

static void answer_local(const struct sk_dns_msg *m, int rcode, enum sk_dns_result r, uint8_t *out,
			 size_t cap, struct sk_dns_qverdict *v)
{
	int n = sk_dns_build_response(m, rcode, out, cap);
	v->result = r;
	v->rcode = rcode;
	if (n < 0) {
		v->action = SK_DNS_ACT_DROP;
		return;
	}
	v->action = SK_DNS_ACT_ANSWER;
	v->len = (size_t)n;
}

static void answer_formerr(const uint8_t *msg, size_t len, enum sk_dns_result r, uint8_t *out, size_t cap,
			   struct sk_dns_qverdict *v)
{
	int n = sk_dns_build_formerr(msg, len, out, cap);
	v->result = r;
	v->rcode = SK_DNS_RC_FORMERR;
	if (n < 0) {
		v->action = SK_DNS_ACT_DROP;
		return;
	}
	v->action = SK_DNS_ACT_ANSWER;
	v->len = (size_t)n;
}

/* Whether the question name carries a secret: its text (labels joined by dots) and its labels joined
 * without them (a value cut across labels), both as they came (binary labels included). */
static bool name_misuse(const struct sk_policy *p, const struct sk_secret_value *values, const struct sk_dns_name *n)
{
	if (!p->n_secrets)
		return false;
	struct sk_swap_set set = { p->secrets, p->n_secrets, values };
	struct sk_swap_misuse m;
	uint8_t dotted[SK_DNS_NAME_WIRE_MAX], joined[SK_DNS_NAME_WIRE_MAX];
	size_t dl = 0, jl = 0;
	for (size_t i = 0; i < n->len && n->wire[i];) {
		size_t l = n->wire[i++];
		if (l > (size_t)n->len - i)
			l = (size_t)n->len - i;
		if (dl)
			dotted[dl++] = '.';
		memcpy(dotted + dl, n->wire + i, l);
		memcpy(joined + jl, n->wire + i, l);
		dl += l;
		jl += l;
		i += l;
	}
	return sk_swap_scan(&set, dotted, dl, SK_SWAP_AT_DNS, &m) || sk_swap_scan(&set, joined, jl, SK_SWAP_AT_DNS, &m);
}

void sk_dns_filter_query(const struct sk_policy *p, const uint8_t *msg, size_t len, bool tcp,
			 uint8_t *out, size_t cap, struct sk_dns_qverdict *v)
{
	sk_dns_filter_query_ex(p, NULL, msg, len, tcp, out, cap, v);
}

void sk_dns_filter_query_ex(const struct sk_policy *p, const struct sk_secret_value *values, const uint8_t *msg,
			    size_t len, bool tcp, uint8_t *out, size_t cap, struct sk_dns_qverdict *v)
{
	memset(v, 0, sizeof(*v));
	v->q.rule = -1;
	v->action = SK_DNS_ACT_DROP;
	v->result = SK_DNS_R_MALFORMED;
	if (len < SK_DNS_HDR_LEN)
		return;
	/* Never answer a response: two resolvers pointed at each other would loop forever. */
	if (msg[2] & 0x80) {
		v->result = SK_DNS_R_NOT_QUERY;
		return;
	}
	struct sk_dns_msg m;
	if (sk_dns_parse(msg, len, &m) != SK_DNS_OK) {
		answer_formerr(msg, len, SK_DNS_R_MALFORMED, out, cap, v);
		return;
	}
	struct sk_dns_fquery *q = &v->q;
	q->id = m.hdr.id;
	q->flags = m.hdr.flags;
	q->edns = m.has_opt;
	q->do_bit = m.do_bit;
	if (tcp)
		q->udp_limit = UDP_LIMIT_MAX;
	else if (m.has_opt)
		q->udp_limit = m.udp_size < SK_DNS_UDP_MIN ? SK_DNS_UDP_MIN
			       : m.udp_size > UDP_LIMIT_MAX ? UDP_LIMIT_MAX : m.udp_size;
	else
		q->udp_limit = SK_DNS_UDP_MIN;

	if (SK_DNS_OPCODE(m.hdr.flags) != 0) {
		answer_local(&m, SK_DNS_RC_NOTIMP, SK_DNS_R_NOTIMP, out, cap, v);
		return;
	}
	/* Several questions in one message are undefined in practice and a way to smuggle a second name
	 * past a filter that only looks at the first. */
	if (m.hdr.qdcount != 1) {
		answer_formerr(msg, len, SK_DNS_R_QDCOUNT, out, cap, v);
		return;
	}
	q->qname = m.qname;
	q->qtype = m.qtype;
	q->qclass = m.qclass;
	if (m.has_opt && m.edns_version > 0) {
		answer_local(&m, 16 /* BADVERS */, SK_DNS_R_BADVERS, out, cap, v);
		return;
	}

	enum sk_dns_result deny = SK_DNS_R_FORWARDED;
	int rcode = SK_DNS_RC_NOERROR;
	char text[SK_DNS_NAME_TEXT_MAX];
	/* First, and in every mode: a credential in a name is never forwarded, and never written. */
	if (name_misuse(p, values, &m.qname)) {
		answer_local(&m, SK_DNS_RC_REFUSED, SK_DNS_R_CREDENTIAL_MISUSE, out, cap, v);
		(void)snprintf(q->name, sizeof(q->name), "%s", SK_DNS_MISUSE_NAME);
		(void)sk_dns_name_from_text("credential.invalid", &q->qname);
		return;
	}
	if (m.qclass != SK_DNS_CLASS_IN) {
		deny = SK_DNS_R_REFUSED_CLASS;
		rcode = SK_DNS_RC_REFUSED;
	} else if (!type_allowed(p, m.qtype)) {
		deny = SK_DNS_R_REFUSED_TYPE;
		rcode = SK_DNS_RC_REFUSED;
	} else if (sk_dns_name_text(&m.qname, text) < 0) {
		deny = SK_DNS_R_BAD_NAME;
		rcode = deny_rcode(p);
	} else if (strlen(text) > p->dns.max_query_length) {
		/* Checked before validity so an over-long exfiltration attempt is always REFUSED. */
		deny = SK_DNS_R_TOO_LONG;
		rcode = SK_DNS_RC_REFUSED;
	} else if (sk_domain_normalize(text, strlen(text), 0, q->name, NULL, NULL) < 0) {
		q->name[0] = '\0';
		deny = SK_DNS_R_BAD_NAME;
		rcode = deny_rcode(p);
	} else if ((q->rule = sk_match_name_normalized(p, q->name)) < 0) {
		deny = SK_DNS_R_DENIED;
		rcode = deny_rcode(p);
	}

	if (deny == SK_DNS_R_FORWARDED) {
		v->action = SK_DNS_ACT_FORWARD;
		v->result = SK_DNS_R_FORWARDED;
		return;
	}
	if (p->mode == SK_MODE_AUDIT) {
		q->audit = true;
		q->would = deny;
		v->action = SK_DNS_ACT_FORWARD;
		v->result = SK_DNS_R_FORWARDED;
		return;
	}
	answer_local(&m, rcode, deny, out, cap, v);
}

int sk_dns_filter_upstream_query(const struct sk_dns_fquery *q, uint16_t id, uint8_t *out, size_t cap)
{
	/* Nothing the client chose beyond (name, type, class) reaches upstream: each free bit would be one
	 * more bit per query to the allowed zone's servers. The name goes in lower case (length bytes are at
	 * most 63, below 'A', so folding every byte only touches label text); the header is RD alone (the
	 * upstream is the pod's recursive resolver: a non-recursive answer would be a referral that the answer
	 * check strips to nothing anyway; CD, AD and the rest stay 0); EDNS is always our own OPT (our UDP
	 * size, DO=0, no options), whatever the client sent, so answers up to SK_DNS_EDNS_SIZE still come
	 * over UDP. */
	struct sk_dns_name lower = q->qname;
	for (size_t i = 0; i < lower.len && i < sizeof(lower.wire); i++)
		if (lower.wire[i] >= 'A' && lower.wire[i] <= 'Z')
			lower.wire[i] = (uint8_t)(lower.wire[i] + ('a' - 'A'));
	return sk_dns_build_query(id, SK_DNS_F_RD, &lower, q->qtype, q->qclass, true, false, out, cap);
}

int sk_dns_filter_local_answer(const struct sk_dns_fquery *q, int rcode, bool tc, uint8_t *out, size_t cap)
{
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, cap);
	struct sk_dns_header h = {
		.id = q->id,
		.flags = (uint16_t)(SK_DNS_F_QR | SK_DNS_F_RA | (q->flags & (0x7800u | SK_DNS_F_RD | SK_DNS_F_CD)) |
				    (tc ? SK_DNS_F_TC : 0) | ((unsigned)rcode & 0xfu)),
		.qdcount = 1,
		.arcount = q->edns ? 1 : 0,
	};
	sk_dns_w_header(&w, &h);
	sk_dns_w_name(&w, &q->qname, true);
	sk_dns_w_u16(&w, q->qtype);
	sk_dns_w_u16(&w, q->qclass);
	if (q->edns)
		sk_dns_w_opt(&w, SK_DNS_EDNS_SIZE, q->do_bit, (uint8_t)((unsigned)rcode >> 4));
	return w.overflow ? -ENOSPC : (int)w.len;
}

/* A private or link-local answer is acceptable only when a CIDR rule would let a connection reach it;
 * asking the matcher itself keeps this in step with the proxy's decision (rules that merely contain
 * the address, like 0.0.0.0/0, do not vouch for private space there either). */
static bool cidr_vouches(const struct sk_policy *p, const struct sk_addr *a)
{
	struct sk_addr v4;
	bool has_v4 = a->family == AF_INET6 && sk_addr_embedded_v4(a, &v4);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (r->kind != SK_RULE_CIDR)
			continue;
		if (!sk_cidr_contains(&r->cidr, a) && !(has_v4 && sk_cidr_contains(&r->cidr, &v4)))
			continue;
		struct sk_query qq = {
			.host = NULL,
			.dst = a,
			.port = r->n_ports ? r->ports[0] : 443,
			.proto = r->proto == SK_PROTO_ANY ? SK_PROTO_TCP : r->proto,
		};
		struct sk_decision d;
		sk_match(p, &qq, &d);
		if (d.allow && d.reason == SK_REASON_RULE)
			return true;
	}
	return false;
}

static bool rebinding(const struct sk_policy *p, const struct sk_addr *a)
{
	if (!sk_addr_is_link_local(a) && !(p->block_private && sk_addr_is_private(a)))
		return false;
	return !cidr_vouches(p, a);
}

static bool in_chain(const struct sk_dns_name *chain, size_t n, const struct sk_dns_name *name)
{
	for (size_t i = 0; i < n; i++)
		if (sk_dns_name_equal(&chain[i], name))
			return true;
	return false;
}

/* Follows CNAMEs from the question name through the answer section. */
static size_t build_chain(const struct sk_dns_msg *m, const struct sk_dns_name *qname,
			  struct sk_dns_name chain[SK_DNS_CHAIN_MAX + 1])
{
	size_t n = 1;
	chain[0] = *qname;
	while (n <= SK_DNS_CHAIN_MAX) {
		size_t off = m->sec[SK_DNS_SEC_AN];
		unsigned left = m->hdr.ancount;
		struct sk_dns_rr rr;
		bool found = false;
		while (sk_dns_rr_next(m, &off, &left, &rr)) {
			if (rr.type != SK_DNS_T_CNAME || rr.rclass != SK_DNS_CLASS_IN ||
			    !sk_dns_name_equal(&rr.name, &chain[n - 1]))
				continue;
			struct sk_dns_name t;
			if (!sk_dns_rr_target(m, &rr, &t) || in_chain(chain, n, &t))
				return n;
			if (n == SK_DNS_CHAIN_MAX + 1)
				return n;
			chain[n++] = t;
			found = true;
			break;
		}
		if (!found)
			break;
	}
	return n;
}

static void local_into(const struct sk_dns_fquery *q, int rcode, bool tc, enum sk_dns_result r, uint8_t *out,
		       size_t cap, struct sk_dns_averdict *v)
{
	int n = sk_dns_filter_local_answer(q, rcode, tc, out, cap);
	v->action = n < 0 ? SK_DNS_ACT_DROP : SK_DNS_ACT_ANSWER;
	v->len = n < 0 ? 0 : (size_t)n;
	v->result = r;
	v->rcode = rcode;
	v->n_bind = 0;
}

static bool owner_allowed(const struct sk_policy *p, const struct sk_dns_name *n)
{
	char text[SK_DNS_NAME_TEXT_MAX];
	return sk_dns_name_text(n, text) == 0 && sk_match_name(p, text) >= 0;
}

/* SvcParamKeys (RFC 9460 §14.3.2). */
#define SVC_KEY_MANDATORY 0
#define SVC_KEY_IPV4HINT 4
#define SVC_KEY_ECH 5
#define SVC_KEY_IPV6HINT 6

/* The SvcParams no HTTPS/SVCB record returned to the client carries: ech (a client holding an ECH config
 * could hide the name it really wants behind the outer SNI the proxy decides on) and the address hints
 * (they never bind, so the most they do is point a client at an address it cannot reach — or, with
 * 169.254.169.254 in an ipv4hint, tell the agent where to aim next; the A/AAAA answers serve instead). */
static bool svc_key_stripped(uint16_t key)
{
	return key == SVC_KEY_IPV4HINT || key == SVC_KEY_ECH || key == SVC_KEY_IPV6HINT;
}

static uint16_t rd16(const uint8_t *b)
{
	return (uint16_t)((b[0] << 8) | b[1]);
}

/* Copies an HTTPS/SVCB record (RFC 9460) without its `ech`, `ipv4hint` and `ipv6hint` SvcParams
 * (svc_key_stripped says why). The rdata is
 * checked as it is walked: priority, an uncompressed TargetName (§2.2; a pointer or an extended label
 * type is malformed), then SvcParams with strictly increasing keys whose values end exactly at RDLENGTH.
 * The record is rebuilt through the writer (owner name re-encoded, RDLENGTH recomputed), so nothing in
 * the output points into the upstream message. Returns 1 written, 0 left out (its `mandatory` list names
 * a stripped key: the record is unusable without it, so the client falls back to its A/AAAA answers),
 * -1 malformed (nothing written). */
static int copy_svcb(struct sk_dns_writer *w, const struct sk_dns_msg *m, const struct sk_dns_rr *rr, uint32_t ttl)
{
	const uint8_t *b = m->buf;
	const size_t end = rr->end;
	size_t p = rr->rdata;
	if (end - p < 2)
		return -1;
	p += 2;                                   /* SvcPriority */
	const size_t target = p;
	for (;;) {
		if (p >= end)
			return -1;
		const uint8_t l = b[p];
		if (l > SK_DNS_LABEL_MAX)
			return -1;
		if (end - p - 1 < l || p + 1 + l - target > SK_DNS_NAME_WIRE_MAX)
			return -1;
		p += 1 + (size_t)l;
		if (!l)
			break;
	}
	const size_t params = p;
	long prev = -1;
	while (p < end) {
		if (end - p < 4)
			return -1;
		const uint16_t key = rd16(b + p), vlen = rd16(b + p + 2);
		if ((long)key <= prev || end - p - 4 < vlen)
			return -1;
		prev = key;
		if (key == SVC_KEY_MANDATORY) {
			if (vlen == 0 || vlen % 2)
				return -1;
			for (size_t i = 0; i < vlen; i += 2)
				if (svc_key_stripped(rd16(b + p + 4 + i)))
					return 0;
		}
		p += 4 + (size_t)vlen;
	}
	sk_dns_w_name(w, &rr->name, true);
	sk_dns_w_u16(w, rr->type);
	sk_dns_w_u16(w, rr->rclass);
	sk_dns_w_u32(w, ttl);
	const size_t rdlen_at = w->len;
	sk_dns_w_u16(w, 0);
	const size_t start = w->len;
	sk_dns_w_bytes(w, b + rr->rdata, params - rr->rdata);
	for (p = params; p < end;) {
		const uint16_t key = rd16(b + p);
		const size_t n = 4 + (size_t)rd16(b + p + 2);
		if (!svc_key_stripped(key))
			sk_dns_w_bytes(w, b + p, n);
		p += n;
	}
	/* Never longer than the upstream rdata, which fit in 16 bits. */
	sk_dns_w_set_u16(w, rdlen_at, (uint16_t)(w->len - start));
	return 1;
}

/* Copies one record into the client's answer: HTTPS/SVCB through copy_svcb, the rest through the codec.
 * Returns 1 written, 0 left out, -1 malformed. */
static int copy_rr(struct sk_dns_writer *w, const struct sk_dns_msg *m, const struct sk_dns_rr *rr, uint32_t ttl)
{
	if (rr->type == SK_DNS_T_HTTPS || rr->type == SK_DNS_T_SVCB)
		return copy_svcb(w, m, rr, ttl);
	return sk_dns_w_copy_rr(w, m, rr, ttl) ? 1 : -1;
}

void sk_dns_filter_answer(const struct sk_policy *p, const struct sk_dns_filter_opts *opts,
			  const struct sk_dns_fquery *q, const uint8_t *ans, size_t alen, bool upstream_tcp,
			  bool client_tcp, uint8_t *out, size_t cap, struct sk_dns_averdict *v)
{
	memset(v, 0, sizeof(*v));
	struct sk_dns_msg m;
	if (sk_dns_parse(ans, alen, &m) != SK_DNS_OK || !(m.hdr.flags & SK_DNS_F_QR) ||
	    SK_DNS_OPCODE(m.hdr.flags) != 0 || m.hdr.qdcount != 1 || !sk_dns_name_equal(&m.qname, &q->qname) ||
	    m.qtype != q->qtype || m.qclass != q->qclass) {
		local_into(q, SK_DNS_RC_SERVFAIL, false, SK_DNS_R_UPSTREAM_ERROR, out, cap, v);
		return;
	}
	if ((m.hdr.flags & SK_DNS_F_TC) && !upstream_tcp) {
		v->action = SK_DNS_ACT_RETRY_TCP;
		v->result = SK_DNS_R_TRUNCATED;
		return;
	}
	int rcode = (int)SK_DNS_RCODE(m.hdr.flags);
	if (m.ext_rcode != 0 || (rcode != SK_DNS_RC_NOERROR && rcode != SK_DNS_RC_NXDOMAIN)) {
		/* Pass the failure on without any record: SERVFAIL, REFUSED... carry no data we vouch for. */
		local_into(q, m.ext_rcode ? SK_DNS_RC_SERVFAIL : rcode, false,
			   rcode == SK_DNS_RC_SERVFAIL ? SK_DNS_R_UPSTREAM_ERROR : SK_DNS_R_ANSWERED, out, cap, v);
		return;
	}

	struct sk_dns_name chain[SK_DNS_CHAIN_MAX + 1];
	size_t n_chain = build_chain(&m, &q->qname, chain);

	size_t limit = client_tcp ? SK_DNS_MSG_MAX : q->udp_limit;
	if (limit > cap)
		limit = cap;
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, limit);
	struct sk_dns_header h = {
		.id = q->id,
		.flags = (uint16_t)(SK_DNS_F_QR | SK_DNS_F_RA | (q->flags & (SK_DNS_F_RD | SK_DNS_F_CD)) |
				    (unsigned)rcode),
		.qdcount = 1,
	};
	sk_dns_w_header(&w, &h);
	sk_dns_w_name(&w, &q->qname, true);
	sk_dns_w_u16(&w, q->qtype);
	sk_dns_w_u16(&w, q->qclass);

	uint16_t counts[3] = { 0, 0, 0 };
	size_t off = m.sec[SK_DNS_SEC_AN];
	unsigned left = m.hdr.ancount;
	struct sk_dns_rr rr;
	while (sk_dns_rr_next(&m, &off, &left, &rr)) {
		if (!in_chain(chain, n_chain, &rr.name)) {
			v->stripped++;
			continue;
		}
		/* The question is class IN: a record of another class answers nothing the client asked, and an
		 * "A" of class CH would reach a stub that ignores the class unchecked and unbound (found by
		 * fuzz_dns_filter). */
		if (rr.rclass != SK_DNS_CLASS_IN) {
			v->stripped++;
			continue;
		}
		uint32_t ttl = rr.ttl > SK_BIND_TTL_MAX ? SK_BIND_TTL_MAX : rr.ttl;
		bool addr_rr = rr.type == SK_DNS_T_A || rr.type == SK_DNS_T_AAAA;
		if (addr_rr) {
			if (opts && opts->strict_chain && !owner_allowed(p, &rr.name)) {
				v->stripped++;
				continue;
			}
			struct sk_addr a = { .family = rr.type == SK_DNS_T_A ? AF_INET : AF_INET6 };
			memcpy(a.bytes, m.buf + rr.rdata, rr.rdlen);   /* 4 or 16: checked by the parser */
			/* Rebinding: an allowed name must not become a way to reach pod-internal or metadata
			 * addresses. Audit mode lets it through (it allows everything) but still says so. */
			if (rebinding(p, &a)) {
				if (p->mode != SK_MODE_AUDIT) {
					local_into(q, SK_DNS_RC_REFUSED, false, SK_DNS_R_REBINDING, out, cap, v);
					return;
				}
				v->result = SK_DNS_R_REBINDING;
			}
			if (v->n_bind == SK_DNS_MAX_BINDINGS) {
				v->stripped++;   /* never return an address the proxy would not find bound */
				continue;
			}
			v->bind[v->n_bind].addr = a;
			v->bind[v->n_bind].ttl = ttl;
			v->n_bind++;
		}
		const int c = copy_rr(&w, &m, &rr, ttl);
		if (c < 0) {
			local_into(q, SK_DNS_RC_SERVFAIL, false, SK_DNS_R_UPSTREAM_ERROR, out, cap, v);
			return;
		}
		if (c == 0) {
			v->stripped++;
			continue;
		}
		counts[0]++;
	}
	left = m.hdr.nscount;
	off = m.sec[SK_DNS_SEC_NS];
	while (sk_dns_rr_next(&m, &off, &left, &rr)) {
		/* Only the SOA of a negative answer (RFC 2308 negative caching); NS and glue are for
		 * resolvers, not for the stub behind us. */
		if (rr.type != SK_DNS_T_SOA || rr.rclass != SK_DNS_CLASS_IN) {
			v->stripped++;
			continue;
		}
		const int c = copy_rr(&w, &m, &rr, rr.ttl > SK_BIND_TTL_MAX ? SK_BIND_TTL_MAX : rr.ttl);
		if (c < 0) {
			local_into(q, SK_DNS_RC_SERVFAIL, false, SK_DNS_R_UPSTREAM_ERROR, out, cap, v);
			return;
		}
		if (c == 0) {
			v->stripped++;
			continue;
		}
		counts[1]++;
	}
	/* Additional: all dropped (HTTPS/SVCB there included, with any ech they carry), except the OPT we
	 * add for an EDNS client. */
	v->stripped += m.hdr.arcount - (m.has_opt ? 1u : 0u);
	if (q->edns) {
		sk_dns_w_opt(&w, SK_DNS_EDNS_SIZE, q->do_bit, 0);
		counts[2] = 1;
	}
	if (w.overflow) {
		local_into(q, rcode, true, SK_DNS_R_TRUNCATED, out, cap, v);
		return;
	}
	sk_dns_w_set_u16(&w, 6, counts[0]);
	sk_dns_w_set_u16(&w, 8, counts[1]);
	sk_dns_w_set_u16(&w, 10, counts[2]);
	v->action = SK_DNS_ACT_ANSWER;
	if (v->result != SK_DNS_R_REBINDING)
		v->result = SK_DNS_R_ANSWERED;
	v->rcode = rcode;
	v->len = w.len;
}

const char *sk_dns_result_name(enum sk_dns_result r)
{
	switch (r) {
	case SK_DNS_R_FORWARDED: return "forwarded";
	case SK_DNS_R_ANSWERED: return "answered";
	case SK_DNS_R_DENIED: return "denied";
	case SK_DNS_R_BAD_NAME: return "bad_name";
	case SK_DNS_R_TOO_LONG: return "too_long";
	case SK_DNS_R_REFUSED_TYPE: return "refused_type";
	case SK_DNS_R_REFUSED_CLASS: return "refused_class";
	case SK_DNS_R_MALFORMED: return "malformed";
	case SK_DNS_R_QDCOUNT: return "qdcount";
	case SK_DNS_R_NOTIMP: return "notimp";
	case SK_DNS_R_BADVERS: return "badvers";
	case SK_DNS_R_NOT_QUERY: return "not_query";
	case SK_DNS_R_REBINDING: return "rebinding";
	case SK_DNS_R_UPSTREAM_ERROR: return "upstream_error";
	case SK_DNS_R_TRUNCATED: return "truncated";
	case SK_DNS_R_TIMEOUT: return "timeout";
	case SK_DNS_R_BUDGET_EXHAUSTED: return "budget_exhausted";
	case SK_DNS_R_BUDGET_UNAVAILABLE: return "budget_unavailable";
	case SK_DNS_R_CREDENTIAL_MISUSE: return "credential_misuse";
	}
	return "unknown";
}
