/* init/ruleset.c — builds the intermediate description of table `inet stockade` from a policy and
 * renders it as nft text. The libnftnl rendering lives in init/nft.c; see ruleset.h for the rule order. */
#include "init/ruleset.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

typedef unsigned __int128 sk_u128;

static const char *const counter_names[SK_RS_N_COUNTERS] = {
	"agent_reject_tcp", "agent_reject_other", "other_uid_reject_tcp", "other_uid_reject_other",
	"mcast_report_drop", "spoofed_source_drop",
};

static const char *const set_names[SK_RS_N_SETS] = {
	"exempt_uids", "loopback_ports", "icmpv6_nd", "icmpv6_mld", "direct4", "direct6",
};

/* ICMPv6 neighbour discovery, which the kernel sends on its own behalf (from kernel sockets): without it
 * all IPv6 dies. Hop-limited to the link by the protocol. */
static const uint8_t nd_types[] = {
	133, /* nd-router-solicit */
	134, /* nd-router-advert */
	135, /* nd-neighbor-solicit */
	136, /* nd-neighbor-advert */
	137, /* nd-redirect */
};

/* MLD (RFC 2710, 3810): a report or done names the group, so a join would carry agent-chosen bytes out of
 * the pod, past every UID rule. Not needed by ND: a veth delivers the multicast neighbour solicitations to the
 * solicited-node group whether or not anyone reported it (see docs/threat-model.md for snooping bridges). */
static const uint8_t mld_types[] = {
	130, /* mld-listener-query */
	131, /* mld-listener-report */
	132, /* mld-listener-done */
	143, /* mld2-listener-report */
};

const char *sk_rs_counter_name(enum sk_rs_counter_id c)
{
	if (c < 0 || c >= SK_RS_N_COUNTERS)
		return "";
	return counter_names[c];
}

size_t sk_ruleset_n_elems(const struct sk_ruleset *rs)
{
	size_t n = 0;
	for (size_t i = 0; i < SK_RS_N_SETS; i++)
		n += rs->sets[i].n_elems;
	return n;
}

size_t sk_ruleset_chain_rules(const struct sk_ruleset *rs, enum sk_rs_chain_id c)
{
	size_t n = 0;
	for (size_t i = 0; i < rs->n_rules; i++)
		n += rs->rules[i].chain == c;
	return n;
}

void sk_ruleset_free(struct sk_ruleset *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < SK_RS_N_SETS; i++)
		free(rs->sets[i].elems);
	free(rs->rules);
	free(rs);
}

/* ---- direct sets: disjoint boxes of address range × protocol × port range ---- */

struct range {
	sk_u128 lo, hi;
};

struct port_range {
	uint16_t port;         /* meaningful only in per-port lists */
	sk_u128 lo, hi;
};

static sk_u128 addr_to_u128(const uint8_t *b, size_t len)
{
	sk_u128 v = 0;
	for (size_t i = 0; i < len; i++)
		v = (v << 8) | b[i];
	return v;
}

static void u128_to_addr(sk_u128 v, uint8_t *b, size_t len)
{
	memset(b, 0, 16);
	for (size_t i = len; i-- > 0;) {
		b[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

/* A least-significant-digit radix sort, stable: one counting pass per key byte, skipping a byte every
 * element shares (an IPv4 /28 list needs two or three passes, not six; the any-port list's port bytes,
 * all 0, none). A 10 000-rule policy spent more on qsort's comparator calls here than on building the set.
 * Key byte b of (port, lo), least significant first: lo's alen bytes, then the port's two. */
static unsigned port_range_byte(const struct port_range *r, size_t b, size_t alen)
{
	if (b < alen)
		return (unsigned)(r->lo >> (8 * b)) & 0xff;
	return (unsigned)(r->port >> (8 * (b - alen))) & 0xff;
}

/* v[0..n) by port, then lo; tmp has room for n. */
static void sort_port_ranges(struct port_range *v, struct port_range *tmp, size_t n, size_t alen)
{
	struct port_range *src = v, *dst = tmp;
	for (size_t b = 0; b < alen + 2 && n > 1; b++) {
		size_t count[256] = { 0 }, at = 0;
		for (size_t i = 0; i < n; i++)
			count[port_range_byte(&src[i], b, alen)]++;
		if (count[port_range_byte(&src[0], b, alen)] == n)
			continue;
		for (size_t k = 0; k < 256; k++) {
			const size_t c = count[k];
			count[k] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[port_range_byte(&src[i], b, alen)]++] = src[i];
		struct port_range *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

/* Merges overlapping or adjacent ranges of r (sorted by lo) in place; returns the new count. */
static size_t merge_sorted(struct range *r, size_t n)
{
	if (n == 0)
		return 0;
	size_t out = 0;
	for (size_t i = 1; i < n; i++) {
		/* adjacency test written so that hi == max cannot overflow */
		if (r[i].lo <= r[out].hi || r[i].lo - 1 == r[out].hi) {
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
		} else {
			r[++out] = r[i];
		}
	}
	return out + 1;
}

/* Appends a minus b (both sorted, disjoint) to out (capacity checked by the caller: |a| + |b|). */
static size_t subtract_ranges(const struct range *a, size_t na, const struct range *b, size_t nb,
			      struct range *out)
{
	size_t n = 0, j = 0;
	for (size_t i = 0; i < na; i++) {
		sk_u128 lo = a[i].lo, hi = a[i].hi;
		bool alive = true;
		while (j < nb && b[j].hi < lo)
			j++;
		for (size_t k = j; k < nb && b[k].lo <= hi && alive; k++) {
			if (b[k].lo > lo)
				out[n++] = (struct range){ lo, b[k].lo - 1 };
			if (b[k].hi >= hi)
				alive = false;
			else
				lo = b[k].hi + 1;
		}
		if (alive)
			out[n++] = (struct range){ lo, hi };
	}
	return n;
}

struct elem_vec {
	struct sk_rs_elem *v;
	size_t n, cap;
};

static int elem_push(struct elem_vec *ev, const struct sk_rs_elem *e)
{
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? ev->cap * 2 : 16;
		struct sk_rs_elem *nv = realloc(ev->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ev->v = nv;
		ev->cap = cap;
	}
	ev->v[ev->n++] = *e;
	return 0;
}

static int push_direct(struct elem_vec *ev, size_t alen, uint8_t proto, const struct range *r,
		       uint16_t plo, uint16_t phi)
{
	struct sk_rs_elem e = { 0 };
	u128_to_addr(r->lo, e.addr_lo, alen);
	u128_to_addr(r->hi, e.addr_hi, alen);
	e.proto = proto;
	e.port_lo = plo;
	e.port_hi = phi;
	return elem_push(ev, &e);
}

/* Which protocols a CIDR rule puts into the kernel fast path: only direct rules and UDP rules, the
 * same rules that sk_policy_netns_hash covers, so a change the kernel would see changes the hash. */
static unsigned rule_direct_protos(const struct sk_rule *r)
{
	enum { P_TCP = 1, P_UDP = 2 };
	if (r->kind != SK_RULE_CIDR)
		return 0;
	if (r->proto == SK_PROTO_UDP)
		return P_UDP;
	if (!r->direct)
		return 0;
	return r->proto == SK_PROTO_ANY ? (P_TCP | P_UDP) : P_TCP;
}

/* Elements of one family × protocol: any-port ranges merged, then per port the merged ranges minus
 * the any-port ranges, so no two elements overlap. */
static int build_direct_group(const struct sk_policy *p, int family, uint8_t proto, struct elem_vec *ev)
{
	size_t alen = family == AF_INET ? 4 : 16;
	unsigned bit = proto == IPPROTO_TCP ? 1 : 2;
	size_t n_any = 0, n_port = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (!(rule_direct_protos(r) & bit) || r->cidr.net.family != family)
			continue;
		if (r->n_ports == 0)
			n_any++;
		else
			n_port += r->n_ports;
	}
	if (n_any + n_port == 0)
		return 0;

	struct range *any = calloc(n_any + 1, sizeof(*any));
	/* the any-port ranges (port 0) first, then the per-port ones: one sort serves both lists */
	struct port_range *pr = calloc(n_any + n_port + 1, sizeof(*pr));
	struct port_range *prt = malloc((n_any + n_port + 1) * sizeof(*prt));
	struct range *tmp = calloc(n_port + n_any + 1, sizeof(*tmp));
	struct range *diff = calloc(n_port + n_any + 1, sizeof(*diff));
	if (!any || !pr || !prt || !tmp || !diff) {
		rc = -ENOMEM;
		goto out;
	}

	size_t ia = 0, ip = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (!(rule_direct_protos(r) & bit) || r->cidr.net.family != family)
			continue;
		unsigned bits = (unsigned)alen * 8;
		unsigned prefix = r->cidr.prefix > bits ? bits : r->cidr.prefix;
		sk_u128 lo = addr_to_u128(r->cidr.net.bytes, alen);
		sk_u128 span = prefix == 0 ? (bits == 128 ? ~(sk_u128)0 : (((sk_u128)1 << bits) - 1))
					   : ((((sk_u128)1) << (bits - prefix)) - 1);
		lo &= ~span;
		struct range rg = { lo, lo | span };
		if (r->n_ports == 0) {
			pr[ia++] = (struct port_range){ 0, rg.lo, rg.hi };
			continue;
		}
		for (size_t k = 0; k < r->n_ports; k++)
			pr[n_any + ip++] = (struct port_range){ r->ports[k], rg.lo, rg.hi };
	}
	struct port_range *ports = pr + n_any;
	sort_port_ranges(pr, prt, ia, alen);
	for (size_t i = 0; i < ia; i++)
		any[i] = (struct range){ pr[i].lo, pr[i].hi };
	n_any = merge_sorted(any, ia);
	for (size_t i = 0; i < n_any && rc == 0; i++)
		rc = push_direct(ev, alen, proto, &any[i], 0, 65535);

	/* sorted by port, then address: each port's ranges come out sorted for merge_sorted */
	sort_port_ranges(ports, prt, ip, alen);
	for (size_t i = 0; i < ip && rc == 0;) {
		size_t j = i, nt = 0;
		while (j < ip && ports[j].port == ports[i].port) {
			tmp[nt++] = (struct range){ ports[j].lo, ports[j].hi };
			j++;
		}
		nt = merge_sorted(tmp, nt);
		size_t nd = subtract_ranges(tmp, nt, any, n_any, diff);
		for (size_t k = 0; k < nd && rc == 0; k++)
			rc = push_direct(ev, alen, proto, &diff[k], ports[i].port, ports[i].port);
		i = j;
	}
out:
	free(any);
	free(pr);
	free(prt);
	free(tmp);
	free(diff);
	return rc;
}

static int build_direct_set(const struct sk_policy *p, int family, struct sk_rs_set *s)
{
	struct elem_vec ev = { 0 };
	int rc = build_direct_group(p, family, IPPROTO_TCP, &ev);
	if (rc == 0)
		rc = build_direct_group(p, family, IPPROTO_UDP, &ev);
	if (rc < 0) {
		free(ev.v);
		return rc;
	}
	s->elems = ev.v;
	s->n_elems = ev.n;
	return 0;
}

static int build_val_set(struct sk_rs_set *s, size_t n, uint32_t (*get)(const void *, size_t), const void *src)
{
	if (n == 0)
		return 0;
	s->elems = calloc(n, sizeof(*s->elems));
	if (!s->elems)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->elems[i].val = get(src, i);
	s->n_elems = n;
	return 0;
}

static uint32_t get_u32(const void *src, size_t i) { return ((const uint32_t *)src)[i]; }
static uint32_t get_u16(const void *src, size_t i) { return ((const uint16_t *)src)[i]; }
static uint32_t get_u8(const void *src, size_t i) { return ((const uint8_t *)src)[i]; }

/* ---- rules ---- */

struct rule_builder {
	struct sk_rs_rule *v;
	size_t n, cap;
	int rc;
};

static struct sk_rs_rule *rule_add(struct rule_builder *b, enum sk_rs_chain_id chain, const char *name,
				   enum sk_rs_verdict verdict)
{
	if (b->rc)
		return NULL;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		struct sk_rs_rule *nv = realloc(b->v, cap * sizeof(*nv));
		if (!nv) {
			b->rc = -ENOMEM;
			return NULL;
		}
		b->v = nv;
		b->cap = cap;
	}
	struct sk_rs_rule *r = &b->v[b->n++];
	memset(r, 0, sizeof(*r));
	r->chain = chain;
	r->name = name;
	r->verdict = verdict;
	r->counter = SK_RS_CNT_NONE;
	return r;
}

static void m_add(struct sk_rs_rule *r, enum sk_rs_match_kind kind, uint32_t val)
{
	if (r && r->n_m < SK_RS_MAX_MATCH)
		r->m[r->n_m++] = (struct sk_rs_match){ .kind = kind, .val = val };
}

static void m_set(struct sk_rs_rule *r, enum sk_rs_match_kind kind, enum sk_rs_set_id set)
{
	if (r && r->n_m < SK_RS_MAX_MATCH)
		r->m[r->n_m++] = (struct sk_rs_match){ .kind = kind, .set = set };
}

/* r's packets counted in one of the named counters (the drops and rejects /metrics reports). */
static void count_in(struct sk_rs_rule *r, enum sk_rs_counter_id c)
{
	if (r)
		r->counter = c;
}

/* One rule of the agent's flows to one local port: skuid, a match kind (oif lo or "ct status dnat",
 * value 0 or 1 as m_add wants it), the protocol and the port. */
static struct sk_rs_rule *agent_port_rule(struct rule_builder *b, enum sk_rs_chain_id c, const char *name,
					  enum sk_rs_verdict v, uint32_t agent, enum sk_rs_match_kind via,
					  uint8_t proto, uint16_t port)
{
	struct sk_rs_rule *r = rule_add(b, c, name, v);
	m_add(r, SK_RS_M_SKUID, agent);
	m_add(r, via, via == SK_RS_M_OIF_LO ? 1 : 0);
	m_add(r, SK_RS_M_L4PROTO, proto);
	m_add(r, SK_RS_M_DPORT, port);
	return r;
}

/* The agent's flows to the policy's direct addresses (the two families' sets), as rules of one verdict
 * (nat: RETURN, not redirected to the proxy; filter: ACCEPT). */
static void add_direct_rules(struct rule_builder *b, enum sk_rs_chain_id c, enum sk_rs_verdict v, uint32_t agent)
{
	struct sk_rs_rule *r = rule_add(b, c, "agent-direct4", v);
	m_add(r, SK_RS_M_SKUID, agent);
	m_add(r, SK_RS_M_NFPROTO, NFPROTO_IPV4);
	m_set(r, SK_RS_M_DIRECT_SET, SK_RS_SET_DIRECT4);
	r = rule_add(b, c, "agent-direct6", v);
	m_add(r, SK_RS_M_SKUID, agent);
	m_add(r, SK_RS_M_NFPROTO, NFPROTO_IPV6);
	m_set(r, SK_RS_M_DIRECT_SET, SK_RS_SET_DIRECT6);
}

/* The agent's loopback traffic the policy lets by, as rules of one verdict (nat: RETURN, not redirected
 * to the proxy; filter: ACCEPT): all of it, the listed ports (TCP in nat, which redirects TCP only; TCP
 * and UDP in filter), or none; the API gateway's port whatever the loopback policy. */
static void add_loopback_rules(struct rule_builder *b, enum sk_rs_chain_id c, enum sk_rs_verdict v,
			       const struct sk_policy *p)
{
	const uint32_t a = p->agent_uid;
	const bool nat = c == SK_RS_CHAIN_NAT;
	struct sk_rs_rule *r;
	switch (p->loopback) {
	case SK_LOOPBACK_ALLOW:
		r = rule_add(b, c, "agent-loopback", v);
		m_add(r, SK_RS_M_SKUID, a);
		m_add(r, SK_RS_M_OIF_LO, 1);
		break;
	case SK_LOOPBACK_PORTS:
		for (int udp = 0; udp < (nat ? 1 : 2); udp++) {
			r = rule_add(b, c, nat ? "agent-loopback-ports" : udp ? "agent-loopback-ports-udp"
									: "agent-loopback-ports-tcp", v);
			m_add(r, SK_RS_M_SKUID, a);
			m_add(r, SK_RS_M_OIF_LO, 1);
			m_add(r, SK_RS_M_L4PROTO, udp ? IPPROTO_UDP : IPPROTO_TCP);
			m_set(r, SK_RS_M_DPORT_SET, SK_RS_SET_LOPORTS);
		}
		__attribute__((fallthrough));
	case SK_LOOPBACK_DENY:
		agent_port_rule(b, c, "agent-api", v, a, SK_RS_M_OIF_LO, IPPROTO_TCP, p->ports.api);
		break;
	}
}

/* The nat chain's redirect of the agent's flows of one protocol (to destination port dport; 0: any) to
 * the sidecar's port `to`. */
static void redirect_rule(struct rule_builder *b, const char *name, uint32_t agent, uint8_t proto, uint16_t dport,
			  uint16_t to)
{
	struct sk_rs_rule *r = rule_add(b, SK_RS_CHAIN_NAT, name, SK_RS_REDIRECT);
	m_add(r, SK_RS_M_SKUID, agent);
	m_add(r, SK_RS_M_L4PROTO, proto);
	if (dport)
		m_add(r, SK_RS_M_DPORT, dport);
	if (r)
		r->redirect_port = to;
}

static void add_nat_rules(struct rule_builder *b, const struct sk_policy *p)
{
	const enum sk_rs_chain_id C = SK_RS_CHAIN_NAT;
	uint32_t a = p->agent_uid;

	/* DNS first: every agent query goes through the DNS filter, even one a direct rule would cover. */
	redirect_rule(b, "agent-dns-udp", a, IPPROTO_UDP, 53, p->ports.dns);
	redirect_rule(b, "agent-dns-tcp", a, IPPROTO_TCP, 53, p->ports.dns);

	add_direct_rules(b, C, SK_RS_RETURN, a);

	add_loopback_rules(b, C, SK_RS_RETURN, p);

	/* Everything else the agent opens over TCP goes to the proxy, which decides; loopback too when
	 * loopback is denied, so the denial is logged rather than silent. */
	redirect_rule(b, "agent-proxy", a, IPPROTO_TCP, 0, p->ports.proxy);
}

static void add_filter_rules(struct rule_builder *b, const struct sk_policy *p)
{
	const enum sk_rs_chain_id C = SK_RS_CHAIN_FILTER;
	uint32_t a = p->agent_uid;
	struct sk_rs_rule *r;

	/* Multicast membership reports leave from no socket (IGMP) or a kernel socket (MLD), so no UID rule
	 * sees them, and each names the group joined: a join is a channel out of the pod for whoever can
	 * join (the seccomp profile refuses the joins too). Dropped first, whatever else matches; IPv4 has
	 * no use for IGMP here, and IPv6 ND does not need MLD on a pod's link. */
	r = rule_add(b, C, "igmp-drop", SK_RS_DROP);
	m_add(r, SK_RS_M_L4PROTO, IPPROTO_IGMP);
	count_in(r, SK_RS_CNT_MCAST_DROP);
	r = rule_add(b, C, "mld-drop", SK_RS_DROP);
	m_add(r, SK_RS_M_L4PROTO, IPPROTO_ICMPV6);
	m_set(r, SK_RS_M_ICMPV6_SET, SK_RS_SET_MLD);
	count_in(r, SK_RS_CNT_MCAST_DROP);

	/* A source address that is not the netns's own is a forgery: over IPv6 any socket may bind one
	 * with IPV6_FREEBIND (no capability), and port 53 too where net.ipv4.ip_unprivileged_port_start
	 * is 0 (containerd's pod default). Sent via lo as [upstream resolver]:53 to the sidecar's connected
	 * DNS socket, whose port /proc/net/udp shows, the datagram is received as the resolver's answer:
	 * only the 16-bit DNS ID would then stand between the agent and an allowed name bound to an address
	 * of its choosing. IPv4 refuses such a source without IP_TRANSPARENT; this rule makes both families
	 * equal for every socket. The sidecar and the exempt UIDs (a transparent proxy may legitimately
	 * send from a foreign source) are left alone; socketless kernel packets do not match `meta skuid`. */
	r = rule_add(b, C, "spoofed-source", SK_RS_DROP);
	m_add(r, SK_RS_M_SKUID_NE, p->sidecar_uid);
	m_set(r, SK_RS_M_SKUID_NOT_SET, SK_RS_SET_EXEMPT);
	m_add(r, SK_RS_M_SADDR_NOT_LOCAL, 0);
	count_in(r, SK_RS_CNT_SPOOF_DROP);

	/* The admin port is for kubelet, which probes it from outside the pod: the agent does not read
	 * /denials or /metrics (which name the hosts it was refused and the rules that refused them). oif lo
	 * covers 127.0.0.1, ::1 and the pod's own addresses alike (local routes go through lo). Before the
	 * loopback rules, so `loopback: allow` or a listed port does not open it; with loopback denied the nat
	 * chain sends it to the proxy, which refuses its own ports, so this rule only ever sees un-redirected
	 * flows. */
	r = agent_port_rule(b, C, "agent-admin", SK_RS_REJECT_TCP, a, SK_RS_M_OIF_LO, IPPROTO_TCP, p->ports.admin);
	count_in(r, SK_RS_CNT_AGENT_TCP);

	/* The agent's packets are judged first and on every packet, never by conntrack state: conntrack
	 * does not know sockets, so an agent socket that reuses the 5-tuple of a flow another UID opened
	 * (a closed sidecar socket's port towards the upstream resolver, say) would otherwise ride that
	 * flow's "established" state past the filter. */
	add_loopback_rules(b, C, SK_RS_ACCEPT, p);

	/* Only our nat chain can DNAT an agent flow (the agent has no CAP_NET_ADMIN), and a redirect
	 * always targets the loopback address, so "dnat + our port" is one of our redirects. oif cannot
	 * be used: it still names the route chosen before the redirect. */
	agent_port_rule(b, C, "agent-redirected-proxy", SK_RS_ACCEPT, a, SK_RS_M_CT_DNAT, IPPROTO_TCP, p->ports.proxy);
	agent_port_rule(b, C, "agent-redirected-dns-udp", SK_RS_ACCEPT, a, SK_RS_M_CT_DNAT, IPPROTO_UDP, p->ports.dns);
	agent_port_rule(b, C, "agent-redirected-dns-tcp", SK_RS_ACCEPT, a, SK_RS_M_CT_DNAT, IPPROTO_TCP, p->ports.dns);

	add_direct_rules(b, C, SK_RS_ACCEPT, a);

	r = rule_add(b, C, "agent-reject-tcp", SK_RS_REJECT_TCP);
	m_add(r, SK_RS_M_SKUID, a);
	m_add(r, SK_RS_M_L4PROTO, IPPROTO_TCP);
	count_in(r, SK_RS_CNT_AGENT_TCP);
	r = rule_add(b, C, "agent-reject-other", SK_RS_REJECT_ADMIN);
	m_add(r, SK_RS_M_SKUID, a);
	count_in(r, SK_RS_CNT_AGENT_OTHER);

	/* No agent packet gets below this line. Flows of the other UIDs were checked when new; replacing
	 * the table keeps conntrack, so re-runs cut nothing. */
	r = rule_add(b, C, "established", SK_RS_ACCEPT);
	m_add(r, SK_RS_M_CT_EST_REL, 0);
	/* loopback never leaves the pod */
	r = rule_add(b, C, "loopback", SK_RS_ACCEPT);
	m_add(r, SK_RS_M_OIF_LO, 1);
	/* ND goes out from kernel sockets; without it IPv6 dies. The agent cannot forge it (no raw
	 * sockets), and its packets never reach this rule anyway. */
	r = rule_add(b, C, "icmpv6-nd", SK_RS_ACCEPT);
	m_add(r, SK_RS_M_L4PROTO, IPPROTO_ICMPV6);
	m_set(r, SK_RS_M_ICMPV6_SET, SK_RS_SET_ND);

	r = rule_add(b, C, "sidecar", SK_RS_ACCEPT);
	m_add(r, SK_RS_M_SKUID, p->sidecar_uid);
	r = rule_add(b, C, "exempt-uids", SK_RS_ACCEPT);
	m_set(r, SK_RS_M_SKUID_SET, SK_RS_SET_EXEMPT);

	/* Any other socket, root's included, is rejected; socketless kernel packets (RSTs for closed
	 * ports, time-wait ACKs) do not match `meta skuid` and fall through to the accept policy. */
	r = rule_add(b, C, "other-uid-reject-tcp", SK_RS_REJECT_TCP);
	m_add(r, SK_RS_M_SKUID_ANY, 0);
	m_add(r, SK_RS_M_L4PROTO, IPPROTO_TCP);
	count_in(r, SK_RS_CNT_OTHER_TCP);
	r = rule_add(b, C, "other-uid-reject-other", SK_RS_REJECT_ADMIN);
	m_add(r, SK_RS_M_SKUID_ANY, 0);
	count_in(r, SK_RS_CNT_OTHER_OTHER);
}

static int check_policy(const struct sk_policy *p, struct sk_err *err)
{
	/* The loader validates these too; re-checked because a ruleset that confuses the agent with root
	 * or the sidecar would fail open. */
	if (p->agent_uid == 0)
		return sk_err_set(err, EINVAL, "ruleset: agent uid must not be 0");
	if (p->sidecar_uid == 0 || p->sidecar_uid == p->agent_uid)
		return sk_err_set(err, EINVAL, "ruleset: sidecar uid %u collides with %s", p->sidecar_uid,
				  p->sidecar_uid == 0 ? "root" : "the agent uid");
	for (size_t i = 0; i < p->n_exempt_uids; i++) {
		uint32_t u = p->exempt_uids[i];
		if (u == 0 || u == p->agent_uid)
			return sk_err_set(err, EINVAL, "ruleset: exempt uid %u collides with %s", u,
					  u == 0 ? "root" : "the agent uid");
	}
	const uint16_t ports[] = { p->ports.proxy, p->ports.dns, p->ports.admin, p->ports.api };
	for (size_t i = 0; i < SK_ARRAY_SIZE(ports); i++) {
		if (ports[i] == 0)
			return sk_err_set(err, EINVAL, "ruleset: sidecar port %zu is 0", i);
		for (size_t j = i + 1; j < SK_ARRAY_SIZE(ports); j++)
			if (ports[i] == ports[j])
				return sk_err_set(err, EINVAL, "ruleset: sidecar ports collide (%u)", ports[i]);
	}
	return 0;
}

int sk_ruleset_build(const struct sk_policy *p, struct sk_ruleset **out, struct sk_err *err)
{
	struct rule_builder b = { 0 };
	int rc = check_policy(p, err);
	if (rc < 0)
		return rc;

	struct sk_ruleset *rs = calloc(1, sizeof(*rs));
	if (!rs)
		return sk_err_sys(err, ENOMEM, "ruleset");
	/* One below NF_IP_PRI_NAT_DST (-100), where iptables' nat OUTPUT and a mesh's redirect (istio-iptables,
	 * linkerd's proxy-init, through iptables-nft or nft) sit: the first nat chain that maps a connection
	 * decides it, so the agent's connections are ours whatever registered first. At an equal priority
	 * the order is the registration order, and a mesh installed first would take the agent's traffic
	 * past the sidecar (docs/compatibility.md, "With a service mesh"). */
	rs->chains[SK_RS_CHAIN_NAT] = (struct sk_rs_chain){ "nat_output", "nat", -101 };
	rs->chains[SK_RS_CHAIN_FILTER] = (struct sk_rs_chain){ "filter_output", "filter", 0 };
	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		rs->sets[i].name = set_names[i];
		rs->sets[i].id = (enum sk_rs_set_id)i;
	}

	rc = build_val_set(&rs->sets[SK_RS_SET_EXEMPT], p->n_exempt_uids, get_u32, p->exempt_uids);
	if (rc == 0 && p->loopback == SK_LOOPBACK_PORTS)
		rc = build_val_set(&rs->sets[SK_RS_SET_LOPORTS], p->n_loopback_ports, get_u16,
				   p->loopback_ports);
	if (rc == 0)
		rc = build_val_set(&rs->sets[SK_RS_SET_ND], SK_ARRAY_SIZE(nd_types), get_u8, nd_types);
	if (rc == 0)
		rc = build_val_set(&rs->sets[SK_RS_SET_MLD], SK_ARRAY_SIZE(mld_types), get_u8, mld_types);
	if (rc == 0)
		rc = build_direct_set(p, AF_INET, &rs->sets[SK_RS_SET_DIRECT4]);
	if (rc == 0)
		rc = build_direct_set(p, AF_INET6, &rs->sets[SK_RS_SET_DIRECT6]);
	if (rc < 0)
		goto fail;

	add_nat_rules(&b, p);
	add_filter_rules(&b, p);
	rs->rules = b.v;
	rs->n_rules = b.n;
	if (b.rc < 0) {
		rc = b.rc;
		goto fail;
	}
	*out = rs;
	return 0;
fail:
	sk_ruleset_free(rs);
	return sk_err_sys(err, -rc, "ruleset: build");
}

int sk_ruleset_load(const char *path, struct sk_policy **pol, struct sk_ruleset **out, struct sk_diags *diags,
		    struct sk_err *err)
{
	struct sk_policy *p = NULL;
	int rc = sk_policy_load_file_ex(path, -1, SK_LOAD_NO_FILE_CHECKS | SK_LOAD_NO_MATCHER | SK_LOAD_NO_CONTENT_HASH,
					&p, diags);
	if (rc < 0)
		return sk_err_set(err, -rc, "policy %s: invalid (%zu error%s)", path, diags->n,
				  diags->n == 1 ? "" : "s");
	rc = sk_ruleset_build(p, out, err);
	if (rc < 0)
		sk_err_prefix(err, "policy %s", path);
	if (rc == 0 && pol)
		*pol = p;
	else
		sk_policy_free(p);
	return rc;
}

/* ---- nft text ---- */

static const char *proto_name(uint32_t proto)
{
	switch (proto) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMPV6: return "ipv6-icmp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_IGMP: return "igmp";
	default: return "?";
	}
}

static const char *nd_type_name(uint32_t t)
{
	switch (t) {
	case 130: return "mld-listener-query";
	case 131: return "mld-listener-report";
	case 132: return "mld-listener-done";
	case 133: return "nd-router-solicit";
	case 134: return "nd-router-advert";
	case 135: return "nd-neighbor-solicit";
	case 136: return "nd-neighbor-advert";
	case 137: return "nd-redirect";
	case 143: return "mld2-listener-report";
	default: return NULL;
	}
}

/* "a", "a/len" when the range is exactly a prefix, else "a-b". */
static void format_addr_range(const struct sk_rs_elem *e, bool v6, char *buf, size_t len)
{
	size_t alen = v6 ? 16 : 4;
	int af = v6 ? AF_INET6 : AF_INET;
	char lo[INET6_ADDRSTRLEN], hi[INET6_ADDRSTRLEN];
	inet_ntop(af, e->addr_lo, lo, sizeof(lo));
	sk_u128 a = addr_to_u128(e->addr_lo, alen), z = addr_to_u128(e->addr_hi, alen);
	if (a == z) {
		(void)snprintf(buf, len, "%s", lo);
		return;
	}
	sk_u128 span = z - a;
	unsigned bits = (unsigned)alen * 8, host = 0;
	while (host < bits && ((span >> host) & 1))
		host++;
	bool full = host == bits || (span >> host) == 0;
	if (full && (a & span) == 0) {
		(void)snprintf(buf, len, "%s/%u", lo, bits - host);
		return;
	}
	inet_ntop(af, e->addr_hi, hi, sizeof(hi));
	(void)snprintf(buf, len, "%s-%s", lo, hi);
}

/* Truncates to len, which every caller sizes for the longest element (an IPv6 range . proto . port range). */
void sk_rs_elem_format(const struct sk_rs_set *s, const struct sk_rs_elem *e, char *buf, size_t len)
{
	switch (s->id) {
	case SK_RS_SET_EXEMPT:
	case SK_RS_SET_LOPORTS:
		(void)snprintf(buf, len, "%u", e->val);
		return;
	case SK_RS_SET_ND:
	case SK_RS_SET_MLD: {
		const char *n = nd_type_name(e->val);
		if (n)
			(void)snprintf(buf, len, "%s", n);
		else
			(void)snprintf(buf, len, "%u", e->val);
		return;
	}
	case SK_RS_SET_DIRECT4:
	case SK_RS_SET_DIRECT6: {
		char a[2 * INET6_ADDRSTRLEN + 2], pr[16];
		format_addr_range(e, s->id == SK_RS_SET_DIRECT6, a, sizeof(a));
		if (e->port_lo == e->port_hi)
			(void)snprintf(pr, sizeof(pr), "%u", e->port_lo);
		else
			(void)snprintf(pr, sizeof(pr), "%u-%u", e->port_lo, e->port_hi);
		(void)snprintf(buf, len, "%s . %s . %s", a, proto_name(e->proto), pr);
		return;
	}
	case SK_RS_N_SETS:
		break;
	}
	(void)snprintf(buf, len, "?");
}

static const char *set_type_text(enum sk_rs_set_id id)
{
	switch (id) {
	case SK_RS_SET_EXEMPT: return "uid";
	case SK_RS_SET_LOPORTS: return "inet_service";
	case SK_RS_SET_ND:
	case SK_RS_SET_MLD: return "icmpv6_type";
	case SK_RS_SET_DIRECT4: return "ipv4_addr . inet_proto . inet_service";
	case SK_RS_SET_DIRECT6: return "ipv6_addr . inet_proto . inet_service";
	case SK_RS_N_SETS: break;
	}
	return "?";
}

/* The printers below ignore each write's result: a stream's error indicator sticks, and sk_ruleset_print
 * checks ferror once at the end. */
static void print_match(FILE *f, const struct sk_ruleset *rs, const struct sk_rs_match *m)
{
	const char *set = rs->sets[m->set].name;
	switch (m->kind) {
	case SK_RS_M_SKUID: (void)fprintf(f, "meta skuid %u ", m->val); break;
	case SK_RS_M_SKUID_NE: (void)fprintf(f, "meta skuid != %u ", m->val); break;
	case SK_RS_M_SKUID_ANY: (void)fprintf(f, "meta skuid >= 0 "); break;
	case SK_RS_M_SKUID_SET: (void)fprintf(f, "meta skuid @%s ", set); break;
	case SK_RS_M_SKUID_NOT_SET: (void)fprintf(f, "meta skuid != @%s ", set); break;
	case SK_RS_M_SADDR_NOT_LOCAL: (void)fprintf(f, "fib saddr type != local "); break;
	case SK_RS_M_NFPROTO: (void)fprintf(f, "meta nfproto %s ", m->val == NFPROTO_IPV6 ? "ipv6" : "ipv4"); break;
	case SK_RS_M_L4PROTO: (void)fprintf(f, "meta l4proto %s ", proto_name(m->val)); break;
	case SK_RS_M_DPORT: (void)fprintf(f, "th dport %u ", m->val); break;
	case SK_RS_M_DPORT_SET: (void)fprintf(f, "th dport @%s ", set); break;
	case SK_RS_M_OIF_LO: (void)fprintf(f, "oif \"lo\" "); break;
	case SK_RS_M_CT_EST_REL: (void)fprintf(f, "ct state established,related "); break;
	case SK_RS_M_CT_DNAT: (void)fprintf(f, "ct status dnat "); break;
	case SK_RS_M_ICMPV6_SET: (void)fprintf(f, "icmpv6 type @%s ", set); break;
	case SK_RS_M_DIRECT_SET:
		(void)fprintf(f, "%s daddr . meta l4proto . th dport @%s ",
			m->set == SK_RS_SET_DIRECT6 ? "ip6" : "ip", set);
		break;
	}
}

static void print_rule(FILE *f, const struct sk_ruleset *rs, const struct sk_rs_rule *r)
{
	(void)fputs("\t\t", f);
	for (size_t i = 0; i < r->n_m; i++)
		print_match(f, rs, &r->m[i]);
	if (r->counter != SK_RS_CNT_NONE)
		(void)fprintf(f, "counter name \"%s\" ", sk_rs_counter_name(r->counter));
	switch (r->verdict) {
	case SK_RS_ACCEPT: (void)fputs("accept", f); break;
	case SK_RS_RETURN: (void)fputs("return", f); break;
	case SK_RS_REDIRECT: (void)fprintf(f, "redirect to :%u", r->redirect_port); break;
	case SK_RS_REJECT_TCP: (void)fputs("reject with tcp reset", f); break;
	case SK_RS_REJECT_ADMIN: (void)fputs("reject with icmpx admin-prohibited", f); break;
	case SK_RS_DROP: (void)fputs("drop", f); break;
	}
	(void)fprintf(f, " comment \"%s\"\n", r->name);
}

int sk_ruleset_print(const struct sk_ruleset *rs, FILE *f, struct sk_err *err)
{
	char buf[160];
	/* add + delete + define: the same replace-in-one-transaction the init's batch does */
	(void)fprintf(f, "table %s %s\ndelete table %s %s\n", SK_RS_FAMILY_NAME, SK_RS_TABLE, SK_RS_FAMILY_NAME,
		SK_RS_TABLE);
	(void)fprintf(f, "table %s %s {\n", SK_RS_FAMILY_NAME, SK_RS_TABLE);
	for (size_t i = 0; i < SK_RS_N_COUNTERS; i++)
		(void)fprintf(f, "\tcounter %s {\n\t}\n", counter_names[i]);
	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		bool concat = s->id == SK_RS_SET_DIRECT4 || s->id == SK_RS_SET_DIRECT6;
		(void)fprintf(f, "\tset %s {\n\t\ttype %s\n", s->name, set_type_text(s->id));
		if (concat)
			(void)fputs("\t\tflags interval\n", f);
		if (s->n_elems) {
			(void)fputs("\t\telements = {", f);
			for (size_t k = 0; k < s->n_elems; k++) {
				sk_rs_elem_format(s, &s->elems[k], buf, sizeof(buf));
				(void)fprintf(f, "%s%s", k ? ",\n\t\t\t     " : " ", buf);
			}
			(void)fputs(" }\n", f);
		}
		(void)fputs("\t}\n", f);
	}
	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		const struct sk_rs_chain *ch = &rs->chains[c];
		(void)fprintf(f, "\tchain %s {\n\t\ttype %s hook output priority %d; policy accept;\n", ch->name,
			ch->type, ch->priority);
		for (size_t i = 0; i < rs->n_rules; i++)
			if (rs->rules[i].chain == (enum sk_rs_chain_id)c)
				print_rule(f, rs, &rs->rules[i]);
		(void)fputs("\t}\n", f);
	}
	(void)fputs("}\n", f);
	if (ferror(f))
		return sk_err_sys(err, errno ? errno : EIO, "ruleset: write nft text");
	return 0;
}

char *sk_ruleset_text(const struct sk_ruleset *rs, struct sk_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		sk_err_sys(err, errno, "ruleset: open_memstream");
		return NULL;
	}
	int rc = sk_ruleset_print(rs, f, err);
	if (fclose(f) != 0 && rc == 0)
		rc = sk_err_sys(err, errno, "ruleset: close nft text");
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
