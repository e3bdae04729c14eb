/* init/ruleset_test.c — the ruleset builder: the intermediate description and the nft text for each
 * policy feature (defaults, loopback deny/ports, exemptUids, direct CIDRs v4/v6 made disjoint, udp rules,
 * custom ports and UIDs, collisions); the host-namespace guard's judgement. Policies
 * are built by hand so the builder is tested without the loader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "init/guard.h"
#include "init/ruleset.h"
#include "policy/addr.h"
#include "policy/policy.h"

/* A default policy (docs/policy.md defaults) with room for a few rules, exempt UIDs and loopback ports. */
struct fixture {
	struct sk_policy p;
	struct sk_rule rules[8];
	uint16_t ports[8][4];
	uint32_t exempt[4];
	uint16_t lo_ports[4];
};

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->p.version = 1;
	f->p.agent_uid = 1000;
	f->p.sidecar_uid = 1337;
	f->p.ports = (struct sk_ports){ .proxy = 15001, .dns = 15053, .admin = 15000, .api = 15080 };
	f->p.block_private = true;
	f->p.loopback = SK_LOOPBACK_ALLOW;
	f->p.rules = f->rules;
}

/* Appends a CIDR rule; port 0 ends the port list (none = any port). */
static void fx_cidr(struct fixture *f, const char *cidr, enum sk_proto proto, bool direct, uint16_t p1, uint16_t p2)
{
	size_t i = f->p.n_rules++;
	struct sk_rule *r = &f->rules[i];
	const char *why = NULL;
	r->kind = SK_RULE_CIDR;
	if (sk_cidr_parse(cidr, &r->cidr, &why) != 0)
		fail_msg("test cidr %s: %s", cidr, why ? why : "?");
	r->proto = proto;
	r->direct = direct;
	r->ports = f->ports[i];
	if (p1)
		f->ports[i][r->n_ports++] = p1;
	if (p2)
		f->ports[i][r->n_ports++] = p2;
}

static void fx_host(struct fixture *f, const char *host, uint16_t port)
{
	size_t i = f->p.n_rules++;
	f->rules[i].kind = SK_RULE_HOST;
	f->rules[i].host = (char *)host;
	f->rules[i].ports = f->ports[i];
	f->ports[i][0] = port;
	f->rules[i].n_ports = 1;
}

static struct sk_ruleset *build(const struct fixture *f)
{
	struct sk_err err = { 0 };
	struct sk_ruleset *rs = NULL;
	int rc = sk_ruleset_build(&f->p, &rs, &err);
	if (rc != 0)
		fail_msg("build failed: %s", err.msg);
	return rs;
}

static char *text(const struct sk_ruleset *rs)
{
	struct sk_err err = { 0 };
	char *t = sk_ruleset_text(rs, &err);
	if (!t)
		fail_msg("text failed: %s", err.msg);
	return t;
}

/* The names of the rules of one chain, space-separated. */
static void chain_names(const struct sk_ruleset *rs, enum sk_rs_chain_id c, char *out, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < rs->n_rules; i++) {
		if (rs->rules[i].chain != c)
			continue;
		size_t used = strlen(out);
		(void)snprintf(out + used, len - used, "%s%s", used ? " " : "", rs->rules[i].name);
	}
}

static const struct sk_rs_rule *find_rule(const struct sk_ruleset *rs, enum sk_rs_chain_id c, const char *name)
{
	for (size_t i = 0; i < rs->n_rules; i++)
		if (rs->rules[i].chain == c && !strcmp(rs->rules[i].name, name))
			return &rs->rules[i];
	fail_msg("no rule %s", name);
	return NULL;
}

static void elems_text(const struct sk_rs_set *s, char *out, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < s->n_elems; i++) {
		char b[160];
		sk_rs_elem_format(s, &s->elems[i], b, sizeof(b));
		size_t used = strlen(out);
		(void)snprintf(out + used, len - used, "%s%s", used ? ", " : "", b);
	}
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("expected to find\n  %s\nin\n%s", needle, hay);
}

static void assert_lacks(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		fail_msg("did not expect\n  %s\nin\n%s", needle, hay);
}

static void test_default_policy_chains_and_order(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	struct sk_ruleset *rs = build(&f);
	char names[1024];

	assert_string_equal(rs->chains[SK_RS_CHAIN_NAT].name, "nat_output");
	assert_string_equal(rs->chains[SK_RS_CHAIN_NAT].type, "nat");
	assert_int_equal(rs->chains[SK_RS_CHAIN_NAT].priority, -101);   /* before a mesh's nat at -100 */
	assert_string_equal(rs->chains[SK_RS_CHAIN_FILTER].name, "filter_output");
	assert_int_equal(rs->chains[SK_RS_CHAIN_FILTER].priority, 0);

	chain_names(rs, SK_RS_CHAIN_NAT, names, sizeof(names));
	assert_string_equal(names, "agent-dns-udp agent-dns-tcp agent-direct4 agent-direct6 agent-loopback agent-proxy");
	chain_names(rs, SK_RS_CHAIN_FILTER, names, sizeof(names));
	/* every agent rule comes before the conntrack shortcut */
	assert_string_equal(names, "igmp-drop mld-drop spoofed-source agent-admin agent-loopback agent-redirected-proxy "
				   "agent-redirected-dns-udp "
				   "agent-redirected-dns-tcp agent-direct4 agent-direct6 agent-reject-tcp "
				   "agent-reject-other established loopback icmpv6-nd sidecar exempt-uids "
				   "other-uid-reject-tcp other-uid-reject-other");

	const struct sk_rs_rule *r = find_rule(rs, SK_RS_CHAIN_NAT, "agent-dns-udp");
	assert_int_equal(r->verdict, SK_RS_REDIRECT);
	assert_int_equal(r->redirect_port, 15053);
	assert_int_equal(r->n_m, 3);
	assert_int_equal(r->m[0].kind, SK_RS_M_SKUID);
	assert_int_equal(r->m[0].val, 1000);
	assert_int_equal(r->m[1].kind, SK_RS_M_L4PROTO);
	assert_int_equal(r->m[1].val, IPPROTO_UDP);
	assert_int_equal(r->m[2].kind, SK_RS_M_DPORT);
	assert_int_equal(r->m[2].val, 53);

	r = find_rule(rs, SK_RS_CHAIN_NAT, "agent-proxy");
	assert_int_equal(r->verdict, SK_RS_REDIRECT);
	assert_int_equal(r->redirect_port, 15001);

	r = find_rule(rs, SK_RS_CHAIN_FILTER, "agent-reject-tcp");
	assert_int_equal(r->verdict, SK_RS_REJECT_TCP);
	assert_string_equal(sk_rs_counter_name(r->counter), "agent_reject_tcp");
	r = find_rule(rs, SK_RS_CHAIN_FILTER, "other-uid-reject-other");
	assert_int_equal(r->verdict, SK_RS_REJECT_ADMIN);
	assert_int_equal(r->m[0].kind, SK_RS_M_SKUID_ANY);
	assert_string_equal(sk_rs_counter_name(r->counter), "other_uid_reject_other");
	r = find_rule(rs, SK_RS_CHAIN_FILTER, "sidecar");
	assert_int_equal(r->m[0].val, 1337);
	assert_int_equal(r->verdict, SK_RS_ACCEPT);

	/* empty sets exist all the same, so the table's shape does not depend on the policy */
	assert_int_equal(rs->sets[SK_RS_SET_EXEMPT].n_elems, 0);
	assert_int_equal(rs->sets[SK_RS_SET_DIRECT4].n_elems, 0);
	assert_int_equal(rs->sets[SK_RS_SET_DIRECT6].n_elems, 0);
	assert_int_equal(rs->sets[SK_RS_SET_ND].n_elems, 5);
	assert_int_equal(rs->sets[SK_RS_SET_MLD].n_elems, 4);
	sk_ruleset_free(rs);
}

static void test_default_policy_text(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	struct sk_ruleset *rs = build(&f);
	char *t = text(rs);
	/* replaces atomically when given to nft -f */
	assert_true(!strncmp(t, "table inet stockade\ndelete table inet stockade\ntable inet stockade {\n", 67));
	assert_contains(t, "\tcounter agent_reject_tcp {\n\t}\n");
	assert_contains(t, "\tcounter other_uid_reject_other {\n\t}\n");
	assert_contains(t, "\tchain nat_output {\n\t\ttype nat hook output priority -101; policy accept;\n");
	assert_contains(t, "\tchain filter_output {\n\t\ttype filter hook output priority 0; policy accept;\n");
	assert_contains(t, "meta skuid 1000 meta l4proto udp th dport 53 redirect to :15053 comment \"agent-dns-udp\"\n");
	assert_contains(t, "meta skuid 1000 meta l4proto tcp th dport 53 redirect to :15053 comment \"agent-dns-tcp\"\n");
	assert_contains(t, "meta skuid 1000 oif \"lo\" return comment \"agent-loopback\"\n");
	assert_contains(t, "meta skuid 1000 meta l4proto tcp redirect to :15001 comment \"agent-proxy\"\n");
	assert_contains(t, "meta skuid 1000 ct status dnat meta l4proto tcp th dport 15001 accept comment "
			   "\"agent-redirected-proxy\"\n");
	assert_contains(t, "meta skuid 1000 meta nfproto ipv4 ip daddr . meta l4proto . th dport @direct4 accept");
	assert_contains(t, "meta skuid 1000 meta nfproto ipv6 ip6 daddr . meta l4proto . th dport @direct6 return");
	assert_contains(t, "meta skuid 1000 meta l4proto tcp counter name \"agent_reject_tcp\" reject with tcp reset");
	assert_contains(t, "meta skuid 1000 counter name \"agent_reject_other\" reject with icmpx admin-prohibited");
	assert_contains(t, "ct state established,related accept comment \"established\"\n");
	assert_contains(t, "meta l4proto ipv6-icmp icmpv6 type @icmpv6_nd accept");
	assert_contains(t, "nd-neighbor-solicit");
	assert_contains(t, "meta skuid 1337 accept comment \"sidecar\"\n");
	assert_contains(t, "meta skuid @exempt_uids accept comment \"exempt-uids\"\n");
	assert_contains(t, "meta skuid >= 0 meta l4proto tcp counter name \"other_uid_reject_tcp\" reject with tcp reset");
	assert_contains(t, "\tset direct4 {\n\t\ttype ipv4_addr . inet_proto . inet_service\n\t\tflags interval\n\t}\n");
	assert_contains(t, "\tset exempt_uids {\n\t\ttype uid\n\t}\n");
	/* the agent is never let through by conntrack state alone */
	assert_true(strstr(t, "agent-reject-other") < strstr(t, "comment \"established\""));
	free(t);
	sk_ruleset_free(rs);
}

static void test_loopback_deny(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	f.p.loopback = SK_LOOPBACK_DENY;
	struct sk_ruleset *rs = build(&f);
	char names[1024];
	chain_names(rs, SK_RS_CHAIN_NAT, names, sizeof(names));
	/* agent TCP to loopback goes to the proxy (which logs the denial); the API gateway stays reachable */
	assert_string_equal(names, "agent-dns-udp agent-dns-tcp agent-direct4 agent-direct6 agent-api agent-proxy");
	chain_names(rs, SK_RS_CHAIN_FILTER, names, sizeof(names));
	assert_true(!strncmp(names, "igmp-drop mld-drop spoofed-source agent-admin agent-api agent-redirected-proxy", 77));
	assert_lacks(names, "agent-loopback");
	const struct sk_rs_rule *r = find_rule(rs, SK_RS_CHAIN_FILTER, "agent-api");
	assert_int_equal(r->m[r->n_m - 1].kind, SK_RS_M_DPORT);
	assert_int_equal(r->m[r->n_m - 1].val, 15080);
	char *t = text(rs);
	assert_contains(t, "meta skuid 1000 oif \"lo\" meta l4proto tcp th dport 15080 return comment \"agent-api\"");
	assert_lacks(t, "oif \"lo\" return");
	free(t);
	sk_ruleset_free(rs);
}

static void test_loopback_ports(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	f.p.loopback = SK_LOOPBACK_PORTS;
	f.lo_ports[0] = 5432;
	f.lo_ports[1] = 8080;
	f.p.loopback_ports = f.lo_ports;
	f.p.n_loopback_ports = 2;
	struct sk_ruleset *rs = build(&f);
	char names[1024], el[512];
	chain_names(rs, SK_RS_CHAIN_NAT, names, sizeof(names));
	assert_string_equal(names, "agent-dns-udp agent-dns-tcp agent-direct4 agent-direct6 agent-loopback-ports "
				   "agent-api agent-proxy");
	chain_names(rs, SK_RS_CHAIN_FILTER, names, sizeof(names));
	assert_true(!strncmp(names, "igmp-drop mld-drop spoofed-source agent-admin agent-loopback-ports-tcp "
				    "agent-loopback-ports-udp agent-api ", 104));
	elems_text(&rs->sets[SK_RS_SET_LOPORTS], el, sizeof(el));
	assert_string_equal(el, "5432, 8080");
	char *t = text(rs);
	assert_contains(t, "\tset loopback_ports {\n\t\ttype inet_service\n\t\telements = { 5432,\n");
	assert_contains(t, "meta skuid 1000 oif \"lo\" meta l4proto udp th dport @loopback_ports accept");
	free(t);
	sk_ruleset_free(rs);
}

static void test_exempt_uids(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	f.exempt[0] = 1500;
	f.exempt[1] = 65534;
	f.p.exempt_uids = f.exempt;
	f.p.n_exempt_uids = 2;
	struct sk_ruleset *rs = build(&f);
	char el[256];
	elems_text(&rs->sets[SK_RS_SET_EXEMPT], el, sizeof(el));
	assert_string_equal(el, "1500, 65534");
	char *t = text(rs);
	assert_contains(t, "\tset exempt_uids {\n\t\ttype uid\n\t\telements = { 1500,\n\t\t\t     65534 }\n\t}\n");
	free(t);
	sk_ruleset_free(rs);
}

static void test_direct_cidrs_v4_v6(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	fx_cidr(&f, "10.96.0.0/12", SK_PROTO_UDP, true, 8125, 0);
	fx_cidr(&f, "10.0.0.0/8", SK_PROTO_TCP, true, 5432, 0);
	fx_cidr(&f, "fd00:10::/64", SK_PROTO_ANY, true, 443, 0);
	fx_cidr(&f, "192.0.2.7/32", SK_PROTO_ANY, true, 0, 0);  /* any port, both protocols */
	struct sk_ruleset *rs = build(&f);
	char el[1024];
	elems_text(&rs->sets[SK_RS_SET_DIRECT4], el, sizeof(el));
	assert_string_equal(el, "192.0.2.7 . tcp . 0-65535, 10.0.0.0/8 . tcp . 5432, "
				"192.0.2.7 . udp . 0-65535, 10.96.0.0/12 . udp . 8125");
	elems_text(&rs->sets[SK_RS_SET_DIRECT6], el, sizeof(el));
	assert_string_equal(el, "fd00:10::/64 . tcp . 443, fd00:10::/64 . udp . 443");
	char *t = text(rs);
	assert_contains(t, "\t\telements = { 192.0.2.7 . tcp . 0-65535,\n\t\t\t     10.0.0.0/8 . tcp . 5432,\n");
	assert_contains(t, "\tset direct6 {\n\t\ttype ipv6_addr . inet_proto . inet_service\n\t\tflags interval\n"
			   "\t\telements = { fd00:10::/64 . tcp . 443,\n");
	free(t);
	sk_ruleset_free(rs);
}

static void test_direct_elements_are_disjoint(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	/* nested, overlapping and adjacent: the kernel's pipapo set would reject the raw list */
	fx_cidr(&f, "10.1.0.0/16", SK_PROTO_TCP, true, 0, 0);       /* any port */
	fx_cidr(&f, "10.0.0.0/8", SK_PROTO_TCP, true, 80, 443);     /* contains the any-port /16 */
	fx_cidr(&f, "10.1.2.0/24", SK_PROTO_TCP, true, 80, 0);      /* inside the any-port /16 */
	fx_cidr(&f, "192.168.0.0/24", SK_PROTO_TCP, true, 80, 0);   /* adjacent to the next: merged */
	fx_cidr(&f, "192.168.1.0/24", SK_PROTO_TCP, true, 80, 0);
	fx_cidr(&f, "192.168.0.0/16", SK_PROTO_TCP, true, 443, 0);
	fx_cidr(&f, "192.168.7.0/24", SK_PROTO_TCP, true, 443, 0);  /* duplicate coverage */
	struct sk_ruleset *rs = build(&f);
	char el[1024];
	elems_text(&rs->sets[SK_RS_SET_DIRECT4], el, sizeof(el));
	assert_string_equal(el, "10.1.0.0/16 . tcp . 0-65535, "
				"10.0.0.0/16 . tcp . 80, 10.2.0.0-10.255.255.255 . tcp . 80, 192.168.0.0/23 . tcp . 80, "
				"10.0.0.0/16 . tcp . 443, 10.2.0.0-10.255.255.255 . tcp . 443, 192.168.0.0/16 . tcp . 443");
	assert_int_equal(rs->sets[SK_RS_SET_DIRECT6].n_elems, 0);
	sk_ruleset_free(rs);
}

/* Many direct rules in no order (IPv4 and IPv6, any port and listed ports, nested and adjacent blocks):
 * the elements of each set are pairwise disjoint, and an address . protocol . port is in an element
 * exactly when some rule allows it, checked at every rule's first and last address and just outside. */
static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

static bool addr_in(const uint8_t *a, const uint8_t *lo, const uint8_t *hi, size_t alen)
{
	return memcmp(a, lo, alen) >= 0 && memcmp(a, hi, alen) <= 0;
}

static bool rule_allows(const struct sk_rule *r, const uint8_t *a, size_t alen, uint8_t proto, uint16_t port)
{
	const bool udp = proto == IPPROTO_UDP;
	if (!((r->proto == SK_PROTO_UDP && udp) || (r->direct && (r->proto == SK_PROTO_ANY || (!udp && r->proto == SK_PROTO_TCP)))))
		return false;
	if ((r->cidr.net.family == AF_INET6) != (alen == 16))
		return false;
	struct sk_addr x = { .family = r->cidr.net.family };
	memcpy(x.bytes, a, alen);
	if (!sk_cidr_contains(&r->cidr, &x))
		return false;
	if (r->n_ports == 0)
		return true;
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

static void test_direct_elements_many_rules_any_order(void **state)
{
	(void)state;
	enum { N = 400 };
	struct sk_rule *rules = calloc(N, sizeof(*rules));
	uint16_t (*ports)[2] = calloc(N, sizeof(*ports));
	assert_non_null(rules);
	assert_non_null(ports);
	static const uint16_t port_pool[] = { 80, 443, 8080, 53, 65535, 1 };
	uint32_t x = 12345;
	for (size_t i = 0; i < N; i++) {
		char c[64];
		const bool v6 = lcg(&x) % 3 == 0;
		if (v6)
			(void)snprintf(c, sizeof(c), "fd00:%x::%x:0/%u", lcg(&x) % 4, (lcg(&x) % 64) << 4, 108 + lcg(&x) % 21);
		else
			(void)snprintf(c, sizeof(c), "10.%u.%u.0/%u", lcg(&x) % 4, lcg(&x) % 256, 16 + lcg(&x) % 9);
		/* mask the host bits the random prefix leaves set */
		const char *why = NULL;
		char *slash = strchr(c, '/');
		unsigned plen = (unsigned)atoi(slash + 1);
		*slash = 0;
		struct sk_addr a;
		assert_int_equal(sk_addr_parse(c, &a), 0);
		for (unsigned b = plen; b < (v6 ? 128u : 32u); b++)
			a.bytes[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
		rules[i].cidr = (struct sk_cidr){ .net = a, .prefix = (uint8_t)plen };
		(void)why;
		rules[i].kind = SK_RULE_CIDR;
		const uint32_t k = lcg(&x) % 4;
		rules[i].proto = k == 0 ? SK_PROTO_UDP : k == 1 ? SK_PROTO_ANY : SK_PROTO_TCP;
		rules[i].direct = k != 0 || lcg(&x) % 2;
		rules[i].ports = ports[i];
		const uint32_t np = lcg(&x) % 4;  /* 0: any port */
		for (uint32_t j = 0; j < np && j < 2; j++)
			ports[i][rules[i].n_ports++] = port_pool[lcg(&x) % SK_ARRAY_SIZE(port_pool)];
		if (rules[i].n_ports == 2 && ports[i][0] == ports[i][1])
			rules[i].n_ports = 1;
		else if (rules[i].n_ports == 2 && ports[i][0] > ports[i][1]) {
			uint16_t t = ports[i][0];
			ports[i][0] = ports[i][1];
			ports[i][1] = t;
		}
	}
	struct fixture f;
	fx_init(&f);
	f.p.rules = rules;
	f.p.n_rules = N;
	struct sk_ruleset *rs = build(&f);
	for (int fam = 0; fam < 2; fam++) {
		const struct sk_rs_set *s = &rs->sets[fam ? SK_RS_SET_DIRECT6 : SK_RS_SET_DIRECT4];
		const size_t alen = fam ? 16 : 4;
		assert_true(s->n_elems > 10);
		for (size_t i = 0; i < s->n_elems; i++)
			for (size_t j = i + 1; j < s->n_elems; j++) {
				const struct sk_rs_elem *a = &s->elems[i], *b = &s->elems[j];
				bool meet = a->proto == b->proto && a->port_lo <= b->port_hi && b->port_lo <= a->port_hi &&
					    memcmp(a->addr_lo, b->addr_hi, alen) <= 0 && memcmp(b->addr_lo, a->addr_hi, alen) <= 0;
				assert_false(meet);
			}
		for (size_t i = 0; i < N; i++) {
			const struct sk_rule *r = &rules[i];
			if ((r->cidr.net.family == AF_INET6) != (fam == 1))
				continue;
			/* the block's first and last address and their neighbours */
			uint8_t pts[4][16];
			unsigned bits = (unsigned)alen * 8;
			for (int q = 0; q < 4; q++) {
				memcpy(pts[q], r->cidr.net.bytes, alen);
				if (q == 1 || q == 3)
					for (unsigned b = r->cidr.prefix; b < bits; b++)
						pts[q][b / 8] |= (uint8_t)(0x80 >> (b % 8));
				/* q 2: first - 1, q 3: last + 1 (wrapping at the ends is harmless) */
				for (size_t k = alen; q >= 2 && k-- > 0;) {
					if (q == 2 ? pts[q][k]-- != 0 : ++pts[q][k] != 0)
						break;
				}
			}
			for (int q = 0; q < 4; q++)
				for (size_t pp = 0; pp < SK_ARRAY_SIZE(port_pool) + 1; pp++) {
					const uint16_t port = pp < SK_ARRAY_SIZE(port_pool) ? port_pool[pp] : 9999;
					for (int pr = 0; pr < 2; pr++) {
						const uint8_t proto = pr ? IPPROTO_UDP : IPPROTO_TCP;
						bool want = false, got = false;
						for (size_t k = 0; k < N && !want; k++)
							want = rule_allows(&rules[k], pts[q], alen, proto, port);
						for (size_t e = 0; e < s->n_elems && !got; e++) {
							const struct sk_rs_elem *el = &s->elems[e];
							got = el->proto == proto && port >= el->port_lo && port <= el->port_hi &&
							      addr_in(pts[q], el->addr_lo, el->addr_hi, alen);
						}
						assert_int_equal(got, want);
					}
				}
		}
	}
	sk_ruleset_free(rs);
	free(rules);
	free(ports);
}

static void test_udp_rules_direct_and_others_not(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	fx_host(&f, "api.github.com", 443);                         /* names never reach the kernel */
	fx_cidr(&f, "10.0.0.0/8", SK_PROTO_ANY, false, 5432, 0);    /* proxied: not in a set */
	fx_cidr(&f, "10.96.0.10/32", SK_PROTO_UDP, false, 53, 0);   /* udp: always the fast path */
	fx_cidr(&f, "2001:db8::/32", SK_PROTO_UDP, false, 0, 0);
	fx_cidr(&f, "172.16.0.0/12", SK_PROTO_TLS, false, 443, 0);  /* proxied */
	struct sk_ruleset *rs = build(&f);
	char el[512];
	elems_text(&rs->sets[SK_RS_SET_DIRECT4], el, sizeof(el));
	assert_string_equal(el, "10.96.0.10 . udp . 53");
	elems_text(&rs->sets[SK_RS_SET_DIRECT6], el, sizeof(el));
	assert_string_equal(el, "2001:db8::/32 . udp . 0-65535");
	/* DNS is redirected before the direct sets are consulted: the filter is never bypassed */
	char names[512];
	chain_names(rs, SK_RS_CHAIN_NAT, names, sizeof(names));
	assert_true(strstr(names, "agent-dns-udp") < strstr(names, "agent-direct4"));
	sk_ruleset_free(rs);
}

static void test_custom_ports_and_uids(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	f.p.agent_uid = 4242;
	f.p.sidecar_uid = 999;
	f.p.ports = (struct sk_ports){ .proxy = 8001, .dns = 8053, .admin = 8000, .api = 8080 };
	f.p.loopback = SK_LOOPBACK_DENY;
	struct sk_ruleset *rs = build(&f);
	char *t = text(rs);
	assert_contains(t, "meta skuid 4242 meta l4proto udp th dport 53 redirect to :8053 comment \"agent-dns-udp\"");
	assert_contains(t, "meta skuid 4242 meta l4proto tcp redirect to :8001 comment \"agent-proxy\"");
	assert_contains(t, "meta skuid 4242 ct status dnat meta l4proto udp th dport 8053 accept");
	assert_contains(t, "meta skuid 4242 oif \"lo\" meta l4proto tcp th dport 8080 accept comment \"agent-api\"");
	assert_contains(t, "meta skuid 999 accept comment \"sidecar\"");
	assert_lacks(t, "1000");
	assert_lacks(t, "1337");
	assert_lacks(t, "15001");
	free(t);
	sk_ruleset_free(rs);
}

static void test_colliding_uids_and_ports_refused(void **state)
{
	(void)state;
	struct fixture f;
	struct sk_ruleset *rs = NULL;
	struct sk_err err = { 0 };

	fx_init(&f);
	f.p.sidecar_uid = 1000;
	assert_int_equal(sk_ruleset_build(&f.p, &rs, &err), -EINVAL);
	assert_null(rs);
	assert_string_equal(err.msg, "ruleset: sidecar uid 1000 collides with the agent uid");

	fx_init(&f);
	f.p.agent_uid = 0;
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ruleset_build(&f.p, &rs, &err), -EINVAL);
	assert_string_equal(err.msg, "ruleset: agent uid must not be 0");

	fx_init(&f);
	f.exempt[0] = 0;
	f.p.exempt_uids = f.exempt;
	f.p.n_exempt_uids = 1;
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ruleset_build(&f.p, &rs, &err), -EINVAL);
	assert_string_equal(err.msg, "ruleset: exempt uid 0 collides with root");

	fx_init(&f);
	f.p.ports.dns = f.p.ports.proxy;
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ruleset_build(&f.p, &rs, &err), -EINVAL);
	assert_string_equal(err.msg, "ruleset: sidecar ports collide (15001)");
}

/* IGMP and MLD reports carry the joined group out of the pod and have no socket UID, so
 * they are dropped before any UID rule, whoever sent them; ND stays accepted and MLD is no longer in it. */
static void test_multicast_reports_dropped(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	struct sk_ruleset *rs = build(&f);
	char el[256];
	elems_text(&rs->sets[SK_RS_SET_MLD], el, sizeof(el));
	assert_string_equal(el, "mld-listener-query, mld-listener-report, mld-listener-done, mld2-listener-report");
	elems_text(&rs->sets[SK_RS_SET_ND], el, sizeof(el));
	assert_string_equal(el, "nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, "
				"nd-redirect");
	const struct sk_rs_rule *r = find_rule(rs, SK_RS_CHAIN_FILTER, "igmp-drop");
	assert_int_equal(r->verdict, SK_RS_DROP);
	assert_int_equal(r->n_m, 1);  /* no UID match: the reports have no socket */
	assert_int_equal(r->m[0].kind, SK_RS_M_L4PROTO);
	assert_int_equal(r->m[0].val, IPPROTO_IGMP);
	assert_string_equal(sk_rs_counter_name(r->counter), "mcast_report_drop");
	r = find_rule(rs, SK_RS_CHAIN_FILTER, "mld-drop");
	assert_int_equal(r->verdict, SK_RS_DROP);
	assert_int_equal(r->n_m, 2);
	assert_int_equal(r->m[1].kind, SK_RS_M_ICMPV6_SET);
	assert_int_equal(r->m[1].set, SK_RS_SET_MLD);
	/* first in the filter chain: nothing accepts them before */
	assert_string_equal(rs->rules[sk_ruleset_chain_rules(rs, SK_RS_CHAIN_NAT)].name, "igmp-drop");
	char *t = text(rs);
	assert_contains(t, "\t\tmeta l4proto igmp counter name \"mcast_report_drop\" drop comment \"igmp-drop\"\n");
	assert_contains(t, "\t\tmeta l4proto ipv6-icmp icmpv6 type @icmpv6_mld counter name \"mcast_report_drop\" drop "
			   "comment \"mld-drop\"\n");
	assert_contains(t, "\tset icmpv6_mld {\n\t\ttype icmpv6_type\n\t\telements = { mld-listener-query,\n");
	assert_contains(t, "\tcounter mcast_report_drop {\n\t}\n");
	assert_contains(t, "meta l4proto ipv6-icmp icmpv6 type @icmpv6_nd accept comment \"icmpv6-nd\"\n");
	const char *filter = strstr(t, "\tchain filter_output {");
	assert_non_null(filter);
	assert_true(strstr(filter, "comment \"mld-drop\"") < strstr(filter, "comment \"agent-loopback\""));
	free(t);
	sk_ruleset_free(rs);
}

/* The agent's TCP to the admin port on loopback (127.0.0.1, ::1 and the pod's own
 * addresses all route through lo) is reset, before any loopback rule, under every loopback policy. */
static void test_agent_admin_rejected(void **state)
{
	(void)state;
	static const enum sk_loopback modes[] = { SK_LOOPBACK_ALLOW, SK_LOOPBACK_PORTS, SK_LOOPBACK_DENY };
	for (size_t i = 0; i < SK_ARRAY_SIZE(modes); i++) {
		struct fixture f;
		fx_init(&f);
		f.p.loopback = modes[i];
		f.p.ports.admin = 9901;
		if (modes[i] == SK_LOOPBACK_PORTS) {
			f.lo_ports[0] = 9901;  /* even a listed port does not open it */
			f.p.loopback_ports = f.lo_ports;
			f.p.n_loopback_ports = 1;
		}
		struct sk_ruleset *rs = build(&f);
		const struct sk_rs_rule *r = find_rule(rs, SK_RS_CHAIN_FILTER, "agent-admin");
		assert_int_equal(r->verdict, SK_RS_REJECT_TCP);
		assert_string_equal(sk_rs_counter_name(r->counter), "agent_reject_tcp");
		char *t = text(rs);
		assert_contains(t, "meta skuid 1000 oif \"lo\" meta l4proto tcp th dport 9901 counter name "
				   "\"agent_reject_tcp\" reject with tcp reset comment \"agent-admin\"\n");
		/* before every rule that accepts agent loopback traffic */
		const char *filter = strstr(t, "\tchain filter_output {");
		assert_non_null(filter);
		const char *admin = strstr(filter, "comment \"agent-admin\"");
		const char *lo = strstr(filter, "comment \"agent-loopback");
		const char *api = strstr(filter, "accept comment \"agent-api\"");
		assert_non_null(admin);
		assert_true(lo || api);
		assert_true(!lo || admin < lo);
		assert_true(!api || admin < api);
		/* the nat chain never redirects or returns by the admin port: the filter decides */
		assert_null(strstr(t, "th dport 9901 return"));
		free(t);
		sk_ruleset_free(rs);
	}
}

/* Found in review: over IPv6 any socket may send with a foreign source (IPV6_FREEBIND), so the agent could
 * forge the upstream resolver's answer to the sidecar's connected DNS socket. Every socket's packet whose
 * source is not the netns's own is dropped, counted, before any rule that accepts — except the sidecar's
 * and the exempt UIDs', under every loopback policy; with UID matches only, so socketless packets pass. */
static void test_spoofed_source_dropped(void **state)
{
	(void)state;
	static const enum sk_loopback modes[] = { SK_LOOPBACK_ALLOW, SK_LOOPBACK_PORTS, SK_LOOPBACK_DENY };
	for (size_t i = 0; i < SK_ARRAY_SIZE(modes); i++) {
		struct fixture f;
		fx_init(&f);
		f.p.loopback = modes[i];
		f.p.sidecar_uid = 2337;
		f.exempt[0] = 1500;
		f.p.exempt_uids = f.exempt;
		f.p.n_exempt_uids = 1;
		struct sk_ruleset *rs = build(&f);
		const struct sk_rs_rule *r = find_rule(rs, SK_RS_CHAIN_FILTER, "spoofed-source");
		assert_int_equal(r->verdict, SK_RS_DROP);
		assert_string_equal(sk_rs_counter_name(r->counter), "spoofed_source_drop");
		assert_int_equal(r->n_m, 3);
		assert_int_equal(r->m[0].kind, SK_RS_M_SKUID_NE);
		assert_int_equal(r->m[0].val, 2337);
		assert_int_equal(r->m[1].kind, SK_RS_M_SKUID_NOT_SET);
		assert_int_equal(r->m[1].set, SK_RS_SET_EXEMPT);
		assert_int_equal(r->m[2].kind, SK_RS_M_SADDR_NOT_LOCAL);
		/* right after the multicast drops, so no accept (agent loopback, direct sets, sidecar) comes first */
		size_t nat = sk_ruleset_chain_rules(rs, SK_RS_CHAIN_NAT);
		assert_string_equal(rs->rules[nat + 1].name, "mld-drop");
		assert_string_equal(rs->rules[nat + 2].name, "spoofed-source");
		for (size_t k = nat; k < nat + 2; k++)
			assert_int_equal(rs->rules[k].verdict, SK_RS_DROP);
		/* only the filter chain: nat never sees a verdict on it */
		for (size_t k = 0; k < nat; k++)
			assert_string_not_equal(rs->rules[k].name, "spoofed-source");
		char *t = text(rs);
		assert_contains(t, "\t\tmeta skuid != 2337 meta skuid != @exempt_uids fib saddr type != local counter name "
				   "\"spoofed_source_drop\" drop comment \"spoofed-source\"\n");
		assert_contains(t, "\tcounter spoofed_source_drop {\n\t}\n");
		const char *filter = strstr(t, "\tchain filter_output {");
		assert_non_null(filter);
		const char *spoof = strstr(filter, "comment \"spoofed-source\"");
		assert_non_null(spoof);
		assert_true(spoof < strstr(filter, "comment \"agent-admin\""));
		assert_true(spoof < strstr(filter, " accept comment"));
		free(t);
		sk_ruleset_free(rs);
	}
}

static void test_text_is_deterministic(void **state)
{
	(void)state;
	struct fixture f;
	fx_init(&f);
	fx_cidr(&f, "10.96.0.0/12", SK_PROTO_UDP, true, 8125, 0);
	struct sk_ruleset *a = build(&f), *b = build(&f);
	char *ta = text(a), *tb = text(b);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	sk_ruleset_free(a);
	sk_ruleset_free(b);
}

/* Which socket owner one rule is about, read from its UID matches alone (not from its text). */
enum uid_scope {
	UID_NONE,      /* no skuid match: socketless packets, and rules no agent packet reaches */
	UID_AGENT,     /* exactly one `meta skuid == agent` */
	UID_SIDECAR,   /* exactly one `meta skuid == sidecar` */
	UID_EXEMPT,    /* `meta skuid @exempt_uids` */
	UID_ANY,       /* `meta skuid >= 0`: every socket */
	UID_NOT_OURS,  /* `meta skuid != sidecar` and `!= @exempt_uids` (spoofed-source) */
	UID_OTHER,     /* anything else: a mix, a stray UID, a second skuid match */
};

static enum uid_scope uid_scope(const struct sk_policy *p, const struct sk_rs_rule *r)
{
	size_t n = 0, agent = 0, sidecar = 0, set = 0, any = 0, ne = 0, not_set = 0;
	for (size_t i = 0; i < r->n_m; i++) {
		const struct sk_rs_match *m = &r->m[i];
		switch (m->kind) {
		case SK_RS_M_SKUID:
			n++;
			agent += m->val == p->agent_uid;
			sidecar += m->val == p->sidecar_uid;
			break;
		case SK_RS_M_SKUID_NE: n++; ne += m->val == p->sidecar_uid; break;
		case SK_RS_M_SKUID_ANY: n++; any++; break;
		case SK_RS_M_SKUID_SET: n++; set += m->set == SK_RS_SET_EXEMPT; break;
		case SK_RS_M_SKUID_NOT_SET: n++; not_set += m->set == SK_RS_SET_EXEMPT; break;
		default: break;
		}
	}
	if (n == 0)
		return UID_NONE;
	if (n == 1 && agent == 1)
		return UID_AGENT;
	if (n == 1 && sidecar == 1)
		return UID_SIDECAR;
	if (n == 1 && set == 1)
		return UID_EXEMPT;
	if (n == 1 && any == 1)
		return UID_ANY;
	if (n == 2 && ne == 1 && not_set == 1)
		return UID_NOT_OURS;
	return UID_OTHER;
}

/* The scope a rule must have: every nat rule (redirects and returns) and every filter rule named agent-*
 * is the agent's, so a rule that lost its UID match would redirect, pass or reject every UID's packets. */
static enum uid_scope want_scope(const struct sk_rs_rule *r)
{
	static const struct {
		const char *name;
		enum uid_scope scope;
	} filter[] = {
		{ "igmp-drop", UID_NONE }, { "mld-drop", UID_NONE }, { "spoofed-source", UID_NOT_OURS },
		{ "established", UID_NONE }, { "loopback", UID_NONE }, { "icmpv6-nd", UID_NONE },
		{ "sidecar", UID_SIDECAR }, { "exempt-uids", UID_EXEMPT },
		{ "other-uid-reject-tcp", UID_ANY }, { "other-uid-reject-other", UID_ANY },
	};
	if (r->chain == SK_RS_CHAIN_NAT || !strncmp(r->name, "agent-", 6))
		return UID_AGENT;
	for (size_t i = 0; i < sizeof(filter) / sizeof(filter[0]); i++)
		if (!strcmp(r->name, filter[i].name))
			return filter[i].scope;
	fail_msg("rule %s: not classified here — say which UID it must match", r->name);
	return UID_OTHER;
}

/* Every rule carries the UID match its purpose needs, checked on the model for each policy shape — not
 * through the golden text, which a re-bless would rewrite along with a dropped match. */
static void test_every_rule_matches_its_uid(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		struct fixture f;
		fx_init(&f);
		f.p.loopback = v == 0 ? SK_LOOPBACK_ALLOW : v == 1 ? SK_LOOPBACK_DENY : SK_LOOPBACK_PORTS;
		if (v >= 2) {
			f.lo_ports[0] = 5432;
			f.p.loopback_ports = f.lo_ports;
			f.p.n_loopback_ports = 1;
		}
		if (v == 3) {
			f.p.agent_uid = 4242;
			f.p.sidecar_uid = 999;
			f.exempt[0] = 1500;
			f.p.exempt_uids = f.exempt;
			f.p.n_exempt_uids = 1;
			fx_cidr(&f, "10.96.0.0/12", SK_PROTO_UDP, true, 8125, 0);
			fx_cidr(&f, "fd00:10::/64", SK_PROTO_ANY, true, 443, 0);
		}
		struct sk_ruleset *rs = build(&f);
		size_t agent_rules = 0;
		for (size_t i = 0; i < rs->n_rules; i++) {
			const struct sk_rs_rule *r = &rs->rules[i];
			enum uid_scope want = want_scope(r), got = uid_scope(&f.p, r);
			static const char *const scope_name[] = { "none", "agent", "sidecar", "exempt", "any", "not-ours",
								   "other" };
			if (got != want)
				fail_msg("policy shape %d: rule %s matches UID scope %s, wants %s", v, r->name,
					 scope_name[got], scope_name[want]);
			agent_rules += got == UID_AGENT;
		}
		/* the agent's rules are there at all: dns ×2, direct ×2, proxy in nat; admin, redirected ×3,
		 * direct ×2, reject ×2 in filter; plus the loopback ones */
		assert_true(agent_rules >= 14);
		sk_ruleset_free(rs);
	}
}

/* ---- guard ---- */

static struct sk_netns_facts pod_facts(void)
{
	struct sk_netns_facts f = { .pidns_is_initial = true, .n_ifs = 2, .n_ifs_total = 2 };
	(void)snprintf(f.ifs[0].name, sizeof(f.ifs[0].name), "lo");
	f.ifs[0].loopback = true;
	(void)snprintf(f.ifs[1].name, sizeof(f.ifs[1].name), "eth0");
	(void)snprintf(f.ifs[1].kind, sizeof(f.ifs[1].kind), "veth");
	return f;
}

static void test_guard_accepts_a_pod_namespace(void **state)
{
	(void)state;
	struct sk_netns_facts f = pod_facts();
	char why[512];
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* a pod with shareProcessNamespace: PID 1 (pause) shares our netns, but the PID ns is the pod's */
	f.init_shares_netns = true;
	f.pidns_is_initial = false;
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 0);
	/* ipvlan / macvlan CNIs */
	(void)snprintf(f.ifs[1].kind, sizeof(f.ifs[1].kind), "ipvlan");
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 0);
}

static void test_guard_refuses_host_signs(void **state)
{
	(void)state;
	char why[512];
	struct sk_netns_facts f = pod_facts();
	f.netns_is_initial = true;
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "this is the kernel's initial network namespace (the node's own)");

	f = pod_facts();
	f.init_shares_netns = true;
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "the host's init (PID 1) is in this network namespace");

	f = pod_facts();
	f.ifs[1].kind[0] = '\0';
	(void)snprintf(f.ifs[1].parent, sizeof(f.ifs[1].parent), "virtio");
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "interface eth0 is a device on bus virtio (a NIC)");

	f = pod_facts();
	f.ifs[1].kind[0] = '\0';
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "interface eth0 has no virtual link kind (a NIC)");

	/* every reason is given, not only the first */
	f = pod_facts();
	f.netns_is_initial = true;
	f.n_ifs = f.n_ifs_total = 3;
	(void)snprintf(f.ifs[2].name, sizeof(f.ifs[2].name), "cni0");
	(void)snprintf(f.ifs[2].kind, sizeof(f.ifs[2].kind), "bridge");
	assert_int_equal(sk_guard_judge(&f, why, sizeof(why)), 2);
	assert_string_equal(why, "this is the kernel's initial network namespace (the node's own); "
				 "interface cni0 is a bridge (nodes have those, pods do not)");
}

static void test_guard_probe_runs(void **state)
{
	(void)state;
	struct sk_netns_facts f;
	struct sk_err err = { 0 };
	assert_int_equal(sk_guard_probe(&f, &err), 0);
	bool lo = false;
	for (size_t i = 0; i < f.n_ifs; i++)
		lo |= f.ifs[i].loopback && !strcmp(f.ifs[i].name, "lo");
	assert_true(lo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_policy_chains_and_order),
		cmocka_unit_test(test_default_policy_text),
		cmocka_unit_test(test_loopback_deny),
		cmocka_unit_test(test_loopback_ports),
		cmocka_unit_test(test_exempt_uids),
		cmocka_unit_test(test_direct_cidrs_v4_v6),
		cmocka_unit_test(test_direct_elements_are_disjoint),
		cmocka_unit_test(test_direct_elements_many_rules_any_order),
		cmocka_unit_test(test_udp_rules_direct_and_others_not),
		cmocka_unit_test(test_custom_ports_and_uids),
		cmocka_unit_test(test_colliding_uids_and_ports_refused),
		cmocka_unit_test(test_text_is_deterministic),
		cmocka_unit_test(test_multicast_reports_dropped),
		cmocka_unit_test(test_agent_admin_rejected),
		cmocka_unit_test(test_spoofed_source_dropped),
		cmocka_unit_test(test_every_rule_matches_its_uid),
		cmocka_unit_test(test_guard_accepts_a_pod_namespace),
		cmocka_unit_test(test_guard_refuses_host_signs),
		cmocka_unit_test(test_guard_probe_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
